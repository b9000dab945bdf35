package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/eventlog"
)

// A session that captured d/x, then (a tool having replaced the directory
// d by a file) d itself, asks a rewind to write d as a file and d/x under
// it. The plan must refuse that before anything is written: it passed,
// and Apply wrote some files and failed at d/x, half restoring the
// workspace.
func TestRewindRefusesAFileThatIsAlsoADirectoryBeforeWriting(t *testing.T) {
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"a.txt": "one\n", "d/x": "x\n"})
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
	os.Remove(filepath.Join(ws, "d")) // gone again: nothing on disk is in the way
	before := readTree(t, ws)
	_, err := r.Rewind(id, 1, false)
	if err == nil || !strings.Contains(err.Error(), "nothing changed") {
		t.Fatalf("rewind: %v, want a refusal with nothing changed", err)
	}
	sameTree(t, "after the refused rewind", readTree(t, ws), before)
	if got := readTree(t, ws); len(got) != len(before) {
		t.Fatalf("after the refused rewind: %v, want %v", got, before)
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
