package agent

// The reading view of an imported line, streamed. RenderImported takes the
// line whole: a line holding a 24 MiB tool output was put together (its
// cut strings read back into it), decoded and rendered in memory, a few
// hundred MiB for a quote of 16 KiB. renderedStream renders the line with
// each cut string (sourceLine) replaced by a placeholder, then writes the
// result with each placeholder's string streamed from its object
// (cas.ObjectReader.WriteTo: its record's CRC checked first and its hash at
// the end, as a whole read is) through the view's clean-up (cleanView, the
// trimmed end), piece by piece: the view's bytes are those RenderImported
// gives, never held whole.
//
// That holds only where the view writes a string as it is (a tool's
// output, a reply, a thought, an argument) or as its JSON literal. Where
// the view looks into a string (a first line, a preview, whether it is
// JSON, shell words, a nested argument's layout) the renderer says so
// (dependsOn) and the line is rendered whole, as before. The few things
// the view asks of a string it writes as it is (blank? a newline in it?
// where does its first line that is not blank start? its first byte a
// brace?) are read from the string's object, a scan that stops once it
// knows; whether it ends with a newline (endLine) is seen as it is
// written (markEndLine). A view in which an encoded value may sit
// (maskNestedEncoded finds one only after one of its keys in quotes, or
// after a quote and "data:") is rendered whole too, and so is an object
// of several lines.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rookhq/rook/cas"
)

// The placeholders: private-use characters of plane 15, which no view
// gives itself. A cut string k is written in the line as the JSON literal
// "\udb80\udc00k\udb80\udc01" (its raw form, where the view writes JSON as
// it is), which decodes to U+F0000 k U+F0001 (its decoded form, where the
// view writes the text). endLine after a decoded string writes
// markEndLine: a newline unless the string ends with one.
const (
	markOpen    = "\U000F0000"
	markClose   = "\U000F0001"
	markEndLine = "\U000F0002"
	markPrefix  = "\xf3\xb0\x80" // the UTF-8 of U+F0000 to U+F003F begins so
	rawOpen     = `\udb80\udc00`
	rawClose    = `\udb80\udc01`
	rawPrefix   = `\udb80`
)

// lazyLine is what a renderer of a line with placeholders needs: the
// strings' objects, and whether the view turned out to depend on one
// (bad: the line is rendered whole).
type lazyLine struct {
	r     *Rook
	cuts  []lineCut
	props map[int]*cutProps
	bad   bool
	err   error // a string could not be read
}

// cutProps is what the view asked of a cut string, read from its object.
type cutProps struct {
	spaced    bool  // the space scan ran
	blank     bool  // nothing but white space (unicode.IsSpace)
	firstText bool  // it is not blank (readable leaves it from skip on)
	skip      int64 // where its first line that is not blank starts
	nlDone    bool  // the newline scan ran
	nl        bool  // it holds a newline
	firstDone bool
	first     int    // its first byte, -1 when empty
	head      []byte // its first bytes, up to len("data:"), as the space scan saw them
}

// hasMark says whether b holds a placeholder (or what may be one).
func hasMark(b []byte) bool {
	return bytes.Contains(b, []byte(markPrefix)) || bytes.Contains(b, []byte(rawPrefix))
}

func hasMarkString(s string) bool {
	return strings.Contains(s, markPrefix) || strings.Contains(s, rawPrefix)
}

// dependsOn: the view is made of what the values say (a first line, a
// preview): with a placeholder in one, the line is rendered whole.
func (r *renderer) dependsOn(vals ...[]byte) {
	if r.lz == nil {
		return
	}
	for _, v := range vals {
		if hasMark(v) {
			r.lz.bad = true
		}
	}
}

// dependsOnText is dependsOn of a decoded text.
func (r *renderer) dependsOnText(s string) {
	if r.lz != nil && hasMarkString(s) {
		r.lz.bad = true
	}
}

// whole is k when s is exactly the decoded placeholder of cut k.
func (lz *lazyLine) whole(s string) (int, bool) {
	if len(s) < len(markOpen)+len(markClose)+1 || s[:len(markOpen)] != markOpen || s[len(s)-len(markClose):] != markClose {
		return 0, false
	}
	k, err := strconv.Atoi(s[len(markOpen) : len(s)-len(markClose)])
	if err != nil || k < 0 || k >= len(lz.cuts) || strconv.Itoa(k) != s[len(markOpen):len(s)-len(markClose)] {
		return 0, false
	}
	return k, true
}

// prop is cut k's properties, asked reads each once.
func (lz *lazyLine) prop(k int) *cutProps {
	p := lz.props[k]
	if p == nil {
		p = &cutProps{}
		lz.props[k] = p
	}
	return p
}

