//go:build unix

package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/eventlog"
)

// chmodBackOnCleanup gives the directories named u+rwx at the end, those
// still there, so that the TempDir's removal works for a user not root.
func chmodBackOnCleanup(t *testing.T, ws string, dirs ...string) {
	t.Cleanup(func() {
		for _, d := range dirs {
			os.Chmod(filepath.Join(ws, d), 0o755)
		}
	})
}

// The undo of a rewind that made a read-only directory removes it, as
// storage.md says: planned as a user not root, it refused ("cannot write
// into .../d/ro: permission denied: nothing changed"), the directory
// being read-only, though the user owns it. It is opened for the undo
// (u+rwx), and both it and d (read-only too, in the second case: its
// directory d/ro is removed from it) go.
func TestRewindUndoRemovesReadOnlyDirectoriesItMade(t *testing.T) {
	if !notRoot(t) {
		return
	}
	for _, modes := range []map[string]fs.FileMode{
		{"d": 0o755, "d/ro": 0o555},
		{"d": 0o555, "d/ro": 0o555},
	} {
		r, ws, id := newWorkspace(t)
		writeTree(t, ws, tree{"d/ro/c.txt": "c\n", "keep.txt": "k\n"})
		chmodBackOnCleanup(t, ws, "d/ro", "d")
		for _, d := range []string{"d/ro", "d"} {
			os.Chmod(filepath.Join(ws, d), modes[d])
		}
		if _, _, err := r.CaptureSession(id, []string{"d"}, "rm", DefaultLimits); err != nil {
			t.Fatal(err)
		}
		os.Chmod(filepath.Join(ws, "d"), 0o755)
		os.Chmod(filepath.Join(ws, "d", "ro"), 0o755)
		if err := os.RemoveAll(filepath.Join(ws, "d")); err != nil {
			t.Fatal(err)
		}
		rep, err := r.Rewind(id, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		if got := dirModes(t, ws, "d", "d/ro"); !maps.Equal(got, modes) {
			t.Fatalf("modes after the rewind %v, want %v", got, modes)
		}
		if _, err := r.Rewind(rep.Fork, *rep.BeforeSeq, false); err != nil {
			t.Fatalf("undo (d %v): %v", modes["d"], err)
		}
		if _, err := os.Lstat(filepath.Join(ws, "d")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("d is still there after the undo (%v)", err)
		}
		sameTree(t, "after undo", readTree(t, ws), tree{"keep.txt": "k\n"})
	}
}

// A directory made read-only since the capture, which a rewind writes a
// file into, was refused at planning as a user not root ("cannot write
// into .../d: permission denied"), though the rewind gives d its captured
// mode 0755 itself: it is opened for the writes and given that mode. e,
// whose mode no capture holds (only e/b.txt was captured), is opened for
// the write and given back the mode it had, 0555, and so is the
// workspace itself; the undo puts them back as they were.
func TestRewindWritesIntoADirectoryMadeReadOnlySince(t *testing.T) {
	if !notRoot(t) {
		return
	}
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"d/a.txt": "a\n", "e/b.txt": "b\n", "top.txt": "t\n"})
	os.Chmod(filepath.Join(ws, "d"), 0o755)
	chmodBackOnCleanup(t, ws, "d", "e", ".")
	if _, _, err := r.CaptureSession(id, []string{"d", "e/b.txt", "top.txt"}, "edit", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	edited := tree{"d/a.txt": "a edited\n", "e/b.txt": "b edited\n", "top.txt": "t edited\n"}
	writeTree(t, ws, edited)
	readOnly := map[string]fs.FileMode{"d": 0o555, "e": 0o555, ".": 0o555}
	for d, m := range readOnly {
		os.Chmod(filepath.Join(ws, d), m)
	}
	rep, err := r.Rewind(id, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after rewind", readTree(t, ws), tree{"d/a.txt": "a\n", "e/b.txt": "b\n", "top.txt": "t\n"})
	want := map[string]fs.FileMode{"d": 0o755, "e": 0o555, ".": 0o555}
	if got := dirModes(t, ws, "d", "e", "."); !maps.Equal(got, want) {
		t.Fatalf("modes after the rewind %v, want %v", got, want)
	}
	if _, err := r.Rewind(rep.Fork, *rep.BeforeSeq, false); err != nil {
		t.Fatalf("undo: %v", err)
	}
	sameTree(t, "after undo", readTree(t, ws), edited)
	if got := dirModes(t, ws, "d", "e", "."); !maps.Equal(got, readOnly) {
		t.Fatalf("modes after the undo %v, want %v", got, readOnly)
	}
}

// A rewind that opened a read-only directory and stopped on an error (a
// file in it written since its capture before the rewind) gives the
// directory the mode it had back, as nothing more is written in it.
func TestRewindStoppedGivesAnOpenedDirectoryItsModeBack(t *testing.T) {
	if !notRoot(t) {
		return
	}
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"d/a.txt": "a\n", "d/b.txt": "b\n"})
	chmodBackOnCleanup(t, ws, "d")
	if _, _, err := r.CaptureSession(id, []string{"d"}, "edit", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	writeTree(t, ws, tree{"d/a.txt": "a edited\n", "d/b.txt": "b edited\n"})
	os.Chmod(filepath.Join(ws, "d"), 0o555)
	applyHook = func(point, rel string) {
		if point == hookBetween && rel == "d/b.txt" {
			writeTree(t, ws, tree{"d/b.txt": "b written since\n"})
		}
	}
	_, err := r.Rewind(id, 0, false)
	applyHook = nil
	if err == nil || !strings.Contains(err.Error(), "d/b.txt changed since the rewind captured it") {
		t.Fatalf("rewind: %v, want it stopped at d/b.txt", err)
	}
	sameTree(t, "after the rewind", readTree(t, ws), tree{"d/a.txt": "a\n", "d/b.txt": "b written since\n"})
	if got := dirModes(t, ws, "d")["d"]; got != 0o555 {
		t.Fatalf("d is %v after the rewind stopped, want %v", got, fs.FileMode(0o555))
	}
}

