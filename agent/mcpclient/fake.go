package mcpclient

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Fake is an MCP server for tests, over HTTP (it is an http.Handler: wrap
// it in an httptest.Server) or over stdio (ServeStdio, or a test binary
// re-run through FakeSpec and FakeMain). It can be told which tools to
// offer, how to page them, and how to misbehave. It is not used by rook
// itself.
type Fake struct {
	cfg  FakeConfig
	stop chan struct{}

	mu         sync.Mutex
	tools      []FakeTool
	session    string
	negotiated string
	log        []FakeRequest
	deleted    []string
	pending    map[string]chan *message // answers to the fake's own requests
	nextID     int
	closed     bool
}

// FakeConfig is what a Fake does. It is JSON so that a stdio fake in
// another process can be given it in an environment variable.
type FakeConfig struct {
	Name, Version string // serverInfo; default "fake", "1.0.0"
	// Protocol is the one revision the server speaks; empty: every one in
	// ProtocolVersions, answering the client's if it is among them.
	Protocol string
	// StrictProtocol answers a request for another revision with a -32602
	// "Unsupported protocol version" error listing Protocol, instead of
	// answering with Protocol.
	StrictProtocol    bool
	NoToolsCapability bool // and tools/list is an unknown method
	Instructions      string

	Tools     []FakeTool
	ToolsFile string // when set, the tools are read from this JSON file at every tools/list
	PageSize  int    // tools per tools/list page; 0: all on one
	// EmptyCursor makes the second page's cursor the empty string.
	EmptyCursor bool

	// Misbehaviour in tools/list.
	Cycle     bool   // the last page's nextCursor leads back to the second page
	Duplicate bool   // the last page repeats the first tool
	Malformed string // the last page is broken: "not-object", "tools-not-array" or "nameless"
	PadBytes  int    // every tools/list result carries this many bytes of padding

	Silent        bool     // never answer anything
	SilentMethods []string // never answer these methods

	// HTTP only.
	SSE               bool   // answer every request with an event stream
	Session           string // give this Mcp-Session-Id at initialize, and require it after
	Token             string // require "Authorization: Bearer <Token>"
	Challenge         string // the WWW-Authenticate of a 401
	Forbidden         bool   // refuse with 403, not 401
	ProtectedResource bool   // serve /.well-known/oauth-protected-resource

	// stdio only.
	ExitAtStart bool // write a line to stderr and exit with status 3
	Stubborn    bool // ignore the end of stdin and SIGTERM
	Noise       bool // write a line that is not JSON before every message
	// SayNotifications writes each notification received on stderr, as
	// "fake: notified METHOD PARAMS": the test reads it there.
	SayNotifications bool
}

// FakeTool is one tool a Fake offers.
type FakeTool struct {
	Name        string
	Title       string          `json:",omitempty"`
	Description string          `json:",omitempty"`
	InputSchema json.RawMessage `json:",omitempty"` // default {"type":"object"}
	Annotations json.RawMessage `json:",omitempty"` // sent as is
	// Result is the tools/call result, sent as is. Default: one text block
	// "NAME called with ARGS".
	Result json.RawMessage `json:",omitempty"`
	Error  *RPCError       `json:",omitempty"` // answer tools/call with this JSON-RPC error
	// Ask makes tools/call first ask the client for sampling, elicitation,
	// roots and a ping; the result's text has a line for each answer.
	Ask   bool          `json:",omitempty"`
	Sleep time.Duration `json:",omitempty"` // before answering tools/call
}

// FakeRequest is a message a Fake received (the headers over HTTP only).
type FakeRequest struct {
	Method   string // "" for a response
	Params   json.RawMessage
	Session  string // Mcp-Session-Id
	Protocol string // MCP-Protocol-Version
	Auth     string // Authorization
	Accept   string
}

// NewFake makes a fake server.
func NewFake(cfg FakeConfig) *Fake {
	if cfg.Name == "" {
		cfg.Name = "fake"
	}
	if cfg.Version == "" {
		cfg.Version = "1.0.0"
	}
	return &Fake{cfg: cfg, stop: make(chan struct{}), tools: slices.Clone(cfg.Tools), session: cfg.Session, pending: map[string]chan *message{}}
}

// SetTools changes the tools offered from now on.
func (f *Fake) SetTools(tools []FakeTool) {
	f.mu.Lock()
	f.tools = slices.Clone(tools)
	f.mu.Unlock()
}

// Requests are the messages received, in order (over stdio, by a Fake
// serving in this process: a child process's are its own).
func (f *Fake) Requests() []FakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.log)
}

