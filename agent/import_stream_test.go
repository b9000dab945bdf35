package agent

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// importDump is what an import made, in terms that do not depend on the
// store: each session (by its source path) with its metadata and events,
// and the problems reported.
func importDump(t *testing.T, r *Rook, rep ImportReport) string {
	t.Helper()
	ids, err := r.Log.IDs()
	if err != nil {
		t.Fatal(err)
	}
	pathOf := map[eventlog.ID]string{}
	var metas []eventlog.Meta
	for _, id := range ids {
		m, err := r.Log.ReadMeta(id)
		if err != nil {
			t.Fatal(err)
		}
		pathOf[id] = m.Source.Path
		metas = append(metas, m)
	}
	sort.Slice(metas, func(i, j int) bool {
		if metas[i].Source.Path != metas[j].Source.Path {
			return metas[i].Source.Path < metas[j].Source.Path
		}
		return metas[i].ID.String() < metas[j].ID.String()
	})
	var b strings.Builder
	for _, m := range metas {
		parent := ""
		if m.Parent != nil {
			parent = pathOf[*m.Parent]
		}
		s := *m.Source
		stat := s.Stat != nil // its times are the file system's, which differ from run to run
		s.Stat = nil
		// Where the imports stopped reading: a file imported in steps
		// differs from one read whole there, by design (import_reread.go).
		s.Stops = nil
		// The record of the lines to report, by value (a pointer's
		// address differs from run to run): until the store's close
		// (Rook.Close), or the next import, clears it.
		unreported := "none"
		if s.Unreported != nil {
			unreported = fmt.Sprintf("%+v", *s.Unreported)
		}
		s.Unreported = nil
		fmt.Fprintf(&b, "session %q title %q workspace %q tags %v parent %q source %+v stat %v unreported %s\n", s.Path, m.Title, m.Workspace, m.Tags, parent, s, stat, unreported)
		evs, err := r.Log.Read(m.ID, 0, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			fmt.Fprintf(&b, "  %d %s %q %s %d/%d more=%v %s\n", e.Seq, e.Kind, e.Label, e.Time.UTC().Format("2006-01-02T15:04:05.000"), e.TokensIn, e.TokensOut, e.More, e.Body)
		}
		var out bytes.Buffer
		if x, err := r.ExportSource(m.ID, &out); err != nil || !x.Exact {
			t.Fatalf("export %s: %+v %v", s.Path, x, err)
		}
	}
	for _, p := range rep.Problems {
		fmt.Fprintf(&b, "problem %s:%d %s\n", p.File, p.Line, p.Reason)
	}
	fmt.Fprintf(&b, "files %d new %d grown %d unchanged %d rewritten %d failed %d lines %d events %d bytes %d unparsed %d\n",
		len(rep.Files), rep.Sessions, rep.Grown, rep.Unchanged, rep.Rewritten, rep.Failed, rep.Lines, rep.Events, rep.BytesIn, rep.Unparsed)
	return b.String()
}

