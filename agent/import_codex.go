package agent

import (
	"bytes"
	"crypto/sha256"
	"reflect"
	"sort"
	"strings"

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
	name      string // the last thread name (thread_name_updated), as a title
	sess      sourceSession
	// spawns: the call_ids of the spawn_agent calls with no output yet,
	// in a subagent's copy of its parent's history (codexCopyEnd).
	spawns map[string]bool
}

func newCodexMapper() lineMapper { return &codexMapper{toolName: map[string]string{}} }

// codexState is a codexMapper's state, as kept (import_state.go).
type codexState struct {
	ToolName  map[string]string `json:"tool_name"`
	Model     string            `json:"model"`
	MetaSeen  bool              `json:"meta_seen"`
	LastTotal string            `json:"last_total"`
	UserTitle string            `json:"user_title"`
	Name      string            `json:"name"`
	Sess      sourceSession     `json:"sess"`
	Spawns    []string          `json:"spawns,omitempty"`
}

func (m *codexMapper) saveState() ([]byte, error) {
	spawns := make([]string, 0, len(m.spawns))
	for id := range m.spawns {
		spawns = append(spawns, id)
	}
	sort.Strings(spawns)
	return json.Marshal(codexState{ToolName: m.toolName, Model: m.model, MetaSeen: m.metaSeen,
		LastTotal: m.lastTotal, UserTitle: m.userTitle, Name: m.name, Sess: m.sess, Spawns: spawns})
}

func (m *codexMapper) loadState(data []byte) error {
	var st codexState
	if err := json.Unmarshal(data, &st); err != nil {
		return err
	}
	if m.toolName = st.ToolName; m.toolName == nil {
		m.toolName = map[string]string{}
	}
	m.model, m.metaSeen, m.lastTotal, m.userTitle, m.name, m.sess = st.Model, st.MetaSeen, st.LastTotal, st.UserTitle, st.Name, st.Sess
	m.spawns = nil
	for _, id := range st.Spawns {
		m.spawnCalled(id)
	}
	return nil
}

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
	ThreadName   json.RawMessage `json:"thread_name"`
	Message      json.RawMessage `json:"message"`
	Info         json.RawMessage `json:"info"`
	Output       json.RawMessage `json:"output"`
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

// codexForkedSpawnMark begins the output Codex writes, as the spawn
// call's, at the end of the parent's history it copies into a subagent it
// spawns with it (FORKED_SPAWN_AGENT_OUTPUT_MESSAGE in codex-rs/core's
// agent control): "... Treat the next user message as your new task".
const codexForkedSpawnMark = "You are the newly spawned agent. The prior conversation history was forked from your parent agent."

// codexSpawnMarked says whether a function_call_output's output, as
// written, is a string that begins with codexForkedSpawnMark, read as
// written (Codex escapes none of its characters): a prefix compared, not
// an output decoded, on every tool output of every rollout.
func codexSpawnMarked(output []byte) bool {
	return len(output) > len(codexForkedSpawnMark) && output[0] == '"' && string(output[1:1+len(codexForkedSpawnMark)]) == codexForkedSpawnMark
}

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

// codexBareLine is a line of a rollout an older Codex wrote (2025), with
// no envelope: its top level is what a payload is today. peers.md 3.2
// documents today's envelope only; what follows is what is publicly said
// of the older generations, not checked against their source here: a
// "direct" rollout is a header line with no type, {"id", "timestamp",
// "instructions", "git"} (the session's metadata as it was; no cwd is
// known to be there, it is read if one is), then bare response items
// {"type": "message" | "function_call" | ..., ...}, the shapes of today's
// response_item payloads, with no timestamp; a "legacy" one has
// {"record_type": "state"} lines between them, which hold no
// conversation.
type codexBareLine struct {
	codexPayload
	RecordType json.RawMessage `json:"record_type"`
}

