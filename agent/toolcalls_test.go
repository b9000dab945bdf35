package agent

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// checkJoins shows a session whole, then each event alone, and holds that
// every tool result names the calls it answers, found in the page or, when
// the page starts after them, before it; and that want results are joined.
func checkJoins(t *testing.T, r *Rook, id eventlog.ID, want int) {
	t.Helper()
	whole, err := r.Show(id, ShowQuery{Limit: MaxPageEntries})
	if err != nil {
		t.Fatal(err)
	}
	joined := 0
	for _, v := range whole.Events {
		if v.Kind != eventlog.KindToolResult {
			if len(v.Calls) > 0 {
				t.Fatalf("#%d %s names calls %v", v.Seq, v.Kind, v.Calls)
			}
			continue
		}
		if len(v.Calls) == 0 {
			continue
		}
		joined++
		for _, c := range v.Calls {
			if c >= v.Seq || whole.Events[c].Kind != eventlog.KindToolCall {
				t.Fatalf("#%d answers #%d, a %s", v.Seq, c, whole.Events[c].Kind)
			}
		}
		alone, err := r.Show(id, ShowQuery{From: v.Seq, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if got := alone.Events[0].Calls; len(got) != len(v.Calls) || got[0] != v.Calls[0] {
			t.Fatalf("#%d alone answers %v, in the whole session %v", v.Seq, got, v.Calls)
		}
	}
	if joined != want {
		t.Fatalf("%d tool results joined to their calls, want %d", joined, want)
	}
}

// Show joins an imported tool result to the call it answers, by Claude
// Code's tool_use_id or Codex's call_id, within its page or before it.
func TestShowJoinsToolResultsToTheirCalls(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	var lines []string
	for turn := 0; turn < 3; turn++ {
		lines = append(lines, claudeLines("s", turn)...)
	}
	writeSource(t, fsys, "/p/s.jsonl", lines, "")
	checkJoins(t, r, *fileByPath(t, mustImport(t, r, FormatClaudeCode, "/p/s.jsonl"), "/p/s.jsonl").Session, 3)

	b, err := os.ReadFile(codexMainFile)
	if err != nil {
		t.Fatal(err)
	}
	writeSourceFile(t, fsys, "/c/"+codexMainFile, b)
	rep := mustImport(t, r, FormatCodex, "/c/"+codexMainFile)
	// Four of its five outputs answer a call it holds (call_Rk1, _Pt2,
	// _Sh3, _Ts4); call_Unknown answers none.
	checkJoins(t, r, *fileByPath(t, rep, "/c/"+codexMainFile).Session, 4)

	// An older Codex's rollouts, whose items have no envelope: the output
	// of each answers its call.
	for name, rollout := range map[string]string{"/o/direct.jsonl": codexDirectRollout, "/o/legacy.jsonl": codexLegacyRollout} {
		writeSourceFile(t, fsys, name, []byte(rollout+"\n"))
		checkJoins(t, r, *fileByPath(t, mustImport(t, r, FormatCodex, name), name).Session, 1)
	}
}

// importedCodexMain is a store holding the Codex fixture's main rollout.
func importedCodexMain(t *testing.T) (*Rook, eventlog.ID) {
	t.Helper()
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	b, err := os.ReadFile(codexMainFile)
	if err != nil {
		t.Fatal(err)
	}
	writeSourceFile(t, fsys, "/c/"+codexMainFile, b)
	return r, *fileByPath(t, mustImport(t, r, FormatCodex, "/c/"+codexMainFile), "/c/"+codexMainFile).Session
}

// The HTML export heads an imported tool result with the calls it
// answers, as session show does: a link to the call when the file holds
// it, its number when the range starts after it.
func TestExportHTMLJoinsToolResultsToTheirCalls(t *testing.T) {
	r, id := importedCodexMain(t)
	whole, err := r.Show(id, ShowQuery{Limit: MaxPageEntries})
	if err != nil {
		t.Fatal(err)
	}
	x, err := r.ExportRange(id, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := string(ExportHTML(x))
	joined := 0
	for _, v := range whole.Events {
		if len(v.Calls) == 0 {
			continue
		}
		joined++
		c := v.Calls[0]
		head := fmt.Sprintf("<b>#%d</b> tool-result · %s ← <a href=\"#e%d\">#%d</a> · ", v.Seq, v.Label, c, c)
		if !strings.Contains(out, head) {
			t.Errorf("#%d is not headed %q", v.Seq, head)
		}
		alone, err := r.ExportRange(id, v.Seq, &v.Seq)
		if err != nil {
			t.Fatal(err)
		}
		head = fmt.Sprintf("<b>#%d</b> tool-result · %s ← #%d · ", v.Seq, v.Label, c)
		if got := string(ExportHTML(alone)); !strings.Contains(got, head) {
			t.Errorf("#%d alone is not headed %q", v.Seq, head)
		}
	}
	if joined != 4 {
		t.Fatalf("%d tool results joined, want 4", joined)
	}
}

// The HTML export of an imported session says it was imported, and from
// what, rather than calling the import's time its creation: the
// conversation took place before, at its events' own times.
func TestExportHTMLSaysImported(t *testing.T) {
	r, id := importedCodexMain(t)
	x, err := r.ExportRange(id, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := string(ExportHTML(x))
	if !strings.Contains(out, "<dt>source</dt><dd>codex transcript /c/"+codexMainFile+"</dd>\n<dt>imported</dt><dd>") || strings.Contains(out, "<dt>created</dt>") {
		t.Error("the header does not say the session was imported, and from what")
	}
}
