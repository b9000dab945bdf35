package mcpclient

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestCredentials(t *testing.T) {
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	const metadata = `Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource/mcp", scope="files"`
	cases := []struct {
		name  string
		cfg   FakeConfig
		spec  Spec
		kind  FailureKind
		says  string
		seen  bool // the server was asked at all
		token string
	}{
		{name: "right token", cfg: FakeConfig{Token: "s3cret"}, spec: Spec{BearerEnv: "TOK"}, token: "s3cret"},
		{name: "no token", cfg: FakeConfig{Token: "s3cret"}, kind: NeedsCredential, says: "the server wants a credential and none was sent (HTTP 401); change it by removing the server and adding it again (`rook mcp rm`, `rook mcp add`)"},
		{name: "wrong token", cfg: FakeConfig{Token: "s3cret"}, spec: Spec{BearerEnv: "TOK"}, token: "stale", kind: NeedsCredential, says: "the server rejected the credential (HTTP 401); change it by removing the server and adding it again (`rook mcp rm`, `rook mcp add`)"},
		{name: "forbidden", cfg: FakeConfig{Token: "s3cret", Forbidden: true}, spec: Spec{BearerEnv: "TOK"}, token: "stale", kind: NeedsCredential, says: "HTTP 403"},
		{name: "header token", cfg: FakeConfig{Token: "s3cret"}, spec: Spec{Headers: map[string]string{"Authorization": "Bearer s3cret"}}},
		{name: "header from a variable", cfg: FakeConfig{Token: "s3cret"}, spec: Spec{HeaderEnv: map[string]string{"Authorization": "TOK"}}, token: "Bearer s3cret"},
		{name: "header from a wrong variable", cfg: FakeConfig{Token: "s3cret"}, spec: Spec{HeaderEnv: map[string]string{"Authorization": "TOK"}}, token: "Bearer stale", kind: NeedsCredential, says: "rejected the credential"},
		{name: "header variable not set", cfg: FakeConfig{Token: "s3cret"}, spec: Spec{HeaderEnv: map[string]string{"Authorization": "NOT_SET"}}, kind: NeedsCredential, says: "the variable NOT_SET for header Authorization is not set"},
		{name: "header variable of two lines", cfg: FakeConfig{Token: "s3cret"}, spec: Spec{HeaderEnv: map[string]string{"Authorization": "TOK"}}, token: "Bearer s3cret\nstale", kind: NeedsCredential, says: "the variable TOK for header Authorization holds a line break or another control character, which cannot be sent; set it to the value alone"},
		{name: "bearer variable of two lines", cfg: FakeConfig{Token: "s3cret"}, spec: Spec{BearerEnv: "TOK"}, token: "s3cret\r\nstale", kind: NeedsCredential, says: "the bearer token variable TOK holds a line break"},
		{name: "variable not set", cfg: FakeConfig{Token: "s3cret"}, spec: Spec{BearerEnv: "NOT_SET"}, kind: NeedsCredential, says: "the bearer token variable NOT_SET is not set"},
		{name: "oauth challenge", cfg: FakeConfig{Token: "s3cret", Challenge: metadata}, kind: NeedsOAuth, says: OAuthMessage},
		{name: "oauth challenge without metadata", cfg: FakeConfig{Token: "s3cret", Challenge: `Bearer realm="mcp", scope="files"`}, kind: NeedsOAuth, says: OAuthMessage},
		{name: "stale token on an oauth server", cfg: FakeConfig{Token: "s3cret", Challenge: `Bearer error="invalid_token", resource_metadata="http://x/y"`}, spec: Spec{BearerEnv: "TOK"}, token: "stale", kind: NeedsCredential, says: "rejected the credential"},
		{name: "protected resource metadata", cfg: FakeConfig{Token: "s3cret", Challenge: `Bearer realm="mcp"`, ProtectedResource: true}, kind: NeedsOAuth, says: OAuthMessage},
		{name: "metadata without a challenge", cfg: FakeConfig{Token: "s3cret", ProtectedResource: true}, spec: Spec{BearerEnv: "TOK"}, token: "stale", kind: NeedsOAuth, says: OAuthMessage},
		{name: "plain bearer challenge", cfg: FakeConfig{Token: "s3cret", Challenge: `Bearer realm="mcp"`}, kind: NeedsCredential, says: "none was sent"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, spec := httpFake(t, tc.cfg)
			tc.spec.URL = spec.URL
			o := testOptions()
			o.Getenv = env(map[string]string{"TOK": tc.token})
			c, err := Connect(context.Background(), tc.spec, o)
			if tc.kind == 0 {
				if err != nil {
					t.Fatal(err)
				}
				c.Close()
				return
			}
			f := wantFailure(t, err, tc.kind)
			if tc.kind == NeedsOAuth && f.Msg != OAuthMessage {
				t.Fatalf("oauth message %q", f.Msg)
			}
			wantContains(t, f.Msg, tc.says)
			if strings.Contains(f.Msg, "stale") || strings.Contains(f.Msg, "s3cret") {
				t.Fatalf("a token in %q", f.Msg)
			}
		})
	}
}

