package agent

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	json "github.com/go-json-experiment/json/v1"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
)

// A Codex subagent's patches and commands are in its own rollout,
// imported as a child session of its parent's: a rewind of the parent
// reads them there (codexFamilyOf). Once that child is removed (session
// rm, retention), or when its rollout was never imported, nothing in
// rook links it to the parent. The parent's spawn_agent output still
// names it ({"agent_id": "<thread id>"}, codexSpawnedIDs), and its
// rollout is imported under that thread id (childSourceID): a thread a
// spawn_agent output of the family names that no imported session linked
// to it holds wrote what is not known. So does a MultiAgentV2 subagent,
// whose spawn_agent output names its task's path ({"task_name":
// "/root/worker"}, codexSpawnedTasks) that no imported subagent of its
// spawner holds (codex_family_subagents_v2.go). A Codex subagent runs on
// its own: spawn_agent returns at once, and it may write long after, well
// past the rewind point, whenever it was spawned. So it counts as a write
// of any file at any time from its spawn_agent call on (codexOtherWrite.since),
// as a parent removed since does, until the family's rollouts say for
// sure it was finished (codexSubagentEnds): what the rollout says a file
// held before its spawn stands; the undo of patches on the disk as it is
// now, any state after it, is refused, unless it was finished before the
// point (then all it wrote was before the point too).

// codexMissingSubagents are the writes of the subagents spawn_agent
// outputs of the sessions of family lf (its line, then its members) name
// that no imported session linked to it holds (lf.sources), each once,
// from its earliest spawn; id is the session rewound.
func (r *Rook) codexMissingSubagents(id eventlog.ID, lf importedFamily) ([]codexOtherWrite, error) {
	sessions := append(append([]eventlog.ID{}, lf.line...), lf.members...)
	miss, _, err := r.codexMissingSpawns(id, lf, sessions)
	if err != nil {
		return nil, err
	}
	ends, err := r.codexSubagentEnds(id, lf, sessions, miss)
	if err != nil {
		return nil, err
	}
	var out []codexOtherWrite
	for _, s := range miss {
		whose := "this session"
		if s.session != id {
			whose = "session " + s.session.String()
		}
		if s.unread != nil {
			// From any time: its call is not known (unreadTaskResult).
			why := fmt.Sprintf("the spawn_agent output of event #%d of %s cannot be read (%v): which subagent it spawned is not known, nor whether an imported session linked to it holds it, and a Codex subagent may have written the workspace's files, on its own, at any time from its spawn on, so what it wrote is not known; %s; then run this again",
				s.seq, whose, s.unread, r.unreadHowOf(s.session, s.unread))
			out = append(out, codexOtherWrite{session: s.session, seq: s.seq, since: true, sinceWhy: why})
			continue
		}
		when := "its call's time not read: at any time"
		if !s.at.IsZero() {
			when = "from " + s.at.UTC().Format("2006-01-02 15:04:05.000") + " on"
		}
		// (Where it worked is not known: its session is not here.)
		why := fmt.Sprintf("the Codex subagent %s, spawned by the spawn_agent call whose output is event #%d of %s, is in no imported session linked to it: its session was removed from rook since (session rm), or its rollout was never imported, and it may have written the workspace's files, on its own, %s, so what it wrote is not known", s.agent, s.seq, whose, when)
		switch {
		case s.task != "":
			why += "; " + codexTaskHint(s) + ": import it if you find it (`rook import codex <its file>`: it is linked to its parent) and run this again"
			if s.sameTask > 1 {
				why += fmt.Sprintf(" (%d spawns of %s are in the rollouts, fewer of its subagents in rook: which one's is missing is not known)", s.sameTask, s.agent)
			}
		case s.path != "":
			why += fmt.Sprintf("; import its rollout again (`rook import codex %s`: it is linked to its parent) and run this again", ShellQuote(s.path))
		default:
			why += fmt.Sprintf("; its rollout (rollout-*-%s.jsonl, .zst too) is not found beside the rollouts of the sessions linked to it (Codex writes them under ~/.codex/sessions/YYYY/MM/DD): import it if you find it (`rook import codex <its file>`: it is linked to its parent) and run this again", s.agent)
		}
		out = append(out, codexOtherWrite{session: s.session, seq: s.seq, at: s.at, since: true, sinceWhy: why, until: ends[s.key()]})
	}
	return out, nil
}

