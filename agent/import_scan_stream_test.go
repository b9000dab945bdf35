package agent

import (
	"bytes"
	"cmp"
	"fmt"
	"hash/maphash"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/clock"
	"github.com/rookhq/rook/internal/vfs"
)

// streamEveryLine makes find and search stream every imported line with a
// cut string, for the test.
func streamEveryLine(t *testing.T) {
	t.Helper()
	old := streamLinesOver
	streamLinesOver = 0
	t.Cleanup(func() { streamLinesOver = old })
}

// scoreLinesStreamed makes search score every line of a text over n
// bytes as it is written (longLine), not held, until the test ends.
func scoreLinesStreamed(tb testing.TB, n int) {
	tb.Helper()
	old := streamTextLine
	streamTextLine = n
	tb.Cleanup(func() { streamTextLine = old })
}

// streamQueries are queries of both find and search: words, a phrase,
// case, escapes (a quote, a newline), non-ASCII, a key.
var streamQueries = []string{"error", "func", "the file", "TODO", "import", "README.md", `"type"`, "\n", "é", "rook",
	"tool_use_id", "ü", "İstanbul", "k", "s", `\n`, "go test ./", "x", "--json", "a"}

// findQueries are those find is tested with on the corpus (each costs
// a few seconds).
var findQueries = []string{"error", "the file", "\n", "é", "tool_use_id", "İstanbul", "s", `"type"`, "a"}

// wholeSearchText is the reference: the line put together, its text
// taken whole (textOfImported) and scored whole (scoreBody).
func wholeSearchText(t *testing.T, r *Rook, obj cas.Key, terms, gaps [][]byte, seed maphash.Seed) (int, string, uint64) {
	t.Helper()
	b, imported, err := r.readBody(obj)
	if err != nil || !imported {
		t.Fatalf("%s: %v (imported %v)", cas.Short(obj), err, imported)
	}
	text := textOfImported(b)
	score, snip := scoreBody(text, terms, gaps)
	return score, snip, maphash.Bytes(seed, text)
}

// compareStreamedSearch checks every imported line of session id with a
// cut string: searchText gives what the whole path gives, or declines.
func compareStreamedSearch(t *testing.T, r *Rook, id eventlog.ID, queries []string) (streamed, whole int) {
	t.Helper()
	seed := maphash.MakeSeed()
	evs, err := r.Log.Read(id, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		_, _, s, err := r.readBodyOrStream(ev.Body, 1<<62)
		if err != nil {
			t.Fatal(err)
		}
		if s == nil {
			continue
		}
		if b, _, _ := r.readBody(ev.Body); int64(len(b)) != s.total {
			t.Fatalf("#%d: total %d, the line has %d bytes", ev.Seq, s.total, len(b))
		}
		for _, q := range queries {
			lowered, gaps := termBytes(searchTermsOf(q))
			if len(lowered) == 0 {
				continue
			}
			score, snip, h, err := r.searchText(s, lowered, gaps, seed)
			if err == errNotStreamed {
				whole++
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			streamed++
			wScore, wSnip, wH := wholeSearchText(t, r, ev.Body, lowered, gaps, seed)
			if score != wScore || snip != wSnip || score > 0 && h != wH {
				t.Fatalf("#%d %q: streamed %d %q %x, whole %d %q %x", ev.Seq, q, score, snip, h, wScore, wSnip, wH)
			}
		}
	}
	return streamed, whole
}

// importCorpus imports the shared corpus of Claude Code transcripts into
// a new store.
func importCorpus(t *testing.T) (*Rook, []eventlog.ID) {
	t.Helper()
	if _, err := os.Stat(corpusDir); err != nil {
		t.Skipf("no corpus at %s: %v", corpusDir, err)
	}
	var paths []string
	filepath.WalkDir(corpusDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".jsonl") {
			paths = append(paths, p)
		}
		return nil
	})
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	var abs []string
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(corpusDir, p)
		writeSourceFile(t, fsys, filepath.Join("/src", rel), data)
		abs = append(abs, filepath.Join("/src", rel))
	}
	rep := mustImport(t, r, FormatClaudeCode, abs...)
	var ids []eventlog.ID
	for _, f := range rep.Files {
		if f.Session != nil {
			ids = append(ids, *f.Session)
		}
	}
	return r, ids
}

