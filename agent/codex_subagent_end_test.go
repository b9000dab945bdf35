package agent

import (
	"fmt"
	"testing"
)

// A wait saying a subagent is done is no end of it (codexSubagentEnds):
// each of these rewinds went (exit 0) where the subagent may still have
// been writing after the point, when a wait's final status was taken as
// its end. Only a close_agent ends it now.

// The commit's own model: Codex sets a subagent running only when its
// new turn starts, so a wait right after a send_input may read the
// status of the turn before (TestCodexRewindOfASubagentRemovedSince
// NotSurelyFinished, "wait completed as before the send_input"). That
// turn's end need not have been seen by a wait: F's first turn completed
// (unseen), P sent it more work (send_input, 00:05), and the wait of
// 00:06 read the stale {"completed":...} at once. F's second turn runs
// on, past the point; the rewind is refused as in the case where the
// first end was seen (it went, the stale status taken as the end, no end
// before the send_input there to compare it with).
func TestCodexRewindSubagentStaleCompletedAfterSendInputNoEarlierWait(t *testing.T) {
	between := append(
		collabLines("send_input", "i1", fmt.Sprintf(`{"id":%q,"message":"and o.txt"}`, codexFID), `{"submission_id":"7"}`, "00:05"),
		waitLines("w1", `{"completed":"done"}`, false, "00:06")...)
	c, err := removedSubagentRewind(t, between, nil)
	refusedFor(t, err, "n.txt", "the Codex subagent "+codexFID+", spawned by the spawn_agent call whose output is event #")
	if got := c.read("n.txt"); got != "2\nB\n" {
		t.Fatalf("n.txt after the refusal: %q", got)
	}
}

// Depth 2: the subagent F (removed since) spawned its own subagent G
// (its spawn_agent output is in F's rollout, gone with F). A wait saying
// F completed ends F's turn, not G's (a completed Codex agent's children
// run on; only close_agent closes "any open descendants"). G, imported
// and in rook, patched n.txt (c to C) after the point, after P's own
// patch: the rewind of P to before that patch is refused. It went, undid
// P's patch on the disk and silently kept G's C: "1 b C", a state n.txt
// never had (at the point it held "1 b c").
func TestCodexRewindSubagentCompletedButItsOwnSubagentRunsOn(t *testing.T) {
	c := newCodexForkPair(t)
	c.p = append(c.p, patchLines("p1", "*** Add File: n.txt\n+1\n+b\n+c", "00:02")...)
	c.p = append(c.p, spawnLines("spawn1", codexFID, "00:03")...)
	c.f = append(c.f, c.subagentMeta("00:03"))
	c.f = append(c.f, spawnLines("spawnG", codexGID, "00:04")...)
	c.g = append(c.g, codexItem{"session_meta", fmt.Sprintf(`{"id":%q,"cwd":%q,"originator":"codex_cli_rs","cli_version":"0.80.0","source":{"subagent":{"thread_spawn":{"parent_thread_id":%q,"depth":2}}}}`, codexGID, c.ws, codexFID)}.at(stampAt("00:04")))
	c.g = append(c.g, patchLines("g1", "*** Update File: n.txt\n@@\n-c\n+C", "00:12")...)
	c.p = append(c.p, waitLines("w1", `{"completed":"G started on c"}`, false, "00:06")...)
	c.p = append(c.p, patchLines("p2", "*** Update File: n.txt\n@@\n-b\n+B", "00:10")...)
	r, p, f, pCalls, _ := c.imported(tree{"n.txt": "1\nB\nC\n"})
	if c.gID.IsZero() {
		t.Fatal("G not imported")
	}
	if _, err := r.RemoveSession(f); err != nil {
		t.Fatal(err)
	}
	_, err := r.Rewind(p, pCalls[1], false)
	if err == nil {
		t.Fatalf("rewind went: n.txt %q (it held \"1\\nb\\nc\\n\" at the point; G's C, written after it, kept)", c.read("n.txt"))
	}
	if got := c.read("n.txt"); got != "1\nB\nC\n" {
		t.Fatalf("n.txt after the refusal: %q", got)
	}
}

// The same, G never imported (nor F): nothing in rook says G exists but
// F's spawn (and F's completed wait). The rewind is refused (it went,
// keeping G's C).
func TestCodexRewindSubagentCompletedButItsOwnSubagentRunsOnNeverImported(t *testing.T) {
	c := newCodexForkPair(t)
	c.p = append(c.p, patchLines("p1", "*** Add File: n.txt\n+1\n+b\n+c", "00:02")...)
	c.p = append(c.p, spawnLines("spawn1", codexFID, "00:03")...)
	c.p = append(c.p, waitLines("w1", `{"completed":"G started on c"}`, false, "00:06")...)
	c.p = append(c.p, patchLines("p2", "*** Update File: n.txt\n@@\n-b\n+B", "00:10")...)
	r, p, _, pCalls, _ := c.imported(tree{"n.txt": "1\nB\nC\n"})
	_, err := r.Rewind(p, pCalls[1], false)
	if err == nil {
		t.Fatalf("rewind went: n.txt %q (it held \"1\\nb\\nc\\n\" at the point; G's C, written after it, kept)", c.read("n.txt"))
	}
}

// A wait naming F after the close_agent that shut it down (a wait on
// several subagents, F among them, as Codex allows) does not start F
// again: wait only reads statuses. Taken for "a call of any other tool
// that names the subagent's thread", it was a restart: F counted as a
// writer for good, and the rewind (F closed at 00:05, before the point)
// was refused.
func TestCodexRewindSubagentClosedThenWaitedOnIsNotRestarted(t *testing.T) {
	between := append(
		collabLines("close_agent", "c1", fmt.Sprintf(`{"id":%q}`, codexFID), `{"status":{"completed":null}}`, "00:05"),
		collabLines("wait", "w1", fmt.Sprintf(`{"ids":[%q],"timeout_ms":30000}`, codexFID), fmt.Sprintf(`{"status":{%q:"shutdown"},"timed_out":false}`, codexFID), "00:06")...)
	c, err := removedSubagentRewind(t, between, nil)
	if err != nil {
		t.Fatalf("rewind refused, F closed at 00:05 before the point: %v", err)
	}
	if got := c.read("n.txt"); got != "2\nb\n" {
		t.Fatalf("n.txt: %q", got)
	}
}
