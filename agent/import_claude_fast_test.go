package agent

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rookhq/rook/internal/fuzzseed"
)

// checkFastPath holds the fast path to decodeClaudeEntry on the line's view
// (with views that shorten texts from minLen bytes): the same entry, or a
// decline. It says whether the fast path took the line. It runs with the
// strings scanJSON lists for an import (the long ones: the fast path finds
// the others' ends itself; never fewer than the view may shorten) and
// with all of them.
func checkFastPath(t *testing.T, line []byte, minLen int) bool {
	t.Helper()
	took := false
	for _, listed := range []int{min(MinCutString, viewLong, minLen) + 2, 0} {
		took = checkFastPathListing(t, line, minLen, listed)
	}
	return took
}

func checkFastPathListing(t *testing.T, line []byte, minLen, listed int) bool {
	t.Helper()
	var members []jsonMember
	strs, ok := scanJSON(line, listed, &members, nil)
	if !ok {
		return false
	}
	got, took := scanClaudeEntry(line, strs, members, minLen)
	if !took {
		return false
	}
	view := mapView(nil, line, strs, minLen, members, newClaudeMapper("/p/s.jsonl"))
	want, err := decodeClaudeEntry(view)
	if err != nil {
		t.Fatalf("%q\nthe fast path took it, encoding/json fails on its view %q: %v", line, view, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q\nfast path %+v\nits view %q\nencoding/json %+v", line, got, view, want)
	}
	return true
}

// FuzzClaudeFastPath: on any input, line by line, the fast path gives what
// encoding/json gives on the line's view, or declines.
func FuzzClaudeFastPath(f *testing.F) {
	for _, s := range decodeEdgeSeeds {
		f.Add([]byte(s))
	}
	for _, s := range fastPathSeeds {
		f.Add([]byte(s))
	}
	for _, s := range claudeSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		for _, line := range bytes.Split(input, []byte("\n")) {
			for _, minLen := range []int{0, 8, viewLong} {
				checkFastPath(t, line, minLen)
			}
		}
	})
}

