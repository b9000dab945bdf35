package agent

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// The store's directory (ROOK_HOME) is rook's own: its segments, index,
// event logs and refs. Nothing a command writes for the user (a restore, a
// rewind, an export) goes there, and nothing in it is captured (a rewind
// would put old copies of the index and logs over the live ones). Every
// such path goes through one guard, InStore, which follows the links on
// the way as a write would: those of the directories above the path, a
// link whose target does not exist yet, and a link to a directory the
// store does not have yet (the longest existing prefix is resolved, the
// rest joined to it).

// StoreError: a path rook was asked to write or capture that is, or leads
// to, the store's directory or something in it.
type StoreError struct {
	How     string // what was asked: "restore", "capture", "write --output"
	Path    string // as the user or the manifest named it
	LeadsTo string // where it leads, links followed ("" when the same)
	Home    string // the store's directory
}

func (e *StoreError) Error() string {
	leads := ""
	if e.LeadsTo != "" {
		leads = " (it leads to " + e.LeadsTo + ")"
	}
	return fmt.Sprintf("cannot %s %s: it is inside rook's store %s%s, which holds rook's own files and is never written to or captured from; choose a path outside the store", e.How, e.Path, e.Home, leads)
}

// InStore returns a *StoreError when path (absolute, or relative to the
// working directory) is inside the store at home, or is home itself, once
// every link on the way is followed; nil when it is elsewhere. how says
// what was asked ("restore", "capture", "write --output"), for the error.
func InStore(home, path, how string) error {
	return newStoreGuard(home).check(path, path, how)
}

// storeGuard is InStore with the store's directory resolved once, for a
// command that checks many paths (a restore's files).
type storeGuard struct {
	home string // as given, for messages
	real string // links followed; "" when there is no store to guard
}

func newStoreGuard(home string) storeGuard {
	if home == "" {
		return storeGuard{}
	}
	abs, err := filepath.Abs(home)
	if err != nil {
		return storeGuard{}
	}
	return storeGuard{home: home, real: resolvePath(abs)}
}

// check refuses abs (the path at shown) when it leads into the store.
func (g storeGuard) check(shown, abs, how string) error {
	if g.real == "" {
		return nil
	}
	abs, err := filepath.Abs(abs)
	if err != nil {
		return nil
	}
	real := resolvePath(abs)
	if !within(g.real, real) {
		return nil
	}
	e := &StoreError{How: how, Path: shown, Home: g.home}
	if real != abs && real != shown {
		e.LeadsTo = real
	}
	return e
}

// checkEntry is check for a path whose last element is not followed: a
// workspace entry that a restore replaces (a link there is replaced, not
// written through) or a capture records (a link as the link).
func (g storeGuard) checkEntry(shown, abs, how string) error {
	if g.real == "" {
		return nil
	}
	abs, err := filepath.Abs(abs)
	if err != nil {
		return nil
	}
	dir := filepath.Dir(abs)
	if dir == abs {
		return g.check(shown, abs, how)
	}
	return g.check(shown, filepath.Join(resolvePath(dir), filepath.Base(abs)), how)
}

// holds says whether the workspace entry at abs (a directory a removal
// would take; its last element not followed) holds the store.
func (g storeGuard) holds(abs string) bool {
	if g.real == "" {
		return false
	}
	return within(filepath.Join(resolvePath(filepath.Dir(abs)), filepath.Base(abs)), g.real)
}

// maxLinks bounds the links followed, as the kernel does (a loop of links
// ends there).
const maxLinks = 40

// resolvePath is where the absolute path p leads once every link on the
// way is followed, as a write to it would follow them: the longest prefix
// that exists is resolved, a link to nothing leads to its target, and the
// names after are joined to it. A loop of links resolves to the path it
// ends at.
func resolvePath(p string) string {
	return resolveLinks(filepath.Clean(p), maxLinks)
}

func resolveLinks(p string, hops int) string {
	for ; hops > 0; hops-- {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		fi, err := os.Lstat(p)
		if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			// A link to nothing (yet): a write makes its target.
			t, err := os.Readlink(p)
			if err != nil {
				return p
			}
			if !filepath.IsAbs(t) {
				t = filepath.Join(resolveLinks(filepath.Dir(p), hops-1), t)
			}
			p = filepath.Clean(t)
			continue
		}
		if err == nil {
			return p // there, and not a link, yet not resolvable (a loop above)
		}
		dir := filepath.Dir(p)
		if dir == p {
			return p
		}
		// Not there: no link followed here, so none counted (a path
		// many new directories deep under a link is resolved whole).
		return filepath.Join(resolveLinks(dir, hops), filepath.Base(p))
	}
	return p
}
