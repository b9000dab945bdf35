// Package vfs is rook's one filesystem seam. Every byte the store reads or
// writes goes through an FS, so tests can swap the real disk for an in-memory
// filesystem that injects faults and simulates a power cut (see MemFS).
//
// The interface is deliberately small: what an append-only store needs and
// nothing more. Paths are slash- or OS-separated strings interpreted by the
// implementation; the store only ever passes paths it built with
// filepath.Join under its home directory.
package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// UncleanStop is what a recovery notice gives as the cause of what the
// last writer left when it stopped without closing the store: bytes
// written but never synced, files never finished. The store's packages
// (cas, eventlog) recover from it alike and say it alike.
const UncleanStop = "a crash, or rook killed, or interrupted (an import: a second time)"

// File is an open file. Positioned reads (ReadAt) are safe to call
// concurrently; everything else belongs to one goroutine at a time.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.Closer
	// Sync makes everything written to this file so far durable: after it
	// returns, a crash does not lose those bytes. It says nothing about the
	// directory entry that names the file (see FS.SyncDir).
	Sync() error
	// Truncate cuts (or extends with zeros) the file to size bytes.
	Truncate(size int64) error
	// Seek is needed to append after reopening a file for writing.
	Seek(offset int64, whence int) (int64, error)
	Stat() (fs.FileInfo, error)
	Name() string
}

// FS is the filesystem seam.
type FS interface {
	// OpenFile opens name with os.O_* flags, like os.OpenFile.
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	// Remove removes a file or an empty directory.
	Remove(name string) error
	// Rename atomically replaces newname with oldname. The change is durable
	// only once the parent directory is synced.
	Rename(oldname, newname string) error
	// MkdirAll creates a directory and its parents, like os.MkdirAll.
	MkdirAll(dir string, perm fs.FileMode) error
	// MkdirAllOwned is MkdirAll, each directory it makes given the owner
	// and group own (when not nil) as NamedData.Owner gives a file: a
	// client's configuration directory made by rook run as root (sudo
	// keeping $HOME) is the user's. When a directory cannot be given them,
	// it fails with *OwnerError (the directories made stay). MemFS, which
	// has no owners, ignores own.
	MkdirAllOwned(dir string, perm fs.FileMode, own *Ownership) error
	// ReadDir lists a directory's entries sorted by name.
	ReadDir(dir string) ([]fs.DirEntry, error)
	// Stat describes a file or directory.
	Stat(name string) (fs.FileInfo, error)
	// Lstat describes name itself: a symbolic link, not what it points at.
	Lstat(name string) (fs.FileInfo, error)
	// Chmod changes a file's mode bits.
	Chmod(name string, mode fs.FileMode) error
	// SyncDir makes the directory's entries (files created, renamed or
	// removed in it) durable.
	SyncDir(dir string) error
	// WriteFileAtomic is the one durable-write helper for small whole files:
	// temp file in the same directory, write, fsync, rename over name, fsync
	// the directory. A crash at any point leaves either the old file or the
	// new one, never a mix.
	WriteFileAtomic(name string, data []byte, perm fs.FileMode) error
	// WriteFilesAtomic is WriteFileAtomic for several files of one
	// directory, for a writer with many small files to bring up to date
	// at once (an import's session metadata): each file is replaced
	// atomically, but not all together and in no set order (the OS
	// filesystem syncs and renames them side by side; MemFS in order, so
	// that crash sweeps reproduce), and the directory synced once. A
	// crash leaves each file either old or new.
	WriteFilesAtomic(dir string, files []NamedData, perm fs.FileMode) error
	// SyncFiles is Sync of each file, as one batch: the OS filesystem runs
	// the fsyncs side by side, so that one journal commit can cover many
	// of them; MemFS runs them in order, so that crash sweeps reproduce.
	// After it returns without error, every file is synced.
	SyncFiles(files []File) error
	// TryLock takes an exclusive advisory lock on the file name (created if
	// missing) without waiting. It returns ErrLocked when another holder has
	// it. The lock is released by Unlock or when the process dies.
	TryLock(name string, perm fs.FileMode) (Lock, error)
}

// Lock is a held advisory lock. Its file stays open while it is held; the
// holder may write a description of itself into it.
type Lock interface {
	File() File
	Unlock() error
}

// ErrLocked is returned by TryLock when someone else holds the lock.
var ErrLocked = errors.New("vfs: file is locked")

// NamedData is one file of a WriteFilesAtomic batch: its name in the
// directory and its contents: Data, or what Stream writes, for contents
// too big to hold in memory (an export of a transcript of GBs). A Stream
// that fails fails the batch, and the file keeps its old contents.
type NamedData struct {
	Name string
	// New: the file is not there, and must not be replaced should one be
	// made meanwhile (the agent whose transcript it is writing it again):
	// the write then fails with an error that is fs.ErrExist, the file
	// made meanwhile left as it is. The OS filesystem renames with
	// RENAME_NOREPLACE (Linux), else links the temporary file to the name;
	// where the file system has neither, it renames, and a file made
	// between the caller's look and the rename is replaced.
	New    bool
	Data   []byte
	Stream func(w io.Writer) error
	// Owner, when set, is the owner and group the new file is given before
	// it takes the name: a file of the user's replaced by rook run as root
	// (sudo keeping $HOME) stays the user's. When it cannot be given them,
	// the write fails and the old file is left as it is. MemFS, which has
	// no owners, ignores it.
	Owner *Ownership
}