func TestHTTPStatusFailures(t *testing.T) {
	const token = "tok-123456"
	mux := http.NewServeMux()
	mux.HandleFunc("/echo500", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "boom: you sent "+r.Header.Get("Authorization"), http.StatusInternalServerError)
	})
	mux.HandleFunc("/rpc400", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Bad Request: \u001b[2Jno session"}}`)
	})
	mux.HandleFunc("/asleep", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusBadGateway) })
	mux.HandleFunc("/text", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello") })
	mux.HandleFunc("/accepted", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) })
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://elsewhere.example/mcp", http.StatusFound)
	})
	mux.HandleFunc("/busy", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "30")
		http.Error(w, "slow down", http.StatusTooManyRequests)
	})
	mux.HandleFunc("/busy-date", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", time.Now().Add(2*time.Minute).UTC().Format(http.TimeFormat))
		http.Error(w, "slow down", http.StatusTooManyRequests)
	})
	mux.HandleFunc("/busy-bare", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "slow down", http.StatusTooManyRequests)
	})
	mux.HandleFunc("/down", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "120")
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	cases := []struct {
		path string
		kind FailureKind
		says []string
	}{
		// A 429 said only "HTTP 429 Too Many Requests": not when to try
		// again, though the server said so in Retry-After.
		{"/busy", ProtocolError, []string{"HTTP 429", "slow down", "the server asks to wait 30 s before trying again"}},
		{"/busy-date", ProtocolError, []string{"HTTP 429", "the server asks to wait 1", "s before trying again"}},
		{"/busy-bare", ProtocolError, []string{"HTTP 429", "wait before trying again"}},
		{"/down", Unreachable, []string{"HTTP 503", "the server asks to wait 120 s before trying again"}},
		{"/echo500", ProtocolError, []string{"HTTP 500", "boom: you sent Bearer [redacted]"}},
		{"/rpc400", ProtocolError, []string{"HTTP 400", "Bad Request:  [2Jno session (code -32600)"}},
		{"/asleep", Unreachable, []string{"could not be reached", "HTTP 502"}},
		{"/missing", ProtocolError, []string{"HTTP 404", "streamable HTTP endpoint"}},
		{"/text", ProtocolError, []string{"Content-Type", "neither JSON nor an event stream"}},
		{"/accepted", ProtocolError, []string{"without answering"}},
		{"/moved", ProtocolError, []string{"HTTP 302", "https://elsewhere.example/mcp"}},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			o := testOptions()
			o.Getenv = func(string) string { return token }
			_, err := Connect(context.Background(), Spec{URL: srv.URL + tc.path, BearerEnv: "T"}, o)
			f := wantFailure(t, err, tc.kind)
			wantContains(t, f.Msg, tc.says...)
			if strings.Contains(f.Msg, token) || strings.Contains(f.Msg, "\x1b") {
				t.Fatalf("message %q", f.Msg)
			}
		})
	}
}

// TestURLUserRedacted: a token given as a URL's user is sent (Basic auth)
// and, like a password, not shown when the server writes it back.
func TestURLUserRedacted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, _, _ := r.BasicAuth()
		http.Error(w, "boom: you are "+user, http.StatusInternalServerError)
	}))
	defer srv.Close()
	u := strings.Replace(srv.URL, "http://", "http://t0ken-s3cret@", 1)
	_, err := Connect(context.Background(), Spec{URL: u + "/mcp"}, testOptions())
	f := wantFailure(t, err, ProtocolError)
	wantContains(t, f.Msg, "boom: you are [redacted]")
	if strings.Contains(f.Msg, "s3cret") {
		t.Fatalf("message %q", f.Msg)
	}
}

