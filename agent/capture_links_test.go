package agent

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/eventlog"
)

// captureAsTyped appends a capture of paths to session id recording each
// as named, through links too, as a rook before linkFree did.
func captureAsTyped(t *testing.T, r *Rook, ws string, id eventlog.ID, paths ...string) {
	t.Helper()
	c, err := r.newCapturer(ws, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if err := c.addPath(p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Append(id, Entry{Kind: eventlog.KindCheckpoint, Label: "edit", Body: c.m.Encode()}); err != nil {
		t.Fatal(err)
	}
}

// A session capture of a path through a link to a directory of the
// workspace records the file by the path git names it by: lnk/f is
// real/f. It recorded lnk/f, and a rewind wrote the file twice, then
// stopped at its own write ("changed since the rewind captured it").
func TestCaptureThroughALinkRecordsTheRealPath(t *testing.T) {
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"real/f": "f0\n"})
	if err := os.Symlink("real", filepath.Join(ws, "lnk")); err != nil {
		t.Skip(err)
	}
	_, m, err := r.CaptureSession(id, []string{"lnk/f", "lnk"}, "edit", DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Files["real/f"]; !ok || len(m.Files) != 2 || !m.Files["lnk"].Mode.Link {
		t.Fatalf("captured %v, want real/f and the link lnk", m.Files)
	}
}

// Captures an older rook recorded through a link (lnk/f, lnk leading to
// real) are merged by the path they reach when read: one file, its
// earliest state the baseline, so diff shows it once and a rewind writes
// it once, as it was at the point.
func TestStatesRecordedThroughALinkAreOneFile(t *testing.T) {
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"real/f": "f0\n"})
	if err := os.Symlink("real", filepath.Join(ws, "lnk")); err != nil {
		t.Skip(err)
	}
	if _, err := r.Append(id, Entry{Kind: eventlog.KindUser, Body: []byte("edit f")}); err != nil {
		t.Fatal(err)
	}
	captureAsTyped(t, r, ws, id, "real/f")
	writeTree(t, ws, tree{"real/f": "f1\n"})
	captureAsTyped(t, r, ws, id, "lnk/f")
	writeTree(t, ws, tree{"real/f": "f2\n"})

	d, err := r.Diff(id, io.Discard, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Files) != 1 || d.Files[0].Path != "real/f" || d.Added != 1 || d.Removed != 1 {
		t.Fatalf("diff: %+v, want real/f alone, +1 -1", d.Files)
	}
	if _, err := r.Rewind(id, 1, false); err != nil {
		t.Fatal(err)
	}
	if got := readTree(t, ws)["real/f"]; got != "f0\n" {
		t.Fatalf("real/f after the rewind to 1: %q, want f0", got)
	}
}

// A directory the capture had (lnk, a path captured under it) that a tool
// replaces by a link to a directory of the workspace while a rewind
// writes: the rewind's plan was made with lnk a directory, and its writes
// under lnk after the swap would land in real/. Each change is checked
// again as it is applied: the rewind stops at lnk/b, saying lnk is a link
// now, and real/b, never captured (its bytes those the rewind saved of
// lnk/b, so nothing else tells them apart), is not written.
func TestRewindStopsAtALinkPutWhereACapturedDirectoryWas(t *testing.T) {
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"lnk/a": "a0\n", "lnk/b": "b0\n", "real/b": "b1\n"})
	if _, _, err := r.CaptureSession(id, []string{"lnk/a", "lnk/b"}, "edit", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	writeTree(t, ws, tree{"lnk/a": "a1\n", "lnk/b": "b1\n"})
	swapped := false
	applyHook = func(point, rel string) {
		if point != hookBetween || rel != "lnk/b" || swapped {
			return
		}
		swapped = true
		if err := os.Rename(filepath.Join(ws, "lnk"), filepath.Join(ws, "old")); err != nil {
			t.Error(err)
		}
		if err := os.Symlink("real", filepath.Join(ws, "lnk")); err != nil {
			t.Error(err)
		}
	}
	_, err := r.Rewind(id, 0, false)
	applyHook = nil
	if !swapped {
		t.Skip("lnk/b was not reached")
	}
	if err == nil || !strings.Contains(err.Error(), "lnk is a link now (to real) where the capture had a directory") {
		t.Fatalf("rewind: %v, want it stopped at the link", err)
	}
	if got := readFileT(t, filepath.Join(ws, "real", "b")); got != "b1\n" {
		t.Fatalf("real/b after the rewind: %q, want it untouched", got)
	}
}
