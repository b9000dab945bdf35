package cli

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rookhq/rook/agent"
	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/dict"
)

// maxDictSize is the largest dictionary `store train --size` makes.
const maxDictSize = 4 << 20

// StoreTrainCmd is `rook store train`.
type StoreTrainCmd struct {
	Kind    string `help:"Train only this kind (default: every kind)."`
	Samples int    `help:"Objects to train each dictionary from." default:"512"`
	Size    int    `help:"Largest dictionary in bytes, its tables included (256 to 4 MiB)." default:"16384"`
	Min     int    `name:"min-objects" help:"Kinds with fewer objects get no dictionary." default:"32"`
	DryRun  bool   `name:"dry-run" help:"Train and measure; keep nothing."`
}

func (c *StoreTrainCmd) Run(e *Env) error {
	opts := cas.TrainOptions{Samples: c.Samples, Size: c.Size, MinObjects: c.Min, DryRun: c.DryRun}
	if c.Samples < 1 || c.Size < 256 || c.Min < 1 {
		return usageErr("--samples and --min-objects must be 1 or more, --size 256 or more")
	}
	// The trainer allocates the size given up front: a mistyped size ran
	// the machine out of memory. zstd's own trainer makes 110 KiB.
	if c.Size > maxDictSize {
		return usageErr("--size %d is more than a dictionary may be: at most %d (%s)", c.Size, maxDictSize, formatBytes(maxDictSize))
	}
	if c.Kind != "" {
		k, err := cas.ParseKind(c.Kind)
		if err != nil {
			return usageErr("--kind: %v", err)
		}
		opts.Kinds = []cas.Kind{k}
	}
	// A dry run keeps nothing: it reads as any reader does, so a writer
	// at work (an import) does not make it fail; its estimate is of the
	// store as it read it.
	r, err := e.openRook(!c.DryRun)
	if err != nil {
		return err
	}
	p := newProgress(e.Stderr, "train")
	p.unit = "kinds"
	opts.Progress = p.update
	res, err := r.Store.Train(opts)
	p.done()
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if e.JSON {
		if res == nil {
			res = []cas.TrainResult{}
		}
		return e.printJSON(map[string]any{"dry_run": c.DryRun, "kinds": res})
	}
	kept, current, unreadable := 0, 0, 0
	for _, t := range res {
		if t.Unreadable > 0 {
			unreadable++
		}
		// A retrain's saving is over the kind's current dictionary.
		over := ""
		if t.Against != 0 {
			over = fmt.Sprintf(" over dictionary %d", t.Against)
		}
		switch {
		case t.Kept:
			kept++
			fmt.Fprintf(e.Stdout, "trained %s: dictionary %d, %s, from %d of %d objects (saves about %s%s)\n", t.KindName, t.DictID, formatBytes(int64(t.DictBytes)), t.Samples, t.Objects, formatBytes(t.Gain), over)
		case t.WouldKeep:
			kept++
			fmt.Fprintf(e.Stdout, "[dry run] would train %s: a %s dictionary from %d of %d objects (saves about %s%s)\n", t.KindName, formatBytes(int64(t.DictBytes)), t.Samples, t.Objects, formatBytes(t.Gain), over)
		case t.Against != 0:
			// The kind keeps the dictionary its new records use, whatever
			// stopped a new one: too few objects, or a training that
			// failed, said "no dictionary", though stat named it.
			if t.DictBytes > 0 {
				current++ // measured, and no better
			}
			fmt.Fprintf(e.Stdout, "%s: keeps dictionary %d: %s\n", t.KindName, t.Against, t.Reason)
		case c.Kind != "" || t.Objects > 0:
			fmt.Fprintf(e.Stdout, "%s: no dictionary: %s\n", t.KindName, t.Reason)
		}
	}
	if kept > 0 && c.DryRun {
		fmt.Fprintln(e.Stdout, "[dry run] nothing kept: run without --dry-run to train (taken without the writer lock: a writer at work meanwhile can change the figures)")
	} else if kept > 0 {
		fmt.Fprintln(e.Stdout, "new objects use the new dictionaries; existing ones keep theirs until `rook store repack`")
	} else if current > 0 {
		fmt.Fprintln(e.Stdout, "no dictionary trained: none would be enough better than the current ones to pay for itself")
	} else if c.Kind == "" && unreadable > 0 {
		// Not "needs enough similar objects": the objects are there, and
		// what stops them reading is what to fix.
		fmt.Fprintf(e.Stdout, "no dictionary trained: too few objects of %d kind(s) read back to learn from (said above): `rook store verify` lists every object that does not read and how to repair it\n", unreadable)
	} else if c.Kind == "" {
		fmt.Fprintln(e.Stdout, "no dictionary trained: a kind needs enough similar objects for one to pay for itself")
	}
	return nil
}

