package agent

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// A session capture of a directory records the directory as captured whole
// (manifest version 2, "dirs"): a file under it that the capture does not
// hold was not there. Diff shows such a file as added, and a rewind to
// before the capture removes it (its undo puts it back: the rewind captures
// every path it removes first). A manifest of version 1 records no
// directories: files added under a directory it captured are not seen, as
// before.

// coveredSince returns the seq of the earliest capture of a directory
// holding p (a proper ancestor of p) whole, if there is one.
func (st *firstStates) coveredSince(p string) (uint64, bool) {
	var best uint64
	found := false
	for d := path.Dir(p); d != "."; d = path.Dir(d) {
		if s, ok := st.dirs[d]; ok && (!found || s < best) {
			best, found = s, true
		}
	}
	return best, found
}

// addedUnderDirs adds to st the files added under the directories captured
// whole since their first capture, as absent: those first captured later
// (after the directory, without them), and those on disk now that no
// capture holds. Like a tree capture it passes over what .gitignore
// ignores, heavy directories (node_modules, .git...), the store, names a
// manifest cannot hold and the temporary files of restores; it never
// follows a link. It also finds the directories to prune (st.Prune).
func (st *firstStates) addedUnderDirs(home string) error {
	if len(st.dirs) == 0 {
		return nil
	}
	added := map[string]bool{}
	for p, c := range st.First {
		if s, ok := st.coveredSince(p); ok && s < st.seq[p] {
			if c.transcript {
				st.FromTranscript--
			}
			st.First[p] = Change{Path: p, Remove: true}
			added[p] = true
		}
	}
	real, err := realRoot(st.Root)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return nil // the workspace is gone: diff and rewind say so
	}
	home, _ = filepath.EvalSymlinks(home)
	w := addedWalker{st: st, real: real, home: home, added: added}
	tops := make([]string, 0, len(st.dirs))
	for d := range st.dirs {
		if _, ok := st.coveredSince(d); !ok {
			tops = append(tops, d) // the others are walked with it
		}
	}
	sort.Strings(tops)
	for _, d := range tops {
		if err := w.top(d); err != nil {
			return err
		}
	}
	// The directories a tool made: neither there when a directory holding
	// them was captured nor captured then themselves. The first one up
	// that was there, and all above it, stay.
	prune := map[string]bool{}
	for p := range added {
		for x := path.Dir(p); x != "." && !prune[x]; x = path.Dir(x) {
			s, captured := st.dirs[x]
			cover, covered := st.coveredSince(x)
			if !covered || captured && s <= cover {
				break
			}
			prune[x] = true
		}
	}
	for d := range prune {
		st.Prune = append(st.Prune, d)
	}
	sort.Strings(st.Prune)
	return nil
}

type addedWalker struct {
	st     *firstStates
	real   string
	home   string
	ignore *Ignore
	added  map[string]bool
}

// top walks the captured directory d as it is now, reached through no
// link: a link put in place of d or a directory above it would lead the
// walk, and a rewind's removals, to files outside what was captured.
func (w *addedWalker) top(d string) error {
	abs := w.real
	for _, part := range strings.Split(d, "/") {
		abs = filepath.Join(abs, part)
		fi, err := os.Lstat(abs)
		if notExist(err) || err == nil && !fi.IsDir() {
			return nil // gone, or no longer a directory: nothing added in it
		}
		if err != nil {
			return fmt.Errorf("look for files added to %s: %w", d, err)
		}
	}
	// The .gitignore files above d apply, as in a tree capture of it.
	w.ignore = NewIgnore()
	dir := ""
	for _, part := range strings.Split(d, "/") {
		if b, err := os.ReadFile(filepath.Join(w.real, filepath.FromSlash(dir), ".gitignore")); err == nil {
			w.ignore.AddFile(dir, b)
		}
		dir = path.Join(dir, part)
	}
	return w.walk(d)
}

func (w *addedWalker) walk(rel string) error {
	abs := filepath.Join(w.real, filepath.FromSlash(rel))
	if w.home != "" && abs == w.home {
		return nil
	}
	ents, err := os.ReadDir(abs)
	if err != nil {
		return fmt.Errorf("look for files added to %s: %w", rel, err)
	}
	if b, err := os.ReadFile(filepath.Join(abs, ".gitignore")); err == nil {
		w.ignore.AddFile(rel, b)
	}
	for _, e := range ents {
		name, child := e.Name(), rel+"/"+e.Name()
		switch {
		case e.IsDir() && excludedDirs[name],
			w.ignore.Match(child, e.IsDir()),
			recordable(child) != nil,
			strings.HasPrefix(name, restoreTmpPrefix) && strings.HasSuffix(name, ".tmp"):
			continue
		case e.IsDir():
			if err := w.walk(child); err != nil {
				return err
			}
		case e.Type().IsRegular() || e.Type()&os.ModeSymlink != 0:
			if _, ok := w.st.First[child]; !ok {
				w.st.First[child] = Change{Path: child, Remove: true}
				w.added[child] = true
			}
		}
	}
	return nil
}