// A rewind that stops on an error gives the read-only directories it made
// their modes: they were left with the owner's bits added (d/ro, 0555,
// showed 0755), though nothing more is written in them. Its undo then
// removes them.
func TestRewindStoppedGivesTheDirectoriesItMadeTheirModes(t *testing.T) {
	if !notRoot(t) {
		return
	}
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"d/ro/c.txt": "c\n", "d/ro/c2.txt": "c2\n", "keep.txt": "k\n"})
	chmodBackOnCleanup(t, ws, "d/ro", "d")
	modes := map[string]fs.FileMode{"d": 0o555, "d/ro": 0o555}
	for _, d := range []string{"d/ro", "d"} {
		os.Chmod(filepath.Join(ws, d), modes[d])
	}
	if _, _, err := r.CaptureSession(id, []string{"d"}, "rm", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(ws, "d"), 0o755)
	os.Chmod(filepath.Join(ws, "d", "ro"), 0o755)
	if err := os.RemoveAll(filepath.Join(ws, "d")); err != nil {
		t.Fatal(err)
	}
	applyHook = func(point, rel string) {
		if point == hookBetween && rel == "d/ro/c2.txt" {
			writeTree(t, ws, tree{"d/ro/c2.txt": "made since\n"})
		}
	}
	rep, err := r.Rewind(id, 0, false)
	applyHook = nil
	if err == nil || !strings.Contains(err.Error(), "d/ro/c2.txt changed since the rewind captured it") {
		t.Fatalf("rewind: %v, want it stopped at d/ro/c2.txt", err)
	}
	if got := dirModes(t, ws, "d", "d/ro"); !maps.Equal(got, modes) {
		t.Fatalf("modes after the rewind stopped %v, want %v", got, modes)
	}
	if _, err := r.Rewind(rep.Fork, *rep.BeforeSeq, false); err != nil {
		t.Fatalf("undo: %v", err)
	}
	sameTree(t, "after undo", readTree(t, ws), tree{"keep.txt": "k\n"})
}

// A directory the user does not own is not opened, read-only or not: a
// rewind that must write in it is refused, saying so, nothing written.
func TestRewindDoesNotOpenADirectoryOfAnotherUser(t *testing.T) {
	if !notRoot(t) {
		return
	}
	fi, err := os.Stat("/")
	if err != nil || ownDir(fi) {
		t.Skipf("/ is this user's (%v): no directory of another user to try", err)
	}
	p := &Plan{Root: "/", real: "/"}
	err = p.writable("/", true)
	if err == nil || !strings.Contains(err.Error(), "cannot write into /: permission denied") || !strings.Contains(err.Error(), "not yours") {
		t.Fatalf("writable /: %v, want a refusal", err)
	}
	if len(p.lifted) != 0 {
		t.Fatalf("lifted %v", p.lifted)
	}
}