// StoreGCCmd is `rook store gc`.
type StoreGCCmd struct {
	DryRun bool           `name:"dry-run" help:"Print the plan; change nothing."`
	Grace  *time.Duration `help:"Keep unreachable objects younger than this (default: gc_grace in config.toml, else 10m)." placeholder:"DURATION"`
}

func (c *StoreGCCmd) Run(e *Env) error {
	r, err := e.openRook(!c.DryRun) // a plan needs no writer lock
	if err != nil {
		return err
	}
	grace := c.Grace
	if grace == nil {
		cfg, err := r.Config()
		if err != nil {
			r.Close()
			return err
		}
		g := cfg.Storage.GCGrace.Duration
		grace = &g
	}
	if *grace < 0 {
		r.Close()
		return usageErr("--grace must not be negative")
	}
	m := newProgress(e.Stderr, "gc: marking")
	m.unit = "sessions"
	p := newProgress(e.Stderr, "gc")
	rep, err := r.GC(*grace, c.DryRun, m.update, m.then(p))
	m.done() // when the sweep had nothing to draw
	p.done()
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if e.JSON {
		return e.printJSON(rep)
	}
	// The command that collects what the plan found: the grace it was
	// given, or a plain gc would keep what this one counted (the default
	// grace, 10m, keeps what is newer).
	again := "rook store gc"
	if c.Grace != nil {
		again += " --grace " + c.Grace.String()
	}
	printGC(e, rep, *grace, again)
	return nil
}

func printGC(e *Env, rep cas.GCReport, grace time.Duration, again string) {
	w := e.Stdout
	prefix := ""
	if rep.DryRun {
		prefix = "[dry run] "
	}
	fmt.Fprintf(w, "%sscanned %d objects: %d reachable, %d collectable (%s, %s stored)", prefix, rep.Scanned, rep.Reachable, rep.Collectable,
		formatBytes(rep.CollectableBytes), formatBytes(rep.CollectableStored))
	if rep.TooNew > 0 {
		fmt.Fprintf(w, ", %d kept for being newer than %s", rep.TooNew, grace)
	}
	fmt.Fprintln(w)
	printSwept(w, prefix, rep)
	if rep.DryRun {
		if rep.Collectable > 0 || rep.TempFiles > 0 || rep.ImportStates > 0 {
			fmt.Fprintf(w, "run `%s` to collect them\n", again)
		}
		return
	}
	fmt.Fprintf(w, "rewrote %d segment(s), removed %d; on disk %s → %s\n", rep.SegmentsRewritten, rep.SegmentsRemoved, formatBytes(rep.DiskBefore), formatBytes(rep.DiskAfter))
	printSegmentsLeft(w, "", rep.SegmentsLeft)
	printIndexCompactionFailed(e, rep.IndexCompactionFailed)
	if rep.TooNew > 0 {
		fmt.Fprintln(w, "objects written in the grace period are kept: a capture in flight looks like garbage until the event naming it lands")
	}
}

// printSegmentsLeft says, each line after prefix, which segments a gc or
// repack rewrote and moved to torn/ (damaged, nothing needing them) or
// left in place, and why: only one known to be damaged is called so (one
// kept because the index could not be read is not known to be).
func printSegmentsLeft(w io.Writer, prefix string, left cas.SegmentsLeft) {
	for _, m := range left.MovedDamaged {
		fmt.Fprintf(w, "%smoved damaged segment %s\n", prefix, m)
	}
	for _, k := range left.KeptInPlace {
		if k.Damaged() {
			fmt.Fprintf(w, "%skept damaged segment %s: `rook store verify` lists what it affects\n", prefix, k.Detail)
		} else {
			fmt.Fprintf(w, "%skept segment %s\n", prefix, k.Detail)
		}
	}
}

