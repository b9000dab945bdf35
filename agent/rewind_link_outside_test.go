package agent

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The session captured a/b/x.txt and z.txt; a was made, since, a link
// that reaches no directory. Leading to nothing or to a file in the
// workspace, the rewind replaces the link (its undo holds it) and puts
// a/b/x.txt and z.txt back. So too the same link leading outside the
// workspace, to nothing there or to a file there: removing the link
// writes nothing outside, and nothing is written through it. It refused
// the whole rewind ("a/b/x.txt leads to ..., outside the workspace ...:
// refused"), z.txt not put back either, not saying what to do. The undo
// puts the link back as it was (its target's text) and z.txt as the
// agent left it, and the file outside is never touched.
func TestRewindReplacesALinkOutsideThatReachesNoDirectory(t *testing.T) {
	for _, target := range []string{"../gone", "/nonexistent-rook-link-target/dir", "../out.txt", "gone", "in.txt"} {
		t.Run(target, func(t *testing.T) {
			r, ws, id := newWorkspace(t)
			writeTree(t, ws, tree{"z.txt": "z0\n", "a/b/x.txt": "x0\n", "in.txt": "in\n"})
			if err := os.WriteFile(filepath.Join(ws, "..", "out.txt"), []byte("outside\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, _, err := r.CaptureSession(id, []string{"z.txt", "a/b/x.txt"}, "edit", DefaultLimits); err != nil {
				t.Fatal(err)
			}
			if err := os.RemoveAll(filepath.Join(ws, "a")); err != nil {
				t.Fatal(err)
			}
			writeTree(t, ws, tree{"z.txt": "z1\n", "a": "link:" + target})
			rep, err := r.Rewind(id, 0, false)
			if err != nil {
				t.Fatalf("rewind: %v\nwant it to go as it does for the same link in the workspace (a link to nothing, or to a file, replaced): the link is the workspace's own, and nothing is written through it", err)
			}
			if got := readFileT(t, filepath.Join(ws, "z.txt")); got != "z0\n" {
				t.Fatalf("z.txt: %q", got)
			}
			if got := readFileT(t, filepath.Join(ws, "a", "b", "x.txt")); got != "x0\n" {
				t.Fatalf("a/b/x.txt: %q", got)
			}
			if fi, err := os.Lstat(filepath.Join(ws, "a")); err != nil || !fi.IsDir() {
				t.Fatalf("a after the rewind: %v, %v; want the directory made in the link's place", fi, err)
			}
			if got := readFileT(t, filepath.Join(ws, "..", "out.txt")); got != "outside\n" {
				t.Fatalf("../out.txt: %q", got)
			}
			if _, err := os.Lstat(filepath.Join(ws, "..", "gone")); !os.IsNotExist(err) {
				t.Fatalf("../gone after the rewind: %v; want nothing made outside", err)
			}

			// The undo: the link back, its target's text as it was.
			if rep.BeforeSeq == nil {
				t.Fatalf("report %+v: no undo", rep)
			}
			if _, err := r.Rewind(rep.Fork, *rep.BeforeSeq, false); err != nil {
				t.Fatalf("undo: %v", err)
			}
			if got, err := os.Readlink(filepath.Join(ws, "a")); err != nil || got != target {
				t.Fatalf("a after the undo: %q, %v; want the link to %q back", got, err, target)
			}
			if got := readFileT(t, filepath.Join(ws, "z.txt")); got != "z1\n" {
				t.Fatalf("z.txt after the undo: %q", got)
			}
			if got := readFileT(t, filepath.Join(ws, "..", "out.txt")); got != "outside\n" {
				t.Fatalf("../out.txt after the undo: %q", got)
			}
			if got := readFileT(t, filepath.Join(ws, "in.txt")); got != "in\n" {
				t.Fatalf("in.txt after the undo: %q", got)
			}
		})
	}
}

// A path the rewind removes (captured absent) under a link that leads
// outside the workspace to nothing: nothing is there to remove, and
// nothing is removed through the link; the rest is put back, the link
// left as it is.
func TestRewindRemovesNothingUnderALinkOutsideToNothing(t *testing.T) {
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"z.txt": "z0\n"})
	if _, _, err := r.CaptureSession(id, []string{"z.txt", "a/b/x.txt"}, "edit", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	writeTree(t, ws, tree{"z.txt": "z1\n", "a": "link:../gone"})
	if _, err := r.Rewind(id, 0, false); err != nil {
		t.Fatalf("rewind: %v", err)
	}
	if got := readFileT(t, filepath.Join(ws, "z.txt")); got != "z0\n" {
		t.Fatalf("z.txt: %q", got)
	}
	if got, err := os.Readlink(filepath.Join(ws, "a")); err != nil || got != "../gone" {
		t.Fatalf("a: %q, %v; want the link left", got, err)
	}
}

