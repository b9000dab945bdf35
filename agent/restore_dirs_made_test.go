package agent

import (
	"os"
	"path/filepath"
	"testing"
)

// A restore --to a directory not there, nor the one above it, makes them
// both (and those the files go in): it counts them all in DirsMade
// ("made N director(ies)", --json dirs_made). It counted only those in
// the root: 1 for new/deep/sub, where it made new, new/deep and sub.
func TestRestoreCountsTheDirectoriesItMadeForTheRoot(t *testing.T) {
	r, ws, _ := newWorkspace(t)
	writeTree(t, ws, tree{"a.txt": "a\n", "sub/b.txt": "b\n"})
	if _, _, err := r.CreateCheckpoint("c", ws, "", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	_, m, err := r.ResolveCheckpoint("c")
	if err != nil {
		t.Fatal(err)
	}
	to := filepath.Join(t.TempDir(), "new", "deep")
	rep, err := r.RestoreCheckpoint("c", m, to)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Dir(to), to, filepath.Join(to, "sub")} {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			t.Fatalf("%s not made: %v", d, err)
		}
	}
	if rep.Written != 2 || rep.DirsMade != 3 {
		t.Fatalf("restore into %s: %d written, %d directories made, want 2 and 3", to, rep.Written, rep.DirsMade)
	}
	// Into the root it made, now there: nothing made.
	os.Remove(filepath.Join(to, "a.txt"))
	if rep, err = r.RestoreCheckpoint("c", m, to); err != nil || rep.Written != 1 || rep.DirsMade != 0 {
		t.Fatalf("restore again: %+v, %v", rep, err)
	}
}
