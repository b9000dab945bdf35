package agent

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	// Go 1.27's encoding/json, on json/v2, for Go 1.26: the same answers
	// (FuzzDecodeLikeEncodingJSON), 2.4x faster on an import's lines.
	json "github.com/go-json-experiment/json/v1"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
)

// claudeMapper maps the lines of a Claude Code transcript
// (~/.claude/projects/<project>/<session>.jsonl, and subagents'
// <session>/subagents/agent-*.jsonl or older agent-*.jsonl). Schema notes:
// ../shared/reference/peers.md, section 3.1.
type claudeMapper struct {
	file     string
	toolName map[string]string // tool_use id -> tool name
	// counted are the tokens of each API message (message.id) counted so
	// far, on the lines before.
	counted map[string]messageTokens
	sess    sourceSession
	// own: a conversation line (user or assistant) that is the session's
	// own, not copied from the session it was forked from, came.
	own bool
	// cmdTitle is the first slash command run with no arguments (/init):
	// the title when no prompt comes.
	cmdTitle string
	// customTitle is the last name the user gave the session (/rename),
	// aiTitle the last Claude Code made for it: the session's Name, the
	// user's over Claude Code's, as its list of sessions to resume has it.
	customTitle, aiTitle string
}

// messageTokens are an API message's tokens: in (input and cache) and out.
type messageTokens struct{ in, out uint64 }

func newClaudeMapper(path string) *claudeMapper {
	m := &claudeMapper{file: path, toolName: map[string]string{}, counted: map[string]messageTokens{}}
	base := strings.TrimSuffix(filepath.Base(path), ".jsonl")
	m.sess.ID = base
	if strings.HasPrefix(base, "agent-") {
		m.sess.Subagent = true
		if filepath.Base(filepath.Dir(path)) == "subagents" {
			// <session>/subagents/agent-x.jsonl: the directory names the parent.
			m.sess.ParentID = filepath.Base(filepath.Dir(filepath.Dir(path)))
		}
	}
	return m
}

// claudeState is a claudeMapper's state, as kept (import_state.go).
type claudeState struct {
	ToolName    map[string]string    `json:"tool_name"`
	Counted     map[string][2]uint64 `json:"counted"`
	Sess        sourceSession        `json:"sess"`
	Own         bool                 `json:"own"`
	CmdTitle    string               `json:"cmd_title"`
	CustomTitle string               `json:"custom_title"`
	AITitle     string               `json:"ai_title"`
}

func (m *claudeMapper) saveState() ([]byte, error) {
	counted := make(map[string][2]uint64, len(m.counted))
	for id, t := range m.counted {
		counted[id] = [2]uint64{t.in, t.out}
	}
	return json.Marshal(claudeState{ToolName: m.toolName, Counted: counted, Sess: m.sess, Own: m.own,
		CmdTitle: m.cmdTitle, CustomTitle: m.customTitle, AITitle: m.aiTitle})
}

func (m *claudeMapper) loadState(data []byte) error {
	var st claudeState
	if err := json.Unmarshal(data, &st); err != nil {
		return err
	}
	m.toolName, m.counted = st.ToolName, make(map[string]messageTokens, len(st.Counted))
	if m.toolName == nil {
		m.toolName = map[string]string{}
	}
	for id, t := range st.Counted {
		m.counted[id] = messageTokens{in: t[0], out: t[1]}
	}
	m.sess, m.own, m.cmdTitle, m.customTitle, m.aiTitle = st.Sess, st.Own, st.CmdTitle, st.CustomTitle, st.AITitle
	return nil
}

type claudeSnapshot struct {
	Tracked map[string]claudeBackup `json:"trackedFileBackups"`
}

