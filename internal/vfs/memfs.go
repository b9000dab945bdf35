package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// MemFS is an in-memory FS for tests. Besides behaving like a real disk it
// models durability strictly, as a power cut on a filesystem that promises
// nothing beyond what fsync guarantees:
//
//   - File contents are durable only up to the last File.Sync of that file.
//   - A file created, renamed or removed is durable in its directory only
//     after SyncDir of that directory. File.Sync does not make a new name
//     durable.
//   - Directories are the exception: MkdirAll, and Remove or Rename of a
//     directory, are durable at once. The store creates its directory tree
//     up front, so modelling lost directories would add complexity without
//     finding bugs; the files inside directories still follow the rules
//     above.
//   - Chmod and modification times are durable at once.
//
// CrashClone and CrashCloneRandom produce what a reboot after a power cut
// would find. SetHook and CrashAt inject faults and crashes.
//
// Paths are cleaned with path.Clean after converting to slashes; relative
// paths resolve against "/", so "a/b" and "/a/b" name the same file.
// ModTime is a logical clock (seconds since the Unix epoch, one tick per
// mutating operation), deterministic from run to run. There is no umask:
// perm is used as given.
//
// A MemFS is safe for concurrent use; one mutex guards all of it.
type MemFS struct {
	mu       sync.Mutex
	root     *memNode
	locks    map[string]*memLock // held TryLocks by cleaned path
	hook     func(op Op, path string) error
	dead     bool  // set by CrashAt: every later operation fails
	writeOps int   // write operations that got past the hook
	clock    int64 // logical ModTime clock
	tmpSeq   int   // WriteFileAtomic temp-name counter, deterministic
}

var _ FS = (*MemFS)(nil)

// memNode is a file or a directory. Nodes are shared, not copied, between a
// directory's current and synced entries, so a renamed file keeps its data.
type memNode struct {
	mode    fs.FileMode // fs.ModeDir set for directories
	modTime time.Time

	// Files.
	data   []byte // current contents
	synced []byte // contents as of the last Sync: what survives a crash
	// dirty is the lowest offset written or truncated since the last Sync.
	// data[:dirty] == synced[:dirty], so Sync copies only the rest: syncing
	// after each append stays linear instead of quadratic.
	dirty int
	// unsynced lists the writes and truncates since the last Sync, in
	// order: replaying all of them on synced gives data. CrashCloneRandom
	// replays a random selection of them.
	unsynced []memWrite

	// Directories.
	children       map[string]*memNode // current entries
	syncedChildren map[string]*memNode // entries as of the last SyncDir
}

// memWrite is one change to a file's contents since its last Sync: data
// written at off, or (trunc) a Truncate to size off. data is a private copy.
type memWrite struct {
	off   int64
	data  []byte
	trunc bool
}

func newDir(perm fs.FileMode, t time.Time) *memNode {
	return &memNode{
		mode:           fs.ModeDir | perm.Perm(),
		modTime:        t,
		children:       map[string]*memNode{},
		syncedChildren: map[string]*memNode{},
	}
}

func (n *memNode) isDir() bool { return n.mode.IsDir() }

// writeAt writes p at off, zero-filling any gap past the end.
func (n *memNode) writeAt(p []byte, off int64) {
	n.data = overlay(n.data, p, int(off))
	n.dirty = min(n.dirty, int(off))
	n.unsynced = append(n.unsynced, memWrite{off: off, data: bytes.Clone(p)})
}

func (n *memNode) truncate(size int64) {
	n.data = resize(n.data, int(size))
	n.dirty = min(n.dirty, int(size))
	n.unsynced = append(n.unsynced, memWrite{off: size, trunc: true})
}

func (n *memNode) sync() {
	n.synced = append(n.synced[:n.dirty], n.data[n.dirty:]...)
	n.dirty = len(n.data)
	n.unsynced = nil
}

// overlay writes p into b at off, growing b (zero-filling any gap past its
// end) as needed, and returns b.
func overlay(b, p []byte, off int) []byte {
	if end := off + len(p); end > len(b) {
		b = resize(b, end)
	}
	copy(b[off:], p)
	return b
}

// resize cuts b to size bytes or extends it with zeros, and returns it.
func resize(b []byte, size int) []byte {
	if old := len(b); size > old {
		b = slices.Grow(b, size-old)[:size]
		// The backing array may hold bytes from before an earlier
		// shrinking Truncate; a real file reads zeros in the gap.
		clear(b[old:])
		return b
	}
	return b[:size]
}

// NewMem returns an empty in-memory filesystem holding only the root "/".
func NewMem() *MemFS {
	return &MemFS{root: newDir(0o755, time.Time{}), locks: map[string]*memLock{}}
}

// Op names a filesystem operation for fault hooks.
type Op int