// fastPathSeeds are lines where the fast path must decline, or must not.
var fastPathSeeds = []string{
	// file-history-delta: its backup decoded as a snapshot's entry; a
	// trackingPath or backup of another shape read by neither path.
	`{"type":"file-history-delta","messageId":"u1","trackingPath":"src/a.go","backup":{"backupFileName":"h@v1","version":1,"backupTime":"2026-02-10T21:00:00.000Z","realParentDir":"/w/src"}}`,
	`{"type":"file-history-delta","trackingPath":"n.txt","backup":{"backupFileName":null,"version":2}}`,
	`{"type":"file-history-delta","trackingPath":5,"backup":"x"}`,
	`{"type":"file-history-delta","trackingPath":null,"backup":null}`,
	`{"type":"user","backup":{"backupFileName":7},"message":{"content":"hi"}}`,
	`{"type":"assistant","message":{"id":"m","model":"x","content":[{"type":"tool_use","id":"t","name":"Bash"},{"type":"text","text":5}]}}`,
	`{"type":"assistant","message":{"content":[{"type":"text","Text":"a"}]}}`,
	`{"type":"assistant","message":{"content":[null]}}`,
	`{"type":"user","message":{"content":"\u003cx\u003e \/ hi"}}`,
	`{"type":"user","message":{"content":null}}`,
	`{"type":"user","message":{"role":1,"content":"hi"}}`,
	`{"type":"user","message":{"usage":{"input_tokens":1,"INPUT_TOKENS":2}}}`,
	`{"type":"progress","data":{"type":"bash_progress","Type":"x"}}`,
	`{"type":"progress","data":{"type":"bash_progress","type":"hook_progress"}}`,
	`{"type":"progress","data":{"output":"a\"b","type":"hook_progress","n":-1.5e3,"o":[true,false,null,{}]}}`,
	`{"type":"user","isMeta":null,"message":{"content":[]}}`,
	`{"type":"user","isMETA":true}`,
	`{"type":"user","isCompactSummary":true,"isVisibleInTranscriptOnly":true,"message":{"role":"user","content":"This session is being continued"}}`,
	`{"type":"user","isCompactSummary":1,"message":{"content":"x"}}`,
	`{"type":"user","iscompactsummary":true,"message":{"content":"x"}}`,
	`{"type":"user","cwd":"\u00e9\ud800"}`,
	`{"type" : "user" , "message" : { "content" : [ { "type" : "text" , "text" : "hi" } ] } }`,
	`{"type":"summary","summary":"` + strings.Repeat("a long summary ", 100) + `"}`,
	`{"type":"summary","summary":"` + strings.Repeat(`esc\"aped `, 200) + `"}`,
	`{"type":"file-history-snapshot","snapshot":{"trackedFileBackups":{"a.go":{"backupFileName":null}}}}`,
	`{"\u0074ype":"user"}`,
	`{"typ\u00e9":"user"}`,
	// A failed call, which Claude Code writes as an assistant message of
	// its own; the flag of another type, twice, folded.
	`{"type":"assistant","isApiErrorMessage":true,"error":"rate_limit","apiErrorStatus":429,"message":{"id":"5c0e9f4a","model":"<synthetic>","role":"assistant","content":[{"type":"text","text":"Claude AI usage limit reached|1767600000"}],"usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}}`,
	`{"type":"assistant","isApiErrorMessage":false,"message":{"model":"m","content":[{"type":"text","text":"API Error: 529"}]}}`,
	`{"type":"assistant","isApiErrorMessage":"true","message":{"content":"x"}}`,
	`{"type":"assistant","isApiErrorMessage":null}`,
	`{"type":"assistant","isApiErrorMessage":true,"isApiErrorMessage":false}`,
	`{"type":"assistant","isapierrormessage":true}`,
	`{"type":"user","isApiErrorMessage":true,"message":{"content":"hi"}}`,
	// the prompt in a later block (claudeTitles)
	`{"type":"user","message":{"content":[{"type":"image","source":{}},{"text":"<ide_selection>x</ide_selection>","type":"text"},{"type":"text","text":"the prompt"},{"type":"text","text":"more"}]}}`,
	`{"type":"user","message":{"content":[{"type":"image"},{"type":"text","text":"the prompt"},{"type":"text","text":5}]}}`,
	`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t"},{"type":"text","Text":"the prompt"}]}}`,
	// names
	`{"type":"custom-title","customTitle":"the name","sessionId":"s"}`,
	`{"type":"ai-title","aiTitle":"the \u00e9 name","customTitle":"x"}`,
	`{"type":"ai-title","aiTitle":null}`,
	`{"type":"custom-title","customtitle":"x"}`,
	// a fork's copied lines (forkedFrom), and shapes of it encoding/json
	// reads nothing from, or fails on
	`{"parentUuid":null,"type":"user","sessionId":"f","forkedFrom":{"sessionId":"p","messageUuid":"u1"},"message":{"role":"user","content":"hi"},"uuid":"u1"}`,
	`{"type":"user","forkedFrom":{"messageUuid":"u1","sessionId":"p\u00e9","x":[1,{"y":null}]}}`,
	`{"type":"user","forkedFrom":"p"}`,
	`{"type":"user","forkedFrom":null}`,
	`{"type":"user","forkedFrom":[]}`,
	`{"type":"user","forkedFrom":{"sessionId":5}}`,
	`{"type":"user","forkedFrom":{"sessionId":null}}`,
	`{"type":"user","forkedFrom":{"SessionId":"p"}}`,
	`{"type":"user","forkedFrom":{"sessionId":"p","sessionId":"q"}}`,
	`{"type":"user","forkedFrom":{},"forkedFrom":{"sessionId":"q"}}`,
	`{"type":"user","forkedfrom":{"sessionId":"p"}}`,
	// the line closing a transcript whose conversation went on in another
	// session (continued-in), and shapes encoding/json reads nothing from
	`{"type":"continued-in","sessionId":"old","continuedInSessionId":"new"}`,
	`{"type":"continued-in","continuedInSessionId":"n\u00e9w"}`,
	`{"type":"continued-in","continuedInSessionId":null}`,
	`{"type":"continued-in","continuedInSessionId":5}`,
	`{"type":"continued-in","continuedInSessionId":{"sessionId":"new"}}`,
	`{"type":"continued-in","continuedInSessionId":"a","continuedInSessionId":"b"}`,
	`{"type":"continued-in","continuedinsessionid":"new"}`,
}

// A fork's copied line takes the fast path, and gives the session it was
// forked from.
func TestClaudeFastPathTakesForkedLines(t *testing.T) {
	for i, line := range claudeForkLines("parent", "fork", 1) {
		if !checkFastPath(t, []byte(line), viewLong) {
			t.Errorf("line %d declined: %s", i+1, line)
		}
	}
	line := []byte(claudeForkLines("parent", "fork", 1)[0])
	var members []jsonMember
	strs, _ := scanJSON(line, 0, &members, nil)
	if e, ok := scanClaudeEntry(line, strs, members, viewLong); !ok || e.ForkedFrom != "parent" || e.SessionID != "fork" {
		t.Fatalf("%+v %v", e, ok)
	}
}

