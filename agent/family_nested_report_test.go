package agent

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/eventlog"
)

// claudeNestedWithReport is claudeNestedSubagents (text only: bbbb's Task result in
// aaaa's transcript has no toolUseResult), with report as the text of
// bbbb's final message to aaaa, the first text block of that result, as
// Claude Code writes it (the agent's report, then "agentId: ..." and its
// <usage> in a second block). bbbb is imported.
func claudeNestedWithReport(t *testing.T, report string) (*Rook, *editTranscript, eventlog.ID) {
	e := newEditTranscript(t, "fix a and b")
	at := func(p string) string { return filepath.Join(e.ws, p) }
	e.lines = append(e.lines, claudeTaskCall(e))
	side := func(agent string, lines []string) []string {
		for i, l := range lines {
			lines[i] = strings.Replace(l, `"sessionId":"s1",`, `"sessionId":"s1","isSidechain":true,"agentId":"`+agent+`",`, 1)
		}
		return lines
	}
	a := &editTranscript{dir: e.dir, ws: e.ws, n: 2}
	a.lines = append(a.lines, fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":"edit a and b"},"uuid":"a0","timestamp":%q}`, a.env(), a.ts()))
	a.edit(at("a.txt"), "A0\n", "A0", "A1")
	a.lines = append(a.lines, fmt.Sprintf(`{"type":"assistant",%s,"message":{"model":"claude-opus-4-6","id":"ma","role":"assistant","content":[{"type":"tool_use","id":"tb","name":"Agent","input":{"description":"b","prompt":"edit b"}}]},"uuid":"a9","timestamp":%q}`, a.env(), a.ts()))
	b := &editTranscript{dir: e.dir, ws: e.ws, n: 6}
	b.lines = append(b.lines, fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":"edit b"},"uuid":"b0","timestamp":%q}`, b.env(), b.ts()))
	b.edit(at("b.txt"), "B0\n", "B0", "B1")
	a.n = 9
	text := `"agentId: bbbb (use SendMessage with to: 'bbbb' to continue this agent)\n<usage>total_tokens: 900\ntool_uses: 1\nduration_ms: 2000</usage>"`
	a.lines = append(a.lines, fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":[{"tool_use_id":"tb","type":"tool_result","content":[{"type":"text","text":%s},{"type":"text","text":%s}]}]},"uuid":"a10","timestamp":%q}`, a.env(), jsonq(report), text, a.ts()))
	e.n = 10
	e.lines = append(e.lines, claudeTaskResult(e, `"totalToolUseCount":3,`))
	for i, l := range e.lines {
		e.lines[i] = strings.ReplaceAll(l, "a1b2c3d", "aaaa")
	}
	writeTree(t, e.ws, tree{"a.txt": "A1\n", "b.txt": "B1\n"})
	r, ids := importClaudeFiles(t, e, map[string][]string{
		"s1.jsonl":                      e.lines,
		"s1/subagents/agent-aaaa.jsonl": side("aaaa", a.lines),
		"s1/subagents/agent-bbbb.jsonl": side("bbbb", b.lines),
	})
	return r, e, ids["s1.jsonl"]
}

// claudeTaskText reads "agentId: <id>" of a subagent's Task result only
// where Claude Code's "<usage>" follows it, not from the agent's own
// report (what the model wrote: free text). It read every line: a nested
// agent whose report quoted a line starting "agentId: " (it looked at a
// Claude Code transcript, a log, a config) named a subagent that never
// ran, the parent's rewind refused for it, with no transcript to import,
// and its diff said a missing subagent. Every subagent here is imported.
func TestNestedTaskReportQuotingAnAgentIdIsNoSubagent(t *testing.T) {
	report := "Done: b.txt edited. The meta file I was asked about reads:\nagentId: 0ddba11\nparentAgentId: aaaa"
	r, e, parent := claudeNestedWithReport(t, report)
	_, patch, d := diffFiles(t, r, parent)
	if len(d.MissingSubagents) != 0 {
		t.Errorf("diff: missing subagents %q (notes %q)\n%s", d.MissingSubagents, d.Notes, patch)
	}
	if _, err := r.Rewind(parent, 1, false); err != nil {
		t.Fatalf("rewind: %v", err)
	}
	if got := readFileT(t, filepath.Join(e.ws, "a.txt")) + readFileT(t, filepath.Join(e.ws, "b.txt")); got != "A0\nB0\n" {
		t.Fatalf("files: %q", got)
	}
}

// Control: the same with a report that quotes no agentId line goes.
func TestNestedTaskReportControl(t *testing.T) {
	r, e, parent := claudeNestedWithReport(t, "Done: b.txt edited.")
	if _, err := r.Rewind(parent, 1, false); err != nil {
		t.Fatalf("rewind: %v", err)
	}
	if got := readFileT(t, filepath.Join(e.ws, "a.txt")) + readFileT(t, filepath.Join(e.ws, "b.txt")); got != "A0\nB0\n" {
		t.Fatalf("files: %q", got)
	}
}
