package agent

// Transcript views: the pages, searches, body ranges and quotes the CLI
// renders. Every view costs what it returns (a page of events, a bounded
// scan, one body), never a whole session: events come from Log.Read and
// Log.ReadBefore, bodies from Body, which re-hashes what it returns.
//
// A body is text when it is valid UTF-8 without NUL bytes; anything else is
// binary. Text is only ever cut on a UTF-8 boundary, so every offset a view
// reports (a cut, a cursor, a match) is a byte offset in the original body
// at the start of a character.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
)

// Limits and defaults of the transcript views.
const (
	DefaultPageEntries = 64      // history page
	DefaultShowEntries = 200     // show page
	MaxPageEntries     = 10000   // the most events one show or history page may ask for
	DefaultBodyBytes   = 4096    // show: bodies longer than this are cut
	EntryPageBytes     = 4096    // entry: one page of a body
	QuoteBytes         = 16384   // quote: the most source bytes one quote holds
	FindMaxEvents      = 256     // find: events examined per call
	FindMaxBytes       = 4 << 20 // find: body bytes searched per call
	MaxQueryBytes      = 256     // find: the longest query
	PreviewRunes       = 80      // history: the first line of a body, clipped
	SnippetRunes       = 160     // find: the text around a match
	snippetBefore      = 60      // of which before the match
)

// IsBinary reports whether a body is binary: not valid UTF-8, or holding a
// NUL byte. Such bodies are never shown as text.
func IsBinary(b []byte) bool {
	return bytes.IndexByte(b, 0) >= 0 || !utf8.Valid(b)
}

// CutUTF8 returns the largest n <= max (and <= len(b)) such that b[:n]
// ends on a UTF-8 boundary: it never splits a character. Bytes that are not
// UTF-8 are cut where they stand. n may be 0 when max is shorter than the
// first character.
func CutUTF8(b []byte, max int) int {
	if max >= len(b) {
		return len(b)
	}
	if max <= 0 {
		return 0
	}
	for n := max; n >= 0 && n > max-utf8.UTFMax; n-- {
		if n == 0 || utf8.RuneStart(b[n]) {
			return n
		}
	}
	return max // not UTF-8 here: no character to keep whole
}

// CutShown is CutUTF8 for a head shown as text (show, export-html): the
// head does not end between a CR and its LF either, or inside a color
// sequence (ESC [ digits m); their halves show as U+FFFD (ShownText), where
// the whole shows as a line's end or, its colors left out (StripSGR), as
// nothing.
func CutShown(b []byte, limit int) int {
	n := CutUTF8(b, limit)
	if n >= len(b) {
		return n
	}
	// A color sequence the cut falls in is cut before, however long it
	// is (StripSGR leaves out any: ESC [ 38;2;255;255;255;48;2;0;0;0 m
	// is 30 bytes, and more parameters are legal).
	if i := sgrOpenAt(b, n); i >= 0 && sgrEnd(b, i) > n {
		n = i
	}
	if n > 0 && b[n-1] == '\r' && b[n] == '\n' {
		n--
	}
	return n
}

// runeStartAtOrBefore moves off back to the start of the character it falls
// in (at most 3 bytes back).
func runeStartAtOrBefore(b []byte, off int) int {
	if off <= 0 || off >= len(b) {
		return off
	}
	for n := off; n >= 0 && n > off-utf8.UTFMax; n-- {
		if n == 0 || utf8.RuneStart(b[n]) {
			return n
		}
	}
	return off
}

// BodyView is an event's body as a view shows it: its sizes, and its first
// bytes, cut.
type BodyView struct {
	Size   int64 // logical bytes of the body object
	Stored int64 // bytes it takes in the store (its share of a packed block)
	Binary bool  // not valid UTF-8, or holds NUL: never print Text raw (never when Rendered: the view is text)
	// Text is the shown part of the body, body[0:len(Text)]: cut on a
	// UTF-8 boundary for text, and not inside a CRLF or a color sequence
	// (CutShown), on any byte for binary bodies. When
	// Rendered, it is the head of the body's reading view instead.
	Text []byte
	// Omitted is how many bytes follow Text; the rest reads with
	// `session entry --offset len(Text)` (when Rendered: of the view).
	Omitted int64
	// Rendered: the body is an imported event's source lines, and Text
	// their reading view (RenderImported), not the bytes stored.
	Rendered bool
	// Err is why the body could not be read (corrupt, missing); the event
	// is still shown.
	Err error
	// imported: the body is a line of an imported transcript.
	imported bool
	// partial: the body viewBody returned is only the body's first bytes
	// (readBodyHead streamed a big one).
	partial bool
}

// Elided reports whether the body was cut.
func (v BodyView) Elided() bool { return v.Omitted > 0 }

// EventView is one event with its body.
type EventView struct {
	eventlog.Event
	BodyView
	// Calls are, for an imported tool result, the seqs of the tool calls
	// it answers (joined by their tool_use_id or call_id), where Show
	// found them: in the page, or in the events shortly before it.
	Calls []uint64
	// Children are the child sessions a subagent's transcript was
	// imported as, for an imported tool result that reports the subagent
	// (Claude Code's Task, Codex's spawn_agent), and for its call when
	// the result is in the page too (linkSubagents).
	Children []eventlog.ID
}

// viewBody reads an event's body (verified) and its sizes, keeping at most
// max bytes of it. The head it returns holds the body, for a large
// imported line the line shortened for its head (readBodyHead), which
// Show renders (renderHead).
func (r *Rook) viewBody(ev eventlog.Event, max int) (BodyView, bodyHead) {
	var v BodyView
	if info, err := r.Store.StatEntry(ev.Body); err == nil {
		v.Size, v.Stored, v.imported = info.Size, info.Stored, info.Kind == cas.KindSource
	}
	h, err := r.readBodyHead(ev.Body, max)
	if err != nil {
		v.Err = err
		return v, bodyHead{}
	}
	body := h.body
	v.Size, v.Binary, v.partial = h.size, h.binary, h.partial
	n := min(max, len(body))
	if !v.Binary {
		n = CutShown(body, max)
	}
	// A copy: a slice of body would keep the whole body in memory for
	// as long as the view (a page of them).
	v.Text = bytes.Clone(body[:n])
	v.Omitted = h.size - int64(n)
	return v, h
}

// ShowPage is a page of events with their bodies.
type ShowPage struct {
	Session eventlog.ID
	Events  []EventView
	Total   uint64  // events in the session when the page was read
	Next    *uint64 // the seq after the page, when the session goes on
	// Parent is the session's parent, when it has one.
	Parent *ParentLink
	// Unlinked is, of an imported session with no parent link, the parent
	// its transcript names: a subagent or fork imported without it.
	Unlinked *UnlinkedParent
	// LogDamage: the session's log is damaged in or past the page.
	LogDamage
}

// LogDamage is where a listing of a session (a page of show or history,
// an export) met its damaged log. Damage, an error wrapping
// eventlog.ErrBadRecord, is the log damaged at event DamagedAt: the
// listing holds events that read before it, and the caller says it after
// them. Damage nil: the listing met none.
type LogDamage struct {
	Damage    error
	DamagedAt uint64
}

// pageLimit is a page's limit from seq `from` on: no further than the
// events before the damage when the listing stops there.
func (d LogDamage) pageLimit(from uint64, limit int) int {
	if d.Damage == nil {
		return limit
	}
	if from >= d.DamagedAt {
		return 0
	}
	return int(min(uint64(limit), d.DamagedAt-from))
}

