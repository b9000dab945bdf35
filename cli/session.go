package cli

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/rookhq/rook/agent"
	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/units"
	"github.com/rookhq/rook/internal/vfs"
)

// SessionCmd groups the session commands.
type SessionCmd struct {
	New        SessionNewCmd     `cmd:"" help:"Start a session and print its id."`
	Append     SessionAppendCmd  `cmd:"" help:"Append an event (or many, with --jsonl) and print its seq."`
	Ls         SessionLsCmd      `cmd:"" help:"List sessions in this workspace (--all: everywhere)."`
	Show       ShowCmd           `cmd:"" help:"Print a session's events with their bodies."`
	History    HistoryCmd        `cmd:"" help:"A bounded page of a session's history, with cursors."`
	Find       FindCmd           `cmd:"" help:"Find literal text in a session, a bounded scan at a time."`
	Entry      EntryCmd          `cmd:"" help:"Read one event's body in bounded pages."`
	Quote      QuoteCmd          `cmd:"" help:"A bounded, attributed quote of one event."`
	Context    ContextCmd        `cmd:"" help:"What the conversation costs, by kind, against a context window."`
	ExportHTML ExportHTMLCmd     `cmd:"" name:"export-html" help:"Write a range of a session as one self-contained HTML file."`
	Capture    SessionCaptureCmd `cmd:"" help:"Capture paths before a tool writes, moves or deletes them."`
	Diff       DiffCmd           `cmd:"" help:"What the session changed on disk, as a git-style patch (of an imported Codex session: what its applied patches changed, a file outside the workspace named from it, ../, which git apply refuses)."`
	Rewind     RewindCmd         `cmd:"" help:"Fork at N and put files back as they were (undoable)."`
	Fork       SessionForkCmd    `cmd:"" help:"Copy a session's first N events into a new session."`
	Rm         SessionRmCmd      `cmd:"" help:"Delete a session's events (bodies stay until gc)."`
	Tag        SessionTagCmd     `cmd:"" help:"Add tags to a session (--rm: remove them); protect tags keep it from retention."`
}

// sessionArg resolves a session argument: a full id, a unique prefix, or
// `last`.
func (e *Env) sessionArg(r *agent.Rook, arg string) (eventlog.ID, error) {
	dir, err := e.workDir()
	if err != nil && strings.EqualFold(arg, "last") {
		// last is the session of the directory rook runs in.
		return eventlog.ID{}, err
	}
	return r.ResolveSession(arg, dir)
}

// write runs fn with the store open for writing, then closes it. Close is
// the barrier: what fn did is durable when write returns nil, so callers
// print their results after it.
func (e *Env) write(fn func(r *agent.Rook) error) error {
	r, err := e.openRook(true)
	if err != nil {
		return err
	}
	told := len(r.Log.Notices) // openRook told those
	err = fn(r)
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	// What the work and the close left that is no failure (a dirty
	// marker that stays, a removal whose last directory sync failed):
	// the command succeeded, and says so as a note.
	for _, n := range r.Log.Notices[told:] {
		fmt.Fprintf(e.Stderr, "rook: note: %s\n", n)
	}
	return err
}

// writeSession is write with a session argument resolved first.
func (e *Env) writeSession(arg string, fn func(r *agent.Rook, id eventlog.ID) error) error {
	return e.write(func(r *agent.Rook) error {
		id, err := e.sessionArg(r, arg)
		if err != nil {
			return err
		}
		return fn(r, id)
	})
}

// readSession opens the store read-only and resolves a session argument;
// the caller closes the Rook.
func (e *Env) readSession(arg string) (*agent.Rook, eventlog.ID, error) {
	r, err := e.openRook(false)
	if err != nil {
		return nil, eventlog.ID{}, err
	}
	id, err := e.sessionArg(r, arg)
	if err != nil {
		r.Close()
		return nil, eventlog.ID{}, err
	}
	return r, id, nil
}

// SessionNewCmd is `rook session new`.
type SessionNewCmd struct {
	Title     string   `help:"Session title."`
	Workspace nonEmpty `help:"The directory the session works in (default: the current one, or -C)." placeholder:"DIR"`
	Tag       []string `sep:"none" help:"A tag, taken whole as session tag takes one (repeatable; a comma is part of the tag)."`
}

func (c *SessionNewCmd) Run(e *Env) error {
	if err := agent.ValidTitle(c.Title); err != nil {
		return usageErr("--%v", err)
	}
	for _, t := range c.Tag {
		if err := agent.ValidTag(t); err != nil {
			return usageErr("%v", err) // as session tag's
		}
	}
	ws, cwdErr := e.workDir()
	if cwdErr != nil && !filepath.IsAbs(string(c.Workspace)) {
		return cwdErr // the workspace is that directory, or --workspace from it
	}
	if c.Workspace != "" {
		abs, err := filepath.Abs(string(c.Workspace)) // after -C, like every relative path
		if err != nil {
			return err
		}
		ws = abs
	}
	var m eventlog.Meta
	err := e.write(func(r *agent.Rook) (err error) {
		m, err = r.NewSession(c.Title, ws, c.Tag)
		return err
	})
	if err != nil {
		return err
	}
	if e.JSON {
		return e.printJSON(m)
	}
	fmt.Fprintln(e.Stdout, m.ID)
	return nil
}

// SessionAppendCmd is `rook session append`.
type SessionAppendCmd struct {
	ID        string   `arg:"" help:"Session id, unique prefix, or last."`
	File      string   `arg:"" optional:"" help:"Body from FILE; - or nothing reads stdin." default:"-"`
	Kind      string   `help:"Event kind: user, assistant, reasoning, tool-call, tool-result, skill, checkpoint, compaction, error, note."`
	Label     string   `help:"Event label (a tool name, a model, a versioned note type)."`
	TokensIn  uint64   `name:"tokens-in" placeholder:"N" help:"Input tokens this event cost."`
	TokensOut uint64   `name:"tokens-out" placeholder:"N" help:"Output tokens this event cost."`
	JSONL     nonEmpty `name:"jsonl" help:"Append many events from FILE (- for stdin), one JSON object a line: kind, label (or label_base64), body or body_file, tokens_in, tokens_out." placeholder:"FILE"`
	At        *uint64  `name:"at" placeholder:"SEQ" help:"With --jsonl: the first line's event is #SEQ. Lines whose seq the session holds already must be that event, and are skipped: run a stopped append again with the same --at to append the rest."`
}

// jsonlEvent is one line of --jsonl input.
type jsonlEvent struct {
	Kind  string `json:"kind"`
	Label string `json:"label"`
	// LabelBase64 carries a label that is not UTF-8 (show, history and
	// find write such a label so under --json): a JSON string cannot.
	LabelBase64 *string `json:"label_base64"`
	Body        *string `json:"body"`
	BodyFile    string  `json:"body_file"`
	TokensIn    uint64  `json:"tokens_in"`
	TokensOut   uint64  `json:"tokens_out"`
}

func (c *SessionAppendCmd) Run(e *Env) error {
	if c.At != nil && c.JSONL == "" {
		return usageErr("--at goes with --jsonl")
	}
	if c.JSONL != "" {
		if c.Kind != "" || c.Label != "" || c.TokensIn != 0 || c.TokensOut != 0 || c.File != "-" {
			return usageErr("--jsonl takes everything from its lines: drop --kind, --label, --tokens-* and FILE")
		}
		return c.runJSONL(e)
	}
	if c.Kind == "" {
		return usageErr("--kind is required (or --jsonl)")
	}
	kind, err := eventlog.ParseKind(c.Kind)
	if err != nil {
		return usageErr("--kind: %v", err)
	}
	if len(c.Label) > eventlog.MaxLabel {
		return usageErr("--label is %d bytes; at most %d", len(c.Label), eventlog.MaxLabel)
	}
	buf, err := readInput(e, c.File, "the event's body")
	if err != nil {
		return err
	}
	body := buf[cas.ObjectRoom:]
	if err := checkpointBody(kind, c.Label, body); err != nil {
		return usageErr("%v", err)
	}
	var seq uint64
	err = e.writeSession(c.ID, func(r *agent.Rook, id eventlog.ID) (err error) {
		seq, err = r.Append(id, agent.Entry{Kind: kind, Label: c.Label, Body: body, InPlace: buf, TokensIn: c.TokensIn, TokensOut: c.TokensOut})
		return err
	})
	if err != nil {
		return err // the seq is printed only once the close made it durable
	}
	if e.JSON {
		return e.printJSON(map[string]any{"seq": seq})
	}
	fmt.Fprintln(e.Stdout, seq)
	return nil
}

