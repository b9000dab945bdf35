package agent

import (
	"bytes"
	"strings"

	json "github.com/go-json-experiment/json/v1"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
)

// A Claude Code subagent's transcript (<session>/subagents/agent-*.jsonl)
// has no toolUseResult on a tool result that succeeded: Claude Code
// enriches its main thread's lines only (a failed one has a string,
// "Error: ..."). So a subagent's Edit, MultiEdit, Write or NotebookEdit
// says nothing of the file before it, and read as the main thread's are
// (transcript_states.go) it was no state at all: a rewind of the parent
// left a file only the subagent changed after the point as it was, and
// saying nothing, and put a file the subagent changed first back as the
// parent's later edit found it, a state it never had at the point. Such
// a result is a change from a state not known (editOriginal.Unknown), as
// an older Claude Code's result without the file is: the path is its
// call's (the assistant line's tool_use input), and a call whose result
// failed (is_error, or its toolUseResult "Error: ...") changed nothing. A
// known state before it (a capture of the subagent's file-history backup,
// an edit result that says the file, or, by time, another session's:
// family_states.go) still stands.

// claudeEditTools are the Claude Code tools that change a file: their
// calls name it (file_path; NotebookEdit's notebook_path).
var claudeEditTools = map[string]bool{"Edit": true, "MultiEdit": true, "Write": true, "NotebookEdit": true}

// sidechainMark is how Claude Code writes a subagent's line's mark: only
// such lines are decoded for the calls and results read here.
var sidechainMark = []byte(`"isSidechain":true`)

// editResults is editOriginals for the result of an edit tool's call (its
// event's label is one of claudeEditTools), the result of a subagent's
// that does not say the file's original read too: Unknown, of the path
// call says the call with that tool_use id named ("" for none known, or
// one outside the workspace).
func (r *Rook) editResults(body cas.Key, ws string, call func(toolUseID string) string) ([]editOriginal, error) {
	lines, err := r.importedLines(body, func(rest []byte) bool {
		return bytes.Contains(rest, sidechainMark) || bytes.Contains(rest, []byte(`"filePath"`)) &&
			(bytes.Contains(rest, []byte(`"originalFile`)) || bytes.Contains(rest, []byte(`"structuredPatch"`)))
	})
	if err != nil {
		return nil, err
	}
	var out []editOriginal
	for _, line := range lines {
		line = entryBytes(trimNewline(line))
		if o, ok := editOriginalOf(line, ws); ok {
			out = append(out, o)
			continue
		}
		out = append(out, sidechainUnsaid(line, call)...)
	}
	return out, nil
}

// sidechainUnsaid reads a subagent's line (isSidechain) as the results
// of edit calls that succeeded without saying what the file was: Unknown
// states of their calls' paths. A line of the main thread gives none: its
// results that do not say the file are no edit (a Read's, say).
func sidechainUnsaid(line []byte, call func(toolUseID string) string) []editOriginal {
	var l struct {
		Type          string          `json:"type"`
		IsSidechain   bool            `json:"isSidechain"`
		ToolUseResult json.RawMessage `json:"toolUseResult"`
		Message       *struct {
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	if json.Unmarshal(line, &l) != nil || l.Type != "user" || !l.IsSidechain || l.Message == nil ||
		len(l.Message.Content) == 0 || l.Message.Content[0] != '[' {
		return nil
	}
	var failed string
	if len(l.ToolUseResult) > 0 && l.ToolUseResult[0] == '"' && json.Unmarshal(l.ToolUseResult, &failed) == nil && strings.HasPrefix(failed, "Error") {
		return nil // the call failed: nothing changed
	}
	var blocks []claudeBlock
	if json.Unmarshal(l.Message.Content, &blocks) != nil {
		return nil
	}
	var out []editOriginal
	for _, b := range blocks {
		if b.Type != "tool_result" || b.IsError {
			continue
		}
		if p := call(b.ToolUseID); p != "" {
			out = append(out, editOriginal{Path: p, Unknown: true, Sidechain: true})
		}
	}
	return out
}

// editCalls records in calls, by tool_use id, the workspace path (ws)
// each edit call of a subagent's line among session id's events from
// seq from to seq to (not included) names: "" for one outside the
// workspace. It gives the seq it read to. A call whose object does not
// read names nothing, and is passed over: unread is told its event and
// why, and its error stops the reading (capturedStatesIn: a member's is
// kept until a result that succeeded needs a call then not found, which
// may be that one; the session's own is kept, as a result may answer
// it); one not needed (a failed edit's) stops nothing.
func (r *Rook) editCalls(id eventlog.ID, from, to uint64, ws string, calls map[string]string, unread func(ev eventlog.Event, err error) error) (uint64, error) {
	for from < to {
		evs, err := r.Log.Read(id, from, min(1024, int(to-from)))
		if err != nil || len(evs) == 0 {
			return from, err
		}
		for _, ev := range evs {
			if ev.Seq >= to {
				return to, nil
			}
			if ev.Kind != eventlog.KindToolCall || !claudeEditTools[ev.Label] {
				continue
			}
			lines, err := r.importedLines(ev.Body, func(rest []byte) bool { return bytes.Contains(rest, sidechainMark) })
			if err != nil {
				if err := unread(ev, err); err != nil {
					return from, err
				}
				continue // a call that does not read names nothing
			}
			for _, line := range lines {
				sidechainCalls(entryBytes(trimNewline(line)), ws, calls)
			}
		}
		from = evs[len(evs)-1].Seq + 1
	}
	return from, nil
}

// sidechainCalls records the edit calls of a subagent's assistant line.
func sidechainCalls(line []byte, ws string, calls map[string]string) {
	var l struct {
		Type        string `json:"type"`
		IsSidechain bool   `json:"isSidechain"`
		Message     *struct {
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	if json.Unmarshal(line, &l) != nil || l.Type != "assistant" || !l.IsSidechain || l.Message == nil ||
		len(l.Message.Content) == 0 || l.Message.Content[0] != '[' {
		return
	}
	var blocks []struct {
		Type  string `json:"type"`
		ID    string `json:"id"`
		Name  string `json:"name"`
		Input struct {
			FilePath     string `json:"file_path"`
			NotebookPath string `json:"notebook_path"`
		} `json:"input"`
	}
	if json.Unmarshal(l.Message.Content, &blocks) != nil {
		return
	}
	for _, b := range blocks {
		if b.Type != "tool_use" || b.ID == "" || !claudeEditTools[b.Name] {
			continue
		}
		p := b.Input.FilePath
		if b.Name == "NotebookEdit" {
			p = b.Input.NotebookPath
		}
		rel, _ := workspaceRel(ws, p)
		calls[b.ID] = rel
	}
}
