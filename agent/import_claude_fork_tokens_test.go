package agent

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// claudeForkFiles are the lines of a parent P (turns 1 and 2) and of a
// fork F of it (P's turns copied, each line marked forkedFrom, then its
// own turn 3). regenerate gives the copied lines new uuids, keeping
// forkedFrom.messageUuid the parent's, as the Agent SDK's forkSession is
// said to.
func claudeForkFiles(regenerate bool) (parent, fork []string) {
	parent = append(claudeLines("P", 1), claudeLines("P", 2)...)
	for turn := 1; turn <= 2; turn++ {
		for _, l := range claudeForkLines("P", "F", turn) {
			if regenerate {
				l = strings.Replace(l, `,"uuid":"`, `,"uuid":"new-`, 1)
			}
			fork = append(fork, l)
		}
	}
	return parent, append(fork, claudeLines("F", 3)...)
}

// A Claude Code fork's copied model lines count once, in its parent,
// whichever file is imported first (in an earlier run, or the same one),
// and count in the fork once the parent is removed (session rm, or
// retention), in the fork made in rook of the fork too: the copied lines'
// events count their tokens and the fork's totals leave them out
// (Source.CopiedIn), as a Codex fork's do. They counted none: once the
// parent was removed, the tokens it had spent counted nowhere.
func TestClaudeForkCopiedTokensCountOnce(t *testing.T) {
	proj := "/p/-home-u-proj"
	for _, order := range []string{"parent first", "fork first", "one run"} {
		for _, regenerate := range []bool{false, true} {
			for _, batch := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/new uuids=%v/batch=%v", order, regenerate, batch), func(t *testing.T) {
					fsys := vfs.NewMem()
					r := testRook(t, fsys)
					parent, fork := claudeForkFiles(regenerate)
					files, lines := []string{"P.jsonl", "F.jsonl"}, [][]string{parent, fork}
					if order == "fork first" {
						files[0], files[1] = files[1], files[0]
						lines[0], lines[1] = lines[1], lines[0]
					}
					var rep ImportReport
					for i := range files {
						writeSource(t, fsys, proj+"/"+files[i], lines[i], "")
						if order != "one run" {
							rep = mustImport(t, r, FormatClaudeCode, proj)
						}
					}
					if order == "one run" {
						rep = mustImport(t, r, FormatClaudeCode, proj)
					}
					pid := *fileByPath(t, rep, proj+"/P.jsonl").Session
					fid := *fileByPath(t, rep, proj+"/F.jsonl").Session
					if f := fileByPath(t, rep, proj+"/F.jsonl"); f.Parent == nil || *f.Parent != pid || !f.Fork {
						t.Fatalf("the fork: %+v", f)
					}
					tokensOf(t, r, pid, "the parent", 2*claudeTurnIn, 2*claudeTurnOut)
					tokensOf(t, r, fid, "the fork", claudeTurnIn, claudeTurnOut)
					if in, out := metaOf(t, r, fid).Copied(); in != 2*claudeTurnIn || out != 2*claudeTurnOut {
						t.Errorf("the fork leaves out %d in, %d out; want its copy's %d, %d", in, out, 2*claudeTurnIn, 2*claudeTurnOut)
					}
					s, err := r.Log.Summary(fid)
					if err != nil {
						t.Fatal(err)
					}
					rf, err := r.Log.Fork(fid, s.Events, eventlog.Meta{Title: "rf"})
					if err != nil {
						t.Fatal(err)
					}
					tokensOf(t, r, rf.ID, "the fork made in rook", claudeTurnIn, claudeTurnOut)
					remove := r.RemoveSession
					if batch {
						rm := sessionRemover{r: r}
						remove = rm.remove
					}
					if _, err := remove(pid); err != nil {
						t.Fatal(err)
					}
					tokensOf(t, r, fid, "the fork, its parent removed", 3*claudeTurnIn, 3*claudeTurnOut)
					tokensOf(t, r, rf.ID, "the fork made in rook, the parent removed", 3*claudeTurnIn, 3*claudeTurnOut)
				})
			}
		}
	}
}

