package agent

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// tree is a workspace's files: path -> content, with "mode:0755" or
// "link:target" prefixes for modes and links.
type tree map[string]string

func writeTree(t *testing.T, root string, tr tree) {
	t.Helper()
	for p, c := range tr {
		abs := filepath.Join(root, p)
		os.MkdirAll(filepath.Dir(abs), 0o755)
		switch {
		case strings.HasPrefix(c, "link:"):
			if err := os.Symlink(strings.TrimPrefix(c, "link:"), abs); err != nil {
				t.Fatal(err)
			}
		case strings.HasPrefix(c, "mode:0755:"):
			os.WriteFile(abs, []byte(strings.TrimPrefix(c, "mode:0755:")), 0o755)
			os.Chmod(abs, 0o755)
		default:
			os.WriteFile(abs, []byte(c), 0o644)
			os.Chmod(abs, 0o644)
		}
	}
}

// readTree reads every file under root back into a tree.
func readTree(t *testing.T, root string) tree {
	t.Helper()
	out := tree{}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fi, _ := os.Lstat(p)
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			out[rel] = "link:" + l
		case fi.Mode().Perm()&0o111 != 0:
			b, _ := os.ReadFile(p)
			out[rel] = "mode:0755:" + string(b)
		default:
			b, _ := os.ReadFile(p)
			out[rel] = string(b)
		}
		return nil
	})
	return out
}

