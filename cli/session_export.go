package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/rookhq/rook/agent"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// ContextCmd is `rook session context`.
type ContextCmd struct {
	ID     string `arg:"" help:"Session id, unique prefix, or last."`
	Window *int   `help:"The context window, in tokens (default: the one an imported Codex session's transcript recorded, else 200000)." placeholder:"TOKENS"`
}

type contextKindJSON struct {
	Kind   string  `json:"kind"`
	Events int64   `json:"events"`
	Bytes  int64   `json:"bytes"`
	Tokens int64   `json:"tokens"`
	Share  float64 `json:"share"` // of the in-context tokens, 0 to 1
}

type contextJSON struct {
	Session         eventlog.ID       `json:"session"`
	Title           string            `json:"title"`
	Window          int64             `json:"window"`
	WindowFrom      string            `json:"window_from"` // "flag", "transcript" or "default"
	Reserve         int64             `json:"reserve"`
	Usable          int64             `json:"usable"`
	Threshold       int64             `json:"compaction_threshold"`
	InContextTokens int64             `json:"in_context_tokens"`
	InContextBytes  int64             `json:"in_context_bytes"`
	InContextEvents int64             `json:"in_context_events"`
	PercentOfUsable float64           `json:"percent_of_usable"`
	OverThreshold   bool              `json:"over_threshold"`
	ThresholdBy     string            `json:"over_threshold_by"` // "reported" (the transcript's own count), "estimate", or "larger" (of the two: a fork of an imported session continued in rook)
	UnseenTokens    int64             `json:"unseen_tokens"`
	UnseenBytes     int64             `json:"unseen_bytes"`
	UnseenEvents    int64             `json:"unseen_events"`
	EverTokens      int64             `json:"ever_tokens"`
	EverBytes       int64             `json:"ever_bytes"`
	EverEvents      int64             `json:"ever_events"`
	Compactions     int64             `json:"compactions"`
	RolledBackTurns int64             `json:"rolled_back_turns"`
	RolledBackEvts  int64             `json:"rolled_back_events"`
	ReplayFrom      uint64            `json:"replay_from"`
	TokensIn        uint64            `json:"recorded_tokens_in"`
	TokensOut       uint64            `json:"recorded_tokens_out"`
	ReportedTokens  *uint64           `json:"reported_tokens,omitempty"`
	ReportedAt      *uint64           `json:"reported_at,omitempty"`
	ReportedPercent *float64          `json:"reported_percent_of_usable,omitempty"`
	MissingBodies   int64             `json:"missing_bodies"`
	Unreadable      int64             `json:"unreadable_bodies"`
	Kinds           []contextKindJSON `json:"kinds"`
}

