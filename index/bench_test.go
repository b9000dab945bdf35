package index

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// The 1M-entry fixture is built once per test binary run and shared by the
// benchmarks (the benchmark functions run several times with growing b.N).
const benchEntries = 1_000_000

var bench struct {
	once sync.Once
	dir  string
	path string
	keys []Key // in random order
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if bench.dir != "" {
		os.RemoveAll(bench.dir)
	}
	os.Exit(code)
}

// benchFixture returns the path of an index with benchEntries random
// 16-byte keys and 12-byte values, bulk-built with Rebuild.
func benchFixture(b *testing.B) (string, []Key) {
	bench.once.Do(func() {
		bench.dir, bench.err = os.MkdirTemp("", "rook-index-bench")
		if bench.err != nil {
			return
		}
		bench.path = filepath.Join(bench.dir, "index")
		rng := rand.New(rand.NewPCG(1, 2))
		keys := make([]Key, benchEntries)
		for i := range keys {
			keys[i] = randKey(rng)
		}
		sorted := slices.Clone(keys)
		slices.SortFunc(sorted, func(a, b Key) int { return bytes.Compare(a[:], b[:]) })
		bench.keys = keys
		tr, err := Open(vfs.OS, bench.path, true)
		if err != nil {
			bench.err = err
			return
		}
		defer tr.Close()
		i := 0
		val := make([]byte, 12)
		bench.err = tr.Rebuild(func() (Key, []byte, bool) {
			if i == len(sorted) {
				return Key{}, nil, false
			}
			k := sorted[i]
			i++
			copy(val, k[4:]) // deterministic 12-byte value
			return k, val, true
		}, []byte("bench"))
	})
	if bench.err != nil {
		b.Fatal(bench.err)
	}
	return bench.path, bench.keys
}

// BenchmarkGet: point lookups of existing keys in a 1M-entry index.
// "cached": the node cache is warm (a full scan first), the steady state of
// a long-running process, comparable to an mmap'd B+tree in the page cache.
// "uncached": the node cache is off, so every level is a pread + checksum +
// decode (the file itself is in the OS page cache).
func BenchmarkGet(b *testing.B) {
	path, keys := benchFixture(b)
	for _, mode := range []string{"cached", "uncached"} {
		b.Run(mode, func(b *testing.B) {
			tr, err := Open(vfs.OS, path, false)
			if err != nil {
				b.Fatal(err)
			}
			defer tr.Close()
			if mode == "uncached" {
				tr.cache = newNodeCache(0)
			}
			s := tr.Snapshot()
			if mode == "cached" {
				if err := tr.ascend(s.st, nil, true, func(*Key, []byte) bool { return true }); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				k := keys[(i*7919)%len(keys)]
				v, ok, err := s.Get(k)
				if err != nil || !ok || len(v) != 12 {
					b.Fatalf("Get: %v %v %d", ok, err, len(v))
				}
			}
			// After the loop: ResetTimer (and b.Loop's first call) drop
			// metrics reported earlier.
			st := tr.Stats()
			b.ReportMetric(float64(st.FileSize)/float64(st.Entries), "bytes/entry")
			b.ReportMetric(float64(st.CacheBytes)/(1<<20), "cacheMiB")
		})
	}
}

// BenchmarkCommitBatch: Put 256 random new keys (12-byte values) into the
// 1M-entry index, then Commit (two fsyncs). Automatic compaction, when it
// triggers, is part of the measured cost.
func BenchmarkCommitBatch(b *testing.B) {
	src, _ := benchFixture(b)
	path := filepath.Join(b.TempDir(), "index")
	if err := copyFile(src, path); err != nil {
		b.Fatal(err)
	}
	tr, err := Open(vfs.OS, path, true)
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	val := make([]byte, 12)
	start := tr.Stats()
	b.ReportAllocs()
	for b.Loop() {
		for range 256 {
			k := randKey(rng)
			if err := tr.Put(k, val); err != nil {
				b.Fatal(err)
			}
		}
		if err := tr.Commit([]byte("bench")); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	end := tr.Stats()
	b.ReportMetric(float64(end.TxID-start.TxID-uint64(end.Compactions)), "commits")
	b.ReportMetric(float64(end.Compactions), "compactions")
}

func copyFile(src, dst string) error {
	in, err := vfs.OS.OpenFile(src, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := vfs.OS.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
