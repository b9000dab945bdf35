package cas

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rookhq/rook/dict"
	"github.com/rookhq/rook/index"
	"github.com/rookhq/rook/internal/vfs"
)

func (d *Damage) index(all []Damage) int {
	for i := range all {
		if &all[i] == d {
			return i
		}
	}
	return 0
}

// Problem is one thing verify found wrong.
type Problem struct {
	ID      *Key   `json:"-"`
	Short   string `json:"id,omitempty"`
	Segment string `json:"segment,omitempty"`
	Offset  int64  `json:"offset"`
	Reason  string `json:"reason"`
	// Status says what a problem of the index is: ProblemIndexDamaged,
	// ProblemIndexReadFailed or ProblemIndexRebuildUnfinished; empty for
	// the others.
	Status string `json:"status,omitempty"`
	// whole: the problem is of the segment as a file (cut short), and
	// Reason names it and its offsets itself: String does not say them
	// again before it. Offset is then where the segment ends.
	whole bool
}

// The Status of a problem of the index.
const (
	// ProblemIndexDamaged: the index's bytes do not check out; a
	// reindex rebuilds it from the segments.
	ProblemIndexDamaged = "index_damaged"
	// ProblemIndexReadFailed: reading the index failed (an I/O error,
	// permission denied, too many open files): what it holds is not
	// known to be wrong, and the fix is the disk or the permissions.
	ProblemIndexReadFailed = "index_read_failed"
	// ProblemIndexRebuildUnfinished: a writer started rebuilding the
	// index from the segments and stopped before the rebuilt index was in
	// place (killed, or a power cut), and no writer has run since: the
	// index holds no commit, so verify checked no object against an index. Any writer's
	// open (or `rook store reindex`) finishes the rebuild.
	ProblemIndexRebuildUnfinished = "index_rebuild_unfinished"
)

func (p Problem) String() string {
	where := ""
	if p.Segment != "" && !p.whole {
		where = fmt.Sprintf("segment %s offset %d", p.Segment, p.Offset)
	}
	switch {
	case p.Short != "" && where != "":
		return fmt.Sprintf("%s  %s: %s", p.Short, where, p.Reason)
	case p.Short != "":
		return fmt.Sprintf("%s  %s", p.Short, p.Reason)
	case where != "":
		return fmt.Sprintf("%s: %s", where, p.Reason)
	}
	return p.Reason
}

// VerifyReport is what verify found.
type VerifyReport struct {
	Objects  int   `json:"objects"`  // index entries checked
	Records  int   `json:"records"`  // segment records read
	Segments int   `json:"segments"` // segment files read
	Bytes    int64 `json:"bytes"`    // segment bytes read
	Orphans  int   `json:"orphans"`  // objects in segments no entry points at (superseded copies, never acknowledged ones; a reader checks those a Barrier made durable past the last commit as it reads them, loadRecent, not as orphans)
	// Unreadable counts objects that cannot be read back; DamagedRegions
	// counts stretches of segments that do not read as records.
	Unreadable     int `json:"unreadable_objects"`
	DamagedRegions int `json:"damaged_regions"`
	// WaitingRecords are intact records whose dictionary cannot be
	// loaded, and in which the index names objects.
	WaitingRecords int `json:"records_needing_a_dictionary"`
	// DeadRecords are intact records whose dictionary cannot be loaded
	// and in which the index names no object (put again elsewhere since,
	// or never kept): dead space, which a repack or gc moves to torn/
	// with its segment; nothing needs the dictionary for them.
	DeadRecords int `json:"dead_records_of_a_missing_dictionary"`
	// dead: the problems of the dead records and the dictionaries they
	// need, for NamedObjectsMissing.
	dead []deadRecord
	// WaitingObjects are the objects (counted in Unreadable too) in those
	// records; Dictionaries says which dictionaries they wait for.
	WaitingObjects int          `json:"objects_needing_a_dictionary"`
	Dictionaries   []NeededDict `json:"dictionaries_needed,omitempty"`
	// WrongDictObjects are the objects (counted in Unreadable too) of
	// records compressed with a dictionary none of whose objects hash to
	// their ids: decoded, most likely, with a dictionary file that is not
	// the one they were written with. WrongDictionaries says which.
	WrongDictObjects  int          `json:"objects_in_records_of_a_wrong_dictionary"`
	WrongDictionaries []NeededDict `json:"wrong_dictionaries,omitempty"`
	// MissingSegments are the segment files index entries point into that
	// are not there; their objects are counted in Unreadable too.
	MissingSegments []MissingSegment `json:"missing_segments,omitempty"`
	// DictionaryIDsError: the record of the dictionary ids given out
	// (dict/HIGHEST) does not read, and what to do (also a problem).
	DictionaryIDsError string `json:"dictionary_ids_error,omitempty"`
	// TornTail describes unacknowledged bytes at the end of the newest
	// segment that the next writer will cut: a crash's leftovers, not damage.
	TornTail string `json:"torn_tail,omitempty"`
	// TornTailBytes is its size: what its copy into torn/ needs.
	TornTailBytes int64 `json:"torn_tail_bytes,omitempty"`
	// IndexReadFailed: a read of the index failed (not damage): the
	// report is of the part that was read, and verify is to run again
	// once the disk or the permissions are fixed.
	IndexReadFailed bool      `json:"index_read_failed"`
	Problems        []Problem `json:"problems"`
}

