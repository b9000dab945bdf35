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
	"sort"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/rookhq/rook/cas"
)

// Workspace files are the user's own tree, not the store: they are read and
// written with package os. Every path goes through resolveInRoot first, so
// nothing is read or written outside the workspace (but the .gitignore
// files above it in its git repository, which a tree capture honours:
// gitignoresAbove).

// Limits bound a capture, so that one aimed at the wrong directory stops
// with an error instead of thrashing.
type Limits struct {
	MaxFiles     int
	MaxBytes     int64
	MaxFileBytes int64
}

// DefaultLimits are the bounds of a capture unless the user raises them.
var DefaultLimits = Limits{MaxFiles: 5000, MaxBytes: 256 << 20, MaxFileBytes: 16 << 20}

// LimitError: a capture that passed one of its bounds.
type LimitError struct {
	What  string // "files", "bytes in all", "bytes in one file"
	Limit int64
	Path  string // the file that passed it
	Flag  string // how to raise it
	// Less says how to capture less: "a narrower --path" (checkpoints,
	// when empty); a session's capture names its paths, and has no --path.
	Less string
}

func (e *LimitError) Error() string {
	at := ""
	if e.Path != "" {
		at = " at " + e.Path
	}
	less := e.Less
	if less == "" {
		less = "a narrower --path"
	}
	return fmt.Sprintf("capture stopped%s: more than %d %s (raise the bound with %s, or capture %s)", at, e.Limit, e.What, e.Flag, less)
}

// EscapeError: a path that leads outside the workspace.
type EscapeError struct {
	Path    string
	LeadsTo string
	Root    string
	// Link is the workspace path (slash-separated, up to and with it) of
	// the link in Path that leads outside; "" when Path itself is outside.
	Link string
}

func (e *EscapeError) Error() string {
	return fmt.Sprintf("%s leads to %s, outside the workspace %s: refused", e.Path, e.LeadsTo, e.Root)
}

// excludedDirs are skipped by tree captures before anything is counted.
var excludedDirs = map[string]bool{".git": true, "node_modules": true, "target": true, ".venv": true, "__pycache__": true, "dist": true, "build": true}

// passedOverWhy says, of each of excludedDirs a tree capture lists in its
// skipped when it passes one over (one no .gitignore ignores), what such a
// directory usually holds. .git is not listed: git's own, never a file of
// the workspace in git's eyes either.
var passedOverWhy = map[string]string{"node_modules": "installed packages", "target": "build output", ".venv": "a Python virtual environment", "__pycache__": "Python's compiled files", "dist": "build output", "build": "build output"}

// excludedNames lists the names a tree capture passes over and lists.
func excludedNames() string {
	return strings.Join(slices.Sorted(maps.Keys(passedOverWhy)), ", ")
}

// recordable says whether a manifest can hold the workspace path rel as
// it is. A manifest refuses a backslash when it is read, and JSON writes
// bytes that are not UTF-8 as U+FFFD: such a name, recorded, would make
// every later diff and rewind of the session fail, or be restored under
// another name.
func recordable(rel string) error {
	if !utf8.ValidString(rel) || strings.ContainsRune(rel, '\\') {
		return fmt.Errorf("%q cannot be recorded in a capture: its name has a backslash or bytes that are not UTF-8 (rename it to capture it)", rel)
	}
	return nil
}

// workspaceOnDisk says whether a session's workspace is a directory on this
// disk. Where it is gone (moved, renamed, deleted, another machine), every
// path would capture as absent and a rewind would make the directory anew.
func workspaceOnDisk(root string) error {
	fi, err := os.Stat(root)
	switch {
	case err == nil && fi.IsDir():
		return nil
	case err == nil || notExist(err):
		return fmt.Errorf("the session's workspace %s is not on this disk (moved, renamed, deleted, or on another machine)", root)
	}
	return err
}

func within(root, p string) bool {
	if p == root {
		return true
	}
	return strings.HasPrefix(p, strings.TrimSuffix(root, string(filepath.Separator))+string(filepath.Separator))
}

// realRoot returns the workspace's real path (symlinks resolved), or the
// cleaned path if it does not exist.
func realRoot(root string) (string, error) {
	if !filepath.IsAbs(root) {
		return "", fmt.Errorf("workspace %q is not an absolute path", root)
	}
	root = filepath.Clean(root)
	if r, err := filepath.EvalSymlinks(root); err == nil {
		return r, nil
	}
	return root, nil
}

// resolveInRoot turns a user's path (relative to the workspace, or absolute
// inside it) into a clean slash-separated workspace path, refusing "..",
// paths outside the root, and paths whose symlinks lead outside it.
// followLast: a symlink as the last element is checked too.
func resolveInRoot(root, real, p string, followLast bool) (string, error) {
	if p == "" {
		return "", errors.New("empty path")
	}
	abs := p
	if !filepath.IsAbs(p) {
		abs = filepath.Join(root, p)
	}
	abs = filepath.Clean(abs)
	var rel string
	switch {
	case within(root, abs):
		rel, _ = filepath.Rel(root, abs)
	case within(real, abs):
		rel, _ = filepath.Rel(real, abs)
	default:
		return "", &EscapeError{Path: p, LeadsTo: abs, Root: root}
	}
	if rel == "." {
		return "", fmt.Errorf("%s is the workspace itself: name files or directories inside it", p)
	}
	// Walk the real path one element at a time: a symlink anywhere must
	// still land inside the workspace.
	cur := real
	parts := strings.Split(rel, string(filepath.Separator))
	for i, part := range parts {
		next := filepath.Join(cur, part)
		fi, err := os.Lstat(next)
		if err != nil {
			break // does not exist (yet): nothing further to follow
		}
		if fi.Mode()&fs.ModeSymlink != 0 && (i < len(parts)-1 || followLast) {
			target, err := filepath.EvalSymlinks(next)
			if err != nil {
				t, _ := os.Readlink(next)
				if !filepath.IsAbs(t) {
					t = filepath.Join(cur, t)
				}
				target = filepath.Clean(t)
			}
			if !within(real, target) {
				return "", &EscapeError{Path: p, LeadsTo: target, Root: root, Link: filepath.ToSlash(filepath.Join(parts[:i+1]...))}
			}
			if i < len(parts)-1 {
				next = target
			}
		}
		cur = next
	}
	return filepath.ToSlash(rel), nil
}

