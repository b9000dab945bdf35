package agent

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

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
		fmt.Fprintf(&b, "session %q title %q workspace %q tags %v parent %q source %+v\n", s.Path, m.Title, m.Workspace, m.Tags, parent, s)
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
