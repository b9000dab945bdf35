package agent

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// Codex's second collab tool set (MultiAgentV2, openai/codex
// codex-rs/core/src/tools/handlers/multi_agents_v2/): spawn_agent takes a
// task_name and answers {"task_name": "<canonical path>", "nickname":
// ...} (or the path alone), no thread id; the spawned thread's
// session_meta source is {"subagent": {"thread_spawn": {"parent_thread_id":
// ..., "agent_path": "<canonical path>", ...}}}; close_agent,
// send_message, followup_task and interrupt_agent take a "target": a
// thread id, or a task name relative to the caller's path ("/root" for a
// session no one spawned), or a canonical path. Such a subagent was not
// read as one: its session removed since (or its rollout never
// imported), the rewind of its parent went, exit 0, leaving what it
// wrote, and the diff did not say it.

// spawnV2Lines are a MultiAgentV2 spawn_agent call (call id cid, in the
// "collaboration" namespace as Codex 0.144 writes it when ns is set) of
// task name task, and its output, naming the canonical path path (with a
// nickname when nick).
func spawnV2Lines(cid, task, path, at string, ns, nick bool) []string {
	args, _ := json.Marshal(fmt.Sprintf(`{"task_name":%q,"fork_turns":"none","message":"fix n.txt"}`, task))
	res := fmt.Sprintf(`{"task_name":%q}`, path)
	if nick {
		res = fmt.Sprintf(`{"task_name":%q,"nickname":"Ada"}`, path)
	}
	out, _ := json.Marshal(res)
	namespace := ""
	if ns {
		namespace = `"namespace":"collaboration",`
	}
	return []string{
		codexItem{"response_item", fmt.Sprintf(`{"type":"function_call","name":"spawn_agent",%s"arguments":%s,"call_id":%q}`, namespace, args, cid)}.at(stampAt(at)),
		codexItem{"response_item", fmt.Sprintf(`{"type":"function_call_output","call_id":%q,"output":%s}`, cid, out)}.at(stampAt(at)),
	}
}

// subagentV2Meta is the session_meta of thread id, spawned by thread
// parent at the canonical path path (depth its segments past /root).
func (c *codexForkPair) subagentV2Meta(id, parent, path, at string) string {
	depth := strings.Count(path, "/") - 1
	return codexItem{"session_meta", fmt.Sprintf(`{"id":%q,"cwd":%q,"originator":"codex_cli_rs","cli_version":"0.144.2","source":{"subagent":{"thread_spawn":{"parent_thread_id":%q,"depth":%d,"agent_path":%q,"agent_nickname":"Ada","agent_role":null}}},"agent_nickname":"Ada","agent_path":%q}`, id, c.ws, parent, depth, path, path)}.at(stampAt(at))
}

// v2Subagent is P adding n.txt ("1 b"), spawning the subagent F (task
// "worker", /root/worker, its thread codexFID) with MultiAgentV2's
// spawn_agent, which patches n.txt (1 to 2) at 00:04; then between, then
// P's own patch of n.txt (b to B) at 00:10, after the point.
func v2Subagent(t *testing.T, between []string) *codexForkPair {
	c := newCodexForkPair(t)
	c.p = append(c.p, patchLines("p1", "*** Add File: n.txt\n+1\n+b", "00:02")...)
	c.p = append(c.p, spawnV2Lines("spawn1", "worker", "/root/worker", "00:03", true, true)...)
	c.f = append(c.f, c.subagentV2Meta(codexFID, codexPID, "/root/worker", "00:03"))
	c.f = append(c.f, patchLines("s1", "*** Update File: n.txt\n@@\n-1\n+2", "00:04")...)
	c.p = append(c.p, between...)
	c.p = append(c.p, patchLines("p2", "*** Update File: n.txt\n@@\n-b\n+B", "00:10")...)
	return c
}

