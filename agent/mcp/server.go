// Package mcp is `rook mcp serve`: a Model Context Protocol server on stdio
// with one tool, append_to_inbox, through which AI clients (Claude Code,
// Codex, Cursor, Gemini CLI, Claude Desktop, ...) save notes to the user's
// rook inbox.
//
// The server never opens the store: it appends each save durably to its own
// spool file in the store home (package inbox) and replies only then, so it
// saves while another rook holds the store's writer lock, and any number of
// servers save at once. No method reads, changes or removes a note.
//
// The protocol is JSON-RPC 2.0, one message a line, written by hand: it is
// small, and the seeds fix error codes a library would not give us (-32600
// before initialize, -32700 that keeps the session going).
package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/rookhq/rook/agent/inbox"
	"github.com/rookhq/rook/internal/clock"
	"github.com/rookhq/rook/internal/vfs"
)

// Protocol revisions we speak, newest first. All are initialize-based; the
// 2026-07-28 stateless era is not served (a modern client's server/discover
// probe gets -32600 and the client falls back to initialize).
var ProtocolVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// MaxLineBytes bounds one incoming message. The largest valid call (100,000
// characters, each escaped as a \uXXXX surrogate pair) is about 1.2 MB. A
// longer message is answered unread: a save (its head says it is a
// tools/call of append_to_inbox) as a content over the limit,
// input_invalid; any other as an invalid request.
const MaxLineBytes = 4 << 20

// Options is what a server runs with.
type Options struct {
	FS    vfs.FS
	Home  string // the store home the inbox spool lives in
	Clock clock.Clock
	// ProcessName names this server's spool and activity files; it must be
	// unique among live servers (inbox.ProcessName). Empty: from the clock
	// and this pid.
	ProcessName string
	// Version is reported as serverInfo.version; empty: the build's.
	Version string
	// Log receives diagnostics (stderr); nil discards them. Never stdout:
	// that is the protocol channel.
	Log io.Writer
}

// Serve speaks MCP on in/out until in ends (then it returns nil) or ctx is
// done. Every reply is one JSON line on out, and nothing else is written
// there. A reply to a save is written only after the save is on disk.
func Serve(ctx context.Context, in io.Reader, out io.Writer, opts Options) error {
	s := newServer(opts)
	defer s.close()
	if err := inbox.CheckStore(s.fs, s.home); err != nil {
		// Not fatal: the client still connects, and each save says what to do.
		s.logf("%v; saves will fail until then", err)
	}

	lines := make(chan lineRead)
	done := make(chan struct{})
	defer close(done)
	// Reading in a goroutine lets ctx stop the server while it waits for
	// input; if stdin never ends, that goroutine is left blocked in Read,
	// which only matters to a process that is about to exit anyway.
	go readLines(in, lines, done)

	for {
		var l lineRead
		select {
		case <-ctx.Done():
			return ctx.Err()
		case l = <-lines:
		}
		if l.err != nil {
			if errors.Is(l.err, io.EOF) {
				return nil
			}
			return fmt.Errorf("read stdin: %w", l.err)
		}
		reply := s.handleLine(l)
		if reply == nil {
			continue
		}
		if _, err := out.Write(reply); err != nil {
			return fmt.Errorf("write stdout: %w", err)
		}
	}
}

// lineRead is one line from stdin, or the error that ended input.
type lineRead struct {
	line    []byte
	tooLong bool       // over MaxLineBytes: skipped to its end, line empty
	env     *idScanner // of a line too long: its id, method and tool, as read while it was skipped
	err     error
}

// readLines sends each line of in (without its newline) until in ends.
// A last line without a newline is still a message.
func readLines(in io.Reader, lines chan<- lineRead, done <-chan struct{}) {
	br := bufio.NewReaderSize(in, 64<<10)
	for {
		var ids idScanner
		line, tooLong, err := readLine(br, &ids)
		if len(line) > 0 || tooLong {
			select {
			case lines <- lineRead{line: line, tooLong: tooLong, env: &ids}:
			case <-done:
				return
			}
		}
		if err != nil {
			select {
			case lines <- lineRead{err: err}:
			case <-done:
			}
			return
		}
	}
}

// readLine reads up to the next newline, keeping at most MaxLineBytes: a
// longer line is skipped to its end, so one huge message costs no more than
// that in memory and the session goes on; of it, ids reads its envelope
// (id, method, tool) as it streams past, and nothing is kept.
func readLine(br *bufio.Reader, ids *idScanner) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		switch {
		case tooLong:
			ids.feed(chunk)
		case len(line)+len(chunk) > MaxLineBytes+1: // +1: the newline
			ids.feed(line)
			ids.feed(chunk)
			tooLong, line = true, nil
		default:
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if tooLong {
			return line, true, err
		}
		return bytes.TrimSuffix(line, []byte("\n")), false, err
	}
}

