package agent

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// namedEdit is an Edit as Claude Code writes one: its call names the
// file (file_path), its result says what the file was before.
func (e *editTranscript) namedEdit(abs, original, old, new string) {
	id := fmt.Sprintf("toolu_%d", len(e.lines))
	e.lines = append(e.lines,
		fmt.Sprintf(`{"type":"assistant",%s,"message":{"model":"claude-opus-4-6","id":"msg_%d","role":"assistant","content":[{"type":"tool_use","id":%q,"name":"Edit","input":{"file_path":%s,"old_string":%s,"new_string":%s,"replace_all":false}}]},"uuid":"a%d","timestamp":%q}`,
			e.env(), len(e.lines), id, jsonq(abs), jsonq(old), jsonq(new), len(e.lines), e.ts()),
		fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":[{"tool_use_id":%q,"type":"tool_result","content":"done"}]},"toolUseResult":{"filePath":%s,"oldString":%s,"newString":%s,"originalFile":%s,"structuredPatch":[],"userModified":false,"replaceAll":false},"uuid":"r%d","timestamp":%q}`,
			e.env(), id, jsonq(abs), jsonq(old), jsonq(new), jsonq(original), len(e.lines), e.ts()))
}

// ownEdits is a Claude Code session, with no file backups, whose agent
// edits a.txt (A0 to A1: its call event #1, its result #2), b.txt (B0
// to B1: #3, #4), b.txt (B1 to B2: #5, #6) and a.txt (A1 to A2: #7, #8),
// its workspace as the session left it.
func ownEdits(t *testing.T) *editTranscript {
	e := newEditTranscript(t, "edit a and b")
	at := func(p string) string { return filepath.Join(e.ws, p) }
	e.namedEdit(at("a.txt"), "A0\n", "A0", "A1")
	e.namedEdit(at("b.txt"), "B0\n", "B0", "B1")
	e.namedEdit(at("b.txt"), "B1\n", "B1", "B2")
	e.namedEdit(at("a.txt"), "A1\n", "A1", "A2")
	writeTree(t, e.ws, tree{"a.txt": "A2\n", "b.txt": "B2\n"})
	return e
}

// importOwnApart imports e's transcript as it grew: its lines before lo,
// then those before hi, then all. The objects of the lines from lo to hi
// (their events #lo to #hi-1) are then in records of their own, to
// damage alone (unreadOwn). It gives the store and the session.
func importOwnApart(t *testing.T, e *editTranscript, lo, hi int) (*Rook, eventlog.ID) {
	t.Helper()
	projects := filepath.Join(e.dir, "home", ".claude", "projects")
	r := diskRook(t, filepath.Join(e.dir, "store"))
	var id eventlog.ID
	for _, n := range []int{lo, hi, len(e.lines)} {
		writeSource(t, vfs.OS, filepath.Join(projects, "-ws", "s1.jsonl"), e.lines[:n], "")
		if f := mustImport(t, r, FormatClaudeCode, projects).Files[0]; f.Session != nil {
			id = *f.Session
		}
	}
	evs, err := r.Log.Read(id, 0, 64)
	if err != nil || len(evs) != len(e.lines) {
		t.Fatalf("%d events for %d lines: %v", len(evs), len(e.lines), err)
	}
	return r, id
}

// ownUnreadCases are the ways an object of a session's own lines does
// not read, and what unreadHow says to do for each (ID the session, PATH
// its transcript).
var ownUnreadCases = []struct{ how, way string }{
	{"damaged", "`rook import claude-code --reread PATH` puts back what the store cannot read of it (else `rook session rm ID`, then `rook import claude-code PATH` imports it again)"},
	{"missing", "`rook store verify` says what is wrong and what to do"},
}

// unreadOwn damages the record of event seq's object of session id
// ("damaged"), or leaves it out of the index as well ("missing"): with
// it, every object of that record (importOwnApart). It gives the store,
// opened again, and what to do, as the refusal and the note say it.
func unreadOwn(t *testing.T, r *Rook, id eventlog.ID, seq uint64, how, way string) (*Rook, string) {
	t.Helper()
	evs, err := r.Log.Read(id, seq, 1)
	if err != nil || len(evs) != 1 {
		t.Fatalf("event #%d: %v", seq, err)
	}
	return unreadObject(t, r, id, evs[0].Body, how, way)
}

