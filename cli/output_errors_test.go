package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rookhq/rook/agent/mcpclient"
	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/internal/clock"
	"github.com/rookhq/rook/internal/vfs"
)

// outputRun runs rook against one store and workspace.
type outputRun struct {
	t        *testing.T
	home, ws string
}

func (r *outputRun) main(stdin string, stdout, stderr io.Writer, args ...string) int {
	return Main(append([]string{"--home", r.home, "-C", r.ws}, args...), strings.NewReader(stdin), stdout, stderr)
}

// ok runs a command that must succeed, and returns its stdout.
func (r *outputRun) ok(stdin string, args ...string) string {
	r.t.Helper()
	var out, errb bytes.Buffer
	if code := r.main(stdin, &out, &errb, args...); code != 0 {
		r.t.Fatalf("rook %s: exit %d: %s", strings.Join(args, " "), code, errb.String())
	}
	return out.String()
}

// claudeLine is one Claude Code transcript line, for an import to take.
const claudeLine = `{"parentUuid":null,"isSidechain":false,"userType":"external","cwd":"/home/dev/app","sessionId":"7c1e2a9b-3f4d-4e5a-8b6c-0d1e2f3a4b5c","version":"2.0.76","type":"user","message":{"role":"user","content":"where are the quokkas"},"uuid":"3b0f6c2e-1d4a-4c8e-9f2b-5a6d7e8f9a01","timestamp":"2026-01-05T10:00:00.100Z"}` + "\n"

