// Package bench measures rook beside the tools users would pick instead, in
// the same run. It is a separate Go module so that the peers (bbolt here)
// never enter rook's own build.
package bench

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/rookhq/rook/index"
	"github.com/rookhq/rook/internal/vfs"
)

// The ids the index benchmarks use: N pseudo-random 16-byte keys (BLAKE3
// output is uniform, so random keys are the faithful stand-in) with a
// 12-byte value shaped like a cas entry for an object in a segment.
const indexN = 1_000_000

var (
	keysOnce sync.Once
	keys     []index.Key
)

func benchKeys() []index.Key {
	keysOnce.Do(func() {
		r := rand.New(rand.NewPCG(42, 1))
		keys = make([]index.Key, indexN)
		for i := range keys {
			for j := 0; j < index.KeySize; j += 8 {
				binary.LittleEndian.PutUint64(keys[i][j:], r.Uint64())
			}
		}
	})
	return keys
}

func value(i int) []byte {
	v := make([]byte, 0, 12)
	v = append(v, 1, 3, 0, 1)
	v = binary.AppendUvarint(v, uint64(i/4096+1))
	v = binary.AppendUvarint(v, uint64(i%4096)*64)
	return v
}

type builtIndex struct {
	rook      *index.Tree
	rookBytes int64
	bolt      *bolt.DB
	boltBytes int64
}

var (
	builtOnce sync.Once
	built     builtIndex
)

// build loads the same 1M entries into a rook index (bulk rebuild, as
// `rook store reindex` does) and into bbolt (sorted keys, 50k per
// transaction, fill 100%: bbolt's best case for bulk loading).
func build(b *testing.B) *builtIndex {
	builtOnce.Do(func() {
		dir, err := os.MkdirTemp("", "rook-bench-index")
		if err != nil {
			b.Fatal(err)
		}
		ks := append([]index.Key(nil), benchKeys()...)
		sort.Slice(ks, func(i, j int) bool { return bytes.Compare(ks[i][:], ks[j][:]) < 0 })

		path := filepath.Join(dir, "objects.idx")
		t, err := index.Open(vfs.OS, path, true)
		if err != nil {
			b.Fatal(err)
		}
		i := 0
		if err := t.Rebuild(func() (index.Key, []byte, bool) {
			if i == len(ks) {
				return index.Key{}, nil, false
			}
			i++
			return ks[i-1], value(i - 1), true
		}, nil); err != nil {
			b.Fatal(err)
		}
		built.rook = t
		st, _ := os.Stat(path)
		built.rookBytes = st.Size()

		bpath := filepath.Join(dir, "bolt.db")
		db, err := bolt.Open(bpath, 0o600, nil)
		if err != nil {
			b.Fatal(err)
		}
		for start := 0; start < len(ks); start += 50_000 {
			err := db.Update(func(tx *bolt.Tx) error {
				bk, err := tx.CreateBucketIfNotExists([]byte("objects"))
				if err != nil {
					return err
				}
				bk.FillPercent = 1.0
				for j := start; j < min(start+50_000, len(ks)); j++ {
					if err := bk.Put(ks[j][:], value(j)); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		built.bolt = db
		st, _ = os.Stat(bpath)
		built.boltBytes = st.Size()
	})
	return &built
}

// BenchmarkIndexGet: random point lookups of present ids among 1M, and the
// file size per entry, for rook's B-tree and for bbolt, same keys, same run.
func BenchmarkIndexGet(b *testing.B) {
	bi := build(b)
	ks := benchKeys()
	b.Run("rook", func(b *testing.B) {
		snap := bi.rook.Snapshot()
		r := rand.New(rand.NewPCG(7, 7))
		b.ResetTimer()
		for n := 0; n < b.N; n++ {
			if _, ok, err := snap.Get(ks[r.IntN(len(ks))]); !ok || err != nil {
				b.Fatal("missing key", err)
			}
		}
		b.ReportMetric(float64(bi.rookBytes)/indexN, "bytes/entry")
	})
	b.Run("bbolt", func(b *testing.B) {
		tx, err := bi.bolt.Begin(false)
		if err != nil {
			b.Fatal(err)
		}
		defer tx.Rollback()
		bk := tx.Bucket([]byte("objects"))
		r := rand.New(rand.NewPCG(7, 7))
		b.ResetTimer()
		for n := 0; n < b.N; n++ {
			if v := bk.Get(ks[r.IntN(len(ks))][:]); v == nil {
				b.Fatal("missing key")
			}
		}
		b.ReportMetric(float64(bi.boltBytes)/indexN, "bytes/entry")
	})
}

// BenchmarkIndexCommit: 256 new random ids then a durable commit (fsync),
// into a 1M-entry index, for both.
func BenchmarkIndexCommit(b *testing.B) {
	bi := build(b)
	r := rand.New(rand.NewPCG(9, 9))
	newKey := func() index.Key {
		var k index.Key
		for j := 0; j < index.KeySize; j += 8 {
			binary.LittleEndian.PutUint64(k[j:], r.Uint64())
		}
		return k
	}
	b.Run("rook", func(b *testing.B) {
		for n := 0; n < b.N; n++ {
			for j := 0; j < 256; j++ {
				if err := bi.rook.Put(newKey(), value(j)); err != nil {
					b.Fatal(err)
				}
			}
			if err := bi.rook.Commit(nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("bbolt", func(b *testing.B) {
		for n := 0; n < b.N; n++ {
			err := bi.bolt.Update(func(tx *bolt.Tx) error {
				bk := tx.Bucket([]byte("objects"))
				for j := 0; j < 256; j++ {
					k := newKey()
					if err := bk.Put(k[:], value(j)); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}