// claudeLine is the part of a Claude Code entry the mapping reads.
type claudeLine struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	Timestamp string `json:"timestamp"`
	SessionID string `json:"sessionId"`
	Cwd       string `json:"cwd"`
	IsMeta    bool   `json:"isMeta"`
	// IsCompactSummary: the summary of the conversation before a
	// compaction, which Claude Code puts in a user entry after it.
	IsCompactSummary bool            `json:"isCompactSummary"`
	Summary          string          `json:"summary"`
	CustomTitle      string          `json:"customTitle"` // a custom-title entry's
	AITitle          string          `json:"aiTitle"`     // an ai-title entry's
	Message          json.RawMessage `json:"message"`
	Data             struct {
		Type string `json:"type"`
	} `json:"data"`
	Snapshot claudeSnapshot `json:"snapshot"`
	// IsAPIErrorMessage: an assistant entry Claude Code wrote in the
	// model's place when a call failed, its text the error.
	IsAPIErrorMessage bool `json:"isApiErrorMessage"`
	// ForkedFrom: {"sessionId":...,"messageUuid":...} on each line a fork
	// copied from the session it was forked from (claudeForkedFrom). Raw:
	// a value of another shape is left unread, not the line's failure.
	ForkedFrom json.RawMessage `json:"forkedFrom"`
	// ContinuedInSessionID: a continued-in entry's, the session the
	// conversation went on in (claudeMapper.continuedIn).
	ContinuedInSessionID string `json:"continuedInSessionId"`
	// TrackingPath and Backup: a file-history-delta entry's, the file
	// and its backup (claudeDeltaPath). Raw: a member of another shape,
	// in an entry of another type, is left unread, not the line's
	// failure.
	TrackingPath json.RawMessage `json:"trackingPath"`
	Backup       json.RawMessage `json:"backup"`
}

// claudeForkedFrom is the part of a line's forkedFrom the mapping reads.
type claudeForkedFrom struct {
	SessionID string `json:"sessionId"`
}

type claudeMessage struct {
	ID      string          `json:"id"`
	Role    string          `json:"role"`
	Model   string          `json:"model"`
	Content json.RawMessage `json:"content"`
	Usage   *claudeUsage    `json:"usage"`
}

type claudeUsage struct {
	Input         uint64 `json:"input_tokens"`
	CacheCreation uint64 `json:"cache_creation_input_tokens"`
	CacheRead     uint64 `json:"cache_read_input_tokens"`
	Output        uint64 `json:"output_tokens"`
}

// tokens is what a usage counts: its input, cache reads and writes
// included (the context the model read), and its output.
func (u *claudeUsage) tokens() messageTokens {
	return messageTokens{in: u.Input + u.CacheCreation + u.CacheRead, out: u.Output}
}

type claudeBlock struct {
	Type      string `json:"type"`
	Text      string `json:"text"`
	ID        string `json:"id"`
	Name      string `json:"name"`
	ToolUseID string `json:"tool_use_id"`
	IsError   bool   `json:"is_error"`
}

// claudeEntry is everything the mapping reads of a line: what decoding
// the line's view into a claudeLine, its message into a claudeMessage and
// its content into a string or blocks gives (decodeClaudeEntry), or what
// the fast path reads straight off the scanned line (scanClaudeEntry).
type claudeEntry struct {
	Type, Subtype, Timestamp, SessionID, Cwd, Summary string
	CustomTitle, AITitle                              string
	IsMeta, IsCompactSummary, IsAPIError              bool
	DataType                                          string
	ForkedFrom                                        string // forkedFrom.sessionId
	ContinuedIn                                       string // continuedInSessionId
	Tracked                                           map[string]claudeBackup
	// TrackingPath and Delta: a file-history-delta entry's file and its
	// backup (nil when its backup is not an object that decodes).
	TrackingPath string
	Delta        *claudeBackup
	// MsgOK: the line has a message that decodes; then its id, model and
	// usage, and its content as a string (IsText) or as blocks (BlocksOK:
	// how many, the first, and the text of the first text block that may
	// title the session, claudeTitles; the mapping reads no other).
	MsgOK    bool
	MsgID    string
	Model    string
	Usage    *claudeUsage
	IsText   bool
	Text     string
	BlocksOK bool
	Blocks   int
	First    claudeBlock
	Prompt   string
}

