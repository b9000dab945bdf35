package cas

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/rookhq/rook/dict"
	"github.com/rookhq/rook/internal/units"
	"github.com/rookhq/rook/internal/vfs"
)

// GCOptions steer a collection.
type GCOptions struct {
	// Live reports whether an object is reachable (nil: nothing is).
	Live func(Key) bool
	// Grace keeps unreachable objects written less than this long ago: a
	// capture in flight looks like garbage until its event lands.
	Grace time.Duration
	// DryRun plans and reports without changing anything.
	DryRun   bool
	Progress func(done, total int64)
	// NothingNamedMissing: the caller checked that every object the
	// sessions and refs name is in the store (agent.Rook.GC: its mark
	// refuses otherwise). Only then may a segment whose records wait for
	// a dictionary that cannot be loaded, the index naming no object in
	// it, move to torn/ as dead space (deadSegment): an index rebuilt
	// without the dictionary cannot name such records' objects, so a
	// missing named object may be there. Without it such a segment is
	// kept, waiting for the dictionary (KeptNeedsDict).
	NothingNamedMissing bool
}

// GCReport says what a collection found and did.
type GCReport struct {
	DryRun            bool  `json:"dry_run"`
	Scanned           int64 `json:"scanned"`
	Reachable         int64 `json:"reachable"`
	Collectable       int64 `json:"collectable"`
	CollectableBytes  int64 `json:"collectable_bytes"`  // logical
	CollectableStored int64 `json:"collectable_stored"` // their share of segment bytes
	TooNew            int64 `json:"too_new"`
	// TooNewStored is the too-new objects' share of segment bytes: what a
	// gc past the grace frees if nothing names them by then (maintain
	// counts it toward the budget rather than delete more sessions).
	TooNewStored      int64 `json:"too_new_stored"`
	SegmentsRewritten int   `json:"segments_rewritten"`
	SegmentsRemoved   int   `json:"segments_removed"`
	DiskBefore        int64 `json:"disk_before"`
	DiskAfter         int64 `json:"disk_after"`
	SegmentsLeft
	// IndexCompactionFailed: the index compaction after the commit failed
	// (a full disk: it writes a copy of the index beside it), what failed
	// and what it costs: a larger index file until the next compaction.
	// The gc is done all the same, the old segments removed ("": the index
	// was compacted, or needed not be).
	IndexCompactionFailed string `json:"index_compaction_failed,omitempty"`
	// TempFiles and TempBytes: the temporary files of durable writes a
	// crash left, removed (a dry run: to remove). The caller that knows
	// every part of the home fills them (agent.Rook.GC).
	TempFiles int   `json:"temp_files"`
	TempBytes int64 `json:"temp_bytes"`
	// ImportStates and ImportStateBytes: the import states (a cache beside
	// the store) no import can use again, removed (a dry run: to remove).
	// agent.Rook.GC fills them too.
	ImportStates     int   `json:"import_states"`
	ImportStateBytes int64 `json:"import_state_bytes"`
	// KeptLogsWithoutMeta: the event logs (paths) with no .meta beside
	// them whose events' objects the mark kept, as a session's are (a
	// .meta lost: the log is kept, its events may have been acknowledged).
	// agent.Rook.GC fills it.
	KeptLogsWithoutMeta []string `json:"kept_logs_without_meta,omitempty"`
	// DictionariesMayHold: the dictionaries that may hold pieces of the
	// objects collected (a dry run: to collect): each of their kind
	// trained once one of them was in the store (its created time at or
	// after the object's record's), and any damaged one (its kind and time
	// unknown). `rook store repack --drop-dictionary ID` removes one.
	DictionariesMayHold []DictionaryMayHold `json:"dictionaries_may_hold,omitempty"`
}

