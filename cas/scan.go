package cas

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/rookhq/rook/dict"
	"github.com/rookhq/rook/internal/units"
	"github.com/rookhq/rook/internal/vfs"
)

// Damage is a stretch of a segment that does not read as records.
type Damage struct {
	Segment uint32
	Offset  int64
	Length  int64
	Reason  string
	// AtTail: nothing readable follows it in its segment.
	AtTail bool
	// NeedsDict: not damage at all, an intact record whose dictionary
	// cannot be loaded (Length is the record's length). Its objects are
	// unknown until the dictionary is back; nothing cuts or collects it.
	NeedsDict bool
	// Dict and DictErr, with NeedsDict: the dictionary and why it cannot
	// be loaded (missing, damaged).
	Dict    uint32
	DictErr string
}

func (d Damage) String() string {
	if d.NeedsDict {
		// Not damage: what it waits for, and what brings it back.
		return fmt.Sprintf("segment %s offset %d: an intact record of %d bytes: %s (put the dictionary file back from a backup)", segName(d.Segment), d.Offset, d.Length, d.Reason)
	}
	return fmt.Sprintf("segment %s offset %d: %d damaged bytes: %s", segName(d.Segment), d.Offset, d.Length, d.Reason)
}

// scannedRecord is one good record met by a scan.
type scannedRecord struct {
	seg     uint32
	off     int64
	end     int64
	h       recordHeader
	raw     []byte
	offs    []int
	lens    []int
	members [][]byte
}