const (
	// OpOpen is an OpenFile that creates, truncates or opens for writing.
	OpOpen Op = iota
	// OpOpenRead is a read-only OpenFile of an existing file.
	OpOpenRead
	OpWrite
	OpSync
	OpTruncate
	OpRemove
	OpRename
	OpMkdir
	OpSyncDir
	OpChmod
	// OpRead is File.Read or File.ReadAt.
	OpRead
	// OpStat is FS.Stat or File.Stat.
	OpStat
	OpReadDir
	OpLock
)

var opNames = [...]string{
	OpOpen:     "open",
	OpOpenRead: "open-read",
	OpWrite:    "write",
	OpSync:     "sync",
	OpTruncate: "truncate",
	OpRemove:   "remove",
	OpRename:   "rename",
	OpMkdir:    "mkdir",
	OpSyncDir:  "syncdir",
	OpChmod:    "chmod",
	OpRead:     "read",
	OpStat:     "stat",
	OpReadDir:  "readdir",
	OpLock:     "lock",
}

func (op Op) String() string {
	if op >= 0 && int(op) < len(opNames) {
		return opNames[op]
	}
	return fmt.Sprintf("Op(%d)", int(op))
}

// IsWrite reports whether op changes the filesystem (or, for OpSync and
// OpSyncDir, its durable state). These are the operations CrashAt counts:
// a crash between two reads is no different from one before the next write.
func (op Op) IsWrite() bool {
	switch op {
	case OpOpen, OpWrite, OpSync, OpTruncate, OpRemove, OpRename, OpMkdir, OpSyncDir, OpChmod, OpLock:
		return true
	}
	return false
}

// ErrInjected is the error of operations failed by CrashAt, and a
// convenient one for hooks to return.
var ErrInjected = errors.New("vfs: injected fault")

// SetHook installs h, called before every operation with the operation and
// the path it acts on (the new name for OpRename; the file's name as opened
// for file operations). If h returns an error the operation is not performed
// and the error is returned, wrapped in an *fs.PathError (an *os.LinkError
// for Rename). h is called without m's lock held, so it may call CrashClone
// or CrashCloneRandom; it may be called from several goroutines at once.
// Seek, Name, Close and Unlock are not hooked. SetHook(nil) removes the hook.
func (m *MemFS) SetHook(h func(op Op, path string) error) {
	m.mu.Lock()
	m.hook = h
	m.mu.Unlock()
}

// CrashAt installs a hook (replacing any other) that simulates a power cut
// at the k-th write operation (0-based, counting ops for which IsWrite is
// true). Just before that operation would run it takes CrashClone, marks m
// dead and calls onCrash with the clone; that operation and every later
// one, reads included, fail with ErrInjected. Taking the clone and marking m
// dead happen under one lock, so an operation in another goroutine either
// made it into the clone or fails: nothing reports success after the crash.
//
// A crash sweep runs a workload for k = 0, 1, 2, ... on a fresh MemFS each
// time, checking the clone's invariants in onCrash, until a run finishes
// without crashing (or until k reaches WriteOps of an uninjected run).
func (m *MemFS) CrashAt(k int, onCrash func(clone *MemFS)) {
	var mu sync.Mutex
	n := 0
	m.SetHook(func(op Op, _ string) error {
		if !op.IsWrite() {
			return nil // m.dead fails reads after the crash
		}
		mu.Lock()
		i := n
		n++
		mu.Unlock()
		switch {
		case i < k:
			return nil
		case i > k:
			return ErrInjected
		}
		m.mu.Lock()
		clone := m.crashCloneLocked()
		m.dead = true
		m.mu.Unlock()
		if onCrash != nil {
			onCrash(clone)
		}
		return ErrInjected
	})
}

// WriteOps returns how many write operations (Op.IsWrite) have got past the
// hook so far, whether or not they then failed for ordinary reasons like a
// missing file. Run a workload once without faults to learn how far a
// CrashAt sweep must go.
func (m *MemFS) WriteOps() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.writeOps
}

// begin runs the hook for op and then takes m.mu. On success the caller
// holds m.mu and must release it; on error m.mu is not held.
func (m *MemFS) begin(op Op, name string) error {
	m.mu.Lock()
	h := m.hook
	m.mu.Unlock()
	if h != nil {
		if err := h(op, name); err != nil {
			return err
		}
	}
	m.mu.Lock()
	if m.dead {
		m.mu.Unlock()
		return ErrInjected
	}
	if op.IsWrite() {
		m.writeOps++
	}
	return nil
}

func (m *MemFS) now() time.Time {
	m.clock++
	return time.Unix(m.clock, 0).UTC()
}

