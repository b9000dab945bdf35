// Package cli is the `rook` command line. It parses (kong), opens the store
// the packages below provide, and renders what they return; no package
// below it prints anything.
package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"time"

	"github.com/alecthomas/kong"

	"github.com/rookhq/rook/agent"
	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/clock"
	"github.com/rookhq/rook/internal/vfs"
)

// Exit codes.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

// CLI is the whole command tree.
type CLI struct {
	Home nonEmpty     `help:"Store directory (default: $ROOK_HOME, else ~/.rook)." placeholder:"DIR"`
	JSON bool         `name:"json" help:"Print JSON instead of text, for scripts."`
	Dir  nonEmptyPath `short:"C" name:"dir" help:"Run as if started in DIR (like git -C): the workspace 'last' and new sessions use, and where relative paths start; for session diff and rewind, where a session's moved workspace is now." placeholder:"DIR"`
	// Agents' hooks write at the same moment: a writer waits its turn
	// rather than failing. Readers never wait.
	LockWait lockWait `name:"lock-wait" help:"How long a command that writes waits while another rook holds the store's writer lock, before it fails (default: $ROOK_LOCK_WAIT, else 10s; 0: fail at once)." placeholder:"DURATION"`

	Init       InitCmd       `cmd:"" help:"Create the store (an existing one is left as it is)."`
	Doctor     DoctorCmd     `cmd:"" help:"Say where the store is and whether it is healthy and private."`
	Store      StoreCmd      `cmd:"" help:"Content-addressed objects: put, cat, ls, stat, verify, reindex; train, gc, repack, prune, maintain."`
	Session    SessionCmd    `cmd:"" help:"Sessions: event logs you can page, search, quote, export and fork."`
	Search     SearchCmd     `cmd:"" help:"Search every transcript."`
	Checkpoint CheckpointCmd `cmd:"" help:"Named captures of the workspace: create, ls, restore, rm."`
	Import     ImportCmd     `cmd:"" help:"Import Claude Code or Codex transcripts, losslessly and incrementally."`
	Export     ExportCmd     `cmd:"" help:"Write an imported session's source file back, byte for byte."`
	Mcp        McpCmd        `cmd:"" name:"mcp" help:"MCP: the inbox server AI clients save notes through (serve, install, uninstall), and the servers rook calls (add, ls, tools, sync, set, limit, call, rm)."`
	Inbox      InboxCmd      `cmd:"" help:"Notes AI clients saved through MCP: ls, show, activity, pause, resume, status."`
}

// Env is what every command runs with.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	FS     vfs.FS
	Clock  clock.Clock
	Home   string
	JSON   bool
	// Command is how the user invoked rook, for the lock file.
	Command string
	// Cwd is the workspace: -C DIR, else the current directory.
	Cwd string
	// DirGiven: -C was given, so Cwd is the user's choice of workspace
	// (a session's moved workspace, for diff and rewind), not merely
	// where rook was started.
	DirGiven bool
	// cwdErr says why there is no Cwd: the directory rook was started in
	// was removed (a rewind of a session begun there, `rm -r` in another
	// shell). Only what needs the directory fails, through workDir: a
	// session named by its id, the store's own commands, run anywhere.
	cwdErr error
	// LockWait is how long a writer waits for the writer lock (--lock-wait).
	LockWait time.Duration
	// lockWaitErr is why $ROOK_LOCK_WAIT could not be read: only a command
	// that takes the writer lock fails with it, so a bad value does not
	// stop `rook session ls` (a reader never waits for the lock).
	lockWaitErr error
	// holdNotes: the command opens the store for reading, then for
	// writing (mcp add, sync, call): what the reader's open notes (a
	// repair it found to make) is held, and the writer's open, which
	// finds the same and says what it did, says it instead. heldNotes
	// are printed when no writer's open came (releaseNotes).
	holdNotes bool
	heldNotes []string
}

// releaseNotes prints the notes a reader's open held (holdNotes) that no
// writer's open said instead.
func (e *Env) releaseNotes() {
	for _, n := range e.heldNotes {
		fmt.Fprintf(e.Stderr, "rook: note: %s\n", n)
	}
	e.heldNotes, e.holdNotes = nil, false
}

// exitError carries an exit code and a message already fit for the user.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func usageErr(format string, a ...any) error {
	return &exitError{code: ExitUsage, msg: fmt.Sprintf(format, a...)}
}