// metRead takes the error of a read of the events from seq `from` on,
// which gave n events: damage (eventlog.ErrBadRecord) is recorded, at
// the event the error names, else at the one after those read, and
// reported met; any other error is returned.
func (d *LogDamage) metRead(err error, from uint64, n int) (met bool, _ error) {
	if err == nil {
		return false, nil
	}
	if !errors.Is(err, eventlog.ErrBadRecord) {
		return false, err
	}
	at := from + uint64(n)
	if seq, ok := eventlog.DamagedAt(err); ok {
		at = seq
	}
	d.Damage, d.DamagedAt = err, at
	return true, nil
}

// UnlinkedParent is the parent an imported session's transcript names
// (eventlog.Source.Parent) where the session holds no link to one: a
// subagent's or a fork's file imported while its parent's was not.
type UnlinkedParent struct {
	SourceID string // the parent's session id in its agent
	Format   string
	Subagent bool // tagged subagent (isSubagent)
	Fork     bool // tagged fork
	// Imported: a session of that source id is in the store all the same
	// (left unlinked: say, one of a loop of forks).
	Imported bool
}

// Role is what the session is to that parent: "subagent", "fork" or
// "child", as show and export-html name it.
func (u *UnlinkedParent) Role() string {
	switch {
	case u.Subagent:
		return "subagent"
	case u.Fork:
		return "fork"
	}
	return "child"
}

// UnlinkedParentOf is the parent m's transcript names that m holds no
// link to, nil when there is none (or m is linked to it); Imported is not
// known from m alone: false.
func UnlinkedParentOf(m eventlog.Meta) *UnlinkedParent { return unlinkedParent(m) }

// SourceIDOf is the id an imported session is known by in its agent (a
// Claude Code transcript's file name without .jsonl, a Codex thread's id),
// as a child's metadata names its parent's; "" for a native session.
func SourceIDOf(m eventlog.Meta) string { return childSourceID(m) }

// unlinkedParent is the package's unlinkedParent(m) with Imported said:
// when m names a parent it holds no link to, every session's metadata is
// read, once, and no log: a session of that source id whose log does not
// read is imported all the same (session ls, which reads metadata only,
// says so too). A metadata file that does not read is passed over: not
// this caller's to tell.
func (r *Rook) unlinkedParent(m eventlog.Meta) *UnlinkedParent {
	u := unlinkedParent(m)
	if u == nil {
		return nil
	}
	r.Log.SessionsWhere(func(o eventlog.Meta) bool {
		if o.Source != nil && o.Source.Format == u.Format && o.ID != m.ID &&
			(o.Source.ID == u.SourceID || childSourceID(o) == u.SourceID) {
			u.Imported = true
		}
		return false // its metadata says it: its log is not read
	})
	return u
}

// unlinkedParent is the parent m's transcript names that m holds no link
// to, nil when there is none (or m is linked to it).
func unlinkedParent(m eventlog.Meta) *UnlinkedParent {
	if m.Parent != nil || m.Source == nil || m.Source.Parent == "" || m.Source.Parent == m.Source.ID {
		return nil
	}
	return &UnlinkedParent{SourceID: m.Source.Parent, Format: m.Source.Format,
		Subagent: isSubagent(m), Fork: slices.Contains(m.Tags, forkTag)}
}

// ParentLink is a session's link to its parent: the session that spawned
// it (an imported subagent's), or that it was forked from.
type ParentLink struct {
	ID       eventlog.ID
	Subagent bool    // an imported subagent's session (isSubagent: not a fork made in rook of one)
	Fork     bool    // a fork: at ForkAt, or an imported fork (no ForkAt)
	ForkAt   *uint64 // the fork holds the parent's events before it
	Removed  bool    // the parent is not there any more (session rm, prune)
}

// parentLink is m's link to its parent, nil if it has none.
func parentLink(m eventlog.Meta) *ParentLink {
	if m.Parent == nil || *m.Parent == m.ID {
		return nil
	}
	return &ParentLink{ID: *m.Parent, Subagent: isSubagent(m), Fork: m.ForkAt != nil || ImportedFork(m), ForkAt: m.ForkAt}
}

// ShowQuery picks a page of Show: up to Limit events from seq From on,
// each with at most MaxBody bytes of its body. An imported event's body
// is rendered as text (RenderImported) unless Raw is set.
type ShowQuery struct {
	From    uint64
	Limit   int
	MaxBody int
	Raw     bool
}

// Show returns a page of events with their bodies. A body that cannot be
// read is an error on its event, not on the page.
func (r *Rook) Show(id eventlog.ID, q ShowQuery) (ShowPage, error) {
	p := ShowPage{Session: id}
	if q.Limit <= 0 || q.Limit > MaxPageEntries {
		return p, fmt.Errorf("a page holds 1 to %d events, not %d", MaxPageEntries, q.Limit)
	}
	s, damage, err := r.pageSummary(id)
	if err != nil {
		return p, err
	}
	p.Total, p.Parent, p.LogDamage = s.Events, parentLink(s.Meta), damage
	if p.Parent != nil {
		// rm and prune keep a session's forks and children: their
		// parent may be gone, and showing it would fail.
		_, err := r.Log.ReadMeta(p.Parent.ID)
		p.Parent.Removed = errors.Is(err, eventlog.ErrNoSession)
	}
	p.Unlinked = r.unlinkedParent(s.Meta)
	evs, err := r.Log.Read(id, q.From, p.pageLimit(q.From, q.Limit))
	// Damage in the page: the events before it, then the error.
	inPage, err := p.metRead(err, q.From, len(evs))
	if err != nil {
		return p, err
	}
	maxBody := max(q.MaxBody, 0)
	// What each event says of tool calls, read off its body here: the
	// page keeps the heads of the bodies, not the bodies.
	refs := make([]toolCallRefs, 0, len(evs))
	for _, ev := range evs {
		v, h := r.viewBody(ev, maxBody)
		body := h.body
		if v.imported && !q.Raw && v.Err == nil {
			// A line with bytes that are not UTF-8 in a string (a prompt
			// pasted from another encoding) is binary as stored, but its
			// view is text (RenderImported shows each bad byte as
			// U+FFFD): the text is read, not "(binary, N bytes)".
			text, dropped := renderHead(ev, h, maxBody)
			n := CutShown(text, maxBody)
			v.Text, v.Omitted, v.Rendered, v.Binary = bytes.Clone(text[:n]), int64(len(text)-n)+dropped, true, false
		}
		p.Events = append(p.Events, EventView{Event: ev, BodyView: v})
		refs = append(refs, toolCallRefsOf(ev.Kind, v.imported, body))
	}
	r.joinToolCallRefs(id, p.Events, refs)
	r.linkSubagents(id, p.Events, refs)
	if n := len(evs); n > 0 && evs[n-1].Seq+1 < p.Total && !inPage {
		next := evs[n-1].Seq + 1
		p.Next = &next
	}
	return p, nil
}

// pageSummary is the session's Summary for a listing of its pages. Of a
// log damaged past its first event (its totals do not count), it is one
// of the events before the damage, with the damage to say after the page:
// those read, and are what a user of a damaged session wants to see.
func (r *Rook) pageSummary(id eventlog.ID) (s eventlog.Summary, damage LogDamage, err error) {
	s, err = r.Log.Summary(id)
	var d *eventlog.DamagedTotalsError
	if err == nil || !errors.As(err, &d) || d.At == 0 {
		return s, LogDamage{}, err
	}
	s.Events = d.At
	return s, LogDamage{DamagedAt: d.At, Damage: fmt.Errorf("session %s: %w: event %d does not read back (the log goes on to event %d): its log is damaged there; `rook session fork %s --at %d` keeps the events before it in a new session, which reads whole, and `rook store verify` lists the damage", id, eventlog.ErrBadRecord, d.At, d.Last, id, d.At)}, nil
}

