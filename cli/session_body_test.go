package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/internal/vfs"
)

// lowBody lowers the body limit for a test: files past the real one
// (1 GiB) are too slow to write.
func lowBody(t *testing.T, n int64) {
	old := maxBody
	maxBody = n
	t.Cleanup(func() { maxBody = old })
}

func TestBodyFileOverLimit(t *testing.T) {
	lowBody(t, 1000)
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok")
	big := filepath.Join(dir, "big")
	os.WriteFile(ok, bytes.Repeat([]byte("a"), 1000), 0o600)
	os.WriteFile(big, bytes.Repeat([]byte("a"), 1001), 0o600)
	en, err := parseJSONLine([]byte(`{"kind":"note","body_file":"`+ok+`"}`), nil)
	if err != nil || len(en.Body) != 1000 {
		t.Fatalf("body_file at the limit: %d bytes, %v", len(en.Body), err)
	}
	for _, f := range []string{big, "/dev/zero"} {
		if f == "/dev/zero" {
			if _, err := os.Stat(f); err != nil {
				continue
			}
		}
		_, err = parseJSONLine([]byte(`{"kind":"note","body_file":"`+f+`"}`), nil)
		if err == nil || !strings.Contains(err.Error(), f) || !strings.Contains(err.Error(), "1000 B") {
			t.Fatalf("body_file %s over the limit: %v", f, err)
		}
		t.Log(err)
	}
}

// TestAppendBodyOverLimit: the body of a plain append (FILE or stdin) has
// the same bound, and nothing is appended.
func TestAppendBodyOverLimit(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	run := func(stdin string, args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Main(append([]string{"--home", home, "-C", ws}, args...), strings.NewReader(stdin), &out, &errb)
		return code, out.String(), errb.String()
	}
	if code, _, e := run("", "init"); code != 0 {
		t.Fatal(e)
	}
	code, id, e := run("", "session", "new")
	if code != 0 {
		t.Fatal(e)
	}
	id = strings.TrimSpace(id)
	lowBody(t, 1000)
	big := filepath.Join(t.TempDir(), "big")
	os.WriteFile(big, bytes.Repeat([]byte("a"), 1001), 0o600)
	if code, _, e := run("", "session", "append", id, "--kind", "note", big); code == 0 || !strings.Contains(e, big) || !strings.Contains(e, "1000 B") {
		t.Fatalf("append FILE over the limit: exit %d, %s", code, e)
	}
	if code, _, e := run(strings.Repeat("a", 1001), "session", "append", id, "--kind", "note"); code == 0 || !strings.Contains(e, "standard input") || !strings.Contains(e, "1000 B") {
		t.Fatalf("append stdin over the limit: exit %d, %s", code, e)
	}
	jl := filepath.Join(t.TempDir(), "in.jsonl")
	os.WriteFile(jl, []byte(`{"kind":"note","body_file":"`+big+`"}`+"\n"), 0o600)
	if code, _, e := run("", "session", "append", id, "--jsonl", jl); code == 0 || !strings.Contains(e, "line 1: body_file "+big) {
		t.Fatalf("append --jsonl with a body_file over the limit: exit %d, %s", code, e)
	}
	if code, out, e := run("", "--json", "session", "history", id); code != 0 || strings.Contains(out, "note") {
		t.Fatalf("history after the refused appends: exit %d, %s %s", code, out, e)
	}
}

// TestReadBodyChunks: a source of unknown size, held in memory (the
// limit under spillAt), is read whole, up to the limit exactly.
func TestReadBodyChunks(t *testing.T) {
	lowBody(t, 300000)
	src := make([]byte, 300001)
	for i := range src {
		src[i] = byte(i * 7)
	}
	for _, n := range []int{0, 1, 65535, 65536, 65537, 200000, 300000} {
		b, err := readBody(onlyReader{bytes.NewReader(src[:n])}, -1, nil)
		if err != nil || !bytes.Equal(b[cas.ObjectRoom:], src[:n]) {
			t.Fatalf("%d bytes: got %d, %v", n, len(b), err)
		}
		b, err = readBody(bytes.NewReader(src[:n]), int64(n), nil)
		if err != nil || !bytes.Equal(b[cas.ObjectRoom:], src[:n]) {
			t.Fatalf("%d bytes, size known: got %d, %v", n, len(b), err)
		}
	}
	if _, err := readBody(onlyReader{bytes.NewReader(src)}, -1, nil); err != errBodyTooBig {
		t.Fatalf("one byte over: %v", err)
	}
	// A file that grew after its size was taken.
	if _, err := readBody(bytes.NewReader(src), 10, nil); err != errBodyTooBig {
		t.Fatalf("grown past the limit: %v", err)
	}
}

