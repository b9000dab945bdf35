package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/rookhq/rook/eventlog"
)

// RewindReport says what a rewind did.
type RewindReport struct {
	Fork               eventlog.ID `json:"session"`
	Parent             eventlog.ID `json:"parent"`
	EventsKept         uint64      `json:"events_kept"`
	CheckpointsApplied int         `json:"checkpoints_applied"`
	FilesRestored      int         `json:"files_restored"`
	FilesRemoved       int         `json:"files_removed"`
	// DirsMade counts the directories the rewind made: those captured
	// whole that were gone (or a file), and those above a file it wrote.
	DirsMade int `json:"dirs_made"`
	// DirsRemoved counts the empty directories the rewind removed: those
	// not there when what held them was captured, and those of a tree it
	// replaced by a file.
	DirsRemoved int `json:"dirs_removed"`
	// DirsKept are the directories it was to remove (made since what
	// held them was captured) and left: they hold what it does not remove
	// (what .gitignore ignores, a file added since its capture before).
	DirsKept []string `json:"dirs_kept,omitempty"`
	// FromTranscript counts the files whose state to put back comes from
	// the transcript's edit results (an imported Claude Code session
	// without file backups), not from a capture.
	FromTranscript int `json:"from_transcript"`
	// TranscriptFiles say, per file of FromTranscript, what the rewind
	// did (TranscriptRewound.Disk): one already as its state says is not
	// written, and is not put back, nor is one left.
	TranscriptFiles []TranscriptRewound `json:"transcript_files,omitempty"`
	// FromRollout counts the files whose state to put back comes from an
	// imported Codex session's rollout: the patches it says applied
	// before the rewind point (codex_rewind.go).
	FromRollout int `json:"from_rollout"`
	// RolloutFiles say, per file of FromRollout, how its state was found
	// (CodexRewound.How).
	RolloutFiles []CodexRewound `json:"rollout_files,omitempty"`
	// BeforeSeq is the seq, on the fork, of the capture of the disk as it
	// was before the rewind wrote anything: rewinding the fork to it puts
	// the workspace back. Nil when the rewind changed nothing on disk
	// (DiskChanged false): rewinding to it would write what is there.
	BeforeSeq *uint64 `json:"before_seq,omitempty"`
	Undo      string  `json:"undo,omitempty"`
	// DiskChanged: the rewind wrote or removed a file, made or removed a
	// directory, or gave one its mode back. False when every file was
	// already as it was at the point (or none was to be put back, or
	// KeepFiles): the fork is the conversation's rewind alone.
	DiskChanged bool     `json:"disk_changed"`
	Paths       []string `json:"paths"`
	// Unrecordable are the files (or directories) added since under a
	// directory captured whole that the rewind left, Go-quoted: their
	// names cannot be recorded (a backslash, or bytes that are not UTF-8),
	// so its undo could not put them back.
	Unrecordable []string `json:"unrecordable,omitempty"`
	// NotRestored are the files the session changed that the rewind left
	// as they are, and why: their state then is not known
	// (firstStates.Unknown), or they are outside the workspace (Outside:
	// files Claude Code backed up there, firstStates.Outside).
	NotRestored []UncomparedFile `json:"not_restored,omitempty"`
	// Notes say what a rewind of an imported Codex session left as it is
	// and why (a patch the rollout does not say applied, nor what it
	// would change).
	Notes     []string `json:"notes,omitempty"`
	KeepFiles bool     `json:"keep_files"`
	// Interrupted are the earlier rewinds of the same session, to any
	// event, that stopped while writing files (killed, or a write failed).
	// This rewind's own undo gives back the disk as such a rewind left it,
	// half written; the earlier rewind's undo gives back the disk as it was
	// before it.
	Interrupted []InterruptedRewind `json:"interrupted,omitempty"`
}

// InterruptedRewind is a rewind that captured the disk onto its fork and
// then did not record that it finished writing files.
type InterruptedRewind struct {
	Fork eventlog.ID `json:"session"`
	// To is the event that rewind went to (its fork's fork point).
	To   uint64 `json:"to"`
	Undo string `json:"undo"`
	// opened are the modes of the directories it opened to write in, as
	// its capture recorded them (Manifest.Opened): the crash left them
	// u+rwx, and the rewind run again gives them back.
	opened map[string]FileMode
}

// rewoundLabel labels the note a rewind appends to its fork once every file
// is written. A fork tagged rewindTag whose last event is its capture of
// the disk before the rewind, with no such note after it, is a rewind that
// stopped part way.
const rewoundLabel = "rook:rewound:v1"

// rewindTag tags the fork of a rewind that writes files. A rewind's fork
// made by a rook before rewoundLabel has neither: finished or not, it
// cannot be told, and it is not named as interrupted.
const rewindTag = "rewind"

func beforeRewindLabel(id eventlog.ID, to uint64) string {
	return fmt.Sprintf("%s%s to %d", beforeRewindPrefix, id, to)
}

