package agent

// Search over a long string an import left in its line. The importer cuts
// a long string out of its line only when its decoded text, written back
// as a JSON literal, gives exactly its bytes (canonicalText): a string
// holding a byte that is not UTF-8, or an escape written some other way
// (a lone surrogate such as \ud83d, \/, \u00e9), stays in the line, and a
// 20 MB tool output with one such byte made the line's object 20 MB that
// search read whole, put together and decoded (174-215 MB at the peak).
//
// Such a line (its object over streamLinesOver) is now read streamed too,
// from its own object, without a
// change to what import stores (old stores read the same): a first pass
// over the object (inlineScan) makes the line's skeleton, each string of
// at least inlineCutMin bytes in it taken as a cut string of its own (an
// inline cut: a range of the object, its literal as written) beside the
// strings import cut out; each inline cut's text is then streamed from
// that range through inlineDecoder, which decodes it as
// appendDecodedString decodes it whole (as it is without a backslash, else
// as encoding/json does: a byte that is not UTF-8 and a lone surrogate are
// each a U+FFFD). What search reads of the line is then the text the whole
// read gives, and scored the same (searchText). Find streams such a line
// too (findStreamed: the line's bytes as written, writeStreamed; an inline
// cut's ends kept as written, rawEnds); show shortens its long strings as
// the object streams (bodyhead_inline.go).

import (
	"encoding/binary"
	"errors"
	"io"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/rookhq/rook/cas"
)

// inlineCutMin is the shortest string literal's content (its bytes as
// written) inlineScan takes out of a line as an inline cut. A var: the
// tests make it small.
var inlineCutMin = 64 << 10

// maxInlineCuts bounds the inline cuts of a line read streamed: each is
// read from its line's object, decoded from the object's start up to its
// end (a range of a compressed object is), twice or more, so that a line
// of n of them reads the object about n times over. A line of more is read
// whole, as before (180 strings of 66 KB on a 12 MB line: 5.4 s streamed,
// 1.1 s whole).
const maxInlineCuts = 4

// inlineRawHead is how many bytes of an inline cut's content are kept to
// tell a data URL (dataURLPayload looks at the first 128).
const inlineRawHead = 256

// errBadLiteral: a string literal of the line is not valid JSON.
var errBadLiteral = errors.New("not a JSON string literal")

// inlineDecoder writes the text of a JSON string literal's content (its
// quotes left out), written to it in pieces, as appendDecodedString
// decodes the content whole: as it is when the content has no backslash
// (esc false), else as encoding/json decodes it. close writes what the
// last piece held back.
type inlineDecoder struct {
	w     io.Writer
	esc   bool
	carry []byte
	out   []byte
	err   error
}

func (d *inlineDecoder) Write(p []byte) (int, error) {
	n := len(p)
	if d.err != nil {
		return n, d.err
	}
	if !d.esc {
		if _, err := d.w.Write(p); err != nil {
			d.err = err
		}
		return n, d.err
	}
	b := p
	if len(d.carry) > 0 {
		b = append(d.carry, p...)
	}
	rest, err := d.decode(b, false)
	if err != nil {
		d.err = err
		return n, err
	}
	d.carry = append(d.carry[:0:0], rest...)
	return n, d.flush()
}

func (d *inlineDecoder) flush() error {
	if len(d.out) > 0 {
		if _, err := d.w.Write(d.out); err != nil {
			d.err = err
		}
		d.out = d.out[:0]
	}
	return d.err
}

func (d *inlineDecoder) close() error {
	if d.err != nil || !d.esc {
		return d.err
	}
	if _, err := d.decode(d.carry, true); err != nil {
		d.err = err
		return err
	}
	d.carry = nil
	return d.flush()
}