// rawArg is an argument taken byte for byte. kong decodes a string
// through JSON, which turns bytes that are not UTF-8 into U+FFFD: a file
// name would name another file. Every string argument and flag value is
// decoded so (rawString, given to kong for the string type); rawArg is
// what the flag types of their own decode first.
type rawArg string

// Decode takes the next word as the value. A flag tagged hyphen:"value"
// takes it whole, whatever its first character: `--arg -y` is npx's -y
// for the program, not a flag of rook's. Every other flag refuses a word
// that looks like a flag (kong's PopValue), so that one left without its
// value, `--title --json`, is a usage error, not a title "--json". A
// per-flag tag, not kong.WithHyphenPrefixedParameters, which would let
// every flag take the next flag as its value.
func (v *rawArg) Decode(ctx *kong.DecodeContext) error {
	var t kong.Token
	if ctx.Value != nil && ctx.Value.Flag != nil && ctx.Value.Tag.Get("hyphen") == "value" {
		if t = ctx.Scan.Pop(); t.IsEOL() {
			return errors.New("missing value")
		}
	} else {
		var err error
		if t, err = ctx.Scan.PopValue("value"); err != nil {
			return err
		}
	}
	s, ok := t.Value.(string)
	if !ok {
		s = fmt.Sprint(t.Value)
	}
	*v = rawArg(s)
	return nil
}

// rawString decodes a string argument or flag value (of a []string and a
// *string too) byte for byte, as rawArg. A string flag given an empty
// value is refused here, as nonEmpty refuses it, for every string flag at
// once: `--kind "$KIND"` with KIND unset must not read as no --kind at
// all (every kind), nor `--title "$T"` as the default title. A flag tagged
// empty:"value" takes an empty value as a value (an empty argument for a
// program); one tagged empty:"own" is refused by its command, in words
// that say more (`--output ""`: a new file to name).
var rawString = kong.MapperFunc(func(ctx *kong.DecodeContext, target reflect.Value) error {
	var s rawArg
	if err := s.Decode(ctx); err != nil {
		return err
	}
	if s == "" && ctx.Value.Flag != nil {
		switch tag := ctx.Value.Tag.Get("empty"); tag {
		case "value", "own":
		case "":
			return errEmptyValue
		default:
			return fmt.Errorf("internal error: tag empty:%q: give empty:\"value\" or empty:\"own\"", tag)
		}
	}
	target.SetString(string(s))
	return nil
})

// errEmptyValue refuses a flag given an empty value: README, "2 usage
// errors (a flag given an empty value ... never falls back to the
// default)". kong says which flag.
var errEmptyValue = errors.New("empty value: give one, or leave the flag out for its default")

// nonEmpty is a flag's value that may not be empty once the flag is
// given: `--to "$DIR"` with DIR unset must not read as no --to at all (a
// restore over the captured workspace, a search of every session, the
// default store). A plain string flag is refused so by rawString; a flag
// type that decodes on its own (nonEmptyPath) decodes a nonEmpty first.
type nonEmpty string

func (v *nonEmpty) Decode(ctx *kong.DecodeContext) error {
	var s rawArg // a directory's name byte for byte (--to, -C)
	if err := s.Decode(ctx); err != nil {
		return err
	}
	if s == "" {
		return errEmptyValue
	}
	*v = nonEmpty(s)
	return nil
}

// nonEmptyPath is a nonEmpty flag value that names a path, expanded as
// kong's type:"path" expands one (~/, made absolute). kong's path mapper
// takes "" as the current directory: `-C "$DIR"` with DIR unset would run
// in the directory rook was started in, its sessions `last`.
type nonEmptyPath string

func (v *nonEmptyPath) Decode(ctx *kong.DecodeContext) error {
	var s nonEmpty
	if err := s.Decode(ctx); err != nil {
		return err
	}
	*v = nonEmptyPath(kong.ExpandPath(string(s)))
	return nil
}

// lockWait is --lock-wait: a duration (30s, 2m, 0), never negative.
type lockWait struct {
	d   time.Duration
	set bool // given: else $ROOK_LOCK_WAIT, else defaultLockWait
}

// defaultLockWait is long enough for the writers an agent's hooks start
// together (each holds the lock for milliseconds), short enough that a
// hook stuck behind an import fails while someone is still looking.
const defaultLockWait = 10 * time.Second

