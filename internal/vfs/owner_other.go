//go:build !unix

package vfs

import "io/fs"

// Owner is the user id that owns the file fi describes; ok is false where
// the file system does not say (MemFS's files, and every file here: this
// system has no user ids).
func Owner(fi fs.FileInfo) (uid int, ok bool) { return 0, false }

// OwnerOf is the owner and group of the file fi describes: nil, as this
// system has no user ids.
func OwnerOf(fi fs.FileInfo) *Ownership { return nil }