type claudeBackup struct {
	BackupFileName *string `json:"backupFileName"`
	BackupTime     string  `json:"backupTime"`
	// Version counts the file's states Claude Code recorded (raw: a line
	// whose version is not a number is not refused for it).
	Version json.RawMessage `json:"version"`
	// RealParentDir: of a file-history-delta's backup, the directory the
	// file is in, its links resolved (claudeDeltaPath).
	RealParentDir string `json:"realParentDir"`
}

func (m *claudeMapper) session() sourceSession {
	s := m.sess
	if s.Title == "" {
		s.Title = m.cmdTitle
	}
	if s.Name = m.customTitle; s.Name == "" {
		s.Name = m.aiTitle
	}
	if s.Name != "" {
		s.Title = s.Name
	}
	return s
}

var claudeReads = readsKeys(reflect.TypeOf(claudeLine{}))

func (m *claudeMapper) reads(key string) bool { return claudeReads(key) }

func (m *claudeMapper) shortens(s *jsonString) bool { return claudeShortens(s.Key) }

// claudeShortens says whether the view shortens a long string under key:
// the mapping reads those only through titleOf and prefix tests.
func claudeShortens(key string) bool { return viewKeys[key] }

func (m *claudeMapper) cutKind(ml mappedLine, s jsonString) cas.Kind { return defaultCutKind(ml, s) }

func (m *claudeMapper) mapLine(line []byte) mappedLine {
	// After a byte order mark or a crash's NULs, the entry all the same.
	line = entryBytes(line)
	e, err := decodeClaudeEntry(line)
	if err != nil {
		return mappedLine{Kind: eventlog.KindNote, Label: "claude-code:unparsed", Unparsed: claudeUnreadable(line, err)}
	}
	return m.mapEntry(&e)
}

// claudeUnreadable says why a line did not decode as a Claude Code entry.
// A line that is JSON, but not an object or with a field of another type
// than Claude Code writes (a newer version's), is not called "not JSON":
// the report is what a user reads to find what is wrong with the line.
func claudeUnreadable(line []byte, err error) string {
	if !json.Valid(line) {
		if nestedTooDeep(line) {
			return tooDeep
		}
		return "not JSON"
	}
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || te.Field == "" {
		return "not a JSON object"
	}
	what, _, _ := strings.Cut(te.Value, " ") // "number -5": its kind
	article := "a"
	if strings.ContainsAny(what[:min(1, len(what))], "aeiou") {
		article = "an"
	}
	return fmt.Sprintf("%q is %s %s, not the type Claude Code writes there", te.Field, article, what)
}

// mapScanned is mapLine for a line scanJSON took, through the fast path,
// or through mapLine on the line's view when the fast path declines.
func (m *claudeMapper) mapScanned(line []byte, strs []jsonString, members []jsonMember, view func() []byte) mappedLine {
	if e, ok := scanClaudeEntry(line, strs, members, viewLong); ok {
		return m.mapEntry(&e)
	}
	return m.mapLine(view())
}

