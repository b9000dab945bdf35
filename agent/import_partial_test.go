package agent

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/clock"
	"github.com/rookhq/rook/internal/vfs"
	"github.com/rookhq/rook/internal/vfs/vfstest"
)

// growingLineFile is a transcript whose last line, a tool result with a
// long output, is being written: head, its whole lines before, and the
// line (with its newline); whole is the file once written, a line after.
func growingLineFile() (head, line, whole []byte) {
	turn2 := claudeLines("g", 2)
	head = writeSourceBytes(append(claudeLines("g", 1), turn2[:6]...), "")
	line = []byte(turn2[6] + "\n")
	whole = writeSourceBytes(append(claudeLines("g", 1), turn2...), "")
	return head, line, whole
}

// writeAt writes a file in fsys and sets clk to after: how long after the
// file's modification time the next import's walk begins.
func writeAt(t *testing.T, fsys *vfs.MemFS, clk *clock.Fixed, path string, data []byte, after time.Duration) {
	t.Helper()
	if err := fsys.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := fsys.WriteFileAtomic(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	fi, err := fsys.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	clk.T = fi.ModTime().Add(after)
}

// clockedRook is a store in fsys whose clock the test sets.
func clockedRook(t *testing.T, fsys *vfs.MemFS) (*Rook, *clock.Fixed) {
	t.Helper()
	clk := &clock.Fixed{T: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	if _, err := cas.Init(fsys, clk, testHome); err != nil {
		t.Fatal(err)
	}
	r, err := Open(testHome, Options{FS: fsys, Clock: clk, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, clk
}

// TestImportLeavesALineBeingWritten: a last line cut short in a file that
// changed moments ago (its agent writing a big tool result) is left for
// the next import, which takes it once whole: stored once, its strings
// cut out, not again at every import while it grows. What the session
// holds meanwhile exports byte for byte, read whole or in chunks.
func TestImportLeavesALineBeingWritten(t *testing.T) {
	head, line, whole := growingLineFile()
	src := "/src/p/g.jsonl"
	for _, chunk := range []int{0, 200} {
		t.Run(fmt.Sprint("chunks of ", chunk), func(t *testing.T) {
			// The whole file imported at once: the events to end with.
			ref, refClk := clockedRook(t, vfs.NewMem())
			writeAt(t, ref.fs.(*vfs.MemFS), refClk, src, whole, time.Second)
			want, err := ref.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{src}, ChunkBytes: chunk})
			if err != nil {
				t.Fatal(err)
			}
			wantSum, _ := ref.Log.Summary(*fileByPath(t, want, src).Session)

			fsys := vfs.NewMem()
			r, clk := clockedRook(t, fsys)
			var id eventlog.ID
			for i, cut := range []int{len(line) / 4, len(line) / 2, len(line) - 2} {
				writeAt(t, fsys, clk, src, append(bytes.Clone(head), line[:cut]...), time.Second)
				rep, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{src}, ChunkBytes: chunk})
				if err != nil {
					t.Fatal(err)
				}
				f := fileByPath(t, rep, src)
				if f.Session == nil || f.Unparsed != 0 || !strings.Contains(f.Note, "last line is still being written") {
					t.Fatalf("import %d: %+v", i, f)
				}
				if i > 0 && f.Status != ImportUnchanged {
					t.Fatalf("import %d: grown only within the line: %+v", i, f)
				}
				id = *f.Session
				mustExport(t, r, id, head)
				m, _ := r.Log.ReadMeta(id)
				if m.Source.Size != int64(len(head)) || m.Source.Stat != nil {
					t.Fatalf("import %d: the session holds %d bytes (stat %+v), want %d", i, m.Source.Size, m.Source.Stat, len(head))
				}
			}
			writeAt(t, fsys, clk, src, whole, time.Second)
			rep, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{src}, ChunkBytes: chunk})
			if err != nil {
				t.Fatal(err)
			}
			if f := fileByPath(t, rep, src); f.Status != ImportGrown || f.Note != "" || f.Unparsed != 0 {
				t.Fatalf("finished: %+v", f)
			}
			mustExport(t, r, id, whole)
			s, err := r.Log.Summary(id)
			if err != nil || s.Events != wantSum.Events || s.TokensIn != wantSum.TokensIn || s.TokensOut != wantSum.TokensOut {
				t.Fatalf("imported while its last line grew: %+v, at once: %+v (%v)", s, wantSum, err)
			}
		})
	}
}