// scanSegment walks segment n from offset `from`, calling fn for every good
// record, and returns the damage met and the offset after the last good
// record. Damage does not stop the walk: it resyncs at the next offset where
// a whole record checks out, so one bad record hides nothing after it.
func (s *Store) scanSegment(n uint32, from int64, fn func(r *scannedRecord) error, progress func(int64)) ([]Damage, int64, error) {
	f, err := s.fs.OpenFile(s.segPath(n), os.O_RDONLY, 0)
	if err != nil {
		return nil, 0, fmt.Errorf("open segment: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	size := st.Size()
	var damage []Damage
	if from <= segHeaderSize {
		from = segHeaderSize
		hdr := make([]byte, segHeaderSize)
		_, rerr := f.ReadAt(hdr, 0)
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return nil, 0, rerr
		}
		sh, herr := parseSegmentHeader(hdr)
		if errors.Is(herr, ErrNewerSegment) {
			return nil, 0, fmt.Errorf("segment %s: %w", segName(n), herr)
		}
		if herr == nil && sh.Number != n {
			herr = fmt.Errorf("%w: header names segment %d", ErrBadRecord, sh.Number)
		}
		if herr != nil {
			l := min(int64(segHeaderSize), size)
			damage = append(damage, Damage{Segment: n, Offset: 0, Length: l, Reason: "segment header: " + herr.Error(), AtTail: size <= segHeaderSize})
		}
	}
	if len(damage) > 0 && size <= segHeaderSize {
		return damage, 0, nil // not even a whole header: nothing else to read
	}
	if from > size {
		return damage, from, shortSegmentError(n, size, from)
	}
	end := from
	off := from
	hdr := make([]byte, recHeaderSize)
	for off < size {
		rec, err := s.readRecordAt(f, n, off, size, hdr)
		var nd *NeedsDictError
		if errors.As(err, &nd) {
			h, _ := parseRecordHeader(hdr) // it parsed: the CRC held
			damage = append(damage, Damage{Segment: n, Offset: off, Length: h.total(), Reason: nd.Error(), NeedsDict: true, Dict: nd.Dict, DictErr: nd.Err.Error()})
			if progress != nil {
				progress(h.total())
			}
			off += h.total()
			end = off
			continue
		}
		if err != nil {
			// Find where readable records start again.
			next, rerr := s.resync(f, n, off+1, size)
			if rerr != nil {
				return damage, end, rerr
			}
			d := Damage{Segment: n, Offset: off, Length: next - off, Reason: err.Error(), AtTail: next >= size}
			damage = append(damage, d)
			if progress != nil {
				progress(next - off)
			}
			off = next
			continue
		}
		if err := fn(rec); err != nil {
			return damage, end, err
		}
		if progress != nil {
			progress(rec.end - off)
		}
		off = rec.end
		end = off
	}
	return damage, end, nil
}

func (s *Store) readRecordAt(f vfs.File, n uint32, off, size int64, hdr []byte) (*scannedRecord, error) {
	if size-off < recHeaderSize {
		return nil, fmt.Errorf("%w: the segment ends inside its header", ErrTruncated)
	}
	if _, err := f.ReadAt(hdr, off); err != nil {
		return nil, err
	}
	h, err := parseRecordHeader(hdr)
	if err != nil {
		return nil, err
	}
	if off+h.total() > size {
		return nil, fmt.Errorf("%w: the segment ends inside it", ErrTruncated)
	}
	payload := make([]byte, h.Size)
	if _, err := f.ReadAt(payload, off+recHeaderSize); err != nil {
		return nil, err
	}
	if err := checkRecord(hdr, payload, h); err != nil {
		return nil, err
	}
	raw, err := s.dec.decode(h, payload)
	var offs, lens []int
	if err == nil {
		offs, lens, err = blockTable(raw, int(h.Count))
	}
	if err != nil {
		return nil, wrongDictError(h, err)
	}
	r := &scannedRecord{seg: n, off: off, end: off + h.total(), h: h, raw: raw, offs: offs, lens: lens}
	r.members = make([][]byte, len(offs))
	for i := range offs {
		r.members[i] = raw[offs[i] : offs[i]+lens[i]]
	}
	return r, nil
}

// wrongDictError is what a record whose checksum holds yet does not
// decode (err) is: its stored bytes are the ones written, so one
// compressed with a dictionary that does not decode with it, or not to a
// block's layout, was most likely given the wrong dictionary (another
// store's of the same id: every store numbers its dictionaries from 1).
// Said as a record waiting for its dictionary (NeedsDictError), it is
// kept, never cut, skipped or collected as damage; the objects of one
// that decodes to other bytes only their hashes tell (verify, reindex).
// Other records' errors are returned as they are.
func wrongDictError(h recordHeader, err error) error {
	var nd *NeedsDictError
	if h.Codec != CodecZstdDict || h.Dict == dict.None || errors.As(err, &nd) {
		return err
	}
	return &NeedsDictError{Dict: h.Dict, Err: fmt.Errorf("its checksum holds, but it does not decode with dictionary %d (%s): that file is likely not the one it was written with", h.Dict, withoutBadRecord(err.Error()))}
}

// withoutBadRecord is a damage reason without ErrBadRecord's words before
// it, for a message that says what kind of damage it is in its own.
func withoutBadRecord(reason string) string {
	return strings.TrimPrefix(reason, ErrBadRecord.Error()+": ")
}

// resyncWindow is how much of a segment resync reads at a time: a torn
// tail may be most of a 1 GiB body a killed append wrote, and the next
// writer, however small, walks it (recover).
const resyncWindow = 1 << 20

// resync looks for the next offset at or after `from` where a whole record
// checks out (magic, header, checksum, decode; or all but the decode for a
// record waiting for its dictionary, which scanSegment reports as such).
// Returns size if none does.
// It reads the segment a window at a time, never the rest of it whole.
func (s *Store) resync(f vfs.File, n uint32, from, size int64) (int64, error) {
	if from >= size {
		return size, nil
	}
	buf := make([]byte, min(resyncWindow, size-from))
	hdr := make([]byte, recHeaderSize)
	for at := from; at < size; {
		w := buf[:min(int64(len(buf)), size-at)]
		got, err := f.ReadAt(w, at)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		w = w[:got]
		for i := 0; i < len(w); {
			j := bytes.Index(w[i:], []byte("RK"))
			if j < 0 {
				break
			}
			cand := at + int64(i+j)
			var nd *NeedsDictError
			if _, err := s.readRecordAt(f, n, cand, size, hdr); err == nil || errors.As(err, &nd) {
				return cand, nil // whole: it decodes, or waits for its dictionary
			}
			i += j + 1
		}
		if got < 2 || at+int64(got) >= size {
			break
		}
		// The next window starts at this one's last byte: a magic split
		// across the two is found there.
		at += int64(got) - 1
	}
	return size, nil
}

// TornTailError is a torn tail a writer's open could not cut because
// its copy into the store's torn/ directory (Dir) failed: a disk with less
// room than the tail, say. Nothing is cut or written then; the store takes
// no write until the copy can be made. Its bytes, at Offset to the end of
// Segment, were never acknowledged (a writer stopped before it synced
// them), but they are kept aside before the cut, as every torn tail is, so
// that a wrong guess at where the records end loses nothing.
type TornTailError struct {
	Segment uint32
	Offset  int64
	Size    int64 // the tail's bytes: what the copy needs
	Dir     string
	Err     error
}

func (e *TornTailError) Error() string {
	return fmt.Sprintf("segment %s: a torn tail of %d bytes (%s) at offset %d, written by a writer that stopped before it acknowledged them, is to be copied into %s before it is cut off, and the copy failed: %v",
		segName(e.Segment), e.Size, units.Bytes(e.Size), e.Offset, e.Dir, e.Err)
}

func (e *TornTailError) Unwrap() error { return e.Err }

// cutTail removes a torn tail from a segment: its bytes are first copied
// into HOME/torn/ (streamed, through the durable-write helper: a tail may
// be most of a 1 GiB body, never held in memory), so a wrong guess loses
// nothing, then the segment is truncated and synced. A crash before the
// copy's rename leaves the tail in place (and the copy's temporary file in
// torn/, which gc removes); after it, both, and the next writer copies the
// tail again.
func (s *Store) cutTail(n uint32, off int64) (int64, string, error) {
	path := s.segPath(n)
	f, err := s.fs.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, "", err
	}
	cut := st.Size() - off
	if cut <= 0 && off >= segHeaderSize {
		return 0, "", nil
	}
	cut = max(cut, 0)
	tornDir := filepath.Join(s.home, TornDir)
	if err := s.fs.MkdirAll(tornDir, DirMode); err != nil {
		return 0, "", &TornTailError{Segment: n, Offset: off, Size: cut, Dir: tornDir, Err: err}
	}
	name := fmt.Sprintf("%s.%d.%d", segName(n), off, s.opts.Clock.Now().UnixNano())
	aside := filepath.Join(tornDir, name)
	copyTail := func(w io.Writer) error {
		got, err := io.Copy(w, io.NewSectionReader(f, off, cut))
		if err == nil && got != cut {
			err = fmt.Errorf("read %d of its %d bytes: %w", got, cut, io.ErrUnexpectedEOF)
		}
		return err
	}
	if err := s.fs.WriteFilesAtomic(tornDir, []vfs.NamedData{{Name: name, Stream: copyTail}}, FileMode); err != nil {
		return 0, "", &TornTailError{Segment: n, Offset: off, Size: cut, Dir: tornDir, Err: err}
	}
	if off < segHeaderSize {
		// Not even the header made it: the segment never held a record.
		f.Close()
		if err := s.fs.Remove(path); err != nil {
			return 0, "", err
		}
		return cut, aside, s.fs.SyncDir(filepath.Dir(path))
	}
	if err := f.Truncate(off); err != nil {
		return 0, "", fmt.Errorf("cut torn tail: %w", err)
	}
	if err := f.Sync(); err != nil {
		return 0, "", err
	}
	s.files.forget(n)
	s.blocks.drop(n)
	return cut, aside, nil
}

