// Package agent is the session model built on the store: sessions whose
// events name body objects, and the views a user gets of them (pages,
// search, quotes, context cost, exports). It returns values; the CLI renders
// them.
package agent

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rookhq/rook/agent/inbox"
	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/clock"
	"github.com/rookhq/rook/internal/vfs"
)

// Options open a Rook.
type Options struct {
	FS       vfs.FS
	Clock    clock.Clock
	Writable bool
	Command  string // the writer's description for the lock file (the command line's words, "rook inbox ls")
	// LockWait and LockWaiting: how a writer waits for the writer lock
	// (cas.Options).
	LockWait    time.Duration
	LockWaiting func(holder string)
	// BarrierEvery overrides the event log's barrier interval (tests).
	BarrierEvery int
}

// BadArgumentError: a value the caller gave is not one the command takes
// (a name, a limit): the CLI's usage error, exit 2, as a flag of the wrong
// shape is.
type BadArgumentError struct{ msg string }

func (e *BadArgumentError) Error() string { return e.msg }

func badArgument(format string, a ...any) error {
	return &BadArgumentError{msg: fmt.Sprintf(format, a...)}
}

// Rook is an open store with its sessions.
type Rook struct {
	Store *cas.Store
	Log   *eventlog.Log
	clock clock.Clock
	fs    vfs.FS
	home  string
	// notices are what Open did besides opening (the inbox drain).
	notices []string
	// drainErr: why the open's drain could not take the waiting saves in
	// (InboxDrainError).
	drainErr error
	// readTo, set only on the scratch store Reread imports into, has
	// each source file named in it read as its first n bytes (of its
	// decompressed stream for .zst): where an import of the store being
	// repaired stopped reading it (rereadStops).
	readTo map[string]int64
	// reportedIDs are the sessions whose records of lines that did not
	// parse an import reported (Rook.reported): clearReported clears them.
	reportedIDs []eventlog.ID
}

// Open opens the store at home and its event logs.
func Open(home string, opts Options) (*Rook, error) {
	if opts.Clock == nil {
		opts.Clock = clock.System
	}
	s, err := cas.Open(home, cas.Options{FS: opts.FS, Clock: opts.Clock, Writable: opts.Writable, Command: opts.Command,
		LockWait: opts.LockWait, LockWaiting: opts.LockWaiting})
	if err != nil {
		return nil, err
	}
	fsys := opts.FS
	if fsys == nil {
		fsys = vfs.OS
	}
	if err := MissingSessionsDir(fsys, home); opts.Writable && err != nil {
		s.Close()
		return nil, err
	}
	l, err := eventlog.Open(filepath.Join(home, cas.EventsDir), eventlog.Options{
		FS: opts.FS, Clock: opts.Clock, Writable: opts.Writable, BarrierEvery: opts.BarrierEvery,
		BeforeBarrier: s.Barrier, TornDir: filepath.Join(home, cas.TornDir),
	})
	if err != nil {
		s.Close()
		return nil, err
	}
	if opts.FS == nil {
		opts.FS = vfs.OS
	}
	r := &Rook{Store: s, Log: l, clock: opts.Clock, fs: opts.FS, home: home}
	if opts.Writable {
		// Under the writer lock, so no two rooks merge at once. Before
		// the drain, which removes the spool files that tell an exited
		// server's activity file from a live one's (inbox.MergeActivity).
		if err := inbox.MergeActivity(r.fs, home, writerRunning); err != nil {
			r.notices = append(r.notices, fmt.Sprintf("inbox: the activity logs of exited servers in %s were not merged: %v", inbox.Dir(home), err))
		}
		// Notes AI clients saved while no writer had the store come in now.
		rep, err := r.DrainInbox()
		if err != nil {
			r.drainErr = fmt.Errorf("saves waiting in %s were not taken in: %w", inbox.Dir(home), err)
			if opts.Command != inboxLsCommand { // which fails with it
				r.notices = append(r.notices, "inbox: "+r.drainErr.Error())
			}
		} else if rep.Drained > 0 {
			note := fmt.Sprintf("inbox: took in %d note(s) AI clients saved", rep.Drained)
			if opts.Command != inboxLsCommand { // which lists them next
				note += " (`rook inbox ls`)"
			}
			r.notices = append(r.notices, note)
		}
		for _, t := range rep.Torn {
			r.notices = append(r.notices, fmt.Sprintf("inbox: an exited server's spool file ended in a torn save (never acknowledged to its client); its bytes are kept in %s and the file removed", t))
		}
		for _, d := range rep.Damaged {
			r.notices = append(r.notices, fmt.Sprintf("inbox: a spool line failed its checksum before other saves (damaged on disk after it was saved, or a save that failed and was never acknowledged): it was not taken in; its bytes are kept in %s", d))
		}
		for _, u := range rep.Unreadable {
			r.notices = append(r.notices, "inbox: "+u.Advice())
		}
		r.notices = append(r.notices, r.closeLeftOpenAtOpen()...)
	}
	return r, nil
}