// unreadObject is unreadOwn of object obj of session id's lines.
func unreadObject(t *testing.T, r *Rook, id eventlog.ID, obj cas.Key, how, way string) (*Rook, string) {
	t.Helper()
	m, err := r.Log.ReadMeta(id)
	if err != nil {
		t.Fatal(err)
	}
	way = strings.NewReplacer("ID", id.String(), "PATH", ShellQuote(m.Source.Path)).Replace(way)
	r = damagedStore(t, r, obj, how)
	if _, err := r.Store.Get(obj); err == nil {
		t.Fatalf("object %s reads after the damage", cas.Short(obj))
	}
	return r, way
}

// ownFiles fails unless the workspace holds a.txt and b.txt as want
// says ("A2 B2": as the session left them).
func ownFiles(t *testing.T, e *editTranscript, want string) {
	t.Helper()
	got := strings.TrimSpace(readFileT(t, filepath.Join(e.ws, "a.txt"))) + " " + strings.TrimSpace(readFileT(t, filepath.Join(e.ws, "b.txt")))
	if got != want {
		t.Fatalf("a.txt and b.txt: %s, want %s", got, want)
	}
}

// ownRefusal fails unless err is the refusal of a rewind whose own edit
// result, event #seq, does not read: it names the event and what it is
// (what, "the result of an Edit of b.txt"), why, what to do (way), and
// --keep-files; nothing changed.
func ownRefusal(t *testing.T, err error, id eventlog.ID, seq uint64, what, way string) {
	t.Helper()
	want := fmt.Sprintf("cannot rewind the files: event #%d of session %s (%s) cannot be read (", seq, id, what)
	if err == nil || !strings.HasPrefix(err.Error(), want) ||
		!strings.Contains(err.Error(), "; "+way) ||
		!strings.Contains(err.Error(), "; then run this again, or put the files back yourself and rewind with --keep-files, which rewinds the conversation only") ||
		!strings.HasSuffix(err.Error(), ": nothing changed") {
		t.Fatalf("rewind: %v\nwant %q ... %q", err, want, way)
	}
}

// An edit result of the session's own after the rewind point whose
// object does not read (damaged, or gone from the store) was passed
// over: a rewind to before b.txt's first edit took b.txt's state from
// its second (B1) as the file then, wrote it, and exited 0. What the
// file was at the point is not known: the rewind refuses, nothing
// written and no fork made, naming the event, the file, why and what to
// do. A rewind to after that result does not need it, and goes; done as
// the refusal says, the rewind to before it goes too.
func TestClaudeRewindRefusesAnOwnEditResultThatDoesNotRead(t *testing.T) {
	for _, tc := range ownUnreadCases {
		t.Run(tc.how, func(t *testing.T) {
			e := ownEdits(t)
			r, id := importOwnApart(t, e, 4, 5)
			r, way := unreadOwn(t, r, id, 4, tc.how, tc.way)
			n := sessionCount(t, r)
			for _, to := range []uint64{3, 1} {
				_, err := r.Rewind(id, to, false)
				ownRefusal(t, err, id, 4, "the result of an Edit of b.txt", way)
				ownFiles(t, e, "A2 B2")
				if got := sessionCount(t, r); got != n {
					t.Fatalf("%d sessions after the refusal, %d before", got, n)
				}
			}
			if _, err := r.Rewind(id, 3, true); err != nil {
				t.Fatalf("--keep-files: %v", err)
			}
			ownFiles(t, e, "A2 B2")
			// After it: b.txt as its second edit found it, a.txt as its
			// second did.
			if _, err := r.Rewind(id, 5, false); err != nil {
				t.Fatalf("rewind past the result that does not read: %v", err)
			}
			ownFiles(t, e, "A1 B1")
			if tc.how != "damaged" {
				return // (verify says the object is gone: put back from a backup)
			}
			m, err := r.Log.ReadMeta(id)
			if err != nil {
				t.Fatal(err)
			}
			if rep, err := r.Reread(ImportOptions{Format: FormatClaudeCode, Paths: []string{m.Source.Path}}, nil); err != nil || rep.Restored == 0 {
				t.Fatalf("reread: %+v, %v", rep, err)
			}
			if _, err := r.Rewind(id, 3, false); err != nil {
				t.Fatalf("read again: %v", err)
			}
			ownFiles(t, e, "A1 B0")
		})
	}
}

// An own edit result after the point that does not read, of a file whose
// state at the point an earlier result says (a.txt's second edit, #8,
// its first #2): the rewind to 1 does not need it, and goes. To 5, it is
// a.txt's first after the point: the rewind had left a.txt as it is (A2,
// not A1), saying nothing, and exited 0; it refuses.
func TestClaudeRewindPassesAnOwnEditResultItDoesNotNeed(t *testing.T) {
	for _, tc := range ownUnreadCases {
		t.Run(tc.how, func(t *testing.T) {
			e := ownEdits(t)
			r, id := importOwnApart(t, e, 8, 9)
			r, way := unreadOwn(t, r, id, 8, tc.how, tc.way)
			_, err := r.Rewind(id, 5, false)
			ownRefusal(t, err, id, 8, "the result of an Edit of a.txt", way)
			ownFiles(t, e, "A2 B2")
			if _, err := r.Rewind(id, 1, false); err != nil {
				t.Fatalf("rewind that does not need the result: %v", err)
			}
			ownFiles(t, e, "A0 B0")
		})
	}
}

