package index

import (
	"encoding/binary"
	"hash/crc32"
	"math/rand/v2"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// nodesByDoc reads the node area of an index file as docs/storage.md
// ("The index": File layout, Node) describes it: nodes back to back from
// 8192 to the committed file end, each crc32c u32 | body len u32 | body,
// the crc covering the length and the body. It returns each node's length.
func nodesByDoc(t *testing.T, b []byte) []int {
	t.Helper()
	cc := crc32.MakeTable(crc32.Castagnoli)
	var end uint64
	var best uint64
	for s := 0; s < 2; s++ {
		sl := b[s*4096 : (s+1)*4096]
		if string(sl[:8]) != "rookidx1" {
			continue
		}
		if tx := binary.LittleEndian.Uint64(sl[16:]); tx >= best {
			best, end = tx, binary.LittleEndian.Uint64(sl[48:])
		}
	}
	var lens []int
	for off := uint64(8192); off < end; {
		n := uint64(binary.LittleEndian.Uint32(b[off+4:]))
		if crc32.Checksum(b[off+4:off+8+n], cc) != binary.LittleEndian.Uint32(b[off:]) {
			t.Fatalf("node at %d: crc does not cover [len, body)", off)
		}
		lens = append(lens, int(8+n))
		off += 8 + n
	}
	return lens
}

// TestNodesAreAtMost4KiB: "Nodes are at most 4 KiB: a node that would
// grow beyond that is split", for commits and for bulk loads (Rebuild).
func TestNodesAreAtMost4KiB(t *testing.T) {
	for _, bulk := range []bool{false, true} {
		fsys := vfs.NewMem()
		tr, err := Open(fsys, "/idx", true)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		m := model{}
		for i := 0; i < 300; i++ {
			m[randKey(rng)] = randVal(rng, MaxValue)
		}
		if bulk {
			err = tr.Rebuild(m.iter(), nil)
		} else {
			for k, v := range m {
				if err := tr.Put(k, v); err != nil {
					t.Fatal(err)
				}
			}
			err = tr.Commit(nil)
		}
		if err != nil {
			t.Fatal(err)
		}
		tr.Close()
		b, err := vfs.ReadFile(fsys, "/idx")
		if err != nil {
			t.Fatal(err)
		}
		for i, n := range nodesByDoc(t, b) {
			if n > 4096 {
				t.Fatalf("bulk=%v: node %d is %d bytes, more than 4 KiB", bulk, i, n)
			}
		}
	}
}
