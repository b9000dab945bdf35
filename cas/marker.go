package cas

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rookhq/rook/index"
	"github.com/rookhq/rook/internal/vfs"
)

// FormatVersion is the store-level format this build writes and reads. It
// only ratchets up; a store marked with a newer version is refused.
const FormatVersion = 2

// MarkerFile names the format marker under the store home.
const MarkerFile = "FORMAT"

// marker is the store's format marker, a small JSON file written once, by
// `rook init`, through the durable-write helper:
//
//	{"format":1,"created":"2026-11-30T09:41:31Z","check":"1b2c3d4e"}
//
// check is the CRC-32C, in hex, of "format=<n> created=<created>", so a
// marker damaged in place is told from one merely written by another
// version. A malformed marker is an error and is never rewritten: the user
// decides what to do with a store we cannot identify.
type marker struct {
	Format  int64  `json:"format"`
	Created string `json:"created"`
	Check   string `json:"check"`
}

// ErrNewerFormat is returned for a store written by a newer rook.
var ErrNewerFormat = errors.New("store format is newer than this rook: upgrade rook")

// ErrOlderFormat is returned for a store of format 1 (32-byte ids), which
// only pre-release builds wrote: this rook does not convert it.
var ErrOlderFormat = errors.New("store was written by a pre-release rook (format 1, 256-bit ids) that this rook does not read: move the store directory aside and run `rook init`")

// ErrBadMarker is returned for a marker that cannot be read.
var ErrBadMarker = errors.New("format marker is malformed")

// ErrMarkerOtherFormat is returned with ErrBadMarker for a malformed marker
// that still names a format other than this rook's (damaged in place,
// something after it): the way past a malformed marker, a new one written
// by init, would mark that format's data as this rook's.
var ErrMarkerOtherFormat = errors.New("do not move it aside for `rook init`, which would mark the store as this rook's format: put the marker back from a backup, or use the rook that made the store")

// badMarker is the malformed-marker error for why; raw is the marker's
// fields, when it is a JSON object, so that one which still names another
// format says so.
func badMarker(why string, raw map[string]json.RawMessage) error {
	var n int64
	if err := json.Unmarshal(raw["format"], &n); err == nil && n >= 1 && n != FormatVersion {
		return fmt.Errorf("%w: %s; it names format %d, not this rook's %d: %w", ErrBadMarker, why, n, FormatVersion, ErrMarkerOtherFormat)
	}
	return fmt.Errorf("%w: %s", ErrBadMarker, why)
}

func markerCheck(format int64, created string) string {
	return fmt.Sprintf("%08x", crc32.Checksum([]byte(fmt.Sprintf("format=%d created=%s", format, created)), castagnoli))
}

func encodeMarker(created time.Time) []byte {
	m := marker{Format: FormatVersion, Created: created.UTC().Format(time.RFC3339)}
	m.Check = markerCheck(m.Format, m.Created)
	b, _ := json.Marshal(m)
	return append(b, '\n')
}

// parseMarker reads a marker and returns its format version. It never
// panics, whatever the bytes.
func parseMarker(b []byte) (int64, error) {
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil || raw == nil {
		return 0, fmt.Errorf("%w: not a JSON object", ErrBadMarker)
	}
	if dec.More() {
		return 0, badMarker("trailing data", raw)
	}
	var m marker
	fv, ok := raw["format"]
	if !ok {
		return 0, fmt.Errorf("%w: no \"format\" field", ErrBadMarker)
	}
	var n json.Number
	if len(fv) == 0 || fv[0] < '0' || fv[0] > '9' {
		return 0, fmt.Errorf("%w: \"format\" is not a number", ErrBadMarker)
	}
	if err := json.Unmarshal(fv, &n); err != nil {
		return 0, fmt.Errorf("%w: \"format\" is not a number", ErrBadMarker)
	}
	f, err := n.Int64()
	if err != nil || f < 1 || f > 1<<31 {
		return 0, fmt.Errorf("%w: \"format\" %s is not a version", ErrBadMarker, n)
	}
	m.Format = f
	if err := json.Unmarshal(raw["created"], &m.Created); err != nil {
		return 0, badMarker(`"created" is not a string`, raw)
	}
	if err := json.Unmarshal(raw["check"], &m.Check); err != nil || m.Check != markerCheck(m.Format, m.Created) {
		return 0, badMarker("checksum does not match", raw)
	}
	if m.Format > FormatVersion {
		return m.Format, fmt.Errorf("%w (store format %d, this rook reads up to %d)", ErrNewerFormat, m.Format, FormatVersion)
	}
	if m.Format < FormatVersion {
		return m.Format, fmt.Errorf("%w (store format %d, this rook reads %d)", ErrOlderFormat, m.Format, FormatVersion)
	}
	return m.Format, nil
}

