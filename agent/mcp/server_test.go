package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rookhq/rook/agent/inbox"
	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/internal/clock"
	"github.com/rookhq/rook/internal/vfs"
)

const testHome = "/home/u/.rook"

// t0 is noon UTC, so the local date is the same in most time zones; the
// tests still compute it with Local as the server does.
var t0 = time.Date(2026, 5, 12, 12, 0, 0, 0, time.UTC)

func today() string { return t0.Local().Format("2006-01-02") }

// fixture is a store on a MemFS with a clock the test moves.
type fixture struct {
	fs    *vfs.MemFS
	clock *clock.Fixed
	log   bytes.Buffer // read only once Serve has returned
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{fs: vfs.NewMem(), clock: &clock.Fixed{T: t0}}
	if _, err := cas.Init(f.fs, f.clock, testHome); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) opts() Options {
	return Options{FS: f.fs, Home: testHome, Clock: f.clock, ProcessName: "1-42", Version: "test", Log: &f.log}
}

// reply is a decoded reply line.
type reply struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int                    `json:"code"`
		Message string                 `json:"message"`
		Data    map[string]interface{} `json:"data"`
	} `json:"error"`
}

func (r reply) code() int {
	if r.Error == nil {
		return 0
	}
	return r.Error.Code
}

// text is a tools/call result's text.
func (r reply) text(t *testing.T) string {
	t.Helper()
	var res struct {
		Content []struct{ Type, Text string } `json:"content"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil || len(res.Content) != 1 || res.Content[0].Type != "text" {
		t.Fatalf("not a text result: %s (%v)", r.Result, err)
	}
	return res.Content[0].Text
}

// session drives a running server over pipes, one request at a time, so a
// test can move the clock or the store between calls.
type session struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Reader
	done chan error
	id   int
}

func startSession(t *testing.T, opts Options) *session {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &session{t: t, in: inW, out: bufio.NewReader(outR), done: make(chan error, 1)}
	go func() {
		err := Serve(context.Background(), inR, outW, opts)
		outW.Close()
		s.done <- err
	}()
	t.Cleanup(func() { inW.Close() })
	return s
}

// send writes one raw line.
func (s *session) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatalf("send: %v", err)
	}
}

// recv reads one reply line.
func (s *session) recv() reply {
	s.t.Helper()
	type lineErr struct {
		b   []byte
		err error
	}
	ch := make(chan lineErr, 1)
	go func() {
		b, err := s.out.ReadBytes('\n')
		ch <- lineErr{b, err}
	}()
	select {
	case le := <-ch:
		if le.err != nil {
			s.t.Fatalf("recv: %v", le.err)
		}
		return decodeReply(s.t, le.b)
	case <-time.After(10 * time.Second):
		s.t.Fatal("recv: no reply")
	}
	return reply{}
}

// roundTrip sends a raw line and reads its reply.
func (s *session) roundTrip(line string) reply {
	s.t.Helper()
	s.send(line)
	return s.recv()
}

// call sends a request with a fresh numeric id and checks the reply echoes it.
func (s *session) call(method string, params any) reply {
	s.t.Helper()
	s.id++
	r := s.roundTrip(requestLine(s.id, method, params))
	if string(r.ID) != fmt.Sprint(s.id) {
		s.t.Fatalf("%s: reply id %s, want %d", method, r.ID, s.id)
	}
	return r
}

func (s *session) initialize(clientName string) reply {
	s.t.Helper()
	r := s.call("initialize", map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": clientName, "version": "1.0"},
	})
	if r.Error != nil {
		s.t.Fatalf("initialize: %+v", r.Error)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return r
}

func (s *session) save(args any) reply {
	s.t.Helper()
	return s.call("tools/call", map[string]any{"name": "append_to_inbox", "arguments": args})
}

// close ends stdin and checks Serve returned nil with nothing left unread.
func (s *session) close() {
	s.t.Helper()
	s.in.Close()
	rest, _ := io.ReadAll(s.out)
	if len(rest) > 0 {
		s.t.Errorf("unexpected output: %q", rest)
	}
	if err := <-s.done; err != nil {
		s.t.Fatalf("Serve: %v", err)
	}
}

func requestLine(id int, method string, params any) string {
	m := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil {
		m["params"] = params
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// decodeReply checks a reply is one JSON-RPC 2.0 line and decodes it.
func decodeReply(t *testing.T, line []byte) reply {
	t.Helper()
	if !bytes.HasSuffix(line, []byte("\n")) || bytes.Count(line, []byte("\n")) != 1 {
		t.Fatalf("reply is not one line: %q", line)
	}
	var r reply
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("reply %q: %v", line, err)
	}
	if r.JSONRPC != "2.0" || r.ID == nil || (r.Result == nil) == (r.Error == nil) {
		t.Fatalf("not a JSON-RPC 2.0 reply: %q", line)
	}
	return r
}

// runLines feeds whole input at once and returns the reply lines.
func runLines(t *testing.T, opts Options, lines ...string) []reply {
	t.Helper()
	var out bytes.Buffer
	in := strings.NewReader(strings.Join(lines, "\n") + "\n")
	if err := Serve(context.Background(), in, &out, opts); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	var replies []reply
	for _, line := range bytes.SplitAfter(out.Bytes(), []byte("\n")) {
		if len(line) > 0 {
			replies = append(replies, decodeReply(t, line))
		}
	}
	return replies
}

func TestHandshakeVersionNegotiation(t *testing.T) {
	tests := []struct {
		asked any // what the client sends as protocolVersion (nil: leave it out)
		want  string
	}{
		{"2024-11-05", "2024-11-05"},
		{"2025-03-26", "2025-03-26"},
		{"2025-06-18", "2025-06-18"},
		{"2025-11-25", "2025-11-25"},
		{"2026-07-28", "2025-11-25"}, // the stateless era: initialize cannot negotiate it
		{"1999-01-01", "2025-11-25"},
		{"", "2025-11-25"},
		{42, "2025-11-25"},
		{nil, "2025-11-25"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.asked), func(t *testing.T) {
			f := newFixture(t)
			s := startSession(t, f.opts())
			params := map[string]any{"capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "claude-code", "version": "2.1"}}
			if tt.asked != nil {
				params["protocolVersion"] = tt.asked
			}
			r := s.call("initialize", params)
			var res struct {
				ProtocolVersion string                     `json:"protocolVersion"`
				Capabilities    map[string]json.RawMessage `json:"capabilities"`
				ServerInfo      struct{ Name, Version string }
				Instructions    string
			}
			if err := json.Unmarshal(r.Result, &res); err != nil {
				t.Fatalf("%s: %v", r.Result, err)
			}
			if res.ProtocolVersion != tt.want {
				t.Errorf("protocolVersion %q, want %q", res.ProtocolVersion, tt.want)
			}
			if len(res.Capabilities) != 1 || string(res.Capabilities["tools"]) != "{}" {
				t.Errorf("capabilities %v, want only tools:{}", res.Capabilities)
			}
			if res.ServerInfo.Name != "rook" || res.ServerInfo.Version != "test" {
				t.Errorf("serverInfo %+v", res.ServerInfo)
			}
			if !strings.Contains(res.Instructions, "append_to_inbox") {
				t.Errorf("instructions %q", res.Instructions)
			}
			// notifications/initialized gets no reply: the next line read
			// is tools/list's.
			s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			if r := s.call("tools/list", nil); r.Error != nil {
				t.Fatalf("tools/list: %+v", r.Error)
			}
			s.close()
		})
	}
}

// The list has one page: a cursor the server never gave is invalid
// (-32602), and no cursor, null or "", is the first page.
func TestToolsListCursor(t *testing.T) {
	f := newFixture(t)
	s := startSession(t, f.opts())
	s.initialize("codex-mcp-client")
	for _, params := range []any{nil, map[string]any{}, map[string]any{"cursor": nil}, map[string]any{"cursor": ""}} {
		if r := s.call("tools/list", params); r.Error != nil || !strings.Contains(string(r.Result), `"append_to_inbox"`) {
			t.Fatalf("tools/list %v: %+v %s", params, r.Error, r.Result)
		}
	}
	for _, params := range []any{map[string]any{"cursor": "page2"}, map[string]any{"cursor": 2}, []any{1}} {
		if r := s.call("tools/list", params); r.code() != -32602 {
			t.Fatalf("tools/list %v: %d %s, want -32602", params, r.code(), r.Result)
		}
	}
}

func TestToolsList(t *testing.T) {
	f := newFixture(t)
	s := startSession(t, f.opts())
	s.initialize("codex-mcp-client")
	r := s.call("tools/list", map[string]any{})
	var res struct {
		Tools []struct {
			Name, Title, Description string
			InputSchema              struct {
				Type       string
				Properties map[string]struct {
					Type      string
					MaxLength int
				}
				Required             []string
				AdditionalProperties *bool
			}
			Annotations map[string]any
		}
		NextCursor *string
	}
	if err := json.Unmarshal(r.Result, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 1 || res.NextCursor != nil {
		t.Fatalf("tools: %s", r.Result)
	}
	tl := res.Tools[0]
	if tl.Name != "append_to_inbox" || tl.Title == "" {
		t.Errorf("name %q title %q", tl.Name, tl.Title)
	}
	for _, verb := range []string{"save", "collect", "remember", "note", "record", "add", "stash", "Rook", "cannot read"} {
		if !strings.Contains(tl.Description, verb) {
			t.Errorf("description lacks %q: %s", verb, tl.Description)
		}
	}
	sc := tl.InputSchema
	if sc.Type != "object" || sc.AdditionalProperties == nil || *sc.AdditionalProperties ||
		len(sc.Required) != 1 || sc.Required[0] != "content" || len(sc.Properties) != 2 ||
		sc.Properties["content"].Type != "string" || sc.Properties["content"].MaxLength != 100000 ||
		sc.Properties["title"].Type != "string" || sc.Properties["title"].MaxLength != 200 {
		t.Errorf("inputSchema %+v", sc)
	}
	for hint, want := range map[string]bool{"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false} {
		if got, ok := tl.Annotations[hint].(bool); !ok || got != want {
			t.Errorf("annotation %s = %v, want %v", hint, tl.Annotations[hint], want)
		}
	}
	s.close()
}

// TestErrorCodes runs each refused message through a fresh server and
// checks its code; the setup may change the store before the call.
func TestErrorCodes(t *testing.T) {
	long := strings.Repeat("x", MaxContentChars+1)
	call := func(args any) string {
		return requestLine(7, "tools/call", map[string]any{"name": "append_to_inbox", "arguments": args})
	}
	ok := map[string]any{"content": "hello"}
	tests := []struct {
		name    string
		setup   func(*testing.T, *fixture)
		noInit  bool
		line    string
		code    int
		wantID  string   // "" means 7
		inMsg   []string // substrings of the message
		logged  string   // activity status the attempt leaves ("" none)
		dataKey string   // a key error.data must hold
		// mayLeave: the spool may hold the note anyway. A failed fsync
		// comes after the write: the line is in the file, and the drain
		// will take it in although the client was told it failed.
		mayLeave bool
	}{
		// The envelope.
		{name: "not JSON", line: `{"jsonrpc":"2.0","id":7,`, code: -32700, wantID: "null"},
		{name: "not JSON text", line: `hello`, code: -32700, wantID: "null"},
		{name: "jsonrpc missing", line: `{"id":7,"method":"ping"}`, code: -32600, inMsg: []string{"jsonrpc"}},
		{name: "jsonrpc wrong", line: `{"jsonrpc":"1.0","id":7,"method":"ping"}`, code: -32600},
		{name: "jsonrpc a number", line: `{"jsonrpc":2.0,"id":7,"method":"ping"}`, code: -32600},
		{name: "jsonrpc wrong case key", line: `{"JSONRPC":"2.0","id":7,"method":"ping"}`, code: -32600},
		{name: "batch", line: `[{"jsonrpc":"2.0","id":7,"method":"ping"}]`, code: -32600, wantID: "null", inMsg: []string{"batch"}},
		{name: "not an object", line: `"ping"`, code: -32600, wantID: "null"},
		{name: "id an object", line: `{"jsonrpc":"2.0","id":{},"method":"ping"}`, code: -32600, wantID: "null"},
		{name: "id not UTF-8", line: "{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"ping\"}", code: -32600, wantID: "null"},
		{name: "id null", line: `{"jsonrpc":"2.0","id":null,"method":"ping"}`, code: -32600, wantID: "null"},
		{name: "method missing", line: `{"jsonrpc":"2.0","id":7}`, code: -32600},
		{name: "method a number", line: `{"jsonrpc":"2.0","id":7,"method":5}`, code: -32600},
		// Before initialize.
		{name: "tools/list before initialize", noInit: true, line: requestLine(7, "tools/list", nil), code: -32600, inMsg: []string{"initialize"}},
		{name: "tools/call before initialize", noInit: true, line: call(ok), code: -32600},
		{name: "unknown method before initialize", noInit: true, line: requestLine(7, "server/discover", nil), code: -32600},
		{name: "initialize params not an object", noInit: true, line: requestLine(7, "initialize", []int{1}), code: -32602},
		{name: "initialize twice", line: requestLine(7, "initialize", map[string]any{"protocolVersion": "2025-11-25"}), code: -32600},
		// Methods and tools.
		{name: "unknown method", line: requestLine(7, "resources/list", nil), code: -32601, inMsg: []string{"resources/list"}},
		{name: "unknown tool", line: requestLine(7, "tools/call", map[string]any{"name": "read_inbox", "arguments": ok}), code: -32602, inMsg: []string{"read_inbox"}},
		{name: "tool name missing", line: requestLine(7, "tools/call", map[string]any{"arguments": ok}), code: -32602},
		{name: "tool name not a string", line: requestLine(7, "tools/call", map[string]any{"name": 1}), code: -32602},
		{name: "tools/call params not an object", line: requestLine(7, "tools/call", "append_to_inbox"), code: -32602},
		// The store.
		{name: "no store", setup: func(t *testing.T, f *fixture) { f.fs = vfs.NewMem() }, line: call(ok), code: -32001,
			inMsg: []string{testHome, "rook init"}, dataKey: "path"},
		{name: "store not writable", setup: failOn(vfs.OpMkdir, fs.ErrPermission), line: call(ok), code: -32001,
			inMsg: []string{testHome}, dataKey: "path"},
		{name: "spool write fails", setup: failOn(vfs.OpWrite, errors.New("disk full")), line: call(ok), code: -32005,
			logged: "store_write_failed", dataKey: "error"},
		{name: "spool sync fails", setup: failOn(vfs.OpSync, errors.New("EIO")), line: call(ok), code: -32005,
			logged: "store_write_failed", dataKey: "error", mayLeave: true},
		// Pause, checked before the input.
		{name: "paused", setup: pause, line: call(ok), code: -32003, inMsg: []string{"rook inbox resume"}, logged: "paused"},
		{name: "paused with bad input", setup: pause, line: call(map[string]any{}), code: -32003, logged: "paused"},
		// The input.
		{name: "content missing", line: call(map[string]any{"title": "t"}), code: -32004, logged: "input_invalid", inMsg: []string{"content"}, dataKey: "field"},
		{name: "arguments missing", line: requestLine(7, "tools/call", map[string]any{"name": "append_to_inbox"}), code: -32004, logged: "input_invalid"},
		{name: "arguments a string", line: call("hello"), code: -32004, logged: "input_invalid"},
		{name: "arguments an array", line: call([]string{"hello"}), code: -32004, logged: "input_invalid"},
		{name: "content a number", line: call(map[string]any{"content": 5}), code: -32004, logged: "input_invalid"},
		{name: "content null", line: call(map[string]any{"content": nil}), code: -32004, logged: "input_invalid"},
		{name: "content an object", line: call(map[string]any{"content": map[string]any{"text": "x"}}), code: -32004, logged: "input_invalid"},
		{name: "content empty", line: call(map[string]any{"content": ""}), code: -32004, logged: "input_invalid"},
		{name: "content whitespace", line: call(map[string]any{"content": " \n\t\u3000 "}), code: -32004, logged: "input_invalid"},
		{name: "content too long", line: call(map[string]any{"content": long}), code: -32004, logged: "input_invalid", inMsg: []string{"100001"}},
		{name: "title a number", line: call(map[string]any{"content": "x", "title": 3}), code: -32004, logged: "input_invalid"},
		{name: "title too long", line: call(map[string]any{"content": "x", "title": strings.Repeat("t", 201)}), code: -32004, logged: "input_invalid"},
		{name: "title empty", line: call(map[string]any{"content": "x", "title": ""}), code: -32004, logged: "input_invalid"},
		{name: "title empty once sanitized", line: call(map[string]any{"content": "x", "title": " \n\t\r\x00\x1b "}), code: -32004, logged: "input_invalid"},
		{name: "unknown argument", line: call(map[string]any{"content": "x", "tags": []string{"a"}}), code: -32004, logged: "input_invalid", inMsg: []string{"tags"}},
		{name: "unknown argument, case", line: call(map[string]any{"Content": "x"}), code: -32004, logged: "input_invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			if tt.setup != nil {
				tt.setup(t, f)
			}
			s := startSession(t, f.opts())
			if !tt.noInit {
				s.initialize("claude-code")
			}
			r := s.roundTrip(tt.line)
			if r.code() != tt.code {
				t.Fatalf("code %d (%+v), want %d", r.code(), r.Error, tt.code)
			}
			wantID := tt.wantID
			if wantID == "" {
				wantID = "7"
			}
			if string(r.ID) != wantID {
				t.Errorf("id %s, want %s", r.ID, wantID)
			}
			for _, sub := range tt.inMsg {
				if !strings.Contains(r.Error.Message, sub) {
					t.Errorf("message %q lacks %q", r.Error.Message, sub)
				}
			}
			if tt.dataKey != "" && r.Error.Data[tt.dataKey] == nil {
				t.Errorf("data %v lacks %q", r.Error.Data, tt.dataKey)
			}
			// The session goes on after any error.
			if r := s.call("ping", nil); r.Error != nil {
				t.Errorf("ping after the error: %+v", r.Error)
			}
			s.close()
			f.fs.SetHook(nil)
			if pending := pendingSaves(t, f); len(pending) != 0 && !tt.mayLeave {
				t.Errorf("refused call saved %d notes", len(pending))
			}
			if tt.logged != "" {
				acts := activity(t, f)
				if len(acts) != 1 || acts[0].Status != tt.logged || acts[0].Detail == "" || acts[0].ClientName != "claude-code" {
					t.Errorf("activity %+v, want one %q", acts, tt.logged)
				}
			}
		})
	}
}

// failOn makes every op on the inbox directory fail with err.
func failOn(op vfs.Op, err error) func(*testing.T, *fixture) {
	return func(t *testing.T, f *fixture) {
		f.fs.SetHook(func(o vfs.Op, path string) error {
			if o == op && strings.HasPrefix(path, filepath.Join(testHome, "inbox")) && strings.Contains(path, "spool") {
				return err
			}
			return nil
		})
	}
}

func pause(t *testing.T, f *fixture) {
	if err := inbox.SetPaused(f.fs, testHome, true); err != nil {
		t.Fatal(err)
	}
}

func pendingSaves(t *testing.T, f *fixture) []inbox.Save {
	t.Helper()
	pending, _, err := inbox.ReadPending(f.fs, testHome, inbox.Progress{})
	if err != nil {
		t.Fatal(err)
	}
	var out []inbox.Save
	for _, p := range pending {
		out = append(out, p.Save)
	}
	return out
}

func activity(t *testing.T, f *fixture) []inbox.Activity {
	t.Helper()
	acts, err := inbox.ReadActivity(f.fs, testHome)
	if err != nil {
		t.Fatal(err)
	}
	return acts
}

func TestNonJSONLineThenGoodRequest(t *testing.T) {
	f := newFixture(t)
	replies := runLines(t, f.opts(),
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","clientInfo":{"name":"cursor"}}}`,
		`this is not json {`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"append_to_inbox","arguments":{"content":"after garbage"}}}`,
	)
	if len(replies) != 3 {
		t.Fatalf("%d replies, want 3", len(replies))
	}
	if replies[1].code() != -32700 || string(replies[1].ID) != "null" {
		t.Errorf("garbage: %+v id %s", replies[1].Error, replies[1].ID)
	}
	if replies[2].Error != nil || string(replies[2].ID) != "2" {
		t.Errorf("after garbage: %+v", replies[2].Error)
	}
	if saves := pendingSaves(t, f); len(saves) != 1 || saves[0].Content != "after garbage" || saves[0].Client != "cursor" {
		t.Errorf("saves %+v", saves)
	}
}

func TestPingBeforeInitialize(t *testing.T) {
	f := newFixture(t)
	s := startSession(t, f.opts())
	r := s.roundTrip(`{"jsonrpc":"2.0","id":"p-1","method":"ping"}`)
	if r.Error != nil || string(r.Result) != "{}" || string(r.ID) != `"p-1"` {
		t.Fatalf("ping: %s %+v id %s", r.Result, r.Error, r.ID)
	}
	// Still not initialized: other methods are refused, then initialize works.
	if r := s.call("tools/list", nil); r.code() != -32600 {
		t.Fatalf("tools/list before initialize: %d", r.code())
	}
	s.initialize("gemini-cli-mcp-client")
	if r := s.call("ping", nil); r.Error != nil {
		t.Fatalf("ping after initialize: %+v", r.Error)
	}
	s.close()
}

// TestNotificationsAndStdout feeds a mix of messages in one go: only the
// requests get replies, each one JSON line, in order, and nothing else
// reaches stdout.
func TestNotificationsAndStdout(t *testing.T) {
	f := newFixture(t)
	var out bytes.Buffer
	input := strings.Join([]string{
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`, // before initialize: still no reply
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","clientInfo":{"name":"Claude Desktop"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		``,
		`   `,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}`,
		`{"jsonrpc":"2.0","method":"no/such/notification"}`,
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"append_to_inbox","arguments":{"content":"sent as a notification"}}}`,
		`{"jsonrpc":"2.0","id":5,"result":{}}`,              // a response: nothing to answer
		`{"jsonrpc":"2.0","id":"a","method":"ping"}` + "\r", // CRLF line ending
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"append_to_inbox","arguments":{"content":"line\nbreaks & <tags>\u2028"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"ping"}`, // last line without a newline
	}, "\n")
	if err := Serve(context.Background(), strings.NewReader(input), &out, f.opts()); err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(out.Bytes(), []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	wantIDs := []string{"1", `"a"`, "2", "3"}
	if len(lines) != len(wantIDs) {
		t.Fatalf("%d reply lines, want %d:\n%s", len(lines), len(wantIDs), out.Bytes())
	}
	for i, line := range lines {
		r := decodeReply(t, line)
		if string(r.ID) != wantIDs[i] || r.Error != nil {
			t.Errorf("reply %d: id %s error %+v", i, r.ID, r.Error)
		}
	}
	saves := pendingSaves(t, f)
	if len(saves) != 1 || saves[0].Content != "line\nbreaks & <tags>\u2028" || saves[0].Client != "claude" {
		t.Errorf("saves %+v: want only the request's", saves)
	}
}

func TestRateLimit(t *testing.T) {
	f := newFixture(t)
	s := startSession(t, f.opts())
	s.initialize("claude-code")
	note := map[string]any{"content": "note"}

	// Refused attempts are not saves: they do not use up the budget.
	for range 5 {
		if r := s.save(map[string]any{"content": ""}); r.code() != -32004 {
			t.Fatalf("empty content: %d", r.code())
		}
	}
	// 50 saves now, 50 more 30 s later: 100 in the window.
	for i := range 100 {
		if i == 50 {
			f.clock.Advance(30 * time.Second)
		}
		if r := s.save(note); r.Error != nil {
			t.Fatalf("save %d: %+v", i+1, r.Error)
		}
	}
	r := s.save(note)
	if r.code() != -32002 || r.Error.Data["retryAfterSeconds"] != float64(30) {
		t.Fatalf("101st save: %+v", r.Error)
	}
	// Just before the first 50 leave the window: still refused.
	f.clock.Advance(30*time.Second - time.Millisecond)
	if r := s.save(note); r.code() != -32002 {
		t.Fatalf("at 59.999 s: %d", r.code())
	}
	// 60 s after the first 50: they left the window, so 50 more fit.
	f.clock.Advance(time.Millisecond)
	for i := range 50 {
		if r := s.save(note); r.Error != nil {
			t.Fatalf("after the window, save %d: %+v", i+1, r.Error)
		}
	}
	if r := s.save(note); r.code() != -32002 {
		t.Fatalf("51st after the window: %d", r.code())
	}
	s.close()

	if n := len(pendingSaves(t, f)); n != 150 {
		t.Errorf("%d saves in the spool, want 150", n)
	}
	counts := map[string]int{}
	for _, a := range activity(t, f) {
		counts[a.Status]++
	}
	if counts["saved"] != 150 || counts["rate_limited"] != 3 || counts["input_invalid"] != 5 || len(counts) != 3 {
		t.Errorf("activity %v", counts)
	}
}

func TestPauseAndResume(t *testing.T) {
	f := newFixture(t)
	s := startSession(t, f.opts())
	s.initialize("codex")
	if r := s.save(map[string]any{"content": "before"}); r.Error != nil {
		t.Fatal(r.Error)
	}
	pause(t, f)
	r := s.save(map[string]any{"content": "while paused"})
	if r.code() != -32003 || !strings.Contains(r.Error.Message, "rook inbox resume") {
		t.Fatalf("paused: %+v", r.Error)
	}
	if err := inbox.SetPaused(f.fs, testHome, false); err != nil {
		t.Fatal(err)
	}
	if r := s.save(map[string]any{"content": "after"}); r.Error != nil {
		t.Fatal(r.Error)
	}
	s.close()
	saves := pendingSaves(t, f)
	if len(saves) != 2 || saves[0].Content != "before" || saves[1].Content != "after" {
		t.Errorf("saves %+v", saves)
	}
}

func TestTitleSanitization(t *testing.T) {
	tests := []struct{ title, want string }{
		{"Plain title", "Plain title"},
		{"  padded \n", "padded"},
		{"line one\nline two", "line oneline two"},
		{"tab\there", "tabhere"},
		{"crlf\r\n", "crlf"},
		{"\x1b[31mred\x1b[0m", "[31mred[0m"},
		{"nul\x00 and del\x7f", "nul and del"},
		{"c1 \u0085next \u009bcsi", "c1 next csi"},
		{"separators\u2028and\u2029more", "separatorsandmore"},
		{"quotes \"kept\" <and> & ünïcödé 日本語 🦀", "quotes \"kept\" <and> & ünïcödé 日本語 🦀"},
		{"\u3000ideographic space\u3000", "ideographic space"},
		// Invisible characters stay in a title with something to see:
		// a zero-width joiner makes one emoji of two, a non-joiner
		// spells Persian.
		{"👩\u200d💻 notes", "👩\u200d💻 notes"},
		{"می\u200cخواهم", "می\u200cخواهم"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			f := newFixture(t)
			s := startSession(t, f.opts())
			s.initialize("claude-code")
			content := "  body\n\twith\r\nwhitespace\x00 kept  "
			r := s.save(map[string]any{"content": content, "title": tt.title})
			if r.Error != nil {
				t.Fatal(r.Error)
			}
			want := fmt.Sprintf("Saved to Rook inbox %s under \"%s\"", today(), tt.want)
			if got := r.text(t); got != want {
				t.Errorf("result %q, want %q", got, want)
			}
			s.close()
			saves := pendingSaves(t, f)
			if len(saves) != 1 || saves[0].Title != tt.want || saves[0].Content != content {
				t.Errorf("saved %+v", saves)
			}
		})
	}
}

// The seeds refuse a title "empty after sanitization" (input_invalid). A
// title of only invisible characters (zero-width space U+200B, word
// joiner U+2060, BOM U+FEFF: what inbox.Typeable drops from client names
// as characters nobody can see or type) was taken: the note got an
// empty-looking heading ("## " then nothing visible) and the reply said
// `under "​"`.
func TestTitleOfOnlyInvisibleCharactersIsRefused(t *testing.T) {
	for _, title := range []string{"\u200b\u2060\ufeff", " \u200b \u202e\t"} {
		f := newFixture(t)
		s := startSession(t, f.opts())
		s.initialize("zed")
		r := s.save(map[string]any{"content": "hello", "title": title})
		s.close()
		if r.code() != -32004 {
			t.Fatalf("a title of only invisible characters %q: code %d, result %s; want -32004 input_invalid", title, r.code(), r.Result)
		}
		if saves := pendingSaves(t, f); len(saves) != 0 {
			t.Fatalf("a refused save was saved: %+v", saves)
		}
	}
}

func TestContentLimitInCharacters(t *testing.T) {
	tests := []struct {
		name    string
		content string
		code    int
	}{
		{"100,000 two-byte characters", strings.Repeat("é", MaxContentChars), 0},
		{"100,000 four-byte characters", strings.Repeat("🦀", MaxContentChars), 0},
		{"100,001 two-byte characters", strings.Repeat("é", MaxContentChars+1), -32004},
		{"100,001 ASCII characters", strings.Repeat("a", MaxContentChars+1), -32004},
		{"200 characters of title", "x", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			s := startSession(t, f.opts())
			s.initialize("claude-code")
			args := map[string]any{"content": tt.content}
			if tt.content == "x" {
				args["title"] = strings.Repeat("ö", MaxTitleChars)
			}
			r := s.save(args)
			if r.code() != tt.code {
				t.Fatalf("code %d (%+v), want %d", r.code(), r.Error, tt.code)
			}
			s.close()
			saves := pendingSaves(t, f)
			if tt.code == 0 && (len(saves) != 1 || saves[0].Content != tt.content) {
				t.Errorf("content not saved exactly")
			}
			acts := activity(t, f)
			if len(acts) != 1 || acts[0].Chars != len([]rune(tt.content)) {
				t.Errorf("activity %+v", acts)
			}
		})
	}
}

// TestSpoolHoldsExactlyTheSaves runs a session of saves and refusals and
// reads back the spool and the activity log.
func TestSpoolHoldsExactlyTheSaves(t *testing.T) {
	f := newFixture(t)
	s := startSession(t, f.opts())
	s.initialize("Claude Code")

	type attempt struct {
		args   any
		status string
	}
	attempts := []attempt{
		{map[string]any{"content": "first\n\n  kept as sent  "}, "saved"},
		{map[string]any{"content": "second", "title": "Action items"}, "saved"},
		{map[string]any{"content": "   "}, "input_invalid"},
		{map[string]any{"content": "third", "title": nil}, "saved"}, // null title: no title
		{"not an object", "input_invalid"},
	}
	for i, a := range attempts {
		r := s.save(a.args)
		if (a.status == "saved") != (r.Error == nil) {
			t.Fatalf("attempt %d: %+v", i, r.Error)
		}
		f.clock.Advance(time.Second)
	}
	if r := s.save(map[string]any{"content": "x"}); r.text(t) != "Saved to Rook inbox "+today() {
		t.Errorf("text %q", r.text(t))
	}
	s.close()

	saves := pendingSaves(t, f)
	want := []inbox.Save{
		{Content: "first\n\n  kept as sent  "},
		{Content: "second", Title: "Action items"},
		{Content: "third"},
		{Content: "x"},
	}
	if len(saves) != len(want) {
		t.Fatalf("%d saves, want %d", len(saves), len(want))
	}
	ids := map[string]bool{}
	for i, sv := range saves {
		if sv.Content != want[i].Content || sv.Title != want[i].Title || sv.Client != "claude" ||
			sv.ClientName != "Claude Code" || sv.ID == "" || ids[sv.ID] || sv.Time.IsZero() {
			t.Errorf("save %d: %+v", i, sv)
		}
		ids[sv.ID] = true
	}
	acts := activity(t, f)
	if len(acts) != len(attempts)+1 {
		t.Fatalf("%d activity records, want %d", len(acts), len(attempts)+1)
	}
	for i, a := range attempts {
		if acts[i].Status != a.status || acts[i].Client != "claude" || (a.status == "saved") != (acts[i].ID != "") {
			t.Errorf("activity %d: %+v, want %s", i, acts[i], a.status)
		}
	}
	if acts[0].Chars != len("first\n\n  kept as sent  ") || acts[0].ID != saves[0].ID {
		t.Errorf("activity 0: %+v", acts[0])
	}
}

// holds: a client name is never used as a file name. A client that calls
// itself "../../../../etc/x" (path traversal) saves into its own inbox;
// the only files the server makes are its spool and activity files under
// the store's inbox/, named after the process, not the client.
func TestClientNameWithPathTraversalMakesNoFileOutsideTheInbox(t *testing.T) {
	f := newFixture(t)
	s := startSession(t, f.opts())
	s.initialize("../../../../etc/x")
	if r := s.save(map[string]any{"content": "hello", "title": "t"}); r.Error != nil {
		t.Fatal(r.Error)
	}
	s.close()
	var files []string
	var walk func(dir string)
	walk = func(dir string) {
		ents, err := f.fs.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			if e.IsDir() {
				walk(p)
			} else {
				files = append(files, p)
			}
		}
	}
	walk("/")
	for _, p := range files {
		if strings.Contains(p, "etc") || (strings.HasPrefix(p, testHome+"/inbox/") && !strings.HasSuffix(p, "/1-42.jsonl")) {
			t.Errorf("unexpected file %s", p)
		}
	}
	saves := pendingSaves(t, f)
	if len(saves) != 1 || saves[0].Client != "../../../../etc/x" {
		t.Fatalf("saves %+v", saves)
	}
}

// TestServersDoNotShareFiles: two servers (two clients) at once each
// write their own spool file, and every save is there once.
func TestServersDoNotShareFiles(t *testing.T) {
	f := newFixture(t)
	a := f.opts()
	b := f.opts()
	b.ProcessName = "1-43"
	sa, sb := startSession(t, a), startSession(t, b)
	sa.initialize("claude-code")
	sb.initialize("cursor-vscode")
	for i := range 10 {
		sa.save(map[string]any{"content": fmt.Sprint("a", i)})
		sb.save(map[string]any{"content": fmt.Sprint("b", i)})
	}
	sa.close()
	sb.close()
	counts := map[string]int{}
	for _, sv := range pendingSaves(t, f) {
		counts[sv.Client+":"+sv.Content]++
	}
	if len(counts) != 20 {
		t.Errorf("saves %v", counts)
	}
	for k, n := range counts {
		if n != 1 {
			t.Errorf("%s saved %d times", k, n)
		}
	}
}

func TestTooLongLine(t *testing.T) {
	f := newFixture(t)
	huge := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("z", MaxLineBytes) + `"}}`
	replies := runLines(t, f.opts(), huge, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if len(replies) != 2 || replies[0].code() != -32600 || replies[1].Error != nil || string(replies[1].ID) != "2" {
		t.Fatalf("replies %+v", replies)
	}
}

