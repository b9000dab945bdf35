package mcp

import "encoding/json"

// idScanner reads the top-level "id" of a message too long to hold, from
// its bytes as they stream past: it keeps only the current key and the id's
// value, each bounded, whatever the message's size. JSON-RPC replies with
// id null only when the id could not be read; a client whose request was
// too long must still learn which request failed.
//
// It does not check the rest of the message is valid JSON (that would mean
// holding it): it finds a well-formed string or number id at the top level
// of an object, the last one when there are several (as parseMessage
// does), or none.
type idScanner struct {
	depth     int  // 1: inside the top-level object
	started   bool // the first byte that is not white space was seen
	bad       bool // not an object: no id
	inString  bool
	escaped   bool
	expectKey bool // at depth 1, the next string is a key
	inKey     bool
	key       []byte // the last key at depth 1, quotes included, bounded
	inID      bool   // reading the id's value
	value     []byte // the id's bytes, without the white space around them, bounded
	valueEnd  bool   // white space after the value: only ',' or '}' may follow
	id        json.RawMessage
}

// Bounds on what the scanner keeps: a key longer than maxKeyBytes is not
// "id" however it is escaped, and an id longer than maxIDBytes is not
// echoed (in a message too long to parse; one that parses is answered with
// its id whatever the id's length).
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

func (s *idScanner) scan(c byte) {
	if !s.started {
		switch {
		case jsonSpace(c):
		case c == '{':
			s.started, s.depth, s.expectKey = true, 1, true
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
	if s.depth == 1 && s.inID && (c == ',' || c == '}') {
		s.endID()
	}
	if s.inID {
		s.keepIDOutsideString(c)
	}
	switch c {
	case '"':
		s.inString = true
		if s.depth == 1 && s.expectKey {
			s.inKey, s.key = true, append(s.key[:0], c)
		}
	case ':':
		if s.depth == 1 && s.expectKey {
			s.expectKey = false
			var k string
			if len(s.key) <= maxKeyBytes && json.Unmarshal(s.key, &k) == nil && k == "id" {
				s.inID, s.value, s.valueEnd = true, s.value[:0], false
			}
		}
	case ',':
		if s.depth == 1 {
			s.expectKey = true
		}
	case '{', '[':
		s.depth++
	case '}', ']':
		s.depth--
	}
}

func (s *idScanner) scanString(c byte) {
	if s.inID {
		s.keepID(c)
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

// keepIDOutsideString keeps a byte of the id's value read outside a
// string. White space there is not part of a string or number id: before
// the value it is skipped, after it only ',' or '}' may follow (endID is
// called on those before this). Not holding it keeps the bound on the id's
// own bytes, however much white space surrounds them.
func (s *idScanner) keepIDOutsideString(c byte) {
	switch {
	case jsonSpace(c):
		s.valueEnd = len(s.value) > 0
	case s.valueEnd:
		s.dropID() // two values: not an id
	default:
		s.keepID(c)
	}
}

// keepID adds a byte to the id's value; one too long is dropped.
func (s *idScanner) keepID(c byte) {
	if len(s.value) >= maxIDBytes {
		s.dropID()
		return
	}
	s.value = append(s.value, c)
}

// dropID stops reading a value that is no id the scanner echoes: the
// message has none, unless a later "id" key gives one (the last wins).
func (s *idScanner) dropID() {
	s.inID, s.id = false, nil
}

// jsonSpace says whether c is white space between JSON tokens.
func jsonSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// endID takes the value read as the id if it is one parseMessage would
// take.
func (s *idScanner) endID() {
	s.inID = false
	if validID(s.value) && json.Valid(s.value) {
		s.id = append(json.RawMessage(nil), s.value...)
	} else {
		s.id = nil
	}
}