// codexMissingSpawns reads the spawn_agent outputs of sessions (in
// order) of family lf: the subagents they name that no imported session
// linked to it holds (lf.sources), each once, at its earliest spawn, with
// its rollout when it is found (codexRolloutOf); and reported, the thread
// of every subagent they name, held or not. id is the session asked of
// (another of sessions removed since is passed over: its fork holds its
// events). A MultiAgentV2 output names a path: each of its spawns (by
// call id, a copy of it once) is missing unless the family's subagents
// of that path hold them all (codexHeldTasks); reported gets the threads
// of those that do.
func (r *Rook) codexMissingSpawns(id eventlog.ID, lf importedFamily, sessions []eventlog.ID) (miss []missingSubagent, reported map[string]bool, err error) {
	first := map[string]missingSubagent{}
	reported = map[string]bool{}
	var order []string
	agentOf := r.codexAgents(lf)
	lineageOf := perSession(lf, r.codexLineage)
	tasks := map[string]*codexTaskSpawn{}
	var taskOrder []string
	var unread []missingSubagent
	for _, s := range sessions {
		callAt := map[string]time.Time{}
		for from := uint64(0); ; {
			evs, err := r.Log.Read(s, from, 1024)
			if err != nil {
				if from == 0 && s != id && errors.Is(err, eventlog.ErrNoSession) {
					break // (removed since: its fork holds its events before the point)
				}
				return nil, nil, err
			}
			if len(evs) == 0 {
				break
			}
			for _, ev := range evs {
				switch {
				case ev.Kind == eventlog.KindToolCall && ev.Label == "spawn_agent":
					for _, p := range r.codexPayloads(ev.Body) {
						if p.CallID != "" {
							callAt[p.CallID] = ev.Time
						}
					}
				case ev.Kind == eventlog.KindToolResult && !noCodexSubagents[ev.Label]:
					need := []string{"agent_id", "task_name"}
					if ev.Label == "spawn_agent" {
						need = nil
					}
					ps, perr := r.codexPayloadsRead(ev.Body, need...)
					if perr != nil && ev.Label == "spawn_agent" {
						// Which subagent, and when: in it alone
						// (unreadTaskResult).
						unread = append(unread, missingSubagent{session: s, seq: ev.Seq, unread: perr, label: ev.Label})
					}
					for _, p := range ps {
						for _, path := range codexSpawnedTasks(p.Output) {
							k := codexTaskKey(path, p.CallID, s, ev.Seq)
							sp := missingSubagent{agent: path, session: s, seq: ev.Seq, at: callAt[p.CallID], task: k, spawners: lineageOf(s)}
							if sp.at.After(ev.Time) {
								sp.at = time.Time{}
							}
							ts := tasks[k]
							if ts == nil {
								ts = &codexTaskSpawn{first: sp, threads: map[string]bool{}}
								tasks[k] = ts
								taskOrder = append(taskOrder, k)
							} else if sp.at.Before(ts.first.at) {
								ts.first = sp
							}
							for _, th := range lineageOf(s) {
								ts.threads[th] = true
							}
						}
						for _, th := range codexSpawnedIDs(p.Output) {
							reported[th] = true
							if lf.sources[th] {
								continue
							}
							sp := missingSubagent{agent: th, session: s, seq: ev.Seq, at: callAt[p.CallID]}
							if sp.at.After(ev.Time) {
								sp.at = time.Time{}
							}
							prev, ok := first[th]
							if !ok {
								order = append(order, th)
							}
							if !ok || sp.at.Before(prev.at) {
								first[th] = sp
							}
						}
					}
				}
			}
			from = evs[len(evs)-1].Seq + 1
		}
	}
	for _, th := range order {
		sp := first[th]
		sp.path = r.codexRolloutOf(lf, th)
		miss = append(miss, sp)
	}
	if len(tasks) > 0 {
		// The family's thread_spawn subagents of a path, each once.
		var held []codexAgent
		seen := map[string]bool{}
		for _, o := range append(append([]eventlog.ID{}, lf.line...), lf.members...) {
			if a := agentOf(o); a.parent != "" && a.path != "" && a.path != "/root" && !seen[a.thread] {
				seen[a.thread] = true
				held = append(held, a)
			}
		}
		miss = append(miss, codexHeldTasks(tasks, taskOrder, held, reported)...)
	}
	return append(miss, unread...), reported, nil
}

// codexAgents reads, once each, what the sessions of family lf are as
// Codex agents (codexAgentOf).
func (r *Rook) codexAgents(lf importedFamily) func(eventlog.ID) codexAgent {
	return perSession(lf, r.codexAgentOf)
}

// perSession is read, called once per session of family lf, the answer
// kept: a rook fork of its line is the imported session its line starts
// from.
func perSession[T any](lf importedFamily, read func(eventlog.ID) T) func(eventlog.ID) T {
	kept := map[eventlog.ID]T{}
	return func(s eventlog.ID) T {
		if slices.Contains(lf.line, s) {
			s = lf.start
		}
		v, ok := kept[s]
		if !ok {
			v = read(s)
			kept[s] = v
		}
		return v
	}
}

