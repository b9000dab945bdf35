package agent

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rookhq/rook/eventlog"
)

// A Claude Code subagent (or fork) edits files in its parent's workspace,
// and its edit results and backups are in its own transcript, not the
// parent's. Rewinding the parent to before a Task call took each file's
// first state in the parent's own events after the point: an edit of
// a.txt after the subagent's says the file as the subagent left it, a
// state it never had at the point; a file only the subagent changed was
// left as it is, unsaid. A rewind now takes, for each path, the earliest
// state by time at or after the point among the session's own events and
// those of the imported sessions linked to it (family.go) in the same
// workspace.

// mergeFamilyStates merges into st (the first states of imported Claude
// Code session id from event to, workspace ws) those of its family that
// come earlier, each said in st.linkedNotes.
func (r *Rook) mergeFamilyStates(id eventlog.ID, to uint64, ws string, st *firstStates) error {
	fam, err := r.importedFamilyOf(id, "Claude Code")
	if err != nil {
		return err
	}
	if fam.tooMany != "" {
		return fmt.Errorf("cannot rewind the files: %s", fam.tooMany)
	}
	var members []eventlog.ID
	for _, o := range fam.members {
		if r.transcriptWorkspace(o) == ws {
			members = append(members, o)
		}
	}
	if len(members) == 0 {
		return nil
	}
	tTo, err := r.eventTime(id, to)
	if err != nil {
		return err
	}
	// The time of each path's state so far.
	best := map[string]time.Time{}
	for p := range st.First {
		if best[p], err = r.eventTime(id, st.seq[p]); err != nil {
			return err
		}
	}
	for p, seq := range st.unknownAt {
		if best[p], err = r.eventTime(id, seq); err != nil {
			return err
		}
	}
	for _, o := range members {
		from, err := r.firstAtOrAfter(o, tTo)
		if err != nil {
			return fmt.Errorf("session %s (%s, in the same workspace) cannot be read: %w", o, fam.kin[o], err)
		}
		so, err := r.capturedStatesFor(o, from, true)
		if err != nil {
			return fmt.Errorf("session %s (%s, in the same workspace) cannot be read: %w", o, fam.kin[o], err)
		}
		if so.Root != "" && filepath.Clean(so.Root) != ws {
			continue
		}
		earlier := func(p string, seq uint64) (bool, error) {
			t, err := r.eventTime(o, seq)
			if err != nil {
				return false, err
			}
			if b, ok := best[p]; ok && !t.Before(b) {
				return false, nil
			}
			best[p] = t
			return true, nil
		}
		taken := false
		for _, p := range sortedKeys(so.First) {
			c := so.First[p]
			ok, err := earlier(p, so.seq[p])
			if err != nil || !ok {
				if err != nil {
					return err
				}
				continue
			}
			if old, had := st.First[p]; had && old.transcript {
				st.FromTranscript--
			}
			st.First[p] = c
			if _, ok := st.seq[p]; !ok {
				st.seq[p] = to
			}
			st.dropUnknown(p)
			if c.transcript {
				st.FromTranscript++
			} else {
				taken = true
			}
			if st.Root == "" {
				st.Root = ws
			}
			st.linkedNotes = append(st.linkedNotes, fmt.Sprintf("%s: put back as it was when session %s (%s, in the same workspace) first changed it after the point, before this session did", p, o, fam.kin[o]))
		}
		if taken {
			st.Captures++
		}
		for _, u := range so.Unknown {
			ok, err := earlier(u.Path, so.unknownAt[u.Path])
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			if old, had := st.First[u.Path]; had && old.transcript {
				st.FromTranscript--
			}
			delete(st.First, u.Path)
			st.dropUnknown(u.Path)
			st.Unknown = append(st.Unknown, UncomparedFile{Path: u.Path, Error: fmt.Sprintf("%s (in session %s, %s, which changed it after the point, before this session did)", u.Error, o, fam.kin[o])})
		}
	}
	slices.SortFunc(st.Unknown, func(a, b UncomparedFile) int { return strings.Compare(a.Path, b.Path) })
	return nil
}

// dropUnknown takes p out of st.Unknown.
func (st *firstStates) dropUnknown(p string) {
	st.Unknown = slices.DeleteFunc(st.Unknown, func(u UncomparedFile) bool { return u.Path == p })
}

// firstAtOrAfter is the seq of session id's first event at or after t
// (its end when none is).
func (r *Rook) firstAtOrAfter(id eventlog.ID, t time.Time) (uint64, error) {
	for from := uint64(0); ; {
		evs, err := r.Log.Read(id, from, 1024)
		if err != nil {
			return 0, err
		}
		if len(evs) == 0 {
			return from, nil
		}
		for _, ev := range evs {
			if !ev.Time.Before(t) {
				return ev.Seq, nil
			}
		}
		from = evs[len(evs)-1].Seq + 1
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