type onlyReader struct{ r *bytes.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

// readsCounted counts the bytes read from it (all zeros, without end).
type readsCounted struct{ n int }

func (r *readsCounted) Read(p []byte) (int, error) {
	clear(p)
	r.n += len(p)
	return len(p), nil
}

// TestBodyRefusedBySize: a source whose size is known to be past the
// limit (a regular file) is refused before any byte of it is read, as
// README says; read, a 1 GiB + 1 file took 5.5 s and 1 GiB of memory
// to refuse.
func TestBodyRefusedBySize(t *testing.T) {
	lowBody(t, 1000)
	r := &readsCounted{}
	if _, err := readBody(r, 1001, nil); err != errBodyTooBig || r.n != 0 {
		t.Fatalf("size 1001 past a limit of 1000: %v after reading %d bytes", err, r.n)
	}
	// Unknown size: read to one byte past the limit, no further.
	r = &readsCounted{}
	if _, err := readBody(r, -1, nil); err != errBodyTooBig || r.n != 1001 {
		t.Fatalf("unknown size: %v after reading %d bytes", err, r.n)
	}
}

// zeros is a source of zero bytes without end (n < 0), or of n bytes,
// of unknown size: stdin from /dev/zero or a pipe.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	if z.n == 0 {
		return 0, io.EOF
	}
	if z.n > 0 && int64(len(p)) > z.n {
		p = p[:z.n]
	}
	clear(p)
	if z.n > 0 {
		z.n -= int64(len(p))
	}
	return len(p), nil
}

// allocated is how many bytes the heap gave out while fn ran.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestAppendStdinMemory: a body of unknown size (stdin) is held in
// memory once, and one past the limit is refused holding little of it.
// Read whole into memory, a stdin past the limit took the limit in
// memory to refuse (1 GiB: 1 GiB of RSS), and a body under it was held
// three times (its chunks, their join, its block).
func TestAppendStdinMemory(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	run := func(stdin io.Reader, args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Main(append([]string{"--home", home, "-C", ws}, args...), stdin, &out, &errb)
		return code, out.String(), errb.String()
	}
	if code, _, e := run(strings.NewReader(""), "init"); code != 0 {
		t.Fatal(e)
	}
	code, id, e := run(strings.NewReader(""), "session", "new")
	if code != 0 {
		t.Fatal(e)
	}
	id = strings.TrimSpace(id)
	const limit = 128 << 20
	lowBody(t, limit)
	var code2 int
	var errs string
	n := allocated(func() { code2, _, errs = run(&zeros{-1}, "session", "append", id, "--kind", "note") })
	t.Logf("stdin without end: exit %d, %d MiB allocated", code2, n>>20)
	if code2 != 1 || !strings.Contains(errs, "standard input holds more than the 128.0 MiB") {
		t.Fatalf("stdin without end: exit %d, %s", code2, errs)
	}
	// Under -race, 46 MiB: still far from the limit the old code held.
	bound := uint64(limit / 3)
	if raceDetector {
		bound = limit / 2
	}
	if n > bound {
		t.Fatalf("refusing a stdin past a limit of %d MiB allocated %d MiB", limit>>20, n>>20)
	}
	var out string
	n = allocated(func() { code2, out, errs = run(&zeros{limit}, "session", "append", id, "--kind", "note") })
	t.Logf("stdin at the limit: exit %d, %d MiB allocated", code2, n>>20)
	if code2 != 0 || strings.TrimSpace(out) != "0" {
		t.Fatalf("stdin at the limit: exit %d, %s %s", code2, out, errs)
	}
	// Held once (the read), and the compressor's room for its frame
	// (cas: MaxEncodedSize of the block); read whole, 519 MiB.
	if n > limit*5/2 {
		t.Fatalf("appending a stdin body of %d MiB allocated %d MiB", limit>>20, n>>20)
	}
	if code, out, e := run(nil, "--json", "session", "history", id); code != 0 || !strings.Contains(out, `"size": 134217728`) || !strings.Contains(out, `"total": 1`) {
		t.Fatalf("entry 0: exit %d, %s %s", code, out, e)
	}
	noSpoolLeft(t, home)
}

