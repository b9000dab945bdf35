package agent

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	json "github.com/go-json-experiment/json/v1"

	"github.com/rookhq/rook/internal/fuzzseed"
	"github.com/rookhq/rook/internal/vfs"
)

// A patch's output says whether it applied, in each form Codex writes it;
// anything else is a failure, never a change.
func TestCodexPatchOutcome(t *testing.T) {
	str := func(s string) json.RawMessage { b, _ := json.Marshal(s); return b }
	for _, tc := range []struct {
		out  json.RawMessage
		want string
	}{
		{str("Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nM a\n"), "applied"},
		{str(`{"output":"Success. Updated the following files:\nA a\n","metadata":{"exit_code":0}}`), "applied"},
		{str("Success. Updated the following files:\nD a\n"), "applied"},
		{str("Done!"), "applied"},
		{json.RawMessage(`{"content":"Success","success":true}`), "applied"},
		{str("apply_patch verification failed: Failed to find expected lines in a"), "failed"},
		{str(`{"output":"Success. Updated the following files:\nA a\n","metadata":{"exit_code":1}}`), "failed"},
		{str("Exit code: 1\nWall time: 0 seconds\nOutput:\nerror: invalid patch"), "failed"},
		// Exit code 0 with an output that does not say it applied: not
		// known either way, so no claim that it failed.
		{str("Exit code: 0\nWall time: 0 seconds\nOutput:\npatched, maybe"), "unknown"},
		{str(`{"output":"","metadata":{"exit_code":0}}`), "unknown"},
		{json.RawMessage(`{"content":"no","success":false}`), "failed"},
		// An exec_command's (unified exec): its exit code on a line of
		// its own, before the output.
		{str("Chunk ID: 1\nWall time: 0.0 seconds\nProcess exited with code 0\nOriginal token count: 9\nOutput:\nSuccess. Updated the following files:\nA a\n"), "applied"},
		{str("Chunk ID: 1\nWall time: 0.0 seconds\nProcess exited with code 0\nOutput:\nnothing said\n"), "unknown"},
		{str("Chunk ID: 1\nWall time: 0.0 seconds\nProcess exited with code 1\nOutput:\nSuccess. Updated the following files:\nA a\n"), "failed"},
		{json.RawMessage(`[1,2]`), "failed"},
		{nil, "failed"},
	} {
		if got, why := codexPatchOutcome(tc.out); got != tc.want || got == "failed" && why == "" {
			t.Errorf("%s: %q (%q), want %q", tc.out, got, why, tc.want)
		}
	}
}

// The chunks of an update apply to a file's lines as Codex applies them:
// after their context line, at their old lines (found without trailing
// spaces too), additions alone at the end; a chunk not found leaves the
// lines unknown.
func TestApplyCodexChunks(t *testing.T) {
	file := []string{"def f():", "    pass", "", "def g():", "    pass  "}
	for _, tc := range []struct {
		patch string
		want  string // "" : not found
	}{
		{"@@ def g():\n-    pass\n+    return 1", "def f():|    pass||def g():|    return 1"},
		{"@@\n def f():\n-    pass\n+    return 2", "def f():|    return 2||def g():|    pass  "},
		{"@@\n+# end", "def f():|    pass||def g():|    pass  |# end"},
		{"@@ def h():\n-    pass\n+    x", ""},
		{"@@\n-nowhere\n+x", ""},
	} {
		ops, err := parseCodexPatch("*** Begin Patch\n*** Update File: a.py\n" + tc.patch + "\n*** End Patch")
		if err != nil {
			t.Fatal(err)
		}
		got, ok := applyCodexChunks(file, ops[0].Chunks)
		if tc.want == "" {
			if ok {
				t.Errorf("%q applied: %q", tc.patch, got)
			}
			continue
		}
		if !ok || strings.Join(got, "|") != tc.want {
			t.Errorf("%q: %q %v, want %q", tc.patch, strings.Join(got, "|"), ok, tc.want)
		}
	}
}

