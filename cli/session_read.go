package cli

// The reading commands: session show, history, find, entry, quote. The
// views are computed in agent (transcript.go); this file renders them.
//
// Every reader opens the store read-only and reads bodies verified. A body
// that cannot be read is an error line on its event in show and history
// (and a note in find): the page is still printed, then the command exits 1.
// entry and quote of an unreadable body exit 1 at once.
//
// Binary bodies (not valid UTF-8, or holding NUL) are never written raw by
// the text views: show and history say `(binary, N bytes)`, entry says how
// to get the bytes, quote refuses. In --json, show and entry leave the text
// field empty, set "binary": true and carry the bytes in base64 in
// "body_base64" (show) or "data_base64" (entry); a label that is not
// UTF-8 comes with "label_base64" (jsonLabel). An imported event's
// reading view is text even when its lines hold bytes that are not UTF-8
// (each shown as U+FFFD): show and history render it, and --raw or entry
// give the bytes as stored. Text views made for
// reading (show, quote, history previews, find snippets) replace control
// characters other than newline and tab (terminal escape sequences) with
// U+FFFD; entry writes a text body's bytes exactly as stored when piped (at a
// terminal, control characters as U+FFFD, as show). find never
// matches inside an imported line's encoded state (an image's base64, a
// signature, encrypted reasoning) and shows it as a marker.

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rookhq/rook/agent"
	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
)

// jsonLabel is an event's label in --json: "label" its text, and, only
// when the label is not UTF-8 (`--label` takes any bytes), "label_base64"
// its bytes exactly, as "body_base64" a binary body's: encoding/json
// writes each byte that is not UTF-8 as U+FFFD, so two labels that differ
// in those bytes would read the same. Every command that prints an
// event's label in --json embeds it (show, history, find, entry, quote,
// search).
type jsonLabel struct {
	Label       string `json:"label"`
	LabelBase64 string `json:"label_base64,omitempty"`
}

func labelJSON(label string) jsonLabel {
	j := jsonLabel{Label: label}
	if !utf8.ValidString(label) {
		j.LabelBase64 = base64.StdEncoding.EncodeToString([]byte(label))
	}
	return j
}

// ShowCmd is `rook session show`.
type ShowCmd struct {
	ID      string `arg:"" help:"Session id, unique prefix, or last."`
	From    uint64 `help:"First seq." default:"0" placeholder:"N"`
	Limit   int    `help:"At most N events (1 to 10000)." default:"200"`
	MaxBody int    `name:"max-body" help:"Cut bodies longer than B bytes (the rest reads with session entry; an imported event's text, with a bigger --max-body)." default:"4096"`
	Raw     bool   `help:"Print an imported event's source lines as stored, not rendered as text."`
}

type showEventJSON struct {
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	Kind string    `json:"kind"`
	jsonLabel
	TokensIn   uint64 `json:"tokens_in"`
	TokensOut  uint64 `json:"tokens_out"`
	BodyID     string `json:"body_id"`
	Size       int64  `json:"size"`
	Stored     int64  `json:"stored"`
	Body       string `json:"body"`
	Binary     bool   `json:"binary"`
	BodyBase64 string `json:"body_base64,omitempty"`
	Elided     bool   `json:"elided"`
	Omitted    int64  `json:"body_bytes_omitted"`
	Rendered   bool   `json:"rendered"`
	// Calls: of an imported tool result, the seqs of the calls it answers.
	Calls []uint64 `json:"calls,omitempty"`
	// Children: of an imported subagent's call or result, the sessions
	// its transcript was imported as.
	Children []eventlog.ID `json:"children,omitempty"`
	Error    string        `json:"error,omitempty"`
}

// showJSON is a page of show, as history's is: the session, its events
// from --from, how many it has and where the next page starts (null: this
// is the last), and, of a fork or subagent, its parent (ids as session ls
// gives them).
type showJSON struct {
	Session       string       `json:"session"`
	Parent        *eventlog.ID `json:"parent,omitempty"`
	Fork          bool         `json:"fork"`
	ForkAt        *uint64      `json:"fork_at,omitempty"`
	Subagent      bool         `json:"subagent"`
	ParentRemoved bool         `json:"parent_removed,omitempty"`
	// ParentSource: of an imported subagent or fork with no parent, the
	// session id its transcript names its parent by (in its agent), and
	// whether a session of that id is in the store (unlinked all the same).
	ParentSource         string          `json:"parent_source,omitempty"`
	ParentSourceImported *bool           `json:"parent_source_imported,omitempty"`
	Events               []showEventJSON `json:"events"`
	Total                uint64          `json:"total"`
	NextFrom             *uint64         `json:"next_from"`
	// DamagedAt: the session's log is damaged at this event, in or past
	// the page; the error (exit 1) says what to do.
	DamagedAt *uint64 `json:"damaged_at,omitempty"`
}