// A message too long to read is answered with its own id when the id can
// be read from it, wherever it stands: it was answered with id null, so
// the client never got a reply to its request. An id that cannot be read
// (none, not a string or number, not an object at all) is still null.
func TestTooLongLineKeepsItsID(t *testing.T) {
	f := newFixture(t)
	pad := strings.Repeat("z", MaxLineBytes)
	longID := strings.Repeat("k", maxIDBytes-2) // with its quotes, maxIDBytes
	lines := []struct{ line, id string }{
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"append_to_inbox","arguments":{"content":"` + pad + `"}}}`, "7"},
		{`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"append_to_inbox","arguments":{"content":"` + pad + `","id":9}},"id" : "req-8"}`, `"req-8"`},
		{`{"jsonrpc":"2.0","\u0069d":-1.5e3,"method":"ping","params":{"pad":["a\"}",{"id":1}],"more":"` + pad + `"}}`, "-1.5e3"},
		// No id of its own (params' is not): a notification, no reply
		// (TestTooBigNotificationGetsNoReply); one that is not JSON-RPC
		// 2.0 is answered, id null, as parseMessage answers it.
		{`{"jsonrpc":"2.1","method":"ping","params":{"id":4,"pad":"` + pad + `"}}`, "null"},
		{`{"jsonrpc":"2.0","id":{"n":5},"method":"ping","params":{"pad":"` + pad + `"}}`, "null"},
		{`["jsonrpc","2.0","id",6,"` + pad + `"]`, "null"},
		// The id is held up to maxIDBytes of its own, white space around it aside.
		{`{"jsonrpc":"2.0","id" :  "` + longID + `"  ,"method":"ping","params":{"pad":"` + pad + `"}}`, `"` + longID + `"`},
		{`{"jsonrpc":"2.0","id":"` + longID + `k","method":"ping","params":{"pad":"` + pad + `"}}`, "null"},
	}
	var in []string
	for _, l := range lines {
		in = append(in, l.line)
	}
	replies := runLines(t, f.opts(), append(in, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)...)
	if len(replies) != len(lines)+1 || replies[len(lines)].Error != nil || string(replies[len(lines)].ID) != "2" {
		t.Fatalf("replies %+v", replies)
	}
	for i, l := range lines {
		if replies[i].code() != CodeInvalidRequest || string(replies[i].ID) != l.id {
			t.Errorf("message %d: reply id %s code %d, want id %s code %d", i, replies[i].ID, replies[i].code(), l.id, CodeInvalidRequest)
		}
	}
}

// A save too big to read is refused unread and, being a save attempt, is
// in the activity log; a huge message of another kind, or one before
// initialize, is not.
func TestTooLongSaveIsInTheActivityLog(t *testing.T) {
	f := newFixture(t)
	huge := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"append_to_inbox","arguments":{"content":"` + strings.Repeat("z", MaxLineBytes) + `"}}}`
	hugePing := `{"jsonrpc":"2.0","id":3,"method":"ping","params":{"pad":"` + strings.Repeat("z", MaxLineBytes) + `"}}`
	replies := runLines(t, f.opts(), huge,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","clientInfo":{"name":"cursor"}}}`,
		huge, hugePing, `{"jsonrpc":"2.0","id":4,"method":"ping"}`)
	// Before initialize, and a ping, too long: invalid requests; a save
	// too long: a content over the limit (seed 000's error table).
	if len(replies) != 5 || replies[0].code() != -32600 || replies[2].code() != CodeInputInvalid || replies[3].code() != -32600 || replies[4].Error != nil {
		t.Fatalf("replies %+v", replies)
	}
	acts := activity(t, f)
	if len(acts) != 1 || acts[0].Status != "input_invalid" || acts[0].Client != "cursor" || !strings.Contains(acts[0].Detail, "refused unread") {
		t.Fatalf("activity %+v", acts)
	}
}

