package index

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

func TestEmpty(t *testing.T) {
	path := tempPath(t)
	tr := mustOpen(t, vfs.OS, path, true)
	s := tr.Snapshot()
	if s.Len() != 0 || s.TxID() != 0 || len(s.UserMeta()) != 0 {
		t.Fatalf("fresh tree: len %d txid %d meta %q", s.Len(), s.TxID(), s.UserMeta())
	}
	if _, ok, err := s.Get(Key{1}); ok || err != nil {
		t.Fatalf("Get on empty: %v %v", ok, err)
	}
	mustCheck(t, tr)
	if st := tr.Stats(); st.FileSize != dataStart || st.Height != 0 || st.Recovered != "" {
		t.Fatalf("stats %+v", st)
	}
	// Deleting from an empty tree, and committing nothing, are fine.
	tr.Delete(Key{1})
	if err := tr.Commit([]byte("m1")); err != nil {
		t.Fatal(err)
	}
	if err := tr.Commit(nil); err != nil {
		t.Fatal(err)
	}
	if tr.Snapshot().TxID() != 2 {
		t.Fatalf("txid %d", tr.Snapshot().TxID())
	}
	tr.Close()
	tr = mustOpen(t, vfs.OS, path, false)
	defer tr.Close()
	if s := tr.Snapshot(); s.TxID() != 2 || s.Len() != 0 || tr.Stats().Recovered != "" {
		t.Fatalf("reopened: txid %d len %d recovered %q", s.TxID(), s.Len(), tr.Stats().Recovered)
	}
}

func TestOpenMissingReadOnly(t *testing.T) {
	_, err := Open(vfs.OS, tempPath(t), false)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want fs.ErrNotExist", err)
	}
	m := vfs.NewMem()
	if _, err := Open(m, "/x/index", false); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("memfs: err = %v", err)
	}
}

func TestCreateMode(t *testing.T) {
	path := tempPath(t)
	tr := mustOpen(t, vfs.OS, path, true)
	tr.Close()
	fi, err := vfs.OS.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if vfs.Exists(vfs.OS, path+".tmp") {
		t.Fatal("temp file left behind")
	}
}

func TestValidation(t *testing.T) {
	tr := mustOpen(t, vfs.OS, tempPath(t), true)
	defer tr.Close()
	if err := tr.Put(Key{1}, make([]byte, MaxValue+1)); err == nil {
		t.Fatal("Put of an oversized value succeeded")
	}
	if err := tr.Put(Key{1}, make([]byte, MaxValue)); err != nil {
		t.Fatal(err)
	}
	if err := tr.Commit(make([]byte, MaxUserMeta+1)); err == nil {
		t.Fatal("Commit of oversized user meta succeeded")
	}
	if tr.Pending() != 1 {
		t.Fatalf("pending %d after failed commit", tr.Pending())
	}
	if err := tr.Commit(make([]byte, MaxUserMeta)); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := tr.Get(Key{1}); err != nil || !ok || len(v) != MaxValue {
		t.Fatalf("Get: %d %v %v", len(v), ok, err)
	}
	// Rebuild rejects unsorted input and pending changes.
	tr.Put(Key{2}, nil)
	if err := tr.Rebuild(model{}.iter(), nil); err == nil {
		t.Fatal("Rebuild with pending changes succeeded")
	}
	tr.Discard()
	keys := []Key{{2}, {1}}
	i := 0
	err := tr.Rebuild(func() (Key, []byte, bool) {
		if i == len(keys) {
			return Key{}, nil, false
		}
		i++
		return keys[i-1], nil, true
	}, nil)
	if err == nil || !strings.Contains(err.Error(), "ascending") {
		t.Fatalf("unsorted Rebuild: %v", err)
	}
	if tr.Snapshot().Len() != 1 {
		t.Fatal("failed Rebuild changed the tree")
	}
	mustCheck(t, tr)

	ro := mustOpen(t, vfs.OS, tr.path, false)
	defer ro.Close()
	if err := ro.Put(Key{}, nil); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("read-only Put: %v", err)
	}
	ro.Delete(Key{})
	if err := ro.Commit(nil); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("read-only Commit: %v", err)
	}
}

