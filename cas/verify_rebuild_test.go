package cas

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// A writer's open that finds the index damaged (or missing) puts an empty
// index in its place and then rebuilds it from the segments; the rebuilt
// one replaces the empty one only at the end. A reader's verify that ran
// in between read that empty index (no commit, no entries) and every
// record of the segments, found nothing wrong, and passed: "all 0 objects
// verified" of a store of 40. It must not pass a store whose objects it
// did not check: it reads again, and while the rebuild goes on it fails
// saying a rebuild is in progress and to run verify again after it.
func TestVerifyDoesNotPassAStoreWhoseIndexIsBeingRebuilt(t *testing.T) {
	// damaged, missing: a writer's open rebuilds; reindex: `rook store
	// reindex` of a damaged index (an open for the reindex, which moves it
	// aside and puts an empty one in place, then the reindex).
	for _, how := range []string{"damaged", "missing", "reindex"} {
		t.Run(how, func(t *testing.T) {
			fsys, r, home := readerOf(t, 40)
			idx := filepath.Join(home, IndexDir, IndexFile)
			segDir := filepath.Join(home, SegmentsDir)
			switch how {
			case "damaged", "reindex":
				if err := fsys.WriteFileAtomic(idx, make([]byte, 3*8192), 0o600); err != nil {
					t.Fatal(err)
				}
			case "missing":
				if err := fsys.Remove(idx); err != nil {
					t.Fatal(err)
				}
			}
			var (
				rep      VerifyReport
				verr     error
				verified bool
				busy     bool
			)
			fsys.SetHook(func(op vfs.Op, path string) error {
				// The writer's rebuild reads its first segment: the
				// empty index is in place, the rebuilt one not yet.
				if busy || verified || op != vfs.OpOpenRead || filepath.Dir(path) != segDir {
					return nil
				}
				if _, err := fsys.Stat(idx + ".tmp"); err == nil {
					return nil
				}
				busy = true
				defer func() { busy = false }()
				verified = true
				rep, verr = r.Verify(nil)
				return nil
			})
			w, err := Open(home, Options{FS: fsys, Clock: testClock(), Writable: true, ForReindex: how == "reindex"})
			if err == nil && how == "reindex" {
				var rr ReindexReport
				if rr, err = w.Reindex(nil); err == nil && rr.Objects != 40 {
					t.Fatalf("reindex took in %d objects: want 40", rr.Objects)
				}
			} else if err == nil && !strings.Contains(strings.Join(w.Notices, "\n"), "rebuilt from") {
				t.Fatalf("writer's open did not rebuild the index: notices %q", w.Notices)
			}
			fsys.SetHook(nil)
			if err != nil {
				t.Fatal(err)
			}
			if !verified {
				t.Fatal("verify did not run during the rebuild")
			}
			if verr == nil {
				t.Fatalf("verify during the rebuild passed: %d objects, %d records, %d orphans, problems %v: want it to say a rebuild is in progress", rep.Objects, rep.Records, rep.Orphans, rep.Problems)
			}
			for _, want := range []string{idx, "20 records", "a writer holds the store", "rebuilding", "run `rook store verify` again"} {
				if !strings.Contains(verr.Error(), want) {
					t.Errorf("error %q does not say %q", verr, want)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			// Once the rebuild is done, the same reader verifies every object.
			rep, err = r.Verify(nil)
			if err != nil || len(rep.Problems) != 0 || rep.Objects != 40 {
				t.Fatalf("verify after the rebuild: %d objects, problems %v, error %v: want 40, nothing wrong", rep.Objects, rep.Problems, err)
			}
		})
	}
}

// A store that truly holds nothing (a new one: an index with no commit,
// no record in any segment) still verifies clean.
func TestVerifyPassesATrulyEmptyStore(t *testing.T) {
	fsys := vfs.NewMem()
	w, home := newStore(t, fsys, Options{})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := Open(home, Options{FS: fsys, Clock: testClock()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if tx := r.tree.Snapshot().TxID(); tx != 0 {
		t.Fatalf("index of a new store at txid %d: want no commit", tx)
	}
	for _, held := range []bool{false, true} {
		if held {
			// A writer holding it, before it wrote anything.
			l, err := fsys.TryLock(filepath.Join(home, LockFile), FileMode)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Unlock()
		}
		rep, err := r.Verify(nil)
		if err != nil || len(rep.Problems) != 0 || rep.Objects != 0 || rep.Records != 0 {
			t.Fatalf("verify of an empty store (writer lock held %v): %+v, error %v: want clean", held, rep, err)
		}
	}
}

// A rebuild that is done by verify's next look passes: verify read the
// empty index, waited, read the store again and checked every object.
func TestVerifyReadsAgainOnceTheRebuildIsDone(t *testing.T) {
	fsys, r, home := readerOf(t, 40)
	idx := filepath.Join(home, IndexDir, IndexFile)
	segDir := filepath.Join(home, SegmentsDir)
	rebuilt, err := vfs.ReadFile(fsys, idx)
	if err != nil {
		t.Fatal(err)
	}
	// The empty index a writer's open puts in place: a new store's.
	nfs := vfs.NewMem()
	n, nhome := newStore(t, nfs, Options{})
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	empty, err := vfs.ReadFile(nfs, filepath.Join(nhome, IndexDir, IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := fsys.WriteFileAtomic(idx, empty, 0o600); err != nil {
		t.Fatal(err)
	}
	// The rebuilding writer holds the store.
	l, err := fsys.TryLock(filepath.Join(home, LockFile), FileMode)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	// The rebuilt index goes in once verify's first attempt has listed
	// the segments to read (its second listing: the first names the
	// state it starts from).
	busy, lists, done := false, 0, false
	fsys.SetHook(func(op vfs.Op, path string) error {
		if busy || done || op != vfs.OpReadDir || path != segDir {
			return nil
		}
		busy = true
		defer func() { busy = false }()
		if lists++; lists == 2 {
			done = true
			if err := fsys.WriteFileAtomic(idx, rebuilt, 0o600); err != nil {
				t.Error(err)
			}
		}
		return nil
	})
	rep, err := r.Verify(nil)
	fsys.SetHook(nil)
	if !done {
		t.Fatal("the rebuilt index was not put in place under verify")
	}
	if err != nil || len(rep.Problems) != 0 || rep.Objects != 40 {
		t.Fatalf("verify across a rebuild that finished: %d objects, problems %v, error %v: want 40, nothing wrong", rep.Objects, rep.Problems, err)
	}
}

// The first writer of a new store (a first `rook import` right after
// `rook init`) puts objects and makes them durable with Barriers; the index
// takes its first commit only once CommitEvery (4 MiB) of records went in,
// or at Close. A reader's `rook store verify` meanwhile read an index of no
// commit beside segments holding records, saw the writer lock held, and
// failed saying the writer "is rebuilding the index from the segments" and
// that it checked no object. No rebuild runs (there is no rebuild marker,
// which is what a rebuild writes first): the message sends the user after
// a rebuild that does not exist. A reader sees those records (session show
// reads them: loadRecent), so verify can check them, or at least say what
// is happening (a writer has not committed its first objects yet).
func TestVerifyBesideAFirstWriterBeforeItsFirstCommitDoesNotClaimARebuild(t *testing.T) {
	fsys := vfs.NewMem()
	w, home := newStore(t, fsys, Options{})
	var ids []Key
	for i := range 5 {
		ids = append(ids, mustPut(t, w, KindFile, noise(3000, uint64(2*i+1))))
	}
	if err := w.Barrier(); err != nil {
		t.Fatal(err)
	}
	if tx := w.tree.Snapshot().TxID(); tx != 0 {
		t.Skipf("the writer's Barrier committed the index (txid %d): no window", tx)
	}
	if marked, _, err := rebuildMarked(fsys, home); err != nil || marked {
		t.Fatalf("rebuild marker present %v (%v): want none, no rebuild runs", marked, err)
	}

	r := openReader(t, fsys, home)
	// The reader sees the acknowledged objects (what session show reads).
	for _, id := range ids {
		if _, err := r.Get(id); err != nil {
			t.Fatalf("reader cannot read %s beside the first writer: %v", id, err)
		}
	}
	rep, err := r.Verify(nil)
	if err != nil && strings.Contains(err.Error(), "rebuilding") {
		t.Fatalf("verify beside a first writer that has not committed yet (no rebuild marker, no rebuild): %v\n(%d objects, %d records): want the records checked, or a message that says what is happening, not a rebuild", err, rep.Objects, rep.Records)
	}
	if err != nil {
		t.Fatalf("verify beside a first writer: %v", err)
	}
	// Checked as the reader reads them: every object, none an orphan.
	if rep.Objects != len(ids) || rep.Orphans != 0 || len(rep.Problems) != 0 {
		t.Fatalf("verify beside a first writer checked %d objects (%d orphans, problems %v): want the %d the reader reads, no orphan, no problem", rep.Objects, rep.Orphans, rep.Problems, len(ids))
	}
}
