package eventlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rookhq/rook/internal/vfs"
)

// reader reads one log file. Records are found by bisecting byte offsets:
// from any offset, the next place where a whole record checks out (length,
// CRC, version, kind) is a record start, and its seq says which way to go.
type reader struct {
	f    vfs.File
	id   ID
	base int64 // the header's base time
	size int64
	// held: the file's bytes [heldOff, heldOff+len(held)), read at once
	// (a short log whole, with its header; a long one's tail, holdTail)
	// and not again: a summary reads a short log's records up to three
	// times (its last, the totals record, the records after it).
	held    []byte
	heldOff int64
	// noLabels: the records read leave their labels out (decodeRecordLabel),
	// for a reader that does not show them.
	noLabels bool
}

// decode is decodeRecord as r reads records.
func (r *reader) decode(b []byte) (record, int, error) {
	return decodeRecordLabel(b, r.base, !r.noLabels)
}

// wholeLog is the size up to which newReader reads a log whole, in the
// read that takes its header: most sessions' logs are shorter.
const wholeLog = 64 << 10

func newReader(f vfs.File, id ID) (*reader, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	hdr := make([]byte, logHeaderSize)
	if st.Size() > logHeaderSize && st.Size() <= wholeLog {
		hdr = make([]byte, st.Size())
	}
	if _, err := f.ReadAt(hdr, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	h, err := parseHeader(hdr)
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", id, err)
	}
	if h.id != id {
		return nil, fmt.Errorf("session %s: %w: log header names session %s", id, ErrBadRecord, h.id)
	}
	r := &reader{f: f, id: id, base: h.base, size: st.Size()}
	if len(hdr) > logHeaderSize {
		r.held = hdr
	}
	return r, nil
}

// holdTail reads the last n bytes of the log at once, for the reads near
// its end that follow (a summary's) to take from memory.
func (r *reader) holdTail(n int64) error {
	off := max(0, r.size-n)
	if r.held != nil && r.heldOff <= off {
		return nil
	}
	b, err := r.chunk(off, int(r.size-off))
	if err != nil {
		return err
	}
	r.held, r.heldOff = b, off
	return nil
}

// chunk reads [off, off+n) clipped to the file.
func (r *reader) chunk(off int64, n int) ([]byte, error) {
	if off >= r.size {
		return nil, nil
	}
	n = int(min(int64(n), r.size-off))
	if off >= r.heldOff && off+int64(n) <= r.heldOff+int64(len(r.held)) {
		// Capped: a caller's append must not write over what is held.
		i := int(off - r.heldOff)
		return r.held[i : i+n : i+n], nil
	}
	b := make([]byte, n)
	if _, err := r.f.ReadAt(b, off); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b, nil
}

// nextRecord finds the first record starting at or after off and before
// limit.
func (r *reader) nextRecord(off, limit int64) (int64, Event, bool, error) {
	if off < logHeaderSize {
		off = logHeaderSize
	}
	b, err := r.chunk(off, int(limit-off)+maxRecordSize)
	if err != nil {
		return 0, Event{}, false, err
	}
	for i := 0; int64(i) < limit-off && i < len(b); i++ {
		if rec, _, err := r.decode(b[i:]); err == nil {
			return off + int64(i), rec.Event, true, nil
		}
	}
	return 0, Event{}, false, nil
}

// scan decodes records from off while they form a chain (each the next
// seq, back to back), calling fn until it returns false. It returns where
// the chain stopped and why (nil at a clean end of file).
func (r *reader) scan(off int64, fn func(off int64, rec record) bool) (int64, error) {
	const window = 64 << 10
	var buf []byte
	bufOff := off
	// The seq before, not a pointer to its record: that would put each
	// record on the heap.
	prev, started := uint64(0), false
	for off < r.size {
		if off+maxRecordSize > bufOff+int64(len(buf)) && bufOff+int64(len(buf)) < r.size {
			b, err := r.chunk(off, window)
			if err != nil {
				return off, err
			}
			buf, bufOff = b, off
		}
		rec, n, err := r.decode(buf[off-bufOff:])
		if err != nil {
			return off, err
		}
		if started && rec.Seq != prev+1 {
			return off, fmt.Errorf("%w: seq %d follows %d", ErrBadRecord, rec.Seq, prev)
		}
		if !fn(off, rec) {
			return off, nil
		}
		prev, started = rec.Seq, true
		off += int64(n)
	}
	return off, nil
}

