package cas

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Segment file and record layout. These constants are part of the on-disk
// format (docs/storage.md, "Segments"): never change them; add a new version.
//
// A segment file starts with a 32-byte header:
//
//	+---------------+---------+----------+---------+------------+----------+---------+
//	| magic [8]     | ver u16 | rsvd u16 | seg u32 | created u64| rsvd u32 | crc u32 |
//	| "rookseg\x00" |   = 1   |    0     |         | unix nanos |    0     |         |
//	+---------------+---------+----------+---------+------------+----------+---------+
//
// crc is CRC-32C (Castagnoli) of the first 28 bytes. Records follow back to
// back, with no padding, so every byte of a segment belongs to the header or
// to exactly one record and any flipped byte breaks a checksum.
//
// A record is a 28-byte header and a payload:
//
//	+------+---------+---------+----------+--------+-----------+----------+---------+----------+----------+---------+
//	| "RK" | type u8 | kind u8 | codec u8 | flags  | count u16 | dict u32 | raw u32 | size u32 | time u32 | crc u32 |
//	+------+---------+---------+----------+--------+-----------+----------+---------+----------+----------+---------+
//	| payload: size bytes, which decode (codec, dict) to raw bytes                                                   |
//	+----------------------------------------------------------------------------------------------------------------+
//
// time is when the record was written (unix seconds); a rebuilt index takes
// its objects' creation times from it. crc is CRC-32C of header bytes
// [0,24) followed by the payload, so the
// codec and dictionary id are inside the checksum. The only record type is
// a block: count objects of one kind, whose decoded bytes are
//
//	uvarint len[0] ... uvarint len[count-1] | object 0 | object 1 | ...
//
// An object's id is the first 128 bits of the BLAKE3 of its bytes (index.KeySize); ids are not stored in the
// segment, a rebuild recomputes them.
const (
	segMagic        = "rookseg\x00"
	segVersion      = 1
	segHeaderSize   = 32
	recHeaderSize   = 28
	recTypeBlock    = 1
	maxRecordBlobSz = 1 << 31   // 2 GiB: the largest payload a record may hold
	maxBlockObjects = 1<<16 - 1 // the most objects a block's count can say
)

