package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// inlineContent is the content of a JSON string literal (as written,
// quotes left out) of about n bytes that import leaves in its line: words,
// escapes of every kind (lone surrogates, a pair, \/, \u00e9, upper-case
// hex), bytes that are not UTF-8 alone and in runs, characters of several
// bytes. escapes false: no backslash at all.
func inlineContent(rng *rand.Rand, n int, escapes bool) []byte {
	parts := []string{"plain words ", "needle ", "Needle", "é", "日本", "😀", "\xff", "\xff\xfe", "\xe2\x82", "\xc3", "\xed\xa0\xbd",
		"mix test ", "  "}
	if escapes {
		parts = append(parts, `\ud83d`, `\ude00`, `\ud83d\ude00`, `\uD83D\uDE00`, `\/`, `\u00e9`, `\n`, `\t`, `\"`, `\\`, `\u001b[0m`,
			`\u0000`, `\ud83dneedle`, `needle\ud800`)
	}
	var b []byte
	for len(b) < n {
		b = append(b, parts[rng.IntN(len(parts))]...)
	}
	return b
}

// The decoder of an inline cut gives, written in pieces cut anywhere (in
// an escape, a surrogate pair, a character, a run of bytes that are not
// UTF-8), what appendDecodedString gives of the content whole.
func TestInlineDecoderMatchesWhole(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for i := range 2000 {
		content := inlineContent(rng, 1+rng.IntN(200), i%3 != 0)
		checkInlineDecoder(t, content, rng)
	}
}

func checkInlineDecoder(t *testing.T, content []byte, rng *rand.Rand) {
	t.Helper()
	want, ok := appendDecodedString(nil, content)
	var got bytes.Buffer
	d := &inlineDecoder{w: &got, esc: bytes.IndexByte(content, '\\') >= 0}
	var err error
	for rest := content; len(rest) > 0 && err == nil; {
		k := min(len(rest), 1+rng.IntN(16))
		_, err = d.Write(rest[:k])
		rest = rest[k:]
	}
	if err == nil {
		err = d.close()
	}
	// Content a literal may not hold (a raw control character or quote,
	// a bad escape) is the scan's to refuse (inlineScan), not the
	// decoder's; the content of a valid literal decodes.
	lit := append(append([]byte{'"'}, content...), '"')
	valid := json.Valid(lit) && !bytes.ContainsFunc(content, func(r rune) bool { return r < 0x20 })
	if !valid {
		return
	}
	if err != nil || !ok {
		t.Fatalf("%q: decoded %v, whole %v", content, err, ok)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("%q: decoded %q, whole %q", content, got.Bytes(), want)
	}
}

// FuzzInlineDecoder compares the decoder of an inline cut, written in
// pieces, with appendDecodedString of the content whole.
func FuzzInlineDecoder(f *testing.F) {
	f.Add([]byte(`a\ud83d b`), uint64(1))
	f.Add([]byte(`\ud83d\ude00\uD83D\uDE00\ud800\/\u00e9`), uint64(2))
	f.Add([]byte("x\xff\xfe\xe2\x82 \\n\xc3"), uint64(3))
	f.Add([]byte("no escape \xff at all \xed\xa0\xbd"), uint64(4))
	f.Add([]byte(`bad \x escape`), uint64(5))
	f.Add([]byte(`cut \ud8`), uint64(6))
	f.Fuzz(func(t *testing.T, content []byte, seed uint64) {
		checkInlineDecoder(t, content, rand.New(rand.NewPCG(seed, seed)))
	})
}

