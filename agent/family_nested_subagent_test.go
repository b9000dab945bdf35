package agent

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/eventlog"
)

// claudeNestedSubagents is a Claude Code session whose Task call (event
// 1) ran subagent aaaa, which edited a.txt (A0 to A1) and ran its own
// Task: subagent bbbb, which edited b.txt (B0 to B1). Claude Code keeps
// every subagent's transcript flat beside the session's, whatever its
// depth (<session>/subagents/agent-<agentId>.jsonl, with an
// agent-<agentId>.meta.json naming its parentAgentId), and its lines
// name the session: both are imported as children of the parent. bbbb's
// Task result is in aaaa's transcript, not the parent's; with
// textOnly, it is as Claude Code writes a subagent's: no toolUseResult,
// the agentId and usage only in the text the model read. It gives the
// store, the parent, aaaa, bbbb and bbbb's transcript.
func claudeNestedSubagents(t *testing.T, textOnly bool) (*Rook, *editTranscript, eventlog.ID, eventlog.ID, eventlog.ID, string) {
	e := newEditTranscript(t, "fix a and b")     // :01
	e.lines = append(e.lines, claudeTaskCall(e)) // :02
	tr := `,"toolUseResult":{"status":"completed","agentId":"bbbb","totalToolUseCount":1,"content":[{"type":"text","text":"Done."}]}`
	if textOnly {
		tr = ""
	}
	a, b := nestedAgents(e, 2, `{"description":"b","prompt":"edit b"}`, `[{"type":"text","text":"Done."},{"type":"text","text":`+nestedUsageText+`}]`, tr) // :03-:06, :07-:09, :10
	nestedTaskResult(e)                                                                                                                                    // :11
	writeTree(t, e.ws, tree{"a.txt": "A1\n", "b.txt": "B1\n"})
	meta := func(parent string) []string {
		return []string{`{"agentType":"general-purpose","description":"b","toolUseId":"tb","parentAgentId":"` + parent + `","spawnDepth":2}`}
	}
	r, ids := importClaudeFiles(t, e, map[string][]string{
		"s1.jsonl":                      e.lines,
		"s1/subagents/agent-aaaa.jsonl": sideLines("aaaa", a.lines),
		"s1/subagents/agent-bbbb.jsonl": sideLines("bbbb", b.lines),
	})
	writeTree(t, filepath.Join(e.dir, "home", ".claude", "projects", "-ws", "s1", "subagents"), tree{"agent-bbbb.meta.json": meta("aaaa")[0] + "\n"})
	return r, e, ids["s1.jsonl"], ids["s1/subagents/agent-aaaa.jsonl"], ids["s1/subagents/agent-bbbb.jsonl"],
		filepath.Join(e.dir, "home", ".claude", "projects", "-ws", "s1", "subagents", "agent-bbbb.jsonl")
}

