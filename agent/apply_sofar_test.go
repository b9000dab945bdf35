package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestApplySaysRootMade: an Apply that fails at its first file, in a
// root it made (restore --to a new directory), says it made that
// directory, not "nothing written": the directory (and those above it
// it made) is left there.
func TestApplySaysRootMade(t *testing.T) {
	root := filepath.Join(t.TempDir(), "new", "to")
	// A link whose target no symlink takes (longer than PATH_MAX): the
	// first write fails, as root too.
	p := &Plan{Root: root, real: root, Changes: []Change{{Path: "l", File: FileEntry{Mode: FileMode{Link: true}}, data: []byte(strings.Repeat("a", 5000))}}}
	written, removed, _, err := p.Apply()
	if err == nil || written != 0 || removed != 0 {
		t.Fatalf("apply: %d written, %d removed, %v", written, removed, err)
	}
	if _, serr := os.Stat(root); serr != nil {
		t.Fatalf("root not made before the failure: %v (%v)", serr, err)
	}
	top := filepath.Dir(root) // "new", made for it
	if msg := err.Error(); !strings.HasSuffix(msg, ": nothing written but the directory "+top+", which it made") {
		t.Fatalf("the root made, the error ends: %s", msg[max(len(msg)-200, 0):])
	}
}

// TestApplySaysDirsRemoved: a rewind's clearing of a directory tree that
// stops at a directory something was added to, after removing another
// (empty) one, does not say "nothing written".
func TestApplySaysDirsRemoved(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"d/a", "d/b"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Added since the capture: d/a is not empty. Children go first, in
	// reverse order: d/b, then d/a.
	if err := os.WriteFile(filepath.Join(root, "d", "a", "new.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &Plan{Root: root, real: root,
		saved:   &Manifest{Files: map[string]FileEntry{}, Dirs: []string{"d", "d/a", "d/b"}},
		Changes: []Change{{Path: "d", clearTree: true, File: FileEntry{Mode: FileMode{Perm: 0o644}}, data: []byte("file")}}}
	_, _, _, err := p.Apply()
	if err == nil || !strings.Contains(err.Error(), "something was added there since") {
		t.Fatalf("apply: %v", err)
	}
	if _, serr := os.Stat(filepath.Join(root, "d", "b")); serr == nil {
		t.Fatalf("d/b not removed before the failure: %v", err)
	}
	if strings.Contains(err.Error(), "nothing written") {
		t.Fatalf("a directory removed, the error says: %v", err)
	}
	t.Log(err)
}
