package index

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

func randKey(rng *rand.Rand) Key {
	var k Key
	for i := 0; i < KeySize; i += 8 {
		v := rng.Uint64()
		for j := range 8 {
			k[i+j] = byte(v >> (8 * j))
		}
	}
	return k
}

func randVal(rng *rand.Rand, maxLen int) []byte {
	v := make([]byte, rng.IntN(maxLen+1))
	for i := range v {
		v[i] = byte(rng.Uint32())
	}
	return v
}

type model map[Key][]byte

func (m model) clone() model { return maps.Clone(m) }

func (m model) sortedKeys() []Key {
	ks := slices.Collect(maps.Keys(m))
	slices.SortFunc(ks, func(a, b Key) int { return bytes.Compare(a[:], b[:]) })
	return ks
}

// iter returns a Rebuild iterator over m in key order.
func (m model) iter() func() (Key, []byte, bool) {
	ks := m.sortedKeys()
	i := 0
	return func() (Key, []byte, bool) {
		if i == len(ks) {
			return Key{}, nil, false
		}
		k := ks[i]
		i++
		return k, m[k], true
	}
}

// diffSnapshot compares a snapshot with a model and returns the first
// difference found.
func diffSnapshot(s *Snapshot, want model) error {
	if s.Len() != uint64(len(want)) {
		return fmt.Errorf("Len = %d, want %d", s.Len(), len(want))
	}
	ks := want.sortedKeys()
	i := 0
	var diff error
	err := s.Ascend(Key{}, func(k Key, v []byte) bool {
		switch {
		case i >= len(ks):
			diff = fmt.Errorf("extra key %x", k[:4])
		case k != ks[i]:
			diff = fmt.Errorf("entry %d: key %x, want %x", i, k[:4], ks[i][:4])
		case !bytes.Equal(v, want[k]):
			diff = fmt.Errorf("key %x: value %x, want %x", k[:4], v, want[k])
		}
		i++
		return diff == nil
	})
	if err != nil {
		return err
	}
	if diff != nil {
		return diff
	}
	if i != len(ks) {
		return fmt.Errorf("Ascend saw %d entries, want %d", i, len(ks))
	}
	// Point lookups of a sample (all, if small).
	step := max(1, len(ks)/200)
	for j := 0; j < len(ks); j += step {
		k := ks[j]
		v, ok, err := s.Get(k)
		if err != nil {
			return err
		}
		if !ok || !bytes.Equal(v, want[k]) {
			return fmt.Errorf("Get(%x) = %x, %v; want %x", k[:4], v, ok, want[k])
		}
	}
	return nil
}

func mustDiff(t testing.TB, s *Snapshot, want model) {
	t.Helper()
	if err := diffSnapshot(s, want); err != nil {
		t.Fatal(err)
	}
}

func mustCheck(t testing.TB, tr *Tree) {
	t.Helper()
	if err := tr.Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
}

func mustOpen(t testing.TB, fsys vfs.FS, path string, writable bool) *Tree {
	t.Helper()
	tr, err := Open(fsys, path, writable)
	if err != nil {
		t.Fatalf("Open(%s, %v): %v", path, writable, err)
	}
	return tr
}

func tempPath(t testing.TB) string { return filepath.Join(t.TempDir(), "index") }

// patch xors mask into the byte at off of the file.
func patch(t testing.TB, fsys vfs.FS, path string, off int64, mask byte) {
	t.Helper()
	f, err := fsys.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := []byte{0}
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= mask
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

func readAll(t testing.TB, fsys vfs.FS, path string) []byte {
	t.Helper()
	b, err := vfs.ReadFile(fsys, path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func isCorrupt(err error) bool { return errors.Is(err, ErrCorrupt) }
