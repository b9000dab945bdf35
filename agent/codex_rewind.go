package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
)

// Rewinding the files of an imported Codex session. Codex keeps no
// copies of files, but its rollout holds the patches the agent applied
// (codex_diff.go): replayed up to the rewind point, they say what some
// paths held there. Each path a patch at or after the point writes (or
// one the rollout does not say applied, which may have) is put back as
// it was when the first such patch came, where that is known:
//
//   - absent: the session had deleted or moved it away before (an Add
//     File, or a move onto it, of a path it had not touched is not
//     taken as absent: Codex writes over a file that is there, so it may
//     have existed, and removing it would lose it);
//   - its content: the session added it whole before the point and each
//     later patch applied to its lines as Codex applies them, or wrote it
//     whole over a file (Add File), or the first patch after the point
//     deletes it and its patch_apply_end holds the content it deleted.
//
// A path whose content there the replay does not know (a file that
// existed before the session, updated by patches alone; one a command the
// session ran may have changed since the rollout last says what it held,
// before the point: codexCommandSeqs) is found the other way when it is
// safe: the patches at or after the point undone on the file as it is on
// disk now, as `git apply -R` would (codexReverse, codex_reverse.go):
// only when each is an Update File (or a patch_apply_end's update) that
// applied, the file the last leaves (followed through its moves) is
// there and holds exactly what they left (every hunk of each reverses,
// its lines matching exactly, in order), and no command the session ran
// after the point may have written it, nor, of a fork, a patch or command
// its parent ran after the fork point (codexForkWhy). Where Codex found a chunk only by
// ignoring spaces or typographic punctuation, the lines put back are the
// patch's own, as git apply -R's are; a file Codex updated ends with a
// newline, and one undone from a Codex patch gets one (whether it had one
// before, or an empty last line, which Codex drops, is not in the patch:
// neither is put back; a patch_apply_end's unified diff says). A
// change made since the session to lines no hunk has is not seen: it
// stays in the file put back (the undo, captured first, has the disk).
// Any other path's state is not known: the rewind refuses, naming each
// such path and why, and writes nothing, rather than write something
// wrong. A path outside the workspace is refused too: a rewind writes
// only in it. The mode of a file put back is the one it has on disk (a
// patch does not change it; a file undone where a patch moved it, the
// one it has there), as for a Claude Code edit result's state
// (Change.transcript).

// CodexUnknownStatesError: a rewind of an imported Codex session needs
// files whose content at the rewind point its rollout does not hold.
// Nothing was changed.
type CodexUnknownStatesError struct {
	Session eventlog.ID
	To      uint64
	Files   []CodexUnknownState
}

// CodexUnknownState is one path a rewind cannot put back, and why.
type CodexUnknownState struct {
	Path string `json:"path"`
	Why  string `json:"why"`
	// MayBeAbsent: the session's first patch of it after the point
	// writes it whole (Add File, or a move onto it), which Codex does
	// whether or not a file is there. If none was, the user says so
	// (RewindOptions.Absent) and the rewind removes it.
	MayBeAbsent bool `json:"may_be_absent,omitempty"`
	// Holds is the path whose content at the point this file holds now
	// (a patch after the point moved it here; the rewind would put it
	// back from this one): putting this file back by hand first would
	// lose it.
	Holds string `json:"holds,omitempty"`
}