// streamSources is a tree of source files with every shape a chunk
// boundary could fall in: subagents, file backups, lines that do not
// parse (first, last, truncated), lines without a time first, runs of
// notes, message groups.
func streamSources(t *testing.T, fsys vfs.FS) string {
	t.Helper()
	root := "/home/u/.claude/projects"
	var all []string
	for turn := 1; turn <= 3; turn++ {
		all = append(all, claudeLines("s1", turn)...)
	}
	progress := `{"type":"progress","data":{"type":"hook_progress"},"timestamp":"2026-02-10T21:09:00.000Z","sessionId":"s1"}`
	for range 7 {
		all = append(all, progress)
	}
	all = append(all, claudeLines("s1", 4)...)
	writeSource(t, fsys, filepath.Join(root, "-home-u-proj", "s1.jsonl"), all, `{"type":"user","mess`)
	writeSource(t, fsys, filepath.Join(root, "-home-u-proj", "s1", "subagents", "agent-a1.jsonl"), claudeLines("s1", 5), "")
	// No time and no entry first: the session and its first times wait.
	late := append([]string{"not json", `{"type":"summary","summary":"the summary comes first"}`, `{"type":"progress","data":{"type":"x"}}`}, claudeLines("s2", 1)...)
	writeSource(t, fsys, filepath.Join(root, "-home-u-other", "s2.jsonl"), late, "")
	writeSource(t, fsys, filepath.Join(root, "-home-u-other", "junk.jsonl"), []string{"no", "transcript", "here"}, "")
	backups := filepath.Join("/home/u/.claude", "file-history", "s3")
	if err := fsys.MkdirAll(backups, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := fsys.WriteFileAtomic(filepath.Join(backups, "h1@v1"), []byte("before\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	snap := `{"type":"file-history-snapshot","messageId":"m2","snapshot":{"messageId":"m2","trackedFileBackups":{"a.txt":{"backupFileName":"h1@v1","version":1,"backupTime":"2026-02-10T21:01:09.000Z"}},"timestamp":"2026-02-10T21:01:09.000Z"},"isSnapshotUpdate":true}`
	writeSource(t, fsys, filepath.Join(root, "-home-u-proj", "s3.jsonl"), append(claudeLines("s3", 1), snap), "")
	// A snapshot before any line that says the working directory: the
	// session waits for it, or the capture would have no workspace.
	writeSource(t, fsys, filepath.Join(root, "-home-u-proj", "s3b.jsonl"), append([]string{strings.Replace(snap, `"isSnapshotUpdate":true`, `"isSnapshotUpdate":false`, 1)}, claudeLines("s3", 2)...), "")
	// The title far into the file, after lines that say the directory.
	var late2 []string
	for range 5 {
		late2 = append(late2, `{"type":"progress","data":{"type":"hook_progress"},"cwd":"/w","timestamp":"2026-02-10T21:09:00.000Z","sessionId":"s4"}`)
	}
	writeSource(t, fsys, filepath.Join(root, "-home-u-proj", "s4.jsonl"), append(late2, claudeLines("s4", 1)...), "")
	// CRLF line ends, and a last line complete but without its newline.
	writeSource(t, fsys, filepath.Join(root, "-home-u-proj", "s5.jsonl"), []string{strings.Join(claudeLines("s5", 1), "\r\n")}, strings.Join(claudeLines("s5", 2), "\n"))
	return root
}

// A file taken in chunk by chunk makes the very sessions and events it
// makes read whole, whatever the chunk size: the same metadata, the same
// events with the same bodies, the same problems at the same lines.
func TestChunkedImportIsTheSame(t *testing.T) {
	dump := func(chunk int) string {
		fsys := vfs.NewMem()
		r := testRook(t, fsys)
		root := streamSources(t, fsys)
		rep, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{root}, ChunkBytes: chunk})
		if err != nil {
			t.Fatal(err)
		}
		return importDump(t, r, rep)
	}
	whole := dump(0)
	if !strings.Contains(whole, "problem /home/u/.claude/projects/-home-u-other/junk.jsonl:0 no line of it is a claude-code entry") {
		t.Fatalf("the fixture lacks a file that is no transcript:\n%s", whole)
	}
	for _, chunk := range []int{1, 7, 100, 1000, 5000} {
		if got := dump(chunk); got != whole {
			t.Fatalf("chunks of %d bytes:\n%s\nread whole:\n%s", chunk, got, whole)
		}
	}
}

// The same for a file that grows between imports, a cut-short last line
// completed by the next import, and a file rewritten: each import in
// chunks matches each import of the file read whole.
func TestChunkedReimportIsTheSame(t *testing.T) {
	src := "/src/p/s.jsonl"
	steps := []struct {
		lines []string
		tail  string
	}{
		{claudeLines("s", 1), `{"type":"user","message":{"role":"us`},
		{claudeLines("s", 1), `{"type":"user","message":{"role":"user","cont`}, // grown, still cut
		{append(claudeLines("s", 1), `{"type":"user","message":{"role":"user","content":"done"}}`), ""},
		{append(append(claudeLines("s", 1), `{"type":"user","message":{"role":"user","content":"done"}}`), claudeLines("s", 2)...), ""},
		{claudeLines("s", 3), ""}, // rewritten
	}
	dump := func(chunk int) []string {
		fsys := vfs.NewMem()
		r := testRook(t, fsys)
		var out []string
		for _, s := range steps {
			writeSource(t, fsys, src, s.lines, s.tail)
			rep, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{src}, ChunkBytes: chunk})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, importDump(t, r, rep))
		}
		return out
	}
	whole := dump(0)
	for _, chunk := range []int{1, 50, 400} {
		for i, got := range dump(chunk) {
			if got != whole[i] {
				t.Fatalf("step %d, chunks of %d bytes:\n%s\nread whole:\n%s", i+1, chunk, got, whole[i])
			}
		}
	}
}

