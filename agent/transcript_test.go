package agent

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/clock"
	"github.com/rookhq/rook/internal/vfs"
)

const testHome = "/home/u/.rook"

func testRook(t *testing.T, fsys *vfs.MemFS) *Rook {
	t.Helper()
	clk := &clock.Fixed{T: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	if _, err := cas.Init(fsys, clk, testHome); err != nil {
		t.Fatal(err)
	}
	r, err := Open(testHome, Options{FS: fsys, Clock: clk, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func newSession(t *testing.T, r *Rook) eventlog.ID {
	t.Helper()
	m, err := r.NewSession("t", "/w", nil)
	if err != nil {
		t.Fatal(err)
	}
	return m.ID
}

func appendBodies(t *testing.T, r *Rook, id eventlog.ID, bodies ...string) {
	t.Helper()
	for _, b := range bodies {
		if _, err := r.Append(id, Entry{Kind: eventlog.KindAssistant, Label: "model", Body: []byte(b)}); err != nil {
			t.Fatal(err)
		}
	}
}

func seqs[T interface{ seq() uint64 }](xs []T) []uint64 {
	out := []uint64{}
	for _, x := range xs {
		out = append(out, x.seq())
	}
	return out
}

func (l HistoryLine) seq() uint64 { return l.Seq }
func (v EventView) seq() uint64   { return v.Seq }
func (h FindHit) seq() uint64     { return h.Seq }

func u(n uint64) *uint64 { return &n }

func ptrString(p *uint64) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

func TestHistoryPagesAndCursors(t *testing.T) {
	r := testRook(t, vfs.NewMem())
	id := newSession(t, r)
	for i := 0; i < 100; i++ {
		appendBodies(t, r, id, fmt.Sprintf("\n\n  body %d\nsecond line", i))
	}
	cases := []struct {
		name        string
		q           HistoryQuery
		first, last uint64 // the page's seqs; last < first: empty
		prev, next  string
	}{
		{"newest", HistoryQuery{Limit: 10}, 90, 99, "90", "nil"},
		{"start", HistoryQuery{From: u(0), Limit: 10}, 0, 9, "nil", "10"},
		{"middle from", HistoryQuery{From: u(45), Limit: 10}, 45, 54, "45", "55"},
		{"middle before", HistoryQuery{Before: u(90), Limit: 10}, 80, 89, "80", "90"},
		{"short first page", HistoryQuery{Before: u(5), Limit: 10}, 0, 4, "nil", "5"},
		{"end from", HistoryQuery{From: u(95), Limit: 10}, 95, 99, "95", "nil"},
		{"whole", HistoryQuery{Limit: 1000}, 0, 99, "nil", "nil"},
		{"before past the end", HistoryQuery{Before: u(500), Limit: 3}, 97, 99, "97", "nil"},
		{"from the end", HistoryQuery{From: u(100), Limit: 10}, 1, 0, "100", "nil"},
		{"from past the end", HistoryQuery{From: u(300), Limit: 10}, 1, 0, "100", "nil"},
		{"before 0", HistoryQuery{Before: u(0), Limit: 10}, 1, 0, "nil", "0"},
	}
	for _, c := range cases {
		p, err := r.History(id, c.q)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var want []uint64
		for s := c.first; s <= c.last && c.last >= c.first; s++ {
			want = append(want, s)
		}
		if got := seqs(p.Events); fmt.Sprint(got) != fmt.Sprint(append([]uint64{}, want...)) {
			t.Errorf("%s: seqs %v, want %v", c.name, got, want)
		}
		if p.Total != 100 || ptrString(p.PrevBefore) != c.prev || ptrString(p.NextFrom) != c.next {
			t.Errorf("%s: total %d prev %s next %s, want 100 %s %s", c.name, p.Total, ptrString(p.PrevBefore), ptrString(p.NextFrom), c.prev, c.next)
		}
	}
	p, _ := r.History(id, HistoryQuery{From: u(7), Limit: 1})
	if l := p.Events[0]; l.Preview != "body 7" || l.Size != int64(len("\n\n  body 7\nsecond line")) || l.Err != nil {
		t.Errorf("line %+v", l)
	}
	// Paging back from the newest page visits every event once.
	var all []uint64
	q := HistoryQuery{Limit: 7}
	for {
		p, err := r.History(id, q)
		if err != nil {
			t.Fatal(err)
		}
		all = append(seqs(p.Events), all...)
		if p.PrevBefore == nil {
			break
		}
		q.Before = p.PrevBefore
	}
	if len(all) != 100 || all[0] != 0 || all[99] != 99 {
		t.Fatalf("paging back: %d events", len(all))
	}
	if _, err := r.History(id, HistoryQuery{Before: u(1), From: u(1), Limit: 5}); err == nil {
		t.Error("before and from together: no error")
	}
	if _, err := r.History(id, HistoryQuery{Limit: 0}); err == nil {
		t.Error("limit 0: no error")
	}
	empty := newSession(t, r)
	p, err := r.History(empty, HistoryQuery{Limit: 5})
	if err != nil || len(p.Events) != 0 || p.Total != 0 || p.PrevBefore != nil || p.NextFrom != nil {
		t.Errorf("empty session: %+v %v", p, err)
	}
}

// A history page reads the log around the page, not the session: the
// number of reads of the log file does not depend on how long it is.
func TestHistoryCostsAPage(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	id := newSession(t, r)
	for i := 0; i < 40000; i++ {
		if _, err := r.Append(id, Entry{Kind: eventlog.KindUser, Label: "a label to make records longer", Body: []byte("same body")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	var reads atomic.Int64
	fsys.SetHook(func(op vfs.Op, path string) error {
		if op == vfs.OpRead && strings.HasSuffix(path, ".log") {
			reads.Add(1)
		}
		return nil
	})
	defer fsys.SetHook(nil)
	for _, q := range []HistoryQuery{{Limit: 64}, {From: u(20000), Limit: 64}, {Before: u(123), Limit: 64}} {
		reads.Store(0)
		p, err := r.History(id, q)
		if err != nil || len(p.Events) != 64 {
			t.Fatalf("%+v: %d events, %v", q, len(p.Events), err)
		}
		// The log is over 2.5 MiB: reading it through is 40 reads of 64 KiB.
		if n := reads.Load(); n > 25 {
			t.Errorf("%+v: %d reads of the log for one page", q, n)
		}
	}
}

func TestShowCutsAndErrors(t *testing.T) {
	r := testRook(t, vfs.NewMem())
	id := newSession(t, r)
	big := strings.Repeat("é", 3000) // 6000 bytes
	appendBodies(t, r, id, "short", big)
	if _, err := r.Append(id, Entry{Kind: eventlog.KindNote, Body: []byte{0, 1, 2, 0xff}}); err != nil {
		t.Fatal(err)
	}
	// An event naming a body the store does not have.
	var missing [16]byte
	copy(missing[:], "no such body")
	if _, err := r.Log.Append(id, eventlog.Event{Kind: eventlog.KindUser, Body: missing}); err != nil {
		t.Fatal(err)
	}
	appendBodies(t, r, id, "after")
	if err := r.Flush(); err != nil { // the store's sizes are known once written
		t.Fatal(err)
	}
	p, err := r.Show(id, ShowQuery{Limit: 100, MaxBody: 101})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Events) != 5 || p.Total != 5 || p.Next != nil {
		t.Fatalf("page: %d events, total %d", len(p.Events), p.Total)
	}
	if v := p.Events[0]; string(v.Text) != "short" || v.Elided() || v.Binary || v.Size != 5 {
		t.Errorf("short: %+v", v.BodyView)
	}
	if v := p.Events[1]; len(v.Text) != 100 || v.Omitted != 5900 || !v.Elided() || !utf8.Valid(v.Text) || v.Size != 6000 || v.Stored <= 0 {
		t.Errorf("big: %d shown, %d omitted, size %d stored %d", len(v.Text), v.Omitted, v.Size, v.Stored)
	}
	if v := p.Events[2]; !v.Binary || v.Size != 4 || v.Elided() {
		t.Errorf("binary: %+v", v.BodyView)
	}
	if v := p.Events[3]; v.Err == nil {
		t.Errorf("missing body: no error")
	}
	if v := p.Events[4]; string(v.Text) != "after" {
		t.Errorf("after the bad body: %+v", v.BodyView)
	}
	p, _ = r.Show(id, ShowQuery{From: 1, Limit: 2})
	if got := seqs(p.Events); fmt.Sprint(got) != "[1 2]" || p.Next == nil || *p.Next != 3 || len(p.Events[0].Text) != 0 || p.Events[0].Omitted != 6000 {
		t.Errorf("page from 1: %v next %s", got, ptrString(p.Next))
	}
	if _, err := r.ReadBody(id, 3, 0, 10); err == nil {
		t.Error("entry of a missing body: no error")
	}
}

func TestCutUTF8(t *testing.T) {
	b := []byte("hé€😀x") // h(1) é(2) €(3) 😀(4) x(1)
	for max, want := range map[int]int{-1: 0, 0: 0, 1: 1, 2: 1, 3: 3, 4: 3, 5: 3, 6: 6, 7: 6, 8: 6, 9: 6, 10: 10, 11: 11, 99: 11} {
		if got := CutUTF8(b, max); got != want {
			t.Errorf("CutUTF8(%d) = %d, want %d", max, got, want)
		}
	}
	if got := CutUTF8([]byte("€"), 2); got != 0 {
		t.Errorf("cut inside the first character: %d", got)
	}
	bin := []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80}
	if got := CutUTF8(bin, 5); got != 5 {
		t.Errorf("cut in bytes that are not UTF-8: %d", got)
	}
	if !IsBinary([]byte("a\x00b")) || !IsBinary([]byte{0xff}) || IsBinary([]byte("héllo\n\t")) || IsBinary(nil) {
		t.Error("IsBinary")
	}
}

func TestEntryPagesToTheEnd(t *testing.T) {
	r := testRook(t, vfs.NewMem())
	id := newSession(t, r)
	body := strings.Repeat("日本語 text ", 700) // multi-byte, 10500 bytes
	appendBodies(t, r, id, body, "")
	var got []byte
	off := int64(0)
	pages := 0
	for {
		br, err := r.ReadBody(id, 0, off, EntryPageBytes)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if br.Offset != off || br.Total != int64(len(body)) || br.End != off+int64(len(br.Data)) || len(br.Data) > EntryPageBytes || !utf8.Valid(br.Data) {
			t.Fatalf("page at %d: offset %d end %d total %d, %d bytes", off, br.Offset, br.End, br.Total, len(br.Data))
		}
		got = append(got, br.Data...)
		if br.Next == nil {
			if br.End != br.Total {
				t.Fatalf("last page ends at %d of %d", br.End, br.Total)
			}
			break
		}
		off = *br.Next
	}
	if string(got) != body || pages != 3 {
		t.Fatalf("pages: %d, reassembled %d bytes of %d", pages, len(got), len(body))
	}
	// Offset at the end: an empty page; past it: an error naming the size.
	if br, err := r.ReadBody(id, 0, int64(len(body)), EntryPageBytes); err != nil || len(br.Data) != 0 || br.Next != nil {
		t.Errorf("at the end: %+v %v", br, err)
	}
	var oe *OffsetError
	if _, err := r.ReadBody(id, 0, int64(len(body))+1, EntryPageBytes); !errors.As(err, &oe) || !strings.Contains(err.Error(), "(10500 bytes)") {
		t.Errorf("past the end: %v", err)
	}
	// An offset inside a character starts at the character.
	if br, err := r.ReadBody(id, 0, 1, 5); err != nil || br.Offset != 0 || string(br.Data) != "日" {
		t.Errorf("inside a character: %+v %v", br, err)
	}
	// A page smaller than a character still makes progress.
	if br, err := r.ReadBody(id, 0, 0, 1); err != nil || string(br.Data) != "日" || *br.Next != 3 {
		t.Errorf("tiny page: %+v %v", br, err)
	}
	if br, err := r.ReadBody(id, 1, 0, EntryPageBytes); err != nil || br.Total != 0 || br.Next != nil {
		t.Errorf("empty body: %+v %v", br, err)
	}
	var ne *NoEventError
	if _, err := r.ReadBody(id, 2, 0, EntryPageBytes); !errors.As(err, &ne) || ne.Events != 2 || !strings.Contains(err.Error(), "2 events (#0 to #1)") {
		t.Errorf("seq past the end: %v", err)
	}
}

func TestQuote(t *testing.T) {
	r := testRook(t, vfs.NewMem())
	id := newSession(t, r)
	body := strings.Repeat("ü", 10000) // 20000 bytes
	appendBodies(t, r, id, body)
	if _, err := r.Append(id, Entry{Kind: eventlog.KindToolResult, Body: []byte("\x00bin")}); err != nil {
		t.Fatal(err)
	}
	q, err := r.Quote(id, 0, 0)
	if err != nil || q.End != QuoteBytes || q.Next == nil || *q.Next != QuoteBytes || !utf8.Valid(q.Data) {
		t.Fatalf("quote: end %d %v", q.End, err)
	}
	q, err = r.Quote(id, 0, *q.Next)
	if err != nil || q.Offset != QuoteBytes || q.End != 20000 || q.Next != nil {
		t.Fatalf("rest: %d-%d %v", q.Offset, q.End, err)
	}
	if _, err := r.Quote(id, 1, 0); err == nil || !strings.Contains(err.Error(), "binary") {
		t.Errorf("binary quote: %v", err)
	}
}

func TestFindBasics(t *testing.T) {
	r := testRook(t, vfs.NewMem())
	id := newSession(t, r)
	appendBodies(t, r, id,
		"nothing here",
		"éé Needle and another needle",    // é is 2 bytes: the match is at byte 5
		"line one\nthe NEEDLE\tin a line", // control characters leave the snippet
		"École, ÉCOLE",
		"Kelvin: \u212A", // the Kelvin sign folds to k
	)
	res, err := r.Find(id, FindQuery{Query: "needle"})
	if err != nil {
		t.Fatal(err)
	}
	if got := seqs(res.Hits); fmt.Sprint(got) != "[1 2]" || res.Next != nil || *res.Through != 4 || res.Examined != 5 {
		t.Fatalf("hits %v next %+v", got, res.Next)
	}
	if h := res.Hits[0]; h.Offset != 5 || h.Snippet != "éé Needle and another needle" {
		t.Errorf("hit 1: %+v", h)
	}
	if h := res.Hits[1]; h.Offset != 13 || h.Snippet != "line one the NEEDLE in a line" {
		t.Errorf("hit 2: %+v", h)
	}
	// Unicode folding, and the offset of the match in the original bytes.
	res, _ = r.Find(id, FindQuery{Query: "éCOLE"})
	if len(res.Hits) != 1 || res.Hits[0].Seq != 3 || res.Hits[0].Offset != 0 {
		t.Errorf("école: %+v", res.Hits)
	}
	res, _ = r.Find(id, FindQuery{Query: "École", From: 3, Offset: 1})
	if len(res.Hits) != 1 || res.Hits[0].Offset != 0 {
		// an offset inside a character starts at it
		t.Errorf("école from inside a character: %+v", res.Hits)
	}
	res, _ = r.Find(id, FindQuery{Query: "école", From: 3, Offset: 2})
	if len(res.Hits) != 1 || res.Hits[0].Offset != 8 {
		t.Errorf("école resumed: %+v", res.Hits)
	}
	res, _ = r.Find(id, FindQuery{Query: "k"})
	if len(res.Hits) != 1 || res.Hits[0].Seq != 4 || res.Hits[0].Offset != 0 {
		t.Errorf("k: %+v", res.Hits) // "Kelvin" itself
	}
	res, _ = r.Find(id, FindQuery{Query: ": k"})
	if len(res.Hits) != 1 || res.Hits[0].Seq != 4 || res.Hits[0].Offset != 6 {
		t.Errorf("kelvin sign: %+v", res.Hits)
	}
	res, _ = r.Find(id, FindQuery{Query: "absent"})
	if len(res.Hits) != 0 || res.Next != nil {
		t.Errorf("absent: %+v", res)
	}
	for _, q := range []string{"", strings.Repeat("q", MaxQueryBytes+1)} {
		if _, err := r.Find(id, FindQuery{Query: q}); err == nil {
			t.Errorf("query of %d bytes: no error", len(q))
		}
	}
	if _, err := r.Find(id, FindQuery{Query: strings.Repeat("q", MaxQueryBytes)}); err != nil {
		t.Errorf("query of %d bytes: %v", MaxQueryBytes, err)
	}
	empty := newSession(t, r)
	res, err = r.Find(empty, FindQuery{Query: "x"})
	if err != nil || res.Through != nil || res.Next != nil || len(res.Hits) != 0 {
		t.Errorf("empty session: %+v %v", res, err)
	}
}

// `session find` looks for literal text: a byte that is not UTF-8 decodes
// as U+FFFD but is not one, so a query's U+FFFD (copied from show, which
// prints such a byte so) matched any such byte of a binary body, where
// grep finds nothing. It matches only U+FFFD written (EF BF BD, or the
// escape \ufffd in an imported line, not a surrogate escaped alone), and
// a byte of the query that is not UTF-8 only the same byte.
func TestFindMatchesReplacementCharacterOnlyAsItself(t *testing.T) {
	cases := []struct {
		m     *foldMatcher
		body  string
		match bool
	}{
		{newFoldMatcher("c\uFFFDd"), "abc\xffdef", false},
		{newFoldMatcher("c\uFFFDd"), "abc\xedef", false},
		{newFoldMatcher("c\uFFFDd"), "abc\uFFFDdef", true},
		{newFoldMatcher("\uFFFD"), "\xc3(", false},
		{newFoldMatcher("c\xffd"), "abc\xffdef", true},
		{newFoldMatcher("C\xffD"), "abc\xffdef", true},
		{newFoldMatcher("c\xffd"), "abc\xfedef", false},
		{newFoldMatcher("c\xffd"), "abc\uFFFDdef", false},
		{newEscapedMatcher("\uFFFD"), `{"a":"x\ud800y"}`, false},
		{newEscapedMatcher("\uFFFD"), `{"a":"x\ufffdy"}`, true},
		{newEscapedMatcher("\uFFFD"), `{"a":"x\uFFFDy"}`, true},
		{newEscapedMatcher("\uFFFD"), "{\"a\":\"x\xffy\"}", false},
		{newEscapedMatcher("x\xffy"), "{\"a\":\"x\xffy\"}", true},
	}
	for _, c := range cases {
		at, _, _ := c.m.index([]byte(c.body), 0, len(c.body), nil)
		if (at >= 0) != c.match {
			t.Errorf("%q (escaped %v) in %q: at %d, want a match %v", c.m.query, c.m.escaped, c.body, at, c.match)
		}
	}
}

// TestFindFoldsAsSearch: find matches what search matches, İ (U+0130) as
// i both ways: `find istanbul` missed "İSTANBUL", which search found.
func TestFindFoldsAsSearch(t *testing.T) {
	r := testRook(t, vfs.NewMem())
	id := newSession(t, r)
	appendBodies(t, r, id, "flights to İSTANBUL", "flights to istanbul", "nothing", "Kİ: ki")
	for q, want := range map[string]string{
		"istanbul": "[0 1]", "ISTANBUL": "[0 1]", "İSTANBUL": "[0 1]", "İstanbul": "[0 1]",
		"to i": "[0 1]", "stanbul": "[0 1]", "ki": "[3]",
	} {
		res, err := r.Find(id, FindQuery{Query: q})
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(seqs(res.Hits)); got != want {
			t.Errorf("find %q: %s, want %s", q, got, want)
		}
	}
	// The offset is of the match in the original bytes: İ is two.
	res, _ := r.Find(id, FindQuery{Query: "ki"})
	if len(res.Hits) != 1 || res.Hits[0].Offset != 0 {
		t.Errorf("ki: %+v", res.Hits)
	}
	res, _ = r.Find(id, FindQuery{Query: "ki", From: 3, Offset: 1})
	if len(res.Hits) != 1 || res.Hits[0].Offset != 5 {
		t.Errorf("ki resumed: %+v", res.Hits)
	}
	// What search finds for each, it finds too.
	for _, q := range []string{"istanbul", "İSTANBUL"} {
		hits, err := r.Search(q, SearchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(hits.Hits) != 2 {
			t.Errorf("search %q: %d hits", q, len(hits.Hits))
		}
	}
}

// TestEscapedMatcherReadsEscapesInAnyCase: the matcher of a query past
// ASCII as JSON writes it (newEscapedMatcher) reads each escape as the
// character it writes, folded as the query's characters are: each
// character of the query in any case, escaped or not, its hex digits in
// either case, a pair past U+FFFF; not an escape cut short or not JSON's.
func TestEscapedMatcherReadsEscapesInAnyCase(t *testing.T) {
	for _, c := range []struct {
		query, body string
		at, end     int // -1: no match
	}{
		{"éléphant", `\u00c9l\u00e9phant`, 0, 18},
		{"éléphant", `x: \u00C9L\u00C9PHANT!`, 3, 21},
		{"ÉLÉPHANT", `\u00e9l\u00E9phant`, 0, 18},
		{"éléphant", `Él\u00e9phant`, 0, 14}, // raw and escaped in one
		{"éléphant", "Éléphant", 0, 10},
		{"éléphant", `\u00c9l\u00e9phan`, -1, -1},
		{"éléphant", `\u00c9l\u00e9`, -1, -1},
		{"straße", `Stra\u00dfe`, 0, 11},
		{"ǆ", `\u01c5 \u01C4`, 0, 6},    // the title case, and the capital
		{"é k", `\u00e9 \u212a`, 0, 13}, // the Kelvin sign is a k
		{"smile 😀", `SMILE \ud83d\ude00`, 0, 18},
		{"😀", `\uD83D\uDE00`, 0, 12},
		{"\ufffd x", `\ud83d x`, -1, -1}, // a surrogate alone is no character, not U+FFFD
		{"\ufffd x", `\uFFFD x`, 0, 8},
		{`"déjà" <a\b>`, `\"d\u00e9j\u00e0\" \u003ca\\b\u003E`, 0, 35},
		{"é\n", `\u00e9\n`, 0, 8},
		{"é\n", `\u00e9\u000A`, 0, 12},
		{"é/", `\u00e9\/`, 0, 8},
		{"éx", `\u00e9\x`, -1, -1}, // not an escape
		{"éu", `\u00e9\u00`, -1, -1},
		{"é", `\u00g9`, -1, -1},
		{"é", `\`, -1, -1},
	} {
		m := newEscapedMatcher(c.query)
		at, end, _ := m.index([]byte(c.body), 0, len(c.body), nil)
		if at != c.at || end != c.end {
			t.Errorf("%q in %q: at %d end %d, want %d %d", c.query, c.body, at, end, c.at, c.end)
		}
		if end-at > m.span {
			t.Errorf("%q in %q: a match of %d bytes, past the span %d", c.query, c.body, end-at, m.span)
		}
	}
	// A query past ASCII is matched so, one matcher for every writer's
	// escapes; any other as its escaped forms, text.
	if ms := findEscaped("Éléphant <"); len(ms) != 1 || !ms[0].escaped {
		t.Errorf("findEscaped of a query past ASCII: %d matcher(s)", len(ms))
	}
	var forms []string
	for _, m := range findEscaped(`a "<b>"`) {
		forms = append(forms, m.query)
	}
	if want := []string{`a \"<b>\"`, `a \"\u003cb\u003e\"`}; !slices.Equal(forms, want) {
		t.Errorf("findEscaped of an ASCII query: %q, want %q", forms, want)
	}
}

// FuzzEscapedMatcher: the matcher of a query as JSON writes it never
// panics on any body, never matches past its span, and finds a piece of
// any text written with every character escaped (as Python's json.dumps
// does, but each escape's hex digits, and each character of the query, in
// a case of its own, as bits says).
func FuzzEscapedMatcher(f *testing.F) {
	f.Add("Éléphant and Über-Straße", uint8(0), uint8(8), uint64(0b1011))
	f.Add("smile 😀 ǅ \"ok\" <a\\b>\n", uint8(3), uint8(9), uint64(0xf0f0))
	f.Add("\u212a \u0130 ß", uint8(0), uint8(5), uint64(7))
	f.Fuzz(func(t *testing.T, text string, from, n uint8, bits uint64) {
		text = strings.ToValidUTF8(text, "")
		runes := []rune(text)
		if len(runes) == 0 || len(runes) > 64 {
			return
		}
		lo := int(from) % len(runes)
		hi := min(len(runes), lo+1+int(n)%8)
		bit := func() bool { b := bits&1 == 1; bits = bits>>1 | bits<<63; return b }
		var q []rune
		for _, r := range runes[lo:hi] {
			switch {
			case bit() && bit():
				r = unicode.ToTitle(r)
			case bit():
				r = unicode.ToUpper(r)
			default:
				r = unicode.ToLower(r)
			}
			q = append(q, r)
		}
		query := string(q)
		var body []byte
		for _, r := range runes {
			var units []rune
			if r1, r2 := utf16.EncodeRune(r); r1 != unicode.ReplacementChar {
				units = []rune{r1, r2}
			} else {
				units = []rune{r}
			}
			for _, u := range units {
				format := `\u%04x`
				if bit() {
					format = `\u%04X`
				}
				body = fmt.Appendf(body, format, u)
			}
		}
		m := newEscapedMatcher(query)
		at, end, _ := m.index(body, 0, len(body), nil)
		// (A case mapping outside the character's fold class, as of a
		// few title cases, is no match: find folds, as EqualFold does.)
		if at < 0 && strings.EqualFold(query, string(runes[lo:hi])) {
			t.Fatalf("%q not found in %q (%q)", query, body, text)
		}
		if at >= 0 && end-at > m.span {
			t.Fatalf("%q in %q: a match of %d bytes, past the span %d", query, body, end-at, m.span)
		}
		// Any body: no panic, no match past the span.
		at, end, _ = m.index([]byte(text), 0, len(text), nil)
		if at >= 0 && end-at > m.span {
			t.Fatalf("%q in %q: a match of %d bytes, past the span %d", query, text, end-at, m.span)
		}
	})
}

// TestFindDotIAcrossTheBudgetCut: a match that starts just before a
// budget's cut and whose İ (two bytes) ends one byte past the bytes the
// ASCII search looks at was missed by both calls: the İ was not seen, so
// the bytes were searched as ASCII, and the next call starts at the cut.
func TestFindDotIAcrossTheBudgetCut(t *testing.T) {
	r := testRook(t, vfs.NewMem())
	id := newSession(t, r)
	appendBodies(t, r, id, "xxxxxxxxxxB\u0130yyyy")
	var hits []FindHit
	q := FindQuery{Query: "bi", MaxBytes: 11} // the cut at the İ
	for calls := 0; calls < 10; calls++ {
		res, err := r.Find(id, q)
		if err != nil {
			t.Fatal(err)
		}
		hits = append(hits, res.Hits...)
		if res.Next == nil {
			break
		}
		q.From, q.Offset, q.Through = res.Next.From, res.Next.Offset, &res.Next.Through
	}
	if len(hits) != 1 || hits[0].Offset != 10 {
		t.Fatalf("hits %+v, want one at byte 10", hits)
	}
}

// A body bigger than the byte budget is searched a budget at a time, the
// cursor resuming inside it; a match across the cut is still found.
func TestFindBudgetCutsInsideABody(t *testing.T) {
	r := testRook(t, vfs.NewMem())
	id := newSession(t, r)
	big := []byte(strings.Repeat("ä", 5000)) // 10000 bytes
	copy(big[7000:], "NEEDLE")
	straddle := []byte(strings.Repeat("x", 10000))
	copy(straddle[4094:], "needle") // across the first cut at 4096
	appendBodies(t, r, id, "first", string(big), string(straddle), "needle at the end")

	run := func(q FindQuery) FindResult {
		t.Helper()
		q.Query, q.MaxBytes = "needle", 4097 // odd: the cut must move to a character boundary
		res, err := r.Find(id, q)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	// Call 1: "first" (5 bytes), then 4092 bytes of the big body (4097-5,
	// rounded down to a character boundary).
	res := run(FindQuery{})
	if len(res.Hits) != 0 || res.Next == nil || *res.Next != (FindCursor{From: 1, Offset: 4092, Through: 3}) {
		t.Fatalf("call 1: hits %v next %+v", res.Hits, res.Next)
	}
	if res.Searched != 5+4092 {
		t.Errorf("call 1 searched %d bytes", res.Searched)
	}
	// Call 2: on from byte 4092: the match at 7000 (an empty page would
	// also be fine; here the budget reaches it).
	res = run(FindQuery{From: res.Next.From, Offset: res.Next.Offset, Through: &res.Next.Through})
	if len(res.Hits) != 1 || res.Hits[0].Seq != 1 || res.Hits[0].Offset != 7000 || res.Next == nil {
		t.Fatalf("call 2: hits %+v next %+v", res.Hits, res.Next)
	}
	// Call 3 moved to the next event after the hit: what was left of the
	// budget covers the straddling match only if it is long enough.
	next := res.Next
	var hits []FindHit
	calls := 2
	for next != nil {
		calls++
		res = run(FindQuery{From: next.From, Offset: next.Offset, Through: &next.Through})
		hits = append(hits, res.Hits...)
		next = res.Next
		if calls > 20 {
			t.Fatal("find does not end")
		}
	}
	if got := seqs(hits); fmt.Sprint(got) != "[2 3]" || hits[0].Offset != 4094 || hits[1].Offset != 0 {
		t.Fatalf("rest: %+v", hits)
	}
	// One budget that cuts exactly across the straddling match: starts
	// before the cut are searched, the match may run past it.
	res, err := r.Find(id, FindQuery{Query: "needle", From: 2, MaxBytes: 4096})
	if err != nil || len(res.Hits) != 1 || res.Hits[0].Offset != 4094 {
		t.Fatalf("straddling: %+v %v", res.Hits, err)
	}
	res, _ = r.Find(id, FindQuery{Query: "needle", From: 2, MaxBytes: 4094})
	if len(res.Hits) != 0 || *res.Next != (FindCursor{From: 2, Offset: 4094, Through: 3}) {
		t.Fatalf("cut just before the match: %+v %+v", res.Hits, res.Next)
	}
}

func TestFindEventBudget(t *testing.T) {
	r := testRook(t, vfs.NewMem())
	id := newSession(t, r)
	for i := 0; i < 300; i++ {
		appendBodies(t, r, id, fmt.Sprintf("event %d", i))
	}
	appendBodies(t, r, id, "the match")
	res, err := r.Find(id, FindQuery{Query: "match"})
	if err != nil || len(res.Hits) != 0 || res.Examined != FindMaxEvents || *res.Next != (FindCursor{From: 256, Offset: 0, Through: 300}) {
		t.Fatalf("call 1: %+v %v", res, err)
	}
	res, _ = r.Find(id, FindQuery{Query: "match", From: res.Next.From, Through: &res.Next.Through})
	if len(res.Hits) != 1 || res.Hits[0].Seq != 300 || res.Next != nil || res.Examined != 45 {
		t.Fatalf("call 2: %+v", res)
	}
	// A --through past the end is the end.
	res, _ = r.Find(id, FindQuery{Query: "match", From: 290, Through: u(5000)})
	if *res.Through != 300 || len(res.Hits) != 1 {
		t.Fatalf("through past the end: %+v", res)
	}
}

// The first call fixes Through: events appended afterwards are not
// searched by the calls that continue it.
func TestFindThroughIgnoresLaterEvents(t *testing.T) {
	r := testRook(t, vfs.NewMem())
	id := newSession(t, r)
	appendBodies(t, r, id, "a hit", "b", "c hit", "d", "e")
	res, err := r.Find(id, FindQuery{Query: "HIT", MaxEvents: 2})
	if err != nil || fmt.Sprint(seqs(res.Hits)) != "[0]" || *res.Next != (FindCursor{From: 2, Offset: 0, Through: 4}) {
		t.Fatalf("call 1: %+v %v", res, err)
	}
	appendBodies(t, r, id, "f hit", "g hit")
	var hits []FindHit
	next := res.Next
	for next != nil {
		res, err = r.Find(id, FindQuery{Query: "hit", From: next.From, Offset: next.Offset, Through: &next.Through, MaxEvents: 2})
		if err != nil {
			t.Fatal(err)
		}
		if *res.Through != 4 {
			t.Fatalf("through moved to %d", *res.Through)
		}
		hits = append(hits, res.Hits...)
		next = res.Next
	}
	if fmt.Sprint(seqs(hits)) != "[2]" {
		t.Fatalf("later calls found %v", seqs(hits))
	}
	// A new search sees them.
	res, _ = r.Find(id, FindQuery{Query: "hit"})
	if fmt.Sprint(seqs(res.Hits)) != "[0 2 5 6]" || *res.Through != 6 {
		t.Fatalf("new search: %v through %d", seqs(res.Hits), *res.Through)
	}
}

func TestFindUnreadableBody(t *testing.T) {
	r := testRook(t, vfs.NewMem())
	id := newSession(t, r)
	appendBodies(t, r, id, "hit one")
	var missing [16]byte
	copy(missing[:], "gone")
	if _, err := r.Log.Append(id, eventlog.Event{Kind: eventlog.KindUser, Body: missing}); err != nil {
		t.Fatal(err)
	}
	appendBodies(t, r, id, "hit two")
	res, err := r.Find(id, FindQuery{Query: "hit"})
	if err != nil || fmt.Sprint(seqs(res.Hits)) != "[0 2]" || len(res.Unreadable) != 1 || res.Unreadable[0].Seq != 1 {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestPreviewAndSnippet(t *testing.T) {
	if got := Preview([]byte("\n \n\tfirst\x1b[0m line\r\nsecond"), 80); got != "first\uFFFD[0m line" {
		t.Errorf("preview %q", got)
	}
	if got := Preview([]byte(strings.Repeat("ab", 50)), 10); got != "ababababab…" {
		t.Errorf("clipped preview %q", got)
	}
	body := []byte(strings.Repeat("α", 100) + "MATCH" + strings.Repeat("ω", 200))
	at := bytes.Index(body, []byte("MATCH"))
	s := Snippet(body, at, at+5, SnippetRunes)
	if !strings.HasPrefix(s, "…"+strings.Repeat("α", snippetBefore)+"MATCH") || !strings.HasSuffix(s, "ω…") ||
		utf8.RuneCountInString(s) != SnippetRunes+2 {
		t.Errorf("snippet %q (%d runes)", s, utf8.RuneCountInString(s))
	}
	// A command's colors are left out, not shown as U+FFFD[22m; another
	// escape sequence still shows its ESC replaced.
	body = []byte("\x1b[1mbold\x1b[22m then MATCH \x1b[2;31mdim\x1b[0m \x1b]0;title\x07")
	at = bytes.Index(body, []byte("MATCH"))
	if s := Snippet(body, at, at+5, SnippetRunes); s != "bold then MATCH dim \uFFFD]0;title\uFFFD" {
		t.Errorf("snippet with colors %q", s)
	}
	// A match inside a color sequence (a search for "31m") is shown.
	if at := bytes.Index(body, []byte("31m")); !strings.Contains(Snippet(body, at, at+3, SnippetRunes), "31m") {
		t.Errorf("a match in a color sequence is left out: %q", Snippet(body, at, at+3, SnippetRunes))
	}
	if s := searchSnippet(body, at); s != "bold then MATCH dim  ]0;title" {
		t.Errorf("search snippet with colors %q", s)
	}
	// Nor does a search snippet hold a line or paragraph separator,
	// which would break its one line as the other views' never do.
	if s := searchSnippet([]byte("a\u2028b MATCH\u2029c"), 0); s != "a b MATCH c" {
		t.Errorf("search snippet with separators %q", s)
	}
}

// TestFindSkipsEncodedState: in an imported session, find does not match
// inside an image's base64, a thinking block's signature, redacted
// thinking or Codex's encrypted reasoning, and no snippet shows them: a
// hit on the line around them (a key) shows a marker in their place.
func TestFindSkipsEncodedState(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	png := "iVBORw0KGgoAAAANSUhEUgAA" + strings.Repeat("QUJDRA", 400)
	sig := "EsMCCkYIBxgCKkB" + strings.Repeat("c2lnbmVk", 50)
	red := "EmwKAhgBEgy" + strings.Repeat("cmVkYWN0", 30)
	enc := "gAAAAABpZW5j" + strings.Repeat("ZW5jcnlw", 80)
	claude := []string{
		`{"type":"user","sessionId":"s1","cwd":"/w","message":{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + png + `"}},{"type":"text","text":"what is in the picture"}]},"uuid":"u1","timestamp":"2026-02-10T21:00:00.000Z"}`,
		`{"type":"assistant","sessionId":"s1","cwd":"/w","message":{"id":"m1","role":"assistant","content":[{"type":"thinking","thinking":"a login form","signature":"` + sig + `"}]},"uuid":"u2","timestamp":"2026-02-10T21:00:01.000Z"}`,
		`{"type":"assistant","sessionId":"s1","cwd":"/w","message":{"id":"m1","role":"assistant","content":[{"type":"redacted_thinking","data":"` + red + `"}]},"uuid":"u3","timestamp":"2026-02-10T21:00:02.000Z"}`,
		`{"type":"user","sessionId":"s1","cwd":"/w","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + png + `"}}]}]},"toolUseResult":{"type":"image","file":{"base64":"` + png + `","type":"image/png"}},"uuid":"u4","timestamp":"2026-02-10T21:00:03.000Z"}`,
	}
	writeSource(t, fsys, "/home/u/.claude/projects/-w/s1.jsonl", claude, "")
	cid := *mustImport(t, r, FormatClaudeCode, "/home/u/.claude/projects").Files[0].Session
	codex := []string{
		`{"timestamp":"2026-01-03T09:00:00.000Z","type":"session_meta","payload":{"id":"019b8000-1111-7222-8333-444455556666","timestamp":"2026-01-03T09:00:00.000Z","cwd":"/w","originator":"codex_cli_rs","cli_version":"0.80.0","source":"cli","model_provider":"openai"}}`,
		`{"timestamp":"2026-01-03T09:00:00.020Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,` + png + `"},{"type":"input_text","text":"what is in the picture"}]}}`,
		`{"timestamp":"2026-01-03T09:00:00.030Z","type":"event_msg","payload":{"type":"user_message","message":"what is in the picture","images":["data:image/png;base64,` + png + `"]}}`,
		`{"timestamp":"2026-01-03T09:00:01.000Z","type":"response_item","payload":{"type":"reasoning","summary":[{"type":"summary_text","text":"a login form"}],"content":null,"encrypted_content":"` + enc + `"}}`,
		// An MCP tool's result, JSON in the output string, with an image.
		`{"timestamp":"2026-01-03T09:00:02.000Z","type":"response_item","payload":{"type":"function_call","name":"mcp__shot__take","arguments":"{}","call_id":"c1"}}`,
		`{"timestamp":"2026-01-03T09:00:03.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"{\"content\":[{\"type\":\"image\",\"data\":\"` + png + `\",\"mimeType\":\"image/png\"},{\"type\":\"text\",\"text\":\"data:image/png;base64,` + png + `\"}],\"isError\":false}"}}`,
	}
	writeSource(t, fsys, "/c/sessions/2026/01/03/rollout-2026-01-03T09-00-00-019b8000-1111-7222-8333-444455556666.jsonl", codex, "")
	xid := *mustImport(t, r, FormatCodex, "/c").Files[0].Session
	payloads := []string{"iVBOR", "QUJDRA", "EsMC", "c2lnbmVk", "EmwK", "cmVkYWN0", "gAAAA", "ZW5jcnlw"}
	find := func(id eventlog.ID, q string) []FindHit {
		t.Helper()
		res, err := r.Find(id, FindQuery{Query: q})
		if err != nil {
			t.Fatalf("find %q: %v", q, err)
		}
		for _, h := range res.Hits {
			for _, p := range payloads {
				if strings.Contains(h.Snippet, p) {
					t.Errorf("find %q: #%d's snippet shows encoded state: %q", q, h.Seq, h.Snippet)
				}
			}
		}
		return res.Hits
	}
	for _, id := range []eventlog.ID{cid, xid} {
		// Inside the payloads, or running into one from the text before it:
		// no match.
		for _, q := range append(payloads, `"data":"iVBOR`, `base64,iVBOR`, `"signature":"EsMC`) {
			if hits := find(id, q); len(hits) != 0 {
				t.Errorf("find %q in %s: %+v", q, id, hits)
			}
		}
		// Text after a payload on its line is found: the scan goes on
		// past the payload.
		if hits := find(id, "picture"); len(hits) == 0 || hits[0].Seq > 2 || !strings.Contains(hits[0].Snippet, "what is in the picture") {
			t.Errorf("find picture in %s: %+v", id, hits)
		}
		// "A" is in every base64 payload: the hits are elsewhere.
		find(id, "A")
	}
	// A key beside a payload is a match; its snippet shows the line with
	// a marker for the payload.
	for _, c := range []struct {
		id        eventlog.ID
		q, marker string
	}{
		{cid, `"data"`, `"data":"[image 2.4 KiB]"`},
		{cid, `"signature"`, `"signature":"[signature 415 B]"`},
		{cid, `redacted_thinking","data`, `"data":"[base64 251 B]"`},
		{cid, `"base64":`, `"base64":"[image 2.4 KiB]"`},
		{xid, `image_url`, `"image_url":"[image 2.4 KiB]"`},
		{xid, `"images"`, `"images":["[image 2.4 KiB]"]`},
		{xid, `encrypted_content`, `"encrypted_content":"[encrypted 652 B]"`},
		{xid, `mimeType`, `[image 2.4 KiB]","mimeType`},
		{xid, `isError`, `[image 2.4 KiB]"}],"isError`},
	} {
		hits := find(c.id, c.q)
		if len(hits) == 0 || !strings.Contains(hits[0].Snippet, c.marker) {
			t.Errorf("find %q: %+v, want a snippet with %s", c.q, hits, c.marker)
		}
	}
}

// TestHistoryPreviewLeavesOutColors: a history line previews a colored
// output as show, find and search read it, without its color sequences;
// another escape sequence still shows its ESC as U+FFFD.
func TestHistoryPreviewLeavesOutColors(t *testing.T) {
	r := testRook(t, vfs.NewMem())
	id := newSession(t, r)
	appendBodies(t, r, id, "\x1b[1;31merror\x1b[0m: build failed \x1b]0;x\x07\n")
	p, err := r.History(id, HistoryQuery{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Events[0].Preview; got != "error: build failed \uFFFD]0;x\uFFFD" {
		t.Errorf("preview %q", got)
	}
}

// `session show` (and export-html) cut a body's head inside a color
// sequence longer than 32 bytes (a 24-bit foreground and background in
// one, ESC[38;2;255;255;255;48;2;255;255;255m, 36 bytes, as delta, bat or
// a truecolor theme write it) and printed its first half as text:
// "xxxx\uFFFD[38;2;255;255;255;48;2;255;255", the entry --offset it
// suggested starting in the sequence's middle. CutShown looked for the
// ESC only in the 32 bytes before the cut; it now looks back over the
// digits to the sequence's start, however long it is, as StripSGR strips
// one of any length (sgrOpenAt), and so does headWithin for a streamed
// head.
func TestShowDoesNotCutInsideALongColorSequence(t *testing.T) {
	r := testRook(t, vfs.NewMem())
	m, err := r.NewSession("colors", "/w", nil)
	if err != nil {
		t.Fatal(err)
	}
	seq := "\x1b[38;2;255;255;255;48;2;255;255;255m" // 36 bytes, one SGR sequence
	// The ESC 34 bytes before the default cut (4096): the cut is inside it.
	body := strings.Repeat("x", DefaultBodyBytes-34) + seq + "hello\n"
	if _, err := r.Append(m.ID, Entry{Kind: eventlog.KindToolResult, Body: []byte(body)}); err != nil {
		t.Fatal(err)
	}
	p, err := r.Show(m.ID, ShowQuery{Limit: 1, MaxBody: DefaultBodyBytes})
	if err != nil {
		t.Fatal(err)
	}
	shown := ShownText(StripSGR(p.Events[0].Text))
	if strings.Contains(shown, "38;2") || strings.Contains(shown, "\uFFFD") {
		t.Errorf("show --max-body %d of a body with a 36-byte color sequence at the cut shows %q at its end; want the head cut before the sequence (nothing of it shown)",
			DefaultBodyBytes, shown[len(shown)-min(len(shown), 48):])
	}

	// export-html's head (8192 bytes) alike.
	body2 := strings.Repeat("y", ExportMaxBody-34) + seq + "world\n"
	if _, err := r.Append(m.ID, Entry{Kind: eventlog.KindToolResult, Body: []byte(body2)}); err != nil {
		t.Fatal(err)
	}
	x, err := r.ExportRange(m.ID, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	page := string(ExportHTML(x))
	if strings.Contains(page, "38;2;255") {
		t.Errorf("export-html of a body with a 36-byte color sequence at its %d-byte cut shows the sequence's digits as text", ExportMaxBody)
	}
}

// A page keeps the head of each body, not the body: each Text was a slice
// of the whole body read, and the page held every body too (for the tool
// call ids of imported ones), so a page of 200 events of 8 MB each held
// 1.6 GB (measured before the fix: 40 such bodies, 415 MB resident).
func TestShowKeepsOnlyTheHeads(t *testing.T) {
	r, clk := viewsRook(t)
	m, err := r.NewSession("big", "/w", nil)
	if err != nil {
		t.Fatal(err)
	}
	const n, size, maxBody = 8, 4 << 20, 4096
	for i := range n {
		viewsAppend(t, r, clk, m.ID, Entry{Kind: eventlog.KindToolResult, Body: bytes.Repeat([]byte{'a' + byte(i)}, size)})
	}
	before := heapInUse()
	p, err := r.Show(m.ID, ShowQuery{Limit: 10, MaxBody: maxBody})
	if err != nil {
		t.Fatal(err)
	}
	held := heapInUse() - before
	for _, v := range p.Events {
		if len(v.Text) != maxBody || v.Omitted != size-maxBody {
			t.Fatalf("#%d: head %d bytes, %d omitted", v.Seq, len(v.Text), v.Omitted)
		}
	}
	// The page's heads are 32 KiB; its n bodies would be 32 MiB.
	if held > size {
		t.Errorf("the page of %d heads of %d bytes holds %d bytes of heap: the bodies read", n, maxBody, held)
	}
	runtime.KeepAlive(p)
}

// heapInUse is the heap in use after a collection, in bytes.
func heapInUse() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}

// A body's head, as show and export-html cut it, ends where what shows
// ends: not between a CR and its LF, nor inside a color sequence. Cut
// there, the half left (a CR alone, "ESC [3") showed as U+FFFD, a
// character the body does not hold, at the end of the head.
func TestHeadsEndOnWhatShows(t *testing.T) {
	r, clk := viewsRook(t)
	m, err := r.NewSession("heads", "/w", nil)
	if err != nil {
		t.Fatal(err)
	}
	crlf := strings.Repeat(strings.Repeat("x", 99)+"\r\n", 100)              // a CR at 99, 200, ...
	sgr := strings.Repeat(strings.Repeat("y", 95)+"\x1b[31mred\x1b[0m", 100) // ESC at 95 and 103, ...
	viewsAppend(t, r, clk, m.ID, Entry{Kind: eventlog.KindToolResult, Body: []byte(crlf)}, Entry{Kind: eventlog.KindToolResult, Body: []byte(sgr)})
	check := func(what string, head []byte, omitted int64, body string) {
		t.Helper()
		if shown := ShownText(StripSGR(head)); strings.ContainsRune(shown, '\uFFFD') {
			t.Errorf("%s: the head shows a U+FFFD the body does not hold: ...%q", what, shown[max(len(shown)-20, 0):])
		}
		if !strings.HasPrefix(body, string(head)) || int64(len(body)-len(head)) != omitted {
			t.Errorf("%s: head of %d bytes, %d omitted, of a body of %d", what, len(head), omitted, len(body))
		}
	}
	for _, maxBody := range []int{100, 200, 96, 97, 98, 99, 101, 104, 105, 106} {
		p, err := r.Show(m.ID, ShowQuery{Limit: 2, MaxBody: maxBody})
		if err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("show --max-body %d, CRLF", maxBody), p.Events[0].Text, p.Events[0].Omitted, crlf)
		check(fmt.Sprintf("show --max-body %d, colors", maxBody), p.Events[1].Text, p.Events[1].Omitted, sgr)
	}
	// export-html cuts at ExportMaxBody: the first's CR just before it,
	// the second's color sequence across it.
	crlf2 := strings.Repeat("x", ExportMaxBody-1) + "\r\n" + crlf
	sgr2 := strings.Repeat("y", ExportMaxBody-3) + "\x1b[31mred\x1b[0m" + sgr
	m2, err := r.NewSession("export", "/w", nil)
	if err != nil {
		t.Fatal(err)
	}
	viewsAppend(t, r, clk, m2.ID, Entry{Kind: eventlog.KindToolResult, Body: []byte(crlf2)}, Entry{Kind: eventlog.KindToolResult, Body: []byte(sgr2)})
	x, err := r.ExportRange(m2.ID, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	check("export-html, CRLF", x.Events[0].Body, x.Events[0].Cut, crlf2)
	check("export-html, colors", x.Events[1].Body, x.Events[1].Cut, sgr2)
}

// Every reading command of a native session another rook removes while it
// reads it (`session rm`, or a prune of `store maintain`: readers take no
// lock) says "no such session", as show did: history, find, entry, quote,
// export-html and context failed with the raw "open .../events/ID.log:
// file does not exist", which reads as a store that lost a file (the user
// runs verify, restores a backup) for a session removed as asked. Each
// passed the log's error on as it was; only Show said it so, in its own
// removedMeanwhile. eventlog's openListed, where every read of a listed
// session's log opens it, says it now for all of them.
func TestReadersOfASessionRemovedWhileReadSayNoSuchSession(t *testing.T) {
	readers := []struct {
		name string
		read func(r *Rook, id eventlog.ID) error
	}{
		{"show", func(r *Rook, id eventlog.ID) error { _, err := r.Show(id, ShowQuery{Limit: 10}); return err }},
		{"history", func(r *Rook, id eventlog.ID) error { _, err := r.History(id, HistoryQuery{Limit: 10}); return err }},
		{"find", func(r *Rook, id eventlog.ID) error { _, err := r.Find(id, FindQuery{Query: "hello"}); return err }},
		{"entry", func(r *Rook, id eventlog.ID) error { _, err := r.ReadBody(id, 0, 0, EntryPageBytes); return err }},
		{"quote", func(r *Rook, id eventlog.ID) error { _, err := r.Quote(id, 0, 0); return err }},
		{"export-html", func(r *Rook, id eventlog.ID) error { _, err := r.ExportRange(id, 0, nil); return err }},
		{"context", func(r *Rook, id eventlog.ID) error { _, err := r.Context(id, DefaultContextWindow); return err }},
	}
	for _, c := range readers {
		t.Run(c.name, func(t *testing.T) {
			fsys := vfs.NewMem()
			w := testRook(t, fsys)
			id := newSession(t, w)
			if _, err := w.Append(id, Entry{Kind: eventlog.KindUser, Body: []byte("hello")}); err != nil {
				t.Fatal(err)
			}
			rd, clk := readerAfter(t, fsys, w)
			logPath := filepath.Join(testHome, "events", id.String()+".log")
			done := removeBeforeRead(fsys, clk, logPath, func(other *Rook) error {
				_, err := other.RemoveSession(id)
				return err
			})
			err := c.read(rd, id)
			removed, rmErr := done()
			if rmErr != nil {
				t.Fatalf("the other rook's session rm: %v", rmErr)
			}
			if !removed {
				t.Fatalf("%s never opened the removed session's log", c.name)
			}
			if !errors.Is(err, eventlog.ErrNoSession) || strings.Contains(errText(err), "does not exist") {
				t.Errorf("%s of a session removed while it read it: %v: want no such session, as show says", c.name, err)
			}
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