// walk checks that the records run whole from the header to the end of
// the file, by their lengths and checksums only (a record whose checksum
// holds is as rook wrote it): ten times faster than decoding each. At the first that does not, it returns
// its offset, the seq it was to hold, and an ErrBadRecord.
func (r *reader) walk() (stop int64, at uint64, err error) {
	const window = 1 << 20
	var buf []byte
	bufOff, off, prev := int64(0), int64(logHeaderSize), int64(-1)
	bad := func(why string) (int64, uint64, error) {
		at := uint64(0)
		if prev >= 0 {
			b, err := r.chunk(prev, maxRecordSize)
			if err != nil {
				return off, 0, err
			}
			rec, _, err := r.decode(b)
			if err != nil {
				return off, 0, err
			}
			at = rec.Seq + 1
		}
		return off, at, fmt.Errorf("%w: %s", ErrBadRecord, why)
	}
	for off < r.size {
		if off+maxRecordSize > bufOff+int64(len(buf)) && bufOff+int64(len(buf)) < r.size {
			b, err := r.chunk(off, window)
			if err != nil {
				return off, 0, err
			}
			buf, bufOff = b, off
		}
		b := buf[off-bufOff:]
		if len(b) < 5 {
			return bad("truncated")
		}
		n, w := binary.Uvarint(b[4:])
		if w <= 0 || n > maxRecordSize {
			return bad("bad length")
		}
		total := 4 + w + int(n)
		if total > len(b) {
			return bad("truncated")
		}
		if crc32.Checksum(b[4:total], castagnoli) != binary.LittleEndian.Uint32(b) {
			return bad("checksum mismatch")
		}
		prev = off
		off += int64(total)
	}
	return off, 0, nil
}

// find returns the offset and record of seq.
func (r *reader) find(seq uint64) (int64, record, error) {
	lo, hi := int64(logHeaderSize), r.size
	for hi-lo > 16<<10 {
		mid := lo + (hi-lo)/2
		off, ev, ok, err := r.nextRecord(mid, min(hi, mid+2*maxRecordSize))
		if err != nil {
			return 0, record{}, err
		}
		switch {
		case !ok:
			hi = mid // no record there: damage or a torn tail; look lower
		case ev.Seq <= seq:
			lo = off
		default:
			hi = mid
		}
	}
	var found record
	at := int64(-1)
	broken := uint64(0) // the seq a break stands in place of: after the last read
	if lo > logHeaderSize {
		broken = math.MaxUint64 // not known until a record reads
	}
	stop, err := r.scan(lo, func(off int64, rec record) bool {
		if rec.Seq == seq {
			found, at = rec, off
		}
		broken = rec.Seq + 1
		return rec.Seq < seq
	})
	if at >= 0 {
		return at, found, nil
	}
	if err != nil && !errors.Is(err, ErrBadRecord) {
		return 0, record{}, err
	}
	if err != nil {
		// Stopped at a break before seq: a torn tail (seq past the
		// end), or damage with seq beyond it (last reads past it).
		return 0, record{}, &notReachedError{session: r.id, seq: seq, broken: broken, stop: stop, err: err}
	}
	return 0, record{}, fmt.Errorf("session %s has no event %d", r.id, seq)
}

// notReachedError is find stopped at a break before seq, at offset stop,
// where event broken was to be (math.MaxUint64: not known).
type notReachedError struct {
	session     ID
	seq, broken uint64
	stop        int64
	err         error
}

func (e *notReachedError) Error() string {
	at := "N"
	if e.broken != math.MaxUint64 {
		at = fmt.Sprint(e.broken)
	}
	return fmt.Sprintf("session %s: event %d not reached: %v at offset %d; %s", e.session, e.seq, e.err, e.stop, damagedHint(e.session, at))
}

func (e *notReachedError) Unwrap() error { return e.err }