// waitingRecord ends the problem of an intact record whose dictionary
// cannot be loaded and which may hold objects needed.
const waitingRecord = " (the record itself is intact: put the dictionary file back)"

// deadRecord is a record of a dictionary that cannot be loaded in which
// the index names no object: its problem (segment, offset and reason
// dead), the reason it has as a waiting one, and the dictionary it needs.
type deadRecord struct {
	segment      string
	offset       int64
	dead, reason string
	dict         NeededDict
}

// NamedObjectsMissing tells the report that the sessions or refs name
// objects the store lacks (or that it could not be checked): the records
// of a dictionary that cannot be loaded in which the index names no
// object may hold them (an index rebuilt while the dictionary could not
// be loaded cannot name their objects), so they are not dead space but
// wait for the dictionary: counted in WaitingRecords and Dictionaries,
// their problems saying to put the dictionary file back (then a reindex
// reads their objects again), as a repack keeps their segments
// (RepackOptions.NothingNamedMissing). It returns how many records it
// counted so.
func (rep *VerifyReport) NamedObjectsMissing() int {
	n := len(rep.dead)
	for _, d := range rep.dead {
		for i, p := range rep.Problems {
			if p.Segment == d.segment && p.Offset == d.offset && p.Reason == d.dead {
				rep.Problems[i].Reason = d.reason
				break
			}
		}
		rep.DeadRecords--
		rep.WaitingRecords++
		found := false
		for i := range rep.Dictionaries {
			if rep.Dictionaries[i].ID == d.dict.ID {
				rep.Dictionaries[i].Records++
				found = true
			}
		}
		if !found {
			n := d.dict
			n.Records = 1
			rep.Dictionaries = append(rep.Dictionaries, n)
		}
	}
	rep.dead = nil
	sort.Slice(rep.Dictionaries, func(i, j int) bool { return rep.Dictionaries[i].ID < rep.Dictionaries[j].ID })
	return n
}

// NeededDict is a dictionary that intact records need and that cannot be
// loaded: what is wrong with it, and what waits for it.
type NeededDict struct {
	ID      uint32 `json:"id"`
	File    string `json:"file"`
	Problem string `json:"problem"`
	Records int    `json:"records"`
	Objects int    `json:"objects"`
}

// MissingSegment is a segment file that index entries point into and that
// is not there.
type MissingSegment struct {
	Segment string `json:"segment"`
	File    string `json:"file"`
	Objects int    `json:"objects"`
}

// dictRecord is what verify keeps of a record compressed with a
// dictionary: whether every object the index names in it fails its hash.
type dictRecord struct {
	dict       uint32
	members    int
	checked    int   // index entries that point at one of its members
	mismatched int   // of those, the ones whose member hashes to another id
	problems   []int // the mismatched ones' problems, by index
}

// memberLoc and memberFact are kept for every object a segment holds (a
// store of millions of them): small, and a member's use is a flag in its
// fact rather than a second map.
type memberLoc struct {
	seg    uint32
	member uint16 // < maxBlockObjects
	off    int64
}

type memberFact struct {
	id   Key
	kind Kind
	used bool // an index entry points at it
	size int64
}