// captureHook, when set (by tests), is called by a capture at the points
// where the workspace may change under it (a tool at work): captureListed
// for each entry of a directory's listing, before its Lstat; captureRead
// before a path is read (a file's bytes, a link's target, a directory's
// listing).
var captureHook func(point, rel string)

const (
	captureListed = "listed"
	captureRead   = "read"
)

// errGone: a path a capture found (listed, or Lstat'ed) was removed before
// it was read. A walk passes over it; a path the capture was named is
// recorded as absent, as one not there to begin with is.
var errGone = errors.New("removed while it was captured")

// gone wraps err, a read's of rel that found nothing there, as errGone.
func gone(rel string, err error) error {
	return fmt.Errorf("capture %s: %w (%w)", displayRel(rel), errGone, err)
}

// capturer builds a manifest, counting against the limits.
type capturer struct {
	r      *Rook
	root   string
	real   string
	limits Limits
	m      *Manifest
	store  storeGuard // the store home, never captured
	ignore *Ignore
	// tracked is what git tracks, by repository: "" the one the
	// workspace is in, else a nested one's top (nested) from the
	// workspace. Each index is read when a .gitignore first matches a path
	// in its repository: a file git tracks is taken though a pattern
	// matches it, as git never ignores it.
	tracked map[string]*trackedFiles
	nested  map[string]bool
	// trackedOnly are the directories a .gitignore ignores that the walk
	// entered for what git tracks in them: of what they hold, only that.
	trackedOnly map[string]bool
	// linksAsIs: the capture is a rewind's or restore's save of what it is
	// about to replace, which must hold every path it names: a named pipe
	// there is refused, not skipped.
	linksAsIs bool
	// exact: the capture is that save (linksAsIs, or not, in turn, as it
	// takes each path): every mode it records says the setuid, setgid
	// and sticky bits, none too (FileMode.exact), a directory's as a
	// file's, so its undo takes off those the restore or rewind gave.
	exact bool
	// stats, when not nil, gets what the file system said of each regular
	// file read, if it had not changed for statQuiet before began: a
	// rewind then tells a file still as captured without reading it again
	// (Plan.sinceSaved).
	stats map[string]savedStat
	began time.Time
	// passedOver counts the directories a tree capture passed over by
	// name (passOver).
	passedOver int
	// emptyDirs counts the empty directories a tree capture left out
	// (leaveOutEmpty).
	emptyDirs int
	// tooLong counts the paths a tree capture left out as longer than the
	// system opens by name (leaveOutTooLong).
	tooLong int
	// openDirs counts the directories the walk holds open (walkedDir).
	openDirs int
	// linkFree: a path named through a link to a directory of the
	// workspace is recorded by the path it reaches (linkFreeRel), as git
	// names the file: a session's capture. A save of what a restore or
	// rewind replaces records the paths it writes, as named.
	linkFree bool
}

func (r *Rook) newCapturer(root string, limits Limits) (*capturer, error) {
	real, err := realRoot(root)
	if err != nil {
		return nil, err
	}
	if !utf8.ValidString(root) {
		// The manifest's root is JSON too: restored into another directory.
		return nil, fmt.Errorf("workspace %q cannot be recorded in a capture: its path has bytes that are not UTF-8 (rename it to capture it)", root)
	}
	if limits.MaxFiles <= 0 {
		limits.MaxFiles = DefaultLimits.MaxFiles
	}
	if limits.MaxBytes <= 0 {
		limits.MaxBytes = DefaultLimits.MaxBytes
	}
	if limits.MaxFileBytes <= 0 {
		limits.MaxFileBytes = DefaultLimits.MaxFileBytes
	}
	store := newStoreGuard(r.Store.Home())
	if err := store.check(root, real, "capture"); err != nil {
		return nil, err
	}
	return &capturer{r: r, root: filepath.Clean(root), real: real, limits: limits, store: store, began: time.Now(),
		m: &Manifest{V: manifestVersion, Root: filepath.Clean(root), CapturedAt: r.clock.Now().UTC(), Files: map[string]FileEntry{}}}, nil
}

// add captures one file (or records a link) at workspace path rel, which
// an Lstat found to be fi.
func (c *capturer) add(rel string, fi fs.FileInfo) error {
	return c.addIn(nil, "", rel, fi)
}

