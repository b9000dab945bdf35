package index

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

const crashPath = "/db/index"

// crashState is one state the workload committed or tried to commit.
type crashState struct {
	m  model
	um []byte
}

// crashRecorder tracks what a crash may legitimately leave behind: the last
// state whose Commit (or Rebuild) returned nil, and the one in flight.
type crashRecorder struct {
	committed *crashState
	inflight  *crashState
	stats     Stats // at the end of a complete run
}

// crashWorkload runs Put+Commit rounds with deletes, automatic compaction
// (slack 0, so it happens often) and an explicit Rebuild, on fsys.
func crashWorkload(fsys vfs.FS, rec *crashRecorder) error {
	rec.committed = &crashState{m: model{}}
	rec.inflight = nil
	if err := fsys.MkdirAll("/db", 0o755); err != nil {
		return err
	}
	tr, err := Open(fsys, crashPath, true)
	if err != nil {
		return err
	}
	defer tr.Close()
	tr.compactSlack = 0
	rng := rand.New(rand.NewPCG(42, 42))
	cur := model{}
	var keys []Key
	for round := range 16 {
		next := cur.clone()
		um := []byte(fmt.Sprintf("round %d", round))
		if round == 5 {
			// Rebuild: drop a third, add some.
			for _, k := range keys {
				if rng.IntN(3) == 0 {
					delete(next, k)
				}
			}
			for range 30 {
				k := randKey(rng)
				keys = append(keys, k)
				next[k] = randVal(rng, 200)
			}
			rec.inflight = &crashState{m: next, um: um}
			if err := tr.Rebuild(next.iter(), um); err != nil {
				return err
			}
		} else {
			for range 25 + rng.IntN(40) {
				if len(keys) > 0 && rng.IntN(4) == 0 {
					k := keys[rng.IntN(len(keys))]
					tr.Delete(k)
					delete(next, k)
					continue
				}
				k := randKey(rng)
				if len(keys) > 0 && rng.IntN(3) == 0 {
					k = keys[rng.IntN(len(keys))] // overwrite
				} else {
					keys = append(keys, k)
				}
				v := randVal(rng, 200)
				if err := tr.Put(k, v); err != nil {
					return err
				}
				next[k] = v
			}
			rec.inflight = &crashState{m: next, um: um}
			if err := tr.Commit(um); err != nil {
				return err
			}
		}
		rec.committed, rec.inflight = rec.inflight, nil
		cur = next
	}
	rec.stats = tr.Stats()
	return tr.Close()
}

// verifyCrash opens what a crash left and checks it holds exactly one of
// the allowed states, passes Check, and accepts further commits.
func verifyCrash(t *testing.T, what string, clone *vfs.MemFS, committed, inflight *crashState) {
	t.Helper()
	if err := clone.MkdirAll("/db", 0o755); err != nil {
		t.Fatal(err)
	}
	tr, err := Open(clone, crashPath, true)
	if err != nil {
		t.Fatalf("%s: reopen: %v", what, err)
	}
	defer tr.Close()
	if err := tr.Check(); err != nil {
		t.Fatalf("%s: Check: %v", what, err)
	}
	if vfs.Exists(clone, crashPath+".tmp") {
		t.Fatalf("%s: stale temp file not removed", what)
	}
	s := tr.Snapshot()
	match := func(cs *crashState) error {
		if cs == nil {
			return errors.New("no such state")
		}
		if !bytes.Equal(s.UserMeta(), cs.um) {
			return fmt.Errorf("user meta %q, want %q", s.UserMeta(), cs.um)
		}
		return diffSnapshot(s, cs.m)
	}
	err1 := match(committed)
	if err1 != nil {
		if err2 := match(inflight); err2 != nil {
			t.Fatalf("%s: recovered state (txid %d, meta %q) is neither the last commit (%v) nor the one in flight (%v)",
				what, s.TxID(), s.UserMeta(), err1, err2)
		}
	}
	// The recovered index is fully usable.
	tr.Put(Key{0xee}, []byte("after crash"))
	if err := tr.Commit([]byte("after")); err != nil {
		t.Fatalf("%s: commit after recovery: %v", what, err)
	}
	if err := tr.Check(); err != nil {
		t.Fatalf("%s: Check after recovery commit: %v", what, err)
	}
}

