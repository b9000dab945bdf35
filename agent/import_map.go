package agent

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
)

// Transcript formats rook imports.
const (
	FormatClaudeCode = "claude-code"
	FormatCodex      = "codex"
)

// mappedLine is what one source line becomes: one event. Its body is the
// line itself (a source line object); the mapping gives the event its kind,
// label, tokens and time, so that every rook command reads an imported
// session like a native one.
type mappedLine struct {
	Kind      eventlog.Kind
	Label     string
	TokensIn  uint64
	TokensOut uint64
	Time      time.Time // zero: the time of the line before
	// Group joins consecutive lines into one atomic group of events (one
	// API message split over several lines); "" for a line on its own.
	Group string
	// Backups are the file backups a Claude Code file-history snapshot
	// names: path (relative to the workspace) -> backup file name, "" for
	// a file that did not exist before the agent wrote it.
	Backups map[string]string
	// Unparsed says why the line is not a JSON entry this mapper knows
	// (not JSON at all, a truncated last line...): it is kept as a note,
	// byte for byte, and reported with its file:line. "" when it parsed.
	Unparsed string
}

// lineMapper turns the lines of one source file into events, and gathers
// what the session's metadata needs. It sees the lines in order, each with
// its terminating newline removed.
type lineMapper interface {
	mapLine(line []byte) mappedLine
	// cutKind is the object kind for a string cut out of a line that
	// mapped to m (files, tool output, messages compress apart).
	cutKind(m mappedLine, s jsonString) cas.Kind
	// session describes the session after the lines seen so far.
	session() sourceSession
}

// sourceSession is what a mapper learnt about the session of its file.
type sourceSession struct {
	ID        string // the source's own session id ("" if none seen)
	ParentID  string // the parent's source session id, for a subagent or fork
	Title     string // the first prompt, or a summary
	Workspace string // the working directory
	Subagent  bool
}

// fileKinds are the keys whose string values are file contents.
var fileKinds = map[string]bool{"originalFile": true, "oldString": true, "newString": true, "oldText": true, "newText": true}

// defaultCutKind: file contents apart, then tool output, then messages.
func defaultCutKind(m mappedLine, s jsonString) cas.Kind {
	switch {
	case fileKinds[s.Key]:
		return cas.KindFile
	case s.Key == "content" && len(s.Parents) > 0 && s.Parents[len(s.Parents)-1] == "file":
		return cas.KindFile
	case m.Kind == eventlog.KindToolResult:
		return cas.KindToolResult
	}
	return cas.KindMessage
}

// previewKeys are the keys whose string values say what an imported line
// is about (a prompt, a reply, a command, an output), in the order a
// preview prefers them.
var previewKeys = map[string]bool{
	"text": true, "content": true, "thinking": true, "summary": true, "message": true, "prompt": true,
	"command": true, "arguments": true, "input": true, "output": true, "stdout": true, "result": true,
	"pattern": true, "file_path": true, "path": true, "query": true, "url": true, "description": true,
}

// importedText is what a history line shows of an imported line: its first
// string value under a key that carries text (Claude Code's message text,
// a tool's command or output, Codex's content or arguments), or the line
// itself when it has none.
func importedText(line []byte) []byte {
	strs, ok := stringValues(bytes.TrimRight(line, "\r\n"), 3, false)
	if !ok {
		return line
	}
	for _, s := range strs {
		if !previewKeys[s.Key] {
			continue
		}
		var text string
		if json.Unmarshal(line[s.Start:s.End], &text) == nil && strings.TrimSpace(text) != "" {
			return []byte(text)
		}
	}
	return line
}
