package agent

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/fuzzseed"
	"github.com/rookhq/rook/internal/vfs"
)

// The Codex fixtures are hand-made rollouts: a main session that holds
// every item type the mapper tells apart, and a subagent it spawned.
const (
	codexMainID    = "019b7d3a-5e1f-7c42-9a3b-2f6e8d1c0a47"
	codexForkID    = "019b7c11-0d2e-7a55-8b64-3c9f1e2d4b60"
	codexSubID     = "019b7d4e-2b3c-7d4e-8f5a-6b7c8d9e0f1a"
	codexMainFile  = "testdata/codex/rollout-2026-01-02T03-04-05-" + codexMainID + ".jsonl"
	codexSubFile   = "testdata/codex/rollout-2026-01-02T03-20-00-" + codexSubID + ".jsonl"
	codexMainModel = "gpt-5.2-codex"
)

// codexLines reads a fixture's lines, without their newlines.
func codexLines(t testing.TB, path string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	return lines
}

// codexWant is what one line must map to.
type codexWant struct {
	kind     eventlog.Kind
	label    string
	in, out  uint64
	time     string // RFC 3339; "" for none
	unparsed string
	unknown  string // the entry type rook does not know
}

func codexNote(label, at string) codexWant {
	return codexWant{kind: eventlog.KindNote, label: label, time: at}
}

func TestCodexMapFixture(t *testing.T) {
	const day = "2026-01-02T"
	want := []codexWant{
		1:  codexNote("session_meta", day+"03:04:05.123Z"),
		2:  codexNote("developer", day+"03:04:05.130Z"),
		3:  codexNote(codexContextLabel, day+"03:04:05.131Z"), // AGENTS.md: Codex wrote it
		4:  codexNote(codexContextLabel, day+"03:04:05.132Z"), // environment
		5:  codexNote("turn_context", day+"03:04:09.500Z"),
		6:  {kind: eventlog.KindUser, time: day + "03:04:09.512Z"}, // the prompt
		7:  codexNote("event_msg:user_message", day+"03:04:09.513Z"),
		8:  codexNote("event_msg:task_started", day+"03:04:09.520Z"),
		9:  codexNote("event_msg:token_count", day+"03:04:10.001Z"), // info: null
		10: codexNote("event_msg:agent_reasoning", day+"03:04:14.250Z"),
		11: {kind: eventlog.KindReasoning, label: codexMainModel, time: day + "03:04:14.251Z"},
		12: {kind: eventlog.KindToolCall, label: "shell_command", time: day + "03:04:14.300Z"},
		13: {kind: eventlog.KindNote, label: "event_msg:token_count", in: 12840, out: 412, time: day + "03:04:14.310Z"},
		14: {kind: eventlog.KindToolResult, label: "shell_command", time: day + "03:04:16.700Z"},
		// The same usage again (only the rate limits moved): counted once.
		15: codexNote("event_msg:token_count", day+"03:04:16.701Z"),
		16: {kind: eventlog.KindToolCall, label: "apply_patch", time: day + "03:04:20.000Z"},
		17: codexNote("event_msg:patch_apply_end", day+"03:04:20.150Z"),
		18: {kind: eventlog.KindToolResult, label: "apply_patch", time: day + "03:04:20.151Z"},
		19: {kind: eventlog.KindToolCall, label: "shell", time: day + "03:04:21.000Z"},
		20: {kind: eventlog.KindToolResult, label: "shell", time: day + "03:04:21.400Z"},
		21: {kind: eventlog.KindToolCall, label: "web_search", time: day + "03:04:22.000Z"},
		22: {kind: eventlog.KindToolCall, label: "tool_search", time: day + "03:04:23.000Z"},
		23: {kind: eventlog.KindToolResult, label: "tool_search", time: day + "03:04:23.100Z"},
		24: {kind: eventlog.KindToolResult, label: "", time: day + "03:04:24.000Z"}, // no such call
		25: codexNote("event_msg:agent_message", day+"03:04:30.500Z"),
		26: {kind: eventlog.KindAssistant, label: codexMainModel, time: day + "03:04:30.501Z"},
		27: {kind: eventlog.KindNote, label: "event_msg:token_count", in: 14100, out: 233, time: day + "03:04:30.600Z"},
		28: codexNote("event_msg:task_complete", day+"03:04:30.700Z"),
		29: {kind: eventlog.KindError, label: "stream_error", time: day + "03:05:00.000Z"},
		30: {kind: eventlog.KindError, label: "error", time: day + "03:05:01.000Z"},
		31: {kind: eventlog.KindError, label: "turn_aborted", time: day + "03:05:02.000Z"},
		32: {kind: eventlog.KindCompaction, label: "compacted", time: day + "03:06:00.000Z"}, // session context replays from after it
		33: codexNote("event_msg:context_compacted", day+"03:06:00.001Z"),
		34: codexNote("response_item:compaction", day+"03:06:00.002Z"),
		35: codexNote("response_item:ghost_snapshot", day+"03:06:01.000Z"),
		36: codexNote("event_msg:thread_name_updated", day+"03:06:02.000Z"),
		37: {kind: eventlog.KindNote, label: "future_item", time: day + "03:06:03.000Z", unknown: "future_item"}, // a note, reported
		38: {kind: eventlog.KindNote, label: codexUnparsed, unparsed: "not JSON"},
		39: codexNote("event_msg:task_started", day+"03:06:05.000Z"),
	}
	lines := codexLines(t, codexMainFile)
	if len(lines) != len(want)-1 {
		t.Fatalf("fixture has %d lines, the table %d", len(lines), len(want)-1)
	}
	m := newCodexMapper()
	for i, line := range lines {
		checkCodexLine(t, i+1, m.mapLine(line), want[i+1])
	}
	got := m.session()
	wantSess := sourceSession{
		ID:        codexMainID,
		ParentID:  codexForkID,
		Title:     "Fix the flaky test TestAppendConcurrent in eventlog — it fails about once in tw…",
		Workspace: "/home/dev/rook",
		Fork:      true, // its session_meta's forked_from_id
	}
	if got != wantSess {
		t.Errorf("session:\n got %+v\nwant %+v", got, wantSess)
	}
}

func checkCodexLine(t *testing.T, n int, got mappedLine, w codexWant) {
	t.Helper()
	if got.Kind != w.kind || got.Label != w.label || got.TokensIn != w.in || got.TokensOut != w.out || got.Unparsed != w.unparsed || got.Unknown != w.unknown || got.Group != "" {
		t.Errorf("line %d: got %v %q tokens %d/%d unparsed %q unknown %q group %q; want %v %q tokens %d/%d unparsed %q unknown %q",
			n, got.Kind, got.Label, got.TokensIn, got.TokensOut, got.Unparsed, got.Unknown, got.Group, w.kind, w.label, w.in, w.out, w.unparsed, w.unknown)
	}
	var at time.Time
	if w.time != "" {
		var err error
		if at, err = time.Parse(time.RFC3339Nano, w.time); err != nil {
			t.Fatal(err)
		}
	}
	if !got.Time.Equal(at) {
		t.Errorf("line %d: time %v, want %v", n, got.Time, at)
	}
}

func TestCodexSubagent(t *testing.T) {
	m := newCodexMapper()
	lines := codexLines(t, codexSubFile)
	for _, line := range lines {
		m.mapLine(line)
	}
	// The title comes from the second text item of a message whose first
	// is the environment; the workspace from session_meta, not the
	// turn_context after it.
	want := sourceSession{
		ID:        codexSubID,
		ParentID:  codexMainID,
		Title:     "List every caller of Log.Append in the repository.",
		Workspace: "/home/dev/rook/eventlog",
		Subagent:  true,
	}
	if got := m.session(); got != want {
		t.Errorf("session:\n got %+v\nwant %+v", got, want)
	}
	if got := newCodexMapper().mapLine(lines[len(lines)-1]); got.TokensIn != 3000 || got.TokensOut != 40 {
		t.Errorf("token_count: %d/%d, want 3000/40", got.TokensIn, got.TokensOut)
	}
	if got := m.mapLine(lines[3]); got.Kind != eventlog.KindAssistant || got.Label != "gpt-5.2-codex-mini" {
		t.Errorf("assistant: %v %q", got.Kind, got.Label)
	}
}

