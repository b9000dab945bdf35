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
	kin     string // what that session is, in words
	seq     uint64
	at      time.Time
	command bool
	// paths a patch writes (relative to the workspace, as the rewind's);
	// nil for a command, or a patch whose paths are not known: any.
	paths []string
	// unknown: what the session wrote cannot be read (why says why): it
	// counts wherever, whenever.
	unknown string
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
	return w.unknown != "" || !w.at.Before(lo) && (hi.IsZero() || !w.at.After(hi))
}

// why says what w is, for a refusal.
func (w codexOtherWrite) why(what string) string {
	if w.unknown != "" {
		return w.unknown
	}
	kind := "patch"
	if w.command {
		kind = "command"
	}
	return fmt.Sprintf("session %s (%s, in the same workspace) ran the %s of event #%d at %s, %s: it may have changed the file, and this session's rollout does not hold it", w.session, w.kin, kind, w.seq, w.at.UTC().Format("2006-01-02 15:04:05.000"), what)
}

// maxCodexFamily bounds the sessions of a family read.
const maxCodexFamily = 1000

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
// counts as a write of any file at any time, named.
func (r *Rook) codexFamilyOf(id eventlog.ID, ws string) (codexFamily, error) {
	fam := codexFamily{orig: map[string]time.Time{}}
	// id's line: rook forks (a rewind's) up to an imported session.
	// Their calls are its own (codexForkWhy counts what theirs did
	// after the fork).
	line := []eventlog.ID{id}
	start := id
	for depth := 0; depth < maxCodexFamily; depth++ {
		m, err := r.Log.ReadMeta(start)
		if err != nil {
			return fam, err
		}
		pid, _, ok := m.ForkedFrom()
		if !ok || m.Source != nil {
			break
		}
		start = pid
		line = append(line, start)
	}
	own := map[string]bool{}
	for _, s := range line {
		calls, err := r.codexCalls(s)
		if err != nil {
			return fam, err
		}
		for _, c := range calls {
			if c.id != "" { // (a call without an id is no one's copy)
				own[c.id] = true
			}
		}
	}
	this := "this session"
	if start != id {
		this = "session " + start.String()
	}
	index := &forkIndex{r: r}
	kin := map[eventlog.ID]string{start: ""}
	queue := []eventlog.ID{start}
	var family []eventlog.ID
	for len(queue) > 0 {
		if len(kin) > maxCodexFamily {
			fam.others = append(fam.others, codexOtherWrite{unknown: fmt.Sprintf("%s is linked to over %d imported Codex sessions (forks, subagents) in the same workspace, too many to read for what they wrote", this, maxCodexFamily)})
			break
		}
		cur := queue[0]
		queue = queue[1:]
		if !slices.Contains(line, cur) {
			family = append(family, cur)
		}
		m, err := r.Log.ReadMeta(cur)
		switch {
		case errors.Is(err, eventlog.ErrNoSession) && cur != start:
			// Removed since (rm): its forks still name it their parent.
		case err != nil:
			return fam, err
		case m.Source != nil:
			for _, up := range []*eventlog.ID{m.Parent, m.Ancestor} {
				if up != nil && !has(kin, *up) {
					kin[*up] = "of the imported Codex sessions linked to " + this
					if cur == start && up == m.Parent {
						kin[*up] = "the Codex session " + this + " came from"
					}
					queue = append(queue, *up)
				}
			}
		}
		children, err := index.childrenOf(cur)
		if err != nil {
			return fam, err
		}
		for _, c := range children {
			if has(kin, c) {
				continue
			}
			cm, err := r.Log.ReadMeta(c)
			if err != nil || cm.Source == nil {
				continue // (a rook fork: its calls are copies, or none)
			}
			kin[c] = "of the imported Codex sessions linked to " + this
			if cur == start {
				kin[c] = "a Codex fork of " + this
				if slices.Contains(cm.Tags, subagentTag) {
					kin[c] = "a Codex subagent of " + this
				}
			}
			queue = append(queue, c)
		}
	}
	for _, o := range family {
		if err := r.codexFamilyWrites(&fam, o, kin[o], ws, own); err != nil {
			if errors.Is(err, eventlog.ErrNoSession) {
				continue
			}
			fam.others = append(fam.others, codexOtherWrite{session: o, unknown: fmt.Sprintf("session %s (%s, in the same workspace) cannot be read (%v), so what it wrote is not known", o, kin[o], err)})
		}
	}
	return fam, nil
}

// codexFamilyWrites adds session o's calls to fam.
func (r *Rook) codexFamilyWrites(fam *codexFamily, o eventlog.ID, kin, ws string, own map[string]bool) error {
	calls, err := r.rolloutPatchCalls(o)
	if err != nil {
		return err
	}
	cmds, err := r.codexCommandCalls(o, calls)
	if err != nil {
		return err
	}
	for _, c := range calls {
		fam.addTime(c.id, c.at)
		if own[c.id] || c.outcome == "failed" {
			continue
		}
		w := codexOtherWrite{session: o, kin: kin, seq: c.seq, at: c.at, paths: []string{}}
		steps, _ := codexCallSteps(c, ws, &RolloutPatches{})
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
		fam.addTime(c.id, c.at)
		if !own[c.id] {
			fam.others = append(fam.others, codexOtherWrite{session: o, kin: kin, seq: c.seq, at: c.at, command: true})
		}
	}
	return nil
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

func has[K comparable, V any](m map[K]V, k K) bool {
	_, ok := m[k]
	return ok
}

// codexCall is a tool call of a rollout: its event, time and call id;
// copy: its time is a copy's, set back to its original's.
type codexCall struct {
	seq  uint64
	at   time.Time
	id   string
	copy bool
}

// codexCalls are session id's patch and command calls, by seq.
func (r *Rook) codexCalls(id eventlog.ID) ([]codexCall, error) {
	calls, err := r.rolloutPatchCalls(id)
	if err != nil {
		return nil, err
	}
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