// The patch of a call is read from each form Codex writes it in.
func TestCodexCallPatch(t *testing.T) {
	const patch = "*** Begin Patch\n*** Delete File: a\n*** End Patch"
	args := func(v any) json.RawMessage {
		b, _ := json.Marshal(v)
		s, _ := json.Marshal(string(b))
		return s
	}
	str := func(s string) json.RawMessage { b, _ := json.Marshal(s); return b }
	for i, p := range []codexPatchPayload{
		{Type: "custom_tool_call", Name: "apply_patch", Input: str(patch)},
		{Type: "function_call", Name: "apply_patch", Arguments: args(map[string]string{"input": patch})},
		{Type: "function_call", Name: "shell", Arguments: args(map[string]any{"command": []string{"apply_patch", patch}})},
		{Type: "function_call", Name: "shell", Arguments: args(map[string]any{"command": []string{"bash", "-lc", "apply_patch <<'EOF'\n" + patch + "\nEOF\n"}})},
		{Type: "function_call", Name: "shell", Arguments: args(map[string]any{"command": []string{"bash", "-lc", "apply_patch <<'PATCH'\n" + patch + "\nPATCH\n"}})},
		{Type: "function_call", Name: "shell", Arguments: args(map[string]any{"command": []string{"bash", "-lc", "apply_patch <<\"END\"\n" + patch + "\nEND"}})},
		{Type: "local_shell_call", Action: json.RawMessage(`{"type":"exec","command":["apply_patch",` + string(str(patch)) + `]}`)},
	} {
		text, _, _, ok := codexCallPatch(p)
		ops, err := parseCodexPatch(text)
		if !ok || err != nil || len(ops) != 1 || ops[0].Kind != "delete" {
			t.Errorf("%d: %q %v %v", i, text, ok, err)
		}
	}
	if _, _, _, ok := codexCallPatch(codexPatchPayload{Type: "function_call", Name: "shell", Arguments: args(map[string]any{"command": []string{"ls", "-l"}})}); ok {
		t.Error("ls is a patch")
	}
}

// A member of an unexpected type (the format changes often) reads as
// absent: the line, and the patch it holds, are read all the same.
func TestCodexPatchPayloadOddMember(t *testing.T) {
	line := `{"timestamp":"2026-04-01T10:00:00Z","type":"response_item","payload":{"type":"custom_tool_call","status":{"phase":"done"},"call_id":"c1","name":"apply_patch","input":"*** Begin Patch\n*** Delete File: a\n*** End Patch"}}`
	p, ok := codexPatchPayloadOf([]byte(line))
	if !ok || p.CallID != "c1" {
		t.Fatalf("%+v %v", p, ok)
	}
	if text, _, _, ok := codexCallPatch(p); !ok || !strings.Contains(text, "Delete File: a") {
		t.Errorf("patch %q %v", text, ok)
	}
}

// A file the session deleted and then wrote again whole is modified, its
// new content shown: not a deletion with no body.
func TestCodexDeletedThenAdded(t *testing.T) {
	files := map[string]*rolloutFile{}
	for _, patch := range []string{
		"*** Begin Patch\n*** Delete File: a.txt\n*** End Patch",
		"*** Begin Patch\n*** Add File: a.txt\n+new\n*** End Patch",
	} {
		ops, err := parseCodexPatch(patch)
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range ops {
			applyCodexOp(files, "/ws", "", op, false)
		}
	}
	f := files["a.txt"]
	if f == nil || f.status != "modified" || f.noBody != "" || f.added != 1 || !strings.Contains(f.body.String(), "+new\n") {
		t.Fatalf("%+v", f)
	}
}

