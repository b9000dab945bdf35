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
