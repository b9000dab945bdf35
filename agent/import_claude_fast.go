package agent

import (
	"bytes"

	json "github.com/go-json-experiment/json/v1"
)

// The fast path of the Claude Code mapping (its reader: import_fast.go).
// Decoding a line's view with encoding/json's rules took a sixth of an
// import's CPU: most of a line is members the mapping skips (a progress
// entry's data, a message's long content), which the decoder walks and
// copies all the same. The fast path reads the few values the mapping
// needs straight off the line, which scanJSON has already checked is valid
// JSON, and jumps over the rest: the long strings scanJSON listed, with
// their ends known.
//
// It gives exactly what decodeClaudeEntry gives on the line's view, or
// declines: on anything where encoding/json's rules go beyond the plain
// case (a key that differs from a field's name only by case or is not
// ASCII, a key twice, null or a value of another type where a field is,
// a number that is not a plain unsigned integer...). A declined line goes
// through the view and encoding/json as before. FuzzClaudeFastPath holds
// the two to the same answers, and TestClaudeFastPathOnCorpus to taking
// nearly every real line.

// claudeKeys are the top-level members the fast path reads, in the order
// of the bits that say which it has seen.
var claudeKeys = [...]string{"type", "subtype", "timestamp", "sessionId", "cwd", "isMeta", "summary", "message", "data", "snapshot", "isCompactSummary", "isApiErrorMessage", "customTitle", "aiTitle", "forkedFrom", "continuedInSessionId", "trackingPath", "backup"}

// scanClaudeEntry reads a line's entry. strs and members are scanJSON's
// for it; minLen is the view's (mapView): the texts the view would
// shorten, the entry holds shortened the same way.
func scanClaudeEntry(line []byte, strs []jsonString, members []jsonMember, minLen int) (claudeEntry, bool) {
	var e claudeEntry
	if len(members) == 0 {
		return e, false
	}
	r := fastReader{b: line, strs: strs, minLen: minLen, shortens: claudeShortens}
	// The string members, by their place in claudeKeys.
	strField := [...]*string{&e.Type, &e.Subtype, &e.Timestamp, &e.SessionID, &e.Cwd, nil, &e.Summary}
	ok := r.topMembers(members, claudeKeys[:], func(k, v, end int) (ok bool) {
		switch claudeKeys[k] {
		case "type", "subtype", "timestamp", "sessionId", "cwd", "summary":
			*strField[k], ok = r.str(v, end, claudeKeys[k])
		case "customTitle":
			e.CustomTitle, ok = r.str(v, end, "customTitle")
		case "aiTitle":
			e.AITitle, ok = r.str(v, end, "aiTitle")
		case "continuedInSessionId":
			e.ContinuedIn, ok = r.str(v, end, "continuedInSessionId")
		case "isMeta", "isCompactSummary", "isApiErrorMessage":
			var bEnd int
			b := &e.IsMeta
			switch claudeKeys[k] {
			case "isCompactSummary":
				b = &e.IsCompactSummary
			case "isApiErrorMessage":
				b = &e.IsAPIError
			}
			*b, bEnd, ok = r.boolean(v)
			ok = ok && bEnd == end
		case "data":
			e.DataType, ok = r.dataType(v)
		case "snapshot":
			// Rare (file-history snapshots) and small: decoded whole, from
			// the line rather than the view, which is the same as long as
			// the view shortens nothing a claudeSnapshot reads (no key of
			// it is one claudeShortens takes).
			var s claudeSnapshot
			ok = line[v] == '{' && json.Unmarshal(line[v:end], &s) == nil
			e.Tracked = s.Tracked
		case "trackingPath":
			// (Not a string: left to encoding/json, which reads none.)
			e.TrackingPath, ok = r.str(v, end, "trackingPath")
		case "backup":
			// A file-history-delta's: rare and small, decoded whole from
			// the line, as a snapshot is; not an object, left to
			// encoding/json (which reads none from it).
			var b claudeBackup
			ok = line[v] == '{' && json.Unmarshal(line[v:end], &b) == nil
			e.Delta = &b
		case "message":
			ok = r.message(v, &e)
		case "forkedFrom":
			e.ForkedFrom, ok = r.forkedFrom(v)
		}
		return ok
	})
	return e, ok
}

var (
	dataFields    = []string{"type"}
	forkFields    = []string{"sessionId"}
	messageFields = []string{"id", "role", "model", "content", "usage"}
	usageFields   = []string{"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens"}
	blockFields   = []string{"type", "text", "id", "name", "tool_use_id", "is_error"}
)

// dataType is data.type of a progress entry (the rest of data, often most
// of the line, is skipped).
func (r *fastReader) dataType(v int) (string, bool) { return r.onlyString(v, dataFields) }

// onlyString reads the one member of the object at v the mapping needs, a
// string (fields names it), skipping the others.
func (r *fastReader) onlyString(v int, fields []string) (string, bool) {
	var s string
	_, ok := r.fields(v, fields, func(_, v int) (int, bool) {
		var end int
		var ok bool
		s, end, ok = r.stringValue(v, fields[0])
		return end, ok
	})
	return s, ok
}

// forkedFrom is forkedFrom.sessionId, of an object; a value of another
// shape is left to encoding/json (which reads none from it).
func (r *fastReader) forkedFrom(v int) (string, bool) {
	if r.b[v] != '{' {
		return "", false
	}
	return r.onlyString(v, forkFields)
}

