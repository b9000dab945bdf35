package agent

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/units"
	"github.com/rookhq/rook/internal/vfs"
)

// Claude Code's tool-results files. An output too large for the
// transcript (about 30-50 KB and up, Claude Code 2.1.2+) is saved whole to
// <project>/<session id>/tool-results/<tool_use_id>.txt (.json for some
// tools), and the tool_result in the transcript holds only a preview:
//
//	<persisted-output>
//	Output too large (141KB). Full output saved to: /home/u/.claude/projects/-home-u-p/<session id>/tool-results/toolu_01….txt
//
//	Preview (first 2KB):
//	…
//	</persisted-output>
//
// Sometimes the line's toolUseResult holds the whole output as well (a
// Bash run's stdout), sometimes not. A user who imports the tree and then
// deletes ~/.claude (the reason to import it: peers.md, 13 GB a week)
// would keep only the preview. So the import takes each file a tool
// result names in with the line: an event of its own after it, in one
// group with it (a crash keeps both or neither), a note labelled
// toolResultsLabel + the file's name whose body is the file's bytes (a
// tool output object: it compresses, dedupes and is searched as any).
// Export leaves these events out of the transcript and writes them back
// with --tool-results DIR.

// toolResultsLabel begins the label of an event that holds a
// tool-results file: the file's name follows it.
const toolResultsLabel = "claude-code:tool-results/"

// ToolResultsFile names the tool-results file an event holds, when it
// holds one (an import of a Claude Code transcript made it).
func ToolResultsFile(ev eventlog.Event) (string, bool) {
	name, ok := strings.CutPrefix(ev.Label, toolResultsLabel)
	if !ok || ev.Kind != eventlog.KindNote || !safeSideName(name) {
		return "", false
	}
	return name, true
}

// importedSideEvent says whether ev is one an import added beside a
// transcript's lines, from the files beside it: a capture of its file
// backups, or a tool-results file. Neither is a line of the source, nor
// anything the model read as it stands.
func importedSideEvent(ev eventlog.Event) bool {
	if ev.Kind == eventlog.KindCheckpoint && ev.Label == captureBackupsLabel {
		return true
	}
	if _, ok := lateCaptureAt(ev); ok {
		return true
	}
	if _, ok := SessionMemoryFile(ev); ok {
		return true
	}
	_, ok := ToolResultsFile(ev)
	return ok
}

// persistedMarker opens a tool result Claude Code saved to a file.
var persistedMarker = []byte("<persisted-output>")

// persistedRef is a tool-results file a line names: the session directory
// it is in (a fork's copied lines name its parent's) and its name.
type persistedRef struct {
	session, name string
}

// persistedRefs are the tool-results files a tool result line names, in
// the order it names them. The line is read as it is, JSON-escaped: the
// path ends at the string's next escape (the "\n" after it) or its end,
// and its separators may be "/" or an escaped "\\" (Windows). A name or
// session directory that is not a plain file name is not taken: the
// import reads only within the transcript's project directory.
func persistedRefs(line []byte) []persistedRef {
	var refs []persistedRef
	for rest := line; ; {
		i := bytes.Index(rest, persistedMarker)
		if i < 0 {
			return refs
		}
		rest = rest[i+len(persistedMarker):]
		// The path is in the marker's first line.
		head := rest[:min(len(rest), 4096)]
		if e := bytes.Index(head, []byte(`\n\n`)); e >= 0 {
			head = head[:e]
		}
		const saved = "saved to: "
		j := bytes.Index(head, []byte(saved))
		if j < 0 {
			continue
		}
		parts := strings.Split(jsonPathText(head[j+len(saved):]), "/")
		if len(parts) < 3 || parts[len(parts)-2] != "tool-results" {
			continue
		}
		ref := persistedRef{session: parts[len(parts)-3], name: parts[len(parts)-1]}
		if safeSideName(ref.session) && safeSideName(ref.name) {
			refs = append(refs, ref)
		}
	}
}

