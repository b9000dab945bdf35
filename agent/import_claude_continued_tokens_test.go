package agent

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// A turn of claudeLines counts 3 + 100 + 1000 tokens in, 42 out (its
// message's three lines repeat one usage: counted once).
const claudeTurnIn, claudeTurnOut = 1103, 42

// continuedFiles are the lines of session old, turns 1 and 2, closed by a
// continued-in line naming session bg, and of session bg: the copy of
// old's turns (claudeBackgroundLines), then its own turns (from 3 on).
func continuedFiles(old, bg string, own ...int) (oldLines, bgLines []string) {
	oldLines = append(claudeLines(old, 1), claudeLines(old, 2)...)
	oldLines = append(oldLines, claudeContinuedIn(old, bg))
	bgLines = append(claudeBackgroundLines(old, bg, 1), claudeBackgroundLines(old, bg, 2)...)
	for _, turn := range own {
		bgLines = append(bgLines, claudeLines(bg, turn)...)
	}
	return oldLines, bgLines
}

// modelEvents is how many of a session's events are the model's lines.
func modelEvents(t *testing.T, r *Rook, id eventlog.ID) int {
	t.Helper()
	return countEvents(t, r, id, func(ev eventlog.Event) bool {
		return ev.Kind == eventlog.KindAssistant || ev.Kind == eventlog.KindReasoning || ev.Kind == eventlog.KindToolCall
	})
}

// Imported in one run, the session first (its file's name sorts first), a
// continuation's copied model lines count no tokens: the session it
// continues spent them, and counts them. Its own turns count. The lines
// stay the events they were, exported byte for byte; importing again
// changes nothing.
func TestImportClaudeContinuationCountsNoCopiedTokens(t *testing.T) {
	t.Run("read whole", func(t *testing.T) { testContinuationCountsNoCopiedTokens(t, mustImport) })
	t.Run("streamed", func(t *testing.T) {
		testContinuationCountsNoCopiedTokens(t, func(t *testing.T, r *Rook, _ string, paths ...string) ImportReport {
			return mustImportChunked(t, r, paths...)
		})
	})
}

func testContinuationCountsNoCopiedTokens(t *testing.T, importAll func(*testing.T, *Rook, string, ...string) ImportReport) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	proj := "/p/-home-u-proj"
	oldLines, bgLines := continuedFiles("O", "Q", 3, 4)
	oldData := writeSource(t, fsys, proj+"/O.jsonl", oldLines, "")
	bgData := writeSource(t, fsys, proj+"/Q.jsonl", bgLines, "")
	for run := 0; run < 2; run++ {
		rep := importAll(t, r, FormatClaudeCode, proj)
		oid := *fileByPath(t, rep, proj+"/O.jsonl").Session
		mustExport(t, r, oid, oldData)
		qid := checkClaudeFork(t, r, rep, proj+"/Q.jsonl", oid, "O", bgData)
		tokensOf(t, r, oid, "the session continued", 2*claudeTurnIn, 2*claudeTurnOut)
		tokensOf(t, r, qid, "its continuation", 2*claudeTurnIn, 2*claudeTurnOut)
		// The copied lines are the model's lines still, as in O: 3 a turn.
		if n := modelEvents(t, r, qid); n != 4*3 {
			t.Errorf("the continuation has %d model events, want 12", n)
		}
		if run == 1 && rep.Unchanged != 2 {
			t.Fatalf("again: %+v", rep)
		}
	}
}

