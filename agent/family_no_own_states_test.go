package agent

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/eventlog"
)

// claudeOnlySubagentEdits is a Claude Code session that edits nothing
// itself: event 0 its prompt, 1 a Task call, whose subagent a1b2c3d
// edits a.txt (A0 to A1; said: its result says the file before, else as
// Claude Code writes a subagent's, not), 2 the Task's result, 3 a prompt
// ("thanks"), 4 the answer. It gives the store, the workspace and the
// session.
func claudeOnlySubagentEdits(t *testing.T, said bool) (*Rook, *editTranscript, eventlog.ID) {
	e := newEditTranscript(t, "fix a")           // :01
	e.lines = append(e.lines, claudeTaskCall(e)) // :02
	at := func(p string) string { return filepath.Join(e.ws, p) }
	sub := &editTranscript{dir: e.dir, ws: e.ws, n: e.n}
	sub.lines = append(sub.lines, fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":"edit a"},"uuid":"s0","timestamp":%q}`, sub.env(), sub.ts())) // :03
	if said {
		sub.edit(at("a.txt"), "A0\n", "A0", "A1") // :04 :05
		sub.lines = sideLines("a1b2c3d", sub.lines)
	} else {
		sub.lines = sideLines("a1b2c3d", sub.lines)
		sub.sideEdit(at("a.txt"), "A0", "A1")
	}
	e.n = sub.n
	e.lines = append(e.lines, claudeTaskResult(e, `"totalToolUseCount":1,`)) // :06
	e.lines = append(e.lines, fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":"thanks"},"uuid":"u3","timestamp":%q}`, e.env(), e.ts()))
	e.lines = append(e.lines, fmt.Sprintf(`{"type":"assistant",%s,"message":{"model":"claude-opus-4-6","id":"m4","role":"assistant","content":[{"type":"text","text":"You're welcome."}]},"uuid":"a4","timestamp":%q}`, e.env(), e.ts()))
	writeTree(t, e.ws, tree{"a.txt": "A1\n"})
	r, ids := importClaudeFiles(t, e, map[string][]string{"s1.jsonl": e.lines, "s1/subagents/agent-a1b2c3d.jsonl": sub.lines})
	return r, e, ids["s1.jsonl"]
}

// A session with no file state of its own (no edit result, no backup)
// whose subagent's do say the files before it, all before the point: a
// rewind to after the subagent ran has nothing to put back, rightly, as
// if the session had those states itself (a rewind to after its last
// edit), and goes, writing nothing. It was refused as imported "without
// file backups". To before the Task call, the subagent's state puts
// a.txt back.
func TestRewindNoOwnStatesSubagentStatesBefore(t *testing.T) {
	r, e, s := claudeOnlySubagentEdits(t, true)
	a := filepath.Join(e.ws, "a.txt")
	for _, to := range []uint64{3, 4, 5} {
		rep, err := r.Rewind(s, to, false)
		if err != nil {
			t.Fatalf("rewind to %d: %v", to, err)
		}
		if rep.DiskChanged || rep.FilesRestored != 0 || len(rep.Paths) != 0 {
			t.Fatalf("rewind to %d wrote: %+v", to, rep)
		}
		if got := readFileT(t, a); got != "A1\n" {
			t.Fatalf("a.txt after the rewind to %d: %q", to, got)
		}
	}
	// A rook fork of the session that ends before the Task: the
	// subagent's states, after its line's end, are not its line's, and
	// it has no other: refused as before.
	fork, err := r.Log.Fork(s, 1, eventlog.Meta{Title: "before the task"})
	if err != nil {
		t.Fatal(err)
	}
	var nb *NoFileBackupsError
	if _, err := r.Rewind(fork.ID, 1, false); !errors.As(err, &nb) {
		t.Fatalf("rewind of the fork: %v, want *NoFileBackupsError", err)
	}
	if _, err := r.Rewind(s, 1, false); err != nil {
		t.Fatalf("rewind to before the Task: %v", err)
	}
	if got := readFileT(t, a); got != "A0\n" {
		t.Fatalf("a.txt after the rewind to before the Task: %q", got)
	}
}

// The subagent's edit result does not say the file before it, as Claude
// Code writes a subagent's: neither the session nor its family holds a
// state of any file, and a rewind to after it is refused, as it is for
// a session whose own edit results say none: nothing tells that the
// files were as they are at the point.
func TestRewindNoOwnStatesSubagentUnsaid(t *testing.T) {
	r, e, s := claudeOnlySubagentEdits(t, false)
	var nb *NoFileBackupsError
	if _, err := r.Rewind(s, 3, false); !errors.As(err, &nb) || !strings.Contains(err.Error(), "without file backups") {
		t.Fatalf("rewind: %v, want *NoFileBackupsError", err)
	}
	if got := readFileT(t, filepath.Join(e.ws, "a.txt")); got != "A1\n" {
		t.Fatalf("a.txt: %q", got)
	}
}
