package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// callID is the JSON-RPC id of the request in r's body.
func callID(r *http.Request) string {
	body, _ := io.ReadAll(r.Body)
	var m message
	json.Unmarshal(body, &m)
	return string(m.ID)
}

// A long-running tool on a streamable HTTP server sends progress or log
// notifications on its call's event stream while it works, each small,
// then its answer. MaxMessageBytes bounds each message of the stream, as
// it bounds each line on stdio, not the stream as a whole (the call's time
// bounds that): a stream of small messages adding up past the bound was
// failed as "a message larger than N bytes".
func TestEventStreamBoundsEachMessage(t *testing.T) {
	srv := callServer(func(w http.ResponseWriter, r *http.Request) {
		id := callID(r)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		// 64 progress notifications of ~600 bytes each: ~40 KB in all,
		// each far below the 4 KiB bound.
		for i := 0; i < 64; i++ {
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":%q}}\n\n", strings.Repeat("p", 512))
		}
		fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}}\n\n", id)
	})
	defer srv.Close()
	o := testOptions()
	o.Limits.MaxMessageBytes = 4096
	res, err := connect(t, Spec{URL: srv.URL}, o).Call(context.Background(), "tool_00", nil)
	if err != nil {
		t.Fatalf("a stream of small messages failed the call: %v", err)
	}
	if len(res.Content) != 1 || res.Content[0].Text != "done" {
		t.Fatalf("result %+v", res)
	}
	// A line that never ends is bounded all the same.
	srv2 := callServer(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fmt.Fprintf(w, ": %s", strings.Repeat("c", 8192))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	defer srv2.Close()
	_, err = connect(t, Spec{URL: srv2.URL}, o).Call(context.Background(), "tool_00", nil)
	wantContains(t, wantFailure(t, err, ProtocolError).Msg, "larger than 4096 bytes")
}

// A streamable HTTP server that answers the client's
// notifications/initialized POST with 200 and an event stream it keeps
// open (the spec asks for 202): a notification has no answer, and its
// response is closed unread. Reading it to its end held the handshake for
// the whole connect timeout.
func TestNotificationStreamDoesNotHoldTheHandshake(t *testing.T) {
	f := NewFake(FakeConfig{Tools: someTools(1)})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if !bytes.Contains(body, []byte(`"notifications/initialized"`)) {
			f.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, ": stream open\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // held open, as a server stream is
	}))
	defer srv.Close()
	start := time.Now()
	c, err := Connect(context.Background(), Spec{URL: srv.URL}, testOptions())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer c.Close()
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("the handshake took %v: it waited for the end of the stream that answered notifications/initialized", d.Round(100*time.Millisecond))
	}
}

// pollingServer is a 2025-11-25 server that answers tools/call with a
// priming event (id ev-1, retry 100 ms) and closes the stream, keeping
// the answer for a GET with Last-Event-ID (SEP-1699, "SSE polling via
// server-side disconnect"). get answers that GET when it is one; gets
// counts them.
func pollingServer(t *testing.T, get func(w http.ResponseWriter, r *http.Request, callID string)) (srv *httptest.Server, gets *atomic.Int32) {
	f := NewFake(FakeConfig{Tools: someTools(1)})
	var mu sync.Mutex
	var id string
	gets = new(atomic.Int32)
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			gets.Add(1)
			mu.Lock()
			callID := id
			mu.Unlock()
			get(w, r, callID)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if !bytes.Contains(body, []byte(`"tools/call"`)) {
			f.ServeHTTP(w, r)
			return
		}
		var m message
		json.Unmarshal(body, &m)
		mu.Lock()
		id = string(m.ID)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, "id: ev-1\nretry: 100\ndata: \n\n")
	}))
	t.Cleanup(srv.Close)
	return srv, gets
}

