package agent

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// The bound of a family read (maxFamily) is exercised at its real size
// once (TestFamilyBound: importing 1001 one-line subagent transcripts
// takes 2.5 s on an idle machine, and three times that on a busy one,
// its files' fsyncs most of it); the other tests set a smaller one
// (withMaxFamily), as a chain of 1001 rook forks, or 1001 Codex
// rollouts, costs as much again.

// withMaxFamily sets maxFamily to n for the rest of test t.
func withMaxFamily(t *testing.T, n int) {
	old := maxFamily
	maxFamily = n
	t.Cleanup(func() { maxFamily = old })
}

// claudeWithIdleSubagents is a Claude Code session in dir/ws whose Task
// call (event 1) ran the subagent a1b2c3d, which edited a.txt (A0 to
// A1), its result event 2; and idle more subagents, each a transcript of
// its prompt alone: 1+idle imported sessions linked to it. It gives the
// store, the transcript, the session and the idle subagents' sessions.
func claudeWithIdleSubagents(t *testing.T, idle int) (*Rook, *editTranscript, eventlog.ID, []eventlog.ID) {
	t.Helper()
	e := newEditTranscript(t, "fix a") // :01
	e.lines = append(e.lines, claudeTaskCall(e))
	files := map[string][]string{}
	sub := &editTranscript{dir: e.dir, ws: e.ws, n: e.n}
	sub.lines = append(sub.lines, fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":"fix a"},"uuid":"s0","timestamp":%q}`, sub.env(), sub.ts()))
	sub.edit(filepath.Join(e.ws, "a.txt"), "A0\n", "A0", "A1")
	files["s1/subagents/agent-a1b2c3d.jsonl"] = sidechainOf(sub.lines, "a1b2c3d")
	for i := range idle {
		agent := fmt.Sprintf("b%06d", i)
		line := fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":"look"},"uuid":"s0","timestamp":"2026-02-10T21:00:03.000Z"}`, sub.env())
		files["s1/subagents/agent-"+agent+".jsonl"] = sidechainOf([]string{line}, agent)
	}
	e.n = sub.n
	e.lines = append(e.lines, claudeTaskResult(e, `"totalToolUseCount":1,`))
	files["s1.jsonl"] = e.lines
	writeTree(t, e.ws, tree{"a.txt": "A1\n"})
	r, ids := importClaudeFiles(t, e, files)
	var idles []eventlog.ID
	for i := range idle {
		idles = append(idles, ids[fmt.Sprintf("s1/subagents/agent-b%06d.jsonl", i)])
	}
	return r, e, ids["s1.jsonl"], idles
}

// sidechainOf is lines of session s1 as subagent agent's: each marked a
// sidechain of it.
func sidechainOf(lines []string, agent string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.Replace(l, `"sessionId":"s1",`, `"sessionId":"s1","isSidechain":true,"agentId":"`+agent+`",`, 1)
	}
	return out
}

// A session linked to over maxFamily imported sessions is not read for
// what they wrote: its rewind refuses, saying so and what to do, nothing
// written, and its diff says so in a note. At the bound (maxFamily
// linked, one removed) both read them all: the rewind puts a.txt back as
// the subagent found it, and the diff shows it. The check had counted
// the session itself among the linked, refusing one linked to exactly
// maxFamily.
func TestFamilyBound(t *testing.T) {
	r, e, parent, idles := claudeWithIdleSubagents(t, maxFamily)
	over := fmt.Sprintf("this session is linked to over %d imported Claude Code sessions (forks, subagents), too many to read for what they wrote", maxFamily)

	got, patch, d := diffFiles(t, r, parent)
	if len(got) != 0 || !notesHave(d.Notes, over, ": files only its subagents changed are not shown") {
		t.Fatalf("diff over the bound: files %v, notes %q:\n%s", got, d.Notes, patch)
	}
	_, err := r.Rewind(parent, 1, false)
	if err == nil || !strings.Contains(err.Error(), "cannot rewind the files: "+over) || !strings.Contains(err.Error(), "--keep-files") {
		t.Fatalf("rewind over the bound: %v, want a refusal saying the family is too big, and --keep-files", err)
	}
	if got := readFileT(t, filepath.Join(e.ws, "a.txt")); got != "A1\n" {
		t.Fatalf("a.txt after the refusal: %q", got)
	}

	// One removed: maxFamily linked, all read.
	if _, err := r.RemoveSession(idles[0]); err != nil {
		t.Fatal(err)
	}
	got, patch, d = diffFiles(t, r, parent)
	if len(got) != 1 || got["a.txt"] != "modified" || !strings.Contains(patch, "-A0\n+A1\n") || !notesHave(d.Notes, "a.txt: compared with the file as it was before session", "(a Claude Code subagent of this session) changed it") {
		t.Fatalf("diff at the bound: files %v, notes %q:\n%s", got, d.Notes, patch)
	}
	rw, err := r.Rewind(parent, 1, false)
	if err != nil {
		t.Fatalf("rewind at the bound: %v", err)
	}
	if got := readFileT(t, filepath.Join(e.ws, "a.txt")); got != "A0\n" || rw.FilesRestored != 1 {
		t.Fatalf("a.txt after the rewind: %q, report %+v", got, rw)
	}
}

