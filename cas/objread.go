package cas

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"

	"github.com/klauspost/compress/zstd"
	"github.com/zeebo/blake3"

	"github.com/rookhq/rook/dict"
	"github.com/rookhq/rook/internal/vfs"
)

// rangedMin is the object size from which OpenObject reads an object alone
// in its record in parts (ReadRange) instead of reading the record whole:
// below it a packed block is at most a couple of MiB, decoded once into
// the block cache.
const rangedMin = streamMin

// ObjectReader reads parts of one object (OpenObject). An object alone in
// a big record is read from its segment a range at a time, so a view that
// shows the first KiB of a 100 MB tool output neither holds nor decodes
// the rest; any other object (inline, packed with others, not yet
// written, or small) is read whole and verified when opened, and its
// ranges are served from memory.
//
// What a range of an object read from its record checks (docs/storage.md,
// "Reading part of an object"): before any of the record is decoded, its
// CRC-32C over the whole stored payload, its codec and dictionary, and
// that the block's length table says the size the index does. What it
// cannot check is the object's BLAKE3 hash, which covers every byte: a
// range is only known to be the object's bytes as far as the CRC says
// they are the bytes that were written. WriteTo and ReadAll, which read
// every byte, check the hash too.
//
// An ObjectReader is not safe for concurrent use. It holds no file of its
// own: the store's segment handles stay the store's. A gc or repack of
// the same Store that removes the segment closes the handle it reads
// from; its next read then finds the object where the index says it is
// now (moved), as a reader's Get does.
type ObjectReader struct {
	s    *Store
	id   Key
	kind Kind
	size int64

	// data is the whole object, already verified: every object not read
	// in ranges. shared: it is a pending object's, never handed out.
	data   []byte
	full   bool
	shared bool

	// Of an object alone in its record.
	f       vfs.File
	e       entry
	h       recordHeader
	hdr     []byte
	lenSize int64 // bytes of the block's length table (the object's uvarint length)
	checked bool  // the record's CRC held

	// reuse, when not nil, is what to read with, kept across the objects
	// of one pass (readReuse).
	reuse *readReuse
}

// readReuse is what the ranged reads of one pass over many objects
// (training's sample heads) read with, made once for the pass instead of
// for each object: the streaming decoders, one per dictionary (each holds
// a window of history, a MiB or more), reset for each record, and the
// buffers of the CRC's pass and of the decoded block. Not safe for
// concurrent use; close it when the pass is done.
type readReuse struct {
	decs map[uint32]*zstd.Decoder
	buf  []byte
	br   *bufio.Reader
}

func newReadReuse() *readReuse {
	return &readReuse{decs: map[uint32]*zstd.Decoder{}}
}

// decoder is the decoder for dictionary dictID (made with opts the first
// time), reading src.
func (u *readReuse) decoder(dictID uint32, src io.Reader, opts []zstd.DOption) (*zstd.Decoder, error) {
	if zr, ok := u.decs[dictID]; ok {
		return zr, zr.Reset(src)
	}
	zr, err := zstd.NewReader(src, opts...)
	if err != nil {
		return nil, err
	}
	u.decs[dictID] = zr
	return zr, nil
}

func (u *readReuse) close() {
	for _, zr := range u.decs {
		zr.Close()
	}
}

// copyBuf is a buffer of 64 KiB for io.CopyBuffer: u's, or a new one.
func (u *readReuse) copyBuf() []byte {
	if u == nil {
		return make([]byte, 64<<10)
	}
	if u.buf == nil {
		u.buf = make([]byte, 64<<10)
	}
	return u.buf
}

// reader is a reader of 64 KiB's buffer over raw: u's, or a new one.
func (u *readReuse) reader(raw io.Reader) *bufio.Reader {
	if u == nil {
		return bufio.NewReaderSize(raw, 64<<10)
	}
	if u.br == nil {
		u.br = bufio.NewReaderSize(raw, 64<<10)
	} else {
		u.br.Reset(raw)
	}
	return u.br
}