func (c *ContextCmd) Run(e *Env) error {
	if c.Window != nil && *c.Window < 1 {
		return usageErr("--window must be 1 token or more")
	}
	r, id, err := e.readSession(c.ID)
	if err != nil {
		return err
	}
	defer r.Close()
	window, from := int64(agent.DefaultContextWindow), "default"
	if c.Window != nil {
		window, from = int64(*c.Window), "flag"
	}
	rep, err := r.Context(id, window)
	if err != nil {
		return err
	}
	if c.Window == nil && rep.RecordedWindow > 0 {
		// The model's own window, as its transcript recorded it.
		rep.SetWindow(rep.RecordedWindow)
		from = "transcript"
	}
	share := func(n int64) float64 {
		if rep.InContextTokens == 0 {
			return 0
		}
		return float64(n) / float64(rep.InContextTokens)
	}
	if e.JSON {
		out := contextJSON{
			Session: id, Title: rep.Session.Title,
			Window: rep.Window, WindowFrom: from, Reserve: rep.Reserve, Usable: rep.Usable, Threshold: rep.Threshold,
			InContextTokens: rep.InContextTokens, InContextBytes: rep.InContextBytes, InContextEvents: rep.InContextEvents,
			PercentOfUsable: rep.PercentOfUsable(), OverThreshold: rep.OverThreshold(), ThresholdBy: "estimate",
			UnseenTokens: rep.UnseenTokens, UnseenBytes: rep.UnseenBytes, UnseenEvents: rep.UnseenEvents,
			EverTokens: rep.EverTokens, EverBytes: rep.EverBytes, EverEvents: rep.EverEvents,
			Compactions: rep.Compactions, ReplayFrom: rep.ReplayFrom,
			RolledBackTurns: rep.RolledBackTurns, RolledBackEvts: rep.RolledBackEvents,
			TokensIn: rep.Session.TokensIn, TokensOut: rep.Session.TokensOut,
			MissingBodies: rep.MissingBodies, Unreadable: rep.UnreadableBodies, Kinds: []contextKindJSON{},
		}
		switch p := rep.Reported; {
		case rep.ThresholdByReported():
			out.ThresholdBy = "reported"
		case p != nil && p.Imported && p.After:
			out.ThresholdBy = "larger"
		}
		if p := rep.Reported; p != nil {
			pct := rep.ReportedPercentOfUsable()
			out.ReportedTokens, out.ReportedAt, out.ReportedPercent = &p.Tokens, &p.Seq, &pct
		}
		for _, k := range rep.Kinds {
			out.Kinds = append(out.Kinds, contextKindJSON{Kind: k.Kind.String(), Events: k.Events, Bytes: k.Bytes, Tokens: k.Tokens, Share: share(k.Tokens)})
		}
		return e.printJSON(out)
	}
	w := e.Stdout
	said := ""
	if from == "transcript" {
		said = ", as the transcript recorded it"
	}
	fmt.Fprintf(w, "window %d tokens (usable %d, compacts at %d%s)\n", rep.Window, rep.Usable, rep.Threshold, said)
	// The warning goes on the figure that decides it: the model's own
	// count when the transcript recorded one, else the estimate.
	over := ""
	if rep.OverThreshold() {
		over = " — over the compaction threshold"
	}
	estOver, repOver := over, ""
	if p := rep.Reported; p != nil && rep.ThresholdTokens() == p.Count() && p.Imported {
		estOver, repOver = "", over
	}
	fmt.Fprintf(w, "in context %d tokens  %.1f%% of usable%s\n", rep.InContextTokens, rep.PercentOfUsable(), estOver)
	if rep.UnseenEvents > 0 || rep.UnseenBytes > 0 {
		// What those notes are, in the words of the agent that wrote them.
		what := "progress, file snapshots, system lines"
		if src := r.ImportedFrom(rep.Session.Meta); src != nil && src.Format == agent.FormatCodex {
			what = "session metadata, turn contexts, token counts and other UI events"
		}
		fmt.Fprintf(w, "  left out %d tokens (%s) of imported notes the model never read: %s\n", rep.UnseenTokens, formatBytes(rep.UnseenBytes), what)
	}
	if rep.RolledBackTurns > 0 {
		fmt.Fprintf(w, "  left out %d event(s) of %d turn(s) the user rolled back (Codex no longer sends them)\n", rep.RolledBackEvents, rep.RolledBackTurns)
	}
	if p := rep.Reported; p != nil {
		fmt.Fprintf(w, "last recorded %d tokens (in + out) at #%d  %.1f%% of usable%s\n", p.Tokens, p.Seq, rep.ReportedPercentOfUsable(), repOver)
		switch {
		case p.Imported && p.After:
			fmt.Fprintln(w, "  (the model's own count, from the transcript's usage; it leaves out what was appended in rook since, and the estimate above may fall short of it, so the compaction threshold is judged by the larger of the two)")
		case p.Imported:
			fmt.Fprintln(w, "  (an imported session: that is the model's own count, from the transcript's usage; the estimate above counts each source line whole, its JSON envelope too, so the compaction threshold is judged by this count)")
		}
	}
	fmt.Fprintf(w, "ever logged %d tokens in %d events (%d compaction%s so far)\n",
		rep.EverTokens, rep.EverEvents, rep.Compactions, ctxPlural(rep.Compactions))
	fmt.Fprintf(w, "replay from #%d\n", rep.ReplayFrom)
	fmt.Fprintf(w, "recorded tokens %d in, %d out\n", rep.Session.TokensIn, rep.Session.TokensOut)
	if len(rep.Kinds) == 0 {
		fmt.Fprintln(w, "nothing in context")
	} else {
		t := &table{right: map[int]bool{1: true, 2: true, 3: true}}
		t.add("kind", "events", "bytes", "tokens", "share")
		for _, k := range rep.Kinds {
			t.add(k.Kind.String(), fmt.Sprint(k.Events), formatBytes(k.Bytes), fmt.Sprint(k.Tokens), bar(k.Tokens, rep.InContextTokens, 20))
		}
		t.write(w) // a failed write is Main's to tell, after the notes below
	}
	if rep.MissingBodies > 0 {
		fmt.Fprintf(e.Stderr, "rook: note: %d event(s) name a body the store cannot describe; they count as 0 bytes (`rook store verify`)\n", rep.MissingBodies)
	}
	if rep.UnreadableBodies > 0 {
		fmt.Fprintf(e.Stderr, "rook: note: %d event(s) name a body the store cannot read (`rook store verify` says why): they count at the size the index gives, without the text the import cut from them, so the figures above may fall short\n", rep.UnreadableBodies)
	}
	return nil
}

