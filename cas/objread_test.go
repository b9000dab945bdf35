package cas

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// ReadRange gives the bytes of any range of any object: alone in a big
// record (compressed or raw, read in ranges), small and packed, or not yet
// written (read whole); past the end is an error, at the end nothing.
func TestReadRange(t *testing.T) {
	s, _ := newStore(t, vfs.OS, Options{})
	objs := [][]byte{
		mixed(3<<20, 1),                // compressed, alone
		noise(rangedMin+7, 2),          // raw, alone
		[]byte("small, packed"),        // packed
		bytes.Repeat([]byte("y"), 100), // packed, compressed
	}
	var ids []Key
	for _, o := range objs {
		ids = append(ids, mustPut(t, s, KindToolResult, o))
	}
	pending := []byte("still pending")
	pid := mustPut(t, s, KindToolResult, pending)
	check := func(s *Store, id Key, data []byte, ranged bool) {
		t.Helper()
		r, err := s.OpenObject(id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Size() != int64(len(data)) || r.Kind() != KindToolResult || r.Ranged() != ranged {
			t.Fatalf("size %d kind %s ranged %v; want %d %s %v", r.Size(), r.Kind(), r.Ranged(), len(data), KindToolResult, ranged)
		}
		n := int64(len(data))
		for _, c := range [][2]int64{{0, 4096}, {0, n}, {n / 2, 100}, {n - 5, 100}, {n, 10}, {1, 0}, {n / 3, n}} {
			got, err := r.ReadRange(c[0], c[1])
			end := min(c[0]+c[1], n)
			if err != nil || !bytes.Equal(got, data[c[0]:end]) {
				t.Fatalf("range %d+%d of %d bytes: %d bytes, %v", c[0], c[1], n, len(got), err)
			}
		}
		if _, err := r.ReadRange(n+1, 1); err == nil {
			t.Fatalf("a range past the end of %d bytes read", n)
		}
		var buf bytes.Buffer
		if w, err := r.WriteTo(&buf); err != nil || w != n || !bytes.Equal(buf.Bytes(), data) {
			t.Fatalf("WriteTo: %d bytes, %v", w, err)
		}
		if all, err := r.ReadAll(); err != nil || !bytes.Equal(all, data) {
			t.Fatalf("ReadAll: %d bytes, %v", len(all), err)
		}
	}
	check(s, pid, pending, false)
	s = reopen(t, s, false)
	for i, o := range objs {
		check(s, ids[i], o, len(o) >= rangedMin)
	}
	if _, err := s.OpenObject(ID([]byte("never stored"))); err == nil {
		t.Fatal("an object never stored opened")
	}
}

// bigRecord puts data alone in a record and gives the store reopened
// read-only, the object's id and info, and its segment file.
func bigRecord(t *testing.T, data []byte) (*Store, Key, ObjectInfo, string) {
	t.Helper()
	s, home := newStore(t, vfs.OS, Options{})
	id := mustPut(t, s, KindToolResult, data)
	s = reopen(t, s, false)
	info, err := s.Stat(id)
	if err != nil {
		t.Fatal(err)
	}
	return s, id, info, filepath.Join(home, SegmentsDir, segName(info.Segment))
}

// A range is read only from a record whose CRC holds: a byte flipped at
// the end of a big record fails a read of its first bytes, which do not
// contain it.
func TestReadRangeChecksTheRecordCRC(t *testing.T) {
	for _, c := range []struct {
		name  string
		data  []byte
		codec uint8
	}{{"raw", noise(4<<20, 3), CodecRaw}, {"zstd", mixed(4<<20, 3), CodecZstd}} {
		t.Run(c.name, func(t *testing.T) {
			s, id, info, seg := bigRecord(t, c.data)
			if info.Codec != c.codec {
				t.Fatalf("codec %d, want %d", info.Codec, c.codec)
			}
			b, err := os.ReadFile(seg)
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)-2] ^= 0x10 // the record's last payload bytes
			if err := os.WriteFile(seg, b, 0o600); err != nil {
				t.Fatal(err)
			}
			r, err := s.OpenObject(id)
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.ReadRange(0, 100)
			var ce *CorruptError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), "checksum mismatch") {
				t.Fatalf("range of a damaged record: %d bytes, %v; want a checksum CorruptError", len(got), err)
			}
		})
	}
}

