package cas

import (
	"bytes"
	"encoding/binary"
	"github.com/rookhq/rook/internal/fuzzseed"
	"testing"

	"github.com/rookhq/rook/dict"
)

// Seed corpora live in testdata/fuzz/<Target>/ as well as in f.Add, so a
// plain `go test` replays them. Regenerate the files with:
// ROOK_WRITE_FUZZ_SEEDS=1 go test -run TestWriteFuzzSeeds ./cas/

func recordSeeds() [][]byte {
	enc := newEncoder(2, dict.Empty{})
	var out [][]byte
	for _, members := range [][][]byte{
		{[]byte("one small object")},
		{[]byte("a"), []byte("bb"), bytes.Repeat([]byte("packed and compressed "), 40)},
		{{}},
		{noise(300, 1)},
	} {
		raw := encodeBlock(members)
		codec, d, payload, _ := enc.encode(raw, dict.None, nil)
		h := recordHeader{Type: recTypeBlock, Kind: KindMessage, Codec: codec, Dict: d, Count: uint16(len(members)), Raw: uint32(len(raw)), Time: 1}
		out = append(out, append(encodeRecordHeader(h, payload), payload...))
	}
	return out
}

func markerSeeds() [][]byte {
	out := [][]byte{encodeMarker(testClock().Now())}
	for _, s := range []string{"42", "null", "{}", `{"format":4294967297}`, `{"format":"1"}`, `{"format":2,"created":"x","check":"0"}`} {
		out = append(out, []byte(s))
	}
	return out
}

func entrySeeds() [][]byte {
	return [][]byte{
		entry{Kind: KindFile, Size: 100, Stored: 20, Loc: location{Segment: 3, Offset: 4096, Member: 2}}.encode(),
		entry{Kind: KindNote, Inline: true, Size: 4, Stored: 4, Data: []byte("tiny")}.encode(),
	}
}

// withFixedCRC rewrites the record header's checksum to match, so mutations
// reach the decoder instead of stopping at the CRC.
func withFixedCRC(b []byte) []byte {
	if len(b) < recHeaderSize {
		return b
	}
	b = bytes.Clone(b)
	size := int(binary.LittleEndian.Uint32(b[16:]))
	end := min(recHeaderSize+size, len(b))
	h, err := parseRecordHeader(b)
	if err != nil {
		return b
	}
	fixed := encodeRecordHeader(h, b[recHeaderSize:end])
	copy(b, fixed[:12])
	copy(b[20:], fixed[20:])
	return b
}

func FuzzDecodeRecord(f *testing.F) {
	for _, s := range recordSeeds() {
		f.Add(s)
	}
	dec := newDecoder(dict.Empty{})
	f.Fuzz(func(t *testing.T, b []byte) {
		checkRecordBytes(t, dec, b)
		checkRecordBytes(t, dec, withFixedCRC(b))
	})
}

func checkRecordBytes(t *testing.T, dec *decoder, b []byte) {
	h, members, n, err := DecodeRecord(b, dec)
	if err != nil {
		return
	}
	if n > len(b) || len(members) != int(h.Count) {
		t.Fatalf("decoded %d members of %d, length %d of %d", len(members), h.Count, n, len(b))
	}
	// What decodes re-encodes to a record that decodes the same.
	raw := encodeBlock(members)
	h2 := recordHeader{Type: recTypeBlock, Kind: h.Kind, Codec: CodecRaw, Count: h.Count, Raw: uint32(len(raw)), Time: h.Time}
	rec := append(encodeRecordHeader(h2, raw), raw...)
	_, again, _, err := DecodeRecord(rec, dec)
	if err != nil {
		t.Fatalf("re-encoded record does not decode: %v", err)
	}
	for i := range members {
		if !bytes.Equal(members[i], again[i]) {
			t.Fatalf("member %d differs after a round trip", i)
		}
	}
}

