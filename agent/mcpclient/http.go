package mcpclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// httpTransport is streamable HTTP (2025-03-26 and later): every message is
// a POST; the answer is JSON or an event stream (resumed by a GET with
// Last-Event-ID when the server ends it early); notifications and our
// answers to the server get 202.
type httpTransport struct {
	url      *url.URL
	client   *http.Client
	headers  http.Header // Spec.Headers and Authorization, sent on every request
	secrets  []string    // header values kept out of messages
	sentAuth bool        // an Authorization header is sent
	handle   func(*message) *message
	maxMsg   int64
	name     string // the user's name for the server, for advice; NAME when none

	mu      sync.Mutex
	session string // Mcp-Session-Id given at initialize
	version string // negotiated revision, sent as MCP-Protocol-Version
}

// envProxy is where the proxy for a non-local host comes from.
var envProxy = http.ProxyFromEnvironment

// oauthProbeTimeout bounds the look for OAuth protected-resource metadata
// after a 401.
const oauthProbeTimeout = 3 * time.Second

func newHTTPTransport(s Spec, o Options, lim Limits, handle func(*message) *message) (*httpTransport, error) {
	u, err := url.Parse(s.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("mcpclient: %q is not an http or https URL", RedactURL(s.URL))
	}
	t := &httpTransport{url: u, headers: http.Header{}, handle: handle, maxMsg: lim.MaxMessageBytes, name: s.Name}
	if t.name == "" {
		t.name = "NAME"
	}
	// A password in the URL is sent (Basic auth): a server that echoes it
	// back does not get it shown. Without a password the user is the
	// credential (https://TOKEN@host).
	if pw, ok := u.User.Password(); ok {
		t.secret(pw)
	} else if u.User != nil {
		t.secret(u.User.Username())
	}
	// A query's values are sent as given (a setup saved by an older rook
	// may hold a key there): a server that echoes one does not get it
	// shown.
	for _, p := range strings.Split(u.RawQuery, "&") {
		_, v, _ := strings.Cut(p, "=")
		t.secret(v)
		if uv, err := url.QueryUnescape(v); err == nil && uv != v {
			t.secret(uv)
		}
	}
	for k, v := range s.Headers {
		t.headers.Set(k, v)
		t.secret(v)
	}
	for _, k := range slices.Sorted(maps.Keys(s.HeaderEnv)) {
		v := strings.TrimSpace(o.Getenv(s.HeaderEnv[k]))
		if v == "" {
			return nil, &Failure{Kind: NeedsCredential, Msg: fmt.Sprintf("the variable %s for header %s is not set; set it, or add the server again with another (`rook mcp rm`, `rook mcp add`)", s.HeaderEnv[k], k)}
		}
		if !HeaderValue(v) {
			return nil, &Failure{Kind: NeedsCredential, Msg: fmt.Sprintf("the variable %s for header %s holds a line break or another control character, which cannot be sent; set it to the value alone", s.HeaderEnv[k], k)}
		}
		t.headers.Set(k, v)
		t.secret(v)
	}
	if s.BearerEnv != "" {
		tok := strings.TrimSpace(o.Getenv(s.BearerEnv))
		if tok == "" {
			return nil, &Failure{Kind: NeedsCredential, Msg: fmt.Sprintf("the bearer token variable %s is not set; set it, or add the server again with another (`rook mcp rm`, `rook mcp add`)", s.BearerEnv)}
		}
		if !HeaderValue(tok) {
			return nil, &Failure{Kind: NeedsCredential, Msg: fmt.Sprintf("the bearer token variable %s holds a line break or another control character, which cannot be sent; set it to the token alone", s.BearerEnv)}
		}
		t.headers.Set("Authorization", "Bearer "+tok)
		t.secret(tok)
	}
	// The URL's user information is sent as Basic auth, as net/http would
	// (unless an Authorization header is set), and kept out of the URL the
	// requests go to: net/http names that URL in its errors, with a token
	// given as the user in full.
	if u.User != nil {
		if t.headers.Get("Authorization") == "" {
			pw, _ := u.User.Password()
			basic := base64.StdEncoding.EncodeToString([]byte(u.User.Username() + ":" + pw))
			t.headers.Set("Authorization", "Basic "+basic)
			t.secret(basic)
		}
		u.User = nil
	}
	t.sentAuth = t.headers.Get("Authorization") != ""
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = directForLocal(envProxy)
	t.client = &http.Client{Transport: tr, CheckRedirect: sameHostRedirect}
	return t, nil
}

