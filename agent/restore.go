package agent

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/proc"
	"github.com/rookhq/rook/internal/vfs"
)

// Change is one path a restore writes or removes.
type Change struct {
	Path   string // workspace path, slash-separated
	Remove bool   // the path did not exist in the capture: delete it
	File   FileEntry
	// data is the state's content when it is held in memory (a short
	// edit result, a Codex patch's): any other is the object File.ID,
	// streamed from the store when read (Rook.writeChange).
	data []byte
	// transcript: the state is what an edit result in the session's
	// transcript says the file was (transcript_states.go), read from the
	// line of event body src (workspace ws) when not held in data nor
	// stored as an object of its own. Its mode is the file's on disk.
	transcript bool
	src        cas.Key
	ws         string
	// backup: the state is a Claude Code file backup (a capture labeled
	// captureBackupsLabel): what the file held, read through any link,
	// and not its mode, which Claude Code records nowhere (the mode in the
	// capture is a placeholder; the backups' own say nothing either: 0777
	// on some systems).
	backup bool
	// capture: the event whose capture holds the state (its session, a
	// fork's ancestor's for a late capture it takes: forkLate), which a
	// diff or a rewind names when its copy does not read (backup_unread.go).
	capture eventAt
	// held: the file (or link) at Path held the state already when the
	// plan looked (holdsState), so its copy was not read:
	// Apply leaves it as it is, and, having nothing to write, refuses it
	// if it changed since.
	held bool
	// A rewind writes over a swap a tool made between a file and a
	// directory (planRestore, swap): clearTree, the directory tree now at
	// Path goes first; clearFile, the file (or link) now where a directory
	// above Path must be goes first. What goes is in Plan.saved.
	clearTree bool
	clearFile string
	// Dir: Path is a directory to make (a rewind's: one captured whole
	// that is not a directory now, an empty one say). Nothing is written
	// in it. A directory there already with another mode than the one
	// captured (dirMode: File.Mode holds it) is given that mode (chmod).
	Dir     bool
	dirMode bool
	chmod   bool
}

// contentOnly says whether c's state is a file's content alone, not its
// mode nor whether a link stood at its path: an edit result of the
// transcript, a Claude Code file backup.
func (c Change) contentOnly() bool { return c.transcript || c.backup }

// stateSource names where a contentOnly state comes from, for a message.
func (c Change) stateSource() string {
	if c.backup {
		return "Claude Code's file backup"
	}
	return "the transcript's edit result"
}

// Plan is a checked restore: every path resolved inside the workspace,
// every object read and verified, every directory writable. Apply carries
// it out; building it writes nothing.
type Plan struct {
	Root string
	real string
	// wasDir (nil: none) says the directories the capture had (planRestore):
	// one that is a link when a change is applied is not written through.
	wasDir  func(dir string) bool
	Changes []Change
	// through: Apply went through Changes[:through] (a change it stopped
	// at is not among them).
	through int
	// prune are directories Apply removes last if they are left empty,
	// deepest first (pruneDirs).
	prune []string
	// saved is the capture of the disk taken before Apply (a rewind's, or
	// a restore's save with the files already as restored):
	// a tree a change clears (clearTree) goes only as far as it holds it,
	// and a path written or removed must still be as it holds it.
	saved *Manifest
	// savedStats are the sizes and times of the files saved read, when
	// they had been still a while (capturer.stats): one that still has
	// them is as saved, without being read again.
	savedStats map[string]savedStat
	// savedBy ends the message naming a file changed since saved: "the
	// rewind captured it" when empty.
	savedBy string
	// dirModes are the captured modes of directories Apply may make
	// (manifest version 3); one not in it is made 0755, as before.
	dirModes map[string]FileMode
	// made are the directories Apply made whose captured mode lacks one
	// of the owner's bits (a read-only 0555 one): made with them, so that
	// the files can be written in them, and given their mode as soon as
	// the last change under them is done (finishMade); a chain, top
	// first, as the changes are sorted. Any other directory with a
	// captured mode is made with it, so a crash leaves it so.
	made []string
	// chmods are the directories there already that take their captured
	// mode back, given it last (after the prune, which may need to write
	// in them).
	chmods []string
	// dirsMade counts every directory Apply made (for a file, or itself).
	dirsMade int
	// dirsRemoved counts the (empty) directories Apply removed: a
	// clearTree's, and those pruned.
	dirsRemoved int
	// dirsKept are the directories to prune that were not empty (a file
	// put there since), children first.
	dirsKept []string
	// modesChanged: Apply gave a directory there already a mode (its
	// captured one, or one a rewind's capture recorded); leftOpen: one it
	// opened to write in kept the owner's bits it was given, as giving it
	// back its mode failed once Apply stopped (changedAny).
	modesChanged, leftOpen bool
	// wholeDirs are the directories a rewind prunes where a transcript's
	// or rollout's state says a file was absent and that it empties
	// (they hold only files it removes): its capture before it takes
	// each whole, so that its undo makes it again with what it held.
	wholeDirs []string
	// stateDirs are all the directories a rewind prunes where a
	// transcript's or rollout's state says a file was absent; keptNow
	// those of them, and of the directories between them and the files
	// removed in them, that hold what the rewind does not remove: not
	// captured, their mode neither (the undo, reading one as captured
	// whole, would remove what was put there since).
	stateDirs, keptNow []string
	// asThen are the files Apply found as they were to be, and left
	// unwritten: a rewind says so of a state it did not put back.
	asThen map[string]bool
	// throughLinks are the paths to remove that were passed over, under
	// a link the plan removes, and that the link led to something:
	// that is left (underRemovedLink).
	throughLinks []string
	// rootMade is the top directory Apply made for the root (a restore
	// --to a directory not there: it, or the first one above it not
	// there): "" when the root was there.
	rootMade string
	// rootDirs counts the directories Apply made for the root: rootMade
	// and those under it down to the root (not in dirsMade, which soFar
	// reads as made in the root).
	rootDirs int
	// lifted are the directories there already that a rewind writes or
	// removes in and that only their own mode closes to their owner, the
	// user (a read-only 0555 one, say one a rewind made, which its undo
	// removes): the mode each has, by workspace path ("." the root).
	// Apply adds the owner's bits (u+rwx) before the first change, and
	// gives each at the end the mode the plan says: its captured mode
	// (chmods), or the one it had. A crash in between leaves it u+rwx;
	// the rewind's capture before it records the mode it had (Opened),
	// which its undo gives back (modes).
	lifted map[string]fs.FileMode
	// copyOf writes the content of a change's state to w (Rook.writeChange):
	// the plan verified each copy it writes without keeping it, and Apply
	// reads each again as it writes it, streamed.
	copyOf func(c Change, w io.Writer) error
	// modes are the directories there already (by workspace path, "."
	// the root) that a rewind's capture before it records as opened
	// (Manifest.Opened) and whose mode is another now: each is given the
	// recorded one last, with those taking their captured mode.
	modes map[string]fs.FileMode
}

// giveModes has Apply give the directories in opened (a rewind's capture
// before it: those that rewind opened) the modes it recorded, at the end:
// those still there as directories, the user's, with another mode now
// (the rewind they were opened for crashed, say, leaving them u+rwx).
// With onlyOpen, only those whose mode now is the one recorded with the
// owner's bits added, as Apply opens one: a crash left it so.
func (p *Plan) giveModes(opened map[string]FileMode, onlyOpen bool) error {
	for d, m := range opened {
		abs := p.real
		if d != "." {
			if err := checkRel(d); err != nil {
				return fmt.Errorf("%w: %v", ErrBadManifest, err)
			}
			if _, err := resolveInRoot(p.Root, p.real, d, false); err != nil {
				return err
			}
			abs = filepath.Join(p.real, filepath.FromSlash(d))
		}
		fi, err := os.Lstat(abs)
		if notExist(err) || err == nil && (!fi.IsDir() || !ownDir(fi)) {
			continue
		}
		if err != nil {
			return err
		}
		mode := m.dirPerm(fi.Mode())
		if onlyOpen && fi.Mode()&dirModeBits != mode|0o700 {
			continue
		}
		if fi.Mode()&dirModeBits != mode {
			if p.modes == nil {
				p.modes = map[string]fs.FileMode{}
			}
			p.modes[d] = mode
		}
	}
	return nil
}

