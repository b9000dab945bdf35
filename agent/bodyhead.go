package agent

// Reading the head of a big body. A view that shows the first KiB of a
// body (show, history, export-html; entry, quote and find a range of it)
// still says whether the whole body is
// binary and how much it left out, which takes every byte: a big body is
// streamed once (cas.ObjectReader.WriteTo, its record's CRC checked first
// and its hash at the end, so the body is verified as a whole read is),
// keeping only its head and counting the rest as it goes by. It was read
// whole into memory, copied and scanned: a 24 MiB tool output held 40 to
// 60 MiB for a page that shows 4 KiB of it.

import (
	"bytes"
	"errors"
	"unicode/utf8"

	"github.com/rookhq/rook/cas"
)

// readWhole makes the views read every body whole, as they did before big
// ones were streamed: the tests compare what the two give.
var readWhole = false

// headMargin is how many bytes past what a head shows are kept to cut it
// exactly where the whole body would be cut (CutShown looks at the bytes
// after its limit: a character, a CRLF, a color sequence's end).
const headMargin = 4 << 10

// utf8Stream validates UTF-8 written in pieces: once the last piece is
// written, valid is utf8.Valid of everything written.
type utf8Stream struct {
	invalid bool
	carry   [utf8.UTFMax]byte
	nc      int
}

func (u *utf8Stream) write(p []byte) {
	if u.invalid {
		return
	}
	// A character cut by the previous piece: complete it first.
	for u.nc > 0 && len(p) > 0 {
		for u.nc < utf8.UTFMax && !utf8.FullRune(u.carry[:u.nc]) && len(p) > 0 {
			u.carry[u.nc] = p[0]
			u.nc++
			p = p[1:]
		}
		if !utf8.FullRune(u.carry[:u.nc]) {
			return // still cut: wait for more
		}
		r, size := utf8.DecodeRune(u.carry[:u.nc])
		if r == utf8.RuneError && size == 1 {
			u.invalid = true
			return
		}
		u.nc = 0
	}
	// A character cut at the end of this piece is kept for the next.
	s := wholeEnd(p)
	if !utf8.Valid(p[:s]) {
		u.invalid = true
		return
	}
	u.nc = copy(u.carry[:], p[s:])
}

// wholeEnd is where b's last whole character ends: len(b), or the start
// of a character b's end cuts (the bytes that complete it are past b). A
// byte that is not UTF-8 is whole: what follows it does not change it.
func wholeEnd(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-(utf8.UTFMax-1); i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return i
			}
			break
		}
	}
	return len(b)
}

// valid says whether everything written was UTF-8, the stream ended.
func (u *utf8Stream) valid() bool { return !u.invalid && u.nc == 0 }

// binaryScan says of a body written in pieces what IsBinary says of it
// whole, and keeps its first keep bytes.
type binaryScan struct {
	keep int
	head []byte
	nul  bool
	utf  utf8Stream
}

func (b *binaryScan) Write(p []byte) (int, error) {
	if room := b.keep - len(b.head); room > 0 {
		b.head = append(b.head, p[:min(room, len(p))]...)
	}
	if !b.nul && bytes.IndexByte(p, 0) >= 0 {
		b.nul = true
	}
	if !b.nul {
		b.utf.write(p)
	}
	return len(p), nil
}

func (b *binaryScan) binary() bool { return b.nul || !b.utf.valid() }

// tailCount counts, of the bytes written to it, what a view shortened by
// readBodyHead leaves out: viewLen, jsonEscapedLen and whether they are
// UTF-8, as those give them of the bytes whole.
type tailCount struct {
	view    int64
	escaped int64
	trail   int64 // the white space they end with (trailingSpace)
	utf     utf8Stream
	carry   []byte // a character or color sequence cut by the end of a piece
	// digits: carry is ESC [, followed by this many digits and
	// semicolons, counted, not kept: a run of them MiB long was carried
	// whole, copied and scanned again at every piece.
	digits int64
}