// decode decodes b into d.out and returns what it holds back for the
// next piece (an escape or a character cut by b's end); final: no piece
// follows.
func (d *inlineDecoder) decode(b []byte, final bool) ([]byte, error) {
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == '\\':
			if i+1 >= len(b) {
				if final {
					return nil, errBadLiteral
				}
				return b[i:], nil
			}
			switch e := b[i+1]; e {
			case '"', '\\', '/', '\'':
				d.out = append(d.out, e)
			case 'b':
				d.out = append(d.out, '\b')
			case 'f':
				d.out = append(d.out, '\f')
			case 'n':
				d.out = append(d.out, '\n')
			case 'r':
				d.out = append(d.out, '\r')
			case 't':
				d.out = append(d.out, '\t')
			case 'u':
				if i+6 > len(b) {
					if final {
						return nil, errBadLiteral
					}
					return b[i:], nil
				}
				rr := getu4(b[i:])
				if rr < 0 {
					return nil, errBadLiteral
				}
				if utf16.IsSurrogate(rr) {
					// encoding/json: a pair is one character, a
					// surrogate alone U+FFFD.
					if i+12 > len(b) && !final {
						return b[i:], nil
					}
					if dec := utf16.DecodeRune(rr, getu4(b[i+6:])); dec != utf8.RuneError {
						d.out = utf8.AppendRune(d.out, dec)
						i += 12
						continue
					}
					rr = utf8.RuneError
				}
				d.out = utf8.AppendRune(d.out, rr)
				i += 6
				continue
			default:
				return nil, errBadLiteral
			}
			i += 2
		case c < 0x20 || c == '"':
			return nil, errBadLiteral
		case c < utf8.RuneSelf:
			d.out = append(d.out, c)
			i++
		default:
			if !final && !utf8.FullRune(b[i:]) {
				return b[i:], nil
			}
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				d.out = utf8.AppendRune(d.out, utf8.RuneError)
			} else {
				d.out = append(d.out, b[i:i+size]...)
			}
			i += size
		}
	}
	return nil, nil
}

// getu4 is encoding/json's: the \uXXXX at the start of s, or -1.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c = c - '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// inlineCut is a string literal left in an imported line, taken out of
// its skeleton (inlineScan): its content (quotes left out) is bytes
// [from, from+n) of the line's object.
type inlineCut struct {
	from, n   int64
	backslash bool   // an escape in it: decoded as encoding/json does
	b64       bool   // isBase64 of the content
	head      []byte // its first inlineRawHead bytes
	// What find reads of the content as written (findSpans, miniLine):
	// whether it is UTF-8, and its ends, each at least cutKeep bytes,
	// cut where an escape or a character starts (the whole content, in
	// rawHead, when it ends before that head does).
	utf      utf8Stream
	tok      int // 0: the next byte starts an escape or a plain byte; -1: after a backslash; 1-4: hex digits to come
	rawHead  []byte
	headDone bool
	rawTail  []byte
	tailTok  []bool // rawTail[i] starts an escape or a plain byte
}

// rawByte follows byte c of the content as written: its ends kept, its
// escapes followed.
func (u *inlineCut) rawByte(c byte) {
	starts := u.tok == 0
	switch {
	case u.tok == 0 && c == '\\':
		u.tok = -1
	case u.tok == -1 && c == 'u':
		u.tok = 4
	case u.tok == -1:
		u.tok = 0
	case u.tok > 0:
		u.tok--
	}
	if !u.headDone {
		if len(u.rawHead) >= cutKeep && starts && utf8.RuneStart(c) {
			u.headDone = true
		} else {
			u.rawHead = append(u.rawHead, c)
		}
	}
	u.rawTail = append(u.rawTail, c)
	u.tailTok = append(u.tailTok, starts)
	if len(u.rawTail) >= 4*cutKeep {
		k := len(u.rawTail) - 2*cutKeep
		u.rawTail = u.rawTail[:copy(u.rawTail, u.rawTail[k:])]
		u.tailTok = u.tailTok[:copy(u.tailTok, u.tailTok[k:])]
	}
}

// rawEnds is the content's first and last bytes as find keeps them
// (whole: all of it, in head); ok is false when its end holds no place
// an escape or a character starts at.
func (u *inlineCut) rawEnds() (head, tail []byte, whole, ok bool) {
	if !u.headDone {
		return u.rawHead, nil, true, true
	}
	for i := max(len(u.rawTail)-cutKeep, 0); i < len(u.rawTail); i++ {
		if u.tailTok[i] && utf8.RuneStart(u.rawTail[i]) {
			if u.n-int64(len(u.rawTail)-i) < int64(len(u.rawHead)) {
				break // the tail would reach into the head
			}
			return u.rawHead, u.rawTail[i:], false, true
		}
	}
	return nil, nil, false, false
}

