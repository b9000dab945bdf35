package index

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/rookhq/rook/internal/vfs"
)

// Tree is an open index file. Reads go through Snapshots (or Tree.Get) and
// are safe from any number of goroutines; writes (Put, Delete, Commit,
// Rebuild, Discard) belong to one goroutine at a time.
type Tree struct {
	fsys     vfs.FS
	path     string
	writable bool
	cache    *nodeCache
	state    atomic.Pointer[state] // the last committed state
	gens     atomic.Uint64

	mu          sync.Mutex // guards the fields below
	closed      bool
	recovered   string
	retired     []weak.Pointer[handle] // files replaced by Rebuild/compaction/Refresh
	compactErr  string
	compactions int

	refreshMu sync.Mutex // serialises Refresh

	// Writer-only state.
	pending        map[Key]pendingOp
	appendAt       uint64 // where the next commit appends; never below nodes a possibly durable meta refers to
	compactSlack   int64  // compaction threshold slack; < 0 disables (tests)
	compactRetryAt uint64 // after a failed compaction, wait until the file grows to this
	needDirSync    bool   // a Rebuild renamed the file but could not sync the directory

	// layoutHook, set only by tests (export_test.go), sees the entries
	// of every branch node a commit or a rebuild is about to encode at
	// offset off, and may change their child references: a writer's bug
	// made on demand.
	layoutHook func(off uint64, ents []entry)
}

type pendingOp struct {
	val []byte
	del bool
}

// state is one committed state: its meta and the file it lives in.
type state struct {
	m Meta
	h *handle
}

// handle is an open index file. Its file is closed when the handle becomes
// unreachable (no state or snapshot uses it any more) or when the Tree is
// closed, whichever comes first.
type handle struct {
	gen uint64
	f   vfs.File
	fc  *fileCloser
}

type fileCloser struct {
	once sync.Once
	f    vfs.File
	err  error
}

func (c *fileCloser) close() error {
	c.once.Do(func() { c.err = c.f.Close() })
	return c.err
}

func (t *Tree) newHandle(f vfs.File) *handle {
	h := &handle{gen: t.gens.Add(1), f: f, fc: &fileCloser{f: f}}
	runtime.AddCleanup(h, func(fc *fileCloser) { fc.close() }, h.fc)
	return h
}

// retire records that h is no longer the current file, so Close can still
// close it if snapshots keep it alive.
func (t *Tree) retire(h *handle) {
	t.mu.Lock()
	defer t.mu.Unlock()
	live := t.retired[:0]
	for _, w := range t.retired {
		if w.Value() != nil {
			live = append(live, w)
		}
	}
	t.retired = append(live, weak.Make(h))
}

