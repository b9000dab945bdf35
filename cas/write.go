package cas

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/zeebo/blake3"

	"github.com/rookhq/rook/index"
	"github.com/rookhq/rook/internal/vfs"
)

// MaxObjectSize is the largest object a store takes (a record's payload is
// at most 2 GiB, with room for the block table).
const MaxObjectSize = 1 << 30

// ErrReadOnly: a write on a store opened for reading.
var ErrReadOnly = errors.New("store is open read-only")

// CollisionError: Put was given bytes that differ from a stored object's but
// share its 128-bit id. Ids are 128 bits (docs/adr/0002-128-bit-ids.md):
// finding such a pair by chance is out of reach (2^64 work), and when one
// is found, the store refuses the second content rather than ever handing
// back one for the other.
type CollisionError struct{ ID Key }

func (e *CollisionError) Error() string {
	return fmt.Sprintf("refused: these bytes differ from stored object %x, which has the same 128-bit id (a BLAKE3 collision; nothing was written)", e.ID[:])
}

// ErrClosed: a call on a closed store.
var ErrClosed = errors.New("store is closed")

// ID returns the id of data.
func ID(data []byte) Key {
	sum := digestOf(data)
	return Key(sum[:index.KeySize])
}

// digestOf is the BLAKE3-256 of data, whose first bytes are its id; tests
// swap it to make ids collide on purpose.
var digestOf = blake3.Sum256

// maxVerified bounds Store.verified: 64Ki ids, about 4 MiB.
const maxVerified = 1 << 16

// pendingObject is an object accepted by Put whose block has not been
// written yet.
type pendingObject struct {
	id      Key
	kind    Kind
	data    []byte
	created int64
	old     *entry // the unreadable copy this one repairs, if any
	// block, when set, is the raw block of this object alone, data its
	// tail (hold): blockOf takes it as it is.
	block []byte
}

type openBlock struct {
	objs []*pendingObject
	raw  int
}

type activeSegment struct {
	f      vfs.File
	number uint32
	size   int64
	synced bool
	// named: the segment's directory entry is known durable. A segment
	// this writer created is (startSegment syncs the directory before any
	// record goes in); one it adopted at open may not be: a writer that
	// failed or was killed between creating it and syncing the directory
	// left it, and records synced into it would go with its name at a
	// power cut. The first sync of the segment syncs the directory too.
	named bool
}

// PutResult says what a Put did.
type PutResult struct {
	ID       Key
	Kind     Kind // the object's kind: for known bytes, the kind they were first stored as
	Existed  bool // the store already held these bytes, readable: nothing written
	Repaired bool // it held them but its copy was unreadable: rewritten
}

// Put stores data as an object of the given kind and returns its id. Known
// bytes are not written again, unless the stored copy no longer reads back,
// in which case these bytes repair it; bytes this process already wrote or
// compared are taken as known without reading the copy again (noteVerified),
// so a copy damaged since is repaired by the next process's Put, or found by
// verify. The object is durable only after Sync (or Close) returns.
func (s *Store) Put(kind Kind, data []byte) (PutResult, error) { return s.put(kind, data, false, nil) }

// PutOwned is Put for a caller that hands data over: the store may keep
// the slice itself instead of a copy, so the caller must never change it
// afterwards. An import builds each of its objects once and spares a copy
// of every byte it stores.
func (s *Store) PutOwned(kind Kind, data []byte) (PutResult, error) {
	return s.put(kind, data, true, nil)
}

// ObjectRoom is how many bytes a caller of PutInPlace leaves free in
// front of the object: room for its length, the block's member table.
const ObjectRoom = binary.MaxVarintLen32

// PutInPlace is PutOwned of buf[ObjectRoom:], whose first ObjectRoom
// bytes the store may write too: an object of a block of its own (PackMax
// and up) becomes its block where it lies, its length written in front of
// it, and is not copied at all. A file read to be stored (`rook store
// put`, a capture) is read behind that room (vfs.ReadSizedRoom) and
// held once: copied into its block it was held twice, three times with a
// record of its size (100 MB of random bytes: 315 MB peak).
func (s *Store) PutInPlace(kind Kind, buf []byte) (PutResult, error) {
	if len(buf) < ObjectRoom {
		return PutResult{}, fmt.Errorf("PutInPlace given %d bytes, less than the %d bytes of room in front of the object", len(buf), ObjectRoom)
	}
	return s.put(kind, buf[ObjectRoom:], true, buf)
}

