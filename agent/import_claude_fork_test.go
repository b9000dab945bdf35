package agent

import (
	"slices"
	"strings"
	"testing"

	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// claudeForkLines are the lines of session parent's turn as a fork of it
// (session fork) copies them: under the fork's sessionId, each with
// forkedFrom naming the parent and the line's uuid there (uuids and
// timestamps kept), as `claude --resume --fork-session` and /branch write
// them (see claudeMapper.forkedFrom).
func claudeForkLines(parent, fork string, turn int) []string {
	var out []string
	for _, l := range claudeLines(parent, turn) {
		uuid := ""
		if i := strings.Index(l, `"uuid":"`); i >= 0 {
			uuid = l[i+len(`"uuid":"`):]
			uuid = uuid[:strings.IndexByte(uuid, '"')]
		}
		out = append(out, strings.Replace(l, `"sessionId":"`+parent+`"`,
			`"sessionId":"`+fork+`","forkedFrom":{"sessionId":"`+parent+`","messageUuid":"`+uuid+`"}`, 1))
	}
	return out
}

func metaOf(t *testing.T, r *Rook, id eventlog.ID) eventlog.Meta {
	t.Helper()
	m, err := r.Log.ReadMeta(id)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// checkClaudeFork: the file was imported as a fork of the session parent
// (source session id parentSID: the one its forkedFrom names, or whose
// continued-in line names it), tagged so, and holds its lines exactly.
func checkClaudeFork(t *testing.T, r *Rook, rep ImportReport, path string, parent eventlog.ID, parentSID string, data []byte) eventlog.ID {
	t.Helper()
	f := fileByPath(t, rep, path)
	m := metaOf(t, r, *f.Session)
	if f.Parent == nil || *f.Parent != parent || !f.Fork || f.Note != "" || !ImportedFork(m) || *m.Parent != parent ||
		!slices.Equal(m.Tags, []string{FormatClaudeCode, forkTag}) || m.Source.Parent != parentSID {
		t.Fatalf("fork %s: %+v, meta %+v", path, f, m)
	}
	mustExport(t, r, *f.Session, data)
	return *f.Session
}

// A Claude Code fork (its lines carry forkedFrom) is linked to the session
// it was forked from, as a fork, imported with it; importing again changes
// nothing.
func TestImportLinksClaudeForksToTheirParent(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	proj := "/p/-home-u-proj"
	parentData := writeSource(t, fsys, proj+"/P.jsonl", append(claudeLines("P", 1), claudeLines("P", 2)...), "")
	forkData := writeSource(t, fsys, proj+"/F.jsonl", append(claudeForkLines("P", "F", 1), claudeLines("F", 3)...), "")
	rep := mustImport(t, r, FormatClaudeCode, proj)
	pf := fileByPath(t, rep, proj+"/P.jsonl")
	if pf.Parent != nil || pf.Fork || ImportedFork(metaOf(t, r, *pf.Session)) {
		t.Fatalf("the parent: %+v", pf)
	}
	mustExport(t, r, *pf.Session, parentData)
	fid := checkClaudeFork(t, r, rep, proj+"/F.jsonl", *pf.Session, "P", forkData)
	// The fork's totals leave its copied turn's tokens out: its parent
	// spent them. Its own turn counts. (A turn: 3 + 100 + 1000 in, 42 out.)
	for _, c := range []struct {
		id      eventlog.ID
		in, out uint64
	}{{*pf.Session, 2 * 1103, 2 * 42}, {fid, 1103, 42}} {
		s, err := r.Log.Summary(c.id)
		if err != nil {
			t.Fatal(err)
		}
		if s.TokensIn != c.in || s.TokensOut != c.out {
			t.Errorf("session %s: %d in, %d out; want %d, %d", c.id, s.TokensIn, s.TokensOut, c.in, c.out)
		}
	}
	before := metaOf(t, r, fid)
	rep = mustImport(t, r, FormatClaudeCode, proj)
	if rep.Unchanged != 2 || rep.Linked != 0 || rep.ForksTagged != 0 {
		t.Fatalf("again: %+v", rep)
	}
	checkClaudeFork(t, r, rep, proj+"/F.jsonl", *pf.Session, "P", forkData)
	if after := metaOf(t, r, fid); !slices.Equal(after.Tags, before.Tags) || after.Title != before.Title {
		t.Fatalf("again: %+v, was %+v", after, before)
	}
}

// A fork imported before the session it was forked from is imported on its
// own, tagged a fork, and linked when the parent comes.
func TestImportLinksAClaudeForkToAParentImportedLater(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	proj := "/p/-home-u-proj"
	forkData := writeSource(t, fsys, "/p/-home-u-proj/F.jsonl", append(claudeForkLines("P", "F", 1), claudeLines("F", 3)...), "")
	rep := mustImport(t, r, FormatClaudeCode, proj)
	f := fileByPath(t, rep, proj+"/F.jsonl")
	if m := metaOf(t, r, *f.Session); f.Parent != nil || !strings.Contains(f.Note, "parent session P is not imported") ||
		m.Source.Parent != "P" || !slices.Contains(m.Tags, forkTag) {
		t.Fatalf("on its own: %+v %+v", f, m)
	}
	writeSource(t, fsys, proj+"/P.jsonl", claudeLines("P", 1), "")
	rep = mustImport(t, r, FormatClaudeCode, proj)
	if rep.Sessions != 1 {
		t.Fatalf("%+v", rep)
	}
	checkClaudeFork(t, r, rep, proj+"/F.jsonl", *fileByPath(t, rep, proj+"/P.jsonl").Session, "P", forkData)
	if rep = mustImport(t, r, FormatClaudeCode, proj); rep.Unchanged != 2 || rep.Linked != 0 {
		t.Fatalf("again: %+v", rep)
	}
}

// A fork an older rook imported unlinked (it did not read forkedFrom) is
// linked, as a fork, when its file grows.
func TestImportLinksAGrownClaudeForkAnOlderImportLeftUnlinked(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	proj := "/p/-home-u-proj"
	writeSource(t, fsys, proj+"/P.jsonl", claudeLines("P", 1), "")
	lines := append(claudeForkLines("P", "F", 1), claudeLines("F", 3)...)
	writeSource(t, fsys, proj+"/F.jsonl", lines, "")
	rep := mustImport(t, r, FormatClaudeCode, proj)
	pid, fid := *fileByPath(t, rep, proj+"/P.jsonl").Session, *fileByPath(t, rep, proj+"/F.jsonl").Session
	m := metaOf(t, r, fid)
	m.Parent, m.Source.Parent, m.Tags = nil, "", []string{FormatClaudeCode}
	if err := r.Log.UpdateMeta(m); err != nil {
		t.Fatal(err)
	}
	grown := writeSource(t, fsys, proj+"/F.jsonl", append(lines, claudeLines("F", 4)...), "")
	rep = mustImport(t, r, FormatClaudeCode, proj)
	if f := fileByPath(t, rep, proj+"/F.jsonl"); f.Status != ImportGrown {
		t.Fatalf("%+v", f)
	}
	checkClaudeFork(t, r, rep, proj+"/F.jsonl", pid, "P", grown)
}

// What is not a fork: a subagent's file is its spawner's child, whatever
// it copied; a forkedFrom after the session's own lines, or naming the
// session itself, makes none.
func TestImportClaudeForkedFromThatMakesNoFork(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	proj := "/p/-home-u-proj"
	writeSource(t, fsys, proj+"/P.jsonl", claudeLines("P", 1), "")
	writeSource(t, fsys, proj+"/F.jsonl", claudeForkLines("P", "F", 1), "")
	sub := proj + "/F/subagents/agent-a1.jsonl"
	writeSource(t, fsys, sub, claudeForkLines("P", "F", 2), "")
	late := proj + "/L.jsonl"
	writeSource(t, fsys, late, append(claudeLines("L", 1), claudeForkLines("P", "L", 2)...), "")
	self := proj + "/S.jsonl"
	writeSource(t, fsys, self, claudeForkLines("S", "S", 1), "")
	rep := mustImport(t, r, FormatClaudeCode, proj)
	fid := *fileByPath(t, rep, proj+"/F.jsonl").Session
	if f := fileByPath(t, rep, proj+"/F.jsonl"); !f.Fork || f.Parent == nil || *f.Parent != *fileByPath(t, rep, proj+"/P.jsonl").Session {
		t.Fatalf("the fork: %+v", f)
	}
	s := fileByPath(t, rep, sub)
	if m := metaOf(t, r, *s.Session); s.Parent == nil || *s.Parent != fid || s.Fork || m.Source.Parent != "F" || slices.Contains(m.Tags, forkTag) {
		t.Fatalf("the subagent: %+v %+v", s, m)
	}
	for _, p := range []string{late, self} {
		f := fileByPath(t, rep, p)
		if m := metaOf(t, r, *f.Session); f.Parent != nil || f.Fork || m.Source.Parent != "" || slices.Contains(m.Tags, forkTag) {
			t.Fatalf("%s: %+v %+v", p, f, m)
		}
	}
}

// A fork's line copied from another session than its parent (a fork of a
// fork whose copy kept the forkedFrom of the lines its parent had copied
// in turn, naming the grandparent, or its parent's own lines naming the
// parent) counts in the fork while no session it links to counts it: as
// a Codex fork's copy does, imported alone, all of it; its parent
// imported, all but what the parent holds (its lines' uuids); the parent
// removed, all again. It counted none: a copy whose parent is removed, or
// never imported, counted nowhere.
func TestImportClaudeForkCountsCopiedTokensNoSessionCounts(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	proj := "/p/-home-u-proj"
	var lines []string
	lines = append(lines, claudeForkLines("P", "G", 1)...) // the first names the parent: P
	lines = append(lines, claudeForkLines("F", "G", 2)...) // copied from F, which had them from P
	lines = append(lines, claudeLines("G", 3)...)          // its own
	writeSource(t, fsys, proj+"/G.jsonl", lines, "")
	rep := mustImport(t, r, FormatClaudeCode, proj)
	gid := *fileByPath(t, rep, proj+"/G.jsonl").Session
	if m := metaOf(t, r, gid); m.Source.Parent != "P" || !slices.Contains(m.Tags, forkTag) {
		t.Fatalf("meta %+v", m)
	}
	tokensOf(t, r, gid, "the fork alone", 3*claudeTurnIn, 3*claudeTurnOut)
	writeSource(t, fsys, proj+"/P.jsonl", claudeLines("P", 1), "")
	rep = mustImport(t, r, FormatClaudeCode, proj)
	pid := *fileByPath(t, rep, proj+"/P.jsonl").Session
	tokensOf(t, r, gid, "the fork, its parent imported", 2*claudeTurnIn, 2*claudeTurnOut)
	if _, err := r.RemoveSession(pid); err != nil {
		t.Fatal(err)
	}
	tokensOf(t, r, gid, "the fork, its parent removed", 3*claudeTurnIn, 3*claudeTurnOut)
}

// TestContextOfAClaudeForkWithNoReplyYet: a fork's totals leave its
// copied lines' tokens out, but session context still reads the context
// size they recorded (the model's own count) until the fork has a reply
// of its own.
func TestContextOfAClaudeForkWithNoReplyYet(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	proj := "/p/-home-u-proj"
	writeSource(t, fsys, proj+"/P.jsonl", claudeLines("P", 1), "")
	writeSource(t, fsys, proj+"/F.jsonl", append(claudeForkLines("P", "F", 1), claudeLines("F", 3)[0]), "")
	rep := mustImport(t, r, FormatClaudeCode, proj)
	fid := *fileByPath(t, rep, proj+"/F.jsonl").Session
	c, err := r.Context(fid, DefaultContextWindow)
	if err != nil {
		t.Fatal(err)
	}
	// The copied message's last line: 3 + 100 + 1000 in, 42 out.
	if p := c.Reported; p == nil || p.Tokens != 1103+42 || !p.Imported || p.After {
		t.Fatalf("reported %+v, want 1145 tokens, imported", p)
	}
	if !c.ThresholdByReported() {
		t.Fatal("the threshold is not judged by the recorded count")
	}
}