// TestModel runs random inserts, overwrites and deletes against a map,
// committing every few operations and reopening now and then.
func TestModel(t *testing.T) {
	for _, tc := range []struct {
		name   string
		slack  int64
		pool   int
		maxVal int
	}{
		{"small-values", -1, 3000, 40},
		{"big-values", -1, 600, MaxValue},
		{"compacting", 0, 2000, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tc.pool)))
			fsys := vfs.NewMem()
			const path = "/db/index"
			if err := fsys.MkdirAll("/db", 0o755); err != nil {
				t.Fatal(err)
			}
			tr := mustOpen(t, fsys, path, true)
			tr.compactSlack = tc.slack
			defer func() { tr.Close() }()
			pool := make([]Key, tc.pool)
			for i := range pool {
				pool[i] = randKey(rng)
				if i%3 == 0 && i > 0 { // shared prefixes
					copy(pool[i][:KeySize-2], pool[i-1][:KeySize-2])
				}
			}
			want := model{}
			commits := 0
			for round := 0; round < 60; round++ {
				n := 1 + rng.IntN(300)
				if round%10 == 9 {
					n = 2000 // occasionally a big batch
				}
				for range n {
					k := pool[rng.IntN(len(pool))]
					switch r := rng.IntN(10); {
					case r < 6:
						v := randVal(rng, tc.maxVal)
						if err := tr.Put(k, v); err != nil {
							t.Fatal(err)
						}
						want[k] = v
					default:
						tr.Delete(k)
						delete(want, k)
					}
				}
				if round == 30 { // delete nearly everything
					for k := range want {
						if rng.IntN(20) != 0 {
							tr.Delete(k)
							delete(want, k)
						}
					}
				}
				// Pending reads see the changes.
				for _, k := range pool[:20] {
					v, ok, err := tr.Get(k)
					wv, wok := want[k]
					if err != nil || ok != wok || !bytes.Equal(v, wv) {
						t.Fatalf("round %d: pending Get(%x) = %x %v %v, want %x %v", round, k[:4], v, ok, err, wv, wok)
					}
				}
				um := []byte(fmt.Sprintf("round %d", round))
				if err := tr.Commit(um); err != nil {
					t.Fatal(err)
				}
				commits++
				if tr.Pending() != 0 {
					t.Fatal("pending after commit")
				}
				mustCheck(t, tr)
				mustDiff(t, tr.Snapshot(), want)
				if round%7 == 6 {
					tr.Close()
					tr = mustOpen(t, fsys, path, true)
					tr.compactSlack = tc.slack
					mustCheck(t, tr)
					mustDiff(t, tr.Snapshot(), want)
					if got := tr.Snapshot().UserMeta(); string(got) != string(um) {
						t.Fatalf("user meta %q, want %q", got, um)
					}
					if st := tr.Stats(); st.Recovered != "" {
						t.Fatalf("recovered: %s", st.Recovered)
					}
				}
			}
			st := tr.Stats()
			t.Logf("%+v", st)
			if tc.slack >= 0 {
				if st.Compactions == 0 {
					t.Error("no compaction happened")
				}
				if st.FileSize > int64(2*st.LiveBytes)+dataStart+64<<10 {
					t.Errorf("file %d bytes for %d live", st.FileSize, st.LiveBytes)
				}
			}
		})
	}
}