// put stores data; room, when not nil, is data with ObjectRoom bytes in
// front (PutInPlace).
func (s *Store) put(kind Kind, data []byte, owned bool, room []byte) (PutResult, error) {
	if !kind.Valid() {
		return PutResult{}, fmt.Errorf("unknown kind %d", kind)
	}
	if len(data) > MaxObjectSize {
		return PutResult{}, fmt.Errorf("object of %d bytes is larger than the %d-byte limit", len(data), MaxObjectSize)
	}
	sum := digestOf(data)
	id := Key(sum[:index.KeySize])
	var rest [32 - index.KeySize]byte
	copy(rest[:], sum[index.KeySize:])
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writable(); err != nil {
		return PutResult{}, err
	}
	res := PutResult{ID: id, Kind: kind}
	if o, ok := s.pending[id]; ok {
		if !bytes.Equal(o.data, data) {
			return res, &CollisionError{ID: id}
		}
		s.countDedup(len(data))
		res.Existed, res.Kind = true, o.kind
		return res, nil
	}
	var old *entry
	if v, ok, err := s.tree.Get(id); err != nil {
		return res, s.indexErr(err)
	} else if ok {
		e, derr := decodeEntry(v)
		if known, ok := s.verified[id]; derr == nil && ok && known == rest {
			// This process wrote these bytes, or read them back, already:
			// the rest of the digest stands for comparing them again.
			s.countDedup(len(data))
			res.Existed, res.Kind = true, e.Kind
			return res, nil
		}
		if derr == nil {
			if same, rerr := s.sameAsStored(id, e, data); rerr == nil {
				if !same {
					return res, &CollisionError{ID: id}
				}
				s.countDedup(len(data))
				s.noteVerified(id, rest)
				res.Existed, res.Kind = true, e.Kind
				return res, nil
			}
			// The stored copy is unreadable: these bytes repair it,
			// keeping the kind it was stored as.
			old = &e
			kind, res.Kind = e.Kind, e.Kind
		}
		res.Repaired = true
	}
	obj := &pendingObject{id: id, kind: kind, created: s.opts.Clock.Now().Unix(), old: old}
	s.hold(obj, data, owned, room)
	s.noteVerified(id, rest)
	return res, s.fail(s.stage(obj))
}

// sameAsStored reads back the stored copy of the object id, verified
// against its id as any whole read is, and reports whether it holds
// exactly data; an error says the copy does not read back (damaged, or
// its segment unreadable). An object alone in its record (a big one) is
// compared as it is decoded, a piece at a time: read whole, it was held
// beside data, twice the object in memory for a put of bytes already
// stored (100 MB: 210 MB). Not ObjectReader.WriteTo: put holds s.mu,
// which its retry after a move takes; under s.mu no gc moves it.
func (s *Store) sameAsStored(id Key, e entry, data []byte) (bool, error) {
	if !e.Inline && e.Size >= rangedMin {
		if r := s.openAlone(id, e); r != nil {
			c := &compareWriter{want: data, same: true}
			if _, err := r.writeFrom(c, blake3.New(), 0); err != nil {
				return false, err
			}
			return c.same && c.off == len(data), nil
		}
	}
	stored, err := s.readEntry(id, e, false)
	if err != nil {
		return false, err
	}
	return bytes.Equal(stored, data), nil
}

// compareWriter compares what is written to it with want, from its start.
// It never fails: after a difference it still takes the rest, so that the
// reader hashes the whole stored copy and says whether it is intact (then
// the bytes differ: a collision) or damaged (then data repairs it).
type compareWriter struct {
	want []byte
	off  int
	same bool
}

func (c *compareWriter) Write(p []byte) (int, error) {
	if c.same && (len(p) > len(c.want)-c.off || !bytes.Equal(p, c.want[c.off:c.off+len(p)])) {
		c.same = false
	}
	c.off += len(p)
	return len(p), nil
}

