package agent

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// lateSnap is a Claude Code file-history snapshot line naming files, each
// `"path":{"backupFileName":...}` as given.
func lateSnap(files string) string {
	return `{"type":"file-history-snapshot","messageId":"m","snapshot":{"messageId":"m","trackedFileBackups":{` + files + `},"timestamp":"2026-02-10T21:01:09.000Z"},"isSnapshotUpdate":true}`
}

// lateBackup is one entry of lateSnap: a backup named name (null: a file
// the agent created, with nothing to back up).
func lateBackup(path, name string, version int) string {
	b := "null"
	if name != "" {
		b = fmt.Sprintf("%q", name)
	}
	return fmt.Sprintf(`%q:{"backupFileName":%s,"version":%d,"backupTime":"2026-02-10T21:01:09.000Z"}`, path, b, version)
}

// lateAts are the seqs the late captures of a session stand at, in the
// order of their events.
func lateAts(t *testing.T, r *Rook, id eventlog.ID) []uint64 {
	t.Helper()
	var out []uint64
	if err := r.eachEvent(id, func(ev eventlog.Event) error {
		if at, ok := lateCaptureAt(ev); ok {
			out = append(out, at)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// stateOf says what a path's state is in st: its content, "<absent>", or
// "<none>" (no state).
func stateOf(t *testing.T, r *Rook, st firstStates, p string) string {
	t.Helper()
	c, ok := st.First[p]
	switch {
	case !ok:
		return "<none>"
	case c.Remove:
		return "<absent>"
	}
	b, err := r.changeData(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// pastCall is the seq just after the first tool call of session id at or
// after seq: a point past which the captures before it are no states
// (its command may have changed the files; before it, the captures of
// file backups just before a point are states at it: pointLead).
func pastCall(t *testing.T, r *Rook, id eventlog.ID, seq uint64) uint64 {
	t.Helper()
	for _, ev := range mustEvents(t, r, id) {
		if ev.Seq >= seq && ev.Kind == eventlog.KindToolCall {
			return ev.Seq + 1
		}
	}
	t.Fatalf("no tool call at or after #%d", seq)
	return 0
}

// statesFrom is capturedStates, or the test fails.
func statesFrom(t *testing.T, r *Rook, id eventlog.ID, from uint64) firstStates {
	t.Helper()
	st, err := r.capturedStates(id, from)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// Late backups of every version (@v2, @v3...) are taken, each at the line
// that first names it: a rewind to between two lines that backed a file
// up puts back the later backup, not nothing. A file the session created
// (its first line names no backup) is captured absent at that line, so a
// rewind to before it removes it.
func TestImportLateBackupVersionsAtTheirLines(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	proj := "/h/.claude/projects/-home-u-proj"
	hist := "/h/.claude/file-history/S/"
	lines := append(claudeLines("S", 1), lateSnap(lateBackup("a.txt", "h1@v1", 1)+","+lateBackup("/home/u/proj/c.txt", "", 1)))
	lines = append(lines, claudeLines("S", 2)...)
	lines = append(lines, lateSnap(lateBackup("a.txt", "h1@v2", 2)+","+lateBackup("/home/u/proj/c.txt", "c1@v2", 2)))
	lines = append(lines, claudeLines("S", 3)...)
	lines = append(lines, lateSnap(lateBackup("a.txt", "h1@v3", 3)))
	data := writeSource(t, fsys, proj+"/S.jsonl", lines, "")
	id := *mustImport(t, r, FormatClaudeCode, proj).Files[0].Session

	writeSourceFile(t, fsys, hist+"h1@v1", []byte("a v1\n"))
	writeSourceFile(t, fsys, hist+"h1@v2", []byte("a v2\n"))
	writeSourceFile(t, fsys, hist+"c1@v2", []byte("c v2\n"))
	rep := mustImport(t, r, FormatClaudeCode, proj)
	if rep.BackupsLateTaken != 3 || rep.Events != 2 {
		t.Fatalf("late backups: taken %d, events %d; want 3 backups (and c.txt absent) in 2 captures", rep.BackupsLateTaken, rep.Events)
	}
	ats := lateAts(t, r, id)
	if len(ats) != 2 || ats[0] >= ats[1] {
		t.Fatalf("late captures at %v: want one per line that named a backup first", ats)
	}
	for _, c := range []struct {
		from uint64
		a, c string
	}{
		{0, "a v1\n", "<absent>"},
		{ats[0], "a v1\n", "<absent>"},
		{pastCall(t, r, id, ats[0]), "a v2\n", "c v2\n"},
		{ats[1], "a v2\n", "c v2\n"},
		{pastCall(t, r, id, ats[1]), "<none>", "<none>"}, // h1@v3 not there yet
	} {
		st := statesFrom(t, r, id, c.from)
		if a, cc := stateOf(t, r, st, "a.txt"), stateOf(t, r, st, "c.txt"); a != c.a || cc != c.c {
			t.Fatalf("from #%d: a.txt %q, c.txt %q; want %q, %q", c.from, a, cc, c.a, c.c)
		}
	}

	// The third version comes later still: taken at its own line, the
	// others not again.
	writeSourceFile(t, fsys, hist+"h1@v3", []byte("a v3\n"))
	if rep = mustImport(t, r, FormatClaudeCode, proj); rep.BackupsLateTaken != 1 || rep.Events != 1 {
		t.Fatalf("the third version: taken %d, events %d", rep.BackupsLateTaken, rep.Events)
	}
	ats = lateAts(t, r, id)
	if len(ats) != 3 {
		t.Fatalf("late captures at %v", ats)
	}
	if a := stateOf(t, r, statesFrom(t, r, id, pastCall(t, r, id, ats[1])), "a.txt"); a != "a v3\n" {
		t.Fatalf("past the second snapshot: a.txt %q, want the third version", a)
	}
	if rep = mustImport(t, r, FormatClaudeCode, proj); rep.Events != 0 || rep.BackupsLateTaken != 0 {
		t.Fatalf("again: %d events, %d taken", rep.Events, rep.BackupsLateTaken)
	}
	mustExport(t, r, id, data)
}

// A backup of a later version put there after the import that captured
// the file's first one (the directory was there, its first backup in it,
// the later one not yet) is taken at its own line: the file captured
// already is no reason to pass it over.
func TestImportLateBackupVersionAfterFirstCaptured(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	proj := "/h/.claude/projects/-home-u-proj"
	hist := "/h/.claude/file-history/S/"
	writeSourceFile(t, fsys, hist+"h1@v1", []byte("a v1\n"))
	lines := append(claudeLines("S", 1), lateSnap(lateBackup("a.txt", "h1@v1", 1)))
	lines = append(lines, claudeLines("S", 2)...)
	lines = append(lines, lateSnap(lateBackup("a.txt", "h1@v2", 2)))
	lines = append(lines, claudeLines("S", 3)...)
	writeSource(t, fsys, proj+"/S.jsonl", lines, "")
	rep := mustImport(t, r, FormatClaudeCode, proj)
	id := *rep.Files[0].Session
	if rep.BackupsMissing != 1 {
		t.Fatalf("first import: %d backups missing, want h1@v2", rep.BackupsMissing)
	}
	var first uint64 // the seq of the capture of h1@v1
	if err := r.eachEvent(id, func(ev eventlog.Event) error {
		if ev.Kind == eventlog.KindCheckpoint && ev.Label == captureBackupsLabel && first == 0 {
			first = ev.Seq // (the next, at h1@v2's line, records its state unknown)
		}
		return nil
	}); err != nil || first == 0 {
		t.Fatalf("no capture at the first import (%v)", err)
	}

	writeSourceFile(t, fsys, hist+"h1@v2", []byte("a v2\n"))
	if rep = mustImport(t, r, FormatClaudeCode, proj); rep.BackupsLateTaken != 1 || rep.Events != 1 {
		t.Fatalf("late second version: taken %d, events %d", rep.BackupsLateTaken, rep.Events)
	}
	if a := stateOf(t, r, statesFrom(t, r, id, 0), "a.txt"); a != "a v1\n" {
		t.Fatalf("from the start: a.txt %q", a)
	}
	if a := stateOf(t, r, statesFrom(t, r, id, pastCall(t, r, id, first)), "a.txt"); a != "a v2\n" {
		t.Fatalf("past the first capture: a.txt %q, want the second version", a)
	}
	if rep = mustImport(t, r, FormatClaudeCode, proj); rep.Events != 0 || rep.BackupsLateTaken != 0 {
		t.Fatalf("again: %d events, %d taken", rep.Events, rep.BackupsLateTaken)
	}
}

// Claude Code writes a file's snapshot line just before the result of the
// edit that backed it up: a late capture stands at the seq of that
// result. It holds the file before the edit, and is the path's state
// there, not the result's original (a result's that says none, an older
// Claude Code's, changed the file from what the capture holds).
func TestLateCaptureBeforeTheEditResultAtItsSeq(t *testing.T) {
	e := newEditTranscript(t, "edit")
	ws := e.ws
	backups := filepath.Join(e.dir, "home", ".claude", "file-history", "s1")
	editAt := func(n int, p, result string) {
		id := fmt.Sprintf("toolu_%d", n)
		e.lines = append(e.lines,
			fmt.Sprintf(`{"type":"assistant",%s,"message":{"model":"claude-opus-4-6","id":"msg_%d","role":"assistant","content":[{"type":"tool_use","id":%q,"name":"Edit","input":{}}]},"uuid":"a%d","timestamp":%q}`, e.env(), n, id, n, e.ts()),
			lateSnap(lateBackup(p, fmt.Sprintf("h%d@v1", n), 1)),
			fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":[{"tool_use_id":%q,"type":"tool_result","content":"done","is_error":false}]},"toolUseResult":%s,"uuid":"r%d","timestamp":%q}`, e.env(), id, result, n, e.ts()))
	}
	editAt(1, "a.txt", fmt.Sprintf(`{"filePath":%s,"oldString":"x","newString":"y","originalFile":"a from the result\n","structuredPatch":[],"userModified":false,"replaceAll":false}`, jsonq(filepath.Join(ws, "a.txt"))))
	editAt(2, "b.txt", fmt.Sprintf(`{"filePath":%s,"oldString":"before","newString":"after","structuredPatch":[{"oldStart":1,"oldLines":1,"newStart":1,"newLines":1,"lines":["-b before","+b after"]}]}`, jsonq(filepath.Join(ws, "b.txt"))))
	writeTree(t, ws, tree{"a.txt": "a after\n", "b.txt": "b after\n"})
	r, id := e.imported(t)

	writeTree(t, backups, tree{"h1@v1": "a from the backup\n", "h2@v1": "b before\n"})
	if rep := mustImport(t, r, FormatClaudeCode, filepath.Join(e.dir, "home", ".claude", "projects")); rep.BackupsLateTaken != 2 {
		t.Fatalf("late backups taken: %d", rep.BackupsLateTaken)
	}
	ats, results := lateAts(t, r, id), resultSeqs(t, r, id)
	if len(ats) != 2 || !slices.Contains(results, ats[0]) || !slices.Contains(results, ats[1]) {
		t.Fatalf("late captures at %v, edit results at %v: want them at the same seqs", ats, results)
	}
	var out bytes.Buffer
	d, err := r.Diff(id, &out, false)
	if err != nil {
		t.Fatal(err)
	}
	if d.Captures != 2 || d.FromTranscript != 0 || len(d.Files) != 2 {
		t.Fatalf("diff %+v\n%s", d, out.String())
	}
	if !strings.Contains(out.String(), "-a from the backup\n+a after\n") || !strings.Contains(out.String(), "-b before\n+b after\n") {
		t.Fatalf("patch:\n%s", out.String())
	}
	if _, err := r.Rewind(id, 0, false); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"a.txt": "a from the backup\n", "b.txt": "b before\n"} {
		if got := readFileT(t, filepath.Join(ws, p)); got != want {
			t.Fatalf("%s after the rewind: %q, want %q", p, got, want)
		}
	}
}

// A fork made in rook holds a copy of its parent's events before the fork
// point, not the late captures an import appends to the parent after its
// lines (made after the fork, or standing past the fork point in the
// parent's log): its diff and rewind read those of the parent that stand
// before the fork point, up the chain of forks (a fork of a fork; one in
// the middle removed), and none that stand at or past it.
func TestForkReadsParentLateCaptures(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	proj := "/h/.claude/projects/-home-u-proj"
	hist := "/h/.claude/file-history/S/"
	lines := append(claudeLines("S", 1), lateSnap(lateBackup("a.txt", "h1@v1", 1)+","+lateBackup("/home/u/proj/c.txt", "", 1)))
	lines = append(lines, claudeLines("S", 2)...)
	lines = append(lines, lateSnap(lateBackup("b.txt", "h2@v1", 1)))
	lines = append(lines, claudeLines("S", 3)...)
	writeSource(t, fsys, proj+"/S.jsonl", lines, "")
	id := *mustImport(t, r, FormatClaudeCode, proj).Files[0].Session
	// The seq of the event holding the line that names b.txt's backup:
	// forked there, the fork holds a.txt's line, not b.txt's.
	var bLine uint64
	if err := r.eachEvent(id, func(ev eventlog.Event) error {
		if ev.Kind == eventlog.KindNote {
			if body, err := r.Body(ev); err == nil && strings.Contains(string(body), "h2@v1") {
				bLine = ev.Seq
			}
		}
		return nil
	}); err != nil || bLine == 0 {
		t.Fatalf("no line names h2@v1 (%v)", err)
	}
	fork := func(parent eventlog.ID, at uint64) eventlog.ID {
		m, err := r.Log.Fork(parent, at, eventlog.Meta{})
		if err != nil {
			t.Fatal(err)
		}
		return m.ID
	}
	f := fork(id, bLine)
	g := fork(f, bLine-1)
	atB := fork(id, bLine+1) // holds b.txt's line, not the edit after it

	writeSourceFile(t, fsys, hist+"h1@v1", []byte("a before\n"))
	writeSourceFile(t, fsys, hist+"h2@v1", []byte("b before\n"))
	if rep := mustImport(t, r, FormatClaudeCode, proj); rep.BackupsLateTaken != 2 {
		t.Fatalf("late backups taken: %d", rep.BackupsLateTaken)
	}
	// A fork made after, past the parent's late captures: its copy holds
	// them, taken once.
	sum, err := r.Log.Summary(id)
	if err != nil {
		t.Fatal(err)
	}
	whole := fork(id, sum.Events)
	check := func(name string, s eventlog.ID, captures int, a, b, c string) {
		t.Helper()
		st := statesFrom(t, r, s, 0)
		if ga, gb, gc := stateOf(t, r, st, "a.txt"), stateOf(t, r, st, "b.txt"), stateOf(t, r, st, "c.txt"); ga != a || gb != b || gc != c || st.Captures != captures {
			t.Fatalf("%s: a.txt %q, b.txt %q, c.txt %q, %d captures; want %q, %q, %q, %d", name, ga, gb, gc, st.Captures, a, b, c, captures)
		}
	}
	check("the parent", id, 2, "a before\n", "b before\n", "<absent>")
	check("the fork", f, 1, "a before\n", "<none>", "<absent>")
	check("the fork's fork", g, 1, "a before\n", "<none>", "<absent>")
	check("the fork at the edit after b.txt's line", atB, 1, "a before\n", "<none>", "<absent>")
	check("a fork of all of it", whole, 2, "a before\n", "b before\n", "<absent>")
	// Its parent removed, the fork's fork reads its ancestor's.
	if _, err := r.RemoveSession(f); err != nil {
		t.Fatal(err)
	}
	check("the fork's fork, its parent removed", g, 1, "a before\n", "<none>", "<absent>")
}

// A fork whose parent does not read cannot know its late captures: its
// states fail, and the error names the parent and where to look.
func TestForkOfAParentThatDoesNotReadSaysWhereToLook(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	proj := "/h/.claude/projects/-home-u-proj"
	lines := append(claudeLines("S", 1), lateSnap(lateBackup("a.txt", "h1@v1", 1)))
	lines = append(lines, claudeLines("S", 2)...)
	writeSource(t, fsys, proj+"/S.jsonl", lines, "")
	id := *mustImport(t, r, FormatClaudeCode, proj).Files[0].Session
	m, err := r.Log.Fork(id, 1, eventlog.Meta{})
	if err != nil {
		t.Fatal(err)
	}
	// The parent's log garbled near its end, past the fork point.
	logPath := filepath.Join(testHome, cas.EventsDir, id.String()+".log")
	b, err := vfs.ReadFile(fsys, logPath)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(b) - 40; i < len(b)-8; i++ {
		b[i] ^= 0x5a
	}
	if err := fsys.WriteFileAtomic(logPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = r.capturedStates(m.ID, 0)
	if err == nil || !strings.Contains(err.Error(), id.String()) || !strings.Contains(err.Error(), "rook store verify") {
		t.Fatalf("states of a fork whose parent does not read: %v", err)
	}
}
