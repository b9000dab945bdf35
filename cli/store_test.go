package cli

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// cliStore runs rook in-process on a store of its own, in a directory of
// its own.
type cliStore struct {
	t    *testing.T
	dir  string
	home string
}

func newCLIStore(t *testing.T) *cliStore {
	t.Helper()
	dir := t.TempDir()
	r := &cliStore{t: t, dir: dir, home: filepath.Join(dir, "store")}
	if code, _, errs := r.run("", "init"); code != 0 {
		t.Fatalf("init: exit %d: %s", code, errs)
	}
	return r
}

// run returns rook's exit code, stdout and stderr.
func (r *cliStore) run(stdin string, args ...string) (int, string, string) {
	r.t.Helper()
	var out, errb bytes.Buffer
	code := Main(append([]string{"--home", r.home, "-C", r.dir}, args...), strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// must runs a command that must succeed, and returns its stdout trimmed.
func (r *cliStore) must(stdin string, args ...string) string {
	r.t.Helper()
	code, out, errs := r.run(stdin, args...)
	if code != 0 {
		r.t.Fatalf("rook %q: exit %d: %s", args, code, errs)
	}
	return strings.TrimSpace(out)
}

// TestStoreLsSaysWhenTheDefaultLimitCutsIt: `rook store ls` on a store of
// 51 objects printed 50 rows and nothing else, and the user read them as
// the store's objects (`store stat` said 51). A list --limit cuts says how
// many more there are and how to list them, on stderr; --json stays the
// bare array of the rows listed.
func TestStoreLsSaysWhenTheDefaultLimitCutsIt(t *testing.T) {
	r := newCLIStore(t)
	for i := 0; i < 51; i++ {
		r.must(fmt.Sprintf("object %d", i), "store", "put")
	}
	code, out, errs := r.run("", "store", "ls")
	if code != 0 {
		t.Fatalf("ls: exit %d: %s", code, errs)
	}
	rows := 0
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(l, "id ") || strings.HasPrefix(l, "─") || strings.Contains(l, "--limit") || strings.Contains(l, "more") {
			continue
		}
		rows++
	}
	if rows != 50 {
		t.Fatalf("ls listed %d objects, want the default 50:\n%s", rows, out)
	}
	if !strings.Contains(out+errs, "--limit") {
		lines := strings.Split(strings.TrimSpace(out), "\n")
		t.Errorf("store ls showed 50 of 51 objects without saying the list is cut (nor naming --limit); its last line: %q, stderr: %q", lines[len(lines)-1], errs)
	}
	if want := "rook: note: 1 more object(s) not listed, past the newest 50: `--limit 0` lists them all\n"; errs != want {
		t.Errorf("stderr %q, want %q", errs, want)
	}
	// All of them, or a list not cut: no note.
	for _, args := range [][]string{{"store", "ls", "--limit", "0"}, {"store", "ls", "--limit", "51"}} {
		if _, _, errs := r.run("", args...); errs != "" {
			t.Errorf("%q: stderr %q, want none", args, errs)
		}
	}
	// --json stays a bare array (scripts read .[]), the rows --limit gives.
	for _, c := range []struct {
		limit string
		rows  int
	}{{"50", 50}, {"10", 10}, {"0", 51}} {
		var v []objectRow
		out := r.must("", "--json", "store", "ls", "--limit", c.limit)
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if len(v) != c.rows {
			t.Errorf("--json store ls --limit %s: %d objects, want %d", c.limit, len(v), c.rows)
		}
	}
}

// TestStoreCatJSONBoundedMemory: `rook --json store cat ID` of a big
// object read it whole, then printJSON built its base64 as a string,
// marshalled it into a buffer and indented that into another: 12.7 bytes
// allocated per byte (a 200 MB object took 1.4 GB). The bytes are read
// once and their base64 streamed: at most 4 bytes allocated per byte.
func TestStoreCatJSONBoundedMemory(t *testing.T) {
	r := newCLIStore(t)
	const size = 16 << 20
	data := make([]byte, size)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(r.dir, "big.bin")
	if err := os.WriteFile(f, data, 0o600); err != nil {
		t.Fatal(err)
	}
	id := r.must("", "store", "put", f)
	data = nil
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	code := Main([]string{"--home", r.home, "-C", r.dir, "--json", "store", "cat", id}, strings.NewReader(""), io.Discard, io.Discard)
	runtime.ReadMemStats(&after)
	if code != 0 {
		t.Fatalf("--json store cat: exit %d", code)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	if per := float64(alloc) / size; per > 4 {
		t.Errorf("--json store cat of a %d MiB object allocated %d MiB (%.1f bytes per byte), want at most 4 per byte", size>>20, alloc>>20, per)
	}
}

// TestStoreCatJSONAsPrintJSONWroteIt: the streamed `store cat --json` is
// byte for byte what printJSON wrote, for every length's base64 padding,
// the empty object (and a nil slice, as null) included.
func TestStoreCatJSONAsPrintJSONWroteIt(t *testing.T) {
	id := strings.Repeat("ab", 16)
	cases := [][]byte{nil, {}, {0}, {0, 0xff}, {1, 2, 3}, {1, 2, 3, 4}, bytes.Repeat([]byte("<&>\x00\xff"), 30000)}
	for _, data := range cases {
		var want, got bytes.Buffer
		e := &Env{Stdout: &want}
		if err := e.printJSON(map[string]any{"id": id, "size": len(data), "data": data}); err != nil {
			t.Fatal(err)
		}
		if err := printObjectJSON(&got, id, data); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("%d bytes (nil %v): got\n%.200s\nwant\n%.200s", len(data), data == nil, got.String(), want.String())
		}
	}
	// As a command: the empty object reads as no bytes at all (nil), and
	// its "data" is null, as printJSON wrote it.
	r := newCLIStore(t)
	empty := filepath.Join(r.dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	eid := r.must("", "store", "put", empty)
	want := "{\n  \"data\": null,\n  \"id\": \"" + eid + "\",\n  \"size\": 0\n}"
	if got := r.must("", "--json", "store", "cat", eid); got != want {
		t.Errorf("--json store cat of the empty object: %q, want %q", got, want)
	}
}

// TestStorePruneTakesAProtectTagAnOlderRookTook: config.toml with
// protect_tags = ["keep", "⭐️"], which rook read before tags refused
// invisible characters, made every command that reads it (store prune,
// maintain, gc, import, mcp) fail "protect_tags: tag "⭐️" has U+FE0F
// ...", exit 1, and the sessions protected with "⭐️" could no longer be
// protected by name at all. A protect tag only matches tags: config.toml
// refuses in one what every rook refused (white space, a control
// character), not what a new tag may no longer hold, which a session an
// older rook tagged may.
func TestStorePruneTakesAProtectTagAnOlderRookTook(t *testing.T) {
	r := newCLIStore(t)
	for _, tags := range []string{`"keep", "⭐️"`, `"keep", "v1\u202e"`} {
		cfg := "[storage.retention]\nprotect_tags = [" + tags + "]\n"
		if err := os.WriteFile(filepath.Join(r.home, "config.toml"), []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		code, out, errs := r.run("", "store", "prune", "--dry-run")
		if code != 0 || strings.Contains(errs, "protect_tags") {
			t.Errorf("store prune --dry-run with protect_tags [%s]: exit %d: %s%s", tags, code, out, errs)
		}
	}
}
