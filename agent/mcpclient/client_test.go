package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestHandshake(t *testing.T) {
	f, spec := httpFake(t, FakeConfig{Name: "everything", Version: "2.0.0", Instructions: "be kind", Tools: someTools(1)})
	c := connect(t, spec, testOptions())
	if c.Negotiated() != "2025-11-25" {
		t.Fatalf("negotiated %q", c.Negotiated())
	}
	if n, v := c.ServerInfo(); n != "everything" || v != "2.0.0" || c.Instructions() != "be kind" {
		t.Fatalf("server info %q %q %q", n, v, c.Instructions())
	}
	if _, err := c.Tools(context.Background()); err != nil {
		t.Fatal(err)
	}
	reqs := f.Requests()
	if got := f.Methods(); !slices.Equal(got, []string{"initialize", "notifications/initialized", "tools/list"}) {
		t.Fatalf("methods %q", got)
	}
	// No roots, no sampling, no elicitation: capabilities are empty.
	if got := string(reqs[0].Params); got != `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"rook-test","version":"0"}}` {
		t.Fatalf("initialize params %s", got)
	}
	if reqs[0].Accept != "application/json, text/event-stream" || reqs[0].Protocol != "" {
		t.Fatalf("initialize headers %+v", reqs[0])
	}
	for _, r := range reqs[1:] {
		if r.Protocol != "2025-11-25" {
			t.Fatalf("%s without MCP-Protocol-Version: %+v", r.Method, r)
		}
	}
}

func TestHandshakeOverStdio(t *testing.T) {
	var stderr strings.Builder
	o := testOptions()
	o.Stderr = &stderr
	c := connect(t, FakeSpec("fake", fakeEnv, FakeConfig{Name: "piped", Tools: someTools(2), Noise: true}), o)
	if n, _ := c.ServerInfo(); n != "piped" || c.Negotiated() != "2025-11-25" {
		t.Fatalf("server %q, negotiated %q", n, c.Negotiated())
	}
	tools, err := c.Tools(context.Background()) // lines that are not JSON are skipped
	if err != nil || names(tools) != "tool_00,tool_01" {
		t.Fatalf("tools %q %v", names(tools), err)
	}
}

func TestNegotiationFallback(t *testing.T) {
	for _, m := range allModes {
		t.Run(m.name+"/older answer", func(t *testing.T) {
			f, spec := m.reach(t, FakeConfig{Protocol: "2025-03-26", Tools: someTools(1)})
			c := connect(t, spec, testOptions())
			if c.Negotiated() != "2025-03-26" {
				t.Fatalf("negotiated %q", c.Negotiated())
			}
			if _, err := c.Tools(context.Background()); err != nil {
				t.Fatal(err) // the fake refuses a wrong MCP-Protocol-Version with 400
			}
			if f != nil && f.Requests()[2].Protocol != "2025-03-26" {
				t.Fatalf("tools/list sent %+v", f.Requests()[2])
			}
		})
	}
	t.Run("unsupported-version error names what it supports", func(t *testing.T) {
		f, spec := httpFake(t, FakeConfig{Protocol: "2025-06-18", StrictProtocol: true})
		c := connect(t, spec, testOptions())
		if c.Negotiated() != "2025-06-18" {
			t.Fatalf("negotiated %q", c.Negotiated())
		}
		if got := f.Methods(); !slices.Equal(got, []string{"initialize", "initialize", "notifications/initialized"}) {
			t.Fatalf("methods %q", got)
		}
	})
	t.Run("a revision rook does not speak", func(t *testing.T) {
		_, spec := httpFake(t, FakeConfig{Protocol: "2099-01-01"})
		_, err := Connect(context.Background(), spec, testOptions())
		f := wantFailure(t, err, ProtocolError)
		wantContains(t, f.Msg, `"2099-01-01"`, `"2025-11-25"`)
	})
	t.Run("asking for an older revision", func(t *testing.T) {
		f, spec := httpFake(t, FakeConfig{})
		o := testOptions()
		o.ProtocolVersion = "2025-06-18"
		if c := connect(t, spec, o); c.Negotiated() != "2025-06-18" || !strings.Contains(string(f.Requests()[0].Params), `"2025-06-18"`) {
			t.Fatalf("negotiated %q", c.Negotiated())
		}
		o.ProtocolVersion = "2026-07-28"
		if _, err := Connect(context.Background(), spec, o); err == nil || KindOf(err) != 0 {
			t.Fatalf("asking for 2026-07-28: %v", err)
		}
	})
}

