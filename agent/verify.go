package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// ReferenceReport is what `rook store verify` finds beyond the objects
// themselves (cas.Store.Verify): whether every session's log reads to its
// end, and whether every object the sessions and refs name, followed into
// the snapshots and imported lines that name others, is in the store. An
// object the store holds but cannot read back is cas.Store.Verify's to
// report; here it counts as there.
type ReferenceReport struct {
	Sessions int                `json:"sessions"` // sessions whose logs were read
	Events   int64              `json:"events"`   // events read
	Refs     int                `json:"refs"`     // ids named by ref files (checkpoints)
	Named    int                `json:"objects_named"`
	Problems []ReferenceProblem `json:"problems"`
	// LogsWithoutMeta are the event logs (paths) with no .meta beside
	// them: no session, so nothing lists them; gc keeps what their events
	// name all the same (a .meta lost: with it put back, the log is a
	// session again), until `rook session rm ID` removes the log. Named, not
	// problems: a session rm or prune that stopped part way (a full
	// disk) leaves one, of a session the user removed, until the next
	// writer's open removes it (eventlog: the dirty marker tags it).
	LogsWithoutMeta []string `json:"logs_without_meta"`

	// namedAt is where each object was first named: NamedBy says it, and
	// ImportFormats takes from its session which objects an import put,
	// and so which a re-read of the transcripts can put back.
	namedAt func(cas.Key) (ReferenceProblem, bool)
}

// NamedBy says where an object (a damaged one, say) is first named: "session
// S #N", "session S #N, in <snapshot>", or a ref's path; "" when nothing
// names it (garbage, which gc collects).
func (rep ReferenceReport) NamedBy(id cas.Key) string {
	if rep.namedAt == nil {
		return ""
	}
	at, ok := rep.namedAt(id)
	if !ok {
		return ""
	}
	return strings.TrimSuffix(at.String(), ": ")
}

// NamingSession is the session that first names an object (an event's,
// or in a snapshot or imported line one of its events names); "" when a
// ref names it first, or nothing does.
func (rep ReferenceReport) NamingSession(id cas.Key) string {
	if rep.namedAt == nil {
		return ""
	}
	at, _ := rep.namedAt(id)
	return at.Session
}

// ReferenceProblem is a session whose log or metadata does not read, or
// an object named and not in the store: named by a session's event (Seq),
// a ref file (Ref), or a snapshot or imported line (In, its short id)
// that one of those named (Session or Ref then say which).
type ReferenceProblem struct {
	Session string  `json:"session,omitempty"`
	Seq     *uint64 `json:"seq,omitempty"`
	Ref     string  `json:"ref,omitempty"`
	In      string  `json:"in,omitempty"`
	ID      string  `json:"id,omitempty"` // the missing object's short id
	Reason  string  `json:"reason"`
	// Also counts the other places that name the same missing object
	// (each is reported once, where first found).
	Also int `json:"also,omitempty"`
}

// Missing counts the problems that are objects not in the store.
func (rep ReferenceReport) Missing() int {
	n := 0
	for _, p := range rep.Problems {
		if p.ID != "" {
			n++
		}
	}
	return n
}

func (p ReferenceProblem) String() string {
	where := ""
	switch {
	case p.Session != "" && p.Seq != nil:
		where = fmt.Sprintf("session %s #%d", p.Session, *p.Seq)
	case p.Session != "":
		where = "session " + p.Session
	case p.Ref != "":
		where = p.Ref
	}
	if p.In != "" {
		where += ", in " + p.In
	}
	if strings.HasPrefix(p.Reason, where+": ") {
		where = "" // a log's or metadata's error names its session already
	}
	s := p.Reason
	if where != "" {
		s = where + ": " + s
	}
	if p.Also > 0 {
		s += fmt.Sprintf(" (and %d other place(s) name it)", p.Also)
	}
	return s
}

