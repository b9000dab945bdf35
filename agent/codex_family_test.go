package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// codexForkPair is a Codex parent rollout (P) and a fork of it (F), in one
// workspace, each line stamped with the time given (minutes:seconds past
// 10:00): F's file is its session_meta, P's lines up to the fork written
// again at the fork's time, then its own.
type codexForkPair struct {
	t      *testing.T
	dir    string
	ws     string
	p, f   []string
	g      []string // a second fork of P, if any
	gID    eventlog.ID
	copied int // P's lines F copies
}

func newCodexForkPair(t *testing.T) *codexForkPair {
	dir := t.TempDir()
	c := &codexForkPair{t: t, dir: dir, ws: filepath.Join(dir, "ws")}
	c.p = append(c.p, c.meta(codexPID, "", "00:00"))
	return c
}

func (c *codexForkPair) meta(id, from, at string) string {
	fork := ""
	if from != "" {
		fork = `"forked_from_id":"` + from + `",`
	}
	return codexItem{"session_meta", fmt.Sprintf(`{"id":%q,%s"cwd":%q,"originator":"codex_cli_rs","cli_version":"0.80.0","source":"cli"}`, id, fork, c.ws)}.at(stampAt(at))
}

func stampAt(at string) string { return "2026-02-03T10:" + at + ".000Z" }

// patch is an apply_patch call of body (call id cid) that applied.
func patchLines(cid, body, at string) []string {
	in, _ := json.Marshal("*** Begin Patch\n" + body + "\n*** End Patch\n")
	return []string{
		codexItem{"response_item", fmt.Sprintf(`{"type":"custom_tool_call","name":"apply_patch","call_id":%q,"input":%s}`, cid, in)}.at(stampAt(at)),
		codexItem{"response_item", fmt.Sprintf(`{"type":"custom_tool_call_output","call_id":%q,"output":"Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nM x\n"}`, cid)}.at(stampAt(at)),
	}
}

// fork forks F from P as it is now, at at.
func (c *codexForkPair) fork(at string) {
	c.copied = len(c.p)
	c.f = append(c.f, c.meta(codexFID, codexPID, at))
	c.f = append(c.f, restampLines(c.t, c.p, at)...)
}

// forkG forks G from P as it is now, at at.
func (c *codexForkPair) forkG(at string) {
	f, copied := c.f, c.copied
	c.f = nil
	c.fork(at)
	c.g = append([]string{c.meta(codexGID, codexPID, at)}, c.f[1:]...)
	c.f, c.copied = f, copied
}

// imported imports both, the workspace holding tr, and gives P's and F's
// sessions and their patch calls' seqs.
func (c *codexForkPair) imported(tr tree) (r *Rook, p, f eventlog.ID, pCalls, fCalls []uint64) {
	t := c.t
	day := filepath.Join(c.dir, "codex", "2026", "02", "03")
	writeSource(t, vfs.OS, filepath.Join(day, "rollout-2026-02-03T10-00-00-"+codexPID+".jsonl"), c.p, "")
	if c.f != nil {
		writeSource(t, vfs.OS, filepath.Join(day, "rollout-2026-02-03T10-05-00-"+codexFID+".jsonl"), c.f, "")
	}
	if c.g != nil {
		writeSource(t, vfs.OS, filepath.Join(day, "rollout-2026-02-03T10-06-00-"+codexGID+".jsonl"), c.g, "")
	}
	writeTree(t, c.ws, tr)
	r = diskRook(t, filepath.Join(c.dir, "store"))
	rep := mustImport(t, r, FormatCodex, filepath.Join(c.dir, "codex"))
	for _, fr := range rep.Files {
		if fr.Session == nil {
			t.Fatalf("%s not imported: %+v", fr.Path, fr)
		}
		switch {
		case strings.Contains(fr.Path, codexFID):
			f = *fr.Session
		case strings.Contains(fr.Path, codexGID):
			c.gID = *fr.Session
		default:
			p = *fr.Session
		}
	}
	seqsOf := func(id eventlog.ID) []uint64 {
		calls, err := r.rolloutPatchCalls(id)
		if err != nil {
			t.Fatal(err)
		}
		var out []uint64
		for _, c := range calls {
			out = append(out, c.seq)
		}
		return out
	}
	if f.IsZero() {
		return r, p, f, seqsOf(p), nil // (no F)
	}
	return r, p, f, seqsOf(p), seqsOf(f)
}