// OpenObject opens an object for reading in ranges. It reads the index
// entry and, for an object alone in a big record, the record's header; the
// record's CRC is checked at the first read.
func (s *Store) OpenObject(id Key) (*ObjectReader, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	if o, ok := s.pending[id]; ok {
		r := &ObjectReader{s: s, id: id, kind: o.kind, size: int64(len(o.data)), data: o.data, full: true, shared: true}
		s.mu.Unlock()
		return r, nil
	}
	s.mu.Unlock()
	e, ok, err := s.lookup(id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &NotFoundError{Prefix: hex.EncodeToString(id[:])}
	}
	if !e.Inline && e.Size >= rangedMin {
		if r := s.openAlone(id, e); r != nil {
			return r, nil
		}
	}
	b, kind, err := s.GetKind(id)
	if err != nil {
		return nil, err
	}
	return &ObjectReader{s: s, id: id, kind: kind, size: int64(len(b)), data: b, full: true}, nil
}

// openAlone is the reader of an object alone in its record, nil when it is
// not (a packed block) or its record cannot even be opened: Get then reads
// it, with Get's errors and the stale-view retry of a reader.
func (s *Store) openAlone(id Key, e entry) *ObjectReader {
	f, err := s.files.get(e.Loc.Segment)
	if err != nil {
		return nil
	}
	hdr := make([]byte, recHeaderSize)
	if _, err := f.ReadAt(hdr, e.Loc.Offset); err != nil {
		return nil
	}
	h, err := parseRecordHeader(hdr)
	if err != nil || h.Count != 1 || h.Kind != e.Kind || e.Loc.Member != 0 {
		return nil
	}
	return &ObjectReader{s: s, id: id, kind: e.Kind, size: e.Size, f: f, e: e, h: h, hdr: hdr,
		lenSize: int64(binary.PutUvarint(make([]byte, binary.MaxVarintLen64), uint64(e.Size)))}
}

// moved is whether a read that failed with err is to be tried again,
// or the error to return instead. A read that failed on a segment handle
// the store closed (a gc or repack of this Store removed or moved the
// segment since the reader opened it, or the store was closed) was
// reported as a corrupt object, which it was not: the reader now reads
// the object where the index says it is and the read is tried again, or
// says why it cannot (ErrClosed, not found, or the error of reading it
// where it is now).
func (r *ObjectReader) moved(err error) (bool, error) {
	if err == nil || r.full || !errors.Is(err, fs.ErrClosed) {
		return false, err
	}
	r.s.mu.Lock()
	closed := r.s.closed
	r.s.mu.Unlock()
	if closed {
		return false, ErrClosed
	}
	e, ok, lerr := r.s.lookup(r.id)
	if lerr != nil {
		return false, lerr
	}
	if !ok {
		return false, &NotFoundError{Prefix: hex.EncodeToString(r.id[:])}
	}
	if !e.Inline && e.Size >= rangedMin {
		if nr := r.s.openAlone(r.id, e); nr != nil {
			nr.reuse = r.reuse
			*r = *nr
			return true, nil
		}
	}
	b, kind, gerr := r.s.GetKind(r.id)
	if gerr != nil {
		return false, gerr
	}
	*r = ObjectReader{s: r.s, id: r.id, kind: kind, size: int64(len(b)), data: b, full: true}
	return true, nil
}

// Size is the object's size in bytes.
func (r *ObjectReader) Size() int64 { return r.size }

// Kind is the object's kind.
func (r *ObjectReader) Kind() Kind { return r.kind }

// Ranged reports whether ranges are read from the object's record (true)
// or were read whole and verified when it was opened.
func (r *ObjectReader) Ranged() bool { return !r.full }

func (r *ObjectReader) bad(reason string, cause error) error {
	return &CorruptError{ID: r.id, Segment: r.e.Loc.Segment, Offset: r.e.Loc.Offset, Reason: reason, cause: cause}
}

