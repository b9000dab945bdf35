package agent

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"html"
	"strings"
	"unicode"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
)

// Export bounds: one file holds at most ExportMaxEvents events and at most
// ExportMaxBody bytes of each body.
const (
	ExportMaxEvents = 512
	ExportMaxBody   = 8192
)

// ExportedEvent is one event of an export, with the head of its body.
type ExportedEvent struct {
	eventlog.Event
	Body   []byte // at most ExportMaxBody bytes, cut on a UTF-8 boundary; nil when Binary
	Size   int64  // the whole body's size
	Cut    int64  // bytes of the body left out
	Binary bool   // the body is not text: only its size is shown
	Err    string // the body could not be read (it is missing or corrupt)
	// Rendered: the body is an imported event's source lines, and Body
	// the head of their reading view (RenderImported); Cut counts the
	// view's bytes left out.
	Rendered bool
	// Calls are, for an imported tool result, the seqs of the tool calls
	// it answers, as session show finds them (joinToolCalls).
	Calls []uint64
	// Children are, for an imported subagent's call and its result, the
	// child session its transcript was imported as (linkSubagents), as
	// session show names them.
	Children []eventlog.ID
}

// Export is a range of a session ready to render.
type Export struct {
	Session eventlog.Summary
	From    uint64 // first seq exported
	Through uint64 // last seq exported (inclusive)
	// Asked is the last seq the caller asked for; when the range was wider
	// than ExportMaxEvents, Through is cut short of it and TruncatedEvents
	// is set.
	Asked           uint64
	TruncatedEvents bool
	Events          []ExportedEvent
	// ParentRemoved: the session is a fork (or a child) whose parent was
	// removed; the header says so beside its id.
	ParentRemoved bool
	// Unlinked: of an imported subagent or fork with no parent, the parent
	// its transcript names (not imported, as a rule), as show says it.
	Unlinked *UnlinkedParent
	// LogDamage: as ShowPage's. The export holds events that read before
	// the damage; Session.Events counts those when the session's totals
	// do not (and its tokens are not known).
	LogDamage
}

// CutBodies counts the events whose body was cut.
func (x *Export) CutBodies() int {
	n := 0
	for _, ev := range x.Events {
		if ev.Cut > 0 {
			n++
		}
	}
	return n
}

// UnreadableBodies counts the events whose body could not be read.
func (x *Export) UnreadableBodies() int {
	n := 0
	for _, ev := range x.Events {
		if ev.Err != "" {
			n++
		}
	}
	return n
}

// ErrEmptySession: a session with no events has nothing to export.
var ErrEmptySession = errors.New("the session has no events")

