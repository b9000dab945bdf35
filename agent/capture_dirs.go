package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// A session capture of a directory records the directory as captured whole
// (manifest version 2, "dirs"): a file under it that the capture does not
// hold was not there. Diff shows such a file as added, and a rewind to
// before the capture removes it (its undo puts it back: the rewind captures
// every path it removes first). A manifest of version 1 records no
// directories: files added under a directory it captured are not seen, as
// before.
//
// A path captured absent by a manifest of version 2 had nothing under it
// either: a directory there now holds files added since, and a rewind to
// before removes them and it. Of version 1, such a path is as before: the
// diff does not see the directory, a rewind refuses ("a directory is there
// now").
//
// A directory captured whole is a state too: a rewind makes it again when
// it is not a directory now (dirChanges), and removes those made since
// under it, empty ones included (addedWalker.made), saving them for its
// undo. Of version 3 a capture holds each one's mode, which a directory a
// rewind makes is given.

// coveredSince returns the seq of the earliest capture of a proper
// ancestor of p whole, or as absent, if there is one: from it on, what
// is under that ancestor and not captured was not there.
func (st *firstStates) coveredSince(p string) (uint64, bool) {
	var best uint64
	found := false
	for d := path.Dir(p); d != "."; d = path.Dir(d) {
		for _, m := range []map[string]uint64{st.dirs, st.gone} {
			if s, ok := m[d]; ok && (!found || s < best) {
				best, found = s, true
			}
		}
	}
	return best, found
}

// wasDir says whether the session's captures had d as a directory, reached
// through no link: d, or a directory above it, captured whole or absent.
func (st *firstStates) wasDir(d string) bool {
	_, covered := st.coveredSince(d + "/x")
	return covered
}

// wasDirIn is wasDir in the workspace whose real path is real, and says
// too a directory a path was captured under by a capture that recorded
// none through a link (realDirs), when it is a link now leading to a
// directory of the workspace: a tool replaced it by that link, and what
// the capture had under it is not what the link leads to. (A link there
// leading to nothing or to a file is replaced, as a link leading outside
// is refused, by Plan.inRoot.)
func (st *firstStates) wasDirIn(real string) func(d string) bool {
	return func(d string) bool {
		if st.wasDir(d) {
			return true
		}
		if !st.realDirs[d] {
			return false
		}
		t := realDir(filepath.Join(real, filepath.FromSlash(d)))
		fi, err := os.Stat(t)
		return err == nil && fi.IsDir() && within(real, t)
	}
}

// existedWhenCovered says whether directory x was there at the first
// capture that says what x held (of x itself, whole or absent, or of a
// directory holding it); covered is false when no capture says.
func (st *firstStates) existedWhenCovered(x string) (existed, covered bool) {
	e, covered := st.coveredSince(x)
	for _, m := range []map[string]uint64{st.dirs, st.gone} {
		if s, ok := m[x]; ok && (!covered || s < e) {
			e, covered = s, true
		}
	}
	s, whole := st.dirs[x]
	return whole && s == e, covered
}

// dirChanges returns, as directories to make (Change.Dir), the directories
// captured whole that were there at the first capture saying what they
// held and whose own state is no file: a rewind makes again those that
// are not directories now (an empty one removed, or made a file), which
// no file it writes would make.
func (st *firstStates) dirChanges() []Change {
	var out []Change
	for d := range st.dirs {
		if _, ok := st.First[d]; ok {
			continue // a file's state (or absent): that is put back
		}
		if st.underEarlierFile(d, st.dirs[d]) {
			continue // a file then (settleFileOrDir): nothing under it
		}
		if existed, _ := st.existedWhenCovered(d); existed {
			c := Change{Path: d, Dir: true}
			if m, ok := st.dirModes[d]; ok {
				c.File.Mode, c.dirMode = m, true
			}
			out = append(out, c)
		}
	}
	return out
}

// underEarlierFile says whether a directory above p has a state as a
// file (or link) earlier than seq s: p's state is of a time the earliest
// capture says nothing could be under it.
func (st *firstStates) underEarlierFile(p string, s uint64) bool {
	for a := path.Dir(p); a != "."; a = path.Dir(a) {
		if c, ok := st.First[a]; ok && !c.Remove && !c.Dir && st.seq[a] < s {
			return true
		}
	}
	return false
}

