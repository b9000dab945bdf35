package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/fuzzseed"
	"github.com/rookhq/rook/internal/vfs"
)

// TestRenderImportedCorpus: every line of the real transcripts and of the
// hand-made rollouts renders as text, none falls back to the line itself.
func TestRenderImportedCorpus(t *testing.T) {
	var files []string
	for _, dir := range []string{corpusDir, "testdata/codex"} {
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && strings.HasSuffix(p, ".jsonl") {
				files = append(files, p)
			}
			return nil
		})
	}
	if _, err := os.Stat(corpusDir); err != nil {
		t.Logf("no corpus at %s (%v): the hand-made rollouts only", corpusDir, err)
	} else if len(files) < 20 {
		t.Fatalf("%d transcript files found", len(files))
	}
	lines := 0
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 64<<20)
		for n := 1; sc.Scan(); n++ {
			if json.Valid(sc.Bytes()) && !renders(sc.Bytes()) {
				t.Errorf("%s:%d not rendered: %.200s", p, n, sc.Bytes())
			}
			lines++
		}
		f.Close()
	}
	t.Logf("%d lines of %d files rendered", lines, len(files))
}

// renderSeeds are lines whose rendering tests below pin, and which seed
// FuzzRenderImported.
var renderSeeds = []string{
	`{"type":"user","message":{"role":"user","content":"\n  \nhello there"}}`,
	`{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"\n\n"},{"type":"tool_use","name":"Edit","input":{"file_path":"a.go","old_string":"x\ny","new_string":"z","replace_all":false}}]}}`,
	`{"type":"user","message":{"content":[{"type":"tool_result","content":[{"type":"text","text":"out"},{"type":"image"}],"is_error":true}]}}`,
	`{"type":"progress","data":{"type":"hook_progress","hookName":"PreToolUse:Bash","command":"x.sh"}}`,
	`{"type":"progress","data":{"type":"bash_progress","output":"line 1\nline 2"}}`,
	`{"type":"file-history-snapshot","snapshot":{"trackedFileBackups":{"b.go":{},"a.go":{}}}}`,
	`{"type":"system","subtype":"compact_boundary","content":"Conversation compacted"}`,
	`{"type":"summary","summary":"Fixing the build"}`,
	`{"type":"queue-operation","content":"<task>done</task>"}`,
	`{"timestamp":"t","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"ls\"],\"workdir\":\"/w\"}"}}`,
	`{"timestamp":"t","type":"response_item","payload":{"type":"custom_tool_call_output","output":"{\"output\":\"done\\n\",\"metadata\":{}}"}}`,
	`{"timestamp":"t","type":"response_item","payload":{"type":"local_shell_call","action":{"command":["bash","-lc","ls"]}}}`,
	`{"timestamp":"t","type":"response_item","payload":{"type":"reasoning","summary":[{"type":"summary_text","text":"**Plan**"}]}}`,
	`{"timestamp":"t","type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":5,"output_tokens":2}}}}`,
	`{"type":"user","message":{"content":7}}`,
	`{"type":"assistant","message":{"content":[{"type":"text"}]}}`,
	`not json`,
	`{"type":"summary","summary":5}`,
	`{"type":"user","message":{"content":[{"type":"tool_result","content":[{"type":"text"}]}]}}`,
	`{"type":"user","message":{"content":[{"type":"tool_result","content":[{"type":"tool_result","content":[{"type":"tool_result","content":[{"type":"text","text":"deep"}]}]}]}]}}`,
	`{"timestamp":"t","type":"response_item","payload":{"type":"function_call_output","output":"{\"output\":\"boom\\n\",\"metadata\":{\"exit_code\":1}}"}}`,
	`{"timestamp":"t","type":"response_item","payload":{"type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"think"}],"encrypted_content":"gAAA"}}`,
	`{"type":"assistant","message":{"content":[{"type":"refusal","refusal":"no"}]}}`,
	`{"timestamp":"t","type":"response_item","payload":{"type":"local_shell_call","action":{"command":["bash","-lc","echo 'a b'; rm x"]}}}`,
	`{"type":"user","message":{"content":[]}}`,
	`{"type":"user","message":{"content":"a\u001b[31mb\u0000"}}`,
	`{"type":"assistant","message":{"content":[{"type":"tool_use","name":"MultiEdit","input":{"file_path":"/a.go","edits":[{"old_string":"a\nb","new_string":"c"},{"old_string":"x","new_string":"y","replace_all":true}]}}]}}`,
	`{"timestamp":"t","type":"response_item","payload":{"type":"function_call","name":"update_plan","arguments":"{\"plan\":[{\"step\":\"one\",\"status\":\"completed\"},{\"step\":\"two\",\"status\":\"pending\"}]}","call_id":"c"}}`,
	`{"type":"assistant","message":{"content":[{"type":"tool_use","name":"X","input":{"a":{"b":{"c":{"d":{"e":{"f":1}}}}},"l":["x","y\nz","a: b","- c","true","",{"k":"v"}],"t":{"s":"true","u":" pad","w":"one\n\nthree"},"e":[],"o":{},"command":[]}}]}}`,
	`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":"","is_error":false}]},"toolUseResult":{"stdout":"","stderr":""}}`,
	`{"timestamp":"t","type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":"{\"output\":\"\\n\",\"metadata\":{\"exit_code\":1}}"}}`,
	`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t"}]}}`,
	`{"timestamp":"t","type":"event_msg","payload":{"type":"user_message","message":"  \nFix it","images":[]}}`,
	`{"type":"system","subtype":"local_command","content":"<local-command-stdout>Set model to \u001b[1mOpus\u001b[22m \u001b[2J\u001b[</local-command-stdout>"}`,
	`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"found it"}]}]},"toolUseResult":{"status":"completed","totalDurationMs":57709,"totalTokens":49100,"totalToolUseCount":25,"usage":{"input_tokens":6,"cache_creation_input_tokens":4896,"cache_read_input_tokens":40725,"output_tokens":3473}}}`,
	// An older Codex's lines, with no envelope: the header, a state
	// record, bare items.
	`{"id":"5973b6c0","timestamp":"2025-05-12T10:20:30.123Z","instructions":"You are Codex.","git":{"branch":"main"}}`,
	`{"record_type":"state"}`,
	`{"type":"message","role":"user","content":[{"type":"input_text","text":"List the Go files"}]}`,
	`{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Listing files"}],"encrypted_content":"gAAAAB"}`,
	`{"type":"function_call","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"call_1"}`,
	`{"type":"function_call_output","call_id":"call_1","output":"{\"output\":\"main.go\\n\",\"metadata\":{\"exit_code\":0}}"}`,
	// An MCP result with an image, JSON written in the output string.
	`{"timestamp":"t","type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":"{\"content\":[{\"type\":\"image\",\"data\": \"iVBORw0KGgoAAAANSUhEUgAAQUJDRAQUJDRAQUJDRAQUJDRAQUJDRAQUJDRAQUJDRAQUJDRA\"},{\"type\":\"text\",\"text\":\"data:image/png;base64,QUJD\"}]}"}}`,
	// A newer Codex's output with an image: its content items.
	`{"timestamp":"t","type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"took a screenshot"},{"type":"input_image","image_url":"data:image/png;base64,QUJD"}]}}`,
	`{"timestamp":"t","type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":[]}}`,
	`{"timestamp":"t","type":"event_msg","payload":{"type":"thread_name_updated","thread_id":"x","thread_name":"Zebra fix"}}`,
	`{"timestamp":"t","type":"event_msg","payload":{"type":"thread_name_updated","thread_id":"x"}}`,
	// a command Codex ran, and how it ended
	`{"timestamp":"t","type":"event_msg","payload":{"type":"exec_command_end","call_id":"c","command":["bash","-lc","go vet"],"stdout":"","stderr":"vet: x.go:3: unreachable code\n","aggregated_output":"","exit_code":2,"status":"failed"}}`,
}