// Codex's collab tools say when a subagent is done (codex-rs
// tools/handlers/collab.rs, multi_agents.rs): close_agent ({"id": ...},
// or "target") shuts it down for good, with every open descendant,
// returning {"status": <status>} (later "previous_status") as it was
// before. A status is Codex's AgentStatus: "pending_init", "running",
// "interrupted", {"completed": <its last message, or null>}, {"errored":
// "<why>"}, "shutdown", "not_found". So a subagent counts as a writer
// from its spawn up to the first close_agent output that reads (not
// "not_found"), unless a later call starts it again (then up to the next
// close, or for good). A wait ({"ids": [...]}) whose output says it
// completed, errored or was shut down is no end: that ends its turn, not
// it. A send_input may start it again with no wait seeing that turn end
// (Codex sets a subagent running only when its new turn starts, so a
// wait right after one may read the turn before), and the subagents it
// spawned, whose spawns are in its own rollout, not there, run on: a
// review found a rewind that took a wait's "completed" as the end write
// a state a subagent of it had changed since. A call of any other tool
// that names the subagent's thread (send_input, resume_agent, whatever
// it is called, or a shell's `codex resume`) starts it again.
//
// A close of one of its ancestors ends it too (codexCloseOf,
// codexAncestorThreads): Codex's close_agent closes the open descendants
// of its target, and a call that starts the ancestor again does not
// start it (resume_agent_from_rollout, codex-rs/core/src/agent/control.rs,
// restores only the descendants whose spawn edge is open, and the close
// marked them closed; control_tests.rs
// resume_agent_from_rollout_does_not_reopen_v2_descendants); a call that
// names it does, as above.
//
// A MultiAgentV2 subagent (codex_family_subagents_v2.go) is named by its
// path: a close_agent whose target, resolved from the path of the
// session whose call it is, is its path, and whose output reads (its
// previous_status, not "not_found"), ends the spawn of that path the
// session's rollout last holds before it (a path is free again once
// closed), or, the session's rollout holding none, the family's one spawn
// of it (of two or more, which one it closed is not known: none); when
// it is its session's own line (codexAgent.ownLine): a Codex fork's
// rollout, or a subagent's spawned with its parent's history, begins
// with a copy of its parent's lines, whose close is the parent's, its
// target resolved from the parent's path (a fork of a subagent is /root,
// where its parent is not), at the parent's time, and counted in the
// parent's rollout (that not read, the copy ends nothing). A close
// by a thread id does not name it: no output of the family says a v2
// agent's thread (spawn_agent answers its path and nickname,
// multi_agents_v2/spawn.rs; list_agents its path, or its thread only
// when it has none, list_agents.rs; wait_agent a message and
// timed_out; close_agent its previous_status), and its own
// session_meta, which does, is what is missing (its subagents' name it
// as their parent_thread_id, but their parent not imported, nothing links
// them to the family). The Collab*End events that carry thread ids are
// written to a rollout only in its extended persistence mode, and not
// read. A close of an ancestor does end it, as a v1 subagent's
// (codexCloseOf): by a path its own is below, made in its spawner's
// agent tree (a path names an agent of the caller's own tree only:
// codexPathCloseInTree), or by its spawner's thread, or up, which their
// imported rollouts say (a thread id names one thread wherever the
// close is made). A
// send_message or followup_task (which load it again) or an
// interrupt_agent whose target resolves to its path starts again the
// spawn that holds the path then, as a close ends it (of two or more
// spawns in the family, none in the session's rollout, each of them):
// not a spawn of the path closed before. No other call starts one: a
// patch, a shell command or a message whose text merely holds its path
// addresses no agent (Codex addresses a v2 agent only through its collab
// tools' targets); wait_agent names none, and list_agents reads
// statuses.

// codexCollabEnd are the collab tools whose outputs may say a subagent
// is done for good.
var codexCollabEnd = map[string]bool{"close_agent": true}

// codexCollabAddress are the collab tools whose calls address an agent
// by their "target" (MultiAgentV2: send_message and followup_task, which
// load a closed one again, interrupt_agent) or "id" (v1: send_input,
// resume_agent), and so may start a closed MultiAgentV2 subagent again:
// no other call can (a patch, a shell command, a message that merely
// holds its path's text does not; codexSubagentEnds).
var codexCollabAddress = map[string]bool{"send_message": true, "followup_task": true, "interrupt_agent": true, "send_input": true, "resume_agent": true}

// codexCollabWaits are the collab tools that wait for subagents, or read
// their statuses (list_agents): their calls name threads and start none
// (a wait on one closed before is not a restart), and their outputs end
// none (codexSubagentEnds).
var codexCollabWaits = map[string]bool{"wait": true, "wait_agent": true, "list_agents": true}

