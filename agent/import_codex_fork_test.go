package agent

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// A Codex parent rollout (P), a fork of it (F) and a fork of the fork (G),
// as Codex writes them (codexMapper.sessionMeta): a fork's file is its own
// session_meta, then a copy of its parent's lines, the parent's
// session_meta first, each written again with the time of writing, then
// its own turns.
const (
	codexPID = "019c1000-0000-7000-8000-00000000000a"
	codexFID = "019c1000-0000-7000-8000-00000000000b"
	codexGID = "019c1000-0000-7000-8000-00000000000c"
)

// codexItem is a rollout line without its timestamp: a copy writes it
// again at another time.
type codexItem struct{ typ, payload string }

func (it codexItem) at(ts string) string {
	return fmt.Sprintf(`{"timestamp":%q,"type":%q,"payload":%s}`, ts, it.typ, it.payload)
}

// codexStamped are the items as lines written at minute min of hour, a
// second apart.
func codexStamped(items []codexItem, hour, min int) []string {
	var out []string
	for i, it := range items {
		out = append(out, it.at(fmt.Sprintf("2026-02-03T%02d:%02d:%02d.000Z", hour, min, i%60)))
	}
	return out
}

func codexMetaItem(id, forkedFrom string) codexItem {
	fork := ""
	if forkedFrom != "" {
		fork = `"forked_from_id":"` + forkedFrom + `",`
	}
	return codexItem{"session_meta", `{"id":"` + id + `",` + fork + `"cwd":"/home/dev/app","originator":"codex_cli_rs","cli_version":"0.80.0","source":"cli"}`}
}

// codexTurnItems are a turn of a rollout: a prompt, a reply, the
// token_count that closes the turn (turn×1000 in, turn×10 out, the
// session's totals in total, carried on), and one more with the same
// usage, written when only the rate limits moved (counted once).
func codexTurnItems(turn int, total *[2]int) []codexItem {
	in, out := turn*1000, turn*10
	total[0] += in
	total[1] += out
	usage := fmt.Sprintf(`{"total_token_usage":{"input_tokens":%d,"cached_input_tokens":0,"output_tokens":%d,"reasoning_output_tokens":0,"total_tokens":%d},"last_token_usage":{"input_tokens":%d,"cached_input_tokens":0,"output_tokens":%d,"reasoning_output_tokens":0,"total_tokens":%d},"model_context_window":258400}`,
		total[0], total[1], total[0]+total[1], in, out, in+out)
	count := func(used float64) codexItem {
		return codexItem{"event_msg", fmt.Sprintf(`{"type":"token_count","info":%s,"rate_limits":{"primary":{"used_percent":%.1f,"window_minutes":300}}}`, usage, used)}
	}
	return []codexItem{
		{"response_item", fmt.Sprintf(`{"type":"message","role":"user","content":[{"type":"input_text","text":"step %d"}]}`, turn)},
		{"response_item", fmt.Sprintf(`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done with step %d"}]}`, turn)},
		count(float64(turn)),
		count(float64(turn) + 0.5),
	}
}

// codexForkFiles are P (turns 1 and 2), F (P copied, then turn 3) and G
// (F copied, then turn 4): their paths, in the order Codex's names sort,
// which is the order they were written, and their lines. copied changes
// the lines F copies from P, as another Codex version might write them.
func codexForkFiles(copied func(string) string) (paths [3]string, lines [3][]string) {
	var total [2]int
	p := []codexItem{codexMetaItem(codexPID, "")}
	p = append(p, codexTurnItems(1, &total)...)
	p = append(p, codexTurnItems(2, &total)...)
	f := []codexItem{codexMetaItem(codexFID, codexPID)}
	for _, it := range p {
		f = append(f, codexItem{it.typ, copied(it.payload)})
	}
	f = append(f, codexTurnItems(3, &total)...)
	g := append([]codexItem{codexMetaItem(codexGID, codexFID)}, f...)
	g = append(g, codexTurnItems(4, &total)...)
	for i, c := range []struct {
		id    string
		items []codexItem
	}{{codexPID, p}, {codexFID, f}, {codexGID, g}} {
		paths[i] = fmt.Sprintf("/c/2026/02/03/rollout-2026-02-03T1%d-00-00-%s.jsonl", i, c.id)
		lines[i] = codexStamped(c.items, 10+i, 0)
	}
	return paths, lines
}

func sameLine(s string) string { return s }

// tokensOf checks a session's token totals.
func tokensOf(t *testing.T, r *Rook, id eventlog.ID, what string, in, out uint64) {
	t.Helper()
	s, err := r.Log.Summary(id)
	if err != nil {
		t.Fatal(err)
	}
	if s.TokensIn != in || s.TokensOut != out {
		t.Errorf("%s: %d in, %d out; want %d, %d", what, s.TokensIn, s.TokensOut, in, out)
	}
}

