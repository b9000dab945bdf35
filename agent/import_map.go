package agent

import (
	"bytes"
	"reflect"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	// Go 1.27's encoding/json, on json/v2, for Go 1.26: the same answers
	// (FuzzDecodeLikeEncodingJSON), 2.4x faster on an import's lines.
	json "github.com/go-json-experiment/json/v1"

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
	// BackupTimes are when Claude Code backed the files up (backupTime),
	// by path as in Backups: a backup named but not on disk yet, and made
	// moments ago, is on its way (heldForBackups).
	BackupTimes map[string]time.Time
	// AbsentVersions are the versions of the paths in Backups with no
	// backup ("") whose version is over 1 (backupKey).
	AbsentVersions map[string]int
	// Unparsed says why the line is not a JSON entry this mapper knows
	// (not JSON at all, a truncated last line...): it is kept as a note,
	// byte for byte, and reported with its file:line. "" when it parsed.
	Unparsed string
	// Unknown is the entry type of a line that parsed but is of a type
	// the mapper does not know (a newer agent's): a note, kept and cut as
	// any, and counted and reported with its file:line. "" for the types
	// it knows, those it keeps as notes on purpose included.
	Unknown string
}

// lineTime is a transcript line's time stamp s (RFC 3339), and whether
// it is one the line can be given: false for one missing or malformed, and
// for one outside the years 0-9999 in UTC, which RFC 3339 can write
// ("9999-12-31T23:59:59-01:00" is in the year 10000) but JSON's time
// format cannot: stored, it had every --json listing of the session fail
// to encode. Such a line is given the time of the line before, as one with
// no time is; its bytes are stored as they were, so export still writes
// them back as read.
func lineTime(s string) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, false
	}
	if y := t.UTC().Year(); y < 0 || y > 9999 {
		return time.Time{}, false
	}
	return t, true
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
	// reads says whether the mapper reads a top-level member of a line
	// with this key: a view of the line may leave out the others.
	reads(key string) bool
	// shortens says whether a view may shorten this string: the mapper
	// reads it only through titleOf and prefix tests, if at all.
	shortens(s *jsonString) bool
	// saveState and loadState keep and restore what the mapper knows
	// after the lines it has seen (import_state.go).
	saveState() ([]byte, error)
	loadState(data []byte) error
}

// scannedMapper is a lineMapper with a fast path for the lines scanJSON
// took: mapScanned maps such a line given its strings and members (from
// scanJSON), as mapLine would map view(), the line's view, which it makes
// only when the fast path declines.
type scannedMapper interface {
	mapScanned(line []byte, strs []jsonString, members []jsonMember, view func() []byte) mappedLine
}

// sourceSession is what a mapper learnt about the session of its file.
type sourceSession struct {
	ID        string // the source's own session id ("" if none seen)
	ParentID  string // the parent's source session id, for a subagent or fork
	Title     string // the name, else the first prompt, or a summary
	Workspace string // the working directory
	Subagent  bool
	// Fork: ParentID is the session this one was forked from (a Codex
	// rollout's forked_from_id, a Claude Code transcript's forkedFrom),
	// whose lines it begins by copying.
	Fork bool
	// Name is the session's name, as a title: the last the user gave it
	// (Claude Code's /rename, Codex's thread name), else the last Claude
	// Code made for it; "" if none. It titles the session over its prompt.
	Name string
	// ContinuedIn is the source session id the conversation went on in
	// (a Claude Code transcript's continued-in line), "" if none: that
	// session is linked as a fork of this one (linkContinuations).
	ContinuedIn string
	// CopyEnds counts the ends of a copy of a parent's history the lines
	// held (a Codex subagent's spawn mark, codexForkedSpawnMark): the
	// title from before the last is the parent's.
	CopyEnds int
	// Renamed: the lines taken in, after those an earlier import of the
	// file took (sourceMapper), change Name, or end a copy of a parent's
	// history (CopyEnds): the title they make replaces the one before.
	Renamed bool
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
	// a progress entry waiting for a background task; Codex's
	// turn_aborted and task_complete
	"taskDescription": true, "reason": true, "last_agent_message": true,
}

// importedText is the first string value of an imported line under a key
// that carries text (Claude Code's message text, a tool's command or
// output, Codex's content or arguments), or the line itself when it has
// none: the reading view's glimpse of a line it has no shape for.
func importedText(line []byte) []byte {
	strs, ok := stringValues(bytes.TrimRight(line, "\r\n"), 3)
	if !ok {
		return line
	}
	for _, s := range strs {
		if !previewKeys[s.Key] || encodedValue(line, &s) {
			continue
		}
		var text string
		if json.Unmarshal(line[s.Start:s.End], &text) == nil && strings.TrimSpace(text) != "" {
			return []byte(text)
		}
	}
	return line
}

// readLine maps one line (its newline removed) and picks the strings to
// cut out of it, reading the line's JSON once. The mapper reads a view of
// the line (mapView), with long texts shortened and the members it does
// not decode left out: a tool output of megabytes is then scanned once
// here rather than again by every decode of the mapper. A line that is not JSON, or that the mapper does not
// take, has nothing cut out.
func readLine(mapper lineMapper, line []byte, minCut int) (mappedLine, []stringCut) {
	r := lineReader{mapper: mapper, minCut: minCut}
	return r.read(line)
}

