package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// codexSession is a hand-made Codex rollout in workspace ws, its calls
// each one patch that applied (or a command, or a patch_apply_end).
type codexSession struct {
	t     *testing.T
	dir   string
	ws    string
	items []codexItem
	n     int
}

func newCodexSession(t *testing.T) *codexSession { return newCodexSessionIn(t, "") }

// newCodexSessionIn is a rollout whose session_meta names cwd as its
// workspace ("": ws, the directory its files are written in).
func newCodexSessionIn(t *testing.T, cwd string) *codexSession {
	dir := t.TempDir()
	s := &codexSession{t: t, dir: dir, ws: filepath.Join(dir, "ws")}
	if cwd == "" {
		cwd = s.ws
	}
	s.items = append(s.items, codexItem{"session_meta", fmt.Sprintf(`{"id":%q,"cwd":%q,"originator":"codex_cli_rs","cli_version":"0.80.0","source":"cli"}`, codexPID, cwd)})
	return s
}

// patch adds an apply_patch call of body, and its output saying it applied.
func (s *codexSession) patch(body string) { s.call(body, true) }

// call adds an apply_patch call of body, and, if out, its output saying
// it applied (else the rollout does not say whether it did).
func (s *codexSession) call(body string, out bool) {
	const ok = `"Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nM x\n"`
	in, _ := json.Marshal("*** Begin Patch\n" + body + "\n*** End Patch\n")
	s.items = append(s.items, codexItem{"response_item", fmt.Sprintf(`{"type":"custom_tool_call","name":"apply_patch","call_id":"c%d","input":%s}`, s.n, in)})
	if out {
		s.items = append(s.items, codexItem{"response_item", fmt.Sprintf(`{"type":"custom_tool_call_output","call_id":"c%d","output":%s}`, s.n, ok)})
	}
	s.n++
}

// applied adds a patch_apply_end that says a patch applied, with the
// unified diff of file p (in the workspace).
func (s *codexSession) applied(p, diff string) {
	d, _ := json.Marshal(diff)
	s.items = append(s.items, codexItem{"event_msg", fmt.Sprintf(`{"type":"patch_apply_end","call_id":"c%d","success":true,"changes":{%q:{"type":"update","unified_diff":%s}}}`,
		s.n, filepath.Join(s.ws, p), d)})
	s.n++
}

// command adds a shell call of argv (make, if none) and its output.
func (s *codexSession) command(argv ...string) {
	if len(argv) == 0 {
		argv = []string{"make"}
	}
	args, _ := json.Marshal(map[string][]string{"command": argv})
	s.items = append(s.items,
		codexItem{"response_item", fmt.Sprintf(`{"type":"function_call","name":"shell","call_id":"s%d","arguments":%q}`, s.n, args)},
		codexItem{"response_item", fmt.Sprintf(`{"type":"function_call_output","call_id":"s%d","output":"{\"output\":\"\",\"metadata\":{\"exit_code\":0}}"}`, s.n)})
	s.n++
}

// imported imports the rollout, the workspace holding tr, and gives the
// rook, the session and the seqs of its patch calls (see rolloutPatchCalls).
func (s *codexSession) imported(tr tree) (*Rook, eventlog.ID, []uint64) {
	t := s.t
	writeSource(t, vfs.OS, filepath.Join(s.dir, "codex", "2026", "02", "03", "rollout-2026-02-03T10-00-00-"+codexPID+".jsonl"), codexStamped(s.items, 10, 0), "")
	writeTree(t, s.ws, tr)
	r := diskRook(t, filepath.Join(s.dir, "store"))
	rep := mustImport(t, r, FormatCodex, filepath.Join(s.dir, "codex"))
	id := *rep.Files[0].Session
	calls, err := r.rolloutPatchCalls(id)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	for _, c := range calls {
		seqs = append(seqs, c.seq)
	}
	return r, id, seqs
}

func (s *codexSession) read(p string) string { return readFileT(s.t, filepath.Join(s.ws, p)) }

