package agent

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// Paths of a rollout made on Windows: relative to a Windows workspace
// whatever the host, with either slash, any case of the workspace's
// letters; a path on another drive or share is outside it.
func TestCodexWindowsPaths(t *testing.T) {
	const ws = `C:\Users\x\proj`
	for _, tc := range []struct {
		path, cwd, want string
		outside         bool
	}{
		{`C:\Users\x\proj\src\a.go`, "", "src/a.go", false},
		{`C:/Users/x/proj/c.go`, "", "c.go", false},
		{`c:\users\x\proj\d.go`, "", "d.go", false},
		{`src\b.go`, ws, "src/b.go", false},
		{`b.go`, `C:\Users\x\proj\sub`, "sub/b.go", false},
		{`..\up.go`, `C:\Users\x\proj\sub`, "up.go", false},
		{`D:\other\e.go`, "", "D:/other/e.go", true},
		{`C:\Users\x\projects\f.go`, "", "C:/Users/x/projects/f.go", true},
		{`\\server\share\g.go`, "", "//server/share/g.go", true},
	} {
		p := codexRel(ws, tc.cwd, tc.path)
		if p != tc.want || codexOutside(p) != tc.outside {
			t.Errorf("%s (cwd %q): %q outside %v, want %q outside %v", tc.path, tc.cwd, p, codexOutside(p), tc.want, tc.outside)
		}
		if tc.outside {
			if n := codexPatchName(ws, p); !strings.HasPrefix(n, "../") {
				t.Errorf("%s: the patch names it %q, not from the workspace (../)", tc.path, n)
			}
		}
	}
	if n := codexPatchName(ws, "C:/Users/x/projects/f.go"); n != "../projects/f.go" {
		t.Errorf("patch name %q, want ../projects/f.go", n)
	}
}

// A rollout made on Windows, read on any host: its turn's cwd and its
// patch_apply_end's absolute paths are the workspace's.
func TestRolloutDiffWindows(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	const ok = `"Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nA x\n"`
	items := []codexItem{
		{"session_meta", `{"id":"` + codexPID + `","cwd":"C:\\Users\\x\\proj","originator":"codex_cli_rs","cli_version":"0.80.0","source":"cli"}`},
		{"turn_context", `{"cwd":"C:\\Users\\x\\proj\\sub","model":"gpt-5"}`},
		{"response_item", `{"type":"custom_tool_call","name":"apply_patch","call_id":"c1","input":"*** Begin Patch\n*** Add File: a.go\n+package a\n*** Add File: D:\\tmp\\out.txt\n+x\n*** End Patch"}`},
		{"response_item", `{"type":"custom_tool_call_output","call_id":"c1","output":` + ok + `}`},
		{"event_msg", `{"type":"patch_apply_end","call_id":"c2","success":true,"changes":{"C:\\Users\\x\\proj\\b.go":{"type":"add","content":"package b\n"}}}`},
	}
	path := fmt.Sprintf("/c/2026/02/03/rollout-2026-02-03T10-00-00-%s.jsonl", codexPID)
	writeSource(t, fsys, path, codexStamped(items, 10, 0), "")
	rep := mustImport(t, r, FormatCodex, "/c")
	d, err := r.Diff(*fileByPath(t, rep, path).Session, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range d.Files {
		got = append(got, fmt.Sprintf("%s:%v", f.Path, f.Outside))
	}
	if want := "D:/tmp/out.txt:true|b.go:false|sub/a.go:false"; strings.Join(got, "|") != want {
		t.Errorf("files %q, want %q (patches %+v)", strings.Join(got, "|"), want, d.Patches)
	}
}