// A directory the plan may not write in is named as the file system error
// (*fs.PathError) the CLI reads to say what to check: it said to check the
// permissions of the store ("rook: cannot restore r/x.txt: cannot write
// into .../ws/r: permission denied: nothing changed: check the permissions
// of ~/.rook (`rook doctor`)"), which has nothing to do with it.
func TestWriteRefusalNamesTheDirectory(t *testing.T) {
	if !notRoot(t) {
		return
	}
	err := writableDir("/")
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Path != "/" || !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("writableDir(/): %#v, want a *fs.PathError naming /", err)
	}
	if got, want := err.Error(), "cannot write into /: permission denied"; got != want {
		t.Fatalf("says %q, want %q", got, want)
	}
}

// crashAt has the next rewind stop dead before its change number k (from
// 0), as a kill or a power cut would: nothing of Apply's clean-up runs.
// It returns whether the rewind reached that point.
func crashAt(t *testing.T, r *Rook, id eventlog.ID, k int) (crashed bool) {
	t.Helper()
	type crash struct{}
	n := 0
	applyHook = func(point, rel string) {
		if point != hookBetween {
			return
		}
		if n == k {
			panic(crash{})
		}
		n++
	}
	defer func() {
		applyHook = nil
		if v := recover(); v != nil {
			if _, ok := v.(crash); !ok {
				panic(v)
			}
			crashed = true
		}
	}()
	if _, err := r.Rewind(id, 0, false); err != nil {
		t.Fatal(err)
	}
	return false
}

// rewindFork returns the fork a rewind of id made (the only one).
func rewindFork(t *testing.T, r *Rook, id eventlog.ID) eventlog.ID {
	t.Helper()
	ids, err := r.Log.IDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range ids {
		if m, err := r.Log.ReadMeta(f); err == nil && m.Parent != nil && *m.Parent == id {
			return f
		}
	}
	t.Fatalf("no fork of %s", id)
	return eventlog.ID{}
}

// A crash mid-rewind left the read-only directories it had opened to
// write in (u+rwx) so for good when their capture did not hold them whole
// (e: only e/b.txt was captured; the workspace itself): its undo put the
// files back and left them 0755. The rewind's capture before it records
// the modes of the directories it opens; its undo gives them back. At
// every point a crash may come.
func TestRewindUndoAfterACrashClosesTheDirectoriesItOpened(t *testing.T) {
	if !notRoot(t) {
		return
	}
	readOnly := map[string]fs.FileMode{".": 0o555, "e": 0o555, "e/f": 0o500}
	edited := tree{"a.txt": "a edited\n", "e/b.txt": "b edited\n", "e/f/c.txt": "c edited\n", "z.txt": "z edited\n"}
	for k := 0; ; k++ {
		r, ws, id := newWorkspace(t)
		writeTree(t, ws, tree{"a.txt": "a\n", "e/b.txt": "b\n", "e/f/c.txt": "c\n", "z.txt": "z\n"})
		chmodBackOnCleanup(t, ws, "e/f", "e", ".")
		if _, _, err := r.CaptureSession(id, []string{"a.txt", "e/b.txt", "e/f/c.txt", "z.txt"}, "edit", DefaultLimits); err != nil {
			t.Fatal(err)
		}
		writeTree(t, ws, edited)
		for _, d := range []string{"e/f", "e", "."} {
			os.Chmod(filepath.Join(ws, d), readOnly[d])
		}
		if !crashAt(t, r, id, k) {
			if k < 4 {
				t.Fatalf("the rewind ended before its change %d", k)
			}
			break
		}
		if k > 0 {
			// Opened, as the crash left them.
			if got := dirModes(t, ws, "e"); got["e"] != 0o755 {
				t.Fatalf("crash before change %d: e is %v, want it open", k, got["e"])
			}
		}
		fork := rewindFork(t, r, id)
		if _, err := r.Rewind(fork, 0, false); err != nil {
			t.Fatalf("crash before change %d: undo: %v", k, err)
		}
		sameTree(t, fmt.Sprintf("crash before change %d, undone", k), readTree(t, ws), edited)
		if got := dirModes(t, ws, ".", "e", "e/f"); !maps.Equal(got, readOnly) {
			t.Fatalf("crash before change %d: modes after the undo %v, want %v", k, got, readOnly)
		}
	}
}

