// Package proc answers what rook asks of other processes: whether one is
// running, and, where the system says it, which one holds a file's lock.
package proc

import (
	"errors"
	"os"
	"syscall"
)

// Running says whether process pid exists (signal 0 reaches it, or it is
// another user's, which signal 0 may not reach).
func Running(pid int) bool {
	if pid == os.Getpid() {
		return true
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}
