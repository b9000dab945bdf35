package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rookhq/rook/eventlog"
)

// sourcesStore makes a store on disk holding n imported sessions, each of
// its own Claude Code transcript (there, in dir), with metadata as an
// import writes it (importedMeta): the store export -o looks through.
func sourcesStore(tb testing.TB, n int) (r *Rook, dir string, ids []eventlog.ID) {
	tb.Helper()
	home, dir := filepath.Join(tb.TempDir(), "store"), tb.TempDir()
	r = diskRook(tb, home)
	r.Log.SetBulk(true)
	for i := range n {
		sid := fmt.Sprintf("1a2b3c4d-5e6f-4a7b-8c9d-%012d", i)
		p := filepath.Join(dir, sid+".jsonl")
		if err := os.WriteFile(p, []byte(`{"type":"user"}`+"\n"), 0o600); err != nil {
			tb.Fatal(err)
		}
		m, err := r.Log.Create(importedMeta(FormatClaudeCode, p, false, sourceSession{ID: sid, Title: "a session of its own", Workspace: "/home/dev/app"}, nil))
		if err != nil {
			tb.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	if err := r.Log.Flush(); err != nil {
		tb.Fatal(err)
	}
	r.Log.SetBulk(false)
	return r, dir, ids
}

// SessionOfFile on a store of 3,000 imported sessions, for a file that is
// one's source: what every export -o asks before it writes.
func BenchmarkSessionOfFile(b *testing.B) {
	r, dir, ids := sourcesStore(b, 3000)
	p := filepath.Join(dir, fmt.Sprintf("1a2b3c4d-5e6f-4a7b-8c9d-%012d", 1234)+".jsonl")
	b.ResetTimer()
	for b.Loop() {
		m, ok, err := r.SessionOfFile(p)
		if err != nil || !ok || m.ID != ids[1234] {
			b.Fatalf("%v %v %v", m.ID, ok, err)
		}
	}
}

// SessionOfFile finds a source by its name (one JSON writes escaped too),
// through a hard link under another name, and a Codex rollout's twin; it
// finds none for a file of another name that is no source.
func TestSessionOfFileNamesAndLinks(t *testing.T) {
	r, dir, ids := sourcesStore(t, 3)
	odd := filepath.Join(dir, `a&b "c".jsonl`)
	if err := os.WriteFile(odd, []byte(`{"type":"user"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	om, err := r.Log.Create(importedMeta(FormatClaudeCode, odd, false, sourceSession{ID: "odd", Workspace: "/w"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "1a2b3c4d-5e6f-4a7b-8c9d-000000000001.jsonl")
	link := filepath.Join(t.TempDir(), "another-name.jsonl")
	if err := os.Link(src, link); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain.jsonl")
	if err := os.WriteFile(plain, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want *eventlog.ID
	}{{src, &ids[1]}, {odd, &om.ID}, {link, &ids[1]}, {plain, nil}} {
		m, ok, err := r.SessionOfFile(tc.path)
		switch {
		case err != nil:
			t.Fatalf("%s: %v", tc.path, err)
		case tc.want == nil && ok:
			t.Errorf("%s: session %s; want none", tc.path, m.ID)
		case tc.want != nil && (!ok || m.ID != *tc.want):
			t.Errorf("%s: session %s (%v); want %s", tc.path, m.ID, ok, *tc.want)
		}
	}
}

// A session's metadata that writes its source's name with JSON escapes
// (\u0031 for "1": valid JSON, as another writer, or a hand that fixed the
// file, may write it) names that file all the same: SessionOfFile finds
// it. Its bytes do not hold the name as it is, and the look through the
// metadata's bytes passed it over.
func TestSessionOfFileEscapedName(t *testing.T) {
	r, dir, ids := sourcesStore(t, 3)
	src := filepath.Join(dir, "1a2b3c4d-5e6f-4a7b-8c9d-000000000001.jsonl")
	var metaPath string
	filepath.WalkDir(r.home, func(p string, d os.DirEntry, err error) error {
		if err == nil && filepath.Base(p) == ids[1].String()+".meta" {
			metaPath = p
		}
		return nil
	})
	if metaPath == "" {
		t.Fatal("no metadata file")
	}
	b, err := os.ReadFile(metaPath)
	if err != nil {
		t.Fatal(err)
	}
	esc := strings.ReplaceAll(string(b), "000000000001.jsonl", `00000000000\u0031.jsonl`)
	// Changed by hand, so made version 1 with no check, as the check's
	// error says to (eventlog's TestMetaDamageIsCaught).
	esc = regexp.MustCompile(`,"check":"[0-9a-f]{8}"`).ReplaceAllString(strings.Replace(esc, `"v":2,`, `"v":1,`, 1), "")
	if esc == string(b) {
		t.Fatalf("the name is not in %s", b)
	}
	if err := os.WriteFile(metaPath, []byte(esc), 0o600); err != nil {
		t.Fatal(err)
	}
	m, ok, err := r.SessionOfFile(src)
	if err != nil || !ok || m.ID != ids[1] {
		t.Fatalf("session %s (%v, %v); want %s", m.ID, ok, err, ids[1])
	}
}
