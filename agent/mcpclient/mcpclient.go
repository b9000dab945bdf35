// Package mcpclient is the client side of the Model Context Protocol: it
// reaches one MCP server (streamable HTTP or a program spoken to over its
// pipes), runs the initialize handshake, reads the server's whole tool list
// within bounds, and calls tools. It never prints and never runs a model:
// what it learns comes back as values and errors for the command layer.
//
// Protocol: the initialize-based revisions 2025-11-25 (asked for by
// default), 2025-06-18, 2025-03-26 and 2024-11-05. The 2026-07-28 stateless
// era is not probed: a server/discover probe hangs on silent old servers.
// Capabilities are empty: a server's requests for sampling (run a model) and
// elicitation (ask the user) are declined with a plain message, roots/list
// and anything else unknown get -32601, and ping gets {}. A request given
// up on after it was sent (its time ran out, or its ctx was cancelled) is
// cancelled at the server with notifications/cancelled, sent within a
// short bound; initialize never is. An event stream the server ends
// without the response, after an event with an id (2025-11-25 "SSE
// polling"), is resumed by a GET with Last-Event-ID, within the request's
// time and at most maxResumes times.
//
// Failures are *Failure values of five kinds (NeedsCredential, NeedsOAuth,
// Unreachable, ProtocolError, DiscoveryError) so that a caller can tell "fix
// the token" from "the machine is asleep" without reading messages.
//
// JSON-RPC and both transports are written by hand on the standard library.
package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultProtocolVersion is the revision asked for at initialize.
const DefaultProtocolVersion = "2025-11-25"

// ProtocolVersions are the revisions this client speaks, newest first. A
// server may answer initialize with any of them.
var ProtocolVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// Spec says how to reach one server: URL for streamable HTTP, or Command
// for a program spoken to over stdin and stdout. Exactly one is set.
type Spec struct {
	Name string `json:"name"` // the user's name for the server; never sent

	URL     string            `json:"url,omitempty"`     // streamable HTTP endpoint
	Headers map[string]string `json:"headers,omitempty"` // extra request headers, values as given
	// BearerEnv names an environment variable holding a bearer token. The
	// value is read (through Options.Getenv) at connect time and sent as
	// "Authorization: Bearer ..."; it is never stored.
	BearerEnv string `json:"bearer_env,omitempty"`
	// HeaderEnv maps a header to the environment variable holding its
	// value (an API key: X-Api-Key, Authorization...), read like BearerEnv
	// at connect time; only the variable's name is stored.
	HeaderEnv map[string]string `json:"header_env,omitempty"`

	Command string            `json:"command,omitempty"` // the program
	Args    []string          `json:"args,omitempty"`    // its arguments
	Env     map[string]string `json:"env,omitempty"`     // added to this process's environment
	// EnvFrom maps a variable of the program's environment to one of ours
	// holding its value (an API key), read when the program starts; only
	// our variable's name is stored.
	EnvFrom map[string]string `json:"env_from,omitempty"`
	// Dir is the directory the program runs in: the one it was added
	// from, so that an argument naming a file from there (server.py,
	// build/index.js) names the same file whatever directory rook is run
	// from. Empty (a setup saved before it was recorded): rook's own.
	Dir string `json:"dir,omitempty"`
}

// RedactURL is raw with its user information, user and password alike,
// and the value of each query parameter replaced by "xxxxx", for showing a
// server's URL: a URL may carry a credential (https://user:secret@host/mcp,
// a token as the user, https://TOKEN@host/mcp, or in the query,
// https://host/mcp?api_key=TOKEN), which is kept to connect but never
// printed. A query parameter's name stays: it says what was given. Text
// that does not parse as a URL has what comes before an '@' ahead of the
// first '/', '?' or '#' after "://", and its query, replaced all the same.
func RedactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		if u.User == nil && u.RawQuery == "" {
			return raw
		}
		if u.User != nil {
			u.User = url.User("xxxxx")
		}
		u.RawQuery = redactQuery(u.RawQuery)
		return u.String()
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	authority := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		rest = "xxxxx" + rest[at:]
	}
	beforeFragment, fragment, hasFragment := strings.Cut(rest, "#")
	if path, query, ok := strings.Cut(beforeFragment, "?"); ok {
		rest = path + "?" + redactQuery(query)
		if hasFragment {
			rest += "#" + fragment
		}
	}
	return scheme + "://" + rest
}