// Codex rollouts, plain and .zst (decompressed as it is read), the same.
func TestChunkedCodexImportIsTheSame(t *testing.T) {
	dump := func(chunk int) string {
		fsys := vfs.NewMem()
		r := testRook(t, fsys)
		for _, f := range []string{codexMainFile, codexMainFile + ".zst", codexSubFile} {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			dir := "/codex/plain"
			if strings.HasSuffix(f, ".zst") {
				dir = "/codex/zst"
			}
			if err := fsys.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := fsys.WriteFileAtomic(filepath.Join(dir, filepath.Base(f)), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		// A subagent rollout whose session_meta is not its first line: its
		// tags and parent come from the whole file either way.
		b, err := os.ReadFile(codexSubFile)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		lines[0], lines[1] = lines[1], lines[0]
		writeSource(t, fsys, "/codex/late/"+filepath.Base(codexSubFile), lines, "")
		rep, err := r.Import(ImportOptions{Format: FormatCodex, Paths: []string{"/codex"}, ChunkBytes: chunk})
		if err != nil {
			t.Fatal(err)
		}
		return importDump(t, r, rep)
	}
	whole := dump(0)
	for _, chunk := range []int{1, 300, 4000} {
		if got := dump(chunk); got != whole {
			t.Fatalf("chunks of %d bytes:\n%s\nread whole:\n%s", chunk, got, whole)
		}
	}
}

// The real transcripts of the corpus, in chunks of 64 KiB, make what they
// make read whole.
func TestChunkedCorpusImportIsTheSame(t *testing.T) {
	if _, err := os.Stat(corpusDir); err != nil {
		t.Skipf("no corpus at %s: %v", corpusDir, err)
	}
	dump := func(chunk int) string {
		r := diskRook(t, filepath.Join(t.TempDir(), "store"))
		rep, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{corpusDir}, ChunkBytes: chunk})
		if err != nil {
			t.Fatal(err)
		}
		return importDump(t, r, rep)
	}
	if whole, got := dump(0), dump(64<<10); got != whole {
		t.Fatalf("chunks of 64 KiB differ from files read whole")
	}
}

