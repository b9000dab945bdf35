// Package inbox is the spool between MCP servers (`rook mcp serve`, one
// per AI client process) and the store: a server appends each save,
// durably, to a spool file of its own in the store home, and replies only
// then; rook drains the spool into the store (agent.DrainInbox) whenever it
// opens the store for writing. The servers never open the store, so they
// save while another rook holds its writer lock, and any number of them
// save at once.
//
// Layout under the store home (docs/storage.md, "Inbox spool"):
//
//	inbox/spool/<process>.jsonl     one file per server process: its saves
//	inbox/activity/<process>.jsonl  one file per live server process: every attempt
//	inbox/activity/past.jsonl       the newest attempts of exited processes, merged
//	inbox/drained.json              how far the drain has taken each spool file
//	inbox/PAUSED                    present while saves are paused
//
// A spool or activity line is "<crc32c of the JSON, 8 hex> <JSON>\n". A
// line that does not end in a newline or whose checksum does not match is
// skipped: as a file's last line, torn by a crash before the save was
// acknowledged; before another save, damaged (ReadSpool reports it, and
// the drain keeps its bytes under torn/).
package inbox

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/internal/vfs"
)

// Dir is the inbox directory under a store home.
func Dir(home string) string { return filepath.Join(home, "inbox") }

func spoolDir(home string) string    { return filepath.Join(Dir(home), "spool") }
func activityDir(home string) string { return filepath.Join(Dir(home), "activity") }
func pausedPath(home string) string  { return filepath.Join(Dir(home), "PAUSED") }
func drainedPath(home string) string { return filepath.Join(Dir(home), "drained.json") }

// Save is one note an AI client saved.
type Save struct {
	V          int       `json:"v"`
	ID         string    `json:"id"` // unique across processes: "<unix ns>-<pid>-<n>"
	Time       time.Time `json:"time"`
	Client     string    `json:"client"`      // the inbox's short name: claude, codex, cursor, gemini, or the client's own
	ClientName string    `json:"client_name"` // clientInfo.name as the client sent it
	Title      string    `json:"title,omitempty"`
	Content    string    `json:"content"`
}

// Activity is one save attempt, successful or not.
type Activity struct {
	Time       time.Time `json:"time"`
	Client     string    `json:"client"`
	ClientName string    `json:"client_name"`
	Chars      int       `json:"chars"`  // characters of content sent
	Status     string    `json:"status"` // saved, rate_limited, paused, input_invalid, inbox_unavailable, store_write_failed
	Detail     string    `json:"detail,omitempty"`
	ID         string    `json:"id,omitempty"` // the save's id, when saved
}

const saveVersion = 1

// ErrNoStore: the store home does not exist (or is not a store): saves have
// nowhere to go. It is the store's own error, so the CLI words it as every
// other command does.
var ErrNoStore = cas.ErrNoStore

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encodeLine frames a record as a spool line.
func encodeLine(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(b)+10)
	out = fmt.Appendf(out, "%08x ", crc32.Checksum(b, castagnoli))
	out = append(out, b...)
	return append(out, '\n'), nil
}

// decodeLine reads one framed line (without its newline) into v.
func decodeLine(line []byte, v any) error {
	if len(line) < 10 || line[8] != ' ' {
		return errors.New("not a spool line")
	}
	want, err := strconv.ParseUint(string(line[:8]), 16, 32)
	if err != nil {
		return errors.New("not a spool line")
	}
	if crc32.Checksum(line[9:], castagnoli) != uint32(want) {
		return errors.New("checksum mismatch")
	}
	return json.Unmarshal(line[9:], v)
}

// Writer appends one server process's saves and attempts.
type Writer struct {
	fs    vfs.FS
	home  string
	name  string // the process's file name
	spool vfs.File
	act   vfs.File
	// lock is held on the spool file for as long as the writer has it
	// open: the drain's sign that the writer is alive (see openSpool). Nil
	// where the filesystem has no locks.
	lock vfs.Lock
	n    int
	// torn: a failed save may have left part of a line that could not be
	// cut off: the next save starts on a line of its own.
	torn bool
}

// NewWriter prepares a writer for this process; files are created on the
// first save. name must be unique among live processes (pid and start
// time).
func NewWriter(fsys vfs.FS, home, name string) *Writer {
	return &Writer{fs: fsys, home: home, name: name + ".jsonl"}
}

// CheckStore says whether the store home is there to save into. A missing
// home, one that is a file or a link to nothing, is said in the store's
// words (cas.MissingStore), as every command says it.
func CheckStore(fsys vfs.FS, home string) error {
	_, err := fsys.Stat(filepath.Join(home, cas.MarkerFile))
	if err == nil {
		return nil
	}
	if merr := cas.MissingStore(fsys, home, err); merr != nil {
		return merr
	}
	return fmt.Errorf("%w: cannot check %s (%v): run `rook init`", ErrNoStore, home, err)
}

