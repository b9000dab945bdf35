package agent

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"syscall"
	"testing"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// The maintenance fault sweeps: the crash sweeps' operations, with the
// k-th write operation failing (a full disk, say) and the process going
// on: the operation returns, the store is closed as a command closes it,
// and only then does the power go. What the fault left, on the disk as it
// is and as a power cut leaves it, must hold the same invariants as after
// a crash (checkMaint): a write path that goes on after a failed write is
// where a commit can name what never reached the disk.

// failOnce installs a hook that fails the k-th write operation with
// ENOSPC and lets every other one through; it reports whether the k-th
// was reached.
func failOnce(fsys *vfs.MemFS, k int) func() bool {
	var mu sync.Mutex
	n, hit := 0, false
	fsys.SetHook(func(op vfs.Op, _ string) error {
		if !op.IsWrite() {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		i := n
		n++
		if i != k {
			return nil
		}
		hit = true
		return syscall.ENOSPC
	})
	return func() bool {
		mu.Lock()
		defer mu.Unlock()
		return hit
	}
}

// sweepMaintFaults runs op on a copy of the base with each write
// operation k in turn failing once, closes the store, and checks both
// what is on the disk and what a power cut right after the close leaves.
func sweepMaintFaults(t *testing.T, b *maintBase, op maintOp) int {
	t.Helper()
	rng := rand.New(rand.NewPCG(21, 22))
	for k := 0; ; k++ {
		if op.reset != nil {
			op.reset()
		}
		fsys := b.fsys.CrashClone()
		hit := failOnce(fsys, k)
		r, err := Open(crashHome, Options{FS: fsys, Clock: b.clk, Writable: true})
		if err == nil {
			err = op.run(r)
			if cerr := r.Close(); err == nil {
				err = cerr
			}
		}
		fsys.SetHook(nil)
		if !hit() {
			if err != nil {
				t.Fatalf("no fault at write %d but the operation failed: %v", k, err)
			}
			return k
		}
		if err != nil && !isNoSpace(err) {
			t.Fatalf("fault at write %d: the error %v does not carry the fault", k, err)
		}
		states := []*vfs.MemFS{fsys.CrashClone(), fsys.CrashCloneRandom(rng), fsys}
		for i, s := range states {
			if op.reset != nil {
				op.reset()
			}
			checkMaint(t, fmt.Sprintf("fault at write %d (error %v; state %d)", k, err, i), b, op, s, k)
		}
	}
}

func isNoSpace(err error) bool { return errors.Is(err, syscall.ENOSPC) }

func TestGCFaultSweep(t *testing.T) {
	b := newMaintBase(t, 12)
	n := sweepMaintFaults(t, b, maintOp{
		run: func(r *Rook) error {
			if _, err := r.Log.Summary(b.ids[1]); err == nil {
				if _, err := r.RemoveSession(b.ids[1]); err != nil {
					return err
				}
			}
			_, err := r.GC(0, false, nil, nil)
			return err
		},
		gone: map[eventlog.ID]bool{b.ids[1]: true},
		done: func(t *testing.T, k int, r *Rook) {
			if _, err := r.Log.Summary(b.ids[1]); err == nil {
				t.Fatalf("fault at write %d: the removed session is there after rm ran again", k)
			}
			gcCollectsNothing(t, k, r)
		},
	})
	t.Logf("swept %d fault points", n)
}

func TestRepackFaultSweep(t *testing.T) {
	b := newMaintBase(t, 12)
	n := sweepMaintFaults(t, b, maintOp{
		run: func(r *Rook) error { _, err := r.Store.Repack(nil); return err },
	})
	t.Logf("swept %d fault points", n)
}

func TestTrainFaultSweep(t *testing.T) {
	b := newMaintBase(t, 600)
	opts := cas.TrainOptions{Kinds: []cas.Kind{cas.KindMessage}, Samples: 150, OnlyMissing: true}
	n := sweepMaintFaults(t, b, maintOp{
		run: func(r *Rook) error { _, err := r.Store.Train(opts); return err },
		done: func(t *testing.T, k int, r *Rook) {
			if len(r.Store.Dictionaries()) == 0 {
				t.Fatalf("fault at write %d: no dictionary after training again", k)
			}
		},
	})
	t.Logf("swept %d fault points", n)
}

func TestReindexFaultSweep(t *testing.T) {
	b := newMaintBase(t, 12)
	n := sweepMaintFaults(t, b, maintOp{
		run: func(r *Rook) error {
			for i := 0; i < 5; i++ {
				if _, err := r.Store.Put(cas.KindNote, []byte(fmt.Sprintf("put before the reindex %d", i))); err != nil {
					return err
				}
			}
			_, err := r.Store.Reindex(nil)
			return err
		},
	})
	t.Logf("swept %d fault points", n)
}

func TestPruneFaultSweep(t *testing.T) {
	b := newMaintBase(t, 12)
	n := sweepMaintFaults(t, b, maintOp{
		run: func(r *Rook) error {
			_, err := r.Prune(RetentionPolicy{MaxSessions: new(1)}, false)
			return err
		},
		gone: map[eventlog.ID]bool{b.ids[0]: true, b.ids[1]: true},
		done: func(t *testing.T, k int, r *Rook) {
			if ids, _ := r.Log.IDs(); len(ids) != 1 || ids[0] != b.ids[2] {
				t.Fatalf("fault at write %d: after prune ran again the sessions are %v, want only %s", k, ids, b.ids[2])
			}
		},
	})
	t.Logf("swept %d fault points", n)
}

func TestMaintainFaultSweep(t *testing.T) {
	b := newMaintBase(t, 12)
	cfg := Config{Storage: StorageConfig{Retention: RetentionPolicy{MaxTotalBytes: new(int64(1))}}}
	n := sweepMaintFaults(t, b, maintOp{
		run:  func(r *Rook) error { _, err := r.Maintain(cfg, false, nil); return err },
		gone: map[eventlog.ID]bool{b.ids[0]: true, b.ids[1]: true, b.ids[2]: true},
		done: func(t *testing.T, k int, r *Rook) {
			if ids, _ := r.Log.IDs(); len(ids) != 0 {
				t.Fatalf("fault at write %d: after maintain ran again %d session(s) are left", k, len(ids))
			}
			gcCollectsNothing(t, k, r)
		},
	})
	t.Logf("swept %d fault points", n)
}
