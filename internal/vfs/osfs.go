package vfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"

	"github.com/google/renameio/v2"
	"golang.org/x/sys/unix"
)

// OS is the real filesystem.
var OS FS = osFS{}

type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// OpenOwn opens for reading a file the store wrote itself, a regular file:
// on the OS filesystem with open(2) alone. os.OpenFile also offers each
// file it opens to the runtime's poller, four fcntls and an epoll_ctl that
// a regular file refuses, which were most of what opening a session's log
// or metadata cost (`session ls` opens both of every session). Not for a
// file a user names: a pipe opened so is read without the poller, a
// thread blocked in each read.
func OpenOwn(fsys FS, name string) (File, error) {
	if _, ok := fsys.(osFS); !ok {
		return fsys.OpenFile(name, os.O_RDONLY, 0)
	}
	for {
		fd, err := unix.Open(name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		return os.NewFile(uintptr(fd), name), nil
	}
}

// ReadOwnLine reads a small file the store wrote itself, whole and at
// once (by rename), as one line ending in its only newline (a session's
// metadata), into buf's room (grown when it is too short), and returns
// what it read. On the OS filesystem it costs open(2), read(2) and
// close(2): a read that comes back short of buf's room ending in the
// newline had the whole file (a regular file's read is short at its end
// alone), which spares ReadOwnFile's fcntl (os.NewFile's), fstat and the
// read that finds the end. Anything else, a file longer than the room or
// not ending so, is read on to its end. buf is the caller's to reuse once
// it is done with what came back.
func ReadOwnLine(fsys FS, name string, buf []byte) ([]byte, error) {
	if _, ok := fsys.(osFS); !ok {
		b, err := ReadOwnFile(fsys, name)
		return append(buf[:0], b...), err
	}
	var fd int
	for {
		var err error
		fd, err = unix.Open(name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		break
	}
	defer unix.Close(fd)
	b := buf[:0]
	for {
		if len(b) == cap(b) {
			b = slices.Grow(b, max(cap(b), 512))
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: name, Err: err}
		}
		if n == 0 {
			return b, nil
		}
		b = b[:len(b)+n]
		if len(b) < cap(b) && b[len(b)-1] == '\n' {
			return b, nil
		}
	}
}

func (osFS) Remove(name string) error                    { return os.Remove(name) }
func (osFS) Rename(oldname, newname string) error        { return os.Rename(oldname, newname) }
func (osFS) MkdirAll(dir string, perm fs.FileMode) error { return os.MkdirAll(dir, perm) }
func (osFS) Stat(name string) (fs.FileInfo, error)       { return os.Stat(name) }
func (osFS) Lstat(name string) (fs.FileInfo, error)      { return os.Lstat(name) }
func (osFS) Chmod(name string, mode fs.FileMode) error   { return os.Chmod(name, mode) }

func (osFS) ReadDir(dir string) ([]fs.DirEntry, error) {
	ents, err := os.ReadDir(dir)
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	return ents, err
}

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// WriteFileAtomic uses renameio, which does exactly the temp/fsync/rename
// dance; we add the directory fsync renameio leaves to the caller.
func (o osFS) WriteFileAtomic(name string, data []byte, perm fs.FileMode) error {
	return o.WriteFilesAtomic(filepath.Dir(name), []NamedData{{Name: filepath.Base(name), Data: data}}, perm)
}

// WriteFilesAtomic writes each file to a renameio pending file beside it
// (renameio would otherwise probe, with two more files and a rename on
// every call, whether $TMPDIR could do), then has renameio sync, close
// and rename each over its name, side by side (as SyncFiles runs fsyncs),
// and syncs the directory. renameio's replace always syncs the file
// itself: syncing the batch first as well cost a second fsync per file,
// one after the other, ~0.3 ms each (an import of 3,000 small sessions
// writes 3,000 metadata files).
func (o osFS) WriteFilesAtomic(dir string, files []NamedData, perm fs.FileMode) error {
	pending := make([]*renameio.PendingFile, 0, len(files))
	defer func() {
		for _, pf := range pending {
			pf.Cleanup() // after CloseAtomicallyReplace, a no-op
			inFlight.Delete(pf.Name())
		}
	}()
	for _, f := range files {
		pf, err := renameio.NewPendingFile(filepath.Join(dir, f.Name), renameio.WithPermissions(perm), renameio.WithExistingPermissions(), renameio.WithTempDir(dir))
		if err != nil {
			// The error names renameio's temporary file (".x.jsonl123..."),
			// which the user never asked for: name the file instead.
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = &fs.PathError{Op: pe.Op, Path: filepath.Join(dir, f.Name), Err: pe.Err}
			}
			return err
		}
		pending = append(pending, pf)
		inFlight.Store(pf.Name(), struct{}{})
		if err := f.writeTo(pf); err != nil {
			return named(err, pf.Name(), filepath.Join(dir, f.Name))
		}
		if err := giveOwner(pf.File, f.Owner); err != nil {
			return err
		}
	}
	if err := parallel(len(pending), func(i int) error {
		if files[i].New {
			return named(placeNew(pending[i], filepath.Join(dir, files[i].Name)), pending[i].Name(), filepath.Join(dir, files[i].Name))
		}
		return named(pending[i].CloseAtomicallyReplace(), pending[i].Name(), filepath.Join(dir, files[i].Name))
	}); err != nil {
		return err
	}
	return o.SyncDir(dir)
}

