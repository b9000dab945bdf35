package agent

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

func TestSearchTerms(t *testing.T) {
	for q, want := range map[string][]string{
		"Flaky TEST in the store_test.go": {"flaky", "test", "store_test.go"},
		"-v __init__ .env ../x":           {"-v", "__init__", "env"},
		"rook 2.1.39, /home/dev/rook.":    {"rook", "2.1.39", "home/dev/rook"}, // versions, paths, a file: one term each
		"a b c":                           nil,
		"the and of":                      nil,
		"re-index, re-index! x":           {"re-index"},
		"Größe ÉTÉ/ 42":                   {"größe", "été", "42"},
		"foo.bar(baz) ./":                 {"foo.bar", "baz"},
		"c++ C# f#. (x++) vs c":           {"c++", "c#", "f#", "x++", "vs"}, // one letter and symbols: one term
		"c++/cli a+b a. (a) \"a\" ++":     {"cli", "a+b"},
		"C++ templates":                   {"c++", "templates"},
	} {
		if got := SearchTerms(q); !reflect.DeepEqual(got, want) {
			t.Errorf("SearchTerms(%q) = %q, want %q", q, got, want)
		}
	}
}

// TestSearchTermsKeepWordsWithGreekIota: folding never cuts a query's
// word. foldRune folded Ι and ι to U+0345, the combining ypogegrammeni of
// their fold class, and the query, folded before it is split into words,
// lost each iota: `rook search πολιτική` searched "πολ" and "κή" (and
// found "πολύ"), ΙΔΕΑ searched "δεα".
func TestSearchTermsKeepWordsWithGreekIota(t *testing.T) {
	for _, q := range []string{"πολιτική", "ΙΔΕΑ", "ιστορία", "Ιθάκη"} {
		got := SearchTerms(q)
		want := []string{foldString(q)}
		if !slices.Equal(got, want) {
			t.Errorf("SearchTerms(%q) = %q, want one term %q (the word as written, folded)", q, got, want)
		}
	}
}

// TestSearchTermsKeepCombiningMarks: a combining mark is part of the word
// it follows (UAX #29): नमस्ते searched "नमस" (and found नमस्कार), café
// written with U+0301 searched "cafe" (and found "cafeteria"). A mark
// counts as no character of its own: é written so is a word of one
// letter, dropped as the precomposed é is.
func TestSearchTermsKeepCombiningMarks(t *testing.T) {
	for _, q := range []string{"नमस्ते", "cafe\u0301", "\u0301cafe\u0301"} {
		got := SearchTerms(q)
		want := []string{foldString(strings.TrimPrefix(q, "\u0301"))}
		if !slices.Equal(got, want) {
			t.Errorf("SearchTerms(%q) = %q, want %q", q, got, want)
		}
	}
	if got := SearchTerms("e\u0301 x"); got != nil {
		t.Errorf("SearchTerms(e + U+0301) = %q, want none (a word of one letter)", got)
	}
}

func TestScoreBody(t *testing.T) {
	terms := [][]byte{[]byte("flaky"), []byte("test")}
	// Line 1: flaky (4+1, a word +3) test (4+1+3) all (+4×2), together
	// (+6×2) = 36. Line 2: test x5 (4+3+3) = 10, at most half of 36
	// again. Both terms found: +2×2. 50, in the first rank (a line with
	// the terms together): 3 ranks above the last, each 3×(32×2+1); both
	// terms as words of their own, 32×2+1 each.
	score, snip := scoreBody([]byte("A Flaky test\ntest test test test test\nnothing"), terms, nil)
	if score != 3*195+2*65+50 || snip != "A Flaky test" {
		t.Fatalf("score %d snippet %q", score, snip)
	}
	if score, _ := scoreBody([]byte("no match here"), terms, nil); score != 0 {
		t.Fatalf("no match scored %d", score)
	}
	// Control characters are replaced, a long line is clipped around the
	// match with '…' at both ends.
	line := strings.Repeat("x", 300) + "\tflaky\x1b test" + strings.Repeat("y", 300)
	_, snip = scoreBody([]byte(line), terms, nil)
	if utf8.RuneCountInString(snip) != SearchSnippetLen || !strings.HasPrefix(snip, "…") || !strings.HasSuffix(snip, "…") ||
		!strings.Contains(snip, " flaky  test") || strings.ContainsAny(snip, "\t\x1b") {
		t.Fatalf("snippet %q (%d runes)", snip, utf8.RuneCountInString(snip))
	}
	// A match near the end of a long line: the tail, led by '…'.
	_, snip = scoreBody([]byte(strings.Repeat("z", 400)+" flaky"), terms, nil)
	if utf8.RuneCountInString(snip) != SearchSnippetLen || !strings.HasPrefix(snip, "…") || !strings.HasSuffix(snip, "flaky") {
		t.Fatalf("tail snippet %q", snip)
	}
	// A match at the start: no leading '…'.
	_, snip = scoreBody([]byte("flaky "+strings.Repeat("z", 400)), terms, nil)
	if utf8.RuneCountInString(snip) != SearchSnippetLen || !strings.HasPrefix(snip, "flaky") || !strings.HasSuffix(snip, "…") {
		t.Fatalf("head snippet %q", snip)
	}
}

// TestScoreBodyPrefersEveryTermOnALine: a line with every term outranks
// a long body that has some of them on many lines (a tool's output naming
// /dev/null and home directories, for "home dev rook").
func TestScoreBodyPrefersEveryTermOnALine(t *testing.T) {
	terms := [][]byte{[]byte("home"), []byte("dev"), []byte("rook")}
	whole, _ := scoreBody([]byte("cd /home/dev/rook && make"), terms, nil)
	partial, _ := scoreBody([]byte(strings.Repeat("home home home dev dev dev > /dev/null\n", 40)), terms, nil)
	if whole <= partial {
		t.Fatalf("every term on a line scored %d, some terms on 40 lines %d", whole, partial)
	}
}

