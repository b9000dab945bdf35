package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

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
	// Damaged: copies under torn/ of spool lines that failed their
	// checksum before other saves of their file (inbox.Spool.Damaged).
	Damaged []string `json:"damaged,omitempty"`
	// Unreadable: spool files the drain could not read; their saves wait,
	// every other file's were taken in.
	Unreadable []inbox.Unreadable `json:"unreadable,omitempty"`
}

// DrainInbox takes the saves waiting in the spool into the clients' inbox
// sessions: appended, made durable, then marked drained. A crash between
// the two leaves the saves in the spool; the next drain finds them at the
// end of their sessions and does not take them twice. The spool is listed
// first without the saves' contents (inbox.ReadSpool), then each save is
// read back whole, appended and let go (inbox.SaveReader): the drain holds
// one save at a time, not the backlog.
func (r *Rook) DrainInbox() (DrainReport, error) {
	var rep DrainReport
	prog, err := inbox.ReadProgress(r.fs, r.home)
	if err != nil {
		return rep, err
	}
	known := inbox.ProgressKnown(r.fs, r.home)
	spool, err := inbox.ReadSpool(r.fs, r.home, prog)
	rep.Unreadable = spool.Unreadable
	pending, sizes := spool.Pending, spool.Sizes
	if err != nil || len(sizes) == 0 {
		return rep, err
	}
	for name, off := range prog {
		if size, ok := sizes[name]; ok && off > size {
			known = false // a spool file shorter than drained: read again whole
			prog[name] = 0
		}
	}
	waiting := map[string]int{} // each client's saves waiting
	for _, p := range pending {
		waiting[p.Save.Client]++
	}
	type inboxAt struct {
		id   eventlog.ID
		have map[string]bool // the saves already in it that can come again
	}
	inboxes := map[string]*inboxAt{}
	rd := inbox.NewSaveReader(r.fs, r.home)
	defer rd.Close()
	taken := map[string]int64{}  // each file's offset past the saves taken in
	changed := map[string]bool{} // files that changed under the drain
	for _, p := range pending {
		if changed[p.File] {
			continue
		}
		c := p.Save.Client
		in := inboxes[c]
		if in == nil {
			id, err := r.inboxSession(c, p.Save.ClientName)
			if err != nil {
				return rep, err
			}
			// After a drain cut short between its flush and its progress
			// file, the saves taken in are the session's last notes: only
			// those can come again. Without a progress file (first drain,
			// or removed), any note can.
			look := waiting[c]
			if !known {
				look = math.MaxInt32
			}
			have, err := r.lastNoteIDs(id, look)
			if err != nil {
				return rep, err
			}
			in = &inboxAt{id: id, have: have}
			inboxes[c] = in
		}
		if in.have[p.Save.ID] {
			rep.Skipped++
			taken[p.File] = p.End
			continue
		}
		save, err := rd.Read(p)
		if errors.Is(err, inbox.ErrSpoolChanged) {
			// A writer cut a save it could not sync off its file after
			// the listing: the file's offset stays before it, and the
			// next drain reads the rest of the file again.
			changed[p.File] = true
			continue
		}
		if err != nil {
			return rep, err
		}
		body, err := json.Marshal(InboxNote{ID: save.ID, Time: save.Time, Client: save.Client, ClientName: save.ClientName, Title: save.Title, Content: save.Content})
		if err != nil {
			return rep, err
		}
		label := save.Title
		if label == "" {
			label = "note"
		}
		// The title an MCP client gave, as the label: relabeled as an
		// import's are, rather than stop every drain at this save.
		evs, err := r.putEntries([]Entry{{Kind: eventlog.KindNote, Label: capLabel(label), Body: body, Time: save.Time}})
		if err != nil {
			return rep, err
		}
		if _, err := appendRelabeling(r.Log, in.id, evs); err != nil {
			return rep, err
		}
		rep.Drained++
		taken[p.File] = p.End
	}
	if err := r.Flush(); err != nil {
		return rep, err
	}
	for name, end := range taken {
		prog[name] = max(prog[name], end)
	}
	// A damaged line before a save of its file: the offset moves past it
	// now, so its bytes are kept (once) before the file can be removed.
	for _, d := range spool.Damaged {
		if prog[d.File] < d.End {
			continue // a file replaced: read again whole next time
		}
		kept, err := inbox.KeepDamaged(r.fs, r.home, d)
		if err != nil {
			return rep, err
		}
		rep.Damaged = append(rep.Damaged, kept)
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
	// The title comes from the name the save recorded, as its short name
	// did (inbox.Inbox, one name for both). A name recorded by a rook that
	// cut it before cleaning it (70 spaces, then "Zed Editor": 64 spaces)
	// names no inbox, or another: the short name, which the server took
	// from the whole name, titles it then, never "unknown client".
	s, title := inbox.Inbox(clientName)
	if s != short {
		title = short + " Inbox"
	}
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
	// names, or before Unicode spaces (U+00A0) were made ASCII ones, keeps
	// its stored name, and is found by the typeable one too: `inbox show
	// evil` shows it, and the client's new saves join it.
	typed := inbox.TypedName(short)
	for _, s := range list {
		if typed != "" && inbox.TypedName(s.Name) == typed {
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

// readSave reads a note event of an inbox session as a save: ok false
// for an event that is none (added to the session by hand); err when its
// body cannot be read (a damaged segment), which is no proof it is none.
func (r *Rook) readSave(ev eventlog.Event) (n InboxNote, ok bool, err error) {
	if ev.Kind != eventlog.KindNote {
		return n, false, nil // the drain appends notes only
	}
	b, err := r.Body(ev)
	if err != nil {
		return n, false, err
	}
	if json.Unmarshal(b, &n) != nil || n.ID == "" {
		return n, false, nil
	}
	return n, true, nil
}

// localDay is the day of t, YYYY-MM-DD in local time: a save's day. A
// note event's time is its save's to the millisecond, which never moves it
// across midnight: the day of the event is the day of its save.
func localDay(t time.Time) string { return t.Local().Format(time.DateOnly) }

// InboxSummary describes one client's inbox.
type InboxSummary struct {
	Client  string      `json:"client"` // short name
	Title   string      `json:"title"`
	Session eventlog.ID `json:"session"`
	Saves   int         `json:"saves"` // unreadable ones included
	Days    []InboxDay  `json:"days"`  // newest first; [] for an inbox without saves
	// Last: its newest save's time; omitzero: an inbox without saves (a
	// session the user tagged as one) has none, and "0001-01-01" would
	// read as a save.
	Last time.Time `json:"last,omitzero"`
	// Unreadable: saves whose bodies could not be read (a damaged
	// segment): counted by their events, their characters unknown.
	Unreadable int `json:"unreadable,omitempty"`
}

// InboxDay is one day's note of an inbox: every save of that day.
type InboxDay struct {
	Date       string `json:"date"` // YYYY-MM-DD, local time
	Saves      int    `json:"saves"`
	Chars      int    `json:"chars"`                // of the saves that read
	Unreadable int    `json:"unreadable,omitempty"` // saves whose bodies could not be read
}

// Inboxes lists the inboxes, each with its notes per day. A save's body
// is read to count its characters and let go: no more than one save is
// held at a time, whatever the inbox's history. A save whose body cannot
// be read is counted (by its event: its day and time) as unreadable,
// never as no save.
func (r *Rook) Inboxes() ([]InboxSummary, error) {
	list, err := r.sessionsTagged(inboxTag, true) // both tags, as findInbox
	if err != nil {
		return nil, err
	}
	var out []InboxSummary
	for _, ts := range list {
		id, m, short := ts.ID, ts.Meta, ts.Name
		sum := InboxSummary{Client: short, Title: m.Title, Session: id, Days: []InboxDay{}}
		days := map[string]*InboxDay{}
		err := r.eachEvent(id, func(ev eventlog.Event) error {
			n, ok, err := r.readSave(ev)
			if err != nil {
				n.Time = ev.Time
			} else if !ok {
				return nil
			}
			d := localDay(n.Time)
			if days[d] == nil {
				days[d] = &InboxDay{Date: d}
			}
			days[d].Saves++
			sum.Saves++
			if err != nil {
				days[d].Unreadable++
				sum.Unreadable++
			} else {
				days[d].Chars += utf8.RuneCountInString(n.Content)
			}
			if n.Time.After(sum.Last) {
				sum.Last = n.Time
			}
			return nil
		})
		if err != nil {
			return nil, err
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
	if date == "" {
		if date, err = r.newestDay(id); err != nil {
			return InboxDayNote{}, err
		}
	}
	out := InboxDayNote{Client: short, Title: m.Title, Date: date}
	if date == "" {
		// A session the user tagged as an inbox, into which no client
		// has saved: there is no newest day to show.
		return out, fmt.Errorf("%s has no saves yet: `rook inbox ls` lists the inboxes and their days", m.Title)
	}
	// Only the bodies of the day shown are read (an event's day is its
	// save's: localDay), one at a time.
	unreadable := 0
	err = r.eachEvent(id, func(ev eventlog.Event) error {
		if localDay(ev.Time) != date {
			return nil
		}
		n, ok, err := r.readSave(ev)
		switch {
		case err != nil:
			unreadable++
		case ok && localDay(n.Time) == date:
			out.Saves = append(out.Saves, n)
		}
		return nil
	})
	if err != nil {
		return InboxDayNote{}, err
	}
	if unreadable > 0 {
		// A damaged save never reads as no save, nor is a day shown
		// without it.
		return InboxDayNote{}, fmt.Errorf("%s (%s): %d save(s) of %s could not be read (the store is damaged): run `rook store verify`", m.Title, short, unreadable, date)
	}
	// The session holds the saves in the order they were taken in: spool
	// files in name order (each server process's start time), then line
	// order. Two processes for one inbox (Claude Desktop since the
	// morning, Claude Code since the evening) interleave, so the last save
	// taken in need not be the newest. The stored events stay as appended;
	// the day and its order come from the saves' own times. Saves of equal
	// times keep the order they were taken in (a stable sort).
	slices.SortStableFunc(out.Saves, func(a, b InboxNote) int { return a.Time.Compare(b.Time) })
	if len(out.Saves) == 0 {
		if any, err := r.hasSave(id); err != nil {
			return out, err
		} else if !any {
			return out, fmt.Errorf("%s has no saves yet: `rook inbox ls` lists the inboxes and their days", m.Title)
		}
		return out, fmt.Errorf("%s has no note on %s: `rook inbox ls` lists its days", m.Title, date)
	}
	return out, nil
}

// noteTimes returns the times and events of a session's note events,
// newest first (the saves' times: see localDay), without their bodies.
func (r *Rook) noteTimes(id eventlog.ID) ([]eventlog.Event, error) {
	var evs []eventlog.Event
	err := r.eachEvent(id, func(ev eventlog.Event) error {
		if ev.Kind == eventlog.KindNote {
			ev.Label = "" // not needed: hold less
			evs = append(evs, ev)
		}
		return nil
	})
	slices.SortStableFunc(evs, func(a, b eventlog.Event) int { return b.Time.Compare(a.Time) })
	return evs, err
}

// newestDay is the day of an inbox's newest save ("" when it has none),
// reading bodies newest first only until one is a save. A save whose
// body cannot be read has its event's day: showing it says so.
func (r *Rook) newestDay(id eventlog.ID) (string, error) {
	evs, err := r.noteTimes(id)
	if err != nil {
		return "", err
	}
	for _, ev := range evs {
		n, ok, err := r.readSave(ev)
		if err != nil {
			return localDay(ev.Time), nil
		}
		if ok {
			return localDay(n.Time), nil
		}
	}
	return "", nil
}

// hasSave reports whether an inbox has a save (or an unreadable one).
func (r *Rook) hasSave(id eventlog.ID) (bool, error) {
	day, err := r.newestDay(id)
	return day != "", err
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
	// Unreadable: spool files that could not be read; their saves wait
	// (not counted in Backlog), and each drain says so until they can be.
	Unreadable []inbox.Unreadable `json:"unreadable,omitempty"`
}

// InboxState reports the inbox's status without changing anything.
func (r *Rook) InboxState() (InboxStatus, error) {
	st := InboxStatus{Paused: inbox.Paused(r.fs, r.home)}
	prog, err := inbox.ReadProgress(r.fs, r.home)
	if err != nil {
		return st, err
	}
	spool, err := inbox.ReadSpool(r.fs, r.home, prog)
	if err != nil {
		return st, err
	}
	st.Backlog, st.Unreadable = len(spool.Pending), spool.Unreadable
	acts, err := inbox.ReadActivity(r.fs, r.home)
	if err != nil {
		return st, err
	}
	for _, a := range acts {
		if a.Status == "saved" {
			st.LastSave, st.LastFrom = a.Time, a.ClientName
			if inbox.TypedName(inbox.CutClientName(a.ClientName)) == "" {
				// No name to show (none sent, or blanks a rook cut it
				// to before it cleaned names): the client is its
				// inbox's, "unknown client" for one that sent no name.
				st.LastFrom = a.Client
				if inbox.TypedName(a.Client) == "" {
					st.LastFrom = inbox.UnknownClient
				}
			}
		}
	}
	return st, nil
}

// InboxDrainError says why the open's drain could not take the waiting
// saves in (nil when it did, or did not run): `inbox ls` fails with it,
// rather than list the store as if nothing waited.
func (r *Rook) InboxDrainError() error { return r.drainErr }
