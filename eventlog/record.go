package eventlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
	"time"
)

// Kind is what an event is. The codes are part of the on-disk format
// (docs/storage.md, "Event logs"): never renumber or reuse one. New record
// types are notes with versioned labels ("rook:timing:v1"), so this list
// rarely grows.
type Kind uint8

const (
	KindUser       Kind = 1
	KindAssistant  Kind = 2
	KindReasoning  Kind = 3
	KindToolCall   Kind = 4
	KindToolResult Kind = 5
	KindSkill      Kind = 6
	KindCheckpoint Kind = 7
	KindCompaction Kind = 8
	KindError      Kind = 9
	KindNote       Kind = 10
)

// Kinds lists every kind in code order.
var Kinds = []Kind{KindUser, KindAssistant, KindReasoning, KindToolCall, KindToolResult, KindSkill, KindCheckpoint, KindCompaction, KindError, KindNote}

var kindNames = [...]string{"", "user", "assistant", "reasoning", "tool-call", "tool-result", "skill", "checkpoint", "compaction", "error", "note"}

func (k Kind) String() string {
	if k.Valid() {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Valid reports whether this build knows k.
func (k Kind) Valid() bool { return k >= KindUser && k <= KindNote }

// Barrier reports whether appending an event of this kind is a durability
// barrier: checkpoints and compactions must never be lost once recorded.
func (k Kind) Barrier() bool { return k == KindCheckpoint || k == KindCompaction }

// ParseKind reads a kind name ("tool_result" is accepted for "tool-result").
func ParseKind(s string) (Kind, error) {
	s = strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "_", "-")
	for _, k := range Kinds {
		if kindNames[k] == s {
			return k, nil
		}
	}
	return 0, fmt.Errorf("unknown event kind %q: use one of %s", s, strings.Join(kindNames[1:], ", "))
}

// Event is one entry of a session's log.
type Event struct {
	Seq       uint64
	Time      time.Time // millisecond precision
	Kind      Kind
	Body      [16]byte // the id of the body object in the store
	Label     string
	TokensIn  uint64
	TokensOut uint64
	// More marks an event whose group (an atomic pair) continues with the
	// next record; the last event of a group has it false.
	More bool
}

// MaxLabel is the longest label an event may carry.
const MaxLabel = 1024

// Log file layout. Part of the format: never change these; add a version.
//
// A log file starts with a 40-byte header:
//
//	magic "rookevt\x00" [8] | version u16 (=2) | reserved u16 | session id [16]
//	| base time i64 (unix ms) | crc32c u32 of bytes [0,36)
//
// then records back to back:
//
//	crc32c u32 | uvarint n | body [n]
//
// crc32c covers the uvarint and the body. The body is
//
//	u8 head: kind (bits 0-3) | more of this group follows (bit 4) | has totals (bit 5)
//	uvarint seq | varint time (ms after the header's base time) | body id [16]
//	uvarint tokens in | uvarint tokens out
//	has totals only: uvarint cumulative in | uvarint cumulative out
//	uvarint label length | label bytes
//
// Every record whose seq is a multiple of cumEvery carries the session's
// token totals up to and including it: a session's totals are the last such
// record's plus the tokens of the few records after it, read without a scan
// of the log. The base time is the session's creation (a fork keeps its
// parent's, since it copies the parent's records).
//
// Records are small (under 1.2 KiB with the longest label), which is what lets
// a reader find a seq by bisecting byte offsets: from any offset, the next
// position where a whole record checks out is a record start.
const (
	logMagic      = "rookevt\x00"
	logVersion    = 2
	logHeaderSize = 40
	flagMore      = 1 << 4
	flagTotals    = 1 << 5
	cumEvery      = 64
	maxRecordSize = 4 + binary.MaxVarintLen32 + 1 + 6*binary.MaxVarintLen64 + 16 + binary.MaxVarintLen32 + MaxLabel
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var (
	// ErrBadRecord: bytes that are not a whole, valid record.
	ErrBadRecord = errors.New("damaged event record")
	// ErrNewerLog: a log written by a newer rook.
	ErrNewerLog = errors.New("event log format is newer than this rook: upgrade rook")
	// ErrLabelHoldsRecord: an append refused because the bytes of its
	// labels, with the bytes before them in the log, would hold a whole
	// record where none starts (see LabelRecordError).
	ErrLabelHoldsRecord = errors.New("a label would hold the bytes of a whole event record")
)

// logHeader is the decoded header of a log file.
type logHeader struct {
	id   ID
	base int64 // unix ms that record times count from
}

func encodeHeader(h logHeader) []byte {
	b := make([]byte, logHeaderSize)
	copy(b, logMagic)
	binary.LittleEndian.PutUint16(b[8:], logVersion)
	copy(b[12:28], h.id[:])
	binary.LittleEndian.PutUint64(b[28:], uint64(h.base))
	binary.LittleEndian.PutUint32(b[36:], crc32.Checksum(b[:36], castagnoli))
	return b
}

func parseHeader(b []byte) (logHeader, error) {
	var h logHeader
	if len(b) < logHeaderSize || string(b[:8]) != logMagic {
		return h, fmt.Errorf("%w: not a rook event log", ErrBadRecord)
	}
	if v := binary.LittleEndian.Uint16(b[8:]); v > logVersion {
		return h, ErrNewerLog
	} else if v < logVersion {
		return h, fmt.Errorf("%w: log format %d, written by a pre-release rook", ErrBadRecord, v)
	}
	if crc32.Checksum(b[:36], castagnoli) != binary.LittleEndian.Uint32(b[36:]) {
		return h, fmt.Errorf("%w: log header checksum mismatch", ErrBadRecord)
	}
	if binary.LittleEndian.Uint16(b[10:]) != 0 {
		return h, fmt.Errorf("%w: log header reserved field set", ErrBadRecord)
	}
	copy(h.id[:], b[12:28])
	h.base = int64(binary.LittleEndian.Uint64(b[28:]))
	if h.base < 0 || h.base > 1<<50 {
		return h, fmt.Errorf("%w: log header base time out of range", ErrBadRecord)
	}
	return h, nil
}

// record is an event as its log stores it: with the session's running
// totals when its seq is a multiple of cumEvery.
type record struct {
	Event
	CumIn, CumOut uint64
	n             int // encoded length: set by decodeRecord, not stored
}

func hasTotals(seq uint64) bool { return seq%cumEvery == 0 }

// appendRecord encodes rec onto dst; base is the log's base time.
func appendRecord(dst []byte, rec *record, base int64) []byte {
	ev := &rec.Event
	body := make([]byte, 0, 48+len(ev.Label))
	head := byte(ev.Kind)
	if ev.More {
		head |= flagMore
	}
	totals := hasTotals(ev.Seq)
	if totals {
		head |= flagTotals
	}
	body = append(body, head)
	body = binary.AppendUvarint(body, ev.Seq)
	body = binary.AppendVarint(body, ev.Time.UnixMilli()-base)
	body = append(body, ev.Body[:]...)
	body = binary.AppendUvarint(body, ev.TokensIn)
	body = binary.AppendUvarint(body, ev.TokensOut)
	if totals {
		body = binary.AppendUvarint(body, rec.CumIn)
		body = binary.AppendUvarint(body, rec.CumOut)
	}
	body = binary.AppendUvarint(body, uint64(len(ev.Label)))
	body = append(body, ev.Label...)
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.AppendUvarint(dst, uint64(len(body)))
	dst = append(dst, body...)
	binary.LittleEndian.PutUint32(dst[start:], crc32.Checksum(dst[start+4:], castagnoli))
	return dst
}

// minBody is the shortest body a record has: its head, a seq and a time
// of a byte each, its body id, and three one-byte values (tokens in and
// out, label length).
const minBody = 1 + 2 + 16 + 3

// headBits are the bits a record's head byte may have set.
const headBits = 0x0f | flagMore | flagTotals

// headKnown says whether a record's head byte has only the bits this rook
// knows, and a kind it knows.
func headKnown(head byte) bool {
	return head&^headBits == 0 && Kind(head&0x0f).Valid()
}

// The errors of bytes that are not a record at all, made once: a reader
// looking for where records start (nextRecord) meets one at nearly every
// offset it tries.
var (
	errTruncated = fmt.Errorf("%w: truncated", ErrBadRecord)
	errBadLength = fmt.Errorf("%w: bad length", ErrBadRecord)
	errChecksum  = fmt.Errorf("%w: checksum mismatch", ErrBadRecord)
)

// decodeRecord reads one record from the front of b and returns it with
// its length. It never panics.
func decodeRecord(b []byte, base int64) (record, int, error) {
	return decodeRecordLabel(b, base, true)
}

// decodeRecordLabel is decodeRecord; without label, the record's label is
// checked but left empty, not copied out (a reader that wants only seqs and
// tokens: a summary).
func decodeRecordLabel(b []byte, base int64, label bool) (record, int, error) {
	var rec record
	ev := &rec.Event
	if len(b) < 5 {
		return rec, 0, errTruncated
	}
	n, w := binary.Uvarint(b[4:])
	if w <= 0 || n > maxRecordSize {
		return rec, 0, errBadLength
	}
	total := 4 + w + int(n)
	if total > len(b) {
		return rec, 0, errTruncated
	}
	if crc32.Checksum(b[4:total], castagnoli) != binary.LittleEndian.Uint32(b) {
		return rec, 0, errChecksum
	}
	body := b[4+w : total]
	if len(body) < minBody {
		return rec, 0, fmt.Errorf("%w: short body", ErrBadRecord)
	}
	head := body[0]
	if !headKnown(head) {
		if head&^headBits != 0 {
			return rec, 0, fmt.Errorf("%w: unknown flags %#x (upgrade rook?)", ErrBadRecord, head)
		}
		return rec, 0, fmt.Errorf("%w: unknown kind %d", ErrBadRecord, head&0x0f)
	}
	ev.Kind = Kind(head & 0x0f)
	ev.More = head&flagMore != 0
	p := 1
	next := func() (uint64, bool) {
		v, w := binary.Uvarint(body[p:])
		if w <= 0 {
			return 0, false
		}
		p += w
		return v, true
	}
	var ok bool
	if ev.Seq, ok = next(); !ok || ev.Seq > 1<<62 {
		return rec, 0, fmt.Errorf("%w: seq", ErrBadRecord)
	}
	if (head&flagTotals != 0) != hasTotals(ev.Seq) {
		return rec, 0, fmt.Errorf("%w: totals flag does not match seq %d", ErrBadRecord, ev.Seq)
	}
	dt, w := binary.Varint(body[p:])
	if w <= 0 || dt > 1<<50 || dt < -(1<<50) {
		return rec, 0, fmt.Errorf("%w: time", ErrBadRecord)
	}
	p += w
	ev.Time = time.UnixMilli(base + dt).UTC() // UTC: --json gives times in UTC, whatever $TZ
	if len(body)-p < 16 {
		return rec, 0, fmt.Errorf("%w: body id", ErrBadRecord)
	}
	copy(ev.Body[:], body[p:p+16])
	p += 16
	nvals := 3
	if hasTotals(ev.Seq) {
		nvals = 5
	}
	var vals [5]uint64
	for i := range nvals {
		if vals[i], ok = next(); !ok {
			return rec, 0, fmt.Errorf("%w: field %d", ErrBadRecord, i)
		}
	}
	ev.TokensIn, ev.TokensOut = vals[0], vals[1]
	labelLen := vals[nvals-1]
	if nvals == 5 {
		rec.CumIn, rec.CumOut = vals[2], vals[3]
	}
	if labelLen > MaxLabel || int(labelLen) != len(body)-p {
		return rec, 0, fmt.Errorf("%w: label length", ErrBadRecord)
	}
	if label {
		ev.Label = string(body[p:])
	}
	rec.n = total
	return rec, total, nil
}

// maxCandidateSize is the most bytes decodeRecord takes for a record: a
// checksum, a length of up to 10 bytes (Uvarint takes one written longer
// than it needs) and a body of up to maxRecordSize. A record found where
// none starts ends at most this far from where it starts.
const maxCandidateSize = 4 + binary.MaxVarintLen64 + maxRecordSize

// recordWatch is what a writer keeps of a log's end to tell whether the
// records it is about to append would make the log hold a whole record,
// as readers check one (decodeRecord, the one check: reader.nextRecord
// takes such a place for a record start), where none starts: a label
// chosen so, alone or with the bytes before it. Readers find seqs by
// bisecting byte offsets, so no such place may be written.
//
// A place k is such a record only once its bytes are whole: its length,
// read at k+4, says where it ends. So each place's length is read once,
// when its bytes come; a place whose record ends inside the bytes written
// with it is decoded then, and one whose record ends past the log's end
// is kept (open) until an append's bytes reach its end: only then is it
// decoded. Places of true records are passed over: those of the records
// appended are known, and those before them end where the log did. An
// append costs a look at each of its bytes and at the open places (a few
// dozen), not at the up to maxCandidateSize bytes such a record can span
// before it (BenchmarkAppendShortEvents: reading every one of those at
// each append made a short event's append five times slower).
type recordWatch struct {
	tail []byte // the log's last bytes, up to maxCandidateSize, none of its header
	off  int64  // the offset in the log of tail[0]
	// read: places from here on have not had their length read (it
	// runs past the log's end).
	read int64
	open []openRecord
}

// openRecord is a place whose record, by its length, ends past the end
// of the log.
type openRecord struct{ start, end int64 }

// watchFrom is the watch of a log whose last bytes are tail, at offset
// off (not before the header's end): places whose records end inside
// tail are not looked at (the log holds them already; a log written
// before this check may hold such a place, and readers read it as they
// always have).
func watchFrom(tail []byte, off int64, base int64) recordWatch {
	w := recordWatch{off: off, read: off}
	var out recordWatch
	w.next(nil, tail, nil, base, false, &out)
	return out
}

// next looks at recs, records about to be appended at the log's end
// (each starting at one of starts, offsets in recs), for a place where a
// whole record ends inside them and none starts (when look). It returns
// the offset in recs where the first such record ends, or -1, and out
// gets the watch after recs; w is left as it was, for an append refused.
// scratch is a buffer to put the tail and recs together in, returned
// for the next call.
func (w *recordWatch) next(scratch, recs []byte, starts []int, base int64, look bool, out *recordWatch) (int, []byte) {
	b := append(append(scratch[:0], w.tail...), recs...)
	from := len(w.tail)
	end := w.off + int64(len(b)) // the log's end after recs
	open := out.open[:0]
	// decodeRecord, the readers' check, on a place whose record ends at
	// stop, inside recs.
	holds := func(k, stop int) bool {
		_, _, err := decodeRecordLabel(b[k:stop], base, false)
		return err == nil
	}
	for _, o := range w.open {
		if o.end > end {
			open = append(open, o)
			continue
		}
		k, stop := int(o.start-w.off), int(o.end-w.off)
		if look && holds(k, stop) {
			return stop - from, b
		}
	}
	read := max(w.read, end-4) // a place needs 5 bytes for its length
	next := 0
	for k := int(w.read - w.off); k+5 <= len(b); k++ {
		if next < len(starts) && from+starts[next] == k {
			next++
			continue
		}
		// The length, read inline when it takes one or two bytes (at
		// nearly every place): a call per place was most of the time.
		var n, vw int
		switch b0 := b[k+4]; {
		case b0 < 0x80:
			n, vw = int(b0), 1
		case k+5 < len(b) && b[k+5] < 0x80:
			n, vw = int(b0&0x7f)|int(b[k+5])<<7, 2
		default:
			v, l := binary.Uvarint(b[k+4:])
			if l == 0 {
				// Runs past the end: read again when more comes, with
				// every place after it (whose lengths, all bytes of 0x80
				// and more up to the end, run past it too).
				read = w.off + int64(k)
				k = len(b)
				continue
			}
			if l < 0 || v > maxRecordSize {
				continue
			}
			n, vw = int(v), l
		}
		// What decodeRecord refuses before it needs the bytes after
		// the head: a length out of bounds, a body too short for its
		// fields, a head it does not know. Most places stop here, and
		// no CRC is computed.
		if n > maxRecordSize || n < minBody {
			continue
		}
		stop := k + 4 + vw + n
		if stop <= from {
			continue // whole before recs: the log holds it already
		}
		if head := k + 4 + vw; head < len(b) && !headKnown(b[head]) {
			continue
		}
		if stop > len(b) {
			open = append(open, openRecord{w.off + int64(k), w.off + int64(stop)})
			continue
		}
		if look && holds(k, stop) {
			return stop - from, b
		}
	}
	keep := max(0, len(b)-maxCandidateSize)
	out.tail = append(out.tail[:0], b[keep:]...)
	out.off = w.off + int64(keep)
	out.read = read
	out.open = open
	return -1, b
}

// LabelRecordError is an append refused, nothing of it written, because
// the bytes of its records, with the log's before them, would hold a whole
// record where none starts (ErrLabelHoldsRecord): a label chosen so
// (--label, a name from an imported transcript), alone or with the label
// before it. Readers would take it for a record.
type LabelRecordError struct {
	Session ID
	// Index is the event of the append (0 for its first) whose record
	// those bytes end in: changing its label changes them.
	Index int
	Count int    // the events of the append
	Seq   uint64 // the seq the event was to have
}

func (e *LabelRecordError) Error() string {
	which := ""
	if e.Count > 1 {
		which = fmt.Sprintf(" (event %d of the %d appended together)", e.Index+1, e.Count)
	}
	return fmt.Sprintf("session %s: event #%d%s not appended: %v, alone or with the bytes before it in the log, and readers, which find events by their bytes, would take that for an event; nothing of this append was written: change its label (or the label of the event before it)", e.Session, e.Seq, which, ErrLabelHoldsRecord)
}

func (e *LabelRecordError) Unwrap() error { return ErrLabelHoldsRecord }