// redactQuery is a raw query with each parameter's value replaced by
// "xxxxx", and a parameter without a name (?TOKEN) replaced whole.
func redactQuery(q string) string {
	if q == "" {
		return q
	}
	parts := strings.Split(q, "&")
	for i, p := range parts {
		if k, _, ok := strings.Cut(p, "="); ok {
			parts[i] = k + "=xxxxx"
		} else if p != "" {
			parts[i] = "xxxxx"
		}
	}
	return strings.Join(parts, "&")
}

// QueryNames are the names of a raw query's parameters, unescaped where
// they can be, in order.
func QueryNames(q string) []string {
	var names []string
	for _, p := range strings.Split(q, "&") {
		k, _, _ := strings.Cut(p, "=")
		if k == "" {
			continue
		}
		if u, err := url.QueryUnescape(k); err == nil {
			k = u
		}
		names = append(names, k)
	}
	return names
}

// Limits bound what one server can make us do. A zero field takes its
// DefaultLimits value.
type Limits struct {
	// Discovery (Tools) bounds: total response bytes over all tools/list
	// pages, tools, pages, and the time for the whole list.
	MaxBytes int64
	MaxTools int
	MaxPages int
	Timeout  time.Duration
	// ConnectTimeout bounds the handshake: start (or connection),
	// initialize and notifications/initialized.
	ConnectTimeout time.Duration
	// MaxMessageBytes bounds any one message read from the server (a
	// tools/call answer with images may be large). On stdio a longer line
	// ends the connection. On an event stream it bounds each event on its
	// own; the stream as a whole (progress sent while a tool works, a
	// stream resumed) is bounded by the request's time (CallTimeout,
	// Timeout, ctx), not its bytes.
	MaxMessageBytes int64
	// CallTimeout bounds one tools/call; negative means only ctx bounds it.
	CallTimeout time.Duration
	// WholeCall, when more than 0, is the time the caller's ctx gave the
	// whole call, the server's start and handshake included (`rook mcp
	// call --timeout`): a call that runs out of it names it. The call's
	// own CallTimeout, started after the handshake, ends later, so
	// without it the message could name no limit at all.
	WholeCall time.Duration
}

// DefaultLimits are the bounds used where Limits leaves a field zero.
func DefaultLimits() Limits {
	return Limits{
		MaxBytes:        4 << 20,
		MaxTools:        512,
		MaxPages:        64,
		Timeout:         30 * time.Second,
		ConnectTimeout:  10 * time.Second,
		MaxMessageBytes: 16 << 20,
		CallTimeout:     2 * time.Minute,
	}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxBytes <= 0 {
		l.MaxBytes = d.MaxBytes
	}
	if l.MaxTools <= 0 {
		l.MaxTools = d.MaxTools
	}
	if l.MaxPages <= 0 {
		l.MaxPages = d.MaxPages
	}
	if l.Timeout <= 0 {
		l.Timeout = d.Timeout
	}
	if l.ConnectTimeout <= 0 {
		l.ConnectTimeout = d.ConnectTimeout
	}
	if l.MaxMessageBytes <= 0 {
		l.MaxMessageBytes = d.MaxMessageBytes
	}
	if l.CallTimeout == 0 {
		l.CallTimeout = d.CallTimeout
	}
	return l
}

