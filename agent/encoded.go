package agent

import (
	"bytes"
	"sort"

	"github.com/rookhq/rook/internal/units"
)

// Encoded state in imported lines. A transcript carries bytes that are
// not text anyone wrote or read: an image or a document in base64 (a
// Claude Code image block's source data, the base64 of an image a Read
// returned, a Codex input_image's data URL, a user_message's images), a
// thinking block's signature, redacted thinking, Codex's encrypted
// reasoning. Search never reads them (textOfImported), find never matches
// inside them and shows them as a marker ("[image 3.9 KiB]"), and the
// reading views render their blocks as a header ("[image]"), and a line
// they have no shape for with the same markers. Only the
// views that give the bytes as stored (session entry, show --raw, store
// cat, export) carry them.

// encodedKeys are the keys whose string values are encoded or signed
// state when they read as base64 (a "signature" of words is text).
var encodedKeys = map[string]bool{
	"signature": true, "data": true, "encrypted_content": true, "base64": true,
}

// minEncoded is the shortest value under one of encodedKeys taken for
// encoded state: an image, a signature or encrypted reasoning is hundreds
// of bytes at least, where a short word under "data" ("ok", "none") is
// text someone may look for.
const minEncoded = 64

// encodedValue says whether s, a string value of line, is encoded state:
// base64 of minEncoded bytes or more under one of encodedKeys, or a data
// URL in base64 under any key (or none: an element of Codex's images).
func encodedValue(line []byte, s *jsonString) bool {
	content := line[s.Start+1 : s.End-1]
	if encodedKeys[s.Key] && len(content) >= minEncoded && isBase64(content) {
		return true
	}
	return isDataURL(content)
}

// isBase64 says whether a JSON string's content (as written: "\/" is a
// '/') is base64, standard or URL-safe, and not empty.
func isBase64(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9',
			c == '+', c == '/', c == '=', c == '-', c == '_':
		case c == '\\' && i+1 < len(b) && b[i+1] == '/':
			i++
		default:
			return false
		}
	}
	return true
}

// isDataURL says whether a JSON string's content is a data URL in base64
// ("data:image/png;base64,iVBOR…").
func isDataURL(b []byte) bool {
	i := dataURLPayload(b)
	return i > 0 && isBase64(b[i:])
}

// dataURLPayload is where the base64 of a data URL b begins with starts,
// after its ";base64," within its first 128 bytes; -1 if b begins with
// none.
func dataURLPayload(b []byte) int {
	if !bytes.HasPrefix(b, []byte("data:")) {
		return -1
	}
	i := bytes.Index(b[:min(len(b), 128)], []byte(";base64,"))
	if i < 0 {
		return -1
	}
	return i + len(";base64,")
}

// encodedMarker is what a view shows for the content of an encoded
// string value: what it is and its size as stored, "[image 3.9 KiB]",
// "[signature 412 B]", "[encrypted 1.2 KiB]", else "[base64 …]".
func encodedMarker(key string, content []byte) string {
	return markEncoded(key, content, isDataURL(content), int64(len(content)))
}

// markEncoded is encodedMarker of a content of size bytes known by its
// head (at least its first 16 bytes, isImageBase64's signatures) and
// whether it is a data URL, for find's streamed lines, which keep only
// a long string's head (inlineCut.findEncoded).
func markEncoded(key string, head []byte, dataURL bool, size int64) string {
	what := "base64"
	switch {
	case key == "signature":
		what = "signature"
	case key == "encrypted_content":
		what = "encrypted"
	case dataURL:
		what = "data"
		if bytes.HasPrefix(head, []byte("data:image/")) {
			what = "image"
		}
	case isImageBase64(head):
		what = "image"
	}
	return "[" + what + " " + units.Bytes(size) + "]"
}

// isImageBase64 says whether base64 begins with the signature of a PNG,
// JPEG, GIF or WebP (RIFF) file.
func isImageBase64(b []byte) bool {
	for _, p := range []string{"iVBORw0KGgo", "/9j/", `\/9j\/`, "R0lGOD", "UklGR"} {
		if bytes.HasPrefix(b, []byte(p)) {
			return true
		}
	}
	return false
}

// encodedSpan is the content of an encoded string value, without its
// quotes: body[start:end] of the body the line is in.
type encodedSpan struct {
	start, end int
	marker     string
}

// encodedLines finds the encoded values of an imported body's lines for
// find, parsing a line when a match first lands on it.
type encodedLines struct {
	body     []byte
	from, to int // the line parsed: body[from:to], its newline left out
	spans    []encodedSpan
	parsed   bool
}

// line parses the line holding body[at], unless it is parsed already.
func (c *encodedLines) line(at int) {
	if c.parsed && c.from <= at && at < c.to {
		return
	}
	c.parsed = true
	c.from = bytes.LastIndexByte(c.body[:at], '\n') + 1
	c.to = len(c.body)
	if i := bytes.IndexByte(c.body[at:], '\n'); i >= 0 {
		c.to = at + i
	}
	c.spans = appendEncodedSpans(c.spans[:0], c.body[c.from:c.to], c.from)
}

// appendEncodedSpans appends the encoded values of line, a JSON line (a
// line that is not JSON has none), at body offsets base+their offset in
// line.
func appendEncodedSpans(spans []encodedSpan, line []byte, base int) []encodedSpan {
	line = bytes.TrimRight(line, "\r")
	strs, ok := stringValues(line, len(`"x"`))
	if !ok {
		return spans
	}
	for i := range strs {
		s := &strs[i]
		content := line[s.Start+1 : s.End-1]
		if encodedValue(line, s) {
			spans = append(spans, encodedSpan{base + s.Start + 1, base + s.End - 1,
				encodedMarker(s.Key, content)})
			continue
		}
		spans = appendNestedEncoded(spans, content, escapedQuote, base+s.Start+1)
	}
	return spans
}