func sameTree(t *testing.T, what string, got, want tree) {
	t.Helper()
	var diffs []string
	for p, w := range want {
		if g, ok := got[p]; !ok {
			diffs = append(diffs, "missing "+p)
		} else if g != w {
			diffs = append(diffs, "differs "+p)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			diffs = append(diffs, "extra "+p)
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Fatalf("%s: %s", what, strings.Join(diffs, ", "))
	}
}

func newWorkspace(t *testing.T) (*Rook, string, eventlog.ID) {
	t.Helper()
	dir := t.TempDir()
	home := filepath.Join(dir, "store")
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o755)
	if _, err := cas.Init(vfs.OS, nil, home); err != nil {
		t.Fatal(err)
	}
	r, err := Open(home, Options{Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	m, err := r.NewSession("edit", ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r, ws, m.ID
}

func TestCaptureDiffRewindUndo(t *testing.T) {
	r, ws, id := newWorkspace(t)
	before := tree{
		"keep.txt":        "unchanged\n",
		"edit.go":         "package main\n\nfunc main() {\n\tprintln(\"one\")\n}\n",
		"gone.txt":        "to be deleted\n",
		"run.sh":          "#!/bin/sh\necho hi\n",
		"old/name.txt":    "renamed later\n",
		"written-back.md": "same bytes\n",
		"ln":              "link:keep.txt",
	}
	writeTree(t, ws, before)
	r.Append(id, Entry{Kind: eventlog.KindUser, Body: []byte("please edit")})
	// The agent captures before each tool call, then changes things.
	if _, _, err := r.CaptureSession(id, []string{"edit.go", "gone.txt", "run.sh", "written-back.md", "new.txt", "old/name.txt", "new/name.txt", "ln"}, "edit", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws, "edit.go"), []byte("package main\n\nfunc main() {\n\tprintln(\"two\")\n}\n"), 0o644)
	os.Remove(filepath.Join(ws, "gone.txt"))
	os.Chmod(filepath.Join(ws, "run.sh"), 0o755)
	os.WriteFile(filepath.Join(ws, "new.txt"), []byte("brand new\n"), 0o644)
	os.MkdirAll(filepath.Join(ws, "new"), 0o755)
	os.Rename(filepath.Join(ws, "old/name.txt"), filepath.Join(ws, "new/name.txt"))
	os.WriteFile(filepath.Join(ws, "written-back.md"), []byte("changed\n"), 0o644)
	// A second capture of an already captured path: an intermediate
	// state, not the baseline.
	r.CaptureSession(id, []string{"written-back.md"}, "again", DefaultLimits)
	os.WriteFile(filepath.Join(ws, "written-back.md"), []byte("same bytes\n"), 0o644)
	r.Append(id, Entry{Kind: eventlog.KindAssistant, Body: []byte("done")})
	after := readTree(t, ws)

	var patch bytes.Buffer
	d, err := r.Diff(id, &patch, false)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range d.Files {
		got[f.Path] = f.Status
	}
	want := map[string]string{"edit.go": "modified", "gone.txt": "removed", "run.sh": "modified", "new.txt": "added", "old/name.txt": "removed", "new/name.txt": "added"}
	if len(got) != len(want) {
		t.Fatalf("diff files %v, want %v", got, want)
	}
	for p, s := range want {
		if got[p] != s {
			t.Fatalf("diff %s: %q, want %q (all: %v)", p, got[p], s, got)
		}
	}
	if !strings.Contains(patch.String(), "old mode 100644\nnew mode 100755") {
		t.Fatalf("no mode change in the patch:\n%s", patch.String())
	}

	// Rewind to before the first capture: the tree comes back exactly.
	rep, err := r.Rewind(id, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after rewind", readTree(t, ws), before)
	if rep.Undo == "" || rep.BeforeSeq == nil || *rep.BeforeSeq != 1 {
		t.Fatalf("report %+v", rep)
	}
	// The parent is intact.
	if s, _ := r.Log.Summary(id); s.Events != 4 {
		t.Fatalf("parent has %d events", s.Events)
	}
	// The undo puts the post-session tree back.
	if _, err := r.Rewind(rep.Fork, *rep.BeforeSeq, false); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after undo", readTree(t, ws), after)
}

func TestEscapesAreRefused(t *testing.T) {
	r, ws, id := newWorkspace(t)
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("x"), 0o644)
	os.Symlink(outside, filepath.Join(ws, "out"))
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(ws, "secretlink"))
	for _, p := range []string{"../x", "/etc/passwd", "out/secret", "a/../../x"} {
		_, _, err := r.CaptureSession(id, []string{p}, "", DefaultLimits)
		var esc *EscapeError
		if !errors.As(err, &esc) {
			t.Fatalf("capture %q: %v", p, err)
		}
		if !strings.Contains(err.Error(), "outside the workspace") {
			t.Fatalf("capture %q: %v", p, err)
		}
	}
	// A link named itself is recorded as the link, wherever it leads:
	// its target is text, nothing outside is read.
	_, m, err := r.CaptureSession(id, []string{"secretlink", "out"}, "", DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"secretlink", "out"} {
		if f, ok := m.Files[p]; !ok || !f.Mode.Link {
			t.Fatalf("%s captured as %+v", p, m.Files[p])
		}
	}
	// A manifest naming .. is refused before anything is written.
	if _, err := DecodeManifest([]byte(`{"v":1,"root":"/w","files":{"../x":{"id":"` + strings.Repeat("0", 64) + `","size":0,"mode":"0644"}}}`)); !errors.Is(err, ErrBadManifest) {
		t.Fatalf("manifest with ..: %v", err)
	}
}

func TestCaptureBoundsAndDedup(t *testing.T) {
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"a.txt": "aaaa", "b.txt": "bbbb", "c.txt": "cccc", "big.bin": strings.Repeat("z", 5000)})
	_, _, err := r.CaptureSession(id, []string{"a.txt", "b.txt", "c.txt"}, "", Limits{MaxFiles: 2})
	var le *LimitError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "--max-files") {
		t.Fatalf("files bound: %v", err)
	}
	if _, _, err := r.CaptureSession(id, []string{"big.bin"}, "", Limits{MaxFileBytes: 1000}); !errors.As(err, &le) || !strings.Contains(err.Error(), "--max-file-bytes") {
		t.Fatalf("file size bound: %v", err)
	}
	if _, _, err := r.CreateCheckpoint("cp", ws, "", Limits{MaxBytes: 100}); !errors.As(err, &le) || !strings.Contains(err.Error(), "--max-bytes") {
		t.Fatalf("total bound: %v", err)
	}
	if _, _, err := r.CreateCheckpoint("cp", ws, "", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	r.Store.Sync()
	st1, _ := r.Store.Stats()
	if _, _, err := r.CreateCheckpoint("cp", ws, "", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	r.Store.Sync()
	st2, _ := r.Store.Stats()
	files := func(st cas.Stats) int64 {
		for _, k := range st.Kinds {
			if k.Kind == "file" {
				return k.Objects
			}
		}
		return 0
	}
	if files(st1) != files(st2) || files(st1) != 4 {
		t.Fatalf("re-capture of an unchanged tree: file objects %d then %d", files(st1), files(st2))
	}
}

func TestCheckpointHonoursGitignoreAndExcludes(t *testing.T) {
	r, ws, _ := newWorkspace(t)
	writeTree(t, ws, tree{
		".gitignore":            "*.log\n/secret/\n",
		"main.go":               "package main\n",
		"debug.log":             "noise",
		"secret/key":            "k",
		"node_modules/x/i.js":   "x",
		".git/HEAD":             "ref",
		"src/app.go":            "package src\n",
		"src/.gitignore":        "gen.go\n",
		"src/gen.go":            "generated",
		"target/debug/bin":      "b",
		"__pycache__/m.pyc":     "c",
		"docs/build/index.html": "h",
	})
	_, m, err := r.CreateCheckpoint("before-refactor", ws, "", DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for p := range m.Files {
		got = append(got, p)
	}
	sort.Strings(got)
	want := []string{".gitignore", "main.go", "src/.gitignore", "src/app.go"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("captured %v, want %v", got, want)
	}
	// Restore into another directory.
	dest := t.TempDir()
	_, m2, err := r.ResolveCheckpoint("before-refactor")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := r.RestoreCheckpoint("before-refactor", m2, dest)
	if err != nil || rep.Written != 4 {
		t.Fatalf("restore: %+v %v", rep, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dest, "src/app.go")); string(b) != "package src\n" {
		t.Fatalf("restored %q", b)
	}
	// Restoring over changed files saves them first.
	os.WriteFile(filepath.Join(ws, "main.go"), []byte("changed\n"), 0o644)
	rep, err = r.RestoreCheckpoint("before-refactor", m2, "")
	if err != nil || rep.Saved == "" {
		t.Fatalf("restore over a change: %+v %v", rep, err)
	}
	_, saved, err := r.ResolveCheckpoint(rep.Saved)
	if err != nil || len(saved.Files) != 1 {
		t.Fatalf("saved checkpoint: %v", err)
	}
}

// Asked for files, a rewind of an imported session whose transcript kept
// no copies of any (or of a fork of one) fails with NoFileBackupsError
// and makes no fork; --keep-files still rewinds its conversation, and a
// native session with no captures still rewinds with nothing to put back.
func TestRewindImportedWithoutBackups(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	src := "/p/s.jsonl"
	writeSource(t, fsys, src, claudeLines("s", 1), "")
	id := *fileByPath(t, mustImport(t, r, FormatClaudeCode, src), src).Session
	sessions := func() int {
		ids, err := r.Log.IDs()
		if err != nil {
			t.Fatal(err)
		}
		return len(ids)
	}
	before := sessions()
	var nb *NoFileBackupsError
	if _, err := r.Rewind(id, 2, false); !errors.As(err, &nb) || nb.Source.Format != FormatClaudeCode {
		t.Fatalf("rewind: %v, want a NoFileBackupsError", err)
	}
	if n := sessions(); n != before {
		t.Fatalf("%d sessions after a failed rewind, %d before", n, before)
	}
	rep, err := r.Rewind(id, 2, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Rewind(rep.Fork, 1, false); !errors.As(err, &nb) {
		t.Fatalf("rewind of a fork: %v, want a NoFileBackupsError", err)
	}
	native, err := r.NewSession("native", "/w", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Append(native.ID, Entry{Kind: eventlog.KindUser, Body: []byte("hi")}); err != nil {
		t.Fatal(err)
	}
	if rep, err := r.Rewind(native.ID, 1, false); err != nil || rep.CheckpointsApplied != 0 {
		t.Fatalf("native: %+v %v", rep, err)
	}
}

// A restore killed between writing a temporary file and renaming it into
// place leaves .rook-restore-<pid>-*.tmp, a partial copy of a file, in the
// workspace. The next restore into that directory removes the ones whose
// process is gone, and leaves a running restore's alone.
func TestRestoreSweepsTempFilesOfDeadRestores(t *testing.T) {
	r, ws, _ := newWorkspace(t)
	writeTree(t, ws, tree{"src/app.go": "package src\n"})
	if _, _, err := r.CreateCheckpoint("cp", ws, "", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip("cannot run true:", err)
	}
	dest := t.TempDir()
	os.MkdirAll(filepath.Join(dest, "src"), 0o755)
	stale := filepath.Join(dest, "src", fmt.Sprintf(".rook-restore-%d-123456.tmp", dead.Process.Pid))
	live := filepath.Join(dest, "src", fmt.Sprintf(".rook-restore-%d-654321.tmp", os.Getpid()))
	for _, p := range []string{stale, live} {
		if err := os.WriteFile(p, []byte("package s"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, m, err := r.ResolveCheckpoint("cp")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.RestoreCheckpoint("cp", m, dest); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(stale); err == nil {
		t.Fatalf("%s: a dead restore's temporary file is still there", filepath.Base(stale))
	}
	if _, err := os.Lstat(live); err != nil {
		t.Fatalf("a running restore's temporary file was removed: %v", err)
	}
	ents, _ := os.ReadDir(filepath.Join(dest, "src"))
	if len(ents) != 2 {
		t.Fatalf("dest/src holds %d entries, want app.go and the running one's", len(ents))
	}
}

// rewindCase is a rewind about to run: a store made by testRook on fsys
// (at testHome), the session id in it, rewound to `to`, whose workspace ws
// (on the real disk) is before.
type rewindCase struct {
	fsys   *vfs.MemFS
	r      *Rook
	ws     string
	id     eventlog.ID
	to     uint64
	before tree
}

// setTree makes the workspace root hold tr and nothing else.
func setTree(t *testing.T, root string, tr tree) {
	t.Helper()
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	writeTree(t, root, tr)
}

func treesEqual(a, b tree) bool {
	if len(a) != len(b) {
		return false
	}
	for p, v := range a {
		if w, ok := b[p]; !ok || w != v {
			return false
		}
	}
	return true
}

// checkUndo opens a copy of the store fsys (what a crash left, or a store
// whose writes failed) with the workspace as at, and checks that it holds
// rep's capture of the disk before the rewind, durable on the fork, and
// that rewinding the fork to it gives back c.before exactly.
func checkUndo(t *testing.T, what string, c rewindCase, fsys *vfs.MemFS, at tree, rep RewindReport) {
	t.Helper()
	if rep.BeforeSeq == nil {
		t.Fatalf("%s: the workspace changed, and the rewind reports no undo", what)
	}
	cr, err := Open(testHome, Options{FS: fsys.CrashClone(), Writable: true})
	if err != nil {
		t.Fatalf("%s: open: %v", what, err)
	}
	defer cr.Close()
	evs, err := cr.Log.Read(rep.Fork, 0, 1<<20)
	if err != nil || uint64(len(evs)) <= *rep.BeforeSeq || evs[*rep.BeforeSeq].Kind != eventlog.KindCheckpoint || evs[*rep.BeforeSeq].Label != beforeRewindLabel(c.id, c.to) {
		t.Fatalf("%s, the workspace changed: the fork holds %d event(s) (%v), not the capture of the disk before the rewind at #%d", what, len(evs), err, *rep.BeforeSeq)
	}
	setTree(t, c.ws, at)
	if _, err := cr.Rewind(rep.Fork, *rep.BeforeSeq, false); err != nil {
		t.Fatalf("%s: the undo: %v", what, err)
	}
	sameTree(t, what+": the undo", readTree(t, c.ws), c.before)
}

// rewindCrashSweep rewinds c (all of it, to c.to) and closes the store,
// taking, at every write to the store, what a crash there would leave and
// the workspace as it was then. At each, either the workspace is still
// c.before, or the crash left the undo (the capture of the disk before the
// rewind) on the fork, and running it gives back c.before exactly: from
// the workspace as the crash left it and, at the first point the workspace
// had changed (the store as it was while the files were written: no write
// to the store comes between), from each part-written workspace too (the
// files are written one by one, in rep.Paths' order). It returns the
// rewind's report and the crash points at which the workspace had changed;
// fsys is left as the rewind and the close left it.
func rewindCrashSweep(t *testing.T, c rewindCase) (RewindReport, []*vfs.MemFS) {
	t.Helper()
	type point struct {
		fsys *vfs.MemFS
		ws   tree
	}
	var mu sync.Mutex
	var points []point
	c.fsys.SetHook(func(op vfs.Op, _ string) error {
		if op.IsWrite() {
			mu.Lock()
			points = append(points, point{c.fsys.CrashClone(), readTree(t, c.ws)})
			mu.Unlock()
		}
		return nil
	})
	rep, err := c.r.Rewind(c.id, c.to, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.r.Close(); err != nil {
		t.Fatal(err)
	}
	c.fsys.SetHook(nil)
	after := readTree(t, c.ws)
	if treesEqual(after, c.before) || len(rep.Paths) == 0 {
		t.Fatalf("the rewind changed nothing: %+v", rep)
	}
	var crashes []*vfs.MemFS
	unchanged := 0
	for i, p := range points {
		if treesEqual(p.ws, c.before) {
			unchanged++
			continue
		}
		checkUndo(t, fmt.Sprintf("crash %d", i), c, p.fsys, p.ws, rep)
		crashes = append(crashes, p.fsys)
	}
	t.Logf("%d crash point(s) before the first file was written, %d after", unchanged, len(crashes))
	if unchanged == 0 || len(crashes) == 0 {
		t.Fatal("no write to the store before the files were written, or none after: the sweep checked nothing")
	}
	for i := 1; i < len(rep.Paths); i++ {
		part := tree{}
		for p, v := range c.before {
			part[p] = v
		}
		for _, p := range rep.Paths[:i] {
			if v, ok := after[p]; ok {
				part[p] = v
			} else {
				delete(part, p)
			}
		}
		checkUndo(t, fmt.Sprintf("a crash after writing %d of %d file(s)", i, len(rep.Paths)), c, crashes[0], part, rep)
	}
	setTree(t, c.ws, c.before)
	return rep, crashes
}

// rewindFaultSweep rewinds a new case from setup, and closes its store,
// once for each write to the store the rewind and the close make, that
// write and every one after it failing (a disk that went bad, or full).
// Where the workspace changed, the rewind's error (if any) names the undo,
// and the store as a crash then would leave it holds it and runs it to
// give back the disk before.
func rewindFaultSweep(t *testing.T, setup func(t *testing.T) rewindCase) {
	t.Helper()
	c := setup(t)
	n0 := c.fsys.WriteOps()
	if _, err := c.r.Rewind(c.id, c.to, false); err != nil {
		t.Fatal(err)
	}
	if err := c.r.Close(); err != nil {
		t.Fatal(err)
	}
	writes := c.fsys.WriteOps() - n0
	changed := 0
	for k := 0; k < writes; k++ {
		c := setup(t)
		var n atomic.Int64
		c.fsys.SetHook(func(op vfs.Op, _ string) error {
			if op.IsWrite() && n.Add(1) > int64(k) {
				return vfs.ErrInjected
			}
			return nil
		})
		rep, err := c.r.Rewind(c.id, c.to, false)
		closeErr := c.r.Close()
		c.fsys.SetHook(nil)
		what := fmt.Sprintf("store writes failing from the %dth of %d", k, writes)
		if err == nil && closeErr == nil {
			t.Fatalf("%s: neither the rewind nor the close failed", what)
		}
		now := readTree(t, c.ws)
		if treesEqual(now, c.before) {
			if err == nil {
				t.Fatalf("%s: the rewind reports no error, and wrote nothing", what)
			}
			continue
		}
		changed++
		if err != nil && (rep.Undo == "" || !strings.Contains(err.Error(), rep.Undo)) {
			t.Fatalf("%s: the workspace changed, and the error does not name the undo %q: %v", what, rep.Undo, err)
		}
		checkUndo(t, what, c, c.fsys, now, rep)
	}
	t.Logf("%d store write(s) in a rewind and its close; the workspace changed in %d of the runs with them failing", writes, changed)
}

// A rewind records the disk as it was before it (the undo) durably before
// it writes a single file: a crash at any point once the workspace has
// started to change leaves a store that holds that record. Before, the
// record waited for the close's barrier, so a crash while the files were
// being written lost the only copy of the user's edits.
func TestRewindRecordsTheUndoBeforeWritingFiles(t *testing.T) {
	edited := tree{"a.go": "package a // two, by hand\n", "b.go": "package b // two\n"}
	setup := func(t *testing.T) rewindCase {
		fsys := vfs.NewMem()
		r := testRook(t, fsys)
		ws := t.TempDir()
		m, err := r.NewSession("edit", ws, nil)
		if err != nil {
			t.Fatal(err)
		}
		writeTree(t, ws, tree{"a.go": "package a // one\n", "b.go": "package b // one\n"})
		if _, err := r.Append(m.ID, Entry{Kind: eventlog.KindUser, Body: []byte("edit a and b")}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := r.CaptureSession(m.ID, []string{"a.go", "b.go"}, "edit", DefaultLimits); err != nil {
			t.Fatal(err)
		}
		writeTree(t, ws, edited)
		if err := r.Flush(); err != nil {
			t.Fatal(err)
		}
		return rewindCase{fsys: fsys, r: r, ws: ws, id: m.ID, to: 1, before: edited}
	}
	c := setup(t)
	fsys, ws := c.fsys, c.ws
	rep, crashes := rewindCrashSweep(t, c)
	rewindFaultSweep(t, setup)

	// Run again after the first crash point, the workspace now edited by
	// hand again: the re-run names the rewind that did not finish, whose
	// undo gives back the disk as it was before it. A rewind that finished
	// is not named.
	for _, tc := range []struct {
		name        string
		fsys        *vfs.MemFS
		interrupted bool
	}{{"after a crash", crashes[0], true}, {"after a finished rewind", fsys, false}} {
		writeTree(t, ws, edited)
		again, err := Open(testHome, Options{FS: tc.fsys, Writable: true})
		if err != nil {
			t.Fatal(err)
		}
		rep2, err := again.Rewind(c.id, 1, false)
		if err != nil {
			t.Fatal(err)
		}
		if !tc.interrupted {
			if len(rep2.Interrupted) != 0 {
				t.Fatalf("%s: %+v named as interrupted", tc.name, rep2.Interrupted)
			}
			again.Close()
			continue
		}
		if len(rep2.Interrupted) != 1 || rep2.Interrupted[0].Fork != rep.Fork || rep2.Interrupted[0].Undo != rep.Undo {
			t.Fatalf("%s: interrupted %+v, want fork %s with undo %q", tc.name, rep2.Interrupted, rep.Fork, rep.Undo)
		}
		writeTree(t, ws, tree{"a.go": "package a // three\n"})
		if _, err := again.Rewind(rep.Fork, *rep.BeforeSeq, false); err != nil {
			t.Fatal(err)
		}
		sameTree(t, tc.name+": the interrupted rewind's undo", readTree(t, ws), edited)
		// Its undo run, it is named no more; nor is a rewind's fork made
		// by a rook before rewinds recorded that they finished (no tag:
		// finished or not, it cannot be told).
		old, err := again.Log.Fork(c.id, 1, eventlog.Meta{Title: "an older rook's rewind"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := again.Append(old.ID, Entry{Kind: eventlog.KindCheckpoint, Label: beforeRewindLabel(c.id, 1), Body: []byte("{}")}); err != nil {
			t.Fatal(err)
		}
		rep3, err := again.Rewind(c.id, 1, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep3.Interrupted) != 0 {
			t.Fatalf("%s, once undone: %+v named as interrupted", tc.name, rep3.Interrupted)
		}
		again.Close()
	}
}

// A file the agent writes (or makes) after a rewind captured the disk and
// before the rewind gets to it is left as it is, and the rewind stops
// there, saying so: it used to be overwritten (or removed), and the undo
// held only the older copy, so what was written was lost.
func TestRewindKeepsAFileChangedSinceItsCapture(t *testing.T) {
	for _, tc := range []struct {
		name, path string
	}{
		{"written back", "a.go"}, // the rewind writes a.go as it was
		{"removed", "new.go"},    // the rewind removes new.go, made since
		{"made again", "gone.go"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := vfs.NewMem()
			r := testRook(t, fsys)
			ws := t.TempDir()
			m, err := r.NewSession("edit", ws, nil)
			if err != nil {
				t.Fatal(err)
			}
			writeTree(t, ws, tree{"a.go": "package a // one\n", "gone.go": "package gone\n"})
			if _, _, err := r.CaptureSession(m.ID, []string{"a.go", "new.go", "gone.go"}, "edit", DefaultLimits); err != nil {
				t.Fatal(err)
			}
			writeTree(t, ws, tree{"a.go": "package a // two\n", "new.go": "package new\n"})
			os.Remove(filepath.Join(ws, "gone.go"))
			// The agent writes the file once the rewind has captured the
			// disk: when it records that capture, before any file is
			// written.
			since := "package " + strings.TrimSuffix(tc.path, ".go") + " // written since the capture\n"
			fsys.SetHook(func(op vfs.Op, _ string) error {
				if op == vfs.OpSync {
					writeTree(t, ws, tree{tc.path: since})
				}
				return nil
			})
			_, err = r.Rewind(m.ID, 0, false)
			fsys.SetHook(nil)
			if err == nil || !strings.Contains(err.Error(), tc.path+" changed since the rewind captured it") {
				t.Fatalf("rewind over %s written since its capture: %v", tc.path, err)
			}
			if got := readTree(t, ws)[tc.path]; got != since {
				t.Fatalf("%s is %q, want what was written since, %q", tc.path, got, since)
			}
		})
	}
}

// A rewind that stops at its first file, changed since its capture before
// it (the agent still at work), has changed nothing: it names no undo and
// keeps no fork, as when it is refused before writing. It named its undo,
// which wrote that file back as it was before the edit that stopped it,
// and left a fork the next rewind named as interrupted.
func TestRewindStoppedBeforeWritingAnythingNamesNoUndoThatRevertsAnEdit(t *testing.T) {
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"a.txt": "captured\n"})
	if _, _, err := r.CaptureSession(id, []string{"a.txt"}, "edit", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	writeTree(t, ws, tree{"a.txt": "edited once\n"})
	applyHook = func(point, rel string) {
		if point == hookBetween && rel == "a.txt" {
			os.WriteFile(filepath.Join(ws, "a.txt"), []byte("edited again, after the capture\n"), 0o644)
		}
	}
	defer func() { applyHook = nil }()
	rep, err := r.Rewind(id, 0, false)
	applyHook = nil
	if err == nil {
		t.Fatal("the rewind went over a file changed since its capture")
	}
	if got := readTree(t, ws)["a.txt"]; got != "edited again, after the capture\n" {
		t.Fatalf("a.txt is %q", got)
	}
	if strings.Contains(err.Error(), "rook session rewind ") || rep.Undo != "" || rep.BeforeSeq != nil {
		t.Fatalf("the rewind wrote nothing, and names an undo (%q): %v", rep.Undo, err)
	}
	if !strings.HasSuffix(err.Error(), ": nothing written; no fork is kept: there is nothing to undo") {
		t.Fatalf("the rewind wrote nothing: %v", err)
	}
	ids, err := r.Log.IDs()
	if err != nil || len(ids) != 1 || ids[0] != id {
		t.Fatalf("sessions after the rewind that wrote nothing: %v, %v, want %s alone", ids, err, id)
	}
	again, err := r.Rewind(id, 0, false)
	if err != nil || len(again.Interrupted) != 0 {
		t.Fatalf("the rewind run again: %+v, %v, want none named as interrupted", again.Interrupted, err)
	}
}

// A rewind that wrote some files, then stopped at one changed since its
// capture before it, names its undo, and says that the undo puts that
// file back too, as it was before the rewind, over the edit that stopped
// it (which the undo's own capture keeps).
func TestRewindStoppedPartWayAtAnEditSaysItsUndoPutsThatFileBack(t *testing.T) {
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"a.txt": "captured a\n", "b.txt": "captured b\n"})
	if _, _, err := r.CaptureSession(id, []string{"a.txt", "b.txt"}, "edit", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	writeTree(t, ws, tree{"a.txt": "edited a\n", "b.txt": "edited b\n"})
	applyHook = func(point, rel string) {
		if point == hookBetween && rel == "b.txt" {
			os.WriteFile(filepath.Join(ws, "b.txt"), []byte("edited b again\n"), 0o644)
		}
	}
	defer func() { applyHook = nil }()
	rep, err := r.Rewind(id, 0, false)
	applyHook = nil
	if err == nil || rep.FilesRestored != 1 || rep.Undo == "" {
		t.Fatalf("the rewind over b.txt changed since its capture: %+v, %v", rep, err)
	}
	// What it did by then (--json: done.paths): a.txt, not b.txt, which
	// stopped it.
	if !slices.Equal(rep.Paths, []string{"a.txt"}) {
		t.Fatalf("the rewind stopped at b.txt says it went through %q, want [a.txt]", rep.Paths)
	}
	want := "; `" + rep.Undo + "` puts back what was there, b.txt too: as it was before this rewind, over what was written to it since (that rewind captures it first, as it captures whatever it overwrites)"
	if !strings.HasSuffix(err.Error(), want) {
		t.Fatalf("the error does not say the undo puts b.txt back too:\n%v\nwant it ending %q", err, want)
	}
	undo, err := r.Rewind(rep.Fork, *rep.BeforeSeq, false)
	if err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after the undo", readTree(t, ws), tree{"a.txt": "edited a\n", "b.txt": "edited b\n"})
	evs, err := r.Log.Read(undo.Fork, *undo.BeforeSeq, 1)
	if err != nil || len(evs) != 1 {
		t.Fatalf("the undo's capture before it: %v, %v", evs, err)
	}
	kept, err := r.ReadManifest(evs[0].Body)
	if err != nil {
		t.Fatal(err)
	}
	if kept.Files["b.txt"].ID != cas.ID([]byte("edited b again\n")) {
		t.Fatalf("the undo's capture does not hold the edit it put b.txt's older copy over: %s", kept.Encode())
	}
}

// The check of a file against the rewind's capture reads it only when the
// file system cannot say it is untouched: a file with the size and times
// it was captured with is not hashed again (a large one would be read
// twice), one written since is, even with its mtime set back (its change
// time moved), and one written within statQuiet of the capture always is.
func TestSinceSavedTrustsOnlyQuietStats(t *testing.T) {
	ws := t.TempDir()
	writeTree(t, ws, tree{"big.bin": "captured\n"})
	abs := filepath.Join(ws, "big.bin")
	fi, err := os.Lstat(abs)
	if err != nil {
		t.Fatal(err)
	}
	if vfs.ChangeTime(fi) == 0 {
		t.Skip("no change time on this OS")
	}
	st := statOf(fi)
	if st.quiet(time.Now()) || !st.quiet(time.Now().Add(statQuiet)) {
		t.Fatalf("a file just written is quiet, or one %v old is not", statQuiet)
	}
	// The saved id is not the bytes' own: taken as saved, the file was
	// not read.
	saved := FileEntry{ID: cas.ID([]byte("not read\n")), Size: fi.Size(), Mode: FileMode{Perm: fi.Mode().Perm()}}
	p := &Plan{real: ws, saved: &Manifest{Files: map[string]FileEntry{"big.bin": saved}}, savedStats: map[string]savedStat{"big.bin": st}}
	if cur, err := p.sinceSaved("big.bin"); err != nil || cur.ID != saved.ID {
		t.Fatalf("a file with its captured stat: %+v, %v", cur, err)
	}
	time.Sleep(10 * time.Millisecond) // a tick of the file system's clock
	writeTree(t, ws, tree{"big.bin": "written!\n"})
	if err := os.Chtimes(abs, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if _, err := p.sinceSaved("big.bin"); err == nil || !strings.Contains(err.Error(), "big.bin changed since the rewind captured it") {
		t.Fatalf("a file written since, its mtime set back: %v", err)
	}
	// Without a stat it is hashed: as saved when its bytes are.
	p.saved.Files["big.bin"] = FileEntry{ID: cas.ID([]byte("written!\n")), Size: 9, Mode: saved.Mode}
	delete(p.savedStats, "big.bin")
	if _, err := p.sinceSaved("big.bin"); err != nil {
		t.Fatalf("a file as saved, hashed: %v", err)
	}
}

// A file the agent writes while a rewind or restore writes its copy (the
// write and the sync of the temporary file take time) is left as it is,
// and the rewind stops there, saying so: it was checked only before the
// copy was written, and the rename then put the older bytes over what
// was written, which the undo did not hold either.
func TestRewindKeepsAFileWrittenWhileItsCopyIsWritten(t *testing.T) {
	for _, tc := range []struct {
		name, path string
	}{
		{"written back", "a.go"}, // the rewind writes a.go as it was
		{"made again", "gone.go"},
		{"a link written back", "link"},
		{"checkpoint restore", "a.go"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, ws, id := newWorkspace(t)
			writeTree(t, ws, tree{"a.go": "package a // one\n", "gone.go": "package gone\n"})
			os.Symlink("a.go", filepath.Join(ws, "link"))
			restore := func() error {
				_, err := r.Rewind(id, 0, false)
				return err
			}
			by := "the rewind captured it"
			if tc.name == "checkpoint restore" {
				if _, _, err := r.CreateCheckpoint("cp", ws, "", DefaultLimits); err != nil {
					t.Fatal(err)
				}
				_, m, err := r.ResolveCheckpoint("cp")
				if err != nil {
					t.Fatal(err)
				}
				restore = func() error {
					_, err := r.RestoreCheckpoint("cp", m, ws)
					return err
				}
				by = "the restore saved it"
			} else if _, _, err := r.CaptureSession(id, []string{"a.go", "gone.go", "link"}, "edit", DefaultLimits); err != nil {
				t.Fatal(err)
			}
			writeTree(t, ws, tree{"a.go": "package a // two\n"})
			os.Remove(filepath.Join(ws, "gone.go"))
			os.Remove(filepath.Join(ws, "link"))
			os.Symlink("gone.go", filepath.Join(ws, "link"))
			since := "package x // written since the capture\n"
			hooked := false
			applyHook = func(point, rel string) {
				if point == hookRename && rel == tc.path {
					hooked = true
					os.Remove(filepath.Join(ws, rel))
					writeTree(t, ws, tree{rel: since})
				}
			}
			err := restore()
			applyHook = nil
			if !hooked {
				t.Fatalf("%s was not written (%v)", tc.path, err)
			}
			if err == nil || !strings.Contains(err.Error(), tc.path+" changed since "+by) {
				t.Fatalf("%s written while its copy was: %v", tc.path, err)
			}
			if got := readTree(t, ws)[tc.path]; got != since {
				t.Fatalf("%s is %q, want what was written since, %q", tc.path, got, since)
			}
			ents, _ := os.ReadDir(ws)
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), restoreTmpPrefix) {
					t.Fatalf("%s left in the workspace", e.Name())
				}
			}
		})
	}
}

// A link whose rename over its path fails (a directory there now, made
// since the plan) leaves no temporary link behind in the workspace, as a
// file's temporary copy is removed: it was left there until the next
// restore in that directory swept it.
func TestWriteWorkspaceLinkLeavesNoTempOnAFailedRename(t *testing.T) {
	ws := t.TempDir()
	writeTree(t, ws, tree{"x/keep.txt": "keep\n"})
	for _, mode := range []FileMode{{Link: true}, {Perm: 0o644}} {
		err := writeWorkspaceFile(filepath.Join(ws, "x"), mode, func(w io.Writer) error { _, err := w.Write([]byte("a.go")); return err }, nil)
		if err == nil {
			t.Fatalf("%v: renamed over a directory", mode)
		}
		ents, _ := os.ReadDir(ws)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), restoreTmpPrefix) {
				t.Errorf("%v: %s left in the workspace (%v)", mode, e.Name(), err)
			}
		}
	}
}

// A rewind's fork begins, at the point it was forked, with the rewind's
// capture of the disk before it: the state there, which the undo rewinds
// to. A rewind of the fork to an earlier point took it for the files'
// state then, and wrote them back as they were before the first rewind
// (n1 here, where n.txt was n0 at that point). It passes it over; the
// undo still uses it.
func TestRewindOfARewindsForkToBeforeItsPoint(t *testing.T) {
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"n.txt": "n0\n"})
	r.Append(id, Entry{Kind: eventlog.KindUser, Body: []byte("one")})
	r.Append(id, Entry{Kind: eventlog.KindUser, Body: []byte("two")})
	seq, _, err := r.CaptureSession(id, []string{"n.txt"}, "edit", DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	writeTree(t, ws, tree{"n.txt": "n1\n"})
	r.Append(id, Entry{Kind: eventlog.KindAssistant, Body: []byte("done")})
	rw, err := r.Rewind(id, seq, false)
	if err != nil || readFileT(t, filepath.Join(ws, "n.txt")) != "n0\n" {
		t.Fatalf("rewind: %v", err)
	}
	if _, err := r.Rewind(rw.Fork, 1, false); err != nil || readFileT(t, filepath.Join(ws, "n.txt")) != "n0\n" {
		t.Fatalf("rewind of the fork to 1: %v, n.txt %q, want n0", err, readFileT(t, filepath.Join(ws, "n.txt")))
	}
	if _, err := r.Rewind(rw.Fork, *rw.BeforeSeq, false); err != nil || readFileT(t, filepath.Join(ws, "n.txt")) != "n1\n" {
		t.Fatalf("the undo: %v, n.txt %q, want n1", err, readFileT(t, filepath.Join(ws, "n.txt")))
	}
}

// TestRewindThatChangesNoFileOffersNoUndo: every file is already as it was
// at the point (put back by hand, say): the rewind still forks the
// conversation, but writes nothing, so it offers no undo (it gave one: a
// rewind to its capture of the same bytes, which does nothing). Changed
// again, the rewind writes, and its undo is offered.
func TestRewindThatChangesNoFileOffersNoUndo(t *testing.T) {
	r, ws, id := newWorkspace(t)
	before := tree{"a.txt": "before\n"}
	writeTree(t, ws, before)
	r.Append(id, Entry{Kind: eventlog.KindUser, Body: []byte("please edit")})
	if _, _, err := r.CaptureSession(id, []string{"a.txt", "new.txt"}, "edit", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	writeTree(t, ws, tree{"a.txt": "after\n", "new.txt": "new\n"})
	r.Append(id, Entry{Kind: eventlog.KindAssistant, Body: []byte("done")})
	writeTree(t, ws, before)
	os.Remove(filepath.Join(ws, "new.txt"))

	rep, err := r.Rewind(id, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after a rewind that had nothing to write", readTree(t, ws), before)
	if rep.Fork.IsZero() || rep.CheckpointsApplied != 1 || rep.FilesRestored != 0 || rep.FilesRemoved != 0 {
		t.Fatalf("report %+v", rep)
	}
	if rep.DiskChanged || rep.Undo != "" || rep.BeforeSeq != nil {
		t.Fatalf("a rewind that changed no file: disk changed %v, undo %q, before seq %v", rep.DiskChanged, rep.Undo, rep.BeforeSeq)
	}

	writeTree(t, ws, tree{"a.txt": "after\n"})
	rep, err = r.Rewind(id, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after the rewind", readTree(t, ws), before)
	if !rep.DiskChanged || rep.FilesRestored != 1 || rep.Undo == "" || rep.BeforeSeq == nil {
		t.Fatalf("a rewind that wrote a file: report %+v", rep)
	}
	if _, err := r.Rewind(rep.Fork, *rep.BeforeSeq, false); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after the undo", readTree(t, ws), tree{"a.txt": "after\n"})
}

// The fork a rewind makes ends with its capture of
// the disk before it ("before rewind of ..."), the undo's state. `rook
// session diff FORK` takes that capture as the baseline of the files it
// alone holds: b.txt, which the parent made after the point (so at no
// event of the fork's own history was it there), is shown as "deleted
// file b.txt" (-b), a change the session made. But `rook session rewind
// FORK --to 0`, which puts back every file as it was before the session,
// passed over that capture (diff.go: firstCaptures skipped a before-rewind
// capture after the point when rewinding) and leaves b.txt absent: the
// diff claims a deletion that rewinding the whole session does not undo,
// and the agent writing b.txt again on the fork later reads as
// "modified" against the parent's copy. Seed 003: "the baseline is what
// was there before it started".
// The user saw: `session diff FORK` listed a.txt modified and b.txt
// deleted. Now the diff passes over a rewind's capture before it, as a
// rewind to 0 does (capturedStatesFor): a.txt only, what rewinding FORK
// to 0 undoes.
func TestDiffOfARewindsForkAgreesWithItsRewindToZero(t *testing.T) {
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"a.txt": "a\n"})
	r.Append(id, Entry{Kind: eventlog.KindUser, Body: []byte("u")})
	if _, _, err := r.CaptureSession(id, []string{"a.txt"}, "edit", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	writeTree(t, ws, tree{"a.txt": "a2\n"})
	r.Append(id, Entry{Kind: eventlog.KindUser, Body: []byte("u2")})
	if _, _, err := r.CaptureSession(id, []string{"b.txt"}, "create", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	writeTree(t, ws, tree{"b.txt": "b\n"})
	r.Append(id, Entry{Kind: eventlog.KindUser, Body: []byte("u3")})

	rep, err := r.Rewind(id, 3, false) // before b.txt's capture: it goes
	if err != nil {
		t.Fatal(err)
	}
	if got := readTree(t, ws); len(got) != 1 || got["a.txt"] != "a2\n" {
		t.Fatalf("after the rewind to 3: %v", got)
	}
	got := diffStatuses(t, r, rep.Fork)
	// The rewind of the fork to 0 agrees on what the session changed:
	// it puts a.txt back and leaves b.txt absent.
	if _, err := r.Rewind(rep.Fork, 0, false); err != nil {
		t.Fatal(err)
	}
	after := readTree(t, ws)
	if _, ok := after["b.txt"]; ok {
		t.Fatalf("rewind of the fork to 0 wrote b.txt: %v", after)
	}
	if s, ok := got["b.txt"]; ok {
		t.Errorf("session diff of the rewind's fork %s: b.txt %q (all: %v), a file the fork's history never had, which its rewind to 0 leaves absent (after: %v); want only a.txt modified", rep.Fork, s, got, after)
	}
}
