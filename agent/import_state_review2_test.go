package agent

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// streamedDump is importDump, with what the file's import said of itself,
// the stat recorded (not its times: the file system's clock moves with the
// writes of either way), and what each session exports.
func streamedDump(t *testing.T, r *Rook, rep ImportReport) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(importDump(t, r, rep))
	for _, f := range rep.Files {
		fmt.Fprintf(&b, "file %s status %s note %q lines %d events %d bytes %d unparsed %d\n", f.Path, f.Status, f.Note, f.Lines, f.Events, f.BytesIn, f.Unparsed)
	}
	for _, m := range sessionMetas(t, r) {
		var out bytes.Buffer
		if _, err := r.ExportSource(m.ID, &out); err != nil {
			t.Fatal(err)
		}
		st := "nil"
		if m.Source.Stat != nil {
			st = fmt.Sprint(m.Source.Stat.Size)
		}
		fmt.Fprintf(&b, "export %s %d %x stat size %s\n", m.Source.Path, out.Len(), sha256.Sum256(out.Bytes()), st)
	}
	return b.String()
}

// sessionMetas is the metadata of every session of r.
func sessionMetas(t *testing.T, r *Rook) []eventlog.Meta {
	t.Helper()
	ids, err := r.Log.IDs()
	if err != nil {
		t.Fatal(err)
	}
	metas := make([]eventlog.Meta, 0, len(ids))
	for _, id := range ids {
		m, err := r.Log.ReadMeta(id)
		if err != nil {
			t.Fatal(err)
		}
		metas = append(metas, m)
	}
	return metas
}

// stateUsable says whether the import of src would start from a kept
// state: the state of src's session is the one after the bytes the
// session holds.
func stateUsable(t *testing.T, r *Rook, format, src string) bool {
	t.Helper()
	for _, m := range sessionMetas(t, r) {
		if m.Source == nil || m.Source.Path != src {
			continue
		}
		if _, ok := r.loadImportState(m.ID, format, src, MinCutString, m.Source.Size, m.Source.SHA256); ok {
			return true
		}
	}
	return false
}

// idsInNotes are the session ids in what an import says, which differ
// from run to run.
var idsInNotes = regexp.MustCompile(`\b[0-9A-Z]{26}\b`)

// streamedBothWays is importBothWays of src (in format) in chunks of
// chunk, with what streamedDump says of each import (ids masked); change,
// when not nil, is called at the pass that takes the file in. It also
// returns how many imports started from a state.
func streamedBothWays(t *testing.T, format, src string, chunk, steps int, step func(i int, fsys *vfs.MemFS), change func(i int, fsys *vfs.MemFS)) ([]string, int) {
	t.Helper()
	used := 0
	dumps := importBothWays(t, bothWays{format: format, src: src, chunk: chunk, steps: steps, step: step, change: change,
		before: func(keep bool, i int, r *Rook) {
			if keep && stateUsable(t, r, format, src) {
				used++
			}
		},
		dump: func(t *testing.T, r *Rook, rep ImportReport) string {
			return idsInNotes.ReplaceAllString(streamedDump(t, r, rep), "<id>")
		},
	})
	return dumps, used
}

// A Claude Code file read in chunks, growing with lines that do not
// parse, last lines without their newline (whole and cut short): each
// import from the kept state records what the import mapping the lines
// again records, problems at the same line numbers.
func TestImportStateStreamedClaudeLikeWithout(t *testing.T) {
	var parts []string
	add := func(lines []string, tail string) { parts = append(parts, strings.Join(lines, "\n")+"\n"+tail) }
	add(claudeLines("r", 1), "")
	add(append(claudeLines("r", 2), "not json at all"), "")
	add(claudeLines("r", 3), "")
	add(append([]string{"{broken"}, claudeLines("r", 4)...), "")
	l5 := claudeLines("r", 5)
	add(l5[:len(l5)-1], l5[len(l5)-1]) // the last line whole, but no newline
	add(nil, "")                       // its newline (a blank line, too)
	add(claudeLines("r", 6), `{"type":"user","mess`)
	parts = append(parts, `age":{"role":"user","content":"done"}}`+"\n") // the cut line, whole
	add(claudeLines("r", 7), "")
	add(claudeLines("r", 8), "")
	steps := []string{}
	for i := range parts {
		steps = append(steps, strings.Join(parts[:i+1], ""))
	}
	// The step adding the newline of l5 adds "\n" + "\n": a blank line.
	src := "/src/-w/r.jsonl"
	defer func(n int64) { holdBytes = n }(holdBytes)
	for _, chunk := range []int{1, 100, 300, -300} {
		holdBytes = importChunkBytes
		if chunk < 0 {
			chunk, holdBytes = -chunk, 200 // lines held back no longer than 200 bytes
		}
		dumps, used := streamedBothWays(t, FormatClaudeCode, src, chunk, len(steps), func(i int, fsys *vfs.MemFS) {
			writeSourceFile(t, fsys, src, []byte(steps[i]))
		}, nil)
		if used < 4 {
			t.Errorf("chunks of %d: only %d imports started from a state", chunk, used)
		}
		if !strings.Contains(dumps[1], "not json at all") && !strings.Contains(dumps[1], "problem /src/-w/r.jsonl:") {
			t.Errorf("chunks of %d: no problem reported:\n%s", chunk, dumps[1])
		}
	}
}