// openedNow returns the modes now of the directories whose mode Apply
// changes and that saved, the capture before it, does not hold whole
// (Manifest.Opened): those it opens (lifted), and those it gives a mode
// (modes). The undo gives them back.
func (p *Plan) openedNow(saved *Manifest) (map[string]FileMode, error) {
	out := map[string]FileMode{}
	for _, d := range slices.Concat(slices.Collect(maps.Keys(p.lifted)), slices.Collect(maps.Keys(p.modes))) {
		if slices.Contains(saved.Dirs, d) {
			continue // its mode is in dir_modes
		}
		fi, err := os.Lstat(filepath.Join(p.real, filepath.FromSlash(d)))
		if err != nil {
			return nil, err
		}
		// Its bits, none too: the undo takes off those Apply gives.
		out[d] = FileMode{Perm: fi.Mode() & dirModeBits, exact: true}
	}
	return out, nil
}

// pruneDirs has Apply remove, after every change, those of dirs left
// empty: directories a tool made under a directory captured whole, whose
// files the plan removes. Each is checked as the plan's paths are (inside
// the workspace, through no link); one that is not a directory now is
// left alone.
func (p *Plan) pruneDirs(dirs []string) error {
	for _, d := range dirs {
		if err := checkRel(d); err != nil {
			return fmt.Errorf("%w: %v", ErrBadManifest, err)
		}
		if _, err := resolveInRoot(p.Root, p.real, d, false); err != nil {
			var esc *EscapeError
			if errors.As(err, &esc) && esc.Link != "" && fileAbove(p.real, d) == esc.Link {
				continue // under a link to no directory: not there (inRoot)
			}
			return err
		}
		fi, err := os.Lstat(filepath.Join(p.real, filepath.FromSlash(d)))
		if notExist(err) || err == nil && !fi.IsDir() {
			continue
		}
		if err != nil {
			return err
		}
		p.prune = append(p.prune, d)
		// Removing it writes in its parent: one read-only (that a rewind
		// made, say) is opened too. One that cannot be is not refused:
		// the directory stays, as it does holding a file.
		p.writable(filepath.Dir(filepath.Join(p.real, filepath.FromSlash(d))), true)
	}
	// A directory sorts before what is in it: reversed, children first.
	sort.Sort(sort.Reverse(sort.StringSlice(p.prune)))
	return nil
}

// planRestore checks changes against root before anything is written.
// wasDir says whether a captured directory was a directory then (not a
// link): a link in its place now is refused, never written through.
// swap (a rewind, whose capture of the disk before it holds all it
// replaces): a file to write where a directory is now, or under a file
// that is now where a directory was, replaces it (Change.clearTree,
// clearFile) instead of being refused.
func (r *Rook) planRestore(root string, changes []Change, wasDir func(dir string) bool, swap bool) (*Plan, error) {
	real, err := realRoot(root)
	if err != nil {
		return nil, err
	}
	p := &Plan{Root: filepath.Clean(root), real: real, copyOf: r.writeChange, wasDir: wasDir}
	store := newStoreGuard(r.Store.Home())
	if err := store.check(p.Root, real, "restore into"); err != nil {
		return nil, err
	}
	if link := danglingLink(p.Root); link != "" {
		// (A restore --to a link to a directory not made yet, say; one
		// into the store is refused above, saying so.)
		t, _ := os.Readlink(link)
		to := t
		if end := linkChainEnd(link); end != "" && end != t && end != filepath.Join(filepath.Dir(link), t) {
			to = fmt.Sprintf("%s, a link on to %s", t, end) // where the links end
		}
		return nil, fmt.Errorf("cannot restore into %s: %s is a link to %s, which is not there (a dangling link), so there is no directory to restore into and none can be made there: make the directory it leads to, remove the link, or give --to another directory", p.Root, link, to)
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].Path < changes[j].Path })
	written, removing := map[string]bool{}, map[string]bool{}
	for _, c := range changes {
		if !c.Remove && !c.Dir {
			written[c.Path] = true
		}
		if c.Remove {
			removing[c.Path] = true
		}
	}
	for _, c := range changes {
		if err := checkRel(c.Path); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadManifest, err)
		}
		if c.Remove && underWritten(c.Path, written) {
			// Under a file or link this restore writes there is nothing
			// to remove; through a link just written (one leading
			// outside, say) the removal would reach what it leads to.
			continue
		}
		if c.Remove && underRemovedLink(real, c.Path, removing) {
			// Under a link this restore removes (a path captured
			// absent, or that a rollout or the user says was, made a
			// link since) there is nothing of the path's own: the link
			// goes, and removing through it would reach the files it
			// leads to. Nor is it captured before: the capture holds
			// the link, and a file under it as well would be, to the
			// undo, a file and a directory at once.
			if _, err := os.Lstat(filepath.Join(real, filepath.FromSlash(c.Path))); err == nil {
				p.throughLinks = append(p.throughLinks, c.Path)
			}
			continue
		}
		// A file to write where another needs a directory (a session that
		// captured d/x, then d once a tool had made it a file): Apply would
		// fail part way, so it is refused before anything is written.
		for dir := path.Dir(c.Path); !c.Remove && dir != "."; dir = path.Dir(dir) {
			if written[dir] {
				return nil, fmt.Errorf("cannot restore both %s and %s: the captures hold %s as a file and as a directory (a tool replaced one by the other); put one back by hand, or restore to a point after the change", dir, c.Path, dir)
			}
		}
		// The last element is not followed: a link there is replaced,
		// never written through. Nor is a link above it that leads
		// outside the workspace (inRoot).
		if nothing, err := p.inRoot(c, wasDir, swap); err != nil {
			return nil, err
		} else if nothing {
			continue
		}
		abs := filepath.Join(real, filepath.FromSlash(c.Path))
		// A capture an older rook made of a directory holding the store,
		// a restore --to the store, a link in the workspace leading into
		// it (to a directory it does not have yet, too): writing there
		// would put old copies of its index and logs over the live ones.
		// The last element is not followed (a link there is replaced).
		if err := store.checkEntry(c.Path, abs, "restore"); err != nil {
			return nil, err
		}
		if c.Remove && store.holds(abs) {
			return nil, fmt.Errorf("cannot remove %s: rook's store %s is inside it, and a restore never removes the store; move the store out of the workspace (and point ROOK_HOME at it) to restore this", c.Path, store.home)
		}
		if !c.Remove && !c.Dir && store.holds(abs) {
			// A file or link to write where a directory holding the
			// store is now: a rewind would remove that tree first
			// (clearTree), the store with it, and its save of what it
			// replaces passes over the store.
			return nil, fmt.Errorf("cannot restore %s: a directory there now holds rook's store %s, and a restore never removes the store; move the store out of the workspace (and point ROOK_HOME at it) to restore this", c.Path, store.home)
		}
		if err := linkAbove(real, c, wasDir); err != nil {
			return nil, err
		}
		if c.Dir {
			if !swap {
				return nil, fmt.Errorf("cannot make the directory %s: a restore puts files back", c.Path)
			}
			fi, err := os.Lstat(abs)
			if err == nil && fi.IsDir() {
				if !c.dirMode || fi.Mode()&dirModeBits == c.File.Mode.dirPerm(fi.Mode()) {
					continue // there already: nothing to make
				}
				// There, with another mode (a chmod since): given its
				// captured one last, as a file gets its mode back.
				c.chmod = true
				p.Changes = append(p.Changes, c)
				continue
			}
			// A file or link where it was, or where a directory above it
			// was, goes first (the capture before the plan holds it).
			if c.clearFile = fileAbove(real, c.Path); c.clearFile == "" && err == nil {
				c.clearFile = c.Path
			}
			dir := filepath.Dir(abs)
			if c.clearFile != "" {
				dir = filepath.Dir(filepath.Join(real, filepath.FromSlash(c.clearFile)))
			}
			if err := p.writable(dir, true); err != nil {
				return nil, fmt.Errorf("cannot make the directory %s: %w", c.Path, err)
			}
			p.Changes = append(p.Changes, c)
			continue
		}
		if c.Remove {
			fi, err := os.Lstat(abs)
			if errors.Is(err, syscall.ENOTDIR) {
				// A file is where a directory above it was (one a later
				// Codex patch added where the session had made a
				// directory, say): nothing is under it to remove, and
				// its directory is not one to write in.
				continue
			}
			if err == nil && fi.IsDir() && swap && !c.transcript {
				// A rewind refuses, as it did: what it removes under a
				// path captured absent comes from its capture's diff
				// (capture_dirs.go), not from here.
				return nil, fmt.Errorf("cannot remove %s: a directory is there now (restores put files back, not directory trees)", c.Path)
			} else if err == nil && fi.IsDir() {
				// A directory a restore made for the files it wrote (its
				// save records the first one made as absent, and those
				// files): removed once they are, with the directories
				// between (rmdir, as a rewind prunes: one holding anything
				// else, a file put there since, stays, and is said). So
				// too a path a rewind's transcript or rollout says was
				// absent (a Codex Add File, Delete File, then a file
				// added under it: --absent d --absent d/x.txt), which
				// no capture diff walks: the files the states remove in
				// it go, and it once empty; anything else in it stays
				// (never a recursive remove of what no state names).
				if err := p.writable(filepath.Dir(abs), false); err != nil {
					return nil, fmt.Errorf("cannot remove %s: %w", c.Path, err)
				}
				down := dirsDown(c.Path, removing)
				p.prune = append(p.prune, down...)
				if swap {
					// Taken whole before the rewind only where it will
					// be emptied and removed (the undo makes it again
					// with what it held); one left holding what no
					// state names is not (its undo would write those
					// files back as they were, and remove any added
					// since, which the rewind never touched): only the
					// files removed in it are captured.
					emptied := map[string]bool{}
					emptiedTree(abs, c.Path, removing, emptied)
					p.stateDirs = append(p.stateDirs, c.Path)
					if emptied[c.Path] {
						p.wholeDirs = append(p.wholeDirs, c.Path)
					}
					for _, d := range down {
						if !emptied[d] {
							p.keptNow = append(p.keptNow, d)
						}
					}
				}
				continue
			}
		} else {
			// A file already holding the state is left as it is (Apply):
			// its copy is not needed, and is not read, so one that does
			// not read (damaged, or gone from the store) refuses only a
			// file it would be written to. Every copy to write is still
			// read here, before anything is written.
			// Each is read as a stream and verified (its hash), and
			// not kept: Apply reads it again as it writes it
			// (Plan.copyOf), so a restore's memory is about one file's,
			// not the checkpoint's.
			fi, err := os.Lstat(abs)
			if err == nil && holdsState(real, fi, c) {
				c.held = true
			} else if err := tooLongToWrite(p.Root, real, c, changes, swap); err != nil {
				return nil, err
			} else if err := r.writeChange(c, io.Discard); err != nil {
				return nil, &unreadCopyError{c: c, err: err}
			}
			if err == nil && fi.IsDir() && swap {
				if err := p.clearableTree(abs, c.Path); err != nil {
					return nil, err
				}
				c.clearTree = true
			} else if err == nil && fi.IsDir() {
				return nil, fmt.Errorf("cannot restore %s: a directory is there now (a restore puts files back, not directory trees): move it aside and run this again", c.Path)
			}
			if c.contentOnly() && err == nil && fi.Mode()&fs.ModeSymlink != 0 {
				// The edit wrote through the link (the backup read
				// through it): the state is what the file the link leads
				// to was, not the link. Writing that in the link's place
				// would leave that file as the agent left it, and the
				// link gone.
				return nil, fmt.Errorf("cannot restore %s: a link is there now, and %s says what the file it leads to was, not the link", c.Path, c.stateSource())
			}
			if c.contentOnly() && err == nil && fi.Mode().IsRegular() {
				// The state does not say the mode: an edit keeps it,
				// its setuid, setgid and sticky bits too.
				c.File.Mode = fileMode(fi)
			}
		}
		dir := filepath.Dir(abs)
		if !c.Remove && swap {
			if c.clearFile = fileAbove(real, c.Path); c.clearFile != "" {
				dir = filepath.Dir(filepath.Join(real, filepath.FromSlash(c.clearFile)))
			}
		}
		if err := p.writable(dir, swap); err != nil {
			return nil, fmt.Errorf("cannot restore %s: %w", c.Path, err)
		}
		p.Changes = append(p.Changes, c)
	}
	// A directory sorts before what is in it: reversed, children first.
	sort.Sort(sort.Reverse(sort.StringSlice(p.prune)))
	return p, nil
}

