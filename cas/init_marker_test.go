package cas

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// TestInitWithoutMarkerLeavesADamagedIndex: a crash of the file system
// that zeroed the format marker may zero the index with it. The way past a
// malformed marker every command names is to move it aside and run `rook
// init`; init opened the index for writing, failed on the damaged one
// ("create index: index: corrupt"), and wrote no marker: init failed and
// every other command said "run `rook init`". The index is derived: init
// makes one only where there is none, and a writer's open rebuilds a
// damaged one from the segments, as it does in any store.
func TestInitWithoutMarkerLeavesADamagedIndex(t *testing.T) {
	mem := vfs.NewMem()
	s, home := newStore(t, mem, Options{})
	data := bytes.Repeat([]byte("an object kept through a damaged marker and index "), 20)
	id := mustPut(t, s, KindNote, data)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := mem.Remove(filepath.Join(home, MarkerFile)); err != nil { // moved aside
		t.Fatal(err)
	}
	ipath := filepath.Join(home, IndexDir, IndexFile)
	st, err := mem.Stat(ipath)
	if err != nil {
		t.Fatal(err)
	}
	if err := mem.WriteFileAtomic(ipath, make([]byte, st.Size()), FileMode); err != nil {
		t.Fatal(err)
	}
	existed, err := Init(mem, testClock(), home)
	if err != nil {
		t.Fatalf("init of a home with no marker and a damaged index: %v", err)
	}
	if existed {
		t.Errorf("init said the store existed: it wrote the marker")
	}
	w, err := Open(home, Options{FS: mem, Clock: testClock(), Writable: true})
	if err != nil {
		t.Fatalf("a writer after init: %v", err)
	}
	defer w.Close()
	got, err := w.Get(id)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the object after init and the writer's rebuild: %v", err)
	}
}

// A format marker zeroed or garbled could not say which format made the
// store, so every command offered the one way past it, a new marker by
// `rook init`: for a store a pre-release or a newer rook made, that would
// mark its data as this rook's. The store's parts carry versions (the
// index's meta slots, the segment headers): the error says what they
// say, and which rook to use when it is not this one.
func TestMalformedMarkerSaysWhichRookFromParts(t *testing.T) {
	mem := vfs.NewMem()
	s, home := newStore(t, mem, Options{})
	mustPut(t, s, KindNote, bytes.Repeat([]byte("an object in a segment "), 20))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	write := func(path string, b []byte) {
		t.Helper()
		if err := mem.WriteFileAtomic(path, b, FileMode); err != nil {
			t.Fatal(err)
		}
	}
	read := func(path string) []byte {
		t.Helper()
		b, err := vfs.ReadFile(mem, path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	mpath := filepath.Join(home, MarkerFile)
	write(mpath, make([]byte, len(read(mpath)))) // zeroed by a crash of the file system

	check := func(what string, other bool, wants ...string) {
		t.Helper()
		_, rerr := ReadFormat(mem, home)
		_, ierr := Init(mem, testClock(), home)
		for _, err := range []error{rerr, ierr} {
			if !errors.Is(err, ErrBadMarker) || errors.Is(err, ErrMarkerOtherFormat) != other {
				t.Fatalf("%s: %v; want a malformed marker, of another format: %v", what, err, other)
			}
			for _, want := range wants {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%s: %v; want it to say %q", what, err, want)
				}
			}
		}
	}
	check("this rook's parts", false, "the store's parts are this rook's format (index format 2, 1 segment(s) of format 1)")

	// The index's slots of format 1: a pre-release rook's store.
	ipath := filepath.Join(home, IndexDir, IndexFile)
	idx := read(ipath)
	const indexSlotSize = 4096 // the page each meta slot owns (index/doc.go)
	for slot := 0; slot < 2*indexSlotSize; slot += indexSlotSize {
		if string(idx[slot:slot+8]) != "rookidx1" {
			continue
		}
		n := 68 + int(binary.LittleEndian.Uint32(idx[slot+64:]))
		binary.LittleEndian.PutUint16(idx[slot+8:], 1)
		binary.LittleEndian.PutUint32(idx[slot+12:], 0)
		binary.LittleEndian.PutUint32(idx[slot+12:], crc32.Checksum(idx[slot:slot+n], castagnoli))
	}
	write(ipath, idx)
	check("a pre-release rook's index", true, "index format 1", "a pre-release rook made it", "use that rook")

	// A segment of a newer format: a newer rook's store.
	spath := filepath.Join(home, SegmentsDir, segName(1))
	seg := read(spath)
	copy(seg, encodeSegmentHeader(segmentHeader{Version: segVersion + 1, Number: 1}))
	write(spath, seg)
	check("a newer rook's segment", true, "1 segment(s) of format 2", "a newer rook made it: upgrade rook")

	// Parts that do not read say nothing: the error is as it was.
	write(ipath, make([]byte, len(idx)))
	write(spath, make([]byte, len(seg)))
	check("parts that do not read", false)
	if _, err := ReadFormat(mem, home); strings.Contains(err.Error(), "parts") {
		t.Errorf("parts that do not read: %v; want nothing said of them", err)
	}
}