// A rewind of an imported Codex session puts back the files whose content
// at the rewind point the rollout's applied patches say (one the session
// added whole, then patched), removes those the session added after it
// where they are known absent then (deleted before the point), and refuses, naming the file
// and why, where the content is not known (a file that existed before the
// session, updated by a patch alone, and changed since, so that the patch
// does not reverse on it), writing nothing.
func TestRewindCodexSession(t *testing.T) {
	s := newCodexSession(t)
	at := func(p string) string { return filepath.Join(s.ws, p) }
	for _, patch := range []string{
		"*** Add File: new.txt\n+one\n*** Add File: made/m.txt\n+old",           // c0: added whole
		"*** Update File: new.txt\n@@\n-one\n+two\n*** Delete File: made/m.txt", // c1: made/m.txt absent from here
		"*** Update File: old.txt\n@@\n-x\n+y",                                  // c2: does not reverse on old.txt now
		"*** Update File: new.txt\n@@\n-two\n+three",
		"*** Add File: made/m.txt\n+m", // c4: absent before (c1)
	} {
		s.patch(patch)
	}
	r, id, calls := s.imported(tree{"new.txt": "mode:0755:three\n", "old.txt": "y, changed by hand\n", "made/m.txt": "m\n"})
	if len(calls) != 5 {
		t.Fatalf("calls %d", len(calls))
	}

	// To before c2: old.txt's content then is not in the rollout.
	_, err := r.Rewind(id, calls[2], false)
	var ue *CodexUnknownStatesError
	if !errors.As(err, &ue) || len(ue.Files) != 1 || ue.Files[0].Path != "old.txt" || !strings.Contains(ue.Files[0].Why, "changed since the session") ||
		!strings.Contains(err.Error(), "old.txt") || !strings.Contains(err.Error(), "nothing changed") {
		t.Fatalf("rewind to c2: %v, want a refusal naming old.txt", err)
	}
	if got := readFileT(t, at("new.txt")); got != "three\n" {
		t.Fatalf("new.txt after a refused rewind: %q", got)
	}

	// To before c3: new.txt as c1 left it, made/m.txt gone (added after).
	rw, err := r.Rewind(id, calls[3], false)
	if err != nil {
		t.Fatal(err)
	}
	if rw.FromRollout != 2 || rw.FilesRestored != 1 || rw.FilesRemoved != 1 || rw.Undo == "" {
		t.Fatalf("rewind %+v", rw)
	}
	if got := readFileT(t, at("new.txt")); got != "two\n" {
		t.Fatalf("new.txt after the rewind: %q, want two", got)
	}
	if fi, err := os.Stat(at("new.txt")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("new.txt's mode: %v %v", fi, err)
	}
	if got := readFileT(t, at("old.txt")); got != "y, changed by hand\n" {
		t.Fatalf("old.txt, not after the point, was written: %q", got)
	}
	if _, err := os.Lstat(at("made/m.txt")); !os.IsNotExist(err) {
		t.Fatalf("made/m.txt is still there: %v", err)
	}
	// Its undo puts the disk back.
	if _, err := r.Rewind(rw.Fork, *rw.BeforeSeq, false); err != nil {
		t.Fatal(err)
	}
	if got := readFileT(t, at("new.txt")); got != "three\n" {
		t.Fatalf("new.txt after the undo: %q", got)
	}
	if got := readFileT(t, at("made/m.txt")); got != "m\n" {
		t.Fatalf("made/m.txt after the undo: %q", got)
	}
}

// A patch the rollout does not say applied may have changed the files it
// names: one named before the rewind point has no known content after
// it; after the point, a file's state there is still known. A path
// outside the workspace is never written.
func TestCodexRewindStatesDoubtfulAndOutside(t *testing.T) {
	s := newCodexSessionIn(t, "/home/dev/app")
	s.call("*** Add File: a.txt\n+a\n*** Add File: b.txt\n+b", true)
	s.call("*** Update File: a.txt\n@@\n-a\n+A", false) // no output: did it apply?
	s.call("*** Update File: a.txt\n@@\n-A\n+AA\n*** Update File: b.txt\n@@\n-b\n+B\n*** Add File: /etc/x.conf\n+x", true)
	s.call("*** Update File: b.txt\n@@\n-B\n+BB", false)
	s.call("not a patch", false) // nor does it say what it would change
	// applied, but its change of c.txt does not read; of d.txt, of a kind
	// rook does not know
	s.items = append(s.items, codexItem{"event_msg", `{"type":"patch_apply_end","call_id":"c5","success":true,"changes":{"/home/dev/app/c.txt":5,"/home/dev/app/d.txt":{"type":"chmod"}}}`})
	r, id, calls := s.imported(nil)
	if len(calls) != 6 {
		t.Fatalf("calls %d", len(calls))
	}
	states, notes, _, err := r.codexRewindStates(id, calls[2], "/home/dev/app")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("the rollout does not say whether the patch of event #%d applied, nor which files it would change", calls[4]); len(notes) != 1 || !strings.HasPrefix(notes[0], want) {
		t.Errorf("notes %q, want one saying %q", notes, want)
	}
	var got []string
	for _, p := range []string{"a.txt", "b.txt", "/etc/x.conf", "c.txt", "d.txt"} {
		st, ok := states[p]
		switch {
		case !ok:
			got = append(got, p+":none")
		case st.known:
			got = append(got, p+":"+strings.TrimSpace(string(st.content)))
		case st.absent:
			got = append(got, p+":absent")
		default:
			got = append(got, p+":unknown")
		}
	}
	if want := "a.txt:unknown b.txt:b /etc/x.conf:unknown c.txt:unknown d.txt:unknown"; strings.Join(got, " ") != want {
		t.Errorf("states %s, want %s", strings.Join(got, " "), want)
	}
}

