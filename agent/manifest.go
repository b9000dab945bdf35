package agent

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rookhq/rook/cas"
)

// Manifest is a capture: which files a workspace held at one moment. It is
// stored as a snapshot object (JSON) and named by a checkpoint event (a
// session capture) or by a checkpoint ref (a named workspace checkpoint).
//
// Format (docs/storage.md, "Captures"), version 1:
//
//	{"v":1,"root":"/abs/workspace","captured_at":"...","label":"...",
//	 "files":{"rel/path":{"id":"<32 hex>","size":12,"mode":"0644"}, "link":{"id":...,"mode":"link"}},
//	 "absent":["rel/gone"],"total_bytes":12}
//
// Version 2 adds "dirs":["rel/dir","rel/dir/sub"]: the directories the
// capture took whole (a named directory and every directory under it). A
// path under one of them that the capture does not hold did not exist
// then: a file added there since is added, and a rewind removes it.
// Version 2 says the same of each absent path: nothing was under it
// either (in version 1, what a tool made a directory there is not seen). A
// manifest without dirs or absent paths is written as version 1, which
// every rook reads alike.
//
// Version 3 adds "dir_modes":{"rel/dir":"0700"}: the permission bits of
// the directories in dirs (with setuid, setgid and sticky: "1777"), each keyed by one of them, so a rewind makes a
// directory it recreates as it was (before, 0755 whatever it had been).
// It is written only with dirs: a manifest without stays version 1 or 2,
// byte for byte as before.
//
// Version 4 adds "opened":{".":"0555","rel/dir":"0555"}: the modes of
// directories a rewind's capture before it does not hold whole whose mode
// the rewind changes (one it opens, u+rwx, to write in: a read-only one
// the user owns), "." the workspace itself. Its undo gives each its mode
// back, so a crash mid-rewind, which leaves them open, is undone too. It
// is written only when there are any: a manifest without stays version 1,
// 2 or 3, byte for byte as before.
//
// Version 5 adds "unknown":["rel/path"]: paths whose state the capture
// does not hold, though it was taken to: an imported session's Claude Code
// file backup named and not there (deleted, never copied). Its file's state
// then is not known, so a later capture of it is not the file before the
// session either: diff and rewind leave the path out, as of an edit result
// that does not say what the file was. It is written only when there are
// any: a manifest without stays version 1 to 4, byte for byte as before.
//
// Version 6 adds a file's setuid, setgid and sticky bits, its mode's
// first digit ("4755"), and dir_modes keyed by directories not in dirs:
// a tree capture's (checkpoint create) directories that have one of
// those bits, so a restore that makes one again gives it its mode. A
// rook reading up to version 5 would drop them (it wrote every file's
// mode "0..."), so it refuses the manifest; one below 6 holding either is
// refused. A version 6 manifest says each file's special bits: a first
// digit 0 says it had none (below 6 it says nothing of them), and so of
// each directory mode (dir_modes, opened). A capture a restore or rewind
// takes of what it is about to replace (its save, its undo) says so of
// each file and directory, and is version 6, so the undo takes off the
// bits the restore gave (a directory the rewind made 1777 goes back to
// 0755). Any other is written version 6 only when it holds a special
// bit: a manifest without stays version 1 to 5, byte for byte as before.
//
// Paths are slash-separated, relative to root, clean, never absolute and
// never with a ".." element. mode is the permission bits in octal, or
// "link" for a symbolic link whose object holds the link's target.
type Manifest struct {
	V          int                  `json:"v"`
	Root       string               `json:"root"`
	CapturedAt time.Time            `json:"captured_at"`
	Label      string               `json:"label,omitempty"`
	Files      map[string]FileEntry `json:"files"`
	Absent     []string             `json:"absent,omitempty"`
	// Dirs (version 2) are the directories captured whole.
	Dirs []string `json:"dirs,omitempty"`
	// DirModes (version 3) are the modes of the directories in Dirs;
	// from version 6 also of a tree capture's directories with a
	// setuid, setgid or sticky bit, in no Dirs.
	DirModes map[string]FileMode `json:"dir_modes,omitempty"`
	// Opened (version 4) are the modes of directories not in Dirs whose
	// mode the rewind this captures the disk before changes.
	Opened map[string]FileMode `json:"opened,omitempty"`
	// Unknown (version 5) are the paths whose state the capture was to
	// hold and does not.
	Unknown    []string `json:"unknown,omitempty"`
	TotalBytes int64    `json:"total_bytes"`
	// Skipped lists what a capture left out and why (a tree capture's
	// links leading outside the workspace; any capture's named pipes),
	// for the user; restore ignores it.
	Skipped []string `json:"skipped,omitempty"`
	// RealPaths: the capture recorded no path through a link (a path
	// named through a link to a directory of the workspace is recorded
	// by the path it reaches: CapturePaths), so each directory a path is
	// recorded under was a directory then, whatever it is now. Captures
	// without it (an older rook's) may name a file through a link.
	RealPaths bool `json:"real_paths,omitempty"`
}