// errStopScan stops a scan of a string that knows what it asked.
var errStopScan = errors.New("scan done")

// scan writes cut k's text to w until w stops it.
func (lz *lazyLine) scan(k int, w io.Writer) bool {
	o, err := lz.r.Store.OpenObject(lz.cuts[k].ID)
	if err == nil {
		_, err = o.WriteTo(w)
	}
	if err != nil && !errors.Is(err, errStopScan) {
		lz.err = fmt.Errorf("string %s of the line: %w", cas.Short(lz.cuts[k].ID), err)
		lz.bad = true
		return false
	}
	return true
}

func (lz *lazyLine) spaces(k int) *cutProps {
	p := lz.prop(k)
	if !p.spaced {
		s := &spaceScan{}
		if !lz.scan(k, s) {
			return p
		}
		if len(s.carry) > 0 {
			s.found = true // a character cut off by the end: not a space
		}
		p.spaced, p.blank, p.firstText, p.skip, p.head = true, !s.found, s.found, s.lineStart, s.head
	}
	return p
}

// spaceScan finds the first character that is not white space, and says
// whether a newline came before it.
// lineStart is where the line it is on starts (after the last newline
// before it).
type spaceScan struct {
	carry           []byte
	found, nlBefore bool
	total           int64 // bytes written before this piece
	lineStart       int64
	head            []byte // the first bytes written, up to len("data:")
}

func (s *spaceScan) Write(p []byte) (int, error) {
	n := len(p)
	if k := len("data:") - len(s.head); k > 0 {
		s.head = append(s.head, p[:min(k, len(p))]...)
	}
	b := p
	at := s.total - int64(len(s.carry)) // where b starts
	s.total += int64(n)
	if len(s.carry) > 0 {
		b = append(s.carry, p...)
		s.carry = nil
	}
	for i := 0; i < len(b); {
		if c := b[i]; c < utf8.RuneSelf {
			if c == '\n' {
				s.nlBefore, s.lineStart = true, at+int64(i)+1
			}
			if !unicode.IsSpace(rune(c)) {
				s.found = true
				return n, errStopScan
			}
			i++
			continue
		}
		if !utf8.FullRune(b[i:]) {
			s.carry = append([]byte(nil), b[i:]...)
			break
		}
		c, w := utf8.DecodeRune(b[i:])
		if !unicode.IsSpace(c) {
			s.found = true
			return n, errStopScan
		}
		i += w
	}
	return n, nil
}

type nlScan struct{ found bool }

func (s *nlScan) Write(p []byte) (int, error) {
	if bytes.IndexByte(p, '\n') >= 0 {
		s.found = true
		return len(p), errStopScan
	}
	return len(p), nil
}

type firstScan struct{ first int }

func (s *firstScan) Write(p []byte) (int, error) {
	if len(p) > 0 {
		s.first = int(p[0])
		return len(p), errStopScan
	}
	return 0, nil
}

// dataURL says whether cut k may be a data URL: it begins with "data:"
// (notEncoded then renders the line whole). Its first bytes are the
// space scan's (spaces), which the view asks for anyway: no read more.
func (lz *lazyLine) dataURL(k int) bool {
	p := lz.spaces(k)
	const prefix = "data:"
	if len(p.head) < len(prefix) {
		// cut short by the scan's first piece: what it could be
		return strings.HasPrefix(prefix, string(p.head)) && len(p.head) > 0
	}
	return strings.HasPrefix(string(p.head), prefix)
}

// readable is readable(s), of a placeholder too: its string from its
// first line that is not blank on (a placeholder that says so, k+skip,
// when that is not its start); a blank one needs the text. A text that
// is a base64 data URL (a pasted image, an MCP screenshot's text block)
// is its marker, as notEncoded makes a tool's output string one: find
// and search do not read it, and the view does not show its base64
// (a placeholder that may be one renders the line whole).
func (r *renderer) readable(s string) string {
	if r.lz == nil || !hasMarkString(s) {
		if m, ok := encodedText("", s); ok {
			return m
		}
		return readable(s)
	}
	k, ok := r.lz.whole(s)
	if !ok || r.lz.dataURL(k) {
		r.lz.bad = true
		return s
	}
	p := r.lz.spaces(k)
	switch {
	case !p.firstText:
		r.lz.bad = true
	case p.skip > 0:
		return markOpen + strconv.Itoa(k) + "+" + strconv.FormatInt(p.skip, 10) + markClose
	}
	return s
}