// Collect removes unreachable objects. It plans first: every index entry is
// live (opts.Live), too new (written within opts.Grace), or collectable. A
// dry run stops there. A real run rewrites every segment that holds a
// collectable object (or nothing live at all, or records no entry names
// for over a quarter of it: unnamedOverAQuarter): the live objects are packed
// into new blocks at the end of the store, the new records are synced, the
// index is switched to them in one commit, and only then are the old
// segments deleted. A crash at any step leaves a store that opens with
// every live object readable (docs/storage.md, "Garbage collection").
func (s *Store) Collect(opts GCOptions) (GCReport, error) {
	rep := GCReport{DryRun: opts.DryRun}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !opts.DryRun || s.opts.Writable {
		// A dry run needs no lock: a reader plans from the last commit.
		if err := s.writable(); err != nil {
			return rep, err
		}
		if err := s.syncLocked(); err != nil {
			return rep, err
		}
	}
	disk, err := s.diskUsage()
	if err != nil {
		return rep, err
	}
	rep.DiskBefore, rep.DiskAfter = disk.Total, disk.Total
	cutoff := s.opts.Clock.Now().Add(-opts.Grace).Unix()
	dead := map[Key]bool{}
	// deadSince: per kind, the oldest collected object's created time:
	// a dictionary of the kind trained since may hold pieces of it.
	deadSince := map[Kind]int64{}
	hdrs := map[blockKey]recordHeader{}
	liveIn := map[uint32]int{}
	deadIn := map[uint32]int{}
	// What the entries take of each segment (unnamedOverAQuarter): their
	// stored bytes, and the records holding them.
	namedIn := map[uint32]int64{}
	records := map[blockKey]struct{}{}
	// An entry that does not decode, or a record header that does not
	// read, stops the walk with an error of its own: the walk returns nil
	// when told to stop, and assigned to err would have overwritten it,
	// leaving a plan of the entries before it.
	var bad, unreadHeader error
	err = s.tree.Snapshot().Ascend(Key{}, func(id Key, v []byte) bool {
		rep.Scanned++
		e, derr := decodeEntry(v)
		if derr != nil {
			bad = &CorruptError{ID: id, Inline: true, Reason: derr.Error()}
			return false
		}
		namedIn[e.Loc.Segment] += e.Stored
		records[blockKey{e.Loc.Segment, e.Loc.Offset}] = struct{}{}
		if opts.Live != nil && opts.Live(id) {
			rep.Reachable++
			liveIn[e.Loc.Segment]++
			return true
		}
		// A header that could not be read stops the plan as an entry that
		// does not decode does: the object's age is unknown, and one
		// written within the grace must never be planned collectable.
		created, herr := s.createdOf(id, e.Loc, hdrs)
		if herr != nil {
			unreadHeader = herr
			return false
		}
		switch {
		case created > cutoff:
			rep.TooNew++
			rep.TooNewStored += e.Stored
			liveIn[e.Loc.Segment]++
		default:
			rep.Collectable++
			rep.CollectableBytes += e.Size
			rep.CollectableStored += e.Stored
			dead[id] = true
			deadIn[e.Loc.Segment]++
			if since, ok := deadSince[e.Kind]; !ok || created < since {
				deadSince[e.Kind] = created
			}
		}
		return true
	})
	if err == nil && unreadHeader != nil {
		return rep, fmt.Errorf("plan gc: %w: nothing collected (when the object was written is unknown, and one written within the grace is kept); a read error, not damage: run gc again, and if it fails the same way, `rook store verify` checks the segment", unreadHeader)
	}
	if err == nil {
		err = bad
	}
	if err != nil {
		return rep, fmt.Errorf("plan gc: %w: nothing collected", s.indexErr(err))
	}
	rep.DictionariesMayHold = s.dictionariesMayHold(deadSince)
	if opts.DryRun {
		return rep, nil
	}
	segs, err := s.listSegments()
	if err != nil {
		return rep, err
	}
	// Records no entry names (orphans: the copies a gc or repack that
	// failed or was killed wrote before its index commit, superseded
	// copies) are dropped by the rewrite of their segment. One holding
	// something live and nothing collectable is rewritten for them once
	// they are over a quarter of it (unnamedOverAQuarter): otherwise
	// the copies a failed gc appended to the active segment stayed for
	// good, verify counting them as orphans after every gc.
	recsIn := map[uint32]int{}
	for k := range records {
		recsIn[k.seg]++
	}
	targets, orphaned := map[uint32]bool{}, map[uint32]bool{}
	for _, n := range segs {
		orphaned[n] = s.unnamedOverAQuarter(n, namedIn[n], recsIn[n])
		if deadIn[n] > 0 || liveIn[n] == 0 || orphaned[n] {
			targets[n] = true
		}
	}
	if a := s.active; a != nil && liveIn[a.number] > 0 && deadIn[a.number] == 0 && !orphaned[a.number] {
		delete(targets, a.number) // nothing to gain from rewriting it
	}
	if len(targets) == 0 {
		return rep, nil
	}
	st, err := s.rewriteLocked(targets, func(id Key, _ entry) bool { return !dead[id] }, opts.NothingNamedMissing, opts.Progress)
	rep.SegmentsRewritten, rep.SegmentsRemoved, rep.SegmentsLeft = st.rewritten, st.removed, st.segmentsLeft()
	rep.IndexCompactionFailed = st.indexCompactionFailed
	if err != nil {
		return rep, err
	}
	if disk, err := s.diskUsage(); err == nil {
		rep.DiskAfter = disk.Total
	}
	return rep, nil
}