// decodeClaudeEntry decodes a line (or its view) with encoding/json's
// rules: the reference the fast path is held to (FuzzClaudeFastPath).
func decodeClaudeEntry(line []byte) (claudeEntry, error) {
	var l claudeLine
	if err := json.Unmarshal(line, &l); err != nil {
		return claudeEntry{}, err
	}
	e := claudeEntry{
		Type: l.Type, Subtype: l.Subtype, Timestamp: l.Timestamp, SessionID: l.SessionID, Cwd: l.Cwd,
		Summary: l.Summary, IsMeta: l.IsMeta, IsCompactSummary: l.IsCompactSummary, DataType: l.Data.Type, Tracked: l.Snapshot.Tracked,
		IsAPIError: l.IsAPIErrorMessage, CustomTitle: l.CustomTitle, AITitle: l.AITitle,
		ContinuedIn: l.ContinuedInSessionID,
	}
	var tp string
	if json.Unmarshal(l.TrackingPath, &tp) == nil {
		e.TrackingPath = tp
	}
	var delta claudeBackup
	if len(l.Backup) > 0 && l.Backup[0] == '{' && json.Unmarshal(l.Backup, &delta) == nil {
		e.Delta = &delta
	}
	var ff claudeForkedFrom
	if json.Unmarshal(l.ForkedFrom, &ff) == nil {
		e.ForkedFrom = ff.SessionID
	}
	var msg claudeMessage
	if json.Unmarshal(l.Message, &msg) != nil {
		return e, nil
	}
	e.MsgOK, e.MsgID, e.Model, e.Usage = true, msg.ID, msg.Model, msg.Usage
	var text string
	if json.Unmarshal(msg.Content, &text) == nil {
		e.IsText, e.Text = true, text
	}
	var blocks []claudeBlock
	if json.Unmarshal(msg.Content, &blocks) == nil {
		e.BlocksOK, e.Blocks = true, len(blocks)
		if len(blocks) > 0 {
			e.First = blocks[0]
		}
		for _, b := range blocks {
			if b.Type == "text" && claudeTitles(b.Text) {
				e.Prompt = b.Text
				break
			}
		}
	}
	return e, nil
}

func (m *claudeMapper) mapEntry(l *claudeEntry) mappedLine {
	if l.Type == "" {
		return mappedLine{Kind: eventlog.KindNote, Label: "claude-code:unparsed", Unparsed: `no "type" field`}
	}
	out := mappedLine{Kind: eventlog.KindNote, Label: l.Type}
	if t, ok := lineTime(l.Timestamp); ok {
		out.Time = t
	}
	if m.sess.Workspace == "" && l.Cwd != "" {
		m.sess.Workspace = l.Cwd
	}
	if l.SessionID != "" && m.sess.Subagent && m.sess.ParentID == "" {
		// An older agent-*.jsonl beside its parent: its lines carry the
		// parent's session id.
		m.sess.ParentID = l.SessionID
	}
	m.forkedFrom(l)
	switch l.Type {
	case "user":
		m.mapUser(l, &out)
	case "assistant":
		// A line a fork copied (forkedFrom) counts its tokens as its line
		// says, as a continuation's copied line does: its parent spent
		// them, and the fork's totals leave them out while the parent is
		// imported and counts them (fileImport.copiedLine, copiedTokens),
		// and count them again once it is removed (keepCopiedCounted).
		m.mapAssistant(l, &out)
	case "system":
		out.Label = "system"
		if l.Subtype != "" {
			out.Label = "system:" + l.Subtype
		}
		switch l.Subtype {
		case "api_error":
			out.Kind = eventlog.KindError
		case "compact_boundary":
			// The conversation before it was summarised: what follows is
			// what the model has in context (session context replays from
			// here).
			out.Kind = eventlog.KindCompaction
		}
	case "summary":
		if m.sess.Title == "" && l.Summary != "" {
			m.sess.Title = titleOf(l.Summary)
		}
	case "custom-title":
		// {"type":"custom-title","customTitle":"...","sessionId":...},
		// appended at each /rename; ai-title likewise, with aiTitle.
		m.customTitle = titleOf(l.CustomTitle)
	case "ai-title":
		m.aiTitle = titleOf(l.AITitle)
	case "continued-in":
		m.continuedIn(l)
	case "progress":
		if l.DataType != "" {
			out.Label = "progress:" + l.DataType
		}
	case "file-history-snapshot":
		for p, b := range l.Tracked {
			out.addBackup(p, b)
		}
	case "file-history-delta":
		// A newer Claude Code's (2.1.220 on) back-fill of a prompt's
		// snapshot: one file's entry of trackedFileBackups, the backup
		// made before the turn's first edit of it, on a line of its own
		// rather than the whole snapshot again (peers.md, 3.1). Taken as
		// that entry: its backup becomes a capture (captureBackups).
		if l.TrackingPath != "" && l.Delta != nil {
			out.addBackup(claudeDeltaPath(l.TrackingPath, l.Delta.RealParentDir), *l.Delta)
		}
	default:
		if !claudeNoteTypes[l.Type] {
			out.Unknown = l.Type
		}
	}
	return out
}