// Its only edit result does not read, before the point: the rewind to
// after it has nothing to put back, and goes. It refused, saying the
// session was imported without file backups (as its result, passed
// over, said no file), though nothing after the point needs one.
func TestClaudeRewindPastItsOnlyEditResultThatDoesNotRead(t *testing.T) {
	for _, tc := range ownUnreadCases {
		t.Run(tc.how, func(t *testing.T) {
			e := newEditTranscript(t, "edit a")
			e.namedEdit(filepath.Join(e.ws, "a.txt"), "A0\n", "A0", "A1")    // #1, #2
			e.step("Read", `{"type":"text","file":{"filePath":"x"}}`, false) // #3, #4
			writeTree(t, e.ws, tree{"a.txt": "A1\n"})
			r, id := importOwnApart(t, e, 2, 3)
			r, _ = unreadOwn(t, r, id, 2, tc.how, tc.way)
			rep, err := r.Rewind(id, 3, false)
			if err != nil || rep.DiskChanged || len(rep.Paths) != 0 {
				t.Fatalf("rewind: %+v, %v", rep, err)
			}
			if got := readFileT(t, filepath.Join(e.ws, "a.txt")); got != "A1\n" {
				t.Fatalf("a.txt: %q", got)
			}
		})
	}
}

// Its call's object does not read either (both in one record): which
// file the result changed is not known, so no file's state after it is:
// the rewind to before it refuses, saying so; to after it, it goes.
func TestClaudeRewindRefusesAnOwnEditOfAFileNotKnown(t *testing.T) {
	for _, tc := range ownUnreadCases {
		t.Run(tc.how, func(t *testing.T) {
			e := ownEdits(t)
			r, id := importOwnApart(t, e, 3, 5)
			r, way := unreadOwn(t, r, id, 4, tc.how, tc.way)
			_, err := r.Rewind(id, 1, false)
			ownRefusal(t, err, id, 4, "the result of an Edit, of a file not known", way)
			ownFiles(t, e, "A2 B2")
			if _, err := r.Rewind(id, 5, false); err != nil {
				t.Fatalf("rewind past the result that does not read: %v", err)
			}
			ownFiles(t, e, "A1 B1")
		})
	}
}

// Only the text of b.txt before its first edit does not read (a string
// long enough to be cut out of the line, an object of its own), and its
// call names no file: the line, which reads but for it, says the file
// all the same. The rewind to before it refuses, naming b.txt; the diff
// leaves b.txt out, saying so.
func TestClaudeOwnEditResultWhoseTextDoesNotRead(t *testing.T) {
	long := strings.Repeat("a line of b before the session\n", 20)
	for _, tc := range ownUnreadCases {
		t.Run(tc.how, func(t *testing.T) {
			e := newEditTranscript(t, "edit a and b")
			at := func(p string) string { return filepath.Join(e.ws, p) }
			e.namedEdit(at("a.txt"), "A0\n", "A0", "A1")
			e.edit(at("b.txt"), long, "a line", "B1") // (its call's input is {})
			e.namedEdit(at("b.txt"), "B1\n", "B1", "B2")
			e.namedEdit(at("a.txt"), "A1\n", "A1", "A2")
			writeTree(t, e.ws, tree{"a.txt": "A2\n", "b.txt": "B2\n"})
			r, id := importOwnApart(t, e, 4, 5)
			r, way := unreadObject(t, r, id, cas.ID([]byte(long)), tc.how, tc.way)
			got, _, d := diffFiles(t, r, id)
			if len(got) != 1 || got["a.txt"] != "modified" || len(d.Uncompared) != 1 || d.Uncompared[0].Path != "b.txt" ||
				len(d.Notes) != 1 || !strings.HasPrefix(d.Notes[0], "event #4 of this session (the result of an Edit of b.txt) cannot be read (") {
				t.Fatalf("files %v, uncompared %+v, notes %q", got, d.Uncompared, d.Notes)
			}
			_, err := r.Rewind(id, 3, false)
			ownRefusal(t, err, id, 4, "the result of an Edit of b.txt", way)
			ownFiles(t, e, "A2 B2")
			if _, err := r.Rewind(id, 5, false); err != nil {
				t.Fatalf("rewind past the result that does not read: %v", err)
			}
			ownFiles(t, e, "A1 B1")
		})
	}
}