// TestRenderImported pins the rendering of each kind of line, and that a
// line it cannot render is shown as it is.
func TestRenderImported(t *testing.T) {
	want := []string{
		"hello there\n",
		"[thinking]\nhmm\n(empty text)\n[tool_use Edit]\nfile_path: a.go\nold_string:\nx\ny\nnew_string: z\nreplace_all: false\n",
		"[tool_result, error]\nout\n[image]\n",
		"[progress hook_progress] PreToolUse:Bash: x.sh\n",
		"[progress bash_progress] line 1\n",
		"[file-history snapshot] 2 file(s)\na.go\nb.go\n",
		"[system compact_boundary]\nConversation compacted\n",
		"[summary] Fixing the build\n",
		"[queue-operation] <task>done</task>\n",
		"[function_call shell]\ncommand: ls\nworkdir: /w\n", // a command's words as a shell reads them
		"[custom_tool_call_output]\ndone\n",
		"[local_shell_call]\nbash -lc ls\n",
		"[reasoning]\n**Plan**\n",
		"[token_count] 5 in, 2 out\n",
		renderSeeds[14] + "\n",
		renderSeeds[15] + "\n",
		"not json\n",
		renderSeeds[17] + "\n",
		"[tool_result]\n[{\"type\":\"text\"}]\n", // a result's blocks it cannot read: as written
		// results inside results: two levels, then as written
		"[tool_result]\n[tool_result]\n[{\"type\":\"tool_result\",\"content\":[{\"type\":\"text\",\"text\":\"deep\"}]}]\n",
		"[function_call_output]\n(exit code 1)\nboom\n",
		"[reasoning]\nthink\n",
		"[refusal] no\n",
		"[local_shell_call]\nbash -lc 'echo '\\''a b'\\''; rm x'\n",
		"(no content)\n",
		"ab\uFFFD\n", // control characters never reach a terminal or a page (a color is left out)
		// arrays and objects in arguments: indented lists, their texts
		// as written (a text of several lines a block under its key)
		"[tool_use MultiEdit]\nfile_path: /a.go\nedits:\n  - old_string:\n      a\n      b\n    new_string: c\n  - old_string: x\n    new_string: y\n    replace_all: true\n",
		"[function_call update_plan]\nplan:\n  - step: one\n    status: completed\n  - step: two\n    status: pending\n",
		// four levels, then as written; empty ones as written
		// texts that could be read as something else are quoted
		"[tool_use X]\na:\n  b:\n    c:\n      d:\n        e: {\"f\":1}\nl:\n  - x\n  - \"y\\nz\"\n  - \"a: b\"\n  - \"- c\"\n  - \"true\"\n  - \"\"\n  - k: v\nt:\n  s: \"true\"\n  u: \" pad\"\n  w:\n    one\n\n    three\ne: []\no: {}\ncommand: []\n",
		// a command that printed nothing says so
		"[tool_result]\n(no output)\n",
		"[function_call_output]\n(exit code 1)\n",
		"[tool_result]\n(no output)\n",
		"[user_message]\nFix it\n", // a message's blank lines before its text left out
		// a terminal's styles left out, any other sequence made harmless
		"[system local_command]\n<local-command-stdout>Set model to Opus \uFFFD[2J\uFFFD[</local-command-stdout>\n",
		// a Task result says first what its subagent's run took, and its
		// last message's usage (its own file's usage is each message's
		// first streamed chunk)
		"[subagent] 25 tool uses, 57.7 s; last message: 49100 tokens (in 6, cache read 40725, cache written 4896, out 3473)\n[tool_result]\nfound it\n",
		// an older Codex's lines: as the same in an envelope
		"[session_meta] 5973b6c0\n",
		"[record_type] state\n",
		"List the Go files\n",
		"[reasoning]\nListing files\n",
		"[function_call shell]\ncommand: ls\n",
		"[function_call_output]\nmain.go\n",
		// an image in JSON in a tool's output: a marker
		"[function_call_output]\n" + `{"content":[{"type":"image","data": "[image 72 B]"},{"type":"text","text":"[image 26 B]"}]}` + "\n",

		// one written as content items: their text, an image a marker
		"[function_call_output]\ntook a screenshot\n[input_image]\n",
		"[function_call_output]\n(no content)\n",
		// the name the user gave the thread, or took away
		"[thread_name_updated] Zebra fix\n",
		"[thread_name_updated] (no name)\n",
		"[exec_command_end, exit code 2] bash -lc 'go vet'\nvet: x.go:3: unreachable code\n",
	}
	for i, line := range renderSeeds {
		if got := string(RenderImported([]byte(line + "\n"))); got != want[i] {
			t.Errorf("line %d: got\n%q\nwant\n%q", i, got, want[i])
		}
	}
	// An event of several lines: one-line renderings close together, a
	// longer one set apart.
	body := strings.Join([]string{renderSeeds[3], renderSeeds[3], renderSeeds[0], renderSeeds[7]}, "\n") + "\n"
	wantBody := "[progress hook_progress] PreToolUse:Bash: x.sh\n[progress hook_progress] PreToolUse:Bash: x.sh\nhello there\n[summary] Fixing the build\n"
	if got := string(RenderImported([]byte(body))); got != wantBody {
		t.Errorf("several lines: got\n%q\nwant\n%q", got, wantBody)
	}
	body = renderSeeds[3] + "\n" + renderSeeds[1] + "\n" + renderSeeds[7]
	if got := string(RenderImported([]byte(body))); !strings.Contains(got, "x.sh\n\n[thinking]") || !strings.Contains(got, "false\n\n[summary]") {
		t.Errorf("a long rendering is not set apart:\n%s", got)
	}
}

