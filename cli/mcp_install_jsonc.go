package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Gemini CLI reads its settings.json with comments allowed (// to the end
// of the line, /* */; gemini-cli's settings.ts strips them before
// JSON.parse, which still refuses a trailing comma) and keeps them when it
// writes the file. rook does as much for it: a file with comments is
// edited as text, rook's entry inserted, replaced or removed where it is,
// and every other byte (comments, order, spacing) left as it was. A file
// without comments is rewritten as for every client (mcpConfigInstall).
// Other clients read strict JSON: a comment in their file is refused as
// not valid JSON, as they would refuse it.

// blankJSONComments returns data with each comment outside strings made
// spaces (its line breaks kept, so every offset and line number stays),
// and whether there was any.
func blankJSONComments(data []byte) ([]byte, bool) {
	out := slices.Clone(data)
	found := false
	inString := false
	for i := 0; i < len(out); i++ {
		c := out[i]
		switch {
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			found = true
			for ; i < len(out) && out[i] != '\n' && out[i] != '\r'; i++ {
				out[i] = ' '
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			end := bytes.Index(out[i+2:], []byte("*/"))
			if end < 0 {
				return out, found // unterminated: left for the parse to refuse
			}
			found = true
			for j := i; j < i+2+end+2; j++ {
				if out[j] != '\n' && out[j] != '\r' {
					out[j] = ' '
				}
			}
			i += 2 + end + 1
		}
	}
	return out, found
}

// memberSpan is where one member of a JSON object is in a file.
type memberSpan struct {
	key                        string
	keyStart, valStart, valEnd int // offsets in the file
	value                      json.RawMessage
}

// objectSpans returns the members of the object that is text[start:end]
// (a valid JSON object, comments blanked), with their offsets in text.
func objectSpans(text []byte, start, end int) ([]memberSpan, error) {
	dec := json.NewDecoder(bytes.NewReader(text[start:end]))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	var ms []memberSpan
	for dec.More() {
		before := int(dec.InputOffset())
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		lead := len(text[start+before:]) - len(bytes.TrimLeft(text[start+before:], ", \t\r\n"))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		valEnd := start + int(dec.InputOffset())
		key, _ := tok.(string)
		ms = append(ms, memberSpan{key: key, keyStart: start + before + lead, valStart: valEnd - len(v), valEnd: valEnd, value: v})
	}
	return ms, nil
}

// textEdit replaces text[start:end] with repl.
type textEdit struct {
	start, end int
	repl       string
}

func applyEdits(data []byte, edits []textEdit) []byte {
	slices.SortFunc(edits, func(a, b textEdit) int { return b.start - a.start })
	out := slices.Clone(data)
	for _, e := range edits {
		out = slices.Concat(out[:e.start:e.start], []byte(e.repl), out[e.end:])
	}
	return out
}

// lineIndent is the spaces and tabs that begin the line of data holding
// offset at, when only they come before it on that line.
func lineIndent(data []byte, at int) (indent string, alone bool) {
	ls := bytes.LastIndexAny(data[:at], "\r\n") + 1
	pre := data[ls:at]
	return string(pre[:len(pre)-len(bytes.TrimLeft(pre, " \t"))]), len(bytes.Trim(pre, " \t")) == 0
}

// newlineOf is the line break the file uses.
func newlineOf(data []byte) string {
	if bytes.Contains(data, []byte("\r\n")) {
		return "\r\n"
	}
	return "\n"
}

// indentValue writes value as JSON indented from the line indent, with
// unit for each level, and line breaks nl.
func indentValue(value json.RawMessage, indent, unit, nl string) (string, error) {
	var b bytes.Buffer
	// json.Indent keeps the space after the value (a merged entry ends
	// in a line break): the value alone goes in.
	if err := json.Indent(&b, bytes.TrimRight(value, " \t\r\n"), indent, unit); err != nil {
		return "", err
	}
	return strings.ReplaceAll(b.String(), "\n", nl), nil
}

// indentUnit guesses the file's indentation step from a member's indent
// and its object's: two spaces when it cannot tell.
func indentUnit(member, parent string) string {
	if strings.HasPrefix(member, parent) && len(member) > len(parent) {
		return member[len(parent):]
	}
	return "  "
}

// jsoncDoc is a configuration file with comments: the text, the text with
// its comments blanked, and the spans of its top members and of its
// mcpServers members.
type jsoncDoc struct {
	data, blank []byte
	top         []memberSpan
	at          int // mcpServers in top, or -1
	servers     []memberSpan
	topStart    int // offset of the top object's '{'
}

// parseJSONC checks a file with comments as mcpConfigServers checks one
// (what Gemini CLI refuses, and what rook cannot edit safely: a key twice)
// and finds where its members are.
func parseJSONC(data, blank []byte) (*jsoncDoc, error) {
	if _, _, _, err := mcpConfigServers(blank); err != nil {
		return nil, err
	}
	d := &jsoncDoc{data: data, blank: blank, at: -1}
	d.topStart = len(blank) - len(bytes.TrimLeft(blank, " \t\r\n"))
	if d.topStart == len(blank) {
		return nil, errors.New("the file holds only comments: add {} to it, or remove them")
	}
	var err error
	if d.top, err = objectSpans(blank, d.topStart, len(blank)); err != nil {
		return nil, err
	}
	for i, m := range d.top {
		if m.key == "mcpServers" {
			d.at = i
			if d.servers, err = objectSpans(blank, m.valStart, m.valEnd); err != nil {
				return nil, err
			}
		}
	}
	return d, nil
}

// rookAt is the index of rook's entry among the servers, or -1; a key
// written twice is an error, as in findMember.
func (d *jsoncDoc) rookAt() (int, error) {
	at := -1
	for i, m := range d.servers {
		if m.key == mcpServerName {
			if at >= 0 {
				return -1, fmt.Errorf("%s has %q twice", `"mcpServers"`, mcpServerName)
			}
			at = i
		}
	}
	return at, nil
}

// insertMember is the edit that adds "key": value as the last member of
// the object at [objStart, objEnd) whose members are ms; parentIndent is
// the indent of the line the object opens on.
func (d *jsoncDoc) insertMember(ms []memberSpan, objStart, objEnd int, parentIndent, key string, value json.RawMessage) (textEdit, error) {
	nl := newlineOf(d.data)
	memberIndent := parentIndent + "  "
	if len(ms) > 0 {
		// After the last value, before any comment that follows it.
		end := ms[len(ms)-1].valEnd
		ind, alone := lineIndent(d.data, ms[len(ms)-1].keyStart)
		if !alone { // an object on one line: one more member on it
			return textEdit{end, end, ", " + jsonString(key) + ": " + string(compactJSON(value))}, nil
		}
		memberIndent = ind
		v, err := indentValue(value, memberIndent, indentUnit(memberIndent, parentIndent), nl)
		if err != nil {
			return textEdit{}, err
		}
		// A // comment after the last value stays on its line: the new
		// member goes on the next.
		at := end
		if eol := bytes.IndexAny(d.data[end:], "\r\n"); eol >= 0 && bytes.HasPrefix(bytes.TrimLeft(d.data[end:end+eol], " \t"), []byte("//")) {
			at = end + eol
		}
		return textEdit{end, at, "," + string(d.data[end:at]) + nl + memberIndent + jsonString(key) + ": " + v}, nil
	}
	v, err := indentValue(value, memberIndent, indentUnit(memberIndent, parentIndent), nl)
	if err != nil {
		return textEdit{}, err
	}
	member := jsonString(key) + ": " + v
	// An empty object: inside its braces, before what they hold (spaces,
	// comments).
	open := objStart + 1
	closing := objEnd - 1
	if _, alone := lineIndent(d.data, closing); alone {
		return textEdit{open, open, nl + memberIndent + member}, nil
	}
	return textEdit{open, open, nl + memberIndent + member + nl + parentIndent}, nil
}

// mcpConfigInstallJSONC is mcpConfigInstall for a file that may hold
// comments (Gemini CLI's): with none, the same; with some, rook's entry is
// added, or its members set, by editing the text, the rest kept byte for
// byte. Its own entry is rewritten whole when it changes (a comment
// inside it goes with it).
func mcpConfigInstallJSONC(data []byte, entry json.RawMessage) (out []byte, prev json.RawMessage, changed bool, err error) {
	blank, comments := blankJSONComments(data)
	if !comments || bytes.HasPrefix(data, utf8BOM) {
		return mcpConfigInstall(data, entry)
	}
	d, err := parseJSONC(data, blank)
	if err != nil {
		return nil, nil, false, err
	}
	var edit textEdit
	if d.at < 0 {
		ind, _ := lineIndent(data, d.topStart)
		srv, _ := json.Marshal(map[string]json.RawMessage{mcpServerName: entry})
		// Only spaces (and comments, blanked) follow the object.
		end := bytes.LastIndexByte(blank, '}') + 1
		edit, err = d.insertMember(d.top, d.topStart, end, ind, "mcpServers", srv)
	} else {
		srvs := d.top[d.at]
		i, ferr := d.rookAt()
		if ferr != nil {
			return nil, nil, false, ferr
		}
		if i < 0 {
			ind, _ := lineIndent(data, srvs.keyStart)
			edit, err = d.insertMember(d.servers, srvs.valStart, srvs.valEnd, ind, mcpServerName, entry)
		} else {
			old := d.servers[i]
			merged, same, merr := mergeRookEntry(old.value, entry)
			if merr != nil {
				return nil, nil, false, merr
			}
			if same {
				return data, nil, false, nil
			}
			v := string(compactJSON(merged)) // an entry not on lines of its own
			if ind, alone := lineIndent(data, old.keyStart); alone {
				parent, _ := lineIndent(data, srvs.keyStart)
				var ierr error
				if v, ierr = indentValue(merged, ind, indentUnit(ind, parent), newlineOf(data)); ierr != nil {
					return nil, nil, false, ierr
				}
			}
			prev = compactJSON(old.value) // comments blanked, then dropped
			edit = textEdit{old.valStart, old.valEnd, v}
		}
	}
	if err != nil {
		return nil, nil, false, err
	}
	return applyEdits(data, []textEdit{edit}), prev, true, nil
}

// mcpConfigUninstallJSONC is mcpConfigUninstall for a file that may hold
// comments: with some, rook's entry is cut out of the text (its lines,
// when it has them to itself, and the comma that went with it), the rest
// kept byte for byte.
func mcpConfigUninstallJSONC(data []byte) (out []byte, removed json.RawMessage, err error) {
	blank, comments := blankJSONComments(data)
	if !comments || bytes.HasPrefix(data, utf8BOM) {
		return mcpConfigUninstall(data)
	}
	d, err := parseJSONC(data, blank)
	if err != nil || d.at < 0 {
		return nil, nil, err
	}
	i, err := d.rookAt()
	if err != nil || i < 0 {
		return nil, nil, err
	}
	rook := d.servers[i]
	if _, err := rookEntryMembers(rook.value); err != nil {
		return nil, nil, err
	}
	start, end := rook.keyStart, rook.valEnd
	var edits []textEdit
	// blankBetween: data[a:b] is commas and spaces only, no comment.
	blankBetween := func(a, b int) bool { return len(bytes.Trim(data[a:b], ", \t\r\n")) == 0 }
	srvs := d.top[d.at]
	switch {
	case len(d.servers) == 1 && blankBetween(srvs.valStart+1, start) && blankBetween(end, srvs.valEnd-1):
		// Its object holds nothing else: {} is left.
		start, end = srvs.valStart+1, srvs.valEnd-1
	case len(d.servers) == 1 && blankBetween(srvs.valStart+1, start):
		// The only server, first in its object, comments after it: as
		// install put it into an object holding only them, after the
		// '{' on a line of its own, and, when the '}' was not alone on
		// its line, a line break and the indent before what was there.
		start = srvs.valStart + 1
		nl := newlineOf(data)
		parent, _ := lineIndent(data, srvs.keyStart)
		if _, alone := lineIndent(data, srvs.valEnd-1); !alone && bytes.HasPrefix(data[end:], []byte(nl+parent)) {
			end += len(nl + parent)
		}
	case i > 0 && i == len(d.servers)-1 && blankBetween(d.servers[i-1].valEnd, start):
		// The last, after a comma and spaces: back to the member before,
		// as install added it.
		start = d.servers[i-1].valEnd
	case i < len(d.servers)-1 && blankBetween(end, d.servers[i+1].keyStart):
		// Followed by a comma and spaces: up to the next member.
		end = d.servers[i+1].keyStart
	default:
		// Comments about: they stay; the member goes, with the comma after
		// it, or else the one before it, and its lines when it has them to
		// itself.
		rest := bytes.TrimLeft(blank[end:], " \t\r\n")
		if len(rest) > 0 && rest[0] == ',' {
			end = len(blank) - len(rest) + 1
		} else if i > 0 {
			c := d.servers[i-1].valEnd + bytes.IndexByte(blank[d.servers[i-1].valEnd:start], ',')
			edits = append(edits, textEdit{c, c + 1, ""})
		}
		if ind, alone := lineIndent(data, start); alone {
			tail := data[end:]
			eol := bytes.IndexAny(tail, "\r\n")
			if eol < 0 {
				eol = len(tail)
			}
			if len(bytes.Trim(tail[:eol], " \t")) == 0 {
				start -= len(ind)
				end += eol
				if bytes.HasPrefix(tail[eol:], []byte("\r\n")) {
					end += 2
				} else if eol < len(tail) {
					end++
				}
			}
		}
	}
	edits = append(edits, textEdit{start, end, ""})
	return applyEdits(data, edits), compactJSON(rook.value), nil
}
