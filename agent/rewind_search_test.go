//go:build unix

package agent

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// crashingRecord is the store's file system, but a crash (a panic, as a
// kill) at the write of rewind-opened.json number k (from 0).
type crashingRecord struct {
	vfs.FS
	k int
	n *int // the writes so far
}

var errCrash = errors.New("crash")

func (c crashingRecord) WriteFileAtomic(name string, data []byte, perm fs.FileMode) error {
	if filepath.Base(name) == rewindOpenedFile {
		if *c.n == c.k {
			panic(errCrash)
		}
		*c.n++
	}
	return c.FS.WriteFileAtomic(name, data, perm)
}

// modeOf is the permission bits of the directory abs.
func modeOf(t *testing.T, abs string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(abs)
	if err != nil || !fi.IsDir() {
		t.Fatalf("%s is not a directory (%v)", abs, err)
	}
	return fi.Mode().Perm()
}

// A directory the captures name under one that is a link now (p, leading
// outside the workspace) was opened to search it through the link: the
// directory outside (out/q, 0600) was given u+x, and a crash then left it
// so. The rewind refuses the link later, but looks at nothing through it
// first: a directory is opened only when reached through directories.
func TestRewindOpensNothingThroughALink(t *testing.T) {
	if !notRoot(t) {
		return
	}
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"p/q/s/f.txt": "f\n"})
	if _, _, err := r.CaptureSession(id, []string{"p/q/s/f.txt"}, "edit", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	// The agent moved p outside and left a link: p/q and p/q/s lead
	// there, neither searchable.
	out := filepath.Join(filepath.Dir(ws), "out")
	if err := os.Rename(filepath.Join(ws, "p"), out); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(out, filepath.Join(ws, "p")); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(out, "q", "s"), 0o600)
	os.Chmod(filepath.Join(out, "q"), 0o600)
	t.Cleanup(func() {
		os.Chmod(filepath.Join(out, "q"), 0o755)
		os.Chmod(filepath.Join(out, "q", "s"), 0o755)
	})
	r.fs = crashingRecord{FS: r.fs, k: 1, n: new(int)}
	func() {
		defer func() {
			if v := recover(); v != nil && v != errCrash {
				panic(v)
			}
		}()
		r.Rewind(id, 0, false)
	}()
	if m := modeOf(t, filepath.Join(out, "q")); m != 0o600 {
		t.Fatalf("%s, outside the workspace, is %v, want 0600", filepath.Join(out, "q"), m)
	}
}

// A crash left p/q open and recorded (rewind-opened.json); the user then
// moved p away and put in its place a link to another directory of theirs
// holding q (0700, never opened by a rewind). The next rewind gave that
// q, through the link, the mode recorded (0600). A recorded directory is
// closed only when reached through directories from the workspace itself.
func TestRewindClosesNothingACrashLeftThroughALink(t *testing.T) {
	if !notRoot(t) {
		return
	}
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"p/q/f.txt": "f\n", "z.txt": "z\n"})
	if _, _, err := r.CaptureSession(id, []string{"p/q/f.txt", "z.txt"}, "edit", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	writeTree(t, ws, tree{"p/q/f.txt": "f edited\n", "z.txt": "z edited\n"})
	os.Chmod(filepath.Join(ws, "p", "q"), 0o600)
	chmodBackOnCleanup(t, ws, "p/q")
	if !crashAt(t, r, id, 0) {
		t.Fatal("the rewind ended before its first change")
	}
	if _, err := os.Lstat(filepath.Join(r.home, rewindOpenedFile)); err != nil {
		t.Fatalf("no record of p/q opened: %v", err)
	}
	os.Chmod(filepath.Join(ws, "p", "q"), 0o755)
	if err := os.Rename(filepath.Join(ws, "p"), filepath.Join(filepath.Dir(ws), "moved")); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(filepath.Dir(ws), "other")
	if err := os.MkdirAll(filepath.Join(other, "q"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(other, "q"), 0o700)
	if err := os.Symlink(other, filepath.Join(ws, "p")); err != nil {
		t.Fatal(err)
	}
	r.Rewind(id, 0, false) // refuses the link
	if m := modeOf(t, filepath.Join(other, "q")); m != 0o700 {
		t.Fatalf("%s, which no rewind opened, is %v, want 0700", filepath.Join(other, "q"), m)
	}
}

// A crash left p, p/q and p/q/r open and recorded; the user then closed
// p by hand (0600 again), which hides the others. Every rewind after
// refused with "giving the directory p/q/r back its mode -rw------- failed:
// lstat ...: permission denied: nothing changed", naming neither the
// record nor what to do. It says both, whether the directory it cannot
// look at is the one to close or one on the way; once p is open, the
// next rewind closes them.
func TestRewindSaysWhatToDoWhenACrashLeftADirectoryItCannotClose(t *testing.T) {
	if !notRoot(t) {
		return
	}
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"p/q/r/f.txt": "f\n"})
	if _, _, err := r.CaptureSession(id, []string{"p/q/r/f.txt"}, "edit", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	writeTree(t, ws, tree{"p/q/r/f.txt": "f edited\n"})
	os.Chmod(filepath.Join(ws, "p", "q", "r"), 0o600)
	os.Chmod(filepath.Join(ws, "p", "q"), 0o600)
	os.Chmod(filepath.Join(ws, "p"), 0o600)
	chmodBackOnCleanup(t, ws, "p", "p/q", "p/q/r")
	if !crashAt(t, r, id, 0) {
		t.Fatal("the rewind ended before its first change")
	}
	os.Chmod(filepath.Join(ws, "p"), 0o600)
	_, err := r.Rewind(id, 0, false)
	if err == nil {
		t.Fatal("the rewind went on with p/q hidden")
	}
	record := filepath.Join(r.home, rewindOpenedFile)
	for _, want := range []string{"p/q/r", record, "chmod", "run this again", "nothing changed"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("says %q, without %q", err, want)
		}
	}
	os.Chmod(filepath.Join(ws, "p"), 0o700)
	if _, err := r.Rewind(id, 0, false); err != nil {
		t.Fatal(err)
	}
	if got := modeOf(t, filepath.Join(ws, "p")); got != 0o600 {
		t.Fatalf("p is %v after the rewind, want 0600", got)
	}
	os.Chmod(filepath.Join(ws, "p"), 0o700)
	if got := modeOf(t, filepath.Join(ws, "p", "q")); got != 0o600 {
		t.Fatalf("p/q is %v after the rewind, want 0600", got)
	}
	os.Chmod(filepath.Join(ws, "p", "q"), 0o700)
	if got := modeOf(t, filepath.Join(ws, "p", "q", "r")); got != 0o600 {
		t.Fatalf("p/q/r is %v after the rewind, want 0600", got)
	}
}