// hasNewline is strings.Contains(s, "\n"), of a placeholder too.
func (r *renderer) hasNewline(s string) bool {
	if r.lz == nil || !hasMarkString(s) {
		return strings.Contains(s, "\n")
	}
	k, ok := r.lz.whole(s)
	if !ok {
		r.lz.bad = true
		return false
	}
	p := r.lz.prop(k)
	if !p.nlDone {
		sc := &nlScan{}
		if !r.lz.scan(k, sc) {
			return false
		}
		p.nlDone, p.nl = true, sc.found
	}
	return p.nl
}

// startsWithBrace is strings.HasPrefix(s, "{"), of a placeholder too,
// which the text after it then needs.
func (r *renderer) startsWithBrace(s string) bool {
	if r.lz == nil || !hasMarkString(s) {
		return strings.HasPrefix(s, "{")
	}
	k, ok := r.lz.whole(s)
	if !ok {
		r.lz.bad = true
		return false
	}
	p := r.lz.prop(k)
	if !p.firstDone {
		sc := &firstScan{first: -1}
		if !r.lz.scan(k, sc) {
			return false
		}
		p.firstDone, p.first = true, sc.first
	}
	if p.first == '{' {
		r.lz.bad = true // the wrapped output is read from the text
		return true
	}
	return false
}

// noOutput is noOutput(&r.out, start), placeholders read for whether they
// are blank.
func (r *renderer) noOutput(start int) {
	b := r.out.Bytes()[start:]
	if r.lz == nil || !hasMark(b) {
		noOutput(&r.out, start)
		return
	}
	pieces, ok := splitMarks(b, len(r.lz.cuts))
	if !ok {
		r.lz.bad = true
		return
	}
	for _, p := range pieces {
		switch {
		case p.kind == pieceText && len(bytes.TrimSpace(p.text)) > 0, p.kind == pieceRaw:
			return
		case p.kind == pieceDecoded:
			if pr := r.lz.spaces(p.cut); r.lz.bad || !pr.blank {
				return
			}
		}
	}
	r.out.Truncate(start)
	r.out.WriteString("(no output)")
}

// endLine is endLine(&r.out): after a decoded placeholder, a mark the
// writing turns into a newline unless the string ends with one.
func (r *renderer) endLine() {
	b := r.out.Bytes()
	if r.lz != nil && bytes.HasSuffix(b, []byte(markEndLine)) {
		return // the text ends with a newline, either way
	}
	if r.lz != nil && bytes.HasSuffix(b, []byte(markClose)) {
		r.out.WriteString(markEndLine)
		return
	}
	endLine(&r.out)
}

// skipWriter writes to w what is written to it past its first skip bytes.
type skipWriter struct {
	w    io.Writer
	skip int64
}

func (s *skipWriter) Write(p []byte) (int, error) {
	n := len(p)
	if s.skip > 0 {
		k := min(s.skip, int64(len(p)))
		p, s.skip = p[k:], s.skip-k
	}
	if len(p) == 0 {
		return n, nil
	}
	if _, err := s.w.Write(p); err != nil {
		return 0, err
	}
	return n, nil
}

// A piece of a view rendered with placeholders.
type viewPiece struct {
	kind int
	text []byte // pieceText
	cut  int    // pieceDecoded, pieceRaw
	skip int64  // pieceDecoded: its text from this byte on
}

const (
	pieceText    = iota
	pieceDecoded // cut string's text
	pieceRaw     // its JSON literal's inside, escaped
	pieceEndLine // a newline unless the text so far ends with one
)

// splitMarks cuts b at its placeholders; false when b holds a mark that
// is not one of n strings' (the view changed a placeholder: it looked
// into it).
func splitMarks(b []byte, n int) ([]viewPiece, bool) {
	var out []viewPiece
	for len(b) > 0 {
		i, j := bytes.Index(b, []byte(markPrefix)), bytes.Index(b, []byte(rawPrefix))
		if i < 0 && j < 0 {
			out = append(out, viewPiece{kind: pieceText, text: b})
			break
		}
		if i < 0 || j >= 0 && j < i {
			i = j
		}
		if i > 0 {
			out = append(out, viewPiece{kind: pieceText, text: b[:i]})
			b = b[i:]
		}
		var open, close string
		kind := pieceDecoded
		switch {
		case bytes.HasPrefix(b, []byte(markEndLine)):
			out = append(out, viewPiece{kind: pieceEndLine})
			b = b[len(markEndLine):]
			continue
		case bytes.HasPrefix(b, []byte(markOpen)):
			open, close = markOpen, markClose
		case bytes.HasPrefix(b, []byte(rawOpen)):
			open, close, kind = rawOpen, rawClose, pieceRaw
		default:
			return nil, false
		}
		e := bytes.Index(b, []byte(close))
		if e < 0 {
			return nil, false
		}
		digits, skipDigits, hasSkip := strings.Cut(string(b[len(open):e]), "+")
		k, err := strconv.Atoi(digits)
		if err != nil || k < 0 || k >= n || strconv.Itoa(k) != digits {
			return nil, false
		}
		var skip int64
		if hasSkip {
			skip, err = strconv.ParseInt(skipDigits, 10, 64)
			if err != nil || kind != pieceDecoded || skip <= 0 || strconv.FormatInt(skip, 10) != skipDigits {
				return nil, false
			}
		}
		out = append(out, viewPiece{kind: kind, cut: k, skip: skip})
		b = b[e+len(close):]
	}
	return out, true
}

