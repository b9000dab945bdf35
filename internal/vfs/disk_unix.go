//go:build unix

package vfs

import "golang.org/x/sys/unix"

// DiskFree reports the bytes free to this user and the total size of the
// filesystem holding path. It asks the OS directly: it is a report, not I/O
// on the store, so it does not go through an FS.
func DiskFree(path string) (free, total uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, 0, err
	}
	return uint64(st.Bavail) * uint64(st.Bsize), uint64(st.Blocks) * uint64(st.Bsize), nil
}