// errNoReplace: the file system cannot rename without replacing.
var errNoReplace = errors.New("rename without replacing is not supported")

// placeNew syncs a pending file and gives it its name, path, unless a file
// is there by then (NamedData.New): an error that is fs.ErrExist, the file
// there left as it is. The temporary file is removed by the caller's
// Cleanup (linked) or is gone (renamed).
func placeNew(pf *renameio.PendingFile, path string) error {
	if err := pf.Sync(); err != nil {
		return err
	}
	exists := func() error { return &fs.PathError{Op: "create", Path: path, Err: fs.ErrExist} }
	err := renameNoReplace(pf.Name(), path)
	if err == nil {
		return nil
	}
	if errors.Is(err, fs.ErrExist) {
		return exists()
	}
	if !errors.Is(err, errNoReplace) {
		return err
	}
	// A link fails if the name is taken; the temporary name is then
	// removed by Cleanup.
	err = os.Link(pf.Name(), path)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrExist):
		return exists()
	}
	// Neither (a file system without hard links): replaced, as any write
	// (NamedData.New says so).
	return pf.CloseAtomicallyReplace()
}

// inFlight holds the names of the temporary files WriteFilesAtomic has
// made and not yet renamed or removed, for RemoveInFlight.
var inFlight sync.Map

// inFlightMu is held while MakeInFlight makes a temporary file, and by
// RemoveInFlight from its start: none is made once it has run.
var inFlightMu sync.Mutex

// errStopping is MakeInFlight's refusal once RemoveInFlight has run.
var errStopping = errors.New("rook is stopping (interrupted): nothing more written")

// MakeInFlight runs make, which makes a temporary file outside the store
// (a restore's copy beside the file it replaces) and returns its name,
// and holds the name for RemoveInFlight until Landed is called with it
// (once it is renamed or removed). It makes none once RemoveInFlight has
// run: an interrupt leaves no temporary file made after it removed
// those it knew.
func MakeInFlight(make func() (string, error)) (string, error) {
	inFlightMu.Lock()
	defer inFlightMu.Unlock()
	if removing {
		return "", errStopping
	}
	name, err := make()
	if err == nil {
		inFlight.Store(name, struct{}{})
	}
	return name, err
}

// Landed says the temporary file name, made through MakeInFlight, is
// renamed or removed: RemoveInFlight no longer removes it.
func Landed(name string) { inFlight.Delete(name) }

// removing: RemoveInFlight has run, and its release not yet.
var removing bool