// Search over an imported line whose long strings import left in it (a
// byte that is not UTF-8, a lone surrogate, an escape written some other
// way) reads the line streamed, from its object, and gives exactly the
// score, snippet and text the whole read gives, also with the lines of
// their text scored as they are written in pieces of 7 and 16 bytes (so
// that bytes that are not UTF-8 fall at pieces' boundaries; the decoder's
// own pieces are TestInlineDecoderMatchesWhole's). It read every such
// line whole (its object, then the line decoded: several times its size).
func TestSearchOfStringsLeftInTheLineStreams(t *testing.T) {
	streamEveryLine(t)
	oldMin := inlineCutMin
	inlineCutMin = 2000
	t.Cleanup(func() { inlineCutMin = oldMin })
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	rng := rand.New(rand.NewPCG(31, 32))
	env := `"sessionId":"S","cwd":"/home/u/proj","version":"2.1.38"`
	var lines []string
	add := func(format string, a ...any) {
		lines = append(lines, fmt.Sprintf(`{"type":"user","uuid":"u%d",%s,"timestamp":"2026-02-10T21:00:00.000Z",`, len(lines), env)+fmt.Sprintf(format, a...)+"}")
	}
	lit := func(b []byte) string { return `"` + string(b) + `"` }
	q := func(s string) string { return string(appendJSONString(nil, []byte(s))) }
	for i := range 12 {
		content := inlineContent(rng, 3000+rng.IntN(40000), i%2 == 0)
		switch i % 4 {
		case 0: // a tool's output, twice on the line (Claude Code)
			add(`"message":{"role":"user","content":[{"tool_use_id":"t","type":"tool_result","content":%s}]},"toolUseResult":{"stdout":%s}`, lit(content), lit(content))
		case 1: // beside a string import cuts out
			add(`"message":{"role":"user","content":[{"type":"text","text":%s},{"type":"text","text":%s}]}`, q(strings.Repeat("needle in a cut string ", 100)), lit(content))
		case 2: // the byte that is not UTF-8 first and last
			add(`"message":{"role":"user","content":%s}`, lit(append(append([]byte("\xff"), content...), '\xc3')))
		case 3: // an encoded value left in the line beside it
			add(`"message":{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":%s}},{"type":"text","text":%s}]}`,
				lit([]byte(strings.Repeat(`iVBORw0KGgo\/AAAANSUhEUg`, 200))), lit(content))
		}
	}
	path := "/p/-home-u-proj/S.jsonl"
	writeSource(t, fsys, path, lines, "")
	id := *fileByPath(t, mustImport(t, r, FormatClaudeCode, path), path).Session
	if err := r.Store.Sync(); err != nil {
		t.Fatal(err)
	}
	// Every line is prepared streamed, from its object.
	evs, err := r.Log.Read(id, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		_, _, s, err := r.readBodyOrStream(ev.Body, math.MaxInt64)
		if err != nil || s == nil || s.inlineCuts == 0 {
			t.Fatalf("#%d: not streamed with its inline strings (%v)", ev.Seq, err)
		}
	}
	queries := []string{"needle", "NEEDLE", "needle in a cut", "mix test", "plain words", "日本", "é", "😀", "\ufffd", "iVBORw0KGgo", "ude00", "31m"}
	pieces := []int{longPiece, 16, 7}
	oldPiece := longPiece
	t.Cleanup(func() { longPiece = oldPiece })
	for _, textLine := range []int{1 << 20, 100, 1} {
		for _, piece := range pieces {
			longPiece = piece
			scoreLinesStreamed(t, textLine)
			s, w := compareStreamedSearch(t, r, id, queries)
			t.Logf("text lines over %d scored as written, pieces of %d: %d streamed, %d whole", textLine, piece, s, w)
			if s < w {
				t.Fatalf("%d streamed, %d whole: too few streamed", s, w)
			}
		}
	}
	longPiece = oldPiece
	// And a search of the store gives what it gives read whole.
	scoreLinesStreamed(t, 100)
	for _, qq := range queries {
		readWhole = true
		want, werr := r.Search(qq, SearchOptions{})
		readWhole = false
		got, gerr := r.Search(qq, SearchOptions{})
		if fmt.Sprint(werr) != fmt.Sprint(gerr) || !reflect.DeepEqual(want, got) {
			t.Fatalf("search %q:\nstreamed %+v (%v)\nwhole    %+v (%v)", qq, got, gerr, want, werr)
		}
	}
}

