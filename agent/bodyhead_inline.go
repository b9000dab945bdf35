package agent

// session show of an imported line holding a long string import left in
// it (a string with a byte that is not UTF-8, or an escape written another
// way: search_inline.go). readBodyHead shortens each string cut from a big
// line to what the view can show; a string left in the line was read with
// the line's object whole, put together, and rendered whole (136-176 MB
// for a 20 MB output). The object is now streamed once (shortLine): its
// bytes are kept as they are but for the middle of each long string
// literal, left out between two places where the view of the whole is the
// view of the parts (after a plain letter or punctuation: no escape, no
// character, no color sequence runs across it), counted as the parts
// shortened out of cut strings are (the bytes it holds as stored, what its
// text adds to the view, whether it is UTF-8), and replaced by a numbered
// placeholder, whose count in the rendered view says how often the view
// shows that text. The head kept decodes to at least keep bytes of text
// (each plain byte and escape as written is at least one byte of text),
// and the last KiB or so of the string is kept too, so the view's trimmed
// end and what it asks of a string's end read the same. What it cannot
// shorten so (no such place near where it would cut, a literal that does
// not decode, a line that is then not JSON, a placeholder the view shows
// another way or within its head, a string that may be JSON, a value the
// view may show as a marker in or across the middle: jsonLike,
// encodedScan) is read whole.

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"

	"github.com/rookhq/rook/cas"
)

// shortTailKeep is about how many bytes of a long string's end shortLine
// keeps; shortRing how many of its last bytes it holds to find where the
// kept end starts, shortFind how far past the head's length it looks for
// where the head ends.
const (
	shortTailKeep = 1 << 10
	shortRing     = 64 << 10
	shortFind     = 64 << 10
)

var errNotShort = errors.New("not shortened")

// shortSafe says whether the view of a string is cut cleanly after byte c
// of its literal, written as it is (not in an escape): a letter or
// punctuation that is neither part of a color sequence before its end
// (ESC [ digits ;) nor white space a view trims.
func shortSafe(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		return true
	}
	switch c {
	case '.', ',', ':', '!', '?', '_', '(', ')', '/', '{', '}', '<', '>', '=', '+', '*', '&', '%', '$', '#', '@', '\'', '`', '|', '~', '-', ']':
		return true
	}
	return false
}

// shortLine is written a source line's object and keeps it, each string
// literal of its rest whose text reaches headMin bytes, and goes on for
// more than shortTailKeep bytes past where its head is cut, shortened
// (see the top of this file).
type shortLine struct {
	headMin int64
	head    sourceHead // the object's head, until decoded
	sl      sourceLine
	started bool
	rest    []byte // the rest kept
	restPos int64  // bytes of the rest read
	cutPos  []int64
	removed []int64 // bytes left out before each of import's cuts
	gone    int64   // bytes left out so far
	inStr   bool
	tok     int   // 0; -1 after a backslash; 1-4 hex digits to come
	cl      int64 // bytes of the string's content read
	tokens  int64 // plain bytes and escapes in them: its text has at least as many bytes
	strAt   int   // where the string's literal starts in rest
	middle  bool  // past the head kept
	ring    []byte
	ringOK  []bool // the view may be cut after ring[i]
	dec     *inlineDecoder
	count   *tailCount
	enc     encodedScan // of the middle: whether the view may mask a value in it
	raw     utf8Stream
	// What is left out of the line: its bytes as stored; and of each
	// string shortened, the view of its middle left out.
	size  int64
	views []int64
	err   error
}

// shortMark is the character a shortened string's middle is replaced by,
// twice, around its number and a newline (shortPlaceholder): how often
// the view shows it says how often it shows the middle's text.
const shortMark = "\U000F0003"

// shortPlaceholder is the middle of shortened string k as its literal
// holds it, and as the view shows it.
func shortPlaceholder(k int) (lit, view string) {
	n := strconv.Itoa(k)
	return shortMark + n + `\n` + shortMark, shortMark + n + "\n" + shortMark
}

func (s *shortLine) Write(p []byte) (int, error) {
	n := len(p)
	if s.err != nil {
		return n, s.err
	}
	if !s.started {
		sl, _, rest, done, over := s.head.take(p)
		if !done {
			if over {
				s.err = errNotShort
			}
			return n, s.err
		}
		s.sl, s.started, p = sl, true, rest
		var at int64
		for _, c := range sl.Cuts {
			at += int64(c.Gap)
			s.cutPos = append(s.cutPos, at)
		}
	}
	for _, c := range p {
		s.byte(c)
	}
	return n, s.err
}

