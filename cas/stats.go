package cas

import (
	"io/fs"
	"path/filepath"

	"github.com/rookhq/rook/internal/vfs"
)

// KindStats are one kind's totals.
type KindStats struct {
	Kind    string `json:"kind"`
	Objects int64  `json:"objects"`
	Inline  int64  `json:"inline"`
	Size    int64  `json:"logical_bytes"`
	Stored  int64  `json:"stored_bytes"`
}

// DiskUsage is what the store takes on disk, by part.
type DiskUsage struct {
	Index    int64 `json:"index"`
	Segments int64 `json:"segments"`
	Dicts    int64 `json:"dictionaries"`
	Events   int64 `json:"event_log"`
	Other    int64 `json:"other"`
	Total    int64 `json:"total"`
}

// Stats are the store's totals. They come from counters the index keeps, so
// computing them costs the same for ten objects or ten million.
type Stats struct {
	Objects    int64 `json:"objects"`
	Inline     int64 `json:"inline"`
	InSegments int64 `json:"in_segments"`
	Size       int64 `json:"logical_bytes"`
	Stored     int64 `json:"stored_bytes"`
	// RepeatedPuts and RepeatedBytes count the puts of bytes the store
	// held already (nothing written: dedup), and their bytes, in the
	// store's life (a reindex keeps them; one that cannot read the old
	// index starts them at 0). Not a saving of what the store holds: gc
	// does not lower them (which object a repeated put was of is not
	// kept), so after gc they count puts of objects gone since: "saved
	// by dedup 2.8 MiB" beside "the store is empty".
	RepeatedPuts  int64       `json:"repeated_puts"`
	RepeatedBytes int64       `json:"repeated_put_bytes"`
	Segments      int         `json:"segments"`
	Disk          DiskUsage   `json:"disk"`
	Kinds         []KindStats `json:"kinds"`
}

// SegmentsHoldRecords says whether the segment files hold more than their
// headers: records, which an index naming no object (Objects 0) may not
// name (records of a dictionary that cannot be loaded, an index rebuilt
// meanwhile): such a store is not empty.
func (st Stats) SegmentsHoldRecords() bool {
	return st.Disk.Segments > int64(st.Segments)*segHeaderSize
}

// Stats returns the store's totals: the current ones (uncommitted
// included) for the writer; for a reader, the committed ones plus the
// objects of the records a writer made durable since its last commit,
// which the reader reads and lists (loadRecent): exact, and no scan of
// the objects (the reader looked past the watermark when it opened, and
// looks again only when the segments grew). Beside a long import, the
// committed counters alone said "objects 0" while `rook store ls` listed
// what it had put.
func (s *Store) Stats() (Stats, error) {
	var c counters
	if s.opts.Writable {
		s.mu.Lock()
		c = s.ctr
		kinds := map[Kind]*kindCounters{}
		for k, v := range s.ctr.Kinds {
			vv := *v
			kinds[k] = &vv
		}
		c.Kinds = kinds
		s.mu.Unlock()
	} else {
		var err error
		if c, err = decodeCounters(s.tree.Snapshot().UserMeta()); err != nil {
			return Stats{}, err
		}
		s.refreshRecent()
		for _, r := range s.recentEntries() {
			c.add(r.e, +1)
		}
	}
	st := Stats{RepeatedPuts: c.DedupHits, RepeatedBytes: c.DedupBytes}
	for _, k := range Kinds {
		kc := c.Kinds[k]
		if kc == nil || kc.Objects == 0 {
			continue
		}
		st.Objects += kc.Objects
		st.Inline += kc.Inline
		st.Size += kc.Size
		st.Stored += kc.Stored
		st.Kinds = append(st.Kinds, KindStats{Kind: k.String(), Objects: kc.Objects, Inline: kc.Inline, Size: kc.Size, Stored: kc.Stored})
	}
	st.InSegments = st.Objects - st.Inline
	segs, err := s.listSegments()
	if err != nil {
		return st, err
	}
	st.Segments = len(segs)
	st.Disk, err = s.diskUsage()
	return st, err
}

func (s *Store) diskUsage() (DiskUsage, error) { return MeasureDisk(s.fs, s.home) }

// IsHomeEntry says whether name, in a store's home, is the store's: a
// part of docs/storage.md's Home layout, this package's or the layers'
// above it. Anything else there is the user's own.
func IsHomeEntry(name string) bool {
	switch name {
	case MarkerFile, LockFile, SegmentsDir, IndexDir, DictDir, EventsDir, TornDir,
		"config.toml", "refs", "inbox", "cache":
		return true
	}
	return false
}

// MeasureDisk sizes every file of a store's home, by part, open or not
// (`rook import` measures the store before it opens it and after it has
// closed it, when the index is committed). It walks the home's few
// directories (segments are 64 MiB each), never the objects.
func MeasureDisk(fsys vfs.FS, home string) (DiskUsage, error) {
	var u DiskUsage
	ents, err := fsys.ReadDir(home)
	if err != nil {
		return u, err
	}
	for _, e := range ents {
		// A home may hold the user's own files beside the store (init
		// takes a directory that is not empty): walking them measured the
		// user's tree as the store's, and one unreadable directory there
		// failed stat, doctor and import.
		if !IsHomeEntry(e.Name()) {
			continue
		}
		n, err := treeSize(fsys, filepath.Join(home, e.Name()), e)
		if err != nil {
			return u, err
		}
		switch e.Name() {
		case IndexDir:
			u.Index += n
		case SegmentsDir:
			u.Segments += n
		case DictDir:
			u.Dicts += n
		case EventsDir:
			u.Events += n
		default:
			u.Other += n
		}
		u.Total += n
	}
	return u, nil
}

func treeSize(fsys vfs.FS, path string, e fs.DirEntry) (int64, error) {
	if !e.IsDir() {
		info, err := e.Info()
		if err != nil {
			return 0, nil // removed meanwhile
		}
		return info.Size(), nil
	}
	ents, err := fsys.ReadDir(path)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, c := range ents {
		n, err := treeSize(fsys, filepath.Join(path, c.Name()), c)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}