// holdsRewindCapture says whether session id (of n events) holds a
// rewind's capture of the disk before it: a copy of files, though diff and
// rewind pass it over as a state before the point (capturedStatesFor).
func (r *Rook) holdsRewindCapture(id eventlog.ID, n uint64) bool {
	evs, err := r.Log.Read(id, 0, int(n))
	if err != nil {
		return false
	}
	for _, ev := range evs {
		if ev.Kind == eventlog.KindCheckpoint && strings.HasPrefix(ev.Label, beforeRewindPrefix) {
			return true
		}
	}
	return false
}

// beforeRewindPrefix begins the label of a rewind's capture of the disk
// before it (beforeRewindLabel).
const beforeRewindPrefix = "before rewind of "

// NoFileBackupsError: a rewind was asked to put files back in an imported
// session (or a fork of one) that has no copies of files to put back: its
// transcript kept none (Claude Code's file-history backups were not
// there; a Codex rollout keeps none), nor did those of the Claude Code
// sessions linked to it (familyStatesKnown). Nothing was changed.
type NoFileBackupsError struct {
	Session eventlog.ID
	Source  *eventlog.Source // where the session's lines came from
	// NotKnown are the files its edits (or its subagents') changed after
	// the point whose state before them no copy and no edit result says:
	// a subagent's edit results, as Claude Code writes them, say none.
	NotKnown []UncomparedFile
}

func (e *NoFileBackupsError) Error() string {
	msg := fmt.Sprintf("session %s was imported from %s without file backups: no files to put back", e.Session, FormatName(e.Source.Format))
	if len(e.NotKnown) > 0 {
		msg += "; " + NotKnownBefore(e.NotKnown)
	}
	return msg + " (--keep-files rewinds the conversation only): nothing changed"
}

// NotKnownBefore names the files whose state before the edits that
// changed them is not known, those of one reason together (a subagent
// that edited hundreds says why once), the first maxNotKnownNamed of each
// named: `rook session diff` lists them all (uncompared).
func NotKnownBefore(files []UncomparedFile) string {
	var reasons []string
	paths := map[string][]string{}
	for _, f := range files {
		why := strings.TrimPrefix(f.Error, "its state before is not known: ")
		if _, ok := paths[why]; !ok {
			reasons = append(reasons, why)
		}
		paths[why] = append(paths[why], f.Path)
	}
	parts := make([]string, 0, len(reasons))
	more := false
	for _, why := range reasons {
		ps := paths[why]
		named := strings.Join(ps[:min(len(ps), maxNotKnownNamed)], ", ")
		if len(ps) > maxNotKnownNamed {
			named += fmt.Sprintf(" and %d more", len(ps)-maxNotKnownNamed)
			more = true
		}
		parts = append(parts, named+": "+why)
	}
	msg := fmt.Sprintf("%d file(s) changed whose state before is not known (%s)", len(files), strings.Join(parts, "; "))
	if more {
		msg += " (`rook session diff` names them all)"
	}
	return msg
}

// maxNotKnownNamed bounds the files NotKnownBefore names for one reason.
const maxNotKnownNamed = 10

// Rewind forks a session at `to` (the parent stays whole and readable) and,
// unless keepFiles, puts every file the session captured at or after `to`
// back as it was at its earliest such capture, removing files that did not
// exist then (files added since under a directory captured whole, or under
// a path captured absent, too, and the directories made for them:
// capture_dirs.go). In an imported Claude Code session the edit results at
// or after `to` count as captures (firstCaptures). Before writing, it
// captures the disk as it is now onto the fork, so the rewind itself can
// be undone: RewindReport.Undo.
//
// Everything is checked first (paths inside the workspace, captured copies
// readable, directories writable); if anything fails, nothing is written and
// no fork is made. Asked for files in an imported session that has no
// copies of any (nor edit results saying what they were), and whose
// family's (its subagents', forks') say none either, it fails with a
// *NoFileBackupsError.
func (r *Rook) Rewind(id eventlog.ID, to uint64, keepFiles bool) (rep RewindReport, err error) {
	return r.RewindWith(id, to, RewindOptions{KeepFiles: keepFiles})
}

// RewindOptions are how a rewind goes (Rook.RewindWith).
type RewindOptions struct {
	// KeepFiles: the conversation only; no file is touched.
	KeepFiles bool
	// Absent are paths (relative to the workspace, or absolute in it)
	// the user says did not exist at the rewind point, of an imported
	// Codex session whose rollout leaves that open: its first patch of
	// each after the point writes it whole (CodexUnknownState.MayBeAbsent).
	// The rewind removes them. Any other path named is refused.
	Absent []string
	// Workspace is the directory the user named with -C (empty when -C
	// was not given): when it is neither the session's workspace nor in
	// it, the files are put back there, a project moved since
	// (workspaceFor). The captures the rewind makes still name the
	// session's workspace, so its undo takes the same -C.
	Workspace string
	// Writing, when not nil, is called just before the first file is
	// written, with the rewind's fork, the seq of its capture of the disk
	// before it (durable by then) and the command that undoes the rewind:
	// what an interrupt from then on is to name.
	Writing func(fork eventlog.ID, beforeSeq uint64, undo string)
}

