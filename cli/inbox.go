package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/rookhq/rook/agent"
	"github.com/rookhq/rook/agent/inbox"
	"github.com/rookhq/rook/cas"
)

// InboxCmd is `rook inbox`.
type InboxCmd struct {
	Ls       InboxLsCmd       `cmd:"" help:"The inboxes, with their notes per day and sizes (takes in waiting saves first)."`
	Show     InboxShowCmd     `cmd:"" help:"A client's note of one day: its saves, titles as headings."`
	Activity InboxActivityCmd `cmd:"" help:"Every save attempt, successful or not: time, client, size, status."`
	Pause    InboxPauseCmd    `cmd:"" help:"Refuse new saves (clients get 'paused') until resumed."`
	Resume   InboxResumeCmd   `cmd:"" help:"Take saves again."`
	Status   InboxStatusCmd   `cmd:"" help:"Paused or not, saves waiting to be taken in, the last save."`
}

// openInbox opens the store for writing, which takes the spool in; when
// another rook holds the writer lock, or this user cannot write the store
// (another account's, a read-only mount), it opens it read-only and says
// how many saves wait. It does not wait for the lock: these commands read.
func (e *Env) openInbox() (*agent.Rook, error) {
	r, err := e.openRookWait(true, 0)
	var le *cas.LockedError
	locked := errors.As(err, &le)
	if !locked && !notWritable(err) {
		return r, err
	}
	if r, err = e.openRook(false); err != nil {
		return nil, err
	}
	if st, serr := r.InboxState(); serr == nil && st.Backlog > 0 {
		if locked {
			fmt.Fprintf(e.Stderr, "rook: note: %d save(s) wait to be taken in: %v; they will be once it is done\n", st.Backlog, le)
		} else {
			fmt.Fprintf(e.Stderr, "rook: note: %d save(s) wait to be taken in, which needs an account that can write the store\n", st.Backlog)
		}
	}
	return r, nil
}

// notWritable reports whether err says this user cannot write the store
// (a store of another account, a read-only mount): reading it works.
func notWritable(err error) bool {
	return errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)
}

// InboxLsCmd is `rook inbox ls`.
type InboxLsCmd struct{}

// Run lists the inboxes.
func (c *InboxLsCmd) Run(e *Env) error {
	r, err := e.openInbox()
	if err != nil {
		return err
	}
	defer r.Close()
	if err := r.InboxDrainError(); err != nil {
		// Taking the waiting saves in is part of ls: listing the store
		// as if none waited would say "no inbox yet" over them.
		return err
	}
	list, err := r.Inboxes()
	if err != nil {
		return err
	}
	// A save whose body cannot be read is listed (counted by its event)
	// and said, after the list: exit 1, as session show does.
	var bad []string
	for _, s := range list {
		for _, d := range s.Days {
			if d.Unreadable > 0 {
				bad = append(bad, fmt.Sprintf("%s (%s) %s: %d", terminalLine(s.Title), terminalLine(s.Client), d.Date, d.Unreadable))
			}
		}
	}
	var unreadable error
	if len(bad) > 0 {
		unreadable = &exitError{code: ExitFailure, msg: fmt.Sprintf("save(s) whose bodies could not be read (the store is damaged): %s: run `rook store verify`", strings.Join(bad, "; "))}
	}
	if e.JSON {
		if list == nil {
			list = []agent.InboxSummary{}
		}
		for i := range list {
			list[i].Last = list[i].Last.UTC() // recorded in the zone mcp serve ran in
		}
		if err := e.printJSON(list); err != nil {
			return err
		}
		return unreadable
	}
	if len(list) == 0 {
		fmt.Fprintln(e.Stdout, "no inbox yet: AI clients save through `rook mcp serve` (`rook mcp install CLIENT` sets one up)")
		return nil
	}
	for _, s := range list {
		last := "" // an inbox without saves (a session tagged as one) has no last
		if !s.Last.IsZero() {
			last = ", last " + shownTime(s.Last)
		}
		fmt.Fprintf(e.Stdout, "%s (%s): %d save(s) on %d day(s)%s\n", terminalLine(s.Title), terminalLine(s.Client), s.Saves, len(s.Days), last)
		for _, d := range s.Days {
			broken := ""
			if d.Unreadable > 0 {
				broken = fmt.Sprintf(" (%d unreadable: `rook store verify`)", d.Unreadable)
			}
			fmt.Fprintf(e.Stdout, "  %s  %3d save(s)  %d character(s)%s\n", d.Date, d.Saves, d.Chars, broken)
		}
	}
	return unreadable
}

// InboxShowCmd is `rook inbox show`.
type InboxShowCmd struct {
	Client string   `arg:"" help:"The inbox: claude, codex, cursor, gemini, or the client's own name (any case)."`
	Date   nonEmpty `help:"The day, YYYY-MM-DD (default: the newest day)." placeholder:"DATE"`
}

// Run shows one day's note.
func (c *InboxShowCmd) Run(e *Env) error {
	if c.Date != "" {
		if _, err := time.Parse(time.DateOnly, string(c.Date)); err != nil {
			if !dayShape.MatchString(string(c.Date)) {
				return usageErr("--date %s: give a day as YYYY-MM-DD", c.Date)
			}
			// The shape is right: the calendar has no such day
			// (2026-02-29, 2026-11-31).
			return usageErr("--date %s: there is no such day (%s)", c.Date, strings.TrimPrefix(err.Error(), "parsing time \""+string(c.Date)+"\": "))
		}
	}
	r, err := e.openInbox()
	if err != nil {
		return err
	}
	defer r.Close()
	note, err := r.InboxShow(c.Client, string(c.Date))
	if err != nil {
		return err
	}
	if e.JSON {
		for i := range note.Saves {
			note.Saves[i].Time = note.Saves[i].Time.UTC()
		}
		return e.printJSON(note)
	}
	// What a client saved, and the name it gave, are its own words: an
	// escape sequence in them must not reach the terminal (as with session
	// bodies: U+FFFD in its place; --json keeps them exact).
	fmt.Fprintf(e.Stdout, "# %s, %s\n\n%s", terminalLine(note.Title), note.Date, terminalText([]byte(note.Text())))
	return nil
}

