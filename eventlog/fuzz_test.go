package eventlog

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"

	"github.com/rookhq/rook/internal/fuzzseed"
)

// fuzzBase is the base time the fuzz targets decode records against.
const fuzzBase = 1764496800000

func recordSeeds() [][]byte {
	recs := []record{
		{Event: Event{Seq: 0, Time: time.UnixMilli(fuzzBase), Kind: KindUser, Label: ""}},
		{Event: Event{Seq: 41, Time: time.UnixMilli(fuzzBase + 123), Kind: KindToolResult, Label: "read_file", TokensIn: 18000, TokensOut: 120}},
		{Event: Event{Seq: 128, Time: time.UnixMilli(fuzzBase - 5), Kind: KindAssistant, Label: "model", TokensIn: 7}, CumIn: 90000, CumOut: 600},
		{Event: Event{Seq: 7, Time: time.UnixMilli(fuzzBase + 3_600_000), Kind: KindNote, Label: "rook:tool-images:v1", More: true}},
	}
	var out [][]byte
	for i := range recs {
		out = append(out, appendRecord(nil, &recs[i], fuzzBase))
	}
	return append(out, append(appendRecord(nil, &recs[0], fuzzBase), appendRecord(nil, &recs[1], fuzzBase)...))
}

func FuzzDecodeEventRecord(f *testing.F) {
	for _, s := range recordSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkEventRecord(t, b)
		checkEventRecord(t, withFixedCRC(b))
	})
}

// withFixedCRC sets the record's checksum to match, so mutations reach the
// field decoding instead of stopping at the CRC.
func withFixedCRC(b []byte) []byte {
	if len(b) < 5 {
		return b
	}
	b = bytes.Clone(b)
	n, w := binary.Uvarint(b[4:])
	if w <= 0 || n > uint64(len(b)) {
		return b
	}
	end := min(4+w+int(n), len(b))
	binary.LittleEndian.PutUint32(b, crc32.Checksum(b[4:end], castagnoli))
	return b
}

func checkEventRecord(t *testing.T, b []byte) {
	{
		rec, n, err := decodeRecord(b, fuzzBase)
		if err != nil {
			return
		}
		if n <= 0 || n > len(b) || rec.n != n {
			t.Fatalf("length %d (%d) of %d", n, rec.n, len(b))
		}
		// What decodes re-encodes to a record that decodes the same (the
		// bytes may differ: a varint may have been written non-minimally).
		again, _, err := decodeRecord(appendRecord(nil, &rec, fuzzBase), fuzzBase)
		again.n = rec.n
		if err != nil || again != rec {
			t.Fatalf("round trip: %v\n%+v\n%+v", err, rec, again)
		}
	}
}

func FuzzParseLogHeader(f *testing.F) {
	var id ID
	copy(id[:], "0123456789abcdef")
	f.Add(encodeHeader(logHeader{id: id, base: fuzzBase}))
	f.Add([]byte("rookevt\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := parseHeader(b)
		if err == nil && !bytes.Equal(encodeHeader(got), b[:logHeaderSize]) {
			t.Fatal("accepted header does not re-encode")
		}
	})
}

func TestWriteFuzzSeeds(t *testing.T) {
	var id ID
	copy(id[:], "0123456789abcdef")
	fuzzseed.Write(t, map[string][][]byte{
		"FuzzDecodeEventRecord": recordSeeds(),
		"FuzzParseLogHeader":    {encodeHeader(logHeader{id: id, base: fuzzBase}), []byte("rookevt\x00")},
	})
}
