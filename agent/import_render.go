package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rookhq/rook/eventlog"
)

// The reading view of an imported event. Its body is the source lines
// themselves (a JSON envelope each: ids, parents, the working directory,
// versions, the message inside), which is what export needs and not what
// a person reading a session wants. RenderImported turns each line into
// the text in it: a prompt or a reply as written, a tool call as its name
// and arguments, a tool's output, a one-line summary for the rest
// (progress, system, snapshots). Nothing is decided here that the store
// keeps: `session show --raw` and `session entry` give the lines as they
// are.
//
// A line is rendered only when it decodes as the shapes below; any other
// line (not JSON, a field of another type, an entry type not known yet)
// is shown as it is, so the view never hides a line, but for its encoded
// state (an image's base64, a signature, encrypted reasoning), shown as a
// marker ("[signature 412 B]", withoutEncoded).

// RenderImported is the reading view of the body of an imported event:
// each line rendered as text; a line that renders as more than one line
// is set apart from its neighbours by an empty line. Control characters
// other than newline and tab (an escaped NUL or ESC in the JSON) and
// bytes that are not UTF-8 are replaced with U+FFFD (cleanView): the view
// goes to terminals and HTML as it is.
func RenderImported(body []byte) []byte { return renderBody(body, true, false) }

// renderEvent is RenderImported of the body of event ev, as ev counts its
// tokens: of an event that counted none, a Codex token_count's usage shows
// as a repeat, not counted (uncounted).
func renderEvent(ev eventlog.Event, body []byte) []byte {
	return renderBody(body, true, uncounted(ev))
}

// uncounted says whether event ev counted no tokens: then a Codex
// token_count line of it repeats the usage of the one before, which
// counted it (codexMapper.tokenCount; a token_count that counts tokens is
// an event of its own, mergeableLine), and its view says so rather than
// show that usage as if counted.
func uncounted(ev eventlog.Event) bool { return ev.TokensIn == 0 && ev.TokensOut == 0 }

// renderBody is RenderImported, with or without the lines that only name
// a block ("[tool_use Bash]", "[thinking]"): a preview leaves them out.
// uncounted: the event counted no tokens (renderEvent).
func renderBody(body []byte, headers, uncounted bool) []byte {
	var out bytes.Buffer
	short := false // the line before rendered as one line
	for i, line := range bytes.Split(bytes.TrimRight(body, "\r\n"), []byte("\n")) {
		raw := bytes.TrimRight(line, "\r")
		r := renderer{headers: headers, uncounted: uncounted}
		var text []byte
		// After a byte order mark or a crash's NULs, the mappers read the
		// entry it is, and so does its view; a line that does not render
		// is shown whole, what came before its entry too (a line of NULs
		// only is not an empty one).
		if r.line(entryBytes(raw)) {
			// A tool's output shown as printed may be JSON with an image
			// in it: shown as a marker too.
			text = maskNestedEncoded(r.out.Bytes())
		} else {
			text = withoutEncoded(raw) // shown as it is, but for encoded state
		}
		text = bytes.TrimRight(text, " \n")
		one := bytes.IndexByte(text, '\n') < 0
		if i > 0 && !(one && short) {
			out.WriteByte('\n')
		}
		out.Write(text)
		out.WriteByte('\n')
		short = one
	}
	return cleanView(out.Bytes())
}

// cleanView is text fit for a terminal or HTML: valid UTF-8, and no
// control character but newline and tab (each replaced with U+FFFD). A
// terminal's color and style sequences (ESC [ ... m, as a command's
// output kept them: Claude Code's local-command-stdout) are left out: they
// are how the text looked, not what it says.
func cleanView(b []byte) []byte {
	b = StripSGR(b)
	return bytes.Map(func(c rune) rune {
		if (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f {
			return '\uFFFD'
		}
		return c
	}, b)
}

// StripSGR is b without the terminal sequences that set colors and
// styles (ESC [ digits and semicolons m), for a view of text kept as a
// program printed it (a tool's output saved whole): they are how it
// looked, not what it says. b is returned as it is when it has none.
func StripSGR(b []byte) []byte {
	if !bytes.Contains(b, []byte("\x1b[")) {
		return b
	}
	return stripSGR(b)
}

// stripSGR removes the terminal sequences that set colors and styles:
// ESC [, digits and semicolons, m. Any other sequence stays (cleanView
// then makes its ESC a U+FFFD).
func stripSGR(b []byte) []byte {
	out, _ := stripSGRAt(b, 0)
	return out
}

// stripSGRAt is stripSGR, and where the byte at `at` is in what it
// returns (a search snippet's match).
func stripSGRAt(b []byte, at int) ([]byte, int) {
	out := make([]byte, 0, len(b))
	newAt, done := at, 0
	for {
		i := bytes.Index(b, []byte("\x1b["))
		if i < 0 {
			return append(out, b...), newAt
		}
		if j := sgrEnd(b, i); j > 0 {
			if from := done + i; from < at {
				newAt -= min(done+j, at) - from
			}
			out = append(out, b[:i]...)
			b, done = b[j:], done+j
			continue
		}
		out = append(out, b[:i+2]...)
		b, done = b[i+2:], done+i+2
	}
}

// sgrEnd is the end of the color or style sequence at b[i] (ESC [, digits
// and semicolons, m), or 0 when there is none there.
func sgrEnd(b []byte, i int) int {
	if i+1 >= len(b) || b[i] != 0x1b || b[i+1] != '[' {
		return 0
	}
	j := i + 2
	for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == ';') {
		j++
	}
	if j < len(b) && b[j] == 'm' {
		return j + 1
	}
	return 0
}

// renderer renders one source line into out.
type renderer struct {
	out     bytes.Buffer
	headers bool // write the lines that only name a block
	depth   int  // tool results inside tool results
	// uncounted: the event counted no tokens; a token_count's usage is a
	// repeat (renderEvent).
	uncounted bool
	// lz: the line is rendered with its cut strings as placeholders
	// (renderedStream); nil for a line read whole.
	lz *lazyLine
}

// maxRenderDepth bounds the tool results rendered inside tool results: a
// deeper one is shown as written (each level would decode the rest of the
// line again).
const maxRenderDepth = 2

