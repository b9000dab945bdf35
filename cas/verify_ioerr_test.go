package cas

import (
	"errors"
	"io/fs"
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

// TestSegmentPermissionDeniedIsNotCorrupt: a segment the reading account may not open (permission denied: a
// `sudo rook` wrote it, a restore set its mode 000), as a user meets it
// with `rook session show`, `rook store cat` or `rook session export`.
//
// What the user does: `rook session show ID` (or `store cat`) on a store
// whose segment 00000002.seg is mode 000 for them.
// What happens (seen with the real binary, as a non-root user): every
// body reads "(body unreadable: object c328dda077cf is corrupt (segment
// 00000002.seg offset 724502): open segment: open ...: permission
// denied)". The object is a cas.CorruptError: "corrupt".
// What should happen: the object is not damaged and nothing should call it
// so: `rook store verify` on the same store already says "permission
// denied: check the permissions" and docs/storage.md tells read failures
// from damage throughout ("a read of the file that the OS failed (an I/O
// error, permission denied ...), which is not damage", Verify and
// reindex; "A session whose files permission keeps from reading is
// whole: ... say to fix the permissions, not `rook session rm`, which is
// for damage", Home layout). "corrupt" sends the user to `--reread`,
// `session fork`/`session rm` (verify's advice for corrupt objects).
// (The read of a record wraps the open's error in a *CorruptError, whose
// Error() said "is corrupt" whatever the cause; it still is one, so that
// the views go on past the body, but says the OS failed the read, which
// is not damage: CorruptError.ReadFailed.)
func TestSegmentPermissionDeniedIsNotCorrupt(t *testing.T) {
	fsys := vfs.NewMem()
	s, home := newStore(t, fsys, Options{})
	id := mustPut(t, s, KindFile, noise(3000, 7))
	s = reopen(t, s, false)
	segDir := filepath.Join(home, SegmentsDir)
	fsys.SetHook(func(op vfs.Op, path string) error {
		if op == vfs.OpOpenRead && filepath.Dir(path) == segDir {
			return &fs.PathError{Op: "open", Path: path, Err: syscall.EACCES}
		}
		return nil
	})
	_, err := s.Get(id)
	fsys.SetHook(nil)
	if err == nil {
		t.Fatal("a read through a segment that cannot be opened returned no error")
	}
	if !errors.Is(err, syscall.EACCES) {
		t.Errorf("the error does not carry permission denied: %v", err)
	}
	var ce *CorruptError
	if strings.Contains(err.Error(), "corrupt") || (errors.As(err, &ce) && strings.Contains(ce.Error(), "corrupt")) {
		t.Errorf("a segment the user may not open is said to hold a corrupt object: %v", err)
	}
}
