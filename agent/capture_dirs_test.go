package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
)

func diffStatuses(t *testing.T, r *Rook, id eventlog.ID) map[string]string {
	t.Helper()
	d, err := r.Diff(id, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range d.Files {
		got[f.Path] = f.Status
	}
	return got
}

func sameStatuses(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: diff %v, want %v", what, got, want)
	}
	for p, s := range want {
		if got[p] != s {
			t.Fatalf("%s: diff %s: %q, want %q (all: %v)", what, p, got[p], s, got)
		}
	}
}

// A capture of a directory is of the directory as it was: files a tool
// adds to it later, in it or in a new sub-directory, are added in the
// diff, and a rewind to before removes them (and the directories made for
// them), which its undo puts back. What .gitignore ignores, and what is
// outside the directory, is left alone.
func TestCaptureOfDirectorySeesAddedFiles(t *testing.T) {
	r, ws, id := newWorkspace(t)
	before := tree{
		".gitignore":     "*.log\n",
		"d/a.txt":        "a\n",
		"d/old/b.txt":    "b\n",
		"outside.txt":    "not captured\n",
		"other/keep.txt": "not captured either\n",
	}
	writeTree(t, ws, before)
	os.MkdirAll(filepath.Join(ws, "d", "empty"), 0o755)
	r.Append(id, Entry{Kind: eventlog.KindUser, Body: []byte("please edit")})
	_, m, err := r.CaptureSession(id, []string{"d"}, "edit", DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"d", "d/empty", "d/old"}; !slices.Equal(m.Dirs, want) {
		t.Fatalf("dirs %v, want %v", m.Dirs, want)
	}
	writeTree(t, ws, tree{
		"d/a.txt":           "a, edited\n",
		"d/new.txt":         "new\n",
		"d/sub/deep/x.txt":  "in a new directory\n",
		"d/old/c.txt":       "in an old one\n",
		"d/empty/e.txt":     "in an empty one\n",
		"d/run.log":         "ignored, added all the same\n",
		"outside-added.txt": "not under d\n",
		"other/new.txt":     "not under d\n",
	})
	after := readTree(t, ws)

	// What .gitignore ignores is added too: the capture of d applied no
	// .gitignore, and the search for what was added passes over only what
	// it passed over.
	sameStatuses(t, "diff", diffStatuses(t, r, id), map[string]string{
		"d/a.txt": "modified", "d/new.txt": "added", "d/sub/deep/x.txt": "added",
		"d/old/c.txt": "added", "d/empty/e.txt": "added", "d/run.log": "added",
	})

	rep, err := r.Rewind(id, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	if rep.FilesRestored != 1 || rep.FilesRemoved != 5 {
		t.Fatalf("report %+v", rep)
	}
	want := tree{}
	for p, c := range after {
		want[p] = c
	}
	for _, p := range []string{"d/new.txt", "d/sub/deep/x.txt", "d/old/c.txt", "d/empty/e.txt", "d/run.log"} {
		delete(want, p)
	}
	want["d/a.txt"] = "a\n"
	sameTree(t, "after rewind", readTree(t, ws), want)
	// The directories made for the added files are gone; the ones that
	// were there (empty or not) stay.
	for _, d := range []string{"d/sub", "d/sub/deep"} {
		if _, err := os.Lstat(filepath.Join(ws, d)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s is still there after the rewind (%v)", d, err)
		}
	}
	for _, d := range []string{"d/empty", "d/old", "d"} {
		if fi, err := os.Stat(filepath.Join(ws, d)); err != nil || !fi.IsDir() {
			t.Fatalf("%s is gone after the rewind (%v)", d, err)
		}
	}
	sameStatuses(t, "diff after rewind", diffStatuses(t, r, id), map[string]string{})

	if _, err := r.Rewind(rep.Fork, *rep.BeforeSeq, false); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after undo", readTree(t, ws), after)
}

// A file a later capture names, added under a directory captured whole
// before, was not there before: the earlier capture of the directory is
// its baseline.
func TestCaptureOfDirectoryIsTheBaselineOfFilesCapturedLater(t *testing.T) {
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"d/a.txt": "a\n"})
	if _, _, err := r.CaptureSession(id, []string{"d"}, "mkdir", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	writeTree(t, ws, tree{"d/n/new.txt": "first\n"})
	if _, _, err := r.CaptureSession(id, []string{"d/n/new.txt"}, "edit", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	writeTree(t, ws, tree{"d/n/new.txt": "second\n"})
	sameStatuses(t, "diff", diffStatuses(t, r, id), map[string]string{"d/n/new.txt": "added"})
	rep, err := r.Rewind(id, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after rewind", readTree(t, ws), tree{"d/a.txt": "a\n"})
	if _, err := os.Lstat(filepath.Join(ws, "d", "n")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("d/n is still there after the rewind (%v)", err)
	}
	// A rewind to after the capture of the directory puts back the file
	// as the later capture holds it.
	if _, err := r.Rewind(rep.Fork, *rep.BeforeSeq, false); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Rewind(id, 1, false); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after rewind to 1", readTree(t, ws), tree{"d/a.txt": "a\n", "d/n/new.txt": "first\n"})
}

// A captured directory replaced by a link to another directory of the
// workspace: nothing in that directory is taken as added (the link is, in
// d's place), and a rewind removes nothing there.
func TestCapturedDirectoryReplacedByALinkRemovesNothingThrough(t *testing.T) {
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"d/a.txt": "a\n", "other/x.txt": "x\n"})
	if _, _, err := r.CaptureSession(id, []string{"d"}, "edit", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(ws, "d"))
	if err := os.Symlink("other", filepath.Join(ws, "d")); err != nil {
		t.Skip(err)
	}
	// The link is added in d's place, and d/a.txt is gone: nothing is
	// seen through the link.
	sameStatuses(t, "diff", diffStatuses(t, r, id), map[string]string{"d": "added", "d/a.txt": "removed"})
	r.Rewind(id, 0, false) // it may refuse: it must not remove other/x.txt
	if b, err := os.ReadFile(filepath.Join(ws, "other", "x.txt")); err != nil || string(b) != "x\n" {
		t.Fatalf("other/x.txt: %q, %v", b, err)
	}
}