// head writes a line that names a block, "[tag]".
func (r *renderer) head(format string, a ...any) {
	if r.headers {
		fmt.Fprintf(&r.out, "["+format+"]\n", a...)
	}
}

// renderedLine is what the rendering reads of a line of either format. A
// field of another type fails the decode, and the line is shown as it is.
type renderedLine struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype"`
	Message *struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"`
	Summary string          `json:"summary"`
	Content json.RawMessage `json:"content"` // system, queue-operation
	Data    json.RawMessage `json:"data"`    // progress
	// file-history-snapshot
	Snapshot *struct {
		Tracked map[string]json.RawMessage `json:"trackedFileBackups"`
	} `json:"snapshot"`
	Payload json.RawMessage `json:"payload"` // Codex
	// A Claude Code Task result: what the subagent cost (its own file's
	// usage is each message's first streamed chunk only).
	ToolUseResult json.RawMessage `json:"toolUseResult"`
	// Read apart (systemDetail, the operation's text), so that a value of
	// another type leaves the rest of the line rendered.
	DurationMs      json.RawMessage `json:"durationMs"`      // system turn_duration
	CompactMetadata json.RawMessage `json:"compactMetadata"` // system compact_boundary
	Operation       json.RawMessage `json:"operation"`       // queue-operation
	// system stop_hook_summary: the hooks run when the agent stopped,
	// their errors, and whether one kept it going (and why).
	HookInfos             json.RawMessage `json:"hookInfos"`
	HookErrors            json.RawMessage `json:"hookErrors"`
	PreventedContinuation json.RawMessage `json:"preventedContinuation"`
	StopReason            json.RawMessage `json:"stopReason"`
}

// systemDetail is what a Claude Code system line records beside its text,
// or "": a turn's duration (turn_duration, which has no text: "12m3.4s"),
// what a compaction was started by and the context it compacted
// (compact_boundary: "auto, 167094 tokens before").
func systemDetail(l *renderedLine) string {
	if d := hooksDetail(l); d != "" {
		return d
	}
	if ms, err := strconv.ParseFloat(string(l.DurationMs), 64); err == nil && ms >= 0 && ms < 1e15 {
		d := time.Duration(ms * float64(time.Millisecond))
		if d >= time.Second {
			d = d.Round(100 * time.Millisecond)
		}
		return d.String()
	}
	var m struct {
		Trigger   string `json:"trigger"`
		PreTokens *int64 `json:"preTokens"`
	}
	if len(l.CompactMetadata) == 0 || json.Unmarshal(l.CompactMetadata, &m) != nil {
		return ""
	}
	var parts []string
	if m.Trigger != "" {
		parts = append(parts, m.Trigger)
	}
	if m.PreTokens != nil {
		parts = append(parts, fmt.Sprintf("%d tokens before", *m.PreTokens))
	}
	return strings.Join(parts, ", ")
}

// hooksDetail is what a Claude Code stop_hook_summary records: every hook
// it ran (its first line names only the first), the errors they gave, and
// whether one stopped the agent from stopping, with its reason: "3 hooks:
// lint.sh; test.sh; notify.sh; 1 error: test.sh: exit 2; prevented
// stopping: tests fail". "" for any other line.
func hooksDetail(l *renderedLine) string {
	var hooks []struct {
		Command string `json:"command"`
	}
	if len(l.HookInfos) == 0 || l.HookInfos[0] != '[' || json.Unmarshal(l.HookInfos, &hooks) != nil || len(hooks) == 0 {
		return ""
	}
	cmds := make([]string, 0, len(hooks))
	for _, h := range hooks {
		cmds = append(cmds, Preview([]byte(h.Command), 60))
	}
	d := fmt.Sprintf("%d hook(s): %s", len(hooks), strings.Join(cmds, "; "))
	var errs []json.RawMessage
	if len(l.HookErrors) > 0 && l.HookErrors[0] == '[' && json.Unmarshal(l.HookErrors, &errs) == nil && len(errs) > 0 {
		texts := make([]string, 0, len(errs))
		for _, e := range errs {
			t, ok := rawText(e)
			if !ok {
				t = string(e)
			}
			texts = append(texts, Preview([]byte(t), 80))
		}
		d += fmt.Sprintf("; %d error(s): %s", len(errs), strings.Join(texts, "; "))
	}
	if string(l.PreventedContinuation) == "true" {
		d += "; prevented stopping"
		if r, ok := rawText(l.StopReason); ok && strings.TrimSpace(r) != "" {
			d += ": " + Preview([]byte(r), 80)
		}
	}
	return d
}

// subagentCost renders, as a line, what a Task result says of its
// subagent's run: its tool uses and time, and the usage of its last API
// message, whose total (totalTokens) is the subagent's context at its end:
// "[subagent] 25 tool uses, 57.7 s; last message: 49100 tokens (in 6,
// cache read 40725, cache written 4896, out 3473)". The subagent's own
// file records each message's first streamed chunk only.
func subagentCost(out *bytes.Buffer, raw json.RawMessage) {
	if len(raw) == 0 || raw[0] != '{' {
		return
	}
	var r struct {
		Tokens   *int64 `json:"totalTokens"`
		Tools    *int64 `json:"totalToolUseCount"`
		Duration *int64 `json:"totalDurationMs"`
		Usage    *struct {
			In         int64 `json:"input_tokens"`
			CacheRead  int64 `json:"cache_read_input_tokens"`
			CacheWrite int64 `json:"cache_creation_input_tokens"`
			Out        int64 `json:"output_tokens"`
		} `json:"usage"`
	}
	if json.Unmarshal(raw, &r) != nil || r.Tokens == nil {
		return
	}
	out.WriteString("[subagent]")
	sep := " "
	if r.Tools != nil {
		fmt.Fprintf(out, " %d tool uses", *r.Tools)
		sep = ", "
	}
	if r.Duration != nil {
		fmt.Fprintf(out, "%s%.1f s", sep, float64(*r.Duration)/1000)
	}
	fmt.Fprintf(out, "; last message: %d tokens", *r.Tokens)
	if u := r.Usage; u != nil {
		fmt.Fprintf(out, " (in %d, cache read %d, cache written %d, out %d)", u.In, u.CacheRead, u.CacheWrite, u.Out)
	}
	out.WriteByte('\n')
}