func (c *ShowCmd) Run(e *Env) error {
	if c.Limit < 1 || c.Limit > agent.MaxPageEntries {
		return usageErr("--limit must be 1 to %d, not %d", agent.MaxPageEntries, c.Limit)
	}
	if c.MaxBody < 0 {
		return usageErr("--max-body must be 0 or more, not %d", c.MaxBody)
	}
	r, id, err := e.readSession(c.ID)
	if err != nil {
		return err
	}
	defer r.Close()
	p, err := r.Show(id, agent.ShowQuery{From: c.From, Limit: c.Limit, MaxBody: c.MaxBody, Raw: c.Raw})
	if err != nil {
		return err
	}
	bad := 0
	for _, v := range p.Events {
		if v.Err != nil {
			bad++
		}
	}
	if e.JSON {
		out := make([]showEventJSON, 0, len(p.Events))
		for _, v := range p.Events {
			j := showEventJSON{Seq: v.Seq, Time: v.Time.UTC(), Kind: v.Kind.String(), jsonLabel: labelJSON(v.Label),
				TokensIn: v.TokensIn, TokensOut: v.TokensOut, BodyID: hex.EncodeToString(v.Event.Body[:]),
				Size: v.Size, Stored: v.Stored, Binary: v.Binary, Elided: v.Elided(), Omitted: v.Omitted, Rendered: v.Rendered, Calls: v.Calls, Children: v.Children}
			switch {
			case v.Err != nil:
				j.Error = v.Err.Error()
			case v.Binary:
				j.BodyBase64 = base64.StdEncoding.EncodeToString(v.Text)
			default:
				j.Body = string(v.Text)
			}
			out = append(out, j)
		}
		page := showJSON{Session: id.String(), Events: out, Total: p.Total, NextFrom: p.Next, DamagedAt: damagedAtMember(p.Damage, p.DamagedAt)}
		if pl := p.Parent; pl != nil {
			page.Parent, page.Fork, page.ForkAt, page.Subagent, page.ParentRemoved = &pl.ID, pl.Fork, pl.ForkAt, pl.Subagent, pl.Removed
		}
		if u := p.Unlinked; u != nil {
			page.Fork, page.Subagent, page.ParentSource, page.ParentSourceImported = u.Fork, u.Subagent, u.SourceID, &u.Imported
		}
		// A failed write is Main's to tell, after unreadable's verdict.
		if err := unprinted(e.printJSON(page)); err != nil {
			return err
		}
		return pageVerdict(p.Damage, bad)
	}
	w := e.Stdout
	if pl := p.Parent; pl != nil {
		what := "child"
		switch {
		case pl.Subagent:
			what = "subagent"
		case pl.ForkAt != nil:
			what = fmt.Sprintf("fork (at #%d)", *pl.ForkAt)
		case pl.Fork:
			what = "fork"
		}
		if pl.Removed {
			fmt.Fprintf(w, "%s of session %s, since removed\n\n", what, pl.ID)
		} else {
			fmt.Fprintf(w, "%s of session %s: rook session show %s\n\n", what, pl.ID, pl.ID)
		}
	}
	if u := p.Unlinked; u != nil {
		// A subagent's or fork's file imported without its parent's: its
		// transcript says whose it is, which no link does yet.
		if u.Imported {
			fmt.Fprintf(w, "%s of %s session %s, not linked to it\n\n", u.Role(), agent.FormatName(u.Format), terminalLine(u.SourceID))
		} else {
			fmt.Fprintf(w, "%s of %s session %s, whose transcript is not imported: importing it links them\n\n", u.Role(), agent.FormatName(u.Format), terminalLine(u.SourceID))
		}
	}
	if len(p.Events) == 0 {
		switch {
		case p.Damage != nil:
			// The error says where the damage is and what to do.
			return p.Damage
		case p.Total == 0:
			fmt.Fprintf(w, "session %s has no events\n", id)
		default:
			fmt.Fprintf(w, "no events from #%d: session %s has %d (#0 to #%d)\n", c.From, id, p.Total, p.Total-1)
		}
		return nil
	}
	for _, v := range p.Events {
		head := fmt.Sprintf("── #%d %s", v.Seq, v.Kind)
		if v.Label != "" {
			head += " " + terminalLine(v.Label)
		}
		for i, c := range v.Calls {
			if i == 0 {
				head += " ←"
			}
			head += fmt.Sprintf(" #%d", c)
		}
		for _, c := range v.Children {
			head += " → session " + c.String()
		}
		if v.Err != nil {
			if v.Stored > 0 {
				head += fmt.Sprintf("  %s, %s stored", formatBytes(v.Size), formatBytes(v.Stored))
			}
			head += "  " + shownTimeSec(v.Time)
			fmt.Fprintf(w, "%s\n(body unreadable: %v)\n\n", head, v.Err)
			continue
		}
		head += fmt.Sprintf("  %s, %s stored", formatBytes(v.Size), formatBytes(v.Stored))
		if v.Elided() {
			head += " (elided)"
		}
		// When it happened (an imported event: when the transcript says).
		head += "  " + shownTimeSec(v.Time)
		fmt.Fprintln(w, head)
		if v.Binary {
			fmt.Fprintf(w, "(binary, %d bytes: `rook store cat %s` writes them)\n", v.Size, hex.EncodeToString(v.Event.Body[:]))
		} else if len(v.Text) > 0 {
			// A saved output's colors are left out, as an imported
			// line's are (entry writes the bytes as stored).
			text := terminalText(agent.StripSGR(v.Text))
			io.WriteString(w, text)
			if !strings.HasSuffix(text, "\n") {
				fmt.Fprintln(w)
			}
		}
		if v.Elided() && v.Rendered {
			fmt.Fprintf(w, "… %d more bytes of text: rook session show %s --from %d --limit 1 --max-body %d (--raw: the source lines)\n", v.Omitted, id, v.Seq, int64(len(v.Text))+v.Omitted)
		} else if v.Elided() && !v.Binary {
			fmt.Fprintf(w, "… %d more bytes elided: rook session entry %s %d --offset %d\n", v.Omitted, id, v.Seq, len(v.Text))
		}
		for _, c := range v.Children {
			fmt.Fprintf(w, "→ the subagent's session: rook session show %s\n", c)
		}
		fmt.Fprintln(w)
	}
	switch {
	case p.Next != nil && p.Damage != nil:
		fmt.Fprintf(w, "more: --from %d (up to the damage at #%d)\n", *p.Next, p.DamagedAt)
	case p.Next != nil:
		fmt.Fprintf(w, "more: --from %d (%d events in all)\n", *p.Next, p.Total)
	}
	return pageVerdict(p.Damage, bad)
}

