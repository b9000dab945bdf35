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