// codexReads: an envelope's members, and, at the top level of an older
// rollout's line, a payload's and record_type.
var codexReads = func() func(string) bool {
	envelope, payload, bare := readsKeys(reflect.TypeOf(codexLine{})), readsKeys(reflect.TypeOf(codexPayload{})), readsKeys(reflect.TypeOf(codexBareLine{}))
	return func(key string) bool { return envelope(key) || payload(key) || bare(key) }
}()

func (m *codexMapper) reads(key string) bool { return codexReads(key) }

// shortens: nothing under "info", whose total_token_usage tokenCount
// compares whole with the previous line's, nor what codexShortensKey
// spares.
func (m *codexMapper) shortens(s *jsonString) bool {
	return codexShortensKey(s.Key) && !underKey(s, "info")
}

func (m *codexMapper) session() sourceSession {
	s := m.sess
	if s.Title == "" {
		// A rollout whose user messages are all boilerplate, or one that
		// lost its response items: the UI event still has the prompt.
		s.Title = m.userTitle
	}
	if s.Name = m.name; s.Name != "" {
		s.Title = s.Name
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

// codexEntry is everything the mapping reads of a line: what decoding the
// line's view into a codexLine and reading its values one by one gives
// (decodeCodexEntry), or what the fast path reads straight off the scanned
// line (scanCodexEntry). Its strings are "" where the line has none, or a
// value of another type.
type codexEntry struct {
	Type, Timestamp string
	// RecordType is the record_type of an older rollout's line with no
	// type ("state"), read of those lines only.
	RecordType string
	// The payload's strings.
	PType, Role, Name, CallID, ID, ForkedFromID, Cwd, Model, ThreadName string
	// The one structured member the line's types make the mapping read
	// (codexDetail), read for those lines only: a session_meta's source,
	// a user message's prompt (codexPrompt), a user_message event's
	// message, a token_count's info.
	Subagent    bool
	SpawnParent string
	Prompt      string
	// Context: of a user message, that Codex wrote it itself, for the
	// model: its every item an input_text that is context
	// (codexContextText), and one at least. Read in the same pass as the
	// prompt (codexItems).
	Context bool
	// EnvCwd: of an older rollout's bare user message, the cwd its
	// <environment_context> names (codexEnvCwd).
	EnvCwd  string
	Message string
	Tokens  codexTokens
	// SpawnMark: of a function_call_output, that its output is the mark
	// of the end of a parent's history copied into a subagent
	// (codexForkedSpawnMark).
	SpawnMark bool
}

// codexTokens is what a token_count's info gives: OK when it decodes as a
// codexUsage (info is null before the first response; a usage that does
// not read, a negative count or a string, counts nothing rather than
// failing the line), then its total_token_usage as written and the turn's
// tokens.
type codexTokens struct {
	OK      bool
	Total   string
	In, Out uint64
}

// codexDetail names the structured payload member the mapping reads of a
// line with these types, if any.
func codexDetail(typ, ptype, role string) string {
	switch {
	case typ == "session_meta":
		return "source"
	case typ == "response_item" && ptype == "message" && role == "user",
		typ == "inter_agent_communication":
		return "content"
	case typ == "event_msg" && ptype == "user_message":
		return "message"
	case typ == "event_msg" && ptype == "token_count":
		return "info"
	case typ == "response_item" && ptype == "function_call_output":
		return "output"
	}
	return ""
}

func (m *codexMapper) mapLine(line []byte) mappedLine {
	// After a byte order mark or a crash's NULs, the entry all the same.
	line = entryBytes(line)
	e, err := decodeCodexEntry(line)
	if err != nil {
		return codexUnreadable(line)
	}
	return m.mapEntry(&e)
}

// decodeCodexEntry decodes a line (or its view) with encoding/json's rules:
// the reference the fast path is held to (FuzzCodexFastPath).
func decodeCodexEntry(line []byte) (codexEntry, error) {
	var l codexLine
	if err := json.Unmarshal(line, &l); err != nil {
		return codexEntry{}, err
	}
	e := codexEntry{Type: rawString(l.Type), Timestamp: rawString(l.Timestamp)}
	p := &l.Payload
	bareItem := false
	if e.Type == "" || codexItemTypes[e.Type] {
		// No envelope: an older rollout's line (codexBareLine), whose top
		// level is read as a payload. A response item is one, as if in a
		// response_item; a line with neither type nor record_type but an
		// id is the session's header, a session_meta.
		var bare codexBareLine
		if err := json.Unmarshal(line, &bare); err != nil {
			return codexEntry{}, err
		}
		switch {
		case e.Type != "":
			e.Type, p, bareItem = "response_item", &bare.codexPayload, true
		case rawString(bare.RecordType) != "":
			e.RecordType = rawString(bare.RecordType)
		case rawString(bare.ID) != "":
			e.Type, p = "session_meta", &bare.codexPayload
		}
	}
	e = codexEntry{
		Type: e.Type, Timestamp: e.Timestamp, RecordType: e.RecordType,
		PType: rawString(p.Type), Role: rawString(p.Role), Name: rawString(p.Name), CallID: rawString(p.CallID),
		ID: rawString(p.ID), ForkedFromID: rawString(p.ForkedFromID), Cwd: rawString(p.Cwd), Model: rawString(p.Model),
		ThreadName: rawString(p.ThreadName),
	}
	switch codexDetail(e.Type, e.PType, e.Role) {
	case "source":
		e.Subagent, e.SpawnParent = codexSubagent(p.Source)
	case "content":
		if e.Type == "inter_agent_communication" {
			e.Prompt = codexMailTask(rawString(p.Content))
			break
		}
		e.Prompt, e.Context = codexPrompt(p.Content)
		if bareItem {
			// An older rollout's header may name no cwd: its first
			// <environment_context> does. (Today's session_meta always
			// names one; the fast path takes no bare line.)
			e.EnvCwd = codexEnvCwd(p.Content)
		}
	case "message":
		e.Message = rawString(p.Message)
	case "output":
		e.SpawnMark = codexSpawnMarked(p.Output)
	case "info":
		info := p.Info
		if len(info) == 0 && !bareItem {
			// No info: an older Codex wrote the usage in the payload
			// itself, {"type":"token_count","total_token_usage":...,
			// "last_token_usage":...}.
			var flat struct {
				Payload json.RawMessage `json:"payload"`
			}
			if json.Unmarshal(line, &flat) == nil {
				info = flat.Payload
			}
		}
		e.Tokens = codexTokensOf(info)
	}
	return e, nil
}

// mapEntry maps a line's entry, whichever path read it: the one place the
// mapper's state changes.
func (m *codexMapper) mapEntry(e *codexEntry) mappedLine {
	if e.Type == "" && e.RecordType == "" {
		return mappedLine{Kind: eventlog.KindNote, Label: codexUnparsed, Unparsed: `no "type" field`}
	}
	out := mappedLine{Kind: eventlog.KindNote, Label: e.Type}
	// An older rollout's items and state records have no timestamp: zero,
	// the time of the line before (the header's at first).
	if t, ok := lineTime(e.Timestamp); ok {
		out.Time = t
	}
	if e.Type == "" {
		// An older rollout's state record, between its items: a note, on
		// purpose. Only "state" is known.
		out.Label = "record_type:" + e.RecordType
		if e.RecordType != "state" {
			out.Unknown = out.Label
		}
		return out
	}
	switch e.Type {
	case "session_meta":
		m.sessionMeta(e)
	case "response_item":
		m.responseItem(e, &out)
	case "event_msg":
		m.eventMsg(e, &out)
	case "compacted":
		// The history before it was replaced by a summary: what follows is
		// what the model has in context (session context replays from here).
		out.Kind = eventlog.KindCompaction
	case "turn_context":
		if m.sess.Workspace == "" {
			m.sess.Workspace = e.Cwd
		}
		if e.Model != "" {
			m.model = e.Model
		}
	case "world_state", "inter_agent_communication", "inter_agent_communication_metadata":
		// Newer Codex's: notes, on purpose.
		if title, ok := codexTitle(e.Prompt); ok && m.sess.Subagent {
			// A task another agent sent a subagent (its mail, not a user
			// message): its own task, as a prompt after a spawn is.
			if len(m.spawns) > 0 {
				m.copyEnded()
				m.spawns = nil
			}
			if m.sess.Title == "" {
				m.sess.Title = title
			}
		}
	default:
		// A type rook does not know (a newer Codex's): still a note, and
		// reported.
		out.Unknown = e.Type
	}
	return out
}

// codexUnreadable says why a line did not decode as a rollout line.
func codexUnreadable(line []byte) mappedLine {
	out := mappedLine{Kind: eventlog.KindNote, Label: codexUnparsed, Unparsed: "not JSON"}
	if !json.Valid(line) {
		if nestedTooDeep(line) {
			out.Unparsed = tooDeep
		}
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

// How Codex writes a fork, read in its source (openai/codex, one stored
// version of each file):
//   - codex-rs/core/src/thread_manager.rs (003535613cff33fb2e37e089f404741aad04ebd0):
//     fork_thread loads the parent's rollout whole (get_rollout_history:
//     every item that parses, its session_meta included) and keeps a
//     prefix, cut before a user message (TruncateBeforeNthUserMessage),
//     or all of it, plus a <turn_aborted> marker and a turn_aborted event
//     when the parent is mid-turn (Interrupted): InitialHistory::Forked.
//   - The session's Forked branch (record_initial_history) seeds its
//     token usage from the copy's last token_count, then hands the items
//     to the recorder as they are (persist_rollout_items).
//   - codex-rs/rollout/src/policy.rs (0136a731d73e681bbc7826c9cf7ae2ae09d89fe9):
//     session_meta and token_count are persisted, so both are copied.
//   - codex-rs/rollout/src/recorder.rs (05eb6e5e8b57cdd7c732baa6782a3ea26a3cfac3),
//     as codex-rs/core/src/rollout/recorder.rs (035416bfd9b70f179348fe3b74d4fe6f8ea91c07):
//     the fork's own session_meta is written first, then the copied
//     items, each serialized again and stamped with the time of writing
//     (write_rollout_item: now_utc), not the parent's; load_rollout_items
//     says "Later SessionMeta lines can be copied from fork history".
//
// So a fork's file is: its session_meta (forked_from_id: the parent), the
// parent's session_meta (id: forked_from_id) and the rest of the copy,
// then its own lines. Where the copy begins is known; where it ends is
// not marked in the versions read: nothing is written between the copy
// and the fork's first own line, the copy's timestamps are the fork's,
// and a copied token_count reads as a turn's (the fork's own totals carry
// on from the copy's last). Newer versions seen in the index, not checked
// against openai/codex itself, append a thread_settings_applied event to
// the copy, or copy nothing (a history_base), or leave the token_counts
// out of the copy. Of the copied lines, only the token_counts count
// tokens, and they can be told from the fork's own: a copied
// token_count's payload is its parent line's, byte for byte (the same
// item serialized again; only the line's timestamp is new), and holds the
// session's running total, which the fork's own turns carry on from the
// copy's last: none of theirs is one of the parent's (one that repeats
// the total before it counts nothing anyway: tokenCount).
// The import leaves a fork's token_count whose payload is one of its
// parent's out of the fork's totals (fileImport.copiedLine), when the
// parent is imported, so that a fork's tokens are its own (in one run, a
// fork whose parent's rollout is among the files waits for it:
// sourceNames.waits). Where the parent is not imported (yet), or another
// Codex version wrote the copy with other bytes, the copied tokens count
// again (README).
func (m *codexMapper) sessionMeta(e *codexEntry) {
	// A forked rollout copies its parent's lines, their session_meta
	// included, after its own: the first one is this session's.
	if m.metaSeen {
		// A subagent's rollout that holds another session_meta copies its
		// parent's history (spawn_agent with its history: the copy keeps
		// the parent's session_meta, as a fork's does): its token_counts
		// may be the parent's (copiesParent).
		if m.sess.Subagent {
			m.sess.Fork = true
		}
		return
	}
	m.metaSeen = true
	m.sess.ID = e.ID
	m.sess.ParentID = e.ForkedFromID
	m.sess.Fork = e.ForkedFromID != "" && !e.Subagent // a subagent is its spawner's child
	if e.Cwd != "" {
		m.sess.Workspace = e.Cwd
	}
	if e.Subagent {
		m.sess.Subagent = true
		if e.SpawnParent != "" {
			m.sess.ParentID = e.SpawnParent
		}
	}
}

// codexSubagent reads a session_meta's source: whether it is a subagent's,
// and the parent thread that spawned it, if it names one. source is a
// string ("cli", "exec"...) or, for a subagent,
// {"subagent": "review" | {"thread_spawn": {"parent_thread_id": ...}}}.
func codexSubagent(source json.RawMessage) (subagent bool, parent string) {
	var src codexSource
	if len(source) == 0 || source[0] != '{' || json.Unmarshal(source, &src) != nil {
		return false, ""
	}
	if len(src.Subagent) == 0 || bytes.Equal(src.Subagent, []byte("null")) {
		return false, ""
	}
	var spawn codexSpawn
	if src.Subagent[0] == '{' && json.Unmarshal(src.Subagent, &spawn) == nil {
		parent = rawString(spawn.ThreadSpawn.ParentThreadID)
	}
	return true, parent
}

// codexCalls and codexOutputs are the response items that are a tool's
// call, and its output.
var (
	codexCalls   = map[string]bool{"function_call": true, "custom_tool_call": true, "local_shell_call": true, "web_search_call": true, "tool_search_call": true}
	codexOutputs = map[string]bool{"function_call_output": true, "custom_tool_call_output": true, "tool_search_output": true}
)

// codexItemTypes are the types of the response items rook knows (mapped,
// or notes on purpose): never an envelope's type, so a line of one of
// these types is a bare item of an older rollout (codexBareLine).
var codexItemTypes = func() map[string]bool {
	m := map[string]bool{"message": true, "reasoning": true}
	for _, set := range []map[string]bool{codexCalls, codexOutputs, codexNoteItems} {
		for typ := range set {
			m[typ] = true
		}
	}
	return m
}()

// codexCallID is the id a call's output answers it by: its call_id, or,
// for a local_shell_call that has none (the Chat Completions API sets id
// alone), its id, as Codex answers it (call_id.or(id), codex-rs
// tools/router.rs).
func codexCallID(typ, callID, id string) string {
	if callID == "" && typ == "local_shell_call" {
		return id
	}
	return callID
}

// codexToolNames name the calls that carry no name, as Codex itself does.
var codexToolNames = map[string]string{"local_shell_call": "shell", "web_search_call": "web_search", "tool_search_call": "tool_search"}

func (m *codexMapper) responseItem(e *codexEntry, out *mappedLine) {
	typ := e.PType
	switch {
	case typ == "message":
		switch role := e.Role; role {
		case "user":
			out.Kind, out.Label = eventlog.KindUser, ""
			if e.Context {
				// What Codex wrote in the user's place for the model (the
				// environment, AGENTS.md, a skill...): a note, as Claude
				// Code's meta prompts are, which the model read
				// (seenNotes). A message with a prompt in it stays the
				// user's.
				out.Kind, out.Label = eventlog.KindNote, codexContextLabel
			}
			if len(m.spawns) > 0 && e.Prompt != "" && !e.Context {
				// The first prompt after the spawn call a subagent's copy
				// of its parent's history ends with: its own task.
				m.copyEnded()
				m.spawns = nil
			}
			if m.sess.Title == "" {
				m.sess.Title = e.Prompt
			}
			if m.sess.Workspace == "" {
				m.sess.Workspace = e.EnvCwd
			}
		case "assistant":
			out.Kind, out.Label = eventlog.KindAssistant, m.model
		case "developer", "system":
			out.Kind, out.Label = eventlog.KindNote, role
		default:
			out.Label = "message:" + role
		}
	case typ == "reasoning":
		out.Kind, out.Label = eventlog.KindReasoning, m.model
	case codexCalls[typ]:
		name := e.Name
		if name == "" {
			name = codexToolNames[typ]
		}
		out.Kind, out.Label = eventlog.KindToolCall, name
		if id := codexCallID(typ, e.CallID, e.ID); id != "" {
			m.toolName[id] = name
			if name == "spawn_agent" && m.sess.Subagent && m.sess.Fork {
				m.spawnCalled(id)
			}
		}
	case codexOutputs[typ]:
		out.Kind, out.Label = eventlog.KindToolResult, m.toolName[e.CallID]
		delete(m.spawns, e.CallID)
		if e.SpawnMark && m.sess.Subagent {
			// The end of the parent's history a subagent copied: its task
			// is the next user message, which titles it, not the
			// parent's prompt the copy began with, nor the parent's
			// thread name (a thread_name_updated the copy kept).
			m.copyEnded()
		}
	default:
		out.Label = "response_item:" + typ
		if !codexNoteItems[typ] {
			out.Unknown = out.Label
		}
	}
}

// codexNoteItems are the other response items Codex writes (ResponseItem
// in codex-rs/protocol, peers.md 3.2): compaction state, snapshots, tools
// made available, messages between agents, generated images. They are
// notes, on purpose; an item not here or above is one rook does not know,
// still a note, and reported.
var codexNoteItems = map[string]bool{
	"compaction": true, "compaction_summary": true, "compaction_trigger": true, "context_compaction": true,
	"ghost_snapshot": true, "additional_tools": true, "agent_message": true, "image_generation_call": true,
}

func (m *codexMapper) eventMsg(e *codexEntry, out *mappedLine) {
	typ := e.PType
	// Codex has dozens of UI events, and adds more: any is known, a note
	// unless mapped below (never reported as a type rook does not know).
	out.Label = "event_msg:" + typ
	switch typ {
	case "error", "stream_error", "turn_aborted":
		out.Kind, out.Label = eventlog.KindError, typ
	case "token_count":
		out.TokensIn, out.TokensOut = m.tokenCount(e.Tokens)
	case "user_message":
		// The same prompt as the user message item before it: a note, but
		// a title when the items are missing.
		if m.userTitle == "" {
			m.userTitle, _ = codexTitle(e.Message)
		}
	case "thread_name_updated":
		// {"type":"thread_name_updated","thread_id":...,"thread_name":...}:
		// the user named the thread. thread_name is optional: without
		// one, the thread has no name.
		m.name = titleOf(e.ThreadName)
	}
}

// tokenCount is the usage of the turn a token_count event closes.
func (m *codexMapper) tokenCount(t codexTokens) (in, out uint64) {
	if !t.OK {
		return 0, 0
	}
	// Codex writes token_count again when only the rate limits changed,
	// with the same usage: the session's total has not moved, and the
	// turn's tokens must not count twice.
	if t.Total != "" && t.Total != "null" {
		if t.Total == m.lastTotal {
			return 0, 0
		}
		m.lastTotal = t.Total
	}
	// input_tokens includes the cached ones, as output_tokens the reasoning.
	return t.In, t.Out
}

// codexTokenCountLabel labels a token_count's event (eventMsg).
const codexTokenCountLabel = "event_msg:token_count"

// codexPayloadSum is the SHA-256 of a rollout line's payload, as written;
// ok when the line has one. A fork's copy of its parent's token_count has
// the payload of the parent's line byte for byte (only the line's
// timestamp is new), and a token_count's payload holds the session's
// running total, which the fork's own turns carry on: the sum tells a
// copied token_count from the fork's own (fileImport.copiedLine). The
// line is read past what a crash or an editor left before its entry
// (entryBytes), as the mapper read it: a copy with NULs before it is a
// copy still.
func codexPayloadSum(line []byte) (sum [32]byte, ok bool) {
	var l struct {
		Payload json.RawMessage `json:"payload"`
	}
	if json.Unmarshal(entryBytes(line), &l) != nil || len(l.Payload) == 0 {
		return sum, false
	}
	return sha256.Sum256(l.Payload), true
}

// codexTokensOf decodes a token_count's info.
func codexTokensOf(info json.RawMessage) codexTokens {
	var usage codexUsage
	if len(info) == 0 || info[0] != '{' || json.Unmarshal(info, &usage) != nil {
		return codexTokens{}
	}
	return codexTokens{OK: true, Total: string(usage.Total), In: usage.Last.Input, Out: usage.Last.Output}
}

// codexBoilerplatePrefixes start the user messages Codex writes itself
// (environment, AGENTS.md, instructions before the first prompt; the
// marker of an interrupted turn, a subagent's notice, a shell command the
// user ran, a skill's text): never a title. Codex matches its own tags
// without regard to case.
var codexBoilerplatePrefixes = []string{"<environment_context>", "<user_instructions>", "# AGENTS.md", "<permissions", "<INSTRUCTIONS>",
	"<turn_aborted>", "<subagent_notification>", codexShellCommand, "<skill>", "<context_update>"}

func codexBoilerplate(text string) bool {
	for _, p := range codexBoilerplatePrefixes {
		if hasPrefixFold(text, p) {
			return true
		}
	}
	return false
}

// codexEnvCwd is the working directory an <environment_context> in a
// user message's input_text names (<cwd>/home/dev/app</cwd>), or "".
func codexEnvCwd(content json.RawMessage) string {
	var items []codexInputItem
	if len(content) == 0 || content[0] != '[' || json.Unmarshal(content, &items) != nil {
		return ""
	}
	for _, it := range items {
		text := strings.TrimSpace(rawString(it.Text))
		if rawString(it.Type) != "input_text" || len(text) < len("<environment_context>") || !strings.EqualFold(text[:len("<environment_context>")], "<environment_context>") {
			continue
		}
		if cwd, ok := tagText(text, "cwd"); ok && cwd != "" && !strings.ContainsAny(cwd, "<\n") {
			return cwd
		}
	}
	return ""
}

// codexPrompt is the title a user message gives: its first input_text that
// is not boilerplate, or "" if it has none; and whether the message is
// context Codex wrote (codexItems). Items are taken one by one, as some
// versions put the environment and the prompt in one message.
func codexPrompt(content json.RawMessage) (prompt string, context bool) {
	var items []codexInputItem
	if len(content) == 0 || content[0] != '[' || json.Unmarshal(content, &items) != nil {
		return "", false
	}
	var c codexItems
	for _, it := range items {
		c.add(rawString(it.Type), rawString(it.Text))
	}
	return c.prompt, c.context()
}

// codexContextLabel labels a user message Codex wrote itself, a note.
const codexContextLabel = "user:context"

// codexItems reads the items of a user message's content, one by one (a
// null item as one of no type): its prompt, the first item that titles
// (codexItemTitle), and whether it is context, every item an input_text
// whose text is (codexContextText). Once the prompt is found, the items
// after it change neither (the fast path skips them): the prompt is no
// boilerplate, so the message is already not context.
type codexItems struct {
	prompt            string
	found             bool
	contextText, more bool // an item is context text; one is something else
}

func (c *codexItems) add(typ, text string) {
	if c.found {
		return
	}
	if typ == "input_text" && codexContextText(text) {
		c.contextText = true
	} else {
		c.more = true
	}
	c.prompt, c.found = codexItemTitle(typ, text)
}

func (c *codexItems) context() bool { return c.contextText && !c.more }

// codexContextText says whether a user message's text is context Codex
// wrote for the model: boilerplate (codexBoilerplate) once trimmed, but a
// shell command the user ran (!ls): Codex writes its command and output
// as <user_shell_command>, yet running it was the user's own action, a
// user event as a prompt is.
func codexContextText(text string) bool {
	text = strings.TrimSpace(text)
	return codexBoilerplate(text) && !hasPrefixFold(text, codexShellCommand)
}

const codexShellCommand = "<user_shell_command>"

// hasPrefixFold is strings.HasPrefix without regard to case.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// codexItemTitle is the title an item of a user message gives, ok when it
// is the prompt: an input_text that is one (codexTitle).
func codexItemTitle(typ, text string) (title string, ok bool) {
	if typ != "input_text" {
		return "", false
	}
	return codexTitle(text)
}

// codexTitle is the title a user's text gives, ok when it is a prompt: not
// boilerplate; of a message Codex's IDE extension (or its desktop app)
// wrote, the user's request in it, after the editor's state (active file,
// open tabs, selection) or the files attached, which it begins with; a
// message of that kind without one is none.
func codexTitle(text string) (title string, ok bool) {
	if text = strings.TrimSpace(text); text == "" || codexBoilerplate(text) {
		return "", false
	}
	for _, p := range codexContextPrefixes {
		if !strings.HasPrefix(text, p) {
			continue
		}
		for _, mark := range codexRequestMarks {
			if _, request, found := strings.Cut(text, "\n"+mark); found {
				return codexTitle(request)
			}
		}
		return "", false
	}
	return titleOf(text), true
}

// codexMailTask is the task an inter_agent_communication's content gives:
// the payload of a NEW_TASK (codexMail), none of another type (a MESSAGE,
// a FINAL_ANSWER: mail, not a task), and the content itself when it is
// not so rendered.
func codexMailTask(content string) string {
	typ, payload, rendered, ok := codexMail(content)
	switch {
	case !rendered:
		return content
	case strings.TrimSpace(typ) != "NEW_TASK" || !ok:
		return ""
	}
	return payload
}

// codexMail reads mail between agents as Codex renders it ("Message Type:
// T\nTask name: ...\nSender: ...\nPayload:\n<text>"): rendered says the
// content begins so, typ is T, and ok says a payload follows.
func codexMail(content string) (typ, payload string, rendered, ok bool) {
	rest, rendered := strings.CutPrefix(content, "Message Type: ")
	if !rendered {
		return "", "", false, false
	}
	typ, rest, _ = strings.Cut(rest, "\n")
	_, payload, ok = strings.Cut(rest, "\nPayload:\n")
	return typ, payload, true, ok
}

// codexContextPrefixes begin a message that puts context before the user's
// request, which follows one of codexRequestMarks on a line of its own:
// "# Context from my IDE setup:\n\n## Active file: x.go\n\n## My request
// for Codex:\nadd a retry". The view keeps these messages whole
// (codexShortensKey): the context, however long, comes first.
var (
	codexContextPrefixes = []string{"# Context from my IDE setup:", "# Files mentioned by the user:"}
	codexRequestMarks    = []string{"## My request for Codex:", "## My request:"}
)

// codexCopyEnd: where a subagent's copy of its parent's history ends.
// Older Codex marks it with the spawn call's output (codexForkedSpawnMark)
// and sends the task as the next user message. A newer one marks nothing
// (AgentControl.spawn_forked_thread in codex-rs/core, read in one stored
// version of openai/codex: the parent's history as stored when it
// spawned, then the task sent as the subagent's first input): the copy
// ends with the parent's spawn_agent call, whose output the parent got,
// not the subagent. So in a subagent that copies its parent's
// (sourceSession.Fork), the first prompt after a spawn_agent call with
// no output yet is its own task, and titles it. A copy's earlier spawns
// had their outputs before the next prompt (spawn_agent answers at once,
// with the new agent's id): they end nothing.
//
// copyEnded: the copy of its parent's history a subagent's rollout began
// with ends here (codexCopyEnd): the title it gave, the parent's, is
// dropped; the next prompt titles the subagent.
func (m *codexMapper) copyEnded() {
	m.sess.Title, m.userTitle, m.name = "", "", ""
	m.sess.CopyEnds++
}

// spawnCalled notes a spawn_agent call with no output yet.
func (m *codexMapper) spawnCalled(id string) {
	if m.spawns == nil {
		m.spawns = map[string]bool{}
	}
	m.spawns[id] = true
}
