package agent

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rookhq/rook/cas"
)

// Named checkpoints are refs: HOME/refs/checkpoints/<name>, a text file of
// lines "<32-hex snapshot id> <unix nanoseconds>", oldest first, written
// whole through the durable-write helper. Re-creating a name adds a line:
// the newest is the checkpoint, the older ones its history (and gc roots).

// RefsDir is where refs live under the store home.
const RefsDir = "refs"

var checkpointName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// CheckpointRef is one named checkpoint.
type CheckpointRef struct {
	Name string  `json:"name"`
	ID   cas.Key `json:"-"`
	// IDHex, Created and Versions are left out (zero) of a checkpoint
	// whose ref file does not parse (rm removes it): not known.
	IDHex    string    `json:"object,omitempty"`
	Created  time.Time `json:"created,omitzero"`
	Versions int       `json:"versions,omitempty"`
	Files    int       `json:"files"`
	Bytes    int64     `json:"bytes"`
	Root     string    `json:"root"`
	// Unreadable: the newest version's snapshot does not read back
	// (damaged, or gone from the store), or the ref file itself does not
	// parse (rm): Files, Bytes and Root are not known, and Error says
	// why.
	Unreadable bool   `json:"unreadable,omitempty"`
	Error      string `json:"error,omitempty"`
	// PreviousRoot (create) is the workspace of the version the name
	// held before, when it is another: names are the store's, shared by
	// every workspace, so the name now restores into this one.
	PreviousRoot string `json:"previous_root,omitempty"`
}

func (r *Rook) checkpointPath(name string) string {
	return filepath.Join(r.home, RefsDir, "checkpoints", name)
}

type refLine struct {
	id cas.Key
	at time.Time
}

func parseRefLines(b []byte) ([]refLine, error) {
	var out []refLine
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("line %d malformed", i+1)
		}
		raw, err := hex.DecodeString(f[0])
		ns, err2 := strconv.ParseInt(f[1], 10, 64)
		var l refLine
		if err != nil || err2 != nil || len(raw) != len(l.id) {
			return nil, fmt.Errorf("line %d malformed", i+1)
		}
		copy(l.id[:], raw)
		l.at = time.Unix(0, ns).UTC()
		out = append(out, l)
	}
	return out, nil
}

