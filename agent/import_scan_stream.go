package agent

// Find and search over a big imported line, streamed. An imported event's
// body is its source line with the long strings cut out of it (sourceLine):
// find matched against the line put back together (sl.expand), and search
// against its text (textOfImported), each held whole: a line holding a
// 24 MiB tool output cost hundreds of MiB for each. A line of more than
// streamLinesOver (its cut strings' text and the rest of it) is now read
// in pieces instead:
//
//   - each cut string's object is streamed once first (cutScan) for what
//     the whole-line path asked of its bytes: its escaped length, whether
//     it is UTF-8, base64 or a data URL (encodedValue), whether JSON with
//     an encoded value may be written in it (appendNestedEncoded), and its
//     first and last KiB;
//   - the line with each cut string replaced by the placeholder "x" (its
//     skeleton) is parsed as the line was: the keys, the strings that are
//     not cut, the encoded values outside the cut strings;
//   - then the line, or its text, is streamed (writeLine, or each string's
//     text) through the matcher or the scorer, which keep a few KiB.
//
// A long string import left in the line (not cut: not UTF-8, or escaped
// another way) is taken out of it here as an inline cut, read from the
// line's own object (search_inline.go): search decodes it as it
// streams, find reads it as written.
//
// Whatever the streamed path cannot give exactly as the whole-line path
// does, it does not try: the line is then read whole, as before. That is a
// cut string that is not UTF-8 (import never cuts one), may hold JSON with an encoded value in it
// (`"data`, `"base64"`, `"signature"`, `"encrypted_content"` in its text),
// a Codex argument or output of at most maxCodexJSONString that starts
// with '{' (search reads its JSON), a skeleton line that is not JSON, a
// body that is binary, any read error (the whole path reports it as it
// always has), or a decoded line of search's text longer than
// streamTextLine with two bytes that are not UTF-8 in a row, when it is
// the best line (search_longline.go: its snippet is cut whole; such a
// line is scored as it is written otherwise).

import (
	"bytes"
	"errors"
	"hash/maphash"
	"io"
	"sort"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/internal/units"
)

// streamLinesOver is the size (the cut strings' text and the rest of the
// line) past which find and search read an imported line streamed. A var:
// the tests stream every line to compare the two paths.
var streamLinesOver int64 = 4 << 20

// streamTextLine bounds a line of search's text (a string's text up to a
// newline) the streamed search holds; a longer one is scored as it is
// written (longLine). A var: the tests stream short lines too.
var streamTextLine = 1 << 20

// cutKeep is how many bytes of text the streamed paths keep of each end of
// a cut string: a find snippet reads at most SnippetRunes characters of 4
// bytes (escaped: 6 a byte) past a match, in a neighbouring string.
const cutKeep = 1 << 10

// errNotStreamed: the line cannot be read streamed exactly; it is read whole.
var errNotStreamed = errors.New("not streamed")

// cutScan is what the streamed paths know of one cut string's text, read
// once from its object.
type cutScan struct {
	size     int64 // text bytes
	escLen   int64 // jsonEscapedLen of the text
	utf      utf8Stream
	allB64   bool  // every byte so far a base64 character
	lastNon  int64 // the last byte that is not a base64 character, -1
	nested   bool  // a needle of appendNestedEncoded in the text
	first    byte  // the text's first byte
	headText []byte
	tailText []byte
	over     []byte // the last bytes of the previous piece, for needles
	// esc: the whole text escaped, when it is at most 2*cutKeep bytes;
	// else head and tail, the escapes of its first and last cutKeep bytes.
	esc, head, tail []byte
	valid           bool
}

// nestedNeedles are what appendNestedEncoded looks for, as a decoded
// text has them (escaped, each quote is \", and found the same way).
var nestedNeedles = [][]byte{[]byte(`"base64"`), []byte(`"data`), []byte(`"encrypted_content"`), []byte(`"signature"`)}

func (c *cutScan) Write(p []byte) (int, error) {
	if c.size == 0 && len(p) > 0 {
		c.first = p[0]
	}
	for i, b := range p {
		if !isBase64Byte(b) {
			c.lastNon = c.size + int64(i)
		}
	}
	c.escLen += jsonEscapedLen(p)
	c.utf.write(p)
	if !c.nested {
		// A needle in p, or across the end of the previous piece.
		const over = len(`"encrypted_content"`) - 1
		seam := append(c.over, p[:min(len(p), over)]...)
		for _, n := range nestedNeedles {
			if bytes.Contains(p, n) || bytes.Contains(seam, n) {
				c.nested = true
			}
		}
		if len(p) >= over {
			c.over = append(c.over[:0], p[len(p)-over:]...)
		} else {
			c.over = append(c.over[:0], seam[max(0, len(seam)-over):]...)
		}
	}
	if room := 2*cutKeep - len(c.headText); room > 0 {
		c.headText = append(c.headText, p[:min(room, len(p))]...)
	}
	// The last 2*cutKeep bytes at most (finish takes cutKeep of them).
	if len(p) >= 2*cutKeep {
		c.tailText = append(c.tailText[:0], p[len(p)-2*cutKeep:]...)
	} else {
		c.tailText = append(c.tailText, p...)
		if len(c.tailText) > 2*cutKeep {
			c.tailText = c.tailText[:copy(c.tailText, c.tailText[len(c.tailText)-2*cutKeep:])]
		}
	}
	c.size += int64(len(p))
	return len(p), nil
}