// A save too big to read (a message over MaxLineBytes) is a content over
// the limit: -32004 input_invalid on "content", naming the limit and to
// split it (seed 000's error table), as the activity log records it. A
// batch, or a call of another tool, too long stays an invalid request; a
// paused inbox says so first, as for any save.
func TestTooBigSaveIsInputInvalid(t *testing.T) {
	f := newFixture(t)
	huge := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"append_to_inbox","arguments":{"content":"` + strings.Repeat("z", 5<<20) + `"}}}`
	other := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"other_tool","arguments":{"content":"` + strings.Repeat("z", 5<<20) + `"}}}`
	batch := `[` + strings.Replace(huge, `"id":2`, `"id":4`, 1) + `]`
	replies := runLines(t, f.opts(),
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","clientInfo":{"name":"cursor"}}}`,
		huge, other, batch)
	if len(replies) != 4 {
		t.Fatalf("replies %+v", replies)
	}
	r := replies[1]
	if string(r.ID) != "2" || r.code() != CodeInputInvalid || r.Error.Data["status"] != "input_invalid" || r.Error.Data["field"] != "content" ||
		!strings.Contains(r.Error.Message, "100000") || !strings.Contains(r.Error.Message, "split it into several saves") {
		t.Fatalf("a 5 MB content: reply id %s error %+v; want -32004 input_invalid on \"content\" naming the limit of 100000 characters", r.ID, r.Error)
	}
	if replies[2].code() != -32600 || replies[3].code() != -32600 {
		t.Errorf("another tool's call, a batch, too long: %+v %+v; want -32600", replies[2].Error, replies[3].Error)
	}
	if acts := activity(t, f); len(acts) != 3 || acts[0].Status != statusInputInvalid || acts[0].Detail != r.Error.Message {
		t.Fatalf("activity %+v", acts)
	}

	if err := inbox.SetPaused(f.fs, testHome, true); err != nil {
		t.Fatal(err)
	}
	replies = runLines(t, f.opts(),
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","clientInfo":{"name":"cursor"}}}`,
		huge)
	if len(replies) != 2 || replies[1].code() != CodePaused {
		t.Fatalf("paused: replies %+v", replies)
	}
}