func pathErr(op, name string, err error) error {
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// clean turns any path into an absolute, slash-separated, cleaned one.
func clean(name string) string { return path.Clean("/" + filepath.ToSlash(name)) }

func components(p string) []string {
	if p == "/" {
		return nil
	}
	return strings.Split(p[1:], "/")
}

// lookup resolves the cleaned path p. Callers hold m.mu.
func (m *MemFS) lookup(p string) (*memNode, error) {
	n := m.root
	for _, c := range components(p) {
		if !n.isDir() {
			return nil, syscall.ENOTDIR
		}
		if n = n.children[c]; n == nil {
			return nil, fs.ErrNotExist
		}
	}
	return n, nil
}

// lookupParent resolves the directory holding the cleaned path p and
// returns it with p's last element. Callers hold m.mu.
func (m *MemFS) lookupParent(p string) (*memNode, string, error) {
	if p == "/" {
		return nil, "", syscall.EBUSY // the root has no parent to change
	}
	dir, base := path.Split(p)
	d, err := m.lookup(path.Clean(dir))
	if err != nil {
		return nil, "", err
	}
	if !d.isDir() {
		return nil, "", syscall.ENOTDIR
	}
	return d, base, nil
}

// OpenFile opens name like os.OpenFile.
func (m *MemFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	op := OpOpenRead
	if flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_TRUNC) != 0 {
		op = OpOpen
	}
	if err := m.begin(op, name); err != nil {
		return nil, pathErr("open", name, err)
	}
	defer m.mu.Unlock()
	f, err := m.openLocked(name, flag, perm)
	if err != nil {
		return nil, pathErr("open", name, err)
	}
	return f, nil
}

func (m *MemFS) openLocked(name string, flag int, perm fs.FileMode) (*memFile, error) {
	p := clean(name)
	writable := flag&(os.O_WRONLY|os.O_RDWR) != 0
	n, err := m.lookup(p)
	switch {
	case err == nil:
		if flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL {
			return nil, fs.ErrExist
		}
		if n.isDir() && (writable || flag&os.O_TRUNC != 0) {
			return nil, syscall.EISDIR
		}
		if flag&os.O_TRUNC != 0 {
			n.truncate(0)
			n.modTime = m.now()
		}
	case errors.Is(err, fs.ErrNotExist) && flag&os.O_CREATE != 0:
		d, base, err := m.lookupParent(p)
		if err != nil {
			return nil, err
		}
		n = &memNode{mode: perm.Perm(), modTime: m.now()}
		d.children[base] = n
		d.modTime = n.modTime // a directory changes with its entries, as on disk
	default:
		return nil, err
	}
	return &memFile{
		m:      m,
		n:      n,
		name:   name,
		read:   !writable || flag&os.O_RDWR != 0,
		write:  writable,
		append: flag&os.O_APPEND != 0,
	}, nil
}

// Remove removes a file or an empty directory. Removing a file is durable
// only after SyncDir of its directory; removing a directory is durable at
// once.
func (m *MemFS) Remove(name string) error {
	if err := m.begin(OpRemove, name); err != nil {
		return pathErr("remove", name, err)
	}
	defer m.mu.Unlock()
	d, base, err := m.lookupParent(clean(name))
	if err != nil {
		return pathErr("remove", name, err)
	}
	n := d.children[base]
	switch {
	case n == nil:
		return pathErr("remove", name, fs.ErrNotExist)
	case n.isDir() && len(n.children) > 0:
		return pathErr("remove", name, syscall.ENOTEMPTY)
	case n.isDir():
		delete(d.syncedChildren, base)
	}
	delete(d.children, base)
	d.modTime = m.now()
	return nil
}

// Rename moves oldname to newname, replacing a file (or, for a directory,
// an empty directory) there. For files the change is durable only once both
// directories are synced; for directories it is durable at once.
func (m *MemFS) Rename(oldname, newname string) error {
	if err := m.begin(OpRename, newname); err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	defer m.mu.Unlock()
	if err := m.renameLocked(clean(oldname), clean(newname)); err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	return nil
}

func (m *MemFS) renameLocked(op, np string) error {
	od, ob, err := m.lookupParent(op)
	if err != nil {
		return err
	}
	n := od.children[ob]
	if n == nil {
		return fs.ErrNotExist
	}
	nd, nb, err := m.lookupParent(np)
	if err != nil {
		return err
	}
	if op == np {
		return nil
	}
	if n.isDir() && strings.HasPrefix(np, op+"/") {
		return syscall.EINVAL // into its own subtree
	}
	if t := nd.children[nb]; t != nil {
		switch {
		case t.isDir() && !n.isDir():
			return syscall.EISDIR
		case !t.isDir() && n.isDir():
			return syscall.ENOTDIR
		case t.isDir() && len(t.children) > 0:
			return syscall.ENOTEMPTY
		}
	}
	delete(od.children, ob)
	nd.children[nb] = n
	od.modTime = m.now()
	nd.modTime = od.modTime
	if n.isDir() {
		delete(od.syncedChildren, ob)
		nd.syncedChildren[nb] = n
	}
	return nil
}