// contentBlock is a block of a message's content, of either format.
type contentBlock struct {
	Type     string          `json:"type"`
	Text     *string         `json:"text"`
	Thinking string          `json:"thinking"`
	Refusal  string          `json:"refusal"`
	Name     string          `json:"name"`
	Input    json.RawMessage `json:"input"`
	Content  json.RawMessage `json:"content"`
	IsError  bool            `json:"is_error"`
}

// line renders a source line; false when it does not read as one of the
// shapes above.
func (r *renderer) line(line []byte) bool {
	out := &r.out
	// JSON may begin with blanks, and the mappers read such a line as
	// what it is: so is it shown.
	line = bytes.TrimLeft(line, " \t\r\n")
	if len(line) == 0 || line[0] != '{' {
		return false
	}
	var l renderedLine
	if json.Unmarshal(line, &l) != nil || l.Type == "" || codexItemTypes[l.Type] {
		// Perhaps an older Codex's line, with no envelope (a bare
		// reasoning's summary is not a string: it fails the decode).
		r.dependsOn(line)
		rendered, _ := r.codexBare(line)
		return rendered
	}
	if len(l.Payload) > 0 && l.Payload[0] == '{' {
		return r.codex(l.Type, l.Payload)
	}
	switch l.Type {
	case "user", "assistant":
		if l.Message == nil {
			return false
		}
		if r.headers {
			// First: a long report is cut short when shown.
			subagentCost(out, l.ToolUseResult)
		}
		return r.content(l.Message.Content)
	case "summary":
		fmt.Fprintf(out, "[summary] %s", l.Summary)
	case "system":
		tag := "system"
		if l.Subtype != "" {
			tag += " " + l.Subtype
		}
		r.dependsOn(l.HookInfos, l.HookErrors, l.StopReason, l.CompactMetadata)
		detail := systemDetail(&l)
		switch s, ok := rawText(l.Content); {
		case ok:
			r.head("%s", tag)
			out.WriteString(s)
			if detail != "" {
				fmt.Fprintf(out, " (%s)", detail)
			}
		case detail != "":
			fmt.Fprintf(out, "[%s] %s", tag, detail)
		default:
			r.dependsOn(line)
			fmt.Fprintf(out, "[%s] %s", tag, firstText(line))
		}
	case "progress":
		var d struct {
			Type     string   `json:"type"`
			HookName string   `json:"hookName"`
			Command  string   `json:"command"`
			Elapsed  *float64 `json:"elapsedTimeSeconds"`
			Lines    *int64   `json:"totalLines"`
		}
		if len(l.Data) == 0 || json.Unmarshal(l.Data, &d) != nil {
			return false
		}
		r.dependsOn(l.Data)
		switch text := firstText(l.Data); {
		case d.HookName != "" || d.Command != "":
			fmt.Fprintf(out, "[progress %s] %s: %s", d.Type, d.HookName, d.Command)
		case text == "" && d.Elapsed != nil:
			// A command that has printed nothing yet: how long it ran.
			fmt.Fprintf(out, "[progress %s] running %gs", d.Type, *d.Elapsed)
			if d.Lines != nil {
				fmt.Fprintf(out, ", %d line(s) of output", *d.Lines)
			}
		default:
			fmt.Fprintf(out, "[progress %s] %s", d.Type, text)
		}
	case "file-history-snapshot":
		if l.Snapshot == nil {
			return false
		}
		fmt.Fprintf(out, "[file-history snapshot] %d file(s)", len(l.Snapshot.Tracked))
		for _, p := range slices.Sorted(maps.Keys(l.Snapshot.Tracked)) {
			fmt.Fprintf(out, "\n%s", p)
		}
	case "queue-operation":
		// A prompt typed while the agent worked, queued (enqueue) and
		// later taken or dropped (dequeue, remove: no text).
		r.dependsOn(line)
		tag := l.Type
		if op, ok := rawText(l.Operation); ok && op != "" {
			tag += " " + op
		}
		text := firstText(line)
		if s, ok := rawText(l.Content); ok {
			if sum := taskNotificationSummary(s); sum != "" {
				text = Preview([]byte(sum), PreviewRunes)
			}
		}
		fmt.Fprintf(out, "[%s] %s", tag, text)
	default:
		r.dependsOn(line)
		fmt.Fprintf(out, "[%s] %s", l.Type, firstText(line))
	}
	return true
}

// taskNotificationSummary is the summary of the notice Claude Code queues
// when a background task ends ("<task-notification>...<summary>Background
// command \"x\" completed (exit code 0)</summary>..."), whose first line
// is only its tag; "" for any other text.
func taskNotificationSummary(s string) string {
	if !strings.HasPrefix(strings.TrimSpace(s), "<task-notification>") {
		return ""
	}
	_, after, ok := strings.Cut(s, "<summary>")
	if !ok {
		return ""
	}
	sum, _, ok := strings.Cut(after, "</summary>")
	if !ok {
		return ""
	}
	return strings.TrimSpace(sum)
}

// content renders a message's content: a string, or blocks.
func (r *renderer) content(content json.RawMessage) bool {
	out := &r.out
	if s, ok := rawText(content); ok {
		out.WriteString(r.readable(s))
		return true
	}
	var blocks []contentBlock
	if len(content) == 0 || content[0] != '[' || json.Unmarshal(content, &blocks) != nil {
		return false
	}
	if len(blocks) == 0 {
		out.WriteString("(no content)")
	}
	for i, b := range blocks {
		if i > 0 {
			r.endLine()
		}
		switch b.Type {
		case "text", "input_text", "output_text":
			if b.Text == nil {
				return false
			}
			out.WriteString(r.readable(*b.Text))
		case "thinking":
			r.head("thinking")
			out.WriteString(b.Thinking)
		case "refusal":
			fmt.Fprintf(out, "[refusal] %s", b.Refusal)
		case "tool_use":
			r.head("tool_use %s", b.Name)
			r.arguments(b.Input)
		case "tool_result":
			tag := "tool_result"
			if b.IsError {
				tag += ", error"
			}
			r.head("%s", tag)
			start := out.Len()
			inner := renderer{headers: r.headers, depth: r.depth + 1, lz: r.lz}
			if len(b.Content) > 0 && b.Content[0] == '[' && inner.depth < maxRenderDepth && inner.content(b.Content) {
				out.Write(inner.out.Bytes())
			} else if s, ok := rawText(b.Content); ok {
				out.WriteString(r.notEncoded("", s))
			} else {
				out.Write(b.Content)
			}
			r.noOutput(start)
		default:
			fmt.Fprintf(out, "[%s]", b.Type)
		}
	}
	return true
}

