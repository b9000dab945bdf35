//go:build !linux

package vfs

// renameNoReplace is Linux's RENAME_NOREPLACE only: elsewhere the caller
// links instead.
func renameNoReplace(oldpath, newpath string) error { return errNoReplace }