func ctxPlural[T int | int64](n T) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// exportBodies is the ending of "bod_" for n.
func exportBodies(n int) string {
	if n == 1 {
		return "y"
	}
	return "ies"
}

// ExportHTMLCmd is `rook session export-html`.
type ExportHTMLCmd struct {
	ID      string  `arg:"" help:"Session id, unique prefix, or last."`
	From    *uint64 `help:"First seq (default 0)." placeholder:"N"`
	Through *uint64 `help:"Last seq, inclusive (default: 511 events on, or the last); one file holds at most 512 events." placeholder:"N"`
	Output  string  `required:"" short:"o" empty:"own" help:"The HTML file to write; it must not exist (rook never overwrites); /dev/stdout, /dev/null, a terminal or a FIFO is written to, another device refused." placeholder:"FILE"`
	// device: Output is /dev/null, a terminal or a FIFO that is there
	// (through a link too): written to, never made, replaced nor removed.
	device bool
	// stdout: Output is standard output itself (/dev/stdout, or the very
	// device or pipe standard output is): the page is written there, as
	// any command's output is, and the report, text or JSON, to stderr.
	stdout bool
}

func (c *ExportHTMLCmd) Run(e *Env) error {
	from := uint64(0)
	if c.From != nil {
		from = *c.From
	}
	if c.Through != nil && *c.Through < from {
		return usageErr("--through %d is before --from %d", *c.Through, from)
	}
	// Neither is a file to write: "" is a script's unset variable (the
	// current directory otherwise), "-" standard output elsewhere.
	if c.Output == "" || c.Output == "-" {
		return usageErr("--output %q: export-html writes a new file: name it", c.Output)
	}
	// Refuse an existing output before any work; the exclusive create
	// below is what guarantees it.
	named := c.Output
	abs, err := absPath(c.Output)
	if err != nil {
		return err
	}
	c.Output = abs // said in full: -C may have moved where it lands
	if err := insideStoreErr(e, "--output", c.Output); err != nil {
		return err
	}
	fi, err := e.FS.Stat(c.Output)
	switch {
	case namesStdout(c.Output):
		// /dev/stdout leads to what standard output is: a file the shell
		// made (> page.html), which Stat took for one rook would
		// overwrite, a pipe, a terminal. It is what the user asked rook
		// to write to.
		c.stdout = true
	case err == nil && fi.IsDir():
		// as export's: a directory is no file to write (nor one that would
		// be overwritten)
		return usageErr("--output %s is a directory: name the file to write", c.Output)
	case err == nil && fi.Mode().IsRegular():
		return exportExistsErr(c.Output)
	case err == nil:
		// A character device or a FIFO (-o /dev/null to see that a
		// session renders, a FIFO, a terminal) is no file to protect:
		// written to, as export writes to one. A block device (a disk, a
		// partition) holds a user's files: refused, as a file is.
		if err := deviceOutputErr(e, c.Output, fi, nil); err != nil {
			return err
		}
		c.device = true
		// Standard output under another name (the terminal's own
		// /dev/pts/N, the pipe's /proc/self/fd/1 by a link): one stream.
		if so, ok := stdoutInfo(e); ok && vfs.SameFile(fi, so) {
			c.device, c.stdout = false, true
		}
	}
	if !c.device && !c.stdout {
		if err := dirNameErr(named); err != nil {
			return err
		}
		if err := outputDirErr(e, c.Output); err != nil {
			return err
		}
	}
	r, id, err := e.readSession(c.ID)
	if err != nil {
		return err
	}
	defer r.Close()
	x, err := r.ExportRange(id, from, c.Through)
	if err != nil {
		return err
	}
	page := agent.ExportHTML(x)
	if err := c.write(e, page); err != nil {
		return err
	}
	if x.TruncatedEvents {
		fmt.Fprintf(e.Stderr, "rook: note: #%d to #%d is %d events; one export holds at most %d, so it stops at #%d: `--from %d` exports the rest\n",
			x.From, x.Asked, x.Asked-x.From+1, agent.ExportMaxEvents, x.Through, x.Through+1)
	}
	cut, bad := x.CutBodies(), x.UnreadableBodies()
	// The session's events past this file, as show's next_from: the
	// --from of the next file, nil at the session's end (or its log's
	// damage, which Session.Events then stops at).
	total := x.Session.Events
	var next *uint64
	if x.Through+1 < total {
		n := x.Through + 1
		next = &n
	}
	if e.JSON {
		// A failed write is Main's to tell, after unreadable's verdict.
		out := map[string]any{
			"output": c.Output, "session": id, "events": len(x.Events), "from": x.From, "through": x.Through,
			"total": total, "next_from": next,
			"truncated_events": x.TruncatedEvents, "cut_bodies": cut, "unreadable": bad, "bytes": len(page),
		}
		if x.Damage != nil {
			out["damaged_at"] = x.DamagedAt
		}
		// Standard output holds the page: the object goes to stderr, so
		// that neither a page's reader nor a JSON one gets the other's
		// bytes.
		w := e.Stdout
		if c.stdout {
			w = e.Stderr
		}
		if err := unprinted(printJSONTo(w, out)); err != nil {
			return err
		}
		return pageVerdict(x.Damage, bad)
	}
	cutNote := ""
	if cut > 0 {
		cutNote = fmt.Sprintf(", %d bod%s cut at %d bytes", cut, exportBodies(cut), agent.ExportMaxBody)
	}
	rest := ""
	if next != nil && !x.TruncatedEvents && c.Through == nil {
		// The default range stopped short of the end: say where the rest is.
		rest = fmt.Sprintf(" (it has %d; `--from %d` exports the next ones)", total, *next)
		if x.Damage != nil {
			rest = fmt.Sprintf(" (%d read before its log's damage at #%d; `--from %d` exports the next ones)", total, x.DamagedAt, *next)
		}
	}
	// Onto a device (standard output, as like as not), the page is what
	// goes there: the report goes to stderr, as export's does.
	report := e.Stdout
	if c.device || c.stdout {
		report = e.Stderr
	}
	fmt.Fprintf(report, "wrote %s: %d event(s), #%d to #%d of %s%s%s\n", terminalLine(c.Output), len(x.Events), x.From, x.Through, id, rest, cutNote)
	// The page is whole, each body the store could not read marked on
	// it; but a page with holes is no good export: exit 1, as show does.
	// So is one of a damaged log, which holds the events before the damage.
	return pageVerdict(x.Damage, bad)
}

