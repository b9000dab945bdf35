package cas

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// corruptStore builds a small store on a MemFS with inline, packed and
// single-object records, closed, and returns what it holds.
func corruptStore(t *testing.T) (*vfs.MemFS, string, map[Key][]byte) {
	t.Helper()
	fsys := vfs.NewMem()
	s, home := newStore(t, fsys, Options{})
	want := map[Key][]byte{}
	for i := 0; i < 12; i++ {
		d := []byte(fmt.Sprintf("message %d with some words in it to compress, %d", i, i*i))
		want[mustPut(t, s, KindMessage, d)] = d
	}
	for _, d := range [][]byte{[]byte("tiny"), bytes.Repeat([]byte("big file line\n"), 3000), noise(5000, 5)} {
		want[mustPut(t, s, KindFile, d)] = d
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return fsys, home, want
}

func flip(t *testing.T, fsys *vfs.MemFS, path string, off int64) {
	t.Helper()
	b, err := vfs.ReadFile(fsys, path)
	if err != nil {
		t.Fatal(err)
	}
	b[off] ^= 0x5a
	if err := fsys.WriteFileAtomic(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestEveryFlippedSegmentByteIsCaught flips each byte of the segment in
// turn: verify must report a problem, and reading the affected objects must
// fail rather than return wrong bytes.
func TestEveryFlippedSegmentByteIsCaught(t *testing.T) {
	fsys, home, want := corruptStore(t)
	seg := filepath.Join(home, SegmentsDir, segName(1))
	orig, _ := vfs.ReadFile(fsys, seg)
	for off := int64(0); off < int64(len(orig)); off++ {
		c := fsys.CrashClone()
		flip(t, c, seg, off)
		s, err := Open(home, Options{FS: c})
		if err != nil {
			t.Fatalf("byte %d: reader open: %v", off, err)
		}
		rep, err := s.Verify(nil)
		if err != nil {
			t.Fatalf("byte %d: verify: %v", off, err)
		}
		if len(rep.Problems) == 0 {
			t.Fatalf("byte %d of %d flipped: verify found nothing", off, len(orig))
		}
		for id, d := range want {
			got, err := s.Get(id)
			if err == nil && !bytes.Equal(got, d) {
				t.Fatalf("byte %d: object %s returned wrong bytes", off, Short(id))
			}
		}
		s.Close()
	}
}

// TestFlippedIndexBytesAreCaught flips bytes of the index file: verify (or
// the open itself) reports it, reads never return wrong bytes.
func TestFlippedIndexBytesAreCaught(t *testing.T) {
	fsys, home, want := corruptStore(t)
	idx := filepath.Join(home, IndexDir, IndexFile)
	orig, _ := vfs.ReadFile(fsys, idx)
	for off := int64(0); off < int64(len(orig)); off++ {
		if off >= 256 && off < 4096 || off >= 4096+256 && off < 8192 {
			continue // the unused tail of each meta page: spot-checked below
		}
		c := fsys.CrashClone()
		flip(t, c, idx, off)
		s, err := Open(home, Options{FS: c})
		if err != nil {
			continue // refused to open: caught
		}
		rep, err := s.Verify(nil)
		if err == nil && len(rep.Problems) == 0 {
			t.Fatalf("index byte %d flipped: verify found nothing", off)
		}
		for id, d := range want {
			if got, err := s.Get(id); err == nil && !bytes.Equal(got, d) {
				t.Fatalf("index byte %d: object %s returned wrong bytes", off, Short(id))
			}
		}
		s.Close()
	}
	for _, off := range []int64{1000, 4095, 4096 + 1000, 8191} {
		c := fsys.CrashClone()
		flip(t, c, idx, off)
		s, err := Open(home, Options{FS: c})
		if err != nil {
			continue
		}
		rep, _ := s.Verify(nil)
		if len(rep.Problems) == 0 {
			t.Fatalf("index byte %d (meta page padding) flipped: verify found nothing", off)
		}
		s.Close()
	}
}

// TestResubmittingKnownBytesRepairsAnUnreadableCopy: put of bytes whose
// stored copy is damaged writes them again, and the object reads back.
func TestResubmittingKnownBytesRepairsAnUnreadableCopy(t *testing.T) {
	fsys, home, want := corruptStore(t)
	var id Key
	var data []byte
	for k, d := range want {
		if len(d) > 10000 {
			id, data = k, d
		}
	}
	s, _ := Open(home, Options{FS: fsys})
	info, _ := s.Stat(id)
	s.Close()
	flip(t, fsys, filepath.Join(home, SegmentsDir, segName(info.Segment)), info.Offset+recHeaderSize+5)
	w, err := Open(home, Options{FS: fsys, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var ce *CorruptError
	if _, err := w.Get(id); !errors.As(err, &ce) {
		t.Fatalf("damaged object read: %v", err)
	}
	r, err := w.Put(KindFile, data)
	if err != nil || !r.Repaired {
		t.Fatalf("repair put: %+v %v", r, err)
	}
	w.Sync()
	got, err := w.Get(id)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("after repair: %v", err)
	}
	st, _ := w.Stats()
	if st.Objects != int64(len(want)) {
		t.Fatalf("repair changed the object count: %d", st.Objects)
	}
}

// A big object's damaged copy is repaired by a put of its bytes too: the
// copy, compared with them as it is read (not read back whole), fails its
// checks, and the bytes are written again.
func TestResubmittingKnownBytesRepairsADamagedBigCopy(t *testing.T) {
	for _, c := range []struct {
		name string
		data []byte
	}{
		{"raw", noise(3<<20, 23)},
		{"compressed", bytes.Repeat([]byte("a line of a big log file\n"), 200000)},
	} {
		t.Run(c.name, func(t *testing.T) {
			fsys := vfs.NewMem()
			s, home := newStore(t, fsys, Options{})
			id := mustPut(t, s, KindFile, c.data)
			info, err := s.Stat(id)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			flip(t, fsys, filepath.Join(home, SegmentsDir, segName(info.Segment)), info.Offset+recHeaderSize+20)
			w, err := Open(home, Options{FS: fsys, Writable: true})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			var ce *CorruptError
			if _, err := w.Get(id); !errors.As(err, &ce) {
				t.Fatalf("damaged object read: %v", err)
			}
			r, err := w.Put(KindFile, c.data)
			if err != nil || !r.Repaired || r.Existed {
				t.Fatalf("repair put: %+v %v", r, err)
			}
			if err := w.Sync(); err != nil {
				t.Fatal(err)
			}
			if got, err := w.Get(id); err != nil || !bytes.Equal(got, c.data) {
				t.Fatalf("after repair: %d bytes, %v", len(got), err)
			}
		})
	}
}

// TestOneWriterManyReaders runs concurrent Gets, Resolves and Lists against
// a writer that keeps putting and syncing (run under -race).
func TestOneWriterManyReaders(t *testing.T) {
	s, _ := newStore(t, vfs.OS, Options{})
	var mu sync.Mutex
	var known []Key
	known = append(known, mustPut(t, s, KindMessage, []byte("seed object, here before any reader")))
	s.Sync()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				mu.Lock()
				id := known[(i*7+r)%len(known)]
				mu.Unlock()
				if _, err := s.Get(id); err != nil {
					errs <- err
					return
				}
				if i%50 == 0 {
					if _, err := s.List(KindMessage, 5); err != nil {
						errs <- err
						return
					}
				}
			}
		}(r)
	}
	for i := 0; i < 2000; i++ {
		id := mustPut(t, s, KindMessage, []byte(fmt.Sprintf("message %d from the writer", i)))
		mu.Lock()
		known = append(known, id)
		mu.Unlock()
		if i%100 == 99 {
			if err := s.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}

// TestAFailedWriteIsNeverAcknowledged: once a segment write fails, no later
// Sync may succeed (it would acknowledge objects that are not on disk), and
// a reopen recovers a working store.
func TestAFailedWriteIsNeverAcknowledged(t *testing.T) {
	fsys := vfs.NewMem()
	s, home := newStore(t, fsys, Options{})
	mustPut(t, s, KindNote, []byte("durable before the fault, long enough to matter"))
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	failOnce := true
	fsys.SetHook(func(op vfs.Op, path string) error {
		if op == vfs.OpWrite && failOnce && filepath.Dir(path) == filepath.Join(home, SegmentsDir) {
			failOnce = false
			return vfs.ErrInjected
		}
		return nil
	})
	lost := []byte("accepted by Put, then its block write fails")
	if _, err := s.Put(KindNote, lost); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("sync with a failing write: %v", err)
	}
	fsys.SetHook(nil)
	if err := s.Sync(); err == nil {
		t.Fatal("a Sync after a failed write succeeded: it would acknowledge bytes that are not on disk")
	}
	if _, err := s.Put(KindNote, []byte("more")); err == nil {
		t.Fatal("Put after a failed write succeeded")
	}
	s.Close()
	s2, err := Open(home, Options{FS: fsys, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if _, err := s2.Put(KindNote, lost); err != nil {
		t.Fatal(err)
	}
	if err := s2.Sync(); err != nil {
		t.Fatal(err)
	}
	if rep, _ := s2.Verify(nil); len(rep.Problems) != 0 {
		t.Fatalf("verify after reopen: %v", rep.Problems)
	}
}
