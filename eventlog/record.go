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
	Body      [32]byte // the id of the body object in the store
	Label     string
	TokensIn  uint64
	TokensOut uint64
	// CumIn and CumOut are the session's token totals up to and including
	// this event: the last record gives a session's totals without a scan.
	CumIn, CumOut uint64
	// More marks an event whose group (an atomic pair) continues with the
	// next record; the last event of a group has it false.
	More bool
}

// MaxLabel is the longest label an event may carry.
const MaxLabel = 1024

// Log file layout. Part of the format: never change these; add a version.
//
// A log file starts with a 32-byte header:
//
//	magic "rookevt\x00" [8] | version u16 (=1) | reserved u16 | session id [16] | crc32c u32 of bytes [0,28)
//
// then records back to back:
//
//	crc32c u32 | uvarint n | body [n]
//
// crc32c covers the uvarint and the body. The body is
//
//	u8 version (=1) | u8 kind | u8 flags (bit 0: more of this group follows)
//	uvarint seq | uvarint time (unix ms) | body id [32]
//	uvarint tokens in | uvarint tokens out | uvarint cumulative in | uvarint cumulative out
//	uvarint label length | label bytes
//
// Records are small (under 1.2 KiB with the longest label), which is what lets
// a reader find a seq by bisecting byte offsets: from any offset, the next
// position where a whole record checks out is a record start.
const (
	logMagic      = "rookevt\x00"
	logVersion    = 1
	logHeaderSize = 32
	recVersion    = 1
	flagMore      = 1
	maxRecordSize = 4 + binary.MaxVarintLen32 + 3 + 5*binary.MaxVarintLen64 + 32 + binary.MaxVarintLen32 + MaxLabel + 16
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var (
	// ErrBadRecord: bytes that are not a whole, valid record.
	ErrBadRecord = errors.New("damaged event record")
	// ErrNewerLog: a log written by a newer rook.
	ErrNewerLog = errors.New("event log format is newer than this rook: upgrade rook")
)

func encodeHeader(id ID) []byte {
	b := make([]byte, logHeaderSize)
	copy(b, logMagic)
	binary.LittleEndian.PutUint16(b[8:], logVersion)
	copy(b[12:28], id[:])
	binary.LittleEndian.PutUint32(b[28:], crc32.Checksum(b[:28], castagnoli))
	return b
}

func parseHeader(b []byte) (ID, error) {
	var id ID
	if len(b) < logHeaderSize || string(b[:8]) != logMagic {
		return id, fmt.Errorf("%w: not a rook event log", ErrBadRecord)
	}
	if crc32.Checksum(b[:28], castagnoli) != binary.LittleEndian.Uint32(b[28:]) {
		return id, fmt.Errorf("%w: log header checksum mismatch", ErrBadRecord)
	}
	if v := binary.LittleEndian.Uint16(b[8:]); v > logVersion {
		return id, ErrNewerLog
	} else if v == 0 {
		return id, fmt.Errorf("%w: log version 0", ErrBadRecord)
	}
	if binary.LittleEndian.Uint16(b[10:]) != 0 {
		return id, fmt.Errorf("%w: log header reserved field set", ErrBadRecord)
	}
	copy(id[:], b[12:28])
	return id, nil
}

// appendRecord encodes ev onto dst.
func appendRecord(dst []byte, ev *Event) []byte {
	body := make([]byte, 0, 64+len(ev.Label))
	flags := byte(0)
	if ev.More {
		flags |= flagMore
	}
	body = append(body, recVersion, byte(ev.Kind), flags)
	body = binary.AppendUvarint(body, ev.Seq)
	body = binary.AppendUvarint(body, uint64(ev.Time.UnixMilli()))
	body = append(body, ev.Body[:]...)
	for _, v := range []uint64{ev.TokensIn, ev.TokensOut, ev.CumIn, ev.CumOut, uint64(len(ev.Label))} {
		body = binary.AppendUvarint(body, v)
	}
	body = append(body, ev.Label...)
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.AppendUvarint(dst, uint64(len(body)))
	dst = append(dst, body...)
	binary.LittleEndian.PutUint32(dst[start:], crc32.Checksum(dst[start+4:], castagnoli))
	return dst
}

// decodeRecord reads one record from the front of b and returns it with
// its length. It never panics.
func decodeRecord(b []byte) (Event, int, error) {
	var ev Event
	if len(b) < 5 {
		return ev, 0, fmt.Errorf("%w: truncated", ErrBadRecord)
	}
	n, w := binary.Uvarint(b[4:])
	if w <= 0 || n > maxRecordSize {
		return ev, 0, fmt.Errorf("%w: bad length", ErrBadRecord)
	}
	total := 4 + w + int(n)
	if total > len(b) {
		return ev, 0, fmt.Errorf("%w: truncated", ErrBadRecord)
	}
	if crc32.Checksum(b[4:total], castagnoli) != binary.LittleEndian.Uint32(b) {
		return ev, 0, fmt.Errorf("%w: checksum mismatch", ErrBadRecord)
	}
	body := b[4+w : total]
	if len(body) < 3+32 {
		return ev, 0, fmt.Errorf("%w: short body", ErrBadRecord)
	}
	if body[0] != recVersion {
		return ev, 0, fmt.Errorf("%w: record version %d (upgrade rook?)", ErrBadRecord, body[0])
	}
	ev.Kind = Kind(body[1])
	if !ev.Kind.Valid() {
		return ev, 0, fmt.Errorf("%w: unknown kind %d", ErrBadRecord, body[1])
	}
	if body[2]&^flagMore != 0 {
		return ev, 0, fmt.Errorf("%w: unknown flags %#x (upgrade rook?)", ErrBadRecord, body[2])
	}
	ev.More = body[2]&flagMore != 0
	p := 3
	next := func() (uint64, bool) {
		v, w := binary.Uvarint(body[p:])
		if w <= 0 {
			return 0, false
		}
		p += w
		return v, true
	}
	var ok bool
	if ev.Seq, ok = next(); !ok {
		return ev, 0, fmt.Errorf("%w: seq", ErrBadRecord)
	}
	ms, ok := next()
	if !ok || ms > 1<<62 {
		return ev, 0, fmt.Errorf("%w: time", ErrBadRecord)
	}
	ev.Time = time.UnixMilli(int64(ms))
	if len(body)-p < 32 {
		return ev, 0, fmt.Errorf("%w: body id", ErrBadRecord)
	}
	copy(ev.Body[:], body[p:p+32])
	p += 32
	var vals [5]uint64
	for i := range vals {
		if vals[i], ok = next(); !ok {
			return ev, 0, fmt.Errorf("%w: field %d", ErrBadRecord, i)
		}
	}
	ev.TokensIn, ev.TokensOut, ev.CumIn, ev.CumOut = vals[0], vals[1], vals[2], vals[3]
	if vals[4] > MaxLabel || int(vals[4]) != len(body)-p {
		return ev, 0, fmt.Errorf("%w: label length", ErrBadRecord)
	}
	ev.Label = string(body[p:])
	return ev, total, nil
}
