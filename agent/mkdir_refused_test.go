package agent

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestMkdirRefused: a mkdir the filesystem refuses is explained (its
// parent named); one whose parent is gone (the usual "no such file or
// directory"), or refused by a permission, is left to say itself.
func TestMkdirRefused(t *testing.T) {
	dir := t.TempDir()
	gone := filepath.Join(dir, "gone", "x")
	for _, c := range []struct {
		err  error
		want string
	}{
		{&fs.PathError{Op: "mkdir", Path: filepath.Join(dir, "x"), Err: syscall.EROFS}, dir + " is on a read-only filesystem (mkdir " + filepath.Join(dir, "x") + ": read-only file system)"},
		{&fs.PathError{Op: "mkdir", Path: filepath.Join(dir, "x"), Err: syscall.ENOENT}, dir + " takes no new directories (mkdir "},
		{&fs.PathError{Op: "mkdir", Path: gone, Err: syscall.ENOENT}, ""},
		{&fs.PathError{Op: "mkdir", Path: filepath.Join(dir, "x"), Err: syscall.EACCES}, ""},
		{&fs.PathError{Op: "open", Path: filepath.Join(dir, "x"), Err: syscall.EROFS}, ""},
		{os.ErrNotExist, ""},
	} {
		why, ok := MkdirRefused(c.err)
		if ok != (c.want != "") || !strings.HasPrefix(why, c.want) {
			t.Errorf("%v: %q, %v; want %q", c.err, why, ok, c.want)
		}
	}
}
