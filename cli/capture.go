package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/rookhq/rook/agent"
	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
)

// limitFlags raise a capture's bounds.
type limitFlags struct {
	MaxFiles     int   `name:"max-files" help:"Stop past N files (default: ${default})." default:"5000" placeholder:"N"`
	MaxBytes     int64 `name:"max-bytes" help:"Stop past N bytes in all (default: ${default}, 256 MiB)." default:"268435456" placeholder:"N"`
	MaxFileBytes int64 `name:"max-file-bytes" help:"Stop at a file over N bytes (default: ${default}, 16 MiB)." default:"16777216" placeholder:"N"`
}

func (l limitFlags) limits() (agent.Limits, error) {
	if l.MaxFiles < 1 || l.MaxBytes < 1 || l.MaxFileBytes < 1 {
		return agent.Limits{}, usageErr("--max-files, --max-bytes and --max-file-bytes must be 1 or more")
	}
	return agent.Limits{MaxFiles: l.MaxFiles, MaxBytes: l.MaxBytes, MaxFileBytes: l.MaxFileBytes}, nil
}

// SessionCaptureCmd is `rook session capture`.
type SessionCaptureCmd struct {
	ID    string   `arg:"" help:"Session id, unique prefix, or last."`
	Paths []string `arg:"" help:"Paths a tool is about to write, move or delete (relative to the current directory, or -C, when it is in the session's workspace; else to the workspace)."`
	Label string   `help:"What is about to happen (a tool name)."`
	limitFlags
}

func (c *SessionCaptureCmd) Run(e *Env) error {
	lim, err := c.limits()
	if err != nil {
		return err
	}
	if slices.Contains(c.Paths, "") { // a script's unset variable
		return usageErr("an empty path: name files or directories inside the workspace")
	}
	var id eventlog.ID
	var seq uint64
	var m *agent.Manifest
	err = e.writeSession(c.ID, func(r *agent.Rook, sid eventlog.ID) (err error) {
		id = sid
		paths := c.Paths
		if meta, err := r.Log.ReadMeta(id); err == nil {
			// Run in a directory of the workspace, a relative path
			// starts there, as for any command line tool.
			dir, err := e.workDir()
			if err != nil && anyRelative(paths) {
				// Taken from the workspace's top, it may name another file.
				return err
			}
			paths = agent.PathsFrom(meta.Workspace, dir, paths)
		}
		seq, m, err = r.CaptureSession(id, paths, c.Label, lim)
		return err
	})
	if err != nil {
		return err
	}
	if e.JSON {
		absent := m.Absent
		if absent == nil {
			absent = []string{}
		}
		dirs := m.Dirs // captured whole: what is added to them later is added
		if dirs == nil {
			dirs = []string{}
		}
		skipped := m.Skipped
		if skipped == nil {
			skipped = []string{}
		}
		return e.printJSON(map[string]any{"session": id, "seq": seq, "files": len(m.Files), "absent": absent, "dirs": dirs, "bytes": m.TotalBytes, "skipped": skipped})
	}
	for _, s := range m.Skipped {
		// As checkpoint create says them: a named pipe (socket,
		// device) has nothing to capture.
		fmt.Fprintf(e.Stderr, "rook: skipped %s\n", terminalLine(s))
	}
	fmt.Fprintf(e.Stdout, "captured %d file(s), %s, %d absent, as checkpoint #%d of %s\n", len(m.Files), formatBytes(m.TotalBytes), len(m.Absent), seq, id)
	return nil
}

// anyRelative is whether a path of paths is relative.
func anyRelative(paths []string) bool {
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			return true
		}
	}
	return false
}

// chosenWorkspace is the directory -C names, when it was given: a
// session's workspace moved there, for diff and rewind. "" without -C.
func (e *Env) chosenWorkspace() string {
	if !e.DirGiven {
		return ""
	}
	return e.Cwd
}

// DiffCmd is `rook session diff`.
type DiffCmd struct {
	ID   string `arg:"" help:"Session id, unique prefix, or last."`
	Stat bool   `help:"Names and line counts only."`
}