// Verify re-reads every segment record and re-hashes every object, then
// checks every index entry against the record it points at, the index's
// own structure, and the counters. It reads the disk, not caches.
//
// A reader's verify runs beside a writer: a gc or repack that commits and
// removes segments while it reads would make the index it read and the
// segments it read disagree. So a reader starts from the index's newest
// commit, and when it finds problems and the index or the segments changed
// while it read, it reads again (verifyAttempts times at most), reporting
// only what holds for one state of the store. Every attempt tells a read
// of the index that failed the same way (a read failure, not damage). A
// file that vanished under it (a segment a gc or repack removed, an index
// a writer replaced) is the store changing, not a failed read: it reads
// the new state.
func (s *Store) Verify(progress func(done, total int64)) (VerifyReport, error) {
	if s.opts.Writable {
		return s.verifyOnce(progress)
	}
	reads := 0 // attempts that read the store (an index not found reads none)
	for attempt := 1; ; attempt++ {
		last := attempt == verifyAttempts
		if err := s.refreshView(); err != nil {
			if s.indexGone(err) && !last {
				vanishedPause(attempt)
				continue
			}
			return s.viewFailed(err)
		}
		before, berr := s.storeState()
		reads++
		rep, err := s.verifyOnce(progress)
		who, left, changed, lerr := s.rebuilding(rep, err)
		if lerr != nil {
			return rep, lerr
		}
		if changed {
			// The index of no commit it read was replaced before verify
			// could look at the lock (a writer finished the rebuild, or
			// took the records in): it checked no object of what is
			// there now, and reads that.
			if !last {
				continue
			}
			if err := s.refreshView(); err != nil {
				return s.viewFailed(err)
			}
			return rep, fmt.Errorf("index %s held no commit when verify read it, beside %d records, and a writer has changed it since, so verify checked no object against an index: run `rook store verify` again", s.indexPath(), rep.Records)
		}
		if left != nil {
			// No writer runs, and the marker says the last one to
			// rebuild the index stopped before the rebuilt one was in
			// place: no look again changes that.
			rep.Problems = append(rep.Problems, *left)
			return rep, nil
		}
		if who != "" {
			// A writer put an empty index in place of a damaged or
			// missing one and is rebuilding it: no object was checked.
			if !last {
				vanishedPause(attempt)
				continue
			}
			return rep, fmt.Errorf("index %s holds no commit while the segments hold %d records and %s: it is rebuilding the index from the segments, so verify checked no object against an index: run `rook store verify` again once the rebuild is done", s.indexPath(), rep.Records, who)
		}
		if (err == nil && len(rep.Problems) == 0) || berr != nil || rep.IndexReadFailed {
			return rep, err
		}
		if last {
			if seg, ok := s.segmentGone(err); ok {
				return rep, fmt.Errorf("the store kept changing while verify read it: it read it %d times, and segment %s was removed under the last (a gc or repack is running beside it): run `rook store verify` again once that is done", reads, seg)
			}
			return rep, err
		}
		if err := s.tree.Refresh(); err != nil {
			if s.indexGone(err) {
				vanishedPause(attempt)
				continue
			}
			// What was found stands, with why it was not looked at
			// again: a read of the index that failed is not damage.
			rep.addIndexProblem(s.indexPath(), err)
			return rep, nil
		}
		if after, aerr := s.storeState(); aerr != nil || after == before {
			return rep, err
		}
	}
}