// TestURLUserNotInNetErrors: when the connection fails, the error names
// the server's URL without its user information (a token as the user is
// not hidden by net/http, which only hides a password).
func TestURLUserNotInNetErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			c.Close() // no answer at all: the client sees EOF
		}
	}))
	defer srv.Close()
	for _, user := range []string{"t0ken-s3cret", "alice:s3cret"} {
		u := strings.Replace(srv.URL, "http://", "http://"+user+"@", 1)
		_, err := Connect(context.Background(), Spec{URL: u + "/mcp"}, testOptions())
		if err == nil || strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "alice") {
			t.Fatalf("%s: error %v", user, err)
		}
	}
}

func TestUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	short := testOptions()
	short.Limits.ConnectTimeout = 300 * time.Millisecond
	_, silentHTTP := httpFake(t, FakeConfig{Silent: true})
	cases := []struct {
		name string
		spec Spec
		says []string
	}{
		{"connection refused", Spec{URL: "http://" + dead + "/mcp"}, []string{"could not be reached", "connection refused"}},
		// Slow to start (npx installing a server on its first run) looks
		// the same: the message names the setting that gives it longer.
		{"silent http", silentHTTP, []string{"did not complete the handshake within 300ms", "[mcp.discovery] connect_timeout"}},
		{"silent stdio", FakeSpec("fake", fakeEnv, FakeConfig{Silent: true}), []string{"did not complete the handshake within 300ms", "[mcp.discovery] connect_timeout"}},
		// A program that prints a banner on stdout (or is no MCP server):
		// the failure says what it wrote.
		{"stdio banner", Spec{Command: "/bin/sh", Args: []string{"-c", "echo; echo 'Welcome to the banner server'; echo second; exec sleep 10"}},
			[]string{"did not complete the handshake within 300ms", `it wrote on its stdout what is not JSON-RPC: "Welcome to the banner server"`}},
		// A program that prints its usage on stdout and exits (not an MCP
		// server, or one missing a flag): the failure said only "the
		// program exited (exit status 2)", not what it wrote.
		{"stdio usage and exit", Spec{Command: "/bin/sh", Args: []string{"-c", "echo 'usage: srv --stdio'; exit 2"}},
			[]string{"the program exited (exit status 2)", `it wrote on its stdout what is not JSON-RPC: "usage: srv --stdio"`}},
		{"no such program", Spec{Command: "/nonexistent/mcp-server"}, []string{"could not start", "no such file"}},
		{"program not on PATH", Spec{Command: "rook-test-no-such-mcp-server"}, []string{"could not start", "not found"}},
		{"program exits", FakeSpec("fake", fakeEnv, FakeConfig{ExitAtStart: true}), []string{"exit status 3", "told to exit at start"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			o := short
			if tc.name == "program exits" {
				// Its exit, not the handshake's timeout, must end it: a
				// test binary under -race on a loaded machine can take
				// longer than 300 ms to start and exit.
				o.Limits.ConnectTimeout = 10 * time.Second
			}
			_, err := Connect(context.Background(), tc.spec, o)
			f := wantFailure(t, err, Unreachable)
			wantContains(t, f.Msg, tc.says...)
			if time.Since(start) > 3*time.Second {
				t.Fatalf("took %v", time.Since(start))
			}
		})
	}
	t.Run("unknown name", func(t *testing.T) {
		_, err := Connect(context.Background(), Spec{URL: "http://rook-test.invalid/mcp"}, short)
		wantFailure(t, err, Unreachable) // not found, or no answer from the resolver in time
	})
	t.Run("program dies later", func(t *testing.T) {
		c := connect(t, FakeSpec("fake", fakeEnv, FakeConfig{Tools: someTools(1)}), testOptions())
		st := c.tr.(*stdioTransport)
		signalGroup(st.cmd.Process, 9)
		<-st.done
		_, err := c.Call(context.Background(), "tool_00", nil)
		wantContains(t, wantFailure(t, err, Unreachable).Msg, "the server could not be reached: the program exited (signal: killed)")
	})
}