// Codex's Add File writes a file whole whether or not one is there, and a
// Move to writes over its target: a path the session had not touched
// before the rewind point, whose first patch after it adds it or moves a
// file onto it, may have existed then. The rewind refuses, naming it,
// rather than remove a file the user had (README.md written whole over
// hers); a path the session had deleted before the point is known absent.
func TestCodexRewindAddFileMayOverwrite(t *testing.T) {
	s := newCodexSession(t)
	at := func(p string) string { return filepath.Join(s.ws, p) }
	for _, patch := range []string{
		"*** Add File: gone.txt\n+g",                                 // c0
		"*** Delete File: gone.txt",                                  // c1: absent from here
		"*** Add File: README.md\n+rewritten",                        // c2: over the user's README.md
		"*** Add File: src.txt\n+s",                                  // c3
		"*** Update File: src.txt\n*** Move to: dst.txt\n@@\n-s\n+t", // c4: over the user's dst.txt
		"*** Add File: gone.txt\n+again",                             // c5
	} {
		s.patch(patch)
	}
	r, id, calls := s.imported(tree{"README.md": "rewritten\n", "dst.txt": "t\n", "gone.txt": "again\n"})
	if len(calls) != 6 {
		t.Fatalf("calls %d", len(calls))
	}
	_, err := r.Rewind(id, calls[2], false)
	var ue *CodexUnknownStatesError
	if !errors.As(err, &ue) {
		t.Fatalf("rewind to c2: %v, want a refusal", err)
	}
	var got []string
	for _, f := range ue.Files {
		got = append(got, f.Path)
		if !strings.Contains(f.Why, "whether it existed") {
			t.Errorf("%s: why %q", f.Path, f.Why)
		}
	}
	if want := "README.md dst.txt src.txt"; strings.Join(got, " ") != want {
		t.Errorf("refused %q, want %q", got, want)
	}
	for p, want := range map[string]string{"README.md": "rewritten\n", "dst.txt": "t\n", "gone.txt": "again\n"} {
		if got := readFileT(t, at(p)); got != want {
			t.Errorf("%s after a refused rewind: %q", p, got)
		}
	}
	// After the README.md and the move, gone.txt's state is known.
	rw, err := r.Rewind(id, calls[5], false)
	if err != nil {
		t.Fatal(err)
	}
	if rw.FilesRemoved != 1 {
		t.Fatalf("rewind %+v", rw)
	}
	if _, err := os.Lstat(at("gone.txt")); !os.IsNotExist(err) {
		t.Fatalf("gone.txt is still there: %v", err)
	}
}

// A rollout made on Windows names a workspace (C:\w) that is no path on
// this host: relative here, it would be taken from the current directory.
// The rewind refuses rather than write in a directory of that name there.
func TestCodexRewindWindowsWorkspaceNotWritten(t *testing.T) {
	s := newCodexSessionIn(t, `C:\w`)
	for _, patch := range []string{"*** Add File: a.txt\n+a", "*** Delete File: a.txt", "*** Add File: a.txt\n+b"} {
		s.patch(patch)
	}
	here := filepath.Join(s.dir, "here")
	writeTree(t, here, tree{`C:\w/a.txt`: "b\n"})
	t.Chdir(here)
	r, id, calls := s.imported(nil)
	if len(calls) != 3 {
		t.Fatalf("calls %d", len(calls))
	}
	_, err := r.Rewind(id, calls[2], false)
	if err == nil || !strings.Contains(err.Error(), "nothing changed") {
		t.Errorf("rewind: %v, want a refusal", err)
	}
	if got := readFileT(t, filepath.Join(here, `C:\w`, "a.txt")); got != "b\n" {
		t.Fatalf("a.txt under ./C:\\w: %q", got)
	}
}

// A command the session ran (a formatter, sed -i) between the patch that
// last wrote a file and the rewind point may have changed it, and the
// rollout does not say how: the replay's content is not what the file
// held at the point. The rewind refuses, naming the command's event,
// rather than write the patches' content over it; with no command
// between, it puts the file back.
func TestCodexRewindCommandBeforePoint(t *testing.T) {
	s := newCodexSession(t)
	s.patch("*** Add File: a.txt\n+one\n+two")
	s.command("sed", "-i", "s/one/ONE/", "a.txt")
	s.patch("*** Update File: a.txt\n@@\n one\n-two\n+three")
	r, id, calls := s.imported(tree{"a.txt": "ONE\nthree\n"})
	if len(calls) != 2 {
		t.Fatalf("calls %d", len(calls))
	}
	_, err := r.Rewind(id, calls[1], false)
	var ue *CodexUnknownStatesError
	if !errors.As(err, &ue) || len(ue.Files) != 1 || ue.Files[0].Path != "a.txt" || !strings.Contains(ue.Files[0].Why, "command") {
		t.Fatalf("rewind past the command: %v, want a refusal naming a.txt", err)
	}
	if got := s.read("a.txt"); got != "ONE\nthree\n" {
		t.Fatalf("a.txt after a refused rewind: %q", got)
	}
	// To before the command: a.txt as the Add File wrote it.
	if _, err := r.Rewind(id, calls[0]+2, false); err != nil {
		t.Fatal(err)
	}
	if got := s.read("a.txt"); got != "one\ntwo\n" {
		t.Fatalf("a.txt: %q", got)
	}
}