// readRef reads the lines of the checkpoint name's ref. A ref file that
// does not read (other than missing: fs.ErrNotExist, as it was) or parse
// is an error that names the file and the way out; so is one that is no
// regular file or is too large, which is not read (readRefFile: a named
// pipe is not waited on, a device not read without end).
func (r *Rook) readRef(name string) ([]refLine, error) {
	b, err := readRefFile(r.fs, r.checkpointPath(name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if rr := (*RefRefusedError)(nil); errors.As(err, &rr) {
		return nil, fmt.Errorf("checkpoint %s: ref file %s %s, not read: put the right ref file back in its place, or `rook checkpoint rm %s` removes the checkpoint", name, rr.Path, rr.Why, name)
	}
	if err == nil {
		var lines []refLine
		if lines, err = parseRefLines(b); err == nil {
			return lines, nil
		}
		err = fmt.Errorf(`%v (each line is "<32-hex snapshot id> <unix nanoseconds>")`, err)
	}
	return nil, fmt.Errorf("checkpoint %s: ref file %s: %v: fix the file, or `rook checkpoint rm %s` removes the checkpoint", name, r.checkpointPath(name), err, name)
}

// CreateCheckpoint captures the workspace root (or its part sub) under a
// name. The snapshot and its files are synced before the ref is written.
func (r *Rook) CreateCheckpoint(name, root, sub string, limits Limits) (CheckpointRef, *Manifest, error) {
	if !checkpointName.MatchString(name) {
		return CheckpointRef{}, nil, badArgument("checkpoint name %q: use letters, digits, '.', '_' and '-' (up to 100, starting with a letter or digit)", name)
	}
	m, err := r.CaptureTree(root, sub, name, limits)
	if err != nil {
		return CheckpointRef{}, nil, err
	}
	id, err := r.StoreManifest(m)
	if err != nil {
		return CheckpointRef{}, nil, err
	}
	if err := r.Store.Sync(); err != nil {
		return CheckpointRef{}, nil, err
	}
	old, err := r.readRef(name)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return CheckpointRef{}, nil, err
	}
	var b bytes.Buffer
	for _, l := range old {
		fmt.Fprintf(&b, "%x %d\n", l.id, l.at.UnixNano())
	}
	now := r.clock.Now().UTC()
	fmt.Fprintf(&b, "%x %d\n", id, now.UnixNano())
	dir := filepath.Dir(r.checkpointPath(name))
	if err := r.fs.MkdirAll(dir, cas.DirMode); err != nil {
		return CheckpointRef{}, nil, err
	}
	if err := r.fs.WriteFileAtomic(r.checkpointPath(name), b.Bytes(), cas.FileMode); err != nil {
		return CheckpointRef{}, nil, fmt.Errorf("write checkpoint ref: %w", err)
	}
	ref := CheckpointRef{Name: name, ID: id, IDHex: hex.EncodeToString(id[:]), Created: now, Versions: len(old) + 1,
		Files: len(m.Files), Bytes: m.TotalBytes, Root: m.Root}
	if len(old) > 0 {
		// The name held a checkpoint of another workspace: said, as its
		// restore now writes here. (One that does not read is not said.)
		if prev, err := r.ReadManifest(old[len(old)-1].id); err == nil && prev.Root != "" && filepath.Clean(prev.Root) != filepath.Clean(m.Root) {
			ref.PreviousRoot = prev.Root
		}
	}
	return ref, m, nil
}

// checkpointRef describes the checkpoint name from its ref's lines: its
// newest version, and what that held (not a failure when the snapshot
// does not read: the ref says Unreadable, ls lists and flags it, and rm
// removes it).
func (r *Rook) checkpointRef(name string, lines []refLine) CheckpointRef {
	last := lines[len(lines)-1]
	ref := CheckpointRef{Name: name, ID: last.id, IDHex: hex.EncodeToString(last.id[:]), Created: last.at, Versions: len(lines)}
	m, err := r.ReadManifest(last.id)
	if err != nil {
		ref.Unreadable, ref.Error = true, err.Error()
		return ref
	}
	ref.Files, ref.Bytes, ref.Root = len(m.Files), m.TotalBytes, m.Root
	return ref
}

// UnreadableRefsError lists the checkpoints a listing left out because
// their ref file does not parse, and the files in refs/checkpoints whose
// name is no checkpoint name (Stray); Errs has one error per file, naming
// it and what to do.
type UnreadableRefsError struct {
	Names []string
	Stray []string
	Dir   string // refs/checkpoints, where the Stray files are
	Errs  []error
}

func (e *UnreadableRefsError) Error() string {
	var msgs []string
	if len(e.Names) > 0 {
		msgs = append(msgs, fmt.Sprintf("%d checkpoint(s) do not read and are not listed (%s): fix the ref file, or `rook checkpoint rm NAME` removes the checkpoint", len(e.Names), strings.Join(e.Names, ", ")))
	}
	if len(e.Stray) > 0 {
		quoted := make([]string, len(e.Stray))
		for i, n := range e.Stray {
			quoted[i] = strconv.Quote(n)
		}
		msgs = append(msgs, fmt.Sprintf("%d file(s) in %s are no checkpoint and are not listed (%s): rename each to a checkpoint name, or remove it", len(e.Stray), e.Dir, strings.Join(quoted, ", ")))
	}
	return strings.Join(msgs, "; ")
}

// strayRef is what ls says of the file name in refs/checkpoints, whose
// name is no checkpoint name: no checkpoint command reads it, but gc
// reads every file under refs/ (walkRefs), keeping what it names, or
// refusing to sweep when it does not parse.
func (r *Rook) strayRef(name string) error {
	p := r.checkpointPath(name)
	const why = "not a checkpoint name (letters, digits, '.', '_' and '-', up to 100, starting with a letter or digit)"
	b, err := readRefFile(r.fs, p)
	if rr := (*RefRefusedError)(nil); errors.As(err, &rr) {
		return fmt.Errorf("ref file %q: %s, and it %s, not read: gc refuses to sweep while it is there: remove it", p, why, rr.Why)
	}
	if err == nil {
		if _, err = parseRefLines(b); err == nil {
			return fmt.Errorf("ref file %q: %s: no checkpoint command lists, restores or removes it, and gc keeps the snapshots it names: rename it to a checkpoint name, or remove the file", p, why)
		}
		err = fmt.Errorf("it does not parse (%v)", err)
	} else {
		err = fmt.Errorf("it does not read (%v)", err)
	}
	return fmt.Errorf("ref file %q: %s, and %v: gc refuses to sweep while it is there: fix it and rename it to a checkpoint name, or remove the file", p, why, err)
}

// Checkpoints lists the named checkpoints, newest first; one whose snapshot
// does not read is listed, Unreadable. A ref file that
// does not parse is left out, not the end of the listing: the others are
// returned with an *UnreadableRefsError naming it (rm is how it is got
// rid of, and the listing is how its name is found). So is a file whose
// name is no checkpoint name (an editor's "#cp#" or "cp~", "a b"), as gc
// reads it all the same; a dot file, the durable-write helper's temporary
// file (which gc passes over, then removes), is passed over.
func (r *Rook) Checkpoints() ([]CheckpointRef, error) {
	dir := filepath.Join(r.home, RefsDir, "checkpoints")
	ents, err := r.fs.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []CheckpointRef
	var bad []error
	var badNames, stray []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			continue // a temp file of the durable-write helper
		}
		if !checkpointName.MatchString(e.Name()) {
			bad = append(bad, r.strayRef(e.Name()))
			stray = append(stray, e.Name())
			continue
		}
		lines, err := r.readRef(e.Name())
		if errors.Is(err, fs.ErrNotExist) {
			// Listed, then removed (`checkpoint rm` in another rook:
			// readers take no lock): gone as asked, not a ref to fix.
			continue
		}
		if err != nil {
			bad = append(bad, err) // it names the file and the way out
			badNames = append(badNames, e.Name())
			continue
		}
		out = append(out, r.checkpointRef(e.Name(), lines))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.After(out[j].Created) })
	if len(bad) > 0 {
		return out, &UnreadableRefsError{Names: badNames, Stray: stray, Dir: dir, Errs: bad}
	}
	return out, nil
}

