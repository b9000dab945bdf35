// Package vfstest holds the crash-sweep loop the storage packages' tests
// share: crash a workload at every write operation in turn, and check what
// each crash leaves behind.
package vfstest

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// Sweep runs, for k = 0, 1, 2, ...: setup on a fresh MemFS, then run with
// the k-th write operation crashing (the strict crash state and n more
// with random unsynced survival drawn from rng are taken just before it),
// then check with those states, strict first. It stops at the first k that
// run completes without reaching, and returns that k: the number of crash
// points swept. run must return the injected fault (or an error wrapping
// it) when it meets the crash.
func Sweep(t testing.TB, rng *rand.Rand, n int, setup func(*vfs.MemFS), run func(*vfs.MemFS) error, check func(k int, states []*vfs.MemFS)) int {
	t.Helper()
	if rng == nil {
		rng = rand.New(rand.NewPCG(0, 0))
	}
	for k := 0; ; k++ {
		fsys := vfs.NewMem()
		if setup != nil {
			setup(fsys)
		}
		var states []*vfs.MemFS
		fsys.CrashAtClones(k, rng, n, func(c []*vfs.MemFS) { states = c })
		err := run(fsys)
		if states == nil {
			if err != nil {
				t.Fatalf("no crash at write %d but the workload failed: %v", k, err)
			}
			return k
		}
		if !errors.Is(err, vfs.ErrInjected) {
			t.Fatalf("crash at write %d: workload error %v, want the injected fault", k, err)
		}
		check(k, states)
	}
}