// A patch after the point that renames a.txt to b.txt (Update File, Move
// to): whether b.txt existed at the point the rollout does not say, and
// a.txt's content then is the patch undone on b.txt, its only copy. The
// refusal names b.txt and, rather than tell the user to remove it (which
// would lose a.txt), says --absent b.txt; with it the rewind puts a.txt
// back from b.txt and removes b.txt, and its undo puts b.txt back. A path
// the rollout says something of, or one no patch after the point
// touches, is refused for --absent, writing nothing.
func TestCodexRewindAbsentMoveTarget(t *testing.T) {
	s := newCodexSession(t)
	s.patch("*** Add File: other.txt\n+o")
	s.patch("*** Update File: a.txt\n*** Move to: b.txt\n@@\n-x\n+y")
	s.patch("*** Update File: other.txt\n@@\n-o\n+p")
	r, id, seqs := s.imported(tree{"b.txt": "y\n", "other.txt": "p\n"})
	_, err := r.Rewind(id, seqs[1], false)
	var ue *CodexUnknownStatesError
	if !errors.As(err, &ue) || len(ue.Files) != 1 || ue.Files[0].Path != "b.txt" || !ue.Files[0].MayBeAbsent || ue.Files[0].Holds != "a.txt" {
		t.Fatalf("rewind: %v, want a refusal naming b.txt as one that may have been absent", err)
	}
	if msg := err.Error(); strings.Contains(msg, "if it did not, remove it yourself") || !strings.Contains(msg, "--absent b.txt") {
		t.Fatalf("refusal: %s", msg)
	}
	for _, bad := range [][]string{{"other.txt"}, {"nothing.txt"}, {"b.txt", "a.txt"}, {"../b.txt"}, {"/elsewhere/b.txt"}, {""}, {"b.txt/"}} {
		_, err := r.RewindWith(id, seqs[1], RewindOptions{Absent: bad})
		var ba *BadArgumentError
		if !errors.As(err, &ba) {
			t.Fatalf("--absent %q: %v, want a bad argument", bad, err)
		}
	}
	if _, err := r.RewindWith(id, seqs[1], RewindOptions{Absent: []string{"b.txt"}, KeepFiles: true}); err == nil {
		t.Fatal("--absent with --keep-files: no error")
	}
	if got := s.read("b.txt"); got != "y\n" {
		t.Fatalf("b.txt after refusals: %q", got)
	}
	// Absolute, in the workspace, is the same path; named twice, once.
	rw, err := r.RewindWith(id, seqs[1], RewindOptions{Absent: []string{filepath.Join(s.ws, "b.txt"), "./b.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.read("a.txt"); got != "x\n" {
		t.Fatalf("a.txt: %q", got)
	}
	if got := s.read("other.txt"); got != "o\n" {
		t.Fatalf("other.txt: %q", got)
	}
	if _, err := os.Lstat(filepath.Join(s.ws, "b.txt")); !os.IsNotExist(err) {
		t.Fatalf("b.txt is still there: %v", err)
	}
	var hows []string
	for _, f := range rw.RolloutFiles {
		hows = append(hows, f.Path+":"+f.How)
	}
	if want := "a.txt:reversed b.txt:said-absent other.txt:replayed"; strings.Join(hows, " ") != want {
		t.Fatalf("rollout files %q, want %q", hows, want)
	}
	if _, err := r.Rewind(rw.Fork, *rw.BeforeSeq, false); err != nil {
		t.Fatal(err)
	}
	if got := s.read("b.txt"); got != "y\n" {
		t.Fatalf("b.txt after the undo: %q", got)
	}
	if _, err := os.Lstat(filepath.Join(s.ws, "a.txt")); !os.IsNotExist(err) {
		t.Fatalf("a.txt after the undo: %v", err)
	}
}

// --absent on a session with captures (not an imported Codex one) is
// refused: its captures say whether a file existed.
func TestRewindAbsentOnlyForCodex(t *testing.T) {
	r := testRook(t, vfs.NewMem())
	id := newSession(t, r)
	appendBodies(t, r, id, "a", "b")
	_, err := r.RewindWith(id, 1, RewindOptions{Absent: []string{"a.txt"}})
	var ba *BadArgumentError
	if !errors.As(err, &ba) || !strings.Contains(err.Error(), "imported Codex") {
		t.Fatalf("%v", err)
	}
}

// The --absent a refusal advises reads back in a shell as the path.
func TestAbsentFlagQuotes(t *testing.T) {
	for p, want := range map[string]string{
		"b.txt":       "--absent b.txt",
		"src/main.py": "--absent src/main.py",
		"my file.txt": "--absent 'my file.txt'",
		"it's.txt":    `--absent 'it'\''s.txt'`,
		"-x.txt":      "--absent=-x.txt",
		"-x y.txt":    "--absent='-x y.txt'",
		"$HOME/x":     "--absent '$HOME/x'",
	} {
		if got := absentFlag(p); got != want {
			t.Errorf("absentFlag(%q) = %s, want %s", p, got, want)
		}
	}
}

// listing lists the workspace: "path=content" for a file, "path/" for a
// directory, "path->target" for a link (never followed), sorted,
// space-separated.
func (s *codexSession) listing() string {
	s.t.Helper()
	var out []string
	err := filepath.WalkDir(s.ws, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == s.ws {
			return err
		}
		rel, _ := filepath.Rel(s.ws, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			out = append(out, rel+"/")
			return nil
		}
		if d.Type()&os.ModeSymlink != 0 {
			t, err := os.Readlink(p)
			out = append(out, rel+"->"+t)
			return err
		}
		b, err := os.ReadFile(p)
		out = append(out, rel+"="+strings.TrimSuffix(string(b), "\n"))
		return err
	})
	if err != nil {
		s.t.Fatal(err)
	}
	return strings.Join(out, " ")
}

// rolloutJSON is a rewind's rollout_files as --json prints them.
func rolloutJSON(t *testing.T, rep RewindReport) string {
	t.Helper()
	b, err := json.Marshal(rep.RolloutFiles)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A file the rewind is to remove (--absent says it did not exist at the
// point, or the session had deleted it before) that is not on disk is
// not said to be removed: nothing was. Its rollout file says so
// ("disk":"not-there"), and it is not counted. Here a.txt was renamed to
// b.txt and then to c.txt after the point: with --absent b.txt --absent
// c.txt, a.txt is put back from c.txt and c.txt removed, and b.txt, not
// there, is left so; c2.txt, added after the point and removed by hand
// since, is not there either, nor is n.txt, which the session had
// deleted before the point and added again after it.
func TestCodexRewindAbsentNotThere(t *testing.T) {
	s := newCodexSession(t)
	s.patch("*** Add File: n.txt\n+n0")
	s.patch("*** Delete File: n.txt")
	s.patch("*** Update File: a.txt\n*** Move to: b.txt\n@@\n-x\n+y")
	s.patch("*** Update File: b.txt\n*** Move to: c.txt\n@@\n-y\n+w")
	s.patch("*** Add File: c2.txt\n+c2")
	s.patch("*** Add File: n.txt\n+n1")
	r, id, seqs := s.imported(tree{"c.txt": "w\n"})
	rw, err := r.RewindWith(id, seqs[2], RewindOptions{Absent: []string{"b.txt", "c.txt", "c2.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.listing(), "a.txt=x"; got != want {
		t.Fatalf("workspace %q, want %q", got, want)
	}
	want := `[{"path":"a.txt","how":"reversed","from":"c.txt"},{"path":"b.txt","how":"said-absent","disk":"not-there"},{"path":"c.txt","how":"said-absent"},{"path":"c2.txt","how":"said-absent","disk":"not-there"},{"path":"n.txt","how":"absent","disk":"not-there"}]`
	if got := rolloutJSON(t, rw); got != want {
		t.Fatalf("rollout files\n %s, want\n %s", got, want)
	}
	if rw.FilesRemoved != 1 || rw.FilesRestored != 1 {
		t.Fatalf("%d restored, %d removed, want 1 and 1", rw.FilesRestored, rw.FilesRemoved)
	}
	if _, err := r.Rewind(rw.Fork, *rw.BeforeSeq, false); err != nil {
		t.Fatal(err)
	}
	if got, want := s.listing(), "c.txt=w"; got != want {
		t.Fatalf("after the undo %q, want %q", got, want)
	}
}

// A path the session added as a file after the point, deleted, then
// made a directory (Add File d; Delete File d; Add File d/x.txt): the
// refusal advises --absent d --absent d/x.txt, and with them the rewind
// removes d/x.txt and then d, empty (it had refused, "a directory is
// there now", nothing written: the advice led nowhere). A file put in d
// since, which no patch names, stays, and d with it, said (dirs_kept,
// "disk":"dir-kept"). The undo puts d/x.txt back, and leaves that file.
func TestCodexRewindAbsentDirNow(t *testing.T) {
	for _, tc := range []struct {
		name, extra, after, disk string
		kept                     []string
	}{
		{name: "empty", after: "zz.txt=z", disk: "dir-removed"},
		{name: "user file", extra: "mine", after: "d/ d/u.txt=mine zz.txt=z", disk: "dir-kept", kept: []string{"d"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newCodexSession(t)
			s.patch("*** Add File: zz.txt\n+z")
			s.patch("*** Add File: d\n+d")
			s.patch("*** Delete File: d")
			s.patch("*** Add File: d/x.txt\n+x")
			tr := tree{"zz.txt": "z\n", "d/x.txt": "x\n"}
			if tc.extra != "" {
				tr["d/u.txt"] = tc.extra + "\n"
			}
			r, id, seqs := s.imported(tr)
			before := s.listing()
			_, err := r.Rewind(id, seqs[1], false)
			var ue *CodexUnknownStatesError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--absent d --absent d/x.txt") {
				t.Fatalf("rewind: %v, want a refusal advising --absent d --absent d/x.txt", err)
			}
			rw, err := r.RewindWith(id, seqs[1], RewindOptions{Absent: []string{"d", "d/x.txt"}})
			if err != nil {
				t.Fatalf("following the advice: %v", err)
			}
			if got := s.listing(); got != tc.after {
				t.Fatalf("workspace %q, want %q", got, tc.after)
			}
			want := fmt.Sprintf(`[{"path":"d","how":"said-absent","disk":%q},{"path":"d/x.txt","how":"said-absent"}]`, tc.disk)
			if got := rolloutJSON(t, rw); got != want {
				t.Fatalf("rollout files\n %s, want\n %s", got, want)
			}
			if rw.FilesRemoved != 1 || strings.Join(rw.DirsKept, ",") != strings.Join(tc.kept, ",") {
				t.Fatalf("%d removed, dirs kept %q", rw.FilesRemoved, rw.DirsKept)
			}
			if _, err := r.Rewind(rw.Fork, *rw.BeforeSeq, false); err != nil {
				t.Fatal(err)
			}
			if got := s.listing(); got != before {
				t.Fatalf("after the undo %q, want %q", got, before)
			}
		})
	}
}

// The session deleted d before the point, then after it added d again,
// deleted it and added d/x.txt: d's state there is absent (the rollout
// says so), and a directory is there now. With --absent d/x.txt (the
// refusal's advice), d/x.txt goes and d, empty, with it; the undo puts
// both back. It had refused, "a directory is there now".
func TestCodexRewindAbsentDeletedDirNow(t *testing.T) {
	s := newCodexSession(t)
	s.patch("*** Add File: d\n+d0")
	s.patch("*** Delete File: d")
	s.patch("*** Add File: d\n+d")
	s.patch("*** Delete File: d")
	s.patch("*** Add File: d/x.txt\n+x")
	r, id, seqs := s.imported(tree{"d/x.txt": "x\n"})
	_, err := r.Rewind(id, seqs[2], false)
	if err == nil || !strings.Contains(err.Error(), "rewind with --absent d/x.txt and") {
		t.Fatalf("rewind: %v, want a refusal advising --absent d/x.txt", err)
	}
	rw, err := r.RewindWith(id, seqs[2], RewindOptions{Absent: []string{"d/x.txt"}})
	if err != nil {
		t.Fatalf("following the advice: %v", err)
	}
	if got := s.listing(); got != "" {
		t.Fatalf("workspace %q, want it empty", got)
	}
	if want := `[{"path":"d","how":"absent","disk":"dir-removed"},{"path":"d/x.txt","how":"said-absent"}]`; rolloutJSON(t, rw) != want {
		t.Fatalf("rollout files %s, want %s", rolloutJSON(t, rw), want)
	}
	if _, err := r.Rewind(rw.Fork, *rw.BeforeSeq, false); err != nil {
		t.Fatal(err)
	}
	if got := s.listing(); got != "d/ d/x.txt=x" {
		t.Fatalf("after the undo %q", got)
	}
}

// The session added d/x.txt after the point, deleted it, then added d, a
// file: the refusal advises --absent d --absent d/x.txt, and with them
// the rewind removes d, and has nothing to remove under it (it had
// refused: "d is a file now where a directory must be").
func TestCodexRewindAbsentUnderFileNow(t *testing.T) {
	s := newCodexSession(t)
	s.patch("*** Add File: zz.txt\n+z")
	s.patch("*** Add File: d/x.txt\n+x")
	s.patch("*** Delete File: d/x.txt")
	s.patch("*** Add File: d\n+d")
	r, id, seqs := s.imported(tree{"zz.txt": "z\n", "d": "d\n"})
	_, err := r.Rewind(id, seqs[1], false)
	if err == nil || !strings.Contains(err.Error(), "--absent d --absent d/x.txt") {
		t.Fatalf("rewind: %v, want a refusal advising --absent d --absent d/x.txt", err)
	}
	rw, err := r.RewindWith(id, seqs[1], RewindOptions{Absent: []string{"d", "d/x.txt"}})
	if err != nil {
		t.Fatalf("following the advice: %v", err)
	}
	if got := s.listing(); got != "zz.txt=z" {
		t.Fatalf("workspace %q", got)
	}
	if want := `[{"path":"d","how":"said-absent"},{"path":"d/x.txt","how":"said-absent","disk":"not-there"}]`; rolloutJSON(t, rw) != want {
		t.Fatalf("rollout files %s, want %s", rolloutJSON(t, rw), want)
	}
	if _, err := r.Rewind(rw.Fork, *rw.BeforeSeq, false); err != nil {
		t.Fatal(err)
	}
	if got := s.listing(); got != "d=d zz.txt=z" {
		t.Fatalf("after the undo %q", got)
	}
}

// The same when nothing else is to be done: the session added d/x.txt
// after the point, and d is a file now (the user's): with --absent
// d/x.txt the rewind has nothing to remove, and says so
// ("disk":"not-there"), not that it removed d/x.txt; d is left as it is.
func TestCodexRewindAbsentUnderFileNowOnly(t *testing.T) {
	s := newCodexSession(t)
	s.patch("*** Add File: zz.txt\n+z")
	s.patch("*** Add File: d/x.txt\n+x")
	r, id, seqs := s.imported(tree{"zz.txt": "z\n", "d": "mine\n"})
	rw, err := r.RewindWith(id, seqs[1], RewindOptions{Absent: []string{"d/x.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.listing(); got != "d=mine zz.txt=z" {
		t.Fatalf("workspace %q", got)
	}
	if want := `[{"path":"d/x.txt","how":"said-absent","disk":"not-there"}]`; rolloutJSON(t, rw) != want {
		t.Fatalf("rollout files %s, want %s", rolloutJSON(t, rw), want)
	}
	if rw.FilesRemoved != 0 || rw.BeforeSeq != nil {
		t.Fatalf("%d removed, before %v: want nothing done", rw.FilesRemoved, rw.BeforeSeq)
	}
}

// A directory the rewind leaves (d, holding the user's u.txt, and e in
// it, holding v.txt) is not captured whole before it: its undo puts
// back the files the rewind removed (d/x.txt, d/e/y.txt) and touches
// nothing else there, not u.txt edited since nor a file added in d
// since (taken whole, the undo wrote u.txt back as it was, and removed
// the new file). One the rewind empties and removes is taken whole, and
// made again.
func TestCodexRewindAbsentDirKeptUndo(t *testing.T) {
	s := newCodexSession(t)
	s.patch("*** Add File: zz.txt\n+z")
	s.patch("*** Add File: d\n+d")
	s.patch("*** Delete File: d")
	s.patch("*** Add File: d/x.txt\n+x\n*** Add File: d/e/y.txt\n+y\n*** Add File: d/f/w.txt\n+w")
	r, id, seqs := s.imported(tree{"zz.txt": "z\n", "d/x.txt": "x\n", "d/e/y.txt": "y\n", "d/f/w.txt": "w\n", "d/u.txt": "mine\n", "d/e/v.txt": "mine too\n"})
	rw, err := r.RewindWith(id, seqs[1], RewindOptions{Absent: []string{"d", "d/x.txt", "d/e/y.txt", "d/f/w.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.listing(), "d/ d/e/ d/e/v.txt=mine too d/u.txt=mine zz.txt=z"; got != want {
		t.Fatalf("workspace %q, want %q", got, want)
	}
	if want := `[{"path":"d","how":"said-absent","disk":"dir-kept"},{"path":"d/e/y.txt","how":"said-absent"},{"path":"d/f/w.txt","how":"said-absent"},{"path":"d/x.txt","how":"said-absent"}]`; rolloutJSON(t, rw) != want {
		t.Fatalf("rollout files %s, want %s", rolloutJSON(t, rw), want)
	}
	writeTree(t, s.ws, tree{"d/u.txt": "mine, edited since\n", "d/new.txt": "new\n", "d/e/new.txt": "new too\n"})
	if _, err := r.Rewind(rw.Fork, *rw.BeforeSeq, false); err != nil {
		t.Fatal(err)
	}
	if got, want := s.listing(), "d/ d/e/ d/e/new.txt=new too d/e/v.txt=mine too d/e/y.txt=y d/f/ d/f/w.txt=w d/new.txt=new d/u.txt=mine, edited since d/x.txt=x zz.txt=z"; got != want {
		t.Fatalf("after the undo\n %q, want\n %q", got, want)
	}
}

// A path --absent names that is a link now (d, the session's Add File d,
// Delete File d, Add File d/x.txt after the point; the user made d a
// link since): the rewind removes the link, and nothing through it. Of
// a link to a directory in the workspace (real, holding x.txt), real/x.txt
// is not removed as d/x.txt, and is said to be left ("disk":"under-link");
// the capture before held d as the link and d/x.txt as the file it led
// to, and the undo refused ("the captures hold d as a file and as a
// directory"). The undo puts the very link back, its target as it was.
// A link to a file, and one leading nowhere, the same: nothing is under
// them (d/x.txt "not-there"). A link to a directory outside the
// workspace the same as one inside (it refused: "d/x.txt leads to ...,
// outside the workspace"): the link is the workspace's to remove.
func TestCodexRewindAbsentLink(t *testing.T) {
	for _, tc := range []struct{ name, target, disk string }{
		{name: "to a directory", target: "real", disk: "under-link"},
		{name: "to a file", target: "real/x.txt", disk: "not-there"},
		{name: "dangling", target: "nowhere", disk: "not-there"},
		{name: "to a directory outside", target: "../out", disk: "under-link"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newCodexSession(t)
			writeTree(t, s.dir, tree{"out/x.txt": "out\n"})
			s.patch("*** Add File: zz.txt\n+z")
			s.patch("*** Add File: d\n+d")
			s.patch("*** Delete File: d")
			s.patch("*** Add File: d/x.txt\n+x")
			r, id, seqs := s.imported(tree{"zz.txt": "z\n", "d": "link:" + tc.target, "real/x.txt": "x\n", "real/u.txt": "u\n"})
			before := s.listing()
			rw, err := r.RewindWith(id, seqs[1], RewindOptions{Absent: []string{"d", "d/x.txt"}})
			if err != nil {
				t.Fatalf("rewind: %v", err)
			}
			if got, want := s.listing(), "real/ real/u.txt=u real/x.txt=x zz.txt=z"; got != want {
				t.Fatalf("workspace %q, want %q", got, want)
			}
			if _, err := r.Rewind(rw.Fork, *rw.BeforeSeq, false); err != nil {
				t.Fatalf("undo: %v", err)
			}
			if got := s.listing(); got != before {
				t.Fatalf("after the undo %q, want %q", got, before)
			}
			if got := readFileT(t, filepath.Join(s.dir, "out", "x.txt")); got != "out\n" {
				t.Fatalf("out/x.txt, outside the workspace: %q", got)
			}
			want := fmt.Sprintf(`[{"path":"d","how":"said-absent"},{"path":"d/x.txt","how":"said-absent","disk":%q}]`, tc.disk)
			if got := rolloutJSON(t, rw); got != want {
				t.Fatalf("rollout files\n %s, want\n %s", got, want)
			}
			if rw.FilesRemoved != 1 || strings.Join(rw.Paths, " ") != "d" {
				t.Fatalf("%d removed, paths %q: want the link d alone", rw.FilesRemoved, rw.Paths)
			}
		})
	}
}

// A rollout file already as the patches say it was at the point is not
// written, and says so ("disk":"as-then"), as a transcript's file does:
// same.txt, added whole and patched after the point, put back by hand
// since, and old.txt, which the session changed after the point and
// changed back, so that undoing the patches on it leaves it as it is.
// Only a.txt is put back; the count of files put back had counted them
// all.
func TestCodexRewindSaysWhatItDid(t *testing.T) {
	s := newCodexSession(t)
	s.patch("*** Add File: a.txt\n+a0\n*** Add File: same.txt\n+s0")
	s.patch("*** Update File: a.txt\n@@\n-a0\n+a1\n*** Update File: same.txt\n@@\n-s0\n+s1\n*** Update File: old.txt\n@@\n-o0\n+o1")
	s.patch("*** Update File: old.txt\n@@\n-o1\n+o0")
	r, id, seqs := s.imported(tree{"a.txt": "a1\n", "same.txt": "s0\n", "old.txt": "o0\n"})
	rw, err := r.Rewind(id, seqs[1], false)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"path":"a.txt","how":"replayed"},{"path":"old.txt","how":"reversed","from":"old.txt","disk":"as-then"},{"path":"same.txt","how":"replayed","disk":"as-then"}]`
	if got := rolloutJSON(t, rw); got != want {
		t.Fatalf("rollout files\n %s, want\n %s", got, want)
	}
	if rw.FromRollout != 3 || rw.FilesRestored != 1 || rw.FilesRemoved != 0 {
		t.Fatalf("rewind %+v", rw)
	}
	if got, want := s.listing(), "a.txt=a0 old.txt=o0 same.txt=s0"; got != want {
		t.Fatalf("workspace %q, want %q", got, want)
	}
}

// A command the session ran after the patch that last wrote a file whole
// and before a later patch of it (an update, whose hunks were applied to
// what the command left) may have changed it too: the replay's content
// is not what the file held at the point. Only a command after the last
// patch was counted, and the rewind wrote "1\nB\nc\n", a state the file
// never had (the command made 1 into 2 first).
func TestCodexRewindCommandBeforeALaterPatch(t *testing.T) {
	s := newCodexSession(t)
	s.patch("*** Add File: a.txt\n+1\n+b\n+c")
	s.command("sed", "-i", "s/1/2/", "a.txt")
	s.patch("*** Update File: a.txt\n@@\n-b\n+B\n c")
	s.patch("*** Update File: a.txt\n@@\n B\n-c\n+C")
	r, id, calls := s.imported(tree{"a.txt": "2\nB\nC\n"})
	if len(calls) != 3 {
		t.Fatalf("calls %d", len(calls))
	}
	_, err := r.Rewind(id, calls[2], false)
	got := s.read("a.txt")
	var ue *CodexUnknownStatesError
	switch {
	case err == nil && got != "2\nB\nc\n":
		t.Fatalf("a.txt after the rewind: %q, want \"2\\nB\\nc\\n\" (or a refusal naming the command)", got)
	case err != nil && (!errors.As(err, &ue) || len(ue.Files) != 1 || ue.Files[0].Path != "a.txt" || !strings.Contains(ue.Files[0].Why, "command")):
		t.Fatalf("rewind: %v, want a.txt put back or a refusal naming the command", err)
	case err != nil && got != "2\nB\nC\n":
		t.Fatalf("a.txt after a refused rewind: %q", got)
	}
}
