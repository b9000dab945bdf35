package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
)

// Side files a Claude Code session keeps beside its transcript that no
// line of it names when they are written: its session memory (Claude
// Code's notes on the session, <project>/<session id>/session-memory/,
// rewritten as the session goes on), and tool-results files written after
// the line that names them was imported. An import takes them in after
// the file's lines, whatever became of the file (new, grown, unchanged):
// a note event per file, appended to the session, holding its bytes.
// Nothing is stored twice: a session-memory file is taken again only when
// its bytes differ from the last copy its session holds (each version is
// kept: the notes are rewritten, and the older ones are history too), a
// tool-results file only when its session holds none of its name. Export
// leaves these events out of the transcript, as it does the files taken
// in with the lines (importedSideEvent).

// sessionMemoryLabel begins the label of an event that holds a file of a
// Claude Code session's session-memory directory: its path there follows.
const sessionMemoryLabel = "claude-code:session-memory/"

// SessionMemoryFile names the session-memory file an event holds, when it
// holds one (an import of a Claude Code transcript made it).
func SessionMemoryFile(ev eventlog.Event) (string, bool) {
	name, ok := strings.CutPrefix(ev.Label, sessionMemoryLabel)
	if !ok || ev.Kind != eventlog.KindNote || !safeSidePath(name) {
		return "", false
	}
	return name, true
}

// safeSidePath says whether name is a relative path of plain names
// (safeSideName) separated by "/".
func safeSidePath(name string) bool {
	for _, part := range strings.Split(name, "/") {
		if !safeSideName(part) {
			return false
		}
	}
	return true
}

// maxSessionMemoryDepth bounds how deep the session-memory directory is
// walked (Claude Code writes files at its top).
const maxSessionMemoryDepth = 4

