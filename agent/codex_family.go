package agent

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/rookhq/rook/eventlog"
)

// Codex forks and subagents share their workspace with the session they
// came from. An imported fork holds a copy of its parent's lines up to
// the fork (the same call ids, written again at the fork's time), then
// its own; the parent's file goes on with its own. A patch or command in
// one of them that is not in the other's rollout wrote the disk without
// the other saying so: a rewind of one that takes the disk for what its
// own patches left (undoing them on it, or replaying them up to the
// point) must count the other's writes too, when they came where that
// matters. Their times say when: an imported event's time is its rollout
// line's, and a copied call's true time is its original's.

// codexOtherWrite is a patch or command of another imported session of
// the same family that is not one of this session's own calls.
type codexOtherWrite struct {
	session eventlog.ID
	kin     string // what that session is, and where it was recorded, in words
	seq     uint64
	at      time.Time
	command bool
	// paths a patch writes (relative to the workspace, as the rewind's);
	// nil for a command, or a patch whose paths are not known: any.
	paths []string
	// unknown: what the session wrote cannot be read (why says why): it
	// counts wherever, whenever.
	unknown string
	id      string // its call id
	// since: it may have written any file at any time from at on (why
	// says why: a parent removed since), up to until when it is set (a
	// Codex subagent its family's rollouts say was finished by then).
	since    bool
	sinceWhy string
	until    time.Time
}

// touches says whether w may have written any of paths.
func (w codexOtherWrite) touches(paths ...string) bool {
	if w.paths == nil {
		return true
	}
	for _, p := range paths {
		if slices.Contains(w.paths, p) {
			return true
		}
	}
	return false
}

// within says whether w came in [lo, hi] (hi zero: no end).
func (w codexOtherWrite) within(lo, hi time.Time) bool {
	switch {
	case w.unknown != "":
		return true
	case w.since:
		return (hi.IsZero() || !w.at.After(hi)) && (w.until.IsZero() || !w.until.Before(lo))
	}
	return !w.at.Before(lo) && (hi.IsZero() || !w.at.After(hi))
}

// why says what w is, for a refusal.
func (w codexOtherWrite) why(what string) string {
	switch {
	case w.unknown != "":
		return w.unknown
	case w.since:
		return w.sinceWhy
	}
	kind := "patch"
	if w.command {
		kind = "command"
	}
	return fmt.Sprintf("session %s (%s) ran the %s of event #%d at %s, %s: it may have changed the file, and this session's rollout does not hold it", w.session, w.kin, kind, w.seq, w.at.UTC().Format("2006-01-02 15:04:05.000"), what)
}

// codexCopyWindow is how long after a Codex fork's session_meta its
// copy of its parent's lines may still be being written.
const codexCopyWindow = time.Second

// codexFamily is what a rewind of one session reads of the others.
type codexFamily struct {
	others []codexOtherWrite
	// orig is the earliest time of each call id among the family's
	// calls: a copy's original's.
	orig map[string]time.Time
}

// codexFamilyOf reads the imported sessions linked to session id by
// parent links whose child is imported (a Codex fork or subagent), up or
// down (from the imported session id is a rook fork of, if it is one):
// their patches and commands that are not among the calls of id's line
// (by call id: a fork's copy of its parent's lines has the same ones),
// and the times of every call they have. A patch that did not apply is
// none. A session that cannot be read, or a family too big to read,
// counts as a write of any file at any time, named. idCalls are id's own
// calls, read already.
func (r *Rook) codexFamilyOf(id eventlog.ID, ws string, idCalls []codexCall) (codexFamily, error) {
	fam := codexFamily{orig: map[string]time.Time{}}
	lf, err := r.importedFamilyOf(id, "Codex")
	if err != nil {
		return fam, err
	}
	if lf.tooMany != "" {
		fam.others = append(fam.others, codexOtherWrite{unknown: lf.tooMany})
	}
	// The calls of id's line are its own (codexForkWhy counts what its
	// rook forks' parents did after the fork).
	own, err := r.codexLineCalls(id, lf, idCalls)
	if err != nil {
		return fam, err
	}
	for _, o := range lf.members {
		kin := r.memberKin(lf, o, ws)
		if err := r.codexFamilyWrites(&fam, o, kin, ws, own); err != nil {
			if errors.Is(err, eventlog.ErrNoSession) {
				continue
			}
			fam.others = append(fam.others, codexOtherWrite{session: o, unknown: fmt.Sprintf("session %s (%s) cannot be read (%v), so what it wrote is not known", o, kin, err)})
		}
	}
	// A copy of a call, in another fork, is timed by its original, and
	// counted once: the earliest (the original's, where it is read).
	sort.SliceStable(fam.others, func(i, j int) bool { return fam.others[i].at.Before(fam.others[j].at) })
	seen := map[string]bool{}
	fam.others = slices.DeleteFunc(fam.others, func(w codexOtherWrite) bool {
		if w.id == "" {
			return false
		}
		dup := seen[w.id]
		seen[w.id] = true
		return dup
	})
	for i, w := range fam.others {
		if t, ok := fam.orig[w.id]; ok && w.id != "" && t.Before(w.at) {
			fam.others[i].at = t
		}
	}
	// A parent removed since (session rm): what it wrote after its fork
	// was made, any file at any time from then, is not known.
	for gone, child := range lf.removed {
		if slices.Contains(lf.line, gone) {
			continue // (the line's own: codexForkWhy)
		}
		t, err := r.eventTime(child, 0)
		if err != nil {
			return fam, err
		}
		fam.others = append(fam.others, codexOtherWrite{session: gone, at: t, since: true,
			sinceWhy: fmt.Sprintf("session %s, which %s came from, was removed from rook since (session rm), so what it wrote after %s was forked from it (%s) is not known", gone, child, child, t.UTC().Format("2006-01-02 15:04:05.000"))})
	}
	// A subagent a spawn_agent output names, held by no imported
	// session linked to it (removed since, or never imported): what it
	// wrote from its spawn on is not known (codex_family_subagents.go).
	missing, err := r.codexMissingSubagents(id, lf)
	if err != nil {
		return fam, err
	}
	fam.others = append(fam.others, missing...)
	return fam, nil
}