// RewindWith is Rewind, with opts.
func (r *Rook) RewindWith(id eventlog.ID, to uint64, opts RewindOptions) (rep RewindReport, err error) {
	defer holdLinks()() // (the recorded paths' links, each resolved once: links.go)
	keepFiles := opts.KeepFiles
	rep = RewindReport{Parent: id, EventsKept: to, KeepFiles: keepFiles, Paths: []string{}}
	if keepFiles && len(opts.Absent) > 0 {
		return rep, badArgument("--absent says what files held, and --keep-files touches none: give one of them: nothing changed")
	}
	// The directories opened to search them are closed however it ends:
	// by Apply, once it runs, with those it opens to write in (the plan
	// holds them so); else here.
	var searched *searchOpened
	applying := false
	defer func() {
		if v := recover(); v != nil {
			// As a crash: the record of those opened stays, and the
			// next rewind closes them (closeLeftOpen).
			panic(v)
		}
		cerr := searched.close(!applying)
		if cerr != nil && err == nil {
			err = fmt.Errorf("the rewind is done, but %w", cerr)
		}
	}()
	sum, err := r.Log.Summary(id)
	if err != nil {
		return rep, err
	}
	if to > sum.Events {
		return rep, fmt.Errorf("cannot rewind to %d: session %s has %d events (0 to %d)", to, id, sum.Events, sum.Events)
	}
	var plan *Plan
	var before *Manifest
	// transcript: the states from edit results, said per file once the
	// rewind is done (TranscriptFiles).
	var transcript []Change
	// moved: the files are put back in the directory -C names, not the
	// one the captures name (recordedRoot), which the capture before the
	// rewind still names: every capture of a session names one workspace.
	moved, recordedRoot, movedTo := false, "", ""
	if !keepFiles {
		// A rewind that crashed may have left directories open.
		if err := r.closeLeftOpen(); err != nil {
			return rep, nothingDone(err, "nothing changed")
		}
		if rep.Interrupted, err = r.interruptedRewinds(id); err != nil {
			return rep, nothingDone(err, "nothing changed")
		}
		st, err := r.capturedStatesFor(id, to, true)
		if err != nil {
			return rep, nothingDone(err, "nothing changed")
		}
		// An imported Claude Code session's subagents and forks edited
		// the same workspace: a state of theirs after the point, earlier
		// than its own, is the file's then (family_states.go). Not for
		// an undo (a rewind's fork to its capture before it): that
		// capture holds every file the undo writes, as the disk was.
		if ws := r.transcriptWorkspace(id); ws != "" && !r.rewindFork(id, to) {
			if err := r.mergeFamilyStates(id, to, ws, &st, false); err != nil {
				return rep, nothingDone(err, "nothing changed")
			}
		}
		// An edit result of its own after the point that does not read,
		// of a file no state before it says: what the file held at the
		// point is not known (transcript_own_unread.go).
		if err := st.ownUnreadRefusal(r, id); err != nil {
			return rep, err
		}
		// An imported Codex session has no captures: what its rollout's
		// patches say the files held at the point, where they say it. A
		// fork of one an earlier rewind made ends with that rewind's
		// capture of the disk, after every patch: a patch at or after
		// the point comes first, so its path's state is the rollout's to
		// say (or refuse), not that capture's.
		codexPatched, codex := false, false
		if st.FromTranscript == 0 {
			if ws, ok := r.codexWorkspace(id); ok {
				codex = true
				changes, how, notes, any, err := r.codexRewindChanges(id, to, ws, opts.Absent)
				if err != nil {
					var ue *CodexUnknownStatesError
					if errors.As(err, &ue) {
						if werr := workspaceOnDisk(ws); ws != "" && werr != nil {
							// Every file reads as "not there": say first
							// what is.
							return rep, fmt.Errorf("%v, so every file reads as not there (put it back where it was); %w", werr, err)
						}
						return rep, err
					}
					return rep, nothingDone(err, "nothing changed")
				}
				if len(changes) > 0 && ws == "" {
					return rep, fmt.Errorf("cannot rewind the files of session %s: its Codex rollout names no workspace, so where its %d file(s) are is not known (--keep-files rewinds the conversation only): nothing changed", id, len(changes))
				}
				codexPatched, rep.Notes, rep.FromRollout, rep.RolloutFiles = any, notes, len(changes), how
				if st.Root == "" {
					st.Root = ws
				}
				for p, c := range changes {
					st.First[p] = c
				}
			}
		}
		if len(opts.Absent) > 0 && !codex {
			// Captures (and edit results) say whether a file existed.
			return rep, badArgument("--absent is for a rewind of an imported Codex session, whose rollout may not say whether a file existed, and session %s is not one: leave it out: nothing changed", id)
		}
		// -C names where a moved workspace is now: the user deciding.
		recorded := st.Root
		if ws, ok := workspaceFor(st.Root, opts.Workspace); ok {
			st.Root, moved, movedTo = ws, true, ws
			rep.Notes = append(rep.Notes, movedNote(recorded, ws))
		}
		// A directory of the user's without its search bit hides all
		// under it: opened (u+x) before anything is looked at.
		if real, rerr := realRoot(st.Root); st.Root != "" && rerr == nil {
			if searched, err = r.openToSearch(real, st.dirsToReach()); err != nil {
				return rep, nothingDone(err, "nothing changed")
			}
		}
		if err := st.addedUnderDirs(r.Store.Home()); err != nil {
			return rep, nothingDone(err, "nothing changed")
		}
		if len(st.Unreadable) > 0 {
			// Files added in it could not be removed, nor even named in
			// the undo: the rewind would leave them and say nothing.
			u := st.Unreadable[0]
			if u.TooLong {
				// No chmod makes it readable: the path is too long.
				remove := "remove it yourself"
				if u.Added != "" {
					remove = fmt.Sprintf("remove what was added yourself (`%s`, made since the capture)", removeByHand(st.Root, u.Added))
				}
				return rep, fmt.Errorf("cannot rewind the files: %s cannot be reached: %s, so what was added in it since the capture cannot be found to remove; %s, and run this again (--keep-files rewinds the conversation only): nothing changed", ShortPath(u.Path), u.Error, remove)
			}
			return rep, fmt.Errorf("cannot rewind the files: %s cannot be read (%s), so what was added in it since the capture cannot be found to remove; make it readable (chmod u+rx), or remove it yourself, and run this again (--keep-files rewinds the conversation only): nothing changed", u.Path, u.Error)
		}
		rep.Unrecordable = st.Unrecordable
		rep.NotRestored = slices.Concat(st.Unknown, st.Outside)
		rep.Notes = append(rep.Notes, st.linkedNotes...)
		root := st.Root
		changes := make([]Change, 0, len(st.First))
		for _, c := range st.First {
			changes = append(changes, c)
		}
		changes = append(changes, st.dirChanges()...)
		rep.CheckpointsApplied = st.Captures
		rep.FromTranscript = st.FromTranscript
		for _, c := range st.First {
			if c.transcript && !codex { // (a rollout's are RolloutFiles)
				transcript = append(transcript, c)
			}
		}
		if st.Captures == 0 && st.FromTranscript == 0 && !codexPatched {
			// Nothing to put back: say why when it is because the session
			// is imported and its transcript kept no copies of files, nor
			// edit results saying what they were (a rewind to after its
			// last capture or edit restores nothing, rightly).
			if src := r.ImportedFrom(sum.Meta); src != nil {
				all, err := r.firstCaptures(id, 0)
				if err != nil {
					return rep, nothingDone(err, "nothing changed")
				}
				// (Its edit results before the point that do not read
				// were edit results all the same: what they say is not
				// needed, and there is nothing to put back.)
				// (A fork a rewind made holds its capture of the disk before
				// it, which firstCaptures passes over: copies all the same.)
				if all.Captures == 0 && all.FromTranscript == 0 && len(all.unreadOwn) == 0 && !r.holdsRewindCapture(id, sum.Events) {
					// Its subagents' (and forks') states may say the
					// files: then nothing to put back is the answer,
					// as if the session held them itself.
					known, err := r.familyStatesKnown(id, to)
					if err != nil {
						return rep, nothingDone(err, "nothing changed")
					}
					if !known {
						return rep, &NoFileBackupsError{Session: id, Source: src, NotKnown: st.Unknown}
					}
				}
			}
		}
		if len(changes) > 0 {
			if err := workspaceOnDisk(root); err != nil {
				if moved {
					return rep, fmt.Errorf("%w (named with -C): nothing changed (give -C the directory the workspace is in now; --keep-files rewinds the conversation only)", err)
				}
				return rep, fmt.Errorf("%w: nothing changed (%s; --keep-files rewinds the conversation only)", err, movedWorkspaceHint)
			}
			realWS, _ := realRoot(root)
			if plan, err = r.planRestore(root, changes, st.wasDirIn(realWS), true); err != nil {
				// A file's state at the point a Claude Code file backup
				// that does not read: not known (backup_unread.go).
				var uc *unreadCopyError
				if errors.As(err, &uc) {
					if refusal := r.unreadBackupRefusal(id, uc); refusal != nil {
						return rep, refusal
					}
				}
				return rep, nothingDone(err, "nothing changed")
			}
			if err := plan.pruneDirs(st.Prune); err != nil {
				return rep, nothingDone(err, "nothing changed")
			}
			// A directory an earlier rewind opened is made again, if it
			// must be, with the mode it had then.
			plan.dirModes = maps.Clone(st.dirModes)
			for d, m := range st.opened {
				if _, ok := plan.dirModes[d]; !ok {
					plan.dirModes[d] = m
				}
			}
			if err := plan.giveModes(st.opened, false); err != nil {
				return rep, nothingDone(err, "nothing changed")
			}
			if err := plan.giveModes(reopened(rep.Interrupted, st.opened), true); err != nil {
				return rep, nothingDone(err, "nothing changed")
			}
			searched.intoPlan(plan)
		}
		if plan != nil && len(plan.Changes) == 0 && len(plan.prune) == 0 && len(plan.modes) == 0 {
			plan = nil // every directory to make is there: nothing to do
		}
		if plan != nil {
			for _, c := range plan.Changes {
				rep.Paths = append(rep.Paths, c.Path)
			}
			// The disk as it is now, hand edits included: the undo. A
			// directory tree a file replaces is in it whole, however big.
			c, err := r.newCapturer(root, Limits{MaxFiles: 1 << 30, MaxBytes: 1 << 40, MaxFileBytes: 1 << 40})
			if err != nil {
				return rep, err
			}
			c.linksAsIs, c.exact = true, true
			c.stats = map[string]savedStat{}
			c.m.Label = beforeRewindLabel(id, to)
			for _, ch := range plan.Changes {
				// A directory given its captured mode back is taken
				// whole, with its mode now, for the undo (a mode is
				// recorded of a directory captured whole); a named pipe
				// in it is passed over, as it is left where it is.
				c.linksAsIs = !ch.chmod
				if err := c.addPath(ch.Path); err != nil {
					// Under a link leading outside that reaches no
					// directory, which the rewind replaces (clearFile,
					// captured below): nothing is there, as under one
					// inside the workspace.
					var esc *EscapeError
					if ch.clearFile == "" || !errors.As(err, &esc) || esc.Link != ch.clearFile {
						// (A named pipe there: nothing to save for the
						// undo, nor to write over; said what to do.)
						return rep, fmt.Errorf("capture %s before rewinding: %w%s: nothing changed", ch.Path, err, notRegularAdvice(err, "rewind"))
					}
					c.addAbsent(ch.Path)
				}
			}
			c.linksAsIs = true
			// The directories the rewind makes, as absent (the first
			// missing one up from each file it writes): the undo removes
			// them with the files (capture_dirs.go). A file where one of
			// them must be goes first: the undo writes it back, and
			// removes what the rewind wrote under it.
			for _, ch := range plan.Changes {
				if ch.Remove {
					continue
				}
				if ch.clearFile != "" {
					if err := c.addPath(ch.clearFile); err != nil {
						return rep, fmt.Errorf("capture %s before rewinding: %w: nothing changed", ch.clearFile, err)
					}
					continue
				}
				if d := firstMissingDir(plan.real, ch.Path); d != "" {
					if err := c.addPath(d); err != nil {
						return rep, fmt.Errorf("capture %s before rewinding: %w: nothing changed", d, err)
					}
				}
			}
			// A directory where a rollout or transcript says a file was
			// absent, which the rewind empties and removes: whole.
			for _, d := range plan.wholeDirs {
				if err := c.addPath(d); err != nil {
					return rep, fmt.Errorf("capture %s before rewinding: %w: nothing changed", d, err)
				}
			}
			// The directories it removes (rmdir, once empty), with their
			// modes: the undo makes them again.
			for _, d := range plan.prune {
				if slices.Contains(plan.keptNow, d) {
					continue // left, with what it holds
				}
				if err := c.addDir(d); err != nil {
					return rep, fmt.Errorf("capture %s before rewinding: %w: nothing changed", d, err)
				}
			}
			// The directories it opens to write in, or gives a mode an
			// earlier rewind's capture recorded, with their modes now: a
			// crash leaves the first open, and its undo gives both back.
			if c.m.Opened, err = plan.openedNow(c.m); err != nil {
				return rep, fmt.Errorf("capture the directories' modes before rewinding: %w: nothing changed", err)
			}
			// A file patches were undone on must be, in the capture, what
			// they were undone on: else it changed since it was read,
			// and what the rewind would write is not what it held.
			for _, rw := range rep.RolloutFiles {
				if rw.How != "reversed" {
					continue
				}
				if _, ok := c.m.Files[rw.From]; !ok {
					if err := c.addPath(rw.From); err != nil {
						return rep, fmt.Errorf("capture %s before rewinding: %w: nothing changed", rw.From, err)
					}
				}
				if e, ok := c.m.Files[rw.From]; !ok || e.ID != rw.fromID {
					return rep, fmt.Errorf("cannot rewind the files: %s changed while the rewind read it; run it again: nothing changed", rw.From)
				}
			}
			searched.originals(c.m)
			before = c.m
			recordedRoot = recorded
			plan.saved, plan.savedStats = before, c.stats
		}
	}
	meta := eventlog.Meta{Title: r.rewoundTitle(sum.Meta, to)}
	if plan != nil && !slices.Contains(sum.Tags, rewindTag) {
		meta.Tags = append(slices.Clone(sum.Tags), rewindTag)
	}
	fork, err := r.Log.Fork(id, to, meta)
	if fse := (*eventlog.ForkSplitError)(nil); errors.As(err, &fse) {
		// Worded with the rewind's own flag: `session rewind` takes --to.
		return rep, fmt.Errorf("cannot rewind session %s to %d: %s: rewind to where the group begins or ends (--to %d or --to %d)", id, to, fse.Reason(), fse.Start, fse.End)
	}
	if err != nil {
		return rep, err
	}
	rep.Fork = fork.ID
	if plan == nil {
		// Nothing to write nor remove (a removal under a file now,
		// passed over): no file to remove was there.
		rep.RolloutFiles = rolloutRewound(rep.RolloutFiles, nil)
		rep.TranscriptFiles = transcriptRewound(transcript, nil)
		return rep, r.Flush()
	}
	// A checkpoint is a barrier: the capture is durable when Append returns,
	// before the first file is written (TestRewindRecordsTheUndoBeforeWritingFiles).
	record := before
	if moved {
		named := *before
		named.Root = recordedRoot
		record = &named
	}
	seq, err := r.Append(fork.ID, Entry{Kind: eventlog.KindCheckpoint, Label: before.Label, Body: record.Encode()})
	if err != nil {
		return rep, fmt.Errorf("record the disk before rewinding (fork %s made, nothing written): %w", fork.ID, err)
	}
	rep.BeforeSeq = &seq
	rep.Undo = fmt.Sprintf("rook session rewind %s --to %d", fork.ID, seq)
	if moved {
		rep.Undo = fmt.Sprintf("rook -C %s session rewind %s --to %d", ShellQuote(movedTo), fork.ID, seq)
	}
	applying = true
	if opts.Writing != nil {
		opts.Writing(rep.Fork, seq, rep.Undo)
	}
	rep.FilesRestored, rep.FilesRemoved, _, err = plan.Apply()
	rep.DirsMade, rep.DirsRemoved, rep.DirsKept = plan.madeDirs(), plan.dirsRemoved, plan.keptDirs()
	if err != nil && !plan.changedAny(rep.FilesRestored, rep.FilesRemoved) {
		// Stopped before it changed anything (at its first file, changed
		// since its capture: the agent still at work): there is nothing
		// to undo, and the undo would put the capture's older copy of
		// that file over the newer one. It is not named, and the fork is
		// removed, as when the rewind is refused before writing: nothing
		// changed, no fork (a fork ending at its capture would also be
		// named as an interrupted rewind by the next one).
		f := rep.Fork
		rep.Fork, rep.BeforeSeq, rep.Undo = eventlog.ID{}, nil, ""
		if _, rerr := r.RemoveSession(f); rerr != nil {
			return rep, fmt.Errorf("%w; the fork %s holds nothing to undo, and removing it failed (%v): `rook session rm %s` removes it", err, f, rerr, f)
		}
		return rep, fmt.Errorf("%w; no fork is kept: there is nothing to undo", err)
	}
	if err != nil {
		rep.DiskChanged = true // (changedAny: the undo has something to put back)
		// The paths it went through, not the one it stopped at nor
		// those after it.
		rep.Paths = rep.Paths[:min(plan.through, len(rep.Paths))]
		return rep, fmt.Errorf("%w; `%s` puts back what was there%s", err, rep.Undo, undoAlso(err, before, "rewind", "captures"))
	}
	rep.RolloutFiles = rolloutRewound(rep.RolloutFiles, plan)
	rep.TranscriptFiles = transcriptRewound(transcript, plan)
	rep.DiskChanged = rep.FilesRestored+rep.FilesRemoved+rep.DirsMade+rep.DirsRemoved > 0 || plan.modesGiven()
	done, _ := json.Marshal(struct {
		Restored int `json:"files_restored"`
		Removed  int `json:"files_removed"`
	}{rep.FilesRestored, rep.FilesRemoved})
	if _, err := r.Append(fork.ID, Entry{Kind: eventlog.KindNote, Label: rewoundLabel, Body: done}); err != nil {
		return rep, fmt.Errorf("every file was put back, but recording that on %s failed: %w; `%s` puts back what was there", fork.ID, err, rep.Undo)
	}
	if !rep.DiskChanged {
		// Every file was already as it was at the point: the capture
		// before the rewind holds what is there, and its undo would
		// write nothing. None is offered.
		rep.BeforeSeq, rep.Undo = nil, ""
	}
	return rep, nil
}

