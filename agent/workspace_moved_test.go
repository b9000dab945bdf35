package agent

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// -C is taken as a session's workspace only when it is neither that
// workspace nor a directory in it (as named, or through a link): a -C of
// a directory in the workspace runs from there, the same project.
func TestWorkspaceForTakesDashCOutsideTheRecordedOne(t *testing.T) {
	dir := t.TempDir()
	ws, moved := filepath.Join(dir, "ws"), filepath.Join(dir, "ws2")
	for _, d := range []string{ws + "/sub", moved} {
		os.MkdirAll(d, 0o755)
	}
	link := filepath.Join(dir, "link")
	os.Symlink(ws, link)
	for _, tc := range []struct {
		dir, want string
		moved     bool
	}{
		{"", ws, false},
		{ws, ws, false},
		{ws + "/sub", ws, false},
		{link + "/sub", ws, false},
		{moved, moved, true},
	} {
		got, ok := workspaceFor(ws, tc.dir)
		if got != tc.want || ok != tc.moved {
			t.Errorf("workspaceFor(%s, %q) = %s, %v; want %s, %v", ws, tc.dir, got, ok, tc.want, tc.moved)
		}
	}
}

// A -C holding the session's workspace (its parent, the home directory,
// a monorepo's top), as named or through a link, is the same project run
// from above, never where it moved to: taken so, a rewind wrote the
// captured files into it and removed its own files as added since. So is
// one holding where a workspace no longer on the disk was: it is refused
// there, not rewound into the parent.
func TestWorkspaceForNeverTakesADashCHoldingTheWorkspace(t *testing.T) {
	dir := t.TempDir()
	proj := filepath.Join(dir, "proj")
	ws, gone, sibling := filepath.Join(proj, "ws"), filepath.Join(proj, "gone"), filepath.Join(proj, "ws2")
	for _, d := range []string{ws + "/src", sibling} {
		os.MkdirAll(d, 0o755)
	}
	link := filepath.Join(dir, "link")
	os.Symlink(proj, link)
	for _, tc := range []struct {
		recorded, dir, want string
		moved               bool
	}{
		{ws, proj, ws, false},
		{ws, dir, ws, false},
		{ws, "/", ws, false},
		{ws, link, ws, false},
		{gone, proj, gone, false},
		{gone, link, gone, false},
		{gone, sibling, sibling, true},
	} {
		got, ok := workspaceFor(tc.recorded, tc.dir)
		if got != tc.want || ok != tc.moved {
			t.Errorf("workspaceFor(%s, %q) = %s, %v; want %s, %v", tc.recorded, tc.dir, got, ok, tc.want, tc.moved)
		}
	}
}

// In a directory of the workspace a relative path starts there; at the
// workspace's top, or outside it, it is the workspace's, as before.
func TestPathsFromStartAtTheDirectoryInTheWorkspace(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(ws+"/sub", 0o755)
	link := filepath.Join(dir, "link")
	os.Symlink(ws, link)
	real, _ := filepath.EvalSymlinks(ws)
	in := []string{"x.txt", "../y.txt", "/abs/z"}
	for _, tc := range []struct {
		dir  string
		want []string
	}{
		{ws + "/sub", []string{ws + "/sub/x.txt", ws + "/y.txt", "/abs/z"}},
		{link + "/sub", []string{real + "/sub/x.txt", real + "/y.txt", "/abs/z"}},
		{ws, in},
		{dir, in},
		{"", in},
	} {
		if got := PathsFrom(ws, tc.dir, in); !slices.Equal(got, tc.want) {
			t.Errorf("PathsFrom(%s, %q) = %q, want %q", ws, tc.dir, got, tc.want)
		}
	}
}