func (c *codexForkPair) read(p string) string { return readFileT(c.t, filepath.Join(c.ws, p)) }

// refusedFor fails unless err is a refusal naming path with a reason
// that has want in it.
func refusedFor(t *testing.T, err error, path, want string) {
	t.Helper()
	var ue *CodexUnknownStatesError
	if !errors.As(err, &ue) {
		t.Fatalf("rewind: %v, want a refusal", err)
	}
	for _, f := range ue.Files {
		if f.Path == path && strings.Contains(f.Why, want) {
			return
		}
	}
	t.Fatalf("refusal %v: no %s with %q", ue.Files, path, want)
}

// A Codex fork shares its parent's workspace: app.py, which existed
// before either session, was patched by P (a to A), then by the fork F
// (q to Q), and holds both. Rewinding P to before its patch undid it on
// the disk and kept F's Q (a file that never was, exit 0); rewinding F to
// before P's patch (in the lines F copied) kept P's later patch (y to Y)
// too. Each is now refused, naming the other session's patch; a rewind
// of P to a point after F's patch undoes only P's later one, rightly.
func TestCodexRewindCountsTheForkFamilysWrites(t *testing.T) {
	c := newCodexForkPair(t)
	c.p = append(c.p, patchLines("p1", "*** Update File: app.py\n@@\n-a\n+A", "00:02")...)
	c.fork("05:00")
	c.f = append(c.f, patchLines("f1", "*** Update File: app.py\n@@\n-q\n+Q", "05:02")...)
	c.p = append(c.p, patchLines("p2", "*** Update File: app.py\n@@\n-y\n+Y", "10:01")...)
	r, p, f, pCalls, fCalls := c.imported(tree{"app.py": "A\nx\nY\nz\nQ\n"})
	if len(pCalls) != 2 || len(fCalls) != 2 {
		t.Fatalf("calls %v %v", pCalls, fCalls)
	}
	_, err := r.Rewind(p, pCalls[0], false)
	refusedFor(t, err, "app.py", "session "+f.String()+" (a Codex fork of this session, in the same workspace) ran the patch of event #")
	_, err = r.Rewind(f, fCalls[0], false)
	refusedFor(t, err, "app.py", "session "+p.String()+" (the Codex session this session came from, in the same workspace) ran the patch of event #")
	if got := c.read("app.py"); got != "A\nx\nY\nz\nQ\n" {
		t.Fatalf("app.py after refusals: %q", got)
	}
	// After F's patch (at 10:05:02), before P's last (10:10:01).
	if _, err := r.Rewind(p, pCalls[1], false); err != nil {
		t.Fatal(err)
	}
	if got := c.read("app.py"); got != "A\nx\ny\nz\nQ\n" {
		t.Fatalf("app.py: %q", got)
	}
}