// interruptedRewinds finds the forks of earlier rewinds of id, whatever
// event each went to, that stopped while writing files: each ends at its
// capture of the disk before that rewind, with no note that it finished,
// and nothing was forked from it since (its undo, once run, forks it). The
// next rewind's own capture is of the half-written disk whatever its
// point, so a rewind to another event names them too. A fork that does
// not read is passed over: it must not stop this rewind.
func (r *Rook) interruptedRewinds(id eventlog.ID) ([]InterruptedRewind, error) {
	ids, err := r.Log.IDs()
	if err != nil {
		return nil, err
	}
	type fork struct {
		id eventlog.ID
		at uint64
	}
	var forks []fork
	forked := map[eventlog.ID]bool{}
	slices.SortFunc(ids, func(a, b eventlog.ID) int { return strings.Compare(a.String(), b.String()) }) // oldest first
	for _, f := range ids {
		m, err := r.Log.ReadMeta(f)
		if err != nil {
			continue
		}
		if m.Parent != nil {
			forked[*m.Parent] = true
		}
		if m.Parent != nil && *m.Parent == id && m.ForkAt != nil && slices.Contains(m.Tags, rewindTag) {
			forks = append(forks, fork{f, *m.ForkAt})
		}
	}
	var out []InterruptedRewind
	for _, f := range forks {
		if forked[f.id] {
			continue
		}
		evs, err := r.Log.Read(f.id, f.at, 2)
		if err != nil || len(evs) != 1 || evs[0].Kind != eventlog.KindCheckpoint || evs[0].Label != beforeRewindLabel(id, f.at) {
			continue
		}
		ir := InterruptedRewind{Fork: f.id, To: f.at, Undo: fmt.Sprintf("rook session rewind %s --to %d", f.id, f.at)}
		if m, err := r.ReadManifest(evs[0].Body); err == nil {
			ir.opened = m.Opened
		}
		out = append(out, ir)
	}
	return out, nil
}