// unnamedOverAQuarter says whether a gc gains enough from rewriting segment
// n for the bytes in it no index entry names: more than a quarter of its
// records' bytes (or of a full segment's, SegmentSize, for one grown past
// it) are not the records the entries locate in it (named: their stored
// bytes; records: how many records they are in, each with its header). It is
// close to what is named (stored bytes are rounded up; a block's member
// table, a few bytes an object, is not counted), so a segment whose records
// are all named stays far from the quarter, but for blocks of objects of a
// byte or two. Only the records up to the watermark count: those past it
// (a Barrier's, not committed yet) are acknowledged writes the index may not
// name yet, never orphans. Collect commits first (the counters in memory,
// the watermark among them, are then the committed ones), so none are.
func (s *Store) unnamedOverAQuarter(n uint32, named int64, records int) bool {
	if n > s.ctr.WMSegment {
		return false
	}
	var size int64
	if s.active != nil && s.active.number == n {
		size = s.active.size
	} else {
		fi, err := s.fs.Stat(s.segPath(n))
		if err != nil {
			return false // the rewrite's to report, if it comes to one
		}
		size = fi.Size()
	}
	if n == s.ctr.WMSegment {
		size = min(size, s.ctr.WMOffset)
	}
	total := size - segHeaderSize
	unnamed := total - named - int64(records)*recHeaderSize
	return total > 0 && unnamed > min(total, s.opts.SegmentSize)/4
}

// RepackReport says what a repack did.
type RepackReport struct {
	SegmentsRewritten int   `json:"segments_rewritten"`
	SegmentsRemoved   int   `json:"segments_removed"`
	Objects           int64 `json:"objects"`
	StoredBefore      int64 `json:"stored_before"`
	StoredAfter       int64 `json:"stored_after"`
	DiskBefore        int64 `json:"disk_before"`
	DiskAfter         int64 `json:"disk_after"`
	SegmentsLeft
	// IndexCompactionFailed: as GCReport's, the repack done all the same.
	IndexCompactionFailed string `json:"index_compaction_failed,omitempty"`
	// KeptNeedsDict: segments kept, undamaged, because records in them
	// need a dictionary that cannot be loaded (its file is missing or
	// damaged); what they hold reads again once the file is put back. A
	// segment is listed once per dictionary it waits for, in id order.
	KeptNeedsDict []KeptSegment `json:"kept_needs_dictionary,omitempty"`
}

// Why a gc or repack left a segment it rewrote in place (KeptInPlace).
const (
	// KeptDamaged: damage in it (not a missing dictionary) that an
	// index entry still points into, or that holds the only copy of an
	// object that reads, or that could not be moved to torn/.
	KeptDamaged = "damaged"
	// KeptIndexNamesMissing: the index names objects in it that are not
	// among its records (cut short at a record boundary, or replaced).
	KeptIndexNamesMissing = "index_names_missing"
	// KeptIndexUnreadable: the index could not be read to check that
	// nothing names it any more. Nothing is known to be wrong with it.
	KeptIndexUnreadable = "index_unreadable"
)

// SegmentsLeft says which of the segments a gc or repack rewrote it did
// not delete (GCReport, RepackReport).
type SegmentsLeft struct {
	// MovedDamaged: damaged segments no index entry pointed into any
	// more, moved from segments/ to torn/.
	MovedDamaged []string `json:"moved_damaged,omitempty"`
	// Kept: segments left in place that are known to be damaged: damaged
	// ones an entry still points into, and ones the index names objects
	// in that they do not hold (cut short). Not those kept because the
	// index could not be read, which are not known to be damaged: every
	// segment left in place is in KeptInPlace, with why.
	Kept        []string      `json:"kept_damaged,omitempty"`
	KeptInPlace []KeptInPlace `json:"kept,omitempty"`
}

// KeptInPlace is a segment a gc or repack rewrote and left in place.
type KeptInPlace struct {
	Segment string `json:"segment"`
	Reason  string `json:"reason"` // KeptDamaged, KeptIndexNamesMissing or KeptIndexUnreadable
	Detail  string `json:"detail"` // the segment, what is known of it and what to do
}

// Damaged reports whether the segment is known to be damaged.
func (k KeptInPlace) Damaged() bool { return k.Reason != KeptIndexUnreadable }

// KeptSegment is a segment a repack left in place, and the dictionary its
// records wait for.
type KeptSegment struct {
	Segment string `json:"segment"`
	Dict    uint32 `json:"dictionary"`
	File    string `json:"file"`    // the dictionary file to put back
	Problem string `json:"problem"` // why it cannot be loaded
	// ReindexFirst: the index names no object in the segment (rebuilt
	// while the dictionary could not be loaded, it cannot name its
	// records' objects): once the file is back, `rook store reindex`
	// reads them again; a gc or repack before it would find nothing
	// named there and delete the segment.
	ReindexFirst bool `json:"reindex_first,omitempty"`
}

// Repack rewrites every segment: each live object is recompressed with its
// kind's newest dictionary and small objects are packed together again, in
// new segments; the index is switched in one commit; then the old segments
// go. Stale copies (superseded, never acknowledged) are dropped on the way.
// A segment whose records wait for a dictionary that cannot be loaded is
// kept (KeptNeedsDict): RepackWith says when it may move to torn/.
func (s *Store) Repack(progress func(done, total int64)) (RepackReport, error) {
	return s.RepackWith(RepackOptions{Progress: progress})
}

// RepackOptions are a repack's options (RepackWith).
type RepackOptions struct {
	Progress func(done, total int64)
	// NothingNamedMissing: as GCOptions.NothingNamedMissing, the caller
	// checked that every object the sessions and refs name is in the
	// store (agent.Rook.Repack).
	NothingNamedMissing bool
}