// realDamage drops the records that are only waiting for a dictionary.
func realDamage(ds []Damage) []Damage {
	var out []Damage
	for _, d := range ds {
		if !d.NeedsDict {
			out = append(out, d)
		}
	}
	return out
}

// entriesOf turns a scanned record into index entries.
func (s *Store) entriesOf(r *scannedRecord, each func(id Key, e entry) error) error {
	for i, m := range r.members {
		e := entry{
			Kind: r.h.Kind, Size: int64(len(m)),
			Stored: attribute(int64(r.h.Size), int64(len(m)), int64(len(r.raw))),
			Loc:    location{Segment: r.seg, Offset: r.off, Member: i},
		}
		if len(m) <= s.opts.InlineMax {
			e.Inline, e.Data = true, m
		}
		if err := each(ID(m), e); err != nil {
			return err
		}
	}
	return nil
}

// recover runs when a writer opens the store: it takes in records written
// after the index's last commit (a crash between segment sync and index
// commit), cuts a torn tail off the newest segment, and opens the newest
// segment for appending.
func (s *Store) recover() error {
	segs, err := s.listSegments()
	if err != nil {
		return err
	}
	if len(segs) == 0 {
		return nil
	}
	last := segs[len(segs)-1]
	// A commit named records in the segment the committed watermark is
	// in, and every commit syncs the name of the segment it names first:
	// a newer one's name may never have been synced (activeSegment.named).
	named := s.wmKnown && last <= s.ctr.WMSegment
	taken := 0
	for _, n := range segs {
		if n < s.ctr.WMSegment {
			continue
		}
		from, recs, kept, tail, err := s.scanPastWatermark(n)
		if err != nil {
			return err
		}
		if n != last && (len(kept) > 0 || tail != nil) {
			d := tail
			if len(kept) > 0 {
				d = &kept[0]
			}
			return fmt.Errorf("%s; a sealed segment is damaged: run `rook store verify` to list what it affects, then `rook store reindex`", *d)
		}
		end := from
		for _, f := range recs {
			end = f.end
			if _, ok, err := s.tree.Get(f.id); err != nil {
				return s.indexErr(err)
			} else if ok {
				continue // already known: the index's copy stands
			}
			if err := s.tree.Put(f.id, f.e.encode()); err != nil {
				return err
			}
			s.ctr.add(f.e, +1)
			taken++
		}
		if (tail == nil || tail.Offset >= segHeaderSize) && (n > s.ctr.WMSegment || end > s.ctr.WMOffset) {
			s.ctr.WMSegment, s.ctr.WMOffset = n, end
			s.dirty = true
		}
		// Damage that whole records follow is not a torn write: those
		// records may be acknowledged (a Barrier synced them before an
		// event named them), and they are in the index now. The damaged
		// bytes stay where they are, before the watermark from the next
		// commit on: damage, which verify lists and a repack moves to
		// torn/ with its segment.
		for _, d := range kept {
			s.Notices = append(s.Notices, fmt.Sprintf("%s, past the index's watermark with whole records after it: not a torn write, so nothing was cut: its bytes stay where they are and the records after it were taken in; run `rook store verify` to list what it affects", d))
		}
		if tail == nil {
			continue
		}
		// No whole record follows the tail's start: it is what a writer
		// stopped in the middle of, never acknowledged by a Sync.
		cut, aside, err := s.cutTail(n, tail.Offset)
		var te *TornTailError
		if errors.As(err, &te) {
			return err // it names the segment
		} else if err != nil {
			return fmt.Errorf("segment %s: %w", segName(n), err)
		}
		if cut > 0 || tail.Offset < segHeaderSize {
			s.Notices = append(s.Notices, fmt.Sprintf("cut a torn tail of %d bytes from segment %s at offset %d (written but never synced before the last writer stopped without closing the store: %s; kept as %s)", cut, segName(n), tail.Offset, vfs.UncleanStop, aside))
		}
	}
	if taken > 0 {
		s.Notices = append(s.Notices, fmt.Sprintf("index was behind the segments: took in %d object(s) written before the last writer stopped without closing the store (%s)", taken, vfs.UncleanStop))
	}
	if err := s.openActive(named); err != nil {
		return err
	}
	if s.dirty {
		return s.syncLocked()
	}
	return nil
}

// openActive opens the newest segment for appending; named says whether
// its directory entry is known durable (activeSegment.named).
func (s *Store) openActive(named bool) error {
	segs, err := s.listSegments()
	if err != nil || len(segs) == 0 {
		return err
	}
	n := segs[len(segs)-1]
	if n < s.ctr.WMSegment {
		// The newest segment the index took in is gone: the next write
		// starts a segment after it (startSegment), rather than going on
		// in an older one.
		return nil
	}
	f, err := s.fs.OpenFile(s.segPath(n), os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("open segment for appending: %w", err)
	}
	// A segment of a newer format is not appended to: this rook's
	// records in another format's file would be acknowledged, and then
	// the whole segment refused by verify and reindex. Its header is read
	// here because a writer's scan starts at the index's watermark, past
	// it. (Any other damage to the header is the scans' to report.)
	hdr := make([]byte, segHeaderSize)
	if _, rerr := f.ReadAt(hdr, 0); rerr == nil {
		if _, herr := parseSegmentHeader(hdr); errors.Is(herr, ErrNewerSegment) {
			f.Close()
			return fmt.Errorf("segment %s: %w; nothing written", segName(n), herr)
		}
	}
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		f.Close()
		return err
	}
	// Not known to be synced: a killed (not powered-off) writer leaves
	// records in the page cache that recover may have just taken in. The
	// next commit fsyncs first (and the directory, unless named).
	s.active = &activeSegment{f: f, number: n, size: size, synced: false, named: named}
	return nil
}

