package agent

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/clock"
	"github.com/rookhq/rook/internal/vfs"
	"github.com/rookhq/rook/internal/vfs/vfstest"
)

// TestImportGrowingAtRandomPoints: a transcript imported again and again
// as it grows, each time cut just before each newline, then at random
// bytes (mid-line, mid-string), read whole and in chunks of a random size. After each
// import the session exports the file as it was, line count and all; at
// the end its tokens are those of the whole file imported at once (no
// line taken in twice, none lost).
func TestImportGrowingAtRandomPoints(t *testing.T) {
	var all []string
	for i := 1; i <= 3; i++ {
		all = append(all, claudeLines("f", i)...)
	}
	full := writeSourceBytes(all, "")
	rng := rand.New(rand.NewPCG(1, 2))
	src := "/src/p/f.jsonl"
	// First, cut just before each newline: a line whole but for it (it
	// parses, and must not be taken in again).
	var ends []int
	for i, c := range full {
		if c == '\n' && i > 0 {
			ends = append(ends, i)
		}
	}
	for run := range 61 {
		cuts := ends
		if run > 0 {
			cuts = nil
			for range 2 + rng.IntN(4) {
				cuts = append(cuts, 1+rng.IntN(len(full)-1))
			}
			slices.Sort(cuts)
		}
		cuts = append(slices.Clone(cuts), len(full))
		for _, chunk := range []int{0, 1 + rng.IntN(600)} {
			fsys := vfs.NewMem()
			r := testRook(t, fsys)
			if err := fsys.MkdirAll(filepath.Dir(src), 0o700); err != nil {
				t.Fatal(err)
			}
			var id *eventlog.ID
			for _, c := range cuts {
				if err := fsys.WriteFileAtomic(src, full[:c], 0o600); err != nil {
					t.Fatal(err)
				}
				rep, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{src}, ChunkBytes: chunk})
				if err != nil {
					t.Fatal(err)
				}
				if f := fileByPath(t, rep, src); f.Session != nil {
					id = f.Session
				}
				if id == nil {
					continue // no entry yet: not a transcript so far
				}
				var out bytes.Buffer
				x, err := r.ExportSource(*id, &out)
				lines := bytes.Count(full[:c], []byte{'\n'})
				if full[c-1] != '\n' {
					lines++
				}
				if err != nil || !x.Exact || !bytes.Equal(out.Bytes(), full[:c]) || x.Lines != lines {
					t.Fatalf("cut at %v, chunks of %d: after the cut at %d, export %+v (%d lines in the file) %v", cuts, chunk, c, x, lines, err)
				}
			}
			s, err := r.Log.Summary(*id)
			if err != nil || s.TokensIn != 3*1103 || s.TokensOut != 3*42 {
				t.Fatalf("cut at %v, chunks of %d: tokens %d in, %d out, want %d, %d (%v)", cuts, chunk, s.TokensIn, s.TokensOut, 3*1103, 3*42, err)
			}
		}
	}
}

// TestImportCutLineCrashSweep: the import that takes a cut line in again,
// whole, crashed at every write (and some torn ones). Whatever it left,
// the next import brings each session to the file: exported byte for
// byte, with as many events as an import that did not crash.
func TestImportCutLineCrashSweep(t *testing.T) {
	for _, chunk := range []int{0, 300} {
		t.Run(fmt.Sprint("chunks of ", chunk), func(t *testing.T) { cutLineCrashSweep(t, chunk) })
	}
}