// codexSubagentEnds reads, in sessions (in order; id is the session
// asked of, another removed since is passed over), the collab calls
// about the subagents of miss: the time by which each was finished for
// good, as far as they say for sure; none (absent) when they do not. A
// Codex fork's copy of its parent's lines bears the fork's time: each
// call and each output is timed by its earliest, its original's where it
// is read, and counted once.
//
// The times are by missingSubagent.key.
func (r *Rook) codexSubagentEnds(id eventlog.ID, lf importedFamily, sessions []eventlog.ID, miss []missingSubagent) (map[string]time.Time, error) {
	if len(miss) == 0 {
		return nil, nil
	}
	want := map[string]bool{}      // v1: threads
	tasks := map[string][]string{} // v2: the missing spawns of each path
	only := map[string]string{}    // v2: a path's one spawn in the family
	for _, s := range miss {
		if s.unread != nil {
			continue // (which one is not known: no call ends it)
		}
		if s.task == "" {
			want[s.agent] = true
			continue
		}
		tasks[s.agent] = append(tasks[s.agent], s.task)
		if s.sameTask == 1 {
			only[s.agent] = s.task
		}
	}
	// holder is the spawn that holds path at a call of a session whose
	// rollout's spawns of each path so far are last: the last of them,
	// or, its rollout holding none, the family's one spawn of it; known
	// is false when neither says (a path is free again once closed, and
	// Codex gives it to the next spawn of it).
	holder := func(last map[string]string, path string) (k string, known bool) {
		if k, ok := last[path]; ok {
			return k, true
		}
		k = only[path]
		return k, k != ""
	}
	agentOf := r.codexAgents(lf)
	// A close that reads as Codex's close_agent of today's does
	// (codexCloseOf) closes its target's open descendants too: each
	// missing spawn also ends at a close of one of its ancestors, by
	// thread (up), or, of a MultiAgentV2 one, by a path its own is below
	// (pathCloses, held to its spawner's holding that path then, in the
	// caller's own agent tree: codexPathCloseInTree).
	byThread := codexByThread(agentOf, append(append([]eventlog.ID{}, lf.line...), lf.members...))
	up := codexAncestorThreads(miss, agentOf, byThread)
	type pathClose struct {
		key, path, output string
		at                time.Time
		session           eventlog.ID // whose rollout holds the close
		call              string
	}
	var pathCloses []pathClose
	// v2: the closes of a path by its holder a session's rollout holds
	// that may be a copy of its parent's lines (codexAgent.ownLine), to
	// count once all are read.
	var copiedCloses []pathClose
	spawnedAt := map[string][]time.Time{} // v2: the times of the spawn outputs of each path
	// v2: the lines of each thread's rollout read, by thread: its close
	// outputs' call ids, its spawns' keys (what a copy of its lines in a
	// fork's, or a subagent's, rollout would hold again).
	rolloutOf := map[string]*codexRolloutLines{}
	// said is what one call (a restart), or one output (a close), says
	// of th.
	type said struct {
		at      time.Time
		restart bool
	}
	heard := map[string]map[string]said{} // th: by call (and output)
	hear := func(th, key string, s said) {
		if heard[th] == nil {
			heard[th] = map[string]said{}
		}
		if prev, ok := heard[th][key]; !ok || s.at.Before(prev.at) {
			heard[th][key] = s
		}
	}
	for _, s := range sessions {
		args := map[string]json.RawMessage{} // a collab end's arguments, by call id
		caller := ""                         // (its MultiAgentV2 path, whence its targets resolve)
		if len(tasks) > 0 {
			caller = agentOf(s).path
		}
		last := map[string]string{} // v2: the spawn of each path its rollout last holds
		var lines *codexRolloutLines
		for from := uint64(0); ; {
			evs, err := r.Log.Read(s, from, 1024)
			if err != nil {
				if from == 0 && s != id && errors.Is(err, eventlog.ErrNoSession) {
					break // (removed since: its fork holds its events before the point)
				}
				return nil, err
			}
			if lines == nil && len(tasks) > 0 {
				th := agentOf(s).thread // ("": whose, not known; kept for none)
				if lines = rolloutOf[th]; lines == nil {
					lines = &codexRolloutLines{closes: map[string]bool{}, spawns: map[string]bool{}}
					if th != "" {
						rolloutOf[th] = lines
					}
				}
			}
			if len(evs) == 0 {
				break
			}
			for _, ev := range evs {
				switch {
				case ev.Kind == eventlog.KindToolCall:
					for i, p := range r.codexPayloads(ev.Body) {
						if codexCollabEnd[ev.Label] {
							if p.CallID != "" {
								args[p.CallID] = p.Arguments
							}
							continue
						}
						if ev.Label == "spawn_agent" || codexCollabWaits[ev.Label] {
							continue // (a new thread; a wait, which reads statuses and starts none)
						}
						key := "call " + p.CallID
						if p.CallID == "" {
							key = fmt.Sprintf("%s #%d.%d", s, ev.Seq, i)
						}
						for th := range want {
							for _, b := range []json.RawMessage{p.Arguments, p.Input, p.Action} {
								if bytes.Contains(b, []byte(th)) {
									hear(th, key, said{at: ev.Time, restart: true})
									break
								}
							}
						}
						if !codexCollabAddress[ev.Label] {
							continue // (no other call starts a MultiAgentV2 agent)
						}
						for path, keys := range tasks {
							if !codexNamesTask(caller, path, p) {
								continue
							}
							// The spawn holding the path then, as for a
							// close; none known (the path spawned more
							// than once in the family, none of them in
							// this rollout), any of them.
							if k, known := holder(last, path); known {
								if slices.Contains(keys, k) {
									hear(k, key, said{at: ev.Time, restart: true})
								}
								continue
							}
							for _, k := range keys {
								hear(k, key, said{at: ev.Time, restart: true})
							}
						}
					}
				case ev.Kind == eventlog.KindToolResult && !codexCollabEnd[ev.Label] && !noCodexSubagents[ev.Label] && len(tasks) > 0:
					// (As codexMissingSpawns reads them.)
					need := []string{"task_name"}
					if ev.Label == "spawn_agent" {
						need = nil
					}
					for _, p := range r.codexPayloads(ev.Body, need...) {
						for _, path := range codexSpawnedTasks(p.Output) {
							last[path] = codexTaskKey(path, p.CallID, s, ev.Seq)
							lines.spawns[last[path]] = true
							spawnedAt[path] = append(spawnedAt[path], ev.Time)
						}
					}
				case ev.Kind == eventlog.KindToolResult && codexCollabEnd[ev.Label]:
					for _, p := range r.codexPayloads(ev.Body) {
						if lines != nil && p.CallID != "" {
							lines.closes[p.CallID] = true
						}
						closed, descendants := codexCloseOf(p.Output)
						if p.CallID == "" || !closed {
							continue // (its call's arguments not known; no close)
						}
						target := codexArgID(args[p.CallID])
						if want[target] {
							hear(target, "output "+p.CallID, said{at: ev.Time})
						}
						if descendants && target != "" {
							for k, threads := range up {
								if slices.Contains(threads, target) {
									hear(k, "output "+p.CallID, said{at: ev.Time})
								}
							}
						}
						path, ok := codexResolveTarget(caller, target)
						if !ok {
							continue
						}
						if descendants && path != "/root" {
							for below, keys := range tasks {
								if strings.HasPrefix(below, path+"/") {
									for _, k := range keys {
										pathCloses = append(pathCloses, pathClose{key: k, path: path, output: "output " + p.CallID, at: ev.Time, session: s, call: p.CallID})
									}
								}
							}
						}
						if tasks[path] == nil {
							continue
						}
						if k, known := holder(last, path); known && slices.Contains(tasks[path], k) {
							if !agentOf(s).own {
								copiedCloses = append(copiedCloses, pathClose{key: k, path: path, output: "output " + p.CallID, at: ev.Time, session: s, call: p.CallID})
								continue
							}
							hear(k, "output "+p.CallID, said{at: ev.Time})
						}
					}
				}
			}
			from = evs[len(evs)-1].Seq + 1
		}
	}
	// A close in a Codex fork's rollout, or a subagent's spawned with its
	// parent's history, counts only as its own line: a copy of its
	// parent's is the parent's close, its target resolved from the
	// parent's path (not the copy's session's: a fork of a subagent is
	// /root), at the parent's time, counted in the parent's rollout
	// (codexAgent.ownLine).
	for _, pc := range copiedCloses {
		if agentOf(pc.session).ownLine(rolloutOf, func(l *codexRolloutLines) bool { return l.closes[pc.call] }) {
			hear(pc.key, pc.output, said{at: pc.at})
		}
	}
	// A close of a path a missing spawn's is below closes its ancestor
	// only while that ancestor holds it: from the spawn on, no spawn of
	// that path before the close (a path is given again only once its
	// agent is closed, which closed the descendant then, as far as it
	// was open; a copy of a spawn in a fork's lines, which bears the
	// fork's time, counts too: then it is not known, and it ends nothing).
	// And a path names an agent of the caller's own agent tree only
	// (codexPathCloseInTree): a Codex fork's close of its own
	// /root/worker is no close of its parent's.
	spawnOf := map[string]missingSubagent{}
	for _, sp := range miss {
		spawnOf[sp.key()] = sp
	}
	inTree := codexPathCloseInTree(agentOf, byThread, rolloutOf)
	for _, pc := range pathCloses {
		sp := spawnOf[pc.key]
		from := sp.at
		if from.IsZero() || pc.at.Before(from) {
			continue
		}
		if !inTree(pc.session, pc.call, sp) {
			continue
		}
		if slices.ContainsFunc(spawnedAt[pc.path], func(t time.Time) bool { return t.After(from) && t.Before(pc.at) }) {
			continue
		}
		hear(pc.key, pc.output, said{at: pc.at})
	}
	ends := map[string]time.Time{}
	for _, sp := range miss {
		var all []said
		for _, s := range heard[sp.key()] {
			if s.restart || sp.at.IsZero() || !s.at.Before(sp.at) {
				all = append(all, s)
			}
		}
		// By time; at one time, a restart after an end (which came
		// first is not known).
		sort.Slice(all, func(i, j int) bool {
			if !all[i].at.Equal(all[j].at) {
				return all[i].at.Before(all[j].at)
			}
			return !all[i].restart && all[j].restart
		})
		// Only a close ends it: a wait's final status (completed,
		// errored, shutdown) ends its turn, not it. A send_input may
		// start it again with no wait seeing the turn before end (a wait
		// just after one can read that turn's status), and the
		// subagents it spawned, in its own rollout, which is not there,
		// run on; close_agent shuts it down with every open descendant.
		running := true
		var end time.Time
		for _, s := range all {
			if running = s.restart; !running {
				end = s.at
			}
		}
		if !running {
			ends[sp.key()] = end
		}
	}
	return ends, nil
}