// A path captured absent, then made a directory with a file captured in
// it (d/x.txt), that is a link now (to other, holding an x.txt): a
// rewind to before removes the link, and nothing through it; other/x.txt
// stays. It refused ("d is a link now ... where the capture had a
// directory"), telling the user to remove the link: the very removal the
// rewind is to make. The undo puts the link back.
func TestRewindRemovesALinkAtAPathCapturedAbsent(t *testing.T) {
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"other/x.txt": "x\n"})
	if _, _, err := r.CaptureSession(id, []string{"d"}, "edit", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	writeTree(t, ws, tree{"d/x.txt": "mine\n"})
	if _, _, err := r.CaptureSession(id, []string{"d/x.txt"}, "edit", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(ws, "d"))
	if err := os.Symlink("other", filepath.Join(ws, "d")); err != nil {
		t.Skip(err)
	}
	rep, err := r.Rewind(id, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after rewind", readTree(t, ws), tree{"other/x.txt": "x\n"})
	if rep.FilesRemoved != 1 || strings.Join(rep.Paths, " ") != "d" {
		t.Fatalf("%d removed, paths %q: want the link d alone", rep.FilesRemoved, rep.Paths)
	}
	if _, err := r.Rewind(rep.Fork, *rep.BeforeSeq, false); err != nil {
		t.Fatalf("undo: %v", err)
	}
	sameTree(t, "after the undo", readTree(t, ws), tree{"d": "link:other", "other/x.txt": "x\n"})
}

// A captured directory replaced by a link leading outside the workspace:
// the diff shows the type change as for a link inside (nothing is read
// through it), rather than refuse to compare the files d held.
func TestCapturedDirectoryReplacedByALinkOutsideDiffs(t *testing.T) {
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"d/a.txt": "a\n"})
	if _, _, err := r.CaptureSession(id, []string{"d"}, "edit", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	writeTree(t, outside, tree{"a.txt": "outside\n"})
	os.RemoveAll(filepath.Join(ws, "d"))
	if err := os.Symlink(outside, filepath.Join(ws, "d")); err != nil {
		t.Skip(err)
	}
	sameStatuses(t, "diff", diffStatuses(t, r, id), map[string]string{"d": "added", "d/a.txt": "removed"})
}

// A named pipe compared just before the files under a link in place of a
// captured directory does not make them read as named pipes too.
func TestCapturedDirectoryReplacedByALinkAfterAPipe(t *testing.T) {
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"d/a.txt": "a\n", "d-p": "p\n", "other/x.txt": "x\n"})
	if _, _, err := r.CaptureSession(id, []string{"d", "d-p"}, "edit", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(ws, "d-p"))
	if err := syscall.Mkfifo(filepath.Join(ws, "d-p"), 0o600); err != nil {
		t.Skip(err)
	}
	os.RemoveAll(filepath.Join(ws, "d"))
	if err := os.Symlink("other", filepath.Join(ws, "d")); err != nil {
		t.Skip(err)
	}
	sameStatuses(t, "diff", diffStatuses(t, r, id), map[string]string{"d": "added", "d-p": "modified", "d/a.txt": "removed"})
}