// manifestVersion is the newest manifest version this rook reads and
// writes, when a manifest has a file with a special bit, a file or
// directory mode that says it has none (exact: a save's), or a directory
// mode of one not in dirs; manifestV1 is written when a manifest has no
// dirs nor absent paths, which the versions read alike, manifestV2 when
// it has no dir modes, manifestV3 when it has no opened directories,
// manifestV4 when it has those, manifestV5 when it has unknown paths.
const (
	manifestVersion = 6
	manifestV5      = 5
	manifestV4      = 4
	manifestV3      = 3
	manifestV2      = 2
	manifestV1      = 1
)

// FileEntry is one captured file.
type FileEntry struct {
	ID   cas.Key  `json:"-"`
	Size int64    `json:"size"`
	Mode FileMode `json:"mode"`
}

// FileMode is a captured file's permission bits, or a symbolic link.
type FileMode struct {
	Perm fs.FileMode
	Link bool
	// exact: the mode says the file's (or directory's) setuid, setgid
	// and sticky bits, none when it has none (a file or directory mode
	// of a version 6 manifest, and of a restore's or rewind's save of
	// what it replaces). Without, a mode with none says nothing of them
	// (FileMode.matches, FileMode.dirPerm).
	exact bool
}

// specialBits are the setuid, setgid and sticky bits, as Go holds them
// (fs.ModeSetuid...) and as the octal first digit of a mode (04000...).
var specialBits = [...]struct {
	mode fs.FileMode
	oct  uint32
}{{fs.ModeSetuid, 0o4000}, {fs.ModeSetgid, 0o2000}, {fs.ModeSticky, 0o1000}}

// dirModeBits are the bits of a directory's mode a capture records
// (dir_modes): its permission bits and the setuid, setgid and sticky ones
// (a sticky tmp directory; a setgid one whose files take its group). A
// file's mode holds the same (a setuid program).
const dirModeBits = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

// specialModeBits are the setuid, setgid and sticky bits of a mode.
const specialModeBits = dirModeBits &^ fs.ModePerm

// fileMode is the mode a capture records of the regular file fi: its
// permission bits and its special ones.
func fileMode(fi fs.FileInfo) FileMode { return FileMode{Perm: fi.Mode() & dirModeBits} }

// matches says whether a file whose mode is now `now` is as one captured
// with the mode m: the same kind (file or link), the same permission
// bits, and the same special bits, unless m has none and is not exact
// (every file mode a rook wrote before they were recorded, whatever they
// were, and any of a manifest below version 6): a file then left as it
// is keeps those it has, as a directory does (dirPerm).
func (m FileMode) matches(now FileMode) bool {
	if m.Link || now.Link {
		return m.Link == now.Link
	}
	if m.Perm&specialModeBits == 0 && !m.exact {
		return m.Perm.Perm() == now.Perm.Perm()
	}
	return m.Perm&dirModeBits == now.Perm&dirModeBits
}

// same says whether m and now are the same mode, bit for bit (whether
// either is exact aside).
func (m FileMode) same(now FileMode) bool {
	return m.Link == now.Link && m.Perm&dirModeBits == now.Perm&dirModeBits
}

