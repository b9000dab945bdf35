package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// wsUnchanged fails unless claudeWithSubagent's workspace is as it left
// it (a.txt A2, b.txt B1, c.txt C1): nothing written.
func wsUnchanged(t *testing.T, e *editTranscript) {
	t.Helper()
	at := func(p string) string { return filepath.Join(e.ws, p) }
	if got := readFileT(t, at("a.txt")) + readFileT(t, at("b.txt")) + readFileT(t, at("c.txt")); got != "A2\nB1\nC1\n" {
		t.Fatalf("files after the refusal: %q", got)
	}
}

// sessionCount is how many sessions r holds (a refused rewind makes no
// fork).
func sessionCount(t *testing.T, r *Rook) int {
	t.Helper()
	ids, err := r.Log.IDs()
	if err != nil {
		t.Fatal(err)
	}
	return len(ids)
}

// The subagent's session removed since (session rm): nothing names it
// any more, but the parent's Task result after the point does (its
// agentId). What it wrote is not known: the rewind to before the Task
// refuses, nothing written, naming the subagent and its transcript to
// import again; once imported again, the rewind goes. A rewind past the
// Task result does not need it.
func TestRewindFamilyRemovedSubagent(t *testing.T) {
	r, e, parent, sub := claudeWithSubagent(t)
	if _, err := r.RemoveSession(sub); err != nil {
		t.Fatal(err)
	}
	n := sessionCount(t, r)
	_, err := r.Rewind(parent, 1, false)
	subFile := filepath.Join(e.dir, "home", ".claude", "projects", "-ws", "s1", "subagents", "agent-a1b2c3d.jsonl")
	if err == nil || !strings.Contains(err.Error(), "subagent a1b2c3d") || !strings.Contains(err.Error(), "removed from rook since (session rm)") ||
		!strings.Contains(err.Error(), "rook import claude-code "+subFile) || !strings.Contains(err.Error(), "--keep-files") ||
		!strings.Contains(err.Error(), "or its transcript was never imported, and it may have written the workspace's files: what it wrote is not known") {
		t.Fatalf("rewind: %v, want a refusal naming the subagent", err)
	}
	wsUnchanged(t, e)
	if got := sessionCount(t, r); got != n {
		t.Fatalf("%d sessions after the refusal, %d before", got, n)
	}
	// The conversation only: no file read.
	if _, err := r.Rewind(parent, 1, true); err != nil {
		t.Fatalf("--keep-files: %v", err)
	}
	wsUnchanged(t, e)
	// Past the Task's result: the parent's own edit says a.txt.
	if _, err := r.Rewind(parent, 3, false); err != nil {
		t.Fatalf("rewind past the Task result: %v", err)
	}
	if got := readFileT(t, filepath.Join(e.ws, "a.txt")); got != "A1\n" {
		t.Fatalf("a.txt after rewinding past the subagent: %q", got)
	}
	// Imported again: linked, read, and the rewind goes.
	writeTree(t, e.ws, tree{"a.txt": "A2\n"})
	mustImport(t, r, FormatClaudeCode, subFile)
	if _, err := r.Rewind(parent, 1, false); err != nil {
		t.Fatalf("rewind after importing the subagent again: %v", err)
	}
	if got := readFileT(t, filepath.Join(e.ws, "a.txt")) + readFileT(t, filepath.Join(e.ws, "b.txt")); got != "A0\nB0\n" {
		t.Fatalf("files: %q", got)
	}
}