// The quote of JSON written inside a JSON string as the line has it
// (escaped), and as a decoded string has it.
const (
	escapedQuote = `\"`
	plainQuote   = `"`
)

// appendNestedEncoded appends the encoded values of JSON written inside
// a string, b (a tool's output as JSON text: Codex's MCP results carry
// an image as {"content":[{"type":"image","data":"iVBOR…"}]} in their
// output string), with q the quote as b has it. It goes by the same
// rules as encodedValue, on the text, without parsing it (b is often
// not whole JSON, or JSON with text around it): base64 of minEncoded
// bytes or more as the value of one of encodedKeys, and base64 data URLs
// as a whole string. The spans are at offsets base+their offset in b.
func appendNestedEncoded(spans []encodedSpan, b []byte, q string, base int) []encodedSpan {
	if !bytes.Contains(b, []byte(q)) {
		return spans
	}
	var found []encodedSpan
	for _, key := range encodedKeyNames {
		needle := q + key + q
		for from := 0; ; {
			i := bytes.Index(b[from:], []byte(needle))
			if i < 0 {
				break
			}
			at := from + i + len(needle)
			from = at
			at = skipSpaces(b, at)
			if at >= len(b) || b[at] != ':' {
				continue
			}
			at = skipSpaces(b, at+1)
			if !bytes.HasPrefix(b[at:], []byte(q)) {
				continue
			}
			at += len(q)
			end := at + base64Run(b[at:])
			if end-at >= minEncoded && bytes.HasPrefix(b[end:], []byte(q)) {
				found = append(found, encodedSpan{at, end, encodedMarker(key, b[at:end])})
				from = end
			}
		}
	}
	for from := 0; ; {
		i := bytes.Index(b[from:], []byte(q+"data:"))
		if i < 0 {
			break
		}
		at := from + i + len(q)
		from = at
		j := dataURLPayload(b[at:])
		if j < 0 {
			continue
		}
		end := at + j
		if n := base64Run(b[end:]); n > 0 && bytes.HasPrefix(b[end+n:], []byte(q)) {
			found = append(found, encodedSpan{at, end + n, encodedMarker("", b[at:end+n])})
			from = end + n
		}
	}
	if len(found) == 0 {
		return spans
	}
	// In the order of b, as the callers walk them; a data URL under
	// "data" is found twice, and kept once.
	sort.Slice(found, func(i, j int) bool { return found[i].start < found[j].start })
	end := -1
	for _, s := range found {
		if s.start < end {
			continue
		}
		end = s.end
		s.start, s.end = base+s.start, base+s.end
		spans = append(spans, s)
	}
	return spans
}

// encodedKeyNames are encodedKeys, in a fixed order.
var encodedKeyNames = []string{"base64", "data", "encrypted_content", "signature"}

func skipSpaces(b []byte, at int) int {
	for at < len(b) && b[at] == ' ' {
		at++
	}
	return at
}

// base64Run is the length of the run of base64 characters b begins with.
func base64Run(b []byte) int {
	for i, c := range b {
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9',
			c == '+', c == '/', c == '=', c == '-', c == '_':
		default:
			return i
		}
	}
	return len(b)
}

// withoutEncoded is a JSON line with each encoded value replaced by its
// marker: what a reading view shows of a line it has no shape for. A line
// with none, or not JSON, is itself.
func withoutEncoded(line []byte) []byte {
	spans := appendEncodedSpans(nil, line, 0)
	if len(spans) == 0 {
		return line
	}
	out := make([]byte, 0, len(line))
	p := 0
	for _, s := range spans {
		out = append(append(out, line[p:s.start]...), s.marker...)
		p = s.end
	}
	return append(out, line[p:]...)
}

// maskNestedEncoded is text (a rendered view) with the encoded values of
// JSON in it (appendNestedEncoded) replaced by their markers: text itself
// when it has none.
func maskNestedEncoded(text []byte) []byte {
	spans := appendNestedEncoded(nil, text, plainQuote, 0)
	if len(spans) == 0 {
		return text
	}
	return masked(text, 0, len(text), spans)
}

// overlap is the end of the encoded value the match body[at:end] reaches
// into, or -1 when it touches none: a match in encoded state is no match,
// and the search goes on after that value.
func (c *encodedLines) overlap(at, end int) int {
	for _, p := range []int{at, end - 1} {
		if p < at || p >= len(c.body) {
			continue
		}
		c.line(p)
		for _, s := range c.spans {
			if at < s.end && end > s.start {
				return s.end
			}
		}
	}
	return -1
}

// snippet is the snippet of a match body[at:end] in an imported line,
// from the line as stored (the match is not inside one string value):
// the line alone, with each encoded value replaced by its marker.
func (c *encodedLines) snippet(at, end int) string {
	c.line(at)
	if len(c.spans) == 0 {
		return Snippet(c.body[c.from:c.to], at-c.from, min(end, c.to)-c.from, SnippetRunes)
	}
	line := make([]byte, 0, c.to-c.from)
	p := c.from
	mAt, mEnd := -1, -1
	for _, s := range c.spans {
		if mAt < 0 && at < s.start {
			mAt = len(line) + at - p
		}
		if mEnd < 0 && end <= s.start {
			mEnd = len(line) + end - p
		}
		line = append(line, c.body[p:s.start]...)
		line = append(line, s.marker...)
		p = s.end
	}
	if mAt < 0 {
		mAt = len(line) + at - p
	}
	if mEnd < 0 {
		mEnd = len(line) + min(end, c.to) - p
	}
	line = append(line, c.body[p:c.to]...)
	return Snippet(line, mAt, mEnd, SnippetRunes)
}
