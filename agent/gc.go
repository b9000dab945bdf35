package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/rookhq/rook/agent/inbox"
	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
)

// DefaultGCGrace: unreachable objects younger than this are kept.
const DefaultGCGrace = 10 * time.Minute

// Roots marks every reachable object: each event body of each session
// (but those in skip, for estimating what deleting them would free), and
// of each event log with no .meta beside it (a .meta lost: the log is kept,
// its events may have been acknowledged; kept lists those that named any),
// every version of every ref under refs/ (checkpoints, and what later
// features keep there), and, expanded, the files every reachable snapshot
// names. A snapshot that cannot be read stops the mark: an incomplete mark
// must never turn live objects into garbage. So does a body or ref target
// missing from the store (an index rebuilt past a damaged record forgets
// it): it may have been a snapshot or an imported line, and the objects it
// named, still there, would look like garbage. And so does a body or ref
// target whose kind could not be looked up (a read of the index that
// failed): what it names is unknown until its kind is.
// progress (when not nil) is called with the sessions marked so far and
// their number: on a large store the mark reads every event and every
// imported line, most of a gc's time.
func (r *Rook) Roots(skip map[eventlog.ID]bool, progress func(done, total int64)) (live map[cas.Key]bool, kept []string, err error) {
	return r.markFrom(nil, skip, progress)
}

// reach is what the sessions ids alone reach, as Roots marks it: their
// events' bodies and, expanded, what those name (a snapshot's files, an
// imported line's strings); not what the other sessions or the refs do.
// The budget estimates what deleting a session frees with it.
func (r *Rook) reach(ids []eventlog.ID) (map[cas.Key]bool, error) {
	live, _, err := r.markFrom(ids, nil, nil)
	return live, err
}

