package agent

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/clock"
	"github.com/rookhq/rook/internal/vfs"
	"github.com/rookhq/rook/internal/vfs/vfstest"
)

// sessionMemoryEvents are a session's events that hold session-memory
// files: "name body" each, in order.
func sessionMemoryEvents(t *testing.T, r *Rook, id eventlog.ID) []string {
	t.Helper()
	var out []string
	err := r.eachEvent(id, func(ev eventlog.Event) error {
		if name, ok := SessionMemoryFile(ev); ok {
			body, err := r.Body(ev)
			if err != nil {
				return err
			}
			out = append(out, fmt.Sprintf("%s %s", name, body))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Claude Code's session memory (<project>/<session id>/session-memory/)
// is taken in with its session: each file a note holding its bytes, taken
// again only when it changed (each version kept, none twice), also while
// the transcript is unchanged. Export still writes the transcript byte
// for byte; a subagent's file takes none of its parent's.
func TestImportClaudeSessionMemory(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	proj := "/h/.claude/projects/-home-u-proj"
	mem := proj + "/S/session-memory/"
	writeSourceFile(t, fsys, mem+"summary.md", []byte("# Session\nfirst notes\n"))
	writeSourceFile(t, fsys, mem+"notes/todo.md", []byte("- a\n"))
	data := writeSource(t, fsys, proj+"/S.jsonl", claudeLines("S", 1), "")
	subData := writeSource(t, fsys, proj+"/S/subagents/agent-a1.jsonl", claudeLines("S", 2), "")

	rep := mustImport(t, r, FormatClaudeCode, proj)
	f := fileByPath(t, rep, proj+"/S.jsonl")
	id := *f.Session
	want := []string{"notes/todo.md - a\n", "summary.md # Session\nfirst notes\n"}
	if got := sessionMemoryEvents(t, r, id); !slices.Equal(got, want) || f.SessionMemory != 2 || rep.SessionMemory != 2 {
		t.Fatalf("new: %q (%d in the file's report, %d in all)", got, f.SessionMemory, rep.SessionMemory)
	}
	sid := *fileByPath(t, rep, proj+"/S/subagents/agent-a1.jsonl").Session
	if got := sessionMemoryEvents(t, r, sid); len(got) != 0 {
		t.Fatalf("the subagent took its parent's session memory: %q", got)
	}
	// After the session's lines, never timed before them (the files' times
	// here are 1970's): the session's last activity is its last line's.
	if s, err := r.Log.Summary(id); err != nil || uint64(f.Events) != s.Events || s.Updated.Year() < 2026 {
		t.Fatalf("events: %+v, last activity %v, %v", f, s.Updated, err)
	}
	mustExport(t, r, id, data)
	mustExport(t, r, sid, subData)
	var buf bytes.Buffer
	if x, err := r.ExportSource(id, &buf); err != nil || x.Skipped != 0 {
		t.Fatalf("export: %+v %v", x, err)
	}

	// Again, nothing changed: nothing added.
	if rep = mustImport(t, r, FormatClaudeCode, proj); rep.Events != 0 || rep.SessionMemory != 0 {
		t.Fatalf("again: %+v", rep)
	}
	before, err := r.Context(id, 200000)
	if err != nil {
		t.Fatal(err)
	}
	// Claude Code rewrites its notes, the transcript unchanged: the new
	// version is taken in, the old one kept, after the session's last
	// event (its time not before it: the file's, here, is 1970's).
	last, err := r.Log.Summary(id)
	if err != nil {
		t.Fatal(err)
	}
	writeSourceFile(t, fsys, mem+"summary.md", []byte("# Session\nfirst notes\nmore notes\n"))
	rep = mustImport(t, r, FormatClaudeCode, proj)
	if s, err := r.Log.Summary(id); err != nil || s.Updated.Before(last.Updated) {
		t.Fatalf("the session's last activity went back from %v to %v (%v)", last.Updated, s.Updated, err)
	}
	if f := fileByPath(t, rep, proj+"/S.jsonl"); f.Status != ImportUnchanged || f.SessionMemory != 1 || f.Events != 1 {
		t.Fatalf("rewritten notes: %+v", f)
	}
	want = append(want, "summary.md # Session\nfirst notes\nmore notes\n")
	if got := sessionMemoryEvents(t, r, id); !slices.Equal(got, want) {
		t.Fatalf("rewritten notes: %q", got)
	}
	// Again, nothing changed since (the notes newer than the transcript
	// still): the notes are not read, nor the session's events, again.
	var opened atomic.Int64
	fsys.SetHook(func(op vfs.Op, name string) error {
		if op == vfs.OpOpenRead && strings.HasPrefix(name, mem) {
			opened.Add(1)
		}
		return nil
	})
	rep = mustImport(t, r, FormatClaudeCode, proj)
	fsys.SetHook(nil)
	if opened.Load() != 0 || rep.Events != 0 {
		t.Fatalf("again after the notes changed: %d session-memory file(s) read, %d event(s) added", opened.Load(), rep.Events)
	}
	// Not in context: the model did not read the notes as they stand.
	if after, err := r.Context(id, 200000); err != nil || after.InContextBytes != before.InContextBytes {
		t.Fatalf("context: %d bytes with the notes' new version, %d before (%v)", after.InContextBytes, before.InContextBytes, err)
	}
	// The transcript grows: its lines come in, no note again.
	data = writeSource(t, fsys, proj+"/S.jsonl", append(claudeLines("S", 1), claudeLines("S", 3)...), "")
	rep = mustImport(t, r, FormatClaudeCode, proj)
	if f := fileByPath(t, rep, proj+"/S.jsonl"); f.Status != ImportGrown || f.SessionMemory != 0 {
		t.Fatalf("grown: %+v", f)
	}
	if got := sessionMemoryEvents(t, r, id); !slices.Equal(got, want) {
		t.Fatalf("grown: %q", got)
	}
	mustExport(t, r, id, data)
}

// TestImportClaudeSessionMemoryLeftOutReportedOnce: a session-memory
// file left out (not a plain name) is reported by the import that finds
// it, not again by every import of the unchanged history after.
func TestImportClaudeSessionMemoryLeftOutReportedOnce(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	proj := "/h/.claude/projects/-home-u-proj"
	writeSource(t, fsys, proj+"/S.jsonl", claudeLines("S", 1), "")
	writeSourceFile(t, fsys, proj+"/S/session-memory/summary.md", []byte("# Session\n"))
	odd := proj + "/S/session-memory/my notes.md"
	writeSourceFile(t, fsys, odd, []byte("- a\n"))
	reported := func(rep ImportReport) bool {
		for _, p := range rep.Problems {
			if p.File == odd {
				return true
			}
		}
		return false
	}
	if rep := mustImport(t, r, FormatClaudeCode, proj); !reported(rep) || rep.SessionMemory != 1 {
		t.Fatalf("new: %+v", rep)
	}
	for i := range 2 {
		if rep := mustImport(t, r, FormatClaudeCode, proj); reported(rep) || rep.Events != 0 {
			t.Fatalf("again (%d): reported again: %+v", i, rep.Problems)
		}
	}
	// Written again: reported again.
	writeSourceFile(t, fsys, odd, []byte("- b\n"))
	if rep := mustImport(t, r, FormatClaudeCode, proj); !reported(rep) || rep.Events != 0 {
		t.Fatalf("changed: %+v", rep)
	}
}

// Claude Code file backups put in the session's file-history directory
// after its transcript was imported without them are taken in by the next
// import of the unchanged transcript: a capture per line that named
// backups first, which diff and rewind take at that line
// (capturedStates), once; a path named again later with another backup
// has that one captured at that line. Export still writes the transcript
// byte for byte.
func TestImportLateFileBackups(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	proj := "/h/.claude/projects/-home-u-proj"
	hist := "/h/.claude/file-history/S/"
	snap := func(files string) string {
		return `{"type":"file-history-snapshot","messageId":"m","snapshot":{"messageId":"m","trackedFileBackups":{` + files + `},"timestamp":"2026-02-10T21:01:09.000Z"},"isSnapshotUpdate":true}`
	}
	lines := append(claudeLines("S", 1), snap(`"a.txt":{"backupFileName":"h1@v1","version":1,"backupTime":"2026-02-10T21:01:09.000Z"}`))
	lines = append(lines, claudeLines("S", 2)...)
	lines = append(lines, snap(`"a.txt":{"backupFileName":"h1@v2","version":2,"backupTime":"2026-02-10T21:02:09.000Z"},"/home/u/proj/b.txt":{"backupFileName":"h2@v1","version":1,"backupTime":"2026-02-10T21:02:09.000Z"}`))
	data := writeSource(t, fsys, proj+"/S.jsonl", lines, "")
	rep := mustImport(t, r, FormatClaudeCode, proj)
	id := *rep.Files[0].Session
	first := uint64(len(claudeLines("S", 1))) // the seq of the first snapshot's event

	writeSourceFile(t, fsys, hist+"h1@v1", []byte("a before\n"))
	writeSourceFile(t, fsys, hist+"h1@v2", []byte("a between\n"))
	writeSourceFile(t, fsys, hist+"h2@v1", []byte("b before\n"))
	rep = mustImport(t, r, FormatClaudeCode, proj)
	if rep.BackupsLateTaken != 3 || rep.BackupsLate != 0 || rep.Events != 2 {
		t.Fatalf("late backups: taken %d, reported late %d, events %d", rep.BackupsLateTaken, rep.BackupsLate, rep.Events)
	}
	content := func(st firstStates, p string) string {
		c, ok := st.First[p]
		if !ok {
			return "<none>"
		}
		b, err := r.Store.Get(c.File.ID)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	st, err := r.capturedStates(id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := content(st, "a.txt"), content(st, "b.txt"); a != "a before\n" || b != "b before\n" || st.Captures != 2 {
		t.Fatalf("from the start: a %q, b %q, %d captures", a, b, st.Captures)
	}
	// Past the line that named a.txt first, and the turn's tool call
	// after it: its late capture there stands before, and is not a state
	// of a rewind to there; its second backup, at the second line, is.
	st, err = r.capturedStates(id, pastCall(t, r, id, first+2))
	if err != nil {
		t.Fatal(err)
	}
	if a, b := content(st, "a.txt"), content(st, "b.txt"); a != "a between\n" || b != "b before\n" {
		t.Fatalf("past the first snapshot: a %q, b %q", a, b)
	}
	// Again: nothing more.
	if rep = mustImport(t, r, FormatClaudeCode, proj); rep.Events != 0 || rep.BackupsLateTaken != 0 || rep.BackupsLate != 0 {
		t.Fatalf("again: %d events, %d taken, %d late", rep.Events, rep.BackupsLateTaken, rep.BackupsLate)
	}
	mustExport(t, r, id, data)
	var buf bytes.Buffer
	if x, err := r.ExportSource(id, &buf); err != nil || x.Skipped != 0 {
		t.Fatalf("export: %+v %v", x, err)
	}
}

// A re-import of a tree whose sessions have no side directories looks
// for none of them: the walk listed each session's directory (or found
// none), and takeSideFiles passes over what it found absent, without a
// stat or a listing of its own.
func TestImportSideFilesReuseTheWalk(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	proj := "/h/.claude/projects/-home-u-proj"
	writeSource(t, fsys, proj+"/S.jsonl", claudeLines("S", 1), "")
	writeSource(t, fsys, proj+"/T.jsonl", claudeLines("T", 1), "")
	writeSource(t, fsys, proj+"/T/subagents/agent-a1.jsonl", claudeLines("T", 2), "")
	mustImport(t, r, FormatClaudeCode, proj)
	var looked atomic.Int64
	fsys.SetHook(func(op vfs.Op, path string) error {
		if strings.HasSuffix(path, "/session-memory") || strings.HasSuffix(path, "/tool-results") {
			looked.Add(1)
		}
		return nil
	})
	rep := mustImport(t, r, FormatClaudeCode, proj)
	fsys.SetHook(nil)
	if rep.Unchanged != 3 || looked.Load() != 0 {
		t.Fatalf("%d unchanged; %d look(s) at side directories the walk found absent", rep.Unchanged, looked.Load())
	}
	// Named on its own (no walk), a file's side directories are looked for.
	fsys.SetHook(func(op vfs.Op, path string) error {
		if strings.HasSuffix(path, "/session-memory") || strings.HasSuffix(path, "/tool-results") {
			looked.Add(1)
		}
		return nil
	})
	mustImport(t, r, FormatClaudeCode, proj+"/S.jsonl")
	fsys.SetHook(nil)
	if looked.Load() == 0 {
		t.Fatal("a file named on its own: its side directories not looked for")
	}
}

// A side directory made after the walk listed its parent is passed over by
// that import (the walk found it absent), but must be looked at by the
// next: a session-memory file rewritten after it, in the same import,
// must not move the side-file mark (side_seen_ns) past its time, or it
// is never looked at again.
func TestImportSideDirMadeAfterTheWalkSeenNextTime(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	proj := "/h/.claude/projects/-home-u-proj"
	saved := "/home/u/.claude/projects/-home-u-proj/S/tool-results/toolu_3.txt"
	writeSourceFile(t, fsys, proj+"/S/session-memory/summary.md", []byte("notes 1\n"))
	writeSource(t, fsys, proj+"/S.jsonl", append(claudeLines("S", 1), persistedResult("S", "toolu_3", saved, "late")), "")
	rep := mustImport(t, r, FormatClaudeCode, proj)
	if rep.ToolResultsMissing != 1 || rep.SessionMemory != 1 {
		t.Fatalf("first import: %+v", rep)
	}
	id := *fileByPath(t, rep, proj+"/S.jsonl").Session
	// After the walk listed S/ (no tool-results/ in it), as the session's
	// side files are looked at: the tool output comes, then the notes
	// are rewritten.
	var arrived atomic.Bool
	fsys.SetHook(func(op vfs.Op, name string) error {
		if op == vfs.OpReadDir && strings.HasSuffix(name, "/S/session-memory") && arrived.CompareAndSwap(false, true) {
			writeSourceFile(t, fsys, proj+"/S/tool-results/toolu_3.txt", []byte("late\n"))
			writeSourceFile(t, fsys, proj+"/S/session-memory/summary.md", []byte("notes 2\n"))
		}
		return nil
	})
	rep = mustImport(t, r, FormatClaudeCode, proj)
	fsys.SetHook(nil)
	if !arrived.Load() || rep.SessionMemory != 1 {
		t.Fatalf("second import: arrived %v, %+v", arrived.Load(), rep)
	}
	for i := 0; i < 2; i++ {
		mustImport(t, r, FormatClaudeCode, proj)
	}
	if got := toolResultEvents(t, r, id); !slices.Equal(got, []string{"toolu_3.txt late\n"}) {
		t.Fatalf("a tool-results directory made after the walk is never taken in: events %q", got)
	}
}

// A side directory that is a link to a directory (a session's
// tool-results/ kept on another disk) is a directory the walk listed: the
// import looks in it, though the walk does not list it as a directory.
func TestImportSideDirLinkedLooked(t *testing.T) {
	dir := t.TempDir()
	r := diskRook(t, filepath.Join(dir, "store"))
	proj := filepath.Join(dir, ".claude/projects/-home-u-proj")
	saved := "/home/u/.claude/projects/-home-u-proj/S/tool-results/toolu_3.txt"
	elsewhere := filepath.Join(dir, "elsewhere")
	for _, d := range []string{elsewhere, filepath.Join(proj, "S")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(elsewhere, filepath.Join(proj, "S", "tool-results")); err != nil {
		t.Fatal(err)
	}
	writeSource(t, vfs.OS, filepath.Join(proj, "S.jsonl"), append(claudeLines("S", 1), persistedResult("S", "toolu_3", saved, "late")), "")
	rep := mustImport(t, r, FormatClaudeCode, proj)
	if rep.ToolResultsMissing != 1 {
		t.Fatalf("first import: %+v", rep)
	}
	id := *fileByPath(t, rep, filepath.Join(proj, "S.jsonl")).Session
	writeSourceFile(t, vfs.OS, filepath.Join(elsewhere, "toolu_3.txt"), []byte("late\n"))
	mustImport(t, r, FormatClaudeCode, proj)
	if got := toolResultEvents(t, r, id); !slices.Equal(got, []string{"toolu_3.txt late\n"}) {
		t.Fatalf("a tool output put in a linked tool-results directory is not taken in: events %q", got)
	}
}

// TestImportLateFileBackupsCrashSweep crashes the import that takes in
// file backups put there late at every write in turn: the import after
// takes each in once (one late capture per line, a path at a line in one
// of them only: a.txt's @v1 and the created c.txt, absent, at the first
// snapshot's, its @v2 and b.txt's at the second), diff and rewind find
// each version at its line, a fork made before (at the second snapshot's
// line) reads the parent's late capture before its fork point only, and
// export stays byte for byte.
func TestImportLateFileBackupsCrashSweep(t *testing.T) {
	clk := &clock.Fixed{T: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	proj := "/h/.claude/projects/-home-u-proj"
	hist := "/h/.claude/file-history/S/"
	lines := append(claudeLines("S", 1), lateSnap(lateBackup("a.txt", "h1@v1", 1)+","+lateBackup("/home/u/proj/c.txt", "", 1)))
	lines = append(lines, claudeLines("S", 2)...)
	lines = append(lines, lateSnap(lateBackup("a.txt", "h1@v2", 2)+","+lateBackup("b.txt", "h2@v1", 1)))
	data := writeSourceBytes(lines, "")
	open := func(fsys vfs.FS) (*Rook, error) {
		return Open(crashHome, Options{FS: fsys, Clock: clk, Writable: true})
	}
	importAll := func(fsys vfs.FS) (ImportReport, error) {
		r, err := open(fsys)
		if err != nil {
			return ImportReport{}, err
		}
		rep, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{proj}})
		if cerr := r.Close(); err == nil {
			err = cerr
		}
		return rep, err
	}
	n := vfstest.Sweep(t, rand.New(rand.NewPCG(3, 3)), 1,
		func(fsys *vfs.MemFS) {
			initCrashStore(fsys)
			writeSourceFile(t, fsys, proj+"/S.jsonl", data)
			if _, err := importAll(fsys); err != nil {
				t.Fatal(err)
			}
			// A fork at the second snapshot's line, made before the
			// backups come.
			r, err := open(fsys)
			if err != nil {
				t.Fatal(err)
			}
			ids, _ := r.Log.IDs()
			var second uint64
			if err := r.eachEvent(ids[0], func(ev eventlog.Event) error {
				if b, err := r.Body(ev); err == nil && ev.Kind == eventlog.KindNote && bytes.Contains(b, []byte("h2@v1")) {
					second = ev.Seq
				}
				return nil
			}); err != nil || second == 0 {
				t.Fatalf("no event holds the second snapshot (%v)", err)
			}
			if _, err := r.Log.Fork(ids[0], second, eventlog.Meta{}); err != nil {
				t.Fatal(err)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			writeSourceFile(t, fsys, hist+"h1@v1", []byte("a v1\n"))
			writeSourceFile(t, fsys, hist+"h1@v2", []byte("a v2\n"))
			writeSourceFile(t, fsys, hist+"h2@v1", []byte("b v1\n"))
		},
		func(fsys *vfs.MemFS) error { _, err := importAll(fsys); return err },
		func(k int, states []*vfs.MemFS) {
			for _, fsys := range states {
				at := fmt.Sprintf("crash at write %d", k)
				verifyCrashState(t, at, fsys, clk)
				for i := 0; i < 2; i++ {
					if _, err := importAll(fsys); err != nil {
						t.Fatalf("%s: import again: %v", at, err)
					}
				}
				r, err := open(fsys)
				if err != nil {
					t.Fatal(err)
				}
				var id, fork eventlog.ID
				ids, _ := r.Log.IDs()
				for _, x := range ids {
					if m, err := r.Log.ReadMeta(x); err == nil && m.ForkAt != nil {
						fork = x
					} else {
						id = x
					}
				}
				if len(ids) != 2 || fork.IsZero() || id.IsZero() {
					t.Fatalf("%s: sessions %v", at, ids)
				}
				// Each path at each line in one late capture.
				var held []string
				if err := r.eachEvent(id, func(ev eventlog.Event) error {
					n, ok := lateCaptureAt(ev)
					if !ok {
						return nil
					}
					m, err := r.ReadManifest(ev.Body)
					if err != nil {
						return err
					}
					for p := range m.Files {
						held = append(held, fmt.Sprintf("%s@%d", p, n))
					}
					for _, p := range m.Absent {
						held = append(held, fmt.Sprintf("%s-absent@%d", p, n))
					}
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				ats := lateAts(t, r, id)
				if len(ats) != 2 {
					t.Fatalf("%s: late captures at %v, want two", at, ats)
				}
				slices.Sort(held)
				want := []string{fmt.Sprintf("a.txt@%d", ats[0]), fmt.Sprintf("a.txt@%d", ats[1]), fmt.Sprintf("b.txt@%d", ats[1]), fmt.Sprintf("c.txt-absent@%d", ats[0])}
				slices.Sort(want)
				if !slices.Equal(held, want) {
					t.Fatalf("%s: late captures at %v hold %v, want %v", at, ats, held, want)
				}
				for _, c := range []struct {
					s        eventlog.ID
					from     uint64
					a, b, cc string
				}{
					{id, 0, "a v1\n", "b v1\n", "<absent>"},
					{id, pastCall(t, r, id, ats[0]), "a v2\n", "b v1\n", "<none>"},
					{fork, 0, "a v1\n", "<none>", "<absent>"},
				} {
					st := statesFrom(t, r, c.s, c.from)
					if a, b, cc := stateOf(t, r, st, "a.txt"), stateOf(t, r, st, "b.txt"), stateOf(t, r, st, "c.txt"); a != c.a || b != c.b || cc != c.cc {
						t.Fatalf("%s: %s from #%d: a.txt %q, b.txt %q, c.txt %q; want %q, %q, %q", at, c.s, c.from, a, b, cc, c.a, c.b, c.cc)
					}
				}
				mustExport(t, r, id, data)
				r.Close()
			}
		})
	if n == 0 {
		t.Fatal("no write swept")
	}
	t.Logf("%d crash points", n)
}

// A snapshot line naming its backup ".." (a damaged or hostile
// transcript) made the late look read the file-history directory's
// parent, a directory: reported, and the directory left to be looked at
// again, so every import after read the session again and reported it
// again. Such a name is no backup, as one with a "/" is not.
func TestImportLateFileBackupDotDotIsNoBackup(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	proj := "/h/.claude/projects/-home-u-proj"
	hist := "/h/.claude/file-history/S/"
	snap := `{"type":"file-history-snapshot","messageId":"m","snapshot":{"messageId":"m","trackedFileBackups":{"a.txt":{"backupFileName":"..","version":1,"backupTime":"2026-02-10T21:01:09.000Z"},"b.txt":{"backupFileName":"h2@v1","version":1,"backupTime":"2026-02-10T21:01:09.000Z"}},"timestamp":"2026-02-10T21:01:09.000Z"},"isSnapshotUpdate":true}`
	writeSource(t, fsys, proj+"/S.jsonl", append(claudeLines("S", 1), snap), "")
	mustImport(t, r, FormatClaudeCode, proj)
	writeSourceFile(t, fsys, hist+"h2@v1", []byte("b before\n"))
	if rep := mustImport(t, r, FormatClaudeCode, proj); rep.BackupsLateTaken != 1 {
		t.Fatalf("late backups taken: %d, want b.txt's", rep.BackupsLateTaken)
	}
	for i := range 2 {
		rep := mustImport(t, r, FormatClaudeCode, proj)
		for _, p := range rep.Problems {
			if strings.Contains(p.Reason, "a.txt") {
				t.Fatalf("import %d after: %q reported again", i+1, p.Reason)
			}
		}
	}
}

// Only an imported Claude Code session holds late captures of file
// backups (lateCaptures): in any other, a note that happens to be
// labelled as one (an MCP client's note titled so, in its inbox) is a
// note. Read as a capture, its body (no manifest) made the session's diff
// and rewind fail for good.
func TestLateCaptureLabelOnlyInAnImportedSession(t *testing.T) {
	r := testRook(t, vfs.NewMem())
	id := newSession(t, r)
	appendBodies(t, r, id, "hello")
	if _, err := r.Append(id, Entry{Kind: eventlog.KindNote, Label: lateBackupsLabel + "0", Body: []byte(`{"id":"n1","content":"step 1 done"}`)}); err != nil {
		t.Fatal(err)
	}
	st, err := r.capturedStates(id, 0)
	if err != nil {
		t.Fatalf("a note in a session not imported, read as a capture: %v", err)
	}
	if st.Captures != 0 || len(st.First) != 0 {
		t.Fatalf("%d captures, states %v: want none", st.Captures, st.First)
	}
}