// hold gives obj the bytes data: a copy, unless owned says the caller
// hands data over. An object that gets a block of its own (PackMax or
// more) is copied straight into that block's raw bytes, behind its length:
// a big object was copied once by Put and once more into its block, and
// each copy held in memory beside the other until the block was written.
// With room (PutInPlace), the block is laid out where data lies, and
// nothing is copied: the same bytes as encodeBlock's.
func (s *Store) hold(obj *pendingObject, data []byte, owned bool, room []byte) {
	if _, packMax := s.packing(); len(data) >= packMax {
		if room != nil {
			var n [ObjectRoom]byte
			l := binary.PutUvarint(n[:], uint64(len(data)))
			obj.block = room[ObjectRoom-l:]
			copy(obj.block, n[:l])
			obj.data = data
			return
		}
		obj.block = encodeBlock([][]byte{data})
		obj.data = obj.block[len(obj.block)-len(data):]
		return
	}
	if !owned {
		data = append([]byte(nil), data...)
	}
	obj.data = data
}

// packing is the block size and PackMax in force: the bulk ones while
// SetBulk is on.
func (s *Store) packing() (blockSize, packMax int) {
	if s.bulk {
		return s.opts.BulkBlockSize, s.opts.BulkPackMax
	}
	return s.opts.BlockSize, s.opts.PackMax
}

// noteVerified remembers that the object id holds the bytes whose digest
// ends in rest, so that putting them again needs no read: an import puts
// the same tool output or file many times, and reading it back would mean
// decompressing its whole block. The memory is bounded and forgotten at
// once when full; an object it names that gc has collected is not in the
// index, and Put looks there first.
func (s *Store) noteVerified(id Key, rest [32 - index.KeySize]byte) {
	if s.verified == nil || len(s.verified) >= maxVerified {
		s.verified = make(map[Key][32 - index.KeySize]byte)
	}
	s.verified[id] = rest
}

func (s *Store) writable() error {
	if s.closed {
		return ErrClosed
	}
	if !s.opts.Writable {
		return ErrReadOnly
	}
	if s.failed != nil {
		return fmt.Errorf("an earlier write failed (%w); close and reopen the store to recover", s.failed)
	}
	return nil
}

// Failed is the write that failed part way and left the store refusing
// every write until it is closed and opened again (nil: none did): a
// caller appending many things tells by it a store that can take no more
// from one thing it refused.
func (s *Store) Failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

// fail records a write-path error that leaves buffered objects in doubt.
func (s *Store) fail(err error) error {
	if err != nil && s.failed == nil {
		s.failed = err
	}
	return err
}

func (s *Store) countDedup(n int) {
	s.ctr.DedupHits++
	s.ctr.DedupBytes += int64(n)
	s.dirty = true
}

// Sync is the durability barrier: it writes every buffered object, fsyncs
// the segment, and commits the index. After it returns, a crash loses
// nothing put before it.
func (s *Store) Sync() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.opts.Writable && !s.closed {
		return nil
	}
	if err := s.writable(); err != nil {
		return err
	}
	return s.syncLocked()
}

// syncLocked is the barrier itself. Any failure marks the store failed: a
// failed fsync may have dropped dirty pages, so retrying it could succeed
// without the data (the fsyncgate lesson); only a reopen, which re-reads
// the disk, knows what is there.
func (s *Store) syncLocked() error { return s.syncOrBarrier(true) }

// Barrier makes every object put so far durable, as Sync does, but commits
// the index only once CommitEvery bytes of records have gone in since the
// last commit: a durable append then costs the segment's sync alone. What
// is not committed yet is in the synced segments past the index's
// watermark, where a writer's open (recover) and a reader's (loadRecent)
// find it.
func (s *Store) Barrier() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.opts.Writable && !s.closed {
		return nil
	}
	if err := s.writable(); err != nil {
		return err
	}
	return s.syncOrBarrier(false)
}

func (s *Store) syncOrBarrier(commit bool) error {
	if err := s.flushOpenBlocks(); err != nil {
		return s.fail(err)
	}
	if !s.dirty {
		return nil
	}
	if s.active != nil && !s.active.synced {
		if err := s.syncActive(); err != nil {
			return s.fail(err)
		}
	}
	every := s.opts.CommitEvery
	if every == 0 {
		every = defaultCommitEvery
	}
	if !commit && every > 0 && s.sinceCommit < every {
		return nil
	}
	if err := s.tree.Commit(s.ctr.encode()); err != nil {
		return s.fail(fmt.Errorf("commit index: %w", err))
	}
	s.dirty, s.sinceCommit = false, 0
	return nil
}

