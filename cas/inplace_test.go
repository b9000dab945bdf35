package cas

import (
	"bytes"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/rookhq/rook/internal/vfs"
)

// inPlace is data behind ObjectRoom bytes of room, as vfs.ReadSizedRoom
// reads a file for PutInPlace.
func inPlace(data []byte) []byte {
	return append(make([]byte, ObjectRoom, ObjectRoom+len(data)), data...)
}

// The records a store writes are byte for byte those the format
// describes, whichever way an object came in (Put, PutOwned, PutInPlace),
// whether its block compresses or is stored raw (written behind its
// header from where it lies), sampled or not: built here apart from the
// writer, with encodeBlock, a zstd encoder of the store's settings and
// encodeRecordHeader.
func TestRecordsAreTheFormatsBytes(t *testing.T) {
	fsys := vfs.NewMem()
	s, home := newStore(t, fsys, Options{})
	objs := []struct {
		how  string
		data []byte
	}{
		{"put", mixed(300<<10, 1)},                       // compresses
		{"owned", noise(200<<10, 2)},                     // zstd does not shrink it: raw
		{"in place", mixed(sampleMin+100, 3)},            // sampled, compresses
		{"in place", noise(sampleMin+100, 4)},            // sampled, raw
		{"in place", noise(100<<10, 5)},                  // raw
		{"in place", bytes.Repeat([]byte("x"), 20<<10)},  // compresses
		{"in place", []byte("small, packed in a block")}, // under PackMax: not in place
		{"put", []byte("small too")},
	}
	var ids []Key
	for _, o := range objs {
		var res PutResult
		var err error
		switch o.how {
		case "put":
			res, err = s.Put(KindFile, o.data)
		case "owned":
			res, err = s.PutOwned(KindFile, append([]byte(nil), o.data...))
		case "in place":
			res, err = s.PutInPlace(KindFile, inPlace(o.data))
		}
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.ID)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	got, err := vfs.ReadFile(fsys, filepath.Join(home, SegmentsDir, segName(1)))
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBetterCompression), zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(false), zstd.WithWindowSize(encoderWindow))
	want := encodeSegmentHeader(segmentHeader{Version: segVersion, Number: 1, Created: testClock().Now().UnixNano()})
	record := func(members ...[]byte) {
		raw := encodeBlock(members)
		h := recordHeader{Type: recTypeBlock, Kind: KindFile, Count: uint16(len(members)), Raw: uint32(len(raw)), Time: uint32(testClock().Now().Unix())}
		payload := raw
		if z := plain.EncodeAll(raw, nil); len(raw) >= minCompress && len(z) < len(raw) {
			h.Codec, payload = CodecZstd, z
		}
		want = append(append(want, encodeRecordHeader(h, payload)...), payload...)
	}
	for _, o := range objs[:6] {
		record(o.data)
	}
	record(objs[6].data, objs[7].data)
	if !bytes.Equal(got, want) {
		n := 0
		for n < min(len(got), len(want)) && got[n] == want[n] {
			n++
		}
		t.Fatalf("segment of %d bytes differs from the format's %d bytes at byte %d", len(got), len(want), n)
	}
	s = reopen(t, s, false)
	for i, o := range objs {
		if b, err := s.Get(ids[i]); err != nil || !bytes.Equal(b, o.data) {
			t.Fatalf("object %d (%s, %d bytes): %d bytes back, %v", i, o.how, len(o.data), len(b), err)
		}
	}
}

// A big object put in place is stored without being copied: its block is
// laid out where it lies, and a block that does not compress is written
// from there, not copied into a record. A file stored by `rook store put`
// or captured was held three times over (100 MB of random bytes: 315 MB
// peak RSS).
func TestPutInPlaceCopiesNothing(t *testing.T) {
	const size = 24 << 20
	for _, c := range []struct {
		name string
		data []byte
		max  float64 // bytes allocated per byte put
	}{
		{"incompressible", noise(size, 12), 0.1},
		// The record is made at zstd's bound for the block (untouched
		// past the frame, which is small here).
		{"one byte repeated", bytes.Repeat([]byte{'b'}, size), 1.1},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, _ := newStore(t, vfs.OS, Options{})
			// The encoder (its tables: some MiB) is made by a first block.
			mustPut(t, s, KindFile, bytes.Repeat([]byte("warm "), 20<<10))
			if err := s.Sync(); err != nil {
				t.Fatal(err)
			}
			buf := inPlace(c.data)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			res, err := s.PutInPlace(KindFile, buf)
			if err == nil {
				err = s.Sync()
			}
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatal(err)
			}
			perByte := float64(after.TotalAlloc-before.TotalAlloc) / size
			t.Logf("%s: %.3f bytes allocated per byte put", c.name, perByte)
			if perByte > c.max {
				t.Errorf("putting %d bytes in place allocated %.3f bytes per byte; want at most %.1f", size, perByte, c.max)
			}
			s = reopen(t, s, false)
			if got, err := s.Get(res.ID); err != nil || !bytes.Equal(got, c.data) {
				t.Fatalf("read back %d bytes, %v", len(got), err)
			}
		})
	}
}