// TestImportTakesAQuietCutLine: a file whose last line is cut short and
// that has not changed for statQuiet (a crash cut it, or its agent
// stopped) has the line taken in, kept byte for byte, as before; so does
// a file's first line, being written, once quiet.
func TestImportTakesAQuietCutLine(t *testing.T) {
	head, line, _ := growingLineFile()
	src := "/src/p/g.jsonl"
	for _, chunk := range []int{0, 200} {
		t.Run(fmt.Sprint("chunks of ", chunk), func(t *testing.T) {
			fsys := vfs.NewMem()
			r, clk := clockedRook(t, fsys)
			cut := append(bytes.Clone(head), line[:len(line)/2]...)
			writeAt(t, fsys, clk, src, cut, statQuiet)
			rep, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{src}, ChunkBytes: chunk})
			if err != nil {
				t.Fatal(err)
			}
			f := fileByPath(t, rep, src)
			if f.Session == nil || f.Unparsed != 1 || f.Note != "" {
				t.Fatalf("%+v", f)
			}
			mustExport(t, r, *f.Session, cut)

			// A new file of one line being written: nothing yet.
			first := "/src/p/h.jsonl"
			writeAt(t, fsys, clk, first, line[:len(line)/2], time.Second)
			rep, err = r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{first}, ChunkBytes: chunk})
			if err != nil {
				t.Fatal(err)
			}
			if f := fileByPath(t, rep, first); f.Session != nil || f.Status != ImportUnchanged || !strings.Contains(f.Note, "first line is still being written") {
				t.Fatalf("a first line being written: %+v", f)
			}
		})
	}
}

// README: a last line cut short "because the agent is still writing it
// (the file changed within 3 s) is left for the next import ...; in a file
// quiet for longer, it is kept as it was read". A transcript whose
// modification time is in the future (copied from a machine whose clock
// ran ahead, unpacked from an archive, or the clock stepped back since)
// did not change within 3 s: its cut line is a crash's, taken in now, as
// for a file dated an hour ago, not left "still being written (changed
// moments ago)" at every import until the clock reaches that time.
func TestImportTakesInTheCutLastLineOfAFileDatedInTheFuture(t *testing.T) {
	data := writeSourceBytes(claudeLines("s", 1), `{"type":"user","message":{"role":"user","content":"cut sh`)
	imported := func(mtime time.Time) (ImportedFile, uint64) {
		t.Helper()
		dir := t.TempDir()
		src := filepath.Join(dir, "src", "p", "s.jsonl")
		writeAged(t, src, data)
		if err := os.Chtimes(src, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		r := diskRook(t, filepath.Join(dir, "home"))
		f := mustImport(t, r, FormatClaudeCode, src).Files[0]
		if f.Session == nil {
			t.Fatalf("no session: %+v", f)
		}
		s, err := r.Log.Summary(*f.Session)
		if err != nil {
			t.Fatal(err)
		}
		return f, s.Events
	}
	_, aged := imported(time.Now().Add(-time.Hour)) // the baseline: a crash's line, taken in
	f, future := imported(time.Now().Add(365 * 24 * time.Hour))
	if future != aged || strings.Contains(f.Note, "still being written") {
		t.Fatalf("a file dated a year ahead: %d events (an hour-old one: %d), note %q", future, aged, f.Note)
	}
}

// TestImportLineBeingWrittenCrashSweep: the import of a file grown by
// whole lines and a line being written, crashed at every write. The next
// imports, the line being written still and then whole, bring the session
// to the file, exported byte for byte, with the events of an import that
// did not crash. Each with the import state kept (the sweep's import keeps
// the state after the lines before the one being written) and without.
func TestImportLineBeingWrittenCrashSweep(t *testing.T) {
	head, line, whole := growingLineFile()
	mid := bytes.IndexByte(head[len(head)/2:], '\n') + len(head)/2 + 1 // a line end half way
	src := "/src/g.jsonl"
	for _, tc := range []struct {
		chunk int
		keep  bool
	}{{0, false}, {300, false}, {0, true}, {300, true}} {
		chunk := tc.chunk
		t.Run(fmt.Sprintf("chunks of %d, state kept %v", chunk, tc.keep), func(t *testing.T) {
			if tc.keep {
				setImportStateMin(t, 0)
			}
			clk := &clock.Fixed{}
			importAll := func(fsys vfs.FS) error {
				r, err := Open(crashHome, Options{FS: fsys, Clock: clk, Writable: true})
				if err != nil {
					return err
				}
				_, err = r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{"/src"}, ChunkBytes: chunk})
				if cerr := r.Close(); err == nil {
					err = cerr
				}
				return err
			}
			setup := func(fsys *vfs.MemFS) {
				initCrashStore(fsys)
				writeAt(t, fsys, clk, src, head[:mid], statQuiet)
				if err := importAll(fsys); err != nil {
					panic(err)
				}
				writeAt(t, fsys, clk, src, append(bytes.Clone(head), line[:len(line)/3]...), time.Second)
			}
			// finish: the line grown, then whole, each imported.
			finish := func(fsys *vfs.MemFS) (uint64, error) {
				writeAt(t, fsys, clk, src, append(bytes.Clone(head), line[:len(line)/2]...), time.Second)
				if err := importAll(fsys); err != nil {
					return 0, err
				}
				writeAt(t, fsys, clk, src, whole, time.Second)
				if err := importAll(fsys); err != nil {
					return 0, err
				}
				r, err := Open(crashHome, Options{FS: fsys, Clock: clk})
				if err != nil {
					return 0, err
				}
				defer r.Close()
				ids, err := r.Log.IDs()
				if err != nil || len(ids) != 1 {
					return 0, fmt.Errorf("sessions %v %v", ids, err)
				}
				var buf bytes.Buffer
				if x, err := r.ExportSource(ids[0], &buf); err != nil || !x.Exact || !bytes.Equal(buf.Bytes(), whole) {
					return 0, fmt.Errorf("export %+v %v", x, err)
				}
				s, err := r.Log.Summary(ids[0])
				return s.Events, err
			}
			ref := vfs.NewMem()
			setup(ref)
			if err := importAll(ref); err != nil {
				t.Fatal(err)
			}
			want, err := finish(ref)
			if err != nil {
				t.Fatal(err)
			}
			vfstest.Sweep(t, rand.New(rand.NewPCG(7, 8)), 2, setup, func(fsys *vfs.MemFS) error { return importAll(fsys) },
				func(k int, states []*vfs.MemFS) {
					for _, s := range states {
						verifyCrashState(t, fmt.Sprintf("crash at write %d", k), s, clk)
						if got, err := finish(s); err != nil || got != want {
							t.Fatalf("crash at write %d: %d events (%v), want %d", k, got, err, want)
						}
					}
				})
		})
	}
}

