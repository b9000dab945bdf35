package agent

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/units"
	"github.com/rookhq/rook/internal/vfs"
)

// ImportOptions say what to import.
type ImportOptions struct {
	Format string   // FormatClaudeCode or FormatCodex
	Paths  []string // files or directories; none: the format's defaults in AgentDir
	// AgentDir is the agent's own directory, for the defaults:
	// AgentDirOf says where it is.
	AgentDir string
	// Progress, when set, is called as source bytes are taken in: done
	// and total count the files' own bytes, a .zst's compressed ones (its
	// place in its decompressed lines scaled to them: compressedAt).
	Progress func(done, total int64)
	// MinCut overrides MinCutString (tests).
	MinCut int
	// ChunkBytes overrides importChunkBytes (tests).
	ChunkBytes int
	// Stop, when set, is asked before each file is taken in: true stops
	// the import there (an interrupt), the files taken in kept and the
	// others left for the next import (ImportReport.Stopped).
	Stop func() bool
	// Retention, when set, is the store's retention policy: the report
	// then names the sessions of the imported files that it would delete
	// (BeyondRetention), so that the next maintain deletes no history
	// unannounced.
	Retention *RetentionPolicy

	walked time.Time // when the files were listed (statToRecord)
}

// chunkBytes is the size over which a file is streamed, streamChunkBytes
// the chunk a streamed file is read in: ChunkBytes (tests) sets both.
func (o ImportOptions) chunkBytes() int       { return o.chunkOr(importChunkBytes) }
func (o ImportOptions) streamChunkBytes() int { return o.chunkOr(streamChunkBytes) }

func (o ImportOptions) chunkOr(n int) int {
	if o.ChunkBytes > 0 {
		return o.ChunkBytes
	}
	return n
}

// FormatName is the name of the agent whose transcripts a format is.
func FormatName(format string) string {
	switch format {
	case FormatClaudeCode:
		return "Claude Code"
	case FormatCodex:
		return "Codex"
	}
	return format
}

// AgentDirOf is a format's agent's own directory: where CLAUDE_CONFIG_DIR
// or CODEX_HOME says (getenv reads them), as the agents themselves read
// them, else ~/.claude or ~/.codex under home.
func AgentDirOf(format, home string, getenv func(string) string) string {
	if format == FormatCodex {
		if d := getenv("CODEX_HOME"); d != "" {
			return d
		}
		return filepath.Join(home, ".codex")
	}
	if d := getenv("CLAUDE_CONFIG_DIR"); d != "" {
		return d
	}
	return filepath.Join(home, ".claude")
}

// DefaultImportDir is where a format keeps its transcripts, in its agent's
// directory (AgentDirOf).
func DefaultImportDir(format, agentDir string) string {
	if format == FormatCodex {
		return filepath.Join(agentDir, "sessions")
	}
	return filepath.Join(agentDir, "projects")
}

// codexArchive is where Codex moves the rollouts of archived sessions,
// beside sessions.
func codexArchive(agentDir string) string { return filepath.Join(agentDir, "archived_sessions") }

// Import statuses of a file.
const (
	ImportNew       = "new"       // a new session
	ImportGrown     = "grown"     // new lines appended to its session
	ImportUnchanged = "unchanged" // nothing new
	ImportRewritten = "rewritten" // changed other than by growing: a new session
	ImportFailed    = "failed"    // unreadable: skipped
	// ImportGone: listed, then gone (deleted or moved away) before it was
	// read: nothing taken in, nothing wrong with it.
	ImportGone = "gone"
)

// ImportedFile is what happened to one source file.
type ImportedFile struct {
	Path    string       `json:"path"`
	Status  string       `json:"status"`
	Session *eventlog.ID `json:"session,omitempty"`
	Parent  *eventlog.ID `json:"parent,omitempty"`
	// Fork: Parent is the session this one was forked from (and whose
	// lines it copies), not one that spawned it.
	Fork     bool   `json:"fork,omitempty"`
	Lines    int    `json:"lines"`    // lines taken in this time
	Events   int    `json:"events"`   // events appended
	BytesIn  int64  `json:"bytes_in"` // of the transcript's lines taken in
	Unparsed int    `json:"unparsed"`
	Unknown  int    `json:"unknown"` // lines of entry types rook does not know
	Note     string `json:"note,omitempty"`
	// MovedFrom: the path the session was imported from before, where the
	// file is no longer (sourceNames).
	MovedFrom string `json:"moved_from,omitempty"`
	// Continued: an import before this one was cut short (killed, a
	// crash) after it took in lines of the file and before it recorded
	// them: this one took it up from there (grown, or unchanged when the
	// file did not grow since), and reported what that one could not.
	Continued bool `json:"continued,omitempty"`
	// Directory: Path is a directory the walk could not list (failed), not
	// a file: its files, if any, were not found.
	Directory bool `json:"directory,omitempty"`
	// ToolResults: Claude Code tool-results files taken in this time
	// (attachToolResults); ToolResultsMissing: those its lines name that
	// were not there (only their preview is kept).
	ToolResults        int `json:"tool_results,omitempty"`
	ToolResultsMissing int `json:"tool_results_missing,omitempty"`
	// BackupsMissing: Claude Code file backups its lines name that were
	// not in the session's file-history directory (captureBackups): their
	// files' changes are not in `rook session diff`.
	BackupsMissing int `json:"backups_missing,omitempty"`
	// BackupsLate: of a file unchanged since its session was imported
	// with no file backups, the backups its session's file-history
	// directory holds now (lateBackups) that this import did not look at
	// to take in (lateCaptures): ones no line names.
	BackupsLate int `json:"backups_late,omitempty"`
	// BackupsLateTaken: file backups put in the session's file-history
	// directory after the lines that name them were imported, taken in
	// this time (lateCaptures).
	BackupsLateTaken int `json:"backups_late_taken,omitempty"`
	// SessionMemory: Claude Code session-memory files (new, or changed
	// since) taken in this time (takeSideFiles).
	SessionMemory int `json:"session_memory,omitempty"`
	// SideBytesIn: the bytes of the files read beside the transcript and
	// taken in this time (tool-results files, file-history backups,
	// session-memory files); BytesIn counts the transcript's alone.
	SideBytesIn int64 `json:"side_bytes_in,omitempty"`
}

// ImportProblem is a line that did not parse, the lines of a file of an
// entry type rook does not know (at the first of them), a file that
// could not be read, or a check of the import's that could not be made.
type ImportProblem struct {
	File   string `json:"file"` // "": a problem of the import, not of one file's
	Line   int    `json:"line,omitempty"`
	Reason string `json:"reason"`
	// LeftOut, on the last problem of a file the list keeps: how many more
	// of the file's the list leaves out (ImportReport.ProblemsLeftOut
	// counts them too).
	LeftOut int `json:"left_out,omitempty"`
}

// MaxImportProblems is how many problems a report lists (all are counted).
const MaxImportProblems = 200

// ImportReport sums an import up.
type ImportReport struct {
	// subdirs are, of each directory the walk listed, the names of the
	// directories in it: takeSideFiles passes over a side directory the
	// walk found absent, without a stat or a listing of its own.
	subdirs map[string]map[string]bool
	// lastProblem is, of each file with a problem in Problems, where its
	// last is (ImportReport.problem): a problem of it left out is counted
	// there (ImportProblem.LeftOut). An entry is checked before it is used
	// (a file's problems taken back, importFile, leave it stale).
	lastProblem  map[string]int
	Format       string          `json:"format"`
	Files        []ImportedFile  `json:"files"`
	Sessions     int             `json:"sessions_new"` // files seen for the first time (a rewritten file's new session is counted in Rewritten)
	Grown        int             `json:"sessions_grown"`
	Unchanged    int             `json:"files_unchanged"`
	Rewritten    int             `json:"files_rewritten"`
	Failed       int             `json:"files_failed"`
	Gone         int             `json:"files_gone"`      // listed, then gone before they were read (ImportGone)
	Linked       int             `json:"children_linked"` // sessions of earlier imports linked to a parent imported now
	Events       int             `json:"events"`
	Lines        int             `json:"lines"`
	BytesIn      int64           `json:"bytes_in"`      // of transcripts
	SideBytesIn  int64           `json:"side_bytes_in"` // of the files beside them (ImportedFile)
	StoredBefore int64           `json:"stored_before"` // the store's stored bytes
	StoredAfter  int64           `json:"stored_after"`
	Unparsed     int             `json:"unparsed"`
	Unknown      int             `json:"unknown"` // lines of entry types rook does not know
	Problems     []ImportProblem `json:"problems,omitempty"`
	// ProblemsLeftOut: how many problems the list leaves out (it keeps
	// the first MaxImportProblems).
	ProblemsLeftOut int `json:"problems_left_out,omitempty"`
	// ToolResults and ToolResultsMissing sum the files' (ImportedFile).
	ToolResults        int `json:"tool_results"`
	ToolResultsMissing int `json:"tool_results_missing"`
	// BackupsMissing sums the files' (ImportedFile).
	BackupsMissing int `json:"backups_missing"`
	// BackupsLate sums the files' (ImportedFile), LateSessions are their
	// sessions.
	BackupsLate int `json:"backups_late"`
	// BackupsLateTaken sums the files' (ImportedFile).
	BackupsLateTaken int           `json:"backups_late_taken"`
	LateSessions     []eventlog.ID `json:"backups_late_sessions,omitempty"`
	// SessionMemory sums the files' (ImportedFile).
	SessionMemory int `json:"session_memory"`
	// BeyondRetention are the sessions of the imported files that `rook
	// store prune` and `maintain` would delete now (ImportOptions.Retention).
	BeyondRetention []SessionRef `json:"beyond_retention,omitempty"`
	// ZstBeside are the .zst rollouts left out because their plain file
	// is beside them (the same rollout, which was read).
	ZstBeside []string `json:"zst_beside,omitempty"`
	// ForksTagged are the sessions of Codex forks imported before rook
	// tagged them (forkTag), tagged now that their files were met again.
	ForksTagged int `json:"forks_tagged"`
	// Paths are where the import looked (absolute): the files and
	// directories named, else the agent's own directory (DefaultImportDir),
	// so that a summary of nothing found says where nothing was.
	Paths []string `json:"paths"`
	// Stopped: ImportOptions.Stop stopped the import before NotRead, the
	// files it had found and not taken in (a run again takes them in; the
	// files in Files are in, and are not taken in twice).
	Stopped bool     `json:"stopped,omitempty"`
	NotRead []string `json:"not_read,omitempty"`
	// OtherJSONL counts the .jsonl files a Codex import's walk passed
	// over: not named rollout-*, they are not Codex rollouts (Claude Code
	// transcripts given to the wrong import, most likely).
	OtherJSONL int `json:"other_jsonl,omitempty"`
}

// StoredAdded is what the import added to the store's stored bytes.
func (rep *ImportReport) StoredAdded() int64 { return rep.StoredAfter - rep.StoredBefore }

// problem lists p, if the list has room, and says where (-1: left out).
func (rep *ImportReport) problem(p ImportProblem) int {
	if len(rep.Problems) < MaxImportProblems {
		rep.Problems = append(rep.Problems, p)
		if p.File != "" {
			if rep.lastProblem == nil {
				rep.lastProblem = map[string]int{}
			}
			rep.lastProblem[p.File] = len(rep.Problems) - 1
		}
		return len(rep.Problems) - 1
	}
	rep.leftOut(p.File)
	return -1
}

// lastListed says where file's last problem listed is, and how many of its
// it counts as left out (-1: none listed).
func (rep *ImportReport) lastListed(file string) (int, int) {
	if i, ok := rep.lastProblem[file]; ok && file != "" && i < len(rep.Problems) && rep.Problems[i].File == file {
		return i, rep.Problems[i].LeftOut
	}
	return -1, 0
}

// leftOut counts a problem of file (or of the import: "") the list has no
// room for, at the file's last problem listed if it has one: the summary
// says how many more a file has, not only the list's. The memory it takes
// is the list's (MaxImportProblems), however many are left out.
func (rep *ImportReport) leftOut(file string) {
	rep.ProblemsLeftOut++
	if i, _ := rep.lastListed(file); i >= 0 {
		rep.Problems[i].LeftOut++
	}
}

// unparsedLine reports line of path, which did not parse, for res, and
// records it in rec, which the file's session keeps until the report is
// made (Source.Unreported). Line 0 is one an earlier import counted in
// such a record without keeping it: counted, and left out of the list.
func (rep *ImportReport) unparsedLine(res *ImportedFile, rec *eventlog.Unreported, path string, line int, reason string) {
	res.Unparsed++
	rec.Lines++
	if line <= 0 {
		rep.leftOut(path)
		return
	}
	rep.problem(ImportProblem{File: path, Line: line, Reason: reason})
	if len(rec.First) < eventlog.UnreportedKept {
		rec.First = append(rec.First, eventlog.UnreportedLine{Line: line, Reason: reason})
	}
}

// unreported reports, for res, the lines of path that did not parse that
// an earlier import took in and recorded (u: Source.Unreported) but was
// cut short before it reported them; rec records them again.
func (rep *ImportReport) unreported(res *ImportedFile, rec *eventlog.Unreported, path string, u *eventlog.Unreported) {
	if u == nil {
		return
	}
	for _, l := range u.First {
		rep.unparsedLine(res, rec, path, l.Line, l.Reason)
	}
	for n := len(u.First); n < u.Lines; n++ {
		rep.unparsedLine(res, rec, path, 0, "")
	}
}

// Import takes transcripts of another agent into the store: each source
// file becomes a session (subagents' files child sessions of their
// parent's), each line one event whose body is the line itself, its large
// strings stored once as objects of their own. Importing again is
// idempotent; a file that grew gets its new lines; a file changed any
// other way is imported as a new session. A line that does not parse is
// kept byte for byte and reported; a file that cannot be read is reported
// and skipped.
func (r *Rook) Import(opts ImportOptions) (rep ImportReport, err error) {
	rep = ImportReport{Format: opts.Format}
	if opts.Format != FormatClaudeCode && opts.Format != FormatCodex {
		return rep, fmt.Errorf("unknown transcript format %q: use %s or %s", opts.Format, FormatClaudeCode, FormatCodex)
	}
	// An import before this one on the same Rook returned its report: the
	// lines it reported are not reported again (reported).
	if err := r.clearReported(); err != nil {
		return rep, err
	}
	// An import writes in bulk what is read back in bulk (a session, a
	// search): big blocks compress it together, and its barriers, which
	// write out the blocks open, come by the bytes of events rather than
	// every 256 of them.
	if err := r.Store.SetBulk(true); err != nil {
		return rep, err
	}
	r.Log.SetBulk(true)
	defer func() {
		r.Log.SetBulk(false)
		if berr := r.Store.SetBulk(false); err == nil {
			err = berr
		}
	}()
	if opts.MinCut <= 0 {
		opts.MinCut = MinCutString
	}
	opts.walked = r.clock.Now()
	files, total, err := r.importFiles(opts.Format, r.importPaths(opts), &rep)
	if err != nil && len(opts.Paths) == 0 && errors.Is(err, fs.ErrNotExist) {
		return rep, fmt.Errorf("%w (where %s keeps its transcripts by default): name the directory or files to import", err, FormatName(opts.Format))
	}
	if err != nil {
		return rep, err
	}
	known, atPath, err := r.importedSessions(opts.Format)
	if err != nil {
		return rep, err
	}
	names := &sourceNames{format: opts.Format, known: known, atPath: atPath, movedAway: map[eventlog.ID]bool{}, beside: map[string]bool{}, pending: map[string]int{}}
	if opts.Format == FormatClaudeCode {
		names.continuedIn = map[string]bool{}
		for _, m := range known {
			if c := m.Source.ContinuedIn; c != "" {
				names.continuedIn[c] = true
			}
		}
	}
	for _, p := range rep.ZstBeside {
		names.beside[p] = true
	}
	st, err := r.Store.Stats()
	if err != nil {
		return rep, err
	}
	rep.StoredBefore = st.Stored
	var done, unflushed int64
	fresh := map[string]bool{}
	for i, f := range files {
		if n, ok := r.readTo[f.path]; ok && (n < f.size || strings.HasSuffix(f.path, ".zst")) {
			// Reread's scratch store: the file as an import of the
			// store it repairs found it, n bytes that were all there
			// was to read. Without its times, so that no line of it
			// is taken for one still being written (beingWritten: that
			// import took in what it recorded) and no stat is recorded
			// for the next of Reread's imports to find it unchanged.
			if !strings.HasSuffix(f.path, ".zst") {
				files[i].size = n
			}
			files[i].stat = eventlog.FileStat{}
			f = files[i]
		}
		m, seen := known[f.path]
		fresh[f.path] = !seen
		// What the file system says is enough to know a file unchanged
		// (its size, modification and change times, as when its session
		// came to hold all of it): a large history is not read again.
		files[i].unchanged = seen && sameStat(m.Source.Stat, &f.stat)
		if seen {
			files[i].held, files[i].heldBy, files[i].heldSum = m.Source.Size, m.ID, m.Source.SHA256
		}
		// A fork waits for the files of its parent's id still to take in,
		// new or grown (sourceNames.waits): one unchanged is in already.
		if id := names.fileID(f.path); id != "" && !files[i].unchanged {
			names.pending[id]++
		}
	}
	ahead := r.startReadAhead(opts.Format, files, fresh, opts.MinCut, opts.chunkBytes())
	defer ahead.close()
	// importOne imports a file and sums it up in rep.
	importOne := func(f sourceFile, prep *mappedSource, release func()) error {
		var prev *eventlog.FileStat // what the file's session recorded before
		if m, ok := known[f.path]; ok {
			prev = m.Source.Stat
		}
		res := r.importFile(opts, f, prep, names, &rep, func(n int64) {
			if opts.Progress != nil {
				opts.Progress(done+min(n, f.size), total)
			}
		})
		release()
		if res.Status != ImportFailed {
			if m, err := r.takeSideFiles(known[f.path], prev, &res, &rep); err != nil {
				// Its lines are in: only the side files are not.
				why := "side files not taken in: " + err.Error()
				res.Note = strings.TrimPrefix(res.Note+"; "+why, "; ")
				rep.problem(ImportProblem{File: f.path, Reason: why})
			} else if m != nil {
				known[f.path] = *m
			}
		}
		if !f.unchanged {
			names.taken(f.path)
		}
		if unflushed += res.BytesIn + res.SideBytesIn; unflushed >= importFlushBytes {
			if err := r.Log.Flush(); err != nil {
				return err
			}
			unflushed = 0
		}
		rep.Files = append(rep.Files, res)
		done += f.size
		if opts.Progress != nil {
			opts.Progress(done, total)
		}
		rep.Lines += res.Lines
		rep.Events += res.Events
		rep.BytesIn += res.BytesIn
		rep.SideBytesIn += res.SideBytesIn
		rep.Unparsed += res.Unparsed
		rep.Unknown += res.Unknown
		rep.ToolResults += res.ToolResults
		rep.ToolResultsMissing += res.ToolResultsMissing
		rep.BackupsMissing += res.BackupsMissing
		rep.SessionMemory += res.SessionMemory
		rep.BackupsLateTaken += res.BackupsLateTaken
		if res.BackupsLate > 0 && res.Session != nil {
			rep.BackupsLate += res.BackupsLate
			rep.LateSessions = append(rep.LateSessions, *res.Session)
		}
		switch res.Status {
		case ImportNew:
			rep.Sessions++
		case ImportGrown:
			rep.Grown++
		case ImportUnchanged:
			rep.Unchanged++
		case ImportRewritten:
			rep.Rewritten++
		case ImportFailed:
			rep.Failed++
		case ImportGone:
			rep.Gone++
		}
		return nil
	}
	var waiting []waitingFile // copies, after what they copy (sourceNames.waits)
	stop := func() bool { return opts.Stop != nil && opts.Stop() }
	for i, f := range files {
		prep := ahead.next(i)
		if stop() {
			ahead.release(f)
			rep.Stopped = true
			for _, g := range files[i:] {
				rep.NotRead = append(rep.NotRead, g.path)
			}
			break
		}
		if id, ok := names.waits(prep); ok {
			ahead.release(f)
			waiting = append(waiting, waitingFile{f, id})
			continue
		}
		if err := importOne(f, prep, func() { ahead.release(f) }); err != nil {
			return rep, err
		}
	}
	if len(waiting) > 0 && (rep.Stopped || stop()) {
		rep.Stopped = true
		for _, w := range waiting {
			rep.NotRead = append(rep.NotRead, w.f.path)
		}
		slices.Sort(rep.NotRead)
		waiting = nil
	}
	for len(waiting) > 0 {
		if stop() {
			rep.Stopped = true
			for _, w := range waiting {
				rep.NotRead = append(rep.NotRead, w.f.path)
			}
			break
		}
		// The first whose original came in since, else the first: a
		// copy of a copy comes after it.
		k := 0
		for j, w := range waiting {
			if names.ready(w.id) {
				k = j
				break
			}
		}
		f := waiting[k].f
		waiting = slices.Delete(waiting, k, k+1)
		prep := r.prepareSource(opts.Format, f, fresh[f.path], opts.MinCut, opts.chunkBytes())
		if err := importOne(f, prep, func() {}); err != nil {
			return rep, err
		}
	}
	if err := r.Log.Flush(); err != nil {
		return rep, err
	}
	if err := r.tagForks(known, &rep); err != nil {
		return rep, err
	}
	linkContinuations(known)
	if err := r.linkParents(known, &rep); err != nil {
		return rep, err
	}
	if opts.Retention != nil {
		// A check only, after the files are in: a session of the store
		// that does not read makes it a problem of the report (which
		// says what was imported), not the import's failure.
		if err := r.beyondRetention(*opts.Retention, &rep); err != nil {
			rep.problem(ImportProblem{Reason: err.Error() + " (the files were imported; the check was not made)"})
		}
	}
	if st, err = r.Store.Stats(); err == nil {
		rep.StoredAfter = st.Stored
	}
	if err == nil {
		// Last: cleared by Close, once everything else is written.
		r.reported(known, &rep)
	}
	return rep, err
}

