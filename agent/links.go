package agent

import (
	"path/filepath"
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