// closeLeftOpenAtOpen gives the workspace directories a rewind that
// stopped left open to search them (rewindOpenedFile) their modes back,
// as a writer's open repairs what a crashed writer left: under the lock,
// no rewind is running. Only the next rewind did, and a user who wants
// no rewind had no way out but chmod by hand. What it did, or why it
// could not (the directories stay recorded, and doctor names them), is a
// notice: the open goes on.
func (r *Rook) closeLeftOpenAtOpen() []string {
	dirs, err := LeftOpen(r.fs, r.home)
	if err == nil && len(dirs) == 0 {
		return nil
	}
	// A record that does not read: closeLeftOpen's error says what to do.
	if err := r.closeLeftOpen(); err != nil {
		return []string{fmt.Sprintf("rewind: %v", err)}
	}
	return []string{fmt.Sprintf("rewind: gave %d workspace director(ies) a rewind that stopped had opened to search them (u+x) their modes back: %s", len(dirs), strings.Join(dirs, ", "))}
}

// MissingSessionsDir says, as an error, when the store's sessions'
// directory is gone. init makes it and nothing removes it. Gone (by hand,
// a backup restored without it), a writer's event log would make it anew,
// empty, and the next gc would collect every object the sessions named
// before they could be put back: no writer opens (Open), and doctor says
// so. A file in its place (the store's layout damaged: a tool or a hand
// wrote one there) is said too, with what to do, rather than as the bare
// "not a directory" of the first file made or opened in it.
func MissingSessionsDir(fsys vfs.FS, home string) error {
	dir := filepath.Join(home, cas.EventsDir)
	fi, err := fsys.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("the sessions' directory %s is missing: put it back, or run `rook init` to make it anew, empty, if the sessions are gone for good", dir)
	case err == nil && !fi.IsDir():
		return fmt.Errorf("the sessions' directory %s is a file, not a directory: the store's layout is damaged: move the file aside and put the directory back (from a backup), or, if the sessions are gone for good, move the file aside and run `rook init` to make it anew, empty", dir)
	}
	return nil
}

// Notices says what opening repaired, and what it took in.
func (r *Rook) Notices() []string {
	return append(append(append([]string(nil), r.Store.Notices...), r.Log.Notices...), r.notices...)
}

// Failed is the write that failed part way (a full disk at a barrier)
// and left the store or the event logs refusing every write until they
// are opened again; nil when none did. An append that fails then fails
// for the store, not for what it was given.
func (r *Rook) Failed() error {
	if err := r.Store.Failed(); err != nil {
		return err
	}
	return r.Log.Failed()
}

// Close flushes the event logs (the store first, through the barrier) and
// closes the store; the records of the lines that did not parse an import
// reported are cleared last (Rook.reported).
func (r *Rook) Close() error {
	err := r.Log.Close()
	if err == nil && len(r.reportedIDs) > 0 {
		// The records of the lines an import reported are cleared last,
		// the store's index written before: a kill during any other
		// write of the close leaves them for the next import to report
		// (the summary is printed after the close). Log.Close leaves
		// UpdateMeta working for this.
		if err = r.Store.Sync(); err == nil {
			err = r.clearReported()
		}
	}
	if cerr := r.Store.Close(); err == nil {
		err = cerr
	}
	return err
}

// Flush is the end-of-turn barrier.
func (r *Rook) Flush() error { return r.Log.Flush() }

// BodyKind is the object kind an event's body is stored as: it decides
// which bodies are packed and compressed together.
func BodyKind(k eventlog.Kind) cas.Kind {
	switch k {
	case eventlog.KindToolResult:
		return cas.KindToolResult
	case eventlog.KindSkill:
		return cas.KindSkill
	case eventlog.KindCheckpoint:
		return cas.KindSnapshot
	case eventlog.KindNote:
		return cas.KindNote
	}
	return cas.KindMessage
}

// NewSession starts a session.
func (r *Rook) NewSession(title, workspace string, tags []string) (eventlog.Meta, error) {
	if err := ValidTitle(title); err != nil {
		return eventlog.Meta{}, err
	}
	// The tags `session tag` would take: one it refuses (white space, a
	// control character) could not be removed with `session tag --rm`.
	for _, t := range tags {
		if err := ValidTag(t); err != nil {
			return eventlog.Meta{}, err
		}
	}
	// Each tag once, as session tag keeps them: --tag a --tag a is one "a".
	if len(tags) > 0 {
		tags = mergeTags(nil, tags, nil)
	}
	return r.Log.Create(eventlog.Meta{Title: title, Workspace: workspace, Tags: tags})
}

