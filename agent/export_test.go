package agent

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"errors"
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