// claudeCopiedUUIDs reads both keys of the line copied: forkedFrom's
// messageUuid (wherever it comes) and the line's own uuid, each "" when
// it is missing or not a plain string.
func TestClaudeCopiedUUIDs(t *testing.T) {
	for _, c := range []struct {
		line, from, own string
	}{
		{`{"uuid":"new","forkedFrom":{"sessionId":"P","messageUuid":"old"}}`, "old", "new"},
		{`{"forkedFrom":{"messageUuid":"old","sessionId":"P"},"uuid":"new"}`, "old", "new"},
		{`{"type":"assistant","message":{"content":[{"type":"tool_use","input":{"uuid":"nested"}}]},"uuid":"top","x":1}`, "", "top"},
		{`{"uuid":"own","forkedFrom":{"sessionId":"P"}}`, "", "own"},
		{`{"uuid":"own","forkedFrom":"P"}`, "", "own"},
		{`{"uuid":"own","forkedFrom":{"messageUuid":"a\u0062"}}`, "", "own"},
		{`{"uuid":"own","forkedFrom":{"messageUuid":7}}`, "", "own"},
		{`{"forkedFrom":{"messageUuid":"old"}}`, "old", ""},
		{`{"uuid":null}`, "", ""},
		{`{"uuid":""}`, "", ""},
		{`not json`, "", ""},
	} {
		if from, own := claudeCopiedUUIDs([]byte(c.line)); from != c.from || own != c.own {
			t.Errorf("%s: %q, %q; want %q, %q", c.line, from, own, c.from, c.own)
		}
	}
	keys := map[string]bool{"old": true}
	for line, want := range map[string]bool{
		`{"uuid":"new","forkedFrom":{"messageUuid":"old"}}`:  true,
		`{"uuid":"old","forkedFrom":{"messageUuid":"gone"}}`: true,
		`{"uuid":"new","forkedFrom":{"messageUuid":"gone"}}`: false,
		`{"uuid":"","forkedFrom":{"messageUuid":""}}`:        false,
	} {
		if got := claudeCopies(keys, []byte(line)); got != want {
			t.Errorf("claudeCopies(%s) = %v, want %v", line, got, want)
		}
	}
}

// A fork made of a live session (/branch copies it to its last line) is
// often imported in the run that takes in what its parent grew by since
// the last: it waits for its parent's file, as it would for a parent new
// to the store, so that what it copied of those lines is left out too.
// Its name sorting first, it was taken in before them: it counted them,
// and so did its parent.
func TestClaudeForkWaitsForItsParentGrowing(t *testing.T) {
	proj := "/p/-home-u-proj"
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	parent, fork := claudeForkFiles(false)
	writeSource(t, fsys, proj+"/P.jsonl", parent[:len(claudeLines("P", 1))], "")
	pid := *fileByPath(t, mustImport(t, r, FormatClaudeCode, proj), proj+"/P.jsonl").Session
	writeSource(t, fsys, proj+"/P.jsonl", parent, "")
	writeSource(t, fsys, proj+"/F.jsonl", fork, "")
	rep := mustImport(t, r, FormatClaudeCode, proj)
	if rep.Grown != 1 || rep.Sessions != 1 || len(rep.Files) != 2 || rep.Files[0].Path != proj+"/P.jsonl" {
		t.Fatalf("the fork did not wait for its parent: %+v", rep.Files)
	}
	fid := *fileByPath(t, rep, proj+"/F.jsonl").Session
	tokensOf(t, r, pid, "the parent", 2*claudeTurnIn, 2*claudeTurnOut)
	tokensOf(t, r, fid, "the fork", claudeTurnIn, claudeTurnOut)
}

