package cas

import (
	"bytes"
	"path/filepath"
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
