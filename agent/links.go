package agent

import (
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sync"
)

// A session linked to another (a subagent, a fork: family.go) may have
// recorded the same workspace by another path to it, through a symbolic
// link: its cwd, or the absolute paths its edits name (/link-to-w/a.txt
// for /w/a.txt; macOS gives /tmp/w and /private/tmp/w for one
// directory). A recorded path not in the workspace as written is
// compared again with both resolved (realDir), and named from the
// workspace as the workspace spells it. Each directory is resolved once
// while a rewind or a diff runs (holdLinks), not again for each file it
// holds; between two runs a link may have changed, and is read again.

// evalSymlinks is filepath.EvalSymlinks; tests count its calls.
var evalSymlinks = filepath.EvalSymlinks

// linkMemo holds the directories realDir resolved while held.
var linkMemo struct {
	sync.Mutex
	held int
	dirs map[string]string
}

// holdLinks keeps what realDir resolves until the func it gives is
// called: a rewind or a diff compares many recorded paths with its
// workspace. Holds nest (and overlap, from two goroutines): the last
// release lets go.
func holdLinks() (release func()) {
	linkMemo.Lock()
	defer linkMemo.Unlock()
	if linkMemo.held == 0 {
		linkMemo.dirs = map[string]string{}
	}
	linkMemo.held++
	var once sync.Once
	return func() {
		once.Do(func() {
			linkMemo.Lock()
			defer linkMemo.Unlock()
			if linkMemo.held--; linkMemo.held == 0 {
				linkMemo.dirs = nil
			}
		})
	}
}

// realDir is d, an absolute directory, with the symbolic links of its
// longest existing prefix resolved: the part of it that does not exist
// (removed since, or never on this machine) follows as written. d as it
// is when it cannot be read at all.
func realDir(d string) string {
	d = filepath.Clean(d)
	if !filepath.IsAbs(d) {
		return d
	}
	linkMemo.Lock()
	real, ok := linkMemo.dirs[d]
	linkMemo.Unlock()
	if ok {
		return real
	}
	real, err := evalSymlinks(d)
	if err != nil {
		real = d
		if up := filepath.Dir(d); up != d {
			real = filepath.Join(realDir(up), filepath.Base(d))
		}
	}
	linkMemo.Lock()
	if linkMemo.dirs != nil {
		linkMemo.dirs[d] = real
	}
	linkMemo.Unlock()
	return real
}

// realPath is p, an absolute path, with its directory resolved
// (realDir); its last element stays as written: a link in the workspace
// is the workspace's own file, wherever it leads.
func realPath(p string) string {
	p = filepath.Clean(p)
	dir, base := filepath.Split(p)
	if base == "" {
		return realDir(p)
	}
	return filepath.Join(realDir(dir), base)
}

// linkedRel is dir (an absolute directory) named from ws as the two are
// on disk, when it is ws, in it ("sub") or contains it ("..", "../.."),
// their links resolved (realDir); ok false for neither.
func linkedRel(ws, dir string) (rel string, ok bool) {
	if !filepath.IsAbs(ws) || !filepath.IsAbs(dir) {
		return "", false
	}
	rws, rdir := realDir(ws), realDir(dir)
	if inWorkspace(rws, rdir) || inWorkspace(rdir, rws) {
		rel, err := filepath.Rel(rws, rdir)
		return filepath.ToSlash(rel), err == nil
	}
	return "", false
}

// linkFreeRel is rel, a workspace path (slash-separated) of the workspace
// whose real path is real, named as git names the file: each link among
// its directories that leads to a directory of the workspace resolved
// (lnk/f is real/f when lnk leads to real). The last element stays as
// written (a link named is the link). rel as written when no such link is
// on the way, or when one is a link whose prefix (as written) keep says
// was a directory (a capture took it whole: a tool replaced it by a link
// since, which is not what was captured), or leads outside the workspace,
// to nothing, or to a file: the restore and the diff handle those (a
// link above a path: Plan.inRoot). memo (nil: none) holds each directory
// resolved, for the many paths of one capture.
func linkFreeRel(real, rel string, keep func(prefix string) bool, memo map[string]linkFreeDir) string {
	if memo == nil {
		memo = map[string]linkFreeDir{}
	}
	d := resolveLinkFreeDir(real, path.Dir(rel), keep, memo)
	if d.kept || !d.changed {
		return rel
	}
	return path.Join(d.to, path.Base(rel))
}