// noSpoolLeft: no spool file is left in the store.
func noSpoolLeft(t *testing.T, home string) {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(home, cas.EventsDir))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ents {
		if strings.HasPrefix(d.Name(), ".") {
			t.Fatalf("left in events/: %s", d.Name())
		}
	}
}

// lowSpill lowers how much of a body of unknown size is held in memory
// before it goes to a spool file.
func lowSpill(t *testing.T, n int64) {
	old := spillAt
	spillAt = n
	t.Cleanup(func() { spillAt = old })
}

// tempSpool is a spool in dir, as Env.bodySpool makes: created, then
// removed while open. made counts them.
func tempSpool(t *testing.T, made *int) func() (vfs.File, error) {
	dir := t.TempDir()
	return func() (vfs.File, error) {
		*made++
		f, err := os.CreateTemp(dir, "spool")
		if err == nil {
			err = os.Remove(f.Name())
		}
		return f, err
	}
}

// TestReadBodySpool: past spillAt a body of unknown size goes through the
// spool, and is read back whole up to the limit exactly; one byte more
// is refused. A size known (a regular file) needs no spool.
func TestReadBodySpool(t *testing.T) {
	lowBody(t, 1000)
	lowSpill(t, 100)
	src := make([]byte, 1001)
	for i := range src {
		src[i] = byte(i*7 + 1)
	}
	for _, n := range []int{0, 1, 100, 101, 999, 1000} {
		made := 0
		b, err := readBody(onlyReader{bytes.NewReader(src[:n])}, -1, tempSpool(t, &made))
		if err != nil || !bytes.Equal(b[cas.ObjectRoom:], src[:n]) {
			t.Fatalf("%d bytes: got %d, %v", n, len(b)-cas.ObjectRoom, err)
		}
		if want := n > 100; (made == 1) != want || made > 1 {
			t.Fatalf("%d bytes: %d spool files made", n, made)
		}
		b, err = readBody(bytes.NewReader(src[:n]), int64(n), nil)
		if err != nil || !bytes.Equal(b[cas.ObjectRoom:], src[:n]) {
			t.Fatalf("%d bytes, size known: got %d, %v", n, len(b)-cas.ObjectRoom, err)
		}
	}
	made := 0
	if _, err := readBody(onlyReader{bytes.NewReader(src)}, -1, tempSpool(t, &made)); err != errBodyTooBig {
		t.Fatalf("maxBody+1: %v", err)
	}
	r := &readsCounted{}
	if _, err := readBody(r, -1, tempSpool(t, &made)); err != errBodyTooBig || r.n != 1001 {
		t.Fatalf("without end: %v after reading %d bytes", err, r.n)
	}
	if _, err := readBody(bytes.NewReader(src), 1001, nil); err != errBodyTooBig {
		t.Fatalf("size maxBody+1: %v", err)
	}
}

