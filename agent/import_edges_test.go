package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// TestImportNestedTooDeep: a line whose JSON nests deeper than
// encoding/json's 10,000 levels is reported as nested too deep at its
// file:line (not "not JSON", which it would be to a reader that looked no
// further), kept byte for byte, read whole or in chunks, with no stack
// blow-up however deep it goes; 10,000 levels are JSON as any line is.
func TestImportNestedTooDeep(t *testing.T) {
	good := claudeLines("d", 1)
	codexMeta := `{"timestamp":"2026-01-07T08:30:00.100Z","type":"session_meta","payload":{"id":"019b8a10-1111-7222-8333-944455566677","timestamp":"2026-01-07T08:30:00.050Z","cwd":"/home/dev/app","originator":"codex_cli_rs","cli_version":"0.80.0","source":"cli","model_provider":"openai"}}`
	nest := func(n int) string { return strings.Repeat(`{"a":[`, n/2) + "1" + strings.Repeat("]}", n/2) }
	for _, tc := range []struct {
		format, head, line string
		deep               bool
	}{
		{FormatClaudeCode, good[0], `{"type":"user","sessionId":"d","message":{"role":"user","content":` + nest(10002) + `},"uuid":"u9","timestamp":"2026-02-10T21:01:01.000Z"}`, true},
		{FormatClaudeCode, good[0], `{"type":"user","sessionId":"d","toolUseResult":` + nest(1_000_000) + `}`, true},
		{FormatClaudeCode, good[0], strings.Repeat("[", 200_000), true}, // never closed
		{FormatClaudeCode, good[0], `{"type":"progress","data":` + nest(9998) + `}`, false},
		{FormatCodex, codexMeta, `{"timestamp":"2026-01-07T08:30:01.000Z","type":"response_item","payload":` + nest(20000) + `}`, true},
	} {
		for _, chunk := range []int{0, 300} {
			name := fmt.Sprintf("%s %d bytes, chunks of %d", tc.format, len(tc.line), chunk)
			fsys := vfs.NewMem()
			r, clk := clockedRook(t, fsys)
			src := "/src/p/d.jsonl"
			if tc.format == FormatCodex {
				src = "/src/p/rollout-2026-01-07T08-30-00-019b8a10-1111-7222-8333-944455566677.jsonl"
			}
			data := writeSourceBytes([]string{tc.head, tc.line, tc.head}, "")
			writeAt(t, fsys, clk, src, data, time.Hour)
			rep, err := r.Import(ImportOptions{Format: tc.format, Paths: []string{src}, ChunkBytes: chunk})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			f := fileByPath(t, rep, src)
			if f.Session == nil || f.Status != ImportNew {
				t.Fatalf("%s: %+v", name, f)
			}
			mustExport(t, r, *f.Session, data)
			var deep []ImportProblem
			for _, p := range rep.Problems {
				if strings.Contains(p.Reason, "nested too deep") {
					deep = append(deep, p)
				}
			}
			if !tc.deep {
				if len(deep) > 0 {
					t.Fatalf("%s: 9,998 levels reported too deep: %+v", name, rep.Problems)
				}
				continue
			}
			if len(deep) != 1 || deep[0].File != src || deep[0].Line != 2 || f.Unparsed != 1 {
				t.Fatalf("%s: want one problem at line 2 saying nested too deep, got %+v (unparsed %d)", name, rep.Problems, f.Unparsed)
			}
		}
	}
}

func TestFillerString(t *testing.T) {
	for f, want := range map[filler]string{
		0:                        "empty",
		fillerOf([]byte(" \n")):  "only blank lines",
		fillerOf([]byte("\x00")): "only NUL bytes",
		fillerOf([]byte("\xef\xbb\xbf\x00\r\n")) | fillerBlank: "only a byte order mark, NUL bytes and blank lines",
	} {
		if got := f.String(); got != want {
			t.Errorf("%08b: %q, want %q", f, got, want)
		}
	}
	if f := fillerOf([]byte("\x00{")); f != 0 {
		t.Errorf("a line with an entry after NULs is filler: %08b", f)
	}
}

