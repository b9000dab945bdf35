package agent

import (
	"io/fs"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// A rewind whose state of a file comes from an imported Claude Code
// transcript (an edit result: its content alone) keeps the mode the file
// has, setuid, setgid and sticky bits too: it wrote it with the
// permission bits alone, a setuid program losing its bit. Its undo
// leaves them as well.
func TestTranscriptRewindKeepsAFilesSpecialBits(t *testing.T) {
	e := newEditTranscript(t, "edit the scripts")
	e.edit(filepath.Join(e.ws, "su.sh"), "#!/bin/sh\necho one\n", "one", "two")
	e.edit(filepath.Join(e.ws, "sg.sh"), "#!/bin/sh\necho one\n", "one", "two")
	writeTree(t, e.ws, tree{"su.sh": "mode:0755:#!/bin/sh\necho two\n", "sg.sh": "mode:0755:#!/bin/sh\necho two\n"})
	want := map[string]fs.FileMode{"su.sh": 0o755 | fs.ModeSetuid, "sg.sh": 0o750 | fs.ModeSetgid | fs.ModeSticky}
	chmodAll(t, e.ws, want)
	r, id := e.imported(t)
	rep, err := r.Rewind(id, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFileT(t, filepath.Join(e.ws, "su.sh")); got != "#!/bin/sh\necho one\n" || rep.FromTranscript != 2 {
		t.Fatalf("su.sh after the rewind %q (%+v)", got, rep)
	}
	if got := specialModes(t, e.ws, want); !maps.Equal(got, want) {
		t.Fatalf("modes after the rewind %v, want %v", got, want)
	}
	if _, err := r.Rewind(rep.Fork, *rep.BeforeSeq, false); err != nil {
		t.Fatal(err)
	}
	if got := specialModes(t, e.ws, want); !maps.Equal(got, want) {
		t.Fatalf("modes after the undo %v, want %v", got, want)
	}
}

// So does one whose state comes from a Claude Code file-history backup
// (what the file held, not its mode).
func TestFileHistoryRewindKeepsAFilesSpecialBits(t *testing.T) {
	h := newHistorySession(t)
	writeTree(t, h.ws, tree{"su.sh": "mode:0755:echo two\n"})
	writeTree(t, h.backups, tree{"h1@v1": "echo one\n"})
	want := map[string]fs.FileMode{"su.sh": 0o755 | fs.ModeSetuid}
	chmodAll(t, h.ws, want)
	r, id, _ := h.imported(append(claudeLines("s1", 1), snapshot("m2", backup{"su.sh", "h1@v1", 1})))
	if _, err := r.Rewind(id, 0, false); err != nil {
		t.Fatal(err)
	}
	if got := specialModes(t, h.ws, want); !maps.Equal(got, want) || h.read("su.sh") != "echo one\n" {
		t.Fatalf("modes after the rewind %v, want %v (su.sh %q)", got, want, h.read("su.sh"))
	}
}

// So does a rewind of an imported Codex session, whose state of a file is
// the rollout's patches undone on it: where it is (its mode kept by the
// rewind's plan) and where the patches moved it (the mode of the file
// undone on, given to the one put back at its old path).
func TestCodexRewindKeepsAFilesSpecialBits(t *testing.T) {
	s := newCodexSession(t)
	s.patch("*** Delete File: dst.sh") // before the point
	s.patch("*** Update File: su.sh\n@@\n-a\n+A")
	s.patch("*** Update File: src.sh\n*** Move to: dst.sh\n@@\n-s\n+S")
	r, id, seqs := s.imported(tree{"su.sh": "mode:0755:A\n", "dst.sh": "mode:0755:S\n"})
	chmodAll(t, s.ws, map[string]fs.FileMode{"su.sh": 0o755 | fs.ModeSetuid, "dst.sh": 0o755 | fs.ModeSetgid})
	rep, err := r.Rewind(id, seqs[1], false)
	if err != nil {
		t.Fatal(err)
	}
	if s.read("su.sh") != "a\n" || s.read("src.sh") != "s\n" {
		t.Fatalf("after the rewind su.sh %q, src.sh %q", s.read("su.sh"), s.read("src.sh"))
	}
	want := map[string]fs.FileMode{"su.sh": 0o755 | fs.ModeSetuid, "src.sh": 0o755 | fs.ModeSetgid}
	if got := specialModes(t, s.ws, want); !maps.Equal(got, want) {
		t.Fatalf("modes after the rewind %v, want %v", got, want)
	}
	if _, err := r.Rewind(rep.Fork, *rep.BeforeSeq, false); err != nil {
		t.Fatal(err)
	}
	want = map[string]fs.FileMode{"su.sh": 0o755 | fs.ModeSetuid, "dst.sh": 0o755 | fs.ModeSetgid}
	if got := specialModes(t, s.ws, want); !maps.Equal(got, want) || s.read("dst.sh") != "S\n" {
		t.Fatalf("modes after the undo %v, want %v", got, want)
	}
}

// A rewind that gives a directory captured whole a mode with a special
// bit (a sticky tmp directory made 0755 since) records in its capture of
// the disk before the mode it had, saying it had none: its undo takes the
// bit off again (it left the directory 1777, a mode without the bits
// read as saying nothing of them). The undo's own undo gives it back.
func TestRewindUndoGivesADirectoryItsSpecialBitsExactly(t *testing.T) {
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"tmp/a.txt": "a\n", "g/b.txt": "b\n"})
	at := map[string]fs.FileMode{"tmp": 0o777 | fs.ModeSticky, "g": 0o750 | fs.ModeSetgid}
	chmodAll(t, ws, at)
	if _, _, err := r.CaptureSession(id, []string{"tmp", "g"}, "chmod", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	now := map[string]fs.FileMode{"tmp": 0o755, "g": 0o750}
	chmodAll(t, ws, now)
	rep, err := r.Rewind(id, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := specialModes(t, ws, at); !maps.Equal(got, at) {
		t.Fatalf("modes after the rewind %v, want %v", got, at)
	}
	undo, err := r.Rewind(rep.Fork, *rep.BeforeSeq, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := specialModes(t, ws, now); !maps.Equal(got, now) {
		t.Fatalf("modes after the undo %v, want %v", got, now)
	}
	if undo.BeforeSeq == nil {
		t.Fatalf("the undo changed modes and has no undo: %+v", undo)
	}
	if _, err := r.Rewind(undo.Fork, *undo.BeforeSeq, false); err != nil {
		t.Fatal(err)
	}
	if got := specialModes(t, ws, at); !maps.Equal(got, at) {
		t.Fatalf("modes after the undo's undo %v, want %v", got, at)
	}
}

// The other way: a directory captured whole without the bits, in a
// capture that says each mode's bits (version 6: it holds a setuid
// file), sticky now, loses the bit in a rewind (it kept it), and its undo
// gives it back.
func TestRewindTakesOffADirectorysSpecialBitsAVersion6CaptureSays(t *testing.T) {
	r, ws, id := newWorkspace(t)
	writeTree(t, ws, tree{"d/su.sh": "mode:0755:#!/bin/sh\n"})
	chmodAll(t, ws, map[string]fs.FileMode{"d": 0o755, "d/su.sh": 0o755 | fs.ModeSetuid})
	if _, m, err := r.CaptureSession(id, []string{"d"}, "chmod", DefaultLimits); err != nil {
		t.Fatal(err)
	} else if m.V != manifestVersion {
		t.Fatalf("captured %s", m.Encode())
	}
	now := map[string]fs.FileMode{"d": 0o777 | fs.ModeSticky}
	chmodAll(t, ws, now)
	rep, err := r.Rewind(id, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := specialModes(t, ws, now), map[string]fs.FileMode{"d": 0o755}; !maps.Equal(got, want) {
		t.Fatalf("modes after the rewind %v, want %v", got, want)
	}
	if rep.BeforeSeq == nil {
		t.Fatalf("the rewind changed a mode and has no undo: %+v", rep)
	}
	if _, err := r.Rewind(rep.Fork, *rep.BeforeSeq, false); err != nil {
		t.Fatal(err)
	}
	if got := specialModes(t, ws, now); !maps.Equal(got, now) {
		t.Fatalf("modes after the undo %v, want %v", got, now)
	}
}

// ShortPath cuts the middle of a path thousands of bytes long for a
// message, keeping its first and last elements; one with no '/' after its
// first byte kept an empty head and read "/.../tail", like an absolute
// path.
func TestShortPath(t *testing.T) {
	long := strings.Repeat("abcdefghijklmnop/", 30) + "x"
	if got, want := ShortPath(long), "abcdefghijklmnop/.../x"; got != want {
		t.Errorf("ShortPath(%d bytes) = %q, want %q", len(long), got, want)
	}
	if got := ShortPath("short/path"); got != "short/path" {
		t.Errorf("ShortPath(short) = %q", got)
	}
	name := strings.Repeat("n", 300)
	if got, want := ShortPath(name), strings.Repeat("n", 64)+"..."+strings.Repeat("n", 64); got != want {
		t.Errorf("ShortPath(one 300-byte name) = %q, want %q", got, want)
	}
	if got := ShortPath("d/" + strings.Repeat("é", 150)); !utf8.ValidString(got) || strings.HasPrefix(got, "/") {
		t.Errorf("ShortPath(a name of 150 é under d) = %q: not whole characters, or read as absolute", got)
	}
}
