package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rookhq/rook/eventlog"
)

// A Claude Code subagent's transcript (<session>/subagents/agent-*.jsonl)
// as Claude Code writes it: each line isSidechain, with its agentId and
// its parent's sessionId; a tool result that succeeded has no
// toolUseResult (the enrichment is the main thread's only), one that
// failed is_error and a toolUseResult string "Error: ...".

// sideEnv is a subagent line's fields beside its type and message.
func (e *editTranscript) sideEnv() string {
	return fmt.Sprintf(`"parentUuid":null,"isSidechain":true,"userType":"external","cwd":%q,"sessionId":"s1","version":"2.1.39","gitBranch":"main","agentId":"a1b2c3d","slug":"quiet-little-subagent"`, e.ws)
}

// sideStep appends a subagent's tool call (tool, its input raw JSON) and
// its result: content, is_error as isError says, and toolUseResult as
// given (raw JSON; "" for none).
func (e *editTranscript) sideStep(tool, input, content string, isError bool, toolUseResult string) {
	id := fmt.Sprintf("toolu_side%d", len(e.lines))
	e.lines = append(e.lines, fmt.Sprintf(`{%s,"message":{"model":"claude-sonnet-4-5-20250929","id":"msg_side%d","type":"message","role":"assistant","content":[{"type":"tool_use","id":%q,"name":%q,"input":%s,"caller":{"type":"direct"}}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":3}},"requestId":"req_%d","type":"assistant","uuid":"sa%d","timestamp":%q}`,
		e.sideEnv(), len(e.lines), id, tool, input, len(e.lines), len(e.lines), e.ts()))
	isErr := ""
	if isError {
		isErr = `,"is_error":true`
	}
	tur := ""
	if toolUseResult != "" {
		tur = `,"toolUseResult":` + toolUseResult
	}
	e.lines = append(e.lines, fmt.Sprintf(`{%s,"type":"user","message":{"role":"user","content":[{"tool_use_id":%q,"type":"tool_result","content":%s%s}]},"uuid":"sr%d","timestamp":%q%s,"sourceToolAssistantUUID":"sa%d"}`,
		e.sideEnv(), id, jsonq(content), isErr, len(e.lines), e.ts(), tur, len(e.lines)-1))
}

// sideEdit is a subagent's Edit of abs that succeeded.
func (e *editTranscript) sideEdit(abs, old, new string) {
	e.sideStep("Edit", fmt.Sprintf(`{"file_path":%s,"old_string":%s,"new_string":%s,"replace_all":false}`, jsonq(abs), jsonq(old), jsonq(new)),
		fmt.Sprintf("The file %s has been updated successfully.", abs), false, "")
}

// sidePrompt is a subagent's first line, the prompt its Task gave it.
func (e *editTranscript) sidePrompt(prompt string) {
	e.lines = append(e.lines, fmt.Sprintf(`{%s,"type":"user","message":{"role":"user","content":%s},"uuid":"s0","timestamp":%q}`, e.sideEnv(), jsonq(prompt), e.ts()))
}

// claudeWithUnsaidSubagent is a Claude Code session that edits c.txt (C0
// to C1, events 1 and 2) and calls a Task (3), whose subagent, as Claude
// Code writes one, edits a.txt (A0 to A1) and writes b.txt (B0 to B1),
// its results saying nothing of the files before; its result is 4. Then
// the session edits b.txt (B1 to B2, 5 and 6), its result saying B1. It
// gives the store, the workspace, the session and the subagent's.
func claudeWithUnsaidSubagent(t *testing.T) (*Rook, string, eventlog.ID, eventlog.ID) {
	e := newEditTranscript(t, "fix a, b and c") // :01
	at := func(p string) string { return filepath.Join(e.ws, p) }
	e.edit(at("c.txt"), "C0\n", "C0", "C1") // :02 :03
	e.lines = append(e.lines, claudeTaskCall(e))
	sub := &editTranscript{dir: e.dir, ws: e.ws, n: e.n}
	sub.sidePrompt("edit a and b") // :05
	sub.sideEdit(at("a.txt"), "A0", "A1")
	sub.sideStep("Write", fmt.Sprintf(`{"file_path":%s,"content":"B1\n"}`, jsonq(at("b.txt"))),
		fmt.Sprintf("The file %s has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n     1\tB1", at("b.txt")), false, "")
	e.n = sub.n
	e.lines = append(e.lines, claudeTaskResult(e, `"totalToolUseCount":2,`))
	e.edit(at("b.txt"), "B1\n", "B1", "B2")
	writeTree(t, e.ws, tree{"a.txt": "A1\n", "b.txt": "B2\n", "c.txt": "C1\n"})
	r, ids := importClaudeFiles(t, e, map[string][]string{"s1.jsonl": e.lines, "s1/subagents/agent-a1b2c3d.jsonl": sub.lines})
	return r, e.ws, ids["s1.jsonl"], ids["s1/subagents/agent-a1b2c3d.jsonl"]
}