// message reads a message: its id, model, usage and content, checking the
// types of the members a claudeMessage has as encoding/json would.
func (r *fastReader) message(v int, e *claudeEntry) bool {
	_, ok := r.fields(v, messageFields, func(k, v int) (end int, ok bool) {
		switch k {
		case 0:
			e.MsgID, end, ok = r.stringValue(v, "id")
		case 1:
			_, end, ok = r.stringValue(v, "role")
		case 2:
			e.Model, end, ok = r.stringValue(v, "model")
		case 3:
			end, ok = r.content(v, e)
		case 4:
			e.Usage = new(claudeUsage)
			end, ok = r.usage(v, e.Usage)
		}
		return end, ok
	})
	e.MsgOK = ok
	return ok
}

// content reads a message's content: a string, or blocks.
func (r *fastReader) content(v int, e *claudeEntry) (int, bool) {
	switch r.b[v] {
	case '"':
		var end int
		var ok bool
		e.Text, end, ok = r.stringValue(v, "content")
		e.IsText = ok
		return end, ok
	case '[':
		e.BlocksOK = true
		return r.array(v, func(v int) (int, bool) {
			// The mapping reads the first block, and the text of the first
			// text block that may title the session: the others are only
			// checked.
			var b *claudeBlock
			var later claudeBlock
			if e.Blocks == 0 {
				b = &e.First
			} else if e.Prompt == "" {
				b = &later
			}
			e.Blocks++
			end, ok := r.block(v, b)
			if ok && b != nil && e.Prompt == "" && b.Type == "text" && claudeTitles(b.Text) {
				e.Prompt = b.Text
			}
			return end, ok
		})
	}
	// null, a number, an object...: encoding/json takes them into the
	// message's raw content and then decodes neither a string nor blocks
	// (null as both); rare enough to leave to it.
	return 0, false
}

// usage reads a message's token counts.
func (r *fastReader) usage(v int, u *claudeUsage) (int, bool) {
	return r.fields(v, usageFields, func(k, v int) (int, bool) {
		n, end, ok := r.uint(v)
		*[...]*uint64{&u.Input, &u.CacheCreation, &u.CacheRead, &u.Output}[k] = n
		return end, ok
	})
}

// block reads a content block into b, checking every member a
// claudeBlock has; with b nil, it only checks them.
func (r *fastReader) block(v int, b *claudeBlock) (int, bool) {
	return r.fields(v, blockFields, func(k, v int) (int, bool) {
		if k == 5 {
			isErr, end, ok := r.boolean(v)
			if b != nil {
				b.IsError = isErr
			}
			return end, ok
		}
		if b == nil {
			return r.stringEnd(v) // any string decodes, without error
		}
		s, end, ok := r.stringValue(v, blockFields[k])
		*[...]*string{&b.Type, &b.Text, &b.ID, &b.Name, &b.ToolUseID}[k] = s
		return end, ok
	})
}

// claudeCopiedUUIDs are the uuids that say which line a Claude Code line
// copies: a fork's copied line's forkedFrom.messageUuid
// (claudeMapper.forkedFrom), and its own uuid (a continuation's copy
// keeps its lines' uuids, and so does /branch; the Agent SDK's
// forkSession is said to give new ones). Each is "" when the line has
// none of the shape claudeUUID reads.
func claudeCopiedUUIDs(line []byte) (from, own string) {
	r := fastReader{b: line}
	var ownB, fromB []byte
	str := func(v int) ([]byte, int, bool) {
		end, ok := r.stringEnd(v)
		if !ok {
			return nil, 0, false
		}
		return line[v+1 : end-1], end, true
	}
	r.object(r.skipSpace(0), func(key []byte, v int) (int, bool) {
		switch string(key) {
		case "uuid":
			if s, end, ok := str(v); ok {
				ownB = s
				return end, true
			}
		case "forkedFrom":
			if v < len(line) && line[v] == '{' {
				return r.object(v, func(key []byte, v int) (int, bool) {
					if string(key) == "messageUuid" {
						if s, end, ok := str(v); ok {
							fromB = s
							return end, true
						}
					}
					return r.valueEnd(v)
				})
			}
		}
		return r.valueEnd(v)
	})
	plain := func(id []byte) string {
		if bytes.IndexByte(id, '\\') >= 0 {
			return ""
		}
		return string(id)
	}
	return plain(fromB), plain(ownB)
}

// claudeCopies says whether a Claude Code line copies one of the lines
// whose uuids are keys: by either of its uuids (claudeCopiedUUIDs). Uuids
// are unique, so either that names such a line is enough: a messageUuid
// that names no line of the parent (damaged, or written otherwise by
// another version) leaves the line's own uuid, which /branch keeps, to
// say it.
func claudeCopies(keys map[string]bool, line []byte) bool {
	from, own := claudeCopiedUUIDs(line)
	return from != "" && keys[from] || own != "" && keys[own]
}

// claudeUUID is a Claude Code line's uuid (its top-level "uuid" member),
// read straight off the line, whose other members are only skipped; ok is
// false when it has none, or one of another shape (Claude Code writes a
// uuid as a plain string, without escapes). Only lines that may have been
// copied into a continuation are read so (fileImport.copiedLine).
func claudeUUID(line []byte) (string, bool) {
	r := fastReader{b: line}
	var id []byte
	r.object(r.skipSpace(0), func(key []byte, v int) (int, bool) {
		if string(key) != "uuid" {
			return r.valueEnd(v)
		}
		if end, ok := r.stringEnd(v); ok {
			id = line[v+1 : end-1]
		}
		return 0, false // found: the rest is not read
	})
	if len(id) == 0 || bytes.IndexByte(id, '\\') >= 0 {
		return "", false
	}
	return string(id), true
}