// addBackup notes the file backup b a snapshot (or delta) line names for
// path p: its file name ("" for null: the file did not exist), when it
// was made, and, of a file absent again at a later version, that version.
func (out *mappedLine) addBackup(p string, b claudeBackup) {
	if out.Backups == nil {
		out.Backups = map[string]string{}
	}
	if t, ok := lineTime(b.BackupTime); ok {
		if out.BackupTimes == nil {
			out.BackupTimes = map[string]time.Time{}
		}
		out.BackupTimes[p] = t
	}
	if b.BackupFileName != nil {
		out.Backups[p] = *b.BackupFileName
		return
	}
	out.Backups[p] = ""
	// Absent again at a later version: it existed in between (created,
	// then deleted), so this is a state of its own.
	if v, err := strconv.Atoi(string(b.Version)); err == nil && v > 1 {
		if out.AbsentVersions == nil {
			out.AbsentVersions = map[string]int{}
		}
		out.AbsentVersions[p] = v
	}
}

// claudeDeltaPath is the path a file-history-delta's backup is of, named
// as a snapshot's trackedFileBackups names it: its trackingPath (the key
// of that map, which the delta fills in: relative to the session's cwd,
// or absolute), unless realParentDir, the directory the file is in, its
// links resolved, says the relative one is not named from there (it does
// not end with the trackingPath's directory): then the file in
// realParentDir, absolute (captureBackups names it from the workspace,
// or as outside it). Sources: peers.md, section 3.1 (the delta's shape,
// from pedropaulovc/claude-code-types and eilonwy06/claudecode-eclipse-
// ide#95); readers of real transcripts that restore a delta's file to
// realParentDir joined with the file's name.
func claudeDeltaPath(trackingPath, realParentDir string) string {
	if filepath.IsAbs(trackingPath) || !filepath.IsAbs(realParentDir) {
		return trackingPath
	}
	parent, dir := filepath.Clean(realParentDir), filepath.Dir(filepath.Clean(trackingPath))
	if dir == "." || strings.HasSuffix(parent, string(filepath.Separator)+dir) {
		return trackingPath
	}
	return filepath.Join(parent, filepath.Base(trackingPath))
}

// forkedFrom reads whether the session is a fork: one made by `claude
// --resume <id> --fork-session` (or --continue), /branch (formerly /fork),
// or the Agent SDK's forkSession, which is a new file, under a new session
// id, beginning with a copy of the lines of the session it was forked from
// up to the fork point. Each copied line keeps its uuid and timestamp,
// takes the new sessionId, and carries forkedFrom {sessionId: the session
// forked from, messageUuid: the line's uuid there}; the fork's own lines,
// after them, carry none. (A resume without --fork-session appends to the
// same file: no new session.) Sources: Claude Agent SDK docs,
// docs.claude.com/docs/agent-sdk/sessions ("Forking sessions": forkSession
// false appends to the original, true makes a new session id); anthropics/
// claude-code#44684 (--fork-session and /fork, alias /branch); the
// forkedFrom {sessionId, messageUuid} of a fork's lines, as public readers
// of real transcripts (2.1.x, e.g. a 2.1.123 line) read it, from its first
// lines, and a public study of 389 real sessions ("every line of the fork
// carries forkedFrom"); peers.md, section 3.1 (anthropics/claude-code#85179:
// forks copy ~90% of their parent).
//
// The session is a fork of the session its first forkedFrom names, read
// before any line of its own: a subagent's file is its spawner's child
// whatever it copied, and a forkedFrom after the session's own lines, or
// naming the session itself, makes no fork. Older Claude Codes wrote
// forks, and resumes, without forkedFrom: those files are left unlinked,
// since the lines two files share (a summary, a subagent's prompt, a
// parent copied into several forks) do not say which came from which.
func (m *claudeMapper) forkedFrom(l *claudeEntry) {
	switch {
	case m.own || m.sess.Subagent || m.sess.ParentID != "":
	case l.ForkedFrom != "" && l.ForkedFrom != m.sess.ID:
		m.sess.ParentID, m.sess.Fork = l.ForkedFrom, true
	case l.ForkedFrom == "" && (l.Type == "user" || l.Type == "assistant"):
		m.own = true
	}
}