// dirNameErr refuses an --output, not an existing directory, whose name
// says it is one: it ends in a separator or in /. (export and
// export-html). filepath.Abs drops both, so "-o newdir/" was written as a
// file named newdir; the shell's > and cp take such a name for a
// directory. nil otherwise.
func dirNameErr(output string) error {
	if output == "" {
		return nil
	}
	end := ""
	switch {
	case os.IsPathSeparator(output[len(output)-1]):
		end = output[len(output)-1:]
	case strings.HasSuffix(output, "/.") || strings.HasSuffix(output, string(filepath.Separator)+"."):
		end = output[len(output)-2:]
	default:
		return nil
	}
	return usageErr("--output %s ends in %s, so it names a directory: name the file to write", output, end)
}

// outputDirErr says, before any work, what is wrong with the directory an
// --output file is to be made in (export and export-html): it is not
// there, or a file stands on the way. The create at the end failed with
// the raw "open F: no such file or directory" or "not a directory", no
// word of what to do. nil when neither is known.
func outputDirErr(e *Env, output string) error {
	if dir := filepath.Dir(output); !exists(e, dir) {
		return fmt.Errorf("write %s: the directory %s does not exist: make it first (mkdir -p)", output, dir)
	}
	return notADirErr(e, output)
}

// notADirErr says, when a file stands where a directory on the way to
// output should be (-o notes.txt/page.html), which one and what to do; the
// open's own error was "open F: not a directory", with no word of either.
// nil when none does.
func notADirErr(e *Env, output string) error {
	for dir := filepath.Dir(output); ; dir = filepath.Dir(dir) {
		fi, err := e.FS.Stat(dir)
		if err == nil && !fi.IsDir() {
			return &exitError{code: ExitFailure, msg: fmt.Sprintf("write %s: %s is a file, not a directory: choose another --output", output, dir)}
		}
		if err == nil || dir == filepath.Dir(dir) {
			return nil
		}
	}
}