// The session it continues imported by an earlier run, or earlier in the
// same run as a file that grew by its continued-in line: the same counts.
func TestImportClaudeContinuationOfASessionImportedBefore(t *testing.T) {
	proj := "/p/-home-u-proj"
	t.Run("in an earlier run", func(t *testing.T) {
		fsys := vfs.NewMem()
		r := testRook(t, fsys)
		oldLines, bgLines := continuedFiles("O", "N", 3)
		oldData := writeSource(t, fsys, proj+"/O.jsonl", oldLines, "")
		oid := *fileByPath(t, mustImport(t, r, FormatClaudeCode, proj), proj+"/O.jsonl").Session
		// N sorts before O: what counts is that O is in, not the order.
		bgData := writeSource(t, fsys, proj+"/N.jsonl", bgLines, "")
		rep := mustImport(t, r, FormatClaudeCode, proj)
		if rep.Sessions != 1 || rep.Unchanged != 1 {
			t.Fatalf("%+v", rep)
		}
		nid := checkClaudeFork(t, r, rep, proj+"/N.jsonl", oid, "O", bgData)
		mustExport(t, r, oid, oldData)
		tokensOf(t, r, oid, "the session continued", 2*claudeTurnIn, 2*claudeTurnOut)
		tokensOf(t, r, nid, "its continuation", claudeTurnIn, claudeTurnOut)
	})
	t.Run("grown by its continued-in line in the same run", func(t *testing.T) {
		fsys := vfs.NewMem()
		r := testRook(t, fsys)
		oldLines, bgLines := continuedFiles("O", "Q", 3)
		writeSource(t, fsys, proj+"/O.jsonl", oldLines[:len(oldLines)-1], "") // live
		oid := *fileByPath(t, mustImport(t, r, FormatClaudeCode, proj), proj+"/O.jsonl").Session
		oldData := writeSource(t, fsys, proj+"/O.jsonl", oldLines, "")
		bgData := writeSource(t, fsys, proj+"/Q.jsonl", bgLines, "")
		rep := mustImport(t, r, FormatClaudeCode, proj)
		if rep.Grown != 1 || rep.Sessions != 1 {
			t.Fatalf("%+v", rep)
		}
		qid := checkClaudeFork(t, r, rep, proj+"/Q.jsonl", oid, "O", bgData)
		mustExport(t, r, oid, oldData)
		tokensOf(t, r, oid, "the session continued", 2*claudeTurnIn, 2*claudeTurnOut)
		tokensOf(t, r, qid, "its continuation", claudeTurnIn, claudeTurnOut)
	})
}

// A continuation imported in a run before the session it continues
// cannot tell its copy from its own lines: it counts the copied tokens, as
// its lines say. Importing that session later links it, and its totals
// leave the copied tokens out (Source.CopiedIn: its events are written
// once): it counts only its own, whichever came first. In one run, a
// continuation whose file's name sorts first waits for the other files
// (sourceNames.waits); streamed (a file over 64 MiB, not mapped ahead),
// it does not wait, and is linked at the end of the run.
func TestImportClaudeContinuationBeforeTheSessionItContinues(t *testing.T) {
	proj := "/p/-home-u-proj"
	t.Run("an earlier run", func(t *testing.T) {
		fsys := vfs.NewMem()
		r := testRook(t, fsys)
		oldLines, bgLines := continuedFiles("O", "Q", 3)
		bgData := writeSource(t, fsys, proj+"/Q.jsonl", bgLines, "")
		qid := *fileByPath(t, mustImport(t, r, FormatClaudeCode, proj), proj+"/Q.jsonl").Session
		tokensOf(t, r, qid, "the continuation alone", 3*claudeTurnIn, 3*claudeTurnOut)
		oldData := writeSource(t, fsys, proj+"/O.jsonl", oldLines, "")
		rep := mustImport(t, r, FormatClaudeCode, proj)
		oid := *fileByPath(t, rep, proj+"/O.jsonl").Session
		if got := checkClaudeFork(t, r, rep, proj+"/Q.jsonl", oid, "O", bgData); got != qid || rep.Sessions != 1 {
			t.Fatalf("%+v", rep)
		}
		mustExport(t, r, oid, oldData)
		tokensOf(t, r, oid, "the session continued", 2*claudeTurnIn, 2*claudeTurnOut)
		tokensOf(t, r, qid, "the continuation, the session it continues imported", claudeTurnIn, claudeTurnOut)
	})
	t.Run("the same run", func(t *testing.T) {
		fsys := vfs.NewMem()
		r := testRook(t, fsys)
		oldLines, bgLines := continuedFiles("O", "N", 3)
		oldData := writeSource(t, fsys, proj+"/O.jsonl", oldLines, "")
		bgData := writeSource(t, fsys, proj+"/N.jsonl", bgLines, "")
		rep := mustImport(t, r, FormatClaudeCode, proj)
		oid := *fileByPath(t, rep, proj+"/O.jsonl").Session
		nid := checkClaudeFork(t, r, rep, proj+"/N.jsonl", oid, "O", bgData)
		mustExport(t, r, oid, oldData)
		mustExport(t, r, nid, bgData)
		if len(rep.Files) != 2 || rep.Files[0].Path != proj+"/O.jsonl" {
			t.Fatalf("the continuation did not wait: %+v", rep.Files)
		}
		tokensOf(t, r, oid, "the session continued", 2*claudeTurnIn, 2*claudeTurnOut)
		tokensOf(t, r, nid, "the continuation", claudeTurnIn, claudeTurnOut)
	})
	t.Run("the same run, streamed", func(t *testing.T) {
		fsys := vfs.NewMem()
		r := testRook(t, fsys)
		oldLines, bgLines := continuedFiles("O", "N", 3)
		writeSource(t, fsys, proj+"/O.jsonl", oldLines, "")
		bgData := writeSource(t, fsys, proj+"/N.jsonl", bgLines, "")
		rep := mustImportChunked(t, r, proj)
		oid := *fileByPath(t, rep, proj+"/O.jsonl").Session
		nid := checkClaudeFork(t, r, rep, proj+"/N.jsonl", oid, "O", bgData)
		tokensOf(t, r, nid, "the continuation", claudeTurnIn, claudeTurnOut)
	})
}