// RemoveCheckpoints deletes the named checkpoints, each with every version
// it holds (its history), and returns what they were. All names are checked
// first: one that is not a checkpoint removes none. A removal that fails
// part way (an I/O error) returns, with its error, the checkpoints removed
// before it, and the error names them and those left. The snapshots and files
// stay in the store until gc, which no longer keeps them for these refs,
// collects what nothing else reaches. Each removal is made durable (the
// directory synced) before RemoveCheckpoints returns; a crash before leaves
// that ref as it was.
func (r *Rook) RemoveCheckpoints(names []string) ([]CheckpointRef, error) {
	var out []CheckpointRef
	seen := map[string]bool{}
	for _, name := range names {
		if !checkpointName.MatchString(name) {
			return nil, badArgument("checkpoint name %q: use letters, digits, '.', '_' and '-' (up to 100, starting with a letter or digit)", name)
		}
		if seen[name] {
			continue
		}
		seen[name] = true
		lines, err := r.readRef(name)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("no checkpoint named %s (`rook checkpoint ls` lists them): nothing removed", name)
		}
		if err != nil {
			// A ref that does not parse can still go: rm is how it is
			// got rid of.
			if _, serr := r.fs.Stat(r.checkpointPath(name)); serr != nil {
				return nil, err
			}
			out = append(out, CheckpointRef{Name: name, Unreadable: true, Error: err.Error()})
			continue
		}
		out = append(out, r.checkpointRef(name, lines))
	}
	dir := filepath.Join(r.home, RefsDir, "checkpoints")
	for i, ref := range out {
		if err := r.fs.Remove(r.checkpointPath(ref.Name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			err = fmt.Errorf("remove checkpoint %s: %w", ref.Name, err)
			if i == 0 {
				return nil, fmt.Errorf("%w: nothing removed", err)
			}
			// Those before it are gone: said, returned (the caller
			// lists them), and made durable as a whole rm's are.
			removed, left := out[:i], out[i:]
			err = fmt.Errorf("%w: %s removed before it, %s not", err, refNames(removed), refNames(left))
			if serr := r.fs.SyncDir(dir); serr != nil {
				err = fmt.Errorf("%w; and syncing %s failed (%v): a crash may bring back those removed", err, dir, serr)
			}
			return removed, err
		}
	}
	if len(out) > 0 {
		if err := r.fs.SyncDir(dir); err != nil {
			// Removed, not yet durable: a crash may bring them back.
			return out, fmt.Errorf("%s removed, but syncing %s failed: %w: a crash may bring them back", refNames(out), dir, err)
		}
	}
	return out, nil
}

