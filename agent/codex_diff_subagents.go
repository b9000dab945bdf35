package agent

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rookhq/rook/eventlog"
)

// A Codex subagent (a thread spawned with spawn_agent) applies its patches
// in its parent's workspace for it, in its own rollout, imported as a
// child session: the parent's diff reads them as a rewind of it to event
// 0 does (codex_family.go), as a Claude Code diff reads its subagents'
// edits (family_states.go, diffSubagents): its imported subagents' own
// patches (not copies of its calls, nor those after a rook fork's point)
// are replayed with its own, in the order they came by time, each file
// they changed said in a note; a subagent a spawn_agent output of the
// session names that no imported session holds (a MultiAgentV2 one by
// its task's path: codex_family_subagents_v2.go) is said in a note, with
// its rollout to import, and its changes are not shown (the diff is not
// refused); so is an imported subagent whose session does not read (its
// log, or an object of its lines, damaged or missing), with what to do.
// Not its forks, nor the session it came from: their changes are theirs.

// codexDiffFamily is what the diff of an imported Codex session reads of
// its subagents.
type codexDiffFamily struct {
	calls []codexDiffCall // its subagents', by time
	kin   map[eventlog.ID]string
	// orig: the earliest time of each call id among the sessions the
	// diffed one's imported session was forked from (a Codex fork's copy
	// of their lines bears the fork's time: a copied call's is its
	// original's).
	orig    map[string]time.Time
	notes   []string
	missing []string
	// unread: the ids of its subagents' sessions that do not read, each
	// in a note.
	unread []string
	// unreadEvents: the seqs of its own spawn_agent outputs that do not
	// read, each in a note (unreadTaskResult).
	unreadEvents []uint64
}

// codexDiffSubagents reads, for the diff of imported Codex session id
// (workspace ws, own its patch calls), its imported subagents' patch
// calls and the subagents its spawn_agent outputs (and theirs) name that
// no imported session holds.
func (r *Rook) codexDiffSubagents(id eventlog.ID, ws string, own []*codexPatchCall) (codexDiffFamily, error) {
	df := codexDiffFamily{kin: map[eventlog.ID]string{}, orig: map[string]time.Time{}}
	lf, err := r.importedFamilyOf(id, "Codex")
	if err != nil {
		return df, err
	}
	if lf.tooMany != "" {
		df.notes = append(df.notes, lf.tooMany+": files only its subagents changed are not shown")
		return df, nil
	}
	miss, reported, err := r.codexMissingSpawns(id, lf, []eventlog.ID{id})
	if err != nil {
		return df, err
	}
	subs := r.diffSubagents(lf, reported)
	var members []eventlog.ID
	for _, o := range lf.members {
		if subs[o] {
			members = append(members, o)
		}
	}
	// Each subagent's own patches. One whose session does not read (its
	// log, or an object of its lines, damaged or missing) is said in a
	// note, as a missing one is, and the rest are read: its changes are
	// not known, not the whole diff's.
	var read []eventlog.ID
	var unread []string
	if len(members) > 0 {
		idCalls, err := r.codexCallsOf(id, own)
		if err != nil {
			return df, err
		}
		line, err := r.codexLineCalls(id, lf, idCalls)
		if err != nil {
			return df, err
		}
		end, err := r.lineEnd(lf)
		if err != nil {
			return df, err
		}
		for _, o := range members {
			calls, _, ows, err := r.codexMemberCalls(o, ws, line, func(string, time.Time) {})
			if err != nil {
				unread = append(unread, r.unreadMemberNote(id, lf, o, ws, err))
				df.unread = append(df.unread, o.String())
				continue
			}
			read = append(read, o)
			df.kin[o] = lf.kin[o]
			for _, c := range calls {
				if end.IsZero() || c.at.Before(end) {
					df.calls = append(df.calls, codexDiffCall{c: c, session: o, ws: ows})
				}
			}
		}
	}
	if len(read) > 0 {
		// Those its subagents spawned in turn.
		more, _, err := r.codexMissingSpawns(id, lf, read)
		if err != nil {
			return df, err
		}
		for _, s := range more {
			if !slices.ContainsFunc(miss, func(m missingSubagent) bool { return m.key() == s.key() }) {
				miss = append(miss, s)
			}
		}
	}
	for _, s := range miss {
		if s.unread != nil {
			// (A spawn_agent output that does not read: unreadTaskResult.)
			df.notes = append(df.notes, r.unreadTaskNote(s, id, lf))
			if s.session == id {
				df.unreadEvents = append(df.unreadEvents, s.seq)
			}
			continue
		}
		hint := fmt.Sprintf("its rollout (rollout-*-%s.jsonl, .zst too) is not found beside the rollouts of the sessions linked to it (Codex writes them under ~/.codex/sessions/YYYY/MM/DD): `rook import codex <its file>` imports it, linked, if you find it", s.agent)
		switch {
		case s.task != "":
			hint = codexTaskHint(s) + ": `rook import codex <its file>` imports it, linked, if you find it"
		case s.path != "":
			hint = fmt.Sprintf("`rook import codex %s` imports it, linked", ShellQuote(s.path))
		}
		hint += unreadMetaHint(lf.unreadMeta)
		df.notes = append(df.notes, missingSubagentNote("Codex", "spawn_agent output", id, lf, s, hint))
		if !slices.Contains(df.missing, s.agent) { // (a v2 path spawned twice)
			df.missing = append(df.missing, s.agent)
		}
	}
	df.notes = append(df.notes, unread...)
	sort.SliceStable(df.calls, func(i, j int) bool { return df.calls[i].c.at.Before(df.calls[j].c.at) })
	if len(df.calls) > 0 {
		// A Codex fork's copy of its parent's lines bears the fork's time:
		// its calls come where their originals did. Each parent up is a
		// member of lf (importedFamilyOf goes up through them, and lf is
		// not tooMany), so the walk ends within len(lf.kin) steps, none
		// left out; only a loop of damaged metadata would go on.
		m, err := r.Log.ReadMeta(lf.start)
		for i := 0; err == nil && i < len(lf.kin) && ImportedFork(m); i++ {
			calls, err := r.rolloutPatchCalls(*m.Parent)
			if errors.Is(err, eventlog.ErrNoSession) {
				break // (removed since: the copy's times stand)
			}
			if err != nil {
				return df, err
			}
			for _, c := range calls {
				if t, ok := df.orig[c.id]; c.id != "" && (!ok || c.at.Before(t)) {
					df.orig[c.id] = c.at
				}
			}
			m, err = r.Log.ReadMeta(*m.Parent)
		}
	}
	return df, nil
}

