package agent

import (
	"bytes"
	"strings"
	"unicode/utf8"

	json "github.com/go-json-experiment/json/v1"
)

// The fast path of the Claude Code mapping. Decoding a line's view with
// encoding/json's rules took a sixth of an import's CPU: most of a line is
// members the mapping skips (a progress entry's data, a message's long
// content), which the decoder walks and copies all the same. The fast path
// reads the few values the mapping needs straight off the line, which
// scanJSON has already checked is valid JSON, and jumps over the rest: the
// long strings scanJSON listed, with their ends known.
//
// It gives exactly what decodeClaudeEntry gives on the line's view, or
// declines: on anything where encoding/json's rules go beyond the plain
// case (a key that differs from a field's name only by case or is not
// ASCII, a key twice, null or a value of another type where a field is,
// a number that is not a plain unsigned integer...). A declined line goes
// through the view and encoding/json as before. FuzzClaudeFastPath holds
// the two to the same answers, and TestClaudeFastPathOnCorpus to taking
// nearly every real line.

// claudeKeys are the top-level members the fast path reads, in the order
// of the bits that say which it has seen.
var claudeKeys = [...]string{"type", "subtype", "timestamp", "sessionId", "cwd", "isMeta", "summary", "message", "data", "snapshot"}

// scanClaudeEntry reads a line's entry. strs and members are scanJSON's
// for it; minLen is the view's (mapView): the texts the view would
// shorten, the entry holds shortened the same way.
func scanClaudeEntry(line []byte, strs []jsonString, members []jsonMember, minLen int) (claudeEntry, bool) {
	var e claudeEntry
	if len(members) == 0 {
		return e, false
	}
	r := fastReader{b: line, strs: strs, minLen: minLen}
	// The string members, by their place in claudeKeys.
	strField := [...]*string{&e.Type, &e.Subtype, &e.Timestamp, &e.SessionID, &e.Cwd, nil, &e.Summary}
	seen := 0
	for _, mb := range members {
		k, ok := known(mb.Key, claudeKeys[:])
		if !ok {
			return e, false // a field's name in another case, or not ASCII
		}
		if k < 0 {
			continue
		}
		if seen&(1<<k) != 0 {
			return e, false
		}
		seen |= 1 << k
		v, end, ok := r.memberValue(mb)
		if !ok {
			return e, false
		}
		switch claudeKeys[k] {
		case "type", "subtype", "timestamp", "sessionId", "cwd", "summary":
			*strField[k], ok = r.str(v, end, claudeKeys[k])
		case "isMeta":
			var bEnd int
			e.IsMeta, bEnd, ok = r.boolean(v)
			ok = ok && bEnd == end
		case "data":
			e.DataType, ok = r.dataType(v)
		case "snapshot":
			// Rare (file-history snapshots) and small: decoded whole, from
			// the line rather than the view, which is the same as long as
			// the view shortens nothing a claudeSnapshot reads (no key of
			// it is one claudeShortens takes).
			var s claudeSnapshot
			ok = line[v] == '{' && json.Unmarshal(line[v:end], &s) == nil
			e.Tracked = s.Tracked
		case "message":
			ok = r.message(v, &e)
		}
		if !ok {
			return e, false
		}
	}
	return e, true
}

// fastReader reads values of a line scanJSON found valid.
type fastReader struct {
	b      []byte
	strs   []jsonString // the line's long strings, in order
	next   int          // the first of strs not before the reader
	minLen int
}

// memberValue is where a top-level member's value starts and ends
// (scanJSON found where the member ends).
func (r *fastReader) memberValue(mb jsonMember) (int, int, bool) {
	i := r.skipSpace(mb.Start)
	end, ok := r.stringEnd(i)
	if !ok {
		return 0, 0, false
	}
	i = r.skipSpace(end)
	if i >= len(r.b) || r.b[i] != ':' {
		return 0, 0, false
	}
	v := r.skipSpace(i + 1)
	end = mb.End
	for end > v && isJSONSpace(r.b[end-1]) {
		end--
	}
	return v, end, end > v
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func (r *fastReader) skipSpace(i int) int { return skipJSONSpace(r.b, i) }

// stringEnd is the end of the string literal at i: from scanJSON's list
// when it is a long one, else found.
func (r *fastReader) stringEnd(i int) (int, bool) {
	if i >= len(r.b) || r.b[i] != '"' {
		return 0, false
	}
	// The reader moves forward through the line: so does its place in strs.
	for r.next < len(r.strs) && r.strs[r.next].Start < i {
		r.next++
	}
	if r.next < len(r.strs) && r.strs[r.next].Start == i {
		return r.strs[r.next].End, true
	}
	return jsonStringEnd(r.b, i)
}

// valueEnd is the end of the JSON value at i.
func (r *fastReader) valueEnd(i int) (int, bool) {
	if i >= len(r.b) {
		return 0, false
	}
	switch r.b[i] {
	case '"':
		return r.stringEnd(i)
	case '{', '[':
		depth := 0
		for i < len(r.b) {
			switch c := r.b[i]; c {
			case '"':
				end, ok := r.stringEnd(i)
				if !ok {
					return 0, false
				}
				i = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1, true
				}
			}
			i++
		}
		return 0, false
	}
	j := i // a number, true, false or null: up to the next delimiter
	for j < len(r.b) && !endsLiteral(r.b[j]) {
		j++
	}
	return j, j > i
}

