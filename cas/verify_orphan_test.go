package cas

import (
	"bytes"
	"testing"
)

// An index entry that points at no record is a problem, and the member it
// should have pointed at, which no entry uses, is still an orphan: the
// entry's bad location must not count as a use.
func TestVerifyOrphanBesideDanglingEntry(t *testing.T) {
	s, _ := newStore(t, nil, Options{})
	big := bytes.Repeat([]byte("not inline "), 200)
	pr, err := s.Put(KindMessage, big)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	id := pr.ID
	v, ok, err := s.tree.Get(id)
	if err != nil || !ok {
		t.Fatalf("index entry: %v %v", ok, err)
	}
	e, err := decodeEntry(v)
	if err != nil {
		t.Fatal(err)
	}
	e.Loc.Offset += 1 << 20 // no record there
	if err := s.tree.Put(id, e.encode()); err != nil {
		t.Fatal(err)
	}
	s.dirty = true
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Verify(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 1 || rep.Orphans != 1 {
		t.Fatalf("want 1 problem and 1 orphan, got %d orphans, problems %v", rep.Orphans, rep.Problems)
	}
}
