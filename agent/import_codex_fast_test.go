package agent

import (
	"bytes"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/rookhq/rook/internal/codexgen"
	"github.com/rookhq/rook/internal/fuzzseed"
)

// checkCodexFastPath holds the fast path to decodeCodexEntry on the line's
// view (with views that shorten texts from minLen bytes): the same entry,
// or a decline. It says whether the fast path took the line. Like
// checkFastPath, it runs with the strings scanJSON lists for an import and
// with all of them.
func checkCodexFastPath(t *testing.T, line []byte, minLen int) bool {
	t.Helper()
	took := false
	for _, listed := range []int{min(MinCutString, viewLong, minLen) + 2, 0} {
		took = checkCodexFastPathListing(t, line, minLen, listed)
	}
	return took
}

func checkCodexFastPathListing(t *testing.T, line []byte, minLen, listed int) bool {
	t.Helper()
	var members []jsonMember
	strs, ok := scanJSON(line, listed, &members, nil)
	if !ok {
		return false
	}
	got, took := scanCodexEntry(line, strs, members, minLen)
	if !took {
		return false
	}
	view := mapView(nil, line, strs, minLen, members, newCodexMapper())
	want, err := decodeCodexEntry(view)
	if err != nil {
		t.Fatalf("%q\nthe fast path took it, encoding/json fails on its view %q: %v", line, view, err)
	}
	if got != want {
		t.Fatalf("%q\nfast path %+v\nits view %q\nencoding/json %+v", line, got, view, want)
	}
	return true
}

// checkCodexMapping maps the lines of input as an import does, with two
// mappers: one through mapScanned (the fast path where it takes a line),
// one forced through mapLine on every line's view. Each line maps the same,
// twice in a row (the second sees the state the first left), and the two
// mappers end in the same state. It says how many lines scanJSON took and
// how many of those the fast path did.
func checkCodexMapping(t *testing.T, input []byte) (scanned, took int) {
	t.Helper()
	fast, slow := newCodexMapper().(*codexMapper), newCodexMapper().(*codexMapper)
	for _, line := range bytes.Split(input, []byte("\n")) {
		var members []jsonMember
		strs, ok := scanJSON(line, min(MinCutString, viewLong)+2, &members, nil)
		if !ok {
			continue // the import maps it with mapLine, fast path or not
		}
		scanned++
		if _, ok := scanCodexEntry(line, strs, members, viewLong); ok {
			took++
		}
		view := mapView(nil, line, strs, viewLong, members, slow)
		for range 2 {
			got := fast.mapScanned(line, strs, members, func() []byte { return mapView(nil, line, strs, viewLong, members, fast) })
			if want := slow.mapLine(view); !reflect.DeepEqual(got, want) {
				t.Fatalf("%q\nfast path %+v\nits view %q\nencoding/json %+v", line, got, view, want)
			}
		}
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%.2000q\nmapper after the fast path %+v\nafter encoding/json %+v", input, fast, slow)
	}
	if a, b := fast.session(), slow.session(); a != b {
		t.Fatalf("%.2000q\nsession %+v\nthrough encoding/json %+v", input, a, b)
	}
	return scanned, took
}

// FuzzCodexFastPath: on any input, line by line, the fast path gives what
// encoding/json gives on the line's view, or declines; over the whole
// input, a mapper that takes the fast path ends where one that never does
// ends.
func FuzzCodexFastPath(f *testing.F) {
	for _, s := range decodeEdgeSeeds {
		f.Add([]byte(s))
	}
	for _, s := range codexFastPathSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		for _, line := range bytes.Split(input, []byte("\n")) {
			for _, minLen := range []int{0, 8, viewLong} {
				checkCodexFastPath(t, line, minLen)
			}
		}
		checkCodexMapping(t, input)
	})
}

