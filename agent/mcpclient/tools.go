package mcpclient

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// parseToolsPage reads one tools/list result. A page that is not an
// object, has no tools array, or holds a tool without a string name is
// malformed. next is nil at the end of the list (nextCursor absent or
// null); an empty string is a cursor like any other.
func parseToolsPage(raw json.RawMessage, page int) (tools []Tool, next *string, err error) {
	bad := func(format string, args ...any) error {
		return discoveryf(nil, "tools/list page %d is malformed: %s", page, fmt.Sprintf(format, args...))
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		return nil, nil, bad("it is not an object")
	}
	var items []json.RawMessage
	if t, ok := obj["tools"]; !ok {
		return nil, nil, bad("it has no tools")
	} else if json.Unmarshal(t, &items) != nil || items == nil {
		return nil, nil, bad("tools is not an array")
	}
	if nc, ok := obj["nextCursor"]; ok && !isNull(nc) {
		var s string
		if json.Unmarshal(nc, &s) != nil {
			return nil, nil, bad("nextCursor is not a string")
		}
		next = &s
	}
	tools = make([]Tool, 0, len(items))
	for i, item := range items {
		t, err := parseTool(item)
		if err != "" {
			return nil, nil, bad("tool %d %s", i+1, err)
		}
		tools = append(tools, t)
	}
	return tools, next, nil
}

// parseTool reads one tool. The name is required; other fields of the
// wrong type are taken as absent.
func parseTool(raw json.RawMessage) (Tool, string) {
	var f map[string]json.RawMessage
	if json.Unmarshal(raw, &f) != nil || f == nil {
		return Tool{}, "is not an object"
	}
	var t Tool
	if json.Unmarshal(f["name"], &t.Name) != nil || t.Name == "" {
		return Tool{}, "has no name"
	}
	str(f["title"], &t.Title)
	str(f["description"], &t.Description)
	t.InputSchema = object(f["inputSchema"])
	t.OutputSchema = object(f["outputSchema"])
	var a map[string]json.RawMessage
	if json.Unmarshal(f["annotations"], &a) == nil {
		str(a["title"], &t.Annotations.Title)
		t.Annotations.ReadOnlyHint = boolPtr(a["readOnlyHint"])
		t.Annotations.DestructiveHint = boolPtr(a["destructiveHint"])
		t.Annotations.IdempotentHint = boolPtr(a["idempotentHint"])
		t.Annotations.OpenWorldHint = boolPtr(a["openWorldHint"])
	}
	return t, ""
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

func str(raw json.RawMessage, dst *string) {
	var s string
	if raw != nil && json.Unmarshal(raw, &s) == nil {
		*dst = s
	}
}

func boolPtr(raw json.RawMessage) *bool {
	var b bool
	if raw == nil || json.Unmarshal(raw, &b) != nil {
		return nil
	}
	return &b
}

// object is raw, compacted, if it is a JSON object, else nil.
func object(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	return compact(raw)
}

// compact is a compact copy of valid JSON.
func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return bytes.Clone(raw)
	}
	return b.Bytes()
}

// parseResult reads a tools/call result.
func parseResult(raw json.RawMessage) (*Result, error) {
	var r struct {
		Content    *[]json.RawMessage `json:"content"`
		Structured json.RawMessage    `json:"structuredContent"`
		IsError    bool               `json:"isError"`
	}
	// A result must be an object: null would decode as an empty one, and
	// a call the server answered with nothing would pass for a tool that
	// ran and said nothing.
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return nil, protocolf(nil, "the server's tools/call answer is not a call result: %s instead of an object", clean(string(t), 40))
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, protocolf(err, "the server's tools/call answer is not a call result: %v", err)
	}
	// Content is an array, empty when the server sent none ("content":
	// [] beside structuredContent): never null, in --json or the session.
	res := &Result{IsError: r.IsError, Content: []Content{}}
	if len(r.Structured) > 0 && !isNull(r.Structured) {
		res.Structured = compact(r.Structured)
	}
	if r.Content != nil {
		for i, item := range *r.Content {
			c, err := parseContent(item)
			if err != nil {
				return nil, protocolf(err, "content block %d of the server's tools/call answer: %v", i+1, err)
			}
			res.Content = append(res.Content, c)
		}
	}
	return res, nil
}

type rawContent struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Data     string `json:"data"`
	MimeType string `json:"mimeType"`
	URI      string `json:"uri"`
	Name     string `json:"name"`
	Resource *struct {
		URI      string `json:"uri"`
		MimeType string `json:"mimeType"`
		Text     string `json:"text"`
		Blob     string `json:"blob"`
	} `json:"resource"`
}

func parseContent(raw json.RawMessage) (Content, error) {
	var rc rawContent
	if err := json.Unmarshal(raw, &rc); err != nil {
		return Content{}, fmt.Errorf("not a content block")
	}
	c := Content{Type: rc.Type, MimeType: rc.MimeType}
	switch rc.Type {
	case "text":
		c.Text = rc.Text
	case "image", "audio":
		c.DataBytes = base64Len(rc.Data)
	case "resource_link":
		c.URI, c.Name = rc.URI, rc.Name
	case "resource":
		if rc.Resource != nil {
			c.URI, c.MimeType, c.Text = rc.Resource.URI, rc.Resource.MimeType, rc.Resource.Text
			c.DataBytes = base64Len(rc.Resource.Blob)
		}
	default:
		c.Text, c.URI, c.Name = rc.Text, rc.URI, rc.Name
	}
	return c, nil
}

// base64Len is the decoded size of base64 text, padded or not, without
// decoding it. Line breaks and other white space are not data: base64
// wrapped in lines (MIME's 76 characters a line, as Python's
// base64.encodebytes writes it) decodes without them, Go's decoder too.
func base64Len(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '=', '\r', '\n', ' ', '\t':
		default:
			n++
		}
	}
	return n * 3 / 4
}
