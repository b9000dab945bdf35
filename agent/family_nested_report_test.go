package agent

import (
	"path/filepath"
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
	e.lines = append(e.lines, claudeTaskCall(e))
	a, b := nestedAgents(e, 2, `{"description":"b","prompt":"edit b"}`, `[{"type":"text","text":`+jsonq(report)+`},{"type":"text","text":`+nestedUsageText+`}]`, "")
	nestedTaskResult(e)
	writeTree(t, e.ws, tree{"a.txt": "A1\n", "b.txt": "B1\n"})
	r, ids := importClaudeFiles(t, e, map[string][]string{
		"s1.jsonl":                      e.lines,
		"s1/subagents/agent-aaaa.jsonl": sideLines("aaaa", a.lines),
		"s1/subagents/agent-bbbb.jsonl": sideLines("bbbb", b.lines),
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