// outputFileErr words the failure to make an --output file (export and
// export-html share it), saying what refused and what to do; the raw
// errors ("open F: permission denied", to which explain added "check the
// permissions of F"; "open F: read-only file system") named the path
// twice, and F, a file to create, is not what refused: its directory is.
// nil when err is none it knows, left to the caller's own wording.
func outputFileErr(e *Env, output string, err error) error {
	if err == nil {
		return nil
	}
	// A device or a link written through (export's -o /dev/..., a link
	// to a file elsewhere) failed on what it leads to, not on output's
	// directory: the raw error, naming it, is left as it is.
	if fi, lerr := e.FS.Lstat(output); lerr == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
		return nil
	}
	dir := filepath.Dir(output)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// Only when the directory is indeed gone: procfs and the like
		// refuse a create with ENOENT in a directory that is there.
		if derr := outputDirErr(e, output); derr != nil {
			return derr
		}
		return &exitError{code: ExitFailure, msg: fmt.Sprintf("write %s: %s refuses new files (it is there, but said no such file or directory); choose another --output", output, dir)}
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS):
		return dirRefusedErr("write "+output, dir, "--output", err)
	case errors.Is(err, syscall.ENOTDIR):
		return notADirErr(e, output)
	case errors.Is(err, syscall.EISDIR):
		// Made a directory since the check before any work.
		return usageErr("--output %s is a directory: name the file to write", output)
	}
	return nil
}

// dirRefusedErr words a directory's refusal of new files (err: EACCES,
// EPERM or EROFS) for what failed, naming the directory and the flag to
// change; nil for any other err.
func dirRefusedErr(what, dir, flag string, err error) error {
	switch {
	case errors.Is(err, fs.ErrPermission):
		return &exitError{code: ExitFailure, msg: fmt.Sprintf("%s: permission denied: you may not create files in %s; choose another %s, or check that directory's permissions", what, dir, flag)}
	case errors.Is(err, syscall.EROFS):
		return &exitError{code: ExitFailure, msg: fmt.Sprintf("%s: %s is on a read-only file system; choose another %s", what, dir, flag)}
	}
	return nil
}

// insideStoreErr refuses a path rook is asked to write (flag: --output,
// --tool-results) that is, or leads by a link to, the store's directory
// or anything in it (agent.InStore): export -o ~/.rook/segments/00000001.seg
// replaced the store's segment with the transcript, every object in it
// lost, and said it wrote the file (a link to a store file was written
// through alike). The store is rook's alone; nothing a user exports
// belongs in it. nil when path is elsewhere.
func insideStoreErr(e *Env, flag, path string) error {
	if err := agent.InStore(e.Home, path, "write "+flag); err != nil {
		return usageErr("%s", err.Error())
	}
	return nil
}

// namesStdout says whether path (absolute, clean) is a name of standard
// output itself: /dev/stdout, /dev/fd/1, /proc/self/fd/1.
func namesStdout(path string) bool {
	switch path {
	case "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1":
		return true
	}
	return false
}

// stdoutInfo is what standard output is (Stat of its file), when it is a
// file; false when it cannot be known (a buffer in tests).
func stdoutInfo(e *Env) (fs.FileInfo, bool) {
	w := e.Stdout
	if o, ok := w.(*outputWriter); ok {
		w = o.w
	}
	s, ok := w.(interface{ Stat() (fs.FileInfo, error) })
	if !ok {
		return nil, false
	}
	fi, err := s.Stat()
	return fi, err == nil
}

