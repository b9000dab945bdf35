package agent

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
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
	check := checkMkdirRefused(t)
	for _, c := range []struct {
		err  error
		want string
	}{
		{&fs.PathError{Op: "mkdir", Path: filepath.Join(dir, "x"), Err: syscall.EROFS}, dir + " is on a read-only filesystem (mkdir " + filepath.Join(dir, "x") + ": read-only file system)"},
		// A parent there, on a disk's filesystem: not the kernel's
		// refusal (a parent removed and made again meanwhile, say).
		{&fs.PathError{Op: "mkdir", Path: filepath.Join(dir, "x"), Err: syscall.ENOENT}, ""},
		{&fs.PathError{Op: "mkdir", Path: filepath.Join(dir, "x"), Err: syscall.EPERM}, ""},
		{&fs.PathError{Op: "mkdir", Path: gone, Err: syscall.ENOENT}, ""},
		{&fs.PathError{Op: "mkdir", Path: filepath.Join(dir, "x"), Err: syscall.EACCES}, ""},
		{&fs.PathError{Op: "open", Path: filepath.Join(dir, "x"), Err: syscall.EROFS}, ""},
		{os.ErrNotExist, ""},
	} {
		check(c.err, c.want)
	}
	if runtime.GOOS != "linux" {
		return
	}
	// The kernel's: /proc says "no such file or directory", /sys
	// "operation not permitted" (as root; the raw error sent the user to
	// check the permissions of /sys).
	for _, c := range []struct {
		err  error
		want string
	}{
		{&fs.PathError{Op: "mkdir", Path: "/proc/rook-x", Err: syscall.ENOENT}, "/proc takes no new directories (mkdir /proc/rook-x: no such file or directory): its filesystem is not a disk's but the kernel's"},
		{&fs.PathError{Op: "mkdir", Path: "/sys/rook-x", Err: syscall.EPERM}, "/sys takes no new directories (mkdir /sys/rook-x: operation not permitted): its filesystem is not a disk's but the kernel's"},
	} {
		if _, err := os.Stat(filepath.Dir(pathOf(c.err))); err != nil {
			t.Logf("no %s here: %v", filepath.Dir(pathOf(c.err)), err)
			continue
		}
		check(c.err, c.want)
	}
}

func checkMkdirRefused(t *testing.T) func(err error, want string) {
	return func(err error, want string) {
		t.Helper()
		why, ok := MkdirRefused(err)
		if ok != (want != "") || !strings.HasPrefix(why, want) {
			t.Errorf("%v: %q, %v; want %q", err, why, ok, want)
		}
	}
}