// ValidTitle refuses a session title that is not UTF-8: a session's
// metadata is JSON, which would keep each byte that is not as U+FFFD, the
// title's bytes lost as it is made (`session new --title`, `session fork
// --title`).
func ValidTitle(title string) error {
	if !utf8.ValidString(title) {
		return fmt.Errorf("title %q is not UTF-8: a session's title is stored as JSON text, which would keep U+FFFD for each byte that is not; give it in UTF-8", title)
	}
	return nil
}

// Entry is one event to append: its body is stored as an object.
type Entry struct {
	Kind  eventlog.Kind
	Label string
	Body  []byte
	// InPlace, when set, is Body with cas.ObjectRoom bytes of room in
	// front (Body is InPlace[cas.ObjectRoom:]), handed over to the store
	// (cas.Store.PutInPlace): a big body is laid out as its block where
	// it lies, not copied, so an append holds it once.
	InPlace   []byte
	TokensIn  uint64
	TokensOut uint64
	// Time zero: now. A session made in rook and not forked must not be
	// given a time later than its append (lastActive bounds its events by
	// its log's modification time); an earlier one, as an inbox save's, is
	// fine.
	Time time.Time
}

// Append stores the entries' bodies and appends them to the session as one
// atomic group; it returns the first seq.
func (r *Rook) Append(id eventlog.ID, entries ...Entry) (uint64, error) {
	evs, err := r.putEntries(entries)
	if err != nil {
		return 0, err
	}
	return r.Log.Append(id, evs...)
}

// putEntries stores the entries' bodies and returns their events.
func (r *Rook) putEntries(entries []Entry) ([]eventlog.Event, error) {
	evs := make([]eventlog.Event, len(entries))
	for i, e := range entries {
		if !e.Kind.Valid() {
			return nil, fmt.Errorf("unknown event kind %d", e.Kind)
		}
		var res cas.PutResult
		var err error
		switch {
		case e.InPlace == nil:
			res, err = r.Store.Put(BodyKind(e.Kind), e.Body)
		case len(e.InPlace) != len(e.Body)+cas.ObjectRoom || (len(e.Body) > 0 && &e.InPlace[cas.ObjectRoom] != &e.Body[0]):
			return nil, errors.New("Entry.InPlace is not Body with cas.ObjectRoom bytes of room in front")
		default:
			res, err = r.Store.PutInPlace(BodyKind(e.Kind), e.InPlace)
		}
		if err != nil {
			return nil, fmt.Errorf("store event body: %w", err)
		}
		evs[i] = eventlog.Event{Kind: e.Kind, Label: e.Label, Body: res.ID, TokensIn: e.TokensIn, TokensOut: e.TokensOut, Time: e.Time}
	}
	return evs, nil
}

// Body reads an event's body from the store, verified. The body of an
// imported line is the line as its source file had it, cut strings put
// back.
func (r *Rook) Body(ev eventlog.Event) ([]byte, error) { return r.bodyObject(ev.Body) }

// bodyObject reads an event body object: an imported line is expanded.
func (r *Rook) bodyObject(id cas.Key) ([]byte, error) {
	b, _, err := r.readBody(id)
	return b, err
}

// readBody is bodyObject, and whether the body is an imported line (a
// source object): the reading view renders those.
func (r *Rook) readBody(id cas.Key) (body []byte, imported bool, err error) {
	return r.readBodyWithin(id, math.MaxInt64)
}

// errBodyTooLarge: the body is larger than readBodyWithin was to read.
var errBodyTooLarge = errors.New("body larger than the bytes to read")

// readBodyWithin is readBody for a body of at most max bytes; a larger
// imported line is not put together (errBodyTooLarge): its object leaves
// out the long strings cut from it, which count by their own size (their
// JSON escapes aside), known without reading them.
func (r *Rook) readBodyWithin(id cas.Key, max int64) (body []byte, imported bool, err error) {
	b, kind, err := r.Store.GetKind(id)
	if err != nil || kind != cas.KindSource {
		return b, false, err
	}
	b, err = r.expandSource(id, b, max)
	return b, true, err
}

// importedLines is the lines of imported body id put together
// (sourceLines), when want, given the stored line's rest (its keys are
// never cut out of it, nor a string as short as an id), says it may hold
// what is looked for (nil: always): most bodies are passed over without
// putting their long strings back. None for a body not imported, or one
// want passes over; a stored line that does not decode is a CorruptError.
func (r *Rook) importedLines(id cas.Key, want func(rest []byte) bool) ([][]byte, error) {
	b, kind, err := r.Store.GetKind(id)
	if err != nil || kind != cas.KindSource {
		return nil, err
	}
	sl, err := decodeSourceLine(b)
	if err != nil {
		return nil, &cas.CorruptError{ID: id, Reason: err.Error()}
	}
	if want != nil && !want(sl.Rest) {
		return nil, nil
	}
	lines, err := sl.expand(r.Store.Get)
	if err != nil {
		return nil, err
	}
	return sourceLines(lines), nil
}

