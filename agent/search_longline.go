package agent

// Search over one line of text too long to hold: a string of many MiB with
// no newline in it (minified JSON, a long log line in a tool's output).
// The streamed search (searchText) held each line of a text whole to
// score it (bodyScore.line) and gave up, reading the line whole, past
// streamTextLine; a 22 MB such line cost 200-220 MB. A line past
// streamTextLine is now scored as it is written (longLine): folded a
// piece at a time, each term's matches counted and checked as bodyScore
// does (count, whole word, first match), and termsTogether followed as a
// small automaton from each match of the first term (two where the query
// has words it dropped between two terms: past stopwords, or past what
// the query has there); about two longPiece
// of it are held at most (56 KiB folded, measured on a 22 MiB line).
// When that line is the best one, its snippet is made by reading it again
// (snippetScan), the first match's place known: searchSnippet's
// cuts (colors stripped, ends trimmed, a window around the match) followed
// rune by rune. What they give is what bodyScore and searchSnippet give
// of the line whole. A color sequence (ESC [ digits and semicolons) that
// runs past maxPendingSGR bytes is not held to learn whether an m ends
// it: the line is read a second time (snippetOfLine), knowing what each
// such sequence is from the first. A byte that is not UTF-8 is kept as it
// is by the folding (appendFold), and is a U+FFFD of the snippet, each, as
// the whole path has them; a snippet of a line with two such bytes in a
// row (which a color sequence stripped between them may join into a
// character) is made whole.

import (
	"bytes"
	"errors"
	"io"
	"unicode"
	"unicode/utf8"
)

// longPiece is how many bytes of a long line are folded and scanned
// at a time, and how many it reads past what it still looks at before it
// drops them. A var: the fuzz target makes it small.
var longPiece = 32 << 10

// maxStopword is the length of the longest of searchStopwords.
var maxStopword = func() int {
	n := 0
	for w := range searchStopwords {
		n = max(n, len(w))
	}
	return n
}()

// longLine scores one line written in pieces as bodyScore.line scores it
// whole.
type longLine struct {
	terms   [][]byte
	gaps    [][]byte // termBytes: what the query has between the terms
	low     []byte   // the line folded, from lowBase on
	lowBase int64
	runes   int64   // runes of the line before low[0]
	carry   []byte  // a character cut by the end of the last piece
	n       int64   // bytes of the line written
	pos     []int64 // per term: where its next match may start
	next    []int64 // where its next match counted (not overlapping) may start
	count   []int
	whole   []bool
	first   []int64 // its first match, in the folded line; -1
	firstR  []int64 // and in runes
	done    []bool  // nothing more to learn of the term
	// runs: termsTogether followed from matches of the first term, by
	// value, each with a buf of its own that a run added in its place
	// again reuses (a dense line has a match every few bytes: a run
	// allocated for each was a million allocations on a 4 MiB line).
	runs []tgRun
	// forks: the runs started past a gap (tgGap) while runs are read,
	// added to them after the run that started them.
	forks    []tgRun
	together bool
	bad      bool // a term empty: not scored streamed
}

func newLongLine(terms, gaps [][]byte) *longLine {
	l := &longLine{terms: terms, gaps: gaps}
	k := len(terms)
	l.pos, l.next, l.first, l.firstR = make([]int64, k), make([]int64, k), make([]int64, k), make([]int64, k)
	l.count, l.whole, l.done = make([]int, k), make([]bool, k), make([]bool, k)
	for i, t := range terms {
		l.first[i] = -1
		if len(t) == 0 {
			l.bad = true
		}
	}
	return l
}

func (l *longLine) write(p []byte) {
	for len(p) > 0 && !l.bad {
		k := min(len(p), longPiece)
		l.piece(p[:k])
		p = p[k:]
	}
}

