package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/klauspost/compress/zstd"

	"github.com/rookhq/rook/agent"
	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// ImportCmd is `rook import`.
type ImportCmd struct {
	ClaudeCode ImportClaudeCodeCmd `cmd:"" name:"claude-code" help:"Import Claude Code transcripts (default ~/.claude/projects, or $CLAUDE_CONFIG_DIR/projects): each session file a session, subagents as child sessions."`
	Codex      ImportCodexCmd      `cmd:"" name:"codex" help:"Import Codex rollouts (default ~/.codex/sessions and archived_sessions, or in $CODEX_HOME), .jsonl and .jsonl.zst."`
}

// importPaths are what `rook import FORMAT` takes.
type importPaths struct {
	Paths []string `arg:"" optional:"" help:"Session files, project directories or whole trees (default: the agent's own directory)."`
	// Reread is a repair, not an import: see agent.Reread.
	Reread bool `help:"Import nothing: read the files again from their start and put back each object of theirs that this store holds but cannot read, or that its sessions name and its index lacks (what rook store verify lists as unreadable or not in the store), then verify the store."`
}

// ImportClaudeCodeCmd is `rook import claude-code [PATH...]`.
type ImportClaudeCodeCmd struct{ importPaths }

// ImportCodexCmd is `rook import codex [PATH...]`.
type ImportCodexCmd struct{ importPaths }

// Run imports Claude Code transcripts.
func (c *ImportClaudeCodeCmd) Run(e *Env) error {
	if c.Reread {
		return runReread(e, agent.FormatClaudeCode, c.Paths)
	}
	return runImport(e, agent.FormatClaudeCode, c.Paths)
}

// Run imports Codex rollouts.
func (c *ImportCodexCmd) Run(e *Env) error {
	if c.Reread {
		return runReread(e, agent.FormatCodex, c.Paths)
	}
	return runImport(e, agent.FormatCodex, c.Paths)
}

// importAgentDir checks the paths an import was given and finds the
// agent's own directory, where the defaults are.
func importAgentDir(e *Env, format string, paths []string) (string, error) {
	for _, p := range paths {
		if p == "" {
			// Taken as the current directory, "" would import every
			// transcript below it: a script's empty variable.
			return "", usageErr("an empty path: give a file or directory (none: the agent's own directory)")
		}
	}
	home, err := os.UserHomeDir()
	agentDir := agent.AgentDirOf(format, home, os.Getenv)
	if err != nil && len(paths) == 0 && !filepath.IsAbs(agentDir) {
		return "", fmt.Errorf("no home directory to find the default transcripts in (%v): give the paths to import", err)
	}
	if abs, err := filepath.Abs(agentDir); err == nil {
		agentDir = abs // CODEX_HOME may be relative
	}
	if fi, err := e.FS.Stat(agentDir); len(paths) == 0 && err == nil && !fi.IsDir() {
		// $CODEX_HOME set to a rollout, say: "stat .../sessions: not a
		// directory" would not say which setting is wrong.
		return "", fmt.Errorf("%s, where %s keeps its transcripts (%s), is a file, not a directory: point %s at %s's directory, or name the files to import",
			agentDir, agent.FormatName(format), agentDirSetting(format), agentDirVar(format), agent.FormatName(format))
	}
	return agentDir, nil
}

func runImport(e *Env, format string, paths []string) error {
	agentDir, err := importAgentDir(e, format, paths)
	if err != nil {
		return err
	}
	cfg, err := e.loadConfig()
	if err != nil {
		return err
	}
	var rep agent.ImportReport
	// The store's size on disk, measured around the whole command: the
	// index is committed when the store closes, so only then does the
	// disk say what the import took. (Measured before the store's lock
	// is taken: what another writer adds meanwhile counts as the
	// import's.)
	before, berr := cas.MeasureDisk(e.FS, e.Home)
	// Interrupted, the import stops before the next file (the store then
	// closed as at any end, nothing for the next command to recover) and
	// says what is in and what is not; a second interrupt ends rook at
	// once. Still waiting for the writer lock another writer holds, an
	// interrupt ends rook at once: nothing is written yet, and there is
	// no file to finish first. Once this open holds the lock (it may be
	// recovering what a crash left), the import stops before its first
	// file, the store opened and closed as at any end.
	var stopped atomic.Pointer[os.Signal]
	var phase atomic.Int32 // importOpening, importTaking, importClosing
	doneStop := onInterruptStop(func(sig os.Signal, again bool) string {
		opening := false
		ph := phase.Load()
		switch {
		case ph == importOpening:
			msg, ours := importNotBegunMsg(e, sig)
			if !ours {
				return msg
			}
			if again {
				return fmt.Sprintf("%v again: the import ended at once as it opened the store: nothing was imported, and the store is as a crash leaves it, which the next command that opens it recovers; run it again to import", sig)
			}
			opening = true
		case again:
			return importEndedMsg(sig, ph)
		}
		stopped.Store(&sig)
		if !e.JSON {
			switch {
			case opening:
				fmt.Fprintf(e.Stderr, "\nrook: %v: stopping the import once the store is open, before its first file (%v again stops at once)\n", sig, sig)
			case ph == importClosing:
				// The files are gone through: what is left is the close,
				// which the import waits for (the summary follows).
				fmt.Fprintf(e.Stderr, "\nrook: %v: the import has gone through its files and is closing the store; it ends once that is done (%v again stops at once)\n", sig, sig)
			default:
				fmt.Fprintf(e.Stderr, "\nrook: %v: stopping the import once the file being taken in is in (%v again stops at once)\n", sig, sig)
			}
		}
		return ""
	})
	err = e.write(func(r *agent.Rook) error {
		phase.Store(importTaking)
		defer phase.Store(importClosing)
		p := newProgress(e.Stderr, "import "+format)
		var ierr error
		rep, ierr = r.Import(agent.ImportOptions{Format: format, Paths: paths, AgentDir: agentDir, Progress: p.update,
			Retention: &cfg.Storage.Retention, Stop: func() bool { return stopped.Load() != nil }})
		p.done()
		return ierr
	})
	// The store is closed: an interrupt from here on ends rook at once.
	doneStop()
	if err != nil {
		return err
	}
	out := importJSON{ImportReport: rep}
	if after, aerr := cas.MeasureDisk(e.FS, e.Home); berr == nil && aerr == nil {
		out.DiskBefore, out.DiskAfter = &before.Total, &after.Total
	}
	if e.JSON {
		if out.Files == nil {
			out.Files = []agent.ImportedFile{} // [], not null, when nothing was found
		}
		if out.Paths == nil {
			out.Paths = []string{}
		}
		// A failed write is Main's to tell, after the verdict below.
		if err := unprinted(e.printJSON(out)); err != nil {
			return err
		}
	} else {
		keep := keepAdvice(e, cfg.Storage.Retention.ProtectTags)
		printImport(e, out, keep)
		if budget := agent.Limit(cfg.Storage.Retention.MaxTotalBytes); budget > 0 && rep.StoredAfter > budget {
			fmt.Fprintf(e.Stdout, "note: the store holds %s of objects, over its budget of %s (config.toml, [storage.retention] max_total_bytes): `rook store maintain` would delete the least recently updated sessions until it fits; raise the budget, or %s\n",
				formatBytes(rep.StoredAfter), formatBytes(budget), keep)
		}
	}
	if rep.Stopped {
		sig := *stopped.Load()
		return &exitError{code: interruptedCode(sig), msg: importStoppedMsg(sig, rep)}
	}
	if sig := stopped.Load(); sig != nil {
		// Interrupted as it took in its last file: every file is in, and
		// still it ends as interrupted (130), so that what ran it (a loop
		// of imports in a shell, a script) stops too, as was asked.
		failed := ""
		if rep.Failed > 0 {
			failed = fmt.Sprintf(" (%d failed: the summary says why)", rep.Failed)
		}
		return &exitError{code: interruptedCode(*sig), msg: fmt.Sprintf("%v: the import had read every file when it came to stop%s: nothing is left for it to import", *sig, failed)}
	}
	// The summary lists every failure; stderr names the first, so that it
	// says what failed when stdout goes to a file.
	first := ""
	for _, f := range rep.Files {
		if f.Status == agent.ImportFailed {
			first = fmt.Sprintf(": %s: %s", terminalLine(f.Path), terminalLine(f.Note))
			break
		}
	}
	if rep.Failed == 0 {
		return nil
	}
	// A file that failed part way (a .zst damaged near its end) has its
	// lines before the damage in a session: something was imported.
	partial := false
	for _, f := range rep.Files {
		partial = partial || (f.Status == agent.ImportFailed && f.Session != nil && f.Lines > 0)
	}
	if rep.Failed == len(rep.Files) && !partial {
		// A failed file whose session an earlier import made holds the
		// lines taken in then (its note names it): nothing new. Said of
		// one file only: of several, the others may never have been.
		verb := "nothing could be imported"
		if f := rep.Files[0]; len(rep.Files) == 1 && f.Session != nil {
			verb = "nothing more could be imported"
		}
		if rep.Failed > 1 {
			return &exitError{code: ExitFailure, msg: fmt.Sprintf("%s: none of %d file(s) (the first%s; the summary lists them all)", verb, rep.Failed, first)}
		}
		return &exitError{code: ExitFailure, msg: verb + first}
	}
	what := "file(s)"
	if _, _, dirs := fileCounts(rep); dirs > 0 {
		what = "file(s) and directories" // (a directory that could not be listed)
	}
	msg := fmt.Sprintf("1 of %d %s could not be imported%s", len(rep.Files), what, first)
	if rep.Failed > 1 {
		msg = fmt.Sprintf("%d of %d %s could not be imported (the first%s; the summary lists them all)", rep.Failed, len(rep.Files), what, first)
	}
	msg += othersImported(rep)
	return &exitError{code: ExitFailure, msg: msg}
}

