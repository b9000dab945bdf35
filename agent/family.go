package agent

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rookhq/rook/eventlog"
)

// An imported session's family: the imported sessions its own is linked
// to by parent links whose child is imported (a fork or a subagent of
// Codex or Claude Code), up and down, and on from those. They worked on
// the same workspace's files, often at once, each writing files the
// others' transcripts do not say: a rewind of one counts what the others
// wrote (codex_family.go, family_states.go).

// maxFamily bounds the sessions of a family read: the imported sessions
// linked to the one asked of, and the rook forks on the way up from it
// to that one (importedFamilyOf). Over it, tooMany says so: a rewind
// refuses, a diff says so in a note; nothing is cut off unsaid. A
// variable only for the tests, which make a family over a smaller one
// cheaply (withMaxFamily); TestFamilyBound reads one over this one.
var maxFamily = 1000

// importedFamily is what importedFamilyOf finds.
type importedFamily struct {
	// line: the session asked of, and the rook forks (a rewind's) up from
	// it to an imported session, start: its transcript's events are its
	// own.
	line  []eventlog.ID
	start eventlog.ID
	// members: the others, with what each is to start, in words.
	members []eventlog.ID
	kin     map[eventlog.ID]string
	// tooMany says so when over maxFamily are linked, or the line has
	// over maxFamily rook forks: not all are read (members is partial).
	tooMany string
	// removed are the sessions removed since (session rm) that a member
	// (or the line) names its parent, by that member: what they wrote
	// after it is not known.
	removed map[eventlog.ID]eventlog.ID
	// sources are the source session ids (childSourceID) of the imported
	// sessions gone through, and of the imported children of those, in
	// any workspace: a Claude Code subagent's "agent-<agentId>" is there
	// while its session is (family_subagents.go).
	sources map[string]bool
	// unreadMeta are the sessions of the store whose metadata does not
	// read: one may be a member, linked to none (its parent not known).
	unreadMeta []eventlog.ID
}

// importedFamilyOf finds session id's family; what names the agent
// ("Codex", "Claude Code") in the words of kin. Each linked session is a
// member wherever it was recorded: its cwd is only where its shell was
// when it started (a subagent started after a `cd ../lib` records the
// workspace's sibling), and its edits take absolute paths, so it may have
// written the workspace's files from anywhere. Its reader keeps only the
// paths in the workspace (family_states.go, codex_diff_subagents.go);
// maxFamily bounds the members.
func (r *Rook) importedFamilyOf(id eventlog.ID, what string) (importedFamily, error) {
	f := importedFamily{line: []eventlog.ID{id}, start: id}
	for {
		m, err := r.Log.ReadMeta(f.start)
		if errors.Is(err, eventlog.ErrNoSession) && f.start != id {
			break // (removed since: the fork holds its events before the point)
		}
		if err != nil {
			return f, err
		}
		pid, _, ok := m.ForkedFrom()
		if !ok || m.Source != nil {
			break
		}
		// f.start is a rook fork, the len(f.line)th of the line: one more
		// than maxFamily (or a loop of damaged metadata) is not followed,
		// and said, not cut off at a fork whose family is none.
		if len(f.line) > maxFamily {
			f.tooMany = fmt.Sprintf("this session is over %d rook forks (session fork, rewind) down from the imported %s session it comes from, too many to follow to it and read what the sessions linked to it wrote", maxFamily, what)
			return f, nil
		}
		f.start = pid
		f.line = append(f.line, pid)
	}
	this := "this session"
	if f.start != id {
		this = "session " + f.start.String()
	}
	index := &forkIndex{r: r}
	f.kin = map[eventlog.ID]string{f.start: ""}
	f.sources = map[string]bool{}
	queue := []eventlog.ID{f.start}
	for len(queue) > 0 {
		// (f.kin holds f.start too: the others linked are one fewer.)
		if len(f.kin)-1 > maxFamily {
			f.tooMany = fmt.Sprintf("%s is linked to over %d imported %s sessions (forks, subagents), too many to read for what they wrote", this, maxFamily, what)
			break
		}
		cur := queue[0]
		queue = queue[1:]
		if !slices.Contains(f.line, cur) {
			f.members = append(f.members, cur)
		}
		m, err := r.Log.ReadMeta(cur)
		switch {
		case errors.Is(err, eventlog.ErrNoSession) && cur != id:
			// Removed since (rm): its forks still name it their parent.
		case err != nil:
			return f, err
		case m.Source != nil:
			f.sources[childSourceID(m)] = true
			for _, up := range []*eventlog.ID{m.Parent, m.Ancestor} {
				if up != nil && up == m.Parent && !has(f.removed, *up) {
					if _, err := r.Log.ReadMeta(*up); errors.Is(err, eventlog.ErrNoSession) {
						if f.removed == nil {
							f.removed = map[eventlog.ID]eventlog.ID{}
						}
						f.removed[*up] = cur
					}
				}
				if up != nil && !has(f.kin, *up) {
					f.kin[*up] = "one of the imported " + what + " sessions linked to " + this
					if cur == f.start && up == m.Parent {
						f.kin[*up] = "the " + what + " session " + this + " came from"
					}
					queue = append(queue, *up)
				}
			}
		}
		children, err := index.childrenOf(cur)
		if err != nil {
			return f, err
		}
		for _, c := range children {
			if has(f.kin, c) {
				continue
			}
			cm, err := r.Log.ReadMeta(c)
			if err == nil && cm.Source != nil {
				f.sources[childSourceID(cm)] = true
			}
			if err != nil || cm.Source == nil {
				continue // (a rook fork: its events are copies, or its own)
			}
			f.kin[c] = "one of the imported " + what + " sessions linked to " + this
			if cur == f.start {
				f.kin[c] = "a " + what + " fork of " + this
				if isSubagent(cm) {
					f.kin[c] = "a " + what + " subagent of " + this
				}
			}
			queue = append(queue, c)
		}
	}
	f.unreadMeta = index.unread
	// Removed ones read as nothing.
	f.members = slices.DeleteFunc(f.members, func(x eventlog.ID) bool {
		_, err := r.Log.ReadMeta(x)
		return errors.Is(err, eventlog.ErrNoSession)
	})
	return f, nil
}