// rebuilding says, when what verify read (rep, err) is an index a writer
// is rebuilding, which writer (who; "" when it is not): an index that
// never committed (the new empty one a writer's open puts in place of a
// damaged or missing one, until the rebuilt one replaces it) while the
// segments hold records, a writer holds the store lock and the rebuild
// marker is there (with none, the writer is a new store's first, before
// its first commit: verify checked what readers read, and that stands).
// A lock that
// cannot be looked at counts as held: verify does not pass what it cannot
// tell. With no writer, such records are either a rebuild a writer left
// unfinished (killed, or a power cut), which the rebuild marker says
// (left: the problem to report), or, with no marker, what a first writer
// killed before its first commit left (not in the index yet, though a
// Barrier may have acknowledged them: orphans, which readers find past the
// watermark and the next writer's open takes in); and a new store (no
// commit, no record) is simply empty. The marker is read under the lock,
// and only once the index on disk is seen to be still of no commit: a
// writer removes the marker before it lets the lock go, so a rebuild that
// finished after verify read the index leaves none, and its index, not
// the one verify read, is what is there now (changed: verify reads the
// store again). A marker that cannot be read is the error (lerr).
func (s *Store) rebuilding(rep VerifyReport, err error) (who string, left *Problem, changed bool, lerr error) {
	if err != nil || rep.Records == 0 || s.tree.Snapshot().TxID() != 0 {
		return "", nil, false, nil
	}
	path := filepath.Join(s.home, LockFile)
	l, terr := s.fs.TryLock(path, FileMode)
	switch {
	case errors.Is(terr, vfs.ErrLocked):
		// Held: a rebuild writes its marker before it puts the empty
		// index in place, so with no marker the writer is a new store's
		// first, which has not committed its first objects yet (a first
		// import commits once 4 MiB of records went in, or at its end):
		// no rebuild runs, and verify checked its records as readers see
		// them (past the watermark: loadRecent). Verify said it was
		// rebuilding the index, and checked nothing.
		marked, _, merr := rebuildMarked(s.fs, s.home)
		if merr == nil && !marked {
			// A rebuild that finished after verify read the index left
			// no marker, and an index with a commit: that is read again.
			if rerr := s.tree.Refresh(); rerr != nil || s.tree.Snapshot().TxID() != 0 {
				return "", nil, true, nil
			}
			return "", nil, false, nil
		}
		// Who holds it, as its lock file says (it may say nothing yet,
		// just taken).
		b, _ := vfs.ReadFile(s.fs, path)
		if holder := strings.TrimSpace(string(b)); holder != "" {
			return "a writer holds the store, " + holder, nil, false, nil
		}
		return "a writer holds the store", nil, false, nil
	case terr != nil:
		return fmt.Sprintf("the writer lock %s could not be looked at (%v), so a writer may hold the store", path, terr), nil, false, nil
	}
	defer l.Unlock()
	// Under the lock no writer changes the index: one that does not
	// refresh, or that has a commit now, is not the one verify read.
	if rerr := s.tree.Refresh(); rerr != nil || s.tree.Snapshot().TxID() != 0 {
		return "", nil, true, nil
	}
	marked, what, merr := rebuildMarked(s.fs, s.home)
	switch {
	case merr != nil:
		return "", nil, false, fmt.Errorf("index %s holds no commit while the segments hold %d records, and verify cannot tell whether a writer left its rebuild unfinished: %w: check the file's permissions and run `rook store verify` again", s.indexPath(), rep.Records, merr)
	case !marked:
		return "", nil, false, nil
	}
	return "", &Problem{
		Status: ProblemIndexRebuildUnfinished,
		Reason: fmt.Sprintf("index %s holds no commit while the segments hold %d records, and %s (%s) says a writer started rebuilding it from the segments and stopped before the rebuilt index was in place (killed, or a power cut), with no writer since: verify checked no object against an index: run `rook store reindex` on the store at %s to finish the rebuild (any command that writes to the store finishes it too), then `rook store verify` again", s.indexPath(), rep.Records, rebuildMarkerPath(s.home), what, s.home),
	}, false, nil
}

// verifyAttempts bounds how many times a reader's verify reads a store
// that keeps changing under it.
const verifyAttempts = 5

// vanishedPause waits a little before verify looks again for an index
// that was not there on its attempt-th look: a writer that replaces it
// (moving a damaged one aside, then creating the new one) is given the
// time to put it back (10, 20, 30, 40 ms: 100 ms in all).
func vanishedPause(attempt int) {
	time.Sleep(time.Duration(attempt) * 10 * time.Millisecond)
}

// indexGone says whether err is the index file's not being there.
func (s *Store) indexGone(err error) bool {
	var pe *fs.PathError
	return errors.Is(err, fs.ErrNotExist) && errors.As(err, &pe) && pe.Path == s.indexPath()
}

// segmentGone says whether err is a segment's not being there, and
// which: one listed, then removed (by a gc or repack) before it was read.
func (s *Store) segmentGone(err error) (string, bool) {
	var pe *fs.PathError
	if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) || filepath.Dir(pe.Path) != filepath.Join(s.home, SegmentsDir) {
		return "", false
	}
	return filepath.Base(pe.Path), true
}

// viewFailed is what a reader's verify reports when its look at the
// index's newest commit failed with err, on whichever attempt: a read of
// the index that failed is a problem of the report (not damage); an index
// not there (after looking again) is missing, as a reader's open says;
// anything else is the error (a damaged index's says so, with the fix:
// refreshView).
func (s *Store) viewFailed(err error) (VerifyReport, error) {
	var rep VerifyReport
	if s.indexGone(err) {
		return rep, fmt.Errorf("index %s is missing: run `rook store reindex` to rebuild it from the segments", s.indexPath())
	}
	if _, ok := indexReadFailure(s.indexPath(), err); ok {
		rep.addIndexProblem(s.indexPath(), err)
		return rep, nil
	}
	return rep, err
}

// storeState names what a reader's verify read: the index commit and the
// segment files.
func (s *Store) storeState() (string, error) {
	segs, err := s.listSegments()
	if err != nil {
		return "", err
	}
	return fmt.Sprint(s.tree.Snapshot().TxID(), segs), nil
}