// check verifies the record once, before any of it is decoded: its CRC
// over the whole stored payload (read in pieces, never held), its codec
// and dictionary id, and that the block holds exactly the object's length
// and the object. The zstd decoder sizes its history from the frame
// header, and a damaged window byte made it allocate what it claimed
// before a CRC at the end found the damage.
func (r *ObjectReader) check() error {
	if r.checked {
		return nil
	}
	crc := crc32.New(castagnoli)
	crc.Write(r.hdr[:24])
	got, err := io.CopyBuffer(crc, io.NewSectionReader(r.f, r.e.Loc.Offset+recHeaderSize, int64(r.h.Size)), r.reuse.copyBuf())
	if err != nil {
		return r.bad(fmt.Sprintf("read: %v", err), err)
	}
	if got != int64(r.h.Size) {
		return r.bad(fmt.Sprintf("%v: the segment ends inside it", ErrTruncated), ErrTruncated)
	}
	if crc.Sum32() != r.h.CRC {
		return r.bad(fmt.Sprintf("%v: checksum mismatch", ErrBadRecord), ErrBadRecord)
	}
	if err := r.checkHeader(); err != nil {
		return err
	}
	r.checked = true
	return nil
}

// checkHeader checks what the record header says of the block: a codec it
// knows, with a dictionary only when it names one, a raw payload as long
// as the block, and a decoded size that is exactly the object's length
// and the object.
func (r *ObjectReader) checkHeader() error {
	switch r.h.Codec {
	case CodecRaw:
		if r.h.Dict != dict.None {
			return r.bad(fmt.Sprintf("%v: raw record names dictionary %d", ErrBadRecord, r.h.Dict), ErrBadRecord)
		}
		// A raw payload is the block. Checked before ReadAll sizes its
		// buffer from the stored size (a damaged one claimed up to 2 GiB
		// before the CRC was read) and before ReadRange reads the file at
		// the block's offsets (past a shorter payload, bytes no CRC covers).
		if r.h.Size != r.h.Raw {
			return r.bad(fmt.Sprintf("%v: raw record stores %d bytes of a %d-byte block", ErrBadRecord, r.h.Size, r.h.Raw), ErrBadRecord)
		}
	case CodecZstd, CodecZstdDict:
		if (r.h.Codec == CodecZstd) != (r.h.Dict == dict.None) {
			return r.bad(fmt.Sprintf("%v: codec %d with dictionary %d", ErrBadRecord, r.h.Codec, r.h.Dict), ErrBadRecord)
		}
	default:
		return r.bad(fmt.Sprintf("%v: unknown codec %d", ErrBadRecord, r.h.Codec), ErrBadRecord)
	}
	if int64(r.h.Raw) != r.lenSize+r.size {
		return r.bad("index entry does not match its record", nil)
	}
	return nil
}

// block returns the record's decoded block as a stream, positioned after
// the object's length (which it checks), and a function that releases
// its decoder.
func (r *ObjectReader) block() (io.Reader, func(), error) {
	payload := io.NewSectionReader(r.f, r.e.Loc.Offset+recHeaderSize, int64(r.h.Size))
	var raw io.Reader = payload
	done := func() {}
	if r.h.Codec != CodecRaw {
		opts := []zstd.DOption{zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxRecordBlobSz), zstd.WithDecoderLowmem(true)}
		if r.h.Dict != dict.None {
			d, err := r.s.opts.Dicts.Lookup(r.h.Dict)
			if err != nil {
				nd := &NeedsDictError{Dict: r.h.Dict, Err: err}
				return nil, nil, r.bad(nd.Error(), nd)
			}
			if dict.IsZstdDict(d) {
				opts = append(opts, zstd.WithDecoderDicts(d))
			} else {
				opts = append(opts, zstd.WithDecoderDictRaw(r.h.Dict, d))
			}
		}
		var zr *zstd.Decoder
		var err error
		if r.reuse != nil {
			zr, err = r.reuse.decoder(r.h.Dict, payload, opts)
		} else {
			zr, err = zstd.NewReader(payload, opts...)
		}
		if err != nil {
			return nil, nil, r.bad(fmt.Sprintf("%v: zstd: %v", ErrBadRecord, err), ErrBadRecord)
		}
		raw, done = zr, zr.Close
		if r.reuse != nil {
			// Kept for the next record: let go of this one's.
			done = func() { zr.Reset(nil) }
		}
	}
	br := r.reuse.reader(raw)
	l, err := binary.ReadUvarint(br)
	if err != nil {
		done()
		return nil, nil, r.bad(fmt.Sprintf("block member table unreadable: %v", err), err)
	}
	if int64(l) != r.size {
		done()
		return nil, nil, r.bad("index entry does not match its record", nil)
	}
	return br, done, nil
}