// A manifest written before version 2 (testdata: a capture of directory d
// holding d/a.txt and d/sub/b.txt) reads, encodes to the same bytes, and
// behaves as it did: a file added under d is not seen, nor removed.
func TestManifestVersion1OfADirectoryBehavesAsBefore(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "manifest_v1_dir.json"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := DecodeManifest(raw)
	if err != nil {
		t.Fatal(err)
	}
	if m.V != 1 || m.Dirs != nil || len(m.Files) != 2 {
		t.Fatalf("decoded %+v", m)
	}
	if got := m.Encode(); !bytes.Equal(got, raw) {
		t.Fatalf("re-encoded as\n%s\nnot\n%s", got, raw)
	}

	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"d/a.txt": "old a\n", "d/sub/b.txt": "old b\n"})
	for _, s := range []string{"old a\n", "old b\n"} {
		if _, err := r.Store.Put(cas.KindFile, []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	root, _ := json.Marshal(ws)
	body := bytes.Replace(raw, []byte(`"/ROOT"`), root, 1)
	if _, err := r.Append(id, Entry{Kind: eventlog.KindCheckpoint, Label: "edit", Body: body}); err != nil {
		t.Fatal(err)
	}
	writeTree(t, ws, tree{"d/a.txt": "new a\n", "d/added.txt": "added\n"})
	sameStatuses(t, "diff", diffStatuses(t, r, id), map[string]string{"d/a.txt": "modified"})
	rep, err := r.Rewind(id, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if rep.FilesRestored != 1 || rep.FilesRemoved != 0 {
		t.Fatalf("report %+v", rep)
	}
	sameTree(t, "after rewind", readTree(t, ws), tree{"d/a.txt": "old a\n", "d/sub/b.txt": "old b\n", "d/added.txt": "added\n"})
}

func TestManifestDirsAreVersionedAndChecked(t *testing.T) {
	const files = `"files":{"d/a":{"id":"2b806e7d75371072494f629b7fe1a565","size":6,"mode":"0644"}}`
	for _, c := range []struct{ text, err string }{
		{`{"v":1,"root":"/w",` + files + `,"dirs":["d"]}`, `version 1 has no "dirs"`},
		{`{"v":7,"root":"/w",` + files + `,"dirs":["d"]}`, "version 7 (this rook reads up to 6; upgrade rook?)"},
		// No version: no rook wrote it, and no upgrade reads it.
		{`{}`, `no version ("v" 1 to 6): not a manifest as rook writes one`},
		{`{"v":0,"root":"/w",` + files + `}`, `no version ("v" 1 to 6)`},
		{`{"v":-1,"root":"/w",` + files + `}`, `no version ("v" 1 to 6)`},
		{`{"v":4,"root":"/w",` + files + `,"unknown":["e"]}`, `version 4 has no "unknown"`},
		{`{"v":5,"root":"/w",` + files + `,"unknown":["d/a"]}`, `"d/a" is both unknown and captured`},
		{`{"v":5,"root":"/w",` + files + `,"absent":["e"],"unknown":["e"]}`, `"e" is both unknown and captured, absent`},
		{`{"v":5,"root":"/w",` + files + `,"dirs":["e"],"unknown":["e"]}`, `"e" is both unknown and captured, absent or a captured directory`},
		{`{"v":5,"root":"/w",` + files + `,"unknown":["e/../../f"]}`, "not clean"},
		{`{"v":3,"root":"/w",` + files + `,"opened":{"d":"0555"}}`, `version 3 has no "opened"`},
		{`{"v":4,"root":"/w",` + files + `,"dirs":["d"],"opened":{"d":"0555"}}`, `"opened" names "d", which is in "dirs"`},
		{`{"v":4,"root":"/w",` + files + `,"opened":{"../e":"0555"}}`, "leaves the workspace"},
		{`{"v":4,"root":"/w",` + files + `,"opened":{"e":"link"}}`, `has the mode "link"`},
		{`{"v":2,"root":"/w",` + files + `,"dirs":["d"],"dir_modes":{"d":"0700"}}`, `version 2 has no "dir_modes"`},
		{`{"v":3,"root":"/w",` + files + `,"dirs":["d"],"dir_modes":{"e":"0700"}}`, `names "e", which is not in "dirs"`},
		{`{"v":3,"root":"/w",` + files + `,"dir_modes":{"d":"0700"}}`, `names "d", which is not in "dirs"`},
		{`{"v":3,"root":"/w",` + files + `,"dirs":["d"],"dir_modes":{"d":"link"}}`, `has the mode "link"`},
		{`{"v":3,"root":"/w",` + files + `,"dirs":["d"],"dir_modes":{"d":"755"}}`, `four octal digits`},
		// Read as a prefix, these were 0007, 0000 and 0755.
		{`{"v":3,"root":"/w",` + files + `,"dirs":["d"],"dir_modes":{"d":"07zz"}}`, `four octal digits`},
		{`{"v":3,"root":"/w",` + files + `,"dirs":["d"],"dir_modes":{"d":"0o75"}}`, `four octal digits`},
		{`{"v":3,"root":"/w",` + files + `,"dirs":["d"],"dir_modes":{"d":" 755"}}`, `four octal digits`},
		{`{"v":1,"root":"/w","files":{"d/a":{"id":"2b806e7d75371072494f629b7fe1a565","size":6,"mode":"06 4"}}}`, `four octal digits`},
		{`{"v":2,"root":"/w",` + files + `,"dirs":["../d"]}`, "leaves the workspace"},
		{`{"v":2,"root":"/w",` + files + `,"dirs":["d/a"]}`, "both a captured directory and a file"},
		{`{"v":2,"root":"/w",` + files + `,"absent":["e"],"dirs":["e"]}`, "both a captured directory and a file or absent"},
	} {
		if _, err := DecodeManifest([]byte(c.text)); err == nil || !errors.Is(err, ErrBadManifest) || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: %v, want %q", c.text, err, c.err)
		}
	}
	m, err := DecodeManifest([]byte(`{"v":2,"root":"/w",` + files + `,"dirs":["d"]}`))
	if err != nil || !slices.Equal(m.Dirs, []string{"d"}) {
		t.Fatalf("%+v, %v", m, err)
	}
	// Named twice, a directory is recorded once; with dirs a manifest is
	// version 2, without them version 1.
	m.Dirs = []string{"d", "d"}
	if b := m.Encode(); !bytes.Contains(b, []byte(`"v":2,`)) || !bytes.Contains(b, []byte(`"dirs":["d"]`)) {
		t.Fatalf("encoded %s", b)
	}
	// With the directories' modes, version 3; it reads back the same.
	m.DirModes = map[string]FileMode{"d": {Perm: 0o700}}
	b := m.Encode()
	if !bytes.Contains(b, []byte(`"v":3,`)) || !bytes.Contains(b, []byte(`"dir_modes":{"d":"0700"}`)) {
		t.Fatalf("encoded %s", b)
	}
	if again, err := DecodeManifest(b); err != nil || again.DirModes["d"] != (FileMode{Perm: 0o700}) {
		t.Fatalf("%+v, %v", again, err)
	}
	// With the modes of directories a rewind opens, version 4 ("." the
	// workspace itself).
	m.Opened = map[string]FileMode{".": {Perm: 0o555}, "e": {Perm: 0o500}}
	b = m.Encode()
	if !bytes.Contains(b, []byte(`"v":4,`)) || !bytes.Contains(b, []byte(`"opened":{".":"0555","e":"0500"}`)) {
		t.Fatalf("encoded %s", b)
	}
	if again, err := DecodeManifest(b); err != nil || !maps.Equal(again.Opened, m.Opened) {
		t.Fatalf("%+v, %v", again, err)
	}
	// With paths whose state it lost, version 5, sorted, each once.
	m.Unknown = []string{"x", "g", "x"}
	b = m.Encode()
	if !bytes.Contains(b, []byte(`"v":5,`)) || !bytes.Contains(b, []byte(`"unknown":["g","x"]`)) {
		t.Fatalf("encoded %s", b)
	}
	if again, err := DecodeManifest(b); err != nil || !slices.Equal(again.Unknown, []string{"g", "x"}) {
		t.Fatalf("%+v, %v", again, err)
	}
	m.Dirs, m.DirModes, m.Opened, m.Unknown = nil, nil, nil, nil
	if b := m.Encode(); !bytes.Contains(b, []byte(`"v":1,`)) || bytes.Contains(b, []byte("dirs")) || bytes.Contains(b, []byte("opened")) {
		t.Fatalf("encoded %s", b)
	}
}

// A path captured absent that a tool makes a directory (a directory moved
// there, or made and filled): its files are added in the diff, and a
// rewind to before removes them and the directory (it used to refuse: "a
// directory is there now"), which the undo puts back. An empty directory
// made goes too (it used to stay), and the undo makes it again, with its
// mode.
func TestAbsentPathMadeADirectory(t *testing.T) {
	r, ws, id := newWorkspace(t)
	before := tree{"src/a.txt": "a\n", "src/in/b.txt": "b\n", "d/keep.txt": "k\n"}
	writeTree(t, ws, before)
	// A move of src to dst: both captured first.
	if _, m, err := r.CaptureSession(id, []string{"src", "dst", "d"}, "move", DefaultLimits); err != nil {
		t.Fatal(err)
	} else if !slices.Equal(m.Absent, []string{"dst"}) {
		t.Fatalf("absent %v", m.Absent)
	}
	if err := os.Rename(filepath.Join(ws, "src"), filepath.Join(ws, "dst")); err != nil {
		t.Fatal(err)
	}
	// And a new, empty directory under d.
	os.MkdirAll(filepath.Join(ws, "d", "made", "empty"), 0o755)
	os.Chmod(filepath.Join(ws, "d", "made"), 0o700)
	after := readTree(t, ws)
	sameStatuses(t, "diff", diffStatuses(t, r, id), map[string]string{
		"src/a.txt": "removed", "src/in/b.txt": "removed", "dst/a.txt": "added", "dst/in/b.txt": "added",
	})
	rep, err := r.Rewind(id, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after rewind", readTree(t, ws), before)
	if _, err := os.Lstat(filepath.Join(ws, "dst")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("dst is still there after the rewind (%v)", err)
	}
	if _, err := os.Lstat(filepath.Join(ws, "d", "made")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("d/made is still there after the rewind (%v)", err)
	}
	if _, err := r.Rewind(rep.Fork, *rep.BeforeSeq, false); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after undo", readTree(t, ws), after)
	if fi, err := os.Stat(filepath.Join(ws, "d", "made", "empty")); err != nil || !fi.IsDir() {
		t.Fatalf("the undo did not make d/made/empty again (%v)", err)
	}
	if fi, err := os.Stat(filepath.Join(ws, "d", "made")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the undo made d/made again as %v (%v), not 0700", fi.Mode(), err)
	}

	// A capture of only an absent path (version 2: absent says nothing was
	// under it) that a tool fills as a directory, with an ignored file in
	// it: the ignored file goes too (nothing was there), and the directory
	// with it. It stayed, as what .gitignore ignores, though the session
	// capture applies no .gitignore.
	r, ws, id = newWorkspace(t)
	writeTree(t, ws, tree{".gitignore": "*.log\n"})
	_, m, err := r.CaptureSession(id, []string{"out"}, "mkdir", DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if b := m.Encode(); !bytes.Contains(b, []byte(`"v":2,`)) || bytes.Contains(b, []byte("dirs")) {
		t.Fatalf("encoded %s", b)
	}
	writeTree(t, ws, tree{"out/x.txt": "x\n", "out/sub/y.txt": "y\n", "out/run.log": "log\n"})
	sameStatuses(t, "diff", diffStatuses(t, r, id), map[string]string{"out/x.txt": "added", "out/sub/y.txt": "added", "out/run.log": "added"})
	if _, err := r.Rewind(id, 0, false); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after rewind", readTree(t, ws), tree{".gitignore": "*.log\n"})
	if _, err := os.Lstat(filepath.Join(ws, "out")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("out is still there after the rewind (%v)", err)
	}
}

// A path captured absent by a manifest of version 1 (testdata: "out",
// bytes as a rook before version 2 wrote them) that a tool made a
// directory behaves as before: the diff does not see it, and a rewind
// refuses, changing nothing.
func TestManifestVersion1AbsentMadeADirectoryBehavesAsBefore(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "manifest_v1_absent.json"))
	if err != nil {
		t.Fatal(err)
	}
	r, ws, id := newWorkspace(t)
	root, _ := json.Marshal(ws)
	body := bytes.Replace(raw, []byte(`"/ROOT"`), root, 1)
	if _, err := r.Append(id, Entry{Kind: eventlog.KindCheckpoint, Label: "edit", Body: body}); err != nil {
		t.Fatal(err)
	}
	writeTree(t, ws, tree{"out/x.txt": "x\n"})
	sameStatuses(t, "diff", diffStatuses(t, r, id), map[string]string{})
	if _, err := r.Rewind(id, 0, false); err == nil || !strings.Contains(err.Error(), "cannot remove out: a directory is there now") {
		t.Fatalf("rewind: %v", err)
	}
	sameTree(t, "after the refused rewind", readTree(t, ws), tree{"out/x.txt": "x\n"})
}

// A directory under one captured whole that cannot be read does not stop
// the diff: it shows the other changes and names the directory. A rewind,
// which could not find what was added there to remove it, refuses before
// writing anything.
func TestUnreadableDirUnderCapturedDir(t *testing.T) {
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"d/a.txt": "a\n"})
	if _, _, err := r.CaptureSession(id, []string{"d"}, "edit", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	writeTree(t, ws, tree{"d/a.txt": "edited\n", "d/new.txt": "new\n", "d/x/hidden.txt": "unseen\n"})
	// chmod 000 does not stop root: the directory is made unreadable by
	// readDir.
	locked, err := filepath.EvalSymlinks(filepath.Join(ws, "d", "x"))
	if err != nil {
		t.Fatal(err)
	}
	osReadDir := readDir
	t.Cleanup(func() { readDir = osReadDir })
	readDir = func(dir string) ([]os.DirEntry, error) {
		if dir == locked {
			return nil, &os.PathError{Op: "open", Path: dir, Err: os.ErrPermission}
		}
		return osReadDir(dir)
	}

	d, err := r.Diff(id, nil, false)
	if err != nil {
		t.Fatalf("diff: %v", err)
	}
	got := map[string]string{}
	for _, f := range d.Files {
		got[f.Path] = f.Status
	}
	sameStatuses(t, "diff", got, map[string]string{"d/a.txt": "modified", "d/new.txt": "added"})
	if len(d.Unreadable) != 1 || d.Unreadable[0].Path != "d/x" || d.Unreadable[0].Error != "permission denied" {
		t.Fatalf("unreadable %+v, want d/x: permission denied", d.Unreadable)
	}
	b, _ := json.Marshal(d)
	if !bytes.Contains(b, []byte(`"unreadable":[{"path":"d/x","error":"permission denied"}]`)) {
		t.Fatalf("json %s does not name d/x", b)
	}

	_, err = r.Rewind(id, 0, false)
	if err == nil || !strings.Contains(err.Error(), "d/x cannot be read (permission denied)") || !strings.HasSuffix(err.Error(), "nothing changed") {
		t.Fatalf("rewind: %v, want a refusal naming d/x", err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "d", "a.txt")); string(b) != "edited\n" {
		t.Fatalf("rewind refused but wrote d/a.txt: %q", b)
	}
	if _, err := os.Stat(filepath.Join(ws, "d", "new.txt")); err != nil {
		t.Fatalf("rewind refused but removed d/new.txt: %v", err)
	}
	ids, _ := r.Log.IDs()
	if len(ids) != 1 {
		t.Fatalf("a refused rewind made a fork: %v", ids)
	}
}