// indexProblem is the problem of the index at path that does not check
// out, said as the other commands say it (the file named, the index
// error in brackets). The index package's errors begin "index: " already
// (index.ErrCorrupt's text): prefixed again they read "index: index:
// corrupt". A read of the file the OS failed is not damage, and says so.
func indexProblem(path string, err error) Problem {
	if oserr, ok := indexReadFailure(path, err); ok {
		return Problem{Status: ProblemIndexReadFailed, Reason: indexReadFailed(path, oserr, "`rook store verify`")}
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "index: ") {
		msg = "index: " + msg
	}
	return Problem{Status: ProblemIndexDamaged, Reason: fmt.Sprintf("index %s is damaged (%s)", path, msg)}
}

// indexReadFailure is the OS's error of an operation on the index file
// at path that failed (an I/O error, permission denied, too many open
// files), and whether err is one: that is not damage (index.ErrCorrupt).
func indexReadFailure(path string, err error) (error, bool) {
	var pe *fs.PathError
	if err == nil || errors.Is(err, index.ErrCorrupt) || !errors.As(err, &pe) || pe.Path != path {
		return nil, false
	}
	return pe.Err, true
}

// indexReadFailed says that reading the index at path failed with the
// OS's error oserr, and what to do: not a rebuild, but the disk or the
// permissions, and then the command again.
func indexReadFailed(path string, oserr error, again string) string {
	return fmt.Sprintf("reading index %s failed (%v): that is not damage, and the store may be fine: check the disk and the file's permissions (or the open-files limit), then run %s again", path, oserr, again)
}

// addIndexProblem records a problem of the index in rep: a read that
// failed once (the reads after it fail alike and say nothing more).
func (rep *VerifyReport) addIndexProblem(path string, err error) {
	p := indexProblem(path, err)
	if p.Status == ProblemIndexReadFailed {
		if rep.IndexReadFailed {
			return
		}
		rep.IndexReadFailed = true
	}
	rep.Problems = append(rep.Problems, p)
}

