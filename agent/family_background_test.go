package agent

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/eventlog"
)

// asyncLaunchText is the text Claude Code gives the model for an Agent
// call run in the background: its launch, not its end.
const asyncLaunchText = "Async agent launched successfully.\nagentId: a1b2c3d (internal ID - do not mention to user. Use SendMessage with to: 'a1b2c3d' to continue this agent.)\nThe agent is working in the background. You will be notified automatically when it completes."

// noticeLine is the message Claude Code writes in the user's place when
// background agent a1b2c3d stops (status: completed, failed, killed), as
// a line of e's session: form "user" a user line, "meta" one marked
// isMeta, "queued" the queue-operation line written when it is queued.
func noticeLine(e *editTranscript, status, form string) string {
	text := "<task-notification>\n<task-id>a1b2c3d</task-id>\n<tool-use-id>tk</tool-use-id>\n<output-file>/tmp/claude-1000/-ws/s1/tasks/a1b2c3d.output</output-file>\n<status>" + status + "</status>\n<summary>Agent \"look\" " + status + "</summary>\n<result>" + strings.Repeat("I edited b.txt. ", 40) + "</result>\n<usage><total_tokens>900</total_tokens><tool_uses>2</tool_uses><duration_ms>2000</duration_ms></usage>\n</task-notification>"
	switch form {
	case "queued":
		return fmt.Sprintf(`{"type":"queue-operation","operation":"enqueue","timestamp":%q,"sessionId":"s1","content":%s}`, e.ts(), jsonq(text))
	case "meta":
		return fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":%s},"isMeta":true,"uuid":"n%d","timestamp":%q}`, e.env(), jsonq(text), len(e.lines), e.ts())
	}
	return fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":[{"type":"text","text":%s}]},"uuid":"n%d","timestamp":%q}`, e.env(), jsonq(text), len(e.lines), e.ts())
}

