package agent

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/rookhq/rook/eventlog"
)

// Codex forks share their workspace with the session they were forked
// from. An imported fork holds a copy of its parent's lines up to the
// fork (the same call ids), then its own; the parent's file goes on with
// its own. A patch or command in one of them that is not in the other's
// rollout wrote the disk without the other saying so: a rewind of one
// that takes the disk for what its own patches left (undoing them on it,
// or replaying them up to the point) must count the other's writes too,
// when they came where that matters. Their times say when: an imported
// event's time is its rollout line's.

// codexOtherWrite is a patch or command of another imported session of
// the same fork family that is not one of this session's own calls.
type codexOtherWrite struct {
	session eventlog.ID
	kin     string // what that session is to this one, in words
	seq     uint64
	at      time.Time
	command bool
	// paths a patch writes (relative to the workspace, as the rewind's);
	// nil for a command, or a patch whose paths are not known: any.
	paths []string
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

// why says what w is, for a refusal.
func (w codexOtherWrite) why(what string) string {
	kind := "patch"
	if w.command {
		kind = "command"
	}
	return fmt.Sprintf("session %s (%s, in the same workspace) ran the %s of event #%d at %s, %s: it may have changed the file, and this session's rollout does not hold it", w.session, w.kin, kind, w.seq, w.at.UTC().Format("2006-01-02 15:04:05.000"), what)
}

// maxCodexFamily bounds the sessions of a fork family read.
const maxCodexFamily = 1000

// codexOtherWrites are the patches and commands of the imported Codex
// sessions linked to session id by imported-fork links, up or down (from
// the imported session id is a rook fork of, if it is one), that are not
// among id's own calls (by call id: a fork's copy of its parent's lines
// has the same ones). A patch that did not apply is none.
func (r *Rook) codexOtherWrites(id eventlog.ID, ws string) ([]codexOtherWrite, error) {
	own, err := r.codexCallIDs(id)
	if err != nil {
		return nil, err
	}
	delete(own, "") // (a call without an id is no one's copy)
	// The imported session whose line id is: rook forks (a rewind's)
	// up to it. Those on the way are this session's line (codexForkWhy).
	skip := map[eventlog.ID]bool{id: true}
	start := id
	for depth := 0; depth < maxCodexFamily; depth++ {
		m, err := r.Log.ReadMeta(start)
		if err != nil {
			return nil, err
		}
		pid, _, ok := m.ForkedFrom()
		if !ok || ImportedFork(m) {
			break
		}
		start = pid
		skip[start] = true
	}
	// The family: imported-fork links, both ways; what each is to
	// start (its Codex parent, a Codex fork of it, or further).
	kin := map[eventlog.ID]string{start: ""}
	queue := []eventlog.ID{start}
	var family []eventlog.ID
	for len(queue) > 0 && len(kin) <= maxCodexFamily {
		cur := queue[0]
		queue = queue[1:]
		if !skip[cur] {
			family = append(family, cur)
		}
		m, err := r.Log.ReadMeta(cur)
		if errors.Is(err, eventlog.ErrNoSession) && cur != start {
			// A parent deleted since (rm): nothing of it to count.
			family = slices.DeleteFunc(family, func(x eventlog.ID) bool { return x == cur })
			continue
		}
		if err != nil {
			return nil, err
		}
		further := "of the Codex forks of this session's line"
		if ImportedFork(m) && !has(kin, *m.Parent) {
			kin[*m.Parent] = further
			if cur == start {
				kin[*m.Parent] = "the Codex session this one was forked from"
			}
			queue = append(queue, *m.Parent)
		}
		children, err := r.Log.Children(cur)
		if err != nil {
			return nil, err
		}
		for _, c := range children {
			if ImportedFork(c) && !has(kin, c.ID) {
				kin[c.ID] = further
				if cur == start {
					kin[c.ID] = "a Codex fork of this session"
				}
				queue = append(queue, c.ID)
			}
		}
	}
	var out []codexOtherWrite
	for _, o := range family {
		calls, err := r.rolloutPatchCalls(o)
		if err != nil {
			return nil, err
		}
		for _, c := range calls {
			if own[c.id] || c.outcome == "failed" {
				continue
			}
			w := codexOtherWrite{session: o, kin: kin[o], seq: c.seq, at: c.at}
			steps, _ := codexCallSteps(c, ws, &RolloutPatches{})
			for _, st := range steps {
				p, moved := st.paths(ws)
				w.paths = append(w.paths, p)
				if moved != "" {
					w.paths = append(w.paths, moved)
				}
			}
			if len(c.bad) > 0 {
				w.paths = nil // (a change that does not read: which files, not known)
			}
			out = append(out, w)
		}
		cmds, err := r.codexCommandCalls(o, calls)
		if err != nil {
			return nil, err
		}
		for _, c := range cmds {
			if !own[c.id] {
				out = append(out, codexOtherWrite{session: o, kin: kin[o], seq: c.seq, at: c.at, command: true})
			}
		}
	}
	return out, nil
}

func has[K comparable, V any](m map[K]V, k K) bool {
	_, ok := m[k]
	return ok
}

// codexCall is a tool call of a rollout: its event, time and call id.
type codexCall struct {
	seq uint64
	at  time.Time
	id  string
}

// codexCallIDs are the call ids of session id's patch and command calls.
func (r *Rook) codexCallIDs(id eventlog.ID) (map[string]bool, error) {
	calls, err := r.rolloutPatchCalls(id)
	if err != nil {
		return nil, err
	}
	ids := map[string]bool{}
	for _, c := range calls {
		ids[c.id] = true
	}
	cmds, err := r.codexCommandCalls(id, calls)
	if err != nil {
		return nil, err
	}
	for _, c := range cmds {
		ids[c.id] = true
	}
	return ids, nil
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
