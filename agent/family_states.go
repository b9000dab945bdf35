package agent

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rookhq/rook/eventlog"
)

// A Claude Code subagent (or fork) edits files in its parent's workspace,
// and its edit results and backups are in its own transcript, not the
// parent's. Rewinding the parent to before a Task call took each file's
// first state in the parent's own events after the point: an edit of
// a.txt after the subagent's says the file as the subagent left it, a
// state it never had at the point; a file only the subagent changed was
// left as it is, unsaid. A rewind now takes, for each path, the earliest
// state by time after the point among the session's own events and
// those of the imported sessions linked to it (family.go), wherever they
// were recorded, of the files in its workspace.

// familyState is a path's earliest state in another session.
type familyState struct {
	at      time.Time
	session eventlog.ID
	change  *Change         // its state, or
	unknown *UncomparedFile // none known there
}

// memberState is a path's state in a member of a family, and when.
type memberState struct {
	path string
	familyState
}

// memberStates are the first states of family member o (an imported
// Claude Code session) of the paths of workspace ws, from its first
// event whose time is after's: wherever it was recorded (its captures,
// of its own cwd, named from ws: rerootManifest), those outside ws left
// out. An error when its session does not read: its log, or an object
// of its lines (capturedStatesIn, member).
func (r *Rook) memberStates(o eventlog.ID, ws string, after func(time.Time) bool) ([]memberState, error) {
	from, err := r.firstEventWhen(o, after)
	if err != nil {
		return nil, err
	}
	so, err := r.capturedStatesIn(o, from, true, ws, true)
	if err != nil {
		return nil, err
	}
	if so.Root != "" && filepath.Clean(so.Root) != ws {
		return nil, nil // (captures of a root not absolute: none named from ws)
	}
	var out []memberState
	for _, p := range sortedKeys(so.First) {
		c := so.First[p]
		t, err := r.eventTime(o, so.seq[p])
		if err != nil {
			return nil, err
		}
		if after(t) {
			out = append(out, memberState{p, familyState{at: t, session: o, change: &c}})
		}
	}
	for _, u := range so.Unknown {
		t, err := r.eventTime(o, so.unknownAt[u.Path])
		if err != nil {
			return nil, err
		}
		if after(t) {
			out = append(out, memberState{u.Path, familyState{at: t, session: o, unknown: &u}})
		}
	}
	return out, nil
}