// TestSequential inserts ascending keys in small batches (the common pattern
// for time-ordered ids) and checks the tree stays reasonably dense.
func TestSequential(t *testing.T) {
	tr := mustOpen(t, vfs.OS, tempPath(t), true)
	tr.compactSlack = -1
	defer tr.Close()
	want := model{}
	for i := range 20000 {
		var k Key
		binary.BigEndian.PutUint64(k[:], uint64(i))
		v := []byte(fmt.Sprintf("v%d", i))
		tr.Put(k, v)
		want[k] = v
		if i%500 == 499 {
			if err := tr.Commit(nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	mustCheck(t, tr)
	mustDiff(t, tr.Snapshot(), want)
	st := tr.Stats()
	t.Logf("%+v, %.1f live bytes/entry", st, float64(st.LiveBytes)/float64(st.Entries))
	if per := float64(st.LiveBytes) / float64(st.Entries); per > 100 {
		t.Errorf("%.1f live bytes per entry", per)
	}
}

func TestSnapshotIsolation(t *testing.T) {
	tr := mustOpen(t, vfs.OS, tempPath(t), true)
	tr.compactSlack = 0 // compactions swap files under the snapshots too
	defer tr.Close()
	rng := rand.New(rand.NewPCG(2, 2))
	want := model{}
	var snaps []*Snapshot
	var models []model
	for round := range 30 {
		for range 200 {
			k := randKey(rng)
			if len(want) > 0 && rng.IntN(3) == 0 {
				for kk := range want { // delete or overwrite an existing key
					k = kk
					break
				}
				if rng.IntN(2) == 0 {
					tr.Delete(k)
					delete(want, k)
					continue
				}
			}
			v := randVal(rng, 60)
			tr.Put(k, v)
			want[k] = v
		}
		if err := tr.Commit([]byte{byte(round)}); err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, tr.Snapshot())
		models = append(models, want.clone())
	}
	if tr.Stats().Compactions == 0 {
		t.Error("expected compactions")
	}
	for i, s := range snaps {
		if err := diffSnapshot(s, models[i]); err != nil {
			t.Fatalf("snapshot %d: %v", i, err)
		}
		if um := s.UserMeta(); len(um) != 1 || um[0] != byte(i) {
			t.Fatalf("snapshot %d: user meta %v", i, um)
		}
	}
}

// TestConcurrentReaders reads from several goroutines while one writes and
// commits (run with -race).
func TestConcurrentReaders(t *testing.T) {
	tr := mustOpen(t, vfs.OS, tempPath(t), true)
	tr.compactSlack = 0
	defer tr.Close()
	// Every committed value of key k in round r is r, so readers can verify
	// a snapshot's consistency: all keys present hold the snapshot's round.
	keys := make([]Key, 500)
	rng := rand.New(rand.NewPCG(3, 3))
	for i := range keys {
		keys[i] = randKey(rng)
	}
	var done atomic.Bool
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			for !done.Load() {
				s := tr.Snapshot()
				um := s.UserMeta()
				if len(um) == 0 {
					continue
				}
				round := binary.LittleEndian.Uint32(um)
				check := func(v []byte) error {
					if got := binary.LittleEndian.Uint32(v); got != round {
						return fmt.Errorf("snapshot of round %d holds value of round %d", round, got)
					}
					return nil
				}
				if g%2 == 0 {
					k := keys[rng.IntN(len(keys))]
					v, ok, err := s.Get(k)
					if err == nil && !ok {
						err = fmt.Errorf("key missing in round %d", round)
					}
					if err == nil {
						err = check(v)
					}
					if err != nil {
						errc <- err
						return
					}
				} else {
					n := 0
					var cerr error
					err := s.Ascend(randKey(rng), func(k Key, v []byte) bool {
						cerr = check(v)
						n++
						return cerr == nil && n < 100
					})
					if err == nil {
						err = cerr
					}
					if err != nil {
						errc <- err
						return
					}
				}
			}
		}()
	}
	for round := uint32(1); round <= 60; round++ {
		for _, k := range keys {
			v := make([]byte, 4+int(round%20))
			binary.LittleEndian.PutUint32(v, round)
			tr.Put(k, v)
		}
		um := binary.LittleEndian.AppendUint32(nil, round)
		if err := tr.Commit(um); err != nil {
			t.Fatal(err)
		}
		_ = tr.Stats()
	}
	done.Store(true)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	if tr.Stats().Compactions == 0 {
		t.Error("expected compactions during the test")
	}
	mustCheck(t, tr)
}