func (c *DiffCmd) Run(e *Env) error {
	r, id, err := e.readSession(c.ID)
	if err != nil {
		return err
	}
	defer r.Close()
	var source *eventlog.Source // what to say of a session with no captures
	if m, err := r.Log.ReadMeta(id); err == nil {
		source = r.ImportedFrom(m) // a fork of an imported session too
	}
	if e.JSON || c.Stat {
		d, err := r.DiffWith(id, nil, false, agent.DiffOptions{Workspace: e.chosenWorkspace()})
		if err != nil {
			return err
		}
		if e.JSON {
			if d.Patches != nil && len(d.Files) > 0 {
				// Where the changes come from, as the text says it.
				return e.printJSON(struct {
					agent.SessionDiff
					Note string `json:"note"`
				}{d, fromRollout(d)})
			}
			if len(d.Files) == 0 {
				// Why there is nothing, as the text says it.
				return e.printJSON(struct {
					agent.SessionDiff
					Note string `json:"note"`
				}{d, nothingChanged(d, source)})
			}
			return e.printJSON(d)
		}
		printUnreadable(e, d)
		printRolloutNotes(e, d)
		printNotes(e, d.Notes)
		c.printStat(e, d, source)
		return nil
	}
	// At a terminal the patch is coloured, and the files' text in it
	// shown without control characters (agent.patchText); piped, it is
	// the bytes git apply takes.
	var out io.Writer = e.Stdout
	var shown *replacementSeen
	if isTerminal(e.Stdout) {
		shown = &replacementSeen{w: e.Stdout}
		out = shown
	}
	d, err := r.DiffWith(id, out, shown != nil, agent.DiffOptions{Workspace: e.chosenWorkspace()})
	if err != nil {
		return err
	}
	if shown != nil && shown.seen {
		// Said last, once, as entry says it.
		defer fmt.Fprintln(e.Stderr, "rook: note: at a terminal, the patch shows control characters, bidi controls and bytes that are not UTF-8 in the files as U+FFFD; piped (| cat -v), diff writes their bytes as they are")
	}
	printUnreadable(e, d)
	printRolloutNotes(e, d)
	printNotes(e, d.Notes)
	if len(d.Files) == 0 {
		// (It may name subagents by their agentIds: the transcript's.)
		fmt.Fprintln(e.Stdout, terminalLine(nothingChanged(d, source)))
		return nil
	}
	// A patch cannot hold a named pipe (or socket, device): the paths
	// left out of it are named beside it.
	for _, f := range d.Files {
		if f.Special != "" {
			fmt.Fprintf(e.Stderr, "rook: note: %s is a %s now, not a regular file: left out of the patch\n", terminalLine(f.Path), f.Special)
		}
	}
	for _, f := range d.Files {
		switch {
		case f.Outside && d.Root == "":
			fmt.Fprintf(e.Stderr, "rook: note: %s: the rollout names no workspace, so the patch names it %s, which git apply refuses\n",
				terminalLine(f.Path), terminalLine(f.PatchPath))
		case f.Outside:
			fmt.Fprintf(e.Stderr, "rook: note: %s is outside the workspace %s: the patch names it %s, from the workspace, which git apply refuses\n",
				terminalLine(f.Path), terminalLine(d.Root), terminalLine(f.PatchPath))
		}
	}
	fmt.Fprintf(e.Stderr, "%d file(s) changed, +%d -%d\n", len(d.Files), d.Added, d.Removed)
	if d.FromTranscript > 0 {
		fmt.Fprintln(e.Stderr, fromTranscript(d.FromTranscript, "compared with"))
	}
	if d.Patches != nil {
		fmt.Fprintln(e.Stderr, fromRollout(d))
	}
	return nil
}

// replacementSeen writes through to w, and sees whether what it wrote
// holds a U+FFFD: one there may be a character the patch shows replaced.
// (Diff writes whole lines at a time, so none is cut between two writes.)
// One a file held already is not told from one put in its place: the
// note it leads to holds for both.
type replacementSeen struct {
	w    io.Writer
	seen bool
}

func (r *replacementSeen) Write(p []byte) (int, error) {
	if !r.seen {
		r.seen = bytes.Contains(p, []byte("\uFFFD"))
	}
	return r.w.Write(p)
}

// printRolloutNotes says, on stderr, which of an imported Codex session's
// patches were left out of its diff, and why.
func printRolloutNotes(e *Env, d agent.SessionDiff) {
	if d.Patches == nil {
		return
	}
	printNotes(e, d.Patches.Notes)
}

// printNotes writes notes on stderr, one a line.
func printNotes(e *Env, notes []string) {
	for _, n := range notes {
		fmt.Fprintf(e.Stderr, "rook: note: %s\n", terminalLine(n))
	}
}

// fromRollout says where an imported Codex session's diff comes from, and
// how it differs from one of captured files.
func fromRollout(d agent.SessionDiff) string {
	p := d.Patches
	outside := "a file outside the workspace is named from it (../), which git apply refuses: it writes nothing outside the directory it runs in"
	if d.Root == "" {
		outside = "the rollout names no workspace, so a file it names by an absolute path (or by one that climbs, ../) is named from .. in the patch, which git apply refuses: it writes nothing outside the directory it runs in"
	}
	s := fmt.Sprintf("from the %d patch(es) the Codex rollout says applied", p.Applied)
	if p.FromSubagents > 0 {
		// Its subagents' patches are its changes too (the notes say which
		// files they changed).
		s = fmt.Sprintf("from the %d patch(es) the Codex rollouts of the session and its subagents say applied (%d of them its subagents')", p.Applied, p.FromSubagents)
	}
	if p.Failed+p.Unconfirmed+p.Unread > 0 {
		s += " (" + leftOut(p) + ": left out)"
	}
	s += ": Codex keeps no copies of files, so this is what its patches changed, not the files compared with the disk"
	// Each kind of section the diff holds, said once.
	for _, k := range []struct {
		is   func(agent.FileChange) bool
		note string
	}{
		{func(f agent.FileChange) bool { return f.NoLineNumbers }, "a hunk headed -?,N +?,N has no line numbers (the patch places it by its context lines), so this is no patch git apply takes"},
		{func(f agent.FileChange) bool { return f.NoBody }, "a file shown with no body is one whose content the rollout does not hold (a deleted file's before the session, or a moved file's): --stat says why"},
		{func(f agent.FileChange) bool { return f.Overwritten }, "a hunk headed -?,? +1,N is a patch's Add File over a file that existed, which Codex writes whole: the file after it, over content the rollout does not hold"},
		{func(f agent.FileChange) bool { return f.Outside }, outside},
		{func(f agent.FileChange) bool { return f.InTurn }, "a file changed by several patches shows each one's hunks in turn, each against the file as the one before left it, so git apply refuses its section if it is new, and may if not"},
	} {
		if slices.ContainsFunc(d.Files, k.is) {
			s += "; " + k.note
		}
	}
	return s
}

