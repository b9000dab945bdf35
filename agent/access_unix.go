//go:build unix

package agent

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// accessWrite asks the OS whether this process may create entries in dir.
func accessWrite(dir string) error {
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		return &osPathError{op: "write into", path: dir, err: err}
	}
	return nil
}

type osPathError struct {
	op, path string
	err      error
}

func (e *osPathError) Error() string { return "cannot " + e.op + " " + e.path + ": " + e.err.Error() }

// Unwrap gives the *fs.PathError beneath: the CLI reads its path to say
// what to check (the directory, not the store).
func (e *osPathError) Unwrap() error { return &fs.PathError{Op: e.op, Path: e.path, Err: e.err} }

// WritableDir asks the OS whether this process may make dir (when it is
// missing) and files in it, of the nearest directory on the way that is
// there, before any work: a command writing two things (a transcript,
// then its tool-results files) learned only after the first that it
// could not write the second. It returns that directory, and the
// refusal (EACCES, EROFS) or nil; a path it cannot look at is left to the
// write to fail.
func WritableDir(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err == nil {
			if !fi.IsDir() {
				return d, nil
			}
			return d, unix.Access(d, unix.W_OK|unix.X_OK)
		}
		if !errors.Is(err, fs.ErrNotExist) || d == filepath.Dir(d) {
			return d, nil
		}
	}
}

// ownDir says whether the user this process writes as owns fi.
func ownDir(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}
