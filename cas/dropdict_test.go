package cas

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rookhq/rook/dict"
	"github.com/rookhq/rook/internal/vfs"
)

// gc names the dictionaries trained while an object it collects was in
// the store (they may hold pieces of it: a secret); one trained before
// every collected object was written is not named.
func TestGCNamesTheDictionariesThatMayHoldCollectedObjects(t *testing.T) {
	fsys := vfs.NewMem()
	c := testClock()
	s, _ := newStore(t, fsys, Options{Clock: c})
	defer s.Close()
	first := trainMessages(t, s, 0, 0, 400)
	var keep []Key
	for i := 0; i < 400; i++ {
		keep = append(keep, ID(shaped(0, i)))
	}
	live := map[Key]bool{}
	for _, id := range keep {
		live[id] = true
	}
	// Objects written after dictionary 1 was trained, collected: it
	// cannot hold them.
	c.T = c.T.Add(2 * time.Second)
	mustPut(t, s, KindMessage, []byte("a message after the first dictionary"))
	rep, err := s.Collect(GCOptions{Live: func(id Key) bool { return live[id] }, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Collectable != 1 || len(rep.DictionariesMayHold) != 0 {
		t.Fatalf("collectable %d, may hold %+v: want 1 and none (dictionary %d was trained before it)", rep.Collectable, rep.DictionariesMayHold, first)
	}
	// Collected objects of the kind that were there when it was trained:
	// named.
	delete(live, keep[3])
	rep, err = s.Collect(GCOptions{Live: func(id Key) bool { return live[id] }, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.DictionariesMayHold) != 1 || rep.DictionariesMayHold[0].ID != first || rep.DictionariesMayHold[0].Kind != "message" ||
		rep.DictionariesMayHold[0].File != filepath.Join(s.home, DictDir, dict.FileName(first)) {
		t.Fatalf("may hold %+v: want dictionary %d (message) and its file", rep.DictionariesMayHold, first)
	}
}

// DropDictionaries rewrites every record naming the dictionary, then
// deletes its file: every object still reads, none names it, its id is
// not given out again, and it is not missing; the drop cut short after
// its mark (the file and the mark there) leaves it read as before and no
// kind's newest, and a drop again deletes it.
func TestDropDictionaryRewritesItsRecordsThenDeletesIt(t *testing.T) {
	fsys := vfs.NewMem()
	s, home := newStore(t, fsys, Options{})
	first := trainMessages(t, s, 0, 0, 400)
	if _, err := s.Repack(nil); err != nil {
		t.Fatal(err)
	}
	id := ID(shaped(0, 7))
	if info, err := s.Stat(id); err != nil || info.Dict != first {
		t.Fatalf("after repack the object uses dictionary %d (%v), want %d", info.Dict, err, first)
	}
	rep, err := s.DropDictionaries([]uint32{first}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Dropped) != 1 || rep.Dropped[0] != first {
		t.Fatalf("dropped %v, want [%d]", rep.Dropped, first)
	}
	path := filepath.Join(home, DictDir, dict.FileName(first))
	if _, err := fsys.Stat(path); err == nil {
		t.Fatalf("%s still there", path)
	}
	if info, err := s.Stat(id); err != nil || info.Dict == first {
		t.Fatalf("after the drop the object uses dictionary %d (%v)", info.Dict, err)
	}
	if got, err := s.Get(id); err != nil || !bytes.Equal(got, shaped(0, 7)) {
		t.Fatalf("after the drop: %v", err)
	}
	if m := s.MissingDictionaries(); len(m) != 0 {
		t.Fatalf("missing %v after a drop: a dropped dictionary is not missing", m)
	}
	// New objects do not use it, and a new dictionary takes a new id.
	mustPut(t, s, KindMessage, shaped(0, 9999))
	s.Close()
	s, err = Open(home, Options{FS: fsys, Clock: testClock(), Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	if info, err := s.Stat(ID(shaped(0, 9999))); err != nil || info.Dict == first {
		t.Fatalf("a new object uses dictionary %d (%v)", info.Dict, err)
	}
	second := trainMessages(t, s, 1, 0, 800)
	if second <= first {
		t.Fatalf("the new dictionary got id %d, dictionary %d's, dropped", second, first)
	}
	if rep, err := s.DropDictionaries([]uint32{first}, nil); err != nil || len(rep.Dropped) != 0 {
		t.Fatalf("dropped again: %v, %v: want nothing done", rep.Dropped, err)
	}
	var bad *BadDropError
	if _, err := s.DropDictionaries([]uint32{second + 5}, nil); !errors.As(err, &bad) || !strings.Contains(err.Error(), "no dictionary") {
		t.Fatalf("an id with no dictionary: %v", err)
	}

	// A drop cut short after its mark: the file and the mark.
	if _, err := s.Repack(nil); err != nil {
		t.Fatal(err)
	}
	s.Close()
	p2 := filepath.Join(home, DictDir, dict.FileName(second))
	if err := fsys.WriteFileAtomic(filepath.Join(home, DictDir, dict.DroppedName(second)), []byte("dropped\n"), FileMode); err != nil {
		t.Fatal(err)
	}
	s, err = Open(home, Options{FS: fsys, Clock: testClock(), Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, err := s.Get(ID(shaped(1, 5))); err != nil || !bytes.Equal(got, shaped(1, 5)) {
		t.Fatalf("a dictionary marked dropped, its file there, reads as before: %v", err)
	}
	mustPut(t, s, KindMessage, shaped(2, 1))
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	if info, err := s.Stat(ID(shaped(2, 1))); err != nil || info.Dict == second {
		t.Fatalf("a dictionary marked dropped was used for a new object (%v)", err)
	}
	if rep, err := s.DropDictionaries([]uint32{second}, nil); err != nil || len(rep.Dropped) != 1 {
		t.Fatalf("drop again: %v, %v", rep.Dropped, err)
	}
	if _, err := fsys.Stat(p2); err == nil {
		t.Fatalf("%s still there after the drop again", p2)
	}
	if got, err := s.Get(ID(shaped(1, 5))); err != nil || !bytes.Equal(got, shaped(1, 5)) {
		t.Fatalf("after the drop again: %v", err)
	}
}