// A file added under a directory captured whole whose name a manifest
// cannot hold (bytes that are not UTF-8, a backslash) is named by the
// diff and left, and named, by a rewind: neither passes it over silently.
func TestUnrecordableNamesAddedUnderCapturedDir(t *testing.T) {
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"d/a.txt": "a\n"})
	if _, _, err := r.CaptureSession(id, []string{"d"}, "edit", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	writeTree(t, ws, tree{"d/new.txt": "new\n", "d/\xff.txt": "latin-1\n", "d/b\\c/x.txt": "under a backslash\n"})
	d, err := r.Diff(id, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`"d/\xff.txt"`, `"d/b\\c"`}
	slices.Sort(want)
	got := slices.Sorted(slices.Values(d.Unrecordable))
	if !slices.Equal(got, want) {
		t.Fatalf("diff unrecordable %q, want %q", got, want)
	}
	if len(d.Files) != 1 || d.Files[0].Path != "d/new.txt" {
		t.Fatalf("diff files %+v, want d/new.txt added", d.Files)
	}
	rep, err := r.Rewind(id, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(slices.Values(rep.Unrecordable)); !slices.Equal(got, want) {
		t.Fatalf("rewind unrecordable %q, want %q", got, want)
	}
	for _, p := range []string{"d/\xff.txt", "d/b\\c/x.txt"} {
		if _, err := os.Stat(filepath.Join(ws, p)); err != nil {
			t.Fatalf("rewind removed %q: %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(ws, "d/new.txt")); !os.IsNotExist(err) {
		t.Fatalf("rewind left d/new.txt: %v", err)
	}
}

// A rewind that writes a file where a tool made a directory removes only
// what its capture of the disk before it holds: a file added to the tree
// since that capture stops it there, and stays, as does the directory
// holding it. Without that capture it removes nothing.
func TestRewindSwapRemovesOnlyTheSavedTree(t *testing.T) {
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"a": "file a\n"})
	if _, _, err := r.CaptureSession(id, []string{"a"}, "edit", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(ws, "a"))
	writeTree(t, ws, tree{"a/x": "x\n", "a/sub/y": "y\n"})
	st, err := r.firstCaptures(id, 0)
	if err != nil {
		t.Fatal(err)
	}
	var changes []Change
	for _, c := range st.First {
		changes = append(changes, c)
	}
	plan, err := r.planRestore(ws, changes, st.wasDir, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := plan.Apply(); err == nil || !strings.Contains(err.Error(), "was not saved before") {
		t.Fatalf("apply without the capture before: %v", err)
	}
	sameTree(t, "unsaved", readTree(t, ws), tree{"a/x": "x\n", "a/sub/y": "y\n"})

	saved, err := r.CapturePaths(ws, []string{"a"}, "before", DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	plan.saved = saved
	writeTree(t, ws, tree{"a/sub/late": "added after the capture\n"})
	if _, _, _, err := plan.Apply(); err == nil || !strings.Contains(err.Error(), "remove the directory a/sub") {
		t.Fatalf("apply with a file added since: %v", err)
	}
	sameTree(t, "added since", readTree(t, ws), tree{"a/sub/late": "added after the capture\n"})

	os.Remove(filepath.Join(ws, "a", "sub", "late"))
	if _, _, _, err := plan.Apply(); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "applied", readTree(t, ws), tree{"a": "file a\n"})
}

// A rewind that swaps a file and a directory back removes a file only as
// its capture of the disk before it holds it: one written since (the
// agent still at work) stops it, and keeps what was written.
func TestRewindSwapKeepsAFileChangedSinceTheSave(t *testing.T) {
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"a": "file a\n", "d/f": "f\n"})
	if _, _, err := r.CaptureSession(id, []string{"a", "d"}, "edit", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(ws, "a"))
	os.RemoveAll(filepath.Join(ws, "d"))
	writeTree(t, ws, tree{"a/x": "x\n", "d": "file d\n"})
	st, err := r.firstCaptures(id, 0)
	if err != nil {
		t.Fatal(err)
	}
	var changes []Change
	for _, c := range st.First {
		changes = append(changes, c)
	}
	plan, err := r.planRestore(ws, changes, st.wasDir, true)
	if err != nil {
		t.Fatal(err)
	}
	if plan.saved, err = r.CapturePaths(ws, []string{"a", "d"}, "before", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	writeTree(t, ws, tree{"a/x": "x written since\n", "d": "file d written since\n"})
	if _, _, _, err := plan.Apply(); err == nil || !strings.Contains(err.Error(), "changed since the rewind captured it") {
		t.Fatalf("apply over files written since: %v", err)
	}
	sameTree(t, "written since", readTree(t, ws), tree{"a/x": "x written since\n", "d": "file d written since\n"})
	// a/x as saved: the tree goes, and the file in d's way stops it.
	writeTree(t, ws, tree{"a/x": "x\n"})
	if _, _, _, err := plan.Apply(); err == nil || !strings.Contains(err.Error(), "d changed since the rewind captured it") {
		t.Fatalf("apply over d written since: %v", err)
	}
	sameTree(t, "d written since", readTree(t, ws), tree{"a": "file a\n", "d": "file d written since\n"})
}

// dirModes reads the modes of the workspace directories named.
func dirModes(t *testing.T, ws string, dirs ...string) map[string]fs.FileMode {
	t.Helper()
	out := map[string]fs.FileMode{}
	for _, d := range dirs {
		fi, err := os.Lstat(filepath.Join(ws, d))
		if err != nil || !fi.IsDir() {
			t.Fatalf("%s is not a directory (%v)", d, err)
		}
		out[d] = fi.Mode().Perm()
	}
	return out
}

// A rewind makes the directories of a directory captured whole again with
// their modes (it made them 0755 whatever they had been), and an empty
// one too (it made none: no file it writes is in it), a read-only one
// given its mode once the files are in it. Its undo removes them all
// again, empty ones included (an empty one used to stay, and so did d).
func TestRewindMakesDirectoriesAgainWithTheirModes(t *testing.T) {
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"d/a.txt": "a\n", "d/sub/b.txt": "b\n", "d/ro/c.txt": "c\n", "keep.txt": "k\n"})
	os.Mkdir(filepath.Join(ws, "d", "empty"), 0o755)
	want := map[string]fs.FileMode{"d": 0o700, "d/sub": 0o750, "d/empty": 0o711, "d/ro": 0o555}
	for d, m := range want {
		os.Chmod(filepath.Join(ws, d), m)
	}
	before := readTree(t, ws)
	if _, m, err := r.CaptureSession(id, []string{"d"}, "rm", DefaultLimits); err != nil {
		t.Fatal(err)
	} else if m.DirModes["d/empty"] != (FileMode{Perm: 0o711}) || !bytes.Contains(m.Encode(), []byte(`"v":3,`)) {
		t.Fatalf("captured %s", m.Encode())
	}
	os.Chmod(filepath.Join(ws, "d", "ro"), 0o755)
	if err := os.RemoveAll(filepath.Join(ws, "d")); err != nil {
		t.Fatal(err)
	}
	rep, err := r.Rewind(id, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after rewind", readTree(t, ws), before)
	got := dirModes(t, ws, "d", "d/sub", "d/empty", "d/ro")
	if !maps.Equal(got, want) {
		t.Fatalf("modes after the rewind %v, want %v", got, want)
	}
	if _, err := r.Rewind(rep.Fork, *rep.BeforeSeq, false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(ws, "d")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("d is still there after the undo (%v)", err)
	}
	sameTree(t, "after undo", readTree(t, ws), tree{"keep.txt": "k\n"})
}