// A file P added whole and replays to its point (n.txt "1 b") was patched
// by the fork F in between (1 to 2), before P's point: the replay's state
// is not what the disk held there (the rewind wrote "1 b", exit 0). It
// now takes P's patches after the point undone on the disk ("2 b"), and
// where they do not undo, refuses, naming F's patch. o.txt, which F's
// patches do not touch, is put back from the replay.
func TestCodexRewindReplayCountsTheForksWritesBetween(t *testing.T) {
	c := newCodexForkPair(t)
	c.p = append(c.p, patchLines("p1", "*** Add File: n.txt\n+1\n+b\n*** Add File: o.txt\n+1", "00:02")...)
	c.fork("05:00")
	c.f = append(c.f, patchLines("f1", "*** Update File: n.txt\n@@\n-1\n+2", "05:02")...)
	c.p = append(c.p, patchLines("p2", "*** Update File: n.txt\n@@\n-b\n+B\n*** Update File: o.txt\n@@\n-1\n+3", "10:01")...)
	r, p, f, pCalls, _ := c.imported(tree{"n.txt": "2\nB\n", "o.txt": "3\n"})
	rw, err := r.Rewind(p, pCalls[1], false)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.read("n.txt") + c.read("o.txt"); got != "2\nb\n1\n" {
		t.Fatalf("files: %q", got)
	}
	var hows []string
	for _, f := range rw.RolloutFiles {
		hows = append(hows, f.Path+":"+f.How)
	}
	if want := "n.txt:reversed o.txt:replayed"; strings.Join(hows, " ") != want {
		t.Fatalf("rollout files %q, want %q", hows, want)
	}
	// Changed by hand since: P's patch does not undo on it.
	writeTree(t, c.ws, tree{"n.txt": "hand\n", "o.txt": "3\n"})
	_, err = r.Rewind(p, pCalls[1], false)
	refusedFor(t, err, "n.txt", "session "+f.String()+" (a Codex fork of this session, in the same workspace) ran the patch of event #3 at 2026-02-03 10:05:02.000, after this session's rollout last says what it held and before event #")
	if got := c.read("n.txt"); got != "hand\n" {
		t.Fatalf("n.txt after the refusal: %q", got)
	}
}

// The parent removed since (rook session rm): what it wrote after the
// fork is not known, so the fork's patch is not undone on the disk (the
// file may hold the parent's later patches too: here Y), and the refusal
// says why, writing nothing.
func TestCodexRewindForkOfARemovedParent(t *testing.T) {
	c := newCodexForkPair(t)
	c.p = append(c.p, patchLines("p1", "*** Update File: app.py\n@@\n-a\n+A\n*** Add File: n.txt\n+1", "00:02")...)
	c.fork("05:00")
	c.f = append(c.f, patchLines("f1", "*** Update File: app.py\n@@\n-q\n+Q\n*** Update File: n.txt\n@@\n-1\n+2", "05:02")...)
	c.p = append(c.p, patchLines("p2", "*** Update File: app.py\n@@\n-y\n+Y", "10:01")...)
	r, p, f, _, fCalls := c.imported(tree{"app.py": "A\nx\nY\nz\nQ\n", "n.txt": "2\n"})
	if _, err := r.RemoveSession(p); err != nil {
		t.Fatal(err)
	}
	_, err := r.Rewind(f, fCalls[1], false)
	refusedFor(t, err, "app.py", "session "+p.String()+", which "+f.String()+" came from, was removed from rook since (session rm), so what it wrote after")
	if got := c.read("app.py"); got != "A\nx\nY\nz\nQ\n" {
		t.Fatalf("app.py after the refusal: %q", got)
	}
}