// markFrom is Roots (only nil), or reach of the sessions in only: those
// sessions, and no event log without a .meta nor ref.
func (r *Rook) markFrom(only []eventlog.ID, skip map[eventlog.ID]bool, progress func(done, total int64)) (live map[cas.Key]bool, kept []string, err error) {
	live = map[cas.Key]bool{}
	// containers are objects that name others: snapshots (their files) and
	// imported source lines (the strings cut out of them).
	var snapshots, lines []cas.Key
	// captures: manifests the store holds under another kind (an object
	// keeps its first put's kind: the same bytes may have come in first
	// as a file), named where a capture is read (namesCapture).
	var captures []cas.Key
	other := map[cas.Key]bool{} // marked, of a kind that names nothing
	// asCapture: named where a capture is read. A snapshot named only
	// elsewhere (bytes first put as a snapshot by hand, then a message's
	// body) that does not decode as a manifest names nothing.
	asCapture := map[cas.Key]bool{}
	// unplaced: the first reachable object the mark cannot tell what it
	// names of: it is not in the store, or its kind could not be looked up.
	var unplaced error
	mark := func(id cas.Key, from markedFrom, capture bool) {
		if capture {
			asCapture[id] = true
		}
		if live[id] {
			if capture && other[id] {
				delete(other, id)
				captures = append(captures, id)
			}
			return
		}
		live[id] = true
		if info, err := r.Store.StatEntry(id); err == nil && info.Kind == cas.KindSnapshot {
			snapshots = append(snapshots, id)
		} else if err == nil && info.Kind == cas.KindSource {
			lines = append(lines, id)
		} else if err == nil && capture {
			captures = append(captures, id)
		} else if err == nil {
			other[id] = true
		} else if unplaced == nil {
			// Not "let the expansion report it": put on the snapshots
			// list, a source line read there as no manifest, named nothing
			// and its cut strings were collected.
			var nf *cas.NotFoundError
			if errors.As(err, &nf) {
				unplaced = from.missing(id)
			} else {
				unplaced = from.unknownKind(id, err)
			}
		}
	}
	ids := only
	if only == nil {
		if ids, err = r.Log.IDs(); err != nil {
			return nil, nil, err
		}
	}
	// The imported lines' strings are marked after the sessions: each
	// session counts once, and the lines as a last step.
	total := int64(len(ids)) + 1
	for i, id := range ids {
		if progress != nil {
			progress(int64(i), total)
		}
		if skip[id] {
			continue
		}
		for from := uint64(0); ; {
			evs, err := r.Log.Read(id, from, 4096)
			if err != nil {
				// The log's error names the session already, and how to
				// keep what reads; what lets gc run again is said here, as
				// a fork alone does not (the damaged log is still read).
				return nil, nil, fmt.Errorf("%w: gc refuses to sweep with an incomplete mark; once what reads is kept, `rook session rm %s` lets gc run again", err, id)
			}
			if len(evs) == 0 {
				break
			}
			for _, ev := range evs {
				mark(ev.Body, markedFrom{session: id, seq: ev.Seq}, namesCapture(ev))
			}
			from = evs[len(evs)-1].Seq + 1
		}
	}
	// An event log with no .meta beside it is no session, but it is kept
	// (a .meta lost: its events may have been acknowledged, and with the
	// .meta put back it is a session again), so what its events name is
	// kept too, as a session's is, until `rook session rm ID` removes it.
	var orphans []string
	if only == nil {
		if orphans, err = LogsWithoutMeta(r.fs, r.home); err != nil {
			return nil, nil, fmt.Errorf("list the event logs with no .meta beside them: %w: gc refuses to sweep with an incomplete mark", err)
		}
	}
	for _, p := range orphans {
		id, err := eventlog.ParseID(strings.TrimSuffix(filepath.Base(p), ".log"))
		if err != nil || skip[id] {
			continue
		}
		read := false
		for from := uint64(0); ; {
			evs, err := r.Log.ReadWithoutMeta(id, from, 4096)
			if errors.Is(err, fs.ErrNotExist) && !read {
				break // removed since it was listed (`session rm` of it)
			}
			if err != nil {
				return nil, nil, orphanLogError(p, id, err)
			}
			if len(evs) == 0 {
				break
			}
			read = true
			for _, ev := range evs {
				mark(ev.Body, markedFrom{session: id, seq: ev.Seq, noMeta: p}, namesCapture(ev))
			}
			from = evs[len(evs)-1].Seq + 1
		}
		if read {
			kept = append(kept, p)
		}
	}
	if only == nil {
		if err := r.walkRefs(func(ref string, id cas.Key) { mark(id, markedFrom{ref: ref}, refNamesCapture(ref)) }, nil); err != nil {
			return nil, nil, err
		}
	}
	if unplaced != nil {
		return nil, nil, unplaced
	}
	for _, id := range captures {
		m, err := r.ReadManifest(id)
		if errors.Is(err, ErrBadManifest) {
			continue // no manifest (an older rook let any body be a checkpoint's): it names nothing
		} else if err != nil {
			return nil, nil, fmt.Errorf("a reachable snapshot %s cannot be read (%v): gc refuses to sweep with an incomplete mark; `rook store verify` shows the damage", cas.Short(id), err)
		}
		for _, f := range m.Files {
			live[f.ID] = true
		}
	}
	for len(snapshots) > 0 {
		id := snapshots[len(snapshots)-1]
		snapshots = snapshots[:len(snapshots)-1]
		m, err := r.ReadManifest(id)
		if err != nil {
			// Not found now (found by its kind's look-up in the mark, it
			// went since) is no "names nothing" either: the files it named
			// may still be there, and would look like garbage.
			if !asCapture[id] && errors.Is(err, ErrBadManifest) {
				continue // no manifest, and not read as one: it names nothing
			}
			return nil, nil, fmt.Errorf("a reachable snapshot %s cannot be read (%v): gc refuses to sweep with an incomplete mark; `rook store verify` shows the damage", cas.Short(id), err)
		}
		for _, f := range m.Files {
			live[f.ID] = true
		}
	}
	if progress != nil {
		progress(total-1, total)
	}
	for _, id := range lines {
		b, err := r.Store.Get(id)
		var sl sourceLine
		if err == nil {
			sl, err = decodeSourceLine(b)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("a reachable imported line %s cannot be read (%v): gc refuses to sweep with an incomplete mark; `rook store verify` shows the damage", cas.Short(id), err)
		}
		for _, c := range sl.Cuts {
			live[c.ID] = true
		}
	}
	if progress != nil {
		progress(total, total)
	}
	return live, kept, nil
}

// namesCapture says whether ev's body is read as a capture manifest by
// diff, rewind and restore: a checkpoint event's, and a late capture of
// file backups' (a note labelled so). They read it whatever kind the store
// holds the object as, so gc and verify follow it whatever its kind too.
func namesCapture(ev eventlog.Event) bool {
	return ev.Kind == eventlog.KindCheckpoint || ev.Kind == eventlog.KindNote && LateCaptureLabel(ev.Label)
}

