package cas

import (
	"bytes"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rookhq/rook/internal/clock"
	"github.com/rookhq/rook/internal/vfs"
)

// raceFS runs before once, the first time the format marker is opened,
// after that open found no marker: another rook that makes the store and
// writes to it between one init's look for the marker and the rest of it.
type raceFS struct {
	vfs.FS
	marker string
	once   sync.Once
	before func()
}

func (r *raceFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f, err := r.FS.OpenFile(name, flag, perm)
	if name == r.marker && err != nil {
		r.once.Do(r.before)
	}
	return f, err
}

// TestInitRacingInitLeavesTheStore: two `rook init` run at once on a new
// home (hooks an agent runs together, each making sure the store is
// there) both found no marker and both went on to make the store without
// the writer lock: the second opened for writing the index the first had
// made and a writer was using, and wrote the marker again, saying it had
// created the store; with 20 at once, some failed ("rename
// objects.idx.tmp: no such file or directory"). init now makes the store
// under the writer lock, and one that finds the marker once it holds the
// lock leaves the store as it is.
func TestInitRacingInitLeavesTheStore(t *testing.T) {
	mem := vfs.NewMem()
	home := "/home/u/.rook"
	var first []byte
	var id Key
	rfs := &raceFS{FS: mem, marker: filepath.Join(home, MarkerFile)}
	rfs.before = func() {
		if _, err := Init(mem, testClock(), home); err != nil {
			t.Fatal(err)
		}
		s, err := Open(home, Options{FS: mem, Clock: testClock(), Writable: true})
		if err != nil {
			t.Fatal(err)
		}
		id = mustPut(t, s, KindNote, bytes.Repeat([]byte("written by the rook that made the store "), 20))
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if first, err = vfs.ReadFile(mem, filepath.Join(home, MarkerFile)); err != nil {
			t.Fatal(err)
		}
	}
	later := &clock.Fixed{T: testClock().T.Add(time.Hour)}
	existed, err := Init(rfs, later, home)
	if err != nil {
		t.Fatalf("init racing another: %v", err)
	}
	if !existed {
		t.Errorf("init said it created a store another init had made")
	}
	if now, _ := vfs.ReadFile(mem, filepath.Join(home, MarkerFile)); !bytes.Equal(now, first) {
		t.Errorf("the marker was written again: %q, was %q", now, first)
	}
	s, err := Open(home, Options{FS: mem, Clock: later})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Get(id); err != nil {
		t.Fatalf("the object written before the second init: %v", err)
	}
}

// TestInitConcurrent: many inits at once on a new home all succeed, and
// leave one store.
func TestInitConcurrent(t *testing.T) {
	for round := range 5 {
		home := filepath.Join(t.TempDir(), "store")
		var wg sync.WaitGroup
		errs := make(chan error, 20)
		for range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := Init(vfs.OS, nil, home); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("round %d: %v", round, err)
		}
		s, err := Open(home, Options{Writable: true})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		s.Close()
	}
}

// markerWriteFS calls during when the format marker is written: init
// holds the writer lock then.
type markerWriteFS struct {
	vfs.FS
	marker string
	during func()
}

func (m *markerWriteFS) WriteFileAtomic(name string, data []byte, perm fs.FileMode) error {
	if name == m.marker {
		m.during()
	}
	return m.FS.WriteFileAtomic(name, data, perm)
}

// TestInitNamesItselfInTheLock: init holds the writer lock while it makes
// a store, and wrote nothing in the lock file: doctor run meanwhile said
// "writer none (the store is free)" of a held lock, and another init that
// waited for it failed naming "another process". It describes itself as
// a writer does.
func TestInitNamesItselfInTheLock(t *testing.T) {
	mem := vfs.NewMem()
	home := "/home/u/.rook"
	var holder string
	var herr error
	mfs := &markerWriteFS{FS: mem, marker: filepath.Join(home, MarkerFile)}
	mfs.during = func() { holder, herr = LockHolder(mem, home) }
	if _, err := Init(mfs, testClock(), home); err != nil {
		t.Fatal(err)
	}
	if herr != nil || !strings.HasPrefix(holder, "pid ") || !strings.HasSuffix(holder, "(rook init)") {
		t.Fatalf("lock holder while init makes the store: %q, %v; want pid N (rook init)", holder, herr)
	}
}

// TestInitWaitEndsWhenAnotherMakesTheStore: init waiting for the lock of
// a home with no marker stops waiting when the marker appears (the holder
// was another init, and a writer may hold the lock from then on): it
// reports the store as found, long before its wait is over.
func TestInitWaitEndsWhenAnotherMakesTheStore(t *testing.T) {
	mem := vfs.NewMem()
	home := "/home/u/.rook"
	if _, err := Init(mem, testClock(), home); err != nil {
		t.Fatal(err)
	}
	marker, err := vfs.ReadFile(mem, filepath.Join(home, MarkerFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := mem.Remove(filepath.Join(home, MarkerFile)); err != nil {
		t.Fatal(err)
	}
	l, err := mem.TryLock(filepath.Join(home, LockFile), FileMode)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	time.AfterFunc(50*time.Millisecond, func() {
		mem.WriteFileAtomic(filepath.Join(home, MarkerFile), marker, FileMode)
	})
	start := time.Now()
	existed, err := InitWith(mem, testClock(), home, Options{LockWait: time.Minute})
	if err != nil || !existed {
		t.Fatalf("init while another made the store: existed %v, %v", existed, err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("init waited %v after the marker appeared", d)
	}

	// With no wait at all it fails at once, naming no wait.
	if err := mem.Remove(filepath.Join(home, MarkerFile)); err != nil {
		t.Fatal(err)
	}
	_, err = InitWith(mem, testClock(), home, Options{})
	var le *LockedError
	if !errors.As(err, &le) || le.Waited != 0 {
		t.Fatalf("init with no wait on a held lock: %v", err)
	}
}