// tooLongToWrite refuses, before anything is written, a restore into
// root (real, its links resolved) of change c, a file or link to write
// (not one there already as it is to be: Change.held), whose path there,
// or that of the temporary file beside it, is longer than the system opens
// by name (restorePathLen): Apply would fail at it with "file name too
// long", part way, the directories made for it left behind. A tree
// capture leaves such a path out, but one restored --to a directory with
// a longer path than its workspace's can pass the limit, as can a
// session's capture (which has no walk to leave it out of). It says how
// long a directory to restore into may be for every file of changes to
// fit; the caller, that nothing was written.
func tooLongToWrite(root, real string, c Change, changes []Change, swap bool) error {
	need := restorePathLen(filepath.Join(real, filepath.FromSlash(c.Path)), false)
	if need <= pathMaxBytes {
		return nil
	}
	longest := need
	for _, o := range changes {
		if !o.Remove && !o.Dir {
			longest = max(longest, restorePathLen(filepath.Join(real, filepath.FromSlash(o.Path)), false))
		}
	}
	fit := len(real) - (longest - pathMaxBytes)
	do := fmt.Sprintf("restore --to a directory whose path is at most %d bytes", fit)
	if fit < 2 { // not even "/x": its path in the workspace alone is too long
		do = "its path in the workspace alone is that long: no directory can hold it"
	} else if swap {
		do = fmt.Sprintf("move the workspace to a directory whose path is at most %d bytes and rewind it there (-C)", fit)
	}
	return fmt.Errorf("cannot restore %s into %s: written there through a temporary file beside it, it needs a path of %d bytes, longer than the system opens by name (%d); %s", ShortPath(c.Path), root, need, pathMaxBytes, do)
}

// danglingLink returns the first path from dir up that is a link leading
// to nothing (dir, or a directory above it, not there through it): a
// restore would make the root's directories there, and mkdir fails on
// the link ("file exists"). "" when there is none: dir is there, or
// what is not there is only missing.
func danglingLink(dir string) string {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			return ""
		}
		if fi, err := os.Lstat(d); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return d
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// linkChainEnd follows the link at p, and each link it leads to, to the
// path where they end (one that is not a link, or not there): the
// directory to make. "" when a link does not read, or after 40 links (a
// loop).
func linkChainEnd(p string) string {
	for hops := 0; hops < 40; hops++ {
		t, err := os.Readlink(p)
		if err != nil {
			return ""
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(p), t)
		}
		if fi, err := os.Lstat(t); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			return t
		}
		p = t
	}
	return ""
}

