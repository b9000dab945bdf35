package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// workspaceStore is a workspace and a store made with `rook init`, and
// how to run rook in them: its exit code, stdout and stderr.
func workspaceStore(t *testing.T) (ws string, run func(args ...string) (int, string, string)) {
	t.Helper()
	dir := t.TempDir()
	home := filepath.Join(dir, "store")
	ws = filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o755)
	run = func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Main(append([]string{"--home", home, "-C", ws}, args...), strings.NewReader(""), &out, &errb)
		return code, out.String(), errb.String()
	}
	if code, _, e := run("init"); code != 0 {
		t.Fatal(e)
	}
	return ws, run
}

// A path given to `rook session capture` reaches the capture byte for
// byte: kong's string decoding turns bytes that are not UTF-8 into
// U+FFFD, which named another path (absent), so the file the tool was
// about to change went uncaptured and the command said it had worked.
func TestSessionCaptureKeepsThePathsBytes(t *testing.T) {
	ws, run := workspaceStore(t)
	code, out, e := run("session", "new")
	if code != 0 {
		t.Fatal(e)
	}
	id := strings.TrimSpace(out)
	name := "bad\xff.txt"
	os.WriteFile(filepath.Join(ws, name), []byte("x\n"), 0o644)
	code, out, e = run("session", "capture", id, name)
	if code == 0 || !strings.Contains(e, "cannot be recorded") {
		t.Fatalf("capture of %q: exit %d, %q %q: want a refusal naming it", name, code, out, e)
	}
}

// `rook session diff --stat` writes one line a file: a name with a line
// break or an escape sequence in it made two lines of one, or reached the
// terminal as a command.
func TestDiffStatWritesANameOnOneLine(t *testing.T) {
	ws, run := workspaceStore(t)
	_, out, _ := run("session", "new")
	id := strings.TrimSpace(out)
	name := "two\nlines\x1b[2J.txt"
	if code, _, e := run("session", "capture", id, name); code != 0 {
		t.Fatal(e)
	}
	os.WriteFile(filepath.Join(ws, name), []byte("x\n"), 0o644)
	code, out, e := run("session", "diff", "--stat", id)
	if code != 0 {
		t.Fatal(e)
	}
	if lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); len(lines) != 2 || strings.Contains(out, "\x1b") {
		t.Fatalf("diff --stat of one file:\n%q", out)
	}
}

// `rook checkpoint create` names on stderr what it skipped (a link leading
// outside the workspace): a name with an escape sequence or a line break
// in it reaches the terminal cleaned, one line.
func TestCheckpointSkippedNamesAreCleaned(t *testing.T) {
	ws, run := workspaceStore(t)
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644)
	if err := os.Symlink("/etc/hostname", filepath.Join(ws, "out\x1b[2J\nside")); err != nil {
		t.Skip(err)
	}
	code, _, e := run("checkpoint", "create", "c")
	if code != 0 {
		t.Fatal(e)
	}
	if !strings.Contains(e, "rook: skipped ") || strings.Contains(e, "\x1b") || strings.Count(e, "\n") != 1 {
		t.Fatalf("stderr %q", e)
	}
}

