package agent

import (
	"fmt"
	"slices"
	"strings"

	json "github.com/go-json-experiment/json/v1"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
)

// An imported Claude Code session's own edit results whose stored
// objects do not read (corrupt: cas.CorruptError; or gone from the
// store). A subagent's (any linked session's) are read strictly: one
// makes its whole session unread (capturedStatesIn, member;
// family_states.go). The session's own were passed over, as a result
// that says nothing: the first state of its file read after it (the
// state a later edit found) was then taken as the file's at the point,
// and a rewind wrote it, exit 0, and a diff compared with it.
//
// Now such a result (or the edit call a subagent's result answers, when
// the session is a subagent's) at or after the point is an ownUnread.
// Which file it changed is told, when it can be, without the object:
// from what of the line reads (its filePath, when only a string cut out
// of it does not), or else from the edit call it answers (the call of
// its tool that no result that reads answers; the call is an event, and
// object, of its own). A file it changed that has a state at or before
// it (an earlier edit result, a file backup) does not need it; nor does
// a rewind to after it, which reads no state before the point. A file
// it changed first is not known: a rewind
// refuses (ownUnreadRefusal), a diff does not compare it and says why
// (Uncompared; ownUnreadNotes). When which file it changed is not known,
// no file whose state is read after it is known either, nor is the file
// it changed: a rewind refuses, a diff compares only the files whose
// state comes before it.

// ownUnread is one of the session's own events whose object does not
// read, which a file's state at or after the point may need.
type ownUnread struct {
	seq   uint64 // the event whose object does not read
	label string // its tool ("" for none known)
	body  cas.Key
	err   error
	// call: the event is a subagent's edit call, which the edit result
	// at `at` (that reads) may answer; else it is that result (at ==
	// seq).
	call bool
	at   uint64
	// known: paths are the workspace files it may have changed (one,
	// unless several calls may be its: candidates); else which file it
	// changed is not known.
	known bool
	paths []string
	// files: the files whose state it makes not known (their first one
	// read was after it), as settled; a diff's uncompared.
	files []string
}

// mayEdit says whether a tool result labelled label may be an edit's,
// whose file its line says: one of an edit tool's, or of a tool not
// known (its call not in the transcript). A result of another tool (a
// Read's, a Bash's) says no file's state: one that does not read is not
// needed.
func mayEdit(label string) bool {
	return label == "" || claudeEditTools[label]
}

// what says what u is, in words: "the result of an Edit of b.txt".
func (u *ownUnread) what() string {
	tool := "a tool not known"
	if u.label != "" {
		tool = "an " + u.label
		if !strings.ContainsAny(u.label[:1], "AEIOU") {
			tool = "a " + u.label
		}
	}
	if u.call {
		return fmt.Sprintf("the call of %s by a subagent's line, which the edit result of event #%d may answer", tool, u.at)
	}
	of := ", of a file not known"
	if u.known {
		of = " of " + strings.Join(u.paths, " or ")
	}
	return "the result of " + tool + of
}

// lineSkeleton are the lines of imported event body as far as they read
// without the strings cut out of them (each an empty string): its
// source line object alone. An error when that does not read.
func (r *Rook) lineSkeleton(body cas.Key) ([][]byte, error) {
	b, kind, err := r.Store.GetKind(body)
	if err != nil || kind != cas.KindSource {
		return nil, err
	}
	sl, err := decodeSourceLine(b)
	if err != nil {
		return nil, &cas.CorruptError{ID: body, Reason: err.Error()}
	}
	out, _ := sl.expand(func(cas.Key) ([]byte, error) { return nil, nil })
	return sourceLines(out), nil
}