func (l *longLine) piece(p []byte) {
	l.n += int64(len(p))
	b := p
	if len(l.carry) > 0 {
		b = append(l.carry, p...)
	}
	// Up to the last whole character.
	end := len(b)
	for j := len(b) - 1; j >= 0 && j >= len(b)-utf8.UTFMax; j-- {
		if utf8.RuneStart(b[j]) {
			if !utf8.FullRune(b[j:]) {
				end = j
			}
			break
		}
	}
	// Folded as appendFold folds the line whole (a byte that is not
	// UTF-8 kept as it is).
	l.low = appendFold(l.low, b[:end])
	l.carry = append(l.carry[:0:0], b[end:]...)
	l.scan(false)
	// Keep what the terms still look at, and the character before it,
	// and what each run holds (its buf), which a run it starts past a gap
	// reads again.
	keep := l.lowBase + int64(len(l.low)) - utf8.UTFMax
	for k := range l.terms {
		if !l.done[k] {
			keep = min(keep, l.pos[k]-utf8.UTFMax)
		}
	}
	for i := range l.runs {
		keep = min(keep, l.runs[i].at-int64(len(l.runs[i].buf)))
	}
	if d := int(keep - l.lowBase); d > longPiece {
		for d > 0 && !utf8.RuneStart(l.low[d]) {
			d--
		}
		l.runes += int64(runeCount(l.low[:d]))
		l.low = l.low[:copy(l.low, l.low[d:])]
		l.lowBase += int64(d)
	}
}

// runeCount is utf8.RuneCount without its copy: past the first byte that
// is not ASCII it counts a string made of the rest, a copy of each 32 KiB
// piece of a long line of Latin-1 or Cyrillic (twice the line in all).
func runeCount(b []byte) int {
	n := 0
	for len(b) > 0 {
		if b[0] < utf8.RuneSelf {
			b, n = b[1:], n+1
			continue
		}
		_, w := utf8.DecodeRune(b)
		b, n = b[w:], n+1
	}
	return n
}

// scan finds the terms' matches whose every byte, and the character
// after them, are in low (all of them, final).
func (l *longLine) scan(final bool) {
	end := l.lowBase + int64(len(l.low))
	for k, t := range l.terms {
		if l.done[k] {
			continue
		}
		limit := end - int64(len(t)) + 1 // matches start before it
		if !final {
			limit -= utf8.UTFMax
		}
		for l.pos[k] < limit && !l.done[k] {
			from := l.pos[k] - l.lowBase
			j := bytes.Index(l.low[from:limit-1+int64(len(t))-l.lowBase], t)
			if j < 0 {
				l.pos[k] = limit
				break
			}
			i := l.pos[k] + int64(j)
			l.match(k, i)
			l.pos[k] = i + 1
		}
	}
	// The runs of termsTogether, through what is written.
	if len(l.runs) > 0 {
		live := 0
		for i := 0; i < len(l.runs); i++ { // (forks are added as it goes)
			r := &l.runs[i]
			st := tgAlive
			for ; r.at < end && st == tgAlive; r.at++ {
				st = l.feed(r, l.low[r.at-l.lowBase], r.at)
			}
			if final && st == tgAlive && l.finishRun(r) {
				st = tgDone
			}
			if st == tgDone {
				l.together = true
				break
			}
			if st == tgAlive && !final {
				// Swapped, not copied: each run keeps a buf of its own.
				l.runs[live], l.runs[i] = l.runs[i], l.runs[live]
				live++
			}
			if len(l.forks) > 0 {
				l.runs = append(l.runs, l.forks...) // (r is not used past here)
				l.forks = l.forks[:0]
			}
		}
		l.runs = dedupRuns(l.runs[:live])
		if l.together {
			l.runs, l.forks = l.runs[:0], l.forks[:0]
			l.settle(0)
		}
	}
}

