package agent

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// reviewForkSetup: s1 edits nothing; f1 (a Claude Code fork) edits a.txt A1->A2.
func reviewForkSetup(t *testing.T) (*Rook, *editTranscript, eventlog.ID, eventlog.ID) {
	e := newEditTranscript(t, "go")
	at := func(p string) string { return filepath.Join(e.ws, p) }
	fork := claudeFork(e)
	own := &editTranscript{dir: e.dir, ws: e.ws, n: 40}
	own.edit(at("a.txt"), "A1\n", "A1", "A2")
	for _, l := range own.lines {
		fork = append(fork, strings.Replace(l, `"sessionId":"s1"`, `"sessionId":"f1"`, 1))
	}
	writeTree(t, e.ws, tree{"a.txt": "A2\n"})
	r, ids := importClaudeFiles(t, e, map[string][]string{"s1.jsonl": e.lines, "f1.jsonl": fork})
	return r, e, ids["s1.jsonl"], ids["f1.jsonl"]
}

// The undo of a rewind of a Claude Code fork, after its parent is removed.
func TestRewindFamilyUndoAfterParentRemoved(t *testing.T) {
	r, e, p, f := reviewForkSetup(t)
	res := resultSeqs(t, r, f)
	rw, err := r.Rewind(f, res[len(res)-1]-1, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFileT(t, filepath.Join(e.ws, "a.txt")); got != "A1\n" {
		t.Fatalf("after rewind: %q", got)
	}
	if _, err := r.RemoveSession(p); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Rewind(rw.Fork, *rw.BeforeSeq, false); err != nil {
		t.Fatalf("undo refused: %v", err)
	}
	if got := readFileT(t, filepath.Join(e.ws, "a.txt")); got != "A2\n" {
		t.Fatalf("after undo: %q", got)
	}
}

// A: b.txt B0->B1, a.txt A0->A1, Task: the subagent edits a.txt A1->A2.
func reviewParentSubagentAfter(t *testing.T) (*Rook, *editTranscript, eventlog.ID, eventlog.ID) {
	e := newEditTranscript(t, "go") // :01
	at := func(p string) string { return filepath.Join(e.ws, p) }
	e.edit(at("b.txt"), "B0\n", "B0", "B1")                                                                                                                                                                                                                                                   // :02 :03 (events 1, 2)
	e.edit(at("a.txt"), "A0\n", "A0", "A1")                                                                                                                                                                                                                                                   // :04 :05 (events 3, 4)
	e.lines = append(e.lines, fmt.Sprintf(`{"type":"assistant",%s,"message":{"model":"claude-opus-4-6","id":"m1","role":"assistant","content":[{"type":"tool_use","id":"tk","name":"Task","input":{"description":"edit","prompt":"edit a"}}]},"uuid":"t1","timestamp":%q}`, e.env(), e.ts())) // :06
	sub := &editTranscript{dir: e.dir, ws: e.ws, n: 6}
	sub.lines = append(sub.lines, fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":"edit a"},"uuid":"s0","timestamp":%q}`, sub.env(), sub.ts())) // :07
	sub.edit(at("a.txt"), "A1\n", "A1", "A2")                                                                                                                     // :08 :09
	for i, l := range sub.lines {
		sub.lines[i] = strings.Replace(l, `"sessionId":"s1",`, `"sessionId":"s1","isSidechain":true,"agentId":"a1b2c3d",`, 1)
	}
	e.n = 10
	e.lines = append(e.lines, fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":[{"tool_use_id":"tk","type":"tool_result","content":[{"type":"text","text":"Done."}]}]},"toolUseResult":{"status":"completed","agentId":"a1b2c3d","content":[{"type":"text","text":"Done."}]},"uuid":"t2","timestamp":%q}`, e.env(), e.ts()))
	writeTree(t, e.ws, tree{"a.txt": "A2\n", "b.txt": "B1\n"})
	r, ids := importClaudeFiles(t, e, map[string][]string{"s1.jsonl": e.lines, "s1/subagents/agent-a1b2c3d.jsonl": sub.lines})
	return r, e, ids["s1.jsonl"], ids["s1/subagents/agent-a1b2c3d.jsonl"]
}

// Rewind A to 3 (before its a.txt edit), then rewind that rewind's fork
// to 1 (before the b.txt edit). The fork's line ends at its fork point:
// the subagent's edit after it (A1 to A2) is not its line's, and a.txt,
// which its line does not reach, is left (A0, as the first rewind left
// it), not written as the subagent found it (A1).
func TestRewindFamilyRewindsForkReadsItsLine(t *testing.T) {
	r, e, a, _ := reviewParentSubagentAfter(t)
	rd := func(p string) string { return readFileT(t, filepath.Join(e.ws, p)) }
	rw, err := r.Rewind(a, 3, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := rd("a.txt") + rd("b.txt"); got != "A0\nB1\n" {
		t.Fatalf("first rewind: %q", got)
	}
	rw2, err := r.Rewind(rw.Fork, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := rd("a.txt") + rd("b.txt"); got != "A0\nB0\n" {
		t.Fatalf("second rewind: %q, notes %q", got, rw2.Notes)
	}
}

// The same through `session fork` at 3, rewound to 1: a.txt left as it
// is (A2), b.txt put back.
func TestRewindFamilySessionForkReadsItsLine(t *testing.T) {
	r, e, a, _ := reviewParentSubagentAfter(t)
	rd := func(p string) string { return readFileT(t, filepath.Join(e.ws, p)) }
	f, err := r.Log.Fork(a, 3, eventlog.Meta{Title: "f"})
	if err != nil {
		t.Fatal(err)
	}
	rw, err := r.Rewind(f.ID, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := rd("a.txt") + rd("b.txt"); got != "A2\nB0\n" {
		t.Fatalf("rewind: %q, notes %q", got, rw.Notes)
	}
}

// A continuation (sent to the background): its predecessor O removed, the
// continuation's rewind is not refused: O wrote nothing after N began.
func TestRewindFamilyContinuationOfARemovedSession(t *testing.T) {
	e := newEditTranscript(t, "go")
	at := func(p string) string { return filepath.Join(e.ws, p) }
	e.edit(at("a.txt"), "A0\n", "A0", "A1") // :02 :03
	var n []string
	for _, l := range e.lines {
		n = append(n, strings.Replace(l, `"sessionId":"s1"`, `"sessionId":"n1","sessionKind":"bg"`, 1))
	}
	own := &editTranscript{dir: e.dir, ws: e.ws, n: 40}
	own.edit(at("a.txt"), "A1\n", "A1", "A2")
	for _, l := range own.lines {
		n = append(n, strings.Replace(l, `"sessionId":"s1"`, `"sessionId":"n1"`, 1))
	}
	o := append(append([]string{}, e.lines...), claudeContinuedIn("s1", "n1"))
	writeTree(t, e.ws, tree{"a.txt": "A2\n"})
	r, ids := importClaudeFiles(t, e, map[string][]string{"s1.jsonl": o, "n1.jsonl": n})
	p, c := ids["s1.jsonl"], ids["n1.jsonl"]
	if m, _ := r.Log.ReadMeta(c); m.Parent == nil || *m.Parent != p {
		t.Fatalf("not linked: %+v", m)
	}
	if _, err := r.RemoveSession(p); err != nil {
		t.Fatal(err)
	}
	res := resultSeqs(t, r, c)
	if _, err := r.Rewind(c, res[len(res)-1]-1, false); err != nil {
		t.Fatalf("rewind of the continuation: %v", err)
	}
	if got := readFileT(t, at("a.txt")); got != "A1\n" {
		t.Fatalf("a.txt %q", got)
	}
}

// The undo of a rewind, after a Claude Code fork made since (later times)
// edited another file: the undo puts back what the rewind changed.
func TestRewindFamilyUndoIgnoresLaterSessions(t *testing.T) {
	r, e, parent, _ := claudeWithSubagent(t)
	at := func(p string) string { return filepath.Join(e.ws, p) }
	rw, err := r.Rewind(parent, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	// After the rewind: a fork f2 of s1, its own edit of d.txt in 2027.
	fork := claudeFork(e)
	fork = fork[:len(fork)-1]
	for i := range fork {
		fork[i] = strings.Replace(fork[i], `"sessionId":"f1"`, `"sessionId":"f2"`, 1)
	}
	own := &editTranscript{dir: e.dir, ws: e.ws}
	own.edit(at("d.txt"), "D0\n", "D0", "D1")
	for _, l := range own.lines {
		l = strings.Replace(l, `"sessionId":"s1"`, `"sessionId":"f2"`, 1)
		fork = append(fork, strings.Replace(l, "2026-02-10", "2027-02-10", 1))
	}
	writeTree(t, e.ws, tree{"d.txt": "D1\n"})
	projects := filepath.Join(e.dir, "home", ".claude", "projects")
	writeSource(t, vfs.OS, filepath.Join(projects, "-ws", "f2.jsonl"), fork, "")
	mustImport(t, r, FormatClaudeCode, projects)
	u, err := r.Rewind(rw.Fork, *rw.BeforeSeq, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFileT(t, at("a.txt")) + readFileT(t, at("d.txt")); got != "A2\nD1\n" {
		t.Fatalf("after the undo: %q, notes %q", got, u.Notes)
	}
}