// An empty directory captured whole that a tool made a file: the diff
// shows the file added (it showed nothing), a rewind removes it and makes
// the directory again (it left the file), and its undo puts the file back
// (it used to refuse to replace the empty directory: "the rewind's undo
// could not make it again").
func TestEmptyCapturedDirectoryMadeAFile(t *testing.T) {
	r, ws, id := newWorkspace(t)
	os.Mkdir(filepath.Join(ws, "e"), 0o700)
	if _, _, err := r.CaptureSession(id, []string{"e"}, "write", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(ws, "e"))
	writeTree(t, ws, tree{"e": "f\n"})
	sameStatuses(t, "diff", diffStatuses(t, r, id), map[string]string{"e": "added"})
	rep, err := r.Rewind(id, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := dirModes(t, ws, "e"); got["e"] != 0o700 {
		t.Fatalf("e made again %v, want 0700", got["e"])
	}
	sameStatuses(t, "diff after rewind", diffStatuses(t, r, id), map[string]string{})
	if _, err := r.Rewind(rep.Fork, *rep.BeforeSeq, false); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after undo", readTree(t, ws), tree{"e": "f\n"})
}

// A directory captured whole that is still there, chmodded since, gets its
// captured mode back from a rewind, as a file does (it kept the new mode:
// only the directories a rewind made got theirs), deepest first; the undo
// gives it the mode it had before the rewind, and the files in it are
// left as they are both ways.
func TestRewindGivesAnExistingDirectoryItsCapturedMode(t *testing.T) {
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"d/a.txt": "a\n", "d/sub/b.txt": "b\n"})
	os.Chmod(filepath.Join(ws, "d"), 0o755)
	os.Chmod(filepath.Join(ws, "d", "sub"), 0o750)
	if _, _, err := r.CaptureSession(id, []string{"d"}, "chmod", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(ws, "d", "sub"), 0o700)
	os.Chmod(filepath.Join(ws, "d"), 0o711)
	before := readTree(t, ws)
	rep, err := r.Rewind(id, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]fs.FileMode{"d": 0o755, "d/sub": 0o750}
	if got := dirModes(t, ws, "d", "d/sub"); !maps.Equal(got, want) {
		t.Fatalf("modes after the rewind %v, want %v", got, want)
	}
	sameTree(t, "after rewind", readTree(t, ws), before)
	if rep.FilesRestored != 0 || rep.FilesRemoved != 0 || rep.DirsMade != 0 || rep.BeforeSeq == nil {
		t.Fatalf("rewind report %+v", rep)
	}
	if _, err := r.Rewind(rep.Fork, *rep.BeforeSeq, false); err != nil {
		t.Fatal(err)
	}
	want = map[string]fs.FileMode{"d": 0o711, "d/sub": 0o700}
	if got := dirModes(t, ws, "d", "d/sub"); !maps.Equal(got, want) {
		t.Fatalf("modes after the undo %v, want %v", got, want)
	}
	sameTree(t, "after undo", readTree(t, ws), before)
}