func TestSSEAndSession(t *testing.T) {
	f, spec := httpFake(t, FakeConfig{SSE: true, Session: "sess-1", Tools: someTools(5), PageSize: 2})
	c := connect(t, spec, testOptions())
	tools, err := c.Tools(context.Background())
	if err != nil || len(tools) != 5 {
		t.Fatalf("tools %q %v", names(tools), err)
	}
	for _, r := range f.Requests()[1:] {
		if r.Session != "sess-1" {
			t.Fatalf("%s without the session id: %+v", r.Method, r)
		}
	}
	c.Close()
	if d := f.Deleted(); !slices.Equal(d, []string{"sess-1"}) {
		t.Fatalf("deleted %q", d)
	}
	if _, err := c.Tools(context.Background()); err == nil {
		t.Fatal("tools after close")
	}
}

func TestSessionLost(t *testing.T) {
	f, spec := httpFake(t, FakeConfig{Session: "one", Tools: someTools(3)})
	c := connect(t, spec, testOptions())
	f.ExpireSession("two") // the server restarted
	tools, err := c.Tools(context.Background())
	if err != nil || len(tools) != 3 {
		t.Fatalf("tools %q %v", names(tools), err)
	}
	want := []string{"initialize", "notifications/initialized", "tools/list", "initialize", "notifications/initialized", "tools/list"}
	if got := f.Methods(); !slices.Equal(got, want) {
		t.Fatalf("methods %q", got)
	}
	if last := f.Requests()[5]; last.Session != "two" {
		t.Fatalf("retried with %+v", last)
	}
}

func TestToolsAcrossPages(t *testing.T) {
	tools := someTools(7)
	tools[3].Title = "Reader"
	tools[3].InputSchema = json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)
	tools[3].Annotations = json.RawMessage(`{"title":"Read a file","readOnlyHint":true,"destructiveHint":false,"idempotentHint":"yes"}`)
	for _, m := range allModes {
		t.Run(m.name, func(t *testing.T) {
			// The second page's cursor is "": a cursor all the same.
			_, spec := m.reach(t, FakeConfig{Tools: tools, PageSize: 2, EmptyCursor: true})
			c := connect(t, spec, testOptions())
			got, err := c.Tools(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if names(got) != "tool_00,tool_01,tool_02,tool_03,tool_04,tool_05,tool_06" {
				t.Fatalf("tools %q", names(got))
			}
			r := got[3]
			a := r.Annotations
			if r.Title != "Reader" || r.Description != "tool number 3" || a.Title != "Read a file" ||
				a.ReadOnlyHint == nil || !*a.ReadOnlyHint || a.DestructiveHint == nil || *a.DestructiveHint ||
				a.IdempotentHint != nil || a.OpenWorldHint != nil || !strings.Contains(string(r.InputSchema), `"required":["path"]`) {
				t.Fatalf("tool %+v annotations %+v", r, a)
			}
			if got[0].Annotations.ReadOnlyHint != nil {
				t.Fatalf("a claim nobody made: %+v", got[0].Annotations)
			}
		})
	}
}