// RepackWith is Repack with options.
func (s *Store) RepackWith(opts RepackOptions) (RepackReport, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.repackLockedWith(opts)
}

// repackLocked is Repack, s.mu held.
func (s *Store) repackLocked(progress func(done, total int64)) (RepackReport, error) {
	return s.repackLockedWith(RepackOptions{Progress: progress})
}

// repackLockedWith is RepackWith, s.mu held.
func (s *Store) repackLockedWith(opts RepackOptions) (RepackReport, error) {
	progress := opts.Progress
	var rep RepackReport
	if err := s.writable(); err != nil {
		return rep, err
	}
	if err := s.syncLocked(); err != nil {
		return rep, err
	}
	before, err := s.diskUsage()
	if err != nil {
		return rep, err
	}
	rep.DiskBefore, rep.DiskAfter = before.Total, before.Total
	rep.StoredBefore = s.totalStored()
	segs, err := s.listSegments()
	if err != nil {
		return rep, err
	}
	targets := map[uint32]bool{}
	for _, n := range segs {
		targets[n] = true
	}
	st, err := s.rewriteLocked(targets, func(Key, entry) bool { return true }, opts.NothingNamedMissing, progress)
	rep.SegmentsRewritten, rep.SegmentsRemoved, rep.Objects, rep.KeptNeedsDict = st.rewritten, st.removed, st.moved, st.keptNeedsDict
	rep.SegmentsLeft, rep.IndexCompactionFailed = st.segmentsLeft(), st.indexCompactionFailed
	rep.StoredAfter = s.totalStored()
	if after, derr := s.diskUsage(); derr == nil {
		rep.DiskAfter = after.Total
	}
	return rep, err
}

func (s *Store) totalStored() int64 {
	var n int64
	for _, kc := range s.ctr.Kinds {
		n += kc.Stored
	}
	return n
}

type rewriteStats struct {
	rewritten, removed    int
	moved                 int64
	kept                  []KeptInPlace // damaged segments, and ones the index still names or could not be read for, left in place
	keptNeedsDict         []KeptSegment // undamaged ones left for their dictionary
	movedDamaged          []string      // damaged segments nothing needed, moved to torn/
	indexCompactionFailed string        // the compaction after the commit that failed, and what it costs ("": none did)
}

// keep records a segment left in place.
func (st *rewriteStats) keep(n uint32, reason, detail string) {
	st.kept = append(st.kept, KeptInPlace{Segment: segName(n), Reason: reason, Detail: detail})
}

// segmentsLeft is the segments moved to torn/ or left in place, and, of
// these, the details of those known to be damaged (kept_damaged).
func (st *rewriteStats) segmentsLeft() SegmentsLeft {
	left := SegmentsLeft{MovedDamaged: st.movedDamaged, KeptInPlace: st.kept}
	for _, k := range st.kept {
		if k.Damaged() {
			left.Kept = append(left.Kept, k.Detail)
		}
	}
	return left
}

