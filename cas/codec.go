package cas

import (
	"encoding/binary"
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
	// repeatWork counts the steps the repeat check took (repeatScan),
	// for tests: what it costs a block that does not compress.
	repeatWork atomic.Int64
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

// forget closes and drops the encoder of dictID, a dictionary dropped.
func (e *encoder) forget(dictID uint32) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if enc, ok := e.encs[dictID]; ok {
		enc.Close()
		delete(e.encs, dictID)
	}
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
// dictionary). If they shrink by less than 1/sampleGain and the repeat
// check below finds few repeats, the block is stored raw without
// compressing the rest: 100 MB of random bytes cost
// about 0.4 s of zstd CPU and a 100 MB buffer, to be stored raw anyway.
//
// This is the choice "raw when compression does not pay" made on a sample
// (docs/storage.md, "Compression"). Matches reaching further back than a
// sample window, up to the encoder's, the samples cannot see: a block
// whose samples do not pay is checked for those (repeatsPay) before it is
// stored raw. One that would still shrink as a whole (compressible parts
// between the samples and the probes, repeats the probes miss) is stored
// raw, as valid a record as the compressed one would have been, bigger
// by what compression would have saved. Samples or repeats that pay send
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
	if out < in-in/sampleGain {
		return true
	}
	return e.repeatsPay(raw)
}

// The samples see no match reaching further back than their own
// 128 KiB, while the encoder's reach is encoderWindow: a block of
// random runs repeated within that reach (16 MiB made of one 512 KiB run,
// repeated) is random in every sample yet compresses 32-fold whole. So a
// block whose samples do not pay is checked for repeats, cheaply: an
// 8-byte fingerprint every repeatStride bytes goes into a small hash
// table (the latest position for each), and a probe of repeatProbe bytes
// every repeatEvery bytes looks each of its positions up. A run repeated
// from d bytes back, d at most encoderWindow, has a fingerprinted
// position in its source for the probe to find, two in fact (one lost to
// a collision in the table does not lose the probe), whatever d is; a
// match found is checked byte for byte and extended over the probe. If
// repeats of repeatMin bytes or more cover 1/sampleGain of the probed
// bytes, the block is compressed whole, to the same bytes as a block
// whose samples pay.
//
// Work: a table of 64 KiB on the stack, one insert every 1 KiB, and per
// 128 KiB a 2 KiB probe whose bytes are each looked up and compared at
// most once, whatever the bytes: at most 1/30 of the block's length in
// steps, 1/60 on random bytes, none of it in zstd (TestRepeatCheckWork).
// zstd's faster levels reach whole runs only up to about 960 KiB back;
// runs repeated from nearer the window's end still halve (repeat_test.go).
const (
	repeatStride = 1 << 10
	repeatProbe  = 2 << 10
	repeatEvery  = 128 << 10
	repeatMin    = 64
	repeatBits   = 13 // table slots: 8 times the fingerprints in a window
)

// repeatsPay says whether repeats within the encoder's window cover
// 1/sampleGain or more of raw's probes.
func (e *encoder) repeatsPay(raw []byte) bool {
	matched, probed, work := repeatScan(raw)
	e.repeatWork.Add(int64(work))
	return probed > 0 && matched >= probed/sampleGain
}

// repeatScan probes raw for repeats (repeatsPay) and returns the bytes
// found repeated, the bytes probed, and the steps taken (fingerprints
// inserted, looked up, and bytes compared), for tests.
func repeatScan(raw []byte) (matched, probed, work int) {
	// A slot holds a fingerprint's latest position + 1 in its low 32
	// bits (0: none) and the fingerprint's high 32 bits, so that most
	// lookups that miss are told so without reading raw where it points.
	var table [1 << repeatBits]uint64
	next := 0 // the next position to fingerprint
	for p := repeatEvery; p+repeatProbe <= len(raw); p += repeatEvery {
		for ; next < p; next += repeatStride {
			fp := binary.LittleEndian.Uint64(raw[next:])
			table[(fp*0x9e3779b97f4a7c15)>>(64-repeatBits)] = fp>>32<<32 | uint64(next+1)
			work++
		}
		end := p + repeatProbe
		probed += repeatProbe
		floor := p // bytes below floor are compared already
		// Every position of the probe is looked up, its last 7 too
		// where raw goes on past the probe (their fingerprints reach
		// past it; a match is counted only up to its end):
		// the source of a run has a fingerprinted position every
		// repeatStride bytes, and a probe that looked up only those
		// positions whose 8 bytes fit in it reached one of them, not
		// two, in 7 alignments of 1024.
		for i := p; i < end && i+8 <= len(raw); i++ {
			work++
			fp := binary.LittleEndian.Uint64(raw[i:])
			e := table[(fp*0x9e3779b97f4a7c15)>>(64-repeatBits)]
			s := int(uint32(e)) - 1
			if e>>32 != fp>>32 || s < 0 || i-s > encoderWindow || binary.LittleEndian.Uint64(raw[s:]) != fp {
				continue
			}
			// Extend the match over the probe, both ways (not back
			// past the block's start nor into the last match), and
			// go on after it: the matches compared are disjoint, so a
			// probe costs at most repeatProbe lookups and repeatProbe
			// compares, whatever the bytes.
			lo, hi := i, min(i+8, end)
			for lo > floor && s > i-lo && raw[lo-1] == raw[s-(i-lo)-1] {
				lo--
			}
			for hi < end && raw[hi] == raw[s+(hi-i)] {
				hi++
			}
			work += hi - lo
			if hi-lo >= repeatMin {
				matched += hi - lo
			}
			floor, i = hi, hi-1
		}
	}
	return matched, probed, work
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
