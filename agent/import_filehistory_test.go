package agent

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// historySession is a Claude Code session "s1" of the workspace dir/ws,
// its transcript under dir/home/.claude/projects, its file backups in
// dir/home/.claude/file-history/s1, imported into a store in dir.
type historySession struct {
	t                          *testing.T
	dir, ws, backups, projects string
}

func newHistorySession(t *testing.T) *historySession {
	dir := t.TempDir()
	claude := filepath.Join(dir, "home", ".claude")
	return &historySession{t: t, dir: dir, ws: filepath.Join(dir, "ws"),
		backups: filepath.Join(claude, "file-history", "s1"), projects: filepath.Join(claude, "projects")}
}

// imported writes lines (their cwd made the workspace) as the transcript
// and imports it: the store, the session and the report.
func (h *historySession) imported(lines []string) (*Rook, eventlog.ID, ImportReport) {
	t := h.t
	t.Helper()
	lines = slices.Clone(lines)
	for i := range lines {
		lines[i] = strings.ReplaceAll(lines[i], `"cwd":"/home/u/proj"`, fmt.Sprintf(`"cwd":%q`, h.ws))
	}
	writeSource(t, vfs.OS, filepath.Join(h.projects, "-ws", "s1.jsonl"), lines, "")
	r := diskRook(t, filepath.Join(h.dir, "store"))
	rep := mustImport(t, r, FormatClaudeCode, h.projects)
	return r, *rep.Files[0].Session, rep
}

// read is a workspace file's content.
func (h *historySession) read(name string) string {
	h.t.Helper()
	return readFileT(h.t, filepath.Join(h.ws, name))
}

// backup is one path a file-history snapshot names: its backup file's
// name ("" for none: null, the file did not exist) at a version.
type backup struct {
	path, name string
	version    int
}

// snapshot is a file-history-snapshot line naming backups.
func snapshot(mid string, backups ...backup) string {
	var entries []string
	for _, b := range backups {
		name := "null"
		if b.name != "" {
			name = fmt.Sprintf("%q", b.name)
		}
		entries = append(entries, fmt.Sprintf(`%q:{"backupFileName":%s,"version":%d,"backupTime":"2026-02-10T21:01:09.000Z"}`, b.path, name, b.version))
	}
	return fmt.Sprintf(`{"type":"file-history-snapshot","messageId":%q,"snapshot":{"messageId":%q,"trackedFileBackups":{%s},"timestamp":"2026-02-10T21:01:09.000Z"},"isSnapshotUpdate":false}`,
		mid, mid, strings.Join(entries, ","))
}

// checkpointSeqs are the seqs of a session's checkpoint events.
func checkpointSeqs(t *testing.T, r *Rook, id eventlog.ID) []uint64 {
	t.Helper()
	var seqs []uint64
	for _, ev := range mustEvents(t, r, id) {
		if ev.Kind == eventlog.KindCheckpoint {
			seqs = append(seqs, ev.Seq)
		}
	}
	return seqs
}

