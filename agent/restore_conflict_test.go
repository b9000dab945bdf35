package agent

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rookhq/rook/eventlog"
)

// A session that captured d/x, then (a tool having replaced the directory
// d by a file) d itself: at 1, d was the directory holding x, which the
// earlier capture says, and the later one does not override
// (settleFileOrDir). The rewind writes d/x back, nothing else at d. It
// was refused ("cannot restore both d and d/x"), and before that the plan
// passed and Apply failed at d/x, half restoring the workspace.
func TestRewindPutsBackADirectoryAToolReplacedByAFile(t *testing.T) {
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"a.txt": "one\n", "d/x": "x\n"})
	before := readTree(t, ws)
	r.Append(id, Entry{Kind: eventlog.KindUser, Body: []byte("go")})
	if _, _, err := r.CaptureSession(id, []string{"a.txt", "d"}, "edit", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("two\n"), 0o644)
	os.RemoveAll(filepath.Join(ws, "d"))
	os.WriteFile(filepath.Join(ws, "d"), []byte("d is a file\n"), 0o644)
	if _, _, err := r.CaptureSession(id, []string{"d"}, "edit", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	for _, gone := range []bool{false, true} {
		if gone {
			// Gone again: nothing on disk is in the way.
			os.RemoveAll(filepath.Join(ws, "d"))
			os.WriteFile(filepath.Join(ws, "a.txt"), []byte("two\n"), 0o644)
		}
		if _, err := r.Rewind(id, 1, false); err != nil {
			t.Fatalf("rewind (d gone: %v): %v", gone, err)
		}
		sameTree(t, "after the rewind", readTree(t, ws), before)
	}
}

// A path captured as absent under one captured as a file (d, and d/new,
// which a tool was about to create once d was a directory): writing d
// leaves nothing at d/new to remove, and removing it must not fail the
// rewind half way.
func TestRewindRemovesNothingUnderAFileItWrote(t *testing.T) {
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"d": "d is a file\n"})
	before := readTree(t, ws)
	if _, _, err := r.CaptureSession(id, []string{"d", "d/new"}, "edit", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(ws, "d")) // the user moved it away, say
	if _, err := r.Rewind(id, 0, false); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after the rewind", readTree(t, ws), before)
}
