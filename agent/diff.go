package agent

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/zeebo/blake3"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
)

// MaxDiffBytes: files larger than this are reported by --stat, --json and
// a patch at a terminal as changed, without a diff body, and compared by
// hash only; a piped patch holds their change (largeSides).
const MaxDiffBytes = 256 << 10

// binaryProbe is how much of a file is searched for a NUL byte: git's
// 8,000 (not 8 KiB), so that rook calls binary what git diff does.
const binaryProbe = 8000

// maxLineDiffBytes: of a file over MaxDiffBytes, a piped patch diffs the
// lines of a side up to this size held in memory; a larger one is
// streamed, as one hunk replacing every line before by every line after.
const maxLineDiffBytes = 8 << 20

// FileChange is one path a session changed.
type FileChange struct {
	Path    string `json:"path"`
	Status  string `json:"status"` // added, modified, removed
	OldMode string `json:"old_mode,omitempty"`
	NewMode string `json:"new_mode,omitempty"`
	Added   int    `json:"added"`
	Removed int    `json:"removed"`
	// NoBody: changed, but shown without a diff (Reason says why).
	NoBody bool   `json:"no_body,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Special: what is at the path now when it is not a regular file,
	// directory or link ("named pipe", "socket", "device"...). It has no
	// content to compare and no mode a patch can give: the path is listed,
	// left out of the patch (NewMode is empty), and never opened.
	Special string `json:"special,omitempty"`
	// Of a change read from a Codex rollout's patches (rolloutDiff):
	// MovedFrom, the path a patch moved the file from; NoLineNumbers,
	// that a hunk of it has none (a patch locates its chunks by their
	// context); Patches, how many applied patches changed it.
	MovedFrom     string `json:"moved_from,omitempty"`
	NoLineNumbers bool   `json:"no_line_numbers,omitempty"`
	Patches       int    `json:"patches,omitempty"`
	// InTurn: its section is several patches' hunks one after another,
	// each against the file as the one before left it (not the file
	// whole), for the summary to say so.
	InTurn bool `json:"-"`
	// Outside: Path is outside the session's workspace (absolute, or
	// climbing out of it when the workspace is not known). The patch
	// names it from the workspace ("../../etc/hosts"), which git apply
	// refuses; so it does a rename from a path outside.
	Outside bool `json:"outside_workspace,omitempty"`
	// Overwritten: a patch wrote it whole (Codex's Add File) over a file
	// the rollout shows existed, whose content it does not hold: a hunk
	// "@@ -?,? +1,N @@" is the file whole after it.
	Overwritten bool `json:"overwritten,omitempty"`
	// PatchPath: of a path outside the workspace, the name the patch
	// gives it.
	PatchPath string `json:"patch_path,omitempty"`
}

// SessionDiff is what a session changed on disk: each path's first capture
// in the session (what was there before the agent touched it) against the
// disk now.
type SessionDiff struct {
	Session   eventlog.ID  `json:"session"`
	Root      string       `json:"root"`
	Files     []FileChange `json:"files"`
	Added     int          `json:"added"`
	Removed   int          `json:"removed"`
	Unchanged int          `json:"unchanged"`
	Captures  int          `json:"captures"`
	// RewindCaptures counts the session's captures of the disk a rewind
	// made before it wrote (a rewind's fork holds its own): not in
	// Captures, and no state before the session (capturedStatesFor), but
	// what the rewind's undo puts back.
	RewindCaptures int `json:"rewind_captures,omitempty"`
	// FromTranscript counts the files whose state before the session
	// comes from its transcript's edit results (an imported Claude Code
	// session), not from a capture.
	FromTranscript int `json:"from_transcript"`
	// Unreadable are the directories, under one the session captured
	// whole, that could not be read: files added in them are not shown.
	Unreadable []UnreadableDir `json:"unreadable,omitempty"`
	// Unrecordable are the files (or directories) added under a directory
	// the session captured whole whose names rook cannot record (a
	// backslash, or bytes that are not UTF-8), Go-quoted: not shown.
	Unrecordable []string `json:"unrecordable,omitempty"`
	// FromRollout counts the files whose changes come from an imported
	// Codex session's patches (codex_diff.go): what the patches changed,
	// not the files compared with the disk. Patches counts those patches.
	FromRollout int             `json:"from_rollout"`
	Patches     *RolloutPatches `json:"patches,omitempty"`
	// Uncompared are the files the session changed that were not
	// compared with the disk, and why: their state before is not known
	// (firstStates.Unknown), or a link on the way to one now leads outside
	// the workspace, and nothing is read through it, or Claude Code backed
	// one up outside the workspace (Outside: firstStates.Outside). They
	// are not in Files.
	Uncompared []UncomparedFile `json:"uncompared,omitempty"`
	// Notes say, of an imported Claude Code session, each file compared
	// with its state before one of the session's subagents changed it (of
	// an imported Codex session, each file its subagents' patches
	// changed: codex_diff_subagents.go), and each subagent whose changes
	// are not shown (its session removed, or never imported, or one whose
	// session does not read).
	Notes []string `json:"notes,omitempty"`
	// MissingSubagents are the agentIds (a Codex subagent's thread id, a
	// Codex MultiAgentV2 one's task path) of those subagents (each in a
	// note): what they changed is not in Files.
	MissingSubagents []string `json:"missing_subagents,omitempty"`
	// UnreadSubagents are the ids of the imported sessions of an imported
	// Claude Code or Codex session's subagents that cannot be read (their
	// log, or an object of their lines, damaged or missing:
	// family_states.go, codex_diff_subagents.go), each in a note saying
	// why and what to do: what they changed is not in Files.
	UnreadSubagents []string `json:"unread_subagents,omitempty"`
	// UnreadEvents are the seqs of an imported Claude Code session's own
	// events (edit results, or a subagent's edit calls) that cannot be
	// read (their objects damaged or missing) and that a file's state
	// before the session may be in, each in a note saying why, which
	// files are not compared for it (in Uncompared) and what to do
	// (transcript_own_unread.go); and of its own Task results (an
	// imported Codex session's spawn_agent outputs) that cannot be read,
	// which may name a subagent not imported, each in a note
	// (unreadTaskResult); and of its captures of Claude Code file backups
	// holding a file's state before the session whose object does not
	// read, each in a note, its file in Uncompared (backup_unread.go).
	UnreadEvents []uint64 `json:"unread_events,omitempty"`
}

// UncomparedFile is a file the session changed that a diff did not
// compare with the disk (or a rewind did not put back), and why.
type UncomparedFile struct {
	Path  string `json:"path"`
	Error string `json:"error"`
	// Outside: Path (absolute) is outside the session's workspace, a
	// file Claude Code backed up there: rook neither captures nor writes
	// one (as a Codex diff's FileChange.Outside, the same JSON name).
	Outside bool `json:"outside_workspace,omitempty"`
}

// outsideWhy is why a diff or rewind leaves out a file Claude Code backed
// up outside the session's workspace.
const outsideWhy = "outside the session's workspace: Claude Code backed it up, but rook neither captures nor writes a file outside the workspace, so it is left alone (`rook session show` has what the session did to it)"

// firstStates is what firstCaptures finds: the root the states are of,
// each path's first state, the captures read and, of the paths, how many
// have their state from the transcript's edit results.
type firstStates struct {
	Root           string
	First          map[string]Change
	Captures       int
	FromTranscript int
	// RewindCaptures counts the rewinds' captures of the disk before them
	// passed over (capturedStatesFor): not in Captures.
	RewindCaptures int
	// Prune are the directories under captured directories (or absent
	// paths) that did not exist when they were captured: a rewind removes
	// them once it has removed the files in them, if nothing else is left.
	Prune []string
	// Unreadable are the directories under those captured whole that
	// could not be read: what was added in them is not in First.
	Unreadable []UnreadableDir
	// Unrecordable are the names (Go-quoted) of what was added under
	// those directories that a manifest cannot hold (recordable): not in
	// First.
	Unrecordable []string
	// Unknown are the paths whose state is not known, with why: a capture
	// lost it (a Claude Code file backup not there when the session was
	// imported), or an edit result changed the file without saying from
	// what, and nothing before says it: not in First, so diff and rewind
	// leave them out, and say so.
	Unknown []UncomparedFile
	// Outside are the files the captures of Claude Code file backups
	// name as backed up outside the workspace (outsideBackups), sorted:
	// not in First, so diff and rewind leave them alone, and say so.
	Outside []UncomparedFile

	seq map[string]uint64 // the seq of each path's first state
	// realDirs: the directories a capture recorded a path under while
	// it recorded none through a link (Manifest.RealPaths): directories
	// then, never renamed through a link they became since (linkFree).
	realDirs map[string]bool
	// unknownAt: the seq of each path of Unknown's first unknown state.
	unknownAt map[string]uint64
	// linkedNotes say each state taken from another session of the
	// family (mergeFamilyStates).
	linkedNotes []string
	// missingSubagents: the agentIds of the subagents a diff's Task
	// results report that no imported session holds.
	missingSubagents []string
	// unreadTasks: the seqs of the session's own Task results that do
	// not read, each in a linked note (unreadTaskResult).
	unreadTasks []uint64
	// unreadSubagents: the ids of the sessions of a diff's subagents
	// that do not read, each in a note (mergeFamilyStates).
	unreadSubagents []string
	// unreadOwn: the session's own events (edit results, or a
	// subagent's edit calls) at or after the point whose objects do not
	// read, that a file's state needs, in order; unreadAt: the one each
	// file whose state is not known for it waits on
	// (transcript_own_unread.go).
	unreadOwn []*ownUnread
	unreadAt  map[string]*ownUnread
	dirs      map[string]uint64 // the seq of each directory's first capture whole
	// dirModes: each directory's mode at that capture (version 3).
	dirModes map[string]FileMode
	// opened: the mode of each directory a rewind's capture before it
	// recorded (version 4: one it opened to write in), at the first such
	// capture, unless captured whole before (dirModes then has the mode).
	opened map[string]FileMode
	// gone: the seq at which each path was first captured absent by a
	// manifest of version 2. Nothing was under it either: what is there
	// now was added.
	gone map[string]uint64
}

// firstCaptures walks a session's checkpoint events from seq `from` and
// returns, for each path they name, its first capture there: the content
// (or absence) before the agent's first change past that point: from 0,
// the session's baseline. (Diff and rewind take its two steps in turn,
// capturedStates and addedUnderDirs, merging between them the states of
// linked sessions: family_states.go.)
// In an imported Claude Code session (or a fork of one) the edit results
// of its transcript are states too (transcript_states.go), taken in the
// same walk: the first state of a path met, captured or from the
// transcript, is its state. A capture of a directory whole is a state of
// every path under it (capture_dirs.go): files added there since are
// absent from it.
func (r *Rook) firstCaptures(id eventlog.ID, from uint64) (firstStates, error) {
	st, err := r.capturedStates(id, from)
	if err != nil {
		return st, err
	}
	// Files added under a directory captured whole are states too:
	// absent when it was captured.
	return st, st.addedUnderDirs(r.Store.Home())
}

// capturedStates is firstCaptures but for the files added since under
// the directories captured whole: what the captures (and edit results)
// say, read from the store alone, not the disk.
func (r *Rook) capturedStates(id eventlog.ID, from uint64) (firstStates, error) {
	return r.capturedStatesFor(id, from, false)
}

// capturedStatesFor is capturedStates; a rewind's capture of the disk
// before it that stands after from (a rewind's fork begins there with it)
// is passed over: it holds the files as they were before that rewind, the
// state at its own seq alone (the undo rewinds to it), not what they were
// at an earlier point (a rewind of the fork to before where it was forked
// wrote them back as they were before its rewind, the content that rewind
// had replaced). Diff, from the session's start, passes it over too, as a
// rewind to 0 does: the baseline is what was there before the session
// started, and a file only that capture holds (the parent made it after
// the point) was not there then, so the diff and a rewind of the whole
// session agree on what it changed.
func (r *Rook) capturedStatesFor(id eventlog.ID, from uint64, rewinding bool) (firstStates, error) {
	return r.capturedStatesIn(id, from, rewinding, r.transcriptWorkspace(id), false)
}

// capturedStatesIn is capturedStatesFor with the edit results' paths read
// from workspace ws (an imported Claude Code session's, or that of the
// session it is linked to, wherever it started: family_states.go), ""
// for a session not imported from Claude Code. member: id is another
// session of the family of the one asked of (a subagent), read for what
// it changed: a tool result of it whose object does not read is an
// error, not passed over, as what it changed is then not known
// (family_states.go says so, or refuses); so is an edit call whose
// object does not read when a result that succeeded needs a call not
// found (it may be that one), not when none does (a failed edit's).
// The session's own (not member) that does not read is not passed over
// either: the files it may have changed first are not known from the
// states read after it (settleUnread: a rewind refuses, a diff does not
// compare them).
func (r *Rook) capturedStatesIn(id eventlog.ID, from uint64, rewinding bool, ws string, member bool) (firstStates, error) {
	st := firstStates{First: map[string]Change{}, seq: map[string]uint64{}, dirs: map[string]uint64{}, gone: map[string]uint64{}, dirModes: map[string]FileMode{}, opened: map[string]FileMode{}}
	// unknown: the paths an edit result changed without saying from
	// what, at the seq of the first such result.
	unknown := map[string]uint64{}
	// lost: the paths a capture was to hold and does not (Manifest.Unknown:
	// a Claude Code file backup named and not there), at the seq of the
	// first: a later capture of one is not the file before the session.
	// (An edit result that says what the file was still is: Claude Code
	// backs a file up just before the edit whose result says so.)
	lost := map[string]uint64{}
	fromTranscript := map[string]bool{}
	// sidechain: the paths of unknown a subagent's edit result first
	// changed (Claude Code writes none of them with the file before).
	sidechain := map[string]bool{}
	// calls: the workspace path each edit call of a subagent's line names,
	// by its tool_use id, read up to seq called (editCalls) when a result
	// needs one: only a subagent's session reads them.
	calls := map[string]string{}
	var called uint64
	var callErr error
	// unread: the session's own events at or after from that do not
	// read and may say a file's state (settleUnread); unreadCalls: its
	// edit calls (of a subagent's line) that do not read, which a result
	// whose call is not read (missed) may answer. memberCall (member):
	// the first edit call read whose object does not read. A call not
	// needed (a failed edit's) stops nothing; a result that succeeded
	// whose call is not found then may be its: what it changed is not
	// known, an error.
	var unread, unreadCalls []ownUnread
	var memberCall error
	unreadCall := func(ev eventlog.Event, err error) error {
		if member {
			if memberCall == nil {
				memberCall = fmt.Errorf("event #%d cannot be read: %w", ev.Seq, err)
			}
			return nil
		}
		unreadCalls = append(unreadCalls, ownUnread{seq: ev.Seq, label: ev.Label, body: ev.Body, err: err, call: true})
		return nil
	}
	missed := false
	call := func(seq uint64) func(string) string {
		return func(tid string) string {
			if _, ok := calls[tid]; !ok && called < seq && callErr == nil {
				called, callErr = r.editCalls(id, called, seq, ws, calls, unreadCall)
			}
			p, ok := calls[tid]
			if !ok && memberCall != nil && callErr == nil {
				callErr = memberCall
			}
			if !ok && len(unreadCalls) > 0 {
				missed = true
			}
			return p
		}
	}
	// The captures of Claude Code file backups just before the point,
	// with nothing after them that could change a file, are states at
	// the point (pointLead): the walk begins with them. Not for a member
	// (read from a time, not a point of its own), nor for an undo (the
	// events before its capture of the disk are its parent's, before
	// that rewind).
	point := from
	if !member && ws != "" && from > 0 && !(rewinding && r.rewindFork(id, from)) {
		lead, err := r.pointLead(id, from)
		if err != nil {
			return firstStates{}, err
		}
		from = lead
	}
	// Late captures (lateBackupsLabel), appended after the session's
	// lines, stand at the seq of the line that named their backups: taken
	// once the walk is done, each path's state the earliest. A fork's
	// include those its ancestors hold past its copy of their events
	// (forkLate).
	start := from
	var late []lateCapture
	for {
		evs, err := r.Log.Read(id, from, 1024)
		if err != nil {
			return firstStates{}, err
		}
		if len(evs) == 0 {
			if ws != "" {
				more, err := r.forkLate(id)
				if err != nil {
					return firstStates{}, err
				}
				late = append(late, more...)
			}
			if err := st.takeLate(r, late, start, point, unknown, lost, fromTranscript, ws); err != nil {
				return st, err
			}
			if callErr != nil {
				return st, callErr
			}
			st.unknownLeft(unknown, lost, sidechain)
			return st, st.settleUnread(r, id, ws, unread)
		}
		for _, ev := range evs {
			// Only an imported Claude Code session (ws) has them: in
			// another, such a label is a note's own (an MCP client's
			// title, in its inbox), and its body no manifest.
			if _, ok := lateCaptureAt(ev); ok && ws != "" {
				late = append(late, lateCapture{ev, id})
				continue
			}
			if ev.Kind == eventlog.KindToolResult && ws != "" {
				if st.Root != "" && filepath.Clean(st.Root) != ws {
					continue // captures of another root: the results' paths are not theirs
				}
				var origs []editOriginal
				missed = false
				if claudeEditTools[ev.Label] {
					// A subagent's, too, that does not say the file
					// (transcript_subagent_edits.go).
					origs, err = r.editResults(ev.Body, ws, call(ev.Seq))
				} else {
					origs, err = r.editOriginals(ev.Body, ws)
				}
				if err != nil && member {
					return firstStates{}, fmt.Errorf("event #%d cannot be read: %w", ev.Seq, err)
				}
				if err != nil {
					// Not a capture: a result of the session's own that
					// does not read gives no state. One that may be an
					// edit's makes the file it changed not known, unless
					// a state before it says it (settleUnread); another
					// tool's says no file's state.
					if mayEdit(ev.Label) {
						unread = append(unread, ownUnread{seq: ev.Seq, label: ev.Label, body: ev.Body, err: err, at: ev.Seq})
					}
					continue
				}
				if missed {
					// A subagent's edit result whose call is not read,
					// while one does not read: it may be that one.
					u := unreadCalls[len(unreadCalls)-1]
					u.at = ev.Seq
					unread = append(unread, u)
				}
				for _, o := range origs {
					if _, ok := st.First[o.Path]; ok {
						continue
					}
					if _, ok := unknown[o.Path]; ok {
						continue
					}
					if o.Unknown {
						// Changed, from what the result does not say:
						// a later result's original is not the file
						// before the session.
						unknown[o.Path] = ev.Seq
						sidechain[o.Path] = o.Sidechain
						continue
					}
					if st.Root == "" {
						st.Root = ws
					}
					st.First[o.Path] = transcriptChange(o, ev.Body, ws)
					st.seq[o.Path] = ev.Seq
					st.FromTranscript++
					fromTranscript[o.Path] = true
				}
				continue
			}
			if ev.Kind != eventlog.KindCheckpoint {
				continue
			}
			if ev.Seq > point && strings.HasPrefix(ev.Label, beforeRewindPrefix) {
				st.RewindCaptures++ // (passed over: capturedStatesFor)
				continue
			}
			m, err := r.ReadManifest(ev.Body)
			if err != nil {
				return firstStates{}, fmt.Errorf("checkpoint #%d cannot be read: %w", ev.Seq, err)
			}
			st.addOutside(outsideBackups(m)) // (absolute: before rerootManifest)
			m = rerootManifest(m, ws)
			// A path recorded through a link to a directory of the
			// workspace (by a rook that did not resolve it: capture.go)
			// is named as the file is (lnk/f: real/f), so its states by
			// both names are one file's; not through a link where a
			// capture had something else, a directory, a file or
			// nothing (replaced since: not what was captured, which the
			// restore refuses to write through, or removes).
			if m.RealPaths {
				st.addRealDirs(m)
			}
			m = m.linkFree(func(d string) bool {
				if st.realDirs[d] {
					return true
				}
				_, whole := st.dirs[d]
				_, gone := st.gone[d]
				c, had := st.First[d]
				f, has := m.Files[d]
				return whole || gone || had && !c.File.Mode.Link || has && !f.Mode.Link ||
					slices.Contains(m.Dirs, d) || slices.Contains(m.Absent, d)
			})
			if st.Root == "" {
				st.Root = m.Root
			} else if filepath.Clean(st.Root) != filepath.Clean(m.Root) {
				return firstStates{}, fmt.Errorf("checkpoint #%d captured %s, earlier ones %s", ev.Seq, m.Root, st.Root)
			}
			if len(m.Files)+len(m.Absent)+len(m.Dirs) > 0 || m.Label != captureBackupsLabel && len(m.Unknown) == 0 {
				// (One of file backups that only lost states, or only
				// names files outside the workspace, puts nothing back: a
				// session whose every backup is missing has no captures.)
				st.Captures++
			}
			// afterLost: a path whose state a capture before lost, captured
			// again: changed since, from what is not known, so neither this
			// capture nor an edit result after it is the file before the
			// session.
			afterLost := func(p string) bool {
				if _, ok := lost[p]; !ok {
					return false
				}
				if _, ok := unknown[p]; !ok {
					unknown[p] = ev.Seq
				}
				return true
			}
			// A capture of file backups before the point (pointLead): of
			// those there, the one nearest the point says the file then
			// (nothing changed it after; the user may have by hand before,
			// and Claude Code backed it up again at the next prompt), what
			// it lost too.
			lead := ev.Seq < point
			first := func(p string) bool {
				_, ok := st.First[p]
				if lead {
					delete(lost, p)
					return true
				}
				return !ok && !afterLost(p)
			}
			for p, f := range m.Files {
				if first(p) {
					st.First[p] = Change{Path: p, File: f, backup: m.Label == captureBackupsLabel, capture: eventAt{id, ev.Seq}}
					st.seq[p] = ev.Seq
				}
			}
			for _, p := range m.Unknown {
				if first(p) {
					lost[p] = ev.Seq
					delete(st.First, p)
					delete(st.seq, p)
				}
			}
			for _, p := range m.Absent {
				if first(p) {
					st.First[p] = Change{Path: p, Remove: true}
					st.seq[p] = ev.Seq
				}
				if _, ok := st.gone[p]; !ok && m.V >= 2 {
					st.gone[p] = ev.Seq // version 1 does not say so
				}
			}
			for _, d := range m.Dirs {
				if _, ok := st.dirs[d]; !ok {
					st.dirs[d] = ev.Seq
					if mode, ok := m.DirModes[d]; ok {
						st.dirModes[d] = mode
					}
					if mode, ok := st.opened[d]; ok {
						// Its mode, recorded earlier, is its first.
						st.dirModes[d] = mode
						delete(st.opened, d)
					}
				}
			}
			for d, mode := range m.Opened {
				_, whole := st.dirs[d]
				if _, ok := st.opened[d]; !ok && !whole {
					st.opened[d] = mode
				}
			}
		}
		from = evs[len(evs)-1].Seq + 1
	}
}

// pointLead is where the states of a rewind of imported Claude Code
// session id to event to begin: the first of the events just before to
// of which none could have changed a file, to itself when the event
// before it could have. Claude Code writes the file-history snapshot of
// a prompt (the files as they were when it was sent) on the line just
// before the prompt's, so its capture stands before the point a rewind
// to that prompt names; what stands between them (the snapshot's line, a
// hook's progress, a system line) changes no file, and the capture is
// the files at the point. What could change one: a tool call or result
// (the agent's edit, a Bash command, a subagent's Task), a command the
// user ran from the prompt (`!`: a <bash-input> user line, not backed
// up), and a capture of rook's own (a rewind's of the disk before it,
// which then wrote the files; a capture made in rook). Only the captures
// of file backups (captureBackupsLabel, and the late ones standing
// there) among those events are states: the walk from it reads no other
// (an edit result is a tool result).
func (r *Rook) pointLead(id eventlog.ID, to uint64) (uint64, error) {
	lead := to
	for lead > 0 {
		evs, err := r.Log.ReadBefore(id, lead, 64)
		if err != nil {
			return 0, err
		}
		if len(evs) == 0 {
			return lead, nil
		}
		for i := len(evs) - 1; i >= 0; i-- {
			if r.mayChangeFiles(evs[i]) {
				return evs[i].Seq + 1, nil
			}
		}
		lead = evs[0].Seq
	}
	return 0, nil
}

// mayChangeFiles says whether an event of an imported Claude Code session
// is one a file may have changed at (pointLead). A user line that does
// not read is taken to be one.
func (r *Rook) mayChangeFiles(ev eventlog.Event) bool {
	switch {
	case ev.Kind == eventlog.KindToolCall || ev.Kind == eventlog.KindToolResult:
		return true
	case ev.Kind == eventlog.KindCheckpoint:
		return ev.Label != captureBackupsLabel
	case ev.Kind == eventlog.KindUser || ev.Kind == eventlog.KindNote && ev.Label == "user:meta":
		body, err := r.Body(ev)
		return err != nil || bytes.Contains(body, []byte("<bash-input>"))
	}
	return false
}

// Diff compares what the session found with the disk now. With w set, it
// writes a git-style patch (git apply takes it; git apply -R undoes it).
func (r *Rook) Diff(id eventlog.ID, w io.Writer, color bool) (SessionDiff, error) {
	return r.DiffWith(id, w, color, DiffOptions{})
}

// DiffOptions are how a diff goes (Rook.DiffWith).
type DiffOptions struct {
	// Workspace is the directory the user named with -C (empty when -C
	// was not given): when it is neither the session's workspace nor in
	// it, the captures are compared with the files there, a project
	// moved since (workspaceFor).
	Workspace string
}

// DiffWith is Diff, with opts.
func (r *Rook) DiffWith(id eventlog.ID, w io.Writer, color bool, opts DiffOptions) (SessionDiff, error) {
	defer holdLinks()() // (the recorded paths' links, each resolved once: links.go)
	d := SessionDiff{Session: id, Files: []FileChange{}}
	st, err := r.capturedStates(id, 0)
	if err != nil {
		return d, err
	}
	// An imported Claude Code session's subagents edited its workspace
	// for it, each in its own transcript: a file's state before one of
	// them changed it, earlier than the session's own, is the file's
	// before the session (family_states.go), as a rewind to 0 reads it.
	if ws := r.transcriptWorkspace(id); ws != "" {
		if err := r.mergeFamilyStates(id, 0, ws, &st, true); err != nil {
			return d, err
		}
		// Its own results that do not read, and the files not compared
		// for them (transcript_own_unread.go), said first.
		own, seqs := st.ownUnreadNotes(r, id)
		d.Notes, d.MissingSubagents, d.UnreadSubagents = append(own, st.linkedNotes...), st.missingSubagents, st.unreadSubagents
		d.UnreadEvents = append(seqs, st.unreadTasks...)
		slices.Sort(d.UnreadEvents)
	}
	// -C names where a moved workspace is now: the user deciding.
	moved := false
	if ws, ok := workspaceFor(st.Root, opts.Workspace); ok {
		d.Notes = append(d.Notes, movedNote(st.Root, ws))
		st.Root, moved = ws, true
	}
	// Files added under a directory captured whole are states too
	// (firstCaptures).
	if err := st.addedUnderDirs(r.Store.Home()); err != nil {
		return d, err
	}
	root, first := st.Root, st.First
	d.Root, d.Captures, d.FromTranscript, d.Unreadable = root, st.Captures, st.FromTranscript, st.Unreadable
	d.RewindCaptures = st.RewindCaptures
	d.Unrecordable = st.Unrecordable
	d.Uncompared = slices.Concat(st.Unknown, st.Outside)
	if len(first) == 0 && len(st.dirs) == 0 {
		// (An empty directory captured whole holds no file, but may be a
		// file or link now: below.)
		if ws, ok := r.codexWorkspace(id); ok {
			// An imported Codex session: its rollout's patches say what
			// it changed. (Called before the return reads d: Go does not
			// order a variable's read against a call in one return.)
			err := r.rolloutDiff(&d, ws, w, color)
			return d, err
		}
		return d, nil
	}
	real, err := realRoot(root)
	if err != nil {
		return d, err
	}
	wasDir := st.wasDirIn(real)
	if fi, err := os.Stat(real); errors.Is(err, fs.ErrNotExist) || err == nil && !fi.IsDir() {
		// Every file would read as removed: say what is gone instead. (An
		// imported session's workspace is often on another machine, or a
		// worktree deleted since.)
		if moved {
			return d, fmt.Errorf("%s, named with -C as the session's workspace, is not on this disk: there is nothing to compare its %d captured file(s) with; give -C the directory the workspace is in now", root, len(first))
		}
		return d, fmt.Errorf("the session's workspace %s is not on this disk (moved, deleted, or on another machine): there is nothing to compare its %d captured file(s) with; `rook session show` reads what it did; if it is somewhere else now, name it with -C (`rook -C DIR session diff ...`)", root, len(first))
	}
	// A directory captured whole that is a link or a file now was
	// replaced by it: it is added in its place (git shows the type change
	// as the files deleted and the link or file added), and nothing is
	// compared through a link.
	for dir := range st.dirs {
		if _, ok := first[dir]; ok || linkedDir(real, dir, wasDir) != "" {
			continue
		}
		if fi, err := os.Lstat(filepath.Join(real, filepath.FromSlash(dir))); err == nil && !fi.IsDir() {
			first[dir] = Change{Path: dir, Remove: true}
		}
	}
	paths := make([]string, 0, len(first))
	for p := range first {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	// unreadBackups: the files whose state before is a Claude Code file
	// backup that does not read, left out (backup_unread.go).
	var unreadBackups []unreadBackup
	unreadOld := func(p string, err error) bool {
		u, ok := unreadBackupOf(first[p], err)
		if ok {
			unreadBackups = append(unreadBackups, u)
			d.Uncompared = append(d.Uncompared, UncomparedFile{Path: p, Error: u.why(id)})
		}
		return ok
	}
	for _, p := range paths {
		base, had := first[p].File, !first[p].Remove
		// Under a link in place of a captured directory: gone (and no
		// error left from the path before, a named pipe's say).
		var cur DiskFile
		err = nil
		if linkedDir(real, p, wasDir) == "" {
			// The disk may have changed under the captured path: never
			// read through a link that now leads outside the workspace.
			// (Under a link in place of a captured directory nothing is
			// read, wherever it leads: the link shows as added.)
			if _, err := resolveInRoot(filepath.Clean(root), real, p, false); err != nil {
				// Said for this path, and the rest compared: one link in
				// the workspace (a linked package, say) does not hide
				// every other change.
				d.Uncompared = append(d.Uncompared, UncomparedFile{Path: p, Error: err.Error()})
				continue
			}
			cur, err = statDisk(real, p)
		}
		var nr *NotRegularError
		if errors.As(err, &nr) {
			// A named pipe (or socket, device) where the session's file
			// was or now is: said for this path, and the rest compared.
			kind := fileKind(nr.Type)
			fc := FileChange{Path: p, Status: "added", NoBody: true, Special: strings.TrimPrefix(kind, "a "),
				Reason: "not a regular file now (" + kind + ")"}
			if had {
				fc.Status, fc.OldMode = "modified", base.Mode.GitMode()
			}
			d.Files = append(d.Files, fc)
			continue
		}
		if err != nil {
			return d, err
		}
		if cur.Exists && cur.Mode.Perm.IsDir() {
			cur = DiskFile{} // a directory where a file was: the file is gone
		}
		if first[p].contentOnly() && had && cur.Exists && !cur.Mode.Link {
			// The state does not say the mode (a transcript's edit
			// result, a Claude Code file backup): an edit keeps it.
			base.Mode = cur.Mode
		}
		fc := FileChange{Path: p}
		switch {
		case !had && !cur.Exists:
			continue
		case !had:
			fc.Status, fc.NewMode = "added", cur.Mode.GitMode()
		case !cur.Exists:
			fc.Status, fc.OldMode = "removed", base.Mode.GitMode()
		case base.ID == cur.ID && base.Mode.GitMode() == cur.Mode.GitMode():
			d.Unchanged++
			continue
		default:
			fc.Status, fc.OldMode, fc.NewMode = "modified", base.Mode.GitMode(), cur.Mode.GitMode()
		}
		df := DiffFile{Path: p, OldMode: fc.OldMode, NewMode: fc.NewMode}
		sameType := had && cur.Exists && modeType(fc.OldMode) == modeType(fc.NewMode)
		large := had && base.Size > MaxDiffBytes || cur.Exists && cur.Size > MaxDiffBytes
		switch {
		case sameType && base.ID == cur.ID:
			// Only the mode changed (the same bytes, however many): the
			// mode lines alone, as git writes them. Nothing to read.
		case large && (w == nil || color):
			// --stat, --json and a terminal read no such copy.
			fc.NoBody, fc.Reason = true, fmt.Sprintf("larger than %d KiB", MaxDiffBytes>>10)
			df.NoBody = true
			if w != nil {
				df.Why = fc.Reason + "; piped, the patch holds the change"
				if df.OldBlob, df.NewBlob, err = r.unreadBlobs(first[p], had, real, p, cur); err != nil {
					if had && unreadOld(p, err) {
						continue
					}
					return d, err
				}
			}
			// A link on the other side (a type change) is shown: its
			// target is text, and short.
			if had && base.Mode.Link {
				if df.Old, err = r.changeData(first[p]); err != nil {
					if unreadOld(p, err) {
						continue
					}
					return d, fmt.Errorf("%s: its captured copy is unreadable: %w", p, err)
				}
			}
			if cur.Exists && cur.Mode.Link {
				if df.New, err = readDisk(real, p, cur); err != nil {
					return d, err
				}
			}
		case large:
			// Piped: the bytes git apply takes, whatever the size.
			if err := r.largeSides(&df, first[p], had, base, real, p, cur); err != nil {
				if had && unreadOld(p, err) {
					continue
				}
				return d, err
			}
		default:
			if had {
				if df.Old, err = r.changeData(first[p]); err != nil {
					if unreadOld(p, err) {
						continue
					}
					return d, fmt.Errorf("%s: its captured copy is unreadable: %w", p, err)
				}
			}
			if cur.Exists {
				if df.New, err = readDisk(real, p, cur); err != nil {
					return d, err
				}
				if cas.ID(df.New) != cur.ID {
					return d, fmt.Errorf("%s changed while being compared: run the diff again", p)
				}
			}
			df.OldBinary, df.NewBinary = isBinary(df.Old), isBinary(df.New)
			if df.OldBinary || df.NewBinary {
				fc.NoBody, fc.Reason = true, "binary"
			}
		}
		if w != nil {
			fc.Added, fc.Removed, err = WriteGitDiff(w, df, color)
		} else {
			// As the patch counts them: a type change's deletion and
			// creation apart.
			fc.Added, fc.Removed, err = DiffCounts(df)
		}
		if err != nil {
			return d, err
		}
		d.Added += fc.Added
		d.Removed += fc.Removed
		d.Files = append(d.Files, fc)
	}
	if len(unreadBackups) > 0 {
		// Said first, with the session's own events that do not read.
		notes, seqs := r.unreadBackupNotes(id, unreadBackups)
		d.Notes = append(notes, d.Notes...)
		d.UnreadEvents = slices.Compact(slices.Sorted(slices.Values(append(d.UnreadEvents, seqs...))))
	}
	return d, nil
}

// largeSides gives df, for a piped patch, the sides of a file over
// MaxDiffBytes (or replaced by or replacing one): each held when it is
// within maxLineDiffBytes (a link always is), else streamed, from the
// store or the disk, as WriteGitDiff passes over it; binary or not from
// its first bytes, as git decides.
func (r *Rook) largeSides(df *DiffFile, c Change, had bool, base FileEntry, real, rel string, cur DiskFile) error {
	if had {
		if base.Size <= maxLineDiffBytes || base.Mode.Link || c.data != nil || c.transcript {
			b, err := r.changeData(c)
			if err != nil {
				return fmt.Errorf("%s: its captured copy is unreadable: %w", rel, err)
			}
			df.Old, df.OldBinary = b, isBinary(b)
		} else {
			head := &headWriter{}
			if _, err := r.Store.WriteTo(c.File.ID, head); err != nil && !errors.Is(err, errHeadFull) {
				return fmt.Errorf("%s: its captured copy is unreadable: %w", rel, err)
			}
			id, size := c.File.ID, c.File.Size
			df.OldBinary, df.OldSize = isBinary(head.b), size
			df.OldStream = func(w io.Writer) error {
				if _, err := r.Store.WriteTo(id, w); err != nil {
					return fmt.Errorf("%s: its captured copy: %w", rel, err)
				}
				return nil
			}
		}
	}
	if cur.Exists {
		if cur.Size <= maxLineDiffBytes || cur.Mode.Link {
			b, err := readDisk(real, rel, cur)
			if err != nil {
				return err
			}
			if cas.ID(b) != cur.ID {
				return fmt.Errorf("%s changed while being compared: run the diff again", rel)
			}
			df.New, df.NewBinary = b, isBinary(b)
		} else {
			abs := filepath.Join(real, filepath.FromSlash(rel))
			f, err := openRegular(abs, rel)
			if err != nil {
				return err
			}
			head := make([]byte, binaryProbe)
			n, err := io.ReadFull(f, head)
			f.Close()
			if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
				return fmt.Errorf("read %s: %w", rel, err)
			}
			df.NewBinary, df.NewSize = isBinary(head[:n]), cur.Size
			df.NewStream = func(w io.Writer) error { return streamDisk(abs, rel, cur, w) }
		}
	}
	return nil
}

// errHeadFull: a headWriter has the bytes it keeps.
var errHeadFull = errors.New("head read")

// headWriter keeps the first binaryProbe bytes written to it, then stops
// the stream (errHeadFull).
type headWriter struct{ b []byte }

func (h *headWriter) Write(p []byte) (int, error) {
	n := min(len(p), binaryProbe-len(h.b))
	h.b = append(h.b, p[:n]...)
	if len(h.b) == binaryProbe {
		return n, errHeadFull
	}
	return n, nil
}

// streamDisk writes the workspace file rel (statDisk found it as cur) to
// w, as it reads it, and checks it is still that file.
func streamDisk(abs, rel string, cur DiskFile, w io.Writer) error {
	f, err := openRegular(abs, rel)
	if err != nil {
		return err
	}
	defer f.Close()
	ours := blake3.New()
	n, err := io.Copy(io.MultiWriter(w, ours), f)
	if err != nil {
		return fmt.Errorf("read %s: %w", rel, err)
	}
	var id cas.Key
	copy(id[:], ours.Sum(nil))
	if n != cur.Size || id != cur.ID {
		return fmt.Errorf("%s changed while being compared: run the diff again", rel)
	}
	return nil
}

// unreadBlobs names the git blobs of a file too large to diff, for its
// section's index line (git apply misreads a section without one): its
// captured copy and the disk's, each hashed as a stream.
func (r *Rook) unreadBlobs(c Change, had bool, real, rel string, cur DiskFile) (old, now string, err error) {
	if had {
		if old, err = r.changeBlobID(c); err != nil {
			return "", "", fmt.Errorf("%s: its captured copy is unreadable: %w", rel, err)
		}
	}
	if cur.Exists {
		if now, err = diskBlobID(real, rel, cur); err != nil {
			return "", "", err
		}
	}
	return old, now, nil
}

// changeBlobID names the git blob of a change's content. A captured
// copy is hashed as the store streams it (Store.WriteTo): read whole, a
// captured file of 300 MB was held three times over, to name its blob.
// Content from a transcript's edit result is in memory already.
func (r *Rook) changeBlobID(c Change) (string, error) {
	if c.data != nil {
		return GitBlobID(c.data), nil
	}
	h := newGitBlobHash(c.File.Size)
	n, err := r.Store.WriteTo(c.File.ID, h)
	var nf *cas.NotFoundError
	if c.transcript && errors.As(err, &nf) {
		b, err := r.changeData(c) // the edit result's text
		if err != nil {
			return "", err
		}
		return GitBlobID(b), nil
	}
	if err != nil {
		return "", err
	}
	if n != c.File.Size {
		return "", fmt.Errorf("object %s holds %d bytes, its capture says %d", cas.Short(c.File.ID), n, c.File.Size)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// diskBlobID names the git blob of the workspace file rel, which statDisk
// found as cur, hashing it as a stream.
func diskBlobID(real, rel string, cur DiskFile) (string, error) {
	abs := filepath.Join(real, filepath.FromSlash(rel))
	if cur.Mode.Link {
		t, err := os.Readlink(abs)
		return GitBlobID([]byte(t)), err
	}
	f, err := openRegular(abs, rel)
	if err != nil {
		return "", err
	}
	defer f.Close()
	git, ours := newGitBlobHash(cur.Size), blake3.New()
	n, err := io.Copy(io.MultiWriter(git, ours), f)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", rel, err)
	}
	var id cas.Key
	copy(id[:], ours.Sum(nil))
	if n != cur.Size || id != cur.ID {
		return "", fmt.Errorf("%s changed while being compared: run the diff again", rel)
	}
	return hex.EncodeToString(git.Sum(nil)), nil
}

// readDisk reads a workspace file (a link: its target).
func readDisk(real, rel string, cur DiskFile) ([]byte, error) {
	abs := filepath.Join(real, filepath.FromSlash(rel))
	if cur.Mode.Link {
		t, err := os.Readlink(abs)
		return []byte(t), err
	}
	b, err := readRegular(abs, rel, cur.Size)
	if errors.Is(err, errLargerThan) {
		return nil, fmt.Errorf("%s changed while being compared: run the diff again", rel)
	}
	return b, err
}

// isBinary: a NUL in the first 8,000 bytes, as git decides (xdiff's
// buffer_is_binary, FIRST_FEW_BYTES).
func isBinary(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), binaryProbe)], 0) >= 0
}

// takeLate takes the late captures of file backups (lateBackupsLabel) that
// stand at or after from: a path's state is theirs when it has none, or
// one from later in the session. A late capture holds the file before the
// line it stands at, so it comes before an edit result (or any other
// state) at the same seq: Claude Code writes a file's snapshot line just
// before the result of the edit that backed it up, and with no capture
// made at the import, that result's event has the seq the capture stands
// at. A path an edit result changed earlier without saying from what, or
// captured absent or under a directory captured whole, is left as it is.
// A path captured absent (a file the session created) is absent there.
// Of those standing before point (from pointLead's, when a rewind's
// point has captures of file backups just before it), the nearest the
// point says the file then, as capturedStatesIn takes them: one nearer
// than the state or loss found there gives way to it.
func (st *firstStates) takeLate(r *Rook, late []lateCapture, from, point uint64, unknown, lost map[string]uint64, fromTranscript map[string]bool, ws string) error {
	for _, lc := range late {
		ev := lc.ev
		at, _ := lateCaptureAt(ev)
		if at < from {
			continue
		}
		m, err := r.ReadManifest(ev.Body)
		if err != nil {
			return fmt.Errorf("%s cannot be read: %w", lc, err)
		}
		m = rerootManifest(m, ws)
		if st.Root == "" {
			st.Root = m.Root
		} else if filepath.Clean(st.Root) != filepath.Clean(m.Root) {
			return fmt.Errorf("%s captured %s, earlier ones %s", lc, m.Root, st.Root)
		}
		st.Captures++
		take := func(p string, c Change) {
			if at < point {
				// Before any state at or after the point. (At the seq of
				// a capture that lost it, the backup it lacked.)
				if seq, ok := st.seq[p]; ok && seq > at && seq < point {
					return
				}
				if l, ok := lost[p]; ok && l > at && l < point {
					return
				}
				delete(lost, p)
				if fromTranscript[p] {
					st.FromTranscript--
					delete(fromTranscript, p)
				}
				st.First[p] = c
				st.seq[p] = at
				return
			}
			if u, ok := unknown[p]; ok && u < at {
				return
			}
			if l, ok := lost[p]; ok && l < at {
				// (At the seq of the capture that lost it, the backup it
				// lacked, put there since, is the state it was to hold.)
				return
			}
			// (At the same seq, a capture's state stays: only an edit
			// result's gives way.)
			if seq, ok := st.seq[p]; ok && (seq < at || seq == at && !fromTranscript[p]) || st.underDirBefore(p, at) {
				return
			}
			if fromTranscript[p] {
				st.FromTranscript--
				delete(fromTranscript, p)
			}
			st.First[p] = c
			st.seq[p] = at
		}
		for p, f := range m.Files {
			take(p, Change{Path: p, File: f, backup: m.Label == captureBackupsLabel, capture: eventAt{lc.of, ev.Seq}})
		}
		for _, p := range m.Absent {
			take(p, Change{Path: p, Remove: true})
			if g, ok := st.gone[p]; m.V >= 2 && (!ok || at < g) {
				st.gone[p] = at
			}
		}
	}
	return nil
}

// rerootManifest is m with its paths named from workspace ws, when m
// captured another directory (the file backups of a Claude Code session
// recorded in ws/sub, a subagent started after a `cd sub`, or in ws's
// parent or a sibling of ws, read for a session of ws: family_states.go);
// else m. Only the paths under ws are kept: a capture of a sibling's
// files gives ws nothing.
func rerootManifest(m *Manifest, ws string) *Manifest {
	root := filepath.Clean(m.Root)
	if ws == "" || root == ws || !filepath.IsAbs(ws) || !filepath.IsAbs(root) {
		return m
	}
	// name: p named from ws, ok false for one outside it (or ws itself):
	// as written, or else with root and ws resolved through their links
	// (realDir, once for the manifest: a capture of a link to ws, or of
	// ws's real path, is of ws's files).
	in := func(root, ws, p string) (string, bool) {
		full := filepath.Join(root, filepath.FromSlash(p))
		rel, err := filepath.Rel(ws, full)
		if err != nil || full == ws || !inWorkspace(ws, full) {
			return "", false
		}
		return filepath.ToSlash(rel), true
	}
	var realRoot, realWs string
	name := func(p string) (string, bool) {
		if q, ok := in(root, ws, p); ok {
			return q, true
		}
		if realWs == "" {
			realRoot, realWs = realDir(root), realDir(ws)
		}
		return in(realRoot, realWs, p)
	}
	out := *m
	out.Root = ws
	out.Files = make(map[string]FileEntry, len(m.Files))
	for p, f := range m.Files {
		if q, ok := name(p); ok {
			out.Files[q] = f
		}
	}
	add := func(ps []string) []string {
		var o []string
		for _, p := range ps {
			if q, ok := name(p); ok {
				o = append(o, q)
			}
		}
		return o
	}
	out.Absent, out.Dirs, out.Unknown, out.Skipped = add(m.Absent), add(m.Dirs), add(m.Unknown), add(m.Skipped)
	modes := func(ms map[string]FileMode) map[string]FileMode {
		if ms == nil {
			return nil
		}
		o := make(map[string]FileMode, len(ms))
		for p, v := range ms {
			if q, ok := name(p); ok {
				o[q] = v
			}
		}
		return o
	}
	out.DirModes, out.Opened = modes(m.DirModes), modes(m.Opened)
	return &out
}

// addOutside adds to st.Outside the files of paths (absolute) it does not
// name yet.
func (st *firstStates) addOutside(paths []string) {
	for _, p := range paths {
		if !slices.ContainsFunc(st.Outside, func(u UncomparedFile) bool { return u.Path == p }) {
			st.Outside = append(st.Outside, UncomparedFile{Path: p, Error: outsideWhy, Outside: true})
		}
	}
	slices.SortFunc(st.Outside, func(a, b UncomparedFile) int { return strings.Compare(a.Path, b.Path) })
}

// unknownLeft sets st.Unknown: the paths of unknown and lost that no
// state came to after all (a late capture of the missing backup gives one).
// Of sidechain's, a subagent's edit result first changed it.
func (st *firstStates) unknownLeft(unknown, lost map[string]uint64, sidechain map[string]bool) {
	st.Unknown, st.unknownAt = nil, map[string]uint64{}
	for p, seq := range lost {
		if _, ok := st.First[p]; !ok {
			st.Unknown = append(st.Unknown, UncomparedFile{Path: p, Error: "its state before is not known: its Claude Code file backup could not be taken when the session was imported (not there, or not a file: the import said which; put it back, and import again)"})
			st.unknownAt[p] = seq
		}
	}
	for p, seq := range unknown {
		if _, ok := st.First[p]; !ok && !mapHas(lost, p) {
			why := "its state before is not known: the transcript's edit result that first changed it does not say what it was"
			if sidechain[p] {
				why = "its state before is not known: the subagent's edit result that first changed it does not say what it was, as Claude Code writes none of a subagent's with the file (its main thread's alone)"
			}
			st.Unknown = append(st.Unknown, UncomparedFile{Path: p, Error: why})
			st.unknownAt[p] = seq
		}
	}
	slices.SortFunc(st.Unknown, func(a, b UncomparedFile) int { return strings.Compare(a.Path, b.Path) })
}

func mapHas(m map[string]uint64, k string) bool {
	_, ok := m[k]
	return ok
}

// lateCapture is a late capture's event, and the session whose log holds
// it: the session read, or an ancestor of that fork (forkLate).
type lateCapture struct {
	ev eventlog.Event
	of eventlog.ID
}

func (lc lateCapture) String() string {
	return fmt.Sprintf("the late capture of file backups #%d of session %s", lc.ev.Seq, lc.of)
}

// forkLate returns, for a fork made in rook, the late captures of file
// backups its ancestors hold that stand before its fork point but that
// its copy of their events does not hold: an import appends them to the
// imported session after its lines, so past the point a fork was made at,
// or after the fork was made. Each ancestor is read from the point its
// fork below was made at (before it, the fork's copy holds its events),
// and a capture is taken when it stands before every fork point on the way
// (after one, it holds a file before a line that fork does not have). A
// fork whose parent was removed reads from the ancestor it was copied
// from (Meta.ForkedFrom); an ancestor removed takes its late captures
// with it. Not a fork: none.
func (r *Rook) forkLate(id eventlog.ID) ([]lateCapture, error) {
	m, err := r.Log.ReadMeta(id)
	if err != nil {
		return nil, err
	}
	var out []lateCapture
	limit := uint64(math.MaxUint64)
	for seen := map[eventlog.ID]bool{}; !seen[m.ID]; { // forks of forks, as ImportedAncestor's
		seen[m.ID] = true
		pid, at, ok := m.ForkedFrom()
		if !ok {
			break
		}
		limit = min(limit, at)
		pm, err := r.Log.ReadMeta(pid)
		if errors.Is(err, eventlog.ErrNoSession) {
			break
		}
		if err != nil {
			return nil, forkParentErr(pid, err)
		}
		for from := at; ; {
			evs, err := r.Log.Read(pid, from, 1024)
			if err != nil {
				return nil, forkParentErr(pid, err)
			}
			if len(evs) == 0 {
				break
			}
			for _, ev := range evs {
				if n, ok := lateCaptureAt(ev); ok && n < limit {
					out = append(out, lateCapture{ev, pid})
				}
			}
			from = evs[len(evs)-1].Seq + 1
		}
		m = pm
	}
	return out, nil
}

// forkParentErr says that a fork's file states cannot be known: the
// parent whose late file backups they may take does not read. Failing is
// the safe answer (a rewind from states missing a capture would write the
// wrong file); the message says where to look.
func forkParentErr(pid eventlog.ID, err error) error {
	return fmt.Errorf("the session %s this one was forked from does not read, and the file backups it holds may be this fork's states: %w; `rook store verify` says what is damaged", pid, err)
}

// underDirBefore says whether p is under a directory captured whole (or a
// path captured absent) at or before seq at: its state is that capture's.
func (st *firstStates) underDirBefore(p string, at uint64) bool {
	for d, seq := range st.dirs {
		if seq <= at && strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	for g, seq := range st.gone {
		if seq <= at && strings.HasPrefix(p, g+"/") {
			return true
		}
	}
	return false
}

// addRealDirs records the directories m recorded a path under
// (realDirs): m recorded none through a link, so each was a directory
// when captured, and a link it is now is a tool's since.
func (st *firstStates) addRealDirs(m *Manifest) {
	if st.realDirs == nil {
		st.realDirs = map[string]bool{}
	}
	add := func(p string) {
		for d := path.Dir(p); d != "." && d != "/" && d != "" && !st.realDirs[d]; d = path.Dir(d) {
			st.realDirs[d] = true
		}
	}
	for p := range m.Files {
		add(p)
	}
	for _, ps := range [][]string{m.Absent, m.Dirs, m.Unknown} {
		for _, p := range ps {
			add(p)
		}
	}
}