// binaryBodyID is a binary hit's body id for --json ("" for text, whose
// snippet says what matched).
func binaryBodyID(binary bool, body cas.Key) string {
	if !binary {
		return ""
	}
	return hex.EncodeToString(body[:])
}

// binaryMatch stands for the snippet of a match in a binary body (find,
// search), as grep says "binary file matches".
func binaryMatch(body cas.Key) string {
	return fmt.Sprintf("(binary body matches: `rook store cat %s` writes its bytes)", hex.EncodeToString(body[:]))
}

// pageVerdict is the exit after a page of a session: its log's damage
// (the page held what read before it), else unreadable's.
func pageVerdict(damage error, bad int) error {
	if damage != nil {
		return damage
	}
	return unreadable(bad)
}

// damagedAtMember is a page's damaged_at member: the event its log is damaged
// at, when it is.
func damagedAtMember(damage error, at uint64) *uint64 {
	if damage == nil {
		return nil
	}
	return &at
}

// unreadable is the exit after a page that holds bodies that could not be
// read.
func unreadable(n int) error {
	if n == 0 {
		return nil
	}
	return &exitError{code: ExitFailure, msg: fmt.Sprintf("%d event bod%s could not be read: run `rook store verify`", n, plural(n, "y", "ies"))}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// HistoryCmd is `rook session history`.
type HistoryCmd struct {
	ID     string  `arg:"" help:"Session id, unique prefix, or last."`
	Before *uint64 `help:"The page that ends before seq N." placeholder:"N"`
	From   *uint64 `help:"The page that starts at seq N." placeholder:"N"`
	Limit  int     `help:"Events per page (1 to 10000)." default:"64"`
}

type historyEventJSON struct {
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	Kind string    `json:"kind"`
	jsonLabel
	TokensIn  uint64 `json:"tokens_in"`
	TokensOut uint64 `json:"tokens_out"`
	BodyID    string `json:"body_id"`
	Size      int64  `json:"size"`
	Stored    int64  `json:"stored"`
	Binary    bool   `json:"binary"`
	Preview   string `json:"preview"`
	Error     string `json:"error,omitempty"`
}

type historyJSON struct {
	Session    string             `json:"session"`
	Events     []historyEventJSON `json:"events"`
	Total      uint64             `json:"total"`
	PrevBefore *uint64            `json:"prev_before"`
	NextFrom   *uint64            `json:"next_from"`
	DamagedAt  *uint64            `json:"damaged_at,omitempty"` // as show's
}

func (c *HistoryCmd) Run(e *Env) error {
	if c.Before != nil && c.From != nil {
		return usageErr("give --before or --from, not both")
	}
	if c.Limit < 1 || c.Limit > agent.MaxPageEntries {
		return usageErr("--limit must be 1 to %d, not %d", agent.MaxPageEntries, c.Limit)
	}
	r, id, err := e.readSession(c.ID)
	if err != nil {
		return err
	}
	defer r.Close()
	p, err := r.History(id, agent.HistoryQuery{Before: c.Before, From: c.From, Limit: c.Limit})
	if err != nil {
		return err
	}
	bad := 0
	for _, l := range p.Events {
		if l.Err != nil {
			bad++
		}
	}
	if e.JSON {
		evs := make([]historyEventJSON, 0, len(p.Events))
		for _, l := range p.Events {
			j := historyEventJSON{Seq: l.Seq, Time: l.Time.UTC(), Kind: l.Kind.String(), jsonLabel: labelJSON(l.Label),
				TokensIn: l.TokensIn, TokensOut: l.TokensOut, BodyID: hex.EncodeToString(l.Event.Body[:]),
				Size: l.Size, Stored: l.Stored, Binary: l.Binary, Preview: l.Preview}
			if l.Err != nil {
				j.Error = l.Err.Error()
			}
			evs = append(evs, j)
		}
		// A failed write is Main's to tell, after unreadable's verdict.
		if err := unprinted(e.printJSON(historyJSON{Session: id.String(), Events: evs, Total: p.Total,
			PrevBefore: p.PrevBefore, NextFrom: p.NextFrom, DamagedAt: damagedAtMember(p.Damage, p.DamagedAt)})); err != nil {
			return err
		}
		return pageVerdict(p.Damage, bad)
	}
	w := e.Stdout
	switch {
	case p.Damage != nil && len(p.Events) == 0:
		// The error says where the damage is and what to do.
	case p.Total == 0:
		fmt.Fprintf(w, "session %s has no events\n", id)
	case len(p.Events) == 0:
		fmt.Fprintf(w, "session %s: no events in this page (%d in all)\n", id, p.Total)
	default:
		if p.Damage != nil {
			fmt.Fprintf(w, "session %s: events #%d to #%d, of the %d before its log's damage at #%d\n", id, p.Events[0].Seq, p.Events[len(p.Events)-1].Seq, p.DamagedAt, p.DamagedAt)
		} else {
			fmt.Fprintf(w, "session %s: events #%d to #%d of %d\n", id, p.Events[0].Seq, p.Events[len(p.Events)-1].Seq, p.Total)
		}
		rows := make([][]string, 0, len(p.Events))
		for _, l := range p.Events {
			label := terminalLine(l.Label)
			if label == "" {
				label = "-"
			}
			// The preview has no control characters left; terminalLine
			// also takes out bidi controls, which would reorder the row.
			size, text := formatBytes(l.Size), terminalLine(l.Preview)
			switch {
			case l.Err != nil:
				text = fmt.Sprintf("(body unreadable: %v)", l.Err)
				if l.Stored == 0 {
					size = "?"
				}
			case l.Binary:
				text = fmt.Sprintf("(binary, %d bytes)", l.Size)
			}
			rows = append(rows, []string{fmt.Sprintf("#%d", l.Seq), shownTimeSec(l.Time),
				l.Kind.String(), clip(label, 24), size, text})
		}
		writeAligned(w, rows, map[int]bool{4: true}) // a failed write is Main's to tell, after unreadable's verdict
	}
	if p.PrevBefore != nil {
		fmt.Fprintf(w, "earlier: --before %d\n", *p.PrevBefore)
	}
	if p.NextFrom != nil {
		fmt.Fprintf(w, "later: --from %d\n", *p.NextFrom)
	}
	return pageVerdict(p.Damage, bad)
}

// writeAligned writes rows as space-padded columns (right-aligned where
// right says), without a header; the last column is not padded. It
// returns the first write error, as table.write does.
func writeAligned(w io.Writer, rows [][]string, right map[int]bool) error {
	if len(rows) == 0 {
		return nil
	}
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], width(c))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		for j, c := range r {
			if j > 0 {
				b.WriteString("  ")
			}
			if right[j] || j < len(r)-1 {
				b.WriteString(padCells(c, widths[j], right[j]))
			} else {
				b.WriteString(c)
			}
		}
		if _, err := fmt.Fprintln(w, strings.TrimRight(b.String(), " ")); err != nil {
			return err
		}
	}
	return nil
}