// HistoryLine is one event of a history page: no body, a preview.
type HistoryLine struct {
	eventlog.Event
	Size   int64
	Stored int64
	Binary bool
	// Preview is the body's first non-blank line, clipped to PreviewRunes,
	// control characters replaced; "" for binary and unreadable bodies.
	// An imported body is never Binary here: it previews its view.
	Preview string
	Err     error // the body could not be read
}

// HistoryQuery picks a page: Before (the page ending before seq N), From
// (the page starting at seq N), or neither (the newest page). At most one
// of Before and From.
type HistoryQuery struct {
	Before *uint64
	From   *uint64
	Limit  int
}

// HistoryPage is a bounded page of a session's history, oldest first, with
// the cursors to the pages around it.
type HistoryPage struct {
	Session eventlog.ID
	Events  []HistoryLine
	Total   uint64 // events in the session when the page was read
	// PrevBefore: events before the page exist; --before PrevBefore
	// pages to them.
	PrevBefore *uint64
	// NextFrom: events after the page exist; --from NextFrom pages to them.
	NextFrom *uint64
	// LogDamage: as ShowPage's.
	LogDamage
}

// History returns one page of a session's history. It reads the page's
// events and bodies only: its cost does not grow with the session.
func (r *Rook) History(id eventlog.ID, q HistoryQuery) (HistoryPage, error) {
	p := HistoryPage{Session: id}
	if q.Before != nil && q.From != nil {
		return p, errors.New("give --before or --from, not both")
	}
	if q.Limit <= 0 || q.Limit > MaxPageEntries {
		return p, fmt.Errorf("a page holds 1 to %d events, not %d", MaxPageEntries, q.Limit)
	}
	s, damage, err := r.pageSummary(id)
	if err != nil {
		return p, err
	}
	p.Total, p.LogDamage = s.Events, damage
	var evs []eventlog.Event
	// where the page starts and ends when it is empty
	var start, end uint64
	read := uint64(0) // the seq the read starts at
	switch {
	case q.From != nil:
		start = min(*q.From, p.Total)
		end, read = start, start
		evs, err = r.Log.Read(id, start, p.pageLimit(start, q.Limit))
	default:
		before := p.Total
		if q.Before != nil {
			before = min(*q.Before, p.Total)
		}
		start, end = before, before
		read = before - min(before, uint64(q.Limit))
		evs, err = r.Log.ReadBefore(id, before, q.Limit)
	}
	// Damage in the page: the events before it, then the error.
	inPage, err := p.metRead(err, read, len(evs))
	if err != nil {
		return p, err
	}
	if n := len(evs); n > 0 {
		start, end = evs[0].Seq, evs[n-1].Seq+1
	} else if inPage && p.DamagedAt < start {
		// Nothing read, the damage before the page: the page before
		// is the one before the damage, not this one again.
		start, end = p.DamagedAt, p.DamagedAt
	}
	for _, ev := range evs {
		v, h := r.viewBody(ev, 0)
		body := h.body
		line := HistoryLine{Event: ev, Size: v.Size, Stored: v.Stored, Binary: v.Binary && !v.imported, Err: v.Err}
		if v.Err == nil && !line.Binary {
			// An imported body previews its view, text even when its
			// lines hold bytes that are not UTF-8 (as Show renders it).
			preview, ok := "", false
			if v.partial && ev.Kind != eventlog.KindCheckpoint {
				// A big body streamed: its head says its first line,
				// unless that runs past it.
				preview, ok = previewOfHead(body, PreviewRunes)
			}
			if !ok && v.partial && ev.Kind != eventlog.KindCheckpoint {
				// Its first line starts or goes on past the head:
				// streamed again, as far as it takes.
				preview, err = r.previewOf(ev.Body, PreviewRunes)
				if err != nil {
					line.Err = err
					p.Events = append(p.Events, line)
					continue
				}
				ok = true
			}
			if !ok && v.partial {
				// A capture's manifest is decoded whole.
				if body, err = r.Body(ev); err != nil {
					line.Err = err
					p.Events = append(p.Events, line)
					continue
				}
			}
			if ok {
				line.Preview = preview
				p.Events = append(p.Events, line)
				continue
			}
			if v.imported {
				body = previewOfImported(ev, body)
			} else if ev.Kind == eventlog.KindCheckpoint {
				body = previewOfCapture(body)
			} else {
				// A command's colors are left out, as show, find, search
				// and an imported event's preview leave them out: not
				// "\uFFFD[31merror\uFFFD[0m" for a red "error".
				body = StripSGR(body)
			}
			line.Preview = Preview(body, PreviewRunes)
		}
		p.Events = append(p.Events, line)
	}
	if start > 0 {
		p.PrevBefore = &start
	}
	if end < p.Total && !inPage {
		p.NextFrom = &end
	}
	return p, nil
}

// Preview is the first non-blank line of text, clipped to n characters
// (an ellipsis marks the cut), control characters replaced.
func Preview(text []byte, n int) string {
	text = bytes.TrimLeft(text, " \t\r\n")
	if i := bytes.IndexByte(text, '\n'); i >= 0 {
		text = text[:i]
	}
	var b strings.Builder
	count := 0
	for len(text) > 0 {
		if count == n {
			return strings.TrimRight(b.String(), " ") + "…"
		}
		r, w := utf8.DecodeRune(text)
		b.WriteRune(cleanRune(r))
		text = text[w:]
		count++
	}
	return strings.TrimRight(b.String(), " ")
}

// ShownText is text made safe to show, on a terminal or in a page (show,
// quote, export-html): newlines and tabs stay, CRLF becomes LF, every
// other control character (escape sequences included) and every bidi
// control (Unshowable) becomes U+FFFD, as does a byte that is not UTF-8.
func ShownText(b []byte) string {
	var s strings.Builder
	s.Grow(len(b))
	for i := 0; i < len(b); {
		r, w := utf8.DecodeRune(b[i:])
		switch {
		case r == '\r' && i+1 < len(b) && b[i+1] == '\n':
		case r == '\n' || r == '\t':
			s.WriteRune(r)
		case Unshowable(r):
			s.WriteRune('\uFFFD')
		default:
			s.WriteRune(r)
		}
		i += w
	}
	return s.String()
}

// Unshowable: a rune that would act on the terminal or the page rather
// than show. Besides control characters and the Unicode line and
// paragraph separators, the bidi controls (U+061C, U+200E-U+200F,
// U+202A-U+202E, U+2066-U+2069): a right-to-left override in a body or a
// file name reorders what follows it on the line, so the text shown is
// not the text stored (the "Trojan Source" trick).
func Unshowable(r rune) bool {
	return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Bidi_Control, r)
}

// cleanRune keeps a rune fit for one line of a terminal.
func cleanRune(r rune) rune {
	switch {
	case r == '\t' || r == '\n' || r == '\r':
		return ' '
	case unicode.IsControl(r) || r == '\u2028' || r == '\u2029':
		return '\uFFFD'
	}
	return r
}

// FindCursor is where a find resumes: at byte Offset of event From's body,
// searching through event Through. The first call fixes Through, so a
// session still being written cannot prolong the scan.
type FindCursor struct {
	From    uint64 `json:"from"`
	Offset  int64  `json:"offset"`
	Through uint64 `json:"through"`
}

// FindQuery is one call of a find.
type FindQuery struct {
	Query   string
	From    uint64
	Offset  int64
	Through *uint64 // nil: the session's last seq now
	// Budgets; 0 takes FindMaxEvents and FindMaxBytes.
	MaxEvents int
	MaxBytes  int64
}

// FindHit is the first match in one event at or after where the scan
// entered it.
type FindHit struct {
	Seq     uint64
	Kind    eventlog.Kind
	Label   string
	Offset  int64  // byte offset of the match in the body
	Snippet string // one line of text around the match, encoded state as a marker
	// Decoded: the snippet is the text of the JSON string the match is in
	// (an imported event's source line), decoded, after its key; Offset
	// still counts in the body as stored.
	Decoded bool
	// Binary: the body is binary (IsBinary), as show and history say it:
	// no snippet, its bytes are not text. Body is its id.
	Binary bool
	Body   cas.Key
}