// The user's client sends a save whose content is over 4 MiB, with
// "arguments" written before "name" in params (JSON members have no order:
// a client that builds params as {arguments, name}, e.g. from a map or by
// adding the name last, is as valid as one that writes name first). What
// happens: the kept 512-byte head holds no "name", isSaveCall says it is
// not a save, and the reply is -32600 "invalid request: message over
// 4194304 bytes", while the same save with "name" first gets -32004
// input_invalid on "content" (README: "so is a save whose message is too
// big to read (over 4 MiB: its content is over the limit; split it into
// several saves)"): the same answer whatever the order of the members,
// -32004 input_invalid, telling the client to split the save. Only the
// first 512 bytes were looked at for "name": past them, -32600. The
// scanner reads method and name, as the id, wherever they stand.
func TestTooBigSaveWithNameAfterArgumentsIsInputInvalid(t *testing.T) {
	f := newFixture(t)
	huge := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"arguments":{"content":"` + strings.Repeat("z", 5<<20) + `"},"name":"append_to_inbox"}}`
	replies := runLines(t, f.opts(),
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","clientInfo":{"name":"cursor"}}}`,
		huge)
	if len(replies) != 2 {
		t.Fatalf("replies %+v", replies)
	}
	r := replies[1]
	if string(r.ID) != "2" || r.code() != CodeInputInvalid || r.Error.Data["field"] != "content" ||
		!strings.Contains(r.Error.Message, "split it into several saves") {
		t.Fatalf("a 5 MB save with \"name\" after \"arguments\": reply id %s error %+v; want -32004 input_invalid on \"content\" (split it into several saves), as when \"name\" comes first", r.ID, r.Error)
	}
}

