package cli

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rookhq/rook/agent/inbox"
	"github.com/rookhq/rook/agent/mcp"
)

// McpServeCmd is `rook mcp serve`: the MCP server an AI client starts as a
// child process and talks to over stdio (see agent/mcp).
type McpServeCmd struct{}

// ownsSignals: SIGTERM is how an MCP client ends a stdio server that does
// not exit once its stdin is closed (the spec's shutdown; rook's own
// client after 2 s), and SIGINT reaches the server with its client when
// Ctrl-C stops the client in a terminal. Either is a normal end, not the
// crash-like stop of other commands, which said "rook: terminated:
// stopped" into the client's log and exited 143.
func (*McpServeCmd) ownsSignals() {}

// Run serves MCP until the client closes stdin or sends SIGTERM or SIGINT.
// It never opens the store: saves go to this process's spool file in the
// store home, so it runs beside a rook that holds the writer lock.
func (c *McpServeCmd) Run(e *Env) error {
	in := e.Stdin
	if in == nil {
		in = os.Stdin
	}
	var sigs []os.Signal
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
		// One ignored stays ignored (a shell's background job ignores
		// SIGINT): Notify would catch it.
		if !signal.Ignored(sig) {
			sigs = append(sigs, sig)
		}
	}
	ctx := context.Background()
	if len(sigs) > 0 { // (Notify with none would catch every signal)
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, sigs...)
		defer stop()
		// The first signal only asks: a second (a client that gave up
		// waiting, or a user pressing Ctrl-C again) ends the process at
		// once, as without the handler, even while a reply is stuck in
		// a pipe the client stopped reading.
		go func() { <-ctx.Done(); stop() }()
	}
	// A signal stops the server between messages: a save under way is
	// synced and answered first, then the spool is closed and its lock
	// released, and rook exits 0, saying nothing.
	err := mcp.Serve(ctx, in, e.Stdout, mcp.Options{
		FS:    e.FS,
		Home:  e.Home,
		Clock: e.Clock,
		// The real time, not e.Clock: the name must be unique among live
		// processes even when a test fixes the clock.
		ProcessName: inbox.ProcessName(time.Now(), os.Getpid()),
		Log:         e.Stderr,
	})
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil
	}
	return err
}
