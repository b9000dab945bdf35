package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"sort"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/rookhq/rook/agent/inbox"
)

// The tool's limits, in characters (runes), as the seeds give them.
const (
	MaxContentChars = 100_000
	MaxTitleChars   = 200
	// RateLimit saves per RateWindow per server process: the seeds' "100
	// saves per minute per session".
	RateLimit  = 100
	RateWindow = 60 * time.Second
)

const toolName = "append_to_inbox"

// Activity statuses (inbox.Activity.Status).
const (
	statusSaved            = "saved"
	statusRateLimited      = "rate_limited"
	statusPaused           = "paused"
	statusInputInvalid     = "input_invalid"
	statusInboxUnavailable = "inbox_unavailable"
	statusStoreWriteFailed = "store_write_failed"
)

// tool is a tools/list entry.
type tool struct {
	Name        string         `json:"name"`
	Title       string         `json:"title"`
	Description string         `json:"description"`
	InputSchema map[string]any `json:"inputSchema"`
	Annotations map[string]any `json:"annotations"`
}

var appendToInboxTool = tool{
	Name:  toolName,
	Title: "Save to Rook inbox",
	Description: "Save text to the user's Rook inbox. Call this when the user asks to save, collect, remember, " +
		"note, record, add or stash something in Rook: a code snippet, a debugging summary, action items, " +
		"the prompt for the next session. Each call adds one note (with an optional title as its heading) " +
		"to this client's inbox for today. It can only add notes: it cannot read, list, change or remove them. " +
		`Returns a confirmation such as: Saved to Rook inbox 2026-05-12 under "my title".`,
	InputSchema: map[string]any{
		"type": "object",
		"properties": map[string]any{
			"content": map[string]any{
				"type":        "string",
				"description": "The text to save, exactly as it should appear. Up to 100,000 characters.",
				"maxLength":   MaxContentChars,
			},
			"title": map[string]any{
				"type":        "string",
				"description": "A short heading shown above the content. Up to 200 characters, one line.",
				"maxLength":   MaxTitleChars,
			},
		},
		"required":             []string{"content"},
		"additionalProperties": false,
	},
	// An append is a write (not read-only), loses nothing (not destructive),
	// adds again when repeated (not idempotent), and stays on this machine
	// (closed world).
	Annotations: map[string]any{
		"title":           "Save to Rook inbox",
		"readOnlyHint":    false,
		"destructiveHint": false,
		"idempotentHint":  false,
		"openWorldHint":   false,
	},
}

// callTool answers tools/call. A malformed call (params not an object, no
// tool name) and an unknown tool are protocol errors (-32602); everything
// about the arguments is the tool's own input_invalid (-32004).
func (s *server) callTool(req *request) *response {
	params, ok := paramsObject(req.params)
	if !ok {
		return errorReply(req.id, newError(CodeInvalidParams, "invalid params: tools/call takes an object", nil))
	}
	var name string
	if !isJSONString(params["name"]) || json.Unmarshal(params["name"], &name) != nil {
		return errorReply(req.id, newError(CodeInvalidParams, `invalid params: tools/call needs a tool "name"`, nil))
	}
	if name != toolName {
		return errorReply(req.id, newError(CodeInvalidParams, fmt.Sprintf("unknown tool: %q", name),
			map[string]any{"tools": []string{toolName}}))
	}
	result, err := s.appendToInbox(params["arguments"])
	if err != nil {
		return errorReply(req.id, err)
	}
	return resultReply(req.id, result)
}

// appendToInbox runs one save attempt and records it in the activity log,
// whatever its outcome.
func (s *server) appendToInbox(rawArgs json.RawMessage) (any, *rpcError) {
	now := s.clock.Now()
	args, inputErr := parseArgs(rawArgs)
	act := inbox.Activity{Time: now, Client: s.client, ClientName: s.clientName, Chars: args.chars}

	save := inbox.Save{Time: now, Client: s.client, ClientName: s.clientName, Title: args.title, Content: args.content}
	status, rerr := s.trySave(now, inputErr, &save)
	act.Status = status
	if rerr != nil {
		act.Detail = rerr.Message
	} else {
		act.ID = save.ID
	}
	s.logActivity(act)
	if rerr != nil {
		return nil, rerr
	}
	return textResult(confirmation(now, args.title)), nil
}