// FindSkip is an event whose body could not be read.
type FindSkip struct {
	Seq uint64
	Err error
}

// FindResult is one call's hits and where to go on. An empty Hits with a
// Next means the budget ran out before a match: more history remains.
type FindResult struct {
	Hits       []FindHit
	Unreadable []FindSkip
	// Next continues the search; nil when it reached Through.
	Next *FindCursor
	// Through is the last seq the search covers; nil when the session had
	// no events.
	Through *uint64
	// Examined and Searched say what this call cost: events whose body it
	// read, and body bytes it searched.
	Examined int
	Searched int64
}

// ValidateQuery checks a find query: 1 to MaxQueryBytes bytes.
func ValidateQuery(q string) error {
	if len(q) == 0 || len(q) > MaxQueryBytes {
		return fmt.Errorf("the query must be 1 to %d bytes, not %d", MaxQueryBytes, len(q))
	}
	return nil
}

// PastEndError: a seq to start at past a session's last event.
type PastEndError struct {
	Session eventlog.ID
	Seq     uint64 // asked for
	Events  uint64 // the session's
}

func (e *PastEndError) Error() string {
	return fmt.Sprintf("%d is past the end of session %s: %s", e.Seq, e.Session, e.Has())
}

// Has says how many events the session has, and which seqs to give.
func (e *PastEndError) Has() string {
	if e.Events == 0 {
		return "it has no events yet"
	}
	return fmt.Sprintf("it has %d event(s), #0 to #%d", e.Events, e.Events-1)
}

// Find searches a session's bodies for a literal, case-insensitively
// (Unicode simple folding, as strings.EqualFold, and lower-casing, as
// search: foldMatcher), in an imported event's
// source lines also as a JSON string writes it, one hit per event, within
// a budget of events examined and body bytes searched. A body larger than
// what is left of the byte budget is searched in part, and the cursor
// resumes inside it. (A big body is streamed whole, to verify it and say
// whether it is binary, but only the part searched is kept (findPart);
// an imported line over streamLinesOver is searched as it streams
// (findStreamed), when that gives exactly what the whole line gives; any
// other is read whole: the byte budget bounds the search.) In an
// imported event, a match inside encoded state (encodedValue: an image's
// base64, a signature, encrypted reasoning) is no match, and a snippet of
// its line as stored shows such a value as a marker (encodedMarker). A
// From past the session's last event is a *PastEndError.
func (r *Rook) Find(id eventlog.ID, q FindQuery) (FindResult, error) {
	var res FindResult
	if err := ValidateQuery(q.Query); err != nil {
		return res, err
	}
	if q.Offset < 0 {
		return res, fmt.Errorf("offset %d is negative", q.Offset)
	}
	maxEvents, budget := q.MaxEvents, q.MaxBytes
	if maxEvents <= 0 {
		maxEvents = FindMaxEvents
	}
	if budget <= 0 {
		budget = FindMaxBytes
	}
	s, err := r.Log.Summary(id)
	if err != nil {
		return res, err
	}
	if q.From > 0 && q.From >= s.Events {
		// Nothing to search: not "no more matches", as if it had been.
		return res, &PastEndError{Session: id, Seq: q.From, Events: s.Events}
	}
	if s.Events == 0 {
		return res, nil
	}
	through := s.Events - 1
	if q.Through != nil {
		through = min(through, *q.Through)
	}
	res.Through = &through
	m := newFoldMatcher(q.Query)
	// An imported event's body is its source lines, where text is a JSON
	// string: a quote, backslash or newline of the query is written there
	// escaped, and is found as such too.
	escaped := findEscaped(q.Query)
	seq, off := q.From, q.Offset
	var scratch []byte
scan:
	for seq <= through && res.Examined < maxEvents && budget > 0 {
		n := uint64(maxEvents - res.Examined)
		n = min(n, through-seq+1)
		evs, err := r.Log.Read(id, seq, int(n))
		if err != nil {
			return res, err
		}
		if len(evs) == 0 || evs[0].Seq != seq {
			// The session ends before Through (it was cut): nothing more.
			seq = through + 1
			break
		}
		for _, ev := range evs {
			if budget <= 0 {
				break scan
			}
			res.Examined++
			// body is the whole body, or of a big one (findPart) the
			// part from base on that the search and its snippet read;
			// offsets in it count from base.
			var body []byte
			var imported, binary, partial bool
			var base int64
			total := int64(-1)
			switch o, oerr := r.Store.OpenObject(ev.Body); {
			case oerr == nil && o.Kind() != cas.KindSource && o.Ranged() && !readWhole:
				body, base, binary, err = findPart(o, off, budget)
				total, partial = o.Size(), base+int64(len(body)) < o.Size()
			case oerr == nil && o.Kind() != cas.KindSource:
				body, err = o.ReadAll()
			default:
				var streamed *streamedLine
				body, imported, streamed, err = r.readBodyOrStream(ev.Body, math.MaxInt64)
				if streamed != nil && off > streamed.total {
					return res, &OffsetError{Seq: ev.Seq, Offset: off, Total: streamed.total}
				}
				if streamed != nil {
					// A big imported line: searched streamed
					// (findStreamed) when it can be exactly.
					if fs, ok := r.findStreamed(streamed, off, budget, m, escaped); ok {
						if fs.at >= 0 {
							res.Searched += fs.end - fs.start
							budget -= fs.end - fs.start
							res.Hits = append(res.Hits, FindHit{Seq: ev.Seq, Kind: ev.Kind, Label: ev.Label, Offset: fs.at,
								Snippet: fs.snippet, Decoded: fs.decoded})
							seq, off = ev.Seq+1, 0
							continue
						}
						res.Searched += fs.stop - fs.start
						budget -= fs.stop - fs.start
						if fs.cut {
							seq, off = ev.Seq, fs.stop
							break scan
						}
						seq, off = ev.Seq+1, 0
						continue
					}
					body, imported, err = r.readBody(ev.Body)
				}
			}
			if err != nil {
				res.Unreadable = append(res.Unreadable, FindSkip{Seq: ev.Seq, Err: err})
				seq, off = ev.Seq+1, 0
				continue
			}
			if total < 0 {
				total, binary = int64(len(body)), IsBinary(body)
			}
			if off > total {
				// Only the From event's can be (off is 0 past it):
				// refused as entry and quote refuse it, not taken as
				// the body's end and the next event searched.
				return res, &OffsetError{Seq: ev.Seq, Offset: off, Total: total}
			}
			start := int(off - base)
			if !binary {
				start = runeStartAtOrBefore(body, start)
			}
			stop, cut := int(total-base), false
			if int64(stop-start) > budget {
				stop = start + int(budget)
				if s := CutUTF8(body, stop); s > start {
					stop = s
				}
				cut = true
			}
			// In an imported body, a match in encoded state (an image's
			// base64, a signature, encrypted reasoning) is none: the scan
			// goes on after that value.
			enc := encodedLines{body: body}
			at, end := -1, -1
			for from := start; from < stop; {
				at, end, scratch = m.index(body, from, stop, scratch)
				for _, e := range escaped {
					if !imported {
						break
					}
					var eAt, eEnd int
					eAt, eEnd, scratch = e.index(body, from, stop, scratch)
					if eAt >= 0 && (at < 0 || eAt < at) {
						at, end = eAt, eEnd
					}
				}
				if at < 0 || !imported {
					break
				}
				next := enc.overlap(at, end)
				if next < 0 {
					break
				}
				at, end, from = -1, -1, next
			}
			if at >= 0 {
				res.Searched += int64(end - start)
				budget -= int64(end - start)
				hit := FindHit{Seq: ev.Seq, Kind: ev.Kind, Label: ev.Label, Offset: base + int64(at)}
				if binary && !imported {
					// grep's "binary file matches": bytes around the
					// match are no line of text.
					hit.Binary, hit.Body = true, ev.Body
				} else if imported {
					enc.line(at)
					hit.Snippet, hit.Decoded = decodedSnippet(body, at, m, enc.spans)
					if !hit.Decoded {
						hit.Snippet = enc.snippet(at, end)
					}
				} else if snip, ok := snippetOf(body, at, end, SnippetRunes, partial); ok {
					hit.Snippet = snip
				} else {
					// The snippet runs past the part read (a run of
					// color sequences): from the whole body.
					whole, err := r.Body(ev)
					if err != nil {
						res.Unreadable = append(res.Unreadable, FindSkip{Seq: ev.Seq, Err: err})
						seq, off = ev.Seq+1, 0
						continue
					}
					hit.Snippet = Snippet(whole, int(base)+at, int(base)+end, SnippetRunes)
				}
				res.Hits = append(res.Hits, hit)
				seq, off = ev.Seq+1, 0
				continue
			}
			res.Searched += int64(stop - start)
			budget -= int64(stop - start)
			if cut {
				seq, off = ev.Seq, base+int64(stop)
				break scan
			}
			seq, off = ev.Seq+1, 0
		}
	}
	if seq <= through {
		res.Next = &FindCursor{From: seq, Offset: off, Through: through}
	}
	return res, nil
}