// What a store's parts say of the format that made it, when its marker
// does not read (partsFormat).
type partsVerdict int

const (
	partsUnknown partsVerdict = iota // no part read: nothing to go by
	partsThis                        // this rook's format
	partsOlder                       // format 1, a pre-release rook's
	partsNewer                       // a newer rook's
)

// partsFormat reads the versions a store's parts carry, to tell which
// rook made a store whose marker is zeroed or garbled: the index's meta
// slots (index format 1 was store format 1's, 256-bit ids; 2 is this
// rook's) and the segment headers (1 is this rook's), only those whose
// checksum is right. what names the versions read, for the message.
func partsFormat(fsys vfs.FS, home string) (v partsVerdict, what string) {
	var seen []string
	verdict := func(newer, older bool) {
		switch {
		case newer:
			v = partsNewer
		case older && v != partsNewer:
			v = partsOlder
		case v == partsUnknown:
			v = partsThis
		}
	}
	for _, iv := range index.SlotVersions(fsys, filepath.Join(home, IndexDir, IndexFile)) {
		if s := fmt.Sprintf("index format %d", iv); !slices.Contains(seen, s) {
			seen = append(seen, s)
		}
		verdict(iv > index.FormatVersion, iv < index.FormatVersion)
	}
	entries, _ := fsys.ReadDir(filepath.Join(home, SegmentsDir))
	segs := map[uint16]int{}
	for _, en := range entries {
		if _, ok := parseSegName(en.Name()); !ok {
			continue
		}
		b, err := readHead(fsys, filepath.Join(home, SegmentsDir, en.Name()), segHeaderSize)
		if err != nil {
			continue
		}
		if h, err := parseSegmentHeader(b); err == nil || errors.Is(err, ErrNewerSegment) {
			segs[h.Version]++
			verdict(h.Version > segVersion, false)
		}
	}
	for _, sv := range slices.Sorted(maps.Keys(segs)) {
		seen = append(seen, fmt.Sprintf("%d segment(s) of format %d", segs[sv], sv))
	}
	return v, strings.Join(seen, ", ")
}

// readHead reads up to n bytes from the start of a file.
func readHead(fsys vfs.FS, name string, n int) ([]byte, error) {
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	m, err := io.ReadFull(f, b)
	if err != nil && err != io.ErrUnexpectedEOF {
		return nil, err
	}
	return b[:m], nil
}

// withPartsFormat is err, a marker that does not read, with what the
// store's parts say of the rook that made it: a newer or pre-release
// rook's parts mean the way past a malformed marker (a new one, written
// by init) would mark another format's data as this rook's
// (ErrMarkerOtherFormat); this rook's parts, that it is the way.
func withPartsFormat(fsys vfs.FS, home string, err error) error {
	if !errors.Is(err, ErrBadMarker) || errors.Is(err, ErrMarkerOtherFormat) {
		return err
	}
	v, what := partsFormat(fsys, home)
	switch v {
	case partsThis:
		return fmt.Errorf("%w; the store's parts are this rook's format (%s)", err, what)
	case partsOlder:
		return fmt.Errorf("%w; the store's parts (%s) say a pre-release rook made it (format 1, 256-bit ids), which this rook does not read: use that rook, or move the store directory aside and run `rook init`: %w", err, what, ErrMarkerOtherFormat)
	case partsNewer:
		return fmt.Errorf("%w; the store's parts (%s) say a newer rook made it: upgrade rook to read it: %w", err, what, ErrMarkerOtherFormat)
	}
	return err
}
