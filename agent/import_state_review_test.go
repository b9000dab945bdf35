package agent

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// The file backups named by the lines an import takes in are all in the
// state it keeps, as they are in the set an import without the state
// notes from the lines before (mapChunk): not only those captureBackups
// captured. Here the session's file-history directory is missing when the
// snapshot is taken in (nothing captured), and there when the file grows
// with a snapshot naming the same backup again.
func TestImportStateKeepsTheBackupsNamedNotCaptured(t *testing.T) {
	snap := `{"type":"file-history-snapshot","messageId":"m2","snapshot":{"messageId":"m2","trackedFileBackups":{"a.txt":{"backupFileName":"h1@v1","version":1,"backupTime":"2026-02-10T21:01:09.000Z"}},"timestamp":"2026-02-10T21:01:09.000Z"},"isSnapshotUpdate":true}`
	steps := [][]string{
		claudeLines("s5", 1),
		append([]string{snap}, claudeLines("s5", 2)...),
		append([]string{snap}, claudeLines("s5", 3)...),
	}
	src := "/home/u/.claude/projects/-home-u-proj/s5.jsonl"
	write := writeSteps(t, src, steps)
	importStepsBothWays(t, src, 0, len(steps), func(i int, fsys *vfs.MemFS) {
		if i == 2 {
			writeSourceFile(t, fsys, "/home/u/.claude/file-history/s5/h1@v1", []byte("before\n"))
		}
		write(i, fsys)
	})
}

// A last line that parsed without its newline, to which the file then
// adds more than its newline (the rest of its line: a note): an import
// without the state maps the whole line (which no longer parses) with the
// lines before, one from the state kept the line as it parsed.
func TestImportStateLineGrownPastItsEnd(t *testing.T) {
	l1, l2, l3 := claudeLines("s6", 1), claudeLines("s6", 2), claudeLines("s6", 3)
	// The tool call of turn 2 ends the file without its newline; its
	// result comes in the third import.
	call := 3
	steps := []string{
		strings.Join(l1, "\n") + "\n" + strings.Join(l2[:call+1], "\n"),
		`{"type":"progress","x":1}` + "\n" + strings.Join(l2[call+1:call+3], "\n") + "\n",
		strings.Join(l2[call+3:], "\n") + "\n" + strings.Join(l3, "\n") + "\n",
	}
	src := "/src/-w/s6.jsonl"
	importStepsBothWays(t, src, 0, len(steps), func(i int, fsys *vfs.MemFS) {
		writeSourceFile(t, fsys, src, []byte(strings.Join(steps[:i+1], "")))
	})
}

// A grown file whose import stops before a line naming a file backup not
// on disk yet (heldForBackups), imported from the state before and after:
// the same events as without the state, at every step.
func TestImportStateHeldForBackups(t *testing.T) {
	snap := `{"type":"file-history-snapshot","messageId":"m9","snapshot":{"messageId":"m9","trackedFileBackups":{"a.txt":{"backupFileName":"h9@v1","version":1,"backupTime":"2026-11-30T09:59:50.000Z"}},"timestamp":"2026-11-30T09:59:50.000Z"},"isSnapshotUpdate":true}`
	steps := [][]string{
		claudeLines("s7", 1),
		claudeLines("s7", 2),
		append(append(claudeLines("s7", 3)[:4], snap), claudeLines("s7", 3)[4:]...),
		nil, // the backup lands
		append([]string{snap}, claudeLines("s7", 4)...),
	}
	src := "/home/u/.claude/projects/-home-u-proj/s7.jsonl"
	write := writeSteps(t, src, steps)
	for _, chunk := range []int{0, 300} {
		with := importStepsBothWays(t, src, chunk, len(steps), func(i int, fsys *vfs.MemFS) {
			switch i {
			case 0:
				writeSourceFile(t, fsys, "/home/u/.claude/file-history/s7/h0", []byte("x\n"))
			case 3:
				writeSourceFile(t, fsys, "/home/u/.claude/file-history/s7/h9@v1", []byte("before\n"))
			}
			write(i, fsys)
		})
		if chunk == 0 && !strings.Contains(with[2], "file backup(s)") {
			t.Fatalf("step 2 is not held for the backup:\n%s", with[2])
		}
	}
}

// A file read from where its session's state leaves off, found to be no
// grown session's after all (its session taken by a file at another path
// earlier in the import: no candidate is left), is read again whole: what
// its session records of it is what that second read took in, however the
// file changed in between.
func TestImportStateReadWholeAgainRecordsWhatItTook(t *testing.T) {
	setImportStateMin(t, 0)
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	src := "/src/-w/w.jsonl"
	lines := claudeLines("w", 1)
	writeSource(t, fsys, src, lines[:2], "")
	mustImport(t, r, FormatClaudeCode, src)
	writeSource(t, fsys, src, lines, "")
	id := *mustImport(t, r, FormatClaudeCode, src).Files[0].Session
	m, err := r.Log.ReadMeta(id)
	if err != nil {
		t.Fatal(err)
	}
	lines = append(lines, claudeLines("w", 2)...)
	data := writeSource(t, fsys, src, lines, "")
	f := sourceFile{path: src, size: int64(len(data)), held: m.Source.Size, heldBy: id, heldSum: m.Source.SHA256}
	prep := r.prepareSource(FormatClaudeCode, f, false, MinCutString, importChunkBytes)
	if prep.base == 0 {
		t.Fatal("not read from the state")
	}
	data = writeSource(t, fsys, src, append(lines, claudeLines("w", 3)...), "") // grown since
	names := &sourceNames{known: map[string]eventlog.Meta{}, atPath: map[string][]eventlog.Meta{}, movedAway: map[eventlog.ID]bool{},
		beside: map[string]bool{}, continuedIn: map[string]bool{}}
	rep := &ImportReport{}
	res := r.importFile(ImportOptions{Format: FormatClaudeCode, MinCut: MinCutString}, f, prep, names, rep, func(int64) {})
	if res.Session == nil {
		t.Fatalf("%+v", res)
	}
	if err := r.Log.Flush(); err != nil {
		t.Fatal(err)
	}
	got, err := r.Log.ReadMeta(*res.Session)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	x, err := r.ExportSource(*res.Session, &out)
	if err != nil {
		t.Fatal(err)
	}
	if got.Source.Size != x.Bytes || got.Source.SHA256 != hashHex(out.Bytes()) {
		t.Fatalf("%s: the session records %d bytes of its file (%s), holds %d (%s) of %d", res.Status, got.Source.Size, got.Source.SHA256, x.Bytes, hashHex(out.Bytes()), len(data))
	}
}