// ReadRange returns up to n bytes of the object from offset off: fewer
// only where the object ends. An offset past the end is an error; at the
// end, an empty range. A range read from the object's record is checked as
// the type's comment says (the record's CRC, not the object's hash).
func (r *ObjectReader) ReadRange(off, n int64) ([]byte, error) {
	b, err := r.readRange(off, n)
	if again, err := r.moved(err); !again {
		return b, err
	}
	return r.readRange(off, n)
}

func (r *ObjectReader) readRange(off, n int64) ([]byte, error) {
	if off < 0 || off > r.size {
		return nil, fmt.Errorf("offset %d is outside object %s (%d bytes)", off, Short(r.id), r.size)
	}
	if n < 0 {
		return nil, fmt.Errorf("a range of %d bytes", n)
	}
	n = min(n, r.size-off)
	if r.full {
		return append([]byte(nil), r.data[off:off+n]...), nil
	}
	if err := r.check(); err != nil {
		return nil, err
	}
	out := make([]byte, n)
	if n == 0 {
		return out, nil
	}
	if r.h.Codec == CodecRaw {
		got, err := r.f.ReadAt(out, r.e.Loc.Offset+recHeaderSize+r.lenSize+off)
		if got != len(out) {
			if err == nil || errors.Is(err, io.EOF) {
				err = ErrTruncated
			}
			return nil, r.bad(fmt.Sprintf("read: %v", err), err)
		}
		return out, nil
	}
	blk, done, err := r.block()
	if err != nil {
		return nil, err
	}
	defer done()
	if _, err := io.CopyN(io.Discard, blk, off); err != nil {
		return nil, r.bad(fmt.Sprintf("%v: decoding up to offset %d: %v", ErrBadRecord, off, err), ErrBadRecord)
	}
	if _, err := io.ReadFull(blk, out); err != nil {
		return nil, r.bad(fmt.Sprintf("%v: decoding bytes %d to %d: %v", ErrBadRecord, off, off+n, err), ErrBadRecord)
	}
	return out, nil
}

// WriteTo writes the whole object to w, hashed as it goes: the bytes
// written are only known to be the object's once it returns nil (see
// Store.WriteTo). An error of w is returned as it was.
//
// A gc or repack of the same Store that moves the object while it is being
// written (moved) does not fail it: the rest is read from where the object
// is now, from the byte reached (what was written is skipped, not written
// again), and the hash covers what w got from both records. Moved again
// after that, it fails saying the output is partial (or that nothing was
// written) and to run again, never that the object is corrupt; the store
// closed meanwhile, it fails with ErrClosed.
func (r *ObjectReader) WriteTo(w io.Writer) (int64, error) {
	sum := blake3.New()
	n, err := r.writeFrom(w, sum, 0)
	var werr *writeError
	if errors.As(err, &werr) {
		return n, werr.err // w's own error (a closed file too): not a move
	}
	if again, err := r.moved(err); !again {
		return n, err
	}
	m, err := r.writeFrom(w, sum, n)
	if errors.As(err, &werr) {
		return n + m, werr.err
	}
	if !errors.Is(err, fs.ErrClosed) {
		return n + m, err
	}
	// The handle closed again: the store was closed, or the object moved
	// again, which is not tried a third time. Neither is damage.
	r.s.mu.Lock()
	closed := r.s.closed
	r.s.mu.Unlock()
	switch {
	case closed:
		err = ErrClosed
	case n+m == 0:
		err = fmt.Errorf("object %s was moved twice by a gc or repack of this store before any of it was written: nothing was written (the object is not damaged); run the command again", Short(r.id))
	default:
		err = fmt.Errorf("object %s was moved twice by a gc or repack of this store while it was being written: the %d bytes written are only part of it (the object is not damaged); run the command again", Short(r.id), n+m)
	}
	return n + m, err
}