func TestCrashSweep(t *testing.T) {
	// An uninjected run tells how many write operations the workload does.
	m := vfs.NewMem()
	rec := &crashRecorder{}
	if err := crashWorkload(m, rec); err != nil {
		t.Fatal(err)
	}
	total := m.WriteOps()
	t.Logf("workload: %d write operations; final %+v", total, rec.stats)
	if rec.stats.Compactions < 2 || rec.stats.Height < 2 {
		t.Fatalf("workload too tame: %+v", rec.stats)
	}

	crashes := 0
	for k := 0; ; k++ {
		if k > total+10 {
			t.Fatalf("k=%d: workload still crashing beyond its %d write ops", k, total)
		}
		m := vfs.NewMem()
		rec := &crashRecorder{}
		var (
			clone               *vfs.MemFS
			committed, inflight *crashState
		)
		m.CrashAt(k, func(c *vfs.MemFS) {
			clone, committed, inflight = c, rec.committed, rec.inflight
		})
		err := crashWorkload(m, rec)
		if clone == nil {
			if err != nil {
				t.Fatalf("k=%d: no crash, but workload failed: %v", k, err)
			}
			break // ran to completion: the sweep is done
		}
		if err == nil && rec.stats.CompactErr == "" {
			// Only a failed compaction (best effort, after the commit is
			// durable) may go unreported.
			t.Fatalf("k=%d: workload reported success after a crash", k)
		}
		crashes++
		verifyCrash(t, fmt.Sprintf("crash at write op %d", k), clone, committed, inflight)

		// The same crash point with a luckier disk: some unsynced writes
		// and directory changes survive, possibly torn.
		for seed := range uint64(3) {
			m := vfs.NewMem()
			rec := &crashRecorder{}
			rng := rand.New(rand.NewPCG(uint64(k), seed))
			var (
				mu                  sync.Mutex
				n                   int
				dead                bool
				clone               *vfs.MemFS
				committed, inflight *crashState
			)
			m.SetHook(func(op vfs.Op, _ string) error {
				mu.Lock()
				defer mu.Unlock()
				if dead {
					return vfs.ErrInjected
				}
				if !op.IsWrite() {
					return nil
				}
				if n++; n-1 < k {
					return nil
				}
				dead = true
				clone, committed, inflight = m.CrashCloneRandom(rng), rec.committed, rec.inflight
				return vfs.ErrInjected
			})
			if err := crashWorkload(m, rec); (err == nil && rec.stats.CompactErr == "") || clone == nil {
				t.Fatalf("k=%d seed %d: random crash did not happen (%v)", k, seed, err)
			}
			verifyCrash(t, fmt.Sprintf("random crash at write op %d (seed %d)", k, seed), clone, committed, inflight)
		}
	}
	t.Logf("%d crash points verified", crashes)
	if crashes < total-1 {
		t.Fatalf("only %d crash points for %d write ops", crashes, total)
	}
}

// TestCommitRetry: failed Commits (failing write, sync or meta write) keep
// the committed state and the pending changes; a retry succeeds, and what
// is on disk stays consistent throughout.
func TestCommitRetry(t *testing.T) {
	for _, failOp := range []vfs.Op{vfs.OpWrite, vfs.OpSync} {
		for nth := range 2 { // which occurrence within the commit fails
			t.Run(fmt.Sprintf("%v-%d", failOp, nth), func(t *testing.T) {
				m := vfs.NewMem()
				tr := mustOpen(t, m, "/index", true)
				defer func() { tr.Close() }()
				tr.compactSlack = -1
				rng := rand.New(rand.NewPCG(13, 13))
				want := model{}
				for range 300 {
					k := randKey(rng)
					want[k] = randVal(rng, 40)
					tr.Put(k, want[k])
				}
				if err := tr.Commit([]byte("one")); err != nil {
					t.Fatal(err)
				}
				next := want.clone()
				for range 100 {
					k := randKey(rng)
					next[k] = randVal(rng, 40)
					tr.Put(k, next[k])
				}
				seen := 0
				m.SetHook(func(op vfs.Op, _ string) error {
					if op == failOp {
						seen++
						if seen-1 == nth {
							return vfs.ErrInjected
						}
					}
					return nil
				})
				err := tr.Commit([]byte("two"))
				m.SetHook(nil)
				if seen <= nth {
					t.Skip("commit does not have that many such operations")
				}
				if err == nil {
					t.Fatal("commit succeeded despite the fault")
				}
				if tr.Pending() != 100 {
					t.Fatalf("pending %d", tr.Pending())
				}
				mustDiff(t, tr.Snapshot(), want)
				// Whatever a crash now would find is consistent.
				c := m.CrashClone()
				r := mustOpen(t, c, "/index", true)
				mustCheck(t, r)
				if d1, d2 := diffSnapshot(r.Snapshot(), want), diffSnapshot(r.Snapshot(), next); d1 != nil && d2 != nil {
					t.Fatalf("crash after failed commit: %v / %v", d1, d2)
				}
				r.Close()
				if err := tr.Commit([]byte("two")); err != nil {
					t.Fatal(err)
				}
				mustCheck(t, tr)
				mustDiff(t, tr.Snapshot(), next)
				tr.Close()
				tr = mustOpen(t, m, "/index", false)
				mustCheck(t, tr)
				mustDiff(t, tr.Snapshot(), next)
				if string(tr.Snapshot().UserMeta()) != "two" {
					t.Fatal("user meta")
				}
			})
		}
	}
}