// refNames is the names of refs, comma-separated: "checkpoint a" or
// "checkpoints a, b".
func refNames(refs []CheckpointRef) string {
	names := make([]string, len(refs))
	for i, ref := range refs {
		names[i] = ref.Name
	}
	if len(names) == 1 {
		return "checkpoint " + names[0]
	}
	return "checkpoints " + strings.Join(names, ", ")
}

// ResolveCheckpoint finds a checkpoint by name, or a snapshot by object id
// prefix (a session capture, say).
func (r *Rook) ResolveCheckpoint(arg string) (cas.Key, *Manifest, error) {
	if checkpointName.MatchString(arg) {
		lines, err := r.readRef(arg)
		if err == nil {
			id := lines[len(lines)-1].id
			m, err := r.ReadManifest(id)
			if err != nil {
				return id, nil, fmt.Errorf("checkpoint %s: its snapshot %s does not read (%w)%s; `rook checkpoint rm %s` removes the checkpoint", arg, cas.Short(id), err, verifyHint(err), arg)
			}
			return id, m, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return cas.Key{}, nil, err
		}
	}
	id, err := r.Store.Resolve(arg)
	if err != nil {
		var bp *cas.BadPrefixError
		var nf *cas.NotFoundError
		// Neither a name nor an id (empty, as "$NAME" unset gives, or
		// with a slash): input to fix, as checkpoint rm says of it.
		if errors.As(err, &bp) && !checkpointName.MatchString(arg) {
			return cas.Key{}, nil, badArgument("%q is neither a checkpoint name (letters, digits, '.', '_' and '-', up to 100, starting with a letter or digit) nor a snapshot id (4 to 32 hex characters): `rook checkpoint ls` lists them", arg)
		}
		if errors.As(err, &bp) || errors.As(err, &nf) {
			return cas.Key{}, nil, fmt.Errorf("no checkpoint named %q and no snapshot object with that id: `rook checkpoint ls` lists them", arg)
		}
		return cas.Key{}, nil, err
	}
	info, err := r.Store.StatEntry(id)
	if err != nil {
		return cas.Key{}, nil, err
	}
	if info.Kind != cas.KindSnapshot {
		return cas.Key{}, nil, fmt.Errorf("object %s is a %s, not a checkpoint snapshot", cas.Short(id), info.Kind)
	}
	m, err := r.ReadManifest(id)
	if err != nil {
		return id, nil, fmt.Errorf("snapshot %s does not read (%w)%s", cas.Short(id), err, verifyHint(err))
	}
	return id, m, nil
}

// verifyHint is what to add to err, a read of the store's that failed,
// to say what to do: "`rook store verify` checks the store" when the
// object is damaged or gone; nothing when err says it already (a missing
// dictionary's) or is no store read's.
func verifyHint(err error) string {
	var nd *cas.NeedsDictError
	var ce *cas.CorruptError
	var nf *cas.NotFoundError
	if errors.As(err, &nd) || !(errors.As(err, &ce) || errors.As(err, &nf)) {
		return ""
	}
	return ": `rook store verify` checks the store"
}

// nothingDone is err, which stopped a restore or a rewind before it
// changed anything, saying so (done: "nothing written", "nothing
// changed") and, when it is a read of the store's that failed (a file's
// captured copy, a capture's record, damaged or gone), ending with what
// checks the store: checkpoint restore and session rewind say the same.
func nothingDone(err error, done string) error {
	if h := verifyHint(err); h != "" {
		return fmt.Errorf("%w: %s; %s", err, done, strings.TrimPrefix(h, ": "))
	}
	return fmt.Errorf("%w: %s", err, done)
}