// takeSideFiles takes in, after an import of a Claude Code transcript
// left its session m (res.Session), the side files no line took in. prev
// is the file's stat its session recorded before this import (nil: none,
// or a session new to the store): a file or directory that changed last
// before it, or before the side files an import looked at last
// (Source.SideSeen), holds nothing written later, so a session whose side
// files are all older than both is not read (the common case: one stat
// of each directory, as lateBackups does). It returns the metadata it
// staged with a new SideSeen (nil: none).
func (r *Rook) takeSideFiles(m eventlog.Meta, prev *eventlog.FileStat, res *ImportedFile, rep *ImportReport) (*eventlog.Meta, error) {
	src := m.Source
	if src == nil || src.Format != FormatClaudeCode || res.Session == nil || *res.Session != m.ID {
		return nil, nil
	}
	lookedAt := r.clock.Now()
	changed := func(t time.Time) bool {
		return t.UnixNano() > src.SideSeen && (prev == nil || t.UnixNano() > prev.MTime)
	}
	// seen: the newest time of the files looked at and held or taken in;
	// whole: none failed to read (one that did is looked at again).
	seen, whole := int64(0), true
	var memory, leftOut []sideFile
	if !isSubagentFile(src.Path) {
		memory, leftOut = r.sessionMemoryFiles(filepath.Join(filepath.Dir(src.Path), claudeFileID(src.Path), "session-memory"), rep)
	}
	fresh := false
	for _, f := range memory {
		fresh = fresh || changed(f.mtime)
	}
	// One left out is reported once, as it comes (or changes), not at
	// every import of the history after: its time counts as looked at.
	for _, f := range leftOut {
		if changed(f.mtime) {
			rep.problem(ImportProblem{File: f.path, Reason: f.why})
			fresh = true
		}
		seen = max(seen, f.mtime.UnixNano())
	}
	// The tool-results directory the session's lines name files in: its
	// own session directory's, or, for a subagent, its parent's. Files
	// in it only: a new session took in all its lines named.
	results := filepath.Join(claudeProjectDir(src.Path), sideSessionDir(src.Path), "tool-results")
	lateResults := false
	// resultsBefore: what is recorded as looked at stays before the
	// tool-results directory's time when it is not looked at (a new
	// session's): a file that came there after its line was read
	// (missing), before a session-memory note taken in now, is looked
	// for at the next import, not passed over for good.
	resultsBefore := int64(math.MaxInt64)
	if st, err := r.fs.Stat(results); err == nil && st.IsDir() {
		if res.Status == ImportNew || res.Status == ImportRewritten {
			resultsBefore = st.ModTime().UnixNano() - 1
		} else if lateResults = changed(st.ModTime()); lateResults {
			seen = max(seen, st.ModTime().UnixNano()) // looked at below
		}
	}
	if !fresh && !lateResults {
		return nil, nil
	}
	held := map[string]cas.Key{} // the last copy of each session-memory file
	heldResults := map[string]bool{}
	var named []persistedNamed // tool-results files its lines name
	err := r.eachEvent(m.ID, func(ev eventlog.Event) error {
		if name, ok := SessionMemoryFile(ev); ok {
			held[name] = ev.Body
		}
		if name, ok := ToolResultsFile(ev); ok {
			heldResults[name] = true
		}
		if lateResults && ev.Kind == eventlog.KindToolResult {
			line, err := r.Body(ev)
			if err != nil {
				return err
			}
			for _, ref := range persistedRefs(line) {
				named = append(named, persistedNamed{ref, ev.Time})
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("session %s: read which side files it holds: %w", m.ID, err)
	}
	var evs []eventlog.Event
	for _, f := range memory {
		data, err := readSideFile(r.fs, f.path)
		if err != nil {
			rep.problem(ImportProblem{File: f.path, Reason: fmt.Sprintf("a session-memory file of %s: %v: not taken in", filepath.Base(src.Path), err)})
			whole = false
			continue
		}
		seen = max(seen, f.mtime.UnixNano())
		if k, ok := held[f.name]; ok && k == cas.ID(data) {
			continue
		}
		put, err := r.Store.Put(cas.KindMemory, data)
		if err != nil {
			return nil, fmt.Errorf("store %s: %w", f.path, err)
		}
		evs = append(evs, eventlog.Event{Kind: eventlog.KindNote, Label: sessionMemoryLabel + f.name, Body: put.ID, Time: f.mtime})
		res.SessionMemory++
	}
	for _, n := range named {
		if heldResults[n.ref.name] {
			continue
		}
		path := filepath.Join(claudeProjectDir(src.Path), n.ref.session, "tool-results", n.ref.name)
		data, err := readSideFile(r.fs, path)
		if err != nil {
			// Still not there (its directory changes when it comes):
			// reported when its line was taken in.
			whole = whole && errors.Is(err, fs.ErrNotExist)
			continue
		}
		put, err := r.Store.Put(cas.KindToolResult, data)
		if err != nil {
			return nil, fmt.Errorf("store %s: %w", path, err)
		}
		evs = append(evs, eventlog.Event{Kind: eventlog.KindNote, Label: toolResultsLabel + n.ref.name, Body: put.ID, Time: n.at})
		heldResults[n.ref.name] = true
		res.ToolResults++
	}
	// Appended after the session's last event, never timed before it: the
	// session's last activity (session ls, last) does not go back to a
	// line's time or an old file's.
	if len(evs) > 0 {
		s, err := r.Log.Summary(m.ID)
		if err != nil {
			return nil, fmt.Errorf("session %s: %w", m.ID, err)
		}
		for i := range evs {
			if evs[i].Time.Before(s.Updated) {
				evs[i].Time = s.Updated
			}
		}
	}
	// Each event holds one whole file: a crash between two keeps the
	// first, and the next import takes the rest.
	for len(evs) > 0 {
		k := min(len(evs), 16)
		if _, err := r.Log.Append(m.ID, evs[:k]...); err != nil {
			return nil, fmt.Errorf("session %s: %w", m.ID, err)
		}
		res.Events += k
		evs = evs[k:]
	}
	return r.stageSideSeen(m, min(seen, resultsBefore), whole, lookedAt)
}

// stageSideSeen records in m's metadata (staged: written once the events
// appended before are durable; a crash before leaves the files to be
// looked at again) that the side files up to time seen were looked at,
// when all were (whole). A file changed within statQuiet of when they
// were looked at could change again with no change of its time (a file
// system's clock ticks coarsely): it is left to be looked at again.
func (r *Rook) stageSideSeen(m eventlog.Meta, seen int64, whole bool, lookedAt time.Time) (*eventlog.Meta, error) {
	seen = min(seen, lookedAt.Add(-statQuiet).UnixNano())
	if !whole || seen <= m.Source.SideSeen {
		return nil, nil
	}
	src := *m.Source
	src.SideSeen = seen
	m.Source = &src
	if err := r.Log.StageMeta(m); err != nil {
		return nil, fmt.Errorf("session %s: record the side files looked at: %w", m.ID, err)
	}
	return &m, nil
}

// persistedNamed is a tool-results file a line names, and the line's time.
type persistedNamed struct {
	ref persistedRef
	at  time.Time
}

// sideFile is a file in a session's side directory.
type sideFile struct {
	path, name string // name: its path within the directory, "/" between
	mtime      time.Time
	why        string // of one left out: why
}

// sessionMemoryFiles lists the regular files under dir, sorted by name,
// and those left out (not a plain name, or not a regular file), with why.
// A directory that does not read is reported.
func (r *Rook) sessionMemoryFiles(dir string, rep *ImportReport) (out, leftOut []sideFile) {
	leave := func(path string, e fs.DirEntry, why string) {
		fi, err := e.Info()
		if err != nil { // its time not known: reported now
			rep.problem(ImportProblem{File: path, Reason: why})
			return
		}
		leftOut = append(leftOut, sideFile{path: path, mtime: fi.ModTime(), why: why})
	}
	var walk func(d, prefix string, depth int)
	walk = func(d, prefix string, depth int) {
		ents, err := r.fs.ReadDir(d)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				rep.problem(ImportProblem{File: d, Reason: "session-memory directory not readable: " + err.Error()})
			}
			return
		}
		for _, e := range ents {
			path := filepath.Join(d, e.Name())
			switch {
			case !safeSideName(e.Name()):
				leave(path, e, "not a plain file name: not taken in")
			case e.IsDir() && depth < maxSessionMemoryDepth:
				walk(path, prefix+e.Name()+"/", depth+1)
			case e.Type().IsRegular():
				if fi, err := e.Info(); err == nil {
					out = append(out, sideFile{path: path, name: prefix + e.Name(), mtime: fi.ModTime()})
				}
			default:
				leave(path, e, fmt.Sprintf("not a regular file (%s): not taken in", fileKind(e.Type())))
			}
		}
	}
	walk(dir, "", 1)
	return out, leftOut
}

// isSubagentFile says whether a Claude Code transcript is a subagent's.
func isSubagentFile(path string) bool {
	return strings.HasPrefix(filepath.Base(path), "agent-") || filepath.Base(filepath.Dir(path)) == "subagents"
}

// sideSessionDir is the name of the session directory a transcript's
// side files are in: its own (<session id>.jsonl beside <session id>/),
// or a subagent's parent's.
func sideSessionDir(path string) string {
	if filepath.Base(filepath.Dir(path)) == "subagents" {
		return filepath.Base(filepath.Dir(filepath.Dir(path)))
	}
	return claudeFileID(path)
}