func TestAscend(t *testing.T) {
	tr := mustOpen(t, vfs.OS, tempPath(t), true)
	defer tr.Close()
	rng := rand.New(rand.NewPCG(4, 4))
	want := model{}
	// Keys in clusters sharing 2-byte prefixes, for prefix scans.
	for range 5000 {
		k := randKey(rng)
		k[0] = byte(rng.IntN(8))
		k[1] = byte(rng.IntN(8))
		v := randVal(rng, 20)
		tr.Put(k, v)
		want[k] = v
	}
	if err := tr.Commit(nil); err != nil {
		t.Fatal(err)
	}
	ks := want.sortedKeys()
	s := tr.Snapshot()
	for range 300 {
		from := randKey(rng)
		switch rng.IntN(3) {
		case 0: // an existing key
			from = ks[rng.IntN(len(ks))]
		case 1:
			from[0] = byte(rng.IntN(9))
		}
		// Expected: keys >= from.
		i := 0
		for i < len(ks) && bytes.Compare(ks[i][:], from[:]) < 0 {
			i++
		}
		limit := rng.IntN(300)
		n := 0
		err := s.Ascend(from, func(k Key, v []byte) bool {
			if i+n >= len(ks) || k != ks[i+n] || !bytes.Equal(v, want[k]) {
				t.Fatalf("Ascend(%x): entry %d = %x, want %x", from[:4], n, k[:4], ks[i+n][:4])
			}
			n++
			return n < limit
		})
		if err != nil {
			t.Fatal(err)
		}
		if wantN := min(max(limit, 1), len(ks)-i); n != wantN {
			t.Fatalf("Ascend(%x) limit %d: %d entries, want %d", from[:4], limit, n, wantN)
		}
	}
	// Prefix scan: all keys starting with {a, b}.
	for a := range 9 {
		for b := range 9 {
			var from Key
			from[0], from[1] = byte(a), byte(b)
			var got []Key
			err := s.Ascend(from, func(k Key, _ []byte) bool {
				if k[0] != byte(a) || k[1] != byte(b) {
					return false
				}
				got = append(got, k)
				return true
			})
			if err != nil {
				t.Fatal(err)
			}
			var exp []Key
			for _, k := range ks {
				if k[0] == byte(a) && k[1] == byte(b) {
					exp = append(exp, k)
				}
			}
			if len(got) != len(exp) {
				t.Fatalf("prefix %x%x: %d keys, want %d", a, b, len(got), len(exp))
			}
		}
	}
	// Values handed to fn are the caller's.
	s.Ascend(Key{}, func(k Key, v []byte) bool {
		for i := range v {
			v[i] = 0xff
		}
		return true
	})
	mustDiff(t, tr.Snapshot(), want)
}

func TestRebuild100k(t *testing.T) {
	fsys := vfs.NewMem()
	tr := mustOpen(t, fsys, "/index", true)
	defer tr.Close()
	rng := rand.New(rand.NewPCG(5, 5))
	want := model{}
	for range 100_000 {
		want[randKey(rng)] = randVal(rng, 24)
	}
	// Something committed first, to be replaced.
	tr.Put(Key{9}, []byte("old"))
	if err := tr.Commit([]byte("old")); err != nil {
		t.Fatal(err)
	}
	old := tr.Snapshot()
	if err := tr.Rebuild(want.iter(), []byte("rebuilt")); err != nil {
		t.Fatal(err)
	}
	mustCheck(t, tr)
	st := tr.Stats()
	t.Logf("%+v, %.1f bytes/entry", st, float64(st.FileSize)/float64(st.Entries))
	if st.Entries != 100_000 || st.Height != 3 || st.TxID != 2 || uint64(st.FileSize) != st.LiveBytes+dataStart {
		t.Fatalf("stats %+v", st)
	}
	if per := float64(st.FileSize) / float64(st.Entries); per > 55 {
		t.Errorf("%.1f bytes per entry", per)
	}
	mustDiff(t, tr.Snapshot(), want)
	if string(tr.Snapshot().UserMeta()) != "rebuilt" {
		t.Fatal("user meta")
	}
	// The old snapshot still reads the old file.
	mustDiff(t, old, model{Key{9}: []byte("old")})
	if vfs.Exists(fsys, "/index.tmp") {
		t.Fatal("temp file left")
	}
	// Commits continue on the new file; reopening sees everything.
	tr.Put(Key{9}, []byte("new"))
	want[Key{9}] = []byte("new")
	if err := tr.Commit(nil); err != nil {
		t.Fatal(err)
	}
	tr.Close()
	tr = mustOpen(t, fsys, "/index", false)
	mustCheck(t, tr)
	mustDiff(t, tr.Snapshot(), want)

	// Rebuild to empty.
	tw := mustOpen(t, fsys, "/index", true)
	defer tw.Close()
	if err := tw.Rebuild(model{}.iter(), nil); err != nil {
		t.Fatal(err)
	}
	mustCheck(t, tw)
	if st := tw.Stats(); st.Entries != 0 || st.Height != 0 || st.FileSize != dataStart {
		t.Fatalf("empty rebuild: %+v", st)
	}
}

