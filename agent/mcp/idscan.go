package mcp

import "encoding/json"

// idScanner reads the envelope of a message too long to hold, from its
// bytes as they stream past: the top-level "id", "method", and the "name"
// in "params" (which tool a tools/call calls), wherever they stand among
// the members. It keeps only the current key and the value being read,
// each bounded, whatever the message's size: the value of every other
// member (a save's "arguments", megabytes of content) is skipped over
// unheld. JSON-RPC replies with id null only when the id could not be
// read; a client whose request was too long must still learn which
// request failed, and a save too long is answered as a save, whatever
// the order of its members. Of a batch (an array), it reads only
// whether an element is a tools/call (for the activity log).
//
// It does not check the rest of the message is valid JSON (that would mean
// holding it): it finds a well-formed string or number id, and string
// method and name, at their places in an object, the last one of each
// when there are several (as parseMessage does), or none.
type idScanner struct {
	depth     int  // 1: inside the top-level object; 2: inside a member's value
	started   bool // the first byte that is not white space was seen
	bad       bool // not an object (nor a batch): no id
	batch     bool // an array: a batch, whose elements' methods are read
	batchCall bool // an element of the batch is a tools/call
	inString  bool
	escaped   bool
	expectKey bool // at depth 1 (or 2, in params), the next string is a key
	inKey     bool
	key       []byte // the last key, quotes included, bounded
	top       string // the top-level key whose value is being read ("" for another)
	inParams  bool   // depth 2 is the params object
	field     string // the member whose value is being read: "id", "method", "name", or ""
	value     []byte // its bytes, without the white space around them, bounded
	valueEnd  bool   // white space after the value: only ',' or '}' may follow
	id        json.RawMessage
	hasID     bool   // an "id" member was seen, whatever its value
	jsonrpc   string // "jsonrpc", when a string
	method    string // "method", when a string
	isMethod  bool   // "method" is a string (an empty one too)
	name      string // "params"."name", when a string
	closed    bool   // the top-level object ended
}

// Bounds on what the scanner keeps: a key longer than maxKeyBytes is not
// one it looks for however it is escaped, and an id longer than maxIDBytes
// is not echoed (in a message too long to parse; one that parses is
// answered with its id whatever the id's length). A method or tool name
// is held up to maxIDBytes too: longer, it is none rook knows.
const (
	maxKeyBytes = 64
	maxIDBytes  = 1024
)

// feed scans the next bytes of the message.
func (s *idScanner) feed(p []byte) {
	for _, c := range p {
		if s.bad {
			return
		}
		s.scan(c)
	}
}

// ID is the id read, or nullID.
func (s *idScanner) ID() json.RawMessage {
	if s.id == nil {
		return nullID
	}
	return s.id
}

// ToolsCall says the message is a tools/call, or a batch holding one.
func (s *idScanner) ToolsCall() bool {
	return s.Method() == "tools/call" || s.batchCall
}

// Notification says the message is one, as far as can be told: an object
// read to its end, of JSON-RPC 2.0, with a string "method" and no "id"
// (as parseMessage tells one). It gets no reply.
func (s *idScanner) Notification() bool {
	return !s.bad && !s.batch && s.closed && !s.hasID && s.isMethod && s.jsonrpc == "2.0"
}

// Method is the message's "method" when it is a string, else "".
func (s *idScanner) Method() string {
	if s.bad || s.batch {
		return ""
	}
	return s.method
}

// Tool is the "name" in "params" (the tool a tools/call calls) when it
// is a string, else "".
func (s *idScanner) Tool() string {
	if s.bad || s.batch {
		return ""
	}
	return s.name
}

