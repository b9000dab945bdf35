package agent

import (
	"fmt"
	"path/filepath"
	"strings"
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
	at := func(p string) string { return filepath.Join(e.ws, p) }
	e.lines = append(e.lines, claudeTaskCall(e))
	side := func(agent string, lines []string) []string {
		for i, l := range lines {
			lines[i] = strings.Replace(l, `"sessionId":"s1",`, `"sessionId":"s1","isSidechain":true,"agentId":"`+agent+`",`, 1)
		}
		return lines
	}
	// cccc, in parallel with aaaa: it starts first.
	c := &editTranscript{dir: e.dir, ws: e.ws, n: 2}
	c.lines = append(c.lines, fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":"edit c"},"uuid":"c0","timestamp":%q}`, c.env(), c.ts()))
	c.edit(at("c.txt"), "C0\n", "C0", "C1")
	a := &editTranscript{dir: e.dir, ws: e.ws, n: 3}
	a.lines = append(a.lines, fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":"edit a and b"},"uuid":"a0","timestamp":%q}`, a.env(), a.ts()))
	a.edit(at("a.txt"), "A0\n", "A0", "A1")
	a.lines = append(a.lines, fmt.Sprintf(`{"type":"assistant",%s,"message":{"model":"claude-opus-4-6","id":"ma","role":"assistant","content":[{"type":"tool_use","id":"tb","name":"Agent","input":{"description":"b","prompt":"edit b"}}]},"uuid":"a9","timestamp":%q}`, a.env(), a.ts()))
	a.n = 9
	text := `"agentId: bbbb (use SendMessage with to: 'bbbb' to continue this agent)\n<usage>total_tokens: 900\ntool_uses: 1\nduration_ms: 2000</usage>"`
	a.lines = append(a.lines, fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":[{"tool_use_id":"tb","type":"tool_result","content":[{"type":"text","text":"Done."},{"type":"text","text":%s}]}]},"uuid":"a10","timestamp":%q}`, a.env(), text, a.ts()))
	e.n = 10
	e.lines = append(e.lines, claudeTaskResult(e, `"totalToolUseCount":3,`))
	for i, l := range e.lines {
		e.lines[i] = strings.ReplaceAll(l, "a1b2c3d", "aaaa")
	}
	writeTree(t, e.ws, tree{"a.txt": "A1\n", "b.txt": "B1\n", "c.txt": "C1\n"})
	files := map[string][]string{
		"s1.jsonl":                      e.lines,
		"s1/subagents/agent-aaaa.jsonl": side("aaaa", a.lines),
		"s1/subagents/agent-cccc.jsonl": side("cccc", c.lines),
	}
	if withB {
		b := &editTranscript{dir: e.dir, ws: e.ws, n: 6}
		b.lines = append(b.lines, fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":"edit b"},"uuid":"b0","timestamp":%q}`, b.env(), b.ts()))
		b.edit(at("b.txt"), "B0\n", "B0", "B1")
		files["s1/subagents/agent-bbbb.jsonl"] = side("bbbb", b.lines)
	}
	return importClaudeFiles(t, e, files)
}