// What a range cannot check, and what a whole read does: a record
// rewritten with a valid CRC over bytes that are not the object's (a
// writer's bug, memory damaged before the CRC was taken) reads in
// ranges, and fails its hash when read whole (docs/storage.md).
func TestWholeReadsCheckTheHash(t *testing.T) {
	data := noise(4<<20, 4)
	s, id, info, seg := bigRecord(t, data)
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	rec := b[info.Offset:]
	size := binary.LittleEndian.Uint32(rec[16:])
	payload := rec[recHeaderSize : recHeaderSize+int(size)]
	payload[len(payload)-1] ^= 1 // the object's last byte
	c := crc32.Update(0, castagnoli, rec[:24])
	binary.LittleEndian.PutUint32(rec[24:], crc32.Update(c, castagnoli, payload))
	if err := os.WriteFile(seg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := s.OpenObject(id)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.ReadRange(0, 100); err != nil || !bytes.Equal(got, data[:100]) {
		t.Fatalf("range of a record whose CRC holds: %v", err)
	}
	if _, err := r.ReadAll(); err == nil || !strings.Contains(err.Error(), "content hash mismatch") {
		t.Fatalf("ReadAll: %v, want a hash mismatch", err)
	}
	if _, err := r.WriteTo(&bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "content hash mismatch") {
		t.Fatalf("WriteTo: %v, want a hash mismatch", err)
	}
	if _, err := s.Get(id); err == nil || !strings.Contains(err.Error(), "content hash mismatch") {
		t.Fatalf("Get: %v, want a hash mismatch", err)
	}
}

// allocated is what fn allocates, the collector off: everything it
// allocates is live at once at worst, so this bounds its peak heap.
func allocated(fn func()) uint64 {
	runtime.GC()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A range of a big object decodes up to its end only and holds none of
// the rest: reading 4 KiB of a 24 MiB object held the record, its decoded
// block and a copy (Get).
func TestReadRangeHoldsOnlyTheRange(t *testing.T) {
	for _, c := range []struct {
		name string
		data []byte
		max  uint64
	}{
		{"raw", noise(24<<20, 5), 256 << 10},
		// The decoder's history (the frame's window, 1 MiB) and buffers.
		{"zstd", mixed(24<<20, 5), 8 << 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, id, _, _ := bigRecord(t, c.data)
			r, err := s.OpenObject(id)
			if err != nil {
				t.Fatal(err)
			}
			var got []byte
			a := allocated(func() { got, err = r.ReadRange(0, 4096) })
			t.Logf("%s: 4 KiB of %d MiB: %d KiB allocated", c.name, len(c.data)>>20, a>>10)
			if err != nil || !bytes.Equal(got, c.data[:4096]) {
				t.Fatalf("%d bytes, %v", len(got), err)
			}
			if a > c.max {
				t.Errorf("a 4 KiB range of %d MiB allocated %d KiB; want at most %d KiB", len(c.data)>>20, a>>10, c.max>>10)
			}
		})
	}
}

// Get of a big object decodes it into the one buffer it returns: it read
// the record, decoded it into a block grown by append and copied the
// object out of it, 2 to 3 times the object's size allocated.
func TestGetBigObjectOneBuffer(t *testing.T) {
	for _, c := range []struct {
		name string
		data []byte
	}{{"raw", noise(24<<20, 6)}, {"zstd", mixed(24<<20, 6)}} {
		t.Run(c.name, func(t *testing.T) {
			s, id, _, _ := bigRecord(t, c.data)
			var got []byte
			var err error
			a := allocated(func() { got, err = s.Get(id) })
			perByte := float64(a) / float64(len(c.data))
			t.Logf("%s: Get of %d MiB allocated %.2f bytes per byte (%d MiB)", c.name, len(c.data)>>20, perByte, a>>20)
			if err != nil || !bytes.Equal(got, c.data) {
				t.Fatalf("%d bytes, %v", len(got), err)
			}
			if perByte > 1.1 {
				t.Errorf("Get of %d MiB allocated %.2f bytes per byte; want one buffer (at most 1.1)", len(c.data)>>20, perByte)
			}
		})
	}
}

// holds: objects bigger than a segment's target size (raw and
// compressible, above the 1 MiB ranged-read threshold and below it) read
// back whole and in ranges after a reopen, and verify finds nothing.
func TestObjectsBiggerThanASegmentReadBackWholeAndInRanges(t *testing.T) {
	fsys := vfs.NewMem()
	s, home := newStore(t, fsys, Options{SegmentSize: 64 << 10})
	text := bytes.Repeat([]byte("é€😀a the same line again\n"), (3<<20)/32)
	objs := [][]byte{noise(3<<20, 7), text, noise(1<<20-1, 8), noise(1<<20, 9), text[:700<<10]}
	ids := make([]Key, len(objs))
	for i, o := range objs {
		ids[i] = mustPut(t, s, KindToolResult, o)
		mustPut(t, s, KindMessage, noise(5000, uint64(i)+20))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(home, Options{FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i, id := range ids {
		got, err := s.Get(id)
		if err != nil || !bytes.Equal(got, objs[i]) {
			t.Fatalf("object %d: Get: %d bytes, %v", i, len(got), err)
		}
		r, err := s.OpenObject(id)
		if err != nil {
			t.Fatal(err)
		}
		for _, off := range []int64{0, 1, 4095, int64(len(objs[i])) / 2, int64(len(objs[i])) - 1, int64(len(objs[i]))} {
			b, err := r.ReadRange(off, 4096)
			want := objs[i][off:min(off+4096, int64(len(objs[i])))]
			if err != nil || !bytes.Equal(b, want) {
				t.Fatalf("object %d: ReadRange(%d): %d bytes, %v", i, off, len(b), err)
			}
		}
		if _, err := r.ReadRange(int64(len(objs[i]))+1, 1); err == nil {
			t.Fatalf("object %d: a range past the end read", i)
		}
	}
	rep, err := s.Verify(nil)
	if err != nil || rep.Unreadable != 0 || rep.DamagedRegions != 0 {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
}