// HeaderValue says whether net/http sends v as a header's value: a value
// it refuses fails every request, named as if the server were unreachable.
// A variable read at connect time may hold one (a token file's two lines);
// a value given at add is refused there (agent.CheckMCPSpec).
func HeaderValue(v string) bool {
	return !strings.ContainsFunc(v, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f })
}

func (t *httpTransport) secret(v string) {
	if len(v) >= 4 {
		t.secrets = append(t.secrets, v)
	}
}

// redact removes credentials we sent from server-written text.
func (t *httpTransport) redact(s string) string {
	for _, v := range t.secrets {
		s = strings.ReplaceAll(s, v, "[redacted]")
	}
	return s
}

// sameHostRedirect follows only method-keeping redirects (307, 308) on the
// same host: extra headers may carry credentials.
func sameHostRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 5 || req.URL.Host != via[0].URL.Host {
		return http.ErrUseLastResponse
	}
	if c := req.Response.StatusCode; c != http.StatusTemporaryRedirect && c != http.StatusPermanentRedirect {
		return http.ErrUseLastResponse
	}
	return nil
}

func (t *httpTransport) negotiated(v string) {
	t.mu.Lock()
	t.version = v
	t.mu.Unlock()
}

// newRequest is a request to the server's URL with our headers.
func (t *httpTransport) newRequest(ctx context.Context, method string, body []byte) (*http.Request, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, t.url.String(), r)
	if err != nil {
		return nil, err
	}
	for k, v := range t.headers {
		req.Header[k] = v
	}
	t.mu.Lock()
	if t.version != "" {
		req.Header.Set("MCP-Protocol-Version", t.version)
	}
	if t.session != "" {
		req.Header.Set("Mcp-Session-Id", t.session)
	}
	t.mu.Unlock()
	return req, nil
}

// post sends one message. A 2xx response comes back open; anything else
// is a classified error.
func (t *httpTransport) post(ctx context.Context, body []byte) (*http.Response, error) {
	resp, _, err := t.postWritten(ctx, body)
	return resp, err
}

// postWritten is post, and says whether the request was written whole:
// the server may have it, though no answer came.
func (t *httpTransport) postWritten(ctx context.Context, body []byte) (*http.Response, bool, error) {
	req, err := t.newRequest(ctx, http.MethodPost, body)
	if err != nil {
		return nil, false, err
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	hadSession := req.Header.Get("Mcp-Session-Id") != ""
	// Whether the request was written whole: a connection lost after
	// that may have lost the answer rather than the request (the server
	// read the call and died, or dropped it), so the server may have
	// acted on it; one lost before it never carried the request whole.
	var wrote atomic.Bool
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		WroteRequest: func(i httptrace.WroteRequestInfo) { wrote.Store(i.Err == nil) },
	}))
	resp, err := t.client.Do(req)
	if err != nil {
		// net/http names the URL in its errors, query and all: a
		// credential in the query would reach the message.
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = RedactURL(ue.URL)
		}
		f := netFailure(ctx, err)
		switch {
		case wrote.Load():
			f = lostAnswer(f)
		case errors.Is(f, context.DeadlineExceeded):
			f = errNotSent // the time ran out before the request was written whole
		}
		return nil, wrote.Load(), f
	}
	if resp.StatusCode/100 == 2 {
		return resp, true, nil
	}
	defer resp.Body.Close()
	return nil, true, t.statusFailure(ctx, resp, hadSession)
}