// match is a match of term k at i (of the folded line): what
// bodyScore.line learns of it.
func (l *longLine) match(k int, i int64) {
	t := l.terms[k]
	rel := i - l.lowBase
	j := rel + int64(len(t))
	left := i == 0 || !wordBefore(l.low[:rel]) || !wordAfter(t)
	right := j == int64(len(l.low)) || !wordAfter(l.low[j:]) || !wordBefore(t)
	l.whole[k] = l.whole[k] || left && right
	if i >= l.next[k] {
		l.count[k]++
		l.next[k] = i + int64(len(t))
	}
	if l.first[k] < 0 {
		l.first[k] = i
		l.firstR[k] = l.runes + int64(runeCount(l.low[:rel]))
	}
	if k == 0 && len(l.terms) > 1 && !l.together && left {
		// termsTogetherAt(line, i, terms, gaps): its first term matched.
		r := tgRun{at: i + int64(len(t))}
		if n := len(l.runs); n < cap(l.runs) {
			r.buf = l.runs[:n+1][n].buf[:0] // the buf of a run gone
		}
		if !wordBefore(t) {
			l.proceed(&r, r.at) // no character after it to check
		}
		l.runs = append(append(l.runs, r), l.forks...)
		l.forks = l.forks[:0]
	}
	l.settle(k)
}

// settle marks term k done when no match of it can change the score.
func (l *longLine) settle(k int) {
	if l.count[k] >= 3 && l.whole[k] && l.first[k] >= 0 && (k > 0 || len(l.terms) == 1 || l.together) {
		l.done[k] = true
	}
}

// finish scores the line, all of it written: as bodyScore.line does, and
// which terms it has (found), where its first match is in runes (at).
// ok is false when it cannot be scored streamed.
func (l *longLine) finish() (score int, found uint64, rank searchRank, at int64, ok bool) {
	if l.bad {
		return 0, 0, 0, 0, false
	}
	// A character cut short by the line's end: bytes that are not UTF-8.
	l.low = appendFold(l.low, l.carry)
	l.carry = nil
	l.scan(true)
	all, atLow := true, int64(-1)
	for k := range l.terms {
		if l.count[k] == 0 {
			all = false
			continue
		}
		found |= 1 << (k % 64)
		score += 4 + min(l.count[k], 3)
		if l.whole[k] {
			score += 3
		}
		if atLow < 0 || l.first[k] < atLow {
			atLow, at = l.first[k], l.firstR[k]
		}
	}
	if score == 0 {
		return 0, found, rankSome, 0, true
	}
	rank = rankSome
	if all {
		score += 4 * len(l.terms)
		rank = rankEvery
		if len(l.terms) > 1 && l.together {
			score += 6 * len(l.terms)
			rank = rankTogether
		}
	}
	return score, found, rank, at, true
}

// words is which terms the line has as words of their own (bodyScore.words),
// once finish has scored it.
func (l *longLine) words() uint64 {
	var w uint64
	for k, whole := range l.whole {
		if whole && l.count[k] > 0 {
			w |= 1 << (k % 64)
		}
	}
	return w
}

// tgRun is termsTogetherAt followed a byte at a time from one match of
// the first term: the phase it is in, before terms[k].
type tgRun struct {
	at    int64 // the next byte it reads, in the folded line
	k     int
	phase uint8
	m     int    // tgTerm: bytes of terms[k] matched; tgGap, tgGapBlanks: of gaps[k]
	buf   []byte // tgAfter: the character after the term; tgWord: the word so far
}

const (
	tgAfter     = iota // terms[k] matched: a word character after it ends the run
	tgTerm             // matching terms[k]
	tgBlank1           // a blank must come before terms[k]
	tgBlanks           // blanks before terms[k]
	tgWord             // a word before terms[k]: a stopword, skipped, or the term
	tgGap              // what the query has before terms[k] (gaps[k])
	tgGapBlanks        // blanks of it, one read
)

const (
	tgAlive = iota
	tgDead
	tgDone // the terms are together
)