// codexFastPathEdges are lines where the fast path must decline, or must
// not, and sequences whose state it must carry as encoding/json's does.
var codexFastPathEdges = []string{
	// Keys in another case, not ASCII, escaped, or twice.
	`{"Type":"event_msg","payload":{"type":"user_message","message":"hi"}}`,
	`{"type":"event_msg","payload":{"type":"token_count","TYPE":"user_message"}}`,
	`{"type":"response_item","payload":{"type":"function_call","Name":"x","call_id":"c"}}`,
	`{"type":"event_msg","payload":{"type":"token_count","info":{"Total_Token_Usage":{"a":1},"last_token_usage":{"input_tokens":1}}}}`,
	`{"type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"INPUT_TOKENS":1,"output_tokens":2}}}}`,
	`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"Type":"input_text","text":"a"}]}}`,
	`{"type":"session_meta","payload":{"id":"s","ſource":{"subagent":"review"}}}`,
	`{"type":"session_meta","payload":{"id":"s","K\u212a":1,"source":"cli"}}`,
	`{"\u0074ype":"event_msg","payload":{"type":"task_started"}}`,
	`{"type":"response_item","payload":{"type":"function_call","call\u005fid":"c","name":"n"}}`,
	`{"typ\u00e9":"event_msg","payload":{}}`,
	`{"type":"event_msg","type":"response_item","payload":{}}`,
	`{"type":"response_item","payload":{"type":"function_call"},"payload":{"name":"merged"}}`,
	`{"type":"response_item","payload":{"type":"message","type":"reasoning"}}`,
	`{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":1,"total_token_usage":2}}}`,
	`{"type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":1},"last_token_usage":{"output_tokens":2}}}}`,
	`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"a","text":"b"}]}}`,
	// A subagent's copy of its parent's history, its end marked in a
	// function_call_output: the output read, escaped, not a string, twice.
	`{"type":"session_meta","payload":{"id":"s","source":{"subagent":{"thread_spawn":{"parent_thread_id":"p"}}}}}` + "\n" +
		`{"type":"session_meta","payload":{"id":"p","source":"cli"}}` + "\n" +
		`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"parent prompt"}]}}` + "\n" +
		`{"type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":"You are the newly spawned agent. The prior conversation history was forked from your parent agent. Treat the next user message as your new task."}}` + "\n" +
		`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"own task"}]}}`,
	`{"type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":"You are the newly spawned agent. The prior conversation history was forked from your parent \u0061gent."}}`,
	`{"type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":["You are the newly spawned agent. The prior conversation history was forked from your parent agent."]}}`,
	`{"type":"response_item","payload":{"type":"function_call_output","output":"x","output":"You are the newly spawned agent. The prior conversation history was forked from your parent agent."}}`,
	// A subagent's task sent as mail: rendered, raw, of another type, not
	// a string.
	`{"type":"session_meta","payload":{"id":"s","source":{"subagent":{"thread_spawn":{"parent_thread_id":"p"}}}}}` + "\n" +
		`{"type":"inter_agent_communication","payload":{"author":"/root","content":"Message Type: NEW_TASK\nTask name: /root/w\nSender: /root\nPayload:\nown task","trigger_turn":true}}`,
	`{"type":"inter_agent_communication","payload":{"content":"raw task"}}`,
	`{"type":"inter_agent_communication","payload":{"content":"Message Type: FINAL_ANSWER\nTask name: /root\nSender: /root/w\nPayload:\ndone"}}`,
	`{"type":"inter_agent_communication","payload":{"content":["x"]}}`,
	// null, and values of other types.
	`{"type":"response_item","payload":null}`,
	`{"type":"response_item","payload":"x"}`,
	`{"type":null,"timestamp":null,"payload":{"type":null,"role":null}}`,
	`{"type":7,"timestamp":1767323045,"payload":{"type":[],"name":{"a":"b"},"call_id":true}}`,
	`{"type":"event_msg","timestamp":"2026-01-02T03:04:05Z","payload":{"type":"token_count","info":null}}`,
	`{"type":"event_msg","payload":{"type":"token_count","info":"x"}}`,
	`{"type":"event_msg","payload":{"type":"token_count","info":[1]}}`,
	`{"type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":null}}}`,
	`{"type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":[1]}}}`,
	`{"type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":null}}}}`,
	`{"type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":"5"}}}}`,
	`{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":null,"last_token_usage":{"input_tokens":5}}}}`,
	`{"type":"event_msg","payload":{"type":"token_count","info":{}}}`,
	`{"type":"event_msg","payload":{"type":"user_message","message":null}}`,
	`{"type":"event_msg","payload":{"type":"user_message","message":["not","text"]}}`,
	`{"type":"response_item","payload":{"type":"message","role":"user","content":null}}`,
	`{"type":"response_item","payload":{"type":"message","role":"user","content":"a string"}}`,
	`{"type":"response_item","payload":{"type":"message","role":"user","content":[null,{"type":"input_text","text":"after a null"}]}}`,
	`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_image"},{"type":"input_text","text":"one"},{"type":"input_text","text":"two"}]}}`,
	`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"first"},1]}}`,
	`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":5},{"type":"input_text","text":"  "},{"type":"input_text","text":"third"}]}}`,
	`{"type":"session_meta","payload":{"id":"s","source":null}}`,
	`{"type":"session_meta","payload":{"id":"s","source":{"subagent":null}}}`,
	`{"type":"session_meta","payload":{"id":"s","source":{"subagent":5}}}`,
	`{"type":"session_meta","payload":{"id":"s","source":{"subagent":{"thread_spawn":5}}}}`,
	`{"type":"session_meta","payload":{"id":"s","source":{"SubAgent":{"Thread_Spawn":{"parent_thread_id":"p"}}}}}`,
	`{"type":"session_meta","payload":{"id":"s","source":{"subagent":"review","subagent":null}}}`,
	// Numbers: big, negative, not integers.
	`{"type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":-1,"output_tokens":2}}}}`,
	`{"type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":-0}}}}`,
	`{"type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":1.0}}}}`,
	`{"type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":1e3}}}}`,
	`{"type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":9999999999999999999,"output_tokens":0}}}}`,
	`{"type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":18446744073709551615}}}}`,
	`{"type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":18446744073709551616}}}}`,
	`{"type":"event_msg","payload":{"type":"token_count","info":{"model_context_window":1e999,"last_token_usage":{"input_tokens":3}}}}`,
	// Escapes, bytes that are not UTF-8, spaces.
	`{"type":"response_item","payload":{"type":"function\u005fcall","name":"a\"b\\c\/d","call_id":"\ud83d\ude00"}}`,
	`{"type":"event_msg","payload":{"type":"user_message","message":"\u003cenvironment_context\u003e x"}}`,
	"{\"type\":\"turn_context\",\"payload\":{\"cwd\":\"/tmp/\xff\xfe\",\"model\":\"m\xc3\"}}",
	`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"\ud800 lone"}]}}`,
	` { "type" : "event_msg" , "payload" : { "type" : "token_count" , "info" : { "total_token_usage" : { "a" : 1 } , "last_token_usage" : { "input_tokens" : 5 , "output_tokens" : 6 } } } } `,
	"{\"type\":\"event_msg\",\r\t\"payload\":{\"type\":\"task_started\"}}",
	// Members in another order, members the mapping skips.
	`{"payload":{"info":{"last_token_usage":{"input_tokens":7}},"type":"token_count"},"ordinal":3,"type":"event_msg","timestamp":"2026-01-02T03:04:05.5Z"}`,
	`{"payload":{"content":[{"type":"input_text","text":"the prompt"}],"role":"user","type":"message"},"type":"response_item"}`,
	`{"type":"session_meta","payload":{"source":{"subagent":{"thread_spawn":{"parent_thread_id":"p"}}},"forked_from_id":"f","id":"s","cwd":"/w"}}`,
	`{"type":"response_item","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":5}}}}`,
	`{"type":"event_msg","payload":{"type":"agent_message","role":"user","content":[1],"message":5,"source":{"subagent":"x"},"info":{"last_token_usage":{"input_tokens":5}}}}`,
	`{"type":"response_item","extra":{"payload":1},"payload":{"type":"local_shell_call","call_id":"c","action":{"type":"exec","command":["ls"]}}}`,
	// State from line to line: call names, the first session_meta, the
	// last token total (as written, spaces and all), the first title.
	`{"type":"response_item","payload":{"type":"custom_tool_call","name":"apply_patch","call_id":"c1"}}` + "\n" +
		`{"type":"response_item","payload":{"type":"custom_tool_call_output","call_id":"c1","output":"ok"}}` + "\n" +
		`{"type":"response_item","payload":{"type":"function_call_output","call_id":"c2","output":"no such call"}}`,
	`{"type":"session_meta","payload":{"id":"s1","cwd":"/a","source":{"subagent":"review"}}}` + "\n" +
		`{"type":"session_meta","payload":{"id":"s2","cwd":"/b","forked_from_id":"f"}}` + "\n" +
		`{"type":"turn_context","payload":{"cwd":"/c","model":"m2"}}` + "\n" +
		`{"type":"response_item","payload":{"type":"reasoning"}}`,
	`{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"t":1},"last_token_usage":{"input_tokens":5}}}}` + "\n" +
		`{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"t":1},"last_token_usage":{"input_tokens":5}}}}` + "\n" +
		`{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{ "t":1},"last_token_usage":{"input_tokens":5}}}}` + "\n" +
		`{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":null,"last_token_usage":{"input_tokens":5}}}}`,
	`{"type":"event_msg","payload":{"type":"user_message","message":"<environment_context>x"}}` + "\n" +
		`{"type":"event_msg","payload":{"type":"user_message","message":"  \n the ask\nmore"}}` + "\n" +
		`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"# AGENTS.md"},{"type":"input_text","text":"the prompt"}]}}`,
	// Context Codex wrote (every item an input_text of boilerplate), and
	// what is not: a prompt or an image beside it, a null item, a shell
	// command the user ran, a text of another type, a key twice.
	`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"# AGENTS.md x"},{"type":"input_text","text":" <Environment_Context>"}]}}`,
	`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<skill>"},{"type":"input_image","image_url":"data:"}]}}`,
	`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<turn_aborted>"},{"type":"input_text","text":"go on"},{"type":"input_image"}]}}`,
	`{"type":"response_item","payload":{"type":"message","role":"user","content":[null,{"type":"input_text","text":"<context_update>"}]}}`,
	`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<context_update>"},null]}}`,
	`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<user_shell_command>ls</user_shell_command>"}]}}`,
	`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<skill>"},{"type":"input_text","text":null}]}}`,
	`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<skill>","text":"a prompt"}]}}`,
	`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"text":"<skill>","type":"input_text","type":"input_image"}]}}`,
	`{"type":"response_item","payload":{"type":"message","role":"user","content":[]}}`,
	// Older rollouts' lines, with no envelope (codexBareLine): declined,
	// and mapped as encoding/json maps them; keys in another case, a
	// payload where none belongs, an item whose type is not an item's.
	codexDirectRollout,
	codexLegacyRollout,
	`{"ID":"s","Cwd":"/w","source":{"subagent":{"thread_spawn":{"parent_thread_id":"p"}}},"forked_from_id":"f"}`,
	`{"TYPE":"function_call","Call_ID":"c","NAME":"n"}` + "\n" + `{"type":"function_call_output","call_id":"c","payload":{"call_id":"d"}}`,
	`{"Record_Type":"state","type":null}`,
	`{"type":"message","role":"user","content":[{"type":"input_text","text":"bare"}],"payload":{"type":"reasoning"}}`,
	`{"type":"message","role":"user","payload":5}`,
	`{"type":"session_meta","payload":{"id":"s"},"record_type":"state","role":"user"}`,
	// A thread's name, and what is not one.
	`{"type":"event_msg","payload":{"type":"thread_name_updated","thread_id":"t","thread_name":"the name"}}` + "\n" +
		`{"type":"event_msg","payload":{"type":"thread_name_updated","thread_id":"t","thread_name":null}}` + "\n" +
		`{"type":"event_msg","payload":{"type":"thread_name_updated","thread_name":5}}` + "\n" +
		`{"type":"event_msg","payload":{"type":"thread_name_updated","thread_name":"a","thread_name":"b"}}`,
}