// Two files that each say they were forked from the other (forkedFrom
// naming each other: damaged, or written by hand) are not linked both
// ways: so linked, each left out of its totals the lines the other holds,
// and the turn both hold counted nowhere (a session's Parent chain was a
// cycle, and a removal gave the other its own id as Ancestor). The one
// imported first stays unlinked and counts all its lines; each of the
// three turns counts once, in whichever order the files come, and the
// session left counts all its own once the other is removed.
func TestClaudeForksNamingEachOtherCountEveryTurnOnce(t *testing.T) {
	proj := "/p/-home-u-proj"
	for _, order := range []string{"one run", "P first", "F first"} {
		t.Run(order, func(t *testing.T) {
			fsys := vfs.NewMem()
			r := testRook(t, fsys)
			files := map[string][]string{
				"P": append(claudeForkLines("F", "P", 1), claudeLines("P", 2)...), // turn 1 said to come from F
				"F": append(claudeForkLines("P", "F", 2), claudeLines("F", 3)...), // P's turn 2 copied
			}
			var rep ImportReport
			for _, s := range []string{"P", "F"} {
				if order == "F first" {
					s = map[string]string{"P": "F", "F": "P"}[s]
				}
				writeSource(t, fsys, proj+"/"+s+".jsonl", files[s], "")
				if order != "one run" {
					rep = mustImport(t, r, FormatClaudeCode, proj)
				}
			}
			if order == "one run" {
				rep = mustImport(t, r, FormatClaudeCode, proj)
			}
			pid := *fileByPath(t, rep, proj+"/P.jsonl").Session
			fid := *fileByPath(t, rep, proj+"/F.jsonl").Session
			mp, mf := metaOf(t, r, pid), metaOf(t, r, fid)
			if mp.Parent != nil && mf.Parent != nil {
				t.Fatalf("linked both ways: P's parent %v, F's %v", *mp.Parent, *mf.Parent)
			}
			sum := func() (in uint64) {
				for _, id := range []eventlog.ID{pid, fid} {
					s, err := r.Log.Summary(id)
					if err != nil {
						t.Fatal(err)
					}
					in += s.TokensIn
				}
				return in
			}
			if in := sum(); in != 3*claudeTurnIn {
				t.Errorf("the two count %d in; want the three turns' %d", in, 3*claudeTurnIn)
			}
			if _, err := r.RemoveSession(pid); err != nil {
				t.Fatal(err)
			}
			tokensOf(t, r, fid, "F, P removed", 2*claudeTurnIn, 2*claudeTurnOut)
			if m := metaOf(t, r, fid); m.Ancestor != nil && *m.Ancestor == fid {
				t.Errorf("F's Ancestor is itself")
			}
		})
	}
}

// A fork's copied line whose forkedFrom.messageUuid names no line of the
// parent (a uuid it does not have: damaged, or another Claude Code's
// idea of it), its own uuid kept as /branch keeps it, is still the copy
// of the parent's line of that uuid: uuids are unique, so either key that
// names a line the parent counts is enough. Read by messageUuid alone, it
// counted in the fork and in the parent.
func TestClaudeForkLineWithAMissingMessageUUIDCountsOnce(t *testing.T) {
	proj := "/p/-home-u-proj"
	for _, parentFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("parent first=%v", parentFirst), func(t *testing.T) {
			fsys := vfs.NewMem()
			r := testRook(t, fsys)
			parent, fork := claudeForkFiles(false)
			for i, l := range fork {
				fork[i] = strings.Replace(l, `"messageUuid":"`, `"messageUuid":"gone-`, 1)
			}
			files, lines := []string{"P.jsonl", "F.jsonl"}, [][]string{parent, fork}
			if !parentFirst {
				files[0], files[1] = files[1], files[0]
				lines[0], lines[1] = lines[1], lines[0]
			}
			var rep ImportReport
			for i := range files {
				writeSource(t, fsys, proj+"/"+files[i], lines[i], "")
				rep = mustImport(t, r, FormatClaudeCode, proj)
			}
			tokensOf(t, r, *fileByPath(t, rep, proj+"/P.jsonl").Session, "the parent", 2*claudeTurnIn, 2*claudeTurnOut)
			tokensOf(t, r, *fileByPath(t, rep, proj+"/F.jsonl").Session, "the fork", claudeTurnIn, claudeTurnOut)
		})
	}
}