// Open opens the index file at path. A writable open of a missing file
// creates an empty index (mode 0600, made durable with SyncDir of the
// parent); a read-only open of a missing file fails with an error wrapping
// fs.ErrNotExist. A writable open also cuts the file back to the committed
// file end (dropping an uncommitted transaction's bytes) and removes a stale
// path+".tmp" left by an interrupted Rebuild. If it had to pass over an
// invalid meta slot (see Stats().Recovered), a writable open rewrites that
// slot at once with an empty commit of the recovered state.
//
// The caller guarantees at most one writable Tree per file (rook holds the
// store lock); read-only Trees in other processes may coexist with it.
func Open(fsys vfs.FS, path string, writable bool) (*Tree, error) {
	t := &Tree{
		fsys:         fsys,
		path:         path,
		writable:     writable,
		cache:        newNodeCache(DefaultCacheBytes),
		pending:      map[Key]pendingOp{},
		compactSlack: 1 << 20,
	}
	flag := os.O_RDONLY
	if writable {
		flag = os.O_RDWR
	}
	f, err := fsys.OpenFile(path, flag, 0)
	if err != nil && writable && errors.Is(err, fs.ErrNotExist) {
		if err = createEmpty(fsys, path); err == nil {
			f, err = fsys.OpenFile(path, flag, 0)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("index: open: %w", err)
	}
	m, recovered, err := readMeta(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	if writable {
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("index: open %s: %w", path, err)
		}
		if uint64(fi.Size()) > m.FileEnd {
			if err := f.Truncate(int64(m.FileEnd)); err != nil {
				f.Close()
				return nil, fmt.Errorf("index: open %s: cut uncommitted tail: %w", path, err)
			}
		}
		t.appendAt = m.FileEnd
		if err := fsys.Remove(path + ".tmp"); err != nil && !errors.Is(err, fs.ErrNotExist) {
			f.Close()
			return nil, fmt.Errorf("index: open %s: remove stale temp file: %w", path, err)
		}
	}
	if writable {
		if err := scrubPadding(f, path); err != nil {
			f.Close()
			return nil, err
		}
	}
	t.recovered = recovered
	t.state.Store(&state{m: m, h: t.newHandle(f)})
	if writable && recovered != "" {
		// Repair the damaged slot now (it is the one the next commit
		// writes), so the file is whole again and Check is clean. The
		// state does not change; only the txid moves on.
		if err := t.Commit(m.UserMeta); err != nil {
			t.Close()
			return nil, fmt.Errorf("index: open %s: rewrite damaged meta slot: %w", path, err)
		}
		t.recovered = fmt.Sprintf("%s; rewrote it (txid %d)", recovered, t.state.Load().m.TxID)
	}
	return t, nil
}

// scrubPadding rewrites, zeroed, the padding after a valid meta slot that a
// torn or garbled page write left dirty. The padding is not checksummed, so
// the slot itself is sound; Check insists on zeros so that every flipped
// byte of the file is noticed, and a writer restores them.
func scrubPadding(f vfs.File, path string) error {
	sl, err := readSlots(f, path)
	if err != nil {
		return err
	}
	dirty := false
	for i := range 2 {
		if sl.errs[i] != nil {
			continue
		}
		n := metaHeaderLen + len(sl.metas[i].UserMeta)
		if len(sl.pages[i]) > n && !isZero(sl.pages[i][n:]) {
			if err := writeSlot(f, sl.metas[i]); err != nil {
				return fmt.Errorf("index: %s: scrub meta slot %d: %w", path, i, err)
			}
			dirty = true
		}
	}
	if dirty {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("index: %s: scrub meta slots: %w", path, err)
		}
	}
	return nil
}

// createEmpty writes a fresh empty index at path via a temp file and rename,
// so a crash leaves either no file or a complete one.
func createEmpty(fsys vfs.FS, path string) error {
	page := make([]byte, dataStart)
	copy(page, Meta{TxID: 0, FileEnd: dataStart}.Encode())
	return writeNewFile(fsys, path, func(f vfs.File) error {
		_, err := f.Write(page)
		return err
	})
}

// writeNewFile creates path+".tmp", lets fill write it, syncs, closes,
// renames it over path and syncs the directory.
func writeNewFile(fsys vfs.FS, path string, fill func(f vfs.File) error) error {
	tmp := path + ".tmp"
	f, err := fsys.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	err = fill(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(tmp, path)
	}
	if err != nil {
		fsys.Remove(tmp)
		return err
	}
	return fsys.SyncDir(filepath.Dir(path))
}

// slots is what the two meta pages of a file hold.
type slots struct {
	pages [2][]byte // as read (shorter than slotSize only in a short file)
	metas [2]Meta
	errs  [2]error // errUnused for an all-zero (never written) slot
	size  uint64   // file size when read
}

// readSlots reads and validates both meta slots of f. It fails only on I/O
// errors and ErrNewerFormat.
func readSlots(f vfs.File, path string) (*slots, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("index: %s: %w", path, err)
	}
	sl := &slots{size: uint64(fi.Size())}
	for i := range 2 {
		buf := make([]byte, slotSize)
		n, err := f.ReadAt(buf, int64(i*slotSize))
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("index: %s: read meta slot %d: %w", path, i, err)
		}
		buf = buf[:n]
		sl.pages[i] = buf
		if isZero(buf[:min(n, metaHeaderLen)]) {
			sl.errs[i] = errUnused
			continue
		}
		m, err := DecodeMeta(buf)
		switch {
		case errors.Is(err, ErrNewerFormat):
			return nil, fmt.Errorf("index: %s: %w", path, err)
		case err != nil:
		case m.TxID%2 != uint64(i):
			err = fmt.Errorf("%w: meta slot holds txid %d, which belongs in slot %d", ErrCorrupt, m.TxID, m.TxID%2)
		case m.FileEnd > sl.size:
			err = fmt.Errorf("%w: meta slot: file end %d beyond file size %d", ErrCorrupt, m.FileEnd, sl.size)
		}
		sl.metas[i], sl.errs[i] = m, err
	}
	return sl, nil
}

