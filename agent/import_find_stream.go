package agent

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"sort"
	"unicode/utf8"

	"github.com/rookhq/rook/cas"
)

// findSpan is an encoded value of a streamed line (encodedSpan), in the
// line's offsets, with the line (of the body's lines) it is on.
type findSpan struct {
	line       int
	start, end int64
	marker     string
}

// findSpans is what encodedLines finds in the line put together, found in
// its skeleton and its cut strings' scans. ok is false when that cannot be
// exact (a cut string that may hold JSON with an encoded value, or is not
// UTF-8; a line with a cut string that is not JSON; a binary body).
func (s *streamedLine) findSpans() (spans []findSpan, newlines []int64, ok bool) {
	for i := range s.cuts {
		// (An inline cut's text may be not UTF-8: the line is then
		// binary, s.binary. Whether its text may hold JSON with an
		// encoded value is asked of its text decoded: a needle written
		// in the line, \"data, is one decoded too.)
		if !s.cuts[i].valid && s.inlineCut(i) == nil || s.cuts[i].nested {
			return nil, nil, false
		}
	}
	for i := range s.skelAt {
		end := len(s.skel)
		if i+1 < len(s.skelAt) {
			end = s.skelQ[i]
		}
		if IsBinary(s.skel[s.skelAt[i]:end]) {
			return nil, nil, false
		}
	}
	line := 0
	for from := 0; from <= len(s.skel); line++ {
		to := len(s.skel)
		if i := bytes.IndexByte(s.skel[from:], '\n'); i >= 0 {
			to = from + i
		}
		l := s.skel[from:to]
		var lineSpans []findSpan
		for _, sp := range appendEncodedSpans(nil, l, from) {
			lineSpans = append(lineSpans, findSpan{line, s.realOf(sp.start), s.realOf(sp.start) + int64(sp.end-sp.start), sp.marker})
		}
		hasCut := false
		for _, q := range s.skelQ {
			hasCut = hasCut || q >= from && q < to
		}
		if hasCut {
			strs, ok := stringValues(bytes.TrimRight(l, "\r"), len(`"x"`))
			if !ok {
				return nil, nil, false
			}
			for _, st := range strs {
				k := s.cutAt(from + st.Start)
				if k < 0 {
					continue
				}
				enc, marker := false, ""
				if u := s.inlineCut(k); u != nil {
					var ok bool
					if enc, marker, ok = u.findEncoded(st.Key); !ok {
						return nil, nil, false
					}
				} else if enc = s.cuts[k].encoded(st.Key); enc {
					marker = s.cuts[k].marker(st.Key)
				}
				if enc {
					c := s.realQ[k] + 1
					lineSpans = append(lineSpans, findSpan{line, c, c + s.cuts[k].escLen, marker})
				}
			}
			sort.Slice(lineSpans, func(i, j int) bool { return lineSpans[i].start < lineSpans[j].start })
		}
		spans = append(spans, lineSpans...)
		if to == len(s.skel) {
			break
		}
		newlines = append(newlines, s.realOf(to))
		from = to + 1
	}
	return spans, newlines, true
}

// findScan is Find's scan of an imported line (from where the search
// enters it, through its byte budget, the match skipping encoded values),
// written the line in pieces: it keeps the bytes its matchers still look
// at, not the line.
type findScan struct {
	ms       []*foldMatcher // the query, and as a JSON string writes it
	off      int64
	total    int64
	budget   int64
	spans    []findSpan
	newlines []int64
	look     int64 // bytes a match may read past where it starts
	binary   bool  // the line is binary (IsBinary): from where it enters, not a character's start

	buf  []byte
	base int64 // buf[0] is the line's byte base

	start, stop int64 // -1 until known
	cut         bool
	from        int64
	pos         []int64 // where each matcher goes on
	fAt, fEnd   []int64 // what each found, -1
	at, end     int64   // the hit, -1
	done        bool
	lost        bool
	scratch     []byte
}

func newFindScan(ms []*foldMatcher, off, total, budget int64, spans []findSpan, newlines []int64) *findScan {
	f := &findScan{ms: ms, off: off, total: total, budget: budget, spans: spans, newlines: newlines,
		start: -1, stop: -1, at: -1, end: -1}
	for _, m := range ms {
		f.look = max(f.look, int64(m.span+8))
	}
	f.pos = make([]int64, len(ms))
	f.fAt = make([]int64, len(ms))
	f.fEnd = make([]int64, len(ms))
	return f
}