// TestEveryCommandFailsWhenStdoutFails: a command whose output standard
// output does not take exits 1 and says so in one line on stderr (JSON
// under --json). Status lines were printed unchecked: `rook store stat >
// /dev/full` on an empty store, `init`, `session new`, `session rm`, the
// import summary and most others exited 0 with nothing written. What the
// command does is done all the same: the session rm removes stays
// removed, the session new makes is there.
func TestEveryCommandFailsWhenStdoutFails(t *testing.T) {
	r := &outputRun{t: t, home: filepath.Join(t.TempDir(), "store"), ws: t.TempDir()}
	r.ok("", "init")
	id := strings.TrimSpace(r.ok("", "session", "new", "--title", "quokkas"))
	r.ok("where are the quokkas", "session", "append", id, "--kind", "user")
	if err := os.WriteFile(filepath.Join(r.ws, "a.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.ok("", "session", "capture", id, "a.txt")
	r.ok("", "checkpoint", "create", "c")
	transcript := filepath.Join(t.TempDir(), "7c1e2a9b-3f4d-4e5a-8b6c-0d1e2f3a4b5c.jsonl")
	if err := os.WriteFile(transcript, []byte(claudeLine), 0o644); err != nil {
		t.Fatal(err)
	}
	var imp struct {
		Files []struct{ Session string }
	}
	if err := json.Unmarshal([]byte(r.ok("", "--json", "import", "claude-code", transcript)), &imp); err != nil || len(imp.Files) != 1 {
		t.Fatalf("import --json: %v %+v", err, imp)
	}
	imported := imp.Files[0].Session
	object := strings.TrimSpace(r.ok("an object", "store", "put"))
	fake := httptest.NewServer(mcpclient.NewFake(mcpclient.FakeConfig{Tools: []mcpclient.FakeTool{{Name: "echo"}}}))
	defer fake.Close()

	for _, mode := range []string{"text", "json"} {
		// What a command removes or makes once, one for each mode.
		doomed := strings.TrimSpace(r.ok("", "session", "new", "--title", "doomed "+mode))
		r.ok("", "checkpoint", "create", "doomed-"+mode)
		sessionsBefore := len(sessionIDs(t, r))
		for _, c := range []struct {
			stdin string
			args  []string
		}{
			{"", []string{"init"}},
			{"", []string{"doctor"}},
			{"more bytes " + mode, []string{"store", "put"}},
			{"", []string{"store", "cat", object}},
			{"", []string{"store", "ls"}},
			{"", []string{"store", "stat"}},
			{"", []string{"store", "verify"}},
			{"", []string{"store", "reindex"}},
			{"", []string{"store", "train"}},
			{"", []string{"store", "gc", "--dry-run"}},
			{"", []string{"store", "gc"}},
			{"", []string{"store", "repack"}},
			{"", []string{"store", "prune"}},
			{"", []string{"store", "maintain"}},
			{"", []string{"session", "new"}},
			{"said again", []string{"session", "append", id, "--kind", "user"}},
			{`{"kind":"user","body":"in a batch"}` + "\n", []string{"session", "append", id, "--jsonl", "-"}},
			{"", []string{"session", "ls"}},
			{"", []string{"session", "show", id}},
			{"", []string{"session", "history", id}},
			{"", []string{"session", "find", id, "quokkas"}},
			{"", []string{"session", "entry", id, "0"}},
			{"", []string{"session", "quote", id, "0"}},
			{"", []string{"session", "context", id}},
			{"", []string{"session", "export-html", id, "-o", filepath.Join(t.TempDir(), "s.html")}},
			{"", []string{"session", "capture", id, "a.txt"}},
			{"", []string{"session", "diff", id}},
			{"", []string{"session", "fork", id, "--at", "1"}},
			{"", []string{"session", "tag", id, "keep"}},
			{"", []string{"session", "rm", doomed}},
			{"", []string{"search", "quokkas"}},
			{"", []string{"checkpoint", "create", "c"}},
			{"", []string{"checkpoint", "ls"}},
			{"", []string{"checkpoint", "restore", "c", "--to", t.TempDir()}},
			{"", []string{"checkpoint", "rm", "doomed-" + mode}},
			{"", []string{"import", "claude-code", transcript}},
			{"", []string{"export", imported}},
			{"", []string{"export", imported, "-o", filepath.Join(t.TempDir(), "x.jsonl")}},
			{"", []string{"mcp", "install", "claude-code", "--print"}},
			{"", []string{"mcp", "add", "web-" + mode, "--url", fake.URL}},
			{"", []string{"mcp", "ls"}},
			{"", []string{"mcp", "tools", "web-" + mode}},
			{"", []string{"mcp", "sync", "web-" + mode}},
			{"", []string{"mcp", "set", "web-" + mode, "echo", "--off"}},
			{"", []string{"mcp", "set", "web-" + mode, "echo", "--on"}},
			{"", []string{"mcp", "limit", "web-" + mode, "5"}},
			{"", []string{"mcp", "call", "web-" + mode, "echo", "--yes"}},
			{"", []string{"mcp", "rm", "web-" + mode}},
			{"", []string{"inbox", "ls"}},
			{"", []string{"inbox", "activity"}},
			{"", []string{"inbox", "pause"}},
			{"", []string{"inbox", "resume"}},
			{"", []string{"inbox", "status"}},
			{"", []string{"--help"}},
			{"", []string{"session", "--help"}},
		} {
			args := c.args
			if args[0] == "export" && (mode == "json") == (len(args) == 2) {
				// Under --json export needs --output; without it,
				// export -o says what it wrote on stderr.
				continue
			}
			if mode == "json" {
				args = append([]string{"--json"}, args...)
			}
			var errb bytes.Buffer
			code := r.main(c.stdin, fullWriter{}, &errb, args...)
			checkOutputFailed(t, mode, args, code, errb.String())
		}
		// The work was done, only its output lost.
		var out, errb bytes.Buffer
		if code := r.main("", &out, &errb, "session", "show", doomed); code == 0 {
			t.Errorf("%s: session rm did not remove %s", mode, doomed)
		}
		if got := r.ok("", "checkpoint", "ls"); strings.Contains(got, "doomed-"+mode) {
			t.Errorf("%s: checkpoint rm did not remove doomed-%s:\n%s", mode, mode, got)
		}
		// session new, session fork and mcp add (the server's calls'
		// session) made one each; session rm removed one.
		if got := len(sessionIDs(t, r)); got != sessionsBefore+2 {
			t.Errorf("%s: %d sessions after, %d before", mode, got, sessionsBefore)
		}
	}
}

// checkOutputFailed: exit 1, and the last line on stderr says the output
// was cut short.
func checkOutputFailed(t *testing.T, mode string, args []string, code int, stderr string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	last := lines[len(lines)-1]
	const want = "write /dev/stdout: no space left on device: the disk standard output goes to is full, so the output is cut short; nothing else failed (what the command changes is changed)"
	if mode == "json" {
		var je jsonError
		if err := json.Unmarshal([]byte(last), &je); err != nil || je.ExitCode != ExitFailure || je.Error != want {
			t.Errorf("rook %s to a full disk: exit %d, stderr %q", strings.Join(args, " "), code, stderr)
		}
	} else if last != "rook: "+want {
		t.Errorf("rook %s to a full disk: exit %d, stderr %q", strings.Join(args, " "), code, stderr)
	}
	if code != ExitFailure {
		t.Errorf("rook %s to a full disk: exit %d, want %d", strings.Join(args, " "), code, ExitFailure)
	}
}

// sessionIDs lists every session in the store.
func sessionIDs(t *testing.T, r *outputRun) []string {
	t.Helper()
	var rows []struct{ ID string }
	if err := json.Unmarshal([]byte(r.ok("", "--json", "session", "ls", "--all")), &rows); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(rows))
	for i, row := range rows {
		ids[i] = row.ID
	}
	return ids
}

// TestClosedPipe: stdout a pipe whose reader has gone (`rook store stat |
// head -0`, the head done). As a table always did, rook dies of SIGPIPE,
// saying nothing, as other Unix tools do. In a process that ignores
// SIGPIPE (signal.Ignore: Go does not keep a SIG_IGN of it inherited
// from the shell, so only a program that runs Main itself) the write
// fails with EPIPE, and rook exits 1 with one line; the status lines of
// `store stat` on an empty store exited 0 there.
func TestClosedPipe(t *testing.T) {
	if home := os.Getenv("ROOK_TEST_CLOSED_PIPE_HOME"); home != "" {
		if os.Getenv("ROOK_TEST_CLOSED_PIPE_IGNORE") != "" {
			signal.Ignore(syscall.SIGPIPE)
		}
		os.Exit(Main([]string{"--home", home, "store", "stat"}, os.Stdin, os.Stdout, os.Stderr))
	}
	if testing.Short() {
		t.Skip("subprocess test")
	}
	dir := t.TempDir()
	home := filepath.Join(dir, "store")
	r := &outputRun{t: t, home: home, ws: dir}
	r.ok("", "init")
	for _, ignored := range []bool{false, true} {
		read, write, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		read.Close() // the reader is gone before rook writes
		cmd := exec.Command(os.Args[0], "-test.run=^TestClosedPipe$")
		cmd.Env = append(os.Environ(), "ROOK_TEST_CLOSED_PIPE_HOME="+home)
		if ignored {
			cmd.Env = append(cmd.Env, "ROOK_TEST_CLOSED_PIPE_IGNORE=1")
		}
		cmd.Dir = dir
		cmd.Stdout = write
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err = cmd.Run()
		write.Close()
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatalf("ignored %v: %v, want a failure; stderr %q", ignored, err, stderr.String())
		}
		ws := exit.Sys().(syscall.WaitStatus)
		switch {
		case !ignored && (!ws.Signaled() || ws.Signal() != syscall.SIGPIPE || stderr.Len() != 0):
			t.Errorf("SIGPIPE not ignored: %v, stderr %q; want killed by SIGPIPE, saying nothing", err, stderr.String())
		case ignored && (ws.ExitStatus() != ExitFailure || stderr.String() != "rook: write /dev/stdout: broken pipe: the output is cut short; nothing else failed (what the command changes is changed)\n"):
			t.Errorf("SIGPIPE ignored: %v, stderr %q; want exit 1 and one line", err, stderr.String())
		}
	}
}