// TestImportStateKeptUpToALineBeingWritten: a session that grows with a
// half-written line at the end of its file at each import keeps its
// mapper's state after the lines before that line, so the next import
// maps only what the file grew by, not the session from its start. The
// line cut each time is a tool result whose label comes from the state
// (the tool its call named, lines before): the events at the end are
// those of the whole file imported at once.
func TestImportStateKeptUpToALineBeingWritten(t *testing.T) {
	setImportStateMin(t, 0)
	src := "/src/p/k.jsonl"
	var turns [][]string
	for turn := 1; turn <= 5; turn++ {
		turns = append(turns, claudeLines("k", turn))
	}
	upTo := func(n int) []string { // the lines of the first n turns
		var lines []string
		for _, l := range turns[:n] {
			lines = append(lines, l...)
		}
		return lines
	}
	whole := writeSourceBytes(upTo(len(turns)), "")
	label := func(e eventlog.Event) string {
		return fmt.Sprintf("%s/%s/%d/%d", e.Kind, e.Label, e.TokensIn, e.TokensOut)
	}
	for _, chunk := range []int{0, 200} {
		t.Run(fmt.Sprint("chunks of ", chunk), func(t *testing.T) {
			ref, refClk := clockedRook(t, vfs.NewMem())
			writeAt(t, ref.fs.(*vfs.MemFS), refClk, src, whole, time.Second)
			want, err := ref.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{src}, ChunkBytes: chunk})
			if err != nil {
				t.Fatal(err)
			}
			wantEvents := eventsAs(t, ref, *fileByPath(t, want, src).Session, label)

			fsys := vfs.NewMem()
			r, clk := clockedRook(t, fsys)
			var id eventlog.ID
			for n := 1; n < len(turns); n++ {
				// The turns so far, the next one's lines up to its tool
				// result, and half of that line.
				next := turns[n]
				lines := append(upTo(n), next[:6]...)
				data := writeSourceBytes(lines, next[6][:len(next[6])/2])
				writeAt(t, fsys, clk, src, data, time.Second)
				rep, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{src}, ChunkBytes: chunk})
				if err != nil {
					t.Fatal(err)
				}
				f := fileByPath(t, rep, src)
				if f.Session == nil || !strings.Contains(f.Note, "last line is still being written") {
					t.Fatalf("import %d: %+v", n, f)
				}
				id = *f.Session
				mustExport(t, r, id, writeSourceBytes(lines, ""))
				// Seen growing from the second import on: the state is
				// the one after the bytes the session holds.
				if n > 1 && !stateUsable(t, r, FormatClaudeCode, src) {
					t.Fatalf("import %d, grown with a line being written: no import state the next import can start from", n)
				}
			}
			writeAt(t, fsys, clk, src, whole, time.Second)
			rep, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{src}, ChunkBytes: chunk})
			if err != nil {
				t.Fatal(err)
			}
			if f := fileByPath(t, rep, src); f.Status != ImportGrown || f.Note != "" || f.Unparsed != 0 {
				t.Fatalf("finished: %+v", f)
			}
			mustExport(t, r, id, whole)
			if got := eventsAs(t, r, id, label); got != wantEvents {
				t.Fatalf("imported while it grew:\n%s\nat once:\n%s", got, wantEvents)
			}
		})
	}
}

