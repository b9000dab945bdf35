package agent

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/rookhq/rook/cas"
)

// A source line is one line of an imported transcript (a JSONL file of
// Claude Code or Codex), kept so that it can be written back byte for byte,
// with its large strings cut out into objects of their own: the same tool
// output, file content or instructions repeated on many lines (Claude Code
// writes a tool result twice on one line, and an edited file's whole old
// content on every edit) is then stored once.
//
// Encoding of a source line object (cas.KindSource), part of the format
// (docs/storage.md, "Source lines"):
//
//	u8 version (=1)
//	uvarint offset: where the line starts in its source file
//	uvarint count: strings cut out
//	count × ( uvarint gap | id [16] )
//	rest: the line's bytes without the cut strings
//
// Expanding copies gap bytes of rest, then the string whose decoded text is
// the object id names, written as a JSON string literal, and so on; then
// the rest of rest. A string is cut only when writing its decoded text back
// as a JSON literal (the escaping JSON.stringify and serde_json both use)
// gives exactly its bytes in the line, so expanding is exact. The cut text
// is the decoded string, not its escaped bytes: the text a tool printed is
// one object whether it sits in a Claude Code line, a Codex line or a
// native rook event.
const sourceLineVersion = 1

// MinCutString is the shortest decoded string the importer cuts out of a
// line; shorter ones compress as well in the line itself.
const MinCutString = 256

// maxCuts bounds what a decoder accepts (a line of a few MiB has far fewer
// strings of MinCutString bytes).
const maxCuts = 1 << 16

// sourceLine is a decoded source line object.
type sourceLine struct {
	Offset int64
	Cuts   []lineCut
	Rest   []byte
}

// lineCut is one string cut out of a line.
type lineCut struct {
	Gap int     // bytes of rest before it, after the previous cut
	ID  cas.Key // its decoded text
}

var errBadSourceLine = errors.New("source line object unreadable")

func (sl *sourceLine) encode() []byte {
	b := make([]byte, 0, 16+len(sl.Cuts)*18+len(sl.Rest))
	b = append(b, sourceLineVersion)
	b = binary.AppendUvarint(b, uint64(sl.Offset))
	b = binary.AppendUvarint(b, uint64(len(sl.Cuts)))
	for _, c := range sl.Cuts {
		b = binary.AppendUvarint(b, uint64(c.Gap))
		b = append(b, c.ID[:]...)
	}
	return append(b, sl.Rest...)
}

// decodeSourceLine reads a source line object. It never panics.
func decodeSourceLine(b []byte) (sourceLine, error) {
	var sl sourceLine
	if len(b) < 3 {
		return sl, fmt.Errorf("%w: %d bytes", errBadSourceLine, len(b))
	}
	if b[0] != sourceLineVersion {
		return sl, fmt.Errorf("%w: version %d (written by a newer rook? upgrade rook)", errBadSourceLine, b[0])
	}
	p := 1
	off, n := binary.Uvarint(b[p:])
	if n <= 0 || off > 1<<53 {
		return sl, fmt.Errorf("%w: offset", errBadSourceLine)
	}
	p += n
	count, n := binary.Uvarint(b[p:])
	if n <= 0 || count > maxCuts {
		return sl, fmt.Errorf("%w: cut count", errBadSourceLine)
	}
	p += n
	sl.Offset = int64(off)
	sl.Cuts = make([]lineCut, 0, min(count, uint64(len(b)/17+1)))
	total := uint64(0)
	for i := uint64(0); i < count; i++ {
		gap, n := binary.Uvarint(b[p:])
		if n <= 0 || gap > uint64(len(b)) {
			return sl, fmt.Errorf("%w: cut %d", errBadSourceLine, i)
		}
		p += n
		if len(b)-p < len(cas.Key{}) {
			return sl, fmt.Errorf("%w: cut %d: truncated id", errBadSourceLine, i)
		}
		var c lineCut
		c.Gap = int(gap)
		copy(c.ID[:], b[p:])
		p += len(c.ID)
		total += gap
		sl.Cuts = append(sl.Cuts, c)
	}
	sl.Rest = b[p:len(b):len(b)]
	if total > uint64(len(sl.Rest)) {
		return sl, fmt.Errorf("%w: cuts reach past the line", errBadSourceLine)
	}
	return sl, nil
}

// expand writes the line back: rest with each cut string put back in place.
func (sl *sourceLine) expand(get func(cas.Key) ([]byte, error)) ([]byte, error) {
	out := make([]byte, 0, len(sl.Rest)+len(sl.Cuts)*MinCutString*2)
	p := 0
	for _, c := range sl.Cuts {
		out = append(out, sl.Rest[p:p+c.Gap]...)
		p += c.Gap
		text, err := get(c.ID)
		if err != nil {
			return nil, fmt.Errorf("string %s of the line: %w", cas.Short(c.ID), err)
		}
		out = appendJSONString(out, text)
	}
	return append(out, sl.Rest[p:]...), nil
}