// A named pipe in a directory whose mode a rewind puts back does not stop
// the rewind: it is not replaced, so its undo needs no copy of it.
func TestRewindGivesADirectoryWithAPipeItsMode(t *testing.T) {
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"d/a.txt": "a\n"})
	if _, _, err := r.CaptureSession(id, []string{"d"}, "chmod", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(ws, "d", "pipe"), 0o644); err != nil {
		t.Skip(err)
	}
	mode := dirModes(t, ws, "d")["d"]
	os.Chmod(filepath.Join(ws, "d"), 0o700)
	if _, err := r.Rewind(id, 0, false); err != nil {
		t.Fatal(err)
	}
	if got := dirModes(t, ws, "d")["d"]; got != mode {
		t.Fatalf("d is %v after the rewind, want %v", got, mode)
	}
	if fi, err := os.Lstat(filepath.Join(ws, "d", "pipe")); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
		t.Fatalf("the pipe is gone (%v)", err)
	}
}

// A crash while a rewind writes the files of directories it makes leaves
// each with its captured mode: they were made 0700 and given their modes
// only once every file was written, so a crash (or a user who never ran
// the undo) left them 0700. A read-only one is made with the owner's bits
// added, and given its mode as soon as its last file is in.
func TestRewindMakesDirectoriesWithTheirModesAtEveryPoint(t *testing.T) {
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"d/a.txt": "a\n", "d/sub/b.txt": "b\n", "d/ro/c.txt": "c\n", "d/ro/c2.txt": "c2\n", "d/z.txt": "z\n"})
	want := map[string]fs.FileMode{"d": 0o750, "d/sub": 0o711, "d/ro": 0o555}
	for _, d := range []string{"d/ro", "d/sub", "d"} {
		os.Chmod(filepath.Join(ws, d), want[d])
	}
	// d/ro is 0555 at the end, its files in it: the TempDir's removal
	// failed for a user not root ("unlinkat d/ro/c2.txt: permission denied").
	t.Cleanup(func() { os.Chmod(filepath.Join(ws, "d", "ro"), 0o755) })
	if _, _, err := r.CaptureSession(id, []string{"d"}, "rm", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(ws, "d", "ro"), 0o755)
	if err := os.RemoveAll(filepath.Join(ws, "d")); err != nil {
		t.Fatal(err)
	}
	points := 0
	check := func(next string) {
		points++
		for d, m := range want {
			fi, err := os.Lstat(filepath.Join(ws, d))
			if err != nil {
				continue // not made yet
			}
			got := fi.Mode().Perm()
			if m&0o700 != 0o700 && strings.HasPrefix(next, d+"/") {
				m |= 0o700 // files still to go in it
			}
			if got != m {
				t.Errorf("before %q: %s is %v, want %v", next, d, got, m)
			}
		}
	}
	applyHook = func(point, rel string) { check(rel) }
	_, err := r.Rewind(id, 0, false)
	applyHook = nil
	if err != nil {
		t.Fatal(err)
	}
	check("")
	if points < 5 {
		t.Fatalf("%d point(s) checked", points)
	}
}

