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
		f, err := openRegular(abs, rel)
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

// openRegular opens a workspace file an Lstat found regular, for reading.
// The path may have become a named pipe since, and opening one for reading
// waits for a writer (forever): it is opened without waiting and read only
// if it is still a regular file.
func openRegular(abs, rel string) (*os.File, error) {
	f, err := os.OpenFile(abs, os.O_RDONLY|syscall.O_NONBLOCK, 0)
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
	return f, nil
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