// leftOut counts the patches of a Codex rollout left out of its diff.
func leftOut(p *agent.RolloutPatches) string {
	s := fmt.Sprintf("%d failed, %d with no outcome in the rollout", p.Failed, p.Unconfirmed)
	if p.Unread > 0 {
		s += fmt.Sprintf(", %d applied but not read", p.Unread)
	}
	return s
}

// printUnreadable says, on stderr, which directories the diff could not
// look in: the files added there are missing from it.
func printUnreadable(e *Env, d agent.SessionDiff) {
	for _, u := range d.Uncompared {
		fmt.Fprintf(e.Stderr, "rook: %s not compared: %s\n", terminalLine(u.Path), terminalLine(u.Error))
	}
	for _, u := range d.Unreadable {
		if u.TooLong {
			// (No permission is missing: the path is too long.)
			fmt.Fprintf(e.Stderr, "rook: cannot reach %s: %s: files added in it are not shown\n", terminalLine(agent.ShortPath(u.Path)), terminalLine(u.Error))
			continue
		}
		fmt.Fprintf(e.Stderr, "rook: cannot read %s (%s): files added in it are not shown\n", terminalLine(u.Path), terminalLine(u.Error))
	}
	if n := len(d.Unrecordable); n > 0 {
		fmt.Fprintf(e.Stderr, "rook: %d file(s) added with names rook cannot record (a backslash, or bytes that are not UTF-8), not shown: %s\n", n, strings.Join(d.Unrecordable, ", "))
	}
}

// fromTranscript says how many files' states came from the transcript's
// edit results rather than from captures (an imported Claude Code session
// without file-history backups for them).
func fromTranscript(n int, what string) string {
	return fmt.Sprintf("%d file(s) %s what the transcript's edit results say they were before the agent first changed them (no file-history backups for them)", n, what)
}

// nothingChanged says why a diff is empty; source is set for an imported
// session, whose captures can only come from its agent's own backups.
func nothingChanged(d agent.SessionDiff, source *eventlog.Source) string {
	if n, u, o := len(d.MissingSubagents), len(d.UnreadSubagents), len(d.UnreadEvents); n+u+o > 0 {
		// What it set them to do may be all it changed: that, not
		// the lack of backups, is why there is nothing to show. So too
		// its own edit results that do not read.
		what := "this session changed nothing on disk that rook can compare"
		if d.Captures == 0 && d.FromTranscript == 0 {
			what = "this session changed no file itself that rook can compare"
		}
		var why []string
		if n > 0 {
			why = append(why, fmt.Sprintf("what its %d subagent(s) %s changed is not known: no imported session holds them (the notes say how to import them)", n, strings.Join(d.MissingSubagents, ", ")))
		}
		if u > 0 {
			why = append(why, fmt.Sprintf("what its %d subagent session(s) %s changed is not known: they cannot be read (the notes say why, and what to do)", u, strings.Join(d.UnreadSubagents, ", ")))
		}
		if o > 0 {
			seqs := make([]string, 0, min(o, 10))
			for _, s := range d.UnreadEvents[:min(o, 10)] {
				seqs = append(seqs, fmt.Sprintf("#%d", s))
			}
			named := strings.Join(seqs, ", ")
			if o > 10 {
				named += fmt.Sprintf(" and %d more", o-10)
			}
			why = append(why, fmt.Sprintf("what %d of its own events (%s) changed is not known: they cannot be read (the notes say why, and what to do)", o, named))
		}
		return what + ", and " + strings.Join(why, "; and ")
	}
	back := ""
	if d.Patches != nil && d.Unchanged > 0 {
		// (files deleted, then added back as they were)
		back = fmt.Sprintf("; the %d file(s) they deleted they wrote back as they were", d.Unchanged)
	}
	switch {
	case d.Patches != nil && d.Patches.Applied > 0 && len(d.Patches.Notes) > 0:
		return "this session's applied patches leave nothing to show: the files they added they deleted, or what they changed is left out, as the notes say" + back
	case d.Patches != nil && d.Patches.Applied > 0:
		return "this session's patches changed nothing in the end (the files they added they deleted" + back + ")"
	case d.Patches != nil && d.Patches.Failed+d.Patches.Unconfirmed+d.Patches.Unread == 0:
		return "this session's transcript was imported from Codex, whose transcripts keep no copies of files, and its rollout holds no apply_patch call, so it has nothing to compare"
	case d.Patches != nil:
		return fmt.Sprintf("this session's Codex rollout holds no patch that applied and reads (%s), so it has nothing to compare: Codex keeps no copies of files, and its apply_patch calls are what rook reads", leftOut(d.Patches))
	case (d.Captures > 0 || d.FromTranscript > 0) && (len(d.Unreadable) > 0 || len(d.Unrecordable) > 0 || len(d.Uncompared) > 0):
		return "this session changed nothing else on disk that rook can compare"
	case d.Captures > 0 || d.FromTranscript > 0:
		return "this session changed nothing on disk"
	case d.Captures == 0 && d.FromTranscript == 0 && d.RewindCaptures > 0 && len(d.Uncompared) == 0:
		// A rewind's fork: it holds its rewind's capture of the disk
		// before it, the state its undo puts back, not what the files
		// were before the session (diff and a rewind to 0 agree).
		return "this session holds only its rewind's capture of the disk before that rewind (what its undo puts back, not the files before the session) and has captured nothing since, so it has nothing to compare"
	case source != nil:
		// (A file backed up outside the workspace is said on its own
		// line, printUnreadable: its state before is known, not compared.)
		notKnown := slices.DeleteFunc(slices.Clone(d.Uncompared), func(u agent.UncomparedFile) bool { return u.Outside })
		return noFileBackups(source, "nothing to compare", notKnown)
	}
	return "this session captured no files, so it has nothing to compare: captures come from `rook session capture`"
}