// An import's phases, as its interrupt handler tells them apart: opening
// the store (waiting for its writer lock), taking in the files, closing
// the store.
const (
	importOpening int32 = iota
	importTaking
	importClosing
)

// importNotBegunMsg says, of an import interrupted before the store was
// open, that nothing was imported, and who holds the writer lock it was
// waiting for, when another process does. ours: the lock file names this
// process, whose open holds the lock (and may be recovering what a crash
// left): the import is to stop itself, not end at once (its open writes
// that name before anything else).
func importNotBegunMsg(e *Env, sig os.Signal) (msg string, ours bool) {
	holder, err := cas.LockHolder(e.FS, e.Home)
	if strings.HasPrefix(holder, fmt.Sprintf("pid %d ", os.Getpid())) {
		return "", true
	}
	if err != nil || holder == "" {
		// No telling who (a holder that does not say, or the lock let go
		// just now): nothing is written yet.
		return fmt.Sprintf("%v: the import stopped before it began, as the store was being opened: nothing was imported; run it again to import", sig), false
	}
	return fmt.Sprintf("%v: the import stopped while it waited for the store's writer lock, held by %s: nothing was imported; run it again once that one is done (`rook doctor` shows the holder)", sig, holder), false
}

// importEndedMsg says, of an import a second interrupt ended at once (in
// phase importTaking or importClosing), what is true of the store.
func importEndedMsg(sig os.Signal, phase int32) string {
	if phase == importClosing {
		return fmt.Sprintf("%v again: the import ended at once as it closed the store: what is in the store is whole (the next command that opens it finishes or sets aside what closing left, and a note says so); the next `rook import` takes in whatever of the files is not in", sig)
	}
	return fmt.Sprintf("%v again: the import ended at once, in the middle of a file: what is in the store is whole (the next command that opens it takes in what was written whole and sets aside any part written, and a note says so); the next `rook import` takes that file up from what is in, and the files not read yet", sig)
}

// importStoppedMsg says, of an import an interrupt stopped, what is in the
// store and what is not, and that running it again goes on from there.
func importStoppedMsg(sig os.Signal, rep agent.ImportReport) string {
	in := rep.Sessions + rep.Grown + rep.Rewritten
	failed := ""
	if rep.Failed > 0 {
		failed = fmt.Sprintf(", %d failed (the summary says why)", rep.Failed)
	}
	rest := fmt.Sprintf("%d not read (the first: %s): run the same `rook import` again to import them", len(rep.NotRead), terminalLine(rep.NotRead[0]))
	if len(rep.Files) == 0 {
		return fmt.Sprintf("%v: the import stopped before its first file: nothing imported; %s", sig, rest)
	}
	if rep.Gone > 0 {
		was := "it was"
		if rep.Gone > 1 {
			was = "they were"
		}
		failed = fmt.Sprintf(", %d gone before %s read (deleted or moved away after the files were listed)", rep.Gone, was) + failed
	}
	return fmt.Sprintf("%v: the import stopped after %d of %d file(s): %d taken in, %d unchanged%s, all in the store; %s (what is in is not imported twice)",
		sig, len(rep.Files), len(rep.Files)+len(rep.NotRead), in, rep.Unchanged, failed, rest)
}

// othersImported says what happened to the files that did not fail: an
// unchanged one (empty, or nothing new since the last import) was not
// imported, and saying so is what tells the user nothing is missing; one
// gone before it was read is said as gone, not as unchanged.
func othersImported(rep agent.ImportReport) string {
	imported := rep.Sessions + rep.Grown + rep.Rewritten
	same := len(rep.Files) - rep.Failed - imported - rep.Gone
	verb := func(n int, one, many string) string {
		if n == 1 {
			return one
		}
		return many
	}
	const nothingNew = "had nothing new to import (empty, or unchanged since the last import)"
	const listed = " (deleted or moved away after the files were listed)"
	switch ok := imported + same + rep.Gone; {
	case ok == 0:
		return ""
	case ok == imported:
		return verb(ok, "; the other file was imported", fmt.Sprintf("; the other %d were imported", ok))
	case ok == same:
		return verb(ok, "; the other file ", fmt.Sprintf("; the other %d ", ok)) + nothingNew
	case ok == rep.Gone:
		return verb(ok, "; the other file was gone before it was read", fmt.Sprintf("; the other %d were gone before they were read", ok)) + listed
	}
	var parts []string
	if imported > 0 {
		parts = append(parts, fmt.Sprintf("%d %s imported", imported, verb(imported, "was", "were")))
	}
	if same > 0 {
		parts = append(parts, fmt.Sprintf("%d %s", same, nothingNew))
	}
	if rep.Gone > 0 {
		parts = append(parts, fmt.Sprintf("%d %s", rep.Gone, verb(rep.Gone, "was gone before it was read", "were gone before they were read"))+listed)
	}
	last := len(parts) - 1
	return fmt.Sprintf("; of the other %d, %s and %s", imported+same+rep.Gone, strings.Join(parts[:last], ", "), parts[last])
}