// Close escalates for a program that ignores the end of its input and
// SIGTERM.
func TestStdioCloseEscalates(t *testing.T) {
	old := stdioGrace
	stdioGrace = 100 * time.Millisecond
	defer func() { stdioGrace = old }()
	c := connect(t, FakeSpec("fake", fakeEnv, FakeConfig{Stubborn: true}), testOptions())
	st := c.tr.(*stdioTransport)
	start := time.Now()
	c.Close()
	select {
	case <-st.exited:
	default:
		t.Fatal("the program outlived Close")
	}
	if d := time.Since(start); d < 2*stdioGrace || d > 2*time.Second {
		t.Fatalf("close took %v", d)
	}
	if !strings.Contains(st.waitErr.Error(), "killed") {
		t.Fatalf("ended by %v", st.waitErr)
	}
}

func TestStdioCloseIsPolite(t *testing.T) {
	c := connect(t, FakeSpec("fake", fakeEnv, FakeConfig{}), testOptions())
	st := c.tr.(*stdioTransport)
	start := time.Now()
	c.Close()
	if d := time.Since(start); d > time.Second || st.waitErr != nil {
		t.Fatalf("close took %v, the program ended with %v", d, st.waitErr)
	}
}

// Servers on this machine and the private network are reached directly,
// whatever the proxy variables say.
func TestProxyBypass(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadProxy := "http://" + l.Addr().String()
	l.Close()
	t.Setenv("HTTP_PROXY", deadProxy)
	t.Setenv("HTTPS_PROXY", deadProxy)
	t.Setenv("NO_PROXY", "")
	// A proxy setting that covers everything: net/http's own exception for
	// loopback must not be what lets the request through.
	old := envProxy
	envProxy = func(*http.Request) (*url.URL, error) { return url.Parse(os.Getenv("HTTP_PROXY")) }
	defer func() { envProxy = old }()

	_, spec := httpFake(t, FakeConfig{Tools: someTools(2)})
	if tools, err := connect(t, spec, testOptions()).Tools(context.Background()); err != nil || len(tools) != 2 {
		t.Fatalf("through a dead proxy: %q %v", names(tools), err)
	}
	// An address on the internet goes to the proxy (which is dead here).
	_, err = Connect(context.Background(), Spec{URL: "http://192.0.2.7/mcp"}, testOptions())
	wantContains(t, wantFailure(t, err, Unreachable).Msg, "the proxy could not be reached")

	choose := directForLocal(envProxy)
	for host, direct := range map[string]bool{
		"localhost": true, "api.localhost": true, "127.0.0.1": true, "[::1]": true, "10.1.2.3": true,
		"172.16.5.4": true, "192.168.1.20": true, "169.254.10.1": true, "100.100.1.1": true, "[fd12::1]": true,
		"[fe80::1%25eth0]": true, "[::ffff:192.168.0.1]": true,
		"192.0.2.7": false, "8.8.8.8": false, "172.32.0.1": false, "[2001:db8::1]": false,
	} {
		req, _ := http.NewRequest("GET", "http://"+host+":8080/mcp", nil)
		p, err := choose(req)
		if err != nil || (p == nil) != direct {
			t.Errorf("%s: proxy %v %v, want direct=%v", host, p, err, direct)
		}
	}
}

