package mcp

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// JSON-RPC 2.0 error codes: the standard ones, then the seeds' own
// (implementation-defined range -32000..-32099).
const (
	CodeParseError     = -32700 // the line is not JSON
	CodeInvalidRequest = -32600 // not a JSON-RPC 2.0 request, or a request before initialize
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602 // malformed params, unknown tool

	CodeInboxUnavailable = -32001 // the store home is missing or not writable
	CodeRateLimited      = -32002 // more than RateLimit saves in RateWindow
	CodePaused           = -32003 // `rook inbox pause` is in effect
	CodeInputInvalid     = -32004 // content or title refused
	CodeStoreWriteFailed = -32005 // the spool write or its fsync failed
)

// rpcError is a JSON-RPC error object. Data carries details a client or a
// model can act on (which path, which field, when to retry).
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *rpcError) Error() string { return e.Message }

func newError(code int, msg string, data any) *rpcError {
	return &rpcError{Code: code, Message: msg, Data: data}
}

// nullID is the id of replies to messages whose own id could not be read.
var nullID = json.RawMessage("null")

// response is one reply line. ID is echoed byte for byte from the request.
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// request is a message that passed the envelope checks.
type request struct {
	id     json.RawMessage // nil for a notification
	method string
	params json.RawMessage // nil when absent
}

// parseMessage checks a line's JSON-RPC envelope. It returns the request,
// or the error reply to send (with the best id it could read), or neither
// for a message that needs no answer (a response from the client: we never
// send requests, so there is nothing to match it with).
func parseMessage(line []byte) (*request, *response) {
	if !json.Valid(line) {
		return nil, errorReply(nullID, newError(CodeParseError, "parse error: the line is not JSON", nil))
	}
	// A map, not a struct: encoding/json matches struct fields without
	// regard to case, and "ID" or "JSONRPC" must not pass for the real keys.
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(line, &fields); err != nil || fields == nil {
		msg := "invalid request: a message must be a JSON object"
		if bytes.HasPrefix(bytes.TrimSpace(line), []byte("[")) {
			msg = "invalid request: a batch cannot hold a batch"
		}
		return nil, errorReply(nullID, newError(CodeInvalidRequest, msg, nil))
	}
	id, hasID := fields["id"]
	if hasID && !validID(id) {
		return nil, errorReply(nullID, newError(CodeInvalidRequest, "invalid request: id must be a string or a number", nil))
	}
	replyID := nullID
	if hasID {
		replyID = id
	}
	var version string
	if json.Unmarshal(fields["jsonrpc"], &version) != nil || version != "2.0" {
		return nil, errorReply(replyID, newError(CodeInvalidRequest, `invalid request: "jsonrpc" must be "2.0"`, nil))
	}
	rawMethod, hasMethod := fields["method"]
	if !hasMethod {
		if _, ok := fields["result"]; ok && hasID {
			return nil, nil
		}
		if _, ok := fields["error"]; ok && hasID {
			return nil, nil
		}
		return nil, errorReply(replyID, newError(CodeInvalidRequest, `invalid request: "method" is missing`, nil))
	}
	var method string
	if !isJSONString(rawMethod) || json.Unmarshal(rawMethod, &method) != nil {
		return nil, errorReply(replyID, newError(CodeInvalidRequest, `invalid request: "method" must be a string`, nil))
	}
	req := &request{method: method, params: fields["params"]}
	if hasID {
		req.id = id
	}
	return req, nil
}

// validID: MCP ids are strings or numbers (JSON-RPC allows null, MCP does
// not, and a null id could not be told apart from our replies to garbage).
func validID(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || !utf8.Valid(raw) {
		// An id is echoed byte for byte: one that is not UTF-8 would make
		// our reply invalid JSON text.
		return false
	}
	switch c := raw[0]; {
	case c == '"':
		return true
	case c == '-' || (c >= '0' && c <= '9'):
		return true
	}
	return false
}

// isJSONString reports whether raw is a JSON string (and not null, which
// json.Unmarshal would quietly accept into a Go string).
func isJSONString(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '"'
}

// paramsObject decodes params into fields: absent or null params are an
// empty object; anything but an object is an error.
func paramsObject(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return map[string]json.RawMessage{}, true
	}
	if raw[0] != '{' {
		return nil, false
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return nil, false
	}
	return fields, true
}

func resultReply(id json.RawMessage, result any) *response {
	return &response{JSONRPC: "2.0", ID: id, Result: result}
}

func errorReply(id json.RawMessage, err *rpcError) *response {
	return &response{JSONRPC: "2.0", ID: id, Error: err}
}

// encodeLine renders a reply (or a batch's replies) as one line. HTML
// escaping is off (a title with "<" stays readable); the encoder escapes
// U+2028/U+2029 and never emits a raw newline, so the reply is one line
// whatever it holds.
func encodeLine(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