// findEscaped are the matchers of query as JSON strings write it, but for
// the query itself: as rook and most writers escape it (a quote,
// backslash, control character), and, where the query has such
// characters, as writers that escape more do: every character past ASCII
// as \uXXXX (Python's json.dumps), and <, >, & (Go's encoding/json),
// which a transcript rewritten by such a tool holds ("caf\u00e9" for
// "café": show and search read it decoded, so find must too).
//
// A query with a character past ASCII, or with a letter a character past
// ASCII folds as (foldsPastASCII: "istanbul" finds "\u0130stanbul",
// "kelvin" "\u212aelvin"), is matched by one matcher that reads the line
// as a JSON string's content (newEscapedMatcher): each escape is the
// character it writes, in any case, as the query's other characters are
// ("éléphant" finds "\u00c9l\u00e9phant", whose É and é differ in their
// escapes' hex digits, which no folding of the escaped query as text
// makes equal). Any other query's escaped forms are ASCII, and matched as
// text (ASCII case folded: \u003C is \u003c).
func findEscaped(query string) []*foldMatcher {
	for i := 0; i < len(query); i++ {
		if c := query[i]; c >= utf8.RuneSelf || foldsPastASCII[c] {
			return []*foldMatcher{newEscapedMatcher(query)}
		}
	}
	seen := map[string]bool{query: true}
	var out []*foldMatcher
	add := func(form string) {
		if !seen[form] {
			seen[form] = true
			out = append(out, newFoldMatcher(form))
		}
	}
	e := appendJSONString(nil, []byte(query))
	base := string(e[1 : len(e)-1])
	add(base) // (the case variants of this one the matcher folds)
	add(escapeHTML(base))
	return out
}

// escapeHTML is s, an ASCII JSON string's content, with <, > and & written
// as \u escapes, as the JSON writers that escape them (Go's
// encoding/json) write them.
func escapeHTML(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '<', '>', '&':
			fmt.Fprintf(&b, `\u%04x`, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// decodedSnippetWindow is how many bytes of a string decodedSnippet
// decodes on each side of a match: a snippet shows 160 characters, and a
// tool output of megabytes is not decoded whole for them.
const decodedSnippetWindow = 1024

// decodedSnippet is the snippet of a hit at body[at] in an imported event:
// the JSON string the match is in, decoded around it, after the key it is
// the value of ("command: mix test", "content: …"), so the text reads as
// written rather than escaped in its envelope. It is this match, not an
// earlier one. ok is false when the match is not inside one string value
// (it is in a key, a number, or spans a key and its value, or the line is
// not JSON there): the caller shows the line as stored. The cost is a
// scan of the line up to the match and the window around it. Encoded
// state in the string (spans, the line's, as encodedLines finds them: an
// image in JSON written in the string) is shown as its marker.
func decodedSnippet(body []byte, at int, m *foldMatcher, spans []encodedSpan) (string, bool) {
	if at >= len(body) || !utf8.RuneStart(body[at]) {
		return "", false // inside a character: a binary body's match
	}
	from := bytes.LastIndexByte(body[:at], '\n') + 1
	open := -1           // where the string the scan is in starts (its quote)
	key, colon := "", -1 // the last key before the scan, and its ':'
	ws := -1             // where the window starts: a byte that begins no escape's middle
	for i := from; i < len(body) && body[i] != '\n'; i++ {
		c := body[i]
		if open < 0 {
			if i >= at {
				return "", false // the match starts between strings
			}
			if c == '"' {
				open, ws = i, i+1
			}
			continue
		}
		if i <= at-decodedSnippetWindow {
			ws = i
		}
		switch {
		case c == '"' && i < at:
			// A string before the match: remember it if it is a key.
			if j := skipJSONSpace(body, i+1); j < len(body) && body[j] == ':' {
				key, colon = "", j
				if k, ok := appendDecodedString(nil, body[open+1:i]); ok && len(k) <= 64 {
					key = string(k)
				}
			}
			open = -1
		case c == '"':
			// The string holding the match ends here.
			if j := skipJSONSpace(body, i+1); j < len(body) && body[j] == ':' {
				return "", false // a key
			}
			return windowSnippet(body, open, ws, at, i, key, colon, m, spans)
		case i >= at+6*len(m.query)+decodedSnippetWindow:
			// The window ends here, never inside an escape. (A character
			// written as a pair of escapes may be cut in two: far from the
			// match, past what the snippet shows.)
			return windowSnippet(body, open, ws, at, i, key, colon, m, spans)
		case c == '\\':
			n := 2
			if i+1 < len(body) && body[i+1] == 'u' {
				n = 6
			}
			if at > i && at < i+n {
				at = i // a match from inside an escape shows from the escape
			}
			i += n - 1
		}
	}
	return "", false // the line ends inside the string: not JSON
}

// windowSnippet decodes body[ws:we], a window of the string opened at
// body[open] around the match at body[at], and makes the snippet; key is
// shown before the text when the string is the value of the key whose ':'
// is at body[colon].
func windowSnippet(body []byte, open, ws, at, we int, key string, colon int, m *foldMatcher, spans []encodedSpan) (string, bool) {
	for ws > open+1 && ws < at && body[ws]&0xC0 == 0x80 {
		ws++ // a cut window does not start inside a character
	}
	for we > at && we < len(body) && body[we]&0xC0 == 0x80 {
		we--
	}
	var text []byte
	if key != "" && prevNonSpace(body, open) == colon {
		text = append(text, key...)
		text = append(text, ": "...)
	}
	var ok bool
	if text, ok = appendDecodedString(text, masked(body, ws, at, spans)); !ok {
		return "", false
	}
	match := len(text)
	if text, ok = appendDecodedString(text, masked(body, at, we, spans)); !ok {
		return "", false
	}
	// The match must still be there, decoded: one that ran past the
	// string's end (a query with a quote) is not in it.
	got, end, _ := m.index(text, match, match+1, nil)
	if got != match {
		return "", false
	}
	return Snippet(text, match, end, SnippetRunes), true
}

// masked is body[from:to] with the part of each of spans in it replaced
// by the span's marker; body[from:to] itself when none is.
func masked(body []byte, from, to int, spans []encodedSpan) []byte {
	var out []byte
	p := from
	for _, s := range spans {
		if s.end <= p || s.start >= to {
			continue
		}
		if out == nil {
			out = make([]byte, 0, to-from)
		}
		out = append(append(out, body[p:max(p, s.start)]...), s.marker...)
		p = min(s.end, to)
	}
	if out == nil {
		return body[from:to]
	}
	return append(out, body[p:to]...)
}

// prevNonSpace is the index of the last byte before i that is not JSON
// whitespace, or -1.
func prevNonSpace(b []byte, i int) int {
	for i--; i >= 0; i-- {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
		default:
			return i
		}
	}
	return -1
}

// foldMatcher finds a literal with each character compared folded
// (foldRune: Unicode simple case folding, and where two characters
// lower-case alike), as `rook search` matches (it folds query and bodies
// with the same foldRune): İ (U+0130) lower-cases to i but is in no fold
// class with it, so `find istanbul` missed "İSTANBUL" that search found.
type foldMatcher struct {
	// ascii: the query is ASCII with no letter a character past ASCII
	// folds as (foldsPastASCII: k and s, the Kelvin sign and the long s),
	// but i, so a match is ASCII bytes only and lowering bytes in place
	// keeps every offset. dotI: it has an i, which İ matches: a body with
	// an İ is searched rune by rune.
	ascii bool
	dotI  bool
	lower []byte
	folds []rune // each query rune folded (foldRune)
	// bytes: of each query rune, -1, or the byte when it is a byte that
	// is not UTF-8 (its rune U+FFFD, which it is not): it matches that
	// byte only, and a real character (U+FFFD too) no such byte.
	bytes []int
	query string
	// escaped: the body is read as a JSON string's content, each escape
	// the character it writes (newEscapedMatcher).
	escaped bool
	// span bounds the bytes a match takes in the body: what a streamed
	// scan (findScan) holds past where a match may start.
	span int
	// starts: the bytes a match may start at: any past ASCII (a character
	// that lower-cases as the query's first may be any), the ASCII ones
	// its first matches, a backslash when escaped. The scan a character
	// at a time passes the others without decoding them (mayStart).
	starts [256]bool
}

// mayStart says whether a match may start at byte c.
func (m *foldMatcher) mayStart(c byte) bool { return m.starts[c] }

// capitalDotI is U+0130, İ, in UTF-8.
var capitalDotI = []byte("\u0130")

func newFoldMatcher(q string) *foldMatcher {
	m := &foldMatcher{ascii: true, query: q}
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == 'i' || c == 'I':
			m.dotI = true
		case c >= utf8.RuneSelf || foldsPastASCII[c]:
			m.ascii = false
		}
	}
	if m.ascii {
		m.lower = []byte(strings.ToLower(q))
	}
	for i := 0; i < len(q); {
		r, w := utf8.DecodeRuneInString(q[i:])
		b := -1
		if r == utf8.RuneError && w == 1 {
			b = int(q[i])
		}
		m.folds = append(m.folds, foldRune(r))
		m.bytes = append(m.bytes, b)
		i += w
	}
	m.span = 4 * len(q) // a character a byte of the query, folded, is at most 3
	for c := range 256 {
		m.starts[c] = c >= utf8.RuneSelf || len(m.folds) == 0 || m.matchesFirst(rune(c))
	}
	return m
}