// rewriteLocked moves the objects keep accepts out of the target segments
// into new blocks, drops the entries of the ones it rejects, commits the
// index, and deletes the targets. A target with damage is rewritten but
// not deleted: what it still holds is reported, never thrown away. Once no
// index entry points into it, it is moved to torn/, as a torn tail is.
func (s *Store) rewriteLocked(targets map[uint32]bool, keep func(Key, entry) bool, nothingNamedMissing bool, progress func(done, total int64)) (rewriteStats, error) {
	var st rewriteStats
	// What a rewrite moves is old and read in bulk, if at all.
	defer func(bulk bool) { s.bulk = bulk }(s.bulk)
	s.bulk = true
	if s.active != nil && targets[s.active.number] && s.active.size <= segHeaderSize {
		// It holds no record: nothing to move out of it, and sealed for a
		// new one it was only replaced by another empty file (each gc
		// after one that left it, each repack after one killed once its
		// segment was made). The moved records go into it.
		delete(targets, s.active.number)
	}
	if len(targets) == 0 {
		return st, nil
	}
	// What to give back should the rewrite fail before its commit.
	start, err := s.rewriteStart()
	if err != nil {
		return st, err
	}
	if s.active != nil && targets[s.active.number] {
		// Seal it: new blocks must land in a segment that is not a target.
		if err := s.startSegment(); err != nil {
			return st, s.giveBack(start, s.fail(err))
		}
	}
	nums := make([]uint32, 0, len(targets))
	for n := range targets {
		nums = append(nums, n)
	}
	sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
	total := s.segmentBytes(nums)
	var done int64
	prog := func(n int64) {
		done += n
		if progress != nil {
			progress(done, total)
		}
	}
	var removable []uint32
	type keptSeg struct {
		n   uint32
		msg string
		// stale: objects it holds a copy of that reads, their entries
		// naming another copy, which may not read.
		stale []Key
		// back: intact records in it wait for a dictionary: its move to
		// torn/ says how to bring them back (wayBack).
		back bool
	}
	var damaged []keptSeg
	// waiting: undamaged segments whose records wait for a dictionary,
	// and the dictionaries (deadSegment decides, once the index is
	// committed, whether anything still needs them).
	type waitingSeg struct {
		keptSeg
		dicts []KeptSegment
	}
	var waiting []waitingSeg
	for _, n := range nums {
		var stale []Key
		damage, _, err := s.scanSegment(n, 0, func(r *scannedRecord) error {
			for i, m := range r.members {
				id := ID(m)
				v, ok, err := s.tree.Get(id)
				if err != nil {
					return s.indexErr(err)
				}
				if !ok {
					continue // an orphan copy
				}
				e, err := decodeEntry(v)
				if err != nil {
					return err
				}
				if e.Loc != (location{Segment: n, Offset: r.off, Member: i}) {
					// A spare copy: if the entry's own copy does not read,
					// this one repairs it (as putting the bytes again
					// does). Dropped with its segment, the object was
					// lost for good.
					if _, queued := s.pending[id]; !queued && keep(id, e) {
						if _, rerr := s.readEntry(id, e, false); rerr != nil {
							old := e
							obj := &pendingObject{id: id, kind: e.Kind, created: int64(r.h.Time), old: &old}
							s.hold(obj, m, false, nil)
							if err := s.stage(obj); err != nil {
								return err
							}
							st.moved++
							continue
						}
					}
					stale = append(stale, id)
					continue // a stale copy: the entry points elsewhere
				}
				if !keep(id, e) {
					s.tree.Delete(id)
					s.ctr.add(e, -1)
					s.dirty = true
					continue
				}
				old := e
				obj := &pendingObject{id: id, kind: e.Kind, created: int64(r.h.Time), old: &old}
				s.hold(obj, m, false, nil)
				if err := s.stage(obj); err != nil {
					return err
				}
				st.moved++
			}
			return nil
		}, prog)
		if err != nil {
			return st, s.giveBack(start, s.fail(err))
		}
		st.rewritten++
		if len(damage) > 0 {
			// A record waiting for its dictionary is not damage: saying
			// "damaged" sent the user looking for bad bytes, not for the
			// dictionary file to put back.
			var bad *Damage
			// Every dictionary the segment waits for, once each: its
			// records may need several (one per kind), and naming the
			// first only had the user put one file back, repack again,
			// and find the next.
			seen := map[uint32]bool{}
			var ks []KeptSegment
			for i, d := range damage {
				if !d.NeedsDict && bad == nil {
					bad = &damage[i]
				}
				if d.NeedsDict && !seen[d.Dict] {
					seen[d.Dict] = true
					ks = append(ks, KeptSegment{Segment: segName(n), Dict: d.Dict, File: filepath.Join(s.home, DictDir, dict.FileName(d.Dict)), Problem: d.DictErr})
				}
			}
			sort.Slice(ks, func(i, j int) bool { return ks[i].Dict < ks[j].Dict })
			if bad != nil {
				damaged = append(damaged, keptSeg{n, fmt.Sprintf("%s (%s%s)", segName(n), bad, waitsFor(ks, "its other records")), stale, len(ks) > 0})
			} else {
				waiting = append(waiting, waitingSeg{keptSeg{n, segName(n), stale, false}, ks})
			}
			continue
		}
		removable = append(removable, n)
	}
	// The switch: new records durable, then the index in one commit,
	// then the index packed so the bytes freed show on disk. Up to the
	// commit, a failure (a full disk) leaves the committed index naming
	// the old segments alone, and what the rewrite wrote is given back;
	// once the commit is under way, it may have reached the disk, and
	// what it names stays.
	if err := s.flushOpenBlocks(); err != nil {
		return st, s.giveBack(start, s.fail(err))
	}
	if s.active != nil && !s.active.synced {
		if err := s.syncActive(); err != nil {
			return st, s.giveBack(start, s.fail(err))
		}
	}
	if err := s.syncLocked(); err != nil {
		return st, err
	}
	// The commit is durable: nothing names the old segments' records any
	// more, and removing them needs no room. The compaction writes a whole
	// new copy of the index beside the old one, and on a nearly full disk
	// it may not fit; failed, it cost the old segments' removal, so that
	// the disk stayed full and every gc or repack after failed the same
	// way. A failed compaction leaves the committed index as it was (as
	// index.Tree.Commit's own compaction, it is no failure of the commit):
	// a larger index file until the next compaction, said in the report.
	tx := s.tree.Stats().TxID
	if err := s.tree.Compact(); err != nil {
		ts := s.tree.Stats()
		if ts.TxID != tx {
			// The packed file is in place, its name not known durable:
			// the next commit syncs the directory first.
			st.indexCompactionFailed = fmt.Sprintf("the index was compacted, but its directory could not be synced (%v): the next commit syncs it; a power cut before then brings back the index file as it was before the compaction, the same entries in a larger file", err)
		} else {
			st.indexCompactionFailed = fmt.Sprintf("the index was not compacted (%v): its file stays at %s, of which %s are nodes of earlier commits, until the next compaction (the next gc or repack, with room on the disk for a copy of it)", err, units.Bytes(ts.FileSize), units.Bytes(max(0, ts.FileSize-int64(ts.LiveBytes))))
		}
	}
	// A damaged segment that no entry points into any more (what read
	// moved; what did not was put again elsewhere, or forgotten by a
	// reindex) holds nothing rook can read, and left in segments/ it made
	// verify fail for good, with no command to end it. Its bytes go to
	// torn/, kept for inspection.
	// A move whose directory sync failed is a move all the same (the
	// file is in torn/): reported so, and its error returned once the
	// rest is done.
	var moveErr error
	// What the committed index still names, by segment: every object a
	// target held was moved or dropped, so an entry naming one now is an
	// object its scan never met (a segment cut short at a record
	// boundary, which reads as whole).
	var used map[uint32]int
	if len(damaged) > 0 || len(removable) > 0 || len(waiting) > 0 {
		used = map[uint32]int{}
		if err := s.tree.Snapshot().Ascend(Key{}, func(_ Key, v []byte) bool {
			if e, err := decodeEntry(v); err == nil {
				used[e.Loc.Segment]++
			} else {
				used = nil // cannot tell: keep them all
				return false
			}
			return true
		}); err != nil {
			used = nil
		}
	}
	for _, w := range waiting {
		// Unless nothing the sessions and refs name is missing, one of
		// the objects missing may be in its records: an index rebuilt
		// without the dictionary cannot name them. It waits for the
		// dictionary (put back, then a reindex reads them again).
		if !nothingNamedMissing || !deadSegment(used, w.n) || s.holdsOnlyCopy(w.stale) {
			for _, k := range w.dicts {
				k.ReindexFirst = deadSegment(used, w.n)
				st.keptNeedsDict = append(st.keptNeedsDict, k)
			}
			continue
		}
		// Its records need a dictionary that cannot be loaded, and no
		// entry names an object in them (put again elsewhere since, as
		// --reread does): dead space, which kept in place never went.
		what := waitsFor(w.dicts, "its records")
		damaged = append(damaged, keptSeg{w.n, fmt.Sprintf("%s (%s)", segName(w.n), strings.TrimPrefix(what, "; ")), w.stale, true})
	}
	if len(damaged) > 0 {
		for _, d := range damaged {
			// Records in it waiting for a dictionary that cannot be
			// loaded hold nothing the index names either (deadSegment).
			// Nor does one with records waiting for a dictionary unless
			// nothing the sessions and refs name is missing (as above).
			if !deadSegment(used, d.n) || (d.back && !nothingNamedMissing) || s.holdsOnlyCopy(d.stale) {
				st.keep(d.n, KeptDamaged, d.msg)
				continue
			}
			aside, err := s.moveToTorn(d.n)
			if aside == "" {
				st.keep(d.n, KeptDamaged, d.msg) // not moved: in place
				continue
			}
			back := ""
			if d.back {
				back = wayBack(aside, s.segPath(d.n))
			}
			st.movedDamaged = append(st.movedDamaged, fmt.Sprintf("%s (no object needs it any more; kept as %s%s)", d.msg, aside, back))
			if err != nil && moveErr == nil {
				moveErr = fmt.Errorf("damaged segment %s moved to %s, but syncing the directories failed: %w", segName(d.n), aside, err)
			}
		}
	}
	// A segment the index still names is kept and reported as a damaged
	// one is: deleted, it went without a word, and what verify then said
	// of its objects had no file left to look at.
	gone := removable[:0]
	for _, n := range removable {
		switch {
		case used == nil:
			st.keep(n, KeptIndexUnreadable, fmt.Sprintf("%s (not known to be damaged: the index could not be read to check that nothing names it any more; run `rook store verify`, then gc or repack again to remove it)", segName(n)))
		case used[n] > 0:
			st.keep(n, KeptIndexNamesMissing, fmt.Sprintf("%s (the index names %d object(s) in it that are not among its records: it was cut short or replaced since; put the whole file back from a backup, or run `rook store reindex` to forget them)", segName(n), used[n]))
		default:
			gone = append(gone, n)
		}
	}
	removable = gone
	for _, n := range removable {
		s.files.forget(n)
		s.blocks.drop(n)
		if err := s.fs.Remove(s.segPath(n)); err != nil {
			return st, fmt.Errorf("remove old segment %s: %w (the index no longer uses it; the next gc removes it)", segName(n), err)
		}
		st.removed++
	}
	if len(removable) > 0 {
		if err := s.fs.SyncDir(filepath.Join(s.home, SegmentsDir)); err != nil {
			return st, err
		}
	}
	return st, moveErr
}