func (e *CodexUnknownStatesError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cannot rewind the files of session %s to %d: Codex keeps no copies of files, and its rollout's patches do not say what %d file(s) held then: ", e.Session, e.To, len(e.Files))
	for i, f := range e.Files {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s (%s", f.Path, f.Why)
		if f.Holds != "" {
			fmt.Fprintf(&b, "; it holds what %s held then, moved there after the point, its only copy: copy it to %[1]s before you put %s back", f.Holds, f.Path)
		}
		b.WriteString(")")
	}
	b.WriteString("; put them back yourself (from git, say) and rewind with --keep-files, which rewinds the conversation only")
	var maybe []string
	for _, f := range e.Files {
		if f.MayBeAbsent {
			maybe = append(maybe, f.Path)
		}
	}
	if len(maybe) > 0 {
		// Removing such a file by hand would lose what a move put there
		// (the only copy of the file it moved, which the rewind undoes
		// the patches on): --absent has the rewind remove it, after.
		flags := make([]string, len(maybe))
		for i, p := range maybe {
			flags[i] = absentFlag(p)
		}
		if len(maybe) == 1 {
			fmt.Fprintf(&b, "; where %s did not exist then, rewind with %s and the rewind removes it, once it has undone on it any patch that moved a file there (removing it yourself would lose that file)", maybe[0], flags[0])
		} else {
			fmt.Fprintf(&b, "; where any of %s did not exist then, rewind with --absent and its path for each that did not (%s, if none did), and the rewind removes them, once it has undone on them any patch that moved a file there (removing one yourself would lose that file)", strings.Join(maybe, ", "), strings.Join(flags, " "))
		}
	}
	b.WriteString(": nothing changed")
	return b.String()
}

// codexRewindState is what a path held at the rewind point, as far as the
// rollout says.
type codexRewindState struct {
	absent  bool
	known   bool
	content []byte
	why     string // neither: why not
	// neither, as it may have been absent: CodexUnknownState.MayBeAbsent
	mayBeAbsent bool
	// how the state was found (CodexRewound.How); for a reversed one,
	// the file it was undone on (the path the patches moved it to, or
	// its own), its id and mode as read.
	how    string
	from   string
	fromID cas.Key
	mode   FileMode
}

// codexRewindStates are the states to put back for a rewind of imported
// Codex session id (workspace ws) to event to, by path; any is false when
// the rollout holds no patch that applied at all (no file to put back, as
// for a session without backups).
func (r *Rook) codexRewindStates(id eventlog.ID, to uint64, ws string) (states map[string]codexRewindState, notes []string, any bool, err error) {
	calls, err := r.rolloutPatchCalls(id)
	if err != nil {
		return nil, nil, false, r.ownRolloutUnread(id, err, "cannot rewind the files", "what the files held at the point is not known", "; then run this again, or put the files back yourself and rewind with --keep-files, which rewinds the conversation only")
	}
	rp := &RolloutPatches{}
	files := map[string]*rolloutFile{}
	states = map[string]codexRewindState{}
	// doubtful: paths a patch the rollout does not say applied (or a
	// change of one that does not read) may have changed: what they hold
	// after it is not known.
	doubtful := map[string]string{}
	// gone: paths an applied patch left with no file, whose record the
	// replay dropped (a file the session added, then deleted or moved
	// away): absent, whatever was there before the session.
	gone := map[string]bool{}
	// A command the session ran (a formatter, sed -i) may have changed
	// any file, and the rollout does not say how: what the replay says a
	// path held is so only if none ran between the patch that last
	// wrote it whole (chain; a later patch's hunks were applied to what
	// the command left) and the point; what a deletion after the point
	// says it held, only if none ran between the point and it.
	cmds, err := r.codexCommandSeqs(id, calls)
	if err != nil {
		return nil, nil, false, err
	}
	lastSeq := map[string]uint64{}
	// The other imported sessions of its family (Codex forks,
	// subagents) wrote the same workspace (codex_family.go): a write of
	// theirs between the patch that last wrote a path whole and the
	// point (by time: chain) makes the replay's state of it not known.
	// Read only when a patch comes at or after the point.
	var fam codexFamily
	var tLo, tHi time.Time
	if slices.ContainsFunc(calls, func(c *codexPatchCall) bool { return c.seq >= to }) {
		own, err := r.codexCallsOf(id, calls)
		if err != nil {
			return nil, nil, false, err
		}
		if fam, err = r.codexFamilyOf(id, ws, own); err != nil {
			return nil, nil, false, err
		}
		// A copy's time is the fork's: its original's is the true one.
		for i, c := range own {
			if t, ok := fam.orig[c.id]; ok && t.Before(c.at) {
				own[i].at, own[i].copy, own[i].stamp = t, true, c.at
			}
		}
		for _, c := range calls {
			if t, ok := fam.orig[c.id]; ok && t.Before(c.at) {
				c.at = t
			}
		}
		if tLo, tHi, err = fam.pointTimes(r, id, to, own); err != nil {
			return nil, nil, false, err
		}
	}
	// chain: the paths whose content a path holds came through since
	// the session's patch that last wrote it whole (an Add File; a
	// deletion, or a move away, leaves it absent), each with the time
	// it came there: a move carries its source's chain. Each later
	// patch's hunks were applied to what the disk held then, so a write
	// of another session's to the content anywhere along it (not only
	// after the last patch) makes what the replay holds a state the file
	// may never have had.
	chain := map[string][]codexChainLink{}
	var afterCalls []codexAfterCall
	take := func(p string, st codexStep, source bool, at uint64, atTime time.Time) {
		if _, ok := states[p]; ok {
			return
		}
		_, had := files[p]
		var s codexRewindState
		if !had && gone[p] && !codexOutside(p) && doubtful[p] == "" {
			s = codexRewindState{absent: true}
		} else {
			s = codexStateOf(files, doubtful, p, st, source)
		}
		lo, hi := lastSeq[p]+1, to
		if links := chain[p]; len(links) > 0 {
			// From the patch that last wrote it whole: a later patch's
			// hunks were applied to what a command left.
			lo = links[0].seq + 1
		}
		deletion := !had && !gone[p] && s.known
		if deletion {
			// Its deletion's content, after the point: a command at the
			// point itself runs after it too (the rewind keeps the
			// events before it).
			lo, hi = to, at
		}
		for _, n := range cmds {
			if (s.known || s.absent) && lo <= n && n < hi {
				s = codexRewindState{why: fmt.Sprintf("the command of event #%d, run after the rollout last says what it held, may have changed it, and the rollout does not say how", n)}
				break
			}
		}
		links, thi, what := chain[p], tHi, fmt.Sprintf("after this session's rollout last says what it held and before event #%d", to)
		if len(links) == 0 {
			links = []codexChainLink{{path: p}} // (not written by the session: any time)
		}
		if deletion {
			links, thi, what = []codexChainLink{{path: p, at: tLo}}, atTime, fmt.Sprintf("between event #%d and the deletion of event #%d that says what it held", to, at)
		}
	others:
		for _, w := range fam.others {
			for i, l := range links {
				lo, hi := l.at, thi
				if i+1 < len(links) {
					hi = links[i+1].at // (moved on then)
				}
				if w.since && !deletion {
					// Counted before the chain too: cautious only
					// (what it wrote before the file was written whole
					// was written over), and what it costs is the
					// file undone from the disk instead.
					lo = time.Time{}
				}
				if (s.known || s.absent) && w.within(lo, hi) && w.touches(l.path) {
					s = codexRewindState{why: w.why(what)}
					break others
				}
			}
		}
		states[p] = s
	}
	for _, c := range calls {
		steps, applied := codexCallSteps(c, ws, rp)
		after := c.seq >= to
		if applied {
			any = true
		}
		if after {
			afterCalls = append(afterCalls, codexAfterCall{c: c, steps: steps, applied: applied})
		}
		switch {
		case applied || c.outcome == "failed" || len(steps) > 0 || !after:
		case c.outcome == "applied":
			notes = append(notes, fmt.Sprintf("the patch of event #%d applied, but the rollout does not say which files it changed: any it changed are left as they are", c.seq))
		default:
			notes = append(notes, fmt.Sprintf("the rollout does not say whether the patch of event #%d applied, nor which files it would change: any it changed are left as they are", c.seq))
		}
		for _, p := range c.bad {
			if after {
				take(codexRel(ws, "", p), codexStep{}, true, c.seq, c.at)
			}
			doubtful[codexRel(ws, "", p)] = fmt.Sprintf("the change of the patch of event #%d does not read", c.seq)
		}
		for _, st := range steps {
			p, moved := st.paths(ws)
			if after {
				take(p, st, true, c.seq, c.at)
				if moved != "" {
					take(moved, st, false, c.seq, c.at)
				}
			}
			if !applied {
				why := fmt.Sprintf("the rollout does not say whether the patch of event #%d, which changes it, applied", c.seq)
				doubtful[p] = why
				if moved != "" {
					doubtful[moved] = why
				}
				continue
			}
			if note := st.apply(files, ws, false); note != "" {
				// Left out of the replay, yet it applied: what the path
				// holds after it is not known.
				doubtful[p] = fmt.Sprintf("the patch of event #%d: %s", c.seq, note)
			}
			for _, q := range []string{p, moved} {
				if _, had := files[q]; q != "" {
					gone[q], lastSeq[q] = !had, c.seq
				}
			}
			switch {
			case moved != "" && moved != p:
				from := chain[p]
				if len(from) == 0 {
					from = []codexChainLink{{path: p, at: c.at, seq: c.seq}}
				}
				chain[moved] = append(slices.Clip(from), codexChainLink{path: moved, at: c.at, seq: c.seq})
				chain[p] = []codexChainLink{{path: p, at: c.at, seq: c.seq}}
			case st.kind() != "update" || len(chain[p]) == 0:
				// Written whole (or deleted), or a file from before the
				// session (whose content the replay does not hold).
				chain[p] = []codexChainLink{{path: p, at: c.at, seq: c.seq}}
			}
		}
	}
	forkWhy, forkRead := "", false
	for p, s := range states {
		switch {
		case s.absent:
			s.how = "absent"
		case s.known && s.how == "":
			s.how = "replayed"
		case !s.known && !codexOutside(p):
			if !forkRead {
				if forkWhy, err = r.codexForkWhy(id); err != nil {
					return nil, nil, false, err
				}
				forkRead = true
			}
			rs, why := r.codexReverse(ws, p, to, afterCalls, cmds, forkWhy, fam.others, tLo)
			switch {
			case rs.known:
				s = rs
			case why != "" && why == s.why:
				s.why += "; nor, for that, can the patches after the point be undone on the file as it is now"
			case why != "":
				s.why += "; nor can the patches after the point be undone on the file as it is now: " + why
			}
		}
		states[p] = s
	}
	return states, notes, any, nil
}

// codexChainLink is a path a file's content was at, from at on (to the
// next link's at, or the point).
type codexChainLink struct {
	path string
	at   time.Time
	seq  uint64 // the patch's event that brought it there
}

// codexStateOf is what p held before step st (source: p is the step's own
// path, not the one it moves the file to), from the patches before it.
func codexStateOf(files map[string]*rolloutFile, doubtful map[string]string, p string, st codexStep, source bool) codexRewindState {
	if codexOutside(p) {
		return codexRewindState{why: "it is outside the workspace: a rewind writes only in it"}
	}
	if why, ok := doubtful[p]; ok {
		return codexRewindState{why: why}
	}
	f := files[p]
	if f == nil {
		for _, r := range files {
			if r.movedFrom == p {
				return codexRewindState{absent: true} // moved away
			}
		}
		// Not written by the session yet: as it was before the session.
		switch {
		case !source, st.kind() == "add":
			// Where a file moved, or a file added: new, as the diff
			// reads it, but Codex's Add File writes whether or not a
			// file is there, and a move writes over its target: it may
			// have existed, and removing it would lose it.
			return codexRewindState{mayBeAbsent: true, why: "the session's first patch of it after that writes it whole (Add File, or a move to it), which Codex does whether or not a file is there: the rollout does not say whether it existed then"}
		case st.op == nil && st.change.Type == "delete" && st.change.Content != nil:
			return codexRewindState{known: true, content: []byte(*st.change.Content), how: "deleted"}
		case st.op == nil && st.change.Type == "":
			return codexRewindState{why: "its change in the patch's patch_apply_end does not read"}
		}
		return codexRewindState{why: "it existed before the session, and the rollout holds only the patches' changes to it, not its content"}
	}
	switch {
	case f.status == "removed":
		return codexRewindState{absent: true}
	case f.isKnown:
		var b []byte
		for _, l := range f.known {
			b = append(append(b, l...), '\n')
		}
		if b == nil {
			b = []byte{}
		}
		return codexRewindState{known: true, content: b}
	case f.status == "added":
		return codexRewindState{why: "the session added it, but a later patch of it did not apply to its lines as rook reads them, or its content does not end with a newline"}
	}
	return codexRewindState{why: "it existed before the session, and the rollout holds only the patches' changes to it, not its content"}
}

// codexRewindChanges are the changes a rewind of imported Codex session
// id to event to makes, from its rollout (nil, with no error, when it
// holds no patch that applied); a *CodexUnknownStatesError when a path's
// state is not known.
func (r *Rook) codexRewindChanges(id eventlog.ID, to uint64, ws string, absent []string) (changes map[string]Change, how []CodexRewound, notes []string, any bool, err error) {
	states, notes, any, err := r.codexRewindStates(id, to, ws)
	if err != nil {
		return nil, nil, nil, false, err
	}
	// The paths the user says did not exist at the point: only those
	// whose state the rollout leaves open that way (a patch after the
	// point that writes them whole); any other is refused, as the
	// rollout says what it held, or that it existed, or nothing of it.
	said := map[string]bool{}
	for _, a := range absent {
		p, err := codexAbsentPath(ws, a)
		if err != nil {
			return nil, nil, nil, false, err
		}
		if said[p] {
			continue // (named twice)
		}
		s, ok := states[p]
		switch {
		case !ok:
			return nil, nil, nil, false, badArgument("--absent %s: no patch of session %s at or after event %d writes it, so the rewind does not touch it", a, id, to)
		case s.known || s.absent:
			return nil, nil, nil, false, badArgument("--absent %s: what it held at event %d is known (%s), and the rewind puts that back: leave out --absent %[1]s", a, to, codexHowSaid(s))
		case !s.mayBeAbsent:
			return nil, nil, nil, false, badArgument("--absent %s: more than whether it existed at event %d is not known (%s): put it back yourself and rewind with --keep-files", a, to, s.why)
		}
		states[p] = codexRewindState{absent: true, how: "said-absent"}
		said[p] = true
	}
	// A file the patches after the point moved, put back from where they
	// moved it: if that one is refused, the user must not put it back
	// before copying it (CodexUnknownState.Holds).
	holds := map[string]string{}
	for p, s := range states {
		if s.known && s.how == "reversed" && s.from != p {
			holds[s.from] = p
		}
	}
	paths := make([]string, 0, len(states))
	for p := range states {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var unknown []CodexUnknownState
	changes = map[string]Change{}
	for _, p := range paths {
		s := states[p]
		switch {
		case s.absent:
			changes[p] = Change{Path: p, Remove: true, transcript: true}
			how = append(how, CodexRewound{Path: p, How: s.how})
		case s.known:
			mode := FileMode{Perm: 0o644}
			if s.how == "reversed" {
				mode = s.mode // (of the file undone on: where the patches moved it, its mode there)
			}
			changes[p] = Change{Path: p, File: FileEntry{ID: cas.ID(s.content), Size: int64(len(s.content)), Mode: mode},
				data: s.content, transcript: true}
			rw := CodexRewound{Path: p, How: s.how, fromID: s.fromID}
			if s.how == "reversed" {
				rw.From = s.from
			}
			how = append(how, rw)
		default:
			unknown = append(unknown, CodexUnknownState{Path: p, Why: s.why, MayBeAbsent: s.mayBeAbsent, Holds: holds[p]})
		}
	}
	if len(unknown) > 0 {
		return nil, nil, notes, any, &CodexUnknownStatesError{Session: id, To: to, Files: unknown}
	}
	return changes, how, notes, any, nil
}

// codexAbsentPath is the workspace-relative path (as a refusal names it)
// of a --absent argument: relative to the workspace, or absolute in it
// (through a link to it, too: the directory above it is resolved).
func codexAbsentPath(ws, a string) (string, error) {
	switch {
	case a == "":
		return "", badArgument("--absent needs a path: the file's, as the refusal names it")
	case strings.HasSuffix(a, "/"):
		return "", badArgument("--absent %s: that names a directory; --absent takes a file the refusal names", a)
	}
	q := a
	if filepath.IsAbs(q) {
		if dir, err := filepath.EvalSymlinks(filepath.Dir(q)); err == nil {
			q = filepath.Join(dir, filepath.Base(q))
		}
	}
	p := codexRel(ws, "", q)
	if p == "." || p == ".." || strings.HasPrefix(p, "../") || rolloutAbs(p) {
		return "", badArgument("--absent %s: it is not in the session's workspace %s (a relative path is taken from there, as the refusal names it)", a, ws)
	}
	return p, nil
}

// absentFlag is --absent p as a shell reads it back.
func absentFlag(p string) string {
	dash, plain := strings.HasPrefix(p, "-"), p != ""
	for _, c := range p {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._-/+@%,:", c)) {
			plain = false
			break
		}
	}
	if !plain {
		p = "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
	}
	if dash {
		return "--absent=" + p // (else read as a flag)
	}
	return "--absent " + p
}

// codexHowSaid says, in words, what a known (or absent) state is.
func codexHowSaid(s codexRewindState) string {
	switch {
	case s.absent:
		return "absent"
	case s.how == "reversed":
		return "the patches after it undone on the file as it is on disk now"
	}
	return "its content"
}

// CodexRewound says how a rewind of an imported Codex session found what
// a file held at the rewind point: "replayed" (the session added it whole
// before the point, and each later patch there applied to its lines),
// "deleted" (the first patch after the point deleted it, and holds what
// it deleted), "absent" (deleted or moved away before the point),
// "reversed" (the patches after the point undone on the file as it is on
// disk now: From, the file they were undone on), "said-absent" (the
// rollout leaves open whether it existed, and RewindOptions.Absent says
// it did not).
type CodexRewound struct {
	Path string `json:"path"`
	How  string `json:"how"`
	From string `json:"from,omitempty"`
	// Disk is what the rewind found there when it did not do what How
	// says: of a file to write, DiskAsThen (it held that already); of
	// a file to remove (How absent or said-absent), when it was not a
	// file it removed, DiskNotThere, DiskDirRemoved, DiskDirKept or
	// DiskUnderLink. Empty: the rewind did what How says (wrote the
	// file, or removed the file there).
	Disk   string  `json:"disk,omitempty"`
	fromID cas.Key // reversed: the id of From's content as read
}

// CodexRewound.Disk values.
const (
	// DiskNotThere: nothing was there, as the state says it was then:
	// nothing was removed.
	DiskNotThere = "not-there"
	// DiskDirRemoved: a directory was there (the session's patches
	// added files in it after the point), and was removed once the
	// rewind had removed those, empty.
	DiskDirRemoved = "dir-removed"
	// DiskDirKept: a directory was there, and holds what no state of
	// the rewind names (a file put there since): left as it is, with it
	// (RewindReport.DirsKept).
	DiskDirKept = "dir-kept"
	// DiskUnderLink: a path above it the rewind removed was a link
	// there (to a directory), which led to something at this path: the
	// link was removed, and what it led to is left as it is (the rewind
	// removes nothing through a link it removes).
	DiskUnderLink = "under-link"
)

// codexCommandTools label the tool calls that run a command, which may
// change files the rollout's patches do not say.
var codexCommandTools = map[string]bool{"shell": true, "local_shell": true, "container.exec": true, "shell_command": true, "exec_command": true, "write_stdin": true}

// codexCommandSeqs are the seqs, in order, of a session's tool calls
// that run a command and are not one of its patch calls (or are, in a
// script that runs more after the patch: codexPatchCall.more).
func (r *Rook) codexCommandSeqs(id eventlog.ID, calls []*codexPatchCall) ([]uint64, error) {
	patch := map[uint64]bool{}
	for _, c := range calls {
		patch[c.seq] = !c.more // (a script that runs more is a command too)
	}
	var seqs []uint64
	for from := uint64(0); ; {
		evs, err := r.Log.Read(id, from, 1024)
		if err != nil {
			return nil, err
		}
		if len(evs) == 0 {
			return seqs, nil
		}
		for _, ev := range evs {
			if ev.Kind == eventlog.KindToolCall && codexCommandTools[ev.Label] && !patch[ev.Seq] {
				seqs = append(seqs, ev.Seq)
			}
		}
		from = evs[len(evs)-1].Seq + 1
	}
}

// codexForkWhy says why the disk may not be what the patches of session id
// left, when it is a fork (made in rook, or a Codex fork imported): its
// parent went on after the fork point, and a patch or command of it there
// may have changed files the fork's patches do not say ("" when none
// did, or the session is no fork). A fork a rewind of the files made (it
// begins with that rewind's capture) had its parent's patches after the
// point undone on the disk by it; its commands were not.
func (r *Rook) codexForkWhy(id eventlog.ID) (string, error) {
	depth := 0
	for child := id; ; {
		m, err := r.Log.ReadMeta(child)
		if err != nil {
			return "", err
		}
		pid, at, ok := m.ForkedFrom()
		if !ok {
			return "", nil
		}
		rewound := r.rewindFork(child, at)
		if rewound {
			// The rewind that made it undone (its printed undo: a rewind
			// of it to its capture of the disk before): the files are as
			// they were before that rewind, the parent's patches after
			// the point on them again, not undone as the rest assumes.
			undo, err := r.undoneBy(child, at)
			if err != nil {
				return "", err
			}
			if undo != nil {
				return fmt.Sprintf("session %s, of this session's line, is the fork a rewind of session %s to event %d made, and that rewind was undone since (session %s): the files are as they were before it, not as its patches leave them: rewind session %s instead", child, pid, at, *undo, pid), nil
			}
		}
		var calls []*codexPatchCall
		var cmds []uint64
		calls, err = r.rolloutPatchCalls(pid)
		if err == nil {
			cmds, err = r.codexCommandSeqs(pid, calls)
		}
		if err != nil {
			return fmt.Sprintf("this session is a fork of session %s at event %d, which cannot be read (%v): what it did after that, which may have changed the file, is not known", pid, at, err), nil
		}
		for _, c := range calls {
			if c.seq >= at && !rewound {
				return fmt.Sprintf("this session is a fork of session %s at event %d, and the patch of event #%d there, after the fork, may have changed the file as it is now: rewind session %s instead (its events before %d are this one's)", pid, at, c.seq, pid, at), nil
			}
		}
		for _, n := range cmds {
			if n >= at && rewound {
				return fmt.Sprintf("this session is a fork a rewind of session %s to event %d made, and the command of event #%d there, after the fork, may have changed the file as it is now, and the rollout does not say how", pid, at, n), nil
			}
			if n >= at {
				return fmt.Sprintf("this session is a fork of session %s at event %d, and the command of event #%d there, after the fork, may have changed the file as it is now: rewind session %s instead (its events before %d are this one's)", pid, at, n, pid, at), nil
			}
		}
		if depth++; depth > 1000 {
			return "its forks' chain of parents does not end", nil
		}
		child = pid
	}
}

// rewindFork says whether session id, a fork at event at, is one a rewind
// of the files made: it begins there with that rewind's capture of the
// disk before it.
func (r *Rook) rewindFork(id eventlog.ID, at uint64) bool {
	evs, err := r.Log.Read(id, at, 1)
	return err == nil && len(evs) == 1 && evs[0].Kind == eventlog.KindCheckpoint && strings.HasPrefix(evs[0].Label, beforeRewindPrefix)
}

// undoneBy is the session of a rewind of session id (a rewind's fork at
// event at) to its capture of the disk before, or to before it, which
// gave the disk back as it was before id's rewind; nil when none was.
func (r *Rook) undoneBy(id eventlog.ID, at uint64) (*eventlog.ID, error) {
	children, err := r.Log.Children(id)
	if err != nil {
		return nil, err
	}
	for _, c := range children {
		if pid, cat, ok := c.ForkedFrom(); ok && pid == id && cat <= at && r.rewindFork(c.ID, cat) {
			return &c.ID, nil
		}
	}
	return nil, nil
}

// codexAfterCall is a patch call at or after a rewind point, with the
// steps codexCallSteps gives it.
type codexAfterCall struct {
	c       *codexPatchCall
	steps   []codexStep
	applied bool
}

// codexReverseMax bounds the file a rewind reads to undo patches on.
var codexReverseMax int64 = 64 << 20

// codexReverse is what path p held at rewind point to, found by undoing
// the applied patches at or after it (calls) on the file as it is on disk
// now, as `git apply -R` would: the file the patches leave p's at the
// end (followed through its moves) must be there, a regular file, and
// exactly what they left: every hunk of each reverses (reverseCodexChunks,
// reverseUnifiedHunks), and no command the session ran after the point
// (cmds) may have written it, nor a patch whose changes the rollout does
// not hold. why says why not: nothing is guessed; "" when its first
// patch after the point is no update (an Add File, a deletion, a move of
// another file over it), which says why itself.
func (r *Rook) codexReverse(ws, p string, to uint64, calls []codexAfterCall, cmds []uint64, forkWhy string, others []codexOtherWrite, tTo time.Time) (codexRewindState, string) {
	// Follow the file from p through the patches, as the undo's steps.
	cur := p
	var undo []codexAfterStep
	for _, ac := range calls {
		c := ac.c
		for _, b := range c.bad {
			if codexRel(ws, "", b) != cur {
				continue
			}
			if len(undo) == 0 {
				return codexRewindState{}, "" // (codexStateOf says so)
			}
			return codexRewindState{}, fmt.Sprintf("the change of the patch of event #%d to it does not read", c.seq)
		}
		if len(ac.steps) == 0 && c.outcome != "failed" && len(c.bad) == 0 {
			return codexRewindState{}, fmt.Sprintf("the patch of event #%d may have changed it, and the rollout does not say which files it changed", c.seq)
		}
		for _, st := range ac.steps {
			sp, moved := st.paths(ws)
			if sp != cur && moved != cur {
				continue
			}
			if !ac.applied {
				return codexRewindState{}, fmt.Sprintf("the rollout does not say whether the patch of event #%d, which changes it, applied", c.seq)
			}
			if len(undo) == 0 && (sp != cur || st.kind() != "update") {
				// Its first patch after the point writes it whole,
				// moves a file over it or deletes it: the state
				// there is not the disk's to say (codexStateOf says why).
				return codexRewindState{}, ""
			}
			switch {
			case sp != cur:
				return codexRewindState{}, fmt.Sprintf("the patch of event #%d moved another file over it", c.seq)
			case st.kind() == "add":
				return codexRewindState{}, fmt.Sprintf("the patch of event #%d wrote it whole over what it held", c.seq)
			case st.kind() == "delete":
				return codexRewindState{}, fmt.Sprintf("the patch of event #%d deleted it, and the rollout does not hold what it held then", c.seq)
			case st.kind() != "update":
				return codexRewindState{}, fmt.Sprintf("the patch of event #%d changed it in a way rook does not know", c.seq)
			case st.op == nil && st.change.UnifiedDiff == nil:
				return codexRewindState{}, fmt.Sprintf("the rollout does not hold the change the patch of event #%d made to it", c.seq)
			}
			undo = append(undo, codexAfterStep{seq: c.seq, st: st, at: cur})
			if moved != "" {
				cur = moved
			}
		}
	}
	if len(undo) == 0 {
		return codexRewindState{}, "no patch after the point changes it"
	}
	for _, n := range cmds {
		if n >= to {
			return codexRewindState{}, fmt.Sprintf("the command of event #%d, run after the point, may have changed it, and the rollout does not say how", n)
		}
	}
	if forkWhy != "" {
		return codexRewindState{}, forkWhy
	}
	// Another session of its fork family that wrote it (or any file)
	// after the point: the disk holds that too.
	chain := []string{cur}
	for _, u := range undo {
		chain = append(chain, u.at)
	}
	for _, w := range others {
		if w.within(tTo, time.Time{}) && w.touches(chain...) {
			return codexRewindState{}, w.why(fmt.Sprintf("after this session's event #%d", to))
		}
	}
	// The file as it is now.
	real, err := realRoot(ws)
	if err != nil {
		return codexRewindState{}, fmt.Sprintf("the workspace cannot be read (%v)", err)
	}
	if _, err := resolveInRoot(filepath.Clean(ws), real, cur, false); err != nil {
		return codexRewindState{}, fmt.Sprintf("%s cannot be read (%v)", cur, err)
	}
	abs := filepath.Join(real, filepath.FromSlash(cur))
	fi, err := os.Lstat(abs)
	switch {
	case notExist(err):
		return codexRewindState{}, fmt.Sprintf("%s, where the patches left it, is not there: it changed since the session", cur)
	case err != nil:
		return codexRewindState{}, fmt.Sprintf("%s cannot be read (%v)", cur, err)
	case !fi.Mode().IsRegular():
		return codexRewindState{}, fmt.Sprintf("%s, where the patches left a file, is not a regular file now: it changed since the session", cur)
	case fi.Size() > codexReverseMax:
		return codexRewindState{}, fmt.Sprintf("%s is larger (%d bytes) than a rewind reads to undo patches on (%d bytes)", cur, fi.Size(), codexReverseMax)
	}
	b, err := readRegular(abs, cur, codexReverseMax)
	if err != nil {
		return codexRewindState{}, fmt.Sprintf("%s cannot be read (%v)", cur, err)
	}
	text, why := splitCodexText(b)
	if why != "" && slices.IndexFunc(undo, func(u codexAfterStep) bool { return u.st.op != nil }) < 0 {
		// Its endings mixed (Codex, on Linux and macOS, writes the lines
		// a patch adds to a CRLF file with LF), but every change to undo
		// is a unified diff, whose lines keep their own endings: its
		// lines as they are, each "\r" in its line.
		text, why = rawCodexText(b), ""
	}
	if why != "" {
		return codexRewindState{}, fmt.Sprintf("%s as it is now: %s", cur, why)
	}
	for k := len(undo) - 1; k >= 0; k-- {
		u := undo[k]
		if u.st.op != nil {
			text, why = reverseCodexChunks(text, u.st.op.Chunks)
		} else {
			text, why = reverseUnifiedHunks(text, *u.st.change.UnifiedDiff)
		}
		if why != "" {
			return codexRewindState{}, fmt.Sprintf("the patch of event #%d does not reverse on %s as it is now: %s", u.seq, cur, why)
		}
		cur = u.at
	}
	content := text.bytes()
	if content == nil {
		content = []byte{} // (an empty file: data, not "not held")
	}
	return codexRewindState{known: true, content: content, how: "reversed", from: undo[len(undo)-1].dest(ws), fromID: cas.ID(b),
		mode: fileMode(fi)}, "" // (its setuid, setgid and sticky bits too)
}

// codexAfterStep is one step of a file's undo: the patch's (at seq), on
// the file at path at (before any move it makes).
type codexAfterStep struct {
	seq uint64
	st  codexStep
	at  string
}

// dest is where the step leaves the file.
func (u codexAfterStep) dest(ws string) string {
	if _, moved := u.st.paths(ws); moved != "" {
		return moved
	}
	return u.at
}

// eventTime is the time of session id's event seq; a time after any
// when there is none (seq is its end).
func (r *Rook) eventTime(id eventlog.ID, seq uint64) (time.Time, error) {
	evs, err := r.Log.Read(id, seq, 1)
	if err != nil {
		return time.Time{}, err
	}
	if len(evs) == 0 || evs[0].Seq != seq {
		return time.Unix(1<<40, 0), nil
	}
	return evs[0].Time, nil
}
