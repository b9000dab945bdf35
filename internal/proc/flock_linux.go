package proc

import (
	"bytes"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// FlockHolder is the process that holds a flock(2) lock on the file at
// path, as /proc/locks says it (pids as this process's namespace sees
// them): 0 when none does, or the system does not say.
func FlockHolder(path string) int {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0
	}
	locks, err := os.ReadFile("/proc/locks")
	if err != nil {
		return 0
	}
	return flockHolderIn(locks, uint64(unix.Major(uint64(st.Dev))), uint64(unix.Minor(uint64(st.Dev))), st.Ino)
}

// flockHolderIn finds in /proc/locks the pid holding a FLOCK on the file
// major:minor:inode. A line reads "1: FLOCK  ADVISORY  WRITE 4242
// fd:01:1234567 0 EOF"; one waiting for a lock has "->" after its number,
// and is not the holder.
func flockHolderIn(locks []byte, major, minor, ino uint64) int {
	for line := range bytes.Lines(locks) {
		f := strings.Fields(string(line))
		if len(f) < 6 || f[1] != "FLOCK" {
			continue
		}
		parts := strings.Split(f[5], ":")
		if len(parts) != 3 {
			continue
		}
		ma, err1 := strconv.ParseUint(parts[0], 16, 64)
		mi, err2 := strconv.ParseUint(parts[1], 16, 64)
		in, err3 := strconv.ParseUint(parts[2], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || ma != major || mi != minor || in != ino {
			continue
		}
		if pid, err := strconv.Atoi(f[4]); err == nil && pid > 0 {
			return pid
		}
	}
	return 0
}

// Name is process pid's name as the kernel keeps it (its comm: the
// program's file name, at most 15 bytes), "" when the system does not
// say. Not its command line: a program's arguments may hold what is not
// to be shown (a password), and one that rewrites its argv[0]
// (setproctitle, `exec -a`) puts them there too.
func Name(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