func (s *Store) syncSegment(n uint32) error {
	if s.active != nil && s.active.number == n {
		return s.syncActive()
	}
	f, err := s.fs.OpenFile(s.segPath(n), os.O_RDWR, 0)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	// Its name too: it may be a segment a failed writer created and
	// never synced the directory of (activeSegment.named).
	return s.fs.SyncDir(filepath.Join(s.home, SegmentsDir))
}

// ReindexReport says what a rebuild found.
type ReindexReport struct {
	Segments int
	Records  int
	Objects  int
	Damage   []Damage
	Cut      []string // torn tails cut, and where their bytes went
	// NeedsDict lists intact records whose dictionary cannot be loaded;
	// Carried counts their objects kept from the old index.
	NeedsDict []Damage
	Carried   int
	// CarryErr, when not empty: the old index could not be read whole
	// while carrying those entries over (a damaged node, an entry that
	// does not decode). Carried counts what was kept; objects of waiting
	// records it held past the damage have no entry now.
	CarryErr string
	// WrongDict lists records compressed with a dictionary that decode
	// whole, yet not to the objects the old index names at them: their
	// dictionary file is not the one they were written with (another
	// store's, whose ids also start at 1). Their objects keep the old
	// index's entries (counted in WrongDictKept); nothing of what they
	// decode to is taken in.
	WrongDict     []WrongDictRecord
	WrongDictKept int
	// Rewritten counts the objects whose only copy was the old index's
	// inline one (their record gone: a segment lost, a record damaged),
	// re-hashed and written again as new records rather than dropped.
	Rewritten int
}

// WrongDictRecord is a record that decodes with its dictionary to objects
// other than the ones the index names at it.
type WrongDictRecord struct {
	Segment uint32
	Offset  int64
	Dict    uint32
	// Members is how many objects the record holds; Mismatched how many
	// the index names at it that its decoded bytes no longer hash to.
	Members    int
	Mismatched int
}

func (w WrongDictRecord) String() string {
	return fmt.Sprintf("segment %s offset %d: a record compressed with dictionary %d decodes, but %d of its %d object(s) no longer hash to the ids the index names at it: dictionary %d is likely not the file it was written with (another store's?)", segName(w.Segment), w.Offset, w.Dict, w.Mismatched, w.Members, w.Dict)
}

// Reindex rebuilds the index from the segments, which are the truth. Damage
// met on the way is reported (and skipped: every readable record is still
// taken in); a torn tail at the end of the newest segment is cut and kept
// aside.
func (s *Store) Reindex(progress func(done, total int64)) (ReindexReport, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writable(); err != nil {
		return ReindexReport{}, err
	}
	if err := s.flushOpenBlocks(); err != nil {
		return ReindexReport{}, s.fail(err)
	}
	return s.reindexLocked(progress)
}

