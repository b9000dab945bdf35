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
	}{
		{"incompressible", noise(size, 11)},
		{"one byte repeated", bytes.Repeat([]byte{'a'}, size)},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, _ := newStore(t, vfs.OS, Options{})
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			id := mustPut(t, s, KindFile, c.data)
			runtime.ReadMemStats(&after)
			perByte := float64(after.TotalAlloc-before.TotalAlloc) / size
			t.Logf("%s: %.2f bytes allocated per byte put", c.name, perByte)
			if perByte > 2.5 {
				t.Errorf("putting %d bytes allocated %.2f bytes per byte; want at most 2.5 (a copy into the block, and the record)", size, perByte)
			}
			s = reopen(t, s, false)
			got, err := s.Get(id)
			if err != nil || !bytes.Equal(got, c.data) {
				t.Fatalf("read back %d bytes, %v", len(got), err)
			}
		})
	}
}