// uncomparedPaths are the paths of us.
func uncomparedPaths(us []UncomparedFile) []string {
	var out []string
	for _, u := range us {
		out = append(out, u.Path)
	}
	return out
}

// A subagent's edit whose result does not say what the file was is a
// change from a state not known: a rewind to before it leaves the file
// as it is and names it, as it does a file whose own edit result does
// not say. a.txt, which only the subagent changed, had been left unsaid;
// b.txt, which the subagent changed first, had been put back as the
// session's later edit found it (B1, a state it never had at the point).
// c.txt, which the session's own edit says, is put back.
func TestRewindSubagentsEditNotSayingTheFile(t *testing.T) {
	r, ws, parent, sub := claudeWithUnsaidSubagent(t)
	rw, err := r.Rewind(parent, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	rd := func(p string) string { return readFileT(t, filepath.Join(ws, p)) }
	if got := rd("a.txt") + rd("b.txt") + rd("c.txt"); got != "A1\nB2\nC0\n" {
		t.Fatalf("files: %q (not restored %+v)", got, rw.NotRestored)
	}
	if got := uncomparedPaths(rw.NotRestored); !slices.Equal(got, []string{"a.txt", "b.txt"}) {
		t.Fatalf("not restored %+v", rw.NotRestored)
	}
	for _, u := range rw.NotRestored {
		for _, want := range []string{"its state before is not known", "the subagent's edit result that first changed it does not say what it was", "(in session " + sub.String() + ", a Claude Code subagent of this session, which changed it after the point, before this session did)"} {
			if !strings.Contains(u.Error, want) {
				t.Fatalf("%s: %q lacks %q", u.Path, u.Error, want)
			}
		}
	}
	if rw.FilesRestored != 1 {
		t.Fatalf("report %+v", rw)
	}
	// Past the Task's result the subagent is before the point: b.txt is
	// put back as the session's own edit says (B1).
	if _, err := r.Rewind(parent, 5, false); err != nil {
		t.Fatal(err)
	}
	if got := rd("b.txt"); got != "B1\n" {
		t.Fatalf("b.txt after rewinding past the subagent: %q", got)
	}
}

// The parent's diff leaves out what the subagent changed from a state
// not known (b.txt had been compared with B1, the file after the
// subagent's change), and says why: a.txt and b.txt not compared.
func TestDiffSaysASubagentsEditNotSayingTheFile(t *testing.T) {
	r, _, parent, sub := claudeWithUnsaidSubagent(t)
	got, _, d := diffFiles(t, r, parent)
	if len(got) != 1 || got["c.txt"] != "modified" {
		t.Fatalf("files %v, uncompared %+v", got, d.Uncompared)
	}
	if paths := uncomparedPaths(d.Uncompared); !slices.Equal(paths, []string{"a.txt", "b.txt"}) {
		t.Fatalf("uncompared %+v", d.Uncompared)
	}
	if want := "(in session " + sub.String() + ", a Claude Code subagent of this session"; !strings.Contains(d.Uncompared[0].Error, want) {
		t.Fatalf("uncompared %q lacks %q", d.Uncompared[0].Error, want)
	}
	// The subagent's own diff says the same of its files.
	if got, _, d := diffFiles(t, r, sub); len(got) != 0 || !slices.Equal(uncomparedPaths(d.Uncompared), []string{"a.txt", "b.txt"}) {
		t.Fatalf("the subagent's diff: %v, uncompared %+v", got, d.Uncompared)
	}
}

// A known state earlier in time stands: the session's own edit of a.txt
// (A0, after the point) comes before the subagent's, which does not say
// the file; d.txt, which only the subagent changed, is named.
func TestRewindSubagentsUnsaidEditAfterAKnownState(t *testing.T) {
	e := newEditTranscript(t, "go")
	at := func(p string) string { return filepath.Join(e.ws, p) }
	e.edit(at("a.txt"), "A0\n", "A0", "A1") // events 1, 2
	e.lines = append(e.lines, claudeTaskCall(e))
	sub := &editTranscript{dir: e.dir, ws: e.ws, n: e.n}
	sub.sidePrompt("edit a and d")
	sub.sideEdit(at("a.txt"), "A1", "A2")
	sub.sideStep("MultiEdit", fmt.Sprintf(`{"file_path":%s,"edits":[{"old_string":"D0","new_string":"D1","replace_all":false}]}`, jsonq(at("d.txt"))),
		"Applied 1 edit to "+at("d.txt")+":\n1. Replaced \"D0\" with \"D1\"", false, "")
	e.n = sub.n
	e.lines = append(e.lines, claudeTaskResult(e, `"totalToolUseCount":2,`))
	writeTree(t, e.ws, tree{"a.txt": "A2\n", "d.txt": "D1\n"})
	r, ids := importClaudeFiles(t, e, map[string][]string{"s1.jsonl": e.lines, "s1/subagents/agent-a1b2c3d.jsonl": sub.lines})
	rw, err := r.Rewind(ids["s1.jsonl"], 1, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFileT(t, at("a.txt")) + readFileT(t, at("d.txt")); got != "A0\nD1\n" {
		t.Fatalf("files: %q", got)
	}
	if got := uncomparedPaths(rw.NotRestored); !slices.Equal(got, []string{"d.txt"}) {
		t.Fatalf("not restored %+v", rw.NotRestored)
	}
}

// A subagent's edit that failed changed nothing: x.txt (is_error, its
// toolUseResult "Error: ..."), v.txt (is_error alone) and y.txt (a
// toolUseResult "Error: ..." alone) are not named, and a file the subagent backed up before its
// edit (w.txt, its file-history snapshot) is put back from the backup;
// z.txt, whose NotebookEdit succeeded, is named.
func TestRewindSubagentsFailedEditChangesNothing(t *testing.T) {
	e := newEditTranscript(t, "go")
	at := func(p string) string { return filepath.Join(e.ws, p) }
	e.edit(at("c.txt"), "C0\n", "C0", "C1") // events 1, 2
	e.lines = append(e.lines, claudeTaskCall(e))
	sub := &editTranscript{dir: e.dir, ws: e.ws, n: e.n}
	sub.sidePrompt("edit x, v, y, z and w")
	sub.sideStep("Edit", fmt.Sprintf(`{"file_path":%s,"old_string":"nope","new_string":"X1","replace_all":false}`, jsonq(at("x.txt"))),
		"<tool_use_error>String to replace not found in file.\nString: nope</tool_use_error>", true, `"Error: String to replace not found in file.\nString: nope"`)
	sub.sideStep("Edit", fmt.Sprintf(`{"file_path":%s,"old_string":"V0","new_string":"V1","replace_all":false}`, jsonq(at("v.txt"))),
		"The user doesn't want to proceed with this tool use. The tool use was rejected.", true, "")
	sub.sideStep("Write", fmt.Sprintf(`{"file_path":%s,"content":"Y1\n"}`, jsonq(at("y.txt"))),
		"File has not been read yet. Read it first before writing to it.", false, `"Error: File has not been read yet. Read it first before writing to it."`)
	sub.sideStep("NotebookEdit", fmt.Sprintf(`{"notebook_path":%s,"cell_id":"c1","new_source":"print(1)","edit_mode":"replace"}`, jsonq(at("z.ipynb"))),
		"Updated cell c1 with print(1)", false, "")
	bt := fmt.Sprintf("2026-02-10T21:00:%02d.500Z", sub.n)
	sub.lines = append(sub.lines, fmt.Sprintf(`{"type":"file-history-snapshot","messageId":"s0","snapshot":{"messageId":"s0","trackedFileBackups":{"w.txt":{"backupFileName":"h1@v1","version":1,"backupTime":%q}},"timestamp":%q},"isSnapshotUpdate":true}`, bt, bt))
	writeTree(t, filepath.Join(e.dir, "home", ".claude", "file-history", "s1"), tree{"h1@v1": "W0\n"})
	sub.sideEdit(at("w.txt"), "W0", "W1")
	e.n = sub.n
	e.lines = append(e.lines, claudeTaskResult(e, `"totalToolUseCount":5,`))
	writeTree(t, e.ws, tree{"c.txt": "C1\n", "x.txt": "X0\n", "v.txt": "V0\n", "y.txt": "Y0\n", "z.ipynb": "{}\n", "w.txt": "W1\n"})
	r, ids := importClaudeFiles(t, e, map[string][]string{"s1.jsonl": e.lines, "s1/subagents/agent-a1b2c3d.jsonl": sub.lines})
	rw, err := r.Rewind(ids["s1.jsonl"], 1, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := uncomparedPaths(rw.NotRestored); !slices.Equal(got, []string{"z.ipynb"}) {
		t.Fatalf("not restored %+v", rw.NotRestored)
	}
	if got := readFileT(t, at("c.txt")) + readFileT(t, at("x.txt")) + readFileT(t, at("v.txt")) + readFileT(t, at("y.txt")) + readFileT(t, at("w.txt")); got != "C0\nX0\nV0\nY0\nW0\n" {
		t.Fatalf("files: %q", got)
	}
	if _, err := os.Lstat(at("z.ipynb")); err != nil {
		t.Fatalf("z.ipynb: %v", err)
	}
}

// A session that changed files only through its subagent, whose edit
// results say nothing of the files before (as Claude Code writes a
// subagent's), has nothing to put back: the rewind refuses, nothing
// changed, and names the files whose state before is not known, where it
// said only that the transcript had no edit result that succeeded.
func TestRewindOfOnlyASubagentsUnsaidEditsNamesTheFiles(t *testing.T) {
	e := newEditTranscript(t, "delegate a") // :01
	at := func(p string) string { return filepath.Join(e.ws, p) }
	e.lines = append(e.lines, claudeTaskCall(e))
	sub := &editTranscript{dir: e.dir, ws: e.ws, n: e.n}
	sub.sidePrompt("edit a")
	sub.sideEdit(at("a.txt"), "A0", "A1")
	e.n = sub.n
	e.lines = append(e.lines, claudeTaskResult(e, `"totalToolUseCount":1,`))
	writeTree(t, e.ws, tree{"a.txt": "A1\n"})
	r, ids := importClaudeFiles(t, e, map[string][]string{"s1.jsonl": e.lines, "s1/subagents/agent-a1b2c3d.jsonl": sub.lines})
	id := ids["s1.jsonl"]
	var nb *NoFileBackupsError
	_, err := r.Rewind(id, 0, false)
	if !errors.As(err, &nb) {
		t.Fatalf("rewind: %v, want a NoFileBackupsError", err)
	}
	if got := uncomparedPaths(nb.NotKnown); !slices.Equal(got, []string{"a.txt"}) {
		t.Fatalf("not known: %v (%v)", got, err)
	}
	if !strings.Contains(err.Error(), "a.txt") {
		t.Fatalf("the error does not name a.txt: %v", err)
	}
	if b, _ := os.ReadFile(at("a.txt")); string(b) != "A1\n" {
		t.Fatalf("a.txt %q: the refused rewind changed it", b)
	}
}
