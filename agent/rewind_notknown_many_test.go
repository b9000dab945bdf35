package agent

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"testing"
)

// A session whose subagent edited 400 files, its results (as Claude Code
// writes a subagent's) saying none of them: the refusal
// (NoFileBackupsError) says the reason once and names the first files of
// it; it named every file with its reason, in one line of 128 KB.
func TestNotKnownRefusalSizeForManyFiles(t *testing.T) {
	const n = 400
	e := newEditTranscript(t, "delegate") // :01
	at := func(p string) string { return filepath.Join(e.ws, p) }
	e.lines = append(e.lines, claudeTaskCall(e))
	sub := &editTranscript{dir: e.dir, ws: e.ws, n: e.n}
	sub.sidePrompt("edit them")
	files := tree{}
	for i := 0; i < n; i++ {
		p := fmt.Sprintf("src/pkg%03d/file%03d.go", i, i)
		sub.sideEdit(at(p), "old", "new")
		files[p] = "new\n"
	}
	e.lines = append(e.lines, claudeTaskResult(e, fmt.Sprintf(`"totalToolUseCount":%d,`, n)))
	// Times in order (ts wraps at 60).
	re := regexp.MustCompile(`"timestamp":"[^"]*"`)
	k := 0
	stamp := func(l string) string {
		k++
		return re.ReplaceAllString(l, fmt.Sprintf(`"timestamp":"2026-02-10T%02d:%02d:%02d.000Z"`, 21+k/3600, (k/60)%60, k%60))
	}
	e.lines[0], e.lines[1] = stamp(e.lines[0]), stamp(e.lines[1])
	for i := range sub.lines {
		sub.lines[i] = stamp(sub.lines[i])
	}
	e.lines[2] = stamp(e.lines[2])
	writeTree(t, e.ws, files)
	r, ids := importClaudeFiles(t, e, map[string][]string{"s1.jsonl": e.lines, "s1/subagents/agent-a1b2c3d.jsonl": sub.lines})
	_, err := r.Rewind(ids["s1.jsonl"], 0, false)
	var nb *NoFileBackupsError
	if !errors.As(err, &nb) {
		t.Fatalf("rewind: %v, want a NoFileBackupsError", err)
	}
	msg := err.Error()
	t.Logf("%d files not known; the error is %d bytes, one line; its start: %.400s", len(nb.NotKnown), len(msg), msg)
	if len(msg) > 8<<10 {
		t.Fatalf("the refusal is %d bytes for %d files (no bound, no \"and N more\")", len(msg), len(nb.NotKnown))
	}
}