// mergeFamilyStates merges into st (the first states of imported Claude
// Code session id from event to, workspace ws) those of its family that
// come earlier, each said in st.linkedNotes. For a diff (forDiff, from
// 0), only those of its subagents: what it set them to do is its change,
// while a fork's or its parent's is theirs; and what it cannot read is
// said in a note, not refused.
func (r *Rook) mergeFamilyStates(id eventlog.ID, to uint64, ws string, st *firstStates, forDiff bool) error {
	fam, err := r.importedFamilyOf(id, "Claude Code")
	if err != nil {
		return err
	}
	if fam.tooMany != "" {
		if forDiff {
			st.linkedNotes = append(st.linkedNotes, fam.tooMany+": files only its subagents changed are not shown")
			return nil
		}
		return fmt.Errorf("cannot rewind the files: %s, so the files' states after the point may hold what they wrote; put them back yourself and rewind with --keep-files, which rewinds the conversation only", fam.tooMany)
	}
	for gone, child := range fam.removed {
		if forDiff || slices.Contains(fam.line, gone) || len(st.First) == 0 || r.claudeContinuation(child) {
			// The line's own: a fork holds its copy of its events. Or
			// the session sent to the background that child goes on
			// with: it wrote nothing after child began. (A diff reads
			// no parent.)
			continue
		}
		// What it wrote after its fork (or subagent) began, in the same
		// workspace, is not known: any state after that may hold it.
		return fmt.Errorf("cannot rewind the files: session %s, which %s came from, was removed from rook since (session rm), and it may have written the workspace's files: what it wrote after %s began is not known, so the files' states after the point may hold it; put them back yourself and rewind with --keep-files, which rewinds the conversation only", gone, child, child)
	}
	// A subagent removed since (or never imported) that a Task result
	// after the point reports: nothing else names it
	// (family_subagents.go). A subagent whose session does not read (its
	// log, or an object of its lines, damaged or missing) wrote what is
	// not known: a diff says so in a note, as it says a missing one, and
	// shows the rest (unread); a rewind refuses.
	var reported map[string]bool
	var unread map[eventlog.ID]error
	if forDiff {
		unread = map[eventlog.ID]error{}
		miss, rep, err := r.missingSubagents(id, to, fam, true, unread)
		reported = rep
		if err != nil {
			return err
		}
		for _, s := range miss {
			if s.unread != nil {
				// (A Task result that does not read: unreadTaskResult.)
				st.linkedNotes = append(st.linkedNotes, r.unreadTaskNote(s, id, fam))
				if s.session == id {
					st.unreadTasks = append(st.unreadTasks, s.seq)
				}
				continue
			}
			hint := ""
			if s.path != "" {
				hint = fmt.Sprintf("`rook import claude-code %s` imports it, linked", ShellQuote(s.path))
			}
			st.linkedNotes = append(st.linkedNotes, missingSubagentNote("Claude Code", "Task result", id, fam, s, hint))
			st.missingSubagents = append(st.missingSubagents, s.agent)
		}
	} else if err := r.missingSubagentRefusal(id, to, fam); err != nil {
		var mu *memberUnread
		if errors.As(err, &mu) {
			return r.unreadMemberRefusal(fam, mu.session, ws, mu.err)
		}
		return err
	}
	var subs map[eventlog.ID]bool
	if forDiff {
		subs = r.diffSubagents(fam, reported)
	}
	// noteUnread says, for a diff, each subagent whose session does not
	// read, in the family's order.
	noteUnread := func() {
		for _, o := range fam.members {
			if err, ok := unread[o]; ok {
				st.linkedNotes = append(st.linkedNotes, r.unreadMemberNote(id, fam, o, ws, err))
				st.unreadSubagents = append(st.unreadSubagents, o.String())
			}
		}
	}
	// Each is read wherever it was recorded (importedFamilyOf), its
	// paths named from ws and those outside ws left out: a subagent
	// started after a `cd ../lib` edits ws's files by their absolute
	// paths, and its own directory's are not the rewind's.
	var members []eventlog.ID
	where := map[eventlog.ID]string{}
	for _, o := range fam.members {
		if forDiff && !subs[o] {
			continue
		}
		m, err := r.Log.ReadMeta(o)
		if err != nil {
			if !forDiff {
				return r.unreadMemberRefusal(fam, o, ws, err)
			}
			unread[o] = err
			continue
		}
		if src := r.ImportedFrom(m); src == nil || src.Format != FormatClaudeCode {
			delete(unread, o) // (its lines hold no Claude Code edit results)
			continue
		}
		if _, ok := unread[o]; ok {
			continue
		}
		members = append(members, o)
		where[o] = m.Workspace
	}
	if len(members) == 0 {
		noteUnread()
		return nil
	}
	after, err := r.afterThePoint(id, to, fam)
	if err != nil {
		return err
	}
	// The time of each path's state so far, the session's own.
	own := map[string]time.Time{}
	for p := range st.First {
		if own[p], err = r.eventTime(id, st.seq[p]); err != nil {
			return err
		}
	}
	for p, seq := range st.unknownAt {
		if own[p], err = r.eventTime(id, seq); err != nil {
			return err
		}
	}
	won := map[string]familyState{}
	earlier := func(p string, t time.Time) bool {
		if w, ok := won[p]; ok {
			return t.Before(w.at)
		}
		b, ok := own[p]
		return !ok || t.Before(b)
	}
	// What each is, and where it was recorded, in words.
	kin := map[eventlog.ID]string{}
	for _, o := range members {
		kin[o] = fam.kin[o] + ", " + recordedIn(ws, where[o])
	}
	for _, o := range members {
		// All it says is read before any is taken: one that does not
		// read gives none.
		states, err := r.memberStates(o, ws, after)
		if err != nil {
			if !forDiff {
				return r.unreadMemberRefusal(fam, o, ws, err)
			}
			unread[o] = err
			continue
		}
		for _, s := range states {
			if !earlier(s.path, s.at) {
				continue
			}
			if c := s.change; c != nil && c.transcript && c.src != ([16]byte{}) {
				// A fork's copy of its parent's line (forkedFrom): the
				// original is the parent's, read there.
				if body, _, err := r.readBody(c.src); err == nil && bytes.Contains(body, []byte(`"forkedFrom"`)) {
					continue
				}
			}
			won[s.path] = s.familyState
		}
	}
	noteUnread()
	taken := false
	for _, p := range sortedKeys(won) {
		w := won[p]
		if old, had := st.First[p]; had && old.transcript {
			st.FromTranscript--
		}
		delete(st.First, p)
		st.dropUnknown(p)
		if w.unknown != nil {
			st.Unknown = append(st.Unknown, UncomparedFile{Path: p, Error: fmt.Sprintf("%s (in session %s, %s, which changed it after the point, before this session did)", w.unknown.Error, w.session, fam.kin[w.session])})
			continue
		}
		st.First[p] = *w.change
		st.seq[p] = to // (another session's seq is no place in this one's)
		if w.change.transcript {
			st.FromTranscript++
		} else {
			taken = true
		}
		if st.Root == "" {
			st.Root = ws
		}
		if forDiff {
			st.linkedNotes = append(st.linkedNotes, fmt.Sprintf("%s: compared with the file as it was before session %s (%s) changed it", p, w.session, fam.kin[w.session]))
		} else {
			st.linkedNotes = append(st.linkedNotes, fmt.Sprintf("%s: put back as it was when session %s (%s) first changed it after the point, before this session did", p, w.session, kin[w.session]))
		}
	}
	if taken {
		st.Captures++
	}
	slices.SortFunc(st.Unknown, func(a, b UncomparedFile) int { return strings.Compare(a.Path, b.Path) })
	return nil
}

