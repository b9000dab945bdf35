package agent

import (
	"fmt"
	"testing"
)

// Codex's close_agent closes the agent and its open descendants (openai/codex
// codex-rs/core/src/agent/control/legacy.rs, close_agent_v1: "Permanently
// close a V1 agent and all open descendants", called by the v1 and the
// MultiAgentV2 close_agent handlers, which answer {"previous_status": ...}).
// A subagent G spawned by P's subagent F, G's rollout never imported, was
// taken as writing for ever unless a close named G itself: P's close of F,
// before the point, did not end it, and the rewind of P past G's spawn was
// refused. It goes now; a close after the point, a close of an older Codex
// (its output {"status": ...}: it shut down the agent alone), or a call
// that starts G again after the close, leave it refused.

// descendantCase is what P does between F's spawn and its own patch at
// 00:10 (the point), and after it, and whether the rewind goes.
type descendantCase struct {
	name           string
	between, after []string
	goes           bool
}

// descendantCases are the cases of F's close (closeF), and of a call that
// starts G again after it (restartG).
func descendantCases(closeF func(cid, out, at string) []string, restartG []string) []descendantCase {
	return []descendantCase{
		{"its spawner closed before the point", closeF("c1", `{"previous_status":{"completed":null}}`, "00:06"), nil, true},
		{"its spawner closed running before the point", closeF("c1", `{"previous_status":"running"}`, "00:06"), nil, true},
		{"its spawner closed after the point", nil, closeF("c1", `{"previous_status":"running"}`, "00:11"), false},
		{"its spawner closed by an older Codex", closeF("c1", `{"status":"running"}`, "00:06"), nil, false},
		{"its spawner's close not found", closeF("c1", `{"previous_status":"not_found"}`, "00:06"), nil, false},
		{"started again after its spawner's close", append(closeF("c1", `{"previous_status":"running"}`, "00:06"), restartG...), nil, false},
	}
}

// descendantRewind imports P (it adds n.txt, "1 b", then between, its
// patch of n.txt, b to B, at 00:10, then after), F (P's subagent, fMeta
// its session_meta, whose rollout spawns G with spawnG at 00:04) and no
// G, and rewinds P to before its patch at 00:10.
func descendantRewind(t *testing.T, fMeta func(*codexForkPair) string, spawnG, between, after []string) (*codexForkPair, error) {
	c := newCodexForkPair(t)
	c.p = append(c.p, patchLines("p1", "*** Add File: n.txt\n+1\n+b", "00:02")...)
	c.f = append(c.f, fMeta(c))
	c.f = append(c.f, spawnG...)
	c.p = append(c.p, between...)
	c.p = append(c.p, patchLines("p2", "*** Update File: n.txt\n@@\n-b\n+B", "00:10")...)
	c.p = append(c.p, after...)
	r, p, f, pCalls, _ := c.imported(tree{"n.txt": "1\nB\n"})
	if f.IsZero() {
		t.Fatal("F not imported")
	}
	_, err := r.Rewind(p, pCalls[1], false)
	return c, err
}