func (t *tailCount) Write(p []byte) (int, error) {
	written := len(p)
	t.escaped += jsonEscapedLen(p)
	t.trail = trailingSpace(p, t.trail)
	t.utf.write(p)
	if t.digits > 0 {
		// ESC [ digits... cut by the pieces: the first byte past the
		// digits says whether it is a color sequence (m: nothing shown)
		// or not (ESC a U+FFFD, then [ and each digit a byte).
		k := 0
		for k < len(p) && (p[k] >= '0' && p[k] <= '9' || p[k] == ';') {
			k++
		}
		t.digits += int64(k)
		if k == len(p) {
			return written, nil
		}
		if p[k] == 'm' {
			k++
		} else {
			t.view += int64(utf8.RuneLen(utf8.RuneError)) + 1 + t.digits
		}
		p, t.carry, t.digits = p[k:], t.carry[:0], 0
	}
	b := p
	if len(t.carry) > 0 {
		b = append(t.carry, p...)
	}
	i := t.viewOf(b, false)
	t.carry = append(t.carry[:0:0], b[i:]...)
	if len(t.carry) > 2 && t.carry[0] == 0x1b && t.carry[1] == '[' {
		// Cut in its digits (viewOf stops at an ESC only so).
		t.digits = int64(len(t.carry) - 2)
		t.carry = t.carry[:2]
	}
	return written, nil
}

// trailingSpace is how many bytes of white space a view trims at the end
// of a rendered line (' ', '\n': renderBody) b ends with, before being
// the bytes of white space the ones before b ended with.
func trailingSpace(b []byte, before int64) int64 {
	k := len(b) - len(bytes.TrimRight(b, " \n"))
	if k == len(b) {
		return before + int64(k)
	}
	return int64(k)
}

// close counts what a piece left cut.
func (t *tailCount) close() {
	t.viewOf(t.carry, true)
	if t.digits > 0 {
		t.view += t.digits // not a sequence: each a byte shown
	}
	t.carry, t.digits = nil, 0
}

// viewOf adds viewLen's count of b up to where a character or a color
// sequence runs past its end (unless final), and returns where it
// stopped.
func (t *tailCount) viewOf(b []byte, final bool) int {
	i := 0
	for i < len(b) {
		if b[i] == 0x1b && !final {
			// Whether it starts a color sequence is known once the
			// sequence ends.
			j := i + 1
			if j < len(b) && b[j] == '[' {
				j++
				for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == ';') {
					j++
				}
			}
			if j >= len(b) {
				return i
			}
		}
		if j := sgrEnd(b, i); j > 0 {
			i = j
			continue
		}
		if !final && !utf8.FullRune(b[i:]) {
			return i
		}
		c, w := utf8.DecodeRune(b[i:])
		switch {
		case c == utf8.RuneError && w == 1, c < 0x20 && c != '\n' && c != '\t', c == 0x7f:
			t.view += int64(utf8.RuneLen(utf8.RuneError))
		default:
			t.view += int64(w)
		}
		i += w
	}
	return i
}

// sgrOpenAt is where the color sequence that b[:n] ends inside starts:
// the ESC of an ESC [ followed by nothing but digits and semicolons up to
// n, or -1 when b[:n] ends in none. It looks back over the sequence's
// digits however many there are (StripSGR strips a sequence of any
// length), never further than b's start: at most n bytes.
func sgrOpenAt(b []byte, n int) int {
	j := n
	for j > 0 && (b[j-1] >= '0' && b[j-1] <= '9' || b[j-1] == ';') {
		j--
	}
	switch {
	case j >= 2 && b[j-1] == '[' && b[j-2] == 0x1b:
		return j - 2
	case j == n && n >= 1 && b[n-1] == 0x1b:
		return n - 1
	}
	return -1
}

// sgrRunsToEnd says whether what may be a color sequence at b[i] (an ESC)
// runs to b's end: the bytes after it decide whether it is one.
func sgrRunsToEnd(b []byte, i int) bool {
	j := i + 1
	if j < len(b) && b[j] == '[' {
		j++
		for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == ';') {
			j++
		}
	}
	return j >= len(b)
}

// headWithin is CutShown(body, limit) of a body of which head holds the
// first bytes, and ok when head holds enough of it to say (else the whole
// body is needed).
func headWithin(head []byte, limit int, size int64) (int, bool) {
	if int64(len(head)) >= size {
		return CutShown(head, limit), true
	}
	if limit+utf8.UTFMax >= len(head) {
		return 0, false
	}
	// CutShown cuts before a color sequence the cut falls in: one still
	// open at head's end is not known (the bytes after it decide).
	if i := sgrOpenAt(head, CutUTF8(head, limit)); i >= 0 && sgrRunsToEnd(head, i) {
		return 0, false
	}
	return CutShown(head, limit), true
}

