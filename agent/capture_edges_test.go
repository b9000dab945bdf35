package agent

import (
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