// A subagent's subagent removed since (session rm): its Task result is
// in the transcript of the subagent that ran it, which the parent's
// rewind reads (by time: it ran after the point). The rewind to before
// the parent's Task refuses, nothing written, naming bbbb, the event of
// aaaa's session its result is, and its transcript to import again; so
// whether that result has a toolUseResult or says the agentId only in
// its text, as Claude Code writes a subagent's. Imported again, the
// rewind goes, and puts b.txt back too. The parent's diff says bbbb in a
// note.
func TestRewindFamilyRemovedNestedSubagent(t *testing.T) {
	for _, textOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("text only %v", textOnly), func(t *testing.T) {
			r, e, parent, a, b, bFile := claudeNestedSubagents(t, textOnly)
			if _, err := r.RemoveSession(b); err != nil {
				t.Fatal(err)
			}
			_, patch, d := diffFiles(t, r, parent)
			if len(d.MissingSubagents) != 1 || d.MissingSubagents[0] != "bbbb" || strings.Contains(patch, "b.txt") {
				t.Fatalf("diff: missing %q, notes %q\n%s", d.MissingSubagents, d.Notes, patch)
			}
			_, err := r.Rewind(parent, 1, false)
			if err == nil || !strings.Contains(err.Error(), "subagent bbbb, whose Task result is event #") || !strings.Contains(err.Error(), "of session "+a.String()+" (a Claude Code subagent of this session)") ||
				!strings.Contains(err.Error(), "rook import claude-code "+bFile) {
				t.Fatalf("rewind: %v, want a refusal naming bbbb", err)
			}
			if got := readFileT(t, filepath.Join(e.ws, "a.txt")) + readFileT(t, filepath.Join(e.ws, "b.txt")); got != "A1\nB1\n" {
				t.Fatalf("files after the refusal: %q", got)
			}
			mustImport(t, r, FormatClaudeCode, bFile)
			if _, err := r.Rewind(parent, 1, false); err != nil {
				t.Fatalf("rewind after importing bbbb again: %v", err)
			}
			if got := readFileT(t, filepath.Join(e.ws, "a.txt")) + readFileT(t, filepath.Join(e.ws, "b.txt")); got != "A0\nB0\n" {
				t.Fatalf("files: %q", got)
			}
		})
	}
}

// sideLines marks lines, a transcript's, as subagent agent's
// (isSidechain, its agentId), as Claude Code writes them.
func sideLines(agent string, lines []string) []string {
	for i, l := range lines {
		lines[i] = strings.Replace(l, `"sessionId":"s1",`, `"sessionId":"s1","isSidechain":true,"agentId":"`+agent+`",`, 1)
	}
	return lines
}

// nestedUsageText is the text block Claude Code adds to a subagent's
// result after its report: its agentId (bbbb) and its <usage>.
const nestedUsageText = `"agentId: bbbb (use SendMessage with to: 'bbbb' to continue this agent)\n<usage>total_tokens: 900\ntool_uses: 1\nduration_ms: 2000</usage>"`

// nestedAgents is subagent aaaa of e's session (from its line from: a
// prompt, its edit of a.txt A0 to A1, an Agent call with input) and
// bbbb, that call's (line 6: a prompt, its edit of b.txt B0 to B1), and
// aaaa's line 9, the call's result: content (raw JSON) and tr (members
// after the message: a toolUseResult, or none).
func nestedAgents(e *editTranscript, from int, input, content, tr string) (a, b *editTranscript) {
	at := func(p string) string { return filepath.Join(e.ws, p) }
	a = &editTranscript{dir: e.dir, ws: e.ws, n: from}
	a.lines = append(a.lines, fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":"edit a and b"},"uuid":"a0","timestamp":%q}`, a.env(), a.ts()))
	a.edit(at("a.txt"), "A0\n", "A0", "A1")
	a.lines = append(a.lines, fmt.Sprintf(`{"type":"assistant",%s,"message":{"model":"claude-opus-4-6","id":"ma","role":"assistant","content":[{"type":"tool_use","id":"tb","name":"Agent","input":%s}]},"uuid":"a9","timestamp":%q}`, a.env(), input, a.ts()))
	b = &editTranscript{dir: e.dir, ws: e.ws, n: 6}
	b.lines = append(b.lines, fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":"edit b"},"uuid":"b0","timestamp":%q}`, b.env(), b.ts()))
	b.edit(at("b.txt"), "B0\n", "B0", "B1")
	a.n = 9
	a.lines = append(a.lines, fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":[{"tool_use_id":"tb","type":"tool_result","content":%s}]}%s,"uuid":"a10","timestamp":%q}`, a.env(), content, tr, a.ts()))
	return a, b
}

// nestedTaskResult ends e's session with its Task's result (line 10),
// naming subagent aaaa.
func nestedTaskResult(e *editTranscript) {
	e.n = 10
	e.lines = append(e.lines, claudeTaskResult(e, `"totalToolUseCount":3,`))
	for i, l := range e.lines {
		e.lines[i] = strings.ReplaceAll(l, "a1b2c3d", "aaaa")
	}
}
