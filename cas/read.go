package cas

import (
	"bytes"
	"container/list"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/rookhq/rook/dict"
	"github.com/rookhq/rook/index"
	"github.com/rookhq/rook/internal/vfs"
)

// ObjectInfo describes a stored object.
type ObjectInfo struct {
	ID      Key
	Kind    Kind
	Size    int64 // logical bytes
	Stored  int64 // bytes it takes in its segment (its share of a packed block)
	Inline  bool
	Created int64 // unix seconds
	Segment uint32
	Offset  int64
	Codec   uint8
	Dict    uint32
}

// Short is the 12-hex short form used in listings and messages.
func Short(id Key) string { return hex.EncodeToString(id[:6]) }

// CorruptError: an object whose stored bytes do not read back as the bytes
// its id names.
type CorruptError struct {
	ID      Key
	Segment uint32
	Offset  int64
	Inline  bool
	Reason  string
	cause   error // what the read failed on, when it was an error (Unwrap)
}

// Unwrap gives the error the read failed on, if any: a segment file that
// is gone (fs.ErrNotExist) is a reader's stale view, not damage.
func (e *CorruptError) Unwrap() error { return e.cause }

func (e *CorruptError) Error() string {
	where := fmt.Sprintf("segment %s offset %d", segName(e.Segment), e.Offset)
	if e.Inline {
		where = "inline in the index"
	}
	// An intact record whose dictionary file is missing or damaged: the
	// object is not damaged, and the fix is the dictionary file, not its
	// bytes.
	var nd *NeedsDictError
	if errors.As(e.cause, &nd) {
		return fmt.Sprintf("object %s cannot be read (%s): %v: put the dictionary file %s back from a backup (the record itself is intact); `rook store verify` lists every object that needs it", Short(e.ID), where, nd, dict.FileName(nd.Dict))
	}
	if oserr, ok := e.ReadFailed(); ok {
		return fmt.Sprintf("object %s cannot be read (%s): reading segment %s failed (%v): that is not damage, and the object may be fine: check the file's permissions (it must be readable by this user) and the disk (or the open-files limit), then run the command again", Short(e.ID), where, segName(e.Segment), oserr)
	}
	return fmt.Sprintf("object %s is corrupt (%s): %s", Short(e.ID), where, e.Reason)
}

// ReadFailed says whether the read failed for a reason of the OS's
// (permission denied, an I/O error, too many open files) rather than the
// record's bytes, and gives the OS's error: the object is not known to be
// damaged then, and putting it again is no repair. A segment file not
// there (fs.ErrNotExist) is not such a failure: gone, its objects do not
// read whatever is tried again (or a reader's view is stale, which the
// read tries again).
func (e *CorruptError) ReadFailed() (error, bool) {
	var pe *fs.PathError
	if e.Inline || e.cause == nil || errors.Is(e.cause, fs.ErrNotExist) || !errors.As(e.cause, &pe) {
		return nil, false
	}
	return pe.Err, true
}

// NotFoundError: no object has this id or prefix.
type NotFoundError struct{ Prefix string }

func (e *NotFoundError) Error() string { return fmt.Sprintf("no object matches %s", e.Prefix) }

// AmbiguousError: a prefix that names several objects.
type AmbiguousError struct {
	Prefix     string
	Candidates []ObjectInfo // up to maxCandidates
	More       bool
}

const maxCandidates = 10

func (e *AmbiguousError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "prefix %s is ambiguous; it matches:", e.Prefix)
	for _, c := range e.Candidates {
		fmt.Fprintf(&b, "\n  %s  %s  %d bytes", hex.EncodeToString(c.ID[:]), c.Kind, c.Size)
	}
	if e.More {
		b.WriteString("\n  ...")
	}
	b.WriteString("\ngive more characters")
	return b.String()
}

// BadPrefixError: input that is not an id prefix at all.
type BadPrefixError struct {
	Prefix string
	Reason string
}