func TestDiscoveryFailures(t *testing.T) {
	cases := []struct {
		name string
		cfg  FakeConfig
		lim  Limits
		says string
	}{
		{"cyclic cursor", FakeConfig{Tools: someTools(6), PageSize: 2, Cycle: true}, Limits{}, "cycle"},
		{"duplicate name", FakeConfig{Tools: someTools(4), PageSize: 2, Duplicate: true}, Limits{}, `"tool_00" twice`},
		{"page not an object", FakeConfig{Tools: someTools(4), PageSize: 2, Malformed: "not-object"}, Limits{}, "page 2 is malformed: it is not an object"},
		{"tools not an array", FakeConfig{Tools: someTools(4), PageSize: 2, Malformed: "tools-not-array"}, Limits{}, "tools is not an array"},
		{"tool without a name", FakeConfig{Tools: someTools(4), PageSize: 2, Malformed: "nameless"}, Limits{}, "tool 3 has no name"},
		{"too many tools", FakeConfig{Tools: someTools(10), PageSize: 3}, Limits{MaxTools: 5}, "more than 5 tools (rook reads at most [mcp.discovery] max_tools in config.toml)"},
		{"too many pages", FakeConfig{Tools: someTools(10), PageSize: 2}, Limits{MaxPages: 3}, "more than 3 pages (rook reads at most [mcp.discovery] max_pages in config.toml)"},
		{"oversized", FakeConfig{Tools: someTools(4), PageSize: 2, PadBytes: 3000}, Limits{MaxBytes: 5000}, "larger than 5000 bytes (rook reads at most [mcp.discovery] max_bytes in config.toml)"},
		{"one oversized page", FakeConfig{Tools: someTools(1), PadBytes: 9000}, Limits{MaxBytes: 5000}, "larger than 5000 bytes (rook reads at most [mcp.discovery] max_bytes in config.toml)"},
		{"too slow", FakeConfig{Tools: someTools(1), SilentMethods: []string{"tools/list"}}, Limits{Timeout: 300 * time.Millisecond}, "not read within 300ms (--timeout, or [mcp.discovery] timeout in config.toml, allows more)"},
	}
	for _, m := range allModes {
		for _, tc := range cases {
			t.Run(m.name+"/"+tc.name, func(t *testing.T) {
				_, spec := m.reach(t, tc.cfg)
				o := testOptions()
				lim := tc.lim
				lim.ConnectTimeout = o.Limits.ConnectTimeout
				o.Limits = lim
				c := connect(t, spec, o)
				tools, err := c.Tools(context.Background())
				if tools != nil {
					t.Fatalf("a prefix came back: %q", names(tools))
				}
				wantContains(t, wantFailure(t, err, DiscoveryError).Msg, tc.says)
			})
		}
	}
	t.Run("within the limits exactly", func(t *testing.T) {
		_, spec := httpFake(t, FakeConfig{Tools: someTools(6), PageSize: 2})
		o := testOptions()
		o.Limits.MaxTools, o.Limits.MaxPages = 6, 3
		if tools, err := connect(t, spec, o).Tools(context.Background()); err != nil || len(tools) != 6 {
			t.Fatalf("tools %q %v", names(tools), err)
		}
	})
	t.Run("no tools", func(t *testing.T) {
		_, spec := httpFake(t, FakeConfig{})
		if tools, err := connect(t, spec, testOptions()).Tools(context.Background()); err != nil || tools == nil || len(tools) != 0 {
			t.Fatalf("tools %v %v", tools, err)
		}
	})
	t.Run("no tools capability", func(t *testing.T) {
		_, spec := httpFake(t, FakeConfig{NoToolsCapability: true})
		if tools, err := connect(t, spec, testOptions()).Tools(context.Background()); err != nil || tools == nil || len(tools) != 0 {
			t.Fatalf("tools %v %v", tools, err)
		}
	})
}

func TestCall(t *testing.T) {
	pic := FakeTool{Name: "pic", Result: json.RawMessage(`{"content":[
		{"type":"text","text":"a red dot"},
		{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"},
		{"type":"audio","data":"AAAAAA","mimeType":"audio/wav"},
		{"type":"resource_link","uri":"file:///a.txt","name":"a.txt","mimeType":"text/plain"},
		{"type":"resource","resource":{"uri":"mem://b","mimeType":"text/plain","text":"inside"}}
	],"structuredContent":{"dots":1,"colour":"red"}}`)}
	failing := FakeTool{Name: "fails", Result: json.RawMessage(`{"content":[{"type":"text","text":"path must be relative"}],"isError":true}`)}
	broken := FakeTool{Name: "broken", Error: &RPCError{Code: -32000, Message: "the database is down"}}
	echo := FakeTool{Name: "echo"}
	for _, m := range allModes {
		t.Run(m.name, func(t *testing.T) {
			_, spec := m.reach(t, FakeConfig{Tools: []FakeTool{pic, failing, broken, echo}})
			c := connect(t, spec, testOptions())
			ctx := context.Background()

			r, err := c.Call(ctx, "pic", nil)
			if err != nil {
				t.Fatal(err)
			}
			want := []Content{
				{Type: "text", Text: "a red dot"},
				{Type: "image", MimeType: "image/png", DataBytes: 8},
				{Type: "audio", MimeType: "audio/wav", DataBytes: 4},
				{Type: "resource_link", URI: "file:///a.txt", Name: "a.txt", MimeType: "text/plain"},
				{Type: "resource", URI: "mem://b", MimeType: "text/plain", Text: "inside"},
			}
			if r.IsError || !slices.Equal(r.Content, want) || string(r.Structured) != `{"dots":1,"colour":"red"}` {
				t.Fatalf("result %+v structured %s", r, r.Structured)
			}

			r, err = c.Call(ctx, "fails", json.RawMessage(`{"path":"/etc"}`))
			if err != nil || !r.IsError || r.Content[0].Text != "path must be relative" {
				t.Fatalf("isError result %+v %v", r, err)
			}

			r, err = c.Call(ctx, "echo", json.RawMessage(`{"say":"hi"}`))
			if err != nil || r.Content[0].Text != `echo called with {"say":"hi"}` {
				t.Fatalf("echo %+v %v", r, err)
			}

			_, err = c.Call(ctx, "broken", nil)
			var re *RPCError
			if f := wantFailure(t, err, ProtocolError); !errors.As(err, &re) || re.Code != -32000 || re.Message != "the database is down" {
				t.Fatalf("rpc error %v in %q", re, f.Msg)
			}
			_, err = c.Call(ctx, "nope", nil)
			if wantFailure(t, err, ProtocolError); !errors.As(err, &re) || re.Code != -32602 {
				t.Fatalf("unknown tool: %v", err)
			}

			if _, err := c.Call(ctx, "echo", json.RawMessage(`[1]`)); err == nil || KindOf(err) != 0 {
				t.Fatalf("arguments that are not an object: %v", err)
			}
		})
	}
}

