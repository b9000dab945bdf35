package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// newWorkspaceHoldingStore is newWorkspace with the store inside the
// workspace, at sub/store.
func newWorkspaceHoldingStore(t *testing.T) (*Rook, string) {
	t.Helper()
	ws := t.TempDir()
	home := filepath.Join(ws, "sub", "store")
	if _, err := cas.Init(vfs.OS, nil, home); err != nil {
		t.Fatal(err)
	}
	r, err := Open(home, Options{Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, ws
}

// A session capture of a directory that holds the store took the store's
// own files (its index, event logs, lock), and a rewind then wrote their
// old copies over the live store: the sessions' events since, every
// object the index named, lost. The store is passed over, as a tree
// capture and the diff's walk pass over it, and named, it is refused; a
// restore never writes into it, whatever a manifest holds.
func TestCaptureNeverTakesTheStore(t *testing.T) {
	r, ws := newWorkspaceHoldingStore(t)
	m, err := r.NewSession("edit", ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	writeTree(t, ws, tree{"sub/a.txt": "one\n"})
	_, man, err := r.CaptureSession(m.ID, []string{"sub"}, "write", DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	for p := range man.Files {
		if strings.HasPrefix(p, "sub/store") {
			t.Fatalf("the capture holds the store's %s (files %v)", p, man.Paths())
		}
	}
	for _, d := range man.Dirs {
		if strings.HasPrefix(d, "sub/store") {
			t.Fatalf("the capture holds the store's directory %s", d)
		}
	}
	if _, _, err := r.CaptureSession(m.ID, []string{"sub/store/lock"}, "write", DefaultLimits); err == nil || !strings.Contains(err.Error(), "rook's store") {
		t.Fatalf("a capture of a store file: %v, want a refusal", err)
	}
	os.WriteFile(filepath.Join(ws, "sub/a.txt"), []byte("two\n"), 0o644)
	d, err := r.Diff(m.ID, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Files) != 1 || d.Files[0].Path != "sub/a.txt" {
		t.Fatalf("diff: %+v", d.Files)
	}
	events := func() int {
		evs, err := r.Log.Read(m.ID, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		return len(evs)
	}
	before := events()
	if _, err := r.Rewind(m.ID, 0, false); err != nil {
		t.Fatal(err)
	}
	if got := events(); got != before {
		t.Fatalf("the session had %d event(s) before the rewind, %d after", before, got)
	}
	sameTree(t, "after the rewind", map[string]string{"sub/a.txt": readTree(t, ws)["sub/a.txt"]}, tree{"sub/a.txt": "one\n"})

	// A manifest naming a store file (one an older rook captured) is
	// refused whole, nothing written: one it would only create (so saves
	// nothing first) too.
	res, err := r.Store.Put(cas.KindFile, []byte("stale\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{"sub/store/lock", "sub/store/planted"} {
		lock := filepath.Join(ws, in)
		old, oldErr := os.ReadFile(lock)
		bad := &Manifest{V: 1, Root: ws, Files: map[string]FileEntry{
			"sub/b.txt": {ID: res.ID, Size: 6, Mode: FileMode{Perm: 0o644}},
			in:          {ID: res.ID, Size: 6, Mode: FileMode{Perm: 0o644}},
		}}
		if _, err := r.RestoreCheckpoint("bad", bad, ""); err == nil || !strings.Contains(err.Error(), "rook's store") {
			t.Fatalf("a restore into the store's %s: %v, want a refusal", in, err)
		}
		if now, err := os.ReadFile(lock); string(now) != string(old) || (err == nil) != (oldErr == nil) {
			t.Fatalf("the store's %s was written: %q", in, now)
		}
		if _, err := os.Lstat(filepath.Join(ws, "sub/b.txt")); err == nil {
			t.Fatalf("sub/b.txt written by a refused restore")
		}
	}
}

// A link in the workspace leading into the store (inside the workspace
// too, so the capture follows it) named the store's files under another
// path: capture's own check compared the path as given, where restore's
// resolves the directory above it. Both use one check now.
func TestCaptureThroughALinkNeverTakesTheStore(t *testing.T) {
	r, ws := newWorkspaceHoldingStore(t)
	m, err := r.NewSession("edit", ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("sub", "store"), filepath.Join(ws, "st")); err != nil {
		t.Fatal(err)
	}
	if _, man, err := r.CaptureSession(m.ID, []string{"st/lock"}, "write", DefaultLimits); err == nil || !strings.Contains(err.Error(), "rook's store") {
		t.Fatalf("a capture of a store file through a link: %v (files %v), want a refusal", err, man.Paths())
	}
}

// A link in the workspace to the store's directory, and a path under it
// naming a directory the store does not have yet: the old check resolved
// the directory above the file, which did not exist, so it compared the
// path as given and let it through. A restore made the directory inside
// the store and wrote the file there; a capture recorded it as absent (a
// rewind would then write there too). One guard (InStore) resolves the
// longest existing prefix, so both are refused.
func TestStoreGuardThroughALinkToANewDirectory(t *testing.T) {
	r, ws := newWorkspaceHoldingStore(t)
	home := filepath.Join(ws, "sub", "store")
	if err := os.Symlink(filepath.Join("sub", "store"), filepath.Join(ws, "st")); err != nil {
		t.Fatal(err)
	}
	// And a dangling link to a directory the store does not have yet.
	if err := os.Symlink(filepath.Join("sub", "store", "new", "deeper"), filepath.Join(ws, "dangling")); err != nil {
		t.Fatal(err)
	}
	res, err := r.Store.Put(cas.KindFile, []byte("planted\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{"st/newdir/x", "st/newdir/deeper/x", "dangling/x"} {
		m := &Manifest{V: 1, Root: ws, Files: map[string]FileEntry{
			in: {ID: res.ID, Size: 8, Mode: FileMode{Perm: 0o644}},
		}}
		_, err := r.RestoreCheckpoint("bad", m, "")
		if err == nil || !strings.Contains(err.Error(), "inside rook's store") || !strings.Contains(err.Error(), in) {
			t.Errorf("a restore of %s (a link into the store): %v, want a refusal naming it", in, err)
		}
		for _, d := range []string{"newdir", "new"} {
			if _, err := os.Lstat(filepath.Join(home, d)); err == nil {
				t.Fatalf("the restore of %s made %s inside the store", in, d)
			}
		}
		s, err := r.NewSession("edit", ws, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, man, err := r.CaptureSession(s.ID, []string{in}, "write", DefaultLimits); err == nil || !strings.Contains(err.Error(), "inside rook's store") {
			t.Errorf("a capture of %s (a link into the store): %v (absent %v), want a refusal", in, err, man.Absent)
		}
	}
	// A tree capture of a directory inside the store (through the link,
	// or named as it is) takes none of its files: refused.
	for _, sub := range []string{"st/events", "sub/store/events"} {
		if man, err := r.CaptureTree(ws, sub, "cp", DefaultLimits); err == nil || !strings.Contains(err.Error(), "inside rook's store") {
			t.Errorf("a tree capture of %s: %v (files %v), want a refusal", sub, err, man.Paths())
		}
	}
	// A removal of a directory that holds the store, through a link
	// too, is refused naming the store.
	for _, in := range []string{"sub", "lsub"} {
		os.Symlink("sub", filepath.Join(ws, "lsub"))
		gone := &Manifest{V: 1, Root: ws, Files: map[string]FileEntry{}, Absent: []string{in + "/store"}}
		if _, err := r.RestoreCheckpoint("gone", gone, ""); err == nil || !strings.Contains(err.Error(), "inside rook's store") {
			t.Errorf("a restore removing %s/store: %v, want a refusal", in, err)
		}
	}
	holds := &Manifest{V: 1, Root: ws, Files: map[string]FileEntry{}, Absent: []string{"sub"}}
	if _, err := r.RestoreCheckpoint("holds", holds, ""); err == nil || !strings.Contains(err.Error(), "rook's store "+home+" is inside it") {
		t.Errorf("a restore removing sub, which holds the store: %v, want a refusal naming the store", err)
	}
	// A restore into a directory inside the store (--to) likewise.
	ok := &Manifest{V: 1, Root: ws, Files: map[string]FileEntry{"a.txt": {ID: res.ID, Size: 8, Mode: FileMode{Perm: 0o644}}}}
	if _, err := r.RestoreCheckpoint("cp", ok, filepath.Join(ws, "st", "restored")); err == nil || !strings.Contains(err.Error(), "inside rook's store") {
		t.Errorf("a restore --to a new directory in the store: %v, want a refusal", err)
	}
	if _, err := os.Lstat(filepath.Join(home, "restored")); err == nil {
		t.Fatalf("a restore --to the store made its directory there")
	}
}

func TestInStore(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "home", "store")
	os.MkdirAll(home, 0o700)
	os.Symlink(home, filepath.Join(base, "link"))
	os.Symlink(filepath.Join(home, "a", "b"), filepath.Join(base, "dangling"))
	os.Symlink("dangling", filepath.Join(base, "chain"))
	os.Symlink(filepath.Join(base, "loop2"), filepath.Join(base, "loop1"))
	os.Symlink(filepath.Join(base, "loop1"), filepath.Join(base, "loop2"))
	for _, c := range []struct {
		path string
		in   bool
	}{
		{home, true},
		{filepath.Join(home, "x"), true},
		{filepath.Join(home, "new", "dir", "x"), true},
		{filepath.Join(base, "link"), true},
		{filepath.Join(base, "link", "new", "x"), true},
		{filepath.Join(base, "dangling"), true},
		{filepath.Join(base, "dangling", "x"), true},
		{filepath.Join(base, "chain", "x"), true},
		{filepath.Join(base, "home"), false},
		{filepath.Join(base, "home", "store2"), false},
		{filepath.Join(base, "loop1", "x"), false},
		{filepath.Join(base, "other", "x"), false},
	} {
		err := InStore(home, c.path, "write")
		if (err != nil) != c.in {
			t.Errorf("InStore(%s): %v, want inside=%v", c.path, err, c.in)
		}
		if err != nil && (!strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), home) || !strings.Contains(err.Error(), "outside")) {
			t.Errorf("InStore(%s): %q does not name the path, the store and what to do", c.path, err)
		}
	}
}

// An import of a directory that holds the store (a home directory, with
// the store at ~/.rook) walked into it and took the store's own .jsonl
// files (an MCP server's inbox spool) as transcripts; named, a path in
// the store was imported from too. The store is passed over in a walk,
// as a tree capture passes over it, and refused when named (InStore).
func TestImportNeverReadsTheStore(t *testing.T) {
	r, ws := newWorkspaceHoldingStore(t)
	home := filepath.Join(ws, "sub", "store")
	writeSource(t, vfs.OS, filepath.Join(ws, "proj", "a1.jsonl"), claudeLines("a1", 1), "")
	writeSource(t, vfs.OS, filepath.Join(home, "inbox", "spool.jsonl"), claudeLines("s1", 1), "")
	if err := os.Symlink(filepath.Join(home, "inbox"), filepath.Join(ws, "proj", "linked")); err != nil {
		t.Fatal(err)
	}
	rep := mustImport(t, r, FormatClaudeCode, ws)
	for _, f := range rep.Files {
		if strings.HasPrefix(f.Path, home) {
			t.Errorf("the import took the store's %s (%s)", f.Path, f.Status)
		}
	}
	if rep.Sessions != 1 {
		t.Errorf("imported %d session(s), want the one outside the store: %+v", rep.Sessions, rep.Files)
	}
	for _, p := range []string{filepath.Join(home, "inbox"), filepath.Join(home, "inbox", "spool.jsonl"), filepath.Join(ws, "proj", "linked", "spool.jsonl")} {
		if _, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{p}}); err == nil || !strings.Contains(err.Error(), "inside rook's store") {
			t.Errorf("an import of %s: %v, want a refusal", p, err)
		}
	}
}

// ExportToolResults wrote its files into whatever directory it was given:
// the CLI refuses a --tool-results inside the store, but the engine did
// not, and a link to a directory the store does not have yet led there
// too. It refuses it (InStore), nothing written.
func TestExportToolResultsNeverWritesTheStore(t *testing.T) {
	r, ws := newWorkspaceHoldingStore(t)
	home := filepath.Join(ws, "sub", "store")
	m, err := r.NewSession("imported", ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Append(m.ID, Entry{Kind: eventlog.KindNote, Label: toolResultsLabel + "toolu_1.txt", Body: []byte("a tool's output\n")}); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(home, "results"), filepath.Join(ws, "out")); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{filepath.Join(home, "results"), filepath.Join(ws, "out")} {
		if _, err := r.ExportToolResults(m.ID, dir); err == nil || !strings.Contains(err.Error(), "inside rook's store") {
			t.Errorf("tool-results written to %s: %v, want a refusal", dir, err)
		}
		if _, err := os.Lstat(filepath.Join(home, "results")); err == nil {
			t.Fatalf("the export made %s in the store", filepath.Join(home, "results"))
		}
	}
	x, err := r.ExportToolResults(m.ID, filepath.Join(ws, "elsewhere"))
	if err != nil || len(x.Files) != 1 {
		t.Fatalf("an export outside the store: %+v, %v", x, err)
	}
}