// linkFreeDir is a directory of a path linkFreeRel resolves: to, its
// path with links resolved; changed, that a link was; kept, that one was
// kept as written (the path is then as written).
type linkFreeDir struct {
	to            string
	changed, kept bool
}

func resolveLinkFreeDir(real, dir string, keep func(string) bool, memo map[string]linkFreeDir) linkFreeDir {
	if dir == "." || dir == "" {
		return linkFreeDir{to: "."}
	}
	if d, ok := memo[dir]; ok {
		return d
	}
	d := resolveLinkFreeDir(real, path.Dir(dir), keep, memo)
	if !d.kept {
		d.to = path.Join(d.to, path.Base(dir))
		abs := filepath.Join(real, filepath.FromSlash(d.to))
		fi, err := os.Lstat(abs)
		if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			// Kept as written unless it leads to a directory of the
			// workspace: nothing beyond it is looked at.
			d.kept = true
			if keep == nil || !keep(dir) {
				if t := realDir(abs); within(real, t) {
					if ti, err := os.Stat(t); err == nil && ti.IsDir() {
						if r, err := filepath.Rel(real, t); err == nil {
							d.to, d.changed, d.kept = filepath.ToSlash(r), true, false
						}
					}
				}
			}
		}
	}
	memo[dir] = d
	return d
}

// linkFree is m with its paths named as git names the files (linkFreeRel):
// a capture an older rook recorded through a link to a directory of the
// workspace (lnk/f) names the file the workspace holds (real/f), so the
// states of one file captured by both names are merged by that path, the
// earliest its state (firstStates). Of two names in one manifest for one
// path, the one recorded so is kept. keep: as linkFreeRel's. m itself
// when no path changes.
func (m *Manifest) linkFree(keep func(string) bool) *Manifest {
	if m == nil || !filepath.IsAbs(m.Root) {
		return m
	}
	real := realDir(m.Root)
	names := map[string]string{}
	memo := map[string]linkFreeDir{}
	name := func(p string) string {
		q, ok := names[p]
		if !ok {
			q = linkFreeRel(real, p, keep, memo)
			names[p] = q
		}
		return q
	}
	changed := false
	for p := range m.Files {
		changed = changed || name(p) != p
	}
	for _, ps := range [][]string{m.Absent, m.Dirs, m.Unknown} {
		for _, p := range ps {
			changed = changed || name(p) != p
		}
	}
	for _, ms := range []map[string]FileMode{m.DirModes, m.Opened} {
		for p := range ms {
			changed = changed || name(p) != p
		}
	}
	if !changed {
		return m
	}
	out := *m
	// taken: the paths already named, those recorded as they are first.
	taken := map[string]bool{}
	out.Files = make(map[string]FileEntry, len(m.Files))
	for _, renamed := range []bool{false, true} {
		for _, p := range slices.Sorted(maps.Keys(m.Files)) {
			if q := name(p); (q != p) == renamed && !taken[q] {
				out.Files[q], taken[q] = m.Files[p], true
			}
		}
	}
	list := func(ps []string, exclusive bool) []string {
		var o []string
		in := make(map[string]bool, len(ps))
		for _, renamed := range []bool{false, true} {
			for _, p := range ps {
				q := name(p)
				if (q != p) != renamed || in[q] || exclusive && taken[q] {
					continue
				}
				o, in[q] = append(o, q), true
			}
		}
		for _, q := range o {
			if exclusive {
				taken[q] = true
			}
		}
		return o
	}
	out.Absent = list(m.Absent, true)
	out.Unknown = list(m.Unknown, true)
	out.Dirs = list(m.Dirs, false)
	modes := func(ms map[string]FileMode) map[string]FileMode {
		if ms == nil {
			return nil
		}
		o := make(map[string]FileMode, len(ms))
		for _, renamed := range []bool{false, true} {
			for _, p := range slices.Sorted(maps.Keys(ms)) {
				if q := name(p); (q != p) == renamed {
					if _, ok := o[q]; !ok {
						o[q] = ms[p]
					}
				}
			}
		}
		return o
	}
	out.DirModes, out.Opened = modes(m.DirModes), modes(m.Opened)
	return &out
}
