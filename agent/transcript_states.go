package agent

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	json "github.com/go-json-experiment/json/v1"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
)

// Files' states from a Claude Code transcript's edit results. Without
// Claude Code's file-history backups an imported session has no captures,
// yet its transcript says what each file was before the agent changed it:
// the user line carrying the result of an Edit, MultiEdit or Write has a
// toolUseResult object with the file's absolute filePath and
//
//   - Edit: originalFile, the whole file before this edit;
//   - MultiEdit: originalFileContents, the same;
//   - Write: type "create" (the file did not exist; originalFile null) or
//     "update" with originalFile, the file before.
//
// firstCaptures reads them when it walks the session (nothing is stored
// for them at import: a session imported by an older rook has them too),
// and takes the first state of each path it meets, captured or from the
// transcript, as it does for captures. A failed result (an is_error
// tool_result, a toolUseResult that is not an object) says nothing.

// transcriptWorkspace is the workspace whose files a session's edit
// results name, when they are read as states: an imported Claude Code
// session, or a fork of one, with an absolute workspace; "" otherwise.
func (r *Rook) transcriptWorkspace(id eventlog.ID) string {
	m, err := r.Log.ReadMeta(id)
	if err != nil || m.Workspace == "" || !filepath.IsAbs(m.Workspace) {
		return ""
	}
	if src := r.ImportedFrom(m); src == nil || src.Format != FormatClaudeCode {
		return ""
	}
	return filepath.Clean(m.Workspace)
}

// editOriginal is what one edit result says its file was before the edit.
type editOriginal struct {
	Path   string // workspace path, slash-separated
	Absent bool   // the file did not exist (Write create)
	Text   []byte // its content otherwise
	// Unknown: the result changed the file (it has a patch, or is a
	// Write's update) but does not say what it was (an older Claude
	// Code's Write or Edit). A later result's original is the file after
	// this change, not before the session: it is no state of the path.
	Unknown bool
	// Sidechain: Unknown, a subagent's result, which Claude Code writes
	// without the file (transcript_subagent_edits.go).
	Sidechain bool
}

// claudeEditResult is what an edit result's toolUseResult says of the file.
type claudeEditResult struct {
	FilePath     string  `json:"filePath"`
	Type         string  `json:"type"`         // Write: create or update
	OriginalFile *string `json:"originalFile"` // nil: null or not there
	// MultiEdit's name for originalFile.
	OriginalFileContents *string `json:"originalFileContents"`
	// An edit's patch: the result is of a change to the file.
	StructuredPatch json.RawMessage `json:"structuredPatch"`
}

// editOriginals reads the edit results among an imported event's lines
// (body, the event's stored body: a source line object). Events of another
// kind, and lines that hold no edit result, give nothing. Only the lines
// whose keys name a filePath and an original or a patch are expanded and
// decoded: most tool results are not edits.
func (r *Rook) editOriginals(body cas.Key, ws string) ([]editOriginal, error) {
	// An edit names a filePath and has an original or a patch (a Read's
	// result names a filePath too, and has neither: its file's text is
	// not read back).
	lines, err := r.importedLines(body, func(rest []byte) bool {
		return bytes.Contains(rest, []byte(`"filePath"`)) &&
			(bytes.Contains(rest, []byte(`"originalFile`)) || bytes.Contains(rest, []byte(`"structuredPatch"`)))
	})
	if err != nil {
		return nil, err
	}
	var out []editOriginal
	for _, line := range lines {
		if o, ok := editOriginalOf(entryBytes(trimNewline(line)), ws); ok {
			out = append(out, o)
		}
	}
	return out, nil
}