// The .zst fixture is the main rollout as Codex compresses idle files.
func TestCodexZstFixture(t *testing.T) {
	plain, err := os.ReadFile(codexMainFile)
	if err != nil {
		t.Fatal(err)
	}
	z, err := os.ReadFile(codexMainFile + ".zst")
	if err != nil {
		t.Fatal(err)
	}
	dec, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	got, err := dec.DecodeAll(z, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, plain) {
		t.Fatalf("%s.zst does not decompress to %s: regenerate it with %s=1", codexMainFile, codexMainFile, fuzzseed.Env)
	}
}

// Lines the fixtures do not hold: damaged envelopes, odd field types,
// and what the session learns from them.
func TestCodexOddLines(t *testing.T) {
	cases := []struct {
		line     string
		kind     eventlog.Kind
		label    string
		unparsed string
	}{
		{``, eventlog.KindNote, codexUnparsed, "not JSON"},
		{`{"type":"event_msg",`, eventlog.KindNote, codexUnparsed, "not JSON"},
		{`[1,2]`, eventlog.KindNote, codexUnparsed, "not a JSON object"},
		{`"session_meta"`, eventlog.KindNote, codexUnparsed, "not a JSON object"},
		{`{"timestamp":"2026-01-02T03:04:05Z","payload":{}}`, eventlog.KindNote, codexUnparsed, `no "type" field`},
		{`{"type":7,"payload":{}}`, eventlog.KindNote, codexUnparsed, `no "type" field`},
		{`{"type":7,"payload":7}`, eventlog.KindNote, codexUnparsed, `no "type" field`},
		{`{"type":"response_item","payload":[1]}`, eventlog.KindNote, codexUnparsed, `"payload" is not an object`},
		{`{"type":"response_item"}`, eventlog.KindNote, "response_item:", ""},
		{`{"type":"response_item","payload":null}`, eventlog.KindNote, "response_item:", ""},
		{`{"type":"response_item","payload":{"type":"message","role":"tool"}}`, eventlog.KindNote, "message:tool", ""},
		{`{"type":"response_item","payload":{"type":"message","role":"system"}}`, eventlog.KindNote, "system", ""},
		{`{"type":"response_item","payload":{"type":"message","role":"user","content":"not a list"}}`, eventlog.KindUser, "", ""},
		{`{"type":"response_item","payload":{"type":"function_call","name":5,"call_id":[]}}`, eventlog.KindToolCall, "", ""},
		{`{"type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":-1}}}}`, eventlog.KindNote, "event_msg:token_count", ""},
		{`{"type":"event_msg","payload":{"type":"token_count","info":"x"}}`, eventlog.KindNote, "event_msg:token_count", ""},
		{`{"type":"event_msg","payload":{}}`, eventlog.KindNote, "event_msg:", ""},
	}
	for _, c := range cases {
		got := newCodexMapper().mapLine([]byte(c.line))
		if got.Kind != c.kind || got.Label != c.label || got.Unparsed != c.unparsed || got.TokensIn != 0 || got.TokensOut != 0 {
			t.Errorf("%s: got %v %q unparsed %q tokens %d/%d; want %v %q unparsed %q",
				c.line, got.Kind, got.Label, got.Unparsed, got.TokensIn, got.TokensOut, c.kind, c.label, c.unparsed)
		}
		if !got.Time.IsZero() {
			t.Errorf("%s: time %v", c.line, got.Time)
		}
	}
	for stamp, want := range map[string]time.Time{
		`"yesterday"`:                   {},
		`1767323045`:                    {},
		`"2026-01-02T03:04:05Z"`:        time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		`"2026-01-02T04:04:05.5+01:00"`: time.Date(2026, 1, 2, 3, 4, 5, 5e8, time.UTC),
		`"2026-01-02T03:04:05.123456Z"`: time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC),
	} {
		got := newCodexMapper().mapLine([]byte(`{"timestamp":` + stamp + `,"type":"compacted","payload":{}}`))
		if !got.Time.Equal(want) || got.Label != "compacted" || got.Unparsed != "" {
			t.Errorf("timestamp %s: %+v, want time %v", stamp, got, want)
		}
	}
}

func TestCodexSessionFromOddLines(t *testing.T) {
	m := newCodexMapper()
	for _, line := range []string{
		// No session_meta yet: the turn gives the workspace.
		`{"type":"turn_context","payload":{"cwd":"/tmp/w","model":"m1"}}`,
		// A review subagent names no parent.
		`{"type":"session_meta","payload":{"id":"s1","cwd":"/tmp/meta","forked_from_id":"f1","source":{"subagent":"review"}}}`,
		// A second session_meta (a fork copies its parent's) changes
		// nothing of what the first said; in a subagent's rollout, it says
		// the subagent copies its parent's history (Fork).
		`{"type":"session_meta","payload":{"id":"s2","cwd":"/tmp/other","source":{"subagent":{"thread_spawn":{"parent_thread_id":"p2"}}}}}`,
		// Only boilerplate from the items; the UI event has the prompt.
		`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<user_instructions>\nbe brief\n</user_instructions>"},{"type":"input_image","image_url":"data:"}]}}`,
		`{"type":"event_msg","payload":{"type":"user_message","message":"<environment_context>x</environment_context>"}}`,
		`{"type":"event_msg","payload":{"type":"user_message","message":"\n  rename the flag\nand its docs"}}`,
	} {
		m.mapLine([]byte(line))
	}
	want := sourceSession{ID: "s1", ParentID: "f1", Title: "rename the flag", Workspace: "/tmp/meta", Subagent: true, Fork: true}
	if got := m.session(); got != want {
		t.Errorf("session:\n got %+v\nwant %+v", got, want)
	}
	// A user message item, when it comes, is the title.
	m.mapLine([]byte(`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"the real prompt"}]}}`))
	if got := m.session().Title; got != "the real prompt" {
		t.Errorf("title %q", got)
	}

	// A cli session: no subagent, parent from forked_from_id only.
	m = newCodexMapper()
	m.mapLine([]byte(`{"type":"session_meta","payload":{"id":"s3","source":"cli","forked_from_id":null}}`))
	if got := m.session(); got != (sourceSession{ID: "s3"}) {
		t.Errorf("cli session: %+v", got)
	}
}

// Strings cut out of the fixture's lines go to the kinds that compress
// them best: instructions as docs, tool output as tool results.
func TestCodexCutKind(t *testing.T) {
	lines := codexLines(t, codexMainFile)
	m := newCodexMapper()
	got := map[string]cas.Kind{} // "line:key" -> kind
	for i, line := range lines {
		ml := m.mapLine(line)
		if ml.Unparsed != "" {
			continue
		}
		strs, ok := stringValues(line, MinCutString+2)
		if !ok {
			t.Fatalf("line %d: not JSON", i+1)
		}
		for _, s := range strs {
			got[fmt.Sprintf("%d:%s", i+1, s.Key)] = m.cutKind(ml, s)
		}
	}
	want := map[string]cas.Kind{
		"1:text":               cas.KindDocs, // session_meta base_instructions.text
		"2:text":               cas.KindMessage,
		"3:text":               cas.KindMessage,
		"5:user_instructions":  cas.KindDocs,
		"11:encrypted_content": cas.KindMessage,
		"14:output":            cas.KindToolResult,
		"32:encrypted_content": cas.KindMessage,
		"34:encrypted_content": cas.KindMessage,
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %v, want %v", k, got[k], w)
		}
	}
}

// codexSeeds are the fixtures' lines and a few damaged ones.
func codexSeeds(t testing.TB) [][]byte {
	var out [][]byte
	for _, f := range []string{codexMainFile, codexSubFile} {
		out = append(out, codexLines(t, f)...)
	}
	return append(out, []byte(`[1]`), []byte(`{"type":"response_item","payload":[1]}`), []byte(`{"type":7}`),
		[]byte(`{"TYPE":"event_msg","Payload":{"type":"user_message","message":"keys in another case"},"extra":[1,2]}`),
		// A whole rollout in one input: checkView maps it line by line.
		bytes.Join(codexLines(t, codexMainFile), []byte("\n")),
		// Older rollouts, with no envelope.
		[]byte(codexDirectRollout), []byte(codexLegacyRollout),
		[]byte(`{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"t":"a"},"last_token_usage":{"input_tokens":5}}}}`+"\n"+
			`{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"t":"b"},"last_token_usage":{"input_tokens":5}}}}`))
}