// jsonPathText is the path at the start of b, a JSON string's bytes as
// written: up to the string's end or its first escape other than "\\",
// which is a Windows separator and is read as "/".
func jsonPathText(b []byte) string {
	var out []byte
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return string(out)
		case c == '\\' && i+1 < len(b) && b[i+1] == '\\':
			out = append(out, '/')
			i++
		case c == '\\':
			return string(out)
		default:
			out = append(out, c)
		}
	}
	return string(out)
}

// safeSideName says whether name is a file name Claude Code gives a
// session directory or a tool-results file (a uuid, a tool_use_id and an
// extension): letters, digits, '.', '-' and '_', no more than 255 bytes,
// and not "." or "..".
func safeSideName(name string) bool {
	if name == "" || len(name) > 255 || name == "." || name == ".." {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// claudeProjectDir is the project directory of a Claude Code transcript:
// the one it is in, or for a subagent's (<project>/<session>/subagents/
// agent-x.jsonl) the one three up.
func claudeProjectDir(transcript string) string {
	dir := filepath.Dir(transcript)
	if filepath.Base(dir) == "subagents" {
		return filepath.Dir(filepath.Dir(dir))
	}
	return dir
}

// attachToolResults appends, for each tool-results file the tool result
// lines of unit name that the session does not hold yet, an event holding
// it, in one group with the unit's. A file that is not there (deleted, or
// a tree copied without it) is counted in the file's result and reported
// at its line: only the preview is kept. It returns the events appended.
func (fi *fileImport) attachToolResults(unit []pendingLine, at time.Time) (int, error) {
	if fi.opts.Format != FormatClaudeCode {
		return 0, nil
	}
	n := 0
	for _, p := range unit {
		if p.m.Kind != eventlog.KindToolResult {
			continue
		}
		for _, ref := range persistedRefs(p.line) {
			held, err := fi.heldToolResults()
			if err != nil {
				return n, err
			}
			if held[ref.name] {
				continue
			}
			path := filepath.Join(claudeProjectDir(fi.path), ref.session, "tool-results", ref.name)
			data, err := readSideFile(fi.r.fs, path)
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					// Said at the line, as a missing file backup is, and
					// counted: the summary says what "not there" may mean.
					fi.rep.problem(ImportProblem{File: fi.path, Line: p.no, Reason: fmt.Sprintf("names the tool output %s, which is not there: only its preview is kept", path)})
					fi.res.ToolResultsMissing++
				} else {
					// There, but not a file to take (a link, a directory,
					// too big, unreadable): said at its path, why; not
					// counted as "not there", which the summary would say.
					fi.rep.problem(ImportProblem{File: path, Reason: fmt.Sprintf("the output a tool result of %s names: %v: only its preview is kept", filepath.Base(fi.path), err)})
				}
				continue
			}
			res, err := fi.r.Store.Put(cas.KindToolResult, data)
			if err != nil {
				return n, fmt.Errorf("store %s: %w", path, err)
			}
			// In the group with the line, every file it names: appended
			// one by one (appendWithGroup), a crash or a failed Put after
			// the first would keep the line and lose the rest for good
			// (the line is not taken again).
			if len(fi.group) == 16 {
				if err := fi.flushGroup(); err != nil {
					return n, err
				}
			}
			fi.group = append(fi.group, eventlog.Event{Kind: eventlog.KindNote, Label: toolResultsLabel + ref.name, Body: res.ID, Time: at})
			held[ref.name] = true
			fi.res.ToolResults++
			fi.res.SideBytesIn += int64(len(data))
			n++
		}
	}
	if n > 0 {
		return n, fi.flushGroup()
	}
	return n, nil
}

