package agent

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	json "github.com/go-json-experiment/json/v1"

	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// setImportStateMin keeps the import state of files of at least n bytes
// for the rest of the test.
func setImportStateMin(t *testing.T, n int64) {
	old := importStateMin
	importStateMin = n
	t.Cleanup(func() { importStateMin = old })
}

// A mapper's fields are all in its kept state (or named here as not
// state): a field added to a mapper and not to its state would be lost
// between two imports of a growing file.
func TestImportStateFields(t *testing.T) {
	for _, tc := range []struct {
		mapper any
		state  any
		not    []string // set from the path, not from the lines
	}{
		{claudeMapper{}, claudeState{}, []string{"file"}},
		{codexMapper{}, codexState{}, nil},
	} {
		mt, st := reflect.TypeOf(tc.mapper), reflect.TypeOf(tc.state)
		if mt.NumField() != st.NumField()+len(tc.not) {
			t.Errorf("%s has %d fields, %s %d (and %v are not state): a field of the mapper is not kept between imports; add it to %s and its saveState and loadState, and bump importStateVersion",
				mt.Name(), mt.NumField(), st.Name(), st.NumField(), tc.not, st.Name())
		}
	}
}

// growingSources are files to import as they grow: a few of the corpus's
// Claude Code transcripts, and the hand-made Codex rollouts.
func growingSources(t *testing.T) (claude, codex [][]byte) {
	paths, _ := filepath.Glob(filepath.Join(corpusDir, "*", "*.jsonl"))
	slices.Sort(paths)
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && fi.Size() > 2<<20 && len(claude) < 2 {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			claude = append(claude, data)
		}
	}
	if len(claude) == 0 {
		claude = append(claude, writeSourceBytes(append(claudeLines("g", 1), claudeLines("g", 2)...), ""))
	}
	paths, _ = filepath.Glob(filepath.Join("testdata", "codex", "*.jsonl"))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		codex = append(codex, data)
	}
	return claude, codex
}

// cutsOf are where a file is cut as it grows: after random lines, once in
// the middle of a line, and at its end.
func cutsOf(data []byte, rng *rand.Rand) []int {
	var ends []int
	for i, c := range data {
		if c == '\n' {
			ends = append(ends, i+1)
		}
	}
	var cuts []int
	for range 5 {
		cuts = append(cuts, ends[rng.IntN(len(ends))])
	}
	cuts = append(cuts, 1+rng.IntN(len(data)-1), len(data))
	slices.Sort(cuts)
	return slices.Compact(cuts)
}

// A file imported as it grows makes the same sessions and events, read
// whole and in chunks, whether each import maps the lines before from the
// state the import before kept or maps them again.
func TestImportStateGrowsLikeWithout(t *testing.T) {
	claude, codex := growingSources(t)
	rng := rand.New(rand.NewPCG(7, 7))
	for _, tc := range []struct {
		format string
		files  [][]byte
		path   func(i int) string
	}{
		{FormatClaudeCode, claude, func(i int) string { return fmt.Sprintf("/src/-w/%08d-aaaa-bbbb-cccc-000000000000.jsonl", i) }},
		{FormatCodex, codex, func(i int) string {
			return fmt.Sprintf("/src/2026/01/02/rollout-2026-01-02T03-04-05-019b7d3a-5e1f-7c42-9a3b-2f6e8d1c%04d.jsonl", i)
		}},
	} {
		for i, data := range tc.files {
			cuts := cutsOf(data, rng)
			for _, chunk := range []int{0, 64 << 10} {
				t.Run(fmt.Sprintf("%s %d chunks of %d", tc.format, i, chunk), func(t *testing.T) {
					src := tc.path(i)
					grown := false
					importBothWays(t, bothWays{format: tc.format, src: src, chunk: chunk, steps: len(cuts),
						step: func(k int, fsys *vfs.MemFS) {
							writeSourceFile(t, fsys, src, data[:cuts[k]])
							if k == 0 {
								grown = false
							}
						},
						after: func(keep bool, k int, r *Rook, fsys *vfs.MemFS, rep ImportReport) {
							grown = grown || rep.Grown > 0
							if id := rep.Files[0].Session; keep && grown && id != nil && data[cuts[k]-1] == '\n' {
								if _, err := fsys.Stat(r.importStatePath(*id)); err != nil {
									t.Fatalf("after the cut at %d of %v: no import state: %v", cuts[k], cuts, err)
								}
							}
						},
						dump: func(t *testing.T, r *Rook, rep ImportReport) string { return importDump(t, r, rep) },
					})
				})
			}
		}
	}
}