// totals returns the session's token totals up to and including last: the
// totals of the newest record that carries them (at most cumEvery-1
// records back) plus the tokens of the records since.
func (r *reader) totals(last Event) (in, out uint64, err error) {
	from := last.Seq - last.Seq%cumEvery
	off, _, err := r.find(from)
	var nr *notReachedError
	if errors.As(err, &nr) && nr.broken != math.MaxUint64 {
		// Damage before the newest totals: said as damage past them is.
		return 0, 0, &DamagedTotalsError{Session: r.id, At: nr.broken, Last: last.Seq, stop: nr.stop}
	}
	if err != nil {
		return 0, 0, err
	}
	reached := false
	next := from // the first record not read back, when the scan stops short
	stop, err := r.scan(off, func(_ int64, rec record) bool {
		if rec.Seq == from {
			in, out = rec.CumIn, rec.CumOut
		} else {
			in, out = in+rec.TokensIn, out+rec.TokensOut
		}
		next = rec.Seq + 1
		reached = rec.Seq == last.Seq
		return !reached
	})
	if err != nil && !errors.Is(err, ErrBadRecord) {
		return 0, 0, err
	}
	if !reached {
		return 0, 0, &DamagedTotalsError{Session: r.id, At: next, Last: last.Seq, stop: stop}
	}
	return in, out, nil
}

// DamagedTotalsError is a session whose token totals cannot be counted:
// its event At does not read back, though its log goes on to event Last.
// Events [0, At) read (a reader may list them as the session's pages,
// as Show and History do); it unwraps to ErrBadRecord.
type DamagedTotalsError struct {
	Session  ID
	At, Last uint64
	// stop is the offset of the break where event At was to be: a
	// reader takes one past its torn floor as the session's end
	// (SummaryOf), as read does.
	stop int64
}

func (e *DamagedTotalsError) Error() string {
	// Where the damage is, as an append's refusal and verify say it: the
	// fork that keeps what reads is at that event.
	hint := noEventKept(e.Session)
	if e.At > 0 {
		// Not damagedHint's "pages before it read as usual": the
		// session's totals are what a listing of its pages needs.
		hint = fmt.Sprintf("`rook session fork %s --at %d` keeps the events before it in a new session, which reads whole", e.Session, e.At)
	}
	return fmt.Sprintf("session %s: token totals: %v: event %d does not read back (the log goes on to event %d): its log is damaged there, and its totals cannot be counted; %s", e.Session, ErrBadRecord, e.At, e.Last, hint)
}

func (e *DamagedTotalsError) Unwrap() error { return ErrBadRecord }

// DamagedAtError is a read that met damage in a session's log where event
// At was to be: the events before it (from where the read started) come
// with it. Err says so, and wraps ErrBadRecord.
type DamagedAtError struct {
	At  uint64
	Err error
}

func (e *DamagedAtError) Error() string { return e.Err.Error() }
func (e *DamagedAtError) Unwrap() error { return e.Err }

// DamagedAt is the event at which a read or a summary of a session met
// damage in its log, when err says it.
func DamagedAt(err error) (uint64, bool) {
	var d *DamagedAtError
	if errors.As(err, &d) {
		return d.At, true
	}
	var t *DamagedTotalsError
	if errors.As(err, &t) {
		return t.At, true
	}
	return 0, false
}