// familyStatesKnown says whether a rewind of imported Claude Code
// session id to event to, which has no file state of its own, knows the
// files of its workspace from its family's (mergeFamilyStates): an
// imported Claude Code session linked to it holds a state of one (a
// capture, or an edit result saying the file before), in its line (not
// past a rook fork's end: lineEnd). Those after the point, earlier than
// the session's own, are already the rewind's; those before it say that
// the family's changes were before the point, as the session's own
// would: nothing to put back is then the rewind's answer, not a want of
// backups. A family whose edit results say no file before them (a
// subagent's, as Claude Code writes them) knows none, as a session whose
// own say none: such a rewind is still refused (NoFileBackupsError), as
// nothing says the files were at the point as they are.
func (r *Rook) familyStatesKnown(id eventlog.ID, to uint64) (bool, error) {
	ws := r.transcriptWorkspace(id)
	if ws == "" || r.rewindFork(id, to) {
		return false, nil
	}
	fam, err := r.importedFamilyOf(id, "Claude Code")
	if err != nil || fam.tooMany != "" {
		return false, err
	}
	end, err := r.lineEnd(fam)
	if err != nil {
		return false, err
	}
	for _, o := range fam.members {
		m, err := r.Log.ReadMeta(o)
		if err != nil {
			return false, r.unreadMemberRefusal(fam, o, ws, err)
		}
		if src := r.ImportedFrom(m); src == nil || src.Format != FormatClaudeCode {
			continue
		}
		so, err := r.capturedStatesIn(o, 0, true, ws, true)
		if err != nil {
			return false, r.unreadMemberRefusal(fam, o, ws, err)
		}
		if so.Root != "" && filepath.Clean(so.Root) != ws {
			continue
		}
		for p, c := range so.First {
			if c.transcript && c.src != ([16]byte{}) {
				if body, _, err := r.readBody(c.src); err == nil && bytes.Contains(body, []byte(`"forkedFrom"`)) {
					continue // (a fork's copy of its parent's: the parent's)
				}
			}
			t, err := r.eventTime(o, so.seq[p])
			if err != nil {
				return false, err
			}
			if end.IsZero() || t.Before(end) {
				return true, nil
			}
		}
	}
	return false, nil
}

// claudeContinuation says whether session id is a Claude Code session
// sent to the background, going on in a new file: its first lines say
// "sessionKind":"bg" (claudeMapper.continuedIn).
func (r *Rook) claudeContinuation(id eventlog.ID) bool {
	evs, err := r.Log.Read(id, 0, 8)
	if err != nil {
		return false
	}
	for _, ev := range evs {
		if body, imported, err := r.readBodyWithin(ev.Body, 1<<20); err == nil && imported && bytes.Contains(body, []byte(`"sessionKind":"bg"`)) {
			return true
		}
	}
	return false
}

// dropUnknown takes p out of st.Unknown.
func (st *firstStates) dropUnknown(p string) {
	st.Unknown = slices.DeleteFunc(st.Unknown, func(u UncomparedFile) bool { return u.Path == p })
}

// afterThePoint says whether a time of another session of family fam
// (that of imported Claude Code session id) is after event to of id.
func (r *Rook) afterThePoint(id eventlog.ID, to uint64, fam importedFamily) (func(time.Time) bool, error) {
	after, _, err := r.pointSides(id, to, fam)
	return after, err
}

// pointSides says whether a time of another session of family fam (that
// of imported Claude Code session id) is after event to of id
// (afterThePoint), and whether it is before it; one past the end of a
// rook fork's line is neither.
func (r *Rook) pointSides(id eventlog.ID, to uint64, fam importedFamily) (after, before func(time.Time) bool, err error) {
	// After the point: at or after its event's time, and after the time
	// of the event before it (a line without a time, a file-history
	// snapshot, bears the one before: an edit at that time came before).
	tTo, err := r.eventTime(id, to)
	if err != nil {
		return nil, nil, err
	}
	var tPrev time.Time
	if to > 0 {
		if tPrev, err = r.eventTime(id, to-1); err != nil {
			return nil, nil, err
		}
	}
	// A rook fork's line ends at its fork point (lineEnd): what came
	// after that in the session it was forked from, its subagents' edits
	// too, is not its line's.
	tCap, err := r.lineEnd(fam)
	if err != nil {
		return nil, nil, err
	}
	inLine := func(t time.Time) bool { return tCap.IsZero() || t.Before(tCap) }
	after = func(t time.Time) bool {
		return !t.Before(tTo) && (to == 0 || t.After(tPrev)) && inLine(t)
	}
	before = func(t time.Time) bool {
		return (t.Before(tTo) || to > 0 && !t.After(tPrev)) && inLine(t)
	}
	return after, before, nil
}

// firstEventWhen is the seq of session id's first event whose time is
// when's (its end when none is).
func (r *Rook) firstEventWhen(id eventlog.ID, when func(time.Time) bool) (uint64, error) {
	for from := uint64(0); ; {
		evs, err := r.Log.Read(id, from, 1024)
		if err != nil {
			return 0, err
		}
		if len(evs) == 0 {
			return from, nil
		}
		for _, ev := range evs {
			if when(ev.Time) {
				return ev.Seq, nil
			}
		}
		from = evs[len(evs)-1].Seq + 1
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