// matchesFirst says whether r matches the query's first character, as
// matchAt has it.
func (m *foldMatcher) matchesFirst(r rune) bool {
	return foldRune(r) == m.folds[0]
}

// newEscapedMatcher is a foldMatcher of q that reads the body as JSON
// writes a string's content: an escape (\", \\, \/, \b, \f, \n, \r, \t,
// \uXXXX, its hex digits in either case, and a pair of them past U+FFFF)
// is the character it writes, matched as that character is (in any case,
// as folding has it), and any other character is itself. So a query
// matches a line whose writer escaped any of its characters, each in its
// own case ("Éléphant" as "\u00c9l\u00e9phant" or "\u00C9L\u00C9PHANT"),
// at the cost of reading the line a character at a time (as a query past
// ASCII is read anyway).
func newEscapedMatcher(q string) *foldMatcher {
	m := newFoldMatcher(q)
	m.ascii, m.escaped = false, true
	m.span = 12 * utf8.RuneCountInString(q) // a character at most a pair of \u escapes
	m.starts['\\'] = true
	return m
}

// jsonEscapeAt is the character the escape at body[i] (a backslash)
// writes, and the escape's length; ok is false when no escape is there
// whole. A surrogate not in a pair is that surrogate: no character, so
// no character of a query matches it (encoding/json reads it as U+FFFD,
// which a query's U+FFFD would match, as it would a byte that is not
// UTF-8: find looks for literal text).
func jsonEscapeAt(body []byte, i int) (r rune, n int, ok bool) {
	if i+1 >= len(body) {
		return 0, 0, false
	}
	switch c := body[i+1]; c {
	case '"', '\\', '/':
		return rune(c), 2, true
	case 'b':
		return '\b', 2, true
	case 'f':
		return '\f', 2, true
	case 'n':
		return '\n', 2, true
	case 'r':
		return '\r', 2, true
	case 't':
		return '\t', 2, true
	case 'u':
		r = getu4(body[i:])
		if r < 0 {
			return 0, 0, false
		}
		if !utf16.IsSurrogate(r) {
			return r, 6, true
		}
		if r2 := getu4(body[min(i+6, len(body)):]); r2 >= 0 {
			if pair := utf16.DecodeRune(r, r2); pair != utf8.RuneError {
				return pair, 12, true
			}
		}
		return r, 6, true
	}
	return 0, 0, false
}

// index returns the first match starting in [start, stop) of body (a match
// may run past stop) and its end, or -1. scratch is a reusable buffer.
func (m *foldMatcher) index(body []byte, start, stop int, scratch []byte) (int, int, []byte) {
	stop = min(stop, len(body))
	if start >= stop {
		return -1, -1, scratch
	}
	// A match with an İ is a byte longer than the query: one starting
	// before stop may end a byte past end, with the İ's second byte.
	if end := min(len(body), stop+len(m.lower)-1); m.ascii && (!m.dotI || !bytes.Contains(body[start:min(len(body), end+1)], capitalDotI)) {
		scratch = append(scratch[:0], body[start:end]...)
		for i, c := range scratch {
			if 'A' <= c && c <= 'Z' {
				scratch[i] = c + ('a' - 'A')
			}
		}
		i := bytes.Index(scratch, m.lower)
		if i < 0 || start+i >= stop {
			return -1, -1, scratch
		}
		return start + i, start + i + len(m.lower), scratch
	}
	for i := start; i < stop; {
		if !m.mayStart(body[i]) {
			i++ // an ASCII character
			continue
		}
		if end, ok := m.matchAt(body, i); ok {
			return i, end, scratch
		}
		_, w := utf8.DecodeRune(body[i:])
		i += w
	}
	return -1, -1, scratch
}

func (m *foldMatcher) matchAt(body []byte, i int) (int, bool) {
	for k, fold := range m.folds {
		if i >= len(body) {
			return 0, false
		}
		r, w := rune(body[i]), 1
		if r >= utf8.RuneSelf {
			r, w = utf8.DecodeRune(body[i:])
		} else if r == '\\' && m.escaped {
			var ok bool
			if r, w, ok = jsonEscapeAt(body, i); !ok {
				return 0, false
			}
		}
		// A byte that is not UTF-8 decodes as U+FFFD, and is not one:
		// it matches the same byte of the query only.
		if invalid := r == utf8.RuneError && w == 1; invalid || m.bytes[k] >= 0 {
			if !invalid || int(body[i]) != m.bytes[k] {
				return 0, false
			}
			i += w
			continue
		}
		if foldRune(r) != fold {
			return 0, false
		}
		i += w
	}
	return i, true
}