// noFileBackups says why an imported session has no copies of files, and
// so what it has not (diff: nothing to compare; rewind: no files to put
// back).
func noFileBackups(source *eventlog.Source, so string, notKnown []agent.UncomparedFile) string {
	if source.Format == agent.FormatClaudeCode {
		results := "of which it has none that succeeded on a file in its workspace"
		if len(notKnown) > 0 {
			// Edits there were (a subagent's, say), none saying what
			// the file was before.
			results = "none of which says what a file was before it: " + agent.NotKnownBefore(notKnown)
		}
		return "this session's transcript was imported from Claude Code without file backups, so it has " + so + ": they come from Claude Code's file-history directory (~/.claude/file-history/<session>, beside the projects directory the transcript was imported from) when it kept them (taken with the lines that name them, or by the next import when put there later), or from the transcript's Edit and Write results, " + results
	}
	return fmt.Sprintf("this session's transcript was imported from %s, whose transcripts keep no copies of files, so it has %s", agent.FormatName(source.Format), so)
}

func (c *DiffCmd) printStat(e *Env, d agent.SessionDiff, source *eventlog.Source) {
	if len(d.Files) == 0 {
		fmt.Fprintln(e.Stdout, terminalLine(nothingChanged(d, source)))
		return
	}
	sigil := map[string]string{"added": "+", "modified": "~", "removed": "-"}
	for _, f := range d.Files {
		counts := fmt.Sprintf("+%d -%d", f.Added, f.Removed)
		switch {
		case f.NoBody && f.Added+f.Removed > 0:
			// A type change whose file has no body, its link's target
			// counted.
			counts += "  (" + terminalLine(f.Reason) + ")"
		case f.NoBody:
			counts = "(" + terminalLine(f.Reason) + ")" // (it may name a path)
		}
		if f.MovedFrom != "" {
			counts += "  (moved from " + terminalLine(f.MovedFrom) + ")"
		}
		switch {
		case f.Outside && d.Root == "":
			// No workspace known: whether the file is in it is not known
			// either; what is, is the name the patch gives it.
			counts += "  (no workspace known: the patch names it " + terminalLine(f.PatchPath) + ")"
		case f.Outside:
			counts += "  (outside the workspace)"
		}
		if f.Overwritten {
			counts += "  (written whole over content not in the rollout)"
		}
		mode := ""
		if f.Status == "modified" && f.NewMode != "" && f.OldMode != f.NewMode {
			mode = fmt.Sprintf("  mode %s → %s", f.OldMode, f.NewMode)
		}
		// A name is the user's: a line break or an escape sequence in it
		// must not make two lines of one, nor reach the terminal, and two
		// names must not read alike ("a b" and "a<TAB>b"): quoted as the
		// patch's headers and git diff --stat quote it (a tab as \t, a
		// byte not ASCII as octal), which leaves no control character.
		fmt.Fprintf(e.Stdout, "%s %s  %s%s\n", sigil[f.Status], agent.QuotePath(f.Path), counts, mode)
	}
	fmt.Fprintf(e.Stdout, "%d file(s) changed, +%d -%d\n", len(d.Files), d.Added, d.Removed)
	if d.FromTranscript > 0 {
		fmt.Fprintln(e.Stdout, fromTranscript(d.FromTranscript, "compared with"))
	}
	if d.Patches != nil {
		fmt.Fprintln(e.Stdout, fromRollout(d))
	}
}

// RewindCmd is `rook session rewind`.
type RewindCmd struct {
	ID        string   `arg:"" help:"Session id, unique prefix, or last."`
	To        uint64   `required:"" placeholder:"N" help:"Keep events [0, N); put files back as they were before event N."`
	KeepFiles bool     `name:"keep-files" help:"Rewind the conversation only; touch no file."`
	Absent    []string `name:"absent" sep:"none" empty:"own" placeholder:"PATH" help:"Of an imported Codex session: PATH (as the refusal names it: relative to the session's workspace) did not exist at N, so remove it. Only where the refusal says the rollout leaves that open. Repeatable."`
}