// rewriteState is where a rewrite started: what giveBack returns to.
type rewriteState struct {
	last       uint32 // the highest segment number present: the rewrite's own are above it
	active     uint32 // the active segment (0: none), which the rewrite may append to
	activeSize int64
	ctr        []byte // the counters (encoded), the committed ones
}

// rewriteStart notes where a rewrite starts (s.mu held, nothing pending:
// its caller has synced).
func (s *Store) rewriteStart() (rewriteState, error) {
	segs, err := s.listSegments()
	if err != nil {
		return rewriteState{}, err
	}
	st := rewriteState{ctr: s.ctr.encode()}
	if len(segs) > 0 {
		st.last = segs[len(segs)-1]
	}
	if s.active != nil {
		st.active, st.activeSize = s.active.number, s.active.size
		st.last = max(st.last, s.active.number)
	}
	return st, nil
}

// RewriteFailedError: a gc or repack failed before its index commit (a
// full disk, a write or sync that failed): the index names every object
// where it was, and nothing is collected. What the rewrite had written
// (copies of objects the old segments still hold) was removed again,
// the disk no fuller than it found it; or, if that failed too, is left
// for the next gc or repack to remove (Left).
type RewriteFailedError struct {
	Err error
	// Removed: the new segments it had made, removed. Cut: the segment
	// it had appended to, cut back to its size before the rewrite ("":
	// none). Freed: the bytes they held.
	Removed []string
	Cut     string
	Freed   int64
	// Left: why some of what it wrote could not be removed (nil: all of
	// it was).
	Left error
}