// Snippet is one line of text around body[at:end]: up to n characters,
// about snippetBefore of them before the match, control characters
// replaced, an ellipsis where it is cut.
func Snippet(body []byte, at, end, n int) string {
	s, _ := snippetOf(body, at, end, n, false)
	return s
}

// snippetOf is Snippet of a body of which body holds a part (partial),
// at least 256 bytes before the match when it does not start the body,
// and ok when that part holds all the snippet reads (else the whole body
// is needed).
func snippetOf(body []byte, at, end, n int, partial bool) (string, bool) {
	from := at
	for k := 0; k < snippetBefore && from > 0; k++ {
		_, w := utf8.DecodeLastRune(body[:from])
		from -= w
	}
	var b strings.Builder
	if from > 0 {
		b.WriteString("…")
	}
	i, count := from, 0
	for i < len(body) && count < n {
		if partial && (len(body)-i < utf8.UTFMax || body[i] == 0x1b && sgrRunsToEnd(body, i)) {
			return "", false
		}
		if body[i] == 0x1b {
			// A color a command's output kept is not text (cleanView),
			// unless the match is in it (a search for "31m").
			if j := sgrEnd(body, i); j > 0 && (j <= at || i >= end) {
				i = j
				continue
			}
		}
		r, w := utf8.DecodeRune(body[i:])
		b.WriteRune(cleanRune(r))
		i += w
		count++
	}
	if i < len(body) {
		b.WriteString("…")
		return b.String(), true
	}
	return strings.TrimRight(b.String(), " "), !partial
}

// findPart reads what Find searches of a big body (not an imported
// line) from offset off with budget bytes left: the bytes from 256 before
// off (a snippet's start, a character's) to 64 KiB past the budget (a
// match that ends past it, a snippet's end), and whether the whole body is
// binary. The body is streamed once, whole, verified by its hash; the
// part is all that is kept. It was read whole and held.
func findPart(o *cas.ObjectReader, off, budget int64) (part []byte, base int64, binary bool, err error) {
	st := min(max(off, 0), o.Size())
	w := &windowScan{lo: max(st-256, 0)}
	w.hi = min(st+budget+64<<10, o.Size())
	w.win = make([]byte, 0, w.hi-w.lo)
	if _, err := o.WriteTo(w); err != nil {
		return nil, 0, false, err
	}
	return w.win, w.lo, w.binary(), nil
}

// BodyRange is a range of one event's body: a page of `session entry` or
// the text of a quote.
type BodyRange struct {
	Session eventlog.ID
	eventlog.Event
	Offset int64 // where Data starts in the body
	End    int64 // where it ends: Offset + len(Data)
	Total  int64 // the body's size
	Data   []byte
	Binary bool   // the whole body is binary: Data is raw bytes
	Next   *int64 // the offset to read on from, when End < Total
	// Rendered: the range is of an imported event's reading view
	// (RenderImported), not of its stored lines; offsets count in it.
	Rendered bool
}

// NoEventError: a seq past the end of a session.
type NoEventError struct {
	Session eventlog.ID
	Seq     uint64
	Events  uint64
}

func (e *NoEventError) Error() string {
	switch e.Events {
	case 0:
		return fmt.Sprintf("session %s has no event #%d: it has no events", e.Session, e.Seq)
	case 1:
		return fmt.Sprintf("session %s has no event #%d: it has 1 event (#0)", e.Session, e.Seq)
	}
	return fmt.Sprintf("session %s has no event #%d: it has %d events (#0 to #%d)", e.Session, e.Seq, e.Events, e.Events-1)
}

// OffsetError: an offset past the end of a body, or of the text of an
// imported event (Text: quote's offsets count in its reading view, not
// in the lines stored).
type OffsetError struct {
	Seq    uint64
	Offset int64
	Total  int64
	Text   bool
}

func (e *OffsetError) Error() string {
	what := "body"
	if e.Text {
		what = "text"
	}
	return fmt.Sprintf("offset %d is past the end of event #%d's %s (%d bytes): give --offset 0 to %d", e.Offset, e.Seq, what, e.Total, e.Total)
}

// Event returns one event of a session.
func (r *Rook) Event(id eventlog.ID, seq uint64) (eventlog.Event, error) {
	evs, err := r.Log.Read(id, seq, 1)
	if err != nil {
		return eventlog.Event{}, err
	}
	if len(evs) == 0 || evs[0].Seq != seq {
		s, err := r.Log.Summary(id)
		if err != nil {
			return eventlog.Event{}, err
		}
		return eventlog.Event{}, &NoEventError{Session: id, Seq: seq, Events: s.Events}
	}
	return evs[0], nil
}

// ReadBody returns up to n bytes of event seq's body from offset on, cut on
// a UTF-8 boundary for text (an offset inside a character moves back to its
// start). Each page holds at least one character, so paging ends. An offset
// equal to the body's size gives an empty range; past it is an
// OffsetError. A body that cannot be read is an error.
func (r *Rook) ReadBody(id eventlog.ID, seq uint64, offset int64, n int) (BodyRange, error) {
	return r.readRange(id, seq, offset, n, false)
}

// readRange is ReadBody, of an imported event's reading view when
// rendered is set (RenderImported; BodyRange.Rendered says so).
func (r *Rook) readRange(id eventlog.ID, seq uint64, offset int64, n int, rendered bool) (BodyRange, error) {
	br := BodyRange{Session: id, Offset: offset}
	if n <= 0 {
		return br, fmt.Errorf("a range holds at least 1 byte, not %d", n)
	}
	ev, err := r.Event(id, seq)
	if err != nil {
		return br, err
	}
	br.Event = ev
	var body []byte
	o, oerr := r.Store.OpenObject(ev.Body)
	if oerr == nil && o.Kind() == cas.KindSource && rendered && !readWhole {
		if rb, done, err := r.renderedRange(o, br, offset, n); done {
			return rb, err
		}
	}
	switch {
	case oerr == nil && o.Kind() != cas.KindSource && o.Ranged() && !readWhole:
		return readRangeOf(o, br, offset, n)
	case oerr == nil && o.Kind() == cas.KindSource && !rendered && !readWhole:
		return r.readLineRange(o, br, offset, n)
	case oerr == nil && o.Kind() != cas.KindSource:
		body, err = o.ReadAll()
	default:
		body, err = r.Body(ev)
	}
	if err != nil {
		return br, fmt.Errorf("event #%d: %w", seq, err)
	}
	if rendered {
		// The view is text even of lines with bytes that are not UTF-8.
		if info, err := r.Store.StatEntry(ev.Body); err == nil && info.Kind == cas.KindSource {
			body, br.Rendered = renderEvent(ev, body), true
		}
	}
	br.Total = int64(len(body))
	br.Binary = IsBinary(body)
	if offset < 0 || offset > br.Total {
		return br, &OffsetError{Seq: seq, Offset: offset, Total: br.Total, Text: br.Rendered}
	}
	start := int(offset)
	if !br.Binary {
		start = runeStartAtOrBefore(body, start)
	}
	rest := body[start:]
	end := min(n, len(rest))
	if !br.Binary && end < len(rest) {
		end = CutUTF8(rest, n)
		if end == 0 {
			_, end = utf8.DecodeRune(rest)
		}
	}
	br.Offset = int64(start)
	br.Data = rest[:end:end]
	br.End = br.Offset + int64(end)
	if br.End < br.Total {
		next := br.End
		br.Next = &next
	}
	return br, nil
}

