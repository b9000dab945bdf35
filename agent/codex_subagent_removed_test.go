package agent

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// spawnLines are a spawn_agent call of Codex's (call id cid) and its
// output, which names the subagent's thread.
func spawnLines(cid, thread, at string) []string {
	out, _ := json.Marshal(fmt.Sprintf(`{"agent_id":%q,"nickname":"Ada"}`, thread))
	return []string{
		codexItem{"response_item", fmt.Sprintf(`{"type":"function_call","name":"spawn_agent","arguments":"{\"message\":\"fix n.txt\"}","call_id":%q}`, cid)}.at(stampAt(at)),
		codexItem{"response_item", fmt.Sprintf(`{"type":"function_call_output","call_id":%q,"output":%s}`, cid, out)}.at(stampAt(at)),
	}
}

// subagentMeta is the session_meta of P's subagent F.
func (c *codexForkPair) subagentMeta(at string) string {
	return codexItem{"session_meta", fmt.Sprintf(`{"id":%q,"cwd":%q,"originator":"codex_cli_rs","cli_version":"0.80.0","source":{"subagent":{"thread_spawn":{"parent_thread_id":%q}}}}`, codexFID, c.ws, codexPID)}.at(stampAt(at))
}

// P adds n.txt ("1 b"), spawns the subagent F (its thread codexFID),
// which patches it (1 to 2) while P goes on, then patches it (b to B)
// after the point. Imported, F's patch is counted: the replay's "1 b" is
// not what the disk held at the point, and P's patch is undone on the
// disk ("2 b"). F's session removed since (or its rollout never
// imported), nothing in rook linked it to P, and the rewind wrote the
// replay's "1 b", a state the file never had, exit 0. P's spawn_agent
// output still names F's thread: the rewind now refuses, naming it.
func TestCodexRewindOfASubagentRemovedSince(t *testing.T) {
	for _, how := range []string{"imported", "removed", "never imported"} {
		t.Run(how, func(t *testing.T) {
			c := newCodexForkPair(t)
			c.p = append(c.p, patchLines("p1", "*** Add File: n.txt\n+1\n+b", "00:02")...)
			c.p = append(c.p, spawnLines("spawn1", codexFID, "00:03")...)
			c.f = append(c.f, c.subagentMeta("00:03"))
			c.f = append(c.f, patchLines("s1", "*** Update File: n.txt\n@@\n-1\n+2", "00:04")...)
			c.p = append(c.p, patchLines("p2", "*** Update File: n.txt\n@@\n-b\n+B", "00:10")...)
			if how == "never imported" {
				c.f = nil // (its rollout not there to import)
			}
			r, p, f, pCalls, _ := c.imported(tree{"n.txt": "2\nB\n"})
			if how == "imported" {
				rw, err := r.Rewind(p, pCalls[1], false)
				if err != nil {
					t.Fatal(err)
				}
				if got := c.read("n.txt"); got != "2\nb\n" {
					t.Fatalf("n.txt: %q", got)
				}
				// Its session removed since, the rewind's undo (a rewind
				// of its fork to its capture) reads no family.
				if _, err := r.RemoveSession(f); err != nil {
					t.Fatal(err)
				}
				if _, err := r.Rewind(rw.Fork, *rw.BeforeSeq, false); err != nil {
					t.Fatal(err)
				}
				if got := c.read("n.txt"); got != "2\nB\n" {
					t.Fatalf("n.txt after the undo: %q", got)
				}
				return
			}
			if how == "removed" {
				if _, err := r.RemoveSession(f); err != nil {
					t.Fatal(err)
				}
			}
			_, err := r.Rewind(p, pCalls[1], false)
			refusedFor(t, err, "n.txt", "the Codex subagent "+codexFID+", spawned by the spawn_agent call whose output is event #")
			// Where it worked is not known: its session is not here.
			for _, want := range []string{"removed from rook since (session rm), or its rollout was never imported, and it may have written the workspace's files, on its own, from ", "--keep-files"} {
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("refusal %q: no %q", err, want)
				}
			}
			if hint := "`rook import codex /"; (how == "removed") != strings.Contains(err.Error(), hint) {
				t.Fatalf("refusal %q: %q said where its rollout is not there, or not where it is", err, hint)
			}
			if got := c.read("n.txt"); got != "2\nB\n" {
				t.Fatalf("n.txt after the refusal: %q", got)
			}
		})
	}
}