// reported notes, of the sessions of the files in rep, those whose
// metadata keeps lines that did not parse to report (Source.Unreported):
// rep reports them, and is made. A file that failed keeps them: its lines
// are not all in. clearReported clears them, as the last write of the
// store's close (Close) or, on a Rook that imports again before it is
// closed, at the start of the next import, whose caller has the report:
// an import cut short before then (killed while the store's index is
// written, as much as before) has the next one report them. Only a kill
// between the clearing write and the printing of the summary loses them.
func (r *Rook) reported(known map[string]eventlog.Meta, rep *ImportReport) {
	for _, f := range rep.Files {
		m, ok := known[f.Path]
		if f.Status == ImportFailed || f.Status == ImportGone || !ok || m.Source == nil || m.Source.Unreported == nil {
			continue
		}
		r.reportedIDs = append(r.reportedIDs, m.ID)
	}
}

// clearReported clears the records of the lines that did not parse that
// an import reported (reported): each session's metadata is written
// without them, if it still has them.
func (r *Rook) clearReported() error {
	for len(r.reportedIDs) > 0 {
		id := r.reportedIDs[0]
		m, err := r.Log.ReadMeta(id)
		if err != nil {
			return fmt.Errorf("session %s: record that its lines that did not parse are reported: %w (the next import reports them again)", id, err)
		}
		if m.Source != nil && m.Source.Unreported != nil {
			src := *m.Source
			src.Unreported = nil
			m.Source = &src
			if err := r.Log.UpdateMeta(m); err != nil {
				return fmt.Errorf("session %s: record that its lines that did not parse are reported: %w (the next import reports them again)", id, err)
			}
		}
		r.reportedIDs = r.reportedIDs[1:]
	}
	r.reportedIDs = nil
	return nil
}

// beyondRetention names the sessions of the imported files that the
// policy would delete now: beyond MaxSessions, most often, when a long
// history comes in (the age limit counts an import as new, lastWritten).
func (r *Rook) beyondRetention(p RetentionPolicy, rep *ImportReport) error {
	plan, err := r.Prune(p, true)
	if err != nil {
		return fmt.Errorf("check the imported sessions against the retention policy: %w", err)
	}
	ours := map[eventlog.ID]bool{}
	for _, f := range rep.Files {
		if f.Session != nil {
			ours[*f.Session] = true
		}
	}
	for _, d := range plan.Deleted {
		if ours[d.ID] {
			rep.BeyondRetention = append(rep.BeyondRetention, d)
		}
	}
	return nil
}

// waitingFile is a file an import takes in after the others
// (sourceNames.waits), and the source session id it waits for.
type waitingFile struct {
	f  sourceFile
	id string
}

// waits says whether a file new to the store, read and mapped whole
// (prep), begins with a copy of another session's lines that no file
// imported yet is known for: it is then imported after the others, and
// the source session id it waits for is returned (ready says when it came
// in). The copy's totals leave its tokens out when that session is in
// first: it spent them (a Claude Code continuation's copied model lines, a Codex
// fork's copied token_counts: fileImport.copiedLine). A file that waits for a session that is not
// in the import is only imported later. A file over 64 MiB (read a chunk
// at a time, not mapped ahead) waits by what its first MiB says
// (mappedSource.headInfo), as a smaller one does; one whose first lines
// there say no session (a line over a MiB) does not.
//   - A Claude Code session sent to the background: its copied lines
//     carry "sessionKind":"bg" (claudeMapper.continuedIn), looked for in
//     its first 64 KiB, and it waits until a file says it continues the
//     session (Source.ContinuedIn): file names are random uuids, so half
//     would come before it.
//   - A Claude Code fork (forkedFrom): it waits for its parent while a
//     parent's file (named by its session id) is one of the import's
//     files not taken in yet, new or grown: a fork copies its parent up to
//     its last line, which the run may be taking in; and of copies of one
//     tree, it is linked to its own copy's parent (parentOf) once all are.
//   - A Codex fork (forked_from_id): it waits for its parent while a
//     parent's rollout (its name ends with the session id) is one of the
//     import's files not taken in yet, and so is linked to its own copy's
//     parent of copies, as a Claude Code fork. Rollout names begin with
//     their time, so a fork comes after its parent but across directories
//     (archived_sessions/ before sessions/).
func (n *sourceNames) waits(prep *mappedSource) (string, bool) {
	if prep == nil || prep.err != nil {
		return "", false
	}
	info, head := prep.info, prep.data[:min(len(prep.data), 64<<10)]
	if !prep.mapped {
		if prep.headInfo == nil {
			return "", false
		}
		info, head = *prep.headInfo, prep.head[:min(len(prep.head), 64<<10)] // streamed: its first lines
	}
	if info.ID == "" || info.Subagent {
		return "", false
	}
	if p := info.ParentID; info.Fork && p != "" && p != info.ID {
		return p, n.pending[p] > 0
	}
	if n.format == FormatClaudeCode {
		return info.ID, !n.continuedIn[info.ID] && bytes.Contains(head, []byte(`"sessionKind":"bg"`))
	}
	return "", false
}

// codexRolloutID is the session id a Codex rollout's name ends with
// (rollout-<time>-<uuid>.jsonl[.zst]), "" for another name.
func codexRolloutID(path string) string {
	name := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(path), ".zst"), ".jsonl")
	if !strings.HasPrefix(name, "rollout-") || len(name) < len("rollout-")+36 {
		return ""
	}
	id := name[len(name)-36:]
	if strings.Count(id, "-") != 4 {
		return ""
	}
	return id
}

// ready says whether what a waiting file waits for (waits) came in.
func (n *sourceNames) ready(id string) bool {
	return n.continuedIn[id] || n.pending[id] == 0
}

// taken notes that a file counted in pending is taken in.
func (n *sourceNames) taken(path string) {
	if id := n.fileID(path); n.pending[id] > 1 {
		n.pending[id]--
	} else {
		delete(n.pending, id)
	}
}

// fileID is the source session id a file's name says (claudeFileID,
// codexRolloutID).
func (n *sourceNames) fileID(path string) string {
	if n.format == FormatCodex {
		return codexRolloutID(path)
	}
	return claudeFileID(path)
}

// claudeFileID is the session id a Claude Code transcript's name is
// (<session id>.jsonl).
func claudeFileID(path string) string {
	return strings.TrimSuffix(sourceName(path), ".jsonl")
}

// sourceFile is one file found to import.
type sourceFile struct {
	path string
	size int64
	stat eventlog.FileStat // as the walk found it, before the file is read
	// unchanged: the file still has the size and times its session
	// recorded when it came to hold all of it (Source.Stat): not read.
	unchanged bool
	// held is how much of the file its session held when last imported
	// (Source.Size; 0 for a file new to the store), heldBy that session
	// and heldSum their SHA-256: prepareSource hashes those bytes on its
	// way through the file, for importFile's check that the file begins
	// with them, and, with the mapper's state after them kept, reads
	// only the bytes after them into memory.
	held    int64
	heldBy  eventlog.ID
	heldSum string
}

// newSourceFile is a file to import, as the file system describes it.
func newSourceFile(path string, fi fs.FileInfo) sourceFile {
	return sourceFile{path: path, size: fi.Size(),
		stat: eventlog.FileStat{Size: fi.Size(), MTime: fi.ModTime().UnixNano(), CTime: vfs.ChangeTime(fi)}}
}

func sameStat(a, b *eventlog.FileStat) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

// statQuiet is how long before the walk a file must have last changed for
// its stat to be recorded (Source.Stat): a file written within the same
// tick of the file system's clock as the walk could change again with no
// change of its times (git's "racy" files).
const statQuiet = 3 * time.Second // above FAT's 2 s tick

// statToRecord is what an import that leaves the session holding size
// bytes of f records of the file: nil unless that is all of the file,
// unchanged for statQuiet before the walk (at: when it began). length is
// how many bytes the import read of the file, through to its end: its
// decompressed stream for .zst.
func statToRecord(f sourceFile, zst bool, size, length int64, at time.Time) *eventlog.FileStat {
	// A plain file's size is its bytes; a .zst's is of its compressed
	// bytes, which say nothing of how long its stream is: all of it is
	// what it decompressed to, to its end, with no error (a .zst cut short
	// or damaged fails, and records nothing).
	whole := size == f.stat.Size
	if zst {
		whole = size == length
	}
	if !whole || f.stat.MTime == 0 {
		return nil
	}
	if changedWithin(at, f.stat.MTime) || (f.stat.CTime != 0 && changedWithin(at, f.stat.CTime)) {
		return nil
	}
	st := f.stat
	return &st
}

// beingWritten says whether line, the last of f, is one its agent is still
// writing: cut short (no newline, and it does not parse) in a file changed
// within statQuiet of the walk (at). Such a line is left for the next import
// rather than stored: stored, it would be stored again, longer, at every
// import while it grows (a line that does not parse has no strings cut out
// and shared), in space quadratic in the line. A file quiet for longer,
// one dated in the future (changedWithin), or one with no time, has its
// cut line taken in, as the line of a crash. Only
// the modification time counts: it is what a write changes, where the
// change time also moves with a chmod or a touch. The rest of a line taken
// in before, still without its newline, is taken in: only its new bytes
// are stored, and the next import's note goes on from them.
func beingWritten(f sourceFile, line pendingLine, at time.Time) bool {
	return strings.HasPrefix(line.m.Unparsed, truncatedLine) && !strings.HasSuffix(line.m.Label, ":continued") && f.stat.MTime != 0 &&
		changedWithin(at, f.stat.MTime)
}

// changedWithin says whether a file time (unix ns) is within statQuiet
// before at, or at most clockSkew after it: the file changed moments ago.
// A little ahead is a writer whose clock runs ahead of this one (a file
// server's): its file just written is dated so. A time further ahead (a
// file copied from a machine whose clock ran far ahead, unpacked from an
// archive, or the clock stepped back since) is not recent: counted so,
// its cut last line was held back, and its stat left unrecorded, at every
// import until the clock reached it. Taking it as quiet is safe: a write
// after the import sets the file's modification time to the writer's
// clock, no longer the one recorded, so the next import sees the file
// changed and reads on from where this one stopped (the rest of a cut
// line taken in is taken in after it, as a crash's line that grows again
// is).
func changedWithin(at time.Time, ns int64) bool {
	d := at.Sub(time.Unix(0, ns))
	return d > -clockSkew && d < statQuiet
}

// clockSkew is how far ahead of this machine's clock a file's time may be
// and still be a write of moments ago (changedWithin).
const clockSkew = time.Minute

// lastLineNote is said of a file whose last line was left for the next
// import (beingWritten).
const lastLineNote = "its last line is still being written (no newline yet, changed moments ago): taken in up to it; the next import takes it"

// importPaths are the files and directories an import reads: those named,
// or none named, the format's defaults.
func (r *Rook) importPaths(opts ImportOptions) []string {
	paths := opts.Paths
	if len(paths) == 0 {
		paths = []string{DefaultImportDir(opts.Format, opts.AgentDir)}
		if a := codexArchive(opts.AgentDir); opts.Format == FormatCodex {
			if _, err := r.fs.Stat(a); err == nil {
				// Archived sessions are history too; they may be all
				// there is.
				if _, err := r.fs.Stat(paths[0]); errors.Is(err, fs.ErrNotExist) {
					paths = nil
				}
				paths = append(paths, a)
			}
		}
	}
	return paths
}

// importFiles lists the files under paths, parents before subagents.
func (r *Rook) importFiles(format string, paths []string, rep *ImportReport) ([]sourceFile, int64, error) {
	var out []sourceFile
	seen := map[string]bool{}
	add := func(p string, fi fs.FileInfo) {
		if !seen[p] {
			seen[p] = true
			out = append(out, newSourceFile(p, fi))
		}
	}
	// wanted: a file a walk takes. Codex's rollouts are rollout-*.jsonl and
	// .jsonl.zst (its history.jsonl, prompts only, is not one); Claude
	// Code's transcripts are .jsonl files, but for its history.jsonl of
	// prompts at the top of ~/.claude. A file named on its own is taken
	// whatever its name.
	wanted := func(name string) bool {
		if format == FormatCodex {
			return strings.HasPrefix(name, "rollout-") && (strings.HasSuffix(name, ".jsonl") || strings.HasSuffix(name, ".jsonl.zst"))
		}
		return strings.HasSuffix(name, ".jsonl") && name != "history.jsonl"
	}
	// A pipe or device has no bytes to come back to: the next import could
	// not tell growth from a rewrite, and a pipe with no writer would hold
	// the import forever. Named, or named like a transcript in a tree, it
	// is a failed file.
	notRegular := func(path string, mode fs.FileMode) {
		why := "not a regular file (" + fileKind(mode) + "): import reads transcript files, which it can read again"
		rep.problem(ImportProblem{File: path, Reason: why})
		rep.Files = append(rep.Files, ImportedFile{Path: path, Status: ImportFailed, Note: why})
		rep.Failed++
	}
	// The store's own directory is never read as transcripts (its
	// inbox's spool files are .jsonl): refused when named, passed over
	// in a walk (InStore).
	var store storeGuard
	if r.fs == vfs.OS {
		store = newStoreGuard(r.home)
	}
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, 0, err
		}
		rep.Paths = append(rep.Paths, abs)
		if err := store.check(p, abs, "import from"); err != nil {
			return nil, 0, err
		}
		if real, err := filepath.EvalSymlinks(abs); err == nil && r.fs == vfs.OS {
			abs = real // the same tree reached through a link is the same files
		}
		info, err := r.fs.Stat(abs)
		if errors.Is(err, syscall.ELOOP) {
			// Links that lead back to themselves: "too many levels of
			// symbolic links" alone did not say what to do.
			return nil, 0, fmt.Errorf("cannot import %s: a loop of symbolic links (%w): name the file the links are meant to reach", p, err)
		}
		if err != nil {
			return nil, 0, fmt.Errorf("cannot import %s: %w", p, err)
		}
		if !info.IsDir() {
			if !info.Mode().IsRegular() {
				notRegular(abs, info.Mode())
				continue
			}
			add(abs, info)
			continue
		}
		walked := map[string]bool{}
		var walk func(dir string)
		walk = func(dir string) {
			walked[dir] = true
			if store.real != "" && within(store.real, dir) {
				return // the store, in the tree walked (~ holding ~/.rook)
			}
			ents, err := r.fs.ReadDir(dir)
			if errors.Is(err, fs.ErrPermission) {
				err = fmt.Errorf("%w: rook may not list it: give it read and search permission (chmod u+rx), or run the import as a user who may", err)
			}
			if err != nil {
				rep.problem(ImportProblem{File: dir, Reason: err.Error()})
				rep.Files = append(rep.Files, ImportedFile{Path: dir, Status: ImportFailed, Directory: true, Note: "directory not readable: " + err.Error()})
				rep.Failed++
				return
			}
			if rep.subdirs == nil {
				rep.subdirs = map[string]map[string]bool{}
			}
			kids := map[string]bool{}
			rep.subdirs[dir] = kids
			for _, d := range ents {
				path := filepath.Join(dir, d.Name())
				switch {
				case d.IsDir():
					kids[d.Name()] = true
					if !walked[path] { // reached through a link already
						walk(path)
					}
				case d.Type().IsRegular() && wanted(d.Name()):
					fi, err := d.Info()
					switch {
					case err == nil:
						add(path, fi)
					case errors.Is(err, fs.ErrNotExist):
						// Gone since the listing: nothing to take in.
					default:
						// A directory listed but not searchable (r, no
						// x): its transcripts were passed over in silence.
						why := err.Error()
						if errors.Is(err, fs.ErrPermission) {
							why += fmt.Sprintf(": rook may not reach it: give its directory search permission (chmod u+x %s), or run the import as a user who may", dir)
						}
						rep.problem(ImportProblem{File: path, Reason: why})
						rep.Files = append(rep.Files, ImportedFile{Path: path, Status: ImportFailed, Note: why})
						rep.Failed++
					}
				case format == FormatCodex && d.Type().IsRegular() && strings.HasSuffix(d.Name(), ".jsonl") && d.Name() != "history.jsonl":
					rep.OtherJSONL++ // not a rollout: said when none is found
				case d.Type()&fs.ModeSymlink == 0 && wanted(d.Name()):
					notRegular(path, d.Type()) // a pipe named like a transcript
				case d.Type()&fs.ModeSymlink != 0:
					// A link might be to a directory (a side directory
					// kept elsewhere): not one the walk found absent.
					kids[d.Name()] = true
					// Followed, to what it links to: a transcript or a
					// directory linked into the tree is imported as if named
					// (once, however many links reach it).
					real, err := filepath.EvalSymlinks(path)
					if err != nil {
						if wanted(d.Name()) { // a transcript that cannot be read
							why := "a link to nothing"
							switch {
							case errors.Is(err, fs.ErrPermission):
								// Not a loop: a directory on the way the
								// link names may not be searched.
								why = fmt.Sprintf("a link rook may not follow (%v): give the directories it names search permission (chmod u+x), or run the import as a user who may", err)
							case !errors.Is(err, fs.ErrNotExist):
								why = "a link that cannot be followed (a loop of links?)"
							}
							rep.problem(ImportProblem{File: path, Reason: why})
							rep.Files = append(rep.Files, ImportedFile{Path: path, Status: ImportFailed, Note: why})
							rep.Failed++
						}
						continue
					}
					fi, err := r.fs.Stat(real)
					switch {
					case err != nil:
					case store.real != "" && within(store.real, real):
						// A link into the store: passed over, as the store is.
					case fi.IsDir() && !walked[real]:
						walk(real)
					case fi.Mode().IsRegular() && wanted(d.Name()):
						add(real, fi)
					case !fi.IsDir() && wanted(d.Name()):
						notRegular(path, fi.Mode())
					}
				}
			}
		}
		walk(abs)
	}
	if format == FormatCodex {
		// A rollout and its .zst side by side (Codex compressing it, or
		// writing it back plain to resume it) are one rollout: the plain
		// file is read, as Codex reads it; the .zst is left to sourceNames,
		// which takes the plain file for the session the .zst was.
		plain := map[string]bool{}
		for _, f := range out {
			plain[f.path] = true
		}
		kept := out[:0]
		var more []sourceFile
		for _, f := range out {
			p, ok := strings.CutSuffix(f.path, ".zst")
			if !ok {
				kept = append(kept, f)
				continue
			}
			if !plain[p] {
				fi, err := r.fs.Stat(p)
				if err != nil || !fi.Mode().IsRegular() || !r.sameRollout(p, f.path) {
					kept = append(kept, f)
					continue
				}
				more = append(more, newSourceFile(p, fi)) // the .zst named alone
				plain[p] = true
			} else if !r.sameRollout(p, f.path) {
				kept = append(kept, f) // another rollout of the same name: its own
				continue
			}
			rep.ZstBeside = append(rep.ZstBeside, f.path)
		}
		out = append(kept, more...)
	}
	isChild := func(p string) bool {
		return strings.HasPrefix(filepath.Base(p), "agent-") || filepath.Base(filepath.Dir(p)) == "subagents"
	}
	sort.SliceStable(out, func(i, j int) bool {
		if ci, cj := isChild(out[i].path), isChild(out[j].path); ci != cj {
			return !ci
		}
		return out[i].path < out[j].path
	})
	var total int64
	for _, f := range out {
		total += f.size
	}
	return out, total, nil
}

