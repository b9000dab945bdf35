package agent

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rookhq/rook/eventlog"
)

// diffFiles is session id's diff: each file's status, and the patch.
func diffFiles(t *testing.T, r *Rook, id eventlog.ID) (map[string]string, string, SessionDiff) {
	t.Helper()
	var b bytes.Buffer
	d, err := r.Diff(id, &b, false)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range d.Files {
		got[f.Path] = f.Status
	}
	return got, b.String(), d
}

// A parent's diff shows what its subagent changed for it, as a rewind to
// 0 puts it back: a.txt from A0 (before the subagent's edit, not the A1
// the parent's own edit found), b.txt from B0 and c.txt added, which the
// parent's own events do not name; each said in a note.
func TestDiffCountsASubagentsEdits(t *testing.T) {
	r, _, parent, sub := claudeWithSubagent(t)
	got, patch, d := diffFiles(t, r, parent)
	if len(got) != 3 || got["a.txt"] != "modified" || got["b.txt"] != "modified" || got["c.txt"] != "added" {
		t.Fatalf("files %v", got)
	}
	for _, want := range []string{"-A0\n+A2\n", "-B0\n+B1\n", "+C1\n"} {
		if !strings.Contains(patch, want) {
			t.Fatalf("the patch lacks %q:\n%s", want, patch)
		}
	}
	if len(d.Notes) != 3 || !strings.Contains(d.Notes[0], "a.txt: compared with the file as it was before session "+sub.String()+" (a Claude Code subagent of this session)") {
		t.Fatalf("notes %q", d.Notes)
	}
	// The subagent's own diff reads no parent: its own three files, from
	// its own states.
	if got, _, d := diffFiles(t, r, sub); len(got) != 3 || len(d.Notes) != 0 {
		t.Fatalf("the subagent's diff: %v, notes %q", got, d.Notes)
	}
}

// The subagent removed since: the parent's diff is its own, and a note
// says which subagent's changes are not shown, and how to import it.
func TestDiffSaysARemovedSubagent(t *testing.T) {
	r, _, parent, sub := claudeWithSubagent(t)
	if _, err := r.RemoveSession(sub); err != nil {
		t.Fatal(err)
	}
	got, patch, d := diffFiles(t, r, parent)
	if len(got) != 1 || got["a.txt"] != "modified" || !strings.Contains(patch, "-A1\n+A2\n") {
		t.Fatalf("files %v:\n%s", got, patch)
	}
	if len(d.Notes) != 1 || !strings.Contains(d.Notes[0], "subagent a1b2c3d, whose Task result is event #") || !strings.Contains(d.Notes[0], "rook import claude-code ") {
		t.Fatalf("notes %q", d.Notes)
	}
}

// A fork's edits are its own, not its parent's: the parent's diff does
// not read them, though a rewind of the parent does.
func TestDiffLeavesAForksEdits(t *testing.T) {
	e := newEditTranscript(t, "go")
	at := func(p string) string { return e.ws + "/" + p }
	fork := claudeFork(e)
	own := &editTranscript{dir: e.dir, ws: e.ws, n: 40}
	own.edit(at("b.txt"), "B0\n", "B0", "B1") // the fork's own (:41, :42)
	for _, l := range own.lines {
		fork = append(fork, strings.Replace(l, `"sessionId":"s1"`, `"sessionId":"f1"`, 1))
	}
	e.edit(at("a.txt"), "A0\n", "A0", "A1")
	writeTree(t, e.ws, tree{"a.txt": "A1\n", "b.txt": "B1\n"})
	r, ids := importClaudeFiles(t, e, map[string][]string{"s1.jsonl": e.lines, "f1.jsonl": fork})
	if got, _, d := diffFiles(t, r, ids["s1.jsonl"]); len(got) != 1 || got["a.txt"] != "modified" || len(d.Notes) != 0 {
		t.Fatalf("the parent's diff: %v, notes %q", got, d.Notes)
	}
}

// A rook fork of the parent (session fork) before the Task call: its line
// ends there, so the subagent, which ran after, is not its change.
func TestDiffSessionForkBeforeTheSubagent(t *testing.T) {
	r, _, parent, _ := claudeWithSubagent(t)
	f, err := r.Log.Fork(parent, 1, eventlog.Meta{Title: "f"})
	if err != nil {
		t.Fatal(err)
	}
	if got, _, d := diffFiles(t, r, f.ID); len(got) != 0 || len(d.Notes) != 0 {
		t.Fatalf("the fork's diff: %v, notes %q", got, d.Notes)
	}
}

// A Claude Code fork's copy of its parent's line holds the Task call and
// result, and the parent's later edit of a.txt: its diff shows that edit
// as the fork's change, so it reads the subagent that result reports (a
// child of the parent, not of the fork) too, as a rook fork of the parent
// after the Task does: a.txt from A0, not the A1 the copied edit found,
// b.txt and c.txt too.
func TestDiffClaudeForkReadsItsCopiedTasksSubagent(t *testing.T) {
	r, e, _, _ := claudeWithSubagent(t)
	fork := importClaudeFork(t, r, e)
	got, patch, d := diffFiles(t, r, fork)
	if len(got) != 3 || got["a.txt"] != "modified" || got["b.txt"] != "modified" || got["c.txt"] != "added" || !strings.Contains(patch, "-A0\n+A2\n") {
		t.Fatalf("the fork's diff: %v, notes %q:\n%s", got, d.Notes, patch)
	}
	if len(d.Notes) != 3 {
		t.Fatalf("notes %q", d.Notes)
	}
}