func (c *cutScan) finish() {
	c.valid = c.utf.valid()
	c.allB64 = c.size > 0 && c.lastNon < 0
	if c.size <= 2*cutKeep {
		c.esc = appendJSONString(nil, c.headText)
		c.esc = c.esc[1 : len(c.esc)-1]
		c.head, c.tail = c.esc, nil
	} else {
		h := appendJSONString(nil, c.headText[:cutKeep])
		c.head = h[1 : len(h)-1]
		t := appendJSONString(nil, c.tailText[len(c.tailText)-cutKeep:])
		c.tail = t[1 : len(t)-1]
	}
	c.headText, c.tailText, c.over = nil, nil, nil
}

func isBase64Byte(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
		c == '+' || c == '/' || c == '=' || c == '-' || c == '_'
}

// escHead is the first bytes of the string's escaped content: all of it
// when kept whole.
func (c *cutScan) escHead() []byte { return c.head }

// dataURL is isDataURL of the escaped content.
func (c *cutScan) dataURL() bool {
	h := c.escHead()
	i := dataURLPayload(h)
	if i <= 0 || int64(i) >= c.escLen {
		return false
	}
	// The rest of the content past the head: the text past the head's
	// bytes, all base64 (so written as it is).
	headText := int64(min(c.size, cutKeep))
	if c.esc != nil {
		headText = c.size
	}
	return (i == len(h) || isBase64(h[i:])) && c.lastNon < headText
}

// encoded is encodedValue of the cut string under key.
func (c *cutScan) encoded(key string) bool {
	if encodedKeys[key] && c.escLen >= minEncoded && c.allB64 {
		return true
	}
	return c.dataURL()
}

// marker is encodedMarker of the cut string under key.
func (c *cutScan) marker(key string) string {
	what := "base64"
	h := c.escHead()
	switch {
	case key == "signature":
		what = "signature"
	case key == "encrypted_content":
		what = "encrypted"
	case c.dataURL():
		what = "data"
		if bytes.HasPrefix(h, []byte("data:image/")) {
			what = "image"
		}
	case isImageBase64(h):
		what = "image"
	}
	return "[" + what + " " + units.Bytes(c.escLen) + "]"
}

// streamedLine is an imported line prepared to be read streamed.
type streamedLine struct {
	sl    sourceLine
	cuts  []cutScan
	skel  []byte  // the line, each cut string the literal "x"
	skelQ []int   // where each cut's placeholder starts in skel
	realQ []int64 // and its literal in the line
	total int64   // the line's bytes (len of sl.expand)
	// pieces: piece i of rest starts at restAt[i] in the line and skelAt[i]
	// in the skeleton.
	restAt []int64
	skelAt []int
	// A line read from its own object with strings import left in it
	// (inlineStreamedOf): id is the object, headBytes where its rest
	// starts in it; cut k is inline[k] when not nil, else import's cut
	// real[k]; inlineCuts counts the inline ones. sl then has no rest.
	id         cas.Key
	headBytes  int64
	inline     []*inlineCut
	real       []int
	inlineCuts int
	// realRest: where each of import's cuts goes in the object's rest;
	// binary: an inline cut's content as written is not UTF-8 (the line
	// is binary to IsBinary).
	realRest []int64
	binary   bool
}

// placeholder is what a cut string is in the skeleton.
const placeholder = `"x"`

// readBodyOrStream is readBodyWithin, but for an imported line over
// streamLinesOver (and within max), which it prepares to be read streamed
// instead (s) of putting it together.
func (r *Rook) readBodyOrStream(id cas.Key, max int64) (body []byte, imported bool, s *streamedLine, err error) {
	if info, err := r.Store.StatEntry(id); err == nil && info.Kind == cas.KindSource && info.Size > streamLinesOver {
		// A big line's object: a long string import left in it
		// (search_inline.go) is not read whole either.
		if s, size := r.inlineStreamedOf(id); s != nil {
			if size > max {
				return nil, true, nil, errBodyTooLarge
			}
			return nil, true, s, nil
		}
	}
	b, kind, err := r.Store.GetKind(id)
	if err != nil || kind != cas.KindSource {
		return b, false, nil, err
	}
	sl, err := decodeSourceLine(b)
	if err != nil {
		return nil, true, nil, &cas.CorruptError{ID: id, Reason: err.Error()}
	}
	// The line's size as expandSource counts it.
	size, stated := r.lineSize(sl)
	if stated && size > streamLinesOver && size <= max {
		if s := r.streamedOf(sl); s != nil {
			return nil, true, s, nil
		}
	}
	if size > max {
		return nil, true, nil, errBodyTooLarge
	}
	body, err = sl.expand(r.Store.Get)
	return body, true, nil, err
}