// codexLineCalls are the call ids of session id's line (lf.line: it and
// the rook forks up to an imported session): its own calls, of which a
// Codex fork's copy of its parent's lines (or a subagent's spawned with
// its parent's history) holds copies. idCalls are id's, read already.
func (r *Rook) codexLineCalls(id eventlog.ID, lf importedFamily, idCalls []codexCall) (map[string]bool, error) {
	own := map[string]bool{}
	for _, s := range lf.line {
		calls, err := idCalls, error(nil)
		if s != id {
			calls, err = r.codexCalls(s)
		}
		if errors.Is(err, eventlog.ErrNoSession) {
			continue // (removed since: its fork holds its calls before the point)
		}
		if err != nil {
			return nil, err
		}
		for _, c := range calls {
			if c.id != "" { // (a call without an id is no one's copy)
				own[c.id] = true
			}
		}
	}
	return own, nil
}

// codexFamilyWrites adds session o's calls to fam.
func (r *Rook) codexFamilyWrites(fam *codexFamily, o eventlog.ID, kin, ws string, own map[string]bool) error {
	calls, cmds, ows, err := r.codexMemberCalls(o, ws, own, fam.addTime)
	if err != nil {
		return err
	}
	for _, c := range calls {
		if c.outcome == "failed" {
			continue
		}
		w := codexOtherWrite{session: o, kin: kin, seq: c.seq, at: c.at, id: c.id, paths: []string{}}
		steps, _ := codexCallSteps(c, ows, &RolloutPatches{})
		for _, st := range steps {
			p, moved := st.paths(ws)
			w.paths = append(w.paths, p)
			if moved != "" {
				w.paths = append(w.paths, moved)
			}
		}
		if len(c.bad) > 0 || len(steps) == 0 {
			w.paths = nil // (which files, not known)
		}
		fam.others = append(fam.others, w)
	}
	for _, c := range cmds {
		fam.others = append(fam.others, codexOtherWrite{session: o, kin: kin, seq: c.seq, at: c.at, id: c.id, command: true})
	}
	return nil
}

// codexMemberCalls are the patch and command calls of session o, a
// member of a family whose line's calls are own, that are o's own
// writes: not copies of the line's (by call id), nor in a Codex fork's
// copy of its parent's lines; ows is the directory their relative paths
// are against. seen is told the time of each call o has, its copies'
// too.
func (r *Rook) codexMemberCalls(o eventlog.ID, ws string, own map[string]bool, seen func(id string, at time.Time)) (patches []*codexPatchCall, cmds []codexCall, ows string, err error) {
	calls, err := r.rolloutPatchCalls(o)
	if err != nil {
		return nil, nil, "", err
	}
	allCmds, err := r.codexCommandCalls(o, calls)
	if err != nil {
		return nil, nil, "", err
	}
	// A Codex fork's copy of its parent's lines is written when the
	// fork is made, right after its session_meta, and bears that time:
	// a call there is its parent's (counted there, or as the line's
	// own), whether or not its call id is read (an older local_shell_call
	// has none) or its parent is still here to match it with. Its own
	// calls come after a prompt typed and answered: seconds later.
	var copyEnd time.Time
	if m, err := r.Log.ReadMeta(o); err == nil && ImportedFork(m) {
		t0, err := r.eventTime(o, 0)
		if err != nil {
			return nil, nil, "", err
		}
		copyEnd = t0.Add(codexCopyWindow)
	}
	copied := func(at time.Time) bool { return !copyEnd.IsZero() && !at.After(copyEnd) }
	// A patch's relative paths are against o's own cwd (its turn's, or
	// else its session's, which may be a directory of ws or another),
	// named from ws.
	ows = ws
	if m, err := r.Log.ReadMeta(o); err == nil && rolloutAbs(m.Workspace) {
		ows = m.Workspace
	}
	for _, c := range calls {
		seen(c.id, c.at)
		if !own[c.id] && !copied(c.at) {
			patches = append(patches, c)
		}
	}
	for _, c := range allCmds {
		seen(c.id, c.at)
		if !own[c.id] && !copied(c.at) {
			cmds = append(cmds, c)
		}
	}
	return patches, cmds, ows, nil
}