// refNamesCapture says whether the ref file ref (its path under the home,
// as walkRefs gives it) names capture manifests: a checkpoint's does.
func refNamesCapture(ref string) bool {
	return strings.HasPrefix(ref, RefsDir+"/checkpoints/")
}

// orphanLogError is gc's refusal for an event log with no .meta beside it
// (at p) that does not read (err). A damaged log's own error names
// `rook session fork ID --at N`, which fails for it: a log with no .meta
// is no session, and nothing forks, shows or lists it. What works is the
// .meta put back from a backup (a session again, which the fork then
// keeps the events of), or `rook session rm ID`, which removes the log.
func orphanLogError(p string, id eventlog.ID, err error) error {
	const refuse = "gc refuses to sweep with an incomplete mark"
	if errors.Is(err, eventlog.ErrBadRecord) {
		where, fork := "it is damaged", "`rook session fork` keeps the events before the damage"
		if d := (*eventlog.DamagedAtError)(nil); errors.As(err, &d) {
			where = fmt.Sprintf("it is damaged where event %d was to be (the events before it read)", d.At)
			fork = fmt.Sprintf("`rook session fork` with --at %d keeps the events before the damage", d.At)
		}
		return fmt.Errorf("the event log %s, which has no .meta beside it: %w: %s; %s. With no .meta it is no session, so nothing forks it: put its .meta (%s.meta) back from a backup, and it is a session again: %s (then `rook session rm %s`); or, if its events are not wanted, `rook session rm %s` removes the log now; either lets gc run again", p, eventlog.ErrBadRecord, where, refuse, id, fork, id, id)
	}
	return fmt.Errorf("the event log %s, which has no .meta beside it: %w: %s; once what reads is kept (its .meta put back from a backup, the session forked), `rook session rm %s` removes the log and lets gc run again", p, err, refuse, id)
}

// markedFrom is where the mark found an object: an event of a session, or
// a ref file (its path under the home).
type markedFrom struct {
	session eventlog.ID
	seq     uint64
	ref     string
	noMeta  string // the event log of session, which has no .meta beside it
}

// event is the event the mark found an object in, as the user knows it.
func (m markedFrom) event() string {
	if m.noMeta != "" {
		return fmt.Sprintf("event #%d of the event log %s (no .meta beside it)", m.seq, m.noMeta)
	}
	return fmt.Sprintf("session %s event #%d", m.session, m.seq)
}

// unknownKind is the error of a mark that found id, named from here, and
// could not look up its kind (err: a read of the index that failed).
func (m markedFrom) unknownKind(id cas.Key, err error) error {
	what := "the body of " + m.event()
	if m.ref != "" {
		what = "named by ref " + m.ref
	}
	return fmt.Errorf("object %s, %s: its kind could not be looked up (%w): gc cannot tell what it names, so it refuses to sweep with an incomplete mark; run gc again, and if it fails the same way, `rook store verify` shows the damage", cas.Short(id), what, err)
}

// missing is the error of a mark that found id, named from here, missing
// from the store, with the ways out.
func (m markedFrom) missing(id cas.Key) error {
	const why = "is not in the store (`rook store verify` lists what is lost): gc cannot tell what it named, so it refuses to sweep what may still be needed"
	if m.ref != "" {
		return fmt.Errorf("object %s, named by ref %s, %s; put the object back (`rook store put` of its bytes, if you have them), or remove the ref to let gc run again", cas.Short(id), m.ref, why)
	}
	if m.noMeta != "" {
		return fmt.Errorf("object %s, the body of %s, %s; put the object back (`rook store put` of its bytes, if you have them), or `rook session rm %s` removes the log, to let gc run again", cas.Short(id), m.event(), why, m.session)
	}
	return fmt.Errorf("object %s, the body of session %s event #%d, %s; put the object back (`rook store put` of its bytes, if you have them), or `rook session fork %s --at %d` to keep the events before it, then `rook session rm %s`, to let gc run again", cas.Short(id), m.session, m.seq, why, m.session, m.seq, m.session)
}