// forkChain forks session id n times, each fork of the one before, at
// event at: the last fork.
func forkChain(t *testing.T, r *Rook, id eventlog.ID, at uint64, n int) eventlog.ID {
	t.Helper()
	for range n {
		m, err := r.Log.Fork(id, at, eventlog.Meta{})
		if err != nil {
			t.Fatal(err)
		}
		id = m.ID
	}
	return id
}

// The line of rook forks up from a session to the imported one it comes
// from is bounded by maxFamily too: maxFamily forks down, a rewind reads
// the imported session's family (its subagent's edits put back); one
// more, the walk up had stopped at a rook fork without saying so, the
// family read from there none, and the rewind put nothing back, exit 0.
// It now refuses, saying so, nothing written, and the diff says so.
func TestFamilyLineOfRookForksBound(t *testing.T) {
	withMaxFamily(t, 3)
	r, e, parent, _ := claudeWithSubagent(t)
	at := forkChain(t, r, parent, 2, maxFamily)
	below := forkChain(t, r, at, 2, 1)
	over := fmt.Sprintf("this session is over %d rook forks (session fork, rewind) down from the imported Claude Code session it comes from, too many to follow to it and read what the sessions linked to it wrote", maxFamily)
	if _, _, d := diffFiles(t, r, below); !notesHave(d.Notes, over, ": files only its subagents changed are not shown") {
		t.Fatalf("diff %d forks down: notes %q", maxFamily+1, d.Notes)
	}
	rw, err := r.Rewind(below, 1, false)
	if err == nil || !strings.Contains(err.Error(), "cannot rewind the files: "+over) || !strings.Contains(err.Error(), "--keep-files") {
		t.Fatalf("rewind %d forks down: %v (report %+v), want a refusal saying the line is too long", maxFamily+1, err, rw)
	}
	wsUnchanged(t, e)
	rw, err = r.Rewind(at, 1, false)
	if err != nil {
		t.Fatalf("rewind %d forks down: %v", maxFamily, err)
	}
	if got := readFileT(t, filepath.Join(e.ws, "a.txt")) + readFileT(t, filepath.Join(e.ws, "b.txt")); got != "A0\nB0\n" || rw.FilesRestored != 2 || rw.FilesRemoved != 1 {
		t.Fatalf("files after the rewind %d forks down: %q, report %+v", maxFamily, got, rw)
	}
}

// codexWithIdleSubagents is codexWithSubagent's P and F imported, then
// idle more subagents of P, each a rollout of its session_meta alone:
// the store, P's session and its patch calls' seqs, and the idle ones'
// sessions.
func codexWithIdleSubagents(t *testing.T, idle int) (*Rook, *codexForkPair, eventlog.ID, []uint64, []eventlog.ID) {
	t.Helper()
	c := codexWithSubagent(t)
	r, p, _, pCalls, _ := c.imported(tree{"n.txt": "2\nB\n", "only.txt": "o\n"})
	day := filepath.Join(c.dir, "codex", "2026", "02", "03")
	for i := range idle {
		id := fmt.Sprintf("019c1000-0000-7000-8000-1%011d", i)
		meta := codexItem{"session_meta", fmt.Sprintf(`{"id":%q,"cwd":%q,"originator":"codex_cli_rs","cli_version":"0.80.0","source":{"subagent":{"thread_spawn":{"parent_thread_id":%q}}}}`, id, c.ws, codexPID)}.at(stampAt("00:06"))
		writeSource(t, vfs.OS, filepath.Join(day, "rollout-2026-02-03T10-00-06-"+id+".jsonl"), []string{meta}, "")
	}
	var idles []eventlog.ID
	rep := mustImport(t, r, FormatCodex, filepath.Join(c.dir, "codex"))
	for _, f := range rep.Files {
		if strings.Contains(f.Path, "-8000-1") {
			idles = append(idles, *f.Session)
		}
	}
	if len(idles) != idle {
		t.Fatalf("%d idle subagents imported, want %d", len(idles), idle)
	}
	return r, c, p, pCalls, idles
}