// agentDirVar is the variable that names a format's agent's directory, and
// agentDirSetting says where that directory came from: the variable, or
// the home directory.
func agentDirVar(format string) string {
	if format == agent.FormatCodex {
		return "$CODEX_HOME"
	}
	return "$CLAUDE_CONFIG_DIR"
}

func agentDirSetting(format string) string {
	if os.Getenv(strings.TrimPrefix(agentDirVar(format), "$")) != "" {
		return "as " + agentDirVar(format) + " says"
	}
	return "in your home directory"
}

// importJSON is the import's report and the store's size on disk around
// it (nil where it could not be measured).
type importJSON struct {
	agent.ImportReport
	DiskBefore *int64 `json:"disk_before"`
	DiskAfter  *int64 `json:"disk_after"`
}

// sideLate says what becomes of file backups put back after their lines
// were imported: the next import takes in a file's first backup, where no
// capture of the session holds that file yet (lateCaptures); a later
// version of a file already captured is not taken.
const sideLate = "; put there later, the next import takes in each file's first backup the session holds no capture of"

// keepAdvice says how to keep a session from retention, as the import's
// notes end: tag it with a protect tag of config.toml (the first one
// `session tag` takes, as the config spells it, after `--` when it starts
// with '-': sessionTagCommand), or, with none, that no
// tag protects a session now and where to name one. A literal `keep`
// kept nothing in a store whose protect_tags do not hold it.
func keepAdvice(e *Env, protect []string) string {
	for _, t := range protect {
		if agent.ValidTag(t) == nil {
			return "tag the sessions to keep with a protect tag (`" + sessionTagCommand(false, []string{t}) + "`)"
		}
	}
	why := "protect_tags is empty"
	if len(protect) > 0 {
		why = "protect_tags names no tag `rook session tag` takes"
	}
	return "name a tag in protect_tags ([storage.retention] in " + filepath.Join(e.Home, agent.ConfigFile) + ") and tag the sessions to keep with it: no tag protects a session now (" + why + ")"
}

// fileCounts counts, of an import's report, the files and the files that
// failed, and apart from them the directories the walk could not list
// (each a failed entry of rep.Files, not a file).
func fileCounts(rep agent.ImportReport) (files, failed, dirs int) {
	for _, f := range rep.Files {
		if f.Directory {
			dirs++
		}
	}
	return len(rep.Files) - dirs, rep.Failed - dirs, dirs
}

// problemsPerFile is how many problems the text summary lists of one file
// (a transcript of thousands of damaged lines printed thousands), then
// how many more it has; --json lists them all, up to
// agent.MaxImportProblems of the import's (ImportProblem.LeftOut counts a
// file's past those).
const problemsPerFile = 20