// deviceOutputErr refuses an --output that is there and is neither a
// file nor a directory unless it is /dev/null, a terminal or a FIFO
// (export-html writes to those: /dev/null to see that a session renders,
// a terminal, a pipe). Another device holds or drives what the page would
// be written over: a block device (a disk, a partition: its partition
// table, a file system's superblock), a character device such as raw
// flash or /dev/mem. fi is the output's; opened, when it is open to be
// written (nil before: a character device is opened here to ask whether
// it is a terminal, never written; a FIFO is not opened, which would
// wait for its reader). nil when it may be written.
func deviceOutputErr(e *Env, path string, fi fs.FileInfo, opened vfs.File) error {
	mode := fi.Mode()
	what := ""
	switch {
	case mode&fs.ModeNamedPipe != 0:
		return nil
	case mode&fs.ModeCharDevice != 0:
		if null, err := e.FS.Stat(os.DevNull); err == nil && vfs.SameFile(fi, null) {
			return nil
		}
		f := opened
		if f == nil {
			var err error
			if f, err = e.FS.OpenFile(path, os.O_WRONLY|syscall.O_NOCTTY, 0); err == nil {
				defer f.Close()
			}
		}
		if f != nil && isTerminal(f) {
			return nil
		}
		what = "a character device that is neither /dev/null nor a terminal (raw flash, memory, a tape): rook never writes over what it holds or drives"
	case mode&fs.ModeDevice != 0:
		what = "a block device (a disk or a partition): rook never writes over what it holds"
	case mode&fs.ModeSocket != 0:
		what = "a socket"
	default:
		what = fmt.Sprintf("neither a file nor a device rook writes to (%s)", mode.Type())
	}
	return &exitError{code: ExitFailure, msg: fmt.Sprintf("--output %s is %s; export-html writes a new file, standard output (/dev/stdout), /dev/null, a terminal or a FIFO: choose another --output", path, what)}
}

func exportExistsErr(path string) error {
	return &exitError{code: ExitFailure, msg: fmt.Sprintf("%s already exists: rook never overwrites a file; choose another --output or remove it first", path)}
}

// write creates the output exclusively and makes it durable; on any
// failure it removes what it created. A device is written to, and
// never removed.
func (c *ExportHTMLCmd) write(e *Env, page []byte) (err error) {
	if c.stdout {
		// As every command writes standard output: a reader gone (| head)
		// ends rook by SIGPIPE, quietly, as `session show | head` does; a
		// full disk is Main's to tell (outputWriter).
		_, err := e.Stdout.Write(page)
		return err
	}
	if c.device {
		f, err := e.FS.OpenFile(c.Output, os.O_WRONLY, 0)
		if err == nil {
			// What was opened is what was looked at: a block device put
			// in its place meanwhile is not written.
			if fi, serr := f.Stat(); serr == nil {
				err = deviceOutputErr(e, c.Output, fi, f)
			}
			if err == nil {
				_, err = f.Write(page)
			}
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		var ee *exitError
		if errors.As(err, &ee) {
			return err
		}
		if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
			err = pe.Err // the path once: "write F: write F: broken pipe"
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", c.Output, err)
		}
		return nil
	}
	f, err := e.FS.OpenFile(c.Output, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return exportExistsErr(c.Output)
	}
	if werr := outputFileErr(e, c.Output, err); werr != nil {
		return werr
	}
	if err != nil {
		return err
	}
	// Interrupted, it leaves no half page under the name asked for.
	done := onInterrupt(func() { e.FS.Remove(c.Output) })
	defer done()
	defer func() {
		if err != nil {
			f.Close()
			e.FS.Remove(c.Output)
			err = fmt.Errorf("write %s: %w (nothing was left behind)", c.Output, err)
		}
	}()
	if _, err := f.Write(page); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return f.Close()
}

// SearchCmd is `rook search`.
type SearchCmd struct {
	Query   []string `arg:"" help:"Words to look for (case-insensitive; words of one letter and stopwords are dropped, but one letter with symbols, c++ or F#, is a word)."`
	Session nonEmpty `help:"Search only this session (id, unique prefix, or last)." placeholder:"ID"`
	Limit   int      `help:"At most N hits." default:"40"`
	All     bool     `help:"Read every body, however many: no budget (sessions are read newest conversation first, and the budget, 20000 objects or 64 MiB, is what keeps a search of a large store quick)."`
}

