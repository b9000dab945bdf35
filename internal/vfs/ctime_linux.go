//go:build linux

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
		return st.Ctim.Nano() // int64 on every GOARCH (Sec is int32 on 386 and arm)
	}
	return 0
}
