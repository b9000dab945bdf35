package vfs

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"

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
// dance; we add the directory fsync renameio leaves to the caller. The
// temporary file goes beside name: renameio would otherwise probe, with two
// more files and a rename on every call, whether $TMPDIR could do.
func (o osFS) WriteFileAtomic(name string, data []byte, perm fs.FileMode) error {
	if err := renameio.WriteFile(name, data, perm, renameio.WithPermissions(perm), renameio.WithTempDir(filepath.Dir(name))); err != nil {
		return err
	}
	return o.SyncDir(filepath.Dir(name))
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