// printIndexCompactionFailed notes that a gc or repack, done, could not
// compact the index after its commit (cas.GCReport.IndexCompactionFailed):
// not a failure, the old segments are gone; the index file is larger than
// it needs to be until the next compaction.
func printIndexCompactionFailed(e *Env, why string) {
	if why != "" {
		fmt.Fprintf(e.Stderr, "rook: note: %s\n", terminalLine(why))
	}
}

// printSwept says what a gc removed beside objects (a dry run: would
// remove), each line after prefix; nothing when there was nothing.
func printSwept(w io.Writer, prefix string, rep cas.GCReport) {
	what := "removed"
	if rep.DryRun {
		what = "would remove"
	}
	if rep.TempFiles > 0 {
		fmt.Fprintf(w, "%s%s %d temporary file(s) of writes a crash cut short (%s)\n", prefix, what, rep.TempFiles, formatBytes(rep.TempBytes))
	}
	if rep.ImportStates > 0 {
		fmt.Fprintf(w, "%s%s %d import state(s) of transcripts gone, rewritten or deleted (%s)\n", prefix, what, rep.ImportStates, formatBytes(rep.ImportStateBytes))
	}
	for _, d := range rep.DictionariesMayHold {
		kind := d.Kind
		if kind == "" {
			kind = "damaged"
		}
		fmt.Fprintf(w, "%s%s dictionary %d (%s) was trained while objects of its kind that gc %s were in the store: it may hold pieces of them (a secret among them); `rook store repack --drop-dictionary %d` deletes it (then `rook store train` trains anew from what is kept)\n", prefix, kind, d.ID, d.File, what, d.ID)
	}
	kept := "kept"
	if rep.DryRun {
		kept = "keeps"
	}
	for _, p := range rep.KeptLogsWithoutMeta {
		id := strings.TrimSuffix(filepath.Base(p), ".log")
		fmt.Fprintf(w, "%s%s the objects named by %s, an event log with no .meta beside it (its events may have been acknowledged): put its .meta back from a backup to make it a session again, or `rook session rm %s` removes it and lets gc collect them\n", prefix, kept, terminalLine(p), id)
	}
}

// StoreRepackCmd is `rook store repack`.
type StoreRepackCmd struct {
	DropDictionary []uint32 `name:"drop-dictionary" help:"Delete these dictionaries (ids, as gc and store stat name them): every record naming one is rewritten without it first; its id is never given out again." placeholder:"ID"`
}

