package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A call whose answer was cut off (the event stream closed mid-event, the
// program died while it worked) was said as "the server could not be
// reached": the server had the call, and the tool may have run. A user
// told the server was not reached calls again, and a tool that sends or
// deletes does it twice.
func TestCallAnswerLost(t *testing.T) {
	t.Run("event stream cut", func(t *testing.T) {
		srv := callServer(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			fmt.Fprint(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":")
			w.(http.Flusher).Flush()
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		})
		defer srv.Close()
		c := connect(t, Spec{URL: srv.URL}, testOptions())
		_, err := c.Call(context.Background(), "tool_00", nil)
		msg := wantFailure(t, err, Unreachable).Msg
		wantContains(t, msg, "before it answered tools/call", "the tool may have run")
		if strings.Contains(msg, "could not be reached") {
			t.Fatalf("said as never reached: %q", msg)
		}
	})
	// A server that closes its event stream without the answer (an HTTP
	// body that ends with the connection, so no read error: the python
	// http.server way, or a server killed mid-call) had the call all the
	// same.
	t.Run("event stream ends without the answer", func(t *testing.T) {
		srv := callServer(func(w http.ResponseWriter, r *http.Request) {
			conn, buf, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n: working\n\n")
			buf.Flush()
			conn.Close()
		})
		defer srv.Close()
		c := connect(t, Spec{URL: srv.URL}, testOptions())
		_, err := c.Call(context.Background(), "tool_00", nil)
		var f2 *Failure
		if !errors.As(err, &f2) {
			t.Fatalf("not a Failure: %v", err)
		}
		wantContains(t, f2.Msg, "before it answered tools/call", "ended without its response", "the tool may have run")
	})
	// A server that reads the call and dies (or drops the connection)
	// before any answer: net/http's Do fails with EOF, as when nothing
	// listens, but the server had the call.
	t.Run("connection closed before any answer", func(t *testing.T) {
		srv := callServer(func(w http.ResponseWriter, r *http.Request) {
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close()
			}
		})
		defer srv.Close()
		c := connect(t, Spec{URL: srv.URL}, testOptions())
		_, err := c.Call(context.Background(), "tool_00", nil)
		msg := wantFailure(t, err, Unreachable).Msg
		wantContains(t, msg, "before it answered tools/call", "the tool may have run")
		if strings.Contains(msg, "could not be reached") {
			t.Fatalf("said as never reached: %q", msg)
		}
	})
	t.Run("program dies during the call", func(t *testing.T) {
		c := connect(t, FakeSpec("fake", fakeEnv, FakeConfig{Tools: []FakeTool{{Name: "slow", Sleep: 5 * time.Second}}}), testOptions())
		st := c.tr.(*stdioTransport)
		go func() {
			time.Sleep(300 * time.Millisecond)
			signalGroup(st.cmd.Process, 9)
		}()
		_, err := c.Call(context.Background(), "slow", nil)
		msg := wantFailure(t, err, Unreachable).Msg
		wantContains(t, msg, "before it answered tools/call", "the program exited (signal: killed)", "the tool may have run")
	})
	t.Run("refused before the call is sent", func(t *testing.T) {
		f, spec := httpFake(t, FakeConfig{Tools: someTools(1)})
		c := connect(t, spec, testOptions())
		_ = f
		c.tr.(*httpTransport).url.Host = "127.0.0.1:1" // nothing listens there
		_, err := c.Call(context.Background(), "tool_00", nil)
		if msg := wantFailure(t, err, Unreachable).Msg; strings.Contains(msg, "may have run") {
			t.Fatalf("a call never sent said as maybe run: %q", msg)
		}
	})
}

