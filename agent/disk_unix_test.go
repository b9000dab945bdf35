//go:build unix

package agent

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestOpenRegularNeverWaitsOnAPipe: a path an Lstat found regular may be a
// named pipe by the time it is opened; opening that for reading would wait
// for a writer. openRegular returns at once with a NotRegularError.
func TestOpenRegularNeverWaitsOnAPipe(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := readRegular(p, "pipe", 1<<20)
		done <- err
	}()
	select {
	case err := <-done:
		var nr *NotRegularError
		if !errors.As(err, &nr) || nr.Path != "pipe" || err.Error() != "pipe is a named pipe, not a regular file, directory or link" {
			t.Fatalf("err = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reading a named pipe waited for a writer")
	}
	// statDisk says what it is, for the diff to list it.
	if _, err := statDisk(dir, "pipe"); !errors.As(err, new(*NotRegularError)) {
		t.Fatalf("statDisk: %v", err)
	}
}
