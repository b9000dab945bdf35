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
	if len(body) < 1+2+16+3 {
		return rec, 0, fmt.Errorf("%w: short body", ErrBadRecord)
	}
	head := body[0]
	if head&^(0x0f|flagMore|flagTotals) != 0 {
		return rec, 0, fmt.Errorf("%w: unknown flags %#x (upgrade rook?)", ErrBadRecord, head)
	}
	ev.Kind = Kind(head & 0x0f)
	if !ev.Kind.Valid() {
		return rec, 0, fmt.Errorf("%w: unknown kind %d", ErrBadRecord, head&0x0f)
	}
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