// importedSessions maps source paths to the newest session imported from
// each, for one format, and to every session of each, newest first (a file
// rewritten, or moved onto a path that has one).
func (r *Rook) importedSessions(format string) (newest map[string]eventlog.Meta, all map[string][]eventlog.Meta, err error) {
	ids, err := r.Log.IDs()
	if err != nil {
		return nil, nil, err
	}
	newest, all = map[string]eventlog.Meta{}, map[string][]eventlog.Meta{}
	for _, id := range ids { // oldest first: a newer import of a path wins
		m, err := r.Log.ReadMeta(id)
		if err != nil || m.Source == nil || m.Source.Format != format {
			continue
		}
		newest[m.Source.Path] = m
		all[m.Source.Path] = append([]eventlog.Meta{m}, all[m.Source.Path]...)
	}
	return newest, all, nil
}

// readSource reads a source file, decompressing .zst. A .zst is read
// whole only up to limit bytes of its lines: past them (it grew more than
// zstMaxRatio, which streamed took it to grow at most), tooBig says so and
// nothing is returned, for the file to be taken in a chunk at a time. A
// 61 KB file of NULs grows to 2 GB: read whole, it took 4.4 GB of memory.
func (r *Rook) readSource(path string, limit int) (data []byte, zst, tooBig bool, err error) {
	if !strings.HasSuffix(path, ".zst") {
		data, err := vfs.ReadFile(r.fs, path)
		if n, ok := r.readTo[path]; ok && int64(len(data)) > n {
			data = data[:n] // (Reread)
		}
		return data, false, false, err
	}
	rc, zst, err := r.openSource(path)
	if err != nil {
		return nil, zst, false, err
	}
	defer rc.Close()
	data, err = io.ReadAll(io.LimitReader(rc, int64(limit)+1))
	if err == nil && len(data) > limit {
		return nil, zst, true, nil
	}
	return data, zst, false, err
}

// mappedSource is a source file read, and its lines mapped when it is new
// to the store: the part of importing a file that needs no store, which
// Import does for the next file while it stores the one before.
type mappedSource struct {
	streamed bool // too big to read whole: importFile reads it, a chunk at a time
	// data are the file's bytes from base on: from its start, or, for a
	// file whose session's mapper state is kept (state), from where that
	// session ends (sourceFile.held), the bytes before only hashed.
	data   []byte
	base   int64
	state  *importState
	hashed []byte // the SHA-256 state (MarshalBinary) after those bytes
	zst    bool
	err    error  // reading the file
	full   string // SHA-256 of data, hex
	// prefix is the SHA-256 of data's first held bytes (sourceFile.held)
	// when the file is longer: the bytes its session held. Hex.
	prefix   string
	mapped   bool // lines, info and captured hold the whole file
	lines    []pendingLine
	info     sourceSession
	captured backupSet
	sm       *sourceMapper // the mapper, after the lines
	// head is, for a streamed file new to the store, its first
	// otherFormatHead bytes, and headInfo the session its whole lines
	// there say (mapHead): which session it is and what it copies (a
	// Claude Code fork's first forkedFrom line, a Codex rollout's
	// session_meta), enough to know whether it waits (sourceNames.waits).
	head     []byte
	headInfo *sourceSession
}

// prepareSource reads a file and hashes it; a file no session was
// imported from (fresh) has its lines mapped too. A file imported before
// is mapped by importFile, from where its session ends.
func (r *Rook) prepareSource(format string, f sourceFile, fresh bool, minCut, chunk int) *mappedSource {
	p := &mappedSource{streamed: streamed(f, chunk)}
	if p.streamed {
		if fresh {
			r.mapHead(format, f, minCut, p)
		}
		return p
	}
	if r.readTail(format, f, minCut, p) {
		return p
	}
	var tooBig bool
	if p.data, p.zst, tooBig, p.err = r.readSource(f.path, chunk); p.err != nil && p.zst {
		// A .zst that does not decompress to its end: read in chunks, as
		// a bigger one is, its lines before the damage are taken in, and
		// the import says how many (storage.md, Export), where read
		// whole it took in none.
		return &mappedSource{streamed: true}
	} else if tooBig {
		p = &mappedSource{streamed: true}
		if fresh {
			r.mapHead(format, f, minCut, p)
		}
		return p
	}
	if p.err != nil || len(p.data) == 0 {
		return p
	}
	h := sha256.New()
	if 0 < f.held && f.held < int64(len(p.data)) {
		// One pass for both sums.
		h.Write(p.data[:f.held])
		p.prefix = hex.EncodeToString(h.Sum(nil))
		h.Write(p.data[f.held:])
	} else {
		h.Write(p.data)
	}
	p.full = hex.EncodeToString(h.Sum(nil))
	if fresh && otherFormat(format, p.data) == "" {
		p.mapSource(format, f.path, 0, minCut, nil, -1)
		p.mapped = true
	}
	return p
}

// mapHead reads the first otherFormatHead bytes of a streamed file
// (p.head, which importFile then reads no more) and maps its whole lines
// there (p.headInfo): a fork or continuation too big to read ahead waits
// for what it copies as a smaller one does. A file that does not read has
// neither: importFile reads it, and says what is wrong.
func (r *Rook) mapHead(format string, f sourceFile, minCut int, p *mappedSource) {
	b, zst, err := r.readHead(f.path, otherFormatHead)
	if err != nil {
		return
	}
	p.head, p.zst = b, zst
	end := bytes.LastIndexByte(b, '\n')
	if end < 0 || otherFormat(format, b[:end+1]) != "" {
		return
	}
	sm := newSourceMapper(format, f.path, minCut)
	sm.mapChunk(b[:end+1], 0, 0, false)
	info := sm.session()
	p.headInfo = &info
}

// mapSource maps the lines of the whole file read from start on (see
// sourceMapper.mapChunk). With a state (the mapper's after the first start
// bytes: import_state.go), the lines before start are not mapped again.
func (p *mappedSource) mapSource(format, path string, start int64, minCut int, st *importState, reportFrom int64) {
	p.sm = newSourceMapper(format, path, minCut)
	if st == nil || !p.sm.restore(*st) {
		p.sm = newSourceMapper(format, path, minCut) // not half restored
	}
	p.sm.unreportedFrom = reportFrom
	p.lines = p.sm.mapChunk(p.data, p.base, start, true)
	p.info, p.captured = p.sm.session(), p.sm.captured
}

func newMapper(format, path string) lineMapper {
	if format == FormatCodex {
		return newCodexMapper()
	}
	return newClaudeMapper(path)
}

func hashHex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// importFile takes in one file: new, grown, unchanged or rewritten. A file
// read whole ahead (prep) is one chunk; a big one is read here, a chunk at
// a time (import_stream.go).
func (r *Rook) importFile(opts ImportOptions, f sourceFile, prep *mappedSource, names *sourceNames, rep *ImportReport, progress func(taken int64)) ImportedFile {
	known := names.known
	res := ImportedFile{Path: f.path}
	problemsBefore, leftOutBefore := len(rep.Problems), rep.ProblemsLeftOut // those of the files before
	lastBefore, lastLeftOut := rep.lastListed(f.path)                       // its own left out at its last (ImportReport.leftOut)
	fail := func(err error) ImportedFile {
		// An object of the session it adds to that does not read, or
		// that the store's index lacks (a reindex past a damaged region
		// dropped it): a plain import cannot mend it, --reread can (a
		// lost dictionary file is another matter, and its message says
		// what to do).
		var ce *cas.CorruptError
		var nd *cas.NeedsDictError
		var nf *cas.NotFoundError
		if errors.As(err, &ce) && !errors.As(err, &nd) {
			err = fmt.Errorf("%w: `rook import %s --reread` of this file reads it again and puts the damaged objects back", err, opts.Format)
		} else if errors.As(err, &nf) {
			err = fmt.Errorf("%w (the store's index lacks it: a reindex past damage dropped it): `rook import %s --reread` of this file reads it again and puts the missing objects back", err, opts.Format)
		}
		if res.Lines == 0 && r.goneSource(f.path, err) {
			// Listed by the walk, then deleted or moved away before it
			// was read (its agent removing a session, a project renamed):
			// nothing to read, nothing wrong with it. The import goes on.
			res.Status, res.Session, res.Parent = ImportGone, nil, nil
			res.Note = goneNote
			if m, ok := known[f.path]; ok {
				res.Note += fmt.Sprintf("; session %s keeps the %s it held", m.ID, units.Bytes(m.Source.Size))
			}
			return res
		}
		if pe := (*fs.PathError)(nil); errors.As(err, &pe) && pe.Path == f.path && errors.Is(err, fs.ErrPermission) {
			// The file's own permission, not the store's: say what to do.
			err = fmt.Errorf("%w: rook may not read it: give it read permission (chmod u+r), or run the import as a user who may", err)
		}
		res.Status, res.Note, res.Continued = ImportFailed, err.Error(), false
		rep.problem(ImportProblem{File: f.path, Reason: err.Error()})
		return res
	}
	if f.unchanged {
		if m, ok := known[f.path]; ok && sameStat(m.Source.Stat, &f.stat) {
			res.Status, res.Session = ImportUnchanged, &m.ID
			res.BackupsLate = r.lateBackups(m)
			rep.unreported(&res, &eventlog.Unreported{}, f.path, m.Source.Unreported)
			res.Note = joinNotes(res.Note, unreportedNote(m.Source.Unreported))
			return res
		}
		// Its session was taken, earlier in this import, by a file at
		// another path (it moved while the files were listed): this one
		// is read after all, as any file is.
		prep = r.prepareSource(opts.Format, f, known[f.path].ID == eventlog.ID{}, opts.MinCut, opts.chunkBytes())
	}
	if prep.err != nil {
		return fail(prep.err)
	}
	head, zst := prep.data, prep.zst
	if prep.streamed && prep.head != nil {
		head = prep.head // read ahead (mapHead)
	} else if prep.streamed {
		var err error
		if head, zst, err = r.readHead(f.path, otherFormatHead); err != nil {
			return fail(err)
		}
	}
	// A file read from where its session ends (prep.base) begins with
	// what that session holds: not empty, and of the format.
	if len(head) == 0 && prep.base == 0 {
		res.Status, res.Note = ImportUnchanged, "empty: nothing to import yet"
		if m, ok := known[f.path]; ok && m.Source.Size > 0 {
			// Emptied (truncated, or written again and not yet
			// written to): its session keeps what it held.
			id := m.ID
			res.Session = &id
			res.Note = fmt.Sprintf("empty now: it held %s when imported as session %s, which keeps them; what is written to it next becomes a new session, unless it begins with the same lines", units.Bytes(m.Source.Size), m.ID)
		}
		return res
	}
	if other := otherFormat(opts.Format, head); other != "" && prep.base == 0 {
		return fail(fmt.Errorf("this looks like a %s transcript, not %s: use `rook import %s`", other, opts.Format, other))
	}
	if !zst && prep.base == 0 && bytes.HasPrefix(head, zstdMagic) {
		// Its bytes would read as one line never ended, "still being
		// written", or as no entry: neither says what to do.
		how := "rename it to end in .jsonl.zst, which import decompresses, or `zstd -d` it"
		if opts.Format == FormatClaudeCode {
			how = "`zstd -d` it to a plain .jsonl and import that"
		}
		return fail(fmt.Errorf("zstd-compressed, though not named .zst (it starts with a zstd frame): %s", how))
	}
	fi := &fileImport{r: r, opts: opts, path: f.path, zst: zst, rep: rep, res: &res, known: known, continued: names.continuedIn,
		modTime: time.Unix(0, f.stat.MTime), reportFrom: -1}
	start := int64(0) // the session holds the file's first start bytes
	from := int64(-1) // where the lines to take in begin, when not at start
	res.Status = ImportNew
	size, full := prep.base+int64(len(prep.data)), prep.full // a streamed new file's: known at its end
	// The session the file is: the one imported from its path, else one
	// imported from a path of its name that is gone (sourceNames), newest
	// first; the first whose bytes the file begins with. When its path's
	// own session is not one of them, the file was rewritten.
	var m eventlog.Meta
	movedFrom := "" // the path m was imported from, where this file was
	var rewrittenOf *eventlog.Meta
	prefix := ""           // the SHA-256 of the file's first bytes, as many as m holds
	var probe *sourceProbe // a streamed file, read as far as a session holds
	for _, c := range names.candidates(r.fs, f.path) {
		done, err := r.importedBytes(c)
		if err != nil {
			return fail(fmt.Errorf("session %s: %w", c.ID, err))
		}
		if prep.base > 0 && (c.ID != prep.state.sessionID() || done.size != prep.base) {
			// Not the session, or not as far, that the bytes read
			// were picked for (a crash before its metadata): read whole.
			prep = r.readWhole(opts.Format, f, opts.MinCut, opts.chunkBytes())
			if prep.err != nil {
				return fail(prep.err)
			}
			size, full = int64(len(prep.data)), prep.full
		}
		prefix = ""
		if prep.streamed {
			if probe == nil {
				probe = &sourceProbe{r: r, path: f.path}
				defer probe.close()
			}
			var more bool
			if size, full, prefix, more, err = probe.to(done.size); err != nil {
				return fail(err)
			}
			if more {
				// Longer than the session: how much, and its sum, are
				// known once the pass below has read it to its end.
				size, full = done.size+1, ""
			}
		} else if done.size == size {
			prefix = prep.full // the whole file, hashed already
		} else if done.size == f.held && prep.prefix != "" {
			prefix = prep.prefix // hashed already, as its session was
		} else if done.size < size {
			prefix = hashHex(prep.data[:done.size])
		}
		moved := ""
		if c.Source.Path != f.path {
			moved = c.Source.Path
		}
		switch {
		case done.size == size && done.sha == full && c.Source.Size == done.size:
			// (A crash that came after the lines and before the
			// metadata left c.Source.Size short of them: the file is
			// grown by nothing, below, so that what its last lines say,
			// its title, where its conversation went, is recorded too.)
			res.Status, res.Session = ImportUnchanged, &c.ID
			stat := statToRecord(f, zst, done.size, size, opts.walked)
			if c.Source.SHA256 != done.sha || moved != "" || !sameStat(c.Source.Stat, stat) {
				// The file moved, or its stat is not recorded yet (an
				// import before rook recorded it, or a file that had
				// just changed).
				src := *c.Source
				src.Size, src.SHA256, src.Stat = done.size, done.sha, stat
				c.Source = &src
				names.move(&c, moved, f.path, zst, &res)
				if err := r.Log.StageMeta(c); err != nil {
					return fail(fmt.Errorf("session %s: record what it holds of the file: %w", c.ID, err))
				}
				known[f.path] = c
			}
			res.BackupsLate = r.lateBackups(c)
			rep.unreported(&res, &eventlog.Unreported{}, f.path, c.Source.Unreported)
			res.Note = joinNotes(res.Note, unreportedNote(c.Source.Unreported))
			return res
		case done.size <= size && done.sha == prefix:
			m, movedFrom = c, moved
			res.Status, res.Session, fi.sess, start = ImportGrown, &m.ID, &m, done.size
			// Reported again, as this import's, and recorded with its
			// lines (until Import has made its report).
			rep.unreported(&res, &fi.unreported, f.path, c.Source.Unreported)
			if done.size > c.Source.Size {
				// An import stopped part way through the file (cut
				// short, or the file read no further) after its lines
				// and before its metadata: it reported none of them.
				fi.stopBefore, fi.reportFrom, res.Continued = done.size, c.Source.Size, true
				res.Note = fmt.Sprintf("continued: the last import of it stopped part way, %s in (killed, a crash, or the file read no further), before it recorded the lines it took in: taken up from there, the lines it took in that did not parse reported now", units.Bytes(done.size))
			}
			if s, err := r.Log.Summary(m.ID); err == nil && s.Events > 0 {
				fi.last, fi.timed = s.Updated, true
				// Lines that count tokens are in already: a continuation's
				// copy, which its file begins with, is behind (taken in
				// left out of its totals, or counted in them when what it
				// continues was not imported then): what it grew by is
				// its own (fileImport.copiedLine).
				fi.pastCopy = s.TokensIn > 0 || s.TokensOut > 0
			}
			// A line that was cut short (no newline yet) is taken in again,
			// whole, now that it may be: an event of its own, mapped as
			// any line, stored from where the line begins (export writes
			// only what it adds; storage.md, Source lines).
			cut, isCut, err := r.cutLineStart(m.ID)
			if err != nil {
				return fail(fmt.Errorf("session %s: %w", m.ID, err))
			}
			if isCut && cut < start && size > start {
				// (Not grown, after a crash before its metadata: the
				// line is as cut as it was.)
				from = cut
			}
		case names.beside[c.Source.Path] && done.size > size:
			// Codex writing the rollout back plain beside its .zst, not
			// done yet: the next import takes it.
			res.Status, res.Session = ImportUnchanged, &c.ID
			res.Note = "being written back beside its .zst: the next import takes it"
			return res
		case moved == "":
			if rewrittenOf == nil {
				rewrittenOf = &c
			}
			continue
		default:
			continue // of the name, not of the transcript
		}
		break
	}
	// All the file's bytes (decompressed, for .zst), read through to its
	// end: a streamed file's are those hashed above, or, new, those read
	// below.
	length := size
	if res.Status == ImportNew && rewrittenOf != nil {
		res.Status = ImportRewritten
		res.Note = fmt.Sprintf("changed since it was imported as session %s (not only grown): imported again as a new session; the old one is kept", rewrittenOf.ID)
	}
	if from < 0 {
		from = start
	}
	fi.lineNo = 1
	waiting := "" // the lines wait for file backups (heldForBackups)
	// The mapper's state after the lines the session holds, when kept: a
	// grown file's lines before are not mapped again (import_state.go).
	var state *importState
	if res.Status == ImportGrown && from == start && fi.reportFrom < 0 {
		// (Not after an import stopped part way: the lines it took in,
		// before start, are mapped again for the ones it did not report.)
		if prep.base > 0 {
			state = prep.state // what the bytes read were picked for (checked above)
		} else if st, ok := r.loadImportState(m.ID, opts.Format, f.path, opts.MinCut, start, prefix); ok {
			state = &st
		}
	}
	if prep.base > 0 && (state == nil || res.Status != ImportGrown) {
		// (A cut line taken again, before what was read; or no session
		// the bytes read were picked for.)
		if prep = r.readWhole(opts.Format, f, opts.MinCut, opts.chunkBytes()); prep.err != nil {
			return fail(prep.err)
		}
		// What it takes in and records is what this read found, which
		// may be more than the read before.
		size, full = int64(len(prep.data)), prep.full
		length = size
		if res.Status == ImportGrown && (size < start || hashHex(prep.data[:start]) != prefix) {
			return fail(changedUnder(start, m.ID))
		}
	}
	var mapper *sourceMapper // after the file's lines, once taken in
	endsLine := false        // the file's last byte taken in is a newline
	heldLast := false        // its last line is left for the next import (beingWritten)
	if !prep.streamed {
		if prep.base > 0 {
			fi.lineNo += state.Lines
		} else {
			fi.lineNo += bytes.Count(prep.data[:from], []byte{'\n'})
		}
		if !prep.mapped || from != 0 {
			prep.mapSource(opts.Format, f.path, from, opts.MinCut, state, fi.reportFrom)
			fi.reportUnrecorded(prep.sm.unreported, prep.data, prep.base, 1)
		}
		if i, missing := r.heldForBackups(opts.Format, f.path, prep.lines, prep.info, prep.captured); i >= 0 {
			// Taken up to the line, which the next import takes with its
			// backups: captured later, a backup would come after the ones
			// the lines after it name, and rewind and diff would take
			// those for the file as it was first.
			at := max(prep.lines[i].off, start)
			waiting = fmt.Sprintf("line %d names %d file backup(s) Claude Code made moments ago that are not in its file-history yet (%s): taken in up to that line; the next import takes the rest, with them (or without them, a minute on)",
				fi.lineNo+i, len(missing), strings.Join(missing, ", "))
			prep.lines = prep.lines[:i]
			size = at
			var err error
			if full, err = prep.sumTo(at); err != nil {
				return fail(err)
			}
		}
		if i := len(prep.lines) - 1; waiting == "" && i >= 0 && beingWritten(f, prep.lines[i], opts.walked) {
			// Taken up to the line (or, a cut line taken again, up to
			// where the session ends): the mapper has read it, so its
			// state is kept only if the line left none in it
			// (cutLeftNoTrace), as the state after the lines before.
			at := max(prep.lines[i].off, start)
			fi.see(prep.lines[i], true)
			prep.lines, size, heldLast = prep.lines[:i], at, true
			var err error
			if full, err = prep.sumTo(at); err != nil {
				return fail(err)
			}
		}
		fi.info, fi.captured = func() sourceSession { return prep.info }, prep.captured
		if err := fi.take(prep.lines, true); err != nil {
			return fail(err)
		}
		if waiting == "" && (!heldLast || prep.sm.cutLeftNoTrace) {
			// (Held, size is where the line begins: after a newline, or
			// at the bytes read from, whose state is kept already.)
			mapper, endsLine = prep.sm, size > prep.base && prep.data[size-prep.base-1] == '\n'
		}
	} else {
		// The bytes before start are read again, for the check that they
		// are still those the session holds (ph, below), unless there is
		// a state: then the lines before are not mapped again, and the
		// pass goes on from where the probe above checked them.
		sm := newSourceMapper(opts.Format, f.path, opts.MinCut)
		sm.unreportedFrom = fi.reportFrom
		base := int64(0) // where the chunks begin
		var hashed hash.Hash
		var in io.Reader
		var src io.Reader // the file as opened: where progress is in it (compressedAt)
		if state != nil && sm.restore(*state) {
			if probe == nil || probe.n != start {
				// (Not what the probe found the session holds: never
				// so, it says the file is grown, perhaps by nothing.)
				return fail(changedUnder(start, fi.sess.ID))
			}
			in, hashed, src = probe.rest(), probe.h, probe.rc
			base, fi.lineNo = start, 1+state.Lines
		} else {
			sm = newSourceMapper(opts.Format, f.path, opts.MinCut) // not half restored
			sm.unreportedFrom = fi.reportFrom
			rc, _, err := r.openSource(f.path)
			if err != nil {
				return fail(err)
			}
			defer rc.Close()
			in, src = rc, rc
		}
		// Read to its end, however it grew since the probe: what is
		// recorded, its size and sum, is what this pass read.
		var info sourceSession // the mapper's, as of the chunk being stored
		fi.info, fi.captured = func() sourceSession { return info }, sm.captured
		cr := newChunkReader(in, opts.streamChunkBytes())
		if hashed != nil {
			cr.hash, cr.size = hashed, base // the sum goes on from the bytes checked
		}
		chunks, stop := sm.mapChunks(cr, from) // the next chunk mapped while this one is stored
		defer stop()
		ph := sha256.New() // of the bytes before start: still those the session holds?
		var waiting []pendingLine
		last := byte(0) // the last byte read
		for off := base; ; {
			c := <-chunks
			if c.err != nil {
				// The file reads no further (a .zst damaged part way): the
				// whole lines before, taken in already, are stored as at
				// the file's end, those still waiting for a next chunk (a
				// run of notes, the last message's group) too, but for
				// lines not yet checked against the session's (waiting).
				// Not so where it may read on the next time (a read that
				// failed, a last frame still being written): those wait,
				// and the next import takes their lines in again, whole,
				// as a file read whole would.
				var damaged zstdDamaged
				if waiting == nil && off >= start && errors.As(c.err, &damaged) {
					if err := fi.take(nil, true); err != nil {
						return fail(fi.partly(errors.Join(c.err, err)))
					}
				}
				return fail(fi.partly(c.err))
			}
			chunk, final := c.data, c.final
			info = c.info
			if len(chunk) > 0 {
				last = chunk[len(chunk)-1]
			}
			if off < start {
				before := chunk[:min(start-off, int64(len(chunk)))]
				ph.Write(before)
				if off+int64(len(before)) == start && hex.EncodeToString(ph.Sum(nil)) != prefix {
					return fail(changedUnder(start, fi.sess.ID))
				}
			}
			if off < from {
				fi.reportUnrecorded(c.unreported, chunk, off, fi.lineNo)
				fi.lineNo += bytes.Count(chunk[:min(from-off, int64(len(chunk)))], []byte{'\n'}) // counted, not taken
			}
			lines := append(waiting, c.lines...)
			off += int64(len(chunk))
			if off < start && final {
				// Cut short since it was hashed: it ends before the bytes
				// its session holds do (its metadata would say it holds
				// fewer than it does).
				return fail(changedUnder(start, fi.sess.ID))
			}
			if off < start && !final {
				// A cut line taken again begins before the bytes checked
				// above end: it waits for the check.
				waiting = lines
				continue
			}
			waiting = nil
			if i := len(lines) - 1; final && i >= 0 && beingWritten(f, lines[i], opts.walked) {
				fi.see(lines[i], true)
				lines, heldLast = lines[:i], true
			}
			if err := fi.take(lines, final); err != nil {
				return fail(fi.partly(err))
			}
			progress(compressedAt(src, off)) // within a big file
			if final || fi.noEntry {
				break
			}
		}
		stop() // the reader's size and sum are final once it is done
		// What was read and taken in; for a file imported before, the bytes
		// hashed above, unless it changed in between.
		size, full = cr.size, cr.sum()
		if heldLast {
			// Taken up to the line, whose sum the reader kept; or, a cut
			// line taken again, up to where the session ends.
			size, full = cr.tailAt, cr.tailSum
			if size < start {
				size, full = start, prefix
			}
		}
		if !fi.noEntry {
			length = cr.size // read through to its end
		}
		if !fi.noEntry && !heldLast {
			mapper, endsLine = sm, last == '\n'
		} else if !fi.noEntry && sm.cutLeftNoTrace && size > start {
			// Held: kept as the state after the lines before the line,
			// which the line left as it was; size is where it begins,
			// after a newline. (At start, the state is the one kept
			// already, or, a cut line taken again, none is.)
			mapper, endsLine = sm, true
		}
	}
	if from < start && res.BytesIn >= start-from {
		res.BytesIn -= start - from // taken in before: what the file grew by is new
	}
	if fi.sess == nil {
		// One line, cut short: its agent is writing the first line of a
		// new transcript (or a crash cut it). The same read whole or in
		// chunks, held for the next import (beingWritten) or not.
		cut := fi.content == 1 && fi.cutLast
		// Undo the problems counted for its lines: the file is the problem.
		rep.Problems, rep.ProblemsLeftOut = rep.Problems[:problemsBefore], leftOutBefore
		if lastBefore >= 0 {
			rep.Problems[lastBefore].LeftOut = lastLeftOut
		}
		res.Unparsed, res.Unknown = 0, 0
		if waiting != "" {
			res.Status, res.Note, res.Lines, res.Events, res.BytesIn = ImportUnchanged, waiting, 0, 0, 0
			return res
		}
		if !fi.written && !fi.noEntry {
			// Blank lines, NUL bytes and a byte order mark hold no more
			// than an empty file does, and are reported as it is, not as
			// a file of another kind.
			res.Status, res.Note, res.Lines, res.BytesIn = ImportUnchanged, fi.filler.String()+": nothing to import yet", 0, 0
			return res
		}
		if cut {
			// Nothing to import yet: the next import takes the line
			// once whole.
			res.Status, res.Lines, res.BytesIn = ImportUnchanged, 0, 0
			res.Note = "its only line is cut short (no newline yet) and is not JSON: nothing to import yet; the next import takes it once whole"
			if heldLast {
				res.Note = "its first line is still being written: nothing to import yet"
			}
			return res
		}
		if fi.noEntry {
			return fail(fmt.Errorf("no line of its first %s is a %s entry: not a transcript", units.Bytes(holdBytes), opts.Format))
		}
		return fail(fmt.Errorf("no line of it is a %s entry: not a transcript", opts.Format))
	}
	if res.Lines == 0 && res.Status == ImportGrown {
		res.Status = ImportUnchanged
	}
	notes := []string{res.Note, waiting}
	if n := fi.copiedProblems; n > 0 {
		notes = append(notes, fmt.Sprintf("%d problem line(s) copied from its parent: reported in the parent's file, where they were written, not counted again", n))
	}
	if heldLast {
		notes = append(notes, lastLineNote)
	}
	res.Note = strings.Join(slices.DeleteFunc(notes, func(n string) bool { return n == "" }), "; ")
	// The metadata says the lines are in once they are durable: Import
	// writes it after its next flush.
	sess, info := fi.sess, fi.info()
	src := *sess.Source
	made := importedMeta(opts.Format, f.path, zst, info, known)
	if fi.created {
		// Made from what the mapper knew at the file's first entry:
		// brought up to what the whole file says.
		sess.Title, sess.Workspace, sess.Tags, sess.Parent, src.Parent = made.Title, made.Workspace, made.Tags, made.Parent, made.Source.Parent
		src.ContinuedIn = made.Source.ContinuedIn
	} else {
		// Grown: what its first import could not know (a crash cut it
		// short, or the file said it only later) is filled in; what is
		// there, perhaps set by hand, stays, but for a title the lines
		// taken in now rename (the user's later word).
		if sess.Title == placeholderTitle(opts.Format, src.ID) || sess.Title == placeholderTitle(opts.Format, "") || info.Renamed {
			sess.Title = made.Title
		}
		if sess.Workspace == "" {
			sess.Workspace = made.Workspace
		}
		if made.Source.ContinuedIn != "" {
			// Written last, after the lines an earlier import took.
			src.ContinuedIn = made.Source.ContinuedIn
		}
		if src.Parent == "" && made.Source.Parent != "" {
			src.Parent = made.Source.Parent
			if sess.Parent == nil {
				sess.Parent = made.Parent
			}
			if slices.Contains(made.Tags, forkTag) && !slices.Contains(sess.Tags, forkTag) {
				// A Claude Code fork an older rook imported unlinked
				// (it did not read forkedFrom): linked now as a fork.
				sess.Tags = append(slices.Clone(sess.Tags), forkTag)
			}
		}
	}
	res.Parent, res.Fork = sess.Parent, ImportedFork(*sess)
	if !fi.created && size > src.Size && hasImportedForks(known, sess.ID) {
		// Grown, now or by an import cut short after the lines and
		// before the metadata (then grown by nothing now, and reported
		// unchanged): written with the new size, once the lines are
		// durable, the mark has linkParents recount the forks, and stays
		// until it has, for the next import, which finds the file
		// unchanged, should this one be cut short before.
		src.RecountForks = true
	}
	src.Size, src.SHA256, src.Stat = size, full, statToRecord(f, zst, size, length, opts.walked)
	src.Stops = withStop(src.Stops, fi.stopBefore)
	if fi.openEnd {
		src.Stops = withStop(src.Stops, size)
	}
	src.CopiedIn, src.CopiedOut = src.CopiedIn+fi.copiedIn, src.CopiedOut+fi.copiedOut
	// The lines that did not parse this import reports, kept until it has
	// (Import clears them): an import cut short after the metadata and
	// before its report has the next one report them.
	src.Unreported = nil
	if fi.unreported.Lines > 0 {
		u := fi.unreported
		src.Unreported = &u
	}
	if src.ID == "" {
		src.ID = info.ID
	}
	if opts.Format == FormatCodex && info.Subagent && info.Fork {
		// Its rollout holds a copy of its parent's lines
		// (codexMapper.sessionMeta): counted against the parent when it
		// is linked, or its file grows (copiesParent).
		src.CopiesParent = true
	}
	sess.Source = &src
	if !fi.created && res.Events > 0 {
		// Appended to now, its new events at the transcript's own times:
		// retention ages it from this (lastWritten).
		sess.Written = r.clock.Now().UTC().Truncate(time.Millisecond)
	}
	names.move(sess, movedFrom, f.path, zst, &res)
	// Written with the next flush, once the lines above are durable.
	if err := r.Log.StageMeta(*sess); err != nil {
		return fail(fmt.Errorf("session %s: record what it holds of the file: %w", sess.ID, err))
	}
	known[f.path] = *sess
	if mapper != nil && endsLine && (res.Status == ImportGrown || size >= importStateNewMin || zst) {
		// Kept for a file seen growing (a session still being written):
		// one imported once, as most of a history is, keeps none, unless
		// it is so big that mapping it again would cost seconds, or a
		// .zst: a zstd stream cannot be read from where its session ends,
		// so without the state its first growth (an active session
		// compressed as it goes, or recompressed) mapped every line again
		// (`rook import` of a 58 MB rollout grown by 1 MB: 5.2 s, 3.5 s with it). And only
		// after a whole line: a last line cut short is mapped again with
		// what follows it.
		r.saveImportState(sess.ID, opts.Format, f.path, opts.MinCut, size, full, fi.lineNo-1, mapper)
	}
	if c := src.ContinuedIn; c != "" && names.continuedIn != nil {
		names.continuedIn[c] = true
	}
	return res
}