// TestScoreBodyPrefersWholeWords: "mix test" ranks the command above
// mix_audit and an attestation, which hold the terms inside other words.
func TestScoreBodyPrefersWholeWords(t *testing.T) {
	terms := [][]byte{[]byte("mix"), []byte("test")}
	words, _ := scoreBody([]byte("ran mix test --seed 0"), terms, nil)
	inside, _ := scoreBody([]byte("mix_audit attestation"), terms, nil)
	if words <= inside {
		t.Fatalf("whole words scored %d, inside other words %d", words, inside)
	}
	for _, c := range []struct {
		line, term string
		want       bool
	}{
		{"mix test", "test", true},
		{"attestation", "test", false},
		{"store_test.go", "test", false},
		{"test_store and test", "test", true},
		{"ls -v here", "-v", true},
		{"/home/dev/rook/x", "/home/dev/rook", true},
		{"日本test", "test", false},
		{"    12→func main()", "func", true},
		{"“test”", "test", true},
		{"a\u00a0test", "test", true},
		{"日本語 日本", "日本", true},
		{"日本語", "日本", false},
		// A combining mark is part of the word it follows.
		{"the cafe\u0301 menu", "cafe", false},
		{"नमस्ते", "नमस", false},
		{"the cafe\u0301 menu", "cafe\u0301", true},
		// An iota folded is a letter: "δεα" is inside "ιδεα".
		{foldString("ΙΔΕΑ"), "δεα", false},
	} {
		if got := wholeWord([]byte(c.line), []byte(c.term)); got != c.want {
			t.Errorf("wholeWord(%q, %q) = %v", c.line, c.term, got)
		}
	}
}

// TestScoreBodyPrefersTermsTogether: "mix test" ranks the command that
// runs it above a body whose lines say mix and test apart, again and
// again (a project's notes: mix igniter.install, [:dev, :test]), which
// outranked every `mix test` of the corpus's sessions.
func TestScoreBodyPrefersTermsTogether(t *testing.T) {
	terms := [][]byte{[]byte("mix"), []byte("test")}
	together, snip := scoreBody([]byte("mix test 2>&1 | tail -5\nRun the tests"), terms, nil)
	apart, _ := scoreBody([]byte(strings.Repeat("mix igniter.install credo, only: [:dev, :test]; mix deps.audit, test it\n", 3)), terms, nil)
	if together <= apart {
		t.Fatalf("the terms together scored %d, apart on 3 lines %d", together, apart)
	}
	if snip != "mix test 2>&1 | tail -5" {
		t.Fatalf("snippet %q", snip)
	}
	for _, c := range []struct {
		line string
		want bool
	}{
		{"run mix test --seed 0", true},
		{"mix  \ttest", true},
		{"mix format, test", false},
		{"test mix", false},    // the order given
		{"remix test", false},  // words of their own
		{"mix testing", false}, // words of their own
		{"mix mix test", true}, // a later start
		{"mixtest", false},     // a blank between
	} {
		if got := termsTogether([]byte(c.line), terms, nil); got != c.want {
			t.Errorf("termsTogether(%q) = %v", c.line, got)
		}
	}
	// The stopwords the query's terms leave out may stand between them:
	// "fix the parser" is the terms fix, parser.
	fix := [][]byte{[]byte("fix"), []byte("parser")}
	for _, c := range []struct {
		line string
		want bool
	}{
		{"please fix the parser now", true},
		{"fix it in the parser", true},
		{"fix parser", true},
		{"fix their parser", false}, // not a stopword
		{"fix the", false},
		{"fix the theparser", false},
	} {
		if got := termsTogether([]byte(c.line), fix, nil); got != c.want {
			t.Errorf("termsTogether(%q) = %v", c.line, got)
		}
	}
}

// TestScoreBodyCountsEveryTermFound: a body with every term, each on a
// line of its own, outranks one that says one term again and again.
func TestScoreBodyCountsEveryTermFound(t *testing.T) {
	terms := [][]byte{[]byte("cache"), []byte("store")}
	both, _ := scoreBody([]byte("the cache is broken\nand the store fails"), terms, nil)
	one, _ := scoreBody([]byte("cache cache cache"), terms, nil)
	if both <= one {
		t.Fatalf("both terms on lines of their own scored %d, one term thrice %d", both, one)
	}
}

// TestSearchTermsGaps: what a query has between each two terms, as
// termsTogether lets it stand between them: the words it dropped (of one
// letter, stopwords, the "t" of "can't"), the punctuation around them, a
// run of blanks as one space; none when a term is said twice (the terms
// are not then in the query's order), and none for a query of dropped
// words only.
func TestSearchTermsGaps(t *testing.T) {
	for _, c := range []struct {
		query       string
		terms, gaps []string
	}{
		{"can't connect", []string{"can", "connect"}, []string{"", "'t "}},
		{"Create A  branch", []string{"create", "branch"}, []string{"", " a "}},
		{"fix the\tparser", []string{"fix", "parser"}, []string{"", " the "}},
		{"foo.bar(baz) x", []string{"foo.bar", "baz"}, []string{"", "("}},
		{"(c++) and f#.", []string{"c++", "f#"}, []string{"", ") and "}},
		{"/home/dev/rook. ok", []string{"home/dev/rook", "ok"}, []string{"", ". "}},
		{"Größe ÉTÉ", []string{"größe", "été"}, []string{"", " "}},
		{"test the test runner", []string{"test", "runner"}, nil},
		{"a t", nil, nil},
		{"the a", nil, nil},
	} {
		terms, gaps := searchTermsOf(c.query)
		if !reflect.DeepEqual(terms, c.terms) || !reflect.DeepEqual(gaps, c.gaps) {
			t.Errorf("searchTermsOf(%q) = %q, %q; want %q, %q", c.query, terms, gaps, c.terms, c.gaps)
		}
		if got := SearchTerms(c.query); !reflect.DeepEqual(got, c.terms) {
			t.Errorf("SearchTerms(%q) = %q, want %q", c.query, got, c.terms)
		}
	}
}

// TestTermsTogetherWithWhatTheQueryHasBetween: the words the query
// dropped may stand between the terms where the query has them, with the
// punctuation it has around them, blanks as any blanks: "can't connect"
// in "can't connect", "create a branch" in "create a branch"; not
// elsewhere, nor any other text between the terms.
func TestTermsTogetherWithWhatTheQueryHasBetween(t *testing.T) {
	for _, c := range []struct {
		query, line string
		want        bool
	}{
		{"can't connect", "error: can't connect to the database", true},
		{"can't connect", "can't \t connect", true},
		{"can't connect", "can't, connect", false},
		{"can't connect", "can, t connect", false},
		{"can't connect", "cant connect", false},
		{"can't connect", "can connect", true}, // a blank between, as ever
		{"create a branch", "first create a branch for the fix", true},
		{"create a branch", "create\ta  branch", true},
		{"create a branch", "create it again", false},
		{"create a branch", "create it, a branch", false},
		{"create a branch", "create b branch", false},
		{"create a branch", "create the branch", true}, // a stopword, as ever
		{"foo.bar(baz)", "call foo.bar(baz) now", true},
		{"foo.bar(baz)", "foo.bar (baz)", false},
		{"foo.bar(baz)", "foo.bar[baz]", false},
		{"x can't connect a", "can't connect", true}, // none before the first term nor after the last
	} {
		terms, gaps := termBytes(searchTermsOf(c.query))
		if got := termsTogether([]byte(c.line), terms, gaps); got != c.want {
			t.Errorf("%q: termsTogether(%q) = %v", c.query, c.line, got)
		}
	}
}

