package agent

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// taskResultOf is the seq of session id's first result of tool label.
func taskResultOf(t *testing.T, r *Rook, id eventlog.ID, label string) uint64 {
	t.Helper()
	evs, err := r.Log.Read(id, 0, 64)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Kind == eventlog.KindToolResult && ev.Label == label {
			return ev.Seq
		}
	}
	t.Fatalf("no %s result in %+v", label, evs)
	return 0
}

// claudeSubagentWritten writes claudeSubagentLines' subagent transcript
// where Claude Code keeps it, and gives its path.
func claudeSubagentWritten(t *testing.T, e *editTranscript, lines []string) string {
	p := filepath.Join(e.dir, "home", ".claude", "projects", "-ws", "s1", "subagents", "agent-a1b2c3d.jsonl")
	writeSource(t, vfs.OS, p, lines, "")
	return p
}

// The Task result (event #2) of a session whose subagent's transcript
// is not imported tells the rewind a subagent ran: its object damaged or
// missing, it reported none, and the rewind to before it (#1) wrote a.txt
// as the parent's own later edit found it (A1), left what the subagent
// wrote, and exited 0. It is now needed: the rewind refuses, naming the
// event, why and what to do, nothing changed. So too a rewind past it
// (#3): whether it launched its subagent in the background, to run on
// after it, is in its object alone. --keep-files goes. Read again
// (--reread), it names the missing subagent; imported, the rewind goes.
func TestClaudeRewindRefusesATaskResultThatDoesNotRead(t *testing.T) {
	for _, tc := range ownUnreadCases {
		t.Run(tc.how, func(t *testing.T) {
			e, sub := claudeSubagentLines(t)
			r, parent := importOwnApart(t, e, 3, 4) // (the Task result, #2, alone)
			seq := taskResultOf(t, r, parent, "Task")
			r, way := unreadOwn(t, r, parent, seq, tc.how, tc.way)
			n := sessionCount(t, r)
			for _, to := range []uint64{1, 3} {
				_, err := r.Rewind(parent, to, false)
				want := fmt.Sprintf("cannot rewind the files: event #%d of this session (the result of a Task call), ", seq)
				if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), ", cannot be read (") ||
					!strings.Contains(err.Error(), "which subagent it ran is not known, nor whether an imported session linked to it holds it") ||
					!strings.Contains(err.Error(), "; "+way) ||
					!strings.Contains(err.Error(), "; then run this again, or put the files back yourself and rewind with --keep-files, which rewinds the conversation only") {
					t.Fatalf("rewind to %d: %v\nwant %q ... %q", to, err, want, way)
				}
				wsUnchanged(t, e)
				if got := sessionCount(t, r); got != n {
					t.Fatalf("%d sessions after the refusal, %d before", got, n)
				}
			}
			if _, err := r.Rewind(parent, 1, true); err != nil {
				t.Fatalf("--keep-files: %v", err)
			}
			wsUnchanged(t, e)
			if tc.how != "damaged" {
				return // (verify says the object is gone: put back from a backup)
			}
			m, err := r.Log.ReadMeta(parent)
			if err != nil {
				t.Fatal(err)
			}
			if rep, err := r.Reread(ImportOptions{Format: FormatClaudeCode, Paths: []string{m.Source.Path}}, nil); err != nil || rep.Restored == 0 {
				t.Fatalf("reread: %+v, %v", rep, err)
			}
			if _, err := r.Rewind(parent, 1, false); err == nil || !strings.Contains(err.Error(), "the Claude Code subagent a1b2c3d, whose Task result is event #2") {
				t.Fatalf("rewind after the reread: %v, want the missing subagent named", err)
			}
			mustImport(t, r, FormatClaudeCode, claudeSubagentWritten(t, e, sub))
			if _, err := r.Rewind(parent, 1, false); err != nil {
				t.Fatalf("rewind with the subagent imported: %v", err)
			}
			if got := readFileT(t, filepath.Join(e.ws, "a.txt")) + readFileT(t, filepath.Join(e.ws, "b.txt")); got != "A0\nB0\n" {
				t.Fatalf("files: %q", got)
			}
		})
	}
}