func (f *findScan) Write(p []byte) (int, error) {
	if f.done {
		return len(p), nil
	}
	f.buf = append(f.buf, p...)
	f.scan(false)
	// Keep what the matchers, and the start and stop still to find,
	// will look at.
	keep := int64(math.MaxInt64) // (from itself needs no byte)
	if f.start < 0 {
		keep = f.off - utf8.UTFMax
	} else {
		for k := range f.ms {
			if f.fAt[k] < 0 {
				keep = min(keep, f.pos[k])
			}
		}
		if f.stop < 0 {
			keep = min(keep, f.start+f.budget-utf8.UTFMax)
		}
	}
	if drop := keep - utf8.UTFMax - f.base; drop > 64<<10 {
		drop = min(drop, int64(len(f.buf)))
		f.buf = f.buf[:copy(f.buf, f.buf[drop:])]
		f.base += drop
	}
	return len(p), nil
}

// byteAt is the line's byte i, which buf holds.
func (f *findScan) byteAt(i int64) byte { return f.buf[i-f.base] }

func (f *findScan) scan(final bool) {
	if f.done {
		return
	}
	bufEnd := f.base + int64(len(f.buf))
	if f.start < 0 {
		o := min(f.off, f.total)
		switch {
		case o <= 0 || o >= f.total || f.binary:
			f.start = o
		case bufEnd > o:
			// runeStartAtOrBefore, the line UTF-8 (findSpans).
			f.start = o
			for n := o; n >= 0 && n > o-utf8.UTFMax; n-- {
				if n == 0 || utf8.RuneStart(f.byteAt(n)) {
					f.start = n
					break
				}
			}
		default:
			return
		}
		f.from = f.start
		f.reset()
		if f.total-f.start <= f.budget {
			f.stop = f.total
		}
	}
	if x := f.start + f.budget; f.stop < 0 && bufEnd > x {
		// CutUTF8 of the budget's end.
		f.stop, f.cut = x, true
		for n := x; n >= 0 && n > x-utf8.UTFMax; n-- {
			if n == 0 || utf8.RuneStart(f.byteAt(n)) {
				if n > f.start {
					f.stop = n
				}
				break
			}
		}
	}
	for {
		if f.stop >= 0 && f.from >= f.stop {
			f.done = true
			return
		}
		limit := f.stop
		if !final && (f.stop < 0 || bufEnd-f.look < limit) {
			limit = bufEnd - f.look
		}
		for k := range f.ms {
			if f.fAt[k] < 0 && f.pos[k] < limit {
				f.search(k, limit)
			}
		}
		cand := -1
		for k := range f.ms {
			if f.fAt[k] >= 0 && (cand < 0 || f.fAt[k] < f.fAt[cand]) {
				cand = k
			}
		}
		if cand >= 0 {
			at, end := f.fAt[cand], f.fEnd[cand]
			if next := f.overlap(at, end); next >= 0 {
				f.from = next
				f.reset()
				continue
			}
			f.at, f.end, f.done = at, end, true
			return
		}
		if f.stop >= 0 && limit >= f.stop {
			f.done = true
		}
		return
	}
}

func (f *findScan) reset() {
	for k := range f.ms {
		f.pos[k], f.fAt[k], f.fEnd[k] = f.from, -1, -1
	}
}

// search runs matcher k on from where it is to limit, as foldMatcher.index
// does over the whole line.
func (f *findScan) search(k int, limit int64) {
	m, i := f.ms[k], f.pos[k]
	if i < f.base {
		f.lost = true // bytes dropped too early: never so, but not a panic
		f.done = true
		return
	}
	if m.ascii {
		var at, end int
		at, end, f.scratch = m.index(f.buf, int(i-f.base), int(limit-f.base), f.scratch)
		if at >= 0 {
			f.fAt[k], f.fEnd[k] = f.base+int64(at), f.base+int64(end)
			return
		}
		f.pos[k] = limit
		return
	}
	for i < limit {
		if j := i - f.base; j < int64(len(f.buf)) && !m.mayStart(f.buf[j]) {
			i++ // an ASCII character
			continue
		}
		if end, ok := m.matchAt(f.buf, int(i-f.base)); ok {
			f.fAt[k], f.fEnd[k] = i, f.base+int64(end)
			return
		}
		_, w := utf8.DecodeRune(f.buf[i-f.base:])
		if w == 0 {
			f.lost, f.done = true, true // past the bytes written: never so
			return
		}
		i += int64(w)
	}
	f.pos[k] = i
}

// lineOf is the line (of the body's) byte p is on.
func (f *findScan) lineOf(p int64) int {
	return sort.Search(len(f.newlines), func(i int) bool { return f.newlines[i] >= p })
}