// server is one client's session.
type server struct {
	fs      vfs.FS
	home    string
	clock   clock.Clock
	version string
	log     io.Writer
	writer  *inbox.Writer
	limit   rateLimiter

	initialized bool
	protocol    string // the negotiated revision
	clientName  string // clientInfo.name as sent
	client      string // the inbox's short name
}

func newServer(opts Options) *server {
	s := &server{fs: opts.FS, home: opts.Home, clock: opts.Clock, version: opts.Version, log: opts.Log}
	if s.fs == nil {
		s.fs = vfs.OS
	}
	if s.clock == nil {
		s.clock = clock.System
	}
	if s.version == "" {
		s.version = buildVersion()
	}
	if s.log == nil {
		s.log = io.Discard
	}
	name := opts.ProcessName
	if name == "" {
		name = inbox.ProcessName(s.clock.Now(), os.Getpid())
	}
	s.writer = inbox.NewWriter(s.fs, s.home, name)
	s.client, _ = inbox.Inbox("")
	return s
}

func (s *server) close() {
	if err := s.writer.Close(); err != nil {
		s.logf("close the inbox spool: %v", err)
	}
}

func (s *server) logf(format string, a ...any) {
	fmt.Fprintf(s.log, "rook mcp serve: "+format+"\n", a...)
}

// buildVersion is rook's module version when built from a tagged module,
// else "dev".
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// handleLine answers one incoming line: the reply line to write, or nil.
// It never panics and never returns more than one line, whatever the input
// (a batch's replies are one array).
func (s *server) handleLine(l lineRead) []byte {
	line := l.line
	var reply *response
	switch {
	case l.tooLong && l.env.Notification():
		// Too big to read, but no request: a notification gets no
		// reply (JSON-RPC), and saves nothing, whatever its size, as
		// one of normal size (handleMessage).
		return nil
	case l.tooLong && s.initialized && l.env.Method() == "tools/call" && l.env.Tool() == toolName:
		// A save too big to read: its content alone can be at most
		// MaxContentChars, so it is a content over the limit, answered
		// as one (and so recorded in the activity log).
		reply = errorReply(l.env.ID(), s.tooBigSave())
	case l.tooLong:
		reply = errorReply(l.env.ID(), newError(CodeInvalidRequest,
			fmt.Sprintf("invalid request: message over %d bytes", MaxLineBytes), nil))
		if s.initialized && l.env.ToolsCall() {
			// A call too big to read whose head does not say it is a
			// save: the activity log, which lists every save attempt,
			// has it too.
			s.logActivity(inbox.Activity{Time: s.clock.Now(), Client: s.client, ClientName: s.clientName, Status: statusInputInvalid,
				Detail: fmt.Sprintf("a tools/call message over %d bytes, refused unread (a save's content is at most %d characters)", MaxLineBytes, MaxContentChars)})
		}
	case len(bytes.TrimSpace(line)) == 0:
		return nil // a blank line (or a CRLF's leftover) is no message
	default:
		msg := bytes.TrimSuffix(line, []byte("\r"))
		if isBatch(msg) {
			return s.handleBatch(msg)
		}
		reply = s.handleMessage(msg)
		if reply == nil {
			return nil
		}
	}
	return s.encode(reply)
}

// tooBigSave answers a save too big to read as the tool answers a content
// over its limit (seed 000's error table: input_invalid), after the
// checks that come first (paused, rate_limited), and records the attempt.
func (s *server) tooBigSave() *rpcError {
	now := s.clock.Now()
	inputErr := invalid(fmt.Sprintf(`"content" is over the limit of %d characters (the message is over %d bytes, refused unread): split it into several saves`, MaxContentChars, MaxLineBytes), "content")
	status, rerr := s.trySave(now, inputErr, &inbox.Save{})
	s.logActivity(inbox.Activity{Time: now, Client: s.client, ClientName: s.clientName, Status: status, Detail: rerr.Message})
	return rerr
}

// handleMessage answers one message (a line's, or a batch's element):
// the reply, or nil for a message that gets none.
func (s *server) handleMessage(msg []byte) *response {
	req, errReply := parseMessage(msg)
	switch {
	case errReply != nil:
		return errReply
	case req == nil || req.id == nil:
		// Responses and notifications get no reply, and change nothing:
		// a tools/call sent as a notification saves nothing, since its
		// sender could not learn whether it was saved.
		return nil
	}
	return s.dispatch(req)
}

// batchProtocol is the one revision with JSON-RPC batches: 2025-03-26
// added them (a server "MUST support receiving" them), 2025-06-18 took
// them out again.
const batchProtocol = "2025-03-26"

// isBatch: the line is a JSON array (a batch), rather than one message.
func isBatch(msg []byte) bool {
	msg = bytes.TrimSpace(msg)
	return len(msg) > 0 && msg[0] == '[' && json.Valid(msg)
}