// codexCloseOf says whether a close_agent output says it closed its
// target: its status (previous_status) reads, and is not "not_found";
// and whether it closed the target's open descendants too: Codex's
// close_agent that answers {"previous_status": ...} does
// (codex-rs/core/src/tools/handlers/multi_agents/close_agent.rs and
// multi_agents_v2/close_agent.rs call AgentControl::close_agent_v1,
// codex-rs/core/src/agent/control/legacy.rs: "Permanently close a V1
// agent and all open descendants", each spawn edge below it marked
// closed), where an older one, answering {"status": ...}
// (tools/handlers/collab.rs, multi_agents.rs), shut down its target
// alone (AgentControl::shutdown_agent).
func codexCloseOf(output json.RawMessage) (closed, descendants bool) {
	var res struct {
		Status         json.RawMessage `json:"status"`
		PreviousStatus json.RawMessage `json:"previous_status"`
	}
	read := false
	for _, t := range codexOutputTexts(output) {
		if t = strings.TrimSpace(t); strings.HasPrefix(t, "{") && json.Unmarshal([]byte(t), &res) == nil {
			read = true
			break
		}
	}
	if !read {
		return false, false
	}
	st := res.PreviousStatus
	if len(st) == 0 {
		st = res.Status
	}
	kind, _, ok := codexAgentStatus(st)
	closed = ok && kind != "not_found"
	return closed, closed && len(res.PreviousStatus) > 0
}