// holdsState says whether the file (or link) at workspace path c.Path,
// which os.Lstat says is fi, holds change c's state already: the same
// bytes, hashed as the store ids them, and, where the state says one, the
// same kind and mode (Apply's test of a file already as it is to be). The
// size goes first: a file of another size than the state's is not read. A
// directory, a named pipe, or a link where a transcript's edit result or
// a Claude Code file backup says what a file was (the state is of the
// file it leads to) does not hold it; nor a file that cannot be read.
func holdsState(real string, fi fs.FileInfo, c Change) bool {
	switch {
	case fi.Mode().IsRegular():
		if c.File.Mode.Link || fi.Size() != c.File.Size {
			return false
		}
	case fi.Mode()&fs.ModeSymlink != 0:
		// (Its target, read to hash it, is no longer than a path.)
		if c.contentOnly() || !c.File.Mode.Link {
			return false
		}
	default:
		return false
	}
	cur, err := statDisk(real, c.Path)
	if err != nil || !cur.Exists || cur.ID != c.File.ID {
		return false
	}
	// A contentOnly state says no mode: the file keeps its own.
	return c.contentOnly() || c.File.Mode.matches(cur.Mode)
}

// heldChanged is the refusal of a change whose file held its state when
// the plan looked (Change.held), and changed since: its copy was not
// read, so there is nothing to write. The caller says what was written.
func heldChanged(rel string) error {
	return fmt.Errorf("%w since it was found already as it was to be (its captured copy was not read, so there is none to write): it is left as it is", &changedError{rel})
}

// keptDirs are the directories Apply was to remove and left, holding
// something it did not remove: the top ones ("a", not "a" and "a/b").
func (p *Plan) keptDirs() []string {
	var top []string
	for _, d := range slices.Backward(p.dirsKept) { // parents first
		if !slices.ContainsFunc(top, func(k string) bool { return strings.HasPrefix(d, k+"/") }) {
			top = append(top, d)
		}
	}
	return top
}

// emptiedTree records in emptied, of the directory at abs (workspace
// path rel) and each directory in it, whether removing the files in
// removing leaves it empty: it holds nothing else (a link counts as a
// file; one that does not read is not emptied).
func emptiedTree(abs, rel string, removing, emptied map[string]bool) bool {
	ents, err := readDir(abs)
	empty := err == nil
	for _, e := range ents {
		r := rel + "/" + e.Name()
		if e.IsDir() {
			if !emptiedTree(filepath.Join(abs, e.Name()), r, removing, emptied) {
				empty = false
			}
		} else if !removing[r] {
			empty = false
		}
	}
	emptied[rel] = empty
	return empty
}

// dirsDown is the directory rel and those between it and the paths under
// it that a restore removes (removing): the directories it removes once
// those are gone. Only those: another directory in it (one the user made
// since, empty or not) is not the restore's, and keeps rel.
func dirsDown(rel string, removing map[string]bool) []string {
	dirs := map[string]bool{rel: true}
	for r := range removing {
		if !strings.HasPrefix(r, rel+"/") {
			continue
		}
		for d := path.Dir(r); d != rel; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	return slices.Collect(maps.Keys(dirs))
}

// clearableTree checks that the directory tree at abs (workspace path
// top), which a rewind is to replace by a file, can go: every directory in
// it readable and writable, a read-only one of the user's opened as any
// the rewind writes in (Plan.writable). Its files and directories, empty
// ones too, are captured before with their modes (a named pipe there
// refuses the capture): the undo makes them again, read-only ones so, and
// gives those still there after a crash their modes back.
func (p *Plan) clearableTree(abs, top string) error {
	ents, err := readDir(abs)
	if err != nil {
		return fmt.Errorf("cannot restore %s: a directory is there now, and %w", top, err)
	}
	if err := p.writable(abs, true); err != nil {
		return fmt.Errorf("cannot restore %s: a directory is there now, and %w", top, err)
	}
	for _, e := range ents {
		if e.IsDir() {
			if err := p.clearableTree(filepath.Join(abs, e.Name()), top); err != nil {
				return err
			}
		}
	}
	return nil
}

// fileAbove returns the first path above workspace path rel, from the top,
// that is neither a directory nor a link to one: a file (or link) a tool
// put where a directory was. "" when there is none.
func fileAbove(real, rel string) string {
	parts := strings.Split(rel, "/")
	dir := ""
	for _, part := range parts[:len(parts)-1] {
		dir = path.Join(dir, part)
		fi, err := os.Stat(filepath.Join(real, filepath.FromSlash(dir)))
		if err == nil && fi.IsDir() {
			continue
		}
		if _, lerr := os.Lstat(filepath.Join(real, filepath.FromSlash(dir))); lerr == nil {
			return dir // a file, or a link to no directory
		}
		return ""
	}
	return ""
}

// underWritten says whether a parent directory of rel is a path written
// (as a file or link).
func underWritten(rel string, written map[string]bool) bool {
	for dir := path.Dir(rel); dir != "."; dir = path.Dir(dir) {
		if written[dir] {
			return true
		}
	}
	return false
}

// underRemovedLink says whether a directory above workspace path rel is
// a path removed (removing) that is a link now.
func underRemovedLink(real, rel string, removing map[string]bool) bool {
	for dir := path.Dir(rel); dir != "."; dir = path.Dir(dir) {
		if !removing[dir] {
			continue
		}
		if fi, err := os.Lstat(filepath.Join(real, filepath.FromSlash(dir))); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return true
		}
	}
	return false
}

// inRoot checks the path of change c as a restore writes or removes it
// (resolveInRoot, its last element not followed). A link above it that
// leads outside the workspace is never written or removed through; but
// one that reaches no directory there (to nothing, or to a file) has
// nothing under it, as one inside the workspace has not: a rewind (swap)
// replaces it (fileAbove, clearFile: removing it writes nothing outside,
// and the capture before the rewind holds it, so the undo puts it back),
// and a path to remove under it is not there (nothing: the change is
// passed over). A link leading outside to a directory is refused, as a
// link above anything a restore (not a rewind) writes, saying what to do.
func (p *Plan) inRoot(c Change, wasDir func(string) bool, swap bool) (nothing bool, err error) {
	_, err = resolveInRoot(p.Root, p.real, c.Path, false)
	var esc *EscapeError
	if err == nil || !errors.As(err, &esc) || esc.Link == "" {
		return false, err
	}
	if fileAbove(p.real, c.Path) == esc.Link {
		if c.Remove {
			return true, nil
		}
		if swap {
			return false, nil
		}
	}
	verb := "restore"
	if c.Remove {
		verb = "remove"
	}
	t, _ := os.Readlink(filepath.Join(p.real, filepath.FromSlash(esc.Link)))
	had, or := "", "move it out of the way"
	if wasDir(esc.Link) {
		had, or = " where the capture had a directory", "put the directory back"
	}
	return false, fmt.Errorf("cannot %s %s: %s is a link now (to %s)%s, leading outside the workspace %s (to %s), and rook does not write through it; remove the link (or %s) and run this again", verb, c.Path, esc.Link, t, had, esc.Root, esc.LeadsTo, or)
}

// linkAbove refuses a change under a directory the capture had (wasDir)
// that is a link now: writing or removing there would reach the files the
// link leads to (inside the workspace, resolveInRoot allows it), not the
// directory captured, and leave the link in place.
func linkAbove(real string, c Change, wasDir func(string) bool) error {
	dir := linkedDir(real, c.Path, wasDir)
	if dir == "" {
		return nil
	}
	verb := "restore"
	if c.Remove {
		verb = "remove"
	}
	t, _ := os.Readlink(filepath.Join(real, filepath.FromSlash(dir)))
	return fmt.Errorf("cannot %s %s: %s is a link now (to %s) where the capture had a directory, and rook does not write through it; remove the link (or put the directory back) and run this again", verb, c.Path, dir, t)
}

// linkedDir returns the first directory above workspace path rel, from the
// top, that the capture had (wasDir) and that is a link now; "" if there
// is none. A link the capture does not say was a directory (one a named
// path ran through) is followed, as the capture followed it.
func linkedDir(real, rel string, wasDir func(string) bool) string {
	parts := strings.Split(rel, "/")
	dir := ""
	for _, part := range parts[:len(parts)-1] {
		dir = path.Join(dir, part)
		fi, err := os.Lstat(filepath.Join(real, filepath.FromSlash(dir)))
		if err != nil {
			return ""
		}
		if fi.Mode()&fs.ModeSymlink != 0 && wasDir(dir) {
			return dir
		}
	}
	return ""
}