func (v *lockWait) Decode(ctx *kong.DecodeContext) error {
	var s rawArg
	if err := s.Decode(ctx); err != nil {
		return err
	}
	d, err := parseLockWait(string(s))
	if err != nil {
		return err
	}
	*v = lockWait{d: d, set: true}
	return nil
}

func parseLockWait(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration: give one like 30s, 2m or 0 (fail at once)", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q: a wait cannot be negative: give one like 30s, 2m or 0 (fail at once)", s)
	}
	return d, nil
}

// wait is the lock wait in force: --lock-wait, else $ROOK_LOCK_WAIT (set
// and not empty, as $ROOK_HOME is read), else the default.
func (v lockWait) wait() (time.Duration, error) {
	if v.set {
		return v.d, nil
	}
	if s := os.Getenv("ROOK_LOCK_WAIT"); s != "" {
		d, err := parseLockWait(s)
		if err != nil {
			return 0, usageErr("$ROOK_LOCK_WAIT: %v", err)
		}
		return d, nil
	}
	return defaultLockWait, nil
}

type kongExit int

// Main runs rook with args and returns the exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	var c CLI
	out := &outputWriter{w: stdout}
	// kong wraps its help to a terminal's width, which it reads only
	// from an *os.File: a terminal gets the help as it is.
	var helpOut io.Writer = out
	if isTerminal(stdout) {
		helpOut = stdout
	}
	defer func() {
		if r := recover(); r != nil {
			if k, ok := r.(kongExit); ok {
				code = int(k)
				return
			}
			panic(r)
		}
	}()
	parser, err := kong.New(&c,
		kong.Name("rook"),
		kong.Description("rook is the memory of an AI agent: every session, message, tool call and file it touched, in one compact content-addressed store."),
		kong.Writers(helpOut, stderr),
		kong.Exit(func(code int) { panic(kongExit(code)) }),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
		kong.TypeMapper(reflect.TypeFor[string](), rawString),
	)
	if err != nil {
		fmt.Fprintf(stderr, "rook: internal error: %v\n", err)
		return ExitFailure
	}
	ctx, err := parser.Parse(args)
	if err != nil && out.err != nil {
		// The help asked for did not reach stdout: not a usage error.
		return exitWith(stderr, out.failure(nil, stderr), "", jsonAsked(args))
	}
	if err != nil {
		// kong stops at the first bad word, so --json may not be parsed yet.
		// It may quote the word given, a credential too
		// (--header --api-key=V): its value is masked.
		msg := agent.RedactArgValues(agent.RedactText(terminalText([]byte(err.Error()))), args)
		help := usageHelp(err)
		if jsonAsked(args) {
			return failJSON(stderr, ExitUsage, msg+": run `"+help+"` for usage")
		}
		fmt.Fprintf(stderr, "rook: %s\n", msg)
		fmt.Fprintf(stderr, "run `%s` for usage\n", help)
		return ExitUsage
	}
	env := &Env{Stdin: stdin, Stdout: out, Stderr: stderr, FS: vfs.OS, Clock: clock.System, JSON: c.JSON,
		Command: "rook " + strings.Join(commandWords(ctx), " ")}
	// -C first: like git, every relative path (--home included) is then
	// taken from the directory rook runs in.
	env.Cwd, err = resolveCwd(string(c.Dir))
	env.DirGiven = c.Dir != ""
	if err != nil && !env.DirGiven && isGetwd(err) {
		env.Cwd, env.cwdErr, err = "", cwdGone(err), nil
	}
	if err == nil {
		env.Home, err = resolveHome(string(c.Home))
	}
	if err != nil {
		// Not the store's: said as it is (explain's advice is about it).
		if isGetwd(err) { // a relative --home or ROOK_HOME, from a removed directory
			err = cwdGone(err)
		}
		err = &exitError{code: ExitFailure, msg: err.Error()}
	} else {
		env.LockWait, env.lockWaitErr = c.LockWait.wait()
		// A command that takes the signals as its normal end (mcp serve)
		// handles them itself: the crash-like stop would also run.
		if !ownsSignals(ctx) {
			handleInterrupts(stderr, c.JSON)
		}
		err = out.failure(ctx.Run(env), stderr)
	}
	if err == nil {
		return ExitOK
	}
	return exitWith(stderr, err, env.Home, c.JSON)
}

