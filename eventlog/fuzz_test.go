package eventlog

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"strings"
	"testing"
	"time"

	"github.com/rookhq/rook/internal/fuzzseed"
	"github.com/rookhq/rook/internal/vfs"
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

// markerSeeds are dirty markers: one with a size, tags and a fork's
// record, and one whose fork record's checksum does not hold.
func markerSeeds() [][]byte {
	var id, parent ID
	copy(id[:], "0123456789abcdef")
	copy(parent[:], "fedcba9876543210")
	at := uint64(3)
	rec, err := markerFork(Meta{V: metaVersion, ID: id, Title: "a fork", Workspace: "/w", Created: time.UnixMilli(fuzzBase).UTC(), Parent: &parent, ForkAt: &at, Tags: []string{"keep"}})
	if err != nil {
		panic(err)
	}
	head := "2026-12-03T08:00:00Z\n"
	good := head + markerLine(parent, 200) + markerTag(id, tagNew) + rec + markerTag(parent, tagRemoving)
	// The record whole but its checksum off by one digit: a line the
	// crash garbled where its metadata still reads.
	garbled := []byte(rec)
	garbled[len(garbled)-2] ^= 1
	return [][]byte{[]byte(good), append([]byte(head), garbled...)}
}

// FuzzReadMarker: a dirty marker of any bytes reads without a panic, and
// a fork's record it gives is a fork's, under its own id, that re-encodes
// to a line reading back the same.
func FuzzReadMarker(f *testing.F) {
	for _, s := range markerSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fsys := vfs.NewMem()
		if err := fsys.WriteFileAtomic("/m", b, 0o600); err != nil {
			t.Fatal(err)
		}
		_, _, forks := readMarker(fsys, "/m")
		for id, m := range forks {
			if m.ID != id || m.Parent == nil || m.ForkAt == nil {
				t.Fatalf("fork record %+v under %s", m, id)
			}
			line, err := markerFork(m)
			if err != nil {
				t.Fatal(err)
			}
			line = strings.TrimSuffix(line, "\n")
			back, ok := parseMarkerFork(strings.Fields(line), line)
			if !ok {
				t.Fatalf("re-encoded fork record %q does not read", line)
			}
			b1, _ := json.Marshal(m)
			b2, _ := json.Marshal(back)
			if !bytes.Equal(b1, b2) {
				t.Fatalf("fork record reads back as %s, was %s", b2, b1)
			}
		}
	})
}

func TestWriteFuzzSeeds(t *testing.T) {
	var id ID
	copy(id[:], "0123456789abcdef")
	fuzzseed.Write(t, map[string][][]byte{
		"FuzzDecodeEventRecord": recordSeeds(),
		"FuzzParseLogHeader":    {encodeHeader(logHeader{id: id, base: fuzzBase}), []byte("rookevt\x00")},
		"FuzzReadMarker":        markerSeeds(),
	})
}

// TestMarkerForkRecord: a fork's record in the dirty marker reads back as
// the metadata written; a line whose checksum does not hold (torn or
// garbled by a crash), or whose metadata names another session or is no
// fork's, gives nothing.
func TestMarkerForkRecord(t *testing.T) {
	seeds := markerSeeds()
	fsys := vfs.NewMem()
	if err := fsys.WriteFileAtomic("/m", seeds[0], 0o600); err != nil {
		t.Fatal(err)
	}
	sizes, tags, forks := readMarker(fsys, "/m")
	var id, parent ID
	copy(id[:], "0123456789abcdef")
	copy(parent[:], "fedcba9876543210")
	m, ok := forks[id]
	if !ok || len(forks) != 1 || *m.Parent != parent || *m.ForkAt != 3 || m.Title != "a fork" || m.Workspace != "/w" || len(m.Tags) != 1 || !m.Created.Equal(time.UnixMilli(fuzzBase)) {
		t.Fatalf("fork records %+v", forks)
	}
	if sizes[parent] != 200 || tags[id] != tagNew || tags[parent] != tagRemoving {
		t.Fatalf("the fork record disturbed the other lines: sizes %v, tags %v", sizes, tags)
	}
	if err := fsys.WriteFileAtomic("/m", seeds[1], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, forks := readMarker(fsys, "/m"); len(forks) != 0 {
		t.Fatalf("a garbled fork record read as %+v", forks)
	}
	// Checksums that hold over metadata no fork's, or another session's.
	other := m
	other.ID = parent
	notFork := m
	notFork.ForkAt = nil
	for _, bad := range []Meta{other, notFork} {
		b, _ := json.Marshal(bad)
		s := fmt.Sprintf("%s %s %s", id, tagFork, base64.RawURLEncoding.EncodeToString(b))
		line := fmt.Sprintf("%s %08x", s, crc32.Checksum([]byte(s), castagnoli))
		if _, ok := parseMarkerFork(strings.Fields(line), line); ok {
			t.Fatalf("record of %s read as a fork's record of %s", b, id)
		}
	}
}
