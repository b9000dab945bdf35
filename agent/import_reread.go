package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rookhq/rook/cas"
)

// RereadReport says what Reread put back.
type RereadReport struct {
	Format   string         `json:"format"`
	Files    int            `json:"files"`            // transcript files read
	Objects  int            `json:"objects"`          // objects the files make
	Restored int            `json:"restored"`         // of those, stored copies that did not read (or were missing) and now do
	Failed   []ImportedFile `json:"failed,omitempty"` // files that could not be read
	// Sessions are this store's sessions imported from the files read
	// (and not failed): what is still unreadable of theirs after is of
	// bytes their files no longer hold; what is unreadable of any other
	// session's is not the files read's to repair.
	Sessions []string `json:"sessions"`
}

// Reread repairs damaged objects from the transcripts they were imported
// from: objects are content-addressed, so the bytes a file's import put
// are the bytes that repair them. Each chosen file is imported from its
// start, in the steps its imports took it in (rereadStops), into a
// scratch store beside the real one (not into the real one:
// its sessions are not written, and an import that reads a session whose
// objects are damaged stops there); then every object the scratch store
// holds whose id is in this store but does not read back is put again,
// which rewrites it (cas Put repairs an unreadable copy), and so is every
// one this store's index lacks that something of this store names (a
// session's event, a ref, or a snapshot or imported line one of those
// names): a reindex that skipped a damaged region dropped it, and it is
// this store's, missing. No event, session, metadata or import state of
// this store is written, and an object nothing here names is not added.
//
// What it cannot repair stays damaged: an object of bytes the file no
// longer holds (it changed since, not only grew), and one an import
// stored at where it stopped reading (a run of notes, a line with no
// newline yet) that was not recorded (by a rook before Source.Stops;
// by an import cut short before its metadata, until the next import of
// the file records it). `rook store verify` after says what is left.
//
// scratchMade, if not nil, is told the scratch directory as soon as it is
// made, empty, and its done is called once the directory is removed: the
// CLI removes it should rook be interrupted in between (a Ctrl-C ends
// rook at once, no defer run), as the scratch store holds as much as the
// files make.
func (r *Rook) Reread(opts ImportOptions, scratchMade func(dir string) (done func())) (rep RereadReport, err error) {
	rep.Format = opts.Format
	if opts.Format != FormatClaudeCode && opts.Format != FormatCodex {
		return rep, fmt.Errorf("unknown transcript format %q: use %s or %s", opts.Format, FormatClaudeCode, FormatCodex)
	}
	// The scratch store goes in the system's temporary directory, not in
	// the store's home: a crash leaves nothing a later rook would read.
	tmp, err := os.MkdirTemp("", "rook-reread-")
	if err != nil {
		return rep, fmt.Errorf("make a scratch store to read the transcripts into: %w", err)
	}
	done := func() {}
	if scratchMade != nil {
		done = scratchMade(tmp)
	}
	defer func() {
		os.RemoveAll(tmp)
		done()
	}()
	home := filepath.Join(tmp, "store")
	if _, err := cas.Init(r.fs, r.clock, home); err != nil {
		return rep, fmt.Errorf("make a scratch store in %s: %w", home, err)
	}
	scratch, err := Open(home, Options{FS: r.fs, Clock: r.clock, Writable: true, LockWait: time.Second})
	if err != nil {
		return rep, fmt.Errorf("open the scratch store %s: %w", home, err)
	}
	defer func() {
		if cerr := scratch.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("close the scratch store %s: %w", home, cerr)
		}
	}()
	opts.Retention = nil
	// The files are read in the steps their imports read them: each as
	// far as the first import of it that stopped reading stopped, and
	// on to the next stop, and so on, then whole.
	stops, sessions, err := r.rereadStops(scratch, opts)
	if err != nil {
		return rep, err
	}
	// A file that fails at any step is reported, once, as it failed last.
	failed := map[string]ImportedFile{}
	var order []string
	note := func(irep ImportReport) {
		for _, f := range irep.Files {
			if f.Status != ImportFailed {
				continue
			}
			if _, seen := failed[f.Path]; !seen {
				order = append(order, f.Path)
			}
			if at, ok := scratch.readTo[f.Path]; ok {
				f.Note = fmt.Sprintf("read as far as byte %d, where an import of it stopped: %s", at, f.Note)
			}
			failed[f.Path] = f
		}
	}
	for k := 0; ; k++ {
		step := ImportOptions{Format: opts.Format, MinCut: opts.MinCut, ChunkBytes: opts.ChunkBytes, Stop: opts.Stop}
		scratch.readTo = map[string]int64{}
		for path, at := range stops {
			if k < len(at) {
				step.Paths = append(step.Paths, path)
				scratch.readTo[path] = at[k]
			}
		}
		if len(step.Paths) == 0 {
			break
		}
		slices.Sort(step.Paths)
		irep, err := scratch.Import(step)
		if err != nil {
			return rep, err
		}
		note(irep)
	}
	scratch.readTo = nil
	irep, err := scratch.Import(opts)
	if err != nil {
		return rep, err
	}
	note(irep)
	rep.Files = len(irep.Files)
	for _, p := range order {
		rep.Failed = append(rep.Failed, failed[p])
	}
	rep.Sessions = []string{}
	for path, ids := range sessions {
		if _, bad := failed[path]; !bad {
			rep.Sessions = append(rep.Sessions, ids...)
		}
	}
	slices.Sort(rep.Sessions)
	objs, err := scratch.Store.List(0, 0)
	if err != nil {
		return rep, fmt.Errorf("list the scratch store's objects: %w", err)
	}
	rep.Objects = len(objs)
	put := func(o cas.ObjectInfo) error {
		data, gerr := scratch.Store.Get(o.ID)
		if gerr != nil {
			return fmt.Errorf("read object %s back from the scratch store: %w", cas.Short(o.ID), gerr)
		}
		res, perr := r.Store.Put(o.Kind, data)
		if perr != nil {
			return fmt.Errorf("put object %s back: %w", cas.Short(o.ID), perr)
		}
		if res.Repaired || !res.Existed {
			rep.Restored++
		}
		return nil
	}
	var absent []cas.ObjectInfo // not in this store's index
	for _, o := range objs {
		if _, gerr := r.Store.Get(o.ID); gerr == nil {
			continue
		} else if nf := (*cas.NotFoundError)(nil); errors.As(gerr, &nf) {
			absent = append(absent, o)
			continue
		} else if ce := (*cas.CorruptError)(nil); !errors.As(gerr, &ce) {
			return rep, gerr // the store itself fails (its index): not for a put to mend
		}
		if err := put(o); err != nil {
			return rep, err
		}
	}
	// An object the index lacks is this store's when something of it
	// names it, and missing. Put back in rounds: a snapshot or imported
	// line put back names more (its files, its cuts) that nothing named
	// while it was missing.
	for len(absent) > 0 {
		refs, err := r.VerifyReferences(nil)
		if err != nil {
			return rep, fmt.Errorf("read this store's sessions for the objects they name: %w", err)
		}
		if refs.namedAt == nil {
			break
		}
		var rest []cas.ObjectInfo
		for _, o := range absent {
			if _, named := refs.namedAt(o.ID); !named {
				rest = append(rest, o) // not this store's: nothing to repair
				continue
			}
			if err := put(o); err != nil {
				return rep, err
			}
		}
		if len(rest) == len(absent) {
			break
		}
		absent = rest
	}
	return rep, r.Store.Sync()
}