func (e *BadPrefixError) Error() string {
	return fmt.Sprintf("%q is not an object id: %s (give 4 to 32 hex characters)", e.Prefix, e.Reason)
}

// Get returns the object's bytes, verified against its id.
func (s *Store) Get(id Key) ([]byte, error) {
	b, _, err := s.GetKind(id)
	return b, err
}

// GetKind returns the object's bytes, verified against its id, and its kind.
func (s *Store) GetKind(id Key) ([]byte, Kind, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, 0, ErrClosed
	}
	if o, ok := s.pending[id]; ok {
		b := append([]byte(nil), o.data...)
		s.mu.Unlock()
		return b, o.kind, nil
	}
	s.mu.Unlock()
	e, ok, err := s.lookup(id)
	if err != nil {
		return nil, 0, err
	}
	if !ok {
		return nil, 0, &NotFoundError{Prefix: hex.EncodeToString(id[:])}
	}
	b, err := s.readEntry(id, e, true)
	if err != nil && !s.opts.Writable && errors.Is(err, fs.ErrNotExist) && s.refreshView() == nil {
		// A writer (gc, repack) moved the object and removed the segment
		// this reader's index named, after the reader opened: look again
		// in the index as it is now.
		if e, ok, err = s.lookup(id); err != nil {
			return nil, 0, err
		} else if !ok {
			return nil, 0, &NotFoundError{Prefix: hex.EncodeToString(id[:])}
		}
		b, err = s.readEntry(id, e, true)
	}
	return b, e.Kind, err
}

// refreshView makes a reader see the index's newest commit and what is past
// its watermark now: after a gc or repack removed the segments its view
// named. An index whose newest commit does not read (no valid meta slot,
// counters that do not decode) is damaged, said as a reader's open says
// it: with the reindex that rebuilds it.
func (s *Store) refreshView() error {
	if err := s.tree.Refresh(); err != nil {
		return s.indexErr(err)
	}
	c, err := decodeCounters(s.tree.Snapshot().UserMeta())
	if err != nil {
		return fmt.Errorf("index %s is damaged (%v): run `rook store reindex` to rebuild it from the segments", s.indexPath(), err)
	}
	// A reader's counters (its watermark) are read by loadRecent under
	// recentMu, on whatever goroutine looks an object up: written under
	// it too, with the look past the watermark they start.
	s.recentMu.Lock()
	s.ctr = c
	s.recent, s.recentFrom, s.recentSeen = nil, nil, [3]int64{}
	s.recentMu.Unlock()
	return s.loadRecent()
}

// Stat describes one object. An object a writer holds in a block not yet
// written has no stored size yet (0).
func (s *Store) Stat(id Key) (ObjectInfo, error) {
	info, e, err := s.stat(id)
	if err != nil || e == nil {
		return info, err
	}
	return s.infoOf(id, *e, nil), nil
}

// StatEntry is Stat from the index alone: the object's kind and sizes and
// where it is, without reading its record's header from the segment, so
// Created, Codec and Dict are zero (but for an object not yet written,
// whose Created is known). For callers that budget reads by size over
// many objects (search, a session's page of bodies): Stat reads the
// segment once per object for fields they do not use.
func (s *Store) StatEntry(id Key) (ObjectInfo, error) {
	info, e, err := s.stat(id)
	if err != nil || e == nil {
		return info, err
	}
	return entryInfo(id, *e), nil
}

// stat finds id: a pending object's info (entry nil), or its index entry.
func (s *Store) stat(id Key) (ObjectInfo, *entry, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ObjectInfo{}, nil, ErrClosed
	}
	if o, ok := s.pending[id]; ok {
		info := ObjectInfo{ID: id, Kind: o.kind, Size: int64(len(o.data)), Created: o.created}
		s.mu.Unlock()
		return info, nil, nil
	}
	s.mu.Unlock()
	e, ok, err := s.lookup(id)
	if err != nil {
		return ObjectInfo{}, nil, err
	}
	if !ok {
		return ObjectInfo{}, nil, &NotFoundError{Prefix: hex.EncodeToString(id[:])}
	}
	return ObjectInfo{}, &e, nil
}