// flakyWriter fails its first write, as a disk that was full for a
// moment, and takes the rest.
type flakyWriter struct {
	failed bool
	got    bytes.Buffer
}

func (w *flakyWriter) Write(p []byte) (int, error) {
	if !w.failed {
		w.failed = true
		return 0, &fs.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.ENOSPC}
	}
	return w.got.Write(p)
}

// TestNoOutputAfterAFailedWrite: once a write to stdout failed, rook
// writes nothing more there: what came after the lost line would make an
// output with a hole in it, which a reader takes for the whole.
func TestNoOutputAfterAFailedWrite(t *testing.T) {
	r := &outputRun{t: t, home: filepath.Join(t.TempDir(), "store"), ws: t.TempDir()}
	r.ok("", "init")
	for _, args := range [][]string{{"store", "stat"}, {"--json", "store", "stat"}, {"doctor"}} {
		var w flakyWriter
		var errb bytes.Buffer
		code := r.main("", &w, &errb, args...)
		if code != ExitFailure || w.got.Len() != 0 {
			t.Errorf("rook %s: exit %d, wrote %q after the failed write; stderr %q", strings.Join(args, " "), code, w.got.String(), errb.String())
		}
	}
}

// TestStderrNotWritable: rook whose stderr takes nothing (a full disk)
// does its work and exits as it would: a note, a progress meter or the
// reason of a failure that cannot be said changes no exit code, and
// nothing panics.
func TestStderrNotWritable(t *testing.T) {
	r := &outputRun{t: t, home: filepath.Join(t.TempDir(), "store"), ws: t.TempDir()}
	transcript := filepath.Join(t.TempDir(), "7c1e2a9b-3f4d-4e5a-8b6c-0d1e2f3a4b5c.jsonl")
	if err := os.WriteFile(transcript, []byte(claudeLine), 0o644); err != nil {
		t.Fatal(err)
	}
	// A meter is drawn only on a terminal, which cannot be made to fail
	// its writes here: drawn on a full disk.
	p := &progress{w: fullWriter{}, on: true, label: "verify"}
	p.update(1, 2)
	p.then(&progress{w: fullWriter{}, on: true, label: "gc"})(2, 2)
	p.done()
	for _, c := range []struct {
		stdin string
		args  []string
		code  int
	}{
		{"", []string{"init"}, ExitOK},
		{"", []string{"session", "new"}, ExitOK},
		{"typed", []string{"store", "put"}, ExitOK},
		{"", []string{"import", "claude-code", transcript}, ExitOK},
		{"", []string{"store", "verify"}, ExitOK},
		{"", []string{"store", "gc"}, ExitOK},
		{"", []string{"store", "train"}, ExitOK},
		{"", []string{"session", "show", "0000"}, ExitFailure},
		{"", []string{"--json", "session", "show", "0000"}, ExitFailure},
		{"", []string{"session", "show"}, ExitUsage},
		{"", []string{"--json", "no-such-command"}, ExitUsage},
	} {
		var out bytes.Buffer
		if code := r.main(c.stdin, &out, fullWriter{}, c.args...); code != c.code {
			t.Errorf("rook %s with stderr on a full disk: exit %d, want %d", strings.Join(c.args, " "), code, c.code)
		}
	}
}