// writable checks, as writableDir, that dir (or its nearest existing
// ancestor) can take new entries. With lift (a rewind, or its undo), one
// the user owns that only its own mode closes (the owner's write or search
// bit off: a read-only 0555 directory) is not refused: Apply opens it for
// the changes (Plan.lifted), as the user could with chmod. One of another
// user is refused, saying so: rook never changes its mode. One on a
// filesystem of the kernel's (/proc) is refused saying that.
func (p *Plan) writable(dir string, lift bool) error {
	err := writableDir(dir)
	var pe *osPathError
	if err == nil || !errors.As(err, &pe) || !errors.Is(err, syscall.EACCES) {
		return err
	}
	fi, serr := os.Stat(pe.path)
	if serr != nil || !fi.IsDir() {
		return err
	}
	if kernelFS(pe.path) {
		// /proc, /sys to a user not root: their modes refuse before the
		// filesystem does (to root, MkdirRefused says it), and no owner
		// can let anyone write there. Not a permission to check.
		return errors.New(kernelRefusal(pe.path, "files or directories", pe.op, pe.path, pe.err) + ": restore into a directory on a disk you can write")
	}
	if !ownDir(fi) {
		return fmt.Errorf("%w (it is not yours: its owner, or root, can let you write in it)", err)
	}
	rel, rerr := filepath.Rel(p.real, pe.path)
	if !lift || fi.Mode().Perm()&0o300 == 0o300 || rerr != nil || !filepath.IsLocal(rel) {
		// Not a rewind; or its owner's bits let it write (something else
		// refuses); or not in the workspace.
		return err
	}
	if p.lifted == nil {
		p.lifted = map[string]fs.FileMode{}
	}
	p.lifted[filepath.ToSlash(rel)] = fi.Mode() & dirModeBits
	return nil
}

// writableDir checks that dir (or, if it does not exist yet, its nearest
// existing ancestor, which Apply will create the rest under) can take new
// entries.
func writableDir(dir string) error {
	for {
		fi, err := os.Stat(dir)
		if err == nil {
			if !fi.IsDir() {
				// A tool replaced the directory by a file: say what to do,
				// as the restore will not remove it.
				return fmt.Errorf("%s is a file now where a directory must be: move it aside and run this again", dir)
			}
			return accessWrite(dir)
		}
		parent := filepath.Dir(dir)
		// ENOTDIR: a file further up is in the way; find it, to name it.
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) || parent == dir {
			return err
		}
		dir = parent
	}
}

// Apply writes the plan: each file through a temporary file and a rename in
// its directory (so a reader never sees half a file), with its mode; links
// recreated; removed paths deleted; a file already as it is to be left
// alone (unchanged). It is not one transaction: an I/O error
// midway leaves the files already written, and says which.
func (p *Plan) Apply() (written, removed, unchanged int, err error) {
	written, removed, unchanged, err = p.apply()
	if err != nil {
		// Nothing more is written in the directories it made: those made
		// with the owner's bits added get their captured modes, deepest
		// first (the undo opens them again to remove them).
		for _, d := range slices.Backward(p.made) {
			chmodDir(filepath.Join(p.real, filepath.FromSlash(d)), p.dirModes[d])
		}
		p.made = nil
		// The directories it opened get the modes they had back: the
		// undo's capture holds them so.
		for _, d := range slices.Backward(topDown(slices.Collect(maps.Keys(p.lifted)))) {
			if chmodLifted(filepath.Join(p.real, filepath.FromSlash(d)), p.lifted[d]) != nil {
				p.leftOpen = true
			}
		}
	}
	return written, removed, unchanged, err
}

func (p *Plan) apply() (written, removed, unchanged int, err error) {
	// Parents first: one the owner may not search hides its children.
	for _, d := range topDown(slices.Collect(maps.Keys(p.lifted))) {
		if d != "." {
			if _, err := resolveInRoot(p.Root, p.real, d, true); err != nil {
				return 0, 0, 0, err
			}
		}
		if err := os.Chmod(filepath.Join(p.real, filepath.FromSlash(d)), p.lifted[d]|0o700); err != nil {
			return 0, 0, 0, fmt.Errorf("open the directory %s to write in it (chmod u+rwx): %w: nothing written", d, err)
		}
	}
	swept := map[string]bool{}
	for i, c := range p.Changes {
		p.through = i
		if err := p.finishMade(p.Changes[i:]); err != nil {
			return written, removed, unchanged, fmt.Errorf("%w%s", err, p.soFar(written, removed))
		}
		if applyHook != nil {
			applyHook(hookBetween, c.Path)
		}
		// Checked again as it is written: a link this restore (or anything
		// since the plan) put in the path must not lead the write outside.
		// A link leading outside that goes first (clearFile: one that
		// reached no directory, planRestore) is checked as the link, and
		// the path again once it is gone.
		if _, err := resolveInRoot(p.Root, p.real, c.Path, false); err != nil {
			var esc *EscapeError
			if c.clearFile == "" || !errors.As(err, &esc) || esc.Link != c.clearFile {
				return written, removed, unchanged, fmt.Errorf("%w%s", err, p.soFar(written, removed))
			}
			if _, err := resolveInRoot(p.Root, p.real, c.clearFile, false); err != nil {
				return written, removed, unchanged, fmt.Errorf("%w%s", err, p.soFar(written, removed))
			}
		}
		abs := filepath.Join(p.real, filepath.FromSlash(c.Path))
		if dir := filepath.Dir(abs); !swept[dir] {
			swept[dir] = true
			sweepRestoreTemps(dir)
		}
		if c.clearFile != "" {
			n, err := p.removeInTheWay(c.clearFile)
			removed += n
			if err != nil {
				return written, removed, unchanged, fmt.Errorf("restore %s: %w%s", c.Path, err, p.soFar(written, removed))
			}
			if _, err := resolveInRoot(p.Root, p.real, c.Path, false); err != nil {
				return written, removed, unchanged, fmt.Errorf("%w%s", err, p.soFar(written, removed))
			}
		}
		// And a link put since the plan where the capture had a directory
		// (inside the workspace, which resolveInRoot allows): never
		// written or removed through.
		if p.wasDir != nil {
			if err := linkAbove(p.real, c, p.wasDir); err != nil {
				return written, removed, unchanged, fmt.Errorf("%w%s", err, p.soFar(written, removed))
			}
		}
		if c.clearTree {
			n, err := p.removeTree(c.Path)
			removed += n
			if err != nil {
				return written, removed, unchanged, fmt.Errorf("restore %s: %w%s", c.Path, err, p.soFar(written, removed))
			}
		}
		if c.chmod {
			p.chmods = append(p.chmods, c.Path)
			continue
		}
		if c.Dir {
			if err := p.makeDirs(c.Path); err != nil {
				return written, removed, unchanged, fmt.Errorf("make the directory %s: %w%s", c.Path, err, p.soFar(written, removed))
			}
			continue
		}
		var cur DiskFile
		var curErr error
		if p.saved != nil {
			// What a rewind or restore overwrites or removes must be
			// what its capture before it holds (the agent may still be at
			// work), or the undo would put back the older copy.
			if cur, curErr = p.sinceSaved(c.Path); curErr != nil {
				return written, removed, unchanged, fmt.Errorf("%w%s", curErr, p.soFar(written, removed))
			}
		}
		if c.Remove {
			// Under a path now a file (one this restore wrote: ENOTDIR),
			// there is nothing to remove either.
			err := os.Remove(abs)
			if err != nil && !notExist(err) {
				return written, removed, unchanged, fmt.Errorf("remove %s: %w%s", c.Path, err, p.soFar(written, removed))
			}
			if err == nil {
				removed++
			}
			continue
		}
		// A file already as it is to be (its bytes and mode) is left as
		// it is: rewriting it would change its mtime (a build tool then
		// rebuilds what depends on it) and break its hard links.
		if p.saved == nil {
			cur, curErr = statDisk(p.real, c.Path)
		}
		if curErr == nil && cur.Exists && cur.ID == c.File.ID && c.File.Mode.matches(cur.Mode) {
			unchanged++
			if p.asThen == nil {
				p.asThen = map[string]bool{}
			}
			p.asThen[c.Path] = true
			continue
		}
		if c.held {
			return written, removed, unchanged, fmt.Errorf("%w, and nothing more written or removed%s", heldChanged(c.Path), p.soFar(written, removed))
		}
		if err := p.makeDirs(path.Dir(c.Path)); err != nil {
			return written, removed, unchanged, fmt.Errorf("restore %s: %w%s", c.Path, err, p.soFar(written, removed))
		}
		// Checked again once the copy is written and synced, just before
		// it is renamed over the file: the write and the sync took time,
		// and the agent may have written the file meanwhile.
		var recheck func() error
		if p.saved != nil {
			recheck = func() error {
				if applyHook != nil {
					applyHook(hookRename, c.Path)
				}
				if p.wasDir != nil {
					if err := linkAbove(p.real, c, p.wasDir); err != nil {
						return err
					}
				}
				_, err := p.sinceSaved(c.Path)
				return err
			}
		}
		copyOf := func(w io.Writer) error {
			if p.copyOf == nil { // a plan not made by planRestore: its data
				_, err := w.Write(c.data)
				return err
			}
			return p.copyOf(c, w)
		}
		if err := writeWorkspaceFile(abs, c.File.Mode, copyOf, recheck); err != nil {
			if errors.Is(err, errChangedSince) {
				return written, removed, unchanged, fmt.Errorf("%w%s", err, p.soFar(written, removed))
			}
			return written, removed, unchanged, fmt.Errorf("restore %s: %w%s", c.Path, err, p.soFar(written, removed))
		}
		written++
	}
	p.through = len(p.Changes)
	if err := p.finishMade(nil); err != nil {
		return written, removed, unchanged, fmt.Errorf("every file was put back, but %w", err)
	}
	for _, d := range p.prune {
		// rmdir, never a recursive remove: a directory holding anything
		// (a file the user put there since) stays, and so does a file.
		abs := filepath.Join(p.real, filepath.FromSlash(d))
		if syscall.Rmdir(abs) == nil {
			p.dirsRemoved++
		} else if fi, err := os.Lstat(abs); err == nil && fi.IsDir() {
			p.dirsKept = append(p.dirsKept, d)
		}
	}
	// Deepest first: a parent's mode may forbid reaching its children.
	// One opened (lifted) and not given its captured mode, nor the one a
	// rewind's capture recorded (modes), gets the one it had (a pruned one
	// is gone).
	dirs := slices.Concat(p.chmods, slices.Collect(maps.Keys(p.lifted)), slices.Collect(maps.Keys(p.modes)))
	for _, d := range slices.Backward(slices.Compact(topDown(dirs))) {
		abs := filepath.Join(p.real, filepath.FromSlash(d))
		if mode, ok := p.modes[d]; ok && !slices.Contains(p.chmods, d) {
			if err := chmodLifted(abs, mode); err != nil {
				return written, removed, unchanged, fmt.Errorf("every file was put back, but giving the directory %s back the mode it had before the rewind failed: %w", d, err)
			}
			p.modesChanged = true
		} else if !slices.Contains(p.chmods, d) {
			if err := chmodLifted(abs, p.lifted[d]); err != nil {
				return written, removed, unchanged, fmt.Errorf("every file was put back, but giving the directory %s back its mode failed: %w", d, err)
			}
		} else if err := chmodDir(abs, p.dirModes[d]); err != nil {
			return written, removed, unchanged, fmt.Errorf("every file was put back, but giving the directory %s its captured mode failed: %w", d, err)
		} else {
			p.modesChanged = true
		}
		delete(p.lifted, d)
	}
	return written, removed, unchanged, nil
}