// printImport writes the import's report; keep is keepAdvice's, for the
// retention note.
func printImport(e *Env, out importJSON, keep string) {
	rep := out.ImportReport
	w := e.Stdout
	files, failed, dirs := fileCounts(rep)
	fmt.Fprintf(w, "%s: %d file(s): %d new, %d grown, %d unchanged, %d rewritten (imported again as new sessions), %d failed",
		rep.Format, files, rep.Sessions, rep.Grown, rep.Unchanged, rep.Rewritten, failed)
	if rep.Gone > 0 {
		fmt.Fprintf(w, ", %d gone before they were read", rep.Gone) // (listed, then deleted or moved away)
	}
	if dirs > 0 {
		fmt.Fprintf(w, "; %d directory(ies) could not be listed (the files in them were not found)", dirs)
	}
	fmt.Fprintln(w)
	if rep.Stopped {
		fmt.Fprintf(w, "stopped by an interrupt: %d more file(s) found were not read: the same import again takes them in\n", len(rep.NotRead))
	}
	if rep.Linked > 0 {
		fmt.Fprintf(w, "%d session(s) imported before their parent are now linked to it\n", rep.Linked)
	}
	if rep.ForksTagged > 0 {
		fmt.Fprintf(w, "%d fork(s) imported before rook tagged them are now tagged fork: listed as forks of their parent, not children\n", rep.ForksTagged)
	}
	// What was read: the transcripts' lines, and the files beside them
	// (tool outputs, file backups, session memory) taken in with them;
	// the ratio is over both, as what is stored holds both.
	in := rep.BytesIn + rep.SideBytesIn
	if rep.SideBytesIn > 0 {
		fmt.Fprintf(w, "%d line(s) -> %d event(s); %s in (%s of transcripts, %s of files beside them), ", rep.Lines, rep.Events,
			formatBytes(in), formatBytes(rep.BytesIn), formatBytes(rep.SideBytesIn))
	} else {
		fmt.Fprintf(w, "%d line(s) -> %d event(s); %s in, ", rep.Lines, rep.Events, formatBytes(in))
	}
	ratio := func(added int64) string {
		if added <= 0 || in == 0 {
			return ""
		}
		return fmt.Sprintf(" (%.1fx)", float64(in)/float64(added))
	}
	if out.DiskBefore != nil && *out.DiskAfter > *out.DiskBefore && in > 0 {
		// What a user's disk lost: objects, and the index and event logs
		// that find them.
		grew := *out.DiskAfter - *out.DiskBefore
		fmt.Fprintf(w, "%s more on disk%s: %s of objects, %s of index and event logs\n", formatBytes(grew), ratio(grew),
			formatBytes(rep.StoredAdded()), formatBytes(max(0, grew-rep.StoredAdded())))
	} else {
		fmt.Fprintf(w, "%s added to the store%s\n", formatBytes(rep.StoredAdded()), ratio(rep.StoredAdded()))
	}
	if rep.ToolResults > 0 {
		fmt.Fprintf(w, "%d tool output(s) taken in whole from Claude Code's tool-results/ files\n", rep.ToolResults)
	}
	if n := rep.BackupsLateTaken; n > 0 {
		fmt.Fprintf(w, "%d file backup(s) put in Claude Code's file-history/ after their lines were imported taken in: `rook session diff` and rewind use them\n", n)
	}
	if n := rep.SessionMemory; n > 0 {
		fmt.Fprintf(w, "%d session-memory file(s) taken in from Claude Code's <session>/session-memory/ (new, or changed since)\n", n)
	}
	if n := rep.ToolResultsMissing; n > 0 {
		fmt.Fprintf(w, "%d tool output(s) the lines name are not in their tool-results/ directory (deleted, or not copied with the transcripts): only the preview in the line is kept; put there later, the next import takes them in\n", n)
	}
	if n := rep.BackupsMissing; n > 0 {
		fmt.Fprintf(w, "%d file backup(s) the lines name are not in Claude Code's file-history/ directory (deleted, or not copied with the transcripts): `rook session diff` and rewind leave those files out%s\n", n, sideLate)
	}
	if n := rep.BackupsLate; n > 0 {
		ids := make([]string, len(rep.LateSessions))
		for i, id := range rep.LateSessions {
			ids[i] = id.String()
		}
		fmt.Fprintf(w, "%d file backup(s) in Claude Code's file-history/ were put there after their session was imported without them, and no line of its transcript names them (or they did not read, as said above): not taken in (`rook session diff` and rewind go without them): %s\n", n, strings.Join(ids, ", "))
	}
	if n := len(rep.ZstBeside); n > 0 {
		fmt.Fprintf(w, "%d .zst rollout(s) left out: the plain file beside each is the same rollout, and was read (Codex compressing it, or writing it back to resume it)\n", n)
	}
	if len(rep.Files) == 0 && !rep.Stopped {
		kinds := ".jsonl"
		if rep.Format == agent.FormatCodex {
			kinds = "rollout-*.jsonl or .jsonl.zst"
		}
		where, named := "", make([]string, len(rep.Paths))
		for i, p := range rep.Paths {
			named[i] = agent.ShellQuote(p)
		}
		if len(rep.Paths) > 0 {
			// With no path, the agent's own directory: one the user did
			// not type, so "there" would not say where.
			where = " in " + terminalLine(strings.Join(rep.Paths, ", "))
		}
		fmt.Fprintf(w, "no transcript found%s: no %s file there, nor in the directories below\n", where, kinds)
		if rep.OtherJSONL > 0 {
			fmt.Fprintf(w, "%d other .jsonl file(s) there are not Codex rollouts: Claude Code transcripts? `rook import claude-code %s` imports them\n",
				rep.OtherJSONL, terminalLine(strings.Join(named, " ")))
		}
	}
	for _, f := range rep.Files {
		if f.Status == agent.ImportUnchanged && f.MovedFrom == "" && f.Note == "" {
			continue // a note says why a file is unchanged on a first import (empty, a line still being written)
		}
		sid := "-"
		if f.Session != nil {
			sid = f.Session.String()
		}
		status := f.Status
		if f.Continued {
			// Taken up where an import cut short stopped: the file may
			// not have grown at all.
			status = "continued"
		}
		fmt.Fprintf(w, "  %-9s %s  %s  %d line(s)", status, sid, terminalLine(f.Path), f.Lines)
		switch {
		case f.Parent != nil && f.Fork:
			fmt.Fprintf(w, "  fork of %s", f.Parent)
		case f.Parent != nil:
			fmt.Fprintf(w, "  child of %s", f.Parent)
		}
		fmt.Fprintln(w)
		if f.Note != "" && f.Status != agent.ImportFailed { // a failure is in the problems below
			fmt.Fprintf(w, "            %s\n", terminalLine(f.Note))
		}
	}
	var kept []string // the lines kept as notes that are problems
	if rep.Unparsed > 0 {
		kept = append(kept, fmt.Sprintf("%d line(s) did not parse", rep.Unparsed))
	}
	if rep.Unknown > 0 {
		kept = append(kept, fmt.Sprintf("%d line(s) are of an entry type rook does not know", rep.Unknown))
	}
	switch {
	case len(kept) > 0 && rep.Failed == 0:
		fmt.Fprintf(w, "%s; they are kept byte for byte as notes:\n", strings.Join(kept, ", and "))
	case len(kept) > 0:
		fmt.Fprintf(w, "problems: %d file(s) failed, and %s (kept byte for byte as notes):\n", rep.Failed, strings.Join(kept, ", and "))
	case len(rep.Problems) > 0:
		fmt.Fprintln(w, "problems:")
	}
	// of: a file's problems listed; more: its problems the summary does
	// not list, those the report lists past the first problemsPerFile and
	// those it leaves out (ImportProblem.LeftOut); leftOut: its left out.
	listed, of, more, leftOut := map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}
	otherLeftOut := rep.ProblemsLeftOut // of no file listed
	for _, p := range rep.Problems {
		of[p.File]++
		if p.File != "" {
			leftOut[p.File] += p.LeftOut
			otherLeftOut -= p.LeftOut
		}
	}
	for f, n := range of {
		more[f] = max(n-problemsPerFile, 0) + leftOut[f]
	}
	for _, p := range rep.Problems {
		if p.File != "" {
			if listed[p.File]++; listed[p.File] > problemsPerFile {
				continue
			}
		}
		switch {
		case p.File == "":
			fmt.Fprintf(w, "  %s\n", terminalLine(p.Reason))
		case p.Line > 0:
			fmt.Fprintf(w, "  %s:%d: %s\n", terminalLine(p.File), p.Line, terminalLine(p.Reason))
		default:
			fmt.Fprintf(w, "  %s: %s\n", terminalLine(p.File), terminalLine(p.Reason))
		}
		if p.File != "" && listed[p.File] == min(of[p.File], problemsPerFile) && more[p.File] > 0 {
			where := "--json lists them all"
			if leftOut[p.File] > 0 {
				where = fmt.Sprintf("--json lists the first %d of the import's problems", agent.MaxImportProblems)
			}
			fmt.Fprintf(w, "  %s: and %d more (%s)\n", terminalLine(p.File), more[p.File], where)
		}
	}
	if otherLeftOut > 0 {
		fmt.Fprintf(w, "  ... and %d more\n", otherLeftOut)
	}
	if n := len(rep.BeyondRetention); n > 0 {
		fmt.Fprintf(w, "note: the retention policy (config.toml, [storage.retention]) would delete %d of these session(s) at the next `rook store prune` or `maintain` (%s): %s, or raise the limit\n",
			n, rep.BeyondRetention[0].Reason, keep)
	}
}

// ExportCmd is `rook export`.
type ExportCmd struct {
	Session string   `arg:"" help:"Session id, unique prefix, or 'last'."`
	Format  string   `help:"The source format to write (claude-code or codex); it must be the one the session was imported from." placeholder:"FORMAT"`
	Output  nonEmpty `short:"o" help:"Write to FILE (atomically) instead of standard output (-: standard output); a FILE named .zst is written zstd-compressed; the session's own source file, still there, is never replaced (left as it is when it holds these bytes, else refused), nor another session's (a hard link to one is that one); a FILE not there is made without replacing one made meanwhile." placeholder:"FILE"`
	// ToolResults: Claude Code's tool-results/ files, which the import
	// took in beside the transcript (agent.ExportToolResults).
	ToolResults nonEmpty `name:"tool-results" help:"Also write the outputs Claude Code saved whole beside the transcript (its <session>/tool-results/ files) into DIR, made if missing." placeholder:"DIR"`
}