// exitWith tells the user on stderr why the command failed with err (as
// JSON under --json) and returns the exit code.
func exitWith(stderr io.Writer, err error, home string, asJSON bool) int {
	code, msg := ExitFailure, ""
	var ee *exitError
	var bad *agent.BadArgumentError
	var ambSession *eventlog.AmbiguousError
	var ambObject *cas.AmbiguousError
	switch {
	case errors.As(err, &ee):
		code, msg = ee.code, ee.msg
	case errors.As(err, &bad):
		code, msg = ExitUsage, err.Error()
	case errors.As(err, &ambSession), errors.As(err, &ambObject):
		// A prefix that names several sessions or objects is input to
		// fix (the message lists them and asks for more characters),
		// not a failure of the store: usage, like an empty id.
		code, msg = ExitUsage, err.Error()
	default:
		msg = explain(err, home)
		if isGetwd(err) {
			// A relative path (an import's, an output's) from a directory
			// removed since rook started.
			msg += " (the directory rook runs in no longer exists: cd to one that does, or give absolute paths)"
		}
	}
	// Paths and titles in a message come from file names and transcripts.
	msg = terminalText([]byte(msg))
	if asJSON {
		// A refused rewind of a Codex session: which files, and why,
		// as fields a script reads without parsing the message.
		if ue := (*agent.CodexUnknownStatesError)(nil); errors.As(err, &ue) {
			return encodeJSONError(stderr, jsonError{Error: msg, ExitCode: code, Files: ue.Files})
		}
		// A maintain that failed after changing the store: what it did.
		if me := (*agent.MaintainError)(nil); errors.As(err, &me) {
			done := me.Report
			return encodeJSONError(stderr, jsonError{Error: msg, ExitCode: code, FailedStage: me.Stage, Done: &done})
		}
		// An append --jsonl the store failed part way: the lines in for
		// sure, and the --at that appends the rest.
		if jf := (*jsonlFailed)(nil); errors.As(err, &jf) {
			return encodeJSONError(stderr, jsonError{Error: msg, ExitCode: code, ResumeAt: &jf.at, Done: jf.done})
		}
		if sp := (*stoppedPartWay)(nil); errors.As(err, &sp) {
			return encodeJSONError(stderr, jsonError{Error: msg, ExitCode: code, Fork: sp.fork, BeforeSeq: sp.beforeSeq, SavedAs: sp.savedAs, Undo: sp.undo, Done: sp.done})
		}
		return failJSON(stderr, code, msg)
	}
	if msg != "" {
		fmt.Fprintf(stderr, "rook: %s\n", msg)
	}
	return code
}

// usageHelp is the help to read after a usage error: the command's own,
// as far as the parse got (`rook mcp rm --help` shows the <name> that
// "expected \"<name>\"" means; `rook --help` shows only the commands).
func usageHelp(err error) string {
	var pe *kong.ParseError
	if errors.As(err, &pe) && pe.Context != nil {
		if words := commandWords(pe.Context); len(words) > 0 {
			return "rook " + strings.Join(words, " ") + " --help"
		}
	}
	return "rook --help"
}

// jsonError is what a failed command prints on stderr under --json, one
// line and the last one, so a script reads why it failed as it reads the
// rest: exit_code is the process's own.
type jsonError struct {
	Error    string `json:"error"`
	ExitCode int    `json:"exit_code"`
	// Files: of a rewind of an imported Codex session refused, each
	// file whose state it does not know, and why.
	Files []agent.CodexUnknownState `json:"files,omitempty"`
	// FailedStage: of a `store maintain` whose stage failed, which one
	// ("prune", "gc", "train", "budget", "stats"); Done is then what the
	// run did before it, as its report on success is shaped: the stages
	// before FailedStage whole, the sessions it deleted and the
	// dictionaries it kept itself; the stages after it did not run.
	FailedStage string `json:"failed_stage,omitempty"`
	// Of a rewind or checkpoint restore that stopped part way, having
	// changed files (stoppedPartWay): the rewind's fork and the seq of
	// its capture of the disk before it, the restore's save, the command
	// that puts back what was there, and what it had done by then (the
	// report --json prints when it succeeds). Added fields: the rest is
	// as for any error.
	Fork      string  `json:"fork,omitempty"`
	BeforeSeq *uint64 `json:"before_seq,omitempty"`
	SavedAs   string  `json:"saved_as,omitempty"`
	Undo      string  `json:"undo,omitempty"`
	Done      any     `json:"done,omitempty"`
	// ResumeAt: of an append --jsonl that failed part way, the --at
	// that appends the rest, each once; Done then holds the lines in
	// for sure, as its report does ("appended", "already", "errors").
	ResumeAt *uint64 `json:"resume_at,omitempty"`
}