// A rook fork of the parent (session fork) holds its copy of the Task
// result: its rewind to before it refuses as the parent's does.
func TestRewindFamilyRemovedSubagentOfAFork(t *testing.T) {
	r, e, parent, sub := claudeWithSubagent(t)
	fork, err := r.Log.Fork(parent, 5, eventlog.Meta{Title: "kept"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.RemoveSession(sub); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Rewind(fork.ID, 1, false); err == nil || !strings.Contains(err.Error(), "subagent a1b2c3d") {
		t.Fatalf("rewind of the fork: %v, want a refusal", err)
	}
	wsUnchanged(t, e)
}

// An undo (a rewind's fork rewound to its capture before it) reads no
// linked session: the subagent removed after the rewind does not stop it.
func TestRewindFamilyUndoAfterSubagentRemoved(t *testing.T) {
	r, e, parent, sub := claudeWithSubagent(t)
	rw, err := r.Rewind(parent, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.RemoveSession(sub); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Rewind(rw.Fork, *rw.BeforeSeq, false); err != nil {
		t.Fatalf("undo refused: %v", err)
	}
	wsUnchanged(t, e)
}

// The subagent's session removed and its transcript gone from the disk
// too: the same refusal, saying there is none to import again.
func TestRewindFamilySubagentFileGone(t *testing.T) {
	r, e, parent, sub := claudeWithSubagent(t)
	src, err := r.Log.ReadMeta(sub)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.RemoveSession(sub); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(src.Source.Path); err != nil {
		t.Fatal(err)
	}
	_, err = r.Rewind(parent, 1, false)
	if err == nil || !strings.Contains(err.Error(), "subagent a1b2c3d") || !strings.Contains(err.Error(), "is not beside") || strings.Contains(err.Error(), "rook import") {
		t.Fatalf("rewind: %v, want a refusal", err)
	}
	wsUnchanged(t, e)
}

// A Task result that says its subagent used no tool (totalToolUseCount
// 0): it wrote nothing, and its transcript is not needed.
func TestRewindFamilySubagentWithoutTools(t *testing.T) {
	e := newEditTranscript(t, "go")
	e.lines = append(e.lines, claudeTaskCall(e))
	e.lines = append(e.lines, claudeTaskResult(e, `"totalToolUseCount":0,`))
	e.edit(filepath.Join(e.ws, "a.txt"), "A0\n", "A0", "A1")
	writeTree(t, e.ws, tree{"a.txt": "A1\n"})
	r, ids := importClaudeFiles(t, e, map[string][]string{"s1.jsonl": e.lines})
	if _, err := r.Rewind(ids["s1.jsonl"], 1, false); err != nil {
		t.Fatal(err)
	}
	if got := readFileT(t, filepath.Join(e.ws, "a.txt")); got != "A0\n" {
		t.Fatalf("a.txt: %q", got)
	}
	// One that used tools, its transcript never imported (the parent's
	// file imported alone), refuses: what rook holds cannot tell it from
	// one removed. Its file imported, the rewind goes.
	e2 := newEditTranscript(t, "go")
	e2.lines = append(e2.lines, claudeTaskCall(e2), claudeTaskResult(e2, `"totalToolUseCount":2,`))
	e2.edit(filepath.Join(e2.ws, "a.txt"), "A0\n", "A0", "A1")
	writeTree(t, e2.ws, tree{"a.txt": "A1\n"})
	r2, ids2 := importClaudeFiles(t, e2, map[string][]string{"s1.jsonl": e2.lines})
	subFile := filepath.Join(e2.dir, "home", ".claude", "projects", "-ws", "s1", "subagents", "agent-a1b2c3d.jsonl")
	sub := &editTranscript{dir: e2.dir, ws: e2.ws, n: 2}
	sub.lines = append(sub.lines, `{"type":"user",`+strings.Replace(sub.env(), `"sessionId":"s1",`, `"sessionId":"s1","isSidechain":true,"agentId":"a1b2c3d",`, 1)+`,"message":{"role":"user","content":"look"},"uuid":"s0","timestamp":"`+sub.ts()+`"}`)
	writeSource(t, vfs.OS, subFile, sub.lines, "")
	_, err := r2.Rewind(ids2["s1.jsonl"], 1, false)
	if err == nil || !strings.Contains(err.Error(), "subagent a1b2c3d") || !strings.Contains(err.Error(), "rook import claude-code "+subFile) {
		t.Fatalf("rewind: %v, want a refusal", err)
	}
	if got := readFileT(t, filepath.Join(e2.ws, "a.txt")); got != "A1\n" {
		t.Fatalf("a.txt after the refusal: %q", got)
	}
	mustImport(t, r2, FormatClaudeCode, subFile)
	if _, err := r2.Rewind(ids2["s1.jsonl"], 1, false); err != nil {
		t.Fatal(err)
	}
	if got := readFileT(t, filepath.Join(e2.ws, "a.txt")); got != "A0\n" {
		t.Fatalf("a.txt: %q", got)
	}
}

func claudeTaskCall(e *editTranscript) string {
	return `{"type":"assistant",` + e.env() + `,"message":{"model":"claude-opus-4-6","id":"m1","role":"assistant","content":[{"type":"tool_use","id":"tk","name":"Task","input":{"description":"look","prompt":"look"}}]},"uuid":"t1","timestamp":"` + e.ts() + `"}`
}

// claudeTaskResult answers claudeTaskCall, its toolUseResult naming
// subagent a1b2c3d, with more (JSON members, each ending in a comma).
func claudeTaskResult(e *editTranscript, more string) string {
	return `{"type":"user",` + e.env() + `,"message":{"role":"user","content":[{"tool_use_id":"tk","type":"tool_result","content":[{"type":"text","text":"Done."}]}]},"toolUseResult":{"status":"completed",` + more + `"agentId":"a1b2c3d","content":[{"type":"text","text":"Done."}]},"uuid":"t2","timestamp":"` + e.ts() + `"}`
}

// A Claude Code fork's copy of the parent's Task result names the
// parent's subagent, a child of the parent, not of the fork: found
// there, the fork's rewind goes; once it is removed, it refuses.
func TestRewindFamilySubagentOfAForksParent(t *testing.T) {
	r, e, _, sub := claudeWithSubagent(t)
	fork := importClaudeFork(t, r, e)
	if _, err := r.RemoveSession(sub); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Rewind(fork, 1, false); err == nil || !strings.Contains(err.Error(), "subagent a1b2c3d") {
		t.Fatalf("rewind of the fork, the subagent removed: %v, want a refusal", err)
	}
	wsUnchanged(t, e)
	mustImport(t, r, FormatClaudeCode, filepath.Join(e.dir, "home", ".claude", "projects"))
	if _, err := r.Rewind(fork, 1, false); err != nil {
		t.Fatalf("rewind of the fork: %v", err)
	}
	if got := readFileT(t, filepath.Join(e.ws, "a.txt")) + readFileT(t, filepath.Join(e.ws, "b.txt")); got != "A0\nB0\n" {
		t.Fatalf("files: %q", got)
	}
}