// addIn is add of the entry name of dir, a walk's directory (nil: rel's
// path, from the workspace): a file is read only if it is still the one
// fi says, opened without following a link (errNowLink).
func (c *capturer) addIn(dir *os.Root, name, rel string, fi fs.FileInfo) error {
	if _, ok := c.m.Files[rel]; ok {
		return nil
	}
	if len(c.m.Files) >= c.limits.MaxFiles {
		return &LimitError{What: "file(s)", Limit: int64(c.limits.MaxFiles), Path: rel, Flag: "--max-files"}
	}
	abs := filepath.Join(c.real, filepath.FromSlash(rel))
	if captureHook != nil {
		captureHook(captureRead, rel)
	}
	var data, room []byte // room: data behind cas.ObjectRoom bytes, when read so
	var mode FileMode
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		var t string
		var err error
		if dir != nil {
			t, err = dir.Readlink(name)
		} else {
			t, err = os.Readlink(abs)
		}
		if notExist(err) || errors.Is(err, syscall.EINVAL) {
			// EINVAL: not a link now (replaced since its Lstat).
			if !notExist(err) {
				return fmt.Errorf("capture %s: %w", rel, errNowLink)
			}
			return gone(rel, err)
		}
		if err != nil {
			return fmt.Errorf("capture %s: %w", rel, rootErrAt(err, filepath.Dir(abs)))
		}
		data, mode = []byte(t), FileMode{Link: true}
	case fi.Mode().IsRegular():
		if fi.Size() > c.limits.MaxFileBytes {
			return &LimitError{What: "bytes in one file", Limit: c.limits.MaxFileBytes, Path: rel, Flag: "--max-file-bytes"}
		}
		if c.m.TotalBytes+fi.Size() > c.limits.MaxBytes {
			return &LimitError{What: "bytes in all", Limit: c.limits.MaxBytes, Path: rel, Flag: "--max-bytes"}
		}
		var f *os.File
		var err error
		if dir != nil {
			f, err = openRegularIn(dir, name, rel, fi)
		} else {
			f, err = openRegularAs(abs, rel, fi)
		}
		var b []byte
		if err == nil {
			b, err = readOpened(f, c.limits.MaxFileBytes, cas.ObjectRoom)
		}
		if errors.Is(err, errLargerThan) {
			// Written to while captured, past the bound.
			return &LimitError{What: "bytes in one file", Limit: c.limits.MaxFileBytes, Path: rel, Flag: "--max-file-bytes"}
		}
		if notExist(err) {
			return gone(rel, err)
		}
		if err != nil {
			return fmt.Errorf("capture %s: %w", rel, rootErrAt(err, filepath.Dir(abs)))
		}
		room, b = b, b[cas.ObjectRoom:]
		if c.m.TotalBytes+int64(len(b)) > c.limits.MaxBytes {
			return &LimitError{What: "bytes in all", Limit: c.limits.MaxBytes, Path: rel, Flag: "--max-bytes"}
		}
		data, mode = b, fileMode(fi) // the setuid, setgid and sticky bits too
		// A save of what a restore or rewind replaces says the bits,
		// none too: its undo takes off those the restore gave.
		mode.exact = c.exact
	default:
		return &NotRegularError{Path: rel, Type: fi.Mode().Type()}
	}
	// data was read for this Put alone: the store may keep it rather
	// than a copy (a small file packed with others), and lay a big one
	// out as its block where it was read, behind its room (a 300 MB file
	// was held three times over: read, copied into its block, and copied
	// again into a record when it did not compress).
	var res cas.PutResult
	var err error
	if room != nil {
		res, err = c.r.Store.PutInPlace(cas.KindFile, room)
	} else {
		res, err = c.r.Store.PutOwned(cas.KindFile, data)
	}
	if err != nil {
		return fmt.Errorf("capture %s: %w", rel, err)
	}
	c.m.Files[rel] = FileEntry{ID: res.ID, Size: int64(len(data)), Mode: mode}
	c.m.TotalBytes += int64(len(data))
	if st := statOf(fi); c.stats != nil && !mode.Link && st.size == int64(len(data)) && st.quiet(c.began) {
		c.stats[rel] = st
	}
	return nil
}

// addPath captures what a tool names: a file, a link, a whole directory, or
// a path that does not exist (recorded as absent).
func (c *capturer) addPath(p string) error {
	err := c.addPathLook(p)
	if errors.Is(err, errNowLink) {
		// Replaced by a link (or another file) after its Lstat, before
		// it was read (a tool at work): taken as what it is now, once
		// more; nothing is read through the link.
		err = c.addPathLook(p)
		if errors.Is(err, errNowLink) {
			return fmt.Errorf("capture %s: replaced again and again while captured (a tool at work), never read through a link: run it again once it is done", p)
		}
	}
	return err
}

// addPathLook is addPath, once: a path replaced after its Lstat fails with
// errNowLink.
func (c *capturer) addPathLook(p string) error {
	// A link named itself is recorded as the link, wherever it leads: its
	// target is only text, nothing is read through it, and a restore
	// recreates the link without following it. Links earlier in the path
	// are followed, and must stay inside.
	rel, err := resolveInRoot(c.root, c.real, p, false)
	if err != nil {
		return err
	}
	if c.linkFree {
		// Through a link to a directory of the workspace (lnk/f, lnk
		// leading to real): the file is real/f, as git names it, and
		// recorded so, whichever name the tool was given.
		rel = linkFreeRel(c.real, rel, nil, nil)
	}
	if err := recordable(rel); err != nil {
		return err
	}
	abs := filepath.Join(c.real, filepath.FromSlash(rel))
	if err := c.notStore(p, abs); err != nil {
		return err
	}
	fi, err := os.Lstat(abs)
	if notExist(err) {
		c.addAbsent(rel)
		return nil
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return c.absentIfGone(rel, c.walk(rel, false))
	}
	if special(fi) && !c.linksAsIs {
		// A named pipe has no content to keep (and opening it would
		// wait for a writer): listed as skipped, as in a directory, so
		// a capture of several paths still captures the rest. A
		// rewind's or restore's own save refuses it instead (add): it
		// would replace what it cannot put back.
		c.m.Skipped = append(c.m.Skipped, skippedSpecial(rel, fi))
		return nil
	}
	return c.absentIfGone(rel, c.add(rel, fi))
}