// entryInfo describes an object from its index entry alone.
func entryInfo(id Key, e entry) ObjectInfo {
	return ObjectInfo{ID: id, Kind: e.Kind, Size: e.Size, Stored: e.Stored, Inline: e.Inline,
		Segment: e.Loc.Segment, Offset: e.Loc.Offset}
}

// infoOf describes an object from its entry and its record's header (the
// header says when it was written and how it is compressed). hdrs, when
// not nil, remembers headers across the objects of one listing. A header
// that cannot be read leaves those fields zero; reading the object reports
// the damage.
func (s *Store) infoOf(id Key, e entry, hdrs map[blockKey]recordHeader) ObjectInfo {
	info := entryInfo(id, e)
	if h, err := s.headerOf(e.Loc, hdrs); err == nil {
		info.Created, info.Codec, info.Dict = int64(h.Time), h.Codec, h.Dict
	}
	return info
}

// headerOf reads the header of the record an entry points into. A header
// that is damaged (or cut short, or in a segment that is gone) is an error
// headerDamaged reports; any other is a read that failed (EIO, EMFILE),
// which says nothing of the record.
func (s *Store) headerOf(loc location, hdrs map[blockKey]recordHeader) (recordHeader, error) {
	k := blockKey{loc.Segment, loc.Offset}
	if h, ok := hdrs[k]; ok {
		return h, nil
	}
	f, err := s.files.get(loc.Segment)
	if err != nil {
		return recordHeader{}, err
	}
	b := make([]byte, recHeaderSize)
	if _, err := f.ReadAt(b, loc.Offset); errors.Is(err, io.EOF) {
		return recordHeader{}, fmt.Errorf("%w: the segment ends at the record's header", ErrTruncated)
	} else if err != nil {
		return recordHeader{}, err
	}
	h, err := parseRecordHeader(b)
	if err != nil {
		return recordHeader{}, err
	}
	if hdrs != nil {
		hdrs[k] = h
	}
	return h, nil
}

// headerDamaged says whether headerOf's error is the record's: its header
// is damaged or cut short, or its segment is gone. Such a record's objects
// do not read, whatever is tried again.
func headerDamaged(err error) bool {
	return errors.Is(err, ErrBadRecord) || errors.Is(err, ErrTruncated) || errors.Is(err, fs.ErrNotExist)
}

// lookup finds an id's entry: a writer sees its uncommitted entries, a
// reader the last commit.
func (s *Store) lookup(id Key) (entry, bool, error) {
	var v []byte
	var ok bool
	var err error
	if s.opts.Writable {
		// The tree's uncommitted changes belong to the writer: reach
		// them under the write lock.
		s.mu.Lock()
		v, ok, err = s.tree.Get(id)
		s.mu.Unlock()
	} else {
		v, ok, err = s.tree.Snapshot().Get(id)
		if err == nil && !ok {
			if e, found := s.recentEntry(id); found {
				return e, true, nil // durable, not yet in the committed index
			}
		}
	}
	if err != nil || !ok {
		return entry{}, false, s.indexErr(err)
	}
	e, err := decodeEntry(v)
	if err != nil {
		return entry{}, false, &CorruptError{ID: id, Inline: true, Reason: err.Error()}
	}
	return e, true, nil
}

// recentEntry finds a reader's object past the watermark; one it does not
// know may have been written since it looked (refreshRecent).
func (s *Store) recentEntry(id Key) (entry, bool) {
	s.recentMu.RLock()
	e, ok := s.recent[id]
	s.recentMu.RUnlock()
	if ok || !s.refreshRecent() {
		return e, ok
	}
	s.recentMu.RLock()
	e, ok = s.recent[id]
	s.recentMu.RUnlock()
	return e, ok
}

