package agent

// What git tracks: a checkpoint leaves out what a .gitignore ignores, as
// git does, but git never ignores a file it tracks (one added before the
// pattern, or with `git add -f`): such a file is part of the project, and
// a restore must put it back. The paths git tracks are read from its
// index (.git/index), never by running git, which a repository's own
// config could make run anything.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// maxGitIndexBytes bounds the index a capture reads: a repository of a
// million files has one of about 100 MiB. Past it, the index is not read
// and the capture says so (tracked files a .gitignore matches are then
// left out, as before rook read the index).
const maxGitIndexBytes = 256 << 20

// errGitIndex: an index file that is not one rook can read.
var errGitIndex = errors.New("not a git index rook can read")

// parseGitIndex returns the paths an index file names (versions 2 to 4;
// hashLen is the repository's object id length, 20 for SHA-1, 32 for
// SHA-256), in their order, a path once per stage. An entry that is a
// directory (a sparse index's, mode 040000) ends with "/". A split
// index's entries that replace the shared index's, which have no name,
// are left out.
func parseGitIndex(b []byte, hashLen int) ([]string, error) {
	ix, err := readGitIndex(b, hashLen)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ix.entries {
		if e.name != "" {
			names = append(names, e.name)
		}
	}
	return names, nil
}

// gitIndexEntry is an entry of an index: its path, and whether it is a
// gitlink (a submodule, or a repository added in place: mode 160000).
type gitIndexEntry struct {
	name    string
	gitlink bool
}

// gitIndex is an index file as read: its entries, by position; of a split
// index (core.splitIndex), the object id (hex) of the shared index holding
// its other entries and the link extension's bitmaps (which of those are
// deleted, as git wrote them).
type gitIndex struct {
	entries []gitIndexEntry
	shared  string
	bitmaps []byte
}

// readGitIndex reads an index file's entries and, of a split one, its link
// to the shared index.
func readGitIndex(b []byte, hashLen int) (*gitIndex, error) {
	entries, off, err := gitIndexEntries(b, hashLen)
	if err != nil {
		return nil, err
	}
	ix := &gitIndex{entries: entries}
	// Extensions: a signature, a 32-bit size, that many bytes; then the
	// file's checksum.
	for off+8 <= len(b)-hashLen {
		sig := string(b[off : off+4])
		size := int(binary.BigEndian.Uint32(b[off+4:]))
		off += 8
		if size > len(b)-off {
			break
		}
		if sig == "link" && size >= hashLen {
			ix.shared = fmt.Sprintf("%x", b[off:off+hashLen])
			ix.bitmaps = b[off+hashLen : off+size]
			break
		}
		off += size
	}
	return ix, nil
}

// gitDeleted reads the first of a split index's link bitmaps, the shared
// index's entries deleted since (EWAH-compressed, as git writes them), as
// one flag per entry of the n the shared index holds. Bits past n are
// left out (a run is never expanded past them).
func gitDeleted(bitmaps []byte, n int) ([]bool, error) {
	deleted := make([]bool, n)
	if len(bitmaps) == 0 {
		return deleted, nil
	}
	bad := fmt.Errorf("%w: the split index's bitmap of deleted entries", errGitIndex)
	if len(bitmaps) < 8 {
		return nil, bad
	}
	words := uint64(binary.BigEndian.Uint32(bitmaps[4:8]))
	if words > uint64(len(bitmaps)-8)/8 {
		return nil, bad
	}
	w := bitmaps[8 : 8+8*words]
	pos := uint64(0) // the bit the next word starts at
	for i := uint64(0); i < words; {
		rlw := binary.BigEndian.Uint64(w[8*i:])
		i++
		run := (rlw >> 1) & (1<<32 - 1)
		if rlw&1 != 0 {
			for b := pos; b < pos+run*64 && b < uint64(n); b++ {
				deleted[b] = true
			}
		}
		pos += run * 64
		literals := rlw >> 33
		if literals > words-i {
			return nil, bad
		}
		for ; literals > 0; literals-- {
			lit := binary.BigEndian.Uint64(w[8*i:])
			i++
			for bit := uint64(0); bit < 64 && lit != 0; bit++ {
				if lit&(1<<bit) != 0 && pos+bit < uint64(n) {
					deleted[pos+bit] = true
				}
			}
			pos += 64
		}
	}
	return deleted, nil
}

