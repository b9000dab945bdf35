package agent

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A capture leaves out, and a restore refuses, a path whose restore's
// temporary file would be longer than the system opens by name: the
// length both reserve for that file's name is the longest
// writeWorkspaceFile can make, taken from restoreTempName.
func TestRestoreTempMaxLenHoldsEveryName(t *testing.T) {
	if restoreTempMaxLen != len(".rook-restore-2147483647-4294967295.tmp") {
		t.Fatalf("restoreTempMaxLen = %d", restoreTempMaxLen)
	}
	dir := t.TempDir()
	abs := filepath.Join(dir, "f")
	var seen string
	err := writeWorkspaceFile(abs, FileMode{Perm: 0o644}, func(w io.Writer) error { return nil }, func() error {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if isRestoreTemp(e.Name()) {
				seen = e.Name()
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen == "" || len(seen) > restoreTempMaxLen {
		t.Fatalf("temporary file %q: longer than restoreTempMaxLen %d", seen, restoreTempMaxLen)
	}
	if got, want := restorePathLen("/w/a/f", false), len("/w/a/")+restoreTempMaxLen; got != want {
		t.Errorf("restorePathLen of a file = %d, want %d", got, want)
	}
	if got, want := restorePathLen("/w/a", true), len("/w/a/")+restoreTempMaxLen; got != want {
		t.Errorf("restorePathLen of a directory = %d, want %d", got, want)
	}
}

// An Apply stopped part way into a directory it made (--to one not
// there) says where the directories it made are.
func TestRestoreStoppedSaysWhereDirsWereMade(t *testing.T) {
	p := &Plan{dirsMade: 21, rootDirs: 1, rootMade: "/tmp/copy"}
	if got := p.soFar(0, 0); !strings.Contains(got, "22 director(ies) made from /tmp/copy down before this") {
		t.Errorf("soFar = %q", got)
	}
}