// The kept state is what the grown file's import maps from: a state
// changed (its checksum made again) shows in the events; a damaged one is
// passed over.
func TestImportStateIsWhatTheNextImportMapsFrom(t *testing.T) {
	setImportStateMin(t, 0)
	lines := append(claudeLines("u", 1), claudeLines("u", 2)...)
	cut := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, `"tool_result"`) })
	if cut < 0 {
		t.Fatal("no tool result in the lines")
	}
	for _, chunk := range []int{0, 100} {
		for _, damaged := range []bool{false, true} {
			fsys := vfs.NewMem()
			r := testRook(t, fsys)
			src := "/src/-w/u.jsonl"
			var id eventlog.ID
			for _, n := range []int{1, cut} { // the state is kept once the file grows
				writeSource(t, fsys, src, lines[:n], "")
				rep, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{src}, ChunkBytes: chunk})
				if err != nil {
					t.Fatal(err)
				}
				id = *rep.Files[0].Session
			}
			data, err := vfs.ReadFile(fsys, r.importStatePath(id))
			if err != nil {
				t.Fatal(err)
			}
			_, body, _ := strings.Cut(strings.TrimSpace(string(data)), " ")
			var st importState
			if err := json.Unmarshal([]byte(body), &st); err != nil {
				t.Fatal(err)
			}
			var cs claudeState
			if err := json.Unmarshal(st.Mapper, &cs); err != nil || len(cs.ToolName) == 0 {
				t.Fatalf("state %s: %v", st.Mapper, err)
			}
			for k := range cs.ToolName {
				cs.ToolName[k] = "Changed"
			}
			st.Mapper, _ = json.Marshal(cs)
			b, _ := json.Marshal(st)
			data = fmt.Appendf(nil, "%08x %s\n", crc32.Checksum(b, castagnoli), b)
			if damaged {
				data[len(data)/2] ^= 1
			}
			writeSourceFile(t, fsys, r.importStatePath(id), data)
			writeSource(t, fsys, src, lines, "")
			if _, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{src}, ChunkBytes: chunk}); err != nil {
				t.Fatal(err)
			}
			label := ""
			eventsAs(t, r, id, func(e eventlog.Event) string {
				if e.Kind == eventlog.KindToolResult && label == "" {
					label = e.Label
				}
				return ""
			})
			if want := map[bool]string{false: "Changed", true: "Bash"}[damaged]; label != want {
				t.Errorf("chunks of %d, state damaged %v: the tool result is labelled %q, want %q", chunk, damaged, label, want)
			}
		}
	}
}

// A file that changes between the pass that hashes it and the pass that
// reads what it grew by, from where the kept state leaves off, fails as it
// does when read from its start.
func TestImportStateFileChangingUnderIt(t *testing.T) {
	setImportStateMin(t, 0)
	TestChunkedImportOfAFileChangingUnderIt(t)
}

// importGrownOnce imports the first two lines as src, then all of them, and
// checks that the session, seen growing, keeps its import state.
func importGrownOnce(t *testing.T, fsys *vfs.MemFS, r *Rook, src string, lines []string) eventlog.ID {
	t.Helper()
	writeSource(t, fsys, src, lines[:2], "")
	id := *mustImport(t, r, FormatClaudeCode, src).Files[0].Session
	if _, err := fsys.Stat(r.importStatePath(id)); !os.IsNotExist(err) {
		t.Fatalf("a file imported once keeps a state: %v", err)
	}
	writeSource(t, fsys, src, lines, "")
	mustImport(t, r, FormatClaudeCode, src)
	if _, err := fsys.Stat(r.importStatePath(id)); err != nil {
		t.Fatalf("a file seen growing keeps no state: %v", err)
	}
	return id
}

// Deleting a session deletes its import state.
func TestRemoveSessionDropsImportState(t *testing.T) {
	setImportStateMin(t, 0)
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	id := importGrownOnce(t, fsys, r, "/src/-w/d.jsonl", claudeLines("d", 1))
	if _, err := r.RemoveSession(id); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.Stat(r.importStatePath(id)); !os.IsNotExist(err) {
		t.Fatalf("the state of a deleted session: %v", err)
	}
	var out bytes.Buffer
	if _, err := r.ExportSource(id, &out); err == nil {
		t.Fatal("the session is still there")
	}
}