// read returns up to limit events from seq `from` on. A break at or after
// floor() may be a tail a writer tore (or is writing), and ends the
// session; one before it is damage (with no writer running or crashed,
// floor is past the end: a break anywhere is damage). floor is called
// only at a break.
func (r *reader) read(from uint64, limit int, floor func() int64) ([]Event, error) {
	if r.size <= logHeaderSize {
		return nil, nil
	}
	off := int64(logHeaderSize)
	if from > 0 {
		o, _, err := r.find(from)
		if err != nil {
			// Past the end: an empty page. Unless a record at or past
			// `from` is there beyond a break: then the page is damaged,
			// not empty.
			if last, ok, lerr := r.last(); lerr == nil && ok && last.Seq >= from && floor() > r.size {
				// Where the break is when the search for `from` met it
				// (it lies before `from`): the page and the fork are there.
				var nr *notReachedError
				if errors.As(err, &nr) && nr.broken != math.MaxUint64 && nr.broken < from {
					return nil, &DamagedAtError{At: nr.broken, Err: fmt.Errorf("session %s: %w: event %d does not read back, and a read from event %d meets that damage first, though the log goes on to event %d; %s", r.id, ErrBadRecord, nr.broken, from, last.Seq, damagedHint(r.id, fmt.Sprint(nr.broken)))}
				}
				return nil, fmt.Errorf("session %s: %w: event %d does not read back though the log goes on to event %d; %s", r.id, ErrBadRecord, from, last.Seq, damagedHint(r.id, "N"))
			}
			return nil, nil
		}
		off = o
	}
	var out []Event
	end := int64(0) // where the last record read ends
	stop, err := r.scan(off, func(at int64, rec record) bool {
		out = append(out, rec.Event)
		end = at + int64(rec.n)
		return len(out) < limit
	})
	if err != nil && !errors.Is(err, ErrBadRecord) {
		return nil, err
	}
	// A bad record past floor is a torn tail the next writer cuts (or
	// one the writer is writing); one before, damage, and the reader says
	// so.
	if err != nil && stop < floor() {
		at := from + uint64(len(out))
		return out, &DamagedAtError{At: at, Err: fmt.Errorf("session %s: %w at seq %d (offset %d): %s", r.id, err, at, stop, damagedHint(r.id, fmt.Sprint(at)))}
	}
	// A page that ends inside a group, where a tail may be torn: half a
	// group a crashed writer left (or one a writer is writing) is not
	// shown, as the next writer's open cuts it (repairTail): Append
	// promises all of a group or none after a crash.
	if n := len(out); n > 0 && out[n-1].More && floor() <= r.size {
		first, torn, err := r.tornGroup(out[n-1].Seq, end, floor())
		if err != nil {
			return nil, err
		}
		for torn && len(out) > 0 && out[len(out)-1].Seq >= first {
			out = out[:len(out)-1]
		}
	}
	return out, nil
}

// maxGroup is the most events a group holds, one Append's: 1 to 16.
const maxGroup = 16

// tornGroup says whether the group that the record of seq last (More
// set), which ends at offset end, is part of goes unfinished to the end
// of the log or to a break, and starts at or past floor: the half group
// a crashed writer tore, which the next writer's open cuts (a group
// starting before floor is damage to it, and is not cut), or one a writer
// is writing. first is the group's first seq.
func (r *reader) tornGroup(last uint64, end, floor int64) (first uint64, torn bool, err error) {
	ends := false
	if _, err := r.scan(end, func(_ int64, rec record) bool {
		ends = !rec.More
		return rec.More && rec.Seq < last+maxGroup
	}); err != nil && !errors.Is(err, ErrBadRecord) {
		return 0, false, err
	}
	if ends {
		return 0, false, nil
	}
	// The group began after the last record before last without More:
	// at most maxGroup-1 records back.
	from := last - min(last, maxGroup)
	off, _, err := r.find(from)
	if err != nil {
		if errors.Is(err, ErrBadRecord) {
			return 0, false, nil // damage before it: not a tear
		}
		return 0, false, err
	}
	start, reached := off, false
	first = from
	if _, err := r.scan(off, func(at int64, rec record) bool {
		if rec.Seq < last && !rec.More {
			start, first = at+int64(rec.n), rec.Seq+1
		}
		reached = rec.Seq == last
		return rec.Seq < last
	}); err != nil && !errors.Is(err, ErrBadRecord) {
		return 0, false, err
	}
	return first, reached && start >= floor, nil
}

// before returns the session's last event before seq at (ok false: none)
// as a reader sees a tail that may be torn from floor on: the event
// before at, or, when that is in a group torn there (tornGroup), the
// event before the group.
func (r *reader) before(at uint64, floor int64) (Event, bool, error) {
	for at > 0 {
		off, rec, err := r.find(at - 1)
		if err != nil {
			return Event{}, false, err
		}
		if !rec.More {
			return rec.Event, true, nil
		}
		first, torn, err := r.tornGroup(rec.Seq, off+int64(rec.n), floor)
		if err != nil {
			return Event{}, false, err
		}
		if !torn {
			return rec.Event, true, nil
		}
		at = first
	}
	return Event{}, false, nil
}

