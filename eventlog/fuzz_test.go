package eventlog

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"regexp"
	"slices"
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
		// b's thirds as labels, appended one by one, then two as a
		// group: a label that holds a record, or its start, is refused
		// exactly when the log would hold it.
		third := len(b) / 3
		a, c, d := string(b[:third]), string(b[third:2*third]), string(b[2*third:])
		checkRecordWatch(t, [][]string{{a}, {c}, {d}, {a, c}, {d}})
	})
}

// checkRecordWatch appends records labelled so, each group one append,
// through a recordWatch, and checks its verdict on each against a look at
// every place of the log's bytes: an append is refused exactly when, with
// its records, a whole record would check out (decodeRecord) where none
// starts. What is refused is not appended. It returns how many were.
func checkRecordWatch(t *testing.T, groups [][]string) (refused int) {
	var log []byte // the records after the header
	starts := map[int]bool{}
	w := recordWatch{off: logHeaderSize, read: logHeaderSize}
	seq := uint64(0)
	for g, labels := range groups {
		var recs []byte
		var at []int
		for i, label := range labels {
			at = append(at, len(recs))
			ev := Event{Seq: seq + uint64(i), Time: time.UnixMilli(fuzzBase + int64(g)), Kind: KindUser, Label: label[:min(len(label), MaxLabel)], More: i < len(labels)-1}
			recs = appendRecord(recs, &record{Event: ev}, fuzzBase)
		}
		var out recordWatch
		end, _ := w.next(nil, recs, at, fuzzBase, true, &out)
		all := append(slices.Clone(log), recs...)
		for _, a := range at {
			starts[len(log)+a] = true
		}
		held := -1
		for k := range all {
			if _, n, err := decodeRecord(all[k:], fuzzBase); err == nil && !starts[k] && k+n > len(log) {
				held = k
				break
			}
		}
		if (end >= 0) != (held >= 0) {
			t.Fatalf("append %d (labels %q): the watch says a record ends at %d of its bytes (-1: none); a look at every place finds one at %d of the log's records (-1: none)", g, labels, end, held)
		}
		if end >= 0 {
			for _, a := range at {
				delete(starts, len(log)+a)
			}
			refused++
			continue
		}
		log, w = all, out
		seq += uint64(len(labels))
	}
	return refused
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

// forkMarkerSeeds are dirty markers: one with a size, tags and a fork's
// record, and one whose fork record's checksum does not hold.
func forkMarkerSeeds() [][]byte {
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

// fuzzID is the session the metadata and marker seeds name.
func fuzzID() ID {
	var id ID
	copy(id[:], "0123456789abcdef")
	return id
}

func markerSeeds() [][]byte {
	id, other := fuzzID(), fuzzID()
	other[15] = 'g'
	head := "2026-11-30T10:00:00.123Z\n"
	return [][]byte{
		[]byte(head),
		[]byte(head + markerLine(id, logHeaderSize) + markerTag(other, tagNew)),
		[]byte(head + markerLine(id, 1<<20) + markerTag(id, tagRemoving) + markerTag(id, tagNew)),
		[]byte(head + markerLine(id, 99)[:20]),                          // torn
		[]byte(head + id.String() + " 4096 00000000\n"),                 // checksum wrong
		[]byte(head + id.String() + " 4096\n" + id.String() + " new\n"), // an older rook's
	}
}

// FuzzParseDirtyMarker: what the dirty marker gives is only what a writer
// wrote: each size and tag re-encodes to a line of the input.
func FuzzParseDirtyMarker(f *testing.F) {
	for _, s := range append(markerSeeds(), forkMarkerSeeds()...) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		sizes, tags, forks := parseMarker(b)
		// The lines past the writer's; the last one may lack its newline
		// and still be whole (its checksum holds): a crash cut the append
		// just before it.
		lines := strings.SplitAfter(string(b), "\n")[1:]
		if n := len(lines); n > 0 && !strings.HasSuffix(lines[n-1], "\n") {
			lines[n-1] += "\n"
		}
		has := func(line string) bool { return slices.Contains(lines, line) }
		for id, size := range sizes {
			if size < logHeaderSize || !has(markerLine(id, size)) {
				t.Fatalf("size %d of %s is no line of the marker", size, id)
			}
		}
		for id, tag := range tags {
			if (tag != tagNew && tag != tagRemoving) || !has(markerTag(id, tag)) {
				t.Fatalf("tag %q of %s is no line of the marker", tag, id)
			}
			if tag == tagNew && has(markerTag(id, tagRemoving)) {
				t.Fatalf("%s tagged new over rm", id)
			}
		}
		// A fork's record is a fork's, under its own id, and re-encodes
		// to a line that reads back the same.
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

func metaSeeds() [][]byte {
	id := fuzzID()
	at := uint64(12)
	parent := fuzzID()
	parent[0] = 'p'
	metas := []Meta{
		{V: 1, ID: id, Created: time.UnixMilli(fuzzBase).UTC()},
		{V: 1, ID: id, Title: "fix the parser", Workspace: "/home/u/p", Created: time.UnixMilli(fuzzBase).UTC(), Parent: &parent, ForkAt: &at, Tags: []string{"keep", "x"}, CopiedIn: 5},
		{V: 1, ID: id, Created: time.UnixMilli(fuzzBase).UTC(), Source: &Source{Format: "claude-code", Path: "/t/\xe9.jsonl", Size: 10, SHA256: "ab", Stat: &FileStat{Size: 10, MTime: 1}, SideSeen: 3, Stops: []int64{4, 7}}, Ancestor: &parent, AncestorAt: &at},
	}
	var out [][]byte
	for _, m := range metas {
		b, err := json.Marshal(m) // version 1, with no check
		if err != nil {
			panic(err)
		}
		out = append(out, append(b, '\n'))
		if b, err = encodeMeta(m); err != nil {
			panic(err)
		}
		out = append(out, b)
	}
	return append(out, []byte(`{"v":2}`), []byte(`{"v":1,"id":"`+id.String()+`","source":{"path":"a","path_bytes":"!!"}}`))
}

// FuzzDecodeMeta: a .meta that decodes names its session, and writes back
// (as writeMetas does) to bytes that decode to the same metadata.
func FuzzDecodeMeta(f *testing.F) {
	for _, s := range metaSeeds() {
		f.Add(s)
	}
	id := fuzzID()
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeMeta(b, id, "x.meta")
		if err != nil {
			return
		}
		if m.ID != id || m.V > metaVersion {
			t.Fatalf("accepted metadata of %s, version %d", m.ID, m.V)
		}
		enc, err := encodeMeta(m)
		if err != nil {
			t.Fatalf("decoded metadata does not encode: %v", err)
		}
		m2, err := decodeMeta(enc, id, "x.meta")
		if err != nil {
			t.Fatalf("written metadata does not decode: %v\n%s", err, enc)
		}
		enc2, _ := encodeMeta(m2)
		if !bytes.Equal(enc, enc2) || m2.Created.UnixNano() != m.Created.UnixNano() || (m.Source != nil && m2.Source.Path != m.Source.Path) {
			t.Fatalf("metadata changed in a round trip:\n%s\n%s", enc, enc2)
		}
	})
}

func TestWriteFuzzSeeds(t *testing.T) {
	fuzzseed.Write(t, map[string][][]byte{
		"FuzzDecodeEventRecord": recordSeeds(),
		"FuzzParseLogHeader":    {encodeHeader(logHeader{id: fuzzID(), base: fuzzBase}), []byte("rookevt\x00")},
		"FuzzParseDirtyMarker":  append(markerSeeds(), forkMarkerSeeds()...),
		"FuzzDecodeMeta":        metaSeeds(),
	})
}

// TestMarkerForkRecord: a fork's record in the dirty marker reads back as
// the metadata written; a line whose checksum does not hold (torn or
// garbled by a crash), or whose metadata names another session or is no
// fork's, gives nothing.
func TestMarkerForkRecord(t *testing.T) {
	seeds := forkMarkerSeeds()
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

// A .meta this rook writes carries a check: any byte of it changed (bits
// flipped one at a time, and all eight) either fails to decode, naming the
// file and the way out, or decodes to the very same metadata. Before the
// check, a flip in a key ("wo(kspace") or a value moved the session to
// another workspace or dropped its title, and nothing said so.
func TestMetaDamageIsCaught(t *testing.T) {
	id := fuzzID()
	at := uint64(3)
	parent := fuzzID()
	parent[0] = 'p'
	m := Meta{ID: id, Title: "fix the parser", Workspace: "/home/u/p", Created: time.UnixMilli(fuzzBase).UTC(), Parent: &parent, ForkAt: &at, Tags: []string{"keep"}}
	good, err := encodeMeta(m)
	if err != nil {
		t.Fatal(err)
	}
	want, err := decodeMeta(good, id, "x.meta")
	if err != nil {
		t.Fatalf("written metadata does not decode: %v\n%s", err, good)
	}
	wantJSON, _ := json.Marshal(want)
	if want.V != metaVersion || want.Title != m.Title || want.Workspace != m.Workspace {
		t.Fatalf("decoded %+v", want)
	}
	var caught, same int
	for i := range good {
		for _, mask := range []byte{1, 2, 4, 8, 16, 32, 64, 128, 0xff} {
			b := bytes.Clone(good)
			b[i] ^= mask
			got, err := decodeMeta(b, id, "x.meta")
			if err != nil {
				if !strings.Contains(err.Error(), "x.meta") || !strings.Contains(err.Error(), "rook session rm "+id.String()) {
					t.Fatalf("byte %d ^ %#x: error without the file or the way out: %v", i, mask, err)
				}
				caught++
				continue
			}
			if gotJSON, _ := json.Marshal(got); !bytes.Equal(gotJSON, wantJSON) {
				t.Fatalf("byte %d ^ %#x decoded as other metadata, unnoticed:\n%s\nwas\n%s", i, mask, gotJSON, wantJSON)
			}
			same++
		}
	}
	t.Logf("%d changes caught, %d decoded the same", caught, same)
	// Version 1 files, written before the check, still read.
	old, _ := json.Marshal(Meta{V: 1, ID: id, Title: "old"})
	if got, err := decodeMeta(append(old, '\n'), id, "x.meta"); err != nil || got.Title != "old" {
		t.Fatalf("version 1 metadata: %+v, %v", got, err)
	}
	// Edited by hand, a file fails its check; made version 1 with its
	// check deleted, as the error says, it reads as edited.
	edited := bytes.Replace(good, []byte("fix the parser"), []byte("fix the lexer"), 1)
	if _, err := decodeMeta(edited, id, "x.meta"); err == nil || !strings.Contains(err.Error(), `make its "v" 1 and delete its "check" member`) {
		t.Fatalf("metadata edited by hand: %v", err)
	}
	unchecked := regexp.MustCompile(`,"check":"[0-9a-f]{8}"`).ReplaceAll(bytes.Replace(edited, []byte(`"v":2`), []byte(`"v":1`), 1), nil)
	if got, err := decodeMeta(unchecked, id, "x.meta"); err != nil || got.Title != "fix the lexer" || got.Workspace != m.Workspace {
		t.Fatalf("metadata edited by hand, then made version 1 without its check: %+v, %v\n%s", got, err, unchecked)
	}
	// A version 2 file whose check was cut off does not.
	if _, err := decodeMeta(bytes.Replace(good, good[bytes.LastIndex(good, []byte(`,"check"`)):], []byte("}\n"), 1), id, "x.meta"); err == nil || !strings.Contains(err.Error(), "no check") {
		t.Fatalf("version 2 metadata without its check: %v", err)
	}
}