// findEncoded is encodedValue of the content as written under key, and
// its marker (encodedMarker); ok is false when it cannot be told from
// what was kept (a data URL).
func (u *inlineCut) findEncoded(key string) (enc bool, marker string, ok bool) {
	enc, ok = u.encoded(key)
	if !enc || !ok {
		return false, "", ok
	}
	// Not a data URL: its "data:…;base64," is not base64 (u.b64).
	return true, markEncoded(key, u.head, false, u.n), true
}

// encoded is encodedValue of the string under key; ok is false when it
// cannot be told from what was kept (a data URL: read the line whole).
func (c *inlineCut) encoded(key string) (enc, ok bool) {
	if encodedKeys[key] && c.n >= minEncoded && c.b64 {
		return true, true
	}
	if dataURLPayload(c.head) > 0 {
		return false, false
	}
	return false, true
}

// inlineScan is the first pass over an imported line's object: its head
// decoded, then the skeleton of its line made as streamedOf makes it,
// each string literal of at least inlineCutMin bytes of content taken
// out as an inline cut too.
type inlineScan struct {
	head    sourceHead
	sl      sourceLine // once the head is read: its cuts, no rest
	headLen int64
	started bool
	restPos int64 // bytes of the rest read
	nextCut int   // the first of sl.Cuts not placed yet
	cutPos  int64 // where it goes in the rest

	skel  []byte
	cuts  []scanCut
	inStr bool
	esc   int // 0; 1: after a backslash; 2-5: hex digits to come, +1
	lit   []byte
	cur   *inlineCut // the long literal being read
	pendB bool       // its last byte a backslash (isBase64's \/)
	err   error
}

// scanCut is a cut of the line, in order: import's (real >= 0, the index
// in sl.Cuts) or an inline one; skelQ is where its placeholder starts in
// the skeleton, restAt where it is in the rest (an inline cut: its
// opening quote), restEnd where the rest goes on after it.
type scanCut struct {
	real    int
	inline  *inlineCut
	skelQ   int
	restAt  int64
	restEnd int64
}

func (s *inlineScan) Write(p []byte) (int, error) {
	n := len(p)
	if s.err != nil {
		return n, s.err
	}
	if !s.started {
		sl, hl, rest, done, over := s.head.take(p)
		if !done {
			if over {
				s.err = errBadSourceLine
			}
			return n, s.err
		}
		s.sl, s.headLen, s.started, p = sl, int64(hl), true, rest
		s.placeCuts()
	}
	s.rest(p)
	return n, s.err
}

// placeCuts puts import's cuts that go where the rest is now.
func (s *inlineScan) placeCuts() {
	for s.nextCut < len(s.sl.Cuts) {
		pos := s.cutPos + int64(s.sl.Cuts[s.nextCut].Gap)
		if pos != s.restPos {
			return
		}
		if s.inStr {
			s.err = errBadSourceLine // a cut inside a string: not import's
			return
		}
		s.cuts = append(s.cuts, scanCut{real: s.nextCut, skelQ: len(s.skel), restAt: pos, restEnd: pos})
		s.skel = append(s.skel, placeholder...)
		s.cutPos = pos
		s.nextCut++
	}
}

func (s *inlineScan) rest(p []byte) {
	for len(p) > 0 && s.err == nil {
		// Up to the next cut of import's, at most.
		k := len(p)
		if s.nextCut < len(s.sl.Cuts) {
			k = int(min(int64(k), s.cutPos+int64(s.sl.Cuts[s.nextCut].Gap)-s.restPos))
		}
		s.bytes(p[:k])
		p = p[k:]
		s.placeCuts()
	}
}

