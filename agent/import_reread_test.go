package agent

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// What the user does: imports a live Claude Code session (`rook import
// claude-code`) while a tool is running, so the transcript ends, at that
// import, in the middle of a run of progress lines; the file grows and is
// imported again (the normal life of an active session: "importing again
// adds only the lines a file gained"). Later a segment of the store is
// damaged, and `rook store verify` sends them to `rook import claude-code
// --reread PATH`, which must put the damaged objects back.
//
// An import stores a run of notes (progress lines) as one object, and at
// the end of a file it stores the run it has: the first import stored the
// run [p], the second [q ...], where a whole read stores [p q]. The
// import records where it stopped (Source.Stops), and --reread reads the
// file stopping there too, which makes [p] again.
func TestRereadRepairsAFileGrownInARunOfNotes(t *testing.T) {
	lines := append(claudeLines("g", 1), claudeLines("g", 2)...)
	// Line 5 is the first of two progress lines (claudeLines): the file is
	// imported once holding lines 1-5, then whole.
	dir := t.TempDir()
	r := diskRook(t, filepath.Join(dir, "home"))
	src := filepath.Join(dir, "p", "g.jsonl")
	if err := os.MkdirAll(filepath.Dir(src), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, writeSourceBytes(lines[:5], ""), 0o600); err != nil {
		t.Fatal(err)
	}
	id := *mustImport(t, r, FormatClaudeCode, src).Files[0].Session
	s, err := r.Log.Summary(id)
	if err != nil {
		t.Fatal(err)
	}
	last, err := r.Log.Read(id, s.Events-1, 1) // the run [p], stored at the file's end
	if err != nil {
		t.Fatal(err)
	}
	full := writeSourceBytes(lines, "")
	if err := os.WriteFile(src, full, 0o600); err != nil {
		t.Fatal(err)
	}
	if f := mustImport(t, r, FormatClaudeCode, src).Files[0]; f.Status != ImportGrown {
		t.Fatalf("grown: %+v", f)
	}
	mustExport(t, r, id, full)
	r = damagedStore(t, r, last[0].Body, "corrupt")
	rep, err := r.Reread(ImportOptions{Format: FormatClaudeCode, Paths: []string{src}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if x, err := r.ExportSource(id, &out); err != nil || !x.Exact || !bytes.Equal(out.Bytes(), full) {
		t.Fatalf("after --reread (%+v), the session (grown once, no line ever cut short) still does not export: %+v %v", rep, x, err)
	}
}

// writeAged writes data at path (compressed whole, for a .zst), dated an
// hour ago: a last line without its newline is one a crash cut short, taken
// in as it is, not one being written (beingWritten).
func writeAged(t *testing.T, path string, data []byte) {
	t.Helper()
	if filepath.Ext(path) == ".zst" {
		enc, err := zstd.NewWriter(nil)
		if err != nil {
			t.Fatal(err)
		}
		data = enc.EncodeAll(data, nil)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
}

// importedInSteps is a store on disk that imported the file at src as each
// of versions in turn, as the file was at each import, and the session the
// last import left.
func importedInSteps(t *testing.T, format, src string, versions ...[]byte) (*Rook, eventlog.ID) {
	t.Helper()
	return importedInChunks(t, format, 0, src, versions...)
}

// importedInChunks is importedInSteps, each import reading files over
// chunk bytes a chunk at a time (0: as Import does).
func importedInChunks(t *testing.T, format string, chunk int, src string, versions ...[]byte) (*Rook, eventlog.ID) {
	t.Helper()
	r := diskRook(t, filepath.Join(t.TempDir(), "home"))
	var id *eventlog.ID
	for i, v := range versions {
		writeAged(t, src, v)
		f := importWithChunk(t, r, format, chunk, src).Files[0]
		if f.Status == ImportFailed || f.Status == ImportRewritten || f.Session == nil || id != nil && *f.Session != *id {
			t.Fatalf("import %d of %d: %+v", i+1, len(versions), f)
		}
		id = f.Session
	}
	return r, *id
}

// damageEveryRecord flips a byte in every segment record of the store (an
// object packed with others is damaged with them), and opens the store
// again: how many objects then do not read.
func damageEveryRecord(t *testing.T, r *Rook) (*Rook, int) {
	t.Helper()
	objs, err := r.Store.List(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	records := map[cas.ObjectInfo]bool{}
	for _, o := range objs {
		if !o.Inline {
			records[cas.ObjectInfo{Segment: o.Segment, Offset: o.Offset}] = true
		}
	}
	home := r.Store.Home()
	r.Close()
	for rec := range records {
		seg := filepath.Join(home, cas.SegmentsDir, fmt.Sprintf("%08d.seg", rec.Segment))
		b, err := os.ReadFile(seg)
		if err != nil {
			t.Fatal(err)
		}
		b[rec.Offset+40] ^= 0xff
		if err := os.WriteFile(seg, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r, err = Open(home, Options{FS: vfs.OS, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, unreadable(t, r)
}

// unreadable counts the store's objects that do not read back.
func unreadable(t *testing.T, r *Rook) int {
	t.Helper()
	objs, err := r.Store.List(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, o := range objs {
		if _, err := r.Store.Get(o.ID); err != nil {
			n++
		}
	}
	return n
}

// rereadRepairs damages every record of r, rereads src, and checks that
// every object reads back again and session id exports want.
func rereadRepairs(t *testing.T, r *Rook, format, src string, id eventlog.ID, want []byte, what string) {
	t.Helper()
	rereadRepairsInChunks(t, r, format, 0, src, id, want, what)
}

// rereadRepairsInChunks is rereadRepairs, reading in chunks as
// importedInChunks does.
func rereadRepairsInChunks(t *testing.T, r *Rook, format string, chunk int, src string, id eventlog.ID, want []byte, what string) {
	t.Helper()
	r, damaged := damageEveryRecord(t, r)
	if damaged == 0 {
		t.Fatalf("%s: nothing damaged", what)
	}
	rep, err := r.Reread(ImportOptions{Format: format, Paths: []string{src}, ChunkBytes: chunk}, nil)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if n := unreadable(t, r); n != 0 || rep.Restored != damaged || len(rep.Failed) != 0 {
		t.Fatalf("%s: %d of %d damaged object(s) still do not read after --reread (%+v)", what, n, damaged, rep)
	}
	var out bytes.Buffer
	// (Ahead: lines past what the metadata records, an import cut short.)
	if x, err := r.ExportSource(id, &out); err != nil || !x.Exact && !x.Ahead || !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("%s: after --reread, the session does not export: %+v %v", what, x, err)
	}
}

// lineEnds are where data's lines end.
func lineEnds(data []byte) []int {
	var ends []int
	for i, c := range data {
		if c == '\n' {
			ends = append(ends, i+1)
		}
	}
	return ends
}

// A Claude Code file imported once at each of its line ends, then whole:
// whatever the line the first import ended at (a note of a run, a line of
// a message's group, a tool result), --reread makes every object again;
// read whole or in chunks, with the mapper's state kept or not (the
// imports read again from where the session ends, the bytes before it
// only hashed).
func TestRereadRepairsAClaudeFileGrownAtEveryLine(t *testing.T) {
	full := writeSourceBytes(append(claudeLines("g", 1), claudeLines("g", 2)...), "")
	src := filepath.Join(t.TempDir(), "p", "g.jsonl")
	for _, stateMin := range []int64{1 << 40, 1} {
		setImportStateMin(t, stateMin)
		for _, chunk := range []int{0, 300} {
			for _, end := range lineEnds(full)[:len(lineEnds(full))-1] {
				r, id := importedInChunks(t, FormatClaudeCode, chunk, src, full[:end], full)
				rereadRepairsInChunks(t, r, FormatClaudeCode, chunk, src, id, full,
					fmt.Sprintf("state kept from %d bytes, chunks of %d: grown from %d bytes", stateMin, chunk, end))
			}
		}
	}
}

// The same of a Codex rollout, plain and .zst (read again from its start
// at each import: a zstd stream does not seek; --reread stops reading its
// decompressed stream), whole and in chunks: its notes (event_msg lines)
// are runs too.
func TestRereadRepairsACodexRolloutGrownAtEveryLine(t *testing.T) {
	full, err := os.ReadFile(codexMainFile)
	if err != nil {
		t.Fatal(err)
	}
	ends := lineEnds(full)
	for _, ext := range []string{"", ".zst"} {
		src := filepath.Join(t.TempDir(), "sessions", filepath.Base(codexMainFile)+ext)
		for _, chunk := range []int{0, 1000} {
			for _, end := range ends[:len(ends)-1] {
				r, id := importedInChunks(t, FormatCodex, chunk, src, full[:end], full)
				rereadRepairsInChunks(t, r, FormatCodex, chunk, src, id, full, fmt.Sprintf("%s in chunks of %d grown from %d bytes", filepath.Base(src), chunk, end))
			}
		}
	}
}

// A file grown three times, each import ending at another kind of
// boundary: in a run of notes; in a line a crash cut short (no newline,
// taken in as it was, and taken in again whole by the next import); after
// a line of an assistant message's group; then whole, and grown since
// without an import. The imports that stopped where a read going on
// would not record where (Source.Stops); --reread stops there too, and at
// where the last import stopped, and puts every object back.
func TestRereadRepairsAFileGrownThreeTimes(t *testing.T) {
	lines := append(append(claudeLines("g", 1), claudeLines("g", 2)...), claudeLines("g", 3)...)
	at := func(n int) int { return len(writeSourceBytes(lines[:n], "")) }
	full := writeSourceBytes(lines, "")
	inRun := at(5)              // after the first progress line of turn 1
	cut := at(10) + 20          // 20 bytes into turn 2's first assistant line
	inGroup := at(11)           // after turn 2's thinking line, its message going on
	whole := at(len(lines) - 4) // the snapshot and all of turn 3 but its last 4 lines
	grownSince := full          // not imported
	src := filepath.Join(t.TempDir(), "p", "g.jsonl")
	r, id := importedInSteps(t, FormatClaudeCode, src, full[:inRun], full[:cut], full[:inGroup], full[:whole])
	m, err := r.Log.ReadMeta(id)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{int64(inRun), int64(cut)}; !slices.Equal(m.Source.Stops, want) {
		t.Fatalf("stops recorded %v, want %v (in a run of notes, in a cut line; not after a whole line of a message)", m.Source.Stops, want)
	}
	writeAged(t, src, grownSince)
	rereadRepairs(t, r, FormatClaudeCode, src, id, full[:whole], "grown three times")
}

// A file that changed since it was imported (not only grown: a line of
// it rewritten) makes other objects: --reread puts back only those the
// bytes still make, adds none, and what is left does not read (the CLI
// then says so, naming `rook session rm` and an import again). Objects
// are content-addressed: no other bytes are put for a damaged one.
func TestRereadOfAFileChangedSinceLeavesWhatItCannotMake(t *testing.T) {
	full := writeSourceBytes(append(claudeLines("g", 1), claudeLines("g", 2)...), "")
	src := filepath.Join(t.TempDir(), "p", "g.jsonl")
	end := lineEnds(full)[4] // in turn 1's run of notes
	r, id := importedInSteps(t, FormatClaudeCode, src, full[:end], full)
	objs, err := r.Store.List(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	r, damaged := damageEveryRecord(t, r)
	writeAged(t, src, bytes.Replace(full, []byte("fix the server, turn 1"), []byte("fix the SERVER, turn 1"), 1))
	rep, err := r.Reread(ImportOptions{Format: FormatClaudeCode, Paths: []string{src}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	left := unreadable(t, r)
	if left == 0 || rep.Restored+left != damaged {
		t.Fatalf("of %d damaged, %d restored and %d left (%+v): want some left, the rest restored", damaged, rep.Restored, left, rep)
	}
	after, err := r.Store.List(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(objs) {
		t.Fatalf("the store held %d objects, %d after --reread: it added some", len(objs), len(after))
	}
	if _, err := r.ExportSource(id, &bytes.Buffer{}); err == nil {
		t.Fatal("the session exports, with objects left damaged")
	}
}

// A session imported in steps before rook recorded where its imports
// stopped (no Source.Stops) has only where the last one stopped to stop
// at: an object an earlier step stored at the file's end (a run of notes)
// is not made again, and is left (the README says so).
func TestRereadOfASessionWithoutStopsLeavesTheirObjects(t *testing.T) {
	full := writeSourceBytes(append(claudeLines("g", 1), claudeLines("g", 2)...), "")
	src := filepath.Join(t.TempDir(), "p", "g.jsonl")
	end := lineEnds(full)[4] // in turn 1's run of notes
	r, id := importedInSteps(t, FormatClaudeCode, src, full[:end], full)
	m, err := r.Log.ReadMeta(id)
	if err != nil {
		t.Fatal(err)
	}
	// (Both imports ended in a run of notes: the file ends in a snapshot
	// line.)
	if want := []int64{int64(end), int64(len(full))}; !slices.Equal(m.Source.Stops, want) {
		t.Fatalf("stops %v, want %v", m.Source.Stops, want)
	}
	m.Source.Stops = nil // as a rook before them wrote it
	if err := r.Log.UpdateMeta(m); err != nil {
		t.Fatal(err)
	}
	r, damaged := damageEveryRecord(t, r)
	rep, err := r.Reread(ImportOptions{Format: FormatClaudeCode, Paths: []string{src}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if left := unreadable(t, r); left == 0 || rep.Restored+left != damaged {
		t.Fatalf("of %d damaged, %d restored and %d left (%+v): want the run the first import stored left", damaged, rep.Restored, left, rep)
	}
}

// An import cut short after its lines and before its metadata (a crash)
// leaves its stop unrecorded, the session's lines going on past the
// size the metadata says: the next import records it, with its own, and
// --reread then stops there. Before, --reread of the file grown since
// cannot make the object stored there (where the lines end is in that
// object): it says what is left.
func TestRereadRepairsAfterAnImportCutShortBeforeItsMetadata(t *testing.T) {
	lines := append(append(claudeLines("g", 1), claudeLines("g", 2)...), claudeLines("g", 3)...)
	at := func(n int) int { return len(writeSourceBytes(lines[:n], "")) }
	full := writeSourceBytes(lines, "")
	first, second := at(5), at(13) // each in a run of notes
	for _, importedSince := range []bool{false, true} {
		src := filepath.Join(t.TempDir(), "p", "g.jsonl")
		r, id := importedInSteps(t, FormatClaudeCode, src, full[:first], full[:second])
		// The metadata as the first import left it: the second's lines are
		// in, their metadata never written.
		m, err := r.Log.ReadMeta(id)
		if err != nil {
			t.Fatal(err)
		}
		src1 := *m.Source
		src1.Size, src1.SHA256, src1.Stat, src1.Stops = int64(first), hashHex(full[:first]), nil, []int64{int64(first)}
		m.Source = &src1
		if err := r.Log.UpdateMeta(m); err != nil {
			t.Fatal(err)
		}
		writeAged(t, src, full) // grown since
		if importedSince {
			if f := mustImport(t, r, FormatClaudeCode, src).Files[0]; f.Status != ImportGrown {
				t.Fatalf("grown after the crash: %+v", f)
			}
			if m, err = r.Log.ReadMeta(id); err != nil || !slices.Contains(m.Source.Stops, int64(second)) {
				t.Fatalf("the stop of the import cut short is not recorded: %+v %v", m.Source, err)
			}
			rereadRepairs(t, r, FormatClaudeCode, src, id, full, "imported since the crash")
			continue
		}
		r, damaged := damageEveryRecord(t, r)
		rep, err := r.Reread(ImportOptions{Format: FormatClaudeCode, Paths: []string{src}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if left := unreadable(t, r); left == 0 || rep.Restored+left != damaged {
			t.Fatalf("not imported since the crash: of %d damaged, %d restored and %d left (%+v): want the run the import cut short stored left", damaged, rep.Restored, left, rep)
		}
	}
}