// A continuation of a continuation, both named before the session they
// go back to: each waits, and is taken in after the one it continues.
func TestImportClaudeContinuationsWaitInTurn(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	proj := "/p/-home-u-proj"
	// C continued in B, B in A: A and B sort first.
	cLines, bLines := continuedFiles("C", "B", 3)
	bLines = append(bLines, claudeContinuedIn("B", "A"))
	var aLines []string
	for _, l := range bLines[:len(bLines)-1] {
		if strings.Contains(l, `"sessionKind":"bg"`) {
			aLines = append(aLines, strings.Replace(l, `"sessionId":"B"`, `"sessionId":"A"`, 1))
		} else {
			aLines = append(aLines, strings.Replace(l, `"sessionId":"B"`, `"sessionId":"A","sessionKind":"bg"`, 1))
		}
	}
	aLines = append(aLines, claudeLines("A", 4)...)
	writeSource(t, fsys, proj+"/C.jsonl", cLines, "")
	bData := writeSource(t, fsys, proj+"/B.jsonl", bLines, "")
	aData := writeSource(t, fsys, proj+"/A.jsonl", aLines, "")
	rep := mustImport(t, r, FormatClaudeCode, proj)
	var order []string
	for _, f := range rep.Files {
		order = append(order, filepath.Base(f.Path))
	}
	if !slices.Equal(order, []string{"C.jsonl", "B.jsonl", "A.jsonl"}) {
		t.Fatalf("order: %v", order)
	}
	cid := *fileByPath(t, rep, proj+"/C.jsonl").Session
	bid := checkClaudeFork(t, r, rep, proj+"/B.jsonl", cid, "C", bData)
	aid := checkClaudeFork(t, r, rep, proj+"/A.jsonl", bid, "B", aData)
	tokensOf(t, r, cid, "the first", 2*claudeTurnIn, 2*claudeTurnOut)
	tokensOf(t, r, bid, "its continuation", claudeTurnIn, claudeTurnOut)
	tokensOf(t, r, aid, "the continuation's", claudeTurnIn, claudeTurnOut)
}

