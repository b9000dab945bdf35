package agent

import "testing"

// A MultiAgentV2 subagent is named by a path such as /root/worker: text
// that any patch, shell command or commit message may hold. Neither a
// patch nor a shell command can start a v2 agent (Codex addresses one by
// its path only through its collab tools' "target"), yet a call after
// the close whose arguments or input merely held the path's text (or
// held it after another prefix: /srv/root/worker) was read as starting
// the subagent again (codexNamesTask searched the raw arguments, input
// and action of every tool): the rewind to a point well after the close
// was refused, a refusal no later close_agent could lift. Only a collab
// call addressing an agent whose target resolves to the path starts it
// again now: the rewind goes, as it does when that text is not there.
func TestCodexRewindOfAV2SubagentNotRestartedByCallsHoldingItsPathText(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines []string
	}{
		{"a patch of notes that names the task", patchLines("p9", "*** Add File: NOTES.md\n+n.txt: the fix came from /root/worker", "00:07")},
		{"a commit message that names the task", collabLines("exec_command", "x1", `{"cmd":"git commit -am 'take the fix from /root/worker'"}`, "Exit code: 0\nOutput:\n", "00:07")},
		{"a message to another agent that names it", collabLines("send_message", "m1", `{"target":"tester","message":"/root/worker is done with n.txt: test it"}`, "", "00:07")},
		{"a listing of a directory of that name", collabLines("exec_command", "x1", `{"cmd":"ls -la /root/worker"}`, "Exit code: 0\nOutput:\n", "00:07")},
		{"a listing of a directory below another root", collabLines("exec_command", "x1", `{"cmd":"ls -la /srv/root/worker"}`, "Exit code: 0\nOutput:\n", "00:07")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			between := collabLines("close_agent", "c1", `{"target":"worker"}`, `{"previous_status":{"completed":"done"}}`, "00:05")
			between = append(between, tc.lines...)
			c := v2Subagent(t, between)
			r, p, f, pCalls, _ := c.imported(tree{"n.txt": "2\nB\n", "NOTES.md": "n.txt: the fix came from /root/worker\n"})
			if _, err := r.RemoveSession(f); err != nil {
				t.Fatal(err)
			}
			to := pCalls[len(pCalls)-1] // (before P's patch of n.txt at 00:10)
			if _, err := r.Rewind(p, to, false); err != nil {
				t.Fatalf("the v2 subagent /root/worker was closed at 00:05, before the point (00:10); a call at 00:07 whose text merely holds \"/root/worker\" cannot start a MultiAgentV2 agent again, so the rewind should go (n.txt back to \"2\\nb\\n\"), as it does when that text is not there; it was refused:\n%v", err)
			}
			if got := c.read("n.txt"); got != "2\nb\n" {
				t.Fatalf("n.txt: %q, want \"2\\nb\\n\"", got)
			}
		})
	}
}

// A task path is free again once its agent is closed: P spawned
// /root/worker, closed it, spawned /root/worker again (a new agent), sent
// that second one a follow-up, and closed it: both are closed before the
// point. The follow-up, sent after the first was closed and its path
// given to the second, was read as starting the FIRST one again too (a
// restart was heard for every spawn of the path, whenever it was
// closed): the first was taken as running for ever and the rewind
// refused. A restart, like a close, is the spawn's that holds the path
// then: the rewind goes.
func TestCodexRewindOfAV2SubagentFollowupRestartsOnlyTheSpawnHoldingThePath(t *testing.T) {
	c := newCodexForkPair(t)
	c.p = append(c.p, patchLines("p1", "*** Add File: n.txt\n+1\n+b", "00:02")...)
	c.p = append(c.p, spawnV2Lines("spawn1", "worker", "/root/worker", "00:03", true, true)...)
	c.p = append(c.p, collabLines("close_agent", "c1", `{"target":"worker"}`, `{"previous_status":{"completed":null}}`, "00:04")...)
	c.p = append(c.p, spawnV2Lines("spawn2", "worker", "/root/worker", "00:05", true, true)...)
	c.p = append(c.p, collabLines("followup_task", "m1", `{"target":"worker","message":"and o.txt"}`, ``, "00:06")...)
	c.p = append(c.p, collabLines("close_agent", "c2", `{"target":"/root/worker"}`, `{"previous_status":{"completed":null}}`, "00:07")...)
	c.p = append(c.p, patchLines("p2", "*** Update File: n.txt\n@@\n-b\n+B", "00:10")...)
	r, p, _, pCalls, _ := c.imported(tree{"n.txt": "2\nB\n"})
	_, err := r.Rewind(p, pCalls[1], false)
	if err != nil {
		t.Fatalf("both spawns of /root/worker were closed (00:04, 00:07) before the point (00:10); the followup_task at 00:06 went to the second (the first's path was released at its close), so the rewind should go, but it was refused: %v", err)
	}
	if got := c.read("n.txt"); got != "2\nb\n" {
		t.Fatalf("n.txt: %q, want \"2\\nb\\n\"", got)
	}
}
