package eventlog

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"

	"github.com/rookhq/rook/internal/fuzzseed"
)

func recordSeeds() [][]byte {
	evs := []Event{
		{Seq: 0, Time: time.UnixMilli(1764496800000), Kind: KindUser, Label: ""},
		{Seq: 41, Time: time.UnixMilli(1764496800123), Kind: KindToolResult, Label: "read_file", TokensIn: 18000, TokensOut: 120, CumIn: 90000, CumOut: 600, More: false},
		{Seq: 7, Kind: KindNote, Label: "rook:tool-images:v1", More: true},
	}
	var out [][]byte
	for i := range evs {
		out = append(out, appendRecord(nil, &evs[i]))
	}
	return append(out, append(appendRecord(nil, &evs[0]), appendRecord(nil, &evs[1])...))
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
		ev, n, err := decodeRecord(b)
		if err != nil {
			return
		}
		if n <= 0 || n > len(b) {
			t.Fatalf("length %d of %d", n, len(b))
		}
		// What decodes re-encodes to a record that decodes the same (the
		// bytes may differ: a varint may have been written non-minimally).
		again, _, err := decodeRecord(appendRecord(nil, &ev))
		if err != nil || again != ev {
			t.Fatalf("round trip: %v\n%+v\n%+v", err, ev, again)
		}
	}
}

func FuzzParseLogHeader(f *testing.F) {
	var id ID
	copy(id[:], "0123456789abcdef")
	f.Add(encodeHeader(id))
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
		"FuzzParseLogHeader":    {encodeHeader(id), []byte("rookevt\x00")},
	})
}
