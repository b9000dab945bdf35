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
	seen := 0
	for _, mb := range members {
		k := -1
		for i, name := range claudeKeys {
			if mb.Key == name {
				k = i
				break
			}
		}
		if k < 0 {
			if claudeReads(mb.Key) {
				return e, false // a field's name in another case, or not ASCII
			}
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
		case "type":
			e.Type, ok = r.str(v, end, "type")
		case "subtype":
			e.Subtype, ok = r.str(v, end, "subtype")
		case "timestamp":
			e.Timestamp, ok = r.str(v, end, "timestamp")
		case "sessionId":
			e.SessionID, ok = r.str(v, end, "sessionId")
		case "cwd":
			e.Cwd, ok = r.str(v, end, "cwd")
		case "summary":
			e.Summary, ok = r.str(v, end, "summary")
		case "isMeta":
			var bEnd int
			e.IsMeta, bEnd, ok = r.boolean(v)
			ok = ok && bEnd == end
		case "data":
			e.DataType, ok = r.dataType(v)
		case "snapshot":
			// Rare (file-history snapshots) and small: decoded whole.
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
	if i >= len(r.b) || r.b[i] != '{' {
		return 0, false
	}
	i = r.skipSpace(i + 1)
	if i < len(r.b) && r.b[i] == '}' {
		return i + 1, true
	}
	for i < len(r.b) {
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
		end, ok := fn(key, r.skipSpace(i+1))
		if !ok {
			return 0, false
		}
		i = r.skipSpace(end)
		if i >= len(r.b) {
			return 0, false
		}
		switch r.b[i] {
		case '}':
			return i + 1, true
		case ',':
			i = r.skipSpace(i + 1)
		default:
			return 0, false
		}
	}
	return 0, false
}

// array calls fn for each element of the array at i, as object does.
func (r *fastReader) array(i int, fn func(v int) (int, bool)) (int, bool) {
	if i >= len(r.b) || r.b[i] != '[' {
		return 0, false
	}
	i = r.skipSpace(i + 1)
	if i < len(r.b) && r.b[i] == ']' {
		return i + 1, true
	}
	for i < len(r.b) {
		end, ok := fn(i)
		if !ok {
			return 0, false
		}
		i = r.skipSpace(end)
		if i >= len(r.b) {
			return 0, false
		}
		switch r.b[i] {
		case ']':
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
// key: a long text the view shortens (viewKeys) is shortened the same way.
func (r *fastReader) str(v, end int, key string) (string, bool) {
	lit := r.b[v:end]
	if len(lit) < 2 || lit[0] != '"' {
		return "", false // null, or another type: encoding/json's business
	}
	if len(lit) >= r.minLen+2 && viewKeys[key] {
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

// known says whether key is one of names, and which; it fails (ok false)
// on a key that encoding/json would match to one of them only by folding
// case, or might (not ASCII).
func known(key []byte, names ...string) (int, bool) {
	for i, n := range names {
		if string(key) == n {
			return i, true
		}
	}
	if !isASCII(string(key)) {
		return -1, false
	}
	for _, n := range names {
		if len(n) == len(key) && strings.EqualFold(string(key), n) {
			return -1, false
		}
	}
	return -1, true
}

// dataType is data.type of a progress entry (the rest of data, often most
// of the line, is skipped).
func (r *fastReader) dataType(v int) (string, bool) {
	var typ string
	seen := false
	_, ok := r.object(v, func(key []byte, v int) (int, bool) {
		k, ok := known(key, "type")
		if !ok {
			return 0, false
		}
		if k < 0 {
			return r.valueEnd(v)
		}
		if seen {
			return 0, false
		}
		seen = true
		var end int
		typ, end, ok = r.stringValue(v, "type")
		return end, ok
	})
	return typ, ok
}

// message reads a message: its id, model, usage and content, checking the
// types of the members a claudeMessage has as encoding/json would.
func (r *fastReader) message(v int, e *claudeEntry) bool {
	var seen [5]bool
	_, ok := r.object(v, func(key []byte, v int) (int, bool) {
		k, ok := known(key, "id", "role", "model", "content", "usage")
		if !ok {
			return 0, false
		}
		if k < 0 {
			return r.valueEnd(v)
		}
		if seen[k] {
			return 0, false
		}
		seen[k] = true
		var end int
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
	return 0, false // null, or a type encoding/json fails on
}

// usage reads a message's token counts.
func (r *fastReader) usage(v int, u *claudeUsage) (int, bool) {
	var seen [4]bool
	return r.object(v, func(key []byte, v int) (int, bool) {
		k, ok := known(key, "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
		if !ok {
			return 0, false
		}
		if k < 0 {
			return r.valueEnd(v)
		}
		if seen[k] {
			return 0, false
		}
		seen[k] = true
		n, end, ok := r.uint(v)
		*[...]*uint64{&u.Input, &u.CacheCreation, &u.CacheRead, &u.Output}[k] = n
		return end, ok
	})
}

// block reads a content block into b, checking every member a
// claudeBlock has; with b nil, it only checks them.
func (r *fastReader) block(v int, b *claudeBlock) (int, bool) {
	var seen [6]bool
	return r.object(v, func(key []byte, v int) (int, bool) {
		k, ok := known(key, "type", "text", "id", "name", "tool_use_id", "is_error")
		if !ok {
			return 0, false
		}
		if k < 0 {
			return r.valueEnd(v)
		}
		if seen[k] {
			return 0, false
		}
		seen[k] = true
		if k == 5 {
			var isErr bool
			var end int
			isErr, end, ok = r.boolean(v)
			if b != nil {
				b.IsError = isErr
			}
			return end, ok
		}
		if b == nil {
			return r.stringEnd(v) // any string decodes, without error
		}
		name := [...]string{"type", "text", "id", "name", "tool_use_id"}[k]
		s, end, ok := r.stringValue(v, name)
		*[...]*string{&b.Type, &b.Text, &b.ID, &b.Name, &b.ToolUseID}[k] = s
		return end, ok
	})
}