// topDown sorts workspace directory paths so that each comes after those
// above it: "." (the workspace) first, as a path sorting before it ("-d",
// "+x": '-' and '+' before '.') is under it too; the others sorted, a
// parent before what is in it.
func topDown(dirs []string) []string {
	slices.SortFunc(dirs, func(a, b string) int {
		switch {
		case a == b:
			return 0
		case a == ".":
			return -1
		case b == ".":
			return 1
		}
		return strings.Compare(a, b)
	})
	return dirs
}

// applyHook, when set (by tests), is called by Apply at the points a crash
// may come: hookBetween before each change (rel is the change's path).
var applyHook func(point, rel string)

// hookBetween: before each change; hookRename: a file's copy written and
// synced, before it is checked again and renamed over the file (rel).
const (
	hookBetween = "between"
	hookRename  = "rename"
)

// finishMade gives the directories Apply made with the owner's bits added
// (made) their captured mode, deepest first, once no change is left under
// them: rest are the changes still to come, sorted by path. What is under
// a directory comes together, but not always right after it: "d/ro.txt"
// sorts between "d/ro" and "d/ro/c.txt" ('.' and '-' before '/'), so the
// next change alone does not say that d/ro is done.
func (p *Plan) finishMade(rest []Change) error {
	for len(p.made) > 0 {
		d := p.made[len(p.made)-1]
		i := sort.Search(len(rest), func(i int) bool { return rest[i].Path >= d+"/" })
		if i < len(rest) && strings.HasPrefix(rest[i].Path, d+"/") {
			return nil // more to write in it (those made before it wait)
		}
		if err := chmodDir(filepath.Join(p.real, filepath.FromSlash(d)), p.dirModes[d]); err != nil {
			return fmt.Errorf("giving the directory %s its captured mode failed: %w", d, err)
		}
		p.made = p.made[:len(p.made)-1]
	}
	return nil
}

// makeDirs makes the missing directories of workspace path rel (rel and
// those above it), one at a time from the top: one whose mode a capture
// holds (dirModes) is made with it (and the owner's bits, until
// finishMade, when it lacks one), the others 0755 (less the umask), as
// they always were.
func (p *Plan) makeDirs(rel string) error {
	// The root itself, as before: a restore --to a directory not made.
	top := ""
	if _, err := os.Stat(p.real); notExist(err) && p.rootMade == "" {
		top = p.real
		for d := filepath.Dir(top); d != top; d = filepath.Dir(top) {
			if _, err := os.Lstat(d); !notExist(err) {
				break
			}
			top = d
		}
	}
	if err := os.MkdirAll(p.real, 0o755); err != nil {
		return mkdirError(err)
	}
	if top != "" {
		p.rootMade = top
		for d := p.real; ; d = filepath.Dir(d) {
			p.rootDirs++
			if d == top {
				break
			}
		}
	}
	if rel == "." || rel == "" {
		return nil
	}
	dir := ""
	for _, part := range strings.Split(rel, "/") {
		dir = path.Join(dir, part)
		abs := filepath.Join(p.real, filepath.FromSlash(dir))
		if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
			continue
		}
		perm := fs.FileMode(0o755)
		mode, known := p.dirModes[dir]
		if known {
			// Made with its captured mode, not 0700 given it at the end:
			// a crash part way left it 0700 unless the undo was run. The
			// owner's bits are added while files go in a read-only one.
			perm = mode.Perm.Perm() | 0o700
		}
		if err := os.Mkdir(abs, perm.Perm()); err != nil {
			if fi, serr := os.Stat(abs); errors.Is(err, fs.ErrExist) && serr == nil && fi.IsDir() {
				continue // made meanwhile
			}
			return mkdirError(err)
		}
		p.dirsMade++
		if !known {
			continue
		}
		// Mkdir took the umask off; the captured mode is the mode.
		fi, err := os.Lstat(abs)
		if err != nil {
			return err
		}
		if err := os.Chmod(abs, mode.dirPerm(fi.Mode())|perm); err != nil {
			return err
		}
		if perm != mode.Perm.Perm() {
			p.made = append(p.made, dir)
		}
	}
	return nil
}

