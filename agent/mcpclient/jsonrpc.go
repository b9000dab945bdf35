package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"time"
)

// JSON-RPC 2.0 error codes this client sends or reads.
const (
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
)

// The plain messages a declined server request gets.
const (
	declineSampling    = "rook does not run a model on a server's behalf: sampling is declined on purpose"
	declineElicitation = "nobody is there to answer a server's question: elicitation is declined on purpose"
)

// message is any JSON-RPC 2.0 message: a request (ID and Method), a
// notification (Method only) or a response (ID with Result or Error).
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

func (m *message) isRequest() bool      { return m.Method != "" && len(m.ID) > 0 }
func (m *message) isNotification() bool { return m.Method != "" && len(m.ID) == 0 }
func (m *message) isResponse() bool     { return m.Method == "" && len(m.ID) > 0 }

// RPCError is a JSON-RPC error object as the server sent it. A
// ProtocolError from a server's error answer wraps one.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("%s (code %d)", e.Message, e.Code) }

// idKey is an id in a form two ids can be compared by: a string's value,
// or a number's text.
func idKey(id json.RawMessage) string {
	id = bytes.TrimSpace(id)
	if len(id) > 0 && id[0] == '"' {
		var s string
		if json.Unmarshal(id, &s) == nil {
			return s
		}
	}
	return string(id)
}

// decodeMessages reads one JSON-RPC message or a batch of them (2025-03-26
// allowed batches).
func decodeMessages(b []byte) ([]*message, error) {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '[' {
		var batch []*message
		if err := json.Unmarshal(b, &batch); err != nil {
			return nil, err
		}
		for _, m := range batch {
			if m == nil {
				return nil, fmt.Errorf("a batch holds null")
			}
		}
		return batch, nil
	}
	var m message
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return []*message{&m}, nil
}

// nullID says whether id is JSON null: the id of the error a server
// answers a request it could not read with (JSON-RPC 2.0, 5: "If there was
// an error in detecting the id in the Request object (e.g. Parse
// error/Invalid Request), it MUST be Null").
func nullID(id json.RawMessage) bool {
	return string(bytes.TrimSpace(id)) == "null"
}

// undecodedIDs are the ids of the responses a message that does not decode
// (decodeMessages failed on it) holds, as far as they can be read: the
// top-level "id" of an object, or of each object of a batch, that has no
// "method" before the point where it stops being JSON-RPC. A server that
// writes its answer with an error that is a string, or a result holding
// NaN (Python's json writes it), answered the request of that id: it must
// fail at once, not wait out its time as if nothing came.
func undecodedIDs(b []byte) []json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return nil
	}
	if tok == json.Delim('[') {
		var ids []json.RawMessage
		for dec.More() {
			if t, err := dec.Token(); err != nil || t != json.Delim('{') {
				return ids
			}
			id, ok := objectID(dec)
			if id != nil {
				ids = append(ids, id)
			}
			if !ok {
				return ids
			}
		}
		return ids
	}
	if tok != json.Delim('{') {
		return nil
	}
	if id, _ := objectID(dec); id != nil {
		return []json.RawMessage{id}
	}
	return nil
}

// objectID reads the members of an object whose '{' dec has read: its
// id, if it has one that is not null and no method was seen, and whether
// the object was read to its end.
func objectID(dec *json.Decoder) (id json.RawMessage, whole bool) {
	method := false
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			break
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			break
		}
		switch key {
		case "id":
			id = v
		case "method":
			method = true
		}
	}
	if method || len(id) == 0 || nullID(id) {
		id = nil
	}
	if t, err := dec.Token(); err == nil && t == json.Delim('}') {
		return id, true
	}
	return id, false
}

// decodeFailure says plainly why a message did not decode: which member
// has the wrong type (a string where an error object belongs), not the Go
// type rook reads it into.
func decodeFailure(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		want := "a " + te.Type.Kind().String()
		switch te.Type.Kind() {
		case reflect.Struct, reflect.Map:
			want = "an object"
		case reflect.Slice, reflect.Array:
			want = "an array"
		case reflect.Int, reflect.Int64, reflect.Float64:
			want = "a number"
		}
		return fmt.Sprintf("its %q is a JSON %s, not %s", te.Field, te.Value, want)
	}
	return err.Error()
}

// malformedAnswer is the failure of a request whose answer came (the
// response carrying its id) but does not decode: the server had the
// request, and may have acted on it (accepted), so a tools/call says the
// tool may have run.
func malformedAnswer(method string, err error) *Failure {
	f := protocolf(err, "the server's answer to %s is not JSON-RPC (%s)", method, decodeFailure(err))
	f.accepted = true
	return f
}

// answer is this client's reply to a request from the server. The client
// declares no capabilities, so only ping is served.
func (c *Client) answer(req *message) *message {
	reply := &message{JSONRPC: "2.0", ID: req.ID}
	switch req.Method {
	case "ping":
		reply.Result = json.RawMessage("{}")
		return reply
	case "sampling/createMessage":
		reply.Error = &RPCError{Code: codeMethodNotFound, Message: declineSampling}
	case "elicitation/create":
		reply.Error = &RPCError{Code: codeMethodNotFound, Message: declineElicitation}
	default:
		reply.Error = &RPCError{Code: codeMethodNotFound, Message: "method not found: rook does not serve " + strconv.Quote(clean(req.Method, 100))}
	}
	if c.opts.OnDeclined != nil {
		c.opts.OnDeclined(req.Method)
	}
	return reply
}

// cancelTimeout bounds the sending of a notifications/cancelled: a server
// gone or stuck must not hold rook up after the request it gave up on.
var cancelTimeout = 2 * time.Second

// notifier sends a notification: both transports are.
type notifier interface {
	notify(ctx context.Context, msg *message) error
}

// sendCancelled tells the server that rook gave up on req, sent whole,
// because ctx ended (its time ran out, or the caller cancelled it), so
// that it can stop the work (MCP basic/utilities/cancellation; lifecycle
// "Timeouts": the sender SHOULD issue one). A dropped connection is no
// substitute: on streamable HTTP a disconnection does not cancel, and a
// stdio program goes on reading. initialize is never cancelled: the spec
// says a client MUST NOT. The send has its own short bound; its failure is
// not the request's, whose error stays as it is, and is not said.
func sendCancelled(ctx context.Context, tr notifier, req *message) {
	if req.Method == "initialize" || ctx.Err() == nil {
		return
	}
	reason := "the client stopped waiting for the answer"
	if ctx.Err() == context.DeadlineExceeded {
		reason = "the request timed out in the client"
	}
	params, err := json.Marshal(struct {
		RequestID json.RawMessage `json:"requestId"`
		Reason    string          `json:"reason"`
	}{req.ID, reason})
	if err != nil {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer cancel()
	tr.notify(cctx, &message{JSONRPC: "2.0", Method: "notifications/cancelled", Params: params})
}