func endsLiteral(c byte) bool {
	switch c {
	case ',', ']', '}', ' ', '\t', '\r', '\n':
		return true
	}
	return false
}

// object calls fn for each member of the object at i, with its key and
// where its value starts; fn reads or skips the value and says where it
// ends. object returns where the object ends. It fails on a key with an
// escape (which only encoding/json decodes).
func (r *fastReader) object(i int, fn func(key []byte, v int) (int, bool)) (int, bool) {
	return r.items(i, '{', func(i int) (int, bool) {
		kEnd, ok := r.stringEnd(i)
		if !ok {
			return 0, false
		}
		key := r.b[i+1 : kEnd-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return 0, false
		}
		i = r.skipSpace(kEnd)
		if i >= len(r.b) || r.b[i] != ':' {
			return 0, false
		}
		return fn(key, r.skipSpace(i+1))
	})
}

// array calls fn for each element of the array at i, as object does.
func (r *fastReader) array(i int, fn func(v int) (int, bool)) (int, bool) {
	return r.items(i, '[', fn)
}

// items calls item at each member of the object, or element of the array,
// that opens at i (open is '{' or '['); item says where the member ends.
func (r *fastReader) items(i int, open byte, item func(i int) (int, bool)) (int, bool) {
	if i >= len(r.b) || r.b[i] != open {
		return 0, false
	}
	closing := open + 2 // '{'+2 is '}', '['+2 is ']'
	i = r.skipSpace(i + 1)
	if i < len(r.b) && r.b[i] == closing {
		return i + 1, true
	}
	for i < len(r.b) {
		end, ok := item(i)
		if !ok {
			return 0, false
		}
		i = r.skipSpace(end)
		if i >= len(r.b) {
			return 0, false
		}
		switch r.b[i] {
		case closing:
			return i + 1, true
		case ',':
			i = r.skipSpace(i + 1)
		default:
			return 0, false
		}
	}
	return 0, false
}

// stringValue is str for the string at v, and where it ends.
func (r *fastReader) stringValue(v int, key string) (string, int, bool) {
	end, ok := r.stringEnd(v)
	if !ok {
		return "", 0, false
	}
	s, ok := r.str(v, end, key)
	return s, end, ok
}

// uint is an unsigned integer in plain digits that fits in a uint64 (19
// digits do): anything else, encoding/json's rules decide.
func (r *fastReader) uint(v int) (uint64, int, bool) {
	var n uint64
	i := v
	for ; i < len(r.b) && r.b[i] >= '0' && r.b[i] <= '9'; i++ {
		n = n*10 + uint64(r.b[i]-'0')
	}
	if i == v || i-v > 19 || (i < len(r.b) && !endsLiteral(r.b[i])) {
		return 0, 0, false
	}
	return n, i, true
}

// str is the string value at b[v:end], as the view would hold it under
// key: a long text the view shortens (claudeShortens) is shortened the
// same way.
func (r *fastReader) str(v, end int, key string) (string, bool) {
	lit := r.b[v:end]
	if len(lit) < 2 || lit[0] != '"' {
		return "", false // null, or another type: encoding/json's business
	}
	if len(lit) >= r.minLen+2 && claudeShortens(key) {
		if text, ok := canonicalText(lit); ok {
			return string(text[:viewKeep(text)]), true
		}
	}
	in := lit[1 : len(lit)-1]
	if bytes.IndexByte(in, '\\') < 0 && utf8.Valid(in) {
		return string(in), true
	}
	var s string
	return s, json.Unmarshal(lit, &s) == nil // escapes, or bytes it replaces
}

// boolean is the true or false at v, and where it ends.
func (r *fastReader) boolean(v int) (bool, int, bool) {
	switch {
	case bytes.HasPrefix(r.b[v:], []byte("true")):
		return true, v + 4, true
	case bytes.HasPrefix(r.b[v:], []byte("false")):
		return false, v + 5, true
	}
	return false, 0, false
}

