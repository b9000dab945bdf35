//go:build !linux && !darwin

package vfs

import "io/fs"

// Links is how many names (hard links) a file has; 0 when the file
// system does not say (MemFS's files have one).
func Links(fi fs.FileInfo) uint64 {
	if _, ok := fi.(memInfo); ok {
		return 1
	}
	return 0
}

// Unlinked says whether fi is known to be a file with no name left (one
// removed while open); false when the file system does not say.
func Unlinked(fi fs.FileInfo) bool { return false }