func (t *httpTransport) roundTrip(ctx context.Context, req *message, limit int64) (answer *message, n int64, err error) {
	if req.Method == "initialize" { // a new session, maybe after a lost one
		t.mu.Lock()
		t.session, t.version = "", ""
		t.mu.Unlock()
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, 0, err
	}
	resp, written, err := t.postWritten(ctx, body)
	defer func() {
		// Given up on once the server may have had it (its time ran out,
		// or the caller cancelled it): closing the connection does not
		// cancel a request on streamable HTTP. After the body is closed
		// (deferred below, run first).
		if err != nil && written && ctx.Err() != nil {
			sendCancelled(ctx, t, req)
		}
	}()
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	if req.Method == "initialize" {
		if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
			t.mu.Lock()
			t.session = sid
			t.mu.Unlock()
		}
	}
	max := min(limit, t.maxMsg) // any one message
	lr := &limitedReader{r: resp.Body, limit: max}
	want := idKey(req.ID)
	ct := resp.Header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ct)
	switch {
	case resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusNoContent:
		f := protocolf(nil, "the server accepted %s (HTTP %d) without answering it", req.Method, resp.StatusCode)
		f.accepted = true
		return nil, 0, f
	case mt == "text/event-stream":
		// The server took the request (2xx): a connection lost from here
		// on lost its answer, not the request.
		m, n, err := t.readStreams(ctx, resp.Body, want, req.Method, max)
		return m, n, lostAnswer(err)
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		b, err := io.ReadAll(lr)
		if err != nil {
			return nil, lr.n, lostAnswer(t.readFailure(ctx, err))
		}
		m, err := t.pick(ctx, b, want, req.Method)
		if err != nil {
			return nil, lr.n, err
		}
		if m == nil {
			// The server took the request (HTTP 200) and answered
			// something else: it may act on it, or have.
			f := protocolf(nil, "the server's HTTP answer to %s does not carry its response", req.Method)
			f.accepted = true
			return nil, lr.n, f
		}
		return m, lr.n, nil
	}
	return nil, 0, protocolf(nil, "the server answered %s with Content-Type %q, neither JSON nor an event stream", req.Method, clean(ct, 100))
}

// pick reads the messages in b: server requests are answered, the response
// with id want is returned (nil when absent), the rest is ignored. An
// error with id null is the response when none has id want: it answers
// the one request this POST carried, which the server could not read.
func (t *httpTransport) pick(ctx context.Context, b []byte, want, method string) (*message, error) {
	msgs, err := decodeMessages(b)
	if err != nil {
		return nil, malformedAnswer(method, err)
	}
	var found, unread *message
	for _, m := range msgs {
		switch {
		case m.isResponse() && idKey(m.ID) == want:
			found = m
		case m.isResponse() && nullID(m.ID) && m.Error != nil:
			unread = m
		case m.isRequest():
			t.reply(ctx, m)
		}
	}
	if found == nil {
		found = unread
	}
	return found, nil
}

// maxResumes bounds the resumptions of one request's event stream (a GET
// with Last-Event-ID after the server ended it without the answer); the
// request's time bounds them too. A server that polls (2025-11-25 "SSE
// polling") ends its stream every few seconds: a two-minute call at a
// second's interval resumes 120 times.
const maxResumes = 256

// Resumption waits the retry the server gave (SSE "retry:" field, in
// milliseconds), at most maxRetryWait; defaultRetryWait when it gave none.
const (
	defaultRetryWait = time.Second
	maxRetryWait     = 30 * time.Second
)

// streamState is what an event stream said of itself, for resuming it:
// the id of its last event, and how long to wait before reconnecting.
type streamState struct {
	lastID   string
	retry    time.Duration
	retrySet bool // retry was said (0 is "at once")
}

// readStreams reads a request's event stream (body) until the response
// with id want, resuming it when the server ends it without the answer
// after an event with an id (MCP 2025-11-25 streamable HTTP: the server
// may close the stream once it sent one, and the client resumes by a GET
// carrying Last-Event-ID), at most maxResumes times, within ctx. Each
// event is bounded by max bytes (any one message); the stream as a whole
// by ctx's time only (the call's, or the list's, timeout): a server that
// sends progress while it works is not cut off by the bytes it sent. n
// counts every byte read.
func (t *httpTransport) readStreams(ctx context.Context, body io.Reader, want, method string, max int64) (m *message, n int64, err error) {
	var st streamState
	cr := &countingReader{r: body}
	m, err = t.readStream(ctx, cr, want, method, max, &st)
	for resumes := 0; m == nil && t.resumable(ctx, err) && st.lastID != ""; resumes++ {
		if resumes == maxResumes {
			f := protocolf(nil, "the server ended its event stream for %s without its response %d times, resumed each time", method, maxResumes+1)
			f.answerLost = true
			return nil, cr.n, f
		}
		how := "ended without its response"
		if f := (*Failure)(nil); errors.As(err, &f) && !f.ended {
			how = "was cut off before its response (" + strings.TrimPrefix(f.Msg, "the server could not be reached: ") + ")"
		}
		var stream io.ReadCloser
		if stream, err = t.resume(ctx, &st, method, how); err != nil {
			return nil, cr.n, err
		}
		cr.r = stream
		m, err = t.readStream(ctx, cr, want, method, max, &st)
		stream.Close()
	}
	return m, cr.n, err
}

