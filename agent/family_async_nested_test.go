package agent

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/eventlog"
)

// claudeNestedAsync is claudeNestedSubagents (text only) with text as the
// second text block of bbbb's Task result in aaaa's transcript.
func claudeNestedAsync(t *testing.T, text string) (*Rook, *editTranscript, eventlog.ID, eventlog.ID) {
	e := newEditTranscript(t, "fix a and b")
	e.lines = append(e.lines, claudeTaskCall(e))
	a, b := nestedAgents(e, 2, `{"description":"b","prompt":"edit b","run_in_background":true}`, `[{"type":"text","text":`+jsonq(text)+`}]`, "")
	nestedTaskResult(e)
	writeTree(t, e.ws, tree{"a.txt": "A1\n", "b.txt": "B1\n"})
	r, ids := importClaudeFiles(t, e, map[string][]string{
		"s1.jsonl":                      e.lines,
		"s1/subagents/agent-aaaa.jsonl": sideLines("aaaa", a.lines),
		"s1/subagents/agent-bbbb.jsonl": sideLines("bbbb", b.lines),
	})
	return r, e, ids["s1.jsonl"], ids["s1/subagents/agent-bbbb.jsonl"]
}

// A subagent's Agent call run in the background (the default in recent
// Claude Code) gets, in the subagent's transcript (no toolUseResult), the
// text Claude Code gives the model: "Async agent launched
// successfully.\nagentId: <id> (internal ID ...)\nThe agent is working in
// the background...": no <usage> follows the agentId line. With bbbb
// removed, the parent's rewind to before its Task refuses (as it does for
// the synchronous form, TestRewindFamilyRemovedNestedSubagent): read only
// where a <usage> followed, the agentId named no subagent, and the rewind
// went, leaving b.txt as bbbb left it (B1), saying nothing.
func TestRemovedAsyncNestedSubagentRefuses(t *testing.T) {
	text := "Async agent launched successfully.\nagentId: bbbb (internal ID - do not mention to user. Use SendMessage with to: 'bbbb' to continue this agent.)\nThe agent is working in the background. You will be notified automatically when it completes."
	r, e, parent, b := claudeNestedAsync(t, text)
	if _, err := r.RemoveSession(b); err != nil {
		t.Fatal(err)
	}
	_, _, d := diffFiles(t, r, parent)
	if len(d.MissingSubagents) != 1 || d.MissingSubagents[0] != "bbbb" {
		t.Errorf("diff: missing subagents %q, want [bbbb] (notes %q)", d.MissingSubagents, d.Notes)
	}
	rw, err := r.Rewind(parent, 1, false)
	if err == nil || !strings.Contains(err.Error(), "subagent bbbb") {
		t.Fatalf("rewind: err %v (notes %q), files now %q, want a refusal naming bbbb", err, rw.Notes,
			readFileT(t, filepath.Join(e.ws, "a.txt"))+readFileT(t, filepath.Join(e.ws, "b.txt")))
	}
}