// MkdirAllOwned is MkdirAll: MemFS has no owners.
func (m *MemFS) MkdirAllOwned(dir string, perm fs.FileMode, _ *Ownership) error {
	return m.MkdirAll(dir, perm)
}

// MkdirAll creates dir and its missing parents. New directories are durable
// at once (see MemFS).
func (m *MemFS) MkdirAll(dir string, perm fs.FileMode) error {
	if err := m.begin(OpMkdir, dir); err != nil {
		return pathErr("mkdir", dir, err)
	}
	defer m.mu.Unlock()
	n := m.root
	for _, c := range components(clean(dir)) {
		child := n.children[c]
		switch {
		case child == nil:
			child = newDir(perm, m.now())
			n.children[c] = child
			n.syncedChildren[c] = child
		case !child.isDir():
			return pathErr("mkdir", dir, syscall.ENOTDIR)
		}
		n = child
	}
	return nil
}

// ReadDir lists dir's current entries sorted by name.
func (m *MemFS) ReadDir(dir string) ([]fs.DirEntry, error) {
	if err := m.begin(OpReadDir, dir); err != nil {
		return nil, pathErr("readdir", dir, err)
	}
	defer m.mu.Unlock()
	d, err := m.lookup(clean(dir))
	if err != nil {
		return nil, pathErr("readdir", dir, err)
	}
	if !d.isDir() {
		return nil, pathErr("readdir", dir, syscall.ENOTDIR)
	}
	names := slices.Sorted(maps.Keys(d.children))
	ents := make([]fs.DirEntry, len(names))
	for i, name := range names {
		ents[i] = fs.FileInfoToDirEntry(info(name, d.children[name]))
	}
	return ents, nil
}

// Lstat is Stat: a MemFS has no symbolic links.
func (m *MemFS) Lstat(name string) (fs.FileInfo, error) { return m.Stat(name) }

// Stat describes name.
func (m *MemFS) Stat(name string) (fs.FileInfo, error) {
	if err := m.begin(OpStat, name); err != nil {
		return nil, pathErr("stat", name, err)
	}
	defer m.mu.Unlock()
	n, err := m.lookup(clean(name))
	if err != nil {
		return nil, pathErr("stat", name, err)
	}
	return info(filepath.Base(name), n), nil
}

// Chmod sets name's permission bits; the change is durable at once.
func (m *MemFS) Chmod(name string, mode fs.FileMode) error {
	if err := m.begin(OpChmod, name); err != nil {
		return pathErr("chmod", name, err)
	}
	defer m.mu.Unlock()
	n, err := m.lookup(clean(name))
	if err != nil {
		return pathErr("chmod", name, err)
	}
	n.mode = n.mode&^fs.ModePerm | mode.Perm()
	return nil
}

// SyncDir makes dir's current entries durable.
func (m *MemFS) SyncDir(dir string) error {
	if err := m.begin(OpSyncDir, dir); err != nil {
		return pathErr("syncdir", dir, err)
	}
	defer m.mu.Unlock()
	d, err := m.lookup(clean(dir))
	if err != nil {
		return pathErr("syncdir", dir, err)
	}
	if !d.isDir() {
		return pathErr("syncdir", dir, syscall.ENOTDIR)
	}
	d.syncedChildren = maps.Clone(d.children)
	return nil
}

// WriteFileAtomic writes name via a temp file in the same directory: create,
// write, Sync, Close, Rename, SyncDir. It is built from MemFS's own methods
// so that hooks and crashes hit every step. Like os.WriteFile and the OS
// implementation (renameio), perm applies only when name does not exist yet;
// an existing file keeps its mode.
func (m *MemFS) WriteFileAtomic(name string, data []byte, perm fs.FileMode) error {
	return m.WriteFilesAtomic(filepath.Dir(name), []NamedData{{Name: filepath.Base(name), Data: data}}, perm)
}