// arguments renders a tool's arguments: an object one member a line, in
// the order written, a string value as its text (a file's content, a
// command, an edit's old and new text read as they are); anything else as
// it is written. A preview (no headers) puts the text values first: it
// shows only its first characters, and an Edit's `replace_all: false`
// says less than its file_path.
func (r *renderer) arguments(args json.RawMessage) {
	out := &r.out
	members, ok := orderedMembers(args)
	if !ok {
		out.Write(args)
		return
	}
	if !r.headers {
		isText := func(m rawMember) bool {
			return len(m.value) > 0 && (m.value[0] == '"' || m.key == "command" && commandWords(m.value) != nil)
		}
		slices.SortStableFunc(members, func(a, b rawMember) int {
			switch aText, bText := isText(a), isText(b); {
			case aText && !bText:
				return -1
			case bText && !aText:
				return 1
			}
			return 0
		})
	}
	for i, m := range members {
		if i > 0 {
			r.endLine()
		}
		s, isText := rawText(m.value)
		if !isText {
			// Laid out (writeNested, shellWords) by what its texts say.
			r.dependsOn(m.value)
		} else {
			s = r.notEncoded(m.key, s)
		}
		var words []string
		if !isText && m.key == "command" {
			words = commandWords(m.value)
		}
		switch {
		case words != nil:
			// A command as its words (Codex's shell tool): as a shell
			// would read it back.
			fmt.Fprintf(out, "%s: %s", m.key, shellWords(words))
		case !isText && r.headers && writeNested(out, m.key, m.value, ""):
		case !isText && !r.headers && firstString(m.value) != "":
			// A preview of a list (a plan's steps, a todo list): its
			// first text, not its JSON.
			fmt.Fprintf(out, "%s: %s", m.key, firstString(m.value))
		case !isText:
			fmt.Fprintf(out, "%s: %s", m.key, m.value)
		case r.headers && r.hasNewline(s):
			fmt.Fprintf(out, "%s:\n%s", m.key, s)
		case !r.headers:
			// A preview shows one line: the text's first, after its key.
			fmt.Fprintf(out, "%s: %s", m.key, strings.TrimLeft(s, " \t\r\n"))
		default:
			fmt.Fprintf(out, "%s: %s", m.key, s)
		}
	}
}

// firstString is the first string value in an array or object that is
// not blank, trimmed at the start; "" when there is none, or for any
// other value.
func firstString(v json.RawMessage) string {
	if len(v) == 0 || v[0] != '[' && v[0] != '{' {
		return ""
	}
	strs, ok := stringValues(v, len(`"x"`))
	if !ok {
		return ""
	}
	for _, s := range strs {
		if text, ok := rawText(v[s.Start:s.End]); ok && strings.TrimSpace(text) != "" {
			return strings.TrimLeft(text, " \t\r\n")
		}
	}
	return ""
}

// commandWords are the words of a command given as a JSON array of
// strings, or nil for any other value.
func commandWords(v json.RawMessage) []string {
	var words []string
	if len(v) == 0 || v[0] != '[' || json.Unmarshal(v, &words) != nil || len(words) == 0 {
		return nil
	}
	return words
}

// maxNestedDepth bounds how deep writeNested lays out an argument's
// arrays and objects; deeper ones are written as they are, on one line.
const maxNestedDepth = 4

// writeNested writes an argument that is a non-empty array or object as
// an indented list, one item a line (a plan's steps, a todo list, a
// MultiEdit's edits), instead of one line of JSON with its texts escaped:
//
//	edits:
//	  - old_string: a
//	    new_string: b
//
// A multi-line text in it is indented with its item, the one place the
// view changes a text (a top-level argument's text reads as it is). false,
// having written nothing, for any other value.
func writeNested(out *bytes.Buffer, key string, v json.RawMessage, indent string) bool {
	if len(v) < 3 || (v[0] != '[' && v[0] != '{') || len(indent) >= 2*maxNestedDepth {
		return false
	}
	var items []json.RawMessage
	var members []rawMember
	if v[0] == '[' {
		if json.Unmarshal(v, &items) != nil || len(items) == 0 {
			return false
		}
	} else if m, ok := orderedMembers(v); !ok || len(m) == 0 {
		return false
	} else {
		members = m
	}
	fmt.Fprintf(out, "%s:", key)
	inner := indent + "  "
	for _, it := range items {
		fmt.Fprintf(out, "\n%s- ", inner)
		if m, ok := orderedMembers(it); ok && len(m) > 0 && len(inner) < 2*maxNestedDepth {
			// An object in a list: its members under the dash, the
			// first on the dash's line.
			for j, mm := range m {
				if j > 0 {
					fmt.Fprintf(out, "\n%s  ", inner)
				}
				writeNestedMember(out, mm, inner+"  ")
			}
			continue
		}
		writeNestedValue(out, it, true)
	}
	for _, m := range members {
		fmt.Fprintf(out, "\n%s", inner)
		writeNestedMember(out, m, inner)
	}
	return true
}

// writeNestedMember writes "key: value" of an object inside an argument,
// at indent.
func writeNestedMember(out *bytes.Buffer, m rawMember, indent string) {
	if writeNested(out, m.key, m.value, indent) {
		return
	}
	if s, ok := rawText(m.value); ok {
		if marker, ok := encodedText(m.key, s); ok {
			fmt.Fprintf(out, "%s: %s", m.key, marker)
			return
		}
	}
	if s, ok := rawText(m.value); ok && strings.Contains(s, "\n") {
		// A text of several lines: a block of its own under its key
		// (an empty line left empty).
		fmt.Fprintf(out, "%s:", m.key)
		for _, line := range strings.Split(s, "\n") {
			out.WriteByte('\n')
			if line != "" {
				out.WriteString(indent + "  " + line)
			}
		}
		return
	}
	fmt.Fprintf(out, "%s: ", m.key)
	writeNestedValue(out, m.value, false)
}

