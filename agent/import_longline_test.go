package agent

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rookhq/rook/internal/vfs"
)

// hexRun is n bytes of lower-case hex digits, with now and then a byte
// JSON escapes as \u00XX (more hex digits), a backslash (\\) before hex
// digits, or a quote: every byte around a match in it may be part of an
// escape, as far as the escaped bytes alone tell.
func hexRun(rng *rand.Rand, n int) []byte {
	b := make([]byte, 0, n)
	for len(b) < n {
		switch rng.IntN(200) {
		case 0:
			b = append(b, 0x01+byte(rng.IntN(0x1e)))
		case 1:
			b = append(b, '\\')
		case 2:
			b = append(b, '"')
		default:
			b = append(b, "0123456789abcdef"[rng.IntN(16)])
		}
	}
	return b
}

// A find hit deep inside a long run of hex digits (a hash dump, a hex
// encoded blob in a tool's output) is shown streamed: its snippet's window
// started and ended where an escape does not (the escapes followed from
// the string's start), not read whole because no byte near the window's
// ends said so by itself; and what it shows is what the whole line gave.
func TestStreamedFindInALongHexRunStreams(t *testing.T) {
	streamEveryLine(t)
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	rng := rand.New(rand.NewPCG(41, 42))
	var out []byte
	var at []int
	for range 6 {
		out = append(out, hexRun(rng, 20<<10+rng.IntN(8<<10))...)
		at = append(at, len(out))
		out = append(out, "deadbeefcafe"...)
	}
	out = append(out, hexRun(rng, 20<<10)...)
	env := `"sessionId":"S","cwd":"/home/u/proj","version":"2.1.38"`
	lines := []string{
		fmt.Sprintf(`{"type":"user","uuid":"u1","parentUuid":null,%s,"timestamp":"2026-02-10T21:00:00.000Z","message":{"role":"user","content":"run it"}}`, env),
		fmt.Sprintf(`{"type":"user","uuid":"u2","parentUuid":"u1",%s,"timestamp":"2026-02-10T21:00:02.000Z","message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":%s}]}}`, env, appendJSONString(nil, out)),
	}
	path := "/p/-home-u-proj/S.jsonl"
	writeSource(t, fsys, path, lines, "")
	id := *fileByPath(t, mustImport(t, r, FormatClaudeCode, path), path).Session
	if err := r.Store.Sync(); err != nil {
		t.Fatal(err)
	}
	evs, err := r.Log.Read(id, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	_, _, s, err := r.readBodyOrStream(evs[0].Body, math.MaxInt64)
	if err != nil || s == nil {
		t.Fatalf("not streamed: %v", err)
	}
	whole, _, err := r.readBody(evs[0].Body)
	if err != nil {
		t.Fatal(err)
	}
	hits := 0
	for from := 0; ; from++ {
		i := bytes.Index(whole[from:], []byte("deadbeefcafe"))
		if i < 0 {
			break
		}
		from += i
		hits++
		for _, q := range []string{"deadbeefcafe", "beef", "cafe"} {
			off := int64(from - rng.IntN(64))
			res, ok := r.findStreamed(s, off, FindMaxBytes, newFoldMatcher(q), findEscaped(q))
			if !ok || res.at < 0 {
				t.Errorf("find %q from %d (a hit at %d, in hex digits): streamed %v, hit at %d: read whole", q, off, from, ok, res.at)
			}
			seq := evs[0].Seq
			fq := FindQuery{Query: q, From: seq, Through: &seq, Offset: off}
			readWhole = true
			want, werr := r.Find(id, fq)
			readWhole = false
			got, gerr := r.Find(id, fq)
			if fmt.Sprint(werr) != fmt.Sprint(gerr) || !reflect.DeepEqual(want, got) {
				t.Fatalf("find %+v:\nstreamed %+v (%v)\nwhole    %+v (%v)", fq, got, gerr, want, werr)
			}
		}
	}
	if hits != len(at) {
		t.Fatalf("%d hits in the line, %d put in", hits, len(at))
	}
}

// longLineWords are the words FuzzLongLineScore and
// TestLongLineScoresAsWhole make lines of: terms, stopwords between them,
// blanks, word characters on either side, colors, controls, case that
// lower-cases to other lengths.
var longLineWords = []string{"mix", "test", "Mix", "TEST", "the", "a", "of", " ", "  ", "\t", "_", "x", "é", "İ", "K", "日本",
	"\x1b[31m", "\x1b[0m", "\x1b[", "\x1b[12", "\x1b", "31m", "\x07", "\u2028", "\u00a0", "-v", ".", ",", "fix", "parser", "mixtest", "1"}

// checkLongLine scores line whole (bodyScore, searchSnippet) and streamed
// (longLine, snippetScan), written in pieces of the sizes rng gives, and
// fails when they differ.
func checkLongLine(t *testing.T, line []byte, query string, rng *rand.Rand) {
	t.Helper()
	if bytes.IndexByte(line, '\n') >= 0 {
		return
	}
	terms, gaps := termBytes(searchTermsOf(query))
	if len(terms) == 0 {
		return
	}
	whole := bodyScore{terms: terms, gaps: gaps}
	whole.line(line)
	wScore, wSnip := whole.result()
	pieces := func(w func([]byte)) {
		for rest := line; len(rest) > 0; {
			k := min(len(rest), 1+rng.IntN(1+rng.IntN(64)))
			if len(line) > 64<<10 {
				k = min(len(rest), 1+rng.IntN(40<<10))
			}
			w(rest[:k])
			rest = rest[k:]
		}
	}
	l := newLongLine(terms, gaps)
	pieces(l.write)
	score, found, rank, at, ok := l.finish()
	if !ok {
		t.Fatalf("%q, terms %q: not scored streamed", line, terms)
	}
	streamed := bodyScore{terms: terms, gaps: gaps}
	streamed.longLine(score, found, l.words(), rank, longRef{at: at})
	sScore, _ := streamed.result()
	if sScore != wScore {
		t.Fatalf("%q, terms %q: streamed score %d, whole %d", line, terms, sScore, wScore)
	}
	if wScore == 0 {
		return
	}
	snip, ok := snippetOfLine(at, func(w io.Writer) error {
		pieces(func(p []byte) { w.Write(p) })
		return nil
	})
	if !ok && joinedRun(line) {
		return // left to searchSnippet, which may join the two bytes
	}
	if !ok || snip != wSnip {
		t.Fatalf("%q, terms %q: streamed snippet %q (%v), whole %q", line, terms, snip, ok, wSnip)
	}
}

// joinedRun says whether line, its color sequences stripped, has two
// bytes that are not UTF-8 in a row, as snippetScan reads them, that a
// color sequence kept apart in the line: the two bytes of a character a
// color sequence splits ("\xcd\x1b[m\x9f": whole, once the sequence is
// stripped, U+035F) are such a pair, whose snippet snippetScan leaves
// to searchSnippet. Two side by side in the line (Latin-1 text) are not.
func joinedRun(line []byte) bool {
	// Each byte that is not UTF-8 marked by a rune the line does not
	// hold, which stripping the color sequences (ASCII) leaves as it is:
	// stripping only brings marks together, so it joined two when the
	// line stripped has more marks side by side than the line.
	mark := rune(0xF0000)
	for bytes.ContainsRune(line, mark) {
		mark++
	}
	var marked []byte
	for b := line; len(b) > 0; {
		r, w := utf8.DecodeRune(b)
		if r == utf8.RuneError && w == 1 {
			marked = utf8.AppendRune(marked, mark)
		} else {
			marked = append(marked, b[:w]...)
		}
		b = b[w:]
	}
	pairs := func(b []byte) int {
		n, last := 0, rune(-1)
		for _, r := range string(b) {
			if r == mark && last == mark {
				n++
			}
			last = r
		}
		return n
	}
	stripped, _ := stripSGRAt(marked, 0)
	return pairs(stripped) > pairs(marked)
}

// A line with bytes that are not UTF-8 (alone, in runs, a character cut
// short, at its ends and at every piece's boundary) scores as it is
// written as it does whole, and its snippet is searchSnippet's, or left
// to it (two such bytes a color sequence keeps apart, joinedRun): such a
// line was read whole, and so was one with two side by side.
func TestLongLineNotUTF8MatchesWhole(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	parts := []string{"mix test ", "needle", "\xff", "\xff\xfe", "\xe2\x82", "\xc3", "\xed\xa0\xbd", "é", "İ", "\x1b[31m", " ", "word "}
	old := longPiece
	t.Cleanup(func() { longPiece = old })
	for i := range 600 {
		ps := parts
		if i%2 == 0 {
			// No two such bytes in a row: every snippet is made streamed.
			ps = []string{"mix test ", "needle", "\xffx", "\xed\xa0\xbdy", "é", "İ", " ", "word ", "\x1b[31m"}
		}
		var b []byte
		for n := 1 + rng.IntN(3000); len(b) < n; {
			b = append(b, ps[rng.IntN(len(ps))]...)
		}
		if i%5 == 0 {
			b = append(b, "\xf0\x9f"...) // a character cut short by the end
		}
		longPiece = []int{old, 16, 5, 1}[i%4]
		checkLongLine(t, b, []string{"needle", "mix test", "test needle", "é"}[rng.IntN(4)], rng)
	}
}

// A line scored as it is written, never held, scores as it does whole,
// and its snippet is the one searchSnippet cuts of it: lines of terms,
// stopwords and blanks between them, colors, controls and characters that
// lower-case to other lengths, written in pieces cut anywhere.
func TestLongLineScoresAsWhole(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	queries := []string{"mix test", "mix", "test mix", "fix the parser", "é k", "31m", "-v", "mix test x", "日本", "mixtest a",
		"mix a test", "mix, the  test", "fix a. parser"} // words dropped between terms: what the query has there
	for i := range 4000 {
		var b []byte
		n := rng.IntN(60)
		if i%10 == 0 {
			n = 200 + rng.IntN(400) // past the snippet's length
		}
		if i%200 == 0 {
			// Hundreds of KiB before the terms: longLine drops what it
			// has read before it finds them.
			filler := []string{"the", "a", "of", " ", "\t", "_", "İ", "\u00a0", "\x1b[0m", "."}
			for range 60000 {
				b = append(b, filler[rng.IntN(len(filler))]...)
			}
		}
		for range n {
			b = append(b, longLineWords[rng.IntN(len(longLineWords))]...)
			if i%7 == 0 && rng.IntN(8) == 0 {
				// A color sequence (or what starts as one) longer than
				// snippetScan holds: a color, or text.
				b = append(b, "\x1b["...)
				for range 1 + rng.IntN(3*maxPendingSGR) {
					b = append(b, "0123456789;"[rng.IntN(11)])
				}
			}
		}
		if i%2 == 0 {
			// Pieces of 16 bytes: what has been read is dropped all along;
			// and color sequences of over 16 bytes are long ones.
			old, oldSGR := longPiece, maxPendingSGR
			longPiece, maxPendingSGR = 16, 16
			checkLongLine(t, b, queries[rng.IntN(len(queries))], rng)
			longPiece, maxPendingSGR = old, oldSGR
			continue
		}
		checkLongLine(t, b, queries[rng.IntN(len(queries))], rng)
	}
}

// FuzzLongLineScore compares the score and snippet of a line scored as
// it is written (longLine, snippetScan) with those of the line whole
// (bodyScore, searchSnippet): a line with no newline, a query, and the
// pieces it is written in (seed).
func FuzzLongLineScore(f *testing.F) {
	f.Add([]byte("run mix test --seed 0"), "mix test", uint64(1))
	f.Add([]byte("fix the   \tthe parser, mix\x1b[31mtest\x1b[0m"), "fix parser", uint64(2))
	f.Add([]byte("can't connect, create the a branch; create a  branch"), "can't connect create a branch", uint64(11))
	// A first term that ends in no word character, what the query has
	// after it (a blank, a U+FFFD) before the next.
	f.Add([]byte("n\xc1s\xc8 \xa41m"), "s\xc8 \xa41m", uint64(12))
	f.Add([]byte(strings.Repeat("{\"id\":1,\"name\":\"item\"},", 40)+"mix test"), "mix test", uint64(3))
	f.Add([]byte("İİİ KELVIN \u2028 日本test 31m\x1b[12 x"), "k test 31m", uint64(4))
	// The only match in a color sequence at the line's end, stripped.
	f.Add([]byte(strings.Repeat("word ", 40)+"\x1b[31m"), "31m", uint64(5))
	// Color sequences longer than snippetScan holds (16 bytes here): one
	// that is a color, one that is not, one the line's end cuts, the
	// match inside one.
	f.Add([]byte("head \x1b[1;2;3;4;5;6;7;8;9;10;11m mix \x1b[31;32;33;34;35;36;x test"), "mix test", uint64(6))
	f.Add([]byte(strings.Repeat("word ", 40)+"\x1b[1;2;3;4;5;6;7;8;31;9;10;11;12"), "31", uint64(7))
	f.Add([]byte("\x1b[0000000000000000000000000000000000mtest\x1b[99999999999999999999999999999999999 test"), "test 99", uint64(8))
	// Bytes that are not UTF-8: alone, in a run, a character cut short.
	f.Add([]byte("mix\xfftest \xff\xfe mix test \xe2\x82"), "mix test", uint64(9))
	f.Add([]byte(strings.Repeat("word ", 40)+"\xc3 needle \x1b[31m\xff"), "needle", uint64(10))
	// Pieces of 16 bytes: what has been read is dropped all along.
	old, oldSGR := longPiece, maxPendingSGR
	longPiece, maxPendingSGR = 16, 16
	f.Cleanup(func() { longPiece, maxPendingSGR = old, oldSGR })
	f.Fuzz(func(t *testing.T, line []byte, query string, seed uint64) {
		if len(line) > 8192 {
			return
		}
		checkLongLine(t, line, query, rand.New(rand.NewPCG(seed, seed)))
	})
}

// Search over an imported line whose tool output is one string of 8 MiB
// with no newline in it (minified JSON) scores it streamed, as the whole
// line does, holding a little of it: it was read whole (a line of search's
// text over streamTextLine), several times the output's size.
func TestSearchOfALongLineWithNoNewlineHoldsLittle(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	var out []byte
	for i := 0; len(out) < 8<<20; i++ {
		out = fmt.Appendf(out, `{"id":%d,"name":"item-%d","tags":["alpha","beta"],"ok":true},`, i, i)
		if i == 20000 {
			out = append(out, `{"note":"FINDME middle, run mix test"},`...)
		}
	}
	out = append(out, `{"last":"findme-END"}`...)
	env := `"sessionId":"S","cwd":"/home/u/proj","version":"2.1.38"`
	lines := []string{
		fmt.Sprintf(`{"type":"user","uuid":"u1","parentUuid":null,%s,"timestamp":"2026-02-10T21:00:00.000Z","message":{"role":"user","content":"run it"}}`, env),
		fmt.Sprintf(`{"type":"user","uuid":"u2","parentUuid":"u1",%s,"timestamp":"2026-02-10T21:00:02.000Z","message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":%s}]}}`, env, appendJSONString(nil, out)),
	}
	path := "/p/-home-u-proj/S.jsonl"
	writeSource(t, fsys, path, lines, "")
	id := *fileByPath(t, mustImport(t, r, FormatClaudeCode, path), path).Session
	if err := r.Store.Sync(); err != nil {
		t.Fatal(err)
	}
	evs, err := r.Log.Read(id, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	old := streamLinesOver
	streamLinesOver = 1 << 20
	defer func() { streamLinesOver = old }()
	_, _, s, err := r.readBodyOrStream(evs[0].Body, math.MaxInt64)
	if err != nil || s == nil {
		t.Fatalf("not streamed: %v", err)
	}
	seed := maphash.MakeSeed()
	for _, q := range []string{"findme-end", "findme middle", "mix test", "item-20001 alpha", "nowhere"} {
		terms, gaps := termBytes(searchTermsOf(q))
		var score int
		var snip string
		var h uint64
		n := allocatedBy(func() { score, snip, h, err = r.searchText(s, terms, gaps, seed) })
		if err != nil {
			t.Fatalf("search %q: %v: the line was not scored streamed", q, err)
		}
		wScore, wSnip, wH := wholeSearchText(t, r, evs[0].Body, terms, gaps, seed)
		if score != wScore || snip != wSnip || h != wH {
			t.Fatalf("search %q: streamed %d %q %x, whole %d %q %x", q, score, snip, h, wScore, wSnip, wH)
		}
		if n > int64(len(out)) {
			t.Errorf("search %q of a line of %d bytes allocated %d bytes", q, len(out), n)
		}
		t.Logf("search %q: score %d, %d bytes allocated, snippet %q", q, score, n, snip)
	}
	for _, q := range []string{"findme-end", "mix test"} {
		readWhole = true
		want, werr := r.Search(q, SearchOptions{})
		readWhole = false
		got, gerr := r.Search(q, SearchOptions{})
		if fmt.Sprint(werr) != fmt.Sprint(gerr) || !reflect.DeepEqual(want, got) || len(got.Hits) != 1 {
			t.Fatalf("search %q: streamed %+v (%v), whole %+v (%v)", q, got, gerr, want, werr)
		}
	}
}

// A line over streamTextLine that a cut string's object writes in one
// piece with its newline (an object read whole) is scored as it is
// written too, not lower-cased and copied whole.
func TestTextScorerStreamsALongLineWrittenInOnePiece(t *testing.T) {
	line := append(bytes.Repeat([]byte("abc def "), 2<<20/8), " needle\n"...)
	sc := &textScorer{score: bodyScore{terms: [][]byte{[]byte("needle")}, keep: true}, cut: 0}
	n := allocatedBy(func() {
		sc.Write(line)
		sc.flush()
	})
	if sc.long || sc.score.long == nil {
		t.Fatalf("a line of %d bytes was not scored streamed (given up %v)", len(line), sc.long)
	}
	if n > int64(len(line))/4 {
		t.Errorf("scoring a line of %d bytes allocated %d bytes", len(line), n)
	}
}

// A line whose only match is in a color sequence at its end (stripped
// from the snippet): searchSnippet puts the match past the line's last
// rune and shows its end; the streamed snippet must do the same.
func TestLongLineSnippetOfAMatchInATrailingColor(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	for _, line := range []string{
		strings.Repeat("word ", 100) + "\x1b[31m",
		strings.Repeat("word ", 100) + "\x1b[31m   \x1b[0m",
		"  " + strings.Repeat("x", 300) + "\x1b[31m",
	} {
		checkLongLine(t, []byte(line), "31m", rng)
	}
}

// tokenScan, fed a line in pieces of any size, finds the first byte from
// lo on and the last up to hi, in the cut strings' escaped contents, that
// cuts no escape: each checked against the boundaries of every escape
// appendJSONString writes, found by reading the contents whole.
func TestTokenScanFindsTheEscapesBoundaries(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	for range 300 {
		var line []byte
		s := &streamedLine{}
		bound := map[int64]bool{} // where a window may start or end
		for range 1 + rng.IntN(3) {
			line = append(line, `,"k":"`...)
			content := int64(len(line))
			esc := appendJSONString(nil, hexRun(rng, 2+rng.IntN(300)))
			esc = esc[1 : len(esc)-1]
			for i := 0; i <= len(esc); {
				bound[content+int64(i)] = true
				if i == len(esc) {
					break
				}
				switch {
				case esc[i] != '\\':
					i++
				case esc[i+1] == 'u':
					i += 6
				default:
					i += 2
				}
			}
			s.realQ = append(s.realQ, content-1)
			s.cuts = append(s.cuts, cutScan{escLen: int64(len(esc))})
			line = append(append(line, esc...), '"')
		}
		line = append(line, '}')
		// The window starts inside a string and ends inside it or a later
		// one, as miniLine asks tokenScan where.
		inside := func(c int) int64 {
			content := s.realQ[c] + 1
			return content + 1 + int64(rng.IntN(int(s.cuts[c].escLen)-1))
		}
		a := rng.IntN(len(s.cuts))
		b := a + rng.IntN(len(s.cuts)-a)
		lo, hi := inside(a), inside(b)
		if lo > hi {
			lo, hi = hi, lo
		}
		wantLo, wantHi := int64(-1), int64(-1)
		for p := lo; p <= hi && wantLo < 0; p++ {
			if bound[p] {
				wantLo = p
			}
		}
		for p := hi; p >= lo && wantHi < 0; p-- {
			if bound[p] {
				wantHi = p
			}
		}
		tok := newTokenScan(lo, hi, s)
		for rest := line; len(rest) > 0; {
			k := min(len(rest), 1+rng.IntN(8))
			tok.Write(rest[:k])
			rest = rest[k:]
		}
		// What the scan found past hi (tokLo) or before lo (tokHi) is
		// no window's: only [lo, hi] is looked at.
		gotLo, gotHi := tok.tokLo, tok.tokHi
		if gotLo > hi {
			gotLo = -1
		}
		if gotHi < lo {
			gotHi = -1
		}
		if gotLo != wantLo || gotHi != wantHi {
			t.Fatalf("line %q, window [%d, %d]: tokenScan %d, %d; the escapes' boundaries %d, %d", line, lo, hi, gotLo, gotHi, wantLo, wantHi)
		}
	}
}

// Search over an imported line of text of 4 MiB holding color sequences
// (or what start as ones) longer than snippetScan holds, 12 KiB of digits
// and semicolons, scores it streamed and cuts its snippet as the whole
// line does: one is a color, one is not, one holds the match. The line
// was read whole.
func TestSearchOfALongLineWithALongColorStreams(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	long := func(end string) string { return "\x1b[" + strings.Repeat("1;", 6<<10) + end }
	var out []byte
	for i := 0; len(out) < 4<<20; i++ {
		out = fmt.Appendf(out, `{"id":%d,"name":"item-%d"},`, i, i)
		switch i {
		case 10000:
			out = append(out, long("31m")+"COLORWORD, "...)
		case 30000:
			out = append(out, long("x")+" TEXTWORD, "...)
		case 50000:
			out = append(out, "\x1b[1;1;1;1;987654;"+strings.Repeat("1;", 6<<10)+"m"...)
		}
	}
	env := `"sessionId":"S","cwd":"/home/u/proj","version":"2.1.38"`
	lines := []string{
		fmt.Sprintf(`{"type":"user","uuid":"u1","parentUuid":null,%s,"timestamp":"2026-02-10T21:00:00.000Z","message":{"role":"user","content":"run it"}}`, env),
		fmt.Sprintf(`{"type":"user","uuid":"u2","parentUuid":"u1",%s,"timestamp":"2026-02-10T21:00:02.000Z","message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":%s}]}}`, env, appendJSONString(nil, out)),
	}
	path := "/p/-home-u-proj/S.jsonl"
	writeSource(t, fsys, path, lines, "")
	id := *fileByPath(t, mustImport(t, r, FormatClaudeCode, path), path).Session
	if err := r.Store.Sync(); err != nil {
		t.Fatal(err)
	}
	evs, err := r.Log.Read(id, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	old := streamLinesOver
	streamLinesOver = 1 << 20
	defer func() { streamLinesOver = old }()
	_, _, s, err := r.readBodyOrStream(evs[0].Body, math.MaxInt64)
	if err != nil || s == nil {
		t.Fatalf("not streamed: %v", err)
	}
	seed := maphash.MakeSeed()
	for _, q := range []string{"colorword", "textword", "987654", "item-40000", "item-0"} {
		terms, gaps := termBytes(searchTermsOf(q))
		score, snip, h, err := r.searchText(s, terms, gaps, seed)
		if err != nil {
			t.Fatalf("search %q: %v: the line was not scored streamed", q, err)
		}
		wScore, wSnip, wH := wholeSearchText(t, r, evs[0].Body, terms, gaps, seed)
		if score != wScore || snip != wSnip || h != wH {
			t.Fatalf("search %q: streamed %d %q %x, whole %d %q %x", q, score, snip, h, wScore, wSnip, wH)
		}
		t.Logf("search %q: score %d, snippet %q", q, score, snip)
	}
}