func (w *Writer) open(dir string, f *vfs.File) error {
	if *f != nil {
		return nil
	}
	if err := CheckStore(w.fs, w.home); err != nil {
		return err
	}
	if err := w.fs.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	var file vfs.File
	var err error
	if dir == spoolDir(w.home) {
		file, err = w.openSpool()
	} else {
		file, err = w.fs.OpenFile(filepath.Join(dir, w.name), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	}
	if err != nil {
		return err
	}
	// The file's name, and the directories it is in, must survive a crash
	// as its synced lines do: sync each directory up to the inbox's parent.
	for d := dir; ; d = filepath.Dir(d) {
		if err := w.fs.SyncDir(d); err != nil {
			w.closeFile(file)
			return err
		}
		if d == Dir(w.home) {
			break
		}
	}
	if err := w.fs.SyncDir(w.home); err != nil {
		w.closeFile(file)
		return err
	}
	*f = file
	return nil
}

// closeFile closes a file open could not finish opening, and lets go of
// the spool lock with the spool file.
func (w *Writer) closeFile(file vfs.File) {
	file.Close()
	if w.lock != nil && w.spool == nil {
		w.lock.Unlock()
		w.lock = nil
	}
}

// lockedHeader is the first line of a spool file whose writer holds a lock
// on it for its life (docs/storage.md, "Inbox spool"): a drain that can take
// the lock knows the writer is gone, whatever its pid means here. It has
// no id, so drains (older ones too) skip it as they skip a torn save.
type lockedHeader struct {
	V    int    `json:"v"`
	Lock string `json:"lock"`
}

var lockedLine, _ = encodeLine(lockedHeader{V: saveVersion, Lock: "flock"})

// lockTries bounds how often openSpool tries again while a drain holds the
// lock of its new file: a drain holds it only to remove a file it found
// unlocked, between this writer's create and its lock.
var lockTries = 100

// openSpool creates this process's spool file and locks it, for the
// writer's life. A drain tells whether the writer of a spool file is alive
// by trying its lock: the pid in the name is no help for a server in
// another pid namespace (a sandboxed client, a container sharing the home),
// where it names no process here, or another one. The file is created and
// locked in two steps, so a drain can find it between the two, unlocked,
// and remove it (holding the lock, as it always does to remove): the
// writer then holds the lock of a file no longer in the spool, and starts
// again. Once it holds the lock of the file its name leads to, no drain
// removes it. Where the filesystem has no locks (NFS without lockd), the
// file is opened as before, without the header: drains judge it by pid.
func (w *Writer) openSpool() (vfs.File, error) {
	path := filepath.Join(spoolDir(w.home), w.name)
	for try := 0; ; try++ {
		l, err := w.fs.TryLock(path, 0o600)
		if errors.Is(err, vfs.ErrLocked) && try < lockTries {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if err != nil {
			// No locks here, or held by a drain for a second: the pid
			// will have to do. An error opening the file (no file, no
			// permission) is said by the open below.
			return w.fs.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		}
		held, err := l.File().Stat()
		var named fs.FileInfo
		if err == nil {
			named, err = w.fs.Stat(path)
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			l.Unlock()
			return nil, err
		}
		if err != nil || !vfs.SameFile(held, named) {
			l.Unlock()
			if try >= lockTries {
				return nil, fmt.Errorf("%s was removed as soon as created, %d times: is something other than rook cleaning the spool?", path, try+1)
			}
			continue
		}
		file, err := w.fs.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			l.Unlock()
			return nil, err
		}
		if held.Size() == 0 {
			if _, err := file.Write(lockedLine); err != nil {
				// Cut it off, or the next save starts on a line of its own.
				if file.Truncate(0) != nil {
					w.torn = true
				}
				file.Close()
				l.Unlock()
				return nil, err
			}
		}
		w.lock = l
		return file, nil
	}
}

// NextID returns a new save id.
func (w *Writer) NextID(now time.Time) string {
	w.n++
	return fmt.Sprintf("%d-%s-%d", now.UnixNano(), strings.TrimSuffix(w.name, ".jsonl"), w.n)
}

// saveTries bounds how often Save writes a save again because the spool
// file it wrote to was replaced meanwhile (see Save).
const saveTries = 3

// Save appends s to the spool and syncs it: when Save returns nil the
// note survives a crash, and the drain will take it in exactly once.
//
// The save goes to the spool of the store now at the home's path: a
// server runs as long as its client (days), and the store may be made
// again meanwhile (`rm -rf ~/.rook && rook init`, a backup moved into
// place), leaving the file the writer opened unlinked, or in a store
// nobody drains. So the writer checks, before each save and again once it
// is synced, that its file is still the one the spool path leads to
// (isCurrent), and opens the spool at that path again when it is not.
// Only a definite answer counts: no file at the path, or a file with
// another device and inode; a stat that fails otherwise (EIO, ESTALE)
// leaves the save where it is, synced into the file at the path as far
// as anyone can tell. A save synced into a file that lost its name is cut
// off it and written again into the file now at the path, never twice
// into one file (moved aside and back, it is the same file: the save is
// there). A store that is gone refuses the save (ErrNoStore), the save
// cut off the file it was written to; when it cannot be cut off, it will
// come in with that file's drain, and Save says it is saved.
func (w *Writer) Save(s Save) error {
	s.V = saveVersion
	s.ClientName = CutClientName(s.ClientName)
	line, err := encodeLine(s)
	if err != nil {
		return err
	}
	dir := spoolDir(w.home)
	for try := 1; ; try++ {
		if err := w.current(dir, &w.spool); err != nil {
			return err
		}
		held, size, err := w.append(line)
		if err != nil {
			return err
		}
		if !w.lostName(dir, held) {
			return nil
		}
		// Let go of the old file's lock (a lock of the same file, moved
		// aside and back, would keep this writer from taking it again),
		// but keep the file until the save is either in the one at the
		// path or cut off it.
		old := w.spool
		w.spool, w.torn = nil, false
		unlock(w.lock)
		w.lock = nil
		err = w.open(dir, &w.spool)
		if err == nil {
			st, serr := w.spool.Stat()
			if serr == nil && vfs.SameFile(held, st) {
				// The same file, back at its path: the save is in it.
				old.Close()
				return nil
			}
			// Which file it is cannot be told: refuse rather than risk
			// writing the save twice into one file.
			err = serr
		}
		// Not in the file at the path: cut it off the old one, so that
		// it does not come in twice, or at all when refused, should
		// that file come back.
		cut := old.Truncate(size) == nil && old.Sync() == nil
		// Not cut off, it stays in the file written to, which may yet
		// be drained (moved aside, it may come back): the client must
		// not save it again, nor may it go into the file at the path
		// too. Only a file with no name left (removed) is never
		// drained: then the save is refused or written again.
		kept := !cut && !unlinked(old)
		old.Close()
		if kept {
			return nil
		}
		if err != nil {
			return err
		}
		if try == saveTries {
			return fmt.Errorf("%s was replaced while saving, %d times: is something other than rook replacing the store?", filepath.Join(dir, w.name), try)
		}
	}
}

// unlinked says whether f is known to have no name left (removed); not
// when the file system does not say.
func unlinked(f vfs.File) bool {
	st, err := f.Stat()
	return err == nil && vfs.Unlinked(st)
}

// append writes line at the end of the open spool file and syncs it; a
// failed write is cut off again. It returns the file written to and its
// size before the line.
func (w *Writer) append(line []byte) (fs.FileInfo, int64, error) {
	if w.torn {
		line = append([]byte{'\n'}, line...)
	}
	st, err := w.spool.Stat()
	if err != nil {
		return nil, 0, err
	}
	_, err = w.spool.Write(line)
	if err == nil {
		err = w.spool.Sync()
	}
	if err != nil {
		// The client is told the save failed: it must not come in with
		// the drain (a retry would make it twice). Cut it off again.
		if terr := w.spool.Truncate(st.Size()); terr != nil || w.spool.Sync() != nil {
			w.torn = true
		}
		return nil, 0, err
	}
	w.torn = false
	return st, st.Size(), nil
}

// lostName reports whether held, a file this writer has open, is
// definitely no longer the one its name leads to in dir: unlinked, or in a
// store moved away or made again (no file at the path, or one with
// another device and inode). A stat that fails for another reason (EIO,
// ESTALE on an NFS home) is no answer: the file stays.
func (w *Writer) lostName(dir string, held fs.FileInfo) bool {
	named, err := w.fs.Stat(filepath.Join(dir, w.name))
	if err != nil {
		return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
	}
	return !vfs.SameFile(held, named)
}

// isCurrent reports whether f is still, as far as can be told, the file
// this writer's name leads to in dir (see lostName).
func (w *Writer) isCurrent(dir string, f vfs.File) bool {
	held, err := f.Stat()
	return err != nil || !w.lostName(dir, held)
}

// current opens the writer's file in dir (the spool or the activity log),
// first letting go of the one it has open when that is no longer the file
// at its path (isCurrent). No drain removes a spool file whose writer runs
// (it holds the file's lock; where locks fail, its pid), so a file gone
// from its path means the store was made again or moved: what is written
// to it, no rook reads. Opening again checks the store is there
// (CheckStore), creates the file in it, and, for the spool, takes its
// lock.
func (w *Writer) current(dir string, f *vfs.File) error {
	if *f != nil && !w.isCurrent(dir, *f) {
		(*f).Close()
		*f = nil
		if f == &w.spool {
			// The lock was the old file's, and a torn line in it is no
			// concern of the new one's.
			unlock(w.lock)
			w.lock, w.torn = nil, false
		}
	}
	return w.open(dir, f)
}

// Log appends an attempt to the activity log (not synced: the log is a
// record for the user, not a promise).
func (w *Writer) Log(a Activity) error {
	a.ClientName = CutClientName(a.ClientName)
	line, err := encodeLine(a)
	if err != nil {
		return err
	}
	if w.act == nil || !w.isCurrent(activityDir(w.home), w.act) {
		// The spool file's lock says whether this process runs, for its
		// activity file too (MergeActivity): take it first, even before
		// any save. Best effort: without it the pid decides, as before.
		_ = w.current(spoolDir(w.home), &w.spool)
	}
	if err := w.current(activityDir(w.home), &w.act); err != nil {
		return err
	}
	_, err = w.act.Write(line)
	return err
}

// Close closes the writer's files.
func (w *Writer) Close() error {
	var err error
	for _, f := range []vfs.File{w.spool, w.act} {
		if f != nil {
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
	}
	// Last: the drain may remove the spool file once the lock is free.
	if w.lock != nil {
		if uerr := w.lock.Unlock(); err == nil {
			err = uerr
		}
		w.lock = nil
	}
	return err
}

// Paused reports whether saves are paused.
func Paused(fsys vfs.FS, home string) bool {
	_, err := fsys.Stat(pausedPath(home))
	return err == nil
}

// SetPaused pauses or resumes saves.
func SetPaused(fsys vfs.FS, home string, paused bool) error {
	if err := CheckStore(fsys, home); err != nil {
		return err
	}
	if !paused {
		err := fsys.Remove(pausedPath(home))
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if err := fsys.MkdirAll(Dir(home), 0o700); err != nil {
		return err
	}
	return fsys.WriteFileAtomic(pausedPath(home), []byte("paused: `rook inbox resume` resumes saves\n"), 0o600)
}

// Pending is a save in the spool the drain has not taken in. As ReadSpool
// lists it, its Save has no content or title and its client name is cut
// (CutClientName): a backlog is listed without holding it; SaveReader
// reads each save back whole, one at a time.
type Pending struct {
	File  string // spool file name
	Start int64  // offset of its line
	End   int64  // offset just past its line
	Save  Save
}

// Progress is how far the drain has taken each spool file.
type Progress map[string]int64

// ProgressKnown reports whether a progress file exists: when it does, the
// only saves that can be in the store already are those of a drain cut short
// after its flush, the last ones of their inboxes.
func ProgressKnown(fsys vfs.FS, home string) bool {
	_, err := fsys.Stat(drainedPath(home))
	return err == nil
}

// ReadProgress reads the drain's progress; without a progress file it is
// empty (see ProgressKnown).
func ReadProgress(fsys vfs.FS, home string) (Progress, error) {
	p := Progress{}
	b, err := vfs.ReadFile(fsys, drainedPath(home))
	if errors.Is(err, fs.ErrNotExist) {
		return p, nil
	}
	if err != nil {
		return nil, err
	}
	err = json.Unmarshal(b, &p)
	if err == nil && p == nil {
		// null decodes into a nil map, which the drain would write to.
		err = errors.New("not an object")
	}
	for name, off := range p {
		if err == nil && off < 0 {
			// An offset slices the spool file: it must not be negative.
			err = fmt.Errorf("offset %d for %s", off, name)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s is damaged (%v): remove it to drain the spool again (notes already in the store are not taken twice)", drainedPath(home), err)
	}
	return p, nil
}

// WriteProgress records the drain's progress, atomically.
func WriteProgress(fsys vfs.FS, home string, p Progress) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return fsys.WriteFileAtomic(drainedPath(home), b, 0o600)
}

// Spool is what a read of the spool found past each file's drained
// offset.
type Spool struct {
	// Pending: the saves, in spool file order, then line order, without
	// their content and title (see Pending).
	Pending []Pending
	// Sizes: the size of each file read.
	Sizes map[string]int64
	// Damaged: complete lines whose checksum fails, or that do not decode,
	// followed by a valid save in their file. A crash tears only a
	// file's last line, so such a line was damaged on disk after it was
	// written (a save acknowledged to its client), or is a save that
	// failed and whose bytes could not be cut off again (never
	// acknowledged): either way not a tear to drop without a word. The
	// drain keeps their bytes under torn/ (KeepDamaged).
	Damaged []Damaged
	// Unreadable: the files that could not be opened or read (another
	// account's, mode 0600: a client run in a container sharing the home,
	// or once under sudo). Their saves wait; the other files are read.
	Unreadable []Unreadable
}

// Damaged is a damaged line of a spool file: bytes [Start, End) of File,
// its newline included.
type Damaged struct {
	File       string
	Start, End int64
}

// Unreadable is a spool file that could not be read.
type Unreadable struct {
	Path string `json:"path"`
	Err  error  `json:"-"`
	// Error: Err's words, for --json.
	Error string `json:"error"`
}

// Advice says what failed and what to do, for a notice or a status line.
func (u Unreadable) Advice() string {
	what := "make it a file this account can read (`ls -l` it: its owner, its mode, what it is)"
	if errors.Is(u.Err, fs.ErrPermission) {
		what = "it is not this account's to read (`ls -l` it): run rook as its owner once, or `sudo chown` it to this account"
	}
	return fmt.Sprintf("spool file %s could not be read (%s): its saves wait; %s", u.Path, u.Error, what)
}

// ReadSpool lists the saves past each spool file's drained offset (their
// content and title let go as each is read: see Pending), and the size of
// each file read. Torn lines (a crash before the reply) are
// skipped; a line still being written is left for the next drain; a
// damaged line (see Spool.Damaged) is skipped and reported. Each file is
// read from its drained offset only, a line at a time: a server's spool
// file lasts as long as its process (days), and what it saved before was
// taken in long ago. A file that cannot be read is reported and passed
// over: one client's file must not hold back every other's saves.
//
// It takes no lock (`inbox status` runs it beside another rook's drain): a
// file listed that is gone by the time it is opened was removed by a drain,
// which removes only files wholly taken in (RemoveDrained) whose writer
// has exited: nothing of it waits.
func ReadSpool(fsys vfs.FS, home string, p Progress) (Spool, error) {
	return readSpoolFiles(fsys, home, p, false)
}

// readSpoolFiles is ReadSpool; whole keeps each save whole (ReadPending).
func readSpoolFiles(fsys vfs.FS, home string, p Progress, whole bool) (Spool, error) {
	out := Spool{Sizes: map[string]int64{}}
	names, err := listJSONL(fsys, spoolDir(home))
	if err != nil {
		return out, err
	}
	for _, name := range names {
		path := filepath.Join(spoolDir(home), name)
		f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
		if errors.Is(err, fs.ErrNotExist) {
			continue // drained whole and removed since the listing
		}
		if err != nil {
			out.Unreadable = append(out.Unreadable, unreadable(path, err))
			continue
		}
		var bad []Damaged
		var last int64 // the end of the file's last save read
		size, err := readSpool(f, p[name], func(start, end int64, s Save) {
			if !whole {
				s.Content, s.Title, s.ClientName = "", "", CutClientName(s.ClientName)
			}
			out.Pending = append(out.Pending, Pending{File: name, Start: start, End: end, Save: s})
			last = end
		}, func(start, end int64) {
			bad = append(bad, Damaged{File: name, Start: start, End: end})
		})
		f.Close()
		if err != nil {
			out.Unreadable = append(out.Unreadable, unreadable(path, err))
			// What was read of it is left for the next drain too: its
			// size is not known to have been read.
			out.Pending = slices.DeleteFunc(out.Pending, func(pe Pending) bool { return pe.File == name })
			continue
		}
		for _, d := range bad {
			if d.End <= last {
				out.Damaged = append(out.Damaged, d)
			} // else its file's last lines: torn, or followed by a save yet to come
		}
		out.Sizes[name] = size
	}
	return out, nil
}

func unreadable(path string, err error) Unreadable {
	msg := err.Error()
	var pe *fs.PathError
	if errors.As(err, &pe) {
		msg = pe.Err.Error() // the path is said once, by Advice
	}
	return Unreadable{Path: path, Err: err, Error: msg}
}

// ReadPending is ReadSpool's saves, whole (content and all: for a few
// saves), and sizes; a file that cannot be read is an error, after the
// others are read.
func ReadPending(fsys vfs.FS, home string, p Progress) ([]Pending, map[string]int64, error) {
	s, err := readSpoolFiles(fsys, home, p, true)
	if err == nil && len(s.Unreadable) > 0 {
		err = errors.New(s.Unreadable[0].Advice())
	}
	return s.Pending, s.Sizes, err
}

// ErrSpoolChanged: a spool file no longer holds, where ReadSpool found
// it, the save it listed there.
var ErrSpoolChanged = errors.New("the spool file changed since it was read")

// SaveReader reads back whole, one at a time, the saves ReadSpool listed:
// the drain holds one save, not the backlog.
type SaveReader struct {
	fs   vfs.FS
	home string
	name string // the spool file open
	f    vfs.File
}

// NewSaveReader returns a reader of the saves of the spool under home.
func NewSaveReader(fsys vfs.FS, home string) *SaveReader {
	return &SaveReader{fs: fsys, home: home}
}

// Read reads the save p lists from its line in its spool file, content
// and all. The line must still be that save (its checksum holds and its
// id is p's): ErrSpoolChanged when it is not (a writer cut off a save it
// failed to sync after ReadSpool read it), and the caller leaves it and
// the rest of its file for the next read of the spool.
func (r *SaveReader) Read(p Pending) (Save, error) {
	path := filepath.Join(spoolDir(r.home), p.File)
	if r.f == nil || r.name != p.File {
		r.Close()
		f, err := r.fs.OpenFile(path, os.O_RDONLY, 0)
		if err != nil {
			return Save{}, err
		}
		r.f, r.name = f, p.File
	}
	n := p.End - p.Start
	b, err := vfs.ReadSized(io.NewSectionReader(r.f, p.Start, n), n, -1)
	var s Save
	switch {
	case err != nil:
		return s, fmt.Errorf("%s: reading its save at %d: %w", path, p.Start, err)
	case int64(len(b)) != n || n == 0 || b[n-1] != '\n':
		// Cut shorter since it was read.
		return s, fmt.Errorf("%s at %d: %w", path, p.Start, ErrSpoolChanged)
	}
	if decodeLine(b[:len(b)-1], &s) != nil || s.ID != p.Save.ID {
		return Save{}, fmt.Errorf("%s at %d: %w", path, p.Start, ErrSpoolChanged)
	}
	return s, nil
}

// Close closes the spool file open.
func (r *SaveReader) Close() error {
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f, r.name = nil, ""
	return err
}

// KeepDamaged copies a damaged spool line's bytes under torn/ (named as a
// torn tail's copy is, by its file and offset: keepTorn) and returns the
// copy's path; a copy a drain cut short made already is that copy.
func KeepDamaged(fsys vfs.FS, home string, d Damaged) (string, error) {
	path := filepath.Join(spoolDir(home), d.File)
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := vfs.ReadSized(io.NewSectionReader(f, d.Start, d.End-d.Start), d.End-d.Start, -1)
	if err != nil {
		return "", fmt.Errorf("%s: reading its damaged line at %d: %w", path, d.Start, err)
	}
	return keepTorn(fsys, home, d.File, d.Start, b)
}

// keepTorn copies bytes of the spool file name from offset off under
// torn/, as inbox-spool.<file>.<offset>, and returns the copy's path. The
// name has no time in it: a drain cut short after the copy, before its
// offset moved past the bytes (or before their file was removed), copies
// them again when done again, and finds the copy already there with the
// same bytes: one copy of them, whatever crash came between. A copy of
// other bytes under that name (the file replaced since) is kept as it is,
// and these get the next free name (.2, .3, ...).
func keepTorn(fsys vfs.FS, home, name string, off int64, b []byte) (string, error) {
	dir := filepath.Join(home, cas.TornDir)
	if err := fsys.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	base := filepath.Join(dir, fmt.Sprintf("inbox-spool.%s.%d", name, off))
	for n := 1; ; n++ {
		kept := base
		if n > 1 {
			kept = fmt.Sprintf("%s.%d", base, n)
		}
		st, err := fsys.Stat(kept)
		if errors.Is(err, fs.ErrNotExist) {
			return kept, fsys.WriteFileAtomic(kept, b, 0o600)
		}
		if err != nil {
			return "", err
		}
		if st.Size() != int64(len(b)) || !st.Mode().IsRegular() {
			continue
		}
		have, err := vfs.ReadFile(fsys, kept)
		if err != nil {
			return "", err
		}
		if bytes.Equal(have, b) {
			return kept, nil
		}
	}
}

// maxSpoolLine bounds one spool line as read back. A server writes one
// line per save: a content of at most 100,000 characters (600 KB as JSON)
// and the client's name from an initialize message of at most 4 MiB
// (mcp.MaxLineBytes), which JSON written again makes at most six times
// longer (a "<" is written \u003c): a longer line is none a server wrote,
// and is skipped as a line failing its checksum is, without holding it in
// memory.
var maxSpoolLine = 32 << 20

// readSpool calls save with each save of the spool file f past off, and
// the offsets of its line and just past it, reading only from off. It returns the
// file's size, as its Stat gave it when read: bytes appended since are
// left for the next read. An offset past the size (a file replaced) reads
// the file from its start: the ids keep the drain exact.
func readSpool(f vfs.File, off int64, save func(start, end int64, s Save), bad func(start, end int64)) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := st.Size()
	if off > size {
		off = 0
	}
	br := bufio.NewReaderSize(io.NewSectionReader(f, off, size-off), 64<<10)
	var line []byte
	skip := false // in a line over maxSpoolLine: dropped to its end
	for {
		chunk, err := br.ReadSlice('\n')
		off += int64(len(chunk))
		if err == bufio.ErrBufferFull {
			if !skip && len(line)+len(chunk) <= maxSpoolLine {
				line = append(line, chunk...)
			} else {
				skip, line = true, line[:0]
			}
			continue
		}
		if err == io.EOF {
			return size, nil // a line without its newline: being written, or torn
		}
		if err != nil {
			return size, err
		}
		whole := chunk
		if len(line) > 0 || skip {
			if skip || len(line)+len(chunk) > maxSpoolLine {
				skip, line = false, line[:0]
				continue
			}
			line = append(line, chunk...)
			whole = line
		}
		var s Save
		if err := decodeLine(whole[:len(whole)-1], &s); err != nil {
			if bad != nil {
				bad(off-int64(len(whole)), off) // torn by a crash, if its file's last line
			}
		} else if s.ID != "" {
			save(off-int64(len(whole)), off, s)
		} // else no save: the locked-writer header
		line = line[:0]
	}
}

// RemoveDrained deletes the spool files that are wholly drained and whose
// writer has exited, and forgets them in p. Wholly drained: no complete
// valid save past the drained offset. A writer that exited leaving a torn
// last line (or only its header) left bytes the drain never takes in: the
// file used to stay, read again by every drain, for ever; now those bytes
// are kept under torn/ (as a torn segment or log tail is) and the file
// goes. A writer holds a lock on its
// file while it runs (Writer.openSpool): a file whose lock the drain can
// take, and that begins with the locked-writer header, has no writer. Only
// for a file without the header (an older rook's, or written where locks
// fail) and where locks fail does live, which reports whether a process
// name's pid is running, decide. A file is removed while the drain holds
// its lock, so a writer that created it but had not locked it yet sees it
// gone and starts again. The paths kept under torn/ are returned, for the
// drain to say so (once: the file is gone after).
func RemoveDrained(fsys vfs.FS, home string, p Progress, sizes map[string]int64, live func(name string) bool) (torn []string, err error) {
	for name, size := range sizes {
		if p[name] > size {
			continue // the file was replaced: the next drain reads it again
		}
		path := filepath.Join(spoolDir(home), name)
		if _, err := fsys.Stat(path); errors.Is(err, fs.ErrNotExist) {
			// Gone already (and not to be created again by TryLock).
			delete(p, name)
			continue
		}
		l, running := writerRunning(fsys, path, name, live)
		if running {
			unlock(l)
			continue
		}
		kept, err := removeSpool(fsys, home, path, p[name])
		unlock(l)
		if err != nil {
			return torn, err
		}
		if kept != "" {
			torn = append(torn, kept)
		}
		if _, err := fsys.Stat(path); errors.Is(err, fs.ErrNotExist) {
			delete(p, name)
		}
	}
	return torn, nil
}

// writerRunning tells whether the writer of the spool file path (named
// name) runs: by its lock, or for a file without the locked-writer header,
// or where locks fail, by live. When it does not, the lock of the file is
// returned held (nil where locks fail), for the caller to unlock.
func writerRunning(fsys vfs.FS, path, name string, live func(string) bool) (vfs.Lock, bool) {
	l, err := fsys.TryLock(path, 0o600)
	if errors.Is(err, vfs.ErrLocked) {
		return nil, true
	}
	if err != nil {
		l = nil // no locks here: the pid decides
	}
	if (l == nil || !lockedWriter(l.File())) && live(strings.TrimSuffix(name, ".jsonl")) {
		return l, true
	}
	return l, false
}

func unlock(l vfs.Lock) {
	if l != nil {
		l.Unlock()
	}
}

// lockedWriter reports whether a spool file begins with the header of a
// writer that holds its lock for its life.
func lockedWriter(f vfs.File) bool {
	b := make([]byte, len(lockedLine))
	n, _ := f.ReadAt(b, 0)
	return bytes.Equal(b[:n], lockedLine)
}

// removeSpool removes a wholly drained spool file of a writer known gone.
// The drain read the file before it took the saves in: the writer may have
// saved more (and been told so) and exited since. Now that it has exited
// the file cannot grow: read it again, and keep a file with a complete
// valid save past the drained offset off for the next drain. What else is
// past it (a torn line, lines failing their checksum; never acknowledged)
// is copied to torn/ before the file is removed; kept is that copy's path.
func removeSpool(fsys vfs.FS, home, path string, off int64) (kept string, err error) {
	rest, err := readFrom(fsys, path, off)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil || rest == nil {
		return "", err
	}
	if hasSave(rest) {
		return "", nil
	}
	if len(rest) > 0 && !bytes.Equal(rest, lockedLine) {
		if kept, err = keepTorn(fsys, home, filepath.Base(path), off, rest); err != nil {
			return "", err
		}
	}
	if err := fsys.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	return kept, nil
}

// readFrom reads the file path from off to its end, not what is before
// (taken in long ago); nil when the file is shorter than off.
func readFrom(fsys vfs.FS, path string, off int64) ([]byte, error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if off > st.Size() {
		return nil, nil
	}
	return vfs.ReadSized(io.NewSectionReader(f, off, math.MaxInt64-off), st.Size()-off, -1)
}

// hasSave reports whether b holds a complete, valid save line: one the
// drain takes in.
func hasSave(b []byte) bool {
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return false
		}
		var s Save
		if decodeLine(b[:i], &s) == nil && s.ID != "" {
			return true
		}
		b = b[i+1:]
	}
}