// Imported, the v2 subagent's patch is read (P's patch undone on the
// disk, F's kept: "2 b"). Removed since, or never imported, the rewind
// went (it wrote the replay's "1 b", a state n.txt never had, or kept
// F's change where it undid on the disk): it is refused now, naming the
// subagent by its task's path, its spawn, and what to import.
func TestCodexRewindOfAV2SubagentRemovedSince(t *testing.T) {
	for _, how := range []string{"imported", "removed", "never imported"} {
		t.Run(how, func(t *testing.T) {
			c := v2Subagent(t, nil)
			if how == "never imported" {
				c.f = nil
			}
			r, p, f, pCalls, _ := c.imported(tree{"n.txt": "2\nB\n"})
			if how == "removed" {
				if _, err := r.RemoveSession(f); err != nil {
					t.Fatal(err)
				}
			}
			_, err := r.Rewind(p, pCalls[1], false)
			if how == "imported" {
				if err != nil {
					t.Fatal(err)
				}
				if got := c.read("n.txt"); got != "2\nb\n" {
					t.Fatalf("n.txt: %q", got)
				}
				return
			}
			refusedFor(t, err, "n.txt", "the Codex subagent /root/worker, spawned by the spawn_agent call whose output is event #4 of this session, is in no imported session linked to it")
			for _, want := range []string{"its rollout is the one whose session_meta names agent_path /root/worker, spawned by thread " + codexPID, "--keep-files"} {
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("refusal %q: no %q", err, want)
				}
			}
			if got := c.read("n.txt"); got != "2\nB\n" {
				t.Fatalf("n.txt after the refusal: %q", got)
			}
		})
	}
}