// Methods are the methods of Requests ("" for responses).
func (f *Fake) Methods() []string {
	var out []string
	for _, r := range f.Requests() {
		out = append(out, r.Method)
	}
	return out
}

// Deleted are the session ids DELETEd over HTTP.
func (f *Fake) Deleted() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.deleted)
}

// ExpireSession forgets the session: requests carrying the old id get 404,
// and the next initialize gets id.
func (f *Fake) ExpireSession(id string) {
	f.mu.Lock()
	f.session = id
	f.negotiated = ""
	f.mu.Unlock()
}

// Close releases requests the fake was told never to answer.
func (f *Fake) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.closed {
		f.closed = true
		close(f.stop)
	}
}

// FakeSpec is a Spec that runs this program (a test binary) as a stdio
// Fake doing cfg. The program must call FakeMain(env) first thing, in
// TestMain.
func FakeSpec(name, env string, cfg FakeConfig) Spec {
	b, err := json.Marshal(cfg)
	if err != nil {
		panic(err)
	}
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	// A race-detector binary sleeps a second at exit unless told not to.
	race := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	return Spec{Name: name, Command: exe, Env: map[string]string{env: string(b), "GORACE": race}}
}

// FakeMain serves a stdio Fake and exits when the environment variable env
// holds a FakeConfig; otherwise it returns at once.
func FakeMain(env string) {
	raw := os.Getenv(env)
	if raw == "" {
		return
	}
	var cfg FakeConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "fake: bad config:", err)
		os.Exit(2)
	}
	if cfg.ExitAtStart {
		fmt.Fprintln(os.Stderr, "fake: told to exit at start")
		os.Exit(3)
	}
	if cfg.Stubborn {
		signal.Ignore(syscall.SIGTERM)
	}
	if err := NewFake(cfg).ServeStdio(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "fake:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// asker sends a request to the client and waits for its answer.
type asker func(ctx context.Context, method string, params any) (*message, error)

// newAsk registers a request of the fake's own; the answer arrives on the
// channel.
func (f *Fake) newAsk(method string, params any) (*message, chan *message) {
	f.mu.Lock()
	f.nextID++
	id := fmt.Sprintf("srv-%d", f.nextID)
	ch := make(chan *message, 1)
	f.pending[id] = ch
	f.mu.Unlock()
	p, _ := json.Marshal(params)
	if params == nil {
		p = nil
	}
	return &message{JSONRPC: "2.0", ID: json.RawMessage(strconv.Quote(id)), Method: method, Params: p}, ch
}

func (f *Fake) answered(m *message) {
	f.mu.Lock()
	ch := f.pending[idKey(m.ID)]
	delete(f.pending, idKey(m.ID))
	f.mu.Unlock()
	if ch != nil {
		ch <- m
	}
}

func (f *Fake) wait(ctx context.Context, ch chan *message) (*message, error) {
	select {
	case m := <-ch:
		return m, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-f.stop:
		return nil, fmt.Errorf("fake closed")
	}
}

func result(req *message, v any) *message {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return &message{JSONRPC: "2.0", ID: req.ID, Result: b}
}

func rpcErr(req *message, code int, msg string, data any) *message {
	e := &RPCError{Code: code, Message: msg}
	if data != nil {
		e.Data, _ = json.Marshal(data)
	}
	return &message{JSONRPC: "2.0", ID: req.ID, Error: e}
}

// serve answers one request; nil means no answer (silence until ctx ends).
func (f *Fake) serve(ctx context.Context, req *message, ask asker) *message {
	if f.cfg.Silent || slices.Contains(f.cfg.SilentMethods, req.Method) {
		select {
		case <-ctx.Done():
		case <-f.stop:
		}
		return nil
	}
	switch req.Method {
	case "initialize":
		return f.initialize(req)
	case "ping":
		return result(req, struct{}{})
	case "tools/list":
		if f.cfg.NoToolsCapability {
			break
		}
		return f.list(req)
	case "tools/call":
		return f.call(ctx, req, ask)
	}
	return rpcErr(req, codeMethodNotFound, "Method not found: "+req.Method, nil)
}

func (f *Fake) initialize(req *message) *message {
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	json.Unmarshal(req.Params, &p)
	answer := f.cfg.Protocol
	switch {
	case answer == "" && slices.Contains(ProtocolVersions, p.ProtocolVersion):
		answer = p.ProtocolVersion
	case answer == "":
		answer = ProtocolVersions[0]
	case answer != p.ProtocolVersion && f.cfg.StrictProtocol:
		return rpcErr(req, codeInvalidParams, "Unsupported protocol version", map[string]any{"supported": []string{answer}, "requested": p.ProtocolVersion})
	}
	f.mu.Lock()
	f.negotiated = answer
	f.mu.Unlock()
	caps := map[string]any{}
	if !f.cfg.NoToolsCapability {
		caps["tools"] = map[string]any{"listChanged": false}
	}
	return result(req, map[string]any{
		"protocolVersion": answer,
		"capabilities":    caps,
		"serverInfo":      map[string]string{"name": f.cfg.Name, "version": f.cfg.Version},
		"instructions":    f.cfg.Instructions,
	})
}

func (f *Fake) currentTools() ([]FakeTool, error) {
	if f.cfg.ToolsFile != "" {
		b, err := os.ReadFile(f.cfg.ToolsFile)
		if err != nil {
			return nil, err
		}
		var tools []FakeTool
		return tools, json.Unmarshal(b, &tools)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.tools), nil
}

func (f *Fake) cursor(page int) string {
	if page == 1 && f.cfg.EmptyCursor {
		return ""
	}
	return fmt.Sprintf("page-%d", page)
}

func wireTool(t FakeTool) map[string]any {
	w := map[string]any{"name": t.Name, "inputSchema": json.RawMessage(`{"type":"object"}`)}
	if t.Title != "" {
		w["title"] = t.Title
	}
	if t.Description != "" {
		w["description"] = t.Description
	}
	if t.InputSchema != nil {
		w["inputSchema"] = t.InputSchema
	}
	if t.Annotations != nil {
		w["annotations"] = t.Annotations
	}
	return w
}

func (f *Fake) list(req *message) *message {
	tools, err := f.currentTools()
	if err != nil {
		return rpcErr(req, -32603, err.Error(), nil)
	}
	var p struct {
		Cursor *string `json:"cursor"`
	}
	json.Unmarshal(req.Params, &p)
	size := f.cfg.PageSize
	if size <= 0 {
		size = max(len(tools), 1)
	}
	pages := max((len(tools)+size-1)/size, 1)
	idx := 0
	if p.Cursor != nil {
		idx = -1
		for i := 1; i < pages; i++ {
			if f.cursor(i) == *p.Cursor {
				idx = i
			}
		}
		if idx < 0 {
			return rpcErr(req, codeInvalidParams, "invalid cursor", nil)
		}
	}
	var wire []any
	for _, t := range tools[min(idx*size, len(tools)):min((idx+1)*size, len(tools))] {
		wire = append(wire, wireTool(t))
	}
	last := idx == pages-1
	if last && f.cfg.Duplicate && len(tools) > 0 {
		wire = append(wire, wireTool(tools[0]))
	}
	if wire == nil {
		wire = []any{}
	}
	res := map[string]any{"tools": wire}
	if !last {
		res["nextCursor"] = f.cursor(idx + 1)
	} else if f.cfg.Cycle && pages > 1 {
		res["nextCursor"] = f.cursor(1)
	}
	if f.cfg.PadBytes > 0 {
		res["_pad"] = strings.Repeat("x", f.cfg.PadBytes)
	}
	if last {
		switch f.cfg.Malformed {
		case "not-object":
			return result(req, []any{res})
		case "tools-not-array":
			res["tools"] = "none"
		case "nameless":
			res["tools"] = append(wire, map[string]any{"description": "a tool without a name"})
		}
	}
	return result(req, res)
}

func (f *Fake) call(ctx context.Context, req *message, ask asker) *message {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	json.Unmarshal(req.Params, &p)
	tools, _ := f.currentTools()
	i := slices.IndexFunc(tools, func(t FakeTool) bool { return t.Name == p.Name })
	if i < 0 {
		return rpcErr(req, codeInvalidParams, "Unknown tool: "+p.Name, nil)
	}
	t := tools[i]
	if t.Sleep > 0 {
		select {
		case <-time.After(t.Sleep):
		case <-ctx.Done():
			return nil
		}
	}
	switch {
	case t.Error != nil:
		return &message{JSONRPC: "2.0", ID: req.ID, Error: t.Error}
	case t.Ask:
		var lines []string
		for _, q := range []struct {
			method string
			params any
		}{
			{"sampling/createMessage", map[string]any{"messages": []any{map[string]any{"role": "user", "content": map[string]string{"type": "text", "text": "hello"}}}, "maxTokens": 10}},
			{"elicitation/create", map[string]any{"message": "What is your name?", "requestedSchema": map[string]any{"type": "object", "properties": map[string]any{}}}},
			{"roots/list", map[string]any{}},
			{"ping", nil},
		} {
			ans, err := ask(ctx, q.method, q.params)
			switch {
			case err != nil:
				lines = append(lines, fmt.Sprintf("%s: no answer: %v", q.method, err))
			case ans.Error != nil:
				lines = append(lines, fmt.Sprintf("%s: error %d: %s", q.method, ans.Error.Code, ans.Error.Message))
			default:
				lines = append(lines, fmt.Sprintf("%s: result %s", q.method, ans.Result))
			}
		}
		return result(req, map[string]any{"content": []any{map[string]string{"type": "text", "text": strings.Join(lines, "\n")}}})
	case t.Result != nil:
		return &message{JSONRPC: "2.0", ID: req.ID, Result: t.Result}
	}
	args := string(p.Arguments)
	if args == "" {
		args = "nothing"
	}
	return result(req, map[string]any{"content": []any{map[string]string{"type": "text", "text": p.Name + " called with " + args}}})
}

// ServeHTTP is streamable HTTP, with /.well-known/oauth-protected-resource
// when told to.
func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/.well-known/oauth-protected-resource") {
		if !f.cfg.ProtectedResource {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"resource": "http://" + r.Host + "/mcp", "authorization_servers": []string{"http://" + r.Host + "/auth"}})
		return
	}
	if f.cfg.Token != "" || f.cfg.Forbidden || f.cfg.Challenge != "" {
		if f.cfg.Token == "" || r.Header.Get("Authorization") != "Bearer "+f.cfg.Token {
			if f.cfg.Challenge != "" {
				w.Header().Set("WWW-Authenticate", f.cfg.Challenge)
			}
			code := http.StatusUnauthorized
			if f.cfg.Forbidden {
				code = http.StatusForbidden
			}
			http.Error(w, "no entry with "+r.Header.Get("Authorization"), code)
			return
		}
	}
	switch r.Method {
	case http.MethodDelete:
		f.mu.Lock()
		f.deleted = append(f.deleted, r.Header.Get("Mcp-Session-Id"))
		f.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
		return
	case http.MethodPost:
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	msgs, derr := decodeMessages(body)
	if err != nil || derr != nil || len(msgs) != 1 {
		http.Error(w, "one JSON-RPC message, please", http.StatusBadRequest)
		return
	}
	m := msgs[0]
	f.mu.Lock()
	f.log = append(f.log, FakeRequest{Method: m.Method, Params: m.Params, Session: r.Header.Get("Mcp-Session-Id"),
		Protocol: r.Header.Get("MCP-Protocol-Version"), Auth: r.Header.Get("Authorization"), Accept: r.Header.Get("Accept")})
	session, negotiated := f.session, f.negotiated
	f.mu.Unlock()
	if m.Method != "initialize" {
		if session != "" && r.Header.Get("Mcp-Session-Id") != session {
			code := http.StatusNotFound
			if r.Header.Get("Mcp-Session-Id") == "" {
				code = http.StatusBadRequest
			}
			http.Error(w, "unknown session", code)
			return
		}
		if negotiated != "" && r.Header.Get("MCP-Protocol-Version") != negotiated {
			http.Error(w, "MCP-Protocol-Version should be "+negotiated, http.StatusBadRequest)
			return
		}
	}
	switch {
	case m.isResponse():
		f.answered(m)
		w.WriteHeader(http.StatusAccepted)
		return
	case !m.isRequest():
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if m.Method == "initialize" && session != "" {
		w.Header().Set("Mcp-Session-Id", session)
	}
	if !f.cfg.SSE && !f.asks(m) {
		ans := f.serve(r.Context(), m, nil)
		if ans == nil {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(ans)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	event := func(m *message) {
		b, _ := json.MarshalIndent(m, "", "  ") // several data: lines
		fmt.Fprint(w, "event: message\n")
		for _, line := range strings.Split(string(b), "\n") {
			fmt.Fprintf(w, "data: %s\n", line)
		}
		fmt.Fprint(w, "\n")
		if flusher != nil {
			flusher.Flush()
		}
	}
	fmt.Fprint(w, ": the fake speaks\n\nid: 0\ndata:\n\n") // a comment and a priming event
	event(&message{JSONRPC: "2.0", Method: "notifications/message", Params: json.RawMessage(`{"level":"info","data":"working"}`)})
	ask := func(ctx context.Context, method string, params any) (*message, error) {
		q, ch := f.newAsk(method, params)
		event(q)
		return f.wait(ctx, ch)
	}
	if ans := f.serve(r.Context(), m, ask); ans != nil {
		event(ans)
	}
}

// asks says whether m is a call of a tool that asks the client things
// (which needs an event stream over HTTP).
func (f *Fake) asks(m *message) bool {
	if m.Method != "tools/call" {
		return false
	}
	var p struct {
		Name string `json:"name"`
	}
	json.Unmarshal(m.Params, &p)
	tools, _ := f.currentTools()
	i := slices.IndexFunc(tools, func(t FakeTool) bool { return t.Name == p.Name })
	return i >= 0 && tools[i].Ask
}

// ServeStdio speaks MCP one line at a time until in ends.
func (f *Fake) ServeStdio(in io.Reader, out io.Writer) error {
	var wmu sync.Mutex
	send := func(m *message) {
		b, _ := json.Marshal(m)
		wmu.Lock()
		defer wmu.Unlock()
		if f.cfg.Noise {
			io.WriteString(out, "the fake says something that is not JSON\n")
		}
		out.Write(append(b, '\n'))
	}
	ask := func(ctx context.Context, method string, params any) (*message, error) {
		q, ch := f.newAsk(method, params)
		send(q)
		return f.wait(ctx, ch)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	// The requests being served, by id: notifications/cancelled stops one
	// (a sleeping tool then sends no answer, as the spec asks).
	var running sync.Map
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		msgs, err := decodeMessages(sc.Bytes())
		if err != nil {
			send(&message{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: &RPCError{Code: -32700, Message: "parse error"}})
			continue
		}
		for _, m := range msgs {
			f.mu.Lock()
			f.log = append(f.log, FakeRequest{Method: m.Method, Params: m.Params})
			f.mu.Unlock()
			switch {
			case m.isResponse():
				f.answered(m)
			case m.isNotification():
				if f.cfg.SayNotifications {
					fmt.Fprintf(os.Stderr, "fake: notified %s %s\n", m.Method, m.Params)
				}
				if m.Method == "notifications/cancelled" {
					var p struct {
						RequestID json.RawMessage `json:"requestId"`
					}
					json.Unmarshal(m.Params, &p)
					if stop, ok := running.Load(idKey(p.RequestID)); ok {
						stop.(context.CancelFunc)()
					}
				}
			case m.isRequest():
				rctx, stop := context.WithCancel(ctx)
				running.Store(idKey(m.ID), stop)
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer running.Delete(idKey(m.ID))
					defer stop()
					if ans := f.serve(rctx, m, ask); ans != nil {
						send(ans)
					}
				}()
			}
		}
	}
	if f.cfg.Stubborn {
		<-f.stop // forever, in a child process
	}
	cancel()
	wg.Wait()
	return sc.Err()
}