// streamedOf prepares source line sl to be read streamed: its cut
// strings scanned (cutScan), its skeleton made. nil when it has no cut
// string, or a read fails: the whole path reads it then, and says what
// failed.
func (r *Rook) streamedOf(sl sourceLine) *streamedLine {
	if readWhole || len(sl.Cuts) == 0 {
		return nil
	}
	s := &streamedLine{sl: sl, cuts: make([]cutScan, len(sl.Cuts))}
	for i, c := range sl.Cuts {
		o, err := r.Store.OpenObject(c.ID)
		if err != nil {
			return nil
		}
		cs := &s.cuts[i]
		cs.lastNon = -1
		if _, err := o.WriteTo(cs); err != nil {
			return nil
		}
		cs.finish()
	}
	p := 0
	var pos int64
	for i, c := range sl.Cuts {
		s.restAt = append(s.restAt, pos)
		s.skelAt = append(s.skelAt, len(s.skel))
		s.skel = append(s.skel, sl.Rest[p:p+c.Gap]...)
		pos += int64(c.Gap)
		p += c.Gap
		s.skelQ = append(s.skelQ, len(s.skel))
		s.realQ = append(s.realQ, pos)
		s.skel = append(s.skel, placeholder...)
		pos += s.cuts[i].escLen + 2
	}
	s.restAt = append(s.restAt, pos)
	s.skelAt = append(s.skelAt, len(s.skel))
	s.skel = append(s.skel, sl.Rest[p:]...)
	s.total = pos + int64(len(sl.Rest)-p)
	return s
}

// cutAt is the cut whose placeholder starts at skel[q], or -1.
func (s *streamedLine) cutAt(q int) int {
	i := sort.SearchInts(s.skelQ, q)
	if i < len(s.skelQ) && s.skelQ[i] == q {
		return i
	}
	return -1
}

// realOf maps an offset of the skeleton outside the placeholders to the
// line.
func (s *streamedLine) realOf(q int) int64 {
	i := sort.Search(len(s.skelAt), func(i int) bool { return s.skelAt[i] > q }) - 1
	return s.restAt[i] + int64(q-s.skelAt[i])
}

// searchText is what Search scores of the line, streamed: the score and
// snippet scoreBody gives of textOfImported of the line, and the hash of
// that text. errNotStreamed: read the line whole.
func (r *Rook) searchText(s *streamedLine, terms, gaps [][]byte, seed maphash.Seed) (int, string, uint64, error) {
	sc := &textScorer{score: bodyScore{terms: terms, gaps: gaps, keep: true}, cut: -1}
	sc.hash.SetSeed(seed)
	skel := s.skel
	inlineSeen := 0 // inline cuts read as string values
	for lineStart := 0; lineStart < len(skel); {
		line := skel[lineStart:]
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line = line[:i]
		}
		next := lineStart + len(line) + 1
		entry := entryBytes(line)
		eOff := lineStart + len(line) - len(entry)
		strs, ok := stringValues(entry, len(`"x"`))
		if !ok {
			for _, q := range s.skelQ {
				if q >= lineStart && q < lineStart+len(line) {
					return 0, "", 0, errNotStreamed
				}
			}
			sc.Write(line)
			sc.Write([]byte("\n"))
			lineStart = next
			continue
		}
		var out []byte
		for i := range strs {
			st := &strs[i]
			k := s.cutAt(eOff + st.Start)
			if k < 0 {
				out = appendStringValue(out[:0], entry, st, false)
				sc.Write(out)
				continue
			}
			c := &s.cuts[k]
			enc := false
			if u := s.inlineCut(k); u != nil {
				inlineSeen++
				var ok bool
				if enc, ok = u.encoded(st.Key); !ok {
					return 0, "", 0, errNotStreamed
				}
			} else {
				enc = c.encoded(st.Key)
			}
			if notText(st) || enc {
				continue
			}
			// (A text that is not UTF-8, an inline cut's, is scored as
			// the whole path scores it; a long line of it, as longLine
			// can. An import's cut that is not UTF-8, which import never
			// writes, is not: the whole path decodes it as JSON, each
			// such byte a U+FFFD, when it holds an escape.)
			if u := s.inlineCut(k); u == nil && !c.valid || c.nested || codexJSONString(st) && c.size <= maxCodexJSONString && c.first == '{' {
				return 0, "", 0, errNotStreamed
			}
			sc.cut, sc.off = k, 0
			if err := r.writeCutText(s, k, sc); err != nil {
				return 0, "", 0, errNotStreamed
			}
			sc.Write([]byte("\n"))
			sc.cut = -1
		}
		lineStart = next
	}
	if sc.long || inlineSeen != s.inlineCuts {
		// (An inline cut that is not a string value: a key.)
		return 0, "", 0, errNotStreamed
	}
	sc.flush()
	if sc.long {
		return 0, "", 0, errNotStreamed
	}
	score, snip := sc.score.result()
	if ref := sc.score.long; ref != nil && score > 0 {
		// The best line, scored streamed: read again for its snippet.
		var ok bool
		if snip, ok = r.longSnippet(s, ref); !ok {
			return 0, "", 0, errNotStreamed
		}
	}
	return score, snip, sc.hash.Sum64(), nil
}

