package cas

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/zstd"

	"github.com/rookhq/rook/dict"
)

// minCompress is the size below which a block is stored raw: zstd's frame
// header alone would eat most of what it saves.
const minCompress = 64

// encoder compresses blocks. One encoder per dictionary id, made on first
// use; zstd encoders are safe for concurrent EncodeAll.
type encoder struct {
	level zstd.EncoderLevel
	mu    sync.Mutex
	encs  map[uint32]*zstd.Encoder
	dicts dict.Set
	// compressed counts the raw bytes given to zstd, for tests: what an
	// incompressible object costs is what the encoder is made to read.
	compressed atomic.Int64
}

// encoderWindow is how far back a match may reach: an encoder holds a
// history of this size (and zeroes it, once per store opened for writing),
// 8 MiB at zstd's default. Records are at most BulkBlockSize raw bytes of
// small objects, or one bigger object alone.
const encoderWindow = 1 << 20

func newEncoder(level zstd.EncoderLevel, dicts dict.Set) *encoder {
	return &encoder{level: level, encs: map[uint32]*zstd.Encoder{}, dicts: dicts}
}

func (e *encoder) get(dictID uint32) (*zstd.Encoder, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if enc, ok := e.encs[dictID]; ok {
		return enc, nil
	}
	opts := []zstd.EOption{zstd.WithEncoderLevel(e.level), zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(false), zstd.WithWindowSize(encoderWindow)}
	if dictID != dict.None {
		d, err := e.dicts.Lookup(dictID)
		if err != nil {
			return nil, err
		}
		if dict.IsZstdDict(d) {
			opts = append(opts, zstd.WithEncoderDict(d))
		} else {
			opts = append(opts, zstd.WithEncoderDictRaw(dictID, d))
		}
	}
	enc, err := zstd.NewWriter(nil, opts...)
	if err != nil {
		return nil, err
	}
	e.encs[dictID] = enc
	return enc, nil
}

// encode compresses raw with the given dictionary (dict.None for none) and
// returns the codec actually used and dst with the stored bytes appended.
// A block that would not shrink is stored raw, so nothing is ever stored
// larger than it is. The frame carries no checksum of its own: the record
// CRC covers the stored bytes and the object hash covers the decoded ones.
func (e *encoder) encode(raw []byte, dictID uint32, dst []byte) (uint8, uint32, []byte, error) {
	codec, dictID, out, err := e.compress(raw, dictID, dst)
	if err == nil && codec == CodecRaw {
		out = append(out, raw...)
	}
	return codec, dictID, out, err
}

// compress is encode, except that a block stored raw is not appended to
// dst (out is dst as given): the writer writes the record header and the
// block itself, so that a big object that does not compress is not copied
// into a record buffer of its size first (one more copy of it held).
func (e *encoder) compress(raw []byte, dictID uint32, dst []byte) (uint8, uint32, []byte, error) {
	if len(raw) < minCompress {
		return CodecRaw, dict.None, dst, nil
	}
	enc, err := e.get(dictID)
	if err != nil {
		return 0, 0, nil, err
	}
	if len(raw) >= sampleMin && !e.samplePays(enc, raw) {
		return CodecRaw, dict.None, dst, nil
	}
	// Room for the whole frame, or the raw bytes instead, before it is
	// made: EncodeAll appends frame blocks of 128 KiB one by one, and a
	// big object's record, grown by append, was copied over and over (a
	// 100 MB object: about 590 MB allocated and moved).
	if need := len(dst) + enc.MaxEncodedSize(len(raw)); cap(dst) < need {
		dst = append(make([]byte, 0, need), dst...)
	}
	e.compressed.Add(int64(len(raw)))
	out := enc.EncodeAll(raw, dst)
	if len(out)-len(dst) >= len(raw) {
		return CodecRaw, dict.None, out[:len(dst)], nil
	}
	codec := CodecZstd
	if dictID != dict.None {
		codec = CodecZstdDict
	}
	return codec, dictID, out, nil
}

// A block of sampleMin bytes or more (one big object alone: bulk blocks
// of small objects stay under it) is first compressed in samples:
// sampleCount windows of sampleWindow bytes spread evenly over it, each
// compressed by the encoder the block would be (same level, same
// dictionary). If they shrink by less than 1/sampleGain, the block is
// stored raw without compressing the rest: 100 MB of random bytes cost
// about 0.4 s of zstd CPU and a 100 MB buffer, to be stored raw anyway.
//
// This is the choice "raw when compression does not pay" made on a sample
// (docs/storage.md, "Compression"): a block that does shrink as a whole
// but not in its samples (compressible parts between them, or matches
// reaching further back than a window) is stored raw, as valid a record
// as the compressed one would have been, bigger by what compression would
// have saved: usually little, but up to 32 times the compressed size for
// content repeating at a distance longer than a window (docs/storage.md
// gives the figures). A sample that pays sends
// the whole block to zstd, as before, to the same bytes.
const (
	sampleMin    = 4 << 20
	sampleWindow = 128 << 10 // one zstd block
	sampleCount  = 16
	sampleGain   = 64
)