// A last line taken in whole without its newline (quiet, it parsed) that
// its writer then went on with is said, when it is no JSON any more, as a
// line imported whole would be: at its own line, counted. The rest stays
// a note, exported byte for byte. A rest still without its newline is a
// truncated last line, said so. Blanks and a newline added are no
// problem. In chunks, and from an import state kept.
func TestImportSaysALineThatWentOnIntoNoJSON(t *testing.T) {
	head, line, _ := growingLineFile()
	src := "/src/p/g.jsonl"
	lineNo := bytes.Count(head, []byte{'\n'}) + 1
	cut := append(bytes.Clone(head), bytes.TrimSuffix(line, []byte{'\n'})...)
	for _, tc := range []struct {
		chunk int
		keep  bool
	}{{0, false}, {200, false}, {0, true}} {
		for _, more := range []string{"TRAILING-JUNK\n", "  \n", "JUNK"} {
			t.Run(fmt.Sprintf("chunks of %d, state kept %v, %q", tc.chunk, tc.keep, more), func(t *testing.T) {
				if tc.keep {
					setImportStateMin(t, 0)
				}
				fsys := vfs.NewMem()
				r, clk := clockedRook(t, fsys)
				writeAt(t, fsys, clk, src, cut, statQuiet)
				rep, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{src}, ChunkBytes: tc.chunk})
				if err != nil {
					t.Fatal(err)
				}
				if f := fileByPath(t, rep, src); f.Session == nil || f.Unparsed != 0 {
					t.Fatalf("the cut line, which parses: %+v", f)
				}
				grown := append(bytes.Clone(cut), more...)
				writeAt(t, fsys, clk, src, grown, statQuiet)
				rep, err = r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{src}, ChunkBytes: tc.chunk})
				if err != nil {
					t.Fatal(err)
				}
				f := fileByPath(t, rep, src)
				if f.Status != ImportGrown {
					t.Fatalf("grown: %+v", f)
				}
				if more == "JUNK" {
					// Still without its newline: a truncated last line,
					// counted and said at its line (as one imported whole
					// would be), kept byte for byte; said again, once, as
					// no JSON once the line has its newline.
					if f.Unparsed != 1 || len(rep.Problems) != 1 || rep.Problems[0].Line != lineNo ||
						!strings.HasPrefix(rep.Problems[0].Reason, truncatedLine+"not JSON once it went on (its first") {
						t.Fatalf("a rest without its newline: %+v %+v", f, rep.Problems)
					}
					mustExport(t, r, *f.Session, grown)
					grown = append(grown, "MORE\n"...)
					writeAt(t, fsys, clk, src, grown, statQuiet)
					if rep, err = r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{src}, ChunkBytes: tc.chunk}); err != nil {
						t.Fatal(err)
					}
					f = fileByPath(t, rep, src)
				}
				if more[0] == ' ' {
					if f.Unparsed != 0 || len(rep.Problems) != 0 {
						t.Fatalf("blanks and a newline: %+v %+v", f, rep.Problems)
					}
				} else if f.Unparsed != 1 || len(rep.Problems) != 1 || rep.Problems[0].Line != lineNo ||
					!strings.HasPrefix(rep.Problems[0].Reason, "not JSON once it went on (its first") {
					t.Fatalf("line %d gone on into no JSON: %+v %+v", lineNo, f, rep.Problems)
				}
				mustExport(t, r, *f.Session, grown)
			})
		}
	}
}

// A first line read past a byte order mark or a crash's NULs (entryBytes),
// imported without its newline, then given it and a line after: no
// problem, as the file read whole has none.
func TestImportLineThatWentOnAfterFillerParses(t *testing.T) {
	head, _, _ := growingLineFile()
	first, rest, _ := bytes.Cut(head, []byte{'\n'})
	for _, filler := range []string{"\xef\xbb\xbf", "\x00\x00\x00"} {
		fsys := vfs.NewMem()
		r, clk := clockedRook(t, fsys)
		src := "/src/p/g.jsonl"
		cut := append([]byte(filler), first...)
		writeAt(t, fsys, clk, src, cut, statQuiet)
		if _, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{src}}); err != nil {
			t.Fatal(err)
		}
		grown := append(append(bytes.Clone(cut), '\n'), rest...)
		writeAt(t, fsys, clk, src, grown, statQuiet)
		rep, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{src}})
		if err != nil {
			t.Fatal(err)
		}
		if f := fileByPath(t, rep, src); f.Status != ImportGrown || f.Unparsed != 0 || len(rep.Problems) != 0 {
			t.Fatalf("%q before the first line: %+v %+v", filler, f, rep.Problems)
		}
	}
}