func (s *Store) reindexLocked(progress func(done, total int64)) (ReindexReport, error) {
	var rep ReindexReport
	segs, err := s.listSegments()
	if err != nil {
		return rep, err
	}
	total := s.segmentBytes(segs)
	var done int64
	prog := func(n int64) {
		done += n
		if progress != nil {
			progress(done, total)
		}
	}
	found := map[Key]entry{}
	ctr := counters{DedupHits: s.ctr.DedupHits, DedupBytes: s.ctr.DedupBytes}
	waiting := map[blockKey]bool{} // records whose dictionary is unavailable
	// Records compressed with a dictionary, and the id each of their
	// members decodes to: a dictionary file of the right id and a good
	// checksum may still be another store's, and zstd frames carry no
	// checksum of the decoded bytes (encoder: WithEncoderCRC(false)), so
	// such a record decodes "fine" to other bytes. Only the old index,
	// which names what each member was, can tell.
	dictRecs := map[blockKey]*WrongDictRecord{}
	dictMembers := map[memberLoc]Key{}
	for i, n := range segs {
		rep.Segments++
		damage, end, err := s.scanSegment(n, 0, func(r *scannedRecord) error {
			rep.Records++
			if r.h.Codec == CodecZstdDict {
				dictRecs[blockKey{r.seg, r.off}] = &WrongDictRecord{Segment: r.seg, Offset: r.off, Dict: r.h.Dict, Members: len(r.members)}
			}
			return s.entriesOf(r, func(id Key, e entry) error {
				found[id] = e // a later copy is a repair: it wins
				if r.h.Codec == CodecZstdDict {
					dictMembers[memberLoc{seg: r.seg, off: r.off, member: uint16(e.Loc.Member)}] = id
				}
				return nil
			})
		}, prog)
		if err != nil {
			return rep, err
		}
		acked := func(d Damage) bool {
			// Before the old index's watermark: data a Sync acknowledged.
			return s.wmKnown && (d.Segment < s.ctr.WMSegment || d.Segment == s.ctr.WMSegment && d.Offset < s.ctr.WMOffset)
		}
		for _, d := range damage {
			if d.NeedsDict {
				waiting[blockKey{d.Segment, d.Offset}] = true
				rep.NeedsDict = append(rep.NeedsDict, d)
				continue
			}
			if i == len(segs)-1 && d.AtTail && acked(d) {
				// Acknowledged data is damaged, not a torn write: keep
				// it, report it, and append after it from now on.
				rep.Damage = append(rep.Damage, d)
				end = d.Offset + d.Length
				continue
			}
			if i == len(segs)-1 && d.AtTail {
				cut, aside, err := s.cutTail(n, d.Offset)
				if err != nil {
					return rep, err
				}
				rep.Cut = append(rep.Cut, fmt.Sprintf("%d bytes from segment %s at offset %d, kept as %s", cut, segName(n), d.Offset, aside))
				continue
			}
			rep.Damage = append(rep.Damage, d)
		}
		if end >= segHeaderSize {
			ctr.WMSegment, ctr.WMOffset = n, end
		}
	}
	// The objects of a record that waits for its dictionary cannot be
	// re-hashed; the old index still knows them: keep those entries.
	// A damaged old index keeps what reads before the damage and says so:
	// ignored, the objects past it silently lost their entries.
	//
	// The same walk compares what the old index names in each record
	// compressed with a dictionary with what it decodes to now. An
	// index that cannot be read (damaged, or the new empty one a
	// writer's open put in its place) compares nothing: see
	// docs/storage.md, Dictionaries, for what goes undetected then.
	if (len(waiting) > 0 || len(dictRecs) > 0) && s.tree != nil {
		var bad []string
		suspectOld := map[blockKey][]Key{} // what the old index names in each suspect record
		oldEntries := map[Key]entry{}
		err := s.tree.Snapshot().Ascend(Key{}, func(id Key, v []byte) bool {
			e, derr := decodeEntry(v)
			if derr != nil {
				bad = append(bad, fmt.Sprintf("the entry of %s does not decode (%v)", Short(id), derr))
				return true
			}
			bk := blockKey{e.Loc.Segment, e.Loc.Offset}
			if waiting[bk] {
				if _, ok := found[id]; !ok {
					found[id] = e
					rep.Carried++
				}
				return true
			}
			if w := dictRecs[bk]; w != nil {
				got, ok := dictMembers[memberLoc{seg: bk.seg, off: bk.off, member: uint16(e.Loc.Member)}]
				if !ok || e.Loc.Member < 0 || e.Loc.Member >= w.Members || got != id {
					w.Mismatched++
				}
				suspectOld[bk] = append(suspectOld[bk], id)
				oldEntries[id] = e
			}
			return true
		})
		if err != nil {
			bad = append(bad, fmt.Sprintf("the old index stops reading partway (%v)", err))
		}
		// A suspect record: what it decodes to is not taken in (ids of
		// wrongly decoded bytes, which nothing names), and the objects
		// the old index names in it keep their entries, so that nothing
		// (a repack) takes the record for garbage before the right
		// dictionary is back and a reindex re-hashes it.
		for bk, w := range dictRecs {
			if w.Mismatched == 0 {
				continue
			}
			for i := range w.Members {
				id := dictMembers[memberLoc{seg: bk.seg, off: bk.off, member: uint16(i)}]
				if e, ok := found[id]; ok && e.Loc.Segment == bk.seg && e.Loc.Offset == bk.off {
					delete(found, id)
				}
			}
			for _, id := range suspectOld[bk] {
				if _, ok := found[id]; !ok {
					found[id] = oldEntries[id]
					rep.WrongDictKept++
				}
			}
			rep.WrongDict = append(rep.WrongDict, *w)
		}
		sort.Slice(rep.WrongDict, func(i, j int) bool {
			a, b := rep.WrongDict[i], rep.WrongDict[j]
			return a.Segment < b.Segment || a.Segment == b.Segment && a.Offset < b.Offset
		})
		if len(bad) > 0 && len(waiting) > 0 {
			if len(bad) > 3 {
				bad = append(bad[:3], fmt.Sprintf("%d more", len(bad)-3))
			}
			rep.CarryErr = strings.Join(bad, "; ")
		}
	}
	// An inline entry keeps its object's bytes in the index: an object
	// whose record is gone (its segment lost, the record damaged) still
	// reads from there, and a rebuild from the segments alone dropped it.
	// Its bytes, re-hashed, are written again as a new record before the
	// rebuilt index takes its place, so that the object lives in a segment
	// as every object does (a later rebuild finds it there).
	if err := s.rewriteInlineOnly(found, &rep, &ctr); err != nil {
		return rep, err
	}
	ids := make([]Key, 0, len(found))
	for id, e := range found {
		ids = append(ids, id)
		ctr.add(e, +1)
	}
	sort.Slice(ids, func(i, j int) bool { return bytes.Compare(ids[i][:], ids[j][:]) < 0 })
	rep.Objects = len(ids)
	// The index must never point past what is durable: the newest segment
	// may hold records written but not yet synced.
	if len(segs) > 0 {
		if err := s.syncSegment(segs[len(segs)-1]); err != nil {
			return rep, s.fail(err)
		}
	}
	// From here until the rebuilt index is in place, the tree and the
	// counters disagree: a failure marks the store failed, so that no
	// later Sync commits the counters (and a watermark past the objects
	// written since the last commit) over a tree that lost their entries.
	s.tree.Discard() // everything pending is in the segments just scanned
	i := 0
	err = s.tree.Rebuild(func() (Key, []byte, bool) {
		if i == len(ids) {
			return Key{}, nil, false
		}
		id := ids[i]
		i++
		return id, found[id].encode(), true
	}, ctr.encode())
	if err != nil {
		return rep, s.fail(fmt.Errorf("write rebuilt index: %w", err))
	}
	s.ctr = ctr
	s.wmKnown = true
	s.dirty = false
	s.blocks.init(s.blocks.max)
	if s.active != nil {
		s.active.f.Close()
		s.active = nil
	}
	// The rebuilt index names the newest segment, synced above with its
	// name (syncSegment).
	if err := s.openActive(true); err != nil {
		return rep, err
	}
	// The rebuilt index is committed in place: a rebuild that moved the
	// index aside is done.
	return rep, s.unmarkRebuild()
}

