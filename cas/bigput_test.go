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