// ImportFormats lists the formats (FormatClaudeCode, FormatCodex) of the
// imported sessions among those that name the objects ids, as rep (from
// VerifyReferences) found them named: `rook import FORMAT --reread` puts
// those back from the transcripts.
func (r *Rook) ImportFormats(rep ReferenceReport, ids []cas.Key) []string {
	var formats []string
	seen := map[string]bool{}
	for _, id := range ids {
		if rep.namedAt == nil {
			break
		}
		at, _ := rep.namedAt(id)
		sid := at.Session
		if sid == "" || seen[sid] {
			continue
		}
		seen[sid] = true
		lid, err := eventlog.ParseID(sid)
		if err != nil {
			continue
		}
		m, err := r.Log.ReadMeta(lid)
		if err != nil {
			continue
		}
		if src := r.ImportedFrom(m); src != nil && !slices.Contains(formats, src.Format) {
			formats = append(formats, src.Format)
		}
	}
	sort.Strings(formats)
	return formats
}

// VerifyReferences reads every session's metadata and log to its end and
// checks that every object named is in the store (see ReferenceReport).
// Unlike the gc's mark (Roots), which stops at the first log it cannot
// read, it goes on past each problem to report them all; but a lookup in
// the index that fails (not "not there": the index does not read) makes
// it return an error after the walk, as what it named was not checked.
// progress (when
// not nil) is called with the sessions read so far and their number.
func (r *Rook) VerifyReferences(progress func(done, total int64)) (ReferenceReport, error) {
	rep := ReferenceReport{Problems: []ReferenceProblem{}, LogsWithoutMeta: []string{}}
	// Listed before the sessions are read and again after: a writer
	// creating sessions in bulk (an import) writes a log's .meta at its
	// next barrier, so one that had none then and has one now was being
	// made.
	orphans, err := LogsWithoutMeta(r.fs, r.home)
	if err != nil {
		return rep, err
	}
	type namer struct {
		p    ReferenceProblem // where the name is: Session, Seq, Ref
		idx  int              // the problem reported for it, if missing: index+1
		kind cas.Kind         // a container's kind
		// other: there, of a kind that names nothing; asCapture: of such a
		// kind, expanded as a snapshot all the same, being named where a
		// capture is read (namesCapture: the bytes came in first as a file).
		other, asCapture bool
		named            bool // named where a capture is read
	}
	seen := map[cas.Key]*namer{}
	var containers []cas.Key // snapshots and imported lines, to expand
	// lookupErr: the first lookup that failed otherwise than "not there"
	// (the index does not read: EIO, too many open files). What it named
	// is neither there nor missing, so the check cannot say all are there.
	var lookupErr error
	check := func(id cas.Key, at ReferenceProblem, capture bool) {
		if n, ok := seen[id]; ok {
			if n.idx > 0 {
				rep.Problems[n.idx-1].Also++
			}
			if capture {
				n.named = true
			}
			if capture && n.other {
				n.other, n.asCapture, n.kind = false, true, cas.KindSnapshot
				n.p = at
				containers = append(containers, id)
			}
			return
		}
		n := &namer{p: at, named: capture}
		seen[id] = n
		info, err := r.Store.StatEntry(id)
		var nf *cas.NotFoundError
		switch {
		case errors.As(err, &nf):
			at.ID = cas.Short(id)
			at.Reason = fmt.Sprintf("%s is not in the store", cas.Short(id))
			rep.Problems = append(rep.Problems, at)
			n.idx = len(rep.Problems)
		case err != nil:
			if lookupErr == nil {
				where := strings.TrimSuffix(at.String(), ": ") // no Reason: where only
				lookupErr = fmt.Errorf("%s, named by %s, could not be looked up in the store (%w): the objects named were not all checked; check the disk and the store's permissions, then run again",
					cas.Short(id), where, err)
			}
		case err == nil && (info.Kind == cas.KindSnapshot || info.Kind == cas.KindSource):
			containers = append(containers, id)
			n.kind = info.Kind
		case err == nil && capture:
			containers = append(containers, id)
			n.kind, n.asCapture = cas.KindSnapshot, true
		case err == nil:
			n.other = true
		}
	}
	ids, err := r.Log.IDs()
	if err != nil {
		return rep, err
	}
	total := int64(len(ids)) + 1 // the refs and containers as a last step
	for i, id := range ids {
		if progress != nil {
			progress(int64(i), total)
		}
		sid := id.String()
		// A session removed since the listing (`session rm` in another
		// process) is not there, not a problem.
		removed := func(err error) bool { return r.Log.RemovedSince(id, err) }
		m, err := r.Log.ReadMeta(id)
		if removed(err) {
			continue
		} else if err != nil {
			// Its log is read through its metadata: reading it would
			// only report this again.
			rep.Sessions++
			rep.Problems = append(rep.Problems, ReferenceProblem{Session: sid, Reason: err.Error()})
			continue
		}
		rep.Sessions++
		var damage error // met reading a page, before reading it again
		for from, page := uint64(0), 4096; ; {
			evs, err := r.Log.Read(id, from, page)
			if err != nil && page > 1 && !removed(err) {
				// A page that reaches the damage: the events before
				// it are read again one at a time (a read from past a
				// break may meet it at once, giving none), to check
				// what they name too.
				damage, page = err, 1
				continue
			}
			if damage != nil && (err != nil || len(evs) == 0) {
				// Said as the page said it, which names the seq and the
				// offset (one at a time, the last record damaged reads
				// as the end).
				err = damage
			}
			for _, ev := range evs {
				seq := ev.Seq
				check(ev.Body, ReferenceProblem{Session: sid, Seq: &seq}, namesCapture(ev))
			}
			rep.Events += int64(len(evs))
			if removed(err) {
				break
			}
			if err != nil {
				rep.Problems = append(rep.Problems, ReferenceProblem{Session: sid, Reason: r.unreadLogReason(m, err)})
				break
			}
			if len(evs) == 0 {
				break
			}
			from = evs[len(evs)-1].Seq + 1
		}
	}
	// A log with no .meta beside it: gc keeps what it names (Roots), so
	// what it names is checked as a session's is: a missing object there
	// is one gc refuses on, and one a lost dictionary's records may hold.
	for _, p := range orphans {
		id, err := eventlog.ParseID(strings.TrimSuffix(filepath.Base(p), ".log"))
		if err != nil {
			continue
		}
		for from := uint64(0); ; {
			evs, err := r.Log.ReadWithoutMeta(id, from, 4096)
			for _, ev := range evs {
				seq := ev.Seq
				check(ev.Body, ReferenceProblem{Session: id.String(), Seq: &seq}, namesCapture(ev))
			}
			rep.Events += int64(len(evs))
			if errors.Is(err, fs.ErrNotExist) {
				break // removed since it was listed
			}
			if err != nil {
				rep.Problems = append(rep.Problems, ReferenceProblem{Session: id.String(), Reason: fmt.Sprintf("%s (a log with no .meta): %v", p, err)})
				break
			}
			if len(evs) == 0 {
				break
			}
			from = evs[len(evs)-1].Seq + 1
		}
	}
	if progress != nil {
		progress(total-1, total)
	}
	if err := r.walkRefs(func(ref string, id cas.Key) {
		rep.Refs++
		check(id, ReferenceProblem{Ref: ref}, refNamesCapture(ref))
	}, func(ref string, err error) {
		reason := fmt.Sprintf("does not parse (%v): fix or remove the file (what it names is not known, and gc refuses to sweep while it is there)", err)
		if rr := (*RefRefusedError)(nil); errors.As(err, &rr) {
			reason = fmt.Sprintf("%s, not read: remove it, or put the right ref file back in its place (what it names is not known, and gc refuses to sweep while it is there)", rr.Why)
		} else if errors.As(err, new(*fs.PathError)) {
			reason = fmt.Sprintf("does not read (%v): fix or remove the file (what it names is not known, and gc refuses to sweep while it is there)", err)
		}
		rep.Problems = append(rep.Problems, ReferenceProblem{Ref: ref, Reason: reason})
	}); err != nil {
		return rep, err
	}
	for len(containers) > 0 {
		id := containers[len(containers)-1]
		containers = containers[:len(containers)-1]
		at := seen[id].p // where the container is named
		at.In = cas.Short(id)
		var names []cas.Key
		if seen[id].kind == cas.KindSnapshot {
			m, err := r.ReadManifest(id)
			if err != nil && (seen[id].asCapture || !seen[id].named) && errors.Is(err, ErrBadManifest) {
				// No manifest: an older rook let any body be a
				// checkpoint's; and a snapshot named only where no capture
				// is read (bytes put as a snapshot by hand, then a
				// message's body) is not read as one. It names nothing.
				continue
			}
			if err != nil {
				// Unreadable is the object check's to report; one that
				// reads and does not decode is this one's.
				if _, gerr := r.Store.Get(id); gerr == nil {
					at.Reason = fmt.Sprintf("the snapshot does not decode: %v", err)
					rep.Problems = append(rep.Problems, at)
				}
				continue
			}
			for _, f := range m.Files {
				names = append(names, f.ID)
			}
		} else {
			b, err := r.Store.Get(id)
			if err != nil {
				continue
			}
			sl, err := decodeSourceLine(b)
			if err != nil {
				at.Reason = fmt.Sprintf("the imported line does not decode: %v", err)
				rep.Problems = append(rep.Problems, at)
				continue
			}
			for _, c := range sl.Cuts {
				names = append(names, c.ID)
			}
		}
		for _, n := range names {
			check(n, at, false)
		}
	}
	if len(orphans) > 0 {
		still, err := LogsWithoutMeta(r.fs, r.home)
		if err != nil {
			return rep, err
		}
		for _, p := range still {
			if !slices.Contains(orphans, p) {
				continue
			}
			rep.LogsWithoutMeta = append(rep.LogsWithoutMeta, p)
		}
	}
	if lookupErr != nil {
		return rep, lookupErr
	}
	rep.Named = len(seen)
	rep.namedAt = func(id cas.Key) (ReferenceProblem, bool) {
		if n, ok := seen[id]; ok {
			return n.p, true
		}
		return ReferenceProblem{}, false
	}
	if progress != nil {
		progress(total, total)
	}
	return rep, nil
}