// rereadStops are, for each file an import of opts lists that this
// store's sessions were imported from, where the imports that took it in
// stopped reading it, ascending: the session's Source.Stops, then
// Source.Size. Objects are content-addressed: read again stopping at the same
// points, the file makes the objects those imports made. (Stopping where
// no import stopped changes nothing either, as long as it is where one
// of the session's units of lines, an event's object, ends, as each of
// these is: only a stop inside a unit would cut it otherwise.) A session
// imported before rook recorded Source.Stops has only its Size to stop
// at; so has one whose last import was cut short after its lines and
// before its metadata (a crash) until the next import records where
// (where the session's lines end is in their last object, the one that
// would need it; a .zst damaged part way is read again to the same
// damage, and stops there again).
//
// sessions are, by the file's path, the ids of this store's sessions
// imported from the file (a file rewritten since has several).
func (r *Rook) rereadStops(scratch *Rook, opts ImportOptions) (stops map[string][]int64, sessions map[string][]string, err error) {
	files, _, err := scratch.importFiles(opts.Format, scratch.importPaths(opts), &ImportReport{})
	if err != nil {
		return nil, nil, nil // the whole import, after, fails alike and says what is wrong
	}
	known, all, err := r.importedSessions(opts.Format)
	if err != nil {
		return nil, nil, err
	}
	stops, sessions = map[string][]int64{}, map[string][]string{}
	for _, f := range files {
		path := f.path
		m, ok := known[path]
		if !ok && opts.Format == FormatCodex {
			// A rollout imported compressed, now beside its plain twin
			// (or the other way round): one stream, the same bytes.
			if p, zst := strings.CutSuffix(f.path, ".zst"); zst {
				path = p
			} else {
				path = f.path + ".zst"
			}
			m, ok = known[path]
		}
		if !ok {
			continue
		}
		for _, s := range all[path] {
			sessions[f.path] = append(sessions[f.path], s.ID.String())
		}
		at := append(slices.Clone(m.Source.Stops), m.Source.Size)
		at = slices.DeleteFunc(at, func(n int64) bool { return n <= 0 })
		slices.Sort(at)
		if at = slices.Compact(at); len(at) > 0 {
			stops[f.path] = at
		}
	}
	return stops, sessions, nil
}