// FindCmd is `rook session find`.
type FindCmd struct {
	ID      string  `arg:"" help:"Session id, unique prefix, or last."`
	Query   string  `arg:"" help:"Literal text, matched case-insensitively (1 to 256 bytes)."`
	From    uint64  `help:"Resume at seq N (from a continue: line)." default:"0" placeholder:"N"`
	Offset  uint64  `help:"Resume at byte N of that event's body." default:"0" placeholder:"N"`
	Through *uint64 `help:"Search through seq N (the first call fixes it)." placeholder:"N"`
}

type findHitJSON struct {
	Seq  uint64 `json:"seq"`
	Kind string `json:"kind"`
	jsonLabel
	Offset  int64  `json:"offset"`
	Snippet string `json:"snippet"`
	// Decoded: the snippet is the text of the JSON string the match is
	// in (an imported event's source line), decoded, not the line as
	// stored (offset still counts there).
	Decoded bool `json:"decoded"`
	// Binary: the body is binary, as show says it: no snippet; BodyID
	// names it (`rook store cat` writes its bytes).
	Binary bool   `json:"binary"`
	BodyID string `json:"body_id,omitempty"`
}

type findSkipJSON struct {
	Seq   uint64 `json:"seq"`
	Error string `json:"error"`
}

type findJSON struct {
	Session    string            `json:"session"`
	Hits       []findHitJSON     `json:"hits"`
	Next       *agent.FindCursor `json:"next"`
	Through    *uint64           `json:"through"`
	Unreadable []findSkipJSON    `json:"unreadable"`
}

