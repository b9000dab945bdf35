package agent

import "golang.org/x/sys/unix"

// kernelFS says whether dir is on a filesystem of the kernel's, one that
// shows the kernel's state and makes no directories asked for (statfs's
// type: /proc, /sys and those mounted under them, /dev/pts).
func kernelFS(dir string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return false
	}
	switch uint32(st.Type) { // 32-bit magic numbers, in a field signed on some platforms
	case unix.PROC_SUPER_MAGIC, unix.SYSFS_MAGIC, unix.CGROUP_SUPER_MAGIC, unix.CGROUP2_SUPER_MAGIC,
		unix.DEBUGFS_MAGIC, unix.TRACEFS_MAGIC, unix.SECURITYFS_MAGIC, unix.PSTOREFS_MAGIC,
		unix.EFIVARFS_MAGIC, unix.DEVPTS_SUPER_MAGIC, unix.BPF_FS_MAGIC:
		return true
	}
	return false
}