// TestScoreBodyRanksAsREADME: a body ranks first by what it has, in
// README's order, however its lines score: a line with every term
// together as the query gives them; a line with every term; every term,
// on lines of their own; some of them. Each body below is as loud as it
// can be in its rank (its lines many, its terms words of their own,
// thrice), each above as quiet.
func TestScoreBodyRanksAsREADME(t *testing.T) {
	terms := [][]byte{[]byte("ecto"), []byte("migration"), []byte("timeout")}
	many := func(line string) []byte { return []byte(strings.Repeat(line+"\n", 40)) }
	ranked := []struct {
		name string
		body []byte
	}{
		{"together", []byte("xectox ecto migration timeout")},
		{"every term on a line", append([]byte("timeoutx ectox migrationx\n"), many("timeout timeout timeout migration migration migration, ecto ecto ecto")...)},
		{"every term, on lines of their own", []byte("xecto\nxmigration\nxtimeout")},
		{"some terms", many("ecto ecto ecto migration migration migration")},
	}
	prev := 0
	for i, r := range ranked {
		score, _ := scoreBody(r.body, terms, nil)
		if i > 0 && score >= prev {
			t.Errorf("%s scored %d, not below %s (%d)", r.name, score, ranked[i-1].name, prev)
		}
		prev = score
	}
	// The snippet is the line of the best rank, though a line with fewer
	// terms scores more (11 terms inside other words, 10 of them as
	// words, thrice).
	var many11 [][]byte
	var inside, loud []string
	for i := range 11 {
		w := fmt.Sprintf("term%c", 'a'+i)
		many11 = append(many11, []byte(w))
		inside = append(inside, w+"x")
		if i < 10 {
			loud = append(loud, w, w, w)
		}
	}
	_, snip := scoreBody([]byte(strings.Join(loud, " ")+"\n"+strings.Join(inside, " ")), many11, nil)
	if snip != strings.Join(inside, " ") {
		t.Errorf("snippet %q: not the line with every term", snip)
	}
}