// TestOwnFailureWinsOverLostOutput: a command that fails on its own (bad
// lines not appended, a damaged store, a tool's error) and whose output
// is lost too exits with its own failure, the last line on stderr (the
// JSON one under --json), after a note that the output is cut short.
// Under --json the lost output was the error, "nothing else failed" with
// it: a verify that found damage said only that the disk was full.
func TestOwnFailureWinsOverLostOutput(t *testing.T) {
	r := &outputRun{t: t, home: filepath.Join(t.TempDir(), "store"), ws: t.TempDir()}
	r.ok("", "init")
	id := strings.TrimSpace(r.ok("", "session", "new"))
	r.ok(strings.Repeat("an object large enough for a segment ", 4), "store", "put")
	seg := filepath.Join(r.home, "segments", "00000001.seg")
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-10] ^= 0xff // inside the record's payload
	if err := os.WriteFile(seg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	fake := httptest.NewServer(mcpclient.NewFake(mcpclient.FakeConfig{Tools: []mcpclient.FakeTool{
		{Name: "fails", Result: json.RawMessage(`{"content":[{"type":"text","text":"no"}],"isError":true}`)}}}))
	defer fake.Close()
	r.ok("", "mcp", "add", "web", "--url", fake.URL)

	const note = "rook: note: write /dev/stdout: no space left on device: the disk standard output goes to is full, so the output is cut short"
	for _, c := range []struct {
		stdin string
		args  []string
		own   string // the command's own error
	}{
		{`{"kind":"user","body":"in"}` + "\nnot json\n", []string{"session", "append", id, "--jsonl", "-"}, "1 line(s) not appended, 1 appended"},
		{"", []string{"store", "verify"}, "2 problem(s) found"},
		{"", []string{"mcp", "call", "web", "fails", "--yes"}, "the tool reported an error"},
	} {
		for _, asJSON := range []bool{false, true} {
			args := c.args
			if asJSON {
				args = append([]string{"--json"}, args...)
			}
			var errb bytes.Buffer
			code := r.main(c.stdin, fullWriter{}, &errb, args...)
			lines := strings.Split(strings.TrimRight(errb.String(), "\n"), "\n")
			last := lines[len(lines)-1]
			own := strings.HasPrefix(last, "rook: "+c.own)
			if asJSON {
				var je jsonError
				own = json.Unmarshal([]byte(last), &je) == nil && strings.HasPrefix(je.Error, c.own) && je.ExitCode == ExitFailure
			}
			if code != ExitFailure || !own || !strings.Contains(errb.String(), note+"\n") {
				t.Errorf("rook %s to a full disk: exit %d, stderr:\n%s\nwant exit 1, the note, and %q last", strings.Join(args, " "), code, errb.String(), c.own)
			}
		}
	}
}

