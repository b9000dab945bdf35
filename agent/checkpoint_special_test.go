package agent

import (
	"bytes"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// specialModes are the modes, special bits included, of the workspace
// paths want names: what os.Stat says of each.
func specialModes(t *testing.T, root string, want map[string]fs.FileMode) map[string]fs.FileMode {
	t.Helper()
	out := map[string]fs.FileMode{}
	for p := range want {
		fi, err := os.Stat(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		out[p] = fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
	}
	return out
}

// chmodAll gives each path of modes its mode, and skips the test where
// the file system (or a user not root, for setgid on a file of another
// group) does not keep the bits.
func chmodAll(t *testing.T, root string, modes map[string]fs.FileMode) {
	t.Helper()
	for p, m := range modes {
		if err := os.Chmod(filepath.Join(root, p), m); err != nil {
			t.Fatal(err)
		}
	}
	if got := specialModes(t, root, modes); !maps.Equal(got, modes) {
		t.Skipf("this file system does not keep the bits: %v", got)
	}
}

// A file's setuid, setgid and sticky bits are captured with its mode (its
// first digit) and given back by a checkpoint restore: a file written
// again (its bytes changed, or removed), one chmodded since, and each in
// a directory restored into (--to). They were dropped: a capture kept
// the permission bits alone, and a restore wrote those.
func TestCheckpointRestoreGivesBackAFilesSpecialBits(t *testing.T) {
	r, ws, _ := newWorkspace(t)
	writeTree(t, ws, tree{"su.sh": "mode:0755:#!/bin/sh\n", "sg.sh": "mode:0755:#!/bin/sh\n", "st.txt": "sticky\n", "d/both": "mode:0755:b\n"})
	want := map[string]fs.FileMode{"su.sh": 0o755 | fs.ModeSetuid, "sg.sh": 0o750 | fs.ModeSetgid,
		"st.txt": 0o644 | fs.ModeSticky, "d/both": 0o755 | fs.ModeSetuid | fs.ModeSetgid}
	chmodAll(t, ws, want)
	_, m, err := r.CreateCheckpoint("c", ws, "", DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	enc := m.Encode()
	for _, s := range []string{`"su.sh":{"id":"`, `"mode":"4755"`, `"mode":"2750"`, `"mode":"1644"`, `"mode":"6755"`, `"v":6`} {
		if !bytes.Contains(enc, []byte(s)) {
			t.Fatalf("the checkpoint's manifest has no %s: %s", s, enc)
		}
	}
	// Each loses its bits a different way.
	writeTree(t, ws, tree{"su.sh": "mode:0755:#!/bin/sh\necho changed\n"})
	os.Remove(filepath.Join(ws, "sg.sh"))
	os.Chmod(filepath.Join(ws, "st.txt"), 0o644)
	os.Chmod(filepath.Join(ws, "d/both"), 0o755)
	_, m, err = r.ResolveCheckpoint("c")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := r.RestoreCheckpoint("c", m, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := specialModes(t, ws, want); !maps.Equal(got, want) {
		t.Fatalf("modes after the restore %v, want %v", got, want)
	}
	// The save before it holds the modes the restore changed, so
	// restoring it gives them back too.
	_, saved, err := r.ResolveCheckpoint(rep.Saved)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.RestoreCheckpoint(rep.Saved, saved, ""); err != nil {
		t.Fatal(err)
	}
	if got, want := specialModes(t, ws, map[string]fs.FileMode{"st.txt": 0, "d/both": 0}), map[string]fs.FileMode{"st.txt": 0o644, "d/both": 0o755}; !maps.Equal(got, want) {
		t.Fatalf("modes after restoring the save %v, want %v", got, want)
	}
	to := filepath.Join(t.TempDir(), "copy")
	if _, err := r.RestoreCheckpoint("c", m, to); err != nil {
		t.Fatal(err)
	}
	if got := specialModes(t, to, want); !maps.Equal(got, want) {
		t.Fatalf("modes restored --to a new directory %v, want %v", got, want)
	}
}

// A directory's setuid, setgid and sticky bits are captured by a
// checkpoint (dir_modes) and given back when a restore makes the
// directory again: it was made 0755, a sticky tmp directory that anyone
// could remove anyone's files from, a setgid one whose files no longer
// took its group.
func TestCheckpointRestoreMakesADirectoryWithItsSpecialBits(t *testing.T) {
	r, ws, _ := newWorkspace(t)
	writeTree(t, ws, tree{"d/tmp/a.txt": "a\n", "d/g/b.txt": "b\n", "d/plain/c.txt": "c\n"})
	want := map[string]fs.FileMode{"d/tmp": 0o777 | fs.ModeSticky, "d/g": 0o750 | fs.ModeSetgid}
	chmodAll(t, ws, want)
	_, m, err := r.CreateCheckpoint("c", ws, "", DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if enc := m.Encode(); !bytes.Contains(enc, []byte(`"dir_modes":{"d/g":"2750","d/tmp":"1777"}`)) {
		t.Fatalf("captured %s", enc)
	}
	if err := os.RemoveAll(filepath.Join(ws, "d")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.RestoreCheckpoint("c", m, ""); err != nil {
		t.Fatal(err)
	}
	if got := specialModes(t, ws, want); !maps.Equal(got, want) {
		t.Fatalf("modes after the restore %v, want %v", got, want)
	}
	to := filepath.Join(t.TempDir(), "copy")
	if _, err := r.RestoreCheckpoint("c", m, to); err != nil {
		t.Fatal(err)
	}
	if got := specialModes(t, to, want); !maps.Equal(got, want) {
		t.Fatalf("modes restored --to a new directory %v, want %v", got, want)
	}
	sameTree(t, "restored --to", readTree(t, to), readTree(t, ws))
}

// A rewind gives a file its setuid, setgid and sticky bits back, as a
// checkpoint restore does: one written again and one chmodded since.
func TestRewindGivesBackAFilesSpecialBits(t *testing.T) {
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"su.sh": "mode:0755:#!/bin/sh\n", "d/sg": "mode:0755:g\n"})
	want := map[string]fs.FileMode{"su.sh": 0o755 | fs.ModeSetuid, "d/sg": 0o755 | fs.ModeSetgid}
	chmodAll(t, ws, want)
	if _, _, err := r.CaptureSession(id, []string{"su.sh", "d"}, "edit", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	writeTree(t, ws, tree{"su.sh": "mode:0755:#!/bin/sh\necho changed\n"})
	os.Chmod(filepath.Join(ws, "d/sg"), 0o755)
	rep, err := r.Rewind(id, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := specialModes(t, ws, want); !maps.Equal(got, want) {
		t.Fatalf("modes after the rewind %v, want %v", got, want)
	}
	// Its undo gives back the modes the rewind replaced.
	if rep.BeforeSeq == nil {
		t.Fatalf("the rewind changed modes and has no undo: %+v", rep)
	}
	if _, err := r.Rewind(rep.Fork, *rep.BeforeSeq, false); err != nil {
		t.Fatal(err)
	}
	if got, want := specialModes(t, ws, want), map[string]fs.FileMode{"su.sh": 0o755, "d/sg": 0o755}; !maps.Equal(got, want) {
		t.Fatalf("modes after the undo %v, want %v", got, want)
	}
}

// A file's mode without the special bits (every one a rook wrote before
// they were recorded, whatever they were) leaves those a file has when
// it is left as it is: restoring an older checkpoint of a setuid program
// unchanged since does not take the bit off.
func TestRestoreKeepsSpecialBitsACaptureDoesNotSay(t *testing.T) {
	r, ws, _ := newWorkspace(t)
	writeTree(t, ws, tree{"su.sh": "mode:0755:#!/bin/sh\n"})
	want := map[string]fs.FileMode{"su.sh": 0o755 | fs.ModeSetuid}
	chmodAll(t, ws, want)
	m, err := r.CaptureTree(ws, "", "old", DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	f := m.Files["su.sh"]
	f.Mode = FileMode{Perm: 0o755} // as an older rook captured it
	m.Files["su.sh"] = f
	again, err := DecodeManifest(m.Encode())
	if err != nil {
		t.Fatal(err)
	}
	rep, err := r.RestoreCheckpoint("old", again, "")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Unchanged != 1 || rep.Written != 0 || rep.Saved != "" {
		t.Fatalf("restore of an unchanged file: %+v", rep)
	}
	if got := specialModes(t, ws, want); !maps.Equal(got, want) {
		t.Fatalf("modes after the restore %v, want %v", got, want)
	}
}

// Version 6 holds a file's special bits, and the modes of a tree
// capture's directories (dir_modes keyed by no directory in dirs); a
// manifest without either is written as before, and a version below 6
// with either is refused: a rook reading it would drop them.
func TestManifestVersion6(t *testing.T) {
	const id = `"id":"2b806e7d75371072494f629b7fe1a565","size":1`
	for _, tc := range []struct {
		in, err string
	}{
		{`{"v":6,"root":"/r","files":{"a":{` + id + `,"mode":"4755"}},"total_bytes":1}`, ""},
		{`{"v":6,"root":"/r","files":{"d/a":{` + id + `,"mode":"0644"}},"dir_modes":{"d":"1777"},"total_bytes":1}`, ""},
		{`{"v":5,"root":"/r","files":{"a":{` + id + `,"mode":"2755"}},"total_bytes":1}`, `version 5 has no setuid, setgid or sticky bit in a file's mode ("a": "2755")`},
		{`{"v":5,"root":"/r","files":{},"dirs":["e"],"dir_modes":{"d":"1777"}}`, `"dir_modes" names "d", which is not in "dirs"`},
		{`{"v":6,"root":"/r","files":{},"dir_modes":{"../d":"1777"}}`, `leaves the workspace`},
		{`{"v":6,"root":"/r","files":{"d":{` + id + `,"mode":"0644"}},"dir_modes":{"d":"1777"}}`, `"d" is both a directory in "dir_modes" and a file, absent or unknown`},
		{`{"v":6,"root":"/r","files":{},"dir_modes":{"d":"link"}}`, `directory "d" has the mode "link"`},
	} {
		m, err := DecodeManifest([]byte(tc.in))
		if tc.err == "" {
			if err != nil {
				t.Fatalf("%s: %v", tc.in, err)
			}
			if enc := m.Encode(); !bytes.Contains(enc, []byte(`"v":6`)) {
				t.Fatalf("%s encodes as %s", tc.in, enc)
			}
			continue
		}
		if err == nil || !errors.Is(err, ErrBadManifest) || !strings.Contains(err.Error(), tc.err) {
			t.Fatalf("%s: %v, want %q", tc.in, err, tc.err)
		}
	}
	// A version 6 manifest's "0755" says the file had no special bits:
	// it stays version 6. A capture of files without any is version 1,
	// byte for byte as before.
	m, err := DecodeManifest([]byte(`{"v":6,"root":"/r","files":{"a":{` + id + `,"mode":"0755"}},"total_bytes":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if enc := m.Encode(); !bytes.Contains(enc, []byte(`{"v":6,`)) {
		t.Fatalf("a version 6 manifest encodes as %s", enc)
	}
	r, ws, _ := newWorkspace(t)
	writeTree(t, ws, tree{"run.sh": "mode:0755:#!/bin/sh\n", "d/a.txt": "a\n"})
	if m, err = r.CaptureTree(ws, "", "c", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	if enc := m.Encode(); !bytes.Contains(enc, []byte(`{"v":1,`)) {
		t.Fatalf("a capture without special bits encodes as %s", enc)
	}
}