// A close_agent of it (its task name, relative to P's /root, or its
// canonical path) that read (previous_status, not not_found) ends it
// before the point: the rewind goes, as when F is imported; a
// list_agents, or a call naming a subagent of its own, after it does not
// start it again. A later send_message or followup_task naming it does;
// a close by a
// thread id rook does not know it by, a wait_agent (which names none) or
// a close that did not read, do not end it: refused.
func TestCodexRewindOfAV2SubagentClosed(t *testing.T) {
	closeOf := func(cid, target, out, at string) []string {
		return collabLines("close_agent", cid, fmt.Sprintf(`{"target":%q}`, target), out, at)
	}
	for _, tc := range []struct {
		name    string
		between []string
		goes    bool
	}{
		{"close by task name", closeOf("c1", "worker", `{"previous_status":{"completed":"done"}}`, "00:06"), true},
		{"close by canonical path", closeOf("c1", "/root/worker", `{"previous_status":"running"}`, "00:06"), true},
		{"closed again after followup_task", append(append(closeOf("c1", "worker", `{"previous_status":{"completed":null}}`, "00:05"),
			collabLines("followup_task", "f1", `{"target":"worker","message":"and o.txt"}`, ``, "00:06")...),
			closeOf("c2", "/root/worker", `{"previous_status":"running"}`, "00:07")...), true},
		{"list_agents after the close", append(closeOf("c1", "worker", `{"previous_status":{"completed":null}}`, "00:05"),
			collabLines("list_agents", "l1", `{"path_prefix":"/root/worker"}`, `{"agents":[]}`, "00:06")...), true},
		{"a message to a subagent of its own after the close", append(closeOf("c1", "worker", `{"previous_status":{"completed":null}}`, "00:05"),
			collabLines("send_message", "m1", `{"target":"/root/worker/helper","message":"stop"}`, `live agent path`, "00:06")...), true},
		{"send_message after the close", append(closeOf("c1", "worker", `{"previous_status":{"completed":null}}`, "00:05"),
			collabLines("send_message", "m1", `{"target":"/root/worker","message":"and o.txt"}`, ``, "00:06")...), false},
		{"followup_task after the close", append(closeOf("c1", "worker", `{"previous_status":{"completed":null}}`, "00:05"),
			collabLines("followup_task", "f1", `{"target":"worker","message":"and o.txt"}`, ``, "00:06")...), false},
		{"close by a thread id", closeOf("c1", "019c1000-0000-7000-8000-0000000000ff", `{"previous_status":"running"}`, "00:06"), false},
		{"close of another task", closeOf("c1", "tester", `{"previous_status":"running"}`, "00:06"), false},
		{"close not found", closeOf("c1", "worker", `{"previous_status":"not_found"}`, "00:06"), false},
		{"close failed", closeOf("c1", "worker", `live agent path `+"`/root/worker`"+` not found`, "00:06"), false},
		{"wait_agent", collabLines("wait_agent", "w1", `{"timeout_ms":30000}`, `{"message":"Wait completed.","timed_out":false}`, "00:06"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := v2Subagent(t, tc.between)
			r, p, f, pCalls, _ := c.imported(tree{"n.txt": "2\nB\n"})
			if _, err := r.RemoveSession(f); err != nil {
				t.Fatal(err)
			}
			_, err := r.Rewind(p, pCalls[1], false)
			if !tc.goes {
				refusedFor(t, err, "n.txt", "the Codex subagent /root/worker, spawned by the spawn_agent call whose output is event #4")
				if got := c.read("n.txt"); got != "2\nB\n" {
					t.Fatalf("n.txt after the refusal: %q", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.read("n.txt"); got != "2\nb\n" {
				t.Fatalf("n.txt: %q", got)
			}
		})
	}
}

// A task name is free again once its agent is closed (Codex's registry
// releases the path): P spawned /root/worker twice. The subagent of one
// spawn imported, the other's not, which of the two is missing is not
// known: the rewind is refused. Both imported, it goes.
func TestCodexRewindOfAV2SubagentTaskNameUsedTwice(t *testing.T) {
	for _, both := range []bool{false, true} {
		c := newCodexForkPair(t)
		c.p = append(c.p, patchLines("p1", "*** Add File: n.txt\n+1\n+b", "00:02")...)
		c.p = append(c.p, spawnV2Lines("spawn1", "worker", "/root/worker", "00:03", false, false)...)
		c.f = append(c.f, c.subagentV2Meta(codexFID, codexPID, "/root/worker", "00:03"))
		c.f = append(c.f, patchLines("s1", "*** Update File: n.txt\n@@\n-1\n+2", "00:04")...)
		c.p = append(c.p, collabLines("close_agent", "c1", `{"target":"worker"}`, `{"previous_status":{"completed":null}}`, "00:05")...)
		c.p = append(c.p, spawnV2Lines("spawn2", "worker", "/root/worker", "00:06", false, false)...)
		if both {
			c.g = append(c.g, c.subagentV2Meta(codexGID, codexPID, "/root/worker", "00:06"))
		}
		c.p = append(c.p, patchLines("p2", "*** Update File: n.txt\n@@\n-b\n+B", "00:10")...)
		r, p, _, pCalls, _ := c.imported(tree{"n.txt": "2\nB\n"})
		_, err := r.Rewind(p, pCalls[1], false)
		if both {
			if err != nil {
				t.Fatal(err)
			}
			if got := c.read("n.txt"); got != "2\nb\n" {
				t.Fatalf("n.txt: %q", got)
			}
			continue
		}
		refusedFor(t, err, "n.txt", "the Codex subagent /root/worker, spawned by the spawn_agent call whose output is event #")
	}
}

// Depth 2: F (/root/worker, imported) spawned its own subagent G
// ("helper": /root/worker/helper, never imported). The rewind of P is
// refused for G; F's close of "helper" (relative to F's own path) before
// the point ends it, and the rewind goes.
func TestCodexRewindOfAV2SubagentsSubagent(t *testing.T) {
	for _, closed := range []bool{false, true} {
		c := newCodexForkPair(t)
		c.p = append(c.p, patchLines("p1", "*** Add File: n.txt\n+1\n+b", "00:02")...)
		c.p = append(c.p, spawnV2Lines("spawn1", "worker", "/root/worker", "00:03", true, false)...)
		c.f = append(c.f, c.subagentV2Meta(codexFID, codexPID, "/root/worker", "00:03"))
		c.f = append(c.f, spawnV2Lines("spawnG", "helper", "/root/worker/helper", "00:04", true, false)...)
		if closed {
			c.f = append(c.f, collabLines("close_agent", "cG", `{"target":"helper"}`, `{"previous_status":{"completed":null}}`, "00:06")...)
		}
		c.p = append(c.p, patchLines("p2", "*** Update File: n.txt\n@@\n-b\n+B", "00:10")...)
		r, p, _, pCalls, _ := c.imported(tree{"n.txt": "1\nB\n"})
		_, err := r.Rewind(p, pCalls[1], false)
		if closed {
			if err != nil {
				t.Fatal(err)
			}
			if got := c.read("n.txt"); got != "1\nb\n" {
				t.Fatalf("n.txt: %q", got)
			}
			continue
		}
		refusedFor(t, err, "n.txt", "the Codex subagent /root/worker/helper, spawned by the spawn_agent call whose output is event #")
	}
}

// The diff reads an imported v2 subagent's patches, and notes one that no
// imported session holds (`--json`: missing_subagents, its path).
func TestCodexDiffOfAV2Subagent(t *testing.T) {
	for _, how := range []string{"imported", "removed"} {
		t.Run(how, func(t *testing.T) {
			c := v2Subagent(t, nil)
			c.f = append(c.f, patchLines("s2", "*** Add File: only.txt\n+o", "00:05")...)
			r, p, f, _, _ := c.imported(tree{"n.txt": "2\nB\n", "only.txt": "o\n"})
			if how == "imported" {
				got, _, d := diffFiles(t, r, p)
				if len(got) != 2 || got["only.txt"] != "added" || d.Patches.FromSubagents != 2 || len(d.MissingSubagents) != 0 {
					t.Fatalf("files %v, patches %+v, notes %q", got, d.Patches, d.Notes)
				}
				return
			}
			if _, err := r.RemoveSession(f); err != nil {
				t.Fatal(err)
			}
			got, _, d := diffFiles(t, r, p)
			if len(got) != 1 || got["n.txt"] != "added" {
				t.Fatalf("files %v", got)
			}
			if len(d.Notes) != 1 || !strings.Contains(d.Notes[0], "the Codex subagent /root/worker, whose spawn_agent output is event #4, is in no imported session linked to this session (removed since, or never imported): the files it changed are not shown unless this session changed them too") ||
				!strings.Contains(d.Notes[0], "its rollout is the one whose session_meta names agent_path /root/worker, spawned by thread "+codexPID) {
				t.Fatalf("notes %q", d.Notes)
			}
			if len(d.MissingSubagents) != 1 || d.MissingSubagents[0] != "/root/worker" {
				t.Fatalf("missing subagents %q", d.MissingSubagents)
			}
		})
	}
}

// A Codex fork G of P holds a copy of P's lines, the v2 spawn_agent output
// that names F's path with them: its diff reads F's patches, as P's does
// (F's parent is P, whose lines G's copy holds, not G), and notes F
// missing once it is removed.
func TestCodexDiffForkReadsItsCopiedV2Spawn(t *testing.T) {
	for _, removed := range []bool{false, true} {
		c := v2Subagent(t, nil)
		c.f = append(c.f, patchLines("s2", "*** Add File: only.txt\n+o", "00:05")...)
		c.forkG("05:00")
		r, _, f, _, _ := c.imported(tree{"n.txt": "2\nB\n", "only.txt": "o\n"})
		if removed {
			if _, err := r.RemoveSession(f); err != nil {
				t.Fatal(err)
			}
		}
		got, _, d := diffFiles(t, r, c.gID)
		if removed {
			if got["only.txt"] != "" || len(d.MissingSubagents) != 1 || d.MissingSubagents[0] != "/root/worker" {
				t.Fatalf("the fork's diff, F removed: %v, notes %q", got, d.Notes)
			}
			continue
		}
		if len(got) != 2 || got["only.txt"] != "added" || len(d.MissingSubagents) != 0 {
			t.Fatalf("the fork's diff: %v, notes %q", got, d.Notes)
		}
	}
}
