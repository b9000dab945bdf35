package cas

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// An index that could not be read (a disk's I/O error, permission denied,
// too many open files) was reported by verify as "index ... is damaged",
// with the counters the partial walk made called wrong too: a rebuild
// advised for a store that may be fine. It is now a read failure, said
// with the path and the OS error, and marked so in the report.
func TestVerifyTellsAnIndexReadFailureFromDamage(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EIO, syscall.EACCES, syscall.EMFILE} {
		t.Run(errno.Error(), func(t *testing.T) {
			fsys := vfs.NewMem()
			s, home := newStore(t, fsys, Options{})
			for i := range 200 {
				mustPut(t, s, KindFile, noise(300, uint64(i)))
			}
			s = reopen(t, s, false)
			// Every read of the index fails once verify lists the
			// segments (after a reader's look at the newest commit).
			idx := failIndexReads(fsys, home, errno, func(op vfs.Op, path string) bool {
				return op == vfs.OpReadDir && path == filepath.Join(home, SegmentsDir)
			})
			rep, err := s.Verify(nil)
			fsys.SetHook(nil)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.IndexReadFailed || len(rep.Problems) != 1 {
				t.Fatalf("index read failed %v, problems %+v: want the read failure reported once", rep.IndexReadFailed, rep.Problems)
			}
			for _, p := range rep.Problems {
				if p.Status != ProblemIndexReadFailed || strings.Contains(p.Reason, "damaged") || strings.Contains(p.Reason, "reindex") {
					t.Errorf("problem %q (status %q): want only the index read failure, not damage", p.Reason, p.Status)
					continue
				}
				for _, want := range []string{idx, errno.Error(), "the store may be fine", "run `rook store verify` again"} {
					if !strings.Contains(p.Reason, want) {
						t.Errorf("problem %q does not say %q", p.Reason, want)
					}
				}
			}
		})
	}
}

// Damage is still damage: a node whose bytes do not decode is "damaged",
// with the rebuild its fix.
func TestVerifyStillCallsADamagedIndexDamaged(t *testing.T) {
	fsys := vfs.NewMem()
	s, home := newStore(t, fsys, Options{})
	for i := range 200 {
		mustPut(t, s, KindFile, noise(300, uint64(i)))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	idx := filepath.Join(home, IndexDir, IndexFile)
	b, err := vfs.ReadFile(fsys, idx)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-10] ^= 0xff // inside the newest node, the root
	if err := fsys.WriteFileAtomic(idx, b, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := Open(home, Options{FS: fsys, Clock: testClock()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rep, err := r.Verify(nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.IndexReadFailed {
		t.Fatalf("damage reported as a read failure: %+v", rep.Problems)
	}
	found := false
	for _, p := range rep.Problems {
		if p.Status == ProblemIndexReadFailed {
			t.Errorf("damage called a read failure: %q", p.Reason)
		}
		if p.Status == ProblemIndexDamaged && strings.Contains(p.Reason, "is damaged") {
			found = true
		}
	}
	if !found {
		t.Fatalf("problems %+v: want the index called damaged", rep.Problems)
	}
}