// resumable says whether a stream that ended with err (not its answer)
// may be resumed: it ended, or its connection was lost, and neither ctx
// ran out nor a message was too large.
func (t *httpTransport) resumable(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	var f *Failure
	if !errors.As(err, &f) {
		return false
	}
	return f.ended || f.Kind == Unreachable
}

// resume waits the stream's retry (within ctx), then asks for its events
// after st.lastID; how says how the stream stopped. A failure is the lost answer's: the server had the
// request, and is never asked it again (a 404 does not start a new
// session and send the request there).
func (t *httpTransport) resume(ctx context.Context, st *streamState, method, how string) (io.ReadCloser, error) {
	wait := defaultRetryWait
	if st.retrySet {
		wait = min(st.retry, maxRetryWait)
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-timer.C:
	}
	failed := func(kind FailureKind, status int, cause error, format string, args ...any) error {
		return &Failure{Kind: kind, Status: status, Err: cause, answerLost: true,
			Msg: fmt.Sprintf("the server's event stream for %s %s, and resuming it (a GET with Last-Event-ID) failed: ", method, how) + fmt.Sprintf(format, args...)}
	}
	req, err := t.newRequest(ctx, http.MethodGet, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", st.lastID)
	resp, err := t.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = RedactURL(ue.URL)
		}
		nf := netFailure(ctx, err)
		var f *Failure
		if !errors.As(nf, &f) {
			return nil, nf // ctx's
		}
		return nil, failed(f.Kind, 0, f, "%s", strings.TrimPrefix(f.Msg, "the server could not be reached: "))
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		msg := fmt.Sprintf("HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
		if d := t.detail(b); d != "" {
			msg += ": " + d
		}
		return nil, failed(ProtocolError, resp.StatusCode, nil, "%s", msg)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		resp.Body.Close()
		return nil, failed(ProtocolError, 0, nil, "its answer is not an event stream (Content-Type %q)", clean(resp.Header.Get("Content-Type"), 100))
	}
	return resp.Body, nil
}

