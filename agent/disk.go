package agent

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/zeebo/blake3"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/internal/vfs"
)

// DiskFile is a workspace path as it is on disk now.
type DiskFile struct {
	Exists bool
	Mode   FileMode
	Size   int64
	ID     cas.Key // the id its bytes would have as an object (a link: its target)
}

// statDisk describes the workspace path rel, hashing a file's content as a
// stream, so a large file is compared without being held in memory.
func statDisk(real, rel string) (DiskFile, error) {
	d, err := statDiskOnce(real, rel)
	if errors.Is(err, errNowLink) {
		// Replaced by a link (or another file) since its Lstat: what
		// is there now, once more.
		d, err = statDiskOnce(real, rel)
	}
	return d, err
}

// statDiskOnce is statDisk: a file replaced after its Lstat fails with
// errNowLink, nothing read through a link.
func statDiskOnce(real, rel string) (DiskFile, error) {
	abs := filepath.Join(real, filepath.FromSlash(rel))
	fi, err := os.Lstat(abs)
	if notExist(err) {
		return DiskFile{}, nil
	}
	if err != nil {
		return DiskFile{}, err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		t, err := os.Readlink(abs)
		if err != nil {
			return DiskFile{}, err
		}
		return DiskFile{Exists: true, Mode: FileMode{Link: true}, Size: int64(len(t)), ID: cas.ID([]byte(t))}, nil
	case fi.Mode().IsRegular():
		f, err := openRegularAs(abs, rel, fi)
		if err != nil {
			return DiskFile{}, err
		}
		defer f.Close()
		h := blake3.New()
		n, err := io.Copy(h, f)
		if err != nil {
			return DiskFile{}, err
		}
		var id cas.Key
		copy(id[:], h.Sum(nil))
		return DiskFile{Exists: true, Mode: fileMode(fi), Size: n, ID: id}, nil
	case fi.IsDir():
		return DiskFile{Exists: true, Mode: FileMode{Perm: fi.Mode().Perm() | fs.ModeDir}}, nil
	}
	return DiskFile{}, &NotRegularError{Path: rel, Type: fi.Mode().Type()}
}

// NotRegularError: a workspace path that is a named pipe, a socket or a
// device: it has no content to capture, compare or put back.
type NotRegularError struct {
	Path string
	Type fs.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is %s, not a regular file, directory or link", e.Path, fileKind(e.Type))
}

// notRegularAdvice says what to do of err when it is a NotRegularError
// (a named pipe where a file goes back) that stops a restore or rewind
// (what): "" for any other error.
func notRegularAdvice(err error, what string) string {
	if nr := (*NotRegularError)(nil); errors.As(err, &nr) {
		return fmt.Sprintf(", which the %s can neither save for its undo nor write over: remove it (or move it out of the way) and run this again", what)
	}
	return ""
}

// openRegular opens a workspace file an Lstat found regular, for reading.
// The path may have become a named pipe since, and opening one for reading
// waits for a writer (forever): it is opened without waiting and read only
// if it is still a regular file. It may have become a link too (a tool
// replaced the file): it is opened without following one (O_NOFOLLOW), so
// nothing is read through a link, and fails with errNowLink.
func openRegular(abs, rel string) (*os.File, error) {
	f, err := os.OpenFile(abs, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	return checkRegular(f, err, rel, nil)
}

// openRegularAs is openRegular of a file an Lstat found to be was: only
// that file is read (errNowLink otherwise).
func openRegularAs(abs, rel string, was fs.FileInfo) (*os.File, error) {
	f, err := os.OpenFile(abs, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	return checkRegular(f, err, rel, was)
}

// openRegularIn is openRegular of the entry name of the directory dir (a
// walk's, opened without following a link), which an Lstat found to be
// was: only that file is read. A Root would follow a link put there
// since that stays inside dir; a file that is not was (its device and
// inode) fails with errNowLink.
func openRegularIn(dir *os.Root, name, rel string, was fs.FileInfo) (*os.File, error) {
	f, err := dir.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	return checkRegular(f, err, rel, was)
}

// errNowLink: a path an Lstat found to be a regular file or a directory
// is a link, or another file, when it is opened (a tool replaced it):
// it is not read through. A walk looks at it again, once.
var errNowLink = errors.New("replaced (by a link, or another file) while being read: nothing read through it")

// checkRegular is what openRegular and openRegularIn opened, f (or err),
// if it is a regular file, and was when was is not nil.
func checkRegular(f *os.File, err error, rel string, was fs.FileInfo) (*os.File, error) {
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s: %w", rel, errNowLink)
	}
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		if fi.IsDir() {
			return nil, fmt.Errorf("%s became a directory while being read", rel)
		}
		return nil, &NotRegularError{Path: rel, Type: fi.Mode().Type()}
	}
	if was != nil && !os.SameFile(was, fi) {
		f.Close()
		return nil, fmt.Errorf("%s: %w", rel, errNowLink)
	}
	return f, nil
}

