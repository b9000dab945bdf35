package agent

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/rookhq/rook/agent/mcpclient"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// fakeMCP is a small streamable-HTTP MCP server whose tool list a test
// changes between syncs, and which can refuse the credential.
type fakeMCP struct {
	mu     sync.Mutex
	tools  []map[string]any
	status int // non-zero: answer every request with this HTTP status
	calls  []string
	auth   []string // the Authorization header of each request
}

func (f *fakeMCP) setTools(names ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tools = nil
	for _, n := range names {
		t := map[string]any{"name": n, "description": "does " + n, "inputSchema": map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}, "required": []string{"q"}}}
		if strings.HasPrefix(n, "read") {
			t["annotations"] = map[string]any{"readOnlyHint": true}
		}
		f.tools = append(f.tools, t)
	}
}

func (f *fakeMCP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	if f.status != 0 {
		http.Error(w, "no", f.status)
		return
	}
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(body, &req) != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	if req.ID == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	var result any
	switch req.Method {
	case "initialize":
		result = map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]any{"name": "fake", "version": "1"}}
	case "tools/list":
		result = map[string]any{"tools": f.tools}
	case "tools/call":
		var p struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		json.Unmarshal(req.Params, &p)
		f.calls = append(f.calls, p.Name+" "+string(p.Arguments))
		result = map[string]any{"content": []any{map[string]any{"type": "text", "text": "ran " + p.Name}}}
	default:
		result = map[string]any{}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
}

func mcpOpts() mcpclient.Options {
	o := mcpclient.Options{ClientName: "rook-test", ClientVersion: "0"}
	o.Limits = mcpclient.DefaultLimits()
	return o
}

func toolStates(s *MCPServer) string {
	var out []string
	for _, t := range s.Tools {
		st := t.Name + ":" + onOff(t.On, "on", "off")
		if t.ReadOnly {
			st += ",ro"
		}
		if t.Approval {
			st += ",ap"
		}
		if t.Missing {
			st += ",missing"
		}
		out = append(out, st)
	}
	return strings.Join(out, " ")
}

func onOff(b bool, yes, no string) string {
	if b {
		return yes
	}
	return no
}