type searchHitJSON struct {
	Session eventlog.ID `json:"session"`
	Title   string      `json:"title"`
	Seq     uint64      `json:"seq"`
	Kind    string      `json:"kind"`
	jsonLabel
	Time    time.Time `json:"time"`
	Snippet string    `json:"snippet"`
	Score   int       `json:"score"`
	// The other events with the same body (a fork's copy, a repeat), and
	// the other sessions they are in.
	Also         int `json:"also"`
	AlsoSessions int `json:"also_sessions"`
	// Binary: a binary body, as show says it: no snippet; BodyID names
	// it (`rook store cat` writes its bytes).
	Binary bool   `json:"binary"`
	BodyID string `json:"body_id,omitempty"`
}

func (c *SearchCmd) Run(e *Env) error {
	if c.Limit < 1 {
		return usageErr("--limit must be 1 or more")
	}
	query := strings.Join(c.Query, " ")
	terms := agent.SearchTerms(query)
	if len(terms) == 0 {
		return usageErr("%q has no words to search for: give words of 2 or more letters that are not stopwords (the, and, of...), or one letter with symbols (c++, F#); `rook session find` looks for any text", query)
	}
	if len(terms) > agent.SearchMaxTerms {
		return usageErr("the query has %d words; search takes at most %d (each is looked for in every body read): keep the telling ones, or use `rook session find` for a phrase", len(terms), agent.SearchMaxTerms)
	}
	r, err := e.openRook(false)
	if err != nil {
		return err
	}
	defer r.Close()
	opts := agent.SearchOptions{Limit: c.Limit}
	if c.All {
		opts.MaxObjects, opts.MaxBytes = math.MaxInt, math.MaxInt64
	}
	if c.Session != "" {
		id, err := e.sessionArg(r, string(c.Session))
		if err != nil {
			return err
		}
		opts.Session = &id
	}
	res, err := r.Search(query, opts)
	if err != nil {
		return err
	}
	for _, s := range res.SkippedSessions {
		fmt.Fprintf(e.Stderr, "rook: note: %s\n", terminalLine(s))
	}
	if res.Unreadable > 0 {
		fmt.Fprintf(e.Stderr, "rook: note: %d unreadable bod%s skipped (`rook store verify` says why)\n", res.Unreadable, exportBodies(res.Unreadable))
	}
	if res.TooLarge > 0 {
		fmt.Fprintf(e.Stderr, "rook: note: %d bod%s larger than the whole budget (%s) not read: --all reads every one\n", res.TooLarge, exportBodies(res.TooLarge), formatBytes(agent.SearchMaxBytes))
	}
	if res.Truncated {
		// Bytes or objects: the next body would have passed one of them
		// (a single body larger than what is left of the bytes).
		unread := "of the sessions whose conversation is newest: older ones were not searched: narrow with --session, or read every body with --all"
		if c.Session != "" {
			unread = "the session's newest: its older events were not searched: read every body with --all"
		}
		fmt.Fprintf(e.Stderr, "rook: note: the scan stopped at its budget (%d objects or %s) after reading %d object(s), %s, %s\n",
			agent.SearchMaxObjects, formatBytes(agent.SearchMaxBytes), res.ObjectsScanned, formatBytes(res.BytesScanned), unread)
	}
	if e.JSON {
		hits := []searchHitJSON{}
		for _, h := range res.Hits {
			hits = append(hits, searchHitJSON{Session: h.Session, Title: h.Title, Seq: h.Seq, Kind: h.Kind.String(), jsonLabel: labelJSON(h.Label),
				Time: h.Time.UTC(), Snippet: h.Snippet, Binary: h.Binary, BodyID: binaryBodyID(h.Binary, h.Object), Score: h.Score, Also: h.Also, AlsoSessions: h.AlsoSessions})
		}
		// The sessions that did not read (in full), as the notes on
		// stderr say them: a program reading the JSON must not take a
		// partial answer for the whole one. A list, [] when none, as
		// capture's skipped.
		skipped := res.SkippedSessions
		if skipped == nil {
			skipped = []string{}
		}
		return e.printJSON(map[string]any{
			"terms": res.Terms, "hits": hits, "total_hits": res.TotalHits, "objects_scanned": res.ObjectsScanned,
			"objects_matched": res.ObjectsMatched, "texts_matched": res.Texts, "truncated": res.Truncated, "unreadable": res.Unreadable,
			"too_large": res.TooLarge, "skipped_sessions": skipped,
		})
	}
	w := e.Stdout
	for _, h := range res.Hits {
		what := h.Kind.String()
		if h.Label != "" {
			what += " " + clip(h.Label, 32)
		}
		fmt.Fprintf(w, "%s  #%d  %s  %s  %s\n", h.Session, h.Seq, what, shownTime(h.Time), clip(h.Title, 48))
		if h.Binary {
			fmt.Fprintf(w, "  %s\n", binaryMatch(h.Object))
		} else {
			fmt.Fprintf(w, "  %s\n", terminalLine(h.Snippet)) // bidi controls too, as show does
		}
		switch {
		case h.AlsoSessions > 0: // a fork's or rewind's copy, or the same output again
			fmt.Fprintf(w, "  (and %d other event%s with this text, in %d other session%s)\n", h.Also, plural(h.Also, "", "s"), h.AlsoSessions, plural(h.AlsoSessions, "", "s"))
		case h.Also > 0:
			fmt.Fprintf(w, "  (and %d other event%s with this text in this session)\n", h.Also, plural(h.Also, "", "s"))
		}
	}
	// What the scan did not read is said on standard output too, as the
	// notes on standard error say it: whatever reads only the hits (or
	// "nothing matched") must know the answer is partial. Every cause is
	// named: the budget's stop, bodies too large for it, bodies the store
	// cannot read, sessions that do not read in full (a log damaged part
	// way: what precedes the damage is searched). One said alone hid the
	// others (a too-large body in the newest session behind the budget's
	// stop), and an unreadable body or a skipped session was not said at
	// all, so a damaged store answered "nothing matched" as if every body
	// had been searched.
	// A search still exits 0 with what it found, as with a session that
	// does not read (skipped_sessions): it ranks what it could read across
	// the store, within a budget; `rook store verify` is what fails on
	// damage.
	const unreadable = "unreadable, not searched (`rook store verify` says why)"
	skipped := ""
	if n := len(res.SkippedSessions); n > 0 {
		skipped = fmt.Sprintf("%d session%s not searched in full (the notes on stderr say which, `rook store verify` says why)", n, plural(n, "", "s"))
	}
	if res.TotalHits == 0 {
		var parts []string
		if res.Truncated {
			parts = append(parts, fmt.Sprintf("nothing matched in the %d object(s) read before the budget stopped the scan", res.ObjectsScanned))
		} else {
			parts = append(parts, fmt.Sprintf("nothing matched in %d object(s)", res.ObjectsScanned))
		}
		if res.TooLarge > 0 {
			parts = append(parts, fmt.Sprintf("%d larger than the budget not read", res.TooLarge))
		}
		if res.Truncated || res.TooLarge > 0 {
			parts[len(parts)-1] += " (--all reads every one)"
		}
		if res.Unreadable > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", res.Unreadable, unreadable))
		}
		if skipped != "" {
			parts = append(parts, skipped)
		}
		fmt.Fprintln(w, strings.Join(parts, "; "))
		return nil
	}
	more := ""
	if res.Texts > len(res.Hits) {
		more = fmt.Sprintf(", showing the best %d (--limit)", len(res.Hits))
	}
	var partial []string
	if res.Truncated {
		partial = append(partial, "the budget stopped the scan, older bodies were not read")
	}
	if res.TooLarge > 0 {
		partial = append(partial, fmt.Sprintf("%d bod%s larger than the budget not read", res.TooLarge, exportBodies(res.TooLarge)))
	}
	if len(partial) > 0 {
		partial[len(partial)-1] += " (--all reads every one)"
	}
	if res.Unreadable > 0 {
		partial = append(partial, fmt.Sprintf("%d bod%s %s", res.Unreadable, exportBodies(res.Unreadable), unreadable))
	}
	if skipped != "" {
		partial = append(partial, skipped)
	}
	if len(partial) > 0 {
		more += "; partial: " + strings.Join(partial, "; ")
	}
	// A hit is a text; the events and bodies that have it are counted
	// apart (a fork's copies, repeats).
	fmt.Fprintf(w, "%d hit(s): %d event(s) in %d object(s) matched (%d scanned)%s\n", res.Texts, res.TotalHits, res.ObjectsMatched, res.ObjectsScanned, more)
	return nil
}