// writeNestedValue writes a value of one line inside an argument, a list
// item or a member's: a text as its text where that cannot be mistaken
// for something else, else as it is written (quoted): an empty text, one
// with spaces around it, one that reads as JSON ("true", "[]", "42"), and
// in a list one that reads as a member or an item ("a: b", "- x") or has
// several lines.
func writeNestedValue(out *bytes.Buffer, v json.RawMessage, item bool) {
	s, ok := rawText(v)
	if marker, enc := encodedText("", s); ok && enc {
		out.WriteString(marker)
		return
	}
	if !ok || s == "" || strings.TrimSpace(s) != s || json.Valid([]byte(s)) ||
		item && (strings.Contains(s, ": ") || strings.HasPrefix(s, "- ") || strings.Contains(s, "\n")) {
		out.Write(v)
		return
	}
	out.WriteString(s)
}

type rawMember struct {
	key   string
	value json.RawMessage
}

// orderedMembers are the members of a JSON object in the order written
// (a map would lose it); ok is false for anything else.
func orderedMembers(obj json.RawMessage) ([]rawMember, bool) {
	if len(obj) == 0 || obj[0] != '{' {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	var members []rawMember
	for dec.More() {
		t, err := dec.Token()
		key, isKey := t.(string)
		if err != nil || !isKey {
			return nil, false
		}
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return nil, false
		}
		members = append(members, rawMember{key, v})
	}
	return members, true
}

// codexBare renders a line of a rollout an older Codex wrote, with no
// envelope (codexBareLine), as the mapping reads it: a bare response item
// as in a response_item envelope, the header as a session_meta, a state
// record (the lines decodeCodexEntry reads with no envelope). bare is
// false for any other line.
func (r *renderer) codexBare(line []byte) (rendered, bare bool) {
	var head struct {
		Type       json.RawMessage `json:"type"`
		RecordType json.RawMessage `json:"record_type"`
		ID         json.RawMessage `json:"id"`
	}
	if json.Unmarshal(line, &head) != nil {
		return false, false
	}
	typ := rawString([]byte(head.Type))
	switch {
	case codexItemTypes[typ]:
		return r.codex("response_item", line), true
	case typ != "":
		return false, false
	case rawString([]byte(head.RecordType)) != "":
		fmt.Fprintf(&r.out, "[record_type] %s", rawString([]byte(head.RecordType)))
		return true, true
	case rawString([]byte(head.ID)) != "":
		return r.codex("session_meta", line), true
	}
	return false, false
}