// As above, but the directory holding the workspace (a) moved after the
// crash, and a link to another of the user's left in its place: the
// recorded root leads there, to a workspace no rewind opened. The next
// rewind (of another session) closes nothing through it.
func TestRewindClosesNothingACrashLeftInAWorkspaceMovedSince(t *testing.T) {
	if !notRoot(t) {
		return
	}
	r, dir, another := newWorkspace(t)
	dir = filepath.Dir(dir)
	ws := filepath.Join(dir, "a", "ws")
	writeTree(t, ws, tree{"p/f.txt": "f\n"})
	m, err := r.NewSession("edit", ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.CaptureSession(m.ID, []string{"p/f.txt"}, "edit", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	writeTree(t, ws, tree{"p/f.txt": "f edited\n"})
	os.Chmod(filepath.Join(ws, "p"), 0o600)
	chmodBackOnCleanup(t, ws, "p")
	if !crashAt(t, r, m.ID, 0) {
		t.Fatal("the rewind ended before its first change")
	}
	if err := os.Rename(filepath.Join(dir, "a"), filepath.Join(dir, "moved")); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other")
	if err := os.MkdirAll(filepath.Join(other, "ws", "p"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Rewind(another, 0, false); err != nil {
		t.Fatal(err)
	}
	if got := modeOf(t, filepath.Join(other, "ws", "p")); got != 0o700 {
		t.Fatalf("%s, which no rewind opened, is %v, want 0700", filepath.Join(other, "ws", "p"), got)
	}
}

// A rewind that crashed left directories open to search them: only the
// next rewind gave them their modes back. A writer's open does, under the
// lock no rewind runs without, and says so; a reader's open leaves them.
func TestWriterOpenClosesWhatACrashedRewindLeftOpen(t *testing.T) {
	if !notRoot(t) {
		return
	}
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"p/q/f.txt": "f\n"})
	if _, _, err := r.CaptureSession(id, []string{"p/q/f.txt"}, "edit", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	writeTree(t, ws, tree{"p/q/f.txt": "f edited\n"})
	os.Chmod(filepath.Join(ws, "p", "q"), 0o600)
	os.Chmod(filepath.Join(ws, "p"), 0o600)
	chmodBackOnCleanup(t, ws, "p", "p/q")
	if !crashAt(t, r, id, 0) {
		t.Fatal("the rewind ended before its first change")
	}
	if got := modeOf(t, filepath.Join(ws, "p")); got == 0o600 {
		t.Fatal("the crashed rewind left p closed: nothing to test")
	}
	r.Close()
	ro, err := Open(r.home, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ro.Close()
	if dirs, err := LeftOpen(vfs.OS, r.home); err != nil || len(dirs) != 2 {
		t.Fatalf("after a reader's open: %q, %v; want p and p/q still recorded", dirs, err)
	}
	w, err := Open(r.home, Options{Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if n := strings.Join(w.Notices(), "\n"); !strings.Contains(n, "gave 2 workspace director(ies)") {
		t.Errorf("the writer's notices %q do not say what it closed", n)
	}
	if got := modeOf(t, filepath.Join(ws, "p")); got != 0o600 {
		t.Errorf("p is %v after a writer's open, want 0600", got)
	}
	os.Chmod(filepath.Join(ws, "p"), 0o700)
	if got := modeOf(t, filepath.Join(ws, "p", "q")); got != 0o600 {
		t.Errorf("p/q is %v after a writer's open, want 0600", got)
	}
	if _, err := os.Lstat(filepath.Join(r.home, rewindOpenedFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s is left (%v)", rewindOpenedFile, err)
	}
}

// A record that does not read: a writer's open goes on, and its notice
// says what to do (closeLeftOpen's words), not only that it does not
// parse.
func TestWriterOpenSaysWhatToDoWithARewindRecordThatDoesNotRead(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	r.Close()
	if err := fsys.WriteFileAtomic(filepath.Join(testHome, rewindOpenedFile), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := Open(testHome, Options{FS: fsys, Writable: true})
	if err != nil {
		t.Fatalf("a writer's open with a record that does not read: %v", err)
	}
	defer w.Close()
	if n := strings.Join(w.Notices(), "\n"); !strings.Contains(n, "give them their modes back by hand, remove it") {
		t.Errorf("notices %q do not say what to do with the record", n)
	}
}
