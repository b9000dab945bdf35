package agent

import (
	"bytes"
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
// operation k in turn failing once, closes the store, and checks what is
// on the disk, what a power cut right after the close leaves, and what a
// power cut leaves after the next command wrote.
func sweepMaintFaults(t *testing.T, b *maintBase, op maintOp) int {
	t.Helper()
	rng := rand.New(rand.NewPCG(21, 22))
	for k := 0; ; k++ {
		fsys, hit, err := runFaulted(t, b, op, k)
		if !hit {
			if err != nil {
				t.Fatalf("no fault at write %d but the operation failed: %v", k, err)
			}
			return k
		}
		if err != nil && !isNoSpace(err) {
			t.Fatalf("fault at write %d: the error %v does not carry the fault", k, err)
		}
		what := fmt.Sprintf("fault at write %d (error %v)", k, err)
		for i, s := range []*vfs.MemFS{fsys.CrashClone(), fsys.CrashCloneRandom(rng), fsys} {
			if op.reset != nil {
				op.reset()
			}
			checkMaint(t, fmt.Sprintf("%s (state %d: %s)", what, i, faultStates[i]), b, op, s, k)
		}
		// The next command, on the disk as the fault left it, writes and
		// is acknowledged, and then the power goes: what the faulted
		// operation left in doubt (a rename whose directory sync failed,
		// say) must not take the next command's writes with it. The run
		// is the same again (MemFS and the clock are deterministic).
		fsys, _, _ = runFaulted(t, b, op, k)
		nextCommand(t, what+", the next command", b, fsys)
		for i, s := range []*vfs.MemFS{fsys.CrashClone(), fsys.CrashCloneRandom(rng), fsys} {
			checkAfterNext(t, fmt.Sprintf("%s, the next command (state %d: %s)", what, i, faultStates[i]), b, op, s)
		}
	}
}

// faultStates names the states sweepMaintFaults checks.
var faultStates = []string{"a power cut", "a power cut, some unsynced writes kept", "no power cut"}

// runFaulted runs op on a copy of the base with write operation k
// failing once, and closes the store, as a command does; it returns the
// file system, whether the fault was reached, and the operation's error
// (or the close's).
func runFaulted(t *testing.T, b *maintBase, op maintOp, k int) (*vfs.MemFS, bool, error) {
	t.Helper()
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
	return fsys, hit(), err
}

// nextCommandTitle names the session nextCommand writes.
const nextCommandTitle = "written after the fault"

// nextCommand is the command a user runs after the faulted one: it opens
// the store, writes a session of messages (the kind training makes a
// dictionary for) and closes it, every write acknowledged.
func nextCommand(t *testing.T, what string, b *maintBase, fsys *vfs.MemFS) {
	t.Helper()
	r, err := Open(crashHome, Options{FS: fsys, Clock: b.clk, Writable: true})
	if err != nil {
		t.Fatalf("%s: open: %v", what, err)
	}
	m, err := r.NewSession(nextCommandTitle, b.ws, nil)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	for i := 0; i < 40; i++ {
		if _, err := r.Append(m.ID, Entry{Kind: eventlog.KindAssistant, Label: "model", Body: maintTrainBody(90000 + i)}); err != nil {
			t.Fatalf("%s: append: %v", what, err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatalf("%s: close: %v", what, err)
	}
}

// checkAfterNext opens what a power cut after nextCommand left and checks
// the invariants (not running the operation again: it could delete the
// next command's session), and that the session nextCommand wrote is
// there and reads whole.
func checkAfterNext(t *testing.T, what string, b *maintBase, op maintOp, fsys *vfs.MemFS) {
	t.Helper()
	r, err := Open(crashHome, Options{FS: fsys, Clock: b.clk, Writable: true})
	if err != nil {
		t.Fatalf("%s: open: %v", what, err)
	}
	defer r.Close()
	checkMaintState(t, what, b, op, r)
	found := false
	ids, err := r.Log.IDs()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	for _, id := range ids {
		m, err := r.Log.ReadMeta(id)
		if err != nil || m.Title != nextCommandTitle {
			continue
		}
		found = true
		evs, err := r.Log.Read(id, 0, 1000)
		if err != nil || len(evs) != 40 {
			t.Fatalf("%s: the next command's session holds %d events (%v), want 40", what, len(evs), err)
		}
		for i, ev := range evs {
			body, err := r.Body(ev)
			if err != nil || !bytes.Equal(body, maintTrainBody(90000+i)) {
				t.Fatalf("%s: the next command's event %d: %v", what, i, err)
			}
		}
	}
	if !found {
		t.Fatalf("%s: the next command's session is gone", what)
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