// lineReader is readLine for the lines of one file, one after another. It
// reuses its scratch space from line to line: the member list and the view
// are dropped once the mapper has read the line (mappers copy what they
// keep, json.RawMessage included).
type lineReader struct {
	mapper  lineMapper
	minCut  int
	members []jsonMember
	keys    keyNames
	cache   *keyCache
	view    []byte
}

func (r *lineReader) read(line []byte) (mappedLine, []stringCut) {
	m, strs := r.mapOnly(line)
	if m.Unparsed != "" || strs == nil {
		return m, nil
	}
	return m, lineCuts(line, strs, r.minCut, func(s jsonString) cas.Kind { return r.mapper.cutKind(m, s) })
}

// mapOnly is read without the strings to cut out, and the line's strings
// (nil when it is not JSON): for a line taken in by an earlier import,
// which goes through the mapper only for the state it leaves (mapChunk),
// decoding its long strings for cuts would be work thrown away.
func (r *lineReader) mapOnly(line []byte) (mappedLine, []jsonString) {
	r.members = r.members[:0]
	if r.keys == nil {
		r.keys, r.cache = keyNames{}, new(keyCache)
	}
	strs, ok := scanJSONCached(line, min(r.minCut, viewLong)+2, &r.members, r.keys, r.cache)
	if !ok {
		return r.mapper.mapLine(line), nil
	}
	view := func() []byte {
		r.view = mapView(r.view[:0], line, strs, viewLong, r.members, r.mapper)
		return r.view
	}
	if sm, ok := r.mapper.(scannedMapper); ok {
		return sm.mapScanned(line, strs, r.members, view), strs
	}
	return r.mapper.mapLine(view()), strs
}

// viewKeys are the keys whose string values the mappers read only through
// titleOf and prefix tests (prompts, summaries), or not at all (outputs,
// file contents): a view may shorten them, unless the mapper's shortens
// says otherwise (a value it compares whole, the Codex token totals). A
// mapper that comes to read more of one must take its key out;
// FuzzClaudeLine and FuzzCodexLine check that lines map the same through
// their views, one after another.
var viewKeys = map[string]bool{
	"text": true, "content": true, "thinking": true, "signature": true, "encrypted_content": true,
	"message": true, "summary": true, "output": true, "stdout": true, "stderr": true, "result": true,
	"arguments": true, "input": true, "originalFile": true, "oldString": true, "newString": true,
	"base_instructions": true, "instructions": true, "user_instructions": true, "developer_instructions": true,
}

// viewLong is the shortest text a view shortens, viewRunes how many
// non-blank runes of it it keeps after its leading blanks: more than a
// title's 80, so that titleOf and every prefix test see what they would
// in the whole text, and room for the tags before a slash command's
// arguments, which title a session too (claudeMapper.titleFrom).
const (
	viewLong  = 1024
	viewRunes = 512
)

// mapView is what a mapper reads of a line: the line, with the texts of at
// least minLen bytes the mapper lets it shorten cut to their beginning (see
// viewKeep), and, when the line is an object whose members are known
// (members, from scanJSON), without the members the mapper does not read.
// strs are the line's strings, from scanJSON. The view is appended to out.
func mapView(out, line []byte, strs []jsonString, minLen int, members []jsonMember, mapper lineMapper) []byte {
	next := 0 // the first string not yet copied past
	// add copies line[from:to], shortening the long texts in it.
	add := func(from, to int) {
		for next < len(strs) && strs[next].Start < from {
			next++
		}
		p := from
		for ; next < len(strs) && strs[next].End <= to; next++ {
			s := &strs[next]
			if s.End-s.Start < minLen+2 || !mapper.shortens(s) {
				continue
			}
			text, ok := s.canonical(line)
			if !ok {
				continue
			}
			if keep := viewKeep(text); keep < len(text) {
				out = append(out, line[p:s.Start]...)
				out = appendJSONString(out, text[:keep])
				p = s.End
			}
		}
		out = append(out, line[p:to]...)
	}
	if len(members) == 0 {
		add(0, len(line))
		return out
	}
	out = append(out, '{')
	for _, m := range members {
		if !mapper.reads(m.Key) {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		add(m.Start, m.End)
	}
	return append(out, '}')
}

// underKey says whether any of the keys enclosing a string folds onto key
// the way encoding/json matches a field's name, or might (a non-ASCII key).
func underKey(s *jsonString, key string) bool {
	for _, p := range s.Parents {
		if strings.EqualFold(p, key) || !isASCII(p) {
			return true
		}
	}
	return false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// readsKeys is a mapper's reads: whether a top-level key is one of those
// its line struct decodes (the json tags of t's fields). encoding/json
// matches keys without regard to case, and folds some non-ASCII letters
// onto ASCII ones (the Kelvin sign onto k): a key that folds onto one of
// them, or has any non-ASCII byte, is read too.
func readsKeys(t reflect.Type) func(string) bool {
	var keys []string
	for i := 0; i < t.NumField(); i++ {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	return func(key string) bool {
		k, plain := known(key, keys) // plain: matches no name by folding
		return k >= 0 || !plain
	}
}

// viewKeep is how many bytes of a text a view keeps: its leading blanks,
// then up to and including its viewRunes-th non-blank rune. What is kept
// ends on a non-blank rune, so trimming it and taking its first line
// gives, up to 80 runes, what trimming the whole text would.
func viewKeep(text []byte) int {
	seen := 0
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRune(text[i:])
		i += n
		if !unicode.IsSpace(r) {
			if seen++; seen == viewRunes {
				return i
			}
		}
	}
	return len(text)
}
