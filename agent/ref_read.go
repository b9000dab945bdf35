package agent

import (
	"fmt"
	"io/fs"

	"github.com/rookhq/rook/internal/vfs"
)

// maxRefBytes bounds what rook reads of a ref file. A version is a line
// of 50-odd bytes ("<32-hex id> <unix nanoseconds>"): 64 MiB is over a
// million versions, more than any checkpoint is created. A file past it
// (a log, or a device, linked in its place) is refused, not read whole
// into memory.
const maxRefBytes = 64 << 20

// RefRefusedError: a file under refs/ that rook does not read as a ref:
// not a regular file (a named pipe would be waited on for a writer, for
// ever; a device read without end; a link to a directory), or larger than
// maxRefBytes. Why says which, without the path.
type RefRefusedError struct {
	Path string
	Why  string
}

func (e *RefRefusedError) Error() string {
	return fmt.Sprintf("%s %s: rook reads a ref only from a regular file (a named pipe would wait for a writer, a device never end); remove it, or put the right ref file back in its place", e.Path, e.Why)
}

// readRefFile reads the ref file at path, the one way every reader of
// refs/ reads one (gc's and verify's walk, checkpoint ls, restore, create
// and rm), as readConfigFile reads config.toml: a link is followed (it
// names a ref file elsewhere), but the file is opened without waiting, so
// a named pipe in its place is not waited on for a writer, and read only
// if it is a regular file (a device, a link to /dev/zero, is never read
// without end; a socket, a directory, is said as such), no further than
// maxRefBytes. Missing: fs.ErrNotExist, as vfs.ReadFile's; refused: a
// *RefRefusedError.
func readRefFile(fsys vfs.FS, path string) ([]byte, error) {
	return readNoWait(fsys, path, maxRefBytes, func(fi fs.FileInfo) (bool, error) {
		if !fi.Mode().IsRegular() {
			return false, refNotRegular(path, fi.Mode())
		}
		return false, nil
	}, func() error { return refTooLarge(path) })
}

// refNotRegular is readRefFile's error of a path that is mode (a named
// pipe, a socket, a device, a directory: through a link, or itself).
func refNotRegular(path string, mode fs.FileMode) error {
	why := "is " + fileKind(mode) + ", not a regular file"
	if mode.IsDir() {
		why = "is a directory (a link to one, or one made by hand), not a ref file"
	}
	return &RefRefusedError{Path: path, Why: why}
}

// refTooLarge is readRefFile's error of a file past maxRefBytes.
func refTooLarge(path string) error {
	return &RefRefusedError{Path: path, Why: fmt.Sprintf("is larger than %d MiB, more than any ref holds (is it the right file?)", maxRefBytes>>20)}
}