// expandSource is the line of source line object id, b, put together, or
// errBodyTooLarge when it is larger than max (readBodyWithin).
func (r *Rook) expandSource(id cas.Key, b []byte, max int64) ([]byte, error) {
	sl, err := decodeSourceLine(b)
	if err != nil {
		return nil, &cas.CorruptError{ID: id, Reason: err.Error()}
	}
	if max < math.MaxInt64 {
		if size, _ := r.lineSize(sl); size > max {
			return nil, errBodyTooLarge
		}
	}
	return sl.expand(r.Store.Get)
}

// lineSize is how long source line sl is put back together, its cut
// strings counted by their objects' index entries (a string whose object
// cannot be stat'd counts nothing: reading it says what failed); all is
// false when one could not be.
func (r *Rook) lineSize(sl sourceLine) (size int64, all bool) {
	size, all = int64(len(sl.Rest)), true
	for _, c := range sl.Cuts {
		if info, err := r.Store.StatEntry(c.ID); err == nil {
			size += info.Size
		} else {
			all = false
		}
	}
	return size, all
}

// shortenLinesOver is the size past which an imported line read for a
// view that shows only its head (show, history, export-html) is put
// together with each string cut from it shortened to what the head can
// show (readBodyHead): a line of 100 MB (a tool's whole output) was put
// together, rendered and cut whole, 20 s and 600 MB for a few KiB shown.
const shortenLinesOver = 4 << 20

// headSlack is what a shortened string keeps past the bytes the head
// shows: a view's text is the line's strings, reshaped (indented, colors
// left out), so a string kept that much longer still gives the whole
// head and the first line a preview reads.
const headSlack = 64 << 10

// bodyHead is an event's body as a view of its head reads it.
type bodyHead struct {
	// body is the body; of an imported line over shortenLinesOver, the
	// line with each string longer than the head's keep shortened to it
	// (on a character boundary): still a line of the same JSON shape,
	// whose first bytes and view are the whole line's.
	body     []byte
	imported bool  // a source object: the body is an imported line
	size     int64 // the whole body's bytes
	binary   bool  // the whole body is binary (IsBinary)
	// views are the bytes of view (viewLen) left out of each shortened
	// string k, whose placeholder (shortPlaceholder(k)) the body holds
	// where its text was cut: the view counts a string's as often as it
	// shows its placeholder (renderHead). cutMarks are where in body the
	// placeholders lineHead wrote start (the rest are inlineHead's).
	views    []int64
	cutMarks []int
	// trails are, of each string lineHead shortened (cutMarks), the white
	// space its text left out ends with: a view that shows it last trims
	// it.
	trails []int64
	// dropped: the bytes of view left out of shortened strings with no
	// placeholder (encoded state, which a view may show as a marker),
	// counted whether or not the view shows them.
	dropped int64
	// partial: body is only the first bytes of the body (a big one,
	// streamed), enough for CutShown at the bytes shown.
	partial bool
}

// viewLen is how many bytes text takes in a reading view (cleanView):
// its color sequences left out, each control character and byte that is
// not UTF-8 a U+FFFD. What a view shortened by readBodyHead leaves out is
// counted so: exact for a string the view shows as written (a tool's
// output, a reply), close for one it reshapes (a call's arguments), and
// not for the white space a view trims at its end.
func viewLen(text []byte) int64 {
	n := int64(0)
	for i := 0; i < len(text); {
		if j := sgrEnd(text, i); j > 0 {
			i = j
			continue
		}
		c, w := utf8.DecodeRune(text[i:])
		switch {
		case c == utf8.RuneError && w == 1, c < 0x20 && c != '\n' && c != '\t', c == 0x7f:
			n += int64(utf8.RuneLen(utf8.RuneError))
		default:
			n += int64(w)
		}
		i += w
	}
	return n
}

