package agent

import (
	"math"
	"strings"
	"testing"

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
	run := func(keep bool) string {
		setImportStateMin(t, math.MaxInt64)
		if keep {
			setImportStateMin(t, 0)
		}
		fsys := vfs.NewMem()
		r := testRook(t, fsys)
		src := "/home/u/.claude/projects/-home-u-proj/s5.jsonl"
		var lines []string
		var rep ImportReport
		for i, s := range steps {
			if i == 2 {
				writeSourceFile(t, fsys, "/home/u/.claude/file-history/s5/h1@v1", []byte("before\n"))
			}
			lines = append(lines, s...)
			writeSource(t, fsys, src, lines, "")
			rep = mustImport(t, r, FormatClaudeCode, src)
		}
		return importDump(t, r, rep)
	}
	with, without := run(true), run(false)
	if with != without {
		t.Fatalf("from the kept state:\n%s\nmapped again:\n%s", with, without)
	}
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
	run := func(keep bool) string {
		setImportStateMin(t, math.MaxInt64)
		if keep {
			setImportStateMin(t, 0)
		}
		fsys := vfs.NewMem()
		r := testRook(t, fsys)
		src := "/src/-w/s6.jsonl"
		data := ""
		var rep ImportReport
		for _, s := range steps {
			data += s
			writeSourceFile(t, fsys, src, []byte(data))
			rep = mustImport(t, r, FormatClaudeCode, src)
		}
		return importDump(t, r, rep)
	}
	with, without := run(true), run(false)
	if with != without {
		t.Fatalf("from the kept state:\n%s\nmapped again:\n%s", with, without)
	}
}