// The places Codex's own apply (codex-rs/apply-patch, compute_replacements
// and seek_sequence) puts a chunk where a simpler reading would not: the
// file rook then shows whole must be the one Codex wrote, or it invents
// content.
func TestApplyCodexChunksAsCodex(t *testing.T) {
	for _, tc := range []struct {
		name  string
		file  []string // the file's lines, as rolloutFile.known holds them
		patch string
		want  string
	}{
		// A chunk that only adds goes before a last empty line, and Codex
		// writes the file with one newline at its end.
		{"add before a last empty line", []string{"a", ""}, "@@\n+b", "a|b"},
		// ... and leaves where the next chunk is sought where it was.
		{"add then change", []string{"x", "y"}, "@@\n+end\n@@\n-x\n+X", "X|y|end"},
		// A chunk at the end of the file is sought there only, loosely
		// (trailing spaces) before it would match exactly elsewhere.
		{"end of file", []string{"z", "w", "z  "}, "@@\n-z\n+Z\n*** End of File", "z|w|Z"},
		// Codex ends the file with one newline: a last empty line goes.
		{"last empty line dropped", []string{"a", ""}, "@@\n-a\n+b", "b"},
		// Typographic punctuation matches its ASCII form, Codex's last try.
		{"unicode punctuation", []string{"x \u2014 y"}, "@@\n-x - y\n+z", "z"},
		// A removed empty last line the file does not have: sought without.
		{"last removed empty line", []string{"p", "q"}, "@@\n-q\n-\n+r", "p|r"},
		// Trailing spaces are let go before leading ones.
		{"trailing spaces first", []string{"  x", "x "}, "@@\n-x\n+y", "  x|y"},
		// The next chunk is sought after the old lines of the one before.
		{"next after old lines", []string{"a", "b", "a"}, "@@\n-a\n+1\n+2\n+3\n@@\n-a\n+c", "1|2|3|b|c"},
	} {
		ops, err := parseCodexPatch("*** Begin Patch\n*** Update File: a.py\n" + tc.patch + "\n*** End Patch")
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got, ok := applyCodexChunks(tc.file, ops[0].Chunks)
		if !ok || strings.Join(got, "|") != tc.want {
			t.Errorf("%s: %q %v, want %q", tc.name, strings.Join(got, "|"), ok, tc.want)
		}
	}
}

// A shell that ran apply_patch in another directory (its workdir, a
// local_shell_call's working_directory, or `cd dir && apply_patch`) had
// Codex resolve the patch's relative paths there: the diff names the
// files there, not in the turn's directory.
func TestRolloutDiffShellWorkdir(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	const ok = `"Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nA x\n"`
	patch := func(name string) string {
		b, _ := json.Marshal("*** Begin Patch\n*** Add File: " + name + "\n+hi\n*** End Patch\n")
		return string(b)
	}
	args := func(v string) string { b, _ := json.Marshal(v); return string(b) }
	items := []codexItem{
		codexMetaItem(codexPID, ""),
		{"turn_context", `{"cwd":"/home/dev/app","model":"gpt-5"}`},
		{"response_item", `{"type":"function_call","name":"shell","call_id":"c1","arguments":` +
			args(`{"command":["apply_patch",`+patch("a.txt")+`],"workdir":"sub"}`) + `}`},
		{"response_item", `{"type":"function_call_output","call_id":"c1","output":` + ok + `}`},
		{"response_item", `{"type":"function_call","name":"shell","call_id":"c2","arguments":` +
			args(`{"command":["apply_patch",`+patch("b.txt")+`],"workdir":"/home/dev/app/abs"}`) + `}`},
		{"response_item", `{"type":"function_call_output","call_id":"c2","output":` + ok + `}`},
		{"response_item", `{"type":"function_call","name":"shell","call_id":"c3","arguments":` +
			args(`{"command":["bash","-lc","cd lib && apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: c.txt\n+hi\n*** End Patch\nEOF\n"]}`) + `}`},
		{"response_item", `{"type":"function_call_output","call_id":"c3","output":` + ok + `}`},
		{"response_item", `{"type":"local_shell_call","call_id":"c4","status":"completed","action":{"type":"exec","command":["apply_patch",` + patch("d.txt") + `],"working_directory":"/home/dev/app/loc"}}`},
		{"response_item", `{"type":"function_call_output","call_id":"c4","output":` + ok + `}`},
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
		got = append(got, f.Path)
	}
	if want := "abs/b.txt|lib/c.txt|loc/d.txt|sub/a.txt"; strings.Join(got, "|") != want {
		t.Errorf("files %q, want %q (patches %+v)", strings.Join(got, "|"), want, d.Patches)
	}
}