// codexAncestorThreads are, of each missing spawn of miss (by key) whose
// output is in its session's own lines (codexAgent.own: not a copy of
// another thread's) and whose call's time is read, the threads whose
// close closes it too: its spawner, that session's thread, then the
// thread that spawned that one (its session_meta's thread_spawn), and
// so on up, as far as the family's agents (byThread, codexByThread) say.
func codexAncestorThreads(miss []missingSubagent, agentOf func(eventlog.ID) codexAgent, byThread map[string]codexAgent) map[string][]string {
	up := map[string][]string{}
	for _, sp := range miss {
		if sp.unread != nil || sp.at.IsZero() || sp.session.IsZero() {
			continue
		}
		a := agentOf(sp.session)
		if !a.own || a.thread == "" {
			continue
		}
		up[sp.key()], _ = codexSpawnersUp(byThread, []string{a.thread}, a.spawner)
	}
	return up
}

// codexByThread are the agents of the family's sessions (sessions) by
// their thread (of two sessions of one thread, the later in sessions).
func codexByThread(agentOf func(eventlog.ID) codexAgent, sessions []eventlog.ID) map[string]codexAgent {
	byThread := map[string]codexAgent{}
	for _, s := range sessions {
		if a := agentOf(s); a.thread != "" {
			byThread[a.thread] = a
		}
	}
	return byThread
}

// codexSpawnersUp is chain with th and the threads up its thread_spawn
// spawners appended, as far as byThread says, up to maxFamily in all;
// top says it went as far as a thread no thread_spawn made (not round,
// nor cut at maxFamily).
func codexSpawnersUp(byThread map[string]codexAgent, chain []string, th string) (_ []string, top bool) {
	for th != "" && !slices.Contains(chain, th) && len(chain) < maxFamily {
		chain = append(chain, th)
		th = byThread[th].spawner
	}
	return chain, th == ""
}