// feed reads byte c, at in the folded line, into run r.
func (l *longLine) feed(r *tgRun, c byte, at int64) int {
	switch r.phase {
	case tgTerm:
		t := l.terms[r.k]
		if c != t[r.m] {
			return tgDead
		}
		r.m++
		if r.m < len(t) {
			return tgAlive
		}
		if !wordBefore(t) {
			return l.proceed(r, at+1)
		}
		r.phase, r.buf = tgAfter, r.buf[:0]
		return tgAlive
	case tgAfter:
		r.buf = append(r.buf, c)
		if !utf8.FullRune(r.buf) {
			return tgAlive
		}
		if ch, _ := utf8.DecodeRune(r.buf); isWordRune(ch) {
			return tgDead
		}
		return l.proceedWith(r, r.buf, at+1-int64(len(r.buf)))
	case tgBlank1:
		if c == ' ' || c == '\t' {
			r.phase = tgBlanks
			return tgAlive
		}
		return tgDead
	case tgBlanks:
		if c == ' ' || c == '\t' {
			return tgAlive
		}
		r.phase, r.buf = tgWord, append(r.buf[:0], c)
		return l.word(r, false, at)
	case tgWord:
		r.buf = append(r.buf, c)
		return l.word(r, false, at)
	case tgGap:
		g := l.gaps[r.k]
		if g[r.m] == ' ' {
			if c != ' ' && c != '\t' {
				return tgDead
			}
			r.phase = tgGapBlanks
			return tgAlive
		}
		if c != g[r.m] {
			return tgDead
		}
		l.pastGapByte(r)
		return tgAlive
	case tgGapBlanks:
		if c == ' ' || c == '\t' {
			return tgAlive
		}
		l.pastGapByte(r) // the blanks end: c is read past them
		return l.feed(r, c, at)
	}
	return tgDead
}

// pastGapByte: run r read byte r.m of gaps[r.k] (all of its blanks, of a
// space): terms[k] follows the gap's last.
func (l *longLine) pastGapByte(r *tgRun) {
	r.phase = tgGap
	if r.m++; r.m == len(l.gaps[r.k]) {
		r.phase, r.m = tgTerm, 0
	}
}

// proceed: terms[k] and what follows it matched; next is the first byte
// after the term. Past stopwords (termsTogetherAt's pastStopwords) r goes
// on; past what the query has before the next term (pastGap), a run
// started at next (a fork, read from next when r is).
func (l *longLine) proceed(r *tgRun, next int64) int {
	if r.k == len(l.terms)-1 {
		return tgDone
	}
	r.k++
	r.phase = tgBlank1
	if r.k < len(l.gaps) && l.gaps[r.k] != nil {
		l.forks = append(l.forks, tgRun{at: next, k: r.k, phase: tgGap})
	}
	return tgAlive
}

// proceedWith proceeds, then reads again the bytes in rest, the first of
// them at next.
func (l *longLine) proceedWith(r *tgRun, rest []byte, next int64) int {
	var b [utf8.UTFMax]byte
	n := copy(b[:], rest)
	st := l.proceed(r, next)
	for i := 0; i < n && st == tgAlive; i++ {
		st = l.feed(r, b[i], next+int64(i))
	}
	return st
}

// word decides, when it can, what termsTogetherAt does at the word in
// r.buf (its bytes from the word's start, the last at last): skip it, a
// stopword with a blank after it, or match terms[k] there. final: the line
// ends after buf.
func (l *longLine) word(r *tgRun, final bool, last int64) int {
	buf, t := r.buf, l.terms[r.k]
	w := 0
	for w < len(buf) && buf[w] >= 'a' && buf[w] <= 'z' {
		w++
	}
	if w == len(buf) && !final && w <= maxStopword {
		return tgAlive // the word goes on
	}
	brk := w == 0 || w > maxStopword || !searchStopwords[string(buf[:w])] ||
		w == len(buf) || buf[w] != ' ' && buf[w] != '\t'
	if !brk {
		if len(buf) < len(t) && bytes.HasPrefix(t, buf) && !final {
			return tgAlive // whether terms[k] starts here: more to read
		}
		brk = bytes.HasPrefix(buf, t)
	}
	// A copy (feeding it may write r.buf), on the stack when short.
	var tmp [32]byte
	rest := append(tmp[:0], buf...)
	from := last + 1 - int64(len(buf)) // where rest starts
	if brk {
		r.phase, r.m = tgTerm, 0
	} else {
		r.phase, rest, from = tgBlanks, rest[w:], from+int64(w)
	}
	st := tgAlive
	for i := 0; i < len(rest) && st == tgAlive; i++ {
		st = l.feed(r, rest[i], from+int64(i))
	}
	return st
}