// pick returns the winning slot and a description of a slot passed over
// ("" if none was).
func (sl *slots) pick(path string) (int, string, error) {
	switch {
	case sl.errs[0] == nil && sl.errs[1] == nil:
		if sl.metas[1].TxID > sl.metas[0].TxID {
			return 1, "", nil
		}
		return 0, "", nil
	case sl.errs[0] == nil || sl.errs[1] == nil:
		good := 0
		if sl.errs[0] != nil {
			good = 1
		}
		bad := 1 - good
		if sl.errs[bad] == errUnused {
			return good, "", nil
		}
		return good, fmt.Sprintf("meta slot %d is invalid (%v); using slot %d (txid %d)", bad, sl.errs[bad], good, sl.metas[good].TxID), nil
	default:
		return 0, "", fmt.Errorf("%w: %s: no valid meta slot (slot 0: %v; slot 1: %v)", ErrCorrupt, path, sl.errs[0], sl.errs[1])
	}
}

// readMeta reads both meta slots of f and returns the newest valid one, with
// a description of any slot it had to pass over.
func readMeta(f vfs.File, path string) (Meta, string, error) {
	sl, err := readSlots(f, path)
	if err != nil {
		return Meta{}, "", err
	}
	i, rec, err := sl.pick(path)
	if err != nil {
		return Meta{}, "", err
	}
	return sl.metas[i], rec, nil
}

var errUnused = errors.New("never written (all zero)")

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// Close closes the file (and any older file still held by snapshots).
// Snapshots taken earlier fail with an error from then on (unless the nodes
// they need are cached). Pending changes are not committed. Close is
// idempotent.
func (t *Tree) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	retired := t.retired
	t.retired = nil
	t.mu.Unlock()
	for _, w := range retired {
		if h := w.Value(); h != nil {
			h.fc.close()
		}
	}
	return t.state.Load().h.fc.close()
}

func (t *Tree) isClosed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closed
}

// ---------------------------------------------------------------------------
// Reads.

// Snapshot is an immutable view of one committed state. It stays valid (and
// keeps its file open) however many commits, rebuilds or compactions follow,
// until the Tree is closed. All methods are safe for concurrent use.
type Snapshot struct {
	t  *Tree
	st *state
}

// Snapshot returns a view of the last committed state. It is cheap.
func (t *Tree) Snapshot() *Snapshot { return &Snapshot{t: t, st: t.state.Load()} }

// Len returns the number of entries.
func (s *Snapshot) Len() uint64 { return s.st.m.Entries }

// UserMeta returns (a copy of) the user meta committed with this state.
func (s *Snapshot) UserMeta() []byte { return bytes.Clone(s.st.m.UserMeta) }

// TxID returns the commit counter of this state.
func (s *Snapshot) TxID() uint64 { return s.st.m.TxID }

// Get looks k up. The returned value is the caller's.
func (s *Snapshot) Get(k Key) ([]byte, bool, error) {
	v, ok, err := s.t.get(s.st, &k)
	if ok {
		v = bytes.Clone(v)
	}
	return v, ok, err
}

// Ascend calls fn for every entry with key >= from, in ascending key order,
// until fn returns false. fn may keep v. fn must not call Put, Commit or
// other write methods of the Tree.
func (s *Snapshot) Ascend(from Key, fn func(k Key, v []byte) bool) error {
	return s.t.ascend(s.st, &from, true, func(k *Key, v []byte) bool {
		return fn(*k, bytes.Clone(v))
	})
}