// TestImportNewCutLineSameBothWays: a new file whose only line is cut
// short (no newline: its agent writing its first line, or a crash that
// cut it) is left for the next import, unchanged, no session and no
// problem, whether the file is read whole or in chunks (a file over 64
// MiB), written moments ago or quiet for an hour: read in chunks, a quiet
// one failed as "not a transcript". Once whole it is a new session,
// exported byte for byte.
func TestImportNewCutLineSameBothWays(t *testing.T) {
	line := claudeLines("c", 1)[6]
	for _, cut := range []string{line[:len(line)/2], line[:12], "{", "hello wor"} {
		for _, after := range []time.Duration{time.Second, time.Hour} {
			for _, chunk := range []int{0, 5, 300} {
				name := fmt.Sprintf("%q, changed %v before, chunks of %d", cut[:min(len(cut), 20)], after, chunk)
				fsys := vfs.NewMem()
				r, clk := clockedRook(t, fsys)
				src := "/src/p/c.jsonl"
				writeAt(t, fsys, clk, src, []byte(cut), after)
				rep, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{src}, ChunkBytes: chunk})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				f := fileByPath(t, rep, src)
				want := "its only line is cut short (no newline yet)"
				if after < statQuiet {
					want = "its first line is still being written"
				}
				if f.Status != ImportUnchanged || f.Session != nil || f.Lines != 0 || f.BytesIn != 0 || len(rep.Problems) != 0 || rep.Failed != 0 ||
					!strings.Contains(f.Note, want) || !strings.Contains(f.Note, "nothing to import yet") {
					t.Fatalf("%s: %+v, problems %+v", name, f, rep.Problems)
				}
				if ids, _ := r.Log.IDs(); len(ids) != 0 {
					t.Fatalf("%s: a session made: %v", name, ids)
				}
				whole := writeSourceBytes([]string{line}, "")
				writeAt(t, fsys, clk, src, whole, after)
				rep, err = r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{src}, ChunkBytes: chunk})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if f := fileByPath(t, rep, src); f.Status != ImportNew || f.Session == nil {
					t.Fatalf("%s: once whole: %+v", name, f)
				} else {
					mustExport(t, r, *f.Session, whole)
				}
			}
		}
	}
}

// TestImportOnlyFiller: a new file of only NUL bytes (space a crash left,
// or its agent set aside) or only a UTF-8 byte order mark, with or without
// a newline, blank lines or none, holds no more than an empty file: it is
// unchanged, "nothing to import yet", no session and no problem (it was
// "its first line is still being written", or a failed file, "not a
// transcript"), read whole or in chunks. When its agent then writes an
// entry after them, the file is a session, exported byte for byte.
func TestImportOnlyFiller(t *testing.T) {
	entry := claudeLines("n", 1)[0]
	for _, tc := range []struct{ data, note string }{
		{"\x00", "only NUL bytes"},
		{strings.Repeat("\x00", 4096), "only NUL bytes"},
		{"\x00\x00\x00\n", "only NUL bytes"},
		{"\x00\x00\n\n\x00\x00", "only NUL bytes and blank lines"},
		{"\xef\xbb\xbf", "only a byte order mark"},
		{"\xef\xbb\xbf\n", "only a byte order mark"},
		{"\xef\xbb\xbf\r\n\n", "only a byte order mark and blank lines"},
		{"\xef\xbb\xbf\x00\x00", "only a byte order mark and NUL bytes"},
	} {
		for _, after := range []time.Duration{time.Second, time.Hour} {
			for _, chunk := range []int{0, 3} {
				name := fmt.Sprintf("%q, changed %v before, chunks of %d", tc.data[:min(len(tc.data), 8)], after, chunk)
				fsys := vfs.NewMem()
				r, clk := clockedRook(t, fsys)
				src := "/src/p/n.jsonl"
				writeAt(t, fsys, clk, src, []byte(tc.data), after)
				rep, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{src}, ChunkBytes: chunk})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				f := fileByPath(t, rep, src)
				if want := tc.note + ": nothing to import yet"; f.Status != ImportUnchanged || f.Session != nil || f.Note != want ||
					f.Lines != 0 || len(rep.Problems) != 0 || rep.Failed != 0 {
					t.Fatalf("%s: %+v, problems %+v, want unchanged, note %q", name, f, rep.Problems, want)
				}
				if ids, _ := r.Log.IDs(); len(ids) != 0 {
					t.Fatalf("%s: a session made: %v", name, ids)
				}
				grown := []byte(tc.data + entry + "\n")
				writeAt(t, fsys, clk, src, grown, after)
				rep, err = r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{src}, ChunkBytes: chunk})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if f := fileByPath(t, rep, src); f.Status != ImportNew || f.Session == nil {
					t.Fatalf("%s: an entry after: %+v", name, f)
				} else {
					mustExport(t, r, *f.Session, grown)
				}
			}
		}
	}
}