// readEntry reads an object from where its entry says and checks its hash.
// useCache=false re-reads the segment (dedup checks and verify must see the
// disk, not what we remember).
//
// An inline object is read from its entry, except when useCache is false:
// then its segment copy is checked too, because the segment copy is the one
// a rebuilt index would keep.
func (s *Store) readEntry(id Key, e entry, useCache bool) ([]byte, error) {
	if e.Inline {
		if ID(e.Data) != id {
			return nil, &CorruptError{ID: id, Inline: true, Reason: "content hash mismatch"}
		}
		if useCache {
			return append([]byte(nil), e.Data...), nil
		}
	}
	bad := func(reason string) error {
		return &CorruptError{ID: id, Segment: e.Loc.Segment, Offset: e.Loc.Offset, Reason: reason}
	}
	var blk *decodedBlock
	if useCache {
		blk = s.blocks.get(blockKey{e.Loc.Segment, e.Loc.Offset})
	}
	if blk == nil && e.Size >= rangedMin {
		// A big object alone in its record, too big for the block cache:
		// decoded straight into the buffer returned, not into a block
		// that is then copied (three copies of it held at once).
		// readAll, not ReadAll: readEntry runs under s.mu too (Put's
		// dedup check, gc), where ReadAll's look-up again would wait on
		// it; GetKind has a retry of its own.
		if r := s.openAlone(id, e); r != nil && int(r.h.Raw) > s.blocks.max/4 {
			return r.readAll()
		}
	}
	if blk == nil {
		var err error
		blk, err = s.readBlock(e.Loc.Segment, e.Loc.Offset)
		if err != nil {
			ce := bad(err.Error()).(*CorruptError)
			ce.cause = err
			return nil, ce
		}
		s.blocks.put(blockKey{e.Loc.Segment, e.Loc.Offset}, blk)
	}
	if blk.kind != e.Kind {
		return nil, bad(fmt.Sprintf("record holds %s objects, index says %s", blk.kind, e.Kind))
	}
	if e.Loc.Member >= len(blk.offs) || int64(blk.lens[e.Loc.Member]) != e.Size {
		return nil, bad("index entry does not match its record")
	}
	data := blk.raw[blk.offs[e.Loc.Member] : blk.offs[e.Loc.Member]+int(e.Size)]
	if ID(data) != id {
		return nil, bad("content hash mismatch")
	}
	return append([]byte(nil), data...), nil
}

// readBlock reads and decodes one record.
func (s *Store) readBlock(seg uint32, off int64) (*decodedBlock, error) {
	f, err := s.files.get(seg)
	if err != nil {
		return nil, err
	}
	// The file's size bounds what a damaged length field can make us read.
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	r, err := s.readRecordAt(f, seg, off, st.Size(), make([]byte, recHeaderSize))
	if err != nil {
		return nil, err
	}
	return &decodedBlock{kind: r.h.Kind, raw: r.raw, offs: r.offs, lens: r.lens}, nil
}

// ParsePrefix checks a user's id prefix: 4 to 32 hex characters. It returns
// the lowercase prefix.
func ParsePrefix(p string) (string, error) {
	for _, r := range p {
		if r > 0x7f {
			return "", &BadPrefixError{Prefix: p, Reason: "it has non-ASCII characters"}
		}
	}
	lp := strings.ToLower(p)
	for i := 0; i < len(lp); i++ {
		c := lp[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return "", &BadPrefixError{Prefix: p, Reason: fmt.Sprintf("%q is not a hex digit", c)}
		}
	}
	if len(lp) < 4 {
		return "", &BadPrefixError{Prefix: p, Reason: "too short"}
	}
	if len(lp) > 2*len(Key{}) {
		return "", &BadPrefixError{Prefix: p, Reason: "too long"}
	}
	return lp, nil
}