// continuedIn reads a continued-in entry, {"type":"continued-in",
// "sessionId":<this session>,"continuedInSessionId":<new>}: Claude Code
// writes it as the last line of a transcript whose conversation it moved
// into a new session, when a live session is sent to the background (the
// agents view's left arrow, Ctrl+B, /background or /bg). The CLI then runs
// `claude bg-pty-host --session-id <new> --fork-session --resume
// <old>.jsonl`: the new transcript begins with a copy of this one's lines
// (their uuids and timestamps kept, the sessionId rewritten,
// sessionKind "bg" added) and goes on with the conversation; this one
// takes no more turns unless it is itself resumed later. The copy's lines
// carry no forkedFrom, so this line is the only statement of where the
// conversation went: the new session, when imported, is linked as a fork
// of this one (linkContinuations), which is what it is: a session that
// begins by copying this one's lines. The copied model lines carry their
// usage, unmarked: the new session's import counts them no tokens when
// this one is imported before it, telling them by their uuids
// (fileImport.copiedLine); in one run it waits for the other files
// (sourceNames.waits); imported in a run before this one, it counts them
// again.
// Sources: a design note measuring Claude Code 2.1.278 (the bg-pty-host
// command line, and the line itself as the old transcript's last); a
// resume helper measuring 2.1.291/2.1.292
// ("does not move a conversation, it copies it", and a copy's file is
// written only once something is said in it); a live test of the left
// arrow's background move waiting for this line; kenn-io/agentsview#1370
// and its lineage parser (the copy's on-disk shape, sessionKind "bg", no
// forkedFrom); anthropics/claude-code#70373, #73354, #80811 (backgrounding
// forks the session under a new id); readers in other tools (herdr
// journals, agents views) that follow the line to the new file. Not
// compaction: a compacted conversation stays in its file
// (compact_boundary).
//
// The line names its own session; one naming another (copied from
// elsewhere), or a subagent's, or naming this session, is left a note.
// The last one counts.
func (m *claudeMapper) continuedIn(l *claudeEntry) {
	if m.sess.Subagent || l.ContinuedIn == "" || l.ContinuedIn == m.sess.ID || (l.SessionID != "" && l.SessionID != m.sess.ID) {
		return
	}
	m.sess.ContinuedIn = l.ContinuedIn
}

// claudeNoteTypes are the other entry types Claude Code writes (peers.md,
// 3.1): metadata of the session (modes, the last prompt, links),
// queued prompts, attachments, backups, workflow journals. They are notes,
// on purpose; a type not here or above is one rook does not know, still a
// note, and reported (a newer Claude Code's, which a newer rook may map).
var claudeNoteTypes = map[string]bool{
	"attachment": true, "queue-operation": true, "last-prompt": true,
	"agent-name": true, "agent-setting": true, "pr-link": true,
	"mode": true, "permission-mode": true, "saved_hook_context": true, "fork-context-ref": true,
	"frame-link": true, "relocated": true, "worktree-state": true, "bridge-session": true,
	"atis-latch": true, "started": true, "result": true,
}