// gitIndexEntries reads the entries of an index: their names, and where
// the entries end.
func gitIndexEntries(b []byte, hashLen int) ([]gitIndexEntry, int, error) {
	if len(b) < 12 || string(b[:4]) != "DIRC" {
		return nil, 0, fmt.Errorf("%w: no DIRC header", errGitIndex)
	}
	version := binary.BigEndian.Uint32(b[4:8])
	if version < 2 || version > 4 {
		return nil, 0, fmt.Errorf("%w: version %d", errGitIndex, version)
	}
	n := binary.BigEndian.Uint32(b[8:12])
	fixed := 40 + hashLen + 2 // stat fields, object id, flags
	if uint64(n) > uint64(len(b)-12)/uint64(fixed) {
		return nil, 0, fmt.Errorf("%w: %d entries in %d bytes", errGitIndex, n, len(b))
	}
	entries := make([]gitIndexEntry, 0, n)
	off := 12
	prev := ""
	for i := uint32(0); i < n; i++ {
		start := off
		if len(b)-off < fixed {
			return nil, 0, fmt.Errorf("%w: entry %d cut short", errGitIndex, i)
		}
		flags := binary.BigEndian.Uint16(b[off+fixed-2:])
		off += fixed
		if flags&0x4000 != 0 { // extended flags follow
			if version < 3 || len(b)-off < 2 {
				return nil, 0, fmt.Errorf("%w: entry %d: extended flags", errGitIndex, i)
			}
			off += 2
		}
		var name string
		if version == 4 {
			// The name is the previous one less its last strip bytes,
			// then the bytes up to a NUL.
			strip, w := gitVarint(b[off:])
			if w == 0 || strip > uint64(len(prev)) {
				return nil, 0, fmt.Errorf("%w: entry %d: name prefix", errGitIndex, i)
			}
			off += w
			end := bytes.IndexByte(b[off:], 0)
			if end < 0 {
				return nil, 0, fmt.Errorf("%w: entry %d: name not ended", errGitIndex, i)
			}
			name = prev[:len(prev)-int(strip)] + string(b[off:off+end])
			off += end + 1
		} else {
			end := bytes.IndexByte(b[off:], 0)
			if end < 0 {
				return nil, 0, fmt.Errorf("%w: entry %d: name not ended", errGitIndex, i)
			}
			name = string(b[off : off+end])
			// 1 to 8 NULs end the entry at a multiple of 8 bytes.
			off = start + (off-start+end+8)/8*8
			if off > len(b) {
				return nil, 0, fmt.Errorf("%w: entry %d cut short", errGitIndex, i)
			}
		}
		// A split index's entry that replaces one of the shared index's
		// has no name of its own (that one's is read there): kept, "",
		// for the positions. (The next name of a version 4 index starts
		// from this empty one, as git reads it.)
		mode := binary.BigEndian.Uint32(b[start+24:])
		if name != "" && mode&0o170000 == 0o040000 && !strings.HasSuffix(name, "/") {
			name += "/"
		}
		entries = append(entries, gitIndexEntry{name: name, gitlink: mode&0o170000 == 0o160000})
		prev = name
	}
	return entries, off, nil
}

// gitVarint decodes git's offset varint (each continuation adds one
// before the shift), returning the value and the bytes it took (0: none
// well formed).
func gitVarint(b []byte) (uint64, int) {
	if len(b) == 0 {
		return 0, 0
	}
	c := b[0]
	v := uint64(c & 127)
	i := 1
	for c&128 != 0 {
		if i >= len(b) || i > 9 {
			return 0, 0
		}
		c = b[i]
		i++
		v = (v+1)<<7 | uint64(c&127)
	}
	return v, i
}

// trackedFiles are the paths git tracks in a repository, from the
// workspace (or from a nested repository's top, for its own index).
type trackedFiles struct {
	files map[string]bool
	dirs  map[string]bool // every directory holding a tracked path
	// gitlinks: repositories tracked as such (submodules, and
	// repositories added in place), walked as what they track.
	gitlinks map[string]bool
	// sparse: directories a sparse index tracks whole.
	sparse map[string]bool
}

// has says whether git tracks rel (a directory: something in it, or it is
// a gitlink).
func (t *trackedFiles) has(rel string, dir bool) bool {
	if t == nil {
		return false
	}
	if dir && (t.dirs[rel] || t.gitlinks[rel]) || !dir && t.files[rel] {
		return true
	}
	for d := rel; len(t.sparse) > 0 && d != "." && d != ""; d = path.Dir(d) {
		if t.sparse[d] {
			return true
		}
	}
	return false
}