func (s *Store) verifyOnce(progress func(done, total int64)) (VerifyReport, error) {
	var rep VerifyReport
	if s.opts.Writable {
		if err := s.Sync(); err != nil {
			return rep, err
		}
	}
	if err := s.tree.Check(); err != nil {
		rep.addIndexProblem(s.indexPath(), err)
	}
	// Every object may read while dict/HIGHEST does not: training (and
	// maintain) fails until it is put back or removed, which is the
	// store's to report, not only the command that fails.
	if err := s.DictionaryIDsError(); err != nil {
		rep.DictionaryIDsError = err.Error()
		rep.Problems = append(rep.Problems, Problem{Reason: err.Error()})
	}
	segs, err := s.listSegments()
	if err != nil {
		return rep, err
	}
	total := s.segmentBytes(segs)
	prog := func(n int64) {
		rep.Bytes += n
		if progress != nil {
			progress(rep.Bytes, total)
		}
	}
	facts := map[memberLoc]memberFact{}
	dictRecs := map[blockKey]*dictRecord{}
	present := map[uint32]bool{}
	var damage []Damage
	// lastEnd: where the newest segment's last whole record (waiting for
	// its dictionary or not) ends.
	var lastEnd int64
	segSize := map[uint32]int64{} // each present segment's size
	for _, n := range segs {
		rep.Segments++
		present[n] = true
		if st, err := s.fs.Stat(s.segPath(n)); err == nil {
			segSize[n] = st.Size()
		}
		lastEnd = 0
		d, _, err := s.scanSegment(n, 0, func(r *scannedRecord) error {
			rep.Records++
			lastEnd = r.end
			if r.h.Codec == CodecZstdDict {
				dictRecs[blockKey{r.seg, r.off}] = &dictRecord{dict: r.h.Dict, members: len(r.members)}
			}
			for i, m := range r.members {
				facts[memberLoc{seg: r.seg, member: uint16(i), off: r.off}] = memberFact{id: ID(m), kind: r.h.Kind, size: int64(len(m))}
			}
			return nil
		}, prog)
		if err != nil {
			return rep, err
		}
		// A record waiting for its dictionary is whole too: the damage
		// before it is not a torn tail (the writer's open keeps it,
		// lastWholeEnd).
		for _, x := range d {
			if x.NeedsDict {
				lastEnd = max(lastEnd, x.Offset+x.Length)
			}
		}
		damage = append(damage, d...)
	}
	snap := s.tree.Snapshot()
	committed, _ := decodeCounters(snap.UserMeta())
	var regions []Damage // damage that is not an unacknowledged torn tail
	var torn *Damage     // the first damage of the torn tail
	for _, d := range damage {
		if len(segs) > 0 && d.Segment == segs[len(segs)-1] && !d.NeedsDict && d.Offset >= lastEnd &&
			(d.Segment > committed.WMSegment || d.Segment == committed.WMSegment && d.Offset >= committed.WMOffset) {
			// Past the watermark in the newest segment, with no whole
			// record after it: a write no Sync acknowledged. The next
			// writer cuts it (recover), from there to the segment's end.
			// An index that never committed has its watermark at the
			// start: what a first writer killed inside its first
			// segment's header left is cut the same way (verify called
			// it damage). Damage that whole records follow is not a
			// torn tail (those records may be acknowledged: the next
			// writer takes them in and keeps it): it is reported as
			// damage, wherever it is.
			if torn == nil || d.Offset < torn.Offset {
				torn = &d
			}
			continue
		}
		regions = append(regions, d)
	}
	if torn != nil {
		d := *torn
		if st, err := s.fs.Stat(filepath.Join(s.home, SegmentsDir, segName(d.Segment))); err == nil {
			d.Length = max(st.Size()-d.Offset, d.Length)
		}
		d.AtTail = true
		rep.TornTail, rep.TornTailBytes = d.String(), d.Length
	}
	damage = regions
	damagedAt := func(seg uint32, off int64) *Damage {
		for i := range damage {
			d := &damage[i]
			if d.Segment == seg && off >= d.Offset && off < d.Offset+d.Length {
				return d
			}
		}
		return nil
	}
	count := counters{}
	damageUsed := make([]bool, len(damage))
	missingSegs := map[uint32]int{} // objects the index names in segment files not there
	cutInline := map[uint32]int{}   // inline objects the index names past a present segment's end
	needed := map[uint32]*NeededDict{}
	need := func(d *Damage) *NeededDict {
		n := needed[d.Dict]
		if n == nil {
			n = &NeededDict{ID: d.Dict, File: filepath.Join(s.home, DictDir, dict.FileName(d.Dict)), Problem: d.DictErr}
			needed[d.Dict] = n
		}
		return n
	}
	// check checks one index entry against the record it points at; the
	// index's own entries (committed) are summed for the counters check.
	check := func(id Key, v []byte, committed bool) bool {
		rep.Objects++
		id2 := id
		bad := func(e entry, reason string) {
			p := Problem{ID: &id2, Short: Short(id), Reason: reason}
			if !e.Inline || e.Loc.Segment != 0 {
				p.Segment, p.Offset = segName(e.Loc.Segment), e.Loc.Offset
			}
			rep.Problems = append(rep.Problems, p)
		}
		e, err := decodeEntry(v)
		if err != nil {
			bad(entry{Inline: true}, err.Error())
			return true
		}
		if committed {
			count.add(e, +1)
		}
		if e.Inline && ID(e.Data) != id {
			bad(e, "inline copy in the index: content hash mismatch")
			return true
		}
		loc := memberLoc{seg: e.Loc.Segment, member: uint16(e.Loc.Member), off: e.Loc.Offset}
		f, ok := facts[loc]
		if ok && e.Loc.Member >= 0 && e.Loc.Member < maxBlockObjects && !f.used {
			f.used = true
			facts[loc] = f
		} else if e.Loc.Member < 0 || e.Loc.Member >= maxBlockObjects {
			ok = false // no block holds such a member
		}
		d := damagedAt(e.Loc.Segment, e.Loc.Offset)
		dr := dictRecs[blockKey{e.Loc.Segment, e.Loc.Offset}]
		if ok && dr != nil {
			dr.checked++
		}
		switch {
		case !ok && e.Inline && d == nil && !present[e.Loc.Segment]:
			// No record where it points, its segment file gone: its
			// bytes are in the index, re-hashed above, and read, and
			// `rook store reindex` writes them again as a new record
			// rather than dropping them. Not lost, so not a problem.
			// (One whose record is damaged is named below: putting its
			// bytes again repairs the segment's copy.)
		case !ok && e.Inline && d == nil && e.Loc.Offset >= segSize[e.Loc.Segment]:
			// Its segment is there but ends before its record: cut
			// short (a copy or a restore that stopped early) or
			// replaced. Its bytes read from the index, but the store is
			// not whole: writers refuse it when it is the watermark's
			// segment, a repack keeps it in place. Said once per
			// segment below, with the way out.
			cutInline[e.Loc.Segment]++
		case !ok && d != nil && d.NeedsDict:
			damageUsed[d.index(damage)] = true
			bad(e, "unreadable: its "+d.Reason)
			rep.WaitingObjects++
			need(d).Objects++
		case !ok && d != nil:
			damageUsed[d.index(damage)] = true
			bad(e, "its record is damaged ("+withoutBadRecord(d.Reason)+")")
		case !ok && !e.Inline && !present[e.Loc.Segment]:
			// Said once per segment below, with the way out: the
			// objects are not wrong in the index, their file is gone.
			missingSegs[e.Loc.Segment]++
			bad(e, fmt.Sprintf("its segment %s is missing", segName(e.Loc.Segment)))
		case !ok:
			bad(e, "index entry points at no record")
		case f.id != id && dr != nil:
			dr.mismatched++
			dr.problems = append(dr.problems, len(rep.Problems))
			bad(e, "content hash mismatch")
		case f.id != id:
			bad(e, "content hash mismatch")
		case f.kind != e.Kind:
			bad(e, fmt.Sprintf("record holds %s objects, index says %s", f.kind, e.Kind))
		case f.size != e.Size:
			bad(e, "index entry does not match its record")
		}
		return true
	}
	err = snap.Ascend(Key{}, func(id Key, v []byte) bool { return check(id, v, true) })
	// The walk stopped where a read failed: every object after it was
	// not looked at (not an orphan) and the counters not summed.
	walked := err == nil || errors.Is(err, index.ErrCorrupt)
	if err != nil {
		rep.addIndexProblem(s.indexPath(), err)
	}
	// A reader beside a writer reads the objects of the records the
	// writer made durable past the index's watermark (loadRecent: Get,
	// session show, store ls): they are checked as the index's are, not
	// left as orphans (a new store's first writer, until its first
	// commit, has all its objects there). They are not in the committed
	// counters.
	for _, r := range s.recentEntries() {
		check(r.id, r.e.encode(), false)
	}
	for _, f := range facts {
		if !f.used && walked {
			rep.Orphans++
		}
	}
	// A record whose checksum holds decodes to the bytes written, given
	// the dictionary it was written with; zstd frames carry no checksum
	// of their own (encoder). So a record compressed with a dictionary
	// none of whose objects hash to their ids was, most likely, decoded
	// with another dictionary of the same id (another store's: every
	// store numbers its dictionaries from 1). Putting the objects again
	// would compress new copies with that wrong dictionary: the way out
	// is the file.
	wrong := map[uint32]*NeededDict{}
	for bk, dr := range dictRecs {
		if dr.checked == 0 || dr.mismatched != dr.checked {
			continue
		}
		file := filepath.Join(s.home, DictDir, dict.FileName(dr.dict))
		for _, i := range dr.problems {
			rep.Problems[i].Reason = fmt.Sprintf("content hash mismatch: its record decodes with dictionary %d to other bytes", dr.dict)
		}
		rep.Problems = append(rep.Problems, Problem{Segment: segName(bk.seg), Offset: bk.off, Reason: fmt.Sprintf("a record compressed with dictionary %d: none of the %d object(s) the index names in it hash to their ids, though its checksum holds: it was likely decoded with the wrong dictionary: %s is not the file it was written with (another store's?): put this store's own dictionary file back from a backup", dr.dict, dr.checked, file)})
		w := wrong[dr.dict]
		if w == nil {
			w = &NeededDict{ID: dr.dict, File: file, Problem: fmt.Sprintf("dictionary %d (%s) is likely not the one its records were written with", dr.dict, file)}
			wrong[dr.dict] = w
		}
		w.Records++
		w.Objects += dr.checked
		rep.WrongDictObjects += dr.checked
	}
	for _, w := range wrong {
		rep.WrongDictionaries = append(rep.WrongDictionaries, *w)
	}
	sort.Slice(rep.WrongDictionaries, func(i, j int) bool { return rep.WrongDictionaries[i].ID < rep.WrongDictionaries[j].ID })
	for n, objects := range missingSegs {
		rep.MissingSegments = append(rep.MissingSegments, MissingSegment{Segment: segName(n), File: s.segPath(n), Objects: objects})
		// No offset: the problem is the whole file.
		rep.Problems = append(rep.Problems, Problem{Reason: missingSegment(n, s.segPath(n), objects)})
	}
	sort.Slice(rep.MissingSegments, func(i, j int) bool { return rep.MissingSegments[i].Segment < rep.MissingSegments[j].Segment })
	// A segment cut short: the watermark's, as every writer's open says
	// (recover, CheckWatermark), and any whose end the index names
	// inline objects past (objects stored only in it are listed each).
	if n := committed.WMSegment; present[n] && committed.WMOffset > segHeaderSize && segSize[n] < committed.WMOffset {
		// The offset is where the segment ends, as the reason says it (as
		// the writer does), so --json says what the text does.
		rep.Problems = append(rep.Problems, Problem{Segment: segName(n), Offset: segSize[n], Reason: shortSegmentError(n, segSize[n], committed.WMOffset).Error(), whole: true})
	}
	cut := make([]uint32, 0, len(cutInline))
	for n := range cutInline {
		cut = append(cut, n)
	}
	slices.Sort(cut)
	for _, n := range cut {
		rep.Problems = append(rep.Problems, Problem{Segment: segName(n), Offset: segSize[n], Reason: cutInlineSegment(n, segSize[n], cutInline[n]), whole: true})
	}
	for i, d := range damage {
		p := Problem{Segment: segName(d.Segment), Offset: d.Offset, Reason: fmt.Sprintf("%d damaged bytes: %s", d.Length, d.Reason)}
		switch {
		case d.NeedsDict && !damageUsed[i] && walked:
			p.Reason = d.Reason + " (the record itself is intact, but the index names no object in it: dead space, which `rook store repack` moves to torn/ with its segment; the dictionary is not needed for it)"
			rep.dead = append(rep.dead, deadRecord{segment: p.Segment, offset: p.Offset, dead: p.Reason, reason: d.Reason + waitingRecord, dict: NeededDict{ID: d.Dict, File: filepath.Join(s.home, DictDir, dict.FileName(d.Dict)), Problem: d.DictErr}})
		case d.NeedsDict:
			p.Reason = d.Reason + waitingRecord
		case !damageUsed[i] && walked:
			p.Reason += " (no live object is stored there)"
		}
		rep.Problems = append(rep.Problems, p)
	}
	for i, d := range damage {
		if d.NeedsDict && !damageUsed[i] && walked {
			rep.DeadRecords++
		} else if d.NeedsDict {
			rep.WaitingRecords++
			need(&d).Records++
		} else {
			rep.DamagedRegions++
		}
	}
	for _, n := range needed {
		rep.Dictionaries = append(rep.Dictionaries, *n)
	}
	sort.Slice(rep.Dictionaries, func(i, j int) bool { return rep.Dictionaries[i].ID < rep.Dictionaries[j].ID })
	for _, p := range rep.Problems {
		if p.Short != "" {
			rep.Unreadable++
		}
	}
	for _, k := range Kinds {
		if !walked {
			break
		}
		s.mu.Lock()
		want := s.committedKind(snap.UserMeta(), k)
		s.mu.Unlock()
		got := count.Kinds[k]
		if got == nil {
			got = &kindCounters{}
		}
		if want != *got {
			rep.Problems = append(rep.Problems, Problem{Reason: fmt.Sprintf("index counters for %s say %d objects / %d bytes, the entries hold %d / %d: run `rook store reindex`", k, want.Objects, want.Size, got.Objects, got.Size)})
		}
	}
	sort.SliceStable(rep.Problems, func(i, j int) bool {
		a, b := rep.Problems[i], rep.Problems[j]
		if a.Segment != b.Segment {
			return a.Segment < b.Segment
		}
		return a.Offset < b.Offset
	})
	return rep, nil
}

// missingSegment says that segment n, the file at path, is missing while
// the index names objects in it, and the way out, as CheckWatermark says
// it of the newest segment.
func missingSegment(n uint32, path string, objects int) string {
	return fmt.Sprintf("segment %s is missing (%s), and the index names %d object(s) in it: put it back from a backup; if it is gone for good, `rook store reindex` makes the index forget its objects (`rook store verify` then lists what the sessions lost)", segName(n), path, objects)
}

// cutInlineSegment says that segment n, present but size bytes long, ends
// before the records of objects the index keeps inline, and the way out.
func cutInlineSegment(n uint32, size int64, objects int) string {
	return fmt.Sprintf("segment %s is %d bytes, and the index names %d object(s) past its end, which it keeps inline (they read from the index): the file was cut short or replaced since: put the whole file back from a backup, or run `rook store reindex`, which writes them again as new records", segName(n), size, objects)
}

func (s *Store) committedKind(meta []byte, k Kind) kindCounters {
	c, err := decodeCounters(meta)
	if err != nil || c.Kinds[k] == nil {
		return kindCounters{}
	}
	return *c.Kinds[k]
}