func (s *shortLine) byte(c byte) {
	for len(s.removed) < len(s.cutPos) && s.cutPos[len(s.removed)] == s.restPos {
		if s.inStr {
			s.err = errNotShort // a cut inside a string: not import's
			return
		}
		s.removed = append(s.removed, s.gone)
	}
	s.restPos++
	if !s.inStr {
		if c == '"' {
			s.inStr, s.tok, s.cl, s.tokens, s.middle = true, 0, 0, 0, false
			s.strAt = len(s.rest) + 1
		}
		s.rest = append(s.rest, c)
		return
	}
	starts := s.tok == 0
	switch {
	case starts && c == '"':
		s.endString()
		s.rest = append(s.rest, c)
		return
	case starts && c == '\\':
		s.tok = -1
	case s.tok == -1 && c == 'u':
		s.tok = 4
	case s.tok == -1:
		s.tok = 0
	case s.tok > 0:
		s.tok--
	}
	safe := starts && shortSafe(c)
	s.cl++
	if starts {
		s.tokens++
	}
	if !s.middle {
		s.rest = append(s.rest, c)
		if s.tokens >= s.headMin && safe {
			if jsonLike(s.rest[s.strAt:]) {
				// Its view may be the JSON it holds, decoded
				// (Codex's wrapped output, a call's arguments) or
				// masked (an image's base64): the whole's.
				s.err = errNotShort
				return
			}
			s.middle = true
			s.enc = encodedScan{w: s.count}
			s.dec = &inlineDecoder{w: &s.enc, esc: true}
			s.ring, s.ringOK = s.ring[:0], s.ringOK[:0]
		} else if s.tokens > s.headMin+shortFind {
			s.err = errNotShort
		}
		return
	}
	s.ring = append(s.ring, c)
	s.ringOK = append(s.ringOK, safe)
	if len(s.ring) >= 2*shortRing {
		s.leaveOut(shortRing)
	}
}

// leaveOut leaves the first k bytes of the ring out of the line.
func (s *shortLine) leaveOut(k int) {
	if _, err := s.dec.Write(s.ring[:k]); err != nil {
		s.err = errNotShort
		return
	}
	s.raw.write(s.ring[:k])
	s.size += int64(k)
	s.gone += int64(k)
	s.ring = s.ring[:copy(s.ring, s.ring[k:])]
	s.ringOK = s.ringOK[:copy(s.ringOK, s.ringOK[k:])]
}

// endString: the string's closing quote. A long one keeps its end from
// the last place the view may be cut at shortTailKeep bytes or more
// before it.
func (s *shortLine) endString() {
	s.inStr = false
	if !s.middle {
		return
	}
	j := -1
	for i := len(s.ring) - shortTailKeep - 1; i >= 0; i-- {
		if s.ringOK[i] {
			j = i
			break
		}
	}
	if j < 0 {
		s.err = errNotShort
		return
	}
	s.leaveOut(j + 1)
	if s.err != nil {
		return
	}
	if err := s.dec.close(); err != nil || s.enc.found || s.enc.run > 0 {
		// (A value the view may show as a marker in the middle, or
		// running on into the end kept: its view is the whole's.)
		s.err = errNotShort
		return
	}
	s.count.close()
	lit, _ := shortPlaceholder(len(s.views))
	s.views = append(s.views, s.count.view)
	*s.count = tailCount{}
	s.rest = append(append(s.rest, lit...), s.ring...)
	s.gone -= int64(len(lit))
	s.size -= int64(len(lit))
	s.middle, s.dec = false, nil
}

// jsonLike says whether a string literal's content may be JSON, as
// written: after white space, a '{', a '[' or a quote (each maybe an
// escape \u; one cut short or not hex is taken as one).
func jsonLike(lit []byte) bool {
	for i := 0; i < len(lit); i++ {
		c := lit[i]
		if c == '\\' {
			if i+1 >= len(lit) {
				return true
			}
			switch lit[i+1] {
			case 'n', 'r', 't':
				i++
				continue
			case 'u':
				v, err := strconv.ParseUint(string(lit[i+2:min(i+6, len(lit))]), 16, 16)
				if err != nil || i+6 > len(lit) {
					return true
				}
				c, i = byte(min(v, 0xff)), i+5
			default:
				c, i = lit[i+1], i+1
			}
		}
		switch c {
		case ' ', '\t', '\n', '\r':
		case '{', '[', '"':
			return true
		default:
			return false
		}
	}
	return false
}