func (c *RewindCmd) Run(e *Env) error {
	var rep agent.RewindReport
	// A Ctrl-C (or SIGTERM) ends rook at once, as a crash would (the
	// temporary copy of the file being written removed). Once the files
	// are being written, the stop says so, with the command that undoes
	// the rewind, as a rewind stopped part way by an error does (the next
	// rewind also names an interrupted one).
	var mu sync.Mutex
	undo, fork := "", ""
	var beforeSeq *uint64
	stopped := onInterruptStop(func(sig os.Signal, again bool) string {
		mu.Lock()
		defer mu.Unlock()
		if undo == "" {
			return fmt.Sprintf("%v: stopped before the rewind wrote any file", sig)
		}
		return fmt.Sprintf("%v: stopped part way through the rewind: some files are put back, others not: `%s` puts back what was there", sig, undo)
	})
	defer stopped()
	// Under --json, the fork, its capture and the undo as fields too, as
	// a rewind stopped part way by an error gives them.
	defer onInterruptJSON(func(je *jsonError) {
		mu.Lock()
		defer mu.Unlock()
		je.Fork, je.BeforeSeq, je.Undo = fork, beforeSeq, undo
	})()
	err := e.writeSession(c.ID, func(r *agent.Rook, id eventlog.ID) (err error) {
		rep, err = r.RewindWith(id, c.To, agent.RewindOptions{KeepFiles: c.KeepFiles, Absent: c.Absent, Workspace: e.chosenWorkspace(), Writing: func(f eventlog.ID, seq uint64, u string) {
			mu.Lock()
			defer mu.Unlock()
			fork, beforeSeq, undo = f.String(), &seq, u
		}})
		return err
	})
	stopped()
	if nb := (*agent.NoFileBackupsError)(nil); errors.As(err, &nb) {
		// Said as diff says it: the files could not be put back because
		// the transcript kept no copies of them.
		return fmt.Errorf("%s; nothing changed (--keep-files rewinds the conversation only)", noFileBackups(nb.Source, "no files to put back", nb.NotKnown))
	}
	if err != nil && rep.Undo != "" {
		// Stopped part way: the fork and the undo as fields too.
		return &stoppedPartWay{err: err, fork: rep.Fork.String(), beforeSeq: rep.BeforeSeq, undo: rep.Undo, done: rep}
	}
	if err != nil {
		return err
	}
	if e.JSON {
		return e.printJSON(rep)
	}
	w := e.Stdout
	fmt.Fprintf(w, "rewound to session %s\n", rep.Fork)
	fmt.Fprintf(w, "  %d event(s) kept, parent %s left intact\n", rep.EventsKept, rep.Parent)
	if c.KeepFiles {
		fmt.Fprintln(w, "  files left as they are (--keep-files)")
		return nil
	}
	fmt.Fprintf(w, "  %d checkpoint(s) applied: %d file(s) restored, %d removed", rep.CheckpointsApplied, rep.FilesRestored, rep.FilesRemoved)
	if rep.DirsMade > 0 {
		fmt.Fprintf(w, ", %d director(ies) made", rep.DirsMade)
	}
	if rep.DirsRemoved > 0 {
		fmt.Fprintf(w, ", %d director(ies) removed", rep.DirsRemoved)
	}
	fmt.Fprintln(w)
	if rep.FromTranscript > 0 {
		var left []agent.TranscriptRewound
		for _, f := range rep.TranscriptFiles {
			if notPutBack(f.Disk) {
				left = append(left, f)
			}
		}
		if len(left) == 0 {
			fmt.Fprintf(w, "  %s\n", fromTranscript(rep.FromTranscript, "put back as"))
		} else {
			// One already as it was then, or left: not said to be put
			// back.
			fmt.Fprintf(w, "  the transcript's edit results say what %d file(s) were before the agent first changed them (no file-history backups for them); %d put back, and not:\n", rep.FromTranscript, rep.FromTranscript-len(left))
			for _, f := range left {
				fmt.Fprintf(w, "    %s: %s\n", terminalLine(f.Path), transcriptHow(f))
			}
		}
	}
	if rep.FromRollout > 0 {
		put := rep.FromRollout
		for _, f := range rep.RolloutFiles {
			if notPutBack(f.Disk) {
				put--
			}
		}
		if put == rep.FromRollout {
			fmt.Fprintf(w, "  %d file(s) put back as the Codex rollout's applied patches say they were then (Codex keeps no copies of files)\n", rep.FromRollout)
		} else {
			// One already as it was then (as the patches say, or
			// nothing there), or left: not said to be put back.
			fmt.Fprintf(w, "  the Codex rollout's applied patches say what %d file(s) held then (Codex keeps no copies of files); %d put back:\n", rep.FromRollout, put)
		}
		for _, f := range rep.RolloutFiles {
			fmt.Fprintf(w, "    %s: %s\n", terminalLine(f.Path), rolloutHow(f))
		}
	}
	printNotes(e, rep.Notes)
	if n := len(rep.DirsKept); n > 0 {
		fmt.Fprintf(w, "  left %d director(ies) made since holding what it does not remove (a named pipe, or a name a capture cannot record, say): %s\n", n, terminalLine(strings.Join(rep.DirsKept, ", ")))
	}
	for _, u := range rep.NotRestored {
		fmt.Fprintf(w, "  left %s as it is: %s\n", terminalLine(u.Path), terminalLine(u.Error))
	}
	if n := len(rep.Unrecordable); n > 0 {
		fmt.Fprintf(w, "  left %d file(s) added with names rook cannot record (a backslash, or bytes that are not UTF-8): %s\n", n, strings.Join(rep.Unrecordable, ", "))
	}
	if rep.Undo != "" {
		fmt.Fprintf(w, "  what was on disk before is captured on the new session; to put it back:\n    %s\n", rep.Undo)
	} else if len(rep.Paths) > 0 && !rep.DiskChanged {
		// It had files to put back, and each was as it was then, or
		// left.
		fmt.Fprintf(w, "  %s\n", unchangedLine(rep))
	}
	for _, i := range rep.Interrupted {
		fmt.Fprintf(w, "  an earlier rewind to %d (session %s) stopped before it finished; what was on disk before it:\n    %s\n", i.To, i.Fork, i.Undo)
	}
	return nil
}