// A link leading outside the workspace to a directory is never written
// through: the rewind is refused, nothing changed, and the refusal says
// what to do (remove the link, or move it out of the way; where the
// capture had a directory, put it back).
func TestRewindRefusesALinkOutsideToADirectory(t *testing.T) {
	for _, whole := range []bool{false, true} {
		name := "file captured"
		if whole {
			name = "directory captured"
		}
		t.Run(name, func(t *testing.T) {
			r, ws, id := newWorkspace(t)
			writeTree(t, ws, tree{"z.txt": "z0\n", "a/b/x.txt": "x0\n"})
			out := filepath.Join(ws, "..", "outdir")
			writeTree(t, out, tree{"b/x.txt": "outside\n"})
			paths := []string{"z.txt", "a/b/x.txt"}
			if whole {
				paths = []string{"z.txt", "a"}
			}
			if _, _, err := r.CaptureSession(id, paths, "edit", DefaultLimits); err != nil {
				t.Fatal(err)
			}
			if err := os.RemoveAll(filepath.Join(ws, "a")); err != nil {
				t.Fatal(err)
			}
			writeTree(t, ws, tree{"z.txt": "z1\n", "a": "link:../outdir"})
			_, err := r.Rewind(id, 0, false)
			want := []string{"cannot restore a/b", ": a is a link now (to ../outdir)", "outside the workspace", "rook does not write through it; remove the link (or ", "run this again", "nothing changed"}
			if whole {
				want = append(want, "where the capture had a directory", "put the directory back")
			} else {
				want = append(want, "move it out of the way")
			}
			for _, w := range want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Fatalf("rewind: %v\nwant a refusal saying %q", err, w)
				}
			}
			if got := readFileT(t, filepath.Join(ws, "z.txt")); got != "z1\n" {
				t.Fatalf("z.txt after the refusal: %q", got)
			}
			if got := readFileT(t, filepath.Join(out, "b", "x.txt")); got != "outside\n" {
				t.Fatalf("the file outside: %q", got)
			}
			if got, err := os.Readlink(filepath.Join(ws, "a")); err != nil || got != "../outdir" {
				t.Fatalf("a: %q, %v", got, err)
			}
		})
	}
}

// A restore into the workspace where a file of the checkpoint is now a
// link leading outside it (to a file not there yet, and to one there)
// replaces the link, writing nothing outside, and restoring the save puts
// the links back.
func TestRestoreOverALinkLeadingOutsideWritesNothingThere(t *testing.T) {
	r, ws, _ := newWorkspace(t)
	out := t.TempDir()
	writeTree(t, ws, tree{"a.txt": "captured a\n", "b.txt": "captured b\n"})
	if _, _, err := r.CreateCheckpoint("c", ws, "", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(ws, "a.txt"))
	os.Remove(filepath.Join(ws, "b.txt"))
	os.WriteFile(filepath.Join(out, "there.txt"), []byte("outside\n"), 0o644)
	writeTree(t, ws, tree{"a.txt": "link:" + filepath.Join(out, "none.txt"), "b.txt": "link:" + filepath.Join(out, "there.txt")})
	_, m, err := r.ResolveCheckpoint("c")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := r.RestoreCheckpoint("c", m, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(out, "none.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the restore wrote through a link, outside the workspace: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "there.txt")); string(b) != "outside\n" {
		t.Fatalf("the restore wrote through a link, outside the workspace: %q", b)
	}
	if got := readTree(t, ws); got["a.txt"] != "captured a\n" || got["b.txt"] != "captured b\n" {
		t.Fatalf("after the restore: %v", got)
	}
	_, saved, err := r.ResolveCheckpoint(rep.Saved)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.RestoreCheckpoint(rep.Saved, saved, ""); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a.txt", "b.txt"} {
		if fi, err := os.Lstat(filepath.Join(ws, n)); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Fatalf("restoring the save did not put the link %s back: %v", n, err)
		}
	}
}
