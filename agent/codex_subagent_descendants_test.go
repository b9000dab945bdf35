package agent

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
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

// The threads of the agents a Codex fork X (codexGID) of P spawned for
// itself, and of a third one: MultiAgentV2 paths are X's own.
const (
	codexXWorkerID = "019c1000-0000-7000-8000-00000000000d"
	codexHelperID  = "019c1000-0000-7000-8000-00000000000e"
)

// importCodexRollouts writes each rollout (by thread id) in the day's
// directory, the workspace holding tr, imports them all, and gives the
// store and the sessions by thread.
func importCodexRollouts(t *testing.T, c *codexForkPair, rollouts map[string][]string, tr tree) (*Rook, map[string]eventlog.ID) {
	t.Helper()
	day := filepath.Join(c.dir, "codex", "2026", "02", "03")
	for th, lines := range rollouts {
		writeSource(t, vfs.OS, filepath.Join(day, "rollout-2026-02-03T10-00-00-"+th+".jsonl"), lines, "")
	}
	writeTree(t, c.ws, tr)
	r := diskRook(t, filepath.Join(c.dir, "store"))
	rep := mustImport(t, r, FormatCodex, filepath.Join(c.dir, "codex"))
	ids := map[string]eventlog.ID{}
	for _, fr := range rep.Files {
		if fr.Session == nil {
			t.Fatalf("%s not imported: %+v", fr.Path, fr)
		}
		for th := range rollouts {
			if strings.Contains(fr.Path, th) {
				ids[th] = *fr.Session
			}
		}
	}
	return r, ids
}

// patchCallSeqs are the seqs of session id's patch calls, in order.
func patchCallSeqs(t *testing.T, r *Rook, id eventlog.ID) []uint64 {
	t.Helper()
	calls, err := r.rolloutPatchCalls(id)
	if err != nil {
		t.Fatal(err)
	}
	var out []uint64
	for _, c := range calls {
		out = append(out, c.seq)
	}
	return out
}

// A MultiAgentV2 path names an agent of the caller's own tree: a Codex
// fork is a root of its own (its agents are its /root/...). P spawns
// /root/worker (F, imported), which spawns /root/worker/helper (G, its
// rollout never imported); the user had also forked P in Codex (X,
// forked_from_id P) before, and X spawned a /root/worker of its own
// (imported) and later closed it ("worker", answering previous_status).
// Nothing closed F or G: a rewind of P to before its patch at 00:10 is
// refused, G may have written n.txt at any time. X's close of its own
// /root/worker was taken as a close of P's and its descendants (the
// path-prefix close checked that no spawn of /root/worker came between
// G's spawn and the close, not whose tree the close is in), G judged
// ended at 00:06, and the rewind went, undoing P's patch on a disk G may
// have changed since. (The subtest without X's close is the control.)
func TestCodexForksCloseOfItsOwnPathDoesNotEndAnotherTreesDescendant(t *testing.T) {
	for _, xCloses := range []bool{false, true} {
		name := "X does not close its worker"
		if xCloses {
			name = "X closes its own worker"
		}
		t.Run(name, func(t *testing.T) {
			c := newCodexForkPair(t)
			// X: forked from P at 00:01, spawns its own /root/worker then.
			x := []string{c.meta(codexGID, codexPID, "00:01")}
			x = append(x, restampLines(t, c.p, "00:01")...)
			x = append(x, spawnV2Lines("xspawn", "worker", "/root/worker", "00:01", true, true)...)
			if xCloses {
				x = append(x, collabLines("close_agent", "xclose", `{"target":"worker"}`, `{"previous_status":"running"}`, "00:06")...)
			}
			xw := []string{c.subagentV2Meta(codexXWorkerID, codexGID, "/root/worker", "00:01")}
			c.p = append(c.p, patchLines("p1", "*** Add File: n.txt\n+1\n+b", "00:02")...)
			c.p = append(c.p, spawnV2Lines("spawn1", "worker", "/root/worker", "00:03", true, true)...)
			f := []string{c.subagentV2Meta(codexFID, codexPID, "/root/worker", "00:03")}
			f = append(f, spawnV2Lines("spawnG", "helper", "/root/worker/helper", "00:04", true, false)...)
			c.p = append(c.p, patchLines("p2", "*** Update File: n.txt\n@@\n-b\n+B", "00:10")...)
			r, ids := importCodexRollouts(t, c, map[string][]string{codexPID: c.p, codexFID: f, codexGID: x, codexXWorkerID: xw}, tree{"n.txt": "1\nB\n"})
			p := ids[codexPID]
			pCalls := patchCallSeqs(t, r, p)
			_, err := r.Rewind(p, pCalls[1], false)
			if got := c.read("n.txt"); got != "1\nB\n" {
				t.Errorf("n.txt after the rewind: %q, want it unchanged (%q)", got, "1\nB\n")
			}
			refusedFor(t, err, "n.txt", "the Codex subagent /root/worker/helper, spawned by the spawn_agent call whose output is event #")
		})
	}
}