// A rewind's fork of a parent removed since: its own line, not another's.
func TestCodexRewindOfARewindsForkOfARemovedParent(t *testing.T) {
	c := newCodexForkPair(t)
	c.p = append(c.p, patchLines("p1", "*** Add File: n.txt\n+a\n+x\n+y", "00:02")...)
	c.p = append(c.p, patchLines("p2", "*** Update File: n.txt\n@@\n-x\n+X", "00:04")...)
	c.p = append(c.p, patchLines("p3", "*** Update File: n.txt\n@@\n-y\n+Y", "00:06")...)
	c.fork("05:00")
	c.f = append(c.f, patchLines("f1", "*** Add File: other.txt\n+o", "05:02")...)
	r, p, _, pCalls, _ := c.imported(tree{"n.txt": "a\nX\nY\n", "other.txt": "o\n"})
	rw, err := r.Rewind(p, pCalls[2], false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.RemoveSession(p); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Rewind(rw.Fork, pCalls[1], false); err != nil {
		t.Fatal(err)
	}
	if got := c.read("n.txt"); got != "a\nx\ny\n" {
		t.Fatalf("n.txt: %q", got)
	}
}

// A point in a fork's copy after the copy's last call (a copied message)
// is in the copy, though no copied call comes after it: P's patch after
// what F copied (00:04) came after it, and F's rewind there is refused.
func TestCodexRewindPointInCopyAfterItsLastCall(t *testing.T) {
	c := newCodexForkPair(t)
	c.p = append(c.p, patchLines("p1", "*** Update File: app.py\n@@\n-a\n+A", "00:02")...)
	c.p = append(c.p, codexItem{"response_item", `{"type":"message","role":"user","content":[{"type":"input_text","text":"next"}]}`}.at(stampAt("00:03")))
	c.fork("05:00")
	c.p = append(c.p, patchLines("p2", "*** Update File: app.py\n@@\n-y\n+Y", "00:04")...)
	c.f = append(c.f, patchLines("f1", "*** Update File: app.py\n@@\n-q\n+Q", "05:02")...)
	r, p, f, _, fCalls := c.imported(tree{"app.py": "A\nx\nY\nz\nQ\n"})
	_, err := r.Rewind(f, fCalls[1]-1, false) // the copied message
	refusedFor(t, err, "app.py", "session "+p.String()+" (the Codex session this session came from")
}

// Copies of P's calls in its other forks (G's, a grandchild's) are P's
// writes, timed by P's: not the forks' own at their fork times.
func TestCodexRewindCopiesInOtherForks(t *testing.T) {
	t.Run("sibling", func(t *testing.T) {
		c := newCodexForkPair(t)
		c.p = append(c.p, patchLines("p1", "*** Update File: app.py\n@@\n-a\n+A", "00:02")...)
		c.fork("05:00")
		c.p = append(c.p, patchLines("p2", "*** Update File: app.py\n@@\n-y\n+Y", "05:10")...)
		c.forkG("06:00")
		c.f = append(c.f, patchLines("f1", "*** Update File: app.py\n@@\n-q\n+Q", "05:20")...)
		c.f = append(c.f, patchLines("f2", "*** Update File: app.py\n@@\n-z\n+Z", "05:40")...)
		r, _, f, _, fCalls := c.imported(tree{"app.py": "A\nx\nY\nZ\nQ\n"})
		if _, err := r.Rewind(f, fCalls[2], false); err != nil {
			t.Fatal(err)
		}
		if got := c.read("app.py"); got != "A\nx\nY\nz\nQ\n" {
			t.Fatalf("app.py %q", got)
		}
	})
	t.Run("grandchild", func(t *testing.T) {
		c := newCodexForkPair(t)
		c.p = append(c.p, patchLines("p1", "*** Update File: app.py\n@@\n-a\n+A", "00:02")...)
		c.fork("05:00")
		c.f = append(c.f, patchLines("f1", "*** Update File: app.py\n@@\n-q\n+Q", "05:02")...)
		c.g = append([]string{c.meta(codexGID, codexFID, "06:00")}, restampLines(t, c.f[1:], "06:00")...)
		c.p = append(c.p, codexItem{"response_item", `{"type":"message","role":"user","content":[{"type":"input_text","text":"next"}]}`}.at(stampAt("05:30")))
		c.p = append(c.p, patchLines("p2", "*** Update File: app.py\n@@\n-y\n+Y", "10:01")...)
		r, p, _, pCalls, _ := c.imported(tree{"app.py": "A\nx\nY\nz\nQ\n"})
		if _, err := r.Rewind(p, pCalls[1]-1, false); err != nil {
			t.Fatal(err)
		}
		if got := c.read("app.py"); got != "A\nx\ny\nz\nQ\n" {
			t.Fatalf("app.py %q", got)
		}
	})
}

// A command without a call id (an older local_shell_call) in P's lines:
// F's copy of it is P's, not a command F ran.
func TestCodexRewindCopiedCommandWithoutCallID(t *testing.T) {
	c := newCodexForkPair(t)
	c.p = append(c.p, patchLines("p1", "*** Update File: app.py\n@@\n-a\n+A", "00:02")...)
	c.p = append(c.p, codexItem{"response_item", `{"type":"local_shell_call","status":"completed","action":{"type":"exec","command":["ls"]}}`}.at(stampAt("00:03")))
	c.p = append(c.p, patchLines("p2", "*** Update File: app.py\n@@\n-x\n+X", "00:04")...)
	c.fork("05:00")
	r, p, _, pCalls, _ := c.imported(tree{"app.py": "A\nX\n"})
	if _, err := r.Rewind(p, pCalls[1], false); err != nil {
		t.Fatal(err)
	}
	if got := c.read("app.py"); got != "A\nx\n" {
		t.Fatalf("app.py %q", got)
	}
}

// restampLines are lines written again at at.
func restampLines(t *testing.T, lines []string, at string) []string {
	var out []string
	for _, l := range lines {
		var v map[string]json.RawMessage
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatal(err)
		}
		v["timestamp"], _ = json.Marshal(stampAt(at))
		b, _ := json.Marshal(v)
		out = append(out, string(b))
	}
	return out
}

