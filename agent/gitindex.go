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
// directory (a sparse index's, mode 040000) ends with "/".
func parseGitIndex(b []byte, hashLen int) ([]string, error) {
	names, _, err := parseGitIndexShared(b, hashLen)
	return names, err
}

// parseGitIndexShared is parseGitIndex, also giving the object id (hex)
// of the shared index a split index (core.splitIndex) keeps its other
// entries in: "" when it is not split.
func parseGitIndexShared(b []byte, hashLen int) ([]string, string, error) {
	names, off, err := gitIndexEntries(b, hashLen)
	if err != nil {
		return nil, "", err
	}
	// Extensions: a signature, a 32-bit size, that many bytes; then the
	// file's checksum.
	for off+8 <= len(b)-hashLen {
		sig := string(b[off : off+4])
		size := int(binary.BigEndian.Uint32(b[off+4:]))
		off += 8
		if size < 0 || size > len(b)-off {
			break
		}
		if sig == "link" && size >= hashLen {
			return names, fmt.Sprintf("%x", b[off:off+hashLen]), nil
		}
		off += size
	}
	return names, "", nil
}

// gitIndexEntries reads the entries of an index: their names, and where
// the entries end.
func gitIndexEntries(b []byte, hashLen int) ([]string, int, error) {
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
	names := make([]string, 0, n)
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
		if name == "" {
			// A split index's entry that replaces one of the shared
			// index's (by position) has no name of its own: that one's
			// is read there. (The next name of a version 4 index
			// starts from this empty one, as git reads it.)
			prev = ""
			continue
		}
		mode := binary.BigEndian.Uint32(b[start+24:])
		if mode&0o170000 == 0o040000 && !strings.HasSuffix(name, "/") {
			name += "/"
		}
		names = append(names, name)
		prev = name
	}
	return names, off, nil
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

// trackedFiles are the paths git tracks in the workspace, from it.
type trackedFiles struct {
	files map[string]bool
	dirs  map[string]bool // every directory holding a tracked path
	// sparse: directories a sparse index tracks whole.
	sparse map[string]bool
}

// has says whether git tracks rel (a directory: whether it tracks
// something in it).
func (t *trackedFiles) has(rel string, dir bool) bool {
	if t == nil {
		return false
	}
	if dir && t.dirs[rel] || !dir && t.files[rel] {
		return true
	}
	for d := rel; len(t.sparse) > 0 && d != "." && d != ""; d = path.Dir(d) {
		if t.sparse[d] {
			return true
		}
	}
	return false
}

// readTracked reads what git tracks in the workspace real from its
// repository's index: nil when the workspace is in no repository or the
// repository has no index yet. An index that cannot be read is an error
// (the capture says so, and goes on without it).
func readTracked(real string) (*trackedFiles, error) {
	top, prefix, ok := repoTop(real)
	if !ok {
		return nil, nil
	}
	gitDir, err := gitDirOf(top)
	if err != nil || gitDir == "" {
		return nil, err
	}
	indexPath := filepath.Join(gitDir, "index")
	b, err := readRegular(indexPath, indexPath, maxGitIndexBytes)
	if notExist(err) {
		return nil, nil // a repository with nothing added yet
	}
	if errors.Is(err, errLargerThan) {
		return nil, fmt.Errorf("%s is larger than %d MiB, more than rook reads", indexPath, maxGitIndexBytes>>20)
	}
	if err != nil {
		return nil, err
	}
	hashLen := 20
	if sha256Repo(gitDir) {
		hashLen = 32
	}
	names, shared, err := parseGitIndexShared(b, hashLen)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", indexPath, err)
	}
	if shared != "" {
		// A split index: the rest of the entries are in the shared one
		// (those it marks deleted are taken too: a file tracked a moment
		// ago, that a .gitignore matches, is captured).
		sharedPath := filepath.Join(gitDir, "sharedindex."+shared)
		sb, err := readRegular(sharedPath, sharedPath, maxGitIndexBytes)
		if err != nil {
			return nil, err
		}
		more, err := parseGitIndex(sb, hashLen)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", sharedPath, err)
		}
		names = append(names, more...)
	}
	t := &trackedFiles{files: map[string]bool{}, dirs: map[string]bool{}, sparse: map[string]bool{}}
	for _, name := range names {
		if prefix != "" {
			if !strings.HasPrefix(name, prefix+"/") {
				continue
			}
			name = name[len(prefix)+1:]
		}
		if d, ok := strings.CutSuffix(name, "/"); ok {
			t.sparse[d] = true
			name = d
		} else {
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

// gitDirOf is the git directory of the worktree top: top/.git, or where
// a .git file (a linked worktree's, a submodule's: "gitdir: PATH") says.
// "" when .git is neither (a link is not followed).
func gitDirOf(top string) (string, error) {
	dotGit := filepath.Join(top, ".git")
	fi, err := os.Lstat(dotGit)
	if err != nil {
		return "", err
	}
	if fi.IsDir() {
		return dotGit, nil
	}
	if !fi.Mode().IsRegular() {
		return "", nil
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
