// Package dict holds the zstd dictionaries rook compresses with. Each is
// immutable, has a stable numeric id that every record compressed with it
// names (so decoding never tries several), and belongs to one object kind.
// Retraining adds a new dictionary with a new id; none is ever rewritten.
// One is deleted only when it is dropped (`rook store repack
// --drop-dictionary N`: a dictionary trained on objects since collected may
// hold pieces of them), and only once no record names it (Drop).
//
// On disk: DIR/<id as 8 decimal digits>.zdict, written once through the
// durable-write helper:
//
//	magic "rookdct1" [8] | version u16 (=1) | kind u8 | reserved u8 (=0)
//	id u32 | created u64 (unix nanoseconds) | length u32 | crc32c u32
//	content [length]  (a zstd dictionary, as zstd --train makes them)
//
// crc32c (Castagnoli) covers the first 28 bytes and the content.
//
// DIR/HIGHEST records the highest id ever given out, so that an id is
// never given out twice, even when its file is lost (a user deleted it):
// records that named the lost dictionary must keep failing as "dictionary
// N is missing" (and the file from a backup must still fit), never decode
// with another dictionary of the same id. Written through the durable-write
// helper before the dictionary file it makes room for:
//
//	magic "rookdhi1" [8] | version u16 (=1) | reserved u16 (=0)
//	highest u32 | crc32c u32 of bytes [0,16)
//
// DIR/<id>.dropped marks a dictionary dropped: written (durably) once no
// record names it, before its .zdict file is deleted. A dictionary with
// the mark is no kind's newest (nothing compresses with it again), and
// one whose file is gone is not missing.
package dict

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	kdict "github.com/klauspost/compress/dict"
	"github.com/klauspost/compress/zstd"

	"github.com/rookhq/rook/internal/vfs"
)

// None is the dictionary id of records compressed without a dictionary.
const None uint32 = 0

// Set resolves dictionary ids and names the one new records of a kind use.
type Set interface {
	// Lookup returns a dictionary's content; an error names what is wrong
	// (missing, damaged, written by a newer rook).
	Lookup(id uint32) ([]byte, error)
	// Newest is the id new records of kind should use (None: no dictionary).
	Newest(kind uint8) uint32
}

// Empty is the set of a store without dictionaries.
type Empty struct{}

// Lookup always fails: an empty set holds no dictionary.
func (Empty) Lookup(id uint32) ([]byte, error) {
	return nil, fmt.Errorf("dictionary %d is not in this store", id)
}

// Newest is always None.
func (Empty) Newest(uint8) uint32 { return None }

