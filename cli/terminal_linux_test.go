package cli

import (
	"bytes"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rookhq/rook/agent"
	"github.com/rookhq/rook/agent/mcpclient"
	"github.com/rookhq/rook/cas"
)

// openPTY opens a pseudo-terminal: what the user types goes into master,
// and the command reads it from tty, a terminal.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlock the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("name the pseudo-terminal: %v", err)
	}
	tty, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open the pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	return master, tty
}

// A command given no FILE reads stdin: at a terminal it says so (and how
// to end the input) before it waits; piped, it says nothing.
func TestStdinHintOnATerminal(t *testing.T) {
	home := filepath.Join(t.TempDir(), "store")
	ws := t.TempDir()
	run := func(stdin *os.File, pipe string, args ...string) (string, string) {
		t.Helper()
		var out, errb bytes.Buffer
		var in io.Reader = strings.NewReader(pipe)
		if stdin != nil {
			in = stdin
		}
		if code := Main(append([]string{"--home", home, "-C", ws}, args...), in, &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		return out.String(), errb.String()
	}
	run(nil, "", "init")
	id, _ := run(nil, "", "session", "new")
	id = strings.TrimSpace(id)

	for _, tc := range []struct {
		args []string
		hint string
	}{
		{[]string{"store", "put"}, "rook: reading the bytes to store from standard input; end it with Ctrl-D (or give a FILE)\n"},
		{[]string{"session", "append", id, "--kind", "user"}, "rook: reading the event's body from standard input; end it with Ctrl-D (or give a FILE)\n"},
		{[]string{"session", "append", id, "--jsonl", "-"}, "rook: reading the events, one JSON object a line, from standard input; end it with Ctrl-D (or give --jsonl FILE)\n"},
	} {
		master, tty := openPTY(t)
		// Typed ahead: a line, then Ctrl-D at the start of the next,
		// which ends the input.
		line := "typed at the terminal\n"
		if tc.args[len(tc.args)-1] == "-" {
			line = `{"kind":"user","body":"typed"}` + "\n"
		}
		if _, err := master.Write([]byte(line + "\x04")); err != nil {
			t.Fatal(err)
		}
		_, stderr := run(tty, "", tc.args...)
		if stderr != tc.hint {
			t.Errorf("%v at a terminal: stderr %q, want %q", tc.args, stderr, tc.hint)
		}
		// Piped: no hint.
		pipe := "piped\n"
		if tc.args[len(tc.args)-1] == "-" {
			pipe = `{"kind":"user","body":"piped"}` + "\n"
		}
		if _, stderr := run(nil, pipe, tc.args...); stderr != "" {
			t.Errorf("%v piped: stderr %q, want nothing", tc.args, stderr)
		}
	}
}

// `store train` and maintain's train stage draw their progress on a
// terminal, as gc, verify and import do, and nothing when piped.
func TestTrainProgressOnATerminal(t *testing.T) {
	home := filepath.Join(t.TempDir(), "store")
	ws := t.TempDir()
	run := func(stderr io.Writer, args ...string) {
		t.Helper()
		var out bytes.Buffer
		if code := Main(append([]string{"--home", home, "-C", ws}, args...), strings.NewReader(""), &out, stderr); code != 0 {
			t.Fatalf("%v: exit %d", args, code)
		}
	}
	run(io.Discard, "init")
	for _, args := range [][]string{{"store", "train", "--dry-run"}, {"store", "maintain", "--dry-run"}} {
		master, tty := openPTY(t)
		run(tty, args...)
		// With the terminal closed, the master reads what was written to
		// it, then fails (EIO): no wait on a read that never ends.
		tty.Close()
		got, _ := io.ReadAll(master)
		want := fmt.Sprintf("train: 100.0%%  %d of %d kinds", len(cas.Kinds), len(cas.Kinds))
		if !bytes.Contains(got, []byte(want)) {
			t.Errorf("%v at a terminal: stderr %q, want %q in it", args, got, want)
		}
		var piped bytes.Buffer
		run(&piped, args...)
		if piped.Len() != 0 {
			t.Errorf("%v piped: stderr %q, want nothing", args, piped.String())
		}
	}
}

// The other long commands (verify, reindex, gc, repack, import) draw their
// progress on a terminal too, and leave a piped stderr empty: a hook's or
// a script's stderr holds only what went wrong.
func TestLongWorkProgressOnATerminal(t *testing.T) {
	home := filepath.Join(t.TempDir(), "store")
	ws := t.TempDir()
	run := func(stderr io.Writer, args ...string) string {
		t.Helper()
		var out bytes.Buffer
		if code := Main(append([]string{"--home", home, "-C", ws}, args...), strings.NewReader(""), &out, stderr); code != 0 {
			t.Fatalf("%v: exit %d", args, code)
		}
		return strings.TrimSpace(out.String())
	}
	run(io.Discard, "init")
	id := run(io.Discard, "session", "new")
	if err := os.WriteFile(filepath.Join(ws, "msg.txt"), []byte("a message to store\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run(io.Discard, "session", "append", id, "--kind", "user", "msg.txt")
	transcripts := filepath.Join(t.TempDir(), "projects")
	line := `{"type":"user","sessionId":"s1","uuid":"u1","timestamp":"2026-01-02T03:04:05Z","cwd":"/w","message":{"role":"user","content":"hello"}}` + "\n"
	if err := os.MkdirAll(filepath.Join(transcripts, "w"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(transcripts, "w", "s1.jsonl"), []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	rollouts := filepath.Join(t.TempDir(), "sessions")
	rollout := `{"timestamp":"2026-01-07T08:30:00.100Z","type":"session_meta","payload":{"id":"019b8a10-1111-7222-8333-944455566677","timestamp":"2026-01-07T08:30:00.050Z","cwd":"/w","originator":"codex_cli_rs","cli_version":"0.80.0"}}` + "\n" +
		`{"timestamp":"2026-01-07T08:30:01.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hello"}]}}` + "\n"
	if err := os.MkdirAll(rollouts, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rollouts, "rollout-2026-01-07T08-30-00-019b8a10-1111-7222-8333-944455566677.jsonl"), []byte(rollout), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"import", "claude-code", transcripts}, "\rimport claude-code: "},
		{[]string{"import", "codex", rollouts}, "\rimport codex: "},
		{[]string{"store", "verify"}, "\rverify: "},
		{[]string{"store", "verify"}, "\rverify: sessions: "},
		{[]string{"store", "reindex"}, "\rreindex: "},
		{[]string{"store", "gc"}, "\rgc: marking: "},
		{[]string{"store", "repack"}, "\rrepack: "},
	} {
		master, tty := openPTY(t)
		run(tty, tc.args...)
		tty.Close()
		got, _ := io.ReadAll(master)
		if !bytes.Contains(got, []byte(tc.want)) {
			t.Errorf("%v at a terminal: stderr %q, want %q in it", tc.args, got, tc.want)
		}
		// The meter is cleared: what the command prints next starts on a
		// clean line.
		if !bytes.HasSuffix(got, []byte("\r\x1b[K")) {
			t.Errorf("%v at a terminal: stderr %q does not end by clearing its line", tc.args, got)
		}
		var piped bytes.Buffer
		run(&piped, tc.args...)
		if piped.Len() != 0 {
			t.Errorf("%v piped: stderr %q, want nothing", tc.args, piped.String())
		}
	}
}

// maintain draws each stage that has work to show on a terminal, gc's
// mark as gc does, and clears only what it drew: it showed no progress for
// its prune and gc stages, only a "\r\x1b[K" each, lines cleared that
// nothing was drawn on.
func TestMaintainProgressOnATerminal(t *testing.T) {
	home := filepath.Join(t.TempDir(), "store")
	ws := t.TempDir()
	run := func(stderr io.Writer, args ...string) string {
		t.Helper()
		var out bytes.Buffer
		if code := Main(append([]string{"--home", home, "-C", ws}, args...), strings.NewReader(""), &out, stderr); code != 0 {
			t.Fatalf("%v: exit %d", args, code)
		}
		return strings.TrimSpace(out.String())
	}
	run(io.Discard, "init")
	id := run(io.Discard, "session", "new")
	if err := os.WriteFile(filepath.Join(ws, "msg.txt"), []byte("a message to store\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run(io.Discard, "session", "append", id, "--kind", "user", "msg.txt")
	for _, args := range [][]string{{"store", "maintain"}, {"store", "maintain", "--dry-run"}, {"store", "gc"}} {
		master, tty := openPTY(t)
		run(tty, args...)
		tty.Close()
		got, _ := io.ReadAll(master)
		if !bytes.Contains(got, []byte("\rgc: marking: 100.0%  ")) {
			t.Errorf("%v at a terminal: stderr %q, want gc's mark drawn in it", args, got)
		}
		// Every clear follows something drawn: none at the start, none
		// right after another.
		if bytes.HasPrefix(got, []byte("\r\x1b[K")) || bytes.Contains(got, []byte("\r\x1b[K\r\x1b[K")) {
			t.Errorf("%v at a terminal: stderr %q clears a line nothing was drawn on", args, got)
		}
		if !bytes.HasSuffix(got, []byte("\r\x1b[K")) {
			t.Errorf("%v at a terminal: stderr %q does not end by clearing its line", args, got)
		}
	}
}

// `session diff` colours its patch when stdout is a terminal, through the
// writer Main wraps stdout in to keep its write errors: wrapped, stdout
// was no longer an *os.File, and a terminal got the patch uncoloured.
func TestDiffColouredOnATerminal(t *testing.T) {
	home := filepath.Join(t.TempDir(), "store")
	ws := t.TempDir()
	run := func(stdout io.Writer, args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if stdout == nil {
			stdout = &out
		}
		if code := Main(append([]string{"--home", home, "-C", ws}, args...), strings.NewReader(""), stdout, &errb); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		return strings.TrimSpace(out.String())
	}
	run(nil, "init")
	id := run(nil, "session", "new")
	file := filepath.Join(ws, "a.txt")
	if err := os.WriteFile(file, []byte("before\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(nil, "session", "capture", id, "a.txt")
	if err := os.WriteFile(file, []byte("after\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	master, tty := openPTY(t)
	run(tty, "session", "diff", id)
	tty.Close() // the master then reads what was written, then EIO
	got, _ := io.ReadAll(master)
	if !bytes.Contains(got, []byte("+after")) || !bytes.Contains(got, []byte("\x1b[")) {
		t.Errorf("session diff at a terminal: %q, want a coloured patch", got)
	}
	if piped := run(nil, "session", "diff", id); strings.Contains(piped, "\x1b[") {
		t.Errorf("session diff piped: %q, want no colour", piped)
	}
}

// `session diff` at a terminal shows the files' text without control
// characters, as show and entry show a body: written as stored, a file the
// agent wrote (from a web page it read, say) holding an OSC 8 link hiding
// its target, an OSC 52 clipboard write, a C1 CSI (U+009B) or a
// right-to-left override acted on the user's terminal. rook's own colours
// stay, a note on stderr says so, once, and piped the patch is the bytes.
func TestDiffEscapesOnATerminal(t *testing.T) {
	home := filepath.Join(t.TempDir(), "store")
	ws := t.TempDir()
	run := func(stdout io.Writer, args ...string) (string, string) {
		t.Helper()
		var out, errb bytes.Buffer
		if stdout == nil {
			stdout = &out
		}
		if code := Main(append([]string{"--home", home, "-C", ws}, args...), strings.NewReader(""), stdout, &errb); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		return out.String(), errb.String()
	}
	run(nil, "init")
	id, _ := run(nil, "session", "new")
	id = strings.TrimSpace(id)
	file := filepath.Join(ws, "notes.md")
	if err := os.WriteFile(file, []byte("before\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(nil, "session", "capture", id, "notes.md")
	evil := "see \x1b]8;;https://evil.example/x\x07the docs\x1b]8;;\x07\n" +
		"\x1b]52;c;cm0gLXJmIH4=\x07\n" +
		"\u009b2J cleared\n" +
		"\u202etxt.exe\n" +
		"bad \xff byte, kept \uFFFD, a\ttab\n" +
		"crlf\r\n"
	if err := os.WriteFile(file, []byte(evil), 0o644); err != nil {
		t.Fatal(err)
	}
	master, tty := openPTY(t)
	_, stderr := run(tty, "session", "diff", id)
	tty.Close() // the master then reads what was written, then EIO
	got, _ := io.ReadAll(master)
	var raw []string
	for _, seq := range []string{"\x1b]", "\x07", "\u009b", "\u202e", "\xff"} {
		if bytes.Contains(got, []byte(seq)) {
			raw = append(raw, strconv.Quote(seq))
		}
	}
	if len(raw) > 0 {
		t.Errorf("session diff at a terminal wrote %s as they are:\n%q", strings.Join(raw, ", "), got)
	}
	// (The pseudo-terminal writes each newline as CRLF.)
	for _, want := range []string{
		"\x1b[32m+see \uFFFD]8;;https://evil.example/x\uFFFDthe docs\uFFFD]8;;\uFFFD\x1b[m\r\n",
		"\x1b[32m+\uFFFD]52;c;cm0gLXJmIH4=\uFFFD\x1b[m\r\n",
		"\x1b[32m+\uFFFD2J cleared\x1b[m\r\n",
		"\x1b[32m+\uFFFDtxt.exe\x1b[m\r\n",
		"\x1b[32m+bad \uFFFD byte, kept \uFFFD, a\ttab\x1b[m\r\n",
		"\x1b[32m+crlf\r\x1b[m\r\n",
	} {
		if !bytes.Contains(got, []byte(want)) {
			t.Errorf("session diff at a terminal: %q, want %q in it", got, want)
		}
	}
	if n := strings.Count(stderr, "U+FFFD"); n != 1 {
		t.Errorf("session diff at a terminal: stderr %q, want the note on U+FFFD once", stderr)
	}
	if piped, stderr := run(nil, "session", "diff", id); !strings.Contains(piped, "+see \x1b]8;;https://evil.example/x\x07the docs\x1b]8;;\x07\n+\x1b]52;c;cm0gLXJmIH4=\x07\n+\u009b2J cleared\n+\u202etxt.exe\n+bad \xff byte") || strings.Contains(stderr, "U+FFFD") {
		t.Errorf("session diff piped: %q (stderr %q), want the files' bytes as they are, and no note", piped, stderr)
	}
}

// `rook --help` at a terminal is wrapped to its width, as kong wraps it
// when it writes to the terminal itself; a writer around stdout hid the
// terminal from kong, and every help was cut at 80 columns.
func TestHelpFitsTheTerminal(t *testing.T) {
	master, tty := openPTY(t)
	if err := unix.IoctlSetWinsize(int(tty.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: 160}); err != nil {
		t.Skipf("size the pseudo-terminal: %v", err)
	}
	t.Setenv("COLUMNS", "") // kong would take it over the terminal's
	var errb bytes.Buffer
	if code := Main([]string{"--help"}, strings.NewReader(""), tty, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	tty.Close()
	got, _ := io.ReadAll(master)
	long := 0
	for _, line := range strings.Split(string(got), "\n") {
		long = max(long, len(strings.TrimRight(line, "\r")))
	}
	if long <= 80 {
		t.Errorf("--help on a 160-column terminal: its longest line has %d columns:\n%s", long, got)
	}
}

// `session entry` at a terminal shows a body's control characters as
// U+FFFD, as show and quote do: written raw, a tool's output holding
// escape sequences (a window title set, the clipboard written by OSC 52,
// the screen cleared, text concealed) acted on the user's terminal, and
// what was shown was not what is stored. Piped, it writes the bytes as
// stored.
func TestEntryEscapesOnATerminal(t *testing.T) {
	home := filepath.Join(t.TempDir(), "store")
	ws := t.TempDir()
	body := "ok \x1b]52;c;cHduZWQ=\x07 \x1b[2J\x1b[8mhidden\x1b[0m end\n"
	run := func(stdout io.Writer, stdin string, args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if stdout == nil {
			stdout = &out
		}
		if code := Main(append([]string{"--home", home, "-C", ws}, args...), strings.NewReader(stdin), stdout, &errb); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		return out.String()
	}
	run(nil, "", "init")
	id := strings.TrimSpace(run(nil, "", "session", "new"))
	run(nil, body, "session", "append", id, "--kind", "tool-result")
	master, tty := openPTY(t)
	run(tty, "", "session", "entry", id, "0")
	tty.Close() // the master then reads what was written, then EIO
	got, _ := io.ReadAll(master)
	if bytes.ContainsAny(got, "\x1b\x07") {
		t.Errorf("session entry at a terminal wrote control characters: %q", got)
	}
	if !bytes.Contains(got, []byte("ok \uFFFD]52;c;cHduZWQ=\uFFFD \uFFFD[2J\uFFFD[8mhidden\uFFFD[0m end")) {
		t.Errorf("session entry at a terminal: %q, want the body with U+FFFD for each control character", got)
	}
	if piped := run(nil, "", "session", "entry", id, "0"); !strings.Contains(piped, body) {
		t.Errorf("session entry piped: %q, want the body as stored", piped)
	}
}

// TestMcpCallRecordWaitSaysWhatItWaitsFor: an mcp call whose record
// waits for the writer lock said, at a terminal, "waiting for the store's
// writer lock ... (up to 30s; --lock-wait changes it)": nothing of the
// call having run already (the wait is its record's), and --lock-wait 0,
// given, had not changed it (the record waits at least recordLockWait).
func TestMcpCallRecordWaitSaysWhatItWaitsFor(t *testing.T) {
	r := &outputRun{t: t, home: filepath.Join(t.TempDir(), "store"), ws: t.TempDir()}
	r.ok("", "init")
	fake := mcpclient.NewFake(mcpclient.FakeConfig{Tools: []mcpclient.FakeTool{{Name: "echo"}}})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	r.ok("", "mcp", "add", "fake", "--url", srv.URL)
	holder, err := agent.Open(r.home, agent.Options{Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for !slices.Contains(fake.Methods(), "tools/call") {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(1500 * time.Millisecond) // past the second a writer waits before it says so
		holder.Close()
	}()
	defer func(w time.Duration) { recordLockWait = w }(recordLockWait)
	recordLockWait = 20 * time.Second
	master, tty := openPTY(t)
	var out bytes.Buffer
	if code := r.main("", &out, tty, "--lock-wait", "0", "mcp", "call", "fake", "echo", `{"n":4}`); code != 0 {
		t.Fatalf("exit %d", code)
	}
	tty.Close()
	got, _ := io.ReadAll(master)
	want := "rook: the call to echo of fake ran; waiting for the store's writer lock, held by "
	if !bytes.Contains(got, []byte(want)) || !bytes.Contains(got, []byte("to record it in the server's session (up to 20s)")) || bytes.Contains(got, []byte("--lock-wait changes it")) {
		t.Fatalf("stderr at a terminal %q: want %q, saying it waits to record the call, up to 20s", got, want)
	}
}