// forkNotImported says, for a fork (or rewind) of an imported session,
// that it is one and what can be exported: the imported session's file,
// and the fork itself as a page or JSON. A fork holds its parent's lines
// but not a whole file. The imported session may be further up: a fork of
// a fork said only "not imported from a transcript file". A fork between
// them removed is passed (agent.ImportedAncestor follows the ancestor its
// removal recorded). nil when no ancestor was imported (or one is gone).
func forkNotImported(r *agent.Rook, m eventlog.Meta) error {
	im, fork, at, ok := r.ImportedAncestor(m)
	if !ok {
		return forkOfRemoved(r, m)
	}
	if fork.ID.IsZero() {
		return nil
	}
	what := fmt.Sprintf("a fork of the first %d event(s) of %s", at, im.ID)
	if via, _, _ := m.ForkedFrom(); fork.ID != m.ID {
		// via: its parent, or, that one removed, the fork its copy
		// came from (Meta.Ancestor).
		what = fmt.Sprintf("a fork of %s, which comes from the first %d event(s) of %s", via, at, im.ID)
	}
	return fmt.Errorf("session %s: not imported itself: it is %s, imported from %s: `rook export %s` writes that file; `rook session export-html %s -o FILE` or `rook session show %s --json` export this fork",
		m.ID, what, im.Source.Path, im.ID, m.ID, m.ID)
}

// forkOfRemoved is forkNotImported for a fork whose imported ancestor,
// or a fork between them, was removed: the fork still holds the lines
// (agent.ImportedFrom says whose format), but no session is left whose
// file `rook export` can write; it said only "not imported from a
// transcript file", as for a session made in rook. nil when m holds no
// imported lines.
func forkOfRemoved(r *agent.Rook, m eventlog.Meta) error {
	src := r.ImportedFrom(m)
	if src == nil {
		return nil
	}
	gone := "a session"
	// As agent.ImportedAncestor walks: each fork's ForkedFrom (its parent,
	// or the ancestor a removal recorded).
	for p, seen := m, map[eventlog.ID]bool{}; !seen[p.ID]; {
		seen[p.ID] = true
		pid, _, ok := p.ForkedFrom()
		if !ok {
			break
		}
		pm, err := r.Log.ReadMeta(pid)
		if errors.Is(err, eventlog.ErrNoSession) {
			gone = "session " + pid.String()
			break
		}
		if err != nil {
			break
		}
		p = pm
	}
	return fmt.Errorf("session %s: not imported itself: it is a fork of a session imported from %s, and %s on the way to it was removed: no session is left whose transcript rook can write back; `rook session export-html %s -o FILE` or `rook session show %s --json` export this fork (import the transcript again to `rook export` it)",
		m.ID, src.Format, gone, m.ID, m.ID)
}

// Run writes an imported session's source file back.
func (c *ExportCmd) Run(e *Env) error {
	// - is standard output, as it is standard input where rook reads one
	// (store put, session append), never a file named "-".
	output := string(c.Output)
	if output == "-" {
		output = ""
	}
	if e.JSON && output == "" {
		return usageErr("--json needs --output FILE: the exported file itself goes to standard output otherwise")
	}
	named := output
	if output != "" {
		abs, err := absPath(output)
		if err != nil {
			return err
		}
		output = abs // said in full: -C may have moved where it lands
		if err := insideStoreErr(e, "--output", output); err != nil {
			return err
		}
	}
	r, id, err := e.readSession(c.Session)
	if err != nil {
		return err
	}
	defer r.Close()
	m, err := r.Log.ReadMeta(id)
	if err != nil {
		return err
	}
	if m.Source == nil {
		if err := forkNotImported(r, m); err != nil {
			return err
		}
		return fmt.Errorf("session %s: %w", id, agent.ErrNotImported)
	}
	if c.Format != "" && c.Format != agent.FormatClaudeCode && c.Format != agent.FormatCodex {
		return usageErr("--format %s: use claude-code or codex", c.Format)
	}
	if c.Format != "" && c.Format != m.Source.Format {
		return fmt.Errorf("session %s was imported from %s: it can be exported only as %s (--format %s)", id, m.Source.Format, m.Source.Format, m.Source.Format)
	}
	if output != "" {
		if fi, err := e.FS.Stat(output); err == nil && fi.IsDir() {
			return usageErr("--output %s is a directory: name the file to write", output)
		}
		if err := dirNameErr(named); err != nil {
			return err
		}
		if err := outputDirErr(e, output); err != nil {
			return err
		}
	}
	toolResults := string(c.ToolResults)
	if toolResults != "" {
		abs, err := absPath(toolResults)
		if err != nil {
			return err
		}
		toolResults = abs
		if err := insideStoreErr(e, "--tool-results", toolResults); err != nil {
			return err
		}
		// Checked before the transcript is written: failing after it
		// would leave the --output written by a command that failed.
		if fi, err := e.FS.Stat(toolResults); err == nil && !fi.IsDir() {
			return fmt.Errorf("write the session's tool-results files to %s: it is not a directory: name a directory (made if missing)", toolResults)
		}
		// So is one that may not be made or written (a directory the
		// user may not write, a read-only file system): that failed
		// after the transcript was written, leaving it behind.
		if d, err := agent.WritableDir(toolResults); err != nil {
			if rerr := dirRefusedErr("write the session's tool-results files to "+toolResults, d, "--tool-results", err); rerr != nil {
				return rerr
			}
		}
	}
	var x agent.ExportResult
	compressed, unchanged := false, false
	if twin, own := ownSourceFile(e, output, m.Source); own {
		// The session's own source file, still there: what its agent may
		// be writing to. Replaced, a line it wrote since the import (in no
		// store) was lost, and an agent appending wrote on into the file
		// unlinked. Holding the export's bytes, it is left as it is;
		// otherwise refused.
		what := "the session's source file"
		if twin != "" {
			what += " (" + twin + ")"
		}
		if x, err = r.ExportSource(id, io.Discard); err != nil {
			// A store that cannot give the lines back says so: the file
			// is not what is wrong.
			if derr := storeDamagedErr(err); derr != "" {
				return &exitError{code: ExitFailure, msg: fmt.Sprintf("--output %s is %s: left as it is: %s", output, what, derr)}
			}
			return err
		}
		size, sum, err := r.SourceDigest(output)
		if err != nil {
			return fmt.Errorf("--output %s is %s, and it cannot be read to compare it with the export (%w): writing over it might lose what it holds; choose another --output", output, what, err)
		}
		if (size != x.Bytes || sum != x.SHA256) && !x.Exact && !x.Ahead {
			// The export is not the bytes imported: whether the file
			// changed since cannot be told from it.
			return &exitError{code: ExitFailure, msg: fmt.Sprintf("--output %s is %s: left as it is: the store no longer gives back the bytes the import took in (%s of lines, not the %s recorded), so whether the file changed since cannot be told: the store is damaged, or the session's record changed: `rook store verify` says what is damaged",
				output, what, formatBytes(x.Bytes), formatBytes(x.Recorded))}
		}
		if size != x.Bytes || sum != x.SHA256 {
			// Rewritten and imported again, it is a newer session's:
			// "`rook import` it" was no help, the import had been done.
			if om, ok, err := r.SessionOfFile(output); err == nil && ok && om.ID != id {
				return fmt.Errorf("--output %s is %s, and it changed since the import: it was imported again since as session %s (rewritten, not only grown): writing this session's lines over it would replace that transcript; choose another --output",
					output, what, om.ID)
			}
			return fmt.Errorf("--output %s is %s, and it changed since the import (%s now, %s exported): writing over it would lose what it holds that rook does not; `rook import` it to take in what it gained, or choose another --output",
				output, what, formatBytes(size), formatBytes(x.Bytes))
		}
		// Nothing written: nothing compressed by rook (compressed stays
		// false), whatever the file's name.
		unchanged = true
	} else if output != "" {
		// Another session's source file, still there (an id mistyped):
		// replaced, that transcript was lost to its agent, and what it
		// wrote since its import with it.
		om, ok, err := r.SessionOfFile(output)
		if err != nil {
			return err
		}
		if ok && om.ID != id {
			return fmt.Errorf("--output %s is the source file of session %s, imported from it and still there: writing this session's lines over it would replace that transcript; choose another --output", output, om.ID)
		}
	}
	switch {
	case unchanged: // nothing to write
	case output == "":
		// Standard output cannot be taken back once written: every
		// object the export needs is read back first, in a pass that
		// writes nowhere (streamed, as the export: a session of GBs is
		// never held in memory), so that a store that cannot give the
		// lines back writes nothing, as with --output.
		if _, err := r.ExportSource(id, io.Discard); err != nil {
			if derr := storeDamagedErr(err); derr != "" {
				return &exitError{code: ExitFailure, msg: fmt.Sprintf("export session %s: %s; nothing was written to standard output", id, derr)}
			}
			return fmt.Errorf("export session %s: %w; nothing was written to standard output", id, err)
		}
		if x, err = r.ExportSource(id, e.Stdout); err != nil {
			// Read back whole just before: a read that fails now (the
			// disk) comes after lines were written.
			if derr := storeDamagedErr(err); derr != "" {
				return &exitError{code: ExitFailure, msg: fmt.Sprintf("export session %s: %s; what was written to standard output stops there", id, derr)}
			}
			return err
		}
	default:
		// Streamed to the file: a session of GBs is never held in memory.
		// A file named .zst is written zstd-compressed, as its name says
		// (Codex reads a .jsonl.zst rollout so): the import kept the
		// decompressed lines only, so the compressed bytes are rook's,
		// not the source's, and what is byte-exact is their decompression.
		zst := strings.HasSuffix(output, ".zst")
		var xerr error
		err := writeOutput(e, output, func(w io.Writer) error {
			if !zst {
				x, xerr = r.ExportSource(id, w)
				return xerr
			}
			zw, err := zstd.NewWriter(w, zstd.WithEncoderConcurrency(1))
			if err != nil {
				return err
			}
			if x, xerr = r.ExportSource(id, zw); xerr != nil {
				zw.Close()
				return xerr
			}
			return zw.Close()
		})
		compressed = zst
		if xerr == nil && errors.Is(err, fs.ErrExist) {
			return &exitError{code: ExitFailure, msg: fmt.Sprintf("--output %s was not there, and was made while the export was written (by the agent whose transcript it is?): left as it is, nothing written; run the export again to compare it with the session", output)}
		}
		if derr := storeDamagedErr(xerr); derr != "" {
			return &exitError{code: ExitFailure, msg: fmt.Sprintf("export session %s: %s; nothing was written to %s", id, derr, output)}
		}
		if xerr != nil {
			return xerr
		}
		if werr := outputFileErr(e, output, err); werr != nil {
			return werr
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", output, err)
		}
	}
	var tr *agent.ExportedToolResults
	if dir := toolResults; dir != "" {
		t, err := r.ExportToolResults(id, dir)
		if err != nil {
			return fmt.Errorf("write the session's tool-results files to %s: %w", dir, err)
		}
		tr = &t
	}
	return printExport(e, id, output, compressed, x, tr, unchanged)
}