// readStream reads an event stream until the event carrying the response
// with id want, each event's data at most max bytes (a longer one is a
// *tooLargeError), and keeps in st the last event id and retry it gave.
// A stream that ends without the response is a Failure marked ended (and
// answerLost): readStreams may resume it.
func (t *httpTransport) readStream(ctx context.Context, r io.Reader, want, method string, max int64, st *streamState) (*message, error) {
	br := bufio.NewReader(r)
	var data []byte
	hasData, other := false, false
	id, hasID := "", false // the event's id field, set in st when it is dispatched
	dispatch := func() (*message, error) {
		if hasID {
			st.lastID = id
		}
		d, skip := data, other || !hasData || len(bytes.TrimSpace(data)) == 0
		data, hasData, other, id, hasID = nil, false, false, "", false
		if skip { // a priming event, or one not meant as a message
			return nil, nil
		}
		m, err := t.pick(ctx, d, want, method)
		if err != nil && !slices.ContainsFunc(undecodedIDs(d), func(id json.RawMessage) bool { return idKey(id) == want }) {
			// An event that does not decode is the request's answer,
			// malformed, only when it carries the request's id; another
			// (a notification with a value JSON has not, progress NaN)
			// is skipped, as the stdio transport skips such a line: it
			// failed the call, and the answer that came next was lost.
			return nil, nil
		}
		return m, err
	}
	for {
		// A line is bounded as an event's data is, with room for its
		// field name: a line that never ends must not be read whole.
		line, err := readLine(br, max+64)
		var big *tooLargeError
		if errors.As(err, &big) {
			return nil, &tooLargeError{max}
		}
		if err == nil {
			line = bytes.TrimRight(line, "\r\n")
			if len(line) == 0 {
				if m, err := dispatch(); m != nil || err != nil {
					return m, err
				}
			} else if line[0] != ':' {
				field, value, _ := bytes.Cut(line, []byte(":"))
				value = bytes.TrimPrefix(value, []byte(" "))
				switch string(field) {
				case "data":
					if hasData {
						data = append(data, '\n')
					}
					data = append(data, value...)
					hasData = true
					if int64(len(data)) > max {
						return nil, &tooLargeError{max}
					}
				case "event":
					other = len(value) > 0 && string(value) != "message"
				case "id":
					// An id holding NUL is ignored (the SSE spec); one
					// that cannot be sent as a header cannot resume.
					if !bytes.Contains(value, []byte{0}) {
						id, hasID = string(value), true
						if !HeaderValue(id) {
							id = ""
						}
					}
				case "retry":
					if ms, err := strconv.ParseInt(string(value), 10, 64); err == nil && ms >= 0 {
						st.retry = time.Duration(min(ms, int64(maxRetryWait/time.Millisecond))) * time.Millisecond
						st.retrySet = true
					}
				}
			}
			continue
		}
		if err == io.EOF {
			if m, err := dispatch(); m != nil || err != nil {
				return m, err
			}
			// The server took the request and ended the stream without
			// answering it: an answer lost, as for a stream cut off (the
			// tool may have run), though no read failed; resumed when an
			// event had an id.
			f := protocolf(nil, "the server's event stream for %s ended without its response", method)
			f.answerLost, f.ended = true, true
			return nil, f
		}
		return nil, t.readFailure(ctx, err)
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n += int64(k)
	return k, err
}

func (t *httpTransport) readFailure(ctx context.Context, err error) error {
	var big *tooLargeError
	if errors.As(err, &big) {
		return err
	}
	return netFailure(ctx, err)
}

// reply answers a server request by POSTing our response.
func (t *httpTransport) reply(ctx context.Context, req *message) {
	b, err := json.Marshal(t.handle(req))
	if err != nil {
		return
	}
	if resp, err := t.post(ctx, b); err == nil {
		closeUnanswered(resp)
	}
}

// closeUnanswered closes the response to a message that has no answer (a
// notification, our response to a server request): 202 with no body, as
// the spec asks, or a body nothing is waited for. A body of known small
// length is read, so the connection is kept; any other (an event stream
// a server opens for every POST and keeps open, a body of unknown length)
// is closed unread: reading it to its end held the handshake for the
// whole connect timeout.
func closeUnanswered(resp *http.Response) {
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" && resp.ContentLength >= 0 && resp.ContentLength <= 4<<10 {
		io.Copy(io.Discard, io.LimitReader(resp.Body, resp.ContentLength))
	}
	resp.Body.Close()
}

func (t *httpTransport) notify(ctx context.Context, msg *message) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	resp, err := t.post(ctx, b)
	if err != nil {
		return err
	}
	closeUnanswered(resp)
	return nil
}

// close deletes the session, if there is one; errors are ignored.
func (t *httpTransport) close() error {
	t.mu.Lock()
	session := t.session
	t.mu.Unlock()
	if session != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if req, err := t.newRequest(ctx, http.MethodDelete, nil); err == nil {
			if resp, err := t.client.Do(req); err == nil {
				resp.Body.Close()
			}
		}
		cancel()
	}
	t.client.CloseIdleConnections()
	return nil
}

// statusFailure classifies a non-2xx answer.
func (t *httpTransport) statusFailure(ctx context.Context, resp *http.Response, hadSession bool) error {
	code := resp.StatusCode
	switch {
	case code == http.StatusUnauthorized:
		return t.unauthorized(ctx, resp)
	case code == http.StatusForbidden:
		return t.credentialFailure(code)
	case code == http.StatusNotFound && hadSession:
		return errSessionExpired
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	msg := fmt.Sprintf("the server answered HTTP %d %s", code, http.StatusText(code))
	if d := t.detail(body); d != "" {
		msg += ": " + d
	}
	// How long to wait, when the server says (Retry-After): a 429 or a
	// 503 said only its status, not when trying again would work.
	wait := retryAfter(resp.Header.Get("Retry-After"), time.Now())
	if wait > 0 {
		msg += fmt.Sprintf("; the server asks to wait %d s before trying again", int((wait+time.Second-1)/time.Second))
	} else if code == http.StatusTooManyRequests {
		msg += "; wait before trying again"
	}
	switch code {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return &Failure{Kind: Unreachable, Status: code, Msg: "the server could not be reached: what is in front of it " + strings.TrimPrefix(msg, "the server ")}
	case http.StatusNotFound, http.StatusMethodNotAllowed:
		msg += " (is this the server's streamable HTTP endpoint? rook does not speak the older HTTP+SSE transport)"
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		if loc := resp.Header.Get("Location"); loc != "" {
			// A Location is most often relative ("/v2/mcp"): resolved
			// against the URL asked, as a browser does, it is a URL the
			// user can add the server with.
			if resp.Request != nil && resp.Request.URL != nil {
				if u, err := resp.Request.URL.Parse(loc); err == nil {
					loc = u.String()
				}
			}
			loc = clean(RedactURL(loc), 200)
			msg += fmt.Sprintf(" (it redirects to %s; if the server moved there, remove it and add it again with that URL, its other options as before: `rook mcp rm %s`, then `rook mcp add %s --url %s`)", loc, t.name, t.name, loc)
		}
	}
	return &Failure{Kind: ProtocolError, Status: code, Msg: msg}
}

// retryAfter reads a Retry-After header (RFC 9110 10.2.3): seconds, or
// an HTTP date. 0 when absent, unreadable or past; at most a day.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		d = time.Duration(min(max(n, 0), 86400)) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), 24*time.Hour)
}

