package cas

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// entry is an index value: where an object lives and what it is. Encoding
// (part of the format, docs/storage.md "Index entries"):
//
//	u8 version<<4 | flags (bit 0: inline) | u8 kind
//	uvarint size (logical) | uvarint stored (bytes attributed to it on disk)
//	uvarint segment | uvarint record offset | uvarint member index
//	inline only: the object's bytes, to the end of the value
//
// Every object lives in a segment record (the truth the index is rebuilt
// from); an inline entry also carries a copy of the bytes of a tiny object so
// reading it needs no segment I/O. What the record header already says (the
// codec, the dictionary, the time it was written) and what its block table
// says (where the member starts) is not repeated here: an entry is about
// ten bytes, and there is one per object.
type entry struct {
	Kind   Kind
	Inline bool
	Size   int64
	Stored int64
	Loc    location
	Data   []byte // inline bytes
}

// location names one object inside one segment record.
type location struct {
	Segment uint32
	Offset  int64 // of the record header within the segment file
	Member  int   // index within the block
}

const entryVersion = 2

// maxSegmentNumber is the largest segment number: a segment file name
// holds 8 decimal digits.
const maxSegmentNumber = 99_999_999

func (e entry) encode() []byte {
	b := make([]byte, 0, 16+len(e.Data))
	flags := byte(0)
	if e.Inline {
		flags |= 1
	}
	b = append(b, entryVersion<<4|flags, byte(e.Kind))
	b = binary.AppendUvarint(b, uint64(e.Size))
	b = binary.AppendUvarint(b, uint64(e.Stored))
	b = binary.AppendUvarint(b, uint64(e.Loc.Segment))
	b = binary.AppendUvarint(b, uint64(e.Loc.Offset))
	b = binary.AppendUvarint(b, uint64(e.Loc.Member))
	if e.Inline {
		b = append(b, e.Data...)
	}
	return b
}

var errBadEntry = errors.New("index entry unreadable")

func decodeEntry(b []byte) (entry, error) {
	var e entry
	if len(b) < 7 {
		return e, fmt.Errorf("%w: %d bytes", errBadEntry, len(b))
	}
	if v := b[0] >> 4; v != entryVersion {
		if v > entryVersion {
			return e, fmt.Errorf("%w: version %d (written by a newer rook? upgrade rook)", errBadEntry, v)
		}
		return e, fmt.Errorf("%w: version %d", errBadEntry, v)
	}
	if b[0]&0x0e != 0 {
		return e, fmt.Errorf("%w: unknown flags %#x", errBadEntry, b[0]&0x0f)
	}
	e.Kind = Kind(b[1])
	e.Inline = b[0]&1 != 0
	p := 2
	var vals [5]uint64
	for i := range vals {
		v, n := binary.Uvarint(b[p:])
		if n <= 0 {
			return e, fmt.Errorf("%w: field %d", errBadEntry, i)
		}
		vals[i] = v
		p += n
	}
	const maxI = 1 << 62
	for _, v := range vals {
		if v > maxI {
			return e, fmt.Errorf("%w: value out of range", errBadEntry)
		}
	}
	if vals[2] > 1<<32-1 || vals[4] > 1<<16-1 {
		return e, fmt.Errorf("%w: value out of range", errBadEntry)
	}
	e.Size = int64(vals[0])
	e.Stored = int64(vals[1])
	e.Loc = location{Segment: uint32(vals[2]), Offset: int64(vals[3]), Member: int(vals[4])}
	if e.Inline {
		e.Data = b[p:len(b):len(b)]
		if int64(len(e.Data)) != e.Size {
			return e, fmt.Errorf("%w: inline payload is %d bytes, entry says %d", errBadEntry, len(e.Data), e.Size)
		}
	} else if p != len(b) {
		return e, fmt.Errorf("%w: %d trailing bytes", errBadEntry, len(b)-p)
	}
	return e, nil
}

// counters are the store-wide totals `rook store stat` prints without
// scanning. They travel in the index meta page, so they commit atomically
// with the entries they count. Encoding: u8 version (=1), then uvarints:
// watermark segment, watermark offset, dedup hits, dedup bytes, then for
// each kind present: u8 kind, objects, inline, size, stored; a kind with no
// objects is omitted.
type counters struct {
	// Watermark is the end of the last segment record the index has taken
	// in: open scans the segments from here to catch up after a crash
	// between a segment sync and an index commit.
	WMSegment uint32
	WMOffset  int64
	// DedupHits and DedupBytes count puts of bytes the store already held:
	// what dedup saved.
	DedupHits  int64
	DedupBytes int64
	Kinds      map[Kind]*kindCounters
}

type kindCounters struct {
	Objects, Inline, Size, Stored int64
}

func (c *counters) kind(k Kind) *kindCounters {
	if c.Kinds == nil {
		c.Kinds = map[Kind]*kindCounters{}
	}
	kc := c.Kinds[k]
	if kc == nil {
		kc = &kindCounters{}
		c.Kinds[k] = kc
	}
	return kc
}

func (c *counters) add(e entry, sign int64) {
	kc := c.kind(e.Kind)
	kc.Objects += sign
	if e.Inline {
		kc.Inline += sign
	}
	kc.Size += sign * e.Size
	kc.Stored += sign * e.Stored
}

func (c *counters) encode() []byte {
	b := []byte{1}
	b = binary.AppendUvarint(b, uint64(c.WMSegment))
	b = binary.AppendUvarint(b, uint64(c.WMOffset))
	b = binary.AppendUvarint(b, uint64(c.DedupHits))
	b = binary.AppendUvarint(b, uint64(c.DedupBytes))
	for k := 0; k < 256; k++ {
		kc := c.Kinds[Kind(k)]
		if kc == nil || kc.Objects == 0 {
			continue
		}
		b = append(b, byte(k))
		for _, v := range []int64{kc.Objects, kc.Inline, kc.Size, kc.Stored} {
			b = binary.AppendUvarint(b, uint64(v))
		}
	}
	return b
}

func decodeCounters(b []byte) (counters, error) {
	c := counters{Kinds: map[Kind]*kindCounters{}}
	if len(b) == 0 {
		return c, nil // a new, empty index
	}
	if b[0] != 1 {
		return c, fmt.Errorf("index counters: version %d unknown (upgrade rook)", b[0])
	}
	p := 1
	next := func() (int64, error) {
		v, n := binary.Uvarint(b[p:])
		if n <= 0 || v > 1<<62 {
			return 0, errors.New("index counters unreadable")
		}
		p += n
		return int64(v), nil
	}
	var vals [4]int64
	for i := range vals {
		v, err := next()
		if err != nil {
			return c, err
		}
		vals[i] = v
	}
	if vals[0] > maxSegmentNumber {
		// Cut to 32 bits it named another segment (2^32+5 read as 5).
		return c, fmt.Errorf("index counters: watermark segment %d is past the largest segment number, %d", vals[0], maxSegmentNumber)
	}
	c.WMSegment, c.WMOffset, c.DedupHits, c.DedupBytes = uint32(vals[0]), vals[1], vals[2], vals[3]
	for p < len(b) {
		k := Kind(b[p])
		p++
		kc := c.kind(k)
		for _, dst := range []*int64{&kc.Objects, &kc.Inline, &kc.Size, &kc.Stored} {
			v, err := next()
			if err != nil {
				return c, err
			}
			*dst = v
		}
	}
	return c, nil
}