// finishRun is whether run r, the line ended (at r.at), finds the terms
// together.
func (l *longLine) finishRun(r *tgRun) bool {
	switch r.phase {
	case tgAfter:
		if len(r.buf) > 0 {
			if ch, _ := utf8.DecodeRune(r.buf); isWordRune(ch) {
				return false
			}
			st := l.proceedWith(r, r.buf, r.at-int64(len(r.buf)))
			return st == tgDone || st == tgAlive && l.finishRun(r)
		}
		return l.proceed(r, r.at) == tgDone
	case tgWord:
		st := l.word(r, true, r.at-1)
		return st == tgDone || st == tgAlive && l.finishRun(r)
	}
	return false
}

// dedupRuns drops runs in the same state as another: they read the same
// bytes from here on, so end the same. A run dropped is swapped past the
// end of the slice returned, with its buf, for a new run to reuse.
func dedupRuns(runs []tgRun) []tgRun {
	if len(runs) < 2 {
		return runs
	}
	n := 0
	for i := range runs {
		r := &runs[i]
		same := false
		for j := range n {
			o := &runs[j]
			if o.at == r.at && o.k == r.k && o.phase == r.phase && o.m == r.m && bytes.Equal(o.buf, r.buf) {
				same = true
				break
			}
		}
		if !same {
			runs[n], runs[i] = runs[i], runs[n]
			n++
		}
	}
	return runs[:n]
}

// maxPendingSGR bounds the bytes of a color sequence not yet ended
// (ESC [ and digits and semicolons) snippetScan holds; past it, the
// sequence's runes are dropped or kept as it is known to end (a read of
// the line before). A var: the tests make it small.
var maxPendingSGR = 4 << 10

// notUTF8 is what snippetScan reads for a byte that is not UTF-8.
const notUTF8 rune = -1

// snippetScan is searchSnippet of a line written in pieces, its first
// match at rune at: the line's color sequences stripped (stripSGRAt),
// control characters made spaces, its ends trimmed, and SearchSnippetLen
// runes around the match kept, or its end.
type snippetScan struct {
	at     int64 // the match, in runes of the line
	orig   int64 // runes of the line read
	carry  []byte
	sgr    int    // 0; 1: after ESC; 2: after ESC [ and digits
	pend   []rune // the sequence not yet ended
	pendAt int64  // its first rune's place in the line
	bad    bool
	// lastBad: the last rune kept was a byte that is not UTF-8, rune
	// lastBadAt of the line.
	lastBad   bool
	lastBadAt int64
	// A sequence longer than maxPendingSGR is not held: whether it is a
	// color (stripped) or text is known from a read before (known, in
	// the line's order; next: the first not passed yet), or it is not,
	// and the line must be read again (again). verdicts: what each long
	// sequence turned out to be, for that read.
	long     uint8 // longNone, longUnknown, longColor, longText
	known    []sgrVerdict
	next     int
	verdicts []sgrVerdict
	again    bool

	idx    int64 // runes kept (of the line stripped)
	match  int64 // the match, in them; -1
	start  int64 // the first that is not a space; -1
	lastNS int64 // the last that is not a space
	head   []rune
	before []rune // the last runes, up to idx
	win    []rune
	from   int64  // where win starts; -1
	spaces []rune // spaces after lastNS
	tail   []rune // the runes up to lastNS
}

// sgrVerdict is what the color sequence whose ESC is rune at of the line
// turned out to be.
type sgrVerdict struct {
	at    int64
	color bool
}

// The states of a long sequence (snippetScan.long).
const (
	longNone    = iota
	longUnknown // not known: its runes are dropped, the line read again
	longColor   // a color: its runes are dropped
	longText    // text: its runes are kept as they come
)

func newSnippetScan(at int64, known []sgrVerdict) *snippetScan {
	return &snippetScan{at: at, match: -1, start: -1, lastNS: -1, from: -1, known: known}
}

