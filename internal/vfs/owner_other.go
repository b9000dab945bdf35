//go:build !unix

package vfs

import "io/fs"

// Owner is the user id that owns the file fi describes; ok is false where
// the file system does not say (MemFS's files, and every file here: this
// system has no user ids).
func Owner(fi fs.FileInfo) (uid int, ok bool) { return 0, false }