// codexLongEdges are lines with texts of more than viewLong bytes: the
// ones the view shortens (an output), and the ones it keeps whole (a
// prompt's, which codexTitle reads to its end; under "info").
func codexLongEdges() []string {
	long := strings.Repeat("a long prompt — with runes ", 60)
	escaped := strings.Repeat(`esc\"aped \u00e9 `, 120)
	return []string{
		`{"type":"event_msg","payload":{"type":"user_message","message":"` + long + `"}}`,
		`{"type":"event_msg","payload":{"type":"user_message","message":"<user_instructions>` + escaped + `"}}`,
		`{"type":"event_msg","payload":{"type":"user_message","message":"` + strings.Repeat(` \n`, 700) + `late prompt"}}`,
		`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"` + escaped + `"}]}}`,
		`{"type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":"` + long + `"}}`,
		`{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"text":"` + long + `"},"last_token_usage":{"input_tokens":1}}}}` + "\n" +
			`{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"text":"` + long + `"},"last_token_usage":{"input_tokens":1}}}}`,
		`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"# Context from my IDE setup:\n\n## Open tabs:\n` + long + `\n## My request for Codex:\nthe request"}]}}`,
	}
}

// codexFastPathSeeds are the fixtures' lines, a whole fixture, and the
// edge cases.
func codexFastPathSeeds(t testing.TB) [][]byte {
	var out [][]byte
	for _, f := range []string{codexMainFile, codexSubFile} {
		out = append(out, codexLines(t, f)...)
	}
	out = append(out, bytes.Join(codexLines(t, codexMainFile), []byte("\n")))
	for _, s := range codexFastPathEdges {
		out = append(out, []byte(s))
	}
	for _, s := range codexLongEdges() {
		out = append(out, []byte(s))
	}
	return out
}

