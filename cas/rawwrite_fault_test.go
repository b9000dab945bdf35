package cas

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// A record stored raw is written as its header, then its block from where
// it lies (two writes). When the second fails, the header already in the
// segment is cut away: the segment ends where it did, the store refuses
// to acknowledge anything, and a reopen reads every earlier object and
// takes the lost one again. A header left behind would be a torn record
// in the middle of the segment once the next record went in behind it.
func TestRawRecordSecondWriteFails(t *testing.T) {
	fsys := vfs.NewMem()
	s, home := newStore(t, fsys, Options{})
	before := noise(300<<10, 61)
	id0 := mustPut(t, s, KindFile, before)
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	seg := filepath.Join(home, SegmentsDir, segName(1))
	size := func() int64 {
		fi, err := fsys.Stat(seg)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	at := size()
	writes := 0
	fsys.SetHook(func(op vfs.Op, path string) error {
		if op == vfs.OpWrite && path == seg {
			writes++
			if writes == 2 { // the block, behind its header
				return vfs.ErrInjected
			}
		}
		return nil
	})
	lost := noise(sampleMin+1000, 62) // sampled, stored raw, in place
	buf := append(make([]byte, ObjectRoom), lost...)
	// A block of its own is written by the Put itself, or by the Sync.
	_, err := s.PutInPlace(KindFile, buf)
	if err == nil {
		err = s.Sync()
	}
	if !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("put and sync with the block's write failing: %v", err)
	}
	fsys.SetHook(nil)
	if writes != 2 {
		t.Fatalf("%d segment writes; want the header's and then the block's", writes)
	}
	if got := size(); got != at {
		t.Fatalf("segment is %d bytes after the failed record; want it cut back to %d", got, at)
	}
	if err := s.Sync(); err == nil {
		t.Fatal("a Sync after the failed write succeeded")
	}
	s.Close()
	var s2 *Store
	s2, err = Open(home, Options{FS: fsys, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if b, err := s2.Get(id0); err != nil || !bytes.Equal(b, before) {
		t.Fatalf("object written before the fault: %d bytes, %v", len(b), err)
	}
	id1 := mustPut(t, s2, KindFile, lost)
	if err := s2.Sync(); err != nil {
		t.Fatal(err)
	}
	if b, err := s2.Get(id1); err != nil || !bytes.Equal(b, lost) {
		t.Fatalf("object put again: %d bytes, %v", len(b), err)
	}
	if rep, err := s2.Verify(nil); err != nil || len(rep.Problems) != 0 {
		t.Fatalf("verify: %v %v", err, rep.Problems)
	}
}

// A process killed between a raw record's two writes (here: the block's
// write fails, and so does the cut that would remove the header) leaves
// the header at the segment's end with no block behind it: the next open
// cuts it as a torn tail, everything synced before reads back, and the
// next record goes in where the torn one began.
func TestRawRecordTornBetweenItsWrites(t *testing.T) {
	fsys := vfs.NewMem()
	s, home := newStore(t, fsys, Options{})
	before := noise(300<<10, 63)
	id0 := mustPut(t, s, KindFile, before)
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	seg := filepath.Join(home, SegmentsDir, segName(1))
	fi, err := fsys.Stat(seg)
	if err != nil {
		t.Fatal(err)
	}
	at := fi.Size()
	writes := 0
	fsys.SetHook(func(op vfs.Op, path string) error {
		if path == seg && op == vfs.OpWrite {
			writes++
			if writes == 2 {
				return vfs.ErrInjected
			}
		}
		if path == seg && op == vfs.OpTruncate {
			return vfs.ErrInjected
		}
		return nil
	})
	lost := noise(sampleMin+1000, 64)
	_, err = s.PutInPlace(KindFile, append(make([]byte, ObjectRoom), lost...))
	if err == nil {
		err = s.Sync()
	}
	if !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("put and sync: %v", err)
	}
	if fi, err := fsys.Stat(seg); err != nil || fi.Size() != at+recHeaderSize {
		t.Fatalf("segment after the torn record: %v, %v; want its header left behind (%d bytes)", fi.Size(), err, at+recHeaderSize)
	}
	s.Close()
	fsys.SetHook(nil)
	s2, err := Open(home, Options{FS: fsys, Writable: true})
	if err != nil {
		t.Fatalf("open after a record torn between its writes: %v", err)
	}
	defer s2.Close()
	if b, err := s2.Get(id0); err != nil || !bytes.Equal(b, before) {
		t.Fatalf("object synced before: %d bytes, %v", len(b), err)
	}
	id1 := mustPut(t, s2, KindFile, lost)
	if err := s2.Sync(); err != nil {
		t.Fatal(err)
	}
	if info, err := s2.Stat(id1); err != nil || info.Segment != 1 || info.Offset != at {
		t.Fatalf("object put again: %+v, %v; want it where the torn record began (segment 1, offset %d)", info, err, at)
	}
	if b, err := s2.Get(id1); err != nil || !bytes.Equal(b, lost) {
		t.Fatalf("object put again: %d bytes, %v", len(b), err)
	}
	if rep, err := s2.Verify(nil); err != nil || len(rep.Problems) != 0 {
		t.Fatalf("verify: %v %v", err, rep.Problems)
	}
}
