package agent

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// A parent whose file grows has every fork linked to it counted again
// (recountCopied), each against the parent's keys, which were read
// again for every fork. The parent's events are read once an import,
// however many forks it has (each fork's own are still read).
func TestGrownParentIsReadOnceForAllItsForks(t *testing.T) {
	parentReads := func(forks int) int64 {
		fsys := vfs.NewMem()
		r := testRook(t, fsys)
		dir := "/p/-home-u-proj"
		parent := append(claudeLines("P", 1), claudeLines("P", 2)...)
		writeSource(t, fsys, dir+"/P.jsonl", parent, "")
		for k := range forks {
			fork := append(claudeForkLines("P", fmt.Sprintf("F%d", k), 1), claudeForkLines("P", fmt.Sprintf("F%d", k), 2)...)
			writeSource(t, fsys, fmt.Sprintf("%s/F%d.jsonl", dir, k), fork, "")
		}
		pid := *fileByPath(t, mustImport(t, r, FormatClaudeCode, dir), dir+"/P.jsonl").Session
		writeSource(t, fsys, dir+"/P.jsonl", append(parent, claudeLines("P", 3)...), "")
		var reads atomic.Int64
		fsys.SetHook(func(op vfs.Op, name string) error {
			if op == vfs.OpRead && strings.Contains(name, pid.String()) {
				reads.Add(1)
			}
			return nil
		})
		rep := mustImport(t, r, FormatClaudeCode, dir)
		fsys.SetHook(nil)
		if f := fileByPath(t, rep, dir+"/P.jsonl"); f.Status != ImportGrown {
			t.Fatalf("the parent: %+v", f)
		}
		return reads.Load()
	}
	one, six := parentReads(1), parentReads(6)
	t.Logf("reads of the parent's events: %d with one fork, %d with six", one, six)
	if six > one {
		t.Errorf("the parent's events read %d times with six forks, %d with one: once per fork", six, one)
	}
}