func TestCodexFastPathEdges(t *testing.T) {
	for _, s := range append(codexFastPathEdges, codexLongEdges()...) {
		for _, line := range strings.Split(s, "\n") {
			for _, minLen := range []int{0, 8, viewLong} {
				checkCodexFastPath(t, []byte(line), minLen)
			}
		}
		checkCodexMapping(t, []byte(s))
	}
}

// The fast path takes every line of the fixtures and of generated
// rollouts, and maps each whole file as encoding/json does.
func TestCodexFastPathTakesRollouts(t *testing.T) {
	inputs := map[string][]byte{}
	for _, f := range []string{codexMainFile, codexSubFile} {
		inputs[f] = bytes.Join(codexLines(t, f), []byte("\n"))
	}
	rollouts := codexgen.Rollouts()
	if testing.Short() {
		rollouts = rollouts[:2]
	}
	for _, r := range rollouts {
		inputs[r.Path] = bytes.TrimSuffix(r.Data, []byte("\n"))
	}
	for name, input := range inputs {
		scanned, took := checkCodexMapping(t, input)
		if took != scanned {
			for _, line := range bytes.Split(input, []byte("\n")) {
				var members []jsonMember
				if strs, ok := scanJSON(line, 0, &members, nil); ok {
					if _, ok := scanCodexEntry(line, strs, members, viewLong); !ok {
						t.Errorf("%s: declined %.300s", name, line)
					}
				}
			}
			t.Fatalf("%s: the fast path took %d of %d lines", name, took, scanned)
		}
	}
}

