package index

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rookhq/rook/internal/vfs"
)

// builder bulk-loads a tree into a fresh file from entries in ascending key
// order, packing every node full. It streams: only one open node per level
// is in memory.
type builder struct {
	f       vfs.File
	hook    func(off uint64, ents []entry) // Tree.layoutHook
	buf     []byte                         // encoded nodes not yet written; buf[0] is at file offset flushed
	flushed uint64
	levels  [][]entry // levels[0]: open leaf; levels[i]: open branch at height i+1
	sizes   []int     // payload bytes of each open node
	refs    []Ref     // the children of the branch being closed (reused)
	count   uint64
	last    Key
	err     error
}

const builderFlush = 1 << 20

func newBuilder(f vfs.File) *builder {
	return &builder{f: f, flushed: dataStart}
}

func (b *builder) end() uint64 { return b.flushed + uint64(len(b.buf)) }

// add appends one entry; keys must be strictly ascending.
func (b *builder) add(k Key, v []byte) error {
	if b.err != nil {
		return b.err
	}
	if len(v) > MaxValue {
		return fmt.Errorf("index: rebuild: value of %d bytes for key %x exceeds MaxValue (%d)", len(v), k, MaxValue)
	}
	if b.count > 0 && bytes.Compare(k[:], b.last[:]) <= 0 {
		return fmt.Errorf("index: rebuild: keys not strictly ascending (%x after %x)", k, b.last)
	}
	b.last = k
	b.count++
	return b.push(0, entry{key: k, val: bytes.Clone(v)})
}

// push adds e to the open node at level i, first closing that node if e
// does not fit.
func (b *builder) push(i int, e entry) error {
	if i == len(b.levels) {
		b.levels = append(b.levels, nil)
		b.sizes = append(b.sizes, 0)
	}
	es := entrySize(i == 0, &e)
	if len(b.levels[i]) > 0 && b.sizes[i]+es > nodeTarget-nodeOverhead {
		if err := b.close(i); err != nil {
			return err
		}
	}
	b.levels[i] = append(b.levels[i], e)
	b.sizes[i] += es
	return nil
}

// close writes the open node at level i and pushes its reference up.
func (b *builder) close(i int) error {
	ents := b.levels[i]
	off := b.end()
	if i > 0 && b.hook != nil {
		b.hook(off, ents)
	}
	if i > 0 {
		b.refs = b.refs[:0]
		for _, e := range ents {
			b.refs = append(b.refs, e.ref)
		}
		if err := childrenFirst(off, b.refs); err != nil {
			b.err = err
			return err
		}
	}
	start := len(b.buf)
	b.buf = appendNode(b.buf, i == 0, ents)
	ref := Ref{Off: off, Len: uint32(len(b.buf) - start)}
	b.levels[i] = b.levels[i][:0]
	if i == 0 {
		b.levels[i] = nil // leaf entries hold copies of values: let them go
	}
	b.sizes[i] = 0
	if len(b.buf) >= builderFlush {
		if err := b.flush(); err != nil {
			return err
		}
	}
	return b.push(i+1, entry{key: ents[0].key, ref: ref})
}

func (b *builder) flush() error {
	if len(b.buf) == 0 {
		return nil
	}
	if err := writeAt(b.f, b.buf, b.flushed); err != nil {
		b.err = err
		return err
	}
	b.flushed += uint64(len(b.buf))
	b.buf = b.buf[:0]
	return nil
}

// finish closes all open nodes and returns the root and height.
func (b *builder) finish() (Ref, uint32, error) {
	if b.err != nil {
		return Ref{}, 0, b.err
	}
	var root Ref
	var height uint32
	for i := 0; i < len(b.levels); i++ {
		top := i == len(b.levels)-1
		switch {
		case len(b.levels[i]) == 0:
			// Only possible for an empty tree.
		case top && i > 0 && len(b.levels[i]) == 1:
			root, height = b.levels[i][0].ref, uint32(i)
		default:
			if err := b.close(i); err != nil {
				return Ref{}, 0, err
			}
		}
	}
	return root, height, b.flush()
}

// Rebuild replaces the whole index with the entries next yields (ascending,
// strictly increasing keys; next returns ok=false at the end) and userMeta.
// It bulk-loads a fresh file path+".tmp" with packed nodes, syncs it, renames
// it over path and syncs the directory; then this Tree switches to the new
// file. A crash at any step leaves either the old index or the new one.
// Snapshots taken before keep reading the old file, as do readers in other
// processes until they Refresh.
//
// Rebuild fails, leaving everything as it was, if there are pending changes
// (Commit or Discard them first), if keys are out of order, or if a value or
// userMeta is too large. If it fails after the rename (syncing the
// directory), the Tree already uses the new file and the error says so.
func (t *Tree) Rebuild(next func() (Key, []byte, bool), userMeta []byte) error {
	if err := t.writeCheck(); err != nil {
		return err
	}
	if len(t.pending) > 0 {
		return fmt.Errorf("index: rebuild: %d pending changes; Commit or Discard them first", len(t.pending))
	}
	return t.rebuild(func(b *builder) error {
		for {
			k, v, ok := next()
			if !ok {
				return nil
			}
			if err := b.add(k, v); err != nil {
				return err
			}
		}
	}, userMeta)
}