func (s *idScanner) scan(c byte) {
	if !s.started {
		switch {
		case jsonSpace(c):
		case c == '{':
			s.started, s.depth, s.expectKey = true, 1, true
		case c == '[':
			s.started, s.depth, s.batch = true, 1, true
		default:
			s.bad = true
		}
		return
	}
	if s.depth == 0 {
		return // past the object's end
	}
	if s.inString {
		s.scanString(c)
		return
	}
	if s.field != "" && s.depth == s.fieldDepth() && (c == ',' || c == '}') {
		s.endValue()
	}
	if s.field != "" {
		s.keepOutsideString(c)
	}
	// Where keys are read: the object's members, params' members; in a
	// batch, each element's members.
	keys := s.depth == 1 && !s.batch || s.depth == 2 && (s.inParams || s.batch)
	switch c {
	case '"':
		s.inString = true
		if keys && s.expectKey {
			s.inKey, s.key = true, append(s.key[:0], c)
		}
	case ':':
		if keys && s.expectKey {
			s.expectKey = false
			s.startValue()
		}
	case ',':
		if keys {
			s.expectKey = true
		}
	case '{', '[':
		s.depth++
		if s.depth == 2 && c == '{' && (s.top == "params" && !s.batch || s.batch) {
			s.inParams, s.expectKey = !s.batch, true
		}
	case '}', ']':
		s.depth--
		switch s.depth {
		case 1:
			s.inParams = false
		case 0:
			s.closed = true
		}
	}
}

// fieldDepth is the depth of the object whose member is being read.
func (s *idScanner) fieldDepth() int {
	if s.field == "name" || s.batch {
		return 2
	}
	return 1
}

// startValue notes, at the ':' after a key, which member's value follows.
func (s *idScanner) startValue() {
	var k string
	if len(s.key) > maxKeyBytes || json.Unmarshal(s.key, &k) != nil {
		k = "\x00" // no key looked for
	}
	field := ""
	if s.batch {
		if k == "method" {
			field = k
		}
	} else if s.depth == 1 {
		s.top = k
		switch k {
		case "id":
			field, s.hasID = k, true
		case "method", "jsonrpc":
			field = k
		case "params":
			s.name = "" // a later params replaces the earlier one
		}
	} else if k == "name" {
		field = k
	}
	if field != "" {
		s.field, s.value, s.valueEnd = field, s.value[:0], false
	}
}

func (s *idScanner) scanString(c byte) {
	if s.field != "" {
		s.keep(c)
	}
	if s.inKey && len(s.key) <= maxKeyBytes {
		s.key = append(s.key, c)
	}
	switch {
	case s.escaped:
		s.escaped = false
	case c == '\\':
		s.escaped = true
	case c == '"':
		s.inString, s.inKey = false, false
	}
}

// keepOutsideString keeps a byte of the value read outside a string.
// White space there is not part of a string or number: before the value
// it is skipped, after it only ',' or '}' may follow (endValue is called
// on those before this). Not holding it keeps the bound on the value's
// own bytes, however much white space surrounds them.
func (s *idScanner) keepOutsideString(c byte) {
	switch {
	case jsonSpace(c):
		s.valueEnd = len(s.value) > 0
	case s.valueEnd:
		s.dropValue() // two values: none the scanner takes
	default:
		s.keep(c)
	}
}

// keep adds a byte to the value; one too long is dropped.
func (s *idScanner) keep(c byte) {
	if len(s.value) >= maxIDBytes {
		s.dropValue()
		return
	}
	s.value = append(s.value, c)
}

// dropValue stops reading a value that is none the scanner takes: the
// message has none, unless a later member of that key gives one (the last
// wins).
func (s *idScanner) dropValue() {
	s.set(nil)
	s.field = ""
}

// jsonSpace says whether c is white space between JSON tokens.
func jsonSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// endValue takes the value read, if it is one parseMessage would take.
func (s *idScanner) endValue() {
	s.set(s.value)
	s.field = ""
}

// set records v (nil: none) as the value of the member being read.
func (s *idScanner) set(v []byte) {
	switch s.field {
	case "id":
		s.id = nil
		if v != nil && validID(v) && json.Valid(v) {
			s.id = append(json.RawMessage(nil), v...)
		}
	case "method", "jsonrpc", "name":
		var str string
		ok := v != nil && isJSONString(v) && json.Unmarshal(v, &str) == nil
		switch s.field {
		case "method":
			s.method, s.isMethod = str, ok
			if s.batch && str == "tools/call" {
				s.batchCall = true
			}
		case "jsonrpc":
			s.jsonrpc = str
		default:
			s.name = str
		}
	}
}