// absentIfGone returns err, the capture's of the path it was named, rel,
// unless that is errGone: removed after its Lstat, before it was read (a
// tool at work), rel is then recorded as absent, as if it had gone
// before.
func (c *capturer) absentIfGone(rel string, err error) error {
	if errors.Is(err, errGone) && c.goneWhole(rel) {
		c.addAbsent(rel)
		return nil
	}
	return err
}

// addAbsent records the workspace path rel as absent (once).
func (c *capturer) addAbsent(rel string) {
	if !slices.Contains(c.m.Absent, rel) {
		c.m.Absent = append(c.m.Absent, rel)
	}
}

// goneWhole says whether nothing at or under the workspace path rel is in
// the manifest: a path removed while captured is recorded as absent only
// then (a walk passes over what goes under a directory it is taking, and
// fails only when the directory itself goes before it is listed).
func (c *capturer) goneWhole(rel string) bool {
	if _, ok := c.m.Files[rel]; ok || slices.Contains(c.m.Dirs, rel) {
		return false
	}
	for p := range c.m.Files {
		if strings.HasPrefix(p, rel+"/") {
			return false
		}
	}
	return true
}

// notStore refuses the path p (at abs) when it is in the store's home,
// reached through a link or not (InStore): captured, its files (the
// index, the event logs) would be put back by a rewind over the live
// store, the events and objects written since lost.
func (c *capturer) notStore(p, abs string) error {
	return c.store.checkEntry(p, abs, "capture")
}

// special: not a regular file, directory or link.
func special(fi fs.FileInfo) bool {
	return !fi.Mode().IsRegular() && !fi.IsDir() && fi.Mode()&fs.ModeSymlink == 0
}

func skippedSpecial(rel string, fi fs.FileInfo) string {
	return fmt.Sprintf("%s: not a regular file (%s)", rel, fileKind(fi.Mode()))
}

// capturePassesOver says whether every capture passes over the workspace
// entry name (at abs; store is the store's real path): a restore's
// temporary file, left by one killed before its rename (rook's partial
// copy, not the user's), and the store itself (a rewind would write its
// old files over the live store). It is all a session capture of a
// directory passes over, and so all the search for files added to such a
// directory since (addedWalker.walk) passes over: one rule for both, so
// that what a rewind removes from it is what the capture would have taken.
func capturePassesOver(name, abs, store string) bool {
	return isRestoreTemp(name) || store != "" && abs == store
}