// A continuation taken in with no reply of its own yet (its copy and its
// first prompt) counts no tokens, but session context reads the context
// size the copy's last model line recorded; the turns it goes on with, in
// later runs, count.
func TestImportClaudeContinuationGrowsByItsOwnTurns(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	proj := "/p/-home-u-proj"
	oldLines, bgLines := continuedFiles("O", "Q", 3, 4)
	copyEnd := len(bgLines) - 2*len(claudeLines("Q", 3))
	oldData := writeSource(t, fsys, proj+"/O.jsonl", oldLines, "")
	writeSource(t, fsys, proj+"/Q.jsonl", bgLines[:copyEnd+1], "")
	rep := mustImport(t, r, FormatClaudeCode, proj)
	oid := *fileByPath(t, rep, proj+"/O.jsonl").Session
	qid := *fileByPath(t, rep, proj+"/Q.jsonl").Session
	tokensOf(t, r, qid, "the copy and a prompt", 0, 0)
	c, err := r.Context(qid, DefaultContextWindow)
	if err != nil {
		t.Fatal(err)
	}
	if p := c.Reported; p == nil || p.Tokens != claudeTurnIn+claudeTurnOut || !p.Imported || p.After {
		t.Fatalf("reported %+v, want %d tokens, imported", p, claudeTurnIn+claudeTurnOut)
	}
	// Its first reply: read against O's lines again, and counted.
	writeSource(t, fsys, proj+"/Q.jsonl", bgLines[:copyEnd+len(claudeLines("Q", 3))], "")
	if rep = mustImport(t, r, FormatClaudeCode, proj); rep.Grown != 1 {
		t.Fatalf("%+v", rep)
	}
	tokensOf(t, r, qid, "with its first turn", claudeTurnIn, claudeTurnOut)
	// Its next: the session counts tokens already, its copy is behind.
	bgData := writeSource(t, fsys, proj+"/Q.jsonl", bgLines, "")
	if rep = mustImport(t, r, FormatClaudeCode, proj); rep.Grown != 1 {
		t.Fatalf("%+v", rep)
	}
	tokensOf(t, r, qid, "with its two turns", 2*claudeTurnIn, 2*claudeTurnOut)
	tokensOf(t, r, oid, "the session continued", 2*claudeTurnIn, 2*claudeTurnOut)
	mustExport(t, r, oid, oldData)
	if got := checkClaudeFork(t, r, rep, proj+"/Q.jsonl", oid, "O", bgData); got != qid {
		t.Fatalf("%s, was %s", got, qid)
	}
}

// claudeUUID reads the top-level uuid only: not one nested in the
// message, which comes before it.
func TestClaudeUUID(t *testing.T) {
	for _, c := range []struct {
		line, want string
		ok         bool
	}{
		{`{"type":"assistant","message":{"content":[{"type":"tool_use","input":{"uuid":"nested"}}]},"uuid":"top","x":1}`, "top", true},
		{` { "uuid" : "a-b" }`, "a-b", true},
		{`{"parentUuid":"p","type":"user"}`, "", false},
		{`{"uuid":null}`, "", false},
		{`{"uuid":"a\u0062"}`, "", false},
		{`{"uuid":""}`, "", false},
		{`not json`, "", false},
	} {
		if got, ok := claudeUUID([]byte(c.line)); got != c.want || ok != c.ok {
			t.Errorf("%s: %q, %v; want %q, %v", c.line, got, ok, c.want, c.ok)
		}
	}
}

// A continuation imported before the session it continues, its copy cut
// short at a model line (its file being written), counts the copy as its
// lines say when it grows, the session it continues now imported (the
// line taken in again whole counts, as the copy's lines before it did),
// until it is linked: then its totals leave the whole copy out.
func TestImportClaudeContinuationCopyCutShortBeforeTheSessionItContinues(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	proj := "/p/-home-u-proj"
	oldLines, bgLines := continuedFiles("O", "Q", 3)
	turn := len(claudeLines("Q", 1))
	// Up to turn 2's first model line (which counts its message), cut.
	cut := bgLines[turn+1]
	writeSource(t, fsys, proj+"/Q.jsonl", bgLines[:turn+1], cut[:len(cut)/2])
	qid := *fileByPath(t, mustImport(t, r, FormatClaudeCode, proj), proj+"/Q.jsonl").Session
	tokensOf(t, r, qid, "the copy's first turn", claudeTurnIn, claudeTurnOut)
	writeSource(t, fsys, proj+"/O.jsonl", oldLines, "")
	bgData := writeSource(t, fsys, proj+"/Q.jsonl", bgLines, "")
	rep := mustImport(t, r, FormatClaudeCode, proj)
	if rep.Grown != 1 || rep.Sessions != 1 {
		t.Fatalf("%+v", rep)
	}
	mustExport(t, r, qid, bgData)
	tokensOf(t, r, qid, "the continuation, imported first", claudeTurnIn, claudeTurnOut)
}

