package cas

import (
	"bytes"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rookhq/rook/internal/vfs"
)

// TestGCGraceHoldsWhenAHeaderReadFails: an old object nobody names
// (garbage) and, an hour later, a fresh one nobody names yet (a capture in
// flight, its event not landed) sit in the same segment. gc runs with a
// 10-minute grace; with the fault, reads of the segment fail while it
// plans (EIO, EMFILE: read errors, not damage), and the rewrite that
// would follow reads it fine.
//
// gc never sees an object as older than it is (docs/storage.md, "Garbage
// collection and repack"): a header it could not read once made the
// fresh object "written long ago", planned collectable, and deleted by
// the rewrite. Now the plan stops, collecting nothing, and says to run gc
// again. Without the fault, the fresh object is too new and the old one
// is collected.
func TestGCGraceHoldsWhenAHeaderReadFails(t *testing.T) {
	for _, fault := range []bool{true, false} {
		name := "no fault"
		if fault {
			name = "segment reads fail while gc plans"
		}
		t.Run(name, func(t *testing.T) {
			fsys := vfs.NewMem()
			clk := testClock()
			s, _ := newStore(t, fsys, Options{Clock: clk})
			oldBytes := message(1)
			old, err := s.Put(KindMessage, oldBytes)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Sync(); err != nil {
				t.Fatal(err)
			}
			clk.Advance(time.Hour)
			freshBytes := message(2)
			fresh, err := s.Put(KindMessage, freshBytes)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Sync(); err != nil {
				t.Fatal(err)
			}
			// Reads of segments fail while gc plans (until its first write).
			var planning, read atomic.Bool
			planning.Store(true)
			fsys.SetHook(func(op vfs.Op, path string) error {
				if !planning.Load() {
					return nil
				}
				if op.IsWrite() {
					planning.Store(false)
					return nil
				}
				if (op == vfs.OpRead || op == vfs.OpOpenRead) && strings.Contains(path, "/"+SegmentsDir+"/") {
					read.Store(true)
					if fault {
						return vfs.ErrInjected
					}
				}
				return nil
			})
			rep, gcErr := s.Collect(GCOptions{Live: func(Key) bool { return false }, Grace: 10 * time.Minute})
			fsys.SetHook(nil)
			if !read.Load() {
				t.Fatal("gc's plan read no segment: the test no longer reaches the record headers")
			}
			got, err := s.Get(fresh.ID)
			if err != nil || !bytes.Equal(got, freshBytes) {
				t.Fatalf("an object put just now (within the 10m grace, named by nothing yet) was collected: get: %v (gc report: too_new %d, collectable %d; gc error %v)",
					err, rep.TooNew, rep.Collectable, gcErr)
			}
			if fault {
				if gcErr == nil || !strings.Contains(gcErr.Error(), "nothing collected") || !strings.Contains(gcErr.Error(), "run gc again") {
					t.Fatalf("gc whose plan could not read a record header: %v, want it to stop, collecting nothing, and say to run gc again", gcErr)
				}
				if got, err := s.Get(old.ID); err != nil || !bytes.Equal(got, oldBytes) {
					t.Fatalf("gc stopped by a failed read collected the old object all the same: %v", err)
				}
				return
			}
			if gcErr != nil {
				t.Fatalf("gc: %v", gcErr)
			}
			if rep.TooNew != 1 || rep.Collectable != 1 {
				t.Fatalf("gc: too_new %d, collectable %d, want 1 and 1", rep.TooNew, rep.Collectable)
			}
			if _, err := s.Get(old.ID); err == nil {
				t.Fatal("the old object nothing names is still there after gc")
			}
		})
	}
}
