package agent

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// A restore writes each file through a temporary file .rook-restore-*.tmp
// next to it; one left behind (the restore killed before its rename) is
// a partial copy of rook's own, not the user's: a capture, of the whole
// tree, of a part of it or of a directory a session names, passes over
// it, as the diff's walk does (a rewind would otherwise write it back).
func TestCaptureSkipsRestoreTemps(t *testing.T) {
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{
		"a.txt":                        "a\n",
		".rook-restore-999999-1.tmp":   "partial",
		"d/b.txt":                      "b\n",
		"d/.rook-restore-999999-2.tmp": "partial",
		"d/.rook-restore-999999.tmp":   "link:b.txt",
		"d/.rook-restore-notes.txt":    "the user's own: not a temp",
	})
	isTemp := func(p string) bool {
		base := p[strings.LastIndex(p, "/")+1:]
		return strings.HasPrefix(base, restoreTmpPrefix) && strings.HasSuffix(base, ".tmp")
	}
	check := func(what string, m *Manifest, want int) {
		t.Helper()
		for p := range m.Files {
			if isTemp(p) {
				t.Errorf("%s holds the restore's temporary file %s (files %v)", what, p, m.Paths())
			}
		}
		if len(m.Files) != want {
			t.Errorf("%s: %d file(s) %v, want %d", what, len(m.Files), m.Paths(), want)
		}
	}
	_, m, err := r.CreateCheckpoint("all", ws, "", DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	check("a whole-tree checkpoint", m, 3)
	_, m, err = r.CreateCheckpoint("part", ws, "d", DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	check("a checkpoint of d", m, 2)
	_, m, err = r.CaptureSession(id, []string{"d"}, "write", DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	check("a session capture of d", m, 2)
}

// setCaptureHook sets captureHook for the test, unset at its end.
func setCaptureHook(t *testing.T, h func(point, rel string)) {
	t.Helper()
	captureHook = h
	t.Cleanup(func() { captureHook = nil })
}

// removeAt returns a capture hook that removes ws/rel (a file, or a
// directory and all it holds) when the capture gets to point at rel.
func removeAt(t *testing.T, ws string, at map[string]string) func(point, rel string) {
	return func(point, rel string) {
		if at[rel] == point {
			if err := os.RemoveAll(filepath.Join(ws, filepath.FromSlash(rel))); err != nil {
				t.Error(err)
			}
		}
	}
}

// A file, link or directory removed while a capture walks the workspace
// (a tool at work, a build's temporary file) is passed over, whether it
// goes between the directory's listing and its Lstat or between that and
// its read: it is not there, and the capture of the rest goes on, where
// it failed with "no such file or directory".
func TestCaptureWalkPassesOverRemoved(t *testing.T) {
	for _, point := range []string{captureListed, captureRead} {
		t.Run(point, func(t *testing.T) {
			r, ws, id := newWorkspace(t)
			writeTree(t, ws, tree{
				"a.txt":     "a\n",
				"gone.txt":  "gone\n",
				"gone.link": "link:a.txt",
				"d/b.txt":   "b\n",
				"d/gone":    "gone\n",
				"e/c.txt":   "c\n",
			})
			at := map[string]string{"gone.txt": point, "gone.link": point, "d/gone": point, "e": point}
			setCaptureHook(t, removeAt(t, ws, at))
			_, m, err := r.CreateCheckpoint("all", ws, "", DefaultLimits)
			if err != nil {
				t.Fatalf("a tree capture: %v", err)
			}
			if got := strings.Join(fileNames(m), " "); got != "a.txt d/b.txt" {
				t.Fatalf("a tree capture holds %s, want a.txt d/b.txt", got)
			}
			if len(m.Absent) != 0 {
				t.Fatalf("a tree capture records as absent %v", m.Absent)
			}
			writeTree(t, ws, tree{"d/gone": "gone\n"})
			_, m, err = r.CaptureSession(id, []string{"d"}, "write", DefaultLimits)
			if err != nil {
				t.Fatalf("a session capture of d: %v", err)
			}
			if got := strings.Join(fileNames(m), " "); got != "d/b.txt" {
				t.Fatalf("a session capture of d holds %s, want d/b.txt", got)
			}
		})
	}
}

// A path a session capture is named, removed after its Lstat, before it
// is read, is recorded as absent, as one not there to begin with is: not
// an error that fails the capture. checkpoint create --path fails instead,
// as it does for a path not there to begin with.
func TestCaptureNamedPathRemovedIsAbsent(t *testing.T) {
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"keep.txt": "k\n", "x.txt": "x\n", "l": "link:keep.txt", "nd/f.txt": "f\n"})
	setCaptureHook(t, removeAt(t, ws, map[string]string{"x.txt": captureRead, "l": captureRead, "nd": captureRead}))
	_, m, err := r.CaptureSession(id, []string{"keep.txt", "x.txt", "l", "nd"}, "write", DefaultLimits)
	if err != nil {
		t.Fatalf("a session capture: %v", err)
	}
	if got := strings.Join(fileNames(m), " "); got != "keep.txt" {
		t.Fatalf("the session capture holds %s, want keep.txt", got)
	}
	if got := strings.Join(m.Absent, " "); got != "l nd x.txt" {
		t.Fatalf("the session capture records as absent %q, want l nd x.txt", got)
	}
	if len(m.Dirs) != 0 {
		t.Fatalf("the session capture takes whole %v", m.Dirs)
	}
	// checkpoint create --path names what to save, and one not there
	// fails it: removed after its Lstat, before it is read, it fails it
	// alike, nothing saved. A checkpoint recording it absent would be
	// one whose restore removes the file.
	for _, sub := range []string{"x.txt", "nd"} {
		writeTree(t, ws, tree{"x.txt": "x\n", "nd/f.txt": "f\n"})
		_, m, err = r.CreateCheckpoint("one", ws, sub, DefaultLimits)
		if err == nil || !strings.Contains(err.Error(), "removed while it was captured") || !strings.Contains(err.Error(), sub) {
			t.Fatalf("checkpoint create --path %s, removed while captured: %v (files %v, absent %v), want it to fail naming it", sub, err, fileNames(m), m.Absent)
		}
		if _, _, err := r.ResolveCheckpoint("one"); err == nil {
			t.Fatalf("checkpoint create --path %s failed, yet the checkpoint was made", sub)
		}
	}
}

