package cas

import (
	"bytes"
	"testing"

	"github.com/rookhq/rook/dict"
)

func FuzzDecodeRecord(f *testing.F) {
	enc := newEncoder(0, dict.Empty{})
	enc.level = 2
	for _, members := range [][][]byte{
		{[]byte("one small object")},
		{[]byte("a"), []byte("bb"), bytes.Repeat([]byte("packed and compressed "), 40)},
		{{}},
	} {
		raw := encodeBlock(members)
		codec, d, payload, _ := enc.encode(raw, dict.None)
		h := recordHeader{Type: recTypeBlock, Kind: KindMessage, Codec: codec, Dict: d, Count: uint16(len(members)), Raw: uint32(len(raw)), Time: 1}
		f.Add(append(encodeRecordHeader(h, payload), payload...))
	}
	dec := newDecoder(dict.Empty{})
	f.Fuzz(func(t *testing.T, b []byte) {
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
	})
}

func FuzzParseMarker(f *testing.F) {
	f.Add(encodeMarker(testClock().Now()))
	for _, s := range []string{"42", "null", "{}", `{"format":4294967297}`, `{"format":2,"created":"x","check":"0"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := parseMarker(b)
		if err == nil && (v < 1 || v > FormatVersion) {
			t.Fatalf("accepted version %d", v)
		}
	})
}

func FuzzDecodeEntry(f *testing.F) {
	f.Add(entry{Kind: KindFile, Codec: CodecZstd, Created: 1764, Size: 100, Stored: 20, Loc: location{Segment: 3, Offset: 4096, Member: 2, MemOff: 40}}.encode())
	f.Add(entry{Kind: KindNote, Inline: true, Size: 4, Stored: 4, Data: []byte("tiny")}.encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeEntry(b)
		if err != nil {
			return
		}
		e2, err := decodeEntry(e.encode())
		if err != nil {
			t.Fatalf("re-encoded entry does not decode: %v", err)
		}
		if e2.Kind != e.Kind || e2.Size != e.Size || e2.Loc != e.Loc || !bytes.Equal(e2.Data, e.Data) {
			t.Fatalf("entry changed in a round trip: %+v vs %+v", e, e2)
		}
	})
}