// samplePays says whether raw's samples shrink by 1/sampleGain or more.
func (e *encoder) samplePays(enc *zstd.Encoder, raw []byte) bool {
	n := min(sampleCount, max(4, len(raw)/(1<<20)))
	// Room for one sample's frame, made once for the block's samples: not
	// from recordBufs, whose buffers a GC (or the race detector) drops, so
	// what a big put allocates stays what it is (codec_alloc_test.go).
	buf := make([]byte, 0, enc.MaxEncodedSize(sampleWindow))
	var in, out int
	for i := range n {
		start := i * (len(raw) - sampleWindow) / (n - 1)
		w := raw[start : start+sampleWindow]
		e.compressed.Add(int64(len(w)))
		in += len(w)
		buf = enc.EncodeAll(w, buf[:0])
		out += len(buf)
	}
	return out < in-in/sampleGain
}

// recordBufs holds the buffers records are built in before they go to
// the segment file: every block of an import is compressed into one, so
// a fresh buffer per block (half the raw size, zeroed) and a second copy
// of the payload behind the header are not paid for each record. A
// buffer belongs to one goroutine from getRecordBuf until putRecordBuf,
// and nothing may keep a slice of it after that.
var recordBufs = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// maxPooledRecord is the largest buffer kept for reuse: a lone big object
// makes a record as big as itself, which should not stay in memory.
const maxPooledRecord = 4 << 20

func getRecordBuf() *[]byte { return recordBufs.Get().(*[]byte) }

// putRecordBuf gives back the buffer b was taken as, grown to rec.
func putRecordBuf(b *[]byte, rec []byte) {
	if cap(rec) > maxPooledRecord {
		return
	}
	*b = rec[:0]
	recordBufs.Put(b)
}

// NeedsDictError: an intact record (its checksum holds) whose dictionary
// cannot be loaded. Its objects are not lost: they read again once the
// dictionary file is put back. Nothing may treat such a record as damage
// to cut, skip or collect.
type NeedsDictError struct {
	Dict uint32
	Err  error
}

func (e *NeedsDictError) Error() string {
	return fmt.Sprintf("record needs dictionary %d: %v", e.Dict, e.Err)
}

func (e *NeedsDictError) Unwrap() error { return e.Err }

// decoder decompresses record payloads, naming the dictionary from the
// record header: it never tries several.
type decoder struct {
	mu    sync.Mutex
	decs  map[uint32]*zstd.Decoder
	dicts dict.Set
}

func newDecoder(dicts dict.Set) *decoder {
	return &decoder{decs: map[uint32]*zstd.Decoder{}, dicts: dicts}
}

func (d *decoder) get(dictID uint32) (*zstd.Decoder, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if dec, ok := d.decs[dictID]; ok {
		return dec, nil
	}
	opts := []zstd.DOption{zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxRecordBlobSz)}
	if dictID != dict.None {
		b, err := d.dicts.Lookup(dictID)
		if err != nil {
			return nil, err
		}
		if dict.IsZstdDict(b) {
			opts = append(opts, zstd.WithDecoderDicts(b))
		} else {
			opts = append(opts, zstd.WithDecoderDictRaw(dictID, b))
		}
	}
	dec, err := zstd.NewReader(nil, opts...)
	if err != nil {
		return nil, err
	}
	d.decs[dictID] = dec
	return dec, nil
}

// decode turns a record payload back into the block's raw bytes and checks
// the length the header promised.
func (d *decoder) decode(h recordHeader, payload []byte) ([]byte, error) {
	var raw []byte
	switch h.Codec {
	case CodecRaw:
		if h.Dict != dict.None {
			return nil, fmt.Errorf("%w: raw record names dictionary %d", ErrBadRecord, h.Dict)
		}
		raw = payload
	case CodecZstd, CodecZstdDict:
		if (h.Codec == CodecZstd) != (h.Dict == dict.None) {
			return nil, fmt.Errorf("%w: codec %d with dictionary %d", ErrBadRecord, h.Codec, h.Dict)
		}
		dec, err := d.get(h.Dict)
		if err != nil {
			return nil, &NeedsDictError{Dict: h.Dict, Err: err}
		}
		// A frame that claims more than the header promised is refused
		// before it can make us allocate it.
		var fh zstd.Header
		if err := fh.Decode(payload); err != nil {
			return nil, fmt.Errorf("%w: zstd frame header: %v", ErrBadRecord, err)
		}
		if fh.HasFCS && fh.FrameContentSize != uint64(h.Raw) {
			return nil, fmt.Errorf("%w: zstd frame size does not match the record header", ErrBadRecord)
		}
		raw, err = dec.DecodeAll(payload, make([]byte, 0, min(h.Raw, 16<<20)))
		if err != nil {
			return nil, fmt.Errorf("%w: zstd: %v", ErrBadRecord, err)
		}
	default:
		return nil, fmt.Errorf("%w: unknown codec %d", ErrBadRecord, h.Codec)
	}
	if uint32(len(raw)) != h.Raw {
		return nil, fmt.Errorf("%w: decoded %d bytes, header says %d", ErrBadRecord, len(raw), h.Raw)
	}
	return raw, nil
}