// rewriteInlineOnly writes again, as new records, the objects the old
// index holds inline whose bytes no record found by the scan holds
// (found), their bytes re-hashed to their id first, and adds their new
// entries to found; ctr's watermark moves past them. They are synced
// before the rebuilt index is written: a crash before it is in place
// leaves the old index (which holds them) and records past its
// watermark, which the next writer's open takes in. Counted in
// rep.Rewritten. A walk of the old index that stops partway (a damaged
// node) keeps what it read before: what it could not read was not
// inline-readable either.
func (s *Store) rewriteInlineOnly(found map[Key]entry, rep *ReindexReport, ctr *counters) error {
	byKind := map[Kind][]*pendingObject{}
	now := s.opts.Clock.Now().Unix()
	_ = s.tree.Snapshot().Ascend(Key{}, func(id Key, v []byte) bool {
		if _, ok := found[id]; ok {
			return true
		}
		e, err := decodeEntry(v)
		if err != nil || !e.Inline || !e.Kind.Valid() || ID(e.Data) != id {
			return true
		}
		data := bytes.Clone(e.Data)
		byKind[e.Kind] = append(byKind[e.Kind], &pendingObject{id: id, kind: e.Kind, created: now, data: data})
		return true
	})
	if len(byKind) == 0 {
		return nil
	}
	// The active segment's file may have been cut (a torn tail, above)
	// under its handle: append where the file ends now.
	if s.active != nil {
		s.active.f.Close()
		s.active = nil
	}
	if err := s.openActive(false); err != nil {
		return err
	}
	kinds := make([]Kind, 0, len(byKind))
	for k := range byKind {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool { return kinds[i] < kinds[j] })
	for _, k := range kinds {
		objs := byKind[k]
		for len(objs) > 0 {
			n := min(len(objs), 1024)
			if err := s.writeBlock(k, objs[:n]); err != nil {
				return s.fail(fmt.Errorf("write again the objects only the old index held: %w", err))
			}
			for _, o := range objs[:n] {
				v, ok, err := s.tree.Get(o.id)
				if err != nil || !ok {
					return s.fail(fmt.Errorf("write again the objects only the old index held: object %s: no entry after its write (%v)", Short(o.id), err))
				}
				e, err := decodeEntry(v)
				if err != nil {
					return s.fail(err)
				}
				found[o.id] = e
				rep.Rewritten++
			}
			objs = objs[n:]
		}
	}
	if err := s.syncActive(); err != nil {
		return s.fail(err)
	}
	ctr.WMSegment, ctr.WMOffset = s.active.number, s.active.size
	return nil
}

func (s *Store) segmentBytes(segs []uint32) int64 {
	var total int64
	for _, n := range segs {
		if st, err := s.fs.Stat(s.segPath(n)); err == nil {
			total += st.Size()
		}
	}
	return total
}

func shortSegmentError(n uint32, size, from int64) error {
	return fmt.Errorf("segment %s is %d bytes but the index took in records up to offset %d: acknowledged data is missing; run `rook store reindex`", segName(n), size, from)
}

// CheckWatermark says whether the newest segment the index took records in
// is there and holds them all, as a writer's open checks (recover): one
// stat, no record read, so `rook doctor` can tell what a reader's open
// passes over in silence. A segment cut short (a copy or a restore that
// stopped early) makes every writer refuse the store; one gone makes the
// next writer start a new segment as if nothing were missing, its objects
// unreadable.
func (s *Store) CheckWatermark() error {
	n, off := s.ctr.WMSegment, s.ctr.WMOffset
	if !s.wmKnown || n == 0 || off <= segHeaderSize {
		return nil
	}
	st, err := s.fs.Stat(s.segPath(n))
	if errors.Is(err, fs.ErrNotExist) {
		segs, lerr := s.listSegments()
		if lerr != nil {
			return lerr
		}
		if len(segs) > 0 && segs[len(segs)-1] > n {
			return nil // a newer segment took over: gc or repack emptied this one
		}
		return fmt.Errorf("segment %s is missing, and the index took in records up to offset %d of it: put it back from a backup; if it is gone for good, `rook store reindex` makes the index forget its objects, but for the small ones it keeps a copy of, which it writes again (`rook store verify` then lists what the sessions lost)", segName(n), off)
	}
	if err != nil {
		return fmt.Errorf("segment %s: %w", segName(n), err)
	}
	if st.Size() < off {
		return shortSegmentError(n, st.Size(), off)
	}
	return nil
}