func (t *Tree) rebuild(fill func(b *builder) error, userMeta []byte) error {
	if len(userMeta) > MaxUserMeta {
		return fmt.Errorf("index: rebuild: user meta of %d bytes exceeds MaxUserMeta (%d)", len(userMeta), MaxUserMeta)
	}
	cur := t.state.Load()
	tmp := t.path + ".tmp"
	f, err := t.fsys.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("index: rebuild: %w", err)
	}
	renamed := false
	defer func() {
		if !renamed {
			f.Close()
			t.fsys.Remove(tmp)
		}
	}()
	b := newBuilder(f)
	b.hook = t.layoutHook
	if err := fill(b); err != nil {
		if errors.Is(err, errChildNotFirst) {
			return fmt.Errorf("index: rebuild: %w", err)
		}
		return err
	}
	root, height, err := b.finish()
	if errors.Is(err, errChildNotFirst) {
		return fmt.Errorf("index: rebuild: %w", err) // a bug, not a failed write
	}
	if err != nil {
		return fmt.Errorf("index: rebuild: write nodes: %w", err)
	}
	m := Meta{
		Version:   FormatVersion,
		TxID:      cur.m.TxID + 1,
		Root:      root,
		Height:    height,
		Entries:   b.count,
		FileEnd:   b.end(),
		LiveBytes: b.end() - dataStart,
		UserMeta:  bytes.Clone(userMeta),
	}
	if m.UserMeta == nil {
		m.UserMeta = []byte{}
	}
	header := make([]byte, dataStart)
	copy(header[(m.TxID%2)*slotSize:], m.Encode())
	if err := writeAt(f, header, 0); err != nil {
		return fmt.Errorf("index: rebuild: write meta: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("index: rebuild: sync: %w", err)
	}
	if err := t.fsys.Rename(tmp, t.path); err != nil {
		return fmt.Errorf("index: rebuild: %w", err)
	}
	// From here on path names the new file: switch to it whatever happens.
	renamed = true
	// Reopened by its new name, so that a later write's error names the
	// file the user can find (path), not the temp name it had; if that
	// open fails, the handle we hold is the same file.
	if nf, err := t.fsys.OpenFile(t.path, os.O_RDWR, 0); err == nil {
		f.Close()
		f = nf
	}
	t.state.Store(&state{m: m, h: t.newHandle(f)})
	t.appendAt = m.FileEnd
	t.compactRetryAt = 0
	t.retire(cur.h)
	if err := t.fsys.SyncDir(filepath.Dir(t.path)); err != nil {
		// Until the rename is durable, commits to the new file could be
		// lost with it: Commit retries this sync first.
		t.needDirSync = true
		return fmt.Errorf("index: rebuild: new index in place but directory sync failed: %w", err)
	}
	t.needDirSync = false
	return nil
}

// maybeCompact rewrites the committed tree into a fresh, packed file when
// garbage dominates the file.
func (t *Tree) maybeCompact() {
	if t.compactSlack < 0 {
		return
	}
	m := t.state.Load().m
	if m.FileEnd <= 2*m.LiveBytes+uint64(t.compactSlack)+dataStart || m.FileEnd < t.compactRetryAt {
		return
	}
	err := t.compact()
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		t.compactErr = err.Error()
		t.compactRetryAt = m.FileEnd + max(uint64(t.compactSlack), m.FileEnd/4, 1)
		return
	}
	t.compactErr = ""
	t.compactions++
}

// compact rebuilds the index from its own committed state.
func (t *Tree) compact() error {
	st := t.state.Load()
	return t.rebuild(func(b *builder) error {
		var berr error
		err := t.ascend(st, nil, false, func(k *Key, v []byte) bool {
			berr = b.add(*k, v)
			return berr == nil
		})
		return errors.Join(err, berr)
	}, st.m.UserMeta)
}

// Compact rewrites the committed tree into a fresh, packed file (as Rebuild
// does) when it holds any garbage of earlier commits. gc and repack call it
// so that the bytes they free show on disk at once; pending changes must
// be committed first.
func (t *Tree) Compact() error {
	if err := t.writeCheck(); err != nil {
		return err
	}
	if len(t.pending) > 0 {
		return fmt.Errorf("index: compact: %d pending changes; Commit or Discard them first", len(t.pending))
	}
	m := t.state.Load().m
	if m.FileEnd <= m.LiveBytes+dataStart {
		return nil // already packed
	}
	return t.compact()
}
