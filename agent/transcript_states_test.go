package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// editTranscript builds the lines of a Claude Code session in workspace ws
// whose agent edits files: each step a tool_use line and its result.
type editTranscript struct {
	dir   string // the test's directory: the workspace, ~/.claude and the store under it
	ws    string
	lines []string
	n     int
}

// newEditTranscript is a session in the workspace dir/ws of a new temporary
// dir, its first line the user's prompt.
func newEditTranscript(t *testing.T, prompt string) *editTranscript {
	dir := t.TempDir()
	e := &editTranscript{dir: dir, ws: filepath.Join(dir, "ws")}
	e.lines = append(e.lines, fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":%s},"uuid":"u0","timestamp":%q}`, e.env(), jsonq(prompt), e.ts()))
	return e
}

// imported writes the transcript where Claude Code keeps it, under
// dir/home/.claude, with no file-history, and imports it into a store in
// dir: the store and the session.
func (e *editTranscript) imported(t *testing.T) (*Rook, eventlog.ID) {
	t.Helper()
	r := diskRook(t, filepath.Join(e.dir, "store"))
	return r, e.importInto(t, r, vfs.OS)
}

// importInto writes the transcript where Claude Code keeps it, under
// dir/home/.claude on fsys (r's filesystem), with no file-history, and
// imports it into r: the session.
func (e *editTranscript) importInto(t *testing.T, r *Rook, fsys vfs.FS) eventlog.ID {
	t.Helper()
	projects := filepath.Join(e.dir, "home", ".claude", "projects")
	writeSource(t, fsys, filepath.Join(projects, "-ws", "s1.jsonl"), e.lines, "")
	return *mustImport(t, r, FormatClaudeCode, projects).Files[0].Session
}

func (e *editTranscript) env() string {
	return fmt.Sprintf(`"sessionId":"s1","cwd":%q,"version":"2.1.38"`, e.ws)
}

func (e *editTranscript) ts() string {
	e.n++
	return fmt.Sprintf("2026-02-10T21:00:%02d.000Z", e.n%60)
}

// step appends a tool call and its result: toolUseResult is written as
// given (raw JSON), isError sets the tool_result's is_error.
func (e *editTranscript) step(tool, toolUseResult string, isError bool) {
	id := fmt.Sprintf("toolu_%d", len(e.lines))
	e.lines = append(e.lines,
		fmt.Sprintf(`{"type":"assistant",%s,"message":{"model":"claude-opus-4-6","id":"msg_%d","role":"assistant","content":[{"type":"tool_use","id":%q,"name":%q,"input":{}}]},"uuid":"a%d","timestamp":%q}`, e.env(), len(e.lines), id, tool, len(e.lines), e.ts()),
		fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":[{"tool_use_id":%q,"type":"tool_result","content":"done","is_error":%v}]},"toolUseResult":%s,"uuid":"r%d","timestamp":%q}`, e.env(), id, isError, toolUseResult, len(e.lines), e.ts()))
}

func jsonq(s string) string { return string(appendJSONString(nil, []byte(s))) }

// edit is an Edit result: the file at abs was original before it.
func (e *editTranscript) edit(abs, original, old, new string) {
	e.step("Edit", fmt.Sprintf(`{"filePath":%s,"oldString":%s,"newString":%s,"originalFile":%s,"structuredPatch":[],"userModified":false,"replaceAll":false}`,
		jsonq(abs), jsonq(old), jsonq(new), jsonq(original)), false)
}

// write is a Write result: create (original nil) or update.
func (e *editTranscript) write(abs string, original *string, content string) {
	typ, orig := "create", "null"
	if original != nil {
		typ, orig = "update", jsonq(*original)
	}
	e.step("Write", fmt.Sprintf(`{"type":%q,"filePath":%s,"content":%s,"structuredPatch":[],"originalFile":%s}`, typ, jsonq(abs), jsonq(content), orig), false)
}

func readFileT(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// resultSeqs are the seqs of a session's tool results, in order.
func resultSeqs(t *testing.T, r *Rook, id eventlog.ID) []uint64 {
	t.Helper()
	evs, err := r.Log.Read(id, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []uint64
	for _, ev := range evs {
		if ev.Kind == eventlog.KindToolResult {
			out = append(out, ev.Seq)
		}
	}
	return out
}

// TestTranscriptStatesDiffAndRewind: an imported Claude Code session with
// no file-history backups gets each file's state before the agent's first
// change of it from its edit results: diff shows what it changed, rewind
// puts the files back (a created one removed) and can be undone. Results
// that failed, or name files outside the workspace, give nothing.
func TestTranscriptStatesDiffAndRewind(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	outside := filepath.Join(dir, "elsewhere", "x.txt")
	claude := filepath.Join(dir, "home", ".claude")
	transcript := filepath.Join(claude, "projects", "-ws", "s1.jsonl")
	at := func(p string) string { return filepath.Join(ws, p) }

	// big.txt's original is long (cut out of the line as an object of its
	// own); odd.txt's is long and escaped a way the import does not cut
	// (\u00e9), so it stays in the line and is read from there.
	bigOrig := strings.Repeat("a line of the big file\n", 40)
	oddOrig := strings.Repeat("caf\u00e9 line\n", 40)
	e := &editTranscript{ws: ws}
	e.lines = append(e.lines, fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":"edit the files"},"uuid":"u0","timestamp":%q}`, e.env(), e.ts()))
	e.edit(at("a.txt"), "one\ntwo\nthree\n", "two", "TWO")                // result 0
	e.write(at("new/made.txt"), nil, "made\n")                            // result 1
	e.edit(at("a.txt"), "one\nTWO\nthree\n", "three", "THREE")            // result 2: not a.txt's first
	e.edit(outside, "outside before\n", "before", "after")                // result 3: outside, ignored
	e.step("Edit", `"Error: String to replace not found in file."`, true) // result 4: failed
	e.step("Edit", fmt.Sprintf(`{"filePath":%s,"originalFile":"fail before\n"}`, jsonq(at("failed.txt"))), true)
	e.write(at("big.txt"), &bigOrig, "short now\n")
	e.edit(at("same.txt"), "same\n", "same", "SAME")
	line := fmt.Sprintf(`{"filePath":%s,"oldString":"x","newString":"y","originalFile":"%s","structuredPatch":[]}`, jsonq(at("odd.txt")), strings.ReplaceAll(strings.ReplaceAll(oddOrig, "\u00e9", `\u00e9`), "\n", `\n`))
	e.step("Edit", line, false)
	writeSource(t, vfs.OS, transcript, e.lines, "")

	// The disk after the session (and a hand edit since: same.txt back).
	writeTree(t, ws, tree{
		"a.txt":        "mode:0755:one\nTWO\nTHREE\n",
		"new/made.txt": "made\n",
		"failed.txt":   "fail after\n",
		"big.txt":      "short now\n",
		"same.txt":     "same\n",
		"odd.txt":      "changed\n",
	})
	writeTree(t, filepath.Dir(outside), tree{"x.txt": "outside after\n"})

	r := diskRook(t, filepath.Join(dir, "store"))
	rep := mustImport(t, r, FormatClaudeCode, filepath.Join(claude, "projects"))
	id := *rep.Files[0].Session
	if _, err := r.Store.Get(cas.ID([]byte(bigOrig))); err != nil {
		t.Fatalf("big.txt's original was not cut out of its line: %v", err)
	}
	if _, err := r.Store.Get(cas.ID([]byte(oddOrig))); err == nil {
		t.Fatal("odd.txt's original was cut out of its line: the test wants it read from the line")
	}
	var out bytes.Buffer
	d, err := r.Diff(id, &out, false)
	if err != nil {
		t.Fatal(err)
	}
	got := []string{}
	for _, f := range d.Files {
		got = append(got, f.Status+" "+f.Path)
	}
	if want := "modified a.txt,modified big.txt,added new/made.txt,modified odd.txt"; strings.Join(got, ",") != want {
		t.Fatalf("diff files %v, want %s\n%s", got, want, out.String())
	}
	if d.Captures != 0 || d.FromTranscript != 5 || d.Unchanged != 1 {
		t.Fatalf("diff %+v", d)
	}
	for _, want := range []string{
		"diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n-three\n+TWO\n+THREE\n", // the mode kept
		"--- /dev/null\n+++ b/new/made.txt\n@@ -0,0 +1 @@\n+made\n",
		"-caf\u00e9 line\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("the patch lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "failed.txt") || strings.Contains(out.String(), "x.txt") {
		t.Fatalf("a failed result or a file outside the workspace is in the diff:\n%s", out.String())
	}

	// Rewound to between a.txt's two edits: a.txt as the second edit found
	// it; the rest as before their first edit.
	res := resultSeqs(t, r, id)
	rw, err := r.Rewind(id, res[1], false)
	if err != nil {
		t.Fatal(err)
	}
	if rw.CheckpointsApplied != 0 || rw.FromTranscript != 5 || rw.FilesRemoved != 1 || rw.Undo == "" {
		t.Fatalf("rewind %+v", rw)
	}
	for p, want := range map[string]string{"a.txt": "one\nTWO\nthree\n", "big.txt": bigOrig, "odd.txt": oddOrig, "same.txt": "same\n", "failed.txt": "fail after\n"} {
		if got := readFileT(t, at(p)); got != want {
			t.Fatalf("%s after the rewind: %q, want %q", p, got, want)
		}
	}
	if _, err := os.Lstat(at("new/made.txt")); !os.IsNotExist(err) {
		t.Fatalf("new/made.txt is still there: %v", err)
	}
	if fi, err := os.Stat(at("a.txt")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("a.txt's mode after the rewind: %v %v", fi.Mode(), err)
	}
	if got := readFileT(t, outside); got != "outside after\n" {
		t.Fatalf("a file outside the workspace was written: %q", got)
	}

	// Rewound to the start: a.txt as it was before the session.
	if _, err := r.Rewind(id, 0, false); err != nil {
		t.Fatal(err)
	}
	if got := readFileT(t, at("a.txt")); got != "one\ntwo\nthree\n" {
		t.Fatalf("a.txt after a rewind to 0: %q", got)
	}
	// The first rewind's undo puts its disk back, a.txt included.
	if _, err := r.Rewind(rw.Fork, *rw.BeforeSeq, false); err != nil {
		t.Fatal(err)
	}
	if got := readFileT(t, at("a.txt")); got != "one\nTWO\nTHREE\n" {
		t.Fatalf("a.txt after the undo: %q", got)
	}
	if got := readFileT(t, at("new/made.txt")); got != "made\n" {
		t.Fatalf("new/made.txt after the undo: %q", got)
	}

	// Rewound past the last edit: nothing to put back, and no error (the
	// session has states, just none after that point).
	last := resultSeqs(t, r, id)
	if rw, err := r.Rewind(id, last[len(last)-1]+1, false); err != nil || len(rw.Paths) != 0 {
		t.Fatalf("rewind past the last edit: %+v %v", rw, err)
	}
}

// TestTranscriptStatesYieldToEarlierBackups: where Claude Code's
// file-history backup of a file comes before its edit result, the backup
// is its state (it wins); a file with no backup still gets its state from
// the transcript.
func TestTranscriptStatesYieldToEarlierBackups(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	claude := filepath.Join(dir, "home", ".claude")
	transcript := filepath.Join(claude, "projects", "-ws", "s1.jsonl")
	backups := filepath.Join(claude, "file-history", "s1")
	writeTree(t, backups, tree{"h1@v1": "from the backup\n"})
	writeTree(t, ws, tree{"a.txt": "after\n", "b.txt": "b after\n"})
	e := &editTranscript{ws: ws}
	e.lines = append(e.lines,
		fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":"edit"},"uuid":"u0","timestamp":%q}`, e.env(), e.ts()),
		`{"type":"file-history-snapshot","messageId":"m2","snapshot":{"messageId":"m2","trackedFileBackups":{"a.txt":{"backupFileName":"h1@v1","version":1,"backupTime":"2026-02-10T21:00:01.000Z"}},"timestamp":"2026-02-10T21:00:01.000Z"},"isSnapshotUpdate":true}`)
	e.edit(filepath.Join(ws, "a.txt"), "from the transcript\n", "x", "y")
	e.edit(filepath.Join(ws, "b.txt"), "b before\n", "x", "y")
	writeSource(t, vfs.OS, transcript, e.lines, "")

	r := diskRook(t, filepath.Join(dir, "store"))
	rep := mustImport(t, r, FormatClaudeCode, filepath.Join(claude, "projects"))
	id := *rep.Files[0].Session
	var out bytes.Buffer
	d, err := r.Diff(id, &out, false)
	if err != nil {
		t.Fatal(err)
	}
	if d.Captures != 1 || d.FromTranscript != 1 || len(d.Files) != 2 {
		t.Fatalf("diff %+v\n%s", d, out.String())
	}
	if !strings.Contains(out.String(), "-from the backup\n+after\n") || !strings.Contains(out.String(), "-b before\n+b after\n") {
		t.Fatalf("patch:\n%s", out.String())
	}
	if _, err := r.Rewind(id, 0, false); err != nil {
		t.Fatal(err)
	}
	if got := readFileT(t, filepath.Join(ws, "a.txt")); got != "from the backup\n" {
		t.Fatalf("a.txt after the rewind: %q", got)
	}
	if got := readFileT(t, filepath.Join(ws, "b.txt")); got != "b before\n" {
		t.Fatalf("b.txt after the rewind: %q", got)
	}
}

// TestTranscriptStatesMultiEdit: a MultiEdit result names the file before
// it originalFileContents (not originalFile, as Edit does): it is the
// file's state, not the later Edit's originalFile (the file after the
// MultiEdit).
func TestTranscriptStatesMultiEdit(t *testing.T) {
	e := newEditTranscript(t, "edit")
	ws := e.ws
	e.step("MultiEdit", fmt.Sprintf(`{"filePath":%s,"edits":[{"old_string":"one","new_string":"two","replace_all":false}],"originalFileContents":"one\n","structuredPatch":[],"userModified":false}`, jsonq(filepath.Join(ws, "m.txt"))), false)
	e.edit(filepath.Join(ws, "m.txt"), "two\n", "two", "three")
	writeTree(t, ws, tree{"m.txt": "three\n"})
	r, id := e.imported(t)
	var out bytes.Buffer
	if _, err := r.Diff(id, &out, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "-one\n+three\n") {
		t.Fatalf("the diff does not start from the file before the MultiEdit:\n%s", out.String())
	}
	if _, err := r.Rewind(id, 0, false); err != nil {
		t.Fatal(err)
	}
	if got := readFileT(t, filepath.Join(ws, "m.txt")); got != "one\n" {
		t.Fatalf("m.txt after the rewind: %q, want the file before the MultiEdit", got)
	}
}

// TestTranscriptStatesUnknownFirstChange: an edit result that changed a
// file without saying what it was (an older Claude Code's Write update or
// Edit, with no originalFile) leaves the file without a state: a later
// result's originalFile is the file after that change, and taking it as
// the file before the session would have rewind write it back as such.
func TestTranscriptStatesUnknownFirstChange(t *testing.T) {
	e := newEditTranscript(t, "edit")
	ws := e.ws
	at := func(p string) string { return filepath.Join(ws, p) }
	e.step("Write", fmt.Sprintf(`{"type":"update","filePath":%s,"content":"w middle\n","structuredPatch":[]}`, jsonq(at("w.txt"))), false)
	e.edit(at("w.txt"), "w middle\n", "middle", "after")
	e.step("Edit", fmt.Sprintf(`{"filePath":%s,"oldString":"before","newString":"middle","structuredPatch":[{"oldStart":1,"oldLines":1,"newStart":1,"newLines":1,"lines":["-e before","+e middle"]}]}`, jsonq(at("e.txt"))), false)
	e.edit(at("e.txt"), "e middle\n", "middle", "after")
	e.edit(at("known.txt"), "k before\n", "before", "after")
	writeTree(t, ws, tree{"w.txt": "w after\n", "e.txt": "e after\n", "known.txt": "k after\n"})
	r, id := e.imported(t)
	var out bytes.Buffer
	d, err := r.Diff(id, &out, false)
	if err != nil {
		t.Fatal(err)
	}
	if d.FromTranscript != 1 || len(d.Files) != 1 || d.Files[0].Path != "known.txt" {
		t.Fatalf("diff %+v\n%s", d, out.String())
	}
	if _, err := r.Rewind(id, 0, false); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"w.txt": "w after\n", "e.txt": "e after\n", "known.txt": "k before\n"} {
		if got := readFileT(t, at(p)); got != want {
			t.Fatalf("%s after the rewind: %q, want %q", p, got, want)
		}
	}
}

// TestTranscriptStatesLinkRefused: a file the agent edited that is a link
// now (Claude Code writes through links) is not replaced by what the
// result says the file was: that is the link's target's content. The
// rewind fails and writes nothing.
func TestTranscriptStatesLinkRefused(t *testing.T) {
	e := newEditTranscript(t, "edit")
	ws := e.ws
	e.edit(filepath.Join(ws, "a.txt"), "a before\n", "before", "after")
	e.edit(filepath.Join(ws, "link.txt"), "real before\n", "before", "after")
	writeTree(t, ws, tree{"a.txt": "a after\n", "real.txt": "real after\n", "link.txt": "link:real.txt"})
	r, id := e.imported(t)
	if _, err := r.Rewind(id, 0, false); err == nil || !strings.Contains(err.Error(), "link.txt") {
		t.Fatalf("rewind over a link: %v", err)
	}
	if fi, err := os.Lstat(filepath.Join(ws, "link.txt")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("link.txt is no longer a link: %v %v", fi, err)
	}
	if got := readFileT(t, filepath.Join(ws, "a.txt")); got != "a after\n" {
		t.Fatalf("a failed rewind wrote a.txt: %q", got)
	}
}

// TestEditOriginalsSkipsReads: a Read's result names a filePath too (in
// its file object), but holds no edit: diff and rewind, which look at
// every tool result, do not read its file's text back from the store (a
// session that read many large files made each diff read them all).
func TestEditOriginalsSkipsReads(t *testing.T) {
	e := newEditTranscript(t, "read")
	ws := e.ws
	content := strings.Repeat("a line of a large file that was read\n", 1<<16) // 2.4 MB
	e.step("Read", fmt.Sprintf(`{"type":"text","file":{"filePath":%s,"content":%s,"numLines":65536,"startLine":1,"totalLines":65536}}`, jsonq(filepath.Join(ws, "big.txt")), jsonq(content)), false)
	r, id := e.imported(t)
	evs, err := r.Log.Read(id, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Kind != eventlog.KindToolResult {
			continue
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		origs, err := r.editOriginals(ev.Body, ws)
		runtime.ReadMemStats(&after)
		if err != nil || len(origs) != 0 {
			t.Fatalf("a Read's result: %v %v", origs, err)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > uint64(len(content))/4 {
			t.Fatalf("reading a Read's result as an edit allocated %d bytes: its file's text was read back", n)
		}
		return
	}
	t.Fatal("no tool result")
}

// TestTranscriptStatesRewindCrash: a rewind whose files' states come from
// the transcript's edit results (an Edit of a file edited by hand since, a
// Write that created a file, a Write that replaced one, an Edit of a file
// deleted by hand since) records the disk before it durably before it
// writes a file: at every crash point the workspace is as it was, or the
// undo is on the fork and gives it back exactly, hand edits and modes
// included; so where writes to the store fail. A file that cannot be
// written midway fails the rewind with an error naming the undo, which
// puts back what was there.
func TestTranscriptStatesRewindCrash(t *testing.T) {
	before := tree{
		"a.txt":        "mode:0755:a one\nA TWO\nby hand\n",
		"new/made.txt": "made\n",
		"w.txt":        "w after\n",
		"keep.txt":     "not the agent's\n",
	}
	setup := func(t *testing.T) rewindCase {
		e := newEditTranscript(t, "edit the files")
		at := func(p string) string { return filepath.Join(e.ws, p) }
		orig := "w before\n"
		e.edit(at("a.txt"), "a one\na two\n", "a two", "A TWO")
		e.write(at("new/made.txt"), nil, "made\n")
		e.write(at("w.txt"), &orig, "w after\n")
		e.edit(at("sub/e.txt"), "e before\n", "before", "after")
		writeTree(t, e.ws, before)
		fsys := vfs.NewMem()
		r := testRook(t, fsys)
		id := e.importInto(t, r, fsys)
		if err := r.Flush(); err != nil {
			t.Fatal(err)
		}
		return rewindCase{fsys: fsys, r: r, ws: e.ws, id: id, to: 1, before: before}
	}

	c := setup(t)
	rep, _ := rewindCrashSweep(t, c)
	if rep.CheckpointsApplied != 0 || rep.FromTranscript != 4 || rep.FilesRestored != 3 || rep.FilesRemoved != 1 {
		t.Fatalf("rewind %+v: not the four files' states from the transcript", rep)
	}
	rewindFaultSweep(t, setup)

	// Midway, sub/e.txt cannot be written: something put a file where its
	// directory goes after the rewind checked it (at its first write to the
	// store, the fork).
	c = setup(t)
	blocker := filepath.Join(c.ws, "sub")
	var once sync.Once
	c.fsys.SetHook(func(op vfs.Op, _ string) error {
		if op.IsWrite() {
			once.Do(func() { os.WriteFile(blocker, []byte("in the way\n"), 0o644) })
		}
		return nil
	})
	rep, err := c.r.Rewind(c.id, c.to, false)
	c.fsys.SetHook(nil)
	if err == nil || rep.Undo == "" || !strings.Contains(err.Error(), "sub/e.txt") || !strings.Contains(err.Error(), rep.Undo) {
		t.Fatalf("a rewind that could not write sub/e.txt: %v; want an error naming it and the undo %q", err, rep.Undo)
	}
	if got := readFileT(t, filepath.Join(c.ws, "a.txt")); got != "a one\na two\n" {
		t.Fatalf("a.txt after the failed rewind: %q; the test wants a file written before the failure", got)
	}
	if got := readFileT(t, filepath.Join(c.ws, "w.txt")); got != "w after\n" {
		t.Fatalf("w.txt after the failed rewind: %q; the test wants a file left unwritten after the failure", got)
	}
	if in, err := c.r.interruptedRewinds(c.id); err != nil || len(in) != 1 || in[0].Undo != rep.Undo || in[0].To != c.to {
		t.Fatalf("the failed rewind is not named as interrupted: %+v %v", in, err)
	}
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	if _, err := c.r.Rewind(rep.Fork, *rep.BeforeSeq, false); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "the failed rewind's undo", readTree(t, c.ws), before)
}

// TestTranscriptStatesPastLeadingNULs: an edit result whose line a crash
// left NUL bytes before (entryBytes) is imported as a tool result, and
// says what its file was before, as any: diff shows the change and rewind
// puts the file back.
func TestTranscriptStatesPastLeadingNULs(t *testing.T) {
	e := newEditTranscript(t, "edit")
	ws := e.ws
	e.edit(filepath.Join(ws, "n.txt"), "one\n", "one", "two")
	e.lines[len(e.lines)-1] = "\x00\x00\x00" + e.lines[len(e.lines)-1]
	writeTree(t, ws, tree{"n.txt": "two\n"})
	r, id := e.imported(t)
	var out bytes.Buffer
	if _, err := r.Diff(id, &out, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "-one\n+two\n") {
		t.Fatalf("the diff does not show the edit of the line after the NULs:\n%s", out.String())
	}
	if _, err := r.Rewind(id, 0, false); err != nil {
		t.Fatal(err)
	}
	if got := readFileT(t, filepath.Join(ws, "n.txt")); got != "one\n" {
		t.Fatalf("n.txt after the rewind: %q, want the file before the edit", got)
	}
}

// A rewind whose files' states come from the transcript's edit results
// says, of each, what it did (transcript_files): a file already as the
// result says it was then is not written ("as-then"), one the agent
// created that is not there now is not removed ("not-there"), a path the
// agent created as a file that is a directory now is removed once
// emptied ("dir-removed") or, holding a file of the user's, left
// ("dir-kept"). The count of those put back had counted them all.
func TestTranscriptRewindSaysWhatItDid(t *testing.T) {
	e := newEditTranscript(t, "edit the files")
	at := func(p string) string { return filepath.Join(e.ws, p) }
	e.edit(at("a.txt"), "A0\n", "A0", "A1")
	e.edit(at("same.txt"), "S0\n", "S0", "S1")
	e.write(at("new.txt"), nil, "N\n")
	e.write(at("d"), nil, "d\n")
	e.write(at("d/x.txt"), nil, "x\n")
	e.write(at("g"), nil, "g\n")
	e.write(at("g/y.txt"), nil, "y\n")
	// same.txt put back by hand, new.txt removed by hand; d and g made
	// directories (a Bash rm the transcript does not say), and a file of
	// the user's put in d.
	writeTree(t, e.ws, tree{"a.txt": "A1\n", "same.txt": "S0\n", "d/x.txt": "x\n", "d/u.txt": "mine\n", "g/y.txt": "y\n"})
	r, id := e.imported(t)
	rw, err := r.Rewind(id, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(rw.TranscriptFiles)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"path":"a.txt"},{"path":"d","disk":"dir-kept"},{"path":"d/x.txt"},{"path":"g","disk":"dir-removed"},{"path":"g/y.txt"},{"path":"new.txt","disk":"not-there"},{"path":"same.txt","disk":"as-then"}]`
	if string(got) != want {
		t.Fatalf("transcript files\n %s, want\n %s", got, want)
	}
	if rw.FromTranscript != 7 || rw.FilesRestored != 1 || rw.FilesRemoved != 2 || strings.Join(rw.DirsKept, ",") != "d" {
		t.Fatalf("rewind %+v", rw)
	}
	if got := readFileT(t, at("a.txt")) + readFileT(t, at("same.txt")) + readFileT(t, at("d/u.txt")); got != "A0\nS0\nmine\n" {
		t.Fatalf("files after the rewind: %q", got)
	}
	for _, p := range []string{"d/x.txt", "g", "new.txt"} {
		if _, err := os.Lstat(at(p)); !os.IsNotExist(err) {
			t.Fatalf("%s after the rewind: %v", p, err)
		}
	}
}
