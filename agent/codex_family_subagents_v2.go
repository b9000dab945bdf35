package agent

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	json "github.com/go-json-experiment/json/v1"

	"github.com/rookhq/rook/eventlog"
)

// Codex has a second collab tool set, MultiAgentV2 (openai/codex
// codex-rs/core/src/tools/handlers/multi_agents_v2/, the tools' schemas
// in multi_agents_spec.rs; Codex 0.144 writes its calls in the
// "collaboration" namespace, the v1 tools' in "multi_agent_v1", each
// call's name the tool's): its agents are named by paths, not threads.
//
//   - spawn_agent ({"task_name": ..., "message": ..., "fork_turns": ...})
//     answers {"task_name": "<canonical path>", "nickname": ...}, or the
//     path alone (hide_spawn_agent_metadata): no thread id. The path is
//     the spawner's own ("/root" for a session no thread_spawn made) and
//     the task name ("/root/worker", "/root/worker/helper": AgentPath,
//     thread_spawn_source in multi_agents_common.rs).
//   - The spawned thread's rollout is its own, its session_meta's source
//     {"subagent": {"thread_spawn": {"parent_thread_id": ..., "depth":
//     ..., "agent_path": "<canonical path>", "agent_nickname": ...,
//     "agent_role": ...}}} (SubAgentSource::ThreadSpawn): imported as its
//     parent's child, as a v1 subagent is.
//   - close_agent, send_message, followup_task and interrupt_agent take a
//     "target": a thread id, or an agent reference, a canonical path or a
//     task name relative to the caller's own path (resolve_agent_target,
//     AgentPath::resolve). close_agent answers {"previous_status":
//     <AgentStatus>} and closes the agent and its open descendants;
//     followup_task starts a turn of it, send_message queues a message
//     (both load it again if it was closed: ensure_v2_agent_loaded), and
//     answer nothing. wait_agent ({"timeout_ms": ...}) names no agent and
//     answers {"message": ..., "timed_out": ...}; list_agents reads the
//     live agents.
//   - A path is an agent's while it is open: once closed, Codex's registry
//     releases it (release_spawned_thread), and a spawn may give it to a
//     new thread.
//
// So a v2 spawn_agent output names a subagent by its path; an imported
// session holds it when it is a thread_spawn subagent of that path whose
// parent thread is one whose lines the rollouts holding that output may
// hold (codexLineage: the spawner's own, or a fork's or a subagent's copy
// of its lines). A path spawned more times in the family than such
// sessions hold leaves which of its subagents is missing unknown: each of
// its spawns counts as missing.

// codexAgent is what a Codex session's own session_meta says of it as an
// agent: its thread, the thread that spawned it (if one did), and its
// MultiAgentV2 path: "/root" for a session no thread_spawn with a path
// made (as Codex resolves a reference of such a caller), "" when its
// session_meta does not read; and when its session_meta was written
// (zero when it does not read). spawner is the thread its source's
// thread_spawn names (parent is that of the metadata, a fork's too), and
// own says its rollout's lines are all its own: neither a Codex fork's
// nor a subagent's that begins with a copy of its parent's
// (Source.CopiesParent), so a spawn in them is its own.
type codexAgent struct {
	thread, parent, path string
	started              time.Time
	spawner              string
	own                  bool
}

// codexAgentOf reads imported session s's metadata and session_meta: a
// session that is not an imported one is the zero codexAgent; one whose
// session_meta does not read has no path.
func (r *Rook) codexAgentOf(s eventlog.ID) codexAgent {
	m, err := r.Log.ReadMeta(s)
	if err != nil || m.Source == nil {
		return codexAgent{}
	}
	a := codexAgent{thread: childSourceID(m), parent: m.Source.Parent}
	evs, err := r.Log.Read(s, 0, 4)
	if err != nil {
		return a
	}
	for _, ev := range evs {
		lines, err := r.importedLines(ev.Body, func(rest []byte) bool { return bytes.Contains(rest, []byte(`"session_meta"`)) })
		if err != nil {
			continue
		}
		for _, line := range lines {
			var l struct {
				Type    string `json:"type"`
				Payload struct {
					Source       json.RawMessage `json:"source"`
					AgentPath    json.RawMessage `json:"agent_path"`
					ForkedFromID json.RawMessage `json:"forked_from_id"`
				} `json:"payload"`
			}
			if json.Unmarshal(entryBytes(trimNewline(line)), &l) != nil || l.Type != "session_meta" {
				continue
			}
			_, a.spawner = codexSubagent(l.Payload.Source)
			// (A fork's lines begin with its parent's, whether or not rook
			// holds that parent.)
			a.own = !ImportedFork(m) && !m.Source.CopiesParent && rawString(l.Payload.ForkedFromID) == ""
			a.path = codexAgentPath(l.Payload.Source)
			if a.path == "" {
				a.path = rawString(l.Payload.AgentPath)
			}
			if !codexCanonical(a.path) {
				a.path = "/root"
			}
			a.started = ev.Time
			return a
		}
	}
	return a
}