// RestoreReport says what a checkpoint restore did.
type RestoreReport struct {
	Root    string `json:"root"`
	Written int    `json:"files_written"`
	Removed int    `json:"files_removed"`
	// Unchanged counts the files already as the checkpoint holds them,
	// left as they are (not written again).
	Unchanged int `json:"files_unchanged"`
	// DirsMade counts the directories made for the files written, the
	// root too (and those above it) when it was not there (--to);
	// DirsRemoved the empty ones removed (a save's: those its restore
	// had made).
	DirsMade    int `json:"dirs_made"`
	DirsRemoved int `json:"dirs_removed"`
	// DirsKept are the directories the checkpoint holds as absent (a
	// save's, that its restore made) left in place: they hold something
	// the restore does not remove (a file put there since).
	DirsKept []string `json:"dirs_kept,omitempty"`
	// Unknown are the paths the capture holds no state of (Manifest.Unknown:
	// a Claude Code file backup missing when its session was imported),
	// left as they are.
	Unknown []string `json:"unknown,omitempty"`
	// Saved names the checkpoint holding the files the restore touched as
	// they were (and the ones it created, as absent), when it changed
	// anything: restoring it undoes this one.
	Saved string `json:"saved_as,omitempty"`
	// Notes say where it wrote when that is not the captured workspace
	// (a -C taken as where it moved).
	Notes []string `json:"notes,omitempty"`
}

// RestoreOptions are what a user chooses of a checkpoint restore.
type RestoreOptions struct {
	// To is the directory to restore into instead of the captured
	// workspace (--to).
	To string
	// Workspace is the directory the user named with -C, "" without: the
	// captured workspace moved there (workspaceFor, as a rewind takes
	// it), unless it is the workspace, in it, or holds it.
	Workspace string
	// Writing, when not nil, is called just before the first file is
	// written, with the name of the save ("" when the restore overwrites
	// nothing and saves nothing), durable by then: from then on, a stop
	// (an interrupt, which ends rook at once) leaves the files part way,
	// and the save's restore is its undo.
	Writing func(saved string)
}

// RestoreCheckpoint is RestoreCheckpointWith, root the --to directory ("":
// the captured workspace).
func (r *Rook) RestoreCheckpoint(name string, m *Manifest, root string) (RestoreReport, error) {
	return r.RestoreCheckpointWith(name, m, RestoreOptions{To: root})
}