// goneNote is said of a file the walk listed that was gone when the import
// came to read it.
const goneNote = "gone before it was read (deleted or moved away after the files were listed): nothing taken in from it"

// goneSource says whether err is the source file's own not being there
// (opening it, not something of the store's), and it is not there now.
func (r *Rook) goneSource(path string, err error) bool {
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Path != path || !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	_, serr := r.fs.Stat(path)
	return errors.Is(serr, fs.ErrNotExist)
}

// changedUnder is the error of a file whose first start bytes, those its
// session id holds, changed between the pass that hashed them and the one
// that reads it.
func changedUnder(start int64, id eventlog.ID) error {
	return fmt.Errorf("changed while it was being imported (its first %d bytes are no longer those of session %s): import it again", start, id)
}

// sourceNames finds the session of a file that moved. Codex compresses a
// rollout left idle for a week in place (x.jsonl becomes x.jsonl.zst) and
// writes it back plain when the session resumes; archiving moves it to
// archived_sessions; a Claude Code project directory is renamed with its
// project. A file whose path's session it does not begin with (or that has
// none) is the session imported under another path of the same name (.zst
// aside) that is no longer there, newest first, whose bytes are the file's
// first bytes (importFile checks); it is then unchanged or grown, not a
// new session. A copy, whose original is still there, is a session of its
// own.
type sourceNames struct {
	format string                     // FormatClaudeCode or FormatCodex
	known  map[string]eventlog.Meta   // by source path: the newest
	atPath map[string][]eventlog.Meta // by source path: every one, newest first, as the import began
	// movedAway are the sessions this import found at another path.
	movedAway map[eventlog.ID]bool
	byName    map[string][]string // source paths by name; made when first asked
	// beside are the .zst rollouts left out beside their plain files:
	// there, but as good as gone.
	beside map[string]bool
	// continuedIn are the source session ids that a known session's file
	// says its conversation went on in (Source.ContinuedIn), kept up to
	// date as the files are imported: a Claude Code file whose session is
	// not one of them is no continuation, and fileImport.copiedLine looks
	// no further. Nil for Codex.
	continuedIn map[string]bool
	// pending are the source session ids the names of the import's files
	// say (fileID), with how many of those files are not taken in yet: a
	// fork whose parent's is one waits for every file of it (waits),
	// copies of one tree each (a backup, a project directory or a Codex
	// home copied), so that it is linked to the nearest (parentOf).
	pending map[string]int
}

// sourceName is a source file's name as it moves: without its directory
// or a .zst.
func sourceName(path string) string {
	return strings.TrimSuffix(filepath.Base(path), ".zst")
}

// candidates are the sessions the file at path may be: those imported
// from path, the newest first (a file moved back onto a path that has a
// session of its own since), then those imported from another path of its
// name that no longer exists (or is a .zst left out beside its plain
// file), the longest first (the fewest bytes to take in again), then the
// newest. importFile takes the first whose bytes the file begins with.
func (n *sourceNames) candidates(fsys vfs.FS, path string) []eventlog.Meta {
	var out []eventlog.Meta
	seen := map[eventlog.ID]bool{}
	if m, ok := n.known[path]; ok {
		out, seen[m.ID] = append(out, m), true
	}
	for _, m := range n.atPath[path] {
		if !seen[m.ID] && !n.movedAway[m.ID] {
			out, seen[m.ID] = append(out, m), true
		}
	}
	if len(n.known) == 0 {
		return out
	}
	if n.byName == nil {
		n.byName = map[string][]string{}
		for p := range n.known {
			n.byName[sourceName(p)] = append(n.byName[sourceName(p)], p)
		}
	}
	var moved []eventlog.Meta
	for _, p := range n.byName[sourceName(path)] {
		m, ok := n.known[p]
		if !ok || p == path {
			continue // moved already, in this import
		}
		if _, err := fsys.Stat(p); errors.Is(err, fs.ErrNotExist) || n.beside[p] {
			moved = append(moved, m)
		}
	}
	slices.SortFunc(moved, func(a, b eventlog.Meta) int {
		if a.Source.Size != b.Source.Size {
			return cmp.Compare(b.Source.Size, a.Source.Size)
		}
		return strings.Compare(b.ID.String(), a.ID.String())
	})
	for _, m := range moved {
		if !seen[m.ID] {
			out, seen[m.ID] = append(out, m), true
		}
	}
	return out
}

// move records that the session m, imported from the path from, is now
// the file at path (nothing when from is ""). The caller writes m's
// metadata.
func (n *sourceNames) move(m *eventlog.Meta, from, path string, zst bool, res *ImportedFile) {
	if from == "" {
		return
	}
	src := *m.Source
	src.Path, src.Zstd = path, zst
	m.Source = &src
	delete(n.known, from)
	n.movedAway[m.ID] = true
	res.MovedFrom = from
	if n.beside[from] {
		res.Note = fmt.Sprintf("moved: imported before from %s, the .zst beside it (left out)", from)
	} else {
		res.Note = fmt.Sprintf("moved: imported before from %s, which is no longer there", from)
	}
}

// partly says, of an error that stops a file half way, where its lines
// stopped: those before it are in the session, and the next import takes
// in the rest, as after a crash. A session this import made and put no
// line in yet is removed, as if the file had failed at once.
func (fi *fileImport) partly(err error) error {
	if fi.sess == nil {
		return err
	}
	// The events of the last lines taken in may still wait in a group (a
	// message's lines go in together) for the next chunk's, which never
	// came: they are not in the session, and the next import takes their
	// lines in again, whole; they are not counted as in it.
	fi.res.Lines -= fi.groupLines
	fi.res.Events -= len(fi.group)
	fi.res.BytesIn -= fi.groupBytes
	fi.group, fi.groupLines, fi.groupBytes = fi.group[:0], 0, 0
	if fi.res.Lines == 0 && fi.created {
		if _, rerr := fi.r.Log.Remove(fi.sess.ID); rerr != nil {
			return errors.Join(err, fmt.Errorf("remove the empty session %s: %w", fi.sess.ID, rerr))
		}
		fi.res.Session, fi.res.Parent = nil, nil
		return err
	}
	if fi.res.Lines == 0 && !fi.created {
		// None taken this time, but the session holds the lines an
		// earlier import took in before where the file stops: named, so
		// that "failed" does not read as if nothing of the file were in.
		return fmt.Errorf("%w (the lines before, taken in by an earlier import, are in session %s: import it again once it reads whole, a copy from where it came, for the rest)", err, fi.sess.ID)
	}
	if fi.res.Lines == 0 {
		return err
	}
	// "Again" only helps once the file reads to its end: still damaged,
	// the next import stops where this one did.
	return fmt.Errorf("%w (the %d line(s) before are in session %s: import it again once it reads whole, a copy from where it came, for the rest)", err, fi.res.Lines, fi.sess.ID)
}

