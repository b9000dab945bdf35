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

// toolCallIDs are the ids of the calls an imported event's lines make
// (calls) or answer (results): Claude Code's tool_use block id and
// tool_result tool_use_id, Codex's call_id of a call and of its output.
func toolCallIDs(body []byte) (calls, results []string) {
	for _, line := range sourceLines(body) {
		var l struct {
			Message struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
			Payload struct {
				Type   string `json:"type"`
				CallID string `json:"call_id"`
			} `json:"payload"`
			// An older Codex's bare item, with no envelope (codexBareLine).
			Type   json.RawMessage `json:"type"`
			CallID json.RawMessage `json:"call_id"`
		}
		if json.Unmarshal(trimNewline(line), &l) != nil {
			continue
		}
		typ, id := l.Payload.Type, l.Payload.CallID
		if t := rawString(l.Type); codexItemTypes[t] {
			typ, id = t, rawString(l.CallID)
		}
		switch {
		case codexCalls[typ] && id != "":
			calls = append(calls, id)
		case codexOutputs[typ] && id != "":
			results = append(results, id)
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
				calls = append(calls, b.ID)
			case b.Type == "tool_result" && b.ToolUseID != "":
				results = append(results, b.ToolUseID)
			}
		}
	}
	return calls, results
}

// toolCallRefs are the ids of the calls an event makes and answers
// (toolCallIDs).
type toolCallRefs struct{ calls, results []string }

// toolCallRefsOf is toolCallRefs of an event: none unless it is an
// imported tool call or result whose body (nil: unread) is at hand.
func toolCallRefsOf(kind eventlog.Kind, imported bool, body []byte) toolCallRefs {
	if !imported || body == nil || (kind != eventlog.KindToolCall && kind != eventlog.KindToolResult) {
		return toolCallRefs{}
	}
	calls, results := toolCallIDs(body)
	return toolCallRefs{calls, results}
}

// joinToolCalls sets, on each imported tool result of the page, the seqs
// of the tool calls it answers (joined by tool_use_id / call_id), looking
// among the page's earlier events and up to callLookBack events before
// the page. bodies are the page's events' bodies (nil: unread).
func (r *Rook) joinToolCalls(id eventlog.ID, page []EventView, bodies [][]byte) {
	refs := make([]toolCallRefs, len(page))
	for i, v := range page {
		refs[i] = toolCallRefsOf(v.Kind, v.imported, bodies[i])
	}
	r.joinToolCallRefs(id, page, refs)
}

// joinToolCallRefs is joinToolCalls, given the ids each event of the page
// makes and answers rather than its body (an export keeps no bodies).
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
				page[i].Calls = appendSeq(page[i].Calls, seq)
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
			calls, _ := toolCallIDs(body)
			for _, c := range calls {
				if want[c] {
					callAt[c] = ev.Seq
					delete(want, c)
				}
			}
		}
	}
	for _, w := range waiting {
		for _, c := range w.ids {
			if seq, ok := callAt[c]; ok {
				page[w.i].Calls = appendSeq(page[w.i].Calls, seq)
			}
		}
	}
}

// appendSeq appends seq unless it is there already (two results of one
// event answering calls of one event).
func appendSeq(seqs []uint64, seq uint64) []uint64 {
	for _, s := range seqs {
		if s == seq {
			return seqs
		}
	}
	return append(seqs, seq)
}