// TestRenderImportedDetails: a line whose text is not all it says shows
// what it records beside it: a turn's duration, what started a compaction
// and the context it compacted, a queued prompt's operation, the summary
// of a background task's notice, the files a Codex patch updated.
func TestRenderImportedDetails(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{`{"type":"system","subtype":"turn_duration","durationMs":2729883}`, "[system turn_duration] 45m29.9s\n"},
		{`{"type":"system","subtype":"turn_duration","durationMs":420}`, "[system turn_duration] 420ms\n"},
		{`{"type":"system","subtype":"turn_duration","durationMs":"soon"}`, "[system turn_duration]\n"},
		{`{"type":"system","subtype":"compact_boundary","content":"Conversation compacted","compactMetadata":{"trigger":"auto","preTokens":167094}}`,
			"[system compact_boundary]\nConversation compacted (auto, 167094 tokens before)\n"},
		{`{"type":"system","subtype":"compact_boundary","content":"Conversation compacted","compactMetadata":7}`,
			"[system compact_boundary]\nConversation compacted\n"},
		{`{"type":"queue-operation","operation":"enqueue","content":"check again"}`, "[queue-operation enqueue] check again\n"},
		{`{"type":"queue-operation","operation":"remove"}`, "[queue-operation remove]\n"},
		{`{"type":"queue-operation","operation":"enqueue","content":"<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>\n<summary>Background command \"Run the tests\" completed (exit code 0)</summary>\n</task-notification>\nRead the output file"}`,
			"[queue-operation enqueue] Background command \"Run the tests\" completed (exit code 0)\n"},
		{`{"timestamp":"t","type":"event_msg","payload":{"type":"patch_apply_end","call_id":"c","stdout":"Success. Updated the following files:\nM eventlog/log.go\nA eventlog/new.go\n","stderr":"","success":true}}`,
			"[patch_apply_end] Success. Updated the following files: M eventlog/log.go A eventlog/new.go\n"},
		{`{"timestamp":"t","type":"event_msg","payload":{"type":"patch_apply_end","call_id":"c","stdout":"","stderr":"Failed to find context\n@@ func x","success":false}}`,
			"[patch_apply_end, failed] Failed to find context @@ func x\n"},
		// A command Codex ran (exec_command_begin/end, what its Extended
		// persistence keeps): the command and how it ended, then the
		// first line of what it printed, not a bare tag (an empty stdout
		// hid a failure's stderr).
		{`{"timestamp":"t","type":"event_msg","payload":{"type":"exec_command_begin","call_id":"c","turn_id":"t1","command":["bash","-lc","go test ./..."],"cwd":"/w","parsed_cmd":[{"type":"unknown","cmd":"go test ./..."}]}}`,
			"[exec_command_begin] bash -lc 'go test ./...'\n"},
		{`{"timestamp":"t","type":"event_msg","payload":{"type":"exec_command_end","call_id":"c","turn_id":"t1","command":["bash","-lc","npm test"],"cwd":"/w","stdout":"","stderr":"npm ERR! missing script: test\n","aggregated_output":"npm ERR! missing script: test\n","exit_code":1,"duration":{"secs":0,"nanos":300000000},"formatted_output":"npm ERR! missing script: test\n","status":"failed"}}`,
			"[exec_command_end, exit code 1] bash -lc 'npm test'\nnpm ERR! missing script: test\n"},
		{`{"timestamp":"t","type":"event_msg","payload":{"type":"exec_command_end","call_id":"c","command":["ls"],"stdout":"a.go\nb.go\n","stderr":"","exit_code":0,"formatted_output":"a.go\nb.go\n"}}`,
			"[exec_command_end] ls\na.go\n"},
		{`{"timestamp":"t","type":"event_msg","payload":{"type":"exec_command_end","call_id":"c","command":["true"],"stdout":"","stderr":"","aggregated_output":"","exit_code":0}}`,
			"[exec_command_end] true\n(no output)\n"},
		{`{"timestamp":"t","type":"event_msg","payload":{"type":"exec_command_end","call_id":"c","command":["rm","-rf","/"],"exit_code":-1,"status":"declined"}}`,
			"[exec_command_end, declined] rm -rf /\n(no output)\n"},
		// Every hook a stop ran, not only the first; what failed, and a
		// hook that kept the agent going.
		{`{"type":"system","subtype":"stop_hook_summary","hookCount":3,"hookInfos":[{"command":"~/.claude/hooks/mark.sh"},{"command":"bun run ./dist/on-stop-test.js"},{"command":"stop-hook.sh"}],"hookErrors":[],"preventedContinuation":false,"stopReason":"","hasOutput":true,"level":"suggestion"}`,
			"[system stop_hook_summary] 3 hook(s): ~/.claude/hooks/mark.sh; bun run ./dist/on-stop-test.js; stop-hook.sh\n"},
		{`{"type":"system","subtype":"stop_hook_summary","hookInfos":[{"command":"test.sh"}],"hookErrors":["test.sh: exit 2: 3 tests fail"],"preventedContinuation":true,"stopReason":"the tests fail"}`,
			"[system stop_hook_summary] 1 hook(s): test.sh; 1 error(s): test.sh: exit 2: 3 tests fail; prevented stopping: the tests fail\n"},
		{`{"type":"system","subtype":"stop_hook_summary","hookInfos":7}`, "[system stop_hook_summary]\n"},
		// A Codex token count with only the session's total: not 0 and 0.
		{`{"timestamp":"t","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":50,"output_tokens":20}}}}`,
			"[token_count] session total 50 in, 20 out\n"},
		{`{"timestamp":"t","type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":5,"output_tokens":2},"total_token_usage":{"input_tokens":50,"output_tokens":20}}}}`,
			"[token_count] 5 in, 2 out\n"},
	} {
		if got := string(RenderImported([]byte(c.line + "\n"))); got != c.want {
			t.Errorf("%s: got\n%q\nwant\n%q", c.line, got, c.want)
		}
	}
}