func (m *claudeMapper) mapUser(l *claudeEntry, out *mappedLine) {
	if !l.MsgOK {
		return // a user entry without a message: a note
	}
	out.Label = ""
	if l.IsCompactSummary {
		// Written by the model, not the user: what the conversation
		// before the compaction was (session context counts it after the
		// compact boundary, as the model read it).
		out.Kind, out.Label = eventlog.KindNote, "user:compact-summary"
		return
	}
	if l.IsText {
		out.Kind = eventlog.KindUser
		if l.IsMeta {
			out.Kind, out.Label = eventlog.KindNote, "user:meta"
		} else {
			m.titleFrom(l.Text)
		}
		return
	}
	if !l.BlocksOK || l.Blocks == 0 {
		out.Kind = eventlog.KindUser
		return
	}
	b := l.First
	switch b.Type {
	case "tool_result":
		out.Kind, out.Label = eventlog.KindToolResult, m.toolName[b.ToolUseID]
	default:
		out.Kind = eventlog.KindUser
		if l.IsMeta {
			out.Kind, out.Label = eventlog.KindNote, "user:meta"
		} else if l.Prompt != "" {
			// Not always the first block: the VS Code extension puts the
			// file open in the IDE (<ide_opened_file>) or the lines
			// selected (<ide_selection>) before the prompt, a pasted
			// image comes first, a <system-reminder> may.
			m.titleFrom(l.Prompt)
		}
	}
}

func (m *claudeMapper) mapAssistant(l *claudeEntry, out *mappedLine) {
	if l.IsAPIError {
		// A call that failed (overloaded, a usage limit, a key refused):
		// Claude Code writes the error in the model's place, a message of
		// model <synthetic> whose text is the error. An error, as a
		// system api_error line is; no API message: its usage (zeros)
		// counts nothing, and it is a group of none.
		out.Kind, out.Label = eventlog.KindError, "assistant:api_error"
		return
	}
	if !l.MsgOK {
		return
	}
	out.Kind, out.Label = eventlog.KindAssistant, l.Model
	if l.BlocksOK && l.Blocks > 0 {
		switch b := l.First; b.Type {
		case "thinking", "redacted_thinking":
			out.Kind = eventlog.KindReasoning
		case "tool_use", "server_tool_use":
			out.Kind, out.Label = eventlog.KindToolCall, b.Name
			m.toolName[b.ID] = b.Name
		}
	}
	// Claude Code writes each content block of one API message on its own
	// line, repeating the message's usage as it streams: the input on
	// every line, the output so far (a line before the last says 1 or 10
	// where the message ends at 441). The lines are one group when they
	// follow each other; a progress note or a tool's result may come
	// between them. So a message's tokens count once, whichever lines it
	// spans: each line adds what its usage says beyond what the lines
	// before counted of the same message.
	if l.MsgID != "" {
		out.Group = l.MsgID
	}
	u := l.Usage
	if u == nil {
		return
	}
	now := u.tokens()
	if l.MsgID == "" {
		out.TokensIn, out.TokensOut = now.in, now.out
		return
	}
	before := m.counted[l.MsgID]
	out.TokensIn, out.TokensOut = now.in-min(now.in, before.in), now.out-min(now.out, before.out)
	m.counted[l.MsgID] = messageTokens{in: max(now.in, before.in), out: max(now.out, before.out)}
}

// titleFrom titles the session from the text of a user's message (not a
// meta one), if it has no title yet and the text is one (claudeTitles): a
// prompt the user wrote, or a slash command as typed, with its arguments.
func (m *claudeMapper) titleFrom(text string) {
	if m.sess.Title != "" || !claudeTitles(text) {
		return
	}
	if !strings.HasPrefix(strings.TrimSpace(text), "<") {
		m.sess.Title = titleOf(text)
		return
	}
	// <command-message>…<command-name>/x</command-name><command-args>…:
	// read from the text's beginning as a view keeps it (viewKeep), so
	// that the title is the same through the view of a long one.
	text = text[:viewKeep([]byte(text))]
	name, _ := tagText(text, "command-name")
	args, _ := tagText(text, "command-args")
	if args == "" {
		// A command with no arguments (/init, /clear before a new
		// conversation) says little: a prompt after it titles better.
		if m.cmdTitle == "" {
			m.cmdTitle = titleOf(name)
		}
		return
	}
	m.sess.Title = titleOf(name + " " + args)
}