// Codex writes a fork's copy of its parent's lines again at the fork's
// time, and a fork made by backtracking copies only the start of them: P
// patched app.py and n.txt at 00:04, after what F copied, and F forked
// at 05:00. By the copies' times, P's patch came before F's point; it
// came after. Rewinding F to its copy of P's first patch is refused
// (app.py: undone on the disk, it would keep P's Y), and rewinding F to
// its own patch undoes it on the disk, not replays the copy (n.txt "1 b",
// where the file held "1 B").
func TestCodexRewindForkCopyTimes(t *testing.T) {
	c := newCodexForkPair(t)
	c.p = append(c.p, patchLines("p1", "*** Update File: app.py\n@@\n-a\n+A\n*** Add File: n.txt\n+1\n+b", "00:02")...)
	c.fork("05:00")
	c.p = append(c.p, patchLines("p2", "*** Update File: app.py\n@@\n-y\n+Y\n*** Update File: n.txt\n@@\n-b\n+B", "00:04")...)
	c.f = append(c.f, patchLines("f1", "*** Update File: app.py\n@@\n-q\n+Q\n*** Update File: n.txt\n@@\n-1\n+2", "05:02")...)
	r, p, _, _, fCalls := c.imported(tree{"app.py": "A\nx\nY\nz\nQ\n", "n.txt": "2\nB\n"})
	_, err := r.Rewind(f0(t, r, p, fCalls), fCalls[0], false)
	refusedFor(t, err, "app.py", "session "+p.String()+" (the Codex session this session came from, in the same workspace) ran the patch of event #")
	f := f0(t, r, p, fCalls)
	rw, err := r.Rewind(f, fCalls[1], false)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.read("n.txt") + c.read("app.py"); got != "1\nB\nA\nx\nY\nz\nq\n" {
		t.Fatalf("files: %q", got)
	}
	for _, h := range rw.RolloutFiles {
		if h.How != "reversed" {
			t.Errorf("%s: %s, want reversed", h.Path, h.How)
		}
	}
}

// f0 is P's fork F.
func f0(t *testing.T, r *Rook, p eventlog.ID, _ []uint64) eventlog.ID {
	t.Helper()
	children, err := r.Log.Children(p)
	if err != nil || len(children) == 0 {
		t.Fatalf("children of %s: %v %v", p, children, err)
	}
	return children[0].ID
}