// damagedLogError is the error appends to a damaged log get: the damage,
// at offset off, where event at was to be, and what to do.
func damagedLogError(id ID, off int64, at uint64, why error) error {
	keep := fmt.Sprintf("the events before it read as usual, `rook session fork %s --at %d` goes on in a copy", id, at)
	if at == 0 {
		keep = noEventKept(id)
	}
	return fmt.Errorf("session %s: log damaged at offset %d (event %d on: %w): appends refused, since an event written after the damage could not be read back; %s, and `rook store verify` lists the damage", id, off, at, why, keep)
}

// damagedHint says what to do about a session whose log is damaged: its
// events before the damage can be kept (at: the first damaged seq, or
// "N"); nothing rebuilds a log.
func damagedHint(id ID, at string) string {
	if at == "0" {
		return "its log is damaged there; " + noEventKept(id)
	}
	return fmt.Sprintf("its log is damaged there; pages before it read as usual, and `rook session fork %s --at %s` keeps the events before it in a new session", id, at)
}

// noEventKept says what to do about a session damaged at its first
// event: nothing before the damage reads, so a fork there (--at 0) would
// be an empty session, and the events after it do not read either. What
// is left is to remove it, and to bring back one that was imported from
// a transcript by importing that again.
func noEventKept(id ID) string {
	return fmt.Sprintf("no event before the damage reads, so a fork would keep nothing: `rook session rm %s` removes the session, and one imported from a transcript comes back whole by importing that file again (`rook import claude-code FILE`, `rook import codex FILE`)", id)
}

// last returns the session's last whole event.
func (r *reader) last() (Event, bool, error) {
	last, ok, _, err := r.lastEnd()
	return last, ok, err
}

// tailBreak is where the records of a log stop short of its end: the
// offset of the bytes after the last whole record, and why the record
// there does not read (an ErrBadRecord).
type tailBreak struct {
	off int64
	why error
}

// lastEnd is last, with the break after the last whole record (nil when
// the log ends on a record): a torn tail, or damage when no writer may
// have torn it (a disk or a restore that cut the file). A log with bytes
// past its header and no whole record among them breaks at the header.
func (r *reader) lastEnd() (Event, bool, *tailBreak, error) {
	if r.size <= logHeaderSize {
		return Event{}, false, nil, nil
	}
	start := max(int64(logHeaderSize), r.size-2*maxRecordSize)
	off, _, ok, err := r.nextRecord(start, r.size)
	for err == nil && !ok && start > logHeaderSize {
		// A torn tail longer than the probe: step back.
		start = max(int64(logHeaderSize), start-tailWindow)
		off, _, ok, err = r.nextRecord(start, r.size)
	}
	if err != nil {
		return Event{}, false, nil, err
	}
	if !ok {
		b, err := r.chunk(logHeaderSize, maxRecordSize)
		if err != nil {
			return Event{}, false, nil, err
		}
		_, _, why := r.decode(b)
		if why == nil {
			why = fmt.Errorf("%w: no whole record", ErrBadRecord)
		}
		return Event{}, false, &tailBreak{off: logHeaderSize, why: why}, nil
	}
	var last Event
	var brk *tailBreak
	for {
		stop, err := r.scan(off, func(_ int64, rec record) bool { last = rec.Event; return true })
		if err == nil {
			brk = nil
			break
		}
		if !errors.Is(err, ErrBadRecord) {
			return Event{}, false, nil, err
		}
		brk = &tailBreak{off: stop, why: err}
		// A break with whole records after it is damage, not the end:
		// the log's last record is further on. (Probing from the end
		// finds it in a long log; in a short one the probe starts at
		// the header, and stopping at the break made a damaged session
		// read as one that ends there.)
		next, _, ok, err := r.nextRecord(stop+1, r.size)
		if err != nil {
			return Event{}, false, nil, err
		}
		if !ok {
			break
		}
		off = next
	}
	return last, true, brk, nil
}