// readTracked reads what git tracks in the workspace (or nested
// repository) real from its repository's index: nil when it is in no
// repository or the repository has no index yet. An index that cannot be
// read is an error (the capture says so, and goes on without it).
func readTracked(real string) (*trackedFiles, error) {
	top, prefix, ok := repoTop(real)
	if !ok {
		return nil, nil
	}
	gitDir, err := gitDirOf(top)
	if err != nil {
		return nil, err
	}
	hashLen := 20
	if sha256Repo(gitDir) {
		hashLen = 32
	}
	ix, err := readGitIndexAt(filepath.Join(gitDir, "index"), hashLen)
	if err != nil || ix == nil {
		return nil, err
	}
	entries := ix.entries
	if ix.shared != "" {
		// A split index: the rest of the entries are in the shared one,
		// less those its bitmap says were deleted since (a file no longer
		// tracked, that a .gitignore ignores, stays left out).
		sharedPath := filepath.Join(gitDir, "sharedindex."+ix.shared)
		sh, err := readGitIndexAt(sharedPath, hashLen)
		if err == nil && sh == nil {
			err = fmt.Errorf("%s: not there", sharedPath)
		}
		if err != nil {
			return nil, err
		}
		deleted, err := gitDeleted(ix.bitmaps, len(sh.entries))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(gitDir, "index"), err)
		}
		for i, e := range sh.entries {
			if !deleted[i] {
				entries = append(entries, e)
			}
		}
	}
	t := &trackedFiles{files: map[string]bool{}, dirs: map[string]bool{}, gitlinks: map[string]bool{}, sparse: map[string]bool{}}
	for _, e := range entries {
		name := e.name
		if name == "" {
			continue
		}
		if prefix != "" {
			if !strings.HasPrefix(name, prefix+"/") {
				continue
			}
			name = name[len(prefix)+1:]
		}
		switch d, ok := strings.CutSuffix(name, "/"); {
		case ok:
			t.sparse[d] = true
			name = d
		case e.gitlink:
			t.gitlinks[name] = true
		default:
			t.files[name] = true
		}
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			if t.dirs[d] {
				break
			}
			t.dirs[d] = true
		}
	}
	return t, nil
}

// readGitIndexAt reads the index file at p: nil, nil when there is none
// (a repository with nothing added yet). A link is not followed, nor is
// anything but a regular file read: each is said as what it is.
func readGitIndexAt(p string, hashLen int) (*gitIndex, error) {
	fi, err := os.Lstat(p)
	if notExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, fmt.Errorf("%s is a link, not followed", p)
	case fi.IsDir():
		return nil, fmt.Errorf("%s is a directory, not an index file", p)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s is %s, not an index file", p, fileKind(fi.Mode()))
	}
	b, err := readRegular(p, p, maxGitIndexBytes)
	if errors.Is(err, errLargerThan) {
		return nil, fmt.Errorf("%s is larger than %d MiB, more than rook reads", p, maxGitIndexBytes>>20)
	}
	if err != nil {
		return nil, err
	}
	ix, err := readGitIndex(b, hashLen)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return ix, nil
}

// gitDirOf is the git directory of the worktree top: top/.git (through a
// link, as git follows one), or where a .git file (a linked worktree's, a
// submodule's: "gitdir: PATH") says.
func gitDirOf(top string) (string, error) {
	dotGit := filepath.Join(top, ".git")
	fi, err := os.Stat(dotGit)
	if err != nil {
		return "", err
	}
	if fi.IsDir() {
		return dotGit, nil
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is %s, not git's directory nor a file naming it", dotGit, fileKind(fi.Mode()))
	}
	b, err := readRegular(dotGit, dotGit, 64<<10)
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	dir, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	if !ok {
		return "", fmt.Errorf("%s: no gitdir line", dotGit)
	}
	dir = strings.TrimSpace(dir)
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(top, dir)
	}
	return dir, nil
}

// sha256Repo says whether the repository at gitDir names objects by
// SHA-256 (extensions.objectFormat = sha256 in its config; a linked
// worktree's config is its main repository's, under commondir).
func sha256Repo(gitDir string) bool {
	dirs := []string{gitDir}
	if b, err := readRegular(filepath.Join(gitDir, "commondir"), "commondir", 64<<10); err == nil {
		common := strings.TrimSpace(string(b))
		if !filepath.IsAbs(common) {
			common = filepath.Join(gitDir, common)
		}
		dirs = append(dirs, common)
	}
	for _, d := range dirs {
		b, err := readRegular(filepath.Join(d, "config"), "config", 1<<20)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(line, "=")
			if ok && strings.EqualFold(strings.TrimSpace(k), "objectformat") && strings.EqualFold(strings.TrimSpace(v), "sha256") {
				return true
			}
		}
	}
	return false
}
