package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rookhq/rook/agent"
	"github.com/rookhq/rook/internal/vfs"
)

// A transcript the walk listed and that is gone (deleted, or moved away)
// before import read it is reported as gone before it was read, not as a
// failed file: the others are imported, and rook import exits 0, with
// --json too. (A script cannot time a file's going between the listing and
// the reading: the file system here removes it as import opens it.)
func TestImportFileGoneBeforeRead(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "store")
	var out, errb bytes.Buffer
	if Main([]string{"--home", home, "-C", dir, "init"}, strings.NewReader(""), &out, &errb) != 0 {
		t.Fatal(errb.String())
	}
	src := filepath.Join(dir, "p")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b", "c"} {
		line := `{"type":"user","sessionId":"` + n + `","uuid":"u1","timestamp":"2026-01-02T03:04:05Z","cwd":"/w","message":{"role":"user","content":"hello"}}` + "\n"
		if err := os.WriteFile(filepath.Join(src, n+".jsonl"), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, asJSON := range []bool{false, true} {
		gone := filepath.Join(src, []string{"b", "c"}[i]+".jsonl")
		out.Reset()
		errb.Reset()
		e := &Env{Stdout: &out, Stderr: &errb, Home: home, JSON: asJSON, FS: onOpen{vfs.OS, func(name string) {
			if name == gone {
				os.Remove(gone) // as its agent deletes it, after the walk listed it
			}
		}}}
		if err := runImport(e, "claude-code", []string{src}); err != nil {
			t.Fatalf("json %v: exit with %v\n%s%s", asJSON, err, out.String(), errb.String())
		}
		if !asJSON {
			want := regexp.MustCompile(`(?m)^claude-code: 3 file\(s\): 2 new, 0 grown, 0 unchanged, 0 rewritten \(imported again as new sessions\), 0 failed, 1 gone before they were read$` +
				`(?s:.*)^  gone      -  ` + regexp.QuoteMeta(gone) + `  0 line\(s\)\n {12}gone before it was read \(deleted or moved away after the files were listed\): nothing taken in from it$`)
			if !want.MatchString(out.String()) || strings.Contains(out.String(), "problems") {
				t.Fatalf("summary:\n%s", out.String())
			}
			continue
		}
		var rep struct {
			Failed int `json:"files_failed"`
			Gone   int `json:"files_gone"`
			Files  []struct{ Path, Status, Note string }
		}
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		found := false
		for _, f := range rep.Files {
			if f.Path == gone {
				found = f.Status == "gone" && strings.HasPrefix(f.Note, "gone before it was read")
			}
		}
		if !found || rep.Failed != 0 || rep.Gone != 1 {
			t.Fatalf("--json:\n%s", out.String())
		}
	}
	// Beside a file that fails (JSON, but no entry): exit 1 for that one,
	// and stderr counts the gone one among those with nothing new.
	if err := os.WriteFile(filepath.Join(src, "x.jsonl"), []byte(`{"hello":"world"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(src, "a.jsonl")
	out.Reset()
	e := &Env{Stdout: &out, Stderr: &errb, Home: home, FS: onOpen{vfs.OS, func(name string) {
		if name == gone {
			os.Remove(gone)
		}
	}}}
	err := runImport(e, "claude-code", []string{src})
	if err == nil || !strings.HasSuffix(err.Error(), "; the other file was gone before it was read (deleted or moved away after the files were listed)") {
		t.Fatalf("beside a failed file: %v\n%s", err, out.String())
	}
	// Beside an unchanged one too: each counted as what it is, the gone
	// one not among those with nothing new.
	for _, n := range []string{"a", "b", "d"} { // a as imported before, d new, b gone
		line := `{"type":"user","sessionId":"` + n + `","uuid":"u1","timestamp":"2026-01-02T03:04:05Z","cwd":"/w","message":{"role":"user","content":"hello"}}` + "\n"
		if err := os.WriteFile(filepath.Join(src, n+".jsonl"), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gone = filepath.Join(src, "b.jsonl")
	out.Reset()
	err = runImport(e, "claude-code", []string{src})
	if err == nil || !strings.HasSuffix(err.Error(), "; of the other 3, 1 was imported, 1 had nothing new to import (empty, or unchanged since the last import) and 1 was gone before it was read (deleted or moved away after the files were listed)") {
		t.Fatalf("beside a failed file: %v\n%s", err, out.String())
	}
}

// An import an interrupt stopped counted a file gone before it was read
// among the unchanged ones: it is said as gone.
func TestImportStoppedSaysGone(t *testing.T) {
	rep := agent.ImportReport{Sessions: 1, Unchanged: 1, Gone: 1, NotRead: []string{"/t/d.jsonl", "/t/e.jsonl"},
		Files: []agent.ImportedFile{{Status: agent.ImportNew}, {Status: agent.ImportUnchanged}, {Status: agent.ImportGone}}}
	got := importStoppedMsg(os.Interrupt, rep)
	want := "interrupt: the import stopped after 3 of 5 file(s): 1 taken in, 1 unchanged, 1 gone before it was read (deleted or moved away after the files were listed), all in the store; 2 not read (the first: /t/d.jsonl): run the same `rook import` again to import them (what is in is not imported twice)"
	if got != want {
		t.Errorf("said %q\nwant %q", got, want)
	}
	// Two gone: "2 gone before they were read", not "before it was".
	rep.Gone, rep.Unchanged = 2, 0
	rep.Files[1].Status = agent.ImportGone
	got = importStoppedMsg(os.Interrupt, rep)
	want = "interrupt: the import stopped after 3 of 5 file(s): 1 taken in, 0 unchanged, 2 gone before they were read (deleted or moved away after the files were listed), all in the store; 2 not read (the first: /t/d.jsonl): run the same `rook import` again to import them (what is in is not imported twice)"
	if got != want {
		t.Errorf("said %q\nwant %q", got, want)
	}
}
