package agent

import (
	"fmt"
	"math"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/clock"
	"github.com/rookhq/rook/internal/vfs"
)

// viewsRook makes a store on a MemFS and opens it for writing, for the
// tests of the views (context, export, search).
func viewsRook(t *testing.T) (*Rook, *clock.Fixed) {
	t.Helper()
	fsys := vfs.NewMem()
	clk := &clock.Fixed{T: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
	const home = "/home/u/.rook"
	if _, err := cas.Init(fsys, clk, home); err != nil {
		t.Fatal(err)
	}
	r, err := Open(home, Options{FS: fsys, Clock: clk, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, clk
}

func viewsSession(t *testing.T, r *Rook, title string) eventlog.ID {
	t.Helper()
	m, err := r.NewSession(title, "/w", nil)
	if err != nil {
		t.Fatal(err)
	}
	return m.ID
}

func viewsAppend(t *testing.T, r *Rook, clk *clock.Fixed, id eventlog.ID, entries ...Entry) {
	t.Helper()
	for _, en := range entries {
		clk.Advance(time.Minute)
		if _, err := r.Append(id, en); err != nil {
			t.Fatal(err)
		}
	}
	// The barrier writes the bodies: Stat sees only what is written.
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
}

func TestContextCompactions(t *testing.T) {
	r, clk := viewsRook(t)
	id := viewsSession(t, r, "ctx")
	big := strings.Repeat("x", 4001) // 1001 tokens
	viewsAppend(t, r, clk, id,
		Entry{Kind: eventlog.KindUser, Body: []byte("hello"), TokensIn: 7},                        // 2 tokens
		Entry{Kind: eventlog.KindAssistant, Body: []byte(big), TokensOut: 9},                      // 1001
		Entry{Kind: eventlog.KindCompaction, Body: []byte("summary one")},                         // 3
		Entry{Kind: eventlog.KindUser, Body: []byte("again")},                                     // 2
		Entry{Kind: eventlog.KindCompaction, Body: []byte("summary two!")},                        // 3
		Entry{Kind: eventlog.KindUser, Body: []byte("hello")},                                     // 2 (shared body)
		Entry{Kind: eventlog.KindToolResult, Body: []byte(strings.Repeat("y", 400)), TokensIn: 1}, // 100
		Entry{Kind: eventlog.KindToolResult, Body: nil},                                           // 0
		Entry{Kind: eventlog.KindAssistant, Body: []byte(big)},                                    // 1001 (shared)
	)
	rep, err := r.Context(id, 2000)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Reserve != 200 || rep.Usable != 1800 || rep.Threshold != 1440 {
		t.Fatalf("window split %d %d %d", rep.Reserve, rep.Usable, rep.Threshold)
	}
	if rep.ReplayFrom != 5 || rep.Compactions != 2 {
		t.Fatalf("replay from %d, %d compactions", rep.ReplayFrom, rep.Compactions)
	}
	if rep.InContextTokens != 1103 || rep.InContextEvents != 4 || rep.InContextBytes != 5+400+4001 {
		t.Fatalf("in context %d tokens, %d events, %d bytes", rep.InContextTokens, rep.InContextEvents, rep.InContextBytes)
	}
	if rep.EverEvents != 9 || rep.EverTokens != 2+1001+3+2+3+2+100+0+1001 {
		t.Fatalf("ever %d events %d tokens", rep.EverEvents, rep.EverTokens)
	}
	if rep.Session.TokensIn != 8 || rep.Session.TokensOut != 9 {
		t.Fatalf("recorded %d/%d", rep.Session.TokensIn, rep.Session.TokensOut)
	}
	want := []ContextKind{
		{eventlog.KindUser, 1, 5, 2},
		{eventlog.KindAssistant, 1, 4001, 1001},
		{eventlog.KindToolResult, 2, 400, 100},
	}
	if len(rep.Kinds) != len(want) {
		t.Fatalf("kinds %+v", rep.Kinds)
	}
	for i := range want {
		if rep.Kinds[i] != want[i] {
			t.Fatalf("kind %d: %+v, want %+v", i, rep.Kinds[i], want[i])
		}
	}
	if rep.OverThreshold() {
		t.Fatal("1103 of 1440 is not over")
	}
	if p := rep.PercentOfUsable(); p < 61.2 || p > 61.3 {
		t.Fatalf("percent %v", p)
	}
	rep, err = r.Context(id, 1000)
	if err != nil || !rep.OverThreshold() {
		t.Fatalf("a 1000-token window: over %v, %v", rep.OverThreshold(), err)
	}
	if _, err := r.Context(id, 0); err == nil {
		t.Fatal("a zero window is an error")
	}
}

func TestContextPagesAndEmpty(t *testing.T) {
	r, clk := viewsRook(t)
	empty := viewsSession(t, r, "empty")
	rep, err := r.Context(empty, DefaultContextWindow)
	if err != nil || rep.EverEvents != 0 || rep.InContextTokens != 0 || len(rep.Kinds) != 0 || rep.ReplayFrom != 0 {
		t.Fatalf("empty: %+v %v", rep, err)
	}
	// More events than a page, a compaction in the second page.
	id := viewsSession(t, r, "long")
	for i := 0; i < 2*contextPage+10; i++ {
		k := eventlog.KindUser
		if i == contextPage+3 {
			k = eventlog.KindCompaction
		}
		if _, err := r.Append(id, Entry{Kind: k, Body: []byte("12345678")}); err != nil {
			t.Fatal(err)
		}
	}
	viewsAppend(t, r, clk, id)
	rep, err = r.Context(id, DefaultContextWindow)
	if err != nil {
		t.Fatal(err)
	}
	if rep.EverEvents != 2*contextPage+10 || rep.ReplayFrom != contextPage+4 || rep.InContextEvents != contextPage+6 || rep.InContextTokens != 2*(contextPage+6) {
		t.Fatalf("%+v", rep)
	}
}

func TestContextMissingBody(t *testing.T) {
	r, clk := viewsRook(t)
	id := viewsSession(t, r, "missing")
	viewsAppend(t, r, clk, id, Entry{Kind: eventlog.KindUser, Body: []byte("here")})
	// An event naming a body the store never had.
	if _, err := r.Log.Append(id, eventlog.Event{Kind: eventlog.KindUser, Body: [16]byte{1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	rep, err := r.Context(id, DefaultContextWindow)
	if err != nil || rep.MissingBodies != 1 || rep.InContextTokens != 1 || rep.EverEvents != 2 {
		t.Fatalf("%+v %v", rep, err)
	}
}

// An imported Claude Code session: the notes the model never read
// (progress, snapshots) are left out of what is in context, those it read
// (a meta prompt, even merged into a run of progress notes) are in; the
// last count is the whole of the last API message, and the threshold is
// judged by it. A fork of the session reads the same up to the fork.
func TestContextImported(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	src := "/p/s.jsonl"
	line := func(s int, id, block string, out int) string {
		return fmt.Sprintf(`{"type":"assistant","sessionId":"s","message":{"model":"m","id":%q,"content":[%s],"usage":{"input_tokens":3,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"output_tokens":%d}},"timestamp":"2026-02-10T21:00:%02d.000Z"}`, id, block, out, s)
	}
	progress := `{"type":"progress","sessionId":"s","data":{"type":"hook_progress","hookName":"` + strings.Repeat("h", 4000) + `"}}`
	lines := []string{
		`{"type":"user","sessionId":"s","message":{"role":"user","content":"go"}}`, // #0
		progress, // #1, with the meta prompt after it: "progress:hook_progress +1"
		`{"type":"user","isMeta":true,"sessionId":"s","message":{"role":"user","content":"the skill's instructions"}}`,
		line(1, "msg_a", `{"type":"text","text":"ok"}`, 10), // #2
		progress + "\n" + progress, // #3 "progress:hook_progress ×2"
		line(3, "msg_a", `{"type":"tool_use","id":"t1","name":"Bash","input":{}}`, 441),         // #4: the message's last line
		`{"type":"file-history-snapshot","messageId":"m","snapshot":{"trackedFileBackups":{}}}`, // #5
	}
	writeSource(t, fsys, src, lines, "")
	id := *fileByPath(t, mustImport(t, r, FormatClaudeCode, src), src).Session
	labels := eventsAs(t, r, id, func(ev eventlog.Event) string { return ev.Label })
	if want := " progress:hook_progress +1 m progress:hook_progress ×2 Bash file-history-snapshot"; labels != want {
		t.Fatalf("labels %q, want %q", labels, want)
	}
	rep, err := r.Context(id, DefaultContextWindow)
	if err != nil {
		t.Fatal(err)
	}
	if rep.UnseenEvents != 2 || rep.InContextEvents != 4 || rep.InContextBytes+rep.UnseenBytes != rep.EverBytes {
		t.Fatalf("in context %d events %d bytes, unseen %d events %d bytes, of %d", rep.InContextEvents, rep.InContextBytes, rep.UnseenEvents, rep.UnseenBytes, rep.EverBytes)
	}
	// The merged note counts its meta prompt's share only: far from the
	// 4000 bytes of the progress line beside it.
	var note ContextKind
	for _, k := range rep.Kinds {
		if k.Kind == eventlog.KindNote {
			note = k
		}
	}
	if note.Events != 1 || note.Bytes == 0 || note.Bytes > 500 {
		t.Fatalf("notes in context %+v", note)
	}
	if p := rep.Reported; p == nil || p.Seq != 4 || p.Tokens != 1103+441 || !p.Imported {
		t.Fatalf("reported %+v, want 1544 tokens at #4, imported", p)
	}
	// Judged by the model's count, not the estimate: a window whose
	// threshold is between them.
	if !rep.ThresholdByReported() {
		t.Fatal("the threshold is judged by the transcript's count")
	}
	for _, c := range []struct {
		window int64
		over   bool
	}{{2000, true}, {1_000_000, false}} {
		rep.SetWindow(c.window)
		if rep.OverThreshold() != c.over {
			t.Fatalf("window %d: over %v (reported %d, estimate %d, threshold %d)", c.window, !c.over, rep.Reported.Tokens, rep.InContextTokens, rep.Threshold)
		}
	}
	if rep.SetWindow(2000); rep.InContextTokens > rep.Threshold {
		t.Fatalf("the estimate %d is over the threshold %d too: the test shows nothing", rep.InContextTokens, rep.Threshold)
	}

	// A fork of the whole session, and of its first four events.
	for _, at := range []uint64{6, 4} {
		fork, err := r.Log.Fork(id, at, eventlog.Meta{Title: "fork"})
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.Context(fork.ID, DefaultContextWindow)
		if err != nil {
			t.Fatal(err)
		}
		want := rep
		if at == 4 {
			// Up to the message's first line: its input and output so far.
			if want, err = r.Context(id, DefaultContextWindow); err != nil {
				t.Fatal(err)
			}
			want.Reported = &ReportedContext{Seq: 2, Tokens: 1103 + 10, Imported: true}
			want.UnseenEvents, want.InContextEvents = 1, 3
		}
		if p := got.Reported; p == nil || *p != *want.Reported || got.UnseenEvents != want.UnseenEvents || got.InContextEvents != want.InContextEvents {
			t.Fatalf("fork at %d: reported %+v, %d events in context, %d unseen; want %+v, %d, %d", at, p, got.InContextEvents, got.UnseenEvents, want.Reported, want.InContextEvents, want.UnseenEvents)
		}
		if !got.ThresholdByReported() {
			t.Fatalf("fork at %d: the threshold is not judged by the transcript's count", at)
		}
		// Continued in rook: the count no longer covers the conversation,
		// and the estimate judges the threshold again.
		if _, err := r.Append(fork.ID, Entry{Kind: eventlog.KindUser, Body: []byte("and now, in rook")}); err != nil {
			t.Fatal(err)
		}
		if err := r.Flush(); err != nil {
			t.Fatal(err)
		}
		got, err = r.Context(fork.ID, DefaultContextWindow)
		if err != nil {
			t.Fatal(err)
		}
		if got.Reported == nil || !got.Reported.After || got.ThresholdByReported() {
			t.Fatalf("fork at %d, continued: reported %+v", at, got.Reported)
		}
		if want := max(int64(got.Reported.Tokens), got.InContextTokens); got.ThresholdTokens() != want {
			t.Fatalf("fork at %d, continued: judged by %d, want the larger figure %d", at, got.ThresholdTokens(), want)
		}
	}
}

// TestContextCodexWindowAfterACompaction: the window is the model's; a
// compaction with no count after it yet keeps the one recorded before it.
func TestContextCodexWindowAfterACompaction(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	lines := []string{
		`{"timestamp":"2026-01-07T08:30:00.000Z","type":"session_meta","payload":{"id":"019b8a10-1111-7222-8333-944455566600","timestamp":"2026-01-07T08:30:00.000Z","cwd":"/w","originator":"codex_cli_rs","cli_version":"0.80.0"}}`,
		`{"timestamp":"2026-01-07T08:30:01.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"count the lines"}]}}`,
		`{"timestamp":"2026-01-07T08:30:02.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":5000,"output_tokens":100,"total_tokens":5100},"last_token_usage":{"input_tokens":5000,"output_tokens":100,"total_tokens":5100},"model_context_window":400000}}}`,
		`{"timestamp":"2026-01-07T08:30:03.000Z","type":"compacted","payload":{"message":"summary of the lines counted","replacement_history":[]}}`,
		`{"timestamp":"2026-01-07T08:30:04.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"and the words"}]}}`,
	}
	writeSource(t, fsys, "/c/rollout-2026-01-07T08-30-00-019b8a10-1111-7222-8333-944455566600.jsonl", lines, "")
	rep := mustImport(t, r, FormatCodex, "/c")
	id := *rep.Files[0].Session
	ctx, err := r.Context(id, DefaultContextWindow)
	if err != nil {
		t.Fatal(err)
	}
	if ctx.Compactions != 1 || ctx.RecordedWindow != 400000 {
		t.Fatalf("after a compaction: %d compaction(s), window %d, reported %+v", ctx.Compactions, ctx.RecordedWindow, ctx.Reported)
	}
}

// TestContextCodexContextNotes: the user messages Codex wrote itself (the
// environment, an interrupted turn's marker) are notes the model read:
// in context, alone or merged with the session_meta before them, of which
// only the session_meta is left out.
func TestContextCodexContextNotes(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	item := func(s int, role, typ, text string) string {
		return fmt.Sprintf(`{"timestamp":"2026-01-07T08:30:%02d.000Z","type":"response_item","payload":{"type":"message","role":%q,"content":[{"type":%q,"text":%q}]}}`, s, role, typ, text)
	}
	lines := []string{
		`{"timestamp":"2026-01-07T08:30:00.000Z","type":"session_meta","payload":{"id":"019b8a10-1111-7222-8333-944455566601","timestamp":"2026-01-07T08:30:00.000Z","cwd":"/w","originator":"codex_cli_rs","cli_version":"0.80.0"}}`,
		item(1, "user", "input_text", "<environment_context>\n  <cwd>/w</cwd>\n  <shell>bash</shell>\n</environment_context>"),
		item(2, "user", "input_text", "count the lines"),
		item(3, "assistant", "output_text", "42"),
		item(4, "user", "input_text", "<turn_aborted>\n  The user interrupted the previous turn on purpose.\n</turn_aborted>"),
		item(5, "user", "input_text", "and the words"),
	}
	writeSource(t, fsys, "/c/rollout-2026-01-07T08-30-00-019b8a10-1111-7222-8333-944455566601.jsonl", lines, "")
	id := *mustImport(t, r, FormatCodex, "/c").Files[0].Session
	if got, want := eventsAs(t, r, id, func(ev eventlog.Event) string { return ev.Kind.String() + ":" + ev.Label }), "note:session_meta +1 user: assistant: note:user:context user:"; got != want {
		t.Fatalf("events %q, want %q", got, want)
	}
	rep, err := r.Context(id, DefaultContextWindow)
	if err != nil {
		t.Fatal(err)
	}
	// (A stored object is a few bytes more than its lines: the shares are
	// about the lines' lengths.)
	meta, env, aborted := int64(len(lines[0])+1), int64(len(lines[1])+1), int64(len(lines[4])+1)
	if rep.UnseenEvents != 0 || rep.InContextEvents != 5 || rep.UnseenBytes < meta || rep.UnseenBytes >= meta+env/2 {
		t.Fatalf("in context %d events, unseen %d events %d bytes; want 5, 0 and about the session_meta's %d bytes", rep.InContextEvents, rep.UnseenEvents, rep.UnseenBytes, meta)
	}
	var note ContextKind
	for _, k := range rep.Kinds {
		if k.Kind == eventlog.KindNote {
			note = k
		}
	}
	if note.Events != 2 || note.Bytes < env+aborted || note.Bytes >= env+aborted+meta/2 {
		t.Fatalf("notes in context %+v, want 2 events of about %d bytes", note, env+aborted)
	}
}

// TestContextImportedCountsCutStrings: an imported line counts whole in
// the estimate, the strings the import cut out of it (a long prompt, a
// tool's output) too, where the stored object leaves them out; a string a
// line holds twice (Claude Code's tool output, in the message and in
// toolUseResult) counts once.
func TestContextImportedCountsCutStrings(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	src := "/p/s.jsonl"
	prompt := strings.Repeat("explain this part of the code to me, ", 270) // ~10 KB
	output := strings.Repeat("a line the command printed\n", 740)          // ~20 KB
	q := func(s string) string { return string(appendJSONString(nil, []byte(s))) }
	lines := []string{
		`{"type":"user","sessionId":"s","message":{"role":"user","content":` + q(prompt) + `}}`,
		`{"type":"assistant","sessionId":"s","message":{"model":"m","id":"msg_a","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"make"}}],"usage":{"input_tokens":3,"output_tokens":5}}}`,
		`{"type":"user","sessionId":"s","message":{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":` + q(output) + `}]},"toolUseResult":{"stdout":` + q(output) + `,"stderr":""}}`,
	}
	writeSource(t, fsys, src, lines, "")
	id := *fileByPath(t, mustImport(t, r, FormatClaudeCode, src), src).Session
	rep, err := r.Context(id, DefaultContextWindow)
	if err != nil {
		t.Fatal(err)
	}
	bytesOf := map[eventlog.Kind]int64{}
	for _, k := range rep.Kinds {
		bytesOf[k.Kind] = k.Bytes
	}
	if b := bytesOf[eventlog.KindUser]; b < int64(len(prompt)) || b > int64(len(prompt))+300 {
		t.Errorf("the prompt's line counts %d bytes; its prompt alone is %d", b, len(prompt))
	}
	if b := bytesOf[eventlog.KindToolResult]; b < int64(len(output)) || b > int64(len(output))+400 {
		t.Errorf("the result's line counts %d bytes; its output (twice in it, counted once) is %d", b, len(output))
	}
}

// TestContextWindowSplitDoesNotOverflow: the threshold is 80% of the
// usable window for any window, however large (--window takes any int64,
// a transcript records what it records).
func TestContextWindowSplitDoesNotOverflow(t *testing.T) {
	for _, w := range []int64{1, 10, 200000, 1 << 57, math.MaxInt64} {
		reserve, usable, threshold := ContextWindowSplit(w)
		want := new(big.Int).Div(new(big.Int).Mul(big.NewInt(usable), big.NewInt(80)), big.NewInt(100))
		if reserve != w/10 || usable != w-w/10 || threshold != want.Int64() {
			t.Errorf("window %d: reserve %d, usable %d, threshold %d; want threshold %s", w, reserve, usable, threshold, want)
		}
	}
}

// TestContextReportedCountPastInt64: a recorded count near 2^64 (tokens
// are any uint64) showed as "-0.3% of usable" and never over the
// threshold, and an event's in + out past 2^64 wrapped round to a small
// count. The count is held at the largest: far over the threshold.
func TestContextReportedCountPastInt64(t *testing.T) {
	r, clk := viewsRook(t)
	for _, tc := range []struct {
		in, out uint64
		want    uint64
	}{
		{math.MaxUint64 - 605, 10, math.MaxUint64 - 595},
		{math.MaxUint64 - 5, 10, math.MaxUint64},
		{1 << 63, 0, 1 << 63},
	} {
		id := viewsSession(t, r, "huge")
		viewsAppend(t, r, clk, id, Entry{Kind: eventlog.KindAssistant, Body: []byte("hi"), TokensIn: tc.in, TokensOut: tc.out})
		rep, err := r.Context(id, DefaultContextWindow)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Reported == nil || rep.Reported.Tokens != tc.want {
			t.Fatalf("%d in, %d out: reported %+v, want %d tokens", tc.in, tc.out, rep.Reported, tc.want)
		}
		if pct := rep.ReportedPercentOfUsable(); !(pct > 1e12) || math.IsInf(pct, 0) {
			t.Fatalf("%d in, %d out: %.1f%% of usable", tc.in, tc.out, pct)
		}
		// An imported count decides the threshold; one of rook's own is
		// shown beside the estimate, which decides.
		rep.Reported.Imported = true
		if !rep.OverThreshold() || rep.ThresholdTokens() != math.MaxInt64 {
			t.Fatalf("%d in, %d out: over the threshold %v, by %d", tc.in, tc.out, rep.OverThreshold(), rep.ThresholdTokens())
		}
	}
}

// A line a crash left NULs before (or an editor a byte order mark) is its
// entry all the same, as the importers read it (entryBytes): its usage
// counts, and so does a Codex token_count's window and a rollback's turns.
func TestRecordedTokensPastNULs(t *testing.T) {
	for _, pre := range []string{"\x00\x00\x00", "\xef\xbb\xbf"} {
		claude := pre + `{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":100,"cache_read_input_tokens":20,"output_tokens":7}}}` + "\n"
		if got, ok := claudeRecordedTokens([]byte(claude)); !ok || got != 127 {
			t.Errorf("claude after %q: %d, %v; want 127", pre, got, ok)
		}
		codex := pre + `{"type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":5000,"output_tokens":100},"model_context_window":400000}}}` + "\n"
		if got, ok := codexRecordedTokens([]byte(codex)); !ok || got != 5100 {
			t.Errorf("codex after %q: %d, %v; want 5100", pre, got, ok)
		}
		if got := codexContextWindow([]byte(codex)); got != 400000 {
			t.Errorf("codex window after %q: %d; want 400000", pre, got)
		}
		rollback := pre + `{"type":"event_msg","payload":{"type":"thread_rolled_back","num_turns":2}}` + "\n"
		if got := codexRolledBackTurns([]byte(rollback)); got != 2 {
			t.Errorf("codex rollback after %q: %d; want 2", pre, got)
		}
	}
}

// TestContextCodexAgentMessageIsRead: a Codex agent_message response item
// (mail between agents in the model's history, which the model is sent
// as a message) is a note the model read: in context, not among what the
// agent kept for itself.
func TestContextCodexAgentMessageIsRead(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	lines := []string{
		`{"timestamp":"2026-01-07T08:30:00.000Z","type":"session_meta","payload":{"id":"019b8a10-1111-7222-8333-944455566602","timestamp":"2026-01-07T08:30:00.000Z","cwd":"/w","originator":"codex_cli_rs","cli_version":"0.80.0"}}`,
		`{"timestamp":"2026-01-07T08:30:01.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"count the lines"}]}}`,
		`{"timestamp":"2026-01-07T08:30:02.000Z","type":"response_item","payload":{"type":"agent_message","author":"/root/w","recipient":"/root","content":[{"type":"input_text","text":"` + strings.Repeat("the worker found 42 lines ", 40) + `"}]}}`,
	}
	writeSource(t, fsys, "/c/rollout-2026-01-07T08-30-00-019b8a10-1111-7222-8333-944455566602.jsonl", lines, "")
	id := *mustImport(t, r, FormatCodex, "/c").Files[0].Session
	rep, err := r.Context(id, DefaultContextWindow)
	if err != nil {
		t.Fatal(err)
	}
	meta, mail := int64(len(lines[0])+1), int64(len(lines[2])+1)
	if rep.UnseenBytes >= meta+mail/2 {
		t.Fatalf("unseen %d events %d bytes: the agent_message's %d bytes are among what the model never read (the session_meta is %d)", rep.UnseenEvents, rep.UnseenBytes, mail, meta)
	}
}

// An older rook's `rook store put --kind source` stored any bytes under
// that kind, and a native message of the same bytes appended later is
// that object (the store keeps the first kind). A native session tagged
// codex with such a body, forked, its parent removed: the fork's copy
// holds no imported line (the object reads back and does not decode as
// one), so the fork stays native, as it was while its parent was there.
// (store put no longer takes the kind: scripts store_put_encoded_kinds.)
func TestHandPutSourceBytesAreNoProofOfImport(t *testing.T) {
	r := testRook(t, vfs.NewMem())
	body := []byte("deploy the thing\n")
	if _, err := r.Store.Put(cas.KindSource, body); err != nil {
		t.Fatal(err)
	}
	m, err := r.NewSession("native", "/w", []string{FormatCodex})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Append(m.ID, Entry{Kind: eventlog.KindUser, Body: body}); err != nil {
		t.Fatal(err)
	}
	f, err := r.Log.Fork(m.ID, 1, eventlog.Meta{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(f.Tags, FormatCodex) {
		t.Fatalf("fork tags %q: want the parent's codex tag", f.Tags)
	}
	if src := r.ImportedFrom(f); src != nil {
		t.Fatalf("native fork, parent there: imported from %+v", src)
	}
	if _, err := r.RemoveSession(m.ID); err != nil {
		t.Fatal(err)
	}
	fm, err := r.Log.ReadMeta(f.ID)
	if err != nil {
		t.Fatal(err)
	}
	if src := r.ImportedFrom(fm); src != nil {
		t.Fatalf("native fork, parent removed: imported from %+v", src)
	}
}