// claudeTitles says whether a text of a user's message may title the
// session: a prompt, or a slash command as typed (<command-name>). What
// Claude Code writes in the user's place may not: a command's output
// (<local-command-stdout>), the IDE's context (<ide_opened_file>,
// <ide_selection>), a <system-reminder>, other tagged text, an
// interruption marker, a command's caveat (a meta message as a rule, and
// tagged <local-command-caveat> in newer versions, but not always either),
// blanks. Whole, or one block of several, the same rules: the mapping
// titles from the first block that may.
func claudeTitles(text string) bool {
	trimmed := strings.TrimSpace(text)
	switch {
	case trimmed == "", strings.HasPrefix(trimmed, "[Request interrupted by user"),
		strings.HasPrefix(trimmed, "Caveat: The messages below were generated by the user"):
		return false
	case strings.HasPrefix(trimmed, "<"):
		// Read as titleFrom reads it: as far as a view keeps.
		name, ok := tagText(text[:viewKeep([]byte(text))], "command-name")
		return ok && name != ""
	}
	return true
}

// tagText is the text between <tag> and </tag> in s, trimmed; to the end
// of s when it has no </tag> (a view cut it off).
func tagText(s, tag string) (string, bool) {
	_, after, ok := strings.Cut(s, "<"+tag+">")
	if !ok {
		return "", false
	}
	text, _, _ := strings.Cut(after, "</"+tag+">")
	return strings.TrimSpace(text), true
}

// titleOf makes a session title from a prompt: its first non-empty line,
// at most 80 characters.
func titleOf(s string) string {
	for _, line := range strings.Split(s, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			s = line
			break
		}
	}
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) > 80 {
		r := []rune(s)
		s = string(r[:79]) + "…"
	}
	return s
}

// claudeFileHistory is where Claude Code keeps the file backups of a
// session: ~/.claude/file-history/<session id>/, beside the projects
// directory the transcript is in ("" when the transcript is elsewhere).
func claudeFileHistory(transcript, sessionID string) string {
	if sessionID == "" {
		return ""
	}
	for dir := filepath.Dir(transcript); dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
		if filepath.Base(dir) == "projects" {
			return filepath.Join(filepath.Dir(dir), "file-history", sessionID)
		}
	}
	return ""
}

// lateBackups counts the file backups in the Claude Code file-history
// directory of the session m was imported as when that session took in
// none: put there after its transcript was imported (the transcript
// copied on its own, its backups later). Those its lines name are taken
// in by takeSideFiles (lateCaptures), which sets the count to 0 when it
// looked; counted, they are ones no line names, or that did not read.
// (A session that took some in was told of the ones missing then, at
// their lines.) The directory's time, one stat, spares the
// common case a read of the session: backups are made before the lines
// that name them are written, so a directory that changed last before
// the transcript did holds none put there later. A subagent's backups
// are in its parent's directory, with the parent's: left out.
func (r *Rook) lateBackups(m eventlog.Meta) int {
	src := m.Source
	if src == nil || src.Format != FormatClaudeCode || m.Workspace == "" || slices.Contains(m.Tags, subagentTag) {
		return 0
	}
	dir := claudeFileHistory(src.Path, src.ID)
	if dir == "" {
		return 0
	}
	fi, err := r.fs.Stat(dir)
	if err != nil || !fi.IsDir() || (src.Stat != nil && sideTime(fi) <= src.Stat.MTime) {
		return 0
	}
	ents, err := r.fs.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		if e.Type().IsRegular() {
			n++
		}
	}
	if n == 0 {
		return 0
	}
	for from := uint64(0); ; {
		evs, err := r.Log.Read(m.ID, from, 1024)
		if err != nil {
			return 0
		}
		for _, ev := range evs {
			if _, late := lateCaptureAt(ev); late || ev.Kind == eventlog.KindCheckpoint && ev.Label == captureBackupsLabel {
				return 0
			}
		}
		if len(evs) < 1024 {
			return n
		}
		from += uint64(len(evs))
	}
}