// Imported in one run, a Codex fork's token_counts copied from its parent
// count no tokens: the parent spent them. Only its own turns count, and a
// fork of the fork counts only its own too (what it copied of the fork
// includes what the fork copied). The lines stay notes, exported byte for
// byte.
func TestImportCodexForkCountsNoCopiedTokens(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	paths, lines := codexForkFiles(sameLine)
	var data [3][]byte
	for i := range paths {
		data[i] = writeSource(t, fsys, paths[i], lines[i], "")
	}
	rep := mustImport(t, r, FormatCodex, "/c")
	ids := checkCodexForkChain(t, r, rep, paths, data)
	// The copied token_counts are events still, as in the parent.
	for i, want := range []int{4, 6, 8} {
		if n := countEvents(t, r, ids[i], func(ev eventlog.Event) bool { return ev.Label == codexTokenCountLabel }); n != want {
			t.Errorf("session %d: %d token_count events, want %d", i, n, want)
		}
	}
}

// In one run, a fork whose rollout comes before its parent's (another
// directory: archived_sessions/ sorts before sessions/; here older/), and
// a fork of that fork before both (archived: it comes first, its parent
// next), wait for the files they
// copy (sourceNames.waits), and each is taken in once what it copies is:
// each counts only its own tokens. A fork whose parent is not in the
// import does not wait.
func TestImportCodexForksWaitForTheirParents(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	paths, lines := codexForkFiles(sameLine)
	paths[0] = strings.Replace(paths[0], "/c/", "/c/sessions/", 1)
	paths[1] = strings.Replace(paths[1], "/c/2026/02/03/", "/c/older/", 1)
	paths[2] = strings.Replace(paths[2], "/c/2026/02/03/", "/c/archived_sessions/", 1) // sorts first, before its parent
	var data [3][]byte
	for i := range paths {
		data[i] = writeSource(t, fsys, paths[i], lines[i], "")
	}
	const loneID = "019c0000-0000-7000-8000-0000000000ff"
	lone := "/c/other/rollout-2026-02-03T11-00-00-" + loneID + ".jsonl"
	loneLines := slices.Clone(lines[1])
	loneLines[0] = strings.Replace(loneLines[0], codexFID, loneID, 1)
	loneLines[0] = strings.Replace(loneLines[0], codexPID, "019c0000-0000-7000-8000-000000000000", 1) // a parent not imported
	writeSource(t, fsys, lone, loneLines, "")
	rep := mustImport(t, r, FormatCodex, "/c")
	var order []string
	for _, f := range rep.Files {
		order = append(order, f.Path)
	}
	if want := []string{lone, paths[0], paths[1], paths[2]}; !slices.Equal(order, want) {
		t.Fatalf("order:\n%v\nwant\n%v", order, want)
	}
	checkCodexForkChain(t, r, rep, paths, data)
	tokensOf(t, r, *fileByPath(t, rep, lone).Session, "a fork of a session not imported", 6000, 60)
}

// checkCodexForkChain checks the sessions of codexForkFiles' files: each a
// fork of the one before, exported byte for byte, counting only its own
// tokens. It returns their ids.
func checkCodexForkChain(t *testing.T, r *Rook, rep ImportReport, paths [3]string, data [3][]byte) [3]eventlog.ID {
	t.Helper()
	var ids [3]eventlog.ID
	for i, p := range paths {
		f := fileByPath(t, rep, p)
		ids[i] = *f.Session
		if i > 0 && (!f.Fork || f.Parent == nil || *f.Parent != ids[i-1]) {
			t.Fatalf("%s: %+v", p, f)
		}
		mustExport(t, r, ids[i], data[i])
	}
	tokensOf(t, r, ids[0], "the parent", 1000+2000, 10+20)
	tokensOf(t, r, ids[1], "the fork", 3000, 30)
	tokensOf(t, r, ids[2], "the fork's fork", 4000, 40)
	return ids
}

