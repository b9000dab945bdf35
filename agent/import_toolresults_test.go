package agent

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// persistedResult is the tool_result line of Claude Code for an output it
// saved whole to a tool-results file at saved (as written in the line, on
// the machine that wrote it), with a preview of it.
func persistedResult(session, toolID, saved, preview string) string {
	text := "<persisted-output>\nOutput too large (141KB). Full output saved to: " + saved + "\n\nPreview (first 2KB):\n" + preview + "\n...\n</persisted-output>"
	q := string(appendJSONString(nil, []byte(text)))
	return fmt.Sprintf(`{"type":"user","sessionId":%q,"cwd":"/home/u/proj","message":{"role":"user","content":[{"tool_use_id":%q,"type":"tool_result","content":%s,"is_error":false}]},"uuid":"r-%s","timestamp":"2026-02-10T22:00:00.000Z"}`,
		session, toolID, q, toolID)
}

// toolResultEvents are a session's events that hold tool-results files:
// "name body" each; the event before each is checked to be the tool
// result that names it, or, for a file taken in late (after the
// session's last line: takeSideFiles), a tool result before it.
func toolResultEvents(t *testing.T, r *Rook, id eventlog.ID) []string {
	t.Helper()
	evs, err := r.Log.Read(id, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i, ev := range evs {
		name, ok := ToolResultsFile(ev)
		if !ok {
			continue
		}
		late := true // no line after it
		for _, after := range evs[i+1:] {
			if _, side := ToolResultsFile(after); !side {
				late = false
			}
		}
		named := false
		for j := i - 1; j >= 0 && !named; j-- {
			if evs[j].Kind == eventlog.KindToolResult {
				line, err := r.Body(evs[j])
				named = err == nil && bytes.Contains(line, []byte("tool-results/"+name))
			} else if _, side := ToolResultsFile(evs[j]); !side && !late {
				break
			}
		}
		if !named {
			t.Fatalf("event %d (%s) follows no tool result that names it", ev.Seq, name)
		}
		body, err := r.Body(ev)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %s", name, body))
	}
	return out
}

func TestPersistedRefs(t *testing.T) {
	line := func(text string) []byte {
		return []byte(`{"content":` + string(appendJSONString(nil, []byte(text))) + `}`)
	}
	for _, c := range []struct {
		name, text string
		want       []persistedRef
	}{
		{"unix", "<persisted-output>\nOutput too large (141KB). Full output saved to: /home/u/.claude/projects/-p/S1/tool-results/toolu_01A.txt\n\nPreview (first 2KB):\nx\n</persisted-output>",
			[]persistedRef{{"S1", "toolu_01A.txt"}}},
		{"windows", `<persisted-output>` + "\n" + `Output too large. Full output saved to: C:\Users\u\.claude\projects\C--p\S2\tool-results\mcp-x.json` + "\n\nPreview:\n{}",
			[]persistedRef{{"S2", "mcp-x.json"}}},
		{"two", "<persisted-output>\nFull output saved to: /a/S/tool-results/one.txt\n\n</persisted-output> and <persisted-output>\nFull output saved to: /a/S/tool-results/two.txt\n\n",
			[]persistedRef{{"S", "one.txt"}, {"S", "two.txt"}}},
		{"no marker", "Full output saved to: /a/S/tool-results/x.txt", nil},
		{"not in tool-results", "<persisted-output>\nFull output saved to: /a/S/other/x.txt\n\n", nil},
		{"a parent directory", "<persisted-output>\nFull output saved to: /a/../tool-results/x.txt\n\n", nil},
		{"not a plain name", "<persisted-output>\nFull output saved to: /a/S/tool-results/x y.txt\n\n", nil},
		{"saved to, in the preview only", "<persisted-output>\nOutput too large.\n\nPreview: Full output saved to: /a/S/tool-results/x.txt\n", nil},
		{"cut short", "<persisted-output>\nFull output saved to: /a/S/tool-res", nil},
	} {
		if got := persistedRefs(line(c.text)); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// A tool result whose output Claude Code saved to a tool-results file is
// followed by an event holding the file, in the session of the line; the
// file of a subagent's tool result is in its parent's directory. Export
// writes the transcript byte-exact without them and the files on their
// own; re-import adds nothing; a grown file adds only what its new lines
// name; a file that is not there is counted, and only the preview kept.
func TestImportClaudeToolResultsFiles(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	proj := "/h/.claude/projects/-home-u-proj"
	saved := func(sid, name string) string {
		return "/home/u/.claude/projects/-home-u-proj/" + sid + "/tool-results/" + name
	}
	big := strings.Repeat("the whole output, line after line\n", 2000)
	writeSourceFile(t, fsys, proj+"/S/tool-results/toolu_1.txt", []byte(big))
	writeSourceFile(t, fsys, proj+"/S/tool-results/toolu_2.txt", []byte("second\n"))
	writeSourceFile(t, fsys, proj+"/S/tool-results/toolu_9.txt", []byte("a subagent's\n"))
	main := append(claudeLines("S", 1),
		persistedResult("S", "toolu_1", saved("S", "toolu_1.txt"), "the whole output"),
		persistedResult("S", "toolu_3", saved("S", "toolu_3.txt"), "gone"))
	data := writeSource(t, fsys, proj+"/S.jsonl", main, "")
	sub := append(claudeLines("S", 2), persistedResult("S", "toolu_9", saved("S", "toolu_9.txt"), "a sub"))
	subData := writeSource(t, fsys, proj+"/S/subagents/agent-a1.jsonl", sub, "")

	rep := mustImport(t, r, FormatClaudeCode, proj)
	if rep.ToolResults != 2 || rep.ToolResultsMissing != 1 {
		t.Fatalf("report: %d taken in, %d missing", rep.ToolResults, rep.ToolResultsMissing)
	}
	f := fileByPath(t, rep, proj+"/S.jsonl")
	id := *f.Session
	if s, err := r.Log.Summary(id); err != nil || f.ToolResults != 1 || f.ToolResultsMissing != 1 || uint64(f.Events) != s.Events {
		t.Fatalf("file: %+v (%v)", f, err)
	}
	if got, want := toolResultEvents(t, r, id), []string{"toolu_1.txt " + big}; !slices.Equal(got, want) {
		t.Fatalf("events: %.200q", got)
	}
	sid := *fileByPath(t, rep, proj+"/S/subagents/agent-a1.jsonl").Session
	if got := toolResultEvents(t, r, sid); len(got) != 1 || got[0] != "toolu_9.txt a subagent's\n" {
		t.Fatalf("subagent: %q", got)
	}
	mustExport(t, r, id, data)
	mustExport(t, r, sid, subData)
	var buf bytes.Buffer
	if x, err := r.ExportSource(id, &buf); err != nil || x.Skipped != 0 || x.ToolResults != 1 {
		t.Fatalf("export: %+v %v", x, err)
	}
	x, err := r.ExportToolResults(id, "/out/S/tool-results")
	if err != nil || !slices.Equal(x.Files, []string{"toolu_1.txt"}) || x.Bytes != int64(len(big)) {
		t.Fatalf("export tool results: %+v %v", x, err)
	}
	if b, err := vfs.ReadFile(fsys, "/out/S/tool-results/toolu_1.txt"); err != nil || string(b) != big {
		t.Fatalf("exported file: %v", err)
	}
	// The model read the preview: the file is not in context.
	withFile, err := r.Context(id, 200000)
	if err != nil {
		t.Fatal(err)
	}

	// Again: nothing new. The file that was missing arrives after its
	// line was taken in: the import takes it in, though the transcript is
	// unchanged, after the session's lines, once.
	if rep = mustImport(t, r, FormatClaudeCode, proj); rep.Unchanged != 2 || rep.ToolResults != 0 || rep.Events != 0 {
		t.Fatalf("again: %+v", rep)
	}
	writeSourceFile(t, fsys, proj+"/S/tool-results/toolu_3.txt", []byte("late\n"))
	if rep = mustImport(t, r, FormatClaudeCode, proj); rep.Unchanged != 2 || rep.ToolResults != 1 || rep.Events != 1 ||
		fileByPath(t, rep, proj+"/S.jsonl").ToolResults != 1 {
		t.Fatalf("late file: %+v", rep)
	}
	if got := toolResultEvents(t, r, id); len(got) != 2 || got[1] != "toolu_3.txt late\n" {
		t.Fatalf("late file: %.200q", got)
	}
	mustExport(t, r, id, data)
	// Nor is the session read again for it: its directory, newer than
	// the transcript still, was looked at (Source.SideSeen).
	var logOpens atomic.Int64
	fsys.SetHook(func(op vfs.Op, name string) error {
		if op == vfs.OpOpenRead && strings.HasSuffix(name, id.String()+".log") {
			logOpens.Add(1)
		}
		return nil
	})
	rep = mustImport(t, r, FormatClaudeCode, proj)
	fsys.SetHook(nil)
	if rep.ToolResults != 0 || rep.Events != 0 {
		t.Fatalf("late file, again: taken twice: %+v", rep)
	}
	if n := logOpens.Load(); n != 0 {
		t.Fatalf("late file, again: the session's log read %d time(s)", n)
	}
	// Grown by a line naming toolu_2, and one naming toolu_1 again (a
	// copy of the line): only toolu_2 is taken in.
	main = append(main, persistedResult("S", "toolu_2", saved("S", "toolu_2.txt"), "second"),
		persistedResult("S", "toolu_1", saved("S", "toolu_1.txt"), "again"))
	data = writeSource(t, fsys, proj+"/S.jsonl", main, "")
	rep = mustImport(t, r, FormatClaudeCode, proj)
	if f := fileByPath(t, rep, proj+"/S.jsonl"); f.Status != ImportGrown || f.ToolResults != 1 || f.Events != 3 {
		t.Fatalf("grown: %+v", f)
	}
	if got := toolResultEvents(t, r, id); len(got) != 3 || got[2] != "toolu_2.txt second\n" {
		t.Fatalf("grown: %.200q", got)
	}
	mustExport(t, r, id, data)

	// Context: without the files, the same but for the lines added since.
	r2 := testRook(t, vfs.NewMem())
	r2.fs = fsys
	for _, name := range []string{"toolu_1.txt", "toolu_2.txt", "toolu_3.txt", "toolu_9.txt"} {
		if err := fsys.Remove(proj + "/S/tool-results/" + name); err != nil {
			t.Fatal(err)
		}
	}
	writeSource(t, fsys, proj+"/S.jsonl", main[:len(main)-2], "")
	rep = mustImport(t, r2, FormatClaudeCode, proj+"/S.jsonl")
	without, err := r2.Context(*fileByPath(t, rep, proj+"/S.jsonl").Session, 200000)
	if err != nil {
		t.Fatal(err)
	}
	if rep.ToolResultsMissing != 2 || withFile.InContextBytes != without.InContextBytes || withFile.EverEvents != without.EverEvents {
		t.Fatalf("context with the file %+v, without %+v (missing %d)", withFile, without, rep.ToolResultsMissing)
	}
}

// The files are read only from the project's session directories: a line
// naming a file elsewhere, or one that escapes, is no reference.
func TestImportReadsToolResultsOnlyInTheProject(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	proj := "/h/.claude/projects/-p"
	writeSourceFile(t, fsys, "/secret/tool-results/x.txt", []byte("secret"))
	writeSourceFile(t, fsys, proj+"/other/tool-results/y.txt", []byte("a fork's parent's"))
	lines := append(claudeLines("S", 1),
		persistedResult("S", "t1", "/secret/tool-results/x.txt", "p"),          // the directory named is "secret": not in the project
		persistedResult("S", "t2", "/any/where/other/tool-results/y.txt", "p"), // a session directory of the project
		persistedResult("S", "t3", proj+"/../../tool-results/x.txt", "p"),
		persistedResult("S", "t4", "/x/S/tool-results/dir.txt", "p")) // not a file: reported
	writeSource(t, fsys, proj+"/S.jsonl", lines, "")
	if err := fsys.MkdirAll(proj+"/S/tool-results/dir.txt", 0o700); err != nil {
		t.Fatal(err)
	}
	rep := mustImport(t, r, FormatClaudeCode, proj)
	id := *fileByPath(t, rep, proj+"/S.jsonl").Session
	// Missing: the one not there; the directory is there, and said
	// below with why (the summary's "not there" was wrong of it).
	if got := toolResultEvents(t, r, id); len(got) != 1 || got[0] != "y.txt a fork's parent's" || rep.ToolResultsMissing != 1 {
		t.Fatalf("events %q, missing %d", got, rep.ToolResultsMissing)
	}
	// The one not there is said at its line, where it was looked for
	// (in the project); the one that is no file, at its path.
	if len(rep.Problems) != 2 || rep.Problems[0].File != proj+"/S.jsonl" || rep.Problems[0].Line != 9 || !strings.Contains(rep.Problems[0].Reason, proj+"/secret/tool-results/x.txt, which is not there") ||
		rep.Problems[1].File != proj+"/S/tool-results/dir.txt" || !strings.Contains(rep.Problems[1].Reason, "not a regular file (a directory)") {
		t.Fatalf("problems: %+v", rep.Problems)
	}
	if _, err := fsys.Stat(filepath.Join(proj, "secret")); err == nil {
		t.Fatal("made a directory")
	}
}

func FuzzPersistedRefs(f *testing.F) {
	f.Add([]byte(persistedResult("S", "toolu_1", "/home/u/.claude/projects/-p/S/tool-results/toolu_1.txt", "x")))
	f.Add([]byte(`"<persisted-output>\nFull output saved to: C:\\a\\S\\tool-results\\t.json\n\n"`))
	f.Add([]byte(`<persisted-output>saved to: /tool-results/`))
	f.Fuzz(func(t *testing.T, line []byte) {
		for _, ref := range persistedRefs(line) {
			if !safeSideName(ref.session) || !safeSideName(ref.name) || strings.ContainsAny(ref.session+ref.name, `/\`) {
				t.Fatalf("unsafe reference %+v", ref)
			}
		}
	})
}

// A tool result line that names two files (two tool_result blocks) is
// one group with both: a crash, or a failed write of the second, cannot
// keep the line with only the first (the line is not taken again).
func TestImportToolResultsOfOneLineAreOneGroup(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	proj := "/h/.claude/projects/-p"
	block := func(toolID string) string {
		text := "<persisted-output>\nOutput too large (141KB). Full output saved to: /x/S/tool-results/" + toolID + ".txt\n\nPreview (first 2KB):\np\n</persisted-output>"
		return fmt.Sprintf(`{"tool_use_id":%q,"type":"tool_result","content":%s}`, toolID, appendJSONString(nil, []byte(text)))
	}
	two := `{"type":"user","sessionId":"S","cwd":"/home/u/proj","message":{"role":"user","content":[` + block("t1") + `,` + block("t2") +
		`]},"uuid":"r-two","timestamp":"2026-02-10T22:00:00.000Z"}`
	writeSourceFile(t, fsys, proj+"/S/tool-results/t1.txt", []byte("one\n"))
	writeSourceFile(t, fsys, proj+"/S/tool-results/t2.txt", []byte("two\n"))
	// Then a line naming t1 again (the file is taken in once).
	data := writeSource(t, fsys, proj+"/S.jsonl", append(claudeLines("S", 1), two, persistedResult("S", "t3", "/x/S/tool-results/t1.txt", "p")), "")
	rep := mustImport(t, r, FormatClaudeCode, proj)
	id := *fileByPath(t, rep, proj+"/S.jsonl").Session
	evs, err := r.Log.Read(id, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if rep.ToolResults != 2 || len(evs) < 3 {
		t.Fatalf("%d taken in, %d events", rep.ToolResults, len(evs))
	}
	if evs[len(evs)-1].Kind != eventlog.KindToolResult {
		t.Fatalf("t1 taken in again: %+v", evs[len(evs)-1])
	}
	tail := evs[len(evs)-4 : len(evs)-1]
	if tail[0].Kind != eventlog.KindToolResult || !tail[0].More || !tail[1].More || tail[2].More {
		t.Fatalf("not one group: %+v", tail)
	}
	for i, name := range []string{"t1.txt", "t2.txt"} {
		if got, ok := ToolResultsFile(tail[i+1]); !ok || got != name {
			t.Fatalf("event %d: %q", i+1, got)
		}
	}
	mustExport(t, r, id, data)
}

// A tool result line cut short at one import (its agent writing it) is
// taken in again whole at the next, with its file, once; streamed too.
func TestImportToolResultsOfALineCutShort(t *testing.T) {
	for _, streamed := range []bool{false, true} {
		fsys := vfs.NewMem()
		r := testRook(t, fsys)
		proj := "/h/.claude/projects/-p"
		imp := func() ImportReport {
			if streamed {
				return mustImportChunked(t, r, proj)
			}
			return mustImport(t, r, FormatClaudeCode, proj)
		}
		writeSourceFile(t, fsys, proj+"/S/tool-results/t1.txt", []byte("whole\n"))
		line := persistedResult("S", "t1", "/x/S/tool-results/t1.txt", "p")
		lines := claudeLines("S", 1)
		writeSource(t, fsys, proj+"/S.jsonl", lines, line[:len(line)-20])
		id := *fileByPath(t, imp(), proj+"/S.jsonl").Session
		if got := toolResultEvents(t, r, id); len(got) != 0 {
			t.Fatalf("streamed %v: cut short: %q", streamed, got)
		}
		data := writeSource(t, fsys, proj+"/S.jsonl", append(lines, line), "")
		if f := fileByPath(t, imp(), proj+"/S.jsonl"); f.ToolResults != 1 {
			t.Fatalf("streamed %v: whole: %+v", streamed, f)
		}
		data = writeSource(t, fsys, proj+"/S.jsonl", append(lines, line, line), "")
		imp()
		if got := toolResultEvents(t, r, id); len(got) != 1 || got[0] != "t1.txt whole\n" {
			t.Fatalf("streamed %v: %q", streamed, got)
		}
		mustExport(t, r, id, data)
	}
}

// A tool-results file that comes while a new session's import runs, after
// its line was read (reported missing) and before the side files are
// looked at, with a session-memory note written after it: the note is
// taken in and marks the side files looked at up to its time, but the
// tool-results directory of a new session is not looked at. The next
// import must still take the file in, not pass over it for good.
func TestImportClaudeToolResultsFileArrivingDuringNewImport(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	proj := "/h/.claude/projects/-home-u-proj"
	saved := "/home/u/.claude/projects/-home-u-proj/S/tool-results/toolu_3.txt"
	// (The session-memory directory is there, empty, when the walk lists
	// the tree: one the walk does not find is not listed by this import.)
	for _, d := range []string{"/S/tool-results", "/S/session-memory"} {
		if err := fsys.MkdirAll(proj+d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	main := append(claudeLines("S", 1), persistedResult("S", "toolu_3", saved, "late"))
	writeSource(t, fsys, proj+"/S.jsonl", main, "")
	var looked, arrived atomic.Bool
	fsys.SetHook(func(op vfs.Op, name string) error {
		// Its line was read and the file looked for: as the session's
		// side files are listed, the file comes, then a note.
		if strings.HasSuffix(name, "/toolu_3.txt") {
			looked.Store(true)
		}
		if looked.Load() && op == vfs.OpReadDir && strings.HasSuffix(name, "/session-memory") && arrived.CompareAndSwap(false, true) {
			writeSourceFile(t, fsys, proj+"/S/tool-results/toolu_3.txt", []byte("late\n"))
			writeSourceFile(t, fsys, proj+"/S/session-memory/summary.md", []byte("notes\n"))
		}
		return nil
	})
	rep := mustImport(t, r, FormatClaudeCode, proj)
	fsys.SetHook(nil)
	if !arrived.Load() || rep.ToolResultsMissing != 1 || rep.SessionMemory != 1 {
		t.Fatalf("first import: arrived %v, %+v", arrived.Load(), rep)
	}
	id := *fileByPath(t, rep, proj+"/S.jsonl").Session
	rep = mustImport(t, r, FormatClaudeCode, proj)
	if got := toolResultEvents(t, r, id); rep.ToolResults != 1 || !slices.Equal(got, []string{"toolu_3.txt late\n"}) {
		t.Fatalf("the file that came during the first import is not taken in: %+v, events %q", rep, got)
	}
}

// A tool-results file that is a symbolic link is not followed: a tree
// imported from elsewhere could link it to any file of this machine (a
// private key), which the store, its search and its exports would then
// hold. It is reported at its path, as a directory there is; the link's
// target stays out of the store.
func TestImportDoesNotFollowAToolResultsLink(t *testing.T) {
	r, _, _ := newWorkspace(t)
	dir := t.TempDir()
	secret := filepath.Join(dir, "id_ed25519")
	if err := os.WriteFile(secret, []byte("PRIVATE KEY, never to be stored"), 0o600); err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(dir, "projects", "-p")
	if err := os.MkdirAll(filepath.Join(proj, "S", "tool-results"), 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(proj, "S", "tool-results", "t1.txt")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	lines := append(claudeLines("S", 1), persistedResult("S", "t1", "/x/S/tool-results/t1.txt", "p"))
	writeSource(t, vfs.OS, filepath.Join(proj, "S.jsonl"), lines, "")
	rep := mustImport(t, r, FormatClaudeCode, proj)
	id := *fileByPath(t, rep, filepath.Join(proj, "S.jsonl")).Session
	if got := toolResultEvents(t, r, id); len(got) != 0 {
		t.Fatalf("tool-results events %q", got)
	}
	if len(rep.Problems) != 1 || rep.Problems[0].File != link || !strings.Contains(rep.Problems[0].Reason, "a symbolic link, not followed") || rep.ToolResultsMissing != 0 {
		t.Fatalf("problems: %+v", rep.Problems)
	}
	if _, err := r.Store.StatEntry(cas.ID([]byte("PRIVATE KEY, never to be stored"))); err == nil {
		t.Fatal("the link's target is in the store")
	}
}