// unreadLogReason says why a session's log does not read and what to do:
// for an imported session whose log has lost its header, importing its
// transcript again, after `session rm`, gives its events back.
func (r *Rook) unreadLogReason(m eventlog.Meta, err error) string {
	// A fork in rook of an imported session is not its transcript's:
	// importing that again gives back the imported session, not the fork.
	var he *eventlog.HeaderError
	im, ok := r.importedSession(m)
	if !errors.As(err, &he) || !ok || im.ID != m.ID || im.Source == nil || im.Source.Path == "" {
		return err.Error()
	}
	src := im.Source
	return fmt.Sprintf("%v; it was imported from %s: after `rook session rm %s`, `rook import %s %s` imports it again", err, src.Path, m.ID, src.Format, ShellQuote(src.Path))
}

// NoMetaReason says what an event log with no .meta is, and what to do.
const NoMetaReason = "an event log with no .meta beside it: no session lists its events (a session rm or prune that stopped part way, or an import or `session new` stopped before its .meta was written, leaves one until the next writer's open removes it (the next import, say); a .meta lost leaves one that nothing removes unasked, as its events may have been acknowledged), and gc keeps the objects they name until the log is removed; if its session was not removed, put its .meta back from a backup; if it was, `rook session rm ID` (ID: the log's file name without .log) removes the log"

