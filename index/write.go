package index

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
)

func (t *Tree) writeCheck() error {
	if !t.writable {
		return ErrReadOnly
	}
	if t.isClosed() {
		return ErrClosed
	}
	return nil
}

// Put buffers k -> v (v is copied) until the next Commit. It fails if v is
// longer than MaxValue or the Tree is read-only or closed.
func (t *Tree) Put(k Key, v []byte) error {
	if err := t.writeCheck(); err != nil {
		return err
	}
	if len(v) > MaxValue {
		return fmt.Errorf("index: value of %d bytes exceeds MaxValue (%d)", len(v), MaxValue)
	}
	val := make([]byte, len(v))
	copy(val, v)
	t.pending[k] = pendingOp{val: val}
	return nil
}

// Delete buffers the removal of k until the next Commit. Deleting a missing
// key is not an error. On a read-only Tree the following Commit fails.
func (t *Tree) Delete(k Key) {
	t.pending[k] = pendingOp{del: true}
}

// Get looks k up in the pending changes, then in the committed tree. The
// returned value is the caller's. Writer goroutine only.
func (t *Tree) Get(k Key) ([]byte, bool, error) {
	if op, ok := t.pending[k]; ok {
		if op.del {
			return nil, false, nil
		}
		return bytes.Clone(op.val), true, nil
	}
	return t.Snapshot().Get(k)
}

// Pending returns the number of keys with uncommitted changes.
func (t *Tree) Pending() int { return len(t.pending) }

// Discard drops all uncommitted changes.
func (t *Tree) Discard() { clear(t.pending) }

type op struct {
	key Key
	val []byte
	del bool
}

func (t *Tree) sortedOps() []op {
	ops := make([]op, 0, len(t.pending))
	for k, p := range t.pending {
		ops = append(ops, op{key: k, val: p.val, del: p.del})
	}
	slices.SortFunc(ops, func(a, b op) int { return bytes.Compare(a.key[:], b.key[:]) })
	return ops
}