// stoppedPartWay is the error of a rewind or restore that stopped after
// it changed files: err, with what a script needs to put them back.
type stoppedPartWay struct {
	err       error
	fork      string
	beforeSeq *uint64
	savedAs   string
	undo      string
	done      any
}

func (e *stoppedPartWay) Error() string { return e.err.Error() }
func (e *stoppedPartWay) Unwrap() error { return e.err }

func failJSON(stderr io.Writer, code int, msg string) int {
	return encodeJSONError(stderr, jsonError{Error: msg, ExitCode: code})
}

func encodeJSONError(stderr io.Writer, e jsonError) int {
	enc := json.NewEncoder(stderr) // one line, with <, > and & as themselves
	enc.SetEscapeHTML(false)
	enc.Encode(e)
	return e.ExitCode
}

// jsonAsked reports whether --json is among the words before a "--" (the
// last of them, as kong takes it).
func jsonAsked(args []string) bool {
	asked := false
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--json" {
			asked = true
		} else if v, ok := strings.CutPrefix(a, "--json="); ok {
			// The words kong's bool takes, and only those: by
			// strconv.ParseBool's, --json=yes (which kong takes) got a
			// usage error as plain text, and --json=t (which kong
			// refuses) got one as JSON.
			asked = v == "true" || v == "1" || v == "yes"
		}
	}
	return asked
}

// signalsOwner is a command that handles SIGINT and SIGTERM itself.
type signalsOwner interface{ ownsSignals() }

// ownsSignals: the command run is a signalsOwner.
func ownsSignals(ctx *kong.Context) bool {
	n := ctx.Selected()
	if n == nil || !n.Target.CanAddr() {
		return false
	}
	_, ok := n.Target.Addr().Interface().(signalsOwner)
	return ok
}

func commandWords(ctx *kong.Context) []string {
	var words []string
	for _, p := range ctx.Path {
		if p.Command != nil {
			words = append(words, p.Command.Name)
		}
	}
	return words
}

// resolveHome finds the store the same way for every command: --home, else
// $ROOK_HOME, else ~/.rook.
func resolveHome(flag string) (string, error) {
	if flag != "" {
		return absHome(flag)
	}
	if h := os.Getenv("ROOK_HOME"); h != "" {
		return absHome(h)
	}
	u, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("cannot find your home directory (%v): pass --home DIR or set ROOK_HOME", err)
	}
	return filepath.Join(u, ".rook"), nil
}

// absHome makes a home absolute, expanding a leading ~ as -C DIR's is
// (a shell leaves it as written in --home=~/x, and in a ROOK_HOME set in
// quotes or a unit file): taken as written it was a directory named "~"
// in whatever directory rook ran in, a new empty store in each.
func absHome(h string) (string, error) {
	if h == "~" || strings.HasPrefix(h, "~/") {
		u, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("cannot expand ~ in the store's home %s (%v): give the directory without ~", h, err)
		}
		h = filepath.Join(u, h[1:])
	}
	return filepath.Abs(h)
}

// workDir is the directory rook runs in (-C DIR, else the current one),
// or why there is none.
func (e *Env) workDir() (string, error) {
	if e.cwdErr != nil {
		return "", e.cwdErr
	}
	return e.Cwd, nil
}

// absPath is filepath.Abs of a path a user gave, from the directory rook
// runs in; a relative one from a directory removed since says so
// (cwdGone), not a getwd error nor, as went on with the relative name, a
// misleading one of ".".
func absPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil && isGetwd(err) {
		return "", cwdGone(err)
	}
	return abs, err
}

// isGetwd is whether err is the current directory's name not being found:
// os.Getwd's error, which filepath.Abs of a relative path returns too.
func isGetwd(err error) bool {
	var se *os.SyscallError
	return errors.As(err, &se) && se.Syscall == "getwd"
}

// cwdGone says that the directory rook runs in no longer exists, naming it
// as the shell last knew it ($PWD), and what to do.
func cwdGone(err error) error {
	where := ""
	if pwd := os.Getenv("PWD"); filepath.IsAbs(pwd) {
		where = " (" + pwd + ")"
	}
	return fmt.Errorf("the directory rook runs in%s no longer exists (%v): cd to one that does, or give -C DIR", where, err)
}

