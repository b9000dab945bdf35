package cas

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// TestCheckAccessNamesWhatAWriterMayNotOpen: the files a writer opens
// whose owner's mode bits keep it from opening them as it must are named
// (a segment made mode 000 failed every put "permission denied" while
// doctor said ok); what a reader needs only to read (a dictionary) needs
// only r; a home made read-only on purpose asks no w of any.
func TestCheckAccessNamesWhatAWriterMayNotOpen(t *testing.T) {
	fsys := vfs.NewMem()
	s, home := newStore(t, fsys, Options{})
	mustPut(t, s, KindFile, noise(20000, 1)) // in a segment
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := Open(home, Options{FS: fsys, Clock: testClock()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if p := r.CheckAccess(); len(p) != 0 {
		t.Fatalf("a whole store: %v", p)
	}
	seg := filepath.Join(home, SegmentsDir, "00000001.seg")
	idx := filepath.Join(home, IndexDir, IndexFile)
	fsys.Chmod(seg, 0)
	fsys.Chmod(idx, 0o400)
	p := r.CheckAccess()
	if len(p) != 2 || p[0].Path != idx || !p[0].Write || p[1].Path != seg {
		t.Fatalf("index 0400, segment 000: %v", p)
	}
	if got, want := p[0].Error(), idx+", the index, which every command opens, has mode 0400: its owner may not read and write it"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	if !strings.Contains(p[1].Error(), "the newest segment, which every command that writes appends to, has mode 0000") {
		t.Errorf("%q", p[1].Error())
	}
	// A home its owner may not write: no writer opens it, r is enough.
	fsys.Chmod(seg, 0o400)
	fsys.Chmod(home, 0o500)
	if p := r.CheckAccess(); len(p) != 0 {
		t.Errorf("a read-only home: %v", p)
	}
}
