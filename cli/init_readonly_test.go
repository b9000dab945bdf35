package cli

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/internal/vfs"
)

// readOnlyDisk is the OS file system on a disk mounted read-only: a
// directory that is there is there (MkdirAll of it succeeds, as os.MkdirAll
// does), a new one is refused with EROFS.
type readOnlyDisk struct{ vfs.FS }

func (d readOnlyDisk) MkdirAll(dir string, perm fs.FileMode) error {
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return nil
	}
	return &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.EROFS}
}

// TestInitReadOnlyDiskNamesTheDirectory: init of a store that is there,
// one of its part directories gone, on a read-only disk, said "cannot make
// the store home H", of a home that is there. It names the directory it
// could not make, in the home.
func TestInitReadOnlyDiskNamesTheDirectory(t *testing.T) {
	home := filepath.Join(t.TempDir(), "store")
	if _, err := cas.Init(vfs.OS, nil, home); err != nil {
		t.Fatal(err)
	}
	dict := filepath.Join(home, cas.DictDir)
	if err := os.Remove(dict); err != nil {
		t.Fatal(err)
	}
	for _, json := range []bool{false, true} {
		var out, errb bytes.Buffer
		e := &Env{Stdout: &out, Stderr: &errb, FS: readOnlyDisk{vfs.OS}, Home: home, JSON: json}
		err := (&InitCmd{}).Run(e)
		want := "cannot make the directory " + dict + " in the store home " + home + ": " + home +
			" is on a read-only filesystem (mkdir " + dict + ": read-only file system): give --home (or $ROOK_HOME) a directory on a disk you can write"
		if err == nil || err.Error() != want {
			t.Fatalf("json %v: %v\nwant %s", json, err, want)
		}
		if out.Len() != 0 {
			t.Fatalf("json %v: stdout %q", json, out.String())
		}
	}
	// A home not there yet, whose own mkdir is refused, is still the
	// store home that cannot be made.
	fresh := filepath.Join(t.TempDir(), "new", "store")
	e := &Env{Stdout: new(bytes.Buffer), Stderr: new(bytes.Buffer), FS: readOnlyDisk{vfs.OS}, Home: fresh}
	err := (&InitCmd{}).Run(e)
	want := "cannot make the store home " + fresh + ": " + filepath.Dir(fresh) + " is on a read-only filesystem (mkdir " + fresh +
		": read-only file system): give --home (or $ROOK_HOME) a directory on a disk you can write"
	if err == nil || err.Error() != want {
		t.Fatalf("%v\nwant %s", err, want)
	}
}