// madeDirs is how many directories Apply made: in the root, and for it.
func (p *Plan) madeDirs() int { return p.dirsMade + p.rootDirs }

// changedAny says whether Apply, stopped by an error after writing
// written files and removing removed, had changed anything on disk: a
// file written or removed, a directory made (the root too) or removed, a
// directory given a mode, or one it opened left open. When it had not,
// there is nothing to undo, and the undo of a restore or rewind must not
// be named: its capture before holds an older copy of the file that
// stopped it (changed since: the agent still at work), and running it
// would put that copy over the newer one.
func (p *Plan) changedAny(written, removed int) bool {
	return written+removed > 0 || p.madeDirs() > 0 || p.dirsRemoved > 0 || p.modesChanged || p.leftOpen
}

// undoAlso is what the undo named after an Apply stopped by err also
// does, when err is a file changed since the capture before it (saved:
// sinceSaved) that the capture holds, as a file, as absent, or under a
// directory taken whole: it puts that file back as it was before (by,
// "restore" or "rewind"), over what was written to it since. The newer
// copy is not lost (the undo, a restore or rewind too, keeps, "saves" or
// "captures", what it overwrites first), but a user must know before
// running it. "" for any other error.
func undoAlso(err error, saved *Manifest, by, keeps string) string {
	var ce *changedError
	if !errors.As(err, &ce) || saved == nil {
		return ""
	}
	held := saved.held(ce.rel) || slices.Contains(saved.Absent, ce.rel) ||
		slices.ContainsFunc(saved.Dirs, func(d string) bool { return strings.HasPrefix(ce.rel, d+"/") })
	if !held {
		return ""
	}
	return fmt.Sprintf(", %s too: as it was before this %s, over what was written to it since (that %s %s it first, as it %s whatever it overwrites)", ce.rel, by, by, keeps, keeps)
}

// modesGiven reports whether Apply gave a directory a mode it did not
// have: its captured one (chmods), or the one a rewind's capture recorded
// (modes, planned only where the mode differs).
func (p *Plan) modesGiven() bool { return len(p.chmods) > 0 || len(p.modes) > 0 }

// soFar is what an Apply stopped by an error had done: ": nothing
// written" when nothing (no file, no directory made or removed in the
// root, nor the root made), so that a refusal at the first file reads
// as the plan's own refusals do.
func (p *Plan) soFar(written, removed int) string {
	if written == 0 && removed == 0 && p.dirsMade == 0 && p.dirsRemoved == 0 {
		if p.rootMade != "" {
			return fmt.Sprintf(": nothing written but the directory %s, which it made", p.rootMade)
		}
		return ": nothing written"
	}
	done := fmt.Sprintf("%d file(s) written, %d removed", written, removed)
	if p.dirsMade > 0 {
		// Made for the files to come (a file's write failing in a
		// directory made for it): the undo removes them.
		done += fmt.Sprintf(", %d director(ies) made", p.madeDirs())
		if p.rootMade != "" {
			// A restore --to a directory not there: where to look.
			done += " from " + p.rootMade + " down"
		}
	}
	if p.dirsRemoved > 0 {
		done += fmt.Sprintf(", %d empty director(ies) removed", p.dirsRemoved)
	}
	return " (" + done + " before this)"
}

// chmodLifted gives the directory abs, that Apply opened, the mode it had:
// if it is still a directory (not removed, nor replaced by a link).
func chmodLifted(abs string, mode fs.FileMode) error {
	fi, err := os.Lstat(abs)
	if notExist(err) || err == nil && !fi.IsDir() {
		return nil
	}
	if err != nil {
		return err
	}
	return os.Chmod(abs, mode)
}

// chmodDir gives the directory abs the captured mode m (FileMode.dirPerm).
func chmodDir(abs string, m FileMode) error {
	fi, err := os.Lstat(abs)
	if err != nil {
		return err
	}
	return os.Chmod(abs, m.dirPerm(fi.Mode()))
}

// removeInTheWay removes the file or link at workspace path rel that is
// where a directory the plan writes into must be, if it still is; the
// capture before the plan holds it.
func (p *Plan) removeInTheWay(rel string) (int, error) {
	if !p.saved.held(rel) {
		return 0, fmt.Errorf("%s is in the way, and was not saved before: nothing removed", rel)
	}
	abs := filepath.Join(p.real, filepath.FromSlash(rel))
	if fi, err := os.Lstat(abs); err != nil || fi.IsDir() {
		return 0, nil // gone, or made a directory by an earlier change
	}
	if _, err := p.sinceSaved(rel); err != nil {
		return 0, err
	}
	if err := os.Remove(abs); err != nil {
		return 0, fmt.Errorf("remove %s: %w", rel, err)
	}
	return 1, nil
}

// removeTree removes the directory tree at workspace path rel, which a
// file replaces: the files the capture before the plan holds of it, then
// its directories, deepest first, each only if empty (rmdir). Anything
// added there since that capture stops it, and is left.
func (p *Plan) removeTree(rel string) (int, error) {
	if !p.saved.held(rel) {
		return 0, fmt.Errorf("%s is a directory, and was not saved before: nothing removed", rel)
	}
	n := 0
	for _, f := range slices.Sorted(maps.Keys(p.saved.Files)) {
		if !strings.HasPrefix(f, rel+"/") {
			continue
		}
		if _, err := p.sinceSaved(f); err != nil {
			return n, err
		}
		err := os.Remove(filepath.Join(p.real, filepath.FromSlash(f)))
		if err != nil && !notExist(err) {
			return n, fmt.Errorf("remove %s: %w", f, err)
		}
		if err == nil {
			n++
		}
	}
	var dirs []string
	for _, d := range p.saved.Dirs {
		if d == rel || strings.HasPrefix(d, rel+"/") {
			dirs = append(dirs, d)
		}
	}
	// A directory sorts before what is in it: reversed, children first.
	sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
	for _, d := range dirs {
		err := syscall.Rmdir(filepath.Join(p.real, filepath.FromSlash(d)))
		if err != nil && !notExist(err) {
			return n, fmt.Errorf("remove the directory %s: %w (something was added there since the rewind captured it)", d, err)
		}
		if err == nil {
			p.dirsRemoved++
		}
	}
	return n, nil
}

// sinceSaved checks that the file (or link) at workspace path rel, which a
// rewind (or restore) is about to write over or remove, is still what its capture
// before it holds: written since (the agent still at work, or a hand
// edit), the undo would put back the older bytes and what was written
// would be lost; so it is left as it is, and the rewind stops there. A
// file made since where the capture holds none, or a directory, is
// changed too. Gone is as saved (the undo writes the saved copy back).
// A regular file with the size and times the capture read it with is
// taken as saved without being read again (savedStats: a large file is
// not hashed twice); any other is hashed as a stream. It returns the
// path as it is now, with the saved id when it was not read.
func (p *Plan) sinceSaved(rel string) (DiskFile, error) {
	by := p.savedBy
	if by == "" {
		by = "the rewind captured it"
	}
	changed := fmt.Errorf("%w since %s: it is left as it is, and nothing more written or removed", &changedError{rel}, by)
	fi, err := os.Lstat(filepath.Join(p.real, filepath.FromSlash(rel)))
	if notExist(err) {
		return DiskFile{}, nil
	}
	if err != nil {
		return DiskFile{}, err
	}
	if fi.IsDir() {
		return DiskFile{}, changed
	}
	f, held := p.saved.Files[rel]
	if st, ok := p.savedStats[rel]; ok && held && fi.Mode().IsRegular() && st == statOf(fi) {
		return DiskFile{Exists: true, Mode: f.Mode, Size: f.Size, ID: f.ID}, nil
	}
	cur, err := statDisk(p.real, rel)
	if err != nil {
		return cur, err
	}
	if !held || cur.ID != f.ID || !cur.Mode.same(f.Mode) {
		return cur, changed
	}
	return cur, nil
}