// The diff of such a session compared b.txt with B1, the state its
// second edit found, as though it were the file before the session: a
// change B1 to B2 it did not make alone. b.txt is not compared now
// (uncompared, saying why), and a note names the event, the file, why
// and what to do; a.txt, whose state before its first result says, is
// shown. Its call not read either, which file the result changed is not
// known: the note says so, and each file whose state comes after it is
// not compared. A result whose file's state an earlier one says changes
// nothing of the diff. Done as the note says, the diff is whole.
func TestClaudeDiffNotesAnOwnEditResultThatDoesNotRead(t *testing.T) {
	for _, tc := range ownUnreadCases {
		t.Run(tc.how, func(t *testing.T) {
			for _, c := range []struct {
				lo, hi int
				seq    uint64
				note   string
				out    []string
			}{
				{4, 5, 4, "event #4 of this session (the result of an Edit of b.txt) cannot be read (", []string{"b.txt"}},
				{3, 5, 4, "event #4 of this session (the result of an Edit, of a file not known) cannot be read (", []string{"b.txt"}},
				{8, 9, 8, "", nil},
			} {
				e := ownEdits(t)
				r, id := importOwnApart(t, e, c.lo, c.hi)
				r, way := unreadOwn(t, r, id, c.seq, tc.how, tc.way)
				got, patch, d := diffFiles(t, r, id)
				var out []string
				for _, u := range d.Uncompared {
					out = append(out, u.Path)
					if !strings.Contains(u.Error, fmt.Sprintf("event #%d", c.seq)) || !strings.Contains(u.Error, "cannot be read") {
						t.Fatalf("%d-%d: %s uncompared: %s", c.lo, c.hi, u.Path, u.Error)
					}
				}
				if fmt.Sprint(out) != fmt.Sprint(c.out) {
					t.Fatalf("%d-%d: uncompared %+v, want %v", c.lo, c.hi, d.Uncompared, c.out)
				}
				if got["a.txt"] != "modified" || !strings.Contains(patch, "-A0\n+A2\n") {
					t.Fatalf("%d-%d: files %v:\n%s", c.lo, c.hi, got, patch)
				}
				if c.note == "" {
					if len(got) != 2 || !strings.Contains(patch, "-B0\n+B2\n") || len(d.Notes) != 0 {
						t.Fatalf("%d-%d: files %v, notes %q:\n%s", c.lo, c.hi, got, d.Notes, patch)
					}
					continue
				}
				if len(got) != 1 || strings.Contains(patch, "b.txt") {
					t.Fatalf("%d-%d: files %v:\n%s", c.lo, c.hi, got, patch)
				}
				if len(d.Notes) != 1 || !strings.HasPrefix(d.Notes[0], c.note) || !strings.Contains(d.Notes[0], "b.txt") || !strings.Contains(d.Notes[0], way) {
					t.Fatalf("%d-%d: notes %q, want %q ... %q", c.lo, c.hi, d.Notes, c.note, way)
				}
				if tc.how != "damaged" {
					continue
				}
				m, err := r.Log.ReadMeta(id)
				if err != nil {
					t.Fatal(err)
				}
				if rep, err := r.Reread(ImportOptions{Format: FormatClaudeCode, Paths: []string{m.Source.Path}}, nil); err != nil || rep.Restored == 0 {
					t.Fatalf("reread: %+v, %v", rep, err)
				}
				if got, patch, d := diffFiles(t, r, id); len(got) != 2 || !strings.Contains(patch, "-B0\n+B2\n") || len(d.Notes) != 0 || len(d.Uncompared) != 0 {
					t.Fatalf("%d-%d: read again: files %v, notes %q, uncompared %+v", c.lo, c.hi, got, d.Notes, d.Uncompared)
				}
			}
		})
	}
}