// A directory's setuid, setgid and sticky bits are captured with its mode
// (dir_modes' first digit) and given back by a rewind: a sticky tmp
// directory in the workspace was made again 0777, anyone able to remove
// anyone's files in it, and a setgid one lost the bit that gives its
// files its group.
func TestRewindGivesBackADirectorysSpecialBits(t *testing.T) {
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"d/tmp/a.txt": "a\n", "d/g/b.txt": "b\n"})
	want := map[string]fs.FileMode{"d/tmp": 0o777 | fs.ModeSticky, "d/g": 0o750 | fs.ModeSetgid}
	for d, m := range want {
		if err := os.Chmod(filepath.Join(ws, d), m); err != nil {
			t.Fatal(err)
		}
	}
	modes := func() map[string]fs.FileMode {
		out := map[string]fs.FileMode{}
		for d := range want {
			fi, err := os.Lstat(filepath.Join(ws, d))
			if err != nil {
				t.Fatal(err)
			}
			out[d] = fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
		}
		return out
	}
	if got := modes(); !maps.Equal(got, want) {
		t.Skipf("this file system does not keep the bits: %v", got)
	}
	_, m, err := r.CaptureSession(id, []string{"d"}, "rm", DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if enc := m.Encode(); !bytes.Contains(enc, []byte(`"d/g":"2750"`)) || !bytes.Contains(enc, []byte(`"d/tmp":"1777"`)) {
		t.Fatalf("captured %s", enc)
	}
	if again, err := DecodeManifest(m.Encode()); err != nil || !maps.Equal(again.DirModes, m.DirModes) {
		t.Fatalf("decoded %v (%v), want %v", again.DirModes, err, m.DirModes)
	}
	// d/tmp removed (the rewind makes it again), d/g chmodded (it gives
	// the mode back).
	if err := os.RemoveAll(filepath.Join(ws, "d", "tmp")); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(ws, "d", "g"), 0o750)
	if _, err := r.Rewind(id, 0, false); err != nil {
		t.Fatal(err)
	}
	if got := modes(); !maps.Equal(got, want) {
		t.Fatalf("modes after the rewind %v, want %v", got, want)
	}
}

// A captured mode without the special bits (every one a rook wrote before
// they were recorded, whatever they were) leaves those a directory has:
// a setgid bit it has from its parent, made or still there, is kept, not
// taken off by giving it "0755".
func TestRewindKeepsSpecialBitsACaptureDoesNotSay(t *testing.T) {
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"d/a.txt": "a\n", "e/b.txt": "b\n"})
	const bits = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky
	for _, d := range []string{"d", "e"} {
		os.Chmod(filepath.Join(ws, d), 0o750|fs.ModeSetgid)
	}
	mode := func(d string) fs.FileMode {
		fi, err := os.Lstat(filepath.Join(ws, d))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode() & bits
	}
	if mode("d") != 0o750|fs.ModeSetgid {
		t.Skip("this file system does not keep the setgid bit")
	}
	os.Chmod(ws, 0o755|fs.ModeSetgid) // e, made again, has it from ws
	// As an older rook captured them: "0750".
	m, err := r.CapturePaths(ws, []string{"d", "e"}, "old", DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	m.DirModes["d"], m.DirModes["e"] = FileMode{Perm: 0o750}, FileMode{Perm: 0o750}
	if _, err := r.Append(id, Entry{Kind: eventlog.KindCheckpoint, Label: "old", Body: m.Encode()}); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(ws, "e"))
	if _, err := r.Rewind(id, 0, false); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"d", "e"} {
		if got := mode(d); got != 0o750|fs.ModeSetgid {
			t.Errorf("%s is %v after the rewind, want %v", d, got, 0o750|fs.ModeSetgid)
		}
	}
}