// codexRolloutLines are, of the rollout of one thread, read, what a copy
// of its lines in another's would hold again: the call ids of its
// close_agent outputs, and the keys of its MultiAgentV2 spawns
// (codexTaskKey).
type codexRolloutLines struct {
	closes, spawns map[string]bool
}

// codexPathCloseInTree says whether a close by a MultiAgentV2 path, in
// session s's rollout (call its call id), was made in the agent tree of
// the missing spawn sp, the only one whose paths it names: each root
// thread (a session no thread_spawn made, a Codex fork too, though it
// copies its parent's lines) is "/root" of a tree of its own, its
// subagents below it, so a fork's close of its own /root/worker is no
// close of its parent's /root/worker. A line's tree is its session's
// root thread: up its thread_spawn spawners, as far as the family's
// agents (byThread, codexByThread) say (a spawner not imported is as far
// as it goes: two sessions below it share its tree).
//
// Only a line its session's own counts, the close and the spawn: a
// Codex fork's rollout, and a subagent's spawned with its parent's
// history, begin with a copy of their parent's lines (codexAgent.own),
// whose close is the parent's, of the parent's tree, its target resolved
// from the parent's path, at the parent's time; the parent's rollout
// holds the original, which counts there. A line of such a session is
// its own when its parent's rollout was read (rolloutOf) and holds no
// line of its call id (or spawn key: codexAgent.ownLine); else, its
// parent's rollout not read (removed since), or a spawn with no call id,
// which is a copy is not known, and it ends nothing: a spawn counts as
// writing on.
func codexPathCloseInTree(agentOf func(eventlog.ID) codexAgent, byThread map[string]codexAgent, rolloutOf map[string]*codexRolloutLines) func(s eventlog.ID, call string, sp missingSubagent) bool {
	// root is th's tree; "" when not known (th not known, or its
	// spawners going round).
	root := func(th string) string {
		chain, top := codexSpawnersUp(byThread, nil, th)
		if !top || len(chain) == 0 {
			return ""
		}
		return chain[len(chain)-1]
	}
	return func(s eventlog.ID, call string, sp missingSubagent) bool {
		closer, spawner := agentOf(s), agentOf(sp.session)
		if !closer.ownLine(rolloutOf, func(l *codexRolloutLines) bool { return l.closes[call] }) {
			return false
		}
		if !spawner.own && sp.task == codexTaskKey(sp.agent, "", sp.session, sp.seq) {
			return false // (its copy would bear another key)
		}
		if !spawner.ownLine(rolloutOf, func(l *codexRolloutLines) bool { return l.spawns[sp.task] }) {
			return false
		}
		tree := root(closer.thread)
		return tree != "" && tree == root(spawner.thread)
	}
}

// ownLine says whether a line of agent a's rollout, which copied says
// a rollout holds too, is a's own: every line of a session whose lines
// are all its own (codexAgent.own) is; of a Codex fork's, or a
// subagent's spawned with its parent's history, which begin with a copy
// of their parent's lines, one its parent's rollout, read (rolloutOf),
// does not hold. Its parent's rollout not read (removed since, never
// imported), whether it is a copy is not known: it is not taken as its
// own.
func (a codexAgent) ownLine(rolloutOf map[string]*codexRolloutLines, copied func(*codexRolloutLines) bool) bool {
	if a.own {
		return true
	}
	parent := rolloutOf[a.parent]
	return a.parent != "" && parent != nil && !copied(parent)
}

// codexNamesTask says whether collab call p (one of
// codexCollabAddress), of a session whose MultiAgentV2 path is caller,
// addresses the agent of path: its target resolves to it (a canonical
// path, or one relative to the caller's, as close_agent's does; not a
// descendant's, nor text that merely holds the path); or, the caller's
// path not known, a relative target is its last segments.
func codexNamesTask(caller, path string, p codexPatchPayload) bool {
	t := codexArgID(p.Arguments)
	if t == "" {
		return false
	}
	if got, ok := codexResolveTarget(caller, t); ok && got == path {
		return true
	}
	return caller == "" && !strings.HasPrefix(t, "/") && strings.HasSuffix(path, "/"+t)
}

// codexAgentStatus reads Codex AgentStatus st: its kind, and an errored
// one's reason; ok false when it is not one.
func codexAgentStatus(st json.RawMessage) (kind, why string, ok bool) {
	var s string
	if json.Unmarshal(st, &s) == nil {
		switch s {
		case "pending_init", "running", "interrupted", "shutdown", "not_found":
			return s, "", true
		}
		return "", "", false
	}
	var o map[string]json.RawMessage
	if len(st) == 0 || st[0] != '{' || json.Unmarshal(st, &o) != nil || len(o) != 1 {
		return "", "", false
	}
	if m, found := o["completed"]; found {
		var msg *string
		return "completed", "", json.Unmarshal(m, &msg) == nil
	}
	if m, found := o["errored"]; found {
		ok = json.Unmarshal(m, &why) == nil
		return "errored", why, ok
	}
	return "", "", false
}

