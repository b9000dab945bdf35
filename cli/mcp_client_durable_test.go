package cli

import (
	"bytes"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/rookhq/rook/agent/mcpclient"
	"github.com/rookhq/rook/internal/vfs"
)

// failMarkerRemove fails the one step only Close takes: removing the
// session log's writer marker once what was written is flushed.
type failMarkerRemove struct{ vfs.FS }

var errMarkerRemove = errors.New("injected: cannot remove the writer marker")

func (f failMarkerRemove) Remove(name string) error {
	if filepath.Base(name) == "WRITER-ACTIVE" {
		return errMarkerRemove
	}
	return f.FS.Remove(name)
}

// TestMcpChangesSaySuccessOnlyWhenDurable: add, sync, set, limit and rm
// printed their result inside the write, before the store's Close (the
// durability point), so a Close that failed showed the success line and
// then the error. Now nothing is printed unless Close succeeds.
func TestMcpChangesSaySuccessOnlyWhenDurable(t *testing.T) {
	r := &outputRun{t: t, home: filepath.Join(t.TempDir(), "store"), ws: t.TempDir()}
	r.ok("", "init")
	fake := httptest.NewServer(mcpclient.NewFake(mcpclient.FakeConfig{Tools: []mcpclient.FakeTool{{Name: "echo"}, {Name: "other"}}}))
	defer fake.Close()
	r.ok("", "mcp", "add", "fake", "--url", fake.URL)
	r.ok("", "mcp", "add", "doomed", "--offline", "--url", fake.URL)

	for _, json := range []bool{false, true} {
		for _, c := range []struct {
			name string
			cmd  interface{ Run(*Env) error }
		}{
			{"add", &McpAddCmd{Name: map[bool]string{false: "later-text", true: "later-json"}[json], URL: fake.URL, Offline: true, MaxTools: 16}},
			{"sync", &McpSyncCmd{Name: "fake"}},
			{"set", &McpSetCmd{Name: "fake", Tool: "echo", Approval: !json, NoApproval: json}},
			{"limit", &McpLimitCmd{Name: "fake", N: map[bool]int{false: 5, true: 6}[json]}},
			{"rm", &McpRmCmd{Name: "doomed"}},
		} {
			var out, errb bytes.Buffer
			e := &Env{Stdout: &out, Stderr: &errb, FS: failMarkerRemove{vfs.OS}, Home: r.home, Cwd: r.ws, JSON: json}
			err := c.cmd.Run(e)
			if !errors.Is(err, errMarkerRemove) {
				t.Errorf("mcp %s (json %v) with Close failing: err %v, want the injected failure", c.name, json, err)
			}
			if out.Len() != 0 {
				t.Errorf("mcp %s (json %v) printed %q though Close failed", c.name, json, out.String())
			}
			// The marker stays: the next writer recovers and goes on.
			if c.name == "rm" && !json {
				r.ok("", "mcp", "add", "doomed", "--offline", "--url", fake.URL)
			}
		}
	}
}
