package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// claudeWithSubagent is a Claude Code session whose Task call (event 1)
// ran a subagent that edited a.txt (A0 to A1) and b.txt (B0 to B1) and
// wrote c.txt, all in the parent's workspace; after it, the parent edited
// a.txt (A1 to A2). It gives the store, the parent and the subagent.
func claudeWithSubagent(t *testing.T) (*Rook, *editTranscript, eventlog.ID, eventlog.ID) {
	e, sub := claudeSubagentLines(t)
	r, ids := importClaudeFiles(t, e, map[string][]string{"s1.jsonl": e.lines, "s1/subagents/agent-a1b2c3d.jsonl": sub})
	return r, e, ids["s1.jsonl"], ids["s1/subagents/agent-a1b2c3d.jsonl"]
}

// claudeSubagentLines are claudeWithSubagent's transcripts, not imported:
// the parent's (e.lines) and its subagent's, its workspace written.
func claudeSubagentLines(t *testing.T) (*editTranscript, []string) {
	e := newEditTranscript(t, "fix a and b") // 21:00:01
	at := func(p string) string { return filepath.Join(e.ws, p) }
	e.lines = append(e.lines, fmt.Sprintf(`{"type":"assistant",%s,"message":{"model":"claude-opus-4-6","id":"m1","role":"assistant","content":[{"type":"tool_use","id":"tk","name":"Task","input":{"description":"edit","prompt":"edit a and b"}}]},"uuid":"t1","timestamp":"2026-02-10T21:00:02.000Z"}`, e.env()))
	sub := &editTranscript{dir: e.dir, ws: e.ws, n: 2}
	sub.lines = append(sub.lines, fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":"edit a and b"},"uuid":"s0","timestamp":%q}`, sub.env(), sub.ts())) // :03
	sub.edit(at("a.txt"), "A0\n", "A0", "A1")                                                                                                                           // :04, :05
	sub.edit(at("b.txt"), "B0\n", "B0", "B1")                                                                                                                           // :06, :07
	sub.write(at("c.txt"), nil, "C1\n")                                                                                                                                 // :08, :09
	for i, l := range sub.lines {
		sub.lines[i] = strings.Replace(l, `"sessionId":"s1",`, `"sessionId":"s1","isSidechain":true,"agentId":"a1b2c3d",`, 1)
	}
	e.n = 9
	e.lines = append(e.lines, fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":[{"tool_use_id":"tk","type":"tool_result","content":[{"type":"text","text":"Done."}]}]},"toolUseResult":{"status":"completed","agentId":"a1b2c3d","content":[{"type":"text","text":"Done."}]},"uuid":"t2","timestamp":%q}`, e.env(), e.ts())) // :10
	e.edit(at("a.txt"), "A1\n", "A1", "A2")                                                                                                                                                                                                                                                                                                   // :11, :12
	writeTree(t, e.ws, tree{"a.txt": "A2\n", "b.txt": "B1\n", "c.txt": "C1\n"})
	return e, sub.lines
}

// Rewinding the parent to its Task call: each file as it was then, which
// the subagent's edit results say (a.txt A0, not the A1 the parent's own
// later edit says; b.txt B0 and c.txt absent, which the parent's events
// do not name), each said in a note; the undo puts the disk back.
func TestRewindCountsASubagentsEdits(t *testing.T) {
	r, e, parent, _ := claudeWithSubagent(t)
	rw, err := r.Rewind(parent, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	at := func(p string) string { return filepath.Join(e.ws, p) }
	if got := readFileT(t, at("a.txt")) + readFileT(t, at("b.txt")); got != "A0\nB0\n" {
		t.Fatalf("files: %q", got)
	}
	if _, err := os.Lstat(at("c.txt")); !os.IsNotExist(err) {
		t.Fatalf("c.txt is still there: %v", err)
	}
	if rw.FilesRestored != 2 || rw.FilesRemoved != 1 || len(rw.Notes) != 3 || !strings.Contains(rw.Notes[0], "a Claude Code subagent of this session") {
		t.Fatalf("report %+v", rw)
	}
	if _, err := r.Rewind(rw.Fork, *rw.BeforeSeq, false); err != nil {
		t.Fatal(err)
	}
	if got := readFileT(t, at("a.txt")) + readFileT(t, at("b.txt")) + readFileT(t, at("c.txt")); got != "A2\nB1\nC1\n" {
		t.Fatalf("after the undo: %q", got)
	}
	// After the Task's result (event 2): the parent's own edit says a.txt.
	if _, err := r.Rewind(parent, 3, false); err != nil {
		t.Fatal(err)
	}
	if got := readFileT(t, at("a.txt")) + readFileT(t, at("b.txt")); got != "A1\nB1\n" {
		t.Fatalf("files after rewinding past the subagent: %q", got)
	}
}

// claudeFork is e's lines as a fork of it copies them (forkedFrom, the
// same uuids and times), then a prompt of its own at :30.
func claudeFork(e *editTranscript) []string {
	var out []string
	for _, l := range e.lines {
		out = append(out, strings.Replace(l, `"sessionId":"s1"`, `"sessionId":"f1","forkedFrom":{"sessionId":"s1","messageUuid":"x"}`, 1))
	}
	return append(out, fmt.Sprintf(`{"type":"user","sessionId":"f1","cwd":%q,"version":"2.1.38","message":{"role":"user","content":"fork"},"uuid":"f0","timestamp":"2026-02-10T21:00:30.000Z"}`, e.ws))
}

// importClaudeFork writes e's fork (claudeFork) beside it, imports it,
// and gives its session.
func importClaudeFork(t *testing.T, r *Rook, e *editTranscript) eventlog.ID {
	t.Helper()
	projects := filepath.Join(e.dir, "home", ".claude", "projects")
	writeSource(t, vfs.OS, filepath.Join(projects, "-ws", "f1.jsonl"), claudeFork(e), "")
	var fork eventlog.ID
	for _, f := range mustImport(t, r, FormatClaudeCode, projects).Files {
		if filepath.Base(f.Path) == "f1.jsonl" && f.Session != nil {
			fork = *f.Session
		}
	}
	if fork == (eventlog.ID{}) {
		t.Fatal("f1.jsonl not imported")
	}
	return fork
}

// A line without a time of its own (a file-history snapshot) bears the
// one before it: the point there shares its time with the edit before
// it. A fork's copy of that edit is no state after the point (it was
// taken: a.txt A0, where it was A1).
func TestRewindFamilyCopyAtThePointsTime(t *testing.T) {
	e := newEditTranscript(t, "go")
	at := func(p string) string { return filepath.Join(e.ws, p) }
	e.edit(at("a.txt"), "A0\n", "A0", "A1")
	e.lines = append(e.lines, `{"type":"file-history-snapshot","messageId":"u1","snapshot":{"messageId":"u1","trackedFileBackups":{},"timestamp":"2026-02-10T21:00:03.500Z"},"isSnapshotUpdate":false}`)
	e.lines = append(e.lines, fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":"more"},"uuid":"u2","timestamp":%q}`, e.env(), e.ts()))
	e.edit(at("a.txt"), "A1\n", "A1", "A2")
	writeTree(t, e.ws, tree{"a.txt": "A2\n"})
	r, ids := importClaudeFiles(t, e, map[string][]string{"s1.jsonl": e.lines, "f1.jsonl": claudeFork(e)})
	p := ids["s1.jsonl"]
	results := resultSeqs(t, r, p)
	if _, err := r.Rewind(p, results[0]+1, false); err != nil {
		t.Fatal(err)
	}
	if got := readFileT(t, at("a.txt")); got != "A1\n" {
		t.Fatalf("a.txt: %q", got)
	}
}

// The session a Claude Code fork came from removed since: what it wrote
// after the fork, in the same workspace, is not known, and the fork's
// rewind refuses, nothing written.
func TestRewindFamilyForkOfARemovedParent(t *testing.T) {
	e := newEditTranscript(t, "go")
	at := func(p string) string { return filepath.Join(e.ws, p) }
	fork := claudeFork(e)
	own := &editTranscript{dir: e.dir, ws: e.ws, n: 40}
	own.edit(at("a.txt"), "A1\n", "A1", "A2") // the fork's own (:41, :42)
	for _, l := range own.lines {
		fork = append(fork, strings.Replace(l, `"sessionId":"s1"`, `"sessionId":"f1"`, 1))
	}
	e.edit(at("a.txt"), "A0\n", "A0", "A1") // the parent, after the fork (:02, :03)
	writeTree(t, e.ws, tree{"a.txt": "A2\n"})
	r, ids := importClaudeFiles(t, e, map[string][]string{"s1.jsonl": e.lines, "f1.jsonl": fork})
	p, f := ids["s1.jsonl"], ids["f1.jsonl"]
	if _, err := r.RemoveSession(p); err != nil {
		t.Fatal(err)
	}
	_, err := r.Rewind(f, 1, false)
	if err == nil || !strings.Contains(err.Error(), "was removed from rook since (session rm)") {
		t.Fatalf("rewind: %v, want a refusal", err)
	}
	if got := readFileT(t, at("a.txt")); got != "A2\n" {
		t.Fatalf("a.txt after the refusal: %q", got)
	}
}

// importClaudeFiles writes each transcript at its path under the
// projects' -ws directory, in e.dir's Claude Code home, and imports them
// into a store in e.dir: the store, and the sessions by those paths.
func importClaudeFiles(t *testing.T, e *editTranscript, files map[string][]string) (*Rook, map[string]eventlog.ID) {
	t.Helper()
	projects := filepath.Join(e.dir, "home", ".claude", "projects")
	for name, lines := range files {
		writeSource(t, vfs.OS, filepath.Join(projects, "-ws", filepath.FromSlash(name)), lines, "")
	}
	r := diskRook(t, filepath.Join(e.dir, "store"))
	rep := mustImport(t, r, FormatClaudeCode, projects)
	ids := map[string]eventlog.ID{}
	for _, f := range rep.Files {
		if f.Session == nil {
			t.Fatalf("%s not imported: %+v", f.Path, f)
		}
		rel, _ := filepath.Rel(filepath.Join(projects, "-ws"), f.Path)
		ids[filepath.ToSlash(rel)] = *f.Session
	}
	return r, ids
}