// inputGiven refuses a directory, or a path that is not there, named
// where a file is read (FILE, --jsonl FILE): a failure (exit 1) saying
// what to give. Read, a directory failed as "read input: read DIR: is a
// directory", a missing file as "read input: open F: no such file or
// directory", with no word of what to give instead.
func inputGiven(what, path string) error {
	st, err := os.Stat(path)
	switch {
	case err == nil && st.IsDir():
		return &exitError{code: ExitFailure, msg: fmt.Sprintf("%s %s is a directory: name a file (or - for standard input)", what, path)}
	case errors.Is(err, fs.ErrNotExist):
		return &exitError{code: ExitFailure, msg: fmt.Sprintf("%s %s does not exist: name a file (or - for standard input)", what, path)}
	}
	return nil
}

// readInput reads FILE, or stdin for "-" (what: what it is, for the hint
// a user at a terminal gets). What it returns is the body behind
// cas.ObjectRoom bytes of room, for agent.Entry.InPlace: a big body is
// held once, not copied into its block.
func readInput(e *Env, file, what string) ([]byte, error) {
	if file == "" {
		return nil, usageErr("empty FILE: name the file to read, or give - (or nothing) to read stdin")
	}
	if file == "-" {
		e.stdinHint(what, "give a FILE")
		b, err := readBody(e.Stdin, stdinSize(e.Stdin), e.bodySpool)
		if err == errBodyTooBig {
			return nil, &exitError{code: ExitFailure, msg: fmt.Sprintf("standard input holds more than the %s an event body (a store object) holds: nothing appended", bodyLimit())}
		}
		if err != nil {
			return nil, readErr(err)
		}
		return b, nil
	}
	if !filepath.IsAbs(file) {
		if _, err := e.workDir(); err != nil {
			return nil, err // a relative FILE from a directory removed since
		}
	}
	if err := inputGiven("FILE", file); err != nil {
		return nil, err
	}
	b, err := readBodyFile(file, e.bodySpool)
	if err != nil {
		var big *bodyTooBigError
		if errors.As(err, &big) {
			return nil, &exitError{code: ExitFailure, msg: big.Error() + ": nothing appended"}
		}
		return nil, readErr(err)
	}
	return b, nil
}

// stdinSize is what standard input holds from where it stands when it is
// a regular file (`< FILE`), as readBody takes it: refused by its size
// and read into one buffer, not copied to a spool first (as much free
// space again on the store's disk). -1 for anything else (a pipe, a
// terminal, a device), or a size that does not read.
func stdinSize(r io.Reader) int64 {
	f, ok := r.(*os.File)
	if !ok {
		return -1
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return -1
	}
	at, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return -1
	}
	return max(st.Size()-at, 0)
}

// readErr is a failure to read the body: the input's, or the spool's
// (which says itself what failed, where, and what to do), or the store's
// that the spool met (storeError).
func readErr(err error) error {
	var se *spoolError
	var ste storeError
	if errors.As(err, &se) || errors.As(err, &ste) {
		return err
	}
	return fmt.Errorf("read input: %w", err)
}

// storeError is a failure of the store's that making the spool met (no
// store, its events/ gone): not the input's, and said as any command
// says it.
type storeError struct{ error }

func (e storeError) Unwrap() error { return e.error }

var errBodyTooBig = errors.New("event body too big")

// bodyLimit is maxBody for a message: "1.0 GiB (1073741824 bytes)".
func bodyLimit() string { return fmt.Sprintf("%s (%d bytes)", units.Bytes(maxBody), maxBody) }

// bodyTooBigError is readBodyFile's refusal: which file, and the limit.
type bodyTooBigError struct{ msg string }

func (e *bodyTooBigError) Error() string { return e.msg }

// spillAt is how much of a body of unknown size (stdin, a pipe, a
// device) readBody holds in memory; past it the body goes to a spool
// file (a variable so that tests can lower it).
var spillAt int64 = 8 << 20

// readBody reads r, up to maxBody bytes: errBodyTooBig if it holds more.
// What it returns is the body behind cas.ObjectRoom bytes of room. size
// is what r is known to hold (-1: unknown), to refuse it before reading
// and read it into one buffer of its size.
//
// A body of unknown size is held in memory up to spillAt; past that, it
// is copied to a spool file (spool: an unnamed file in the store) until
// its end, or one byte past the limit, and only then, its size known,
// read back into one buffer. So a source without end (/dev/zero) or too
// large is refused holding spillAt at most: read into memory, a 1 GiB
// stdin took 1 GiB of it to refuse, and a body under the limit was held
// twice (chunks, then their join).
func readBody(r io.Reader, size int64, spool func() (vfs.File, error)) ([]byte, error) {
	if size > maxBody {
		return nil, errBodyTooBig
	}
	if size >= 0 {
		b, err := vfs.ReadSizedRoom(r, cas.ObjectRoom, size, maxBody)
		if err == nil && int64(len(b)-cas.ObjectRoom) > maxBody {
			err = errBodyTooBig // a file that grew since its size was taken
		}
		return b, err
	}
	held := min(spillAt, maxBody)
	b, err := vfs.ReadSizedRoom(r, cas.ObjectRoom, 0, held)
	n := int64(len(b) - cas.ObjectRoom)
	switch {
	case err != nil:
		return nil, err
	case n <= held:
		return b, nil // all of it
	case held == maxBody:
		return nil, errBodyTooBig
	}
	if spool == nil {
		return nil, errors.New("more than the body held in memory, and no spool file to hold it")
	}
	f, err := spool()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	w := spoolWriter{f}
	if _, err := w.Write(b[cas.ObjectRoom:]); err != nil {
		return nil, err
	}
	b = nil
	more, err := io.Copy(w, io.LimitReader(r, maxBody+1-n))
	if err != nil {
		return nil, err
	}
	if n += more; n > maxBody {
		return nil, errBodyTooBig
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, &spoolError{path: f.Name(), err: err}
	}
	b, err = vfs.ReadSizedRoom(f, cas.ObjectRoom, n, n)
	if err == nil && int64(len(b)-cas.ObjectRoom) != n {
		err = fmt.Errorf("read back %d bytes of the %d written", len(b)-cas.ObjectRoom, n)
	}
	if err != nil {
		return nil, &spoolError{path: f.Name(), err: err}
	}
	return b, nil
}

// spoolError is a failure of the spool file a large body of unknown size
// goes through: its message says where, and what to do (of one the store
// refused, store, explain says it, as for the store).
type spoolError struct {
	path string
	err  error
	// store: the spool could not be made for a reason of the store's
	// (its events/ not this user's to write, on a read-only filesystem),
	// which an append of a FILE meets too: explain gives the store's
	// advice, not a FILE's.
	store bool
}

func (e *spoolError) Error() string {
	if e.store {
		return fmt.Sprintf("make a spool file for the body (more than %s of standard input or a pipe) in %s: %v", units.Bytes(spillAt), filepath.Dir(e.path), e.err)
	}
	do := "give the body as a regular FILE, which is read without one"
	if errors.Is(e.err, syscall.ENOSPC) || errors.Is(e.err, syscall.EDQUOT) {
		do = "free space there, or " + do
	}
	return fmt.Sprintf("hold the body (more than %s of standard input or a pipe) in a spool file in %s: %v: %s",
		units.Bytes(spillAt), filepath.Dir(e.path), e.err, do)
}

func (e *spoolError) Unwrap() error { return e.err }

// spoolWriter tells the spool's failures (a full disk) from the input's.
type spoolWriter struct{ f vfs.File }

func (w spoolWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil {
		err = &spoolError{path: w.f.Name(), err: err}
	}
	return n, err
}