// Every imported line of the shared corpus with a cut string scores,
// streamed, as it does whole, for every query; and a whole search of the
// store, streamed, is the search read whole.
func TestStreamedSearchOfTheCorpusMatchesWhole(t *testing.T) {
	r, ids := importCorpus(t)
	streamEveryLine(t)
	streamed, whole := 0, 0
	for _, id := range ids {
		s, w := compareStreamedSearch(t, r, id, streamQueries)
		streamed, whole = streamed+s, whole+w
	}
	t.Logf("%d sessions: %d line×query streamed, %d read whole", len(ids), streamed, whole)
	if len(ids) < 20 || streamed < 1000 {
		t.Fatalf("%d sessions, %d streamed: the test reads too few", len(ids), streamed)
	}
	// Every line of the text over 64 bytes scored as it is written.
	scoreLinesStreamed(t, 64)
	streamed, whole = 0, 0
	for _, id := range ids {
		s, w := compareStreamedSearch(t, r, id, streamQueries)
		streamed, whole = streamed+s, whole+w
	}
	t.Logf("lines over 64 bytes scored as written: %d line×query streamed, %d read whole", streamed, whole)
	if streamed < 1000 {
		t.Fatalf("%d streamed: the test reads too few", streamed)
	}
	for _, q := range streamQueries {
		if len(SearchTerms(q)) == 0 {
			continue
		}
		readWhole = true
		want, werr := r.Search(q, SearchOptions{Limit: 1000})
		readWhole = false
		got, gerr := r.Search(q, SearchOptions{Limit: 1000})
		if fmt.Sprint(werr) != fmt.Sprint(gerr) || !reflect.DeepEqual(want, got) {
			t.Fatalf("search %q: streamed %+v (%v), whole %+v (%v)", q, got, gerr, want, werr)
		}
	}
}

// compareStreamedFind checks, for every imported line of session id with a
// cut string, that Find of each query, from a few offsets and with a few
// budgets, gives streamed what it gives reading the line whole.
func compareStreamedFind(t *testing.T, r *Rook, id eventlog.ID, queries []string, rng *rand.Rand) (streamed, whole int) {
	t.Helper()
	evs, err := r.Log.Read(id, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		_, _, s, err := r.readBodyOrStream(ev.Body, math.MaxInt64)
		if err != nil {
			t.Fatal(err)
		}
		if s == nil {
			continue
		}
		for _, q := range queries {
			type at struct{ off, budget int64 }
			tries := []at{{0, 0}, {rng.Int64N(s.total), 0}, {s.total - 1, 0}, {0, 1 + rng.Int64N(s.total)}}
			for _, tr := range tries {
				if _, ok := r.findStreamed(s, tr.off, cmp.Or(tr.budget, FindMaxBytes), newFoldMatcher(q), findEscaped(q)); ok {
					streamed++
				} else {
					whole++
				}
				seq := ev.Seq
				fq := FindQuery{Query: q, From: seq, Offset: tr.off, Through: &seq, MaxBytes: tr.budget}
				readWhole = true
				want, werr := r.Find(id, fq)
				readWhole = false
				got, gerr := r.Find(id, fq)
				if fmt.Sprint(werr) != fmt.Sprint(gerr) || !reflect.DeepEqual(want, got) {
					t.Fatalf("#%d find %q from %d (budget %d) of %d bytes:\nstreamed %+v (%v)\nwhole    %+v (%v)", ev.Seq, q, tr.off, tr.budget, s.total,
						got, gerr, want, werr)
				}
			}
		}
	}
	return streamed, whole
}

// Every imported line of the shared corpus with a cut string is found in,
// streamed, as it is whole: the same hits, offsets, snippets, cursors and
// costs, for every query, from offsets in it and with budgets that end in
// it.
func TestStreamedFindOfTheCorpusMatchesWhole(t *testing.T) {
	r, ids := importCorpus(t)
	streamEveryLine(t)
	rng := rand.New(rand.NewPCG(11, 12))
	streamed, whole := 0, 0
	for _, id := range ids {
		s, w := compareStreamedFind(t, r, id, findQueries, rng)
		streamed, whole = streamed+s, whole+w
	}
	t.Logf("%d sessions: %d line×query×offset streamed, %d read whole", len(ids), streamed, whole)
	if len(ids) < 20 || streamed < 1000 {
		t.Fatalf("%d sessions, %d streamed: the test reads too few", len(ids), streamed)
	}
}