// addedUnderDirs adds to st the files added under the directories captured
// whole (or absent, version 2) since their first capture, as absent: those
// first captured later (after the directory, without them), and those on
// disk now that no capture holds. It passes over exactly what a session
// capture of the directory passes over (capturePassesOver: the store and
// the temporary files of restores), no more: what such a capture would
// have taken is added when it is there now (a dist/ or .git/ in it, what a
// .gitignore ignores), so the diff shows it and a rewind removes it as it
// puts back what that capture took. Names a manifest cannot hold are
// listed (Unrecordable); it never follows a link. It also finds the
// directories to prune (st.Prune).
func (st *firstStates) addedUnderDirs(home string) error {
	files := 0
	for _, c := range st.First {
		if !c.Remove {
			files++
		}
	}
	if len(st.dirs) == 0 && len(st.gone) == 0 && files == 0 {
		return nil
	}
	dirThen := st.settleFileOrDir()
	for p, c := range st.First {
		if s, ok := st.coveredSince(p); ok && s < st.seq[p] {
			if c.transcript {
				st.FromTranscript--
			}
			st.First[p] = Change{Path: p, Remove: true}
		}
	}
	real, err := realRoot(st.Root)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return nil // the workspace is gone: diff and rewind say so
	}
	w := addedWalker{st: st, real: real, home: newStoreGuard(home).real, made: map[string]bool{}}
	tops := map[string]bool{}
	for _, m := range []map[string]uint64{st.dirs, st.gone} {
		for d := range m {
			if _, ok := st.coveredSince(d); !ok {
				tops[d] = true // the others are walked with it
			}
		}
	}
	// A file captured that is a directory now (a tool swapped them): what
	// is in it was added too. A rewind removes it all to write the file
	// back (planRestore's swap).
	for p, c := range st.First {
		if c.Remove {
			continue
		}
		if _, covered := st.coveredSince(p); covered {
			continue // walked with the directory holding it
		}
		if isDir, err := dirNow(real, p); err != nil {
			st.unreadable(p, err)
		} else if isDir {
			tops[p] = true
		}
	}
	for _, d := range slices.Sorted(maps.Keys(tops)) {
		if err := w.top(d); err != nil {
			return err
		}
	}
	// A path captured absent, or added, that is a directory now: what is
	// in it is added (walked above), and it goes once they are removed.
	// Removing it as a file would fail.
	var made []string
	for p, c := range st.First {
		if !c.Remove || c.transcript {
			continue
		}
		_, gone := st.gone[p]
		if _, covered := st.coveredSince(p); !gone && !covered && !dirThen[p] {
			continue
		}
		if isDir, err := dirNow(real, p); err != nil {
			st.unreadable(p, err)
		} else if isDir {
			made = append(made, p)
		}
	}
	for _, p := range made {
		delete(st.First, p)
	}
	// The directories a tool made for the files to remove: not there at
	// the first capture that says what they held. The first one up that
	// was there, and all above it, stay. Those the walk found (empty ones
	// too) go as well: the rewind's capture before it holds them, so its
	// undo makes them again.
	prune := w.made
	for p, c := range st.First {
		if !c.Remove || c.transcript {
			continue
		}
		for x := path.Dir(p); x != "." && !prune[x]; x = path.Dir(x) {
			if existed, covered := st.existedWhenCovered(x); existed || !covered {
				break
			}
			prune[x] = true
		}
	}
	st.Prune = slices.Sorted(maps.Keys(prune))
	return nil
}

// settleFileOrDir makes the earliest state at or after the point say
// whether a path was a file or a directory then, when a tool replaced one
// by the other between two captures: a state (a file's, a link's, or a
// directory's a capture took whole: dirChanges) whose directory above
// has an earlier state as a file (p captured as a file, then p/f once a
// tool made p a directory) is absent, as nothing could be under the file
// p then; a file state of a path with an earlier state under it (d/x
// captured, then d once a tool made it a file), or captured whole as a
// directory earlier (d or a directory in it), is absent as a file too, d
// being a directory then: it returns those, which a rewind leaves to the
// states under them when they are directories now (nothing to remove as a
// file). A later capture never overrides the earlier one's answer: diff
// compares with it, and a rewind removes what replaced it (its capture
// before holding it for the undo), as under a path captured absent.
func (st *firstStates) settleFileOrDir() (dirThen map[string]bool) {
	file := func(p string) (uint64, bool) {
		c, ok := st.First[p]
		if !ok || c.Remove || c.Dir {
			return 0, false
		}
		return st.seq[p], true
	}
	absent := map[string]bool{}
	dirThen = map[string]bool{}
	// A state under an earlier file (a file, a link or a directory: the
	// earliest capture had no directory there) is absent.
	for p, c := range st.First {
		if !c.Remove && st.underEarlierFile(p, st.seq[p]) {
			absent[p] = true
		}
	}
	for d, ds := range st.dirs {
		for x := d; x != "."; x = path.Dir(x) {
			if s, ok := file(x); ok && ds < s {
				dirThen[x] = true
			}
		}
	}
	for q := range st.First {
		qs, ok := file(q)
		if !ok {
			continue
		}
		for a := path.Dir(q); a != "."; a = path.Dir(a) {
			if as, ok := file(a); ok && qs < as {
				dirThen[a] = true
			}
		}
	}
	for p := range dirThen {
		absent[p] = true
	}
	for p := range absent {
		if c := st.First[p]; c.transcript {
			st.FromTranscript--
		}
		st.First[p] = Change{Path: p, Remove: true}
	}
	return dirThen
}

