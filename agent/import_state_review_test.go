package agent

import (
	"math"
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