// Hand-made lines with big cut strings: a term split across the end of a
// cut string and the line's bytes after it, or across two strings; escapes
// (\n, \", \u00e9) in the middle of a term; terms at the line's first and
// last bytes, deep inside a string of hundreds of KiB, right after encoded
// state, in a string next to an image. Find and search give streamed what
// they give reading the lines whole, and most lines stream.
func TestStreamedFindAndSearchOfHandMadeLinesMatchWhole(t *testing.T) {
	streamEveryLine(t)
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	rng := rand.New(rand.NewPCG(21, 22))
	q := func(s string) string { return string(appendJSONString(nil, []byte(s))) }
	tricky := func(n int) string { return string(trickyText(rng, n, false)) }
	env := `"sessionId":"S","cwd":"/home/u/proj","version":"2.1.38"`
	var lines []string
	add := func(format string, a ...any) {
		lines = append(lines, fmt.Sprintf(`{"type":"user","uuid":"u%d",%s,"timestamp":"2026-02-10T21:00:00.000Z",`, len(lines), env)+fmt.Sprintf(format, a...)+"}")
	}
	result := func(content string) {
		add(`"message":{"role":"user","content":[{"tool_use_id":"t","type":"tool_result","content":%s}]}`, content)
	}
	long := tricky(300 << 10)
	result(q("needle at the start " + long + " needle at the end"))
	result(q(long[:100<<10] + " a needle\nsplit by a newline, \"needle quoted\", café NEEDLE İstanbul " + long[100<<10:]))
	result(q(long) + `,"is_error":false,"tail":` + q("spans"+tricky(5000)))
	result(`[{"type":"text","text":` + q(tricky(3000)+"end of one") + `},{"type":"text","text":` + q("start of two"+tricky(3000)) + `}]`)
	result(`[{"type":"image","source":{"type":"base64","media_type":"image/png","data":` + q(strings.Repeat("iVBORw0KGgoAAAANSUhEUg", 3000)) + `}},{"type":"text","text":` + q("needle after an image "+tricky(4000)) + `}]`)
	result(`[{"type":"text","text":` + q(tricky(4000)+" needle before an image") + `},{"type":"image","source":{"type":"base64","media_type":"image/png","data":` + q(strings.Repeat("iVBORw0KGgoAAAANSUhEUg", 3000)) + `}}]`)
	add(`"message":{"role":"user","content":"caf\u00e9 \u00e9t\u00e9 short and escaped"},"toolUseResult":{"stdout":%s}`, q(tricky(20000)+"café été"))
	add(`"message":{"role":"user","content":[{"type":"tool_use","name":"Write","input":{"file_path":"/a.go","content":%s}}]},"zzlast":"end"`, q(strings.Repeat("func main() {\n\tfmt.Println(\"needle\")\n}\n", 4000)))
	add(`"message":{"role":"user","content":%s},"thinking":{"signature":%s}`, q(tricky(9000)+" needle"), q(strings.Repeat("c2lnbmF0dXJl", 200)))
	path := "/p/-home-u-proj/S.jsonl"
	writeSource(t, fsys, path, lines, "")
	id := *fileByPath(t, mustImport(t, r, FormatClaudeCode, path), path).Session
	if err := r.Store.Sync(); err != nil {
		t.Fatal(err)
	}
	queries := []string{"needle", "NEEDLE", "needle at the start", "needle at the end", "a needle\nsplit", `"needle quoted"`,
		"café", "CAFÉ", "été", "istanbul", "İSTANBUL", `false,"tail":"spans`, `is_error`, "end of one\"},{\"type\":\"text\",\"text\":\"start of two",
		`{"type":"user"`, `"zzlast":"end"}`, `"}`, "{", "iVBORw0KGgo", "c2lnbmF0dXJl", "println(\"needle\")", "\n\tfmt", `\n`, `\u00e9`, "é"}
	fs, fw := compareStreamedFind(t, r, id, queries, rng)
	ss, sw := compareStreamedSearch(t, r, id, queries)
	t.Logf("find: %d streamed, %d whole; search: %d streamed, %d whole", fs, fw, ss, sw)
	// Every line of the text over 100 bytes scored as it is written
	// (longLine), as a line over 1 MiB with no newline is.
	scoreLinesStreamed(t, 100)
	if ls, lw := compareStreamedSearch(t, r, id, queries); ls < 100 {
		t.Fatalf("search, long lines scored as written: %d streamed, %d whole: too few", ls, lw)
	}
	if fs < 500 || ss < 100 {
		t.Fatalf("find: %d streamed, search: %d: the test streams too few", fs, ss)
	}
	// Offsets deep in the big strings, and budgets that end there.
	for range 200 {
		seq := uint64(1 + rng.IntN(3))
		qq := queries[rng.IntN(len(queries))]
		fq := FindQuery{Query: qq, From: seq, Through: &seq, Offset: rng.Int64N(320 << 10), MaxBytes: 1 + rng.Int64N(200<<10)}
		readWhole = true
		want, werr := r.Find(id, fq)
		readWhole = false
		got, gerr := r.Find(id, fq)
		if fmt.Sprint(werr) != fmt.Sprint(gerr) || !reflect.DeepEqual(want, got) {
			t.Fatalf("find %+v:\nstreamed %+v (%v)\nwhole    %+v (%v)", fq, got, gerr, want, werr)
		}
	}
}

