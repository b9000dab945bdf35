package agent

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A restore that changes only a file's mode, or puts a link back where a
// file with the link's target as its bytes is now, overwrites something:
// it saves it first, so restoring the save undoes it. Comparing contents
// alone saved neither, and the chmod or the file was lost for good.
func TestRestoreSavesAModeOrTypeItChanges(t *testing.T) {
	r, ws, _ := newWorkspace(t)
	writeTree(t, ws, tree{"run.sh": "mode:0755:#!/bin/sh\n", "ln": "link:target"})
	if _, _, err := r.CreateCheckpoint("c", ws, "", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(ws, "run.sh"), 0o644)
	os.Remove(filepath.Join(ws, "ln"))
	os.WriteFile(filepath.Join(ws, "ln"), []byte("target"), 0o644)
	edited := readTree(t, ws)
	_, m, err := r.ResolveCheckpoint("c")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := r.RestoreCheckpoint("c", m, "")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Saved == "" {
		t.Fatalf("restore changed a mode and replaced a file, and saved nothing: %+v", rep)
	}
	_, saved, err := r.ResolveCheckpoint(rep.Saved)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.RestoreCheckpoint(rep.Saved, saved, ""); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after restoring the save", readTree(t, ws), edited)
}

// A restore that fails part way (here: a file it cannot replace, which
// the plan does not see) says which checkpoint holds what it had already
// overwritten, as a rewind names its undo: the error said only what
// failed, and the saved files were found only by listing checkpoints.
func TestRestoreFailingPartWayNamesTheSave(t *testing.T) {
	r, ws, _ := newWorkspace(t)
	writeTree(t, ws, tree{"a.txt": "one\n", "z/b.txt": "one\n"})
	if _, _, err := r.CreateCheckpoint("c", ws, "", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	writeTree(t, ws, tree{"a.txt": "two\n", "z/b.txt": "two\n"})
	stuck := filepath.Join(ws, "z/b.txt")
	if err := exec.Command("chattr", "+i", stuck).Run(); err != nil {
		t.Skipf("needs chattr +i (root, a file system that has it): %v", err)
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", stuck).Run() })
	_, m, err := r.ResolveCheckpoint("c")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := r.RestoreCheckpoint("c", m, "")
	if err == nil {
		t.Fatal("the restore replaced an immutable file")
	}
	if rep.Saved == "" || !strings.Contains(err.Error(), "rook checkpoint restore "+rep.Saved) {
		t.Fatalf("the error does not name the save %q: %v", rep.Saved, err)
	}
}