// FuzzInlineScan writes a source line object to the scan that takes the
// long strings left in its line out of it, in pieces cut anywhere: it
// never panics, and what it makes of an object decodeSourceLine reads
// is that line: the skeleton, each import's cut placed at its gap and
// each inline cut's range of the object put back, is the rest.
func FuzzInlineScan(f *testing.F) {
	line := func(cuts []lineCut, rest string) []byte {
		sl := sourceLine{Offset: 7, Cuts: cuts, Rest: []byte(rest)}
		return sl.encode()
	}
	f.Add(line(nil, `{"a":"`+strings.Repeat("x\\ud83d", 8)+`","b":1}`+"\n"), uint64(1))
	f.Add(line([]lineCut{{Gap: 5}}, `{"a":,"b":"`+strings.Repeat("\xff", 20)+`"}`+"\n"), uint64(2))
	f.Add(line([]lineCut{{Gap: 5}, {Gap: 0}}, `{"a":"\"quoted\\" and \u00e9"}`), uint64(3))
	f.Add(line(nil, `not json "unclosed`), uint64(4))
	f.Add(line(nil, `{"bad":"\x"}`), uint64(5))
	f.Add([]byte{1, 0x80}, uint64(6))
	old := inlineCutMin
	inlineCutMin = 8
	f.Cleanup(func() { inlineCutMin = old })
	f.Fuzz(func(t *testing.T, obj []byte, seed uint64) {
		rng := rand.New(rand.NewPCG(seed, seed))
		sc := &inlineScan{}
		for rest := obj; len(rest) > 0; {
			k := min(len(rest), 1+rng.IntN(32))
			sc.Write(rest[:k])
			rest = rest[k:]
		}
		sl, err := decodeSourceLine(obj)
		if sc.err != nil || !sc.started || sc.inStr || sc.nextCut < len(sc.sl.Cuts) {
			return
		}
		if err != nil {
			t.Fatalf("scanned an object decodeSourceLine refuses: %v", err)
		}
		if !reflect.DeepEqual(sc.sl.Cuts, sl.Cuts) && !(len(sc.sl.Cuts) == 0 && len(sl.Cuts) == 0) {
			t.Fatalf("cuts %v, decodeSourceLine %v", sc.sl.Cuts, sl.Cuts)
		}
		var rest []byte
		prev, real := 0, 0
		for _, c := range sc.cuts {
			rest = append(rest, sc.skel[prev:c.skelQ]...)
			prev = c.skelQ + len(placeholder)
			if c.inline == nil {
				if c.real != real || int64(len(rest)) != c.restAt {
					t.Fatalf("import's cut %d placed as %d at %d, the rest has %d bytes before it", real, c.real, c.restAt, len(rest))
				}
				real++
				continue
			}
			from := sc.headLen + c.inline.from
			content := obj[from : from+c.inline.n]
			rest = append(append(append(rest, '"'), content...), '"')
			if int64(len(rest)) != c.restEnd {
				t.Fatalf("inline cut ends at %d, the rest has %d bytes", c.restEnd, len(rest))
			}
		}
		rest = append(rest, sc.skel[prev:]...)
		// The rest with import's cuts left out.
		if !bytes.Equal(rest, sl.Rest) {
			t.Fatalf("put back %q, the rest %q", rest, sl.Rest)
		}
	})
}

// A search of a store holding an 8 MiB tool output left in its line (a
// byte that is not UTF-8 in one, a lone surrogate escape in the other)
// allocates a little of it, and finds and shows what the whole read
// does: it read the line's object whole, put it together and decoded
// it, several times the output.
func TestSearchOfAStringLeftInALongLineHoldsLittle(t *testing.T) {
	for _, odd := range []string{"\xff", `\ud83d`} {
		fsys := vfs.NewMem()
		r := testRook(t, fsys)
		out := []byte(strings.Repeat("build module compile linker ", (4<<20)/28))
		out = append(append(out, " "+odd+" FINDME middle, run mix test "...), out...)
		env := `"sessionId":"S","cwd":"/home/u/proj","version":"2.1.38"`
		lines := []string{
			fmt.Sprintf(`{"type":"user","uuid":"u1","parentUuid":null,%s,"timestamp":"2026-02-10T21:00:00.000Z","message":{"role":"user","content":"run it"}}`, env),
			fmt.Sprintf(`{"type":"user","uuid":"u2","parentUuid":"u1",%s,"timestamp":"2026-02-10T21:00:02.000Z","message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":"%s"}]}}`, env, out),
		}
		path := "/p/-home-u-proj/S.jsonl"
		writeSource(t, fsys, path, lines, "")
		mustImport(t, r, FormatClaudeCode, path)
		if err := r.Store.Sync(); err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{"findme middle", "mix test", "linker", "nowhere"} {
			readWhole = true
			want, werr := r.Search(q, SearchOptions{})
			readWhole = false
			var got SearchResult
			var gerr error
			n := allocatedBy(func() { got, gerr = r.Search(q, SearchOptions{}) })
			if fmt.Sprint(werr) != fmt.Sprint(gerr) || !reflect.DeepEqual(want, got) {
				t.Fatalf("%q, search %q:\nstreamed %+v (%v)\nwhole    %+v (%v)", odd, q, got, gerr, want, werr)
			}
			if n > 16<<20 {
				t.Fatalf("%q, search %q: %.1f MB allocated for an 8 MiB output", odd, q, float64(n)/1e6)
			}
			t.Logf("%q, search %q: %.1f MB allocated, %d hit(s)", odd, q, float64(n)/1e6, len(got.Hits))
		}
	}
}

