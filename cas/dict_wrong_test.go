package cas

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rookhq/rook/dict"
	"github.com/rookhq/rook/internal/vfs"
)

// storeWithDictRecords makes a store whose messages are compressed with its
// dictionary 1 (trained, then repacked with it) and returns it closed, its
// home, and the ids of its messages.
func storeWithDictRecords(t *testing.T, fsys vfs.FS, shape int) (string, []Key) {
	t.Helper()
	s, home := newStore(t, fsys, Options{})
	if id := trainMessages(t, s, shape, 0, 400); id != 1 {
		t.Fatalf("dictionary %d, want 1", id)
	}
	if _, err := s.Repack(nil); err != nil {
		t.Fatal(err)
	}
	var ids []Key
	for i := range 400 {
		ids = append(ids, ID(shaped(shape, i)))
	}
	if info, err := s.Stat(ids[7]); err != nil || info.Dict != 1 {
		t.Fatalf("after repack the object uses dictionary %d (%v), want 1", info.Dict, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return home, ids
}

// TestReindexKeepsTheObjectsOfRecordsDecodedWithAnotherStoresDictionary:
// another store's dictionary 1 put in place of this store's (both number
// from 1; the checksum holds, the id fits) decodes this store's records
// to other bytes, zstd frames having no checksum of their own. Reindex
// replaced the entries of their objects with ids of those bytes and said
// nothing; a repack then removed the only copy. It keeps the old index's
// entries of those records and names them; with the right file back, a
// reindex re-hashes them.
func TestReindexKeepsTheObjectsOfRecordsDecodedWithAnotherStoresDictionary(t *testing.T) {
	other := vfs.NewMem()
	otherHome, _ := storeWithDictRecords(t, other, 2)
	wrong, err := vfs.ReadFile(other, filepath.Join(otherHome, DictDir, dict.FileName(1)))
	if err != nil {
		t.Fatal(err)
	}
	fsys := vfs.NewMem()
	home, ids := storeWithDictRecords(t, fsys, 0)
	path := filepath.Join(home, DictDir, dict.FileName(1))
	own, err := vfs.ReadFile(fsys, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := fsys.WriteFileAtomic(path, wrong, FileMode); err != nil {
		t.Fatal(err)
	}
	s, err := Open(home, Options{FS: fsys, Clock: testClock(), Writable: true, ForReindex: true})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := s.Reindex(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.WrongDict) == 0 || rep.WrongDict[0].Dict != 1 || rep.WrongDictKept < len(ids) {
		t.Fatalf("reindex with another store's dictionary 1: wrong-dictionary records %+v, %d entries kept, want every one of the %d messages kept", rep.WrongDict, rep.WrongDictKept, len(ids))
	}
	for _, id := range ids {
		if _, err := s.Stat(id); err != nil {
			t.Fatalf("%s lost its entry: %v", Short(id), err)
		}
	}
	s.Close()
	if err := fsys.WriteFileAtomic(path, own, FileMode); err != nil {
		t.Fatal(err)
	}
	s, err = Open(home, Options{FS: fsys, Clock: testClock(), Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if rep, err := s.Reindex(nil); err != nil || len(rep.WrongDict) > 0 {
		t.Fatalf("reindex with the store's own dictionary: %+v %v", rep.WrongDict, err)
	}
	for _, id := range ids {
		if _, err := s.Get(id); err != nil {
			t.Fatalf("%s after the right dictionary is back: %v", Short(id), err)
		}
	}
}

// TestARecordThatDoesNotDecodeWithItsDictionaryWaitsForIt: a dictionary
// file of the right id and a good checksum that is not the one a record
// was written with may not decode it at all. The record's checksum holds,
// so its bytes are the ones written: it was damage to skip, and reindex
// dropped its objects' entries. It is a record waiting for its
// dictionary, whose objects the old index keeps.
func TestARecordThatDoesNotDecodeWithItsDictionaryWaitsForIt(t *testing.T) {
	fsys := vfs.NewMem()
	home, ids := storeWithDictRecords(t, fsys, 0)
	// A raw-content dictionary 1 of a few bytes: a frame made with a
	// trained dictionary reaches back further than it holds.
	path := filepath.Join(home, DictDir, dict.FileName(1))
	if err := fsys.WriteFileAtomic(path, dict.Encode(1, uint8(KindMessage), time.Unix(1700000000, 0), []byte("not the dictionary")), FileMode); err != nil {
		t.Fatal(err)
	}
	s, err := Open(home, Options{FS: fsys, Clock: testClock(), Writable: true, ForReindex: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Get(ids[7])
	var nd *NeedsDictError
	if !errors.As(err, &nd) || nd.Dict != 1 || !strings.Contains(err.Error(), "not the one it was written with") {
		t.Fatalf("reading an object of a record that does not decode with its dictionary: %v", err)
	}
	rep, err := s.Reindex(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Damage) > 0 || len(rep.NeedsDict) == 0 || rep.Carried < len(ids) {
		t.Fatalf("reindex: damage %v, waiting %v, %d carried, want the %d messages carried", rep.Damage, rep.NeedsDict, rep.Carried, len(ids))
	}
}