// P removed since: its forks F and G still name it their parent. G's
// patch after F's point is counted all the same.
func TestCodexRewindSiblingOfARemovedParent(t *testing.T) {
	c := newCodexForkPair(t)
	c.p = append(c.p, patchLines("p1", "*** Update File: app.py\n@@\n-a\n+A", "00:02")...)
	c.fork("05:00")
	c.forkG("06:00")
	c.f = append(c.f, patchLines("f1", "*** Update File: app.py\n@@\n-q\n+Q", "05:02")...)
	c.g = append(c.g, patchLines("g1", "*** Update File: app.py\n@@\n-y\n+Y", "06:02")...)
	r, p, f, _, fCalls := c.imported(tree{"app.py": "A\nx\nY\nz\nQ\n"})
	if _, err := r.RemoveSession(p); err != nil {
		t.Fatal(err)
	}
	_, err := r.Rewind(f, fCalls[1], false)
	refusedFor(t, err, "app.py", "session "+c.gID.String()+" (one of the imported Codex sessions linked to this session, in the same workspace) ran the patch of event #")
}

// A path P's patch wrote in the event just before the point (a
// patch_apply_end alone): the replay's window is from that patch to the
// point, not the deletion's (from the point to the next patch), so F's
// patch after the point does not refuse it.
func TestCodexRewindWindowOfAPatchJustBeforeThePoint(t *testing.T) {
	c := newCodexForkPair(t)
	end := fmt.Sprintf(`{"type":"patch_apply_end","call_id":"p1","success":true,"changes":{%q:{"type":"add","content":"1\nb\n"}}}`, filepath.Join(c.ws, "n.txt"))
	c.p = append(c.p, codexItem{"event_msg", end}.at(stampAt("00:02")),
		codexItem{"response_item", `{"type":"message","role":"user","content":[{"type":"input_text","text":"next"}]}`}.at(stampAt("00:03")))
	c.fork("05:00")
	c.f = append(c.f, patchLines("f1", "*** Update File: n.txt\n@@\n-1\n+2", "05:02")...)
	c.p = append(c.p, patchLines("p3", "*** Update File: n.txt\n@@\n-b\n+B", "10:01")...)
	r, p, _, pCalls, _ := c.imported(tree{"n.txt": "2\nB\n"})
	if _, err := r.Rewind(p, pCalls[0]+1, false); err != nil {
		t.Fatal(err)
	}
	if got := c.read("n.txt"); got != "1\nb\n" {
		t.Fatalf("n.txt: %q", got)
	}
}

// A rewind of the fork a rewind of P made does not count F's copies of
// P's own calls (p2, undone by the first rewind) as F's writes.
func TestCodexRewindOfARewindsForkNotCountingCopies(t *testing.T) {
	c := newCodexForkPair(t)
	c.p = append(c.p, patchLines("p1", "*** Update File: app.py\n@@\n-a\n+A", "00:02")...)
	c.p = append(c.p, patchLines("p2", "*** Update File: app.py\n@@\n-x\n+X", "00:04")...)
	c.fork("05:00")
	c.f = append(c.f, patchLines("f1", "*** Add File: other.txt\n+o", "05:02")...)
	r, p, _, pCalls, _ := c.imported(tree{"app.py": "A\nX\n", "other.txt": "o\n"})
	rw, err := r.Rewind(p, pCalls[1], false)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.read("app.py"); got != "A\nx\n" {
		t.Fatalf("app.py: %q", got)
	}
	if _, err := r.Rewind(rw.Fork, pCalls[0], false); err != nil {
		t.Fatal(err)
	}
	if got := c.read("app.py"); got != "a\nx\n" {
		t.Fatalf("app.py: %q", got)
	}
}