// TestReadBodySpoolFails: a spool that cannot be written (a full disk)
// is an error that says where and what to do, not the input's.
func TestReadBodySpoolFails(t *testing.T) {
	lowBody(t, 1000)
	lowSpill(t, 100)
	path := filepath.Join(t.TempDir(), "spool")
	os.WriteFile(path, nil, 0o600)
	_, err := readBody(onlyReader{bytes.NewReader(make([]byte, 500))}, -1, func() (vfs.File, error) {
		return os.Open(path) // read-only: every write fails
	})
	var se *spoolError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "in a spool file in "+filepath.Dir(path)) ||
		!strings.HasSuffix(err.Error(), ": give the body as a regular FILE, which is read without one") {
		t.Fatalf("spool not writable: %v", err)
	}
	// A full disk: free space there, and no word of the store's hints
	// (explain's for a full store, "it recovers what this one wrote").
	_, err = readBody(onlyReader{bytes.NewReader(make([]byte, 500))}, -1, func() (vfs.File, error) {
		f, err := os.Create(path)
		return fullFile{f}, err
	})
	msg := explain(readErr(err), "/home/u/.rook")
	if !strings.HasSuffix(msg, ": no space left on device: free space there, or give the body as a regular FILE, which is read without one") {
		t.Fatalf("spool on a full disk: %s", msg)
	}
	t.Log(msg)
}

// fullFile is a file on a full disk.
type fullFile struct{ *os.File }

func (f fullFile) Write(p []byte) (int, error) {
	return 0, &fs.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
}

// TestAppendStdinLimit: through the command, a stdin body of the limit
// exactly goes in through the spool, one byte more is refused (exit 1,
// nothing appended), and neither leaves a spool file in the store; with
// no store, the spool's failure says so.
func TestAppendStdinLimit(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	run := func(stdin string, args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Main(append([]string{"--home", home, "-C", ws}, args...), onlyReader{bytes.NewReader([]byte(stdin))}, &out, &errb)
		return code, out.String(), errb.String()
	}
	lowBody(t, 1000)
	lowSpill(t, 100)
	if code, _, e := run(strings.Repeat("a", 500), "session", "append", "last", "--kind", "note"); code != 1 || !strings.Contains(e, "run `rook init`") {
		t.Fatalf("no store: exit %d, %s", code, e)
	}
	if code, _, e := run("", "init"); code != 0 {
		t.Fatal(e)
	}
	code, id, e := run("", "session", "new")
	if code != 0 {
		t.Fatal(e)
	}
	id = strings.TrimSpace(id)
	if code, out, e := run(strings.Repeat("a", 1000), "session", "append", id, "--kind", "note"); code != 0 || out != "0\n" {
		t.Fatalf("maxBody: exit %d, %s %s", code, out, e)
	}
	if code, _, e := run(strings.Repeat("b", 1001), "--json", "session", "append", id, "--kind", "note"); code != 1 || !strings.Contains(e, `"error":"standard input holds more than the 1000 B (1000 bytes)`) {
		t.Fatalf("maxBody+1: exit %d, %s", code, e)
	}
	if code, out, e := run("", "session", "show", id); code != 0 || !strings.Contains(out, strings.Repeat("a", 50)) || strings.Contains(out, "bbbb") || strings.Contains(out, "#1") {
		t.Fatalf("show: exit %d, %s %s", code, out, e)
	}
	noSpoolLeft(t, home)
}

func runJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	var out, errb bytes.Buffer
	if code := Main(append([]string{"--json"}, args...), strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errb.String())
	}
	var v map[string]any
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatalf("%v: %v: %.300s", args, err, out.String())
	}
	return v
}

