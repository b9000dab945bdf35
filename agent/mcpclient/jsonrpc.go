package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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
