package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/eventlog"
)

// A subagent started after a `cd ../lib` is recorded in dir/lib, a
// sibling of the workspace dir/ws: Claude Code's Edit takes absolute
// paths, and it edited the workspace's sub/x.txt, sub/y.txt and a.txt
// all the same (its backup, of its own x.txt, is a capture of dir/lib).
// It was passed over as elsewhere, silently: the rewind to before the
// Task left the three as it had left them (A1, X1, Y2, where they were
// A0, X0, Y1), exit 0, no note, and the diff showed sub/y.txt alone.
func TestRewindFamilySubagentInASiblingDirectory(t *testing.T) {
	r, e, parent := claudeFamilyInDirs(t, "ws", "lib", "x.txt")
	rw, err := r.Rewind(parent, 3, false)
	if err != nil {
		t.Fatal(err)
	}
	at := func(p string) string { return readFileT(t, filepath.Join(e.ws, p)) }
	if got := at("a.txt") + at("sub/x.txt") + at("sub/y.txt"); got != "A0\nX0\nY1\n" {
		t.Fatalf("files: %q", got)
	}
	lib := filepath.Join(e.dir, "lib")
	if want := "(a Claude Code subagent of this session, recorded in " + lib + ", outside the workspace) first changed it"; !notesHave(rw.Notes, "a.txt: put back", want) {
		t.Fatalf("notes %q: no %q", rw.Notes, want)
	}
	// Its backup of its own x.txt, outside the workspace, is not the
	// rewind's: nothing is written there.
	if _, err := os.Lstat(filepath.Join(lib, "x.txt")); !os.IsNotExist(err) {
		t.Fatalf("%s: %v, want it not there", filepath.Join(lib, "x.txt"), err)
	}
}

// Its diff shows the three, a.txt and sub/x.txt (which only the subagent
// changed) each with its note, as the rewind to 0 reads them.
func TestDiffSubagentInASiblingDirectory(t *testing.T) {
	r, _, parent := claudeFamilyInDirs(t, "ws", "lib", "x.txt")
	got, patch, d := diffFiles(t, r, parent)
	if len(got) != 3 || got["a.txt"] != "modified" || got["sub/x.txt"] != "modified" || got["sub/y.txt"] != "modified" ||
		!strings.Contains(patch, "-A0\n+A1\n") || !strings.Contains(patch, "-X0\n+X1\n") || !strings.Contains(patch, "-Y0\n+Y2\n") {
		t.Fatalf("files %v:\n%s", got, patch)
	}
	for _, p := range []string{"a.txt", "sub/x.txt"} {
		if !notesHave(d.Notes, p+": compared with the file as it was before session", "(a Claude Code subagent of this session) changed it") {
			t.Fatalf("notes %q: none of %s", d.Notes, p)
		}
	}
}

// claudeSiblingOwnFiles is a parent in dir/ws that edits a.txt A0 -> A1
// (events 1, 2), calls the Task (3), and after its result (4) edits a.txt
// A1 -> A2 (5, 6); its subagent, recorded in dir/lib (after a `cd
// ../lib`), edits only dir/lib's own.txt O0 -> O1, its lines naming a
// backup of it (O0) by the path from its cwd.
func claudeSiblingOwnFiles(t *testing.T) (*Rook, *editTranscript, eventlog.ID) {
	e := newEditTranscript(t, "go")
	lib := filepath.Join(e.dir, "lib")
	e.edit(filepath.Join(e.ws, "a.txt"), "A0\n", "A0", "A1")
	e.lines = append(e.lines, claudeTaskCall(e))
	sub := &editTranscript{dir: e.dir, ws: lib, n: e.n}
	sub.lines = append(sub.lines, fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":"look"},"uuid":"s0","timestamp":%q}`, sub.env(), sub.ts()))
	bt := fmt.Sprintf("2026-02-10T21:00:%02d.500Z", sub.n)
	sub.lines = append(sub.lines, fmt.Sprintf(`{"type":"file-history-snapshot","messageId":"s0","snapshot":{"messageId":"s0","trackedFileBackups":{"own.txt":{"backupFileName":"h1@v1","version":1,"backupTime":%q}},"timestamp":%q},"isSnapshotUpdate":true}`, bt, bt))
	sub.edit(filepath.Join(lib, "own.txt"), "O0\n", "O0", "O1")
	for i, l := range sub.lines {
		sub.lines[i] = strings.Replace(l, `"sessionId":"s1",`, `"sessionId":"s1","isSidechain":true,"agentId":"a1b2c3d",`, 1)
	}
	e.n = sub.n
	e.lines = append(e.lines, claudeTaskResult(e, `"totalToolUseCount":1,`))
	e.edit(filepath.Join(e.ws, "a.txt"), "A1\n", "A1", "A2")
	writeTree(t, e.ws, tree{"a.txt": "A2\n"})
	writeTree(t, lib, tree{"own.txt": "O1\n"})
	writeTree(t, filepath.Join(e.dir, "home", ".claude", "file-history", "s1"), tree{"h1@v1": "O0\n"})
	r, ids := importClaudeFiles(t, e, map[string][]string{"s1.jsonl": e.lines, "s1/subagents/agent-a1b2c3d.jsonl": sub.lines})
	return r, e, ids["s1.jsonl"]
}

// A sibling subagent that edited only its own directory's files is read
// and gives the rewind nothing: a.txt is put back from the parent's own
// edit (A1), dir/lib/own.txt is left O1, no note names the subagent, and
// nothing is refused (its capture, of dir/lib, holds no workspace file).
// Its diff is the parent's own.
func TestRewindFamilySubagentInASiblingDirectoryEditingItsOwnFiles(t *testing.T) {
	r, e, parent := claudeSiblingOwnFiles(t)
	if got, patch, d := diffFiles(t, r, parent); len(got) != 1 || got["a.txt"] != "modified" || len(d.Notes) != 0 {
		t.Fatalf("diff %v, notes %q:\n%s", got, d.Notes, patch)
	}
	rw, err := r.Rewind(parent, 3, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rw.Notes) != 0 {
		t.Fatalf("notes %q", rw.Notes)
	}
	if got := readFileT(t, filepath.Join(e.ws, "a.txt")) + readFileT(t, filepath.Join(e.dir, "lib", "own.txt")); got != "A1\nO1\n" {
		t.Fatalf("files: %q", got)
	}
}