// skeletonEdit reads a line's skeleton (lineSkeleton) for the file its
// edit result names (toolUseResult.filePath: ok, in the workspace or
// not) and the tool_use ids of its results and calls.
func skeletonEdit(line []byte, ws string) (rel string, named, inWS bool, results []string, calls []skeletonCall) {
	var l struct {
		Type          string          `json:"type"`
		ToolUseResult json.RawMessage `json:"toolUseResult"`
		Message       *struct {
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	if json.Unmarshal(entryBytes(trimNewline(line)), &l) != nil || l.Message == nil {
		return "", false, false, nil, nil
	}
	if len(l.ToolUseResult) > 0 && l.ToolUseResult[0] == '{' {
		var res struct {
			FilePath string `json:"filePath"`
		}
		if json.Unmarshal(l.ToolUseResult, &res) == nil && res.FilePath != "" {
			rel, inWS = workspaceRel(ws, res.FilePath)
			named = true
		}
	}
	var blocks []struct {
		Type      string `json:"type"`
		ID        string `json:"id"`
		Name      string `json:"name"`
		ToolUseID string `json:"tool_use_id"`
		Input     struct {
			FilePath     string `json:"file_path"`
			NotebookPath string `json:"notebook_path"`
		} `json:"input"`
	}
	if len(l.Message.Content) == 0 || l.Message.Content[0] != '[' || json.Unmarshal(l.Message.Content, &blocks) != nil {
		return rel, named, inWS, nil, nil
	}
	for _, b := range blocks {
		switch {
		case b.Type == "tool_result" && b.ToolUseID != "":
			results = append(results, b.ToolUseID)
		case b.Type == "tool_use" && b.ID != "" && claudeEditTools[b.Name]:
			p := b.Input.FilePath
			if b.Name == "NotebookEdit" {
				p = b.Input.NotebookPath
			}
			c := skeletonCall{id: b.ID, name: b.Name, named: p != ""}
			c.path, c.inWS = workspaceRel(ws, p)
			calls = append(calls, c)
		}
	}
	return rel, named, inWS, results, calls
}

// skeletonCall is an edit call a line holds: its tool_use id, tool and
// file (named: the call says one; inWS: it is in the workspace, path).
type skeletonCall struct {
	id, name, path string
	named, inWS    bool
	seq            uint64
}

// ownEditCalls are a session's edit calls (by seq), which tool_use ids
// its results that read answer, and the seqs (by tool) of its edit
// calls whose objects do not read: what tells the file of a result that
// does not read (editPathsOf).
type ownEditCalls struct {
	calls    []skeletonCall
	answered map[string]bool
	unread   map[string][]uint64
}

// ownEditCallsOf reads session id's edit calls and results (workspace
// ws): read only when one of its own does not read.
func (r *Rook) ownEditCallsOf(id eventlog.ID, ws string) (*ownEditCalls, error) {
	oc := &ownEditCalls{answered: map[string]bool{}, unread: map[string][]uint64{}}
	err := r.eachEvent(id, func(ev eventlog.Event) error {
		switch {
		case ev.Kind == eventlog.KindToolCall && claudeEditTools[ev.Label]:
			lines, err := r.lineSkeleton(ev.Body)
			if err != nil {
				oc.unread[ev.Label] = append(oc.unread[ev.Label], ev.Seq)
				return nil
			}
			for _, line := range lines {
				_, _, _, _, calls := skeletonEdit(line, ws)
				for _, c := range calls {
					c.seq = ev.Seq
					oc.calls = append(oc.calls, c)
				}
			}
		case ev.Kind == eventlog.KindToolResult && mayEdit(ev.Label):
			lines, _ := r.lineSkeleton(ev.Body) // (one that does not read answers none)
			for _, line := range lines {
				_, _, _, results, _ := skeletonEdit(line, ws)
				for _, t := range results {
					oc.answered[t] = true
				}
			}
		}
		return nil
	})
	return oc, err
}

// editPathsOf tells which workspace files own event u may have changed
// (u.known, u.paths): the one its line names, when the line reads but
// for a string cut out of it; else that of the edit call its tool_use id
// names; else (the line not read at all) those of the edit calls of its
// tool before it that no result that reads answers, unless such a call
// does not read itself (it may be u's). None found: not known. A file
// outside the workspace is none of its.
func (r *Rook) editPathsOf(u *ownUnread, ws string, oc func() (*ownEditCalls, error)) error {
	if u.call {
		return nil // (which result's call does not read is not known)
	}
	var ids []string
	if lines, err := r.lineSkeleton(u.body); err == nil {
		for _, line := range lines {
			rel, named, inWS, results, _ := skeletonEdit(line, ws)
			if named {
				u.known = true
				if inWS {
					u.paths = append(u.paths, rel)
				}
			}
			ids = append(ids, results...)
		}
		if u.known {
			return nil
		}
	}
	if u.label == "" {
		return nil // (its call is not in the transcript)
	}
	calls, err := oc()
	if err != nil {
		return err
	}
	var found []skeletonCall
	for _, c := range calls.calls {
		if c.seq < u.seq && slices.Contains(ids, c.id) {
			found = append(found, c) // its own call, by its tool_use id
		}
	}
	if len(found) == 0 {
		if len(ids) > 0 || slices.ContainsFunc(calls.unread[u.label], func(s uint64) bool { return s < u.seq }) {
			return nil // (its call is none of those read)
		}
		for _, c := range calls.calls {
			if c.seq < u.seq && c.name == u.label && !calls.answered[c.id] {
				found = append(found, c)
			}
		}
	}
	if len(found) == 0 || slices.ContainsFunc(found, func(c skeletonCall) bool { return !c.named }) {
		return nil
	}
	u.known = true
	for _, c := range found {
		if c.inWS && !slices.Contains(u.paths, c.path) {
			u.paths = append(u.paths, c.path)
		}
	}
	slices.Sort(u.paths)
	return nil
}

// settleUnread takes the session's own events that do not read (unread,
// in order; session id, workspace ws), once its states are read: the
// file each changed whose first state read comes after it (or is none)
// is not known, in Unknown, and each that any file needs is kept in
// st.unreadOwn (ownUnreadRefusal, ownUnreadNotes).
func (st *firstStates) settleUnread(r *Rook, id eventlog.ID, ws string, unread []ownUnread) error {
	if len(unread) == 0 {
		return nil
	}
	var calls *ownEditCalls
	oc := func() (*ownEditCalls, error) {
		var err error
		if calls == nil {
			calls, err = r.ownEditCallsOf(id, ws)
		}
		return calls, err
	}
	if st.unreadAt == nil {
		st.unreadAt = map[string]*ownUnread{}
	}
	// stated: p has a state at or before at (a file backup at a result's
	// seq holds the file before it), or is not known from before it.
	stated := func(p string, at uint64) bool {
		if s, ok := st.seq[p]; ok {
			if _, first := st.First[p]; first && s <= at {
				return true
			}
		}
		if s, ok := st.unknownAt[p]; ok && s <= at && st.unreadAt[p] == nil {
			return true
		}
		return st.underDirBefore(p, at)
	}
	for i := range unread {
		u := &unread[i]
		if err := r.editPathsOf(u, ws, oc); err != nil {
			return err
		}
		var files []string
		if u.known {
			for _, p := range u.paths {
				if !stated(p, u.at) && st.unreadAt[p] == nil {
					files = append(files, p)
				}
			}
		} else {
			for p := range st.First {
				if st.seq[p] > u.at {
					files = append(files, p)
				}
			}
			for p, s := range st.unknownAt {
				if s > u.at && st.unreadAt[p] == nil && !slices.Contains(files, p) {
					files = append(files, p)
				}
			}
		}
		if len(files) == 0 && u.known {
			continue // (each file it changed is known from before it)
		}
		slices.Sort(files)
		u.files = files
		for _, p := range files {
			if c, ok := st.First[p]; ok {
				if c.transcript {
					st.FromTranscript--
				}
				delete(st.First, p)
			}
			st.dropUnknown(p)
			st.Unknown = append(st.Unknown, UncomparedFile{Path: p, Error: u.unknownWhy(p)})
			delete(st.seq, p)
			st.unknownAt[p] = u.at
			st.unreadAt[p] = u
		}
		st.unreadOwn = append(st.unreadOwn, u)
	}
	slices.SortFunc(st.Unknown, func(a, b UncomparedFile) int { return strings.Compare(a.Path, b.Path) })
	return nil
}

// unknownWhy is why file p's state is not known, u not reading.
func (u *ownUnread) unknownWhy(p string) string {
	if u.known {
		return fmt.Sprintf("its state before is not known: event #%d of the session (%s), which changed it first, cannot be read (%v)", u.seq, u.what(), u.err)
	}
	return fmt.Sprintf("its state before is not known: event #%d of the session (%s) cannot be read (%v), and may have changed it before the first state of it that reads", u.seq, u.what(), u.err)
}

// stillNeeded are the files whose state u makes not known that no other
// session's state (mergeFamilyStates) has given since.
func (st *firstStates) stillNeeded(u *ownUnread) []string {
	var out []string
	for _, p := range u.files {
		// (Another's state of it from before may have come since:
		// mergeFamilyStates.)
		why := u.unknownWhy(p)
		if st.unreadAt[p] == u && slices.ContainsFunc(st.Unknown, func(f UncomparedFile) bool { return f.Path == p && f.Error == why }) {
			out = append(out, p)
		}
	}
	return out
}

// unreadHowOf says what to do for session id, an event of whose lines
// does not read (err): that of the imported session its lines are (a
// fork's: the one it was forked from; unreadHow).
func (r *Rook) unreadHowOf(id eventlog.ID, err error) string {
	m, merr := r.Log.ReadMeta(id)
	if merr != nil {
		return unreadHow(id, nil, err)
	}
	if im, ok := r.importedSession(m); ok && !im.ID.IsZero() {
		return unreadHow(im.ID, im.Source, err)
	}
	return unreadHow(id, r.ImportedFrom(m), err)
}

// ownUnreadRefusal is the refusal of a rewind of session id whose own
// event that does not read a file's state at the point needs (st read
// from the point, and the family's merged); nil when none does.
func (st *firstStates) ownUnreadRefusal(r *Rook, id eventlog.ID) error {
	for _, u := range st.unreadOwn {
		need := st.stillNeeded(u)
		var so string
		switch {
		case !u.known:
			so = "which file it changed is not known, so neither is any file's state at the point read after it"
		case len(need) == 0:
			continue
		default:
			so = fmt.Sprintf("what %s held at the point, which that edit found, is not known", strings.Join(need, " and "))
		}
		return fmt.Errorf("cannot rewind the files: event #%d of session %s (%s) cannot be read (%v): %s; %s; then run this again, or put the files back yourself and rewind with --keep-files, which rewinds the conversation only: nothing changed",
			u.seq, id, u.what(), u.err, so, r.unreadHowOf(id, u.err))
	}
	return nil
}

// ownUnreadNotes are the notes of a diff of session id whose own events
// do not read (st.unreadOwn): each names the event, why, the files not
// compared for it, and what to do; the first maxNotKnownNamed, then how
// many more.
func (st *firstStates) ownUnreadNotes(r *Rook, id eventlog.ID) (notes []string, seqs []uint64) {
	more := 0
	for _, u := range st.unreadOwn {
		need := st.stillNeeded(u)
		if u.known && len(need) == 0 {
			continue
		}
		seqs = append(seqs, u.seq)
		if len(notes) == maxNotKnownNamed {
			more++
			continue
		}
		var so string
		files := strings.Join(need, ", ")
		switch {
		case u.known && len(need) > 1:
			so = fmt.Sprintf("%s are not compared (uncompared): what that edit found is not known", files)
		case u.known:
			so = fmt.Sprintf("%s is not compared (uncompared): what that edit found is not known", files)
		case len(need) > 0:
			so = fmt.Sprintf("which file it changed is not known: a file only it changed is not shown, and %s, whose first state read comes after it, is not compared (uncompared)", files)
		default:
			so = "which file it changed is not known: a file only it changed is not shown"
		}
		notes = append(notes, fmt.Sprintf("event #%d of this session (%s) cannot be read (%v): %s; %s", u.seq, u.what(), u.err, so, r.unreadHowOf(id, u.err)))
	}
	if more > 0 {
		notes = append(notes, fmt.Sprintf("%d more events of this session cannot be read, as those above: the files they changed are not compared (uncompared)", more))
	}
	return notes, seqs
}