// WriteFilesAtomic is WriteFileAtomic's steps for each file in turn, except
// that the temp files are all written and synced before the first rename,
// and the directory is synced once, at the end: one order the OS
// implementation's (each file synced then renamed, the files side by side)
// may take, one step at a time, so that crash sweeps reproduce.
func (m *MemFS) WriteFilesAtomic(dir string, files []NamedData, perm fs.FileMode) (err error) {
	type temp struct {
		f       File
		tmp     string
		name    string
		closed  bool
		renamed bool
	}
	temps := make([]*temp, 0, len(files))
	defer func() {
		if err == nil {
			return
		}
		for _, t := range temps {
			if !t.closed {
				t.f.Close()
			}
			if !t.renamed {
				m.Remove(t.tmp) // best effort: a dead process cannot clean up either
			}
		}
	}()
	for _, nd := range files {
		name := filepath.Join(dir, nd.Name)
		mode := perm
		if fi, err := m.Stat(name); err == nil && fi.Mode().IsRegular() {
			mode = fi.Mode().Perm()
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		t := &temp{name: name}
		for {
			// Deterministic names keep crash sweeps reproducible; a leftover
			// temp from an earlier failure just moves us on to the next one.
			m.mu.Lock()
			seq := m.tmpSeq
			m.tmpSeq++
			m.mu.Unlock()
			t.tmp = filepath.Join(dir, fmt.Sprintf(".%s.tmp%d", nd.Name, seq))
			t.f, err = m.OpenFile(t.tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
			if err == nil {
				break
			}
			if !errors.Is(err, fs.ErrExist) {
				return err
			}
		}
		temps = append(temps, t)
		if err := nd.writeTo(t.f); err != nil {
			return err
		}
	}
	syncs := make([]File, len(temps))
	for i, t := range temps {
		syncs[i] = t.f
	}
	if err := m.SyncFiles(syncs); err != nil {
		return err
	}
	for i, t := range temps {
		t.closed = true
		if err := t.f.Close(); err != nil {
			return err
		}
		if files[i].New {
			// Looked at right before its rename: a file made meanwhile
			// (by a Stream, a hook) is not replaced.
			m.mu.Lock()
			_, lerr := m.lookup(clean(t.name))
			m.mu.Unlock()
			if lerr == nil {
				return &fs.PathError{Op: "create", Path: t.name, Err: fs.ErrExist}
			}
		}
		if err := m.Rename(t.tmp, t.name); err != nil {
			return err
		}
		t.renamed = true
	}
	return m.SyncDir(dir)
}

// SyncFiles syncs the files one after the other, in order.
func (m *MemFS) SyncFiles(files []File) error {
	for _, f := range files {
		if err := f.Sync(); err != nil {
			return err
		}
	}
	return nil
}

// TryLock takes an in-memory exclusive lock on name, creating the file if
// missing. A second TryLock of the same cleaned path fails with ErrLocked
// until Unlock, whichever handle or goroutine asks. Locks are not carried
// into crash clones: a crash kills their holder.
func (m *MemFS) TryLock(name string, perm fs.FileMode) (Lock, error) {
	if err := m.begin(OpLock, name); err != nil {
		return nil, pathErr("lock", name, err)
	}
	defer m.mu.Unlock()
	p := clean(name)
	if m.locks[p] != nil {
		return nil, ErrLocked
	}
	f, err := m.openLocked(name, os.O_RDWR|os.O_CREATE, perm)
	if err != nil {
		return nil, pathErr("open", name, err)
	}
	l := &memLock{key: p, f: f}
	m.locks[p] = l
	return l, nil
}

type memLock struct {
	key      string
	f        *memFile
	released bool // guarded by f.m.mu
}

func (l *memLock) File() File { return l.f }

func (l *memLock) Unlock() error {
	m := l.f.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if l.released {
		return pathErr("unlock", l.f.name, fs.ErrClosed)
	}
	l.released = true
	if m.locks[l.key] == l {
		delete(m.locks, l.key)
	}
	l.f.closed = true
	return nil
}

// CrashClone returns an independent MemFS holding what a power cut right
// now would leave: every directory with its synced entries, every file with
// its synced contents (empty if it was never synced). No locks are held in
// the clone.
func (m *MemFS) CrashClone() *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.crashCloneLocked()
}

func (m *MemFS) crashCloneLocked() *MemFS {
	return m.cloneWith(
		func(d *memNode, name string) *memNode { return d.syncedChildren[name] },
		func(n *memNode) []byte { return bytes.Clone(n.synced) },
	)
}

// KillClone returns an independent MemFS holding what a killed process
// (SIGKILL, not a power cut) leaves: every change it made, synced or not,
// since the kernel keeps what was written. No locks are held in the clone.
func (m *MemFS) KillClone() *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cloneWith(
		func(d *memNode, name string) *memNode { return d.children[name] },
		func(n *memNode) []byte { return bytes.Clone(n.data) },
	)
}