// A patch_apply_end's unified diff: its ---/+++ lines go (the section
// has its own), but a removed line that reads "-- ..." (an SQL or Lua
// comment) is a change like any other, even as the hunk's first line.
func TestWriteUnifiedHunks(t *testing.T) {
	for _, tc := range []struct {
		diff, want string
		added      int
	}{
		{"--- a/q.sql\n+++ b/q.sql\n@@ -1,2 +1,1 @@\n-x\n keep\n", "@@ -1,2 +1,1 @@\n-x\n keep\n", 0},
		{"@@ -1,2 +1,2 @@\n--- drop me\n+++ add me\n keep\n", "@@ -1,2 +1,2 @@\n--- drop me\n+++ add me\n keep\n", 1},
	} {
		var buf bytes.Buffer
		added, removed := writeUnifiedHunks(&buf, tc.diff, false)
		if buf.String() != tc.want || added != tc.added || removed != 1 {
			t.Errorf("%q: %q +%d -%d, want %q +%d -1", tc.diff, buf.String(), added, removed, tc.want, tc.added)
		}
	}
}

// A file the session changed and then deleted: the content the deletion
// holds is the file after the session's own changes, not the file before
// the session, so it is not shown as what the file held (nothing
// invented); the deletion has no body and says why.
func TestCodexChangedThenDeleted(t *testing.T) {
	files := map[string]*rolloutFile{}
	ops, err := parseCodexPatch("*** Begin Patch\n*** Update File: a.txt\n@@\n-old\n+mine\n*** End Patch")
	if err != nil {
		t.Fatal(err)
	}
	applyCodexOp(files, "/ws", "", ops[0], false)
	content := "mine\n"
	if note := applyCodexChange(files, "/ws", "/ws/a.txt", codexFileChangeJSON{Type: "delete", Content: &content}, false); note != "" {
		t.Fatal(note)
	}
	f := files["a.txt"]
	if f == nil || f.status != "removed" || f.noBody == "" || f.removed != 0 || strings.Contains(f.body.String(), "-mine") {
		t.Fatalf("%+v %q", f, f.body.String())
	}
}

// A patch_apply_end's unified diff applies to a file's known lines only
// where each hunk's old lines are the file's at the line it names; else
// the lines are not known (nothing guessed).
func TestApplyUnifiedHunks(t *testing.T) {
	file := []string{"a", "b", "", "c", "d"}
	for _, tc := range []struct {
		name, diff, want string // want "" : does not apply
	}{
		{"change", "@@ -2,1 +2,1 @@\n-b\n+B\n", "a|B||c|d"},
		{"headers and two hunks", "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-a\n+A\n b\n@@ -4,2 +4,3 @@\n c\n d\n+e\n", "A|b||c|d|e"},
		{"insert after a line", "@@ -1,0 +2,1 @@\n+x\n", "a|x|b||c|d"},
		{"insert at the top", "@@ -0,0 +1 @@\n+top\n", "top|a|b||c|d"},
		{"empty kept line written bare", "@@ -2,3 +2,2 @@\n b\n\n-c\n", "a|b||d"},
		{"no hunk", "", "a|b||c|d"},
		{"context differs", "@@ -2,1 +2,1 @@\n-x\n+y\n", ""},
		{"at another line", "@@ -3,1 +3,1 @@\n-b\n+B\n", ""},
		{"counts wrong", "@@ -2,2 +2,1 @@\n-b\n+B\n", ""},
		{"no newline mark", "@@ -5,1 +5,1 @@\n-d\n+D\n\\ No newline at end of file\n", ""},
		{"overlapping hunks", "@@ -2,1 +2,1 @@\n-b\n+B\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n", ""},
		{"past the end", "@@ -6,1 +6,1 @@\n-e\n+f\n", ""},
		{"bad header", "@@ -x +1 @@\n+a\n", ""},
	} {
		got, ok := applyUnifiedHunks(file, tc.diff)
		if tc.want == "" {
			if ok {
				t.Errorf("%s: applied: %q", tc.name, got)
			}
			continue
		}
		if !ok || strings.Join(got, "|") != tc.want {
			t.Errorf("%s: %q %v, want %q", tc.name, strings.Join(got, "|"), ok, tc.want)
		}
	}
}