// dayShape is a day as --date takes it, the calendar aside.
var dayShape = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`)

// InboxActivityCmd is `rook inbox activity`.
type InboxActivityCmd struct {
	Client nonEmpty `help:"Only this inbox (short name or the client's own name, any case)." placeholder:"CLIENT"`
	Limit  int      `help:"The newest N attempts." default:"50"`
}

// Run lists save attempts, oldest first.
func (c *InboxActivityCmd) Run(e *Env) error {
	if c.Limit <= 0 {
		return usageErr("--limit must be at least 1")
	}
	if err := inbox.CheckStore(e.FS, e.Home); err != nil {
		return err
	}
	acts, err := inbox.ReadActivity(e.FS, e.Home)
	if err != nil {
		return err
	}
	// The inbox's short name, or the name a client gives itself
	// (claude-code names the claude inbox), as inbox show takes.
	short, _ := inbox.Inbox(string(c.Client))
	var out []inbox.Activity
	for _, a := range acts {
		// An attempt logged under a name an older rook kept a format
		// character in (U+202E) is the typeable name's too, as inbox
		// show finds that inbox.
		if c.Client == "" || strings.EqualFold(a.Client, string(c.Client)) || a.Client == short || inbox.TypedName(a.Client) == short {
			out = append(out, a)
		}
	}
	if len(out) > c.Limit {
		out = out[len(out)-c.Limit:]
	}
	if e.JSON {
		if out == nil {
			out = []inbox.Activity{}
		}
		for i := range out {
			out[i].Time = out[i].Time.UTC()
		}
		return e.printJSON(out)
	}
	if len(out) == 0 && c.Client != "" {
		fmt.Fprintf(e.Stdout, "no save attempts from %s (`rook inbox activity` lists every client's)\n", terminalLine(string(c.Client)))
		return nil
	}
	if len(out) == 0 {
		fmt.Fprintln(e.Stdout, "no save attempts yet")
		return nil
	}
	// The client column is as wide as its widest name, in terminal cells
	// (a name may be of wide characters, and longer than 12), so the
	// columns after it stay in line.
	clientCells := 12
	for _, a := range out {
		clientCells = max(clientCells, width(terminalLine(a.Client)))
	}
	for _, a := range out {
		detail := ""
		if a.Detail != "" {
			detail = "  " + a.Detail
		}
		// A client name an older rook recorded whole is cut as the
		// new ones are (inbox.MaxClientName).
		fmt.Fprintf(e.Stdout, "%s  %s %-18s %7d char(s)  %s\n", shownTimeSec(a.Time), padCells(terminalLine(a.Client), clientCells, false), a.Status, a.Chars, terminalLine(inbox.CutClientName(a.ClientName)+detail))
	}
	return nil
}

// InboxPauseCmd is `rook inbox pause`.
type InboxPauseCmd struct{}

// Run pauses saves.
func (c *InboxPauseCmd) Run(e *Env) error { return setPaused(e, true) }

// InboxResumeCmd is `rook inbox resume`.
type InboxResumeCmd struct{}

// Run resumes saves.
func (c *InboxResumeCmd) Run(e *Env) error { return setPaused(e, false) }

func setPaused(e *Env, paused bool) error {
	if err := inbox.SetPaused(e.FS, e.Home, paused); err != nil {
		return err
	}
	if e.JSON {
		return e.printJSON(map[string]bool{"paused": paused})
	}
	if paused {
		fmt.Fprintln(e.Stdout, "inbox paused: clients' saves are refused (`rook inbox resume` takes them again)")
	} else {
		fmt.Fprintln(e.Stdout, "inbox resumed: clients can save")
	}
	return nil
}

// InboxStatusCmd is `rook inbox status`.
type InboxStatusCmd struct{}

// Run says whether saves are taken and what waits.
func (c *InboxStatusCmd) Run(e *Env) error {
	r, err := e.openRook(false)
	if err != nil {
		return err
	}
	defer r.Close()
	st, err := r.InboxState()
	if err != nil {
		return err
	}
	st.LastFrom = inbox.CutClientName(st.LastFrom) // recorded whole by an older rook
	if e.JSON {
		st.LastSave = st.LastSave.UTC()
		return e.printJSON(st)
	}
	state := "taking saves"
	if st.Paused {
		state = "paused (`rook inbox resume` takes saves again)"
	}
	fmt.Fprintf(e.Stdout, "inbox      %s\n", state)
	fmt.Fprintf(e.Stdout, "waiting    %d save(s) not yet in the store (taken in by the next `rook inbox ls` or write)\n", st.Backlog)
	if st.LastSave.IsZero() {
		fmt.Fprintln(e.Stdout, "last save  none yet")
	} else {
		fmt.Fprintf(e.Stdout, "last save  %s from %s\n", shownTimeSec(st.LastSave), terminalLine(st.LastFrom))
	}
	for _, u := range st.Unreadable {
		// Its saves wait, uncounted above; the drain passes over it.
		fmt.Fprintf(e.Stdout, "unreadable %s\n", terminalLine(u.Advice()))
	}
	return nil
}