// storeDamagedErr words an export's failure to read the session's lines
// back from the store (an object missing or failing its check) as what it
// is, the store damaged, naming the object and what to run; "" for any
// other error (or none).
func storeDamagedErr(err error) string {
	var nf *cas.NotFoundError
	var ce *cas.CorruptError
	if err == nil || (!errors.As(err, &nf) && !errors.As(err, &ce)) {
		return ""
	}
	return fmt.Sprintf("the store is damaged: it cannot give back the session's lines (%v): `rook store verify` says what is damaged and how to repair it", err)
}

// ownSourceFile says whether output is the session's own source file,
// there now: one of agent.SourceFiles, the file imported or a Codex
// rollout's twin beside it. twin names which, "" for the file itself.
func ownSourceFile(e *Env, output string, src *eventlog.Source) (twin string, own bool) {
	for i, p := range agent.SourceFiles(src) {
		if output == "" || !isFileOf(e, output, p) {
			continue
		}
		switch {
		case i == 0:
			return "", true
		case strings.HasSuffix(src.Path, ".zst"):
			return "the plain rollout beside its .zst", true
		default:
			return "the .zst beside its plain rollout", true
		}
	}
	return "", false
}

// isFileOf says whether output is the file at source (through links, or
// another name of it), that file being there.
func isFileOf(e *Env, output, source string) bool {
	if source == "" {
		return false
	}
	of, err := e.FS.Stat(output)
	if err != nil || !of.Mode().IsRegular() {
		return false
	}
	sf, err := e.FS.Stat(source)
	return err == nil && vfs.SameFile(of, sf)
}

// exists says whether path is there (false only when it is known not
// to be: a path that cannot be looked at is left to the write to fail).
func exists(e *Env, path string) bool {
	_, err := e.FS.Stat(path)
	return !errors.Is(err, fs.ErrNotExist)
}

// writeOutput writes an --output file whole: a new file or a regular one
// replaced at once (the durable-write helper), so that no reader sees half
// of it. A device, a pipe or a symbolic link that is there (/dev/null, a
// FIFO, /dev/stdout, a link to a file) is written through, never replaced
// by a file of the same name.
func writeOutput(e *Env, path string, write func(io.Writer) error) error {
	if fi, err := e.FS.Lstat(path); err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
		// Written through, so not atomically: the contents are made once
		// to nowhere first, so that a failure to make them (an object
		// missing) does not leave the file behind a link half written.
		if err := write(io.Discard); err != nil {
			return err
		}
		// O_CREATE: a link to a file not there yet gets it made, as a
		// shell's > does; without it the write failed with the link's
		// "no such file or directory".
		f, err := e.FS.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		if err := write(f); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	// Not there now, it is made without replacing one made meanwhile
	// (NamedData.New): a file made between the looks above and the
	// rename (the session's source, written again by its agent) was
	// replaced, and what it held lost.
	_, lerr := e.FS.Lstat(path)
	return e.FS.WriteFilesAtomic(filepath.Dir(path), []vfs.NamedData{{Name: filepath.Base(path), New: errors.Is(lerr, fs.ErrNotExist), Stream: write}}, 0o600)
}