// mustEvents are a session's events, every one.
func mustEvents(t *testing.T, r *Rook, id eventlog.ID) []eventlog.Event {
	t.Helper()
	var evs []eventlog.Event
	if err := r.eachEvent(id, func(ev eventlog.Event) error {
		evs = append(evs, ev)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return evs
}

// fileWant is what a test wants a workspace file to hold, and its mode.
type fileWant struct {
	data string
	mode os.FileMode
}

func (h *historySession) checkFiles(what string, want map[string]fileWant) {
	h.t.Helper()
	for name, w := range want {
		fi, err := os.Stat(filepath.Join(h.ws, name))
		if err != nil {
			h.t.Fatal(err)
		}
		if got := h.read(name); got != w.data || fi.Mode().Perm() != w.mode {
			h.t.Errorf("%s %s: %q, mode %v; want %q, %v", name, what, got, fi.Mode().Perm(), w.data, w.mode)
		}
	}
}

// TestImportClaudeFileHistoryKeepsModes: Claude Code's file backups say
// what a file held, not its mode (a backup's own mode says nothing: 0777
// on some systems): diff shows an edited script's content change alone,
// not a mode change from the capture's placeholder 0644, and a rewind
// keeps each file's mode (a script stays executable, a private file
// private) as it keeps it for an edit result's state; so does `rook
// checkpoint restore` of the capture.
func TestImportClaudeFileHistoryKeepsModes(t *testing.T) {
	h := newHistorySession(t)
	writeTree(t, h.ws, tree{"run.sh": "echo two\n", "secret.txt": "key two\n"})
	writeTree(t, h.backups, tree{"h1@v1": "echo one\n", "h2@v1": "key one\n"})
	for p, mode := range map[string]os.FileMode{
		filepath.Join(h.ws, "run.sh"): 0o755, filepath.Join(h.ws, "secret.txt"): 0o600,
		filepath.Join(h.backups, "h1@v1"): 0o777, filepath.Join(h.backups, "h2@v1"): 0o777,
	} {
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	r, id, _ := h.imported(append(claudeLines("s1", 1), snapshot("m2", backup{"run.sh", "h1@v1", 1}, backup{"secret.txt", "h2@v1", 1})))
	var out bytes.Buffer
	d, err := r.Diff(id, &out, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Files) != 2 || strings.Contains(out.String(), "mode") {
		t.Fatalf("diff %+v\n%s", d.Files, out.String())
	}
	for _, f := range d.Files {
		if f.Status != "modified" || f.OldMode != f.NewMode {
			t.Errorf("%s: %+v", f.Path, f)
		}
	}
	before := map[string]fileWant{"run.sh": {"echo one\n", 0o755}, "secret.txt": {"key one\n", 0o600}}
	if _, err := r.Rewind(id, 0, false); err != nil {
		t.Fatal(err)
	}
	h.checkFiles("after the rewind", before)
	// `rook checkpoint restore` of the capture (by its object id).
	for name, data := range map[string]string{"run.sh": "echo two\n", "secret.txt": "key two\n"} {
		if err := os.WriteFile(filepath.Join(h.ws, name), []byte(data), 0o644); err != nil { // (its mode kept)
			t.Fatal(err)
		}
	}
	var capture cas.Key
	for _, ev := range mustEvents(t, r, id) {
		if ev.Kind == eventlog.KindCheckpoint && ev.Label == captureBackupsLabel {
			capture = ev.Body
		}
	}
	m, err := r.ReadManifest(capture)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.RestoreCheckpoint("", m, ""); err != nil {
		t.Fatal(err)
	}
	h.checkFiles("after the checkpoint restore", before)
}

// TestImportClaudeFileHistoryLinkRefused: a backup of a path a link stands
// at now is what the file the link leads to held (Claude Code reads
// through it): a rewind refuses to write it in the link's place, saying
// why, and changes nothing.
func TestImportClaudeFileHistoryLinkRefused(t *testing.T) {
	h := newHistorySession(t)
	writeTree(t, h.ws, tree{"target.txt": "two\n", "l.txt": "link:target.txt"})
	writeTree(t, h.backups, tree{"h1@v1": "one\n"})
	r, id, _ := h.imported(append(claudeLines("s1", 1), snapshot("m2", backup{"l.txt", "h1@v1", 1})))
	if _, err := r.Rewind(id, 0, false); err == nil || !strings.Contains(err.Error(), "cannot restore l.txt: a link is there now, and Claude Code's file backup says") {
		t.Fatalf("rewind: %v", err)
	}
	if target, err := os.Readlink(filepath.Join(h.ws, "l.txt")); err != nil || target != "target.txt" || h.read("target.txt") != "two\n" {
		t.Fatalf("the link after the refused rewind: %q %v", target, err)
	}
}

// TestDiffGoesOnPastAPathLeadingOutside: a captured path a link in the
// workspace now leads outside it through (a linked package) is not read
// through the link: it is named, with why, and every other file is
// compared (the whole diff failed on it).
func TestDiffGoesOnPastAPathLeadingOutside(t *testing.T) {
	h := newHistorySession(t)
	writeTree(t, h.ws, tree{"a.txt": "a new\n", "shared": "link:../shared"})
	writeTree(t, filepath.Join(h.dir, "shared"), tree{"x.txt": "x new\n"})
	writeTree(t, h.backups, tree{"a@v1": "a old\n", "x@v1": "x old\n"})
	r, id, _ := h.imported(append(claudeLines("s1", 1), snapshot("m2", backup{"a.txt", "a@v1", 1}, backup{"shared/x.txt", "x@v1", 1})))
	var out bytes.Buffer
	d, err := r.Diff(id, &out, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Files) != 1 || d.Files[0].Path != "a.txt" || !strings.Contains(out.String(), "-a old\n+a new\n") {
		t.Fatalf("diff %+v\n%s", d.Files, out.String())
	}
	if len(d.Uncompared) != 1 || d.Uncompared[0].Path != "shared/x.txt" || !strings.Contains(d.Uncompared[0].Error, "outside the workspace") {
		t.Fatalf("uncompared: %+v", d.Uncompared)
	}
}

// TestImportClaudeFileHistoryFirstBackupMissing: a file's first backup
// (@v1, the file before the session) named and not there, a later one
// (@v2, the file mid-session) there: diff and a rewind to the start took
// @v2 for the file before the session, saying nothing. The capture records
// the path's state as unknown (manifest version 5): diff and a rewind to
// before @v2 leave the file out, and name it; a rewind to @v2's line
// restores it; the missing backup put back, the next import takes it in
// and diff shows the whole change. The same with an edit result after the
// missing backup: its original is the file before the session (Claude
// Code backs a file up just before the edit whose result says what it
// was).
func TestImportClaudeFileHistoryFirstBackupMissing(t *testing.T) {
	h := newHistorySession(t)
	writeTree(t, h.ws, tree{"n.txt": "three\n", "k.txt": "k after\n", "e.txt": "e after\n"})
	writeTree(t, h.backups, tree{"n@v2": "two\n", "k@v1": "k before\n"})
	edit := &editTranscript{ws: h.ws}
	edit.edit(filepath.Join(h.ws, "e.txt"), "e before\n", "before", "after")
	var lines []string
	lines = append(lines, claudeLines("s1", 1)...)
	lines = append(lines, snapshot("m1", backup{"n.txt", "n@v1", 1}, backup{"k.txt", "k@v1", 1}, backup{"e.txt", "e@v1", 1}))
	lines = append(lines, edit.lines...)
	lines = append(lines, claudeLines("s1", 2)...)
	lines = append(lines, snapshot("m2", backup{"n.txt", "n@v2", 2}, backup{"k.txt", "k@v1", 1}))
	lines = append(lines, claudeLines("s1", 3)...)
	r, id, rep := h.imported(lines)
	if rep.BackupsMissing != 2 {
		t.Fatalf("missing backups: %d", rep.BackupsMissing)
	}
	caps := checkpointSeqs(t, r, id)
	if len(caps) != 2 {
		t.Fatalf("captures at %v", caps)
	}
	if m, err := r.ReadManifest(mustEvents(t, r, id)[caps[0]].Body); err != nil || m.V != 5 || !slices.Equal(m.Unknown, []string{"e.txt", "n.txt"}) {
		t.Fatalf("the first capture: %+v %v", m, err)
	}
	d, err := r.Diff(id, nil, false)
	if err != nil || len(d.Files) != 2 || d.Files[0].Path != "e.txt" || d.Files[1].Path != "k.txt" || d.FromTranscript != 1 {
		t.Fatalf("diff: %+v %v", d.Files, err)
	}
	// Left out, and said so.
	if len(d.Uncompared) != 1 || d.Uncompared[0].Path != "n.txt" || !strings.Contains(d.Uncompared[0].Error, "its Claude Code file backup could not be taken when the session was imported") {
		t.Fatalf("uncompared: %+v", d.Uncompared)
	}
	// A rewind to the start leaves n.txt as it is; one to the line of
	// @v2 (its capture follows it) puts @v2 back.
	rw, err := r.Rewind(id, 0, false)
	if err != nil || h.read("n.txt") != "three\n" || h.read("k.txt") != "k before\n" || h.read("e.txt") != "e before\n" {
		t.Fatalf("rewind to 0: %+v %v", rw, err)
	}
	if len(rw.NotRestored) != 1 || rw.NotRestored[0].Path != "n.txt" {
		t.Fatalf("not restored: %+v", rw.NotRestored)
	}
	writeTree(t, h.ws, tree{"k.txt": "k after\n", "e.txt": "e after\n"})
	if _, err := r.Rewind(id, caps[1]-1, false); err != nil || h.read("n.txt") != "two\n" {
		t.Fatalf("rewind to @v2's line: %v, n.txt %q", err, h.read("n.txt"))
	}
	writeTree(t, h.ws, tree{"n.txt": "three\n"})
	// The missing backup put back: the next import takes it in.
	writeTree(t, h.backups, tree{"n@v1": "one\n"})
	mustImport(t, r, FormatClaudeCode, h.projects)
	var out bytes.Buffer
	if d, err := r.Diff(id, &out, false); err != nil || len(d.Files) != 3 || !strings.Contains(out.String(), "-one\n+three\n") {
		t.Fatalf("diff with @v1 put back: %+v %v\n%s", d.Files, err, out.String())
	}
}

// TestImportClaudeFileHistoryAbsentAgain: a file the agent created (no
// backup, version 1), that existed at the next snapshot (@v2) and was
// gone at the one after (no backup, version 3), then made again: the
// third snapshot's absence was taken for the first named again, and not
// captured, so a rewind to before the file was made again left it there.
func TestImportClaudeFileHistoryAbsentAgain(t *testing.T) {
	h := newHistorySession(t)
	writeTree(t, h.ws, tree{"p.txt": "p made again\n"})
	writeTree(t, h.backups, tree{"p@v2": "p first made\n"})
	var lines []string
	for turn, name := range []string{"", "p@v2", ""} {
		lines = append(lines, snapshot(fmt.Sprintf("m%d", turn+1), backup{"p.txt", name, turn + 1}))
		lines = append(lines, claudeLines("s1", turn+1)...)
	}
	r, id, _ := h.imported(lines)
	caps := checkpointSeqs(t, r, id)
	if len(caps) != 3 {
		t.Fatalf("captures at %v, want one at each snapshot", caps)
	}
	// A rewind to the third snapshot's line: p.txt was gone then.
	if _, err := r.Rewind(id, caps[2]-1, false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(h.ws, "p.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("p.txt after the rewind to before it was made again: %v", err)
	}
	// To the second's: as it was then.
	if _, err := r.Rewind(id, caps[1]-1, false); err != nil || h.read("p.txt") != "p first made\n" {
		t.Fatalf("rewind to the second snapshot: %v", err)
	}
}

// TestImportClaudeFileHistoryEveryBackupMissing: a session whose every
// backup is missing (its file-history directory there, holding others')
// has a capture recording only unknown states: it puts nothing back, so
// diff and rewind say, as of a session without backups, that there is
// nothing to compare or put back (it said "changed nothing on disk", and
// the rewind applied "1 checkpoint"), and diff names the file it leaves
// out.
func TestImportClaudeFileHistoryEveryBackupMissing(t *testing.T) {
	h := newHistorySession(t)
	writeTree(t, h.ws, tree{"a.txt": "a after\n"})
	writeTree(t, h.backups, tree{"other@v1": "another's\n"})
	r, id, _ := h.imported(append(claudeLines("s1", 1), snapshot("m1", backup{"a.txt", "a@v1", 1})))
	d, err := r.Diff(id, nil, false)
	if err != nil || d.Captures != 0 || len(d.Files) != 0 || len(d.Uncompared) != 1 || d.Uncompared[0].Path != "a.txt" {
		t.Fatalf("diff: %+v %v", d, err)
	}
	var nb *NoFileBackupsError
	if _, err := r.Rewind(id, 0, false); !errors.As(err, &nb) {
		t.Fatalf("rewind: %v", err)
	}
}

// fhTranscript builds a Claude Code transcript as Claude Code writes one
// with file checkpointing on: at each user prompt a file-history-snapshot
// line (isSnapshotUpdate false) naming every tracked file's backup, just
// before the prompt's line; mid-turn updates (isSnapshotUpdate true) for
// a file first edited in the turn.
type fhTranscript struct {
	ws    string
	lines []string
	n     int
}

func (f *fhTranscript) ts() string {
	f.n++
	return fmt.Sprintf("2026-02-10T21:%02d:%02d.000Z", f.n/60, f.n%60)
}

func (f *fhTranscript) env() string {
	return fmt.Sprintf(`"sessionId":"s1","cwd":%q,"version":"2.1.38"`, f.ws)
}

// snap is a file-history-snapshot line for message mid: backups maps a
// path to its backup file name ("" for null) and version.
func (f *fhTranscript) snap(mid string, update bool, backups ...backup) {
	t := f.ts()
	var entries []string
	for _, b := range backups {
		name := "null"
		if b.name != "" {
			name = jsonq(b.name)
		}
		entries = append(entries, fmt.Sprintf(`%s:{"backupFileName":%s,"version":%d,"backupTime":%q}`, jsonq(b.path), name, b.version, t))
	}
	f.lines = append(f.lines, fmt.Sprintf(`{"type":"file-history-snapshot","messageId":%q,"snapshot":{"messageId":%q,"trackedFileBackups":{%s},"timestamp":%q},"isSnapshotUpdate":%v}`,
		mid, mid, strings.Join(entries, ","), t, update))
}

func (f *fhTranscript) user(uuid, text string) {
	f.lines = append(f.lines, fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":%s},"uuid":%q,"timestamp":%q}`, f.env(), jsonq(text), uuid, f.ts()))
}

// call is an assistant tool_use line.
func (f *fhTranscript) call(id, tool, input string) {
	f.lines = append(f.lines, fmt.Sprintf(`{"type":"assistant",%s,"message":{"model":"claude-opus-4-6","id":"msg_%s","role":"assistant","content":[{"type":"tool_use","id":%q,"name":%q,"input":%s}]},"uuid":"a%s","timestamp":%q}`,
		f.env(), id, id, tool, input, id, f.ts()))
}

// result is the user line with the tool_result of call id.
func (f *fhTranscript) result(id, toolUseResult string) {
	f.lines = append(f.lines, fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":[{"tool_use_id":%q,"type":"tool_result","content":"ok","is_error":false}]},"toolUseResult":%s,"uuid":"r%s","timestamp":%q}`,
		f.env(), id, toolUseResult, id, f.ts()))
}

// seqOfUser is the seq of the user prompt event whose text is text.
func seqOfUser(t *testing.T, r *Rook, id eventlog.ID, text string) uint64 {
	t.Helper()
	for _, ev := range mustEvents(t, r, id) {
		if ev.Kind != eventlog.KindUser {
			continue
		}
		body, err := r.Store.Get(ev.Body)
		if err == nil && strings.Contains(string(body), text) {
			return ev.Seq
		}
	}
	t.Fatalf("no user event %q", text)
	return 0
}

// TestRewindToAPromptPutsBackTheSnapshotTakenForIt: Claude Code writes the
// file-history snapshot of a prompt just before the prompt's line: the
// files as they were when the prompt was sent (a file a Bash command of
// the turn before changed, or the user by hand, backed up again, @v2).
// A rewind to that prompt (the conversation before it, as Claude Code's
// /rewind to a message) must put a.txt back as that snapshot says: the
// snapshot's capture stands just before the prompt, with nothing between
// that could change a file, so it is a state at the point (pointLead),
// not the next one (@v3, after the turn's `sed -i`).
func TestRewindToAPromptPutsBackTheSnapshotTakenForIt(t *testing.T) {
	h := newHistorySession(t)
	writeTree(t, h.ws, tree{"a.txt": "three\n"})
	writeTree(t, h.backups, tree{"a@v1": "one\n", "a@v2": "two\n", "a@v3": "three\n"})
	a := filepath.Join(h.ws, "a.txt")
	f := &fhTranscript{ws: h.ws}
	f.snap("u1", false)
	f.user("u1", "change one to two")
	f.call("t1", "Edit", fmt.Sprintf(`{"file_path":%s,"old_string":"one","new_string":"two"}`, jsonq(a)))
	f.snap("u1", true, backup{"a.txt", "a@v1", 1})
	f.result("t1", fmt.Sprintf(`{"filePath":%s,"oldString":"one","newString":"two","originalFile":"one\n","structuredPatch":[],"userModified":false,"replaceAll":false}`, jsonq(a)))
	f.snap("u2", false, backup{"a.txt", "a@v2", 2})
	f.user("u2", "now make it three with sed")
	f.call("t2", "Bash", `{"command":"sed -i s/two/three/ a.txt"}`)
	f.result("t2", `{"stdout":"","stderr":"","interrupted":false}`)
	f.snap("u3", false, backup{"a.txt", "a@v3", 3})
	f.user("u3", "thanks")
	r, id, _ := h.imported(f.lines)

	to := seqOfUser(t, r, id, "now make it three with sed")
	rep, err := r.Rewind(id, to, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.read("a.txt"); got != "two\n" {
		t.Fatalf("a.txt after a rewind to the prompt its snapshot (@v2, \"two\") was taken for: %q (files restored %d, disk changed %v)", got, rep.FilesRestored, rep.DiskChanged)
	}
}

// delta is a file-history-delta line (Claude Code 2.1.220 on writes a
// back-fill of a prompt's snapshot so, rather than the whole snapshot
// again with isSnapshotUpdate: peers.md, section 3.1): path's backup,
// made before the turn's first edit of it.
func (f *fhTranscript) delta(mid, path, name string, version int) {
	t := f.ts()
	bn := "null"
	if name != "" {
		bn = jsonq(name)
	}
	f.lines = append(f.lines, fmt.Sprintf(`{"type":"file-history-delta","messageId":%q,"snapshotMessageId":%q,"trackingPath":%s,"backup":{"backupFileName":%s,"version":%d,"backupTime":%q,"realParentDir":%s},"sessionId":"s1","timestamp":%q}`,
		mid, mid, jsonq(path), bn, version, t, jsonq(f.ws), t))
}

// TestRewindPutsBackABackupNamedInAFileHistoryDelta: a newer Claude Code
// names the backup of a file first edited in a turn in a
// file-history-delta line, not in a snapshot update. The backup is in
// the session's file-history directory like any other, and README says
// Claude Code's file backups become captures, so rewind puts the file
// back. Were the line a note, the notebook's first state known would be
// the next prompt's snapshot (@v2, the notebook after the NotebookEdit,
// whose result rook does not read for a state), taken for the file
// before the session: the rewind to the start would leave the edit in
// place and say nothing (the very thing README says a missing first
// backup must not do).
func TestRewindPutsBackABackupNamedInAFileHistoryDelta(t *testing.T) {
	h := newHistorySession(t)
	writeTree(t, h.ws, tree{"nb.ipynb": "{\"cells\":[\"after\"]}\n"})
	writeTree(t, h.backups, tree{"nb@v1": "{\"cells\":[\"before\"]}\n"})
	nb := filepath.Join(h.ws, "nb.ipynb")
	f := &fhTranscript{ws: h.ws}
	f.snap("u1", false)
	f.user("u1", "fix the notebook")
	f.call("t1", "NotebookEdit", fmt.Sprintf(`{"notebook_path":%s,"cell_id":"c1","new_source":"after"}`, jsonq(nb)))
	f.delta("u1", "nb.ipynb", "nb@v1", 1)
	f.result("t1", fmt.Sprintf(`{"new_source":"after","cell_id":"c1","cell_type":"code","language":"python","edit_mode":"replace","error":"","notebook_path":%s}`, jsonq(nb)))
	f.snap("u2", false, backup{"nb.ipynb", "nb@v2", 2})
	writeTree(t, h.backups, tree{"nb@v2": "{\"cells\":[\"after\"]}\n"})
	f.user("u2", "thanks")
	r, id, _ := h.imported(f.lines)
	if _, err := r.Rewind(id, 0, false); err != nil {
		t.Fatalf("rewind to the start: %v", err)
	}
	if got := h.read("nb.ipynb"); got != "{\"cells\":[\"before\"]}\n" {
		t.Fatalf("nb.ipynb after a rewind to the start: %q, want the backup the delta names", got)
	}
	// The delta's line is still exported as it was.
	mustExport(t, r, id, writeSourceBytes(f.lines, ""))
}

// TestRewindUndoKeepsAHandEditToACreatedFile: a file the agent created
// (backup null) that the user then edited by hand after the last
// snapshot is removed by a rewind to before it was made, and the
// rewind's undo puts it back with the user's line.
func TestRewindUndoKeepsAHandEditToACreatedFile(t *testing.T) {
	h := newHistorySession(t)
	writeTree(t, h.ws, tree{"new.txt": "new1\nuser line\n"})
	writeTree(t, h.backups, tree{"new@v2": "new1\n"})
	nw := filepath.Join(h.ws, "new.txt")
	f := &fhTranscript{ws: h.ws}
	f.snap("u1", false)
	f.user("u1", "create new")
	f.call("t1", "Write", fmt.Sprintf(`{"file_path":%s,"content":"new1\n"}`, jsonq(nw)))
	f.snap("u1", true, backup{"new.txt", "", 1})
	f.result("t1", fmt.Sprintf(`{"type":"create","filePath":%s,"content":"new1\n","structuredPatch":[],"originalFile":null}`, jsonq(nw)))
	f.snap("u2", false, backup{"new.txt", "new@v2", 2})
	f.user("u2", "thanks")
	r, id, _ := h.imported(f.lines)
	rw, err := r.Rewind(id, 0, false)
	if err != nil || rw.FilesRemoved != 1 || rw.BeforeSeq == nil {
		t.Fatalf("rewind: %+v %v", rw, err)
	}
	if _, err := r.Rewind(rw.Fork, *rw.BeforeSeq, false); err != nil {
		t.Fatal(err)
	}
	if got := h.read("new.txt"); got != "new1\nuser line\n" {
		t.Fatalf("new.txt after the undo: %q", got)
	}
}

// TestDiffAndRewindNameABackedUpFileOutsideTheWorkspace: Claude Code
// backs up (and its /rewind restores) a file its Edit changed outside the
// session's cwd, naming it in trackedFileBackups by its absolute path.
// Rook writes nothing outside the workspace, so it does not capture it;
// but `session diff` and a rewind to the start must name it (uncompared,
// not restored: outside_workspace, as a Codex session's diff names such a
// file), not report "1 file(s) changed" and "1 file(s) restored" as if
// the session had changed nothing else.
func TestDiffAndRewindNameABackedUpFileOutsideTheWorkspace(t *testing.T) {
	h := newHistorySession(t)
	shared := filepath.Join(h.dir, "shared")
	writeTree(t, h.ws, tree{"a.txt": "a1\n"})
	writeTree(t, shared, tree{"x.txt": "x1\n"})
	writeTree(t, h.backups, tree{"x@v1": "x0\n", "a@v1": "a0\n", "x@v2": "x1\n", "a@v2": "a1\n"})
	x, a := filepath.Join(shared, "x.txt"), filepath.Join(h.ws, "a.txt")
	f := &fhTranscript{ws: h.ws}
	f.snap("u1", false)
	f.user("u1", "edit x and a")
	f.call("t1", "Edit", fmt.Sprintf(`{"file_path":%s,"old_string":"x0","new_string":"x1"}`, jsonq(x)))
	f.snap("u1", true, backup{x, "x@v1", 1})
	f.result("t1", fmt.Sprintf(`{"filePath":%s,"oldString":"x0","newString":"x1","originalFile":"x0\n","structuredPatch":[],"userModified":false,"replaceAll":false}`, jsonq(x)))
	f.call("t2", "Edit", fmt.Sprintf(`{"file_path":%s,"old_string":"a0","new_string":"a1"}`, jsonq(a)))
	f.snap("u1", true, backup{x, "x@v1", 1}, backup{"a.txt", "a@v1", 1})
	f.result("t2", fmt.Sprintf(`{"filePath":%s,"oldString":"a0","newString":"a1","originalFile":"a0\n","structuredPatch":[],"userModified":false,"replaceAll":false}`, jsonq(a)))
	f.snap("u2", false, backup{x, "x@v2", 2}, backup{"a.txt", "a@v2", 2})
	f.user("u2", "thanks")
	r, id, _ := h.imported(f.lines)
	named := func(uncompared []UncomparedFile, notes []string) bool {
		for _, u := range uncompared {
			if strings.Contains(u.Path, "x.txt") {
				return true
			}
		}
		for _, n := range notes {
			if strings.Contains(n, "x.txt") {
				return true
			}
		}
		return false
	}
	d, err := r.Diff(id, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if !named(d.Uncompared, d.Notes) {
		t.Errorf("the diff (files %+v) neither shows nor names %s, which the session changed and Claude Code backed up", d.Files, x)
	}
	rw, err := r.Rewind(id, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if readFileT(t, x) != "x0\n" && !named(rw.NotRestored, rw.Notes) {
		t.Errorf("the rewind to the start left %s as the agent made it (%q) and said nothing of it (restored %d)", x, readFileT(t, x), rw.FilesRestored)
	}
}

// TestRewindToAPromptBringsBackAFileItsTurnDeleted: the same, worse:
// a.txt (edited in the first turn, backed up again at the second prompt,
// @v2) is deleted by the second turn's `rm` and the session ends there.
// A rewind to the second prompt must bring a.txt back as @v2 says: no
// state of a.txt stands at or after the point, the snapshot's just
// before it alone.
func TestRewindToAPromptBringsBackAFileItsTurnDeleted(t *testing.T) {
	h := newHistorySession(t)
	writeTree(t, h.ws, tree{"keep.txt": "k\n"})
	writeTree(t, h.backups, tree{"a@v1": "one\n", "a@v2": "two\n"})
	a := filepath.Join(h.ws, "a.txt")
	f := &fhTranscript{ws: h.ws}
	f.snap("u1", false)
	f.user("u1", "change one to two")
	f.call("t1", "Edit", fmt.Sprintf(`{"file_path":%s,"old_string":"one","new_string":"two"}`, jsonq(a)))
	f.snap("u1", true, backup{"a.txt", "a@v1", 1})
	f.result("t1", fmt.Sprintf(`{"filePath":%s,"oldString":"one","newString":"two","originalFile":"one\n","structuredPatch":[],"userModified":false,"replaceAll":false}`, jsonq(a)))
	f.snap("u2", false, backup{"a.txt", "a@v2", 2})
	f.user("u2", "remove it")
	f.call("t2", "Bash", `{"command":"rm a.txt"}`)
	f.result("t2", `{"stdout":"","stderr":"","interrupted":false}`)
	r, id, _ := h.imported(f.lines)

	rep, err := r.Rewind(id, seqOfUser(t, r, id, "remove it"), false)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(a); err != nil || string(got) != "two\n" {
		t.Fatalf("a.txt after a rewind to the prompt that deleted it: %q, %v (files restored %d)", got, err, rep.FilesRestored)
	}
}

// TestRewindToAPromptUndoPutsBackTheDiskBefore: the undo of a rewind to a
// prompt (the rewind's fork, to its capture of the disk before) writes
// the disk back as it was, not the prompt's snapshot: the events before
// that capture are the parent's, which the disk had moved on from.
func TestRewindToAPromptUndoPutsBackTheDiskBefore(t *testing.T) {
	h := newHistorySession(t)
	writeTree(t, h.ws, tree{"a.txt": "three\n"})
	writeTree(t, h.backups, tree{"a@v1": "one\n", "a@v2": "two\n", "a@v3": "three\n"})
	f := &fhTranscript{ws: h.ws}
	f.snap("u1", false, backup{"a.txt", "a@v1", 1})
	f.user("u1", "hello")
	f.snap("u2", false, backup{"a.txt", "a@v2", 2})
	f.user("u2", "now make it three with sed")
	f.call("t2", "Bash", `{"command":"sed -i s/two/three/ a.txt"}`)
	f.result("t2", `{"stdout":"","stderr":"","interrupted":false}`)
	f.snap("u3", false, backup{"a.txt", "a@v3", 3})
	f.user("u3", "thanks")
	r, id, _ := h.imported(f.lines)
	rw, err := r.Rewind(id, seqOfUser(t, r, id, "now make it three with sed"), false)
	if err != nil || rw.BeforeSeq == nil || h.read("a.txt") != "two\n" {
		t.Fatalf("rewind: %+v %v, a.txt %q", rw, err, h.read("a.txt"))
	}
	if _, err := r.Rewind(rw.Fork, *rw.BeforeSeq, false); err != nil {
		t.Fatal(err)
	}
	if got := h.read("a.txt"); got != "three\n" {
		t.Fatalf("a.txt after the undo: %q, want the disk before the rewind", got)
	}
}

// TestRewindPastACommandTakesNoSnapshotFromBeforeIt: a prompt's snapshot
// is the files at the point only while nothing that could change one
// stands between: a tool call (its command runs before its result), or a
// command the user ran from the prompt (`!`, a <bash-input> line, which
// Claude Code does not back up). A rewind to a point after either leaves
// a.txt as the next state says (@v3, "three"), not the snapshot's "two".
func TestRewindPastACommandTakesNoSnapshotFromBeforeIt(t *testing.T) {
	for _, tc := range []struct {
		name string
		turn func(f *fhTranscript)
		to   string // the text of the user line the rewind is to (after the command)
	}{
		{"tool call", func(f *fhTranscript) {
			f.user("u2", "now make it three with sed")
			f.call("t2", "Bash", `{"command":"sed -i s/two/three/ a.txt"}`)
			f.result("t2", `{"stdout":"","stderr":"","interrupted":false}`)
		}, `"tool_use_id":"t2"`},
		{"bash mode", func(f *fhTranscript) {
			f.user("u2", "<bash-input>sed -i s/two/three/ a.txt</bash-input>")
			f.user("u2o", "<bash-stdout></bash-stdout><bash-stderr></bash-stderr>")
		}, "<bash-stdout>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHistorySession(t)
			writeTree(t, h.ws, tree{"a.txt": "three\n"})
			writeTree(t, h.backups, tree{"a@v2": "two\n", "a@v3": "three\n"})
			f := &fhTranscript{ws: h.ws}
			f.snap("u1", false)
			f.user("u1", "hello")
			f.snap("u2", false, backup{"a.txt", "a@v2", 2})
			tc.turn(f)
			f.snap("u3", false, backup{"a.txt", "a@v3", 3})
			f.user("u3", "thanks")
			r, id, _ := h.imported(f.lines)
			to := uint64(0)
			for _, ev := range mustEvents(t, r, id) {
				if body, err := r.Body(ev); err == nil && strings.Contains(string(body), tc.to) && to == 0 {
					to = ev.Seq
				}
			}
			if to == 0 {
				t.Fatalf("no event holds %s", tc.to)
			}
			if _, err := r.Rewind(id, to, false); err != nil {
				t.Fatal(err)
			}
			if got := h.read("a.txt"); got != "three\n" {
				t.Fatalf("a.txt after a rewind to #%d, after the command: %q, want it as it was then (@v3)", to, got)
			}
		})
	}
}

// TestDiffNamesAFileADeltaBacksUpOutsideTheWorkspace: a delta whose
// relative trackingPath is not named from the directory its
// realParentDir says (../shared/x.txt, in shared) is of the file in
// realParentDir: outside the workspace, named by the diff, with
// outside_workspace, and not captured.
func TestDiffNamesAFileADeltaBacksUpOutsideTheWorkspace(t *testing.T) {
	h := newHistorySession(t)
	shared := filepath.Join(h.dir, "shared")
	writeTree(t, shared, tree{"x.txt": "x1\n"})
	writeTree(t, h.ws, tree{"a.txt": "a1\n"})
	writeTree(t, h.backups, tree{"x@v1": "x0\n", "a@v1": "a0\n"})
	f := &fhTranscript{ws: h.ws}
	f.snap("u1", false)
	f.user("u1", "edit x and a")
	f.call("t1", "Edit", fmt.Sprintf(`{"file_path":%s,"old_string":"x0","new_string":"x1"}`, jsonq(filepath.Join(shared, "x.txt"))))
	f.lines = append(f.lines, fmt.Sprintf(`{"type":"file-history-delta","messageId":"u1","snapshotMessageId":"u1","trackingPath":"../shared/x.txt","backup":{"backupFileName":"x@v1","version":1,"backupTime":"2026-02-10T21:00:00.000Z","realParentDir":%s}}`, jsonq(shared)))
	f.result("t1", `{"stdout":"","stderr":"","interrupted":false}`)
	f.delta("u1", "a.txt", "a@v1", 1)
	f.user("u2", "thanks")
	r, id, _ := h.imported(f.lines)
	d, err := r.Diff(id, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []UncomparedFile{{Path: filepath.Join(shared, "x.txt"), Error: outsideWhy, Outside: true}}
	if !slices.Equal(d.Uncompared, want) || len(d.Files) != 1 || d.Files[0].Path != "a.txt" {
		t.Fatalf("diff: files %+v, uncompared %+v; want a.txt changed and %+v", d.Files, d.Uncompared, want)
	}
}

func TestClaudeDeltaPath(t *testing.T) {
	for _, tc := range []struct{ tracking, parent, want string }{
		{"src/a.go", "/w/src", "src/a.go"},       // named from the cwd, as a snapshot's
		{"a.go", "/w", "a.go"},                   // at the top
		{"a.go", "", "a.go"},                     // no parent said
		{"/o/a.go", "/o", "/o/a.go"},             // absolute
		{"../o/a.go", "/o", "/o/a.go"},           // not named from where the parent says
		{"src/a.go", "/w/lib", "/w/lib/a.go"},    // likewise
		{"src/a.go", "relative/src", "src/a.go"}, // a parent not absolute says nothing
		{"deep/src/a.go", "/w/deep/src", "deep/src/a.go"},
	} {
		if got := claudeDeltaPath(tc.tracking, tc.parent); got != tc.want {
			t.Errorf("claudeDeltaPath(%q, %q) = %q, want %q", tc.tracking, tc.parent, got, tc.want)
		}
	}
}

// TestRewindToAPromptTakesItsSnapshotsLateBackup: the backup a prompt's
// snapshot names, not there when the session was imported and put there
// since, is taken in by the next import as a late capture standing where
// the capture would have (just before the prompt): a rewind to the prompt
// puts the file back as it says, over the earlier snapshot's backup
// (@v1, the file before the user changed it by hand) and the later one
// (@v3, after the turn's `sed -i`).
func TestRewindToAPromptTakesItsSnapshotsLateBackup(t *testing.T) {
	h := newHistorySession(t)
	writeTree(t, h.ws, tree{"a.txt": "three\n"})
	writeTree(t, h.backups, tree{"a@v1": "one\n", "a@v3": "three\n"})
	f := &fhTranscript{ws: h.ws}
	f.snap("u1", false, backup{"a.txt", "a@v1", 1})
	f.user("u1", "hello")
	f.snap("u2", false, backup{"a.txt", "a@v2", 2})
	f.user("u2", "now make it three with sed")
	f.call("t2", "Bash", `{"command":"sed -i s/two/three/ a.txt"}`)
	f.result("t2", `{"stdout":"","stderr":"","interrupted":false}`)
	f.snap("u3", false, backup{"a.txt", "a@v3", 3})
	f.user("u3", "thanks")
	r, id, _ := h.imported(f.lines)
	writeTree(t, h.backups, tree{"a@v2": "two\n"})
	mustImport(t, r, FormatClaudeCode, h.projects)
	to := seqOfUser(t, r, id, "now make it three with sed")
	if ats := lateAts(t, r, id); !slices.Contains(ats, to-1) {
		t.Fatalf("late captures at %v, want one at #%d (the prompt's snapshot's)", ats, to-1)
	}
	if _, err := r.Rewind(id, to, false); err != nil {
		t.Fatal(err)
	}
	if got := h.read("a.txt"); got != "two\n" {
		t.Fatalf("a.txt after a rewind to the prompt: %q, want its snapshot's late backup (@v2)", got)
	}
}
