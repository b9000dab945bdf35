package cli

import (
	"bytes"
	"errors"
	"io/fs"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/rookhq/rook/agent"
	"github.com/rookhq/rook/agent/mcpclient"
	"github.com/rookhq/rook/internal/vfs"
)

// failIndexSync fails a step a command's Close takes after its work is
// done: the store's index commit, which the barriers a command makes
// leave to the close (cas.Options.CommitEvery). (The event log's close
// took one too, the removal of its writer marker; a failure there is a
// notice now, everything written being durable.)
type failIndexSync struct{ vfs.FS }

var errIndexSync = errors.New("injected: cannot sync the index")

func (f failIndexSync) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil || filepath.Base(name) != "objects.idx" {
		return file, err
	}
	return indexFile{file}, nil
}

type indexFile struct{ vfs.File }

func (indexFile) Sync() error { return errIndexSync }

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
			// A writer's open and close first takes in what the last
			// command's failed commit left out of the index: this
			// command's open commits nothing then, and its close is
			// where it fails.
			rk, err := agent.Open(r.home, agent.Options{FS: vfs.OS, Writable: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := rk.Close(); err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			e := &Env{Stdout: &out, Stderr: &errb, FS: failIndexSync{vfs.OS}, Home: r.home, Cwd: r.ws, JSON: json}
			err = c.cmd.Run(e)
			if !errors.Is(err, errIndexSync) {
				t.Errorf("mcp %s (json %v) with Close failing: err %v, want the injected failure", c.name, json, err)
			}
			if out.Len() != 0 {
				t.Errorf("mcp %s (json %v) printed %q though Close failed", c.name, json, out.String())
			}
			// The objects are in the segments: the next writer takes
			// them into the index and goes on.
			if c.name == "rm" && !json {
				r.ok("", "mcp", "add", "doomed", "--offline", "--url", fake.URL)
			}
		}
	}
}