func (e *RewriteFailedError) Error() string {
	var what []string
	if len(e.Removed) > 0 {
		what = append(what, fmt.Sprintf("removed the new segment(s) it had written (%s)", strings.Join(e.Removed, ", ")))
	}
	if e.Cut != "" {
		what = append(what, fmt.Sprintf("cut %s back to its size before it", e.Cut))
	}
	did := ""
	if len(what) > 0 {
		did = "; " + strings.Join(what, " and ")
	}
	if e.Left != nil {
		return fmt.Sprintf("%v: nothing changed (the index names every object where it was)%s; removing the rest of what it wrote failed (%v): the next gc or repack removes it (a gc rewrites a segment for such copies once they are over a quarter of it)", e.Err, did, e.Left)
	}
	return fmt.Sprintf("%v: nothing changed (the index names every object where it was)%s", e.Err, did)
}

func (e *RewriteFailedError) Unwrap() error { return e.Err }

// giveBack undoes a rewrite that failed (err, the store marked failed)
// before its index commit: the segments it made are removed, what it
// appended to the segment that was active is cut off, and the index and
// counters in memory are the committed ones again (reads go on finding
// every object in the old segments). None of it can be anything the
// committed index names: every record the rewrite wrote came after the
// last commit, which it never reached. A crash on the way leaves what
// docs/storage.md says a crashed gc or repack leaves.
func (s *Store) giveBack(start rewriteState, err error) error {
	fe := &RewriteFailedError{Err: err}
	keep := func(e error) {
		if fe.Left == nil {
			fe.Left = e
		}
	}
	s.tree.Discard()
	if c, cerr := decodeCounters(start.ctr); cerr == nil {
		s.ctr = c
	}
	if s.active != nil && s.active.number > start.last {
		s.active.f.Close()
		s.active = nil
	}
	dir := filepath.Join(s.home, SegmentsDir)
	segs, lerr := s.listSegments()
	if lerr != nil {
		keep(lerr)
	}
	for _, n := range segs {
		if n <= start.last {
			continue
		}
		size := int64(0)
		if fi, serr := s.fs.Stat(s.segPath(n)); serr == nil {
			size = fi.Size()
		}
		s.files.forget(n)
		s.blocks.drop(n)
		if rerr := s.fs.Remove(s.segPath(n)); rerr != nil {
			keep(fmt.Errorf("remove %s: %w", segName(n), rerr))
			continue
		}
		fe.Removed = append(fe.Removed, segName(n))
		fe.Freed += size
	}
	if len(fe.Removed) > 0 {
		if serr := s.fs.SyncDir(dir); serr != nil {
			keep(fmt.Errorf("sync %s: %w", dir, serr))
		}
	}
	if start.active != 0 {
		if cut, cerr := s.cutBack(start.active, start.activeSize); cerr != nil {
			keep(cerr)
		} else if cut > 0 {
			fe.Cut, fe.Freed = segName(start.active), fe.Freed+cut
		}
	}
	return fe
}

// cutBack cuts segment n back to size, the end of its last record before
// a rewrite appended to it, and says how many bytes went.
func (s *Store) cutBack(n uint32, size int64) (int64, error) {
	f := vfs.File(nil)
	if s.active != nil && s.active.number == n {
		f = s.active.f
	} else {
		var err error
		if f, err = s.fs.OpenFile(s.segPath(n), os.O_RDWR, 0); err != nil {
			return 0, fmt.Errorf("cut %s back: %w", segName(n), err)
		}
		defer f.Close()
	}
	fi, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("cut %s back: %w", segName(n), err)
	}
	if fi.Size() <= size {
		return 0, nil
	}
	s.blocks.drop(n)
	if err := f.Truncate(size); err != nil {
		return 0, fmt.Errorf("cut %s back: %w", segName(n), err)
	}
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("cut %s back: %w", segName(n), err)
	}
	if s.active != nil && s.active.number == n {
		s.active.size = size
		if _, err := f.Seek(size, 0); err != nil {
			s.active.f.Close()
			s.active = nil
		}
	}
	return fi.Size() - size, nil
}

