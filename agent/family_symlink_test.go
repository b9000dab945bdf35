package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/eventlog"
)

// A session linked to the rewound one may record the workspace by
// another path to it, through a symbolic link: its cwd, or the absolute
// paths its edits name (/link-to-w/a.txt for /w/a.txt), or the workspace
// its parent recorded (macOS gives /private/tmp/w and /tmp/w). Compared
// as text, its edits of the workspace's files were not seen as in it.

// linkedDirs makes, in dir, the workspace ws (holding sub), link (a link
// to ws), lsub (a link to ws/sub) and lroot (a link to dir itself, as
// /tmp is to /private/tmp on macOS).
func linkedDirs(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "ws", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for link, to := range map[string]string{"link": "ws", "lsub": filepath.Join("ws", "sub"), "lroot": "."} {
		if err := os.Symlink(to, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
}

// claudeFamilyThroughLinks is a session recorded in dir/pc (linkedDirs)
// that edits sub/y.txt (Y0 to Y1, events 1 and 2), naming it under
// dir/pc, then calls the Task (3); its subagent, recorded in dir/sc, has
// a backup of sub/x.txt (X0) named backup (from its cwd), then edits
// sub/x.txt, its result not saying the file (as Claude Code writes a
// subagent's), sub/y.txt (Y1 to Y2) and a.txt (A0 to A1), naming each
// as sp gives it; its result is 4. The session's workspace is dir/pc.
func claudeFamilyThroughLinks(t *testing.T, pc, sc, backup string, sp func(dir, p string) string) (*Rook, *editTranscript, eventlog.ID) {
	t.Helper()
	e := newEditTranscript(t, "go")
	linkedDirs(t, e.dir)
	e.ws, e.n = filepath.Join(e.dir, pc), 0
	e.lines = []string{fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":"go"},"uuid":"u0","timestamp":%q}`, e.env(), e.ts())}
	e.edit(filepath.Join(e.ws, "sub", "y.txt"), "Y0\n", "Y0", "Y1")
	e.lines = append(e.lines, claudeTaskCall(e))
	sub := &editTranscript{dir: e.dir, ws: filepath.Join(e.dir, sc), n: e.n}
	sub.sidePrompt("look")
	bt := fmt.Sprintf("2026-02-10T21:00:%02d.500Z", sub.n)
	sub.lines = append(sub.lines, fmt.Sprintf(`{"type":"file-history-snapshot","messageId":"s0","snapshot":{"messageId":"s0","trackedFileBackups":{%q:{"backupFileName":"h1@v1","version":1,"backupTime":%q}},"timestamp":%q},"isSnapshotUpdate":true}`, backup, bt, bt))
	sub.sideEdit(sp(e.dir, "sub/x.txt"), "X0", "X1")
	sub.edit(sp(e.dir, "sub/y.txt"), "Y1\n", "Y1", "Y2")
	sub.edit(sp(e.dir, "a.txt"), "A0\n", "A0", "A1")
	for i, l := range sub.lines {
		if !strings.Contains(l, `"isSidechain"`) {
			sub.lines[i] = sidechainOf([]string{l}, "a1b2c3d")[0]
		}
	}
	e.n = sub.n
	e.lines = append(e.lines, claudeTaskResult(e, `"totalToolUseCount":3,`))
	writeTree(t, filepath.Join(e.dir, "ws"), tree{"a.txt": "A1\n", "sub/x.txt": "X1\n", "sub/y.txt": "Y2\n"})
	writeTree(t, filepath.Join(e.dir, "home", ".claude", "file-history", "s1"), tree{"h1@v1": "X0\n"})
	r, ids := importClaudeFiles(t, e, map[string][]string{"s1.jsonl": e.lines, "s1/subagents/agent-a1b2c3d.jsonl": sub.lines})
	return r, e, ids["s1.jsonl"]
}

// under names p under dir/d.
func under(d string) func(dir, p string) string {
	return func(dir, p string) string { return filepath.Join(dir, d, filepath.FromSlash(p)) }
}

// The subagent's edits and its backup are read wherever a link made
// them: its rewind to before the Task puts back a.txt (A0), sub/x.txt
// (X0, its backup's) and sub/y.txt (Y1), saying where the subagent was
// recorded, and the diff compares the three as they were before it. Each
// had been left as the subagent left it, or (sub/x.txt, its backup
// dropped) named a file whose state is not known.
func TestRewindFamilyThroughSymlinks(t *testing.T) {
	for _, c := range []struct {
		name, pc, sc, backup string
		sp                   func(dir, p string) string
		where                string // where the subagent was recorded, in words (@DIR@: the test's dir)
	}{
		{"no link", "ws", "ws", "sub/x.txt", under("ws"), "in the same workspace"},
		{"the subagent recorded through a link", "ws", "link", "sub/x.txt", under("link"), "in the same workspace, recorded as @DIR@/link through a symbolic link"},
		{"the subagent's paths through a link", "ws", "ws", "sub/x.txt", under("link"), "in the same workspace"},
		{"the session recorded through a link", "link", "ws", "sub/x.txt", under("ws"), "in the same workspace, recorded as @DIR@/ws through a symbolic link"},
		{"the subagent recorded through a link to a subdirectory", "ws", "lsub", "x.txt", func(dir, p string) string {
			if rest, ok := strings.CutPrefix(p, "sub/"); ok {
				return filepath.Join(dir, "lsub", rest)
			}
			return filepath.Join(dir, "ws", p)
		}, "in the workspace's subdirectory sub, recorded as @DIR@/lsub through a symbolic link"},
		{"the subagent recorded through a link above the workspace", "ws", "lroot/ws", "sub/x.txt", under("lroot/ws"), "in the same workspace, recorded as @DIR@/lroot/ws through a symbolic link"},
		{"the subagent recorded in a link to the workspace's parent", "ws", "lroot", "ws/sub/x.txt", under("lroot/ws"), "in @DIR@/lroot, a directory containing the workspace through a symbolic link"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, e, parent := claudeFamilyThroughLinks(t, c.pc, c.sc, c.backup, c.sp)
			got, patch, d := diffFiles(t, r, parent)
			if len(got) != 3 || !strings.Contains(patch, "-A0\n+A1\n") || !strings.Contains(patch, "-X0\n+X1\n") || !strings.Contains(patch, "-Y0\n+Y2\n") || len(d.Uncompared) != 0 {
				t.Fatalf("diff: files %v, uncompared %+v, notes %q:\n%s", got, d.Uncompared, d.Notes, patch)
			}
			rw, err := r.Rewind(parent, 3, false)
			if err != nil {
				t.Fatal(err)
			}
			at := func(p string) string { return readFileT(t, filepath.Join(e.dir, "ws", p)) }
			if got := at("a.txt") + at("sub/x.txt") + at("sub/y.txt"); got != "A0\nX0\nY1\n" || len(rw.NotRestored) != 0 {
				t.Fatalf("files: %q, not restored %+v, notes %q", got, rw.NotRestored, rw.Notes)
			}
			if want := "(a Claude Code subagent of this session, " + strings.ReplaceAll(c.where, "@DIR@", e.dir) + ") first changed it"; !notesHave(rw.Notes, "a.txt: put back", want) {
				t.Fatalf("notes %q: no %q", rw.Notes, want)
			}
		})
	}
}

// A Codex subagent recorded in dir/link, a link to the workspace,
// patches "app.py", ws/app.py, after P's patch of it: P's rewind to
// before its patch must count it (undoing P's on the disk would keep the
// subagent's Q, a file that never was), and refuses, saying where the
// subagent was recorded. It had taken the patch for one of
// dir/link/app.py, outside the workspace, and undone P's.
func TestCodexRewindSubagentThroughASymlink(t *testing.T) {
	c := newCodexForkPair(t)
	linkedDirs(t, c.dir)
	c.p = append(c.p, patchLines("p1", "*** Update File: app.py\n@@\n-a\n+A", "00:02")...)
	c.codexSubagentIn(filepath.Join(c.dir, "link"), "*** Update File: app.py\n@@\n-q\n+Q")
	r, p, f, pCalls, _ := c.imported(tree{"app.py": "A\nx\nQ\n"})
	_, err := r.Rewind(p, pCalls[0], false)
	refusedFor(t, err, "app.py", "session "+f.String()+" (a Codex subagent of this session, in the same workspace, recorded as "+filepath.Join(c.dir, "link")+" through a symbolic link) ran the patch of event #")
	if got := c.read("app.py"); got != "A\nx\nQ\n" {
		t.Fatalf("app.py after the refusal: %q", got)
	}
}

// Its diff shows the subagent's patch of n.txt (through the link) with
// P's, said in a note. It had left it out as a file outside the
// workspace (n.txt "1 b", no note).
func TestCodexDiffSubagentThroughASymlink(t *testing.T) {
	c := newCodexForkPair(t)
	linkedDirs(t, c.dir)
	c.p = append(c.p, patchLines("p1", "*** Add File: n.txt\n+1\n+b", "00:02")...)
	c.codexSubagentIn(filepath.Join(c.dir, "lroot", "ws"), "*** Update File: n.txt\n@@\n-1\n+2")
	r, p, f, _, _ := c.imported(tree{"n.txt": "2\nb\n"})
	got, patch, d := diffFiles(t, r, p)
	if len(got) != 1 || got["n.txt"] != "added" || !strings.Contains(patch, "+2\n+b\n") {
		t.Fatalf("files %v:\n%s", got, patch)
	}
	if len(d.Notes) != 1 || !strings.Contains(d.Notes[0], "n.txt: from this session's patches and those of session "+f.String()+" (a Codex subagent of this session), in the order they came") {
		t.Fatalf("notes %q", d.Notes)
	}
}

// workspaceRel names a path from the workspace through links, either
// way, a path that does not exist (or no longer does) by its existing
// ancestor resolved, and leaves out one outside; a link in the workspace
// is its own file, not the one it leads to.
func TestWorkspaceRelThroughSymlinks(t *testing.T) {
	dir := t.TempDir()
	linkedDirs(t, dir)
	if err := os.MkdirAll(filepath.Join(dir, "else"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "else", "g.txt"), filepath.Join(dir, "ws", "f.txt")); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(dir, "ws")
	for _, c := range []struct {
		ws, p, want string // want "" for a path not in ws
	}{
		{ws, filepath.Join(ws, "a.txt"), "a.txt"},
		{ws, filepath.Join(dir, "link", "a.txt"), "a.txt"},
		{filepath.Join(dir, "link"), filepath.Join(ws, "sub", "a.txt"), "sub/a.txt"},
		{ws, filepath.Join(dir, "lsub", "x.txt"), "sub/x.txt"},
		{ws, filepath.Join(dir, "lroot", "ws", "a.txt"), "a.txt"},
		{filepath.Join(dir, "lroot", "ws"), filepath.Join(ws, "a.txt"), "a.txt"},
		{ws, filepath.Join(dir, "link", "gone", "deeper", "f.txt"), "gone/deeper/f.txt"},
		{filepath.Join(dir, "lroot", "gone-ws"), filepath.Join(dir, "gone-ws", "a.txt"), "a.txt"},
		{ws, filepath.Join(dir, "link", "f.txt"), "f.txt"},
		{ws, filepath.Join(dir, "lroot", "else", "a.txt"), ""},
		{ws, filepath.Join(dir, "link", "..", "else", "a.txt"), ""},
		{ws, filepath.Join(dir, "link"), ""},
	} {
		got, ok := workspaceRel(c.ws, c.p)
		if !ok {
			got = ""
		}
		if got != c.want {
			t.Errorf("workspaceRel(%s, %s) = %q, %v; want %q", c.ws, c.p, got, ok, c.want)
		}
	}
}

// While a rewind or diff holds them (holdLinks), each directory is
// resolved once, not for each file in it; let go, a link changed since
// is read again.
func TestRecordedLinksResolvedOnce(t *testing.T) {
	dir := t.TempDir()
	linkedDirs(t, dir)
	ws := filepath.Join(dir, "ws")
	calls := 0
	old := evalSymlinks
	evalSymlinks = func(p string) (string, error) { calls++; return old(p) }
	t.Cleanup(func() { evalSymlinks = old })
	release := holdLinks()
	for i := range 100 {
		if got, ok := workspaceRel(ws, filepath.Join(dir, "link", "sub", fmt.Sprintf("f%d.txt", i))); !ok || got != fmt.Sprintf("sub/f%d.txt", i) {
			t.Fatalf("file %d: %q, %v", i, got, ok)
		}
	}
	if calls != 2 {
		t.Fatalf("%d resolutions for 100 files of one directory, want 2 (it and the workspace)", calls)
	}
	release()
	if err := os.Remove(filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "lroot"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	defer holdLinks()()
	if got, ok := workspaceRel(ws, filepath.Join(dir, "link", "sub", "f0.txt")); ok {
		t.Fatalf("link/sub/f0.txt, link now a link to the workspace's parent: %q, want it outside", got)
	}
}

// A path outside the workspace gives no name, even where it is "../x"
// from it: a subagent's call naming one is no state of the workspace's.
func TestWorkspaceRelOutsideGivesNoName(t *testing.T) {
	dir := t.TempDir()
	linkedDirs(t, dir)
	for _, p := range []string{filepath.Join(dir, "lib", "own.txt"), filepath.Join(dir, "lroot", "lib", "own.txt")} {
		if got, ok := workspaceRel(filepath.Join(dir, "ws"), p); ok || got != "" {
			t.Errorf("workspaceRel(ws, %s) = %q, %v; want \"\", false", p, got, ok)
		}
	}
}