// overlap is encodedLines.overlap.
func (f *findScan) overlap(at, end int64) int64 {
	for _, p := range []int64{at, end - 1} {
		if p < at || p >= f.total {
			continue
		}
		line := f.lineOf(p)
		for _, s := range f.spans {
			if s.line == line && at < s.end && end > s.start {
				return s.end
			}
		}
	}
	return -1
}

// findWindow is how many bytes around a match the streamed find keeps to
// make its snippet: decodedSnippet decodes decodedSnippetWindow bytes on
// each side and 6 a byte of the query past it; Snippet reads SnippetRunes
// characters.
const findWindow = 8 << 10

// miniLine is the line with only what a snippet of the match at at can
// read kept: the rest of the line, each cut string's first and last
// cutKeep bytes of text (escaped), and the window around the match; the
// bytes between left out for a few plain ones (miniFiller). The window
// starts and ends where tok found no escape cut; ok is false when it did
// not find where.
type miniLine struct {
	b    []byte
	segs []miniSeg
	cut  []int // where each cut string's literal starts in b
}

// miniSeg maps n bytes of the line from real to b[mini:].
type miniSeg struct {
	real int64
	mini int
	n    int
}

const miniFiller = "xxxxxxxx"

// tokenScan finds, written the line, where the window [lo, hi) of find's
// snippet may start and end inside a cut string's escaped content without
// cutting an escape (\" \\ \n \u00e9 ...): each content's escapes are
// followed from its start, so a window inside a long run of hex digits,
// where no byte says by itself whether it is part of a \uXXXX, still
// starts and ends on a whole one.
type tokenScan struct {
	lo, hi   int64      // the window
	contents [][2]int64 // each cut string's escaped content in the line, in order
	pos      int64
	c        int  // the content pos is in or before
	in       bool // pos is in content c
	pend     int  // bytes of an escape still to come; -1: just after its backslash
	// tokLo, tokHi: the first byte from lo on, the last up to hi, that
	// is no escape's inside (plain bytes and the content's start and end
	// count): -1 until one is seen.
	tokLo, tokHi int64
}

func newTokenScan(lo, hi int64, s *streamedLine) *tokenScan {
	t := &tokenScan{lo: lo, hi: hi, tokLo: -1, tokHi: -1}
	for i := range s.cuts {
		c := s.realQ[i] + 1
		t.contents = append(t.contents, [2]int64{c, c + s.cuts[i].escLen})
	}
	return t
}

func (t *tokenScan) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 && t.c < len(t.contents) && t.pos < t.hi {
		from, to := t.contents[t.c][0], t.contents[t.c][1]
		if t.pos < from {
			skip := min(from-t.pos, int64(len(p)))
			p, t.pos = p[skip:], t.pos+skip
			continue
		}
		if !t.in {
			t.in, t.pend = true, 0
			t.at(from)
		}
		if t.pos >= to {
			t.c++
			t.in = false
			continue
		}
		// p[0] is the content's byte t.pos.
		k := min(to-t.pos, t.hi-t.pos, int64(len(p)))
		for i := int64(0); i < k; {
			if t.pend == 0 {
				// Plain bytes up to the next backslash: each a boundary.
				j := bytes.IndexByte(p[i:k], '\\')
				if j < 0 {
					t.plain(t.pos+i+1, t.pos+k)
					i = k
					continue
				}
				if j > 0 {
					t.plain(t.pos+i+1, t.pos+i+int64(j))
				}
				i += int64(j) + 1
				t.pend = -1
				continue
			}
			if t.pend < 0 {
				t.pend = 0
				if p[i] == 'u' {
					t.pend = 4
				}
			} else {
				t.pend--
			}
			i++
			if t.pend == 0 {
				t.at(t.pos + i)
			}
		}
		p, t.pos = p[k:], t.pos+k
	}
	t.pos += int64(len(p))
	return n, nil
}

// plain records that bytes from through to (inclusive) of the line each
// start no escape's inside.
func (t *tokenScan) plain(from, to int64) {
	if from > to {
		return
	}
	if t.tokLo < 0 && to >= t.lo {
		t.tokLo = max(from, t.lo)
	}
	if from <= t.hi {
		t.tokHi = min(to, t.hi)
	}
}

// at records that byte p starts no escape's inside.
func (t *tokenScan) at(p int64) { t.plain(p, p) }