func TestParseChallenges(t *testing.T) {
	got := parseChallenges([]string{
		`Newauth realm="apps", type=1, title="Login to \"apps\"", Basic realm="simple"`,
		`Bearer resource_metadata="https://x.example/.well-known/oauth-protected-resource", error="invalid_token", error_description="The access token expired"`,
		`Negotiate abc123==, Bearer`,
		`Basic dXNlcjpwYXNz, Bearer scope=files`,
	})
	want := []challenge{
		{"Newauth", map[string]string{"realm": "apps", "type": "1", "title": `Login to "apps"`}},
		{"Basic", map[string]string{"realm": "simple"}},
		{"Bearer", map[string]string{"resource_metadata": "https://x.example/.well-known/oauth-protected-resource", "error": "invalid_token", "error_description": "The access token expired"}},
		{"Negotiate", map[string]string{}},
		{"Bearer", map[string]string{}},
		{"Basic", map[string]string{}},
		{"Bearer", map[string]string{"scope": "files"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("challenges\n%+v\nwant\n%+v", got, want)
	}
}

// TestStdioServerGetsNoSecrets: a stdio server inherits only the variables
// a program needs, not the rest of rook's environment.
func TestStdioServerGetsNoSecrets(t *testing.T) {
	t.Setenv("ROOK_TEST_SECRET", "s3cret")
	env := strings.Join(baseEnv(), "\n")
	if strings.Contains(env, "s3cret") || !strings.Contains(env, "PATH=") {
		t.Fatalf("environment passed on:\n%s", env)
	}
}

// TestRedactURL: a URL's user information (a password, or a token given
// as the user) is never shown, whether or not the URL parses; the rest of
// it is.
func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://alice:s3cret@mcp.example.com/mcp": "https://xxxxx@mcp.example.com/mcp",
		"http://alice:@127.0.0.1:8080/x?y=1":       "http://xxxxx@127.0.0.1:8080/x?y=xxxxx",
		// A query's values: a key may be given there.
		"https://h/mcp?api_key=s3cret":          "https://h/mcp?api_key=xxxxx",
		"https://h/mcp?a=1&token=s3cret#f":      "https://h/mcp?a=xxxxx&token=xxxxx#f",
		"https://h/mcp?s3cret":                  "https://h/mcp?xxxxx",
		"https://h/mcp?k=&x":                    "https://h/mcp?k=xxxxx&xxxxx",
		"https://h/mcp?":                        "https://h/mcp?",
		"/login?next=s3cret":                    "/login?next=xxxxx",
		"https://h x/mcp?key=s3cret#a?b=c":      "https://h x/mcp?key=xxxxx#a?b=c",
		"https://bob:pw@h x/mcp?key=s3cret&v=1": "https://xxxxx@h x/mcp?key=xxxxx&v=xxxxx",
		"https://mcp.example.com/mcp":           "https://mcp.example.com/mcp",
		"https://t0ken@mcp.example.com/mcp":     "https://xxxxx@mcp.example.com/mcp",
		"https://:pw@mcp.example.com/mcp":       "https://xxxxx@mcp.example.com/mcp",
		"ftp://bob:pw@h/x":                      "ftp://xxxxx@h/x",
		// Not a URL url.Parse takes (a space in the host): still no password.
		"https://bob:p@ss w@h x/y": "https://xxxxx@h x/y",
		"https://t0ken@h x/y":      "https://xxxxx@h x/y",
		"https://h x/a:b@c":        "https://h x/a:b@c",
		"not a url":                "not a url",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestURLQueryNotInErrors: net/http names the URL it could not reach in
// its error, query and all; the failure shows the query's values as xxxxx.
func TestURLQueryNotInErrors(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	// https to a server speaking plain HTTP: a TLS failure, named with the URL.
	u := strings.Replace(srv.URL, "http://", "https://", 1) + "/mcp?tenant=t3nant-s3cret"
	_, err := Connect(context.Background(), Spec{URL: u}, testOptions())
	f := wantFailure(t, err, Unreachable)
	if strings.Contains(f.Error(), "s3cret") {
		t.Fatalf("the failure shows the query: %v", f)
	}
	wantContains(t, f.Error(), "/mcp?tenant=xxxxx")
}

// TestStdioEnvFrom: a variable given by EnvFrom reaches the program with
// the value of ours it names, read when it starts; ours unset, the program
// is not started and the failure names it.
func TestStdioEnvFrom(t *testing.T) {
	spec := FakeSpec("fake", fakeEnv, FakeConfig{})
	cfg := spec.Env[fakeEnv]
	delete(spec.Env, fakeEnv)
	spec.EnvFrom = map[string]string{fakeEnv: "MY_FAKE_CONFIG"}
	o := testOptions()
	o.Getenv = func(k string) string { return map[string]string{"MY_FAKE_CONFIG": cfg}[k] }
	c := connect(t, spec, o)
	if _, err := c.Tools(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.Close()
	o.Getenv = func(string) string { return "" }
	_, err := Connect(context.Background(), spec, o)
	wantContains(t, wantFailure(t, err, NeedsCredential).Msg, "the variable MY_FAKE_CONFIG for the server's "+fakeEnv+" is not set")
}

// TestStdioStderrMasked: the values a program was given by EnvFrom (read
// at connect time) and Env never show in its stderr as rook passes it on,
// nor in the failure naming its last line.
func TestStdioStderrMasked(t *testing.T) {
	spec := Spec{Command: "/bin/sh", Args: []string{"-c", `echo "starting with $API_KEY" >&2; printf 'host %s, key %s' "$HOST" "$API_KEY" >&2; exit 3`},
		Env: map[string]string{"HOST": "h0st-example"}, EnvFrom: map[string]string{"API_KEY": "MY_KEY"}}
	o := testOptions()
	o.Getenv = func(k string) string { return map[string]string{"MY_KEY": "k3y-s3cret"}[k] }
	var stderr bytes.Buffer
	o.Stderr = &stderr
	_, err := Connect(context.Background(), spec, o)
	f := wantFailure(t, err, Unreachable)
	wantContains(t, f.Msg, "its stderr ends: host xxxxx, key xxxxx")
	// Its unended last line is ended once it exits: what rook writes
	// after it starts a line of its own.
	if got, want := stderr.String(), "starting with xxxxx\nhost xxxxx, key xxxxx\n"; got != want {
		t.Fatalf("stderr passed on %q, want %q", got, want)
	}
}

// TestTailWriterMasks: a value split over writes, in a line held back long,
// or one line of a value of several lines, is masked all the same; without
// values, what is written is passed on as it comes.
func TestTailWriterMasks(t *testing.T) {
	var out bytes.Buffer
	tw := newTailWriter(&out, []string{"s3cret-value", "-----BEGIN KEY-----\nabcdefgh\n-----END KEY-----", "abc"})
	for _, p := range []string{"token s3c", "ret-val", "ue ok\nkey abcdefgh\n", "abc "} {
		tw.Write([]byte(p))
	}
	if got, want := out.String(), "token xxxxx ok\nkey xxxxx\n"; got != want {
		t.Fatalf("passed on %q, want %q (the unended line held)", got, want)
	}
	long := strings.Repeat("=", maxHeld) + "s3cret-"
	tw.Write([]byte(long))
	tw.Write([]byte("value"))
	if strings.Contains(out.String(), "s3cret") {
		t.Fatalf("a long line passed on part of a value: %q", out.String())
	}
	if got := tw.lastLine(); !strings.HasSuffix(got, "=xxxxx") {
		t.Fatalf("last line %q", got)
	}
	tw.flush()
	if got := out.String(); !strings.HasPrefix(got, "token xxxxx ok\nkey xxxxx\nabc ===") || !strings.HasSuffix(got, "=xxxxx\n") {
		t.Fatalf("after flush %q", got)
	}
	out.Reset()
	plain := newTailWriter(&out, nil)
	plain.Write([]byte("no newline yet"))
	if out.String() != "no newline yet" {
		t.Fatalf("without values, passed on %q", out.String())
	}
	// The program exited with its last line unended: it is ended, so
	// that what rook writes next starts a line of its own; a last line
	// ended gets no other.
	plain.flush()
	plain.Write([]byte("ended\n"))
	plain.flush()
	if out.String() != "no newline yet\nended\n" {
		t.Fatalf("after the program's exit, passed on %q", out.String())
	}
}

// A server whose certificate this machine does not trust (self-signed, a
// private CA, expired) answered: the TLS handshake was made and its
// certificate refused. Not Unreachable ("often nothing to do; a network
// blip"), which a user waits out: a protocol error saying the certificate
// was refused.
func TestTLSCertificateRefusedIsNotUnreachable(t *testing.T) {
	f := NewFake(FakeConfig{Tools: someTools(1)})
	srv := httptest.NewUnstartedServer(f)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	defer srv.Close()
	_, err := Connect(context.Background(), Spec{URL: srv.URL + "/mcp"}, testOptions())
	if err == nil {
		t.Fatal("connected to a server whose certificate is not trusted")
	}
	if KindOf(err) == Unreachable {
		t.Fatalf("a refused certificate is said as an unreachable server: %v", err)
	}
	wantContains(t, wantFailure(t, err, ProtocolError).Msg, "the server's TLS certificate was refused: it is signed by an authority this machine does not trust", "SSL_CERT_FILE")
}

// A server that moved answers its old URL with a redirect rook does not
// follow (302, or 307 to another host), most often with a relative
// Location ("/v2/mcp"): resolved against the URL asked, it is a URL the
// server can be added with, and the advice names the commands that do it
// (there is no edit).
func TestRedirectNamesAWholeURL(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "/v2/mcp")
		w.WriteHeader(http.StatusFound)
	}))
	defer srv.Close()
	_, err := Connect(context.Background(), Spec{Name: "files", URL: srv.URL + "/mcp"}, testOptions())
	if err == nil {
		t.Fatal("connected")
	}
	wantContains(t, err.Error(), "it redirects to "+srv.URL+"/v2/mcp", "`rook mcp rm files`, then `rook mcp add files --url "+srv.URL+"/v2/mcp`")
}
