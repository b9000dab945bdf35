package vfs_test

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// TestWriteFilesAtomic runs a batch on both filesystems: every file
// replaced or created, an existing file's mode kept, no temp file left,
// and a batch that cannot finish (a name that is a directory) leaving no
// temp file either.
func TestWriteFilesAtomic(t *testing.T) {
	for name, fsys := range map[string]vfs.FS{"os": vfs.OS, "mem": vfs.NewMem()} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "events")
			mustNil(t, fsys.MkdirAll(dir, 0o700))
			mustNil(t, fsys.WriteFileAtomic(filepath.Join(dir, "a"), []byte("old a"), 0o640))
			before, err := fsys.Stat(filepath.Join(dir, "a"))
			mustNil(t, err)
			batch := []vfs.NamedData{{Name: "a", Data: []byte("new a")}, {Name: "b", Data: []byte("new b")}, {Name: "c", Data: nil}}
			mustNil(t, fsys.WriteFilesAtomic(dir, batch, 0o600))
			for _, f := range batch {
				if got := contents(t, fsys, filepath.Join(dir, f.Name)); got != string(f.Data) {
					t.Fatalf("%s = %q, want %q", f.Name, got, f.Data)
				}
			}
			fi, err := fsys.Stat(filepath.Join(dir, "a"))
			mustNil(t, err)
			if fi.Mode() != before.Mode() {
				t.Fatalf("the batch changed a's mode %v to %v", before.Mode(), fi.Mode())
			}
			fi, err = fsys.Stat(filepath.Join(dir, "b"))
			mustNil(t, err)
			if fi.Mode().Perm() != 0o600 {
				t.Fatalf("new file b has mode %v, want 0600", fi.Mode())
			}

			mustNil(t, fsys.MkdirAll(filepath.Join(dir, "d"), 0o700))
			mustNil(t, fsys.MkdirAll(filepath.Join(dir, "d", "x"), 0o700)) // not empty: no rename replaces it
			err = fsys.WriteFilesAtomic(dir, []vfs.NamedData{{Name: "a", Data: []byte("newer a")}, {Name: "d", Data: []byte("not a dir")}}, 0o600)
			if err == nil {
				t.Fatal("a batch renaming over a directory succeeded")
			}
			ents, err := fsys.ReadDir(dir)
			mustNil(t, err)
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			if want := []string{"a", "b", "c", "d"}; !slices.Equal(names, want) {
				t.Fatalf("after the failed batch ReadDir = %v, want %v (no temp files)", names, want)
			}
			if got := contents(t, fsys, filepath.Join(dir, "a")); got != "new a" && got != "newer a" {
				t.Fatalf("a = %q", got)
			}

			// Contents streamed: written as they come; a stream that fails
			// leaves the old file and no temp file.
			stream := func(parts ...string) func(io.Writer) error {
				return func(w io.Writer) error {
					for _, p := range parts {
						if p == "FAIL" {
							return errors.New("the stream broke")
						}
						if _, err := io.WriteString(w, p); err != nil {
							return err
						}
					}
					return nil
				}
			}
			mustNil(t, fsys.WriteFilesAtomic(dir, []vfs.NamedData{{Name: "s", Stream: stream("one ", "two")}}, 0o600))
			if got := contents(t, fsys, filepath.Join(dir, "s")); got != "one two" {
				t.Fatalf("streamed s = %q", got)
			}
			if err := fsys.WriteFilesAtomic(dir, []vfs.NamedData{{Name: "s", Stream: stream("three ", "FAIL")}}, 0o600); err == nil || !strings.Contains(err.Error(), "broke") {
				t.Fatalf("a failed stream: %v", err)
			}
			if got := contents(t, fsys, filepath.Join(dir, "s")); got != "one two" {
				t.Fatalf("after a failed stream s = %q, want the old contents", got)
			}
			ents, err = fsys.ReadDir(dir)
			mustNil(t, err)
			if len(ents) != 5 {
				t.Fatalf("after a failed stream: %d entries (a temp file left?)", len(ents))
			}
		})
	}
}

// TestWriteFilesAtomicErrorNamesTheFile: a write to the pending file that
// fails (a disk that filled) names the file asked for, not renameio's
// temporary file, which is gone once it fails.
func TestWriteFilesAtomicErrorNamesTheFile(t *testing.T) {
	dir := t.TempDir()
	err := vfs.OS.WriteFilesAtomic(dir, []vfs.NamedData{{Name: "out.jsonl", Stream: func(w io.Writer) error {
		w.(io.Closer).Close() // the write below fails, as on a full disk
		_, err := w.Write([]byte("x"))
		return err
	}}}, 0o600)
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Path != filepath.Join(dir, "out.jsonl") {
		t.Fatalf("error %v: want it to name %s", err, filepath.Join(dir, "out.jsonl"))
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("left in %s: %v", dir, ents)
	}
}