// encodedScan passes the decoded text of a string's middle to w, and
// says whether a view may show a value in it as a marker (withoutEncoded,
// maskNestedEncoded): a quote or a comma (a data URL's) followed by
// minEncoded bytes of base64 or more (found), or by base64 at its end
// (run > 0). Such a middle is not left out: the view would count it.
type encodedScan struct {
	w     io.Writer
	after bool // the byte before was a quote or a comma
	run   int  // bytes of base64 since one
	found bool
}

func (e *encodedScan) Write(p []byte) (int, error) {
	for _, c := range p {
		switch {
		case e.run > 0 && (isBase64Byte(c) || c == '\\'):
			e.run++
			e.found = e.found || e.run >= minEncoded
		case e.after && isBase64Byte(c):
			e.run = 1
		default:
			e.run = 0
		}
		e.after = c == '"' || c == ','
	}
	return e.w.Write(p)
}

// finish places import's cuts at the rest's end, and says whether the
// object was read whole and is a line import writes.
func (s *shortLine) finish() bool {
	if s.err != nil || !s.started || s.inStr {
		return false
	}
	for len(s.removed) < len(s.cutPos) && s.cutPos[len(s.removed)] == s.restPos {
		s.removed = append(s.removed, s.gone)
	}
	return len(s.removed) == len(s.cutPos)
}

// inlineHead is readBodyHead of the imported line of object o, a big
// one, each string left in its line shortened as it streams (shortLine)
// and each cut from it to keep bytes of text. ok is false when it cannot
// give exactly what the line read whole gives: the line is then read
// whole, which reports a read that fails.
func (r *Rook) inlineHead(o *cas.ObjectReader, keep int) (bodyHead, bool) {
	s := &shortLine{headMin: int64(keep), count: &tailCount{}}
	// (A line with nothing left out is read whole: it is small enough.)
	if _, err := o.WriteTo(s); err != nil || !s.finish() || s.size == 0 {
		return bodyHead{}, false
	}
	sl := sourceLine{Offset: s.sl.Offset, Rest: s.rest}
	prev := int64(0)
	for i, c := range s.sl.Cuts {
		at := s.cutPos[i] - s.removed[i]
		sl.Cuts = append(sl.Cuts, lineCut{Gap: int(at - prev), ID: c.ID})
		prev = at
	}
	// The cut strings' placeholders are numbered after the ones here.
	h, err := r.lineHead(sl, keep, bodyHead{imported: true, views: s.views})
	if err != nil {
		return bodyHead{}, false
	}
	// A line that is not JSON is shown as it is, not decoded: left to
	// the whole read.
	if !json.Valid(h.body) {
		return bodyHead{}, false
	}
	// What the view shows of each middle left out: its text as often as
	// the view shows its placeholder, which the line holds nowhere else;
	// shown any other way (escaped, indented), the line is read whole.
	if bytes.Count(h.body, []byte(shortMark)) != 2*len(h.views) || bytes.Contains(bytes.ToLower(h.body), []byte(`\udb80\udc03`)) {
		return bodyHead{}, false
	}
	text := renderBody(h.body, true, false)
	// The view shows each placeholder past what it shows and past a
	// head cut anywhere but in a value it may show as a marker: a view
	// of colors only may show little of the head, and the view of an
	// image's base64 is its marker.
	if i := bytes.Index(text, []byte(shortMark)); i >= 0 && i < keep-headSlack+headMargin {
		return bodyHead{}, false
	}
	for at := 0; ; {
		i := bytes.Index(text[at:], []byte(shortMark))
		if i < 0 {
			break
		}
		i += at
		j := i
		for j > 0 && (isBase64Byte(text[j-1]) || text[j-1] == '\\') {
			j--
		}
		if j < i && j > 0 && (text[j-1] == '"' || text[j-1] == ',') {
			return bodyHead{}, false
		}
		at = i + len(shortMark)
	}
	// What it leaves out is counted by the view that shows it
	// (renderHead), by the same placeholders.
	shown := 0
	for k := range h.views {
		_, ph := shortPlaceholder(k)
		shown += bytes.Count(text, []byte(ph))
	}
	if bytes.Count(text, []byte(shortMark)) != 2*shown {
		return bodyHead{}, false
	}
	h.size += s.size
	h.binary = h.binary || !s.raw.valid()
	return h, true
}
