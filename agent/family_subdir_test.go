package agent

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/eventlog"
)

// claudeSubagentInSubdir is claudeWithSubagent's parent with a subagent
// started while the parent's shell was in ws/sub (after a `cd sub`):
// Claude Code records its cwd, so its session's workspace, as ws/sub. The
// parent edits a.txt A0 -> A1 (events 1, 2) and calls the Task (3); the
// subagent edits sub/x.txt X0 -> X1 and a.txt A1 -> A2; its result is 4.
// With backup, the subagent's file-history snapshot names a backup of
// sub/x.txt (X0), as Claude Code names it from its cwd: "x.txt"; the
// import captures it with the subagent's workspace, ws/sub, as its root.
func claudeSubagentInSubdir(t *testing.T, backup bool) (*Rook, *editTranscript, eventlog.ID) {
	e := newEditTranscript(t, "go")
	at := func(p string) string { return filepath.Join(e.ws, p) }
	e.edit(at("a.txt"), "A0\n", "A0", "A1")
	e.lines = append(e.lines, claudeTaskCall(e))
	sub := &editTranscript{dir: e.dir, ws: at("sub"), n: e.n}
	sub.lines = append(sub.lines, fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":"look"},"uuid":"s0","timestamp":%q}`, sub.env(), sub.ts()))
	if backup {
		bt := fmt.Sprintf("2026-02-10T21:00:%02d.500Z", sub.n)
		sub.lines = append(sub.lines, fmt.Sprintf(`{"type":"file-history-snapshot","messageId":"s0","snapshot":{"messageId":"s0","trackedFileBackups":{"x.txt":{"backupFileName":"h1@v1","version":1,"backupTime":%q}},"timestamp":%q},"isSnapshotUpdate":true}`, bt, bt))
		writeTree(t, filepath.Join(e.dir, "home", ".claude", "file-history", "s1"), tree{"h1@v1": "X0\n"})
	}
	sub.edit(at("sub/x.txt"), "X0\n", "X0", "X1")
	sub.edit(at("a.txt"), "A1\n", "A1", "A2")
	for i, l := range sub.lines {
		sub.lines[i] = strings.Replace(l, `"sessionId":"s1",`, `"sessionId":"s1","isSidechain":true,"agentId":"a1b2c3d",`, 1)
	}
	e.n = sub.n
	e.lines = append(e.lines, claudeTaskResult(e, `"totalToolUseCount":2,`))
	writeTree(t, e.ws, tree{"a.txt": "A2\n", "sub/x.txt": "X1\n"})
	r, ids := importClaudeFiles(t, e, map[string][]string{"s1.jsonl": e.lines, "s1/subagents/agent-a1b2c3d.jsonl": sub.lines})
	return r, e, ids["s1.jsonl"]
}

// The subagent's workspace is a directory in the parent's: it edited the
// parent's files all the same. A rewind to before the Task puts back
// what it changed (a.txt A1, sub/x.txt X0), where it left them as the
// subagent did (A2, X1) and exited 0.
func TestRewindFamilySubagentInASubdirectory(t *testing.T) {
	r, e, parent := claudeSubagentInSubdir(t, false)
	rw, err := r.Rewind(parent, 3, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFileT(t, filepath.Join(e.ws, "a.txt")) + readFileT(t, filepath.Join(e.ws, "sub", "x.txt")); got != "A1\nX0\n" {
		t.Fatalf("files: %q", got)
	}
	// Its notes say where the subagent was recorded: not "in the same
	// workspace", as they had.
	if want := "(a Claude Code subagent of this session, in the workspace's subdirectory sub) first changed it"; !notesHave(rw.Notes, "sub/x.txt: put back", want) {
		t.Fatalf("notes %q: no %q", rw.Notes, want)
	}
}

// notesHave says whether a note begins with prefix and holds want.
func notesHave(notes []string, prefix, want string) bool {
	for _, n := range notes {
		if strings.HasPrefix(n, prefix) && strings.Contains(n, want) {
			return true
		}
	}
	return false
}

// Its diff shows sub/x.txt, which only the subagent changed, as the
// rewind to 0 reads it.
func TestDiffSubagentInASubdirectory(t *testing.T) {
	r, _, parent := claudeSubagentInSubdir(t, false)
	got, patch, d := diffFiles(t, r, parent)
	if len(got) != 2 || got["a.txt"] != "modified" || got["sub/x.txt"] != "modified" || !strings.Contains(patch, "-X0\n+X1\n") || !strings.Contains(patch, "-A0\n+A2\n") {
		t.Fatalf("files %v:\n%s", got, patch)
	}
	if len(d.Notes) != 1 || !strings.Contains(d.Notes[0], "sub/x.txt: compared with the file as it was before session") {
		t.Fatalf("notes %q", d.Notes)
	}
}

// Its capture, of ws/sub, is read from ws (sub/x.txt): the subagent was
// passed over whole (its captures' root not ws), the rewind left a.txt A2
// and sub/x.txt X1, exit 0, no note, and the diff showed a.txt only.
func TestRewindFamilySubagentInASubdirectoryWithBackups(t *testing.T) {
	r, e, parent := claudeSubagentInSubdir(t, true)
	got, patch, _ := diffFiles(t, r, parent)
	if len(got) != 2 || got["sub/x.txt"] != "modified" || !strings.Contains(patch, "-X0\n+X1\n") {
		t.Fatalf("diff: %v\n%s", got, patch)
	}
	if _, err := r.Rewind(parent, 3, false); err != nil {
		t.Fatal(err)
	}
	if got := readFileT(t, filepath.Join(e.ws, "a.txt")) + readFileT(t, filepath.Join(e.ws, "sub", "x.txt")); got != "A1\nX0\n" {
		t.Fatalf("files: %q", got)
	}
}

// claudeFamilyInDirs is a parent recorded in dir/pc and its subagent in
// dir/sc (each a cwd Claude Code records), the files under dir/ws: the
// parent edits sub/y.txt Y0 -> Y1 (events 1, 2) and calls the Task (3);
// the subagent edits sub/x.txt X0 -> X1 (its lines naming a backup of it,
// by the path from its cwd, backup), sub/y.txt Y1 -> Y2 and a.txt A0 -> A1.
func claudeFamilyInDirs(t *testing.T, pc, sc, backup string) (*Rook, *editTranscript, eventlog.ID) {
	e := newEditTranscript(t, "go")
	root := e.ws
	at := func(p string) string { return filepath.Join(root, p) }
	e.ws, e.n = filepath.Join(e.dir, pc), 0
	e.lines = []string{fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":"go"},"uuid":"u0","timestamp":%q}`, e.env(), e.ts())}
	e.edit(at("sub/y.txt"), "Y0\n", "Y0", "Y1")
	e.lines = append(e.lines, claudeTaskCall(e))
	sub := &editTranscript{dir: e.dir, ws: filepath.Join(e.dir, sc), n: e.n}
	sub.lines = append(sub.lines, fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":"look"},"uuid":"s0","timestamp":%q}`, sub.env(), sub.ts()))
	bt := fmt.Sprintf("2026-02-10T21:00:%02d.500Z", sub.n)
	sub.lines = append(sub.lines, fmt.Sprintf(`{"type":"file-history-snapshot","messageId":"s0","snapshot":{"messageId":"s0","trackedFileBackups":{%q:{"backupFileName":"h1@v1","version":1,"backupTime":%q}},"timestamp":%q},"isSnapshotUpdate":true}`, backup, bt, bt))
	sub.edit(at("sub/x.txt"), "X0\n", "X0", "X1")
	sub.edit(at("sub/y.txt"), "Y1\n", "Y1", "Y2")
	sub.edit(at("a.txt"), "A0\n", "A0", "A1")
	for i, l := range sub.lines {
		sub.lines[i] = strings.Replace(l, `"sessionId":"s1",`, `"sessionId":"s1","isSidechain":true,"agentId":"a1b2c3d",`, 1)
	}
	e.n = sub.n
	e.lines = append(e.lines, claudeTaskResult(e, `"totalToolUseCount":3,`))
	writeTree(t, root, tree{"a.txt": "A1\n", "sub/x.txt": "X1\n", "sub/y.txt": "Y2\n"})
	writeTree(t, filepath.Join(e.dir, "home", ".claude", "file-history", "s1"), tree{"h1@v1": "X0\n"})
	r, ids := importClaudeFiles(t, e, map[string][]string{"s1.jsonl": e.lines, "s1/subagents/agent-a1b2c3d.jsonl": sub.lines})
	e.ws = root
	return r, e, ids["s1.jsonl"]
}

// A subagent started after a `cd ..` (recorded in the workspace's
// parent) edited the workspace's files all the same: it was passed over
// as elsewhere, and the rewind to before the Task left a.txt A1, sub/x.txt
// X1 and sub/y.txt Y2 (A0, X0, Y1 then), exit 0, no note.
func TestRewindFamilySubagentInTheWorkspacesParent(t *testing.T) {
	r, e, parent := claudeFamilyInDirs(t, "ws", ".", "ws/sub/x.txt")
	if got, _, _ := diffFiles(t, r, parent); len(got) != 3 {
		t.Fatalf("diff: %v", got)
	}
	rw, err := r.Rewind(parent, 3, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := "(a Claude Code subagent of this session, in " + e.dir + ", a directory containing the workspace) first changed it"; !notesHave(rw.Notes, "a.txt: put back", want) {
		t.Fatalf("notes %q: no %q", rw.Notes, want)
	}
	at := func(p string) string { return readFileT(t, filepath.Join(e.ws, p)) }
	if got := at("a.txt") + at("sub/x.txt") + at("sub/y.txt"); got != "A0\nX0\nY1\n" {
		t.Fatalf("files: %q", got)
	}
}

// A parent started in ws/sub, its subagent in ws (after a `cd ..`): the
// subagent's edits of the parent's workspace (x.txt, y.txt) are read,
// its capture of ws read from ws/sub; a.txt, outside the parent's
// workspace, is not its rewind's.
func TestRewindFamilyParentInASubdirectory(t *testing.T) {
	r, e, parent := claudeFamilyInDirs(t, "ws/sub", "ws", "sub/x.txt")
	if got, _, _ := diffFiles(t, r, parent); len(got) != 2 || got["x.txt"] != "modified" || got["y.txt"] != "modified" {
		t.Fatalf("diff: %v", got)
	}
	if _, err := r.Rewind(parent, 3, false); err != nil {
		t.Fatal(err)
	}
	at := func(p string) string { return readFileT(t, filepath.Join(e.ws, p)) }
	if got := at("a.txt") + at("sub/x.txt") + at("sub/y.txt"); got != "A1\nX0\nY1\n" {
		t.Fatalf("files: %q", got)
	}
}