// reopened returns the directories the interrupted rewinds opened that
// are still open as such a crash leaves them (the mode recorded, u+rwx
// added), with the mode recorded, the oldest rewind's first: the rewind
// run again gives them that mode, unless the session's own captures
// (taken) record one. A directory whose mode was changed since is left.
func reopened(interrupted []InterruptedRewind, taken map[string]FileMode) map[string]FileMode {
	out := map[string]FileMode{}
	for _, ir := range interrupted {
		for d, m := range ir.opened {
			if _, ok := taken[d]; !ok {
				if _, ok := out[d]; !ok {
					out[d] = m
				}
			}
		}
	}
	return out
}

// rewoundTitle is the title of a rewind of m to seq to: m's, "@to" after
// it. A title ending in the "@N" a rewind (or any fork) at N added
// replaces that "@N": rewinding again and again reads "title @1", not
// "title @4 @1", and so does a rewind of a fork of a rewind (forked at 5,
// "title @4" taken from its parent). Which session gave the title, and at
// which fork point, is read from the lineage (titleOrigin): m, or the
// furthest ancestor up its line of forks titled the same, of which its
// forks took the title. That session's "@N" at its fork point N is a
// rewind's; a title that ends so by chance, not at its origin's fork
// point (a session titled "v @3", forked at 3, keeps "@3"), keeps it.
func (r *Rook) rewoundTitle(m eventlog.Meta, to uint64) string {
	title := m.Title
	if _, n, ok := r.titleOrigin(m); ok {
		at := fmt.Sprintf("@%d", n)
		if title == at {
			title = ""
		} else {
			title = strings.TrimSuffix(title, " "+at)
		}
	}
	return strings.TrimSpace(fmt.Sprintf("%s @%d", title, to))
}