// resolveCwd applies -C DIR as git does: rook then runs in DIR, so relative
// paths (files to append, --workspace, --output) are taken from there too.
func resolveCwd(flag string) (string, error) {
	if flag != "" {
		// DIR is named as a shell's cd names it: through a link as given
		// (…/link, not the directory it points to). Without -C the
		// directory is $PWD (os.Getwd), which is that name after `cd
		// link`; the target's name, which os.Getwd gives after Chdir,
		// was another workspace, so `-C link` found no session `cd link`
		// made, and made sessions `cd link` did not find.
		logical := flag
		if wd, err := os.Getwd(); err == nil && !filepath.IsAbs(flag) {
			logical = filepath.Join(wd, flag)
		}
		logical = filepath.Clean(logical)
		if err := os.Chdir(flag); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				// Most often an imported session's workspace, which was on
				// the machine the agent ran on.
				return "", fmt.Errorf("-C %s: %w: a session whose workspace is not on this machine is named by its id (`rook session ls --all`)", flag, err)
			}
			if errors.Is(err, syscall.ENOTDIR) {
				// A file's name (the transcript, say): what -C takes.
				return "", fmt.Errorf("-C %s: %w: give -C the directory to run in", flag, err)
			}
			return "", fmt.Errorf("-C %s: %w", flag, err)
		}
		// Only when that name is the directory now current: "link/.."
		// is not, when link points elsewhere.
		if at, err := os.Stat(logical); err == nil {
			if dot, err := os.Stat("."); err == nil && os.SameFile(at, dot) {
				return logical, nil
			}
		}
	}
	return os.Getwd()
}

// openRook opens the store with its sessions, telling the user on stderr
// what the open repaired.
func (e *Env) openRook(writable bool) (*agent.Rook, error) {
	if writable && e.lockWaitErr != nil {
		return nil, e.lockWaitErr
	}
	return e.openRookWait(writable, e.LockWait)
}

// openRookWait is openRook waiting up to wait for the writer lock.
func (e *Env) openRookWait(writable bool, wait time.Duration) (*agent.Rook, error) {
	return e.openRookTelling(writable, wait, e.lockWaiting(wait))
}

// openRookTelling is openRookWait with what to say while it waits for the
// lock (waiting; nil: nothing).
func (e *Env) openRookTelling(writable bool, wait time.Duration, waiting func(holder string)) (*agent.Rook, error) {
	r, err := agent.Open(e.Home, agent.Options{FS: e.FS, Clock: e.Clock, Writable: writable, Command: e.Command,
		LockWait: wait, LockWaiting: waiting})
	if err != nil {
		return nil, err
	}
	switch {
	case e.holdNotes && !writable:
		e.heldNotes = append(e.heldNotes, r.Notices()...)
		return r, nil
	case writable:
		e.heldNotes = nil // the writer's open found the same, and says what it did
	}
	for _, n := range r.Notices() {
		fmt.Fprintf(e.Stderr, "rook: note: %s\n", n)
	}
	return r, nil
}