// unchangedLine says why a rewind that changed nothing on disk
// (rep.DiskChanged false) leaves nothing to undo: every file was already
// as it was then; or, when it left some as they are (a directory holding
// what it does not remove where a file was, a path reached through a
// link it removed, a file whose state then is not known, one added with
// a name rook cannot record: each said above, with why), those, and the
// rest already as they were.
func unchangedLine(rep agent.RewindReport) string {
	const kept = "a directory holding what the rewind does not remove"
	var left []string
	seen := map[string]bool{}
	add := func(p, why string) {
		if !seen[p] {
			seen[p] = true
			left = append(left, fmt.Sprintf("%s as it is (%s, said above)", terminalLine(p), why))
		}
	}
	disk := func(p, d string) {
		switch d {
		case agent.DiskDirKept:
			add(p, kept)
		case agent.DiskUnderLink:
			add(p, "reached through a link the rewind removed")
		}
	}
	for _, f := range rep.TranscriptFiles {
		disk(f.Path, f.Disk)
	}
	for _, f := range rep.RolloutFiles {
		disk(f.Path, f.Disk)
	}
	for _, d := range rep.DirsKept {
		add(d, kept)
	}
	for _, u := range rep.NotRestored {
		if u.Outside {
			add(u.Path, "outside the workspace")
			continue
		}
		add(u.Path, "its state then not known")
	}
	for _, u := range rep.Unrecordable {
		add(u, "a name rook cannot record")
	}
	if len(left) == 0 {
		return "no file changed: every file was already as it was then, so there is nothing to undo"
	}
	rest := ""
	if slices.ContainsFunc(rep.Paths, func(p string) bool { return !seen[p] }) {
		rest = ", and every other file was already as it was then"
	}
	return fmt.Sprintf("no file changed: it left %s%s, so there is nothing to undo", strings.Join(left, ", "), rest)
}

// transcriptHow says why a rewind did not put back a file whose state
// the transcript's edit results say (agent.TranscriptRewound).
func transcriptHow(f agent.TranscriptRewound) string {
	switch f.Disk {
	case agent.DiskAsThen:
		return "already as they say it was then: not written"
	case agent.DiskNotThere:
		return absentHow(f.Disk, "the agent created it")
	}
	if how := absentHow(f.Disk, "the agent created a file there"); how != "" {
		return how
	}
	return f.Disk
}

// notPutBack says whether what a rewind found at a file (the Disk of an
// agent.TranscriptRewound or agent.CodexRewound) says it did not put it
// back: already as it was then, or left.
func notPutBack(disk string) bool {
	switch disk {
	case agent.DiskAsThen, agent.DiskNotThere, agent.DiskDirKept, agent.DiskUnderLink:
		return true
	}
	return false
}

// absentHow says what a rewind did with a path its state says was absent
// (why it was) where it removed nothing there; "" for another disk.
func absentHow(disk, why string) string {
	switch disk {
	case agent.DiskNotThere:
		return "not there, and nothing removed: " + why
	case agent.DiskDirKept:
		return "left: a directory is there, holding what the rewind does not remove (" + why + ")"
	case agent.DiskUnderLink:
		return "left as it is: a link above it led there, and the rewind removed the link, not what it leads to (" + why + ")"
	}
	return ""
}

// rolloutHow says how a rewind found what a file held (agent.CodexRewound).
func rolloutHow(f agent.CodexRewound) string {
	if f.Disk == agent.DiskAsThen {
		// How it was found matters less than that it was not written
		// (--json says both).
		return "already as the patches say it was then: not written"
	}
	switch f.How {
	case "replayed":
		return "as the patches before the point left it (the session wrote it whole before them)"
	case "deleted":
		return "as the patch after the point that deleted it says it was"
	case "absent", "said-absent":
		why := "the session had deleted it, or moved it away, before the point"
		if f.How == "said-absent" {
			why = "--absent says it did not exist then"
		}
		if how := absentHow(f.Disk, why); how != "" {
			return how
		}
		if f.Disk == agent.DiskDirRemoved {
			return "removed, a directory, once the files the rewind removed in it were gone: " + why
		}
		return "removed: " + why
	case "reversed":
		if f.From != f.Path {
			return "the patches after the point undone on " + terminalLine(f.From) + " as it is now (they moved it there)"
		}
		return "the patches after the point undone on it as it is now"
	}
	return f.How
}

// CheckpointCmd groups the named-checkpoint commands.
type CheckpointCmd struct {
	Create  CheckpointCreateCmd  `cmd:"" help:"Capture the workspace (or --path) under a name."`
	Ls      CheckpointLsCmd      `cmd:"" help:"List named checkpoints."`
	Restore CheckpointRestoreCmd `cmd:"" help:"Write a checkpoint's files back (into its workspace, or --to DIR)."`
	Rm      CheckpointRmCmd      `cmd:"" help:"Delete named checkpoints, with their history (gc then reclaims what nothing else keeps)."`
}

// CheckpointRmCmd is `rook checkpoint rm`.
type CheckpointRmCmd struct {
	Names []string `arg:"" name:"name" help:"Checkpoint names (rook checkpoint ls lists them)."`
}