// readNode returns the node at ref in st's file, from the cache or the disk.
// cache=false reads bypass the cache fill (bulk scans).
func (t *Tree) readNode(st *state, ref Ref, fill bool) (*node, error) {
	if err := st.m.checkRef(ref); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	h := st.h
	if n := t.cache.get(h.gen, ref.Off); n != nil {
		if len(n.data) != int(ref.Len) {
			return nil, fmt.Errorf("%w: node at offset %d: referenced with length %d and %d", ErrCorrupt, ref.Off, ref.Len, len(n.data))
		}
		return n, nil
	}
	n, err := readNodeFile(h, ref)
	if err != nil {
		return nil, err
	}
	if fill {
		t.cache.add(h.gen, ref.Off, n)
	}
	return n, nil
}

// readNodeFile reads and decodes the node at ref without the cache.
func readNodeFile(h *handle, ref Ref) (*node, error) {
	buf := make([]byte, ref.Len)
	n, err := h.f.ReadAt(buf, int64(ref.Off))
	runtime.KeepAlive(h) // the file must stay open until the read is done
	if n == len(buf) {
		err = nil
	}
	if err != nil {
		if err == io.EOF {
			return nil, fmt.Errorf("%w: node at offset %d: file too short", ErrCorrupt, ref.Off)
		}
		return nil, fmt.Errorf("index: read node at offset %d: %w", ref.Off, err)
	}
	nd, err := decodeNode(buf)
	if err != nil {
		return nil, fmt.Errorf("%w: node at offset %d: %v", ErrCorrupt, ref.Off, err)
	}
	return nd, nil
}

func levelErr(ref Ref, n *node, level uint32) error {
	kind := "branch"
	if n.leaf {
		kind = "leaf"
	}
	return fmt.Errorf("%w: node at offset %d: %s at level %d", ErrCorrupt, ref.Off, kind, level)
}

// get looks k up in st; the value aliases cached node bytes.
func (t *Tree) get(st *state, k *Key) ([]byte, bool, error) {
	if st.m.Height == 0 {
		return nil, false, nil
	}
	ref := st.m.Root
	for level := st.m.Height; ; level-- {
		n, err := t.readNode(st, ref, true)
		if err != nil {
			return nil, false, err
		}
		if n.leaf != (level == 1) {
			return nil, false, levelErr(ref, n, level)
		}
		if n.leaf {
			i := n.lowerBound(k)
			if i < n.count() && bytes.Equal(n.keyBytes(i), k[:]) {
				return n.value(i), true, nil
			}
			return nil, false, nil
		}
		i := n.childFor(k)
		if i < 0 {
			return nil, false, nil
		}
		if err := childBelow(ref, n.refs[i]); err != nil {
			return nil, false, err
		}
		ref = n.refs[i]
	}
}

// childBelow checks that child, referenced by the branch at parent, lies
// wholly before it in the file. Every writer appends a node's children
// before the node itself (a commit writes bottom-up, a bulk load closes
// a node before its parent, and unchanged children are older still), so
// a reference at or after its parent is damage: and a walk that followed
// it could go round a cycle.
func childBelow(parent, child Ref) error {
	if child.end() > parent.Off {
		return fmt.Errorf("%w: node at offset %d: child at offset %d does not lie before its parent (children are written first)", ErrCorrupt, parent.Off, child.Off)
	}
	return nil
}

// ascend walks st from from (nil: the start) in key order. Values passed to
// fn alias node bytes.
//
// The walk holds the tree to its invariants as it goes, so damage cannot
// make it endless or exponential: each child lies before its parent (no
// cycles), and the keys it meets ascend strictly (a node reached twice,
// as the shared child of a damaged tree is, repeats its keys: reaching a
// leaf the second time fails the walk). A node reached again is read
// again on the way down to that failure, so a node is read at most
// twice, and a walk costs at most twice the nodes in the file.
func (t *Tree) ascend(st *state, from *Key, fill bool, fn func(k *Key, v []byte) bool) error {
	if st.m.Height == 0 {
		return nil
	}
	w := &walker{t: t, st: st, fill: fill, fn: fn}
	if from != nil {
		w.low = *from
	}
	_, err := w.walk(st.m.Root, st.m.Height, from)
	return err
}

type walker struct {
	t    *Tree
	st   *state
	fill bool
	fn   func(k *Key, v []byte) bool
	low  Key  // every key met is >= low ...
	prev Key  // ... and > prev, once seen
	seen bool // a key was met
}