// fileImport is the state of taking one file's lines in, chunk by chunk.
type fileImport struct {
	r         *Rook
	opts      ImportOptions
	path      string
	zst       bool
	rep       *ImportReport
	res       *ImportedFile
	known     map[string]eventlog.Meta
	info      func() sourceSession // what the mapper knows of the session so far
	captured  backupSet
	sess      *eventlog.Meta // nil until made, at the first line that is an entry
	created   bool           // sess was made by this import
	entry     bool           // a line that is an entry was seen
	written   bool           // a line that is not filler (fillerOf) was seen
	filler    filler         // the kinds of filler of the lines that are only filler
	content   int            // the lines seen that are not filler
	cutLast   bool           // the last of them is cut short (no newline) and not JSON, or held
	noEntry   bool           // none in the first holdBytes: not a transcript
	lineNo    int            // the next line's number in the file
	held      []pendingLine  // lines waiting for the next chunk
	heldBytes int64
	timed     bool      // last is known (the first time the file has, or its session's last)
	last      time.Time // the time of the line before
	modTime   time.Time // when the file was last written: the time of lines before any with one
	group     []eventlog.Event
	prevGrp   string
	// groupLines and groupBytes are the source lines of the events in
	// group, and their bytes: counted in res, not in the session yet.
	groupLines int
	groupBytes int64
	// openEnd: the last unit of lines stored is one a read going on
	// would not have stored as it is (store): the import's end is
	// recorded (Source.Stops).
	openEnd bool
	// stopBefore is where an import before this one stopped without
	// its metadata saying so (a crash, a .zst damaged part way: the
	// session's lines go on past Source.Size), recorded with this one's
	// (Source.Stops); 0: none.
	stopBefore int64
	// unknown are the entry types rook does not know met in the lines
	// taken in, each reported once, at its first line.
	unknown map[string]*unknownLines
	// toolResults are the names of the tool-results files the session
	// holds (heldToolResults); nil until a line names one.
	toolResults map[string]bool
	// continued is sourceNames.continuedIn: the source session ids some
	// known session's file says it went on in.
	continued map[string]bool
	// copied are the keys (copiedLine) of the lines of the session this
	// file's session begins by copying: a Codex fork's parent's
	// token_counts (forkParentCounts), a Claude Code continuation's
	// continued session's model lines (continuedTurns). Read at the first
	// line that counts tokens (copiedRead); nil when the file copies no
	// session imported.
	copied     map[string]bool
	copiedRead bool
	// copiedIn and copiedOut are the tokens of the copied lines this
	// import took in (copiedLine), added to Source.CopiedIn and CopiedOut
	// with the metadata that says the lines are in.
	copiedIn, copiedOut uint64
	// pastCopy: the session holds lines that count tokens already (it
	// grew): a Claude Code continuation's copy is behind.
	pastCopy bool
	// parentProblems are the keys (problemKey) of the lines of the
	// session a fork's file copies, read at its first problem line
	// (copiedProblem); copiedProblems counts the fork's problem lines
	// that copy one of them: counted and listed in the parent's file
	// only, where they were written.
	parentProblems     map[string]int
	parentProblemsRead bool
	copiedProblems     int
	// unreported are the lines that did not parse this import reports
	// (those it took in, those an import cut short took in and did not
	// report): recorded with the metadata (Source.Unreported) until
	// Import has made its report.
	unreported eventlog.Unreported
	// reportFrom, when 0 or more, is where the lines an import cut
	// short took in and did not record begin (the session's recorded
	// size): the lines between it and start are mapped again (not taken)
	// for those that did not parse, which that import never reported.
	reportFrom int64
}

// filler is what a line holds that is not text: nothing but white space,
// NUL bytes (a crash's, or space its agent set aside before writing) and a
// UTF-8 byte order mark (an editor's). A file of only filler holds no
// more than an empty one does: nothing to import yet.
type filler uint8

const (
	fillerBlank filler = 1 << iota
	fillerNUL
	fillerBOM
)

// fillerOf says what filler line is made of, 0 if it holds anything else.
func fillerOf(line []byte) filler {
	var f filler
	if b, ok := bytes.CutPrefix(line, []byte("\xef\xbb\xbf")); ok {
		f, line = fillerBOM, b
	}
	for _, c := range line {
		switch c {
		case 0:
			f |= fillerNUL
		case ' ', '\t', '\r', '\n', '\v', '\f':
		default:
			return 0
		}
	}
	if f == 0 {
		f = fillerBlank // only white space (a line of NULs or a BOM is not blank)
	}
	return f
}

// String says what a file of only f holds: "only NUL bytes and blank
// lines", or "empty" (none: emptied since it was first read).
func (f filler) String() string {
	if f == 0 {
		return "empty"
	}
	var kinds []string
	for _, k := range []struct {
		f    filler
		what string
	}{{fillerBOM, "a byte order mark"}, {fillerNUL, "NUL bytes"}, {fillerBlank, "blank lines"}} {
		if f&k.f != 0 {
			kinds = append(kinds, k.what)
		}
	}
	if n := len(kinds); n > 2 {
		kinds = []string{strings.Join(kinds[:n-1], ", "), kinds[n-1]}
	}
	return "only " + strings.Join(kinds, " and ")
}

// reportUnrecorded reports the lines of lines (sourceMapper.unreported)
// that did not parse, of data, the file's bytes from off on, whose first
// line is line no: lines an import stopped part way took in and did not
// report (fileImport.reportFrom).
func (fi *fileImport) reportUnrecorded(lines []pendingLine, data []byte, off int64, no int) {
	at := off
	for _, p := range lines {
		no += bytes.Count(data[at-off:p.off-off], []byte{'\n'})
		at = p.off
		fi.rep.unparsedLine(fi.res, &fi.unreported, fi.path, no, p.m.Unparsed)
	}
}

// unreportedNote says of a file found unchanged that the lines that did
// not parse reported now are those an import cut short did not report.
func unreportedNote(u *eventlog.Unreported) string {
	if u == nil {
		return ""
	}
	return fmt.Sprintf("%d line(s) that did not parse, taken in by an import cut short (killed, a crash) before it reported them: reported now", u.Lines)
}

// joinNotes joins the notes of a file that are not empty with "; ".
func joinNotes(notes ...string) string {
	return strings.Join(slices.DeleteFunc(notes, func(n string) bool { return n == "" }), "; ")
}

// see notes what a line of the file is (fileImport.written, filler,
// content, cutLast): a line taken in, or, held, a last line left for the
// next import (beingWritten), seen without being taken in.
func (fi *fileImport) see(p pendingLine, held bool) {
	if f := fillerOf(p.line); f != 0 {
		fi.filler |= f
		return
	}
	fi.written = true
	fi.content++
	fi.cutLast = held || p.m.Unparsed == truncatedLine+"not JSON"
}

// take takes in the lines of a chunk. Lines wait for the next chunk while
// the file has shown no entry (it may be no transcript at all), while it
// has shown no time (the first lines take the first time it has), and
// while they are a run of notes that the next chunk may go on.
func (fi *fileImport) take(lines []pendingLine, final bool) error {
	for i, p := range lines {
		lines[i].no = fi.lineNo
		copied := (p.m.Unparsed != "" || p.m.Unknown != "") && fi.copiedProblem(p.line)
		if copied {
			fi.copiedProblems++
		}
		if p.m.Unparsed == "" {
			fi.entry = true
		} else if !copied {
			fi.rep.unparsedLine(fi.res, &fi.unreported, fi.path, fi.lineNo, p.m.Unparsed)
		}
		if p.m.Unknown != "" && !copied {
			fi.unknownLine(p.m.Unknown)
		}
		fi.see(p, false)
		fi.lineNo++
		fi.heldBytes += int64(len(p.line))
	}
	fi.held = append(fi.held, lines...)
	// Waiting is bounded: past holdBytes of lines, a file that has
	// shown no entry is no transcript, and one that has shown no time or
	// working directory goes on without (a file read whole would look
	// further: no transcript of Claude Code or Codex comes to this).
	patient := !final && fi.heldBytes <= holdBytes
	if fi.sess == nil {
		if !fi.entry {
			if !patient {
				fi.held, fi.heldBytes = nil, 0 // importFile fails the file
				fi.noEntry = !final            // having looked at only part of it
			}
			return nil
		}
		if fi.info().Workspace == "" && patient {
			return nil // captures of file backups are made in the workspace
		}
		m, err := fi.r.Log.Create(importedMeta(fi.opts.Format, fi.path, fi.zst, fi.info(), fi.known))
		if err != nil {
			return err
		}
		fi.sess, fi.created, fi.res.Session, fi.res.Parent = &m, true, &m.ID, m.Parent
	}
	if !fi.timed {
		for _, p := range fi.held {
			if !p.m.Time.IsZero() {
				fi.last, fi.timed = p.m.Time, true
				break
			}
		}
		if !fi.timed && patient {
			return nil
		}
		if !fi.timed {
			// No line has a time (a file of Claude Code's summaries
			// only): when the file was written, not when it is
			// imported.
			fi.last = fi.modTime
		}
		fi.timed = true
	}
	held, err := fi.store(fi.held, final)
	// Copied, their bytes too: the lines stored before them, and the rest
	// of their chunk, would stay in memory through the next chunk.
	fi.held, fi.heldBytes = make([]pendingLine, len(held)), 0
	for i, p := range held {
		p.line = bytes.Clone(p.line)
		p.cuts = append([]stringCut(nil), p.cuts...)
		for j := range p.cuts {
			p.cuts[j].Text = bytes.Clone(p.cuts[j].Text)
		}
		fi.held[i] = p
		fi.heldBytes += int64(len(p.line))
	}
	if err == nil && final {
		err = fi.flushGroup()
	}
	return err
}

// copiedProblem says whether line, a problem line (one that does not
// parse, or of an entry type rook does not know) of a fork's file, is a
// copy of a line of the session it was forked from, imported already
// (this run or before): a fork's file begins with a copy of its parent's
// lines, problem lines too, and the report counted each twice, listing it
// in both files. The copy is the parent's line, but for what a copy writes
// again (problemKey). False for a file that is no fork, or whose parent
// is not imported (or does not read: the line is then reported here).
// Each of the parent's lines is the copy of one line only: a fork's own
// line like one of them (the same type and payload, written again at
// another time) is its own, reported here; so is any line of a fork's
// file grown since its last import, which took the copy in (the copy is
// where the file begins).
func (fi *fileImport) copiedProblem(line []byte) bool {
	if !fi.parentProblemsRead {
		fi.parentProblemsRead = true
		info := fi.info()
		if !info.Fork || info.ParentID == "" || fi.res.Status == ImportGrown {
			return false
		}
		pid, ok := parentOf(fi.known, info.ParentID, fi.path)
		if !ok || (fi.sess != nil && pid == fi.sess.ID) {
			return false
		}
		keys := map[string]int{}
		err := fi.r.eachEvent(pid, func(ev eventlog.Event) error {
			if ev.Kind != eventlog.KindNote {
				return nil // a problem line is kept as a note
			}
			body, imported, err := fi.r.readBody(ev.Body)
			if err != nil || !imported {
				return err
			}
			for _, l := range sourceLines(body) {
				keys[problemKey(l)]++
			}
			return nil
		})
		if err != nil {
			return false // reported here, as if the parent were not there
		}
		fi.parentProblems = keys
	}
	k := problemKey(line)
	if fi.parentProblems[k] == 0 {
		return false
	}
	fi.parentProblems[k]--
	return true
}

// problemKey is a line as a copy of it is the same: a JSON object without
// the members a fork's copy writes again (Codex: its timestamp; Claude
// Code: forkedFrom, and the session id), any other line as it is.
func problemKey(line []byte) string {
	line = trimNewline(line)
	var obj map[string]json.RawMessage
	if json.Unmarshal(line, &obj) != nil || obj == nil {
		return "raw:" + string(line)
	}
	delete(obj, "timestamp")
	delete(obj, "forkedFrom")
	delete(obj, "sessionId")
	b, err := json.Marshal(obj) // members sorted
	if err != nil {
		return "raw:" + string(line)
	}
	return "obj:" + string(b)
}

// unknownLines are the lines of one entry type rook does not know, in a
// file: how many, and where their problem is listed (-1: left out).
type unknownLines struct{ lines, problem int }

// unknownLine counts a line of an entry type rook does not know (the
// line at lineNo). A file's lines of one type are one problem, at the
// first of them, which says how many: a newer agent may write thousands.
func (fi *fileImport) unknownLine(typ string) {
	fi.res.Unknown++
	u := fi.unknown[typ]
	if u == nil {
		if fi.unknown == nil {
			fi.unknown = map[string]*unknownLines{}
		}
		u = &unknownLines{problem: fi.rep.problem(ImportProblem{File: fi.path, Line: fi.lineNo})}
		fi.unknown[typ] = u
	}
	u.lines++
	if u.problem >= 0 {
		fi.rep.Problems[u.problem].Reason = unknownReason(typ, u.lines)
	}
}

// unknownReason is the problem reported of a file's lines of an entry type
// rook does not know, at the first of them.
func unknownReason(typ string, lines int) string {
	if lines == 1 {
		return fmt.Sprintf("a line of entry type %q, which rook does not know: kept byte for byte as a note", typ)
	}
	return fmt.Sprintf("the first of %d lines of entry type %q, which rook does not know: kept byte for byte as notes", lines, typ)
}

// appendWithGroup appends ev in one group with the events pending: a
// capture with the line that names its backups, so that no crash keeps
// the line and loses the capture (a grown file's lines already imported
// are not captured again).
func (fi *fileImport) appendWithGroup(ev eventlog.Event) error {
	fi.group = append(fi.group, ev)
	return fi.flushGroup()
}

func (fi *fileImport) flushGroup() error {
	if len(fi.group) == 0 {
		return nil
	}
	_, err := appendRelabeling(fi.r.Log, fi.sess.ID, fi.group)
	fi.group, fi.groupLines, fi.groupBytes = fi.group[:0], 0, 0
	return err
}

// store appends lines as events: each line one event, the lines of one
// message one group, a run of plain notes one event. Unless final, a run
// of notes that reaches the end of lines is returned, to go on with the
// next chunk's.
func (fi *fileImport) store(lines []pendingLine, final bool) ([]pendingLine, error) {
	res := fi.res
	for i := 0; i < len(lines); {
		// A run of plain notes (progress, snapshots, queue operations...)
		// is one event: they are most of a Claude Code file's lines, and a
		// transcript reads better without them one by one.
		j := i + 1
		runOpen := false // a run of notes the lines after could go on
		if mergeableLine(lines[i].m) {
			size := len(lines[i].line)
			for j < len(lines) && j-i < maxMergedLines && mergeableLine(lines[j].m) && size+len(lines[j].line) <= maxMergedBytes {
				size += len(lines[j].line)
				j++
			}
			runOpen = j == len(lines) && j-i < maxMergedLines && size < maxMergedBytes
			if runOpen && !final {
				return lines[i:], nil
			}
		}
		unit := lines[i:j]
		i = j
		// Stored as it stands where the lines end (a run of notes the
		// next import does not add to, a line with no newline yet), the
		// unit is one no read going on makes: where this import stops is
		// recorded (Source.Stops), for Reread to stop there too.
		last := unit[len(unit)-1].line
		fi.openEnd = runOpen || len(last) == 0 || last[len(last)-1] != '\n'
		ms := make([]mappedLine, len(unit))
		for k, p := range unit {
			ms[k] = p.m
		}
		id, err := fi.r.putSourceLines(unit)
		if err != nil {
			return nil, err
		}
		m := mergedLine(ms)
		t := m.Time
		if t.IsZero() {
			t = fi.last
		}
		if !t.IsZero() {
			fi.last = t
		}
		ev := eventlog.Event{Kind: m.Kind, Label: capLabel(m.Label), Body: id, TokensIn: m.TokensIn, TokensOut: m.TokensOut, Time: t}
		if (ev.TokensIn > 0 || ev.TokensOut > 0) && len(unit) == 1 && fi.copiedLine(unit[0].line, m.Label) {
			// A line copied from the session this one began as a copy of
			// (a Codex fork's parent's token_count, a Claude Code
			// continuation's continued session's model line): that
			// session spent the tokens, and counts them. The event
			// counts them as its line says, as it does when the copy is
			// imported first, and the session's totals leave them out
			// (Source.CopiedIn): should that session be removed, they
			// count here again (keepCopiedCounted). It stays an event of
			// its own, as the line it copies is, so that a copy of this
			// copy finds it too.
			fi.copiedIn += ev.TokensIn
			fi.copiedOut += ev.TokensOut
		}
		if m.Group == "" || m.Group != fi.prevGrp || len(fi.group) == 16 {
			if err := fi.flushGroup(); err != nil {
				return nil, err
			}
		}
		fi.group = append(fi.group, ev)
		fi.prevGrp = m.Group
		res.Lines += len(unit)
		res.Events++
		fi.groupLines += len(unit)
		for _, p := range unit {
			res.BytesIn += int64(len(p.line))
			fi.groupBytes += int64(len(p.line))
		}
		// File backups named in the unit become a capture, so that
		// `rook session diff` and rewind work on the session.
		n, gone, err := fi.r.captureBackups(fi.sess, fi.info(), fi.path, unit, fi.captured, t, fi.appendWithGroup, fi.rep.problem, &res.SideBytesIn)
		res.BackupsMissing += gone
		if err != nil {
			return nil, err
		}
		res.Events += n
		// Outputs Claude Code saved beside the transcript, of which the
		// lines hold only a preview.
		if n, err = fi.attachToolResults(unit, t); err != nil {
			return nil, err
		}
		res.Events += n
	}
	return nil, nil
}

// copiedLine says whether line, one that counts tokens and is an event on
// its own, is one the file's session copied from a session imported
// before it, which spent those tokens. Nothing in the line says so; its
// key does (copied):
//   - A Codex fork's file holds a copy of its parent's lines, token_counts
//     included, and nothing marks where the copy ends
//     (codexMapper.sessionMeta), but a copied token_count's payload is byte
//     for byte one of the parent's (codexPayloadSum).
//   - A Claude Code session sent to the background goes on in a new file
//     that begins with a copy of the old one's lines
//     (claudeMapper.continuedIn), their uuids kept, their usage too, and
//     no forkedFrom to mark them. A copied line's uuid is one of the old
//     session's lines' (claudeUUID); the continuation's own turns have
//     new ones.
//   - A Claude Code fork (claudeMapper.forkedFrom) begins with a copy of
//     its parent's lines, their usage kept, each marked forkedFrom
//     {sessionId, messageUuid}: messageUuid is the uuid of the parent's
//     line it copies (claudeCopies; /branch keeps the uuid too). Not
//     every line so marked was copied from the parent itself (a fork of a
//     fork's copy of the grandparent's lines): as for a continuation, the
//     parent's lines say which the parent counts, its own or its copies.
//
// The copied session's keys are read from its session, once: it is
// decided here, as the lines are stored, file after file, rather than as
// they are mapped, ahead and in parallel, when that session may not be in
// yet (sourceNames.waits orders one run's files so that it is). The
// events count the copied lines' tokens in either order (they are written
// once, and count again should that session be removed); what the copy
// leaves out of its totals is in its metadata: added here, or, for a copy
// imported before the session it copies (or without it), recorded when
// importing that session later links it (copiedTokens). For a file that copies no session,
// this is a map lookup or two, once.
func (fi *fileImport) copiedLine(line []byte, label string) bool {
	codex := fi.opts.Format == FormatCodex
	if codex && label != codexTokenCountLabel || !codex && fi.pastCopy {
		return false
	}
	if !fi.copiedRead {
		fi.copiedRead = true
		switch {
		case codex:
			fi.copied = fi.forkParentCounts()
		case fi.info().Fork:
			fi.copied = fi.forkedFromTurns()
		default:
			fi.copied = fi.continuedTurns()
		}
	}
	if len(fi.copied) == 0 {
		return false
	}
	line = trimNewline(line)
	if codex {
		sum, ok := codexPayloadSum(line)
		return ok && fi.copied[string(sum[:])]
	}
	return claudeCopies(fi.copied, line)
}

// forkParentCounts are the payload sums of the token_counts of the
// session a Codex fork's session was forked from (or a subagent's, whose
// rollout holds a copy of its parent's history, was spawned by), or nil
// when it is neither or its parent is not imported.
func (fi *fileImport) forkParentCounts() map[string]bool {
	m := fi.sess
	if fi.opts.Format != FormatCodex || m.Source == nil || m.Source.Parent == "" {
		return nil
	}
	if !slices.Contains(m.Tags, forkTag) && !(slices.Contains(m.Tags, subagentTag) && fi.info().Fork) {
		// Neither a fork nor a subagent whose rollout holds a copy of its
		// parent's (codexMapper.sessionMeta; its metadata says so once
		// its lines are in: copiesParent): its parent's token_counts are
		// not read for nothing.
		return nil
	}
	pid, ok := parentOf(fi.known, m.Source.Parent, fi.path)
	if !ok {
		return nil
	}
	sums, err := fi.r.codexCountSums(pid)
	if err != nil {
		// The fork's lines are imported all the same, as if its parent
		// were not there.
		fi.rep.problem(ImportProblem{File: fi.path, Reason: fmt.Sprintf("session %s, which it was forked from: its token counts cannot be read (%v): the token counts it copied from it count again; `rook store verify` checks the store", pid, err)})
		return nil
	}
	return sums
}

// codexCountSums are the payload sums (codexPayloadSum) of the token_count
// lines of an imported Codex session: its events labeled so, each a line
// of its own (a token_count that counts tokens is never merged with the
// notes around it: mergeableLine). The log reads the events this import
// appended and did not flush yet too, so a parent imported earlier in the
// same run is read whole: its file was stored before its fork's.
func (r *Rook) codexCountSums(id eventlog.ID) (map[string]bool, error) {
	sums := map[string]bool{}
	err := r.eachEvent(id, func(ev eventlog.Event) error {
		if ev.Label != codexTokenCountLabel {
			return nil
		}
		body, imported, err := r.readBody(ev.Body)
		if err != nil {
			return fmt.Errorf("event %d: %w", ev.Seq, err)
		}
		if !imported {
			return nil
		}
		for _, line := range sourceLines(body) {
			if sum, ok := codexPayloadSum(trimNewline(line)); ok {
				sums[string(sum[:])] = true
			}
		}
		return nil
	})
	return sums, err
}

