package index

import (
	"errors"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// threeCommits builds an index with commits txid 1..3 and returns the
// models after txid 2 and 3. The newest meta is in slot 1.
func threeCommits(t *testing.T, fsys vfs.FS, path string) (m2, m3 model) {
	t.Helper()
	tr := mustOpen(t, fsys, path, true)
	defer tr.Close()
	rng := rand.New(rand.NewPCG(10, 10))
	want := model{}
	for round := range 3 {
		for range 400 {
			k := randKey(rng)
			want[k] = randVal(rng, 30)
			tr.Put(k, want[k])
		}
		if err := tr.Commit([]byte{byte(round + 1)}); err != nil {
			t.Fatal(err)
		}
		if round == 1 {
			m2 = want.clone()
		}
	}
	return m2, want
}

func TestReopenPicksNewest(t *testing.T) {
	path := tempPath(t)
	_, m3 := threeCommits(t, vfs.OS, path)
	tr := mustOpen(t, vfs.OS, path, false)
	defer tr.Close()
	if s := tr.Snapshot(); s.TxID() != 3 || s.UserMeta()[0] != 3 {
		t.Fatalf("txid %d", s.TxID())
	}
	mustDiff(t, tr.Snapshot(), m3)
	if r := tr.Stats().Recovered; r != "" {
		t.Fatal(r)
	}
}

func TestCorruptNewestMeta(t *testing.T) {
	// Every byte of the newest slot's encoding, damaged, makes Open fall
	// back to the previous commit (the version field may instead claim a
	// newer format, which must not be mistaken for damage).
	fsys := vfs.NewMem()
	const path = "/index"
	m2, _ := threeCommits(t, fsys, path)
	pristine := readAll(t, fsys, path)
	for off := int64(slotSize); off < slotSize+metaHeaderLen+1; off++ {
		patch(t, fsys, path, off, 0x01)
		tr, err := Open(fsys, path, false)
		if off == slotSize+8 || off == slotSize+9 { // version 2^1 = 3, or 2+256
			if !errors.Is(err, ErrNewerFormat) {
				t.Fatalf("version byte: %v", err)
			}
			patch(t, fsys, path, off, 0x01)
			continue
		}
		if err != nil {
			t.Fatalf("byte %d: %v", off, err)
		}
		s := tr.Snapshot()
		if s.TxID() != 2 {
			t.Fatalf("byte %d: opened txid %d", off, s.TxID())
		}
		rec := tr.Stats().Recovered
		if !strings.Contains(rec, "slot 1") || !strings.Contains(rec, "txid 2") {
			t.Fatalf("byte %d: Recovered = %q", off, rec)
		}
		mustDiff(t, s, m2)
		// Check reports the damaged slot (a read-only open cannot fix it).
		if err := tr.Check(); !isCorrupt(err) || !strings.Contains(err.Error(), "slot 1") {
			t.Fatalf("byte %d: Check = %v", off, err)
		}
		tr.Close()
		patch(t, fsys, path, off, 0x01)
	}
	if got := readAll(t, fsys, path); string(got) != string(pristine) {
		t.Fatal("file not restored")
	}

	// A writable open after the fallback cuts commit 3's nodes, rewrites
	// the damaged slot with commit 2's state as txid 3, and goes on.
	patch(t, fsys, path, slotSize+20, 0x40)
	tr := mustOpen(t, fsys, path, true)
	if st := tr.Stats(); !strings.Contains(st.Recovered, "rewrote") || st.TxID != 3 {
		t.Fatalf("%+v", st)
	}
	mustCheck(t, tr)
	mustDiff(t, tr.Snapshot(), m2)
	tr.Put(Key{1}, []byte("x"))
	m2[Key{1}] = []byte("x")
	if err := tr.Commit(nil); err != nil {
		t.Fatal(err)
	}
	tr.Close()
	tr = mustOpen(t, fsys, path, false)
	defer tr.Close()
	if st := tr.Stats(); st.Recovered != "" || st.TxID != 4 {
		t.Fatalf("%+v", st)
	}
	mustCheck(t, tr)
	mustDiff(t, tr.Snapshot(), m2)
}

func TestCorruptOlderMeta(t *testing.T) {
	fsys := vfs.NewMem()
	_, m3 := threeCommits(t, fsys, "/index")
	patch(t, fsys, "/index", 30, 0x80) // slot 0 holds txid 2
	tr := mustOpen(t, fsys, "/index", false)
	defer tr.Close()
	if st := tr.Stats(); st.TxID != 3 || !strings.Contains(st.Recovered, "slot 0") {
		t.Fatalf("%+v", st)
	}
	mustDiff(t, tr.Snapshot(), m3)
}

func TestCorruptBothMeta(t *testing.T) {
	fsys := vfs.NewMem()
	threeCommits(t, fsys, "/index")
	patch(t, fsys, "/index", 17, 0x01)
	patch(t, fsys, "/index", slotSize+40, 0x01)
	for _, w := range []bool{false, true} {
		_, err := Open(fsys, "/index", w)
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("writable=%v: err = %v", w, err)
		}
		t.Log(err)
	}
}