// The files `rook import`, `rook store put`, `rook session append` and
// `rook session export-html -o` are given on the command line are used
// byte for byte: a name that is not UTF-8 (a Latin-1 "café") was taken as
// one with U+FFFD in it (not there; written under that other name).
func TestFileArgumentsKeepTheirBytes(t *testing.T) {
	ws, run := workspaceStore(t)
	name := filepath.Join(ws, "caf\xe9.jsonl")
	line := `{"type":"user","sessionId":"s1","uuid":"u1","timestamp":"2026-01-01T00:00:00Z","cwd":"/p","message":{"role":"user","content":"hi"}}` + "\n"
	if err := os.WriteFile(name, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, e := run("import", "claude-code", name)
	if code != 0 || !strings.Contains(out, "1 new,") {
		t.Fatalf("import %q: exit %d, %q %q", name, code, out, e)
	}
	if code, out, e := run("store", "put", name); code != 0 || len(strings.TrimSpace(out)) != 32 {
		t.Fatalf("store put %q: exit %d, %q %q", name, code, out, e)
	}
	_, out, _ = run("session", "new")
	id := strings.TrimSpace(out)
	if code, out, e := run("session", "append", "--kind", "user", id, name); code != 0 {
		t.Fatalf("session append %q: exit %d, %q %q", name, code, out, e)
	}
	html := filepath.Join(ws, "caf\xe9.html")
	if code, out, e := run("session", "export-html", id, "-o", html); code != 0 {
		t.Fatalf("session export-html -o %q: exit %d, %q %q", html, code, out, e)
	}
	if _, err := os.Stat(html); err != nil {
		t.Fatalf("export-html -o %q: %v", html, err)
	}
}

// stopAtB sets up a rewind or restore that stops part way: a.txt and
// b.txt in ws hold "old" when snapshot captures them and "new" after, and
// b.txt is made immutable (even root cannot replace it), so going back
// to the snapshot writes a.txt and stops at b.txt. It skips the test
// where no file can be made immutable. thaw makes b.txt writable again
// (done at cleanup too).
func stopAtB(t *testing.T, ws string, snapshot func()) (thaw func()) {
	t.Helper()
	write := func(content string) {
		for _, f := range []string{"a.txt", "b.txt"} {
			if err := os.WriteFile(filepath.Join(ws, f), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	write("old\n")
	snapshot()
	write("new\n")
	b := filepath.Join(ws, "b.txt")
	if err := exec.Command("chattr", "+i", b).Run(); err != nil {
		t.Skipf("chattr +i %s: %v (no immutable files here)", b, err)
	}
	thaw = func() { exec.Command("chattr", "-i", b).Run() }
	t.Cleanup(thaw)
	return thaw
}

// A rewind that stops part way (here at b.txt, made immutable: even root
// cannot replace it) has written a.txt already. Under --json it said so
// only in its error's prose: the fork and the undo that puts a.txt back
// were in the message, not fields a script reads. Now the error's line
// has them as fields too, beside what the rewind had done by then.
func TestRewindStoppedPartWaySaysItsUndoAsFields(t *testing.T) {
	ws, run := workspaceStore(t)
	var id string
	thaw := stopAtB(t, ws, func() {
		_, out, _ := run("session", "new")
		id = strings.TrimSpace(out)
		if code, _, e := run("session", "capture", id, "a.txt", "b.txt"); code != 0 {
			t.Fatal(e)
		}
	})
	code, out, e := run("--json", "session", "rewind", id, "--to", "0")
	if code != 1 {
		t.Fatalf("rewind onto an immutable b.txt: exit %d, %q %q", code, out, e)
	}
	var got struct {
		Error     string          `json:"error"`
		ExitCode  int             `json:"exit_code"`
		Fork      string          `json:"fork"`
		BeforeSeq *uint64         `json:"before_seq"`
		Undo      string          `json:"undo"`
		Done      json.RawMessage `json:"done"`
	}
	if err := json.Unmarshal([]byte(e), &got); err != nil {
		t.Fatalf("stderr %q: %v", e, err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "old\n" {
		t.Skipf("the rewind did not write a.txt before b.txt (%q): not stopped part way", b)
	}
	if got.Fork == "" || got.BeforeSeq == nil || got.Undo == "" || !strings.Contains(got.Error, got.Undo) || !strings.Contains(string(got.Done), `"files_restored": 1`) && !strings.Contains(string(got.Done), `"files_restored":1`) {
		t.Fatalf("the error of a rewind stopped part way: %s\nwant fork, before_seq, undo (%q in the message) and done (files_restored 1) as fields", e, got.Undo)
	}
	thaw()
	if code, _, e := run(strings.Fields(got.Undo)[1:]...); code != 0 {
		t.Fatalf("the undo %q: %s", got.Undo, e)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "new\n" {
		t.Fatalf("a.txt after the undo: %q", b)
	}
}

// The same for a checkpoint restore: the save and the undo as fields.
func TestRestoreStoppedPartWaySaysItsUndoAsFields(t *testing.T) {
	ws, run := workspaceStore(t)
	stopAtB(t, ws, func() {
		if code, _, e := run("checkpoint", "create", "c"); code != 0 {
			t.Fatal(e)
		}
	})
	code, out, e := run("--json", "checkpoint", "restore", "c")
	if code != 1 {
		t.Fatalf("restore onto an immutable b.txt: exit %d, %q %q", code, out, e)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "old\n" {
		t.Skipf("the restore did not write a.txt before b.txt (%q): not stopped part way", b)
	}
	var got struct {
		Error   string          `json:"error"`
		SavedAs string          `json:"saved_as"`
		Undo    string          `json:"undo"`
		Done    json.RawMessage `json:"done"`
	}
	if err := json.Unmarshal([]byte(e), &got); err != nil {
		t.Fatalf("stderr %q: %v", e, err)
	}
	if got.SavedAs == "" || got.Undo != "rook checkpoint restore "+got.SavedAs || !strings.Contains(got.Error, got.Undo) || len(got.Done) == 0 {
		t.Fatalf("the error of a restore stopped part way: %s\nwant saved_as, undo (in the message) and done as fields", e)
	}
}