// A message too large to read while a tool works need not be its answer:
// a server's progress or log notification on the call's event stream is
// one too, sent while the tool still runs. "The tool ran, and its result
// is not shown" was said of it all the same; the tool may have run, or
// run still.
func TestCallTooLargeBeforeTheAnswer(t *testing.T) {
	srv := callServer(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":%q}}\n\n", strings.Repeat("x", 4096))
		w.(http.Flusher).Flush()
		<-r.Context().Done() // still working
	})
	defer srv.Close()
	o := testOptions()
	o.Limits.MaxMessageBytes = 2048
	_, err := connect(t, Spec{URL: srv.URL}, o).Call(context.Background(), "tool_00", nil)
	msg := wantFailure(t, err, ProtocolError).Msg
	wantContains(t, msg, "larger than 2048 bytes", "the tool may have run, or run still", "check what it did before calling it again")
	if strings.Contains(msg, "the tool ran") {
		t.Fatalf("says the tool ran, though its answer never came: %q", msg)
	}
}

// A call not written whole when its time ran out never reached the
// server: the tool did not run. It was said as "the server has the call,
// and the tool may have run", which sends a user checking for effects
// that cannot be there, and hides that the server is not reading.
func TestCallTimeoutBeforeSent(t *testing.T) {
	t.Run("stdio", func(t *testing.T) {
		// Answers initialize, reads the initialized notification, then
		// reads nothing more: a large call fills the pipe and its write
		// blocks.
		script := `read l; echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}'; read l; exec sleep 20`
		o := testOptions()
		o.Limits.CallTimeout = 300 * time.Millisecond
		c := connect(t, Spec{Command: "/bin/sh", Args: []string{"-c", script}}, o)
		args := json.RawMessage(`{"q":"` + strings.Repeat("x", 4<<20) + `"}`)
		_, err := c.Call(context.Background(), "t", args)
		msg := wantFailure(t, err, ProtocolError).Msg
		wantContains(t, msg, "was not sent", "the tool did not run")
		if strings.Contains(msg, "may have run") || strings.Contains(msg, "has the call") {
			t.Fatalf("says the server may have run a call it never had: %q", msg)
		}
	})
	t.Run("http", func(t *testing.T) {
		// The call's body is not read: a large one fills the socket
		// buffers, and the request is never written whole.
		f := NewFake(FakeConfig{Tools: someTools(1)})
		var posts atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost || posts.Add(1) <= 2 { // initialize, initialized
				f.ServeHTTP(w, r)
				return
			}
			<-r.Context().Done()
		}))
		defer srv.Close()
		o := testOptions()
		o.Limits.CallTimeout = 300 * time.Millisecond
		c := connect(t, Spec{URL: srv.URL}, o)
		args := json.RawMessage(`{"q":"` + strings.Repeat("x", 64<<20) + `"}`)
		_, err := c.Call(context.Background(), "tool_00", args)
		msg := wantFailure(t, err, ProtocolError).Msg
		wantContains(t, msg, "was not sent", "the tool did not run")
		if strings.Contains(msg, "may have run") || strings.Contains(msg, "has the call") {
			t.Fatalf("says the server may have run a call it never had: %q", msg)
		}
	})
}

// An HTTP 500, 502 or 504 to tools/call comes after the server (or what
// is in front of it, passing the call on) had the call: the tool may have
// run. A 504 was said as "the server could not be reached", as if the call
// was never made; a 503 or a 4xx is no sign the call was taken, and is
// said as before.
func TestCallHTTPStatusAfterTheCall(t *testing.T) {
	for _, tc := range []struct {
		code    int
		mayHave bool
	}{{500, true}, {502, true}, {504, true}, {503, false}, {400, false}} {
		t.Run(fmt.Sprint(tc.code), func(t *testing.T) {
			srv := callServer(func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "upstream trouble", tc.code)
			})
			defer srv.Close()
			_, err := connect(t, Spec{URL: srv.URL}, testOptions()).Call(context.Background(), "tool_00", nil)
			var fl *Failure
			if !errors.As(err, &fl) || fl.Status != tc.code {
				t.Fatalf("not a Failure of HTTP %d: %v", tc.code, err)
			}
			wantContains(t, fl.Msg, fmt.Sprintf("HTTP %d", tc.code))
			if got := strings.Contains(fl.Msg, "the tool may have run; check before calling it again"); got != tc.mayHave {
				t.Fatalf("says the tool may have run: %v, want %v: %q", got, tc.mayHave, fl.Msg)
			}
			if tc.mayHave && strings.Contains(fl.Msg, "could not be reached") {
				t.Fatalf("said as never reached: %q", fl.Msg)
			}
		})
	}
}