// TestJSONThatCannotBeEncodedFails: a time outside the years 0-9999 (an
// event stored at one, by a rook whose import took a transcript line's
// "9999-12-31T23:59:59-01:00", 10000-01-01 in UTC) is one JSON's time
// format cannot hold. `session ls --json` and `session show --json`
// discarded printJSON's error as a write's, Main's to tell: they printed
// nothing, said nothing and exited 0. They fail, saying what failed.
func TestJSONThatCannotBeEncodedFails(t *testing.T) {
	const home = "/home/u/store"
	fsys := vfs.NewMem()
	if _, err := cas.Init(fsys, nil, home); err != nil {
		t.Fatal(err)
	}
	clk := &clock.Fixed{T: time.Date(2026, 2, 10, 21, 0, 0, 0, time.UTC)}
	env := func(stdin string, asJSON bool) (*Env, *bytes.Buffer, *bytes.Buffer) {
		var out, errb bytes.Buffer
		return &Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, FS: fsys, Home: home, Clock: clk, Cwd: "/w", JSON: asJSON}, &out, &errb
	}
	e, out, _ := env("", false)
	if err := (&SessionNewCmd{Title: "hello"}).Run(e); err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(out.String())
	clk.T = time.Date(10000, 1, 1, 0, 59, 59, 0, time.UTC)
	e, _, _ = env("odd", false)
	if err := (&SessionAppendCmd{ID: id, File: "-", Kind: "user"}).Run(e); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]interface{ Run(*Env) error }{
		"session ls --all --json": &SessionLsCmd{All: true},
		"session show --json":     &ShowCmd{ID: id, Limit: 200, MaxBody: 4096},
	} {
		e, out, _ := env("", true)
		err := c.Run(e)
		if err == nil || !strings.Contains(err.Error(), "encode the output as JSON") || !strings.Contains(err.Error(), "year") {
			t.Errorf("%s: error %v, stdout %q; want it to fail, saying the output could not be encoded", name, err, out.String())
		}
	}
}