// renders says whether a line reads as one of the shapes the view knows,
// read as the view reads it: past a byte order mark or a crash's NULs
// (entryBytes).
func renders(line []byte) bool {
	r := renderer{headers: true}
	return r.line(entryBytes(line))
}

// FuzzRenderImported: any body renders without failing, as valid UTF-8
// with no control character but newline and tab, and every line that does
// not render is in the view as it is (cleaned the same way).
func FuzzRenderImported(f *testing.F) {
	for _, s := range renderSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(strings.Join(renderSeeds, "\n")))
	f.Fuzz(func(t *testing.T, body []byte) {
		view := RenderImported(body)
		if len(body) > 0 && len(view) == 0 {
			t.Fatalf("%q renders as nothing", body)
		}
		if !utf8.Valid(view) || bytes.ContainsFunc(view, func(c rune) bool { return c < 0x20 && c != '\n' && c != '\t' || c == 0x7f }) {
			t.Fatalf("%q renders as %q", body, view)
		}
		for _, line := range bytes.Split(bytes.TrimRight(body, "\r\n"), []byte("\n")) {
			line = bytes.TrimRight(line, "\r")
			// A line the view cannot render is in it as it is, but for
			// its encoded state (withoutEncoded: markers in its place).
			if !renders(line) && !bytes.Contains(view, cleanView(bytes.TrimRight(withoutEncoded(line), " \n"))) {
				t.Fatalf("line %q is not in its view %q", line, view)
			}
		}
		previewOfImported(eventlog.Event{}, body)
		// What search reads of it: every line that is not JSON as it is.
		// A line is read as the mappers read it (entryBytes): NULs a
		// crash left before an entry are junk, not text.
		text := textOfImported(body)
		for _, line := range bytes.Split(body, []byte("\n")) {
			if _, ok := stringValues(entryBytes(line), 3); !ok && !bytes.Contains(text, line) {
				t.Fatalf("line %q is not in what search reads %q", line, text)
			}
		}
	})
}