// A subagent's session, read as itself: its edit results say no file
// (as Claude Code writes a subagent's), the file is its call's. Its
// call of b.txt's edit (#3) not read, the result (#4) named no file: its
// diff left b.txt out of the files not compared, saying nothing, and a
// rewind's refusal named a.txt alone. Now the diff says the call does
// not read, and that which file it changed is not known; the rewind
// refuses for it.
func TestClaudeOwnEditCallThatDoesNotRead(t *testing.T) {
	for _, tc := range ownUnreadCases {
		t.Run(tc.how, func(t *testing.T) {
			e := newEditTranscript(t, "")
			at := func(p string) string { return filepath.Join(e.ws, p) }
			e.lines = nil
			e.sidePrompt("edit a and b")        // #0
			e.sideEdit(at("a.txt"), "A0", "A1") // #1, #2
			e.sideEdit(at("b.txt"), "B0", "B1") // #3, #4
			writeTree(t, e.ws, tree{"a.txt": "A1\n", "b.txt": "B1\n"})
			r, id := importOwnApart(t, e, 3, 4)
			r, way := unreadOwn(t, r, id, 3, tc.how, tc.way)
			_, _, d := diffFiles(t, r, id)
			if len(d.Uncompared) != 1 || d.Uncompared[0].Path != "a.txt" {
				t.Fatalf("uncompared %+v", d.Uncompared)
			}
			want := "event #3 of this session (the call of an Edit by a subagent's line, which the edit result of event #4 may answer) cannot be read ("
			if len(d.Notes) != 1 || !strings.HasPrefix(d.Notes[0], want) || !strings.Contains(d.Notes[0], "which file it changed is not known: a file only it changed is not shown; ") ||
				!strings.Contains(d.Notes[0], way) || fmt.Sprint(d.UnreadEvents) != "[3]" {
				t.Fatalf("notes %q, unread events %v; want %q ... %q", d.Notes, d.UnreadEvents, want, way)
			}
			_, err := r.Rewind(id, 1, false)
			ownRefusal(t, err, id, 3, "the call of an Edit by a subagent's line, which the edit result of event #4 may answer", way)
		})
	}
}

// An imported Codex session's own rollout line (a patch call) whose
// object does not read was never passed over: its diff and its rewind
// failed whole, nothing written ("event #3 cannot be read: ..."), but
// said neither which session nor what to do. They name the session and
// the event, say why nothing of its patches is known without it (each is
// read on what those before it left), and what to do; the rewind, that
// --keep-files rewinds the conversation alone. Nothing written, no fork.
func TestCodexOwnRolloutLineThatDoesNotRead(t *testing.T) {
	for _, tc := range []struct{ how, way string }{
		{"damaged", "`rook import codex --reread PATH` puts back what the store cannot read of it (else `rook session rm ID`, then `rook import codex PATH` imports it again)"},
		{"missing", "`rook store verify` says what is wrong and what to do"},
	} {
		t.Run(tc.how, func(t *testing.T) {
			c := newCodexForkPair(t)
			c.p = append(c.p, patchLines("p1", "*** Add File: n.txt\n+1", "00:02")...)            // #1, #2
			c.p = append(c.p, patchLines("p2", "*** Update File: n.txt\n@@\n-1\n+2", "00:04")...) // #3, #4
			c.p = append(c.p, patchLines("p3", "*** Add File: m.txt\n+m", "00:06")...)            // #5, #6
			src := filepath.Join(c.dir, "codex", "2026", "02", "03", "rollout-2026-02-03T10-00-00-"+codexPID+".jsonl")
			writeTree(t, c.ws, tree{"n.txt": "2\n", "m.txt": "m\n"})
			r := diskRook(t, filepath.Join(c.dir, "store"))
			var id eventlog.ID
			for _, n := range []int{3, 4, len(c.p)} { // (#3 in records of its own)
				writeSource(t, vfs.OS, src, c.p[:n], "")
				if f := mustImport(t, r, FormatCodex, src).Files[0]; f.Session != nil {
					id = *f.Session
				}
			}
			r, way := unreadOwn(t, r, id, 3, tc.how, tc.way)
			_, err := r.Diff(id, nil, false)
			want := fmt.Sprintf("cannot show the files it changed: event #3 of session %s cannot be read (", id)
			if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "each on what those before it left, so what its patches changed is not known; "+way) {
				t.Fatalf("diff: %v\nwant %q ... %q", err, want, way)
			}
			n := sessionCount(t, r)
			_, err = r.Rewind(id, 5, false)
			want = fmt.Sprintf("cannot rewind the files: event #3 of session %s cannot be read (", id)
			if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "so what the files held at the point is not known; "+way) ||
				!strings.HasSuffix(err.Error(), "; then run this again, or put the files back yourself and rewind with --keep-files, which rewinds the conversation only: nothing changed") {
				t.Fatalf("rewind: %v\nwant %q ... %q", err, want, way)
			}
			if got := readFileT(t, filepath.Join(c.ws, "n.txt")) + readFileT(t, filepath.Join(c.ws, "m.txt")); got != "2\nm\n" {
				t.Fatalf("files after the refusal: %q", got)
			}
			if got := sessionCount(t, r); got != n {
				t.Fatalf("%d sessions after the refusal, %d before", got, n)
			}
		})
	}
}