// walkRefs calls mark for every object id any ref file names, with the
// file's path under the home: refs are text files of lines whose first
// field is a 32-hex id. A ref file that does not read or parse is an
// error, or, when bad is not nil, passed to it and passed over: so is one
// that is no regular file or is too large (readRefFile: a named pipe is
// not waited on, a device not read without end).
func (r *Rook) walkRefs(mark func(ref string, id cas.Key), bad func(ref string, err error)) error {
	var walk func(dir string) error
	walk = func(dir string) error {
		ents, err := r.fs.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			if e.IsDir() {
				if err := walk(p); err != nil {
					return err
				}
				continue
			}
			var lines []refLine
			b, err := readRefFile(r.fs, p)
			if errors.Is(err, fs.ErrNotExist) {
				if _, lerr := r.fs.Lstat(p); errors.Is(lerr, fs.ErrNotExist) {
					continue // listed, then removed (`checkpoint rm` of another rook)
				}
				// A link to nothing: what it named is unknown.
				err = fmt.Errorf("a link to nothing (%w)", err)
			}
			if err == nil {
				lines, err = parseRefLines(b)
			}
			if err != nil {
				if strings.HasPrefix(e.Name(), ".") {
					continue // a durable-write temp file
				}
				if bad != nil {
					bad(refName(r.home, p), err)
					continue
				}
				// Say the way out, as verify does: what the file names is
				// unknown until it is fixed or gone.
				fix := "fix or remove the file"
				// Only a checkpoint's name: rm refuses any other ("a b",
				// an editor's "#k#"), and the file is then to remove.
				isCheckpoint := filepath.Base(dir) == "checkpoints" && filepath.Dir(dir) == filepath.Join(r.home, RefsDir) && checkpointName.MatchString(e.Name())
				if isCheckpoint {
					fix = fmt.Sprintf("fix the file, or `rook checkpoint rm %s` removes the checkpoint", e.Name())
				}
				if rr := (*RefRefusedError)(nil); errors.As(err, &rr) {
					// Not read at all (a named pipe is not waited on, a
					// device not read without end): what it names is as
					// unknown as a ref that does not parse.
					fix = "remove it, or put the right ref file back in its place"
					if isCheckpoint {
						fix = fmt.Sprintf("put the right ref file back in its place, or `rook checkpoint rm %s` removes it", e.Name())
					}
					return fmt.Errorf("ref %s %s, not read: gc refuses to sweep with an incomplete mark; %s", p, rr.Why, fix)
				}
				return fmt.Errorf("ref %s: %v: gc refuses to sweep with an incomplete mark; %s", p, err, fix)
			}
			rel := refName(r.home, p)
			for _, l := range lines {
				mark(rel, l.id)
			}
		}
		return nil
	}
	return walk(filepath.Join(r.home, RefsDir))
}

// refName is a ref file's path under the home, with forward slashes.
func refName(home, p string) string {
	rel, _ := filepath.Rel(home, p)
	return filepath.ToSlash(rel)
}

// GC marks from the roots and sweeps the store (see cas.Store.Collect),
// calling mark with the progress of the mark (sessions; see Roots) and
// progress with that of the sweep, each when not nil.
func (r *Rook) GC(grace time.Duration, dryRun bool, mark, progress func(done, total int64)) (cas.GCReport, error) {
	if err := r.Flush(); err != nil {
		return cas.GCReport{}, err
	}
	if err := r.eventsDirThere(); err != nil {
		return cas.GCReport{}, err
	}
	live, kept, err := r.Roots(nil, mark)
	if err != nil {
		return cas.GCReport{}, err
	}
	// Roots refuses a named object missing: every one is in the store.
	rep, err := r.Store.Collect(cas.GCOptions{Live: func(id cas.Key) bool { return live[id] }, Grace: grace, DryRun: dryRun, Progress: progress, NothingNamedMissing: true})
	rep.KeptLogsWithoutMeta = kept
	if err != nil {
		return rep, err
	}
	if err := r.sweepBeside(&rep, grace, dryRun); err != nil {
		return rep, err
	}
	if !dryRun && (rep.TempFiles > 0 || rep.ImportStates > 0) {
		// Collect measured the disk before the sweep beside removed
		// these: the disk after is the store as gc leaves it.
		if disk, err := cas.MeasureDisk(r.fs, r.home); err == nil {
			rep.DiskAfter = disk.Total
		}
	}
	return rep, nil
}

