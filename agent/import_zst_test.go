package agent

import (
	"bytes"
	"io"
	"os"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/rookhq/rook/internal/vfs"
)

// A .zst rollout keeps its import state from its first import (a zstd
// stream cannot be read from where its session ends, so without it the
// first growth mapped every line again), and an import of it grown, or
// recompressed unchanged, decompresses the bytes its session holds only
// through the hash: what it holds in memory is what the file grew by.
func TestImportOfAGrownZstReadsOnlyItsTail(t *testing.T) {
	setImportStateMin(t, 0)
	data, err := os.ReadFile(codexMainFile)
	if err != nil {
		t.Fatal(err)
	}
	cut := len(data) / 2
	for data[cut-1] != '\n' {
		cut++
	}
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	src := "/codex/2026/01/02/rollout-2026-01-02T03-04-05-" + codexMainID + ".jsonl.zst"
	writeZst(t, fsys, src, data[:cut])
	id := *mustImport(t, r, FormatCodex, src).Files[0].Session
	if !stateUsable(t, r, FormatCodex, src) {
		t.Fatal("a .zst imported once keeps no import state: its first growth maps every line again")
	}
	held := sourceFile{path: src, held: int64(cut), heldBy: id}
	for _, m := range sessionMetas(t, r) {
		held.heldSum = m.Source.SHA256
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{{"recompressed unchanged", data[:cut]}, {"grown", data}} {
		writeZst(t, fsys, src, tc.data)
		fi, err := fsys.Stat(src)
		if err != nil {
			t.Fatal(err)
		}
		f := held
		f.size = fi.Size()
		p := r.prepareSource(FormatCodex, f, false, MinCutString, importChunkBytes)
		if p.err != nil || p.base != int64(cut) || len(p.data) != len(tc.data)-cut || p.full != hashHex(tc.data) || !p.zst {
			t.Fatalf("%s: read from %d, %d bytes in memory, err %v: want only the %d bytes after the %d its session holds",
				tc.name, p.base, len(p.data), p.err, len(tc.data)-cut, cut)
		}
	}
	rep := mustImport(t, r, FormatCodex, src)
	if f := rep.Files[0]; f.Status != ImportGrown || *f.Session != id {
		t.Fatalf("grown: %+v", f)
	}
	mustExport(t, r, id, data)
	writeZst(t, fsys, src, data) // recompressed, unchanged
	if f := mustImport(t, r, FormatCodex, src).Files[0]; f.Status != ImportUnchanged || *f.Session != id {
		t.Fatalf("recompressed unchanged: %+v", f)
	}
}

// SourceDigest reads a file as an import does: a .zst decompressed, so
// that its size and SHA-256 are ExportSource's when it holds the session's
// bytes (export onto a session's own source file compares the two).
func TestSourceDigestOfZstIsItsJSONL(t *testing.T) {
	data, err := os.ReadFile(codexMainFile)
	if err != nil {
		t.Fatal(err)
	}
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	src := "/codex/2026/01/02/rollout-2026-01-02T03-04-05-" + codexMainID + ".jsonl.zst"
	writeZst(t, fsys, src, data)
	id := *mustImport(t, r, FormatCodex, src).Files[0].Session
	x, err := r.ExportSource(id, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	size, sum, err := r.SourceDigest(src)
	if err != nil || size != x.Bytes || sum != x.SHA256 || sum != hashHex(data) {
		t.Fatalf("SourceDigest(%s) = %d, %s, %v: want the export's %d, %s", src, size, sum, err, x.Bytes, x.SHA256)
	}
	plain := "/codex/plain.jsonl"
	writeSourceFile(t, fsys, plain, data[:len(data)-1])
	if size, sum, err := r.SourceDigest(plain); err != nil || size != int64(len(data)-1) || sum != hashHex(data[:len(data)-1]) {
		t.Fatalf("SourceDigest(%s) = %d, %s, %v: want its own bytes", plain, size, sum, err)
	}
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	z := enc.EncodeAll(data, nil)
	writeSourceFile(t, fsys, src, z[:len(z)/2])
	if _, _, err := r.SourceDigest(src); err == nil {
		t.Fatal("SourceDigest of a .zst cut short: no error")
	}
}

// The progress of `rook import codex` on a terminal counts the files' own
// bytes, a .zst's compressed ones. Its place in a .zst's decompressed
// lines was reported as bytes of the file (done+min(offset, size)): the
// first chunk was past the compressed size, and the bar read "100.0%  7.8
// KiB of 7.8 KiB" for the whole import of a rollout of 68.7 MiB. The place
// is scaled to the file's compressed size (compressedAt): the bar moves
// through it.
func TestZstImportProgressIsNotDoneAtItsFirstChunk(t *testing.T) {
	one, err := os.ReadFile(codexMainFile)
	if err != nil {
		t.Fatal(err)
	}
	// The rollout's first line (session_meta) once, then its other lines
	// many times: highly compressible, as real rollouts are.
	nl := bytes.IndexByte(one, '\n') + 1
	data := append([]byte{}, one[:nl]...)
	for i := 0; i < 200; i++ {
		data = append(data, one[nl:]...)
	}
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	src := "/codex/2026/01/02/rollout-2026-01-02T03-04-05-" + codexMainID + ".jsonl.zst"
	writeZst(t, fsys, src, data)
	calls := importProgressCalls(t, r, src, ImportNew)
	if len(calls) < 3 {
		t.Fatalf("%d progress call(s) for %d bytes taken in chunks of 64 KiB: want several", len(calls), len(data))
	}
	first := calls[0]
	if first.done >= first.total {
		t.Errorf("the first progress report, after the first 64 KiB of %d decompressed bytes, already says %d of %d (100%%): "+
			"the progress bar sits at 100%% for the whole import of a .zst rollout", len(data), first.done, first.total)
	}
	atEnd := 0
	for _, c := range calls {
		if c.done >= c.total {
			atEnd++
		}
	}
	if atEnd > 2 {
		t.Errorf("%d of %d progress reports say 100%% while the .zst's lines are still being taken in: %v", atEnd, len(calls), calls)
	}
}

// A .zst rollout that grew since it was imported (Codex appends a frame):
// `rook import codex` on a terminal shows a progress bar counting the
// file's compressed bytes (compressedAt). Taking up the grown file (the import state restored, its
// probe read on) must still move through the file, not report 100% from
// the first chunk, and never go backwards.
func TestGrownZstImportProgressMovesThroughIt(t *testing.T) {
	one, err := os.ReadFile(codexMainFile)
	if err != nil {
		t.Fatal(err)
	}
	nl := bytes.IndexByte(one, '\n') + 1
	first := append([]byte{}, one...)
	var more []byte
	for i := 0; i < 200; i++ {
		more = append(more, one[nl:]...)
	}
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	src := "/codex/2026/01/02/rollout-2026-01-02T03-04-05-" + codexMainID + ".jsonl.zst"
	z1 := enc.EncodeAll(first, nil)
	writeSourceFile(t, fsys, src, z1)
	if _, err := r.Import(ImportOptions{Format: FormatCodex, Paths: []string{src}, ChunkBytes: 64 << 10}); err != nil {
		t.Fatal(err)
	}
	writeSourceFile(t, fsys, src, append(append([]byte{}, z1...), enc.EncodeAll(more, nil)...))
	calls := importProgressCalls(t, r, src, ImportGrown)
	if len(calls) < 3 {
		t.Fatalf("%d progress call(s): want several", len(calls))
	}
	atEnd := 0
	for i, c := range calls {
		if c.done > c.total {
			t.Errorf("progress %d above 100%%: %d of %d", i, c.done, c.total)
		}
		if i > 0 && c.done < calls[i-1].done {
			t.Errorf("progress goes backwards: %v then %v", calls[i-1], c)
		}
		if c.done >= c.total {
			atEnd++
		}
	}
	if atEnd > 2 {
		t.Errorf("%d of %d progress reports say 100%% while the grown .zst's lines are still being taken in: %v", atEnd, len(calls), calls)
	}
}

// progressCall is one call of an import's progress: done of total bytes.
type progressCall struct{ done, total int64 }

// importProgressCalls imports the Codex rollout src in chunks of 64 KiB,
// wants its file's status to be want, and returns the progress calls made.
func importProgressCalls(t *testing.T, r *Rook, src string, want string) []progressCall {
	t.Helper()
	var calls []progressCall
	rep, err := r.Import(ImportOptions{Format: FormatCodex, Paths: []string{src}, ChunkBytes: 64 << 10,
		Progress: func(done, total int64) { calls = append(calls, progressCall{done, total}) }})
	if err != nil {
		t.Fatal(err)
	}
	if f := rep.Files[0]; f.Status != want {
		t.Fatalf("import: %+v", f)
	}
	return calls
}
