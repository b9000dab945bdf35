package cli

import (
	"context"
	"os"
	"time"

	"github.com/rookhq/rook/agent/inbox"
	"github.com/rookhq/rook/agent/mcp"
)

// McpServeCmd is `rook mcp serve`: the MCP server an AI client starts as a
// child process and talks to over stdio (see agent/mcp).
type McpServeCmd struct{}

// Run serves MCP until the client closes stdin. It never opens the store:
// saves go to this process's spool file in the store home, so it runs
// beside a rook that holds the writer lock.
func (c *McpServeCmd) Run(e *Env) error {
	in := e.Stdin
	if in == nil {
		in = os.Stdin
	}
	return mcp.Serve(context.Background(), in, e.Stdout, mcp.Options{
		FS:    e.FS,
		Home:  e.Home,
		Clock: e.Clock,
		// The real time, not e.Clock: the name must be unique among live
		// processes even when a test fixes the clock.
		ProcessName: inbox.ProcessName(time.Now(), os.Getpid()),
		Log:         e.Stderr,
	})
}