// detail is the JSON-RPC error message in an error body, or its first
// line of text, cleaned and without our credentials.
func (t *httpTransport) detail(body []byte) string {
	var m message
	if json.Unmarshal(body, &m) == nil && m.Error != nil {
		return t.redact(clean(fmt.Sprintf("%s (code %d)", m.Error.Message, m.Error.Code), 300))
	}
	line, _, _ := bytes.Cut(bytes.TrimSpace(body), []byte("\n"))
	return t.redact(clean(string(line), 300))
}

func (t *httpTransport) credentialFailure(code int) *Failure {
	msg := fmt.Sprintf("the server rejected the credential (HTTP %d); change it by removing the server and adding it again (`rook mcp rm`, `rook mcp add`)", code)
	if !t.sentAuth && len(t.headers) == 0 {
		msg = fmt.Sprintf("the server wants a credential and none was sent (HTTP %d); change it by removing the server and adding it again (`rook mcp rm`, `rook mcp add`)", code)
	}
	return &Failure{Kind: NeedsCredential, Status: code, Msg: msg}
}

// unauthorized tells a rejected credential from a server that wants an
// OAuth sign-in: an OAuth challenge (resource_metadata, or authorization
// parameters without error="invalid_token") or protected-resource metadata
// at the well-known address means OAuth; a token we sent that the server
// calls invalid is a credential to fix.
func (t *httpTransport) unauthorized(ctx context.Context, resp *http.Response) error {
	oauth := &Failure{Kind: NeedsOAuth, Status: http.StatusUnauthorized, Msg: OAuthMessage}
	for _, ch := range parseChallenges(resp.Header.Values("WWW-Authenticate")) {
		if !strings.EqualFold(ch.scheme, "Bearer") {
			continue
		}
		invalid := ch.params["error"] == "invalid_token"
		if invalid && t.sentAuth {
			return t.credentialFailure(http.StatusUnauthorized)
		}
		if _, ok := ch.params["resource_metadata"]; ok {
			return oauth
		}
		if _, hasErr := ch.params["error"]; !hasErr {
			for _, p := range []string{"authorization_uri", "as_uri", "scope"} {
				if _, ok := ch.params[p]; ok {
					return oauth
				}
			}
		}
	}
	if t.protectedResource(ctx) {
		return oauth
	}
	return t.credentialFailure(http.StatusUnauthorized)
}

// protectedResource says whether the server publishes OAuth protected
// resource metadata (RFC 9728): at the path-suffixed well-known address,
// or at the root one.
func (t *httpTransport) protectedResource(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, oauthProbeTimeout)
	defer cancel()
	const wk = "/.well-known/oauth-protected-resource"
	paths := []string{wk}
	if p := strings.TrimSuffix(t.url.EscapedPath(), "/"); p != "" {
		paths = []string{wk + p, wk}
	}
	for _, p := range paths {
		u := url.URL{Scheme: t.url.Scheme, Host: t.url.Host, Path: p}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return false
		}
		req.Header.Set("Accept", "application/json")
		resp, err := t.client.Do(req)
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		var obj map[string]json.RawMessage
		if resp.StatusCode == http.StatusOK && json.Unmarshal(b, &obj) == nil && obj != nil {
			return true
		}
	}
	return false
}