const (
	magic      = "rookdct1"
	version    = 1
	headerSize = 32
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// HighestFile is the name, in the dictionary directory, of the record of
// the highest dictionary id ever given out.
const HighestFile = "HIGHEST"

const (
	highestMagic   = "rookdhi1"
	highestVersion = 1
	highestSize    = 20
)

// EncodeHighest lays out the record of the highest id given out.
func EncodeHighest(id uint32) []byte {
	b := make([]byte, highestSize)
	copy(b, highestMagic)
	binary.LittleEndian.PutUint16(b[8:], highestVersion)
	binary.LittleEndian.PutUint32(b[12:], id)
	binary.LittleEndian.PutUint32(b[16:], crc32.Checksum(b[:16], castagnoli))
	return b
}

// DecodeHighest reads the record of the highest id given out. It never
// panics.
func DecodeHighest(b []byte) (uint32, error) {
	if len(b) < 10 || string(b[:8]) != highestMagic {
		return 0, errors.New("not a rook dictionary id record")
	}
	if v := binary.LittleEndian.Uint16(b[8:]); v != highestVersion {
		return 0, fmt.Errorf("dictionary id record version %d (this rook reads %d; upgrade rook?)", v, highestVersion)
	}
	if len(b) != highestSize {
		return 0, fmt.Errorf("%d bytes, not %d", len(b), highestSize)
	}
	if crc32.Checksum(b[:16], castagnoli) != binary.LittleEndian.Uint32(b[16:]) {
		return 0, errors.New("checksum mismatch")
	}
	if binary.LittleEndian.Uint16(b[10:]) != 0 {
		return 0, errors.New("reserved bytes set")
	}
	return binary.LittleEndian.Uint32(b[12:]), nil
}

// Info describes one dictionary.
type Info struct {
	ID      uint32    `json:"id"`
	Kind    uint8     `json:"kind"`
	Created time.Time `json:"created"`
	Bytes   int       `json:"bytes"`
	File    string    `json:"file"`
	Damaged string    `json:"damaged,omitempty"`
}

// Dir is the dictionaries in a directory.
type Dir struct {
	fs  vfs.FS
	dir string

	mu      sync.RWMutex
	content map[uint32][]byte
	info    map[uint32]Info
	newest  map[uint8]uint32
	// highest is what HIGHEST records (0: no record, a store from before
	// it); highestErr says why it cannot be read (ids cannot be given out).
	highest    uint32
	highestErr error
	// damaged remembers, per id, why a dictionary file that is there did
	// not decode, with the file's size and times when it was read: every
	// record that needs it looks it up (rook store verify: thousands),
	// and reading and checking a 4 MiB file each time took 5 ms. A file
	// that changed since (put back from a backup) is read again.
	damaged map[uint32]damagedFile
	// withheld: ids no new record may use (being dropped: Withhold), and
	// dropped, those whose drop mark is written (their file may be there
	// still, when a drop was cut short).
	withheld map[uint32]bool
	dropped  map[uint32]bool
}

// DroppedSuffix names a dictionary's drop mark: DIR/<id>.dropped.
const DroppedSuffix = ".dropped"

// DroppedName is the drop mark's file name of dictionary id.
func DroppedName(id uint32) string { return fmt.Sprintf("%08d%s", id, DroppedSuffix) }

// damagedFile is why a dictionary file did not decode, and which file
// that was.
type damagedFile struct {
	size         int64
	mtime, ctime int64
	err          error
}

// sameFile reports whether fi describes the file that was read: the
// change time catches a copy that keeps the size and modification time.
func (f damagedFile) sameFile(fi fs.FileInfo) bool {
	return fi.Size() == f.size && fi.ModTime().UnixNano() == f.mtime && vfs.ChangeTime(fi) == f.ctime
}

// FileName is a dictionary's file name.
func FileName(id uint32) string { return fmt.Sprintf("%08d.zdict", id) }

// Encode lays out a dictionary file.
func Encode(id uint32, kind uint8, created time.Time, content []byte) []byte {
	b := make([]byte, headerSize, headerSize+len(content))
	copy(b, magic)
	binary.LittleEndian.PutUint16(b[8:], version)
	b[10] = kind
	binary.LittleEndian.PutUint32(b[12:], id)
	binary.LittleEndian.PutUint64(b[16:], uint64(created.UnixNano()))
	binary.LittleEndian.PutUint32(b[24:], uint32(len(content)))
	c := crc32.Update(0, castagnoli, b[:28])
	c = crc32.Update(c, castagnoli, content)
	binary.LittleEndian.PutUint32(b[28:], c)
	return append(b, content...)
}

// Decode reads a dictionary file. It never panics.
func Decode(b []byte) (Info, []byte, error) {
	var in Info
	if len(b) < headerSize || string(b[:8]) != magic {
		return in, nil, errors.New("not a rook dictionary file")
	}
	if v := binary.LittleEndian.Uint16(b[8:]); v != version {
		return in, nil, fmt.Errorf("dictionary file version %d (this rook reads %d; upgrade rook?)", v, version)
	}
	if b[11] != 0 {
		return in, nil, errors.New("reserved byte set")
	}
	n := binary.LittleEndian.Uint32(b[24:])
	if int64(n) != int64(len(b)-headerSize) {
		return in, nil, fmt.Errorf("length %d, file holds %d", n, len(b)-headerSize)
	}
	c := crc32.Update(0, castagnoli, b[:28])
	c = crc32.Update(c, castagnoli, b[headerSize:])
	if c != binary.LittleEndian.Uint32(b[28:]) {
		return in, nil, errors.New("checksum mismatch")
	}
	in.Kind = b[10]
	in.ID = binary.LittleEndian.Uint32(b[12:])
	in.Created = time.Unix(0, int64(binary.LittleEndian.Uint64(b[16:]))).UTC()
	in.Bytes = int(n)
	return in, b[headerSize:], nil
}

// OpenDir loads every dictionary in dir. A damaged file does not stop the
// open: its dictionary is listed as damaged, and Lookup of its id says so,
// so the objects that need it are reported, never silently dropped.
func OpenDir(fsys vfs.FS, dir string) (*Dir, error) {
	d := &Dir{fs: fsys, dir: dir, content: map[uint32][]byte{}, info: map[uint32]Info{}, newest: map[uint8]uint32{}, damaged: map[uint32]damagedFile{},
		withheld: map[uint32]bool{}, dropped: map[uint32]bool{}}
	ents, err := fsys.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return d, nil
	}
	if err != nil {
		return nil, err
	}
	hpath := filepath.Join(dir, HighestFile)
	if b, err := vfs.ReadFile(fsys, hpath); err == nil {
		d.highest, err = DecodeHighest(b)
		if err != nil {
			d.highestErr = fmt.Errorf("%s: %w", hpath, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		d.highestErr = err
	}
	for _, e := range ents {
		if name, ok := strings.CutSuffix(e.Name(), DroppedSuffix); ok && len(name) == 8 {
			if id, err := strconv.ParseUint(name, 10, 32); err == nil && id != 0 {
				d.dropped[uint32(id)] = true
			}
			continue
		}
		name, ok := strings.CutSuffix(e.Name(), ".zdict")
		if !ok || len(name) != 8 {
			continue
		}
		id64, err := strconv.ParseUint(name, 10, 32)
		if err != nil || id64 == 0 {
			continue
		}
		id := uint32(id64)
		path := filepath.Join(dir, e.Name())
		b, err := vfs.ReadFile(fsys, path)
		var in Info
		var content []byte
		if err == nil {
			in, content, err = Decode(b)
		}
		if err == nil && in.ID != id {
			err = fmt.Errorf("file names dictionary %d, header %d", id, in.ID)
		}
		if err != nil {
			d.info[id] = Info{ID: id, File: path, Damaged: err.Error()}
			continue
		}
		in.File = path
		d.info[id] = in
		d.content[id] = content
	}
	d.newestLocked()
	return d, nil
}

// newestLocked sets each kind's newest dictionary: the highest id of a
// good one that is neither dropped nor withheld.
func (d *Dir) newestLocked() {
	clear(d.newest)
	for id, in := range d.info {
		if in.Damaged != "" || d.dropped[id] || d.withheld[id] {
			continue
		}
		if id > d.newest[in.Kind] {
			d.newest[in.Kind] = id
		}
	}
}

// Withhold makes the dictionaries ids no kind's newest, in this Dir: what
// is compressed from now on uses the kind's newest other one (or none), so
// a rewrite of every record leaves none naming them (Drop's first step).
func (d *Dir) Withhold(ids []uint32) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, id := range ids {
		d.withheld[id] = true
	}
	d.newestLocked()
}

// Known says whether dictionary id has a file here, and whether it was
// dropped (its mark written; its file may be there still).
func (d *Dir) Known(id uint32) (present, dropped bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	_, present = d.info[id]
	return present, d.dropped[id]
}

// Dropped lists the dictionaries dropped (their marks), by id.
func (d *Dir) Dropped() []uint32 {
	d.mu.RLock()
	defer d.mu.RUnlock()
	out := make([]uint32, 0, len(d.dropped))
	for id := range d.dropped {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Drop deletes dictionary id, which the caller has made sure no record
// names (and withheld, so none will): it writes the drop mark durably,
// then deletes the file and syncs the directory. A crash between leaves
// the file and the mark: the dictionary is no kind's newest, reads as
// before, and a drop again deletes it. Its id stays given out (HIGHEST).
func (d *Dir) Drop(id uint32) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.withheld[id] {
		return fmt.Errorf("dictionary %d is not withheld: records may name it", id)
	}
	if err := d.fs.WriteFileAtomic(filepath.Join(d.dir, DroppedName(id)), []byte("dropped\n"), 0o600); err != nil {
		return fmt.Errorf("mark dictionary %d dropped: %w", id, err)
	}
	d.dropped[id] = true
	path := filepath.Join(d.dir, FileName(id))
	if err := d.fs.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete dictionary %d (%s): %w: it is marked dropped (nothing compresses with it again); run the drop again to delete it", id, path, err)
	}
	if err := d.fs.SyncDir(d.dir); err != nil {
		return fmt.Errorf("delete dictionary %d (%s): sync %s: %w: a crash may bring the file back (marked dropped, nothing compresses with it); run the drop again to delete it", id, path, d.dir, err)
	}
	delete(d.info, id)
	delete(d.content, id)
	delete(d.damaged, id)
	return nil
}

// Lookup returns a dictionary's content. A dictionary this Dir has not
// seen is looked for on disk again: another process (rook store train) may
// have added it since the Dir was opened, and a writer there may have
// recompressed (repack) objects with it that a reader here now reads.
// Dictionary files are written once, whole (temp file and rename), and
// never rewritten, so what is read then stands. One that was damaged or
// missing is read again too: the user puts it back from a backup, and a
// process that runs for long (the MCP server) must then read it.
func (d *Dir) Lookup(id uint32) ([]byte, error) {
	d.mu.RLock()
	c, ok := d.content[id]
	d.mu.RUnlock()
	if ok {
		return c, nil
	}
	if id != None && d.fs != nil {
		path := filepath.Join(d.dir, FileName(id))
		// Stat before reading: a file replaced between the two is then
		// read again next time, never taken for the damaged one.
		fi, serr := d.fs.Stat(path)
		if serr == nil {
			d.mu.RLock()
			f, ok := d.damaged[id]
			d.mu.RUnlock()
			if ok && f.sameFile(fi) {
				return nil, f.err
			}
		}
		b, err := vfs.ReadFile(d.fs, path)
		if err == nil {
			in, content, err := Decode(b)
			if err == nil && in.ID == id {
				in.File = path
				d.mu.Lock()
				if _, dup := d.content[id]; !dup {
					d.info[id] = in
					d.content[id] = content
				}
				c = d.content[id]
				d.mu.Unlock()
				return c, nil
			}
			if err == nil {
				err = fmt.Errorf("file names dictionary %d, header %d", id, in.ID)
			}
			// There, but not whole: say so (as OpenDir would have), not
			// that it is missing. Remembered with the file's stat, so the
			// next lookup does not read it again unless it changed (put
			// back from a backup).
			err = fmt.Errorf("dictionary %d (%s) is damaged: %s", id, path, err)
			if serr == nil {
				d.mu.Lock()
				d.damaged[id] = damagedFile{size: fi.Size(), mtime: fi.ModTime().UnixNano(), ctime: vfs.ChangeTime(fi), err: err}
				d.mu.Unlock()
			}
			return nil, err
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("dictionary %d (%s) cannot be read: %w", id, path, err)
		}
	}
	return nil, fmt.Errorf("dictionary %d is missing from %s", id, d.dir)
}

// Newest is the newest good dictionary of kind.
func (d *Dir) Newest(kind uint8) uint32 {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.newest[kind]
}

// List describes every dictionary, by id.
func (d *Dir) List() []Info {
	d.mu.RLock()
	defer d.mu.RUnlock()
	out := make([]Info, 0, len(d.info))
	for _, in := range d.info {
		out = append(out, in)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Missing lists the ids given out (up to what HIGHEST records) that have
// no file: a file lost (records naming it cannot be read until it is put
// back), or an id a crash left without its file (nothing names it).
// List cannot show them: it lists the files present.
//
// With HIGHEST unreadable (IDsError), the ids given out are not known:
// up to the highest file present, the ids with no file are listed (one
// lost above every file present cannot be told from one never given
// out; `rook store verify` names any a record needs).
func (d *Dir) Missing() []uint32 {
	d.mu.RLock()
	defer d.mu.RUnlock()
	hi := d.highest
	if d.highestErr != nil {
		hi = max(hi, d.maxFileLocked())
	}
	var out []uint32
	for id := uint32(1); id <= hi && id != 0; id++ {
		if _, ok := d.info[id]; !ok && !d.dropped[id] {
			out = append(out, id)
		}
	}
	return out
}

// Add stores a new dictionary for kind under the next free id and makes it
// the kind's newest. The id is recorded as given out before the file is
// written: a crash between the two leaves an id without a file, which
// nothing names, never a file whose id could be given out again. The file
// is durable when Add returns.
func (d *Dir) Add(kind uint8, content []byte, now time.Time) (uint32, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	id, err := d.nextLocked()
	if err != nil {
		return 0, err
	}
	if err := d.fs.MkdirAll(d.dir, 0o700); err != nil {
		return 0, err
	}
	if err := d.fs.WriteFileAtomic(filepath.Join(d.dir, HighestFile), EncodeHighest(id), 0o600); err != nil {
		return 0, fmt.Errorf("record dictionary id %d as given out: %w", id, err)
	}
	d.highest = id
	path := filepath.Join(d.dir, FileName(id))
	if err := d.fs.WriteFileAtomic(path, Encode(id, kind, now, content), 0o600); err != nil {
		return 0, fmt.Errorf("write dictionary: %w", d.takeBack(path, err))
	}
	d.info[id] = Info{ID: id, Kind: kind, Created: now.UTC(), Bytes: len(content), File: path}
	d.content[id] = content
	d.newest[kind] = id
	return id, nil
}

// takeBack removes the file of an Add that failed, if it is there: the
// rename may have happened and the directory sync after it failed. Left,
// the next writer took it as its kind's newest and compressed with it,
// and a power cut could then take its name, leaving those records
// needing a dictionary that is gone. Nothing names it yet (the writer
// that adds holds the store's lock and has not used it), and its id stays
// given out (HIGHEST). It returns err, with what to do if the file stays.
func (d *Dir) takeBack(path string, err error) error {
	if _, serr := d.fs.Stat(path); serr != nil {
		return err
	}
	if rerr := d.fs.Remove(path); rerr != nil {
		return fmt.Errorf("%w; and removing the file failed (%v): remove %s before rook writes again, as nothing names it and its name may not survive a power cut", err, rerr, path)
	}
	d.fs.SyncDir(d.dir) // at best: unsynced, the removal still hides it from the next writer
	return err
}

// NextID is the id the next Add will use: one more than the highest ever
// given out, or than the highest file present, whichever is higher. An
// error says why no id can be given out safely.
func (d *Dir) NextID() (uint32, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.nextLocked()
}

// IDsError says why the record of the dictionary ids given out (HIGHEST)
// cannot be read, and what to do; nil when it reads or is not there.
// While it does not read, no dictionary can be added (train, maintain
// fail), though every record still reads: doctor and verify say so.
func (d *Dir) IDsError() error {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.idsErrLocked()
}

func (d *Dir) idsErrLocked() error {
	if d.highestErr == nil {
		return nil
	}
	return fmt.Errorf("the record of the dictionary ids given out cannot be read (%w), so a new dictionary could take the id of a lost one: put %s back from a backup, or, if no dictionary file was ever lost, remove it (the highest file present is then taken as the highest id)", d.highestErr, filepath.Join(d.dir, HighestFile))
}

func (d *Dir) nextLocked() (uint32, error) {
	if err := d.idsErrLocked(); err != nil {
		return 0, err
	}
	hi := max(d.highest, d.maxFileLocked())
	if hi == math.MaxUint32 {
		return 0, errors.New("every dictionary id is taken")
	}
	return hi + 1, nil
}

// maxFileLocked is the highest id with a file present (damaged or not).
func (d *Dir) maxFileLocked() uint32 {
	hi := uint32(0)
	for id := range d.info {
		hi = max(hi, id)
	}
	for id := range d.dropped {
		hi = max(hi, id) // a dropped id is never given out again either
	}
	return hi
}

// RecordHighest makes sure the highest dictionary file present is
// recorded as given out, for a store written before the record existed (or
// given files from elsewhere): once recorded, losing that file no longer
// frees its id. A writer calls it on open; it writes only when the record
// is behind, and leaves an unreadable record alone (Add then says what to
// do).
func (d *Dir) RecordHighest() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	hi := d.maxFileLocked()
	if d.highestErr != nil || hi <= d.highest {
		return nil
	}
	if err := d.fs.WriteFileAtomic(filepath.Join(d.dir, HighestFile), EncodeHighest(hi), 0o600); err != nil {
		return fmt.Errorf("record dictionary id %d as given out: %w", hi, err)
	}
	d.highest = hi
	return nil
}

// MaxSample is how much of each sample Build learns from: its head.
// klauspost/compress's builder (v1.20.4) panics on a sample of a few
// hundred KB (a 420 KB text file: slice bounds out of range in the
// encoder's addBlock); a dictionary of at most 112 KiB learns what recurs
// from the first 128 KiB of each sample as well as from all of it.
const MaxSample = 128 << 10

// Build trains a zstd dictionary of at most size bytes from samples, the
// whole dictionary (what its file holds after rook's header): its header
// and entropy tables as well as the content it learnt. id is written into
// it, so frames compressed with it name it too. A failure of the builder
// itself (a panic) is an error, never a crash of the command.
//
// The builder's own bound is the learnt content's: the tables come on top
// (some hundred bytes, more with varied samples), so `rook store train
// --size 16384` made 16,533-byte dictionaries and --size 256 395 bytes.
// The content asked for is cut by what the last try went over, a few
// tries at most.
func Build(samples [][]byte, size int, id uint32) ([]byte, error) {
	heads := make([][]byte, len(samples))
	for i, s := range samples {
		heads[i] = s[:min(len(s), MaxSample)]
	}
	ask := size
	for try := 0; ; try++ {
		content, err := build(heads, ask, id)
		if err != nil {
			return nil, err
		}
		over := len(content) - size
		if over <= 0 {
			return content, nil
		}
		ask -= max(over, ask/8)
		if try+1 == buildTries || ask < minContent {
			return nil, fmt.Errorf("no dictionary of at most %d bytes: the smallest built came to %d, its header and entropy tables on top of what it learnt; give a larger size", size, len(content))
		}
	}
}

// buildTries bounds the builds Build makes to keep to its size; minContent
// is the least learnt content it asks the builder for.
const (
	buildTries = 6
	minContent = 8
)

// build is one run of the builder: content of at most ask bytes, its
// tables on top.
func build(heads [][]byte, ask int, id uint32) (content []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			content, err = nil, fmt.Errorf("the dictionary builder failed: %v", r)
		}
	}()
	return kdict.BuildZstdDict(heads, kdict.Options{MaxDictSize: ask, HashBytes: 6, ZstdDictID: id, ZstdLevel: zstd.SpeedBetterCompression})
}

// IsZstdDict reports whether content is in zstd's dictionary format (as
// opposed to raw content used as history).
func IsZstdDict(content []byte) bool {
	return len(content) >= 8 && binary.LittleEndian.Uint32(content) == 0xEC30A437
}