// A subagent spawned after the point wrote nothing before it: what P's
// rollout says a file held there stands (o.txt, added whole before). A
// file P's patches after the point are undone on (app.py, there before
// the session) may hold what it wrote since: refused.
func TestCodexRewindOfASubagentRemovedSinceSpawnedAfterThePoint(t *testing.T) {
	for _, undo := range []bool{false, true} {
		c := newCodexForkPair(t)
		c.p = append(c.p, patchLines("p1", "*** Add File: o.txt\n+1", "00:02")...)
		c.p = append(c.p, patchLines("p2", "*** Update File: o.txt\n@@\n-1\n+2", "00:04")...)
		c.p = append(c.p, spawnLines("spawn1", codexFID, "00:05")...)
		c.f = append(c.f, c.subagentMeta("00:05"))
		c.f = append(c.f, patchLines("s1", "*** Update File: app.py\n@@\n-q\n+Q", "00:06")...)
		if undo {
			c.p = append(c.p, patchLines("p3", "*** Update File: app.py\n@@\n-a\n+A", "00:10")...)
		}
		r, p, f, pCalls, _ := c.imported(tree{"o.txt": "2\n", "app.py": "A\nQ\n"})
		if _, err := r.RemoveSession(f); err != nil {
			t.Fatal(err)
		}
		_, err := r.Rewind(p, pCalls[1], false)
		if undo {
			refusedFor(t, err, "app.py", "the Codex subagent "+codexFID+", spawned by the spawn_agent call whose output is event #")
			if got := c.read("app.py") + c.read("o.txt"); got != "A\nQ\n2\n" {
				t.Fatalf("files after the refusal: %q", got)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := c.read("o.txt"); got != "1\n" {
			t.Fatalf("o.txt: %q", got)
		}
	}
}

// collabLines are a call of Codex's collab tool name (call id cid) with
// the JSON arguments args, and its output (a string, as Codex writes it).
func collabLines(name, cid, args, output, at string) []string {
	a, _ := json.Marshal(args)
	out, _ := json.Marshal(output)
	return []string{
		codexItem{"response_item", fmt.Sprintf(`{"type":"function_call","name":%q,"arguments":%s,"call_id":%q}`, name, a, cid)}.at(stampAt(at)),
		codexItem{"response_item", fmt.Sprintf(`{"type":"function_call_output","call_id":%q,"output":%s}`, cid, out)}.at(stampAt(at)),
	}
}

// waitLines are a wait for the subagent F whose output says status (a
// JSON AgentStatus) and timed_out.
func waitLines(cid, status string, timedOut bool, at string) []string {
	return collabLines("wait", cid, fmt.Sprintf(`{"ids":[%q],"timeout_ms":30000}`, codexFID),
		fmt.Sprintf(`{"status":{%q:%s},"timed_out":%t}`, codexFID, status, timedOut), at)
}

// removedSubagentRewind is TestCodexRewindOfASubagentRemovedSince's
// session with the lines between (collab calls about F, after F's patch
// of 00:04 and before P's patch of 00:10) and after (after P's patch),
// F removed since; it rewinds P to before its patch of 00:10.
func removedSubagentRewind(t *testing.T, between, after []string) (*codexForkPair, error) {
	c := newCodexForkPair(t)
	c.p = append(c.p, patchLines("p1", "*** Add File: n.txt\n+1\n+b", "00:02")...)
	c.p = append(c.p, spawnLines("spawn1", codexFID, "00:03")...)
	c.f = append(c.f, c.subagentMeta("00:03"))
	c.f = append(c.f, patchLines("s1", "*** Update File: n.txt\n@@\n-1\n+2", "00:04")...)
	c.p = append(c.p, between...)
	c.p = append(c.p, patchLines("p2", "*** Update File: n.txt\n@@\n-b\n+B", "00:10")...)
	c.p = append(c.p, after...)
	r, p, f, pCalls, _ := c.imported(tree{"n.txt": "2\nB\n"})
	if _, err := r.RemoveSession(f); err != nil {
		t.Fatal(err)
	}
	_, err := r.Rewind(p, pCalls[1], false)
	return c, err
}

// The subagent F, removed since, was counted as a write of any file from
// its spawn on, for good: every rewind to a point after the spawn was
// refused, however long before the point F had finished. P's rollout
// says when it surely had: a close_agent of it, which shuts it down with
// every open descendant. Its writes all came before that, before the
// point: P's patch after the point is undone on the disk, F's change
// kept ("2 b"), as when F is imported. A resume_agent (or any call
// naming it) after such an end starts it again, until the next.
func TestCodexRewindOfASubagentRemovedSinceFinishedBeforeThePoint(t *testing.T) {
	for _, tc := range []struct {
		name    string
		between []string
	}{
		{"close_agent", collabLines("close_agent", "c1", fmt.Sprintf(`{"id":%q}`, codexFID), `{"status":"running"}`, "00:06")},
		{"close_agent, previous_status", collabLines("close_agent", "c1", fmt.Sprintf(`{"target":%q}`, codexFID), `{"previous_status":{"completed":null}}`, "00:06")},
		{"closed again after resume_agent", append(append(collabLines("close_agent", "c1", fmt.Sprintf(`{"id":%q}`, codexFID), `{"status":{"completed":null}}`, "00:05"),
			collabLines("resume_agent", "r1", fmt.Sprintf(`{"id":%q}`, codexFID), `{"status":"pending_init"}`, "00:06")...),
			collabLines("close_agent", "c2", fmt.Sprintf(`{"id":%q}`, codexFID), `{"status":"running"}`, "00:07")...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := removedSubagentRewind(t, tc.between, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.read("n.txt"); got != "2\nb\n" {
				t.Fatalf("n.txt: %q", got)
			}
		})
	}
}

// Anything short of an output that surely says F was finished before the
// point leaves it running then: the rewind is refused as before, nothing
// written.
func TestCodexRewindOfASubagentRemovedSinceNotSurelyFinished(t *testing.T) {
	other := "019c1000-0000-7000-8000-00000000000d"
	for _, tc := range []struct {
		name           string
		between, after []string
	}{
		// A wait's final status ends F's turn, not F: a send_input may
		// start it again unseen, and the subagents it spawned run on.
		{"wait completed", waitLines("w1", `{"completed":"n.txt fixed"}`, false, "00:06"), nil},
		{"wait completed, no message", waitLines("w1", `{"completed":null}`, false, "00:06"), nil},
		{"wait errored", waitLines("w1", `{"errored":"stream disconnected"}`, false, "00:06"), nil},
		{"wait shutdown", waitLines("w1", `"shutdown"`, false, "00:06"), nil},
		// Codex 0.80's wait took one id, and said its status alone.
		{"wait of one id", collabLines("wait", "w1", fmt.Sprintf(`{"id":%q,"timeout_ms":30000}`, codexFID), `{"status":{"completed":"done"},"timed_out":false}`, "00:06"), nil},
		{"completed again after send_input", append(append(waitLines("w1", `{"completed":"done"}`, false, "00:05"),
			collabLines("send_input", "i1", fmt.Sprintf(`{"id":%q,"message":"and o.txt","interrupt":false}`, codexFID), `{"submission_id":"7"}`, "00:06")...),
			waitLines("w2", `{"completed":"done too"}`, false, "00:07")...), nil},
		{"wait timed out", collabLines("wait", "w1", fmt.Sprintf(`{"ids":[%q],"timeout_ms":1000}`, codexFID), `{"status":{},"timed_out":true}`, "00:06"), nil},
		{"wait of one id timed out", collabLines("wait", "w1", fmt.Sprintf(`{"id":%q,"timeout_ms":1000}`, codexFID), `{"status":"running","timed_out":true}`, "00:06"), nil},
		{"wait timed out, a status said", waitLines("w1", `{"completed":null}`, true, "00:06"), nil},
		{"wait interrupted", waitLines("w1", `"interrupted"`, false, "00:06"), nil},
		{"wait not found", waitLines("w1", `"not_found"`, false, "00:06"), nil},
		// An older Codex said an interrupted turn errored, then ran the
		// input that interrupted it.
		{"wait errored, its turn interrupted", append(collabLines("send_input", "i1", fmt.Sprintf(`{"id":%q,"message":"stop, do o.txt","interrupt":true}`, codexFID), `{"submission_id":"7"}`, "00:05"),
			waitLines("w1", `{"errored":"Interrupted"}`, false, "00:06")...), nil},
		// Right after a send_input, a wait may read the turn's before.
		{"wait completed as before the send_input", append(append(waitLines("w1", `{"completed":"done"}`, false, "00:05"),
			collabLines("send_input", "i1", fmt.Sprintf(`{"id":%q,"message":"and o.txt"}`, codexFID), `{"submission_id":"7"}`, "00:06")...),
			waitLines("w2", `{"completed":"done"}`, false, "00:07")...), nil},
		{"wait of a status not known", waitLines("w1", `{"paused":"for lunch"}`, false, "00:06"), nil},
		{"wait of another thread", collabLines("wait", "w1", fmt.Sprintf(`{"ids":[%q,%q]}`, codexFID, other), fmt.Sprintf(`{"status":{%q:{"completed":null}},"timed_out":false}`, other), "00:06"), nil},
		{"wait output does not read", collabLines("wait", "w1", fmt.Sprintf(`{"ids":[%q]}`, codexFID), fmt.Sprintf(`{"status":{%q:{"completed":`, codexFID), "00:06"), nil},
		{"wait failed", collabLines("wait", "w1", fmt.Sprintf(`{"id":%q}`, codexFID), "agent with id "+codexFID+" not found", "00:06"), nil},
		{"close_agent failed", collabLines("close_agent", "c1", fmt.Sprintf(`{"id":%q}`, codexFID), "agent with id "+codexFID+" not found", "00:06"), nil},
		{"close_agent of another thread", collabLines("close_agent", "c1", fmt.Sprintf(`{"id":%q}`, other), `{"status":"running"}`, "00:06"), nil},
		{"close_agent not found", collabLines("close_agent", "c1", fmt.Sprintf(`{"id":%q}`, codexFID), `{"status":"not_found"}`, "00:06"), nil},
		{"send_input after", append(waitLines("w1", `{"completed":"done"}`, false, "00:05"),
			collabLines("send_input", "i1", fmt.Sprintf(`{"id":%q,"message":"and o.txt","interrupt":true}`, codexFID), `{"submission_id":"7"}`, "00:06")...), nil},
		{"resume_agent after", append(collabLines("close_agent", "c1", fmt.Sprintf(`{"id":%q}`, codexFID), `{"status":"running"}`, "00:05"),
			collabLines("resume_agent", "r1", fmt.Sprintf(`{"id":%q}`, codexFID), `{"status":"pending_init"}`, "00:06")...), nil},
		{"point before the end", nil, waitLines("w1", `{"completed":"done"}`, false, "00:12")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := removedSubagentRewind(t, tc.between, tc.after)
			refusedFor(t, err, "n.txt", "the Codex subagent "+codexFID+", spawned by the spawn_agent call whose output is event #")
			if got := c.read("n.txt"); got != "2\nB\n" {
				t.Fatalf("n.txt after the refusal: %q", got)
			}
		})
	}
}

// F patched n.txt (1 to 2) and was closed before P's patch of it (b to
// B), before the point: P's rollout alone does not say what n.txt held
// at the point (P's patch applied its hunk to F's 2), so its later patch
// (c to C) is undone on the disk ("2 B c"). Taken from P's patches, the
// replay wrote "1 B c", a state n.txt never had.
func TestCodexRewindOfASubagentRemovedSinceFinishedBeforeALaterPatch(t *testing.T) {
	c := newCodexForkPair(t)
	c.p = append(c.p, patchLines("p1", "*** Add File: n.txt\n+1\n+b\n+c", "00:02")...)
	c.p = append(c.p, spawnLines("spawn1", codexFID, "00:03")...)
	c.f = append(c.f, c.subagentMeta("00:03"))
	c.f = append(c.f, patchLines("s1", "*** Update File: n.txt\n@@\n-1\n+2", "00:04")...)
	c.p = append(c.p, collabLines("close_agent", "c1", fmt.Sprintf(`{"id":%q}`, codexFID), `{"status":{"completed":"done"}}`, "00:06")...)
	c.p = append(c.p, patchLines("p2", "*** Update File: n.txt\n@@\n-b\n+B", "00:08")...)
	c.p = append(c.p, patchLines("p3", "*** Update File: n.txt\n@@\n-c\n+C", "00:10")...)
	r, p, f, pCalls, _ := c.imported(tree{"n.txt": "2\nB\nC\n"})
	if _, err := r.RemoveSession(f); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Rewind(p, pCalls[2], false); err != nil {
		t.Fatal(err)
	}
	if got := c.read("n.txt"); got != "2\nB\nc\n" {
		t.Fatalf("n.txt: %q", got)
	}
}
