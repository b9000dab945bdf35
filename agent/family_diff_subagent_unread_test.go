package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// claudeApart is claudeWithSubagent imported in two: the parent, then
// its subagent in an import of its own (its objects in records of their
// own, to damage alone); the subagent's transcript is linked all the
// same.
func claudeApart(t *testing.T) (r *Rook, e *editTranscript, parent, sub eventlog.ID) {
	e, lines := claudeSubagentLines(t)
	projects := filepath.Join(e.dir, "home", ".claude", "projects")
	writeSource(t, vfs.OS, filepath.Join(projects, "-ws", "s1.jsonl"), e.lines, "")
	r = diskRook(t, filepath.Join(e.dir, "store"))
	parent = *mustImport(t, r, FormatClaudeCode, projects).Files[0].Session
	writeSource(t, vfs.OS, filepath.Join(projects, "-ws", "s1", "subagents", "agent-a1b2c3d.jsonl"), lines, "")
	for _, f := range mustImport(t, r, FormatClaudeCode, projects).Files {
		if strings.HasSuffix(f.Path, "agent-a1b2c3d.jsonl") && f.Session != nil {
			sub = *f.Session
		}
	}
	if sub.IsZero() {
		t.Fatal("the subagent's transcript was not imported")
	}
	if m, err := r.Log.ReadMeta(sub); err != nil || m.Parent == nil || *m.Parent != parent {
		t.Fatalf("the subagent's session is not linked to its parent: %+v, %v", m, err)
	}
	return r, e, parent, sub
}

// unreadSubagentCases are the ways a subagent's imported session does
// not read, and what unreadHow says to do for each (ID its session, PATH
// its transcript).
var unreadSubagentCases = []struct{ how, way string }{
	{"log", "`rook session rm ID`, then `rook import claude-code PATH` imports it again"},
	{"damaged", "`rook import claude-code --reread PATH` puts back what the store cannot read of it (else `rook session rm ID`, then `rook import claude-code PATH` imports it again)"},
	{"missing", "`rook store verify` says what is wrong and what to do"},
}

// unreadSubagent damages subagent session sub of r as how says: its
// log's header ("log"), or the object of its first edit result, a.txt's
// (A0 before it), damaged ("damaged") or gone from the index
// ("missing"). It gives the store, opened again, and what to do, as the
// note and the refusal say it.
func unreadSubagent(t *testing.T, r *Rook, sub eventlog.ID, how, way string) (*Rook, string) {
	t.Helper()
	m, err := r.Log.ReadMeta(sub)
	if err != nil {
		t.Fatal(err)
	}
	way = strings.NewReplacer("ID", sub.String(), "PATH", ShellQuote(m.Source.Path)).Replace(way)
	home := r.Store.Home()
	if how == "log" {
		if err := os.WriteFile(filepath.Join(home, cas.EventsDir, sub.String()+".log"), []byte("not a log"), 0o600); err != nil {
			t.Fatal(err)
		}
		return r, way
	}
	evs, err := r.Log.Read(sub, 0, 64)
	if err != nil {
		t.Fatal(err)
	}
	var body *cas.Key
	for _, ev := range evs {
		if ev.Kind == eventlog.KindToolResult && ev.Label == "Edit" {
			body = &ev.Body
			break
		}
	}
	if body == nil {
		t.Fatalf("no edit result in the subagent's events: %+v", evs)
	}
	return damagedStore(t, r, *body, how), way
}