// readBodyHead reads an event's body for a view that shows at most shown
// bytes of it or of its reading view. Every object is read whole and
// verified, as a body always is; only the long strings of a large
// imported line are not written back whole (each keeps shown+headSlack
// bytes).
//
// A big body alone in its record (not an imported line) is streamed once
// instead (streamBody): verified as a whole read is, only its first
// shown+headSlack bytes kept, and scanned for binary bytes as it goes by;
// the head then says where CutShown cuts it at shown (or, when it cannot,
// the body is read whole). So is each big string of a large imported
// line (readStringHead), and a big line's object holding a long string
// import left in it (inlineHead: the string shortened as it goes by).
func (r *Rook) readBodyHead(id cas.Key, shown int) (bodyHead, error) {
	o, err := r.Store.OpenObject(id)
	if err != nil {
		return bodyHead{}, err
	}
	kind := o.Kind()
	if !readWhole && kind != cas.KindSource && o.Ranged() && shown < math.MaxInt-headSlack && int64(max(shown, 0)+headSlack) < o.Size() {
		head, binary, err := streamBody(o, max(shown, 0)+headSlack)
		if err != nil {
			return bodyHead{}, err
		}
		if _, ok := headWithin(head, max(shown, 0), o.Size()); ok {
			return bodyHead{body: head, size: o.Size(), binary: binary, partial: true}, nil
		}
	}
	if !readWhole && kind == cas.KindSource && o.Size() > shortenLinesOver && shown < 1<<40 && int64(max(shown, 0)+headSlack) < o.Size() {
		// A big line's object: a long string import left in it is
		// shortened as it streams (inlineHead), not read whole. (Asked
		// for as much as it holds, nothing would be left out.) When it
		// declines (the line not JSON, or its view needing more of a
		// string than its ends), the whole read below reads the object
		// a second time: a rare cost, taken so that no big line's bytes
		// are held only to find out whether they are needed.
		if h, ok := r.inlineHead(o, max(shown, 0)+headSlack); ok {
			return h, nil
		}
	}
	b, err := o.ReadAll()
	if err != nil {
		return bodyHead{}, err
	}
	if kind != cas.KindSource {
		return bodyHead{body: b, size: int64(len(b)), binary: IsBinary(b)}, nil
	}
	h := bodyHead{imported: true}
	sl, err := decodeSourceLine(b)
	if err != nil {
		return h, &cas.CorruptError{ID: id, Reason: err.Error()}
	}
	size, _ := r.lineSize(sl)
	keep := math.MaxInt
	if size > shortenLinesOver && shown < math.MaxInt-headSlack {
		keep = max(shown, 0) + headSlack
	}
	return r.lineHead(sl, keep, h)
}

// lineHead is readBodyHead of source line sl, each string cut from it
// kept to keep bytes of text, h what is known of the line already.
func (r *Rook) lineHead(sl sourceLine, keep int, h bodyHead) (bodyHead, error) {
	out := make([]byte, 0, len(sl.Rest)+len(sl.Cuts)*MinCutString*2)
	p := 0
	for _, c := range sl.Cuts {
		out = append(out, sl.Rest[p:p+c.Gap]...)
		p += c.Gap
		if keep < math.MaxInt && !readWhole {
			sh, err := r.readStringHead(c.ID, keep)
			if err != nil {
				return h, fmt.Errorf("string %s of the line: %w", cas.Short(c.ID), err)
			}
			h.size += sh.escaped
			h.binary = h.binary || sh.binary
			out = h.appendShortened(out, sh.text, sh.view, sh.trail)
			continue
		}
		text, err := r.Store.Get(c.ID)
		if err != nil {
			return h, fmt.Errorf("string %s of the line: %w", cas.Short(c.ID), err)
		}
		view, trail := int64(0), int64(0)
		if n := CutShown(text, keep); n < len(text) {
			tail := text[n:]
			view, trail = viewLen(tail), trailingSpace(tail, 0)
			h.size += jsonEscapedLen(tail)
			// Escaped in the line, a NUL is text: only bytes that are
			// not UTF-8 make it binary.
			h.binary = h.binary || !utf8.Valid(tail)
			text = text[:n]
		}
		out = h.appendShortened(out, text, view, trail)
	}
	h.body = append(out, sl.Rest[p:]...)
	h.size += int64(len(h.body))
	h.binary = h.binary || IsBinary(h.body)
	return h, nil
}

// appendShortened appends to out, a line being put together, the JSON
// string of text, a string's head that view bytes of view were cut from
// (trail of them the white space they end with), followed by a
// placeholder for them (shortPlaceholder): a line can hold
// a string its view does not show (Claude Code's toolUseResult.stdout
// repeats the tool_result's content), and its text left out is no text
// the view left out. Encoded state gets none: a placeholder in it would
// stop the view from showing it as a marker.
func (h *bodyHead) appendShortened(out, text []byte, view, trail int64) []byte {
	if view == 0 || isBase64(text) || isDataURL(text) {
		h.dropped += view
		return appendJSONString(out, text)
	}
	lit, _ := shortPlaceholder(len(h.views))
	h.views = append(h.views, view)
	h.trails = append(h.trails, trail)
	// The placeholder is none of the body's bytes: lineHead counts
	// the body it writes into the size.
	h.size -= int64(len(lit))
	out = appendJSONString(out, text)
	h.cutMarks = append(h.cutMarks, len(out)-1)
	out = append(out[:len(out)-1], lit...)
	return append(out, '"')
}