// logActivity records a save attempt in the activity log.
func (s *server) logActivity(act inbox.Activity) {
	// Without a store there is no log either; the reply and the startup
	// diagnostic already say so.
	if err := s.writer.Log(act); err != nil && !errors.Is(err, inbox.ErrNoStore) {
		// The log is a record for the user, not the save: a failure to
		// write it changes nothing for the client.
		s.logf("activity log: %v", err)
	}
}

// trySave checks a save in the order that tells the client the most useful
// thing first: paused (nothing else matters until the user resumes), the
// rate limit (likewise, until the window moves), the input (the model can
// fix it), the store (the user must act), then the durable write.
func (s *server) trySave(now time.Time, inputErr *rpcError, save *inbox.Save) (string, *rpcError) {
	if inbox.Paused(s.fs, s.home) {
		return statusPaused, newError(CodePaused,
			"paused: saves to the Rook inbox are paused; run `rook inbox resume` to resume them",
			map[string]any{"status": statusPaused})
	}
	if wait, ok := s.limit.allow(now); !ok {
		secs := int(math.Ceil(wait.Seconds()))
		return statusRateLimited, newError(CodeRateLimited,
			fmt.Sprintf("rate_limited: more than %d saves in %d seconds; retry in %d s", RateLimit, int(RateWindow.Seconds()), secs),
			map[string]any{"status": statusRateLimited, "retryAfterSeconds": secs})
	}
	if inputErr != nil {
		return statusInputInvalid, inputErr
	}
	if err := inbox.CheckStore(s.fs, s.home); err != nil {
		return statusInboxUnavailable, s.unavailable(err)
	}
	save.ID = s.writer.NextID(now)
	if err := s.writer.Save(*save); err != nil {
		s.logf("save %s: %v", save.ID, err)
		if unreachable(err) {
			return statusInboxUnavailable, s.unavailable(err)
		}
		return statusStoreWriteFailed, newError(CodeStoreWriteFailed,
			"store_write_failed: the note could not be written durably to the Rook inbox; retry later",
			map[string]any{"status": statusStoreWriteFailed, "error": err.Error(), "path": inbox.Dir(s.home)})
	}
	s.limit.record(now)
	return statusSaved, nil
}

// unreachable: errors that mean the store home is not there or not ours to
// write, which the user fixes (`rook init`, permissions), as opposed to a
// write that failed on the way.
func unreachable(err error) bool {
	return errors.Is(err, inbox.ErrNoStore) || errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)
}

func (s *server) unavailable(err error) *rpcError {
	msg := fmt.Sprintf("inbox_unavailable: no rook store at %s; run `rook init` to create it", s.home)
	if !errors.Is(err, inbox.ErrNoStore) {
		msg = fmt.Sprintf("inbox_unavailable: the rook store at %s is not writable; fix its permissions (or run `rook init`)", s.home)
	}
	return newError(CodeInboxUnavailable, msg,
		map[string]any{"status": statusInboxUnavailable, "path": s.home, "error": err.Error()})
}

// confirmation is the result text the seeds fix, with the local date. The
// title goes in as sanitized, unescaped: the seeds' format is literal.
func confirmation(now time.Time, title string) string {
	msg := "Saved to Rook inbox " + now.Local().Format("2006-01-02")
	if title != "" {
		msg += ` under "` + title + `"`
	}
	return msg
}

func textResult(text string) map[string]any {
	return map[string]any{"content": []map[string]any{{"type": "text", "text": text}}}
}

// args are append_to_inbox's arguments once checked.
type args struct {
	content string
	title   string // sanitized; "" when not given
	chars   int    // content's characters, when it was a string (for the activity log)
}

// parseArgs checks the arguments. It returns what it could read even when
// they are refused, so the activity log has the content's size.
func parseArgs(raw json.RawMessage) (args, *rpcError) {
	var a args
	fields, ok := paramsObject(raw)
	if !ok {
		return a, invalid("arguments must be an object with \"content\" (and optional \"title\")", "arguments")
	}
	var unknown []string
	for k := range fields {
		if k != "content" && k != "title" {
			unknown = append(unknown, k)
		}
	}
	rawContent, hasContent := fields["content"]
	contentOK := hasContent && isJSONString(rawContent) && json.Unmarshal(rawContent, &a.content) == nil
	if contentOK {
		a.chars = utf8.RuneCountInString(a.content)
	}
	switch {
	case len(unknown) > 0:
		sort.Strings(unknown)
		return a, invalid(fmt.Sprintf("unknown argument %q: only \"content\" and \"title\" are accepted", unknown[0]), unknown[0])
	case !hasContent:
		return a, invalid(`"content" is required: the text to save`, "content")
	case !contentOK:
		return a, invalid(`"content" must be a string`, "content")
	case !unicodeText(rawContent):
		return a, invalid(notUnicode("content"), "content")
	case strings.TrimSpace(a.content) == "":
		return a, invalid(`"content" is empty: give the text to save`, "content")
	case a.chars > MaxContentChars:
		return a, invalid(fmt.Sprintf(`"content" has %d characters, over the limit of %d: split it into several saves`, a.chars, MaxContentChars), "content")
	}
	title, err := parseTitle(fields["title"])
	if err != nil {
		return a, err
	}
	a.title = title
	return a, nil
}