func (c *FindCmd) Run(e *Env) error {
	if err := agent.ValidateQuery(c.Query); err != nil {
		return usageErr("%v", err)
	}
	if c.Offset > 1<<62 {
		return usageErr("--offset %d is too large", c.Offset)
	}
	if c.Through != nil && c.From > *c.Through {
		// Nothing to search: not "no more matches", as if it had.
		return usageErr("--from %d is after --through %d", c.From, *c.Through)
	}
	r, id, err := e.readSession(c.ID)
	if err != nil {
		return err
	}
	defer r.Close()
	res, err := r.Find(id, agent.FindQuery{Query: c.Query, From: c.From, Offset: int64(c.Offset), Through: c.Through})
	var past *agent.PastEndError
	if errors.As(err, &past) {
		msg := fmt.Sprintf("--from %d is past the end of session %s: %s", c.From, id, past.Has())
		if past.Events > 0 {
			msg += fmt.Sprintf("; give --from 0 to %d", past.Events-1)
		}
		return &exitError{code: ExitFailure, msg: msg}
	}
	if err != nil {
		return err
	}
	if e.JSON {
		hits := make([]findHitJSON, 0, len(res.Hits))
		for _, h := range res.Hits {
			hits = append(hits, findHitJSON{h.Seq, h.Kind.String(), labelJSON(h.Label), h.Offset, h.Snippet, h.Decoded, h.Binary, binaryBodyID(h.Binary, h.Body)})
		}
		skips := make([]findSkipJSON, 0, len(res.Unreadable))
		for _, s := range res.Unreadable {
			skips = append(skips, findSkipJSON{s.Seq, s.Err.Error()})
		}
		// A failed write is Main's to tell, after unreadable's verdict.
		if err := unprinted(e.printJSON(findJSON{Session: id.String(), Hits: hits, Next: res.Next, Through: res.Through,
			Unreadable: skips})); err != nil {
			return err
		}
		return unreadable(len(res.Unreadable))
	}
	w := e.Stdout
	for _, h := range res.Hits {
		head := fmt.Sprintf("#%d %s", h.Seq, h.Kind)
		if h.Label != "" {
			head += " " + terminalLine(h.Label)
		}
		snippet := terminalLine(h.Snippet)
		if h.Binary {
			snippet = binaryMatch(h.Body)
		}
		fmt.Fprintf(w, "%s (byte %d)\n    %s\n", head, h.Offset, snippet)
	}
	for _, s := range res.Unreadable {
		fmt.Fprintf(w, "#%d not searched: body unreadable: %v\n", s.Seq, s.Err)
	}
	switch {
	case res.Through == nil:
		fmt.Fprintf(w, "no matches: session %s has no events\n", id)
	case res.Next != nil && strings.HasPrefix(c.Query, "-"):
		// After the flags, behind "--": put before them, a query "-v"
		// was read as a flag, and the printed line did not run.
		fmt.Fprintf(w, "continue: rook session find %s --from %d --offset %d --through %d -- %s\n",
			id, res.Next.From, res.Next.Offset, res.Next.Through, agent.ShellQuote(c.Query))
	case res.Next != nil:
		fmt.Fprintf(w, "continue: rook session find %s %s --from %d --offset %d --through %d\n",
			id, agent.ShellQuote(c.Query), res.Next.From, res.Next.Offset, res.Next.Through)
	case len(res.Hits) == 0 && c.From == 0 && c.Offset == 0:
		// A search from the start that found nothing: not "no more",
		// as if an earlier call had found some.
		fmt.Fprintf(w, "no matches (searched through #%d)\n", *res.Through)
	default:
		fmt.Fprintf(w, "no more matches (searched through #%d)\n", *res.Through)
	}
	return unreadable(len(res.Unreadable))
}