// TestOSSyncFiles: every file of the batch is synced and an error of one
// is returned (a closed file cannot be synced).
func TestOSSyncFiles(t *testing.T) {
	dir := t.TempDir()
	var files []vfs.File
	for i := range 20 {
		f, err := vfs.OS.OpenFile(filepath.Join(dir, fmt.Sprint(i)), os.O_WRONLY|os.O_CREATE, 0o600)
		mustNil(t, err)
		defer f.Close()
		files = append(files, f)
	}
	mustNil(t, vfs.OS.SyncFiles(files))
	mustNil(t, vfs.OS.SyncFiles(nil))
	files[7].Close()
	if err := vfs.OS.SyncFiles(files); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("SyncFiles with a closed file: %v, want os.ErrClosed", err)
	}
}

// RemoveInFlight (an interrupted rook, about to exit) removes the temporary
// file of an atomic write under way, and the file it was to replace stays
// as it was: the write, let go on, fails rather than put anything there.
func TestRemoveInFlight(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "out.jsonl")
	mustNil(t, os.WriteFile(target, []byte("before"), 0o600))
	writing, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- vfs.OS.WriteFilesAtomic(dir, []vfs.NamedData{{Name: "out.jsonl", Stream: func(w io.Writer) error {
			io.WriteString(w, "half of it")
			close(writing)
			<-release
			_, err := io.WriteString(w, ", the rest")
			return err
		}}}, 0o600)
	}()
	<-writing
	temps := func() []string {
		ents, err := os.ReadDir(dir)
		mustNil(t, err)
		var out []string
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".") {
				out = append(out, e.Name())
			}
		}
		return out
	}
	if len(temps()) != 1 {
		t.Fatalf("no temporary file while writing: %v", temps())
	}
	vfs.RemoveInFlight()
	if tmp := temps(); len(tmp) != 0 {
		t.Fatalf("left after RemoveInFlight: %v", tmp)
	}
	close(release)
	if err := <-done; err == nil {
		t.Fatal("the write went on to replace the file after its temporary file was removed")
	}
	if b, _ := os.ReadFile(target); string(b) != "before" {
		t.Fatalf("the target is %q", b)
	}
	if tmp := temps(); len(tmp) != 0 {
		t.Fatalf("left: %v", tmp)
	}
}

// OpenOwn opens as os.Open does, without the poller: the same bytes, and
// for a file that is not there the same error, which callers test with
// errors.Is and show.
func TestOpenOwnIsOpen(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "f")
	if err := os.WriteFile(name, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := vfs.ReadOwnFile(vfs.OS, name)
	if err != nil || string(b) != "hello" {
		t.Fatalf("read %q, %v", b, err)
	}
	missing := filepath.Join(dir, "missing")
	_, err = vfs.OpenOwn(vfs.OS, missing)
	_, oserr := os.Open(missing)
	if !errors.Is(err, fs.ErrNotExist) || err.Error() != oserr.Error() {
		t.Fatalf("missing file: %v, os.Open says %v", err, oserr)
	}
}

// ReadOwnLine reads what os.ReadFile does, whatever the file: one line
// short of the buffer (read once), longer than it, with no newline at its
// end, with more than one line, empty; a file not there is os.Open's
// error. A buffer with room is used, not a new one.
func TestReadOwnLine(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("x", 10000) + "\n"
	for _, fsys := range []vfs.FS{vfs.OS, vfs.NewMem()} {
		if err := fsys.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		for i, data := range []string{`{"v":1}` + "\n", long, strings.Repeat("y", 4096), "a\nb\n", "a\nb", "\n", ""} {
			name := filepath.Join(dir, fmt.Sprint("f", i))
			if err := fsys.WriteFileAtomic(name, []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, room := range []int{0, 1, 16, 4096, 20000} {
				buf := make([]byte, 0, room)
				b, err := vfs.ReadOwnLine(fsys, name, buf)
				if err != nil || string(b) != data {
					t.Fatalf("%T, file %d, room %d: read %d bytes (%.20q), %v; want %d", fsys, i, room, len(b), b, err, len(data))
				}
				if room > len(data) && len(data) > 0 && &b[0] != &buf[:1][0] {
					t.Fatalf("%T, file %d, room %d: a new buffer", fsys, i, room)
				}
			}
		}
		missing := filepath.Join(dir, "missing")
		_, err := vfs.ReadOwnLine(fsys, missing, nil)
		if !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%T: missing file: %v", fsys, err)
		}
		if fsys == vfs.OS {
			if _, oserr := os.Open(missing); err.Error() != oserr.Error() {
				t.Fatalf("missing file: %v, os.Open says %v", err, oserr)
			}
		}
	}
}
