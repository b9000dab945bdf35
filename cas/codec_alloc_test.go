package cas

import (
	"bytes"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/rookhq/rook/dict"
)

// A block is compressed straight into the record buffer it is written
// from: with room enough, encoding allocates nothing (it used to make a
// zeroed buffer of half the block for every block of an import), and the
// record built in place is byte for byte the one the format describes.
func TestEncodeIntoRecordBuffer(t *testing.T) {
	enc, dec := newEncoder(zstd.SpeedDefault, dict.Empty{}), newDecoder(dict.Empty{})
	for _, raw := range [][]byte{mixed(256<<10, 7), noise(4096, 3), []byte("short")} {
		buf := make([]byte, recHeaderSize, recHeaderSize+2*len(raw)+1024)
		copy(buf, "header room, left as it was")
		codec, id, rec, err := enc.encode(raw, dict.None, buf)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(rec[:recHeaderSize], buf) || &rec[0] != &buf[0] {
			t.Fatalf("%d bytes: the stored bytes did not go behind the header room", len(raw))
		}
		payload := rec[recHeaderSize:]
		got, err := dec.decode(recordHeader{Codec: codec, Dict: id, Raw: uint32(len(raw))}, payload)
		if err != nil || !bytes.Equal(got, raw) {
			t.Fatalf("%d bytes: decoded %d bytes, %v", len(raw), len(got), err)
		}
		h := recordHeader{Type: recTypeBlock, Kind: KindFile, Codec: codec, Count: 1, Dict: id, Raw: uint32(len(raw)), Time: 9}
		putRecordHeader(rec, h, payload)
		if want := append(encodeRecordHeader(h, payload), payload...); !bytes.Equal(rec, want) {
			t.Fatalf("%d bytes: record built in place differs from the format", len(raw))
		}
		allocs := testing.AllocsPerRun(5, func() {
			if _, _, _, err := enc.encode(raw, dict.None, buf[:recHeaderSize]); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Fatalf("%d bytes: encode into a big enough buffer allocated %v times", len(raw), allocs)
		}
	}
}

// A big block is compressed into a record allocated once, at its final
// size: EncodeAll appends 128 KiB frame blocks one by one, and a record
// left to grow by append was reallocated and copied dozens of times (a
// 100 MB object allocated about 590 MB in encode alone).
func TestEncodeBigBlockAllocatesOnce(t *testing.T) {
	enc := newEncoder(zstd.SpeedBetterCompression, dict.Empty{})
	for _, raw := range [][]byte{noise(8<<20, 5), bytes.Repeat([]byte{'a'}, 8<<20)} {
		if _, _, _, err := enc.encode(raw, dict.None, make([]byte, recHeaderSize)); err != nil {
			t.Fatal(err) // the encoder made once, outside the count
		}
		allocs := testing.AllocsPerRun(3, func() {
			if _, _, _, err := enc.encode(raw, dict.None, make([]byte, recHeaderSize, 64<<10)); err != nil {
				t.Fatal(err)
			}
		})
		if allocs > 3 { // the small buffer given, a sample's frame, and the record
			t.Fatalf("encoding %d bytes allocated %v times; want the record allocated once", len(raw), allocs)
		}
	}
}