// editOriginalOf reads one line as an edit result, through the reading
// view's decoding of a line (renderedLine).
func editOriginalOf(line []byte, ws string) (editOriginal, bool) {
	var l renderedLine
	if json.Unmarshal(line, &l) != nil || l.Type != "user" || l.Message == nil ||
		len(l.ToolUseResult) == 0 || l.ToolUseResult[0] != '{' {
		return editOriginal{}, false
	}
	var blocks []claudeBlock
	if len(l.Message.Content) == 0 || l.Message.Content[0] != '[' || json.Unmarshal(l.Message.Content, &blocks) != nil {
		return editOriginal{}, false
	}
	results := 0
	for _, b := range blocks {
		if b.Type == "tool_result" {
			if b.IsError {
				return editOriginal{}, false
			}
			results++
		}
	}
	var res claudeEditResult
	if results == 0 || json.Unmarshal(l.ToolUseResult, &res) != nil {
		return editOriginal{}, false
	}
	if res.OriginalFile == nil {
		res.OriginalFile = res.OriginalFileContents
	}
	rel, ok := workspaceRel(ws, res.FilePath)
	switch {
	case !ok:
		return editOriginal{}, false
	case res.OriginalFile != nil:
		return editOriginal{Path: rel, Text: []byte(*res.OriginalFile)}, true
	case res.Type == "create":
		return editOriginal{Path: rel, Absent: true}, true
	case res.Type == "update" || len(res.StructuredPatch) > 0:
		return editOriginal{Path: rel, Unknown: true}, true // an older Claude Code's result, without the file
	}
	return editOriginal{}, false
}

// workspaceRel is the workspace path of an absolute path inside ws, if
// it is one checkRel accepts ("" and false else): taken as written, or
// as ws resolves through its links, or else with p's resolved too
// (realPath, links.go): a path through a link to the workspace (or to a
// directory above it) is named from ws all the same.
func workspaceRel(ws, p string) (string, bool) {
	if ws == "" || !filepath.IsAbs(p) {
		return "", false
	}
	p = filepath.Clean(p)
	rel := func(root, p string) (string, bool) {
		r, err := filepath.Rel(root, p)
		if r = filepath.ToSlash(r); err != nil || checkRel(r) != nil {
			return "", false
		}
		return r, true
	}
	if r, ok := rel(ws, p); ok || !filepath.IsAbs(ws) {
		return r, ok
	}
	real := realDir(ws)
	if r, ok := rel(real, p); ok {
		return r, true
	}
	return rel(real, realPath(p))
}

// transcriptChange is the state an edit result gives a path, for
// firstCaptures: a file of mode 0644 (a restore or a diff keeps the mode
// the file has on disk: an edit does not change it) whose content is the
// object its text is, when the import cut it out of the line (it was long
// enough), or else the text itself, when short, or else read again from
// the line when needed (src).
func transcriptChange(o editOriginal, src cas.Key, ws string) Change {
	if o.Absent {
		return Change{Path: o.Path, Remove: true, transcript: true}
	}
	c := Change{Path: o.Path, File: FileEntry{ID: cas.ID(o.Text), Size: int64(len(o.Text)), Mode: FileMode{Perm: 0o644}}, transcript: true, src: src, ws: ws}
	if len(o.Text) < MinCutString {
		c.data = o.Text // short: kept, never cut out
	}
	return c
}

// writeChange writes the content of a path's state to w, as changeData
// reads it, but streamed (Store.WriteTo: an object of many MiB is read,
// decompressed and hashed in pieces, never held whole): a restore's plan
// verifies each copy so (w io.Discard), and Apply writes each so into its
// file. An error says the copy does not read, or is not the object its
// capture names (its hash another); w may have had part
// of it then.
func (r *Rook) writeChange(c Change, w io.Writer) error {
	if c.data != nil {
		_, err := w.Write(c.data)
		return err
	}
	_, err := r.Store.WriteTo(c.File.ID, w)
	var nf *cas.NotFoundError
	if err != nil && c.transcript && errors.As(err, &nf) {
		b, err := r.changeData(c) // the edit result's text, from its line
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	return err
}

// changeData is the content of a path's state: held, the object it names,
// or (a state from the transcript whose text was not cut out as an
// object) read again from its line.
func (r *Rook) changeData(c Change) ([]byte, error) {
	if c.data != nil {
		return c.data, nil
	}
	b, err := r.Store.Get(c.File.ID)
	var nf *cas.NotFoundError
	if err == nil || !c.transcript || !errors.As(err, &nf) {
		return b, err
	}
	origs, err := r.editOriginals(c.src, c.ws)
	if err != nil {
		return nil, err
	}
	for _, o := range origs {
		if o.Path == c.Path && !o.Absent && !o.Unknown && cas.ID(o.Text) == c.File.ID {
			return o.Text, nil
		}
	}
	return nil, fmt.Errorf("its content in the transcript's edit result is gone")
}