func (fam *codexFamily) addTime(id string, at time.Time) {
	if t, ok := fam.orig[id]; id != "" && (!ok || at.Before(t)) {
		fam.orig[id] = at
	}
}

// pointTimes bound the time of session id's event to (the rewind point)
// from its own calls (calls: patch and command, times set to their
// originals' where they are copies): lo at most, hi at least it. An
// event in a fork's copy of its parent's lines bears the fork's time,
// not its own; the copy's calls have their originals'.
func (fam codexFamily) pointTimes(r *Rook, id eventlog.ID, to uint64, calls []codexCall) (lo, hi time.Time, err error) {
	tEv, err := r.eventTime(id, to)
	if err != nil {
		return lo, hi, err
	}
	lo, hi = tEv, tEv
	inCopy := false
	for _, c := range calls {
		switch {
		case c.seq < to:
		case c.copy:
			inCopy = true
			if c.at.Before(hi) {
				hi = c.at
			}
		case c.at.Before(hi):
			hi = c.at
		}
	}
	// After the copy's last call, yet in the copy: its line bears the
	// time the copied calls' events do.
	for _, c := range calls {
		if c.seq < to && c.copy && c.stamp.Equal(tEv) {
			inCopy = true
		}
	}
	if inCopy {
		// The point is in the copy: at least the last call before it.
		lo = time.Time{}
		for _, c := range calls {
			if c.seq < to && c.at.After(lo) {
				lo = c.at
			}
		}
		if lo.After(hi) {
			lo = hi
		}
	}
	return lo, hi, nil
}

// codexCall is a tool call of a rollout: its event, time and call id;
// copy: its time is a copy's, set back to its original's.
type codexCall struct {
	seq   uint64
	at    time.Time
	id    string
	copy  bool
	stamp time.Time // a copy's: the time its event bears (the fork's)
}

// codexCalls are session id's patch and command calls, by seq.
func (r *Rook) codexCalls(id eventlog.ID) ([]codexCall, error) {
	calls, err := r.rolloutPatchCalls(id)
	if err != nil {
		return nil, err
	}
	return r.codexCallsOf(id, calls)
}

// codexCallsOf is codexCalls, of the patch calls already read.
func (r *Rook) codexCallsOf(id eventlog.ID, calls []*codexPatchCall) ([]codexCall, error) {
	out, err := r.codexCommandCalls(id, calls)
	if err != nil {
		return nil, err
	}
	for _, c := range calls {
		out = append(out, codexCall{seq: c.seq, at: c.at, id: c.id})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out, nil
}

// codexCommandCalls are session id's command calls (codexCommandSeqs),
// with their call ids, read from their lines.
func (r *Rook) codexCommandCalls(id eventlog.ID, calls []*codexPatchCall) ([]codexCall, error) {
	seqs, err := r.codexCommandSeqs(id, calls)
	if err != nil {
		return nil, err
	}
	out := make([]codexCall, 0, len(seqs))
	for _, seq := range seqs {
		evs, err := r.Log.Read(id, seq, 1)
		if err != nil {
			return nil, err
		}
		if len(evs) == 0 {
			continue
		}
		c := codexCall{seq: seq, at: evs[0].Time}
		body, imported, err := r.readBody(evs[0].Body)
		if err != nil {
			return nil, fmt.Errorf("event #%d of session %s cannot be read: %w", seq, id, err)
		}
		if imported {
			for _, line := range sourceLines(body) {
				if p, ok := codexPatchPayloadOf(entryBytes(trimNewline(line))); ok && p.CallID != "" {
					c.id = p.CallID
					break
				}
			}
		}
		out = append(out, c)
	}
	return out, nil
}
