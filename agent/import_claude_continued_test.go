package agent

import (
	"slices"
	"strings"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// claudeBackgroundLines are the lines of session old's turn as sending it
// to the background copies them into session bg (claudeMapper.continuedIn):
// under the new sessionId, with sessionKind "bg", and no forkedFrom.
func claudeBackgroundLines(old, bg string, turn int) []string {
	var out []string
	for _, l := range claudeLines(old, turn) {
		out = append(out, strings.Replace(l, `"sessionId":"`+old+`"`, `"sessionId":"`+bg+`","sessionKind":"bg"`, 1))
	}
	return out
}

// claudeContinuedIn is the line Claude Code closes session old's
// transcript with when its conversation goes on in session next.
func claudeContinuedIn(old, next string) string {
	return `{"type":"continued-in","sessionId":"` + old + `","continuedInSessionId":"` + next + `"}`
}

// A transcript closed by a continued-in line names the session its
// conversation went on in (sent to the background): that session, whose
// lines begin with a copy of it and carry no forkedFrom, is linked as its
// fork, in the same import or whichever comes first. The line is a known
// one, and exports as it was.
func TestImportLinksClaudeContinuations(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	proj := "/p/-home-u-proj"
	oldData := writeSource(t, fsys, proj+"/O.jsonl", append(claudeLines("O", 1), claudeContinuedIn("O", "N")), "")
	newData := writeSource(t, fsys, proj+"/N.jsonl", append(claudeBackgroundLines("O", "N", 1), claudeLines("N", 2)...), "")
	rep := mustImport(t, r, FormatClaudeCode, proj)
	of := fileByPath(t, rep, proj+"/O.jsonl")
	if om := metaOf(t, r, *of.Session); of.Parent != nil || of.Fork || of.Unknown != 0 || om.Source.ContinuedIn != "N" || om.Parent != nil {
		t.Fatalf("the session continued: %+v, meta %+v", of, om)
	}
	mustExport(t, r, *of.Session, oldData)
	nid := checkClaudeFork(t, r, rep, proj+"/N.jsonl", *of.Session, "O", newData)
	rep = mustImport(t, r, FormatClaudeCode, proj)
	if rep.Unchanged != 2 || rep.Linked != 0 {
		t.Fatalf("again: %+v", rep)
	}
	if got := checkClaudeFork(t, r, rep, proj+"/N.jsonl", *of.Session, "O", newData); got != nid {
		t.Fatalf("again: %s, was %s", got, nid)
	}
}

// The usual order: the session is imported while it is live, then its file
// grows by the continued-in line, and the session it names is imported
// later still; or the continuation comes first. Either way they are linked.
func TestImportLinksClaudeContinuationsInEitherOrder(t *testing.T) {
	proj := "/p/-home-u-proj"
	t.Run("the old session grows", func(t *testing.T) {
		fsys := vfs.NewMem()
		r := testRook(t, fsys)
		writeSource(t, fsys, proj+"/O.jsonl", claudeLines("O", 1), "")
		rep := mustImport(t, r, FormatClaudeCode, proj)
		oid := *fileByPath(t, rep, proj+"/O.jsonl").Session
		writeSource(t, fsys, proj+"/O.jsonl", append(claudeLines("O", 1), claudeContinuedIn("O", "N")), "")
		if rep = mustImport(t, r, FormatClaudeCode, proj); rep.Grown != 1 || metaOf(t, r, oid).Source.ContinuedIn != "N" {
			t.Fatalf("grown: %+v, meta %+v", rep, metaOf(t, r, oid))
		}
		newData := writeSource(t, fsys, proj+"/N.jsonl", append(claudeBackgroundLines("O", "N", 1), claudeLines("N", 2)...), "")
		rep = mustImport(t, r, FormatClaudeCode, proj)
		checkClaudeFork(t, r, rep, proj+"/N.jsonl", oid, "O", newData)
	})
	t.Run("the continuation first", func(t *testing.T) {
		fsys := vfs.NewMem()
		r := testRook(t, fsys)
		newData := writeSource(t, fsys, proj+"/N.jsonl", append(claudeBackgroundLines("O", "N", 1), claudeLines("N", 2)...), "")
		rep := mustImport(t, r, FormatClaudeCode, proj)
		if f := fileByPath(t, rep, proj+"/N.jsonl"); f.Parent != nil || f.Fork || ImportedFork(metaOf(t, r, *f.Session)) {
			t.Fatalf("on its own: %+v", f)
		}
		writeSource(t, fsys, proj+"/O.jsonl", append(claudeLines("O", 1), claudeContinuedIn("O", "N")), "")
		rep = mustImport(t, r, FormatClaudeCode, proj)
		checkClaudeFork(t, r, rep, proj+"/N.jsonl", *fileByPath(t, rep, proj+"/O.jsonl").Session, "O", newData)
	})
}

// What a continued-in line does not link: a line naming another session
// as its own (copied from elsewhere), one naming the file's own session, a
// session its own file links already (forkedFrom wins), and a cycle.
func TestImportClaudeContinuationsLinkOnlyWhatTheySay(t *testing.T) {
	proj := "/p/-home-u-proj"
	unlinked := func(t *testing.T, r *Rook, rep ImportReport, path string) {
		t.Helper()
		f := fileByPath(t, rep, path)
		if m := metaOf(t, r, *f.Session); f.Parent != nil || f.Fork || m.Parent != nil || m.Source.Parent != "" || slices.Contains(m.Tags, forkTag) {
			t.Fatalf("%s: %+v, meta %+v", path, f, m)
		}
	}
	t.Run("another session's line", func(t *testing.T) {
		fsys := vfs.NewMem()
		r := testRook(t, fsys)
		writeSource(t, fsys, proj+"/O.jsonl", append(claudeLines("O", 1), claudeContinuedIn("X", "N"), claudeContinuedIn("O", "O")), "")
		writeSource(t, fsys, proj+"/N.jsonl", claudeLines("N", 2), "")
		rep := mustImport(t, r, FormatClaudeCode, proj)
		if m := metaOf(t, r, *fileByPath(t, rep, proj+"/O.jsonl").Session); m.Source.ContinuedIn != "" {
			t.Fatalf("%+v", m.Source)
		}
		unlinked(t, r, rep, proj+"/N.jsonl")
	})
	t.Run("a fork stays its parent's", func(t *testing.T) {
		fsys := vfs.NewMem()
		r := testRook(t, fsys)
		writeSource(t, fsys, proj+"/P.jsonl", claudeLines("P", 1), "")
		writeSource(t, fsys, proj+"/O.jsonl", append(claudeLines("O", 3), claudeContinuedIn("O", "F")), "")
		forkData := writeSource(t, fsys, proj+"/F.jsonl", append(claudeForkLines("P", "F", 1), claudeLines("F", 2)...), "")
		rep := mustImport(t, r, FormatClaudeCode, proj)
		checkClaudeFork(t, r, rep, proj+"/F.jsonl", *fileByPath(t, rep, proj+"/P.jsonl").Session, "P", forkData)
	})
	t.Run("a cycle", func(t *testing.T) {
		fsys := vfs.NewMem()
		r := testRook(t, fsys)
		writeSource(t, fsys, proj+"/A.jsonl", append(claudeLines("A", 1), claudeContinuedIn("A", "B")), "")
		writeSource(t, fsys, proj+"/B.jsonl", append(claudeLines("B", 2), claudeContinuedIn("B", "A")), "")
		rep := mustImport(t, r, FormatClaudeCode, proj)
		a, b := fileByPath(t, rep, proj+"/A.jsonl"), fileByPath(t, rep, proj+"/B.jsonl")
		if (a.Parent == nil) == (b.Parent == nil) {
			t.Fatalf("one of the two linked to the other: %+v, %+v", a, b)
		}
	})
}