// appendJSONString appends s as a JSON string literal, escaped the way
// JavaScript's JSON.stringify and Rust's serde_json escape: quote,
// backslash and control characters only (\b \f \n \r \t short, the rest as
// \u00xx), everything else, '/' and non-ASCII included, as is.
func appendJSONString(dst, s []byte) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		if e := shortEscape[c]; e != 0 {
			dst = append(dst, '\\', e)
		} else {
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// shortEscape is the letter a byte is escaped with after a backslash by
// JSON.stringify and serde_json (0: none, \u00xx for control characters);
// shortUnescape reads one back. appendJSONString and canonicalText share
// them so that what one writes the other accepts.
var shortEscape = [256]byte{'"': '"', '\\': '\\', '\b': 'b', '\f': 'f', '\n': 'n', '\r': 'r', '\t': 't'}

var shortUnescape = func() map[byte]byte {
	m := map[byte]byte{}
	for c, e := range shortEscape {
		if e != 0 {
			m[e] = byte(c)
		}
	}
	return m
}()

// jsonString is a string value found in a line.
type jsonString struct {
	Start, End int    // the literal, quotes included: line[Start:End]
	Key        string // the key it is the value of ("" in an array)
	Parents    []string
}

// stringValues finds the string values (not keys) of a JSON document whose
// literal is at least minLen bytes long, with the keys that lead to them.
// It returns ok=false for bytes that are not one JSON value (then nothing
// is cut from the line); valid says the caller already knows b is JSON.
func stringValues(b []byte, minLen int, valid bool) ([]jsonString, bool) {
	if !valid && !json.Valid(b) {
		return nil, false
	}
	// b is valid JSON: the scan below only has to tell the parts apart.
	type frame struct {
		object bool
		key    string
	}
	var stack []frame
	var keys []string // keys of the enclosing objects, outermost first
	var out []jsonString
	expectKey := false
	lastKey := ""
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case '{':
			stack = append(stack, frame{object: true, key: lastKey})
			keys = append(keys, lastKey)
			expectKey, lastKey = true, ""
		case '[':
			stack = append(stack, frame{key: lastKey})
			keys = append(keys, lastKey)
			expectKey, lastKey = false, ""
		case '}', ']':
			stack = stack[:len(stack)-1]
			keys = keys[:len(keys)-1]
			lastKey = ""
		case ',':
			expectKey = len(stack) > 0 && stack[len(stack)-1].object
			lastKey = ""
		case '"':
			end := stringEnd(b, i)
			if expectKey {
				if lit := b[i+1 : end-1]; bytes.IndexByte(lit, '\\') < 0 {
					lastKey = string(lit) // no escapes: the bytes are the key
				} else {
					var k string
					if err := json.Unmarshal(b[i:end], &k); err == nil {
						lastKey = k
					}
				}
				expectKey = false
			} else if end-i >= minLen {
				out = append(out, jsonString{Start: i, End: end, Key: lastKey, Parents: append([]string(nil), keys...)})
			}
			i = end - 1
		}
	}
	return out, true
}

// stringEnd returns the index just past the string literal starting at
// b[i] (a quote), in valid JSON.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// cutLine splits a line into the source line's rest and the decoded texts
// it cuts out. kindOf picks each text's object kind from where it sits;
// valid says the line (without its newline) is known to be JSON.
func cutLine(line []byte, minLen int, valid bool, kindOf func(jsonString) cas.Kind) (rest []byte, gaps []int, texts [][]byte, kinds []cas.Kind) {
	body := line
	for len(body) > 0 && (body[len(body)-1] == '\n' || body[len(body)-1] == '\r') {
		body = body[:len(body)-1]
	}
	strs, ok := stringValues(body, minLen+2, valid && len(body) == len(line)-1)
	if !ok || len(strs) == 0 {
		return line, nil, nil, nil
	}
	rest = make([]byte, 0, len(line))
	prev := 0
	for _, s := range strs {
		text, ok := canonicalText(line[s.Start:s.End])
		if !ok || len(text) < minLen {
			continue // escaped some other way: keep it in the line
		}
		gaps = append(gaps, s.Start-prev)
		rest = append(rest, line[prev:s.Start]...)
		texts = append(texts, text)
		kinds = append(kinds, kindOf(s))
		prev = s.End
	}
	if len(texts) == 0 {
		return line, nil, nil, nil
	}
	rest = append(rest, line[prev:]...)
	return rest, gaps, texts, kinds
}

// canonicalText decodes a JSON string literal (quotes included) if, and
// only if, appendJSONString writes its text back as exactly these bytes:
// the only escapes are the short ones (\" \\ \b \f \n \r \t) and \u00xx
// (lowercase) for the other control characters, and the text is valid
// UTF-8. Anything else (\/, \u00e9, a surrogate pair, invalid UTF-8)
// stays in the line.
func canonicalText(lit []byte) ([]byte, bool) {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		return nil, false
	}
	in := lit[1 : len(lit)-1]
	if !utf8.Valid(in) {
		return nil, false
	}
	if bytes.IndexByte(in, '\\') < 0 {
		return in, true // valid JSON has no raw control character or quote here
	}
	out := make([]byte, 0, len(in))
	for i := 0; i < len(in); i++ {
		c := in[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		if i+1 >= len(in) {
			return nil, false
		}
		i++
		if c, ok := shortUnescape[in[i]]; ok {
			out = append(out, c)
			continue
		}
		switch in[i] {
		case 'u':
			if i+4 >= len(in) || in[i+1] != '0' || in[i+2] != '0' || !isLowerHex(in[i+3]) || !isLowerHex(in[i+4]) {
				return nil, false
			}
			v := unhex(in[i+3])<<4 | unhex(in[i+4])
			if v >= 0x20 || shortEscape[v] != 0 {
				return nil, false // written another way by appendJSONString
			}
			out = append(out, v)
			i += 4
		default:
			return nil, false
		}
	}
	return out, true
}

func isLowerHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }

func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'a' + 10
}