// challenge is one WWW-Authenticate challenge.
type challenge struct {
	scheme string
	params map[string]string // names lower-cased
}

// parseChallenges reads WWW-Authenticate values (RFC 9110 11.6.1): schemes
// each followed by name=value parameters (values plain or quoted), all
// separated by commas. A token68 is skipped.
func parseChallenges(values []string) []challenge {
	var out []challenge
	for _, s := range values {
		afterScheme := false // a token right after a scheme, before a comma, is a token68
		for {
			s = strings.TrimLeft(s, " \t")
			comma := false
			for strings.HasPrefix(s, ",") {
				comma = true
				s = strings.TrimLeft(s[1:], " \t")
			}
			if s == "" {
				break
			}
			i := strings.IndexAny(s, " \t,=\"")
			if i < 0 {
				i = len(s)
			}
			if i == 0 { // a stray '=' or quote
				s = s[1:]
				continue
			}
			tok, rest := s[:i], strings.TrimLeft(s[i:], " \t")
			if strings.HasPrefix(rest, "=") {
				after := strings.TrimLeft(rest[1:], " \t")
				if len(out) > 0 && after != "" && after[0] != '=' && after[0] != ',' {
					value, more := paramValue(after)
					out[len(out)-1].params[strings.ToLower(tok)] = value
					s, afterScheme = more, false
					continue
				}
				s, afterScheme = strings.TrimLeft(rest, "="), false // a token68 ending in '='
				continue
			}
			if afterScheme && !comma {
				s, afterScheme = rest, false
				continue
			}
			out = append(out, challenge{scheme: tok, params: map[string]string{}})
			s, afterScheme = rest, true
		}
	}
	return out
}

// paramValue reads a quoted string or a token, and returns the rest.
func paramValue(s string) (value, rest string) {
	if strings.HasPrefix(s, `"`) {
		var b strings.Builder
		for i := 1; i < len(s); i++ {
			switch s[i] {
			case '\\':
				if i+1 < len(s) {
					i++
					b.WriteByte(s[i])
				}
			case '"':
				return b.String(), s[i+1:]
			default:
				b.WriteByte(s[i])
			}
		}
		return b.String(), ""
	}
	i := strings.IndexAny(s, " \t,")
	if i < 0 {
		return s, ""
	}
	return s[:i], s[i:]
}

// limitedReader reads at most limit bytes; one more is a *tooLargeError.
// n counts what was read.
type limitedReader struct {
	r        io.Reader
	limit, n int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n > l.limit {
		return 0, &tooLargeError{l.limit}
	}
	if room := l.limit - l.n + 1; int64(len(p)) > room {
		p = p[:room]
	}
	k, err := l.r.Read(p)
	l.n += int64(k)
	if l.n > l.limit {
		return 0, &tooLargeError{l.limit}
	}
	return k, err
}

// directForLocal wraps a proxy choice so that a request to this machine or
// the private network is never proxied: localhost, loopback, RFC 1918 and
// CGNAT (100.64/10) addresses, IPv6 ULA and link-local addresses, and names
// that resolve only to those.
func directForLocal(env func(*http.Request) (*url.URL, error)) func(*http.Request) (*url.URL, error) {
	var mu sync.Mutex
	cache := map[string]bool{}
	return func(req *http.Request) (*url.URL, error) {
		p, err := env(req)
		if p == nil || err != nil {
			return p, err
		}
		host := req.URL.Hostname()
		mu.Lock()
		local, ok := cache[host]
		mu.Unlock()
		if !ok {
			local = isLocalHost(req.Context(), host)
			mu.Lock()
			cache[host] = local
			mu.Unlock()
		}
		if local {
			return nil, nil
		}
		return p, nil
	}
}

var cgnat = netip.MustParsePrefix("100.64.0.0/10")

func isLocalAddr(a netip.Addr) bool {
	a = a.Unmap().WithZone("")
	return a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsUnspecified() || cgnat.Contains(a)
}

// isLocalHost says whether host is this machine or on the private network;
// a name is looked up (briefly), and counts when every address it has does.
func isLocalHost(ctx context.Context, host string) bool {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	if a, err := netip.ParseAddr(h); err == nil {
		return isLocalAddr(a)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", h)
	if err != nil || len(addrs) == 0 {
		return false
	}
	for _, a := range addrs {
		if !isLocalAddr(a) {
			return false
		}
	}
	return true
}