func (s *snippetScan) Write(p []byte) (int, error) {
	n := len(p)
	if s.bad {
		return n, nil
	}
	b := p
	if len(s.carry) > 0 {
		b = append(s.carry, p...)
	}
	for len(b) > 0 {
		if !utf8.FullRune(b) {
			break
		}
		r, w := utf8.DecodeRune(b)
		if r == utf8.RuneError && w == 1 {
			r = notUTF8
		}
		s.read(r)
		b = b[w:]
	}
	s.carry = append(s.carry[:0:0], b...)
	return n, nil
}

// read is the line's next rune, through stripSGRAt.
func (s *snippetScan) read(r rune) {
	oi := s.orig
	s.orig++
	for {
		switch s.sgr {
		case 0:
			if r == 0x1b {
				s.sgr, s.pend, s.pendAt = 1, append(s.pend[:0], r), oi
				return
			}
			s.keep(r, oi)
			return
		case 1:
			if r == '[' {
				s.sgr, s.pend = 2, append(s.pend, r)
				return
			}
		case 2:
			if r >= '0' && r <= '9' || r == ';' {
				switch s.long {
				case longNone:
					if s.pend = append(s.pend, r); len(s.pend) > maxPendingSGR {
						s.startLong()
					}
				case longText:
					s.keep(r, oi)
				}
				return
			}
			if r == 'm' {
				if s.long != longNone {
					s.endLong(true)
					return
				}
				s.sgr, s.pend = 0, s.pend[:0] // a color: left out
				return
			}
		}
		// Not a color: its bytes are text, and r is read again.
		if s.long != longNone {
			s.endLong(false)
			continue
		}
		s.flushPending()
	}
}

// startLong: the sequence pending is longer than maxPendingSGR.
func (s *snippetScan) startLong() {
	for s.next < len(s.known) && s.known[s.next].at < s.pendAt {
		s.next++
	}
	switch {
	case s.next < len(s.known) && s.known[s.next].at == s.pendAt && s.known[s.next].color:
		s.long, s.pend = longColor, s.pend[:0]
	case s.next < len(s.known) && s.known[s.next].at == s.pendAt:
		s.flushPending()
		s.sgr, s.long = 2, longText
	default:
		s.long, s.pend, s.again = longUnknown, s.pend[:0], true
	}
}

// endLong: the long sequence ended, a color or not (its runes, text,
// kept already or to be kept when the line is read again).
func (s *snippetScan) endLong(color bool) {
	s.verdicts = append(s.verdicts, sgrVerdict{at: s.pendAt, color: color})
	s.sgr, s.long, s.pend = 0, longNone, s.pend[:0]
}

func (s *snippetScan) flushPending() {
	for i, c := range s.pend {
		s.keep(c, s.pendAt+int64(i))
	}
	s.sgr, s.pend = 0, s.pend[:0]
}

// keep is the next rune of the line stripped, from rune oi of the line.
func (s *snippetScan) keep(r rune, oi int64) {
	const n, lead = SearchSnippetLen, SearchSnippetLen / 4
	if s.again {
		return // the line is read again: only the verdicts count
	}
	// A byte that is not UTF-8 is a U+FFFD, each, as searchSnippet has
	// it; but two such bytes kept in a row with a color sequence between
	// them in the line are joined when searchSnippet strips it before it
	// decodes, and may be a character ("\xcd\x1b[m\x9f" is U+035F): the
	// snippet of such a line is left to it. Two side by side in the line
	// (Latin-1 text: "Gr\xfc\xdfe") are two U+FFFD either way, and
	// leaving every such line to searchSnippet folded a long Latin-1 line
	// whole, ten times the line.
	if r == notUTF8 {
		if s.lastBad && oi != s.lastBadAt+1 {
			s.bad = true
		}
		r = utf8.RuneError
		s.lastBad, s.lastBadAt = true, oi
	} else {
		s.lastBad = false
	}
	if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
		r = ' '
	}
	if s.match < 0 && oi >= s.at {
		s.match = s.idx
		if s.start >= 0 {
			s.from = max(s.start, s.match-lead)
			s.win = append(s.win, s.before[int64(len(s.before))-(s.idx-s.from):]...)
		}
	}
	space := unicode.IsSpace(r)
	if s.start < 0 && !space {
		s.start = s.idx
	}
	if s.start >= 0 && len(s.head) <= n {
		s.head = append(s.head, r)
	}
	if s.from >= 0 && len(s.win) < n {
		s.win = append(s.win, r)
	}
	s.before = keepLast(append(s.before, r), lead)
	if space {
		s.spaces = keepLast(append(s.spaces, r), n)
	} else {
		s.tail = keepLast(append(append(s.tail, s.spaces...), r), n)
		s.spaces = s.spaces[:0]
		s.lastNS = s.idx
	}
	s.idx++
}

