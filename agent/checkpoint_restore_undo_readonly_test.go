package agent

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// A checkpoint restore that makes again a directory the checkpoint holds
// in dir_modes (a sticky or setgid one without the owner's write bit:
// 1555) makes it with the owner's bits on: its save's restore, the undo
// rook names ("restoring that checkpoint puts it all back"), must remove
// the file it wrote in it. Made read-only, the undo was refused.
func TestRestoreUndoInAReadOnlySpecialDirectory(t *testing.T) {
	if !notRoot(t) {
		return
	}
	r, ws, _ := newWorkspace(t)
	t.Cleanup(func() { os.Chmod(filepath.Join(ws, "ro"), 0o755) })
	writeTree(t, ws, tree{"ro/a.txt": "a\n", "b.txt": "b\n"})
	if err := os.Chmod(filepath.Join(ws, "ro"), 0o555|fs.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(ws, "ro")); fi.Mode()&fs.ModeSticky == 0 {
		t.Skip("no sticky bit kept")
	}
	if _, _, err := r.CreateCheckpoint("c", ws, "", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	// The user removes ro (opening it first) and edits b.txt.
	os.Chmod(filepath.Join(ws, "ro"), 0o755)
	if err := os.RemoveAll(filepath.Join(ws, "ro")); err != nil {
		t.Fatal(err)
	}
	writeTree(t, ws, tree{"b.txt": "edited\n"})
	restoreAndUndo(t, r, ws, "c", "c")
}

// The same through a session capture's snapshot restored by id (`rook
// checkpoint restore ID`): RestoreCheckpoint makes a directory of its
// dirs with its dir_modes mode (a read-only 0555 one, no special bit
// needed), the owner's bits on; made read-only, the save's restore, its
// undo, could not remove the file the restore wrote in it.
func TestRestoreUndoInAReadOnlyDirectoryOfASessionCapture(t *testing.T) {
	if !notRoot(t) {
		return
	}
	r, ws, id := newWorkspace(t)
	t.Cleanup(func() { os.Chmod(filepath.Join(ws, "ro"), 0o755) })
	writeTree(t, ws, tree{"ro/a.txt": "a\n", "b.txt": "b\n"})
	os.Chmod(filepath.Join(ws, "ro"), 0o555)
	seq, _, err := r.CaptureSession(id, []string{"ro", "b.txt"}, "edit", DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := r.Log.Read(id, seq, 1)
	if err != nil || len(evs) != 1 {
		t.Fatalf("read the capture: %v", err)
	}
	snap := evs[0].Body
	os.Chmod(filepath.Join(ws, "ro"), 0o755)
	if err := os.RemoveAll(filepath.Join(ws, "ro")); err != nil {
		t.Fatal(err)
	}
	writeTree(t, ws, tree{"b.txt": "edited\n"})
	restoreAndUndo(t, r, ws, fmt.Sprintf("%x", snap), "capture")
}

// restoreAndUndo restores checkpoint ref (named name) into ws, where
// b.txt was edited since and ro made again, then restores its save, the
// undo rook names: ws is back as it was, ro gone.
func restoreAndUndo(t *testing.T, r *Rook, ws, ref, name string) {
	t.Helper()
	_, m, err := r.ResolveCheckpoint(ref)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := r.RestoreCheckpoint(name, m, "")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Saved == "" {
		t.Fatalf("no save: %+v", rep)
	}
	fi, _ := os.Stat(filepath.Join(ws, "ro"))
	t.Logf("ro made %v; the save %s", fi.Mode(), rep.Saved)
	_, saved, err := r.ResolveCheckpoint(rep.Saved)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.RestoreCheckpoint(rep.Saved, saved, ""); err != nil {
		t.Fatalf("the undo rook names (restore %s) fails: %v", rep.Saved, err)
	}
	sameTree(t, "after the undo", readTree(t, ws), tree{"b.txt": "edited\n"})
}
