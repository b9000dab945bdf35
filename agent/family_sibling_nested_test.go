package agent

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/rookhq/rook/eventlog"
)

// The diff of a subagent (cccc) reads its own Task results and those of
// its own subagents, not its siblings': aaaa, run in parallel with it,
// ran the nested bbbb, never imported. cccc's diff said bbbb was a
// missing subagent of its own ("the files it changed are not shown
// unless this session changed them too"), though cccc never ran it; a
// diff reads only the session's own subagents (diffSubagents). The
// parent's diff says it.
func TestSiblingsNestedSubagentIsNotInASubagentsDiff(t *testing.T) {
	r, ids := claudeSiblingsWithNested(t, false)
	// bbbb was never imported: the parent's diff says so.
	if _, _, d := diffFiles(t, r, ids["s1.jsonl"]); len(d.MissingSubagents) != 1 || d.MissingSubagents[0] != "bbbb" {
		t.Fatalf("parent's diff: missing %q", d.MissingSubagents)
	}
	got, patch, d := diffFiles(t, r, ids["s1/subagents/agent-cccc.jsonl"])
	if len(d.MissingSubagents) != 0 {
		t.Fatalf("cccc's diff: missing %q, notes %q (files %v)\n%s", d.MissingSubagents, d.Notes, got, patch)
	}
}

// The same with bbbb imported: the sibling's result reported it, and
// cccc's diff took bbbb's edit of b.txt as its own change, though cccc
// changed c.txt alone.
func TestSiblingsNestedSubagentsEditsAreNotInASubagentsDiff(t *testing.T) {
	r, ids := claudeSiblingsWithNested(t, true)
	got, patch, d := diffFiles(t, r, ids["s1/subagents/agent-cccc.jsonl"])
	if len(got) != 1 || got["c.txt"] != "modified" {
		t.Fatalf("cccc's diff: files %v, notes %q\n%s", got, d.Notes, patch)
	}
}

// claudeSiblingsWithNested: a parent whose subagents aaaa and cccc run in
// parallel (cccc first); aaaa runs bbbb (its result in aaaa's
// transcript, text only, as Claude Code writes it). cccc edits c.txt,
// aaaa a.txt, bbbb b.txt. bbbb is imported when withB.
func claudeSiblingsWithNested(t *testing.T, withB bool) (*Rook, map[string]eventlog.ID) {
	e := newEditTranscript(t, "fix a, b and c")
	e.lines = append(e.lines, claudeTaskCall(e))
	// cccc, in parallel with aaaa: it starts first.
	c := &editTranscript{dir: e.dir, ws: e.ws, n: 2}
	c.lines = append(c.lines, fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":"edit c"},"uuid":"c0","timestamp":%q}`, c.env(), c.ts()))
	c.edit(filepath.Join(e.ws, "c.txt"), "C0\n", "C0", "C1")
	a, b := nestedAgents(e, 3, `{"description":"b","prompt":"edit b"}`, `[{"type":"text","text":"Done."},{"type":"text","text":`+nestedUsageText+`}]`, "")
	nestedTaskResult(e)
	writeTree(t, e.ws, tree{"a.txt": "A1\n", "b.txt": "B1\n", "c.txt": "C1\n"})
	files := map[string][]string{
		"s1.jsonl":                      e.lines,
		"s1/subagents/agent-aaaa.jsonl": sideLines("aaaa", a.lines),
		"s1/subagents/agent-cccc.jsonl": sideLines("cccc", c.lines),
	}
	if withB {
		files["s1/subagents/agent-bbbb.jsonl"] = sideLines("bbbb", b.lines)
	}
	return importClaudeFiles(t, e, files)
}
