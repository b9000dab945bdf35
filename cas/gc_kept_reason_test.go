package cas

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// failIndexReadsAfterCommit makes every read of the index fail (EIO) from
// the first sync of it on: a gc's or repack's commit, when the store was
// synced before.
func failIndexReadsAfterCommit(fsys *vfs.MemFS, home string) {
	dir := filepath.Join(home, IndexDir)
	armed := false
	fsys.SetHook(func(op vfs.Op, path string) error {
		if filepath.Dir(path) != dir {
			return nil
		}
		armed = armed || op == vfs.OpSync
		if armed && op == vfs.OpRead {
			return syscall.EIO
		}
		return nil
	})
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
			failIndexReadsAfterCommit(fsys, home)
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