func FuzzCodexLine(f *testing.F) {
	for _, s := range codexSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m := newCodexMapper()
		// Twice: the second sees the state the first left (call names,
		// session_meta seen, the last token total).
		for range 2 {
			got := m.mapLine(line)
			if !got.Kind.Valid() {
				t.Fatalf("kind %v", got.Kind)
			}
			if (got.Unparsed != "") != (got.Label == codexUnparsed) || got.Group != "" {
				t.Fatalf("label %q unparsed %q group %q", got.Label, got.Unparsed, got.Group)
			}
			if got.Unparsed != "" && got.Kind != eventlog.KindNote {
				t.Fatalf("unparsed line of kind %v", got.Kind)
			}
			if strs, ok := stringValues(line, 0); ok {
				for _, s := range strs {
					if k := m.cutKind(got, s); !k.Valid() {
						t.Fatalf("cut kind %v", k)
					}
				}
			}
		}
		m.session()
		checkView(t, newCodexMapper, line)
	})
}

// TestWriteCodexFuzzSeeds regenerates testdata/fuzz/FuzzCodexLine and the
// .zst fixture (ROOK_WRITE_FUZZ_SEEDS=1 go test ./agent -run WriteCodex).
func TestWriteCodexFuzzSeeds(t *testing.T) {
	fuzzseed.Write(t, map[string][][]byte{"FuzzCodexLine": codexSeeds(t)})
	plain, err := os.ReadFile(codexMainFile)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault))
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	if err := os.WriteFile(filepath.Clean(codexMainFile+".zst"), enc.EncodeAll(plain, nil), 0o644); err != nil {
		t.Fatal(err)
	}
}

// codexMainAndEncoder is the hand-made rollout's bytes, and an encoder to
// compress them as Codex does, closed when the test ends.
func codexMainAndEncoder(t *testing.T) ([]byte, *zstd.Encoder) {
	t.Helper()
	plain, err := os.ReadFile(codexMainFile)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { enc.Close() })
	return plain, enc
}

// TestImportFollowsAMovedFile: Codex compresses a rollout idle for a week
// in place, writes it back plain when the session resumes, and archiving
// moves it; the session is the same one throughout, not a new one each
// time. A copy whose original is still there, or a file of the same name
// with other lines, is a session of its own.
func TestImportFollowsAMovedFile(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	plain, enc := codexMainAndEncoder(t)
	name := filepath.Base(codexMainFile)
	day := "/c/sessions/2026/01/02/"
	write := func(path string, data []byte) { t.Helper(); writeSourceFile(t, fsys, path, data) }
	remove := func(path string) {
		t.Helper()
		if err := fsys.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
	write(day+name, plain)
	first := mustImport(t, r, FormatCodex, "/c")
	id := *fileByPath(t, first, day+name).Session
	// step imports /c and checks the file at path is session id, with
	// this status, and that the session now names path as its source.
	step := func(what, path, status string, from string) {
		t.Helper()
		rep := mustImport(t, r, FormatCodex, "/c")
		f := fileByPath(t, rep, path)
		if f.Status != status || f.Session == nil || *f.Session != id || f.MovedFrom != from || rep.Sessions != 0 {
			t.Fatalf("%s: %+v (report %+v)", what, f, rep)
		}
		m, err := r.Log.ReadMeta(id)
		if err != nil || m.Source.Path != path || m.Source.Zstd != strings.HasSuffix(path, ".zst") {
			t.Fatalf("%s: source %+v %v", what, m.Source, err)
		}
	}

	// Compressed in place.
	write(day+name+".zst", enc.EncodeAll(plain, nil))
	remove(day + name)
	step("compressed", day+name+".zst", ImportUnchanged, day+name)
	step("compressed, again", day+name+".zst", ImportUnchanged, "")

	// Resumed: plain again, with a line more.
	grown := append(slices.Clone(plain), `{"timestamp":"2026-01-03T00:00:00.000Z","type":"event_msg","payload":{"type":"agent_message","message":"resumed"}}`+"\n"...)
	write(day+name, grown)
	remove(day + name + ".zst")
	step("resumed", day+name, ImportGrown, day+name+".zst")

	// Archived.
	write("/c/archived_sessions/"+name, grown)
	remove(day + name)
	step("archived", "/c/archived_sessions/"+name, ImportUnchanged, day+name)
	mustExport(t, r, id, grown)

	// A file of the same name with other lines, where the old one was,
	// is a session of its own.
	remove("/c/archived_sessions/" + name)
	other := bytes.Replace(grown, []byte("resumed"), []byte("resumed!"), 1)
	write("/c/other/"+name, other)
	rep := mustImport(t, r, FormatCodex, "/c/other")
	if f := fileByPath(t, rep, "/c/other/"+name); f.Status != ImportNew || *f.Session == id || f.MovedFrom != "" {
		t.Fatalf("same name, other lines: %+v", f)
	}
	// So is a copy beside its original.
	write("/c/archived_sessions/"+name, grown)
	write("/c/copy/"+name, grown)
	rep = mustImport(t, r, FormatCodex, "/c/archived_sessions", "/c/copy")
	if f := fileByPath(t, rep, "/c/archived_sessions/"+name); f.Status != ImportUnchanged || *f.Session != id {
		t.Fatalf("the original: %+v", f)
	}
	if f := fileByPath(t, rep, "/c/copy/"+name); f.Status != ImportNew || *f.Session == id {
		t.Fatalf("a copy: %+v", f)
	}
}

// TestImportTakesAPlainRolloutBesideItsZst: while Codex compresses a
// rollout, and when it writes one back plain to resume it, the plain file
// and its .zst are side by side. They are one rollout: the plain file is
// read (as Codex reads it), the .zst left out (even half written), and the
// session stays one session throughout.
func TestImportTakesAPlainRolloutBesideItsZst(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	plain, enc := codexMainAndEncoder(t)
	path := "/c/sessions/2026/01/02/" + filepath.Base(codexMainFile)
	write := func(p string, data []byte) { t.Helper(); writeSourceFile(t, fsys, p, data) }
	write(path, plain)
	id := *fileByPath(t, mustImport(t, r, FormatCodex, "/c"), path).Session
	grown := append(slices.Clone(plain), `{"timestamp":"2026-01-03T00:00:00.000Z","type":"event_msg","payload":{"type":"agent_message","message":"resumed"}}`+"\n"...)
	for _, step := range []struct {
		what       string
		plain, zst []byte // nil: not there
		read       string // the file read
		status     string
		from       string
	}{
		{"compressing, the .zst half written", plain, enc.EncodeAll(plain, nil)[:40], path, ImportUnchanged, ""},
		{"compressed", plain, enc.EncodeAll(plain, nil), path, ImportUnchanged, ""},
		{"the plain file removed", nil, enc.EncodeAll(plain, nil), path + ".zst", ImportUnchanged, path},
		{"resuming: written back plain, half done", plain[:len(plain)/2], enc.EncodeAll(plain, nil), path, ImportUnchanged, ""},
		{"resumed: written back plain, grown", grown, enc.EncodeAll(plain, nil), path, ImportGrown, path + ".zst"},
		{"the .zst removed", grown, nil, path, ImportUnchanged, ""},
	} {
		for p, data := range map[string][]byte{path: step.plain, path + ".zst": step.zst} {
			if data == nil {
				if err := fsys.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
					t.Fatal(err)
				}
				continue
			}
			write(p, data)
		}
		rep := mustImport(t, r, FormatCodex, "/c")
		f := fileByPath(t, rep, step.read)
		if len(rep.Files) != 1 || rep.Failed != 0 || f.Status != step.status || *f.Session != id || f.MovedFrom != step.from {
			t.Fatalf("%s: %+v", step.what, rep)
		}
		if beside := step.plain != nil && step.zst != nil; beside != (len(rep.ZstBeside) == 1) {
			t.Fatalf("%s: .zst left out %v", step.what, rep.ZstBeside)
		}
	}
	// The .zst named on its own, beside its plain file: the plain file is
	// read.
	write(path+".zst", enc.EncodeAll(grown, nil))
	rep := mustImport(t, r, FormatCodex, path+".zst")
	if f := fileByPath(t, rep, path); len(rep.Files) != 1 || f.Status != ImportUnchanged || *f.Session != id || len(rep.ZstBeside) != 1 {
		t.Fatalf("the .zst named alone: %+v", rep)
	}
	if ids, err := r.Log.IDs(); err != nil || len(ids) != 1 {
		t.Fatalf("%d sessions for one rollout %v", len(ids), err)
	}
	mustExport(t, r, id, grown)
}