// Commit makes all pending changes durable together with userMeta, as one
// atomic transaction: it appends copy-on-write nodes for every changed path,
// syncs, writes the meta slot for the new txid, and syncs again. Snapshots
// taken before are unaffected.
//
// If Commit fails, the committed state (in memory and, barring the
// ambiguity of a failed fsync, on disk) stays as it was, and the pending
// changes are KEPT so Commit can be retried. A retry never overwrites nodes
// that a failed attempt's meta may refer to, so even if that attempt's meta
// did reach the disk it stays intact until the retry's meta replaces it.
//
// After a successful commit, if the file holds much more garbage than live
// data (file end > 2*live bytes + 1 MiB), Commit compacts it (see Rebuild).
// A failed compaction does not fail the Commit; it is reported in
// Stats().CompactErr and retried after the file has grown further.
func (t *Tree) Commit(userMeta []byte) error {
	if err := t.writeCheck(); err != nil {
		return err
	}
	if len(userMeta) > MaxUserMeta {
		return fmt.Errorf("index: user meta of %d bytes exceeds MaxUserMeta (%d)", len(userMeta), MaxUserMeta)
	}
	if t.needDirSync {
		if err := t.fsys.SyncDir(filepath.Dir(t.path)); err != nil {
			return fmt.Errorf("index: commit: sync directory after rebuild: %w", err)
		}
		t.needDirSync = false
	}
	st := t.state.Load()
	c := &committer{t: t, st: st, base: t.appendAt, fresh: map[uint64]*node{}}
	root, height, err := c.run(t.sortedOps())
	if err != nil {
		return fmt.Errorf("index: commit: %w", err)
	}
	nm := Meta{
		Version:   FormatVersion,
		TxID:      st.m.TxID + 1,
		Root:      root,
		Height:    height,
		Entries:   uint64(int64(st.m.Entries) + c.entries),
		FileEnd:   st.m.FileEnd,
		LiveBytes: uint64(int64(st.m.LiveBytes) + c.live),
		UserMeta:  bytes.Clone(userMeta),
	}
	if nm.UserMeta == nil {
		nm.UserMeta = []byte{}
	}
	f := st.h.f
	if len(c.buf) > 0 {
		start := t.appendAt
		if err := writeAt(f, c.buf, start); err != nil {
			return fmt.Errorf("index: commit: write nodes: %w", err)
		}
		if err := f.Sync(); err != nil {
			return fmt.Errorf("index: commit: sync nodes: %w", err)
		}
		nm.FileEnd = start + uint64(len(c.buf))
		// From here a meta referring to these nodes may reach the disk even
		// if this Commit fails, so a retry must not overwrite them. (Before
		// here no meta refers to them and a retry may reuse the space.)
		// The nodes are complete and synced, so the file stays a clean
		// sequence of nodes either way.
		t.appendAt = nm.FileEnd
	}
	if err := writeSlot(f, nm); err != nil {
		return fmt.Errorf("index: commit: write meta: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("index: commit: sync meta: %w", err)
	}
	t.state.Store(&state{m: nm, h: st.h})
	clear(t.pending)
	for off, n := range c.fresh {
		t.cache.add(st.h.gen, off, n)
	}
	t.maybeCompact()
	return nil
}

func writeAt(f interface {
	io.Writer
	io.Seeker
}, b []byte, off uint64) error {
	if _, err := f.Seek(int64(off), io.SeekStart); err != nil {
		return err
	}
	_, err := f.Write(b)
	return err
}

// writeSlot writes m into its slot (txid % 2), padded to the whole page.
func writeSlot(f interface {
	io.Writer
	io.Seeker
}, m Meta) error {
	page := make([]byte, slotSize)
	copy(page, m.Encode())
	return writeAt(f, page, (m.TxID%2)*slotSize)
}

// committer builds the nodes of one commit in memory.
type committer struct {
	t       *Tree
	st      *state
	base    uint64           // file offset of buf[0]
	buf     []byte           // encoded new nodes, appended at base
	fresh   map[uint64]*node // nodes in buf that are part of the new tree
	live    int64            // change in live bytes
	entries int64            // change in entry count
}

// childRef is a node reference as a parent holds it.
type childRef struct {
	key   Key
	ref   Ref
	fresh bool // written by this commit
}

func (c *committer) read(ref Ref) (*node, error) {
	if n, ok := c.fresh[ref.Off]; ok {
		return n, nil
	}
	return c.t.readNode(c.st, ref, true)
}

// drop accounts for a node leaving the tree.
func (c *committer) drop(ref Ref) {
	c.live -= int64(ref.Len)
	delete(c.fresh, ref.Off)
}

func (c *committer) write(leaf bool, ents []entry) (childRef, error) {
	off := c.base + uint64(len(c.buf))
	if !leaf && c.t.layoutHook != nil {
		c.t.layoutHook(off, ents)
	}
	start := len(c.buf)
	c.buf = appendNode(c.buf, leaf, ents)
	n, err := decodeNode(bytes.Clone(c.buf[start:]))
	if err != nil {
		return childRef{}, fmt.Errorf("internal error: encoded node does not decode: %v", err)
	}
	if err := childrenFirst(off, n.refs); err != nil {
		return childRef{}, err
	}
	ref := Ref{Off: off, Len: uint32(len(n.data))}
	c.fresh[off] = n
	c.live += int64(ref.Len)
	return childRef{key: ents[0].key, ref: ref, fresh: true}, nil
}

// errChildNotFirst is a writer's bug: a branch node about to be written
// whose child does not lie before it.
var errChildNotFirst = errors.New("internal error (a bug in rook, not damage to the index)")

// childrenFirst checks, before a writer puts the branch node at off in
// its buffer, that each of its children lies wholly before it: readers
// reject any other layout as damage (childBelow), and every writer puts
// children first, so one that does not is a bug, refused before anything
// of the commit or rebuild reaches the file. One comparison per child of
// each node written.
func childrenFirst(off uint64, children []Ref) error {
	for _, r := range children {
		if r.end() > off {
			return fmt.Errorf("%w: the branch node to be written at offset %d references a child at offset %d that does not lie before it; nothing was written to the index: it is as it was", errChildNotFirst, off, r.Off)
		}
	}
	return nil
}

// writeSplit writes ents as one or more nodes of at most nodeTarget bytes.
// packed fills nodes greedily (bulk load); otherwise the entries are spread
// evenly over as few nodes as fit.
func (c *committer) writeSplit(leaf bool, ents []entry) ([]childRef, error) {
	var out []childRef
	for _, chunk := range splitEntries(leaf, ents, false) {
		r, err := c.write(leaf, chunk)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// splitEntries cuts ents into node-sized chunks.
func splitEntries(leaf bool, ents []entry, packed bool) [][]entry {
	if len(ents) == 0 {
		return nil
	}
	const capacity = nodeTarget - nodeOverhead
	total := 0
	for i := range ents {
		total += entrySize(leaf, &ents[i])
	}
	aim := capacity
	if !packed {
		k := (total + capacity - 1) / capacity
		aim = (total + k - 1) / k
	}
	var chunks [][]entry
	start, size := 0, 0
	for i := range ents {
		es := entrySize(leaf, &ents[i])
		if i > start && size+es > capacity {
			chunks = append(chunks, ents[start:i])
			start, size = i, 0
		}
		size += es
		if size >= aim && i+1 < len(ents) {
			chunks = append(chunks, ents[start:i+1])
			start, size = i+1, 0
		}
	}
	if start < len(ents) {
		chunks = append(chunks, ents[start:])
	}
	return chunks
}

// run applies ops (sorted) to the committed tree and returns the new root.
func (c *committer) run(ops []op) (Ref, uint32, error) {
	m := &c.st.m
	var (
		list  []childRef
		level = m.Height
		err   error
	)
	if m.Height == 0 {
		var ents []entry
		for _, o := range ops {
			if !o.del {
				ents = append(ents, entry{key: o.key, val: o.val})
			}
		}
		c.entries += int64(len(ents))
		level = 1
		if list, err = c.writeSplit(true, ents); err != nil {
			return Ref{}, 0, err
		}
	} else if list, err = c.apply(m.Root, m.Height, ops); err != nil {
		return Ref{}, 0, err
	}
	for {
		if len(list) == 0 {
			return Ref{}, 0, nil
		}
		if list, err = c.fixSmall(list, level); err != nil {
			return Ref{}, 0, err
		}
		if len(list) == 1 {
			root := list[0]
			// A branch root with a single child is replaced by the child.
			for level > 1 {
				n, err := c.read(root.ref)
				if err != nil {
					return Ref{}, 0, err
				}
				if n.count() != 1 {
					break
				}
				c.drop(root.ref)
				root = childRef{key: n.key(0), ref: n.refs[0]}
				level--
			}
			return root.ref, level, nil
		}
		ents := make([]entry, len(list))
		for i, r := range list {
			ents[i] = entry{key: r.key, ref: r.ref}
		}
		if list, err = c.writeSplit(false, ents); err != nil {
			return Ref{}, 0, err
		}
		level++
		if level > maxHeight {
			return Ref{}, 0, fmt.Errorf("internal error: tree height exceeds %d", maxHeight)
		}
	}
}

// apply merges ops (sorted, all belonging under this node) into the subtree
// at ref and returns the nodes replacing it at the same level: none if the
// subtree became empty, the node itself if nothing changed.
func (c *committer) apply(ref Ref, level uint32, ops []op) ([]childRef, error) {
	n, err := c.read(ref)
	if err != nil {
		return nil, err
	}
	if n.leaf != (level == 1) {
		return nil, levelErr(ref, n, level)
	}
	if n.leaf {
		ents, changed := mergeLeaf(n, ops, &c.entries)
		if !changed {
			return []childRef{{key: n.key(0), ref: ref}}, nil
		}
		c.drop(ref)
		return c.writeSplit(true, ents)
	}
	kids := make([]childRef, 0, len(n.refs)+4)
	changed := false
	j := 0
	for i := range n.refs {
		end := len(ops)
		if i+1 < len(n.refs) {
			sep := n.keyBytes(i + 1)
			end = j + sortSearch(len(ops)-j, func(x int) bool { return bytes.Compare(ops[j+x].key[:], sep) >= 0 })
		}
		if end == j {
			kids = append(kids, childRef{key: n.key(i), ref: n.refs[i]})
			continue
		}
		sub, err := c.apply(n.refs[i], level-1, ops[j:end])
		if err != nil {
			return nil, err
		}
		j = end
		if len(sub) != 1 || sub[0].ref != n.refs[i] {
			changed = true
		}
		kids = append(kids, sub...)
	}
	if !changed {
		return []childRef{{key: n.key(0), ref: ref}}, nil
	}
	c.drop(ref)
	if kids, err = c.fixSmall(kids, level-1); err != nil {
		return nil, err
	}
	ents := make([]entry, len(kids))
	for i, r := range kids {
		ents[i] = entry{key: r.key, ref: r.ref}
	}
	return c.writeSplit(false, ents)
}

func sortSearch(n int, f func(int) bool) int {
	lo, hi := 0, n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if !f(m) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// fixSmall merges nodes this commit wrote below minFill bytes with a
// neighbour (redistributing if the two do not fit in one node), so deletes
// do not leave a trail of tiny nodes and single-child branches.
func (c *committer) fixSmall(kids []childRef, level uint32) ([]childRef, error) {
	for i := 0; i < len(kids) && len(kids) > 1; {
		if !kids[i].fresh || kids[i].ref.Len >= minFill {
			i++
			continue
		}
		lo := i
		if i+1 == len(kids) {
			lo = i - 1
		}
		a, err := c.read(kids[lo].ref)
		if err != nil {
			return nil, err
		}
		b, err := c.read(kids[lo+1].ref)
		if err != nil {
			return nil, err
		}
		for k, n := range []*node{a, b} {
			if n.leaf != (level == 1) {
				return nil, levelErr(kids[lo+k].ref, n, level)
			}
		}
		ents := append(a.entries(), b.entries()...)
		c.drop(kids[lo].ref)
		c.drop(kids[lo+1].ref)
		repl, err := c.writeSplit(level == 1, ents)
		if err != nil {
			return nil, err
		}
		kids = slices.Replace(kids, lo, lo+2, repl...)
		if len(repl) == 1 {
			i = lo // look at the merged node again: it may still be small
		} else {
			i = lo + len(repl)
		}
	}
	return kids, nil
}

// mergeLeaf applies ops to a leaf's entries. It reports whether anything
// changed and adjusts *count by the entries added and removed.
func mergeLeaf(n *node, ops []op, count *int64) ([]entry, bool) {
	out := make([]entry, 0, n.count()+len(ops))
	changed := false
	i, cnt := 0, n.count()
	for _, o := range ops {
		for i < cnt && bytes.Compare(n.keyBytes(i), o.key[:]) < 0 {
			out = append(out, entry{key: n.key(i), val: n.value(i)})
			i++
		}
		exists := i < cnt && bytes.Equal(n.keyBytes(i), o.key[:])
		switch {
		case exists && o.del:
			changed = true
			*count--
			i++
		case exists:
			if !bytes.Equal(n.value(i), o.val) {
				changed = true
			}
			out = append(out, entry{key: o.key, val: o.val})
			i++
		case o.del:
		default:
			changed = true
			*count++
			out = append(out, entry{key: o.key, val: o.val})
		}
	}
	for ; i < cnt; i++ {
		out = append(out, entry{key: n.key(i), val: n.value(i)})
	}
	return out, changed
}