// sendMessage is a SendMessage call to a1b2c3d and its result, which
// Claude Code says resumed it in the background.
func sendMessage(e *editTranscript) []string {
	return []string{
		fmt.Sprintf(`{"type":"assistant",%s,"message":{"model":"claude-opus-4-6","id":"msm","role":"assistant","content":[{"type":"tool_use","id":"tsm","name":"SendMessage","input":{"to":"a1b2c3d","summary":"more","message":"edit b again"}}]},"uuid":"sm1","timestamp":%q}`, e.env(), e.ts()),
		fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":[{"tool_use_id":"tsm","type":"tool_result","content":[{"type":"text","text":"resumed"}]}]},"toolUseResult":{"success":true,"message":"Agent \"a1b2c3d\" was stopped (completed); resumed it in the background with your message.","resumedAgentId":"a1b2c3d"},"uuid":"sm2","timestamp":%q}`, e.env(), e.ts()),
	}
}

// claudeBackground is a Claude Code session (s1) whose Agent call, run in
// the background, launched subagent a1b2c3d: event 0 the prompt, 1 the
// call, 2 its launch result (textOnly: the text alone, as a subagent's
// transcript has it; else with the main thread's toolUseResult), 3 and 4
// the session's edit of a.txt (A0 to A1), 5 a prompt ("more"). Then the
// subagent, running on, edits b.txt (B0 to B1), and the session goes on
// with mid (its lines), a prompt ("again") and its edit of a.txt (A1 to
// A2), then end. It gives the store, the session and the subagent's.
func claudeBackground(t *testing.T, textOnly bool, mid, end func(e *editTranscript) []string) (*Rook, *editTranscript, eventlog.ID, eventlog.ID) {
	e := newEditTranscript(t, "go") // :01
	at := func(p string) string { return filepath.Join(e.ws, p) }
	e.lines = append(e.lines, fmt.Sprintf(`{"type":"assistant",%s,"message":{"model":"claude-opus-4-6","id":"m1","role":"assistant","content":[{"type":"tool_use","id":"tk","name":"Agent","input":{"description":"look","prompt":"edit b","run_in_background":true}}]},"uuid":"t1","timestamp":%q}`, e.env(), e.ts()))
	tr := `,"toolUseResult":{"isAsync":true,"status":"async_launched","agentId":"a1b2c3d","description":"look","prompt":"edit b","outputFile":"/tmp/claude-1000/-ws/s1/tasks/a1b2c3d.output","canReadOutputFile":true}`
	if textOnly {
		tr = ""
	}
	e.lines = append(e.lines, fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":[{"tool_use_id":"tk","type":"tool_result","content":[{"type":"text","text":%s}]}]}%s,"uuid":"t2","timestamp":%q}`, e.env(), jsonq(asyncLaunchText), tr, e.ts()))
	e.edit(at("a.txt"), "A0\n", "A0", "A1") // :04 :05
	e.lines = append(e.lines, fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":"more"},"uuid":"u5","timestamp":%q}`, e.env(), e.ts()))
	sub := &editTranscript{dir: e.dir, ws: e.ws, n: e.n}
	sub.lines = append(sub.lines, fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":"edit b"},"uuid":"s0","timestamp":%q}`, sub.env(), sub.ts())) // :07
	sub.edit(at("b.txt"), "B0\n", "B0", "B1")                                                                                                                     // :08 :09
	e.n = sub.n
	if mid != nil {
		e.lines = append(e.lines, mid(e)...)
	}
	e.lines = append(e.lines, fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":"again"},"uuid":"u9","timestamp":%q}`, e.env(), e.ts()))
	e.edit(at("a.txt"), "A1\n", "A1", "A2")
	if end != nil {
		e.lines = append(e.lines, end(e)...)
	}
	writeTree(t, e.ws, tree{"a.txt": "A2\n", "b.txt": "B1\n"})
	r, ids := importClaudeFiles(t, e, map[string][]string{"s1.jsonl": e.lines, "s1/subagents/agent-a1b2c3d.jsonl": sideLines("a1b2c3d", sub.lines)})
	return r, e, ids["s1.jsonl"], ids["s1/subagents/agent-a1b2c3d.jsonl"]
}

// eventOf is the seq of the first event of session id whose body holds s.
func eventOf(t *testing.T, r *Rook, id eventlog.ID, s string) uint64 {
	t.Helper()
	evs, err := r.Log.Read(id, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if body, _, err := r.readBody(ev.Body); err == nil && strings.Contains(string(body), s) {
			return ev.Seq
		}
	}
	t.Fatalf("no event of %s holds %q", id, s)
	return 0
}

// notices are the lines of noticeLine, one per status, in form.
func notices(form string, statuses ...string) func(e *editTranscript) []string {
	return func(e *editTranscript) []string {
		var out []string
		for _, s := range statuses {
			out = append(out, noticeLine(e, s, form))
		}
		return out
	}
}

// A background subagent runs on after its launch result: one whose
// transcript is in no imported session (removed since, or never
// imported), launched before the point, may have written after it, and
// nothing tells what. The rewind to after its launch refuses, nothing
// written, naming it, as for a Task result after the point. It went,
// leaving b.txt as the subagent left it (B1), where it was B0 at the
// point, and saying nothing. So whether the launch is read from the
// main thread's toolUseResult or from its text alone; and when the
// notice that it stopped comes only after the point. With its
// transcript imported again, the rewind goes and puts b.txt back.
func TestRewindFamilyBackgroundSubagentRunsOn(t *testing.T) {
	for _, c := range []struct {
		name     string
		textOnly bool
		mid      func(e *editTranscript) []string
	}{
		{"never notified", false, nil},
		{"never notified, text only", true, nil},
		{"notified after the point", false, notices("meta", "completed")},
		{"queued after the point", false, notices("queued", "completed")},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, e, parent, sub := claudeBackground(t, c.textOnly, c.mid, nil)
			rd := func() string {
				return readFileT(t, filepath.Join(e.ws, "a.txt")) + readFileT(t, filepath.Join(e.ws, "b.txt"))
			}
			if _, err := r.RemoveSession(sub); err != nil {
				t.Fatal(err)
			}
			n := sessionCount(t, r)
			// The point: "more", after its launch (event 2) and the
			// session's first edit of a.txt (3, 4).
			to := eventOf(t, r, parent, `"content":"more"`)
			_, err := r.Rewind(parent, to, false)
			if err == nil || !strings.Contains(err.Error(), "the Claude Code subagent a1b2c3d, whose") || !strings.Contains(err.Error(), "event #2 of this session") ||
				!strings.Contains(err.Error(), "rook import claude-code ") || !strings.Contains(err.Error(), "--keep-files") {
				t.Fatalf("rewind to %d: err %v, files now %q, want a refusal naming a1b2c3d", to, err, rd())
			}
			if got := rd(); got != "A2\nB1\n" {
				t.Fatalf("files after the refusal: %q", got)
			}
			if got := sessionCount(t, r); got != n {
				t.Fatalf("%d sessions after the refusal, %d before", got, n)
			}
			// Imported again: read, and b.txt put back as it was.
			mustImport(t, r, FormatClaudeCode, filepath.Join(e.dir, "home", ".claude", "projects"))
			if _, err := r.Rewind(parent, to, false); err != nil {
				t.Fatalf("rewind with the subagent imported again: %v", err)
			}
			if got := rd(); got != "A1\nB0\n" {
				t.Fatalf("files: %q", got)
			}
		})
	}
}

