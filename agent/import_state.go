package agent

import (
	"bytes"
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	json "github.com/go-json-experiment/json/v1"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// An import of a grown file maps only the lines it grew by, but the mapper
// must first be where the lines before left it: which tool each call id
// names, the tokens each message counted, the session's ids and titles, the
// file backups captured. Mapping those lines again to get there cost about
// a third of importing a 45 MB transcript grown by a line. The mapper's
// state after the lines a session holds is therefore kept beside the store,
// in importStateDir, one file per session of a big enough file seen
// growing (imported again with more lines): a cache, used only when it is
// the state after exactly the bytes the session holds (the same size and
// SHA-256, the same path), written without fsync, and passed over, the
// lines mapped again, whenever it is missing, damaged or stale
// (storage.md, Import state).
const importStateDir = "cache/import"

// importStateVersion is the format of an import state file. It changes with
// the state a mapper keeps (TestImportStateFields fails until it is
// saved): a state of another version is passed over.
const importStateVersion = 1

// importStateMin is the smallest file whose import state is kept: mapping
// a smaller one again costs less than a file of its own (a variable for
// tests).
var importStateMin int64 = 1 << 20

// importStateNewMin is the smallest file whose import state is kept when
// it is first imported, before it is seen growing: one read in chunks
// (importChunkBytes), whose lines take seconds to map again (3.4 s for a
// 452 MB transcript), and whose state is a tiny part of its store (83 KB
// for that one). A variable for tests.
var importStateNewMin int64 = importChunkBytes

// importState is the mapper's state after a session's first Size bytes of
// its source file.
type importState struct {
	V       int    `json:"v"`
	Session string `json:"session"`
	Format  string `json:"format"`
	Path    string `json:"path"`    // the mapper takes ids from it
	MinCut  int    `json:"min_cut"` // and strings as long as this are cut
	Size    int64  `json:"size"`
	SHA256  string `json:"sha256"` // of the Size bytes, hex
	Lines   int    `json:"lines"`  // newlines in them
	// Mapper is the lineMapper's own state (saveState).
	Mapper json.RawMessage `json:"mapper"`
	// Backups are the file backups the lines named (backupSet), sorted.
	Backups []string `json:"backups"`
}

func (r *Rook) importStatePath(id eventlog.ID) string {
	return filepath.Join(r.home, importStateDir, id.String())
}

// saveImportState keeps the state of sm after the first size bytes of the
// file, whose SHA-256 is sum and which hold lines newlines. It is a cache:
// a file that cannot be written is left as it is (damaged, it is passed
// over when read; a stale one does not match).
func (r *Rook) saveImportState(id eventlog.ID, format, path string, minCut int, size int64, sum string, lines int, sm *sourceMapper) {
	if size < importStateMin || sm.split {
		return
	}
	mapper, err := sm.reader.mapper.saveState()
	if err != nil {
		return
	}
	// Kept only if it restores to the same state: JSON would make a
	// string that is not UTF-8 (a file name's) another.
	if again := newMapper(format, path); again.loadState(mapper) != nil || !reflect.DeepEqual(again, sm.reader.mapper) {
		return
	}
	// Every backup the lines named, as an import without the state notes
	// from the lines before (mapChunk), not only those captured: a backup
	// not captured (no file-history directory yet, a path outside the
	// workspace) is not captured later by a line either (a backup put
	// there later is taken by takeSideFiles, from the session's events).
	backups := make([]string, 0, len(sm.backupsNamed))
	for k := range sm.backupsNamed {
		backups = append(backups, k)
	}
	slices.Sort(backups)
	body, err := json.Marshal(importState{V: importStateVersion, Session: id.String(), Format: format, Path: path, MinCut: minCut,
		Size: size, SHA256: sum, Lines: lines, Mapper: mapper, Backups: backups})
	if err != nil {
		return
	}
	// One line, as the inbox spool's: the CRC-32C of the JSON, then the
	// JSON. Written in place, without fsync: a torn file fails the check.
	data := fmt.Appendf(nil, "%08x %s\n", crc32.Checksum(body, castagnoli), body)
	dir := filepath.Join(r.home, importStateDir)
	if r.fs.MkdirAll(dir, cas.DirMode) != nil {
		return
	}
	f, err := r.fs.OpenFile(r.importStatePath(id), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, cas.FileMode)
	if err != nil {
		return
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr != nil || cerr != nil {
		r.fs.Remove(r.importStatePath(id))
	}
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// loadImportState is the state kept for session id, if it is the state
// after the first size bytes of the file at path, whose SHA-256 is sum.
func (r *Rook) loadImportState(id eventlog.ID, format, path string, minCut int, size int64, sum string) (importState, bool) {
	if size < importStateMin {
		return importState{}, false
	}
	st, ok := r.readImportState(r.importStatePath(id))
	if !ok || st.Session != id.String() || st.Format != format || st.Path != path ||
		st.MinCut != minCut || st.Size != size || st.SHA256 != sum {
		return st, false
	}
	return st, true
}

// readImportState reads the state at path: ok if its checksum holds, it
// parses, and it is of this version.
func (r *Rook) readImportState(path string) (st importState, ok bool) {
	data, err := vfs.ReadFile(r.fs, path)
	if err != nil {
		return st, false
	}
	crc, body, ok := strings.Cut(strings.TrimSuffix(string(data), "\n"), " ")
	if !ok || len(crc) != 8 || fmt.Sprintf("%08x", crc32.Checksum([]byte(body), castagnoli)) != crc {
		return st, false
	}
	if json.Unmarshal([]byte(body), &st) != nil || st.V != importStateVersion {
		return st, false
	}
	return st, true
}

// removeImportState drops a session's import state (its session is gone).
func (r *Rook) removeImportState(id eventlog.ID) error {
	if err := r.fs.Remove(r.importStatePath(id)); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

// sweepImportStates removes (or, dry, counts) the import states no import
// can use again: a state of no session (one deleted by a rook before
// RemoveSession, or a crash between the two), one that does not parse or
// fails its checksum (torn, and its file no longer growing to overwrite
// it), and one whose transcript is gone or shorter than the bytes the
// state follows (Claude Code deletes old transcripts after a month; a
// rewritten file becomes a new session). Rook keeps the sessions; without
// this, their states would stay for ever. A state is a cache: removing
// one that could have been used costs the next import its speed, no more.
func (r *Rook) sweepImportStates(dryRun bool) (n int, bytes int64, err error) {
	dir := filepath.Join(r.home, importStateDir)
	ents, err := r.fs.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	ids, err := r.Log.IDs()
	if err != nil {
		return 0, 0, err
	}
	sessions := make(map[string]bool, len(ids))
	for _, id := range ids {
		sessions[id.String()] = true
	}
	for _, d := range ents {
		if !d.Type().IsRegular() {
			continue
		}
		path := filepath.Join(dir, d.Name())
		if !sessions[d.Name()] || !r.importStateLive(path) {
			fi, err := d.Info()
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return n, bytes, err
			}
			if !dryRun {
				if err := r.fs.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return n, bytes, fmt.Errorf("remove an import state no import can use: %w", err)
				}
			}
			n++
			bytes += fi.Size()
		}
	}
	return n, bytes, nil
}

// importStateLive says whether the state at path parses and its
// transcript still holds at least the bytes it follows (a .zst one: is
// there). (Whether those are still the same bytes is for the next import
// to check: hashing every transcript would make gc read the whole
// history.)
func (r *Rook) importStateLive(path string) bool {
	st, ok := r.readImportState(path)
	if !ok || st.Session != filepath.Base(path) {
		return false
	}
	fi, err := r.fs.Stat(st.Path)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	// A .zst file's state follows bytes of its decompressed stream, which
	// its size on disk does not bound.
	return strings.HasSuffix(st.Path, ".zst") || fi.Size() >= st.Size
}

// RemoveSession deletes a session (eventlog.Log.Remove) and what rook keeps
// of it beside its log: its import state. It returns its event count.
func (r *Rook) RemoveSession(id eventlog.ID) (uint64, error) {
	rm, err := r.removeSession(id, &forkIndex{r: r})
	return rm.Events, err
}

// RemoveSessionListingChildren is RemoveSession that also lists the
// sessions whose parent id is (its forks, its subagents' sessions), which
// stay, oldest first, as eventlog.Log.Children would: from the read of
// every session's metadata the removal makes for its forks (forkIndex),
// not a second one. (`session rm` read them all twice for a fork or an
// imported session.) What it removed says whether the session's event
// count is known (eventlog.Removed: a damaged session's is not).
func (r *Rook) RemoveSessionListingChildren(id eventlog.ID) (eventlog.Removed, []eventlog.ID, error) {
	forks := &forkIndex{r: r}
	children, err := forks.childrenOf(id)
	if err != nil {
		return eventlog.Removed{}, nil, err
	}
	n, err := r.removeSession(id, forks)
	return n, children, err
}

// RemoveLogWithoutMeta removes the event log of id, which has no .meta
// beside it (eventlog.Log.RemoveLogWithoutMeta: a log with its .meta is
// refused), and the import state kept for it. It returns what the log
// held, and lists the sessions whose parent id was, which stay.
func (r *Rook) RemoveLogWithoutMeta(id eventlog.ID) (eventlog.LeftoverLog, []eventlog.ID, error) {
	kids, err := r.Log.Children(id)
	if err != nil {
		return eventlog.LeftoverLog{}, nil, err
	}
	left, err := r.Log.RemoveLogWithoutMeta(id)
	if err != nil {
		return left, nil, err
	}
	if err := r.removeImportState(id); err != nil {
		return left, nil, fmt.Errorf("the event log %s is removed, but not its import state: %w", left.Path, err)
	}
	children := make([]eventlog.ID, 0, len(kids))
	for _, m := range kids {
		children = append(children, m.ID)
	}
	return left, children, nil
}

// LogsWithoutMetaMatching lists the event logs with no .meta beside them
// (LogsWithoutMeta) whose session id starts with prefix
// (case-insensitive): what an id that names no session may name.
func (r *Rook) LogsWithoutMetaMatching(prefix string) ([]string, error) {
	logs, err := LogsWithoutMeta(r.fs, r.home)
	if err != nil {
		return nil, err
	}
	p := strings.ToUpper(strings.TrimSpace(prefix))
	var out []string
	for _, path := range logs {
		if p != "" && strings.HasPrefix(filepath.Base(path), p) {
			out = append(out, path)
		}
	}
	return out, nil
}

// sessionRemover removes many sessions (retention), reading every
// session's metadata once for all of them, not once per fork removed.
type sessionRemover struct {
	r     *Rook
	forks *forkIndex // kept from one removal to the next
}

func (sr *sessionRemover) remove(id eventlog.ID) (uint64, error) {
	if sr.forks == nil {
		sr.forks = &forkIndex{r: sr.r}
	}
	rm, err := sr.r.removeSession(id, sr.forks)
	return rm.Events, err
}

func (r *Rook) removeSession(id eventlog.ID, forks *forkIndex) (eventlog.Removed, error) {
	if err := r.keepCopiedCounted(id, forks); err != nil {
		return eventlog.Removed{}, fmt.Errorf("session %s is not deleted: the sessions that copied its lines: %w", id, err)
	}
	if err := r.keepForksLinked(id, forks); err != nil {
		return eventlog.Removed{}, fmt.Errorf("session %s is not deleted: its forks: %w", id, err)
	}
	rm, err := r.Log.RemoveCounted(id)
	if err != nil {
		return rm, err
	}
	if err := r.removeImportState(id); err != nil {
		return rm, fmt.Errorf("session %s is deleted, but not its import state: %w", id, err)
	}
	return rm, nil
}

// forkIndex lists, by session, the sessions whose copy of events or
// tokens comes from it: the forks made in rook by the session their copy
// comes from (Meta.ForkedFrom), for keepForksLinked and
// leaveCopiedOutOfForks, and the imported sessions whose totals leave out
// tokens they copied by the session that counts them (copiedFrom), for
// keepCopiedCounted. It is made from one read of every session's metadata,
// at the first question (a removal that needs none reads none), and kept
// by one removal (one `session rm`) or a batch of them (retention): each
// write that gives a session another source adds it under that one (add),
// a removed session's list goes (drop). It holds ids, not metadata: what
// it lists is read again when used, and passed over when it no longer
// says what it was listed for, so that a removal sees what the ones
// before it wrote, never a copy from before.
type forkIndex struct {
	r  *Rook
	by map[eventlog.ID][]eventlog.ID // nil until read
	// children lists the sessions by their Parent, as read: for the one
	// removal that says which stay (RemoveSessionListingChildren); the
	// writes of a removal never change a Parent.
	children map[eventlog.ID][]eventlog.ID
	// unread are the sessions whose metadata does not read: filed
	// nowhere, not known to be anyone's child.
	unread []eventlog.ID
}

// childrenOf lists the sessions whose parent is id, oldest first.
func (x *forkIndex) childrenOf(id eventlog.ID) ([]eventlog.ID, error) {
	if x.by == nil {
		if err := x.read(); err != nil {
			return nil, err
		}
	}
	return x.children[id], nil
}

// of lists the sessions filed under id.
func (x *forkIndex) of(id eventlog.ID) ([]eventlog.ID, error) {
	if x.by == nil {
		if err := x.read(); err != nil {
			return nil, err
		}
	}
	return x.by[id], nil
}

// read makes the index from every session's metadata, read once.
func (x *forkIndex) read() error {
	ids, err := x.r.Log.IDs()
	if err != nil {
		return err
	}
	by, children := map[eventlog.ID][]eventlog.ID{}, map[eventlog.ID][]eventlog.ID{}
	var unread []eventlog.ID
	for _, other := range ids {
		f, err := x.r.Log.ReadMeta(other)
		if err != nil {
			if !errors.Is(err, eventlog.ErrNoSession) {
				unread = append(unread, other)
			}
			continue
		}
		if f.Parent != nil && *f.Parent != f.ID {
			children[*f.Parent] = append(children[*f.Parent], f.ID)
		}
		if p, ok := copiedFrom(f); ok {
			by[p] = append(by[p], f.ID)
		}
		if f.Source != nil {
			continue // an imported fork counts its own copy
		}
		if from, _, ok := f.ForkedFrom(); ok {
			by[from] = append(by[from], f.ID)
		}
	}
	x.by, x.children, x.unread = by, children, unread
	return nil
}

// add files id under from, the source its metadata names now, written
// or about to be. An index not read yet is left so: it will read what
// was written.
func (x *forkIndex) add(from, id eventlog.ID) {
	if x.by != nil {
		x.by[from] = append(x.by[from], id)
	}
}

// drop forgets what is filed under a removed session.
func (x *forkIndex) drop(id eventlog.ID) {
	delete(x.by, id)
}

// copiedFrom is the session that counts the tokens an imported session's
// totals leave out (Meta.Copied): its parent, or once that is removed, the
// session that counts what its parent had copied (Meta.Ancestor). Of a
// fork made in rook, it is the Ancestor without AncestorAt that
// keepForksLinked gave it when the imported session it was forked from
// was removed.
func copiedFrom(m eventlog.Meta) (eventlog.ID, bool) {
	if in, out := m.Copied(); in == 0 && out == 0 {
		return eventlog.ID{}, false
	}
	if m.Source == nil {
		if m.Ancestor != nil && m.AncestorAt == nil {
			return *m.Ancestor, true
		}
		return eventlog.ID{}, false
	}
	if m.Ancestor != nil {
		return *m.Ancestor, true
	}
	if m.Parent != nil {
		return *m.Parent, true
	}
	return eventlog.ID{}, false
}

// keepCopiedCounted has the imported sessions that copied lines of id (a
// Codex fork, a Claude Code continuation), whose totals leave out the
// tokens of those lines because id counts them (Source.CopiedIn), count
// them again before id goes: a session counts what it copied once no
// session it links to counts it, whichever was imported first (of a copy
// of id, itself a fork, all but the share id's own parent counts). The forks
// made in rook of each are written first (leaveCopiedOutOfForks: their
// copy counts what the session counts up to the fork point), then the
// session; id is removed after: a crash in between leaves id there and
// the session still leaving the tokens out, and rm again ends it. (A
// crash between a fork and its session leaves the fork counting the
// tokens already, as it will once id is gone.) forks is the removal's
// index (forkIndex), kept up to date here.
func (r *Rook) keepCopiedCounted(id eventlog.ID, forks *forkIndex) error {
	pm, err := r.Log.ReadMeta(id)
	if err != nil || pm.Source == nil {
		// Damaged (rm is how one gets rid of it), or made in rook: an
		// import links a session to an imported parent only.
		return nil
	}
	// What id copied of its own parent, which that parent counts: a copy
	// of id's lines begins with it (id's copy comes first in its file), so
	// the least of it and what a session copied of id stays left out.
	anc, ok := copiedFrom(pm)
	var keepIn, keepOut uint64
	if ok {
		keepIn, keepOut = pm.Copied()
	}
	candidates, err := forks.of(id)
	if err != nil {
		return err
	}
	for _, other := range candidates {
		m, err := r.Log.ReadMeta(other)
		if from, ok := copiedFrom(m); err != nil || !ok || from != id {
			continue // gone since, or a fork made in rook: keepForksLinked's
		}
		in, out := m.Copied()
		in, out = min(in, keepIn), min(out, keepOut)
		// Its totals unchanged (all it copied of id is id's own copy), it
		// is still written: it leaves that out for anc now, and must be
		// reached when anc goes.
		if cin, cout := m.Copied(); in != cin || out != cout {
			if err := r.leaveCopiedOutOfForks(forks, m.ID, in, out); err != nil {
				return fmt.Errorf("session %s: its forks made in rook: %w", m.ID, err)
			}
		}
		if m.Source != nil {
			src := *m.Source
			src.CopiedIn, src.CopiedOut = in, out
			m.Source = &src
		} else {
			m.CopiedIn, m.CopiedOut = in, out // a fork made in rook of a removed copy of id
		}
		// Parent keeps naming id (an import of id's file again links the
		// session to it anew); the session that counts what is still left
		// out is id's.
		m.Ancestor = nil
		if in != 0 || out != 0 {
			m.Ancestor = &anc
			forks.add(anc, m.ID)
		}
		if err := r.Log.UpdateMeta(m); err != nil {
			return fmt.Errorf("session %s: %w", m.ID, err)
		}
	}
	return nil
}

// keepForksLinked gives the forks made in rook of id, before id goes,
// the session their copy of id's events comes from in turn
// (Meta.Ancestor): id's parent, of which they hold the first events up to
// the lower of the two fork points. They stay orphans (their parent is
// gone), but an import that links an imported ancestor to its parent
// later still reaches them (tagForks) to leave out of their totals the
// tokens it copied. Each fork titled as id gets where its title came from
// (keepTitleOrigin), which is read through id, whatever id is: a fork, a
// fork linked to the session that counts what it copied, or no fork at
// all. Each fork's metadata is written whole before id is removed: a
// crash in between leaves id there and the forks' totals as they were;
// rm again ends it. forks is the removal's index (forkIndex), kept up to
// date here.
func (r *Rook) keepForksLinked(id eventlog.ID, forks *forkIndex) error {
	m, err := r.Log.ReadMeta(id)
	if err != nil {
		return nil // damaged: rm is how one gets rid of it
	}
	anc, at, ok := m.ForkedFrom()
	// An imported id (not a fork by ForkedFrom) whose totals leave out
	// what its parent counts: its forks made in rook leave out their share
	// of that too, and must count it again once that session goes
	// (keepCopiedCounted finds them by the Ancestor, without AncestorAt,
	// given here). Unlinked, they left it out for good.
	counter, counted := copiedFrom(m)
	if counted {
		// (A fork made in rook given one: the imported session its copy
		// came from is removed, and only the session that counts what it
		// leaves out is left to link its forks to.)
		ok = false
	}
	candidates, err := forks.of(id)
	if err != nil {
		return err
	}
	for _, other := range candidates {
		f, err := r.Log.ReadMeta(other)
		if err != nil || f.Source != nil || f.ID == id {
			continue // gone since, or an imported fork: it counts its own copy
		}
		from, fat, fok := f.ForkedFrom()
		if !fok || from != id {
			continue
		}
		titled := r.keepTitleOrigin(&f, m)
		in, out := f.Copied()
		a, linked := anc, true
		switch {
		case ok:
			aat := min(fat, at)
			f.Ancestor, f.AncestorAt = &a, &aat
		case counted && (in != 0 || out != 0):
			a = counter
			f.Ancestor, f.AncestorAt = &a, nil
		default:
			linked = false // it counts all it copied, or id is no fork
		}
		if !linked && !titled {
			continue
		}
		if err := r.Log.UpdateMeta(f); err != nil {
			return fmt.Errorf("fork %s: %w", f.ID, err)
		}
		if linked {
			forks.add(a, f.ID)
		}
	}
	forks.drop(id)
	return nil
}

// keepTitleOrigin records on f, a fork made in rook of m (about to be
// removed) titled as m, where its title came from, which the walk up its
// line (titleOrigin) reads through m and cannot once m is gone: the fork
// point of the session the title was given to (TitleAt: the "@N" a
// rewind added, which a rewind of f replaces), or, that session being no
// fork (m, say, titled "v @3" by the user), that the title has no such
// "@N" (TitleGiven: f's own fork point, 3 too, is not its "@N"). It says
// whether it wrote either. A fork that has one already keeps it: the walk
// stops there. An untitled one gets neither: its title has nothing to
// keep or replace.
func (r *Rook) keepTitleOrigin(f *eventlog.Meta, m eventlog.Meta) bool {
	if f.TitleAt != nil || f.TitleGiven || f.Title != m.Title || f.Title == "" {
		return false
	}
	if _, tat, forked := r.titleOrigin(*f); forked {
		f.TitleAt = &tat
	} else {
		f.TitleGiven = true
	}
	return true
}

// restore puts sm where the lines of st left it: the next lines it maps
// are those after them.
func (sm *sourceMapper) restore(st importState) bool {
	if sm.reader.mapper.loadState(st.Mapper) != nil {
		return false
	}
	for _, k := range st.Backups {
		sm.captured[k], sm.backupsNamed[k] = true, true
	}
	s := sm.reader.mapper.session()
	sm.started, sm.named, sm.copyEnds, sm.restored = true, s.Name, s.CopyEnds, true
	return true
}

func (st *importState) sessionID() eventlog.ID {
	id, _ := eventlog.ParseID(st.Session)
	return id
}

// readTail reads, of a file whose session's mapper state is kept after the
// bytes it held (sourceFile.held), only the bytes after them into p; the
// bytes before are hashed on the way, and must be those. It says whether
// it did: otherwise the file is read whole. A .zst file is decompressed
// from its start (a zstd stream cannot seek), but the bytes before are
// only hashed, not held in memory: a grown one's memory is its tail, and
// one recompressed unchanged holds none (its tail is empty).
func (r *Rook) readTail(format string, f sourceFile, minCut int, p *mappedSource) bool {
	zst := strings.HasSuffix(f.path, ".zst")
	// (A .zst's size on disk says nothing of how long its stream is.)
	if f.heldSum == "" || f.held < importStateMin || (!zst && f.size <= f.held) {
		return false
	}
	st, ok := r.loadImportState(f.heldBy, format, f.path, minCut, f.held, f.heldSum)
	if !ok {
		return false
	}
	file, _, err := r.openSource(f.path)
	if err != nil {
		return false // read whole, which says what is wrong
	}
	defer file.Close()
	h := sha256.New()
	// Through one buffer: the bytes before are not kept.
	if n, err := io.CopyBuffer(h, io.LimitReader(file, f.held), make([]byte, 1<<20)); err != nil || n != f.held {
		return false
	}
	if hex.EncodeToString(h.Sum(nil)) != st.SHA256 {
		return false // not the bytes the session holds: a rewritten file
	}
	hashed, err := h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return false
	}
	var tail bytes.Buffer
	if !zst {
		tail.Grow(int(f.size-f.held) + 512)
	}
	if _, err := tail.ReadFrom(file); err != nil {
		return false
	}
	h.Write(tail.Bytes())
	p.data, p.base, p.state, p.hashed, p.zst = tail.Bytes(), f.held, &st, hashed, zst
	p.prefix, p.full = st.SHA256, hex.EncodeToString(h.Sum(nil))
	return true
}

// readWhole is prepareSource of a file, read whole.
func (r *Rook) readWhole(format string, f sourceFile, minCut, chunk int) *mappedSource {
	f.heldSum = "" // (readTail)
	return r.prepareSource(format, f, false, minCut, chunk)
}

// sumTo is the SHA-256 of the file's first n bytes (n >= base), hex.
func (p *mappedSource) sumTo(n int64) (string, error) {
	h := sha256.New()
	if p.base > 0 {
		if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(p.hashed); err != nil {
			return "", err
		}
	}
	h.Write(p.data[:n-p.base])
	return hex.EncodeToString(h.Sum(nil)), nil
}