func TestMetaBeyondFileEnd(t *testing.T) {
	// A meta whose file end is past the file's size (the file was cut) is
	// invalid; the other slot wins.
	path := tempPath(t)
	threeCommits(t, vfs.OS, path)
	f, err := vfs.OS.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := f.Stat()
	if err := f.Truncate(fi.Size() - 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	tr := mustOpen(t, vfs.OS, path, false)
	if st := tr.Stats(); st.TxID != 2 || !strings.Contains(st.Recovered, "beyond file size") {
		t.Fatalf("%+v", st)
	}
	if err := tr.Check(); !isCorrupt(err) {
		t.Fatalf("Check = %v", err)
	}
	tr.Close()
	// A writer repairs it.
	tr = mustOpen(t, vfs.OS, path, true)
	defer tr.Close()
	if st := tr.Stats(); st.TxID != 3 || !strings.Contains(st.Recovered, "rewrote") {
		t.Fatalf("%+v", st)
	}
	mustCheck(t, tr)
}

// TestEveryIndexByteMatters: after some commits (so the file holds garbage
// nodes of earlier commits and two valid slots), damaging any byte of the
// file is either refused by Open or reported by Check; reads never return
// wrong values.
func TestEveryIndexByteMatters(t *testing.T) {
	fsys := vfs.NewMem()
	const path = "/index"
	m2, m3 := threeCommits(t, fsys, path)
	size := int64(len(readAll(t, fsys, path)))
	ks := m3.sortedKeys()
	stride := (size-dataStart)/3000 | 1 // sample node bytes: keep -race fast
	for off := int64(0); off < size; off++ {
		if off%slotSize >= 512 && off < dataStart && off%509 != 0 {
			continue // most of the meta page padding: sampled
		}
		if off >= dataStart && off%stride != 0 {
			continue
		}
		patch(t, fsys, path, off, 0x5a)
		tr, err := Open(fsys, path, false)
		if err == nil {
			if err := tr.Check(); !isCorrupt(err) {
				t.Fatalf("byte %d: Check = %v", off, err)
			}
			if off%37 == 0 {
				s, want := tr.Snapshot(), m3
				if s.TxID() == 2 { // fell back from a damaged newest slot
					want = m2
				}
				for _, k := range ks {
					v, ok, err := s.Get(k)
					if w, wok := want[k]; err == nil && (ok != wok || string(v) != string(w)) {
						t.Fatalf("byte %d: Get(%x) silently wrong", off, k[:4])
					}
				}
			}
			tr.Close()
		} else if !isCorrupt(err) && !errors.Is(err, ErrNewerFormat) {
			t.Fatalf("byte %d: Open: %v", off, err)
		}
		patch(t, fsys, path, off, 0x5a)
	}
}

func TestNewerFormat(t *testing.T) {
	fsys := vfs.NewMem()
	threeCommits(t, fsys, "/index")
	// Rewrite the newest slot as the next format version with a valid checksum.
	b := readAll(t, fsys, "/index")
	m, err := DecodeMeta(b[slotSize:])
	if err != nil {
		t.Fatal(err)
	}
	m.Version = FormatVersion + 1
	enc := m.Encode()
	for i := range enc {
		if d := enc[i] ^ b[slotSize+i]; d != 0 {
			patch(t, fsys, "/index", int64(slotSize+i), d)
		}
	}
	for _, w := range []bool{false, true} {
		_, err = Open(fsys, "/index", w)
		if !errors.Is(err, ErrNewerFormat) || !strings.Contains(err.Error(), "upgrade rook") {
			t.Fatalf("err = %v", err)
		}
	}
	if _, err := DecodeMeta(enc); !errors.Is(err, ErrNewerFormat) {
		t.Fatalf("DecodeMeta: %v", err)
	}
	// The unreleased format 1 (32-byte keys) reads as damage, so a writer
	// rebuilds it from the segments.
	m.Version = 1
	if _, err := DecodeMeta(m.Encode()); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "older") {
		t.Fatalf("format 1: %v", err)
	}
}