// A file that changes while it is imported: grown again once the bytes its
// session holds are read, it is taken in to its new end; rewritten when
// the import opens it, it is a new session. Either way the session the
// report names holds the file as it was read, byte for byte, and the next
// import finds it unchanged. (The file is read once: the bytes its session
// holds are checked, and the pass that takes it in goes on from there, with
// a kept state, or reads it again from its start, with none.)
func TestChunkedImportOfAFileChangingUnderIt(t *testing.T) {
	src := "/src/p/c.jsonl"
	a := claudeLines("c", 1)
	ab := append(claudeLines("c", 1), claudeLines("c", 2)...)
	for _, tc := range []struct {
		name   string
		atRead bool // changed once the bytes the session holds are read, else when opened
		then   []string
		status string
	}{
		{"grown", true, append(ab, claudeLines("c", 3)...), ImportGrown},
		{"rewritten", false, append(claudeLines("c", 7), claudeLines("c", 8)...), ImportRewritten},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := vfs.NewMem()
			r := testRook(t, fsys)
			writeSource(t, fsys, src, a, "")
			mustImportChunked(t, r, src)
			writeSource(t, fsys, src, ab, "")
			opens, reads := 0, 0
			fsys.SetHook(func(op vfs.Op, path string) error {
				if path != src {
					return nil
				}
				if op == vfs.OpOpenRead {
					opens++
				}
				change := opens == 2 && op == vfs.OpOpenRead && !tc.atRead // readHead, then the import's read
				if op == vfs.OpRead && opens >= 2 {
					// The bytes the session holds, one past them, then on.
					reads++
					change = reads == 3 && tc.atRead
				}
				switch {
				case change && tc.atRead:
					// Written on, in place, as its agent does: what
					// reads it sees the new lines.
					fsys.SetHook(nil)
					w, err := fsys.OpenFile(src, os.O_WRONLY|os.O_APPEND, 0)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := w.Write(writeSourceBytes(tc.then[len(ab):], "")); err != nil {
						t.Fatal(err)
					}
					w.Close()
				case change:
					fsys.SetHook(nil)
					writeSource(t, fsys, src, tc.then, "")
				}
				return nil
			})
			rep := mustImportChunked(t, r, src)
			fsys.SetHook(nil)
			f := rep.Files[0]
			if f.Status != tc.status || opens < 2 {
				t.Fatalf("status %s, note %q, %d opens; want %s", f.Status, f.Note, opens, tc.status)
			}
			mustExport(t, r, *f.Session, []byte(strings.Join(tc.then, "\n")+"\n"))
			if again := mustImportChunked(t, r, src); again.Unchanged != 1 {
				t.Fatalf("the next import: %+v", again.Files[0])
			}
		})
	}
}

// A read error half way through a file: the lines before it stay in its
// session (said in the report), and the next import takes in the rest,
// ending where a file read whole ends; an error before any line was taken
// in leaves no session.
func TestChunkedImportReadError(t *testing.T) {
	src := "/src/p/e.jsonl"
	lines := append(claudeLines("e", 1), claudeLines("e", 2)...)
	for _, failAfter := range []int{0, 10} {
		t.Run(fmt.Sprintf("after %d reads", failAfter), func(t *testing.T) {
			fsys := vfs.NewMem()
			r := testRook(t, fsys)
			data := writeSource(t, fsys, src, lines, "")
			opens, reads := 0, 0
			fsys.SetHook(func(op vfs.Op, path string) error {
				if op == vfs.OpOpenRead && path == src {
					opens++
				}
				if op == vfs.OpRead && path == src && opens == 2 { // the pass after readHead
					if reads++; reads > failAfter {
						return vfs.ErrInjected
					}
				}
				return nil
			})
			rep := mustImportChunked(t, r, src)
			fsys.SetHook(nil)
			f := rep.Files[0]
			if f.Status != ImportFailed {
				t.Fatalf("status %s", f.Status)
			}
			ids, _ := r.Log.IDs()
			switch {
			case f.Lines == 0 && (f.Session != nil || len(ids) != 0):
				t.Fatalf("failed before any line: session %v, %d sessions left", f.Session, len(ids))
			case f.Lines > 0 && !strings.Contains(f.Note, "line(s) before are in session"):
				t.Fatalf("failed after %d lines, note %q", f.Lines, f.Note)
			case (failAfter > 0) != (f.Lines > 0):
				t.Fatalf("failing after %d reads took in %d lines: the test proves nothing", failAfter, f.Lines)
			}
			again := mustImportChunked(t, r, src)
			mustExport(t, r, *sessionIDOf(t, r, src), data)
			whole := testRook(t, vfs.NewMem())
			writeSource(t, whole.fs, src, lines, "")
			mustImport(t, whole, FormatClaudeCode, src)
			if got, want := sessionOf(t, r, src), sessionOf(t, whole, src); got != want {
				t.Fatalf("after %+v:\n%s\nread whole:\n%s", again.Files[0], got, want)
			}
		})
	}
}

