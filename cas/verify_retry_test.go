package cas

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rookhq/rook/index"
	"github.com/rookhq/rook/internal/vfs"
)

// retryingVerify makes a store of many small segments and a reader of it,
// and runs the reader's verify while a repack in the same MemFS commits
// and removes the segments the reader listed (during verify's first read
// of a segment): the first attempt meets a segment gone and reads the
// store again. after, when not nil, is installed as the MemFS hook once
// the repack is done. It returns the report, the error and the home.
func retryingVerify(t *testing.T, after func(fsys *vfs.MemFS, home string) func(op vfs.Op, path string) error) (VerifyReport, error, string) {
	t.Helper()
	fsys, s, home := storeOf(t, 60)
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	if segs, err := s.listSegments(); err != nil || len(segs) < 3 {
		t.Fatalf("segments %v %v: want several", segs, err)
	}
	r := openReader(t, fsys, home)
	repacked := false
	rep, err := r.Verify(func(done, total int64) {
		if repacked {
			return
		}
		repacked = true
		if _, err := s.Repack(nil); err != nil {
			t.Fatal(err)
		}
		if after != nil {
			fsys.SetHook(after(fsys, home))
		}
	})
	fsys.SetHook(nil)
	if !repacked {
		t.Fatal("verify read no segment")
	}
	return rep, err, home
}

// The store changing under a reader's verify (a repack removing the
// segments it listed) makes it read the store again, and what it reports
// is of the new state: here, nothing wrong.
func TestVerifyReadsAgainAfterARepackRemovedItsSegments(t *testing.T) {
	rep, err, _ := retryingVerify(t, nil)
	if err != nil || len(rep.Problems) != 0 || rep.Objects != 60 {
		t.Fatalf("verify across a repack: %d objects, problems %v, error %v: want 60 objects, nothing wrong", rep.Objects, rep.Problems, err)
	}
}

// A read of the index that fails on verify's second attempt (after the
// store changed under the first) was not told as one: the first attempt
// reports such a failure as index_read_failed (not damage, no reindex
// advice), the second returned the OS error bare, with an empty report.
// Every attempt now says it the same way.
func TestVerifyTellsASecondAttemptsIndexReadFailure(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EIO, syscall.EACCES, syscall.EMFILE} {
		t.Run(errno.Error(), func(t *testing.T) {
			var idx string
			rep, err, _ := retryingVerify(t, func(fsys *vfs.MemFS, home string) func(vfs.Op, string) error {
				// Every read of the index fails from the first listing
				// of the segments after the repack: once the first
				// attempt has looked at the index's newest commit,
				// before the second reads it.
				idx = filepath.Join(home, IndexDir, IndexFile)
				armed := false
				return func(op vfs.Op, path string) error {
					armed = armed || (op == vfs.OpReadDir && path == filepath.Join(home, SegmentsDir))
					if armed && op == vfs.OpRead && path == idx {
						return errno
					}
					return nil
				}
			})
			if err != nil {
				t.Fatalf("verify failed (%v): want the index read failure in the report", err)
			}
			if !rep.IndexReadFailed || len(rep.Problems) != 1 {
				t.Fatalf("index read failed %v, problems %+v: want the read failure reported once", rep.IndexReadFailed, rep.Problems)
			}
			p := rep.Problems[0]
			if p.Status != ProblemIndexReadFailed || strings.Contains(p.Reason, "damaged") || strings.Contains(p.Reason, "reindex") {
				t.Fatalf("problem %q (status %q): want the index read failure, not damage", p.Reason, p.Status)
			}
			for _, want := range []string{idx, errno.Error(), "the store may be fine", "run `rook store verify` again"} {
				if !strings.Contains(p.Reason, want) {
					t.Errorf("problem %q does not say %q", p.Reason, want)
				}
			}
		})
	}
}

// readerOf makes a store holding n objects in several segments, closed,
// and a reader of it.
func readerOf(t *testing.T, n int) (*vfs.MemFS, *Store, string) {
	t.Helper()
	fsys, s, home := storeOf(t, n)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return fsys, openReader(t, fsys, home), home
}

// storeOf is a writer's store of n objects over several segments.
func storeOf(t *testing.T, n int) (*vfs.MemFS, *Store, string) {
	t.Helper()
	fsys := vfs.NewMem()
	s, home := newStore(t, fsys, Options{SegmentSize: 8192, BlockSize: 4096})
	for i := range n {
		mustPut(t, s, KindFile, noise(3000, uint64(2*i+1)))
	}
	return fsys, s, home
}