// RemoveInFlight removes the temporary files of the atomic writes under
// way, and those MakeInFlight made and not yet Landed, for a process
// about to exit in the middle of them (interrupted): the file each was to
// replace is left as it was, and nothing is left beside it. (A crash
// leaves them: `rook store gc` removes those in the store, a restore
// those a restore left in the directory it writes in, and one beside an
// --output is the user's to remove.) No temporary file is made through
// MakeInFlight until release is called, which the exiting process never
// does (a test, whose exit returns, does).
func RemoveInFlight() (release func()) {
	inFlightMu.Lock()
	removing = true
	inFlightMu.Unlock()
	inFlight.Range(func(name, _ any) bool {
		os.Remove(name.(string))
		return true
	})
	return func() {
		inFlightMu.Lock()
		removing = false
		inFlightMu.Unlock()
	}
}

// named has an error that names a pending file (a write or sync of it
// failed: a disk that filled) name the file it was to replace, as
// NewPendingFile's does: the temporary name (".x.jsonl123...") is
// renameio's, which the user never asked for, and is gone once it fails.
func named(err error, tmp, name string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == tmp {
		pe.Path = name
	}
	return err
}

// maxParallelSyncs bounds the fsyncs in flight (SyncFiles, and
// WriteFilesAtomic's syncs and renames).
const maxParallelSyncs = 16

func (osFS) SyncFiles(files []File) error {
	return parallel(len(files), func(i int) error { return files[i].Sync() })
}

// parallel runs do(0) ... do(n-1), at most maxParallelSyncs at once, and
// joins their errors: fsyncs side by side, which one journal commit can
// cover.
func parallel(n int, do func(i int) error) error {
	if n == 1 {
		return do(0)
	}
	errs := make([]error, n)
	sem := make(chan struct{}, maxParallelSyncs)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = do(i)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (osFS) TryLock(name string, perm fs.FileMode) (Lock, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, perm)
	if err != nil {
		return nil, err
	}
	// flock locks belong to the open file description, so they die with the
	// process (kill -9 included) and never go stale.
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if err == unix.EWOULDBLOCK {
			return nil, ErrLocked
		}
		return nil, &fs.PathError{Op: "flock", Path: name, Err: err}
	}
	return &osLock{f: f}, nil
}

type osLock struct{ f *os.File }

func (l *osLock) File() File { return l.f }

func (l *osLock) Unlock() error {
	unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	return l.f.Close()
}

// giveOwner gives the new file f the owner and group own (NamedData.Owner),
// when it does not have them already: a file created by its owner in a
// directory of its group needs no chown, which only root may do.
func giveOwner(f *os.File, own *Ownership) error {
	if own == nil {
		return nil
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	return chownTo(fi, own, f.Chown)
}

// chownTo gives the file fi describes the owner and group own by chown,
// when it does not have them. Root gives them, or fails with *OwnerError.
// An ordinary user who owns the file already (their own file, whose group
// is one they are not in: copied in with sudo, given back with `sudo
// chown $USER`) keeps what they may: the group when they are in it, else
// their own, as any editor's save leaves it; a file of another user's
// they cannot give (*OwnerError).
func chownTo(fi fs.FileInfo, own *Ownership, chown func(uid, gid int) error) error {
	have := OwnerOf(fi)
	if have == nil || *have == *own {
		return nil
	}
	if os.Geteuid() != 0 && have.UID == own.UID {
		_ = chown(-1, own.GID) // allowed only for a group of theirs
		return nil
	}
	if err := chown(own.UID, own.GID); err != nil {
		return &OwnerError{Owner: *own, Had: have, Err: err}
	}
	return nil
}

// MkdirAllOwned makes dir and its missing parents, and gives each one it
// made the owner and group own (see FS).
func (osFS) MkdirAllOwned(dir string, perm fs.FileMode, own *Ownership) error {
	if own == nil {
		return os.MkdirAll(dir, perm)
	}
	// The directories missing, from dir up to the nearest that is there.
	var made []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		}
		made = append(made, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if err := os.MkdirAll(dir, perm); err != nil {
		return err
	}
	for i := len(made) - 1; i >= 0; i-- {
		d := made[i]
		fi, err := os.Lstat(d)
		if err != nil {
			return err
		}
		if err := chownTo(fi, own, func(uid, gid int) error { return os.Lchown(d, uid, gid) }); err != nil {
			return err
		}
	}
	return nil
}