// unreadMetaHint says, for a missing subagent's note, which sessions of
// the store do not read (their metadata: ids): the subagent's may be one,
// linked to none (a session whose metadata does not read is no one's
// child). "" when none.
func unreadMetaHint(ids []eventlog.ID) string {
	const what = "`rook store verify` says what is wrong and what to do"
	switch len(ids) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("; session %s of this store does not read (its metadata): if it holds the subagent, %s", ids[0], what)
	}
	names := make([]string, 0, 3)
	for _, s := range ids[:min(len(ids), 3)] {
		names = append(names, s.String())
	}
	if len(ids) > 3 {
		names = append(names, "...")
	}
	return fmt.Sprintf("; %d sessions of this store do not read (their metadata: %s): if one holds the subagent, %s", len(ids), strings.Join(names, ", "), what)
}

// codexDiffCall is a patch call a diff replays: the session's own
// (session zero), or one of its subagents'.
type codexDiffCall struct {
	c       *codexPatchCall
	session eventlog.ID
	ws      string // the directory its relative paths are against (a subagent's)
}

// order is the session's own calls (by seq) and its subagents', each of
// those before the first own call that came after it (by time, a copied
// call's its original's).
func (df codexDiffFamily) order(own []*codexPatchCall, ws string) []codexDiffCall {
	out := make([]codexDiffCall, 0, len(own)+len(df.calls))
	next := 0
	for _, c := range own {
		at := c.at
		if t, ok := df.orig[c.id]; ok && t.Before(at) {
			at = t
		}
		for ; next < len(df.calls) && df.calls[next].c.at.Before(at); next++ {
			out = append(out, df.calls[next])
		}
		out = append(out, codexDiffCall{c: c, ws: ws})
	}
	return append(out, df.calls[next:]...)
}

// note says, of a file whose section holds patches of the sessions
// subs, where its changes come from; both: the session's own patches
// changed it too.
func (df codexDiffFamily) note(p string, subs []eventlog.ID, both bool) string {
	names := make([]string, len(subs))
	for i, s := range subs {
		names[i] = fmt.Sprintf("session %s (%s)", s, df.kin[s])
	}
	if both {
		return fmt.Sprintf("%s: from this session's patches and those of %s, in the order they came", p, strings.Join(names, " and "))
	}
	return fmt.Sprintf("%s: from the patches of %s", p, strings.Join(names, " and "))
}