// The fast path's key lists are the fields of the structs encoding/json
// decodes into.
func TestCodexFastPathKeys(t *testing.T) {
	for _, c := range []struct {
		keys []string
		t    any
	}{
		{codexKeys[:], codexLine{}},
		{codexPayloadKeys[:], codexPayload{}},
		{codexItemFields, codexInputItem{}},
		{codexInfoFields, codexUsage{}},
		{codexLastFields, codexUsage{}.Last},
	} {
		var want []string
		typ := reflect.TypeOf(c.t)
		for i := range typ.NumField() {
			want = append(want, typ.Field(i).Tag.Get("json"))
		}
		got := slices.Clone(c.keys)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%T: the fast path reads %v, encoding/json %v", c.t, got, want)
		}
	}
}

// TestWriteCodexFastPathFuzzSeeds regenerates testdata/fuzz/FuzzCodexFastPath
// (ROOK_WRITE_FUZZ_SEEDS=1 go test ./agent -run WriteCodexFastPath).
func TestWriteCodexFastPathFuzzSeeds(t *testing.T) {
	fuzzseed.Write(t, map[string][][]byte{"FuzzCodexFastPath": codexFastPathSeeds(t)})
}

// BenchmarkCodexMapping reads the lines of the generated rollouts as an
// import does (scanned, mapped, their cuts picked), through the fast path
// and forced through the view: the part of an import the fast path
// changes, without the store's compression and I/O.
func BenchmarkCodexMapping(b *testing.B) {
	rollouts := codexgen.Rollouts()
	var size int64
	for _, r := range rollouts {
		size += int64(len(r.Data))
	}
	for _, c := range []struct {
		name   string
		mapper func() lineMapper
	}{
		{"path=fast", newCodexMapper},
		{"path=view", func() lineMapper { return viewOnly{newCodexMapper()} }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(size)
			for b.Loop() {
				for _, r := range rollouts {
					lr := lineReader{mapper: c.mapper(), minCut: MinCutString}
					for _, line := range sourceLines(r.Data) {
						lr.read(trimNewline(line))
					}
				}
			}
		})
	}
}

// viewOnly is a mapper without its fast path: every line it maps goes
// through the line's view.
type viewOnly struct{ lineMapper }
