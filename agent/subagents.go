package agent

import (
	"strings"

	json "github.com/go-json-experiment/json/v1"

	"github.com/rookhq/rook/eventlog"
)

// subagentRefs are the subagents an imported tool result's lines report,
// each as the source session id its own file is imported under
// (eventlog.Source.ID):
//
//   - Claude Code: the result of a Task (Agent) call carries
//     toolUseResult.agentId ("a881341"); the subagent's transcript is
//     agent-<agentId>.jsonl, imported under the id "agent-<agentId>".
//   - Codex: spawn_agent's output is the JSON {"agent_id": "<thread id>",
//     "nickname": ...} (codex-rs SpawnAgentResult), as a string or as the
//     text of an output content item; the child's rollout is imported
//     under its thread id, its session_meta's id.
//
// It reads one line's toolUseResult and, of a Codex output item (typ),
// its output: toolCallIDs decodes the line once for both.
func subagentRefs(toolUseResult json.RawMessage, typ string, output json.RawMessage) []string {
	var refs []string
	if len(toolUseResult) > 0 && toolUseResult[0] == '{' {
		var tr struct {
			AgentID json.RawMessage `json:"agentId"`
		}
		if json.Unmarshal(toolUseResult, &tr) == nil {
			if a := rawString(tr.AgentID); a != "" {
				refs = append(refs, "agent-"+a)
			}
		}
	}
	if codexOutputs[typ] {
		refs = append(refs, codexSpawnedIDs(output)...)
	}
	return refs
}

// codexSpawnedIDs reads the agent_id of a spawn_agent output: a string
// holding the JSON object, or content items whose text holds it.
func codexSpawnedIDs(output json.RawMessage) []string {
	var ids []string
	for _, t := range codexOutputTexts(output) {
		t = strings.TrimSpace(t)
		if !strings.HasPrefix(t, "{") || !strings.Contains(t, `"agent_id"`) {
			continue
		}
		var res struct {
			AgentID json.RawMessage `json:"agent_id"`
		}
		if json.Unmarshal([]byte(t), &res) == nil {
			if a := rawString(res.AgentID); a != "" {
				ids = append(ids, a)
			}
		}
	}
	return ids
}

// codexOutputTexts are the texts of a Codex tool output: a string, or
// its content items' texts.
func codexOutputTexts(output json.RawMessage) []string {
	var texts []string
	var s string
	var items []struct {
		Text string `json:"text"`
	}
	switch {
	case json.Unmarshal(output, &s) == nil:
		texts = []string{s}
	case json.Unmarshal(output, &items) == nil:
		for _, it := range items {
			texts = append(texts, it.Text)
		}
	}
	return texts
}

// childSourceID is the source session id a child's file is known by:
// its metadata's (the file name for Claude Code, without .jsonl and a
// .zst after it).
func childSourceID(m eventlog.Meta) string {
	if m.Source == nil {
		return ""
	}
	return strings.TrimSuffix(strings.TrimSuffix(m.Source.ID, ".zst"), ".jsonl")
}

// sessionChildren maps the source session ids of the imported sessions
// whose parent is id to those sessions: of two with one source id (a file
// imported again as a new session), the newest. It reads every session's
// metadata (small files, no events), once; a metadata file that does not
// read is passed over.
func (r *Rook) sessionChildren(id eventlog.ID) map[string]eventlog.ID {
	kids, err := r.Log.Children(id)
	if err != nil {
		return nil
	}
	out := map[string]eventlog.ID{}
	for _, m := range kids {
		if ImportedFork(m) {
			continue
		}
		sid := childSourceID(m)
		if sid == "" {
			continue
		}
		if prev, ok := out[sid]; !ok || prev.String() < m.ID.String() {
			out[sid] = m.ID
		}
	}
	return out
}

// linkSubagents sets, on each imported tool result of the page that
// reports a subagent, the child session the subagent's transcript was
// imported as (Children), and on the call it answers when that is in the
// page too: by the source id the result names, or, of a Codex
// MultiAgentV2 spawn_agent output, which names a path and no thread, the
// child of that path its spawn is matched to (codexTaskChildren). The
// session's children are looked up only when the page reports a
// subagent.
func (r *Rook) linkSubagents(id eventlog.ID, page []EventView, refs []toolCallRefs) {
	reports := false
	paths := map[string]bool{}
	for i, v := range page {
		if v.Kind != eventlog.KindToolResult {
			continue
		}
		if len(refs[i].subagents) > 0 {
			reports = true
		}
		if v.Label == "spawn_agent" {
			for _, p := range refs[i].tasks {
				paths[p] = true
			}
		}
	}
	if !reports && len(paths) == 0 {
		return
	}
	var children map[string]eventlog.ID
	if reports {
		children = r.sessionChildren(id)
	}
	var spawned map[uint64]eventlog.ID
	if len(paths) > 0 {
		spawned = r.codexTaskChildren(id, paths)
	}
	if len(children) == 0 && len(spawned) == 0 {
		return
	}
	at := make(map[uint64]int, len(page))
	for i, v := range page {
		at[v.Seq] = i
	}
	link := func(i int, child eventlog.ID) {
		page[i].Children = appendUnique(page[i].Children, child)
		for _, c := range page[i].Calls {
			if j, ok := at[c]; ok {
				page[j].Children = appendUnique(page[j].Children, child)
			}
		}
	}
	for i := range page {
		if page[i].Kind != eventlog.KindToolResult {
			continue
		}
		for _, ref := range refs[i].subagents {
			if child, ok := children[ref]; ok {
				link(i, child)
			}
		}
		if child, ok := spawned[page[i].Seq]; ok {
			link(i, child)
		}
	}
}