// A .zst whose last frame is cut short (Codex, or a copy, still writing
// it) may read on the next time, as a file whose read failed may: the
// lines before the cut are in its session, exported byte for byte, but a
// message's lines the cut fell among wait (its event group is not closed
// as at the file's end), so once the file is whole its session is the one
// a file read whole makes. Imported again still cut, it adds nothing. Read
// whole or in chunks, the cut after a message's first line or not.
func TestImportOfAZstCutInItsLastFrameLeavesTheMessageOpen(t *testing.T) {
	lines := append(claudeLines("e", 1), claudeLines("e", 2)...)
	plain := []byte(strings.Join(lines, "\n") + "\n")
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	var frames [][]byte // a frame a line
	for _, l := range bytes.SplitAfter(plain, []byte{'\n'}) {
		if len(l) > 0 {
			frames = append(frames, enc.EncodeAll(l, nil))
		}
	}
	src := "/src/p/e.jsonl.zst"
	whole := testRook(t, vfs.NewMem())
	writeSourceFile(t, whole.fs, src, bytes.Join(frames, nil))
	mustImport(t, whole, FormatClaudeCode, src)
	want := sessionOf(t, whole, src)
	for _, k := range []int{2, 5, 10} {
		for _, chunk := range []int{0, 64} {
			t.Run(fmt.Sprintf("cut in line %d, chunks of %d", k+1, chunk), func(t *testing.T) {
				fsys := vfs.NewMem()
				r := testRook(t, fsys)
				cut := bytes.Join(frames[:k+1], nil)
				writeSourceFile(t, fsys, src, cut[:len(cut)-len(frames[k])/2])
				imp := func() ImportedFile {
					rep, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{src}, ChunkBytes: chunk})
					if err != nil {
						t.Fatal(err)
					}
					return fileByPath(t, rep, src)
				}
				f := imp()
				if f.Status != ImportFailed || f.Session == nil || !strings.Contains(f.Note, "cut short in the middle of a zstd frame") {
					t.Fatalf("cut: %+v", f)
				}
				var buf bytes.Buffer
				x, err := r.ExportSource(*f.Session, &buf)
				if err != nil || x.Lines != f.Lines || !bytes.HasPrefix(plain, buf.Bytes()) {
					t.Fatalf("the report says %d line(s), the session holds %d (%v)", f.Lines, x.Lines, err)
				}
				if again := imp(); again.Status != ImportFailed || again.Lines != 0 {
					t.Fatalf("imported again, still cut: %+v", again)
				}
				before := bytes.Clone(buf.Bytes())
				buf.Reset()
				if _, err := r.ExportSource(*f.Session, &buf); err != nil || !bytes.Equal(buf.Bytes(), before) {
					t.Fatalf("imported again, still cut, the session holds %q (%v)", buf.Bytes(), err)
				}
				writeSourceFile(t, fsys, src, bytes.Join(frames, nil))
				if g := imp(); g.Status != ImportGrown || f.Lines+g.Lines != len(lines) {
					t.Fatalf("whole: %+v after %d line(s)", g, f.Lines)
				}
				mustExport(t, r, *f.Session, plain)
				if got := sessionOf(t, r, src); got != want {
					t.Fatalf("once whole:\n%s\nread whole:\n%s", got, want)
				}
			})
		}
	}
}