// A Claude Code subagent's session that cannot be read (its log's header
// damaged, the object of one of its edit results damaged or missing)
// failed the whole diff of its parent ("session ... cannot be read:
// ..."), or, its object damaged, was read without that edit, a.txt then
// compared with what the parent's own later edit found, as though the
// subagent had not changed it. The diff is the parent's own, as for a
// removed subagent, and a note names the subagent's session, why it does
// not read, that the files it changed are not shown, and what to do
// (`--json`: unread_subagents), as a Codex diff says it.
func TestClaudeDiffNotesASubagentThatDoesNotRead(t *testing.T) {
	for _, tc := range unreadSubagentCases {
		t.Run(tc.how, func(t *testing.T) {
			r, _, parent, sub := claudeApart(t)
			r, way := unreadSubagent(t, r, sub, tc.how, tc.way)
			got, patch, d := diffFiles(t, r, parent)
			if len(got) != 1 || got["a.txt"] != "modified" || !strings.Contains(patch, "-A1\n+A2\n") {
				t.Fatalf("files %v:\n%s", got, patch)
			}
			want := fmt.Sprintf("session %s (a Claude Code subagent of this session, in the same workspace) cannot be read (", sub)
			if len(d.Notes) != 1 || !strings.HasPrefix(d.Notes[0], want) ||
				!strings.Contains(d.Notes[0], "): the files it changed are not shown unless this session changed them too; ") ||
				!strings.Contains(d.Notes[0], way) {
				t.Fatalf("notes %q, want %q ... %q", d.Notes, want, way)
			}
			if len(d.UnreadSubagents) != 1 || d.UnreadSubagents[0] != sub.String() || len(d.MissingSubagents) != 0 {
				t.Fatalf("unread subagents %q, missing %q", d.UnreadSubagents, d.MissingSubagents)
			}
			// What the note says to do reads it again: the diff is whole.
			m, err := r.Log.ReadMeta(sub)
			if err != nil {
				t.Fatal(err)
			}
			switch tc.how {
			case "log":
				if _, err := r.RemoveSession(sub); err != nil {
					t.Fatal(err)
				}
				mustImport(t, r, FormatClaudeCode, m.Source.Path)
			case "damaged":
				if rep, err := r.Reread(ImportOptions{Format: FormatClaudeCode, Paths: []string{m.Source.Path}}, nil); err != nil || rep.Restored == 0 {
					t.Fatalf("reread: %+v, %v", rep, err)
				}
			default:
				return // (verify says the object is gone: put back from a backup)
			}
			got, _, d = diffFiles(t, r, parent)
			if len(got) != 3 || len(d.UnreadSubagents) != 0 || len(d.Notes) != 3 {
				t.Fatalf("read again: files %v, notes %q", got, d.Notes)
			}
		})
	}
}

// A rewind of the parent to before its Task cannot know what such a
// subagent wrote: it refuses, nothing written and no fork made, saying
// what failed, which session, and what to do (read it again as the note
// of the diff says, or --keep-files). Its object damaged, it rewound
// a.txt to A1, the parent's own later edit's, as though the subagent had
// not changed it. --keep-files, which reads no file state, goes.
func TestClaudeRewindRefusesASubagentThatDoesNotRead(t *testing.T) {
	for _, tc := range unreadSubagentCases {
		t.Run(tc.how, func(t *testing.T) {
			r, e, parent, sub := claudeApart(t)
			r, way := unreadSubagent(t, r, sub, tc.how, tc.way)
			n := sessionCount(t, r)
			_, err := r.Rewind(parent, 1, false)
			want := fmt.Sprintf("cannot rewind the files: session %s (a Claude Code subagent of this session, in the same workspace) cannot be read (", sub)
			if err == nil || !strings.HasPrefix(err.Error(), want) ||
				!strings.Contains(err.Error(), "so what it wrote is not known, and the files' states after the point may hold it; ") ||
				!strings.Contains(err.Error(), way) ||
				!strings.Contains(err.Error(), "then run this again, or put the files back yourself and rewind with --keep-files, which rewinds the conversation only") ||
				!strings.HasSuffix(err.Error(), ": nothing changed") {
				t.Fatalf("rewind: %v\nwant %q ... %q", err, want, way)
			}
			wsUnchanged(t, e)
			if got := sessionCount(t, r); got != n {
				t.Fatalf("%d sessions after the refusal, %d before", got, n)
			}
			if _, err := r.Rewind(parent, 1, true); err != nil {
				t.Fatalf("--keep-files: %v", err)
			}
			wsUnchanged(t, e)
		})
	}
}