// unchanged: output, the session's source file, holds x's bytes already
// and was left as it is.
func printExport(e *Env, id eventlog.ID, output string, compressed bool, x agent.ExportResult, tr *agent.ExportedToolResults, unchanged bool) error {
	// An export that is not exact exits 1, with --json too: a script
	// must not take it for the source.
	notExact := func() error {
		if !x.Exact && !x.Ahead {
			return &exitError{code: ExitFailure, msg: "the export differs from the imported source"}
		}
		return nil
	}
	if e.JSON {
		err := e.printJSON(struct {
			Session eventlog.ID `json:"session"`
			Output  string      `json:"output"`
			// OutputZstd: the output (named .zst) is zstd-compressed by
			// rook; bytes, sha256 and exact are of its decompression.
			OutputZstd bool `json:"output_zstd,omitempty"`
			// Unchanged: the output is the session's source file, which
			// held these bytes already: nothing was written.
			Unchanged bool `json:"unchanged,omitempty"`
			agent.ExportResult
			ToolResultsWritten *agent.ExportedToolResults `json:"tool_results_written,omitempty"`
		}{id, output, compressed, unchanged, x, tr})
		// A failed write is Main's to tell, after notExact's verdict.
		if err := unprinted(err); err != nil {
			return err
		}
		return notExact()
	}
	where := filepath.Clean(output)
	if output == "" {
		where = "standard output"
	}
	exact := "byte-exact: same size and SHA-256 as the bytes the import took in"
	// Why lines are ahead of what an import recorded, and what records
	// them: not "import again" alone, which a damaged file fails again.
	const aheadWhy = "one running now, or one cut short by a crash or by the file failing to read part way: `rook import` of the file, once it reads to its end, records them"
	switch {
	case x.Ahead && x.Recorded == 0:
		exact = fmt.Sprintf("all %s of it: lines taken in by an import that has not finished (%s)", formatBytes(x.Bytes), aheadWhy)
	case x.Ahead:
		exact = fmt.Sprintf("its first %s byte-exact as the last finished import recorded them, then %s of lines taken in by an import that has not finished (%s)",
			formatBytes(x.Recorded), formatBytes(x.Bytes-x.Recorded), aheadWhy)
	case !x.Exact:
		exact = "NOT the bytes the import took in (the session's source lines are incomplete: `rook store verify`)"
	}
	sha := "sha256"
	if compressed {
		where += ", zstd-compressed (its name ends in .zst)"
		sha = "decompressed: sha256"
	}
	if unchanged {
		// exact, not "byte-exact" said whatever it was: the file holds the
		// export's bytes, which may not be the import's. A .zst is the
		// agent's own, compressed by it: its lines are compared once
		// decompressed, rook wrote nothing.
		size, sha := formatBytes(x.Bytes), "sha256"
		if strings.HasSuffix(output, ".zst") {
			size, sha = size+" once decompressed", "sha256 of them"
		}
		fmt.Fprintf(e.Stderr, "%s, the session's source file, already holds these %d line(s), %s (%s %s): left as it is, %s\n", terminalLine(filepath.Clean(output)), x.Lines, size, sha, x.SHA256, exact)
		return notExact()
	}
	fmt.Fprintf(e.Stderr, "wrote %d line(s), %s, to %s: %s %s, %s\n", x.Lines, formatBytes(x.Bytes), terminalLine(where), sha, x.SHA256, exact)
	switch {
	case x.Zstd && compressed:
		// The import kept the decompressed stream, never the file's own
		// compressed bytes, which depend on the zstd that wrote them.
		fmt.Fprintf(e.Stderr, "the source %s was zstd-compressed too, but its compressed bytes are not kept: rook compressed these itself, so the file differs from it while its decompressed JSONL is the same\n", terminalLine(x.Source))
	case x.Zstd:
		fmt.Fprintf(e.Stderr, "the source %s was zstd-compressed: this is its decompressed JSONL (`zstd` recompresses it; an --output named .zst is written compressed)\n", terminalLine(x.Source))
	}
	if x.Skipped > 0 {
		fmt.Fprintf(e.Stderr, "%d event(s) added in rook are not part of the source and were left out\n", x.Skipped)
	}
	switch {
	case tr != nil && len(tr.Files) == 0:
		fmt.Fprintf(e.Stderr, "the session holds no tool output file Claude Code saved beside the transcript: nothing written to %s\n", tr.Dir)
	case tr != nil:
		fmt.Fprintf(e.Stderr, "wrote %d tool output file(s), %s, to %s\n", len(tr.Files), formatBytes(tr.Bytes), tr.Dir)
	case x.ToolResults > 0:
		fmt.Fprintf(e.Stderr, "the session holds %d tool output file(s) Claude Code saved beside the transcript, which it names (tool-results/): --tool-results DIR writes them\n", x.ToolResults)
	}
	return notExact()
}

// rereadJSON is import --reread's --json: what was put back, and what the
// store's verify found after.
type rereadJSON struct {
	agent.RereadReport
	Unreadable     int           `json:"unreadable_objects"`
	DamagedRegions int           `json:"damaged_regions"`
	DeadRecords    int           `json:"dead_records_of_a_missing_dictionary"`
	Problems       []cas.Problem `json:"problems"`
	// The sessions part of verify: objects named by sessions or refs
	// that are not in the store (each listed in MissingProblems).
	Missing         int                      `json:"missing_objects"`
	MissingProblems []agent.ReferenceProblem `json:"missing"`
	// What still does not read (or is missing) after, by whose it is:
	// the sessions of the files read (their files make other objects
	// now), or other sessions (named) or none (a ref's, garbage), which
	// the files read could not repair.
	LeftOfSessionsRead int      `json:"left_of_sessions_read"`
	LeftOfOthers       int      `json:"left_of_others"`
	OtherSessions      []string `json:"other_sessions"`
}

// rereadNamed lists at most 5 session ids, then how many more.
func rereadNamed(ids []string) string {
	const most = 5
	if len(ids) <= most {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:most], ", "), len(ids)-most)
}

