package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	en, err := parseJSONLine([]byte(`{"kind":"note","body_file":"` + ok + `"}`))
	if err != nil || len(en.Body) != 1000 {
		t.Fatalf("body_file at the limit: %d bytes, %v", len(en.Body), err)
	}
	for _, f := range []string{big, "/dev/zero"} {
		if f == "/dev/zero" {
			if _, err := os.Stat(f); err != nil {
				continue
			}
		}
		_, err = parseJSONLine([]byte(`{"kind":"note","body_file":"` + f + `"}`))
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

// TestReadBodyChunks: a source of unknown size is read in growing chunks;
// what they join to is the source, up to the limit exactly.
func TestReadBodyChunks(t *testing.T) {
	lowBody(t, 300000)
	src := make([]byte, 300001)
	for i := range src {
		src[i] = byte(i * 7)
	}
	for _, n := range []int{0, 1, 65535, 65536, 65537, 200000, 300000} {
		b, err := readBody(onlyReader{bytes.NewReader(src[:n])}, -1)
		if err != nil || !bytes.Equal(b, src[:n]) {
			t.Fatalf("%d bytes: got %d, %v", n, len(b), err)
		}
		b, err = readBody(bytes.NewReader(src[:n]), int64(n))
		if err != nil || !bytes.Equal(b, src[:n]) {
			t.Fatalf("%d bytes, size known: got %d, %v", n, len(b), err)
		}
	}
	if _, err := readBody(onlyReader{bytes.NewReader(src)}, -1); err != errBodyTooBig {
		t.Fatalf("one byte over: %v", err)
	}
	// A file that grew after its size was taken.
	if _, err := readBody(bytes.NewReader(src), 10); err != errBodyTooBig {
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
	if _, err := readBody(r, 1001); err != errBodyTooBig || r.n != 0 {
		t.Fatalf("size 1001 past a limit of 1000: %v after reading %d bytes", err, r.n)
	}
	// Unknown size: read to one byte past the limit, no further.
	r = &readsCounted{}
	if _, err := readBody(r, -1); err != errBodyTooBig || r.n != 1001 {
		t.Fatalf("unknown size: %v after reading %d bytes", err, r.n)
	}
}