// writeZst writes data compressed as path.
func writeZst(t *testing.T, fsys vfs.FS, path string, data []byte) {
	t.Helper()
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	writeSourceFile(t, fsys, path, enc.EncodeAll(data, nil))
}

// Codex rollouts read in chunks, plain and .zst (the bytes before the
// state skipped through the decoder), grown line by line and inside a
// line: the same both ways.
func TestImportStateStreamedCodexLikeWithout(t *testing.T) {
	data, err := os.ReadFile(codexMainFile)
	if err != nil {
		t.Fatal(err)
	}
	var ends []int
	for i, c := range data {
		if c == '\n' {
			ends = append(ends, i+1)
		}
	}
	// A few lines at a time; once inside a line, and with lines that do
	// not parse.
	var versions [][]byte
	for k := 2; k < len(ends); k += 3 {
		versions = append(versions, data[:ends[k]])
	}
	versions = append(versions, data[:ends[len(ends)-2]+7], data)
	bad := append(append([]byte(nil), data...), "garbage line\n"...)
	versions = append(versions, bad, append(append([]byte(nil), bad...), data[ends[len(ends)-2]:]...))
	name := "/codex/2026/01/02/rollout-2026-01-02T03-04-05-" + codexMainID + ".jsonl"
	for _, zst := range []bool{false, true} {
		src := name
		if zst {
			src += ".zst"
		}
		for _, chunk := range []int{1, 300} {
			_, used := streamedBothWays(t, FormatCodex, src, chunk, len(versions), func(i int, fsys *vfs.MemFS) {
				if zst {
					writeZst(t, fsys, src, versions[i])
				} else {
					writeSourceFile(t, fsys, src, versions[i])
				}
			}, nil)
			if used < 2 {
				t.Errorf("%s chunks of %d: only %d imports started from a state", src, chunk, used)
			}
		}
	}
}

// A file whose state is kept, changing as the import opens it to read it:
// grown again (taken in to its new end), rewritten or truncated inside
// what the session holds (a new session), truncated inside what it grew
// by. Each the same as when the lines before are mapped again.
func TestImportStateStreamedFileChangingUnderIt(t *testing.T) {
	var lines [][]string
	for turn := 1; turn <= 6; turn++ {
		lines = append(lines, claudeLines("x", turn))
	}
	upTo := func(n int) []byte {
		var all []string
		for _, l := range lines[:n] {
			all = append(all, l...)
		}
		return writeSourceBytes(all, "")
	}
	src := "/src/-w/x.jsonl"
	for _, tc := range []struct {
		name   string
		then   func() []byte
		status string
	}{
		{"grown again", func() []byte { return upTo(4) }, ImportGrown},
		{"rewritten", func() []byte { return writeSourceBytes(append(claudeLines("y", 1), claudeLines("y", 2)...), "") }, ImportRewritten},
		{"truncated inside what the session holds", func() []byte { return upTo(2)[:len(upTo(2))/2] }, ImportRewritten},
		{"truncated inside what it grew by", func() []byte { b := upTo(3); return b[:len(upTo(2))+(len(b)-len(upTo(2)))/2] }, ImportGrown},
	} {
		for _, chunk := range []int{100, 300} {
			t.Run(fmt.Sprintf("%s chunks of %d", tc.name, chunk), func(t *testing.T) {
				dumps, used := streamedBothWays(t, FormatClaudeCode, src, chunk, 3, func(i int, fsys *vfs.MemFS) {
					writeSourceFile(t, fsys, src, upTo(i+1))
				}, func(i int, fsys *vfs.MemFS) {
					if i == 2 {
						writeSourceFile(t, fsys, src, tc.then())
					}
				})
				if used != 1 {
					t.Fatalf("%d imports started from a state, want 1", used)
				}
				if want := "status " + tc.status; !strings.Contains(dumps[2], want) {
					t.Fatalf("the import with the file changing: want %s:\n%s", want, dumps[2])
				}
				if want := fmt.Sprintf("export %s %d ", src, len(tc.then())); !strings.Contains(dumps[2], want) {
					t.Fatalf("no session holds the file as read (%q):\n%s", want, dumps[2])
				}
			})
		}
	}
}