// copiedTokens are the tokens the events of m, a Codex fork or a Claude
// Code fork or continuation, count for lines that copy one of its parent
// pid's (the keys copiedLine matches: a token_count's payload sum, a
// model line's uuid), whichever was imported first (copiedLine leaves an
// event's tokens as its line says). (A Claude Code fork's copied line
// that a rook before this one stored counts none.)
func (r *Rook) copiedTokens(m eventlog.Meta, pid eventlog.ID, parents *parentKeys) (in, out uint64, err error) {
	codex := m.Source.Format == FormatCodex
	keys, err := parents.of(pid, codex)
	if err != nil {
		return 0, 0, &sessionUnread{id: pid, err: err}
	}
	if len(keys) == 0 {
		return 0, 0, nil
	}
	defer func() {
		if err != nil {
			err = &sessionUnread{id: m.ID, err: err}
		}
	}()
	noText := func(cas.Key) ([]byte, error) { return nil, nil }
	err = r.eachEvent(m.ID, func(ev eventlog.Event) error {
		if ev.TokensIn == 0 && ev.TokensOut == 0 {
			return nil
		}
		sl, imported, err := r.importedLine(ev)
		if err != nil || !imported {
			return err
		}
		// A uuid is never cut out of its line (claudeTurnUUIDs); a
		// token_count's payload sum is of the whole line, strings and all.
		expand := noText
		if codex {
			expand = r.Store.Get
		}
		b, err := sl.expand(expand)
		if err != nil {
			return fmt.Errorf("event %d: %w", ev.Seq, err)
		}
		lines := sourceLines(b)
		if len(lines) != 1 {
			return nil // a line that counts tokens is an event of its own
		}
		line := trimNewline(lines[0])
		copied := false
		if codex {
			sum, ok := codexPayloadSum(line)
			copied = ok && keys[string(sum[:])]
		} else {
			copied = claudeCopies(keys, line)
		}
		if copied {
			in, out = in+ev.TokensIn, out+ev.TokensOut
		}
		return nil
	})
	return in, out, err
}

// sessionUnread is the error of copiedTokens: which of the two sessions,
// the fork or its parent, does not read (its log, or an object of its
// events), for the way out forkNotCounted names.
type sessionUnread struct {
	id  eventlog.ID
	err error
}

func (e *sessionUnread) Error() string { return e.err.Error() }
func (e *sessionUnread) Unwrap() error { return e.err }

// parentKeys are the keys copiedLine matches of each parent session
// (codexCountSums, claudeTurnUUIDs), read once per linkParents: a parent
// whose file grew is counted against for every fork it has
// (recountCopied), and was read again for each.
type parentKeys struct {
	r  *Rook
	by map[eventlog.ID]map[string]bool
}

// of reads the keys of parent session pid, a Codex one or a Claude
// Code one, unless it has already.
func (p *parentKeys) of(pid eventlog.ID, codex bool) (map[string]bool, error) {
	if keys, ok := p.by[pid]; ok {
		return keys, nil
	}
	var keys map[string]bool
	var err error
	if codex {
		keys, err = p.r.codexCountSums(pid)
	} else {
		keys, err = p.r.claudeTurnUUIDs(pid)
	}
	if err != nil {
		return nil, err
	}
	if p.by == nil {
		p.by = map[eventlog.ID]map[string]bool{}
	}
	p.by[pid] = keys
	return keys, nil
}

// importedLine reads the body of ev as an imported line (a source
// object); imported is false for a body appended in rook. A body that
// does not decode is a CorruptError naming it.
func (r *Rook) importedLine(ev eventlog.Event) (sl sourceLine, imported bool, err error) {
	b, kind, err := r.Store.GetKind(ev.Body)
	if err != nil {
		return sl, false, fmt.Errorf("event %d: %w", ev.Seq, err)
	}
	if kind != cas.KindSource {
		return sl, false, nil
	}
	if sl, err = decodeSourceLine(b); err != nil {
		return sl, true, fmt.Errorf("event %d: %w", ev.Seq, &cas.CorruptError{ID: ev.Body, Reason: err.Error()})
	}
	return sl, true, nil
}

// forkedFromTurns are the uuids of the model's lines of the session a
// Claude Code fork's lines say it was forked from (claudeMapper.forkedFrom),
// or nil when that session is not imported.
func (fi *fileImport) forkedFromTurns() map[string]bool {
	info := fi.info()
	if !info.Fork || info.ParentID == "" || info.Subagent {
		return nil
	}
	pid, ok := parentOf(fi.known, info.ParentID, fi.path)
	if !ok || pid == fi.sess.ID {
		return nil
	}
	uuids, err := fi.r.claudeTurnUUIDs(pid)
	if err != nil {
		// The lines are imported all the same, as if the session they
		// were forked from were not there.
		fi.rep.problem(ImportProblem{File: fi.path, Reason: fmt.Sprintf("session %s, which it was forked from: its lines cannot be read (%v): the tokens it copied from it count again; `rook store verify` checks the store", pid, err)})
		return nil
	}
	return uuids
}

// continuedTurns are the uuids of the model's lines of the session that
// fi's session continues (a known session whose file's continued-in line
// names it, the one linkContinuations links it to), or nil when none is
// imported.
func (fi *fileImport) continuedTurns() map[string]bool {
	m := fi.sess
	if m.Source == nil || m.Source.ID == "" || !fi.continued[m.Source.ID] || slices.Contains(m.Tags, subagentTag) {
		return nil
	}
	sid := m.Source.ID
	prev := ""
	for _, k := range fi.known {
		if k.Source.ContinuedIn == sid && k.Source.ID != sid && (prev == "" || k.Source.ID < prev) {
			prev = k.Source.ID // two naming one: linkContinuations' choice
		}
	}
	if prev == "" {
		return nil
	}
	pid, ok := parentOf(fi.known, prev, fi.path)
	if !ok || pid == m.ID {
		return nil
	}
	uuids, err := fi.r.claudeTurnUUIDs(pid)
	if err != nil {
		// The lines are imported all the same, as if the session they
		// continue were not there.
		fi.rep.problem(ImportProblem{File: fi.path, Reason: fmt.Sprintf("session %s, which it continues: its lines cannot be read (%v): the tokens it copied from it count again; `rook store verify` checks the store", pid, err)})
		return nil
	}
	return uuids
}

// claudeTurnUUIDs are the uuids of the model's lines of an imported Claude
// Code session (the events of the kinds mapAssistant gives a line with a
// message, each a line of its own: such a line is never merged with
// others, mergeableLine). A uuid is short, never a string the import cut
// out of its line (MinCutString), so the line is read from its object
// alone, each cut string put back empty. The log reads the events this
// import appended and did not flush yet too, so a session imported earlier
// in the same run is read whole.
func (r *Rook) claudeTurnUUIDs(id eventlog.ID) (map[string]bool, error) {
	uuids := map[string]bool{}
	noText := func(cas.Key) ([]byte, error) { return nil, nil }
	err := r.eachEvent(id, func(ev eventlog.Event) error {
		if ev.Kind != eventlog.KindAssistant && ev.Kind != eventlog.KindReasoning && ev.Kind != eventlog.KindToolCall {
			return nil
		}
		sl, imported, err := r.importedLine(ev)
		if err != nil || !imported {
			return err
		}
		lines, _ := sl.expand(noText)
		for _, line := range sourceLines(lines) {
			if u, ok := claudeUUID(trimNewline(line)); ok {
				uuids[u] = true
			}
		}
		return nil
	})
	return uuids, err
}

// importFlushBytes is how many source bytes an import takes in between two
// flushes (each a few fsyncs). A file's session records in its metadata
// how much of the file it holds (StageMeta), written by the first flush
// after its lines, the log's own barriers included: once the lines are
// durable, in one batch with the other sessions' (the sessions created
// since the last flush come into existence with it). A crash between the
// two leaves the metadata behind the log, which the next import sees
// (importedBytes) and corrects.
const importFlushBytes = 64 << 20

// pendingLine is a line mapped and waiting to be stored.
type pendingLine struct {
	off  int64
	line []byte
	m    mappedLine
	cuts []stringCut // the strings to store apart
	no   int         // its line number in the file (take), for the problems it has
}

// capLabel keeps a label within what an event may carry.
func capLabel(s string) string {
	if len(s) > 200 {
		return s[:CutUTF8([]byte(s), 200)]
	}
	return s
}

// appendRelabeling appends evs to session id as one group, as
// Log.Append does, for an import: a label is the transcript's (a tool or
// model name, an entry type, a file's name), and one the log refuses
// because, with the bytes before it, it would hold a whole event record
// (eventlog.LabelRecordError: readers would take it for one) is only a
// display hint, not worth the import: the event goes in with it
// escaped (strconv.QuoteToASCII's escapes, without the quotes), or, if
// that is refused too or changes nothing, with no label. The event's
// body, the line as the file has it, is what export gives back. Bytes
// that hold a record whose start lies before the group, in an event
// appended before, and whose end no label of the group can change, are
// the error: a transcript made to hit rook's own bytes.
func appendRelabeling(l *eventlog.Log, id eventlog.ID, evs []eventlog.Event) (uint64, error) {
	escaped := make([]bool, len(evs))
	for {
		seq, err := l.Append(id, evs...)
		var lr *eventlog.LabelRecordError
		if !errors.As(err, &lr) {
			return seq, err
		}
		// The refused bytes end in event lr.Index: its label changes
		// them, or, with none left, that of an event before it in the
		// group, where they may begin.
		i := lr.Index
		for i >= 0 && evs[i].Label == "" {
			i--
		}
		if i < 0 {
			return seq, err
		}
		if q := strconv.QuoteToASCII(evs[i].Label); !escaped[i] && q[1:len(q)-1] != evs[i].Label {
			evs[i].Label, escaped[i] = capLabel(q[1:len(q)-1]), true
		} else {
			evs[i].Label = ""
		}
	}
}

// forkTag tags an imported session forked from another (a Codex
// rollout's forked_from_id, a Claude Code transcript's forkedFrom): its parent is the session whose lines it
// begins by copying, not one that spawned it.
const forkTag = "fork"

// subagentTag tags an imported subagent's session: its parent spawned it.
const subagentTag = "subagent"

// isSubagent says whether m is an imported subagent's session (tagged
// subagentTag). A fork made in rook of one (ForkAt: session fork, a
// rewind) copies its tags, that one with them, but nothing spawned it:
// rook forked it, and it is read as a fork (as taggedName reads a fork's
// copied inbox or server tag).
func isSubagent(m eventlog.Meta) bool {
	return m.ForkAt == nil && slices.Contains(m.Tags, subagentTag)
}

// copiesParent says whether m, an imported session, may begin with a copy
// of its parent's lines, whose tokens the parent spent (copiedLine,
// copiedTokens): a fork (forkTag), or a Codex subagent that Codex spawned
// with its parent's history (spawn_agent's fork_context, or fork_turns,
// whose default is all: AgentControl.spawn_forked_thread keeps the
// parent's messages, session_meta and events, its token_counts included,
// byte for byte), which its rollout's copy of the parent's session_meta
// says (Source.CopiesParent). A subagent spawned without it copied
// nothing: its events are not read against its parent's when it is
// linked, or its parent's file grows (a parent with 40 such subagents
// read all their events at every import of its growing file). (A Claude
// Code subagent's transcript copies nothing.)
func copiesParent(m eventlog.Meta) bool {
	return slices.Contains(m.Tags, forkTag) ||
		m.Source != nil && m.Source.Format == FormatCodex && m.Source.CopiesParent && slices.Contains(m.Tags, subagentTag)
}

// ImportedFork says whether m is an imported session linked to the session
// it was forked from (forkTag), which it holds a copy of the lines of
// rather than a fork point (ForkAt) in its events.
func ImportedFork(m eventlog.Meta) bool {
	return m.Parent != nil && m.Source != nil && slices.Contains(m.Tags, forkTag)
}

// tagForks tags forkTag the sessions of the Codex files this import met
// again (unchanged or grown) that are forks imported before rook tagged
// them: without the tag they show as children of the session they were
// forked from. A fork says so in its first line (its session_meta's
// forked_from_id), which the import does not read of a file it knows
// unchanged by its stat, nor of one that grew: it is read from the
// session's own first line, which is that line. Only the metadata
// changes; once tagged, a session is not looked at again.
func (r *Rook) tagForks(known map[string]eventlog.Meta, rep *ImportReport) error {
	if rep.Format != FormatCodex {
		return nil
	}
	for _, f := range rep.Files {
		if f.Session == nil || (f.Status != ImportUnchanged && f.Status != ImportGrown) {
			continue
		}
		m, ok := known[f.Path]
		if !ok || m.ID != *f.Session || m.Source.Parent == "" || slices.Contains(m.Tags, forkTag) || slices.Contains(m.Tags, subagentTag) {
			continue // not linked to another, or tagged what it is already
		}
		info, err := r.firstLineSession(m.ID)
		if err != nil {
			// It stays as it was, a child: the import itself is done.
			rep.problem(ImportProblem{File: f.Path, Reason: fmt.Sprintf("session %s: its first line, which says whether it is a fork, cannot be read (%v): it is left untagged; `rook store verify` checks the store", m.ID, err)})
			continue
		}
		if !info.Fork || info.ParentID != m.Source.Parent {
			continue
		}
		m.Tags = append(slices.Clone(m.Tags), forkTag)
		if err := r.Log.UpdateMeta(m); err != nil {
			return err
		}
		known[f.Path] = m
		rep.ForksTagged++
	}
	return nil
}

// firstLineSession is what the lines of a Codex session's first source
// object (its rollout's first lines, the session_meta first) say of the
// session.
func (r *Rook) firstLineSession(id eventlog.ID) (sourceSession, error) {
	evs, err := r.Log.Read(id, 0, 16)
	if err != nil {
		return sourceSession{}, err
	}
	for _, ev := range evs {
		b, kind, err := r.Store.GetKind(ev.Body)
		if err != nil {
			return sourceSession{}, fmt.Errorf("event %d: %w", ev.Seq, err)
		}
		if kind != cas.KindSource {
			continue
		}
		sl, err := decodeSourceLine(b)
		if err != nil {
			return sourceSession{}, fmt.Errorf("event %d: %w", ev.Seq, err)
		}
		lines, err := sl.expand(r.Store.Get)
		if err != nil {
			return sourceSession{}, fmt.Errorf("event %d: %w", ev.Seq, err)
		}
		m := newCodexMapper()
		for _, line := range sourceLines(lines) {
			m.mapLine(trimNewline(line))
		}
		return m.session(), nil
	}
	return sourceSession{}, nil
}

// placeholderTitle is the title of a session whose file has no prompt or
// summary (yet).
func placeholderTitle(format, id string) string { return fmt.Sprintf("%s session %s", format, id) }

// importedMeta is the metadata of a session made from a file: its title,
// workspace and parent from what the mapper learnt (info).
func importedMeta(format, path string, zst bool, info sourceSession, known map[string]eventlog.Meta) eventlog.Meta {
	title := info.Title
	if title == "" {
		title = placeholderTitle(format, info.ID)
	}
	tags := []string{format}
	switch {
	case info.Subagent:
		tags = append(tags, subagentTag)
	case info.Fork && info.ParentID != "":
		tags = append(tags, forkTag)
	}
	m := eventlog.Meta{Title: title, Workspace: info.Workspace, Tags: tags,
		// Until its lines are in, the session holds the empty prefix of its
		// file (a crash before the first flush leaves it so).
		Source: &eventlog.Source{Format: format, Path: path, ID: info.ID, Zstd: zst, Parent: info.ParentID, ContinuedIn: info.ContinuedIn, SHA256: hashHex(nil)}}
	if info.ParentID != "" {
		if p, ok := parentOf(known, info.ParentID, path); ok {
			m.Parent = &p
		}
	}
	return m
}

// parentOf finds the session a child's parent was imported as, among the
// sessions of the format (known: by source path). Of two or more imported
// from files of that session id (copies of one tree: a backup, a project
// directory copied, not moved), the one nearest the child's file (path):
// in the most directories of its path (a subagent's parent is in the
// directory above its subagents/), then in the fewest others (not a copy
// in a directory below); of those, the newest.
func parentOf(known map[string]eventlog.Meta, sid, path string) (eventlog.ID, bool) {
	var best *eventlog.Meta
	near, far := -1, 0
	for from, m := range known {
		if m.Source.ID != sid || m.Source.Parent == sid {
			continue
		}
		n, more := sharedDirs(from, path)
		if best == nil || n > near || n == near && (more < far || more == far && best.ID.String() < m.ID.String()) {
			best, near, far = &m, n, more
		}
	}
	if best == nil {
		return eventlog.ID{}, false
	}
	return best.ID, true
}

// sharedDirs is how many directories, from the root, the path of file a
// has in common with b's, and how many more it has.
func sharedDirs(a, b string) (shared, more int) {
	da := strings.Split(filepath.Dir(a), string(filepath.Separator))
	db := strings.Split(filepath.Dir(b), string(filepath.Separator))
	for shared < len(da) && shared < len(db) && da[shared] == db[shared] {
		shared++
	}
	return shared, len(da) - shared
}

// linkContinuations makes each session a file says its conversation went
// on in (Source.ContinuedIn: a Claude Code transcript's continued-in line,
// claudeMapper.continuedIn) a fork of the session of that file, as its own
// file would have said by forkedFrom: it begins with a copy of that
// session's lines. Only a session linked to none (no Source.Parent, no
// Parent), not a subagent, is: what its own file says comes first. It
// sets Source.Parent and the fork tag in known; linkParents, next, links
// and stores it, whichever of the two files was imported first.
func linkContinuations(known map[string]eventlog.Meta) {
	from := map[string]string{}   // continuing session's source id -> its predecessor's
	parent := map[string]string{} // source id -> its parent's source id
	for _, m := range known {
		if c := m.Source.ContinuedIn; c != "" && c != m.Source.ID {
			if p, ok := from[c]; !ok || m.Source.ID < p { // two naming one: the same answer each time
				from[c] = m.Source.ID
			}
		}
		if m.Source.Parent != "" {
			parent[m.Source.ID] = m.Source.Parent
		}
	}
	if len(from) == 0 {
		return
	}
	paths := slices.Sorted(maps.Keys(known))
	for _, path := range paths {
		m := known[path]
		prev, ok := from[m.Source.ID]
		if !ok || m.Source.Parent != "" || m.Parent != nil || slices.Contains(m.Tags, subagentTag) {
			continue
		}
		// Never a cycle: not under a session that descends from this one.
		cycle := false
		for p, n := prev, 0; p != "" && n <= len(known); p, n = parent[p], n+1 {
			if p == m.Source.ID {
				cycle = true
				break
			}
		}
		if cycle {
			continue
		}
		src := *m.Source
		src.Parent = prev
		m.Source = &src
		if !slices.Contains(m.Tags, forkTag) {
			m.Tags = append(slices.Clone(m.Tags), forkTag)
		}
		known[path] = m
		parent[m.Source.ID] = prev
	}
}

// hasImportedForks says whether an imported fork in known is linked to
// session id: one whose totals leave out what it copied of id
// (recountCopied), to be counted again when id's file grows.
func hasImportedForks(known map[string]eventlog.Meta, id eventlog.ID) bool {
	for _, m := range known {
		if m.Parent != nil && *m.Parent == id && m.Source != nil && copiesParent(m) {
			return true
		}
	}
	return false
}

