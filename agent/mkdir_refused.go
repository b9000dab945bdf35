package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// MkdirRefused explains a failed mkdir (an *fs.PathError, as os.Mkdir
// and os.MkdirAll return) that no permission fixes: the directory it was
// to be made in is there, but its filesystem makes none in it. A
// filesystem of the kernel's (kernelFS) answers "no such file or
// directory" (/proc), which, raw, sent the user looking for a directory
// that is there, or "operation not permitted" (/sys), which sent them to
// check its permissions; a read-only one, "read-only file system". The
// reason names the directory that refused; the caller names the one it
// could not make (the error's path: maybe a part directory of a home that
// is there, not the home) and says what to give instead. "" and false for
// any other failure.
func MkdirRefused(err error) (string, bool) {
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Op != "mkdir" {
		return "", false
	}
	parent := filepath.Dir(pe.Path)
	switch {
	case errors.Is(pe.Err, syscall.EROFS):
		return fmt.Sprintf("%s is on a read-only filesystem (mkdir %s: %v)", parent, pe.Path, pe.Err), true
	case errors.Is(pe.Err, fs.ErrNotExist), errors.Is(pe.Err, syscall.EPERM):
		// The parent there, a directory, on the kernel's filesystem.
		// Elsewhere these say something else (the parent removed
		// meanwhile; a directory made immutable), as the raw error does.
		if fi, serr := os.Stat(parent); serr == nil && fi.IsDir() && kernelFS(parent) {
			return kernelRefusal(parent, "directories", "mkdir", pe.Path, pe.Err), true
		}
	}
	return "", false
}

// kernelRefusal says that dir, a directory on a filesystem of the kernel's
// (kernelFS), takes no new entries (what): op of path failed with err.
func kernelRefusal(dir, what, op, path string, err error) string {
	return fmt.Sprintf("%s takes no new %s (%s %s: %v): its filesystem is not a disk's but the kernel's, as /proc's and /sys's are", dir, what, op, path, err)
}

// mkdirError is a directory a restore could not make, its reason said
// (MkdirRefused) when the filesystem refused it.
func mkdirError(err error) error {
	if why, ok := MkdirRefused(err); ok {
		return fmt.Errorf("cannot make the directory %s: %s: restore into a directory on a disk you can write", pathOf(err), why)
	}
	return err
}

// pathOf is the path of err's *fs.PathError.
func pathOf(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Path
	}
	return ""
}