// ExportRange reads the events [from, through] of a session, at most
// ExportMaxEvents of them, with at most ExportMaxBody bytes of each body.
// through nil means from+ExportMaxEvents-1 or the last event, whichever is
// smaller; a through past the last event is the last event.
func (r *Rook) ExportRange(id eventlog.ID, from uint64, through *uint64) (Export, error) {
	sum, damage, err := r.pageSummary(id)
	if err != nil {
		return Export{}, err
	}
	x := Export{Session: sum, From: from, LogDamage: damage}
	if damage.Damage != nil && from >= damage.DamagedAt {
		return x, damage.Damage
	}
	if sum.Parent != nil {
		_, err := r.Log.ReadMeta(*sum.Parent)
		x.ParentRemoved = errors.Is(err, eventlog.ErrNoSession)
	}
	x.Unlinked = r.unlinkedParent(sum.Meta)
	if sum.Events == 0 {
		return x, fmt.Errorf("session %s: %w", id, ErrEmptySession)
	}
	last := sum.Events - 1
	if from > last {
		return x, fmt.Errorf("session %s has %d event(s) (#0 to #%d): --from %d is past its end", id, sum.Events, last, from)
	}
	if through != nil {
		if *through < from {
			return x, fmt.Errorf("--through %d is before --from %d", *through, from)
		}
		x.Asked = min(*through, last)
	} else {
		x.Asked = min(from+ExportMaxEvents-1, last)
	}
	x.Through = x.Asked
	if x.Through-from >= ExportMaxEvents {
		x.Through = from + ExportMaxEvents - 1
		x.TruncatedEvents = true
	}
	evs, err := r.Log.Read(id, from, int(x.Through-from+1))
	// Damage in the range: the events before it, then the error.
	met, err := x.metRead(err, from, len(evs))
	if err != nil {
		return x, err
	}
	if met && len(evs) == 0 {
		return x, x.Damage
	}
	if len(evs) > 0 {
		x.Through = evs[len(evs)-1].Seq
	}
	type head struct {
		body     []byte
		size     int64
		binary   bool
		err      string
		rendered bool
		cut      int64
		refs     toolCallRefs // an imported call's or result's ids, to join them
	}
	// A body's head, by the body and whether its event counted tokens
	// (renderEvent: the view of a Codex token_count says which).
	type seenKey struct {
		body      cas.Key
		uncounted bool
	}
	seen := map[seenKey]head{}
	page := make([]EventView, 0, len(evs))
	refs := make([]toolCallRefs, 0, len(evs))
	for _, ev := range evs {
		key := seenKey{ev.Body, uncounted(ev)}
		h, ok := seen[key]
		if !ok {
			// A large imported line comes shortened to the head shown
			// (readBodyHead): its size and what is cut still count it whole.
			bh, err := r.readBodyHead(ev.Body, ExportMaxBody)
			b, imported := bh.body, bh.imported
			var nf *cas.NotFoundError
			var ce *cas.CorruptError
			switch {
			case err == nil:
				h.size = bh.size
				// An imported event's view is text whatever its bytes
				// (RenderImported shows a byte that is not UTF-8 as
				// U+FFFD), as show renders it.
				if bh.binary && !imported {
					h.binary = true
					break
				}
				cut := h.size
				if imported {
					h.refs = toolCallRefsOf(ev.Kind, imported, b)
					var dropped int64
					b, dropped = renderHead(ev, bh, ExportMaxBody)
					h.rendered, cut = true, int64(len(b))+dropped
				}
				// A copy of the head: a slice of b would keep the whole
				// body in memory for as long as the export (512 of them).
				h.body = bytes.Clone(b[:CutShown(b, ExportMaxBody)])
				h.cut = cut - int64(len(h.body))
			case errors.As(err, &nf), errors.As(err, &ce):
				h.err = err.Error()
			default:
				return x, err
			}
			seen[key] = h
		}
		xe := ExportedEvent{Event: ev, Body: h.body, Size: h.size, Binary: h.binary, Err: h.err, Rendered: h.rendered, Cut: h.cut}
		x.Events = append(x.Events, xe)
		page = append(page, EventView{Event: ev, BodyView: BodyView{imported: h.rendered}})
		refs = append(refs, h.refs)
	}
	r.joinToolCallRefs(id, page, refs)
	r.linkSubagents(id, page, refs)
	for i := range page {
		x.Events[i].Calls, x.Events[i].Children = page[i].Calls, page[i].Children
	}
	return x, nil
}

// exportStyle is the export's only style sheet. The Content-Security-Policy
// allows exactly these bytes, by hash: change them and the hash follows.
const exportStyle = `
body{font:14px/1.45 system-ui,sans-serif;margin:0;padding:1.5em;color:#1d1d1f;background:#fafafa}
header{border-bottom:1px solid #ccc;margin-bottom:1em}
h1{font-size:1.4em;margin:0 0 .4em}
dl{display:grid;grid-template-columns:max-content auto;gap:.15em 1em;margin:0 0 1em}
dt{color:#666}dd{margin:0;font-family:ui-monospace,monospace}
.warn{background:#fff4ce;border:1px solid #e0c060;padding:.5em .8em}
section{background:#fff;border:1px solid #ddd;border-left:4px solid #999;margin:0 0 .8em;padding:.4em .8em}
section.user{border-left-color:#2a6fdb}section.assistant{border-left-color:#2e9d52}
section.tool-call,section.tool-result{border-left-color:#b07a00}section.error{border-left-color:#c62828}
section.compaction,section.checkpoint{border-left-color:#7b3fb5}
.meta{color:#555;font-size:.9em}.meta b{color:#111}
pre{white-space:pre-wrap;word-break:break-word;font:13px/1.4 ui-monospace,monospace;margin:.4em 0}
.note{color:#666;font-style:italic}
footer{color:#888;font-size:.85em;margin-top:2em}
`