// readRangeOf is readRange of a big body (not an imported line) read in
// parts: streamed once, verified as a whole read is, to say whether it is
// binary, and only the range and the few bytes around it that say where
// characters start read (ObjectReader.ReadRange). It held the whole body,
// twice.
func readRangeOf(o *cas.ObjectReader, br BodyRange, offset int64, n int) (BodyRange, error) {
	seq := br.Seq
	_, binary, err := streamBody(o, 0)
	if err != nil {
		return br, fmt.Errorf("event #%d: %w", seq, err)
	}
	br.Total, br.Binary = o.Size(), binary
	if offset < 0 || offset > br.Total {
		return br, &OffsetError{Seq: seq, Offset: offset, Total: br.Total, Text: br.Rendered}
	}
	// The range, the character the offset falls in, and the one its end
	// falls in.
	lo := max(offset-(utf8.UTFMax-1), 0)
	hi := min(offset+int64(n)+utf8.UTFMax, br.Total)
	win, err := o.ReadRange(lo, hi-lo)
	if err != nil {
		return br, fmt.Errorf("event #%d: %w", seq, err)
	}
	return rangeOfWindow(br, win, lo, offset, n), nil
}

// rangeOfWindow finishes a range of a body read in parts (br.Total and
// br.Binary set, offset checked): win holds the body's bytes from lo =
// max(offset-(utf8.UTFMax-1), 0) through the range's end and the
// character it falls in, or to the body's end.
func rangeOfWindow(br BodyRange, win []byte, lo, offset int64, n int) BodyRange {
	start := offset
	if !br.Binary && offset > 0 && offset < br.Total {
		// runeStartAtOrBefore, on the window.
		for at := offset; at >= 0 && at > offset-utf8.UTFMax; at-- {
			if at == 0 || utf8.RuneStart(win[at-lo]) {
				start = at
				break
			}
		}
	}
	rest := win[start-lo:] // all of the body's rest, or more than n bytes of it
	restLen := br.Total - start
	end := min(int64(n), restLen)
	if !br.Binary && end < restLen {
		end = int64(CutUTF8(rest, n))
		if end == 0 {
			_, w := utf8.DecodeRune(rest)
			end = int64(w)
		}
	}
	br.Offset = start
	br.Data = rest[:end:end]
	br.End = br.Offset + end
	if br.End < br.Total {
		next := br.End
		br.Next = &next
	}
	return br
}

// readLineRange is readRange of an imported line's bytes as stored
// (entry), the line not put together: its bytes are written out once as
// a stream (the rest of its object, each string cut from it streamed from
// its own object, verified as a whole read is, and escaped back into its
// JSON literal on the way) to count them and say whether they are binary,
// keeping only the range and the few bytes around it that say where
// characters start. A line holding a 24 MiB tool output was put together
// whole, and held twice, for a page of 64 KiB.
func (r *Rook) readLineRange(o *cas.ObjectReader, br BodyRange, offset int64, n int) (BodyRange, error) {
	seq := br.Seq
	b, err := o.ReadAll()
	if err != nil {
		return br, fmt.Errorf("event #%d: %w", seq, err)
	}
	sl, err := decodeSourceLine(b)
	if err != nil {
		return br, fmt.Errorf("event #%d: %w", seq, &cas.CorruptError{ID: br.Event.Body, Reason: err.Error()})
	}
	lo := max(offset-(utf8.UTFMax-1), 0)
	w := &windowScan{lo: lo, hi: max(offset, 0) + int64(n) + utf8.UTFMax}
	if err := r.writeLine(&sl, w); err != nil {
		return br, fmt.Errorf("event #%d: %w", seq, err)
	}
	br.Total, br.Binary = w.pos, w.binary()
	if offset < 0 || offset > br.Total {
		return br, &OffsetError{Seq: seq, Offset: offset, Total: br.Total, Text: br.Rendered}
	}
	return rangeOfWindow(br, w.win, lo, offset, n), nil
}

// renderedRange is readRange of an imported line's reading view
// (renderEvent), the line neither put together nor rendered whole:
// its view is streamed once (renderedStream: each string the view shows
// streamed from its own object, verified as a whole read is) to count it,
// keeping only the range and the few bytes around it that say where
// characters start. done is false when the view cannot be streamed, or
// a read failed: the line is then rendered whole (which reports the
// failure as it always has). A quote of a line holding a 24 MiB tool
// output held the line and its view whole, over 200 MiB.
func (r *Rook) renderedRange(o *cas.ObjectReader, br BodyRange, offset int64, n int) (BodyRange, bool, error) {
	seq := br.Seq
	b, err := o.ReadAll()
	if err != nil {
		return br, false, nil
	}
	sl, err := decodeSourceLine(b)
	if err != nil {
		return br, false, nil
	}
	lo := max(offset-(utf8.UTFMax-1), 0)
	w := &windowScan{lo: lo, hi: max(offset, 0) + int64(n) + utf8.UTFMax}
	if ok, err := r.renderedStream(&sl, w, uncounted(br.Event)); !ok || err != nil {
		return br, false, nil
	}
	br.Total, br.Binary, br.Rendered = w.pos, w.binary(), true
	if offset < 0 || offset > br.Total {
		return br, true, &OffsetError{Seq: seq, Offset: offset, Total: br.Total, Text: br.Rendered}
	}
	return rangeOfWindow(br, w.win, lo, offset, n), true, nil
}

// writeLine writes what sl.expand gives to w, in pieces: each cut string
// streamed from its object (a big one is never held whole) and escaped as
// appendJSONString escapes it.
func (r *Rook) writeLine(sl *sourceLine, w io.Writer) error {
	p := 0
	quote := []byte{'"'}
	for _, c := range sl.Cuts {
		if _, err := w.Write(sl.Rest[p : p+c.Gap]); err != nil {
			return err
		}
		p += c.Gap
		if _, err := w.Write(quote); err != nil {
			return err
		}
		if err := r.writeEscaped(c.ID, w); err != nil {
			return fmt.Errorf("string %s of the line: %w", cas.Short(c.ID), err)
		}
		if _, err := w.Write(quote); err != nil {
			return err
		}
	}
	_, err := w.Write(sl.Rest[p:])
	return err
}

// writeEscaped writes the text of object id to w escaped as
// appendJSONString escapes it, its quotes left out.
func (r *Rook) writeEscaped(id cas.Key, w io.Writer) error {
	o, err := r.Store.OpenObject(id)
	if err != nil {
		return err
	}
	_, err = o.WriteTo(&escapeWriter{w: w})
	return err
}

// escapeWriter writes what is written to it to w escaped as
// appendJSONString escapes it, quotes left out.
type escapeWriter struct {
	w   io.Writer
	buf []byte
}

func (e *escapeWriter) Write(p []byte) (int, error) {
	const piece = 32 << 10
	for rest := p; len(rest) > 0; {
		k := min(len(rest), piece)
		e.buf = appendJSONString(e.buf[:0], rest[:k])
		if _, err := e.w.Write(e.buf[1 : len(e.buf)-1]); err != nil {
			return 0, err
		}
		rest = rest[k:]
	}
	return len(p), nil
}

// Quote returns a bounded quote of event seq's body: up to QuoteBytes bytes
// of text from offset on. Binary bodies are not quoted. An imported event
// is quoted from its reading view, offsets and all: the text of its lines,
// not their envelope or signed state (a thinking block's signature), which
// are not source material; `session entry` reads the lines as stored.
func (r *Rook) Quote(id eventlog.ID, seq uint64, offset int64) (BodyRange, error) {
	br, err := r.readRange(id, seq, offset, QuoteBytes, true)
	if err != nil {
		return br, err
	}
	if br.Binary {
		return br, fmt.Errorf("event #%d's body is binary (%d bytes): it cannot be quoted as text; `rook session entry --json` gives it in base64", seq, br.Total)
	}
	return br, nil
}
