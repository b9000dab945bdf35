package agent

import (
	"bytes"
	"reflect"
	"strings"
	"time"

	// Go 1.27's encoding/json, on json/v2, for Go 1.26: the same answers
	// (FuzzDecodeLikeEncodingJSON), 2.4x faster on an import's lines.
	json "github.com/go-json-experiment/json/v1"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
)

// codexMapper maps the lines of a Codex rollout
// (~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl[.zst]). Every
// line is {"timestamp", "type", "payload"}, one item per line, so no two
// lines ever form a group. Schema notes: ../shared/reference/peers.md,
// section 3.2.
type codexMapper struct {
	toolName  map[string]string // call_id -> tool name
	model     string            // the model of the current turn (turn_context)
	metaSeen  bool
	lastTotal string // the previous token_count's total_token_usage, as written
	userTitle string // the first real prompt of an event_msg user_message
	sess      sourceSession
}

func newCodexMapper() lineMapper { return &codexMapper{toolName: map[string]string{}} }

// codexLine is the part of a rollout line the mapping reads. Its values are
// kept raw and read one by one, so that a field of an unexpected type (the
// format changes often) reads as absent instead of failing the whole line.
type codexLine struct {
	Timestamp json.RawMessage `json:"timestamp"`
	Type      json.RawMessage `json:"type"`
	Payload   codexPayload    `json:"payload"`
}

// codexPayload gathers the fields of every payload type the mapping reads;
// each type uses its own few.
type codexPayload struct {
	Type         json.RawMessage `json:"type"`
	Role         json.RawMessage `json:"role"`
	Content      json.RawMessage `json:"content"`
	Name         json.RawMessage `json:"name"`
	CallID       json.RawMessage `json:"call_id"`
	ID           json.RawMessage `json:"id"`
	ForkedFromID json.RawMessage `json:"forked_from_id"`
	Cwd          json.RawMessage `json:"cwd"`
	Source       json.RawMessage `json:"source"`
	Model        json.RawMessage `json:"model"`
	Message      json.RawMessage `json:"message"`
	Info         json.RawMessage `json:"info"`
}

// The other shapes the mapping decodes: a line of unknown payload (only its
// type), a session_meta's source and a subagent's spawn, a token_count's
// info, and the items of a user message's content.
type (
	codexTyped struct {
		Type json.RawMessage `json:"type"`
	}
	codexSource struct {
		Subagent json.RawMessage `json:"subagent"`
	}
	codexSpawn struct {
		ThreadSpawn struct {
			ParentThreadID json.RawMessage `json:"parent_thread_id"`
		} `json:"thread_spawn"`
	}
	codexUsage struct {
		Total json.RawMessage `json:"total_token_usage"`
		Last  struct {
			Input  uint64 `json:"input_tokens"`
			Output uint64 `json:"output_tokens"`
		} `json:"last_token_usage"`
	}
	codexInputItem struct {
		Type json.RawMessage `json:"type"`
		Text json.RawMessage `json:"text"`
	}
)

const codexUnparsed = "codex:unparsed"

// rawString is the string a raw JSON value holds, or "" for any other value.
func rawString(r json.RawMessage) string {
	if len(r) == 0 || r[0] != '"' {
		return ""
	}
	var s string
	if json.Unmarshal(r, &s) != nil {
		return ""
	}
	return s
}

var codexReads = readsKeys(reflect.TypeOf(codexLine{}))

func (m *codexMapper) reads(key string) bool { return codexReads(key) }

// shortens: nothing under "info", whose total_token_usage tokenCount
// compares whole with the previous line's.
func (m *codexMapper) shortens(s *jsonString) bool {
	return viewKeys[s.Key] && !underKey(s, "info")
}

func (m *codexMapper) session() sourceSession {
	s := m.sess
	if s.Title == "" {
		// A rollout whose user messages are all boilerplate, or one that
		// lost its response items: the UI event still has the prompt.
		s.Title = m.userTitle
	}
	return s
}

// codexDocs are the keys whose text is instructions, the same on every
// session of a user: they compress with documentation.
var codexDocs = map[string]bool{"base_instructions": true, "instructions": true, "user_instructions": true, "developer_instructions": true}

func (m *codexMapper) cutKind(ml mappedLine, s jsonString) cas.Kind {
	// base_instructions is {"text": ...}: the string sits one level down.
	if codexDocs[s.Key] || (len(s.Parents) > 0 && codexDocs[s.Parents[len(s.Parents)-1]]) {
		return cas.KindDocs
	}
	return defaultCutKind(ml, s)
}

func (m *codexMapper) mapLine(line []byte) mappedLine {
	var l codexLine
	if err := json.Unmarshal(line, &l); err != nil {
		return codexUnreadable(line)
	}
	typ := rawString(l.Type)
	if typ == "" {
		return mappedLine{Kind: eventlog.KindNote, Label: codexUnparsed, Unparsed: `no "type" field`}
	}
	out := mappedLine{Kind: eventlog.KindNote, Label: typ}
	if t, err := time.Parse(time.RFC3339Nano, rawString(l.Timestamp)); err == nil {
		out.Time = t
	}
	p := &l.Payload
	switch typ {
	case "session_meta":
		m.sessionMeta(p)
	case "response_item":
		m.responseItem(p, &out)
	case "event_msg":
		m.eventMsg(p, &out)
	case "turn_context":
		if m.sess.Workspace == "" {
			m.sess.Workspace = rawString(p.Cwd)
		}
		if model := rawString(p.Model); model != "" {
			m.model = model
		}
	}
	return out
}

