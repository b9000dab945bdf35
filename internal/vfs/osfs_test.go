package vfs_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

func TestOSRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	fsys := vfs.OS
	mustNil(t, fsys.MkdirAll(dir, 0o755))

	name := filepath.Join(dir, "CURRENT")
	mustNil(t, fsys.WriteFileAtomic(name, []byte("one"), 0o640))
	first, err := fsys.Stat(name)
	mustNil(t, err)
	// Like os.WriteFile, perm applies only to a new file (renameio keeps an
	// existing file's mode), and MemFS does the same.
	mustNil(t, fsys.WriteFileAtomic(name, []byte("two"), 0o600))
	if got := contents(t, fsys, name); got != "two" {
		t.Fatalf("CURRENT = %q", got)
	}
	fi, err := fsys.Stat(name)
	mustNil(t, err)
	if fi.Mode() != first.Mode() {
		t.Fatalf("WriteFileAtomic changed mode %v to %v", first.Mode(), fi.Mode())
	}

	create(t, fsys, filepath.Join(dir, "b"), "bb", true, true)
	create(t, fsys, filepath.Join(dir, "a"), "aa", true, true)
	mustNil(t, fsys.Rename(filepath.Join(dir, "b"), filepath.Join(dir, "c")))
	mustNil(t, fsys.SyncDir(dir))
	ents, err := fsys.ReadDir(dir)
	mustNil(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	// No temp files left behind by WriteFileAtomic.
	if want := []string{"CURRENT", "a", "c"}; !slices.Equal(names, want) {
		t.Fatalf("ReadDir = %v, want %v", names, want)
	}
	mustNil(t, fsys.Remove(filepath.Join(dir, "a")))
	_, err = fsys.Stat(filepath.Join(dir, "a"))
	wantErr(t, err, fs.ErrNotExist)
	_, err = fsys.OpenFile(filepath.Join(dir, "c"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	wantErr(t, err, fs.ErrExist)
}

// TestOSTryLock checks that flock conflicts within one process too: each
// TryLock opens its own file description, and flock locks belong to those.
func TestOSTryLock(t *testing.T) {
	name := filepath.Join(t.TempDir(), "LOCK")
	l, err := vfs.OS.TryLock(name, 0o644)
	mustNil(t, err)
	l2, err := vfs.OS.TryLock(name, 0o644)
	if !errors.Is(err, vfs.ErrLocked) || l2 != nil {
		t.Fatalf("second TryLock = %v, %v; want nil, ErrLocked", l2, err)
	}
	_, err = l.File().Write([]byte("pid 1"))
	mustNil(t, err)
	if got := contents(t, vfs.OS, name); got != "pid 1" {
		t.Fatalf("lock file holds %q", got)
	}
	mustNil(t, l.Unlock())

	l, err = vfs.OS.TryLock(name, 0o644)
	mustNil(t, err)
	mustNil(t, l.Unlock())
}