// TestImportTakesAnotherRolloutOfTheSameNameBesideAPlainOne: a .zst beside
// a plain rollout of its name is left out only when it is that rollout
// (their first lines agree). Another rollout given that name (its own
// session_meta) is imported too, in a tree and named on its own.
func TestImportTakesAnotherRolloutOfTheSameNameBesideAPlainOne(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	plain, enc := codexMainAndEncoder(t)
	name := filepath.Base(codexMainFile)
	uuid := strings.TrimSuffix(name, ".jsonl")
	uuid = uuid[len(uuid)-36:]
	other := bytes.ReplaceAll(plain, []byte(uuid), []byte("019b0000-0000-7000-8000-000000000000"))
	if bytes.Equal(other, plain) {
		t.Fatalf("%s is not in the rollout", uuid)
	}
	path := "/c/sessions/2026/01/02/" + name
	writeSourceFile(t, fsys, path, plain)
	writeSourceFile(t, fsys, path+".zst", enc.EncodeAll(other, nil))
	rep := mustImport(t, r, FormatCodex, "/c")
	if len(rep.Files) != 2 || rep.Sessions != 2 || len(rep.ZstBeside) != 0 {
		t.Fatalf("another rollout beside: %+v", rep)
	}
	zid := *fileByPath(t, rep, path+".zst").Session
	mustExport(t, r, zid, other)
	// Named on its own, the .zst is itself: unchanged.
	rep = mustImport(t, r, FormatCodex, path+".zst")
	if f := fileByPath(t, rep, path+".zst"); len(rep.Files) != 1 || f.Status != ImportUnchanged || *f.Session != zid || len(rep.ZstBeside) != 0 {
		t.Fatalf("the other .zst named alone: %+v", rep)
	}
}

// What Codex writes in the user's place is never the title, whatever the
// case of its tags: an interrupted turn's marker, a subagent's notice, a
// shell command the user ran, the environment; the first real prompt is.
func TestCodexTitleSkipsWhatCodexWrote(t *testing.T) {
	item := func(text string) string {
		return `{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":` + string(appendJSONString(nil, []byte(text))) + `}]}}`
	}
	event := func(text string) string {
		return `{"type":"event_msg","payload":{"type":"user_message","message":` + string(appendJSONString(nil, []byte(text))) + `}}`
	}
	lines := []string{
		item("<ENVIRONMENT_CONTEXT>\n  <cwd>/w</cwd>\n</ENVIRONMENT_CONTEXT>"),
		event("<turn_aborted>\n  The user interrupted the previous turn on purpose.\n</turn_aborted>"),
		item("<turn_aborted>\n  The user interrupted the previous turn on purpose.\n</turn_aborted>"),
		item("  <user_shell_command>\n<command>ls</command>\n</user_shell_command>"),
		item("<subagent_notification>{}</subagent_notification>"),
		item("<skill>\n<name>x</name>\n</skill>"),
	}
	m := newCodexMapper()
	for _, line := range lines {
		m.mapLine([]byte(line))
	}
	if got := m.session().Title; got != "" {
		t.Fatalf("title %q from what Codex wrote", got)
	}
	m.mapLine([]byte(item("rename the flag")))
	if got := m.session().Title; got != "rename the flag" {
		t.Fatalf("title %q, want the prompt", got)
	}
	checkView(t, newCodexMapper, []byte(strings.Join(append(lines, item("rename the flag")), "\n")))
}

// Codex's IDE extension puts the editor's state before the user's request
// in one message: the request titles, however long the state before it
// (open tabs, a selection), read through the view and the fast path as
// from the whole line; from the user_message event too, when the items
// are missing. A message of that kind with no request titles nothing.
func TestCodexTitleFromIDERequest(t *testing.T) {
	item := func(text string) string {
		return `{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":` + string(appendJSONString(nil, []byte(text))) + `}]}}`
	}
	event := func(text string) string {
		return `{"type":"event_msg","payload":{"type":"user_message","message":` + string(appendJSONString(nil, []byte(text))) + `}}`
	}
	ide := "# Context from my IDE setup:\n\n## Active file: src/fetch.ts\n\n## Open tabs:\n- fetch.ts: src/fetch.ts\n" +
		strings.Repeat("- a_rather_long_module_name.ts: src/some/deeply/nested/directory/a_rather_long_module_name.ts\n", 30) +
		"\n## My request for Codex:\n\nadd a retry to the fetch\nwith backoff\n"
	files := "# Files mentioned by the user:\n\n## shot.png: /home/u/shot.png\n\n## My request for Codex:\nmake it look like the screenshot\n\n<image name=[Image #1]>\n</image>"
	for _, c := range []struct {
		lines []string
		want  string
	}{
		{[]string{item("<environment_context>\n</environment_context>"), item(ide), event(ide), item("later")}, "add a retry to the fetch"},
		{[]string{event(ide), item("<environment_context>\n</environment_context>")}, "add a retry to the fetch"},
		{[]string{item(files)}, "make it look like the screenshot"},
		{[]string{item("# Context from my IDE setup:\n\n## Active file: a.go\n"), item("the real prompt")}, "the real prompt"},
	} {
		checkCodexTitle(t, c.lines, c.want)
	}
}

// checkCodexTitle maps lines and holds the session's title to want, the
// view to the line, and the fast path to taking every line.
func checkCodexTitle(t *testing.T, lines []string, want string) {
	t.Helper()
	in := []byte(strings.Join(lines, "\n"))
	m := newCodexMapper()
	for _, line := range lines {
		m.mapLine([]byte(line))
	}
	if got := m.session().Title; got != want {
		t.Errorf("%q\ntitle %q\nwant  %q", lines, got, want)
	}
	checkView(t, newCodexMapper, in)
	if scanned, took := checkCodexMapping(t, in); took != scanned {
		t.Errorf("%q\nthe fast path took %d of %d lines", lines, took, scanned)
	}
}

// A thread's name titles its session over its prompt: the last one.
func TestCodexThreadNameTitles(t *testing.T) {
	name := func(name string) string {
		return `{"type":"event_msg","payload":{"type":"thread_name_updated","thread_id":"019b8a10-aaaa-7222-8333-944455566677","thread_name":` + string(appendJSONString(nil, []byte(name))) + `}}`
	}
	prompt := `{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"add a retry to the fetch"}]}}`
	for _, c := range []struct {
		lines []string
		want  string
	}{
		{[]string{prompt}, "add a retry to the fetch"},
		{[]string{prompt, name("Fetch retries")}, "Fetch retries"},
		{[]string{name("Fetch"), prompt, name("  Fetch retries\nand backoff")}, "Fetch retries"},
	} {
		checkCodexTitle(t, c.lines, c.want)
	}
}

