package agent

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"html"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rookhq/rook/eventlog"
)

func TestExportHTMLEscapesAndCSP(t *testing.T) {
	r, clk := viewsRook(t)
	m, err := r.NewSession(`<img src=x onerror="alert(1)">`, "/w/<ws>", nil)
	if err != nil {
		t.Fatal(err)
	}
	id := m.ID
	viewsAppend(t, r, clk, id,
		Entry{Kind: eventlog.KindUser, Body: []byte("<script>alert(1)</script> & 'q' \"d\"")},
		Entry{Kind: eventlog.KindToolCall, Label: "<b>bash</b>", Body: []byte(`{"cmd":"ls </pre>"}`), TokensIn: 3, TokensOut: 4},
		Entry{Kind: eventlog.KindToolResult, Body: []byte{0, 1, 2, 0xff}},
		Entry{Kind: eventlog.KindAssistant, Body: nil},
	)
	x, err := r.ExportRange(id, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if x.From != 0 || x.Through != 3 || len(x.Events) != 4 || x.TruncatedEvents || x.CutBodies() != 0 {
		t.Fatalf("range %d-%d, %d events, truncated %v", x.From, x.Through, len(x.Events), x.TruncatedEvents)
	}
	out := string(ExportHTML(x))
	for _, bad := range []string{"<script", "<img", "<b>bash", "</pre>\"", "<ws>", "http://", "https://", " onerror=\""} {
		if strings.Contains(out, bad) {
			t.Errorf("output holds %q", bad)
		}
	}
	for _, want := range []string{
		"&lt;script&gt;alert(1)&lt;/script&gt; &amp; &#39;q&#39; &#34;d&#34;",
		"&lt;b&gt;bash&lt;/b&gt;",
		"ls &lt;/pre&gt;",
		"(binary, 4 bytes: <code>rook store cat ",
		"/w/&lt;ws&gt;",
		id.String(),
		"#0 to #3",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// The CSP allows exactly the inline style, by its hash.
	csp := regexp.MustCompile(`<meta http-equiv="Content-Security-Policy" content="([^"]*)">`).FindStringSubmatch(out)
	if csp == nil || !strings.HasPrefix(csp[1], "default-src 'none'; ") {
		t.Fatalf("no CSP: %v", csp)
	}
	style := regexp.MustCompile(`(?s)<style>(.*?)</style>`).FindAllStringSubmatch(out, -1)
	if len(style) != 1 {
		t.Fatalf("%d style elements", len(style))
	}
	sum := sha256.Sum256([]byte(style[0][1]))
	if !strings.Contains(csp[1], "style-src 'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'") {
		t.Fatalf("CSP %q does not allow the style by its hash", csp[1])
	}
	if strings.Count(out, "<section") != 4 || strings.Count(out, "<pre>") != 2 {
		t.Fatalf("sections %d, pre %d", strings.Count(out, "<section"), strings.Count(out, "<pre>"))
	}
}

func TestExportRangeCaps(t *testing.T) {
	r, clk := viewsRook(t)
	id := viewsSession(t, r, "long")
	// A body just over the cap whose cut falls inside a 3-byte rune.
	long := strings.Repeat("a", ExportMaxBody-1) + "€" + strings.Repeat("b", 100)
	for i := 0; i < 600; i++ {
		body := []byte("event")
		if i == 5 {
			body = []byte(long)
		}
		if _, err := r.Append(id, Entry{Kind: eventlog.KindUser, Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	viewsAppend(t, r, clk, id)

	x, err := r.ExportRange(id, 0, nil)
	if err != nil || x.Through != 511 || len(x.Events) != 512 || x.TruncatedEvents {
		t.Fatalf("default range: %d-%d %d events truncated %v, %v", x.From, x.Through, len(x.Events), x.TruncatedEvents, err)
	}
	ev := x.Events[5]
	if len(ev.Body) != ExportMaxBody-1 || ev.Cut != int64(len(long)-(ExportMaxBody-1)) || !utf8.Valid(ev.Body) || x.CutBodies() != 1 {
		t.Fatalf("cut body: %d bytes kept, %d cut", len(ev.Body), ev.Cut)
	}
	out := ExportHTML(x)
	if !bytes.Contains(out, []byte("rook session entry "+id.String()+" 5")) || !bytes.Contains(out, []byte("… 103 more bytes not shown")) {
		t.Fatal("the cut body does not say how to read it all")
	}

	through := uint64(599)
	x, err = r.ExportRange(id, 10, &through)
	if err != nil || x.From != 10 || x.Through != 521 || x.Asked != 599 || !x.TruncatedEvents || len(x.Events) != 512 {
		t.Fatalf("wide range: %d-%d asked %d, %d events, truncated %v, %v", x.From, x.Through, x.Asked, len(x.Events), x.TruncatedEvents, err)
	}
	if !bytes.Contains(ExportHTML(x), []byte("at most 512")) {
		t.Fatal("the file does not say it was cut")
	}

	through = 10_000
	x, err = r.ExportRange(id, 550, &through)
	if err != nil || x.Through != 599 || len(x.Events) != 50 || x.TruncatedEvents {
		t.Fatalf("tail: %d-%d, %d events, %v", x.From, x.Through, len(x.Events), err)
	}
	if _, err := r.ExportRange(id, 600, nil); err == nil {
		t.Fatal("--from past the end is an error")
	}
	through = 3
	if _, err := r.ExportRange(id, 4, &through); err == nil {
		t.Fatal("through before from is an error")
	}
	empty := viewsSession(t, r, "empty")
	if _, err := r.ExportRange(empty, 0, nil); !errors.Is(err, ErrEmptySession) {
		t.Fatalf("empty session: %v", err)
	}
}

// An export's heads are cut as show's (CutShown): never inside a character.
func TestExportCutUTF8(t *testing.T) {
	for _, s := range []string{"abc", "ab€", "a€€", "𝄞𝄞", "ééé"} {
		for n := 0; n <= len(s); n++ {
			got := []byte(s)[:CutShown([]byte(s), n)]
			if len(got) > n || !utf8.Valid(got) || !strings.HasPrefix(s, string(got)) || len(got) < n-3 {
				t.Fatalf("cut %q to %d: %q", s, n, got)
			}
		}
	}
}

// TestExportHTMLIsolatesBidiControls: a right-to-left override in a
// title or a label does not reorder what the page says after it (the
// event's time and size, "rook session ID" in the title).
func TestExportHTMLIsolatesBidiControls(t *testing.T) {
	r, clk := viewsRook(t)
	m, err := r.NewSession("\u202eeltit", "/w", nil)
	if err != nil {
		t.Fatal(err)
	}
	viewsAppend(t, r, clk, m.ID, Entry{Kind: eventlog.KindToolCall, Label: "\u202elebal", Body: []byte("x")})
	x, err := r.ExportRange(m.ID, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := string(ExportHTML(x))
	for _, want := range []string{
		"<title>\u2068\u202eeltit\u2069 — rook session " + m.ID.String() + "</title>",
		" · \u2068\u202elebal\u2069 · <time>",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// bidiOpenAtEnd runs the explicit-level rules of the Unicode
// Bidirectional Algorithm (UAX #9, X1-X8: embeddings, overrides and
// isolates, their pops by PDF and PDI) over s, from a paragraph's start,
// and says how many of the embeddings, overrides and isolates s opened
// are still in force at its end: 0 when whatever s opened is closed, so
// the text after it on the line is laid out as if s were not there.
//
// X6a: a PDI with no isolate open does nothing. X7: a PDF pops only an
// embedding or override opened after the last isolate still open.
func bidiOpenAtEnd(s string) int {
	type entry struct{ isolate bool }
	var stack []entry
	isolates := 0
	for _, r := range s {
		switch r {
		case '\u202A', '\u202B', '\u202D', '\u202E': // LRE RLE LRO RLO
			stack = append(stack, entry{false})
		case '\u2066', '\u2067', '\u2068': // LRI RLI FSI
			stack = append(stack, entry{true})
			isolates++
		case '\u2069': // PDI
			if isolates == 0 {
				continue
			}
			for len(stack) > 0 {
				top := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				if top.isolate {
					break
				}
			}
			isolates--
		case '\u202C': // PDF
			if len(stack) > 0 && !stack[len(stack)-1].isolate {
				stack = stack[:len(stack)-1]
			}
		}
	}
	return len(stack)
}

// metaLineBefore is the text (tags out, entities decoded) of the page's
// line holding marker, up to marker: what the browser lays out before it
// in the same paragraph.
func metaLineBefore(t *testing.T, page, marker string) string {
	t.Helper()
	i := strings.Index(page, marker)
	if i < 0 {
		t.Fatalf("the page lacks %q", marker)
	}
	start := strings.LastIndexByte(page[:i], '\n') + 1
	line := page[start:i]
	var text strings.Builder
	for len(line) > 0 {
		if line[0] == '<' {
			if j := strings.IndexByte(line, '>'); j >= 0 {
				line = line[j+1:]
				continue
			}
		}
		j := strings.IndexByte(line, '<')
		if j < 0 {
			j = len(line)
		}
		text.WriteString(html.UnescapeString(line[:j]))
		line = line[j:]
	}
	return text.String()
}

// TestExportHTMLIsolateOutlivesWhatTheStringOpens: README (the
// export-html line of its command list) promises that export-html writes
// a transcript's string holding a bidi control (a title, a label, an id,
// a path) "as an isolate: it reorders nothing of rook's after it".
//
// The user exports a session one of whose tool names (an imported tool
// call's label, the transcript's to say) or whose title is
// "x\u2069\u202Eevil": a POP DIRECTIONAL ISOLATE, then a RIGHT-TO-LEFT
// OVERRIDE. Written FSI + the string + PDI as it was, the string's own
// PDI closed rook's FSI, the RLO after it was then open outside any
// isolate, and rook's closing PDI, matching no isolate, did nothing
// (UAX #9 X6a). The override stayed in force to the end of the line: the
// event's time, tokens and size ("· <time>2026-… UTC</time> · 61 bytes"),
// and in the <title> " — rook session ID", were shown reversed, the
// "Trojan Source" spoof the isolate is there to stop.
//
// Whatever the string holds, nothing it opens outlives it: exportIsolate
// balances its isolates (bidiBalanced), a stray PDI shown as U+FFFD as
// show shows it, an isolate left open closed at the string's end.
func TestExportHTMLIsolateOutlivesWhatTheStringOpens(t *testing.T) {
	// Each string leaves something open past rook's closing PDI:
	for _, evil := range []string{
		// its own PDI closes rook's FSI, its RLO is then outside it
		"x\u2069\u202Eevil",
		// its RLI takes rook's PDI, rook's FSI stays open to the end of
		// the line, right-to-left by its first strong letter (alef): the
		// time and size are laid out inside it, right to left. Import
		// makes such a label of a longer tool name: it keeps a label's
		// first 200 bytes, an FSI or RLI there without its PDI.
		"\u05d0\u2067",
	} {
		r, clk := viewsRook(t)
		m, err := r.NewSession("title "+evil, "/w", nil)
		if err != nil {
			t.Fatal(err)
		}
		viewsAppend(t, r, clk, m.ID, Entry{Kind: eventlog.KindToolCall, Label: "tool " + evil, Body: []byte("x")})
		x, err := r.ExportRange(m.ID, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		page := string(ExportHTML(x))

		// The event's meta line: what comes before its <time> must leave
		// nothing open.
		if before := metaLineBefore(t, page, "<time>"); bidiOpenAtEnd(before) != 0 {
			t.Errorf("label %+q leaves %d bidi override(s) or isolate(s) open before the event's time: %+q", evil, bidiOpenAtEnd(before), before)
		}
		// The <title>: what comes before " — rook session ID".
		if before := metaLineBefore(t, page, " — rook session "); bidiOpenAtEnd(before) != 0 {
			t.Errorf("title %+q leaves %d bidi override(s) or isolate(s) open before \" — rook session ID\": %+q", evil, bidiOpenAtEnd(before), before)
		}
	}
}

// TestExportHTMLIsolatesRightToLeftLabels: the user labels a note
// in Hebrew or Arabic (`session append --label הערה`; an imported tool
// or agent named so), with no bidi control in it, and exports the
// session. The meta line is "#0 note · הערה · <time>2026-12-07
// 13:33:23.328 UTC</time> · 3 bytes"; written bare (as it was when only
// a string with a bidi control was isolated), by the bidi algorithm the
// numbers after a right-to-left letter join its run (UAX #9 W7, N1: the
// " · " between them, and the numbers, resolve right to left), so a
// browser lays the line out as "#0 note · 13:33:23.328 2026-12-07 · הערה
// UTC · 3 bytes": the time before the date, both before the label, "UTC"
// cut off from them (after an Arabic label, W2 makes the date's numbers
// Arabic numbers: "07-12-2026").
//
// A string of the transcript's that can take the direction (one with a
// right-to-left letter) is written as an isolate (FSI ... PDI), as one
// with a bidi control is, so the time after it reads as written.
func TestExportHTMLIsolatesRightToLeftLabels(t *testing.T) {
	for _, label := range []string{"\u05d4\u05e2\u05e8\u05d4", "\u0645\u0644\u0627\u062d\u0638\u0629"} {
		r, clk := viewsRook(t)
		m, err := r.NewSession("t", "/w", nil)
		if err != nil {
			t.Fatal(err)
		}
		viewsAppend(t, r, clk, m.ID, Entry{Kind: eventlog.KindNote, Label: label, Body: []byte("x")})
		x, err := r.ExportRange(m.ID, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		page := string(ExportHTML(x))
		i := strings.Index(page, "<time>")
		if i < 0 {
			t.Fatal("no <time>")
		}
		line := page[strings.LastIndexByte(page[:i], '\n')+1 : i]
		if !strings.Contains(line, "\u2068"+label+"\u2069") && !strings.Contains(line, "<bdi>"+label+"</bdi>") {
			t.Errorf("label %+q is written bare before the event's time, which its direction then reorders: %+q", label, line)
		}
	}
}

// TestBidiOpenAtEndReadsUAX9: the UAX #9 helper the bidi tests of the
// page use reads the rules as written.
func TestBidiOpenAtEndReadsUAX9(t *testing.T) {
	for s, want := range map[string]int{
		"plain":                    0,
		"\u2068a\u202eb\u2069":     0, // the isolate's end closes the override in it
		"\u2068\u2069\u202e\u2069": 1, // the first PDI closed the isolate: the RLO stays
		"\u202e":                   1,
		"\u202e\u202c":             0,
		"\u2067\u202c":             1, // a PDF does not close an isolate
	} {
		if got := bidiOpenAtEnd(s); got != want {
			t.Errorf("bidiOpenAtEnd(%+q) = %d, want %d", s, got, want)
		}
	}
}

// TestExportHTMLIsolateHoldsABalancedLabel (beside
// TestExportHTMLIsolateOutlivesWhatTheStringOpens): a label "\u2067\u2069\u202E" (RLI, PDI, RLO) is written FSI RLI PDI RLO
// PDI: the string's PDI closes its own RLI, rook's PDI closes the FSI and
// with it the RLO (an isolate's end pops what was opened in it), so the
// time after it is laid out as written; the helper reads it so.
func TestExportHTMLIsolateHoldsABalancedLabel(t *testing.T) {
	r, clk := viewsRook(t)
	m, err := r.NewSession("t", "/w", nil)
	if err != nil {
		t.Fatal(err)
	}
	viewsAppend(t, r, clk, m.ID, Entry{Kind: eventlog.KindToolCall, Label: "\u2067\u2069\u202Eevil", Body: []byte("x")})
	x, err := r.ExportRange(m.ID, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	page := string(ExportHTML(x))
	if before := metaLineBefore(t, page, "<time>"); bidiOpenAtEnd(before) != 0 {
		t.Errorf("the label leaves %d bidi override(s) open before the event's time: %+q", bidiOpenAtEnd(before), before)
	}
}

// A title's, a label's or a workspace's control characters are shown as
// U+FFFD, as show prints them and as the page's bodies are: an ESC, a BEL
// or a C1 control went into the page as it was (HTML forbids them, and
// the escape sequence read as "[31m" with an invisible ESC before it).
// Newlines and tabs stay, bidi controls are isolated, not replaced.
func TestExportHTMLShowsControlsAsReplacement(t *testing.T) {
	r, clk := viewsRook(t)
	m, err := r.NewSession("t\x1b[31mred\x07", "/w/a\x1bb", nil)
	if err != nil {
		t.Fatal(err)
	}
	viewsAppend(t, r, clk, m.ID, Entry{Kind: eventlog.KindToolCall, Label: "lab\u0085el\r\u2028\u202e", Body: []byte("x")})
	x, err := r.ExportRange(m.ID, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := string(ExportHTML(x))
	for _, want := range []string{
		"<title>t\uFFFD[31mred\uFFFD — rook session ",
		"<h1>t\uFFFD[31mred\uFFFD</h1>",
		"<dd>/w/a\uFFFDb</dd>",
		" · \u2068lab\uFFFDel\uFFFD\uFFFD\u202e\u2069 · <time>",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if i := strings.IndexFunc(out, func(r rune) bool { return r == 0x1b || r == 0x07 || r == 0x85 || r == '\r' || r == 0x2028 }); i >= 0 {
		t.Errorf("a control character at byte %d: %q", i, out[max(i-40, 0):min(i+40, len(out))])
	}
}

// An export keeps the head of each body, not the body: the head held a
// slice of the whole body read, so an export of 512 events of 8 MB each
// held 4 GB (measured before the fix: 40 such bodies, 416 MB resident).
func TestExportRangeKeepsOnlyTheHeads(t *testing.T) {
	r, clk := viewsRook(t)
	m, err := r.NewSession("big", "/w", nil)
	if err != nil {
		t.Fatal(err)
	}
	const size = 1 << 20
	var entries []Entry
	for i := range 4 {
		body := bytes.Repeat([]byte{'a' + byte(i)}, size)
		entries = append(entries, Entry{Kind: eventlog.KindToolResult, Body: body})
	}
	viewsAppend(t, r, clk, m.ID, entries...)
	x, err := r.ExportRange(m.ID, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range x.Events {
		if len(ev.Body) != ExportMaxBody || ev.Cut != size-ExportMaxBody {
			t.Fatalf("#%d: head %d bytes, %d cut", ev.Seq, len(ev.Body), ev.Cut)
		}
		if cap(ev.Body) > ExportMaxBody {
			t.Errorf("#%d: the head holds %d bytes of memory, the whole body read", ev.Seq, cap(ev.Body))
		}
	}
}