func FuzzParseMarker(f *testing.F) {
	for _, s := range markerSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := parseMarker(b)
		if err == nil && (v < 1 || v > FormatVersion) {
			t.Fatalf("accepted version %d", v)
		}
	})
}

func FuzzDecodeEntry(f *testing.F) {
	for _, s := range entrySeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeEntry(b)
		if err != nil {
			return
		}
		e2, err := decodeEntry(e.encode())
		if err != nil {
			t.Fatalf("re-encoded entry does not decode: %v", err)
		}
		// Every field: Inline and Stored too (Stored is what store stat
		// sums; a round trip that lost it would go unseen).
		if e2.Kind != e.Kind || e2.Inline != e.Inline || e2.Size != e.Size || e2.Stored != e.Stored || e2.Loc != e.Loc || !bytes.Equal(e2.Data, e.Data) {
			t.Fatalf("entry changed in a round trip: %+v vs %+v", e, e2)
		}
	})
}

func segHeaderSeeds() [][]byte {
	return [][]byte{
		encodeSegmentHeader(segmentHeader{Version: segVersion, Number: 1, Created: 1764496800000000000}),
		encodeSegmentHeader(segmentHeader{Version: segVersion + 1, Number: 1<<32 - 1, Created: -1}),
		encodeSegmentHeader(segmentHeader{Version: 0, Number: 7}),
		[]byte(segMagic),
	}
}

// FuzzParseSegmentHeader: an accepted segment header is of a version this
// rook reads, and its fields re-encode to a header that parses the same.
func FuzzParseSegmentHeader(f *testing.F) {
	for _, s := range segHeaderSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := parseSegmentHeader(b)
		if err != nil {
			return
		}
		if h.Version == 0 || h.Version > segVersion {
			t.Fatalf("accepted segment version %d", h.Version)
		}
		if h2, err := parseSegmentHeader(encodeSegmentHeader(h)); err != nil || h2 != h {
			t.Fatalf("round trip: %v: %+v vs %+v", err, h, h2)
		}
	})
}

func counterSeeds() [][]byte {
	c := counters{WMSegment: 3, WMOffset: 1 << 20, DedupHits: 5, DedupBytes: 900}
	c.kind(KindFile).Objects, c.kind(KindFile).Size, c.kind(KindFile).Stored = 10, 1000, 300
	c.kind(KindNote).Objects, c.kind(KindNote).Inline = 2, 2
	return [][]byte{{}, (&counters{}).encode(), c.encode(), {2}, {1, 0x80}}
}

// FuzzDecodeCounters: the index's counters (its user meta) that decode
// re-encode to bytes that decode to the same counters.
func FuzzDecodeCounters(f *testing.F) {
	for _, s := range counterSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeCounters(b)
		if err != nil {
			return
		}
		enc := c.encode()
		c2, err := decodeCounters(enc)
		if err != nil {
			t.Fatalf("re-encoded counters do not decode: %v", err)
		}
		if !bytes.Equal(c2.encode(), enc) || c2.WMSegment != c.WMSegment || c2.WMOffset != c.WMOffset || c2.DedupHits != c.DedupHits || c2.DedupBytes != c.DedupBytes {
			t.Fatalf("counters changed in a round trip: %+v vs %+v", c, c2)
		}
		for k, kc := range c.Kinds {
			if kc.Objects < 0 || kc.Inline < 0 || kc.Size < 0 || kc.Stored < 0 {
				t.Fatalf("negative counters for kind %d: %+v", k, *kc)
			}
		}
	})
}

func TestWriteFuzzSeeds(t *testing.T) {
	fuzzseed.Write(t, map[string][][]byte{
		"FuzzDecodeRecord":       recordSeeds(),
		"FuzzParseMarker":        markerSeeds(),
		"FuzzDecodeEntry":        entrySeeds(),
		"FuzzParseSegmentHeader": segHeaderSeeds(),
		"FuzzDecodeCounters":     counterSeeds(),
	})
}