func TestCallTimeout(t *testing.T) {
	for _, m := range []mode{httpJSON, stdio} {
		t.Run(m.name, func(t *testing.T) {
			_, spec := m.reach(t, FakeConfig{Tools: []FakeTool{{Name: "slow", Sleep: 5 * time.Second}}})
			o := testOptions()
			o.Limits.CallTimeout = 200 * time.Millisecond
			start := time.Now()
			_, err := connect(t, spec, o).Call(context.Background(), "slow", nil)
			// Given up on, the call was still the server's: the tool may
			// have run, or run still, which a user calling it again must
			// know; and how to give it longer.
			wantContains(t, wantFailure(t, err, ProtocolError).Msg, "the tool did not finish in time (200ms", "may have run", "check before calling it again", "--timeout")
			if time.Since(start) > 3*time.Second {
				t.Fatalf("took %v", time.Since(start))
			}
		})
	}
}

// cancelledParams finds the notifications/cancelled a fake received, and
// reads its params.
func cancelledParams(f *Fake) (id json.RawMessage, reason string, ok bool) {
	for _, r := range f.Requests() {
		if r.Method == "notifications/cancelled" {
			var p struct {
				RequestID json.RawMessage `json:"requestId"`
				Reason    string          `json:"reason"`
			}
			json.Unmarshal(r.Params, &p)
			return p.RequestID, p.Reason, true
		}
	}
	return nil, "", false
}

// rook calls a slow tool on a streamable HTTP server (`rook mcp call`, or an
// agent's call) and the call runs past its timeout (Limits.CallTimeout,
// `--timeout`): the client tells the server it gave up, so the server can
// stop the tool: MCP 2025-11-25 basic/lifecycle "Timeouts": "the sender
// SHOULD issue a cancellation notification for that request";
// basic/utilities/cancellation: notifications/cancelled with the request's
// id. On streamable HTTP, dropping the connection is no substitute:
// basic/transports "Disconnection SHOULD NOT be interpreted as the client
// cancelling its request". The client only closed the POST: no
// notifications/cancelled ever reached the server, which went on running
// the tool. The call's error stays the timeout it was.
func TestCallTimeoutSendsCancelled(t *testing.T) {
	f, spec := httpFake(t, FakeConfig{Tools: []FakeTool{{Name: "slow", Sleep: 10 * time.Second}}})
	o := testOptions()
	o.Limits.CallTimeout = 300 * time.Millisecond
	c := connect(t, spec, o)
	_, err := c.Call(context.Background(), "slow", nil)
	if err == nil {
		t.Fatal("the slow call did not time out")
	}
	wantContains(t, wantFailure(t, err, ProtocolError).Msg, "the tool did not finish in time (300ms")
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if slices.Contains(f.Methods(), "notifications/cancelled") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	id, reason, ok := cancelledParams(f)
	if !ok {
		t.Fatalf("no notifications/cancelled after the call timed out; the server received: %q", f.Methods())
	}
	// initialize is 1, the call 2 (Client.nextID).
	if string(id) != "2" || !strings.Contains(reason, "timed out") {
		t.Fatalf("notifications/cancelled for request %s (%q), want the call's, 2, and that it timed out", id, reason)
	}
}