func (w *walker) walk(ref Ref, level uint32, from *Key) (bool, error) {
	n, err := w.t.readNode(w.st, ref, w.fill)
	if err != nil {
		return false, err
	}
	if n.leaf != (level == 1) {
		return false, levelErr(ref, n, level)
	}
	if n.leaf {
		i := 0
		if from != nil {
			i = n.lowerBound(from)
		}
		for ; i < n.count(); i++ {
			k := n.key(i)
			if w.seen && bytes.Compare(k[:], w.prev[:]) <= 0 || !w.seen && bytes.Compare(k[:], w.low[:]) < 0 {
				return false, fmt.Errorf("%w: node at offset %d: key %x out of order in the walk (a node reached twice, or keys out of place)", ErrCorrupt, ref.Off, k[:])
			}
			w.prev, w.seen = k, true
			if !w.fn(&k, n.value(i)) {
				return false, nil
			}
		}
		return true, nil
	}
	i := 0
	if from != nil {
		i = max(n.childFor(from), 0)
	}
	for ; i < len(n.refs); i++ {
		if err := childBelow(ref, n.refs[i]); err != nil {
			return false, err
		}
		cont, err := w.walk(n.refs[i], level-1, from)
		if err != nil || !cont {
			return cont, err
		}
		from = nil
	}
	return true, nil
}

// Refresh makes the Tree (and later Snapshots) see commits made since it was
// opened by another process. It rereads the meta slots and, if the path now
// names a different file (Rebuild or compaction replaced it), reopens it.
// Snapshots taken before keep their old view. On a writable Tree, which sees
// its own commits anyway, it does nothing.
func (t *Tree) Refresh() error {
	if t.writable {
		return nil
	}
	if t.isClosed() {
		return ErrClosed
	}
	t.refreshMu.Lock()
	defer t.refreshMu.Unlock()
	cur := t.state.Load()
	fiPath, err := t.fsys.Stat(t.path)
	if err != nil {
		return fmt.Errorf("index: refresh: %w", err)
	}
	if fiOpen, err := cur.h.f.Stat(); err == nil && os.SameFile(fiPath, fiOpen) {
		m, rec, err := readMeta(cur.h.f, t.path)
		if err != nil {
			return err
		}
		t.setRecovered(rec)
		t.state.Store(&state{m: m, h: cur.h})
		return nil
	}
	f, err := t.fsys.OpenFile(t.path, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("index: refresh: %w", err)
	}
	m, rec, err := readMeta(f, t.path)
	if err != nil {
		f.Close()
		return err
	}
	t.setRecovered(rec)
	t.state.Store(&state{m: m, h: t.newHandle(f)})
	t.retire(cur.h)
	return nil
}

func (t *Tree) setRecovered(s string) {
	t.mu.Lock()
	t.recovered = s
	t.mu.Unlock()
}

// Stats describes the committed state.
type Stats struct {
	FileSize  int64  // size of the index file
	Entries   uint64 // committed entries
	Height    uint32 // 0 = empty, 1 = root is a leaf
	LiveBytes uint64 // bytes of nodes reachable from the root
	TxID      uint64
	// Recovered is "" normally. When opening (or refreshing) had to pass
	// over an invalid meta slot it says which and why, and which state won.
	Recovered string
	// Compactions counts successful automatic compactions by this Tree;
	// CompactErr is the last compaction failure ("" once one succeeds).
	Compactions int
	CompactErr  string
	CacheBytes  int64 // memory held by the node cache
}

// Stats returns statistics. It is safe to call from any goroutine.
func (t *Tree) Stats() Stats {
	st := t.state.Load()
	s := Stats{
		FileSize:   int64(st.m.FileEnd),
		Entries:    st.m.Entries,
		Height:     st.m.Height,
		LiveBytes:  st.m.LiveBytes,
		TxID:       st.m.TxID,
		CacheBytes: t.cache.bytes.Load(),
	}
	if fi, err := st.h.f.Stat(); err == nil {
		s.FileSize = fi.Size()
	}
	runtime.KeepAlive(st.h)
	t.mu.Lock()
	s.Recovered = t.recovered
	s.Compactions = t.compactions
	s.CompactErr = t.compactErr
	t.mu.Unlock()
	return s
}