// bytes reads b, bytes of the rest from restPos on.
func (s *inlineScan) bytes(b []byte) {
	for i := 0; i < len(b) && s.err == nil; i++ {
		c := b[i]
		if !s.inStr {
			if c == '"' {
				s.inStr, s.esc, s.lit = true, 0, s.lit[:0]
			} else {
				s.skel = append(s.skel, c)
			}
			s.restPos++
			continue
		}
		switch {
		case s.esc == 1:
			switch c {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.esc = 0
			case 'u':
				s.esc = 5
			default:
				s.err = errBadLiteral
			}
		case s.esc > 1:
			if !isHex(c) {
				s.err = errBadLiteral
			}
			if s.esc--; s.esc == 1 {
				s.esc = 0
			}
		case c == '"':
			s.endString()
			s.restPos++
			continue
		case c < 0x20:
			s.err = errBadLiteral
		case c == '\\':
			s.esc = 1
		}
		if s.cur == nil {
			s.lit = append(s.lit, c)
			if len(s.lit) >= inlineCutMin {
				s.startInline()
			}
		} else {
			s.inlineByte(c)
		}
		s.restPos++
	}
}

// startInline takes the literal being read, long enough, as an inline cut.
func (s *inlineScan) startInline() {
	from := s.restPos + 1 - int64(len(s.lit)) // its content's start in the rest
	s.cur = &inlineCut{from: from, b64: true}
	s.cuts = append(s.cuts, scanCut{real: -1, inline: s.cur, skelQ: len(s.skel), restAt: from - 1})
	s.skel = append(s.skel, placeholder...)
	for _, c := range s.lit {
		s.inlineByte(c)
	}
	s.lit = s.lit[:0]
}

func (s *inlineScan) inlineByte(c byte) {
	u := s.cur
	if len(u.head) < inlineRawHead {
		u.head = append(u.head, c)
	}
	u.n++
	one := [1]byte{c}
	u.utf.write(one[:])
	u.rawByte(c)
	if c == '\\' {
		u.backslash = true
	}
	switch {
	case s.pendB:
		u.b64 = u.b64 && c == '/'
		s.pendB = false
	case c == '\\':
		s.pendB = true
	case !isBase64Byte(c):
		u.b64 = false
	}
}

func (s *inlineScan) endString() {
	s.inStr = false
	if s.cur == nil {
		s.skel = append(append(append(s.skel, '"'), s.lit...), '"')
		return
	}
	if s.pendB {
		s.cur.b64, s.pendB = false, false
	}
	s.cuts[len(s.cuts)-1].restEnd = s.restPos + 1
	s.cur = nil
}

// decodeSourceHead is decodeSourceLine of what comes before the rest:
// ok is false until b holds all of it.
func decodeSourceHead(b []byte) (sourceLine, int, bool) {
	var sl sourceLine
	if len(b) < 1 || b[0] != sourceLineVersion {
		return sl, 0, false
	}
	p := 1
	off, n := binary.Uvarint(b[p:])
	if n <= 0 || off > 1<<53 {
		return sl, 0, false
	}
	p += n
	count, n := binary.Uvarint(b[p:])
	if n <= 0 || count > maxCuts {
		return sl, 0, false
	}
	p += n
	sl.Offset = int64(off)
	for i := uint64(0); i < count; i++ {
		gap, n := binary.Uvarint(b[p:])
		if n <= 0 || len(b)-p-n < len(cas.Key{}) {
			return sl, 0, false
		}
		p += n
		var c lineCut
		c.Gap = int(min(gap, 1<<40))
		copy(c.ID[:], b[p:])
		p += len(c.ID)
		sl.Cuts = append(sl.Cuts, c)
	}
	return sl, p, true
}

// sourceHead gathers the head of a source line's object from the pieces
// a stream writes it in, for the writers that read the rest as it comes
// (shortLine, inlineScan).
type sourceHead struct{ buf []byte }

// take adds p to what is gathered. Once the head is whole, done is true
// and rest is what came after it; over is true while it is not whole
// after more bytes than any head has (the object is not a source line).
func (h *sourceHead) take(p []byte) (sl sourceLine, hl int, rest []byte, done, over bool) {
	h.buf = append(h.buf, p...)
	sl, hl, done = decodeSourceHead(h.buf)
	if !done {
		return sl, 0, nil, false, len(h.buf) > sourceLineHeadMax(maxCuts)
	}
	rest, h.buf = h.buf[hl:], nil
	return sl, hl, rest, true, false
}

