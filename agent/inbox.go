package agent

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rookhq/rook/agent/inbox"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/proc"
)

// inboxLsCommand is the command that lists the inboxes: the notice of
// an open that took saves in points to it, except in it.
const inboxLsCommand = "rook inbox ls"

// Inbox notes: what AI clients saved through `rook mcp serve`. Each client
// has an inbox session (tags "inbox" and "inbox:<short name>"); each save is
// one note event in it, its body the save as JSON (content exactly as
// sent). Saves of one client on one day read as a single note.

const inboxTag = "inbox"

// InboxNote is one save, as drained into the store.
type InboxNote struct {
	ID         string    `json:"id"`
	Time       time.Time `json:"time"`
	Client     string    `json:"client"`
	ClientName string    `json:"client_name"`
	Title      string    `json:"title,omitempty"`
	Content    string    `json:"content"`
}

// DrainReport says what a drain took in.
type DrainReport struct {
	Drained int `json:"drained"` // saves appended to inbox sessions
	Skipped int `json:"skipped"` // saves already in the store (a drain cut short before)
	// Torn: the torn tails of exited servers' spool files (never
	// acknowledged saves), copied under torn/ as their files were removed.
	Torn []string `json:"torn,omitempty"`
}

// DrainInbox takes the saves waiting in the spool into the clients' inbox
// sessions: appended, made durable, then marked drained. A crash between
// the two leaves the saves in the spool; the next drain finds them at the
// end of their sessions and does not take them twice.
func (r *Rook) DrainInbox() (DrainReport, error) {
	var rep DrainReport
	prog, err := inbox.ReadProgress(r.fs, r.home)
	if err != nil {
		return rep, err
	}
	known := inbox.ProgressKnown(r.fs, r.home)
	pending, sizes, err := inbox.ReadPending(r.fs, r.home, prog)
	if err != nil || len(sizes) == 0 {
		return rep, err
	}
	for name, off := range prog {
		if size, ok := sizes[name]; ok && off > size {
			known = false // a spool file shorter than drained: read again whole
			prog[name] = 0
		}
	}
	byClient := map[string][]inbox.Pending{}
	var clients []string
	for _, p := range pending {
		if _, ok := byClient[p.Save.Client]; !ok {
			clients = append(clients, p.Save.Client)
		}
		byClient[p.Save.Client] = append(byClient[p.Save.Client], p)
	}
	for _, c := range clients {
		saves := byClient[c]
		id, err := r.inboxSession(c, saves[0].Save.ClientName)
		if err != nil {
			return rep, err
		}
		// After a drain cut short between its flush and its progress
		// file, the saves taken in are the session's last notes: only
		// those can come again. Without a progress file (first drain, or
		// removed), any note can.
		look := len(saves)
		if !known {
			look = math.MaxInt32
		}
		have, err := r.lastNoteIDs(id, look)
		if err != nil {
			return rep, err
		}
		for _, p := range saves {
			if have[p.Save.ID] {
				rep.Skipped++
				continue
			}
			body, err := json.Marshal(InboxNote{ID: p.Save.ID, Time: p.Save.Time, Client: p.Save.Client, ClientName: p.Save.ClientName, Title: p.Save.Title, Content: p.Save.Content})
			if err != nil {
				return rep, err
			}
			label := p.Save.Title
			if label == "" {
				label = "note"
			}
			// The title an MCP client gave, as the label: relabeled as an
			// import's are, rather than stop every drain at this save.
			evs, err := r.putEntries([]Entry{{Kind: eventlog.KindNote, Label: capLabel(label), Body: body, Time: p.Save.Time}})
			if err != nil {
				return rep, err
			}
			if _, err := appendRelabeling(r.Log, id, evs); err != nil {
				return rep, err
			}
			rep.Drained++
		}
	}
	if err := r.Flush(); err != nil {
		return rep, err
	}
	for _, p := range pending {
		prog[p.File] = max(prog[p.File], p.End)
	}
	for name := range sizes {
		if _, ok := prog[name]; !ok {
			prog[name] = 0
		}
	}
	torn, err := inbox.RemoveDrained(r.fs, r.home, prog, sizes, writerRunning)
	rep.Torn = torn
	if err != nil {
		return rep, err
	}
	return rep, inbox.WriteProgress(r.fs, r.home, prog)
}

// writerRunning reports whether the server process that writes a spool
// or activity file may still append to it.
func writerRunning(name string) bool {
	pid := inbox.ProcessPID(name)
	return pid > 0 && proc.Running(pid)
}

// inboxSession finds or starts the inbox session of a client.
func (r *Rook) inboxSession(short, clientName string) (eventlog.ID, error) {
	if id, ok, err := r.findInbox(short); err != nil || ok {
		return id, err
	}
	_, title := inbox.Inbox(clientName)
	m, err := r.Log.Create(eventlog.Meta{Title: title, Tags: []string{inboxTag, inboxTag + ":" + short}})
	return m.ID, err
}