// A Codex fork's rollout begins with a copy of its parent's lines, which
// bears the fork's time: a close there is its parent's, of its parent's
// tree, not the fork's. P spawns /root/worker (F, imported) and closes
// it at 00:06; X forks P at 00:07, its copy holding that close, and at
// once spawns a /root/worker of its own (XW, imported), which spawns
// /root/worker/helper2 (its rollout never imported). A rewind of X to
// before its patch at 00:10 is refused: the copy of P's close, at the
// time of XW's helper's spawn, closed no agent of X's tree. X's own
// close of its worker (after the fork) is one: then the rewind goes.
func TestCodexCloseCopiedIntoAForkDoesNotEndTheForksDescendant(t *testing.T) {
	for _, xCloses := range []bool{false, true} {
		name := "only P's close, copied"
		if xCloses {
			name = "X closes its own worker"
		}
		t.Run(name, func(t *testing.T) {
			c := newCodexForkPair(t)
			c.p = append(c.p, patchLines("p1", "*** Add File: n.txt\n+1\n+b", "00:02")...)
			c.p = append(c.p, spawnV2Lines("spawn1", "worker", "/root/worker", "00:03", true, true)...)
			f := []string{c.subagentV2Meta(codexFID, codexPID, "/root/worker", "00:03")}
			c.p = append(c.p, collabLines("close_agent", "c1", `{"target":"worker"}`, `{"previous_status":"running"}`, "00:06")...)
			x := []string{c.meta(codexGID, codexPID, "00:07")}
			x = append(x, restampLines(t, c.p, "00:07")...)
			x = append(x, spawnV2Lines("xspawn", "worker", "/root/worker", "00:07", true, true)...)
			if xCloses {
				x = append(x, collabLines("close_agent", "xclose", `{"target":"worker"}`, `{"previous_status":"running"}`, "00:08")...)
			}
			x = append(x, patchLines("xp2", "*** Update File: n.txt\n@@\n-b\n+B", "00:10")...)
			xw := []string{c.subagentV2Meta(codexXWorkerID, codexGID, "/root/worker", "00:07")}
			xw = append(xw, spawnV2Lines("xspawnH", "helper2", "/root/worker/helper2", "00:07", true, false)...)
			r, ids := importCodexRollouts(t, c, map[string][]string{codexPID: c.p, codexFID: f, codexGID: x, codexXWorkerID: xw}, tree{"n.txt": "1\nB\n"})
			xs := ids[codexGID]
			xCalls := patchCallSeqs(t, r, xs)
			_, err := r.Rewind(xs, xCalls[len(xCalls)-1], false)
			if !xCloses {
				refusedFor(t, err, "n.txt", "the Codex subagent /root/worker/helper2, spawned by the spawn_agent call whose output is event #")
				if got := c.read("n.txt"); got != "1\nB\n" {
					t.Fatalf("n.txt after the refusal: %q", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("X closed its own /root/worker (with its open descendants) before the point, yet the rewind was refused: %v", err)
			}
			if got := c.read("n.txt"); got != "1\nb\n" {
				t.Fatalf("n.txt: %q", got)
			}
		})
	}
}

// A subagent's close of a path relative to its own (F, /root/worker,
// closes "helper") names an agent of its tree: of its missing child
// (/root/worker/helper, which F's rollout spawned), and, by the path's
// prefix, of a missing child of that one's (H imported, its own
// /root/worker/helper/sub never imported). Either ends it before the
// point: the rewind of P goes.
func TestCodexSubagentsRelativeCloseEndsItsMissingDescendant(t *testing.T) {
	closeHelper := collabLines("close_agent", "fclose", `{"target":"helper"}`, `{"previous_status":"running"}`, "00:06")
	t.Run("its child", func(t *testing.T) {
		spawnF := spawnV2Lines("spawn1", "worker", "/root/worker", "00:03", true, true)
		spawnG := append(spawnV2Lines("spawnG", "helper", "/root/worker/helper", "00:04", true, false), closeHelper...)
		c, err := descendantRewind(t, func(c *codexForkPair) string { return c.subagentV2Meta(codexFID, codexPID, "/root/worker", "00:03") }, spawnG, spawnF, nil)
		if err != nil {
			t.Fatalf("F closed its child helper before the point, yet the rewind was refused: %v", err)
		}
		if got := c.read("n.txt"); got != "1\nb\n" {
			t.Fatalf("n.txt: %q", got)
		}
	})
	for _, fCloses := range []bool{false, true} {
		name := "its child's child, its child not closed"
		if fCloses {
			name = "its child's child"
		}
		t.Run(name, func(t *testing.T) {
			c := newCodexForkPair(t)
			c.p = append(c.p, patchLines("p1", "*** Add File: n.txt\n+1\n+b", "00:02")...)
			c.p = append(c.p, spawnV2Lines("spawn1", "worker", "/root/worker", "00:03", true, true)...)
			f := []string{c.subagentV2Meta(codexFID, codexPID, "/root/worker", "00:03")}
			f = append(f, spawnV2Lines("spawnH", "helper", "/root/worker/helper", "00:04", true, true)...)
			if fCloses {
				f = append(f, closeHelper...)
			}
			h := []string{c.subagentV2Meta(codexHelperID, codexFID, "/root/worker/helper", "00:04")}
			h = append(h, spawnV2Lines("spawnS", "sub", "/root/worker/helper/sub", "00:05", true, false)...)
			c.p = append(c.p, patchLines("p2", "*** Update File: n.txt\n@@\n-b\n+B", "00:10")...)
			r, ids := importCodexRollouts(t, c, map[string][]string{codexPID: c.p, codexFID: f, codexHelperID: h}, tree{"n.txt": "1\nB\n"})
			p := ids[codexPID]
			pCalls := patchCallSeqs(t, r, p)
			_, err := r.Rewind(p, pCalls[1], false)
			if !fCloses {
				refusedFor(t, err, "n.txt", "the Codex subagent /root/worker/helper/sub, spawned by the spawn_agent call whose output is event #")
				return
			}
			if err != nil {
				t.Fatalf("F closed /root/worker/helper (with its open descendants) before the point, yet the rewind was refused: %v", err)
			}
			if got := c.read("n.txt"); got != "1\nb\n" {
				t.Fatalf("n.txt: %q", got)
			}
		})
	}
}

// A Codex fork's rollout begins with a copy of its parent's lines, and
// Codex forks a subagent's thread as it forks any (ThreadManager's
// fork_thread copies its rollout's lines, up to the fork point, tool
// calls too; the fork's own session_meta bears the forking client's
// source, so it is /root of a tree of its own): the copy of a
// close is the parent's, its relative target resolved from the parent's
// path, not the fork's. P spawns /root/worker (F, imported) and
// /root/x (G, its rollout never imported); F spawns its own
// /root/worker/x (H, never imported) and closes it ("x", relative to F's
// /root/worker). Nothing closed G: a rewind of P to before its patch at
// 00:10 is refused, G may have written n.txt at any time. With X, a
// Codex fork of F at 00:07, X's copy of F's close of "x" was resolved
// from X's own /root, to /root/x, and taken as a close of G, the
// family's one spawn of it: G judged ended at 00:07, and the rewind
// went, undoing P's patch on a disk G may have changed since. (The
// subtest without X is the control; where P closes "x" itself, that ends
// G, and F's own close ends H, F's rollout a copy of P's lines or not:
// the rewind goes.)
func TestCodexCloseCopiedIntoAForkOfASubagentIsItsParentsClose(t *testing.T) {
	for _, tc := range []struct {
		name            string
		fork, x, copies bool // X forks F; P closes its own /root/x; F begins with a copy of P's lines
	}{
		{"no fork", false, false, false},
		{"X forks F", true, false, false},
		{"X forks F spawned with P's history", true, false, true},
		{"X forks F, P closes x", true, true, false},
		{"X forks F spawned with P's history, P closes x", true, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCodexForkPair(t)
			c.p = append(c.p, patchLines("p1", "*** Add File: n.txt\n+1\n+b", "00:02")...)
			f := []string{c.subagentV2Meta(codexFID, codexPID, "/root/worker", "00:03")}
			if tc.copies {
				f = append(f, restampLines(t, c.p, "00:03")...)
			}
			c.p = append(c.p, spawnV2Lines("spawn1", "worker", "/root/worker", "00:03", true, true)...)
			c.p = append(c.p, spawnV2Lines("spawnG", "x", "/root/x", "00:04", true, true)...)
			f = append(f, spawnV2Lines("spawnH", "x", "/root/worker/x", "00:05", true, false)...)
			f = append(f, collabLines("close_agent", "fclose", `{"target":"x"}`, `{"previous_status":"running"}`, "00:06")...)
			rollouts := map[string][]string{codexPID: c.p, codexFID: f}
			if tc.fork {
				x := []string{c.meta(codexGID, codexFID, "00:07")}
				rollouts[codexGID] = append(x, restampLines(t, f, "00:07")...)
			}
			if tc.x {
				c.p = append(c.p, collabLines("close_agent", "pclose", `{"target":"x"}`, `{"previous_status":"running"}`, "00:08")...)
			}
			c.p = append(c.p, patchLines("p2", "*** Update File: n.txt\n@@\n-b\n+B", "00:10")...)
			rollouts[codexPID] = c.p
			r, ids := importCodexRollouts(t, c, rollouts, tree{"n.txt": "1\nB\n"})
			p := ids[codexPID]
			pCalls := patchCallSeqs(t, r, p)
			_, err := r.Rewind(p, pCalls[1], false)
			if tc.x {
				if err != nil {
					t.Fatalf("P closed /root/x before the point, yet the rewind was refused: %v", err)
				}
				if got := c.read("n.txt"); got != "1\nb\n" {
					t.Fatalf("n.txt: %q", got)
				}
				return
			}
			if got := c.read("n.txt"); got != "1\nB\n" {
				t.Errorf("n.txt after the rewind: %q, want it unchanged (%q)", got, "1\nB\n")
			}
			refusedFor(t, err, "n.txt", "the Codex subagent /root/x, spawned by the spawn_agent call whose output is event #")
		})
	}
}