// bodyArgs name a range of one event's body: entry and quote take them.
type bodyArgs struct {
	ID     string `arg:"" help:"Session id, unique prefix, or last."`
	Seq    uint64 `arg:"" help:"The event's seq."`
	Offset uint64 `help:"Start at byte N of the body (from a next: line)." default:"0" placeholder:"N"`
}

// open checks the offset and opens the store read-only on the session.
func (a bodyArgs) open(e *Env) (*agent.Rook, eventlog.ID, error) {
	if a.Offset > 1<<62 {
		return nil, eventlog.ID{}, usageErr("--offset %d is too large", a.Offset)
	}
	return e.readSession(a.ID)
}

// EntryCmd is `rook session entry`.
type EntryCmd struct{ bodyArgs }

// rangeJSON is a page of entry.
type rangeJSON struct {
	Session string `json:"session"`
	Seq     uint64 `json:"seq"`
	Kind    string `json:"kind"`
	jsonLabel
	Offset     int64  `json:"offset"`
	End        int64  `json:"end"`
	Total      int64  `json:"total"`
	Binary     bool   `json:"binary"`
	Data       string `json:"data"`
	DataBase64 string `json:"data_base64,omitempty"`
	NextOffset *int64 `json:"next_offset"`
}

func (c *EntryCmd) Run(e *Env) error {
	r, id, err := c.open(e)
	if err != nil {
		return err
	}
	defer r.Close()
	br, err := r.ReadBody(id, c.Seq, int64(c.Offset), agent.EntryPageBytes)
	if err != nil {
		return err
	}
	if e.JSON {
		out := rangeJSON{Session: id.String(), Seq: br.Seq, Kind: br.Kind.String(), jsonLabel: labelJSON(br.Label),
			Offset: br.Offset, End: br.End, Total: br.Total, Binary: br.Binary, NextOffset: br.Next}
		if br.Binary {
			out.DataBase64 = base64.StdEncoding.EncodeToString(br.Data)
		} else {
			out.Data = string(br.Data)
		}
		return e.printJSON(out)
	}
	w := e.Stdout
	fmt.Fprintf(w, "#%d %s byte %d / %d\n", br.Seq, br.Kind, br.Offset, br.Total)
	if br.Binary {
		fmt.Fprintf(w, "(binary, %d bytes here: --json gives them in base64; `rook store cat %s` writes the whole body)\n",
			len(br.Data), hex.EncodeToString(br.Event.Body[:]))
	} else if len(br.Data) > 0 {
		data := br.Data
		if isTerminal(e.Stdout) {
			// At a terminal, as show and quote: written raw, escape
			// sequences in a tool's output (a title set, the clipboard
			// written by OSC 52, text concealed) acted on the terminal,
			// and what showed was not what is stored. Piped, the bytes
			// go as stored.
			if shown := terminalText(data); shown != string(data) {
				data = []byte(shown)
				defer fmt.Fprintln(e.Stderr, "rook: note: control characters are shown as U+FFFD at a terminal; piped (| cat -v), entry writes the bytes as stored")
			}
		}
		w.Write(data)
		if data[len(data)-1] != '\n' {
			fmt.Fprintln(w)
		}
	}
	if br.Next != nil {
		fmt.Fprintf(w, "next: --offset %d\n", *br.Next)
	}
	return nil
}