// readSideFile reads a file Claude Code keeps beside its transcripts (a
// tool output, a file backup): a regular file of at most
// cas.MaxObjectSize bytes, checked before it is read (a FIFO would hang
// the import, a device or an output of GBs fill its memory). A symbolic
// link is not followed: Claude Code writes these files, never links, and
// a tree imported from elsewhere (a colleague's, an archive) could link
// tool-results/toolu_X.txt to ~/.ssh/id_ed25519, taking it into the store,
// its search and its exports.
func readSideFile(fsys vfs.FS, path string) ([]byte, error) {
	st, err := fsys.Lstat(path)
	switch {
	case err != nil:
		return nil, err
	case st.Mode()&fs.ModeSymlink != 0:
		return nil, errors.New("a symbolic link, not followed: Claude Code writes these files itself, and a link could take any file on this machine into the store; copy the file it names in its place to import it")
	case !st.Mode().IsRegular():
		return nil, fmt.Errorf("not a regular file (%s)", fileKind(st.Mode()))
	case st.Size() > cas.MaxObjectSize:
		return nil, fmt.Errorf("%s, more than the %s an object holds", units.Bytes(st.Size()), units.Bytes(cas.MaxObjectSize))
	}
	return vfs.ReadFile(fsys, path)
}

// heldToolResults are the names of the tool-results files the session
// holds: read from its events once, at the first line that names one, for
// a session an earlier import made (a grown file's line taken in again
// whole, after an import found it cut short, names its file again).
func (fi *fileImport) heldToolResults() (map[string]bool, error) {
	if fi.toolResults != nil {
		return fi.toolResults, nil
	}
	fi.toolResults = map[string]bool{}
	if fi.created {
		return fi.toolResults, nil
	}
	err := fi.r.eachEvent(fi.sess.ID, func(ev eventlog.Event) error {
		if name, ok := ToolResultsFile(ev); ok {
			fi.toolResults[name] = true
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("session %s: read which tool-results files it holds: %w", fi.sess.ID, err)
	}
	return fi.toolResults, nil
}

// ExportedToolResults says what ExportToolResults wrote.
type ExportedToolResults struct {
	Dir   string   `json:"dir"`
	Files []string `json:"files"` // names, in the session's order
	Bytes int64    `json:"bytes"`
}

// ExportToolResults writes the Claude Code tool-results files an imported
// session holds (attachToolResults) into dir, each under its own name, as
// Claude Code had them in <project>/<session id>/tool-results/: each file
// is replaced whole (the durable-write helper), and dir is made if
// missing. A session that holds none writes nothing.
func (r *Rook) ExportToolResults(id eventlog.ID, dir string) (ExportedToolResults, error) {
	x := ExportedToolResults{Dir: dir, Files: []string{}}
	if r.fs == vfs.OS {
		// Never into the store, however dir leads there (InStore).
		if err := InStore(r.home, dir, "write tool-results files to"); err != nil {
			return x, err
		}
	}
	var files []vfs.NamedData
	seen := map[string]bool{}
	err := r.eachEvent(id, func(ev eventlog.Event) error {
		name, ok := ToolResultsFile(ev)
		if !ok || seen[name] {
			return nil
		}
		seen[name] = true
		info, err := r.Store.StatEntry(ev.Body)
		if err != nil {
			return fmt.Errorf("tool-results/%s (event %d): %w", name, ev.Seq, err)
		}
		body, seq := ev.Body, ev.Seq
		files = append(files, vfs.NamedData{Name: name, Stream: func(w io.Writer) error {
			b, err := r.Store.Get(body)
			if err != nil {
				return fmt.Errorf("tool-results/%s (event %d): %w", name, seq, err)
			}
			_, err = w.Write(b)
			return err
		}})
		x.Files = append(x.Files, name)
		x.Bytes += info.Size
		return nil
	})
	if err != nil {
		return x, err
	}
	if len(files) == 0 {
		return x, nil
	}
	if err := r.fs.MkdirAll(dir, 0o700); err != nil {
		return x, err
	}
	// In batches: a batch holds its files open until it renames them,
	// and a session may hold hundreds.
	for written := 0; written < len(files); {
		n := min(len(files)-written, 64)
		if err := r.fs.WriteFilesAtomic(dir, files[written:written+n], 0o600); err != nil {
			return x, fmt.Errorf("%w (%d of the %d files written before it; each file is whole or as it was)", err, written, len(files))
		}
		written += n
	}
	return x, nil
}