func (s *streamedLine) miniLine(win []byte, lo int64, tok *tokenScan) (*miniLine, bool) {
	ml := &miniLine{}
	hi := lo + int64(len(win))
	addReal := func(real int64, b []byte) {
		ml.segs = append(ml.segs, miniSeg{real, len(ml.b), len(b)})
		ml.b = append(ml.b, b...)
	}
	for i := range s.cuts {
		// The line's bytes before cut i: the skeleton's.
		addReal(s.restAt[i], s.skel[s.skelAt[i]:s.skelQ[i]])
		cs := &s.cuts[i]
		ml.cut = append(ml.cut, len(ml.b))
		ml.b = append(ml.b, '"')
		content := s.realQ[i] + 1
		type part struct {
			from int64
			b    []byte
		}
		var parts []part
		switch u := s.inlineCut(i); {
		case u != nil:
			// Its content as written, its ends cut where escapes start.
			head, tail, whole, ok := u.rawEnds()
			if !ok {
				return nil, false
			}
			parts = append(parts, part{0, head})
			if !whole {
				parts = append(parts, part{cs.escLen - int64(len(tail)), tail})
			}
		case cs.esc != nil:
			parts = append(parts, part{0, cs.esc})
		default:
			parts = append(parts, part{0, cs.head}, part{cs.escLen - int64(len(cs.tail)), cs.tail})
		}
		if wlo, whi := max(lo, content)-content, min(hi, content+cs.escLen)-content; wlo < whi {
			w := win[wlo+content-lo : whi+content-lo]
			if wlo > 0 {
				// The window starts inside the string: at the first
				// byte from lo on that no escape is cut at.
				k := tok.tokLo - (content + wlo)
				if tok.tokLo < 0 || k < 0 || k > int64(len(w)) || k >= 4<<10 {
					return nil, false
				}
				w, wlo = w[k:], wlo+k
			}
			if whi < cs.escLen {
				// It ends inside the string: at the last such byte up to hi.
				k := tok.tokHi - (content + wlo)
				if tok.tokHi < 0 || k > int64(len(w)) || int64(len(w))-k >= 4<<10 {
					return nil, false
				}
				w = w[:max(k, 0)]
			}
			if len(w) > 0 {
				parts = append(parts, part{wlo, w})
			}
		}
		sort.Slice(parts, func(a, b int) bool { return parts[a].from < parts[b].from })
		at := int64(0) // how much of the content is in b
		for _, pt := range parts {
			end := pt.from + int64(len(pt.b))
			if end <= at && at > 0 {
				continue
			}
			if pt.from > at {
				ml.b = append(ml.b, miniFiller...)
				addReal(content+pt.from, pt.b)
			} else {
				addReal(content+at, pt.b[at-pt.from:])
			}
			at = end
		}
		if at < cs.escLen {
			ml.b = append(ml.b, miniFiller...)
		}
		ml.b = append(ml.b, '"')
	}
	addReal(s.restAt[len(s.cuts)], s.skel[s.skelAt[len(s.cuts)]:])
	return ml, true
}

// mini is where byte real of the line is in ml.b, -1 when it is not kept.
// end: real is the end of a range (its byte before is kept).
func (ml *miniLine) mini(real int64, end bool) int {
	for _, sg := range ml.segs {
		if real >= sg.real && (real < sg.real+int64(sg.n) || end && real == sg.real+int64(sg.n)) {
			return sg.mini + int(real-sg.real)
		}
	}
	return -1
}

// findStreamedResult is what findStreamed gives: the part searched
// (start, stop, cut by the budget), the hit (at, end; -1 when none) and
// its snippet.
type findStreamedResult struct {
	start, stop int64
	cut         bool
	at, end     int64
	snippet     string
	decoded     bool
}