// CrashCloneRandom is CrashClone for a luckier power cut: besides everything
// durable, some unsynced changes happen to have reached the disk. It models:
//
//   - Directory entries: each unsynced change is independently kept or
//     dropped with even odds. Changes touching the same file are one change,
//     so a rename (even across directories, and even replacing a target)
//     either happened or did not: a file never appears under both names or
//     vanishes from both, as journaling filesystems guarantee.
//   - File contents: MemFS remembers every Write and Truncate since a file's
//     last Sync, in order. The surviving contents start from the synced
//     contents and replay a random selection of those changes, so writes
//     may reach the disk out of order, within one file as well as across
//     files. Each file picks one of these, at random: none of its unsynced
//     changes (1 in 16; CrashClone covers this state anyway); all of them
//     (1 in 16); an in-order prefix of them, the last one possibly torn (1
//     in 8); or, most often, each change independently (3 in 4), with a
//     per-file survival rate drawn afresh so that both sparse and dense
//     survivals occur. In the independent mode a write either did not
//     reach the disk, or reached it (whole 2 times in 3, else torn); a
//     truncate either happened or did not. One time in six of those (1 in
//     8 overall) a write that reached the disk is then also garbled: zeroed
//     from some point on, or with a few bytes flipped, anywhere in the
//     write's range. This applies to in-place overwrites too: a sector in
//     flight at the power cut may come back as junk.
//   - Torn writes are cut at byte granularity: any prefix of the write (down
//     to none of it) reached the disk and the rest of its range keeps what
//     was there before. This is stricter than disks that write 512-byte or
//     4 KiB sectors atomically and includes their outcomes (the cut just
//     rarely lands on a sector boundary), so a format that survives it does
//     not depend on the sector size.
//   - A write that extended the file but did not reach the disk whole may
//     still have extended it (even odds): the file size reached the disk but
//     the data did not, and the missing bytes read as zeros. Otherwise the
//     file is only as long as the surviving changes make it; a gap between
//     surviving writes past the old end reads as zeros.
//
// Bytes that no unsynced write or truncate touched keep their synced
// contents, and a file without unsynced changes is exactly its synced
// contents. Results are a deterministic function of m's state and rng, so a
// failing seed replays.
func (m *MemFS) CrashCloneRandom(rng *rand.Rand) *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()

	// Collect unsynced entry changes in a deterministic order. Directories
	// are always the same in both maps, so only file entries differ.
	type change struct {
		dir  *memNode
		name string
	}
	var changes []change
	var walk func(d *memNode)
	walk = func(d *memNode) {
		for _, name := range entryNames(d) {
			cur, syn := d.children[name], d.syncedChildren[name]
			switch {
			case cur != syn:
				changes = append(changes, change{d, name})
			case cur.isDir():
				walk(cur)
			}
		}
	}
	walk(m.root)

	// Group changes that involve the same file (union-find), then decide
	// each group with one coin.
	parent := make([]int, len(changes))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		if parent[i] != i {
			parent[i] = find(parent[i])
		}
		return parent[i]
	}
	owner := map[*memNode]int{}
	for i, c := range changes {
		for _, n := range []*memNode{c.dir.children[c.name], c.dir.syncedChildren[c.name]} {
			if n == nil {
				continue
			}
			if j, ok := owner[n]; ok {
				parent[find(i)] = find(j)
			} else {
				owner[n] = i
			}
		}
	}
	keepGroup := map[int]bool{}
	keep := map[change]bool{}
	for i, c := range changes {
		r := find(i)
		k, ok := keepGroup[r]
		if !ok {
			k = rng.IntN(2) == 0
			keepGroup[r] = k
		}
		keep[c] = k
	}

	return m.cloneWith(
		func(d *memNode, name string) *memNode {
			if keep[change{d, name}] {
				return d.children[name]
			}
			return d.syncedChildren[name]
		},
		func(n *memNode) []byte { return randomContents(rng, n) },
	)
}

// randomContents returns what a power cut leaves of n's contents, as
// documented on CrashCloneRandom.
func randomContents(rng *rand.Rand, n *memNode) []byte {
	ops := n.unsynced
	r := &replay{out: bytes.Clone(n.synced)}
	if len(ops) == 0 {
		return r.out
	}
	switch mode := rng.IntN(16); {
	case mode == 0: // nothing unsynced reached the disk
	case mode == 1: // everything did (replayed, not copied: same result)
		for _, w := range ops {
			r.apply(w, len(w.data), false)
		}
	case mode < 4: // an in-order prefix, the last change torn
		cut := rng.IntN(len(ops))
		for _, w := range ops[:cut] {
			r.apply(w, len(w.data), false)
		}
		if w := ops[cut]; !w.trunc {
			r.tear(rng, w, rng.IntN(len(w.data)+1))
		}
	default: // each change independently
		keep := rng.Float64()
		for _, w := range ops {
			switch {
			case rng.Float64() >= keep:
				if !w.trunc {
					r.tear(rng, w, 0)
				}
			case w.trunc || rng.IntN(3) != 0:
				r.apply(w, len(w.data), false)
			default:
				r.tear(rng, w, rng.IntN(len(w.data)+1))
			}
		}
		if mode >= 14 {
			r.garble(rng)
		}
	}
	return r.out
}