// Options are the client's side of a connection.
type Options struct {
	Limits        Limits
	ClientName    string // clientInfo.name; default "rook"
	ClientVersion string // clientInfo.version; default "dev"
	// ProtocolVersion is asked for at initialize; default
	// DefaultProtocolVersion. It must be one of ProtocolVersions.
	ProtocolVersion string
	// Getenv reads BearerEnv, HeaderEnv and EnvFrom; default os.Getenv.
	Getenv func(string) string
	// Stderr receives a stdio server's stderr; nil discards it.
	Stderr io.Writer
	// OnDeclined, when set, is told the method of each server request that
	// was declined (sampling/createMessage, elicitation/create, roots/list,
	// anything unknown). It runs on a transport goroutine; keep it short.
	OnDeclined func(method string)
}

// Tool is one entry of a server's tool list. Every text in it was written
// by whoever runs the server.
type Tool struct {
	Name         string
	Title        string
	Description  string
	InputSchema  json.RawMessage // as sent; nil when absent
	OutputSchema json.RawMessage // as sent; nil when absent
	Annotations  Annotations
}

// Annotations are what the server claims about a tool. They are hints, not
// guarantees; nil means the server did not claim anything (the protocol's
// defaults are readOnly false, destructive true, idempotent false,
// openWorld true).
type Annotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// Result is a tools/call answer. IsError marks a tool that ran and failed
// (its content says why); it is a result, not a Go error.
type Result struct {
	Content    []Content       `json:"content"`                      // never nil: empty when the server sent no blocks
	Structured json.RawMessage `json:"structured_content,omitempty"` // structuredContent as sent; nil when absent
	IsError    bool            `json:"is_error"`
}

// Content is one content block. Images and audio keep only their type,
// MIME type and decoded size; embedded resources keep their URI, MIME type
// and text (or the decoded size of a blob); resource links their URI and
// name.
type Content struct {
	Type      string `json:"type"` // text, image, audio, resource_link, resource, or what the server said
	Text      string `json:"text,omitempty"`
	MimeType  string `json:"mime_type,omitempty"`
	URI       string `json:"uri,omitempty"`
	Name      string `json:"name,omitempty"`
	DataBytes int    `json:"data_bytes,omitempty"` // decoded size of base64 data (image, audio, blob)
}

// Client is a connection to one server. Its methods are safe for
// concurrent use.
type Client struct {
	spec Spec
	opts Options
	lim  Limits

	tr transport

	nextID atomic.Int64

	mu            sync.Mutex // guards the handshake results (a lost session re-initializes)
	negotiated    string
	serverName    string
	serverVersion string
	instructions  string
	hasTools      bool // the server declared the tools capability

	closeOnce sync.Once
	closeErr  error
	closed    atomic.Bool
}

// transport carries JSON-RPC messages to one server and back.
type transport interface {
	// roundTrip sends a request and returns the response carrying its id,
	// answering server requests that arrive meanwhile. limit bounds the
	// bytes read for it; n is how many were.
	roundTrip(ctx context.Context, req *message, limit int64) (resp *message, n int64, err error)
	// notify sends a notification.
	notify(ctx context.Context, msg *message) error
	// negotiated tells the transport the revision agreed at initialize.
	negotiated(version string)
	close() error
}

