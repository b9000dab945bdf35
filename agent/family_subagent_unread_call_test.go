package agent

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// subagentWithAFailedEdit is a Claude Code session that edits c.txt (C0
// to C1, events 1 and 2) and calls a Task whose subagent, imported on its
// own (its objects in records of their own, to damage one alone), first
// tries an Edit of x.txt that fails (is_error, "Error: ..."), changing
// nothing, then edits a.txt (A0 to A1), its result saying nothing of the
// file. Each Edit call's old_string is long: cut out of its line into an
// object of its own, in a block of its own. damage names the call whose
// cut string is damaged: "" none, "failed" the failed Edit's, "needed"
// the call of the edit of a.txt. It gives the store (opened again after
// a damage), the parent's session and the workspace.
func subagentWithAFailedEdit(t *testing.T, damage string) (*Rook, eventlog.ID, string) {
	t.Helper()
	e := newEditTranscript(t, "go")
	at := func(p string) string { return filepath.Join(e.ws, p) }
	e.edit(at("c.txt"), "C0\n", "C0", "C1") // events 1, 2
	e.lines = append(e.lines, claudeTaskCall(e))
	sub := &editTranscript{dir: e.dir, ws: e.ws, n: e.n}
	sub.sidePrompt("edit x and a")
	nope := strings.Repeat("no such text here; ", 70000)
	sub.sideStep("Edit", fmt.Sprintf(`{"file_path":%s,"old_string":%s,"new_string":"X1","replace_all":false}`, jsonq(at("x.txt")), jsonq(nope)),
		"<tool_use_error>String to replace not found in file.</tool_use_error>", true, `"Error: String to replace not found in file."`)
	old := "A0"
	if damage == "needed" {
		old = strings.Repeat("A0, as it was then; ", 70000)
	}
	sub.sideEdit(at("a.txt"), old, "A1")
	e.n = sub.n
	e.lines = append(e.lines, claudeTaskResult(e, `"totalToolUseCount":2,`))
	writeTree(t, e.ws, tree{"c.txt": "C1\n", "x.txt": "X0\n", "a.txt": "A1\n"})
	projects := filepath.Join(e.dir, "home", ".claude", "projects")
	writeSource(t, vfs.OS, filepath.Join(projects, "-ws", "s1.jsonl"), e.lines, "")
	r := diskRook(t, filepath.Join(e.dir, "store"))
	parent := *mustImport(t, r, FormatClaudeCode, projects).Files[0].Session
	writeSource(t, vfs.OS, filepath.Join(projects, "-ws", "s1", "subagents", "agent-a1b2c3d.jsonl"), sub.lines, "")
	var sid eventlog.ID
	for _, f := range mustImport(t, r, FormatClaudeCode, projects).Files {
		if f.Session != nil && filepath.Base(f.Path) == "agent-a1b2c3d.jsonl" {
			sid = *f.Session
		}
	}
	if sid.IsZero() {
		t.Fatal("the subagent was not imported")
	}
	evs, err := r.Log.Read(sid, 0, 64)
	if err != nil {
		t.Fatal(err)
	}
	var calls []cas.Key
	for _, ev := range evs {
		if ev.Kind == eventlog.KindToolCall && ev.Label == "Edit" {
			calls = append(calls, ev.Body)
		}
	}
	if len(calls) != 2 {
		t.Fatalf("%d Edit calls in the subagent's events", len(calls))
	}
	if damage == "" {
		return r, parent, e.ws
	}
	bad, good := calls[0], calls[1]
	if damage == "needed" {
		bad, good = calls[1], calls[0]
	}
	b, err := r.Store.Get(bad)
	if err != nil {
		t.Fatal(err)
	}
	sl, err := decodeSourceLine(b)
	if err != nil || len(sl.Cuts) == 0 {
		t.Fatalf("the %s edit's call line has no cut string: %v", damage, err)
	}
	home := damageRecordOf(t, r, sl.Cuts[0].ID) // its old_string
	if r, err = Open(home, Options{FS: vfs.OS, Writable: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if _, err := r.Store.Get(good); err != nil {
		t.Fatalf("the other edit's call should still read: %v", err)
	}
	if _, err := r.importedLines(bad, nil); err == nil {
		t.Fatalf("the %s edit's call still reads", damage)
	}
	return r, parent, e.ws
}

// A subagent's session read for its parent's rewind is read strictly
// (85d79c7: capturedStatesIn/editCalls, member): an edit call whose
// object does not read made the whole session unread, and the rewind
// refused. But editCalls read every edit call from the session's start
// to the result it looked up, and failed at the first that did not read,
// whether or not it was the call looked up: here the subagent's first
// Edit failed, changing nothing, and only its call's object is damaged;
// the call the subagent's successful Edit of a.txt names reads. Nothing
// rook needs is missing, yet the rewind of the parent was refused
// ("cannot rewind the files: session ... cannot be read"), where with the
// object intact it went (--reread cannot help once the transcript is
// gone). Such a call is passed over now: the rewind goes (c.txt put back,
// a.txt named as not known).
func TestClaudeRewindGoesPastAnUnreadCallOfAFailedSubagentEdit(t *testing.T) {
	for _, damaged := range []bool{false, true} {
		t.Run(fmt.Sprintf("damaged=%v", damaged), func(t *testing.T) {
			damage := ""
			if damaged {
				damage = "failed"
			}
			r, parent, ws := subagentWithAFailedEdit(t, damage)
			at := func(p string) string { return filepath.Join(ws, p) }
			rw, err := r.Rewind(parent, 1, false)
			if err != nil {
				t.Fatalf("rewind of the parent to 1: %v\nonly the call of the subagent's FAILED edit (which changed nothing) does not read; the call of its edit of a.txt reads: the rewind should go as it does with the object intact (c.txt C0, a.txt named as not known)", err)
			}
			if got := readFileT(t, at("c.txt")) + readFileT(t, at("a.txt")); got != "C0\nA1\n" {
				t.Fatalf("files: %q", got)
			}
			if got := uncomparedPaths(rw.NotRestored); !slices.Equal(got, []string{"a.txt"}) {
				t.Fatalf("not restored %+v", rw.NotRestored)
			}
		})
	}
}

// The call the subagent's successful edit of a.txt names does not read:
// which file it changed is not known, and the rewind of the parent is
// refused, nothing changed, naming the subagent's session as one that
// cannot be read and the event that does not read.
func TestClaudeRewindRefusesAnUnreadCallOfASubagentEditItNeeds(t *testing.T) {
	r, parent, ws := subagentWithAFailedEdit(t, "needed")
	_, err := r.Rewind(parent, 1, false)
	if err == nil || !strings.HasPrefix(err.Error(), "cannot rewind the files: session ") ||
		!strings.Contains(err.Error(), "(a Claude Code subagent of this session, in the same workspace) cannot be read (event #") ||
		!strings.HasSuffix(err.Error(), ": nothing changed") {
		t.Fatalf("rewind of the parent to 1: %v, want a refusal for the subagent's call that does not read", err)
	}
	if got := readFileT(t, filepath.Join(ws, "c.txt")) + readFileT(t, filepath.Join(ws, "a.txt")); got != "C1\nA1\n" {
		t.Fatalf("files after the refusal: %q", got)
	}
}
