package index

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rookhq/rook/internal/vfs"
)

// handBuilt writes an index file by hand: nodes (appended in order from
// dataStart, each given as a function of its own offset and the offsets of
// the nodes before it) and a meta slot naming root (an index into nodes)
// with the given height. It returns the nodes' refs.
func handBuilt(t *testing.T, fsys vfs.FS, path string, height uint32, root int, nodes ...func(self uint64, refs []Ref) Node) []Ref {
	t.Helper()
	var body []byte
	var refs []Ref
	for _, mk := range nodes {
		off := uint64(dataStart + len(body))
		n := mk(off, refs)
		start := len(body)
		body = n.AppendEncode(body)
		refs = append(refs, Ref{Off: off, Len: uint32(len(body) - start)})
	}
	end := uint64(dataStart + len(body))
	var live uint64
	for _, r := range refs {
		live += uint64(r.Len)
	}
	m := Meta{TxID: 0, Root: refs[root], Height: height, Entries: 1, FileEnd: end, LiveBytes: live, UserMeta: []byte{}}
	file := make([]byte, dataStart, end)
	copy(file, m.Encode())
	file = append(file, body...)
	f, err := fsys.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(file); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return refs
}

func seqKey(i int) Key {
	var k Key
	k[0], k[1] = byte(i>>8), byte(i)
	return k
}

func leafNode(n int) func(uint64, []Ref) Node {
	return func(uint64, []Ref) Node {
		nd := Node{Leaf: true}
		for i := range n {
			nd.Keys = append(nd.Keys, seqKey(i))
			nd.Values = append(nd.Values, []byte{byte(i)})
		}
		return nd
	}
}

// branchTo is a branch of fan entries, every one pointing at child(self,
// refs).
func branchTo(fan int, child func(self uint64, refs []Ref) Ref) func(uint64, []Ref) Node {
	return func(self uint64, refs []Ref) Node {
		c := child(self, refs)
		var nd Node
		for i := range fan {
			nd.Keys = append(nd.Keys, seqKey(i))
			nd.Children = append(nd.Children, c)
		}
		return nd
	}
}

func prevNode(_ uint64, refs []Ref) Ref { return refs[len(refs)-1] }

// within runs f and fails the test if it does not return within d: the
// walks below were exponential (or endless) on these files.
func within(t *testing.T, d time.Duration, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("%s did not finish within %v: the walk does not stop on a damaged tree", what, d)
		return nil
	}
}

// sharedDAG is a tree of height 7 whose every branch has 150 entries all
// naming the same child: 150^6 paths down to one leaf.
func sharedDAG(t *testing.T, fsys vfs.FS, path string) {
	nodes := []func(uint64, []Ref) Node{leafNode(3)}
	for range 6 {
		nodes = append(nodes, branchTo(150, prevNode))
	}
	handBuilt(t, fsys, path, 7, len(nodes)-1, nodes...)
}

func TestWalkSharedChildren(t *testing.T) {
	fsys := vfs.NewMem()
	sharedDAG(t, fsys, "/index")
	tr := mustOpen(t, fsys, "/index", false)
	defer tr.Close()
	n := 0
	err := within(t, 5*time.Second, "Ascend", func() error {
		return tr.Snapshot().Ascend(Key{}, func(Key, []byte) bool { n++; return true })
	})
	if !isCorrupt(err) {
		t.Fatalf("Ascend = %v after %d entries, want ErrCorrupt", err, n)
	}
	// The leaf's 3 entries once; the second visit is the damage.
	if n != 3 || !strings.Contains(err.Error(), "offset") {
		t.Fatalf("Ascend saw %d entries, err %v", n, err)
	}
	t.Log(err)
	err = within(t, 5*time.Second, "Check", tr.Check)
	if !isCorrupt(err) || !strings.Contains(err.Error(), "referenced more than once") {
		t.Fatalf("Check = %v", err)
	}
	if got := strings.Count(err.Error(), "\n") + 1; got > maxProblems+1 {
		t.Fatalf("Check reported %d problems", got)
	}
	// Ascend from a key inside the tree meets the damage too.
	err = within(t, 5*time.Second, "Ascend(from)", func() error {
		return tr.Snapshot().Ascend(seqKey(1), func(Key, []byte) bool { return true })
	})
	if !isCorrupt(err) {
		t.Fatalf("Ascend(from) = %v", err)
	}
	// Compaction walks the tree with ascend too: it must fail, not hang
	// or write a tree of duplicate keys.
	w := mustOpen(t, fsys, "/index", true)
	defer w.Close()
	err = within(t, 5*time.Second, "compact", w.compact)
	if !isCorrupt(err) {
		t.Fatalf("compact of a damaged tree = %v", err)
	}
}