// recoverAfterCrash runs when a writer opens the logs and finds the dirty
// marker: the previous writer did not close. Every log it may have
// appended to (modified since the marker) has its tail checked: from a
// record well before the end, the chain of records must run to the end of
// the file and end outside a group. What does not (a torn write, records
// that reached the disk out of order, half a group) is cut, its bytes kept
// in the torn directory; what does is synced, as a killed writer may have
// left it unsynced. Damage further back than a barrier's writes is
// corruption, not a crash: it is reported, and the session refuses appends.
func (l *Log) recoverAfterCrash() error {
	mpath := filepath.Join(l.dir, dirtyMarker)
	mst, err := l.fs.Stat(mpath)
	if err != nil {
		return nil // clean shutdown (or never written)
	}
	durable, tags, forks := readMarker(l.fs, mpath)
	ids, err := l.IDs()
	if err != nil {
		return err
	}
	for _, id := range ids {
		lst, err := l.fs.Stat(l.logPath(id))
		if err != nil {
			continue
		}
		if lst.ModTime().Before(mst.ModTime().Add(-mtimeSlack)) {
			continue // untouched since the last writer started
		}
		if err := l.repairTail(id, durable[id]); err != nil {
			return err
		}
	}
	if err := l.removeOrphanLogs(durable, tags, forks); err != nil {
		return err
	}
	if len(tags) == 0 && len(forks) == 0 {
		return nil
	}
	// The tags and the forks' records are spent: a log they name now has
	// its metadata (the session was made, rebuilt, or its removal did not
	// get that far) or is gone (or is kept, named in a notice). Left in
	// the marker (it stays until this writer closes after a barrier), a
	// tag would make a later recovery remove the log of a session
	// acknowledged since, whose .meta was lost otherwise, and a record
	// bring back metadata changed since. The sizes stay: readers still
	// tell tears from damage by them.
	b, err := vfs.ReadFile(l.fs, mpath)
	if err != nil {
		return err
	}
	var kept strings.Builder
	for i, line := range strings.SplitAfter(string(b), "\n") {
		if f := strings.Fields(line); i > 0 && ((len(f) == 3 && (f[1] == tagNew || f[1] == tagRemoving)) || (len(f) == 4 && f[1] == tagFork)) {
			continue
		}
		kept.WriteString(line)
	}
	if err := l.fs.WriteFileAtomic(mpath, []byte(kept.String()), 0o600); err != nil {
		return fmt.Errorf("clear spent tags from the event log's dirty marker (%s): %w", mpath, err)
	}
	return nil
}

// markedSizes reads the sizes the dirty marker gives (see mark): each
// session's log was durable, and its events acknowledged, up to there when
// the crashed writer first wrote to it. A line whose checksum does not
// hold (torn or garbled by the crash: lines are appended) is passed over,
// as is one of an older rook (no checksum); a marker without lines (a bulk
// Create's) or unreadable gives none.
func markedSizes(fsys vfs.FS, path string) map[ID]int64 {
	sizes, _, _ := readMarker(fsys, path)
	return sizes
}

// readMarker reads the dirty marker: the sizes it gives (markedSizes),
// the sessions it tags (markerTag; "rm" over "new"), and the metadata of
// the forks it records (markerFork), with the same checks.
func readMarker(fsys vfs.FS, path string) (map[ID]int64, map[ID]string, map[ID]Meta) {
	b, err := vfs.ReadFile(fsys, path)
	if err != nil {
		return nil, nil, nil
	}
	return parseMarker(b)
}

// parseMarker decodes the dirty marker's bytes (see readMarker): its
// first line is the writer's, each further one a size, a tag or a fork's
// record.
func parseMarker(b []byte) (map[ID]int64, map[ID]string, map[ID]Meta) {
	out, tags, forks := map[ID]int64{}, map[ID]string{}, map[ID]Meta{}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) == 4 && f[1] == tagFork {
			if m, ok := parseMarkerFork(f, line); ok {
				forks[m.ID] = m
			}
			continue
		}
		if len(f) != 3 {
			continue
		}
		id, err := ParseID(f[0])
		if err != nil {
			continue
		}
		if (f[1] == tagNew || f[1] == tagRemoving) && markerTag(id, f[1]) == line+"\n" {
			if tags[id] != tagRemoving {
				tags[id] = f[1]
			}
			continue
		}
		size, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || size < logHeaderSize || markerLine(id, size) != line+"\n" {
			continue
		}
		out[id] = size
	}
	return out, tags, forks
}