// parseTitle checks and sanitizes the optional title. null counts as not
// given: models often send null for an optional argument.
func parseTitle(raw json.RawMessage) (string, *rpcError) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var title string
	if !isJSONString(raw) || json.Unmarshal(raw, &title) != nil {
		return "", invalid(`"title" must be a string`, "title")
	}
	if !unicodeText(raw) {
		return "", invalid(notUnicode("title"), "title")
	}
	// The limit applies to the title as sent, as the input schema's
	// maxLength does for clients that validate before calling.
	if n := utf8.RuneCountInString(title); n > MaxTitleChars {
		return "", invalid(fmt.Sprintf(`"title" has %d characters, over the limit of %d`, n, MaxTitleChars), "title")
	}
	title = SanitizeTitle(title)
	// The seeds refuse a title empty after sanitization. A title of only
	// characters nobody sees (zero-width spaces, word joiners, U+FEFF,
	// Hangul fillers, the grapheme joiner: inbox.NothingToSee, the rule
	// session tags follow) is as empty: its heading would look blank.
	// Such characters stay in a title that has something to see, where
	// they may mean something: a zero-width joiner makes one emoji of
	// several, a non-joiner spells Persian.
	if inbox.NothingToSee(title) {
		return "", invalid(`"title" is empty once control characters, invisible characters (zero-width spaces, joiners, byte order marks, ...) and surrounding spaces are removed: omit it or give a heading`, "title")
	}
	return title, nil
}

// SanitizeTitle makes a title one clean line: control characters (Unicode
// Cc: newlines, tabs, escapes, NUL, ...) and the Unicode line and paragraph
// separators are removed, and surrounding whitespace is trimmed. A title is
// a heading: a line break or a terminal escape in it would break the note's
// layout, or what `rook inbox show` prints.
func SanitizeTitle(title string) string {
	return strings.TrimSpace(strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Cc, r) || r == '\u2028' || r == '\u2029' {
			return -1
		}
		return r
	}, title))
}

// unicodeText says whether a JSON string, as sent, is Unicode text:
// encoding/json decodes bytes that are not UTF-8, and \uD800-style escapes
// of unpaired surrogates, as U+FFFD, and the note saved would not be the
// text sent, without a word. The strict decoder refuses both.
func unicodeText(raw json.RawMessage) bool {
	var s string
	return jsonv2.Unmarshal(raw, &s) == nil
}

func notUnicode(field string) string {
	return fmt.Sprintf(`%q is not Unicode text (bytes that are not UTF-8, or an unpaired surrogate escape such as \ud800): it could not be saved as sent; send it as UTF-8`, field)
}

func invalid(msg, field string) *rpcError {
	return newError(CodeInputInvalid, "input_invalid: "+msg,
		map[string]any{"status": statusInputInvalid, "field": field})
}

// rateLimiter remembers the times of the last RateLimit accepted saves: a
// save is allowed unless the oldest of them is still inside the window,
// which is a sliding window of RateWindow over accepted saves. Refused
// attempts do not count, so a client that keeps retrying is not locked out
// for longer than the window.
type rateLimiter struct {
	times [RateLimit]time.Time
	next  int // index of the oldest entry once full
	n     int
}

// allow says whether a save may go ahead at now, and if not, how long
// until it may.
func (l *rateLimiter) allow(now time.Time) (time.Duration, bool) {
	if l.n < RateLimit {
		return 0, true
	}
	// Sub uses the monotonic clock when both times carry it (the system
	// clock), so a wall-clock jump neither opens nor shuts the window.
	age := now.Sub(l.times[l.next])
	if age >= RateWindow {
		return 0, true
	}
	return RateWindow - age, false
}

// record counts an accepted save.
func (l *rateLimiter) record(now time.Time) {
	l.times[l.next] = now
	l.next = (l.next + 1) % RateLimit
	if l.n < RateLimit {
		l.n++
	}
}