// A crash after the continued-in line was taken in and before the
// metadata recording it: the next import finds the file's bytes all in
// the session, records what its last lines say (where the conversation
// went on), and the continuation is linked and counts its own tokens.
func TestImportRecordsAContinuationAfterACrash(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	proj := "/p/-home-u-proj"
	oldLines, bgLines := continuedFiles("O", "N", 3)
	writeSource(t, fsys, proj+"/O.jsonl", oldLines[:len(oldLines)-1], "")
	oid := *fileByPath(t, mustImport(t, r, FormatClaudeCode, proj), proj+"/O.jsonl").Session
	before := metaOf(t, r, oid)
	oldData := writeSource(t, fsys, proj+"/O.jsonl", oldLines, "")
	mustImport(t, r, FormatClaudeCode, proj)
	if m := metaOf(t, r, oid); m.Source.ContinuedIn != "N" {
		t.Fatalf("grown: %+v", m.Source)
	}
	// The metadata as the crash left it: the lines are in, it is not.
	if err := r.Log.UpdateMeta(before); err != nil {
		t.Fatal(err)
	}
	rep := mustImport(t, r, FormatClaudeCode, proj)
	if f := fileByPath(t, rep, proj+"/O.jsonl"); f.Status != ImportUnchanged || f.Events != 0 {
		t.Fatalf("after the crash: %+v", f)
	}
	if m := metaOf(t, r, oid); m.Source.ContinuedIn != "N" || m.Source.Size != int64(len(oldData)) {
		t.Fatalf("after the crash: %+v", m.Source)
	}
	mustExport(t, r, oid, oldData)
	bgData := writeSource(t, fsys, proj+"/N.jsonl", bgLines, "")
	rep = mustImport(t, r, FormatClaudeCode, proj)
	nid := checkClaudeFork(t, r, rep, proj+"/N.jsonl", oid, "O", bgData)
	tokensOf(t, r, nid, "the continuation", claudeTurnIn, claudeTurnOut)
}

// Many continuations in one run, each named before the session it
// continues: all wait, each gives back what the read-ahead holds for it
// (it would hang at the third otherwise), and each counts only its own.
func TestImportClaudeManyContinuationsWait(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	proj := "/p/-home-u-proj"
	const n = 2*prepareAhead + 3
	for i := range n {
		old, bg := fmt.Sprintf("z%d", i), fmt.Sprintf("a%d", i)
		oldLines, bgLines := continuedFiles(old, bg, 3)
		writeSource(t, fsys, proj+"/"+old+".jsonl", oldLines, "")
		writeSource(t, fsys, proj+"/"+bg+".jsonl", bgLines, "")
	}
	done := make(chan ImportReport, 1)
	go func() {
		rep, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{proj}})
		if err != nil {
			t.Error(err)
		}
		done <- rep
	}()
	var rep ImportReport
	select {
	case rep = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the import hangs")
	}
	if len(rep.Files) != 2*n || rep.Sessions != 2*n {
		t.Fatalf("%d files, %d sessions", len(rep.Files), rep.Sessions)
	}
	for i := range n {
		f := fileByPath(t, rep, fmt.Sprintf("%s/a%d.jsonl", proj, i))
		tokensOf(t, r, *f.Session, "a continuation", claudeTurnIn, claudeTurnOut)
	}
}