// walk captures every file under the workspace directory rel. A tree
// capture (tree=true) honours .gitignore and passes over heavy directories
// by name (listed) and the store itself before counting; every capture
// skips a restore's temporary files (.rook-restore-*.tmp); links are
// recorded, never followed, and in a tree capture links leading outside
// the workspace, like names a manifest cannot hold (recordable), are
// skipped and listed. Each directory is opened without following a link,
// and what is in it is looked at and read through it (walkDir): a
// directory or file a tool replaces by a link while the walk goes is
// never listed or read through the link.
func (c *capturer) walk(rel string, tree bool) error {
	abs := c.real
	if rel != "" {
		abs = filepath.Join(c.real, filepath.FromSlash(rel))
	}
	fi, err := os.Lstat(abs)
	if notExist(err) && rel != "" {
		return gone(rel, err)
	}
	if err != nil {
		return fmt.Errorf("capture %s: %w", displayRel(rel), err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("capture %s: not a directory now (changed while captured)", displayRel(rel))
	}
	return c.walkDir(nil, "", rel, fi, tree)
}

// maxOpenDirs bounds the directories a walk holds open at once: below
// that depth each directory stays open while the walk is under it (what
// is in it is looked at and read through it); deeper, one is closed
// while the walk goes into a directory it holds, and opened again after
// (walkedDir.get), so the walk of a tree however deep holds no more
// descriptors than this (and the few it reads with).
const maxOpenDirs = 16

// walkedDir is a directory a walk is in: open (root), or closed while the
// walk is deeper than maxOpenDirs below it.
type walkedDir struct {
	c    *capturer
	root *os.Root // nil: closed
	abs  string
	rel  string
	was  fs.FileInfo // what the Lstat that found it saw
}

// get returns the directory, open: opened again when closed (release),
// by its path, and taken only if it is the directory the walk found (the
// same device and inode; errNowLink otherwise): what is in it is still
// looked at and read through the directory itself, never through a link
// put in its place or above it.
func (d *walkedDir) get() (*os.Root, error) {
	if d.root != nil {
		return d.root, nil
	}
	r, err := openDirIn(nil, "", d.abs, d.rel, d.was)
	if err != nil {
		return nil, err
	}
	d.root = r
	d.c.openDirs++
	return r, nil
}

// release closes the directory, to be opened again when needed.
func (d *walkedDir) release() {
	if d.root != nil {
		d.root.Close()
		d.root = nil
		d.c.openDirs--
	}
}

// walkDir captures the workspace directory rel, the entry name of parent
// (nil: rel's path, from the workspace), which an Lstat found to be was.
func (c *capturer) walkDir(parent *walkedDir, name, rel string, was fs.FileInfo, tree bool) error {
	abs := c.real
	if rel != "" {
		abs = filepath.Join(c.real, filepath.FromSlash(rel))
	}
	if tree && abs == c.store.real {
		return nil
	}
	if captureHook != nil {
		captureHook(captureRead, rel)
	}
	var in *os.Root
	if parent != nil {
		var err error
		if in, err = parent.get(); notExist(err) {
			return gone(rel, err)
		} else if err != nil {
			return err
		}
	}
	root, err := openDirIn(in, name, abs, rel, was)
	if notExist(err) && rel != "" {
		return gone(rel, err)
	}
	if err != nil {
		return fmt.Errorf("capture %s: %w", displayRel(rel), err)
	}
	dir := &walkedDir{c: c, root: root, abs: abs, rel: rel, was: was}
	c.openDirs++
	defer dir.release()
	if parent != nil && c.openDirs > maxOpenDirs {
		// Deep: the parent is opened again once this is walked.
		parent.release()
	}
	ents, err := readDirOf(root)
	if notExist(err) && rel != "" {
		return gone(rel, err)
	}
	if err != nil {
		return fmt.Errorf("capture %s: %w", displayRel(rel), rootErrAt(err, abs))
	}
	if tree && rel != "" && len(ents) == 0 {
		c.leaveOutEmpty(rel, true)
	} else if tree && rel != "" {
		// One whose entries the walk all leaves out (what .gitignore
		// ignores, a .git, the store) is not made by the restore either:
		// listed as an empty one is, unless something under it is
		// listed (the deepest of a chain, as with empty ones).
		files, listed := len(c.m.Files), c.listedOut()
		defer func() {
			if len(c.m.Files) == files && c.listedOut() == listed {
				c.leaveOutEmpty(rel, false)
			}
		}()
	}
	if !tree && rel != "" {
		// Taken whole: what is added under it later is added (diff), and
		// a rewind to before removes it (firstCaptures).
		c.addDirMode(rel, was)
	}
	if tree && rel != "" {
		c.addTreeDirModeOf(rel, was)
	}
	if tree && c.ignore != nil {
		b, note, err := readGitignore(root, abs, path.Join(rel, ".gitignore"))
		if err != nil {
			return err
		}
		if note != "" {
			c.m.Skipped = append(c.m.Skipped, note)
		}
		if b != nil {
			c.ignore.AddFile(rel, b)
		}
		if rel != "" && hasGitEntry(ents) {
			// A nested repository: the .gitignore files above the
			// workspace do not apply inside it.
			c.ignore.addRepo(rel)
			c.nestedRepo(rel)
		}
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	for _, e := range ents {
		child := e.Name()
		if rel != "" {
			child = rel + "/" + e.Name()
		}
		childAbs := filepath.Join(abs, e.Name())
		if capturePassesOver(e.Name(), childAbs, c.store.real) {
			// The store is never captured: a rewind would write its
			// old files over the live store. A session capture says so.
			if !tree && childAbs == c.store.real {
				c.m.Skipped = append(c.m.Skipped, child+": rook's store, never captured")
			}
			continue
		}
		if tree {
			if c.ignore != nil && (c.trackedOnly[rel] || c.ignore.Match(child, e.IsDir())) {
				if !c.isTracked(child, e.IsDir()) {
					continue
				}
				if e.IsDir() {
					c.trackedOnly[child] = true
				}
			}
			// .git whatever it is: a linked worktree's or a submodule's
			// .git file names its git directory, git's, not the project's.
			if e.IsDir() && excludedDirs[e.Name()] || e.Name() == ".git" {
				if passedOverWhy[e.Name()] != "" {
					c.passOver(child, e.Name())
				}
				continue
			}
		}
		if err := recordable(child); err != nil {
			if tree {
				c.m.Skipped = append(c.m.Skipped, err.Error())
				continue
			}
			return err
		}
		if captureHook != nil {
			captureHook(captureListed, child)
		}
		if err := c.walkEntry(dir, e.Name(), child, tree, true); err != nil {
			return err
		}
	}
	return nil
}

// isTracked says whether git tracks rel (a directory: something in it),
// reading its index the first time it is asked. An index that cannot be
// read is said in skipped, once, and tracks nothing.
func (c *capturer) isTracked(rel string, dir bool) bool {
	if c.tracked == nil {
		c.tracked = map[string]*trackedFiles{}
	}
	if c.trackedOnly == nil {
		c.trackedOnly = map[string]bool{}
	}
	// The repository rel is in: the nearest nested one above it, else
	// the workspace's.
	repo := path.Dir(rel)
	for repo != "." && !c.nested[repo] {
		repo = path.Dir(repo)
	}
	if repo == "." {
		repo = ""
	}
	t, read := c.tracked[repo]
	if !read {
		abs := c.real
		if repo != "" {
			abs = filepath.Join(c.real, filepath.FromSlash(repo))
		}
		var err error
		if t, err = readTracked(abs); err != nil {
			c.m.Skipped = append(c.m.Skipped, fmt.Sprintf("git's index: %v; files git tracks that a .gitignore matches are left out", err))
		}
		c.tracked[repo] = t
	}
	if repo != "" {
		rel = rel[len(repo)+1:]
	}
	return t.has(rel, dir)
}

// nestedRepo notes that the workspace directory rel holds a repository of
// its own (a .git): what git tracks in it is read from its own index, and
// the walk takes what is in it as it does the workspace's, though a
// .gitignore outside it ignores it and it was entered as tracked (a
// gitlink).
func (c *capturer) nestedRepo(rel string) {
	if c.nested == nil {
		c.nested = map[string]bool{}
	}
	c.nested[rel] = true
	delete(c.trackedOnly, rel)
}

// readDirOf lists the directory dir, opened by walkDir.
func readDirOf(dir *os.Root) ([]fs.DirEntry, error) {
	f, err := dir.Open(".")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}

// walkEntry captures child, the entry name of the walk's directory dir,
// as what an Lstat (through dir) finds it to be. again: one replaced
// (by a link, or another file) after that Lstat, before it was read, is
// looked at again, once, and taken as what it is then: a link is
// recorded as the link (or, in a tree capture, left out and listed when
// it leads outside the workspace), never read through.
func (c *capturer) walkEntry(d *walkedDir, name, child string, tree, again bool) error {
	dir, err := d.get()
	if notExist(err) {
		return nil // the directory removed since its listing: nothing there
	}
	if errors.Is(err, errNowLink) {
		return fmt.Errorf("capture %s: replaced while captured (a tool at work), never read through a link: run it again once it is done", displayRel(d.rel))
	}
	if err != nil {
		return fmt.Errorf("capture %s: %w", displayRel(d.rel), err)
	}
	fi, err := dir.Lstat(name)
	if notExist(err) {
		return nil // removed since the listing: not there
	}
	if err != nil {
		return fmt.Errorf("capture %s: %w", child, rootErrAt(err, d.abs))
	}
	if abs := filepath.Join(c.real, filepath.FromSlash(child)); tree && restorePathLen(abs, fi.IsDir()) > pathMaxBytes {
		c.leaveOutTooLong(child, len(abs), fi)
		return nil
	}
	switch {
	case fi.IsDir():
		// Removed after its Lstat: not there either, nor is it
		// taken (walkDir fails before it records anything of it).
		err = c.walkDir(d, name, child, fi, tree)
	case fi.Mode()&fs.ModeSymlink != 0:
		// In a directory named to capture, a link is recorded as
		// the link, as a named one is; a whole-tree checkpoint
		// leaves out those leading outside (and lists them).
		if _, err := resolveInRoot(c.root, c.real, child, true); err != nil && tree {
			c.m.Skipped = append(c.m.Skipped, err.Error())
			return nil
		}
		err = c.addIn(dir, name, child, fi)
	case fi.Mode().IsRegular():
		err = c.addIn(dir, name, child, fi)
	default:
		if tree || !c.linksAsIs {
			// Skipped in a named directory too: a pipe in it
			// must not fail the capture of the rest.
			c.m.Skipped = append(c.m.Skipped, skippedSpecial(child, fi))
			return nil
		}
		return &NotRegularError{Path: child, Type: fi.Mode().Type()}
	}
	if errors.Is(err, errNowLink) {
		if again && c.goneWhole(child) {
			return c.walkEntry(d, name, child, tree, false)
		}
		return fmt.Errorf("capture %s: replaced again and again while captured (a tool at work), never read through a link: run it again once it is done", child)
	}
	if err != nil && !errors.Is(err, errGone) {
		return err
	}
	return nil
}

// maxPassedOver bounds how many directories a tree capture lists as passed
// over by name: past it, one line says how many more.
const maxPassedOver = 50

// passOver lists the directory child, named name (in excludedDirs), as
// passed over by name, up to maxPassedOver of them.
func (c *capturer) passOver(child, name string) {
	c.passedOver++
	if c.passedOver <= maxPassedOver {
		c.m.Skipped = append(c.m.Skipped, fmt.Sprintf("%s: passed over by name (%s); give --path %s to capture it", child, passedOverWhy[name], child))
	}
}

// leaveOutEmpty lists the empty directory rel as left out of a tree
// capture, up to maxPassedOver of them. A checkpoint holds files and
// links, and its restore makes only the directories they are in: one with
// nothing in it (a logs/ an app writes into) does not come back, and the
// user is told so rather than finding it missing. Recording it (in
// dir_modes, as the directories with special bits are) would make nearly
// every checkpoint a version 6 manifest, which a rook reading up to
// version 5 refuses.
//
// empty: the directory holds nothing; else all it holds is left out
// without being listed (ignored by a .gitignore, a .git), the usual logs/
// holding only logs/*.log, and it is listed as holding nothing captured.
func (c *capturer) leaveOutEmpty(rel string, empty bool) {
	c.emptyDirs++
	if c.emptyDirs > maxPassedOver {
		return
	}
	what := "an empty directory"
	if !empty {
		what = "a directory holding nothing captured (all it holds is left out: what a .gitignore ignores, a .git, the store, a leftover temporary file of a restore)"
	}
	c.m.Skipped = append(c.m.Skipped, fmt.Sprintf("%s: %s, left out (a checkpoint holds files and links; its restore does not make it)", rel, what))
}

// listedOut counts what the capture has listed as left out so far (those
// past the lists' bounds too): a directory whose walk adds none, and no
// file, left out all it holds without a word.
func (c *capturer) listedOut() int {
	return len(c.m.Skipped) + c.passedOver + c.emptyDirs + c.tooLong
}

// leaveOutTooLong lists the entry rel of a tree capture, which is fi, as
// left out, with all under it, its workspace path being n bytes: longer
// than the system opens by name, or leaving no room under that for the
// temporary file a restore writes it (or a file in it) through
// (restorePathLen). The walk reaches it relative to its parent, but a
// restore (Plan, statDisk) reaches each file by its whole path, and its
// temporary file beside it, and fails "file name too long": the
// checkpoint would hold what no rook command gives back. The first entry
// too deep on each branch is listed, up to maxPassedOver of them.
func (c *capturer) leaveOutTooLong(rel string, n int, fi fs.FileInfo) {
	c.tooLong++
	if c.tooLong > maxPassedOver {
		return
	}
	what, where := "left out", "beside it"
	if fi.IsDir() {
		what, where = "left out with all under it", "in it"
	}
	why := fmt.Sprintf("is longer than the system opens by name (%d)", pathMaxBytes)
	if n <= pathMaxBytes {
		why = fmt.Sprintf("leaves no room for the temporary file a restore writes %s (a name of up to %d bytes) within the longest path the system opens by name (%d)", where, restoreTempMaxLen, pathMaxBytes)
	}
	c.m.Skipped = append(c.m.Skipped, fmt.Sprintf("%s: its path, %d bytes, %s, %s (a restore could not write it)", ShortPath(rel), n, why, what))
}

// passedOverMore adds, after the walk, the lines saying how many
// directories passed over by name, empty ones, and paths too long, were
// not listed.
func (c *capturer) passedOverMore() {
	if n := c.passedOver - maxPassedOver; n > 0 {
		c.m.Skipped = append(c.m.Skipped, fmt.Sprintf("%d more directories passed over by name (%s), not listed", n, excludedNames()))
	}
	if n := c.emptyDirs - maxPassedOver; n > 0 {
		c.m.Skipped = append(c.m.Skipped, fmt.Sprintf("%d more empty directories (or holding nothing captured) left out, not listed", n))
	}
	if n := c.tooLong - maxPassedOver; n > 0 {
		c.m.Skipped = append(c.m.Skipped, fmt.Sprintf("%d more paths longer than the system opens by name (or leaving no room for a restore's temporary file) left out, not listed", n))
	}
}

// addDir records the workspace directory rel as taken whole, with its
// mode: a rewind that makes it again gives it that mode.
func (c *capturer) addDir(rel string) error {
	fi, err := os.Lstat(filepath.Join(c.real, filepath.FromSlash(rel)))
	if notExist(err) {
		return gone(rel, err)
	}
	if err != nil {
		return fmt.Errorf("capture %s: %w", rel, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("capture %s: not a directory now (changed while captured)", rel)
	}
	c.addDirMode(rel, fi)
	return nil
}

// addDirMode is addDir of the directory rel, which is fi.
func (c *capturer) addDirMode(rel string, fi fs.FileInfo) {
	if c.m.DirModes == nil {
		c.m.DirModes = map[string]FileMode{}
	}
	if _, ok := c.m.DirModes[rel]; ok {
		return // taken already, in a directory captured whole
	}
	c.m.Dirs = append(c.m.Dirs, rel)
	c.m.DirModes[rel] = FileMode{Perm: fi.Mode() & dirModeBits, exact: c.exact}
}

// addTreeDirModeOf records, in a tree capture, the mode of the workspace
// directory rel (which is fi) when it has a setuid, setgid or sticky bit
// (a sticky tmp directory, a setgid one whose files take its group): a
// restore that makes it again gives it that mode, where it made it 0755.
// Only those: a checkpoint of a tree without any stays the manifest it
// was (version 1), and its other directories are made as before.
func (c *capturer) addTreeDirModeOf(rel string, fi fs.FileInfo) {
	if !fi.IsDir() || fi.Mode()&specialModeBits == 0 {
		return
	}
	if c.m.DirModes == nil {
		c.m.DirModes = map[string]FileMode{}
	}
	c.m.DirModes[rel] = FileMode{Perm: fi.Mode() & dirModeBits}
}

func displayRel(rel string) string {
	if rel == "" {
		return "the workspace"
	}
	return rel
}

// CapturePaths captures the named paths of the workspace root: files,
// directories (everything in them), links (as links) and paths that do
// not exist (as absent). It stores the file objects, not the manifest.
func (r *Rook) CapturePaths(root string, paths []string, label string, limits Limits) (*Manifest, error) {
	c, err := r.newCapturer(root, limits)
	if err != nil {
		return nil, err
	}
	c.m.Label = label
	c.linkFree, c.m.RealPaths = true, true
	for _, p := range paths {
		if err := c.addPath(p); err != nil {
			return nil, err
		}
	}
	return c.m, nil
}

// CaptureTree captures the whole workspace (or its sub-directory sub),
// honouring .gitignore (those above the workspace in its git repository
// too, gitignoresAbove) and passing over .git, node_modules, target,
// .venv, __pycache__, dist, build (listed in skipped, but .git) and the
// store home.
func (r *Rook) CaptureTree(root, sub, label string, limits Limits) (*Manifest, error) {
	c, err := r.newCapturer(root, limits)
	if err != nil {
		return nil, err
	}
	c.m.Label = label
	// The .gitignore files above the workspace, up to the top of the git
	// repository it is in, apply as git applies them.
	prefix, above, notes := gitignoresAbove(c.real)
	c.ignore = newIgnoreAbove(prefix, above)
	c.m.Skipped = append(c.m.Skipped, notes...)
	rel := ""
	if sub != "" && !c.isWorkspace(sub) {
		rel, err = resolveInRoot(c.root, c.real, sub, true)
		if err != nil {
			return nil, err
		}
		if err := recordable(rel); err != nil {
			return nil, err
		}
		if err := c.notTooLong(sub, rel); err != nil {
			return nil, err
		}
		// Walked through a link named last: followed.
		if err := c.store.check(sub, filepath.Join(c.real, filepath.FromSlash(rel)), "capture"); err != nil {
			return nil, err
		}
		if err := c.throughLink(sub, rel); err != nil {
			return nil, err
		}
		// .gitignore files above sub still apply.
		dir := ""
		for _, part := range strings.Split(rel, "/") {
			at := filepath.Join(c.real, filepath.FromSlash(dir))
			b, note, err := readGitignore(pathDir(at), at, path.Join(dir, ".gitignore"))
			if err != nil {
				return nil, err
			}
			if note != "" {
				c.m.Skipped = append(c.m.Skipped, note)
			}
			if b != nil {
				c.ignore.AddFile(dir, b)
			}
			if dir != "" && holdsGit(filepath.Join(c.real, filepath.FromSlash(dir))) {
				c.ignore.addRepo(dir)
				c.nestedRepo(dir)
			}
			if dir == "" {
				dir = part
			} else {
				dir += "/" + part
			}
		}
		fi, err := os.Lstat(filepath.Join(c.real, filepath.FromSlash(rel)))
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			// A checkpoint of a path not there would be one whose restore
			// removes it: refused, saying what to give instead.
			return nil, fmt.Errorf("--path %s: there is no such file or directory in the workspace %s: nothing saved; name a file or directory in it, or leave --path out to capture the whole workspace", sub, c.m.Root)
		}
		if err != nil {
			return nil, fmt.Errorf("capture %s: %w", sub, err)
		}
		if !fi.IsDir() {
			// Removed since its Lstat, it fails the checkpoint as one
			// not there at its Lstat does (and a directory removed before
			// it is listed): a checkpoint saying it is absent would be
			// one whose restore removes it.
			if err := c.add(rel, fi); errors.Is(err, errGone) {
				return nil, fmt.Errorf("%w: nothing saved; run it again once %s is there", err, sub)
			} else if err != nil {
				return nil, err
			}
			return c.m, nil
		}
	}
	if err := c.walk(rel, true); errors.Is(err, errGone) {
		return nil, fmt.Errorf("%w: nothing saved; run it again once %s is there", err, sub)
	} else if err != nil {
		return nil, err
	}
	c.passedOverMore()
	return c.m, nil
}

// notTooLong refuses the --path sub (workspace path rel) of a tree
// capture whose path is longer than the system opens by name, or leaves
// no room for a restore's temporary file (restorePathLen): a tree capture
// leaves out such an entry met in its walk, and listing all a --path
// names as left out would save a checkpoint of nothing. (Before this, the
// read of the .gitignore files above it failed "file name too long",
// saying to make one readable.)
func (c *capturer) notTooLong(sub, rel string) error {
	abs := filepath.Join(c.real, filepath.FromSlash(rel))
	n := len(abs)
	if n <= pathMaxBytes {
		fi, err := os.Lstat(abs)
		if err != nil || restorePathLen(abs, fi.IsDir()) <= pathMaxBytes {
			return nil // not there: refused as such (CaptureTree)
		}
	}
	why := fmt.Sprintf("longer than the system opens by name (%d)", pathMaxBytes)
	if n <= pathMaxBytes {
		why = fmt.Sprintf("leaving no room for the temporary file a restore writes a file through (a name of up to %d bytes) within the longest path the system opens by name (%d)", restoreTempMaxLen, pathMaxBytes)
	}
	return fmt.Errorf("--path %s: its path in the workspace %s is %d bytes, %s, so a restore could not write it: nothing saved; give --path of a directory above it whose path is at most %d bytes (what is too deep under it is left out, and listed)", ShortPath(sub), c.m.Root, n, why, pathMaxBytes-restoreTempMaxLen-1)
}

// isWorkspace says whether the --path p names the workspace itself: ".",
// "./", its path as the workspace was given or with its links resolved
// ($PWD, with a slash after it or not). That is the whole workspace, as
// no --path is.
func (c *capturer) isWorkspace(p string) bool {
	abs := p
	if !filepath.IsAbs(p) {
		abs = filepath.Join(c.root, p)
	}
	abs = filepath.Clean(abs)
	return abs == c.root || abs == c.real
}

// throughLink refuses the --path sub (workspace path rel) of a tree
// capture when it is a link to a directory, or runs through a link above
// it: a tree capture never follows a link, so the first would record the
// link alone, none of the files it leads to, and the second would record
// the files under the link's name, which the restore refuses to write
// through ("a link now where the capture had a directory"). Named, with
// the directory it leads to, the user captures that instead. A link to a
// file named last is recorded as the link, as one in a walk is.
func (c *capturer) throughLink(sub, rel string) error {
	parts := strings.Split(rel, "/")
	cur := c.real
	for i, part := range parts {
		next := filepath.Join(cur, part)
		fi, err := os.Lstat(next)
		if err != nil {
			return nil // not there: refused as such (CaptureTree)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		last := i == len(parts)-1
		if last {
			if st, err := os.Stat(next); err != nil || !st.IsDir() {
				return nil // to a file (recorded as the link), or to nothing
			}
		}
		to, err := filepath.EvalSymlinks(filepath.Join(c.real, filepath.FromSlash(rel)))
		if err != nil {
			return nil // a dangling link above: not there (CaptureTree)
		}
		leadsTo, err := filepath.Rel(c.real, to)
		if err != nil || !filepath.IsLocal(leadsTo) && leadsTo != "." {
			return nil // outside: resolveInRoot refused it
		}
		give := "give --path " + filepath.ToSlash(leadsTo) + " to capture it"
		if leadsTo == "." {
			give = "leave --path out (or give --path .) to capture the whole workspace"
		}
		link := strings.Join(parts[:i+1], "/")
		target, _ := os.Readlink(next)
		if last {
			return fmt.Errorf("--path %s is a link (to %s) to a directory of the workspace, and a checkpoint records a link as the link, not the files it leads to: nothing saved; %s", sub, target, give)
		}
		return fmt.Errorf("--path %s runs through the link %s (to %s), which a checkpoint does not follow (its restore would refuse to write through it): nothing saved; %s", sub, link, target, give)
	}
	return nil
}

// StoreManifest stores a manifest as a snapshot object.
func (r *Rook) StoreManifest(m *Manifest) (cas.Key, error) {
	res, err := r.Store.Put(cas.KindSnapshot, m.Encode())
	if err != nil {
		return cas.Key{}, err
	}
	return res.ID, nil
}