// countEvents is how many of a session's events match.
func countEvents(t *testing.T, r *Rook, id eventlog.ID, match func(eventlog.Event) bool) int {
	t.Helper()
	n := 0
	if err := r.eachEvent(id, func(ev eventlog.Event) error {
		if match(ev) {
			n++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// A fork whose parent an earlier import took in finds the parent's
// token_counts in its session: the same counts as in one run.
func TestImportCodexForkOfAParentImportedBefore(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	paths, lines := codexForkFiles(sameLine)
	parent := writeSource(t, fsys, paths[0], lines[0], "")
	pid := *fileByPath(t, mustImport(t, r, FormatCodex, "/c"), paths[0]).Session
	fork := writeSource(t, fsys, paths[1], lines[1], "")
	rep := mustImport(t, r, FormatCodex, "/c")
	if rep.Sessions != 1 || rep.Unchanged != 1 {
		t.Fatalf("%+v", rep)
	}
	fid := *fileByPath(t, rep, paths[1]).Session
	tokensOf(t, r, pid, "the parent", 3000, 30)
	tokensOf(t, r, fid, "the fork", 3000, 30)
	mustExport(t, r, pid, parent)
	mustExport(t, r, fid, fork)
}

// A fork imported before its parent cannot tell its copy from its own
// lines: it counts the copied tokens, as its lines say. Importing the
// parent later links it, and its totals leave the copied tokens out
// (Source.CopiedIn: its events are written once), as when the parent
// comes first: the parent spent them.
func TestImportCodexForkBeforeItsParent(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	paths, lines := codexForkFiles(sameLine)
	fork := writeSource(t, fsys, paths[1], lines[1], "")
	fid := *fileByPath(t, mustImport(t, r, FormatCodex, "/c"), paths[1]).Session
	tokensOf(t, r, fid, "the fork alone", 6000, 60)
	parent := writeSource(t, fsys, paths[0], lines[0], "")
	rep := mustImport(t, r, FormatCodex, "/c")
	pid := *fileByPath(t, rep, paths[0]).Session
	if f := fileByPath(t, rep, paths[1]); rep.Sessions != 1 || f.Status != ImportUnchanged || f.Parent == nil || *f.Parent != pid {
		t.Fatalf("%+v", rep)
	}
	// Its file unchanged, listed nowhere in the summary: the count says
	// it is linked now (once).
	if rep.Linked != 1 {
		t.Errorf("children linked: %d, want 1", rep.Linked)
	}
	if rep := mustImport(t, r, FormatCodex, "/c"); rep.Linked != 0 {
		t.Errorf("linked again: %d", rep.Linked)
	}
	tokensOf(t, r, pid, "the parent", 3000, 30)
	tokensOf(t, r, fid, "the fork, its parent imported", 3000, 30)
	if m := metaOf(t, r, fid); m.Source.CopiedIn != 3000 || m.Source.CopiedOut != 30 {
		t.Errorf("copied %d in, %d out; want 3000, 30", m.Source.CopiedIn, m.Source.CopiedOut)
	}
	mustExport(t, r, pid, parent)
	mustExport(t, r, fid, fork)
	// Its file growing by a turn of its own adds that turn's tokens.
	var total [2]int
	for turn := 1; turn <= 3; turn++ {
		codexTurnItems(turn, &total)
	}
	grown := append(slices.Clone(lines[1]), codexStamped(codexTurnItems(4, &total), 11, 0)...)
	fork = writeSource(t, fsys, paths[1], grown, "")
	if rep := mustImport(t, r, FormatCodex, "/c"); rep.Grown != 1 {
		t.Fatalf("grown: %+v", rep)
	}
	tokensOf(t, r, fid, "the fork grown by its own turn", 3000+4000, 30+40)
	mustExport(t, r, fid, fork)
}

// A token_count the fork holds that is not byte for byte one of its
// parent's (another Codex version wrote the copy: here one digit of the
// window differs) is not known for a copy: it counts.
func TestImportCodexForkCountsACopyNotByteForByte(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	paths, lines := codexForkFiles(func(payload string) string {
		return strings.Replace(payload, `"model_context_window":258400`, `"model_context_window":258401`, 1)
	})
	var ids [2]eventlog.ID
	var data [2][]byte
	for i := range ids {
		data[i] = writeSource(t, fsys, paths[i], lines[i], "")
	}
	rep := mustImport(t, r, FormatCodex, "/c")
	for i := range ids {
		ids[i] = *fileByPath(t, rep, paths[i]).Session
		mustExport(t, r, ids[i], data[i])
	}
	tokensOf(t, r, ids[0], "the parent", 3000, 30)
	tokensOf(t, r, ids[1], "the fork", 6000, 60)
}

// TestContextOfACodexForkWithNoTurnYet: a fork's copied token_counts count
// no tokens, but session context still reads the usage the last of them
// recorded (the model's own count, and its window) until the fork has a
// turn of its own.
func TestContextOfACodexForkWithNoTurnYet(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	paths, lines := codexForkFiles(sameLine)
	writeSource(t, fsys, paths[0], lines[0], "")
	// The fork's copy, its next prompt and the reply, whose token_count
	// is not written yet.
	copyEnd := len(lines[0]) + 1
	writeSource(t, fsys, paths[1], lines[1][:copyEnd+2], "")
	rep := mustImport(t, r, FormatCodex, "/c")
	fid := *fileByPath(t, rep, paths[1]).Session
	tokensOf(t, r, fid, "the fork", 0, 0)
	c, err := r.Context(fid, DefaultContextWindow)
	if err != nil {
		t.Fatal(err)
	}
	// The parent's last turn: 2000 in, 20 out.
	if p := c.Reported; p == nil || p.Tokens != 2000+20 || !p.Imported || p.After || p.Window != 258400 {
		t.Fatalf("reported %+v, want 2020 tokens, imported, in a window of 258400", p)
	}
	if c.RecordedWindow != 258400 || !c.ThresholdByReported() {
		t.Fatalf("window %d, threshold by the recorded count: %v", c.RecordedWindow, c.ThresholdByReported())
	}
}

// codexRolloutID reads the session id off Codex's rollout names, plain and
// compressed, and nothing off other names.
func TestCodexRolloutID(t *testing.T) {
	const id = "0194a5b2-3c4d-7e8f-9a0b-1c2d3e4f5a6b"
	for name, want := range map[string]string{
		"/h/.codex/sessions/2025/01/22/rollout-2025-01-22T10-30-00-" + id + ".jsonl":            id,
		"/h/.codex/archived_sessions/rollout-2025-01-22T10-30-00-" + id + ".jsonl.zst":          id,
		"/h/.codex/sessions/2025/01/22/" + id + ".jsonl":                                        "",
		"/h/.codex/sessions/rollout-2025-01-22T10-30-00-x" + strings.Repeat("a", 36) + ".jsonl": "",
		"/h/.codex/history.jsonl": "",
		"/h/.codex/sessions/copy-of-rollout-2025-01-22T10-30-00-" + id + ".jsonl": "",
	} {
		if got := codexRolloutID(name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}

// A thread_rolled_back event (the user undid the last num_turns turns:
// Codex drops them from the history it sends, drop_last_n_user_turns)
// takes those turns out of session context: what is in context, and the
// count recorded last, are those of the rollout that never had them.
func TestCodexRollbackLeavesTurnsOutOfContext(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	var total, short [2]int
	rolled := []codexItem{codexMetaItem(codexPID, "")}
	for turn := 1; turn <= 3; turn++ {
		rolled = append(rolled, codexTurnItems(turn, &total)...)
	}
	rolled = append(rolled, codexItem{"event_msg", `{"type":"thread_rolled_back","num_turns":2}`})
	kept := append([]codexItem{codexMetaItem(codexFID, "")}, codexTurnItems(1, &short)...)
	paths := []string{
		"/c/2026/02/03/rollout-2026-02-03T10-00-00-" + codexPID + ".jsonl",
		"/c/2026/02/03/rollout-2026-02-03T11-00-00-" + codexFID + ".jsonl",
	}
	writeSource(t, fsys, paths[0], codexStamped(rolled, 10, 0), "")
	writeSource(t, fsys, paths[1], codexStamped(kept, 10, 0), "")
	rep := mustImport(t, r, FormatCodex, "/c")
	var ctx [2]ContextReport
	for i, p := range paths {
		var err error
		if ctx[i], err = r.Context(*fileByPath(t, rep, p).Session, DefaultContextWindow); err != nil {
			t.Fatal(err)
		}
	}
	got, want := ctx[0], ctx[1]
	if got.InContextEvents != want.InContextEvents || got.InContextBytes != want.InContextBytes ||
		got.Reported == nil || want.Reported == nil || got.Reported.Tokens != want.Reported.Tokens || got.RolledBackTurns != 2 {
		t.Errorf("rolled back: %d events, %d bytes, reported %+v, %d turn(s) rolled back; want %d events, %d bytes, reported %+v",
			got.InContextEvents, got.InContextBytes, got.Reported, got.RolledBackTurns, want.InContextEvents, want.InContextBytes, want.Reported)
	}
	// show says what the line did.
	last := uint64(len(rolled) - 1)
	if h, err := r.History(got.Session.ID, HistoryQuery{From: &last, Limit: 1}); err != nil || len(h.Events) != 1 ||
		h.Events[0].Preview != "[thread_rolled_back] the last 2 turn(s) undone: the model no longer sees them" {
		t.Errorf("history: %+v %v", h.Events, err)
	}
}

// A fork of a fork and the fork imported in imports before their
// parents', each on its own, the grandparent last: each counts only its
// own tokens at the end, as when imported parent first (what the fork of
// the fork copied of the fork includes what the fork copied).
func TestImportCodexForkChainChildrenFirst(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	paths, lines := codexForkFiles(sameLine)
	var data [3][]byte
	for i := 2; i >= 0; i-- {
		data[i] = writeSource(t, fsys, paths[i], lines[i], "")
		mustImport(t, r, FormatCodex, "/c")
	}
	checkCodexForkChain(t, r, mustImport(t, r, FormatCodex, "/c"), paths, data)
}

// A token_count that a crash left NUL bytes before (entryBytes), in the
// parent or in the fork's copy of it, is the parent's line all the same:
// the mapper reads the token_count past them, and the fork leaves its
// tokens out, as it does for the copies without.
func TestImportCodexForkCopiedCountPastNULs(t *testing.T) {
	for i, which := range []string{"the parent's line", "the fork's copy"} {
		t.Run(which, func(t *testing.T) {
			fsys := vfs.NewMem()
			r := testRook(t, fsys)
			paths, lines := codexForkFiles(sameLine)
			damaged := slices.Clone(lines[i])
			k := slices.IndexFunc(damaged, func(l string) bool { return strings.Contains(l, `"token_count"`) })
			damaged[k] = "\x00\x00\x00" + damaged[k]
			lines[i] = damaged
			writeSource(t, fsys, paths[0], lines[0], "")
			data := writeSource(t, fsys, paths[1], lines[1], "")
			rep := mustImport(t, r, FormatCodex, "/c")
			fid := *fileByPath(t, rep, paths[1]).Session
			tokensOf(t, r, fid, "the fork", 3000, 30) // its own turn 3 only
			mustExport(t, r, fid, data)
		})
	}
}

// codexForkedSubagentFile is a subagent Codex spawned with its parent's
// history (spawn_agent fork_context, or V2's fork_turns, whose default
// is all: AgentControl.spawn_forked_thread): its session_meta names the
// parent twice (forked_from_id and source.subagent.thread_spawn), then
// come the parent's lines it keeps (keep_forked_rollout_item: messages,
// session_meta, event_msg, token_counts included, copied byte for byte as
// a fork's are), then its own turn (3).
func codexForkedSubagentFile(parent []codexItem, total *[2]int) (path string, lines []string) {
	const sid = "019c1000-0000-7000-8000-00000000000d"
	items := []codexItem{{"session_meta", `{"id":"` + sid + `","forked_from_id":"` + codexPID + `","cwd":"/home/dev/app","originator":"codex_cli_rs","cli_version":"0.98.0","source":{"subagent":{"thread_spawn":{"parent_thread_id":"` + codexPID + `","depth":1,"agent_role":"worker","agent_nickname":"Hooke"}}}}`}}
	for _, it := range parent {
		if it.typ == "response_item" && strings.Contains(it.payload, `"role":"assistant"`) {
			continue // an assistant message that is not a final answer is left out
		}
		items = append(items, it)
	}
	// The copy's end, as Codex marks it: the spawn call's output, telling
	// the subagent that its task is the next user message.
	items = append(items, codexItem{"response_item", `{"type":"function_call_output","call_id":"call_spawn","output":"` + codexForkedSpawnMark + ` Treat the next user message as your new task, and use the forked history only as background context."}`})
	items = append(items, codexTurnItems(3, total)...)
	return "/c/2026/02/03/rollout-2026-02-03T10-30-00-" + sid + ".jsonl", codexStamped(items, 10, 30)
}

// A subagent spawned with its parent's history counts only its own
// tokens, as a fork does: the token_counts it copied were the parent's
// (they counted them twice: 6000 in for a turn of 3000). Imported with
// its parent, or before it (linked and recounted when the parent comes),
// and exported byte for byte.
func TestImportCodexForkedSubagentCountsNoCopiedTokens(t *testing.T) {
	for _, parentFirst := range []bool{true, false} {
		t.Run(fmt.Sprint("parent first ", parentFirst), func(t *testing.T) {
			fsys := vfs.NewMem()
			r := testRook(t, fsys)
			var total [2]int
			p := []codexItem{codexMetaItem(codexPID, "")}
			p = append(p, codexTurnItems(1, &total)...)
			p = append(p, codexTurnItems(2, &total)...)
			ppath := fmt.Sprintf("/c/2026/02/03/rollout-2026-02-03T10-00-00-%s.jsonl", codexPID)
			spath, slines := codexForkedSubagentFile(p, &total)
			var parent []byte
			if parentFirst {
				parent = writeSource(t, fsys, ppath, codexStamped(p, 10, 0), "")
			}
			sub := writeSource(t, fsys, spath, slines, "")
			rep := mustImport(t, r, FormatCodex, "/c")
			if !parentFirst {
				parent = writeSource(t, fsys, ppath, codexStamped(p, 10, 0), "")
				rep = mustImport(t, r, FormatCodex, "/c")
			}
			pid, sid := *fileByPath(t, rep, ppath).Session, *fileByPath(t, rep, spath).Session
			m := metaOf(t, r, sid)
			if m.Parent == nil || *m.Parent != pid || !slices.Contains(m.Tags, subagentTag) {
				t.Fatalf("the subagent: parent %v, tags %v; want %s, subagent", m.Parent, m.Tags, pid)
			}
			// Titled by its own task, the prompt after the copy, not by the
			// parent's first prompt it copied.
			if m.Title != "step 3" {
				t.Errorf("the subagent's title %q, want %q", m.Title, "step 3")
			}
			tokensOf(t, r, pid, "the parent", 3000, 30)
			tokensOf(t, r, sid, "the forked subagent", 3000, 30)
			mustExport(t, r, pid, parent)
			mustExport(t, r, sid, sub)
		})
	}
}

// A subagent spawned with its parent's history and no turn of its own yet
// reads its context as a fork does: from the usage the last token_count
// it copied recorded (the parent's last turn), not as nothing.
func TestContextOfACodexForkedSubagentWithNoTurnYet(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	var total [2]int
	p := []codexItem{codexMetaItem(codexPID, "")}
	p = append(p, codexTurnItems(1, &total)...)
	p = append(p, codexTurnItems(2, &total)...)
	writeSource(t, fsys, fmt.Sprintf("/c/2026/02/03/rollout-2026-02-03T10-00-00-%s.jsonl", codexPID), codexStamped(p, 10, 0), "")
	spath, slines := codexForkedSubagentFile(p, &total)
	writeSource(t, fsys, spath, slines[:len(slines)-3], "") // its task, no reply or token_count yet
	rep := mustImport(t, r, FormatCodex, "/c")
	sid := *fileByPath(t, rep, spath).Session
	tokensOf(t, r, sid, "the subagent", 0, 0)
	c, err := r.Context(sid, DefaultContextWindow)
	if err != nil {
		t.Fatal(err)
	}
	if rp := c.Reported; rp == nil || rp.Tokens != 2000+20 || !rp.Imported || rp.Window != 258400 {
		t.Fatalf("reported %+v, want 2020 tokens, imported, in a window of 258400", rp)
	}
}

// A subagent spawned with the history of a parent the user named
// (thread_name_updated, an event_msg the copy keeps) is titled by its own
// task, not by its parent's name: the name it copied is the parent's, as
// its first prompt is.
func TestImportCodexForkedSubagentOfANamedParent(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	var total [2]int
	p := []codexItem{codexMetaItem(codexPID, "")}
	p = append(p, codexTurnItems(1, &total)...)
	p = append(p, codexItem{"event_msg", `{"type":"thread_name_updated","thread_id":"` + codexPID + `","thread_name":"Parent thread"}`})
	p = append(p, codexTurnItems(2, &total)...)
	ppath := fmt.Sprintf("/c/2026/02/03/rollout-2026-02-03T10-00-00-%s.jsonl", codexPID)
	writeSource(t, fsys, ppath, codexStamped(p, 10, 0), "")
	spath, slines := codexForkedSubagentFile(p, &total)
	writeSource(t, fsys, spath, slines, "")
	rep := mustImport(t, r, FormatCodex, "/c")
	pid, sid := *fileByPath(t, rep, ppath).Session, *fileByPath(t, rep, spath).Session
	if got := metaOf(t, r, pid).Title; got != "Parent thread" {
		t.Errorf("the parent's title %q, want %q", got, "Parent thread")
	}
	if got := metaOf(t, r, sid).Title; got != "step 3" {
		t.Errorf("the subagent's title %q, want %q", got, "step 3")
	}
}

// A subagent spawned with its parent's history, imported while its
// parent's file held only part of what it copied, leaves the rest out
// once the parent's file grows to it (its metadata says it copies its
// parent: Source.CopiesParent).
func TestImportCodexForkedSubagentRecountedWhenItsParentGrows(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	var total [2]int
	p := []codexItem{codexMetaItem(codexPID, "")}
	p = append(p, codexTurnItems(1, &total)...)
	half := len(p)
	p = append(p, codexTurnItems(2, &total)...)
	ppath := fmt.Sprintf("/c/2026/02/03/rollout-2026-02-03T10-00-00-%s.jsonl", codexPID)
	writeSource(t, fsys, ppath, codexStamped(p[:half], 10, 0), "")
	rep := mustImport(t, r, FormatCodex, ppath)
	pid := *fileByPath(t, rep, ppath).Session
	spath, slines := codexForkedSubagentFile(p, &total)
	writeSource(t, fsys, spath, slines, "")
	rep = mustImport(t, r, FormatCodex, spath)
	sid := *fileByPath(t, rep, spath).Session
	if m := metaOf(t, r, sid); m.Source == nil || !m.Source.CopiesParent {
		t.Fatalf("the subagent's source %+v: want it to say it copies its parent", m.Source)
	}
	// Its copy of turn 2 counts while the parent's file holds no turn 2.
	tokensOf(t, r, sid, "the subagent, its parent's file short", 5000, 50)
	writeSource(t, fsys, ppath, codexStamped(p, 10, 0), "")
	mustImport(t, r, FormatCodex, ppath)
	tokensOf(t, r, pid, "the parent", 3000, 30)
	tokensOf(t, r, sid, "the subagent", 3000, 30)
}

// A subagent's rollout imported while Codex was still writing the copy of
// its parent's history (titled, then, by the parent's first prompt it
// copied) is titled by its own task once it grows past the copy's end:
// mapped whole again, or from the import state its first import kept.
func TestImportCodexForkedSubagentTitledByItsTaskOnceGrown(t *testing.T) {
	setImportStateMin(t, 0)
	old := importStateNewMin
	t.Cleanup(func() { importStateNewMin = old })
	// before: the lines before its own turn (4 lines) left out of the
	// first import too: none (the copy's end in), the copy's end, the
	// copy's end and the line before it. state: the first import keeps
	// its import state, which the second starts from.
	for _, c := range []struct {
		before int
		state  bool
	}{{0, false}, {1, false}, {2, false}, {1, true}, {2, true}} {
		importStateNewMin = 1 << 40
		if c.state {
			importStateNewMin = 1
		}
		t.Run(fmt.Sprint(c.before, " state ", c.state), func(t *testing.T) {
			fsys := vfs.NewMem()
			r := testRook(t, fsys)
			var total [2]int
			p := []codexItem{codexMetaItem(codexPID, "")}
			p = append(p, codexTurnItems(1, &total)...)
			p = append(p, codexTurnItems(2, &total)...)
			writeSource(t, fsys, fmt.Sprintf("/c/2026/02/03/rollout-2026-02-03T10-00-00-%s.jsonl", codexPID), codexStamped(p, 10, 0), "")
			spath, slines := codexForkedSubagentFile(p, &total)
			writeSource(t, fsys, spath, slines[:len(slines)-4-c.before], "")
			rep := mustImport(t, r, FormatCodex, "/c")
			sid := *fileByPath(t, rep, spath).Session
			if _, err := fsys.Stat(r.importStatePath(sid)); (err == nil) != c.state {
				t.Fatalf("stat of its import state: %v, want kept %v", err, c.state)
			}
			writeSource(t, fsys, spath, slines, "")
			mustImport(t, r, FormatCodex, "/c")
			if got := metaOf(t, r, sid).Title; got != "step 3" {
				t.Errorf("the subagent's title %q, want %q", got, "step 3")
			}
			tokensOf(t, r, sid, "the subagent", 3000, 30)
		})
	}
}

// A subagent a newer Codex spawned with its parent's history marks no end
// of the copy (no spawn output telling it its task is next): the copy is
// the parent's history as it was at the spawn, the spawn_agent call last,
// with no output, then the subagent's own turn. It is titled by its own
// task, the first prompt after that call, not by the parent's first
// prompt it copied; its tokens are its own. Imported whole, or grown past
// the copy (its import state kept or not).
func TestImportCodexForkedSubagentUnmarkedTitledByItsTask(t *testing.T) {
	for _, c := range []struct {
		cut   int // lines of the subagent's file left for a second import
		state bool
	}{{0, false}, {4, false}, {4, true}} {
		t.Run(fmt.Sprint(c.cut, " state ", c.state), func(t *testing.T) {
			setImportStateMin(t, 0)
			old := importStateNewMin
			t.Cleanup(func() { importStateNewMin = old })
			importStateNewMin = 1 << 40
			if c.state {
				importStateNewMin = 1
			}
			fsys := vfs.NewMem()
			r := testRook(t, fsys)
			var total [2]int
			p := []codexItem{codexMetaItem(codexPID, "")}
			p = append(p, codexTurnItems(1, &total)...)
			p = append(p, codexTurnItems(2, &total)...)
			p = append(p, codexItem{"response_item", `{"type":"function_call","name":"spawn_agent","arguments":"{\"message\":\"step 3\",\"fork_context\":true}","call_id":"call_spawn"}`})
			ppath := fmt.Sprintf("/c/2026/02/03/rollout-2026-02-03T10-00-00-%s.jsonl", codexPID)
			writeSource(t, fsys, ppath, codexStamped(p, 10, 0), "")
			const sid = "019c1000-0000-7000-8000-00000000000e"
			items := []codexItem{{"session_meta", `{"id":"` + sid + `","forked_from_id":"` + codexPID + `","cwd":"/home/dev/app","originator":"codex_cli_rs","cli_version":"0.130.0","source":{"subagent":{"thread_spawn":{"parent_thread_id":"` + codexPID + `","depth":1}}}}`}}
			items = append(items, p...)
			items = append(items, codexTurnItems(3, &total)...)
			spath := "/c/2026/02/03/rollout-2026-02-03T10-30-00-" + sid + ".jsonl"
			slines := codexStamped(items, 10, 30)
			if c.cut > 0 {
				writeSource(t, fsys, spath, slines[:len(slines)-c.cut], "")
				mustImport(t, r, FormatCodex, "/c")
			}
			sub := writeSource(t, fsys, spath, slines, "")
			rep := mustImport(t, r, FormatCodex, "/c")
			s := *fileByPath(t, rep, spath).Session
			m := metaOf(t, r, s)
			if !m.Source.CopiesParent {
				t.Fatalf("the subagent's source %+v: copies its parent", m.Source)
			}
			if m.Title != "step 3" {
				t.Errorf("the subagent's title %q, want %q", m.Title, "step 3")
			}
			tokensOf(t, r, s, "the subagent", 3000, 30)
			mustExport(t, r, s, sub)
		})
	}
}

// A subagent whose task arrives as an inter_agent_communication item (a
// newer Codex's multi-agent mail: "Message Type: NEW_TASK ... Payload:"),
// not as a user message, is titled by that task: spawned with its
// parent's history (the copy ends at the spawn call), or without it.
func TestImportCodexSubagentTaskFromInterAgentMail(t *testing.T) {
	for _, copies := range []bool{true, false} {
		t.Run(fmt.Sprint("copies ", copies), func(t *testing.T) {
			fsys := vfs.NewMem()
			r := testRook(t, fsys)
			var total [2]int
			p := []codexItem{codexMetaItem(codexPID, "")}
			p = append(p, codexTurnItems(1, &total)...)
			p = append(p, codexItem{"response_item", `{"type":"function_call","name":"spawn_agent","arguments":"{\"message\":\"find the callers\",\"fork_context\":true}","call_id":"call_spawn"}`})
			ppath := fmt.Sprintf("/c/2026/02/03/rollout-2026-02-03T10-00-00-%s.jsonl", codexPID)
			writeSource(t, fsys, ppath, codexStamped(p, 10, 0), "")
			const sid = "019c1000-0000-7000-8000-00000000000f"
			fork := ""
			if copies {
				fork = `"forked_from_id":"` + codexPID + `",`
			}
			items := []codexItem{{"session_meta", `{"id":"` + sid + `",` + fork + `"cwd":"/home/dev/app","originator":"codex_cli_rs","cli_version":"0.140.0","source":{"subagent":{"thread_spawn":{"parent_thread_id":"` + codexPID + `","depth":1}}}}`}}
			if copies {
				items = append(items, p...)
			}
			items = append(items,
				codexItem{"inter_agent_communication", `{"author":"/root","recipient":"/root/worker","other_recipients":[],"content":"Message Type: NEW_TASK\nTask name: /root/worker\nSender: /root\nPayload:\nfind the callers of Log.Append","trigger_turn":true}`},
				codexItem{"response_item", `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"found 3"}]}`})
			spath := "/c/2026/02/03/rollout-2026-02-03T10-30-00-" + sid + ".jsonl"
			sub := writeSource(t, fsys, spath, codexStamped(items, 10, 30), "")
			rep := mustImport(t, r, FormatCodex, "/c")
			s := *fileByPath(t, rep, spath).Session
			if got, want := metaOf(t, r, s).Title, "find the callers of Log.Append"; got != want {
				t.Errorf("the subagent's title %q, want %q", got, want)
			}
			if got := metaOf(t, r, *fileByPath(t, rep, ppath).Session).Title; got != "step 1" {
				t.Errorf("the parent's title %q, want %q", got, "step 1")
			}
			mustExport(t, r, s, sub)
		})
	}
}

// Two copies of one Codex home (a backup, a home copied, not moved)
// imported together, each with its fork in archived_sessions/, which walks
// before its parent in sessions/: each fork waits for every copy of its
// parent and is linked to its own copy's (the second copy's fork was linked
// to the first copy's parent, the only one taken in when it came).
func TestImportCodexLinksForksOfCopiesToTheirOwnParent(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	paths, lines := codexForkFiles(sameLine)
	homes := []string{"/c/a", "/c/b"}
	for _, home := range homes {
		writeSource(t, fsys, strings.Replace(paths[0], "/c/", home+"/sessions/", 1), lines[0], "")
		writeSource(t, fsys, strings.Replace(paths[1], "/c/", home+"/archived_sessions/", 1), lines[1], "")
	}
	rep := mustImport(t, r, FormatCodex, "/c")
	for _, home := range homes {
		pid := *fileByPath(t, rep, strings.Replace(paths[0], "/c/", home+"/sessions/", 1)).Session
		f := fileByPath(t, rep, strings.Replace(paths[1], "/c/", home+"/archived_sessions/", 1))
		if m := metaOf(t, r, *f.Session); m.Parent == nil || *m.Parent != pid {
			t.Errorf("%s: fork's parent %v, want %s (its own copy's)", home, m.Parent, pid)
		}
		tokensOf(t, r, *f.Session, home+"'s fork", 3000, 30)
	}
}

// A rollout that names its own id as the one it was forked from (damaged,
// or written by hand) was told its parent "is not imported ... importing
// the parent later links them", which no import can do: it says what it
// is.
func TestImportCodexForkOfItself(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	var total [2]int
	items := append([]codexItem{codexMetaItem(codexPID, codexPID)}, codexTurnItems(1, &total)...)
	path := "/c/2026/02/03/rollout-2026-02-03T10-00-00-" + codexPID + ".jsonl"
	data := writeSource(t, fsys, path, codexStamped(items, 10, 0), "")
	rep := mustImport(t, r, FormatCodex, "/c")
	f := fileByPath(t, rep, path)
	if f.Parent != nil || !strings.Contains(f.Note, "it names its own session id, "+codexPID+", as the session it was forked from") {
		t.Fatalf("%+v", f)
	}
	mustExport(t, r, *f.Session, data)
}