// renderHead is the reading view of imported event ev's body head h, and
// the bytes of view h's shortened strings left out of it: each string's
// as often as the view shows its placeholder (none, for a string it does
// not show), each placeholder's own bytes taken off. A view that shows a
// placeholder within the shown bytes it is cut to, or one another way
// (escaped, split), is rendered again from the body without lineHead's
// placeholders, each of its strings counted once: what was counted
// before placeholders.
func renderHead(ev eventlog.Event, h bodyHead, shown int) ([]byte, int64) {
	text := renderEvent(ev, h.body)
	if len(h.views) == 0 {
		return text, h.dropped
	}
	dropped, marks := h.dropped, 0
	for k, v := range h.views {
		_, ph := shortPlaceholder(k)
		n := bytes.Count(text, []byte(ph))
		marks += n
		dropped += int64(n) * (v - int64(len(ph)))
		// Shown at the end of the view (renderBody ends it with a
		// newline), its text's end is white space trimmed.
		if c := k - (len(h.views) - len(h.trails)); n > 0 && c >= 0 && bytes.HasSuffix(text, []byte(ph+"\n")) {
			dropped -= h.trails[c]
		}
	}
	first := bytes.Index(text, []byte(shortMark))
	if bytes.Count(text, []byte(shortMark)) == 2*marks && (first < 0 || first >= CutShown(text, shown)) {
		return text, dropped
	}
	body := make([]byte, 0, len(h.body))
	p, inline := 0, len(h.views)-len(h.cutMarks)
	dropped = h.dropped
	for k, at := range h.cutMarks {
		lit, _ := shortPlaceholder(inline + k)
		body = append(body, h.body[p:at]...)
		p = at + len(lit)
		dropped += h.views[inline+k] // as it was counted before
	}
	body = append(body, h.body[p:]...)
	text = renderEvent(ev, body)
	for k, v := range h.views[:inline] {
		_, ph := shortPlaceholder(k)
		dropped += int64(bytes.Count(text, []byte(ph))) * (v - int64(len(ph)))
	}
	return text, dropped
}

// ErrNoLast: `last` names no session here.
var ErrNoLast = errors.New("no session in this workspace")

// ResolveSession turns what a user typed into a session id: a full id, a
// unique prefix, or `last`, the session of cwd's workspace active last
// (activeBefore): where the user left off, which after an import of older
// transcripts is not the session imported last, and after a fork or a
// rewind is the session it made, not its parent. In a directory that is
// no session's workspace (ws/sub), `last` names none: the error names the
// nearest directory above it that is one, and its session
// (enclosingWorkspace), for the user to name by id. Taking it as `last`
// acted on another project's session from a nested repository, a `mktemp
// -d` under an old /tmp session, or ~ with $HOME unset, while `session
// ls` there listed none.
func (r *Rook) ResolveSession(arg, cwd string) (eventlog.ID, error) {
	if strings.TrimSpace(arg) == "" {
		// A script's unset variable: a usage error, as an empty object
		// id is for store cat.
		return eventlog.ID{}, badArgument("empty session id: give an id, a unique prefix of one, or last (`rook session ls --all` lists them)")
	}
	if strings.EqualFold(arg, "last") {
		best, err := r.lastActive(cwd)
		if err != nil {
			return eventlog.ID{}, err
		}
		if best == nil {
			above := ""
			if ws, err := r.enclosingWorkspace(cwd); err == nil && ws != "" {
				if s, err := r.lastActive(ws); err == nil && s != nil {
					above = fmt.Sprintf("; %s above it is one, its session active last %s (give that id, or run from there)", ws, s.ID)
				}
			}
			return eventlog.ID{}, fmt.Errorf("%w (%s)%s: `rook session ls --all` lists every session, `-C DIR` picks another workspace", ErrNoLast, cwd, above)
		}
		return best.ID, nil
	}
	return r.Log.Resolve(arg)
}

// enclosingWorkspace is the nearest directory above cwd that is a
// session's workspace (Workspace.Holds), "" when there is none: named in
// the error of a `last` that names no session in cwd. The walk
// up stops below the filesystem's root and below the user's home
// directory (as named, or its real path): neither is taken as a
// project's workspace from a directory in it, as a capture's search for
// a .gitignore above stops there (gitignoresAbove).
func (r *Rook) enclosingWorkspace(cwd string) (string, error) {
	if cwd == "" || !filepath.IsAbs(cwd) {
		return "", nil
	}
	stop := map[string]bool{}
	if h, err := os.UserHomeDir(); err == nil && filepath.IsAbs(h) {
		stop[filepath.Clean(h)] = true
		if rh, err := filepath.EvalSymlinks(h); err == nil {
			stop[filepath.Clean(rh)] = true
		}
	}
	var above []*Workspace
	for d := filepath.Clean(cwd); !stop[d]; {
		p := filepath.Dir(d)
		if p == d || p == filepath.Dir(p) || stop[p] {
			break // d is the root, or p is, or p is the home directory
		}
		above = append(above, NewWorkspace(r.fs, p))
		d = p
	}
	if len(above) == 0 {
		return "", nil
	}
	ids, err := r.Log.IDs()
	if err != nil {
		return "", err
	}
	nearest := len(above)
	for _, id := range ids {
		m, err := r.Log.ReadMeta(id)
		if err != nil || m.Workspace == "" {
			continue
		}
		for i := range above[:nearest] {
			if above[i].Holds(m.Workspace) {
				nearest = i
				break
			}
		}
		if nearest == 0 {
			break
		}
	}
	if nearest == len(above) {
		return "", nil
	}
	return above[nearest].path, nil
}