// FuzzFindSnippet: the snippet of a hit in an imported body, as find
// makes it (decodedSnippet) for a match found as the query is written or
// as JSON escapes it, from any point a search resumes at, is clean text
// that holds the query at the match; never a panic.
func FuzzFindSnippet(f *testing.F) {
	for _, s := range renderSeeds {
		f.Add([]byte(s), "a", uint16(0))
		f.Add([]byte(s), `"`, uint16(40))
	}
	f.Add([]byte(`{"a":"x\"q\\\nq"}`), `"q\`, uint16(0))
	f.Fuzz(func(t *testing.T, body []byte, query string, start uint16) {
		if ValidateQuery(query) != nil {
			return
		}
		from := min(int(start), len(body))
		m := newFoldMatcher(query)
		e := appendJSONString(nil, []byte(query))
		for _, matcher := range []*foldMatcher{m, newFoldMatcher(string(e[1 : len(e)-1]))} {
			at, end, _ := matcher.index(body, from, len(body), nil)
			if at < 0 {
				continue
			}
			// As find does: a match in encoded state is none, and the
			// line's encoded values are shown as markers.
			enc := encodedLines{body: body}
			if enc.overlap(at, end) >= 0 {
				continue
			}
			enc.line(at)
			text, ok := decodedSnippet(body, at, m, enc.spans)
			if !ok {
				continue
			}
			if !utf8.ValidString(text) || strings.ContainsFunc(text, func(c rune) bool { return c < 0x20 || c == 0x7f }) {
				t.Fatalf("%q, %q at %d: snippet %q", body, query, at, text)
			}
			clean := []byte(text)
			if at, _, _ := newFoldMatcher(cleanSnippetQuery(query)).index(clean, 0, len(clean), nil); utf8.RuneCountInString(query) < SnippetRunes-snippetBefore && at < 0 && strings.TrimSpace(query) != "" {
				t.Fatalf("%q, %q: snippet %q does not hold the query", body, query, text)
			}
		}
	})
}

// cleanSnippetQuery is a query as a snippet shows it: control characters
// replaced as Snippet replaces them, and without the spaces around it (a
// snippet that ends the text drops its trailing ones).
func cleanSnippetQuery(q string) string {
	return strings.TrimSpace(strings.Map(cleanRune, q))
}

func TestWriteRenderFuzzSeeds(t *testing.T) {
	seeds := [][]byte{}
	for _, s := range renderSeeds {
		seeds = append(seeds, []byte(s))
	}
	fuzzseed.Write(t, map[string][][]byte{"FuzzRenderImported": seeds})
}

// TestShowAndExportRenderImported: show and the HTML export read an
// imported event as its reading view, show --raw as the bytes stored; an
// event of a session rook wrote itself is never rendered.
func TestShowAndExportRenderImported(t *testing.T) {
	src, err := filepath.Abs(filepath.Join("testdata", "codex", "rollout-2026-01-02T03-20-00-019b7d4e-2b3c-7d4e-8f5a-6b7c8d9e0f1a.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	r := diskRook(t, filepath.Join(t.TempDir(), "store"))
	rep := mustImport(t, r, FormatCodex, src)
	id := *rep.Files[0].Session
	shown, err := r.Show(id, ShowQuery{Limit: 100, MaxBody: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := r.Show(id, ShowQuery{Limit: 100, MaxBody: 1 << 20, Raw: true})
	if err != nil {
		t.Fatal(err)
	}
	x, err := r.ExportRange(id, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(shown.Events) == 0 || len(shown.Events) != len(raw.Events) || len(x.Events) != len(raw.Events) {
		t.Fatalf("%d events shown, %d raw, %d exported", len(shown.Events), len(raw.Events), len(x.Events))
	}
	for i, v := range shown.Events {
		body, err := r.Body(v.Event)
		if err != nil {
			t.Fatal(err)
		}
		view := RenderImported(body)
		if !v.Rendered || !bytes.Equal(v.Text, view) || v.Size != int64(len(body)) {
			t.Errorf("#%d shown: rendered %v %q, want %q", v.Seq, v.Rendered, v.Text, view)
		}
		if rv := raw.Events[i]; rv.Rendered || !bytes.Equal(rv.Text, body) {
			t.Errorf("#%d raw: rendered %v %q, want %q", v.Seq, rv.Rendered, rv.Text, body)
		}
		if xe := x.Events[i]; !xe.Rendered || !bytes.Equal(xe.Body, view) || xe.Cut != 0 {
			t.Errorf("#%d exported: rendered %v %q, want %q", v.Seq, xe.Rendered, xe.Body, view)
		}
	}
	// A short --max-body cuts the view, and counts what it left out of it.
	cut, err := r.Show(id, ShowQuery{Limit: 1, MaxBody: 5})
	if err != nil {
		t.Fatal(err)
	}
	if v := cut.Events[0]; len(v.Text) != 5 || int(v.Omitted) != len(RenderImported(mustBody(t, r, v.Event)))-5 {
		t.Errorf("cut: %q, %d omitted", v.Text, v.Omitted)
	}

	// A session of rook's own: its bodies as written.
	own, err := r.NewSession("own", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Append(own.ID, Entry{Kind: eventlog.KindUser, Body: []byte(`{"type":"summary","summary":"not a transcript"}`)}); err != nil {
		t.Fatal(err)
	}
	p, err := r.Show(own.ID, ShowQuery{Limit: 1, MaxBody: 100})
	if err != nil {
		t.Fatal(err)
	}
	if v := p.Events[0]; v.Rendered || string(v.Text) != `{"type":"summary","summary":"not a transcript"}` {
		t.Errorf("own session: rendered %v %q", v.Rendered, v.Text)
	}
}

func mustBody(t *testing.T, r *Rook, ev eventlog.Event) []byte {
	t.Helper()
	b, err := r.Body(ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPreviewOfImported: a history line previews the view from its first
// line that says more than a tag, or the tag when that is all there is.
func TestPreviewOfImported(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{renderSeeds[1], "hmm"},
		{`{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash","input":{"command":"make"}}]}}`, "command: make"},
		{renderSeeds[3], "[progress hook_progress] PreToolUse:Bash: x.sh"},
		{`{"timestamp":"t","type":"event_msg","payload":{"type":"task_started"}}`, "[task_started]"},
		{`{"type":"user","message":{"content":"[Request interrupted by user]"}}`, "[Request interrupted by user]"},
		{`{"type":"user","message":{"content":"[WIP]\nfix it"}}`, "[WIP]"}, // a prompt's own brackets are text
		// Claude Code's notice of a background task's end, written in the
		// user's place: its summary, not the tag its first line is
		{`{"type":"user","message":{"role":"user","content":"<task-notification>\n<task-id>b1</task-id>\n<output-file>/tmp/b1.output</output-file>\n<status>completed</status>\n<summary>Background command \"Run the tests\" completed (exit code 0)</summary>\n</task-notification>\nRead the output file to retrieve the result: /tmp/b1.output"}}`,
			`[task-notification] Background command "Run the tests" completed (exit code 0)`},
		{`{"type":"user","message":{"role":"user","content":[{"type":"text","text":"<task-notification>\n<task-id>b1</task-id>\n<summary>Background command \"x\" failed (exit code 1)</summary>\n</task-notification>"}]}}`,
			`[task-notification] Background command "x" failed (exit code 1)`},
		{`{"type":"user","message":{"role":"user","content":"<task-notification>\n<task-id>b1</task-id>\n</task-notification>"}}`, "<task-notification>"}, // no summary: as it is
		// a slash command as the user typed it, not the tags Claude Code
		// wraps it in
		{`{"type":"user","message":{"role":"user","content":"<command-message>beads:create</command-message>\n<command-name>/beads:create</command-name>\n<command-args>set up credo\n\nand dialyzer</command-args>"}}`, "/beads:create set up credo"},
		{`{"type":"user","message":{"role":"user","content":"<command-name>/mcp</command-name>\n            <command-message>mcp</command-message>\n            <command-args></command-args>"}}`, "/mcp"},
		{`{"type":"user","message":{"role":"user","content":"<command-message>x</command-message>"}}`, "<command-message>x</command-message>"}, // no name: as it is
		// a text of several lines previews as its first, after its key
		{`{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash","input":{"command":"\ncd /w &&\n  make test","description":"Run the tests"}}]}}`, "command: cd /w &&"},
		// a list previews as its first text
		{renderSeeds[27], "plan: one"},
		{`{"type":"assistant","message":{"content":[{"type":"tool_use","name":"TodoWrite","input":{"todos":[{"content":"\nWrite the test","status":"pending","activeForm":"Writing the test"}]}}]}}`, "todos: Write the test"},
		{`{"type":"assistant","message":{"content":[{"type":"tool_use","name":"X","input":{"l":[{"n":1,"s":"  "},{"s":"two"}]}}]}}`, "l: two"}, // blank texts skipped
		{`{"type":"assistant","message":{"content":[{"type":"tool_use","name":"X","input":{"ids":[1,2]}}]}}`, "ids: [1,2]"},
		{renderSeeds[29], "(no output)"},
		{`{"type":"progress","data":{"type":"bash_progress","output":"","fullOutput":"","elapsedTimeSeconds":3,"totalLines":0,"timeoutMs":600000}}`, "[progress bash_progress] running 3s, 0 line(s) of output"},
		{`{"timestamp":"t","type":"event_msg","payload":{"type":"turn_aborted","reason":"interrupted"}}`, "[turn_aborted] interrupted"},
		// a task sent as mail between agents: its payload, not the header
		// Codex puts first
		{`{"timestamp":"t","type":"inter_agent_communication","payload":{"author":"/root","recipient":"/root/w","content":"Message Type: NEW_TASK\nTask name: /root/w\nSender: /root\nPayload:\nfind the callers","trigger_turn":true}}`, "find the callers"},
		{`{"timestamp":"t","type":"inter_agent_communication","payload":{"author":"/root/w","recipient":"/root","content":"all done"}}`, "all done"},
		{`{"timestamp":"t","type":"event_msg","payload":{"type":"task_complete","last_agent_message":"Done: fixed"}}`, "[task_complete] Done: fixed"},
		{`{"type":"progress","data":{"type":"waiting_for_task","taskDescription":"Run the tests","taskType":"local_bash"}}`, "[progress waiting_for_task] Run the tests"}, // not the block's bare name
		{`{"timestamp":"t","type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":""}}`, "(no output)"},
		{`{"timestamp":"t","type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":"Exit code: 0\nWall time: 0 seconds\nOutput:\n"}}`, "(no output)"},
		{renderSeeds[20], "(exit code 1) boom"}, // the code and the output on the line a preview shows
		// a Codex command's output, not the lines its tool puts first
		{`{"timestamp":"t","type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":"Exit code: 0\nWall time: 0.5 seconds\nOutput:\nok  \tpkg\n"}}`, "ok   pkg"},
		{`{"timestamp":"t","type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":"Exit code: 2\nWall time: 1 seconds\nOutput:\nboom\n"}}`, "(exit code 2) boom"},
		{`{"timestamp":"t","type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":"Exit code: 0\nsomething else\nOutput:\nx"}}`, "Exit code: 0"}, // another shape: as it is
		// a command's words are text too
		{`{"timestamp":"t","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"timeout_ms\":5,\"command\":[\"ls\",\"-l\"],\"workdir\":\"/w\"}"}}`, "command: ls -l"},
		{`{"timestamp":"t","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[1,2],\"workdir\":\"/w\"}"}}`, "workdir: /w"}, // not words
		// text arguments first: the path says more than the flag
		{`{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Edit","input":{"replace_all":false,"file_path":"/a.go","old_string":"x"}}]}}`, "file_path: /a.go"},
	} {
		if got := Preview(previewOfImported(eventlog.Event{}, []byte(c.body)), PreviewRunes); got != c.want {
			t.Errorf("%s: preview %q, want %q", c.body, got, c.want)
		}
	}
}

// TestRenderShowsNoEncodedState: a line the reading view has no shape for
// is shown as it is, but for its encoded state (a signature, an image's
// base64, encrypted reasoning): a marker in its place, in show, quote and
// history previews alike.
func TestRenderShowsNoEncodedState(t *testing.T) {
	sig := "EsMCCkYIBxgCKkB" + strings.Repeat("c2lnbmVk", 20)
	png := "iVBORw0KGgoAAAANSUhEUgAA" + strings.Repeat("QUJDRA", 100)
	// "text": 7 is not a text block: the line does not decode.
	line := `{"type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"` + sig + `"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + png + `"}},{"type":"text","text":7}]},"uuid":"u1"}`
	want := `{"type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"[signature 175 B]"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"[image 624 B]"}},{"type":"text","text":7}]},"uuid":"u1"}` + "\n"
	if got := string(RenderImported([]byte(line + "\n"))); got != want {
		t.Errorf("rendered:\n%s\nwant:\n%s", got, want)
	}
	codex := `{"timestamp":"t","type":"response_item","payload":{"type":"reasoning","summary":7,"encrypted_content":"gAAAAABpZW5j` + strings.Repeat("ZW5jcnlw", 8) + `"}}`
	if got := string(RenderImported([]byte(codex + "\n"))); strings.Contains(got, "gAAAA") || !strings.Contains(got, `"encrypted_content":"[encrypted 76 B]"`) {
		t.Errorf("codex: %s", got)
	}
	// A short word under one of the keys is text, not encoded state.
	short := `{"timestamp":"t","type":"response_item","payload":{"type":"reasoning","summary":7,"data":"none"}}`
	if got := string(RenderImported([]byte(short + "\n"))); !strings.Contains(got, `"data":"none"`) {
		t.Errorf("a short value under data: %s", got)
	}
	// A tool's output, shown as printed, may be JSON with an image in it:
	// an MCP result in Codex's output string, a Claude Code tool result.
	mcp := `{"timestamp":"t","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"{\"content\":[{\"type\":\"image\",\"data\":\"` + png + `\",\"mimeType\":\"image/png\"},{\"type\":\"text\",\"text\":\"data:image/png;base64,` + png + `\"}],\"isError\":false}"}}`
	if got, want := string(RenderImported([]byte(mcp+"\n"))), "[function_call_output]\n"+`{"content":[{"type":"image","data":"[image 624 B]","mimeType":"image/png"},{"type":"text","text":"[image 646 B]"}],"isError":false}`+"\n"; got != want {
		t.Errorf("an MCP result:\n%s\nwant:\n%s", got, want)
	}
	cl := `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"{\"shot\": \"data:image/png;base64,` + png + `\", \"data\": \"` + png + `\"}"}]},"uuid":"u1"}`
	if got, want := string(RenderImported([]byte(cl+"\n"))), "[tool_result]\n"+`{"shot": "[image 646 B]", "data": "[image 624 B]"}`+"\n"; got != want {
		t.Errorf("a tool result:\n%s\nwant:\n%s", got, want)
	}
	// A glimpse of a line (importedText) passes over a data URL.
	if got := string(importedText([]byte(`{"content":"data:image/png;base64,` + png + `","text":"hello"}`))); got != "hello" {
		t.Errorf("glimpse: %q", got)
	}
}

// TestRenderShowsADataURLOutputAsAMarker: a tool's output that is a base64
// data URL (an MCP screenshot, which Claude Code keeps as the
// tool_result's content string, or a Codex output string), and a tool's
// argument that is encoded state (base64 under "data", a data URL under
// any key), are shown as their markers, as find and search take them and
// as the view shows one under a key of JSON: show, export-html, history
// and quote printed the base64.
func TestRenderShowsADataURLOutputAsAMarker(t *testing.T) {
	png := "iVBORw0KGgoAAAANSUhEUgAA" + strings.Repeat("QUJDRA", 100)
	url := "data:image/png;base64," + png
	for _, tc := range []struct{ name, line, want string }{
		{"claude code tool result",
			`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"` + url + `"}]},"uuid":"u1"}`,
			"[tool_result]\n[image 646 B]\n"},
		{"codex output",
			`{"timestamp":"t","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"` + url + `"}}`,
			"[function_call_output]\n[image 646 B]\n"},
		{"codex arguments",
			`{"timestamp":"t","type":"response_item","payload":{"type":"function_call","name":"upload","call_id":"c1","arguments":"{\"data\":\"` + png + `\",\"shot\":\"` + url + `\",\"name\":\"a.png\"}"}}`,
			"[function_call upload]\ndata: [image 624 B]\nshot: [image 646 B]\nname: a.png\n"},
		{"nested argument",
			`{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"upload","input":{"file":{"data":"` + png + `","name":"a.png"},"shots":["` + url + `"]}}]},"uuid":"u1"}`,
			"[tool_use upload]\nfile:\n  data: [image 624 B]\n  name: a.png\nshots:\n  - [image 646 B]\n"},
	} {
		if got := string(RenderImported([]byte(tc.line + "\n"))); got != tc.want {
			t.Errorf("%s:\n%s\nwant:\n%s", tc.name, got, tc.want)
		}
	}
	// A short word under "data", and a text that only holds a data URL,
	// are text.
	short := `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"see ` + url + `"}]},"uuid":"u1"}`
	if got := string(RenderImported([]byte(short + "\n"))); !strings.Contains(got, "see data:image/png;base64,iVBOR") {
		t.Errorf("a text holding a data URL: %s", got)
	}
}

// A line with bytes that are not UTF-8 inside a string (a prompt pasted
// from a file in another encoding) is still its text to read: show,
// history and quote render it, each bad byte shown as U+FFFD, not the
// whole event as "(binary, N bytes)"; raw show and export keep the bytes.
func TestImportedLineWithBytesThatAreNotUTF8Renders(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	src := "/home/u/.claude/projects/-home-u-proj/s1.jsonl"
	lines := claudeLines("s1", 1)
	lines[0] = strings.Replace(lines[0], "fix the server", "fix the \xff\xfe server", 1)
	data := writeSource(t, fsys, src, lines, "")
	rep := mustImport(t, r, FormatClaudeCode, src)
	id := *fileByPath(t, rep, src).Session
	want := "fix the \ufffd\ufffd server, turn 1"
	p, err := r.Show(id, ShowQuery{Limit: 1, MaxBody: 1 << 10})
	if err != nil || p.Events[0].Binary || !p.Events[0].Rendered || !strings.Contains(string(p.Events[0].Text), want) {
		t.Errorf("show: %+v %v", p.Events, err)
	}
	first := uint64(0)
	if h, err := r.History(id, HistoryQuery{From: &first, Limit: 1}); err != nil || h.Events[0].Binary || h.Events[0].Preview != want {
		t.Errorf("history: %+v %v", h.Events, err)
	}
	if q, err := r.Quote(id, 0, 0); err != nil || q.Binary || !strings.Contains(string(q.Data), want) {
		t.Errorf("quote: %+v %v", q, err)
	}
	// Raw, the body is the bytes stored: binary, as before.
	if p, err := r.Show(id, ShowQuery{Limit: 1, MaxBody: 1 << 10, Raw: true}); err != nil || !p.Events[0].Binary || p.Events[0].Rendered {
		t.Errorf("raw show: %+v %v", p.Events, err)
	}
	// export-html renders it too.
	x, err := r.ExportRange(id, 0, nil)
	if err != nil || x.Events[0].Binary || !strings.Contains(string(x.Events[0].Body), want) {
		t.Errorf("export-html: %+v %v", x.Events, err)
	}
	mustExport(t, r, id, data)
}

// Mail between agents is headed by its type and, of its author and
// recipient, those it names: never an arrow between two blanks.
func TestRenderCodexMailHead(t *testing.T) {
	mail := func(author, recipient, content string) string {
		b, _ := json.Marshal(map[string]string{"author": author, "recipient": recipient, "content": content})
		return `{"timestamp":"t","type":"inter_agent_communication","payload":` + string(b) + `}`
	}
	const task = "Message Type: NEW_TASK\nTask name: /root/w\nSender: /root\nPayload:\nfind the callers"
	for _, c := range []struct{ line, want string }{
		{mail("/root", "/root/w", task), "[NEW_TASK /root → /root/w]\nfind the callers\n"},
		{mail("", "", task), "[NEW_TASK]\nfind the callers\n"},
		{mail("/root", "", task), "[NEW_TASK from /root]\nfind the callers\n"},
		{mail("", "/root/w", task), "[NEW_TASK to /root/w]\nfind the callers\n"},
		{mail("", "", "Message Type: FINAL_ANSWER\nTask name: /root\nSender: /root/w\nPayload:\ndone"), "[FINAL_ANSWER]\ndone\n"},
		{mail("", "", "all done"), "[inter_agent_communication]\nall done\n"},
		{mail("/root/w", "/root", "all done"), "[inter_agent_communication /root/w → /root]\nall done\n"},
	} {
		if got := string(RenderImported([]byte(c.line + "\n"))); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.line, got, c.want)
		}
	}
}

