package agent

import (
	"slices"
	"strings"
	"testing"
)

// applyCodexPatches applies patches, each one op or more, as rolloutDiff
// does, in workspace ws with the turn's directory cwd.
func applyCodexPatches(t *testing.T, ws, cwd string, patches ...string) map[string]*rolloutFile {
	t.Helper()
	files := map[string]*rolloutFile{}
	for _, p := range patches {
		ops, err := parseCodexPatch(p)
		if err != nil {
			t.Fatalf("%q: %v", p, err)
		}
		for _, op := range ops {
			applyCodexOp(files, ws, cwd, op, false)
		}
	}
	return files
}

func codexPatch(body string) string { return "*** Begin Patch\n" + body + "\n*** End Patch" }

func fileStates(files map[string]*rolloutFile) string {
	var out []string
	for p, f := range files {
		s := p + ":" + f.status
		if f.movedFrom != "" {
			s += "<" + f.movedFrom
		}
		if f.noBody != "" {
			s += "(nobody)"
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// A Move to onto a path the session had already changed: the disk then
// holds the moved content at that path, and the old path is gone. The
// path's earlier changes are not dropped, nor shown as a rename onto a
// path that did not exist.
func TestCodexMoveOntoChangedPath(t *testing.T) {
	for _, tc := range []struct {
		name    string
		patches []string
		want    string
		body    map[string]string // a path's body must hold this
	}{
		{"onto a modified file, content not known", []string{
			codexPatch("*** Update File: b.txt\n@@\n-x\n+y"),
			codexPatch("*** Update File: a.txt\n*** Move to: b.txt\n@@\n-p\n+q"),
		}, "a.txt:removed(nobody) b.txt:modified(nobody)", nil},
		{"an added file onto a modified one", []string{
			codexPatch("*** Add File: c.txt\n+one"),
			codexPatch("*** Update File: b.txt\n@@\n-x\n+y"),
			codexPatch("*** Update File: c.txt\n*** Move to: b.txt\n@@\n-one\n+two"),
		}, "b.txt:modified", map[string]string{"b.txt": "@@ -?,? +1 @@\n+two\n"}},
		{"onto a file the session added", []string{
			codexPatch("*** Add File: new.txt\n+n"),
			codexPatch("*** Update File: a.txt\n*** Move to: new.txt\n@@\n-p\n+q"),
		}, "new.txt:modified<a.txt", nil},
		{"onto a file moved there", []string{
			codexPatch("*** Update File: c.txt\n*** Move to: b.txt\n@@\n-p\n+q"),
			codexPatch("*** Update File: a.txt\n*** Move to: b.txt\n@@\n-r\n+s"),
		}, "b.txt:modified<a.txt c.txt:removed(nobody)", nil},
		{"onto a path moved away", []string{
			codexPatch("*** Update File: a.txt\n*** Move to: b.txt\n@@\n-p\n+q"),
			codexPatch("*** Update File: c.txt\n*** Move to: a.txt\n@@\n-r\n+s"),
		}, "a.txt:modified(nobody) b.txt:added(nobody) c.txt:removed(nobody)", nil},
		{"onto a deleted file", []string{
			codexPatch("*** Delete File: b.txt"),
			codexPatch("*** Add File: c.txt\n+one"),
			codexPatch("*** Update File: c.txt\n*** Move to: b.txt\n@@\n-one\n+two"),
		}, "b.txt:modified", map[string]string{"b.txt": "+two\n"}},
	} {
		files := applyCodexPatches(t, "/ws", "", tc.patches...)
		if got := fileStates(files); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
			continue
		}
		for p, want := range tc.body {
			if got := files[p].body.String(); !strings.Contains(got, want) {
				t.Errorf("%s: %s's body %q lacks %q", tc.name, p, got, want)
			}
		}
	}
}

// A path moved away and written again (Add File at the old path) existed
// before the session: it is modified (or unchanged, the same bytes as
// before), never new; where it moved is new.
func TestCodexMovedAwayThenAdded(t *testing.T) {
	files := applyCodexPatches(t, "/ws", "",
		codexPatch("*** Update File: a.txt\n*** Move to: b.txt\n@@\n-x\n+y"),
		codexPatch("*** Add File: a.txt\n+new"))
	if got, want := fileStates(files), "a.txt:modified b.txt:added(nobody)"; got != want {
		t.Fatalf("%s, want %s", got, want)
	}
	if a := files["a.txt"]; !a.overwritten || !strings.Contains(a.body.String(), "+new\n") {
		t.Errorf("a.txt %+v %q", a, a.body.String())
	}
	// Deleted there (a patch_apply_end may say so, though Codex would
	// find nothing to delete): gone, and where it moved new; never a
	// rename from a path also deleted.
	files = applyCodexPatches(t, "/ws", "",
		codexPatch("*** Update File: a.txt\n*** Move to: b.txt\n@@\n-x\n+y"),
		codexPatch("*** Delete File: a.txt"))
	if got, want := fileStates(files), "a.txt:removed(nobody) b.txt:added(nobody)"; got != want {
		t.Errorf("moved, then deleted at the old path: %s, want %s", got, want)
	}

	// Its content before the session known (a deletion gave it): written
	// back the same, it is unchanged.
	str := func(s string) *string { return &s }
	files = map[string]*rolloutFile{}
	for _, c := range []codexFileChangeJSON{
		{Type: "delete", Content: str("x\n")},
		{Type: "add", Content: str("x\n")},
		{Type: "update", UnifiedDiff: str("@@ -1 +1 @@\n-x\n+y\n"), MovePath: str("/ws/b.txt")},
		{Type: "add", Content: str("x\n")},
	} {
		if note := applyCodexChange(files, "/ws", "/ws/a.txt", c, false); note != "" {
			t.Fatal(note)
		}
	}
	a, b := files["a.txt"], files["b.txt"]
	if a == nil || a.status != "modified" || a.body.Len() != 0 || a.noBody != "" || b == nil || b.status != "added" || b.movedFrom != "" {
		t.Fatalf("files %s, want a.txt unchanged (modified, no body) and b.txt added", fileStates(files))
	}
	if !b.isKnown || strings.Join(b.known, "|") != "y" {
		t.Errorf("b.txt known %q %v, want y", b.known, b.isKnown)
	}
}