// dirPerm is the mode a directory whose mode is now `now` is given: the
// permission bits and the special ones (as os.Chmod takes them). A mode
// with none of the special bits, unless exact, keeps those it has now: a
// manifest written before they were recorded says none whatever they were
// (a directory in a setgid one has the bit from its parent). An exact one
// (a rewind's capture of the disk before it) takes them off: the undo of
// a rewind that made a directory 1777 makes it 0755 again.
func (m FileMode) dirPerm(now fs.FileMode) fs.FileMode {
	special := dirModeBits &^ fs.ModePerm
	if m.Perm&special == 0 && !m.exact {
		return m.Perm.Perm() | now&special
	}
	return m.Perm & dirModeBits
}

// MarshalJSON writes "0644" or "link"; the setuid, setgid and sticky
// bits are its first digit ("1777", "4755").
func (m FileMode) MarshalJSON() ([]byte, error) {
	if m.Link {
		return []byte(`"link"`), nil
	}
	return []byte(`"` + m.octal() + `"`), nil
}

// octal is the mode as four octal digits, the special bits first.
func (m FileMode) octal() string {
	v := uint32(m.Perm.Perm())
	for _, b := range specialBits {
		if m.Perm&b.mode != 0 {
			v |= b.oct
		}
	}
	return fmt.Sprintf("%04o", v)
}

// UnmarshalJSON reads "0644" or "link".
func (m *FileMode) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("mode: %v", err)
	}
	if s == "link" {
		*m = FileMode{Link: true}
		return nil
	}
	// Every one of the four an octal digit: Sscanf's %o read a prefix
	// ("07zz" as 0007, "0o75" as 0000, a rewind then making a directory
	// 0000) and skipped spaces (" 755").
	v, err := strconv.ParseUint(s, 8, 32)
	if err != nil || len(s) != 4 {
		return fmt.Errorf("mode %q is not four octal digits or \"link\"", s)
	}
	perm := fs.FileMode(v) & fs.ModePerm
	for _, b := range specialBits {
		if uint32(v)&b.oct != 0 {
			perm |= b.mode
		}
	}
	*m = FileMode{Perm: perm}
	return nil
}

// GitMode is the mode git writes in diff headers.
func (m FileMode) GitMode() string {
	switch {
	case m.Link:
		return "120000"
	case m.Perm&0o111 != 0:
		return "100755"
	}
	return "100644"
}

type fileEntryJSON struct {
	ID   string   `json:"id"`
	Size int64    `json:"size"`
	Mode FileMode `json:"mode"`
}

// MarshalJSON writes the id as hex.
func (f FileEntry) MarshalJSON() ([]byte, error) {
	return json.Marshal(fileEntryJSON{ID: hex.EncodeToString(f.ID[:]), Size: f.Size, Mode: f.Mode})
}

// UnmarshalJSON reads the hex id.
func (f *FileEntry) UnmarshalJSON(b []byte) error {
	var j fileEntryJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	raw, err := hex.DecodeString(j.ID)
	if err != nil || len(raw) != len(f.ID) {
		return fmt.Errorf("file id %q is not 32 hex digits", j.ID)
	}
	copy(f.ID[:], raw)
	f.Size, f.Mode = j.Size, j.Mode
	if f.Size < 0 {
		return fmt.Errorf("negative size %d", f.Size)
	}
	return nil
}

// ErrBadManifest: a manifest that fails validation. Nothing is restored
// from one.
var ErrBadManifest = errors.New("capture manifest is invalid")