// So a Codex session's: over maxFamily linked, its rewind refuses for
// each file, saying why, and its diff says it in a note; at the bound
// both read the family (the subagent's patches of n.txt and only.txt).
func TestCodexFamilyBound(t *testing.T) {
	withMaxFamily(t, 3)
	r, c, p, pCalls, idles := codexWithIdleSubagents(t, maxFamily)
	over := fmt.Sprintf("this session is linked to over %d imported Codex sessions (forks, subagents), too many to read for what they wrote", maxFamily)
	got, patch, d := diffFiles(t, r, p)
	if len(got) != 1 || got["n.txt"] != "added" || !notesHave(d.Notes, over, ": files only its subagents changed are not shown") {
		t.Fatalf("diff over the bound: files %v, notes %q:\n%s", got, d.Notes, patch)
	}
	_, err := r.Rewind(p, pCalls[1], false)
	refusedFor(t, err, "n.txt", over)
	if got := c.read("n.txt"); got != "2\nB\n" {
		t.Fatalf("n.txt after the refusal: %q", got)
	}

	if _, err := r.RemoveSession(idles[0]); err != nil {
		t.Fatal(err)
	}
	got, patch, d = diffFiles(t, r, p)
	if len(got) != 2 || got["n.txt"] != "added" || got["only.txt"] != "added" || !strings.Contains(patch, "+2\n+B\n") || d.Patches.FromSubagents != 2 {
		t.Fatalf("diff at the bound: files %v, notes %q:\n%s", got, d.Notes, patch)
	}
}

// A line of rook forks deeper than the 64 the walks up to the imported
// session once stopped at (ImportedAncestor, removedImportedAncestor,
// forkLate) is the imported session's all the same: 70 forks down, a
// rewind had taken the fork for a native session, put nothing back and
// exited 0, and its diff had shown nothing. Only a loop (damaged
// metadata) ends a walk; a line over maxFamily is refused, saying so
// (TestFamilyLineOfRookForksBound).
func TestRewindSeventyRookForksDown(t *testing.T) {
	r, e, parent, _ := claudeWithSubagent(t)
	deep := forkChain(t, r, parent, 2, 70)
	if got, _, _ := diffFiles(t, r, deep); len(got) == 0 {
		t.Fatalf("diff 70 forks down shows no file")
	}
	rw, err := r.Rewind(deep, 1, false)
	if err != nil {
		t.Fatalf("rewind 70 forks down: %v", err)
	}
	if got := readFileT(t, filepath.Join(e.ws, "a.txt")) + readFileT(t, filepath.Join(e.ws, "b.txt")); got != "A0\nB0\n" || rw.FilesRestored != 2 || rw.FilesRemoved != 1 {
		t.Fatalf("files after the rewind 70 forks down: %q, report %+v", got, rw)
	}
}

// A loop of fork links (metadata damaged: two forks each the other's
// parent) ends the walks up, which once a bound of 64 ended: the fork
// reads as native, and a rewind of it, its diff and the walk for its
// title's origin return.
func TestForkLoopEndsTheWalksUp(t *testing.T) {
	r, _, parent, _ := claudeWithSubagent(t)
	a := forkChain(t, r, parent, 2, 1)
	b := forkChain(t, r, a, 2, 1)
	ma, err := r.Log.ReadMeta(a)
	if err != nil {
		t.Fatal(err)
	}
	ma.Parent = &b
	if err := r.Log.UpdateMeta(ma); err != nil {
		t.Fatal(err)
	}
	mb, err := r.Log.ReadMeta(b)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, ok := r.ImportedAncestor(mb); ok {
		t.Fatal("a loop of forks read as an imported session's")
	}
	if _, ok := r.removedImportedAncestor(mb); ok {
		t.Fatal("a loop of forks read as a removed imported session's")
	}
	if _, err := r.forkLate(b); err != nil {
		t.Fatal(err)
	}
	// The walk up for the title a rewind takes off ends too.
	if o, _, _ := r.titleOrigin(mb); o.ID != a && o.ID != b {
		t.Fatalf("title origin of a loop of forks: %s", o.ID)
	}
}