// Resolve finds the one object whose id starts with prefix, like git.
func (s *Store) Resolve(prefix string) (Key, error) {
	lp, err := ParsePrefix(prefix)
	if err != nil {
		return Key{}, err
	}
	var start Key
	hex.Decode(start[:], []byte(lp[:len(lp)&^1]))
	if len(lp)%2 == 1 {
		start[len(lp)/2] = unhex(lp[len(lp)-1]) << 4
	}
	var found []Key
	err = s.ascend(start, func(k Key, _ []byte) bool {
		if !strings.HasPrefix(hex.EncodeToString(k[:]), lp) {
			return false
		}
		found = append(found, k)
		return len(found) <= maxCandidates
	})
	if err != nil {
		return Key{}, err
	}
	switch len(found) {
	case 0:
		return Key{}, &NotFoundError{Prefix: lp}
	case 1:
		return found[0], nil
	}
	sort.Slice(found, func(i, j int) bool { return bytes.Compare(found[i][:], found[j][:]) < 0 })
	amb := &AmbiguousError{Prefix: lp, More: len(found) > maxCandidates}
	for i, id := range found {
		if i == maxCandidates {
			break
		}
		info, err := s.Stat(id)
		if err != nil {
			info = ObjectInfo{ID: id}
		}
		amb.Candidates = append(amb.Candidates, info)
	}
	return Key{}, amb
}

func unhex(c byte) byte {
	if c >= 'a' {
		return c - 'a' + 10
	}
	return c - '0'
}

// ascend walks the committed index in key order. A writer commits first, so
// that scans see what it has written; a reader walks the objects it found
// past the watermark (loadRecent) too, in order.
func (s *Store) ascend(from Key, fn func(Key, []byte) bool) error {
	if s.opts.Writable {
		if err := s.Sync(); err != nil {
			return err
		}
	}
	var keys []Key
	recent := map[Key]entry{}
	s.recentMu.RLock()
	for k, e := range s.recent {
		if bytes.Compare(k[:], from[:]) >= 0 {
			keys = append(keys, k)
			recent[k] = e
		}
	}
	s.recentMu.RUnlock()
	sort.Slice(keys, func(i, j int) bool { return bytes.Compare(keys[i][:], keys[j][:]) < 0 })
	stopped := false
	emit := func(k Key, v []byte) bool {
		if !fn(k, v) {
			stopped = true
		}
		return !stopped
	}
	err := s.tree.Snapshot().Ascend(from, func(k Key, v []byte) bool {
		for len(keys) > 0 && bytes.Compare(keys[0][:], k[:]) < 0 {
			if !emit(keys[0], recent[keys[0]].encode()) {
				return false
			}
			keys = keys[1:]
		}
		return emit(k, v)
	})
	for err == nil && !stopped && len(keys) > 0 {
		emit(keys[0], recent[keys[0]].encode())
		keys = keys[1:]
	}
	return s.indexErr(err)
}

// indexErr names the index file and the way out when a node of it is
// damaged: the tree's own error knows only the offset, and opening the
// index checks its meta slots, not every node, so a damaged node is met
// only when a read comes to it. Errors stay ErrCorrupt underneath.
func (s *Store) indexErr(err error) error {
	if err == nil || !errors.Is(err, index.ErrCorrupt) {
		return err
	}
	return fmt.Errorf("index %s is damaged (%w): run `rook store reindex` to rebuild it from the segments", s.indexPath(), err)
}

// List returns objects newest first (by creation time, then by position in
// the segments), optionally of one kind, at most limit (0: all). It scans
// the index.
func (s *Store) List(kind Kind, limit int) ([]ObjectInfo, error) {
	out, _, err := s.ListCounted(kind, limit)
	return out, err
}