// repairTail checks the tail of the log of id, which a crashed writer may
// have torn past durable (its size when that writer first wrote to it; 0:
// not known, tailWindow alone bounds the tear).
func (l *Log) repairTail(id ID, durable int64) error {
	f, err := l.fs.OpenFile(l.logPath(id), os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := newReader(f, id)
	if errors.Is(err, ErrBadRecord) {
		// A header zeroed or cut by the crash, or overwritten: that
		// session alone is damaged. Failing the open for it would leave
		// no writer able to touch the store, `rook session rm` of it
		// (which its HeaderError names) included.
		herr := &HeaderError{ID: id, Path: l.logPath(id), Err: err}
		l.sessions[id] = &writerState{damaged: herr}
		l.Notices = append(l.Notices, herr.Error())
		return nil
	}
	if err != nil {
		return err
	}
	if r.size <= logHeaderSize {
		return nil
	}
	start := int64(logHeaderSize)
	if r.size-start > 2*tailWindow {
		off, _, ok, err := r.nextRecord(r.size-2*tailWindow, r.size-tailWindow)
		if err != nil {
			return err
		}
		if ok {
			start = off
		}
	}
	groupStart, groupSeq := int64(-1), uint64(0)
	var last *Event
	stop, serr := r.scan(start, func(off int64, rec record) bool {
		if groupStart < 0 {
			groupStart, groupSeq = off, rec.Seq
		}
		if !rec.More {
			groupStart = -1
		}
		last = &rec.Event
		return true
	})
	if serr != nil && !errors.Is(serr, ErrBadRecord) {
		return serr // a read that failed is not a torn tail
	}
	cut := stop
	if groupStart >= 0 {
		cut = groupStart // a group the crash left half-written
	}
	if cut >= r.size && r.size < durable {
		// Whole, but shorter than it was durable: no crash takes back
		// what was synced. Acknowledged events are gone: damage.
		at := uint64(0)
		if last != nil {
			at = last.Seq + 1
		}
		err := damagedLogError(id, r.size, at, fmt.Errorf("%w: the log ends %d bytes short of what was durable before the crash", ErrBadRecord, durable-r.size))
		l.sessions[id] = &writerState{damaged: err}
		l.Notices = append(l.Notices, err.Error())
		return nil
	}
	if cut >= r.size {
		// Whole, so kept; but not known to be synced: a killed (not
		// powered-off) writer leaves its last records in the page cache.
		// This writer may describe them in metadata (an import's
		// StageMeta of how much of its source a session holds) or append
		// after them, so they are made durable first, as the store does
		// with the segment records its open takes in.
		return f.Sync()
	}
	if cut < r.size-tailWindow || cut < durable {
		// Before anything the crash can have torn: acknowledged events
		// are damaged. Nothing is cut (that would drop them); the log
		// stays as it is, for the events before to read and fork.
		at := uint64(0)
		if last != nil {
			at = last.Seq + 1
		}
		why := serr
		if cut == groupStart {
			at, why = groupSeq, errors.New("a group that does not end")
		}
		err := damagedLogError(id, cut, at, why)
		l.sessions[id] = &writerState{damaged: err}
		l.Notices = append(l.Notices, err.Error())
		return nil
	}
	tail, err := r.chunk(cut, int(r.size-cut))
	if err != nil {
		return err
	}
	aside := ""
	if l.opts.TornDir != "" {
		if err := l.fs.MkdirAll(l.opts.TornDir, 0o700); err != nil {
			return err
		}
		aside = filepath.Join(l.opts.TornDir, fmt.Sprintf("%s.log.%d.%d", id, cut, l.opts.Clock.Now().UnixNano()))
		if err := l.fs.WriteFileAtomic(aside, tail, 0o600); err != nil {
			return fmt.Errorf("keep torn tail aside: %w", err)
		}
	}
	if err := f.Truncate(cut); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	why := "torn"
	if serr == nil {
		why = "half an event group"
	}
	l.Notices = append(l.Notices, fmt.Sprintf("session %s: cut %d bytes of unacknowledged events from its log (%s; kept as %s)", id, len(tail), why, strings.TrimSpace(aside)))
	return nil
}
