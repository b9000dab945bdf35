package cas

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rookhq/rook/internal/vfs"
)

// A writer that finds the lock held waits up to LockWait for it: hooks of
// an agent append at the same moment, and failing all but one lost events.
func TestWriterWaitsForTheLock(t *testing.T) {
	fsys := vfs.NewMem()
	s, home := newStore(t, fsys, Options{Command: "rook session append"})
	var once sync.Once
	release := func() { once.Do(func() { s.Close() }) }
	t.Cleanup(release)
	time.AfterFunc(300*time.Millisecond, release)
	w, err := Open(home, Options{FS: fsys, Writable: true, LockWait: 10 * time.Second})
	if err != nil {
		t.Fatalf("writer waiting for a lock released within its wait: %v", err)
	}
	if _, err := w.Put(KindNote, []byte("after the wait")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// The wait is bounded: past it the open fails as before, saying how long
// it waited and who holds the lock; with no wait it fails at once.
func TestWriterLockWaitTimesOut(t *testing.T) {
	fsys := vfs.NewMem()
	_, home := newStore(t, fsys, Options{Command: "rook import"})
	var told []string
	start := time.Now()
	_, err := Open(home, Options{FS: fsys, Writable: true, LockWait: 1200 * time.Millisecond,
		LockWaiting: func(holder string) { told = append(told, holder) }})
	took := time.Since(start)
	var le *LockedError
	if !errors.As(err, &le) || le.Waited != 1200*time.Millisecond {
		t.Fatalf("open past the wait: %v, want a LockedError that waited 1.2s", err)
	}
	want := fmt.Sprintf("store is locked by pid %d (rook import) (waited 1.2s for it)", os.Getpid())
	if err.Error() != want {
		t.Fatalf("message %q, want %q", err, want)
	}
	if took < 1200*time.Millisecond {
		t.Fatalf("gave up after %v, before its wait", took)
	}
	if len(told) != 1 || !strings.Contains(told[0], "(rook import)") {
		t.Fatalf("LockWaiting called with %q, want once with the holder", told)
	}

	start = time.Now()
	_, err = Open(home, Options{FS: fsys, Writable: true,
		LockWaiting: func(string) { t.Error("LockWaiting called without a wait") }})
	if !errors.As(err, &le) || le.Waited != 0 || strings.Contains(err.Error(), "waited") {
		t.Fatalf("open with no wait: %v", err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("open with no wait took %v", d)
	}
}

// Twenty writers started together, on the real disk (flock): each waits
// its turn and every put lands.
func TestConcurrentWritersAllSucceed(t *testing.T) {
	s, home := newStore(t, vfs.OS, Options{})
	s.Close()
	const n = 20
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			w, err := Open(home, Options{FS: vfs.OS, Writable: true, LockWait: time.Minute})
			if err != nil {
				errs[i] = err
				return
			}
			if _, err := w.Put(KindNote, fmt.Appendf(nil, "writer %d", i)); err != nil {
				w.Close()
				errs[i] = err
				return
			}
			errs[i] = w.Close()
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	r, err := Open(home, Options{FS: vfs.OS})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i := range n {
		b := fmt.Appendf(nil, "writer %d", i)
		if got, err := r.Get(ID(b)); err != nil || string(got) != string(b) {
			t.Fatalf("writer %d's object: %q, %v", i, got, err)
		}
	}
}

// A writer told not to wait still gets a lock that rook's own check of it
// (LockHolder: rook doctor, an interrupted import) held only for an
// instant: it tries again within probeGrace rather than failing for no
// writer at all. The check is let go at the writer's second try, so the
// test fails on a writer that tries only once.
func TestNoWaitWriterOutlastsALockCheck(t *testing.T) {
	fsys := vfs.NewMem()
	s, home := newStore(t, fsys, Options{Command: "rook import"})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	path := home + "/" + LockFile
	check, err := fsys.TryLock(path, FileMode) // LockHolder's instant
	if err != nil {
		t.Fatal(err)
	}
	var tries int
	fsys.SetHook(func(op vfs.Op, p string) error {
		if op == vfs.OpLock && p == path {
			if tries++; tries == 2 {
				check.Unlock()
			}
		}
		return nil
	})
	w, err := Open(home, Options{FS: fsys, Writable: true, LockWait: 0,
		LockWaiting: func(string) { t.Error("LockWaiting called without a wait") }})
	fsys.SetHook(nil)
	if err != nil {
		t.Fatalf("writer with no wait, lock checked for an instant: %v (%d tries)", err, tries)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