// encodedNeedles are what maskNestedEncoded looks for first: without any
// of them in a view, it leaves the view as it is.
var encodedNeedles = func() [][]byte {
	var n [][]byte
	for _, k := range encodedKeyNames {
		n = append(n, []byte(plainQuote+k+plainQuote))
	}
	return append(n, []byte(plainQuote+"data:"))
}()

// errEncodedNeedle stops a streamed view in which an encoded value may
// sit: it is rendered whole.
var errEncodedNeedle = errors.New("the view may hold an encoded value")

// needleWriter passes what is written on, stopping at any of
// encodedNeedles, across pieces too; last is the last byte written.
type needleWriter struct {
	next  io.Writer
	tail  []byte
	last  byte
	wrote bool
}

func (w *needleWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	const keep = 24 // longer than any needle
	edge := append(w.tail, p[:min(len(p), keep)]...)
	for _, n := range encodedNeedles {
		if bytes.Contains(edge, n) || bytes.Contains(p, n) {
			return 0, errEncodedNeedle
		}
	}
	if len(p) >= keep {
		w.tail = append(w.tail[:0], p[len(p)-keep:]...)
	} else {
		w.tail = append(w.tail[:0], edge[max(len(edge)-keep, 0):]...)
	}
	w.last, w.wrote = p[len(p)-1], true
	return w.next.Write(p)
}

// trimWriter holds back the spaces and newlines written last: the view
// of a line ends without them (bytes.TrimRight(text, " \n")).
type trimWriter struct {
	next io.Writer
	held []byte
}

func (w *trimWriter) Write(p []byte) (int, error) {
	i := len(p) - 1
	for i >= 0 && (p[i] == ' ' || p[i] == '\n') {
		i--
	}
	if i < 0 {
		w.held = append(w.held, p...)
		return len(p), nil
	}
	if len(w.held) > 0 {
		if _, err := w.next.Write(w.held); err != nil {
			return 0, err
		}
		w.held = w.held[:0]
	}
	if _, err := w.next.Write(p[:i+1]); err != nil {
		return 0, err
	}
	w.held = append(w.held, p[i+1:]...)
	return len(p), nil
}

// sgrWriter is StripSGR of what is written to it, in pieces: a sequence
// cut by a piece's end is held until the byte after its digits says
// whether it is one.
type sgrWriter struct {
	next  io.Writer
	state int // 0: outside; 1: after ESC; 2: after ESC [ and seq's digits
	seq   []byte
}

func (w *sgrWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		switch w.state {
		case 0:
			j := bytes.IndexByte(p, 0x1b)
			if j < 0 {
				_, err := w.next.Write(p)
				return n, err
			}
			if _, err := w.next.Write(p[:j]); err != nil {
				return 0, err
			}
			p, w.state, w.seq = p[j+1:], 1, append(w.seq[:0], 0x1b)
		case 1:
			if p[0] != '[' {
				// Not a sequence: the ESC is text, and what follows is
				// looked at afresh.
				if _, err := w.next.Write(w.seq); err != nil {
					return 0, err
				}
				w.state, w.seq = 0, w.seq[:0]
				continue
			}
			w.seq, p, w.state = append(w.seq, '['), p[1:], 2
		case 2:
			k := 0
			for k < len(p) && (p[k] >= '0' && p[k] <= '9' || p[k] == ';') {
				k++
			}
			w.seq, p = append(w.seq, p[:k]...), p[k:]
			if len(p) == 0 {
				return n, nil
			}
			if p[0] == 'm' {
				p = p[1:]
			} else if _, err := w.next.Write(w.seq); err != nil {
				return 0, err
			}
			w.state, w.seq = 0, w.seq[:0]
		}
	}
	return n, nil
}

func (w *sgrWriter) close() error {
	if w.state == 0 {
		return nil
	}
	w.state = 0
	_, err := w.next.Write(w.seq)
	return err
}

