//go:build unix

package agent

import "golang.org/x/sys/unix"

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
func (e *osPathError) Unwrap() error { return e.err }