// Past holdBytes, a file that has shown no entry is failed as no
// transcript, and one that has shown no time goes on without one.
func TestChunkedImportHoldsBoundedly(t *testing.T) {
	defer func(n int64) { holdBytes = n }(holdBytes)
	holdBytes = 200
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	junk := []string{}
	for i := range 20 {
		junk = append(junk, fmt.Sprintf("junk line %d", i))
	}
	writeSource(t, fsys, "/src/p/j.jsonl", append(junk, claudeLines("j", 1)...), "")
	var untimed []string
	for range 10 {
		untimed = append(untimed, `{"type":"progress","data":{"type":"hook_progress"},"cwd":"/w","sessionId":"u"}`)
	}
	writeSource(t, fsys, "/src/p/u.jsonl", append(untimed, claudeLines("u", 1)...), "")
	rep, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{"/src/p"}, ChunkBytes: 64})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Files {
		switch filepath.Base(f.Path) {
		case "j.jsonl":
			if f.Status != ImportFailed || !strings.Contains(f.Note, "no line of its first 200 B is a claude-code entry") {
				t.Fatalf("junk first: %+v", f)
			}
		case "u.jsonl":
			if f.Status != ImportNew {
				t.Fatalf("no time first: %+v", f)
			}
			// Not held for the time of the first prompt, far past holdBytes.
			evs, err := r.Log.Read(*f.Session, 0, 1)
			if err != nil || len(evs) != 1 || evs[0].Time.Equal(time.Date(2026, 2, 10, 21, 1, 1, 0, time.UTC)) {
				t.Fatalf("the first event, before any time: %+v %v", evs, err)
			}
		}
	}
}

// A grown file fills in what its session's first import could not know
// (the title, here: the first prompt comes after the first import).
func TestGrownImportFillsInTheTitle(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	src := "/src/p/g.jsonl"
	first := []string{`{"type":"progress","data":{"type":"hook_progress"},"cwd":"/w","timestamp":"2026-02-10T21:09:00.000Z","sessionId":"g"}`}
	writeSource(t, fsys, src, first, "")
	mustImport(t, r, FormatClaudeCode, src)
	if m, _ := r.Log.ReadMeta(*sessionIDOf(t, r, src)); m.Title != "claude-code session g" {
		t.Fatalf("title before the prompt: %q", m.Title)
	}
	writeSource(t, fsys, src, append(first, claudeLines("g", 1)...), "")
	mustImport(t, r, FormatClaudeCode, src)
	if m, _ := r.Log.ReadMeta(*sessionIDOf(t, r, src)); m.Title != "fix the server, turn 1" {
		t.Fatalf("title after the prompt came: %q", m.Title)
	}
	// A title set by hand stays.
	m, _ := r.Log.ReadMeta(*sessionIDOf(t, r, src))
	m.Title = "mine"
	if err := r.Log.UpdateMeta(m); err != nil {
		t.Fatal(err)
	}
	writeSource(t, fsys, src, append(append(first, claudeLines("g", 1)...), claudeLines("g", 2)...), "")
	mustImport(t, r, FormatClaudeCode, src)
	if m, _ := r.Log.ReadMeta(*sessionIDOf(t, r, src)); m.Title != "mine" {
		t.Fatalf("a title set by hand became %q", m.Title)
	}
}

// A rename in the lines a file grew by retitles its session, over a title
// set by hand; lines that rename nothing leave the title as it is, and a
// file that did not change is not written again. Read whole, or a chunk
// at a time (the lines before the new ones over several chunks).
func TestGrownImportTakesARename(t *testing.T) {
	rename := func(name string) string {
		return `{"type":"custom-title","customTitle":` + string(appendJSONString(nil, []byte(name))) + `,"sessionId":"g"}`
	}
	for _, chunk := range []int{0, 100} {
		fsys := vfs.NewMem()
		r := testRook(t, fsys)
		src := "/src/p/g.jsonl"
		imp := func() ImportedFile {
			t.Helper()
			rep, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{src}, ChunkBytes: chunk})
			if err != nil {
				t.Fatal(err)
			}
			return fileByPath(t, rep, src)
		}
		title := func(want string) eventlog.Meta {
			t.Helper()
			m, err := r.Log.ReadMeta(*sessionIDOf(t, r, src))
			if err != nil || m.Title != want {
				t.Fatalf("chunk %d: title %q (%v), want %q", chunk, m.Title, err, want)
			}
			return m
		}
		lines := claudeLines("g", 1)
		grow := func(more ...string) {
			t.Helper()
			lines = append(lines, more...)
			writeSource(t, fsys, src, lines, "")
			if f := imp(); f.Status != ImportGrown {
				t.Fatalf("chunk %d: grown file imported as %+v", chunk, f)
			}
		}
		writeSource(t, fsys, src, lines, "")
		imp()
		title("fix the server, turn 1")
		grow(rename("  parser\nwork  "))
		title("parser")
		// Set by hand: stays while the file renames nothing.
		m := title("parser")
		m.Title = "mine"
		if err := r.Log.UpdateMeta(m); err != nil {
			t.Fatal(err)
		}
		grow(claudeLines("g", 2)...)
		title("mine")
		// An AI title is below the user's name: no rename.
		grow(`{"type":"ai-title","aiTitle":"Fix the server","sessionId":"g"}`)
		title("mine")
		grow(rename("the server fix"))
		before := title("the server fix")
		if f := imp(); f.Status != ImportUnchanged {
			t.Fatalf("chunk %d: unchanged file imported as %+v", chunk, f)
		}
		if after := title("the server fix"); !reflect.DeepEqual(before, after) {
			t.Fatalf("chunk %d: an unchanged file's import wrote its metadata again:\n%+v\n%+v", chunk, before, after)
		}
	}
}

