package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A name a manifest cannot hold as it is (a backslash, which it refuses on
// reading; bytes that are not UTF-8, which JSON turns into U+FFFD) must
// not be captured under another name, nor make the session's every later
// diff and rewind fail: a session capture refuses it and says which, a
// tree capture skips it and lists it.
func TestCaptureRefusesNamesAManifestCannotHold(t *testing.T) {
	for _, name := range []string{`back\slash`, "bad\xff"} {
		r, ws, id := newWorkspace(t)
		writeTree(t, ws, tree{"ok.txt": "ok\n", name: "x\n", "d/" + name: "y\n"})
		if _, _, err := r.CaptureSession(id, []string{"ok.txt"}, "edit", DefaultLimits); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{name, "d"} {
			if _, _, err := r.CaptureSession(id, []string{p}, "edit", DefaultLimits); err == nil || !strings.Contains(err.Error(), "cannot be recorded") {
				t.Fatalf("%q: capture of %q: %v, want a refusal", name, p, err)
			}
		}
		// The session still diffs and rewinds.
		os.WriteFile(filepath.Join(ws, "ok.txt"), []byte("changed\n"), 0o644)
		if _, err := r.Diff(id, nil, false); err != nil {
			t.Fatalf("%q: diff: %v", name, err)
		}
		if _, err := r.Rewind(id, 0, false); err != nil {
			t.Fatalf("%q: rewind: %v", name, err)
		}
		// A whole-workspace checkpoint leaves the names out and says so;
		// it restores (no file under another name).
		_, m, err := r.CreateCheckpoint("all", ws, "", DefaultLimits)
		if err != nil {
			t.Fatalf("%q: checkpoint: %v", name, err)
		}
		if len(m.Skipped) != 2 || len(m.Files) != 1 {
			t.Fatalf("%q: checkpoint files %v skipped %q", name, m.Paths(), m.Skipped)
		}
		_, m, err = r.ResolveCheckpoint("all")
		if err != nil {
			t.Fatal(err)
		}
		to := filepath.Join(t.TempDir(), "copy")
		if _, err := r.RestoreCheckpoint("all", m, to); err != nil {
			t.Fatalf("%q: restore: %v", name, err)
		}
		sameTree(t, "restored", readTree(t, to), tree{"ok.txt": "ok\n"})
		if got := readTree(t, to); len(got) != 1 {
			t.Fatalf("%q: restored %v", name, got)
		}
	}
}