// syncActive fsyncs the active segment and, the first time, its directory
// if the segment's name is not known durable (activeSegment.named).
func (s *Store) syncActive() error {
	if err := s.active.f.Sync(); err != nil {
		return fmt.Errorf("sync segment %s: %w", segName(s.active.number), err)
	}
	if !s.active.named {
		dir := filepath.Join(s.home, SegmentsDir)
		if err := s.fs.SyncDir(dir); err != nil {
			return fmt.Errorf("sync %s (segment %s): %w", dir, segName(s.active.number), err)
		}
		s.active.named = true
	}
	s.active.synced = true
	return nil
}

// defaultCommitEvery: see Options.CommitEvery. A reader's open and a
// writer's recovery scan at most about this much.
const defaultCommitEvery = 4 << 20

// SetBulk switches a writer to the packing for bulk writes (an import:
// Options.BulkBlockSize and BulkPackMax) and back. The blocks open are
// written out first, so that no block mixes the two.
func (s *Store) SetBulk(on bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writable(); err != nil {
		return err
	}
	if s.bulk == on {
		return nil
	}
	if err := s.flushOpenBlocks(); err != nil {
		return s.fail(err)
	}
	s.bulk = on
	return nil
}

// flushOpenBlocks writes out the blocks sealed and still being
// compressed, then every open block.
func (s *Store) flushOpenBlocks() error {
	if err := s.writeSealed(0); err != nil {
		return err
	}
	kinds := make([]Kind, 0, len(s.open))
	for k := range s.open {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool { return kinds[i] < kinds[j] })
	for _, k := range kinds {
		ob := s.open[k]
		delete(s.open, k)
		if err := s.writeBlock(k, ob.objs); err != nil {
			return err
		}
	}
	return nil
}

// sealedBlock is a full block whose compression runs on a goroutine of
// its own while the writer goes on: it is appended when done is closed.
type sealedBlock struct {
	kind   Kind
	objs   []*pendingObject
	raw    []byte
	done   chan struct{}
	codec  uint8 // the compression's results, once done is closed
	dictID uint32
	buf    *[]byte // from recordBufs, holding rec
	rec    []byte  // the record: header room, then the stored bytes
	err    error
}

// maxSealed bounds the bulk blocks sealed and not yet appended (each held
// in memory twice over, raw and compressed). The encoder compresses one
// block at a time (concurrency 1: 2 measured 7% slower), so one block is
// compressed while the next waits its turn and the writer fills a third.
const maxSealed = 2

// sealBlock writes a full block. In bulk (an import, a repack), its
// compression, most of a bulk write's CPU, starts on a goroutine of its
// own and the block is appended later, in the order sealed: at the next
// seal beyond maxSealed, or at the next flush of the open blocks (every
// Sync and Barrier). Until then its objects stay pending, readable and
// known to Put, as in an open block; a crash loses them as it would the
// open block's, since nothing before a Sync is durable.
func (s *Store) sealBlock(kind Kind, objs []*pendingObject) error {
	if !s.bulk {
		// Blocks go out in the order sealed, even if bulk ended with some
		// still in flight (a rewrite that failed half way).
		if err := s.writeSealed(0); err != nil {
			return err
		}
		return s.writeBlock(kind, objs)
	}
	if err := s.writeSealed(maxSealed - 1); err != nil {
		return err
	}
	b := &sealedBlock{kind: kind, objs: objs, raw: blockOf(objs), done: make(chan struct{}), buf: getRecordBuf()}
	dictID := s.opts.Dicts.Newest(uint8(kind))
	go func() {
		defer close(b.done)
		b.codec, b.dictID, b.rec, b.err = s.enc.compress(b.raw, dictID, (*b.buf)[:recHeaderSize])
	}()
	s.sealed = append(s.sealed, b)
	return nil
}

// writeSealed appends the oldest sealed blocks, waiting for their
// compression, until at most keep are left.
func (s *Store) writeSealed(keep int) error {
	for len(s.sealed) > keep {
		b := s.sealed[0]
		<-b.done
		s.sealed[0] = nil
		s.sealed = s.sealed[1:]
		if b.err != nil {
			return fmt.Errorf("compress %s block: %w", b.kind, b.err)
		}
		err := s.appendBlock(b.kind, b.objs, b.raw, b.codec, b.dictID, b.rec)
		putRecordBuf(b.buf, b.rec)
		if err != nil {
			return err
		}
	}
	return nil
}