// A line that begins with blanks before its JSON is shown as what it is,
// as the mappers read it, not as written.
func TestRenderImportedAfterBlanks(t *testing.T) {
	line := `{"type":"user","message":{"role":"user","content":"hello there"}}`
	for _, pre := range []string{" ", "\t  ", "\xef\xbb\xbf "} {
		if got := string(renderBody([]byte(pre+line), true, false)); got != "hello there\n" {
			t.Errorf("%q before the line: %q", pre, got)
		}
	}
}

// TestRenderCodexCompactedSummaryWhole: a Codex rollout's `compacted`
// line holds the summary Codex wrote of the conversation so far (the text
// the model goes on from; often kilobytes, many lines). show, export-html
// and quote render it whole, as a message's text, not a one-line preview
// of it (which quote called all of its text).
func TestRenderCodexCompactedSummaryWhole(t *testing.T) {
	var b strings.Builder
	b.WriteString("Summary line one about the work.\n")
	for i := 0; i < 5; i++ {
		b.WriteString("- detail COMPACTDETAIL" + string(rune('A'+i)) + "\n")
	}
	b.WriteString("LAST LINE OF SUMMARY")
	payload, _ := json.Marshal(map[string]any{"message": b.String()})
	line := `{"timestamp":"2026-01-08T10:00:02.000Z","type":"compacted","payload":` + string(payload) + "}\n"
	got := string(RenderImported([]byte(line)))
	for _, want := range []string{"Summary line one about the work.", "COMPACTDETAILC", "LAST LINE OF SUMMARY"} {
		if !strings.Contains(got, want) {
			t.Errorf("rendered compacted line lacks %q; got:\n%s", want, got)
		}
	}
}

