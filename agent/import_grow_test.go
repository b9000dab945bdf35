package agent

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rookhq/rook/cas"
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
		t.Run(fmt.Sprint("chunks of ", chunk), func(t *testing.T) { cutLineCrashSweep(t, chunk, false) })
	}
}

// cutLineCrashSweep: the file is cut inside a line when last imported,
// or, atLineEnd, after one, and imported cut at the line end before that
// too (an import state is kept of a file seen growing).
func cutLineCrashSweep(t *testing.T, chunk int, atLineEnd bool) {
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
		if atLineEnd {
			cutAt[name] += bytes.IndexByte(full[name][cutAt[name]:], '\n') + 1
		}
	}
	// write writes each file, cut at cut(name) bytes.
	write := func(fsys *vfs.MemFS, cut func(name string) int) {
		for name, data := range full {
			data = data[:cut(name)]
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
		if atLineEnd {
			write(fsys, func(name string) int { return bytes.LastIndexByte(full[name][:cutAt[name]-1], '\n') + 1 })
			if err := importAll(fsys); err != nil {
				panic(err)
			}
		}
		write(fsys, func(name string) int { return cutAt[name] })
		if err := importAll(fsys); err != nil {
			panic(err)
		}
		write(fsys, func(name string) int { return len(full[name]) })
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
				verifyCrashState(t, fmt.Sprintf("crash at write %d", k), s, clk)
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

// A .zst rollout is known unchanged by its stat too, read whole or in
// chunks: the stat recorded is the compressed file's (its size on disk),
// once the session holds all of its decompressed stream. A plain rollout
// compressed in place records the .zst's stat as it moves; a .zst cut short
// fails, and is read again at every import until it is whole.
func TestImportKnowsAnUnchangedZstByItsStat(t *testing.T) {
	plain, enc := codexMainAndEncoder(t)
	z := enc.EncodeAll(plain, nil)
	for _, chunk := range []int{0, 100} {
		fsys := vfs.NewMem()
		r := testRook(t, fsys)
		a := "/c/" + filepath.Base(codexMainFile)
		imp := func() ImportReport {
			t.Helper()
			rep, err := r.Import(ImportOptions{Format: FormatCodex, Paths: []string{"/c"}, ChunkBytes: chunk})
			if err != nil {
				t.Fatal(err)
			}
			return rep
		}
		writeSourceFile(t, fsys, a, plain)
		id := *fileByPath(t, imp(), a).Session
		// Compressed in place: the session moves to the .zst, and records
		// its stat.
		writeSourceFile(t, fsys, a+".zst", z)
		if err := fsys.Remove(a); err != nil {
			t.Fatal(err)
		}
		if f := fileByPath(t, imp(), a+".zst"); f.Status != ImportUnchanged || *f.Session != id || f.MovedFrom != a {
			t.Fatalf("chunks of %d: compressed: %+v", chunk, f)
		}
		m, err := r.Log.ReadMeta(id)
		if err != nil || m.Source.Stat == nil || m.Source.Stat.Size != int64(len(z)) || m.Source.Size != int64(len(plain)) || !m.Source.Zstd {
			t.Fatalf("chunks of %d: the .zst's stat is recorded: %+v %v", chunk, m.Source, err)
		}
		reads := 0
		fsys.SetHook(func(op vfs.Op, path string) error {
			if path == a+".zst" && (op == vfs.OpOpenRead || op == vfs.OpRead) {
				reads++
			}
			return nil
		})
		if f := fileByPath(t, imp(), a+".zst"); f.Status != ImportUnchanged || *f.Session != id || reads != 0 {
			t.Fatalf("chunks of %d: unchanged: %+v, %d read(s) of the .zst", chunk, f, reads)
		}
		// Cut short (a copy that stopped, a disk that filled): it fails,
		// and is no session's; read again by the next import.
		writeSourceFile(t, fsys, a+".zst", z[:len(z)-7])
		for i := range 2 {
			reads = 0
			if f := fileByPath(t, imp(), a+".zst"); f.Status != ImportFailed || reads == 0 {
				t.Fatalf("chunks of %d: cut short, import %d: %+v, %d read(s)", chunk, i+1, f, reads)
			}
		}
		// Whole again: read, unchanged, its new stat recorded; then not read.
		writeSourceFile(t, fsys, a+".zst", z)
		for i, want := range []bool{true, false} {
			reads = 0
			if f := fileByPath(t, imp(), a+".zst"); f.Status != ImportUnchanged || *f.Session != id || (reads > 0) != want {
				t.Fatalf("chunks of %d: whole again, import %d: %+v, %d read(s)", chunk, i+1, f, reads)
			}
		}
		fsys.SetHook(nil)
		mustExport(t, r, id, plain)
	}
}

// A .zst replaced by another of the same size, given the same modification
// time (a copy that keeps it), is read again: its change time, which no
// program sets, says it changed.
func TestImportReadsAZstReplacedWithTheSameSizeAndTime(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("no change time on this OS")
	}
	plain, enc := codexMainAndEncoder(t)
	other := bytes.Replace(plain, []byte("05.123Z"), []byte("05.124Z"), 1)
	z, zo := enc.EncodeAll(plain, nil), enc.EncodeAll(other, nil)
	if bytes.Equal(other, plain) || len(z) != len(zo) {
		t.Fatalf("test data: %d and %d bytes compressed", len(z), len(zo))
	}
	dir := t.TempDir()
	home := filepath.Join(dir, "store")
	if _, err := cas.Init(vfs.OS, nil, home); err != nil {
		t.Fatal(err)
	}
	// A minute on: the file written now is quiet when listed.
	r, err := Open(home, Options{FS: vfs.OS, Clock: &clock.Fixed{T: time.Now().Add(time.Minute)}, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	path := filepath.Join(dir, "c", filepath.Base(codexMainFile)+".zst")
	mtime := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	write := func(data []byte) {
		t.Helper()
		writeSourceFile(t, vfs.OS, path, data) // a new file, renamed over the old
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	write(z)
	id := *fileByPath(t, mustImport(t, r, FormatCodex, path), path).Session
	m, err := r.Log.ReadMeta(id)
	if err != nil || m.Source.Stat == nil || m.Source.Stat.CTime == 0 {
		t.Fatalf("the stat is recorded, with a change time: %+v %v", m.Source, err)
	}
	time.Sleep(20 * time.Millisecond) // past the tick of the file system's clock
	write(zo)
	fi, err := os.Stat(path)
	if err != nil || fi.Size() != m.Source.Stat.Size || fi.ModTime().UnixNano() != m.Source.Stat.MTime {
		t.Fatalf("test setup: %v %v", fi, err)
	}
	if f := fileByPath(t, mustImport(t, r, FormatCodex, path), path); f.Status != ImportRewritten || *f.Session == id {
		t.Fatalf("replaced: %+v", f)
	}
}

// A stat is recorded only for the whole of a file that had not changed
// for statQuiet before the files were listed: for a .zst, all of its
// decompressed stream, whatever its compressed size.
func TestStatToRecord(t *testing.T) {
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	f := sourceFile{path: "/a.jsonl", size: 10, stat: eventlog.FileStat{Size: 10, MTime: at.Add(-time.Minute).UnixNano(), CTime: at.Add(-time.Minute).UnixNano()}}
	if st := statToRecord(f, false, 10, 10, at); st == nil || *st != f.stat {
		t.Fatalf("quiet, whole: %+v", st)
	}
	z := f
	z.path = "/a.jsonl.zst"
	if st := statToRecord(z, true, 80, 80, at); st == nil || *st != z.stat {
		t.Fatalf("quiet, whole .zst (10 bytes compressed, 80 decompressed): %+v", st)
	}
	// Dated in the future (copied from a machine whose clock ran ahead):
	// it did not change moments ago. Left unrecorded, every import read
	// and hashed it again until the clock reached its times; a write to
	// it dates it now, which the next import sees differ.
	ahead := sourceFile{path: "/a.jsonl", size: 10, stat: eventlog.FileStat{Size: 10, MTime: at.Add(time.Hour).UnixNano(), CTime: at.Add(time.Hour).UnixNano()}}
	if st := statToRecord(ahead, false, 10, 10, at); st == nil || *st != ahead.stat {
		t.Fatalf("dated an hour ahead, whole: %+v", st)
	}
	for name, c := range map[string]struct {
		f            sourceFile
		zst          bool
		size, length int64
	}{
		"part":                  {f, false, 9, 10},
		"zstd, part":            {z, true, 79, 80},
		"zstd, compressed size": {z, true, 10, 80}, // 10 bytes held of 80: not all of it
		"just written":          {sourceFile{stat: eventlog.FileStat{Size: 10, MTime: at.Add(-time.Second).UnixNano()}}, false, 10, 10},
		"just changed":          {sourceFile{stat: eventlog.FileStat{Size: 10, MTime: f.stat.MTime, CTime: at.UnixNano()}}, false, 10, 10},
		"zstd, just changed":    {sourceFile{stat: eventlog.FileStat{Size: 10, MTime: f.stat.MTime, CTime: at.UnixNano()}}, true, 80, 80},
		"no times known":        {sourceFile{stat: eventlog.FileStat{Size: 10}}, false, 10, 10},
		"zstd, no times known":  {sourceFile{stat: eventlog.FileStat{Size: 10}}, true, 80, 80},
	} {
		if st := statToRecord(c.f, c.zst, c.size, c.length, at); st != nil {
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

// A crash after a cut last line was taken in and before the metadata:
// the file unchanged since, the next import takes nothing (the cut line
// is not taken in again: it did not grow), and reports the cut line, which
// does not parse, as the import the crash cut short never did.
func TestImportCutLineAfterACrashUnchanged(t *testing.T) {
	for _, chunk := range []int{0, 300} {
		fsys := vfs.NewMem()
		r := testRook(t, fsys)
		proj := "/p/-home-u-proj"
		lines := append(claudeLines("s", 1), claudeLines("s", 2)...)
		writeSource(t, fsys, proj+"/s.jsonl", lines[:4], "")
		imp := func() ImportReport {
			rep, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{proj}, ChunkBytes: chunk})
			if err != nil {
				t.Fatal(err)
			}
			return rep
		}
		id := *fileByPath(t, imp(), proj+"/s.jsonl").Session
		before := metaOf(t, r, id)
		cut := lines[9]
		data := writeSource(t, fsys, proj+"/s.jsonl", lines[:9], cut[:len(cut)/2])
		imp()
		s0, _ := r.Log.Summary(id)
		if err := r.Log.UpdateMeta(before); err != nil {
			t.Fatal(err)
		}
		rep := imp()
		f := fileByPath(t, rep, proj+"/s.jsonl")
		s1, _ := r.Log.Summary(id)
		if f.Events != 0 || f.Unparsed != 1 || !f.Continued || s1.Events != s0.Events || f.Status != ImportUnchanged {
			t.Fatalf("chunks of %d: after the crash: %+v, %d events, were %d", chunk, f, s1.Events, s0.Events)
		}
		if m := metaOf(t, r, id); m.Source.Size != int64(len(data)) {
			t.Fatalf("chunks of %d: %+v", chunk, m.Source)
		}
		mustExport(t, r, id, data)
	}
}

// A file backup that is not a regular file (a FIFO, which no one writes)
// is no backup: the import takes the lines in without it, does not wait
// on the pipe, and says so.
func TestImportSkipsABackupThatIsNoFile(t *testing.T) {
	mkfifo, err := exec.LookPath("mkfifo")
	if err != nil {
		t.Skip("no mkfifo")
	}
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	claude := filepath.Join(dir, "home", ".claude")
	transcript := filepath.Join(claude, "projects", "-ws", "s1.jsonl")
	backups := filepath.Join(claude, "file-history", "s1")
	if err := os.MkdirAll(backups, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := exec.Command(mkfifo, filepath.Join(backups, "h1@v1")).Run(); err != nil {
		t.Skip("mkfifo:", err)
	}
	now := time.Now().UTC().Format(time.RFC3339Nano)
	lines := claudeLines("s1", 1)
	for i := range lines {
		lines[i] = strings.ReplaceAll(lines[i], `"cwd":"/home/u/proj"`, fmt.Sprintf(`"cwd":%q`, ws))
	}
	lines = append(lines, fmt.Sprintf(`{"type":"file-history-snapshot","messageId":"m2","snapshot":{"messageId":"m2","trackedFileBackups":{"a.txt":{"backupFileName":"h1@v1","version":1,"backupTime":%q}},"timestamp":%q},"isSnapshotUpdate":true}`, now, now))
	data := writeSource(t, vfs.OS, transcript, lines, "")
	r := diskRook(t, filepath.Join(dir, "store"))
	done := make(chan ImportReport, 1)
	go func() {
		rep, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{filepath.Join(claude, "projects")}})
		if err != nil {
			t.Error(err)
		}
		done <- rep
	}()
	select {
	case rep := <-done:
		if f := rep.Files[0]; f.Status != ImportNew || f.Lines != len(lines) {
			t.Fatalf("%+v", f)
		}
		if len(rep.Problems) != 1 || rep.Problems[0].File != filepath.Join(backups, "h1@v1") || !strings.Contains(rep.Problems[0].Reason, "the file backup of a.txt: not a regular file (a named pipe)") {
			t.Fatalf("problems: %+v", rep.Problems)
		}
		mustExport(t, r, *rep.Files[0].Session, data)
	case <-time.After(30 * time.Second):
		t.Fatal("the import waits on the pipe")
	}
}