// waitsFor says, after a segment's name, that what of it (its records)
// needs the dictionaries ks, which cannot be loaded; "" for none.
func waitsFor(ks []KeptSegment, what string) string {
	if len(ks) == 0 {
		return ""
	}
	var ds []string
	for _, d := range ks {
		ds = append(ds, fmt.Sprintf("%d", d.Dict))
	}
	return fmt.Sprintf("; %s need dictionary %s, which cannot be loaded", what, strings.Join(ds, ", "))
}

// wayBack says, in the report of a segment's move to torn/ (aside) whose
// records wait for a dictionary, how to bring them back: the exact move
// to its own name in segments/ (seg), as a reindex reads only segment
// names there (not the name it has in torn/).
func wayBack(aside, seg string) string {
	return fmt.Sprintf("; should the dictionary be found, put it back, then `mv %s %s` and `rook store reindex`", aside, seg)
}

// deadSegment says whether the committed index (used: its entries by
// segment, nil when it could not be read) names no object in segment n:
// a rewritten segment that holds damage, or intact records waiting for a
// dictionary that cannot be loaded, is then dead space (unless it holds
// an object's only readable copy: holdsOnlyCopy), moved to torn/, not
// deleted: should the dictionary be found, the bytes are there (a
// reindex without the old index cannot name such records' objects).
func deadSegment(used map[uint32]int, n uint32) bool {
	return used != nil && used[n] == 0
}

// holdsOnlyCopy says whether a segment holding a copy that reads of each of
// ids (the copies its entries do not name) holds the only one of some: its
// entry's copy does not read (a reindex, which takes in every copy that
// reads, would find the segment's), or cannot be told.
func (s *Store) holdsOnlyCopy(ids []Key) bool {
	for _, id := range ids {
		v, ok, err := s.tree.Get(id)
		if err != nil {
			return true
		}
		if !ok {
			continue // collected since: nothing needs it
		}
		e, err := decodeEntry(v)
		if err != nil {
			return true
		}
		if _, err := s.readEntry(id, e, false); err != nil {
			return true
		}
	}
	return false
}

// moveToTorn moves a whole segment file to torn/ (named as a torn tail
// cut at offset 0 is) and syncs both directories; it returns the new path
// once the file is there, with the error of a sync that failed.
func (s *Store) moveToTorn(n uint32) (string, error) {
	tornDir := filepath.Join(s.home, TornDir)
	if err := s.fs.MkdirAll(tornDir, DirMode); err != nil {
		return "", err
	}
	aside := filepath.Join(tornDir, fmt.Sprintf("%s.0.%d", segName(n), s.opts.Clock.Now().UnixNano()))
	s.files.forget(n)
	s.blocks.drop(n)
	if err := s.fs.Rename(s.segPath(n), aside); err != nil {
		return "", err
	}
	if err := s.fs.SyncDir(tornDir); err != nil {
		return aside, err
	}
	return aside, s.fs.SyncDir(filepath.Join(s.home, SegmentsDir))
}

// stage queues an object for the next block of its kind, as Put does.
func (s *Store) stage(obj *pendingObject) error {
	s.pending[obj.id] = obj
	s.dirty = true
	blockSize, packMax := s.packing()
	if len(obj.data) >= packMax {
		return s.sealBlock(obj.kind, []*pendingObject{obj})
	}
	ob := s.open[obj.kind]
	if ob == nil {
		ob = &openBlock{}
		s.open[obj.kind] = ob
	}
	ob.objs = append(ob.objs, obj)
	ob.raw += len(obj.data)
	if ob.raw >= blockSize || len(ob.objs) == maxBlockObjects {
		delete(s.open, obj.kind)
		return s.sealBlock(obj.kind, ob.objs)
	}
	return nil
}

// createdOf is when an object was written: its record's time. A damaged
// header (headerDamaged) reads as "long ago": the object does not read,
// and unreachable it is garbage either way. A header whose read failed
// (EIO, EMFILE) is an error: taken as "long ago" too, it made an object
// written within the grace, a capture in flight, collectable.
func (s *Store) createdOf(id Key, loc location, hdrs map[blockKey]recordHeader) (int64, error) {
	h, err := s.headerOf(loc, hdrs)
	switch {
	case err == nil:
		return int64(h.Time), nil
	case headerDamaged(err):
		return 0, nil
	}
	return 0, fmt.Errorf("the header of the record holding object %s (segment %s offset %d) could not be read: %w", Short(id), segName(loc.Segment), loc.Offset, err)
}
