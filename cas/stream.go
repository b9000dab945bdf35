package cas

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/klauspost/compress/zstd"
	"github.com/zeebo/blake3"

	"github.com/rookhq/rook/dict"
)

// streamMin is the object size from which WriteTo streams an object
// alone in its block instead of reading the record whole: below it, the
// block cache and one read are cheaper, and a packed block is at most a
// couple of MiB anyway.
const streamMin = 1 << 20

// WriteTo writes the object's bytes to w and returns how many it wrote.
// An object alone in a big record (a captured file of many MiB) is
// decompressed and hashed as it is read, in pieces, so that memory stays
// bounded whatever its size: Get holds the record, its decoded block and
// a copy. The bytes written are only known to be the object's once WriteTo
// returns nil: a record whose checksum, length or hash does not hold is a
// *CorruptError, found at its end, after w has had what was read. Callers
// that keep what they wrote (a file) must discard it on an error; a hash
// of it (a git blob id) is used only on success.
func (s *Store) WriteTo(id Key, w io.Writer) (int64, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return 0, ErrClosed
	}
	if o, ok := s.pending[id]; ok {
		data := o.data // never changed once held (PutOwned's contract)
		s.mu.Unlock()
		n, err := w.Write(data)
		return int64(n), err
	}
	s.mu.Unlock()
	e, ok, err := s.lookup(id)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, &NotFoundError{Prefix: hex.EncodeToString(id[:])}
	}
	if !e.Inline && e.Size >= streamMin {
		n, streamed, err := s.streamEntry(id, e, w)
		if streamed {
			return n, err
		}
	}
	b, err := s.Get(id)
	if err != nil {
		return 0, err
	}
	n, err := w.Write(b)
	return int64(n), err
}

// streamEntry streams an object that is alone in its record. streamed is
// false when it is not (a packed block, or a record that cannot even be
// opened): nothing was written then, and Get reads it, with Get's errors
// and the stale-view retry of a reader.
func (s *Store) streamEntry(id Key, e entry, w io.Writer) (n int64, streamed bool, err error) {
	f, err := s.files.get(e.Loc.Segment)
	if err != nil {
		return 0, false, nil
	}
	hdr := make([]byte, recHeaderSize)
	if _, err := f.ReadAt(hdr, e.Loc.Offset); err != nil {
		return 0, false, nil
	}
	h, err := parseRecordHeader(hdr)
	if err != nil || h.Count != 1 || h.Kind != e.Kind || e.Loc.Member != 0 {
		return 0, false, nil
	}
	bad := func(reason string, cause error) error {
		return &CorruptError{ID: id, Segment: e.Loc.Segment, Offset: e.Loc.Offset, Reason: reason, cause: cause}
	}
	// The record is checked against its CRC before any of it is decoded,
	// as Get checks it: the zstd decoder sizes its history from the frame
	// header, and a damaged window byte made it allocate what it claimed
	// (256 MiB for one byte) before a CRC at the end found the damage; a
	// damaged dictionary id was reported as a missing dictionary of an
	// intact record. This reads the payload twice (the second time from
	// the page cache): what goes to w comes from a record that checks
	// out, and the object's hash is still checked at the end.
	crc := crc32.New(castagnoli)
	crc.Write(hdr[:24])
	got, err := io.CopyBuffer(crc, io.NewSectionReader(f, e.Loc.Offset+recHeaderSize, int64(h.Size)), make([]byte, 64<<10))
	if err != nil {
		return 0, true, bad(fmt.Sprintf("read: %v", err), err)
	}
	if got != int64(h.Size) {
		return 0, true, bad(fmt.Sprintf("%v: the segment ends inside it", ErrTruncated), ErrTruncated)
	}
	if crc.Sum32() != h.CRC {
		return 0, true, bad(fmt.Sprintf("%v: checksum mismatch", ErrBadRecord), ErrBadRecord)
	}
	payload := io.NewSectionReader(f, e.Loc.Offset+recHeaderSize, int64(h.Size))
	var raw io.Reader
	switch h.Codec {
	case CodecRaw:
		if h.Dict != dict.None {
			return 0, true, bad(fmt.Sprintf("%v: raw record names dictionary %d", ErrBadRecord, h.Dict), ErrBadRecord)
		}
		raw = payload
	case CodecZstd, CodecZstdDict:
		if (h.Codec == CodecZstd) != (h.Dict == dict.None) {
			return 0, true, bad(fmt.Sprintf("%v: codec %d with dictionary %d", ErrBadRecord, h.Codec, h.Dict), ErrBadRecord)
		}
		opts := []zstd.DOption{zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxRecordBlobSz), zstd.WithDecoderLowmem(true)}
		if h.Dict != dict.None {
			d, err := s.opts.Dicts.Lookup(h.Dict)
			if err != nil {
				nd := &NeedsDictError{Dict: h.Dict, Err: err}
				return 0, true, bad(nd.Error(), nd)
			}
			if dict.IsZstdDict(d) {
				opts = append(opts, zstd.WithDecoderDicts(d))
			} else {
				opts = append(opts, zstd.WithDecoderDictRaw(h.Dict, d))
			}
		}
		zr, err := zstd.NewReader(payload, opts...)
		if err != nil {
			return 0, true, err
		}
		defer zr.Close()
		raw = zr
	default:
		return 0, true, bad(fmt.Sprintf("%v: unknown codec %d", ErrBadRecord, h.Codec), ErrBadRecord)
	}
	// The block: the object's length, then the object.
	br := bufio.NewReaderSize(raw, 64<<10)
	l, err := binary.ReadUvarint(br)
	if err != nil {
		return 0, true, bad(fmt.Sprintf("block member table unreadable: %v", err), err)
	}
	if int64(l) != e.Size || uint64(h.Raw) != uint64(binary.PutUvarint(make([]byte, binary.MaxVarintLen64), l))+l {
		return 0, true, bad("index entry does not match its record", nil)
	}
	sum := blake3.New()
	n, err = io.Copy(io.MultiWriter(callerWriter{w}, sum), io.LimitReader(br, e.Size))
	var werr *writeError
	if errors.As(err, &werr) {
		return n, true, werr.err
	}
	if err != nil {
		return n, true, bad(fmt.Sprintf("read: %v", err), err)
	}
	if n != e.Size {
		return n, true, bad(fmt.Sprintf("%v: decoded %d bytes, header says %d", ErrBadRecord, n, e.Size), ErrBadRecord)
	}
	// A frame that decodes past the block is damage.
	if extra, err := io.Copy(io.Discard, br); err != nil || extra != 0 {
		return n, true, bad(fmt.Sprintf("%v: the record decodes past its block", ErrBadRecord), ErrBadRecord)
	}
	var sumKey Key
	copy(sumKey[:], sum.Sum(nil))
	if sumKey != id {
		return n, true, bad("content hash mismatch", nil)
	}
	return n, true, nil
}

// writeError marks an error from WriteTo's writer, not from the store:
// it is returned as it was, never as damage.
type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }

type callerWriter struct{ w io.Writer }

func (c callerWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if err != nil {
		err = &writeError{err}
	}
	return n, err
}