// The same over stdio: the program reads the notification (the fake
// writes it on its stderr, and stops the tool).
func TestCallTimeoutSendsCancelledOverStdio(t *testing.T) {
	o := testOptions()
	o.Limits.CallTimeout = 300 * time.Millisecond
	c := connect(t, FakeSpec("fake", fakeEnv, FakeConfig{Tools: []FakeTool{{Name: "slow", Sleep: 10 * time.Second}}, SayNotifications: true}), o)
	_, err := c.Call(context.Background(), "slow", nil)
	wantContains(t, wantFailure(t, err, ProtocolError).Msg, "the tool did not finish in time (300ms")
	tail := c.tr.(*stdioTransport).tail
	var last string
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if last = tail.lastLine(); strings.Contains(last, "notifications/cancelled") {
			break
		}
	}
	wantContains(t, last, "fake: notified notifications/cancelled", `"requestId":2`, "timed out")
}

// A call its caller gives up on (an agent's call cancelled) is cancelled
// at the server too, saying so; initialize never is (the spec: a client
// MUST NOT cancel it), though its time runs out.
func TestCallCancelledByTheCaller(t *testing.T) {
	f, spec := httpFake(t, FakeConfig{Tools: []FakeTool{{Name: "slow", Sleep: 10 * time.Second}}})
	c := connect(t, spec, testOptions())
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	if _, err := c.Call(ctx, "slow", nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("a call its caller cancelled failed with %v", err)
	}
	id, reason, ok := cancelledParams(f)
	if !ok || string(id) != "2" || !strings.Contains(reason, "stopped waiting") {
		t.Fatalf("notifications/cancelled %v for request %s (%q); the server received %q", ok, id, reason, f.Methods())
	}

	f, spec = httpFake(t, FakeConfig{SilentMethods: []string{"initialize"}})
	o := testOptions()
	o.Limits.ConnectTimeout = 300 * time.Millisecond
	if _, err := Connect(context.Background(), spec, o); err == nil {
		t.Fatal("a server silent at initialize was connected to")
	}
	if slices.Contains(f.Methods(), "notifications/cancelled") {
		t.Fatalf("initialize was cancelled: %q", f.Methods())
	}
}

// A server that does not take the cancellation (gone, or stuck) holds the
// call up only cancelTimeout more, and the call's error is the timeout it
// was.
func TestCallCancelledSendIsBounded(t *testing.T) {
	old := cancelTimeout
	cancelTimeout = 300 * time.Millisecond
	defer func() { cancelTimeout = old }()
	srv := callServer(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	stuck := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte("notifications/cancelled")) {
			<-r.Context().Done() // never answered
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		srv.Config.Handler.ServeHTTP(w, r)
	}))
	defer srv.Close()
	defer stuck.Close()
	o := testOptions()
	o.Limits.CallTimeout = 300 * time.Millisecond
	c := connect(t, Spec{URL: stuck.URL}, o)
	start := time.Now()
	_, err := c.Call(context.Background(), "tool_00", nil)
	wantContains(t, wantFailure(t, err, ProtocolError).Msg, "the tool did not finish in time (300ms", "may have run")
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("the call took %v: the cancellation's send was not bounded", d)
	}
}

// An answer larger than rook reads came from a tool that ran: the message
// says so (and that the result is not shown), over either transport.
func TestCallAnswerTooLarge(t *testing.T) {
	big := json.RawMessage(`{"content":[{"type":"text","text":"` + strings.Repeat("x", 4096) + `"}]}`)
	for _, m := range []mode{httpJSON, stdio} {
		t.Run(m.name, func(t *testing.T) {
			_, spec := m.reach(t, FakeConfig{Tools: []FakeTool{{Name: "big", Result: big}}})
			o := testOptions()
			o.Limits.MaxMessageBytes = 2048
			_, err := connect(t, spec, o).Call(context.Background(), "big", nil)
			wantContains(t, wantFailure(t, err, ProtocolError).Msg, "larger than 2048 bytes", "the tool may have run", "check what it did before calling it again")
		})
	}
}

// A call that runs out of the caller's time, before its own CallTimeout,
// does not name CallTimeout as the limit it ran past.
func TestCallTimeoutOfTheCaller(t *testing.T) {
	_, spec := httpFake(t, FakeConfig{Tools: []FakeTool{{Name: "slow", Sleep: 5 * time.Second}}})
	o := testOptions()
	o.Limits.CallTimeout = time.Minute
	c := connect(t, spec, o)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := c.Call(ctx, "slow", nil)
	msg := wantFailure(t, err, ProtocolError).Msg
	wantContains(t, msg, "the tool did not finish in time", "may have run")
	if strings.Contains(msg, "1m0s") {
		t.Fatalf("names the call timeout, not the limit it ran past: %q", msg)
	}
}