// loadRecent runs when a reader opens the store: it looks up, in memory,
// the records past the index's watermark. A writer makes records durable
// before it commits the index (Barrier), so the newest objects may be only
// there; a reader finds them as the writer's next open would: every whole
// record of the newest segment, past damage too (scanPastWatermark), up
// to a torn tail (a write in progress, or what a stopped writer left,
// which the next writer cuts). It changes nothing on disk.
func (s *Store) loadRecent() error {
	segs, err := s.listSegments()
	if err != nil {
		return err
	}
	s.recentMu.Lock()
	defer s.recentMu.Unlock()
	s.recentSeen = s.segmentsEnd(segs)
	s.recentTorn = nil
	if s.recentFrom == nil {
		s.recentFrom = map[uint32]recentLook{}
	}
	snap := s.tree.Snapshot()
	present := map[uint32]bool{}
	for _, n := range segs {
		present[n] = true
	}
	for n := range s.recentFrom {
		if !present[n] {
			// Removed (a failed rewrite's segment, given back): a
			// segment made with its number later is another file.
			s.forgetRecent(n, 0)
		}
	}
	for _, n := range segs {
		if n < s.ctr.WMSegment {
			continue
		}
		// Again (refreshRecent), from where the last look ended: what it
		// read is in recent already. Unless what it read is gone: a gc or
		// repack that failed gives back what it wrote past the watermark
		// (giveBack), cutting the segment it appended to back, where a
		// writer then appends anew, or removing a segment it made, whose
		// number a writer then takes again. Going on from the old end, the
		// look read the middle of the new records as a torn tail (or the
		// segment as shorter than it), and never found the objects a
		// Barrier made durable there: it looks from the watermark again.
		from := s.watermarkIn(n)
		sweep := false
		if look, again := s.recentFrom[n]; again {
			if s.lookStands(n, look) {
				from, sweep = look.from, look.pastBreak
			} else {
				s.forgetRecent(n, from)
			}
		}
		recs, kept, tail, err := s.scanRecordsFrom(n, from)
		if err != nil {
			// A segment shorter than the watermark, or unreadable: the
			// damage is the writer's and verify's to report. A reader
			// reads what the index points at.
			return nil
		}
		// What an earlier look found from here on is found again by this
		// one if it is still there: the records it took in after a break
		// (below) may have been a half-written record's body, whole now.
		// Only a look that took some in past a break left any here (it
		// ends before the break): the others, nothing to sweep.
		if sweep {
			for id, e := range s.recent {
				if e.Loc.Segment == n && e.Loc.Offset >= from {
					delete(s.recent, id)
				}
			}
		}
		// The next look starts after the last record before the first
		// break, never past a break: the records after it are taken in
		// for now (as the writer's open would), but a break may be a
		// record still being written whose body holds what reads as
		// records (a segment file put as an object), and a look that
		// started inside that body once it is whole would never find it.
		brk := int64(-1)
		if len(kept) > 0 {
			brk = kept[0].Offset
		} else if tail != nil {
			brk = tail.Offset
		}
		before := recs
		if brk >= 0 {
			for i, f := range recs {
				if f.off >= brk {
					before = recs[:i]
					break
				}
			}
		}
		pastBreak := len(before) < len(recs)
		if len(before) > 0 {
			last := before[len(before)-1]
			s.recentFrom[n] = recentLook{from: last.end, last: last.off, crc: last.crc, pastBreak: pastBreak}
		} else if look, again := s.recentFrom[n]; !again || look.from != from {
			s.recentFrom[n] = recentLook{from: from, pastBreak: pastBreak}
		} else {
			look.pastBreak = pastBreak
			s.recentFrom[n] = look
		}
		for _, f := range recs {
			if _, ok, err := snap.Get(f.id); err != nil {
				return s.indexErr(err)
			} else if ok {
				continue // the index's copy stands
			}
			if s.recent == nil {
				s.recent = map[Key]entry{}
			}
			s.recent[f.id] = f.e
		}
		if n != segs[len(segs)-1] {
			if len(kept) > 0 || tail != nil {
				break // a sealed segment damaged: the next writer refuses (recover)
			}
			continue
		}
		// The records after damage that whole records follow are read
		// (above), as the next writer's open takes them in (recover);
		// the torn tail is what it cuts: from its start to the
		// segment's end.
		if tail != nil {
			d := *tail
			d.Length, d.AtTail = max(s.recentSeen[1]-d.Offset, 0), true
			s.recentTorn = &d
		}
	}
	return nil
}

// recentLook is where a reader's last look past the watermark in a segment
// ended (from: the next look starts there) and the last whole record it
// read there (its offset and checksum; last 0: none), which must still be
// there for the next look to start at from (lookStands).
type recentLook struct {
	from, last int64
	crc        uint32
	// pastBreak: the look took in records after a break, which the next
	// look, starting before the break, sweeps from recent and reads again.
	pastBreak bool
}

