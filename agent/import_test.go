package agent

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/clock"
	"github.com/rookhq/rook/internal/vfs"
	"github.com/rookhq/rook/internal/vfs/vfstest"
)

// corpusDir holds real Claude Code transcripts (shared/corpus, beside the
// repository).
var corpusDir = filepath.Join("..", "..", "shared", "corpus", "claude-code")

// claudeLines builds a small Claude Code transcript: a prompt, an
// assistant message over three lines (thinking, text, tool_use), progress,
// the tool result (its output twice, as Claude Code writes it), and a
// file-history snapshot.
func claudeLines(session string, turn int) []string {
	out := strings.Repeat(fmt.Sprintf("output line %d of turn %d, long enough to be cut\n", turn, turn), 12)
	ts := func(s int) string { return fmt.Sprintf("2026-02-10T21:%02d:%02d.000Z", turn%60, s) }
	env := fmt.Sprintf(`"sessionId":%q,"cwd":"/home/u/proj","version":"2.1.38"`, session)
	q := func(s string) string { b := appendJSONString(nil, []byte(s)); return string(b) }
	msg := fmt.Sprintf("msg_%d", turn)
	usage := `"usage":{"input_tokens":3,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"output_tokens":42}`
	return []string{
		fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":"fix the server, turn %d"},"uuid":"u%d","timestamp":%q}`, env, turn, turn, ts(1)),
		fmt.Sprintf(`{"type":"assistant",%s,"message":{"model":"claude-opus-4-6","id":%q,"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"sig"}],%s},"uuid":"a%d","timestamp":%q}`, env, msg, usage, turn, ts(2)),
		fmt.Sprintf(`{"type":"assistant",%s,"message":{"model":"claude-opus-4-6","id":%q,"role":"assistant","content":[{"type":"text","text":"Let me look."}],%s},"uuid":"b%d","timestamp":%q}`, env, msg, usage, turn, ts(3)),
		fmt.Sprintf(`{"type":"assistant",%s,"message":{"model":"claude-opus-4-6","id":%q,"role":"assistant","content":[{"type":"tool_use","id":"toolu_%d","name":"Bash","input":{"command":"make"}}],%s},"uuid":"c%d","timestamp":%q}`, env, msg, turn, usage, turn, ts(4)),
		fmt.Sprintf(`{"type":"progress",%s,"data":{"type":"bash_progress","output":"building"},"uuid":"p%d","timestamp":%q}`, env, turn, ts(5)),
		fmt.Sprintf(`{"type":"progress",%s,"data":{"type":"bash_progress","output":"still building"},"uuid":"q%d","timestamp":%q}`, env, turn, ts(6)),
		fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":[{"tool_use_id":"toolu_%d","type":"tool_result","content":%s,"is_error":false}]},"toolUseResult":{"stdout":%s,"stderr":""},"uuid":"r%d","timestamp":%q}`, env, turn, q(out), q(out), turn, ts(7)),
		`{"type":"file-history-snapshot","messageId":"m","snapshot":{"trackedFileBackups":{}},"isSnapshotUpdate":false}`,
	}
}

// writeSourceBytes are the bytes writeSource writes.
func writeSourceBytes(lines []string, tail string) []byte {
	return []byte(strings.Join(lines, "\n") + "\n" + tail)
}

func writeSource(t *testing.T, fsys vfs.FS, path string, lines []string, tail string) []byte {
	t.Helper()
	data := writeSourceBytes(lines, tail)
	writeSourceFile(t, fsys, path, data)
	return data
}