// explain adds what to do to the errors users meet most.
func explain(err error, home string) string {
	var le *cas.LockedError
	var oe *outputError
	var se *spoolError
	var te *cas.TornTailError
	var jf *jsonlFailed
	switch {
	case errors.As(err, &oe):
		return explainOutput(oe)
	case errors.As(err, &se) && !se.store:
		return err.Error() // says itself what to do: not the store's hints
	case errors.As(err, &jf) && errors.As(err, &le):
		// An append --jsonl whose idle input let the lock go: the lines
		// in and the --at that appends the rest, beside the lock's fix.
		return jf.message(home)
	case errors.As(err, &le) && le.Waited > 0:
		return err.Error() + ": wait for it to finish and run the command again, or stop it (`rook doctor` shows the holder); --lock-wait DURATION waits longer"
	case errors.As(err, &le):
		return err.Error() + ": wait for it to finish, or stop it (`rook doctor` shows the holder)"
	case errors.Is(err, cas.ErrNewerFormat), errors.Is(err, cas.ErrOlderFormat):
		return err.Error()
	case errors.Is(err, cas.ErrNoStore):
		return err.Error()
	case errors.Is(err, cas.ErrBadMarker):
		return badMarkerMessage(err, home)
	case errors.Is(err, os.ErrPermission):
		// The file refused may be the user's own (a file to store or
		// append, a workspace file to capture, an --output): then the
		// store is not what to check.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			if p, aerr := filepath.Abs(pe.Path); aerr == nil && pe.Op == "mkdir" && !inDir(home, filepath.Dir(p)) {
				// The home, or a directory above it, made where this
				// user may not write (init): the directory it is made
				// in is what to check. The home is not there yet, and
				// `rook doctor` of it says to run `rook init`.
				return fmt.Sprintf("%v: check the permissions of %s, the directory it is made in", err, filepath.Dir(p))
			}
			if p, aerr := filepath.Abs(pe.Path); aerr == nil && !inDir(home, p) {
				if pe.Op == "lstat" || pe.Op == "stat" {
					// A stat needs no permission on the file itself: a
					// directory on the way to it cannot be searched
					// (chmod 000 on a workspace directory, say).
					return fmt.Sprintf("%v: check the permissions of %s and the directories above it", err, filepath.Dir(p))
				}
				return fmt.Sprintf("%v: check the permissions of %s", err, p)
			}
		}
		// A rename onto a file outside the store (a restore or rewind
		// putting a workspace file back) refused: that file (immutable,
		// say) or its directory is what to check, not the store.
		var lke *os.LinkError
		if errors.As(err, &lke) {
			if p, aerr := filepath.Abs(lke.New); aerr == nil && !inDir(home, p) {
				return fmt.Sprintf("%v: check the permissions of %s and of its directory %s", err, p, filepath.Dir(p))
			}
		}
		return fmt.Sprintf("%v: check the permissions of %s (`rook doctor`)", err, home)
	case errors.As(err, &te):
		return tornTailAdvice(te, home)
	case errors.As(err, &jf):
		return jf.message(home)
	case errors.Is(err, syscall.ENOSPC):
		// What the store's own error says ("close and reopen the store")
		// is for a program holding it open; a command has exited, and the
		// next one to open the store recovers what this one wrote. A gc or
		// repack whose index commit failed leaves copies no entry names:
		// run again, it drops them (a gc rewrites a segment once they are
		// over a quarter of it; a repack, every segment). One whose index
		// compaction failed once the commit was made does not fail
		// (cas.GCReport's IndexCompactionFailed): the old segments are
		// gone all the same.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			if p, aerr := filepath.Abs(pe.Path); aerr == nil && !inDir(home, p) {
				return fmt.Sprintf("%v: the disk holding %s is full: free space, then run the command again", err, p)
			}
		}
		// A gc or repack that failed gave back what it had written (its
		// error says so): there is nothing for the next one to recover.
		var rf *cas.RewriteFailedError
		if errors.As(err, &rf) {
			if rf.Left != nil {
				return fmt.Sprintf("%v: the disk holding the store %s is full: free space, then run the command again", err, home)
			}
			return fmt.Sprintf("%v (%s given back): the disk holding the store %s is full: free space, then run the command again", err, formatBytes(rf.Freed), home)
		}
		return fmt.Sprintf("%v: the disk holding the store %s is full: free space, then run the command again (it recovers what this one wrote)", err, home)
	}
	return err.Error()
}

// tornTailAdvice is what to do about a torn tail a writer's open could
// not copy aside (cas.TornTailError): this command wrote nothing, and no
// write goes in until the copy can be made. On a full disk, what to free
// is the tail's size, which the error names: the bytes are rook's own,
// never acknowledged, but kept in torn/ before they are cut
// (docs/storage.md), so the copy needs that room once.
func tornTailAdvice(te *cas.TornTailError, home string) string {
	if errors.Is(te, syscall.ENOSPC) || errors.Is(te, syscall.EDQUOT) {
		return fmt.Sprintf("%v: nothing was written: free at least %s (the torn tail's size) on the disk holding %s, then run the command again: it keeps the tail in %s, cuts it off and goes on (earlier copies in %s are kept for inspection only: deleting those no one needs frees room too)",
			te, formatBytes(te.Size), home, te.Dir, te.Dir)
	}
	return fmt.Sprintf("%v: nothing was written: every writer copies the tail aside first, so fix what failed (`rook doctor`) and run the command again", te)
}

// tornTailNoRoom is, for a torn tail of size bytes, what verify and
// doctor add when the disk holding the store has less room than its copy
// needs: every writer's open then fails (TornTailError) until that much
// is freed. Empty when there is room, or the free space is unknown.
func tornTailNoRoom(home string, size int64) string {
	free, _, err := vfs.DiskFree(home)
	if err != nil || free >= uint64(size) {
		return ""
	}
	return fmt.Sprintf("; only %s is free: every write fails until %s more is freed", formatBytes(int64(free)), formatBytes(size-int64(free)))
}

