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

// A writer that opens the store while `rook store repack
// --drop-dictionary N` runs waits for the writer lock; it loaded dict/
// (N there, its kind's newest) before that wait (Open read dict/, then
// took the lock), and once the drop had deleted N's file and released the
// lock, it compressed what it appended with N, from its copy in memory,
// and exited 0: N's file gone, every object it wrote never read again.
// Open now reads dict/ once it holds the lock.
//
// What the user does: `rook store repack --drop-dictionary 2` (as gc told
// them, to remove a secret), while an agent hook runs `rook session append`
// (README: "A command that writes and finds the lock held waits for it").
// What they saw (with the binary): the append exited 0, 2000 events
// appended; `rook session show` then said "200 event bodies could not be
// read", and `store verify` "dictionary 2 is missing ...: 2000 object(s)
// ... need it: put .../00000002.zdict back from a backup" — the backup
// the drop meant to delete. docs/storage.md (Dropping a dictionary): a
// writer reads dict/ only once it holds the lock, so a writer that waited
// for the drop never compresses with a dictionary dropped meanwhile.
func TestAWriterWaitingForTheLockNeverUsesADictionaryDroppedMeanwhile(t *testing.T) {
	fsys := vfs.OS
	s, home := newStore(t, fsys, Options{})
	first := trainMessages(t, s, 0, 0, 400)
	if _, err := s.Repack(nil); err != nil {
		t.Fatal(err)
	}

	// The second writer (a `session append` started during the drop):
	// it opens the store and waits for the lock the drop holds.
	type opened struct {
		s   *Store
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		w, err := Open(home, Options{FS: fsys, Clock: testClock(), Writable: true, LockWait: 30 * time.Second})
		ch <- opened{w, err}
	}()
	time.Sleep(500 * time.Millisecond) // it has read dict/ and waits for the lock

	rep, err := s.DropDictionaries([]uint32{first}, nil)
	if err != nil || len(rep.Dropped) != 1 {
		t.Fatalf("drop: %v, %v", rep.Dropped, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	o := <-ch
	if o.err != nil {
		t.Fatalf("the waiting writer: %v", o.err)
	}
	w := o.s
	fresh := shaped(0, 5000)
	id := mustPut(t, w, KindMessage, fresh)
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	info, serr := w.Stat(id)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	r, err := Open(home, Options{FS: fsys, Clock: testClock()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := r.Get(id)
	if err != nil || !bytes.Equal(got, fresh) {
		t.Fatalf("an object appended (and acknowledged) by a writer that waited for the drop's lock does not read: %v (it was compressed with dictionary %d (%v); dictionary %d was dropped, its file deleted)", err, info.Dict, serr, first)
	}
}
