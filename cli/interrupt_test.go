package cli

import (
	"bytes"
	"os"
	"syscall"
	"testing"
)

// Interrupted, rook runs the cleanups of what it is writing (but not those
// done already), says it stopped, and exits as a shell reports a process
// the signal killed.
func TestInterrupted(t *testing.T) {
	var code int
	exit = func(c int) { code = c }
	t.Cleanup(func() { exit = os.Exit })
	for _, tc := range []struct {
		sig  os.Signal
		code int
		says string
	}{{os.Interrupt, 130, "rook: interrupt: stopped"}, {syscall.SIGTERM, 143, "rook: terminated: stopped"}} {
		ran, finished := 0, 0
		doneA := onInterrupt(func() { ran++ })
		doneB := onInterrupt(func() { finished++ })
		doneB() // finished before the signal
		var stderr bytes.Buffer
		interrupted(tc.sig, &stderr)
		doneA()
		if ran != 1 || finished != 0 || code != tc.code || !bytes.HasPrefix(stderr.Bytes(), []byte(tc.says)) {
			t.Fatalf("%v: cleanups run %d and %d, exit %d, said %q", tc.sig, ran, finished, code, stderr.String())
		}
	}
}