// The user's client sends a save over 4 MiB as a notification (no "id").
// A save sent as a notification of normal size is neither answered nor
// saved nor recorded (TestProtocolEdges: "a save as a notification
// (neither answered nor saved)"; JSON-RPC 2.0: "The Server MUST NOT reply
// to a Notification"): the too-big one neither. It was answered with an
// error whose id is null (a reply the client never asked for, which an
// SDK matching replies to requests logs as an unknown response or treats
// as a protocol error), and recorded in the activity log.
func TestTooBigNotificationGetsNoReply(t *testing.T) {
	f := newFixture(t)
	huge := `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"append_to_inbox","arguments":{"content":"` + strings.Repeat("z", 5<<20) + `"}}}`
	replies := runLines(t, f.opts(),
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","clientInfo":{"name":"cursor"}}}`,
		huge,
		`{"jsonrpc":"2.0","id":5,"method":"ping"}`)
	if len(replies) != 2 || string(replies[1].ID) != "5" {
		var got []string
		for _, r := range replies {
			got = append(got, string(r.ID))
		}
		t.Fatalf("replies to ids %v (second: %+v); want only those to initialize (1) and ping (5): a notification gets no reply", got, replies[1].Error)
	}
}

// The user's client sends the same too-big save with "method" written
// last ({"jsonrpc","id","params":{...},"method":"tools/call"}): -32004
// input_invalid, and the attempt recorded (README: `rook inbox activity`
// lists "every save attempt, refused ones too"). It was -32600, and not
// in the activity log: the 512-byte head read held no "method".
func TestTooBigSaveWithMethodLastIsInTheActivityLog(t *testing.T) {
	f := newFixture(t)
	huge := `{"jsonrpc":"2.0","id":2,"params":{"name":"append_to_inbox","arguments":{"content":"` + strings.Repeat("z", 5<<20) + `"}},"method":"tools/call"}`
	replies := runLines(t, f.opts(),
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","clientInfo":{"name":"cursor"}}}`,
		huge)
	if len(replies) != 2 {
		t.Fatalf("replies %+v", replies)
	}
	acts := activity(t, f)
	if r := replies[1]; r.code() != CodeInputInvalid || len(acts) != 1 || acts[0].Status != statusInputInvalid {
		t.Fatalf("a 5 MB save with \"method\" last: reply %+v, activity %+v; want -32004 input_invalid, recorded once in the activity log", r.Error, acts)
	}
}