// TestMCPSyncRules: tools are on when a server is first added; later, new
// tools arrive off, settings survive, tools that disappear are marked
// missing and get their settings back when they return.
func TestMCPSyncRules(t *testing.T) {
	fake := &fakeMCP{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	r := testRook(t, vfs.NewMem())
	ctx := context.Background()
	fake.setTools("read_file", "write_file", "search")
	s, rep, err := r.MCPAdd(ctx, MCPAddOptions{Spec: mcpclient.Spec{Name: "files", URL: srv.URL}, Client: mcpOpts()})
	if err != nil {
		t.Fatal(err)
	}
	if got := toolStates(s); got != "read_file:on,ro search:on write_file:on" || len(rep.New) != 3 {
		t.Fatalf("after add: %s %+v", got, rep)
	}
	// The user's settings.
	off, yes := false, true
	if _, err := r.MCPSet("files", "write_file", MCPToolSettings{Approval: &yes}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.MCPSet("files", "search", MCPToolSettings{On: &off, ReadOnly: &yes}); err != nil {
		t.Fatal(err)
	}
	// The server drops write_file and grows delete_all.
	fake.setTools("read_file", "search", "delete_all")
	s, rep, err = r.MCPSync(ctx, "files", mcpOpts())
	if err != nil {
		t.Fatal(err)
	}
	if got := toolStates(s); got != "delete_all:off read_file:on,ro search:off,ro write_file:on,ap,missing" {
		t.Fatalf("after sync: %s", got)
	}
	if strings.Join(rep.New, ",") != "delete_all" || strings.Join(rep.Missing, ",") != "write_file" {
		t.Fatalf("report %+v", rep)
	}
	// write_file returns, with its settings.
	fake.setTools("read_file", "search", "delete_all", "write_file")
	s, rep, err = r.MCPSync(ctx, "files", mcpOpts())
	if err != nil || toolStates(s) != "delete_all:off read_file:on,ro search:off,ro write_file:on,ap" || strings.Join(rep.Returned, ",") != "write_file" {
		t.Fatalf("after return: %s %+v %v", toolStates(s), rep, err)
	}
	// Every change is an event of the server's session, state and calls.
	_, id, _ := r.MCPServer("files")
	evs, _ := r.Log.Read(id, 0, 100)
	if len(evs) != 5 { // add, set, set, sync, sync
		t.Fatalf("%d state events", len(evs))
	}
	// A fresh read of the store gives the same state (it is replayed).
	again, _, err := r.MCPServer("files")
	if err != nil || toolStates(again) != toolStates(s) {
		t.Fatalf("replayed: %s %v", toolStates(again), err)
	}
}

// TestMCPAddRefusesCredentials: the engine, not only the CLI, refuses a
// setup that would save a credential as given (in the URL, or in a header
// or program variable named like one), even offline, and saves nothing;
// the message never holds the credential.
func TestMCPAddRefusesCredentials(t *testing.T) {
	r := testRook(t, vfs.NewMem())
	for _, c := range []struct {
		spec mcpclient.Spec
		want string
	}{
		{mcpclient.Spec{URL: "https://alice:s3cret@example.com/mcp"}, "--url https://xxxxx@example.com/mcp: a user or password in the address"},
		{mcpclient.Spec{URL: "https://t0ken-s3cret@example.com/mcp"}, "--url https://xxxxx@example.com/mcp: a user or password"},
		{mcpclient.Spec{URL: "https://example.com/mcp?api_key=s3cret"}, "--url https://example.com/mcp?api_key=xxxxx: the query parameter api_key would be saved as given in the server's session, and its name says it is a credential; give it in a header by --header-env K=VAR or --bearer-env VAR"},
		{mcpclient.Spec{URL: "https://example.com/mcp?v=2&access_token=s3cret"}, "--url https://example.com/mcp?v=xxxxx&access_token=xxxxx: the query parameter access_token"},
		{mcpclient.Spec{URL: "https://example.com/mcp?Token=s3cret"}, "the query parameter Token "},
		{mcpclient.Spec{URL: "https://example.com/mcp?key=s3cret"}, "the query parameter key "},
		{mcpclient.Spec{URL: "https://example.com/mcp?%61uth=s3cret"}, "the query parameter auth "},
		{mcpclient.Spec{URL: "ftp://alice:s3cret@example.com/mcp"}, "--url ftp://xxxxx@example.com/mcp: give an http:// or https:// address"},
		{mcpclient.Spec{URL: "https://example.com/mcp", Headers: map[string]string{"X-Api-Key": "k3y-s3cret"}}, "--header X-Api-Key: its value would be saved as given in the server's session, and the name says it is a credential; give it by --header-env X-Api-Key=VAR"},
		{mcpclient.Spec{URL: "https://example.com/mcp", Headers: map[string]string{"authorization": "Bearer s3cret"}}, "--header authorization: its value would be saved"},
		{mcpclient.Spec{URL: "https://example.com/mcp", HeaderEnv: map[string]string{"X-Api-Key": ""}}, "--header-env X-Api-Key=: give the name of the variable"},
		{mcpclient.Spec{URL: "https://example.com/mcp", Headers: map[string]string{"X-Tenant": "s3cret"}, HeaderEnv: map[string]string{"X-Tenant": "V"}}, "--header X-Tenant is given twice, by --header and --header-env"},
		{mcpclient.Spec{URL: "https://example.com/mcp", Headers: map[string]string{"X-Tenant": "s3cret"}, HeaderEnv: map[string]string{"x-tenant": "V"}}, "--header X-Tenant and --header-env x-tenant name the same header (header names are case-insensitive): give it once"},
		{mcpclient.Spec{URL: "https://example.com/mcp", Headers: map[string]string{"X-Tenant": "s3cret", "x-tenant": "b"}}, "--header X-Tenant and --header x-tenant name the same header"},
		{mcpclient.Spec{URL: "https://example.com/mcp", HeaderEnv: map[string]string{"X-Tenant": "A", "X-TENANT": "B"}}, "--header-env X-TENANT and --header-env X-Tenant name the same header"},
		{mcpclient.Spec{URL: "https://example.com/mcp", BearerEnv: "T", HeaderEnv: map[string]string{"Authorization": "V"}}, "--header-env Authorization and --bearer-env both set Authorization: give one"},
		{mcpclient.Spec{URL: "https://example.com/mcp", Headers: map[string]string{"X Tenant": "acme"}}, `--header "X Tenant": a header's name is letters, digits and !#$%&'*+-.^_` + "`|~, without spaces or a colon"},
		{mcpclient.Spec{URL: "https://example.com/mcp", Headers: map[string]string{"X-Tenant:": "acme"}}, `--header "X-Tenant:": a header's name`},
		{mcpclient.Spec{URL: "https://example.com/mcp", HeaderEnv: map[string]string{"X-Api-Kéy": "V"}}, `--header-env "X-Api-Kéy": a header's name`},
		{mcpclient.Spec{URL: "https://example.com/mcp", Headers: map[string]string{"X-Tenant": "acme\r\nX-Injected: s3cret"}}, "--header X-Tenant: its value holds a line break or another control character, which cannot be sent"},
		{mcpclient.Spec{Command: "srv", Env: map[string]string{"GITHUB_TOKEN": "ghp-s3cret"}}, "--env GITHUB_TOKEN: its value would be saved as given in the server's session, and the name says it is a credential; give it by --env-from GITHUB_TOKEN=VAR"},
		{mcpclient.Spec{Command: "srv", EnvFrom: map[string]string{"GITHUB_TOKEN": ""}}, "--env-from GITHUB_TOKEN=: give the name"},
		{mcpclient.Spec{Command: "srv", Env: map[string]string{"HOST": "s3cret"}, EnvFrom: map[string]string{"HOST": "V"}}, "--env HOST is given twice, by --env and --env-from"},
		{mcpclient.Spec{Command: "srv", Args: []string{"serve", "--api-key=s3cret"}}, "--arg --api-key=xxxxx: its value would be saved as given in the server's session, and the flag's name (api-key) says it is a credential; pass it to the program in its environment by --env-from NAME=VAR"},
		{mcpclient.Spec{Command: "srv", Args: []string{"-Token=s3cret"}}, "--arg -Token=xxxxx: "},
		{mcpclient.Spec{Command: "srv", Args: []string{"--db-password=s3cret"}}, "--arg --db-password=xxxxx: "},
	} {
		c.spec.Name = "srv"
		_, _, err := r.MCPAdd(context.Background(), MCPAddOptions{Spec: c.spec, Offline: true, Client: mcpOpts()})
		var bad *BadArgumentError
		if !errors.As(err, &bad) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want a bad argument saying %q", c.spec, err, c.want)
		} else if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%+v: the message holds the credential: %v", c.spec, err)
		}
	}
	if list, err := r.MCPServers(); err != nil || len(list) != 0 {
		t.Fatalf("servers saved: %v %v", list, err)
	}
	// The same setups by the names of variables are saved.
	ok := []mcpclient.Spec{
		{Name: "web", URL: "https://example.com/mcp?tenant=acme", Headers: map[string]string{"X-Tenant": "acme\tcorp", "X-Odd_#Name~": "1"}, HeaderEnv: map[string]string{"X-Api-Key": "KEY"}, BearerEnv: "TOK"},
		{Name: "gh", Command: "srv", Env: map[string]string{"GH_HOST": "example.com"}, EnvFrom: map[string]string{"GITHUB_TOKEN": "GH"}, Args: []string{"--verbose=2", "--token-file", "/run/tok", "--max-tokens=4096", "serve"}},
	}
	for _, spec := range ok {
		if _, _, err := r.MCPAdd(context.Background(), MCPAddOptions{Spec: spec, Offline: true, Client: mcpOpts()}); err != nil {
			t.Fatalf("%+v: %v", spec, err)
		}
	}
}