// searchHitsOf runs a search and returns the seqs of its hits, best
// first, with their scores, for a failure message.
func searchHitsOf(t *testing.T, r *Rook, query string) ([]uint64, string) {
	t.Helper()
	res, err := r.Search(query, SearchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	var b strings.Builder
	for _, h := range res.Hits {
		seqs = append(seqs, h.Seq)
		fmt.Fprintf(&b, "  #%d score %d: %q\n", h.Seq, h.Score, h.Snippet)
	}
	return seqs, b.String()
}

// `rook search ecto migration timeout`, in a session where the assistant
// said each of the three words on a line of its own (#1), and a tool
// printed a long log naming only two of them, "ecto migration", on each
// of its 40 lines (#0), never "timeout": README ranks the events with
// every word on lines of their own above a long output that mentions
// some of them on many lines. The log ranked first (28 against 18): a
// line with two of three terms scored twice any line of the other, and
// its repeats half of that again.
func TestSearchEveryWordOnLinesOfTheirOwnOutranksSomeWordsOnManyLines(t *testing.T) {
	r, clk := viewsRook(t)
	id := viewsSession(t, r, "ranking")
	var log strings.Builder
	for i := range 40 {
		fmt.Fprintf(&log, "[info] ecto migration %d ran in 12ms\n", i)
	}
	viewsAppend(t, r, clk, id,
		Entry{Kind: eventlog.KindToolResult, Body: []byte(log.String())},
		Entry{Kind: eventlog.KindAssistant, Body: []byte("We set up ecto first.\nThen the boot hit a timeout.\nThe migration failed after that.\n")},
	)
	seqs, hits := searchHitsOf(t, r, "ecto migration timeout")
	if len(seqs) != 2 || seqs[0] != 1 {
		t.Fatalf("the event with every word (each on a line of its own) should rank above a log naming only two of them on many lines; hits, best first:\n%s", hits)
	}
}

// `rook search "can't connect"` and `rook search create a branch`, in a
// session where one event says the words exactly as the query gives them
// and a later one has them apart: README ranks first "the words
// together, as the query gives them". Both scored the same, the later
// first: the query's "can't" is the term "can" (its "t", a word of one
// letter, dropped), and "a" is dropped the same way, but only stopwords
// could stand between two terms, so the "'t" and the "a" the query itself
// has broke "together" on the very text it gives.
func TestSearchWordsTogetherAsTheQueryGivesThem(t *testing.T) {
	for _, c := range []struct {
		query, together, apart string
	}{
		{"can't connect", "Error: can't connect to the database", "Retry the connect call; it can fail twice"},
		{"create a branch", "First create a branch for the fix", "The branch exists; create it again"},
	} {
		t.Run(c.query, func(t *testing.T) {
			r, clk := viewsRook(t)
			id := viewsSession(t, r, "together")
			viewsAppend(t, r, clk, id,
				Entry{Kind: eventlog.KindToolResult, Body: []byte(c.together + "\n")},
				Entry{Kind: eventlog.KindAssistant, Body: []byte(c.apart + "\n")},
			)
			seqs, hits := searchHitsOf(t, r, c.query)
			if len(seqs) != 2 || seqs[0] != 0 {
				t.Fatalf("%q: the event with the words as the query gives them (#0) should rank first; hits, best first:\n%s", c.query, hits)
			}
		})
	}
}

func TestSearchRanksAcrossSessions(t *testing.T) {
	r, clk := viewsRook(t)
	a := viewsSession(t, r, "first")
	b := viewsSession(t, r, "second")
	shared := []byte("the flaky test again")
	viewsAppend(t, r, clk, a,
		Entry{Kind: eventlog.KindUser, Body: []byte("please fix the flaky test")},            // 3×65 (together) + 24 + 12 + 4
		Entry{Kind: eventlog.KindAssistant, Body: []byte("done: flaky test fixed\ntest ok")}, // 3×65 + 24 + 12 + 8 + 4
		Entry{Kind: eventlog.KindUser, Body: shared},                                         // 3×65 + 24 + 12 + 4
		Entry{Kind: eventlog.KindCheckpoint, Body: []byte("flaky test flaky test")},          // not searched
		Entry{Kind: eventlog.KindNote, Body: []byte("unrelated")},
	)
	viewsAppend(t, r, clk, b,
		Entry{Kind: eventlog.KindUser, Body: shared}, // the same object, scanned once
		Entry{Kind: eventlog.KindToolResult, Body: []byte("only flaky")},
	)
	res, err := r.Search("Flaky test", SearchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	type hit struct {
		s     eventlog.ID
		seq   uint64
		score int
	}
	var got []hit
	for _, h := range res.Hits {
		got = append(got, hit{h.Session, h.Seq, h.Score})
	}
	// The shared body is one hit, shown as its newest event (b's), which
	// counts the other (a's #2).
	// (rankTogether's 3 steps of 195, and 65 for each term found as a
	// word of its own, wordStep.)
	want := []hit{{a, 1, 3*195 + 2*65 + 48}, {b, 0, 3*195 + 2*65 + 40}, {a, 0, 3*195 + 2*65 + 40}, {b, 1, 65 + 10}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("hits %+v\nwant %+v", got, want)
	}
	if h := res.Hits[1]; h.Also != 1 || h.AlsoSessions != 1 || h.Title != "second" {
		t.Fatalf("shared body's hit %+v: want also 1, in 1 other session", h)
	}
	if h := res.Hits[0]; h.Also != 0 || h.AlsoSessions != 0 {
		t.Fatalf("a body named once: %+v", h)
	}
	if res.TotalHits != 5 || res.ObjectsScanned != 5 || res.ObjectsMatched != 4 || res.Truncated || res.Unreadable != 0 {
		t.Fatalf("result %+v", res)
	}
	if res.Hits[0].Title != "first" || res.Hits[0].Snippet != "done: flaky test fixed" || res.Hits[0].Kind != eventlog.KindAssistant {
		t.Fatalf("best hit %+v", res.Hits[0])
	}

	// --limit keeps the best; the total still counts every hit.
	res, err = r.Search("flaky test", SearchOptions{Limit: 2})
	if err != nil || len(res.Hits) != 2 || res.TotalHits != 5 || res.Hits[1].Session != b {
		t.Fatalf("limit 2: %+v %v", res, err)
	}
	// One session.
	res, err = r.Search("flaky", SearchOptions{Session: &b})
	if err != nil || len(res.Hits) != 2 || res.ObjectsScanned != 2 {
		t.Fatalf("session b: %+v %v", res, err)
	}
	for _, h := range res.Hits {
		if h.Session != b {
			t.Fatalf("hit outside the session: %+v", h)
		}
	}
	// Nothing.
	res, err = r.Search("zebra", SearchOptions{})
	if err != nil || len(res.Hits) != 0 || res.TotalHits != 0 || res.ObjectsScanned != 5 {
		t.Fatalf("no match: %+v %v", res, err)
	}
	if _, err := r.Search("the a", SearchOptions{}); !errors.Is(err, ErrNoSearchTerms) {
		t.Fatalf("no terms: %v", err)
	}
}

// A budget spends itself on the newest conversation, not on the sessions
// made last: an imported session made today may hold a transcript from last
// year (its events keep the transcript's times).
func TestSearchBudgetReadsNewestConversationFirst(t *testing.T) {
	r, clk := viewsRook(t)
	recent := viewsSession(t, r, "spoken last, imported first")
	viewsAppend(t, r, clk, recent, Entry{Kind: eventlog.KindUser, Body: []byte("recent needle")})
	old := viewsSession(t, r, "spoken long ago, imported last")
	viewsAppend(t, r, clk, old, Entry{Kind: eventlog.KindUser, Body: []byte("old needle"), Time: clk.T.AddDate(-1, 0, 0)})
	res, err := r.Search("needle", SearchOptions{MaxObjects: 1})
	if err != nil || !res.Truncated || len(res.Hits) != 1 || res.Hits[0].Session != recent {
		t.Fatalf("budget of one object: %+v %v (want the hit in %s)", res, err, recent)
	}
	res, err = r.Search("needle", SearchOptions{})
	if err != nil || res.Truncated || len(res.Hits) != 2 {
		t.Fatalf("whole: %+v %v", res, err)
	}
}

func TestSearchBudgetAndUnreadable(t *testing.T) {
	r, clk := viewsRook(t)
	id := viewsSession(t, r, "budget")
	for i := 0; i < 10; i++ {
		viewsAppend(t, r, clk, id, Entry{Kind: eventlog.KindUser, Body: []byte(strings.Repeat("z", i) + " needle")})
	}
	res, err := r.Search("needle", SearchOptions{MaxObjects: 4})
	if err != nil || !res.Truncated || res.ObjectsScanned != 4 || res.TotalHits != 4 {
		t.Fatalf("object budget: %+v %v", res, err)
	}
	// The newest bodies are read first.
	for _, h := range res.Hits {
		if h.Seq < 6 {
			t.Fatalf("budget spent on old event %d", h.Seq)
		}
	}
	res, err = r.Search("needle", SearchOptions{MaxBytes: 30})
	if err != nil || !res.Truncated || res.ObjectsScanned != 1 || res.BytesScanned != 16 {
		t.Fatalf("byte budget: %+v %v", res, err)
	}
	res, err = r.Search("needle", SearchOptions{})
	if err != nil || res.Truncated || res.ObjectsScanned != 10 {
		t.Fatalf("whole: %+v %v", res, err)
	}
	// An event naming a body the store does not have is skipped, counted.
	if _, err := r.Log.Append(id, eventlog.Event{Kind: eventlog.KindUser, Body: [16]byte{9}}); err != nil {
		t.Fatal(err)
	}
	res, err = r.Search("needle", SearchOptions{})
	if err != nil || res.Unreadable != 1 || res.TotalHits != 10 {
		t.Fatalf("unreadable: %+v %v", res, err)
	}
}

// A body larger than the whole byte budget (a transcript's 50 MB line: a
// file read whole, an image) is skipped and counted, not where the scan
// stops: the budget could never read it, and stopping there left every
// older body and session unsearched by each search.
func TestSearchSkipsABodyLargerThanTheBudget(t *testing.T) {
	r, clk := viewsRook(t)
	old := viewsSession(t, r, "older")
	viewsAppend(t, r, clk, old, Entry{Kind: eventlog.KindUser, Body: []byte("old needle")})
	id := viewsSession(t, r, "huge output")
	viewsAppend(t, r, clk, id,
		Entry{Kind: eventlog.KindUser, Body: []byte("first needle")},
		Entry{Kind: eventlog.KindToolResult, Body: []byte("needle " + strings.Repeat("x", 200))},
		Entry{Kind: eventlog.KindAssistant, Body: []byte("last needle")},
	)
	res, err := r.Search("needle", SearchOptions{MaxBytes: 100})
	if err != nil || res.Truncated || res.TooLarge != 1 || res.TotalHits != 3 || res.ObjectsScanned != 3 {
		t.Fatalf("budget of 100 bytes: %+v %v (want the 3 small bodies read, the large one counted)", res, err)
	}
	res, err = r.Search("needle", SearchOptions{})
	if err != nil || res.Truncated || res.TooLarge != 0 || res.TotalHits != 4 {
		t.Fatalf("whole: %+v %v", res, err)
	}
	// Passed over, it takes none of the object budget: the scan read its
	// 2 objects, not 1 ("after reading 19999 object(s)" of 20,000).
	res, err = r.Search("needle", SearchOptions{MaxBytes: 100, MaxObjects: 2})
	if err != nil || !res.Truncated || res.TooLarge != 1 || res.ObjectsScanned != 2 {
		t.Fatalf("budget of 100 bytes and 2 objects: %+v %v (want 2 objects read, the large one counted apart)", res, err)
	}
}

// TestSearchGroupsAForksCopies: a fork shares its parent's events, and an
// agent repeats itself. Each matching body is one hit: the newest event
// naming it, counting the others; a fork's copy (the same time) shows as
// the parent's event, where it was said first.
func TestSearchGroupsAForksCopies(t *testing.T) {
	r, clk := viewsRook(t)
	a := viewsSession(t, r, "parent")
	viewsAppend(t, r, clk, a,
		Entry{Kind: eventlog.KindUser, Body: []byte("where is the needle")},
		Entry{Kind: eventlog.KindAssistant, Body: []byte("in the haystack")},
	)
	fork, err := r.Log.Fork(a, 2, eventlog.Meta{Title: "fork"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Search("needle", SearchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) != 1 || res.TotalHits != 2 {
		t.Fatalf("fork's copy: %d hits of %d: %+v", len(res.Hits), res.TotalHits, res.Hits)
	}
	if h := res.Hits[0]; h.Session != a || h.Seq != 0 || h.Also != 1 || h.AlsoSessions != 1 {
		t.Fatalf("fork's copy shown as %+v: want the parent's #0, also 1 in 1 other session", h)
	}

	// Said again later in the fork: that newer event is the one shown.
	viewsAppend(t, r, clk, fork.ID, Entry{Kind: eventlog.KindUser, Body: []byte("where is the needle")})
	res, err = r.Search("needle", SearchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) != 1 || res.TotalHits != 3 {
		t.Fatalf("repeat: %d hits of %d: %+v", len(res.Hits), res.TotalHits, res.Hits)
	}
	if h := res.Hits[0]; h.Session != fork.ID || h.Seq != 2 || h.Also != 2 || h.AlsoSessions != 1 || h.Title != "fork" {
		t.Fatalf("repeat shown as %+v: want the fork's #2, also 2 in 1 other session", h)
	}
	// One session: the same grouping inside it.
	res, err = r.Search("needle", SearchOptions{Session: &fork.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) != 1 || res.Hits[0].Seq != 2 || res.Hits[0].Also != 1 || res.Hits[0].AlsoSessions != 0 {
		t.Fatalf("in the fork alone: %+v", res.Hits)
	}
}

// TestSearchGroupsTheSameTextInOtherBodies: a Codex fork copies its
// parent's lines into its own rollout, so the same line is another body
// (it begins at another offset): the same text, one hit.
func TestSearchGroupsTheSameTextInOtherBodies(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	prompt := `{"timestamp":"2026-01-07T08:30:01.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"where is the haystack needle"}]}}`
	meta := func(id, extra string) string {
		return `{"timestamp":"2026-01-07T08:30:00.000Z","type":"session_meta","payload":{"id":"` + id + `","timestamp":"2026-01-07T08:30:00.000Z","cwd":"/w"` + extra + `}}`
	}
	parent := "019b8a10-1111-7222-8333-944455566601"
	fork := "019b8a10-1111-7222-8333-944455566602"
	writeSource(t, fsys, "/c/rollout-2026-01-07T08-30-00-"+parent+".jsonl", []string{meta(parent, ""), prompt}, "")
	writeSource(t, fsys, "/c/rollout-2026-01-07T08-31-00-"+fork+".jsonl", []string{meta(fork, `,"forked_from_id":"`+parent+`"`), prompt}, "")
	mustImport(t, r, FormatCodex, "/c")
	res, err := r.Search("haystack needle", SearchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.ObjectsMatched != 2 || res.TotalHits != 2 || res.Texts != 1 || len(res.Hits) != 1 {
		t.Fatalf("%d objects, %d events, %d texts, hits %+v", res.ObjectsMatched, res.TotalHits, res.Texts, res.Hits)
	}
	if h := res.Hits[0]; h.Also != 1 || h.AlsoSessions != 1 {
		t.Fatalf("the hit %+v: want also 1, in 1 other session", h)
	}
}

// TestTextOfImportedReadsJSONInStrings: a Codex call's arguments and a
// tool's output with its metadata are JSON in a string: search reads their
// string values too, not their JSON.
func TestTextOfImportedReadsJSONInStrings(t *testing.T) {
	call := `{"timestamp":"t","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"bash\",\"-lc\",\"rg -n login src/\"],\"workdir\":\"/w\"}","call_id":"c1"}}`
	out := `{"timestamp":"t","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"{\"output\":\"src/login.ts:12: export function login\\n\",\"metadata\":{\"exit_code\":0}}"}}`
	got := string(textOfImported([]byte(call + "\n" + out + "\n")))
	for _, want := range []string{"\nrg -n login src/\n", "\nsrc/login.ts:12: export function login\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("text %q lacks %q", got, want)
		}
	}
	if strings.Contains(got, `{"command"`) || strings.Contains(got, `"metadata"`) {
		t.Errorf("text %q has JSON in it", got)
	}
	// A string that only looks like JSON stays as it is; so does JSON in
	// any other string (a settings file a tool read: its keys and numbers
	// are words to find too).
	if got := string(textOfImported([]byte(`{"type":"user","message":{"content":"[not json] {either"}}` + "\n"))); !strings.Contains(got, "[not json] {either\n") {
		t.Errorf("text %q", got)
	}
	file := `{"type":"user","toolUseResult":{"originalFile":"{\"name\":\"app\",\"version\":\"4.17.21\",\"port\":8080}"}}`
	if got := string(textOfImported([]byte(file + "\n"))); !strings.Contains(got, `{"name":"app","version":"4.17.21","port":8080}`) {
		t.Errorf("a file's JSON content: %q", got)
	}
}

// TestSearchSkipsEncodedState: search reads no encoded state, whatever
// key holds it: the base64 of an image a Read returned (toolUseResult's
// file.base64), a Codex user_message's images (data URLs), beside the
// keys notText names (an image block's data, a signature).
func TestSearchSkipsEncodedState(t *testing.T) {
	png := "iVBORw0KGgoAAAANSUhEUgAA" + strings.Repeat("QUJDRA", 100)
	for _, line := range []string{
		`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + png + `"}}]}]},"toolUseResult":{"type":"image","file":{"base64":"` + png + `","type":"image/png","originalSize":450}},"uuid":"u1"}`,
		`{"timestamp":"t","type":"event_msg","payload":{"type":"user_message","message":"look at this","images":["data:image/png;base64,` + png + `"]}}`,
		`{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_image","image_url":"data:image/jpeg;base64,/9j/` + png + `"}]}}`,
		// JSON written in a string: an MCP result in a Codex output, and
		// too large for search to read as values; a tool's text output.
		`{"timestamp":"t","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"{\"content\":[{\"type\":\"image\",\"data\":\"` + png + `\",\"mimeType\":\"image/png\"}],` + `\"pad\":\"` + strings.Repeat("x", maxCodexJSONString) + `\"}"}}`,
		`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"{\"shot\": \"data:image/png;base64,` + png + `\", \"data\": \"` + png + `\"}"}]},"uuid":"u1"}`,
	} {
		if got := string(textOfImported([]byte(line + "\n"))); strings.Contains(got, "QUJDRA") {
			t.Errorf("encoded state read as text: %q", got)
		}
	}
	// The text around JSON's encoded values is read.
	line := `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"{\"shot\":\"data:image/png;base64,` + png + `\",\"caption\":\"the login form\"}"}]},"uuid":"u1"}`
	if got := string(textOfImported([]byte(line + "\n"))); got != "{\"shot\":\"\",\"caption\":\"the login form\"}\n" {
		t.Errorf("text around a data URL in JSON text: %q", got)
	}
	// A "base64" of words, or text that names a data URL, is text.
	line = `{"toolUseResult":{"base64":"not base64 at all","note":"data:image/png;base64, is how it starts"}}`
	if got := string(textOfImported([]byte(line + "\n"))); got != "not base64 at all\ndata:image/png;base64, is how it starts\n" {
		t.Errorf("text: %q", got)
	}
}

// TestScoreBodySnippetShowsTheMatchAfterCharsLoweredShorter: a long line
// of Turkish capitals (İ lower-cases to one byte, not two) before the
// match still has the match in its snippet.
func TestScoreBodySnippetShowsTheMatchAfterCharsLoweredShorter(t *testing.T) {
	line := strings.Repeat("İ", 400) + " needle " + strings.Repeat("x", 300)
	_, snippet := scoreBody([]byte(line), [][]byte{[]byte("needle")}, nil)
	if !strings.Contains(snippet, "needle") {
		t.Errorf("snippet %q lacks the match", snippet)
	}
	for _, c := range []struct {
		line      string
		low, want int
	}{{"abc", 2, 2}, {"İİx", 2, 4}, {"\u212Ax", 1, 3}, {"\xffx", 1, 1}, {"\xff\xfex", 2, 2}, {"ab", 5, 2}} {
		if got := lineOffset([]byte(c.line), c.low); got != c.want {
			t.Errorf("lineOffset(%q, %d) = %d, want %d", c.line, c.low, got, c.want)
		}
	}
}

// Search read each session's metadata twice: once to order the sessions
// (byLastEvent's summaries), once again to search them. Once is enough,
// across every session and for one named by --session.
func TestSearchReadsEachSessionsMetadataOnce(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	const n = 5
	var ids []eventlog.ID
	for i := range n {
		id := newSession(t, r)
		appendBodies(t, r, id, fmt.Sprintf("flaky test number %d", i))
		ids = append(ids, id)
	}
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	metaOpens := func(opts SearchOptions) int64 {
		var opens atomic.Int64
		fsys.SetHook(func(op vfs.Op, name string) error {
			if op == vfs.OpOpenRead && strings.HasSuffix(name, ".meta") {
				opens.Add(1)
			}
			return nil
		})
		res, err := r.Search("flaky", opts)
		fsys.SetHook(nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) == 0 {
			t.Fatal("no hit")
		}
		return opens.Load()
	}
	if got := metaOpens(SearchOptions{}); got != n {
		t.Errorf("searching %d sessions opened their metadata %d times, want %d", n, got, n)
	}
	if got := metaOpens(SearchOptions{Session: &ids[2]}); got != 1 {
		t.Errorf("searching one session opened its metadata %d times, want 1", got)
	}
}

// `rook search` reads no lock: it lists the sessions, then reads each
// one's log. A `rook session rm` run meanwhile by another rook (readers
// never wait) removed a listed session before search opened its log, and
// search said, as a note on stderr and in --json's skipped_sessions:
//
//	session X: open .../events/X.log: no such file or directory (searched what precedes the damage)
//
// Seen by hand: `rook search bead` in a loop beside `rook session rm`
// printed it. Nothing is damaged: the session was removed, as asked, by
// the other command; calling it damage (and a failed open) sends the user
// to look for a fault that is not there. A session removed while search
// ran is simply not searched (at most noted as removed meanwhile).
func TestSearchBesideASessionRmCallsNoRemovedSessionDamaged(t *testing.T) {
	fsys := vfs.NewMem()
	w := testRook(t, fsys)
	gone := newSession(t, w)
	kept := newSession(t, w)
	for _, id := range []eventlog.ID{gone, kept} {
		if _, err := w.Append(id, Entry{Kind: eventlog.KindUser, Body: []byte("find the needle in " + id.String())}); err != nil {
			t.Fatal(err)
		}
	}
	rd, clk := readerAfter(t, fsys, w)

	goneLog := filepath.Join(testHome, "events", gone.String()+".log")
	// Search is about to open the session's log: another rook's
	// `session rm` removes the session first.
	done := removeBeforeRead(fsys, clk, goneLog, func(other *Rook) error {
		_, err := other.RemoveSession(gone)
		return err
	})
	res, err := rd.Search("needle", SearchOptions{})
	removed, rmErr := done()
	if rmErr != nil {
		t.Fatalf("the other rook's session rm: %v", rmErr)
	}
	if !removed {
		t.Fatal("search never opened the removed session's log")
	}
	if err != nil {
		t.Fatalf("search beside a session rm: %v", err)
	}
	for _, s := range res.SkippedSessions {
		if strings.Contains(s, "damage") || strings.Contains(s, "no such file") {
			t.Errorf("search calls a session another rook removed meanwhile damaged: %q", s)
		}
	}
	found := false
	for _, h := range res.Hits {
		if h.Session == kept {
			found = true
		}
	}
	if !found {
		t.Errorf("search did not find the kept session's hit: %+v", res.Hits)
	}
}

// A hit's snippet holds its match after a run of bytes that are not UTF-8
// (a binary blob a command printed before it): searchSnippet counted the
// match's place a rune a byte and cut strings.ToValidUTF8's runes, where
// the run is one U+FFFD, and "…yyyy…" missed "needle".
func TestSearchSnippetHasTheMatchAfterARunOfBadBytes(t *testing.T) {
	body := []byte("head " + strings.Repeat("\xff", 300) + " the needle is here " + strings.Repeat("y", 500))
	score, snip := scoreBody(body, [][]byte{[]byte("needle")}, nil)
	if score == 0 {
		t.Fatal("no match scored")
	}
	if !strings.Contains(snip, "needle") {
		t.Errorf("the snippet of a hit on \"needle\" does not hold it: %q", snip)
	}
}

// The snippet of a hit holds the query's text, whatever the line has
// before and after it: bytes that are not UTF-8 alone and in runs,
// characters that fold shorter or longer, colors, control characters.
func TestSearchSnippetHoldsTheMatchOfRandomBodies(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	pieces := []string{"word", " ", "  ", "\xff", "\xfe\xfd", "\xc3", "\xe2\x82", "İ", "\u212A", "ſ", "ΣΑΣ", "é", "日本",
		"\t", "\x00", "\x1b[31m", "\x1b[0m", "\ufffd", "needless", "NEED", strings.Repeat("\x80", 30)}
	terms := [][]byte{[]byte("needle")}
	for i := range 3000 {
		var b []byte
		n, at := rng.IntN(400), rng.IntN(400)
		for k := range n {
			if k == at {
				b = append(b, " needle "...)
			}
			b = append(b, pieces[rng.IntN(len(pieces))]...)
		}
		if at >= n {
			b = append(b, " needle "...)
		}
		score, snip := scoreBody(b, terms, nil)
		if score == 0 || !strings.Contains(snip, "needle") {
			t.Fatalf("body %d %q: score %d, snippet %q without the match", i, b, score, snip)
		}
	}
}

// A word found as a word of its own counts more, in its rank, than one
// inside other words, however many lines have those (README: `test` in
// `mix test` over `attestation`): a line's 3 for a word of its own lost
// to a second line's "attestation".
func TestSearchWholeWordOutranksTheWordInsideOthers(t *testing.T) {
	terms := [][]byte{[]byte("test")}
	word, _ := scoreBody([]byte("run mix test now"), terms, nil)
	inside, _ := scoreBody([]byte("checking attestation\nattestation passed"), terms, nil)
	if word <= inside {
		t.Errorf("\"test\" as a word scored %d, inside \"attestation\" on two lines %d: the word of its own should rank first", word, inside)
	}
	many, _ := scoreBody([]byte(strings.Repeat("attestation attestation attestation\n", 40)), terms, nil)
	if word <= many {
		t.Errorf("\"test\" as a word scored %d, inside \"attestation\" on 40 lines %d", word, many)
	}
	// Two terms: both as words over one of them inside another; but the
	// ranks come first (a line with every term over every term apart,
	// over some of them), words or not.
	two := [][]byte{[]byte("mix"), []byte("test")}
	both, _ := scoreBody([]byte("mix tests\nrun test now"), two, nil)
	one, _ := scoreBody([]byte("remix tests\nremix attestation\nremix test"), two, nil)
	if both <= one {
		t.Errorf("mix, test as words scored %d, mix inside words %d", both, one)
	}
	every, _ := scoreBody([]byte("remix attestation"), two, nil)
	apart, _ := scoreBody([]byte("mix\ntest"), two, nil)
	if every <= apart {
		t.Errorf("every term on a line, inside words, scored %d, every term as words on lines of their own %d: the rank comes first", every, apart)
	}
	someOnly, _ := scoreBody([]byte("mix mix mix\nmix here"), two, nil)
	if apart <= someOnly {
		t.Errorf("every term apart scored %d, some of them as words %d", apart, someOnly)
	}
}

// foldRune folds alike what `session find` matched alike (a character of
// the query's simple folding class, or one that lower-cases as it does):
// search and find share it.
func TestFoldRuneFoldsEachClassAndLowerCase(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		f := foldRune(r)
		if g := foldRune(unicode.ToLower(r)); g != f {
			t.Fatalf("foldRune(%U) = %U, of its lower case %U", r, f, g)
		}
		if g := foldRune(unicode.SimpleFold(r)); g != f {
			t.Fatalf("foldRune(%U) = %U, of %U in its class %U", r, f, unicode.SimpleFold(r), g)
		}
	}
	for _, c := range [][2]string{{"ΚΟΣΜΟΣ", "κοσμος"}, {"\u212Aelvin", "kelvin"}, {"ſtate", "STATE"}, {"İstanbul", "istanbul"}, {"ǅ", "ǆ"}} {
		if a, b := foldString(c[0]), foldString(c[1]); a != b {
			t.Errorf("%q folds to %q, %q to %q", c[0], a, c[1], b)
		}
	}
}

// searchAllocs is how many bytes r.Search allocates searching a store
// whose one session holds body, a native tool-result (rook session append).
func searchAllocs(t *testing.T, body []byte, query string) (uint64, SearchResult) {
	t.Helper()
	r := testRook(t, vfs.NewMem())
	id := newSession(t, r)
	if _, err := r.Append(id, Entry{Kind: eventlog.KindToolResult, Body: body}); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res, err := r.Search(query, SearchOptions{})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	return after.TotalAlloc - before.TotalAlloc, res
}

// A native body of one long line (a minified JSON or a log with no
// newline, appended with `rook session append`) costs about what the
// same text in lines does: its line is scored as it is written
// (scoreHeldBody, longLine), not folded whole and cut into a snippet of
// all its runes, which held ten times the body (a 41 MB line took 408 MB
// of RSS; in this test a 16 MiB line allocated 195 MiB, its lines 17).
func TestSearchOneLongNativeLineCostsAsItsLines(t *testing.T) {
	words := []string{"alpha", "beta", "gamma", "delta", "zebra", "needle", "quux", "lorem", "ipsum"}
	rng := rand.New(rand.NewPCG(1, 2))
	var lines bytes.Buffer
	for lines.Len() < 16<<20 {
		for j := range 10 {
			if j > 0 {
				lines.WriteByte(' ')
			}
			lines.WriteString(words[rng.IntN(len(words))])
		}
		lines.WriteByte('\n')
	}
	multi := lines.Bytes()
	one := bytes.ReplaceAll(multi, []byte("\n"), []byte(" "))
	for _, q := range []string{"zebra needle", "nowhere"} {
		m, _ := searchAllocs(t, multi, q)
		o, res := searchAllocs(t, one, q)
		t.Logf("%q: body of %d MiB: lines %d MiB allocated, one line %d MiB", q, len(one)>>20, m>>20, o>>20)
		if q != "nowhere" && (len(res.Hits) != 1 || res.TotalHits != 1) {
			t.Fatalf("%q: %d hit(s), want the one body", q, len(res.Hits))
		}
		if o > m+2*uint64(len(one)) {
			t.Errorf("%q: searching a %d MiB body of one line allocated %d MiB, the same text in lines %d MiB: the long line is held and copied whole several times over",
				q, len(one)>>20, o>>20, m>>20)
		}
	}
}

// A native body of one long line in Latin-1 (the log of a tool that does
// not write UTF-8: "Grüße" is "Gr\xfc\xdfe", two bytes not UTF-8 side by
// side) costs about what the same text in lines does. snippetScan left
// the snippet of any line with two such bytes in a row to searchSnippet,
// and scoreHeldBody folded the line whole for it: a 15 MiB line allocated
// 231 MiB, its lines 17 (the real binary, a 40 MiB line: 421 MB RSS and
// 4.1 s, its lines 59 MB and 0.5 s). Nor does a color sequence between
// two such bytes (which snippetScan still leaves to searchSnippet, as
// stripping it may join them) cost it: the body is binary, its snippet
// not shown, and it is not cut.
func TestSearchOneLongLatin1LineCostsAsItsLines(t *testing.T) {
	for _, unit := range []string{
		"Gr\xfc\xdfe aus M\xfcnchen, die Stra\xdfe ist gesperrt;\n",
		"Gr\xfc\x1b[1m\xdfe aus M\xfcnchen, die Stra\xdf\x1b[0me ist gesperrt;\n",
	} {
		multi := bytes.Repeat([]byte(unit), (16<<20)/len(unit))
		multi = append(multi, "needle zebra\n"...)
		one := bytes.ReplaceAll(multi, []byte("\n"), []byte(" "))
		m, _ := searchAllocs(t, multi, "needle zebra")
		o, res := searchAllocs(t, one, "needle zebra")
		t.Logf("%q: body of %d MiB: lines %d MiB allocated, one line %d MiB", unit, len(one)>>20, m>>20, o>>20)
		if len(res.Hits) != 1 || res.TotalHits != 1 || !res.Hits[0].Binary || res.Hits[0].Snippet != "" {
			t.Fatalf("%q: %+v, want the one body, binary", unit, res.Hits)
		}
		if o > m+2*uint64(len(one)) {
			t.Errorf("%q: searching a %d MiB Latin-1 body of one line allocated %d MiB, the same text in lines %d MiB: the long line is folded whole for its snippet",
				unit, len(one)>>20, o>>20, m>>20)
		}
	}
}

// scoreHeldBody, its long lines scored as they are written, gives what
// scoreBody gives of the body whole: bodies of lines long and short, with
// colors, bytes that are not UTF-8 (alone, side by side, a color sequence
// between two: that line's snippet is cut whole) and characters that fold
// to other lengths. A native body gives the same but for the snippet of
// one not UTF-8, binary, which Search does not show.
func TestScoreHeldBodyScoresAsWhole(t *testing.T) {
	scoreLinesStreamed(t, 40)
	rng := rand.New(rand.NewPCG(61, 62))
	queries := []string{"mix test", "mix", "test mix", "fix the parser", "é k", "31m", "-v", "日本", "mix a test", "needle"}
	parts := append([]string{"\n", "\n", "needle", "\xff", "\xff\xfe"}, longLineWords...)
	for range 3000 {
		var b []byte
		for n := rng.IntN(400); len(b) < n; {
			b = append(b, parts[rng.IntN(len(parts))]...)
		}
		terms, gaps := termBytes(searchTermsOf(queries[rng.IntN(len(queries))]))
		wScore, wSnip := scoreBody(b, terms, gaps)
		hScore, hSnip := scoreHeldBody(b, terms, gaps, false)
		if hScore != wScore || hSnip != wSnip {
			t.Fatalf("%q, terms %q: scored with its long lines streamed %d %q, whole %d %q", b, terms, hScore, hSnip, wScore, wSnip)
		}
		nScore, nSnip := scoreHeldBody(b, terms, gaps, true)
		if nScore != wScore || !IsBinary(b) && nSnip != wSnip {
			t.Fatalf("%q, terms %q: scored native with its long lines streamed %d %q, whole %d %q", b, terms, nScore, nSnip, wScore, wSnip)
		}
	}
}