// Connect reaches the server, runs the handshake and returns a client.
// Errors are *Failure values, except for a Spec or Options that cannot work
// (plain errors) and a cancelled ctx.
func Connect(ctx context.Context, s Spec, o Options) (*Client, error) {
	if (s.URL == "") == (s.Command == "") {
		return nil, errors.New("mcpclient: a server needs exactly one of a URL and a command")
	}
	if o.ProtocolVersion == "" {
		o.ProtocolVersion = DefaultProtocolVersion
	}
	if !slices.Contains(ProtocolVersions, o.ProtocolVersion) {
		return nil, fmt.Errorf("mcpclient: protocol version %q is not one rook speaks (%s)", o.ProtocolVersion, strings.Join(ProtocolVersions, ", "))
	}
	if o.ClientName == "" {
		o.ClientName = "rook"
	}
	if o.ClientVersion == "" {
		o.ClientVersion = "dev"
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	c := &Client{spec: s, opts: o, lim: o.Limits.withDefaults()}
	ctx, cancel := context.WithTimeout(ctx, c.lim.ConnectTimeout)
	defer cancel()
	var err error
	if s.URL != "" {
		c.tr, err = newHTTPTransport(s, o, c.lim, c.answer)
	} else {
		c.tr, err = startStdio(s, o, c.lim, c.answer)
	}
	if err != nil {
		return nil, err
	}
	if err := c.handshake(ctx); err != nil {
		c.tr.close()
		// A program that installs itself on its first run (npx) can be
		// slower than the default: the message names what gives it more.
		msg := fmt.Sprintf("the server could not be reached: it did not complete the handshake within %v (config.toml's [mcp.discovery] connect_timeout, or a shorter --timeout, sets this)", c.lim.ConnectTimeout)
		var wrote string
		if st, ok := c.tr.(*stdioTransport); ok {
			if junk := st.stdoutJunk(); junk != "" {
				// A program that prints a banner or logs on stdout, or is
				// not an MCP server at all: what it wrote says which.
				wrote = fmt.Sprintf("; it wrote on its stdout what is not JSON-RPC: %q (a stdio MCP server writes only JSON-RPC there, its logs on stderr)", junk)
			}
		}
		err = c.timeoutAs(ctx, err, Unreachable, msg+wrote)
		// A program that printed its usage and exited says so too, not
		// only "the program exited (exit status 2)".
		var f *Failure
		if wrote != "" && errors.As(err, &f) && f.Kind == Unreachable && !strings.HasSuffix(f.Msg, wrote) {
			g := *f
			g.Msg += wrote
			err = &g
		}
		return nil, err
	}
	return c, nil
}

// Negotiated is the protocol revision agreed at initialize.
func (c *Client) Negotiated() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.negotiated
}

// ServerInfo is the server's serverInfo as it gave it.
func (c *Client) ServerInfo() (name, version string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.serverName, c.serverVersion
}

// Instructions is the server's initialize instructions, if any (written by
// the server).
func (c *Client) Instructions() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.instructions
}

// Close ends the connection: an HTTP session is deleted, a stdio program
// has its stdin closed, then is sent SIGTERM, then SIGKILL.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		c.closeErr = c.tr.close()
	})
	return c.closeErr
}

type initializeParams struct {
	ProtocolVersion string         `json:"protocolVersion"`
	Capabilities    struct{}       `json:"capabilities"`
	ClientInfo      implementation `json:"clientInfo"`
}

type implementation struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