// findInbox finds a client's inbox session by its short name. An inbox
// has both tags, "inbox" and "inbox:<client>" (inboxSession makes it so): a
// session the user tagged "inbox:todo" alone, a label of their own, is no
// inbox (it was: the client's saves went into it, and `inbox ls` listed it).
func (r *Rook) findInbox(short string) (eventlog.ID, bool, error) {
	list, err := r.sessionsTagged(inboxTag, true)
	if err != nil {
		return eventlog.ID{}, false, err
	}
	short = strings.ToLower(short)
	for _, s := range list {
		if s.Name == short {
			return s.ID, true, nil
		}
	}
	// An inbox named before format characters (U+202E) were dropped from
	// names keeps its stored name, and is found by the typeable one too:
	// `inbox show evil` shows it, and the client's new saves join it.
	for _, s := range list {
		if short != "" && strings.TrimSpace(inbox.Typeable(s.Name)) == short {
			return s.ID, true, nil
		}
	}
	return eventlog.ID{}, false, nil
}

// lastNoteIDs returns the save ids of a session's last n notes.
func (r *Rook) lastNoteIDs(id eventlog.ID, n int) (map[string]bool, error) {
	s, err := r.Log.Summary(id)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for before := s.Events; before > 0 && n > 0; {
		evs, err := r.Log.ReadBefore(id, before, min(n, 1024))
		if err != nil || len(evs) == 0 {
			return out, err
		}
		for _, ev := range evs {
			if note, err := r.inboxNote(ev); err == nil {
				out[note.ID] = true
			}
		}
		n -= len(evs)
		before = evs[0].Seq
	}
	return out, nil
}

func (r *Rook) inboxNote(ev eventlog.Event) (InboxNote, error) {
	var n InboxNote
	b, err := r.Body(ev)
	if err != nil {
		return n, err
	}
	err = json.Unmarshal(b, &n)
	return n, err
}

// InboxSummary describes one client's inbox.
type InboxSummary struct {
	Client  string      `json:"client"` // short name
	Title   string      `json:"title"`
	Session eventlog.ID `json:"session"`
	Saves   int         `json:"saves"`
	Days    []InboxDay  `json:"days"` // newest first; [] for an inbox without saves
	// Last: its newest save's time; omitzero: an inbox without saves (a
	// session the user tagged as one) has none, and "0001-01-01" would
	// read as a save.
	Last time.Time `json:"last,omitzero"`
}

// InboxDay is one day's note of an inbox: every save of that day.
type InboxDay struct {
	Date  string `json:"date"` // YYYY-MM-DD, local time
	Saves int    `json:"saves"`
	Chars int    `json:"chars"`
}

// Inboxes lists the inboxes, each with its notes per day. It drains the
// spool first when the store is open for writing.
func (r *Rook) Inboxes() ([]InboxSummary, error) {
	list, err := r.sessionsTagged(inboxTag, true) // both tags, as findInbox
	if err != nil {
		return nil, err
	}
	var out []InboxSummary
	for _, ts := range list {
		id, m, short := ts.ID, ts.Meta, ts.Name
		notes, err := r.inboxNotes(id)
		if err != nil {
			return nil, err
		}
		sum := InboxSummary{Client: short, Title: m.Title, Session: id, Saves: len(notes), Days: []InboxDay{}}
		days := map[string]*InboxDay{}
		for _, n := range notes {
			d := n.Time.Local().Format(time.DateOnly)
			if days[d] == nil {
				days[d] = &InboxDay{Date: d}
			}
			days[d].Saves++
			days[d].Chars += len([]rune(n.Content))
			if n.Time.After(sum.Last) {
				sum.Last = n.Time
			}
		}
		for _, d := range days {
			sum.Days = append(sum.Days, *d)
		}
		sort.Slice(sum.Days, func(i, j int) bool { return sum.Days[i].Date > sum.Days[j].Date })
		out = append(out, sum)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Client < out[j].Client })
	return out, nil
}

// inboxNotes reads every note of an inbox session, in order.
func (r *Rook) inboxNotes(id eventlog.ID) ([]InboxNote, error) {
	var out []InboxNote
	for from := uint64(0); ; {
		evs, err := r.Log.Read(id, from, 1024)
		if err != nil {
			return nil, err
		}
		if len(evs) == 0 {
			return out, nil
		}
		for _, ev := range evs {
			n, err := r.inboxNote(ev)
			if err != nil || n.ID == "" {
				continue // not a save (an event added to the session by hand)
			}
			out = append(out, n)
		}
		from = evs[len(evs)-1].Seq + 1
	}
}