// TestImportTagsAForkImportedBeforeForksWereTagged: a Codex fork imported
// by a rook that did not tag forks shows as a child of the session it was
// forked from. An import that meets its file again, unchanged (known by
// its stat, unread) or grown, tags it, from the session's own first line;
// its events are untouched, and it is tagged once. A subagent's session
// that lost its tag is not a fork.
func TestImportTagsAForkImportedBeforeForksWereTagged(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	plain, err := os.ReadFile(codexMainFile)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := os.ReadFile(codexSubFile)
	if err != nil {
		t.Fatal(err)
	}
	mainPath, subPath := "/c/"+filepath.Base(codexMainFile), "/c/"+filepath.Base(codexSubFile)
	writeSourceFile(t, fsys, mainPath, plain)
	writeSourceFile(t, fsys, subPath, sub)
	writeSource(t, fsys, "/c/rollout-2026-01-02T03-00-00-"+codexForkID+".jsonl", []string{
		`{"timestamp":"2026-01-02T03:00:00.000Z","type":"session_meta","payload":{"id":"` + codexForkID + `","cwd":"/home/dev/rook"}}`,
		`{"timestamp":"2026-01-02T03:00:01.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"the parent"}]}}`,
	}, "")
	first := mustImport(t, r, FormatCodex, "/c")
	id, subID := *fileByPath(t, first, mainPath).Session, *fileByPath(t, first, subPath).Session
	// As an older rook left them: no fork tag (nor, here, a subagent one).
	untag := func(id eventlog.ID) eventlog.Meta {
		t.Helper()
		m, err := r.Log.ReadMeta(id)
		if err != nil {
			t.Fatal(err)
		}
		m.Tags = []string{FormatCodex}
		if err := r.Log.UpdateMeta(m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if m := untag(id); m.Parent == nil || ImportedFork(m) {
		t.Fatalf("an old import's fork: %+v", m)
	}
	untag(subID)
	before, err := r.Log.Summary(id)
	if err != nil {
		t.Fatal(err)
	}
	reads := 0
	fsys.SetHook(func(op vfs.Op, path string) error {
		if path == mainPath && (op == vfs.OpOpenRead || op == vfs.OpRead) {
			reads++
		}
		return nil
	})
	check := func(what, status string, tagged int) {
		t.Helper()
		rep := mustImport(t, r, FormatCodex, "/c")
		f := fileByPath(t, rep, mainPath)
		m, err := r.Log.ReadMeta(id)
		if err != nil || f.Status != status || rep.ForksTagged != tagged || !f.Fork || !ImportedFork(m) || !slices.Equal(m.Tags, []string{FormatCodex, forkTag}) {
			t.Fatalf("%s: %+v, %d tagged, tags %v %v", what, f, rep.ForksTagged, m.Tags, err)
		}
		if s, err := r.Log.ReadMeta(subID); err != nil || slices.Contains(s.Tags, forkTag) || fileByPath(t, rep, subPath).Fork {
			t.Fatalf("%s: the subagent is tagged %v %v", what, s.Tags, err)
		}
	}
	check("unchanged", ImportUnchanged, 1)
	if after, err := r.Log.Summary(id); err != nil || after.Events != before.Events || after.Updated != before.Updated || reads != 0 {
		t.Fatalf("events %d -> %d (%v), %d read(s) of the file", before.Events, after.Events, err, reads)
	}
	check("unchanged, again", ImportUnchanged, 0)
	// Grown: the lines it takes in begin after the session_meta.
	untag(id)
	grown := append(slices.Clone(plain), `{"timestamp":"2026-01-03T00:00:00.000Z","type":"event_msg","payload":{"type":"agent_message","message":"resumed"}}`+"\n"...)
	writeSourceFile(t, fsys, mainPath, grown)
	check("grown", ImportGrown, 1)
	fsys.SetHook(nil)
	mustExport(t, r, id, grown)
}

// Rollouts an older Codex wrote (2025), hand-made after the public
// write-ups of those generations: a header line with no type, then bare
// response items with no envelope and no timestamp; the legacy one with
// state records between them. The direct one's header has no cwd (those
// documented have none), the legacy one's has one (read when present).
var (
	codexDirectRollout = `{"id":"5973b6c0-94b8-487b-a530-2aeb6098ae0e","timestamp":"2025-05-12T10:20:30.123Z","instructions":"You are Codex.","git":{"commit_hash":"1f2e3d4c","branch":"main","repository_url":"git@github.com:dev/app.git"}}
{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n  <cwd>/home/dev/app</cwd>\n</environment_context>"}]}
{"type":"message","role":"user","content":[{"type":"input_text","text":"List the Go files of the project"}]}
{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Listing files"}],"encrypted_content":"gAAAAB"}
{"type":"function_call","id":"fc_1","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"call_1"}
{"type":"function_call_output","call_id":"call_1","output":"{\"output\":\"main.go\\n\",\"metadata\":{\"exit_code\":0}}"}
{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"main.go"}]}
{"type":"future_item","id":"x"}`
	codexLegacyRollout = `{"id":"0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9","timestamp":"2025-04-30T08:00:00Z","instructions":null,"cwd":"/home/dev/legacy"}
{"record_type":"state"}
{"type":"message","role":"user","content":[{"type":"input_text","text":"Why does the build fail?"}]}
{"record_type":"state"}
{"type":"local_shell_call","call_id":"call_9","status":"completed","action":{"type":"exec","command":["go","build"]}}
{"type":"function_call_output","call_id":"call_9","output":"ok"}
{"type":"message","role":"assistant","content":[{"type":"output_text","text":"It builds now."}]}
{"record_type":"state"}`
)

// An older rollout's lines map as today's: the header a session_meta that
// gives the session, each bare item as the same item in a response_item
// envelope (calls and outputs joined by call_id, the title the first real
// prompt), at no time of its own (the line before's), the state records
// notes on purpose.
func TestCodexOlderRollouts(t *testing.T) {
	cases := []struct {
		name  string
		input string
		want  []codexWant
		sess  sourceSession
	}{
		{"direct", codexDirectRollout, []codexWant{
			codexNote("session_meta", "2025-05-12T10:20:30.123Z"),
			codexNote(codexContextLabel, ""), // environment
			{kind: eventlog.KindUser},
			{kind: eventlog.KindReasoning},
			{kind: eventlog.KindToolCall, label: "shell"},
			{kind: eventlog.KindToolResult, label: "shell"},
			{kind: eventlog.KindAssistant},
			// A type rook does not know is not taken for an item: a note,
			// reported, as on a line of today's.
			{kind: eventlog.KindNote, label: "future_item", unknown: "future_item"},
		}, sourceSession{ID: "5973b6c0-94b8-487b-a530-2aeb6098ae0e", Title: "List the Go files of the project", Workspace: "/home/dev/app"}},
		{"legacy", codexLegacyRollout, []codexWant{
			codexNote("session_meta", "2025-04-30T08:00:00Z"),
			codexNote("record_type:state", ""),
			{kind: eventlog.KindUser},
			codexNote("record_type:state", ""),
			{kind: eventlog.KindToolCall, label: "shell"}, // local_shell_call names no tool
			{kind: eventlog.KindToolResult, label: "shell"},
			{kind: eventlog.KindAssistant},
			codexNote("record_type:state", ""),
		}, sourceSession{ID: "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9", Title: "Why does the build fail?", Workspace: "/home/dev/legacy"}},
	}
	for _, c := range cases {
		lines := strings.Split(c.input, "\n")
		if len(lines) != len(c.want) {
			t.Fatalf("%s: %d lines, the table %d", c.name, len(lines), len(c.want))
		}
		m := newCodexMapper()
		for i, line := range lines {
			checkCodexLine(t, i+1, m.mapLine([]byte(line)), c.want[i])
		}
		if got := m.session(); got != c.sess {
			t.Errorf("%s: session:\n got %+v\nwant %+v", c.name, got, c.sess)
		}
		// Mapped as an import maps them (the view, the fast path declining
		// them), the same.
		checkView(t, newCodexMapper, []byte(c.input))
		checkCodexMapping(t, []byte(c.input))
	}

	// A bare item maps as the same object in a response_item envelope.
	items := strings.Split(codexDirectRollout, "\n")
	for _, line := range items[1 : len(items)-1] {
		wrapped := `{"type":"response_item","payload":` + line + `}`
		if a, b := newCodexMapper().mapLine([]byte(line)), newCodexMapper().mapLine([]byte(wrapped)); !reflect.DeepEqual(a, b) {
			t.Errorf("%s\nmaps to %+v\nin an envelope to %+v", line, a, b)
		}
	}

	// What is not such a line: a typeless line without an id, a record of
	// a type rook does not know.
	for line, want := range map[string]codexWant{
		`{"timestamp":"2025-05-12T10:20:30Z","instructions":"x"}`: {kind: eventlog.KindNote, label: codexUnparsed, unparsed: `no "type" field`},
		`{"id":5,"timestamp":"2025-05-12T10:20:30Z"}`:             {kind: eventlog.KindNote, label: codexUnparsed, unparsed: `no "type" field`},
		`{"record_type":"snapshot"}`:                              {kind: eventlog.KindNote, label: "record_type:snapshot", unknown: "record_type:snapshot"},
		`{"record_type":"state","id":"s"}`:                        codexNote("record_type:state", ""),
	} {
		checkCodexLine(t, 1, newCodexMapper().mapLine([]byte(line)), want)
	}
}

// A user message Codex wrote itself, for the model (every item an
// input_text that is its boilerplate: the environment, AGENTS.md, a
// skill...), is a note, user:context, as Claude Code's meta prompts are:
// not a prompt. A message with a prompt in it, an image, or anything else
// stays the user's; so does a shell command the user ran (!ls), which was
// the user's own action. Through the fast path, the view and, for an older
// rollout's bare line, with no envelope, the same.
func TestCodexContextNotes(t *testing.T) {
	text := func(s string) string {
		return `{"type":"input_text","text":` + string(appendJSONString(nil, []byte(s))) + `}`
	}
	const (
		env    = "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"
		agents = "# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>\nRun the tests.\n</INSTRUCTIONS>"
		shell  = "<user_shell_command>\n<command>ls</command>\n<result>\nmain.go\n</result>\n</user_shell_command>"
		image  = `{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo="}`
	)
	note := codexWant{kind: eventlog.KindNote, label: codexContextLabel}
	user := codexWant{kind: eventlog.KindUser}
	for _, c := range []struct {
		content string // the message's content
		want    codexWant
		title   string
	}{
		// Each kind of boilerplate, whatever its case and the spaces
		// around it.
		{`[` + text(env) + `]`, note, ""},
		{`[` + text("<user_instructions>\nBe terse.\n</user_instructions>") + `]`, note, ""},
		{`[` + text(agents) + `]`, note, ""},
		{`[` + text("<permissions instructions>\nsandbox: workspace-write\n</permissions instructions>") + `]`, note, ""},
		{`[` + text("<INSTRUCTIONS>\nRun the tests.\n</INSTRUCTIONS>") + `]`, note, ""},
		{`[` + text("<context_update>\n<cwd>/w/sub</cwd>\n</context_update>") + `]`, note, ""},
		{`[` + text("<skill>\n<name>review</name>\n</skill>") + `]`, note, ""},
		{`[` + text("<turn_aborted>\n  The user interrupted the previous turn on purpose.\n</turn_aborted>") + `]`, note, ""},
		{`[` + text("<subagent_notification>{\"agent\":\"a\",\"status\":\"done\"}</subagent_notification>") + `]`, note, ""},
		{`[` + text("\n  <ENVIRONMENT_CONTEXT>\n</ENVIRONMENT_CONTEXT>  ") + `]`, note, ""},
		{`[` + text(agents) + `,` + text(env) + `]`, note, ""},
		// Boilerplate and a prompt in one message: the user's, titled by
		// the prompt.
		{`[` + text(env) + `,` + text("rename the flag") + `]`, user, "rename the flag"},
		{`[` + text("rename the flag") + `,` + text(env) + `]`, user, "rename the flag"},
		// A shell command the user ran: the user's, and no title.
		{`[` + text(shell) + `]`, user, ""},
		{`[` + text(env) + `,` + text("  <USER_SHELL_COMMAND>ls</USER_SHELL_COMMAND>") + `]`, user, ""},
		// An image, or an item of any other type, alone or beside the
		// boilerplate.
		{`[` + text(env) + `,` + image + `]`, user, ""},
		{`[` + image + `,` + text(env) + `]`, user, ""},
		{`[` + image + `]`, user, ""},
		{`[null,` + text(env) + `]`, user, ""},
		{`[{"text":` + string(appendJSONString(nil, []byte(env))) + `}]`, user, ""},
		// No text, or one that is not boilerplate: the IDE's state without
		// a request, an empty one, one of another type.
		{`[]`, user, ""},
		{`null`, user, ""},
		{`"<environment_context></environment_context>"`, user, ""},
		{`[` + text("  ") + `]`, user, ""},
		{`[` + text(env) + `,{"type":"input_text","text":5}]`, user, ""},
		{`[` + text("# Context from my IDE setup:\n\n## Active file: a.go\n") + `]`, user, ""},
	} {
		item := `{"type":"message","role":"user","content":` + c.content + `}`
		for _, line := range []string{
			`{"timestamp":"2026-01-02T03:04:05Z","type":"response_item","payload":` + item + `}`,
			item, // an older rollout's bare item
		} {
			want := c.want
			if strings.HasPrefix(line, `{"timestamp"`) {
				want.time = "2026-01-02T03:04:05Z"
			}
			m := newCodexMapper()
			got := m.mapLine([]byte(line))
			checkCodexLine(t, 1, got, want)
			if t.Failed() {
				t.Fatalf("%s", line)
			}
			if s := m.session().Title; s != c.title {
				t.Errorf("%s\ntitle %q, want %q", line, s, c.title)
			}
			checkView(t, newCodexMapper, []byte(line))
			checkCodexMapping(t, []byte(line))
		}
		// The fast path reads today's line (not the bare one) and gives the
		// same.
		line := []byte(`{"type":"response_item","payload":` + item + `}`)
		if !checkCodexFastPath(t, line, viewLong) {
			t.Errorf("%s\nthe fast path declined it", line)
		}
	}
}

// A .zst rollout damaged part way: the lines before the damage are in its
// session, as many as the report says, and the next import of the whole file
// takes in the rest. The same whether it is read in chunks or, small, read
// whole (which took in no line at all), and whether the damage is past the
// MiB read ahead to tell the format or within it.
func TestImportOfADamagedZstHoldsTheLinesItReports(t *testing.T) {
	for _, tc := range []struct {
		name       string
		chunk, big int
	}{
		{"in chunks", 1 << 16, 3 << 20 / 2},
		{"read whole", 0, 3 << 20 / 2},
		{"read whole, damaged within its first MiB", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chunk, big := tc.chunk, tc.big
			fsys := vfs.NewMem()
			r := testRook(t, fsys)
			plain, enc := codexMainAndEncoder(t)
			for i := 0; len(plain) < big; i++ {
				plain = fmt.Appendf(plain, `{"timestamp":"2026-01-02T04:00:00Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"%d %s"}]}}`+"\n", i, strings.Repeat("x", 4000))
			}
			// A frame a line, as a file compressed in pieces is: the frames
			// before the damage decompress; the last is cut in half.
			lines := bytes.SplitAfter(plain, []byte{'\n'})
			lines = lines[:len(lines)-1] // after the last newline
			var z []byte
			for _, l := range lines {
				z = enc.EncodeAll(l, z)
			}
			src := "/c/rollout-2026-01-02T03-04-05-" + codexMainID + ".jsonl.zst"
			writeSourceFile(t, fsys, src, z[:len(z)-len(enc.EncodeAll(lines[len(lines)-1], nil))/2])
			rep, err := r.Import(ImportOptions{Format: FormatCodex, Paths: []string{src}, ChunkBytes: chunk})
			if err != nil {
				t.Fatal(err)
			}
			f := fileByPath(t, rep, src)
			if f.Status != ImportFailed || f.Session == nil || f.Lines == 0 {
				t.Fatalf("the damaged file: %+v", f)
			}
			var buf bytes.Buffer
			x, err := r.ExportSource(*f.Session, &buf)
			if err != nil {
				t.Fatal(err)
			}
			if x.Lines != f.Lines || !bytes.HasPrefix(plain, buf.Bytes()) {
				t.Fatalf("the report says %d line(s) are in session %s, which holds %d", f.Lines, f.Session, x.Lines)
			}
			if !strings.Contains(f.Note, fmt.Sprintf("the %d line(s) before are in session", x.Lines)) {
				t.Errorf("note: %s", f.Note)
			}
			// Again, still damaged: the file is read on from what its session
			// holds (the lines the decoder gives before its error, which may be
			// more than it gave the first time), and says, as before, that it did
			// not decompress.
			rep, err = r.Import(ImportOptions{Format: FormatCodex, Paths: []string{src}, ChunkBytes: chunk})
			if err != nil {
				t.Fatal(err)
			}
			again := fileByPath(t, rep, src)
			if again.Status != ImportFailed || !strings.HasPrefix(again.Note, "decompress: ") {
				t.Errorf("imported again: %+v", again)
			}
			writeSourceFile(t, fsys, src, z)
			rep, err = r.Import(ImportOptions{Format: FormatCodex, Paths: []string{src}, ChunkBytes: chunk})
			if err != nil {
				t.Fatal(err)
			}
			if g := fileByPath(t, rep, src); g.Status != ImportGrown || g.Lines+f.Lines+again.Lines != len(lines) {
				t.Fatalf("imported whole: %+v (after %d and %d line(s))", g, f.Lines, again.Lines)
			}
			mustExport(t, r, *f.Session, plain)
		})
	}
}

// A .zst rollout of two frames, the second damaged within (its checksum
// does not match): every line of the first frame, which decompresses whole,
// is in the session, its last one too (its event no longer waits for a
// next chunk that never comes), and exported byte for byte; the import
// fails saying the file is damaged. Once the file is whole again, the next
// import takes in the second frame's lines, none twice. Read whole or in
// chunks.
func TestImportOfAZstDamagedInItsSecondFrameTakesAllOfTheFirst(t *testing.T) {
	for _, chunk := range []int{0, 1 << 12} {
		t.Run(fmt.Sprint("chunks of ", chunk), func(t *testing.T) {
			fsys := vfs.NewMem()
			r := testRook(t, fsys)
			first, enc := codexMainAndEncoder(t)
			var second []byte
			for i := 0; i < 3; i++ {
				second = fmt.Appendf(second, `{"timestamp":"2026-01-02T04:00:00Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"%d %s"}]}}`+"\n", i, strings.Repeat("y", 300))
			}
			z := enc.EncodeAll(first, nil)
			good := enc.EncodeAll(second, slices.Clone(z))
			damaged := slices.Clone(good)
			damaged[len(damaged)-1] ^= 1 // in the second frame's checksum
			src := "/c/rollout-2026-01-02T03-04-05-" + codexMainID + ".jsonl.zst"
			writeSourceFile(t, fsys, src, damaged)
			rep, err := r.Import(ImportOptions{Format: FormatCodex, Paths: []string{src}, ChunkBytes: chunk})
			if err != nil {
				t.Fatal(err)
			}
			f := fileByPath(t, rep, src)
			n := bytes.Count(first, []byte{'\n'})
			if f.Status != ImportFailed || f.Session == nil || !strings.HasPrefix(f.Note, "decompress: the zstd data is damaged") {
				t.Fatalf("the damaged file: %+v", f)
			}
			var buf bytes.Buffer
			x, err := r.ExportSource(*f.Session, &buf)
			if err != nil {
				t.Fatal(err)
			}
			if f.Lines != n || x.Lines != n || !bytes.Equal(buf.Bytes(), first) {
				t.Fatalf("the first frame's %d line(s): the report says %d, the session holds %d (%d bytes of %d)", n, f.Lines, x.Lines, buf.Len(), len(first))
			}
			if !strings.Contains(f.Note, fmt.Sprintf("the %d line(s) before are in session", n)) {
				t.Errorf("note: %s", f.Note)
			}
			writeSourceFile(t, fsys, src, good)
			rep, err = r.Import(ImportOptions{Format: FormatCodex, Paths: []string{src}, ChunkBytes: chunk})
			if err != nil {
				t.Fatal(err)
			}
			if g := fileByPath(t, rep, src); g.Status != ImportGrown || g.Lines != 3 {
				t.Fatalf("imported whole: %+v", g)
			}
			mustExport(t, r, *f.Session, append(slices.Clone(first), second...))
		})
	}
}

// An older Codex wrote a token_count's usage in the payload itself, with
// no info: its turns count their tokens as today's do (the same usage
// again once), the view shows them, and session context reads its window.
func TestCodexTokenCountWithoutInfo(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	count := func(total, last string) string {
		return `{"timestamp":"2025-09-02T10:00:01Z","type":"event_msg","payload":{"type":"token_count","total_token_usage":` + total +
			`,"last_token_usage":` + last + `,"model_context_window":128000}}`
	}
	lines := []string{
		`{"timestamp":"2025-09-02T10:00:00Z","type":"session_meta","payload":{"id":"0199a1b2-0000-7000-8000-000000000001","cwd":"/w","source":"cli"}}`,
		`{"timestamp":"2025-09-02T10:00:00Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"count my tokens"}]}}`,
		count(`{"input_tokens":100,"output_tokens":10}`, `{"input_tokens":100,"output_tokens":10}`),
		count(`{"input_tokens":100,"output_tokens":10}`, `{"input_tokens":100,"output_tokens":10}`), // the same again
		count(`{"input_tokens":350,"output_tokens":40}`, `{"input_tokens":250,"output_tokens":30}`),
		`{"timestamp":"2025-09-02T10:00:02Z","type":"event_msg","payload":{"type":"token_count","info":null}}`,
	}
	src := "/c/rollout-2025-09-02T10-00-00-0199a1b2-0000-7000-8000-000000000001.jsonl"
	writeSourceFile(t, fsys, src, []byte(strings.Join(lines, "\n")+"\n"))
	rep := mustImport(t, r, FormatCodex, src)
	id := *fileByPath(t, rep, src).Session
	s, err := r.Log.Summary(id)
	if err != nil {
		t.Fatal(err)
	}
	if s.TokensIn != 350 || s.TokensOut != 40 {
		t.Errorf("tokens %d/%d, want 350/40", s.TokensIn, s.TokensOut)
	}
	if got := string(RenderImported([]byte(lines[4] + "\n"))); got != "[token_count] 250 in, 30 out\n" {
		t.Errorf("rendered %q", got)
	}
	if w := codexContextWindow([]byte(strings.Join(lines, "\n"))); w != 128000 {
		t.Errorf("window %d, want 128000", w)
	}
}

// A rollout saved by an editor that put a byte order mark before its
// first line: the line is still its session_meta (the session's id and
// workspace), not a line that did not parse, and export writes the mark
// back.
func TestCodexRolloutWithAByteOrderMark(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	data := []byte("\xef\xbb\xbf" + `{"timestamp":"2026-01-02T10:00:00Z","type":"session_meta","payload":{"id":"019b0000-0000-7000-8000-00000000b0b0","cwd":"/w/bom","source":"cli"}}` + "\n" +
		`{"timestamp":"2026-01-02T10:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"saved in Notepad"}]}}` + "\n")
	src := "/c/rollout-2026-01-02T10-00-00-019b0000-0000-7000-8000-00000000b0b0.jsonl"
	writeSourceFile(t, fsys, src, data)
	rep := mustImport(t, r, FormatCodex, src)
	f := fileByPath(t, rep, src)
	if f.Unparsed != 0 || len(rep.Problems) != 0 {
		t.Errorf("unparsed %d, problems %+v", f.Unparsed, rep.Problems)
	}
	m, err := r.Log.ReadMeta(*f.Session)
	if err != nil {
		t.Fatal(err)
	}
	if m.Source.ID != "019b0000-0000-7000-8000-00000000b0b0" || m.Workspace != "/w/bom" || m.Title != "saved in Notepad" {
		t.Errorf("source id %q, workspace %q, title %q", m.Source.ID, m.Workspace, m.Title)
	}
	first := uint64(0)
	if page, err := r.History(m.ID, HistoryQuery{From: &first, Limit: 1}); err != nil || strings.Contains(page.Events[0].Preview, "{") {
		t.Errorf("preview: %+v %v", page.Events, err)
	}
	mustExport(t, r, *f.Session, data)
}

// A plain rollout named .jsonl.zst (renamed by hand, or copied over a
// compressed one) is not said to be damaged ("decompress: magic number
// mismatch"): the note says it is not zstd-compressed and what to do.
// Read whole or in chunks alike. A .zst whose frames are followed by
// bytes that are not one is damaged, as before.
func TestCodexPlainRolloutNamedZst(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	plain := []byte(`{"timestamp":"2026-01-02T10:00:00Z","type":"session_meta","payload":{"id":"` + codexMainID + `","cwd":"/w","source":"cli"}}` + "\n")
	src := "/c/rollout-2026-01-02T03-04-05-" + codexMainID + ".jsonl.zst"
	writeSourceFile(t, fsys, src, plain)
	for _, chunk := range []int{0, 1 << 10} {
		rep, err := r.Import(ImportOptions{Format: FormatCodex, Paths: []string{src}, ChunkBytes: chunk})
		if err != nil {
			t.Fatal(err)
		}
		f := fileByPath(t, rep, src)
		if f.Status != ImportFailed || !strings.HasPrefix(f.Note, "not zstd-compressed") || !strings.Contains(f.Note, "rename it without .zst") {
			t.Errorf("chunk %d: %+v", chunk, f)
		}
	}
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	writeSourceFile(t, fsys, src, append(enc.EncodeAll(plain, nil), "garbage after the frame"...))
	rep, err := r.Import(ImportOptions{Format: FormatCodex, Paths: []string{src}})
	if err != nil {
		t.Fatal(err)
	}
	if f := fileByPath(t, rep, src); f.Status != ImportFailed || !strings.HasPrefix(f.Note, "decompress: ") {
		t.Errorf("garbage after a frame: %+v", f)
	}
}

// A .zst cut short in the middle of a frame (a copy stopped, Codex still
// compressing it) failed with "decompress: unexpected EOF", which says
// neither what is wrong nor what to do: the note says it is cut short,
// and how to take in what reads. Read whole or in chunks alike.
func TestCodexZstCutShortSaysSo(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	plain, enc := codexMainAndEncoder(t)
	z := enc.EncodeAll(plain, nil)
	src := "/c/rollout-2026-01-02T03-04-05-" + codexMainID + ".jsonl.zst"
	writeSourceFile(t, fsys, src, z[:len(z)-20])
	for _, chunk := range []int{0, 1 << 10} {
		rep, err := r.Import(ImportOptions{Format: FormatCodex, Paths: []string{src}, ChunkBytes: chunk})
		if err != nil {
			t.Fatal(err)
		}
		f := fileByPath(t, rep, src)
		if f.Status != ImportFailed || !strings.HasPrefix(f.Note, "decompress: cut short in the middle of a zstd frame") || !strings.Contains(f.Note, "`zstd -dc` it to the .jsonl") {
			t.Errorf("chunk %d: %+v", chunk, f)
		}
	}
}

// A rollout a crash left NUL bytes in, Codex's next line appended right
// after them: the line is still the item it is (the prompt), not a line
// that did not parse, and export writes the NULs back.
func TestCodexRolloutLineAfterCrashNULs(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	data := []byte(`{"timestamp":"2026-01-02T10:00:00Z","type":"session_meta","payload":{"id":"019b0000-0000-7000-8000-00000000c0c0","cwd":"/w/nul","source":"cli"}}` + "\n" +
		strings.Repeat("\x00", 512) + `{"timestamp":"2026-01-02T10:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"after the crash"}]}}` + "\n")
	src := "/c/rollout-2026-01-02T10-00-00-019b0000-0000-7000-8000-00000000c0c0.jsonl"
	writeSourceFile(t, fsys, src, data)
	rep := mustImport(t, r, FormatCodex, src)
	f := fileByPath(t, rep, src)
	if f.Unparsed != 0 || len(rep.Problems) != 0 {
		t.Errorf("unparsed %d, problems %+v", f.Unparsed, rep.Problems)
	}
	m, err := r.Log.ReadMeta(*f.Session)
	if err != nil {
		t.Fatal(err)
	}
	if m.Title != "after the crash" {
		t.Errorf("title %q", m.Title)
	}
	page, err := r.History(m.ID, HistoryQuery{Limit: 10})
	if err != nil || len(page.Events) != 2 || page.Events[1].Kind != eventlog.KindUser || page.Events[1].Preview != "after the crash" {
		t.Errorf("history: %+v %v", page.Events, err)
	}
	mustExport(t, r, *f.Session, data)
}

// A rollout compressed by `zstd --long=31` (from a pipe, so with no
// content size): its frame declares a 2 GiB window, more than the
// decoder's default 512 MiB. It is read all the same, as `zstd -d
// --long=31` reads it; the window is a bound, not what is allocated.
// A frame declaring a window over maxZstdWindow (`zstd --long=31`) is
// refused, saying how to import it: the decoder would allocate the whole
// declared window at once, whatever the file holds. A window within it
// (`zstd --long=29`) reads.
func TestCodexZstWithALongWindow(t *testing.T) {
	plain := []byte(`{"timestamp":"2026-01-02T10:00:00Z","type":"session_meta","payload":{"id":"` + codexMainID + `","cwd":"/w/long","source":"cli"}}` + "\n" +
		`{"timestamp":"2026-01-02T10:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"compressed with a long window"}]}}` + "\n")
	// A frame: magic, a header with a window descriptor and no content
	// size (exponent log2-10, mantissa 0), one last raw block.
	frame := func(log2 byte) []byte {
		f := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, (log2 - 10) << 3}
		n := len(plain)<<3 | 1
		f = append(f, byte(n), byte(n>>8), byte(n>>16))
		return append(f, plain...)
	}
	src := "/c/rollout-2026-01-02T03-04-05-" + codexMainID + ".jsonl.zst"

	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	writeSourceFile(t, fsys, src, frame(31))
	rep, _ := r.Import(ImportOptions{Format: FormatCodex, Paths: []string{src}})
	if rep.Sessions != 0 || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Reason, "zstd -d --long=31") {
		t.Fatalf("a 2 GiB window: sessions %d, problems %+v, want it refused naming zstd -d --long=31", rep.Sessions, rep.Problems)
	}

	fsys = vfs.NewMem()
	r = testRook(t, fsys)
	writeSourceFile(t, fsys, src, frame(29))
	rep, err := r.Import(ImportOptions{Format: FormatCodex, Paths: []string{src}})
	if err != nil {
		t.Fatalf("import: %v (%+v)", err, rep.Problems)
	}
	f := fileByPath(t, rep, src)
	if f.Lines != 2 || f.Unparsed != 0 || len(rep.Problems) != 0 {
		t.Fatalf("lines %d, unparsed %d, problems %+v", f.Lines, f.Unparsed, rep.Problems)
	}
	mustExport(t, r, *f.Session, plain)
}