// A string import cut out of the line that comes after a string it left
// in the line (cut k of the streamed line is then import's cut k-1) is
// read from its own object: the streamed search gives what the whole one
// does. It panicked (index out of range), taking rook search down.
func TestSearchOfACutStringAfterAnInlineOne(t *testing.T) {
	streamEveryLine(t)
	oldMin := inlineCutMin
	inlineCutMin = 2000
	t.Cleanup(func() { inlineCutMin = oldMin })
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	env := `"sessionId":"S","cwd":"/home/u/proj","version":"2.1.38"`
	inline := strings.Repeat("left \xff in the line ", 200)
	cut := appendJSONString(nil, []byte(strings.Repeat("needle in a cut string ", 200)))
	lines := []string{fmt.Sprintf(`{"type":"user","uuid":"u1",%s,"timestamp":"2026-02-10T21:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"%s"},{"type":"text","text":%s}]}}`, env, inline, cut)}
	path := "/p/-home-u-proj/S.jsonl"
	writeSource(t, fsys, path, lines, "")
	id := *fileByPath(t, mustImport(t, r, FormatClaudeCode, path), path).Session
	if s, w := compareStreamedSearch(t, r, id, []string{"needle", "left", "\ufffd"}); s == 0 || w != 0 {
		t.Fatalf("%d streamed, %d whole", s, w)
	}
}

// A string import cut out of its line whose text is not UTF-8 (import
// never writes one: a damaged or hand-made store) is left to the whole
// read, which decodes the line's literal of it as JSON (each such byte a
// U+FFFD) when the text has a character it escapes. Streamed, it was
// scored as its raw bytes: another snippet ("needle � x" for "needle �� x")
// and another text hash.
func TestSearchOfACutStringNotUTF8IsReadWhole(t *testing.T) {
	streamEveryLine(t)
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	res, err := r.Store.Put(cas.KindToolResult, []byte(strings.Repeat("needle \xff\xfe x\n", 300)))
	if err != nil {
		t.Fatal(err)
	}
	rest := `{"type":"user","message":{"content":}}`
	sl := sourceLine{Cuts: []lineCut{{Gap: strings.Index(rest, "}}"), ID: res.ID}}, Rest: []byte(rest)}
	put, err := r.Store.Put(cas.KindSource, sl.encode())
	if err != nil {
		t.Fatal(err)
	}
	id := newSession(t, r)
	if _, err := r.Log.Append(id, eventlog.Event{Kind: eventlog.KindToolResult, Body: put.ID}); err != nil {
		t.Fatal(err)
	}
	compareStreamedSearch(t, r, id, []string{"needle", "x"})
}

// A line with more than maxInlineCuts strings left in it is read whole:
// each inline cut is read from the object's start, so that streamed such
// a line read its object once per string (180 strings of 66 KB on a 12 MB
// line: 5.4 s, against 1.1 s whole).
func TestManyInlineStringsAreReadWhole(t *testing.T) {
	streamEveryLine(t)
	oldMin := inlineCutMin
	inlineCutMin = 2000
	t.Cleanup(func() { inlineCutMin = oldMin })
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	env := `"sessionId":"S","cwd":"/home/u/proj","version":"2.1.38"`
	var blocks []string
	for i := range maxInlineCuts + 1 {
		blocks = append(blocks, fmt.Sprintf(`{"type":"text","text":"%d %s"}`, i, strings.Repeat("left \xff in the line ", 200)))
	}
	lines := []string{fmt.Sprintf(`{"type":"user","uuid":"u1",%s,"timestamp":"2026-02-10T21:00:00.000Z","message":{"role":"user","content":[%s]}}`, env, strings.Join(blocks, ","))}
	path := "/p/-home-u-proj/S.jsonl"
	writeSource(t, fsys, path, lines, "")
	id := *fileByPath(t, mustImport(t, r, FormatClaudeCode, path), path).Session
	evs, err := r.Log.Read(id, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, s, err := r.readBodyOrStream(evs[0].Body, math.MaxInt64); err != nil || s != nil {
		t.Fatalf("%d inline strings: streamed (%v)", maxInlineCuts+1, err)
	}
}
