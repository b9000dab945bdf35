package agent

import (
	"fmt"
	"slices"
	"testing"

	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// checkSubagentLinks shows the parent whole, then each event alone, and
// holds that the events at want (seq -> child) name their child and no
// other does; that a result alone names its child too; and that the
// child's show names its parent, a subagent.
func checkSubagentLinks(t *testing.T, r *Rook, parent eventlog.ID, want map[uint64]eventlog.ID, results []uint64) {
	t.Helper()
	whole, err := r.Show(parent, ShowQuery{Limit: MaxPageEntries})
	if err != nil {
		t.Fatal(err)
	}
	if whole.Parent != nil {
		t.Fatalf("the parent has a parent: %+v", whole.Parent)
	}
	for _, v := range whole.Events {
		child, ok := want[v.Seq]
		switch {
		case ok && !slices.Equal(v.Children, []eventlog.ID{child}):
			t.Fatalf("#%d %s %s: children %v, want %s", v.Seq, v.Kind, v.Label, v.Children, child)
		case !ok && len(v.Children) > 0:
			t.Fatalf("#%d %s %s: children %v, want none", v.Seq, v.Kind, v.Label, v.Children)
		}
	}
	for _, seq := range results {
		alone, err := r.Show(parent, ShowQuery{From: seq, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if got := alone.Events[0].Children; !slices.Equal(got, []eventlog.ID{want[seq]}) {
			t.Fatalf("#%d alone: children %v, want %s", seq, got, want[seq])
		}
	}
	for _, child := range want {
		p, err := r.Show(child, ShowQuery{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if p.Parent == nil || p.Parent.ID != parent || !p.Parent.Subagent || p.Parent.Fork {
			t.Fatalf("the child's show: parent %+v, want the subagent of %s", p.Parent, parent)
		}
	}
}

// Show links a Claude Code Task call and its result, whose toolUseResult
// names the subagent (agentId), to the child session its transcript
// (agent-<agentId>.jsonl) was imported as: in the newer layout
// (<session>/subagents/) and the older (beside the parent). A subagent
// whose transcript is not imported links nothing.
func TestShowLinksClaudeSubagentsToTheirSessions(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	env := func(sid string) string {
		return fmt.Sprintf(`"sessionId":%q,"cwd":"/home/u/proj","version":"2.1.39","timestamp":"2026-02-11T21:24:19.000Z"`, sid)
	}
	task := func(sid, use, agentID string) []string {
		return []string{
			fmt.Sprintf(`{"type":"assistant",%s,"message":{"model":"claude-opus-4-6","id":"msg_%s","role":"assistant","content":[{"type":"tool_use","id":%q,"name":"Task","input":{"description":"Look","subagent_type":"Explore","prompt":"Find the config"}}]},"uuid":"c%s"}`, env(sid), use, use, use),
			fmt.Sprintf(`{"type":"progress",%s,"data":{"type":"agent_progress","prompt":"Find the config","agentId":%q},"toolUseID":"agent_msg_%s","parentToolUseID":%q,"uuid":"p%s"}`, env(sid), agentID, use, use, use),
			fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":[{"tool_use_id":%q,"type":"tool_result","content":[{"type":"text","text":"It is config.go."}]}]},"toolUseResult":{"status":"completed","prompt":"Find the config","agentId":%q,"content":[{"type":"text","text":"It is config.go."}],"totalDurationMs":3000,"totalTokens":900,"totalToolUseCount":1},"uuid":"r%s"}`, env(sid), use, agentID, use),
		}
	}
	sub := func(sid, agentID string) []string {
		return []string{
			fmt.Sprintf(`{"type":"user","isSidechain":true,"agentId":%q,%s,"message":{"role":"user","content":"Find the config"},"uuid":"s1"}`, agentID, env(sid)),
			fmt.Sprintf(`{"type":"assistant","isSidechain":true,"agentId":%q,%s,"message":{"model":"claude-haiku-4-5","id":"msg_s","role":"assistant","content":[{"type":"text","text":"It is config.go."}]},"uuid":"s2"}`, agentID, env(sid)),
		}
	}
	prompt := func(sid string) string {
		return fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":"Where is the config read?"},"uuid":"u0"}`, env(sid))
	}

	// The newer layout; a second Task whose subagent is not imported.
	lines := append([]string{prompt("p1")}, task("p1", "toolu_A", "a1b2c3d")...)
	lines = append(lines, task("p1", "toolu_B", "a9f9f9f")...)
	writeSource(t, fsys, "/p/p1.jsonl", lines, "")
	writeSource(t, fsys, "/p/p1/subagents/agent-a1b2c3d.jsonl", sub("p1", "a1b2c3d"), "")
	// The older: agent-<id>.jsonl beside its parent.
	writeSource(t, fsys, "/o/p2.jsonl", append([]string{prompt("p2")}, task("p2", "toolu_C", "b2c3d4e")...), "")
	writeSource(t, fsys, "/o/agent-b2c3d4e.jsonl", sub("p2", "b2c3d4e"), "")
	rep := mustImport(t, r, FormatClaudeCode, "/p", "/o")

	p1, c1 := fileByPath(t, rep, "/p/p1.jsonl"), fileByPath(t, rep, "/p/p1/subagents/agent-a1b2c3d.jsonl")
	if c1.Parent == nil || *c1.Parent != *p1.Session {
		t.Fatalf("the subagent is not p1's child: %+v", c1)
	}
	// #0 the prompt, #1 the call, #2 its progress, #3 the result; #4 to
	// #6 the Task whose subagent is not imported.
	checkSubagentLinks(t, r, *p1.Session, map[uint64]eventlog.ID{1: *c1.Session, 3: *c1.Session}, []uint64{3})

	p2, c2 := fileByPath(t, rep, "/o/p2.jsonl"), fileByPath(t, rep, "/o/agent-b2c3d4e.jsonl")
	checkSubagentLinks(t, r, *p2.Session, map[uint64]eventlog.ID{1: *c2.Session, 3: *c2.Session}, []uint64{3})
}

// Show links a Codex spawn_agent call and its output, which names the
// spawned thread ({"agent_id": ...}), to the child session the thread's
// rollout (its session_meta's source naming the parent thread) was
// imported as: the output as a string, or as content items.
func TestShowLinksCodexSubagentsToTheirSessions(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	const parent, child, other = "019b8a10-1111-7222-8333-944455566677", "019b8a11-3333-7444-8555-a66677788899", "019b8a13-3333-7444-8555-a66677788899"
	line := func(typ, payload string) string {
		return fmt.Sprintf(`{"timestamp":"2026-01-07T08:30:04.000Z","type":%q,"payload":%s}`, typ, payload)
	}
	meta := func(id, source string) string {
		return line("session_meta", fmt.Sprintf(`{"id":%q,"timestamp":"2026-01-07T08:30:00.000Z","cwd":"/home/dev/app","originator":"codex_cli_rs","cli_version":"0.80.0","source":%s}`, id, source))
	}
	spawnedBy := fmt.Sprintf(`{"subagent":{"thread_spawn":{"parent_thread_id":%q,"depth":1,"agent_role":"explorer","agent_nickname":"scout"}}}`, parent)
	writeSource(t, fsys, "/c/2026/01/07/rollout-2026-01-07T08-30-00-"+parent+".jsonl", []string{
		meta(parent, `"cli"`),
		line("response_item", `{"type":"message","role":"user","content":[{"type":"input_text","text":"Which functions are never called?"}]}`),
		line("response_item", `{"type":"function_call","name":"spawn_agent","arguments":"{\"message\":\"Find the callers\"}","call_id":"call_Sp1"}`),
		line("response_item", fmt.Sprintf(`{"type":"function_call_output","call_id":"call_Sp1","output":%q}`, `{"agent_id":"`+child+`","nickname":"scout"}`)),
		line("response_item", `{"type":"function_call","name":"spawn_agent","arguments":"{\"message\":\"Find the tests\"}","call_id":"call_Sp2"}`),
		line("response_item", fmt.Sprintf(`{"type":"function_call_output","call_id":"call_Sp2","output":[{"type":"input_text","text":%q}]}`, `{"agent_id":"`+other+`","nickname":null}`)),
		line("response_item", `{"type":"function_call","name":"shell_command","arguments":"{\"command\":\"ls\"}","call_id":"call_Ls3"}`),
		line("response_item", fmt.Sprintf(`{"type":"function_call_output","call_id":"call_Ls3","output":%q}`, `{"agent_id":"`+child+`"} is not this call's`)),
	}, "")
	for _, id := range []string{child, other} {
		writeSource(t, fsys, "/c/2026/01/07/rollout-2026-01-07T08-30-04-"+id+".jsonl", []string{
			meta(id, spawnedBy),
			line("response_item", `{"type":"message","role":"user","content":[{"type":"input_text","text":"Find the callers"}]}`),
		}, "")
	}
	rep := mustImport(t, r, FormatCodex, "/c")
	p := fileByPath(t, rep, "/c/2026/01/07/rollout-2026-01-07T08-30-00-"+parent+".jsonl")
	c := fileByPath(t, rep, "/c/2026/01/07/rollout-2026-01-07T08-30-04-"+child+".jsonl")
	o := fileByPath(t, rep, "/c/2026/01/07/rollout-2026-01-07T08-30-04-"+other+".jsonl")
	if c.Parent == nil || *c.Parent != *p.Session || o.Parent == nil || *o.Parent != *p.Session {
		t.Fatalf("the subagents are not the parent's children: %+v %+v", c, o)
	}
	// #0 session_meta, #1 the prompt, #2/#3 a spawn, #4/#5 the other,
	// #6/#7 a shell command whose output only mentions an agent_id.
	checkSubagentLinks(t, r, *p.Session, map[uint64]eventlog.ID{2: *c.Session, 3: *c.Session, 4: *o.Session, 5: *o.Session}, []uint64{3, 5})
}