// TestWalkCycle: nodes that point at themselves or at a node written
// after them (a cycle), which no writer produces: children are always
// written before their parent.
func TestWalkCycle(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes []func(uint64, []Ref) Node
	}{
		{"self", []func(uint64, []Ref) Node{
			branchTo(150, func(self uint64, _ []Ref) Ref { return Ref{Off: self, Len: 0} }),
		}},
		{"two", []func(uint64, []Ref) Node{
			// Node 0 points forward at node 1, which points back at node 0.
			branchTo(150, func(self uint64, _ []Ref) Ref { return Ref{Off: self + 1, Len: 0} }),
			branchTo(150, func(_ uint64, refs []Ref) Ref { return refs[0] }),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := vfs.NewMem()
			// A reference to a node not written yet (Len 0; Off self+1
			// for the next node) needs lengths: build once with 2-byte
			// placeholders to learn them, then again with them filled in
			// (same sizes, so the same offsets).
			lens := map[uint64]uint32{}
			fix := func(mk func(uint64, []Ref) Node) func(uint64, []Ref) Node {
				return func(self uint64, refs []Ref) Node {
					n := mk(self, refs)
					for i, c := range n.Children {
						if c.Len != 0 {
							continue
						}
						if c.Off == self+1 { // the next node
							c.Off = self + uint64(lens[self])
							if lens[self] == 0 {
								c.Off = self + 1000
							}
						}
						c.Len = lens[c.Off]
						if c.Len == 0 {
							c.Len = 1000
						}
						n.Children[i] = c
					}
					return n
				}
			}
			var nodes []func(uint64, []Ref) Node
			for _, mk := range tc.nodes {
				nodes = append(nodes, fix(mk))
			}
			refs := handBuilt(t, fsys, "/index", maxHeight, 0, nodes...)
			for _, r := range refs {
				lens[r.Off] = r.Len
			}
			refs = handBuilt(t, fsys, "/index", maxHeight, 0, nodes...)
			if n, err := DecodeNode(readAll(t, fsys, "/index")[refs[0].Off:refs[0].end()]); err != nil || n.Children[0] != refs[len(refs)-1] {
				t.Fatalf("node 0 = %+v, %v; want its children at %+v", n.Children[:1], err, refs[len(refs)-1])
			}
			tr := mustOpen(t, fsys, "/index", false)
			defer tr.Close()
			err := within(t, 5*time.Second, "Check", tr.Check)
			if !isCorrupt(err) || !strings.Contains(err.Error(), "does not lie before its parent") {
				t.Fatalf("Check = %v", err)
			}
			t.Log(err)
			err = within(t, 5*time.Second, "Ascend", func() error {
				return tr.Snapshot().Ascend(Key{}, func(Key, []byte) bool { return true })
			})
			if !isCorrupt(err) || !strings.Contains(err.Error(), "does not lie before its parent") {
				t.Fatalf("Ascend = %v", err)
			}
			_, _, err = tr.Snapshot().Get(seqKey(5))
			if !isCorrupt(err) || !strings.Contains(err.Error(), "does not lie before its parent") {
				t.Fatalf("Get = %v", err)
			}
		})
	}
}

// TestChildrenBeforeParents: every tree rook writes (commits, merges,
// bulk loads) has each child end at or before its parent's offset, the
// invariant the walks now insist on.
func TestChildrenBeforeParents(t *testing.T) {
	fsys := vfs.NewMem()
	tr := mustOpen(t, fsys, "/index", true)
	defer tr.Close()
	tr.compactSlack = -1
	want := model{}
	for round := range 40 {
		for i := range 300 {
			k := seqKey(round*131 + i*7)
			k[5] = byte(round)
			if (i+round)%3 == 0 {
				tr.Delete(k)
				delete(want, k)
				continue
			}
			v := []byte(strings.Repeat("v", (i*round)%200))
			if err := tr.Put(k, v); err != nil {
				t.Fatal(err)
			}
			want[k] = v
		}
		if err := tr.Commit(nil); err != nil {
			t.Fatal(err)
		}
		mustCheck(t, tr)
		mustDiff(t, tr.Snapshot(), want)
	}
	if err := tr.Compact(); err != nil {
		t.Fatal(err)
	}
	mustCheck(t, tr)
	mustDiff(t, tr.Snapshot(), want)
}