// A .zst small enough to be read whole as far as its size says (it grows
// at most zstMaxRatio times, streamed assumes) that grows far more (a run
// of one line, NULs) is read whole only up to the chunk: past it, it is
// taken in a chunk at a time, as a bigger file is, where it was read whole
// (a 61 KB file of 2 GB of NULs took 4.4 GB of memory, every import).
// Imported either way, its session exports byte-exact.
func TestImportOfAZstThatGrowsPastItsChunkIsStreamed(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	plain, enc := codexMainAndEncoder(t)
	const chunk = 1 << 18
	line := `{"timestamp":"2026-01-02T04:00:00Z","type":"event_msg","payload":{"type":"token_count","info":null}}` + "\n"
	plain = append(plain, strings.Repeat(line, 4*chunk/len(line))...)
	z := enc.EncodeAll(plain, nil)
	if len(z)*zstMaxRatio > chunk || len(plain) <= chunk {
		t.Fatalf("%d bytes compressed to %d: not a file the chunk's guess would read whole", len(plain), len(z))
	}
	src := "/c/rollout-2026-01-02T03-04-05-" + codexMainID + ".jsonl.zst"
	writeSourceFile(t, fsys, src, z)

	data, zst, tooBig, err := r.readSource(src, chunk)
	if err != nil || !zst || !tooBig || data != nil {
		t.Fatalf("readSource past its limit: %d byte(s), zst %v, too big %v, %v", len(data), zst, tooBig, err)
	}
	if p := r.prepareSource(FormatCodex, sourceFile{path: src, size: int64(len(z))}, true, MinCutString, chunk); !p.streamed || p.data != nil || p.err != nil {
		t.Fatalf("prepared: streamed %v, %d byte(s) read whole, %v", p.streamed, len(p.data), p.err)
	}

	rep, err := r.Import(ImportOptions{Format: FormatCodex, Paths: []string{src}, ChunkBytes: chunk})
	if err != nil {
		t.Fatal(err)
	}
	f := fileByPath(t, rep, src)
	if f.Status != ImportNew || f.Session == nil {
		t.Fatalf("imported: %+v", f)
	}
	var buf bytes.Buffer
	if _, err := r.ExportSource(*f.Session, &buf); err != nil || !bytes.Equal(buf.Bytes(), plain) {
		t.Fatalf("exported %d byte(s) of %d (%v)", buf.Len(), len(plain), err)
	}
}

