package cas

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// A streamed record is checked against its CRC before any of it is
// decoded: the zstd decoder sizes its history from the frame header, so
// a damaged window descriptor (one byte of the record) made WriteTo
// allocate what it claims, up to 512 MiB, before the CRC at the end said
// the record was damaged. Get checks the CRC first and never did.
func TestWriteToChecksARecordBeforeDecodingIt(t *testing.T) {
	s, home := newStore(t, vfs.OS, Options{})
	data := mixed(3<<20, 7) // compresses; its frame is not single-segment
	id := mustPut(t, s, KindFile, data)
	s = reopen(t, s, false)
	info, err := s.Stat(id)
	if err != nil {
		t.Fatal(err)
	}
	if info.Codec != CodecZstd {
		t.Fatalf("codec %d, want a zstd record", info.Codec)
	}
	seg := filepath.Join(home, SegmentsDir, segName(info.Segment))
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	frame := b[info.Offset+recHeaderSize:]
	if frame[4]&0x20 != 0 {
		t.Fatalf("frame descriptor %#x: single segment, no window byte", frame[4])
	}
	frame[5] = 18 << 3 // window 2^(10+18) = 256 MiB
	if err := os.WriteFile(seg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = s.WriteTo(id, &out)
	runtime.ReadMemStats(&after)
	var ce *CorruptError
	if !errors.As(err, &ce) {
		t.Fatalf("damaged frame header: %v, want a CorruptError", err)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("%v; %d bytes allocated, %d written", err, alloc, out.Len())
	if alloc > 32<<20 {
		t.Errorf("streaming a damaged record allocated %d MiB; want it refused by its CRC before decoding (at most 32 MiB)", alloc>>20)
	}
	if out.Len() != 0 {
		t.Errorf("%d bytes of a record that fails its CRC went to the writer", out.Len())
	}
}

// A streamed record whose dictionary id is damaged is damage, not an
// intact record waiting for a dictionary: WriteTo looked the dictionary
// up before checking the CRC, and told the user to put a dictionary file
// back "(the record itself is intact)".
func TestWriteToDamagedDictionaryIDIsDamage(t *testing.T) {
	s, home := newStore(t, vfs.OS, Options{})
	trainMessages(t, s, 0, 0, 400)
	id := mustPut(t, s, KindMessage, mixed(2<<20, 8))
	s = reopen(t, s, false)
	info, err := s.Stat(id)
	if err != nil {
		t.Fatal(err)
	}
	if info.Codec != CodecZstdDict {
		t.Fatalf("codec %d, want a record compressed with a dictionary", info.Codec)
	}
	seg := filepath.Join(home, SegmentsDir, segName(info.Segment))
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	b[info.Offset+8] ^= 0x40 // the header's dictionary id
	if err := os.WriteFile(seg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	_, err = s.WriteTo(id, &out)
	var ce *CorruptError
	var nd *NeedsDictError
	if !errors.As(err, &ce) || errors.As(err, &nd) || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Fatalf("damaged dictionary id: %v; want a checksum CorruptError, not a missing dictionary", err)
	}
}
