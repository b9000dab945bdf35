package agent

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// Side files a Claude Code session keeps beside its transcript that no
// line of it names when they are written: its session memory (Claude
// Code's notes on the session, <project>/<session id>/session-memory/,
// rewritten as the session goes on), and tool-results files written after
// the line that names them was imported, and file backups put in the
// session's file-history directory after the lines that name them were
// imported (lateCaptures). An import takes them in after
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
	changed := func(t int64) bool {
		return t > src.SideSeen && (prev == nil || t > prev.MTime)
	}
	// seen: the newest time of the files looked at and held or taken in;
	// whole: none failed to read (one that did is looked at again).
	seen, whole := int64(0), true
	// absent: the walk listed dir and found no directory name in it
	// (what a tree without side files is: a no-op import of 20
	// transcripts made 28 fewer system calls).
	absent := func(dir, name string) bool {
		kids, ok := rep.subdirs[dir]
		return ok && !kids[name]
	}
	sideDir := func(session, name string) bool { // might be there
		proj := claudeProjectDir(src.Path)
		return !absent(proj, session) && !absent(filepath.Join(proj, session), name)
	}
	// The tool-results directory the session's lines name files in: its
	// own session directory's, or, for a subagent, its parent's. Files
	// in it only: a new session took in all its lines named.
	results := filepath.Join(claudeProjectDir(src.Path), sideSessionDir(src.Path), "tool-results")
	var (
		memory, leftOut          []sideFile
		fresh, lateResults       bool
		history                  string
		lateHistory              bool
		resultsBefore, seenFiles int64 = math.MaxInt64, 0
	)
	lookMemory := func() {
		memory, leftOut = r.sessionMemoryFiles(filepath.Join(filepath.Dir(src.Path), claudeFileID(src.Path), "session-memory"), rep)
		for _, f := range memory {
			fresh = fresh || changed(f.changed)
		}
		for _, f := range leftOut {
			fresh = fresh || changed(f.changed)
			seenFiles = max(seenFiles, f.changed)
		}
	}
	// resultsBefore: what is recorded as looked at stays before the
	// tool-results directory's time when it is not looked at (a new
	// session's): a file that came there after its line was read
	// (missing), before a session-memory note taken in now, is looked
	// for at the next import, not passed over for good.
	lookResults := func() {
		if st, err := r.fs.Stat(results); err == nil && st.IsDir() {
			if res.Status == ImportNew || res.Status == ImportRewritten {
				resultsBefore = min(resultsBefore, sideTime(st)-1)
			} else if lateResults = changed(sideTime(st)); lateResults {
				seenFiles = max(seenFiles, sideTime(st)) // looked at below
			}
		}
	}
	memoryPassed, resultsPassed := false, false
	if !isSubagentFile(src.Path) {
		if memoryPassed = !sideDir(claudeFileID(src.Path), "session-memory"); !memoryPassed {
			lookMemory()
		}
	}
	if resultsPassed = !sideDir(sideSessionDir(src.Path), "tool-results"); !resultsPassed {
		lookResults()
	}
	// The session's file-history directory: file backups put there after
	// the lines that name them were imported (lateCaptures). A new
	// session's import looked for them at its lines: what comes there
	// after is looked for at the next import, as for tool-results.
	if !isSubagentFile(src.Path) && m.Workspace != "" {
		if d := claudeFileHistory(src.Path, src.ID); d != "" {
			if st, err := r.fs.Stat(d); err == nil && st.IsDir() {
				if res.Status == ImportNew || res.Status == ImportRewritten {
					resultsBefore = min(resultsBefore, sideTime(st)-1)
				} else if lateHistory = changed(sideTime(st)); lateHistory {
					history, seenFiles = d, max(seenFiles, sideTime(st))
				}
			}
		}
	}
	if fresh || lateResults || lateHistory {
		// The side-file mark is about to move, to the time of what is
		// taken now: a side directory the walk found absent could have
		// been made since, before that time, and would then be passed
		// over by every import after. Look at it now (a no-op import,
		// the common case, still makes no look of its own).
		if memoryPassed {
			lookMemory()
		}
		if resultsPassed {
			lookResults()
		}
	}
	// One left out is reported once, as it comes (or changes), not at
	// every import of the history after: its time counts as looked at.
	for _, f := range leftOut {
		if changed(f.changed) {
			rep.problem(ImportProblem{File: f.path, Reason: f.why})
		}
	}
	seen = max(seen, seenFiles)
	if !fresh && !lateResults && !lateHistory {
		return nil, nil
	}
	late := newLateBackups()
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
		if lateHistory {
			if err := r.noteBackups(&late, m, ev); err != nil {
				return err
			}
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
		seen = max(seen, f.changed)
		if k, ok := held[f.name]; ok && k == cas.ID(data) {
			continue
		}
		put, err := r.Store.Put(cas.KindMemory, data)
		if err != nil {
			return nil, fmt.Errorf("store %s: %w", f.path, err)
		}
		evs = append(evs, eventlog.Event{Kind: eventlog.KindNote, Label: sessionMemoryLabel + f.name, Body: put.ID, Time: f.mtime})
		res.SessionMemory++
		res.SideBytesIn += int64(len(data))
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
		res.SideBytesIn += int64(len(data))
	}
	if lateHistory {
		caps, ok, err := r.lateCaptures(&late, m, history, rep, &res.BackupsLateTaken, &res.SideBytesIn)
		if err != nil {
			return nil, err
		}
		whole = whole && ok
		evs = append(evs, caps...)
		res.BackupsLate = 0 // (lateBackups): taken in now, or not there
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
		if _, err := appendRelabeling(r.Log, m.ID, evs[:k]); err != nil {
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
	changed    int64  // sideTime
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
		leftOut = append(leftOut, sideFile{path: path, mtime: fi.ModTime(), changed: sideTime(fi), why: why})
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
					out = append(out, sideFile{path: path, name: prefix + e.Name(), mtime: fi.ModTime(), changed: sideTime(fi)})
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

// lateBackupsLabel begins the label of a note event that holds a capture
// (its body, a manifest) of the Claude Code file backups put in the
// session's file-history directory after the lines that name them were
// imported: the seq it stands at follows, the seq after the first line
// that named them, where the import that found them there would have
// captured them. Diff and rewind take it as a capture at that seq
// (capturedStates); a note, not a checkpoint, so that a rook that does
// not know it does not take it for a capture at the session's end (a
// rewind would put back the files as they were before their first edit).
const lateBackupsLabel = "claude-code:file-history-late@"

// lateCaptureAt is the seq a late capture of file backups stands at, if
// ev is one.
func lateCaptureAt(ev eventlog.Event) (uint64, bool) {
	at, ok := strings.CutPrefix(ev.Label, lateBackupsLabel)
	if !ok || ev.Kind != eventlog.KindNote {
		return 0, false
	}
	n, err := strconv.ParseUint(at, 10, 64)
	if err != nil || n >= ev.Seq {
		return 0, false
	}
	return n, true
}

// LateCaptureLabel says whether a note with this label is taken by diff
// and rewind as a late capture of file backups (lateCaptureAt): its body
// must then be a capture manifest, or both fail on the session for good.
// `session append` refuses one that is not.
func LateCaptureLabel(label string) bool {
	at, ok := strings.CutPrefix(label, lateBackupsLabel)
	if !ok {
		return false
	}
	_, err := strconv.ParseUint(at, 10, 64)
	return err == nil
}

// namedBackup is a file backup a session's lines name, at the line that
// names it first.
type namedBackup struct {
	name string // "": the file was created (nothing to back up)
	at   uint64 // the seq after the line
	time time.Time
}

// backupAt is a path at a seq: where a capture of it stands.
type backupAt struct {
	path string
	at   uint64
}

// lateBackups gathers, from a session's events, the file backups its
// lines name, each at the line that names it first, and where its
// captures stand for which paths.
type lateBackups struct {
	seen     map[string]bool          // backupKey: named
	named    map[backupAt]namedBackup // the backup a line names first for a path
	captured map[backupAt]bool        // the paths a capture at each seq holds
	mapper   lineMapper
}

func newLateBackups() lateBackups {
	return lateBackups{seen: map[string]bool{}, named: map[backupAt]namedBackup{}, captured: map[backupAt]bool{}}
}

// noteBackups notes what ev says of the session's file backups. A capture
// an import made of a line's backups (captureBackupsLabel) follows the
// line's event: it stands at the seq after that event, as the late ones
// for that line do.
func (r *Rook) noteBackups(late *lateBackups, m eventlog.Meta, ev eventlog.Event) error {
	at, isLate := lateCaptureAt(ev)
	switch {
	case isLate || ev.Kind == eventlog.KindCheckpoint && ev.Label == captureBackupsLabel:
		if !isLate {
			at = ev.Seq
		}
		man, err := r.ReadManifest(ev.Body)
		if err != nil {
			return fmt.Errorf("the capture at #%d: %w", ev.Seq, err)
		}
		for p := range man.Files {
			late.captured[backupAt{p, at}] = true
		}
		for _, p := range man.Absent {
			late.captured[backupAt{p, at}] = true
		}
	case ev.Kind == eventlog.KindNote && (strings.Contains(ev.Label, "file-history-snapshot") || strings.Contains(ev.Label, "file-history-delta") || strings.Contains(ev.Label, " +")):
		// A snapshot's (or delta's) line, or a run of notes that may hold
		// some (mergedLine: labelled by its first line, " +n" when they
		// differ).
		body, err := r.Body(ev)
		if err != nil {
			return err
		}
		if late.mapper == nil {
			late.mapper = newClaudeMapper(m.Source.Path) // (a snapshot's backups need no state)
		}
		for _, line := range sourceLines(body) {
			if bytes.Contains(line, []byte(`"file-history-snapshot"`)) || bytes.Contains(line, []byte(`"file-history-delta"`)) {
				late.note(m, late.mapper.mapLine(trimNewline(line)), ev)
			}
		}
	}
	return nil
}

// note notes the backups a snapshot line of ev names, each at the first
// line that names it, as captureBackups takes them: a backup named again
// is not taken again, and of two a run of lines names for one path, the
// first.
func (late *lateBackups) note(m eventlog.Meta, ml mappedLine, ev eventlog.Event) {
	for rel, name := range ml.Backups {
		key := ml.backupKey(rel, name)
		if late.seen[key] {
			continue
		}
		late.seen[key] = true
		if filepath.IsAbs(rel) {
			if r, err := filepath.Rel(m.Workspace, rel); err == nil {
				rel = r // an absolute path inside the workspace
			}
		}
		rel = filepath.ToSlash(rel)
		k := backupAt{rel, ev.Seq + 1}
		if _, ok := late.named[k]; ok || checkRel(rel) != nil {
			continue
		}
		late.named[k] = namedBackup{name: name, at: k.at, time: ev.Time}
	}
}

// lateCaptures makes, of the file backups in the session's file-history
// directory dir that its lines name and no capture of the session holds
// at the line that names them first, a capture per line
// (lateBackupsLabel): the backups put there after the lines were
// imported, every version of a file (@v1, @v2...) at its own line. A path
// a line names with no backup (a file the agent created) is captured
// absent there, as an import that found the directory would have. Each is
// taken once: once captured, the next import finds it in late.captured. A
// backup still not there is left for an import after (the directory
// changes when it comes); one there that does not read is reported, and
// the directory is looked at again (ok false).
func (r *Rook) lateCaptures(late *lateBackups, m eventlog.Meta, dir string, rep *ImportReport, taken *int, takenBytes *int64) (evs []eventlog.Event, ok bool, err error) {
	ok = true
	byAt := map[uint64]*Manifest{}
	keys := make([]backupAt, 0, len(late.named))
	for k := range late.named {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b backupAt) int {
		if a.at != b.at {
			return cmp.Compare(a.at, b.at)
		}
		return strings.Compare(a.path, b.path)
	})
	manifest := func(b namedBackup) *Manifest {
		man := byAt[b.at]
		if man == nil {
			// Captured at the line's time, as at its import: the same
			// manifest whichever import takes it.
			man = &Manifest{V: manifestVersion, Root: m.Workspace, CapturedAt: b.time.UTC(), Label: captureBackupsLabel, Files: map[string]FileEntry{}}
			byAt[b.at] = man
		}
		return man
	}
	for _, k := range keys {
		b, p := late.named[k], k.path
		// A name with a "/", or "." or "..", is no file in dir: ".."
		// read dir's parent, reported (a directory), and left dir to be
		// looked at again, the session read again, at every import.
		if late.captured[k] || b.name == "." || b.name == ".." || strings.ContainsAny(b.name, "/\\") {
			continue
		}
		if b.name == "" {
			man := manifest(b)
			man.Absent = append(man.Absent, p) // (sorted: keys are)
			continue
		}
		path := filepath.Join(dir, b.name)
		data, err := readSideFile(r.fs, path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			rep.problem(ImportProblem{File: path, Reason: fmt.Sprintf("the file backup of %s: %v: not taken in", p, err)})
			ok = false
			continue
		}
		put, err := r.Store.Put(cas.KindFile, data)
		if err != nil {
			return nil, false, fmt.Errorf("store %s: %w", path, err)
		}
		man := manifest(b)
		man.Files[p] = FileEntry{ID: put.ID, Size: int64(len(data)), Mode: FileMode{Perm: 0o644}}
		man.TotalBytes += int64(len(data))
		*taken++
		*takenBytes += int64(len(data))
	}
	ats := slices.Sorted(maps.Keys(byAt))
	for _, at := range ats {
		man := byAt[at]
		id, err := r.StoreManifest(man)
		if err != nil {
			return nil, false, err
		}
		evs = append(evs, eventlog.Event{Kind: eventlog.KindNote, Label: lateBackupsLabel + strconv.FormatUint(at, 10), Body: id, Time: man.CapturedAt})
	}
	return evs, ok, nil
}

// sideTime is when a side file or directory last changed, as the marks
// (side_seen_ns, the transcript's recorded time) are compared with: the
// later of its modification time and its change time. A copy that keeps
// the times (cp -p, tar, rsync -a) sets the modification time back, to
// before the mark, but not the change time, which the copy sets to when
// it was made: the file is looked at (and, held already, not taken
// twice). The change time comes with the stat: no more reads. (Where the
// file system gives none, it is the modification time alone.)
func sideTime(fi fs.FileInfo) int64 {
	return max(fi.ModTime().UnixNano(), vfs.ChangeTime(fi))
}