// unifiedHunkSeeds are a file's lines, a NUL, then a unified diff: one
// that applies, one whose context differs, insertions, a No-newline mark,
// hunk starts past an int (a bad header) and at its edge.
var unifiedHunkSeeds = []string{
	"a\nb\nc\x00@@ -2,1 +2,1 @@\n-b\n+B\n",
	"a\nb\nc\x00--- a/f\n+++ b/f\n@@ -1,3 +1,2 @@\n a\n-x\n c\n",
	"a\x00@@ -1,0 +2,2 @@\n+x\n+y\n",
	"\x00@@ -0,0 +1 @@\n+only\n",
	"a\x00@@ -1 +1 @@\n-a\n+b\n\\ No newline at end of file\n",
	"a\x00@@ -9999999999999999999,1 +1 @@\n-a\n",
	"a\x00@@ -9223372036854775807,2 +1,0 @@\n-a\n-b\n",
}

// Applying any diff to any lines never panics, and what applies changes
// the line count by what the diff adds and removes, as the diff counts
// them when it writes the hunks.
func FuzzApplyUnifiedHunks(f *testing.F) {
	for _, s := range unifiedHunkSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		file, diff, _ := strings.Cut(string(in), "\x00")
		lines := strings.Split(file, "\n")
		got, ok := applyUnifiedHunks(lines, diff)
		if !ok {
			return
		}
		var buf bytes.Buffer
		added, removed := writeUnifiedHunks(&buf, diff, false)
		if len(got) != len(lines)+added-removed {
			t.Fatalf("%d lines became %d, the diff +%d -%d", len(lines), len(got), added, removed)
		}
	})
}

// TestWriteUnifiedHunkFuzzSeeds regenerates testdata/fuzz/FuzzApplyUnifiedHunks
// (ROOK_WRITE_FUZZ_SEEDS=1 go test ./agent -run WriteUnifiedHunkFuzzSeeds).
func TestWriteUnifiedHunkFuzzSeeds(t *testing.T) {
	seeds := make([][]byte, len(unifiedHunkSeeds))
	for i, s := range unifiedHunkSeeds {
		seeds[i] = []byte(s)
	}
	fuzzseed.Write(t, map[string][][]byte{"FuzzApplyUnifiedHunks": seeds})
}

// An Add File over a file the rollout shows existed (Codex overwrites
// it): a modification, from the content the rollout holds when it holds
// the file before the session (a deletion that gave it), else marked as
// written over content it does not hold; never a new file. A file the
// session itself added and then wrote whole again is still new.
func TestCodexAddOverExisting(t *testing.T) {
	str := func(s string) *string { return &s }
	type step struct {
		patch  string              // a patch of the call, or
		change codexFileChangeJSON // a patch_apply_end's change of /ws/a.txt
	}
	for _, tc := range []struct {
		name        string
		steps       []step
		status      string
		overwritten bool
		body        string // in the section's body
		added, rm   int
	}{
		{"deleted with its content, then added", []step{
			{change: codexFileChangeJSON{Type: "delete", Content: str("one\ntwo\n")}},
			{change: codexFileChangeJSON{Type: "add", Content: str("one\n2\n")}},
		}, "modified", false, "@@ -1,2 +1,2 @@\n one\n-two\n+2\n", 1, 1},
		{"updated, then added", []step{
			{patch: "*** Begin Patch\n*** Update File: a.txt\n@@\n-x\n+y\n*** End Patch"},
			{patch: "*** Begin Patch\n*** Add File: a.txt\n+whole\n*** End Patch"},
		}, "modified", true, "@@ -?,? +1 @@\n+whole\n", 2, 1},
		{"deleted unknown, then added", []step{
			{patch: "*** Begin Patch\n*** Delete File: a.txt\n*** End Patch"},
			{patch: "*** Begin Patch\n*** Add File: a.txt\n+new\n*** End Patch"},
		}, "modified", true, "+new\n", 1, 0},
		{"added, then added again", []step{
			{patch: "*** Begin Patch\n*** Add File: a.txt\n+first\n*** End Patch"},
			{patch: "*** Begin Patch\n*** Add File: a.txt\n+second\n*** End Patch"},
		}, "added", false, "@@ -0,0 +1 @@\n+second\n", 1, 0},
	} {
		files := map[string]*rolloutFile{}
		for _, s := range tc.steps {
			if s.patch == "" {
				if note := applyCodexChange(files, "/ws", "/ws/a.txt", s.change, false); note != "" {
					t.Fatal(note)
				}
				continue
			}
			ops, err := parseCodexPatch(s.patch)
			if err != nil {
				t.Fatal(err)
			}
			applyCodexOp(files, "/ws", "", ops[0], false)
		}
		f := files["a.txt"]
		if f == nil {
			t.Fatalf("%s: no a.txt", tc.name)
		}
		if f.status != tc.status || f.overwritten != tc.overwritten || f.added != tc.added || f.removed != tc.rm ||
			!strings.Contains(f.body.String(), tc.body) || f.noBody != "" {
			t.Errorf("%s: %s overwritten %v +%d -%d %q, want %s %v +%d -%d with %q",
				tc.name, f.status, f.overwritten, f.added, f.removed, f.body.String(), tc.status, tc.overwritten, tc.added, tc.rm, tc.body)
		}
	}
}