// Run again after a crash, the same rewind (which names the crashed one
// as interrupted) found the directories that one had opened u+rwx, wrote
// in them and left them so: it gives them the modes the crashed one's
// capture recorded. One whose mode was changed since the crash (by the
// user) is left as it is.
func TestRewindAgainAfterACrashClosesTheDirectoriesItOpened(t *testing.T) {
	if !notRoot(t) {
		return
	}
	readOnly := map[string]fs.FileMode{".": 0o555, "e": 0o555, "e/f": 0o500, "g": 0o555}
	for k := 0; k < 3; k++ {
		r, ws, id := newWorkspace(t)
		writeTree(t, ws, tree{"a.txt": "a\n", "e/b.txt": "b\n", "e/f/c.txt": "c\n", "g/d.txt": "d\n"})
		chmodBackOnCleanup(t, ws, "e/f", "e", "g", ".")
		if _, _, err := r.CaptureSession(id, []string{"a.txt", "e/b.txt", "e/f/c.txt", "g/d.txt"}, "edit", DefaultLimits); err != nil {
			t.Fatal(err)
		}
		writeTree(t, ws, tree{"a.txt": "a edited\n", "e/b.txt": "b edited\n", "e/f/c.txt": "c edited\n", "g/d.txt": "d edited\n"})
		for _, d := range []string{"e/f", "e", "g", "."} {
			os.Chmod(filepath.Join(ws, d), readOnly[d])
		}
		if !crashAt(t, r, id, k) {
			t.Fatalf("the rewind ended before its change %d", k)
		}
		os.Chmod(filepath.Join(ws, "g"), 0o750) // the user's, since
		rep, err := r.Rewind(id, 0, false)
		if err != nil {
			t.Fatalf("crash before change %d: again: %v", k, err)
		}
		if len(rep.Interrupted) != 1 {
			t.Fatalf("crash before change %d: interrupted %v", k, rep.Interrupted)
		}
		sameTree(t, fmt.Sprintf("crash before change %d, again", k), readTree(t, ws), tree{"a.txt": "a\n", "e/b.txt": "b\n", "e/f/c.txt": "c\n", "g/d.txt": "d\n"})
		want := map[string]fs.FileMode{".": 0o555, "e": 0o555, "e/f": 0o500, "g": 0o750}
		if got := dirModes(t, ws, ".", "e", "e/f", "g"); !maps.Equal(got, want) {
			t.Fatalf("crash before change %d: modes after the rewind again %v, want %v", k, got, want)
		}
	}
}