// A server may ask rook to run a model or to ask the user a question;
// both are declined in plain words, roots/list is unknown, ping is
// answered.
func TestServerRequestsDeclined(t *testing.T) {
	for _, m := range allModes {
		t.Run(m.name, func(t *testing.T) {
			_, spec := m.reach(t, FakeConfig{Tools: []FakeTool{{Name: "asker", Ask: true}}})
			var mu sync.Mutex
			var declined []string
			o := testOptions()
			o.OnDeclined = func(method string) {
				mu.Lock()
				declined = append(declined, method)
				mu.Unlock()
			}
			r, err := connect(t, spec, o).Call(context.Background(), "asker", nil)
			if err != nil {
				t.Fatal(err)
			}
			want := strings.Join([]string{
				"sampling/createMessage: error -32601: " + declineSampling,
				"elicitation/create: error -32601: " + declineElicitation,
				`roots/list: error -32601: method not found: rook does not serve "roots/list"`,
				"ping: result {}",
			}, "\n")
			if r.Content[0].Text != want {
				t.Fatalf("the server heard:\n%s", r.Content[0].Text)
			}
			mu.Lock()
			defer mu.Unlock()
			if !slices.Equal(declined, []string{"sampling/createMessage", "elicitation/create", "roots/list"}) {
				t.Fatalf("declined %q", declined)
			}
		})
	}
}

// A stdio server (buggy, or hostile: its output is not trusted) that
// writes requests to rook in a loop and does not read its stdin: the
// answers waiting to be written are bounded, and past the bound rook ends
// the program, saying why. Each was answered on a goroutine of its own:
// 60,000 lines made 60,000 goroutines, a longer loop took the machine's
// memory.
func TestStdioServerRequestsBounded(t *testing.T) {
	script := `IFS= read -r line
echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"flood","version":"1"}}}'
yes '{"jsonrpc":"2.0","id":7,"method":"ping"}' | head -n 60000
sleep 10`
	c, err := Connect(context.Background(), Spec{Command: "sh", Args: []string{"-c", script}}, testOptions())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer c.Close()
	peak := 0
	for i := 0; i < 15; i++ {
		time.Sleep(200 * time.Millisecond)
		peak = max(peak, runtime.NumGoroutine())
	}
	if peak > 5000 {
		t.Fatalf("%d goroutines at once answering one server's requests: unbounded", peak)
	}
	_, err = c.Tools(context.Background())
	wantContains(t, wantFailure(t, err, ProtocolError).Msg, "the program sent requests to rook faster than it read the answers", "rook ended it")
}

func TestParseContentSizes(t *testing.T) {
	for data, n := range map[string]int{"": 0, "AA==": 1, "AAA=": 2, "AAAA": 3, "AAAAAA": 4, "iVBORw0KGgo=": 8,
		// wrapped in lines: the breaks are not data
		"AAAA\nAAAA\n": 6, "AAAA\r\nAA==\r\n": 4} {
		if got := base64Len(data); got != n {
			t.Errorf("base64Len(%q) = %d, want %d", data, got, n)
		}
	}
	if got := clean("a\x1b[31mred\x1b[0m\nline\u202e", 100); got != "a [31mred [0m line" {
		t.Errorf("clean: %q", got)
	}
	if got := clean("abcdef", 3); got != "abc…" {
		t.Errorf("clean cut: %q", got)
	}
}

// The ids of the responses a line that does not decode carries, read as
// far as it is JSON: a response's (its error a string, a result holding
// NaN after its id), each of a batch's, but not a request's, nor null.
func TestUndecodedIDs(t *testing.T) {
	for line, want := range map[string]string{
		`{"jsonrpc":"2.0","id":3,"error":"disk full"}`:  `3`,
		`{"jsonrpc":"2.0","id":"a","result":{"n":NaN}}`: `"a"`,
		`{"result":{"n":NaN},"id":4}`:                   ``,
		`{"id":5,"method":"ping","params":"x"}`:         ``,
		`[{"id":6,"result":{}},{"id":7,"error":"x"}]`:   `6 7`,
		`{"id":null,"error":"x"}`:                       ``,
		`not json`:                                      ``,
	} {
		var got []string
		for _, id := range undecodedIDs([]byte(line)) {
			got = append(got, string(id))
		}
		if strings.Join(got, " ") != want {
			t.Errorf("undecodedIDs(%s) = %q, want %q", line, got, want)
		}
	}
}