// DecodeManifest parses and validates a manifest.
func DecodeManifest(b []byte) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadManifest, err)
	}
	if m.V < 1 {
		// No "v" at all ({} or another JSON object): not a manifest
		// from a rook of any version, so no upgrade reads it.
		return nil, fmt.Errorf("%w: no version (\"v\" 1 to %d): not a manifest as rook writes one", ErrBadManifest, manifestVersion)
	}
	if m.V > manifestVersion {
		return nil, fmt.Errorf("%w: version %d (this rook reads up to %d; upgrade rook?)", ErrBadManifest, m.V, manifestVersion)
	}
	if !strings.HasPrefix(m.Root, "/") {
		return nil, fmt.Errorf("%w: root %q is not an absolute path", ErrBadManifest, m.Root)
	}
	for p := range m.Files {
		if err := checkRel(p); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadManifest, err)
		}
	}
	for _, p := range m.Absent {
		if err := checkRel(p); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadManifest, err)
		}
		if _, ok := m.Files[p]; ok {
			return nil, fmt.Errorf("%w: %q is both captured and absent", ErrBadManifest, p)
		}
	}
	if m.V < 2 && m.Dirs != nil {
		return nil, fmt.Errorf("%w: version %d has no \"dirs\"", ErrBadManifest, m.V)
	}
	absent := map[string]bool{}
	for _, p := range m.Absent {
		absent[p] = true
	}
	dirs := map[string]bool{}
	for _, p := range m.Dirs {
		dirs[p] = true
		if err := checkRel(p); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadManifest, err)
		}
		if _, ok := m.Files[p]; ok || absent[p] {
			return nil, fmt.Errorf("%w: %q is both a captured directory and a file or absent", ErrBadManifest, p)
		}
	}
	if m.V < 3 && m.DirModes != nil {
		return nil, fmt.Errorf("%w: version %d has no \"dir_modes\"", ErrBadManifest, m.V)
	}
	unknown := map[string]bool{}
	for _, p := range m.Unknown {
		unknown[p] = true
	}
	for d, mode := range m.DirModes {
		if !dirs[d] && m.V < 6 {
			return nil, fmt.Errorf("%w: \"dir_modes\" names %q, which is not in \"dirs\"", ErrBadManifest, d)
		}
		if !dirs[d] {
			// A tree capture's directory (version 6).
			if err := checkRel(d); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrBadManifest, err)
			}
			if _, ok := m.Files[d]; ok || absent[d] || unknown[d] {
				return nil, fmt.Errorf("%w: %q is both a directory in \"dir_modes\" and a file, absent or unknown", ErrBadManifest, d)
			}
		}
		if mode.Link {
			return nil, fmt.Errorf("%w: directory %q has the mode \"link\"", ErrBadManifest, d)
		}
	}
	if m.V < 4 && m.Opened != nil {
		return nil, fmt.Errorf("%w: version %d has no \"opened\"", ErrBadManifest, m.V)
	}
	for d, mode := range m.Opened {
		if d != "." {
			if err := checkRel(d); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrBadManifest, err)
			}
		}
		if dirs[d] {
			return nil, fmt.Errorf("%w: \"opened\" names %q, which is in \"dirs\"", ErrBadManifest, d)
		}
		if mode.Link {
			return nil, fmt.Errorf("%w: directory %q has the mode \"link\"", ErrBadManifest, d)
		}
	}
	if m.V < 5 && m.Unknown != nil {
		return nil, fmt.Errorf("%w: version %d has no \"unknown\"", ErrBadManifest, m.V)
	}
	for _, p := range m.Unknown {
		if err := checkRel(p); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadManifest, err)
		}
		if _, ok := m.Files[p]; ok || absent[p] || dirs[p] {
			return nil, fmt.Errorf("%w: %q is both unknown and captured, absent or a captured directory", ErrBadManifest, p)
		}
	}
	for p, f := range m.Files {
		if m.V < 6 && f.Mode.Perm&specialModeBits != 0 {
			return nil, fmt.Errorf("%w: version %d has no setuid, setgid or sticky bit in a file's mode (%q: %q)", ErrBadManifest, m.V, p, f.Mode.octal())
		}
		if m.V >= 6 && !f.Mode.Link {
			// Version 6 says each file's special bits, "0..." none.
			f.Mode.exact = true
			m.Files[p] = f
		}
	}
	if m.V >= 6 {
		// And each directory's (every rook that writes version 6
		// records them), in dir_modes and opened: "0755" says none.
		for _, modes := range []map[string]FileMode{m.DirModes, m.Opened} {
			for d, mode := range modes {
				mode.exact = true
				modes[d] = mode
			}
		}
	}
	if m.Files == nil {
		m.Files = map[string]FileEntry{}
	}
	return &m, nil
}