// lastActive is the session of workspace cwd active last (activeBefore),
// nil when there is none; a session whose metadata or log does not read is
// left out (it is named by id, not by last). Every session's metadata is
// read, but not every log: opening and reading each log's tail was most
// of what resolving last cost in a store of thousands of sessions.
// A session made here and not forked has only events stamped as they were
// appended (or before: an inbox save's), so its log's modification time
// bounds when it was touched (WrittenBy); the logs are read newest bound
// first, and the reading stops at a bound older than the best session
// found, which no session left can beat. The rest (imported ones, whose
// events carry their transcript's times, forks and rewinds, which copy
// theirs, logs the bound cannot be had for) are read every time, as is
// every log once one read shows its time behind its events.
func (r *Rook) lastActive(cwd string) (*eventlog.Summary, error) {
	ids, err := r.Log.IDs()
	if err != nil {
		return nil, err
	}
	type candidate struct {
		meta    eventlog.Meta
		bound   time.Time
		bounded bool
	}
	var cands []candidate
	here := NewWorkspace(r.fs, cwd)
	for _, id := range ids {
		m, err := r.Log.ReadMeta(id)
		if err != nil || !here.Holds(m.Workspace) {
			continue
		}
		c := candidate{meta: m}
		if m.Source == nil && m.Parent == nil && m.ForkAt == nil {
			c.bound, c.bounded = r.Log.WrittenBy(id)
			// The log was written after the session was created: a time
			// before that (a log whose time a restore or a touch set
			// back) says nothing of when it was last written.
			c.bounded = c.bounded && !c.bound.Before(m.Created)
		}
		cands = append(cands, c)
	}
	// Unbounded first, then the newest bound first.
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].bounded != cands[j].bounded {
			return !cands[i].bounded
		}
		return cands[i].bound.After(cands[j].bound)
	})
	var best *eventlog.Summary
	trusted := true // no log read was touched after its bound
	for _, c := range cands {
		if trusted && c.bounded && best != nil && c.bound.Before(touched(*best)) {
			break // touched no later than its bound: before best, as are all after it
		}
		s, err := r.Log.SummaryOf(c.meta)
		if err != nil {
			continue
		}
		if c.bounded && touched(s).After(c.bound) {
			// Its file's time is behind its events (the store's times set
			// back by a restore, a file system stamping them from another
			// clock): no bound is to be trusted, every log is read.
			trusted = false
		}
		if best == nil || activeBefore(*best, s) {
			best = &s
		}
	}
	return best, nil
}

// LastActive is when a session was last active, as `last`, `session ls`'s
// order and retention take it (touched): its last event, or its creation
// if that is later (a fork or rewind holds copies of older events); an
// imported session's last event at its transcript's own time.
func LastActive(s eventlog.Summary) time.Time { return touched(s) }

// activeBefore says whether a was last active before b: by touched, the
// time of its last event (an imported transcript's own, not the import's)
// or its creation if that is later (a fork or a rewind, whose events are
// copies of its parent's older ones: by their times the rewind just made
// was active before its parent, and `rook session append last` after
// `rook session rewind last --to N` went on in the timeline rewound from);
// of two active at the same time, the one created first (the smaller id)
// was.
func activeBefore(a, b eventlog.Summary) bool {
	if ta, tb := touched(a), touched(b); !ta.Equal(tb) {
		return ta.Before(tb)
	}
	return a.ID.Compare(b.ID) < 0
}

// SortByLastActive orders sessions most recently active first.
func SortByLastActive(ss []eventlog.Summary) {
	sort.SliceStable(ss, func(i, j int) bool { return activeBefore(ss[j], ss[i]) })
}

// SameDir reports whether two workspace paths are the same path.
// Workspace.Holds also takes two paths to one directory as the same.
func SameDir(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	return filepath.Clean(a) == filepath.Clean(b)
}