// Codecs, named in record headers and index entries. Part of the format:
// never reuse a number.
const (
	CodecRaw      uint8 = 0 // stored as is
	CodecZstd     uint8 = 1 // one zstd frame, no dictionary
	CodecZstdDict uint8 = 2 // one zstd frame compressed with dictionary `dict`
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Errors a segment reader classifies (compare with errors.Is). A torn tail is
// ErrTruncated or ErrBadRecord at the end of the newest segment; anywhere
// else they are corruption.
var (
	// ErrTruncated: the file ends inside a record.
	ErrTruncated = errors.New("record truncated")
	// ErrBadRecord: a header that is not a record, or a checksum mismatch.
	ErrBadRecord = errors.New("damaged record")
)

// recordHeader is the decoded fixed part of a record.
type recordHeader struct {
	Type  uint8
	Kind  Kind
	Codec uint8
	Flags uint8
	Count uint16
	Dict  uint32
	Raw   uint32
	Size  uint32
	Time  uint32
	CRC   uint32
}

func (h recordHeader) total() int64 { return recHeaderSize + int64(h.Size) }

func encodeRecordHeader(h recordHeader, payload []byte) []byte {
	b := make([]byte, recHeaderSize)
	putRecordHeader(b, h, payload)
	return b
}

// putRecordHeader writes the header of a record with payload into b, at
// least recHeaderSize long (a record built in place, payload behind it).
func putRecordHeader(b []byte, h recordHeader, payload []byte) {
	b[0], b[1] = 'R', 'K'
	b[2] = h.Type
	b[3] = uint8(h.Kind)
	b[4] = h.Codec
	b[5] = h.Flags
	binary.LittleEndian.PutUint16(b[6:], h.Count)
	binary.LittleEndian.PutUint32(b[8:], h.Dict)
	binary.LittleEndian.PutUint32(b[12:], h.Raw)
	binary.LittleEndian.PutUint32(b[16:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(b[20:], h.Time)
	c := crc32.Update(0, castagnoli, b[:24])
	c = crc32.Update(c, castagnoli, payload)
	binary.LittleEndian.PutUint32(b[24:], c)
}

// parseRecordHeader checks the parts of a header that can be checked
// without the payload.
func parseRecordHeader(b []byte) (recordHeader, error) {
	if len(b) < recHeaderSize {
		return recordHeader{}, ErrTruncated
	}
	if b[0] != 'R' || b[1] != 'K' {
		return recordHeader{}, fmt.Errorf("%w: no record magic", ErrBadRecord)
	}
	h := recordHeader{
		Type:  b[2],
		Kind:  Kind(b[3]),
		Codec: b[4],
		Flags: b[5],
		Count: binary.LittleEndian.Uint16(b[6:]),
		Dict:  binary.LittleEndian.Uint32(b[8:]),
		Raw:   binary.LittleEndian.Uint32(b[12:]),
		Size:  binary.LittleEndian.Uint32(b[16:]),
		Time:  binary.LittleEndian.Uint32(b[20:]),
		CRC:   binary.LittleEndian.Uint32(b[24:]),
	}
	if h.Type != recTypeBlock {
		return h, fmt.Errorf("%w: unknown record type %d", ErrBadRecord, h.Type)
	}
	if h.Size > maxRecordBlobSz || h.Raw > maxRecordBlobSz {
		return h, fmt.Errorf("%w: length %d out of range", ErrBadRecord, h.Size)
	}
	if h.Count == 0 {
		return h, fmt.Errorf("%w: empty block", ErrBadRecord)
	}
	return h, nil
}

// checkRecord verifies the checksum over header and payload.
func checkRecord(hdr, payload []byte, h recordHeader) error {
	c := crc32.Update(0, castagnoli, hdr[:24])
	c = crc32.Update(c, castagnoli, payload)
	if c != h.CRC {
		return fmt.Errorf("%w: checksum mismatch", ErrBadRecord)
	}
	return nil
}

// DecodeRecord decodes one whole record from b (header and payload) and
// returns its header, the decoded block members and the record's length. It
// never panics on arbitrary input; dicts resolves dictionary ids.
func DecodeRecord(b []byte, dec *decoder) (recordHeader, [][]byte, int, error) {
	h, err := parseRecordHeader(b)
	if err != nil {
		return h, nil, 0, err
	}
	if int64(len(b)) < h.total() {
		return h, nil, 0, ErrTruncated
	}
	payload := b[recHeaderSize:h.total()]
	if err := checkRecord(b, payload, h); err != nil {
		return h, nil, 0, err
	}
	raw, err := dec.decode(h, payload)
	if err != nil {
		return h, nil, 0, err
	}
	members, err := splitBlock(raw, int(h.Count))
	if err != nil {
		return h, nil, 0, err
	}
	return h, members, int(h.total()), nil
}

// encodeBlock lays out members as a block's decoded bytes.
func encodeBlock(members [][]byte) []byte {
	n := 0
	for _, m := range members {
		n += binary.MaxVarintLen32 + len(m)
	}
	out := make([]byte, 0, n)
	for _, m := range members {
		out = binary.AppendUvarint(out, uint64(len(m)))
	}
	for _, m := range members {
		out = append(out, m...)
	}
	return out
}

// blockTable returns each member's offset and length within a block's
// decoded bytes.
func blockTable(raw []byte, count int) (offs, lens []int, err error) {
	lens = make([]int, count)
	p := 0
	for i := range lens {
		v, n := binary.Uvarint(raw[p:])
		if n <= 0 {
			return nil, nil, fmt.Errorf("%w: block member table unreadable", ErrBadRecord)
		}
		if v > uint64(len(raw)) {
			return nil, nil, fmt.Errorf("%w: block member %d longer than the block", ErrBadRecord, i)
		}
		lens[i] = int(v)
		p += n
	}
	offs = make([]int, count)
	for i, l := range lens {
		if l > len(raw)-p {
			return nil, nil, fmt.Errorf("%w: block member %d runs past the block end", ErrBadRecord, i)
		}
		offs[i] = p
		p += l
	}
	if p != len(raw) {
		return nil, nil, fmt.Errorf("%w: %d stray bytes after the last block member", ErrBadRecord, len(raw)-p)
	}
	return offs, lens, nil
}

func splitBlock(raw []byte, count int) ([][]byte, error) {
	offs, lens, err := blockTable(raw, count)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, count)
	for i := range out {
		out[i] = raw[offs[i] : offs[i]+lens[i] : offs[i]+lens[i]]
	}
	return out, nil
}

type segmentHeader struct {
	Version uint16
	Number  uint32
	Created int64
}

func encodeSegmentHeader(h segmentHeader) []byte {
	b := make([]byte, segHeaderSize)
	copy(b, segMagic)
	binary.LittleEndian.PutUint16(b[8:], h.Version)
	binary.LittleEndian.PutUint32(b[12:], h.Number)
	binary.LittleEndian.PutUint64(b[16:], uint64(h.Created))
	binary.LittleEndian.PutUint32(b[28:], crc32.Checksum(b[:28], castagnoli))
	return b
}

// ErrNewerSegment: a segment written by a newer rook.
var ErrNewerSegment = errors.New("segment format is newer than this rook: upgrade rook")

func parseSegmentHeader(b []byte) (segmentHeader, error) {
	if len(b) < segHeaderSize {
		return segmentHeader{}, ErrTruncated
	}
	if string(b[:8]) != segMagic {
		return segmentHeader{}, fmt.Errorf("%w: not a rook segment (bad magic)", ErrBadRecord)
	}
	if crc32.Checksum(b[:28], castagnoli) != binary.LittleEndian.Uint32(b[28:]) {
		return segmentHeader{}, fmt.Errorf("%w: segment header checksum mismatch", ErrBadRecord)
	}
	h := segmentHeader{
		Version: binary.LittleEndian.Uint16(b[8:]),
		Number:  binary.LittleEndian.Uint32(b[12:]),
		Created: int64(binary.LittleEndian.Uint64(b[16:])),
	}
	if h.Version > segVersion {
		return h, ErrNewerSegment
	}
	if h.Version == 0 {
		return h, fmt.Errorf("%w: segment version 0", ErrBadRecord)
	}
	return h, nil
}