// replay builds a file's post-crash contents by applying unsynced changes.
type replay struct {
	out []byte
	// reached holds the byte ranges of writes that reached the disk at
	// least in part (some data, or just the size), for garbling.
	reached [][2]int
}

// apply applies w, of which only the first n bytes reached the disk; if
// grow, the size w gives the file reached it even so. A truncate ignores n
// and grow.
func (r *replay) apply(w memWrite, n int, grow bool) {
	off := int(w.off)
	if w.trunc {
		r.out = resize(r.out, off)
		return
	}
	end := off + len(w.data)
	if n > 0 || grow {
		r.reached = append(r.reached, [2]int{off, end})
	}
	r.out = overlay(r.out, w.data[:n], off)
	if grow && end > len(r.out) {
		r.out = resize(r.out, end)
	}
}

// tear applies write w of which only the first n bytes (n < len(w.data), or
// n == len(w.data) for a whole write) reached the disk. If the write would
// have extended the file, its new size reaches the disk with even odds.
func (r *replay) tear(rng *rand.Rand, w memWrite, n int) {
	grow := false
	if n < len(w.data) && int(w.off)+len(w.data) > max(len(r.out), int(w.off)+n) {
		grow = rng.IntN(2) == 0
	}
	r.apply(w, n, grow)
}

// garble damages part of one write that reached the disk: zeroes it from
// some point on, or flips a few of its bytes.
func (r *replay) garble(rng *rand.Rand) {
	var spans [][2]int
	for _, s := range r.reached {
		if lo, hi := s[0], min(s[1], len(r.out)); lo < hi {
			spans = append(spans, [2]int{lo, hi})
		}
	}
	if len(spans) == 0 {
		return
	}
	s := spans[rng.IntN(len(spans))]
	g := r.out[s[0]:s[1]]
	if rng.IntN(2) == 0 {
		clear(g[rng.IntN(len(g)):])
		return
	}
	for range 1 + rng.IntN(min(len(g), 4)) {
		g[rng.IntN(len(g))] ^= byte(1 + rng.IntN(255))
	}
}

// cloneWith builds a fully durable MemFS from m's tree, keeping for each
// directory entry the node pick returns (nil drops it) and giving each file
// the contents returned by contents, which must not alias m's slices. It
// walks in sorted order so random choices are reproducible. A file reachable
// under several names stays one node, like a hard link. Callers hold m.mu.
func (m *MemFS) cloneWith(pick func(d *memNode, name string) *memNode, contents func(n *memNode) []byte) *MemFS {
	c := &MemFS{locks: map[string]*memLock{}, clock: m.clock, tmpSeq: m.tmpSeq}
	files := map[*memNode]*memNode{}
	var cloneDir func(d *memNode) *memNode
	cloneDir = func(d *memNode) *memNode {
		nd := newDir(d.mode, d.modTime)
		for _, name := range entryNames(d) {
			n := pick(d, name)
			if n == nil {
				continue
			}
			cn := files[n]
			switch {
			case n.isDir():
				cn = cloneDir(n)
			case cn == nil:
				data := contents(n)
				cn = &memNode{mode: n.mode, modTime: n.modTime, data: data, synced: bytes.Clone(data), dirty: len(data)}
				files[n] = cn
			}
			nd.children[name] = cn
			nd.syncedChildren[name] = cn
		}
		return nd
	}
	c.root = cloneDir(m.root)
	return c
}

