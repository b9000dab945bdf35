package agent

import (
	"slices"
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
func subagentRefs(body []byte) []string {
	var refs []string
	for _, line := range sourceLines(body) {
		var l struct {
			ToolUseResult json.RawMessage `json:"toolUseResult"`
			Payload       struct {
				Type   string          `json:"type"`
				Output json.RawMessage `json:"output"`
			} `json:"payload"`
			// An older Codex's bare item, with no envelope (codexBareLine).
			Type   json.RawMessage `json:"type"`
			Output json.RawMessage `json:"output"`
		}
		if json.Unmarshal(trimNewline(line), &l) != nil {
			continue
		}
		if len(l.ToolUseResult) > 0 && l.ToolUseResult[0] == '{' {
			var tr struct {
				AgentID json.RawMessage `json:"agentId"`
			}
			if json.Unmarshal(l.ToolUseResult, &tr) == nil {
				if a := rawString(tr.AgentID); a != "" {
					refs = appendNew(refs, "agent-"+a)
				}
			}
		}
		typ, out := l.Payload.Type, l.Payload.Output
		if t := rawString(l.Type); codexItemTypes[t] {
			typ, out = t, l.Output
		}
		if codexOutputs[typ] {
			for _, a := range codexSpawnedIDs(out) {
				refs = appendNew(refs, a)
			}
		}
	}
	return refs
}

// codexSpawnedIDs reads the agent_id of a spawn_agent output: a string
// holding the JSON object, or content items whose text holds it.
func codexSpawnedIDs(output json.RawMessage) []string {
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
	var ids []string
	for _, t := range texts {
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

func appendNew(ss []string, s string) []string {
	if slices.Contains(ss, s) {
		return ss
	}
	return append(ss, s)
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
	ids, err := r.Log.IDs()
	if err != nil {
		return nil
	}
	out := map[string]eventlog.ID{}
	for _, other := range ids {
		if other == id {
			continue
		}
		m, err := r.Log.ReadMeta(other)
		if err != nil || m.Parent == nil || *m.Parent != id || ImportedFork(m) {
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
// page too. The session's children are looked up only when the page
// reports a subagent.
func (r *Rook) linkSubagents(id eventlog.ID, page []EventView, bodies [][]byte) {
	refs := map[int][]string{}
	for i, v := range page {
		if !v.imported || bodies[i] == nil || v.Kind != eventlog.KindToolResult {
			continue
		}
		if rs := subagentRefs(bodies[i]); len(rs) > 0 {
			refs[i] = rs
		}
	}
	if len(refs) == 0 {
		return
	}
	children := r.sessionChildren(id)
	if len(children) == 0 {
		return
	}
	at := make(map[uint64]int, len(page))
	for i, v := range page {
		at[v.Seq] = i
	}
	for i := range page {
		for _, ref := range refs[i] {
			child, ok := children[ref]
			if !ok {
				continue
			}
			page[i].Children = appendID(page[i].Children, child)
			for _, c := range page[i].Calls {
				if j, ok := at[c]; ok {
					page[j].Children = appendID(page[j].Children, child)
				}
			}
		}
	}
}

func appendID(ids []eventlog.ID, id eventlog.ID) []eventlog.ID {
	if slices.Contains(ids, id) {
		return ids
	}
	return append(ids, id)
}
