//go:build darwin

package vfs

import (
	"io/fs"
	"syscall"
)

// ChangeTime is a file's inode change time in unix ns, which no program
// can set (a copy that keeps the modification time still changes it);
// 0 when the file system does not say.
func ChangeTime(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ctimespec.Nano()
	}
	return 0
}