// A zstd-compressed file named .jsonl (compressed by hand, or by a tool
// that kept the name) read as one line never ended: "its first line is
// still being written: nothing to import yet", then never imported, exit
// 0. It fails, saying it is compressed and what to do; read whole or in
// chunks, Codex or Claude Code alike. A frame damaged inside (its
// checksum does not match) says it is damaged and what to do, not the
// decoder's words alone.
func TestZstdRolloutNamedPlainAndDamagedFrame(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	plain := []byte(`{"timestamp":"2026-01-02T10:00:00Z","type":"session_meta","payload":{"id":"` + codexMainID + `","cwd":"/w","source":"cli"}}` + "\n")
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	packed := enc.EncodeAll(plain, nil)
	for _, c := range []struct{ format, path, how string }{
		{FormatCodex, "/c/rollout-2026-01-02T03-04-05-" + codexMainID + ".jsonl", "rename it to end in .jsonl.zst"},
		{FormatClaudeCode, "/p/-w/" + codexMainID + ".jsonl", "`zstd -d` it to a plain .jsonl"},
	} {
		writeSourceFile(t, fsys, c.path, packed)
		for _, chunk := range []int{0, 16} {
			rep, err := r.Import(ImportOptions{Format: c.format, Paths: []string{c.path}, ChunkBytes: chunk})
			if err != nil {
				t.Fatal(err)
			}
			f := fileByPath(t, rep, c.path)
			if f.Status != ImportFailed || !strings.HasPrefix(f.Note, "zstd-compressed, though not named .zst") || !strings.Contains(f.Note, c.how) {
				t.Errorf("%s, chunk %d: %+v", c.path, chunk, f)
			}
		}
	}
	damaged := slices.Clone(packed)
	damaged[len(damaged)-1] ^= 1 // in the frame's checksum
	src := "/c/rollout-2026-01-02T03-04-05-" + codexMainID + ".jsonl.zst"
	writeSourceFile(t, fsys, src, damaged)
	rep, err := r.Import(ImportOptions{Format: FormatCodex, Paths: []string{src}})
	if err != nil {
		t.Fatal(err)
	}
	if f := fileByPath(t, rep, src); f.Status != ImportFailed || !strings.HasPrefix(f.Note, "decompress: the zstd data is damaged") || !strings.Contains(f.Note, "put back a good copy") {
		t.Errorf("a damaged frame: %+v", f)
	}
}