// codexLineage are the threads whose lines imported session s's rollout
// may hold: its own, then, up, the thread it was forked or spawned from
// (a fork copies its parent's lines, a subagent spawned with its parent's
// history those too), and theirs, as far as rook holds them.
func (r *Rook) codexLineage(s eventlog.ID) []string {
	var out []string
	for range maxFamily {
		m, err := r.Log.ReadMeta(s)
		if err != nil || m.Source == nil {
			break
		}
		if th := childSourceID(m); th != "" && !slices.Contains(out, th) {
			out = append(out, th)
		}
		if p := m.Source.Parent; p != "" && !slices.Contains(out, p) {
			out = append(out, p) // (named, though removed since)
		}
		if m.Parent == nil {
			break
		}
		s = *m.Parent
	}
	return out
}

// codexAgentPath is the agent_path a session_meta's source names
// ({"subagent": {"thread_spawn": {"agent_path": ...}}}), or "".
func codexAgentPath(source json.RawMessage) string {
	var src codexSource
	if len(source) == 0 || source[0] != '{' || json.Unmarshal(source, &src) != nil || len(src.Subagent) == 0 || src.Subagent[0] != '{' {
		return ""
	}
	var spawn struct {
		ThreadSpawn struct {
			AgentPath json.RawMessage `json:"agent_path"`
		} `json:"thread_spawn"`
	}
	if json.Unmarshal(src.Subagent, &spawn) != nil {
		return ""
	}
	return rawString(spawn.ThreadSpawn.AgentPath)
}

// codexSpawnedTasks reads the canonical paths a MultiAgentV2 spawn_agent
// output names ({"task_name": "/root/..."}): a string holding the JSON
// object, or content items whose text holds it.
func codexSpawnedTasks(output json.RawMessage) []string {
	var paths []string
	for _, t := range codexOutputTexts(output) {
		t = strings.TrimSpace(t)
		if !strings.HasPrefix(t, "{") || !strings.Contains(t, `"task_name"`) {
			continue
		}
		var res struct {
			TaskName json.RawMessage `json:"task_name"`
		}
		if json.Unmarshal([]byte(t), &res) == nil {
			if p := rawString(res.TaskName); codexCanonical(p) && p != "/root" {
				paths = append(paths, p)
			}
		}
	}
	return paths
}

// codexCanonical says whether p is a canonical agent path: "/root", then
// segments of lowercase letters, digits and underscores (AgentPath).
func codexCanonical(p string) bool {
	rest, ok := strings.CutPrefix(p, "/root")
	if !ok {
		return false
	}
	if rest == "" {
		return true
	}
	if rest[0] != '/' {
		return false
	}
	for _, seg := range strings.Split(rest[1:], "/") {
		if !codexTaskName(seg) {
			return false
		}
	}
	return true
}