// `session show` says how many bytes of an event's text it left out ("…
// N more bytes of text: ... --max-body M"; --json: body_bytes_omitted).
// Of a big Claude Code tool result, whose output the line holds twice (the
// tool_result's content and toolUseResult.stdout, which the view does not
// show), it counted the bytes of both strings: about twice the text there
// is, and the --max-body it suggested was twice what is needed.
func TestShowOmittedCountsOnlyTheTextTheViewLeavesOut(t *testing.T) {
	// A working directory of its own: Main's -C in a test before may
	// have left the process in one since removed.
	t.Chdir(t.TempDir())
	home := bigObjectsHome(t)
	dir := filepath.Join(t.TempDir(), "projects", "-home-dev-app")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sid := "7c1e2a9b-3f4d-4e5a-8b6c-0d1e2f3a4b5d"
	big := strings.Repeat("line of output\n", 140000) // 2.1 MB
	lines := []map[string]any{
		{"type": "user", "sessionId": sid, "uuid": "u1", "parentUuid": nil, "cwd": "/home/dev/app", "timestamp": "2026-01-05T10:00:00Z",
			"message": map[string]any{"role": "user", "content": "run it"}},
		{"type": "assistant", "sessionId": sid, "uuid": "a1", "parentUuid": "u1", "cwd": "/home/dev/app", "timestamp": "2026-01-05T10:00:01Z",
			"message": map[string]any{"id": "msg_1", "role": "assistant", "model": "claude", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": map[string]any{"command": "gen"}}}, "usage": map[string]any{"input_tokens": 10, "output_tokens": 5}}},
		{"type": "user", "sessionId": sid, "uuid": "u2", "parentUuid": "a1", "cwd": "/home/dev/app", "timestamp": "2026-01-05T10:00:02Z",
			"message":       map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": big}}},
			"toolUseResult": map[string]any{"stdout": big, "stderr": ""}},
	}
	var file bytes.Buffer
	for _, l := range lines {
		b, _ := json.Marshal(l)
		file.Write(append(b, '\n'))
	}
	if err := os.WriteFile(filepath.Join(dir, sid+".jsonl"), file.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	runJSON(t, "--home", home, "import", "claude-code", filepath.Dir(dir))
	var out bytes.Buffer
	if code := Main([]string{"--home", home, "--json", "session", "ls", "--all"}, strings.NewReader(""), &out, io.Discard); code != 0 {
		t.Fatalf("session ls: exit %d", code)
	}
	var ls []map[string]any
	if err := json.Unmarshal(out.Bytes(), &ls); err != nil || len(ls) != 1 {
		t.Fatalf("session ls: %v: %.300s", err, out.String())
	}
	id := ls[0]["id"].(string)

	event := func(args ...string) map[string]any {
		page := runJSON(t, append([]string{"--home", home, "session", "show", id, "--from", "2", "--limit", "1"}, args...)...)
		return page["events"].([]any)[0].(map[string]any)
	}
	head := event()
	whole := event("--max-body", "100000000")
	shown, all := len(head["body"].(string)), len(whole["body"].(string))
	if whole["elided"] == true {
		t.Fatalf("--max-body 100000000 still elided the body")
	}
	omitted := int64(head["body_bytes_omitted"].(float64))
	if omitted != int64(all-shown) {
		t.Fatalf("session show: body_bytes_omitted %d, but the whole text is %d bytes and %d were shown: %d left out",
			omitted, all, shown, all-shown)
	}
}

// TestHistoryPreviewKeepsACharacterTheHeadCuts: the preview of a body
// bigger than a segment record is taken from its 64 KiB head; a first
// line (after blank lines) reaching the head's end with an emoji the end
// splits showed "aaa…a\uFFFD…" in `session history` (and --json): a
// character the body does not hold, where `session show` shows 😀. The
// head is cut back to its last whole character (agent's wholeEnd), and
// the preview is the whole body's, Preview(StripSGR(body), 80).
func TestHistoryPreviewKeepsACharacterTheHeadCuts(t *testing.T) {
	r := newCLIStore(t)
	s := r.must("", "session", "new", "--title", "big")
	body := strings.Repeat("\n", 65455) + strings.Repeat("a", 79) + "😀" + strings.Repeat("b", 3<<20) + "\n"
	if body[65534:65536] != "😀"[:2] {
		t.Fatal("the emoji does not straddle the 64 KiB head's end")
	}
	r.must(body, "session", "append", s, "--kind", "user")
	want := strings.Repeat("a", 79) + "😀…"
	for _, args := range [][]string{{"session", "history", s}, {"--json", "session", "history", s}} {
		code, out, errs := r.run("", args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		if strings.Contains(out, "\uFFFD") || !strings.Contains(out, want) {
			t.Errorf("%v: the preview is not the body's first line (want …%q):\n%s", args, want[70:], out)
		}
	}
}
