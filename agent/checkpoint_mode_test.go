package agent

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
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

// A file written after a restore saved what it overwrites, and before the
// restore gets to it, is left as it is, and the restore stops there,
// saying so: it used to be overwritten, and the before-restore checkpoint
// held only the older copy (or none, for a file the restore made or one
// already as the checkpoint held it), so what was written was lost.
func TestRestoreKeepsAFileChangedSinceItsSave(t *testing.T) {
	for _, tc := range []struct {
		name, path string
	}{
		{"written over", "a.go"},    // differs: saved, then overwritten
		{"made again", "gone.go"},   // absent: saved as absent, then made
		{"as checkpointed", "u.go"}, // unchanged: neither saved nor written
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := vfs.NewMem()
			r := testRook(t, fsys)
			ws := t.TempDir()
			writeTree(t, ws, tree{"a.go": "package a // one\n", "gone.go": "package gone\n", "u.go": "package u\n"})
			if _, _, err := r.CreateCheckpoint("c", ws, "", DefaultLimits); err != nil {
				t.Fatal(err)
			}
			writeTree(t, ws, tree{"a.go": "package a // two\n"})
			os.Remove(filepath.Join(ws, "gone.go"))
			_, m, err := r.ResolveCheckpoint("c")
			if err != nil {
				t.Fatal(err)
			}
			// Written once the restore has saved what it overwrites: when
			// it syncs that save, before any file is written.
			since := "package " + strings.TrimSuffix(tc.path, ".go") + " // written since the save\n"
			fsys.SetHook(func(op vfs.Op, _ string) error {
				if op == vfs.OpSync {
					writeTree(t, ws, tree{tc.path: since})
				}
				return nil
			})
			rep, err := r.RestoreCheckpoint("c", m, "")
			fsys.SetHook(nil)
			if err == nil || !strings.Contains(err.Error(), tc.path+" changed since the restore saved it in "+rep.Saved) {
				t.Fatalf("restore over %s written since its save: %v", tc.path, err)
			}
			if got := readTree(t, ws)[tc.path]; got != since {
				t.Fatalf("%s is %q, want what was written since, %q", tc.path, got, since)
			}
		})
	}
}