// A Codex subagent works in its parent's workspace, often at once: its
// patch after the parent's point is counted as a fork's is.
func TestCodexRewindCountsASubagentsWrites(t *testing.T) {
	c := newCodexForkPair(t)
	c.p = append(c.p, patchLines("p1", "*** Update File: app.py\n@@\n-a\n+A", "00:02")...)
	c.f = append(c.f, codexItem{"session_meta", fmt.Sprintf(`{"id":%q,"cwd":%q,"originator":"codex_cli_rs","cli_version":"0.80.0","source":{"subagent":{"thread_spawn":{"parent_thread_id":%q}}}}`, codexFID, c.ws, codexPID)}.at(stampAt("03:00")))
	c.f = append(c.f, patchLines("s1", "*** Update File: app.py\n@@\n-q\n+Q", "03:02")...)
	r, p, f, pCalls, _ := c.imported(tree{"app.py": "A\nx\nQ\n"})
	if m, err := r.Log.ReadMeta(f); err != nil || m.Parent == nil || *m.Parent != p {
		t.Fatalf("the subagent is not linked to its parent: %+v %v", m, err)
	}
	_, err := r.Rewind(p, pCalls[0], false)
	refusedFor(t, err, "app.py", "session "+f.String()+" (a Codex subagent of this session, in the same workspace) ran the patch of event #")
}

// P adds n.txt ("1 b c"), its subagent F patches it (1 to 2), then P
// patches it (b to B) before the point and (c to C) after it. P's patch
// of b was applied to F's "2 b c", which the replay does not hold: F's
// patch came before P's last patch of the file before the point, yet
// after the Add File the replay starts from, and the replay's "1 B c", a
// state the file never had, was written, exit 0. F's write counts from
// the patch that wrote the file whole: P's patch after the point is
// undone on the disk ("2 B c"), and where it does not undo, the rewind
// refuses, naming F's patch. So too where P added it as a.txt, F
// patched a.txt, and P's patch of b moved it to n.txt: the content came
// through a.txt.
func TestCodexRewindCountsASubagentsWriteBeforeALaterPatch(t *testing.T) {
	for _, moved := range []bool{false, true} {
		t.Run(fmt.Sprintf("moved=%v", moved), func(t *testing.T) {
			c := newCodexForkPair(t)
			first, move := "n.txt", ""
			if moved {
				first, move = "a.txt", "*** Move to: n.txt\n"
			}
			c.p = append(c.p, patchLines("p1", "*** Add File: "+first+"\n+1\n+b\n+c", "00:02")...)
			c.p = append(c.p, spawnLines("spawn1", codexFID, "00:03")...)
			c.f = append(c.f, c.subagentMeta("00:03"))
			c.f = append(c.f, patchLines("s1", "*** Update File: "+first+"\n@@\n-1\n+2", "00:04")...)
			c.p = append(c.p, waitLines("w1", `{"completed":"done"}`, false, "00:06")...)
			c.p = append(c.p, patchLines("p2", "*** Update File: "+first+"\n"+move+"@@\n-b\n+B", "00:08")...)
			c.p = append(c.p, patchLines("p3", "*** Update File: n.txt\n@@\n-c\n+C", "00:10")...)
			r, p, f, pCalls, _ := c.imported(tree{"n.txt": "2\nB\nC\n"})
			rw, err := r.Rewind(p, pCalls[2], false)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.read("n.txt"); got != "2\nB\nc\n" {
				t.Fatalf("n.txt: %q", got)
			}
			if len(rw.RolloutFiles) != 1 || rw.RolloutFiles[0].How != "reversed" {
				t.Fatalf("rollout files: %+v", rw.RolloutFiles)
			}
			// Changed by hand since: P's patch does not undo on it.
			writeTree(t, c.ws, tree{"n.txt": "hand\n"})
			_, err = r.Rewind(p, pCalls[2], false)
			refusedFor(t, err, "n.txt", "session "+f.String()+" (a Codex subagent of this session, in the same workspace) ran the patch of event #")
			if got := c.read("n.txt"); got != "hand\n" {
				t.Fatalf("n.txt after the refusal: %q", got)
			}
		})
	}
}
