package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-runewidth"
	"golang.org/x/term"

	"github.com/rookhq/rook/internal/units"
)

// formatBytes prints n in base-1024 units: "512 B", "1.5 KiB".
func formatBytes(n int64) string { return units.Bytes(n) }

// cells measures text as a terminal draws it: an East Asian wide or
// fullwidth character takes two cells, a combining mark or a zero-width
// character none, a grapheme cluster (a letter and its accents, an emoji
// sequence) what it draws. Characters of ambiguous width take one, in
// every locale ($LANG is not read): the rules and bars rook draws are of
// them, and a table reads the same wherever it is printed. Counted in
// runes, a column after a Japanese title stood three cells right of the
// others, one after "é" written e + U+0301 one cell left.
var cells = &runewidth.Condition{StrictEmojiNeutral: true}

// width is the number of terminal cells s takes.
func width(s string) int { return cells.StringWidth(s) }

// padCells pads s with spaces to n cells (padded on the left when right).
func padCells(s string, n int, right bool) string {
	pad := strings.Repeat(" ", max(n-width(s), 0))
	if right {
		return pad + s
	}
	return s + pad
}

// table prints space-padded columns with a rule under the header.
type table struct {
	rows  [][]string
	right map[int]bool // right-aligned columns
}

func (t *table) add(cells ...string) {
	row := make([]string, len(cells))
	for i, c := range cells {
		// Titles, paths and workspaces come from transcripts and file
		// names, which may hold escape sequences that would clear the
		// screen or set the window's title.
		row[i] = terminalLine(c)
	}
	t.rows = append(t.rows, row)
}

// write returns the first write error: a full disk or a closed stdout
// must fail the command, not end it with exit 0 and half a table.
func (t *table) write(w io.Writer) error {
	if len(t.rows) == 0 {
		return nil
	}
	widths := make([]int, len(t.rows[0]))
	for _, r := range t.rows {
		for i, c := range r {
			widths[i] = max(widths[i], width(c))
		}
	}
	// Buffered: a write per row was a system call per row, 5,000 of
	// them for a long session ls.
	bw := bufio.NewWriter(w)
	total := 0
	for i, r := range t.rows {
		var b strings.Builder
		for j, c := range r {
			if j > 0 {
				b.WriteString("  ")
			}
			if t.right[j] || j < len(r)-1 {
				b.WriteString(padCells(c, widths[j], t.right[j]))
			} else {
				b.WriteString(c)
			}
		}
		line := b.String()
		if _, err := fmt.Fprintln(bw, line); err != nil {
			return err
		}
		if i == 0 {
			total = width(line)
			if _, err := fmt.Fprintln(bw, strings.Repeat("─", total)); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}

// outputWriter is standard output as every command writes it: it keeps
// the first write that failed, and Main exits non-zero with it. Most
// status lines are printed with an unchecked Fprintf, so `rook store stat
// > /dev/full` exited 0 with nothing written; checked here, once, no
// command can forget. After a failure it writes nothing more: an output
// with a hole in the middle (a disk freed meanwhile) would read as whole.
type outputWriter struct {
	w   io.Writer
	err error
}

func (o *outputWriter) Write(p []byte) (int, error) {
	if o.err != nil {
		return 0, o.err
	}
	n, err := o.w.Write(p)
	if err != nil {
		o.err = err
	}
	return n, err
}

// stdoutLost says whether w, a command's standard output, failed a
// write: what the command printed did not all arrive.
func stdoutLost(w io.Writer) bool {
	o, ok := w.(*outputWriter)
	return ok && o.err != nil
}

// failure is the error a command that ended with err exits with: its own
// (a verify's problems, a tool's error), else the output's. When both
// failed, the lost output is a note on stderr before the command's error:
// its verdict is the exit, and the last line under --json.
func (o *outputWriter) failure(err error, stderr io.Writer) error {
	switch {
	case o.err == nil:
		return err
	case err == nil || errors.Is(err, o.err): // a table or printJSON returned it
		return &outputError{err: o.err, alone: true}
	}
	fmt.Fprintf(stderr, "rook: note: %s\n", explainOutput(&outputError{err: o.err}))
	return err
}

// outputError: standard output did not take all of what rook wrote (a
// full disk, a pipe closed early, a file it may not grow). The command's
// work was done: output comes after it, as nothing below the CLI prints.
type outputError struct {
	err   error
	alone bool // nothing else failed
}

func (e *outputError) Error() string { return e.err.Error() }
func (e *outputError) Unwrap() error { return e.err }

// progress draws a one-line progress meter on a terminal and nothing when
// stderr is piped.
type progress struct {
	w     io.Writer
	on    bool
	label string
	unit  string // what done and total count; "": bytes
	last  time.Time
	// drawn: the meter is on the line now. done clears only then: a
	// stage that drew nothing left a "\r\x1b[K" of its own, a blank
	// clear for each.
	drawn bool
}

func newProgress(w io.Writer, label string) *progress {
	return &progress{w: w, label: label, on: isTerminal(w)}
}

func (p *progress) update(done, total int64) {
	if !p.on {
		return
	}
	now := time.Now()
	if now.Sub(p.last) < 100*time.Millisecond && done < total {
		return
	}
	p.last, p.drawn = now, true
	pct := 100.0
	if total > 0 {
		pct = float64(done) * 100 / float64(total)
	}
	if p.unit != "" {
		fmt.Fprintf(p.w, "\r%s: %5.1f%%  %d of %d %s\x1b[K", p.label, pct, done, total, p.unit)
		return
	}
	fmt.Fprintf(p.w, "\r%s: %5.1f%%  %s of %s\x1b[K", p.label, pct, formatBytes(done), formatBytes(total))
}

func (p *progress) done() {
	if p.on && p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
	p.drawn = false
}

// then is the update of a meter drawn over p's line once it starts: p is
// no longer on the line, and its done must not clear next's.
func (p *progress) then(next *progress) func(done, total int64) {
	return func(done, total int64) {
		p.drawn = false
		next.update(done, total)
	}
}

// stdinHint tells a user at a terminal that rook now reads what they type:
// without it, a command given no FILE sat waiting with no word of why.
// what is what the input becomes ("the bytes to store"), instead how to
// name a file ("give a FILE").
func (e *Env) stdinHint(what, instead string) {
	if isTerminal(e.Stdin) {
		fmt.Fprintf(e.Stderr, "rook: reading %s from standard input; end it with Ctrl-D (or %s)\n", what, instead)
	}
}

// isTerminal reports whether v is a terminal: progress meters, colour and
// questions only go to one.
func isTerminal(v any) bool {
	if o, ok := v.(*outputWriter); ok {
		v = o.w
	}
	f, ok := v.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// shownTime is how a time is shown to a person, to the minute: in the
// local time zone ($TZ, else the system's), as ls and git log show
// times, so that a session's "updated" reads as the user's clock did.
// --json gives times in UTC (RFC 3339), for scripts.
func shownTime(t time.Time) string { return t.Local().Format("2006-01-02 15:04") }

// shownTimeSec is shownTime, to the second.
func shownTimeSec(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05") }