// blockOf is the raw block of objs.
func blockOf(objs []*pendingObject) []byte {
	if len(objs) == 1 && objs[0].block != nil {
		return objs[0].block
	}
	members := make([][]byte, len(objs))
	for i, o := range objs {
		members[i] = o.data
	}
	return encodeBlock(members)
}

// writeBlock compresses objs into one record, appends it to the active
// segment and points the (uncommitted) index at it.
func (s *Store) writeBlock(kind Kind, objs []*pendingObject) error {
	raw := blockOf(objs)
	buf := getRecordBuf()
	codec, dictID, rec, err := s.enc.compress(raw, s.opts.Dicts.Newest(uint8(kind)), (*buf)[:recHeaderSize])
	if err != nil {
		return fmt.Errorf("compress %s block: %w", kind, err)
	}
	err = s.appendBlock(kind, objs, raw, codec, dictID, rec)
	putRecordBuf(buf, rec)
	return err
}

// appendBlock appends a compressed block as one record and points the
// (uncommitted) index at its members. rec is the record with room for
// its header, then the stored bytes (from encoder.compress: for a block
// stored raw, the header room alone, and raw is the payload); it is not
// kept.
func (s *Store) appendBlock(kind Kind, objs []*pendingObject, raw []byte, codec uint8, dictID uint32, rec []byte) error {
	// The record's time is every member's "created" time (entries do not
	// repeat it): the newest put among them, so no member ever looks older
	// than it is to gc's grace period. A repack carries old times forward.
	now := int64(0)
	for _, o := range objs {
		now = max(now, o.created)
	}
	h := recordHeader{Type: recTypeBlock, Kind: kind, Codec: codec, Count: uint16(len(objs)), Dict: dictID, Raw: uint32(len(raw)), Time: uint32(now)}
	payload, rest := rec[recHeaderSize:], []byte(nil)
	if codec == CodecRaw {
		// The block is the payload, written from where it is, behind
		// the header.
		rec = rec[:recHeaderSize]
		payload, rest = raw, raw
	}
	putRecordHeader(rec, h, payload)
	seg, off, err := s.appendRecord(rec, rest)
	if err != nil {
		return err
	}
	offs, lens, err := blockTable(raw, len(objs))
	if err != nil {
		return err // cannot happen: we just built it
	}
	s.blocks.put(blockKey{seg, off}, &decodedBlock{kind: kind, raw: raw, offs: offs, lens: lens})
	for i, o := range objs {
		e := entry{
			Kind: kind, Size: int64(len(o.data)),
			Stored: attribute(int64(len(payload)), int64(lens[i]), int64(len(raw))),
			Loc:    location{Segment: seg, Offset: off, Member: i},
		}
		if len(o.data) <= s.opts.InlineMax {
			e.Inline, e.Data = true, o.data
		}
		if err := s.tree.Put(o.id, e.encode()); err != nil {
			return fmt.Errorf("index: %w", err)
		}
		if o.old != nil {
			s.ctr.add(*o.old, -1)
		}
		s.ctr.add(e, +1)
		delete(s.pending, o.id)
	}
	s.ctr.WMSegment, s.ctr.WMOffset = seg, off+recHeaderSize+int64(len(payload))
	return nil
}

// attribute shares a block's stored bytes among its members in proportion
// to their size, rounding up, so that per-kind stored totals add up to what
// the blocks take.
func attribute(stored, member, raw int64) int64 {
	if raw == 0 {
		return 0
	}
	return (stored*member + raw - 1) / raw
}

func segName(n uint32) string { return fmt.Sprintf("%08d.seg", n) }

func parseSegName(name string) (uint32, bool) {
	if len(name) != 12 || filepath.Ext(name) != ".seg" {
		return 0, false
	}
	n, err := strconv.ParseUint(name[:8], 10, 32)
	if err != nil || n == 0 {
		return 0, false
	}
	return uint32(n), true
}

func (s *Store) segPath(n uint32) string { return filepath.Join(s.home, SegmentsDir, segName(n)) }