// linkParents links every child session of the format whose parent is now
// imported: children imported before their parent (in an earlier run, or
// this one) are linked as soon as the parent arrives.
func (r *Rook) linkParents(known map[string]eventlog.Meta, rep *ImportReport) error {
	inRun := map[eventlog.ID]*ImportedFile{}
	for i := range rep.Files {
		if f := &rep.Files[i]; f.Session != nil {
			inRun[*f.Session] = f
		}
	}
	// live: the store's sessions, listed once, when a child names a
	// parent: one removed (`rook session rm` it and import its file
	// again, as the README says for a session an older rook imported)
	// leaves its children naming a session that is gone; they are linked
	// again, to the one its file is imported as now.
	var live map[eventlog.ID]bool
	// forks: the forks made in rook, by parent, listed once, when a link
	// needs them (leaveCopiedOutOfForks).
	forks := &forkIndex{r: r}
	// parents: the keys of the parents a fork is counted against, read
	// once in this run (the sessions they are read from were all written).
	parents := &parentKeys{r: r}
	// due: a session whose forks are to be recounted: its file grew in
	// this run, or it is marked (Source.RecountForks: it grew in this run
	// or in one cut short before it recounted them).
	marked := map[eventlog.ID]bool{}
	for _, m := range known {
		if m.Source.RecountForks {
			marked[m.ID] = true
		}
	}
	due := func(id eventlog.ID) bool {
		f := inRun[id]
		return f != nil && f.Status == ImportGrown || marked[id]
	}
	// notRecounted: a session one of whose forks could not be recounted:
	// its mark stays, and the next import tries again.
	notRecounted := map[eventlog.ID]bool{}
	gone := func(id eventlog.ID) (bool, error) {
		if live == nil {
			ids, err := r.Log.IDs()
			if err != nil {
				return false, err
			}
			live = make(map[eventlog.ID]bool, len(ids))
			for _, id := range ids {
				live[id] = true
			}
		}
		return !live[id], nil
	}
	// parentOfID: each known session's parent, made at the first link
	// that needs it and kept up with the links made since.
	var parentOfID map[eventlog.ID]*eventlog.ID
	for path, m := range known {
		if m.Source.Parent == "" {
			continue
		}
		f := inRun[m.ID]
		stale := false
		if m.Parent != nil {
			var err error
			if stale, err = gone(*m.Parent); err != nil {
				return err
			}
		}
		if !stale && m.Parent != nil && due(*m.Parent) {
			recounted := m
			if err := r.recountCopied(forks, parents, &recounted); err != nil {
				// A fork that does not read (its log or metadata damaged)
				// is its own problem: the rest of the import, and the
				// other links, go on; it stays linked as it was, and its
				// parent's mark stays for the next import.
				notRecounted[*m.Parent] = true
				forkNotCounted(rep, known, f, path, m.ID, *m.Parent, "its parent grew, and its totals may count what it copied of the new lines twice", err)
			} else {
				m = recounted
				known[path] = m
			}
		}
		if m.Parent == nil || stale {
			p, ok := parentOf(known, m.Source.Parent, path)
			if !ok {
				if f != nil && f.Note == "" && f.Status != ImportUnchanged { // said when it came in, not at every import
					f.Note = fmt.Sprintf("its parent session %s is not imported: imported on its own (importing the parent later links them)", m.Source.Parent)
					if m.Source.Parent == m.Source.ID {
						// (parentOf takes no session for its own parent.)
						f.Note = fmt.Sprintf("it names its own session id, %s, as the session it was forked from (damaged, or written by hand): imported on its own, linked to none", m.Source.ID)
					}
				}
				continue
			}
			if parentOfID == nil {
				parentOfID = make(map[eventlog.ID]*eventlog.ID, len(known))
				for _, k := range known {
					parentOfID[k.ID] = k.Parent
				}
			}
			if parentsReach(parentOfID, p, m.ID) {
				// Files that say each was forked from the other (damaged,
				// or made by hand): linked both ways, each would leave out
				// what the other holds, and the lines both hold would count
				// nowhere. The session imported first stays unlinked and
				// counts them.
				if f != nil && f.Note == "" {
					f.Note = fmt.Sprintf("its parent session %s (session %s) says it was forked from this one in turn: left unlinked", m.Source.Parent, p)
				}
				continue
			}
			// Linked anew: what it leaves out is counted by p (a removed
			// parent's Ancestor no longer applies).
			m.Parent, m.Ancestor, m.AncestorAt = &p, nil, nil
			if copiesParent(m) {
				// Imported before its parent, its copy of the parent's
				// lines counted their tokens (fileImport.copiedLine could
				// not tell them then): they are left out of its totals
				// now, as they are when the parent comes first.
				in, out, err := r.copiedTokens(m, p, parents)
				if err != nil {
					forkNotCounted(rep, known, f, path, m.ID, p, "left unlinked from it, counting what it copied", err)
					continue
				}
				src := *m.Source
				src.CopiedIn, src.CopiedOut = in, out
				m.Source = &src
			}
			// Its forks made in rook first: a crash before m is written
			// leaves m unlinked, and the next import links it, and
			// writes them, again.
			if in, out := m.Copied(); in != 0 || out != 0 {
				if err := r.leaveCopiedOutOfForks(forks, m.ID, in, out); err != nil {
					return fmt.Errorf("session %s: its forks made in rook: %w", m.ID, err)
				}
			}
			if err := r.Log.UpdateMeta(m); err != nil {
				return err
			}
			known[path] = m
			if parentOfID != nil {
				parentOfID[m.ID] = m.Parent
			}
			if f == nil || f.Status == ImportUnchanged || f.Status == ImportGrown {
				// A session of an earlier import, its file in this run or
				// not: the summary lists only the files that came in, so
				// the count is what says it is linked now.
				rep.Linked++
			}
		}
		if f != nil {
			f.Parent, f.Fork = m.Parent, ImportedFork(m)
		}
	}
	return r.clearRecountMarks(known, notRecounted)
}

// clearRecountMarks clears the mark of each session of known whose forks
// were all recounted (Source.RecountForks): their metadata is written
// (UpdateMeta is durable when it returns), so a crash before this leaves
// the mark, and the next import's recount changes nothing.
func (r *Rook) clearRecountMarks(known map[string]eventlog.Meta, notRecounted map[eventlog.ID]bool) error {
	for _, path := range slices.Sorted(maps.Keys(known)) {
		m := known[path]
		if !m.Source.RecountForks || notRecounted[m.ID] {
			continue
		}
		src := *m.Source
		src.RecountForks = false
		m.Source = &src
		if err := r.Log.UpdateMeta(m); err != nil {
			return fmt.Errorf("session %s: clear its mark that its forks are to be recounted: %w", m.ID, err)
		}
		known[path] = m
	}
	return nil
}

// forkNotCounted reports session id, of the file at path (f, if it is in
// this run), a fork whose tokens copied from session pid could not be
// counted (its log, or its parent's, does not read: err): what became of
// it, why, and the way out. Nothing changes until the damage is mended,
// so every import reports it again.
func forkNotCounted(rep *ImportReport, known map[string]eventlog.Meta, f *ImportedFile, path string, id, pid eventlog.ID, what string, err error) {
	why := fmt.Sprintf("session %s: the tokens it copied from session %s could not be counted (%v): %s; %s",
		id, pid, err, what, unreadWayOut(known, id, err))
	rep.problem(ImportProblem{File: path, Reason: why})
	if f == nil {
		return
	}
	if f.Note != "" {
		why = f.Note + "; " + why
	}
	f.Note = why
}

// unreadWayOut is what to run for a fork that could not be counted
// (forkNotCounted; fork: its session) for the session that does not read
// (err's sessionUnread, the fork's own if none says): unreadHow (a log
// imported again is linked and counted anew). Every import reports the
// fork until then.
func unreadWayOut(known map[string]eventlog.Meta, fork eventlog.ID, err error) string {
	id := fork
	var su *sessionUnread
	if errors.As(err, &su) {
		id = su.id
	}
	var src *eventlog.Source
	for _, m := range known {
		if m.ID == id {
			src = m.Source
			break
		}
	}
	return fmt.Sprintf("every import reports it until session %s reads: %s", id, unreadHow(id, src, err))
}

// unreadHow says what to run for imported session id (src: its source,
// nil if not known) that does not read (err): an object of its events
// that does not read is put back from its transcript (`import --reread`,
// the session kept); a log whose header does not read is removed and
// its transcript imported again, which links it anew. Anything else (a
// lost dictionary file, whose objects read again once it is back; a file
// the system will not open; a record damaged inside the log; an object
// missing, which verify says how to find again or put back: a reindex,
// or --reread for an imported session's) is not mended by removing the
// session, and verify says what is wrong, as it does for those.
func unreadHow(id eventlog.ID, src *eventlog.Source, err error) string {
	const verify = "`rook store verify` checks the rest of the store"
	var ce *cas.CorruptError
	var nd *cas.NeedsDictError
	var he *eventlog.HeaderError
	switch {
	case src == nil || src.Path == "", errors.As(err, &nd):
	case errors.As(err, &ce):
		path := ShellQuote(src.Path) // a command to paste: one word
		return fmt.Sprintf("`rook import %s --reread %s` puts back what the store cannot read of it (else `rook session rm %s`, then `rook import %s %s` imports it again); %s",
			src.Format, path, id, src.Format, path, verify)
	case errors.As(err, &he):
		path := ShellQuote(src.Path)
		return fmt.Sprintf("`rook session rm %s`, then `rook import %s %s` imports it again; %s",
			id, src.Format, path, verify)
	}
	return "`rook store verify` says what is wrong and what to do"
}

// parentsReach says whether following the links of parent (a session's
// parent by its id) up from session from comes to session to (a link of to
// to from would close a cycle).
func parentsReach(parent map[eventlog.ID]*eventlog.ID, from, to eventlog.ID) bool {
	seen := map[eventlog.ID]bool{}
	for id := from; !seen[id]; {
		if id == to {
			return true
		}
		seen[id] = true
		p := parent[id]
		if p == nil {
			return false
		}
		id = *p
	}
	return false
}

// recountCopied has m, an imported fork linked to a parent that grew in
// this run, leave out of its totals the tokens of all the lines it copied
// of the parent (copiedTokens), not only of those the parent held when m
// came in: a fork imported before its parent's last lines (its file
// imported on its own, or a Codex fork, which waits only for a parent not
// in yet: sourceNames.waits) counted the copies of those, and the parent
// counts them now. A parent marked by an import cut short before its
// recount (Source.RecountForks) is taken as grown. m is written only if
// that changes what it leaves out, its forks made in rook first (as
// linkParents does). A fork whose parent
// was removed (Ancestor) is linked anew instead. A Codex subagent whose
// rollout copies its parent's history is recounted too (copiesParent);
// one spawned without it copied nothing, and is not read.
func (r *Rook) recountCopied(forks *forkIndex, parents *parentKeys, m *eventlog.Meta) error {
	if m.Ancestor != nil || !copiesParent(*m) {
		return nil
	}
	in, out, err := r.copiedTokens(*m, *m.Parent, parents)
	if err != nil {
		return err
	}
	if cin, cout := m.Copied(); in == cin && out == cout {
		return nil
	}
	if err := r.leaveCopiedOutOfForks(forks, m.ID, in, out); err != nil {
		return fmt.Errorf("its forks made in rook: %w", err)
	}
	src := *m.Source
	src.CopiedIn, src.CopiedOut = in, out
	m.Source = &src
	return r.Log.UpdateMeta(*m)
}

// leaveCopiedOutOfForks gives the forks made in rook of session id
// (those forks lists under it that are forks made in rook of it, read
// now), whose totals now leave out the in and out tokens it copied (it
// was just linked to its parent, or its parent is being removed), and
// the forks of those, the copied tokens their copy of its events holds,
// as eventlog's Fork does for a fork made after: made before, they
// counted them still.
func (r *Rook) leaveCopiedOutOfForks(forks *forkIndex, id eventlog.ID, in, out uint64) error {
	type copied struct {
		id      eventlog.ID
		in, out uint64
	}
	seen := map[eventlog.ID]bool{id: true}
	for todo := []copied{{id, in, out}}; len(todo) > 0; {
		p := todo[0]
		todo = todo[1:]
		candidates, err := forks.of(p.id)
		if err != nil {
			return err
		}
		for _, other := range candidates {
			if seen[other] {
				continue
			}
			f, err := r.Log.ReadMeta(other)
			from, at, ok := f.ForkedFrom()
			if err != nil || f.Source != nil || !ok || from != p.id {
				continue // gone, imported (it counts its own copy), or its copy comes from elsewhere now
			}
			seen[f.ID] = true
			var tin, tout uint64
			if at > 0 {
				if tin, tout, err = r.Log.TokensBefore(p.id, at); err != nil {
					return fmt.Errorf("fork %s: %w", f.ID, err)
				}
			}
			f.CopiedIn, f.CopiedOut = min(p.in, tin), min(p.out, tout)
			if err := r.Log.UpdateMeta(f); err != nil {
				return err
			}
			todo = append(todo, copied{f.ID, f.CopiedIn, f.CopiedOut})
		}
	}
	return nil
}

// withStop is stops (Source.Stops) with at added: an import stops past
// where the ones before it stopped, so at is last, or there already (0:
// no stop).
func withStop(stops []int64, at int64) []int64 {
	if at <= 0 || len(stops) > 0 && stops[len(stops)-1] >= at {
		return stops
	}
	return append(slices.Clip(stops), at)
}

// Runs of notes merged into one event stop at these bounds.
const (
	maxMergedLines = 256
	maxMergedBytes = 256 << 10
)

// mergeableLine: a plain note line, which may share an event with the
// notes around it. Lines that did not parse stay on their own (each is
// reported), and so does a continued line.
func mergeableLine(m mappedLine) bool {
	// A note that recorded tokens (a Codex token_count) stays an event of
	// its own: its input tokens are the context the model had at that
	// turn (session context), which a sum over several turns is not.
	// Nor does a Codex rollback: it takes turns out of context, which
	// session context finds by its label.
	return m.Kind == eventlog.KindNote && m.Unparsed == "" && !strings.HasSuffix(m.Label, ":continued") && m.TokensIn == 0 && m.TokensOut == 0 &&
		m.Label != codexRollbackLabel
}

// mergedLine is the event of a run of lines: the first line's, with the
// run's tokens and its labels summed up.
func mergedLine(ms []mappedLine) mappedLine {
	m := ms[0]
	if len(ms) == 1 {
		return m
	}
	same := true
	for _, o := range ms[1:] {
		m.TokensIn += o.TokensIn
		m.TokensOut += o.TokensOut
		same = same && o.Label == ms[0].Label
	}
	if same {
		m.Label = fmt.Sprintf("%s ×%d", ms[0].Label, len(ms))
	} else {
		m.Label = fmt.Sprintf("%s +%d", ms[0].Label, len(ms)-1)
	}
	return m
}

// putSourceLines stores consecutive lines as one source line object, the
// strings cut out of them as objects of their own. It returns the
// object's id. The object is built in one buffer of its final size and
// handed to the store (PutOwned): an import stores every byte it reads,
// and copying them twice more measured as a tenth of its allocations.
func (r *Rook) putSourceLines(unit []pendingLine) (cas.Key, error) {
	var cuts []lineCut
	gap, rest := 0, 0 // rest bytes since the last cut, and in all
	for _, p := range unit {
		prev := 0
		for _, c := range p.cuts {
			put := r.Store.Put
			if c.Owned {
				put = r.Store.PutOwned // decoded for this cut alone: spare a copy
			}
			res, err := put(c.Kind, c.Text)
			if err != nil {
				return cas.Key{}, fmt.Errorf("store a string of the line: %w", err)
			}
			cuts = append(cuts, lineCut{Gap: gap + c.Start - prev, ID: res.ID})
			rest += c.Start - prev
			gap, prev = 0, c.End
		}
		rest += len(p.line) - prev
		gap += len(p.line) - prev
	}
	sl := sourceLine{Offset: unit[0].off, Cuts: cuts}
	b := sl.appendHead(make([]byte, 0, sourceLineHeadMax(len(cuts))+rest))
	for _, p := range unit {
		prev := 0
		for _, c := range p.cuts {
			b = append(b, p.line[prev:c.Start]...)
			prev = c.End
		}
		b = append(b, p.line[prev:]...)
	}
	res, err := r.Store.PutOwned(cas.KindSource, b)
	if err != nil {
		return cas.Key{}, fmt.Errorf("store the line: %w", err)
	}
	return res.ID, nil
}

// sourceLines splits b after each newline; the last line may lack one.
func sourceLines(b []byte) [][]byte {
	lines := bytes.SplitAfter(b, []byte{'\n'})
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	return lines
}

func trimNewline(line []byte) []byte {
	line = bytes.TrimSuffix(line, []byte{'\n'})
	return bytes.TrimSuffix(line, []byte{'\r'})
}

// entryBytes is a line as the mappers and the views read it: past a
// UTF-8 byte order mark an editor saved before the file's first line, and
// past NUL bytes a crash left before it (the file's length was written
// but not the data, a delayed allocation lost, and the agent, started
// again, appended its next entry right after them). Such a line is not
// JSON to the scanner, so it is stored whole, what comes before the entry
// with it, and export writes it back. The NULs are passed only before an
// entry, a JSON object: NULs before "0" are junk, not the number 0.
func entryBytes(line []byte) []byte {
	line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
	if entry := bytes.TrimLeft(line, "\x00"); len(entry) < len(line) && bytes.HasPrefix(entry, []byte("{")) {
		return entry
	}
	return line
}

// importedState is how much of its source a session holds.
type importedState struct {
	size int64
	sha  string
}

// importedBytes says how much of its source a session holds. The metadata
// says so after each import; a crash between the lines and the metadata
// leaves the lines ahead, and then the session's own bytes are the truth.
func (r *Rook) importedBytes(m eventlog.Meta) (importedState, error) {
	st := importedState{size: m.Source.Size, sha: m.Source.SHA256}
	end, err := r.sourceEnd(m.ID)
	if err != nil {
		return st, err
	}
	if end == st.size {
		return st, nil
	}
	h := sha256.New()
	x, err := r.ExportSource(m.ID, h)
	if err != nil {
		return st, err
	}
	return importedState{size: x.Bytes, sha: hex.EncodeToString(h.Sum(nil))}, nil
}

// sourceEnd is where the session's last imported line ends in its source.
func (r *Rook) sourceEnd(id eventlog.ID) (int64, error) {
	_, off, lines, err := r.lastSource(id)
	return off + int64(len(lines)), err
}

// cutLineStart is where the line the session's lines end in begins in its
// source, when that line has no newline and did not parse (cut short: a
// file imported while its agent was writing it); ok is false otherwise.
// The next import of the grown file takes that line in again, whole. A
// last line that parsed without its newline is an event already: what
// follows it is the rest of its line.
func (r *Rook) cutLineStart(id eventlog.ID) (start int64, ok bool, err error) {
	ev, off, lines, err := r.lastSource(id)
	if err != nil || len(lines) == 0 || lines[len(lines)-1] == '\n' || !strings.HasSuffix(ev.Label, ":unparsed") {
		return 0, false, err
	}
	return off + int64(bytes.LastIndexByte(lines, '\n')+1), true, nil
}

// lastSource is the session's last event with a source object: the event,
// where its lines start in the source, and the lines (none when it has no
// source object).
func (r *Rook) lastSource(id eventlog.ID) (eventlog.Event, int64, []byte, error) {
	var none eventlog.Event
	s, err := r.Log.Summary(id)
	if err != nil {
		return none, 0, nil, err
	}
	for seq := s.Events; seq > 0; {
		from := uint64(0)
		if seq > 64 {
			from = seq - 64
		}
		evs, err := r.Log.Read(id, from, int(seq-from))
		if err != nil {
			return none, 0, nil, err
		}
		for i := len(evs) - 1; i >= 0; i-- {
			b, kind, err := r.Store.GetKind(evs[i].Body)
			if err != nil || kind != cas.KindSource {
				continue
			}
			sl, err := decodeSourceLine(b)
			if err != nil {
				return none, 0, nil, err
			}
			line, err := sl.expand(r.Store.Get)
			if err != nil {
				return none, 0, nil, err
			}
			return evs[i], sl.Offset, line, nil
		}
		seq = from
	}
	return none, 0, nil, nil
}

// ExportResult says what ExportSource wrote.
type ExportResult struct {
	Format  string `json:"format"`
	Source  string `json:"source"` // the file it was imported from
	Bytes   int64  `json:"bytes"`
	SHA256  string `json:"sha256"`
	Lines   int    `json:"lines"`
	Skipped int    `json:"skipped_events"` // events not from the source (added in rook)
	// Exact: the bytes are what the import took in (same size and
	// SHA-256 as Source.Size and SHA256 recorded: a last line still being
	// written when it read the file is not part of them).
	Exact bool `json:"exact"`
	// Ahead: not Exact, because the session holds lines past what the
	// last finished import of it recorded (an import of it running now,
	// or one cut short by a crash or a damaged file): the first Recorded
	// bytes are exactly those, the rest the lines taken in since. The next
	// import records them.
	Ahead    bool  `json:"ahead,omitempty"`
	Recorded int64 `json:"recorded_bytes"`
	Zstd     bool  `json:"zstd,omitempty"` // the source was .zst: this is its decompressed JSONL
	// ToolResults: Claude Code tool-results files the session holds
	// (attachToolResults), which the transcript names and ExportToolResults
	// writes back.
	ToolResults int `json:"tool_results"`
}

// ErrNotImported: a session that did not come from another agent's file.
var ErrNotImported = errors.New("not imported from a transcript file: it has no source file to write back (`rook session export-html` or `rook session show --json` export any session)")