// codexTaskName says whether seg is a task name Codex takes: lowercase
// letters, digits and underscores, not "root", "." nor "..".
func codexTaskName(seg string) bool {
	if seg == "" || seg == "root" {
		return false
	}
	for _, c := range seg {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

// codexResolveTarget is the canonical path a collab call's target names
// from a caller whose own path is caller (AgentPath::resolve): a
// canonical path as it is, a relative one below the caller's. ok is false
// for a target that is no agent path (a thread id), or a relative one of
// a caller whose path is not known.
func codexResolveTarget(caller, target string) (string, bool) {
	target = strings.TrimSpace(target)
	if strings.HasPrefix(target, "/") {
		return target, codexCanonical(target)
	}
	if caller == "" || target == "" {
		return "", false
	}
	for _, seg := range strings.Split(target, "/") {
		if !codexTaskName(seg) {
			return "", false
		}
	}
	return caller + "/" + target, true
}

// codexTaskKey names one MultiAgentV2 spawn of path: its call id, or, a
// call with none, its output's event.
func codexTaskKey(path, call string, s eventlog.ID, seq uint64) string {
	if call == "" {
		call = fmt.Sprintf("%s #%d", s, seq)
	}
	return "v2\x00" + path + "\x00" + call
}

// codexTaskSpawn is one MultiAgentV2 spawn the family's rollouts hold.
type codexTaskSpawn struct {
	first missingSubagent // its earliest output (and call time)
	// threads are those whose lines the rollouts holding its output may
	// hold (codexLineage): its spawner is one.
	threads map[string]bool
}

// codexHeldTasks matches the MultiAgentV2 spawns of the family (tasks, by
// key, in order) with the thread_spawn subagents of its sessions (held):
// those it cannot match every spawn of a path with a subagent of its own
// (whose parent is one of the threads holding the spawn) are missing,
// each of them; reported gets the threads of the subagents that match
// one.
func codexHeldTasks(tasks map[string]*codexTaskSpawn, order []string, held []codexAgent, reported map[string]bool) []missingSubagent {
	byPath := map[string][]string{}
	var paths []string
	for _, k := range order {
		p := tasks[k].first.agent
		if byPath[p] == nil {
			paths = append(paths, p)
		}
		byPath[p] = append(byPath[p], k)
	}
	var miss []missingSubagent
	for _, p := range paths {
		keys := byPath[p]
		var cands []codexAgent
		for _, y := range held {
			if y.path == p {
				cands = append(cands, y)
			}
		}
		fits := func(k string, y codexAgent) bool { return y.parent != "" && tasks[k].threads[y.parent] }
		// A subagent for each spawn, each its own (a bipartite matching,
		// augmenting paths: a family holds few spawns of one path).
		owner := make([]int, len(cands)) // the spawn each subagent is matched to, +1
		var try func(i int, seen []bool) bool
		try = func(i int, seen []bool) bool {
			for j, y := range cands {
				if seen[j] || !fits(keys[i], y) {
					continue
				}
				seen[j] = true
				if owner[j] == 0 || try(owner[j]-1, seen) {
					owner[j] = i + 1
					return true
				}
			}
			return false
		}
		all := true
		for i := range keys {
			if !try(i, make([]bool, len(cands))) {
				all = false
			}
		}
		for _, y := range cands {
			for _, k := range keys {
				if fits(k, y) {
					reported[y.thread] = true
				}
			}
		}
		if all {
			continue
		}
		for _, k := range keys {
			s := tasks[k].first
			s.sameTask = len(keys)
			miss = append(miss, s)
		}
	}
	return miss
}

// codexTaskHint says, of a missing MultiAgentV2 subagent s, where its
// rollout is: a spawn_agent output names its task, not its thread, so
// the file's name does not say.
func codexTaskHint(s missingSubagent) string {
	by := ""
	switch len(s.spawners) {
	case 0:
	case 1:
		by = ", spawned by thread " + s.spawners[0]
	default:
		by = fmt.Sprintf(", spawned by thread %s or one whose lines that thread's rollout copies (%s)", s.spawners[0], strings.Join(s.spawners[1:], ", "))
	}
	return fmt.Sprintf("its rollout is the one whose session_meta names agent_path %s%s (a MultiAgentV2 spawn_agent output names its task, not its thread, which names the file: Codex writes it under ~/.codex/sessions/YYYY/MM/DD as rollout-*-<its thread id>.jsonl, .zst too)", s.agent, by)
}

// codexTaskChildren are, by the seq of the spawn_agent output of session
// id that spawned it, the imported subagents among id's children of the
// MultiAgentV2 paths of paths, for show to link (linkSubagents): a
// thread_spawn child of the path whose parent thread is one whose lines
// id's rollout may hold (codexLineage), as codexHeldTasks holds a spawn
// to be held. A path is free again once its agent is closed, and Codex
// gives it to the next spawn only then, so the spawns of a path in id's
// rollout, in order, spawned its children in the order they started
// (their session_meta's time): each is linked to its own. When the
// children of a path are not as many as its spawns (one's rollout not
// imported, or removed since), which spawn's is missing is not known, as
// for a rewind (codexHeldTasks): none of that path is linked; nor when
// two started at one time. A show of a page with such an output reads
// the spawn_agent outputs of the whole session: only when id has a
// child of its path.
func (r *Rook) codexTaskChildren(id eventlog.ID, paths map[string]bool) map[uint64]eventlog.ID {
	kids, err := r.Log.Children(id)
	if err != nil {
		return nil
	}
	lineage := r.codexLineage(id)
	newest := map[string]eventlog.ID{} // a thread's session: of two (imported again), the newest
	agents := map[eventlog.ID]codexAgent{}
	for _, m := range kids {
		if ImportedFork(m) {
			continue
		}
		a := r.codexAgentOf(m.ID)
		if !paths[a.path] || a.parent == "" || !slices.Contains(lineage, a.parent) {
			continue
		}
		if prev, ok := newest[a.thread]; !ok || prev.String() < m.ID.String() {
			newest[a.thread] = m.ID
			agents[m.ID] = a
		}
	}
	held := map[string][]eventlog.ID{} // by path
	for _, s := range newest {
		held[agents[s].path] = append(held[agents[s].path], s)
	}
	if len(held) == 0 {
		return nil
	}
	spawns := map[string][]uint64{} // by path, in order
	if err := r.eventsFrom(id, 0, func(ev eventlog.Event) bool {
		if ev.Kind != eventlog.KindToolResult || ev.Label != "spawn_agent" {
			return true
		}
		for _, p := range r.codexPayloads(ev.Body) {
			for _, path := range codexSpawnedTasks(p.Output) {
				if held[path] != nil && !slices.Contains(spawns[path], ev.Seq) {
					spawns[path] = append(spawns[path], ev.Seq)
				}
			}
		}
		return true
	}); err != nil {
		return nil
	}
	out := map[uint64]eventlog.ID{}
	for path, ss := range held {
		seqs := spawns[path]
		if len(seqs) != len(ss) {
			continue
		}
		sort.Slice(ss, func(i, j int) bool { return agents[ss[i]].started.Before(agents[ss[j]].started) })
		ordered := true
		for i := range ss {
			if agents[ss[i]].started.IsZero() || i > 0 && !agents[ss[i-1]].started.Before(agents[ss[i]].started) {
				ordered = false
			}
		}
		if !ordered {
			continue
		}
		for i, seq := range seqs {
			out[seq] = ss[i]
		}
	}
	return out
}