// openDirIn opens the directory name of dir (nil: the path abs), which an
// Lstat found to be was, to list it and open what it holds: only that
// directory, never one a link put in its place leads to (errNowLink).
func openDirIn(dir *os.Root, name, abs, rel string, was fs.FileInfo) (*os.Root, error) {
	d, err := openRootNoWait(dir, name, abs)
	if err != nil && dir != nil && !notExist(err) {
		// A link put in its place that leads out of dir is refused by
		// the Root ("path escapes"); a file, or a pipe, is not a
		// directory: replaced, looked at again by the walk.
		if fi, lerr := dir.Lstat(name); lerr == nil && (!fi.IsDir() || !os.SameFile(was, fi)) {
			return nil, fmt.Errorf("%s: %w", rel, errNowLink)
		}
	}
	if err != nil {
		return nil, rootErrAt(err, filepath.Dir(abs))
	}
	fi, err := d.Stat(".")
	if err != nil {
		d.Close()
		return nil, rootErrAt(err, abs)
	}
	if !fi.IsDir() || !os.SameFile(was, fi) {
		d.Close()
		return nil, fmt.Errorf("%s: %w", rel, errNowLink)
	}
	return d, nil
}

// rootErrAt gives err, a failure of an os.Root (or a file opened through
// one) in the directory at dirAbs, the whole path it failed on. A Root
// names the path it was given, relative to itself ("statat .", "openat
// h.txt"): the CLI, which says which directory's permissions to check,
// took that relative to the directory rook was started in, and named it
// rather than the workspace directory refused.
func rootErrAt(err error, dirAbs string) error {
	if pe, ok := err.(*fs.PathError); ok && !filepath.IsAbs(pe.Path) {
		return &fs.PathError{Op: pe.Op, Path: filepath.Join(dirAbs, pe.Path), Err: pe.Err}
	}
	return err
}

// openRootNoWait opens the directory name of dir (nil: the path abs) as a
// Root. os.Root opens it as any file, and a named pipe put in its place
// since the walk's Lstat blocked that open until a writer came: for ever,
// the checkpoint hung. It is opened first without waiting and only as a
// directory (O_NONBLOCK, O_DIRECTORY: a pipe or file fails at once), then
// as a Root through /proc/self/fd, the very directory opened; where there
// is no /proc, by its name again (the check of was, after, still holds).
func openRootNoWait(dir *os.Root, name, abs string) (*os.Root, error) {
	const flag = os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_DIRECTORY
	var f *os.File
	var err error
	if dir == nil {
		f, err = os.OpenFile(abs, flag, 0)
	} else {
		f, err = dir.OpenFile(name, flag, 0)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if r, err := os.OpenRoot(fmt.Sprintf("/proc/self/fd/%d", f.Fd())); err == nil {
		return r, nil
	}
	if dir == nil {
		return os.OpenRoot(abs)
	}
	return dir.OpenRoot(name)
}

// errLargerThan: a file read with readRegular holds more than its max
// bytes (written to while it was read, past what its Lstat said).
var errLargerThan = errors.New("larger than the bound it was read with")

// readRegular is os.ReadFile through openRegular, reading at most max
// bytes: past them it fails with errLargerThan. The buffer is sized once,
// from the file's size, so a large file is held once, not in the doubling
// copies io.ReadAll makes of it, and a file growing while it is read does
// not grow the read past its bound.
func readRegular(abs, rel string, max int64) ([]byte, error) {
	b, err := readRegularRoom(abs, rel, max, 0)
	return b, err
}

// readRegularRoom is readRegular with room bytes in front of the file's
// (vfs.ReadSizedRoom): a capture reads a file behind cas.ObjectRoom for
// PutInPlace, which stores a big one from where it was read.
func readRegularRoom(abs, rel string, max int64, room int) ([]byte, error) {
	f, err := openRegular(abs, rel)
	if err != nil {
		return nil, err
	}
	return readOpened(f, max, room)
}

// readNoWait reads the file at path the way rook reads a small file of its
// own or the user's (config.toml, a ref), following a link to it: opened
// without waiting, so a named pipe in its place is not waited on for a
// writer, forever; then judged by check, which refuses what is no regular
// file (a device such as /dev/zero would be read without end; a socket,
// which does not open, is judged by a Stat) or says to read it as empty;
// and read no further than max, past which it is tooLarge. Missing:
// fs.ErrNotExist, as vfs.ReadFile's.
func readNoWait(fsys vfs.FS, path string, max int64, check func(fs.FileInfo) (empty bool, err error), tooLarge func() error) ([]byte, error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if fi, serr := fsys.Stat(path); serr == nil && !fi.Mode().IsRegular() {
			if _, cerr := check(fi); cerr != nil {
				return nil, cerr
			}
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	empty, err := check(fi)
	switch {
	case err != nil:
		f.Close()
		return nil, err
	case empty:
		f.Close()
		return nil, nil
	case fi.Size() > max:
		f.Close()
		return nil, tooLarge()
	}
	b, err := readOpened(f, max, 0)
	if errors.Is(err, errLargerThan) {
		return nil, tooLarge() // grew while it was read
	}
	return b, err
}

// readOpened reads f, a regular file opened for it (an *os.File, or one
// of a vfs.FS), as readRegularRoom reads, and closes it.
func readOpened(f vfs.File, max int64, room int) ([]byte, error) {
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	// One byte more than the bound reads a file grown past it.
	b, err := vfs.ReadSizedRoom(f, room, fi.Size(), max)
	if err != nil {
		return nil, err
	}
	if int64(len(b)-room) > max {
		return nil, errLargerThan
	}
	return b, nil
}

// notExist says err is an Lstat's of a path that is not there: missing,
// or under a path that is now a file (ENOTDIR: a tool replaced the
// directory by a file), which holds nothing either.
func notExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}
