package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/cas"
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