// Ownership is a file's owner and group, as user and group ids.
type Ownership struct{ UID, GID int }

// OwnerError: a file written atomically (or a directory made) could not
// be given the owner and group asked for (NamedData.Owner); the old file
// is left as it is.
type OwnerError struct {
	Owner Ownership
	// Had is the owner and group the new file had, when known: what
	// differs from Owner is what could not be given.
	Had *Ownership
	Err error
}

// Missing says what could not be given: "owner and group", "owner" or
// "group", and their ids ("user 1000, group 1000").
func (e *OwnerError) Missing() (what, ids string) {
	switch {
	case e.Had != nil && e.Had.UID == e.Owner.UID:
		return "group", fmt.Sprintf("group %d", e.Owner.GID)
	case e.Had != nil && e.Had.GID == e.Owner.GID:
		return "owner", fmt.Sprintf("user %d", e.Owner.UID)
	}
	return "owner and group", fmt.Sprintf("user %d, group %d", e.Owner.UID, e.Owner.GID)
}

// Cause is the error of the chown, without the path of the temporary
// file, which the user never asked for.
func (e *OwnerError) Cause() error {
	var pe *fs.PathError
	if errors.As(e.Err, &pe) {
		return pe.Err
	}
	return e.Err
}

func (e *OwnerError) Error() string {
	what, ids := e.Missing()
	return fmt.Sprintf("cannot give the new file the %s asked for (%s): %v", what, ids, e.Cause())
}

func (e *OwnerError) Unwrap() error { return e.Err }

// writeTo writes the file's contents to w.
func (nd NamedData) writeTo(w io.Writer) error {
	if nd.Stream != nil {
		return nd.Stream(w)
	}
	_, err := w.Write(nd.Data)
	return err
}

// ReadFile reads a whole file through fsys.
func ReadFile(fsys FS, name string) ([]byte, error) {
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	return readAll(f)
}

// ReadOwnFile is ReadFile of a file the store wrote itself (OpenOwn).
func ReadOwnFile(fsys FS, name string) ([]byte, error) {
	f, err := OpenOwn(fsys, name)
	if err != nil {
		return nil, err
	}
	return readAll(f)
}

// readAll reads f to its end and closes it.
func readAll(f File) ([]byte, error) {
	defer f.Close()
	var size int64
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	return ReadSized(f, size, -1)
}

// ReadSized reads r to its end into a buffer sized once from size, what
// r's file said it holds (0 when unknown, stdin), as os.ReadFile does:
// a file of many MiB is held once, not in the doubling copies io.ReadAll
// makes of it. A reader that gives more than size (a file that grew since
// its Stat) is still read to its end, or, with max >= 0, to one byte past
// max: more than max bytes back is the caller's "too large".
func ReadSized(r io.Reader, size, max int64) ([]byte, error) {
	return ReadSizedRoom(r, 0, size, max)
}

// ReadSizedRoom is ReadSized with room bytes (zero) in front of what is
// read, in the same buffer: cas.Store.PutInPlace lays a big object out as
// its block there, without copying it. max bounds what is read, not the
// room.
func ReadSizedRoom(r io.Reader, room int, size, max int64) ([]byte, error) {
	if max >= 0 {
		r = io.LimitReader(r, max+1)
		size = min(size, max+1)
	}
	if size < 0 || int64(room+int(size)+bytes.MinRead) != int64(room)+size+bytes.MinRead {
		size = 0 // what does not fit an int, with room for the last read
	}
	// MinRead past the size: the read that finds the end must not make
	// the buffer grow (it wants that much room before every read).
	buf := bytes.NewBuffer(make([]byte, room, room+int(size)+bytes.MinRead))
	_, err := buf.ReadFrom(r)
	return buf.Bytes(), err
}

// SameFile reports whether two FileInfos, from Stat or File.Stat of the
// same FS, describe the same file (os.SameFile for the OS filesystem): a
// holder of a lock on an open file checks that its name still leads to it.
func SameFile(a, b fs.FileInfo) bool {
	if ma, ok := a.(memInfo); ok {
		mb, ok := b.(memInfo)
		return ok && ma.node != nil && ma.node == mb.node
	}
	return os.SameFile(a, b)
}

// Exists reports whether name exists. Errors other than "not found" count as
// existing so that callers go on to hit the real error.
func Exists(fsys FS, name string) bool {
	_, err := fsys.Stat(name)
	return err == nil || !errors.Is(err, fs.ErrNotExist)
}