// pastActivity is the activity file the attempts of exited server
// processes are merged into (it has no pid: no process writes it).
const pastActivity = "past.jsonl"

// keepActivity bounds pastActivity: its newest attempts are kept, older
// ones dropped. `rook inbox activity` shows the newest 50 by default.
var keepActivity = 10000

// MergeActivity folds the activity files of server processes that have
// exited (live says which may still write) into pastActivity, keeping its
// newest keepActivity attempts, then removes them. One file per `mcp
// serve` process, never removed, grew the folder without bound, and every
// `inbox activity` read them all; now the folder holds one file per live
// server and one more. The merged file is replaced atomically before the
// files merged are removed: a crash between the two leaves files whose
// lines are already merged, and the next merge drops those (the same
// bytes: a line is kept as many times as pastActivity, or the files
// merged, hold it, whichever is more) instead of taking them twice. Torn
// lines are dropped.
func MergeActivity(fsys vfs.FS, home string, live func(name string) bool) error {
	dir := activityDir(home)
	names, err := listJSONL(fsys, dir)
	if err != nil {
		return err
	}
	var gone []string
	for _, name := range names {
		if name == pastActivity {
			continue
		}
		// The process's spool file, while there, says by its lock
		// whether it runs (RemoveDrained): its pid means nothing for a
		// server in another pid namespace. Its file is removed by the
		// drain once it is gone, so merge before draining.
		path := filepath.Join(spoolDir(home), name)
		running := live(strings.TrimSuffix(name, ".jsonl"))
		if _, err := fsys.Stat(path); err == nil {
			var l vfs.Lock
			l, running = writerRunning(fsys, path, name, live)
			unlock(l)
		}
		if !running {
			gone = append(gone, name)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	read := newActivityLines()
	for _, name := range append([]string{pastActivity}, gone...) {
		b, err := vfs.ReadFile(fsys, filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		read.add(name, b)
	}
	type line struct {
		raw string
		at  time.Time
	}
	var lines []line
	read.each(func(raw string, a Activity) { lines = append(lines, line{raw, a.Time}) })
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].at.Before(lines[j].at) })
	if len(lines) > keepActivity {
		lines = lines[len(lines)-keepActivity:]
	}
	var out []byte
	for _, l := range lines {
		out = append(append(out, l.raw...), '\n')
	}
	if err := fsys.WriteFileAtomic(filepath.Join(dir, pastActivity), out, 0o600); err != nil {
		return err
	}
	for _, name := range gone {
		if err := fsys.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// ReadActivity returns every recorded attempt, oldest first. It takes no
// lock, and a writer's open may merge files meanwhile (MergeActivity): a
// file listed that is gone was merged, so the folder is read again (its
// lines are in pastActivity now, which may not have been listed), and the
// lines both pastActivity and a process's file hold (read before and
// after the merge, or left in both by a merge cut short) count once.
func ReadActivity(fsys vfs.FS, home string) ([]Activity, error) {
	for tries := 0; ; tries++ {
		out, err := readActivity(fsys, home)
		if errors.Is(err, fs.ErrNotExist) && tries < 8 {
			continue
		}
		return out, err
	}
}

func readActivity(fsys vfs.FS, home string) ([]Activity, error) {
	names, err := listJSONL(fsys, activityDir(home))
	if err != nil {
		return nil, err
	}
	lines := newActivityLines()
	for _, name := range names {
		b, err := vfs.ReadFile(fsys, filepath.Join(activityDir(home), name))
		if err != nil {
			return nil, err
		}
		lines.add(name, b)
	}
	var out []Activity
	lines.each(func(_ string, a Activity) { out = append(out, a) })
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out, nil
}

// activityLines are the whole lines of activity files, counted apart in
// pastActivity and in the processes' files: a line merged into
// pastActivity whose file is still there (or was read before the merge)
// is one attempt, not two, while identical lines in one file (attempts
// in the same clock tick) are as many attempts.
type activityLines struct {
	past, procs map[string]int
	decoded     map[string]Activity
	order       []string // each distinct line once, as first read
}

func newActivityLines() *activityLines {
	return &activityLines{past: map[string]int{}, procs: map[string]int{}, decoded: map[string]Activity{}}
}

// add takes in the lines of the activity file name, torn ones dropped.
func (s *activityLines) add(name string, b []byte) {
	counts := s.procs
	if name == pastActivity {
		counts = s.past
	}
	for _, raw := range bytes.Split(b, []byte{'\n'}) {
		line := string(raw)
		if _, ok := s.decoded[line]; !ok {
			var a Activity
			if decodeLine(raw, &a) != nil {
				continue
			}
			s.decoded[line] = a
			s.order = append(s.order, line)
		}
		counts[line]++
	}
}

// each calls f with every attempt: each line as many times as
// pastActivity, or the processes' files, hold it, whichever is more.
func (s *activityLines) each(f func(line string, a Activity)) {
	for _, line := range s.order {
		for range max(s.past[line], s.procs[line]) {
			f(line, s.decoded[line])
		}
	}
}

func listJSONL(fsys vfs.FS, dir string) ([]string, error) {
	ents, err := fsys.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".jsonl") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// Inbox names a client's inbox: its short name (what `rook inbox show`
// takes) and its title, from the clientInfo.name it sent at initialize.
// Claude Code and Claude Desktop share the Claude Inbox; every other client
// gets one of its own. Both come from one name, the client's name as
// recorded (CutClientName: cleaned, trimmed, cut to MaxClientName bytes),
// so the whole name and the recorded one name the same inbox, and the
// drain titles an inbox from a save's recorded name as the server named it.
func Inbox(clientName string) (short, title string) {
	// The name is printed (`rook inbox ls`) and typed back (`rook inbox
	// show`): keep only what can be (a name of controls and spaces is no
	// name), cut it where rook always cut it (before Unicode spaces were
	// folded: an inbox an older rook named is found by TypedName), then
	// fold its spaces.
	name := TypedName(CutClientName(clientName))
	n := strings.ToLower(name)
	switch {
	case strings.HasPrefix(n, "claude"):
		return "claude", "Claude Inbox"
	case strings.HasPrefix(n, "codex"):
		return "codex", "Codex Inbox"
	case strings.HasPrefix(n, "cursor"):
		return "cursor", "Cursor Inbox"
	case strings.HasPrefix(n, "gemini"):
		return "gemini", "Gemini Inbox"
	}
	if name == "" {
		name = UnknownClient
	}
	return strings.ToLower(name), name + " Inbox"
}

// TypedName is a name as it can be typed back: what Typeable keeps, every
// Unicode space (a no-break space U+00A0, U+2009, the ideographic U+3000)
// an ASCII space, as it shows and is typed, trimmed. An inbox is found
// by it, whatever spaces its stored name holds.
func TypedName(name string) string {
	return strings.TrimSpace(strings.Map(func(r rune) rune {
		switch {
		case untypeable(r):
			return -1
		case unicode.IsSpace(r):
			return ' '
		}
		return r
	}, name))
}

// MaxClientName bounds a client's name as recorded (each save and
// attempt, in bytes) and an inbox's name: a client sends what name it
// likes, up to the 4 MiB of an initialize message.
const MaxClientName = 64

// CutClientName is a client's name as recorded: a name of at most
// MaxClientName bytes as sent; a longer one as its inbox is named from it
// (Inbox), without what Typeable removes, trimmed, then cut to
// MaxClientName bytes on a character boundary (half a character is not
// UTF-8, and would come back as U+FFFD from the spool), its Unicode
// spaces kept. Cleaned first, blanks and controls before the name never
// take the bytes its name needs: 70 spaces and "Zed Editor" is "Zed
// Editor", not 64 spaces (a client with no name).
func CutClientName(name string) string {
	if len(name) <= MaxClientName {
		return name
	}
	name = strings.TrimSpace(Typeable(name))
	if len(name) <= MaxClientName {
		return name
	}
	cut := MaxClientName
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return strings.TrimSpace(name[:cut])
}

// UnknownClient names the inbox of a client that sent no name (or none
// that can be typed).
const UnknownClient = "unknown client"

// ProcessName names this server process's spool and activity files:
// unique among live processes, and saying which pid writes them.
func ProcessName(start time.Time, pid int) string {
	return fmt.Sprintf("%d-%d", start.UnixNano(), pid)
}

// ProcessPID reads the pid back from a process name (0 if none).
func ProcessPID(name string) int {
	i := strings.LastIndexByte(name, '-')
	pid, err := strconv.Atoi(name[i+1:])
	if err != nil {
		return 0
	}
	return pid
}