// fileNames: the paths m holds files (or links) for, sorted.
func fileNames(m *Manifest) []string {
	var out []string
	for p := range m.Files {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// `rook checkpoint create NAME --path src` (or src/) where src is a link
// to a directory of the workspace is refused, naming the directory to
// give instead, and so is a --path through such a link: a tree capture
// never follows a link, so it recorded the link alone ("1 file(s), 4 B"),
// none of the directory's files, though it followed the link to check it
// (one leading outside was refused); and a path under the link was
// recorded under the link's name, which the restore refused to write
// through. A link to a file is recorded as the link, as before.
func TestCheckpointPathNamingALinkToADirectoryIsRefused(t *testing.T) {
	r, ws, _ := newWorkspace(t)
	writeTree(t, ws, tree{"real/a.txt": "alpha\n", "real/sub/b.txt": "beta\n", "src": "link:real", "self": "link:.", "f": "link:real/a.txt"})
	for _, tc := range []struct{ sub, want string }{
		{"src", "--path src is a link (to real) to a directory of the workspace, and a checkpoint records a link as the link, not the files it leads to: nothing saved; give --path real to capture it"},
		{"src/", "--path src/ is a link (to real) to a directory of the workspace"},
		{"src/sub", "--path src/sub runs through the link src (to real), which a checkpoint does not follow (its restore would refuse to write through it): nothing saved; give --path real/sub to capture it"},
		{"self", "nothing saved; leave --path out (or give --path .) to capture the whole workspace"},
	} {
		_, m, err := r.CreateCheckpoint("c", ws, tc.sub, DefaultLimits)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--path %s (through a link to a directory): %v (manifest %v), want %q", tc.sub, err, m, tc.want)
		}
	}
	if _, err := os.Lstat(r.checkpointPath("c")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a refused --path left the checkpoint c: %v", err)
	}
	_, m, err := r.CreateCheckpoint("c", ws, "f", DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := m.Files["f"]; len(m.Files) != 1 || !ok || !f.Mode.Link {
		t.Fatalf("--path f (a link to a file): %s, want the link", m.Encode())
	}
	_, m, err = r.CreateCheckpoint("c", ws, "real", DefaultLimits)
	if err != nil || len(m.Files) != 2 {
		t.Fatalf("--path real: %v, %v", err, m.Paths())
	}
}

// `--path .` captures the whole workspace, and so does any --path that is
// the workspace itself: ./ and $PWD (with a slash after it or not). They
// were refused: "./ is the workspace itself: name files or directories
// inside it", which did not say that `.` (or no --path) captures it.
func TestCheckpointPathOfTheWorkspaceItselfIsTheWholeWorkspace(t *testing.T) {
	r, ws, _ := newWorkspace(t)
	writeTree(t, ws, tree{"a.txt": "a\n", "d/b.txt": "b\n"})
	_, whole, err := r.CreateCheckpoint("dot", ws, ".", DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	real, err := filepath.EvalSymlinks(ws)
	if err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"./", ws, ws + "/", real, "d/.."} {
		_, m, err := r.CreateCheckpoint("c", ws, sub, DefaultLimits)
		if err != nil {
			t.Errorf("--path %s: %v (--path . captured the %d file(s) of the workspace)", sub, err, len(whole.Files))
			continue
		}
		if len(m.Files) != len(whole.Files) {
			t.Errorf("--path %s captured %d file(s), --path . %d", sub, len(m.Files), len(whole.Files))
		}
	}
}