// fuzzTree builds, from b, an index file of up to 8 nodes whose branches
// point anywhere (themselves, later nodes, shared children) with every
// checksum right. Each node is 3 bytes of b: leaf or branch, fan-out, and
// a seed for its children. It returns the file, the node count and the
// height the meta gives (nil when b is too short).
func fuzzTree(b []byte) (file []byte, nodes int, height uint32) {
	if len(b) < 4 {
		return nil, 0, 0
	}
	height = uint32(b[0])%maxHeight + 1
	root := int(b[1])
	b = b[2:]
	nodes = min(len(b)/3, 8)
	if nodes == 0 {
		return nil, 0, 0
	}
	root %= nodes
	build := func(offs []uint64, lens []uint32) ([]byte, []uint64, []uint32) {
		var body []byte
		var gotOffs []uint64
		var gotLens []uint32
		for i := range nodes {
			d := b[3*i : 3*i+3]
			fan := int(d[1])%35 + 8 // 2-byte lengths: at least 128 bytes
			var n Node
			n.Leaf = d[0]&1 == 0
			for j := range fan {
				n.Keys = append(n.Keys, seqKey(j+int(d[0]>>1)))
				if n.Leaf {
					n.Values = append(n.Values, []byte{byte(j)})
					continue
				}
				c := (int(d[2]) + j*int(d[0]>>4)) % nodes
				ref := Ref{Off: 9000, Len: 1000} // placeholders of the same encoded size
				if offs != nil {
					ref = Ref{Off: offs[c], Len: lens[c]}
				}
				n.Children = append(n.Children, ref)
			}
			off := uint64(dataStart + len(body))
			start := len(body)
			body = n.AppendEncode(body)
			gotOffs = append(gotOffs, off)
			gotLens = append(gotLens, uint32(len(body)-start))
		}
		return body, gotOffs, gotLens
	}
	_, offs, lens := build(nil, nil)
	body, _, _ := build(offs, lens)
	end := uint64(dataStart + len(body))
	m := Meta{Root: Ref{Off: offs[root], Len: lens[root]}, Height: height, Entries: 1, FileEnd: end, LiveBytes: uint64(lens[root]), UserMeta: []byte{}}
	file = make([]byte, dataStart, end)
	copy(file, m.Encode())
	return append(file, body...), nodes, height
}

// FuzzWalk: whatever shape a damaged tree has, Check, Ascend and Get
// finish after a number of node reads bounded by the nodes in the file,
// never exponential in the height.
func FuzzWalk(f *testing.F) {
	f.Add([]byte{5, 5, 0, 0, 0, 1, 140, 0, 1, 140, 1, 1, 140, 2, 1, 140, 3, 1, 140, 4, 1, 140, 5})
	f.Add([]byte{31, 0, 1, 140, 0})
	f.Add([]byte{31, 0, 1, 140, 1, 1, 140, 0})
	f.Add([]byte{3, 2, 0, 3, 0, 0x11, 9, 0, 0x21, 30, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		file, nodes, _ := fuzzTree(b)
		if file == nil {
			return
		}
		fsys := vfs.NewMem()
		fh, err := fsys.OpenFile("/index", os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		fh.Write(file)
		fh.Close()
		tr, err := Open(fsys, "/index", false)
		if err != nil {
			return
		}
		defer tr.Close()
		tr.cache = newNodeCache(0) // every visit reads: count them
		reads := 0
		fsys.SetHook(func(op vfs.Op, _ string) error {
			if op == vfs.OpRead {
				reads++
			}
			return nil
		})
		// Each node read once per entry naming it, at most, plus the
		// slots and the scan.
		bound := 16 + nodes*(1+42)*2
		tr.Check()
		if reads > bound {
			t.Fatalf("Check: %d reads for %d nodes", reads, nodes)
		}
		// A walk reads a node at most twice (ascend's doc).
		for _, from := range []Key{{}, seqKey(20)} {
			reads = 0
			tr.Snapshot().Ascend(from, func(Key, []byte) bool { return true })
			if reads > 2*nodes {
				t.Fatalf("Ascend(%x): %d reads for %d nodes", from[:2], reads, nodes)
			}
		}
		reads = 0
		tr.Snapshot().Get(seqKey(9))
		if reads > int(maxHeight) {
			t.Fatalf("Get: %d reads", reads)
		}
	})
}

// TestAscendFromSharedLeaf: Ascend from a key never passes fn a key below
// it. A damaged branch names one leaf twice, under the keys 0 and 5; from
// key 3 the walk enters the leaf part way (nothing in it is >= 3), then
// meets it again whole: its keys 0, 1 and 2 are damage, not entries >= 3.
func TestAscendFromSharedLeaf(t *testing.T) {
	fsys := vfs.NewMem()
	handBuilt(t, fsys, "/index", 2, 1, leafNode(3), func(_ uint64, refs []Ref) Node {
		return Node{Keys: []Key{seqKey(0), seqKey(5)}, Children: []Ref{refs[0], refs[0]}}
	})
	tr := mustOpen(t, fsys, "/index", false)
	defer tr.Close()
	from := seqKey(3)
	var below []Key
	err := tr.Snapshot().Ascend(from, func(k Key, _ []byte) bool {
		if string(k[:]) < string(from[:]) {
			below = append(below, k)
		}
		return true
	})
	if len(below) > 0 || !isCorrupt(err) {
		t.Fatalf("Ascend(%x) = %v, passing keys below it: %x", from[:2], err, below)
	}
}