func mustImportChunked(t *testing.T, r *Rook, paths ...string) ImportReport {
	t.Helper()
	rep, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: paths, ChunkBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// sessionIDOf is the session a file was last imported as.
func sessionIDOf(t *testing.T, r *Rook, path string) *eventlog.ID {
	t.Helper()
	m, _, err := r.importedSessions(FormatClaudeCode)
	if err != nil {
		t.Fatal(err)
	}
	s, ok := m[path]
	if !ok {
		t.Fatalf("no session of %s", path)
	}
	return &s.ID
}

// sessionOf is importDump's part for one file's session.
func sessionOf(t *testing.T, r *Rook, path string) string {
	t.Helper()
	d := importDump(t, r, ImportReport{})
	i := strings.Index(d, "session "+fmt.Sprintf("%q", path))
	if i < 0 {
		t.Fatalf("no session of %s in\n%s", path, d)
	}
	d = d[i:]
	if j := strings.Index(d[1:], "\nsession "); j >= 0 {
		d = d[:j+1]
	}
	return strings.Split(d, "\nproblem")[0]
}

// FuzzChunkedImport: any file, imported whole and in chunks of any size,
// makes the same sessions, events and problems; so does the same file
// grown by any tail, imported again.
func FuzzChunkedImport(f *testing.F) {
	f.Add([]byte(strings.Join(claudeLines("f", 1), "\n")+"\n"), []byte(strings.Join(claudeLines("f", 2), "\n")), uint16(100))
	f.Add([]byte("junk\n"+strings.Join(claudeLines("f", 1), "\r\n")), []byte("\n{\"type\":\"user\""), uint16(1))
	f.Add([]byte(`{"type":"progress","data":{"type":"x"},"cwd":"/w"}`+"\n"+`{"type":"summary","summary":"s"}`), []byte("\n\n"), uint16(7))
	// A new file whose only line is cut short (its agent writing it, or a
	// crash cut it): nothing to import yet, read whole or in chunks (read
	// in chunks, it failed as no transcript); then whole.
	f.Add([]byte(`{"type":"user","sessionId":"f","mess`), []byte(`age":{"role":"user","content":"hi"},"cwd":"/w","timestamp":"2026-02-10T21:00:01.000Z"}`+"\n"), uint16(4))
	// Only NUL bytes, or a byte order mark: nothing to import yet.
	f.Add([]byte("\x00\x00\x00\x00\x00\x00\x00\x00\x00"), []byte("\n"), uint16(2))
	f.Add([]byte("\xef\xbb\xbf"), []byte(strings.Join(claudeLines("f", 1), "\n")), uint16(1))
	f.Fuzz(func(t *testing.T, data, more []byte, chunk uint16) {
		if len(data)+len(more) > 1<<16 {
			return
		}
		src := "/src/p/f.jsonl"
		dump := func(chunk int) string {
			fsys := vfs.NewMem()
			r := testRook(t, fsys)
			if err := fsys.MkdirAll(filepath.Dir(src), 0o700); err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			for _, b := range [][]byte{data, append(append([]byte(nil), data...), more...)} {
				if err := fsys.WriteFileAtomic(src, b, 0o600); err != nil {
					t.Fatal(err)
				}
				rep, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{src}, ChunkBytes: chunk})
				if err != nil {
					t.Fatal(err)
				}
				out.WriteString(importDump(t, r, rep))
			}
			return out.String()
		}
		if whole, got := dump(0), dump(int(chunk%512)+1); got != whole {
			t.Fatalf("chunks of %d bytes:\n%s\nread whole:\n%s", int(chunk%512)+1, got, whole)
		}
	})
}