// titleOrigin is the session m's title was given to: m, or, m being a
// fork (a fork takes its parent's title), the furthest ancestor up its
// line of forks titled the same; and the point at forked says it was
// forked at. The walk follows each fork's ForkedFrom: its parent, or,
// once that was removed, the ancestor its removal recorded, whose events
// [0, ancestor_at) its copy holds. A session up the line that does not
// read (removed: its title is gone) ends the walk, as a loop of links
// (damaged metadata) does: the last session read is the origin, and its
// fork point the one its ForkedFrom records, ancestor_at for a fork whose
// removed parent was a fork (a rewind "fix @4" of S, forked at 5 and
// removed: the fork's ancestor is S, at 4). A session whose title came
// through one since removed has the fork point the walk found then (its
// TitleAt, written by the removal): that ends the walk (a fork made at 2
// of the rewind "fix @4", the rewind removed, rewinds to "fix @1"). So
// does its TitleGiven, the removed one being no fork: its title has no
// rewind's "@N" (a fork at 3 of "v @3", the session removed, rewinds to
// "v @3 @1").
func (r *Rook) titleOrigin(m eventlog.Meta) (origin eventlog.Meta, at uint64, forked bool) {
	for seen := map[eventlog.ID]bool{}; ; {
		seen[m.ID] = true
		if m.TitleAt != nil {
			return m, *m.TitleAt, true
		}
		if m.TitleGiven {
			return m, 0, false
		}
		pid, pat, ok := m.ForkedFrom()
		if !ok {
			return m, 0, false
		}
		pm, err := r.Log.ReadMeta(pid)
		if err != nil || pm.Title != m.Title || seen[pm.ID] {
			return m, pat, true
		}
		m = pm
	}
}