// handleBatch answers a batch: in a 2025-03-26 session, its messages in
// order, as one array of the requests' replies (nothing at all when it
// holds only notifications and responses); in any other, or before
// initialize, one invalid request, and nothing in it runs.
func (s *server) handleBatch(msg []byte) []byte {
	var elems []json.RawMessage
	if err := json.Unmarshal(msg, &elems); err != nil || len(elems) == 0 {
		return s.encode(errorReply(nullID, newError(CodeInvalidRequest, "invalid request: an empty batch", nil)))
	}
	switch {
	case !s.initialized:
		return s.encode(errorReply(nullID, newError(CodeInvalidRequest,
			"invalid request: a batch before initialize: send initialize first, on a line of its own (batches are taken only in protocol revision "+batchProtocol+")", nil)))
	case s.protocol != batchProtocol:
		return s.encode(errorReply(nullID, newError(CodeInvalidRequest,
			fmt.Sprintf("invalid request: batches are taken only in protocol revision %s, and this session's is %s: send one message per line", batchProtocol, s.protocol), nil)))
	}
	replies := make([]*response, 0, len(elems))
	for _, elem := range elems {
		var r *response
		if req, errReply := parseMessage(elem); errReply == nil && req != nil && req.id != nil && req.method == "initialize" {
			r = errorReply(req.id, newError(CodeInvalidRequest, "invalid request: initialize cannot be part of a batch", nil))
		} else {
			r = s.handleMessage(elem)
		}
		if r != nil {
			replies = append(replies, r)
		}
	}
	if len(replies) == 0 {
		return nil
	}
	return s.encode(replies)
}

// encode renders a reply, or a batch's replies, as one line.
func (s *server) encode(v any) []byte {
	b, err := encodeLine(v)
	if err != nil {
		// Only a result we built could fail to encode: say so on the wire
		// rather than leave the client waiting.
		s.logf("encode reply: %v", err)
		b, _ = encodeLine(errorReply(nullID, newError(-32603, "internal error", nil)))
	}
	return b
}

// dispatch answers a request.
func (s *server) dispatch(req *request) *response {
	switch req.method {
	case "initialize":
		return s.initialize(req)
	case "ping":
		return resultReply(req.id, struct{}{}) // allowed before initialize too
	}
	if !s.initialized {
		return errorReply(req.id, newError(CodeInvalidRequest,
			fmt.Sprintf("invalid request: %q before initialize: send initialize first", req.method), nil))
	}
	switch req.method {
	case "tools/list":
		return s.listTools(req)
	case "tools/call":
		return s.callTool(req)
	}
	return errorReply(req.id, newError(CodeMethodNotFound, fmt.Sprintf("method not found: %q", req.method), nil))
}

// listTools lists the one tool. The list is never paged, so no cursor
// came from this server: a client that sends one gets -32602, as the
// spec's pagination asks of an invalid cursor, rather than the first page
// again as if it were the next. (null or "" is no cursor.)
func (s *server) listTools(req *request) *response {
	params, ok := paramsObject(req.params)
	if !ok {
		return errorReply(req.id, newError(CodeInvalidParams, "invalid params: tools/list takes an object", nil))
	}
	if c, ok := params["cursor"]; ok {
		if c := string(bytes.TrimSpace(c)); c != "null" && c != `""` {
			return errorReply(req.id, newError(CodeInvalidParams, "invalid params: invalid cursor: this server's list has one page, and gives no cursor", nil))
		}
	}
	return resultReply(req.id, map[string]any{"tools": []tool{appendToInboxTool}})
}

// initialize negotiates the revision and learns which client this is: its
// clientInfo.name picks the inbox its saves go to.
func (s *server) initialize(req *request) *response {
	if s.initialized {
		return errorReply(req.id, newError(CodeInvalidRequest, "invalid request: already initialized", nil))
	}
	params, ok := paramsObject(req.params)
	if !ok {
		return errorReply(req.id, newError(CodeInvalidParams, "invalid params: initialize takes an object", nil))
	}
	var asked string
	_ = json.Unmarshal(params["protocolVersion"], &asked) // missing or not a string: we answer our latest
	var info struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(params["clientInfo"], &info) // missing: "unknown client"

	s.protocol = negotiate(asked)
	// Recorded with every save and attempt: cut (inbox.MaxClientName).
	// The inbox is named from the whole name, as it always was.
	s.clientName = inbox.CutClientName(info.Name)
	s.client, _ = inbox.Inbox(info.Name)
	s.initialized = true
	return resultReply(req.id, map[string]any{
		"protocolVersion": s.protocol,
		"capabilities":    map[string]any{"tools": map[string]any{}},
		"serverInfo":      map[string]any{"name": "rook", "version": s.version},
		"instructions": "Rook keeps the user's notes. When the user asks to save, collect, remember, note, record, " +
			"add or stash something in Rook, call append_to_inbox with the text. It only adds notes: " +
			"it cannot read, change or remove them.",
	})
}

// negotiate echoes the client's revision if we speak it, else offers our
// latest (the client disconnects if it cannot speak that).
func negotiate(asked string) string {
	for _, v := range ProtocolVersions {
		if v == asked {
			return v
		}
	}
	return ProtocolVersions[0]
}