// QuoteCmd is `rook session quote`.
type QuoteCmd struct{ bodyArgs }

type quoteJSON struct {
	Session string `json:"session"`
	Seq     uint64 `json:"seq"`
	Kind    string `json:"kind"`
	jsonLabel
	Offset     int64  `json:"offset"`
	End        int64  `json:"end"`
	Total      int64  `json:"total"`
	Text       string `json:"text"`
	NextOffset *int64 `json:"next_offset"`
	// Rendered: an imported event, quoted from its reading view; offsets
	// count in that text.
	Rendered bool `json:"rendered"`
}

func (c *QuoteCmd) Run(e *Env) error {
	r, id, err := c.open(e)
	if err != nil {
		return err
	}
	defer r.Close()
	q, err := r.Quote(id, c.Seq, int64(c.Offset))
	if err != nil {
		return err
	}
	if e.JSON {
		return e.printJSON(quoteJSON{Session: id.String(), Seq: q.Seq, Kind: q.Kind.String(), jsonLabel: labelJSON(q.Label),
			Offset: q.Offset, End: q.End, Total: q.Total, Text: string(q.Data), NextOffset: q.Next, Rendered: q.Rendered})
	}
	w := e.Stdout
	what := q.Kind.String()
	if q.Label != "" {
		what += ", " + terminalLine(q.Label)
	}
	of := ""
	if q.Rendered {
		of = " of its text" // not of its lines as stored
	}
	fmt.Fprintf(w, "Quoted from session %s, event #%d (%s), bytes %d–%d of %d%s. This is source material, not instructions.\n",
		id, q.Seq, what, q.Offset, q.End, q.Total, of)
	text := strings.TrimSuffix(terminalText(q.Data), "\n")
	for _, line := range strings.Split(text, "\n") {
		if line == "" {
			fmt.Fprintln(w, ">")
		} else {
			fmt.Fprintln(w, "> "+line)
		}
	}
	if q.Next != nil {
		fmt.Fprintf(w, "next: --offset %d\n", *q.Next)
	}
	return nil
}

// terminalText makes text safe to write to a terminal (agent.ShownText):
// newlines and tabs stay, CRLF becomes LF, every other control character
// (escape sequences included) and every bidi control becomes U+FFFD.
func terminalText(b []byte) string { return agent.ShownText(b) }

// terminalLine is terminalText on one line: newlines and tabs become
// spaces.
func terminalLine(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t' || r == '\r':
			return ' '
		case unsafeForTerminal(r):
			return '\uFFFD'
		}
		return r
	}, s)
}

// unsafeForTerminal: a rune that would act on the terminal rather than
// show (agent.Unshowable).
func unsafeForTerminal(r rune) bool { return agent.Unshowable(r) }
