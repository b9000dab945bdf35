package cas

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// docRecord is a record header read by docs/storage.md's description alone.
type docRecord struct {
	off                      int64
	typ, kind, codec, flags  uint8
	count                    uint16
	dict, raw, size, tm, crc uint32
	crcOK                    bool
}

// readSegmentsByDoc reads every segment of home as docs/storage.md
// ("Segments") describes it, failing where a byte does not match.
func readSegmentsByDoc(t *testing.T, fsys vfs.FS, home string) map[string][]docRecord {
	t.Helper()
	cc := crc32.MakeTable(crc32.Castagnoli)
	ents, err := fsys.ReadDir(filepath.Join(home, "segments"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]docRecord{}
	for _, e := range ents {
		b, err := vfs.ReadFile(fsys, filepath.Join(home, "segments", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) < 32 || string(b[:8]) != "rookseg\x00" || binary.LittleEndian.Uint16(b[8:]) != 1 ||
			binary.LittleEndian.Uint16(b[10:]) != 0 || binary.LittleEndian.Uint32(b[24:]) != 0 ||
			crc32.Checksum(b[:28], cc) != binary.LittleEndian.Uint32(b[28:]) {
			t.Fatalf("%s: header does not read as documented: % x", e.Name(), b[:min(32, len(b))])
		}
		var recs []docRecord
		for off := int64(32); off < int64(len(b)); {
			h := b[off : off+28]
			if h[0] != 'R' || h[1] != 'K' {
				t.Fatalf("%s@%d: no RK", e.Name(), off)
			}
			r := docRecord{off: off, typ: h[2], kind: h[3], codec: h[4], flags: h[5],
				count: binary.LittleEndian.Uint16(h[6:]), dict: binary.LittleEndian.Uint32(h[8:]),
				raw: binary.LittleEndian.Uint32(h[12:]), size: binary.LittleEndian.Uint32(h[16:]),
				tm: binary.LittleEndian.Uint32(h[20:]), crc: binary.LittleEndian.Uint32(h[24:])}
			c := crc32.Update(0, cc, h[:24])
			c = crc32.Update(c, cc, b[off+28:off+28+int64(r.size)])
			r.crcOK = c == r.crc
			if !r.crcOK {
				t.Fatalf("%s@%d: crc does not cover what the doc says", e.Name(), off)
			}
			recs = append(recs, r)
			off += 28 + int64(r.size)
		}
		out[e.Name()] = recs
	}
	return out
}

// TestBulkBlocksHoldAtMost65535Objects: "packed into one block once their
// raw bytes reach 64 KiB (or 65,535 objects)"; a record's count is a u16.
// In bulk, 70,000 objects of 4 bytes are under the 1 MiB bulk block size.
func TestBulkBlocksHoldAtMost65535Objects(t *testing.T) {
	fsys := vfs.NewMem()
	s, home := newStore(t, fsys, Options{})
	if err := s.SetBulk(true); err != nil {
		t.Fatal(err)
	}
	const n = 70000
	for i := 0; i < n; i++ {
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], uint32(i))
		mustPut(t, s, KindNote, b[:])
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, r := range readSegmentsByDoc(t, fsys, home)["00000001.seg"] {
		total += int(r.count)
	}
	if total != n {
		t.Fatalf("records hold %d objects, want %d", total, n)
	}
}

// TestWriterRefusesToAppendToASegmentOfANewerFormat: docs/storage.md,
// Versioning rules: "Each file kind carries its own version too: segment
// headers ... A reader refuses a version it does not know rather than
// guessing", and a newer rook's parts are refused with "upgrade rook",
// nothing changed. A segment whose header (checksum right) says version 2
// is refused by verify and reindex ("segment format is newer than this
// rook: upgrade rook"), yet a writer's open and Put append this rook's
// records to it and acknowledge them.
func TestWriterRefusesToAppendToASegmentOfANewerFormat(t *testing.T) {
	fsys := vfs.NewMem()
	s, home := newStore(t, fsys, Options{})
	mustPut(t, s, KindNote, []byte("first object"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	seg := filepath.Join(home, "segments", "00000001.seg")
	b, err := vfs.ReadFile(fsys, seg)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint16(b[8:], 2) // a newer rook's segment version
	binary.LittleEndian.PutUint32(b[28:], crc32.Checksum(b[:28], crc32.MakeTable(crc32.Castagnoli)))
	if err := fsys.WriteFileAtomic(seg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	before := len(b)
	s2, err := Open(home, Options{FS: fsys, Clock: testClock(), Writable: true})
	if err == nil {
		defer s2.Close()
		_, err = s2.Put(KindNote, []byte("second object"))
		if err == nil {
			err = s2.Sync()
		}
	}
	after, _ := vfs.ReadFile(fsys, seg)
	if !errors.Is(err, ErrNewerSegment) || len(after) != before {
		t.Fatalf("writer took a segment of format 2: open/put/sync error %v (want %v); segment %d bytes, was %d", err, ErrNewerSegment, len(after), before)
	}
}

// TestReaderOfANewerIndexSaysUpgradeNotReindex: an index written by a newer rook (both meta slots of format version 3,
// checksums right), as a user gets by running an older rook on a store a
// newer one wrote (two machines sharing a store, a downgrade).
//
// What the user does: runs `rook doctor` or `rook store verify` (readers).
// What happens: they say "index ... is damaged (... file was written by a
// newer rook ...; upgrade rook ...): run `rook store reindex` to rebuild it
// from the segments". Following that advice, `rook store reindex` fails
// ("upgrade rook"), as it must; the advice was both wrong (the file is
// not damaged) and dangerous (a reindex, were it to run, would replace a
// newer rook's index).
// What should happen: docs/storage.md, Versioning rules: "A reader refuses a
// version it does not know rather than guessing" and the index section:
// "a format version newer than FormatVersion makes Open fail with
// ErrNewerFormat instead of falling back: falling back (and truncating)
// could destroy data a newer rook wrote". The reader's error says to
// upgrade rook, and neither calls the index damaged nor advises a reindex.
// (openIndex's reader case turned every error but a missing file or a
// read failure, ErrNewerFormat included, into "is damaged ...: run `rook
// store reindex`"; now a newer index is refused alike by readers and
// writers, saying to upgrade.)
func TestReaderOfANewerIndexSaysUpgradeNotReindex(t *testing.T) {
	fsys, s, home := storeOf(t, 5)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	idx := filepath.Join(home, IndexDir, IndexFile)
	b, err := vfs.ReadFile(fsys, idx)
	if err != nil {
		t.Fatal(err)
	}
	tab := crc32.MakeTable(crc32.Castagnoli)
	changed := 0
	for slot := 0; slot < 2; slot++ {
		p := b[slot*4096 : (slot+1)*4096]
		if string(p[:8]) != "rookidx1" {
			continue
		}
		binary.LittleEndian.PutUint16(p[8:], 3)
		ulen := int(binary.LittleEndian.Uint32(p[64:]))
		binary.LittleEndian.PutUint32(p[12:], 0)
		binary.LittleEndian.PutUint32(p[12:], crc32.Checksum(p[:68+ulen], tab))
		changed++
	}
	if changed == 0 {
		t.Fatal("no meta slot found")
	}
	if err := fsys.WriteFileAtomic(idx, b, FileMode); err != nil {
		t.Fatal(err)
	}
	_, err = Open(home, Options{FS: fsys, Clock: testClock()})
	if err == nil {
		t.Fatal("a reader opened an index of a newer format")
	}
	msg := err.Error()
	if !strings.Contains(msg, "upgrade rook") {
		t.Errorf("the reader's error does not say to upgrade rook: %s", msg)
	}
	if strings.Contains(msg, "damaged") || strings.Contains(msg, "store reindex") {
		t.Errorf("the reader's error calls a newer rook's index damaged and advises a reindex: %s", msg)
	}
	if n := strings.Count(msg, idx); n != 1 {
		t.Errorf("the reader's error names the index file %d times, want once: %s", n, msg)
	}
	// The advice, followed, is refused: the writer's open says upgrade.
	if _, werr := Open(home, Options{FS: fsys, Clock: testClock(), Writable: true, ForReindex: true}); werr == nil || !strings.Contains(werr.Error(), "upgrade rook") {
		t.Errorf("reindex's open of a newer index: %v, want a refusal saying upgrade rook", werr)
	}
}
