package agent

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/cas"
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

// A restore that stops at its first file, changed since its save was
// taken (the agent still at work), has written nothing: it names no undo
// and keeps no save. Its error ended "`rook checkpoint restore SAVE` puts
// back what was there", and a user who ran it got the file written back
// as it was before that edit (the older copy the restore itself refused
// to put over the edit), not "what was there".
func TestRestoreStoppedBeforeWritingAnythingNamesNoUndoThatRevertsAnEdit(t *testing.T) {
	r, ws, _ := newWorkspace(t)
	writeTree(t, ws, tree{"a.txt": "captured\n"})
	if _, _, err := r.CreateCheckpoint("c", ws, "", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	writeTree(t, ws, tree{"a.txt": "edited once\n"})
	applyHook = func(point, rel string) {
		if point == hookBetween && rel == "a.txt" {
			os.WriteFile(filepath.Join(ws, "a.txt"), []byte("edited again, after the save\n"), 0o644)
		}
	}
	defer func() { applyHook = nil }()
	_, m, err := r.ResolveCheckpoint("c")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := r.RestoreCheckpoint("c", m, "")
	applyHook = nil
	if err == nil {
		t.Fatal("the restore went over a file changed since its save")
	}
	if got := readTree(t, ws)["a.txt"]; got != "edited again, after the save\n" {
		t.Fatalf("a.txt is %q", got)
	}
	if strings.Contains(err.Error(), "rook checkpoint restore ") {
		t.Fatalf("the restore wrote nothing, and names an undo: %v", err)
	}
	if rep.Saved != "" || !strings.HasSuffix(err.Error(), ": nothing written; no save is kept: there is nothing to undo") {
		t.Fatalf("the restore wrote nothing: saved %q, %v", rep.Saved, err)
	}
	refs, err := r.Checkpoints()
	if err != nil || len(refs) != 1 || refs[0].Name != "c" {
		t.Fatalf("checkpoints after the restore that wrote nothing: %+v, %v, want c alone (its save removed)", refs, err)
	}
}

// A restore that wrote some files, then stopped at one changed since its
// save, names its undo, and says that the undo puts that file back too,
// as it was before the restore, over the edit that stopped it: the user
// decides, knowing it (the undo saves the edit first, as every restore
// saves what it overwrites; the test runs it and finds it there).
func TestRestoreStoppedPartWayAtAnEditSaysItsUndoPutsThatFileBack(t *testing.T) {
	r, ws, _ := newWorkspace(t)
	writeTree(t, ws, tree{"a.txt": "captured a\n", "b.txt": "captured b\n"})
	if _, _, err := r.CreateCheckpoint("c", ws, "", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	writeTree(t, ws, tree{"a.txt": "edited a\n", "b.txt": "edited b\n"})
	applyHook = func(point, rel string) {
		if point == hookBetween && rel == "b.txt" {
			os.WriteFile(filepath.Join(ws, "b.txt"), []byte("edited b again\n"), 0o644)
		}
	}
	defer func() { applyHook = nil }()
	_, m, err := r.ResolveCheckpoint("c")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := r.RestoreCheckpoint("c", m, "")
	applyHook = nil
	if err == nil || rep.Written != 1 {
		t.Fatalf("the restore over b.txt changed since its save: %+v, %v", rep, err)
	}
	want := "; `rook checkpoint restore " + rep.Saved + "` puts back what was there, b.txt too: as it was before this restore, over what was written to it since (that restore saves it first, as it saves whatever it overwrites)"
	if rep.Saved == "" || !strings.HasSuffix(err.Error(), want) {
		t.Fatalf("the error does not say the undo puts b.txt back too:\n%v\nwant it ending %q", err, want)
	}
	_, saved, err := r.ResolveCheckpoint(rep.Saved)
	if err != nil {
		t.Fatal(err)
	}
	undo, err := r.RestoreCheckpoint(rep.Saved, saved, "")
	if err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after the undo", readTree(t, ws), tree{"a.txt": "edited a\n", "b.txt": "edited b\n"})
	_, kept, err := r.ResolveCheckpoint(undo.Saved)
	if err != nil {
		t.Fatal(err)
	}
	if kept.Files["b.txt"].ID != cas.ID([]byte("edited b again\n")) {
		t.Fatalf("the undo's save does not hold the edit it put b.txt's older copy over: %s", kept.Encode())
	}
}
