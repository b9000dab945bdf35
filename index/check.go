package index

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
)

// maxProblems bounds how many problems Check reports.
const maxProblems = 20

// Check verifies the whole committed file, reading from the disk (not the
// cache):
//
//   - both meta slots: each is valid or was never written (all zero), and
//     the page padding after each slot is zero;
//   - the node area [8192, file end) is a clean sequence of valid nodes
//     (nodes of earlier commits included: they were valid when written, so
//     damage anywhere is reported);
//   - the tree: every reachable node's checksum and encoding, leaves exactly
//     at level 1, keys strictly ascending within and across nodes, each
//     branch key equal to its child's first key, each child before its
//     parent in the file, no node reachable twice (each is walked once, so
//     a damaged tree whose nodes share children is not walked down every
//     path) or overlapping another, and the entry count and live bytes in
//     the meta.
//
// It returns nil or the problems found (at most maxProblems, joined with
// errors.Join), each wrapping ErrCorrupt. On a read-only Tree whose file a
// writer is committing to, the slot being written may be reported as
// invalid; Refresh and check again.
func (t *Tree) Check() error {
	st := t.state.Load()
	defer runtime.KeepAlive(st.h)
	c := &checker{st: st, visited: map[uint64]bool{}}
	sl, err := readSlots(st.h.f, t.path)
	if err != nil {
		if errors.Is(err, ErrNewerFormat) {
			return err
		}
		return fmt.Errorf("index: check: %w", err)
	}
	if sl.size < st.m.FileEnd {
		c.add("file size %d is below the committed file end %d", sl.size, st.m.FileEnd)
	}
	c.checkSlots(sl)
	starts, scanned := c.scan()
	if st.m.Height > 0 {
		c.walk(st.m.Root, st.m.Height, nil)
	}
	if c.ioErr != nil {
		return c.ioErr
	}
	if scanned {
		for _, r := range c.refs {
			if _, ok := slices.BinarySearch(starts, r.Off); !ok {
				c.add("reachable node at offset %d does not start where the node sequence has a node", r.Off)
			}
		}
	}
	if c.entries != st.m.Entries {
		c.add("meta says %d entries, leaves hold %d", st.m.Entries, c.entries)
	}
	if c.live != st.m.LiveBytes {
		c.add("meta says %d live bytes, reachable nodes total %d", st.m.LiveBytes, c.live)
	}
	slices.SortFunc(c.refs, func(a, b Ref) int {
		switch {
		case a.Off < b.Off:
			return -1
		case a.Off > b.Off:
			return 1
		}
		return 0
	})
	for i := 1; i < len(c.refs); i++ {
		if p, r := c.refs[i-1], c.refs[i]; p.end() > r.Off {
			if p.Off == r.Off {
				c.add("node at offset %d is referenced more than once", r.Off)
			} else {
				c.add("nodes at offsets %d and %d overlap", p.Off, r.Off)
			}
		}
	}
	if c.dropped > 0 {
		c.problems = append(c.problems, fmt.Errorf("%w: ... and %d more problems", ErrCorrupt, c.dropped))
	}
	return errors.Join(c.problems...)
}

type checker struct {
	st       *state
	problems []error
	dropped  int
	ioErr    error
	entries  uint64
	live     uint64
	refs     []Ref
	visited  map[uint64]bool // offsets of the nodes walked (at most one per node in the file): true once reported as shared
	prev     Key
	havePrev bool
}

func (c *checker) add(format string, args ...any) {
	if len(c.problems) >= maxProblems {
		c.dropped++
		return
	}
	c.problems = append(c.problems, fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...))
}

func (c *checker) addErr(err error) {
	if len(c.problems) >= maxProblems {
		c.dropped++
		return
	}
	c.problems = append(c.problems, err)
}