// RestoreCheckpointWith writes a captured tree into its workspace (the
// capture's own root), or where opts says: opts.To, or the directory -C
// names when it is where the workspace moved (opts.Workspace). A
// workspace not on this disk is refused without -C nor --to, nothing
// written: writing there made again the directory the project was moved
// away from. Files that exist and differ are
// first captured as a checkpoint "<name>.before-restore-<unix time>"
// (name shortened to keep it a checkpoint name: freeCheckpointName); a
// file changed since (written after that save, say) is left as it is, and
// the restore stops there.
func (r *Rook) RestoreCheckpointWith(name string, m *Manifest, opts RestoreOptions) (RestoreReport, error) {
	root := opts.To
	var notes []string
	if root == "" && m.Root != "" {
		root = m.Root
		// -C names where a moved workspace is now: the user deciding, as
		// for a rewind.
		moved := false
		if ws, ok := workspaceFor(m.Root, opts.Workspace); ok {
			root, moved = ws, true
			notes = append(notes, fmt.Sprintf("the checkpoint's workspace was %s; -C %s is taken as where it is now", m.Root, ws))
		}
		if err := checkpointWorkspaceOnDisk(name, root, moved); err != nil {
			return RestoreReport{Root: root, Unknown: m.Unknown, Notes: notes}, err
		}
	} else if root == "" {
		root = m.Root
	}
	rep := RestoreReport{Root: root, Unknown: m.Unknown, Notes: notes}
	// A tree capture never follows a link: every directory above its
	// files was one.
	plan, err := r.planRestore(root, manifestChanges(m), func(string) bool { return true }, false)
	if err != nil {
		return rep, nothingDone(err, "nothing written")
	}
	// A directory the restore makes (gone since, or --to) that the
	// capture holds the mode of (a tree capture's with a setuid, setgid
	// or sticky bit; any of a session capture's dirs) is made with it,
	// the owner's read, write and search bits on: the save's undo is a
	// restore too, which opens no directory as a rewind does, and must
	// remove what this one writes there (a 1555 directory made read-only
	// refused it).
	if len(m.DirModes) > 0 {
		plan.dirModes = make(map[string]FileMode, len(m.DirModes))
	}
	for d, mode := range m.DirModes {
		mode.Perm |= 0o700
		plan.dirModes[d] = mode
	}
	// When the restore would overwrite or remove something that differs,
	// save first every path it changes: those files as they are, and the
	// ones it creates as absent, so restoring the save undoes it all. A
	// restore that only creates files (into a fresh directory) loses
	// nothing and saves nothing.
	var touched []string
	changes := false
	// What each path must still be when the restore gets to it: the save
	// holds what it overwrites; a file already as the checkpoint holds it
	// must still be so (it is neither saved nor written).
	expect := &Manifest{Files: map[string]FileEntry{}}
	for _, c := range plan.Changes {
		cur, err := statDisk(plan.real, c.Path)
		if err != nil {
			// A named pipe where a file goes back, say: refused before
			// anything is written, as the plan's own refusals are.
			return rep, fmt.Errorf("%w%s: nothing written", err, notRegularAdvice(err, "restore"))
		}
		ok := cur.Exists
		// A mode, or a file where a link goes back, is overwritten too,
		// even when the bytes are the same.
		differs := ok && (c.Remove || cur.ID != c.File.ID || !c.File.Mode.matches(cur.Mode))
		if c.held && (differs || !ok) {
			// As the checkpoint holds it when planned, its copy not read:
			// changed since, there is nothing to write it with.
			return rep, fmt.Errorf("%w: nothing written", heldChanged(c.Path))
		}
		changes = changes || differs
		if differs || (!ok && !c.Remove) {
			touched = append(touched, c.Path)
		}
		if ok && !differs {
			// As it is on disk: a mode that says no special bits
			// matches one with them (FileMode.matches).
			expect.Files[c.Path] = FileEntry{ID: cur.ID, Size: cur.Size, Mode: cur.Mode}
		}
	}
	plan.saved, plan.savedBy = expect, "the restore checked it"
	var save *Manifest // what the save holds: what its restore puts back
	if changes {
		saveName, err := r.freeCheckpointName(safeName(name), fmt.Sprintf(".before-restore-%d", r.clock.Now().Unix()))
		if err != nil {
			return rep, err
		}
		c, err := r.newCapturer(root, Limits{MaxFiles: len(touched) + 1, MaxBytes: 1 << 40, MaxFileBytes: 1 << 40})
		if err != nil {
			return rep, err
		}
		c.linksAsIs, c.exact = true, true
		c.stats = map[string]savedStat{}
		c.m.Label = saveName
		for _, p := range touched {
			if err := c.addPath(p); err != nil {
				return rep, fmt.Errorf("save %s before restoring: %w%s: nothing written", p, err, notRegularAdvice(err, "restore"))
			}
		}
		// The directories the restore makes, as absent (the first missing
		// one up from each file it writes): restoring the save removes
		// them with those files, instead of leaving them empty.
		for _, p := range touched {
			if d := firstMissingDir(plan.real, p); d != "" {
				if err := c.addPath(d); err != nil {
					return rep, fmt.Errorf("save %s before restoring: %w: nothing written", d, err)
				}
			}
		}
		id, err := r.StoreManifest(c.m)
		if err == nil {
			err = r.Store.Sync()
		}
		if err == nil {
			err = r.writeRef(saveName, id)
		}
		if err != nil {
			return rep, fmt.Errorf("save the files a restore overwrites: %w: nothing written", err)
		}
		rep.Saved, save = saveName, c.m
		// Apply checks each path against the save before it writes or
		// removes it: a file written since would be lost, the save holding
		// only the older copy (Plan.sinceSaved).
		for p, f := range c.m.Files {
			expect.Files[p] = f
		}
		plan.savedStats = c.stats
		plan.savedBy = "the restore saved it in " + saveName
	}
	if opts.Writing != nil {
		opts.Writing(rep.Saved)
	}
	rep.Written, rep.Removed, rep.Unchanged, err = plan.Apply()
	rep.DirsMade, rep.DirsRemoved = plan.madeDirs(), plan.dirsRemoved
	rep.DirsKept = plan.keptDirs()
	if err != nil && rep.Saved != "" && !plan.changedAny(rep.Written, rep.Removed) {
		// Stopped before it changed anything (at its first file, changed
		// since the save: the agent still at work): there is nothing to
		// undo, and restoring the save would put its older copy of that
		// file over the newer one. It is not named, nor kept: every
		// other file it holds is still on disk as it holds it, and a
		// stray before-restore checkpoint would read as one to restore.
		saved := rep.Saved
		rep.Saved = ""
		if rerr := r.removeRef(saved); rerr != nil {
			return rep, fmt.Errorf("%w; its save %s holds nothing to undo, and removing it failed (%v): `rook checkpoint rm %s` removes it", err, saved, rerr, saved)
		}
		return rep, fmt.Errorf("%w; no save is kept: there is nothing to undo", err)
	}
	if err != nil && rep.Saved != "" {
		// Part of the workspace is written: say how to get it back, as a
		// rewind names its undo, and what else that does.
		err = fmt.Errorf("%w; `rook checkpoint restore %s` puts back what was there%s", err, rep.Saved, undoAlso(err, save, "restore", "saves"))
	}
	return rep, err
}