// TestNodeByteFlips damages bytes all over every node of a freshly rebuilt
// file (so every node byte is live) and checks that Check and reads notice.
func TestNodeByteFlips(t *testing.T) {
	fsys := vfs.NewMem()
	const path = "/index"
	rng := rand.New(rand.NewPCG(11, 11))
	want := model{}
	for range 700 {
		want[randKey(rng)] = randVal(rng, 20)
	}
	w := mustOpen(t, fsys, path, true)
	if err := w.Rebuild(want.iter(), nil); err != nil {
		t.Fatal(err)
	}
	end := int64(w.Stats().FileSize)
	w.Close()
	if end < dataStart+4*nodeTarget {
		t.Fatalf("file too small (%d) for a multi-node tree", end)
	}
	checker := mustOpen(t, fsys, path, false)
	defer checker.Close()
	mustCheck(t, checker)
	ks := want.sortedKeys()
	for off := int64(dataStart); off < end; off += 3 { // every third byte, all bit positions
		mask := byte(1) << (off % 8)
		patch(t, fsys, path, off, mask)
		if err := checker.Check(); !isCorrupt(err) {
			t.Fatalf("byte %d: Check = %v", off, err)
		}
		if off%61 == 0 {
			// A cold reader: every Get either errors or returns the right
			// value, and the damage shows up somewhere.
			r := mustOpen(t, fsys, path, false)
			errs := 0
			for _, k := range ks {
				v, ok, err := r.Snapshot().Get(k)
				switch {
				case err != nil:
					if !isCorrupt(err) {
						t.Fatalf("byte %d: Get: %v", off, err)
					}
					errs++
				case !ok || string(v) != string(want[k]):
					t.Fatalf("byte %d: Get(%x) silently wrong", off, k[:4])
				}
			}
			if errs == 0 {
				t.Fatalf("byte %d: no Get noticed", off)
			}
			if err := r.Snapshot().Ascend(Key{}, func(Key, []byte) bool { return true }); !isCorrupt(err) {
				t.Fatalf("byte %d: Ascend = %v", off, err)
			}
			r.Close()
		}
		patch(t, fsys, path, off, mask)
	}
	mustCheck(t, checker)
}

// TestCheckFindsLogicalDamage: nodes with valid checksums but a meta that
// disagrees with them.
func TestCheckFindsLogicalDamage(t *testing.T) {
	fsys := vfs.NewMem()
	threeCommits(t, fsys, "/index")
	b := readAll(t, fsys, "/index")
	m, err := DecodeMeta(b[slotSize:])
	if err != nil {
		t.Fatal(err)
	}
	m.Entries++
	m.LiveBytes -= 10
	enc := m.Encode()
	for i := range enc {
		if d := enc[i] ^ b[slotSize+i]; d != 0 {
			patch(t, fsys, "/index", int64(slotSize+i), d)
		}
	}
	tr := mustOpen(t, fsys, "/index", false)
	defer tr.Close()
	err = tr.Check()
	if !isCorrupt(err) || !strings.Contains(err.Error(), "entries") || !strings.Contains(err.Error(), "live bytes") {
		t.Fatalf("Check = %v", err)
	}
	t.Log(err)
}

// TestCheckBadSeparator builds a branch whose key differs from its child's
// first key, with correct checksums everywhere.
func TestCheckBadSeparator(t *testing.T) {
	fsys := vfs.NewMem()
	want := model{}
	rng := rand.New(rand.NewPCG(12, 12))
	for range 300 {
		want[randKey(rng)] = randVal(rng, 30)
	}
	w := mustOpen(t, fsys, "/index", true)
	if err := w.Rebuild(want.iter(), nil); err != nil {
		t.Fatal(err)
	}
	st := w.state.Load()
	w.Close()
	b := readAll(t, fsys, "/index")
	root := st.m.Root
	n, err := DecodeNode(b[root.Off:root.end()])
	if err != nil || n.Leaf || len(n.Keys) < 2 {
		t.Fatalf("root: %v %+v", err, n)
	}
	n.Keys[1][KeySize-1] ^= 1 // still ascending, but no longer the child's first key
	enc := n.AppendEncode(nil)
	if len(enc) != int(root.Len) {
		t.Fatal("length changed")
	}
	for i := range enc {
		if d := enc[i] ^ b[int(root.Off)+i]; d != 0 {
			patch(t, fsys, "/index", int64(root.Off)+int64(i), d)
		}
	}
	tr := mustOpen(t, fsys, "/index", false)
	defer tr.Close()
	if err := tr.Check(); !isCorrupt(err) || !strings.Contains(err.Error(), "differs from its parent") {
		t.Fatalf("Check = %v", err)
	}
}