// bodySpool makes readBody's spool file: in the store's events/, so that
// the body goes to the disk the store is on (not $TMPDIR, often memory),
// named as a durable write's temporary file and removed at once, kept
// open: its space is freed when it is closed, or rook ends, however it
// ends. A crash between its create and its remove leaves it to `rook
// store gc`, as such files are.
func (e *Env) bodySpool() (vfs.File, error) {
	dir := filepath.Join(e.Home, cas.EventsDir)
	for tries := 0; ; tries++ {
		name := filepath.Join(dir, fmt.Sprintf(".append-body%d", rand.Uint64()))
		f, err := e.FS.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) && tries < 100 {
			continue
		}
		if err != nil {
			if _, merr := e.FS.Stat(filepath.Join(e.Home, cas.MarkerFile)); merr != nil {
				if serr := cas.MissingStore(e.FS, e.Home, merr); serr != nil {
					return nil, storeError{serr} // no store to append to: say that
				}
			}
			if serr := agent.MissingSessionsDir(e.FS, e.Home); serr != nil {
				return nil, storeError{serr} // as any append says it
			}
			return nil, &spoolError{path: name, err: err, store: errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)}
		}
		if err := e.FS.Remove(name); err != nil {
			f.Close()
			e.FS.Remove(name)
			return nil, &spoolError{path: name, err: err}
		}
		return f, nil
	}
}

// readBodyFile reads the body in the file at path, refusing more than
// maxBody bytes: a regular file by its size before reading, anything else
// (a device, a FIFO) while reading, through spool past spillAt (readBody).
// The body comes behind cas.ObjectRoom bytes of room. The error names
// the file and the limit.
func readBodyFile(path string, spool func() (vfs.File, error)) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := int64(-1)
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		size = st.Size()
	}
	b, err := readBody(f, size, spool)
	switch {
	case err == errBodyTooBig && size > maxBody:
		return nil, &bodyTooBigError{fmt.Sprintf("%s is %d bytes, more than the %s an event body (a store object) holds", path, size, bodyLimit())}
	case err == errBodyTooBig:
		return nil, &bodyTooBigError{fmt.Sprintf("%s holds more than the %s an event body (a store object) holds", path, bodyLimit())}
	case err != nil:
		return nil, err // an *os.PathError: it names the file; or a *spoolError
	}
	return b, nil
}

