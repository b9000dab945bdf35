package cli

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/rookhq/rook/internal/vfs"
)

// Ctrl-C (SIGINT) or a SIGTERM ends rook at once, as a crash would: the
// store is built to be left that way at any point. What a crash would
// leave outside the store is removed first: the temporary file an atomic
// write (export -o) makes beside its target, which nothing else removes,
// and an output being written in place (export-html's). Then rook exits
// 130 (SIGINT) or 143 (SIGTERM), as a shell reports a process the signal
// killed.

var interrupts struct {
	once     sync.Once
	mu       sync.Mutex
	cleanups map[int]func()
	next     int
}

// exit ends the process; a test replaces it.
var exit = os.Exit

// handleInterrupts starts, once per process, the handler of SIGINT and
// SIGTERM; asJSON: --json, under which the stop is said as a failure is.
func handleInterrupts(stderr io.Writer, asJSON bool) {
	interrupts.once.Do(func() {
		ch := make(chan os.Signal, 1)
		for _, sig := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
			// One ignored stays ignored (a shell's background job
			// ignores SIGINT): Notify would catch it.
			if !signal.Ignored(sig) {
				signal.Notify(ch, sig)
			}
		}
		go func() { interrupted(<-ch, stderr, asJSON) }()
	})
}

// onInterrupt has cleanup run if rook is interrupted before done is
// called.
func onInterrupt(cleanup func()) (done func()) {
	interrupts.mu.Lock()
	defer interrupts.mu.Unlock()
	if interrupts.cleanups == nil {
		interrupts.cleanups = map[int]func(){}
	}
	n := interrupts.next
	interrupts.next++
	interrupts.cleanups[n] = cleanup
	return func() {
		interrupts.mu.Lock()
		defer interrupts.mu.Unlock()
		delete(interrupts.cleanups, n)
	}
}

// interrupted runs the cleanups, removes the atomic writes' temporary
// files, and exits. The lock is kept to the end: a cleanup that finishes
// meanwhile cannot be called done half-way through.
func interrupted(sig os.Signal, stderr io.Writer, asJSON bool) {
	interrupts.mu.Lock()
	defer interrupts.mu.Unlock() // (exit does not return but in a test)
	for _, f := range interrupts.cleanups {
		f()
	}
	vfs.RemoveInFlight()
	code := 130
	if sig == syscall.SIGTERM {
		code = 143
	}
	// Under --json, as every failure: its last line is the JSON error (a
	// script that parses it found "rook: interrupt: stopped").
	if asJSON {
		failJSON(stderr, code, fmt.Sprintf("%v: stopped", sig))
	} else {
		fmt.Fprintf(stderr, "rook: %v: stopped\n", sig)
	}
	exit(code)
}
