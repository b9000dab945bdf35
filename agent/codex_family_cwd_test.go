package agent

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// codexSubagentIn adds to c a Codex subagent of P whose session_meta cwd
// is dir (its rollout has no turn_context), started at 03:00, that
// applies patch (relative paths: against dir) at 03:02.
func (c *codexForkPair) codexSubagentIn(dir, patch string) {
	c.f = append(c.f, codexItem{"session_meta", fmt.Sprintf(`{"id":%q,"cwd":%q,"originator":"codex_cli_rs","cli_version":"0.80.0","source":{"subagent":{"thread_spawn":{"parent_thread_id":%q}}}}`, codexFID, dir, codexPID)}.at(stampAt("03:00")))
	c.f = append(c.f, patchLines("s1", patch, "03:02")...)
}

// A Codex subagent recorded in ws/sub patches "app.py", ws/sub/app.py,
// after P's patch of sub/app.py: a rewind of P to before its patch must
// not undo it on the disk keeping the subagent's Q (a file that never
// was). The refusal says where the subagent was recorded: not "in the
// same workspace", as it had.
func TestCodexRewindSubagentInASubdirectoryWritesItsOwnCwdsFile(t *testing.T) {
	c := newCodexForkPair(t)
	c.p = append(c.p, patchLines("p1", "*** Update File: sub/app.py\n@@\n-a\n+A", "00:02")...)
	c.codexSubagentIn(filepath.Join(c.ws, "sub"), "*** Update File: app.py\n@@\n-q\n+Q")
	r, p, f, pCalls, _ := c.imported(tree{"sub/app.py": "A\nx\nQ\n", "app.py": "q\n"})
	_, err := r.Rewind(p, pCalls[0], false)
	refusedFor(t, err, "sub/app.py", "session "+f.String()+" (a Codex subagent of this session, in the workspace's subdirectory sub) ran the patch of event #")
	if got := c.read("sub/app.py"); got != "A\nx\nQ\n" {
		t.Fatalf("sub/app.py after the refusal: %q", got)
	}
}

// Its patch of "app.py" is not one of ws/app.py: P's rewind to before
// its own patch of app.py is not refused for it.
func TestCodexRewindSubagentInASubdirectoryNotTheWorkspacesFile(t *testing.T) {
	c := newCodexForkPair(t)
	c.p = append(c.p, patchLines("p1", "*** Update File: app.py\n@@\n-a\n+A", "00:02")...)
	c.codexSubagentIn(filepath.Join(c.ws, "sub"), "*** Update File: app.py\n@@\n-q\n+Q")
	r, p, _, pCalls, _ := c.imported(tree{"app.py": "A\nx\n", "sub/app.py": "Q\n"})
	if _, err := r.Rewind(p, pCalls[0], false); err != nil {
		t.Fatal(err)
	}
	if got := c.read("app.py") + c.read("sub/app.py"); got != "a\nx\nQ\n" {
		t.Fatalf("files: %q", got)
	}
}

// A Codex subagent recorded in the directory the workspace is in patches
// "ws/app.py", P's app.py: the refusal says so, not that it was in the
// same workspace.
func TestCodexRewindSubagentInTheWorkspacesParent(t *testing.T) {
	c := newCodexForkPair(t)
	c.p = append(c.p, patchLines("p1", "*** Update File: app.py\n@@\n-a\n+A", "00:02")...)
	c.codexSubagentIn(c.dir, "*** Update File: ws/app.py\n@@\n-q\n+Q")
	r, p, f, pCalls, _ := c.imported(tree{"app.py": "A\nx\nQ\n"})
	_, err := r.Rewind(p, pCalls[0], false)
	refusedFor(t, err, "app.py", "session "+f.String()+" (a Codex subagent of this session, in "+c.dir+", a directory containing the workspace) ran the patch of event #")
}

// A Codex subagent recorded in lib, a sibling of the workspace ws (after
// a `cd ../lib`), patches "../ws/n.txt", P's n.txt, and adds its own
// own.py in lib. P's diff had passed it over as elsewhere (n.txt "1 b",
// no note): it shows n.txt as the patches left it, said in a note, and
// not own.py, outside the workspace.
func TestCodexDiffSubagentInASiblingDirectory(t *testing.T) {
	c := newCodexForkPair(t)
	c.p = append(c.p, patchLines("p1", "*** Add File: n.txt\n+1\n+b", "00:02")...)
	c.codexSubagentIn(filepath.Join(c.dir, "lib"), "*** Update File: ../ws/n.txt\n@@\n-1\n+2\n*** Add File: own.py\n+o")
	r, p, f, _, _ := c.imported(tree{"n.txt": "2\nb\n"})
	got, patch, d := diffFiles(t, r, p)
	if len(got) != 1 || got["n.txt"] != "added" || !strings.Contains(patch, "+2\n+b\n") {
		t.Fatalf("files %v:\n%s", got, patch)
	}
	if len(d.Notes) != 1 || !strings.Contains(d.Notes[0], "n.txt: from this session's patches and those of session "+f.String()+" (a Codex subagent of this session), in the order they came") {
		t.Fatalf("notes %q", d.Notes)
	}
}

// Its patch of P's app.py is counted by P's rewind, as any linked
// session's is: the refusal says it was recorded outside the workspace.
func TestCodexRewindSubagentInASiblingDirectory(t *testing.T) {
	c := newCodexForkPair(t)
	c.p = append(c.p, patchLines("p1", "*** Update File: app.py\n@@\n-a\n+A", "00:02")...)
	lib := filepath.Join(c.dir, "lib")
	c.codexSubagentIn(lib, "*** Update File: ../ws/app.py\n@@\n-q\n+Q")
	r, p, f, pCalls, _ := c.imported(tree{"app.py": "A\nx\nQ\n"})
	_, err := r.Rewind(p, pCalls[0], false)
	refusedFor(t, err, "app.py", "session "+f.String()+" (a Codex subagent of this session, recorded in "+lib+", outside the workspace) ran the patch of event #")
}
