package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rookhq/rook/internal/vfs"
)

// Ctrl-C (SIGINT) or a SIGTERM ends rook at once, as a crash would: the
// store is built to be left that way at any point. What a crash would
// leave outside the store is removed first: the temporary file an atomic
// write (export -o) makes beside its target, which nothing else removes,
// the temporary copy a restore or rewind writes beside a file
// (vfs.MakeInFlight),
// an output being written in place (export-html's), and an MCP server
// rook started (withServer: its client closed, a stdio program's process
// group ended). Then rook exits
// 130 (SIGINT) or 143 (SIGTERM), as a shell reports a process the signal
// killed. A command that registered a stopper (onInterruptStop: an
// import) is told of the first signal instead, stops itself where
// nothing is left half done and exits so, or ends rook at once saying what
// it says (an import still waiting for the writer lock); the second ends
// rook at once, saying what the stopper says is true then.

var interrupts struct {
	once     sync.Once
	mu       sync.Mutex
	cleanups map[int]func()
	next     int
	// stoppers are the commands that stop themselves at a point where
	// nothing is left half done (an import, between two files), told of
	// the first signal; asked: they were. A second signal ends rook at
	// once, as one without a stopper does.
	stoppers map[int]stopper
	asked    bool
	// jsonFields fill in, of a stop that ends rook under --json, the
	// JSON error's fields beside its message (onInterruptJSON).
	jsonFields map[int]func(*jsonError)
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
		go func() {
			for sig := range ch { // a stopper asked, the next one ends rook
				interrupted(sig, stderr, asJSON)
			}
		}()
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

// serverStopWait bounds how long an interrupt waits for a server rook
// started to be ended (its client closed: a stdio program's stdin closed,
// then SIGTERM and SIGKILL to its process group; an HTTP session
// deleted) before rook exits.
const serverStopWait = 10 * time.Second

// withServer runs talk, which talks to an MCP server, with a context an
// interrupt cancels: talk then gives up (a request under way is cancelled
// at the server) and closes its client, ending a stdio server, which runs
// in a process group of its own and so is not reached by the terminal's
// Ctrl-C, before rook exits (at most serverStopWait later). Without it
// the server, and the tool it ran, went on after rook had exited.
func withServer(ctx context.Context, talk func(ctx context.Context)) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	finished := make(chan struct{})
	done := onInterrupt(func() {
		cancel()
		select {
		case <-finished:
		case <-time.After(serverStopWait):
		}
	})
	talk(ctx)
	close(finished)
	done() // interrupted: held here until rook exits
}

// stopper is a command that stops itself when interrupted. again: false
// at the first interrupt, where it returns "" to stop itself where nothing
// is left half done, or what to say as rook ends at once (it cannot stop
// itself yet, and ending now leaves nothing half done: an import waiting
// for the writer lock); true at the next one, which ends rook at once,
// where it returns what is true then ("": "SIG: stopped").
type stopper func(sig os.Signal, again bool) (endNow string)

// onInterruptStop has stop called at the first interrupt, instead of rook
// ending at once, until done is called: the command then stops itself
// where nothing is left half done, says what it did and did not, and
// exits as interrupted (interruptedCode). A second interrupt ends rook at
// once, saying what stop says of it.
func onInterruptStop(stop stopper) (done func()) {
	interrupts.mu.Lock()
	defer interrupts.mu.Unlock()
	if interrupts.stoppers == nil {
		interrupts.stoppers = map[int]stopper{}
	}
	n := interrupts.next
	interrupts.next++
	interrupts.stoppers[n] = stop
	return func() {
		interrupts.mu.Lock()
		defer interrupts.mu.Unlock()
		delete(interrupts.stoppers, n)
		if len(interrupts.stoppers) == 0 {
			interrupts.asked = false
		}
	}
}

// onInterruptJSON has fill called, when an interrupt ends rook under
// --json, to add fields to its JSON error beside the message (a restore's
// save and undo, as a restore stopped part way by an error gives them),
// until done is called.
func onInterruptJSON(fill func(*jsonError)) (done func()) {
	interrupts.mu.Lock()
	defer interrupts.mu.Unlock()
	if interrupts.jsonFields == nil {
		interrupts.jsonFields = map[int]func(*jsonError){}
	}
	n := interrupts.next
	interrupts.next++
	interrupts.jsonFields[n] = fill
	return func() {
		interrupts.mu.Lock()
		defer interrupts.mu.Unlock()
		delete(interrupts.jsonFields, n)
	}
}

// interruptedCode is the exit code of a process sig ended, as a shell
// reports it.
func interruptedCode(sig os.Signal) int {
	if sig == syscall.SIGTERM {
		return 143
	}
	return 130
}

// interrupted runs the cleanups, removes the atomic writes' temporary
// files, and exits; or, the first time, with a command that stops itself
// (onInterruptStop), tells it and returns. The lock is kept to the end: a
// cleanup that finishes meanwhile cannot be called done half-way through.
func interrupted(sig os.Signal, stderr io.Writer, asJSON bool) {
	interrupts.mu.Lock()
	defer interrupts.mu.Unlock() // (exit does not return but in a test)
	again := interrupts.asked
	var said []string
	for _, stop := range interrupts.stoppers {
		// Each says on stderr what it does when it stops itself (an
		// import: not under --json, whose error says it at the end).
		if msg := stop(sig, again); msg != "" {
			said = append(said, msg)
		}
	}
	if len(interrupts.stoppers) > 0 && !again {
		interrupts.asked = true
		if len(said) == 0 {
			return // stopping themselves
		}
	}
	for _, f := range interrupts.cleanups {
		f()
	}
	// (A restore's copies too, and none made after: vfs.MakeInFlight.)
	defer vfs.RemoveInFlight()() // released only in a test, whose exit returns
	code := interruptedCode(sig)
	msg := fmt.Sprintf("%v: stopped", sig)
	if len(said) > 0 {
		msg = strings.Join(said, "; ")
	}
	// Under --json, as every failure: its last line is the JSON error (a
	// script that parses it found "rook: interrupt: stopped").
	if asJSON {
		e := jsonError{Error: msg, ExitCode: code}
		for _, fill := range interrupts.jsonFields {
			fill(&e)
		}
		encodeJSONError(stderr, e)
	} else {
		fmt.Fprintf(stderr, "rook: %s\n", msg)
	}
	exit(code)
}