// writeSourceFile writes data at path, making its directory.
func writeSourceFile(t *testing.T, fsys vfs.FS, path string, data []byte) {
	t.Helper()
	if err := fsys.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := fsys.WriteFileAtomic(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// diskRook makes a store on the real disk, at home, open for writing.
func diskRook(t testing.TB, home string) *Rook {
	t.Helper()
	if _, err := cas.Init(vfs.OS, nil, home); err != nil {
		t.Fatal(err)
	}
	r, err := Open(home, Options{FS: vfs.OS, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func mustImport(t *testing.T, r *Rook, format string, paths ...string) ImportReport {
	t.Helper()
	rep, err := r.Import(ImportOptions{Format: format, Paths: paths})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// mustExport exports a session and checks it is exactly want.
func mustExport(t *testing.T, r *Rook, id eventlog.ID, want []byte) {
	t.Helper()
	var buf bytes.Buffer
	x, err := r.ExportSource(id, &buf)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) || !x.Exact || x.SHA256 != fmt.Sprintf("%x", sha256.Sum256(want)) {
		t.Fatalf("export of %s is not the source (exact=%v, %d vs %d bytes)\n got: %q\nwant: %q", id, x.Exact, buf.Len(), len(want), buf.Bytes(), want)
	}
	lines := bytes.Count(want, []byte{'\n'})
	if len(want) > 0 && want[len(want)-1] != '\n' {
		lines++
	}
	if x.Lines != lines {
		t.Fatalf("export of %s says %d line(s), the source has %d", id, x.Lines, lines)
	}
}

func fileByPath(t *testing.T, rep ImportReport, path string) ImportedFile {
	t.Helper()
	for _, f := range rep.Files {
		if f.Path == path {
			return f
		}
	}
	t.Fatalf("%s not in the report: %+v", path, rep.Files)
	return ImportedFile{}
}

// A line that does not decode as a Claude Code entry is reported with why:
// one that is JSON (not an object, or a field of another type than Claude
// Code writes) is not "not JSON", which would send the user looking for a
// syntax error that is not there.
func TestClaudeUnparsedSaysWhy(t *testing.T) {
	for line, want := range map[string]string{
		`{"type":"user",`:                  "not JSON",
		`[1,2]`:                            "not a JSON object",
		`"user"`:                           "not a JSON object",
		`{"type":"user","timestamp":5}`:    `"timestamp" is a number, not the type Claude Code writes there`,
		`{"type":"progress","data":"x"}`:   `"data" is a string, not the type Claude Code writes there`,
		`{"type":"user","isMeta":[true]}`:  `"isMeta" is an array, not the type Claude Code writes there`,
		`{"type":"user","isMeta":{"a":1}}`: `"isMeta" is an object, not the type Claude Code writes there`,
	} {
		m := newClaudeMapper("/p/s.jsonl").mapLine([]byte(line))
		if m.Label != "claude-code:unparsed" || m.Unparsed != want {
			t.Errorf("%s: %q %q, want unparsed %q", line, m.Label, m.Unparsed, want)
		}
	}
}

func TestImportClaudeCodeMapsLinesAndExportsThemBack(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	src := "/home/u/.claude/projects/-home-u-proj/s1.jsonl"
	lines := claudeLines("s1", 1)
	lines = append(lines,
		`{"type":"system","subtype":"compact_boundary","content":"Conversation compacted","timestamp":"2026-02-10T21:01:08.000Z"}`,
		`{"type":"user","message":{"role":"user","content":"This session is being continued from a previous conversation."},"isVisibleInTranscriptOnly":true,"isCompactSummary":true,"timestamp":"2026-02-10T21:01:08.000Z"}`,
		`{"type":"system","subtype":"api_error","timestamp":"2026-02-10T21:01:09.000Z"}`,
		"this line is not JSON", `{"no":"type"}`)
	data := writeSource(t, fsys, src, lines, `{"type":"user","message":{"role":"us`)
	rep := mustImport(t, r, FormatClaudeCode, "/home/u/.claude/projects")
	if rep.Sessions != 1 || rep.Lines != len(lines)+1 || rep.Unparsed != 3 || rep.BytesIn != int64(len(data)) {
		t.Fatalf("report %+v", rep)
	}
	// The lines that did not parse are reported with file:line.
	var where []string
	for _, p := range rep.Problems {
		where = append(where, fmt.Sprintf("%d:%s", p.Line, p.Reason))
	}
	if got := strings.Join(where, "|"); got != `12:not JSON|13:no "type" field|14:truncated last line (no newline): not JSON` {
		t.Fatalf("problems: %s", got)
	}
	f := fileByPath(t, rep, src)
	m, err := r.Log.ReadMeta(*f.Session)
	if err != nil {
		t.Fatal(err)
	}
	if m.Title != "fix the server, turn 1" || m.Workspace != "/home/u/proj" || m.Source.ID != "s1" || strings.Join(m.Tags, ",") != "claude-code" {
		t.Fatalf("meta %+v", m)
	}
	evs, err := r.Log.Read(m.ID, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range evs {
		got = append(got, fmt.Sprintf("%s/%s/%d/%d", ev.Kind, ev.Label, ev.TokensIn, ev.TokensOut))
	}
	want := []string{
		"user//0/0",
		"reasoning/claude-opus-4-6/1103/42", // one message over three lines: tokens once
		"assistant/claude-opus-4-6/0/0",
		"tool-call/Bash/0/0",
		"note/progress:bash_progress ×2/0/0", // a run of notes is one event
		"tool-result/Bash/0/0",
		"note/file-history-snapshot/0/0",
		"compaction/system:compact_boundary/0/0", // session context replays from after it
		"note/user:compact-summary/0/0",          // the model's summary, not a prompt
		"error/system:api_error/0/0",
		"note/claude-code:unparsed/0/0",
		"note/claude-code:unparsed/0/0",
		"note/claude-code:unparsed/0/0",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("events:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The compact boundary is a compaction: context replays from it (an
	// imported compaction's line is in context), and the tokens the
	// message before it recorded are no longer in it. The lines that did
	// not parse are notes the model never read: left out.
	ctx, err := r.Context(m.ID, DefaultContextWindow)
	if err != nil || ctx.Compactions != 1 || ctx.ReplayFrom != 7 || ctx.InContextEvents != 3 || ctx.UnseenEvents != 3 || ctx.Reported != nil {
		t.Fatalf("context: %+v %v", ctx, err)
	}
	if !evs[1].More || !evs[2].More || evs[3].More {
		t.Fatal("the lines of one message are not one group")
	}
	if !evs[0].Time.Equal(time.Date(2026, 2, 10, 21, 1, 1, 0, time.UTC)) || !evs[6].Time.Equal(evs[5].Time) {
		t.Fatalf("times %v %v %v", evs[0].Time, evs[5].Time, evs[6].Time)
	}
	// Every command reads the line as it was.
	body, err := r.Body(evs[0])
	if err != nil || string(body) != lines[0]+"\n" {
		t.Fatalf("body %q %v", body, err)
	}
	mustExport(t, r, m.ID, data)
	// History previews what a line says, not its JSON envelope: the
	// reading view from its first line that says more than a tag.
	first := uint64(0)
	page, err := r.History(m.ID, HistoryQuery{From: &first, Limit: 10})
	if err != nil || page.Events[0].Preview != "fix the server, turn 1" || page.Events[3].Preview != "command: make" || page.Events[4].Preview != "[progress bash_progress] building" || !strings.HasPrefix(page.Events[5].Preview, "output line 1 of turn 1") {
		t.Fatalf("previews: %+v %v", page.Events, err)
	}
	// The tool output, written twice on its line, is one object.
	out := strings.Repeat("output line 1 of turn 1, long enough to be cut\n", 12)
	info, err := r.Store.Stat(cas.ID([]byte(out)))
	if err != nil || info.Kind != cas.KindToolResult {
		t.Fatalf("cut string: %+v %v", info, err)
	}
	if res, _ := r.Search("output line turn", SearchOptions{}); len(res.Hits) == 0 {
		t.Fatal("search does not see the cut strings")
	}
}

// TestImportReportsUnknownEntryTypes: a line of an entry type rook does not
// know (a newer agent's) is kept byte for byte as a note, and counted and
// reported: one problem per file and type, at its first line, saying how
// many. The types rook keeps as notes on purpose are not reported, nor,
// when the file grows, the lines an import before took in.
func TestImportReportsUnknownEntryTypes(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	src := "/p/s.jsonl"
	newEntry := func(s int) string {
		return fmt.Sprintf(`{"type":"totally-new-entry","sessionId":"s","detail":{"n":%d},"timestamp":"2026-02-10T21:03:%02d.000Z"}`, s, s)
	}
	lines := append(claudeLines("s", 1),
		`{"type":"queue-operation","operation":"enqueue","sessionId":"s","timestamp":"2026-02-10T21:02:00.000Z","content":"and the tests"}`,
		`{"type":"custom-title","customTitle":"the server","sessionId":"s"}`,
		`{"type":"attachment","attachment":{"type":"skill_listing","content":"x"},"sessionId":"s"}`,
		`{"type":"system","subtype":"stop_hook_summary","hookCount":1,"sessionId":"s"}`,
		`{"type":"summary","summary":"Server fix","leafUuid":"u"}`,
		newEntry(1),
		`{"type":"user","sessionId":"s","message":{"role":"user","content":"and now?"},"timestamp":"2026-02-10T21:03:02.000Z"}`,
		newEntry(3),
		`{"type":"another-new-one","sessionId":"s"}`,
		newEntry(5),
	)
	data := writeSource(t, fsys, src, lines, "")
	rep := mustImport(t, r, FormatClaudeCode, src)
	f := fileByPath(t, rep, src)
	if rep.Unknown != 4 || f.Unknown != 4 || rep.Unparsed != 0 || rep.ProblemsLeftOut != 0 {
		t.Fatalf("report %+v", rep)
	}
	var where []string
	for _, p := range rep.Problems {
		where = append(where, fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Reason))
	}
	if got, want := strings.Join(where, "\n"), src+`:14: the first of 3 lines of entry type "totally-new-entry", which rook does not know: kept byte for byte as notes`+"\n"+
		src+`:17: a line of entry type "another-new-one", which rook does not know: kept byte for byte as a note`; got != want {
		t.Fatalf("problems:\n%s\nwant\n%s", got, want)
	}
	mustExport(t, r, *f.Session, data)
	evs, err := r.Log.Read(*f.Session, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if ev := evs[len(evs)-1]; ev.Kind != eventlog.KindNote || ev.Label != "totally-new-entry +2" { // a run of notes, as before
		t.Fatalf("last event %v %q", ev.Kind, ev.Label)
	}
	// Grown: only the new lines count.
	lines = append(lines, newEntry(6), `{"type":"user","sessionId":"s","message":{"role":"user","content":"done"}}`)
	data = writeSource(t, fsys, src, lines, "")
	rep = mustImport(t, r, FormatClaudeCode, src)
	if f := fileByPath(t, rep, src); f.Status != ImportGrown || rep.Unknown != 1 || f.Unknown != 1 || len(rep.Problems) != 1 || rep.Problems[0].Line != 19 {
		t.Fatalf("grown: %+v", rep)
	}
	mustExport(t, r, *f.Session, data)
	if rep := mustImport(t, r, FormatClaudeCode, src); rep.Unknown != 0 || len(rep.Problems) != 0 {
		t.Fatalf("unchanged: %+v", rep)
	}
	// Past the problems a report lists, they are counted: of the import,
	// and of the file at its last problem listed (the summary's "and N
	// more" of it).
	many := claudeLines("m", 1)
	for range MaxImportProblems + 1 {
		many = append(many, "garbage")
	}
	writeSource(t, fsys, "/q/many.jsonl", append(many, newEntry(1)), "")
	rep = mustImport(t, r, FormatClaudeCode, "/q/many.jsonl")
	if len(rep.Problems) != MaxImportProblems || rep.ProblemsLeftOut != 2 || rep.Unknown != 1 {
		t.Fatalf("%d problems listed, %d left out: %+v", len(rep.Problems), rep.ProblemsLeftOut, rep)
	}
	if last := rep.Problems[MaxImportProblems-1]; last.File != "/q/many.jsonl" || last.LeftOut != 2 {
		t.Fatalf("the file's last problem listed: %+v: want the 2 left out counted there", last)
	}
	for _, p := range rep.Problems[:MaxImportProblems-1] {
		if p.LeftOut != 0 {
			t.Fatalf("left out counted at a problem not the file's last listed: %+v", p)
		}
	}
}

// The mappers know every entry type the agents write that they keep as
// notes on purpose (peers.md, section 3); what they do not know is a note
// all the same, which says its type.
func TestMappersTellUnknownEntryTypes(t *testing.T) {
	for _, c := range []struct {
		format, line, unknown string
	}{
		{FormatClaudeCode, `{"type":"queue-operation","operation":"dequeue"}`, ""},
		{FormatClaudeCode, `{"type":"ai-title","aiTitle":"x"}`, ""},
		{FormatClaudeCode, `{"type":"file-history-delta","backup":{}}`, ""},
		{FormatClaudeCode, `{"type":"progress","data":{"type":"some_new_progress"}}`, ""}, // progress of any kind
		{FormatClaudeCode, `{"type":"system","subtype":"some_new_subtype"}`, ""},          // system lines of any subtype
		{FormatClaudeCode, `{"type":"user"}`, ""},                                         // no message: a note, but a user line
		{FormatClaudeCode, `{"type":"totally-new-entry","x":1}`, "totally-new-entry"},
		{FormatClaudeCode, `{"type":"User","message":{"content":"hi"}}`, "User"},
		{FormatCodex, `{"type":"world_state","payload":{}}`, ""},
		{FormatCodex, `{"type":"event_msg","payload":{"type":"some_new_event"}}`, ""}, // UI events of any type
		{FormatCodex, `{"type":"response_item","payload":{"type":"ghost_snapshot"}}`, ""},
		{FormatCodex, `{"type":"response_item","payload":{"type":"image_generation_call","result":""}}`, ""},
		{FormatCodex, `{"type":"response_item","payload":{"type":"message","role":"tool"}}`, ""},
		{FormatCodex, `{"type":"future_item","payload":{}}`, "future_item"},
		{FormatCodex, `{"type":"response_item","payload":{"type":"future_call"}}`, "response_item:future_call"},
		{FormatCodex, `{"type":"response_item","payload":{}}`, "response_item:"},
	} {
		m, cuts := readLine(newMapper(c.format, "/p/s.jsonl"), []byte(c.line), 1)
		if m.Unknown != c.unknown || m.Kind != eventlog.KindNote || m.Unparsed != "" {
			t.Errorf("%s: %v %q unknown %q unparsed %q; want a note, unknown %q", c.line, m.Kind, m.Label, m.Unknown, m.Unparsed, c.unknown)
		}
		if c.unknown != "" && len(cuts) == 0 {
			t.Errorf("%s: nothing cut out: it is kept as any note", c.line)
		}
	}
}

// TestImportClaudeAPIErrors: Claude Code writes a call that failed as an
// assistant message of its own (isApiErrorMessage, model <synthetic>, its
// text the error): an error event, as a system api_error line is, counting
// no tokens, which every command reads as any imported line.
func TestImportClaudeAPIErrors(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	src := "/p/s.jsonl"
	apiError := func(s int, text string) string {
		return fmt.Sprintf(`{"type":"assistant","sessionId":"s","cwd":"/home/u/proj","message":{"id":"e%d","model":"<synthetic>","role":"assistant","type":"message","stop_reason":"stop_sequence","content":[{"type":"text","text":%q}],"usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}},"isApiErrorMessage":true,"error":"server_error","apiErrorStatus":529,"timestamp":"2026-02-10T21:00:%02d.000Z"}`, s, text, s)
	}
	lines := []string{
		`{"type":"user","sessionId":"s","cwd":"/home/u/proj","message":{"role":"user","content":"go"},"timestamp":"2026-02-10T21:00:00.000Z"}`,
		apiError(1, `API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`),
		apiError(2, "Claude AI usage limit reached|1770760800"),
		`{"type":"assistant","sessionId":"s","message":{"model":"claude-opus-4-6","id":"msg_a","role":"assistant","content":[{"type":"text","text":"done"}],"usage":{"input_tokens":3,"output_tokens":5}},"timestamp":"2026-02-10T21:00:03.000Z"}`,
	}
	for _, l := range lines[1:3] {
		if !checkFastPath(t, []byte(l), viewLong) {
			t.Errorf("the fast path declined %s", l)
		}
	}
	data := writeSource(t, fsys, src, lines, "")
	rep := mustImport(t, r, FormatClaudeCode, src)
	id := *fileByPath(t, rep, src).Session
	evs, err := r.Log.Read(id, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range evs {
		got = append(got, fmt.Sprintf("%s/%s/%d/%d/%v", ev.Kind, ev.Label, ev.TokensIn, ev.TokensOut, ev.More))
	}
	if want := "user//0/0/false error/assistant:api_error/0/0/false error/assistant:api_error/0/0/false assistant/claude-opus-4-6/3/5/false"; strings.Join(got, " ") != want {
		t.Fatalf("events %s\nwant   %s", strings.Join(got, " "), want)
	}
	mustExport(t, r, id, data)
	first := uint64(0)
	page, err := r.History(id, HistoryQuery{From: &first, Limit: 10})
	if err != nil || !strings.HasPrefix(page.Events[1].Preview, "API Error: 529") || page.Events[2].Preview != "Claude AI usage limit reached|1770760800" {
		t.Fatalf("history: %+v %v", page.Events, err)
	}
	show, err := r.Show(id, ShowQuery{From: 1, Limit: 1, MaxBody: 1000})
	if err != nil || !strings.Contains(string(show.Events[0].Text), "API Error: 529") {
		t.Fatalf("show: %+v %v", show.Events, err)
	}
	// The context the model read last is the reply's usage, not an error's.
	ctx, err := r.Context(id, DefaultContextWindow)
	if err != nil || ctx.Reported == nil || ctx.Reported.Seq != 3 || ctx.Reported.Tokens != 8 {
		t.Fatalf("context: %+v %v", ctx, err)
	}
	if res, err := r.Search("usage limit reached", SearchOptions{}); err != nil || len(res.Hits) != 1 || res.Hits[0].Kind != eventlog.KindError {
		t.Fatalf("search: %+v %v", res, err)
	}
}

// TestImportCountsAMessagesTokensOnce: Claude Code repeats an API
// message's usage on each of its lines, the output growing as it streams,
// and other lines may come between them (a progress note, in a later
// import even). The session counts each message's tokens once: its
// input, and its output as its last line says.
func TestImportCountsAMessagesTokensOnce(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	src := "/p/s.jsonl"
	line := func(s int, id, block string, out int) string {
		return fmt.Sprintf(`{"type":"assistant","sessionId":"s","message":{"model":"m","id":%q,"content":[%s],"usage":{"input_tokens":3,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"output_tokens":%d}},"timestamp":"2026-02-10T21:00:%02d.000Z"}`, id, block, out, s)
	}
	thinking, text := `{"type":"thinking","thinking":"hmm"}`, `{"type":"text","text":"ok"}`
	progress := `{"type":"progress","sessionId":"s","data":{"type":"hook_progress"},"timestamp":"2026-02-10T21:00:02.000Z"}`
	lines := []string{
		`{"type":"user","sessionId":"s","message":{"role":"user","content":"go"},"timestamp":"2026-02-10T21:00:00.000Z"}`,
		line(1, "msg_a", thinking, 10),
		progress, // between two lines of msg_a
		line(3, "msg_a", text, 10),
		line(4, "msg_a", `{"type":"tool_use","id":"t1","name":"Bash","input":{}}`, 441),
		line(5, "msg_b", text, 7),
		line(6, "msg_b", text, 7), // the same usage again
		line(7, "", text, 5),      // no message id: counted as it is
	}
	writeSource(t, fsys, src, lines, "")
	mustImport(t, r, FormatClaudeCode, src)
	// The file grows by a last line of msg_b, its output now final.
	lines = append(lines, line(8, "msg_b", text, 30))
	writeSource(t, fsys, src, lines, "")
	rep := mustImport(t, r, FormatClaudeCode, src)
	id := *fileByPath(t, rep, src).Session
	s, err := r.Log.Summary(id)
	if err != nil {
		t.Fatal(err)
	}
	if s.TokensIn != 3*1103 || s.TokensOut != 441+30+5 {
		t.Fatalf("tokens %d in, %d out; want %d in, %d out", s.TokensIn, s.TokensOut, 3*1103, 441+30+5)
	}
	got := eventsAs(t, r, id, func(ev eventlog.Event) string {
		return fmt.Sprintf("%s/%d/%d", ev.Kind, ev.TokensIn, ev.TokensOut)
	})
	want := "user/0/0 reasoning/1103/10 note/0/0 assistant/0/0 tool-call/0/431 assistant/1103/7 assistant/0/0 assistant/1103/5 assistant/0/23"
	if got != want {
		t.Fatalf("events %s\nwant   %s", got, want)
	}
}

// eventsAs is a session's events, each as f says, space-separated.
func eventsAs(t *testing.T, r *Rook, id eventlog.ID, f func(eventlog.Event) string) string {
	t.Helper()
	evs, err := r.Log.Read(id, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, len(evs))
	for i, ev := range evs {
		got[i] = f(ev)
	}
	return strings.Join(got, " ")
}

func TestImportIsIncremental(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	dir := "/p"
	a, b := dir+"/a.jsonl", dir+"/b.jsonl"
	dataA := writeSource(t, fsys, a, claudeLines("a", 1), "")
	dataB := writeSource(t, fsys, b, claudeLines("b", 2), `{"type":"user","mess`) // cut short while being written
	first := mustImport(t, r, FormatClaudeCode, dir)
	if first.Sessions != 2 {
		t.Fatalf("%+v", first)
	}
	idA, idB := *fileByPath(t, first, a).Session, *fileByPath(t, first, b).Session
	storedBefore := first.StoredAfter

	// Again: nothing.
	again := mustImport(t, r, FormatClaudeCode, dir)
	if again.Unchanged != 2 || again.Lines != 0 || again.Sessions != 0 || again.StoredAfter != storedBefore {
		t.Fatalf("re-import: %+v", again)
	}

	// a grows; b's last line is completed and more follow; both get only
	// their new lines.
	dataA = writeSource(t, fsys, a, append(claudeLines("a", 1), claudeLines("a", 3)...), "")
	dataB = writeSource(t, fsys, b, claudeLines("b", 2), `{"type":"user","message":{"role":"user","content":"done"}}`+"\n"+strings.Join(claudeLines("b", 4), "\n")+"\n")
	grown := mustImport(t, r, FormatClaudeCode, dir)
	fa, fb := fileByPath(t, grown, a), fileByPath(t, grown, b)
	if fa.Status != ImportGrown || *fa.Session != idA || fa.Lines != 8 || fb.Status != ImportGrown || *fb.Session != idB || fb.Lines != 9 {
		t.Fatalf("grown: %+v %+v", fa, fb)
	}
	mustExport(t, r, idA, dataA)
	mustExport(t, r, idB, dataB)
	// b's cut line, as first seen, stays a note; the whole line is taken in
	// again, an event mapped as any line; the bytes taken in are what the
	// file grew by, not the line's first bytes again.
	evs, err := r.Log.Read(idB, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	cut := slices.IndexFunc(evs, func(ev eventlog.Event) bool { return ev.Label == "claude-code:unparsed" })
	if cut < 0 || cut+1 >= len(evs) {
		t.Fatalf("no cut line: %+v", evs)
	}
	whole := `{"type":"user","message":{"role":"user","content":"done"}}` + "\n"
	if body, err := r.Body(evs[cut+1]); evs[cut].Label != "claude-code:unparsed" || evs[cut+1].Kind != eventlog.KindUser || err != nil || string(body) != whole {
		t.Fatalf("the cut line, then whole: %+v %+v %q %v", evs[cut], evs[cut+1], body, err)
	}
	if want := int64(len(dataB) - len(writeSourceBytes(claudeLines("b", 2), `{"type":"user","mess`))); fb.BytesIn != want {
		t.Fatalf("grown by %d bytes, %d taken in", want, fb.BytesIn)
	}

	// a is rewritten in the middle: a new session, the old one kept.
	lines := append(claudeLines("a", 1), claudeLines("a", 3)...)
	lines[2] = strings.Replace(lines[2], "Let me look.", "Let me see.", 1)
	dataA2 := writeSource(t, fsys, a, lines, "")
	rw := mustImport(t, r, FormatClaudeCode, dir)
	fa = fileByPath(t, rw, a)
	if fa.Status != ImportRewritten || *fa.Session == idA || !strings.Contains(fa.Note, idA.String()) {
		t.Fatalf("rewritten: %+v", fa)
	}
	mustExport(t, r, idA, dataA)
	mustExport(t, r, *fa.Session, dataA2)
	if rep := mustImport(t, r, FormatClaudeCode, dir); rep.Unchanged != 2 {
		t.Fatalf("after the rewrite: %+v", rep)
	}
}

func TestImportLinksSubagentsToTheirParent(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	proj := "/p/-home-u-proj"
	child := proj + "/sess1/subagents/agent-a1.jsonl"
	old := proj + "/agent-b2.jsonl" // the older layout: beside the parent, naming it in its lines
	writeSource(t, fsys, child, claudeLines("sess1", 1), "")
	writeSource(t, fsys, old, claudeLines("sess1", 2), "")
	// Without their parent: imported on their own, and said so.
	rep := mustImport(t, r, FormatClaudeCode, proj)
	for _, p := range []string{child, old} {
		f := fileByPath(t, rep, p)
		if f.Parent != nil || !strings.Contains(f.Note, "parent session sess1 is not imported") {
			t.Fatalf("orphan %s: %+v", p, f)
		}
	}
	// The parent arrives: the children are linked.
	parent := proj + "/sess1.jsonl"
	writeSource(t, fsys, parent, claudeLines("sess1", 3), "")
	rep = mustImport(t, r, FormatClaudeCode, proj)
	pid := *fileByPath(t, rep, parent).Session
	for _, p := range []string{child, old} {
		f := fileByPath(t, rep, p)
		m, err := r.Log.ReadMeta(*f.Session)
		if err != nil || m.Parent == nil || *m.Parent != pid || !strings.Contains(strings.Join(m.Tags, ","), "subagent") {
			t.Fatalf("child %s: %+v %v", p, m, err)
		}
	}
	// A fresh store importing the whole tree links them at once.
	r2 := testRook(t, vfs.NewMem())
	r2.fs = fsys
	rep = mustImport(t, r2, FormatClaudeCode, proj)
	for _, f := range rep.Files {
		if f.Path != parent && (f.Parent == nil || f.Note != "") {
			t.Fatalf("one run: %+v", f)
		}
	}
}

// Two copies of one tree (a backup, a project directory copied rather
// than moved) imported together: each copy's subagents are linked to the
// parent in their own copy, not all to the copy imported last.
func TestImportLinksSubagentsOfCopiesToTheirOwnParent(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	trees := []string{"/p/a/-home-u-proj", "/p/b/-home-u-proj"}
	for _, proj := range trees {
		writeSource(t, fsys, proj+"/sess1.jsonl", claudeLines("sess1", 1), "")
		writeSource(t, fsys, proj+"/sess1/subagents/agent-a1.jsonl", claudeLines("sess1", 2), "")
		writeSource(t, fsys, proj+"/agent-b2.jsonl", claudeLines("sess1", 3), "")
	}
	rep := mustImport(t, r, FormatClaudeCode, "/p")
	for _, proj := range trees {
		pid := *fileByPath(t, rep, proj+"/sess1.jsonl").Session
		for _, child := range []string{proj + "/sess1/subagents/agent-a1.jsonl", proj + "/agent-b2.jsonl"} {
			m, err := r.Log.ReadMeta(*fileByPath(t, rep, child).Session)
			if err != nil || m.Parent == nil || *m.Parent != pid {
				t.Errorf("%s: parent %v, want %s (its own copy's); %v", child, m.Parent, pid, err)
			}
		}
	}
	// A copy of the parent in a directory below (a backup kept beside the
	// transcripts), imported after the parent beside the children: it is
	// in as many of their directories, and in one more; not nearer.
	proj := "/q/-home-u-proj"
	writeSource(t, fsys, proj+"/sess1.jsonl", claudeLines("sess1", 1), "")
	writeSource(t, fsys, proj+"/zbak/sess1.jsonl", claudeLines("sess1", 4), "")
	writeSource(t, fsys, proj+"/sess1/subagents/agent-a1.jsonl", claudeLines("sess1", 2), "")
	writeSource(t, fsys, proj+"/agent-b2.jsonl", claudeLines("sess1", 3), "")
	pid := *fileByPath(t, mustImport(t, r, FormatClaudeCode, proj+"/sess1.jsonl"), proj+"/sess1.jsonl").Session
	mustImport(t, r, FormatClaudeCode, proj+"/zbak")
	rep = mustImport(t, r, FormatClaudeCode, proj)
	for _, child := range []string{proj + "/sess1/subagents/agent-a1.jsonl", proj + "/agent-b2.jsonl"} {
		m, err := r.Log.ReadMeta(*fileByPath(t, rep, child).Session)
		if err != nil || m.Parent == nil || *m.Parent != pid {
			t.Errorf("%s: parent %v, want %s (the one beside it, not the copy below); %v", child, m.Parent, pid, err)
		}
	}
}

// Forks in two copies of one tree imported together, each named to come
// before its parent: each waits for every copy of its parent, and is
// linked to its own copy's (it was linked to the copy imported first).
func TestImportLinksForksOfCopiesToTheirOwnParent(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	trees := []string{"/p/a/-home-u-proj", "/p/b/-home-u-proj"}
	for _, proj := range trees {
		writeSource(t, fsys, proj+"/P.jsonl", append(claudeLines("P", 1), claudeLines("P", 2)...), "")
		writeSource(t, fsys, proj+"/F.jsonl", append(claudeForkLines("P", "F", 1), claudeLines("F", 3)...), "")
	}
	rep := mustImport(t, r, FormatClaudeCode, "/p")
	for _, proj := range trees {
		pid := *fileByPath(t, rep, proj+"/P.jsonl").Session
		m := metaOf(t, r, *fileByPath(t, rep, proj+"/F.jsonl").Session)
		if m.Parent == nil || *m.Parent != pid {
			t.Errorf("%s/F.jsonl: parent %v, want %s (its own copy's)", proj, m.Parent, pid)
		}
	}
}

// A parent removed and imported again (the README's remedy for a session
// an older rook imported: `rook session rm` it and import its file again)
// gets its children back: they are linked to the new session, not left
// naming the one removed.
func TestImportRelinksChildrenOfARemovedParent(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	proj := "/p/-home-u-proj"
	parent := proj + "/sess1.jsonl"
	child := proj + "/sess1/subagents/agent-a1.jsonl"
	writeSource(t, fsys, parent, claudeLines("sess1", 1), "")
	writeSource(t, fsys, child, claudeLines("sess1", 2), "")
	rep := mustImport(t, r, FormatClaudeCode, proj)
	old, cid := *fileByPath(t, rep, parent).Session, *fileByPath(t, rep, child).Session
	if _, err := r.RemoveSession(old); err != nil {
		t.Fatal(err)
	}
	rep = mustImport(t, r, FormatClaudeCode, proj)
	pid := *fileByPath(t, rep, parent).Session
	if pid == old {
		t.Fatalf("the parent is imported again as a new session: %s", pid)
	}
	m, err := r.Log.ReadMeta(cid)
	if err != nil || m.Parent == nil || *m.Parent != pid {
		t.Fatalf("child %s: parent %v, want %s (the removed one: %s); %v", cid, m.Parent, pid, old, err)
	}
	if f := fileByPath(t, rep, child); f.Parent == nil || *f.Parent != pid {
		t.Fatalf("the report's child: %+v", f)
	}
	// Imported without its file in the run, it is counted as linked.
	if _, err := r.RemoveSession(pid); err != nil {
		t.Fatal(err)
	}
	rep = mustImport(t, r, FormatClaudeCode, parent)
	if pid = *fileByPath(t, rep, parent).Session; rep.Linked != 1 {
		t.Fatalf("children linked: %d, want 1", rep.Linked)
	}
	if m, err := r.Log.ReadMeta(cid); err != nil || m.Parent == nil || *m.Parent != pid {
		t.Fatalf("child %s: parent %v, want %s; %v", cid, m.Parent, pid, err)
	}
	// Linked once: the next import has nothing to link.
	if rep := mustImport(t, r, FormatClaudeCode, proj); rep.Linked != 0 {
		t.Fatalf("linked again: %+v", rep)
	}
}

func TestImportReportsAnUnreadableFileAndGoesOn(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	good := writeSource(t, fsys, "/src/good.jsonl", claudeLines("g", 1), "")
	writeSource(t, fsys, "/src/bad.jsonl", claudeLines("b", 1), "")
	fsys.SetHook(func(op vfs.Op, path string) error {
		if path == "/src/bad.jsonl" && (op == vfs.OpOpenRead || op == vfs.OpRead) {
			return fs.ErrPermission
		}
		return nil
	})
	rep := mustImport(t, r, FormatClaudeCode, "/src")
	fsys.SetHook(nil)
	if rep.Failed != 1 || rep.Sessions != 1 || fileByPath(t, rep, "/src/bad.jsonl").Status != ImportFailed ||
		len(rep.Problems) != 1 || rep.Problems[0].File != "/src/bad.jsonl" || !strings.Contains(rep.Problems[0].Reason, "permission denied") {
		t.Fatalf("%+v", rep)
	}
	// It says what to do (it said only "open ...: permission denied").
	if want := "open /src/bad.jsonl: permission denied: rook may not read it: give it read permission (chmod u+r), or run the import as a user who may"; rep.Problems[0].Reason != want {
		t.Fatalf("reason %q\nwant %q", rep.Problems[0].Reason, want)
	}
	mustExport(t, r, *fileByPath(t, rep, "/src/good.jsonl").Session, good)
	// Readable again: the next import takes it in.
	if rep := mustImport(t, r, FormatClaudeCode, "/src"); rep.Sessions != 1 || rep.Unchanged != 1 {
		t.Fatalf("%+v", rep)
	}
	if _, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{"/nowhere"}}); err == nil || !strings.Contains(err.Error(), "cannot import /nowhere") {
		t.Fatalf("missing path: %v", err)
	}
	// A directory it may not list: the same, with what to do.
	writeSource(t, fsys, "/src/sub/c.jsonl", claudeLines("c", 1), "")
	fsys.SetHook(func(op vfs.Op, path string) error {
		if path == "/src/sub" && op == vfs.OpReadDir {
			return fs.ErrPermission
		}
		return nil
	})
	rep = mustImport(t, r, FormatClaudeCode, "/src")
	fsys.SetHook(nil)
	if f := fileByPath(t, rep, "/src/sub"); f.Status != ImportFailed || !strings.HasSuffix(f.Note, "permission denied: rook may not list it: give it read and search permission (chmod u+rx), or run the import as a user who may") {
		t.Fatalf("directory: %+v", f)
	}
}

// TestImportedStringsSurviveGC: the strings cut out of lines are reachable
// through them.
func TestImportedStringsSurviveGC(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	data := writeSource(t, fsys, "/p/s.jsonl", claudeLines("s", 1), "")
	rep := mustImport(t, r, FormatClaudeCode, "/p")
	if _, err := r.GC(0, false, nil, nil); err != nil {
		t.Fatal(err)
	}
	mustExport(t, r, *rep.Files[0].Session, data)
}

// TestImportCorpus imports every file of the shared corpus of real Claude
// Code transcripts, exports each back byte for byte, and reads them with
// the transcript commands.
func TestImportCorpus(t *testing.T) {
	if _, err := os.Stat(corpusDir); err != nil {
		t.Skipf("no corpus at %s: %v", corpusDir, err)
	}
	r := diskRook(t, filepath.Join(t.TempDir(), "store"))
	rep := mustImport(t, r, FormatClaudeCode, corpusDir)
	// Every entry type of the real transcripts is one rook knows.
	if rep.Failed != 0 || rep.Sessions < 20 || rep.Unparsed != 0 || rep.Unknown != 0 {
		t.Fatalf("%+v", rep)
	}
	n := 0
	err := filepath.WalkDir(corpusDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".jsonl") {
			return err
		}
		abs, _ := filepath.Abs(path)
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real // as the importer names it: a tree reached through a link is the same files
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		id := *fileByPath(t, rep, abs).Session
		mustExport(t, r, id, data)
		page, err := r.Show(id, ShowQuery{Limit: 5, MaxBody: 200})
		if err != nil || len(page.Events) == 0 {
			t.Fatalf("show %s: %v", path, err)
		}
		n++
		return nil
	})
	if err != nil || n != len(rep.Files) {
		t.Fatalf("%d files checked of %d: %v", n, len(rep.Files), err)
	}
	if res, err := r.Search("phx.server", SearchOptions{}); err != nil || len(res.Hits) == 0 {
		t.Fatalf("search: %+v %v", res, err)
	}
	if again := mustImport(t, r, FormatClaudeCode, corpusDir); again.Unchanged != len(rep.Files) || again.Lines != 0 {
		t.Fatalf("re-import: %+v", again)
	}
}

// TestImportCodex imports the hand-made rollouts (plain, zstd-compressed, a
// subagent), exports each back and reads them.
func TestImportCodex(t *testing.T) {
	// The .zst apart from its plain file: beside it, it is the same
	// rollout and left out (TestImportTakesAPlainRolloutBesideItsZst).
	dir := t.TempDir()
	fixture := map[string]string{}
	for _, f := range []string{codexMainFile, codexSubFile, codexMainFile + ".zst"} {
		sub := "plain"
		if strings.HasSuffix(f, ".zst") {
			sub = "zst"
		}
		p := filepath.Join(dir, "sessions", sub, filepath.Base(f))
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		writeSourceFile(t, vfs.OS, p, b)
		fixture[p] = f
	}
	r := diskRook(t, filepath.Join(dir, "store"))
	rep := mustImport(t, r, FormatCodex, filepath.Join(dir, "sessions"))
	// The one line that is not JSON, and the one of a type rook does not
	// know (future_item), in the plain rollout and its .zst copy.
	if rep.Failed != 0 || rep.Sessions != 3 || rep.Unparsed != 2 || rep.Unknown != 2 {
		t.Fatalf("%+v", rep)
	}
	kinds := map[eventlog.Kind]int{}
	for _, f := range rep.Files {
		// The export of a .zst source is its decompressed JSONL.
		want, zerr := os.ReadFile(strings.TrimSuffix(fixture[f.Path], ".zst"))
		if zerr != nil {
			t.Fatal(zerr)
		}
		mustExport(t, r, *f.Session, want)
		evs, err := r.Log.Read(*f.Session, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		compaction := -1
		for _, ev := range evs {
			kinds[ev.Kind]++
			if ev.Kind == eventlog.KindCompaction {
				compaction = int(ev.Seq)
			}
		}
		if compaction >= 0 {
			// The compacted line holds the history Codex kept: context
			// replays from it, not after it.
			ctx, err := r.Context(*f.Session, DefaultContextWindow)
			if err != nil || ctx.Compactions != 1 || ctx.ReplayFrom != uint64(compaction) {
				t.Fatalf("context of %s: %+v %v", f.Path, ctx, err)
			}
		}
		m, _ := r.Log.ReadMeta(*f.Session)
		if m.Source.Zstd != strings.HasSuffix(f.Path, ".zst") || m.Workspace == "" || strings.HasPrefix(m.Title, "codex session") {
			t.Fatalf("meta of %s: %+v", f.Path, m)
		}
	}
	for _, k := range []eventlog.Kind{eventlog.KindUser, eventlog.KindAssistant, eventlog.KindReasoning, eventlog.KindToolCall, eventlog.KindToolResult, eventlog.KindError, eventlog.KindNote, eventlog.KindCompaction} {
		if kinds[k] == 0 {
			t.Fatalf("no %s event: %v", k, kinds)
		}
	}
	if again := mustImport(t, r, FormatCodex, filepath.Join(dir, "sessions")); again.Unchanged != 3 {
		t.Fatalf("re-import: %+v", again)
	}
}

// importCrashSources writes the files the crash sweep imports.
func importCrashSources(fsys *vfs.MemFS) map[string][]byte {
	out := map[string][]byte{}
	for i, name := range []string{"/src/a.jsonl", "/src/s/subagents/agent-x.jsonl"} {
		data := []byte(strings.Join(append(claudeLines("s", i), claudeLines("s", i+5)...), "\n") + "\n")
		if err := fsys.MkdirAll(filepath.Dir(name), 0o700); err != nil {
			panic(err)
		}
		if err := fsys.WriteFileAtomic(name, data, 0o600); err != nil {
			panic(err)
		}
		out[name] = data
	}
	return out
}

// TestImportCrashSweep crashes an import at every write in turn, then
// imports again from what was durable: every file's session exports back
// byte for byte, with each line once (no line lost, none twice), and no
// file has two sessions. Files read whole, and files taken in chunks (as
// big ones are).
func TestImportCrashSweep(t *testing.T) {
	for _, chunk := range []int{0, 300} {
		t.Run(fmt.Sprintf("chunks=%d", chunk), func(t *testing.T) { importCrashSweep(t, chunk) })
	}
}

func importCrashSweep(t *testing.T, chunk int) {
	clk := &clock.Fixed{T: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	open := func(fsys vfs.FS) (*Rook, error) {
		return Open(crashHome, Options{FS: fsys, Clock: clk, Writable: true})
	}
	importAll := func(fsys vfs.FS) (ImportReport, error) {
		r, err := open(fsys)
		if err != nil {
			return ImportReport{}, err
		}
		rep, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{"/src"}, ChunkBytes: chunk})
		if cerr := r.Close(); err == nil {
			err = cerr
		}
		return rep, err
	}
	// The events a whole import makes of each file.
	ref := vfs.NewMem()
	initCrashStore(ref)
	importCrashSources(ref)
	refRep, err := importAll(ref)
	if err != nil {
		t.Fatal(err)
	}
	wantEvents := map[string]int{}
	for _, f := range refRep.Files {
		wantEvents[f.Path] = f.Events
	}
	var sources map[string][]byte
	check := func(k int, fsys *vfs.MemFS) {
		verifyCrashState(t, fmt.Sprintf("crash at write %d", k), fsys, clk)
		if _, err := importAll(fsys); err != nil {
			t.Fatalf("crash at write %d: import again: %v", k, err)
		}
		r, err := open(fsys)
		if err != nil {
			t.Fatalf("crash at write %d: %v", k, err)
		}
		defer r.Close()
		ids, _ := r.Log.IDs()
		seen := map[string]int{}
		for _, id := range ids {
			m, err := r.Log.ReadMeta(id)
			if err != nil || m.Source == nil {
				continue
			}
			s, _ := r.Log.Summary(id)
			if s.Events == 0 {
				continue // created, then the crash came before any line was in: an empty session is harmless
			}
			seen[m.Source.Path]++
			var buf bytes.Buffer
			x, err := r.ExportSource(id, &buf)
			if err != nil || !x.Exact || !bytes.Equal(buf.Bytes(), sources[m.Source.Path]) {
				t.Fatalf("crash at write %d: %s exports %d bytes (exact %v, %v), want %d", k, m.Source.Path, buf.Len(), x.Exact, err, len(sources[m.Source.Path]))
			}
			if int(s.Events) != wantEvents[m.Source.Path] {
				t.Fatalf("crash at write %d: %s has %d events, a clean import %d", k, m.Source.Path, s.Events, wantEvents[m.Source.Path])
			}
		}
		for p := range sources {
			if seen[p] != 1 {
				t.Fatalf("crash at write %d: %s has %d sessions with its lines", k, p, seen[p])
			}
		}
	}
	n := vfstest.Sweep(t, rand.New(rand.NewPCG(7, 7)), 2,
		func(fsys *vfs.MemFS) { initCrashStore(fsys); sources = importCrashSources(fsys) },
		func(fsys *vfs.MemFS) error { _, err := importAll(fsys); return err },
		func(k int, states []*vfs.MemFS) {
			for _, s := range states {
				check(k, s)
			}
		})
	t.Logf("swept %d crash points", n)
}

// TestImportClaudeFileHistory: the file backups Claude Code keeps beside a
// transcript become captures, so `session diff` shows what the imported
// session changed, and export still writes only the transcript.
func TestImportClaudeFileHistory(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	claude := filepath.Join(dir, "home", ".claude")
	transcript := filepath.Join(claude, "projects", "-ws", "s1.jsonl")
	backups := filepath.Join(claude, "file-history", "s1")
	for p, data := range map[string]string{
		filepath.Join(ws, "a.txt"):      "one\nTWO\nthree\n", // edited by the agent
		filepath.Join(ws, "new.txt"):    "created\n",         // created by the agent
		filepath.Join(backups, "h1@v1"): "one\ntwo\nthree\n", // a.txt before the edit
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lines := claudeLines("s1", 1)
	for i := range lines {
		lines[i] = strings.ReplaceAll(lines[i], `"cwd":"/home/u/proj"`, fmt.Sprintf(`"cwd":%q`, ws))
	}
	snap := `{"type":"file-history-snapshot","messageId":"m2","snapshot":{"messageId":"m2","trackedFileBackups":{"a.txt":{"backupFileName":"h1@v1","version":1,"backupTime":"2026-02-10T21:01:09.000Z"},"new.txt":{"backupFileName":null,"version":1,"backupTime":"2026-02-10T21:01:09.000Z"}},"timestamp":"2026-02-10T21:01:09.000Z"},"isSnapshotUpdate":true}`
	lines = append(lines, snap, snap) // repeated, as Claude Code does: captured once
	data := writeSource(t, vfs.OS, transcript, lines, "")

	r := diskRook(t, filepath.Join(dir, "store"))
	rep := mustImport(t, r, FormatClaudeCode, filepath.Join(claude, "projects"))
	id := *rep.Files[0].Session
	var out bytes.Buffer
	d, err := r.Diff(id, &out, false)
	if err != nil {
		t.Fatal(err)
	}
	if d.Captures != 1 || len(d.Files) != 2 || d.Files[0].Path != "a.txt" || d.Files[0].Status != "modified" || d.Files[1].Path != "new.txt" || d.Files[1].Status != "added" {
		t.Fatalf("diff %+v\n%s", d, out.String())
	}
	if !strings.Contains(out.String(), "-two\n+TWO\n") {
		t.Fatalf("diff body:\n%s", out.String())
	}
	// The capture is appended in one group with the line naming its
	// backups: no crash keeps the one without the other (a grown file's
	// lines already in are not captured again).
	evs, err := r.Log.Read(id, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	cps := 0
	for i, ev := range evs {
		if ev.Kind == eventlog.KindCheckpoint {
			cps++
			if i == 0 || !evs[i-1].More || !strings.HasPrefix(evs[i-1].Label, "file-history-snapshot") {
				t.Fatalf("the capture #%d is not in one group with its snapshot line: %+v", ev.Seq, evs[max(i-1, 0)])
			}
		}
	}
	if cps != 1 {
		t.Fatalf("%d captures", cps)
	}
	var buf bytes.Buffer
	x, err := r.ExportSource(id, &buf)
	if err != nil || !bytes.Equal(buf.Bytes(), data) || x.Skipped != 0 {
		t.Fatalf("export: %+v %v", x, err)
	}
	// The workspace gone (a worktree deleted, a transcript from another
	// machine): not every file removed, but an error saying so.
	if err := os.RemoveAll(ws); err != nil {
		t.Fatal(err)
	}
	if d, err := r.Diff(id, nil, false); err == nil || !strings.Contains(err.Error(), "workspace "+ws+" is not on this disk") {
		t.Fatalf("diff without the workspace: %+v %v", d, err)
	}
}

// TestImportKeepsTokenNotesApart: notes that recorded tokens are not merged
// with the notes around them: the newest one's tokens are the context the
// model reported (session context), which a sum over turns is not.
func TestImportKeepsTokenNotesApart(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	src := "/home/u/.codex/sessions/2026/01/02/rollout-2026-01-02T03-04-05-019b7d3a-5e1f-7c42-9a3b-2f6e8d1c0a48.jsonl"
	usage := func(in, out int) string {
		return fmt.Sprintf(`{"timestamp":"2026-01-02T03:04:%02d.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":%d},"last_token_usage":{"input_tokens":%d,"output_tokens":%d}}}}`, in%60, in, in, out)
	}
	lines := []string{
		`{"timestamp":"2026-01-02T03:04:05.000Z","type":"session_meta","payload":{"id":"019b7d3a-5e1f-7c42-9a3b-2f6e8d1c0a48","cwd":"/w"}}`,
		`{"timestamp":"2026-01-02T03:04:06.000Z","type":"event_msg","payload":{"type":"task_started"}}`,
		usage(10000, 100),
		usage(20000, 200),
		`{"timestamp":"2026-01-02T03:04:07.000Z","type":"event_msg","payload":{"type":"task_complete"}}`,
	}
	writeSource(t, fsys, src, lines, "")
	rep := mustImport(t, r, FormatCodex, "/home/u/.codex/sessions")
	id := *rep.Files[0].Session
	got := eventsAs(t, r, id, func(ev eventlog.Event) string {
		return fmt.Sprintf("%s/%d/%d", ev.Label, ev.TokensIn, ev.TokensOut)
	})
	want := "session_meta +1/0/0 event_msg:token_count/10000/100 event_msg:token_count/20000/200 event_msg:task_complete/0/0"
	if got != want {
		t.Fatalf("events %s\nwant   %s", got, want)
	}
	ctx, err := r.Context(id, DefaultContextWindow)
	if err != nil || ctx.Reported == nil || ctx.Reported.Seq != 2 || ctx.Reported.Tokens != 20200 {
		t.Fatalf("context %+v %v", ctx.Reported, err)
	}
}

// TestFindMatchesImportedTextAsWritten: a query with a quote or a newline
// finds an imported line's text, which its JSON writes escaped, whether
// the text stays in the line or is cut out and put back.
func TestFindMatchesImportedTextAsWritten(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	long := strings.Repeat("filler line\n", 40) + `the end says "done"`
	q := func(s string) string { return string(appendJSONString(nil, []byte(s))) }
	lines := []string{
		`{"type":"user","sessionId":"s1","cwd":"/w","message":{"role":"user","content":` + q("she said \"hi\"\nthen left") + `},"uuid":"u1","timestamp":"2026-02-10T21:00:00.000Z"}`,
		`{"type":"user","sessionId":"s1","cwd":"/w","message":{"role":"user","content":` + q(long) + `},"uuid":"u2","timestamp":"2026-02-10T21:00:01.000Z"}`,
	}
	writeSource(t, fsys, "/home/u/.claude/projects/-w/s1.jsonl", lines, "")
	rep := mustImport(t, r, FormatClaudeCode, "/home/u/.claude/projects")
	id := *rep.Files[0].Session
	for query, want := range map[string]uint64{`Said "HI"` + "\nthen": 0, `says "done"`: 1, `filler line` + "\n" + `the end`: 1} {
		res, err := r.Find(id, FindQuery{Query: query})
		if err != nil || len(res.Hits) != 1 || res.Hits[0].Seq != want {
			t.Errorf("find %q: %+v %v", query, res.Hits, err)
		}
	}
	// A session of rook's own holds text as it is: only that matches.
	own, _ := r.NewSession("own", "", nil)
	r.Append(own.ID, Entry{Kind: eventlog.KindUser, Body: []byte(`she said \"hi\"`)})
	if res, _ := r.Find(own.ID, FindQuery{Query: `said "hi"`}); len(res.Hits) != 0 {
		t.Errorf("an escaped text of rook's own matched: %+v", res.Hits)
	}
}

// TestFindMatchesTextEscapedByOtherWriters: a transcript rewritten by a
// tool whose JSON escapes more (Python's json.dumps: every character past
// ASCII as \uXXXX, a pair past U+FFFF; Go's encoding/json: <, > and &)
// reads decoded in show and search; find found none of it.
func TestFindMatchesTextEscapedByOtherWriters(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	line := func(n int, content string) string {
		return fmt.Sprintf(`{"type":"user","sessionId":"s1","cwd":"/w","message":{"role":"user","content":"%s"},"uuid":"u%d","timestamp":"2026-02-10T21:00:0%d.000Z"}`, content, n, n)
	}
	lines := []string{
		line(0, `le caf\u00e9 est pr\u00eat`),
		line(1, `if a \u003c b \u0026\u0026 c`),
		line(2, `smile \ud83d\ude00 please`),
		line(3, `\"d\u00e9j\u00e0 vu\" \u003cok\u003e`),
	}
	writeSource(t, fsys, "/home/u/.claude/projects/-w/s1.jsonl", lines, "")
	id := *mustImport(t, r, FormatClaudeCode, "/home/u/.claude/projects").Files[0].Session
	for query, want := range map[string]uint64{"café est": 0, "a < b && c": 1, "smile 😀": 2, `"déjà vu" <ok>`: 3, "prêt": 0, "CAFÉ EST": 0, "Café": 0,
		"PRÊT": 0, `"Déjà VU" <OK>`: 3} {
		res, err := r.Find(id, FindQuery{Query: query})
		if err != nil || len(res.Hits) == 0 || res.Hits[0].Seq != want {
			t.Errorf("find %q: %+v %v", query, res.Hits, err)
		}
	}
}

// TestFindEscapedWordInAnyCase: a transcript a tool rewrote with every
// character past ASCII escaped ("\u00c9l\u00e9phant" for "Éléphant")
// reads "Éléphant" in show and search; `session find` of it, matched
// case-insensitively, found it only typed in the text's own mix of cases:
// the escapes of the query as typed, all lower and all upper were tried,
// and É and é differ in their escapes' hex digits. Each escape is now read
// as its character (newEscapedMatcher), in any case, its hex digits too.
func TestFindEscapedWordInAnyCase(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	path := "/p/-home-u-proj/S.jsonl"
	line := `{"parentUuid":null,"sessionId":"S","cwd":"/home/u/proj","version":"2.1.39","uuid":"e1","timestamp":"2026-02-10T21:05:00.000Z","type":"user","message":{"role":"user","content":"\u00c9l\u00e9phant and \u00dcber-Stra\u00dfe"}}`
	upper := `{"parentUuid":"e1","sessionId":"S","cwd":"/home/u/proj","version":"2.1.39","uuid":"e2","timestamp":"2026-02-10T21:05:01.000Z","type":"user","message":{"role":"user","content":"M\u00DCNCHEN"}}`
	writeSource(t, fsys, path, []string{line, upper}, "")
	id := *fileByPath(t, mustImport(t, r, FormatClaudeCode, path), path).Session
	if err := r.Store.Sync(); err != nil {
		t.Fatal(err)
	}
	// Search reads the text decoded, and finds it in any case.
	if res, err := r.Search("éléphant", SearchOptions{}); err != nil || len(res.Hits) != 1 {
		t.Fatalf("search éléphant: %+v %v", res, err)
	}
	// Find, as typed in the text's own cases, finds it too.
	if res, err := r.Find(id, FindQuery{Query: "Éléphant"}); err != nil || len(res.Hits) != 1 {
		t.Fatalf("find Éléphant: %+v %v", res, err)
	}
	for _, q := range []string{"éléphant", "ÉLÉPHANT", "über-straße", "Über-STRAẞE", "münchen", "München"} {
		res, err := r.Find(id, FindQuery{Query: q})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) != 1 {
			t.Errorf("session find %q: %d hit(s), want 1 (the text is \"Éléphant and Über-Straße\", then \"MÜNCHEN\", stored \\u-escaped; find is case-insensitive)", q, len(res.Hits))
		}
	}
}

// TestFindSnippetsOfImportedText: a hit in an imported line shows the text
// as written, not its JSON: the string the match is in, decoded, after its
// key; the line as stored only when the match is not inside one string
// value. The snippet is of the match the hit names, not an earlier one.
func TestFindSnippetsOfImportedText(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	q := func(s string) string { return string(appendJSONString(nil, []byte(s))) }
	long := "alpha wombat\n" + strings.Repeat("filler ", 600) + "\nsecond wombat"
	lines := []string{
		`{"type":"user","sessionId":"s1","cwd":"/w","message":{"role":"user","content":` + q("run \"mix test\"\nnow") + `},"uuid":"u1","timestamp":"2026-02-10T21:00:00.000Z"}`,
		`{"type":"user","sessionId":"s1","cwd":"/w","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]},"toolUseResult":{"originalFile":` + q("line one\n\"numbat\" two") + `},"uuid":"u2","timestamp":"2026-02-10T21:00:01.000Z"}`,
		`{"type":"user","sessionId":"s1","cwd":"/w","message":{"role":"user","content":` + q(long) + `},"uuid":"u3","timestamp":"2026-02-10T21:00:02.000Z"}`,
		`{"type":"user","sessionId":"s1","cwd":"/w","message":{"role":"user","content":[` + q("in an array: quokka") + `]},"uuid":"u4","timestamp":"2026-02-10T21:00:03.000Z"}`,
	}
	writeSource(t, fsys, "/home/u/.claude/projects/-w/s1.jsonl", lines, "")
	rep := mustImport(t, r, FormatClaudeCode, "/home/u/.claude/projects")
	id := *rep.Files[0].Session
	for _, c := range []struct {
		query, want string
		decoded     bool
	}{
		{`"mix test"`, `content: run "mix test" now`, true},
		{`numbat`, `originalFile: line one "numbat" two`, true}, // stored cut out, put back
		{`quokka`, `in an array: quokka`, true},                 // no key: the text alone
		{`"cwd":"/w"`, `{"type":"user","sessionId":"s1","cwd"`, false},
		{`toolUseResult`, `"toolUseResult":{"originalFile"`, false}, // a key is not text
		{`u1`, `uuid: u1`, true},
	} {
		res, err := r.Find(id, FindQuery{Query: c.query})
		if err != nil || len(res.Hits) == 0 {
			t.Fatalf("find %q: %+v %v", c.query, res.Hits, err)
		}
		h := res.Hits[0]
		// A decoded snippet is the whole text (these are short); the
		// line as stored is cut around the match.
		if h.Decoded != c.decoded || c.decoded && h.Snippet != c.want || !strings.Contains(h.Snippet, c.want) {
			t.Errorf("find %q: decoded %v snippet %q, want %v and %q", c.query, h.Decoded, h.Snippet, c.decoded, c.want)
		}
	}
	// Resumed inside a body, the hit is the match after the resume point,
	// and so is its snippet.
	res, err := r.Find(id, FindQuery{Query: "wombat", From: 2, Offset: 1000})
	if err != nil || len(res.Hits) == 0 || res.Hits[0].Seq != 2 || !res.Hits[0].Decoded ||
		!strings.Contains(res.Hits[0].Snippet, "second wombat") || strings.Contains(res.Hits[0].Snippet, "alpha") {
		t.Errorf("resumed find: %+v %v", res.Hits, err)
	}
}

// TestSearchReadsImportedText: search scores and shows an imported line's
// text (its string values, decoded), not its JSON: a key is no hit, a
// snippet has no escapes, a text's own lines are lines.
func TestSearchReadsImportedText(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	q := func(s string) string { return string(appendJSONString(nil, []byte(s))) }
	lines := []string{
		`{"type":"user","sessionId":"s1","cwd":"/wherever","message":{"role":"user","content":` + q("first line\nthe \"wombat\" burrow\tis deep") + `},"uuid":"u1","timestamp":"2026-02-10T21:00:00.000Z"}`,
		`{"type":"user","sessionId":"s1","cwd":"/wherever","message":{"role":"user","content":` + q(strings.Repeat("long text ", 40)+"\nand a platypus") + `},"uuid":"u2","timestamp":"2026-02-10T21:00:01.000Z"}`,
		`{"type":"assistant","sessionId":"s1","cwd":"/wherever","userType":"external","message":{"id":"msg_1","role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"sigsig"},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"grep -r numbats ."}}],"usage":{"service_tier":"standard","inference_geo":"global"}},"uuid":"u3","timestamp":"2026-02-10T21:00:02.000Z"}`,
		`{"type":"summary","summary":"Koala feeding schedule","leafUuid":"u3"}`,
	}
	writeSource(t, fsys, "/home/u/.claude/projects/-wherever/s1.jsonl", lines, "")
	mustImport(t, r, FormatClaudeCode, "/home/u/.claude/projects")
	res, err := r.Search("wombat burrow", SearchOptions{})
	if err != nil || len(res.Hits) != 1 || res.Hits[0].Snippet != `the "wombat" burrow is deep` {
		t.Fatalf("wombat: %+v %v", res.Hits, err)
	}
	// The second line's string was cut out and put back: the same.
	if res, _ := r.Search("platypus", SearchOptions{}); len(res.Hits) != 1 || res.Hits[0].Snippet != "and a platypus" {
		t.Errorf("platypus: %+v", res.Hits)
	}
	// "sessionId" and "timestamp" are keys of every line, not text.
	if res, _ := r.Search("sessionId timestamp", SearchOptions{}); len(res.Hits) != 0 {
		t.Errorf("keys matched: %+v", res.Hits)
	}
	// Nor are the envelope's values (ids, the user type, the working
	// directory) or signed state: they would match every line. Find,
	// which matches the stored bytes, finds an id.
	for _, query := range []string{"u2", "external", "wherever", "sigsig", "standard", "global"} {
		if res, _ := r.Search(query, SearchOptions{}); len(res.Hits) != 0 {
			t.Errorf("%s matched: %+v", query, res.Hits)
		}
	}
	id := res.Hits[0].Session
	if res, err := r.Find(id, FindQuery{Query: "u2"}); err != nil || len(res.Hits) != 1 || res.Hits[0].Seq != 1 {
		t.Errorf("find u2: %+v %v", res.Hits, err)
	}
	// A tool's arguments are text, and so is a summary line's summary.
	if res, _ := r.Search("grep numbats", SearchOptions{}); len(res.Hits) != 1 || res.Hits[0].Seq != 2 {
		t.Errorf("a tool's command: %+v", res.Hits)
	}
	if res, _ := r.Search("koala", SearchOptions{}); len(res.Hits) != 1 || res.Hits[0].Seq != 3 {
		t.Errorf("a summary: %+v", res.Hits)
	}
	// Codex's settings are not text either, its instructions are.
	turn := `{"timestamp":"t","type":"turn_context","payload":{"cwd":"/w","approval_policy":"on-request","model":"m","effort":"high","summary":"auto","user_instructions":"be brief"}}`
	if got := string(textOfImported([]byte(turn))); got != "be brief\n" {
		t.Errorf("turn_context: %q", got)
	}
}

// TestDecodedSnippetWindow: a find snippet decodes a window around its
// match, not the whole string, even where the string is all escapes (a
// bad escape past the window does not spoil it).
func TestDecodedSnippetWindow(t *testing.T) {
	m := newFoldMatcher("q")
	body := []byte(`{"a":"xq` + strings.Repeat(`\n`, 100_000) + `\q"}`)
	got, ok := decodedSnippet(body, bytes.IndexByte(body, 'q'), m, nil)
	if !ok || !strings.HasPrefix(got, "a: xq") {
		t.Errorf("all escapes after the match: %q %v", got, ok)
	}
	// A match inside a character (a binary body) has no snippet of its own.
	if _, ok := decodedSnippet([]byte("\"0\xdf\x99\x99\""), 3, newFoldMatcher("\xfc"), nil); ok {
		t.Error("a match inside a character was decoded")
	}
}

// TestImportFollowsAMoveAfterARewrite: a file rewritten at its path is a
// new session, the old one kept under the same path; when the new one
// moves, and moves again, and comes back (Codex's .jsonl -> .zst ->
// .jsonl), it is still the new one: not the old one the path names again,
// nor a session of its own because two gone paths have its name.
func TestImportFollowsAMoveAfterARewrite(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	a, b, c := "/p/A/x.jsonl", "/p/B/x.jsonl", "/p/C/x.jsonl"
	writeSource(t, fsys, a, claudeLines("x", 1), "")
	old := *fileByPath(t, mustImport(t, r, FormatClaudeCode, "/p"), a).Session
	data := writeSource(t, fsys, a, claudeLines("x", 2), "") // rewritten
	rw := fileByPath(t, mustImport(t, r, FormatClaudeCode, "/p"), a)
	if rw.Status != ImportRewritten || *rw.Session == old {
		t.Fatalf("rewritten: %+v", rw)
	}
	id := *rw.Session
	for _, step := range []struct{ from, to string }{{a, b}, {b, c}, {c, a}} {
		writeSource(t, fsys, step.to, claudeLines("x", 2), "")
		if err := fsys.Remove(step.from); err != nil {
			t.Fatal(err)
		}
		f := fileByPath(t, mustImport(t, r, FormatClaudeCode, "/p"), step.to)
		if f.Status != ImportUnchanged || *f.Session != id || f.MovedFrom != step.from {
			t.Fatalf("%s -> %s: %+v", step.from, step.to, f)
		}
	}
	if ids, err := r.Log.IDs(); err != nil || len(ids) != 2 {
		t.Fatalf("%d sessions for two transcripts %v", len(ids), err)
	}
	mustExport(t, r, id, data)
}

// TestImportFollowsLinksOnce: links in a tree are followed, and whatever
// they reach is walked once, however many ways it is reached (a loop to
// the top, a directory outside linking back in): each transcript imported
// once, a link to nothing reported once.
func TestImportFollowsLinksOnce(t *testing.T) {
	tmp := t.TempDir()
	r := diskRook(t, filepath.Join(tmp, "home"))
	top := filepath.Join(tmp, "projects")
	outside := filepath.Join(tmp, "elsewhere")
	writeSource(t, vfs.OS, filepath.Join(top, "p1", "s1.jsonl"), claudeLines("s1", 1), "")
	writeSource(t, vfs.OS, filepath.Join(outside, "s2.jsonl"), claudeLines("s2", 1), "")
	for link, target := range map[string]string{
		filepath.Join(top, "p1", "loop"):           top,
		filepath.Join(top, "out"):                  outside,
		filepath.Join(top, "p1", "again.jsonl"):    filepath.Join(outside, "s2.jsonl"),
		filepath.Join(outside, "back"):             filepath.Join(top, "p1"),
		filepath.Join(top, "p1", "dangling.jsonl"): "nowhere",
		filepath.Join(tmp, "toplink"):              top,
	} {
		if err := os.Symlink(target, link); err != nil {
			t.Skip("no symbolic links here:", err)
		}
	}
	rep, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{filepath.Join(tmp, "toplink")}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range rep.Files {
		got = append(got, strings.TrimPrefix(f.Path, tmp)+" "+f.Status)
	}
	want := "/projects/p1/dangling.jsonl failed|/elsewhere/s2.jsonl new|/projects/p1/s1.jsonl new"
	if strings.Join(got, "|") != want || rep.Failed != 1 || rep.Sessions != 2 {
		t.Fatalf("files %s\nwant  %s\n(%d failed, %d new)", strings.Join(got, "|"), want, rep.Failed, rep.Sessions)
	}
}

// TestImportFollowsAMoveBackOntoANewerPath: a transcript moved away, a new
// one made at its first path, then the first moved back over it: the first
// is its own session again, import after import, not the newer one the
// path names (rewritten) nor a copy.
func TestImportFollowsAMoveBackOntoANewerPath(t *testing.T) {
	for _, chunk := range []int{0, 50} {
		fsys := vfs.NewMem()
		r := testRook(t, fsys)
		imp := func(want string, wantID *eventlog.ID, path string) eventlog.ID {
			t.Helper()
			rep, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{"/p"}, ChunkBytes: chunk})
			if err != nil {
				t.Fatal(err)
			}
			f := fileByPath(t, rep, path)
			if f.Status != want || wantID != nil && *f.Session != *wantID {
				t.Fatalf("chunks of %d: %s: %+v", chunk, path, f)
			}
			return *f.Session
		}
		a, b := "/p/A/x.jsonl", "/p/B/x.jsonl"
		x := writeSource(t, fsys, a, claudeLines("x", 1), "")
		first := imp(ImportNew, nil, a)
		writeSourceFile(t, fsys, b, x)
		if err := fsys.Remove(a); err != nil {
			t.Fatal(err)
		}
		imp(ImportUnchanged, &first, b)
		writeSource(t, fsys, a, claudeLines("x", 2), "") // another transcript of that name at A
		imp(ImportNew, nil, a)
		writeSourceFile(t, fsys, a, x) // the first moved back over it
		if err := fsys.Remove(b); err != nil {
			t.Fatal(err)
		}
		imp(ImportUnchanged, &first, a)
		imp(ImportUnchanged, &first, a)
		if ids, err := r.Log.IDs(); err != nil || len(ids) != 2 {
			t.Fatalf("chunks of %d: %d sessions for two transcripts %v", chunk, len(ids), err)
		}
		mustExport(t, r, first, x)
	}
}

// TestImportMovedPrefersTheLongestSession: of two gone sessions of a
// file's name whose bytes it begins with, the file is the one that holds
// more of it (fewer lines to take in again), not merely the newer.
func TestImportMovedPrefersTheLongestSession(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	all := append(append(claudeLines("x", 1), claudeLines("x", 2)...), claudeLines("x", 3)...)
	writeSource(t, fsys, "/p/1/x.jsonl", all[:16], "")
	long := *fileByPath(t, mustImport(t, r, FormatClaudeCode, "/p"), "/p/1/x.jsonl").Session
	writeSource(t, fsys, "/p/2/x.jsonl", all[:8], "") // a newer copy of less of it
	if f := fileByPath(t, mustImport(t, r, FormatClaudeCode, "/p"), "/p/2/x.jsonl"); f.Status != ImportNew {
		t.Fatalf("a copy beside: %+v", f)
	}
	for _, p := range []string{"/p/1/x.jsonl", "/p/2/x.jsonl"} {
		if err := fsys.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	data := writeSource(t, fsys, "/p/3/x.jsonl", all, "")
	f := fileByPath(t, mustImport(t, r, FormatClaudeCode, "/p"), "/p/3/x.jsonl")
	if f.Status != ImportGrown || *f.Session != long || f.Lines != len(all)-16 {
		t.Fatalf("moved: %+v", f)
	}
	mustExport(t, r, long, data)
}

// TestImportALastLineThatParsedIsNotTakenAgain: a last line read whole
// but before its newline (the agent had not written it yet) parsed and is
// an event; when the file grows, only the rest of its line (the newline)
// follows it, as a note: the line is not taken in twice, nor its tokens.
func TestImportALastLineThatParsedIsNotTakenAgain(t *testing.T) {
	for _, chunk := range []int{0, 50} {
		fsys := vfs.NewMem()
		r := testRook(t, fsys)
		src := "/p/s.jsonl"
		two := claudeLines("s", 2)
		writeSource(t, fsys, src, append(claudeLines("s", 1), two[0]), two[1]) // msg_2's first line, no newline
		rep, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{src}, ChunkBytes: chunk})
		if err != nil {
			t.Fatal(err)
		}
		id := *fileByPath(t, rep, src).Session
		data := writeSource(t, fsys, src, append(claudeLines("s", 1), two...), "")
		if _, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{src}, ChunkBytes: chunk}); err != nil {
			t.Fatal(err)
		}
		mustExport(t, r, id, data)
		s, err := r.Log.Summary(id)
		if err != nil || s.TokensIn != 2*1103 || s.TokensOut != 2*42 {
			t.Fatalf("chunks of %d: tokens %d in, %d out (want %d, %d) %v", chunk, s.TokensIn, s.TokensOut, 2*1103, 2*42, err)
		}
		got := eventsAs(t, r, id, func(ev eventlog.Event) string { return ev.Kind.String() + "/" + ev.Label })
		if strings.Count(got, "reasoning/") != 2 || !strings.Contains(got, "reasoning/claude-opus-4-6 note/claude-code:continued assistant/") {
			t.Fatalf("chunks of %d: events %s", chunk, got)
		}
	}
}

// TestExportRefusesLinesThatDoNotFollow: a line stored again whole (after
// an import found it cut short) must begin with the bytes written of it;
// one that does not, or that starts before the lines written, fails the
// export rather than writing a file that is not the source.
func TestExportRefusesLinesThatDoNotFollow(t *testing.T) {
	src := "/p/s.jsonl"
	data := writeSourceBytes(claudeLines("s", 1), `{"type":"user","mess`)
	cutAt := int64(bytes.LastIndexByte(data, '\n') + 1)
	for _, c := range []struct {
		what string
		at   int64
		line string
	}{
		{"another line where the cut one began", cutAt, `{"type":"user","other":1}` + "\n"},
		{"a line before the cut one", cutAt - 5, `{"type":"user","message":{}}` + "\n"},
		{"shorter than what was written of it", cutAt, `{"type":"u`},
	} {
		fsys := vfs.NewMem()
		r := testRook(t, fsys)
		writeSource(t, fsys, src, claudeLines("s", 1), `{"type":"user","mess`)
		rep := mustImport(t, r, FormatClaudeCode, src)
		id := *fileByPath(t, rep, src).Session
		mustExport(t, r, id, data)
		sl := sourceLine{Offset: c.at, Rest: []byte(c.line)}
		put, err := r.Store.Put(cas.KindSource, sl.encode())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Log.Append(id, eventlog.Event{Kind: eventlog.KindUser, Body: put.ID}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.ExportSource(id, io.Discard); err == nil || !strings.Contains(err.Error(), "the session's lines are not whole") {
			t.Fatalf("%s: export %v", c.what, err)
		}
	}
}

// TestImportWaitsForAFirstLine: a new transcript whose only line is cut
// short (its agent is writing it) is not a failure: nothing to import yet,
// and the next import, once the line is whole, takes it in.
func TestImportWaitsForAFirstLine(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	src := "/p/s.jsonl"
	lines := claudeLines("s", 1)
	if err := fsys.MkdirAll("/p", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := fsys.WriteFileAtomic(src, []byte(lines[0][:40]), 0o600); err != nil {
		t.Fatal(err)
	}
	rep := mustImport(t, r, FormatClaudeCode, src)
	if f := fileByPath(t, rep, src); rep.Failed != 0 || f.Status != ImportUnchanged || f.Session != nil || len(rep.Problems) != 0 {
		t.Fatalf("a first line being written: %+v", rep)
	}
	data := writeSource(t, fsys, src, lines, "")
	rep = mustImport(t, r, FormatClaudeCode, src)
	f := fileByPath(t, rep, src)
	if f.Status != ImportNew {
		t.Fatalf("once written: %+v", f)
	}
	mustExport(t, r, *f.Session, data)
	// So after another file's problems filled the report.
	var junk []string
	for range MaxImportProblems {
		junk = append(junk, "garbage")
	}
	writeSource(t, fsys, "/q/a.jsonl", append(claudeLines("a", 1), junk...), "")
	writeSourceFile(t, fsys, "/q/b.jsonl", []byte(claudeLines("b", 1)[0][:40]))
	rep = mustImport(t, r, FormatClaudeCode, "/q")
	if f := fileByPath(t, rep, "/q/b.jsonl"); rep.Failed != 0 || f.Status != ImportUnchanged || len(rep.Problems) != MaxImportProblems || rep.ProblemsLeftOut != 0 {
		t.Fatalf("a first line being written, after %d problems: %+v (%d problems)", MaxImportProblems, f, len(rep.Problems))
	}
	// A line of JSON that is no entry is still not a transcript.
	if err := fsys.WriteFileAtomic("/p/junk.jsonl", []byte(`{"no":"type"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if rep := mustImport(t, r, FormatClaudeCode, "/p/junk.jsonl"); rep.Failed != 1 {
		t.Fatalf("junk: %+v", rep)
	}
}

// TestImportKnowsAFileWhoseNameIsNotUTF8: a file name of Latin-1 bytes is
// still its session on the next import (unchanged, then grown), not a new
// session each time: .meta keeps the path's bytes beside its UTF-8 form.
func TestImportKnowsAFileWhoseNameIsNotUTF8(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	path := "/src/caf\xe9.jsonl"
	writeSource(t, fsys, path, claudeLines("s1", 1), "")
	for i, want := range []string{ImportNew, ImportUnchanged, ImportGrown} {
		if i == 2 {
			writeSource(t, fsys, path, append(claudeLines("s1", 1), claudeLines("s1", 2)...), "")
		}
		rep, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{path}})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Files) != 1 || rep.Files[0].Status != want {
			t.Fatalf("import %d: %+v, want %s", i, rep.Files, want)
		}
	}
	sums, err := r.Log.Sessions()
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) != 1 || sums[0].Source == nil || sums[0].Source.Path != path {
		t.Fatalf("sessions %+v", sums)
	}
}

// TestExportOfASessionAheadOfItsMetadata: the metadata records what the
// last finished import took in; an import running now (or cut short)
// appends lines before it records them. Export writes every line the
// session holds and says so: the first bytes are those recorded, exactly.
// Lines that do not follow what was recorded are not "ahead".
func TestExportOfASessionAheadOfItsMetadata(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	first := writeSource(t, fsys, "/p/s.jsonl", claudeLines("s", 1), "")
	rep := mustImport(t, r, FormatClaudeCode, "/p/s.jsonl")
	id := *rep.Files[0].Session
	grown := writeSource(t, fsys, "/p/s.jsonl", append(claudeLines("s", 1), claudeLines("s", 2)...), "")
	mustImport(t, r, FormatClaudeCode, "/p/s.jsonl")
	mustExport(t, r, id, grown)

	setRecorded := func(size int64, sha string) {
		t.Helper()
		m, err := r.Log.ReadMeta(id)
		if err != nil {
			t.Fatal(err)
		}
		src := *m.Source
		src.Size, src.SHA256 = size, sha
		m.Source = &src
		if err := r.Log.UpdateMeta(m); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		what        string
		size        int64
		sha         string
		exact, head bool
	}{
		{"recorded the first import", int64(len(first)), fmt.Sprintf("%x", sha256.Sum256(first)), false, true},
		{"recorded nothing yet (a first import cut short)", 0, fmt.Sprintf("%x", sha256.Sum256(nil)), false, true},
		{"recorded other bytes", int64(len(first)), fmt.Sprintf("%x", sha256.Sum256([]byte("other"))), false, false},
		{"recorded more than it holds", int64(len(grown) + 1), fmt.Sprintf("%x", sha256.Sum256(grown)), false, false},
	} {
		setRecorded(c.size, c.sha)
		var buf bytes.Buffer
		x, err := r.ExportSource(id, &buf)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), grown) || x.Exact != c.exact || x.Ahead != c.head || x.Recorded != c.size {
			t.Errorf("%s: exact %v ahead %v recorded %d (%d bytes written)", c.what, x.Exact, x.Ahead, x.Recorded, buf.Len())
		}
	}
}

// `last` is the session of the workspace active last, by its events' own
// times: after an import of older transcripts it is not the file imported
// last, and a session made since, with no event yet, is later than them.
func TestLastIsTheSessionActiveLast(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	// b.jsonl is imported after a.jsonl (a newer id) but spoke earlier.
	writeSource(t, fsys, "/p/a.jsonl", claudeLines("later", 9), "")
	writeSource(t, fsys, "/p/b.jsonl", claudeLines("earlier", 5), "")
	rep := mustImport(t, r, FormatClaudeCode, "/p")
	later, earlier := *fileByPath(t, rep, "/p/a.jsonl").Session, *fileByPath(t, rep, "/p/b.jsonl").Session
	if earlier.String() < later.String() {
		t.Fatalf("ids %s < %s: the test needs the earlier talk imported second", earlier, later)
	}
	last := func() eventlog.ID {
		t.Helper()
		id, err := r.ResolveSession("last", "/home/u/proj")
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	if got := last(); got != later {
		t.Fatalf("last is %s, want %s, whose events are the newest", got, later)
	}
	m, err := r.NewSession("new", "/home/u/proj", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := last(); got != m.ID {
		t.Fatalf("last is %s, want the session made now, %s", got, m.ID)
	}
	if _, err := r.ResolveSession("last", "/elsewhere"); !errors.Is(err, ErrNoLast) {
		t.Fatalf("last in another workspace: %v", err)
	}
}

// A Claude Code transcript saved by an editor that put a byte order mark
// before its first line: the line is still the session's first prompt
// (its id, workspace and title), not a line that did not parse, and
// export writes the mark back.
func TestClaudeTranscriptWithAByteOrderMark(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	src := "/home/u/.claude/projects/-home-u-proj/s1.jsonl"
	lines := claudeLines("s1", 1)
	lines[0] = "\ufeff" + lines[0]
	data := writeSource(t, fsys, src, lines, "")
	rep := mustImport(t, r, FormatClaudeCode, src)
	f := fileByPath(t, rep, src)
	if f.Unparsed != 0 || len(rep.Problems) != 0 {
		t.Errorf("unparsed %d, problems %+v", f.Unparsed, rep.Problems)
	}
	m, err := r.Log.ReadMeta(*f.Session)
	if err != nil {
		t.Fatal(err)
	}
	if m.Source.ID != "s1" || m.Workspace != "/home/u/proj" || m.Title != "fix the server, turn 1" {
		t.Errorf("source id %q, workspace %q, title %q", m.Source.ID, m.Workspace, m.Title)
	}
	evs, err := r.Log.Read(m.ID, 0, 1)
	if err != nil || len(evs) != 1 || evs[0].Kind != eventlog.KindUser {
		t.Errorf("first event %+v %v", evs, err)
	}
	first := uint64(0)
	if page, err := r.History(m.ID, HistoryQuery{From: &first, Limit: 1}); err != nil || page.Events[0].Preview != "fix the server, turn 1" {
		t.Errorf("preview: %+v %v", page.Events, err)
	}
	mustExport(t, r, *f.Session, data)
}

// A transcript a crash left NUL bytes in: the file's length was written
// but not the data before it (a delayed allocation lost), and the agent,
// started again, appended its next entry right after the NULs. That line
// is still the entry it is (here the next turn's prompt), not a line that
// did not parse, its view shows the entry, and export writes the NULs
// back.
func TestClaudeTranscriptEntryAfterCrashNULs(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	src := "/home/u/.claude/projects/-home-u-proj/s1.jsonl"
	lines := append(claudeLines("s1", 1), claudeLines("s1", 2)...)
	second := len(claudeLines("s1", 1))
	lines[second] = strings.Repeat("\x00", 4096) + lines[second]
	data := writeSource(t, fsys, src, lines, "")
	rep := mustImport(t, r, FormatClaudeCode, src)
	f := fileByPath(t, rep, src)
	if f.Unparsed != 0 || len(rep.Problems) != 0 {
		t.Errorf("unparsed %d, problems %+v", f.Unparsed, rep.Problems)
	}
	page, err := r.History(*f.Session, HistoryQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ev := range page.Events {
		if ev.Preview == "fix the server, turn 2" {
			found = ev.Kind == eventlog.KindUser
		}
		if strings.Contains(ev.Preview, "\uFFFD") {
			t.Errorf("event %d shows the NULs: %q", ev.Seq, ev.Preview)
		}
	}
	if !found {
		t.Errorf("turn 2's prompt is no user event: %+v", page.Events)
	}
	// search reads the entry's text, as in any other line.
	res, err := r.Search("server turn 2", SearchOptions{})
	if err != nil || len(res.Hits) == 0 || res.Hits[0].Snippet != "fix the server, turn 2" {
		t.Errorf("search: %+v %v", res.Hits, err)
	}
	mustExport(t, r, *f.Session, data)
}

// A hard link to a transcript under another name imports as a session of
// its own, as a copy does (README), both exported byte for byte; the
// lines the two share are stored once (no object of the second's is new:
// 0 bytes here, against 4.3 KB for the first); importing again adds
// nothing.
func TestImportHardLinkIsASessionOfItsOwn(t *testing.T) {
	dir := t.TempDir()
	r := diskRook(t, filepath.Join(dir, "store"))
	var lines []string
	for turn := 1; turn <= 40; turn++ {
		lines = append(lines, claudeLines("x", turn)...)
	}
	a := filepath.Join(dir, "A", "x.jsonl")
	b := filepath.Join(dir, "B", "y.jsonl")
	data := writeSource(t, vfs.OS, a, lines, "")
	alone := mustImport(t, r, FormatClaudeCode, a)
	own := alone.StoredAfter - alone.StoredBefore
	if err := os.MkdirAll(filepath.Dir(b), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(a, b); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	rep := mustImport(t, r, FormatClaudeCode, filepath.Join(dir, "A"), filepath.Join(dir, "B"))
	fa, fb := fileByPath(t, rep, a), fileByPath(t, rep, b)
	if fa.Status != ImportUnchanged || fb.Status != ImportNew || *fa.Session == *fb.Session {
		t.Fatalf("the link: %+v, its original: %+v", fb, fa)
	}
	if added := rep.StoredAfter - rep.StoredBefore; added*4 > own {
		t.Fatalf("the link added %d bytes to the store; its original took %d", added, own)
	}
	mustExport(t, r, *fa.Session, data)
	mustExport(t, r, *fb.Session, data)
	again := mustImport(t, r, FormatClaudeCode, filepath.Join(dir, "A"), filepath.Join(dir, "B"))
	if again.StoredAfter != again.StoredBefore || fileByPath(t, again, a).Status != ImportUnchanged || fileByPath(t, again, b).Status != ImportUnchanged {
		t.Fatalf("imported again: %+v", again.Files)
	}
}

// TestImportTakesATimeJSONCannotHoldAsNone: "9999-12-31T23:59:59-01:00"
// is valid RFC 3339, but in UTC it is in the year 10000, which JSON's time
// format cannot hold: stored as an event's time, it had every --json
// listing of the session fail to encode. Each format's line with such a
// time maps as one with no time does (zero: the time of the line before);
// the years 0-9999 still map, in the time zone they were written in.
func TestImportTakesATimeJSONCannotHoldAsNone(t *testing.T) {
	claude := func(ts string) string {
		return `{"type":"user","sessionId":"s","cwd":"/w","message":{"role":"user","content":"hi"},"uuid":"u1","timestamp":"` + ts + `"}`
	}
	codex := func(ts string) string {
		return `{"timestamp":"` + ts + `","type":"event_msg","payload":{"type":"agent_reasoning","text":"hm"}}`
	}
	for _, c := range []struct {
		format string
		line   func(string) string
	}{{FormatClaudeCode, claude}, {FormatCodex, codex}} {
		for ts, want := range map[string]time.Time{
			"9999-12-31T23:59:59-01:00": {},
			"0000-01-01T00:30:00+01:00": {},
			"9999-12-31T23:59:59Z":      time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
			"2026-02-10T22:00:00+01:00": time.Date(2026, 2, 10, 21, 0, 0, 0, time.UTC),
		} {
			m := newMapper(c.format, "/src/p/s.jsonl").mapLine([]byte(c.line(ts)))
			if m.Unparsed != "" || !m.Time.Equal(want) {
				t.Errorf("%s, a line at %s: time %v (unparsed %q); want %v", c.format, ts, m.Time, m.Unparsed, want)
			}
		}
	}
}
