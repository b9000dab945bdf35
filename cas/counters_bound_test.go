package cas

import (
	"encoding/binary"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/index"
	"github.com/rookhq/rook/internal/vfs"
)

// countersBlob is a counters encoding whose watermark names segment seg.
func countersBlob(seg uint64) []byte {
	b := binary.AppendUvarint([]byte{1}, seg)
	return append(b, 0, 0, 0)
}

// TestCountersWatermarkBound: a watermark segment past what a segment
// name can hold (8 digits) is refused, not cut to 32 bits: 2^32+5 read
// as segment 5.
func TestCountersWatermarkBound(t *testing.T) {
	for _, seg := range []uint64{1<<32 + 5, 1 << 32, maxSegmentNumber + 1} {
		c, err := decodeCounters(countersBlob(seg))
		if err == nil || !strings.Contains(err.Error(), "watermark segment") {
			t.Fatalf("watermark segment %d: read as %d, err %v", seg, c.WMSegment, err)
		}
	}
	c, err := decodeCounters(countersBlob(maxSegmentNumber))
	if err != nil || c.WMSegment != maxSegmentNumber {
		t.Fatalf("watermark segment %d: %d, %v", maxSegmentNumber, c.WMSegment, err)
	}
}

// setCounters commits blob as the index's counters.
func setCounters(t *testing.T, fsys vfs.FS, home string, blob []byte) {
	t.Helper()
	tr, err := index.Open(fsys, filepath.Join(home, IndexDir, IndexFile), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Commit(blob); err != nil {
		t.Fatal(err)
	}
	tr.Close()
}

// TestBadWatermarkSaysReindex: a store whose counters do not read fails
// to open saying to reindex, and the reindex it names runs.
func TestBadWatermarkSaysReindex(t *testing.T) {
	fsys := vfs.NewMem()
	s, home := newStore(t, fsys, Options{})
	id := mustPut(t, s, KindMessage, []byte("kept"))
	s.Close()
	setCounters(t, fsys, home, countersBlob(1<<32+1))
	for _, w := range []bool{false, true} {
		_, err := Open(home, Options{FS: fsys, Clock: testClock(), Writable: w})
		if err == nil || !strings.Contains(err.Error(), "rook store reindex") || !strings.Contains(err.Error(), "4294967297") {
			t.Fatalf("open (writable %v) with a bad watermark: %v", w, err)
		}
		t.Log(err)
	}
	s, err := Open(home, Options{FS: fsys, Clock: testClock(), Writable: true, ForReindex: true})
	if err != nil {
		t.Fatalf("open for reindex: %v", err)
	}
	if _, err := s.Reindex(nil); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(home, Options{FS: fsys, Clock: testClock()})
	if err != nil {
		t.Fatalf("open after the reindex: %v", err)
	}
	defer s.Close()
	if b, err := s.Get(id); err != nil || string(b) != "kept" {
		t.Fatalf("get after the reindex: %q %v", b, err)
	}
}

// TestNoSegmentNumberLeft: a writer never creates a segment whose number
// a segment name cannot hold (it would be left out of every listing, its
// objects lost to a reindex); it fails saying so.
func TestNoSegmentNumberLeft(t *testing.T) {
	fsys := vfs.NewMem()
	s, home := newStore(t, fsys, Options{})
	mustPut(t, s, KindMessage, []byte("first"))
	s.Close()
	setCounters(t, fsys, home, countersBlob(maxSegmentNumber))
	s, err := Open(home, Options{FS: fsys, Clock: testClock(), Writable: true, SegmentSize: 1})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer s.Close()
	_, err = s.Put(KindMessage, []byte("second"))
	if err == nil {
		err = s.Sync()
	}
	if err == nil || !strings.Contains(err.Error(), "99999999") {
		t.Fatalf("put past the last segment number: %v", err)
	}
	t.Log(err)
	ents, _ := fsys.ReadDir(filepath.Join(home, SegmentsDir))
	for _, e := range ents {
		if len(e.Name()) != len("00000001.seg") {
			t.Fatalf("segment file %s made", e.Name())
		}
	}
}