// A file read in chunks that grew is read once, from its start to its end:
// the read that checks the bytes its session holds goes on through what it
// grew by (it used to be hashed through, then read again).
func TestChunkedImportReadsAGrownFileOnce(t *testing.T) {
	setImportStateMin(t, 0)
	src := "/src/p/o.jsonl"
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	var lines []string
	for turn := 1; turn <= 4; turn++ {
		lines = append(lines, claudeLines("o", turn)...)
		writeSource(t, fsys, src, lines, "")
		opens := 0
		fsys.SetHook(func(op vfs.Op, path string) error {
			if op == vfs.OpOpenRead && path == src {
				opens++
			}
			return nil
		})
		f := mustImportChunked(t, r, src).Files[0]
		fsys.SetHook(nil)
		// Its first MiB, to tell its format, then the file, once its
		// import state is kept (with none, the lines are mapped again
		// from the start, a read of their own).
		if turn > 2 && (f.Status != ImportGrown || opens != 2) {
			t.Fatalf("turn %d: %s, opened %d times, want grown and 2", turn, f.Status, opens)
		}
	}
	mustExport(t, r, *sessionIDOf(t, r, src), writeSourceBytes(lines, ""))
}

// `rook export` of a session whose transcript holds one huge line wrote it
// put together whole: the line's strings read whole (Get: two to three
// times a string's size) and the line joined in a buffer of its own, on
// top (a 100 MB line: 410 MB at the peak). Export streams each string
// from its object, escaped as it goes (writeLine): a line of 32 MiB
// allocates a small part of itself, and is written byte for byte.
func TestExportSourceOfAHugeLineHoldsLittle(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	env := `"sessionId":"S","cwd":"/home/u/proj","version":"2.1.38"`
	out := bytes.Repeat([]byte("a line of a tool's output, \"quoted\"\tand tabbed\n"), 32<<20/48)
	lines := []string{
		fmt.Sprintf(`{"type":"user","uuid":"u1","parentUuid":null,%s,"timestamp":"2026-02-10T21:00:00.000Z","message":{"role":"user","content":"run it"}}`, env),
		fmt.Sprintf(`{"type":"user","uuid":"u2","parentUuid":"u1",%s,"timestamp":"2026-02-10T21:00:02.000Z","message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":%s}]}}`, env, appendJSONString(nil, out)),
		fmt.Sprintf(`{"type":"user","uuid":"u3","parentUuid":"u2",%s,"timestamp":"2026-02-10T21:00:03.000Z","message":{"role":"user","content":"thanks"}}`, env),
	}
	path := "/p/-home-u-proj/S.jsonl"
	data := writeSource(t, fsys, path, lines, "")
	id := *fileByPath(t, mustImport(t, r, FormatClaudeCode, path), path).Session
	if err := r.Store.Sync(); err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	x, err := r.ExportSource(id, h)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(data); x.Bytes != int64(len(data)) || !x.Exact || x.Lines != 3 || !bytes.Equal(h.Sum(nil), sum[:]) {
		t.Fatalf("export: %+v: want the %d bytes imported, 3 lines", x, len(data))
	}
	n := after.TotalAlloc - before.TotalAlloc
	t.Logf("the export of a line of %d bytes allocated %d bytes", len(out), n)
	if n > uint64(len(out))/4 {
		t.Fatalf("the export of a line of %d bytes allocated %d bytes: the line was put together whole", len(out), n)
	}
}