// ListCounted is List, and says how many objects limit left out: a list
// cut short by a default limit must say so (`rook store ls`).
func (s *Store) ListCounted(kind Kind, limit int) (objs []ObjectInfo, more int, err error) {
	var out []ObjectInfo
	var derr error
	hdrs := map[blockKey]recordHeader{}
	err = s.ascend(Key{}, func(k Key, v []byte) bool {
		e, err := decodeEntry(v)
		if err != nil {
			derr = &CorruptError{ID: k, Inline: true, Reason: err.Error()}
			return false
		}
		if kind != 0 && e.Kind != kind {
			return true
		}
		out = append(out, s.infoOf(k, e, hdrs))
		return true
	})
	if err == nil {
		err = derr
	}
	if err != nil {
		return nil, 0, err
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Created != b.Created {
			return a.Created > b.Created
		}
		if a.Segment != b.Segment {
			return a.Segment > b.Segment
		}
		if a.Offset != b.Offset {
			return a.Offset > b.Offset
		}
		return bytes.Compare(a.ID[:], b.ID[:]) < 0
	})
	if limit > 0 && len(out) > limit {
		out, more = out[:limit], len(out)-limit
	}
	return out, more, nil
}

// segmentFiles keeps segment files open for reading.
type segmentFiles struct {
	fs  vfs.FS
	dir string
	mu  sync.Mutex
	m   map[uint32]vfs.File
}

func (sf *segmentFiles) init(fsys vfs.FS, dir string) {
	sf.fs, sf.dir, sf.m = fsys, dir, map[uint32]vfs.File{}
}

func (sf *segmentFiles) get(n uint32) (vfs.File, error) {
	sf.mu.Lock()
	defer sf.mu.Unlock()
	if f, ok := sf.m[n]; ok {
		return f, nil
	}
	f, err := sf.fs.OpenFile(sf.dir+string(os.PathSeparator)+segName(n), os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("open segment: %w", err)
	}
	sf.m[n] = f
	return f, nil
}

// forget closes a segment's read handle (after it was truncated or removed).
func (sf *segmentFiles) forget(n uint32) {
	sf.mu.Lock()
	defer sf.mu.Unlock()
	if f, ok := sf.m[n]; ok {
		f.Close()
		delete(sf.m, n)
	}
}

func (sf *segmentFiles) closeAll() {
	sf.mu.Lock()
	defer sf.mu.Unlock()
	for n, f := range sf.m {
		f.Close()
		delete(sf.m, n)
	}
}

// decodedBlock is a record's decoded bytes and member table.
type decodedBlock struct {
	kind Kind
	raw  []byte
	offs []int
	lens []int
}

type blockKey struct {
	seg uint32
	off int64
}

// blockCache keeps recently decoded blocks, so reading neighbours in a
// packed block decompresses it once. Bounded by decoded bytes, LRU.
type blockCache struct {
	mu    sync.Mutex
	max   int
	size  int
	lru   *list.List
	items map[blockKey]*list.Element
}

type cacheItem struct {
	key blockKey
	blk *decodedBlock
}

func (c *blockCache) init(max int) {
	c.max, c.lru, c.items = max, list.New(), map[blockKey]*list.Element{}
}

func (c *blockCache) get(k blockKey) *decodedBlock {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		c.lru.MoveToFront(el)
		return el.Value.(*cacheItem).blk
	}
	return nil
}

func (c *blockCache) put(k blockKey, b *decodedBlock) {
	if len(b.raw) > c.max/4 {
		return // one huge object would evict everything else
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		c.size -= len(el.Value.(*cacheItem).blk.raw)
		el.Value.(*cacheItem).blk = b
		c.size += len(b.raw)
		c.lru.MoveToFront(el)
	} else {
		c.items[k] = c.lru.PushFront(&cacheItem{key: k, blk: b})
		c.size += len(b.raw)
	}
	for c.size > c.max && c.lru.Len() > 0 {
		el := c.lru.Back()
		it := el.Value.(*cacheItem)
		c.lru.Remove(el)
		delete(c.items, it.key)
		c.size -= len(it.blk.raw)
	}
}

// drop forgets every cached block of a segment.
func (c *blockCache) drop(seg uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, el := range c.items {
		if k.seg == seg {
			c.size -= len(el.Value.(*cacheItem).blk.raw)
			c.lru.Remove(el)
			delete(c.items, k)
		}
	}
}
