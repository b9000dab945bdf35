package cas

import (
	"bytes"
	"runtime"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// A large object is stored with a bounded number of copies of it: one
// into its block (Put keeps no slice of the caller's), one as the record
// written. The record used to grow by append as zstd encoded it block by
// block, and a 100 MB put allocated about 880 MB (7x its size in memory).
func TestLargePutAllocatesLittle(t *testing.T) {
	const size = 24 << 20
	for _, c := range []struct {
		name string
		data []byte
		max  float64
	}{
		// The copy into the block; the block itself is written behind
		// the record header, not copied into a record (it was: 2.28).
		{"incompressible", noise(size, 11), 1.5},
		{"one byte repeated", bytes.Repeat([]byte{'a'}, size), 2.5},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, _ := newStore(t, vfs.OS, Options{})
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			id := mustPut(t, s, KindFile, c.data)
			runtime.ReadMemStats(&after)
			perByte := float64(after.TotalAlloc-before.TotalAlloc) / size
			t.Logf("%s: %.2f bytes allocated per byte put", c.name, perByte)
			if perByte > c.max {
				t.Errorf("putting %d bytes allocated %.2f bytes per byte; want at most %.1f (a copy into the block, and the record if it compresses)", size, perByte, c.max)
			}
			s = reopen(t, s, false)
			got, err := s.Get(id)
			if err != nil || !bytes.Equal(got, c.data) {
				t.Fatalf("read back %d bytes, %v", len(got), err)
			}
		})
	}
}

// Putting again bytes a big object already holds (a script or a hook
// putting the same file in a new process): the stored copy is checked by
// streaming it against the bytes given, never read back whole beside
// them. It was (Store.put: readEntry, then bytes.Equal): 100 MB put twice
// peaked at 210 MB against 117 MB the first time, where README promises a
// big file "held in memory about once". Here 48 MiB put in place, the
// store reopened, then the same bytes put again: the second put
// allocated the object's size again.
func TestRepeatPutOfABigObjectHoldsItOnce(t *testing.T) {
	fsys := vfs.NewMem()
	s, _ := newStore(t, fsys, Options{})
	const n = 48 << 20
	data := noise(n, 7)
	if _, err := s.PutInPlace(KindFile, inPlace(data)); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, s, true)
	buf := inPlace(data)
	data = nil
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res, err := s.PutInPlace(KindFile, buf)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Existed {
		t.Fatalf("second put: Existed false, want true")
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > n/4 {
		t.Errorf("putting a %d MiB object already in the store again allocated %d MiB: it is held twice (README: a big file is held in memory about once)", n>>20, got>>20)
	}
}

// A big object put again in a new process, stored raw or compressed: a
// dedup hit that writes nothing and keeps the stored kind, as for a small
// one.
func TestRepeatPutOfABigObjectIsADedupHit(t *testing.T) {
	for _, c := range []struct {
		name string
		data []byte
	}{
		{"raw", noise(3<<20, 21)},
		{"compressed", bytes.Repeat([]byte("a line of a big log file\n"), 200000)},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, _ := newStore(t, vfs.NewMem(), Options{})
			id := mustPut(t, s, KindFile, c.data)
			if err := s.Sync(); err != nil {
				t.Fatal(err)
			}
			s = reopen(t, s, true)
			before, _ := s.Stats()
			res, err := s.Put(KindNote, append([]byte(nil), c.data...))
			if err != nil || !res.Existed || res.Repaired || res.ID != id || res.Kind != KindFile {
				t.Fatalf("put again: %+v %v; want a dedup hit of %s, kind file", res, err, Short(id))
			}
			if err := s.Sync(); err != nil {
				t.Fatal(err)
			}
			after, _ := s.Stats()
			if after.Objects != before.Objects || after.Stored != before.Stored || after.RepeatedPuts != before.RepeatedPuts+1 {
				t.Fatalf("a dedup hit wrote: objects %d -> %d, stored bytes %d -> %d, dedup hits %d -> %d", before.Objects, after.Objects, before.Stored, after.Stored, before.RepeatedPuts, after.RepeatedPuts)
			}
		})
	}
}

// compareWriter, which checks a stored copy against the bytes put in
// pieces: equal only when every piece matches and it ends where they do.
func TestCompareWriter(t *testing.T) {
	want := []byte("0123456789")
	for _, c := range []struct {
		pieces []string
		same   bool
	}{
		{[]string{"0123456789"}, true},
		{[]string{"012", "3456", "789"}, true},
		{[]string{"012", "", "3456789"}, true},
		{[]string{"012", "3X56", "789"}, false},
		{[]string{"012345678"}, false},       // shorter
		{[]string{"0123456789", "0"}, false}, // longer
		{[]string{"01234567890"}, false},
		{nil, false},
	} {
		w := &compareWriter{want: want, same: true}
		for _, p := range c.pieces {
			if n, err := w.Write([]byte(p)); n != len(p) || err != nil {
				t.Fatalf("%q: Write(%q) = %d, %v", c.pieces, p, n, err)
			}
		}
		if got := w.same && w.off == len(want); got != c.same {
			t.Errorf("%q against %q: same %v, want %v", c.pieces, want, got, c.same)
		}
	}
}