// streamBody reads a big body whole as a stream, verified, keeping its
// first keep bytes: the head and whether it is binary.
func streamBody(o *cas.ObjectReader, keep int) (head []byte, binary bool, err error) {
	s := &binaryScan{keep: keep}
	if _, err := o.WriteTo(s); err != nil {
		return nil, false, err
	}
	return s.head, s.binary(), nil
}

// stringHead is what readBodyHead keeps of a string cut from a large
// imported line: its first bytes, to CutShown(text, keep), and what the
// rest would have added to the line and its view.
type stringHead struct {
	text    []byte // text[:CutShown(text, keep)]
	escaped int64  // jsonEscapedLen of the rest
	view    int64  // viewLen of the rest
	trail   int64  // the white space the rest ends with (trailingSpace)
	binary  bool   // the rest is not UTF-8
}

// readStringHead reads a cut string for readBodyHead: a big one alone in
// its record is streamed, verified, keeping keep+headMargin bytes; any
// other is read whole.
func (r *Rook) readStringHead(id cas.Key, keep int) (stringHead, error) {
	o, err := r.Store.OpenObject(id)
	if err != nil {
		return stringHead{}, err
	}
	whole := func() (stringHead, error) {
		text, err := o.ReadAll()
		if err != nil {
			return stringHead{}, err
		}
		var h stringHead
		n := CutShown(text, keep)
		tail := text[n:]
		h.text = text[:n]
		if len(tail) > 0 {
			h.view, h.escaped, h.binary = viewLen(tail), jsonEscapedLen(tail), !utf8.Valid(tail)
			h.trail = trailingSpace(tail, 0)
		}
		return h, nil
	}
	if !o.Ranged() || int64(keep)+headMargin >= o.Size() {
		return whole()
	}
	w := &cutWriter{keep: keep, want: keep + headMargin}
	if _, err := o.WriteTo(w); err != nil {
		return stringHead{}, err
	}
	if !w.cut {
		return whole()
	}
	w.tail.close()
	return stringHead{text: w.head, escaped: w.tail.escaped, view: w.tail.view, trail: w.tail.trail, binary: !w.tail.utf.valid()}, nil
}

// cutWriter keeps the first want bytes written, cuts them where CutShown
// cuts the whole, and counts the rest (tailCount).
type cutWriter struct {
	keep, want int
	head       []byte
	cut        bool // the head was cut: head is the text kept, tail counts the rest
	failed     bool // the head could not say where the whole is cut
	tail       tailCount
}

func (w *cutWriter) Write(p []byte) (int, error) {
	written := len(p)
	if w.failed {
		return written, nil
	}
	if !w.cut {
		room := w.want - len(w.head)
		w.head = append(w.head, p[:min(room, len(p))]...)
		if len(w.head) < w.want {
			return written, nil
		}
		rest := p[min(room, len(p)):]
		n, ok := headWithin(w.head, w.keep, int64(len(w.head))+1)
		if !ok {
			w.failed = true
			return written, nil
		}
		w.tail.Write(w.head[n:])
		w.head, w.cut = w.head[:n:n], true
		p = rest
	}
	w.tail.Write(p)
	return written, nil
}

// previewOfHead is Preview(StripSGR(body), n) of a body of which head
// holds the first bytes, and ok when head holds enough of it to say.
func previewOfHead(head []byte, n int) (string, bool) {
	// A cut no color sequence spans (the byte before it is not one a
	// sequence holds before its end) after head's last whole character: a
	// character head's end cuts is not in head[:k] (kept, it read as
	// U+FFFD where the body has it whole), and the colors left out of
	// head[:k] are the whole body's.
	k := wholeEnd(head)
	if i := sgrOpenAt(head, k); i >= 0 {
		k = i
	}
	t := bytes.TrimLeft(StripSGR(head[:k]), " \t\r\n")
	if bytes.IndexByte(t, '\n') < 0 && utf8.RuneCount(t) <= n {
		return "", false // the first line may go on past the head
	}
	return Preview(t, n), true
}