// keepLast keeps at least the last n runes of b, trimming it when it is
// twice that.
func keepLast(b []rune, n int) []rune {
	if len(b) >= 2*n {
		b = b[:copy(b, b[len(b)-n:])]
	}
	return b
}

// snippet is searchSnippet of the line, all of it written.
func (s *snippetScan) snippet() (string, bool) {
	const n = SearchSnippetLen
	// A character cut short by the line's end: bytes that are not UTF-8.
	for len(s.carry) > 0 && !s.bad {
		r, w := utf8.DecodeRune(s.carry)
		if r == utf8.RuneError && w == 1 {
			r = notUTF8
		}
		s.read(r)
		s.carry = s.carry[w:]
	}
	if s.bad {
		return "", false
	}
	if s.long != longNone {
		s.endLong(false) // cut by the line's end: text
	}
	s.flushPending()
	if s.again {
		return "", false
	}
	if s.match < 0 {
		// The match is in a color sequence at the line's end, stripped:
		// searchSnippet puts it just past the last rune, and its window
		// starts SearchSnippetLen/4 runes before that.
		s.match = s.idx
		if s.start >= 0 {
			s.from = max(s.start, s.match-SearchSnippetLen/4)
			s.win = append(s.win[:0], s.before[int64(len(s.before))-(s.idx-s.from):]...)
		}
	}
	if s.start < 0 {
		return "", true
	}
	end := s.lastNS + 1
	if end-s.start <= n {
		return string(s.head[:end-s.start]), true
	}
	from, win := s.from, s.win
	if from < 0 {
		from, win = s.start, s.head
	}
	if end-from <= n-1 {
		return "…" + string(s.tail[len(s.tail)-(n-1):]), true
	}
	room, pre := n-1, ""
	if from > s.start {
		pre = "…"
		room--
	}
	return pre + string(win[:room]) + "…", true
}

// snippetOfLine is searchSnippet of the line read writes, its first
// match at rune at. A line with a color sequence (or what starts as one)
// longer than maxPendingSGR is read twice: the first read learns what
// each such sequence is, the second cuts the snippet knowing it.
func snippetOfLine(at int64, read func(io.Writer) error) (string, bool) {
	sn := newSnippetScan(at, nil)
	if err := read(sn); err != nil {
		return "", false
	}
	snip, ok := sn.snippet()
	if !sn.again {
		return snip, ok
	}
	sn = newSnippetScan(at, sn.verdicts)
	if err := read(sn); err != nil {
		return "", false
	}
	if snip, ok = sn.snippet(); sn.again {
		return "", false
	}
	return snip, ok
}

// errEnough stops a read that has what it needs.
var errEnough = errors.New("enough")

// rangeWriter writes bytes [skip, skip+n) of what is written to it to w.
type rangeWriter struct {
	w       io.Writer
	skip, n int64
}

func (rw *rangeWriter) Write(p []byte) (int, error) {
	k := len(p)
	if rw.skip >= int64(len(p)) {
		rw.skip -= int64(len(p))
		return k, nil
	}
	p = p[rw.skip:]
	rw.skip = 0
	p = p[:min(int64(len(p)), rw.n)]
	rw.w.Write(p)
	rw.n -= int64(len(p))
	if rw.n == 0 {
		return k, errEnough
	}
	return k, nil
}
