package agent

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
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
	b := sl.appendHead(make([]byte, 0, sourceLineHeadMax(len(sl.Cuts))+len(sl.Rest)))
	return append(b, sl.Rest...)
}

// appendHead appends everything of sl's encoding before its rest.
func (sl *sourceLine) appendHead(b []byte) []byte {
	b = append(b, sourceLineVersion)
	b = binary.AppendUvarint(b, uint64(sl.Offset))
	b = binary.AppendUvarint(b, uint64(len(sl.Cuts)))
	for _, c := range sl.Cuts {
		b = binary.AppendUvarint(b, uint64(c.Gap))
		b = append(b, c.ID[:]...)
	}
	return b
}

// sourceLineHeadMax bounds the length of a head with cuts cuts.
func sourceLineHeadMax(cuts int) int {
	return 1 + 2*binary.MaxVarintLen64 + cuts*(binary.MaxVarintLen64+len(cas.Key{}))
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
// The strings are read first, so that the line is made at its size in one
// allocation: grown by append, a line of long strings was copied over and
// over (twice its size allocated, on every read of an imported event).
func (sl *sourceLine) expand(get func(cas.Key) ([]byte, error)) ([]byte, error) {
	texts := make([][]byte, len(sl.Cuts))
	size := int64(len(sl.Rest))
	for i, c := range sl.Cuts {
		text, err := get(c.ID)
		if err != nil {
			return nil, fmt.Errorf("string %s of the line: %w", cas.Short(c.ID), err)
		}
		texts[i] = text
		size += 2 + jsonEscapedLen(text)
	}
	out := make([]byte, 0, size)
	p := 0
	for i, c := range sl.Cuts {
		out = append(out, sl.Rest[p:p+c.Gap]...)
		p += c.Gap
		out = appendJSONString(out, texts[i])
	}
	return append(out, sl.Rest[p:]...), nil
}

// endsLine says whether the line expand gives ends with a newline: its
// last byte is rest's, not the closing quote of a string cut out.
func (sl *sourceLine) endsLine() bool {
	end := 0
	for _, c := range sl.Cuts {
		end += c.Gap
	}
	if len(sl.Cuts) > 0 && end >= len(sl.Rest) {
		return false
	}
	return len(sl.Rest) > 0 && sl.Rest[len(sl.Rest)-1] == '\n'
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

// jsonEscapedLen is how many bytes appendJSONString writes for s, its
// quotes left out.
func jsonEscapedLen(s []byte) int64 {
	n := int64(len(s))
	for _, c := range s {
		switch {
		case c >= 0x20 && c != '"' && c != '\\':
		case shortEscape[c] != 0:
			n++
		default:
			n += 5
		}
	}
	return n
}

// shortEscape is the letter a byte is escaped with after a backslash by
// JSON.stringify and serde_json (0: none, \u00xx for control characters);
// shortUnescape reads one back. appendJSONString and canonicalText share
// them so that what one writes the other accepts.
var shortEscape = [256]byte{'"': '"', '\\': '\\', '\b': 'b', '\f': 'f', '\n': 'n', '\r': 'r', '\t': 't'}

var shortUnescape = func() (t [256]byte) { // 0: not a short escape
	for c, e := range shortEscape {
		if e != 0 {
			t[e] = byte(c)
		}
	}
	return t
}()

// jsonString is a string value found in a line.
type jsonString struct {
	Start, End int    // the literal, quotes included: line[Start:End]
	Key        string // the key it is the value of ("" in an array)
	Parents    []string

	// text and state cache canonicalText: a string both shortened for the
	// mapper and cut out is decoded once.
	text  []byte
	state uint8 // 0 not decoded yet, 1 canonical, 2 not
}

// canonical is canonicalText of the string's literal in line, decoded on
// first use.
func (s *jsonString) canonical(line []byte) ([]byte, bool) {
	if s.state == 0 {
		var ok bool
		s.text, ok = canonicalText(line[s.Start:s.End])
		s.state = 2
		if ok {
			s.state = 1
		}
	}
	return s.text, s.state == 1
}

// stringValues finds the string values (not keys) of a JSON document whose
// literal is at least minLen bytes long, with the keys that lead to them.
// It returns ok=false for bytes that are not one JSON value, exactly as
// json.Valid would say (FuzzStringValues holds the two together): the
// importer reads each line once, here, instead of validating it first.
func stringValues(b []byte, minLen int) ([]jsonString, bool) {
	return scanJSON(b, minLen, nil, nil)
}

// jsonMember is a member of a document's top-level object: b[Start:End]
// runs from its key's opening quote to the ',' or '}' after its value.
type jsonMember struct {
	Start, End int
	Key        string
	Value      int // where its value starts
}

// keyNames interns the keys a scan reads: the lines of a transcript repeat
// the same few dozen keys, and one string of each for all its lines saves
// an allocation per key of every line (most of an import's allocations).
// A nil keyNames makes a string of each key.
type keyNames map[string]string

// maxKeyNames bounds how many keys are kept and maxKeyName how long one
// may be: lines with keys of their own (a tool input's) must not make the
// table grow with the file.
const (
	maxKeyNames = 1024
	maxKeyName  = 64
)

// name is the key whose literal, without escapes, is lit.
func (k keyNames) name(lit []byte) string {
	if s, ok := k[string(lit)]; ok {
		return s
	}
	s := string(lit)
	if k != nil && len(k) < maxKeyNames && len(lit) <= maxKeyName {
		k[s] = s
	}
	return s
}

// keyCache is a small table in front of a keyNames, indexed by a few of
// a key's bytes and its length: most keys of a line are found there,
// compared but not hashed whole as a map lookup hashes them (the lookups
// took a tenth of the mapping's time).
type keyCache [512]string

// name is names.name(lit), through the cache.
func (c *keyCache) name(lit []byte, names keyNames) string {
	if c == nil || len(lit) == 0 {
		return names.name(lit)
	}
	h := (uint(len(lit))*131 + uint(lit[0])*31 + uint(lit[len(lit)-1])*17 + uint(lit[len(lit)/2])*7 + uint(lit[len(lit)/3])) % uint(len(c))
	if s := c[h]; s == string(lit) {
		return s
	}
	s := names.name(lit)
	c[h] = s
	return s
}

// scanJSON is stringValues that also lists the top-level object's members
// in *members, when members is not nil and the document is an object, and
// takes its keys' strings from names.
func scanJSON(b []byte, minLen int, members *[]jsonMember, names keyNames) ([]jsonString, bool) {
	return scanJSONCached(b, minLen, members, names, nil)
}

// scanJSONCached is scanJSON with the keys looked up through cache (nil:
// none).
func scanJSONCached(b []byte, minLen int, members *[]jsonMember, names keyNames, cache *keyCache) ([]jsonString, bool) {
	const (
		wantValue = iota // a value: the document, an element, after a key
		wantKey          // a key: after '{' or after ',' in an object
		wantNext         // after a value: ',', the container's end, or the end
	)
	var (
		objects []bool   // the open containers, true for an object
		keys    []string // the key each open container is the value of
		out     []jsonString
		lastKey string // the key of the value to come ("" in an array)
		// parents holds the Parents of every string in out, one after
		// another: one allocation now and then instead of one per string.
		parents []string
	)
	state := wantValue
	i := 0
	for {
		i = skipJSONSpace(b, i)
		switch state {
		case wantValue:
			if i >= len(b) {
				return nil, false
			}
			switch c := b[i]; c {
			case '{', '[':
				if len(objects) >= maxJSONDepth {
					return nil, false
				}
				j := skipJSONSpace(b, i+1)
				if j < len(b) && b[j] == c+2 { // '{'+2 is '}', '['+2 is ']'
					i, state = j+1, wantNext
					continue
				}
				objects = append(objects, c == '{')
				keys = append(keys, lastKey)
				lastKey = ""
				i = j
				if c == '{' {
					state = wantKey
				}
				continue
			case '"':
				end, ok := jsonStringEnd(b, i)
				if !ok {
					return nil, false
				}
				if end-i >= minLen {
					parents = append(parents, keys...)
					out = append(out, jsonString{Start: i, End: end, Key: lastKey, Parents: parents[len(parents)-len(keys) : len(parents) : len(parents)]})
				}
				i = end
			case 't':
				if !bytes.HasPrefix(b[i:], []byte("true")) {
					return nil, false
				}
				i += 4
			case 'f':
				if !bytes.HasPrefix(b[i:], []byte("false")) {
					return nil, false
				}
				i += 5
			case 'n':
				if !bytes.HasPrefix(b[i:], []byte("null")) {
					return nil, false
				}
				i += 4
			default:
				end, ok := jsonNumberEnd(b, i)
				if !ok {
					return nil, false
				}
				i = end
			}
			state = wantNext
		case wantKey:
			if i >= len(b) || b[i] != '"' {
				return nil, false
			}
			end, ok := jsonStringEnd(b, i)
			if !ok {
				return nil, false
			}
			if lit := b[i+1 : end-1]; bytes.IndexByte(lit, '\\') < 0 {
				lastKey = cache.name(lit, names) // no escapes: the bytes are the key
			} else if err := json.Unmarshal(b[i:end], &lastKey); err != nil {
				lastKey = ""
			}
			if members != nil && len(objects) == 1 {
				*members = append(*members, jsonMember{Start: i, Key: lastKey})
			}
			i = skipJSONSpace(b, end)
			if i >= len(b) || b[i] != ':' {
				return nil, false
			}
			i = skipJSONSpace(b, i+1)
			if members != nil && len(objects) == 1 {
				(*members)[len(*members)-1].Value = i
			}
			state = wantValue
		case wantNext:
			lastKey = ""
			if members != nil && len(objects) == 1 && objects[0] {
				(*members)[len(*members)-1].End = i
			}
			if len(objects) == 0 {
				if i != len(b) {
					return nil, false
				}
				return out, true
			}
			if i >= len(b) {
				return nil, false
			}
			object := objects[len(objects)-1]
			switch c := b[i]; {
			case c == ',':
				state = wantValue
				if object {
					state = wantKey
				}
			case c == '}' && object, c == ']' && !object:
				objects, keys = objects[:len(objects)-1], keys[:len(keys)-1]
			default:
				return nil, false
			}
			i++
		}
	}
}

// maxJSONDepth is how deep encoding/json lets containers nest: a deeper
// document is not JSON to it, so not to stringValues either.
const maxJSONDepth = 10000

// nestedTooDeep says whether b, a line that is not JSON, is not JSON to
// encoding/json because its arrays and objects nest deeper than
// maxJSONDepth, before anything else in it is wrong: what the import
// reports of such a line ("not JSON" would send its reader looking for a
// syntax error). The levels are counted in a loop, outside strings: no
// recursion, however deep the line goes.
func nestedTooDeep(b []byte) bool {
	depth, in := 0, false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case in && c == '\\':
			i++
		case in:
			in = c != '"'
		case c == '"':
			in = true
		case c == '{' || c == '[':
			if depth++; depth > maxJSONDepth {
				// Too deep here, unless encoding/json met an error
				// before (its offset is past the byte it stopped at).
				var raw json.RawMessage
				var se *json.SyntaxError
				return !errors.As(json.Unmarshal(b, &raw), &se) || se.Offset > int64(i)
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return false
}

// tooDeep is the problem reported of a line that nestedTooDeep.
var tooDeep = fmt.Sprintf("nested too deep (arrays and objects more than %d levels deep, past what rook reads as JSON): kept as it is", maxJSONDepth)

func skipJSONSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

// jsonStringEnd returns the index just past the string literal starting at
// b[i] (a quote), and whether it is a valid one: no raw control character,
// only JSON's escapes. Bytes of 0x80 and above pass as they are, valid
// UTF-8 or not, as encoding/json lets them.
func jsonStringEnd(b []byte, i int) (int, bool) {
	for j := i + 1; j < len(b); j++ {
		// Skip eight plain bytes at a time: most of a transcript is the
		// text inside long strings.
		for j+8 <= len(b) {
			special := specialBytes(binary.LittleEndian.Uint64(b[j:]))
			if special != 0 {
				// Straight to the first special byte: the plain ones
				// before it need no look of their own.
				j += bits.TrailingZeros64(special) / 8
				break
			}
			j += 8
		}
		if j >= len(b) {
			break
		}
		switch c := b[j]; {
		case c == '"':
			return j + 1, true
		case c < 0x20:
			return 0, false
		case c == '\\':
			if j+1 >= len(b) {
				return 0, false
			}
			j++
			switch b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(b) || !isHex(b[j+1]) || !isHex(b[j+2]) || !isHex(b[j+3]) || !isHex(b[j+4]) {
					return 0, false
				}
				j += 4
			default:
				return 0, false
			}
		}
	}
	return 0, false
}

// specialBytes marks the bytes of w (read little-endian) that end or
// escape a string, or may not be in one: a quote, a backslash, a control
// character. Non-zero iff there is one; the lowest set bit is the high bit
// of the first. Each test is the classic "has a zero byte" bit trick:
// (x - 0x01..) & ^x & 0x80.. is non-zero iff some byte of x is zero, and
// with 0x21.. in place of 0x01.. iff some byte is below 0x21. A borrow
// only runs upward from a byte that is itself marked, so a byte above the
// first marked one may be marked wrongly, never one below it: the lowest
// mark of each test, and so of the two together, is exact. The quote and
// the control characters are one test: flipping bit 1 (x ^ 0x02..) makes
// the quote 0x20 and keeps the control characters below 0x20, and every
// other byte at 0x21 or above.
func specialBytes(w uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	low, backslash := w^(ones*0x02), w^(ones*'\\')
	return ((low-ones*0x21)&^low | (backslash-ones)&^backslash) & highs
}

// jsonNumberEnd returns the index just past the number starting at b[i]:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func jsonNumberEnd(b []byte, i int) (int, bool) {
	digits := func(i int) int {
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(i)
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return 0, false
		}
		i = j
	}
	return i, true
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// stringCut is a string to cut out of a line: where its literal is, its
// decoded text, and the kind of object the text is stored as.
type stringCut struct {
	Start, End int
	Text       []byte
	Kind       cas.Kind
	// Owned: Text is a decoded copy of its own (the literal had escapes),
	// never changed after, so the store may keep it instead of copying it
	// again. Otherwise Text is a slice of the line, whose buffer an import
	// reads the next lines into.
	Owned bool
}

// lineCuts picks, among a line's strings (found by stringValues), those to
// cut out: decoded texts of at least minLen bytes that appendJSONString
// writes back as exactly their bytes. kindOf picks each text's kind from
// where it sits.
func lineCuts(line []byte, strs []jsonString, minLen int, kindOf func(jsonString) cas.Kind) []stringCut {
	var cuts []stringCut
	for i := range strs {
		s := &strs[i]
		if s.End-s.Start < minLen+2 {
			continue
		}
		text, ok := s.canonical(line)
		if !ok || len(text) < minLen {
			continue // escaped some other way: keep it in the line
		}
		owned := len(text) > 0 && &text[0] != &line[s.Start+1]
		cuts = append(cuts, stringCut{Start: s.Start, End: s.End, Text: text, Kind: kindOf(*s), Owned: owned})
	}
	return cuts
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
	if bytes.IndexByte(in, '\\') < 0 {
		// Valid JSON has no raw control character or quote here: the
		// text is the literal's inside, no copy.
		if !utf8.Valid(in) {
			return nil, false
		}
		return in, true
	}
	if out, ok := appendCanonicalText(make([]byte, 0, len(in)), in); ok {
		return out, true
	}
	return nil, false
}

// appendDecodedString appends the text of a JSON string to dst, given
// the inside of its literal (quotes left out), whatever its escapes
// (canonicalText's fast way when it can); on false (not the inside of a
// string literal), dst is returned as it was. Bytes that are not UTF-8 in
// a string with no escape are kept as they are (its readers, search and
// snippets, take them as U+FFFD).
func appendDecodedString(dst, in []byte) ([]byte, bool) {
	if bytes.IndexByte(in, '\\') < 0 {
		return append(dst, in...), true
	}
	if out, ok := appendCanonicalText(dst, in); ok {
		return out, true
	}
	lit := make([]byte, 0, len(in)+2)
	lit = append(append(append(lit, '"'), in...), '"')
	var text string
	if json.Unmarshal(lit, &text) != nil {
		return dst, false
	}
	return append(dst, text...), true
}

// appendCanonicalText is canonicalText appending the text to dst (a
// copy, always), given the inside of the literal; on false, dst is
// returned as it was.
func appendCanonicalText(dst, in []byte) ([]byte, bool) {
	if !utf8.Valid(in) {
		return dst, false
	}
	out := dst
	for i := 0; i < len(in); i++ {
		// Copy the run up to the next backslash at once.
		j := bytes.IndexByte(in[i:], '\\')
		if j < 0 {
			return append(out, in[i:]...), true
		}
		out = append(out, in[i:i+j]...)
		i += j
		if i+1 >= len(in) {
			return dst, false
		}
		i++
		if c := shortUnescape[in[i]]; c != 0 {
			out = append(out, c)
			continue
		}
		switch in[i] {
		case 'u':
			if i+4 >= len(in) || in[i+1] != '0' || in[i+2] != '0' || !isLowerHex(in[i+3]) || !isLowerHex(in[i+4]) {
				return dst, false
			}
			v := unhex(in[i+3])<<4 | unhex(in[i+4])
			if v >= 0x20 || shortEscape[v] != 0 {
				return dst, false // written another way by appendJSONString
			}
			out = append(out, v)
			i += 4
		default:
			return dst, false
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