// lookStands says whether what a reader's last look read in segment n is
// still there: the segment is not shorter than where the look ended, and
// the last record it read is where it was, with the same checksum (not
// records written in its place after a cut, nor another file of the
// number).
func (s *Store) lookStands(n uint32, look recentLook) bool {
	f, err := s.fs.OpenFile(s.segPath(n), os.O_RDONLY, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() < look.from {
		return false
	}
	if look.last < segHeaderSize {
		return true // it read no record: nothing to take back
	}
	hdr := make([]byte, recHeaderSize)
	if _, err := f.ReadAt(hdr, look.last); err != nil {
		return false
	}
	h, err := parseRecordHeader(hdr)
	return err == nil && h.CRC == look.crc && look.last+h.total() == look.from
}

// forgetRecent forgets what a reader's looks read in segment n from offset
// from on (s.recentMu held): the objects found there, and where the look
// ended.
func (s *Store) forgetRecent(n uint32, from int64) {
	delete(s.recentFrom, n)
	for id, e := range s.recent {
		if e.Loc.Segment == n && e.Loc.Offset >= from {
			delete(s.recent, id)
		}
	}
}

// TornTail is, for a reader, the torn tail its last look past the
// watermark met at the end of the newest segment: bytes no Sync
// acknowledged (a writer stopped, or one beside the reader is writing
// them), which the next writer's open copies into torn/ and cuts off
// (recover). Its Length is what that copy needs on the disk.
func (s *Store) TornTail() (Damage, bool) {
	s.recentMu.RLock()
	defer s.recentMu.RUnlock()
	if s.recentTorn == nil {
		return Damage{}, false
	}
	return *s.recentTorn, true
}

// TornTailRoom says what the next writer does with a torn tail of size
// bytes, and the room it needs for it: the same words for verify, doctor
// and a writer that found no room (TornTailError).
func TornTailRoom(size int64) string {
	return fmt.Sprintf("it copies its %d bytes into %s/ first, which needs %s free on the disk holding the store", size, TornDir, units.Bytes(size))
}

// recentEntries are a reader's objects past the watermark (loadRecent),
// in key order; a writer has none (its index holds them).
func (s *Store) recentEntries() []pastRecord {
	s.recentMu.RLock()
	out := make([]pastRecord, 0, len(s.recent))
	for id, e := range s.recent {
		out = append(out, pastRecord{id: id, e: e})
	}
	s.recentMu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return bytes.Compare(out[i].id[:], out[j].id[:]) < 0 })
	return out
}

// segmentsEnd says where the segments end: the newest one's number and
// size, and its modification time: a segment cut back (giveBack) and
// written again to the size it had is not the one a look read.
func (s *Store) segmentsEnd(segs []uint32) [3]int64 {
	if len(segs) == 0 {
		return [3]int64{}
	}
	n := segs[len(segs)-1]
	var size, mtime int64
	if st, err := s.fs.Stat(s.segPath(n)); err == nil {
		size, mtime = st.Size(), st.ModTime().UnixNano()
	}
	return [3]int64{int64(n), size, mtime}
}

// refreshRecent looks past the watermark again, for a reader that did not
// find an object, when the segments grew since it last looked. A writer
// running beside the reader makes records durable before it writes the
// events that name them, so an event this reader reads may name an object
// written after it opened: it is there now. It says whether it looked.
func (s *Store) refreshRecent() bool {
	segs, err := s.listSegments()
	if err != nil {
		return false
	}
	s.recentMu.RLock()
	same := s.segmentsEnd(segs) == s.recentSeen
	s.recentMu.RUnlock()
	if same {
		return false
	}
	return s.loadRecent() == nil
}

// pastRecord is an object of a record past the index's watermark.
type pastRecord struct {
	off, end int64 // the record's
	crc      uint32
	id       Key
	e        entry
}

// scanPastWatermark reads segment n from the index's watermark (its start
// when n is past the watermark's segment) and returns where it started,
// the objects of every whole record there, the damage that whole records
// follow (kept), and the torn tail (tail, nil when there is none): the
// first damage with no whole record after it, which runs to the segment's
// end (records only waiting for a dictionary are not damage). A torn
// write leaves no whole record after its break: records are appended in
// order, and a killed writer's last one is the one it was writing. A break
// that whole records follow is damage instead: records synced past the
// watermark (a Barrier acknowledged them, and event logs name them) with a
// byte of one damaged since, or a power cut that reordered unsynced
// writes (which cannot be told from it). Those records are taken in, and
// the damaged bytes left where they are. recover and loadRecent read the
// same records this way.
func (s *Store) scanPastWatermark(n uint32) (int64, []pastRecord, []Damage, *Damage, error) {
	from := s.watermarkIn(n)
	recs, kept, tail, err := s.scanRecordsFrom(n, from)
	return from, recs, kept, tail, err
}

// watermarkIn is where segment n's records past the watermark begin.
func (s *Store) watermarkIn(n uint32) int64 {
	if n == s.ctr.WMSegment {
		return s.ctr.WMOffset
	}
	return segHeaderSize
}

// scanRecordsFrom is scanPastWatermark from offset from of segment n (a
// record's start).
func (s *Store) scanRecordsFrom(n uint32, from int64) ([]pastRecord, []Damage, *Damage, error) {
	var recs []pastRecord
	damage, _, err := s.scanSegment(n, from, func(r *scannedRecord) error {
		return s.entriesOf(r, func(id Key, e entry) error {
			recs = append(recs, pastRecord{r.off, r.end, r.h.CRC, id, e})
			return nil
		})
	}, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	kept, tail := splitTornTail(realDamage(damage), lastWholeEnd(recs, damage))
	return recs, kept, tail, nil
}

// lastWholeEnd is where the last whole record of a scan ends (0: none):
// the last of recs, or a record waiting for its dictionary (in damage,
// NeedsDict) after it. Such a record is whole, its checksum holds (it is
// kept, never cut: wrongDictError), and the damage before it is not a
// torn tail either.
func lastWholeEnd(recs []pastRecord, damage []Damage) int64 {
	var end int64
	if len(recs) > 0 {
		end = recs[len(recs)-1].end
	}
	for _, d := range damage {
		if d.NeedsDict {
			end = max(end, d.Offset+d.Length)
		}
	}
	return end
}

// splitTornTail splits the damage of one segment (in offset order, records
// waiting for a dictionary left out) at end, where its last whole record
// (waiting for its dictionary or not) ends: the first damage at or past it
// starts the torn tail (tail), which runs to the segment's end; the damage
// before it has whole records after it and is kept.
func splitTornTail(damage []Damage, end int64) (kept []Damage, tail *Damage) {
	for i, d := range damage {
		if d.Offset >= end {
			t := d
			t.AtTail = true
			return damage[:i], &t
		}
	}
	return damage, nil
}