// codex renders a rollout line: its payload by the line's type.
func (r *renderer) codex(typ string, payload json.RawMessage) bool {
	out := &r.out
	var p struct {
		Type      string          `json:"type"`
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		Summary   json.RawMessage `json:"summary"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Input     json.RawMessage `json:"input"`
		Output    json.RawMessage `json:"output"`
		Message   string          `json:"message"`
		Text      string          `json:"text"`
		ID        string          `json:"id"`
		Cwd       string          `json:"cwd"`
		Model     string          `json:"model"`
		// thread_rolled_back's: how many turns the user undid.
		NumTurns int64 `json:"num_turns"`
		// thread_name_updated's: the name the user gave the thread.
		ThreadName *string `json:"thread_name"`
		// local_shell_call's command; web_search_call's action is read
		// apart (webSearched), as its members vary by Codex version.
		Action        json.RawMessage    `json:"action"`
		RevisedPrompt json.RawMessage    `json:"revised_prompt"` // image_generation_call's
		Info          *codexRenderedInfo `json:"info"`
		// An older Codex's token_count has no info: its usage is in the
		// payload itself.
		codexRenderedInfo
		// inter_agent_communication's: mail between agents.
		Author    json.RawMessage `json:"author"`
		Recipient json.RawMessage `json:"recipient"`
	}
	if json.Unmarshal(payload, &p) != nil {
		return false
	}
	switch typ {
	case "session_meta":
		fmt.Fprintf(out, "[session_meta] %s", p.ID)
		if p.Cwd != "" { // an older rollout's header has none
			fmt.Fprintf(out, " in %s", p.Cwd)
		}
	case "turn_context":
		fmt.Fprintf(out, "[turn_context] %s in %s", p.Model, p.Cwd)
	case "response_item":
		switch p.Type {
		case "message":
			if p.Role != "user" && p.Role != "assistant" {
				r.head("%s", p.Role)
			}
			return r.content(p.Content)
		case "reasoning":
			// The summary, then the reasoning's own text where the rollout
			// kept it (content); encrypted content is not text.
			var summary, content []contentBlock
			if len(p.Summary) > 0 && json.Unmarshal(p.Summary, &summary) != nil ||
				len(p.Content) > 0 && !bytes.Equal(p.Content, []byte("null")) && json.Unmarshal(p.Content, &content) != nil {
				return false
			}
			r.head("reasoning")
			for _, s := range append(summary, content...) {
				if s.Text != nil {
					r.endLine()
					out.WriteString(*s.Text)
				}
			}
		case "function_call", "custom_tool_call":
			r.head("%s %s", p.Type, p.Name)
			args := p.Arguments
			if p.Type == "custom_tool_call" {
				args = p.Input
			}
			// function_call arguments are an object written as a string.
			if s, ok := rawText(args); ok {
				r.dependsOnText(s)
			}
			if s, ok := rawText(args); ok && json.Valid([]byte(s)) {
				args = json.RawMessage(s)
			}
			if s, ok := rawText(args); ok {
				out.WriteString(s)
			} else {
				r.arguments(args)
			}
		case "local_shell_call":
			var action struct {
				Command []string `json:"command"`
			}
			if len(p.Action) == 0 || bytes.Equal(p.Action, []byte("null")) || json.Unmarshal(p.Action, &action) != nil {
				return false
			}
			r.head("local_shell_call")
			for _, w := range action.Command {
				r.dependsOnText(w)
			}
			out.WriteString(shellWords(action.Command))
		case "function_call_output", "custom_tool_call_output":
			r.head("%s", p.Type)
			s, ok := rawText(p.Output)
			if !ok {
				// An output with an image (a screenshot, view_image) is
				// written as its content items, [{"type":"input_text",
				// "text":...},{"type":"input_image",...}]: shown as a
				// message's content is, not as JSON.
				inner := renderer{headers: r.headers, depth: r.depth + 1, lz: r.lz}
				if len(p.Output) > 0 && p.Output[0] == '[' && inner.depth < maxRenderDepth && inner.content(p.Output) {
					start := out.Len()
					out.Write(inner.out.Bytes())
					r.noOutput(start)
				} else {
					out.Write(p.Output)
				}
				break
			}
			// A tool's output may be {"output": ..., "metadata": ...}
			// written as a string: its output is what was printed, and a
			// command that failed says so. An object with other members
			// (a tool that answers JSON with an "output" in it) is not
			// that wrapper, and is shown whole.
			var wrapped struct {
				Output   *string `json:"output"`
				Metadata struct {
					ExitCode *int `json:"exit_code"`
				} `json:"metadata"`
			}
			if r.startsWithBrace(s) && json.Unmarshal([]byte(s), &wrapped) == nil && wrapped.Output != nil && codexWrapperOnly(s) {
				s = *wrapped.Output
				if c := wrapped.Metadata.ExitCode; c != nil && *c != 0 {
					s = fmt.Sprintf("(exit code %d)%s%s", *c, r.afterExitCode(), s)
				}
			} else if !r.headers {
				r.dependsOnText(s)
				s = outputOfExec(s)
			}
			start := out.Len()
			out.WriteString(r.notEncoded("", s))
			r.noOutput(start)
		case "web_search_call":
			// What the agent searched for, whole: a query (and the others
			// of its queries), a page opened, a pattern looked for in one.
			searched, ok := webSearched(p.Action)
			if !ok {
				r.dependsOn(payload)
				fmt.Fprintf(out, "[%s] %s", p.Type, firstText(payload))
				break
			}
			r.dependsOnText(searched)
			fmt.Fprintf(out, "[%s] %s", p.Type, searched)
		case "image_generation_call":
			// The prompt the image was made from; the image itself
			// (result, base64) is not text, as an input_image is not.
			prompt := rawString([]byte(p.RevisedPrompt))
			if strings.TrimSpace(prompt) == "" {
				fmt.Fprintf(out, "[%s] (image)", p.Type)
				break
			}
			fmt.Fprintf(out, "[%s] %s", p.Type, r.readable(prompt))
		case "agent_message":
			// A message between agents in the model's history (Codex's
			// multi-agent items): {author, recipient, content: [{type:
			// input_text, text}]}. Its text whole, headed as mail is.
			if len(p.Content) == 0 || bytes.Equal(p.Content, []byte("null")) {
				r.dependsOn(payload)
				fmt.Fprintf(out, "[%s] %s", p.Type, firstText(payload))
				break
			}
			r.mailHead(p.Type, p.Author, p.Recipient)
			return r.content(p.Content)
		case "tool_search_call":
			// What the model looked for among the tools: its arguments,
			// whole, as a function_call's.
			if len(p.Arguments) == 0 || p.Arguments[0] != '{' {
				r.dependsOn(payload)
				fmt.Fprintf(out, "[%s] %s", p.Type, firstText(payload))
				break
			}
			r.head("%s", p.Type)
			r.arguments(p.Arguments)
		default:
			// A marker (a compaction's encrypted state, a ghost snapshot,
			// the tools made available) or an item rook does not know:
			// a glimpse, the line itself kept whole in the event.
			r.dependsOn(payload)
			fmt.Fprintf(out, "[%s] %s", p.Type, firstText(payload))
		}
	case "compacted":
		// The summary Codex wrote of the conversation so far, which the
		// model goes on from: whole, as a message's text.
		if strings.TrimSpace(p.Message) == "" {
			r.dependsOn(payload)
			fmt.Fprintf(out, "[%s] %s", typ, firstText(payload))
			break
		}
		r.head("%s", typ)
		out.WriteString(r.readable(p.Message))
	case "event_msg":
		switch {
		case p.Type == "patch_apply_end":
			r.dependsOn(payload)
			out.WriteString(patchApplied(payload))
		case p.Type == "exec_command_begin" || p.Type == "exec_command_end":
			r.dependsOn(payload)
			out.WriteString(execCommand(p.Type, payload))
		case p.Type == "thread_name_updated":
			// The name the session is titled by; none takes it away.
			if p.ThreadName == nil {
				out.WriteString("[thread_name_updated] (no name)")
			} else {
				fmt.Fprintf(out, "[thread_name_updated] %s", *p.ThreadName)
			}
		case p.Type == "thread_rolled_back":
			// The user undid the last turns: what the model is sent no
			// longer holds them (session context leaves them out).
			fmt.Fprintf(out, "[thread_rolled_back] the last %d turn(s) undone: the model no longer sees them", p.NumTurns)
		case p.Type == "token_count":
			if p.Info == nil && (p.Last != nil || p.Total != nil) {
				p.Info = &p.codexRenderedInfo
			}
			switch {
			case p.Info == nil:
				out.WriteString("[token_count] no usage yet")
			case p.Info.Last == nil && p.Info.Total != nil:
				// Only the session's total (what the import counts is the
				// turn's: none here).
				fmt.Fprintf(out, "[token_count] session total %d in, %d out", p.Info.Total.Input, p.Info.Total.Output)
			case p.Info.Last == nil:
				out.WriteString("[token_count] 0 in, 0 out")
			case r.uncounted && (p.Info.Last.Input > 0 || p.Info.Last.Output > 0):
				// Codex wrote it again with the same total (when only the
				// rate limits moved): the token_count before counted it,
				// and the event counts 0, as its --json says.
				fmt.Fprintf(out, "[token_count] repeat, not counted: %d in, %d out", p.Info.Last.Input, p.Info.Last.Output)
			default:
				fmt.Fprintf(out, "[token_count] %d in, %d out", p.Info.Last.Input, p.Info.Last.Output)
			}
		case p.Message != "":
			r.head("%s", p.Type)
			out.WriteString(r.readable(p.Message))
		case p.Text != "":
			r.head("%s", p.Type)
			out.WriteString(r.readable(p.Text))
		default:
			r.dependsOn(payload)
			fmt.Fprintf(out, "[%s] %s", p.Type, firstText(payload))
		}
	case "inter_agent_communication":
		// Mail between agents: "Message Type: T\nTask name: ...\nSender:
		// ...\nPayload:\n<text>" as Codex renders it, or the text alone.
		content := rawString([]byte(p.Content))
		if content == "" {
			r.dependsOn(payload)
			fmt.Fprintf(out, "[%s] %s", typ, firstText(payload))
			break
		}
		kind := typ
		if t, text, _, ok := codexMail(content); ok {
			kind, content = t, text
		}
		r.mailHead(kind, p.Author, p.Recipient)
		out.WriteString(r.readable(content))
	default:
		r.dependsOn(payload)
		fmt.Fprintf(out, "[%s] %s", typ, firstText(payload))
	}
	return true
}

// mailHead heads a message between agents by its kind and, of its author
// and recipient (JSON strings), those it names: "[T a → b]", "[T from a]",
// "[T to b]", or "[T]".
func (r *renderer) mailHead(kind string, author, recipient json.RawMessage) {
	from, to := rawString([]byte(author)), rawString([]byte(recipient))
	switch {
	case from != "" && to != "":
		r.head("%s %s → %s", kind, from, to)
	case from != "":
		r.head("%s from %s", kind, from)
	case to != "":
		r.head("%s to %s", kind, to)
	default:
		r.head("%s", kind)
	}
}

// codexWrapperOnly says whether a tool's output, a JSON object, is
// Codex's own wrapper of what a command printed: its members are output
// and metadata, nothing else.
func codexWrapperOnly(s string) bool {
	var members map[string]json.RawMessage
	if json.Unmarshal([]byte(s), &members) != nil {
		return false
	}
	for k := range members {
		if k != "output" && k != "metadata" {
			return false
		}
	}
	return true
}

// webSearched is what a web_search_call's action looked for, whole: a
// search's query and the other queries it ran (action.queries), the page
// it opened, or the pattern it looked for in a page and where. Not ok
// when the action says none of these.
func webSearched(action json.RawMessage) (string, bool) {
	var a struct {
		Type    json.RawMessage   `json:"type"`
		Query   json.RawMessage   `json:"query"`
		Queries []json.RawMessage `json:"queries"`
		URL     json.RawMessage   `json:"url"`
		Pattern json.RawMessage   `json:"pattern"`
	}
	if len(action) == 0 || action[0] != '{' || json.Unmarshal(action, &a) != nil {
		return "", false
	}
	var queries []string
	for _, q := range append([]json.RawMessage{a.Query}, a.Queries...) {
		if s := rawString([]byte(q)); strings.TrimSpace(s) != "" && !slices.Contains(queries, s) {
			queries = append(queries, s)
		}
	}
	url, pattern := rawString([]byte(a.URL)), rawString([]byte(a.Pattern))
	var parts []string
	parts = append(parts, queries...)
	switch {
	case pattern != "" && url != "":
		parts = append(parts, fmt.Sprintf("find %q in %s", pattern, url))
	case pattern != "":
		parts = append(parts, fmt.Sprintf("find %q", pattern))
	case url != "":
		parts = append(parts, url)
	}
	if len(parts) == 0 {
		return "", false
	}
	return strings.Join(parts, "\n"), true
}

// codexRenderedInfo is a token_count's info, and codexRenderedUsage one of
// its usages, as the view shows them.
type codexRenderedInfo struct {
	Last  *codexRenderedUsage `json:"last_token_usage"`
	Total *codexRenderedUsage `json:"total_token_usage"`
}

type codexRenderedUsage struct {
	Input  uint64 `json:"input_tokens"`
	Output uint64 `json:"output_tokens"`
}

// patchApplied is a Codex patch_apply_end as one line: the patch tool's
// report with its lines joined, so that the files it names show, not only
// its first line ("Success. Updated the following files:"); a patch that
// failed says so, with what the tool wrote to stderr.
func patchApplied(payload json.RawMessage) string {
	var p struct {
		Stdout  string `json:"stdout"`
		Stderr  string `json:"stderr"`
		Success *bool  `json:"success"`
	}
	if json.Unmarshal(payload, &p) != nil {
		return "[patch_apply_end] " + firstText(payload)
	}
	tag, text := "patch_apply_end", p.Stdout
	if p.Success != nil && !*p.Success {
		tag += ", failed"
		text = p.Stderr + "\n" + p.Stdout
	}
	return fmt.Sprintf("[%s] %s", tag, Preview([]byte(strings.Join(strings.Fields(text), " ")), PreviewRunes))
}

// execCommand is a Codex exec_command_begin or exec_command_end (the
// events of a command Codex ran, which its Extended persistence keeps):
// the command, and of its end how it ended (its exit code when not 0, or
// the status of one that did not run) and the first line of what it
// printed, its aggregated output or else its stdout and stderr; "(no
// output)" when it printed nothing. The whole output is the paired
// function_call_output's. A payload that does not read so is shown as
// other events are.
func execCommand(typ string, payload json.RawMessage) string {
	var p struct {
		Command    []string `json:"command"`
		ExitCode   *int64   `json:"exit_code"`
		Status     string   `json:"status"`
		Aggregated string   `json:"aggregated_output"`
		Stdout     string   `json:"stdout"`
		Stderr     string   `json:"stderr"`
	}
	if json.Unmarshal(payload, &p) != nil {
		return fmt.Sprintf("[%s] %s", typ, firstText(payload))
	}
	tag := typ
	switch {
	case p.Status == "declined":
		tag += ", declined"
	case p.ExitCode != nil && *p.ExitCode != 0:
		tag += fmt.Sprintf(", exit code %d", *p.ExitCode)
	}
	head := strings.TrimRight(fmt.Sprintf("[%s] %s", tag, Preview([]byte(shellWords(p.Command)), PreviewRunes)), " ")
	if typ == "exec_command_begin" {
		return head
	}
	printed := p.Aggregated
	if strings.TrimSpace(printed) == "" {
		printed = p.Stdout + "\n" + p.Stderr
	}
	if strings.TrimSpace(printed) == "" {
		return head + "\n(no output)"
	}
	return head + "\n" + Preview([]byte(printed), PreviewRunes)
}

// rawText is the text of a JSON string; ok is false for any other value.
func rawText(v json.RawMessage) (string, bool) {
	var s string
	if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

// firstText is a one-line glimpse of a JSON value: the first line of its
// first string that carries text (importedText), else nothing.
func firstText(v []byte) string {
	t := importedText(v)
	if bytes.Equal(t, v) {
		return ""
	}
	return Preview(t, PreviewRunes)
}

// notEncoded is s, a tool's output or an argument's text (under key: ""
// for none) written as it is, or its marker ("[image 3.9 KiB]",
// encodedMarker) when it is encoded state (encodedText): a base64 data
// URL (an MCP tool's screenshot, as Claude Code keeps its output), base64
// under "data" (a Codex tool's argument). find and search do not read
// such a value, and the view shows one under a key of JSON so
// (maskNestedEncoded). A placeholder (a string of a large line,
// renderedStream) that may be one renders the line whole.
func (r *renderer) notEncoded(key, s string) string {
	if r.lz != nil && hasMarkString(s) {
		if k, ok := r.lz.whole(s); !ok || encodedKeys[key] || r.lz.dataURL(k) {
			r.lz.bad = true
		}
		return s
	}
	if m, ok := encodedText(key, s); ok {
		return m
	}
	return s
}

// encodedText is the marker of s, a decoded string value under key, when
// it is encoded state as find reads a value (encodedValue): base64 of
// minEncoded bytes or more under one of encodedKeys, or a base64 data
// URL under any key.
func encodedText(key, s string) (string, bool) {
	b := []byte(s)
	if encodedKeys[key] && len(b) >= minEncoded && isBase64(b) || isDataURL(b) {
		return encodedMarker(key, b), true
	}
	return "", false
}

// readable is a message's text as shown: without the blank lines it may
// start with, and saying so when it is blank (a reply of "\n\n").
func readable(s string) string {
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 || strings.TrimSpace(s[:i]) != "" {
			break
		}
		s = s[i+1:]
	}
	if strings.TrimSpace(s) == "" {
		return "(empty text)"
	}
	return s
}

// noOutput says "(no output)" where a tool's output, written from start,
// is blank (a command that printed nothing), so the view and a preview
// show that instead of nothing, or of the block's bare name.
func noOutput(out *bytes.Buffer, start int) {
	if len(bytes.TrimSpace(out.Bytes()[start:])) == 0 {
		out.Truncate(start)
		out.WriteString("(no output)")
	}
}

// endLine ends the text so far with a newline, if it does not already.
func endLine(out *bytes.Buffer) {
	if b := out.Bytes(); len(b) > 0 && b[len(b)-1] != '\n' {
		out.WriteByte('\n')
	}
}

// afterExitCode is what separates a failed command's exit code from its
// output: a line of its own in the view, a space in a preview, which
// shows one line.
func (r *renderer) afterExitCode() string {
	if r.headers {
		return "\n"
	}
	return " "
}

// outputOfExec is a Codex command's output without the lines its tool
// puts before it ("Exit code: 0", "Wall time: 0.5 seconds", "Output:"),
// for a preview, where the first line is all that shows: what the command
// printed, after its exit code on the same line when it failed. Text in
// any other shape is returned as it is.
func outputOfExec(s string) string {
	code, rest := "", s
	for {
		line, after, ok := strings.Cut(rest, "\n")
		switch {
		case !ok:
			return s
		case line == "Output:":
			if code != "" && code != "0" {
				return "(exit code " + code + ") " + after
			}
			return after
		case strings.HasPrefix(line, "Exit code: "):
			code = strings.TrimPrefix(line, "Exit code: ")
		case strings.HasPrefix(line, "Wall time: "), strings.HasPrefix(line, "Total output lines: "), strings.HasPrefix(line, "Chunk ID: "):
		default:
			return s
		}
		rest = after
	}
}

// previewOfImported is the text a history line previews of an imported
// event: its reading view without the lines that only name a block
// ("[tool_use Bash]" repeats the event's kind and label), so a call
// previews as its arguments and a result as its output. The notice Claude
// Code writes in the user's place when a background task ends, whose
// first line is only its tag, previews as its summary, as the queued copy
// of it does ("[task-notification] Background command \"x\" completed");
// a slash command as typed ("/review src"), not its first tag.
func previewOfImported(ev eventlog.Event, body []byte) []byte {
	if view := renderBody(body, false, uncounted(ev)); len(bytes.TrimSpace(view)) > 0 {
		lead := bytes.TrimLeft(view, " \t\r\n")
		switch {
		case bytes.HasPrefix(lead, []byte("<task-notification>")):
			if sum := taskNotificationSummary(string(view)); sum != "" {
				return []byte("[task-notification] " + sum)
			}
		case bytes.HasPrefix(lead, []byte("<command-message>")), bytes.HasPrefix(lead, []byte("<command-name>")):
			// A slash command, as the user typed it (as it titles a
			// session), not the tags Claude Code wraps it in. Its head
			// says it: a preview is one line.
			head := string(lead[:min(len(lead), 64<<10)])
			if name, ok := tagText(head, "command-name"); ok && name != "" {
				if args, _ := tagText(head, "command-args"); args != "" {
					name += " " + args
				}
				return []byte(name)
			}
		}
		return view
	}
	return renderEvent(ev, body)
}

// shellWords is a command's words as a shell would read them back: a word
// with anything but letters, digits and -_./=:,+@% quoted.
func shellWords(words []string) string {
	quoted := make([]string, len(words))
	for i, w := range words {
		plain := w != ""
		for _, c := range w {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_./=:,+@%", c)) {
				plain = false
				break
			}
		}
		if plain {
			quoted[i] = w
		} else {
			quoted[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
	}
	return strings.Join(quoted, " ")
}