// readDir is os.ReadDir; a test makes a directory unreadable with it
// (chmod 000 does not stop root).
var readDir = os.ReadDir

// UnreadableDir is a directory under one a session captured whole that
// could not be read when looking for files added to it.
type UnreadableDir struct {
	Path  string `json:"path"`
	Error string `json:"error"`
	// TooLong: its path is longer than the system opens by name
	// (ENAMETOOLONG: a tree nested thousands of bytes deep), not a
	// matter of permissions. Added, the diff's walk and the rewind, which
	// reach files by their path, cannot reach it.
	TooLong bool `json:"too_long,omitempty"`
	// Added is, of one TooLong, the first directory above it that was not
	// there when captured (what a rewind would remove), when a capture
	// says so: a path short enough to name and remove by hand.
	Added string `json:"added,omitempty"`
}

func (st *firstStates) unreadable(rel string, err error) {
	too := errors.Is(err, syscall.ENAMETOOLONG)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the path is rel, said once
	}
	u := UnreadableDir{Path: rel, Error: err.Error(), TooLong: too}
	if too {
		u.Error = fmt.Sprintf("its path, %d bytes, is longer than the system opens by name (%v)", len(rel), err)
		for x := rel; x != "."; x = path.Dir(x) {
			if existed, covered := st.existedWhenCovered(x); covered && !existed {
				u.Added = x
			}
		}
	}
	st.Unreadable = append(st.Unreadable, u)
}

// dirNow says whether workspace path rel is a directory now, reached
// through no link.
func dirNow(real, rel string) (bool, error) {
	abs := real
	for _, part := range strings.Split(rel, "/") {
		abs = filepath.Join(abs, part)
		fi, err := os.Lstat(abs)
		if notExist(err) || err == nil && !fi.IsDir() {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("look for files added to %s: %w", rel, err)
		}
	}
	return true, nil
}

type addedWalker struct {
	st   *firstStates
	real string
	home string
	// made are the directories walked that were not there at the first
	// capture saying what their parent held (or of them, absent).
	made map[string]bool
}

// top walks the captured directory d as it is now, reached through no
// link: a link put in place of d or a directory above it would lead the
// walk, and a rewind's removals, to files outside what was captured.
func (w *addedWalker) top(d string) error {
	isDir, err := dirNow(w.real, d)
	if err != nil {
		w.st.unreadable(d, err)
		return nil
	}
	if !isDir {
		return nil // not a directory now: nothing added in it
	}
	w.noteMade(d)
	return w.walk(d)
}

func (w *addedWalker) walk(rel string) error {
	abs := filepath.Join(w.real, filepath.FromSlash(rel))
	if capturePassesOver(filepath.Base(abs), abs, w.home) {
		return nil
	}
	ents, err := readDir(abs)
	if notExist(err) {
		return nil // gone since it was listed
	}
	if err != nil {
		// What was added in it cannot be seen: the diff shows the rest
		// and names it, a rewind refuses (it could not remove them).
		w.st.unreadable(rel, err)
		return nil
	}
	for _, e := range ents {
		name, child := e.Name(), rel+"/"+e.Name()
		switch {
		case capturePassesOver(name, filepath.Join(abs, name), w.home):
			// What a session capture of the directory passes over, and
			// nothing else (capturer.walkDir): a rewind removes what
			// such a capture would have taken.
			continue
		case recordable(child) != nil:
			// Neither removable by a rewind nor savable for its undo: the
			// diff and the rewind name it rather than pass it over.
			w.st.Unrecordable = append(w.st.Unrecordable, strconv.Quote(child))
			continue
		case e.IsDir():
			w.noteMade(child)
			if err := w.walk(child); err != nil {
				return err
			}
		case e.Type().IsRegular() || e.Type()&os.ModeSymlink != 0:
			if _, ok := w.st.First[child]; !ok {
				w.st.First[child] = Change{Path: child, Remove: true}
			}
		}
	}
	return nil
}

// noteMade records directory rel if a capture says it was not there.
func (w *addedWalker) noteMade(rel string) {
	if existed, covered := w.st.existedWhenCovered(rel); covered && !existed {
		w.made[rel] = true
	}
}

// firstMissingDir returns the first directory above workspace path rel, from
// the top, that does not exist: the one a write of rel makes first. "" when
// all are there.
func firstMissingDir(real, rel string) string {
	dir := ""
	parts := strings.Split(rel, "/")
	for _, part := range parts[:len(parts)-1] {
		dir = path.Join(dir, part)
		if _, err := os.Lstat(filepath.Join(real, filepath.FromSlash(dir))); notExist(err) {
			return dir
		}
	}
	return ""
}