// The diff of such a session says so in a note (--json: unread_events):
// which event, that a subagent it ran that is not imported is not known,
// and what to do. It had said nothing of a subagent.
func TestClaudeDiffNotesATaskResultThatDoesNotRead(t *testing.T) {
	for _, tc := range ownUnreadCases {
		t.Run(tc.how, func(t *testing.T) {
			e, _ := claudeSubagentLines(t)
			r, parent := importOwnApart(t, e, 3, 4)
			seq := taskResultOf(t, r, parent, "Task")
			r, way := unreadOwn(t, r, parent, seq, tc.how, tc.way)
			_, _, d := diffFiles(t, r, parent)
			want := fmt.Sprintf("event #%d of this session (the result of a Task call) cannot be read (", seq)
			found := false
			for _, n := range d.Notes {
				if strings.HasPrefix(n, want) && strings.Contains(n, "the files a subagent it ran changed are not shown unless this session changed them too") && strings.Contains(n, way) {
					found = true
				}
			}
			if !found || len(d.UnreadEvents) != 1 || d.UnreadEvents[0] != seq || len(d.MissingSubagents) != 0 {
				t.Fatalf("notes %q, unread events %v, missing %v; want %q ... %q", d.Notes, d.UnreadEvents, d.MissingSubagents, want, way)
			}
		})
	}
}

// importCodexApart imports c's P as its rollout grew: its lines before
// lo, then before hi, then all (the objects of lines lo to hi-1 in
// records of their own); F is not imported.
func (c *codexForkPair) importCodexApart(tr tree, lo, hi int) (*Rook, eventlog.ID) {
	t := c.t
	day := filepath.Join(c.dir, "codex", "2026", "02", "03")
	writeTree(t, c.ws, tr)
	r := diskRook(t, filepath.Join(c.dir, "store"))
	var p eventlog.ID
	for _, n := range []int{lo, hi, len(c.p)} {
		writeSource(t, vfs.OS, filepath.Join(day, "rollout-2026-02-03T10-00-00-"+codexPID+".jsonl"), c.p[:n], "")
		for _, fr := range mustImport(t, r, FormatCodex, filepath.Join(c.dir, "codex")).Files {
			if fr.Session != nil {
				p = *fr.Session
			}
		}
	}
	return r, p
}

// A Codex spawn_agent output whose object does not read named no
// subagent: its subagent's rollout not imported, the rewind of P to its
// last patch wrote the replay's "1 b", a state the file never had, exit
// 0, and the diff said nothing of it. A missing Codex subagent counts
// from its spawn on, and which one, and when, is in the object: the
// rewind refuses, naming the event, why and what to do; the diff notes
// it (unread_events).
func TestCodexRewindRefusesASpawnOutputThatDoesNotRead(t *testing.T) {
	for _, tc := range []struct{ how, way string }{
		{"damaged", "`rook import codex --reread PATH` puts back what the store cannot read of it (else `rook session rm ID`, then `rook import codex PATH` imports it again)"},
		{"missing", "`rook store verify` says what is wrong and what to do"},
	} {
		t.Run(tc.how, func(t *testing.T) {
			c := newCodexForkPair(t)
			c.p = append(c.p, patchLines("p1", "*** Add File: n.txt\n+1\n+b", "00:02")...)
			c.p = append(c.p, spawnLines("spawn1", codexFID, "00:03")...)
			c.p = append(c.p, patchLines("p2", "*** Update File: n.txt\n@@\n-b\n+B", "00:10")...)
			out := len(c.p) - 3 // (the spawn_agent output's line)
			r, p := c.importCodexApart(tree{"n.txt": "2\nB\n"}, out, out+1)
			seq := taskResultOf(t, r, p, "spawn_agent")
			r, way := unreadOwn(t, r, p, seq, tc.how, tc.way)
			calls, err := r.rolloutPatchCalls(p)
			if err != nil || len(calls) != 2 {
				t.Fatalf("patch calls %v, %v", calls, err)
			}
			_, err = r.Rewind(p, calls[1].seq, false)
			refusedFor(t, err, "n.txt", fmt.Sprintf("the spawn_agent output of event #%d of this session cannot be read (", seq))
			for _, want := range []string{"which subagent it spawned is not known, nor whether an imported session linked to it holds it", way, "--keep-files"} {
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("refusal %q: no %q", err, want)
				}
			}
			if got := c.read("n.txt"); got != "2\nB\n" {
				t.Fatalf("n.txt after the refusal: %q", got)
			}
			_, _, d := diffFiles(t, r, p)
			found := false
			for _, n := range d.Notes {
				if strings.HasPrefix(n, fmt.Sprintf("event #%d of this session (the output of a spawn_agent call) cannot be read (", seq)) && strings.Contains(n, way) {
					found = true
				}
			}
			if !found || len(d.UnreadEvents) != 1 || d.UnreadEvents[0] != seq {
				t.Fatalf("diff notes %q, unread events %v", d.Notes, d.UnreadEvents)
			}
		})
	}
}