// entryNames returns the sorted union of d's current and synced names.
func entryNames(d *memNode) []string {
	names := slices.Collect(maps.Keys(d.children))
	for name := range d.syncedChildren {
		if d.children[name] == nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// memFile is an open file. Its offset and closed flag are guarded by m.mu.
type memFile struct {
	m      *MemFS
	n      *memNode
	name   string // as passed to OpenFile, like os.File.Name
	read   bool
	write  bool
	append bool
	off    int64
	closed bool
}

var _ File = (*memFile)(nil)

// check reports why f may not be used for an operation allowed by ok.
func (f *memFile) check(ok bool) error {
	switch {
	case f.closed:
		return fs.ErrClosed
	case !ok:
		return syscall.EBADF
	}
	return nil
}

func (f *memFile) Read(p []byte) (int, error) {
	if err := f.m.begin(OpRead, f.name); err != nil {
		return 0, pathErr("read", f.name, err)
	}
	defer f.m.mu.Unlock()
	if err := f.check(f.read); err != nil {
		return 0, pathErr("read", f.name, err)
	}
	if f.n.isDir() {
		return 0, pathErr("read", f.name, syscall.EISDIR)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if f.off >= int64(len(f.n.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.n.data[f.off:])
	f.off += int64(n)
	return n, nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.m.begin(OpRead, f.name); err != nil {
		return 0, pathErr("read", f.name, err)
	}
	defer f.m.mu.Unlock()
	if err := f.check(f.read); err != nil {
		return 0, pathErr("read", f.name, err)
	}
	if f.n.isDir() {
		return 0, pathErr("read", f.name, syscall.EISDIR)
	}
	if off < 0 {
		return 0, pathErr("readat", f.name, syscall.EINVAL)
	}
	if off >= int64(len(f.n.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.n.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Write(p []byte) (int, error) {
	if err := f.m.begin(OpWrite, f.name); err != nil {
		return 0, pathErr("write", f.name, err)
	}
	defer f.m.mu.Unlock()
	if err := f.check(f.write); err != nil {
		return 0, pathErr("write", f.name, err)
	}
	if f.append {
		f.off = int64(len(f.n.data))
	}
	f.n.writeAt(p, f.off)
	f.off += int64(len(p))
	f.n.modTime = f.m.now()
	return len(p), nil
}

func (f *memFile) Seek(offset int64, whence int) (int64, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check(true); err != nil {
		return 0, pathErr("seek", f.name, err)
	}
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += f.off
	case io.SeekEnd:
		offset += int64(len(f.n.data))
	default:
		return 0, pathErr("seek", f.name, syscall.EINVAL)
	}
	if offset < 0 {
		return 0, pathErr("seek", f.name, syscall.EINVAL)
	}
	f.off = offset
	return offset, nil
}

func (f *memFile) Truncate(size int64) error {
	if err := f.m.begin(OpTruncate, f.name); err != nil {
		return pathErr("truncate", f.name, err)
	}
	defer f.m.mu.Unlock()
	if err := f.check(f.write); err != nil {
		return pathErr("truncate", f.name, err)
	}
	if size < 0 {
		return pathErr("truncate", f.name, syscall.EINVAL)
	}
	f.n.truncate(size)
	f.n.modTime = f.m.now()
	return nil
}

// Sync makes the file's current contents durable. On a directory opened
// read-only it syncs the entries, like fsync on a directory descriptor.
func (f *memFile) Sync() error {
	if err := f.m.begin(OpSync, f.name); err != nil {
		return pathErr("sync", f.name, err)
	}
	defer f.m.mu.Unlock()
	if err := f.check(true); err != nil {
		return pathErr("sync", f.name, err)
	}
	if f.n.isDir() {
		f.n.syncedChildren = maps.Clone(f.n.children)
	} else {
		f.n.sync()
	}
	return nil
}

func (f *memFile) Stat() (fs.FileInfo, error) {
	if err := f.m.begin(OpStat, f.name); err != nil {
		return nil, pathErr("stat", f.name, err)
	}
	defer f.m.mu.Unlock()
	if err := f.check(true); err != nil {
		return nil, pathErr("stat", f.name, err)
	}
	return info(filepath.Base(f.name), f.n), nil
}

func (f *memFile) Name() string { return f.name }

func (f *memFile) Close() error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if f.closed {
		return pathErr("close", f.name, fs.ErrClosed)
	}
	f.closed = true
	return nil
}

// memInfo is a snapshot of a node, as fs.FileInfo.
type memInfo struct {
	name    string
	size    int64
	mode    fs.FileMode
	modTime time.Time
	node    *memNode // which file it is, for SameFile
}

func info(name string, n *memNode) memInfo {
	return memInfo{name: name, size: int64(len(n.data)), mode: n.mode, modTime: n.modTime, node: n}
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) Mode() fs.FileMode  { return i.mode }
func (i memInfo) ModTime() time.Time { return i.modTime }
func (i memInfo) IsDir() bool        { return i.mode.IsDir() }
func (i memInfo) Sys() any           { return nil }

// CrashAtClones is CrashAt taking several crash states at once: at the k-th
// write operation (0-based, counted from this call) it hands onCrash the
// strict clone and n clones with random unsynced survival drawn from rng,
// then fails that operation and every later one. The clones are taken one
// after the other, so it is for single-goroutine workloads.
func (m *MemFS) CrashAtClones(k int, rng *rand.Rand, n int, onCrash func(clones []*MemFS)) {
	var mu sync.Mutex
	i := 0
	m.SetHook(func(op Op, _ string) error {
		if !op.IsWrite() {
			return nil
		}
		mu.Lock()
		j := i
		i++
		mu.Unlock()
		switch {
		case j < k:
			return nil
		case j > k:
			return ErrInjected
		}
		clones := []*MemFS{m.CrashClone()}
		for c := 0; c < n; c++ {
			clones = append(clones, m.CrashCloneRandom(rng))
		}
		m.mu.Lock()
		m.dead = true
		m.mu.Unlock()
		if onCrash != nil {
			onCrash(clones)
		}
		return ErrInjected
	})
}