// inlineStreamedOf prepares imported line id (its object size bytes) to
// be read streamed when it holds a string of inlineCutMin bytes or more
// that import left in it; nil otherwise, or when a read fails or the line
// is not what import writes (the whole path then reads it, and says what
// failed). size is the line's size as readBodyOrStream counts it.
func (r *Rook) inlineStreamedOf(id cas.Key) (s *streamedLine, size int64) {
	if readWhole {
		return nil, 0
	}
	o, err := r.Store.OpenObject(id)
	if err != nil {
		return nil, 0
	}
	sc := &inlineScan{}
	if _, err := o.WriteTo(sc); err != nil || sc.err != nil || !sc.started || sc.inStr || sc.nextCut < len(sc.sl.Cuts) {
		return nil, 0
	}
	inline := 0
	for _, c := range sc.cuts {
		if c.inline != nil {
			inline++
		}
	}
	if inline == 0 || inline > maxInlineCuts {
		return nil, 0
	}
	s = &streamedLine{sl: sc.sl, id: id, headBytes: sc.headLen, skel: sc.skel, inline: make([]*inlineCut, len(sc.cuts)), real: make([]int, len(sc.cuts)),
		cuts: make([]cutScan, len(sc.cuts))}
	size = sc.restPos
	for i, c := range sc.cuts {
		cs := &s.cuts[i]
		cs.lastNon = -1
		s.real[i] = c.real
		if c.inline != nil {
			s.inline[i] = c.inline
			s.binary = s.binary || !c.inline.utf.valid()
			if err := r.writeCutText(s, i, cs); err != nil {
				return nil, 0
			}
		} else {
			s.realRest = append(s.realRest, c.restAt)
			o, err := r.Store.OpenObject(sc.sl.Cuts[c.real].ID)
			if err != nil {
				return nil, 0
			}
			if _, err := o.WriteTo(cs); err != nil {
				return nil, 0
			}
			size += o.Size()
		}
		cs.finish()
		if c.inline != nil {
			cs.escLen = c.inline.n
		}
	}
	// The pieces of the line between the cuts, as streamedOf lays them.
	var pos, restP int64
	skelP := 0
	for i, c := range sc.cuts {
		s.restAt = append(s.restAt, pos)
		s.skelAt = append(s.skelAt, skelP)
		pos += c.restAt - restP
		skelP += int(c.restAt - restP)
		if skelP != c.skelQ {
			return nil, 0 // never so
		}
		s.skelQ = append(s.skelQ, c.skelQ)
		s.realQ = append(s.realQ, pos)
		pos += s.cuts[i].escLen + 2
		skelP += len(placeholder)
		restP = c.restEnd
	}
	s.restAt = append(s.restAt, pos)
	s.skelAt = append(s.skelAt, skelP)
	s.total = pos + sc.restPos - restP
	s.inlineCuts = inline
	return s, size
}

// writeCutText writes the text of the line's cut k to w: an inline cut's
// decoded from its range of the line's object, import's from its own.
func (r *Rook) writeCutText(s *streamedLine, k int, w io.Writer) error {
	var u *inlineCut
	if s.inline != nil {
		u = s.inline[k]
	}
	if u == nil {
		real := k // cut k of the line is import's cut real[k]
		if s.real != nil {
			real = s.real[k]
		}
		id := s.sl.Cuts[real].ID
		o, err := r.Store.OpenObject(id)
		if err != nil {
			return err
		}
		_, err = o.WriteTo(w)
		return err
	}
	o, err := r.Store.OpenObject(s.id)
	if err != nil {
		return err
	}
	dec := &inlineDecoder{w: w, esc: u.backslash}
	rw := &rangeWriter{w: dec, skip: s.headBytes + u.from, n: u.n}
	if _, err := o.WriteTo(rw); err != nil && !errors.Is(err, errEnough) {
		return err
	}
	if rw.n != 0 {
		return io.ErrUnexpectedEOF
	}
	return dec.close()
}
