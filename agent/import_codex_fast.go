package agent

// The fast path of the Codex mapping (its reader: import_fast.go). Decoding
// a line's view into a codexLine walked and copied its whole payload, the
// token usage and rate limits of a token_count as much as a reasoning's
// encrypted content, to read a few short strings of it.
//
// It gives exactly what decodeCodexEntry gives on the line's view, or
// declines: on anything where encoding/json's rules go beyond the plain
// case (a key that differs from a field's name only by case or is not
// ASCII, a key twice, a payload that is not an object, a token count that
// is not a plain unsigned integer, an item of a user message's content
// that is neither an object nor null...). A declined line goes through the
// view and encoding/json as before, as does every line of an older
// rollout, which has no envelope. FuzzCodexFastPath holds the two to the
// same answers, and TestCodexFastPathTakesRollouts to taking every line of
// the fixtures and of generated rollouts.

// The members the fast path reads: codexLine's at the top level,
// codexPayload's in the payload (TestCodexFastPathKeys holds them to the
// structs' fields). The payload's first codexPayloadStrings are strings;
// the others are structured, read for the lines codexDetail names.
var (
	codexKeys        = [...]string{"timestamp", "type", "payload"}
	codexPayloadKeys = [...]string{"type", "role", "name", "call_id", "id", "forked_from_id", "cwd", "model", "thread_name", "content", "message", "source", "info", "output"}
	codexItemFields  = []string{"type", "text"}
	codexInfoFields  = []string{"total_token_usage", "last_token_usage"}
	codexLastFields  = []string{"input_tokens", "output_tokens"}
)

const codexPayloadStrings = 9

// mapScanned is mapLine for a line scanJSON took, through the fast path,
// or through mapLine on the line's view when the fast path declines.
func (m *codexMapper) mapScanned(line []byte, strs []jsonString, members []jsonMember, view func() []byte) mappedLine {
	if e, ok := scanCodexEntry(line, strs, members, viewLong); ok {
		return m.mapEntry(&e)
	}
	return m.mapLine(view())
}

// codexShortensKey is the Codex view's shortens for the texts the fast
// path reads: a payload's message and its content's text, which it does
// not shorten: a user's request comes after the IDE's context, however
// long (codexTitle). The view also spares every text under "info"
// (codexMapper.shortens), of which the fast path reads none: only the
// token counts, and the total as written, which it takes from the line.
func codexShortensKey(key string) bool {
	return viewKeys[key] && key != "text" && key != "message"
}

// scanCodexEntry reads a line's entry. strs and members are scanJSON's for
// it; minLen is the view's (mapView): the texts the view would shorten,
// the entry holds shortened the same way.
func scanCodexEntry(line []byte, strs []jsonString, members []jsonMember, minLen int) (codexEntry, bool) {
	var e codexEntry
	if len(members) == 0 {
		return e, false
	}
	r := fastReader{b: line, strs: strs, minLen: minLen, shortens: codexShortensKey}
	p := codexPayloadRead{e: &e}
	ok := r.topMembers(members, codexKeys[:], func(k, v, end int) (ok bool) {
		switch codexKeys[k] {
		case "timestamp":
			e.Timestamp, ok = r.anyStringIn(v, end, "timestamp")
		case "type":
			e.Type, ok = r.anyStringIn(v, end, "type")
		case "payload":
			// null decodes as no payload, any other value but an object
			// fails the line: both rare, left to encoding/json.
			ok = line[v] == '{' && p.read(&r, v)
		}
		return ok
	})
	if e.Type == "" || codexItemTypes[e.Type] {
		// No envelope: an older rollout's line (codexBareLine), whose top
		// level decodeCodexEntry reads as a payload. Rare (rollouts of
		// 2025) and left to it.
		return e, false
	}
	return e, ok && p.detail(&r)
}

// codexPayloadRead reads a payload into an entry. The structured member a
// line's types make the mapping read (codexDetail) is read once the types
// are known: after the walk, or during it when the line's type came before
// the payload and the payload's before the member, as Codex writes them.
type codexPayloadRead struct {
	e    *codexEntry
	at   [5]int // where each structured member's value starts (0: absent)
	done bool   // the detail is read
}

func (p *codexPayloadRead) read(r *fastReader, v int) bool {
	e := p.e
	strField := [codexPayloadStrings]*string{&e.PType, &e.Role, &e.Name, &e.CallID, &e.ID, &e.ForkedFromID, &e.Cwd, &e.Model, &e.ThreadName}
	_, ok := r.fields(v, codexPayloadKeys[:], func(k, v int) (int, bool) {
		if k < codexPayloadStrings {
			s, end, ok := r.anyString(v, codexPayloadKeys[k])
			*strField[k] = s
			return end, ok
		}
		p.at[k-codexPayloadStrings] = v
		// A token_count's info is the only detail on a frequent line: read
		// in passing, it is walked once. The types read so far are the
		// line's (a second one declines it), and a type not read yet is ""
		// and names no detail.
		if codexPayloadKeys[k] == "info" && codexDetail(e.Type, e.PType, e.Role) == "info" {
			p.done = true
			return r.codexTokens(v, &e.Tokens)
		}
		return r.valueEnd(v)
	})
	return ok
}