// inWorkspace says whether dir is workspace ws or a directory in it: a
// Claude Code session (a subagent, say) started while its parent's shell
// was in ws/sub records ws/sub as its cwd, and edits ws's files.
func inWorkspace(ws, dir string) bool {
	if dir == "" || !filepath.IsAbs(dir) {
		return false
	}
	rel, err := filepath.Rel(ws, filepath.Clean(dir))
	rel = filepath.ToSlash(rel)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// recordedIn says, for a message, where a linked session recorded in dir
// (its cwd) is from workspace ws: a session started after a `cd` records
// a directory in ws, one ws is in, or another (a sibling, after a `cd
// ../lib`), and its changes of ws's files are read all the same, but it
// was not in the same workspace. A dir that is one of those by another
// path, through a symbolic link (links.go), is said to be so.
func recordedIn(ws, dir string) string {
	abs := filepath.IsAbs(ws) && filepath.IsAbs(dir)
	switch {
	case dir == "":
		return "its workspace not recorded"
	case ws != "" && filepath.Clean(dir) == filepath.Clean(ws):
		return "in the same workspace"
	case abs && inWorkspace(ws, dir):
		rel, _ := filepath.Rel(ws, filepath.Clean(dir))
		return "in the workspace's subdirectory " + filepath.ToSlash(rel)
	case abs && inWorkspace(filepath.Clean(dir), ws):
		return "in " + filepath.Clean(dir) + ", a directory containing the workspace"
	case abs:
		const link = " through a symbolic link"
		rel, ok := linkedRel(ws, dir)
		switch {
		case ok && rel == ".":
			return "in the same workspace, recorded as " + filepath.Clean(dir) + link
		case ok && rel != ".." && !strings.HasPrefix(rel, "../"):
			return "in the workspace's subdirectory " + rel + ", recorded as " + filepath.Clean(dir) + link
		case ok:
			return "in " + filepath.Clean(dir) + ", a directory containing the workspace" + link
		}
		return "recorded in " + filepath.Clean(dir) + ", outside the workspace"
	}
	return "recorded in " + dir
}

// memberKin says what member o of family lf is to the session lf starts
// from, and where it was recorded from workspace ws, in words.
func (r *Rook) memberKin(lf importedFamily, o eventlog.ID, ws string) string {
	dir := ""
	if m, err := r.Log.ReadMeta(o); err == nil {
		dir = m.Workspace
	}
	return lf.kin[o] + ", " + recordedIn(ws, dir)
}

// memberUnread is a member of a family (a subagent, say) whose session
// does not read (err: its log, or an object of its lines, damaged or
// missing): what it changed is not known. A diff says so in a note
// (unreadMemberNote) and shows the rest; a rewind refuses
// (unreadMemberRefusal).
type memberUnread struct {
	session eventlog.ID
	err     error
}

func (e *memberUnread) Error() string {
	return fmt.Sprintf("session %s cannot be read: %v", e.session, e.err)
}

func (e *memberUnread) Unwrap() error { return e.err }

// unreadMemberNote is the note of a diff of session id (lf its family,
// ws its workspace) whose member o does not read (err): which session,
// why, that what it changed is not shown, and what to do (unreadHow).
func (r *Rook) unreadMemberNote(id eventlog.ID, lf importedFamily, o eventlog.ID, ws string, err error) string {
	return fmt.Sprintf("session %s (%s) cannot be read (%v): the files it changed are not shown unless %s changed them too; %s",
		o, r.memberKin(lf, o, ws), err, lf.this(id), unreadHow(o, r.sourceOf(o), err))
}

// unreadMemberRefusal is the refusal of a rewind whose family (lf, ws
// its workspace) has a member o that does not read (err): what it wrote
// is not known, so no file state after the point is; what to do
// (unreadHow), or --keep-files. It wraps no error of the store's: it
// says already what checks the store.
func (r *Rook) unreadMemberRefusal(lf importedFamily, o eventlog.ID, ws string, err error) error {
	return fmt.Errorf("cannot rewind the files: session %s (%s) cannot be read (%v), so what it wrote is not known, and the files' states after the point may hold it; %s; then run this again, or put the files back yourself and rewind with --keep-files, which rewinds the conversation only",
		o, r.memberKin(lf, o, ws), err, unreadHow(o, r.sourceOf(o), err))
}

// sourceOf is where imported session id's lines came from; nil when its
// metadata does not read, or it is not imported.
func (r *Rook) sourceOf(id eventlog.ID) *eventlog.Source {
	m, err := r.Log.ReadMeta(id)
	if err != nil {
		return nil
	}
	return m.Source
}

// diffSubagents are the members of fam whose changes a diff of the
// session fam starts from counts as its own: its imported subagents (a
// Claude Code Task's, a Codex spawn_agent's, linked to it), theirs (a
// Codex subagent may spawn its own), and those a result of the diffed
// session reports (reported: source ids), as a fork's copy of its
// parent's Task result (or spawn_agent output) reports the parent's
// subagent. Not its forks, nor the session it came from: their changes
// are theirs.
func (r *Rook) diffSubagents(fam importedFamily, reported map[string]bool) map[eventlog.ID]bool {
	// The family's subagents, each's metadata read once.
	metas := map[eventlog.ID]eventlog.Meta{}
	for _, o := range fam.members {
		if m, err := r.Log.ReadMeta(o); err == nil && m.Parent != nil && isSubagent(m) {
			metas[o] = m
		}
	}
	subs := map[eventlog.ID]bool{}
	for more := true; more; {
		more = false
		for _, o := range fam.members {
			m, sub := metas[o]
			if subs[o] || !sub {
				continue
			}
			if *m.Parent == fam.start || subs[*m.Parent] || reported[childSourceID(m)] {
				subs[o], more = true, true
			}
		}
	}
	return subs
}

// lineEnd is the time a rook fork's line (session fork, a rewind's fork)
// ends at: its fork point's, as its diff reads it; what came after that
// in the session it was forked from, its subagents' changes too, is not
// its line's. Zero for a line of no rook fork.
func (r *Rook) lineEnd(fam importedFamily) (time.Time, error) {
	var end time.Time
	for i := 1; i < len(fam.line); i++ {
		cm, err := r.Log.ReadMeta(fam.line[i-1])
		if err != nil {
			break
		}
		_, k, ok := cm.ForkedFrom()
		if !ok {
			break
		}
		t, err := r.eventTime(fam.line[i], k)
		if err != nil && k > 0 {
			// (Removed since: the fork's copy of the event before it.)
			t, err = r.eventTime(fam.line[i-1], k-1)
		}
		if err != nil {
			return end, err
		}
		if end.IsZero() || t.Before(end) {
			end = t
		}
	}
	return end, nil
}

func has[K comparable, V any](m map[K]V, k K) bool {
	_, ok := m[k]
	return ok
}