// Workspace is the directory a command runs in (its cwd, -C), to tell
// which sessions are its: a session's workspace is, when its path is the
// same (SameDir), or when both paths are there and are one directory (a
// symbolic link to it, the directory itself, a bind mount). A session made
// in /tmp/link, a link to /tmp/real, was not /tmp/real's: `last` there
// named an older session, and events went to it, with nothing said.
type Workspace struct {
	fsys vfs.FS
	path string
	dir  fs.FileInfo     // the directory at path; nil when it cannot be looked at
	seen map[string]bool // the paths looked at: the same directory or not
}

// NewWorkspace is the workspace at path (looked at once, here).
func NewWorkspace(fsys vfs.FS, path string) *Workspace {
	w := &Workspace{fsys: fsys, path: path}
	if path != "" {
		if st, err := fsys.Stat(path); err == nil && st.IsDir() {
			w.dir = st
		}
	}
	return w
}

// Holds says whether a session whose workspace is dir is this
// workspace's. Each distinct dir is looked at on disk once: a listing of
// thousands of sessions has a few workspaces.
func (w *Workspace) Holds(dir string) bool {
	if SameDir(dir, w.path) {
		return true
	}
	if dir == "" || w.dir == nil {
		return false
	}
	same, ok := w.seen[dir]
	if !ok {
		st, err := w.fsys.Stat(dir)
		same = err == nil && os.SameFile(st, w.dir)
		if w.seen == nil {
			w.seen = map[string]bool{}
		}
		w.seen[dir] = same
	}
	return same
}

// taggedSession is a session named by a tag "<prefix>:<name>".
type taggedSession struct {
	ID   eventlog.ID
	Meta eventlog.Meta
	Name string
}

// sessionsTagged lists, oldest first, the sessions with a tag
// "<prefix>:<name>" (the last such tag gives the name) and, when bare is
// set, the tag "<prefix>" itself: inbox and MCP server sessions are found
// this way. A session whose metadata does not read, its tags unknown, is
// left out (sessionsTaggedOrUnread returns it).
func (r *Rook) sessionsTagged(prefix string, bare bool) ([]taggedSession, error) {
	list, _, err := r.sessionsTaggedOrUnread(prefix, bare)
	return list, err
}

// unreadMeta is a session whose metadata does not read (Err says why and
// what to do): whether it has a tag is not known.
type unreadMeta struct {
	ID  eventlog.ID
	Err error
}

// sessionsTaggedOrUnread is sessionsTagged, and the sessions whose
// metadata does not read, any of which may have been tagged so: a caller
// that must not lose sight of one (a damaged MCP server's session) looks
// at them. One removed while the list was read is in neither.
func (r *Rook) sessionsTaggedOrUnread(prefix string, bare bool) ([]taggedSession, []unreadMeta, error) {
	ids, err := r.Log.IDs()
	if err != nil {
		return nil, nil, err
	}
	var out []taggedSession
	var unread []unreadMeta
	for _, id := range ids {
		m, err := r.Log.ReadMeta(id)
		if errors.Is(err, eventlog.ErrNoSession) {
			continue
		}
		if err != nil {
			unread = append(unread, unreadMeta{ID: id, Err: err})
			continue
		}
		if name, ok := taggedName(m, prefix, bare); ok {
			out = append(out, taggedSession{ID: id, Meta: m, Name: name})
		}
	}
	return out, unread, nil
}

// taggedName is the name a session's tags "<prefix>:<name>" give it (the
// last such tag) and, when bare is set, it has the tag "<prefix>" too.
func taggedName(m eventlog.Meta, prefix string, bare bool) (string, bool) {
	if m.ForkAt != nil {
		// A fork copies its parent's tags: a fork of an inbox or a
		// server's session is a copy of its events, not a second
		// inbox or server.
		return "", false
	}
	name, hasBare := "", false
	for _, t := range m.Tags {
		if t == prefix {
			hasBare = true
		} else if n, ok := strings.CutPrefix(t, prefix+":"); ok {
			name = n
		}
	}
	return name, name != "" && (hasBare || !bare)
}

// eachEvent calls f with each of a session's events in order, a page at a
// time, and stops at the first error f returns.
func (r *Rook) eachEvent(id eventlog.ID, f func(eventlog.Event) error) error {
	var ferr error
	if err := r.eventsFrom(id, 0, func(ev eventlog.Event) bool {
		ferr = f(ev)
		return ferr == nil
	}); err != nil {
		return err
	}
	return ferr
}

// eventsFrom calls f with each event of session id from seq from on, a
// page at a time, until it returns false.
func (r *Rook) eventsFrom(id eventlog.ID, from uint64, f func(eventlog.Event) bool) error {
	for {
		evs, err := r.Log.Read(id, from, contextPage)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			if !f(ev) {
				return nil
			}
		}
		if len(evs) < contextPage {
			return nil
		}
		from = evs[len(evs)-1].Seq + 1
	}
}