// codexArgID is the thread a collab call's arguments name: its "id"
// (Codex's v1 tools), or "target"; "" when they do not read.
func codexArgID(args json.RawMessage) string {
	var a struct {
		ID     json.RawMessage `json:"id"`
		Target json.RawMessage `json:"target"`
	}
	if s := rawString(args); s == "" || json.Unmarshal([]byte(s), &a) != nil {
		return ""
	}
	if id := rawString(a.ID); id != "" {
		return id
	}
	return rawString(a.Target)
}

// codexPayloads are the Codex items of an imported event's body; none
// when it does not read, or (need given) its stored line holds none of
// need (keys are never cut out of a line, nor a string as short as an
// id).
func (r *Rook) codexPayloads(body cas.Key, need ...string) []codexPatchPayload {
	out, _ := r.codexPayloadsRead(body, need...)
	return out
}

// codexPayloadsRead is codexPayloads, and the error of a body that does
// not read.
func (r *Rook) codexPayloadsRead(body cas.Key, need ...string) ([]codexPatchPayload, error) {
	lines, err := r.importedLines(body, func(rest []byte) bool {
		return len(need) == 0 || slices.ContainsFunc(need, func(n string) bool { return bytes.Contains(rest, []byte(n)) })
	})
	if err != nil {
		return nil, err
	}
	var out []codexPatchPayload
	for _, line := range lines {
		if p, ok := codexPatchPayloadOf(entryBytes(trimNewline(line))); ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// codexRolloutOf is where the rollout of Codex thread th is: Codex
// writes each under its sessions directory, by day
// (YYYY/MM/DD/rollout-<time>-<thread id>.jsonl, .zst too); looked for
// beside the rollouts of family lf's sessions, and in the days of their
// sessions directory; "" when not found.
func (r *Rook) codexRolloutOf(lf importedFamily, th string) string {
	match := func(n string) bool {
		return strings.HasPrefix(n, "rollout-") && (strings.HasSuffix(n, "-"+th+".jsonl") || strings.HasSuffix(n, "-"+th+".jsonl.zst"))
	}
	in := func(d string) string {
		ents, _ := r.fs.ReadDir(d)
		for _, e := range ents {
			if p := filepath.Join(d, e.Name()); match(e.Name()) && e.Type().IsRegular() {
				return p
			}
		}
		return ""
	}
	seen := map[string]bool{}
	var roots []string
	for _, s := range append(append([]eventlog.ID{}, lf.line...), lf.members...) {
		m, err := r.Log.ReadMeta(s)
		if err != nil || m.Source == nil || m.Source.Path == "" {
			continue
		}
		d := filepath.Dir(m.Source.Path)
		if !seen[d] {
			seen[d] = true
			if p := in(d); p != "" {
				return p
			}
		}
		if root := filepath.Dir(filepath.Dir(filepath.Dir(d))); isDay(d) && !seen["root:"+root] {
			seen["root:"+root] = true
			roots = append(roots, root)
		}
	}
	for _, root := range roots {
		for _, y := range subdirs(r, root, 4) {
			for _, mo := range subdirs(r, y, 2) {
				for _, d := range subdirs(r, mo, 2) {
					if seen[d] {
						continue
					}
					if p := in(d); p != "" {
						return p
					}
				}
			}
		}
	}
	return ""
}

// isDay says whether d ends in YYYY/MM/DD, as Codex's sessions directory
// names its days.
func isDay(d string) bool {
	day, mo, y := filepath.Base(d), filepath.Base(filepath.Dir(d)), filepath.Base(filepath.Dir(filepath.Dir(d)))
	return digits(y, 4) && digits(mo, 2) && digits(day, 2)
}

func digits(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// subdirs are d's directories whose names are n digits.
func subdirs(r *Rook, d string, n int) []string {
	ents, _ := r.fs.ReadDir(d)
	var out []string
	for _, e := range ents {
		if e.IsDir() && digits(e.Name(), n) {
			out = append(out, filepath.Join(d, e.Name()))
		}
	}
	return out
}

// noCodexSubagents are Codex tools whose outputs name no subagent: their
// bodies are not read for one.
var noCodexSubagents = map[string]bool{"apply_patch": true, "shell": true, "shell_command": true, "local_shell": true,
	"exec_command": true, "write_stdin": true, "update_plan": true, "view_image": true, "web_search": true,
	"read_file": true, "list_dir": true, "grep_files": true}