func (c *CheckpointRmCmd) Run(e *Env) error {
	var refs []agent.CheckpointRef
	err := e.write(func(r *agent.Rook) (err error) {
		refs, err = r.RemoveCheckpoints(c.Names)
		return err
	})
	if err != nil && len(refs) == 0 {
		return err
	}
	// A removal that failed part way has removed the ones before it:
	// listed as a whole rm lists them, before the error.
	if e.JSON {
		if perr := e.printJSON(map[string]any{"removed": refs}); err == nil {
			return perr
		}
		return err
	}
	for _, ref := range refs {
		if ref.IDHex == "" {
			fmt.Fprintf(e.Stdout, "removed checkpoint %s, whose ref did not read\n", ref.Name)
			continue
		}
		fmt.Fprintf(e.Stdout, "removed checkpoint %s (%d version(s), the newest %s)\n", ref.Name, ref.Versions, cas.Short(ref.ID))
	}
	fmt.Fprintln(e.Stdout, "their files stay in the store until `rook store gc` reclaims what nothing else keeps")
	return err
}

// CheckpointCreateCmd is `rook checkpoint create`.
type CheckpointCreateCmd struct {
	Name string   `arg:"" help:"Checkpoint name (letters, digits, '.', '_', '-')."`
	Path nonEmpty `help:"Capture only this part of the workspace." placeholder:"P"`
	limitFlags
}

func (c *CheckpointCreateCmd) Run(e *Env) error {
	lim, err := c.limits()
	if err != nil {
		return err
	}
	var ref agent.CheckpointRef
	var m *agent.Manifest
	dir, err := e.workDir()
	if err != nil {
		return err
	}
	err = e.write(func(r *agent.Rook) (err error) {
		ref, m, err = r.CreateCheckpoint(c.Name, dir, string(c.Path), lim)
		return err
	})
	if err != nil {
		return err
	}
	if e.JSON {
		skipped := m.Skipped
		if skipped == nil {
			skipped = []string{}
		}
		return e.printJSON(map[string]any{"checkpoint": ref, "skipped": skipped})
	}
	for _, s := range m.Skipped {
		// It names a file and where its link leads: the user's names,
		// which may hold a line break or an escape sequence.
		fmt.Fprintf(e.Stderr, "rook: skipped %s\n", terminalLine(s))
	}
	fmt.Fprintf(e.Stdout, "checkpoint %s: %d file(s), %s → %s\n", ref.Name, ref.Files, formatBytes(ref.Bytes), cas.Short(ref.ID))
	if ref.PreviousRoot != "" {
		// Names are the store's: the same name made in two projects is
		// one checkpoint, whose restore now writes here.
		fmt.Fprintf(e.Stderr, "rook: note: %s\n", terminalLine(fmt.Sprintf("checkpoint %s was of another workspace, %s: checkpoint names are shared by every workspace of the store, so `rook checkpoint restore %s` now restores this one (%s); that version stays in its history", ref.Name, ref.PreviousRoot, ref.Name, ref.Root)))
	}
	return nil
}

// CheckpointLsCmd is `rook checkpoint ls`.
type CheckpointLsCmd struct{}

func (c *CheckpointLsCmd) Run(e *Env) error {
	r, err := e.openRook(false)
	if err != nil {
		return err
	}
	defer r.Close()
	refs, err := r.Checkpoints()
	var unreadable *agent.UnreadableRefsError
	if err != nil && !errors.As(err, &unreadable) {
		return err
	}
	// The checkpoints that read are listed, and the ones that do not are
	// named after them, each with what to do, and exit 1: a ref file that
	// does not parse is left out, one whose snapshot does not read is
	// listed, flagged "?" (what it holds is not known). A file there whose
	// name is no checkpoint name is left out and named too.
	var noSnapshot []string
	for _, ref := range refs {
		if ref.Unreadable {
			noSnapshot = append(noSnapshot, ref.Name)
		}
	}
	done := func() error {
		var msgs []string
		if unreadable != nil {
			if !e.JSON {
				for _, err := range unreadable.Errs {
					fmt.Fprintf(e.Stderr, "rook: %s\n", terminalLine(err.Error()))
				}
			}
			msgs = append(msgs, unreadable.Error())
		}
		if len(noSnapshot) > 0 {
			if !e.JSON {
				for _, ref := range refs {
					if ref.Unreadable {
						fmt.Fprintf(e.Stderr, "rook: %s\n", terminalLine(fmt.Sprintf("checkpoint %s: its snapshot %s does not read (%s): `rook store verify` checks the store; `rook checkpoint rm %s` removes the checkpoint", ref.Name, cas.Short(ref.ID), ref.Error, ref.Name)))
					}
				}
			}
			msgs = append(msgs, fmt.Sprintf("%d checkpoint(s) marked ? do not read (%s): `rook store verify` checks the store; `rook checkpoint rm NAME` removes a checkpoint", len(noSnapshot), strings.Join(noSnapshot, ", ")))
		}
		if len(msgs) == 0 {
			return nil
		}
		return &exitError{code: ExitFailure, msg: strings.Join(msgs, "; ")}
	}
	if e.JSON {
		if refs == nil {
			refs = []agent.CheckpointRef{}
		}
		// A failed write is Main's to tell, after done's verdict.
		if err := unprinted(e.printJSON(refs)); err != nil {
			return err
		}
		return done()
	}
	if len(refs) == 0 {
		if unreadable == nil {
			fmt.Fprintln(e.Stdout, "no checkpoints: `rook checkpoint create NAME` makes one")
		}
		return done()
	}
	t := &table{right: map[int]bool{2: true, 3: true}}
	t.add("name", "object", "files", "size", "created", "root")
	for _, ref := range refs {
		if ref.Unreadable {
			t.add(ref.Name, cas.Short(ref.ID), "?", "?", shownTimeSec(ref.Created), "?")
			continue
		}
		t.add(ref.Name, cas.Short(ref.ID), fmt.Sprint(ref.Files), formatBytes(ref.Bytes), shownTimeSec(ref.Created), ref.Root)
	}
	t.write(e.Stdout) // a failed write is Main's to tell, after done's verdict
	return done()
}