// ExportStyleHash is the CSP source that allows exportStyle.
func ExportStyleHash() string {
	sum := sha256.Sum256([]byte(exportStyle))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

// ExportCSP is the Content-Security-Policy of an export: nothing loads,
// nothing runs; only the export's own style sheet applies.
func ExportCSP() string {
	return "default-src 'none'; style-src " + ExportStyleHash() + "; base-uri 'none'; form-action 'none'"
}

// exportEscape escapes text for HTML; bytes that are not UTF-8 become
// U+FFFD, and so does every control character but a newline or a tab, as
// show prints a title or a label (ShownText): an ESC, a BEL or a C1
// control is no text, and HTML forbids them. Bidi controls are left to
// exportIsolate.
func exportEscape(s string) string {
	return html.EscapeString(strings.Map(func(r rune) rune {
		if r != '\n' && r != '\t' && Unshowable(r) && !unicode.Is(unicode.Bidi_Control, r) {
			return '\uFFFD'
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD")))
}

// exportIsolate is s escaped (exportEscape), as a bidi isolate (FSI ...
// PDI) when it can take the direction of the text around it: when it
// holds a bidi control (a right-to-left override in a title or a label)
// or a right-to-left letter or digit (a label in Hebrew or Arabic, which
// pulls the numbers after it into its run). Either would otherwise
// reorder the text rook writes after it on the line: an event's time and
// size, "rook session ID". The isolate's end closes whatever s opened
// only if it is the isolate's own end: s's isolates are balanced first
// (bidiBalanced). Text with neither is written as it is.
func exportIsolate(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return unicode.Is(unicode.Bidi_Control, r) || rightToLeft(r) }) {
		return exportEscape(s)
	}
	return "\u2068" + exportEscape(bidiBalanced(s)) + "\u2069"
}

// rightToLeft: r is in a block of the right-to-left scripts (Hebrew,
// Arabic, Syriac, Thaana, NKo, Samaritan, Mandaic and their presentation
// forms; the historic ones of U+10800-U+10FFF and U+1E800-U+1EFFF), where
// the letters are right to left (bidi class R or AL) and the digits
// Arabic numbers (AN): a string holding one may turn the numbers after
// it right to left.
func rightToLeft(r rune) bool {
	switch {
	case r >= 0x0590 && r <= 0x08FF, r >= 0xFB1D && r <= 0xFDFF, r >= 0xFE70 && r <= 0xFEFF,
		r >= 0x10800 && r <= 0x10FFF, r >= 0x1E800 && r <= 0x1EFFF:
		return true
	}
	return false
}

// bidiBalanced is s with its isolates balanced, read as the Unicode
// Bidirectional Algorithm reads them (UAX #9, X5a-X6a), so that s can be
// written inside an isolate of rook's that then ends where rook ends it:
// a PDI that closes no isolate of s's own would close rook's, and what s
// opens after it (an RLO) would outlive it: it is shown as U+FFFD, as
// show shows every bidi control. An isolate s leaves open (an import cuts
// a label at 200 bytes, an RLI's PDI past the cut) would take rook's PDI
// as its own: it is closed at s's end. An embedding or an override needs
// neither: the end of the isolate it is in closes it, and a PDF closes
// nothing outside that isolate.
func bidiBalanced(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r >= '\u2066' && r <= '\u2069' }) {
		return s
	}
	var b strings.Builder
	open := 0 // isolates s opened and has not closed
	for _, r := range s {
		switch r {
		case '\u2066', '\u2067', '\u2068': // LRI RLI FSI
			open++
		case '\u2069': // PDI
			if open == 0 {
				r = '\uFFFD'
			} else {
				open--
			}
		}
		b.WriteRune(r)
	}
	b.WriteString(strings.Repeat("\u2069", open))
	return b.String()
}

// ExportHTML renders an export as one self-contained HTML file: every
// byte of content escaped, no scripts, no external resources, a
// Content-Security-Policy that allows nothing but its inline style.
func ExportHTML(x Export) []byte {
	var b bytes.Buffer
	s := x.Session
	id := s.ID.String()
	title := s.Title
	if title == "" {
		title = "(untitled)"
	}
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	// The policy is rook's own text (quotes, letters, base64): written as is.
	w("<meta http-equiv=\"Content-Security-Policy\" content=\"%s\">\n", ExportCSP())
	w("<meta name=\"referrer\" content=\"no-referrer\">\n")
	w("<title>%s — rook session %s</title>\n", exportIsolate(title), exportEscape(id))
	w("<style>%s</style>\n</head>\n<body>\n<header>\n", exportStyle)
	w("<h1>%s</h1>\n<dl>\n", exportIsolate(title))
	w("<dt>session</dt><dd>%s</dd>\n", exportEscape(id))
	// A fork's first events are copies of its parent's: without this the
	// page read as a session of its own from #0. A subagent's (or another
	// child's) page says whose, as show does.
	if pl := parentLink(s.Meta); pl != nil {
		parent := exportEscape(pl.ID.String())
		if x.ParentRemoved {
			parent += " (removed)"
		}
		switch {
		case pl.ForkAt != nil && *pl.ForkAt == 0:
			w("<dt>fork of</dt><dd>session %s at #0: it copied none of its events</dd>\n", parent)
		case pl.ForkAt != nil:
			w("<dt>fork of</dt><dd>session %s at #%d: its events before #%d are copies of that session's</dd>\n", parent, *pl.ForkAt, *pl.ForkAt)
		case pl.Fork:
			w("<dt>fork of</dt><dd>session %s: its transcript begins with a copy of that session's lines</dd>\n", parent)
		case pl.Subagent:
			w("<dt>subagent of</dt><dd>session %s</dd>\n", parent)
		default:
			w("<dt>child of</dt><dd>session %s</dd>\n", parent)
		}
	}
	if u := x.Unlinked; u != nil {
		whose := ", whose transcript is not imported"
		if u.Imported {
			whose = ", not linked to it"
		}
		w("<dt>%s of</dt><dd>%s session %s%s</dd>\n", u.Role(), exportIsolate(FormatName(u.Format)), exportIsolate(u.SourceID), whose)
	}
	if s.Workspace != "" {
		w("<dt>workspace</dt><dd>%s</dd>\n", exportIsolate(s.Workspace))
	}
	// An imported session was made when it was imported, not when its
	// conversation took place (its events' own times say that).
	if src := s.Source; src != nil {
		w("<dt>source</dt><dd>%s transcript %s</dd>\n", exportIsolate(src.Format), exportIsolate(src.Path))
		w("<dt>imported</dt><dd>%s</dd>\n", exportEscape(s.Created.UTC().Format("2006-01-02 15:04:05 UTC")))
	} else {
		w("<dt>created</dt><dd>%s</dd>\n", exportEscape(s.Created.UTC().Format("2006-01-02 15:04:05 UTC")))
	}
	if x.Damage != nil {
		w("<dt>events</dt><dd>#%d to #%d (%d of the %d before its log's damage at #%d)</dd>\n", x.From, x.Through, len(x.Events), x.DamagedAt, x.DamagedAt)
		w("<dt>tokens</dt><dd>not counted: the session's log is damaged</dd>\n")
	} else {
		w("<dt>events</dt><dd>#%d to #%d (%d of the session's %d)</dd>\n", x.From, x.Through, len(x.Events), s.Events)
		w("<dt>tokens</dt><dd>%d in, %d out (whole session)</dd>\n", s.TokensIn, s.TokensOut)
	}
	w("</dl>\n")
	if x.Damage != nil {
		w("<p class=\"warn\">The session's log is damaged at event #%d: this file holds events before it. <code>rook session fork %s --at %d</code> keeps them in a new session; <code>rook store verify</code> lists the damage.</p>\n",
			x.DamagedAt, s.ID, x.DamagedAt)
	}
	if x.TruncatedEvents {
		w("<p class=\"warn\">The range asked for, #%d to #%d, is %d events; one export holds at most %d, so this file stops at #%d. Export from #%d for the rest.</p>\n",
			x.From, x.Asked, x.Asked-x.From+1, ExportMaxEvents, x.Through, x.Through+1)
	}
	if n := x.CutBodies(); n > 0 {
		w("<p class=\"warn\">%d bod%s longer than %d bytes %s cut; each says how to read it all.</p>\n",
			n, exportPlural(n, "y", "ies"), ExportMaxBody, exportPlural(n, "is", "are"))
	}
	w("</header>\n<main>\n")
	for _, ev := range x.Events {
		kind := ev.Kind.String()
		w("<section class=\"%s\" id=\"e%d\">\n<div class=\"meta\"><b>#%d</b> %s", exportEscape(kind), ev.Seq, ev.Seq, exportEscape(kind))
		if ev.Label != "" {
			w(" · %s", exportIsolate(ev.Label))
		}
		for i, c := range ev.Calls {
			// The call a tool result answers, a link to it when it is in
			// this file.
			sep := " "
			if i == 0 {
				sep = " ← "
			}
			if c >= x.From && c <= x.Through {
				w("%s<a href=\"#e%d\">#%d</a>", sep, c, c)
			} else {
				w("%s#%d", sep, c)
			}
		}
		for _, c := range ev.Children {
			w(" → session %s", exportEscape(c.String()))
		}
		w(" · <time>%s</time>", exportEscape(ev.Time.UTC().Format("2006-01-02 15:04:05.000 UTC")))
		if ev.TokensIn > 0 || ev.TokensOut > 0 {
			w(" · tokens %d in, %d out", ev.TokensIn, ev.TokensOut)
		}
		w(" · %d bytes</div>\n", ev.Size)
		switch {
		case ev.Err != "":
			w("<p class=\"note\">(body unreadable: %s)</p>\n", exportIsolate(ev.Err))
		case ev.Binary:
			w("<p class=\"note\">(binary, %d bytes: <code>rook store cat %s</code> writes them)</p>\n", ev.Size, hex.EncodeToString(ev.Event.Body[:]))
		case ev.Size == 0:
			w("<p class=\"note\">(empty)</p>\n")
		default:
			// As show prints it: no colors, and no control character
			// or bidi control, which would reorder the page's lines.
			// The newline after <pre> is the page's: an HTML parser
			// drops it, and would drop a body's own first one.
			w("<pre>\n%s</pre>\n", exportEscape(ShownText(StripSGR(ev.Body))))
			if ev.Cut > 0 && ev.Rendered {
				w("<p class=\"note\">… %d more bytes not shown: <code>rook session show %s --from %d --limit 1 --max-body %d</code> reads it all.</p>\n",
					ev.Cut, exportEscape(id), ev.Seq, int64(len(ev.Body))+ev.Cut)
			} else if ev.Cut > 0 {
				// entry reads a page at a time (EntryPageBytes), each
				// naming the next --offset; store cat writes the body
				// whole, as the binary note says.
				w("<p class=\"note\">… %d more bytes not shown: <code>rook store cat %s</code> writes the whole body; <code>rook session entry %s %d</code> reads it page by page.</p>\n",
					ev.Cut, hex.EncodeToString(ev.Event.Body[:]), exportEscape(id), ev.Seq)
			}
		}
		for _, c := range ev.Children {
			// The page links nothing outside itself: how to read it.
			w("<p class=\"note\">→ the subagent's session: <code>rook session export-html %s --output FILE</code> exports it.</p>\n", exportEscape(c.String()))
		}
		w("</section>\n")
	}
	w("</main>\n<footer>exported by rook</footer>\n</body>\n</html>\n")
	return b.Bytes()
}

func exportPlural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
