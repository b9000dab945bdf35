package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/internal/vfs"
)

// rewindOpenedFile, in the store's home, records the directories of a
// workspace that a rewind opened to search them (u+x): the user's own,
// on the way to the paths it puts back, whose mode had the owner's search
// bit off (0600, say), so that nothing under them could be looked at. It
// is written (durable-write helper) before each one is opened, so a crash
// never leaves one open unrecorded, and removed once they are closed
// again. A writer's open finding it (a crash left it: the writer holds
// the lock, so no rewind runs) closes them (closeLeftOpenAtOpen), and so
// does a rewind before it opens any (closeLeftOpen).
const rewindOpenedFile = "rewind-opened.json"

// rewindOpened is that file: {"v":1,"root":"/real/ws","dirs":{"p":"0600"}}.
type rewindOpened struct {
	V    int                 `json:"v"`
	Root string              `json:"root"` // the workspace's real path
	Dirs map[string]FileMode `json:"dirs"` // by workspace path ("." the root): the mode each had
}

// searchOpened are the directories a rewind opened to search them.
type searchOpened struct {
	r   *Rook
	rec rewindOpened
}

// openToSearch opens, top down, each of reach (workspace directories)
// and the directories above it in the workspace at real that are the
// user's and lack the owner's search bit, recording each before. One it
// cannot look at (under another user's directory without it), or a link,
// is left, and so is all under it: through a link, the chmod would reach
// a directory elsewhere (outside the workspace). The checks that follow
// refuse what they cannot reach.
func (r *Rook) openToSearch(real string, reach []string) (*searchOpened, error) {
	s := &searchOpened{r: r, rec: rewindOpened{V: 1, Root: real, Dirs: map[string]FileMode{}}}
	dirs := map[string]bool{".": true}
	for _, p := range reach {
		for d := p; d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	reached := map[string]bool{} // directories, reached through directories
	for _, d := range topDown(slices.Collect(maps.Keys(dirs))) {
		if d != "." && !reached[path.Dir(d)] {
			continue
		}
		abs := filepath.Join(real, filepath.FromSlash(d))
		fi, err := os.Lstat(abs)
		if err != nil || !fi.IsDir() {
			continue
		}
		reached[d] = true
		if !ownDir(fi) || fi.Mode()&0o100 != 0 {
			continue
		}
		mode := fi.Mode() & dirModeBits
		s.rec.Dirs[d] = FileMode{Perm: mode}
		if err := s.record(); err != nil {
			delete(s.rec.Dirs, d)
			return s, fmt.Errorf("record the directory %s before opening it to search it: %w", d, err)
		}
		if err := os.Chmod(abs, mode|0o100); err != nil {
			return s, fmt.Errorf("open the directory %s to search it (chmod u+x): %w", d, err)
		}
	}
	return s, nil
}

// record writes the file whole, or removes it when no directory is open.
func (s *searchOpened) record() error {
	p := filepath.Join(s.r.home, rewindOpenedFile)
	if len(s.rec.Dirs) == 0 {
		if err := s.r.fs.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	b, _ := json.Marshal(s.rec)
	return s.r.fs.WriteFileAtomic(p, b, cas.FileMode)
}

// originals gives, in m (the capture before the rewind), the directories
// opened to search them the modes they had before: the undo gives those.
func (s *searchOpened) originals(m *Manifest) {
	for d, mode := range s.rec.Dirs {
		mode.exact = true // as the disk said it, the bits with it
		if _, ok := m.DirModes[d]; ok {
			m.DirModes[d] = mode
		}
		if _, ok := m.Opened[d]; ok {
			m.Opened[d] = mode
		}
	}
}

// intoPlan has Apply close the directories opened to search them, with
// those it opens to write in (Plan.lifted, with the modes they had before
// either): deepest first, after the changes and the modes the plan gives,
// or when it stops on an error. The capture before the rewind records
// them (Manifest.Opened), so its undo closes them too after a crash.
func (s *searchOpened) intoPlan(p *Plan) {
	if s == nil || len(s.rec.Dirs) == 0 {
		return
	}
	if p.lifted == nil {
		p.lifted = map[string]fs.FileMode{}
	}
	for d, m := range s.rec.Dirs {
		p.lifted[d] = m.Perm
	}
}

// close gives the directories opened to search them their modes back,
// deepest first (unless Apply did: shut false), and removes the record.
// Each is closed only if it still has the mode it had with owner's bits
// added (as opened, or further opened to write in it): one changed since
// otherwise is the user's doing.
func (s *searchOpened) close(shut bool) error {
	if s == nil || len(s.rec.Dirs) == 0 {
		return nil
	}
	// The workspace reached through a link now (moved, and a link left
	// in its place): what the paths lead to is not what was opened.
	if real, err := realRoot(s.rec.Root); err != nil || real != s.rec.Root {
		shut = false
	}
	for _, d := range slices.Backward(topDown(slices.Collect(maps.Keys(s.rec.Dirs)))) {
		if shut {
			if err := closeOpened(s.rec.Root, d, s.rec.Dirs[d].Perm); err != nil {
				return fmt.Errorf("giving the directory %s back its mode %v failed: %w", d, s.rec.Dirs[d].Perm, err)
			}
		}
		delete(s.rec.Dirs, d)
	}
	return s.record()
}

// closeOpened gives the directory d (workspace path) in the workspace at
// real the mode it had, if it has that mode with owner's bits added (and
// is still a directory, reached through directories: through a link put
// on the way since, the chmod would reach another, one no rewind opened).
func closeOpened(real, d string, had fs.FileMode) error {
	fi, err := lstatThroughDirs(real, d)
	if err != nil || fi == nil || !fi.IsDir() {
		return err
	}
	now := fi.Mode() & dirModeBits
	if now == had || now&^0o700 != had&^0o700 || now&had&0o700 != had&0o700 {
		return nil
	}
	return os.Chmod(filepath.Join(real, filepath.FromSlash(d)), had)
}

// lstatThroughDirs is os.Lstat of the workspace path rel ("." the
// workspace itself) in the workspace at real, when every element on the
// way, the workspace included, is a directory; else (one is gone, a file
// or a link) nil.
func lstatThroughDirs(real, rel string) (fs.FileInfo, error) {
	abs := real
	fi, err := os.Lstat(abs)
	if rel != "." {
		for _, part := range strings.Split(rel, "/") {
			if err != nil || !fi.IsDir() {
				break
			}
			abs = filepath.Join(abs, part)
			fi, err = os.Lstat(abs)
		}
	}
	if notExist(err) || err == nil && abs != filepath.Join(real, filepath.FromSlash(rel)) {
		return nil, nil
	}
	return fi, err
}

// closeLeftOpen closes the directories that a rewind which crashed opened
// to search them (rewindOpenedFile), and removes the record.
func (r *Rook) closeLeftOpen() error {
	b, err := vfs.ReadFile(r.fs, filepath.Join(r.home, rewindOpenedFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	s := &searchOpened{r: r}
	if err := json.Unmarshal(b, &s.rec); err != nil || s.rec.V != 1 || !filepath.IsAbs(s.rec.Root) {
		return fmt.Errorf("%s does not read (%v): it names the directories a rewind that crashed opened to search them; give them their modes back by hand, remove it, and run this again", filepath.Join(r.home, rewindOpenedFile), err)
	}
	for d := range s.rec.Dirs {
		if d != "." && checkRel(d) != nil {
			delete(s.rec.Dirs, d) // never a path outside the workspace
		}
	}
	if len(s.rec.Dirs) == 0 {
		return s.record()
	}
	if err := s.close(true); err != nil {
		// A directory above one since closed by hand, say, hides it.
		return fmt.Errorf("a rewind that crashed left directories of %s open to search them, recorded in %s, and %w; let it be reached (chmod u+x the directories above it), or give them their modes by hand (chmod) and remove that file, and run this again", s.rec.Root, filepath.Join(r.home, rewindOpenedFile), err)
	}
	return nil
}

// dirsToReach are the workspace directories the states need searched:
// those holding the files (or absent paths) they name, the directories
// captured whole, and the paths captured absent (a directory there now
// holds what was added since). A file's own path is not looked at: most
// are files, and a lstat each costs a rewind of many files.
func (st *firstStates) dirsToReach() []string {
	dirs := map[string]bool{}
	for p := range st.First {
		dirs[path.Dir(p)] = true
	}
	for _, m := range []map[string]uint64{st.dirs, st.gone} {
		for d := range m {
			dirs[d] = true
		}
	}
	return slices.Collect(maps.Keys(dirs))
}

// LeftOpen returns the workspace directories (absolute paths) that the
// record a rewind that crashed left (rewindOpenedFile) names as opened to
// search them; none when there is no record. `rook doctor` tells; the
// next writer's open closes them.
func LeftOpen(fsys vfs.FS, home string) ([]string, error) {
	b, err := vfs.ReadFile(fsys, filepath.Join(home, rewindOpenedFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rec rewindOpened
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("%s does not read: %v", filepath.Join(home, rewindOpenedFile), err)
	}
	var out []string
	for _, d := range slices.Sorted(maps.Keys(rec.Dirs)) {
		out = append(out, filepath.Join(rec.Root, filepath.FromSlash(d)))
	}
	return out, nil
}
