package agent

import (
	"os"
	"path/filepath"
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