// findStreamed is what Find gives of imported line s, streamed, searched
// from off with budget bytes left: ok is false when the line is to be read
// whole (one the streamed path cannot give exactly, or a read failed).
func (r *Rook) findStreamed(s *streamedLine, off, budget int64, m *foldMatcher, escaped []*foldMatcher) (findStreamedResult, bool) {
	var res findStreamedResult
	spans, newlines, ok := s.findSpans()
	if !ok {
		return res, false
	}
	ms := append([]*foldMatcher{m}, escaped...)
	f := newFindScan(ms, off, s.total, budget, spans, newlines)
	f.binary = s.binary
	if err := r.writeStreamed(s, f); err != nil {
		return res, false
	}
	f.scan(true)
	if !f.done || f.lost || f.start < 0 || f.at < 0 && f.stop < 0 {
		return res, false
	}
	res.start, res.stop, res.cut, res.at, res.end = f.start, f.stop, f.cut, f.at, f.end
	if f.at < 0 {
		return res, true
	}
	// The snippet: the window around the match, read again.
	q := int64(0)
	for _, m := range ms {
		q = max(q, int64(len(m.query)))
	}
	w := &windowScan{lo: max(f.at-findWindow, 0), hi: f.end + findWindow + 6*q}
	tok := newTokenScan(w.lo, w.hi, s)
	if err := r.writeStreamed(s, io.MultiWriter(w, tok)); err != nil {
		return res, false
	}
	ml, ok := s.miniLine(w.win, w.lo, tok)
	if !ok {
		return res, false
	}
	at, end := ml.mini(f.at, false), ml.mini(f.end, true)
	if at < 0 || end < 0 {
		return res, false
	}
	from := bytes.LastIndexByte(ml.b[:at], '\n') + 1
	to := len(ml.b)
	if i := bytes.IndexByte(ml.b[at:], '\n'); i >= 0 {
		to = at + i
	}
	line := f.lineOf(f.at)
	var lineSpans []encodedSpan
	for _, sp := range spans {
		if sp.line != line {
			continue
		}
		a, b := ml.mini(sp.start, false), ml.mini(sp.end, true)
		if k := sort.Search(len(s.realQ), func(i int) bool { return s.realQ[i] >= sp.start-1 }); k < len(s.realQ) && s.realQ[k] == sp.start-1 {
			// A cut string's whole content: in b, whatever is kept of it.
			a = ml.cut[k] + 1
			b = bytes.IndexByte(ml.b[a:], '"') + a
		}
		if a < 0 || b < 0 {
			return res, false
		}
		lineSpans = append(lineSpans, encodedSpan{a, b, sp.marker})
	}
	enc := encodedLines{body: ml.b, from: from, to: to, spans: lineSpans, parsed: true}
	res.snippet, res.decoded = decodedSnippet(ml.b, at, m, lineSpans)
	if !res.decoded {
		res.snippet = enc.snippet(at, end)
	}
	return res, true
}

// writeStreamed writes line s to w as writeLine writes it put together:
// of a line read from its own object (inlineStreamedOf), the object's
// rest streamed once, each of import's cuts escaped into it at its place.
func (r *Rook) writeStreamed(s *streamedLine, w io.Writer) error {
	if s.inline == nil {
		return r.writeLine(&s.sl, w)
	}
	o, err := r.Store.OpenObject(s.id)
	if err != nil {
		return err
	}
	sp := &spliceWriter{r: r, s: s, w: w, skip: s.headBytes}
	if _, err := o.WriteTo(sp); err != nil {
		return err
	}
	if err := sp.place(); err != nil { // cuts at the rest's end
		return err
	}
	if sp.next != len(s.realRest) {
		return io.ErrUnexpectedEOF // the object shorter than its scan: never so
	}
	return nil
}

// spliceWriter writes the rest of a line's object (what comes past its
// first skip bytes) to w with import's cuts of line s escaped into it.
type spliceWriter struct {
	r    *Rook
	s    *streamedLine
	w    io.Writer
	skip int64
	pos  int64 // bytes of the rest written
	next int   // the first of import's cuts not written
}

func (sp *spliceWriter) Write(p []byte) (int, error) {
	n := len(p)
	if sp.skip > 0 {
		k := min(sp.skip, int64(len(p)))
		p, sp.skip = p[k:], sp.skip-k
	}
	for len(p) > 0 {
		if err := sp.place(); err != nil {
			return 0, err
		}
		k := int64(len(p))
		if sp.next < len(sp.s.realRest) {
			k = min(k, sp.s.realRest[sp.next]-sp.pos)
		}
		if k <= 0 {
			return 0, io.ErrUnexpectedEOF // a cut behind the rest: never so
		}
		if _, err := sp.w.Write(p[:k]); err != nil {
			return 0, err
		}
		p, sp.pos = p[k:], sp.pos+k
	}
	return n, nil
}

// place writes import's cuts that go where the rest is now.
func (sp *spliceWriter) place() error {
	quote := []byte{'"'}
	for sp.next < len(sp.s.realRest) && sp.s.realRest[sp.next] == sp.pos {
		id := sp.s.sl.Cuts[sp.next].ID
		if _, err := sp.w.Write(quote); err != nil {
			return err
		}
		if err := sp.r.writeEscaped(id, sp.w); err != nil {
			return fmt.Errorf("string %s of the line: %w", cas.Short(id), err)
		}
		if _, err := sp.w.Write(quote); err != nil {
			return err
		}
		sp.next++
	}
	return nil
}