func (c *StoreRepackCmd) Run(e *Env) error {
	var rep cas.RepackReport
	var drop cas.DropReport
	err := e.write(func(r *agent.Rook) (err error) {
		p := newProgress(e.Stderr, "repack")
		if len(c.DropDictionary) > 0 {
			drop, err = r.Store.DropDictionaries(c.DropDictionary, p.update)
			rep = drop.RepackReport
		} else {
			rep, err = r.Repack(p.update)
		}
		p.done()
		return err
	})
	if bad := (*cas.BadDropError)(nil); errors.As(err, &bad) {
		return usageErr("%v", bad)
	}
	// A drop refused for some ids (records in segments the repack kept
	// still name them): the report is printed as on success, so that
	// what the refusal points at (the kept segments) is there, then the
	// refusal.
	var refused error
	if re := (*cas.DropRefusedError)(nil); errors.As(err, &re) {
		refused, err = err, nil
	}
	if err != nil {
		// Those deleted before a failure are said, then the failure.
		for _, id := range drop.Dropped {
			fmt.Fprintf(e.Stdout, "dropped dictionary %d (%s deleted)\n", id, filepath.Join(e.Home, cas.DictDir, dict.FileName(id)))
		}
		return err
	}
	if len(c.DropDictionary) > 0 && !drop.Repacked {
		// Every id dropped before: nothing ran, and there is no size to say.
		if e.JSON {
			return unprinted(e.printJSON(struct {
				Dropped        []uint32 `json:"dropped_dictionaries"`
				AlreadyDropped []uint32 `json:"already_dropped"`
			}{[]uint32{}, drop.AlreadyDropped}))
		}
		for _, id := range drop.AlreadyDropped {
			fmt.Fprintf(e.Stdout, "dictionary %d was already dropped: nothing to do\n", id)
		}
		return nil
	}
	if e.JSON {
		var out any = rep
		if len(c.DropDictionary) > 0 {
			if drop.Dropped == nil {
				drop.Dropped = []uint32{}
			}
			drop.RepackReport = rep
			out = drop
		}
		// A failed write is Main's to tell, after the verdict below.
		if err := unprinted(e.printJSON(out)); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(e.Stdout, "repacked %d objects from %d segment(s): stored %s → %s, on disk %s → %s\n", rep.Objects, rep.SegmentsRewritten,
			formatBytes(rep.StoredBefore), formatBytes(rep.StoredAfter), formatBytes(rep.DiskBefore), formatBytes(rep.DiskAfter))
		printSegmentsLeft(e.Stdout, "", rep.SegmentsLeft)
		printIndexCompactionFailed(e, rep.IndexCompactionFailed)
		for _, k := range rep.KeptNeedsDict {
			fmt.Fprintf(e.Stdout, "kept segment %s: its records need dictionary %d, which cannot be loaded (%s): put %s back from a backup%s\n", k.Segment, k.Dict, k.Problem, k.File, reindexFirst(k.ReindexFirst))
		}
		for _, id := range drop.Dropped {
			fmt.Fprintf(e.Stdout, "dropped dictionary %d (%s deleted): no record names it; `rook store train` may train anew from what the store keeps\n", id, filepath.Join(e.Home, cas.DictDir, dict.FileName(id)))
		}
		for _, id := range drop.AlreadyDropped {
			fmt.Fprintf(e.Stdout, "dictionary %d was already dropped: nothing to do\n", id)
		}
		for _, r := range drop.Refused {
			fmt.Fprintf(e.Stdout, "kept dictionary %d: records in %s still name it\n", r.ID, strings.Join(r.Segments, ", "))
		}
	}
	// Exit 1 with --json too: a script must not read damage, or objects
	// that cannot be read, as success.
	var msgs []string
	if len(rep.Kept) > 0 {
		msgs = append(msgs, fmt.Sprintf("%d damaged segment(s) kept in place", len(rep.Kept)))
	}
	if n := len(rep.KeptInPlace) - len(rep.Kept); n > 0 {
		msgs = append(msgs, fmt.Sprintf("%d segment(s) kept in place, not known to be damaged: the index could not be read to check that nothing names them any more; run `rook store verify`, then `rook store repack` again", n))
	}
	if len(rep.KeptNeedsDict) > 0 {
		// Every dictionary, once: the segments may wait for several, and
		// naming one had the user put it back only to meet the next.
		segs, dicts := map[string]bool{}, map[uint32]cas.KeptSegment{}
		var ids []uint32
		reindex := false
		for _, k := range rep.KeptNeedsDict {
			segs[k.Segment] = true
			reindex = reindex || k.ReindexFirst
			if _, ok := dicts[k.Dict]; !ok {
				dicts[k.Dict] = k
				ids = append(ids, k.Dict)
			}
		}
		slices.Sort(ids)
		var problems, files []string
		for _, id := range ids {
			problems, files = append(problems, dicts[id].Problem), append(files, dicts[id].File)
		}
		what := "a dictionary that cannot be loaded"
		if len(dicts) > 1 {
			what = fmt.Sprintf("%d dictionaries that cannot be loaded", len(dicts))
		}
		then := " and run `rook store repack` again"
		if reindex {
			then = reindexFirst(true) + ", then `rook store repack` again"
		}
		msgs = append(msgs, fmt.Sprintf("%d segment(s) kept in place: their records need %s (%s): put %s back from a backup%s", len(segs), what, strings.Join(problems, "; "), strings.Join(files, " and "), then))
	}
	if refused != nil {
		msgs = append([]string{refused.Error()}, msgs...)
	}
	if len(msgs) > 0 {
		return &exitError{code: ExitFailure, msg: strings.Join(msgs, "; ")}
	}
	return nil
}

// reindexFirst is what follows putting a dictionary back for a segment
// kept for it in which the index names no object (cas
// KeptSegment.ReindexFirst): a reindex, before any gc or repack.
func reindexFirst(yes bool) string {
	if !yes {
		return ""
	}
	return ", then run `rook store reindex` (the index names no object in its records: rebuilt while the dictionary could not be loaded, it could not name them; a gc or repack before the reindex would delete them)"
}