// errPreviewDone stops the stream a previewScan reads: the preview is
// known.
var errPreviewDone = errors.New("preview known")

// previewOf is Preview(StripSGR(body), n) of a big body whose head
// (previewOfHead) could not say it: its first line may start or go on
// past the head (a body of blank lines, of color sequences, of one long
// run of digits). The body is streamed, its colors left out as StripSGR
// leaves them out, keeping only the first line's first n+1 characters,
// and the stream stops once they are known: what it holds does not grow
// with the body.
func (r *Rook) previewOf(id cas.Key, n int) (string, error) {
	o, err := r.Store.OpenObject(id)
	if err != nil {
		return "", err
	}
	p := &previewScan{n: n}
	if _, err := o.WriteTo(p); err != nil && !errors.Is(err, errPreviewDone) {
		return "", err
	}
	p.close()
	return Preview(p.line, n), nil
}

// previewScan keeps, of a body written to it in pieces, the first line of
// StripSGR(body) after its leading blanks, up to n+1 characters: what
// Preview(StripSGR(body), n) shows of it.
type previewScan struct {
	n int
	// state: 0 outside a color sequence; 1 after an ESC; 2 after ESC [
	// and the digits and semicolons in seq (at most n+1 of them kept:
	// not a sequence, each shows as a character, and the preview is
	// known by then).
	state   int
	seq     []byte
	started bool   // past the leading blanks
	line    []byte // the first line's bytes so far
	done    bool   // line holds all Preview needs
}

func (p *previewScan) Write(b []byte) (int, error) {
	for _, c := range b {
		if p.done {
			return 0, errPreviewDone
		}
		p.byte(c)
	}
	if p.done {
		return 0, errPreviewDone
	}
	return len(b), nil
}

// byte takes the body's next byte, as stripSGR does.
func (p *previewScan) byte(c byte) {
	switch p.state {
	case 1:
		if c == '[' {
			p.state, p.seq = 2, p.seq[:0]
			return
		}
		p.state = 0
		p.text(0x1b)
	case 2:
		if c >= '0' && c <= '9' || c == ';' {
			if len(p.seq) <= p.n {
				p.seq = append(p.seq, c)
			}
			return
		}
		if c == 'm' {
			p.state = 0
			return
		}
		p.flush()
	}
	if c == 0x1b {
		p.state = 1
		return
	}
	p.text(c)
}

// flush writes what a sequence that turned out not to be one held.
func (p *previewScan) flush() {
	switch p.state {
	case 1:
		p.text(0x1b)
	case 2:
		p.text(0x1b)
		p.text('[')
		for _, d := range p.seq {
			p.text(d)
		}
	}
	p.state = 0
}

// close ends the body: a sequence still open is text.
func (p *previewScan) close() { p.flush() }

// text takes a byte of StripSGR(body).
func (p *previewScan) text(c byte) {
	if p.done {
		return
	}
	if !p.started {
		if c == ' ' || c == '\t' || c == '\r' || c == '\n' {
			return
		}
		p.started = true
	}
	if c == '\n' {
		p.done = true
		return
	}
	p.line = append(p.line, c)
	if len(p.line) > p.n {
		p.done = p.known()
	}
}

// known says whether line holds n whole characters and a byte after them:
// all Preview shows (the byte says it clips them).
func (p *previewScan) known() bool {
	i := 0
	for range p.n {
		if i == len(p.line) || !utf8.FullRune(p.line[i:]) {
			return false // a character the next bytes may complete
		}
		_, w := utf8.DecodeRune(p.line[i:])
		i += w
	}
	return i < len(p.line)
}

// windowScan keeps bytes [lo, hi) of a body written in pieces, and says
// whether the whole is binary.
type windowScan struct {
	binaryScan
	lo, hi, pos int64
	win         []byte
}

func (w *windowScan) Write(p []byte) (int, error) {
	if s, e := max(w.lo-w.pos, 0), min(w.hi-w.pos, int64(len(p))); s < e {
		w.win = append(w.win, p[s:e]...)
	}
	w.pos += int64(len(p))
	return w.binaryScan.Write(p)
}