// A rewind that puts a file back where a tool made a directory tree
// holding a read-only directory of the user's (a/ro, 0555) was refused
// ("cannot restore a: a directory is there now, and cannot write into
// .../a/ro: permission denied"), and so was the undo of a rewind the
// other way (a tree captured, a file now). The tree's read-only
// directories are opened to remove what is in them, as any the rewind
// writes in; the undo makes them again with their modes. A crash at any
// point is undone by the undo, modes included.
func TestRewindSwapsATreeHoldingAReadOnlyDirectory(t *testing.T) {
	if !notRoot(t) {
		return
	}
	treeNow := tree{"a/x.txt": "x\n", "a/ro/y.txt": "y\n", "a/ro/in/z.txt": "z\n", "keep.txt": "k\n"}
	modes := map[string]fs.FileMode{"a": 0o755, "a/ro": 0o555, "a/ro/in": 0o500}
	makeTree := func(t *testing.T, ws string) {
		writeTree(t, ws, treeNow)
		for _, d := range []string{"a/ro/in", "a/ro"} {
			os.Chmod(filepath.Join(ws, d), modes[d])
		}
	}
	removeTree := func(t *testing.T, ws string) {
		for _, d := range []string{"a/ro", "a/ro/in"} {
			os.Chmod(filepath.Join(ws, d), 0o755)
		}
		if err := os.RemoveAll(filepath.Join(ws, "a")); err != nil {
			t.Fatal(err)
		}
	}
	fileNow := tree{"a": "file\n", "keep.txt": "k\n"}
	// A file captured, a tree now; the rewind and its undo. Then a tree
	// captured, a file now: its undo removes the tree.
	for _, fileFirst := range []bool{true, false} {
		r, ws, id := newWorkspace(t)
		chmodBackOnCleanup(t, ws, "a/ro/in", "a/ro")
		var before, after tree
		if fileFirst {
			writeTree(t, ws, fileNow)
			before, after = fileNow, treeNow
		} else {
			makeTree(t, ws)
			before, after = treeNow, fileNow
		}
		if _, _, err := r.CaptureSession(id, []string{"a"}, "swap", DefaultLimits); err != nil {
			t.Fatal(err)
		}
		if fileFirst {
			os.Remove(filepath.Join(ws, "a"))
			makeTree(t, ws)
		} else {
			removeTree(t, ws)
			writeTree(t, ws, fileNow)
		}
		rep, err := r.Rewind(id, 0, false)
		if err != nil {
			t.Fatalf("file first %v: %v", fileFirst, err)
		}
		sameTree(t, "after the rewind", readTree(t, ws), before)
		if !fileFirst {
			if got := dirModes(t, ws, "a", "a/ro", "a/ro/in"); !maps.Equal(got, modes) {
				t.Fatalf("modes after the rewind %v, want %v", got, modes)
			}
		}
		if _, err := r.Rewind(rep.Fork, *rep.BeforeSeq, false); err != nil {
			t.Fatalf("file first %v: undo: %v", fileFirst, err)
		}
		sameTree(t, "after the undo", readTree(t, ws), after)
		if fileFirst {
			if got := dirModes(t, ws, "a", "a/ro", "a/ro/in"); !maps.Equal(got, modes) {
				t.Fatalf("modes after the undo %v, want %v", got, modes)
			}
		}
	}
	// Crashed before each change (the tree's removal is one), then undone.
	for k := 0; k < 2; k++ {
		r, ws, id := newWorkspace(t)
		chmodBackOnCleanup(t, ws, "a/ro/in", "a/ro")
		writeTree(t, ws, fileNow)
		if _, _, err := r.CaptureSession(id, []string{"a", "keep.txt"}, "swap", DefaultLimits); err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(ws, "a"))
		makeTree(t, ws)
		writeTree(t, ws, tree{"keep.txt": "k edited\n"})
		if !crashAt(t, r, id, k) {
			t.Fatalf("the rewind ended before its change %d", k)
		}
		if _, err := r.Rewind(rewindFork(t, r, id), 0, false); err != nil {
			t.Fatalf("crash before change %d: undo: %v", k, err)
		}
		sameTree(t, fmt.Sprintf("crash before change %d, undone", k), readTree(t, ws), tree{"a/x.txt": "x\n", "a/ro/y.txt": "y\n", "a/ro/in/z.txt": "z\n", "keep.txt": "k edited\n"})
		if got := dirModes(t, ws, "a", "a/ro", "a/ro/in"); !maps.Equal(got, modes) {
			t.Fatalf("crash before change %d: modes after the undo %v, want %v", k, got, modes)
		}
	}
}