// NoMetaWhileWriting says what an event log with no .meta is while a
// writer (holder: the lock file's "pid N (command)") holds the store: an
// import creates its sessions in bulk, each one's log at once and its
// .meta only at its next barrier (eventlog.Create), and it tags a log
// "new" in WRITER-ACTIVE only once a barrier writes to it, so a log just
// created is named nowhere a reader can look. Doctor and verify, readers
// that run beside the import, sent the user to put the .meta of sessions
// being imported back from a backup, or to `session rm` them.
func NoMetaWhileWriting(holder string) string {
	return fmt.Sprintf("an event log with no .meta beside it yet, while the writer %s holds the store: it may be creating that session (an import writes each session's log first and its .meta at its next barrier): run the command again once that writer ends; a log still without .meta then is what the note says of such logs", holder)
}

// LogsWithoutMeta lists the event logs of the store at home (their paths,
// sorted) that have no .meta beside them. A session exists exactly when
// its .meta does: such a log is a session lost (its .meta deleted, or
// missed by a restore from a backup), or one a writer is creating in bulk
// (its .meta comes at the writer's next barrier).
func LogsWithoutMeta(fsys vfs.FS, home string) ([]string, error) {
	dir := filepath.Join(home, cas.EventsDir)
	ents, err := fsys.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	metas := map[string]bool{}
	for _, e := range ents {
		if name, ok := strings.CutSuffix(e.Name(), ".meta"); ok {
			metas[name] = true
		}
	}
	var out []string
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".log")
		if !ok || metas[name] {
			continue
		}
		if _, err := eventlog.ParseID(name); err != nil {
			continue // not a session's log
		}
		out = append(out, filepath.Join(dir, e.Name()))
	}
	sort.Strings(out)
	return out, nil
}
