package agent

import (
	"bytes"
	"strings"
	"unicode/utf8"

	json "github.com/go-json-experiment/json/v1"
)

// The mappers' fast paths (import_claude_fast.go, import_codex_fast.go)
// read the few values a mapping needs straight off a line that scanJSON
// has already checked is valid JSON, instead of decoding the line's view
// with encoding/json: most of a line is members the mapping skips, which
// the decoder walks and copies all the same. A fast path gives exactly
// what encoding/json gives on the view, or declines wherever its rules go
// beyond the plain case; fastReader is what they read with.

// fastReader reads values of a line scanJSON found valid.
type fastReader struct {
	b      []byte
	strs   []jsonString // the line's long strings, in order
	next   int          // the first of strs not before the reader
	minLen int
	// shortens says whether the view shortens a long text under key (the
	// mapper's shortens, for the keys its fast path reads).
	shortens func(key string) bool
}

// memberValue is where a top-level member's value starts and ends
// (scanJSON found both).
func (r *fastReader) memberValue(mb jsonMember) (int, int, bool) {
	v, end := mb.Value, mb.End
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
// key: a long text the view shortens (r.shortens) is shortened the same
// way.
func (r *fastReader) str(v, end int, key string) (string, bool) {
	lit := r.b[v:end]
	if len(lit) < 2 || lit[0] != '"' {
		return "", false // null, or another type: encoding/json's business
	}
	if len(lit) >= r.minLen+2 && r.shortens(key) {
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
	// One pass: a name of another length is neither the key nor, both
	// ASCII, the key folded (a key that is not ASCII is refused anyway).
	folds := false
	for i, n := range names {
		if len(n) != len(key) {
			continue
		}
		if key == n {
			return i, true
		}
		folds = folds || strings.EqualFold(key, n)
	}
	if folds || !isASCII(key) {
		return -1, false
	}
	return -1, true
}

// topMembers calls read with each of a line's top-level members whose key
// is one of keys: its place in keys and its value, b[v:end]. It is false,
// and the fast path declines, for a key that differs from one of keys
// only by case or is not ASCII (encoding/json's rules), a key of keys
// twice, or a value read refuses.
func (r *fastReader) topMembers(members []jsonMember, keys []string, read func(k, v, end int) bool) bool {
	seen := 0
	for _, mb := range members {
		k, ok := known(mb.Key, keys)
		if !ok {
			return false
		}
		if k < 0 {
			continue
		}
		if seen&(1<<k) != 0 {
			return false
		}
		seen |= 1 << k
		v, end, ok := r.memberValue(mb)
		if !ok || !read(k, v, end) {
			return false
		}
	}
	return true
}