// TestRefresh: a read-only Tree (another process) follows the writer's
// commits and a file replacement by compaction.
func TestRefresh(t *testing.T) {
	for _, name := range []string{"os", "mem"} {
		t.Run(name, func(t *testing.T) {
			var fsys vfs.FS = vfs.OS
			path := "/index"
			if name == "os" {
				path = tempPath(t)
			} else {
				fsys = vfs.NewMem()
			}
			w := mustOpen(t, fsys, path, true)
			defer w.Close()
			r := mustOpen(t, fsys, path, false)
			defer r.Close()
			want := model{}
			rng := rand.New(rand.NewPCG(6, 6))
			for round := range 8 {
				for range 300 {
					k := randKey(rng)
					want[k] = randVal(rng, 30)
					w.Put(k, want[k])
				}
				if err := w.Commit(nil); err != nil {
					t.Fatal(err)
				}
				before := r.Snapshot()
				if err := r.Refresh(); err != nil {
					t.Fatal(err)
				}
				mustDiff(t, r.Snapshot(), want)
				if r.Snapshot().TxID() != w.Snapshot().TxID() || before.TxID() >= r.Snapshot().TxID() {
					t.Fatalf("txids: reader before %d, after %d, writer %d", before.TxID(), r.Snapshot().TxID(), w.Snapshot().TxID())
				}
				if round == 4 {
					// Replace the file (as compaction does); the reader's
					// old snapshot keeps working, Refresh switches.
					old := r.Snapshot()
					oldWant := want.clone()
					if err := w.compact(); err != nil {
						t.Fatal(err)
					}
					mustDiff(t, old, oldWant)
					if err := r.Refresh(); err != nil {
						t.Fatal(err)
					}
					mustDiff(t, r.Snapshot(), want)
					mustDiff(t, old, oldWant)
					mustCheck(t, r)
				}
			}
		})
	}
}

func TestDeleteAll(t *testing.T) {
	tr := mustOpen(t, vfs.OS, tempPath(t), true)
	defer tr.Close()
	rng := rand.New(rand.NewPCG(7, 7))
	want := model{}
	for range 3000 {
		k := randKey(rng)
		want[k] = randVal(rng, 50)
		tr.Put(k, want[k])
	}
	if err := tr.Commit(nil); err != nil {
		t.Fatal(err)
	}
	ks := want.sortedKeys()
	// Delete in chunks from the middle out, checking as the tree shrinks.
	for len(ks) > 0 {
		n := min(len(ks), 1+rng.IntN(400))
		at := rng.IntN(len(ks) - n + 1)
		for _, k := range ks[at : at+n] {
			tr.Delete(k)
			delete(want, k)
		}
		ks = append(ks[:at], ks[at+n:]...)
		if err := tr.Commit(nil); err != nil {
			t.Fatal(err)
		}
		mustCheck(t, tr)
		mustDiff(t, tr.Snapshot(), want)
		if st := tr.Stats(); len(ks) > 0 && st.Height > 1 && float64(st.LiveBytes)/float64(len(ks)) > 400 {
			t.Fatalf("%d entries in %d live bytes: underfull nodes not merged", len(ks), st.LiveBytes)
		}
	}
	if st := tr.Stats(); st.Height != 0 || st.Entries != 0 || st.LiveBytes != 0 {
		t.Fatalf("after deleting everything: %+v", st)
	}
}

