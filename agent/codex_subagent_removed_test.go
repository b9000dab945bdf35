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