// A read-only directory a rewind makes keeps the owner's bits until its
// last file is in, though a sibling whose name sorts between it and its
// files ("d/ro.txt" between "d/ro" and "d/ro/c.txt": '.' and '-' come
// before '/') is written in between: it was given 0555 at that sibling,
// and its files were then refused (permission denied), the rewind
// stopping part way.
func TestRewindKeepsAMadeDirectoryWritableAcrossASiblingBetween(t *testing.T) {
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"d/ro/c.txt": "c\n", "d/ro.txt": "dot\n", "d/ro-x.txt": "dash\n"})
	os.Chmod(filepath.Join(ws, "d", "ro"), 0o555)
	t.Cleanup(func() { os.Chmod(filepath.Join(ws, "d", "ro"), 0o755) }) // removable by a user not root
	if _, _, err := r.CaptureSession(id, []string{"d"}, "rm", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(ws, "d", "ro"), 0o755)
	if err := os.RemoveAll(filepath.Join(ws, "d")); err != nil {
		t.Fatal(err)
	}
	seen := false
	applyHook = func(point, rel string) {
		if point != hookBetween || !strings.HasPrefix(rel, "d/ro/") {
			return
		}
		seen = true
		if fi, err := os.Lstat(filepath.Join(ws, "d", "ro")); err == nil && fi.Mode().Perm()&0o700 != 0o700 {
			t.Errorf("before %s: d/ro is %v, its files still to go in", rel, fi.Mode().Perm())
		}
	}
	_, err := r.Rewind(id, 0, false)
	applyHook = nil
	if err != nil {
		t.Fatal(err)
	}
	if !seen {
		t.Fatal("d/ro/c.txt was not written")
	}
	if got := readTree(t, ws); got["d/ro/c.txt"] != "c\n" || got["d/ro.txt"] != "dot\n" || got["d/ro-x.txt"] != "dash\n" {
		t.Fatalf("after the rewind: %v", got)
	}
	if fi, err := os.Lstat(filepath.Join(ws, "d", "ro")); err != nil || fi.Mode().Perm() != 0o555 {
		t.Fatalf("d/ro after the rewind: %v (%v)", fi.Mode(), err)
	}
}

// `rook session capture last web` of a directory
// holding web/dist (a bundler's output) takes web/dist whole: its files
// are captured and `--json` lists it in "dirs" (captured whole). README:
// "a directory as it was: files added to it since are added (diff),
// removed (rewind)". Yet the walk that looked for added files
// (capture_dirs.go: addedWalker.walk) passed over every directory named
// node_modules, build, dist, target, .venv, __pycache__ by name, and what
// a .gitignore ignores, as a tree checkpoint does, though the session
// capture (capture.go: capturer.walk with tree=false) did not pass it
// over. So a file a tool added in web/dist was in no diff and a rewind
// left it, while the
// rewind does put web/dist/app.js back: the user gets the old bundle next
// to the new chunk it never had (a mixed directory), and `session diff`
// never shows the chunk.
// The user saw: diff `~ web/dist/app.js`, `+ web/new.html`, no
// web/dist/chunk-1.js; after the rewind, web/dist/chunk-1.js still there.
// Now: the search for added files passes over what the capture of the
// directory passes over and nothing more (capturePassesOver), so
// web/dist/chunk-1.js is added in the diff, and removed by the rewind, as
// web/new.html is.
func TestCaptureOfDirectoryTakesAddedFilesInItsDistDir(t *testing.T) {
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{
		"web/index.html":  "i\n",
		"web/dist/app.js": "old bundle\n",
	})
	r.Append(id, Entry{Kind: eventlog.KindUser, Body: []byte("rebuild")})
	_, m, err := r.CaptureSession(id, []string{"web"}, "build", DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Files["web/dist/app.js"]; !ok {
		t.Fatalf("the capture did not take web/dist/app.js: %v", m.Files)
	}
	writeTree(t, ws, tree{
		"web/dist/app.js":     "new bundle\n",
		"web/dist/chunk-1.js": "chunk\n",
		"web/new.html":        "new\n",
	})
	got := diffStatuses(t, r, id)
	if got["web/dist/chunk-1.js"] != "added" {
		t.Errorf("diff %v: web/dist/chunk-1.js, added in web/dist (captured whole: dirs %v), is not in it", got, m.Dirs)
	}
	if _, err := r.Rewind(id, 1, false); err != nil {
		t.Fatal(err)
	}
	after := readTree(t, ws)
	if after["web/dist/app.js"] != "old bundle\n" {
		t.Fatalf("web/dist/app.js not put back: %q", after["web/dist/app.js"])
	}
	if _, ok := after["web/new.html"]; ok {
		t.Fatalf("web/new.html, added since the capture, still there")
	}
	if _, ok := after["web/dist/chunk-1.js"]; ok {
		t.Errorf("after the rewind web/dist/chunk-1.js (added since the capture of web, dist captured whole with it) is still there beside the old app.js put back: %v", after)
	}
}

// The same for a directory that is a git repository, and for what a
// .gitignore ignores: `rook session capture last sub` takes sub/.git and
// sub/x.log (a session capture applies no .gitignore), so after a commit
// the diff showed .git/index changed but not the new objects, and the
// rewind put .git/index back beside objects it never had. Now the added
// files there are in the diff and the rewind removes them.
func TestCaptureOfDirectoryTakesAddedFilesInItsGitDirAndIgnoredFiles(t *testing.T) {
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{
		"sub/.git/index":      "index 1\n",
		"sub/.git/objects/aa": "object 1\n",
		"sub/.gitignore":      "*.log\n",
		"sub/x.log":           "log 1\n",
		"sub/a.txt":           "a\n",
	})
	r.Append(id, Entry{Kind: eventlog.KindUser, Body: []byte("commit")})
	_, m, err := r.CaptureSession(id, []string{"sub"}, "run_command", DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"sub/.git/index", "sub/x.log"} {
		if _, ok := m.Files[p]; !ok {
			t.Fatalf("the capture did not take %s: %v", p, m.Files)
		}
	}
	before := readTree(t, ws)
	writeTree(t, ws, tree{
		"sub/.git/index":      "index 2\n",
		"sub/.git/objects/bb": "object 2\n",
		"sub/y.log":           "log 2\n",
	})
	sameStatuses(t, "diff", diffStatuses(t, r, id), map[string]string{
		"sub/.git/index": "modified", "sub/.git/objects/bb": "added", "sub/y.log": "added",
	})
	if _, err := r.Rewind(id, 1, false); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after the rewind", readTree(t, ws), before)
}