// A call the server refused as of an expired session (HTTP 404) never ran:
// when starting a new session then fails, that failure is not the call's,
// and must not say the tool may have run.
func TestCallSessionRenewFails(t *testing.T) {
	for _, how := range []string{"500", "dropped"} {
		t.Run(how, func(t *testing.T) {
			f := NewFake(FakeConfig{Tools: someTools(1), Session: "s1"})
			var inits atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(body))
				switch {
				case bytes.Contains(body, []byte(`"initialize"`)) && inits.Add(1) > 1:
					if how == "500" {
						http.Error(w, "down", http.StatusInternalServerError)
					} else if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
						conn.Close()
					}
				case bytes.Contains(body, []byte(`"tools/call"`)):
					http.Error(w, "no such session", http.StatusNotFound)
				default:
					f.ServeHTTP(w, r)
				}
			}))
			defer srv.Close()
			_, err := connect(t, Spec{URL: srv.URL}, testOptions()).Call(context.Background(), "tool_00", nil)
			if err == nil {
				t.Fatal("no error")
			}
			if strings.Contains(err.Error(), "may have run") || strings.Contains(err.Error(), "may have had the call") {
				t.Fatalf("says the tool may have run, though the call was refused unrun: %q", err)
			}
			wantContains(t, err.Error(), "session", "the tool did not run")
		})
	}
}

// A server that takes tools/call with HTTP 202 and no answer (as if it
// were a notification) had the call: the tool may have run.
func TestCallAcceptedWithoutAnswer(t *testing.T) {
	srv := callServer(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
	})
	defer srv.Close()
	_, err := connect(t, Spec{URL: srv.URL}, testOptions()).Call(context.Background(), "tool_00", nil)
	wantContains(t, wantFailure(t, err, ProtocolError).Msg, "(HTTP 202) without answering it", "the tool may have run; check before calling it again")
}

// A server that takes tools/call (HTTP 200) and answers with a body that
// does not carry the call's response (another id, no id, JSON that is not
// JSON-RPC, a response whose error is not an object) had the call: the
// tool may have run, as for a 202 with no answer, a 500/502/504 or an
// event stream that ended without the response. An error of id null is
// the answer to the one request the POST carried, which the server could
// not read: its error is said.
func TestCallAnsweredWithoutItsResponse(t *testing.T) {
	for name, c := range map[string]struct{ body, want string }{
		"another id":      {`{"jsonrpc":"2.0","id":424242,"result":{"content":[]}}`, "does not carry its response"},
		"not json-rpc":    {`{"detail":"Internal Server Error"`, "is not JSON-RPC"},
		"no id, an error": {`{"jsonrpc":"2.0","error":{"code":-32603,"message":"internal"}}`, "does not carry its response"},
		"error a string":  {`{"jsonrpc":"2.0","id":2,"error":"disk full"}`, `is not JSON-RPC (its "error" is a JSON string, not an object)`},
		"null id error":   {`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`, ""},
	} {
		t.Run(name, func(t *testing.T) {
			srv := callServer(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusOK)
				w.Write([]byte(c.body))
			})
			defer srv.Close()
			_, err := connect(t, Spec{URL: srv.URL}, testOptions()).Call(context.Background(), "tool_00", nil)
			msg := wantFailure(t, err, ProtocolError).Msg
			if c.want == "" {
				wantContains(t, msg, "answered tools/call with an error: Parse error (code -32700)")
				return
			}
			wantContains(t, msg, c.want, "the tool may have run; check before calling it again")
		})
	}
}

// callServer is an HTTP MCP server of one tool, tool_00, whose tools/call
// requests onCall answers (or fails to); every other request the fake
// answers.
func callServer(onCall http.HandlerFunc) *httptest.Server {
	f := NewFake(FakeConfig{Tools: someTools(1)})
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if !bytes.Contains(body, []byte(`"tools/call"`)) {
			f.ServeHTTP(w, r)
			return
		}
		onCall(w, r)
	}))
}