// fields calls fn for each member of the object at v that has one of the
// names (k is which), with where its value starts; fn reads the value and
// says where it ends. Other members are skipped. It fails on a name seen
// twice, and on a key that encoding/json would match to a name only by
// folding case, or might (not ASCII).
func (r *fastReader) fields(v int, names []string, fn func(k, v int) (int, bool)) (int, bool) {
	var seen uint64 // names has fewer than 64
	return r.object(v, func(key []byte, v int) (int, bool) {
		k, ok := known(string(key), names)
		switch {
		case !ok || (k >= 0 && seen&(1<<k) != 0):
			return 0, false
		case k < 0:
			return r.valueEnd(v)
		}
		seen |= 1 << k
		return fn(k, v)
	})
}

// known says which of names key is (-1: none); ok is false for a key that
// encoding/json would match to one only by folding case, or might (not
// ASCII): the rule readsKeys applies to a mapper's top-level keys.
func known(key string, names []string) (int, bool) {
	for i, n := range names {
		if key == n {
			return i, true
		}
	}
	if !isASCII(key) {
		return -1, false
	}
	for _, n := range names {
		// Both ASCII: only keys of one length fold onto each other.
		if len(n) == len(key) && strings.EqualFold(key, n) {
			return -1, false
		}
	}
	return -1, true
}

var (
	dataFields    = []string{"type"}
	messageFields = []string{"id", "role", "model", "content", "usage"}
	usageFields   = []string{"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens"}
	blockFields   = []string{"type", "text", "id", "name", "tool_use_id", "is_error"}
)

// dataType is data.type of a progress entry (the rest of data, often most
// of the line, is skipped).
func (r *fastReader) dataType(v int) (string, bool) {
	var typ string
	_, ok := r.fields(v, dataFields, func(_, v int) (int, bool) {
		var end int
		var ok bool
		typ, end, ok = r.stringValue(v, "type")
		return end, ok
	})
	return typ, ok
}

// message reads a message: its id, model, usage and content, checking the
// types of the members a claudeMessage has as encoding/json would.
func (r *fastReader) message(v int, e *claudeEntry) bool {
	_, ok := r.fields(v, messageFields, func(k, v int) (end int, ok bool) {
		switch k {
		case 0:
			e.MsgID, end, ok = r.stringValue(v, "id")
		case 1:
			_, end, ok = r.stringValue(v, "role")
		case 2:
			e.Model, end, ok = r.stringValue(v, "model")
		case 3:
			end, ok = r.content(v, e)
		case 4:
			e.Usage = new(claudeUsage)
			end, ok = r.usage(v, e.Usage)
		}
		return end, ok
	})
	e.MsgOK = ok
	return ok
}

// content reads a message's content: a string, or blocks.
func (r *fastReader) content(v int, e *claudeEntry) (int, bool) {
	switch r.b[v] {
	case '"':
		var end int
		var ok bool
		e.Text, end, ok = r.stringValue(v, "content")
		e.IsText = ok
		return end, ok
	case '[':
		e.BlocksOK = true
		return r.array(v, func(v int) (int, bool) {
			var b *claudeBlock
			if e.Blocks == 0 {
				b = &e.First // the mapping reads the first block only
			}
			e.Blocks++
			return r.block(v, b)
		})
	}
	// null, a number, an object...: encoding/json takes them into the
	// message's raw content and then decodes neither a string nor blocks
	// (null as both); rare enough to leave to it.
	return 0, false
}

// usage reads a message's token counts.
func (r *fastReader) usage(v int, u *claudeUsage) (int, bool) {
	return r.fields(v, usageFields, func(k, v int) (int, bool) {
		n, end, ok := r.uint(v)
		*[...]*uint64{&u.Input, &u.CacheCreation, &u.CacheRead, &u.Output}[k] = n
		return end, ok
	})
}

// block reads a content block into b, checking every member a
// claudeBlock has; with b nil, it only checks them.
func (r *fastReader) block(v int, b *claudeBlock) (int, bool) {
	return r.fields(v, blockFields, func(k, v int) (int, bool) {
		if k == 5 {
			isErr, end, ok := r.boolean(v)
			if b != nil {
				b.IsError = isErr
			}
			return end, ok
		}
		if b == nil {
			return r.stringEnd(v) // any string decodes, without error
		}
		s, end, ok := r.stringValue(v, blockFields[k])
		*[...]*string{&b.Type, &b.Text, &b.ID, &b.Name, &b.ToolUseID}[k] = s
		return end, ok
	})
}