// appendRecord writes rec, then rest (the payload of a record stored raw,
// written from where it is; nil otherwise), at the end of the active
// segment, starting a new segment first when this one is full. It returns
// where the record landed.
func (s *Store) appendRecord(rec, rest []byte) (uint32, int64, error) {
	n := int64(len(rec) + len(rest))
	if s.active == nil || (s.active.size > segHeaderSize && s.active.size+n > s.opts.SegmentSize) {
		if err := s.startSegment(); err != nil {
			return 0, 0, err
		}
	}
	a := s.active
	off := a.size
	_, err := a.f.Write(rec)
	if err == nil && len(rest) > 0 {
		_, err = a.f.Write(rest)
	}
	if err != nil {
		// Whatever part of rec reached the file is a torn tail: cut it now
		// so the next record starts at a record boundary.
		if terr := a.f.Truncate(off); terr == nil {
			a.f.Seek(off, 0)
		} else {
			s.active = nil // reopen (and cut the tail) on the next open
		}
		return 0, 0, fmt.Errorf("write segment %s: %w", segName(a.number), err)
	}
	a.size += n
	a.synced = false
	s.sinceCommit += n
	return a.number, off, nil
}

// startSegment seals the active segment (fsync) and creates the next one:
// header written and synced, directory synced, before any record goes in.
func (s *Store) startSegment() error {
	next := uint64(1)
	if s.active != nil {
		if !s.active.synced {
			if err := s.active.f.Sync(); err != nil {
				return fmt.Errorf("seal segment %s: %w", segName(s.active.number), err)
			}
		}
		next = uint64(s.active.number) + 1
		s.active.f.Close()
		s.active = nil
	} else if segs, err := s.listSegments(); err != nil {
		return err
	} else if len(segs) > 0 {
		next = uint64(segs[len(segs)-1]) + 1
	}
	// Never a number the index may still name: a segment lost (deleted
	// by hand, left out of a backup) must keep reading as missing, not
	// have its objects looked up at offsets in another's records.
	next = max(next, uint64(s.ctr.WMSegment)+1)
	if next > maxSegmentNumber {
		// A longer name would be left out of every listing (and its
		// objects out of a reindex).
		return fmt.Errorf("create segment: no segment number left: the next would be %d, past %d (segment names hold 8 digits); the index's watermark names segment %d: if the store holds no such segment, that is damage: run `rook store reindex`", next, maxSegmentNumber, s.ctr.WMSegment)
	}
	num := uint32(next)
	path := s.segPath(num)
	f, err := s.fs.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, FileMode)
	if err != nil {
		return fmt.Errorf("create segment: %w", err)
	}
	hdr := encodeSegmentHeader(segmentHeader{Version: segVersion, Number: num, Created: s.opts.Clock.Now().UnixNano()})
	if _, err := f.Write(hdr); err != nil {
		f.Close()
		return fmt.Errorf("write segment header %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync segment %s: %w", path, err)
	}
	if err := s.fs.SyncDir(filepath.Dir(path)); err != nil {
		f.Close()
		return fmt.Errorf("sync %s: %w", filepath.Dir(path), err)
	}
	s.active = &activeSegment{f: f, number: num, size: segHeaderSize, synced: true, named: true}
	return nil
}

// segmentIsFile says what is wrong with a directory entry named like a
// segment that is not a regular file (a directory made by hand, say):
// read as a segment it failed every command with only "read ...: is a
// directory". It is not skipped: the index may name its number, and
// rook never deletes what it did not write.
func segmentIsFile(fsys vfs.FS, path string, e fs.DirEntry) error {
	mode := e.Type()
	if mode&fs.ModeSymlink != 0 {
		fi, err := fsys.Stat(path)
		if err != nil {
			return fmt.Errorf("segment %s: %w", path, err)
		}
		mode = fi.Mode().Type()
	}
	if mode.IsRegular() {
		return nil
	}
	what := "not a regular file"
	if mode.IsDir() {
		what = "a directory"
	}
	return fmt.Errorf("%s is named like a segment but is %s, which rook never makes there: move it out of %s/ (rook does not delete it), then run the command again", path, what, SegmentsDir)
}

// listSegments returns the segment numbers present, ascending.
func (s *Store) listSegments() ([]uint32, error) {
	ents, err := s.fs.ReadDir(filepath.Join(s.home, SegmentsDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list segments: %w", err)
	}
	var out []uint32
	for _, e := range ents {
		n, ok := parseSegName(e.Name())
		if !ok {
			continue
		}
		if err := segmentIsFile(s.fs, filepath.Join(s.home, SegmentsDir, e.Name()), e); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}