// gc removes the import states no import can use again (their file gone or
// shorter than the bytes they follow, their session gone, their bytes
// torn) and keeps the others; a dry run only counts them.
func TestGCRemovesImportStatesNoImportCanUse(t *testing.T) {
	setImportStateMin(t, 0)
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	ids := map[string]eventlog.ID{}
	for _, name := range []string{"kept", "deleted", "shorter", "torn", "orphan"} {
		ids[name] = importGrownOnce(t, fsys, r, "/src/-w/"+name+".jsonl", claudeLines(name, 1))
	}
	if err := fsys.Remove("/src/-w/deleted.jsonl"); err != nil {
		t.Fatal(err)
	}
	writeSource(t, fsys, "/src/-w/shorter.jsonl", claudeLines("shorter", 1)[:1], "")
	torn, err := vfs.ReadFile(fsys, r.importStatePath(ids["torn"]))
	if err != nil {
		t.Fatal(err)
	}
	f, err := fsys.OpenFile(r.importStatePath(ids["torn"]), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(torn[:len(torn)/2]); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// A session deleted without its state (a rook before RemoveSession).
	if _, err := r.Log.Remove(ids["orphan"]); err != nil {
		t.Fatal(err)
	}
	var gone int64
	for _, name := range []string{"deleted", "shorter", "torn", "orphan"} {
		fi, err := fsys.Stat(r.importStatePath(ids[name]))
		if err != nil {
			t.Fatal(err)
		}
		gone += fi.Size()
	}
	for _, dry := range []bool{true, false} {
		rep, err := r.GC(0, dry, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if rep.ImportStates != 4 || rep.ImportStateBytes != gone {
			t.Fatalf("dry run %v: %d import states (%d bytes), want 4 (%d bytes)", dry, rep.ImportStates, rep.ImportStateBytes, gone)
		}
		for name, id := range ids {
			_, err := fsys.Stat(r.importStatePath(id))
			if want := name == "kept" || dry; (err == nil) != want {
				t.Fatalf("dry run %v: state of %s there: %v, want %v", dry, name, err == nil, want)
			}
		}
	}
	if rep, err := r.GC(0, false, nil, nil); err != nil || rep.ImportStates != 0 {
		t.Fatalf("gc again: %d import states, %v", rep.ImportStates, err)
	}
	// The state kept is still the one the next import of its grown file
	// maps from: changed, it shows in the events (see
	// TestImportStateIsWhatTheNextImportMapsFrom); here, it is still found.
	kept := r.importStatePath(ids["kept"])
	before, err := vfs.ReadFile(fsys, kept)
	if err != nil {
		t.Fatal(err)
	}
	st, ok := r.readImportState(kept)
	if !ok {
		t.Fatalf("the kept state does not read back: %q", before)
	}
	if _, ok := r.loadImportState(ids["kept"], FormatClaudeCode, st.Path, st.MinCut, st.Size, st.SHA256); !ok {
		t.Fatal("the kept state no longer matches its session")
	}
}

// A grown file whose session's state is kept is read from where that
// session ends: the bytes before are only hashed, and must be those the
// session holds.
func TestImportStateReadsOnlyWhatTheFileGrewBy(t *testing.T) {
	setImportStateMin(t, 0)
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	src := "/src/-w/t.jsonl"
	id := importGrownOnce(t, fsys, r, src, claudeLines("t", 1))
	first := writeSourceBytes(claudeLines("t", 1), "")
	m, err := r.Log.ReadMeta(id)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		lines []string
		base  int64
	}{
		{"grown", append(claudeLines("t", 1), claudeLines("t", 2)...), int64(len(first))},
		{"rewritten", append(claudeLines("t", 3), claudeLines("t", 2)...), 0},
	} {
		data := writeSource(t, fsys, src, tc.lines, "")
		f := sourceFile{path: src, size: int64(len(data)), held: m.Source.Size, heldBy: id, heldSum: m.Source.SHA256}
		p := r.prepareSource(FormatClaudeCode, f, false, MinCutString, importChunkBytes)
		if p.err != nil || p.base != tc.base || !bytes.Equal(p.data, data[tc.base:]) || p.full != hashHex(data) {
			t.Errorf("%s: read from %d (%d bytes), sum %s, err %v; want from %d, sum %s", tc.name, p.base, len(p.data), p.full, p.err, tc.base, hashHex(data))
		}
		if tc.base > 0 {
			if got, err := p.sumTo(int64(len(data)) - 10); err != nil || got != hashHex(data[:len(data)-10]) {
				t.Errorf("%s: sum of the first bytes %s %v", tc.name, got, err)
			}
		}
	}
}

// The import of a grown file whose state is kept, crashed at every write:
// the next import brings each session to the file, with the events of an
// import that did not crash (a state written for lines that a crash then
// lost does not match them, and is passed over).
func TestImportStateCrashSweep(t *testing.T) {
	setImportStateMin(t, 0)
	for _, chunk := range []int{0, 300} {
		t.Run(fmt.Sprint("chunks of ", chunk), func(t *testing.T) { cutLineCrashSweep(t, chunk, true) })
	}
}

// bothWays is a file imported step by step twice, once keeping the import
// state of every file and once keeping none (importBothWays).
type bothWays struct {
	format string // FormatClaudeCode when ""
	src    string
	chunk  int // ImportOptions.ChunkBytes
	steps  int
	// step writes the file, and what lies beside it, as it is at step i.
	step func(i int, fsys *vfs.MemFS)
	// change, when not nil, is called when the import opens the file to
	// read it (its second open: readHead, then the read that checks the
	// bytes its session holds and, with a kept state, takes in the rest).
	change func(i int, fsys *vfs.MemFS)
	// dump is what an import made (default importDump and the file's note).
	dump func(t *testing.T, r *Rook, rep ImportReport) string
	// before and after, when not nil, look at each import of either way.
	before func(keep bool, i int, r *Rook)
	after  func(keep bool, i int, r *Rook, fsys *vfs.MemFS, rep ImportReport)
}

// importBothWays runs b both ways; it fails unless every import makes the
// same both ways, and returns what each made.
func importBothWays(t *testing.T, b bothWays) []string {
	t.Helper()
	if b.format == "" {
		b.format = FormatClaudeCode
	}
	if b.dump == nil {
		b.dump = func(t *testing.T, r *Rook, rep ImportReport) string { return importDump(t, r, rep) + rep.Files[0].Note }
	}
	run := func(keep bool) []string {
		setImportStateMin(t, math.MaxInt64)
		if keep {
			setImportStateMin(t, 0)
		}
		fsys := vfs.NewMem()
		r := testRook(t, fsys)
		var dumps []string
		for i := range b.steps {
			b.step(i, fsys)
			if b.before != nil {
				b.before(keep, i, r)
			}
			if b.change != nil {
				opens := 0
				fsys.SetHook(func(op vfs.Op, path string) error {
					if op == vfs.OpOpenRead && path == b.src {
						if opens++; opens == 2 {
							fsys.SetHook(nil)
							b.change(i, fsys)
						}
					}
					return nil
				})
			}
			rep, err := r.Import(ImportOptions{Format: b.format, Paths: []string{b.src}, ChunkBytes: b.chunk})
			fsys.SetHook(nil)
			if err != nil {
				t.Fatal(err)
			}
			if b.after != nil {
				b.after(keep, i, r, fsys, rep)
			}
			dumps = append(dumps, b.dump(t, r, rep))
		}
		return dumps
	}
	with, without := run(true), run(false)
	// SideSeen is a time of the file system's clock, which the state
	// files' writes move on: the one way's is not the other's.
	sideSeen := regexp.MustCompile(`SideSeen:[0-9]+`)
	for i := range with {
		if sideSeen.ReplaceAllString(with[i], "SideSeen:<t>") != sideSeen.ReplaceAllString(without[i], "SideSeen:<t>") {
			t.Fatalf("%s %s, chunks of %d, import %d: from the kept state:\n%s\nmapped again:\n%s", b.format, b.src, b.chunk, i, with[i], without[i])
		}
	}
	return with
}

// importStepsBothWays is importBothWays of a Claude Code file src.
func importStepsBothWays(t *testing.T, src string, chunk, steps int, step func(i int, fsys *vfs.MemFS)) []string {
	t.Helper()
	return importBothWays(t, bothWays{src: src, chunk: chunk, steps: steps, step: step})
}

// writeSteps is a step of importStepsBothWays that writes src as the
// lines of the steps so far.
func writeSteps(t *testing.T, src string, steps [][]string) func(i int, fsys *vfs.MemFS) {
	return func(i int, fsys *vfs.MemFS) {
		var lines []string
		for _, s := range steps[:i+1] {
			lines = append(lines, s...)
		}
		writeSource(t, fsys, src, lines, "")
	}
}

// The file backups the lines before named are in the state: a snapshot
// that names one again, after the state, captures nothing new.
func TestImportStateKeepsTheBackupsCaptured(t *testing.T) {
	snap := `{"type":"file-history-snapshot","messageId":"m2","snapshot":{"messageId":"m2","trackedFileBackups":{"a.txt":{"backupFileName":"h1@v1","version":1,"backupTime":"2026-02-10T21:01:09.000Z"}},"timestamp":"2026-02-10T21:01:09.000Z"},"isSnapshotUpdate":true}`
	steps := [][]string{
		append(claudeLines("s3", 1), snap),
		claudeLines("s3", 2),
		append([]string{snap}, claudeLines("s3", 3)...),
	}
	src := "/home/u/.claude/projects/-home-u-proj/s3.jsonl"
	write := writeSteps(t, src, steps)
	dumps := importStepsBothWays(t, src, 0, len(steps), func(i int, fsys *vfs.MemFS) {
		if i == 0 {
			writeSourceFile(t, fsys, "/home/u/.claude/file-history/s3/h1@v1", []byte("before\n"))
		}
		write(i, fsys)
	})
	with := dumps[len(dumps)-1]
	if n := strings.Count(with, captureBackupsLabel); n != 1 {
		t.Fatalf("%d captures of the backups, want 1:\n%s", n, with)
	}
}

// A file as big as importStateNewMin keeps its state from its first
// import: the first import of it grown does not map it whole again.
func TestImportStateOfABigNewFile(t *testing.T) {
	setImportStateMin(t, 0)
	old := importStateNewMin
	t.Cleanup(func() { importStateNewMin = old })
	lines := claudeLines("n", 1)
	src := "/src/-w/n.jsonl"
	for _, tc := range []struct {
		newMin int64
		kept   bool
	}{{1 << 40, false}, {1, true}} {
		importStateNewMin = tc.newMin
		fsys := vfs.NewMem()
		r := testRook(t, fsys)
		writeSource(t, fsys, src, lines, "")
		id := *mustImport(t, r, FormatClaudeCode, src).Files[0].Session
		if _, err := fsys.Stat(r.importStatePath(id)); (err == nil) != tc.kept {
			t.Errorf("new file, state kept from %d bytes: stat of its state %v, want kept %v", tc.newMin, err, tc.kept)
		}
	}
	// And it is the state the grown file's import uses: the same as
	// without, at every step.
	importStateNewMin = 1
	steps := [][]string{lines, claudeLines("n", 2), claudeLines("n", 3)}
	for _, chunk := range []int{0, 300} {
		importStepsBothWays(t, src, chunk, len(steps), writeSteps(t, src, steps))
	}
}

// A .zst transcript's state follows bytes of its decompressed stream,
// more than the file holds on disk: gc keeps it while the file is there.
func TestGCKeepsTheImportStateOfAZstTranscript(t *testing.T) {
	setImportStateMin(t, 0)
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	src := "/src/-w/z.jsonl.zst"
	lines := claudeLines("z", 3)
	writeZst(t, fsys, src, writeSourceBytes(lines[:2], ""))
	id := *mustImport(t, r, FormatClaudeCode, src).Files[0].Session
	writeZst(t, fsys, src, writeSourceBytes(lines, ""))
	mustImport(t, r, FormatClaudeCode, src)
	if _, err := fsys.Stat(r.importStatePath(id)); err != nil {
		t.Fatalf("a .zst file seen growing keeps no state: %v", err)
	}
	if rep, err := r.GC(0, false, nil, nil); err != nil || rep.ImportStates != 0 {
		t.Fatalf("gc: %d import states removed, %v", rep.ImportStates, err)
	}
	if _, err := fsys.Stat(r.importStatePath(id)); err != nil {
		t.Fatalf("gc removed the state of a .zst file still there: %v", err)
	}
}