// textScorer scores a text written in pieces line by line (bodyScore),
// holding one line at a time, and hashes it. A line of a cut string's
// text longer than streamTextLine is scored as it is written instead
// (longLine), not held.
type textScorer struct {
	score bodyScore
	hash  maphash.Hash
	line  []byte
	long  bool // a line that cannot be scored streamed: given up
	// cut: the cut string whose text is being written (-1: none), off:
	// how much of it.
	cut   int
	off   int64
	ll    *longLine // the line being scored streamed
	llRef longRef
}

func (t *textScorer) Write(p []byte) (int, error) {
	n := len(p)
	if t.long {
		return n, nil
	}
	t.hash.Write(p)
	for len(p) > 0 && !t.long {
		i := bytes.IndexByte(p, '\n')
		seg := p
		if i >= 0 {
			seg = p[:i]
		}
		t.off += int64(len(seg))
		switch {
		case t.ll != nil:
			t.ll.write(seg)
			t.long = t.ll.bad
		case i >= 0 && len(t.line) == 0 && (len(seg) <= streamTextLine || t.cut < 0):
			t.score.line(seg) // a whole line, in p
		case len(t.line)+len(seg) > streamTextLine:
			t.streamLine(seg)
		default:
			if need := len(t.line) + len(seg); need > cap(t.line) {
				// Doubled: append grows a big slice by a quarter, 5
				// times the line allocated on the way to 1 MiB.
				t.line = append(make([]byte, 0, min(max(2*cap(t.line), need), streamTextLine)), t.line...)
			}
			t.line = append(t.line, seg...)
		}
		if i < 0 {
			break
		}
		t.endLine()
		t.off++
		p = p[i+1:]
	}
	return n, nil
}

// streamLine goes on with the line held, seg written after it,
// streamed.
func (t *textScorer) streamLine(seg []byte) {
	start := t.off - int64(len(t.line)+len(seg))
	if t.cut < 0 || start < 0 {
		t.long = true // not a cut string's: never so
		return
	}
	t.ll = newLongLine(t.score.terms, t.score.gaps)
	t.llRef = longRef{cut: t.cut, start: start}
	t.ll.write(t.line)
	t.ll.write(seg)
	t.line = t.line[:0]
	t.long = t.ll.bad
}

// endLine scores the line written.
func (t *textScorer) endLine() {
	if t.ll != nil {
		score, found, rank, at, ok := t.ll.finish()
		words := t.ll.words()
		t.llRef.n, t.llRef.at = t.ll.n, at
		t.ll = nil
		if !ok {
			t.long = true
			return
		}
		t.score.longLine(score, found, words, rank, t.llRef)
		return
	}
	if len(t.line) > 0 {
		t.score.line(t.line)
		t.line = t.line[:0]
	}
}

// flush scores the last line, not ended by a newline.
func (t *textScorer) flush() {
	if !t.long {
		t.endLine()
	}
}

var _ io.Writer = (*textScorer)(nil)

// longSnippet is searchSnippet of the line at ref, read again from its
// cut string's text (snippetOfLine: twice when it holds a color sequence
// longer than maxPendingSGR). ok is false when a read fails or the line
// cannot be cut streamed: the line is then read whole.
func (r *Rook) longSnippet(s *streamedLine, ref *longRef) (string, bool) {
	return snippetOfLine(ref.at, func(w io.Writer) error {
		if err := r.writeCutText(s, ref.cut, &rangeWriter{w: w, skip: ref.start, n: ref.n}); err != nil && !errors.Is(err, errEnough) {
			return err
		}
		return nil
	})
}

// inlineCut is cut k when it is an inline one, else nil.
func (s *streamedLine) inlineCut(k int) *inlineCut {
	if s.inline == nil {
		return nil
	}
	return s.inline[k]
}