// ExportSource writes an imported session's source file back, byte for
// byte, from its events' lines in order.
func (r *Rook) ExportSource(id eventlog.ID, w io.Writer) (ExportResult, error) {
	m, err := r.Log.ReadMeta(id)
	if err != nil {
		return ExportResult{}, err
	}
	if m.Source == nil {
		return ExportResult{}, ErrNotImported
	}
	x := ExportResult{Format: m.Source.Format, Source: m.Source.Path, Zstd: m.Source.Zstd, Recorded: m.Source.Size}
	h := sha256.New()
	out := io.MultiWriter(w, h)
	recordedSHA := "" // of the first m.Source.Size bytes, once written
	if m.Source.Size == 0 {
		recordedSHA = hex.EncodeToString(h.Sum(nil))
	}
	open := false    // the bytes so far end in a line without its newline
	var last []byte  // the lines of the source object written last, when they end open,
	var lastAt int64 // and where they begin
	cw := &exportCounter{w: out}
	for from := uint64(0); ; {
		evs, err := r.Log.Read(id, from, 1024)
		if err != nil {
			return x, err
		}
		if len(evs) == 0 {
			break
		}
		for _, ev := range evs {
			b, kind, err := r.Store.GetKind(ev.Body)
			if err != nil {
				return x, fmt.Errorf("event %d: %w", ev.Seq, err)
			}
			if kind != cas.KindSource {
				if importedSideEvent(ev) {
					if _, ok := ToolResultsFile(ev); ok {
						x.ToolResults++
					}
				} else {
					x.Skipped++
				}
				continue
			}
			sl, err := decodeSourceLine(b)
			if err != nil {
				return x, fmt.Errorf("event %d: %w", ev.Seq, err)
			}
			if sl.Offset == x.Bytes && sl.endsLine() {
				// Streamed, each string from its object, escaped as it
				// goes (writeLine): a line put together whole held its
				// strings read whole and the line besides (a line of 100
				// MB: 218 MB at the peak, 19 MB streamed). Only a line
				// that ends open is put together, and kept, for the rest
				// of it that the next event may hold. (A string that
				// fails its hash fails the export after part of the line
				// was written: `export -o` writes its file atomically.)
				cw.n, cw.newlines = 0, 0
				if err := r.writeLine(&sl, cw); err != nil {
					if cw.err != nil {
						return x, cw.err // the writer's own
					}
					return x, fmt.Errorf("event %d: %w", ev.Seq, err)
				}
				last, lastAt = nil, sl.Offset
				x.Bytes += cw.n
				if x.Bytes == m.Source.Size {
					recordedSHA = hex.EncodeToString(h.Sum(nil))
				}
				x.Lines += cw.newlines
				open = false
				continue
			}
			line, err := sl.expand(r.Store.Get)
			if err != nil {
				return x, fmt.Errorf("event %d: %w", ev.Seq, err)
			}
			whole := line
			if sl.Offset != x.Bytes {
				// A line taken in again whole, after an import that found it
				// cut short, begins with the bytes written of it: the rest
				// is what it adds.
				done := x.Bytes - sl.Offset
				if last == nil || sl.Offset < lastAt || sl.Offset-lastAt > int64(len(last)) || done <= 0 || done >= int64(len(line)) || !bytes.Equal(last[sl.Offset-lastAt:], line[:done]) {
					return x, fmt.Errorf("event %d: its line starts at byte %d of the source, but %d bytes were written before it: the session's lines are not whole", ev.Seq, sl.Offset, x.Bytes)
				}
				line = line[done:]
			}
			last, lastAt = whole, sl.Offset
			if _, err := out.Write(line); err != nil {
				return x, err
			}
			x.Bytes += int64(len(line))
			if x.Bytes == m.Source.Size {
				recordedSHA = hex.EncodeToString(h.Sum(nil))
			}
			x.Lines += bytes.Count(line, []byte{'\n'})
			if len(line) > 0 {
				// A line cut short when imported and its rest, taken in by
				// the next import, are two events and one line.
				open = line[len(line)-1] != '\n'
			}
		}
		from = evs[len(evs)-1].Seq + 1
	}
	if open {
		x.Lines++ // a last line without its newline
	}
	x.SHA256 = hex.EncodeToString(h.Sum(nil))
	x.Exact = x.Bytes == m.Source.Size && x.SHA256 == m.Source.SHA256
	x.Ahead = x.Bytes > m.Source.Size && recordedSHA == m.Source.SHA256
	return x, nil
}

// exportCounter counts the bytes and newlines written through it to w, and
// keeps w's own error.
type exportCounter struct {
	w        io.Writer
	n        int64
	newlines int
	err      error
}

func (c *exportCounter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.newlines += bytes.Count(p[:n], []byte{'\n'})
	if err != nil {
		c.err = err
	}
	return n, err
}

// SourceDigest is the size and SHA-256 of a transcript file's bytes as an
// import reads them (a .zst decompressed): what ExportSource's Bytes and
// SHA256 are compared with, to tell whether a file holds a session's
// bytes already.
func (r *Rook) SourceDigest(path string) (size int64, sha string, err error) {
	f, _, err := r.openSource(path)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return n, "", err
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// SessionOfFile names the newest session imported from the file at path,
// that file being there (through links; a session's source of the same
// name as the file it leads to, or, for a Codex rollout, its twin beside
// it, the plain rollout of a .zst or the .zst of a plain one, which an
// import reads as the same session): ok false when none was. Export asks
// it before writing over a file.
//
// The file is the same file as a source (device and inode), whatever its
// name: a hard link to a source under another name is that source. A file
// of one name can be a source only under its own name (or its twin's), so
// only the metadata that hold that name are decoded (sourceNameIn), and
// only their sources looked at; a file of several names has every
// session's sources looked at.
func (r *Rook) SessionOfFile(path string) (m eventlog.Meta, ok bool, err error) {
	fi, err := r.fs.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return m, false, nil
	}
	base := filepath.Base(path)
	if real, err := filepath.EvalSymlinks(path); err == nil && r.fs == vfs.OS {
		base = filepath.Base(real)
	}
	anyName := vfs.Links(fi) != 1 // more than one, or not known
	want := func([]byte) bool { return true }
	if !anyName {
		want = sourceNameIn(base)
	}
	ids, err := r.Log.IDs()
	if err != nil {
		return m, false, err
	}
	for _, id := range ids { // oldest first: the newest import of it wins
		sm, read, err := r.Log.ReadMetaIf(id, want)
		if err != nil || !read || sm.Source == nil {
			continue
		}
		for _, p := range SourceFiles(sm.Source) {
			if !anyName && filepath.Base(p) != base {
				continue
			}
			if sf, err := r.fs.Stat(p); err == nil && vfs.SameFile(fi, sf) {
				m, ok = sm, true
			}
		}
	}
	return m, ok, nil
}

// sourceNameIn is, for a file named base, what tells a session's metadata
// (as stored) that cannot name a source of that name, or its Codex twin's
// (base with or without .zst): it does not hold base's stem. A name JSON
// may write otherwise than as its bytes (a quote, a backslash, <, > or &,
// a control character, a byte that is not ASCII) is looked for in every
// metadata. Any other character can be written as a \u escape too (valid
// JSON, though rook writes none of them so: another writer, a file fixed
// by hand): metadata holding one is decoded.
func sourceNameIn(base string) func(raw []byte) bool {
	stem := []byte(strings.TrimSuffix(base, ".zst"))
	for _, c := range stem {
		if c < 0x20 || c >= 0x7f || strings.IndexByte(`"\<>&`, c) >= 0 {
			return func([]byte) bool { return true }
		}
	}
	return func(raw []byte) bool { return bytes.Contains(raw, stem) || bytes.Contains(raw, []byte(`\u`)) }
}

// SourceFiles are the files a session's source may be now: the file
// imported first, then, for a Codex rollout, its twin beside it (the plain
// rollout of a .zst, which Codex writes back plain to resume it, or the
// .zst of a plain one, Codex compressing it), which an import reads as the
// same session. None for a session not imported.
func SourceFiles(src *eventlog.Source) []string {
	if src == nil || src.Path == "" {
		return nil
	}
	files := []string{src.Path}
	if src.Format == FormatCodex {
		if plain, cut := strings.CutSuffix(src.Path, ".zst"); cut {
			files = append(files, plain)
		} else {
			files = append(files, src.Path+".zst")
		}
	}
	return files
}

// otherFormat names the format a file's first JSON line says it is in, when
// that is not the one being imported ("" when it fits, or cannot tell):
// importing a Claude Code tree as Codex would turn every line into a note.
func otherFormat(format string, data []byte) string {
	data = data[:min(len(data), otherFormatHead)]
	for len(data) > 0 {
		// The lines as sourceLines splits them, one at a time: the first
		// that is JSON decides, and the head was split whole, a MiB of
		// lines, twice for each file.
		n := bytes.IndexByte(data, '\n') + 1
		if n == 0 {
			n = len(data)
		}
		line := trimNewline(data[:n])
		data = data[n:]
		// The line's top-level keys, as decoding it into a
		// map[string]json.RawMessage gave them (which copied every value
		// of a first line that may be long): a line that is not JSON, or
		// JSON of another type than an object or null, is passed.
		var members []jsonMember
		if _, ok := scanJSON(line, len(line)+1, &members, nil); !ok {
			continue
		}
		if doc := line[skipJSONSpace(line, 0)]; doc != '{' && doc != 'n' {
			continue
		}
		var payload, uuid, sid, mid bool
		for _, m := range members {
			switch m.Key {
			case "payload":
				payload = true
			case "uuid":
				uuid = true
			case "sessionId":
				sid = true
			case "messageId":
				mid = true
			}
		}
		switch {
		case format == FormatClaudeCode && payload && !uuid && !sid:
			return FormatCodex
		case format == FormatCodex && !payload && (uuid || sid || mid):
			return FormatClaudeCode
		}
		return ""
	}
	return ""
}

// backupSet remembers the file backups a session has captured.
type backupSet map[string]bool

func (b backupSet) note(m mappedLine) {
	for p, name := range m.Backups {
		b[m.backupKey(p, name)] = true
	}
}

// backupKey is how a backupSet (and lateBackups) knows a file backup a
// line names: its path and backup file name (which holds its version,
// "h1@v2"); of a file that did not exist (no backup), its version when
// over 1: absent again after it existed (created, then deleted) is a
// state of its own, not the first absence named again. (A version 1
// absence keeps the key it always had, so a saved import state's keys
// still match.)
func (m *mappedLine) backupKey(rel, name string) string {
	if v := m.AbsentVersions[rel]; name == "" && v > 1 {
		return rel + "\x00@v" + strconv.Itoa(v)
	}
	return rel + "\x00" + name
}

// backupLeftOut says what becomes of a file backup a capture cannot take.
const backupLeftOut = "the capture records its state then as unknown: `rook session diff` and rewind leave the file out, unless an edit result in the transcript says what it was, or the backup is put back (the next import takes it in)"

// captureBackupsLabel labels the captures made of Claude Code's file
// backups; export leaves them out (they are not lines of the source).
const captureBackupsLabel = "claude-code:file-history"

// captureBackups appends a capture of the Claude Code file backups that the
// lines of unit name for the first time: each backup is a file's content
// before the agent's first edit of it at that point; a path without one did
// not exist. A backup missing on disk (the session's file-history
// directory is there, the backup not) or there but not to be taken (not a
// file, too big, unreadable) is left out, and reported to problem: the
// diff will not show that file's change. The capture's event is appended
// by appendWithGroup, in one group with the unit's. It returns the events
// appended (0 or 1) and how many backups were missing, and adds the bytes
// of the backups it took in to *taken (ImportedFile.SideBytesIn).
func (r *Rook) captureBackups(sess *eventlog.Meta, info sourceSession, path string, unit []pendingLine, captured backupSet, at time.Time, appendWithGroup func(eventlog.Event) error, problem func(ImportProblem) int, taken *int64) (events, missing int, err error) {
	if !slices.ContainsFunc(unit, func(p pendingLine) bool { return len(p.m.Backups) > 0 }) {
		// Most units name no backup: nothing to capture, and no
		// directory to find and stat for each.
		return 0, 0, nil
	}
	sid := info.ID
	if info.Subagent && info.ParentID != "" {
		sid = info.ParentID
	}
	dir := claudeFileHistory(path, sid)
	if dir == "" || sess.Workspace == "" {
		return 0, 0, nil // captures are of a workspace, from the backups
	}
	if _, err := r.fs.Stat(dir); err != nil {
		// No backups kept (deleted, or copied without them): a capture
		// of only the files created would make diff say they are all the
		// session changed.
		return 0, 0, nil
	}
	m := &Manifest{V: manifestVersion, Root: sess.Workspace, CapturedAt: at.UTC(), Label: captureBackupsLabel, Files: map[string]FileEntry{}}
	first := map[string]bool{} // the paths m has, as named first in the unit
	for _, p := range unit {
		for rel, name := range p.m.Backups {
			key := p.m.backupKey(rel, name)
			if filepath.IsAbs(rel) && sess.Workspace != "" {
				if r, err := filepath.Rel(sess.Workspace, rel); err == nil {
					rel = r // an absolute path inside the workspace
				}
			}
			if captured[key] {
				continue
			}
			if checkRel(filepath.ToSlash(rel)) != nil {
				if out, ok := outsideWorkspace(sess.Workspace, rel); ok {
					// Claude Code backs up (and its /rewind restores) a
					// file its edit changed outside the cwd: rook writes
					// nothing outside the workspace, so it is not
					// captured, but named, for diff and rewind to say so.
					captured[key] = true
					if !slices.Contains(m.Skipped, out+outsideBackupNote) {
						m.Skipped = append(m.Skipped, out+outsideBackupNote)
					}
				}
				continue
			}
			captured[key] = true
			if first[filepath.ToSlash(rel)] {
				// Backed up again further on in the unit (a run of notes):
				// the capture keeps the file as it was first.
				continue
			}
			first[filepath.ToSlash(rel)] = true
			if name == "" {
				m.Absent = append(m.Absent, filepath.ToSlash(rel))
				continue
			}
			if strings.ContainsAny(name, "/\\") || name == "." || name == ".." {
				// No file in the directory: nothing to capture, and what
				// the file was then is not known.
				m.Unknown = append(m.Unknown, filepath.ToSlash(rel))
				problem(ImportProblem{File: path, Line: p.no, Reason: fmt.Sprintf("names the file backup of %s as %q, which is no file name: %s", rel, name, backupLeftOut)})
				continue
			}
			backup := filepath.Join(dir, name)
			data, err := readSideFile(r.fs, backup)
			if err != nil {
				// No backup kept (nothing to capture), or one not readable,
				// or not a file (a FIFO would hang the import, a link to
				// /dev/zero fill its memory): said, and left out.
				// Its state then is not known (unknown): a later
				// backup of it is not the file before the session.
				m.Unknown = append(m.Unknown, filepath.ToSlash(rel))
				if !errors.Is(err, fs.ErrNotExist) {
					problem(ImportProblem{File: backup, Reason: fmt.Sprintf("the file backup of %s: %v: %s", rel, err, backupLeftOut)})
					continue
				}
				// Named, in a directory that holds the session's other
				// backups, and not there (deleted, or not copied): said
				// at the line that names it, as a missing tool output is.
				missing++
				problem(ImportProblem{File: path, Line: p.no, Reason: fmt.Sprintf("names the file backup of %s, %s, which is not there: %s", rel, backup, backupLeftOut)})
				continue
			}
			res, err := r.Store.Put(cas.KindFile, data)
			if err != nil {
				return 0, missing, err
			}
			m.Files[filepath.ToSlash(rel)] = FileEntry{ID: res.ID, Size: int64(len(data)), Mode: FileMode{Perm: 0o644}}
			m.TotalBytes += int64(len(data))
			*taken += int64(len(data))
		}
	}
	if len(m.Files) == 0 && len(m.Absent) == 0 && len(m.Unknown) == 0 && len(m.Skipped) == 0 {
		return 0, missing, nil
	}
	sort.Strings(m.Absent)
	sort.Strings(m.Skipped)
	id, err := r.StoreManifest(m)
	if err != nil {
		return 0, missing, err
	}
	return 1, missing, appendWithGroup(eventlog.Event{Kind: eventlog.KindCheckpoint, Label: captureBackupsLabel, Body: id, Time: at})
}

// outsideBackupNote ends the entry (Manifest.Skipped) of a capture of
// Claude Code file backups that names a file backed up outside the
// workspace, after its absolute path: not captured (a rewind writes
// nothing outside the workspace), and named by diff and rewind as left
// alone (outsideBackups).
const outsideBackupNote = ": outside the workspace, not captured (a Claude Code file backup)"

// outsideWorkspace is the absolute path of a file a Claude Code snapshot
// names (rel: absolute, or named from the workspace ws) that is outside
// ws; false for one in it, or no path (empty, or with a NUL).
func outsideWorkspace(ws, rel string) (string, bool) {
	if ws == "" || !filepath.IsAbs(ws) || rel == "" || strings.ContainsRune(rel, 0) {
		return "", false
	}
	p := rel
	if !filepath.IsAbs(p) {
		p = filepath.Join(ws, p)
	}
	p = filepath.Clean(p)
	if inWorkspace(ws, p) {
		return "", false
	}
	return p, true
}

// outsideBackups are the files a capture of Claude Code file backups
// names as backed up outside the workspace (outsideBackupNote).
func outsideBackups(m *Manifest) []string {
	if m.Label != captureBackupsLabel {
		return nil
	}
	var out []string
	for _, s := range m.Skipped {
		if p, ok := strings.CutSuffix(s, outsideBackupNote); ok && filepath.IsAbs(p) {
			out = append(out, p)
		}
	}
	return out
}

// backupWait is how long after Claude Code made a file backup (the
// backupTime a snapshot line gives it) an import waits for it to be on
// disk: a live session's backup may land after the line that names it.
// One older than this that is not there is taken to be gone (deleted, or
// never kept), and the line is taken in without it, as before.
const backupWait = time.Minute

// heldForBackups is the index of the first of lines (to be taken in) that
// names a file backup not captured yet, made less than backupWait ago and
// not on disk yet (or a file created, while the session has no
// file-history directory yet), and the names of those backups; -1 when
// there is none.
// The import takes the lines before it and leaves the rest to the next
// import: a capture must come where its line is, not after the captures
// of the lines that follow (firstCaptures takes the first of each file).
func (r *Rook) heldForBackups(format, path string, lines []pendingLine, info sourceSession, captured backupSet) (int, []string) {
	if format != FormatClaudeCode || info.Workspace == "" {
		return -1, nil
	}
	sid := info.ID
	if info.Subagent && info.ParentID != "" {
		sid = info.ParentID
	}
	dir := claudeFileHistory(path, sid)
	if dir == "" {
		return -1, nil
	}
	now := r.clock.Now()
	seen := backupSet{}
	for i, p := range lines {
		var missing []string
		for rel, name := range p.m.Backups {
			key := p.m.backupKey(rel, name)
			if captured[key] || seen[key] || strings.ContainsAny(name, "/\\") {
				continue
			}
			seen[key] = true
			t, ok := p.m.BackupTimes[rel]
			if !ok || now.Sub(t).Abs() > backupWait {
				continue
			}
			if name == "" {
				// A file the agent created has no backup, but its capture
				// (absent) is made only once the session has a
				// file-history directory (captureBackups), which Claude
				// Code makes with the session's first backup.
				if _, err := r.fs.Stat(dir); errors.Is(err, fs.ErrNotExist) {
					missing = append(missing, filepath.Base(dir)+"/ (for "+rel+", created)")
				}
				continue
			}
			if _, err := r.fs.Stat(filepath.Join(dir, name)); errors.Is(err, fs.ErrNotExist) {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			sort.Strings(missing)
			return i, missing
		}
	}
	return -1, nil
}

// fileKind names what a file that is not a regular one is.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	}
	return m.Type().String()
}

// sameRolloutHead bounds what sameRollout reads of each file.
const sameRolloutHead = 1 << 20

// sameRollout says whether a plain rollout and the .zst of its name are one
// rollout, as Codex leaves them while it compresses a rollout or writes it
// back plain to resume it: one file's first line (its session_meta, the
// rollout's id) is the other's, or the start of it in a file still being
// written. A .zst none of which can be read yet is taken for one being
// written. Another rollout given the same name is not the same: both are
// imported.
func (r *Rook) sameRollout(plain, zst string) bool {
	a, _, err := r.readHead(plain, sameRolloutHead)
	if err != nil {
		return true // the plain file fails on its own, saying why
	}
	b, _, _ := r.readHead(zst, sameRolloutHead) // what decompressed before any error
	firstLine := func(x []byte) []byte {
		if i := bytes.IndexByte(x, '\n'); i >= 0 {
			return x[:i+1]
		}
		return x
	}
	a, b = firstLine(a), firstLine(b)
	if len(a) > len(b) {
		a, b = b, a
	}
	return bytes.HasPrefix(b, a)
}
