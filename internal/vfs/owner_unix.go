//go:build unix

package vfs

import (
	"io/fs"
	"syscall"
)

// Owner is the user id that owns the file fi describes; ok is false where
// the file system does not say (MemFS's files).
func Owner(fi fs.FileInfo) (uid int, ok bool) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), true
	}
	return 0, false
}

// OwnerOf is the owner and group of the file fi describes; nil where the
// file system does not say (MemFS's files).
func OwnerOf(fi fs.FileInfo) *Ownership {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return &Ownership{UID: int(st.Uid), GID: int(st.Gid)}
	}
	return nil
}