// TestMCPURLCredentials: a setup saved by an older rook, with a password
// in its URL and a key in a header, is kept to connect (sent as Basic
// auth, at every sync) and shown as xxxxx, with the user; so are the
// values of its headers.
func TestMCPURLCredentials(t *testing.T) {
	fake := &fakeMCP{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	r := testRook(t, vfs.NewMem())
	ctx := context.Background()
	fake.setTools("search")
	u := strings.Replace(srv.URL, "http://", "http://alice:s3cret@", 1)
	old, _, err := r.MCPAdd(ctx, MCPAddOptions{Spec: mcpclient.Spec{Name: "web", URL: srv.URL}, Offline: true, Client: mcpOpts()})
	if err != nil {
		t.Fatal(err)
	}
	_, id, err := r.MCPServer("web")
	if err != nil {
		t.Fatal(err)
	}
	old.Spec.URL, old.Spec.Headers = u, map[string]string{"X-Api-Key": "k3y-s3cret"}
	if err := r.saveState(id, old); err != nil {
		t.Fatal(err)
	}
	fake.auth = nil
	s, _, err := r.MCPSync(ctx, "web", mcpOpts())
	if err != nil {
		t.Fatal(err)
	}
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:s3cret"))
	if len(fake.auth) == 0 || fake.auth[0] != basic {
		t.Fatalf("sync sent Authorization %q, want %q", fake.auth, basic)
	}
	shown := s.Shown()
	if want := strings.Replace(srv.URL, "http://", "http://xxxxx@", 1); shown.Spec.URL != want {
		t.Fatalf("shown URL %q, want %q", shown.Spec.URL, want)
	}
	if s.Spec.URL != u || s.Spec.Headers["X-Api-Key"] != "k3y-s3cret" {
		t.Fatalf("Shown changed the server's own setup: %q %v", s.Spec.URL, s.Spec.Headers)
	}
	if shown.Spec.Headers["X-Api-Key"] != "xxxxx" || len(shown.Spec.Headers) != 1 {
		t.Fatalf("shown headers %v, want the name with xxxxx", shown.Spec.Headers)
	}
	stdio := (&MCPServer{Spec: mcpclient.Spec{Command: "srv", Env: map[string]string{"GITHUB_TOKEN": "ghp-s3cret"}}}).Shown()
	if stdio.Spec.Env["GITHUB_TOKEN"] != "xxxxx" || len(stdio.Spec.Env) != 1 {
		t.Fatalf("shown env %v, want the name with xxxxx", stdio.Spec.Env)
	}
	b, _ := json.Marshal(shown)
	if strings.Contains(string(b), "s3cret") || strings.Contains(string(b), "alice") {
		t.Fatalf("shown server has the credentials: %s", b)
	}
}

// TestMCPToolLimit: at most MaxTools on at once; past it at add, the rest
// are left off and named; switching one more on is refused.
func TestMCPToolLimit(t *testing.T) {
	fake := &fakeMCP{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	r := testRook(t, vfs.NewMem())
	var names []string
	for i := range 5 {
		names = append(names, fmt.Sprintf("t%d", i))
	}
	fake.setTools(names...)
	s, rep, err := r.MCPAdd(context.Background(), MCPAddOptions{Spec: mcpclient.Spec{Name: "many", URL: srv.URL}, MaxTools: 3, Client: mcpOpts()})
	if err != nil || s.ToolsOn() != 3 || strings.Join(rep.LeftOff, ",") != "t3,t4" {
		t.Fatalf("%d on, left off %v, %v", s.ToolsOn(), rep.LeftOff, err)
	}
	on := true
	if _, err := r.MCPSet("many", "t4", MCPToolSettings{On: &on}); err == nil || !strings.Contains(err.Error(), "3 tools of many are on, its limit") {
		t.Fatalf("past the limit: %v", err)
	}
	if _, err := r.MCPLimit("many", 2); err == nil {
		t.Fatal("a limit below the tools on was taken")
	}
	if _, err := r.MCPLimit("many", 4); err != nil {
		t.Fatal(err)
	}
	if _, err := r.MCPSet("many", "t4", MCPToolSettings{On: &on}); err != nil {
		t.Fatal(err)
	}
}

// TestMCPCallRules: off tools and unapproved tools are refused; a call and
// its result are events; an unreachable or credential-less server keeps its
// setup and says which it is.
func TestMCPCallRules(t *testing.T) {
	fake := &fakeMCP{}
	srv := httptest.NewServer(fake)
	r := testRook(t, vfs.NewMem())
	ctx := context.Background()
	fake.setTools("read_it", "do_it")
	if _, _, err := r.MCPAdd(ctx, MCPAddOptions{Spec: mcpclient.Spec{Name: "x", URL: srv.URL}, Client: mcpOpts()}); err != nil {
		t.Fatal(err)
	}
	off, yes := false, true
	r.MCPSet("x", "do_it", MCPToolSettings{Approval: &yes})
	o := MCPCallOptions{Client: mcpOpts()}
	res, err := r.MCPCall(ctx, "x", "read_it", json.RawMessage(`{"q":"a"}`), o)
	if err != nil || res.Content[0].Text != "ran read_it" {
		t.Fatalf("call: %+v %v", res, err)
	}
	if _, err := r.MCPCall(ctx, "x", "do_it", nil, o); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "needs approval") {
		t.Fatalf("unapproved: %v", err)
	}
	o.Approve = func(*MCPServer, *MCPTool, json.RawMessage) bool { return true }
	if _, err := r.MCPCall(ctx, "x", "do_it", nil, o); err != nil {
		t.Fatal(err)
	}
	o.ReadOnlyOnly = true
	if _, err := r.MCPCall(ctx, "x", "do_it", nil, o); !errors.Is(err, ErrRefused) {
		t.Fatalf("read-only only: %v", err)
	}
	r.MCPSet("x", "read_it", MCPToolSettings{On: &off})
	if _, err := r.MCPCall(ctx, "x", "read_it", nil, MCPCallOptions{Client: mcpOpts()}); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "is off") {
		t.Fatalf("off: %v", err)
	}
	if len(fake.calls) != 2 {
		t.Fatalf("the server saw %v", fake.calls)
	}
	_, id, _ := r.MCPServer("x")
	evs, _ := r.Log.Read(id, 0, 100)
	var kinds []string
	for _, ev := range evs {
		if ev.Label != StateLabel {
			kinds = append(kinds, ev.Kind.String()+":"+ev.Label)
		}
	}
	// Each refusal is one error event (no tool-call: nothing was called),
	// saying which refusal and why.
	if strings.Join(kinds, " ") != "tool-call:read_it tool-result:read_it error:do_it tool-call:do_it tool-result:do_it error:do_it error:read_it" {
		t.Fatalf("events %v", kinds)
	}
	var refused []string
	for _, ev := range evs {
		if ev.Kind != eventlog.KindError {
			continue
		}
		b, err := r.Body(ev)
		if err != nil {
			t.Fatal(err)
		}
		var rec struct{ Server, Tool, Refused, Reason string }
		if err := json.Unmarshal(b, &rec); err != nil || rec.Server != "x" || rec.Reason == "" {
			t.Fatalf("refusal record %s: %v", b, err)
		}
		refused = append(refused, rec.Tool+":"+rec.Refused)
	}
	if strings.Join(refused, " ") != "do_it:needs-approval do_it:not-read-only read_it:off" {
		t.Fatalf("refusals recorded %v", refused)
	}
	// The credential rejected: needs-credential, setup kept.
	fake.mu.Lock()
	fake.status = http.StatusUnauthorized
	fake.mu.Unlock()
	s, _, err := r.MCPSync(ctx, "x", mcpOpts())
	if err == nil || s.Status != MCPNeedsCredential || len(s.Tools) != 2 {
		t.Fatalf("401: %v %+v", err, s)
	}
	// Gone: unreachable, setup kept; a call says it could not be reached,
	// and is recorded.
	srv.Close()
	_, err = r.MCPCall(ctx, "x", "do_it", nil, MCPCallOptions{Client: mcpOpts(), Approve: o.Approve})
	var f *mcpclient.Failure
	if !errors.As(err, &f) || f.Kind != mcpclient.Unreachable {
		t.Fatalf("unreachable call: %v", err)
	}
	s, _, _ = r.MCPServer("x")
	if s.Status != MCPUnreachable || len(s.Tools) != 2 {
		t.Fatalf("after: %+v", s)
	}
	evs, _ = r.Log.Read(id, 0, 100)
	if last := evs[len(evs)-2]; last.Kind != eventlog.KindError {
		t.Fatalf("the failed call is not recorded: %v", last.Kind)
	}
	if err := r.MCPRemove("x"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.MCPServer("x"); !errors.Is(err, ErrNoServer) {
		t.Fatalf("removed: %v", err)
	}
}

// TestRedactArgs: a program's flags whose names say they are credentials
// are shown with xxxxx for their values, given with = or as the next word;
// the setup itself keeps them, to start the program.
func TestRedactArgs(t *testing.T) {
	args := []string{"serve", "--api-key=s3cret", "--token", "s3cret", "--verbose=2", "--auth", "-v", "-Secret=a=b", "--", "--key="}
	want := []string{"serve", "--api-key=xxxxx", "--token", "xxxxx", "--verbose=2", "--auth", "-v", "-Secret=xxxxx", "--", "--key=xxxxx"}
	s := &MCPServer{Spec: mcpclient.Spec{Command: "srv", Args: args}}
	if got := s.Shown().Spec.Args; !slices.Equal(got, want) {
		t.Fatalf("shown args %q, want %q", got, want)
	}
	if s.Spec.Args[1] != "--api-key=s3cret" {
		t.Fatalf("Shown changed the server's own setup: %q", s.Spec.Args)
	}
	if got := RedactArgs(nil); got != nil {
		t.Fatalf("RedactArgs(nil) = %q", got)
	}
	msg := `--arg: expected string value but got "--api-key=s3cret" (long flag); perhaps try --arg="--api-key=s3cret"? --tenant=acme`
	if got, want := RedactText(msg), `--arg: expected string value but got "--api-key=xxxxx" (long flag); perhaps try --arg="--api-key=xxxxx"? --tenant=acme`; got != want {
		t.Fatalf("RedactText:\n got %s\nwant %s", got, want)
	}
}

// TestMCPShownLastErrorMasked: a last error saved by an older rook, which
// did not mask it, was shown as saved (mcp ls, mcp tools --json), its
// credentials and all. Shown masks them as it masks the setup's own.
func TestMCPShownLastErrorMasked(t *testing.T) {
	s := &MCPServer{
		Spec: mcpclient.Spec{
			URL:     "https://alice:pa55word@mcp.example.com/mcp?api_key=qk3y-s3cret",
			Headers: map[string]string{"Authorization": "Bearer hdr-s3cret"},
		},
		LastError: `Post "https://alice:pa55word@mcp.example.com/mcp?api_key=qk3y-s3cret": dial tcp: refused; ` +
			`the server said: bad token Bearer hdr-s3cret (pa55word); exec srv --token=flag-s3cret`,
	}
	got := s.Shown().LastError
	want := `Post "https://xxxxx@mcp.example.com/mcp?api_key=xxxxx": dial tcp: refused; ` +
		`the server said: bad token xxxxx (xxxxx); exec srv --token=xxxxx`
	if got != want {
		t.Fatalf("shown last error\n got  %q\n want %q", got, want)
	}
	if !strings.Contains(s.LastError, "hdr-s3cret") {
		t.Fatalf("Shown changed the saved error: %q", s.LastError)
	}
	stdio := &MCPServer{Spec: mcpclient.Spec{Command: "srv", Env: map[string]string{"GITHUB_TOKEN": "ghp-s3cret\nline2"}},
		LastError: "the program exited; its stderr ends: key ghp-s3cret"}
	if got := stdio.Shown().LastError; got != "the program exited; its stderr ends: key xxxxx" {
		t.Fatalf("shown stdio last error %q", got)
	}
	if got := (&MCPServer{}).Shown().LastError; got != "" {
		t.Fatalf("no error shown as %q", got)
	}
}

// TestMCPShownLastErrorMasksCredentialArgs: a program given its token as
// --token V (masked in the setup shown) that echoed it on its stderr,
// saved in the last error by an older rook, showed it: only -NAME=VALUE
// was masked in the text.
func TestMCPShownLastErrorMasksCredentialArgs(t *testing.T) {
	s := &MCPServer{Spec: mcpclient.Spec{Command: "srv", Args: []string{"--verbose", "--token", "tok-s3cret", "--api-key=key-s3cret", "serve"}},
		LastError: "the program exited; its stderr ends: token tok-s3cret refused (key key-s3cret); serve failed"}
	if got, want := s.Shown().LastError, "the program exited; its stderr ends: token xxxxx refused (key xxxxx); serve failed"; got != want {
		t.Fatalf("shown last error\n got  %q\n want %q", got, want)
	}
}

// TestMCPSyncClaimWithdrawn: read-only starts from the server's claim.
// When a sync finds the server no longer claims a tool read-only (it now
// says the tool writes, or claims nothing), a read-only setting that was
// only that claim is switched off, and the report names the tool: left
// on, a tool the server now says writes would still run where only
// reading is allowed. A setting the user made against the claim stays;
// a claim that becomes read-only is not taken (a server cannot make its
// tool run where only reading is allowed). Every tool whose description,
// arguments or claims changed is named, to be read again.
func TestMCPSyncClaimWithdrawn(t *testing.T) {
	fake := &fakeMCP{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	r := testRook(t, vfs.NewMem())
	ctx := context.Background()
	fake.setTools("read_a", "read_b", "read_c", "write_d", "read_e")
	s, _, err := r.MCPAdd(ctx, MCPAddOptions{Spec: mcpclient.Spec{Name: "srv", URL: srv.URL}, Client: mcpOpts()})
	if err != nil {
		t.Fatal(err)
	}
	if got := toolStates(s); got != "read_a:on,ro read_b:on,ro read_c:on,ro read_e:on,ro write_d:on" {
		t.Fatalf("after add: %s", got)
	}
	// The user says read_c is not read-only, whatever the server claims.
	no := false
	if _, err := r.MCPSet("srv", "read_c", MCPToolSettings{ReadOnly: &no}); err != nil {
		t.Fatal(err)
	}
	fake.mu.Lock()
	f := false
	fake.tools[0]["annotations"] = map[string]any{"readOnlyHint": false, "destructiveHint": true} // read_a: now writes
	delete(fake.tools[1], "annotations")                                                          // read_b: claims nothing
	fake.tools[2]["annotations"] = map[string]any{"readOnlyHint": f}                              // read_c: already not read-only
	fake.tools[3]["annotations"] = map[string]any{"readOnlyHint": true}                           // write_d: now claims read-only
	fake.tools[4]["description"] = "does read_e, and now deletes"                                 // read_e: claims the same
	fake.mu.Unlock()
	s, rep, err := r.MCPSync(ctx, "srv", mcpOpts())
	if err != nil {
		t.Fatal(err)
	}
	if got := toolStates(s); got != "read_a:on read_b:on read_c:on read_e:on,ro write_d:on" {
		t.Errorf("after sync: %s", got)
	}
	if got := strings.Join(rep.ReadOnlyOff, ","); got != "read_a,read_b" {
		t.Errorf("read_only_off %q, want read_a,read_b", got)
	}
	if got := strings.Join(rep.Changed, ","); got != "read_a,read_b,read_c,write_d,read_e" {
		t.Errorf("changed %q", got)
	}
	// The same list again: nothing changed, nothing reported.
	s, rep, err = r.MCPSync(ctx, "srv", mcpOpts())
	if err != nil || len(rep.ReadOnlyOff) != 0 || len(rep.Changed) != 0 || toolStates(s) != "read_a:on read_b:on read_c:on read_e:on,ro write_d:on" {
		t.Errorf("second sync: %s %+v %v", toolStates(s), rep, err)
	}
}

// TestMCPSyncUserReadOnlyStays: a read-only setting the user made is the
// user's, even when it matches the server's claim: a claim withdrawn later
// does not switch it off. The README's "set it back, and it then stays"
// held only until the server claimed read-only again and withdrew it once
// more, which turned the user's setting off.
func TestMCPSyncUserReadOnlyStays(t *testing.T) {
	fake := &fakeMCP{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	r := testRook(t, vfs.NewMem())
	ctx := context.Background()
	fake.setTools("read_a", "read_b")
	if _, _, err := r.MCPAdd(ctx, MCPAddOptions{Spec: mcpclient.Spec{Name: "srv", URL: srv.URL}, Client: mcpOpts()}); err != nil {
		t.Fatal(err)
	}
	claim := func(v any) {
		fake.mu.Lock()
		for _, tool := range fake.tools {
			tool["annotations"] = map[string]any{"readOnlyHint": v}
		}
		fake.mu.Unlock()
	}
	sync := func() (string, string) {
		t.Helper()
		s, rep, err := r.MCPSync(ctx, "srv", mcpOpts())
		if err != nil {
			t.Fatal(err)
		}
		return toolStates(s), strings.Join(rep.ReadOnlyOff, ",")
	}
	// read_a: the user sets it read-only while the server claims so.
	yes := true
	if _, err := r.MCPSet("srv", "read_a", MCPToolSettings{ReadOnly: &yes}); err != nil {
		t.Fatal(err)
	}
	claim(false) // withdrawn: read_b (the claim only) goes off, read_a stays
	if st, off := sync(); st != "read_a:on,ro read_b:on" || off != "read_b" {
		t.Fatalf("first withdrawal: %s, read_only_off %q", st, off)
	}
	// read_b: set back by the user, as the sync's message says to.
	if _, err := r.MCPSet("srv", "read_b", MCPToolSettings{ReadOnly: &yes}); err != nil {
		t.Fatal(err)
	}
	claim(true)
	if st, off := sync(); st != "read_a:on,ro read_b:on,ro" || off != "" {
		t.Fatalf("claimed again: %s, read_only_off %q", st, off)
	}
	claim(false) // withdrawn again: both are the user's, both stay
	if st, off := sync(); st != "read_a:on,ro read_b:on,ro" || off != "" {
		t.Fatalf("second withdrawal: %s, read_only_off %q, want the user's settings kept", st, off)
	}
}

// TestMCPOfflineFirstSyncAfterFailure: a server added --offline has its
// tools switched on at its first successful sync (the user's first look),
// also when an earlier sync failed: that failure changed its status from
// offline, and the tools then arrived off, as at a later sync.
func TestMCPOfflineFirstSyncAfterFailure(t *testing.T) {
	fake := &fakeMCP{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	r := testRook(t, vfs.NewMem())
	ctx := context.Background()
	fake.setTools("read_a", "write_b")
	if _, _, err := r.MCPAdd(ctx, MCPAddOptions{Spec: mcpclient.Spec{Name: "srv", URL: srv.URL}, Offline: true, Client: mcpOpts()}); err != nil {
		t.Fatal(err)
	}
	fake.mu.Lock()
	fake.status = http.StatusServiceUnavailable
	fake.mu.Unlock()
	if _, _, err := r.MCPSync(ctx, "srv", mcpOpts()); err == nil {
		t.Fatal("sync against a failing server: no error")
	}
	fake.mu.Lock()
	fake.status = 0
	fake.mu.Unlock()
	s, rep, err := r.MCPSync(ctx, "srv", mcpOpts())
	if err != nil {
		t.Fatal(err)
	}
	if got := toolStates(s); got != "read_a:on,ro write_b:on" {
		t.Errorf("after the first successful sync: %s, want both on", got)
	}
	if got := strings.Join(rep.New, ","); got != "read_a,write_b" {
		t.Errorf("new %q", got)
	}
}

// TestMCPSyncOldReadOnlyKept: a read-only setting saved before rook
// recorded who made it (a state of version 1, before read_only_set) may be
// the user's as well as the claim's: a sync that found the claim withdrawn
// switched it off, losing a setting the user may have made. It is taken
// as the user's and kept, and the report names it; a setting saved since
// still follows the claim, and `rook mcp set` makes it the user's.
func TestMCPSyncOldReadOnlyKept(t *testing.T) {
	fake := &fakeMCP{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	r := testRook(t, vfs.NewMem())
	ctx := context.Background()
	fake.setTools("read_a", "read_b")
	if _, _, err := r.MCPAdd(ctx, MCPAddOptions{Spec: mcpclient.Spec{Name: "srv", URL: srv.URL}, Client: mcpOpts()}); err != nil {
		t.Fatal(err)
	}
	// The state as an older rook saved it: version 1, no read_only_set.
	s, id, err := r.MCPServer("srv")
	if err != nil {
		t.Fatal(err)
	}
	s.V = 1
	old, _ := json.Marshal(s)
	old = []byte(strings.ReplaceAll(string(old), `,"read_only_legacy":true`, ""))
	if strings.Contains(string(old), "read_only_set") {
		t.Fatalf("the old state names read_only_set: %s", old)
	}
	if _, err := r.Append(id, Entry{Kind: eventlog.KindNote, Label: StateLabel, Body: old}); err != nil {
		t.Fatal(err)
	}
	// read_a: the server now says it writes; read_b: it claims nothing.
	// A tool that says it writes does not keep a setting that may have
	// been only the claim: in doubt, it does not run where only reading
	// is allowed.
	fake.mu.Lock()
	fake.tools[0]["annotations"] = map[string]any{"readOnlyHint": false}
	delete(fake.tools[1], "annotations")
	fake.mu.Unlock()
	s, rep, err := r.MCPSync(ctx, "srv", mcpOpts())
	if err != nil {
		t.Fatal(err)
	}
	if got := toolStates(s); got != "read_a:on read_b:on,ro" {
		t.Fatalf("after the claims were withdrawn: %s, want read_a off read-only, read_b kept", got)
	}
	if strings.Join(rep.ReadOnlyOff, ",") != "read_a" || strings.Join(rep.ReadOnlyKept, ",") != "read_b" {
		t.Fatalf("read_only_off %q, read_only_kept %q", rep.ReadOnlyOff, rep.ReadOnlyKept)
	}
	if s.V != mcpStateVersion || !s.Tool("read_b").ReadOnlyLegacy || s.Tool("read_b").ReadOnlySet || s.Tool("read_a").ReadOnlyLegacy {
		t.Fatalf("saved as v%d, read_a %+v, read_b %+v", s.V, *s.Tool("read_a"), *s.Tool("read_b"))
	}
	// Said once: the next sync finds nothing withdrawn.
	if _, rep, err = r.MCPSync(ctx, "srv", mcpOpts()); err != nil || len(rep.ReadOnlyKept) != 0 || len(rep.ReadOnlyOff) != 0 {
		t.Fatalf("second sync: %+v %v", rep, err)
	}
	// The user's word ends the doubt.
	yes := true
	if s, err = r.MCPSet("srv", "read_b", MCPToolSettings{ReadOnly: &yes}); err != nil {
		t.Fatal(err)
	}
	if b := s.Tool("read_b"); !b.ReadOnly || !b.ReadOnlySet || b.ReadOnlyLegacy {
		t.Fatalf("after set --read-only: %+v", *b)
	}
	// A setting saved by this version, from the claim, follows the claim.
	fake.setTools("read_a", "read_b", "read_c")
	if _, _, err = r.MCPSync(ctx, "srv", mcpOpts()); err != nil {
		t.Fatal(err)
	}
	fake.mu.Lock()
	fake.tools[2]["annotations"] = map[string]any{"readOnlyHint": false}
	fake.mu.Unlock()
	s, rep, err = r.MCPSync(ctx, "srv", mcpOpts())
	if err != nil {
		t.Fatal(err)
	}
	if c := s.Tool("read_c"); c.ReadOnly || strings.Join(rep.ReadOnlyOff, ",") != "read_c" {
		t.Fatalf("read_c %+v, read_only_off %q", *c, rep.ReadOnlyOff)
	}
}

// A refusal is recorded whatever the tool's name a caller gave: a name
// no server has, longer than an event's label holds (eventlog.MaxLabel),
// is recorded under its first bytes, and whole in the body; the refusal
// is not said as one that could not be recorded.
func TestMCPRefusalLongToolName(t *testing.T) {
	r := testRook(t, vfs.NewMem())
	if _, _, err := r.MCPAdd(context.Background(), MCPAddOptions{Spec: mcpclient.Spec{Name: "srv", URL: "https://example.com/mcp"}, Offline: true, Client: mcpOpts()}); err != nil {
		t.Fatal(err)
	}
	tool := strings.Repeat("é", eventlog.MaxLabel)
	_, err := r.MCPCall(context.Background(), "srv", tool, nil, MCPCallOptions{Client: mcpOpts()})
	if !errors.Is(err, ErrRefused) || strings.Contains(err.Error(), "could not be recorded") {
		t.Fatalf("got %v, want the refusal alone", err)
	}
	_, id, err := r.MCPServer("srv")
	if err != nil {
		t.Fatal(err)
	}
	evs, err := r.Log.Read(id, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	last := evs[len(evs)-1]
	if last.Kind != eventlog.KindError || len(last.Label) > eventlog.MaxLabel || !utf8.ValidString(last.Label) || !strings.HasPrefix(tool, last.Label) {
		t.Fatalf("last event %v %q", last.Kind, last.Label)
	}
	b, err := r.Body(last)
	if err != nil {
		t.Fatal(err)
	}
	var rec struct{ Tool, Refused string }
	if err := json.Unmarshal(b, &rec); err != nil || rec.Tool != tool || rec.Refused != RefusedNeverRead {
		t.Fatalf("body %.200s: %v", b, err)
	}
}