// A newer Codex's exec_command (unified exec) names its script "cmd", not
// "command": an apply_patch it ran is read all the same, in its workdir.
func TestRolloutDiffExecCommandCmd(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	args := func(v string) string { b, _ := json.Marshal(v); return string(b) }
	const out = `"Chunk ID: 1a2b\nWall time: 0.0 seconds\nProcess exited with code 0\nOriginal token count: 9\nOutput:\nSuccess. Updated the following files:\nA e.txt\n"`
	items := []codexItem{
		codexMetaItem(codexPID, ""),
		{"turn_context", `{"cwd":"/home/dev/app","model":"gpt-5"}`},
		{"response_item", `{"type":"function_call","name":"exec_command","call_id":"c1","arguments":` +
			args(`{"cmd":"apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: e.txt\n+hi\n*** End Patch\nEOF\n","workdir":"sub","yield_time_ms":10000}`) + `}`},
		{"response_item", `{"type":"function_call_output","call_id":"c1","output":` + out + `}`},
	}
	path := fmt.Sprintf("/c/2026/02/03/rollout-2026-02-03T10-00-00-%s.jsonl", codexPID)
	writeSource(t, fsys, path, codexStamped(items, 10, 0), "")
	rep := mustImport(t, r, FormatCodex, "/c")
	d, err := r.Diff(*fileByPath(t, rep, path).Session, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Files) != 1 || d.Files[0].Path != "sub/e.txt" || d.Files[0].Status != "added" {
		t.Fatalf("files %+v, want sub/e.txt added (patches %+v)", d.Files, d.Patches)
	}
}

// A file the session moved and then deleted: what is gone is the file
// it moved (the path it had before the session), not the path it moved
// to, which did not exist before; no rename.
func TestCodexMovedThenDeleted(t *testing.T) {
	files := map[string]*rolloutFile{}
	for _, patch := range []string{
		"*** Begin Patch\n*** Update File: a.txt\n*** Move to: b.txt\n@@\n-x\n+y\n*** End Patch",
		"*** Begin Patch\n*** Delete File: b.txt\n*** End Patch",
	} {
		ops, err := parseCodexPatch(patch)
		if err != nil {
			t.Fatal(err)
		}
		applyCodexOp(files, "/ws", "", ops[0], false)
	}
	f := files["a.txt"]
	if len(files) != 1 || f == nil || f.status != "removed" || f.movedFrom != "" || f.noBody == "" {
		t.Fatalf("files %v, a.txt %+v: want a.txt removed, no rename, no body", mapKeys(files), f)
	}
	if sec := string(rolloutSection(f, "/ws", false)); strings.Contains(sec, "rename") || strings.Contains(sec, "b.txt") {
		t.Fatalf("section:\n%s", sec)
	}
}

func mapKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A move to a path outside the workspace names it from the workspace in
// every header line, never as "b//tmp/...".
func TestCodexMovedOutside(t *testing.T) {
	files := map[string]*rolloutFile{}
	ops, err := parseCodexPatch("*** Begin Patch\n*** Update File: a.txt\n*** Move to: /tmp/x.txt\n@@\n-x\n+y\n*** End Patch")
	if err != nil {
		t.Fatal(err)
	}
	applyCodexOp(files, "/home/dev/shop", "", ops[0], false)
	f := files["/tmp/x.txt"]
	if f == nil || f.movedFrom != "a.txt" {
		t.Fatalf("files %v", mapKeys(files))
	}
	sec := string(rolloutSection(f, "/home/dev/shop", false))
	for _, want := range []string{"diff --git a/a.txt b/../../../tmp/x.txt\n", "rename to ../../../tmp/x.txt\n", "+++ b/../../../tmp/x.txt\n"} {
		if !strings.Contains(sec, want) {
			t.Errorf("section lacks %q:\n%s", want, sec)
		}
	}
	if strings.Contains(sec, "//") {
		t.Errorf("section has a double slash:\n%s", sec)
	}
}

// A file deleted with its content and added again: the same content is
// no change (counted unchanged, no empty section git apply rejects), a
// new content one modification, never hunks "in turn"; one deleted with
// no content, then added, one hunk over content not known, not in turn.
func TestRolloutDiffDeletedThenAddedAgain(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	del := func(id, p string) codexItem {
		return codexItem{"event_msg", `{"type":"patch_apply_end","call_id":"` + id + `","success":true,"changes":{"/home/dev/app/` + p + `":{"type":"delete","content":"a=1\nb=2\n"}}}`}
	}
	add := func(id, p, content string) codexItem {
		return codexItem{"event_msg", `{"type":"patch_apply_end","call_id":"` + id + `","success":true,"changes":{"/home/dev/app/` + p + `":{"type":"add","content":"` + content + `"}}}`}
	}
	items := []codexItem{
		codexMetaItem(codexPID, ""),
		del("c1", "same.txt"), add("c2", "same.txt", `a=1\nb=2\n`),
		del("c3", "new.txt"), add("c4", "new.txt", `a=1\nb=3\n`),
		// deleted with no content, then added: one hunk, over content not known
		{"event_msg", `{"type":"patch_apply_end","call_id":"c5","success":true,"changes":{"/home/dev/app/unknown.txt":{"type":"delete"}}}`},
		add("c6", "unknown.txt", `x\n`),
	}
	path := fmt.Sprintf("/c/2026/02/03/rollout-2026-02-03T10-00-00-%s.jsonl", codexPID)
	writeSource(t, fsys, path, codexStamped(items, 10, 0), "")
	rep := mustImport(t, r, FormatCodex, "/c")
	var out bytes.Buffer
	d, err := r.Diff(*fileByPath(t, rep, path).Session, &out, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Files) != 2 || d.Files[0].Path != "new.txt" || d.Files[1].Path != "unknown.txt" || d.Unchanged != 1 {
		t.Fatalf("files %+v unchanged %d, want new.txt and unknown.txt, same.txt unchanged\n%s", d.Files, d.Unchanged, out.String())
	}
	if f := d.Files[0]; f.Status != "modified" || f.InTurn || f.Added != 1 || f.Removed != 1 {
		t.Fatalf("new.txt %+v, want modified +1 -1, not in turn", f)
	}
	if f := d.Files[1]; f.Status != "modified" || f.InTurn || !f.Overwritten || f.Added != 1 || f.Removed != 0 {
		t.Fatalf("unknown.txt %+v, want modified +1 -0, overwritten, not in turn", f)
	}
	if strings.Contains(out.String(), "same.txt") {
		t.Fatalf("patch names same.txt:\n%s", out.String())
	}
}