// The notice that the background subagent stopped (completed, failed,
// killed), in the user's place or queued, before the point: it ran
// before it, and its transcript is not needed (removed, the rewind to
// "again" goes: a.txt A1, b.txt as it was). A SendMessage to it after
// the notice starts it again: at or after the point, or before it and
// not notified again before it, the rewind refuses.
func TestRewindFamilyBackgroundSubagentNotified(t *testing.T) {
	then := func(fs ...func(e *editTranscript) []string) func(e *editTranscript) []string {
		return func(e *editTranscript) []string {
			var out []string
			for _, f := range fs {
				out = append(out, f(e)...)
			}
			return out
		}
	}
	for _, c := range []struct {
		name     string
		textOnly bool
		mid, end func(e *editTranscript) []string
		refused  bool
	}{
		{"completed", false, notices("user", "completed"), nil, false},
		{"completed, meta", false, notices("meta", "completed"), nil, false},
		{"completed, text only", true, notices("user", "completed"), nil, false},
		{"failed", false, notices("user", "failed"), nil, false},
		{"killed", false, notices("user", "killed"), nil, false},
		{"queued", false, notices("queued", "completed"), nil, false},
		{"status not known", false, notices("user", "running"), nil, true},
		{"resumed after the point", false, notices("user", "completed"), sendMessage, true},
		{"notified again after the point", false, notices("user", "completed"), notices("user", "completed"), true},
		{"resumed before the point", false, then(notices("user", "completed"), sendMessage), nil, true},
		{"resumed and notified before the point", false, then(notices("user", "completed"), sendMessage, notices("user", "completed")), nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rewindWithoutBackground(t, c.textOnly, c.mid, c.end, c.refused)
		})
	}
}

// A background subagent a subagent launched (its launch in that
// subagent's transcript, text only) runs on after the subagent's own
// Task result: removed, the parent's rewind to that result (after the
// launch) refuses, naming it and the subagent's event. Notified in the
// subagent's transcript before it, the rewind goes.
func TestRewindFamilyNestedBackgroundSubagentRunsOn(t *testing.T) {
	for _, notified := range []bool{false, true} {
		t.Run(fmt.Sprintf("notified %v", notified), func(t *testing.T) {
			e := newEditTranscript(t, "fix a and b")
			e.lines = append(e.lines, claudeTaskCall(e))
			text := strings.ReplaceAll(asyncLaunchText, "a1b2c3d", "bbbb")
			a, b := nestedAgents(e, 2, `{"description":"b","prompt":"edit b","run_in_background":true}`, `[{"type":"text","text":`+jsonq(text)+`}]`, "")
			if notified {
				a.lines = append(a.lines, strings.ReplaceAll(noticeLine(a, "completed", "meta"), "a1b2c3d", "bbbb")) // :11
			}
			nestedTaskResult(e) // :11
			if notified {
				e.lines[len(e.lines)-1] = strings.Replace(e.lines[len(e.lines)-1], "21:00:11", "21:00:12", 1)
			}
			writeTree(t, e.ws, tree{"a.txt": "A1\n", "b.txt": "B1\n"})
			r, ids := importClaudeFiles(t, e, map[string][]string{
				"s1.jsonl":                      e.lines,
				"s1/subagents/agent-aaaa.jsonl": sideLines("aaaa", a.lines),
				"s1/subagents/agent-bbbb.jsonl": sideLines("bbbb", b.lines),
			})
			parent := ids["s1.jsonl"]
			if _, err := r.RemoveSession(ids["s1/subagents/agent-bbbb.jsonl"]); err != nil {
				t.Fatal(err)
			}
			to := eventOf(t, r, parent, `"agentId":"aaaa"`)
			_, err := r.Rewind(parent, to, false)
			if !notified {
				if err == nil || !strings.Contains(err.Error(), "subagent bbbb, whose") || !strings.Contains(err.Error(), "of session "+ids["s1/subagents/agent-aaaa.jsonl"].String()) {
					t.Fatalf("rewind to %d: err %v, want a refusal naming bbbb", to, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("rewind to %d: %v", to, err)
			}
		})
	}
}

// rewindWithoutBackground imports claudeBackground's session (textOnly,
// mid, end), removes its background subagent, and rewinds to the prompt
// "again": refused, naming the subagent, the files as they were (A2,
// B1); else a.txt put back (A1).
func rewindWithoutBackground(t *testing.T, textOnly bool, mid, end func(e *editTranscript) []string, refused bool) {
	t.Helper()
	r, e, parent, sub := claudeBackground(t, textOnly, mid, end)
	rd := func() string {
		return readFileT(t, filepath.Join(e.ws, "a.txt")) + readFileT(t, filepath.Join(e.ws, "b.txt"))
	}
	if _, err := r.RemoveSession(sub); err != nil {
		t.Fatal(err)
	}
	to := eventOf(t, r, parent, `"content":"again"`)
	_, err := r.Rewind(parent, to, false)
	if refused {
		if err == nil || !strings.Contains(err.Error(), "subagent a1b2c3d, whose") {
			t.Fatalf("rewind to %d: err %v, files now %q, want a refusal naming a1b2c3d", to, err, rd())
		}
		if got := rd(); got != "A2\nB1\n" {
			t.Fatalf("files after the refusal: %q", got)
		}
		return
	}
	if err != nil {
		t.Fatalf("rewind to %d: %v", to, err)
	}
	if got := rd(); got != "A1\nB1\n" {
		t.Fatalf("files: %q", got)
	}
}