// eventsDirThere refuses a gc of a store whose events directory is gone
// (removed by hand, a backup restored without it): init makes it and
// nothing removes it, and without it there is no session to mark from,
// so every object they named would be collected, before the directory
// could be put back. (A writer does not open such a store: this is for a
// dry run's plan.)
func (r *Rook) eventsDirThere() error {
	dir := filepath.Join(r.home, cas.EventsDir)
	if _, err := r.fs.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("the sessions' directory %s is missing: gc refuses to sweep with no session to mark from (it would collect every object they name); put it back, or run `rook init` to make it anew, empty, if the sessions are gone for good", dir)
	}
	return nil
}

// sweepBeside removes (or, dry, counts into rep) what a gc removes beside
// objects: the temporary files crashes left and the import states no
// import can use again.
func (r *Rook) sweepBeside(rep *cas.GCReport, grace time.Duration, dryRun bool) (err error) {
	// A minute at least, whatever the grace: a write in flight (one not a
	// writer's, such as config.toml's) lasts milliseconds.
	rep.TempFiles, rep.TempBytes, err = r.sweepTemps(r.clock.Now().Add(-max(grace, time.Minute)), dryRun)
	if err != nil {
		return err
	}
	rep.ImportStates, rep.ImportStateBytes, err = r.sweepImportStates(dryRun)
	return err
}

// sweepTemps removes (or, dry, counts) the temporary files of durable
// writes that a crash left between their create and their rename: the
// durable-write helper's ".NAME<digits>" (renameio; the in-memory file
// system's ".NAME.tmp<n>") in the directories rook writes whole files
// into (in the home, FORMAT's and rewind-opened.json's only; in index/,
// the rebuild marker's only), last written before cutoff. Nothing else removes them; readers
// pass over them (storage.md, Home layout).
func (r *Rook) sweepTemps(cutoff time.Time, dryRun bool) (n int, bytes int64, err error) {
	indexDir := filepath.Join(r.home, cas.IndexDir)
	dirs := []string{r.home, filepath.Join(r.home, cas.EventsDir), filepath.Join(r.home, cas.DictDir),
		filepath.Join(r.home, RefsDir, "checkpoints"), inbox.Dir(r.home), indexDir,
		// A writer killed while it copied a torn tail aside (cas, the
		// event logs and the inbox spool each copy theirs here through
		// the durable-write helper) leaves the copy's temporary file.
		filepath.Join(r.home, cas.TornDir)}
	for _, dir := range dirs {
		ents, err := r.fs.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return n, bytes, err
		}
		for _, d := range ents {
			if !d.Type().IsRegular() || !isDurableWriteTemp(d.Name()) {
				continue
			}
			// The home may hold the user's own files (a store made in a
			// directory that was not empty): the only file rook writes
			// whole there are FORMAT and rewind-opened.json, so only their
			// temporary files are rook's.
			if t := durableWriteTarget(d.Name()); dir == r.home && t != cas.MarkerFile && t != rewindOpenedFile {
				continue
			} else if dir == indexDir && t != cas.RebuildMarker {
				// The index and its .tmp are the index package's.
				continue
			}
			fi, err := d.Info()
			if err != nil || !fi.ModTime().Before(cutoff) {
				continue
			}
			if !dryRun {
				if err := r.fs.Remove(filepath.Join(dir, d.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return n, bytes, fmt.Errorf("remove a temporary file a crash left: %w", err)
				}
			}
			n++
			bytes += fi.Size()
		}
	}
	return n, bytes, nil
}

// isDurableWriteTemp says whether name is a durable write's temporary
// file: "." then the target's name then digits (renameio), or then
// ".tmp" and digits (vfs.MemFS).
func isDurableWriteTemp(name string) bool {
	if len(name) < 3 || name[0] != '.' {
		return false
	}
	rest := strings.TrimRight(name, "0123456789")
	if len(rest) == len(name) || len(rest) < 2 {
		return false
	}
	rest = strings.TrimSuffix(rest, ".tmp")
	return len(rest) >= 2 // a name of its own before the digits
}

// durableWriteTarget is the name of the file a durable write's temporary
// file name (see isDurableWriteTemp) was for.
func durableWriteTarget(name string) string {
	return strings.TrimSuffix(strings.TrimRight(name, "0123456789"), ".tmp")[1:]
}