// TestRenderCodexWebSearchWhole: a Codex web_search_call shows what the
// agent searched for, whole: a query past 80 runes uncut, every one of an
// action's queries, and of a find_in_page the pattern as well as the url.
func TestRenderCodexWebSearchWhole(t *testing.T) {
	long := "a very long query " + strings.Repeat("y", 120) + " QUERYTAIL"
	cases := []struct {
		action string
		want   []string
	}{
		{`{"type":"search","query":"` + long + `"}`, []string{"QUERYTAIL"}},
		{`{"type":"search","query":"Q1 ONE","queries":["Q1 ONE","Q2 TWO"]}`, []string{"Q1 ONE", "Q2 TWO"}},
		{`{"type":"find_in_page","url":"https://x.test/","pattern":"PATTERNX"}`, []string{"https://x.test/", "PATTERNX"}},
	}
	for _, c := range cases {
		line := `{"timestamp":"2026-01-07T10:00:02.000Z","type":"response_item","payload":{"type":"web_search_call","status":"completed","action":` + c.action + "}}\n"
		got := string(RenderImported([]byte(line)))
		for _, want := range c.want {
			if !strings.Contains(got, want) {
				t.Errorf("web_search_call %s: rendered view lacks %q; got:\n%s", c.action, want, got)
			}
		}
	}
}