type initializeResult struct {
	ProtocolVersion *string                    `json:"protocolVersion"`
	Capabilities    map[string]json.RawMessage `json:"capabilities"`
	ServerInfo      struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"serverInfo"`
	Instructions string `json:"instructions"`
}

// handshake runs initialize (once more with a revision the server named if
// it refused ours) and notifications/initialized.
func (c *Client) handshake(ctx context.Context) error {
	version := c.opts.ProtocolVersion
	var raw json.RawMessage
	for attempt := 0; ; attempt++ {
		p := initializeParams{ProtocolVersion: version, ClientInfo: implementation{c.opts.ClientName, c.opts.ClientVersion}}
		res, _, err := c.request(ctx, "initialize", p, c.lim.MaxMessageBytes)
		if err != nil {
			var re *RPCError
			if attempt == 0 && errors.As(err, &re) {
				if v := pickSupported(re.Data); v != "" && v != version {
					version = v
					continue
				}
			}
			return err
		}
		raw = res
		break
	}
	var r initializeResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return protocolf(nil, "the server's initialize answer is not an initialize result: %v", err)
	}
	if r.ProtocolVersion == nil {
		return protocolf(nil, "the server's initialize answer has no protocolVersion")
	}
	got := *r.ProtocolVersion
	if !slices.Contains(ProtocolVersions, got) {
		return protocolf(nil, "the server speaks MCP revision %q; rook asked for %q and speaks %s", clean(got, 64), version, strings.Join(ProtocolVersions, ", "))
	}
	c.mu.Lock()
	c.negotiated = got
	c.serverName, c.serverVersion = r.ServerInfo.Name, r.ServerInfo.Version
	c.instructions = r.Instructions
	_, c.hasTools = r.Capabilities["tools"]
	c.mu.Unlock()
	c.tr.negotiated(got)
	return c.tr.notify(ctx, &message{JSONRPC: "2.0", Method: "notifications/initialized"})
}

// pickSupported reads an "unsupported protocol version" error's
// data.supported and returns the newest revision we also speak.
func pickSupported(data json.RawMessage) string {
	var d struct {
		Supported []string `json:"supported"`
	}
	if json.Unmarshal(data, &d) != nil {
		return ""
	}
	for _, v := range ProtocolVersions {
		if slices.Contains(d.Supported, v) {
			return v
		}
	}
	return ""
}

// request sends one request and returns its result. A JSON-RPC error comes
// back as a ProtocolError wrapping *RPCError. A lost HTTP session (404) is
// re-initialized once.
func (c *Client) request(ctx context.Context, method string, params any, limit int64) (json.RawMessage, int64, error) {
	if c.closed.Load() {
		return nil, 0, errClosed
	}
	p, err := json.Marshal(params)
	if err != nil {
		return nil, 0, err
	}
	for attempt := 0; ; attempt++ {
		req := &message{JSONRPC: "2.0", ID: json.RawMessage(fmt.Sprint(c.nextID.Add(1))), Method: method, Params: p}
		resp, n, err := c.tr.roundTrip(ctx, req, limit)
		if errors.Is(err, errSessionExpired) && method != "initialize" && attempt == 0 {
			hctx, cancel := context.WithTimeout(ctx, c.lim.ConnectTimeout)
			err = c.handshake(hctx)
			cancel()
			if err != nil {
				return nil, n, renewFailed(method, err)
			}
			continue
		}
		if err != nil {
			return nil, n, err
		}
		if resp.Error != nil {
			return nil, n, &Failure{Kind: ProtocolError, Msg: fmt.Sprintf("the server answered %s with an error: %s (code %d)", method, clean(resp.Error.Message, 500), resp.Error.Code), Err: resp.Error}
		}
		if resp.Result == nil {
			return nil, n, protocolf(nil, "the server's answer to %s has neither a result nor an error", method)
		}
		return resp.Result, n, nil
	}
}

// renewFailed is the failure of a request refused for an expired session
// (HTTP 404, so it did not run) whose new session could not be started:
// that failure is the new initialize's, and the request was never sent
// again. It keeps the failure's kind, and says so.
func renewFailed(method string, err error) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	why := strings.TrimPrefix(err.Error(), "the server could not be reached: ")
	kind := Unreachable
	var f *Failure
	if errors.As(err, &f) {
		kind = f.Kind
	} else if errors.Is(err, context.DeadlineExceeded) {
		why = "it did not answer initialize in time"
	}
	what := method + " was not sent again"
	if method == "tools/call" {
		what = "the call was not sent again: the tool did not run"
	}
	return &Failure{Kind: kind, Err: err,
		Msg: fmt.Sprintf("the server no longer knew the session (HTTP 404), and a new one could not be started (%s): %s", why, what)}
}

// timeoutAs turns an error caused by ctx's deadline into a Failure of kind
// with msg. A cancelled ctx stays as it is; other errors too.
func (c *Client) timeoutAs(ctx context.Context, err error, kind FailureKind, msg string) error {
	var f *Failure
	if errors.As(err, &f) {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) || (ctx.Err() == context.DeadlineExceeded && !errors.Is(err, context.Canceled)) {
		return &Failure{Kind: kind, Msg: msg, Err: context.DeadlineExceeded}
	}
	return err
}

// Call runs a tool. args must be a JSON object (nil or empty sends {}). A
// JSON-RPC error is a ProtocolError wrapping *RPCError (its code and
// message); a tool that ran and failed is a Result with IsError.
func (c *Client) Call(ctx context.Context, tool string, args json.RawMessage) (*Result, error) {
	if len(strings.TrimSpace(string(args))) == 0 {
		args = json.RawMessage("{}")
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(args, &obj) != nil || obj == nil {
		return nil, fmt.Errorf("mcpclient: the arguments to %s must be a JSON object", tool)
	}
	limit := "" // the limit a call that runs out of time ran past, when it is ours
	if c.lim.CallTimeout > 0 {
		if dl, ok := ctx.Deadline(); !ok || !dl.Before(time.Now().Add(c.lim.CallTimeout)) {
			limit = c.lim.CallTimeout.String() + ": "
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.lim.CallTimeout)
		defer cancel()
	}
	if limit == "" && c.lim.WholeCall > 0 {
		limit = c.lim.WholeCall.String() + ", the server's start and handshake included: "
	}
	params := struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}{tool, args}
	raw, _, err := c.request(ctx, "tools/call", params, c.lim.MaxMessageBytes)
	if err != nil {
		var big *tooLargeError
		if errors.As(err, &big) {
			// The server had the call: a user told only "too large"
			// might call it again to see its result. Not "the tool ran":
			// the message may be one sent while it works (a progress or
			// log notification on its event stream, a line on stdout),
			// not its answer.
			return nil, &Failure{Kind: ProtocolError, Msg: fmt.Sprintf("the server sent a message larger than %d bytes, more than rook reads, in answer to tools/call or while it worked on it: the tool may have run, or run still, and its result is not shown; check what it did before calling it again", big.limit), Err: err}
		}
		if errors.Is(err, errAllButNewline) {
			// The program was reached and had the whole request but
			// its newline when the time ran out: it may have read it
			// (and run the tool), and rook ended it.
			return nil, &Failure{Kind: ProtocolError, Err: context.DeadlineExceeded,
				Msg: "the call was not written whole in time (" + limit + "all of it but its final newline was, while the program did not read): a program that reads JSON values, not lines, may have had it whole, so the tool may have run, or run still; rook ended the program (the next connection starts it afresh): check what the tool did before calling it again; --timeout allows more"}
		}
		var f *Failure
		if errors.As(err, &f) && f.answerLost {
			// Not "could not be reached": the server had the call, and a
			// user told it was never reached calls again, running twice
			// a tool that sends or deletes.
			return nil, &Failure{Kind: f.Kind, Status: f.Status, Err: f.Err,
				Msg: "the server went away before it answered tools/call (" + strings.TrimPrefix(f.Msg, "the server could not be reached: ") +
					"): the tool may have run; check before calling it again"}
		}
		if errors.As(err, &f) && (f.Status == http.StatusInternalServerError || f.Status == http.StatusBadGateway || f.Status == http.StatusGatewayTimeout) {
			// Answered after the call was taken: the server failed while
			// at it, or what is in front of it passed it on and lost or
			// gave up on the answer. Not "could not be reached".
			return nil, &Failure{Kind: f.Kind, Status: f.Status, Err: f.Err,
				Msg: strings.Replace(strings.TrimPrefix(f.Msg, "the server could not be reached: "), "what is in front of it", "what is in front of the server", 1) +
					": the server may have had the call, and the tool may have run; check before calling it again"}
		}
		if errors.As(err, &f) && f.accepted {
			// Taken (HTTP 202) and never answered: it may run, or have.
			return nil, &Failure{Kind: f.Kind, Status: f.Status, Err: f.Err,
				Msg: f.Msg + ": the tool may have run; check before calling it again"}
		}
		var ns notSentError
		if errors.As(err, &ns) {
			// Its time ran out, or the caller gave it up, before it was
			// written whole: the server never had the call. err stays
			// the cause (NotSent), a deadline or a cancellation.
			ended := ""
			if ns.partly {
				ended = "; the program had only part of it, and rook ended it (the next connection starts it afresh)"
			}
			if ns.cancelled {
				return nil, &Failure{Kind: ProtocolError, Err: err,
					Msg: "the call was given up before it was sent whole (the server had not taken it: busy, not reading, or not reached): the tool did not run" + ended}
			}
			return nil, &Failure{Kind: ProtocolError, Err: err,
				Msg: "the call was not sent in time (" + limit + "the server did not take it: busy, not reading, or not reached): the tool did not run" + ended + "; --timeout allows more"}
		}
		// The server was reached (it answered initialize): a call that
		// runs out of time failed on its own, not the server. The server
		// has the call: a user told only "timed out" calls again, and a
		// tool that sends or deletes does it twice.
		return nil, c.timeoutAs(ctx, err, ProtocolError, "the tool did not finish in time ("+limit+
			"the server has the call, and the tool may have run, or run still: check before calling it again; --timeout allows more)")
	}
	return parseResult(raw)
}

// Tools reads the server's whole tool list, following every tools/list
// page. It fails with a DiscoveryError, never a prefix of the list, on a
// cursor seen before, a duplicate tool name, a malformed page, or more
// than the Limits allow (tools, pages, bytes, time).
func (c *Client) Tools(ctx context.Context) ([]Tool, error) {
	ctx, cancel := context.WithTimeout(ctx, c.lim.Timeout)
	defer cancel()
	var (
		tools   []Tool
		names   = map[string]bool{}
		cursors = map[string]bool{}
		cursor  *string
		used    int64
	)
	for page := 1; ; page++ {
		if page > c.lim.MaxPages {
			return nil, discoveryf(nil, "the tool list has more than %d pages%s", c.lim.MaxPages, raise("max_pages"))
		}
		var params any = struct{}{}
		if cursor != nil {
			params = struct {
				Cursor string `json:"cursor"`
			}{*cursor}
		}
		raw, n, err := c.request(ctx, "tools/list", params, c.lim.MaxBytes-used)
		used += n
		if err != nil {
			var big *tooLargeError
			var re *RPCError
			switch {
			case errors.As(err, &big):
				return nil, discoveryf(err, "the tool list is larger than %d bytes%s", c.lim.MaxBytes, raise("max_bytes"))
			case page == 1 && errors.As(err, &re) && re.Code == codeMethodNotFound && !c.declaresTools():
				return []Tool{}, nil // a server without tools
			}
			return nil, c.timeoutAs(ctx, err, DiscoveryError, fmt.Sprintf("the tool list was not read within %v (--timeout, or [mcp.discovery] timeout in config.toml, allows more)", c.lim.Timeout))
		}
		if used > c.lim.MaxBytes {
			return nil, discoveryf(nil, "the tool list is larger than %d bytes%s", c.lim.MaxBytes, raise("max_bytes"))
		}
		list, next, err := parseToolsPage(raw, page)
		if err != nil {
			return nil, err
		}
		for _, t := range list {
			if names[t.Name] {
				return nil, discoveryf(nil, "the tool list names %q twice", clean(t.Name, 128))
			}
			names[t.Name] = true
			tools = append(tools, t)
			if len(tools) > c.lim.MaxTools {
				return nil, discoveryf(nil, "the server offers more than %d tools%s", c.lim.MaxTools, raise("max_tools"))
			}
		}
		if next == nil {
			if tools == nil {
				tools = []Tool{}
			}
			return tools, nil
		}
		if cursors[*next] {
			return nil, discoveryf(nil, "the tool list's cursor %q came back on page %d (a cycle)", clean(*next, 64), page)
		}
		cursors[*next] = true
		cursor = next
	}
}

// raise names the setting that bounds a tool list: a list past it fails
// whole, and only raising it reads that server's tools.
func raise(key string) string {
	return " (rook reads at most [mcp.discovery] " + key + " in config.toml)"
}

func (c *Client) declaresTools() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hasTools
}