// explainOutput says what a failed write to stdout lost, and, when
// nothing else failed, that only the output did: a user who reads "run
// it again" after `rook session new` or `capture` would make a second
// session or checkpoint.
func explainOutput(oe *outputError) string {
	msg := fmt.Sprintf("%v: the output is cut short", oe)
	if errors.Is(oe, syscall.ENOSPC) {
		msg = fmt.Sprintf("%v: the disk standard output goes to is full, so the output is cut short", oe)
	}
	if oe.alone {
		msg += "; nothing else failed (what the command changes is changed)"
	}
	return msg
}

// badMarkerMessage is err, a malformed marker, with how to get past it;
// one that still names another format already says why init is not the
// way past it.
func badMarkerMessage(err error, home string) string {
	if errors.Is(err, cas.ErrMarkerOtherFormat) {
		return err.Error()
	}
	return err.Error() + ": " + markerFix(home)
}

// markerFix is what to do with a format marker that does not read (zeroed
// by a crash of the file system, cut short, edited): it is never
// rewritten, and no command said how to get past it. A new one keeps the
// store: init writes a marker into a home that has none, and leaves the
// parts that are there (objects, index, sessions) as they are.
func markerFix(home string) string {
	path := agent.ShellQuote(filepath.Join(home, cas.MarkerFile))
	return fmt.Sprintf("if rook made this store, move the marker aside (`mv %s %s.damaged`) and run `rook init`: it writes a new one and keeps what the store holds (`rook store verify` then checks it)", path, path)
}

// inDir reports whether path p is dir or below it.
func inDir(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// openStore opens the store for a command, telling the user on stderr what
// the open repaired.
func (e *Env) openStore(writable bool) (*cas.Store, error) {
	return e.openStoreWith(cas.Options{Writable: writable})
}

func (e *Env) openStoreWith(opts cas.Options) (*cas.Store, error) {
	if opts.Writable && e.lockWaitErr != nil {
		return nil, e.lockWaitErr
	}
	opts.FS, opts.Clock, opts.Command = e.FS, e.Clock, e.Command
	opts.LockWait, opts.LockWaiting = e.LockWait, e.lockWaiting(e.LockWait)
	s, err := cas.Open(e.Home, opts)
	if err != nil {
		return nil, err
	}
	for _, n := range s.Notices {
		fmt.Fprintf(e.Stderr, "rook: note: %s\n", n)
	}
	return s, nil
}

// lockWaiting says, on a terminal, that a writer waits for the lock: a
// hook's or a script's stderr is left as it is.
func (e *Env) lockWaiting(wait time.Duration) func(holder string) {
	if !isTerminal(e.Stderr) {
		return nil
	}
	return func(holder string) {
		if holder == "" {
			holder = "another process"
		}
		fmt.Fprintf(e.Stderr, "rook: waiting for the store's writer lock, held by %s (up to %s; --lock-wait changes it)\n", holder, wait)
	}
}

// printJSON writes v as indented JSON, with <, > and & as themselves: it is
// read by scripts and people, never pasted into HTML. v is encoded whole
// before anything is written (as json.Encoder does too): a value JSON
// cannot hold (a time outside the years 0-9999) prints nothing and returns
// a *jsonEncodeError, where a failed write returns the write's error.
func (e *Env) printJSON(v any) error { return printJSONTo(e.Stdout, v) }

// printJSONTo is printJSON onto w: stderr, when standard output holds
// what the command wrote for the user (export-html -o /dev/stdout).
func printJSONTo(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return &jsonEncodeError{err: err}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// jsonEncodeError: printJSON could not encode its value, and printed
// nothing. The command's work was done; what it has to say was not said.
type jsonEncodeError struct{ err error }

func (e *jsonEncodeError) Error() string {
	return fmt.Sprintf("encode the output as JSON: %v: nothing was printed; the command without --json shows it", e.err)
}

func (e *jsonEncodeError) Unwrap() error { return e.err }

// unprinted is printJSON's err for a command whose exit is a verdict that
// comes after the output: a failed write is Main's to tell after that
// verdict (nil here), but output that could not be encoded fails the
// command now, not exit 0 with nothing on stdout.
func unprinted(err error) error {
	if je := (*jsonEncodeError)(nil); errors.As(err, &je) {
		return err
	}
	return nil
}
