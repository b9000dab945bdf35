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