// A write that fails after a Rebuild names the index file the user can
// find, not the temp name it was built under (gone since the rename).
func TestWriteErrorAfterRebuildNamesTheIndex(t *testing.T) {
	fsys := vfs.NewMem()
	tr := mustOpen(t, fsys, "/index", true)
	defer tr.Close()
	want := model{Key{1}: []byte("one"), Key{2}: []byte("two")}
	if err := tr.Rebuild(want.iter(), nil); err != nil {
		t.Fatal(err)
	}
	fsys.SetHook(func(op vfs.Op, path string) error {
		if op == vfs.OpWrite {
			return syscall.ENOSPC
		}
		return nil
	})
	tr.Put(Key{3}, []byte("three"))
	err := tr.Commit(nil)
	fsys.SetHook(nil)
	if err == nil {
		t.Fatal("commit with every write failing succeeded")
	}
	if strings.Contains(err.Error(), ".tmp") || !strings.Contains(err.Error(), "/index") {
		t.Fatalf("commit error %q: want it to name /index, not /index.tmp", err)
	}
}

// TestAscendFromEveryKeyWhenKeysShareLongPrefixes (holds): keys that
// share their first 8 bytes (the part a node compares as a number) and
// more, spread over many leaves by commits and by a rebuild, are met in
// order by an Ascend from each key, from just below it and from just
// past it, at every leaf boundary included; Get finds each.
func TestAscendFromEveryKeyWhenKeysShareLongPrefixes(t *testing.T) {
	fsys := vfs.NewMem()
	tr, err := Open(fsys, "/idx", true)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var keys []Key
	for i := range 3000 {
		var k Key
		copy(k[:], "rookrookrook")                      // 12 shared bytes
		binary.BigEndian.PutUint32(k[12:], uint32(i*7)) // gaps between keys
		keys = append(keys, k)
		if err := tr.Put(k, bytes.Repeat([]byte{byte(i)}, i%40)); err != nil {
			t.Fatal(err)
		}
		if i%500 == 499 {
			if err := tr.Commit(nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(what string) {
		snap := tr.Snapshot()
		for i, k := range keys {
			below, past := k, k
			binary.BigEndian.PutUint32(below[12:], binary.BigEndian.Uint32(k[12:])-1)
			binary.BigEndian.PutUint32(past[12:], binary.BigEndian.Uint32(k[12:])+1)
			for _, c := range []struct {
				from  Key
				first int
			}{{k, i}, {below, i}, {past, i + 1}} {
				if i == 0 && c.from == below {
					continue
				}
				var got []Key
				if err := snap.Ascend(c.from, func(k Key, _ []byte) bool { got = append(got, k); return len(got) < 3 }); err != nil {
					t.Fatal(err)
				}
				want := keys[min(c.first, len(keys)):min(c.first+3, len(keys))]
				if len(got) != len(want) {
					t.Fatalf("%s: from %x: got %d keys, want %d", what, c.from, len(got), len(want))
				}
				for j := range got {
					if got[j] != want[j] {
						t.Fatalf("%s: from %x: key %d is %x, want %x", what, c.from, j, got[j], want[j])
					}
				}
			}
			if _, ok, err := snap.Get(k); !ok || err != nil {
				t.Fatalf("%s: Get %x: %v %v", what, k, ok, err)
			}
		}
	}
	check("commits")
	if err := tr.Rebuild(func() func() (Key, []byte, bool) {
		i := 0
		return func() (Key, []byte, bool) {
			if i == len(keys) {
				return Key{}, nil, false
			}
			i++
			return keys[i-1], []byte{1, 2, 3}, true
		}
	}(), nil); err != nil {
		t.Fatal(err)
	}
	check("rebuild")
}