// openReader opens a reader of the store at home, closed when t ends.
func openReader(t *testing.T, fsys *vfs.MemFS, home string) *Store {
	t.Helper()
	r, err := Open(home, Options{FS: fsys, Clock: testClock()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// An index that vanished while verify looked for its newest commit (a
// writer's open moves a damaged index aside and puts a rebuilt one in its
// place) was reported as an index read failure (ENOENT: "check the disk
// and the file's permissions"). The store changed: verify reads it again.
func TestVerifyReadsAgainWhenTheIndexWasReplaced(t *testing.T) {
	fsys, r, home := readerOf(t, 40)
	idx := filepath.Join(home, IndexDir, IndexFile)
	b, err := vfs.ReadFile(fsys, idx)
	if err != nil {
		t.Fatal(err)
	}
	busy, moved, replaced := false, false, false
	fsys.SetHook(func(op vfs.Op, path string) error {
		if busy {
			return nil
		}
		busy = true
		defer func() { busy = false }()
		switch {
		case !moved && op == vfs.OpStat && path == idx:
			// Moved aside just before verify looks at it ...
			moved = true
			if err := fsys.Rename(idx, idx+".damaged"); err != nil {
				t.Error(err)
			}
		case moved && !replaced:
			// ... and a new file of the same commit put in its place
			// at the next operation.
			replaced = true
			if err := fsys.WriteFileAtomic(idx, b, 0o600); err != nil {
				t.Error(err)
			}
		}
		return nil
	})
	rep, err := r.Verify(nil)
	fsys.SetHook(nil)
	if err != nil || len(rep.Problems) != 0 || rep.IndexReadFailed || rep.Objects != 40 {
		t.Fatalf("verify across an index replaced: %d objects, read failed %v, problems %v, error %v: want 40 objects, nothing wrong", rep.Objects, rep.IndexReadFailed, rep.Problems, err)
	}
	if !replaced {
		t.Fatal("the index was not replaced under verify")
	}
}

// An index gone for good (removed by hand after the reader opened) is
// not a read failure either, once verify has looked again a few times:
// it is missing, and a reindex rebuilds it, as a reader's open says.
func TestVerifyCallsAnIndexGoneForGoodMissing(t *testing.T) {
	fsys, r, home := readerOf(t, 10)
	idx := filepath.Join(home, IndexDir, IndexFile)
	if err := fsys.Remove(idx); err != nil {
		t.Fatal(err)
	}
	rep, err := r.Verify(nil)
	if err == nil {
		t.Fatalf("verify with the index gone: report %+v, no error", rep)
	}
	if rep.IndexReadFailed || strings.Contains(err.Error(), "check the disk") {
		t.Fatalf("index gone called a read failure: %v (report %+v)", err, rep)
	}
	for _, want := range []string{"index " + idx + " is missing", "rook store reindex"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// changingStore is a store of 20 objects over a few segments, its writer
// and a reader of it, for a writer to commit under the reader's verify.
func changingStore(t *testing.T) (*vfs.MemFS, *Store, *Store, string) {
	t.Helper()
	fsys, w, home := storeOf(t, 20)
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	return fsys, w, openReader(t, fsys, home), home
}

// commitOne has the writer put and sync the n-th new object.
func commitOne(t *testing.T, w *Store, n int) {
	mustPut(t, w, KindFile, noise(100, uint64(1000+2*n)))
	if err := w.Sync(); err != nil {
		t.Error(err)
	}
}

// A segment that vanishes under every attempt (the store changing all
// the time: here a writer commits while each attempt reads, and the
// segment's open fails with ENOENT) is read again a bounded number of
// times; then verify says the store kept changing and to run it again,
// not a bare "file does not exist".
func TestVerifyGivesUpOnAStoreThatKeepsChanging(t *testing.T) {
	fsys, w, r, home := changingStore(t)
	seg := filepath.Join(home, SegmentsDir, segName(2))
	busy, opens := false, 0
	fsys.SetHook(func(op vfs.Op, path string) error {
		if busy || op != vfs.OpOpenRead || path != seg {
			return nil
		}
		busy = true
		defer func() { busy = false }()
		opens++
		commitOne(t, w, opens)
		return syscall.ENOENT
	})
	rep, err := r.Verify(nil)
	fsys.SetHook(nil)
	if opens != verifyAttempts {
		t.Errorf("segment opened %d times: want one per attempt, %d", opens, verifyAttempts)
	}
	if err == nil {
		t.Fatalf("report %+v, no error: want verify to give up", rep)
	}
	for _, want := range []string{"kept changing", segName(2), "run `rook store verify` again"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// The error of a verify that gave up says how many times it read the
// store: an attempt whose look at the index found none (a writer was
// replacing it) read nothing, and was counted as a read ("read it 5
// times" of a store read 4).
func TestVerifyGivingUpCountsTheReadsItMade(t *testing.T) {
	fsys, w, r, home := changingStore(t)
	idx := filepath.Join(home, IndexDir, IndexFile)
	seg := filepath.Join(home, SegmentsDir, segName(2))
	busy, gone, opens := false, false, 0
	fsys.SetHook(func(op vfs.Op, path string) error {
		if busy {
			return nil
		}
		if !gone && op == vfs.OpStat && path == idx {
			gone = true // the first look finds no index
			return syscall.ENOENT
		}
		if op != vfs.OpOpenRead || path != seg {
			return nil
		}
		busy = true
		defer func() { busy = false }()
		opens++
		commitOne(t, w, opens)
		return syscall.ENOENT
	})
	rep, err := r.Verify(nil)
	fsys.SetHook(nil)
	if !gone || opens != verifyAttempts-1 {
		t.Fatalf("index gone %v, segment opened %d times: want the index gone once, then %d reads", gone, opens, verifyAttempts-1)
	}
	if err == nil {
		t.Fatalf("report %+v, no error: want verify to give up", rep)
	}
	if want := fmt.Sprintf("it read it %d times", verifyAttempts-1); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
}

// An index that vanished when verify looked again at it after finding
// problems (to tell whether the store changed under it: here a repack
// removed the segments it listed, and a writer then moved the index aside
// and put a new one in its place) is the store changing too, not a read
// failure (ENOENT called "check the disk"): verify reads the new state.
func TestVerifyReadsAgainWhenTheIndexWasReplacedAfterProblems(t *testing.T) {
	moved, replaced := false, false
	rep, err, _ := retryingVerify(t, func(fsys *vfs.MemFS, home string) func(vfs.Op, string) error {
		idx := filepath.Join(home, IndexDir, IndexFile)
		busy := false
		return func(op vfs.Op, path string) error {
			if busy {
				return nil
			}
			busy = true
			defer func() { busy = false }()
			switch {
			case !moved && op == vfs.OpStat && path == idx:
				// The first look at the index after the repack: verify's
				// look again, once the first attempt met a segment gone.
				b, err := vfs.ReadFile(fsys, idx)
				if err == nil {
					err = fsys.Rename(idx, idx+".damaged")
				}
				if err == nil {
					err = fsys.WriteFileAtomic(idx+".new", b, 0o600)
				}
				if err != nil {
					t.Error(err)
				}
				moved = true
			case moved && !replaced:
				replaced = true
				if err := fsys.Rename(idx+".new", idx); err != nil {
					t.Error(err)
				}
			}
			return nil
		}
	})
	if !moved {
		t.Fatal("verify did not look at the index again after the repack")
	}
	if err != nil || len(rep.Problems) != 0 || rep.IndexReadFailed || rep.Objects != 60 {
		t.Fatalf("verify across a repack and an index replaced: %d objects, read failed %v, problems %v, error %v: want 60 objects, nothing wrong", rep.Objects, rep.IndexReadFailed, rep.Problems, err)
	}
	if !replaced {
		t.Fatal("verify did not look for the index again")
	}
}

// An index whose newest commit does not read (both meta slots damaged,
// or counters that do not decode: here put in place after the reader
// opened) was verify's bare index error ("index: corrupt: ... no valid
// meta slot", "index counters unreadable"), with no word of what to do.
// It is damaged, and a reindex rebuilds it, as a reader's open says.
func TestVerifyCallsAnIndexWhoseNewestCommitIsDamagedDamaged(t *testing.T) {
	for _, tc := range []struct {
		name, says string
		damage     func(t *testing.T, fsys *vfs.MemFS, idx string)
	}{
		{"meta slots", "no valid meta slot", func(t *testing.T, fsys *vfs.MemFS, idx string) {
			b, err := vfs.ReadFile(fsys, idx)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 8192 { // both meta slots
				b[i] ^= 0x55
			}
			if err := fsys.WriteFileAtomic(idx, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"counters", "index counters unreadable", func(t *testing.T, fsys *vfs.MemFS, idx string) {
			w, err := index.Open(fsys, idx, true)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			if err := w.Commit([]byte{1, 0xff}); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys, r, home := readerOf(t, 10)
			idx := filepath.Join(home, IndexDir, IndexFile)
			tc.damage(t, fsys, idx)
			rep, err := r.Verify(nil)
			if err == nil {
				t.Fatalf("verify of a damaged index: report %+v, no error", rep)
			}
			if rep.IndexReadFailed || strings.Contains(err.Error(), "check the disk") {
				t.Fatalf("damage called a read failure: %v (report %+v)", err, rep)
			}
			for _, want := range []string{"index " + idx + " is damaged", tc.says, "run `rook store reindex`"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}