func TestNoStoreAtStartIsNotFatal(t *testing.T) {
	f := newFixture(t)
	f.fs = vfs.NewMem()
	s := startSession(t, f.opts())
	s.initialize("claude-code")
	if r := s.save(map[string]any{"content": "x"}); r.code() != -32001 {
		t.Fatalf("code %d", r.code())
	}
	// rook init while the server runs: the next save goes through.
	if _, err := cas.Init(f.fs, f.clock, testHome); err != nil {
		t.Fatal(err)
	}
	if r := s.save(map[string]any{"content": "y"}); r.Error != nil {
		t.Fatal(r.Error)
	}
	s.close()
	if !strings.Contains(f.log.String(), "rook init") {
		t.Errorf("stderr %q does not say to run rook init", f.log.String())
	}
}

func TestContextCancelStopsServe(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	inR, inW := io.Pipe()
	defer inW.Close()
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, inR, io.Discard, f.opts()) }()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
}

func TestSanitizeTitle(t *testing.T) {
	if got := SanitizeTitle("\t a\nb \x00"); got != "ab" {
		t.Errorf("got %q", got)
	}
}

// TestNotUnicodeRefused: content or a title holding bytes that are not
// UTF-8, or an escaped unpaired surrogate, was saved with U+FFFD in their
// place and the client told "Saved": the note was not what was sent, and
// nobody knew. Now the save is refused (input_invalid), nothing is saved,
// and a literal U+FFFD, or a surrogate pair, is saved as sent.
func TestNotUnicodeRefused(t *testing.T) {
	const save = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"append_to_inbox","arguments":%s}}`
	tests := []struct {
		name, args, field string
		want              string // saved content; "" when refused
	}{
		{"content not UTF-8", "{\"content\":\"bad \xff\xfe here\"}", "content", ""},
		{"content lone surrogate", `{"content":"lone \ud800 here"}`, "content", ""},
		{"title not UTF-8", "{\"content\":\"x\",\"title\":\"t\xc3\"}", "title", ""},
		{"title lone low surrogate", `{"content":"x","title":"\udc00"}`, "title", ""},
		{"literal U+FFFD", `{"content":"kept \ufffd and ` + "\xef\xbf\xbd" + `"}`, "", "kept \ufffd and \ufffd"},
		{"surrogate pair", `{"content":"crab \ud83e\udd80"}`, "", "crab 🦀"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			s := startSession(t, f.opts())
			s.initialize("claude-code")
			r := s.roundTrip(fmt.Sprintf(save, tt.args))
			s.close()
			saves := pendingSaves(t, f)
			if tt.want != "" {
				if r.Error != nil || len(saves) != 1 || saves[0].Content != tt.want {
					t.Fatalf("reply %+v, saves %+v, want %q saved", r.Error, saves, tt.want)
				}
				return
			}
			if r.code() != CodeInputInvalid || !strings.Contains(r.Error.Message, "not Unicode text") || len(saves) != 0 {
				t.Fatalf("reply %+v, saves %+v: want input_invalid and nothing saved", r.Error, saves)
			}
			if field := r.Error.Data["field"]; field != tt.field {
				t.Fatalf("field %v, want %s", field, tt.field)
			}
		})
	}
}

// README (rook mcp serve): a title "with nothing to see, only spaces,
// controls or invisible characters (zero-width spaces, joiners, U+FEFF),
// is refused (input_invalid), as an empty one is".
func TestATitleOfOnlyInvisibleCharactersIsRefused(t *testing.T) {
	for _, title := range []string{
		"\u034f",             // COMBINING GRAPHEME JOINER: a joiner, default-ignorable, draws nothing
		"\u3164",             // HANGUL FILLER: default-ignorable, draws nothing (the classic blank name)
		"\u115f\u1160",       // HANGUL CHOSEONG/JUNGSEONG FILLER
		"\u00ad\u034f\u3164", // soft hyphen, grapheme joiner, Hangul filler
	} {
		raw, _ := json.Marshal(map[string]string{"content": "x", "title": title})
		a, err := parseArgs(raw)
		if err == nil {
			t.Errorf("title %+q (nothing to see) was accepted as %+q; README says such a title is refused (input_invalid)", title, a.title)
		}
	}
}

// Zero-width spaces, word joiners and U+FEFF alone are refused.
func TestATitleOfZeroWidthSpacesIsRefused(t *testing.T) {
	raw, _ := json.Marshal(map[string]string{"content": "x", "title": "\u200b\u2060 \ufeff"})
	if _, err := parseArgs(raw); err == nil {
		t.Fatal("accepted")
	}
}

// A running server whose store is made again (rm -rf + rook init, or a
// backup moved into place) saves into the spool of the store now at the
// home, not into its old file, unlinked: a save acknowledged is one a
// drain of that store takes in. With no store there, the save is refused.
func TestSaveAfterTheStoreIsMadeAgainIsNotLost(t *testing.T) {
	home := filepath.Join(t.TempDir(), "store")
	clk := &clock.Fixed{T: t0}
	if _, err := cas.Init(vfs.OS, clk, home); err != nil {
		t.Fatal(err)
	}
	s := startSession(t, Options{FS: vfs.OS, Home: home, Clock: clk, ProcessName: "1-42", Version: "test"})
	s.initialize("cursor")
	if r := s.save(map[string]any{"content": "before"}); r.Error != nil {
		t.Fatal(r.Error)
	}
	// The user makes the store again while the client keeps running.
	if err := os.RemoveAll(home); err != nil {
		t.Fatal(err)
	}
	if _, err := cas.Init(vfs.OS, clk, home); err != nil {
		t.Fatal(err)
	}
	r := s.save(map[string]any{"content": "after the store was made again"})
	pending, _, err := inbox.ReadPending(vfs.OS, home, inbox.Progress{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Error != nil || len(pending) != 1 || pending[0].Save.Content != "after the store was made again" {
		t.Fatalf("the server answered %+v, and the store at %s has %d pending saves (%+v): the note is lost", r.Error, home, len(pending), pending)
	}
	// Then the store is removed and not made again: the save is refused,
	// not written to the spool file of a store that is gone.
	if err := os.RemoveAll(home); err != nil {
		t.Fatal(err)
	}
	if gone := s.save(map[string]any{"content": "no store"}); gone.code() != CodeInboxUnavailable {
		t.Errorf("a save with no store: %+v, want inbox_unavailable", gone.Error)
	}
	if _, err := cas.Init(vfs.OS, clk, home); err != nil {
		t.Fatal(err)
	}
	r2 := s.save(map[string]any{"content": "in the third store"})
	s.close()
	if r2.Error != nil {
		t.Fatalf("a save into the store made once more: %+v", r2.Error)
	}
	if pending, _, err := inbox.ReadPending(vfs.OS, home, inbox.Progress{}); err != nil || len(pending) != 1 || pending[0].Save.Content != "in the third store" {
		t.Fatalf("the third store's spool: %+v, %v", pending, err)
	}
}

// Protocol edges in one session: requests before initialize, ids of every
// JSON kind, a CRLF line, notifications (no reply), a cursor on
// tools/list, a save as a notification (neither answered nor saved).
func TestProtocolEdges(t *testing.T) {
	f := newFixture(t)
	initLine := `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-03-26","clientInfo":{"name":"zed"}}}`
	replies := runLines(t, f.opts(),
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, // before initialize: -32600
		initLine,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,           // no reply
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}`, // no reply
		`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}`,
		"{\"jsonrpc\":\"2.0\",\"id\":\"crlf\",\"method\":\"ping\"}\r",
		`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":3,"method":"nope"}`,
		`not json`,
		`[]`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{"cursor":"abc"}}`,
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"append_to_inbox","arguments":{"content":"as a notification"}}}`,
	)
	want := []struct {
		id   string
		code int
	}{{"1", -32600}, {`"init"`, 0}, {"1.5", 0}, {"123456789012345678901234567890", 0}, {`"crlf"`, 0}, {"null", -32600},
		{"3", -32601}, {"null", -32700}, {"null", -32600}, {"6", -32602}}
	if len(replies) != len(want) {
		t.Fatalf("%d replies, want %d: %+v", len(replies), len(want), replies)
	}
	for i, w := range want {
		if string(replies[i].ID) != w.id || replies[i].code() != w.code {
			t.Errorf("reply %d: id %s code %d, want id %s code %d", i, replies[i].ID, replies[i].code(), w.id, w.code)
		}
	}
	if saves := pendingSaves(t, f); len(saves) != 0 {
		t.Errorf("a notification or a refused call saved: %+v", saves)
	}
	if !strings.Contains(string(replies[1].Result), `"2025-03-26"`) {
		t.Errorf("initialize: %s", replies[1].Result)
	}
}