// runJSONL appends one event per line. Each line is its own atomic append;
// a bad line is reported with its number and skipped, and the command then
// exits 1 having appended every good line.
//
// Without --json, each line's seq is printed as soon as it is durable (at
// each barrier, every 256 events, and when the run lets the writer lock
// go while it waits on its input: await), not at the end: a run killed part way
// has printed exactly the lines that are in for sure. With --at, the
// lines already in (those, and any a barrier the kill cut short made
// durable after all) are found by their seq and skipped, so running it
// again appends each line once.
func (c *SessionAppendCmd) runJSONL(e *Env) error {
	in := e.Stdin
	if c.JSONL == "-" {
		e.stdinHint("the events, one JSON object a line,", "give --jsonl FILE")
	} else {
		if err := inputGiven("--jsonl", string(c.JSONL)); err != nil {
			return err
		}
		f, err := os.Open(string(c.JSONL))
		if err != nil {
			return fmt.Errorf("read --jsonl: %w", err)
		}
		defer f.Close()
		in = f
	}
	r, err := e.openRook(true)
	if err != nil {
		return err
	}
	id, err := e.sessionArg(r, c.ID)
	if err != nil {
		r.Close()
		return err
	}
	// next is the seq the next good line is to have (--at, else the
	// session's next); held is how many events the session has: with
	// --at, the lines before it are in already.
	sum, err := r.Log.Summary(id)
	if err != nil {
		r.Close()
		return err
	}
	held := sum.Events
	next := held
	if c.At != nil {
		next = *c.At
		if next > held {
			r.Close()
			return &exitError{code: ExitFailure, msg: fmt.Sprintf("--at %d: session %s has %d events, so its next is #%d: nothing appended", next, id, held, held)}
		}
	}
	type result struct {
		Line int    `json:"line"`
		Seq  uint64 `json:"seq"`
	}
	type bad struct {
		Line  int    `json:"line"`
		Error string `json:"error"`
	}
	// have reads the events in already (--at), in pages, as the lines
	// are checked against them.
	have := &heldEvents{r: r, id: id, end: held}
	var done []result
	var bads []bad
	printed, already := 0, 0
	// safe is how many lines are durable, and through which line: what a
	// Ctrl-C (or SIGTERM), which ends rook at once, says is in; sure is
	// those lines' results (done[:safe], whose elements no later append
	// writes) and sureAlready how many of them were in already.
	var mu sync.Mutex
	var safe, through, sureAlready int
	var sure []result
	first := next
	stopped := onInterrupt(func() {
		if e.JSON {
			return // said in the JSON error (below)
		}
		mu.Lock()
		defer mu.Unlock()
		// The bad lines so far, reported at the end otherwise: the stop
		// must not leave them unsaid.
		for _, b := range bads {
			fmt.Fprintf(e.Stderr, "rook: line %d: %s\n", b.Line, b.Error)
		}
		fmt.Fprintf(e.Stderr, "rook: append --jsonl stopped: %d line(s) are in for sure (through line %d, #%d on); lines after may be too: run it again with --at %d to append the rest, each once\n", safe, through, first, first)
	})
	defer stopped()
	// Under --json the stop is the JSON error, with what a run the store
	// failed part way gives (jsonlFailed): the lines in for sure in the
	// message, resume_at, the --at that appends the rest, and done, the
	// report of those lines and the bad lines so far. A script resumes
	// without parsing the text.
	defer onInterruptJSON(func(je *jsonError) {
		mu.Lock()
		defer mu.Unlock()
		je.Error = fmt.Sprintf("%s: %d line(s) are in for sure (through line %d, #%d on); lines after may be too: run it again with --at %d to append the rest, each once", je.Error, safe, through, first, first)
		at := first
		errs := append([]bad{}, bads...)
		je.ResumeAt = &at
		je.Done = map[string]any{"appended": append([]result{}, sure...), "already": sureAlready, "errors": errs}
	})()
	// addBad records a bad line, under mu: a stop reads bads.
	addBad := func(line int, msg string) {
		mu.Lock()
		defer mu.Unlock()
		bads = append(bads, bad{line, msg})
	}
	// durable prints the seqs of the lines appended so far, all durable.
	durable := func() {
		mu.Lock()
		defer mu.Unlock()
		safe = len(done)
		if safe > 0 {
			through = done[safe-1].Line
		}
		sure, sureAlready = done[:safe:safe], min(already, safe)
		if e.JSON {
			return
		}
		for _, d := range done[printed:] {
			fmt.Fprintln(e.Stdout, d.Seq)
		}
		printed = len(done)
	}
	var mismatch, broken, gone error
	// The lines are read by a goroutine, so that an input idle for
	// jsonlIdle (a producer streaming into --jsonl -, quiet between its
	// events) lets the writer lock go: the lines so far are made durable
	// and printed by the close, and the other writers (hooks appending
	// to other sessions), which wait at most --lock-wait, land
	// meanwhile. The next line takes the lock again, waiting as any
	// writer does. The channel holds no line: the reader reads one line
	// ahead of the append, no more, so the run holds two lines (each up
	// to maxJSONLLine) in memory at most, as one did before the reader
	// was a goroutine: a buffer of lines let it run tens of them ahead of
	// a slow append (a body to compress, a body_file to read).
	lines := make(chan jsonlInput)
	quit := make(chan struct{})
	defer close(quit)
	input := newWaitedReader(in)
	// A regular file's next line is always there to read (a read of it
	// waits on the disk, not on a producer): only another input (a pipe,
	// a terminal) trickles.
	trickles := true
	if f, ok := in.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			trickles = false
		}
	}
	go func() {
		br := bufio.NewReaderSize(input, 64<<10)
		for {
			raw, long, err := readJSONLLine(br, maxJSONLLine) // raw is its own copy
			select {
			case lines <- jsonlInput{raw, long, err}:
			case <-quit:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	idle := time.NewTimer(jsonlIdle)
	defer idle.Stop()
	stall := time.NewTimer(jsonlStall)
	stall.Stop() // (await arms it)
	// taken is when the run took the writer lock, letGo when it let it
	// go last. Wall time, as the timers': how long the lock is held, not
	// a time stored.
	taken, letGo := time.Now(), time.Time{}
	// await waits for the next line holding the writer lock, and says
	// false when the lock is to be let go first: the input idle for
	// jsonlIdle, or, the lock held jsonlHold already, the reader waiting
	// on the input for jsonlStall (a producer that writes a line every
	// 50 ms is never idle, and would hold the lock for its whole stream).
	// Lines read from a file, or from a producer faster than the append,
	// are ready at once or within a short read: the lock is kept.
	await := func() (jsonlInput, bool) {
		idle.Reset(jsonlIdle)
		var stalled <-chan time.Time
		if trickles && time.Since(taken) >= jsonlHold {
			stall.Reset(jsonlStall)
			stalled = stall.C
		}
		for {
			select {
			case got := <-lines:
				return got, true
			case <-idle.C:
				return jsonlInput{}, false
			case <-stalled:
				if input.waited() >= jsonlStall {
					return jsonlInput{}, false
				}
				stall.Reset(jsonlStall) // reading a long line: look again
			}
		}
	}
	// reopen takes the writer lock again after the run let it go,
	// setting mismatch if the session is not as this run left it: events
	// another writer appended to it meanwhile would sit between this
	// run's lines, and the --at that resumes a stopped run would no
	// longer find its lines at their seqs; and gone if it was removed
	// meanwhile (session rm, a prune), with the lines this run put in it.
	reopen := func(line int) error {
		// The lock let go stays so jsonlOff at least: a writer waiting
		// for it tries again every 150 ms at most (cas), and a next line
		// read at once would take it back before that writer's next try.
		if d := jsonlOff - time.Since(letGo); d > 0 {
			time.Sleep(d)
		}
		o, err := e.openRook(true)
		if err != nil {
			return err
		}
		taken = time.Now()
		want := max(next, held)
		sum, err := o.Log.Summary(id)
		switch {
		case errors.Is(err, eventlog.ErrNoSession):
			// The lines in it went with it, and an --at run again can
			// only fail the same: not a failure of the store
			// (jsonlFailed), whose advice is that --at.
			err = nil
			gone = fmt.Errorf("line %d: %w: %s was removed (`rook session rm`, or a prune) while this run had let the writer lock go (its input idle or slow), with the events in it, the %d line(s) this run appended among them; nothing more appended: to keep the input's events, append it whole to a new session (`rook session new`, then `rook session append NEW --jsonl`, without --at)", line, eventlog.ErrNoSession, id, len(done)-already)
		case err != nil || sum.Events == want:
		case next < held:
			// Still checking the lines an earlier run appended: this
			// line and those after it up to #held-1 are in already (a
			// line number for them is not known: bad lines take none).
			mismatch = fmt.Errorf("line %d: session %s has %d events, not the %d this run left: another writer appended to it while this run had let the writer lock go; nothing more appended: this line and the next ones are in already as #%d to #%d (this run had still to check them): append the lines after those again, with --at %d", line, id, sum.Events, want, next, held-1, sum.Events)
		default:
			mismatch = fmt.Errorf("line %d: session %s has %d events, not the %d this run left: another writer appended to it while this run had let the writer lock go; nothing more appended: append the lines from line %d on again, with --at %d", line, id, sum.Events, want, line, sum.Events)
		}
		if err != nil || mismatch != nil || gone != nil {
			o.Close()
			return err
		}
		r, have.r = o, o
		return nil
	}
	line := 0
	for mismatch == nil && broken == nil && gone == nil {
		var got jsonlInput
		select {
		case got = <-lines:
		default:
			if r == nil {
				got = <-lines
				break
			}
			var ok bool
			if got, ok = await(); !ok {
				err := r.Close()
				r, letGo = nil, time.Now()
				if err != nil {
					broken = err // the lines before the last barrier are in
					continue
				}
				durable() // all: the close made them durable
				got = <-lines
			}
		}
		raw, long, rerr := got.raw, got.long, got.err
		if rerr != nil && rerr != io.EOF {
			addBad(line+1, rerr.Error())
			break
		}
		if rerr == io.EOF && len(raw) == 0 && !long {
			break
		}
		line++
		text := bytes.TrimSpace(raw)
		switch {
		case long:
			addBad(line, fmt.Sprintf("longer than %s: give a body this large in a body_file", units.Bytes(maxJSONLLine)))
		case len(text) > 0:
			en, err := parseJSONLine(text, e.bodySpool)
			if err == nil && r == nil {
				if broken = reopen(line); broken != nil || mismatch != nil || gone != nil {
					break
				}
			}
			if err == nil && c.At != nil && next < held {
				// In already, by an earlier run: it must be this line.
				if err = have.same(next, en); err != nil {
					mismatch = fmt.Errorf("line %d: %v: not a run of this input from --at %d; nothing more appended", line, err, *c.At)
					break
				}
				done = append(done, result{line, next})
				already++
				next++
				durable()
				break
			}
			if err == nil {
				var seq uint64
				seq, err = r.Append(id, en)
				if err == nil {
					done = append(done, result{line, seq})
					next = seq + 1
					if r.Log.Unflushed() == 0 {
						durable() // that append made (or was) a barrier
					}
					break
				}
				if r.Failed() != nil {
					// Not this line's fault: the store takes no more (a
					// full disk at a barrier). The lines after are not
					// tried (each was refused and reported as a bad
					// line); the error says the --at that resumes.
					broken = err
					break
				}
			}
			addBad(line, err.Error())
		}
		if rerr == io.EOF {
			break
		}
	}
	err = nil
	if r != nil { // (nil: let go at an idle input, durable() said then)
		if err = r.Close(); err == nil {
			durable() // the rest: the close made them durable
		}
	}
	stopped()
	if err == nil {
		err = broken
	}
	if gone != nil {
		// No report of the lines appended (under --json, no done): they
		// went with the session.
		if !e.JSON {
			for _, b := range bads {
				fmt.Fprintf(e.Stderr, "rook: line %d: %s\n", b.Line, b.Error)
			}
		}
		return gone
	}
	if err != nil {
		// The store failed part way (a full disk): as a stop says, which
		// lines are in for sure and the --at that appends the rest, each
		// once (running it again as it was appends every line again).
		mu.Lock()
		defer mu.Unlock()
		if !e.JSON {
			for _, b := range bads {
				fmt.Fprintf(e.Stderr, "rook: line %d: %s\n", b.Line, b.Error)
			}
		}
		in := append([]result{}, done[:safe]...)
		if bads == nil {
			bads = []bad{}
		}
		return &jsonlFailed{err: err, in: safe, through: through, at: first,
			done: map[string]any{"appended": in, "already": min(already, safe), "errors": bads}}
	}
	if e.JSON {
		if done == nil {
			done = []result{}
		}
		if bads == nil {
			bads = []bad{}
		}
		// A failed write is Main's to tell, after the verdict below.
		if err := unprinted(e.printJSON(map[string]any{"appended": done, "already": already, "errors": bads})); err != nil {
			return err
		}
	} else {
		durable()
		for _, b := range bads {
			fmt.Fprintf(e.Stderr, "rook: line %d: %s\n", b.Line, b.Error)
		}
	}
	if mismatch != nil {
		return mismatch
	}
	if len(bads) > 0 {
		// done holds the lines an earlier run put in too (--at): counted
		// as appended, a run that appended nothing said it had.
		msg := fmt.Sprintf("%d line(s) not appended, %d appended", len(bads), len(done)-already)
		if already > 0 {
			msg += fmt.Sprintf(", %d in already", already)
		}
		return &exitError{code: ExitFailure, msg: msg}
	}
	return nil
}

// jsonlIdle is how long append --jsonl waits for its next line holding
// the writer lock: an input idle longer lets it go (runJSONL). Short
// beside --lock-wait (10s), which the other writers wait; long beside
// the gap between two lines read from a file. A variable so that tests
// that stop a run at a barrier can keep it from letting go first.
var jsonlIdle = 200 * time.Millisecond

// jsonlHold is how long append --jsonl holds the writer lock before it
// lets it go whenever the reader waits on its input (jsonlStall): a
// producer that writes a line every 50 ms is never idle for jsonlIdle,
// and would hold the lock for its whole stream. A variable, as jsonlIdle.
var jsonlHold = time.Second

// jsonlStall is how long the reader of append --jsonl's input must have
// waited in one read of it for the input to count as trickling (after
// jsonlHold): a read of a file, or of a pipe a faster producer keeps
// full, returns well within it, so such a run keeps the lock.
const jsonlStall = 10 * time.Millisecond

// jsonlOff is how long append --jsonl, having let the writer lock go,
// waits at least before it takes it again: longer than the pause between
// two tries of a writer waiting for the lock (cas, under 150 ms), so
// that one gets it even when the next line comes at once.
const jsonlOff = 200 * time.Millisecond

// waitedReader is append --jsonl's input, saying how long the read of
// it under way (if one is) has waited: the producer's next line not yet
// written. The reader goroutine reads it; the append loop asks.
type waitedReader struct {
	r io.Reader
	// since is when the read under way began, in nanoseconds after
	// base, plus one; 0 between reads.
	since atomic.Int64
	base  time.Time
}

func newWaitedReader(r io.Reader) *waitedReader {
	return &waitedReader{r: r, base: time.Now()}
}

func (w *waitedReader) Read(p []byte) (int, error) {
	w.since.Store(int64(time.Since(w.base)) + 1)
	defer w.since.Store(0)
	return w.r.Read(p)
}

// waited is how long the read under way has waited; 0 if none is.
func (w *waitedReader) waited() time.Duration {
	s := w.since.Load()
	if s == 0 {
		return 0
	}
	return time.Since(w.base) - time.Duration(s-1)
}

// jsonlInput is a line of append --jsonl's input, as readJSONLLine
// returns it.
type jsonlInput struct {
	raw  []byte
	long bool
	err  error
}

// jsonlFailed is the error of an append --jsonl the store failed part
// way (a full disk at a barrier or at the close; the writer lock not
// taken again, --lock-wait over, after an idle input let it go): err,
// with how many lines are in for sure (in, through line through) and the
// --at that appends the rest, each once. Under --json, done is what the run's
// report holds of the lines in for sure (its success's shape).
type jsonlFailed struct {
	err         error
	in, through int
	at          uint64
	done        any
}

func (e *jsonlFailed) Error() string { return e.message("") }
func (e *jsonlFailed) Unwrap() error { return e.err }

// message is the error with what to do: free space first when the disk
// holding the store (home) is full.
func (e *jsonlFailed) message(home string) string {
	fix := "fix that, then run"
	if le := (*cas.LockedError)(nil); errors.As(e.err, &le) {
		// Taking the lock again after an idle input let it go.
		fix = "wait for that writer to finish (`rook doctor` shows the holder; --lock-wait DURATION waits longer), then run"
	}
	if errors.Is(e.err, syscall.ENOSPC) || errors.Is(e.err, syscall.EDQUOT) {
		fix = "the disk holding the store is full: free space, then run"
		if home != "" {
			fix = fmt.Sprintf("the disk holding the store %s is full: free space, then run", home)
		}
	}
	return fmt.Sprintf("%v: %d line(s) are in for sure (through line %d, #%d on); lines after may be too: %s it again with --at %d to append the rest, each once (without --at it appends every line again)",
		e.err, e.in, e.through, e.at, fix, e.at)
}

// heldEvents reads the events a session holds already, in order, a page
// at a time, for a --jsonl run with --at to check its lines against: one
// read of the log a page, not one a line (two opens of the log and a
// search each: a run again over 100,000 lines in took ten times the
// append, holding the writer lock). Memory: one page of events (their
// bodies are keys).
type heldEvents struct {
	r   *agent.Rook
	id  eventlog.ID
	end uint64 // the session's events when the run began
	// page holds the events read last, consecutive seqs.
	page []eventlog.Event
}

// heldPage is how many events heldEvents reads at a time.
const heldPage = 1024

// same says whether event seq of the session (below end) is the one en
// would append (kind, label, tokens, body), and if not, how it differs.
// The seqs are asked for in order.
func (h *heldEvents) same(seq uint64, en agent.Entry) error {
	if len(h.page) == 0 || seq < h.page[0].Seq || seq > h.page[len(h.page)-1].Seq {
		h.page = nil
		evs, err := h.r.Log.Read(h.id, seq, int(min(heldPage, max(h.end-seq, 1))))
		if err != nil {
			return err
		}
		if len(evs) == 0 || evs[0].Seq != seq {
			return fmt.Errorf("session %s has no event #%d", h.id, seq)
		}
		h.page = evs
	}
	ev := h.page[seq-h.page[0].Seq]
	if ev.Seq != seq {
		return fmt.Errorf("session %s has no event #%d", h.id, seq)
	}
	if ev.Kind != en.Kind || ev.Label != en.Label || ev.TokensIn != en.TokensIn || ev.TokensOut != en.TokensOut || ev.Body != cas.ID(en.Body) {
		return fmt.Errorf("session %s holds a different event at #%d (%s %q)", h.id, seq, ev.Kind, ev.Label)
	}
	return nil
}

// maxBody is the largest event body append reads (FILE, stdin, a
// body_file): the store's limit on an object. A variable so that tests
// can lower it.
var maxBody int64 = cas.MaxObjectSize

// maxJSONLLine bounds a line of append --jsonl (a larger body goes in a
// body_file).
const maxJSONLLine = 64 << 20

// readJSONLLine reads one line, without its newline. A line longer than
// max is read to its end and dropped (long), so that the lines after it
// are still read: a scanner stopped there, and every good line after a
// long one was left out without a word.
func readJSONLLine(br *bufio.Reader, max int) (line []byte, long bool, err error) {
	for {
		frag, err := br.ReadSlice('\n')
		if !long && len(line)+len(bytes.TrimSuffix(frag, []byte("\n"))) > max {
			long, line = true, nil
		}
		if !long {
			line = append(line, frag...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return bytes.TrimSuffix(line, []byte("\n")), long, err
	}
}

func parseJSONLine(text []byte, spool func() (vfs.File, error)) (agent.Entry, error) {
	var j jsonlEvent
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		// A value of the wrong type said in the line's terms, not Go's
		// ("into Go value of type cli.jsonlEvent").
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te) && te.Field == "":
			return agent.Entry{}, fmt.Errorf("not a JSON event: a JSON %s, where a line is one JSON object: {\"kind\": ..., \"body\": ...}", te.Value)
		case errors.As(err, &te):
			want := "a string"
			if te.Type.Kind() == reflect.Uint64 {
				want = "a whole number of 0 or more"
			}
			return agent.Entry{}, fmt.Errorf("not a JSON event: its %q is a JSON %s, where it takes %s", te.Field, te.Value, want)
		}
		return agent.Entry{}, fmt.Errorf("not a JSON event: %v", err)
	}
	// One object a line: a second one after it (two lines joined) was
	// dropped without a word.
	if _, err := dec.Token(); err != io.EOF {
		return agent.Entry{}, errors.New("not a JSON event: more after the object: give one JSON object a line")
	}
	// JSON decoding stores what no JSON string holds (bytes that are not
	// UTF-8, half a surrogate pair) as U+FFFD: a body changed without a
	// word. Refused instead, with the way to give such bytes.
	if !utf8.Valid(text) {
		return agent.Entry{}, errors.New("not a JSON event: it holds bytes that are not UTF-8, which a JSON string cannot carry (they would be stored as U+FFFD): give such a body in a body_file")
	}
	if loneSurrogate(text) {
		return agent.Entry{}, errors.New("not a JSON event: it holds half of a UTF-16 surrogate pair (a \\uD800 to \\uDFFF escape without its other half), which no character is (it would be stored as U+FFFD): give such a body in a body_file")
	}
	kind, err := eventlog.ParseKind(j.Kind)
	if err != nil {
		return agent.Entry{}, err
	}
	if j.LabelBase64 != nil {
		b, err := base64.StdEncoding.DecodeString(*j.LabelBase64)
		if err != nil {
			return agent.Entry{}, fmt.Errorf("label_base64 is not standard base64: %v", err)
		}
		// A line of `--json session show` carries both: label as JSON
		// wrote it (U+FFFD for each byte that is not UTF-8), and its
		// bytes. A label that is not that is another label.
		if j.Label != "" && j.Label != asJSONWrites(string(b)) {
			return agent.Entry{}, errors.New("label and label_base64 are two different labels: give one (label_base64 for a label that is not UTF-8)")
		}
		j.Label = string(b)
	}
	if len(j.Label) > eventlog.MaxLabel {
		return agent.Entry{}, fmt.Errorf("label is %d bytes; at most %d", len(j.Label), eventlog.MaxLabel)
	}
	en := agent.Entry{Kind: kind, Label: j.Label, TokensIn: j.TokensIn, TokensOut: j.TokensOut}
	switch {
	case j.Body != nil && j.BodyFile != "":
		return en, errors.New("give body or body_file, not both")
	case j.BodyFile != "":
		b, err := readBodyFile(j.BodyFile, spool)
		var big *bodyTooBigError
		if errors.As(err, &big) {
			return en, fmt.Errorf("body_file %v", big)
		}
		if err != nil {
			return en, fmt.Errorf("body_file: %v", err)
		}
		en.Body, en.InPlace = b[cas.ObjectRoom:], b
	case j.Body != nil:
		en.Body = []byte(*j.Body)
	}
	return en, checkpointBody(kind, en.Label, en.Body)
}

// asJSONWrites is s as encoding/json writes it and reads it back: each
// byte that is not UTF-8 becomes U+FFFD.
func asJSONWrites(s string) string {
	b, _ := json.Marshal(s)
	var out string
	_ = json.Unmarshal(b, &out)
	return out
}

// loneSurrogate reports whether JSON text that decodes holds a \u escape
// of a UTF-16 surrogate that is not one of a high-then-low pair.
func loneSurrogate(text []byte) bool {
	high := false // the escape just before was a high surrogate
	for i := 0; i < len(text); i++ {
		if text[i] != '\\' {
			if high {
				return true
			}
			continue
		}
		if i+1 >= len(text) || text[i+1] != 'u' || i+6 > len(text) {
			if high {
				return true
			}
			i++ // an escape of one character: \\, \", \n...
			continue
		}
		v, err := strconv.ParseUint(string(text[i+2:i+6]), 16, 16)
		if err != nil {
			return false // not JSON: the decoder said so already
		}
		switch {
		case v >= 0xD800 && v <= 0xDBFF:
			if high {
				return true
			}
			high = true
		case v >= 0xDC00 && v <= 0xDFFF:
			if !high {
				return true
			}
			high = false
		default:
			if high {
				return true
			}
		}
		i += 5
	}
	return high
}

// checkpointBody refuses a checkpoint event whose body is no capture
// manifest: session diff and rewind read every checkpoint of a session,
// and one appended by hand ("step 1 done") made them fail on that
// session for good, an event being there to stay.
//
// A note labelled as an import's late capture of file backups
// (agent.LateCaptureLabel) is read as a capture too, by the same commands.
func checkpointBody(kind eventlog.Kind, label string, body []byte) error {
	if kind == eventlog.KindNote && agent.LateCaptureLabel(label) {
		if _, err := agent.DecodeManifest(body); err != nil {
			return fmt.Errorf("a note labelled %s is read by session diff and rewind as a capture: its body is a capture manifest, and this is none (%v): they would fail on it; give it another label", label, err)
		}
		return nil
	}
	if kind != eventlog.KindCheckpoint {
		return nil
	}
	if _, err := agent.DecodeManifest(body); err != nil {
		return fmt.Errorf("a checkpoint event's body is a capture manifest, as `rook session capture` writes it, and this is none (%v): session diff and rewind would fail on it; give it as --kind note", err)
	}
	return nil
}

// SessionLsCmd is `rook session ls`.
type SessionLsCmd struct {
	All bool `help:"Every workspace, not only this one."`
}

type sessionRow struct {
	eventlog.Summary
	Fork  bool `json:"fork"`
	Child bool `json:"child"`
	// Depth is how far under its parent the row is listed: 0 at the top,
	// 1 right under its parent, 2 under one of its parent's children...
	Depth int `json:"depth"`
	// Of a native fork (session fork, rewind), whose events and tokens
	// include the copy of its parent's first fork_at events: its own,
	// from fork_at on.
	OwnEvents    *uint64 `json:"own_events,omitempty"`
	OwnTokensIn  *uint64 `json:"own_tokens_in,omitempty"`
	OwnTokensOut *uint64 `json:"own_tokens_out,omitempty"`
	// ParentRemoved: its parent is gone (session rm, prune). Listed at
	// the top with "↳" as any fork, it read as a fork of whatever session
	// was listed above it, its grandparent often.
	ParentRemoved bool `json:"parent_removed,omitempty"`
	// ParentWorkspace: its parent is there but not listed, being in
	// another workspace (plain ls lists one). Listed at the top with "↳",
	// it read as a fork of the session above it, as a removed parent's
	// did.
	ParentWorkspace string `json:"parent_workspace,omitempty"`
	// ParentUnreadable: its parent is there but not listed, its metadata
	// or log not reading (named on stderr). Listed at the top with "↳",
	// it read as a fork of the session above it, as a removed parent's
	// did.
	ParentUnreadable bool `json:"parent_unreadable,omitempty"`
	// ParentNotImported: of an imported subagent or fork with no parent,
	// the session id its transcript names its parent by (in its agent),
	// no session of which is in the store: its file was imported alone.
	// Listed at the top with no mark, it read as a session of its own.
	ParentNotImported string `json:"parent_not_imported,omitempty"`
	unlinked          *agent.UnlinkedParent
}

func (c *SessionLsCmd) Run(e *Env) error {
	if _, err := e.workDir(); err != nil && !c.All {
		return err // this workspace's sessions: --all needs no directory
	}
	r, err := e.openRook(false)
	if err != nil {
		return err
	}
	defer r.Close()
	// Sessions that do not read are left out of the list and named on
	// stderr, and the command exits 1 after listing the others: one
	// damaged session must not hide the rest.
	//
	// Plain ls reads the logs of this workspace's sessions only (and of
	// their parents, below): every session's metadata says where it is.
	// A log that does not read in another workspace is not this listing's
	// to name (`ls --all`, `store verify` do); metadata that does not read
	// is, whatever its workspace: which it is may be what does not read.
	//
	// Every session's metadata is read, so the keep function also notes
	// which agents' sessions the store holds (by format and source id),
	// to tell a subagent or fork whose parent's file was not imported.
	agentIDs := map[[2]string]bool{}
	here := agent.NewWorkspace(e.FS, e.Cwd)
	keep := func(m eventlog.Meta) bool {
		if m.Source != nil {
			agentIDs[[2]string{m.Source.Format, m.Source.ID}] = true
			agentIDs[[2]string{m.Source.Format, agent.SourceIDOf(m)}] = true
		}
		return c.All || here.Holds(m.Workspace)
	}
	all, others, err := r.Log.SessionsWhere(keep)
	var unreadable *eventlog.UnreadableError
	if err != nil && !errors.As(err, &unreadable) {
		return err
	}
	agent.SortByLastActive(all)
	rows := []sessionRow{}
	for _, s := range all {
		// An imported fork (a Codex rollout's forked_from_id) holds a copy
		// of its parent's lines, not its parent's events: no fork point.
		imported := agent.ImportedFork(s.Meta)
		row := sessionRow{Summary: s, Fork: s.ForkAt != nil || imported, Child: s.Parent != nil && s.ForkAt == nil && !imported}
		// "updated" is what orders the list and what retention ages
		// by (prune shows it so): a fork made now is updated now, not
		// when the last event it copied was written.
		row.Updated = agent.LastActive(s)
		if u := agent.UnlinkedParentOf(s.Meta); u != nil && !agentIDs[[2]string{u.Format, u.SourceID}] {
			row.ParentNotImported, row.unlinked = u.SourceID, u
		}
		if at := s.ForkAt; at != nil && *at <= s.Events {
			// A log damaged before the fork point still lists, with
			// its totals, as a damaged session does: one session
			// must not stop the listing.
			if in, out, err := r.Log.TokensBefore(s.ID, *at); err == nil {
				// The totals leave out the copied tokens the parent's
				// did (Meta.Copied), which are in its first ForkAt.
				cin, cout := s.Copied()
				in, out = in-min(cin, in), out-min(cout, out)
				own, ownIn, ownOut := s.Events-*at, s.TokensIn-in, s.TokensOut-out
				row.OwnEvents, row.OwnTokensIn, row.OwnTokensOut = &own, &ownIn, &ownOut
			}
		}
		rows = append(rows, row)
	}
	// Listed: in rows, not in the store (a parent in another workspace
	// is not listed without --all).
	listed := make(map[eventlog.ID]bool, len(rows))
	for _, row := range rows {
		listed[row.ID] = true
	}
	byID := make(map[eventlog.ID]eventlog.Summary, len(all))
	for _, s := range all {
		byID[s.ID] = s
	}
	for i, row := range rows {
		p := row.Parent
		if p == nil || *p == row.ID || listed[*p] {
			continue
		}
		ps, ok := byID[*p]
		if !ok && !c.All {
			// Not summarised: in another workspace (or gone, or not
			// reading), its log read now. One that does not read is
			// named on stderr as this listing's own are: a row says so.
			if s, err := r.Log.Summary(*p); err == nil {
				ps, ok = s, true
				byID[*p] = s
			} else if !errors.Is(err, eventlog.ErrNoSession) && !r.Log.RemovedSince(*p, err) {
				unreadable = addUnreadable(unreadable, *p, err)
			}
		}
		if !ok {
			// Not in the listing: removed, or a session that does not
			// read (its metadata, or its log: Sessions left it out).
			_, err := r.Log.ReadMeta(*p)
			rows[i].ParentRemoved = errors.Is(err, eventlog.ErrNoSession)
			rows[i].ParentUnreadable = !rows[i].ParentRemoved
			continue
		}
		if !here.Holds(ps.Workspace) {
			rows[i].ParentWorkspace = ps.Workspace
		}
	}
	rows = underParents(rows)
	if e.JSON {
		// A failed write is Main's to tell, after unreadableSessions'
		// verdict. One that could not be encoded (a time past the year
		// 9999, from a store an older rook imported it into) fails now.
		if err := unprinted(e.printJSON(rows)); err != nil {
			return err
		}
		return unreadableSessions(e, unreadable)
	}
	if len(rows) == 0 && c.All {
		// Not "in" the current directory: --all looked at every workspace.
		fmt.Fprintf(e.Stdout, "no sessions in the store %s\n", e.Home)
	} else if len(rows) == 0 {
		fmt.Fprintf(e.Stdout, "no sessions in %s\n", e.Cwd)
	} else {
		t := &table{right: map[int]bool{2: true}}
		t.add("id", "title", "events", "tokens in/out", "updated", "workspace")
		for _, s := range rows {
			title, note := s.Title, ""
			if title == "" {
				title = "(untitled)"
			}
			if s.ParentRemoved {
				// Not "↳": nothing listed is its parent.
				what := "orphan"
				if s.Fork && s.ForkAt != nil {
					what = fmt.Sprintf("orphan @%d", *s.ForkAt)
				} else if s.Fork {
					what = "orphan fork"
				}
				title = fmt.Sprintf("(%s) %s", what, title)
			} else if s.ParentWorkspace != "" || s.ParentUnreadable {
				// Not "↳" either: its parent is not in this list.
				what := "child"
				if s.Fork && s.ForkAt != nil {
					what = fmt.Sprintf("fork @%d", *s.ForkAt)
				} else if s.Fork {
					what = "fork"
				}
				where := "parent in another workspace"
				if s.ParentUnreadable {
					where = "parent does not read"
				}
				// Said whole, before the title is clipped: cut, it
				// would leave nothing of the title.
				note = fmt.Sprintf("(%s, %s) ", what, where)
			} else if s.ParentNotImported != "" {
				// Not "↳" either: no session of its parent is here.
				what := "child"
				if s.unlinked.Subagent {
					what = "subagent"
				} else if s.unlinked.Fork {
					what = "fork"
				}
				note = fmt.Sprintf("(%s, parent not imported) ", what)
			} else if s.Fork && s.ForkAt == nil {
				title = "↳fork " + title
			} else if s.Fork {
				// A rewind's fork is titled "... @N" already ("@N", of an
				// untitled session's: it read "↳@N @N").
				if at := fmt.Sprintf(" @%d", *s.ForkAt); strings.HasSuffix(title, at) || s.Title == at[1:] {
					title = "↳ " + title
				} else {
					title = fmt.Sprintf("↳@%d %s", *s.ForkAt, title)
				}
			} else if s.Child {
				title = "↳ " + title
			}
			// The title is clipped, never the tree: clipped with its
			// indent, a fork 20 deep showed nothing of its title ("…").
			title = clip(title, 40)
			if s.Depth > 1 {
				title = strings.Repeat("  ", s.Depth-1) + title
			}
			events, tokens := fmt.Sprint(s.Events), fmt.Sprintf("%d/%d", s.TokensIn, s.TokensOut)
			if s.OwnEvents != nil {
				// A fork's totals hold its copy of the parent's
				// events: its own are said beside them.
				events = fmt.Sprintf("%d (%d own)", s.Events, *s.OwnEvents)
				tokens = fmt.Sprintf("%s (%d/%d own)", tokens, *s.OwnTokensIn, *s.OwnTokensOut)
			}
			t.add(s.ID.String(), note+title, events, tokens, shownTime(s.Updated), s.Workspace)
		}
		t.write(e.Stdout) // a failed write is Main's to tell, after unreadableSessions' verdict
	}
	if others > 0 {
		fmt.Fprintf(e.Stdout, "(%d more in other workspaces: `rook session ls --all`)\n", others)
	}
	return unreadableSessions(e, unreadable)
}

// addUnreadable adds session id's error to u (made when nil), unless id
// is in it already.
func addUnreadable(u *eventlog.UnreadableError, id eventlog.ID, err error) *eventlog.UnreadableError {
	if u == nil {
		u = &eventlog.UnreadableError{}
	}
	if !slices.Contains(u.IDs, id) {
		u.IDs, u.Errs = append(u.IDs, id), append(u.Errs, err)
	}
	return u
}

// unreadableSessions names on stderr the sessions a listing left out for
// not reading (each error says what is wrong and what to do), and exits 1;
// nil when there are none. Whatever their workspace: which it is may be
// what does not read.
func unreadableSessions(e *Env, u *eventlog.UnreadableError) error {
	if u == nil {
		return nil
	}
	if !e.JSON {
		for _, err := range u.Errs {
			fmt.Fprintf(e.Stderr, "rook: %s\n", terminalLine(err.Error()))
		}
	}
	return &exitError{code: ExitFailure, msg: fmt.Sprintf("%d session(s) do not read and are not listed (%s)", len(u.Errs), unreadableAdvice(u))}
}

// unreadableAdvice says what to do about the sessions u names. One that
// permission keeps from reading (a .meta or log a `sudo rook` or a hook
// run as root made, a chmod) is not damaged: its permissions are what to
// fix, and `rook session rm ID`, the advice for damage, deleted it whole.
// (`session ls --all` and `rook doctor` give the same advice.)
func unreadableAdvice(u *eventlog.UnreadableError) string {
	const damaged = "`rook store verify` lists every problem; `rook session rm ID` removes a session"
	const denied = "their files' permissions keep them from reading, which is no damage: make the files readable by the store's owner (`chmod 600 FILE` as that owner; as root, `chown OWNER FILE` of a file another account made: `rook doctor` names them), or run rook as the account that may read them"
	var perm, other []string
	for i, err := range u.Errs {
		if errors.Is(err, fs.ErrPermission) {
			perm = append(perm, u.IDs[i].String())
		} else {
			other = append(other, u.IDs[i].String())
		}
	}
	switch {
	case len(perm) == 0:
		return damaged
	case len(other) == 0:
		return denied
	}
	return fmt.Sprintf("%d for want of permission (%s): %s; the others (%s): %s", len(perm), strings.Join(perm, ", "), denied, strings.Join(other, ", "), damaged)
}

// underParents puts each fork and child right under its parent when the
// parent is listed too, its own children under it in turn. rows come most
// recently active first; a family is listed where its most recently active
// member is, and so are siblings among themselves: the session `last`
// names is in the first family listed. Depth says how far under.
func underParents(rows []sessionRow) []sessionRow {
	at := make(map[eventlog.ID]int, len(rows))
	for i, r := range rows {
		at[r.ID] = i
	}
	parent := func(i int) (int, bool) {
		r := rows[i]
		if r.Parent == nil || *r.Parent == r.ID {
			return 0, false
		}
		p, ok := at[*r.Parent]
		return p, ok
	}
	// rank: the place of the most recently active row of each row's
	// family below it (itself included).
	rank := make([]int, len(rows))
	for i := range rank {
		rank[i] = i
	}
	for i := range rows {
		seen := map[int]bool{i: true}
		for j := i; ; {
			p, ok := parent(j)
			if !ok || seen[p] {
				break // the top, or a parent loop (which nothing writes)
			}
			seen[p] = true
			rank[p] = min(rank[p], i)
			j = p
		}
	}
	kids := map[int][]int{}
	var top []int
	for i := range rows {
		if p, ok := parent(i); ok {
			kids[p] = append(kids[p], i)
		} else {
			top = append(top, i)
		}
	}
	byRank := func(is []int) { sort.SliceStable(is, func(a, b int) bool { return rank[is[a]] < rank[is[b]] }) }
	byRank(top)
	out := make([]sessionRow, 0, len(rows))
	placed := make([]bool, len(rows))
	var place func(i, depth int)
	place = func(i, depth int) {
		if placed[i] {
			return
		}
		placed[i] = true
		r := rows[i]
		r.Depth = depth
		out = append(out, r)
		byRank(kids[i])
		for _, k := range kids[i] {
			place(k, depth+1)
		}
	}
	for _, i := range top {
		place(i, 0)
	}
	// A parent loop leaves rows unplaced: list them rather than lose them.
	for i := range rows {
		place(i, 0)
	}
	return out
}

// clip cuts s to n terminal cells, marking the cut, and makes it fit for
// a terminal (terminalLine). It cuts between grapheme clusters, never
// inside one: cut by runes, a title of wide characters took up to twice
// its column, and a cut between a letter and its accent dropped the
// accent.
func clip(s string, n int) string {
	return cells.Truncate(terminalLine(s), n, "…")
}

// rmLogWithoutMeta is `session rm ARG` where ARG names no session
// (notFound, the error resolving it gave): an event log with no .meta
// beside it, named by its full id (the file's name), is removed; a prefix
// of one removes nothing, and the error says which log it is and how to
// remove it.
func rmLogWithoutMeta(r *agent.Rook, arg string, notFound error) (eventlog.ID, eventlog.LeftoverLog, []eventlog.ID, error) {
	logs, err := r.LogsWithoutMetaMatching(arg)
	if err != nil {
		return eventlog.ID{}, eventlog.LeftoverLog{}, nil, fmt.Errorf("%w (and the event logs with no .meta do not list: %v)", notFound, err)
	}
	if len(logs) == 0 {
		return eventlog.ID{}, eventlog.LeftoverLog{}, nil, notFound
	}
	id, perr := eventlog.ParseID(strings.ToUpper(strings.TrimSpace(arg)))
	if perr == nil && len(logs) == 1 && filepath.Base(logs[0]) == id.String()+".log" {
		left, kids, err := r.RemoveLogWithoutMeta(id)
		return id, left, kids, err
	}
	if len(logs) == 1 {
		name := strings.TrimSuffix(filepath.Base(logs[0]), ".log")
		return eventlog.ID{}, eventlog.LeftoverLog{}, nil, fmt.Errorf("%w matches %q: the event log %s has no .meta beside it (`rook doctor` and `rook store verify` list it); `rook session rm %s` removes it", eventlog.ErrNoSession, arg, logs[0], name)
	}
	named := strings.Join(logs[:min(len(logs), 3)], ", ")
	if len(logs) > 3 {
		named += fmt.Sprintf(" and %d more", len(logs)-3)
	}
	return eventlog.ID{}, eventlog.LeftoverLog{}, nil, fmt.Errorf("%w matches %q: the event logs %s have no .meta beside them (`rook doctor` and `rook store verify` list them); `rook session rm` with one's full id (its file's name) removes it", eventlog.ErrNoSession, arg, named)
}

// SessionForkCmd is `rook session fork`.
type SessionForkCmd struct {
	ID    string `arg:"" help:"Session id, unique prefix, or last."`
	At    uint64 `required:"" placeholder:"N" help:"Keep events [0, N): the fork starts before event N."`
	Title string `help:"The fork's title (default: the parent's)."`
}

func (c *SessionForkCmd) Run(e *Env) error {
	if err := agent.ValidTitle(c.Title); err != nil {
		return usageErr("--%v", err)
	}
	var id eventlog.ID
	var m eventlog.Meta
	err := e.writeSession(c.ID, func(r *agent.Rook, sid eventlog.ID) (err error) {
		id = sid
		m, err = r.Log.Fork(id, c.At, eventlog.Meta{Title: c.Title})
		return err
	})
	if err != nil {
		return err
	}
	if e.JSON {
		return e.printJSON(map[string]any{"id": m.ID, "parent": id, "fork_at": c.At, "events": c.At})
	}
	fmt.Fprintln(e.Stdout, m.ID)
	fmt.Fprintf(e.Stderr, "rook: forked %d event(s) of %s into %s\n", c.At, id, m.ID)
	return nil
}

// rmUnread says why a removed session's event count is not known: where
// its log is damaged, or what did not read. Not the error's own advice
// (fork the events before the damage, remove the session), which was for
// a session that is there.
func rmUnread(err error) string {
	if at, ok := eventlog.DamagedAt(err); ok {
		return fmt.Sprintf("whose log was damaged at event %d", at)
	}
	var he *eventlog.HeaderError
	if errors.As(err, &he) {
		return fmt.Sprintf("whose log's header did not read (%v)", he.Err)
	}
	return fmt.Sprintf("whose log did not read (%v)", err)
}

// SessionRmCmd is `rook session rm`.
type SessionRmCmd struct {
	ID string `arg:"" help:"Session id or unique prefix (not last: name what you delete)."`
}

func (c *SessionRmCmd) Run(e *Env) error {
	if strings.EqualFold(c.ID, "last") {
		return usageErr("session rm needs an id or prefix, not `last`")
	}
	var id eventlog.ID
	var removed eventlog.Removed
	children := []eventlog.ID{} // its forks and subagents: they stay
	damaged := false
	var left *eventlog.LeftoverLog // an event log with no .meta, removed
	err := e.write(func(r *agent.Rook) (err error) {
		sid, err := e.sessionArg(r, c.ID)
		if errors.Is(err, eventlog.ErrNoSession) {
			// An event log whose .meta is gone is no session, but doctor
			// and verify list it, and rm, named its full id, removes it.
			lid, l, kids, lerr := rmLogWithoutMeta(r, c.ID, err)
			if lerr != nil {
				return lerr
			}
			id, left = lid, &l
			children = append(children, kids...)
			return nil
		}
		if err != nil {
			return err
		}
		id = sid
		// A damaged metadata is passed over: rm is how a damaged
		// session is got rid of.
		_, merr := r.Log.ReadMeta(id)
		damaged = merr != nil
		var kids []eventlog.ID
		removed, kids, err = r.RemoveSessionListingChildren(id)
		children = append(children, kids...)
		return err
	})
	if err != nil {
		return err
	}
	if e.JSON {
		out := map[string]any{"id": id, "events_removed": removed.Events, "children_kept": children}
		if damaged || removed.CountErr != nil {
			out["events_removed"] = nil // unknown: the metadata or the log did not read
		}
		if left != nil {
			out["events_removed"], out["log_without_meta"] = left.Events, left.Path
			if left.CountErr != nil {
				out["events_removed"] = nil // unknown: the log did not read
			}
		}
		return e.printJSON(out)
	}
	if left != nil {
		held := fmt.Sprintf("it held %d event(s) (%d bytes)", left.Events, left.Bytes)
		if left.CountErr != nil {
			held = fmt.Sprintf("how many events it held is not known (its log does not read: %v)", left.CountErr)
		}
		fmt.Fprintf(e.Stdout, "removed the event log %s, which had no .meta beside it (no session listed it): %s; the objects they name stay in the store until `rook store gc` reclaims them\n", left.Path, held)
	} else if damaged {
		fmt.Fprintf(e.Stdout, "removed session %s, whose metadata could not be read (how many events it had is not known); their bodies stay in the store until `rook store gc` reclaims them\n", id)
	} else if removed.CountErr != nil {
		fmt.Fprintf(e.Stdout, "removed session %s, %s: how many events it held is not known; their bodies stay in the store until `rook store gc` reclaims them\n", id, rmUnread(removed.CountErr))
	} else {
		fmt.Fprintf(e.Stdout, "removed session %s with %d event(s); their bodies stay in the store until `rook store gc` reclaims them\n", id, removed.Events)
	}
	if len(children) > 0 {
		// A fork holds its own copy of the events it took; a subagent's
		// session is its own file's. Neither is removed with its parent.
		fmt.Fprintf(e.Stdout, "its %d fork(s) and child session(s) are kept (the first: %s); `rook session rm` each to remove them too\n", len(children), children[0])
	}
	return nil
}