// checkpointWorkspaceOnDisk refuses a restore into root, the workspace
// of checkpoint name (moved: the one -C named), when it is not a
// directory on this disk, saying what to do: a checkpoint restores into
// its workspace, never into a directory it makes again where the project
// was.
func checkpointWorkspaceOnDisk(name, root string, moved bool) error {
	fi, err := os.Stat(root)
	switch {
	case err == nil && fi.IsDir():
		return nil
	case moved && (err == nil || notExist(err)):
		return fmt.Errorf("%s (named with -C) is not a directory on this disk: nothing written; give -C the directory the workspace is in now, or --to DIR to restore into another directory", root)
	case err == nil || notExist(err):
		return fmt.Errorf("checkpoint %s's workspace %s is not on this disk (moved, renamed, deleted, or on another machine): nothing written; put it back where it was, name where it is now with -C (`rook -C DIR checkpoint restore %s`; a DIR holding where it was, its parent say, is not where it moved), or give --to DIR to restore into another directory", name, root, name)
	}
	return err
}

// removeRef removes the ref of the checkpoint name, durably (its
// directory synced).
func (r *Rook) removeRef(name string) error {
	if err := r.fs.Remove(r.checkpointPath(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return r.fs.SyncDir(filepath.Dir(r.checkpointPath(name)))
}

// maxCheckpointName is the longest name a checkpoint may have
// (checkpointName).
const maxCheckpointName = 100

// freeCheckpointName returns base+suffix, or base+suffix-2, -3...,
// whichever is not taken yet, base shortened as needed so that the whole
// stays a checkpoint name (at most 100 characters): a longer one would be
// written, but neither listed nor restorable by its name.
func (r *Rook) freeCheckpointName(base, suffix string) (string, error) {
	for i := 1; i < 1000; i++ {
		tail := suffix
		if i > 1 {
			tail = fmt.Sprintf("%s-%d", suffix, i)
		}
		cand := base
		if len(cand)+len(tail) > maxCheckpointName {
			// base is a checkpoint name, ASCII: cutting it keeps its
			// first character, a letter or digit. A '.', '_' or '-' it
			// would end with goes too, to read as one word before tail.
			cand = strings.TrimRight(cand[:maxCheckpointName-len(tail)], "._-")
		}
		cand += tail
		if !checkpointName.MatchString(cand) {
			return "", fmt.Errorf("no checkpoint name can be made of %q and %q", base, tail)
		}
		if _, err := r.fs.Stat(r.checkpointPath(cand)); errors.Is(err, fs.ErrNotExist) {
			return cand, nil
		}
	}
	return "", fmt.Errorf("no free checkpoint name like %s%s", base, suffix)
}

func safeName(name string) string {
	if checkpointName.MatchString(name) {
		return name
	}
	return "snapshot"
}

func (r *Rook) writeRef(name string, id cas.Key) error {
	dir := filepath.Dir(r.checkpointPath(name))
	if err := r.fs.MkdirAll(dir, cas.DirMode); err != nil {
		return err
	}
	return r.fs.WriteFileAtomic(r.checkpointPath(name), []byte(fmt.Sprintf("%x %d\n", id, r.clock.Now().UnixNano())), cas.FileMode)
}