// detail reads the structured member the line's types name, if the walk
// has not.
func (p *codexPayloadRead) detail(r *fastReader) bool {
	if p.done {
		return true
	}
	e := p.e
	name := codexDetail(e.Type, e.PType, e.Role)
	var v int
	for i, key := range codexPayloadKeys[codexPayloadStrings:] {
		if key == name {
			v = p.at[i]
		}
	}
	if v == 0 {
		// No such member: nothing to read; but a token_count with no
		// info has its usage in the payload itself (an older Codex's),
		// left to encoding/json.
		return name != "info"
	}
	r.next = 0 // back before the members read since
	var ok bool
	switch name {
	case "source":
		e.Subagent, e.SpawnParent, ok = r.codexSubagent(v)
	case "content":
		if e.Type == "inter_agent_communication" {
			var s string
			s, _, ok = r.anyString(v, "content")
			e.Prompt = codexMailTask(s)
			break
		}
		e.Prompt, e.Context, ok = r.codexPrompt(v)
	case "message":
		e.Message, _, ok = r.anyString(v, "message")
	case "output":
		e.SpawnMark, ok = codexSpawnMarked(r.b[v:]), true
	case "info":
		_, ok = r.codexTokens(v, &e.Tokens)
	}
	return ok
}

// anyString is rawString of the value at v: the string it holds, as str
// reads it under key, or "" for a value of another type (which a
// json.RawMessage takes without complaint); and where the value ends.
func (r *fastReader) anyString(v int, key string) (string, int, bool) {
	if v >= len(r.b) || r.b[v] != '"' {
		end, ok := r.valueEnd(v)
		return "", end, ok
	}
	return r.stringValue(v, key)
}

// anyStringIn is anyString for the value at b[v:end].
func (r *fastReader) anyStringIn(v, end int, key string) (string, bool) {
	if r.b[v] != '"' {
		return "", true
	}
	return r.str(v, end, key)
}

// codexSubagent is codexSubagent of a session_meta's source at v. A source
// object (a subagent's, one line of its rollout) is decoded whole with
// encoding/json, from the line rather than the view: the same, as the
// view shortens no string codexSubagent reads, and a string it shortens
// is still a string.
func (r *fastReader) codexSubagent(v int) (subagent bool, parent string, ok bool) {
	end, ok := r.valueEnd(v)
	if !ok {
		return false, "", false
	}
	subagent, parent = codexSubagent(r.b[v:end])
	return subagent, parent, true
}

// codexPrompt is codexPrompt of a user message's content at v: its
// prompt, and whether it is context, read in one walk of its items.
func (r *fastReader) codexPrompt(v int) (prompt string, context, ok bool) {
	if r.b[v] != '[' {
		return "", false, true // a string, null...: no items, no prompt
	}
	var c codexItems
	_, ok = r.array(v, func(v int) (int, bool) {
		switch r.b[v] {
		case 'n':
			c.add("", "") // a zero item, as encoding/json decodes it
			return v + len("null"), true
		case '{':
		default:
			return 0, false // fails the whole list in encoding/json: left to it
		}
		var typ, text string
		end, ok := r.fields(v, codexItemFields, func(k, v int) (int, bool) {
			if c.found {
				return r.valueEnd(v) // read whole: nothing changes after the prompt
			}
			s, end, ok := r.anyString(v, codexItemFields[k])
			*[...]*string{&typ, &text}[k] = s
			return end, ok
		})
		if ok {
			c.add(typ, text)
		}
		return end, ok
	})
	return c.prompt, c.context(), ok
}

// codexTokens reads a token_count's info at v into t, as codexTokensOf
// decodes it, and says where it ends.
func (r *fastReader) codexTokens(v int, t *codexTokens) (int, bool) {
	if r.b[v] != '{' {
		return r.valueEnd(v) // null before the first response: counts nothing
	}
	t.OK = true
	return r.fields(v, codexInfoFields, func(k, v int) (int, bool) {
		if k == 0 {
			end, ok := r.valueEnd(v)
			if ok {
				t.Total = string(r.b[v:end]) // as written: the view keeps it whole
			}
			return end, ok
		}
		if r.b[v] != '{' {
			return 0, false // null keeps the counts, any other value fails: left to encoding/json
		}
		return r.fields(v, codexLastFields, func(k, v int) (int, bool) {
			n, end, ok := r.uint(v)
			*[...]*uint64{&t.In, &t.Out}[k] = n
			return end, ok
		})
	})
}