// runReread is `rook import FORMAT --reread`: a repair from the
// transcripts, then the store's verify (its objects, then the objects its
// sessions name), whose unreadable and missing objects are what the
// repair could not put back.
func runReread(e *Env, format string, paths []string) error {
	agentDir, err := importAgentDir(e, format, paths)
	if err != nil {
		return err
	}
	var out rereadJSON
	var othersHow string // how the other sessions' objects are put back
	var oursNamed []string
	err = e.write(func(r *agent.Rook) error {
		p := newProgress(e.Stderr, "import "+format+" --reread")
		// Interrupted, rook exits at once: the scratch store in $TMPDIR,
		// as big as what the files make, is removed first.
		rep, rerr := r.Reread(agent.ImportOptions{Format: format, Paths: paths, AgentDir: agentDir, Progress: p.update},
			func(dir string) func() { return onInterrupt(func() { os.RemoveAll(dir) }) })
		p.done()
		out.RereadReport = rep
		if rerr != nil {
			return rerr
		}
		p = newProgress(e.Stderr, "verify")
		vrep, verr := r.Store.Verify(p.update)
		p.done()
		if verr != nil {
			return fmt.Errorf("the objects were put back, but the store's verify could not run: %w", verr)
		}
		out.Unreadable, out.DamagedRegions, out.DeadRecords = vrep.Unreadable, vrep.DamagedRegions, vrep.DeadRecords
		out.Problems = vrep.Problems
		p = newProgress(e.Stderr, "verify: sessions")
		p.unit = "sessions"
		refs, ferr := r.VerifyReferences(p.update)
		p.done()
		if ferr != nil {
			return fmt.Errorf("the objects were put back, but the objects the sessions name could not be checked: %w", ferr)
		}
		out.MissingProblems = []agent.ReferenceProblem{}
		for _, pr := range refs.Problems {
			if pr.ID != "" {
				out.MissingProblems = append(out.MissingProblems, pr)
			}
		}
		out.Missing = len(out.MissingProblems)
		if out.Missing > 0 {
			// Records of a lost dictionary may hold those missing
			// (VerifyCmd): they wait for it, not dead space.
			vrep.NamedObjectsMissing()
			out.DeadRecords, out.Problems = vrep.DeadRecords, vrep.Problems
		}
		// Whose each object left is: only those of the sessions of the
		// files read say their files changed; the others' files were
		// not read.
		read := map[string]bool{}
		for _, id := range rep.Sessions {
			read[id] = true
		}
		out.OtherSessions = []string{}
		seenOther, seenOurs := map[string]bool{}, map[string]bool{}
		var otherIDs []cas.Key
		left := func(session string) {
			switch {
			case session != "" && read[session]:
				out.LeftOfSessionsRead++
				if !seenOurs[session] {
					seenOurs[session] = true
					oursNamed = append(oursNamed, session)
				}
			default:
				out.LeftOfOthers++
				if session != "" && !seenOther[session] {
					seenOther[session] = true
					out.OtherSessions = append(out.OtherSessions, session)
				}
			}
		}
		for _, pr := range vrep.Problems {
			if pr.ID == nil {
				continue
			}
			s := refs.NamingSession(*pr.ID)
			if s == "" || !read[s] {
				otherIDs = append(otherIDs, *pr.ID)
			}
			left(s)
		}
		for _, pr := range out.MissingProblems {
			left(pr.Session)
		}
		if out.LeftOfOthers > 0 {
			var hows []string
			for _, f := range r.ImportFormats(refs, otherIDs) {
				hows = append(hows, fmt.Sprintf("`rook import %s --reread PATH...` with their own transcripts", f))
			}
			for _, pr := range out.MissingProblems {
				if pr.Session == "" || read[pr.Session] {
					continue
				}
				if id, err := eventlog.ParseID(pr.Session); err == nil {
					if m, err := r.Log.ReadMeta(id); err == nil {
						if src := r.ImportedFrom(m); src != nil {
							h := fmt.Sprintf("`rook import %s --reread PATH...` with their own transcripts", src.Format)
							if !slices.Contains(hows, h) {
								hows = append(hows, h)
							}
						}
					}
				}
			}
			slices.Sort(hows)
			othersHow = "put them back from a backup of the store"
			if len(hows) > 0 {
				othersHow = strings.Join(hows, ", or ") + " puts them back (else a backup of the store)"
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if out.Problems == nil {
		out.Problems = []cas.Problem{}
	}
	if e.JSON {
		// A failed write is Main's to tell, after the verdict below.
		if err := unprinted(e.printJSON(out)); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(e.Stdout, "%s: %d file(s) read again: %d object(s) restored of the %d they make; nothing imported\n",
			format, out.Files, out.Restored, out.Objects)
		for _, f := range out.Failed {
			fmt.Fprintf(e.Stdout, "  failed  %s: %s\n", terminalLine(f.Path), terminalLine(f.Note))
		}
		switch {
		case len(out.Problems) == 0 && out.Missing == 0:
			fmt.Fprintln(e.Stdout, "the store verifies: every object reads back")
		case len(out.Problems) == out.DamagedRegions+out.DeadRecords && out.Unreadable == 0 && out.Missing == 0:
			// Segments are never rewritten in place: the damaged bytes
			// stay, holding nothing any object needs; so do records of
			// a dictionary that cannot be loaded, whose objects were
			// put again.
			what := fmt.Sprintf("the %d damaged segment region(s) hold", out.DamagedRegions)
			switch {
			case out.DamagedRegions == 0:
				what = fmt.Sprintf("the %d record(s) of a dictionary that cannot be loaded hold", out.DeadRecords)
			case out.DeadRecords > 0:
				what = fmt.Sprintf("the %d damaged segment region(s) and %d record(s) of a dictionary that cannot be loaded hold", out.DamagedRegions, out.DeadRecords)
			}
			fmt.Fprintf(e.Stdout, "every object reads back; %s no object any more: %s\n", what, repackMovesDamaged(e.Home))
		default:
			fmt.Fprintln(e.Stdout, "the store's verify still finds:")
			for _, pr := range out.Problems {
				fmt.Fprintln(e.Stdout, "  "+pr.String())
			}
			for _, pr := range out.MissingProblems {
				fmt.Fprintln(e.Stdout, "  "+terminalLine(pr.String()))
			}
		}
	}
	switch {
	case out.LeftOfSessionsRead+out.LeftOfOthers > 0:
		var parts []string
		if n := out.LeftOfSessionsRead; n > 0 {
			parts = append(parts, fmt.Sprintf("%d of the sessions of the files read (%s): those files make other objects now (a file changed since it was imported, not only grown; or one imported in several steps, as it grew, by a rook that did not record yet where each import stopped): `rook session rm` those sessions and import the files again", n, rereadNamed(oursNamed)))
		}
		if n := out.LeftOfOthers; n > 0 {
			whose := "of no session read"
			if len(out.OtherSessions) > 0 {
				whose = fmt.Sprintf("of other sessions, whose files were not read (%s)", rereadNamed(out.OtherSessions))
			}
			parts = append(parts, fmt.Sprintf("%d %s: %s", n, whose, othersHow))
		}
		return &exitError{code: ExitFailure, msg: fmt.Sprintf("%d object(s) still cannot be read back or are missing: %s; `rook store verify` lists them and says what to do", out.LeftOfSessionsRead+out.LeftOfOthers, strings.Join(parts, "; "))}
	case len(out.Problems) > out.DamagedRegions+out.DeadRecords:
		return &exitError{code: ExitFailure, msg: fmt.Sprintf("every object reads back, but the store's verify finds %d other problem(s): `rook store verify` says what to do", len(out.Problems))}
	case len(out.Failed) > 0:
		return &exitError{code: ExitFailure, msg: fmt.Sprintf("%d of %d file(s) could not be read; the store verifies", len(out.Failed), out.Files)}
	}
	return nil
}