// errChangedSince is what sinceSaved's error is (errors.Is) when the file
// changed since it was saved.
var errChangedSince = errors.New("changed")

// changedError names the file sinceSaved found changed.
type changedError struct{ rel string }

func (e *changedError) Error() string { return e.rel + " changed" }

func (e *changedError) Is(target error) bool { return target == errChangedSince }

// savedStat is what the file system says of a regular file: its size,
// mode and times. A write changes the modification time and the change
// time (which no program can set back); a chmod, the change time.
type savedStat struct {
	size, mtime, ctime int64
	mode               fs.FileMode
}

func statOf(fi fs.FileInfo) savedStat {
	return savedStat{size: fi.Size(), mtime: fi.ModTime().UnixNano(), ctime: vfs.ChangeTime(fi), mode: fi.Mode()}
}

// quiet says whether the file had not changed for statQuiet before at: a
// file written within the same tick of the file system's clock as it was
// read could change again with no change of its times (git's "racy"
// files), and is hashed instead.
func (s savedStat) quiet(at time.Time) bool {
	return at.Sub(time.Unix(0, s.mtime)) >= statQuiet && (s.ctime == 0 || at.Sub(time.Unix(0, s.ctime)) >= statQuiet)
}

// held says whether the manifest holds rel: as a file, or as a directory
// captured whole.
func (m *Manifest) held(rel string) bool {
	if m == nil {
		return false
	}
	_, ok := m.Files[rel]
	return ok || slices.Contains(m.Dirs, rel)
}

// restoreTmpPrefix starts the name of a restore's temporary files:
// .rook-restore-<pid>-<random>.tmp (a link's: .rook-restore-<pid>.tmp).
const restoreTmpPrefix = ".rook-restore-"

// restoreTempName is the name of a restore's temporary file of pid in
// the directory it writes into, the one place it is made: a file's,
// random being the "*" os.CreateTemp puts its random digits in; a link's
// (link) has none.
func restoreTempName(pid int, random string, link bool) string {
	if link {
		return fmt.Sprintf("%s%d.tmp", restoreTmpPrefix, pid)
	}
	return fmt.Sprintf("%s%d-%s.tmp", restoreTmpPrefix, pid, random)
}

// restoreTempMaxLen is the longest a restore's temporary file's name can
// be: a file's, of the largest pid (a pid_t, 32 bits) and the largest
// random part os.CreateTemp puts (a uint32), 39 bytes.
var restoreTempMaxLen = len(restoreTempName(math.MaxInt32, strconv.FormatUint(math.MaxUint32, 10), false))

// restorePathLen is the longest path a restore opens by name to write
// the entry at abs (a workspace path's, in the directory restored into):
// a file or link, its own and that of the temporary file it is written
// through, beside it; a directory (dir), that of a temporary file in it
// (a restore writes nothing in it otherwise). A capture leaves out what
// is longer than pathMaxBytes, and a restore refuses it: the system would
// refuse to open it ("file name too long") part way through the restore.
func restorePathLen(abs string, dir bool) int {
	if dir {
		return len(abs) + 1 + restoreTempMaxLen
	}
	return max(len(abs), len(filepath.Dir(abs))+1+restoreTempMaxLen)
}

// isRestoreTemp says whether a file name is a restore's temporary file:
// captures and the diff's walk pass over one, a partial copy of rook's own
// (left by a restore killed before its rename), not the user's.
func isRestoreTemp(name string) bool {
	return strings.HasPrefix(name, restoreTmpPrefix) && strings.HasSuffix(name, ".tmp")
}

// sweepRestoreTemps removes, from a directory a restore is about to write
// into, the temporary files of restores whose process is gone (killed, or
// the machine crashed, between creating one and renaming it into place):
// nothing else would, and they are partial copies of the user's files.
func sweepRestoreTemps(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		name := e.Name()
		if !isRestoreTemp(name) {
			continue
		}
		pidText, _, _ := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(name, restoreTmpPrefix), ".tmp"), "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || proc.Running(pid) {
			continue
		}
		os.Remove(filepath.Join(dir, name))
	}
}

// writeWorkspaceFile writes the content copyOf writes at abs through a
// temporary file (or link) renamed over it; check, when not nil, runs
// just before the rename, and an error from it leaves abs as it is. A
// file's content is streamed into its temporary file, never held whole.
// The temporary file is made through vfs.MakeInFlight: an interrupt
// (Ctrl-C, SIGTERM) removes it before rook exits, as it does an atomic
// write's, and none is made once it has.
func writeWorkspaceFile(abs string, mode FileMode, copyOf func(w io.Writer) error, check func() error) error {
	dir := filepath.Dir(abs) // made by Plan.makeDirs
	if mode.Link {
		var target bytes.Buffer // a link's target: a path, short
		if err := copyOf(&target); err != nil {
			return err
		}
		tmp := filepath.Join(dir, restoreTempName(os.Getpid(), "", true))
		os.Remove(tmp)
		if _, err := vfs.MakeInFlight(func() (string, error) { return tmp, os.Symlink(target.String(), tmp) }); err != nil {
			return err
		}
		defer vfs.Landed(tmp)
		if check != nil {
			if err := check(); err != nil {
				os.Remove(tmp)
				return err
			}
		}
		if err := os.Rename(tmp, abs); err != nil {
			os.Remove(tmp) // not left in the workspace, as a file's copy is not
			return err
		}
		return nil
	}
	var f *os.File
	tmp, err := vfs.MakeInFlight(func() (string, error) {
		var err error
		if f, err = os.CreateTemp(dir, restoreTempName(os.Getpid(), "*", false)); err != nil {
			return "", err
		}
		return f.Name(), nil
	})
	if err != nil {
		return err
	}
	defer vfs.Landed(tmp)
	err = copyOf(f)
	if err == nil {
		// After the bytes: a write by a process without CAP_FSETID
		// clears the setuid and setgid bits. The file is the restoring
		// user's (no chown), so a setgid bit of a group not theirs is
		// dropped by the kernel.
		err = f.Chmod(mode.Perm & dirModeBits)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && check != nil {
		err = check()
	}
	if err == nil {
		err = os.Rename(tmp, abs)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// CaptureSession records, on a session, the state of the named paths: what
// a tool calls before it writes, moves or deletes them. The manifest becomes
// a snapshot object named by a durable checkpoint event; it returns the
// event's seq.
func (r *Rook) CaptureSession(id eventlog.ID, paths []string, label string, limits Limits) (uint64, *Manifest, error) {
	meta, err := r.Log.ReadMeta(id)
	if err != nil {
		return 0, nil, err
	}
	if meta.Workspace == "" {
		return 0, nil, fmt.Errorf("session %s has no workspace: captures are relative to one", id)
	}
	if len(paths) == 0 {
		return 0, nil, errors.New("name at least one path to capture")
	}
	if err := workspaceOnDisk(meta.Workspace); err != nil {
		return 0, nil, fmt.Errorf("%w: nothing captured; put it back where it was, or start a new session where it is now", err)
	}
	m, err := r.CapturePaths(meta.Workspace, paths, label, limits)
	if le := (*LimitError)(nil); errors.As(err, &le) {
		le.Less = "fewer or narrower paths"
	}
	if err != nil {
		return 0, nil, err
	}
	seq, err := r.Append(id, Entry{Kind: eventlog.KindCheckpoint, Label: label, Body: m.Encode()})
	if err != nil {
		return 0, nil, err
	}
	return seq, m, nil
}

// manifestChanges turns a manifest into a restore: every file written,
// every absent path removed.
func manifestChanges(m *Manifest) []Change {
	var out []Change
	for p, f := range m.Files {
		// (A Claude Code file backup's capture says no mode: contentOnly.)
		out = append(out, Change{Path: p, File: f, backup: m.Label == captureBackupsLabel})
	}
	for _, p := range m.Absent {
		out = append(out, Change{Path: p, Remove: true})
	}
	return out
}