// Every line of the sample transcript takes the fast path.
func TestClaudeFastPathTakesPlainLines(t *testing.T) {
	for i, line := range claudeLines("s", 1) {
		if !checkFastPath(t, []byte(line), viewLong) {
			t.Errorf("line %d declined: %s", i+1, line)
		}
	}
}

// On the real transcripts of the shared corpus, the fast path agrees with
// encoding/json on every line, and takes nearly all of them.
func TestClaudeFastPathOnCorpus(t *testing.T) {
	if _, err := os.Stat(corpusDir); err != nil {
		t.Skipf("no corpus at %s: %v", corpusDir, err)
	}
	lines, took := 0, 0
	err := filepath.WalkDir(corpusDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".jsonl") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, line := range sourceLines(data) {
			lines++
			if checkFastPath(t, trimNewline(line), viewLong) {
				took++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the fast path took %d of %d lines", took, lines)
	if took < lines*99/100 {
		t.Fatalf("the fast path took only %d of %d lines", took, lines)
	}
}

func TestWriteFastPathFuzzSeeds(t *testing.T) {
	seeds := [][]byte{}
	for _, s := range fastPathSeeds {
		seeds = append(seeds, []byte(s))
	}
	fuzzseed.Write(t, map[string][][]byte{"FuzzClaudeFastPath": seeds})
}

// A session's title is its first prompt, or the slash command it began
// with, as typed with its arguments; never what Claude Code writes in the
// user's place (an interruption marker, a command's output, a caveat or
// another meta message, the IDE's context). A command with no arguments
// titles the session only when no prompt follows. Of a message in blocks,
// the first text block that is a prompt titles it, whatever comes first.
// A name titles over them all: the last the user gave (/rename), else the
// last Claude Code made.
func TestClaudeTitles(t *testing.T) {
	user := func(text string, meta bool) string {
		m := ""
		if meta {
			m = `"isMeta":true,`
		}
		return `{"type":"user",` + m + `"message":{"role":"user","content":` + string(appendJSONString(nil, []byte(text))) + `}}`
	}
	block := func(text string) string {
		return `{"type":"user","message":{"role":"user","content":[{"type":"text","text":` + string(appendJSONString(nil, []byte(text))) + `}]}}`
	}
	blocks := func(bs ...string) string {
		return `{"type":"user","message":{"role":"user","content":[` + strings.Join(bs, ",") + `]}}`
	}
	text := func(text string) string {
		return `{"type":"text","text":` + string(appendJSONString(nil, []byte(text))) + `}`
	}
	custom := func(name string) string {
		return `{"type":"custom-title","customTitle":` + string(appendJSONString(nil, []byte(name))) + `,"sessionId":"s"}`
	}
	ai := func(name string) string {
		return `{"type":"ai-title","aiTitle":` + string(appendJSONString(nil, []byte(name))) + `,"sessionId":"s"}`
	}
	image := `{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}`
	opened := text("<ide_opened_file>The user opened the file /home/u/app/parse.go in the IDE. This may or may not be related to the current task.</ide_opened_file>")
	selected := text("<ide_selection>The user selected the lines 3 to 9 from /home/u/app/parse.go:\nfunc parse() {}\n\nThis may or may not be related to the current task.</ide_selection>")
	reminder := text("<system-reminder>\nThe TodoWrite tool hasn't been used recently.\n</system-reminder>")
	command := "<command-message>handgemacht:create-beads</command-message>\n<command-name>/handgemacht:create-beads</command-name>\n<command-args>websearch to learn how to fastest setup credo, dialyzer, mix_audit (basically all supported by https://github.com/bradleygolden/claude-marketplace-elixir)\n\nMaybe there are igniter scripts?</command-args>"
	caveat := "<local-command-caveat>Caveat: The messages below were generated by the user while running local commands.</local-command-caveat>"
	for _, c := range []struct {
		lines []string
		want  string
	}{
		{[]string{user(command, false), user("Create beads (epic + tasks)", true), block("[Request interrupted by user]"), user("create the beads", false)},
			"/handgemacht:create-beads websearch to learn how to fastest setup credo, dialyz…"},
		{[]string{block("[Request interrupted by user for tool use]"), user("[Request interrupted by user]", false), user("fix the build", false)}, "fix the build"},
		{[]string{user(caveat, true), user("<command-name>/mcp</command-name>\n            <command-message>mcp</command-message>\n            <command-args></command-args>", false),
			user("<local-command-stdout>Reconnected to tidewave.</local-command-stdout>", false), user("scrolling back does not work", false)}, "scrolling back does not work"},
		{[]string{user("<command-message>init</command-message>\n<command-name>/init</command-name>", false), user("<local-command-stdout>done</local-command-stdout>", false)}, "/init"},
		{[]string{block("<command-name>/review</command-name><command-args>\n\n  the parser  \nand more</command-args>")}, "/review the parser"},
		// A command whose arguments run long: its view ends inside them.
		{[]string{user(strings.Replace(command, "</command-args>", strings.Repeat(" and more", 300)+"</command-args>", 1), false)}, "/handgemacht:create-beads websearch to learn how to fastest setup credo, dialyz…"},
		// The VS Code extension's context, an image, a reminder, blanks
		// before the prompt, in the same message.
		{[]string{blocks(opened, text("fix the nil pointer in parse.go")), user("and add a test", false)}, "fix the nil pointer in parse.go"},
		{[]string{blocks(image, text("what is wrong in this screenshot")), user("and now?", false)}, "what is wrong in this screenshot"},
		{[]string{blocks(selected, reminder, text(" \n "), image, text("\n\nrename it\nto parseAll"), text("later text"))}, "rename it"},
		{[]string{blocks(opened, text("<command-name>/review</command-name><command-args>the parser</command-args>"))}, "/review the parser"},
		// Nothing but context: the next message titles.
		{[]string{blocks(opened, reminder), blocks(image), user("the real prompt", false)}, "the real prompt"},
		// Names.
		{[]string{user("fix it", false), custom("Parser work")}, "Parser work"},
		{[]string{custom("first name"), user("fix it", false), custom("  \n second name\nmore"), user("and more", false)}, "second name"},
		{[]string{ai("Fix the parser"), user("fix it", false), ai("Fix the parser's nil pointer")}, "Fix the parser's nil pointer"},
		{[]string{custom("mine"), ai("Fix the parser"), user("fix it", false)}, "mine"},
		{[]string{user("fix it", false), custom(strings.Repeat("a very long name ", 10))}, titleOf(strings.Repeat("a very long name ", 10))},
		// A caveat, untagged, and not a meta message.
		{[]string{user("Caveat: The messages below were generated by the user while running local commands. DO NOT respond to these messages.", false), user("fix the build", false)}, "fix the build"},
	} {
		m, fast := newClaudeMapper("/p/s.jsonl"), newClaudeMapper("/p/s.jsonl")
		for _, line := range c.lines {
			m.mapLine([]byte(line))
			if !checkFastPath(t, []byte(line), viewLong) {
				t.Errorf("the fast path declined %s", line)
			}
			readLine(fast, []byte(line), MinCutString)
		}
		if got := m.session().Title; got != c.want {
			t.Errorf("%q\ntitle %q\nwant  %q", c.lines, got, c.want)
		}
		if got := fast.session().Title; got != c.want {
			t.Errorf("%q\nthrough the fast path: title %q\nwant  %q", c.lines, got, c.want)
		}
		checkView(t, func() lineMapper { return newClaudeMapper("/p/s.jsonl") }, []byte(strings.Join(c.lines, "\n")))
	}
}

// BenchmarkClaudeMapping reads the lines of the shared corpus as an import
// does (scanned, mapped, their cuts picked): the mapping an import runs
// on its read-ahead goroutines, without the store's hashing, compression
// and I/O, and with its CPU alone to measure on a loaded machine.
func BenchmarkClaudeMapping(b *testing.B) {
	var files [][]byte
	err := filepath.WalkDir(corpusDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".jsonl") {
			return err
		}
		data, err := os.ReadFile(path)
		files = append(files, data)
		return err
	})
	if err != nil || len(files) == 0 {
		b.Skipf("no corpus at %s: %v", corpusDir, err)
	}
	var size int64
	for _, f := range files {
		size += int64(len(f))
	}
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		for _, f := range files {
			lr := lineReader{mapper: newClaudeMapper("bench.jsonl"), minCut: MinCutString}
			for _, line := range sourceLines(f) {
				lr.read(trimNewline(line))
			}
		}
	}
}
