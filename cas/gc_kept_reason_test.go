package cas

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// failIndexReads makes every read of the index fail with errno from the
// first operation arm is true of (that one included), and returns the
// index's path.
func failIndexReads(fsys *vfs.MemFS, home string, errno syscall.Errno, arm func(op vfs.Op, path string) bool) string {
	idx := filepath.Join(home, IndexDir, IndexFile)
	armed := false
	fsys.SetHook(func(op vfs.Op, path string) error {
		armed = armed || arm(op, path)
		if armed && op == vfs.OpRead && path == idx {
			return errno
		}
		return nil
	})
	return idx
}

// A segment a gc or repack kept because the index could not be read (to
// check that nothing names it any more) was listed as a damaged segment
// (kept_damaged), though nothing said it was damaged. It is listed in
// kept with its reason, and not in kept_damaged.
func TestKeptForAnUnreadableIndexIsNotDamaged(t *testing.T) {
	for _, op := range []string{"repack", "gc"} {
		t.Run(op, func(t *testing.T) {
			fsys := vfs.NewMem()
			s, home := newStore(t, fsys, Options{})
			live := map[Key]bool{}
			for i := range 20 {
				id := mustPut(t, s, KindFile, noise(3000, uint64(2*i+1)))
				live[id] = i%2 == 0
			}
			if err := s.Sync(); err != nil {
				t.Fatal(err)
			}
			// From the gc's or repack's commit of the index on (the
			// store was synced before).
			failIndexReads(fsys, home, syscall.EIO, func(op vfs.Op, path string) bool {
				return op == vfs.OpSync && path == filepath.Join(home, IndexDir, IndexFile)
			})
			var damaged []string
			var kept []KeptInPlace
			var err error
			if op == "repack" {
				var rep RepackReport
				rep, err = s.Repack(nil)
				damaged, kept = rep.Kept, rep.KeptInPlace
			} else {
				var rep GCReport
				rep, err = s.Collect(GCOptions{Live: func(id Key) bool { return live[id] }})
				damaged, kept = rep.Kept, rep.KeptInPlace
			}
			fsys.SetHook(nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(damaged) != 0 {
				t.Errorf("kept_damaged %q: no segment is known to be damaged", damaged)
			}
			if len(kept) != 1 || kept[0].Segment != segName(1) || kept[0].Reason != KeptIndexUnreadable || kept[0].Damaged() ||
				!strings.Contains(kept[0].Detail, "not known to be damaged") || !strings.Contains(kept[0].Detail, "the index could not be read") {
				t.Errorf("kept %+v: want %s, kept for the index that could not be read", kept, segName(1))
			}
		})
	}
}