// CheckpointRestoreCmd is `rook checkpoint restore`.
type CheckpointRestoreCmd struct {
	Checkpoint string   `arg:"" help:"Checkpoint name, or a snapshot object id (prefix)."`
	To         nonEmpty `help:"Restore into DIR instead of the captured workspace." placeholder:"DIR"`
}

func (c *CheckpointRestoreCmd) Run(e *Env) error {
	to := string(c.To)
	if to != "" {
		abs, err := filepath.Abs(to) // after -C: relative to the directory rook runs in
		if err != nil {
			return err
		}
		to = abs
	}
	var rep agent.RestoreReport
	// A Ctrl-C (or SIGTERM) ends rook at once, as a crash would (the
	// restore's temporary copy removed: vfs.MakeInFlight). Once the save
	// is made, the files are being written: the stop says so, with the
	// save and the restore that puts back what was there, as a restore
	// stopped part way by an error does.
	var mu sync.Mutex
	writing, saved := false, ""
	stopped := onInterruptStop(func(sig os.Signal, again bool) string {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case !writing:
			return fmt.Sprintf("%v: stopped before the restore wrote anything", sig)
		case saved == "":
			// It overwrites nothing (a fresh --to): nothing to put back.
			return fmt.Sprintf("%v: stopped part way through the restore: some files are written, others not (it overwrites none, so none was saved): run it again to write the rest", sig)
		}
		return fmt.Sprintf("%v: stopped part way through the restore: some files are written, others not; the files it overwrote are in checkpoint %s: `rook checkpoint restore %s` puts back what was there", sig, saved, agent.ShellQuote(saved))
	})
	defer stopped()
	// Under --json, the save and the undo as fields too.
	defer onInterruptJSON(func(je *jsonError) {
		mu.Lock()
		defer mu.Unlock()
		if saved != "" {
			je.SavedAs, je.Undo = saved, "rook checkpoint restore "+agent.ShellQuote(saved)
		}
	})()
	err := e.write(func(r *agent.Rook) error {
		_, m, err := r.ResolveCheckpoint(c.Checkpoint)
		if err != nil {
			return err
		}
		rep, err = r.RestoreCheckpointWith(c.Checkpoint, m, agent.RestoreOptions{To: to, Workspace: e.chosenWorkspace(), Writing: func(save string) {
			mu.Lock()
			defer mu.Unlock()
			writing, saved = true, save
		}})
		return err
	})
	stopped()
	if !e.JSON {
		printNotes(e, rep.Notes) // (--json: the report's notes)
	}
	if err != nil && rep.Saved != "" {
		// Stopped part way: the save and the undo as fields too.
		return &stoppedPartWay{err: err, savedAs: rep.Saved, undo: "rook checkpoint restore " + agent.ShellQuote(rep.Saved), done: rep}
	}
	if err != nil {
		return err
	}
	if e.JSON {
		return e.printJSON(rep)
	}
	// What the line says after the root: files left as they were, then
	// what else the restore did.
	rest := ""
	if rep.Unchanged > 0 {
		rest = fmt.Sprintf(" (%d already as it holds them, left as they were)", rep.Unchanged)
	}
	var also []string
	if rep.Removed > 0 {
		also = append(also, fmt.Sprintf("removed %d file(s) the checkpoint holds as absent", rep.Removed))
	}
	if rep.DirsMade > 0 {
		also = append(also, fmt.Sprintf("made %d director(ies)", rep.DirsMade))
	}
	if rep.DirsRemoved > 0 {
		also = append(also, fmt.Sprintf("removed %d empty director(ies)", rep.DirsRemoved))
	}
	if len(rep.DirsKept) > 0 {
		also = append(also, fmt.Sprintf("left %d director(ies) it holds as absent, holding files it does not: %s", len(rep.DirsKept), terminalLine(strings.Join(rep.DirsKept, ", "))))
	}
	if len(rep.Unknown) > 0 {
		also = append(also, fmt.Sprintf("left %d file(s) whose state it does not hold (their Claude Code file backups were missing when imported) as they are: %s", len(rep.Unknown), terminalLine(strings.Join(rep.Unknown, ", "))))
	}
	if len(also) > 0 {
		rest += "; " + strings.Join(also, ", ")
	}
	// The root is a directory's name, the user's: a line break or an
	// escape sequence in it must not reach the terminal (as ls shows it).
	fmt.Fprintf(e.Stdout, "restored %d file(s) into %s%s\n", rep.Written, terminalLine(rep.Root), rest)
	if rep.Saved != "" {
		fmt.Fprintf(e.Stdout, "the files it overwrote are in checkpoint %s: `rook checkpoint restore %s` puts them back\n", rep.Saved, rep.Saved)
	}
	return nil
}
