package agent

import (
	"slices"

	json "github.com/go-json-experiment/json/v1"

	"github.com/rookhq/rook/eventlog"
)

// callLookBack bounds how far before a page Show looks for the calls its
// tool results answer: a result comes soon after its call, and a page
// must not cost a read of the whole session.
const callLookBack = 256

// toolCallRefs are what an imported event's lines say of tool calls: the
// ids of the calls they make (calls) or answer (results), Claude Code's
// tool_use block id and tool_result tool_use_id, Codex's call_id of a
// call and of its output; and the subagents a result reports
// (subagentRefs), and the MultiAgentV2 paths a Codex output names
// (codexSpawnedTasks), for linkSubagents. One decode of each line gives
// all.
type toolCallRefs struct{ calls, results, subagents, tasks []string }

// toolCallIDs reads the toolCallRefs of an imported event's lines.
func toolCallIDs(body []byte) toolCallRefs {
	var refs toolCallRefs
	for _, line := range sourceLines(body) {
		var l struct {
			Message struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
			ToolUseResult json.RawMessage `json:"toolUseResult"`
			Payload       struct {
				Type   string          `json:"type"`
				CallID json.RawMessage `json:"call_id"`
				ID     json.RawMessage `json:"id"`
				Output json.RawMessage `json:"output"`
			} `json:"payload"`
			// An older Codex's bare item, with no envelope (codexBareLine).
			Type   json.RawMessage `json:"type"`
			CallID json.RawMessage `json:"call_id"`
			ID     json.RawMessage `json:"id"`
			Output json.RawMessage `json:"output"`
		}
		if json.Unmarshal(trimNewline(line), &l) != nil {
			continue
		}
		typ, output := l.Payload.Type, l.Payload.Output
		callID, itemID := rawString(l.Payload.CallID), rawString(l.Payload.ID)
		if t := rawString(l.Type); codexItemTypes[t] {
			typ, callID, itemID, output = t, rawString(l.CallID), rawString(l.ID), l.Output
		}
		id := callID
		if codexCalls[typ] {
			id = codexCallID(typ, callID, itemID)
		}
		switch {
		case codexCalls[typ] && id != "":
			refs.calls = append(refs.calls, id)
		case codexOutputs[typ] && id != "":
			refs.results = append(refs.results, id)
		}
		for _, a := range subagentRefs(l.ToolUseResult, typ, output) {
			refs.subagents = appendUnique(refs.subagents, a)
		}
		if codexOutputs[typ] {
			for _, path := range codexSpawnedTasks(output) {
				refs.tasks = appendUnique(refs.tasks, path)
			}
		}
		var blocks []struct {
			Type      string `json:"type"`
			ID        string `json:"id"`
			ToolUseID string `json:"tool_use_id"`
		}
		if len(l.Message.Content) == 0 || l.Message.Content[0] != '[' || json.Unmarshal(l.Message.Content, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			switch {
			case b.Type == "tool_use" && b.ID != "":
				refs.calls = append(refs.calls, b.ID)
			case b.Type == "tool_result" && b.ToolUseID != "":
				refs.results = append(refs.results, b.ToolUseID)
			}
		}
	}
	return refs
}

// toolCallRefsOf is toolCallRefs of an event: none unless it is an
// imported tool call or result whose body (nil: unread) is at hand.
func toolCallRefsOf(kind eventlog.Kind, imported bool, body []byte) toolCallRefs {
	if !imported || body == nil || (kind != eventlog.KindToolCall && kind != eventlog.KindToolResult) {
		return toolCallRefs{}
	}
	return toolCallIDs(body)
}

// joinToolCallRefs sets, on each imported tool result of the page, the
// seqs of the tool calls it answers (joined by tool_use_id / call_id),
// looking among the page's earlier events and up to callLookBack events
// before the page. refs are what each event of the page says of calls
// (toolCallRefsOf; a page keeps the refs, not the bodies).
func (r *Rook) joinToolCallRefs(id eventlog.ID, page []EventView, refs []toolCallRefs) {
	callAt := map[string]uint64{}
	type pending struct {
		i   int
		ids []string
	}
	var waiting []pending
	for i, v := range page {
		calls, results := refs[i].calls, refs[i].results
		for _, c := range calls {
			callAt[c] = v.Seq
		}
		var missing []string
		for _, res := range results {
			if seq, ok := callAt[res]; ok {
				page[i].Calls = appendUnique(page[i].Calls, seq)
			} else {
				missing = append(missing, res)
			}
		}
		if len(missing) > 0 {
			waiting = append(waiting, pending{i, missing})
		}
	}
	defer func() {
		for i := range page {
			slices.Sort(page[i].Calls) // the order of the calls, not of the results
		}
	}()
	if len(waiting) == 0 || len(page) == 0 || page[0].Seq == 0 {
		return
	}
	want := map[string]bool{}
	for _, w := range waiting {
		for _, c := range w.ids {
			want[c] = true
		}
	}
	// The calls before the page, newest first, until every one is found.
	before := page[0].Seq
	for looked := 0; looked < callLookBack && before > 0 && len(want) > 0; {
		evs, err := r.Log.ReadBefore(id, before, min(64, callLookBack-looked))
		if err != nil || len(evs) == 0 {
			break
		}
		looked += len(evs)
		before = evs[0].Seq
		for j := len(evs) - 1; j >= 0; j-- {
			ev := evs[j]
			if ev.Kind != eventlog.KindToolCall {
				continue
			}
			body, imported, err := r.readBody(ev.Body)
			if err != nil || !imported {
				continue
			}
			for _, c := range toolCallIDs(body).calls {
				if want[c] {
					callAt[c] = ev.Seq
					delete(want, c)
				}
			}
		}
	}
	for _, w := range waiting {
		for _, c := range w.ids {
			// callAt holds the page's own calls too: one after the
			// result (a Codex output written before its call) is none
			// it answers, and a page from seq 0 never links it.
			if seq, ok := callAt[c]; ok && seq < page[w.i].Seq {
				page[w.i].Calls = appendUnique(page[w.i].Calls, seq)
			}
		}
	}
}

// appendUnique appends v unless s has it already (two results of one
// event answering calls of one event; a subagent a line names twice).
func appendUnique[T comparable](s []T, v T) []T {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}