func cutLineCrashSweep(t *testing.T, chunk int) {
	clk := &clock.Fixed{T: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
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
	full := map[string][]byte{}
	cutAt := map[string]int{}
	for i, name := range []string{"/src/a.jsonl", "/src/s/subagents/agent-x.jsonl"} {
		full[name] = writeSourceBytes(append(claudeLines("s", i), claudeLines("s", i+5)...), "")
		cutAt[name] = len(full[name])/2 + 37*i // inside a line
	}
	write := func(fsys *vfs.MemFS, grown bool) {
		for name, data := range full {
			if !grown {
				data = data[:cutAt[name]]
			}
			if err := fsys.MkdirAll(filepath.Dir(name), 0o700); err != nil {
				panic(err)
			}
			if err := fsys.WriteFileAtomic(name, data, 0o600); err != nil {
				panic(err)
			}
		}
	}
	setup := func(fsys *vfs.MemFS) {
		initCrashStore(fsys)
		write(fsys, false)
		if err := importAll(fsys); err != nil {
			panic(err)
		}
		write(fsys, true)
	}
	// events are the events of each session, by source path.
	events := func(fsys vfs.FS) map[string]uint64 {
		r, err := Open(crashHome, Options{FS: fsys, Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		ids, err := r.Log.IDs()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]uint64{}
		for _, id := range ids {
			m, err := r.Log.ReadMeta(id)
			if err != nil {
				t.Fatal(err)
			}
			s, err := r.Log.Summary(id)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if x, err := r.ExportSource(id, &buf); err != nil || !x.Exact || !bytes.Equal(buf.Bytes(), full[m.Source.Path]) {
				t.Fatalf("%s: export %+v %v", m.Source.Path, x, err)
			}
			out[m.Source.Path] = s.Events
		}
		return out
	}
	ref := vfs.NewMem()
	setup(ref)
	if err := importAll(ref); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprint(events(ref))
	vfstest.Sweep(t, rand.New(rand.NewPCG(7, 7)), 2, setup, func(fsys *vfs.MemFS) error { return importAll(fsys) },
		func(k int, states []*vfs.MemFS) {
			for _, s := range states {
				if err := importAll(s); err != nil {
					t.Fatalf("crash at write %d: import again: %v", k, err)
				}
				if got := fmt.Sprint(events(s)); got != want {
					t.Fatalf("crash at write %d: events by file %s, want %s", k, got, want)
				}
			}
		})
}

// TestImportWaitsForFileBackups: a live Claude Code session may write the
// line naming a file backup before the backup itself lands in
// file-history. An import that runs in between takes the lines up to that
// line and says so; the next takes the line with its backup, so that
// `session diff` compares with the file as it was before the first edit,
// not as it was at a later backup.
func TestImportWaitsForFileBackups(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	claude := filepath.Join(dir, "home", ".claude")
	transcript := filepath.Join(claude, "projects", "-ws", "s1.jsonl")
	backups := filepath.Join(claude, "file-history", "s1")
	write := func(p, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(ws, "a.txt"), "one\nTWO\nthree\n")
	now := time.Now().UTC().Format(time.RFC3339Nano)
	snap := func(name string) string {
		return fmt.Sprintf(`{"type":"file-history-snapshot","messageId":"m2","snapshot":{"messageId":"m2","trackedFileBackups":{"a.txt":{"backupFileName":%q,"version":1,"backupTime":%q}},"timestamp":%q},"isSnapshotUpdate":true}`, name, now, now)
	}
	lines := claudeLines("s1", 1)
	for i := range lines {
		lines[i] = strings.ReplaceAll(lines[i], `"cwd":"/home/u/proj"`, fmt.Sprintf(`"cwd":%q`, ws))
	}
	before := writeSource(t, vfs.OS, transcript, lines, "")
	lines = append(lines, snap("h1@v1")) // its backup not written yet
	writeSource(t, vfs.OS, transcript, lines, "")

	r := diskRook(t, filepath.Join(dir, "store"))
	rep := mustImport(t, r, FormatClaudeCode, filepath.Join(claude, "projects"))
	f := rep.Files[0]
	if f.Status != ImportNew || f.Lines != len(lines)-1 || !strings.Contains(f.Note, "h1@v1") {
		t.Fatalf("first import: %+v", f)
	}
	id := *f.Session
	mustExport(t, r, id, before)

	// The backup lands; the agent edits again, backing the file up anew.
	write(filepath.Join(backups, "h1@v1"), "one\ntwo\n")
	write(filepath.Join(backups, "h1@v2"), "one\nTWO\n")
	lines = append(lines, claudeLines("s1", 2)[0], snap("h1@v2"))
	data := writeSource(t, vfs.OS, transcript, lines, "")
	rep = mustImport(t, r, FormatClaudeCode, filepath.Join(claude, "projects"))
	if f := rep.Files[0]; f.Status != ImportGrown || f.Lines != 3 || f.Note != "" {
		t.Fatalf("second import: %+v", f)
	}
	mustExport(t, r, id, data)
	var out bytes.Buffer
	if _, err := r.Diff(id, &out, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "-two\n+TWO\n+three\n") {
		t.Fatalf("diff against the first backup expected:\n%s", out.String())
	}
}

// TestImportBackupsOfOneRunOfNotes: two snapshot lines in a row (one run
// of notes, one event) that back the same file up twice make one capture
// of the file as it was first: before its first edit, or absent when the
// agent created it.
func TestImportBackupsOfOneRunOfNotes(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	claude := filepath.Join(dir, "home", ".claude")
	transcript := filepath.Join(claude, "projects", "-ws", "s1.jsonl")
	backups := filepath.Join(claude, "file-history", "s1")
	for p, data := range map[string]string{
		filepath.Join(ws, "a.txt"):      "one\nTWO\nthree\n",
		filepath.Join(ws, "new.txt"):    "created\nand edited\n",
		filepath.Join(backups, "h1@v1"): "one\ntwo\n",
		filepath.Join(backups, "h1@v2"): "one\nTWO\n",
		filepath.Join(backups, "h2@v2"): "created\n",
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	snap := func(backups string) string {
		return fmt.Sprintf(`{"type":"file-history-snapshot","messageId":"m2","snapshot":{"messageId":"m2","trackedFileBackups":{%s},"timestamp":"2026-02-10T21:01:09.000Z"},"isSnapshotUpdate":true}`, backups)
	}
	lines := claudeLines("s1", 1)
	for i := range lines {
		lines[i] = strings.ReplaceAll(lines[i], `"cwd":"/home/u/proj"`, fmt.Sprintf(`"cwd":%q`, ws))
	}
	lines = append(lines,
		snap(`"a.txt":{"backupFileName":"h1@v1","version":1},"new.txt":{"backupFileName":null,"version":1}`),
		snap(`"a.txt":{"backupFileName":"h1@v2","version":2},"new.txt":{"backupFileName":"h2@v2","version":2}`))
	writeSource(t, vfs.OS, transcript, lines, "")
	r := diskRook(t, filepath.Join(dir, "store"))
	id := *mustImport(t, r, FormatClaudeCode, filepath.Join(claude, "projects")).Files[0].Session
	var out bytes.Buffer
	d, err := r.Diff(id, &out, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Files) != 2 || d.Files[1].Path != "new.txt" || d.Files[1].Status != "added" || !strings.Contains(out.String(), "-two\n+TWO\n+three\n") {
		t.Fatalf("diff against the first backups expected: %+v\n%s", d.Files, out.String())
	}
}

// TestImportWaitsForFileHistory: a session whose first tracked file is one
// the agent created names it with no backup before Claude Code has made
// the session's file-history directory (with its first backup). An import
// in between waits for it, so that the file is captured as absent, as an
// import after the directory is there captures it, and diff says the
// session added the file rather than changed it from a later backup.
func TestImportWaitsForFileHistory(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	claude := filepath.Join(dir, "home", ".claude")
	transcript := filepath.Join(claude, "projects", "-ws", "s1.jsonl")
	backups := filepath.Join(claude, "file-history", "s1")
	write := func(p, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(ws, "new.txt"), "created\nand edited\n")
	now := time.Now().UTC().Format(time.RFC3339Nano)
	snap := func(backup string) string {
		return fmt.Sprintf(`{"type":"file-history-snapshot","messageId":"m2","snapshot":{"messageId":"m2","trackedFileBackups":{"new.txt":{"backupFileName":%s,"version":1,"backupTime":%q}},"timestamp":%q},"isSnapshotUpdate":true}`, backup, now, now)
	}
	lines := claudeLines("s1", 1)
	for i := range lines {
		lines[i] = strings.ReplaceAll(lines[i], `"cwd":"/home/u/proj"`, fmt.Sprintf(`"cwd":%q`, ws))
	}
	lines = append(lines, snap("null"))
	writeSource(t, vfs.OS, transcript, lines, "")
	r := diskRook(t, filepath.Join(dir, "store"))
	if f := mustImport(t, r, FormatClaudeCode, filepath.Join(claude, "projects")).Files[0]; f.Lines != len(lines)-1 || !strings.Contains(f.Note, "new.txt") {
		t.Fatalf("first import: %+v", f)
	}
	write(filepath.Join(backups, "h2@v2"), "created\n")
	lines = append(lines, claudeLines("s1", 2)[0], snap(`"h2@v2"`))
	data := writeSource(t, vfs.OS, transcript, lines, "")
	rep := mustImport(t, r, FormatClaudeCode, filepath.Join(claude, "projects"))
	id := *rep.Files[0].Session
	mustExport(t, r, id, data)
	d, err := r.Diff(id, nil, false)
	if err != nil || len(d.Files) != 1 || d.Files[0].Status != "added" {
		t.Fatalf("diff: %+v %v", d.Files, err)
	}
}

// A file whose size, modification and change times are those its session
// recorded when it came to hold all of it is unchanged without being read:
// a large history is not read again by every import. A file written again
// (its times move), even with the same bytes or the same size, is read.
func TestImportKnowsAnUnchangedFileByItsStat(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	a := "/p/a.jsonl"
	data := writeSource(t, fsys, a, claudeLines("a", 2), "")
	first := mustImport(t, r, FormatClaudeCode, "/p")
	id := *fileByPath(t, first, a).Session
	m, err := r.Log.ReadMeta(id)
	if err != nil || m.Source.Stat == nil || m.Source.Stat.Size != int64(len(data)) {
		t.Fatalf("the stat is recorded: %+v %v", m.Source, err)
	}
	reads := 0
	fsys.SetHook(func(op vfs.Op, path string) error {
		if path == a && (op == vfs.OpOpenRead || op == vfs.OpRead) {
			reads++
		}
		return nil
	})
	again := mustImport(t, r, FormatClaudeCode, "/p")
	if f := fileByPath(t, again, a); f.Status != ImportUnchanged || *f.Session != id || reads != 0 {
		t.Fatalf("unchanged: %+v, %d read(s) of the file", f, reads)
	}
	// The same bytes written again: read, found unchanged, its new stat
	// recorded.
	writeSourceFile(t, fsys, a, data)
	reads = 0
	again = mustImport(t, r, FormatClaudeCode, "/p")
	if f := fileByPath(t, again, a); f.Status != ImportUnchanged || reads == 0 {
		t.Fatalf("written again: %+v, %d read(s)", f, reads)
	}
	m2, _ := r.Log.ReadMeta(id)
	if m2.Source.Stat == nil || *m2.Source.Stat == *m.Source.Stat {
		t.Fatalf("the new stat is recorded: %+v, was %+v", m2.Source.Stat, m.Source.Stat)
	}
	// Another text of the same size: rewritten, as without the stat.
	other := bytes.Replace(data, []byte(`"a"`), []byte(`"A"`), 1)
	if len(other) != len(data) || bytes.Equal(other, data) {
		t.Fatal("test data")
	}
	writeSourceFile(t, fsys, a, other)
	if f := fileByPath(t, mustImport(t, r, FormatClaudeCode, "/p"), a); f.Status != ImportRewritten {
		t.Fatalf("same size, other bytes: %+v", f)
	}
	fsys.SetHook(nil)
}

// A stat is recorded only for the whole of a plain file that had not
// changed for statQuiet before the files were listed.
func TestStatToRecord(t *testing.T) {
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	f := sourceFile{path: "/a.jsonl", size: 10, stat: eventlog.FileStat{Size: 10, MTime: at.Add(-time.Minute).UnixNano(), CTime: at.Add(-time.Minute).UnixNano()}}
	if st := statToRecord(f, false, 10, at); st == nil || *st != f.stat {
		t.Fatalf("quiet, whole: %+v", st)
	}
	for name, c := range map[string]struct {
		f    sourceFile
		zst  bool
		size int64
	}{
		"part":           {f, false, 9},
		"zstd":           {f, true, 10},
		"just written":   {sourceFile{stat: eventlog.FileStat{Size: 10, MTime: at.Add(-time.Second).UnixNano()}}, false, 10},
		"just changed":   {sourceFile{stat: eventlog.FileStat{Size: 10, MTime: f.stat.MTime, CTime: at.UnixNano()}}, false, 10},
		"no times known": {sourceFile{stat: eventlog.FileStat{Size: 10}}, false, 10},
	} {
		if st := statToRecord(c.f, c.zst, c.size, at); st != nil {
			t.Errorf("%s: recorded %+v", name, st)
		}
	}
}

// A file emptied since its import (truncated, or written again and not yet
// written to) says so, and which session keeps its lines.
func TestImportSaysAFileWasEmptied(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	a := "/p/a.jsonl"
	data := writeSource(t, fsys, a, claudeLines("a", 1), "")
	id := *fileByPath(t, mustImport(t, r, FormatClaudeCode, "/p"), a).Session
	writeSourceFile(t, fsys, a, nil)
	f := fileByPath(t, mustImport(t, r, FormatClaudeCode, "/p"), a)
	if f.Status != ImportUnchanged || f.Session == nil || *f.Session != id || !strings.Contains(f.Note, "empty now") || !strings.Contains(f.Note, id.String()) {
		t.Fatalf("emptied: %+v", f)
	}
	mustExport(t, r, id, data)
}

// A file listed with the stat its session recorded, then moved (during the
// listing) to a path that is imported first, is that session's at its new
// path; the old path is not reported as unchanged, least of all as the
// session with the zero id.
func TestImportUnchangedFileMovedWhileListed(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	p1 := "/p/a/subagents/x.jsonl" // listed first, imported last (a child's place)
	p2 := "/p/b/x.jsonl"
	writeSource(t, fsys, p1, claudeLines("x", 2), "")
	if err := fsys.MkdirAll("/p/b", 0o700); err != nil {
		t.Fatal(err)
	}
	id := *fileByPath(t, mustImport(t, r, FormatClaudeCode, "/p"), p1).Session
	moved := false
	fsys.SetHook(func(op vfs.Op, path string) error {
		if op == vfs.OpReadDir && path == "/p/b" && !moved {
			moved = true
			if err := fsys.Rename(p1, p2); err != nil {
				t.Error(err)
			}
		}
		return nil
	})
	rep, _ := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{"/p"}})
	fsys.SetHook(nil)
	if f := fileByPath(t, rep, p2); f.Status != ImportUnchanged || f.Session == nil || *f.Session != id || f.MovedFrom != p1 {
		t.Fatalf("at its new path: %+v", f)
	}
	if f := fileByPath(t, rep, p1); f.Status == ImportUnchanged || f.Session != nil {
		t.Fatalf("the path it left: %+v", f)
	}
}