// rolloutRewound says, of each rollout file, what the rewind did
// (CodexRewound.Disk): rewoundDisk, of one to remove where How is absent
// or said-absent.
func rolloutRewound(files []CodexRewound, plan *Plan) []CodexRewound {
	for i, f := range files {
		files[i].Disk = rewoundDisk(f.Path, f.How == "absent" || f.How == "said-absent", plan)
	}
	return files
}

// rewoundDisk says what a rewind did at path p, whose state a rollout or
// transcript gives (remove: it says p was absent): a file Apply found as
// it was to be (plan.asThen) was not written; of one to remove,
// removedDisk. Empty: it wrote the file, or removed the file there.
func rewoundDisk(p string, remove bool, plan *Plan) string {
	switch {
	case remove:
		return removedDisk(p, plan)
	case plan != nil && plan.asThen[p]:
		return DiskAsThen
	}
	return ""
}

// removedDisk says what a rewind found at path p, which a state of a
// rollout or transcript says was absent, from its capture of the disk
// before (plan.saved) and what Apply pruned: a file or link there was
// removed (""); a directory was removed once empty, or left holding what
// no state names; one reached through a link the rewind removed above it
// was left; nothing there, nothing was removed. No plan (the rewind had
// nothing to do): none was there.
func removedDisk(p string, plan *Plan) string {
	if plan == nil {
		return DiskNotThere
	}
	switch _, had := plan.saved.Files[p]; {
	case had:
		return ""
	case slices.Contains(plan.throughLinks, p):
		return DiskUnderLink
	case slices.Contains(plan.stateDirs, p) && slices.Contains(plan.dirsKept, p):
		return DiskDirKept
	case slices.Contains(plan.stateDirs, p):
		return DiskDirRemoved
	}
	return DiskNotThere
}