// TestImportFileGoneBeforeRead: a file listed by the walk and gone (deleted,
// or moved away) before the import read it is reported as gone before it
// was read, not failed: the import goes on with the others, and a session
// imported from it before keeps what it held.
func TestImportFileGoneBeforeRead(t *testing.T) {
	for _, chunk := range []int{0, 300} {
		fsys := vfs.NewMem()
		r, clk := clockedRook(t, fsys)
		dir := "/src/p"
		data := map[string][]byte{}
		for _, n := range []string{"a", "b", "c"} {
			data[n] = writeSourceBytes(claudeLines(n, 1), "")
			writeAt(t, fsys, clk, filepath.Join(dir, n+".jsonl"), data[n], time.Hour)
		}
		gone := filepath.Join(dir, "b.jsonl")
		vanish := func() {
			var once sync.Once
			fsys.SetHook(func(op vfs.Op, path string) error {
				if op == vfs.OpOpenRead && path == gone {
					once.Do(func() {
						if err := fsys.Remove(gone); err != nil {
							t.Error(err)
						}
					})
				}
				return nil
			})
		}
		check := func(what string, rep ImportReport, session *eventlog.ID) {
			t.Helper()
			f := fileByPath(t, rep, gone)
			if f.Status != ImportGone || !strings.Contains(f.Note, "gone before it was read") || rep.Gone != 1 || rep.Failed != 0 || len(rep.Problems) != 0 || f.Lines != 0 || f.Session != nil {
				t.Fatalf("chunks of %d, %s: %+v, problems %+v", chunk, what, f, rep.Problems)
			}
			if session != nil && !strings.Contains(f.Note, session.String()) {
				t.Fatalf("chunks of %d, %s: the note does not name the session that keeps what it held: %q", chunk, what, f.Note)
			}
			for _, n := range []string{"a", "c"} {
				if f := fileByPath(t, rep, filepath.Join(dir, n+".jsonl")); f.Session == nil {
					t.Fatalf("chunks of %d, %s: %s not imported: %+v", chunk, what, n, f)
				}
			}
		}
		vanish()
		rep, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{dir}, ChunkBytes: chunk})
		fsys.SetHook(nil)
		if err != nil {
			t.Fatal(err)
		}
		check("new", rep, nil)
		if ids, _ := r.Log.IDs(); len(ids) != 2 {
			t.Fatalf("chunks of %d: %d sessions, want 2", chunk, len(ids))
		}

		// Imported, then grown, and gone before the next import read it.
		writeAt(t, fsys, clk, gone, data["b"], time.Hour)
		rep = mustImport(t, r, FormatClaudeCode, dir)
		id := *fileByPath(t, rep, gone).Session
		writeAt(t, fsys, clk, gone, append(bytes.Clone(data["b"]), writeSourceBytes(claudeLines("b", 2), "")...), time.Hour)
		vanish()
		rep, err = r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{dir}, ChunkBytes: chunk})
		fsys.SetHook(nil)
		if err != nil {
			t.Fatal(err)
		}
		check("grown", rep, &id)
		mustExport(t, r, id, data["b"])
	}
}

// FuzzNestedTooDeep: nestedTooDeep says a line is too deep exactly when
// encoding/json refuses it for its depth (its "exceeded max depth"), never
// for a line it refuses for anything met before.
func FuzzNestedTooDeep(f *testing.F) {
	deep := strings.Repeat("[", maxJSONDepth+1)
	f.Add([]byte(deep))
	f.Add([]byte(strings.Repeat(`{"a":`, maxJSONDepth) + "[1]" + strings.Repeat("}", maxJSONDepth)))
	f.Add([]byte(strings.Repeat("[", maxJSONDepth) + "1" + strings.Repeat("]", maxJSONDepth)))
	f.Add([]byte("x" + deep))
	f.Add([]byte(`["\"[[` + deep[4:] + `"` + deep))
	f.Add([]byte(`{"a":"` + "\x01" + `",` + deep))
	f.Add([]byte(`[1 2` + deep))
	f.Fuzz(func(t *testing.T, b []byte) {
		if json.Valid(b) {
			return // (never asked of JSON)
		}
		var raw json.RawMessage
		var se *json.SyntaxError
		want := errors.As(json.Unmarshal(b, &raw), &se) && strings.HasSuffix(se.Error(), "exceeded max depth")
		if got := nestedTooDeep(b); got != want {
			t.Fatalf("nestedTooDeep %v, encoding/json: %v (%d bytes)", got, se, len(b))
		}
	})
}

// A fork imported before its parent, its file grown and then gone before
// the import that takes in the parent read it: its session is linked to
// the parent all the same, and the count of sessions linked says so (the
// summary lists the file as gone, not as linked).
func TestImportGoneForkLinkedCounted(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	paths, lines := codexForkFiles(sameLine)
	writeSource(t, fsys, paths[1], lines[1], "")
	fid := *fileByPath(t, mustImport(t, r, FormatCodex, "/c"), paths[1]).Session
	writeSource(t, fsys, paths[0], lines[0], "")
	writeSource(t, fsys, paths[1], append(lines[1], lines[1][len(lines[1])-1]), "")
	fsys.SetHook(func(op vfs.Op, path string) error {
		if op == vfs.OpOpenRead && path == paths[1] {
			fsys.Remove(paths[1])
		}
		return nil
	})
	rep, err := r.Import(ImportOptions{Format: FormatCodex, Paths: []string{"/c"}})
	fsys.SetHook(nil)
	if err != nil {
		t.Fatal(err)
	}
	pid := *fileByPath(t, rep, paths[0]).Session
	if f := fileByPath(t, rep, paths[1]); f.Status != ImportGone || rep.Gone != 1 {
		t.Fatalf("%+v", f)
	}
	if m := metaOf(t, r, fid); m.Parent == nil || *m.Parent != pid {
		t.Fatalf("the fork's session is not linked to its parent: %+v", m.Parent)
	}
	if rep.Linked != 1 {
		t.Fatalf("children linked: %d, want 1", rep.Linked)
	}
}