// codexUnreadable says why a line did not decode as a rollout line.
func codexUnreadable(line []byte) mappedLine {
	out := mappedLine{Kind: eventlog.KindNote, Label: codexUnparsed, Unparsed: "not JSON"}
	if !json.Valid(line) {
		return out
	}
	var env codexTyped
	switch {
	case json.Unmarshal(line, &env) != nil:
		out.Unparsed = "not a JSON object"
	case rawString(env.Type) == "":
		out.Unparsed = `no "type" field`
	default:
		out.Unparsed = `"payload" is not an object`
	}
	return out
}

func (m *codexMapper) sessionMeta(p *codexPayload) {
	// A forked rollout may copy its parent's lines, their session_meta
	// included, after its own: the first one is this session's.
	if m.metaSeen {
		return
	}
	m.metaSeen = true
	m.sess.ID = rawString(p.ID)
	m.sess.ParentID = rawString(p.ForkedFromID)
	if cwd := rawString(p.Cwd); cwd != "" {
		m.sess.Workspace = cwd
	}
	// source is a string ("cli", "exec"...) or, for a subagent,
	// {"subagent": "review" | {"thread_spawn": {"parent_thread_id": ...}}}.
	var src codexSource
	if len(p.Source) == 0 || p.Source[0] != '{' || json.Unmarshal(p.Source, &src) != nil {
		return
	}
	if len(src.Subagent) == 0 || bytes.Equal(src.Subagent, []byte("null")) {
		return
	}
	m.sess.Subagent = true
	var spawn codexSpawn
	if src.Subagent[0] == '{' && json.Unmarshal(src.Subagent, &spawn) == nil {
		if parent := rawString(spawn.ThreadSpawn.ParentThreadID); parent != "" {
			m.sess.ParentID = parent
		}
	}
}

// codexToolNames name the calls that carry no name, as Codex itself does.
var codexToolNames = map[string]string{"local_shell_call": "shell", "web_search_call": "web_search", "tool_search_call": "tool_search"}

func (m *codexMapper) responseItem(p *codexPayload, out *mappedLine) {
	typ := rawString(p.Type)
	switch typ {
	case "message":
		switch role := rawString(p.Role); role {
		case "user":
			out.Kind, out.Label = eventlog.KindUser, ""
			if m.sess.Title == "" {
				m.sess.Title = codexPrompt(p.Content)
			}
		case "assistant":
			out.Kind, out.Label = eventlog.KindAssistant, m.model
		case "developer", "system":
			out.Kind, out.Label = eventlog.KindNote, role
		default:
			out.Label = "message:" + role
		}
	case "reasoning":
		out.Kind, out.Label = eventlog.KindReasoning, m.model
	case "function_call", "custom_tool_call", "local_shell_call", "web_search_call", "tool_search_call":
		name := rawString(p.Name)
		if name == "" {
			name = codexToolNames[typ]
		}
		out.Kind, out.Label = eventlog.KindToolCall, name
		if id := rawString(p.CallID); id != "" {
			m.toolName[id] = name
		}
	case "function_call_output", "custom_tool_call_output", "tool_search_output":
		out.Kind, out.Label = eventlog.KindToolResult, m.toolName[rawString(p.CallID)]
	default:
		out.Label = "response_item:" + typ
	}
}

func (m *codexMapper) eventMsg(p *codexPayload, out *mappedLine) {
	typ := rawString(p.Type)
	out.Label = "event_msg:" + typ
	switch typ {
	case "error", "stream_error", "turn_aborted":
		out.Kind, out.Label = eventlog.KindError, typ
	case "token_count":
		out.TokensIn, out.TokensOut = m.tokenCount(p.Info)
	case "user_message":
		// The same prompt as the user message item before it: a note, but
		// a title when the items are missing.
		if m.userTitle == "" {
			if text := strings.TrimSpace(rawString(p.Message)); text != "" && !codexBoilerplate(text) {
				m.userTitle = titleOf(text)
			}
		}
	}
}

// tokenCount reads the usage of the turn a token_count event closes.
func (m *codexMapper) tokenCount(info json.RawMessage) (in, out uint64) {
	var usage codexUsage
	// info is null before the first response; a usage that does not read
	// (a negative count, a string) counts nothing rather than failing.
	if len(info) == 0 || info[0] != '{' || json.Unmarshal(info, &usage) != nil {
		return 0, 0
	}
	// Codex writes token_count again when only the rate limits changed,
	// with the same usage: the session's total has not moved, and the
	// turn's tokens must not count twice.
	if total := string(usage.Total); total != "" && total != "null" {
		if total == m.lastTotal {
			return 0, 0
		}
		m.lastTotal = total
	}
	// input_tokens includes the cached ones, as output_tokens the reasoning.
	return usage.Last.Input, usage.Last.Output
}

// codexBoilerplatePrefixes start the user messages Codex writes itself
// before the first prompt (environment, AGENTS.md, instructions).
var codexBoilerplatePrefixes = []string{"<environment_context>", "<user_instructions>", "# AGENTS.md", "<permissions", "<INSTRUCTIONS>"}

func codexBoilerplate(text string) bool {
	for _, p := range codexBoilerplatePrefixes {
		if strings.HasPrefix(text, p) {
			return true
		}
	}
	return false
}

// codexPrompt is the title a user message gives: its first input_text that
// is not boilerplate, or "" if it has none. Items are taken one by one, as
// some versions put the environment and the prompt in one message.
func codexPrompt(content json.RawMessage) string {
	var items []codexInputItem
	if len(content) == 0 || content[0] != '[' || json.Unmarshal(content, &items) != nil {
		return ""
	}
	for _, it := range items {
		if rawString(it.Type) != "input_text" {
			continue
		}
		text := strings.TrimSpace(rawString(it.Text))
		if text != "" && !codexBoilerplate(text) {
			return titleOf(text)
		}
	}
	return ""
}