// TranscriptRewound is a file whose state a rewind took from the
// transcript's edit results (RewindReport.FromTranscript), and what it
// did with it.
type TranscriptRewound struct {
	Path string `json:"path"`
	// Disk is what the rewind found there when it did not write the
	// file, nor remove the file there, as the state says: DiskAsThen, DiskUnderLink,
	// DiskNotThere, DiskDirRemoved or DiskDirKept. Empty: it did.
	Disk string `json:"disk,omitempty"`
}

// DiskAsThen (TranscriptRewound.Disk, CodexRewound.Disk): the file held
// what its state says (its bytes and mode): it was not written.
const DiskAsThen = "as-then"

// transcriptRewound says, of each state from the transcript (states),
// what the rewind did, sorted by path: rewoundDisk.
func transcriptRewound(states []Change, plan *Plan) []TranscriptRewound {
	out := make([]TranscriptRewound, 0, len(states))
	for _, c := range states {
		out = append(out, TranscriptRewound{Path: c.Path, Disk: rewoundDisk(c.Path, c.Remove, plan)})
	}
	slices.SortFunc(out, func(a, b TranscriptRewound) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// ShortPath is p for a message, its middle cut when it is thousands of
// bytes long (a tree nested too deep to open by name): its first and
// last elements; its first and last 64 bytes or so (whole characters)
// when it has no two of them.
func ShortPath(p string) string {
	if len(p) <= 256 {
		return p
	}
	i, j := strings.IndexByte(p[1:], '/')+1, strings.LastIndexByte(p, '/')
	if i <= 0 || j <= i {
		h, t := 64, len(p)-64
		for h > 0 && !utf8.RuneStart(p[h]) {
			h--
		}
		for t < len(p) && !utf8.RuneStart(p[t]) {
			t++
		}
		return p[:h] + "..." + p[t:]
	}
	return p[:i] + "/.../" + p[j+1:]
}

// pathMaxBytes is the longest path the system opens by name (PATH_MAX,
// less its NUL): 4,096 bytes on Linux, 1,024 on macOS and the BSDs.
var pathMaxBytes = func() int {
	if runtime.GOOS == "linux" {
		return 4095
	}
	return 1023
}()

// removeByHand is a shell command removing p, a path in the workspace
// root, that runs from any directory: a subshell going to the root (a
// relative `rm -r p` run elsewhere would remove another tree of that
// name), then, when p is longer than the system opens by name (rm would
// fail "File name too long"), down to it by cds of paths short enough,
// then removing the rest.
func removeByHand(root, p string) string {
	cds := []string{"cd " + ShellQuote(root)}
	for len(p) > pathMaxBytes {
		cut := strings.LastIndexByte(p[:pathMaxBytes+1], '/')
		if cut <= 0 {
			break // (a name longer than the limit: none is)
		}
		cds = append(cds, "cd "+ShellQuote(p[:cut]))
		p = p[cut+1:]
	}
	return "(" + strings.Join(cds, " && ") + " && rm -r " + ShellQuote(p) + ")"
}