// Encode writes the manifest as canonical JSON (sorted keys), so capturing
// an unchanged tree twice gives the same bytes save for the time.
func (m *Manifest) Encode() []byte {
	m.V = manifestV1
	if len(m.Dirs) > 0 || len(m.Absent) > 0 {
		m.V = manifestV2
	}
	if len(m.DirModes) > 0 {
		m.V = manifestV3
	} else {
		m.DirModes = nil
	}
	if len(m.Opened) > 0 {
		m.V = manifestV4
	} else {
		m.Opened = nil
	}
	if len(m.Unknown) > 0 {
		m.V = manifestV5
		sort.Strings(m.Unknown)
		m.Unknown = slices.Compact(m.Unknown)
	} else {
		m.Unknown = nil
	}
	if len(m.Dirs) > 0 {
		sort.Strings(m.Dirs)
		m.Dirs = slices.Compact(m.Dirs) // a directory named twice
	} else {
		m.Dirs = nil
	}
	if m.holdsV6() {
		m.V = manifestVersion
	}
	sort.Strings(m.Absent)
	b, _ := json.Marshal(m)
	return b
}

// holdsV6 says whether the manifest holds what version 6 added: a file
// with a setuid, setgid or sticky bit, or a file or directory whose mode
// says it has none (exact), or the mode of a directory not in dirs.
func (m *Manifest) holdsV6() bool {
	for _, f := range m.Files {
		if !f.Mode.Link && (f.Mode.Perm&specialModeBits != 0 || f.Mode.exact) {
			return true
		}
	}
	for d, mode := range m.DirModes {
		if !slices.Contains(m.Dirs, d) || mode.exact {
			return true
		}
	}
	for _, mode := range m.Opened {
		if mode.exact {
			return true
		}
	}
	return false
}

// checkRel validates a manifest path: relative, clean, slash-separated,
// no "..", not empty.
func checkRel(p string) error {
	switch {
	case p == "" || p == ".":
		return errors.New("empty path")
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("path %q is absolute", p)
	case strings.Contains(p, "\\") || strings.ContainsRune(p, 0):
		return fmt.Errorf("path %q has a backslash or NUL", p)
	case path.Clean(p) != p:
		return fmt.Errorf("path %q is not clean", p)
	case p == ".." || strings.HasPrefix(p, "../"):
		return fmt.Errorf("path %q leaves the workspace", p)
	}
	return nil
}

// Paths returns every path the manifest names (files and absent), sorted.
func (m *Manifest) Paths() []string {
	out := make([]string, 0, len(m.Files)+len(m.Absent))
	for p := range m.Files {
		out = append(out, p)
	}
	out = append(out, m.Absent...)
	sort.Strings(out)
	return out
}

// ReadManifest loads and validates the manifest stored as object id.
func (r *Rook) ReadManifest(id cas.Key) (*Manifest, error) {
	b, err := r.Store.Get(id)
	if err != nil {
		return nil, err
	}
	m, err := DecodeManifest(b)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", cas.Short(id), err)
	}
	return m, nil
}

// previewOfCapture is what a history line previews of a checkpoint's
// manifest: how many files it captured and which, not its JSON; the body
// as it is when it is no manifest.
func previewOfCapture(body []byte) []byte {
	m, err := DecodeManifest(body)
	if err != nil {
		return body
	}
	text := fmt.Sprintf("%d file(s)", len(m.Files))
	if len(m.Absent) > 0 {
		text += fmt.Sprintf(", %d absent", len(m.Absent))
	}
	if len(m.Unknown) > 0 {
		text += fmt.Sprintf(", %d unknown (%s)", len(m.Unknown), strings.Join(m.Unknown[:min(len(m.Unknown), 16)], ", "))
	}
	absent := map[string]bool{}
	for _, p := range m.Absent {
		absent[p] = true
	}
	var shown []string
	for _, p := range m.Paths() {
		if len(shown) == 16 {
			break // a preview shows a line's start
		}
		if absent[p] {
			p += " (absent)"
		}
		shown = append(shown, p)
	}
	if len(shown) > 0 {
		text += ": " + strings.Join(shown, ", ")
	}
	return []byte(text)
}