// writeFrom writes the object from offset off to w, adding it to sum,
// which holds the object's first off bytes, and checks sum against the
// object's id once the last byte is written. An error of w is returned
// as a *writeError.
func (r *ObjectReader) writeFrom(w io.Writer, sum *blake3.Hasher, off int64) (int64, error) {
	if r.full {
		// Verified when read; the hash still covers the part written
		// from the record it was read from before it moved.
		n, err := callerWriter{w}.Write(r.data[off:])
		if err != nil || off == 0 {
			return int64(n), err
		}
		sum.Write(r.data[off:])
		return int64(n), r.checkSum(sum)
	}
	if err := r.check(); err != nil {
		return 0, err
	}
	blk, done, err := r.block()
	if err != nil {
		return 0, err
	}
	defer done()
	if _, err := io.CopyN(io.Discard, blk, off); err != nil {
		return 0, r.bad(fmt.Sprintf("%v: decoding up to offset %d: %v", ErrBadRecord, off, err), err)
	}
	n, err := io.Copy(io.MultiWriter(callerWriter{w}, sum), io.LimitReader(blk, r.size-off))
	if _, ok := err.(*writeError); ok {
		return n, err
	}
	if err != nil {
		return n, r.bad(fmt.Sprintf("read: %v", err), err)
	}
	if off+n != r.size {
		return n, r.bad(fmt.Sprintf("%v: decoded %d bytes, header says %d", ErrBadRecord, off+n, r.size), ErrBadRecord)
	}
	// A frame that decodes past the block is damage.
	if extra, err := io.Copy(io.Discard, blk); err != nil || extra != 0 {
		return n, r.bad(fmt.Sprintf("%v: the record decodes past its block", ErrBadRecord), ErrBadRecord)
	}
	return n, r.checkSum(sum)
}

// checkSum checks the hash of every byte written against the object's id.
func (r *ObjectReader) checkSum(sum *blake3.Hasher) error {
	var sumKey Key
	copy(sumKey[:], sum.Sum(nil))
	if sumKey != r.id {
		return r.bad("content hash mismatch", nil)
	}
	return nil
}

// ReadAll returns the whole object, verified against its id. An object
// alone in its record is decoded straight into the one buffer returned:
// reading the record whole held its stored bytes, its decoded block (grown
// by append) and a copy of the object at once. An object read whole when
// it was opened is returned as read, not copied again: the caller may keep
// the buffer, and changes what the reader's later ranges give if it
// changes it.
func (r *ObjectReader) ReadAll() ([]byte, error) {
	b, err := r.readAll()
	if again, err := r.moved(err); !again {
		return b, err
	}
	return r.readAll()
}

func (r *ObjectReader) readAll() ([]byte, error) {
	if r.full {
		if r.shared {
			return append([]byte(nil), r.data...), nil
		}
		return r.data, nil
	}
	var buf []byte
	if r.h.Codec == CodecRaw && !r.checked {
		// A raw payload is the block: read it once into the buffer,
		// checked there, instead of a pass for the CRC and another.
		if err := r.checkHeader(); err != nil {
			return nil, err
		}
		buf = make([]byte, r.h.Size)
		got, err := r.f.ReadAt(buf, r.e.Loc.Offset+recHeaderSize)
		if got != len(buf) {
			if err == nil || errors.Is(err, io.EOF) {
				err = ErrTruncated
			}
			return nil, r.bad(fmt.Sprintf("read: %v", err), err)
		}
		if err := checkRecord(r.hdr, buf, r.h); err != nil {
			return nil, r.bad(err.Error(), err)
		}
		r.checked = true
		if l, n := binary.Uvarint(buf); n <= 0 || int64(n) != r.lenSize || int64(l) != r.size {
			return nil, r.bad("index entry does not match its record", nil)
		}
	} else {
		if err := r.check(); err != nil {
			return nil, err
		}
		blk, done, err := r.block()
		if err != nil {
			return nil, err
		}
		defer done()
		buf = make([]byte, r.lenSize+r.size)
		binary.PutUvarint(buf, uint64(r.size))
		if _, err := io.ReadFull(blk, buf[r.lenSize:]); err != nil {
			return nil, r.bad(fmt.Sprintf("%v: zstd: %v", ErrBadRecord, err), ErrBadRecord)
		}
		if extra, err := io.Copy(io.Discard, blk); err != nil || extra != 0 {
			return nil, r.bad(fmt.Sprintf("%v: the record decodes past its block", ErrBadRecord), ErrBadRecord)
		}
	}
	data := buf[r.lenSize:len(buf):len(buf)]
	if ID(data) != r.id {
		return nil, r.bad("content hash mismatch", nil)
	}
	return data, nil
}