// A directory of the user's without the owner's search bit (p, 0600)
// above the files a rewind puts back was refused ("p/g.txt cannot be
// read (permission denied)"): nothing under it can be looked at. It is
// opened (u+x) for the duration, as a read-only one is (u+rwx), recorded
// first in the store (rewind-opened.json), and given its mode back at
// the end. After a crash, the next rewind closes it first. At every point
// a crash may come, the undo then leaves p as it was.
func TestRewindOpensADirectoryWithoutItsSearchBit(t *testing.T) {
	if !notRoot(t) {
		return
	}
	captured := tree{"p/q/f.txt": "f\n", "p/g.txt": "g\n", "z.txt": "z\n"}
	edited := tree{"p/q/f.txt": "f edited\n", "p/g.txt": "g edited\n", "z.txt": "z edited\n"}
	setUp := func(t *testing.T) (*Rook, string, eventlog.ID) {
		r, ws, id := newWorkspace(t)
		writeTree(t, ws, captured)
		chmodBackOnCleanup(t, ws, "p")
		if _, _, err := r.CaptureSession(id, []string{"p/q/f.txt", "p/g.txt", "z.txt"}, "edit", DefaultLimits); err != nil {
			t.Fatal(err)
		}
		writeTree(t, ws, edited)
		os.Chmod(filepath.Join(ws, "p"), 0o600)
		return r, ws, id
	}
	pMode := func(t *testing.T, ws string) fs.FileMode {
		fi, err := os.Lstat(filepath.Join(ws, "p"))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode().Perm()
	}
	r, ws, id := setUp(t)
	rep, err := r.Rewind(id, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if m := pMode(t, ws); m != 0o600 {
		t.Fatalf("p is %v after the rewind", m)
	}
	os.Chmod(filepath.Join(ws, "p"), 0o700)
	sameTree(t, "after the rewind", readTree(t, ws), captured)
	os.Chmod(filepath.Join(ws, "p"), 0o600)
	if _, err := r.Rewind(rep.Fork, *rep.BeforeSeq, false); err != nil {
		t.Fatalf("undo: %v", err)
	}
	if m := pMode(t, ws); m != 0o600 {
		t.Fatalf("p is %v after the undo", m)
	}
	if _, err := os.Lstat(filepath.Join(r.home, rewindOpenedFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s is left (%v)", rewindOpenedFile, err)
	}
	for k := 0; k < 3; k++ {
		r, ws, id := setUp(t)
		if !crashAt(t, r, id, k) {
			t.Fatalf("the rewind ended before its change %d", k)
		}
		if m := pMode(t, ws); m&0o100 == 0 {
			t.Fatalf("crash before change %d: p is %v, want it open", k, m)
		}
		if _, err := r.Rewind(rewindFork(t, r, id), 0, false); err != nil {
			t.Fatalf("crash before change %d: undo: %v", k, err)
		}
		if m := pMode(t, ws); m != 0o600 {
			t.Fatalf("crash before change %d: p is %v after the undo", k, m)
		}
		os.Chmod(filepath.Join(ws, "p"), 0o700)
		sameTree(t, fmt.Sprintf("crash before change %d, undone", k), readTree(t, ws), edited)
	}
}

// The workspace itself is opened first and closed last: "-d" sorts
// before "." ('-' before '.'), so it was looked at (and closed) while
// the workspace could not be searched, and the rewind refused.
func TestRewindOpensTheWorkspaceFirstAndClosesItLast(t *testing.T) {
	if !notRoot(t) {
		return
	}
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"-d/f.txt": "f\n"})
	chmodBackOnCleanup(t, ws, ".", "-d")
	if _, _, err := r.CaptureSession(id, []string{"-d/f.txt"}, "edit", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	writeTree(t, ws, tree{"-d/f.txt": "f edited\n"})
	want := map[string]fs.FileMode{".": 0o600, "-d": 0o600}
	os.Chmod(filepath.Join(ws, "-d"), 0o600)
	os.Chmod(ws, 0o600)
	if _, err := r.Rewind(id, 0, false); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(ws)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(ws, 0o700) // to look in it
	got := dirModes(t, ws, "-d")
	got["."] = fi.Mode().Perm()
	if !maps.Equal(got, want) {
		t.Fatalf("modes after the rewind %v, want %v", got, want)
	}
	os.Chmod(filepath.Join(ws, "-d"), 0o700)
	sameTree(t, "after the rewind", readTree(t, ws), tree{"-d/f.txt": "f\n"})
}

// Nested directories without their search bits (p, 0400, and p/q, 0600),
// the files of both put back, then the undo: the undo gave p the mode its
// capture recorded (0400: p was opened to write in too) with the plan's
// modes, and only then closed p/q, which it could no longer reach ("the rewind is done, but giving
// the directory p/q back its mode failed: permission denied"). Apply
// closes them all, deepest first.
func TestRewindClosesNestedDirectoriesWithoutTheirSearchBits(t *testing.T) {
	if !notRoot(t) {
		return
	}
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"p/q/f.txt": "f\n", "p/g.txt": "g\n"})
	chmodBackOnCleanup(t, ws, "p", "p/q")
	if _, _, err := r.CaptureSession(id, []string{"p/q/f.txt", "p/g.txt"}, "edit", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	writeTree(t, ws, tree{"p/q/f.txt": "f edited\n", "p/g.txt": "g edited\n"})
	os.Chmod(filepath.Join(ws, "p", "q"), 0o600)
	os.Chmod(filepath.Join(ws, "p"), 0o400)
	check := func(what string) {
		t.Helper()
		fi, err := os.Lstat(filepath.Join(ws, "p"))
		if err != nil || fi.Mode().Perm() != 0o400 {
			t.Fatalf("%s: p is %v (%v)", what, fi.Mode(), err)
		}
		os.Chmod(filepath.Join(ws, "p"), 0o700)
		defer os.Chmod(filepath.Join(ws, "p"), 0o400)
		if got := dirModes(t, ws, "p/q")["p/q"]; got != 0o600 {
			t.Fatalf("%s: p/q is %v", what, got)
		}
	}
	rep, err := r.Rewind(id, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	check("after the rewind")
	if _, err := r.Rewind(rep.Fork, *rep.BeforeSeq, false); err != nil {
		t.Fatalf("undo: %v", err)
	}
	check("after the undo")
}