func TestCodexRewindOfASubagentsMissingSubagentEndedByItsSpawnersClose(t *testing.T) {
	closeF := func(cid, out, at string) []string {
		return collabLines("close_agent", cid, fmt.Sprintf(`{"id":%q}`, codexFID), out, at)
	}
	restartG := collabLines("send_input", "s1", fmt.Sprintf(`{"id":%q,"message":"and o.txt"}`, codexGID), `{"submission_id":"x"}`, "00:07")
	for _, tc := range descendantCases(closeF, restartG) {
		t.Run(tc.name, func(t *testing.T) {
			spawnF := spawnLines("spawn1", codexFID, "00:03")
			c, err := descendantRewind(t, func(c *codexForkPair) string { return c.subagentMeta("00:03") },
				spawnLines("spawnG", codexGID, "00:04"), append(spawnF, tc.between...), tc.after)
			if !tc.goes {
				refusedFor(t, err, "n.txt", "the Codex subagent "+codexGID+", spawned by the spawn_agent call whose output is event #")
				if got := c.read("n.txt"); got != "1\nB\n" {
					t.Fatalf("n.txt after the refusal: %q", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("F, G's spawner, was closed (with its open descendants) before the point, yet the rewind was refused: %v", err)
			}
			if got := c.read("n.txt"); got != "1\nb\n" {
				t.Fatalf("n.txt: %q", got)
			}
		})
	}
}

func TestCodexRewindOfAV2SubagentsMissingSubagentEndedByItsSpawnersClose(t *testing.T) {
	closeF := func(cid, out, at string) []string {
		return collabLines("close_agent", cid, `{"target":"worker"}`, out, at)
	}
	restartG := collabLines("followup_task", "f1", `{"target":"/root/worker/helper","message":"and o.txt"}`, ``, "00:07")
	cases := descendantCases(closeF, restartG)
	// By its canonical path, or by its thread (known: F is imported).
	cases = append(cases,
		descendantCase{"its spawner closed by its canonical path", collabLines("close_agent", "c1", `{"target":"/root/worker"}`, `{"previous_status":"running"}`, "00:06"), nil, true},
		descendantCase{"its spawner closed by its thread id", collabLines("close_agent", "c1", fmt.Sprintf(`{"target":%q}`, codexFID), `{"previous_status":"running"}`, "00:06"), nil, true},
		descendantCase{"another agent closed", collabLines("close_agent", "c1", `{"target":"tester"}`, `{"previous_status":"running"}`, "00:06"), nil, false})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spawnF := spawnV2Lines("spawn1", "worker", "/root/worker", "00:03", true, true)
			c, err := descendantRewind(t, func(c *codexForkPair) string { return c.subagentV2Meta(codexFID, codexPID, "/root/worker", "00:03") },
				spawnV2Lines("spawnG", "helper", "/root/worker/helper", "00:04", true, false), append(spawnF, tc.between...), tc.after)
			if !tc.goes {
				refusedFor(t, err, "n.txt", "the Codex subagent /root/worker/helper, spawned by the spawn_agent call whose output is event #")
				if got := c.read("n.txt"); got != "1\nB\n" {
					t.Fatalf("n.txt after the refusal: %q", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("/root/worker, /root/worker/helper's spawner, was closed (with its open descendants) before the point, yet the rewind was refused: %v", err)
			}
			if got := c.read("n.txt"); got != "1\nb\n" {
				t.Fatalf("n.txt: %q", got)
			}
		})
	}
}

// A close of a path closes the agent that holds it then: once F
// (/root/worker) is closed alone (an older Codex's close, {"status":
// ...}, which leaves G, /root/worker/helper, running), and the path given
// to a new agent by a second spawn of it, a close of /root/worker closes
// that one and its descendants, not G: the rewind is still refused.
func TestCodexRewindOfAV2SubagentsMissingSubagentNotEndedByACloseOfItsSpawnersPathGivenAgain(t *testing.T) {
	between := spawnV2Lines("spawn1", "worker", "/root/worker", "00:03", true, true)
	between = append(between, collabLines("close_agent", "c1", `{"target":"worker"}`, `{"status":"running"}`, "00:05")...)
	between = append(between, spawnV2Lines("spawn2", "worker", "/root/worker", "00:06", true, true)...)
	between = append(between, collabLines("close_agent", "c2", `{"target":"worker"}`, `{"previous_status":"running"}`, "00:07")...)
	c := newCodexForkPair(t)
	c.p = append(c.p, patchLines("p1", "*** Add File: n.txt\n+1\n+b", "00:02")...)
	c.f = append(c.f, c.subagentV2Meta(codexFID, codexPID, "/root/worker", "00:03"))
	c.f = append(c.f, spawnV2Lines("spawnG", "helper", "/root/worker/helper", "00:04", true, false)...)
	c.g = append(c.g, c.subagentV2Meta(codexGID, codexPID, "/root/worker", "00:06"))
	c.p = append(c.p, between...)
	c.p = append(c.p, patchLines("p2", "*** Update File: n.txt\n@@\n-b\n+B", "00:10")...)
	r, p, _, pCalls, _ := c.imported(tree{"n.txt": "1\nB\n"})
	_, err := r.Rewind(p, pCalls[1], false)
	refusedFor(t, err, "n.txt", "the Codex subagent /root/worker/helper, spawned by the spawn_agent call whose output is event #")
}