// streamedFindSeed is one input of FuzzStreamedFind.
type streamedFindSeed struct {
	line        []byte
	fill, query string
	off, budget int64
	rep         uint8
}

// streamedFindSeeds are FuzzStreamedFind's seed corpus: lines whose '#'s
// become long strings (tool results, texts, an image next to text,
// thinking and its signature), with queries that escape, fold and cross
// the strings' ends.
func streamedFindSeeds() []streamedFindSeed {
	var seeds []streamedFindSeed
	for _, s := range []string{
		`{"type":"user","message":{"content":[{"type":"tool_result","content":"#"}]}}`,
		`{"type":"user","message":{"content":[{"type":"text","text":"#"},{"type":"text","text":"x#"}]},"toolUseResult":{"stdout":"#"}}`,
		`{"type":"user","message":{"content":[{"type":"image","source":{"data":"#"}},{"type":"text","text":"#"}]}}`,
		`{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"#","signature":"#"}]},"cwd":"caf\u00e9"}`,
	} {
		seeds = append(seeds,
			streamedFindSeed{[]byte(s), "needle \n\"é", "NEEDLE", 0, 0, 3},
			streamedFindSeed{[]byte(s), "iVBORw0KGgo", "gokg", 300, 50, 40},
			streamedFindSeed{[]byte(s), "a\\b", `"},{"`, -1, 7, 0},
			// A long run of hex digits with escapes of hex digits in it:
			// the snippet's window ends inside it.
			streamedFindSeed{[]byte(s), "0f9\x01a\\7c\x1fe", "9\x01a", 9000, 0, 60})
	}
	// Text a writer escaped more than rook does (findEscaped): past ASCII
	// and <, >, & as \u escapes.
	// (Such a string is never cut out: it is not as rook writes it.)
	seeds = append(seeds, streamedFindSeed{[]byte(`{"type":"user","message":{"content":[{"type":"text","text":"caf\u00e9 \u003c \ud83d\ude00"},{"type":"tool_result","content":"#"}]}}`), "needle ", "CAFé < 😀", 0, 0, 40})
	// Each character escaped in a case of its own, the hex digits too.
	seeds = append(seeds, streamedFindSeed{[]byte(`{"type":"user","message":{"content":[{"type":"text","text":"\u00c9l\u00E9phant"},{"type":"tool_result","content":"#"}]}}`), "needle ", "éLÉPHANT", 0, 0, 40})
	return seeds
}