// cleanWriter is cleanView's mapping of what is written to it, in pieces:
// each control character but newline and tab, and each byte that is not
// UTF-8, a U+FFFD.
type cleanWriter struct {
	next  io.Writer
	carry []byte
	buf   []byte
}

func (w *cleanWriter) Write(p []byte) (int, error) {
	n := len(p)
	b := p
	if len(w.carry) > 0 {
		b = append(w.carry, p...)
		w.carry = nil
	}
	rest, err := w.clean(b, false)
	if err != nil {
		return 0, err
	}
	w.carry = append([]byte(nil), rest...)
	return n, nil
}

func (w *cleanWriter) clean(b []byte, final bool) ([]byte, error) {
	out := w.buf[:0]
	i := 0
	for i < len(b) {
		c := b[i]
		if c >= 0x20 && c < 0x7f || c == '\n' || c == '\t' {
			out = append(out, c)
			i++
			continue
		}
		if !final && !utf8.FullRune(b[i:]) {
			break
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 || r < 0x20 || r == 0x7f {
			out = append(out, "\uFFFD"...)
		} else {
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	w.buf = out[:0]
	if _, err := w.next.Write(out); err != nil {
		return nil, err
	}
	return b[i:], nil
}

func (w *cleanWriter) close() error {
	_, err := w.clean(w.carry, true)
	w.carry = nil
	return err
}

// renderedStream writes RenderImported of the line sl to w, the line
// never put together: false when the view cannot be streamed (see the
// top of this file) and the line is to be rendered whole, what was
// written to w then to be thrown away. An error is a string of the line
// that could not be read. uncounted: the line's event counted no tokens
// (renderEvent).
func (r *Rook) renderedStream(sl *sourceLine, w io.Writer, uncounted bool) (bool, error) {
	if len(sl.Cuts) == 0 || bytes.Contains(sl.Rest, []byte(markPrefix)) || bytes.Contains(bytes.ToLower(sl.Rest), []byte(rawPrefix)) {
		return false, nil
	}
	line := make([]byte, 0, len(sl.Rest)+len(sl.Cuts)*(len(rawOpen)+len(rawClose)+8))
	p := 0
	for k, c := range sl.Cuts {
		line = append(line, sl.Rest[p:p+c.Gap]...)
		p += c.Gap
		line = append(append(append(append(line, '"'), rawOpen...), strconv.Itoa(k)...), rawClose+`"`...)
	}
	line = append(line, sl.Rest[p:]...)
	// renderBody of a body of one line.
	body := bytes.TrimRight(line, "\r\n")
	if bytes.IndexByte(body, '\n') >= 0 {
		return false, nil
	}
	lz := &lazyLine{r: r, cuts: sl.Cuts, props: map[int]*cutProps{}}
	rr := renderer{headers: true, lz: lz, uncounted: uncounted}
	rendered := rr.line(entryBytes(bytes.TrimRight(body, "\r")))
	if lz.err != nil {
		return false, lz.err
	}
	if !rendered || lz.bad {
		return false, nil
	}
	pieces, ok := splitMarks(rr.out.Bytes(), len(sl.Cuts))
	if !ok {
		return false, nil
	}
	clean := &cleanWriter{next: w}
	sgr := &sgrWriter{next: clean}
	trim := &trimWriter{next: sgr}
	nw := &needleWriter{next: trim}
	for _, pc := range pieces {
		var err error
		switch pc.kind {
		case pieceText:
			_, err = nw.Write(pc.text)
		case pieceEndLine:
			if nw.wrote && nw.last != '\n' {
				_, err = nw.Write([]byte{'\n'})
			}
		case pieceDecoded, pieceRaw:
			id := sl.Cuts[pc.cut].ID
			var o *cas.ObjectReader
			if o, err = r.Store.OpenObject(id); err == nil {
				if pc.kind == pieceDecoded {
					_, err = o.WriteTo(&skipWriter{w: nw, skip: pc.skip})
				} else {
					_, err = o.WriteTo(&escapeWriter{w: nw})
				}
			}
			if err != nil && !errors.Is(err, errEncodedNeedle) {
				err = fmt.Errorf("string %s of the line: %w", cas.Short(id), err)
			}
		}
		if errors.Is(err, errEncodedNeedle) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
	}
	// The trimmed end left out, the line's newline, and what a sequence
	// or a character cut by the end held back.
	if _, err := sgr.Write([]byte{'\n'}); err != nil {
		return false, err
	}
	if err := sgr.close(); err != nil {
		return false, err
	}
	return true, clean.close()
}
