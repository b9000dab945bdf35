package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/cas"
)

// A rewind puts a file back where a directory is now by removing the
// directory's tree first (Change.clearTree). When that directory holds the
// store, the tree removed is the store: every session and object lost, and
// the rewind's own save of what it replaces passes over the store, so its
// undo cannot bring it back. Refused, naming the store, as a removal of
// such a directory is; nothing is removed.
func TestRewindNeverClearsATreeHoldingTheStore(t *testing.T) {
	r, ws := newWorkspaceHoldingStore(t)
	home := r.Store.Home()
	res, err := r.Store.Put(cas.KindFile, []byte("a file\n"))
	if err != nil {
		t.Fatal(err)
	}
	os.Symlink("sub", filepath.Join(ws, "lsub"))
	for _, at := range []string{"sub", "lsub/store"} {
		changes := []Change{{Path: at, File: FileEntry{ID: res.ID, Size: 7, Mode: FileMode{Perm: 0o644}}}}
		p, err := r.planRestore(ws, changes, func(string) bool { return true }, true)
		if err == nil {
			for _, c := range p.Changes {
				if c.clearTree {
					t.Fatalf("a rewind writing the file %s plans to remove the tree there, which holds the store %s", at, home)
				}
			}
			t.Fatalf("a rewind writing the file %s over a tree holding the store: planned, want a refusal", at)
		}
		if !strings.Contains(err.Error(), home) {
			t.Errorf("a rewind writing the file %s over a tree holding the store: %v, want a refusal naming the store", at, err)
		}
	}
	if _, err := os.Stat(filepath.Join(home, cas.EventsDir)); err != nil {
		t.Fatalf("the store's events directory: %v", err)
	}
}

// The guard follows every link on the way to a path, however many of the
// path's directories do not exist yet: maxLinks bounds the links followed,
// not the names below them. A path 45 new directories deep under a link
// into the store was taken as outside it (the names counted as links), and
// a write there would have made them inside the store.
func TestStoreGuardDeepNewPathThroughALink(t *testing.T) {
	ws := t.TempDir()
	home := filepath.Join(ws, "store")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("store", filepath.Join(ws, "st")); err != nil {
		t.Fatal(err)
	}
	g := newStoreGuard(home)
	for _, depth := range []int{1, 39, 45, 200} {
		rel := "st" + strings.Repeat("/d", depth) + "/x"
		abs := filepath.Join(ws, filepath.FromSlash(rel))
		if err := g.check(rel, abs, "restore"); err == nil {
			t.Errorf("check of %s (%d new directories under a link into the store): nil, want a refusal", rel, depth)
		}
		if err := g.checkEntry(rel, abs, "restore"); err == nil {
			t.Errorf("checkEntry of %s (%d new directories under a link into the store): nil, want a refusal", rel, depth)
		}
	}
	// A loop of links still ends.
	os.Symlink("loop2", filepath.Join(ws, "loop1"))
	os.Symlink("loop1", filepath.Join(ws, "loop2"))
	if err := g.check("loop1/x", filepath.Join(ws, "loop1", "x"), "restore"); err != nil {
		t.Errorf("check of a path through a loop of links outside the store: %v", err)
	}
}