// walk checks the subtree at ref; sep is the key its parent holds for it.
func (c *checker) walk(ref Ref, level uint32, sep *Key) {
	if c.ioErr != nil {
		return
	}
	if err := c.st.m.checkRef(ref); err != nil {
		c.add("%v", err)
		return
	}
	n, err := readNodeFile(c.st.h, ref)
	if err != nil {
		if errors.Is(err, ErrCorrupt) {
			c.addErr(err)
		} else {
			c.ioErr = err
		}
		return
	}
	c.refs = append(c.refs, ref)
	c.visited[ref.Off] = false
	c.live += uint64(ref.Len)
	if n.leaf != (level == 1) {
		c.addErr(levelErr(ref, n, level))
		return
	}
	if sep != nil && !bytes.Equal(n.keyBytes(0), sep[:]) {
		c.add("node at offset %d: first key %x differs from its parent's key %x", ref.Off, n.keyBytes(0), sep[:])
	}
	if n.leaf {
		for i := range n.count() {
			k := n.key(i)
			if c.havePrev && bytes.Compare(k[:], c.prev[:]) <= 0 {
				c.add("node at offset %d: key %x does not follow %x", ref.Off, k[:], c.prev[:])
			}
			c.prev, c.havePrev = k, true
			c.entries++
		}
		return
	}
	badChild := false
	for i, child := range n.refs {
		if err := childBelow(ref, child); err != nil {
			if !badChild { // once per node: a damaged node may hold many
				c.addErr(err)
			}
			badChild = true
			continue
		}
		if reported, ok := c.visited[child.Off]; ok {
			// Not walked again: a damaged tree whose nodes share
			// children has exponentially many paths.
			if !reported {
				c.add("node at offset %d is referenced more than once", child.Off)
				c.visited[child.Off] = true
			}
			continue
		}
		k := n.key(i)
		c.walk(child, level-1, &k)
	}
}

// checkSlots reports invalid meta slots and dirty page padding.
func (c *checker) checkSlots(sl *slots) {
	for i := range 2 {
		page := sl.pages[i]
		switch err := sl.errs[i]; {
		case err == errUnused:
			if !isZero(page) {
				c.add("meta slot %d: unused, but its page holds nonzero bytes", i)
			}
		case err != nil:
			c.addErr(fmt.Errorf("%w (slot %d)", err, i))
		default:
			if n := metaHeaderLen + len(sl.metas[i].UserMeta); !isZero(page[n:]) {
				c.add("meta slot %d: nonzero bytes in the page padding after the slot", i)
			}
		}
		if len(page) < slotSize {
			c.add("meta slot %d: page cut short (%d bytes)", i, len(page))
		}
	}
}

// scan parses the node area as a sequence of nodes and returns their start
// offsets; ok is false if it could not get through.
func (c *checker) scan() (starts []uint64, ok bool) {
	end := c.st.m.FileEnd
	r := bufio.NewReaderSize(io.NewSectionReader(c.st.h.f, dataStart, int64(end-dataStart)), int(min(end-dataStart+16, 1<<20)))
	var hdr [nodeHeaderLen]byte
	for off := uint64(dataStart); off < end; {
		if end-off < minNodeLen {
			c.add("node area: %d stray bytes at offset %d before the file end", end-off, off)
			return starts, false
		}
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			c.scanErr(off, err)
			return starts, false
		}
		n := uint64(nodeHeaderLen) + (uint64(hdr[4]) | uint64(hdr[5])<<8 | uint64(hdr[6])<<16 | uint64(hdr[7])<<24)
		if n < minNodeLen || n > maxNodeLen || n > end-off {
			c.add("node area: bytes at offset %d do not start a node (length field %d)", off, n-nodeHeaderLen)
			return starts, false
		}
		buf := make([]byte, n)
		copy(buf, hdr[:])
		if _, err := io.ReadFull(r, buf[nodeHeaderLen:]); err != nil {
			c.scanErr(off, err)
			return starts, false
		}
		if _, err := decodeNode(buf); err != nil {
			c.add("node at offset %d: %v", off, err)
			return starts, false
		}
		starts = append(starts, off)
		off += n
	}
	return starts, true
}

func (c *checker) scanErr(off uint64, err error) {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		c.add("node area: file ends inside the node at offset %d", off)
		return
	}
	if c.ioErr == nil {
		c.ioErr = fmt.Errorf("index: check: read at offset %d: %w", off, err)
	}
}