// rook asks for MCP 2025-11-25, whose streamable HTTP transport lets a
// server working on a long request close the POST's event stream once it
// has sent an event with an id; the client resumes by a GET carrying
// Last-Event-ID (after the retry the server gave), and gets the response
// there. Every call that outlasted the server's poll interval failed as
// an answer lost.
func TestEventStreamResumesAfterTheServerClosedIt(t *testing.T) {
	var mu sync.Mutex
	var headers http.Header
	var gets *atomic.Int32
	var srv *httptest.Server
	srv, gets = pollingServer(t, func(w http.ResponseWriter, r *http.Request, id string) {
		mu.Lock()
		headers = r.Header.Clone()
		mu.Unlock()
		if r.Header.Get("Last-Event-ID") != "ev-1" || id == "" {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		if gets.Load() == 1 { // still working: another poll
			fmt.Fprint(w, "id: ev-1\nretry: 50\ndata: \n\n")
			return
		}
		fmt.Fprintf(w, "id: ev-2\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}}\n\n", id)
	})
	c := connect(t, Spec{URL: srv.URL}, testOptions())
	res, err := c.Call(context.Background(), "tool_00", nil)
	if err != nil {
		t.Fatalf("a 2025-11-25 server that closed its stream after a priming event: %v", err)
	}
	if len(res.Content) != 1 || res.Content[0].Text != "done" {
		t.Fatalf("result %+v", res)
	}
	if n := gets.Load(); n != 2 {
		t.Fatalf("%d GETs with Last-Event-ID, want 2", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if headers.Get("Accept") != "text/event-stream" || headers.Get("MCP-Protocol-Version") != c.Negotiated() {
		t.Fatalf("resumed with headers %v", headers)
	}
}

// A stream ended without the answer that cannot be resumed (the server
// refuses the GET, or gave no event id) is an answer lost: the tool may
// have run. A refused GET is never taken for a lost session (a 404 that
// would start a new one and send the call again).
func TestEventStreamResumeRefused(t *testing.T) {
	for _, code := range []int{http.StatusMethodNotAllowed, http.StatusNotFound} {
		srv, gets := pollingServer(t, func(w http.ResponseWriter, r *http.Request, id string) { w.WriteHeader(code) })
		_, err := connect(t, Spec{URL: srv.URL}, testOptions()).Call(context.Background(), "tool_00", nil)
		wantContains(t, wantFailure(t, err, ProtocolError).Msg, "the server went away before it answered tools/call",
			fmt.Sprintf("resuming it (a GET with Last-Event-ID) failed: HTTP %d", code), "the tool may have run; check before calling it again")
		if n := gets.Load(); n != 1 {
			t.Fatalf("HTTP %d: %d GETs", code, n)
		}
	}
	var gets atomic.Int32
	srv := callServer(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			gets.Add(1)
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, "retry: 10\ndata: \n\n") // no id
	})
	defer srv.Close()
	_, err := connect(t, Spec{URL: srv.URL}, testOptions()).Call(context.Background(), "tool_00", nil)
	wantContains(t, wantFailure(t, err, ProtocolError).Msg, "ended without its response): the tool may have run")
	if gets.Load() != 0 {
		t.Fatal("resumed a stream that gave no event id")
	}
}

// A server that ends its stream again and again is resumed within the
// call's time only.
func TestEventStreamResumesWithinTheCallsTime(t *testing.T) {
	srv, _ := pollingServer(t, func(w http.ResponseWriter, r *http.Request, id string) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, "id: ev-1\nretry: 100\ndata: \n\n")
	})
	o := testOptions()
	o.Limits.CallTimeout = 700 * time.Millisecond
	start := time.Now()
	_, err := connect(t, Spec{URL: srv.URL}, o).Call(context.Background(), "tool_00", nil)
	wantContains(t, wantFailure(t, err, ProtocolError).Msg, "the tool did not finish in time")
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("resumed for %v past a 700ms call", d)
	}
}

// A stream cut off (its connection lost) after an event with an id is
// resumed as one the server ended is.
func TestEventStreamResumesAfterACutOff(t *testing.T) {
	f := NewFake(FakeConfig{Tools: someTools(1)})
	var mu sync.Mutex
	var id string
	var gets atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.Method == http.MethodGet {
			gets.Add(1)
			if r.Header.Get("Last-Event-ID") != "ev-1" {
				w.WriteHeader(http.StatusMethodNotAllowed)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			fmt.Fprintf(w, "id: ev-2\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}}\n\n", id)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if !bytes.Contains(body, []byte(`"tools/call"`)) {
			f.ServeHTTP(w, r)
			return
		}
		id = callID(r)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, "id: ev-1\nretry: 10\ndata: \n\ndata: {\"jsonrpc\":")
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the connection lost mid-event
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Start()
	defer srv.Close()
	res, err := connect(t, Spec{URL: srv.URL}, testOptions()).Call(context.Background(), "tool_00", nil)
	if err != nil {
		t.Fatalf("a stream cut off after an event id: %v", err)
	}
	if len(res.Content) != 1 || res.Content[0].Text != "done" || gets.Load() != 1 {
		t.Fatalf("result %+v after %d GETs", res, gets.Load())
	}
}

// An event on a call's stream that does not decode is its answer,
// malformed, only when it carries the call's id: a notification rook
// cannot decode (a progress value NaN, as Python's json writes
// float('nan')) is skipped, as the stdio transport skips such a line, and
// the answer that comes next is taken. It failed the call at once ("not
// JSON-RPC ... may have run"), the answer dropped.
func TestEventStreamSkipsAnUndecodableNotification(t *testing.T) {
	srv := callServer(func(w http.ResponseWriter, r *http.Request) {
		id := callID(r)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":NaN}}\n\n")
		fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}}\n\n", id)
	})
	defer srv.Close()
	res, err := connect(t, Spec{URL: srv.URL}, testOptions()).Call(context.Background(), "tool_00", nil)
	if err != nil {
		t.Fatalf("a notification that does not decode, before the call's answer on its event stream, failed the call: %v", err)
	}
	if len(res.Content) != 1 || res.Content[0].Text != "done" {
		t.Fatalf("result %+v, want the answer's text \"done\"", res.Content)
	}
}

// An event that does not decode and carries the call's id is its answer,
// malformed: the call fails at once, the tool may have run.
func TestEventStreamUndecodableAnswerFailsTheCall(t *testing.T) {
	srv := callServer(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"n\":NaN}}\n\n", callID(r))
	})
	defer srv.Close()
	_, err := connect(t, Spec{URL: srv.URL}, testOptions()).Call(context.Background(), "tool_00", nil)
	wantContains(t, wantFailure(t, err, ProtocolError).Msg, "is not JSON-RPC", "the tool may have run")
}
