package cas

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// emptyIndex is the index a writer's open puts in place of a damaged or
// missing one before it rebuilds it: a new store's (no commit).
func emptyIndex(t *testing.T) []byte {
	t.Helper()
	nfs := vfs.NewMem()
	n, nhome := newStore(t, nfs, Options{})
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := vfs.ReadFile(nfs, filepath.Join(nhome, IndexDir, IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A reader's verify read the index of no commit a killed rebuild left
// (the marker beside it), and before it looked at the lock and the
// marker, the next writer finished the rebuild, removed the marker and
// let the lock go. Verify found no writer and no marker, and passed the
// store as a first writer's leftovers: "all 0 objects verified" of a
// store of 40, every object unchecked, though the index on disk by then
// held them all. Under the lock, the index it read is not the one on
// disk any more: it reads the store again and checks every object.
func TestVerifyDoesNotPassWhenARebuildFinishesUnderIt(t *testing.T) {
	fsys, r, home := readerOf(t, 40)
	idx := filepath.Join(home, IndexDir, IndexFile)
	segDir := filepath.Join(home, SegmentsDir)
	if err := fsys.WriteFileAtomic(idx, emptyIndex(t), FileMode); err != nil {
		t.Fatal(err)
	}
	if err := fsys.WriteFileAtomic(rebuildMarkerPath(home), []byte("started 2026-12-01T10:00:00Z by pid 1 (rook store put)\n"), FileMode); err != nil {
		t.Fatal(err)
	}
	// The next writer runs, whole, once verify is reading the segments
	// (the index of no commit read already).
	busy, finished := false, false
	fsys.SetHook(func(op vfs.Op, path string) error {
		if busy || finished || op != vfs.OpOpenRead || filepath.Dir(path) != segDir {
			return nil
		}
		busy = true
		defer func() { busy = false }()
		finished = true
		w, err := Open(home, Options{FS: fsys, Clock: testClock(), Writable: true})
		if err != nil {
			t.Errorf("the next writer: %v", err)
			return nil
		}
		if !strings.Contains(strings.Join(w.Notices, "\n"), "was left unfinished") {
			t.Errorf("the next writer did not finish the rebuild: notices %q", w.Notices)
		}
		if err := w.Close(); err != nil {
			t.Errorf("the next writer: %v", err)
		}
		return nil
	})
	rep, err := r.Verify(nil)
	fsys.SetHook(nil)
	if !finished {
		t.Fatal("the next writer did not run under verify")
	}
	if err != nil || len(rep.Problems) != 0 || rep.Objects != 40 {
		t.Fatalf("verify across the rebuild the next writer finished: %d objects, %d records, %d orphans, problems %v, error %v: want all 40 checked, nothing wrong", rep.Objects, rep.Records, rep.Orphans, rep.Problems, err)
	}
}

// A writer's open that cannot read the marker (permission denied) fails,
// as it must not guess whether a rebuild was left unfinished; it said
// only "read the index rebuild marker PATH: permission denied", not what
// to do about it.
func TestAWritersOpenSaysWhatToDoWhenTheMarkerDoesNotRead(t *testing.T) {
	fsys, r, home := readerOf(t, 4)
	r.Close()
	marker := rebuildMarkerPath(home)
	if err := fsys.WriteFileAtomic(marker, []byte("started 2026-12-01T10:00:00Z by pid 1 (rook store put)\n"), FileMode); err != nil {
		t.Fatal(err)
	}
	fsys.SetHook(func(op vfs.Op, path string) error {
		if op == vfs.OpOpenRead && path == marker {
			return syscall.EACCES
		}
		return nil
	})
	_, err := Open(home, Options{FS: fsys, Clock: testClock(), Writable: true})
	fsys.SetHook(nil)
	if err == nil {
		t.Fatal("a writer's open with the marker unreadable: no error")
	}
	for _, want := range []string{marker, "permission denied", "check the file's permissions", "run the command again"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("a writer's open with the marker unreadable: %v: want it to say %q", err, want)
		}
	}
}