// InboxDayNote is one day's note of a client: its saves in their saved
// time order.
type InboxDayNote struct {
	Client string      `json:"client"`
	Title  string      `json:"title"`
	Date   string      `json:"date"`
	Saves  []InboxNote `json:"saves"`
}

// Text renders the day's note: each save's title as a heading, then its
// content exactly as saved.
func (d InboxDayNote) Text() string {
	var b strings.Builder
	for i, s := range d.Saves {
		if i > 0 {
			b.WriteString("\n")
		}
		if s.Title != "" {
			fmt.Fprintf(&b, "## %s\n\n", s.Title)
		}
		b.WriteString(s.Content)
		if !strings.HasSuffix(s.Content, "\n") {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// ErrNoInbox: no inbox of that name.
var ErrNoInbox = fmt.Errorf("no such inbox")

// InboxShow returns a client's note of one day (date "": its newest day,
// the day of its newest save), the saves in their saved time order.
func (r *Rook) InboxShow(client, date string) (InboxDayNote, error) {
	short := strings.ToLower(strings.TrimSpace(client))
	if short == "" {
		// A "$CLIENT" left unset: input to fix, not an inbox to look for.
		return InboxDayNote{}, badArgument("an empty inbox name: give claude, codex, cursor, gemini or the client's own name (`rook inbox ls` lists the inboxes)")
	}
	id, ok, err := r.findInbox(short)
	if err == nil && !ok && short != "" {
		// The name a client gives itself (claude-code, Claude Desktop,
		// what `inbox activity` shows) names its inbox too.
		short, _ = inbox.Inbox(client)
		id, ok, err = r.findInbox(short)
	}
	if err != nil {
		return InboxDayNote{}, err
	}
	if !ok {
		return InboxDayNote{}, fmt.Errorf("%w %q: `rook inbox ls` lists the inboxes", ErrNoInbox, client)
	}
	m, err := r.Log.ReadMeta(id)
	if err != nil {
		return InboxDayNote{}, err
	}
	notes, err := r.inboxNotes(id)
	if err != nil {
		return InboxDayNote{}, err
	}
	// The session holds the saves in the order they were taken in: spool
	// files in name order (each server process's start time), then line
	// order. Two processes for one inbox (Claude Desktop since the
	// morning, Claude Code since the evening) interleave, so the last save
	// taken in need not be the newest. The stored events stay as appended;
	// the day and its order come from the saves' own times. Saves of equal
	// times keep the order they were taken in (a stable sort).
	slices.SortStableFunc(notes, func(a, b InboxNote) int { return a.Time.Compare(b.Time) })
	if date == "" && len(notes) > 0 {
		date = notes[len(notes)-1].Time.Local().Format(time.DateOnly)
	}
	out := InboxDayNote{Client: short, Title: m.Title, Date: date}
	for _, n := range notes {
		if n.Time.Local().Format(time.DateOnly) == date {
			out.Saves = append(out.Saves, n)
		}
	}
	if len(notes) == 0 {
		// A session the user tagged as an inbox, into which no client
		// has saved: there is no newest day to show.
		return out, fmt.Errorf("%s has no saves yet: `rook inbox ls` lists the inboxes and their days", m.Title)
	}
	if len(out.Saves) == 0 {
		return out, fmt.Errorf("%s has no note on %s: `rook inbox ls` lists its days", m.Title, date)
	}
	return out, nil
}

// InboxStatus is whether saves are taken, and what waits to be drained.
type InboxStatus struct {
	Paused  bool `json:"paused"`
	Backlog int  `json:"backlog"` // saves in the spool not yet in the store
	// omitzero: omitempty never omits a struct, and "0001-01-01" would
	// read as a save.
	LastSave time.Time `json:"last_save,omitzero"`
	// LastFrom: the name the last save's client sent, or "unknown
	// client" (the inbox its saves went to) when it sent none.
	LastFrom string `json:"last_from,omitempty"`
}

// InboxState reports the inbox's status without changing anything.
func (r *Rook) InboxState() (InboxStatus, error) {
	st := InboxStatus{Paused: inbox.Paused(r.fs, r.home)}
	prog, err := inbox.ReadProgress(r.fs, r.home)
	if err != nil {
		return st, err
	}
	pending, _, err := inbox.ReadPending(r.fs, r.home, prog)
	if err != nil {
		return st, err
	}
	st.Backlog = len(pending)
	acts, err := inbox.ReadActivity(r.fs, r.home)
	if err != nil {
		return st, err
	}
	for _, a := range acts {
		if a.Status == "saved" {
			st.LastSave, st.LastFrom = a.Time, a.ClientName
			if strings.TrimSpace(inbox.Typeable(a.ClientName)) == "" {
				// No name (or none to show): its saves go to the
				// "unknown client" inbox, and are from it.
				st.LastFrom = inbox.UnknownClient
			}
		}
	}
	return st, nil
}