// streamedFindRook is the store FuzzStreamedFind imports into, every line
// streamed.
func streamedFindRook(tb testing.TB) *Rook {
	tb.Helper()
	fsys := vfs.NewMem()
	clk := &clock.Fixed{T: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	if _, err := cas.Init(fsys, clk, testHome); err != nil {
		tb.Fatal(err)
	}
	r, err := Open(testHome, Options{FS: fsys, Clock: clk, Writable: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { r.Close() })
	old := streamLinesOver
	streamLinesOver = 0
	tb.Cleanup(func() { streamLinesOver = old })
	// A line of search's text over 300 bytes (one with no newline in a
	// fill of hundreds of bytes) scored as it is written.
	scoreLinesStreamed(tb, 300)
	return r
}

// checkStreamedFind is FuzzStreamedFind's body: it imports the line made of
// in (its '#'s a long string of fill), and compares find and search of
// query over it, streamed, with the whole-line path. ran: the input
// qualified (a line with a cut string); findStreamed, searchStreamed:
// find and search took the streamed path rather than falling back to the
// whole line.
func checkStreamedFind(t *testing.T, r *Rook, seed maphash.Seed, in streamedFindSeed) (ran, findStreamed, searchStreamed bool) {
	line, fill, query, off, budget := in.line, in.fill, in.query, in.off, in.budget
	if len(line) > 4096 || len(fill) > 64 || bytes.IndexByte(line, '\n') >= 0 || ValidateQuery(query) != nil || len(query) > 32 {
		return
	}
	if fill == "" {
		fill = " "
	}
	long := appendJSONString(nil, []byte(strings.Repeat(fill, (MinCutString+int(in.rep)*512)/len(fill)+1)))
	line = bytes.ReplaceAll(line, []byte("#"), long[1:len(long)-1])
	strs, ok := stringValues(line, MinCutString+2)
	if !ok {
		return
	}
	cuts := lineCuts(line, strs, MinCutString, func(jsonString) cas.Kind { return cas.KindToolResult })
	if len(cuts) == 0 {
		return
	}
	var sl sourceLine
	prev := 0
	for _, c := range cuts {
		res, err := r.Store.Put(c.Kind, c.Text)
		if err != nil {
			t.Fatal(err)
		}
		sl.Cuts = append(sl.Cuts, lineCut{Gap: c.Start - prev, ID: res.ID})
		sl.Rest = append(sl.Rest, line[prev:c.Start]...)
		prev = c.End
	}
	sl.Rest = append(sl.Rest, line[prev:]...)
	put, err := r.Store.Put(cas.KindSource, sl.encode())
	if err != nil {
		t.Fatal(err)
	}
	id := newSession(t, r)
	if _, err := r.Log.Append(id, eventlog.Event{Kind: eventlog.KindToolResult, Body: put.ID}); err != nil {
		t.Fatal(err)
	}
	ran = true
	off = max(off, 0) % int64(len(line)+2)
	budget = max(budget, 0) % int64(len(line)+2)
	fq := FindQuery{Query: query, Offset: off, MaxBytes: budget}
	readWhole = true
	want, werr := r.Find(id, fq)
	readWhole = false
	got, gerr := r.Find(id, fq)
	if fmt.Sprint(werr) != fmt.Sprint(gerr) || !reflect.DeepEqual(want, got) {
		t.Fatalf("find %q in %q from %d (budget %d):\nstreamed %+v (%v)\nwhole    %+v (%v)", query, line, off, budget, got, gerr, want, werr)
	}
	_, _, s, err := r.readBodyOrStream(put.ID, math.MaxInt64)
	if err != nil || s == nil {
		t.Fatalf("not streamed: %v", err)
	}
	// The one event's line, as Find searches it: streamed when
	// findStreamed gives it (else Find read it whole).
	_, findStreamed = r.findStreamed(s, off, cmp.Or(budget, FindMaxBytes), newFoldMatcher(query), findEscaped(query))
	lowered, gaps := termBytes(searchTermsOf(query))
	if len(lowered) == 0 {
		return
	}
	if score, snip, h, err := r.searchText(s, lowered, gaps, seed); err == nil {
		searchStreamed = true
		wScore, wSnip, wH := wholeSearchText(t, r, put.ID, lowered, gaps, seed)
		if score != wScore || snip != wSnip || score > 0 && h != wH {
			t.Fatalf("search %q in %q: streamed %d %q, whole %d %q", query, line, score, snip, wScore, wSnip)
		}
	} else if err != errNotStreamed {
		t.Fatalf("search %q in %q: %v", query, line, err)
	}
	return
}

// FuzzStreamedFind compares find and search over an imported line,
// streamed, with the whole-line path: a JSON line whose '#'s become a
// long string (fill, repeated; cut out), a query, an offset and a budget.
// (TestStreamedFindSeedsStream checks that its seeds take the streamed
// path: a comparison with the whole path proves nothing when the
// streamed one declines.)
func FuzzStreamedFind(f *testing.F) {
	for _, s := range streamedFindSeeds() {
		f.Add(s.line, s.fill, s.query, s.off, s.budget, s.rep)
	}
	r := streamedFindRook(f)
	seed := maphash.MakeSeed()
	f.Fuzz(func(t *testing.T, line []byte, fill, query string, off, budget int64, rep uint8) {
		checkStreamedFind(t, r, seed, streamedFindSeed{line, fill, query, off, budget, rep})
	})
}

// FuzzStreamedFind's seeds all qualify (a line with a cut string), and find
// and search of each take the streamed path, not the whole line's: else
// the fuzz target would compare the whole path with itself and pass.
func TestStreamedFindSeedsStream(t *testing.T) {
	r := streamedFindRook(t)
	seed := maphash.MakeSeed()
	finds, searches := 0, 0
	for i, in := range streamedFindSeeds() {
		ran, f, s := checkStreamedFind(t, r, seed, in)
		if !ran {
			t.Errorf("seed %d (%q, query %q): the line has no cut string, nothing is compared", i, in.line, in.query)
		}
		if !f {
			t.Errorf("seed %d (%q, query %q from %d, budget %d): find read the line whole, not streamed", i, in.line, in.query, in.off, in.budget)
		}
		if !s && len(SearchTerms(in.query)) > 0 {
			t.Errorf("seed %d (%q, query %q): search read the line whole, not streamed", i, in.line, in.query)
		}
		if f {
			finds++
		}
		if s {
			searches++
		}
	}
	t.Logf("%d seeds: find streamed %d, search streamed %d (the others' queries have no term)", len(streamedFindSeeds()), finds, searches)
}

// Find and search over an imported line holding a big tool output hold a
// few KiB of it, not the line: each put the line together (and search its
// text) whole, several times the output's size.
func TestFindAndSearchOfABigImportedLineHoldLittle(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	env := `"sessionId":"S","cwd":"/home/u/proj","version":"2.1.38"`
	var out []byte
	for i := 0; len(out) < 8<<20; i++ {
		out = fmt.Appendf(out, "line %d of output, \"quoted\", ünïcode\t%s\n", i, strings.Repeat("x", i%50))
	}
	out = append(out, "the last line: NEEDLE"...)
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
	allocated := func(f func()) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	var found FindResult
	var err error
	n := allocated(func() { found, err = r.Find(id, FindQuery{Query: "needle", From: 1, Offset: int64(len(out)) - 100}) })
	if err != nil || len(found.Hits) != 1 || !strings.Contains(found.Hits[0].Snippet, "the last line: NEEDLE") {
		t.Fatalf("find: %+v, %v", found, err)
	}
	if n > uint64(len(out)) {
		t.Errorf("a find in an imported line of %d bytes allocated %d bytes: the line was put together whole", len(out), n)
	}
	var res SearchResult
	n = allocated(func() { res, err = r.Search("needle", SearchOptions{}) })
	if err != nil || len(res.Hits) != 1 || !strings.Contains(res.Hits[0].Snippet, "the last line: NEEDLE") {
		t.Fatalf("search: %+v, %v", res, err)
	}
	if n > uint64(len(out)) {
		t.Errorf("a search of an imported line of %d bytes allocated %d bytes: its text was taken whole", len(out), n)
	}
	t.Logf("find and search of a line of %d bytes", len(out))
}

// appendFold folds each character (foldRune) and keeps each byte that
// is not UTF-8 as it is, on text of every kind, UTF-8 or not: as many
// characters out as in, each such byte one.
func TestAppendFoldFoldsEachCharacter(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	extra := []string{"İ", "K", "ſ", "ẞ", "Σ", "ς", "\xf0\x9f", "\xed\xa0\x80", "Ⅻ", "ǅ", "\u0345"}
	for i := range 2000 {
		b := trickyText(rng, rng.IntN(200), i%2 == 0)
		b = append(b, extra[rng.IntN(len(extra))]...)
		b = append(b, trickyText(rng, rng.IntN(50), i%3 == 0)...)
		var want []byte
		for s := b; len(s) > 0; {
			r, w := utf8.DecodeRune(s)
			if r == utf8.RuneError && w == 1 {
				want = append(want, s[0])
			} else {
				want = utf8.AppendRune(want, foldRune(r))
			}
			s = s[w:]
		}
		got := appendFold([]byte("x"), b)
		if !bytes.Equal(got[1:], want) {
			t.Fatalf("appendFold(%q) = %q, want %q", b, got[1:], want)
		}
		if utf8.RuneCount(got[1:]) != utf8.RuneCount(b) {
			t.Fatalf("appendFold(%q) = %q: %d characters, not %d", b, got[1:], utf8.RuneCount(got[1:]), utf8.RuneCount(b))
		}
	}
}
