package agent

import (
	"strings"
	"testing"
)

// codexWithSubagent is P adding n.txt ("1 b") and spawning the subagent F
// (its thread codexFID), which patches n.txt (1 to 2) and adds only.txt
// while P goes on, then patches n.txt (b to B) itself.
func codexWithSubagent(t *testing.T) *codexForkPair {
	c := newCodexForkPair(t)
	c.p = append(c.p, patchLines("p1", "*** Add File: n.txt\n+1\n+b", "00:02")...)
	c.p = append(c.p, spawnLines("spawn1", codexFID, "00:03")...)
	c.f = append(c.f, c.subagentMeta("00:03"))
	c.f = append(c.f, patchLines("s1", "*** Update File: n.txt\n@@\n-1\n+2", "00:04")...)
	c.f = append(c.f, patchLines("s2", "*** Add File: only.txt\n+o", "00:05")...)
	c.p = append(c.p, patchLines("p2", "*** Update File: n.txt\n@@\n-b\n+B", "00:10")...)
	return c
}

// A Codex parent's diff shows what its subagent's patches changed for it,
// as a rewind to 0 reads them: n.txt as the three patches left it, in the
// order they came (the subagent's between the parent's two), and only.txt,
// which the parent's own rollout does not name; each said in a note. Its
// diff had shown n.txt "1 B", a file that never was, and no only.txt.
func TestCodexDiffCountsASubagentsPatches(t *testing.T) {
	c := codexWithSubagent(t)
	r, p, f, _, _ := c.imported(tree{"n.txt": "2\nB\n", "only.txt": "o\n"})
	got, patch, d := diffFiles(t, r, p)
	if len(got) != 2 || got["n.txt"] != "added" || got["only.txt"] != "added" {
		t.Fatalf("files %v:\n%s", got, patch)
	}
	for _, want := range []string{"+2\n+B\n", "+o\n"} {
		if !strings.Contains(patch, want) {
			t.Fatalf("the patch lacks %q:\n%s", want, patch)
		}
	}
	if len(d.Notes) != 2 || !strings.Contains(d.Notes[0], "n.txt: from this session's patches and those of session "+f.String()+" (a Codex subagent of this session), in the order they came") ||
		!strings.Contains(d.Notes[1], "only.txt: from the patches of session "+f.String()+" (a Codex subagent of this session)") {
		t.Fatalf("notes %q", d.Notes)
	}
	if d.Patches.Applied != 4 || d.Patches.FromSubagents != 2 || d.FromRollout != 2 {
		t.Fatalf("patches %+v, from rollout %d", d.Patches, d.FromRollout)
	}
	// The subagent's own diff reads no parent: its own patches.
	got, _, d = diffFiles(t, r, f)
	if len(got) != 2 || got["n.txt"] != "modified" || len(d.Notes) != 0 || d.Patches.FromSubagents != 0 {
		t.Fatalf("the subagent's diff: %v, notes %q", got, d.Notes)
	}
}

// The subagent's session removed since, or its rollout never imported:
// the parent's diff is its own, and a note names the subagent, the
// spawn_agent output that names it and the rollout to import (where it
// is found); the diff is not refused.
func TestCodexDiffSaysAMissingSubagent(t *testing.T) {
	for _, how := range []string{"removed", "never imported"} {
		t.Run(how, func(t *testing.T) {
			c := codexWithSubagent(t)
			if how == "never imported" {
				c.f = nil
			}
			r, p, f, _, _ := c.imported(tree{"n.txt": "2\nB\n", "only.txt": "o\n"})
			if how == "removed" {
				if _, err := r.RemoveSession(f); err != nil {
					t.Fatal(err)
				}
			}
			got, patch, d := diffFiles(t, r, p)
			if len(got) != 1 || got["n.txt"] != "added" || !strings.Contains(patch, "+1\n+B\n") {
				t.Fatalf("files %v:\n%s", got, patch)
			}
			if len(d.Notes) != 1 || !strings.Contains(d.Notes[0], "the Codex subagent "+codexFID+", whose spawn_agent output is event #4, is in no imported session linked to this session (removed since, or never imported): the files it changed are not shown unless this session changed them too") {
				t.Fatalf("notes %q", d.Notes)
			}
			if hint := "`rook import codex /"; (how == "removed") != strings.Contains(d.Notes[0], hint) {
				t.Fatalf("note %q: %q said where its rollout is not there, or not where it is", d.Notes[0], hint)
			}
			if how == "never imported" && !strings.Contains(d.Notes[0], "its rollout (rollout-*-"+codexFID+".jsonl, .zst too) is not found") {
				t.Fatalf("note %q: does not say its rollout is not found", d.Notes[0])
			}
			if len(d.MissingSubagents) != 1 || d.MissingSubagents[0] != codexFID {
				t.Fatalf("missing subagents %q", d.MissingSubagents)
			}
		})
	}
}

// A Codex fork's patches are its own, not its parent's: the parent's diff
// does not read them, nor the fork's its parent's after the fork.
func TestCodexDiffLeavesAForksPatches(t *testing.T) {
	c := newCodexForkPair(t)
	c.p = append(c.p, patchLines("p1", "*** Add File: n.txt\n+1", "00:02")...)
	c.fork("05:00")
	c.f = append(c.f, patchLines("f1", "*** Add File: other.txt\n+o", "05:02")...)
	c.p = append(c.p, patchLines("p2", "*** Add File: later.txt\n+l", "10:01")...)
	r, p, f, _, _ := c.imported(tree{"n.txt": "1\n", "other.txt": "o\n", "later.txt": "l\n"})
	if got, _, d := diffFiles(t, r, p); len(got) != 2 || got["other.txt"] != "" || len(d.Notes) != 0 {
		t.Fatalf("the parent's diff: %v, notes %q", got, d.Notes)
	}
	if got, _, d := diffFiles(t, r, f); len(got) != 2 || got["later.txt"] != "" || len(d.Notes) != 0 {
		t.Fatalf("the fork's diff: %v, notes %q", got, d.Notes)
	}
}

// A Codex fork G of P holds a copy of P's lines, the spawn_agent output
// that names P's subagent F with them: its diff shows P's patches as its
// own, so it reads F's too, as P's does, in the order they came though
// the copy bears the fork's time (10:05:00, after F's patch).
func TestCodexDiffForkReadsItsCopiedSpawnsSubagent(t *testing.T) {
	c := codexWithSubagent(t)
	c.forkG("05:00")
	r, _, f, _, _ := c.imported(tree{"n.txt": "2\nB\n", "only.txt": "o\n"})
	got, patch, d := diffFiles(t, r, c.gID)
	if len(got) != 2 || got["n.txt"] != "added" || got["only.txt"] != "added" || !strings.Contains(patch, "+2\n+B\n") {
		t.Fatalf("the fork's diff: %v, notes %q:\n%s", got, d.Notes, patch)
	}
	if len(d.Notes) != 2 || !strings.Contains(d.Notes[1], "only.txt: from the patches of session "+f.String()) {
		t.Fatalf("notes %q", d.Notes)
	}
}
