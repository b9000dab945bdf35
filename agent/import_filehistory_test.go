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