// TestRenderCodexOutputObjectNotWrapperWhole: a function_call_output that
// is a JSON object with an "output" member is Codex's {"output",
// "metadata"} wrapper only when it holds nothing else: a tool that
// answers {"output":"3 passed","failures":[...],"status":"failed"} is
// shown whole, not as "3 passed".
func TestRenderCodexOutputObjectNotWrapperWhole(t *testing.T) {
	out, _ := json.Marshal(`{"output":"3 passed","failures":["test_parse_UTF8"],"status":"failed"}`)
	line := `{"timestamp":"2026-01-09T10:00:03.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":` + string(out) + "}}\n"
	got := string(RenderImported([]byte(line)))
	for _, want := range []string{"3 passed", "test_parse_UTF8", "failed"} {
		if !strings.Contains(got, want) {
			t.Errorf("rendered output lacks %q; got:\n%s", want, got)
		}
	}
}

// TestRenderCodexImageGenerationPromptNotImage: a Codex
// image_generation_call shows the prompt the image was made from
// (revised_prompt), and not the image (result, base64) as text, as an
// input_image is left out.
func TestRenderCodexImageGenerationPromptNotImage(t *testing.T) {
	line := `{"timestamp":"2026-01-09T10:00:03.000Z","type":"response_item","payload":{"type":"image_generation_call","id":"ig_1","status":"completed","revised_prompt":"A cat on a mat REVISED","result":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="}}` + "\n"
	got := string(RenderImported([]byte(line)))
	if !strings.Contains(got, "A cat on a mat REVISED") {
		t.Errorf("rendered image_generation_call lacks its prompt; got:\n%s", got)
	}
	if strings.Contains(got, "iVBORw0KGgo") {
		t.Errorf("rendered image_generation_call shows the image's base64 as text; got:\n%s", got)
	}
}

// TestRenderCodexToolSearchCallWhole: a Codex tool_search_call shows its
// arguments whole, as a function_call's, not a glimpse of its query cut
// at 80 runes.
func TestRenderCodexToolSearchCallWhole(t *testing.T) {
	long := "calendar create " + strings.Repeat("z", 100) + " SEARCHTAIL"
	line := `{"timestamp":"2026-01-02T03:04:23.000Z","type":"response_item","payload":{"type":"tool_search_call","call_id":"call_Ts4","status":"completed","execution":"client","arguments":{"query":"` + long + `","limit":1}}}` + "\n"
	got := string(RenderImported([]byte(line)))
	if !strings.Contains(got, "SEARCHTAIL") {
		t.Errorf("rendered tool_search_call lacks the end of its query; got:\n%s", got)
	}
}

// TestRenderCodexAgentMessageWhole: a Codex agent_message response item
// (a message between agents in the model's history: author, recipient,
// content of input_text parts) shows its text whole, every part, headed
// as mail between agents is, not a one-line glimpse of its JSON.
func TestRenderCodexAgentMessageWhole(t *testing.T) {
	text := "Look at the parser first.\n" + strings.Repeat("step ", 30) + "\nAGENTMSGTAIL"
	quoted, _ := json.Marshal(text)
	line := `{"timestamp":"2026-01-09T10:00:03.000Z","type":"response_item","payload":{"type":"agent_message","author":"/root","recipient":"/root/w","content":[{"type":"input_text","text":` + string(quoted) + `},{"type":"input_text","text":"SECOND PART"}]}}` + "\n"
	got := string(RenderImported([]byte(line)))
	for _, want := range []string{"[agent_message /root → /root/w]\nLook at the parser first.\n", "AGENTMSGTAIL", "SECOND PART"} {
		if !strings.Contains(got, want) {
			t.Errorf("rendered agent_message lacks %q; got:\n%s", want, got)
		}
	}
	// Without content: the glimpse, as for an item rook does not know.
	line = `{"timestamp":"t","type":"response_item","payload":{"type":"agent_message","author":"/root"}}` + "\n"
	if got := string(RenderImported([]byte(line))); !strings.HasPrefix(got, "[agent_message]") {
		t.Errorf("agent_message without content: %q", got)
	}
}
