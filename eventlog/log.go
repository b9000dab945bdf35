// Package eventlog keeps each session's append-only event log: dense
// sequence numbers from 0, buffered appends with durability barriers,
// atomic groups (an event and its companion), forks that copy records (never
// bodies), and reads by seq range that cost a page, not a session.
//
// Each session is two files under the events directory: <ULID>.meta, its
// metadata as versioned JSON, and <ULID>.log, its records. docs/storage.md
// ("Event logs") gives the byte layout and the crash behaviour.
package eventlog

import (
	"bytes"
	"encoding/base64"
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
	"sync"
	"time"
	"unicode/utf8"

	"github.com/rookhq/rook/internal/clock"
	"github.com/rookhq/rook/internal/vfs"
)

// Meta is a session's metadata. It is JSON with a version field; readers
// ignore fields they do not know, so adding one needs no migration.
type Meta struct {
	V         int       `json:"v"`
	ID        ID        `json:"id"`
	Title     string    `json:"title,omitempty"`
	Workspace string    `json:"workspace,omitempty"`
	Created   time.Time `json:"created"`
	Parent    *ID       `json:"parent,omitempty"`
	ForkAt    *uint64   `json:"fork_at,omitempty"` // the fork holds the parent's events [0, ForkAt)
	Tags      []string  `json:"tags,omitempty"`
	// Source is set on a session imported from another agent's transcript.
	Source *Source `json:"source,omitempty"`
	// Written is when an import last appended to the session (its file
	// grew), by rook's clock, in UTC at millisecond precision as Created:
	// the events it appended carry the transcript's own, older, times, so
	// neither they nor Created say that rook wrote the session then, and
	// retention ages it from this too. Zero (omitted): not appended to by
	// an import since its creation, or last by a rook before this field.
	Written time.Time `json:"written,omitzero"`
	// CopiedIn and CopiedOut, on a fork made in rook of a session whose
	// totals leave copied tokens out (Source.CopiedIn, or these of a fork
	// of one), are those the fork's copy of its events holds: its totals
	// leave them out too, as its parent's do.
	CopiedIn  uint64 `json:"copied_tokens_in,omitempty"`
	CopiedOut uint64 `json:"copied_tokens_out,omitempty"`
	// Ancestor and AncestorAt, on a fork made in rook whose parent (a
	// fork too) was removed, are the nearest session still there whose
	// events [0, AncestorAt) the fork's copy holds: Parent keeps naming
	// the removed one (the fork is an orphan), and this is how a change
	// to the ancestor's counting (an imported ancestor linked to its
	// parent later) still reaches the fork. On an imported session whose
	// totals leave copied tokens out (Source.CopiedIn), Ancestor alone
	// (no AncestorAt) names the session that counts them once its parent
	// is removed (agent's keepCopiedCounted); so it does on a fork made in
	// rook of such a session once that session is removed (it leaves out
	// its share of what that session left out).
	Ancestor   *ID     `json:"ancestor,omitempty"`
	AncestorAt *uint64 `json:"ancestor_at,omitempty"`
	// TitleAt, on a fork made in rook that took its title from a session
	// since removed (its parent, or one up its line of forks titled the
	// same), is the fork point of the session that title was given to:
	// the "@N" a rewind of it added, which a rewind of the fork replaces.
	// The removal writes it, while the line still reads: AncestorAt is
	// the lower of two fork points and says nothing of the title.
	TitleAt *uint64 `json:"title_at,omitempty"`
	// TitleGiven, on a fork made in rook that took its title from a
	// session since removed that was no fork (its title given to it, by
	// the user or an import, not made by a rewind), says so: the title
	// ends in no rewind's "@N" for a rewind of the fork to replace, even
	// one that happens to be the fork's own fork point ("v @3" forked at
	// 3). The removal writes it, as TitleAt.
	TitleGiven bool `json:"title_given,omitempty"`
}

// ForkedFrom is the session m holds a copy of the first events of, and
// how many: its Ancestor once its parent is removed, else its parent.
// ok is false for a session that is not a fork.
func (m Meta) ForkedFrom() (id ID, at uint64, ok bool) {
	if m.Ancestor != nil && m.AncestorAt != nil {
		return *m.Ancestor, *m.AncestorAt, true
	}
	if m.Parent != nil && m.ForkAt != nil {
		return *m.Parent, *m.ForkAt, true
	}
	return ID{}, 0, false
}

// Copied are the tokens m's events count that its totals leave out: an
// imported session's for the lines it copied from its parent
// (Source.CopiedIn), or a fork's for those of the events it copied.
func (m Meta) Copied() (in, out uint64) {
	if m.Source != nil {
		return m.Source.CopiedIn, m.Source.CopiedOut
	}
	return m.CopiedIn, m.CopiedOut
}

// Source says where an imported session came from and how much of it is
// in: the first Size bytes of the file at Path, whose SHA-256 is SHA256.
type Source struct {
	Format string `json:"format"`           // "claude-code", "codex"
	Path   string `json:"path"`             // absolute
	ID     string `json:"id,omitempty"`     // the source's own session id
	Size   int64  `json:"size"`             // bytes imported (of the decompressed stream for .zst)
	SHA256 string `json:"sha256"`           // hex, of those bytes
	Zstd   bool   `json:"zstd,omitempty"`   // the file is zstd-compressed JSONL
	Parent string `json:"parent,omitempty"` // the parent's source session id, for subagents
	// ContinuedIn is the source session id the file says the conversation
	// went on in (a Claude Code transcript's continued-in line): that
	// session, when imported, is linked to this one.
	ContinuedIn string `json:"continued_in,omitempty"`
	// CopiedIn and CopiedOut are the tokens the session's events count
	// for lines it copied from its parent (a Codex fork's token_counts, a
	// Claude Code continuation's or fork's model lines) when it was
	// imported before that parent, which spent them: Summary leaves them
	// out of its totals, so that they count once, in the parent,
	// whichever file was imported first (the events themselves are
	// written once).
	CopiedIn  uint64 `json:"copied_tokens_in,omitempty"`
	CopiedOut uint64 `json:"copied_tokens_out,omitempty"`
	// CopiesParent says the file, a Codex subagent's, begins with a copy
	// of its parent's lines (Codex spawned it with its parent's history):
	// its CopiedIn and CopiedOut are counted against the parent, as a
	// fork's are; a subagent without it copied nothing, and its events
	// are not read for it.
	CopiesParent bool `json:"copies_parent,omitempty"`
	// RecountForks says the session's file grew, and the imported forks
	// linked to it are still to leave out what they copied of its new
	// lines (their CopiedIn and CopiedOut counted again): written with
	// the lines it took in, cleared once every fork's count is written,
	// so that an import cut short in between has the next one do it.
	RecountForks bool `json:"recount_forks,omitempty"`
	// Stat is what the file system said of the file, before it was read,
	// when the session came to hold all of it (all of a .zst's
	// decompressed stream; the file not changed in the last seconds
	// before): the next import takes a file that still has this size (on
	// disk: compressed, for .zst), modification and change times as
	// unchanged, without reading it. nil: the next import reads and hashes
	// the file.
	Stat *FileStat `json:"stat,omitempty"`
	// SideSeen is, of a Claude Code transcript, the newest modification
	// time (unix ns) of the side files beside it (session-memory files,
	// the tool-results directory) that an import looked at and found
	// held or took in: the next import looks at them again only when one
	// changed after it (and after Stat's). Without it, files newer than
	// the transcript (notes written after its last line) had every
	// import read them and the session's events again. 0: none recorded.
	SideSeen int64 `json:"side_seen_ns,omitempty"`
	// Stops are sizes (as Size counts them) at which earlier imports of
	// the file stopped reading where what they stored last is not what a
	// read going on stores: a run of notes stored as it stood at the
	// file's end, which a later import does not add to, or a last line
	// with no newline yet. Objects are cut at these points; `rook import
	// --reread` reads the file again stopping at each (and at Size), to
	// make those objects again. Ascending; nil: none recorded (none such,
	// or imported before rook recorded them).
	Stops []int64 `json:"stops,omitempty"`
	// Unreported are the lines that did not parse among those imports
	// took in and whose report may not have been made: written with the
	// size that holds them, cleared once the import that took them in (or
	// a later one) has reported them, so that an import cut short in
	// between (a kill, a crash) has the next one report them. nil: none.
	Unreported *Unreported `json:"unreported,omitempty"`
}

// Unreported counts the lines of a source that did not parse whose report
// may not have been made, and keeps the first of them (UnreportedKept).
type Unreported struct {
	Lines int              `json:"lines"`
	First []UnreportedLine `json:"first,omitempty"`
}

// UnreportedKept is how many lines Unreported keeps (all are counted).
const UnreportedKept = 20

// UnreportedLine is a line of a source that did not parse: its number in
// the file (from 1) and why.
type UnreportedLine struct {
	Line   int    `json:"line"`
	Reason string `json:"reason"`
}

// FileStat is a source file's size and times, as the file system gave them.
type FileStat struct {
	Size  int64 `json:"size"`
	MTime int64 `json:"mtime_ns"`           // modification time, unix ns
	CTime int64 `json:"ctime_ns,omitempty"` // inode change time, unix ns, where the OS gives it (0: not known)
}

// sourceJSON is Source as .meta stores it. JSON strings are UTF-8: a path
// that is not (a file name of Latin-1 bytes) is also kept as its bytes, so
// the next import still knows the file (path shows it, U+FFFD for each bad
// byte).
type sourceJSON struct {
	sourceFields
	PathBytes json.RawMessage `json:"path_bytes,omitempty"` // a base64 string; only when path is not UTF-8
}

type sourceFields Source // the fields, without Source's methods

func (s Source) MarshalJSON() ([]byte, error) {
	j := sourceJSON{sourceFields: sourceFields(s)}
	if !utf8.ValidString(s.Path) {
		j.PathBytes, _ = json.Marshal(base64.StdEncoding.EncodeToString([]byte(s.Path)))
	}
	return json.Marshal(j)
}

func (s *Source) UnmarshalJSON(b []byte) error {
	var j sourceJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*s = Source(j.sourceFields)
	// Damaged (not a string, not base64), it is passed over: path still
	// names the file, if not byte for byte (the next import then takes it
	// as new, losing nothing).
	var enc string
	if json.Unmarshal(j.PathBytes, &enc) == nil {
		if b, err := base64.StdEncoding.DecodeString(enc); err == nil && len(b) > 0 {
			s.Path = string(b)
		}
	}
	return nil
}

// Summary is a session's metadata plus what its log says.
type Summary struct {
	Meta
	Events    uint64    `json:"events"`
	TokensIn  uint64    `json:"tokens_in"`
	TokensOut uint64    `json:"tokens_out"`
	Updated   time.Time `json:"updated"`
}

// metaVersion is the version of the .meta files this rook writes. 2 added
// the "check" member (encodeMeta); version 1 files, which have none, still
// read.
const metaVersion = 2

// metaCheckKey opens the last member of a version 2 .meta: `,"check":"`,
// then the CRC-32C, 8 lowercase hex digits, of the JSON object as it reads
// without this member, then `"}`.
const metaCheckKey = `,"check":"`

// metaCheckLen is the length of that member with the object's close.
const metaCheckLen = len(metaCheckKey) + 8 + len(`"}`)

// encodeMeta is a session's .meta file: m (as this rook's version) in
// JSON, with its check last, and a newline.
func encodeMeta(m Meta) ([]byte, error) {
	m.V = metaVersion
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	sum := crc32.Checksum(b, castagnoli)
	b = b[:len(b)-1] // the closing brace, written after the check
	return fmt.Appendf(b, metaCheckKey+`%08x"}`+"\n", sum), nil
}

// metaChecked says whether b (a .meta file's bytes) ends with a check,
// and, if so, whether the check holds: the bytes before it, closed, are
// what was summed.
func metaChecked(b []byte) (has, holds bool) {
	b = bytes.TrimRight(b, "\n")
	if len(b) <= metaCheckLen {
		return false, false
	}
	body, tail := b[:len(b)-metaCheckLen], b[len(b)-metaCheckLen:]
	digits, ok := bytes.CutPrefix(tail, []byte(metaCheckKey))
	if !ok || !bytes.HasSuffix(digits, []byte(`"}`)) {
		return false, false
	}
	want, err := strconv.ParseUint(string(digits[:8]), 16, 32)
	if err != nil {
		return false, false
	}
	sum := crc32.Update(crc32.Checksum(body, castagnoli), castagnoli, []byte{'}'})
	return true, uint32(want) == sum
}

// Options tune a Log.
type Options struct {
	FS    vfs.FS
	Clock clock.Clock
	// Writable: this process holds the store's writer lock.
	Writable bool
	// BarrierEvery: a durability barrier after this many buffered events
	// (default and maximum 256; the maximum bounds how much a crash can
	// tear, see tailWindow).
	BarrierEvery int
	// BeforeBarrier runs before the records of a barrier are written: the
	// store's Sync, so no durable event ever names a body that is not.
	BeforeBarrier func() error
	// TornDir receives the bytes of torn tails cut by recovery.
	TornDir string
}

// maxBarrierEvery caps BarrierEvery, and with it the bytes one barrier
// writes per session: at most (256 + a group) records of at most
// maxRecordSize bytes, well under tailWindow.
const maxBarrierEvery = 256

// bulkBarrierBytes is how many bytes of records a bulk writer buffers
// between barriers: with a group on top, still under tailWindow.
const bulkBarrierBytes = 256 << 10

// tailWindow is how far from the end of a log a crash can have torn it:
// more than one barrier's writes. Damage further back is corruption.
const tailWindow = 512 << 10

// Log is the set of session logs in one directory.
type Log struct {
	dir  string
	opts Options
	fs   vfs.FS
	ids  idGen

	// Notices says what Open repaired.
	Notices []string

	mu        sync.Mutex
	sessions  map[ID]*writerState
	unflushed int
	// bulk: barriers come every bulkBarrierBytes of buffered records
	// rather than every BarrierEvery events (SetBulk).
	bulk          bool
	unflushedSize int  // bytes of buffered records, over every session
	marked        bool // the dirty marker is on disk
	// markerCut: an append to the dirty marker failed, and may have left
	// part of a line at its end: the next append starts a new line, so a
	// line it writes is not glued to the torn one (whose checksum then
	// fails both) and lost.
	markerCut bool
	// named: the sessions the dirty marker names, with their durable
	// sizes (mark).
	named map[ID]bool
	// born: the sessions the dirty marker tags "new" (created by this
	// writer, their logs written before their metadata; see tagNew).
	born map[ID]bool
	// unfinished: the sessions a Remove tagged "rm" in the dirty marker
	// and did not finish removing, and the forks tagged "new" whose
	// metadata was not written (tagged "rm" too once the Fork failed,
	// forkFailed): Close leaves the marker, so that the next writer's
	// open removes what is left of them.
	unfinished map[ID]bool
	// recorded: the forks this writer made, whose metadata the dirty
	// marker records (markerFork): each write of their metadata records
	// it again first (writeMetas), so that a recovery that rebuilds a
	// lost .meta brings back the last written.
	recorded map[ID]bool
	failed   error // a barrier failed: nothing more is acknowledged
	// created: sessions created in bulk whose metadata is not written yet
	// (Create): the next flush writes it, once their logs are durable.
	created map[ID]Meta
	// staged: metadata of existing sessions that the next flush writes
	// (StageMeta), with the created sessions', in one batch.
	staged map[ID]Meta
	// scratch holds an append's records after its session's last bytes
	// while they are checked (recordWatch.next): reused, not made at
	// each append.
	scratch []byte
}

// writerState is what the writer knows about a session it appends to.
type writerState struct {
	next          uint64
	cumIn, cumOut uint64
	base          int64   // the log's base time (unix ms)
	size          int64   // bytes on disk (after the last barrier)
	buf           []byte  // encoded records not yet written
	pending       []Event // the same, decoded, for reads
	damaged       error   // the log is damaged before its tail: no appends
	// watch: the log's end, buffered records included, as an append
	// needs it to tell whether its records would make the log hold a
	// record where none starts (recordWatch); spare, the buffers of the
	// watch after an append, swapped in when the append is taken.
	watch, spare recordWatch
}

// newWriterState is the writer's view of a session whose log holds only
// its header.
func newWriterState(base int64) *writerState {
	return &writerState{size: logHeaderSize, base: base, watch: recordWatch{off: logHeaderSize, read: logHeaderSize}}
}

// dirtyMarker exists while a writer may have unflushed or unsynced
// records: its presence at open means the last writer did not close, and
// the logs it touched need their tails checked.
const dirtyMarker = "WRITER-ACTIVE"

// mayBeTorn says whether a writer may have left records half written at
// the end of a log: one is running, or one did not close and no writer has
// repaired its tails since (the dirty marker is there).
func (l *Log) mayBeTorn() bool {
	_, err := l.fs.Stat(filepath.Join(l.dir, dirtyMarker))
	return !errors.Is(err, fs.ErrNotExist)
}

// writerRaced says whether a writer may have been writing to the log of
// id, size bytes when a read found no dirty marker, during that read: the
// marker is there now (it is written before any record), or the log's
// size moved (a writer that finished its records and closed made it
// longer; one repairing a crash's tail, shorter). A break a read found at
// its end is then a record caught half written; otherwise it is damage.
func (l *Log) writerRaced(id ID, size int64) bool {
	if l.mayBeTorn() {
		return true
	}
	fi, err := l.fs.Stat(l.logPath(id))
	return err != nil || fi.Size() != size
}

// noTear is a floor no break is above: every break is damage.
const noTear = math.MaxInt64

// ownTornFloor is, for a writer (own), where in the log of id a break may
// be a record it is writing: from the size its last barrier synced on;
// nowhere in a log it has not appended to. It holds the writer lock, and
// its open repaired the tails a crashed writer left, so no other writer
// can have torn one, whatever marker is there (a crashed writer's stays
// until this one closes after a barrier of its own).
func (l *Log) ownTornFloor(id ID) (floor int64, own bool) {
	if !l.opts.Writable {
		return 0, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if st := l.sessions[id]; st != nil && st.damaged == nil {
		return st.size, true
	}
	return noTear, true
}

// tornFloor is, for a reader, where in the log of id, size bytes, a break
// may be a tail a writer tore: none when no writer is running or crashed;
// else within tailWindow of the end, and not before the size the dirty
// marker names for the log (durable when that writer first wrote to it).
func (l *Log) tornFloor(id ID, size int64) int64 {
	if !l.mayBeTorn() {
		return noTear
	}
	floor := size - tailWindow
	if d, ok := markedSizes(l.fs, filepath.Join(l.dir, dirtyMarker))[id]; ok && d > floor {
		floor = d
	}
	return floor
}

// ErrNoSession: no such session.
var ErrNoSession = errors.New("no such session")

// Open opens the logs in dir. A writer checks and repairs the logs a
// crashed writer left (torn tails, half groups) and says so in Notices.
func Open(dir string, opts Options) (*Log, error) {
	if opts.FS == nil {
		opts.FS = vfs.OS
	}
	if opts.Clock == nil {
		opts.Clock = clock.System
	}
	if opts.BarrierEvery <= 0 || opts.BarrierEvery > maxBarrierEvery {
		opts.BarrierEvery = maxBarrierEvery
	}
	l := &Log{dir: dir, opts: opts, fs: opts.FS, sessions: map[ID]*writerState{}, named: map[ID]bool{}, born: map[ID]bool{}, unfinished: map[ID]bool{}, recorded: map[ID]bool{}, created: map[ID]Meta{}, staged: map[ID]Meta{}}
	if opts.Writable {
		if err := opts.FS.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		if err := l.recoverAfterCrash(); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// removeOrphanLogs deals with the logs that have no metadata. A session
// exists exactly when its .meta does, but a log without one may still hold
// acknowledged events (its .meta deleted by hand, lost to a disk fault or
// a restore): only the logs the crashed writer itself left are removed,
// those whose events were never acknowledged or were being removed:
//   - a log of no event (its header, or less): Create writes the log
//     before the metadata; nothing is lost with it;
//   - a log the marker tags "rm": a Remove had begun (it tags the log
//     before it removes the .meta);
//   - a log the marker tags "new" (a Fork's, a session created in bulk:
//     tagged before their log has records) and does not name with a
//     size: its metadata was never written, so none of its events was
//     acknowledged (a session created in bulk is named with its size by
//     the barrier that writes its metadata, flushLocked; a fork, by the
//     first barrier that appends to it, see mark).
//
// A fork's log is the exception: the marker records, with its "new" tag
// and before its log is written, the metadata the fork is made with
// (markerFork), and again before each later write of it (writeMetas). A
// fork's log without .meta, not tagged "rm", whose header
// names it and whose events run whole to at least its fork point, has
// that metadata written back (a crash after its log was written, before
// or after its .meta was: made or acknowledged, it is whole, and its
// events are copies of its parent's), and is a session again.
//
// Any other is kept where it is, and named in a notice. Recovery runs it,
// so only after a writer that did not close: listing a directory of
// thousands of sessions at every open would cost each append command
// milliseconds.
func (l *Log) removeOrphanLogs(sizes map[ID]int64, tags map[ID]string, forks map[ID]Meta) error {
	ents, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return err
	}
	metas := map[string]bool{}
	for _, e := range ents {
		if name, ok := strings.CutSuffix(e.Name(), ".meta"); ok {
			metas[name] = true
		}
	}
	removed := 0
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".log")
		if !ok || metas[name] {
			continue
		}
		id, err := ParseID(name)
		if err != nil {
			continue // not a session's log: not ours to remove
		}
		path := filepath.Join(l.dir, e.Name())
		fi, err := l.fs.Stat(path)
		if err != nil {
			return fmt.Errorf("session log without metadata %s: %w", path, err)
		}
		fm, recorded := forks[id]
		recorded = recorded && tags[id] != tagRemoving
		if recorded {
			durable, sized := sizes[id]
			if !sized {
				// Not appended to since it was made (its first barrier
				// names it, before it writes its records): its log is
				// the one Fork wrote whole, in one atomic write. A break
				// in it is damage, not a tail the crash tore.
				durable = fi.Size()
			}
			rebuilt, err := l.rebuildForkMeta(fm, durable)
			if err != nil {
				return err
			}
			if rebuilt {
				continue
			}
		}
		// A recorded fork whose log does not read as its own (damaged)
		// may still have been acknowledged: kept, as a log of unknown
		// events is.
		_, sized := sizes[id]
		if fi.Size() > logHeaderSize && tags[id] != tagRemoving && (tags[id] != tagNew || sized || recorded) {
			was := ""
			if recorded {
				// The record goes with this recovery (the marker is
				// rewritten without it): the notice keeps what it says.
				was = fmt.Sprintf("; WRITER-ACTIVE recorded it as the fork of session %s at event %d (title %q), but the log does not read as that fork's (its header, or its copy of the first %d events, damaged): `rook session fork %s --at %d` makes the fork again from its parent", *fm.Parent, *fm.ForkAt, fm.Title, *fm.ForkAt, *fm.Parent, *fm.ForkAt)
			}
			l.Notices = append(l.Notices, fmt.Sprintf("kept %s: an event log with no .meta beside it, holding %d bytes of events that may have been acknowledged, so recovery does not remove it: no session lists them, and gc keeps the objects they name until the log is removed; if its session was not removed, put its .meta back from a backup; if it was, `rook session rm %s` removes the log (`rook doctor` and `rook store verify` list it)%s", path, fi.Size()-logHeaderSize, id, was))
			continue
		}
		if err := l.fs.Remove(path); err != nil {
			return fmt.Errorf("remove session log %s, which a crash left without metadata: %w", path, err)
		}
		removed++
	}
	if removed == 0 {
		return nil
	}
	l.Notices = append(l.Notices, fmt.Sprintf("removed %d session log(s) without metadata that the last writer left when it stopped without closing the store (%s: sessions never created or being removed, no event acknowledged)", removed, vfs.UncleanStop))
	return l.fs.SyncDir(l.dir)
}

// rebuildForkMeta writes back the metadata m of a fork as its writer last
// wrote it (the dirty marker's last record of it) when its log, without .meta, reads as that
// fork's: its header names it, and its events run whole to at least its
// fork point (damage past it, in events appended to the fork, leaves a
// damaged session, as it would with its .meta there). It says whether it
// did; a log that does not read so is left to the rules for any other
// (removeOrphanLogs). Its tail is checked first, as a session's is, from
// durable: the size the marker names it with (a fork appended to since
// it was made, whose tail the crash may have torn), else its whole size.
func (l *Log) rebuildForkMeta(m Meta, durable int64) (bool, error) {
	f, _, err := l.openLog(m.ID)
	if err != nil {
		return false, nil // its header does not read, or does not name it
	}
	f.Close()
	if err := l.repairTail(m.ID, durable); err != nil {
		return false, err
	}
	n, err := l.wholeEvents(m.ID)
	if err != nil || n < *m.ForkAt {
		delete(l.sessions, m.ID) // what repairTail found of a log that stays no session
		return false, nil
	}
	if err := l.writeMeta(m); err != nil {
		return false, fmt.Errorf("rebuild the metadata of fork %s, which a crash left without its .meta: %w", m.ID, err)
	}
	l.Notices = append(l.Notices, fmt.Sprintf("rebuilt %s: the fork %s of session %s at event %d had its event log and no .meta after a crash; its metadata is back as its writer last wrote it (title %q), from the record WRITER-ACTIVE kept of it", l.metaPath(m.ID), m.ID, *m.Parent, *m.ForkAt, m.Title))
	return true, nil
}

// wholeEvents counts the events of id's log that read whole from its
// header on, up to the first that does not (ErrBadRecord).
func (l *Log) wholeEvents(id ID) (uint64, error) {
	f, r, err := l.openLog(id)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	_, at, err := r.walk()
	if errors.Is(err, ErrBadRecord) {
		return at, nil
	}
	if err != nil {
		return 0, err
	}
	last, ok, err := r.last()
	if err != nil || !ok {
		return 0, err
	}
	return last.Seq + 1, nil
}

func (l *Log) logPath(id ID) string  { return filepath.Join(l.dir, id.String()+".log") }
func (l *Log) metaPath(id ID) string { return filepath.Join(l.dir, id.String()+".meta") }

// Create starts a new session and returns its metadata (id and creation
// time filled in). The session is durable when Create returns; in bulk
// (SetBulk), when the next flush does.
func (l *Log) Create(m Meta) (Meta, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return m, err
	}
	now := l.opts.Clock.Now()
	id, err := l.ids.next(now)
	if err != nil {
		return m, err
	}
	m.V, m.ID, m.Created = metaVersion, id, now.UTC().Truncate(time.Millisecond)
	base := m.Created.UnixMilli()
	if l.bulk {
		// The marker first (only its first write: the sessions to name
		// are named by the barrier that writes to them): the next
		// writer's open removes the orphan log a crash leaves.
		if !l.marked {
			if err := l.mark(); err != nil {
				return m, err
			}
		}
		// An import creates sessions by the hundred: it writes the log
		// with no fsync and keeps the metadata, which is what makes a
		// session exist, for the next flush, which syncs the logs first. A
		// crash before leaves an orphan log, as a crash inside a durable
		// Create may; the import, not acknowledged yet, starts over.
		if err := l.createLog(id, base); err != nil {
			return m, fmt.Errorf("create session log: %w", err)
		}
		l.sessions[id] = newWriterState(base)
		l.created[id] = m
		return m, nil
	}
	if err := l.fs.WriteFileAtomic(l.logPath(id), encodeHeader(logHeader{id: id, base: base}), 0o600); err != nil {
		return m, fmt.Errorf("create session log: %w", err)
	}
	if err := l.writeMeta(m); err != nil {
		// Its .meta may be in place (the directory sync after the
		// rename failed): a session, though Create fails, unless removed.
		if rerr := l.removeMetaLeft(id); rerr != nil {
			return m, fmt.Errorf("%w; its metadata was in place, and removing it failed too (%v): the session %s may be there now, or after a crash: `rook session ls` shows it, `rook session rm %s` removes it", err, rerr, id, id)
		}
		return m, err
	}
	l.sessions[id] = newWriterState(base)
	return m, nil
}

// createLog writes a new log's header, unsynced.
func (l *Log) createLog(id ID, base int64) error {
	f, err := l.fs.OpenFile(l.logPath(id), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(encodeHeader(logHeader{id: id, base: base}))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (l *Log) writeMeta(m Meta) error { return l.writeMetas(m) }

// writeMetas writes sessions' metadata files, in batches of at most
// maxBatchFiles (WriteFilesAtomic: each file old or new after a crash).
//
// A fork this writer made (recorded) has its metadata recorded again in
// the dirty marker first, the marker's last record of it the one a
// recovery reads: with its .meta lost, the fork comes back as last
// written, not as made (a title, tags, its ancestor once its parent is
// removed). A fork the metadata no longer says is one is not recorded.
func (l *Log) writeMetas(ms ...Meta) error {
	var recs strings.Builder
	for _, m := range ms {
		if !l.recorded[m.ID] || m.Parent == nil || m.ForkAt == nil {
			continue
		}
		rec, err := markerFork(m)
		if err != nil {
			return err
		}
		recs.WriteString(rec)
	}
	if recs.Len() > 0 { // written, not appended to, were there none
		if err := l.writeMarker(recs.String()); err != nil {
			return err
		}
	}
	for len(ms) > 0 {
		chunk := ms[:min(len(ms), maxBatchFiles)]
		ms = ms[len(chunk):]
		batch := make([]vfs.NamedData, len(chunk))
		for i, m := range chunk {
			b, err := encodeMeta(m)
			if err != nil {
				return err
			}
			batch[i] = vfs.NamedData{Name: filepath.Base(l.metaPath(m.ID)), Data: b}
		}
		if err := l.fs.WriteFilesAtomic(l.dir, batch, 0o600); err != nil {
			return fmt.Errorf("write session metadata: %w", err)
		}
	}
	return nil
}

// Failed is the barrier that failed and left the log refusing every write
// until the store is opened again (nil: none did).
func (l *Log) Failed() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed
}

func (l *Log) writable() error {
	if !l.opts.Writable {
		return errors.New("event log is open read-only")
	}
	if l.failed != nil {
		return fmt.Errorf("an earlier write failed (%w); reopen the store to recover", l.failed)
	}
	return nil
}

// ReadMeta reads a session's metadata.
func (l *Log) ReadMeta(id ID) (Meta, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.metaLocked(id)
}

// metaLocked is ReadMeta for a caller holding l.mu: a metadata not written
// yet (a session created in bulk, a StageMeta) is read as it will be.
func (l *Log) metaLocked(id ID) (Meta, error) {
	if m, ok := l.created[id]; ok {
		return m, nil
	}
	if m, ok := l.staged[id]; ok {
		return m, nil
	}
	return l.readMetaFile(id)
}

// ReadMetaIf is ReadMeta for a caller looking through many sessions for
// a few: want is given the metadata file's bytes, as stored, and only the
// ones it takes are decoded (ok false for the others); decoding is most of
// what reading a store's thousands of metadata costs, past the reads. A
// metadata not written yet (a session created in bulk) is not bytes: it is
// returned, ok, for the caller to look at.
func (l *Log) ReadMetaIf(id ID, want func(raw []byte) bool) (m Meta, ok bool, err error) {
	l.mu.Lock()
	if m, ok := l.created[id]; ok {
		l.mu.Unlock()
		return m, true, nil
	}
	if m, ok := l.staged[id]; ok {
		l.mu.Unlock()
		return m, true, nil
	}
	l.mu.Unlock()
	return l.readMetaFileIf(id, want)
}

// metaBufs are buffers to read metadata files into (vfs.ReadOwnLine):
// listing a store reads every session's, most a few hundred bytes.
var metaBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// readMetaFile reads a session's metadata file.
func (l *Log) readMetaFile(id ID) (Meta, error) {
	m, _, err := l.readMetaFileIf(id, func([]byte) bool { return true })
	return m, err
}

// readMetaFileIf is readMetaFile of a file whose bytes want takes (ok
// false, nothing decoded, for one it does not).
func (l *Log) readMetaFileIf(id ID, want func(raw []byte) bool) (m Meta, ok bool, err error) {
	bp := metaBufs.Get().(*[]byte)
	b, err := vfs.ReadOwnLine(l.fs, l.metaPath(id), *bp)
	if cap(b) > cap(*bp) && cap(b) <= 64<<10 {
		*bp = b[:0] // grown for a longer file (past 64 KiB: let go)
	}
	defer metaBufs.Put(bp) // Unmarshal keeps nothing of b
	if errors.Is(err, fs.ErrNotExist) {
		return Meta{}, false, fmt.Errorf("%w: %s", ErrNoSession, id)
	}
	if err != nil {
		return Meta{}, false, err
	}
	if !want(b) {
		return Meta{}, false, nil
	}
	m, err = decodeMeta(b, id, l.metaPath(id))
	return m, err == nil, err
}

// decodeMeta decodes the metadata file of session id (at path, for
// errors) and checks it names that session.
func decodeMeta(b []byte, id ID, path string) (Meta, error) {
	// Damaged metadata says where it is and what to do: `session rm`
	// removes a session whose metadata does not read.
	damaged := func(why string) error {
		return fmt.Errorf("session %s: metadata unreadable (%s): %s: fix the file, or `rook session rm %s` removes the session", id, path, why, id)
	}
	// A file that fails its check may read right (edited by hand): how
	// to have it read as it is, unchecked (version 1) until its next
	// write checks it again, is part of fixing it.
	uncheckable := func(why string) error {
		return fmt.Errorf("session %s: metadata unreadable (%s): %s: put back a copy from a backup; or, if it reads right (you changed it yourself), make its \"v\" 1 and delete its \"check\" member, and rook reads it unchecked until its next change; or `rook session rm %s` removes the session", id, path, why, id)
	}
	var m Meta
	if err := json.Unmarshal(b, &m); err != nil {
		return Meta{}, damaged(err.Error())
	}
	// A flipped byte in a key ("wo(kspace") or a value still parses, and
	// would silently move the session to another workspace or drop its
	// title: from version 2 on, the check says so. A check there must
	// hold whatever the version reads as (its "v" may be what was
	// damaged), and it is tried before the version is believed: a "v":3
	// that fails its check is damage, not a newer rook.
	switch has, holds := metaChecked(b); {
	case has && !holds:
		return Meta{}, uncheckable("its check does not match its contents: it was changed by hand, or damaged")
	case !has && m.V == metaVersion:
		return Meta{}, uncheckable("it has no check, or its check is damaged")
	}
	if m.V > metaVersion {
		return Meta{}, fmt.Errorf("session %s: metadata version %d is newer than this rook: upgrade rook", id, m.V)
	}
	// The file's name is the session: metadata naming another (a copy
	// under the wrong name, an id missing) would make this session read
	// as that one, its events and counts another log's.
	if m.ID == (ID{}) {
		return Meta{}, damaged("it has no id")
	}
	if m.ID != id {
		return Meta{}, damaged(fmt.Sprintf("it names session %s", m.ID))
	}
	return m, nil
}

// UpdateMeta rewrites a session's metadata (title, tags...).
func (l *Log) UpdateMeta(m Meta) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return err
	}
	if _, ok := l.staged[m.ID]; ok {
		// m may carry what was staged (ReadMeta reads it: how much of its
		// source the session holds): written now, it could name events a
		// crash can still take back. The flush makes them durable first.
		if err := l.flushLocked(); err != nil {
			return err
		}
	}
	m, write, err := l.stageMeta(m)
	if err != nil || !write {
		return err
	}
	return l.writeMeta(m)
}

// StageMeta is UpdateMeta deferred to the next flush (a barrier, or
// Flush), which writes it once the events appended before it are durable,
// in one batch with the other metadata it writes: for a writer that
// records in metadata how much it has written (an import, of its source).
// A session created in bulk and not flushed yet has its metadata written
// once, as staged, rather than once when created and again as updated.
func (l *Log) StageMeta(m Meta) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return err
	}
	m, write, err := l.stageMeta(m)
	if err == nil && write {
		l.staged[m.ID] = m
	}
	return err
}

// stageMeta is the first half of a metadata update, under l.mu: a session
// created in bulk just has its pending metadata replaced (the next flush
// writes it); for any other, write says the file is to be written, once
// it is known to exist. A metadata staged before is replaced either way.
func (l *Log) stageMeta(m Meta) (_ Meta, write bool, err error) {
	m.V = metaVersion
	if _, ok := l.created[m.ID]; ok {
		l.created[m.ID] = m
		return m, false, nil
	}
	if _, ok := l.staged[m.ID]; ok {
		delete(l.staged, m.ID)
		return m, true, nil // its file exists: a flush since would have written it
	}
	if _, err := l.readMetaFile(m.ID); err != nil {
		return m, false, err
	}
	return m, true, nil
}

// openSession checks that a session exists (its metadata) and opens its
// log for reading; the caller closes f.
func (l *Log) openSession(id ID) (f vfs.File, r *reader, err error) {
	if _, err := l.ReadMeta(id); err != nil {
		return nil, nil, err
	}
	return l.openListed(id)
}

// openListed is openLog for a reader of a session whose metadata it has
// read (Read, Summary, SummaryOf, ReadOf, TokensBefore), l.mu not held:
// a log gone since, with its metadata, is the session removed meanwhile
// (`session rm` or a prune in another rook, between the two reads:
// readers take no lock), said "no such session", as ReadMeta says it of a
// session that is not there, not as the raw "open .../ID.log: file does
// not exist", which reads as a fault of the store. Every reading command
// gets it here, in one place.
func (l *Log) openListed(id ID) (f vfs.File, r *reader, err error) {
	f, r, err = l.openLog(id)
	if err != nil && errors.Is(err, fs.ErrNotExist) && l.RemovedSince(id, err) {
		return nil, nil, fmt.Errorf("%w: %s (removed while it was read)", ErrNoSession, id)
	}
	return f, r, err
}

// openLog opens a session's log for reading; the caller closes f.
func (l *Log) openLog(id ID) (f vfs.File, r *reader, err error) {
	f, err = vfs.OpenOwn(l.fs, l.logPath(id))
	if err != nil {
		return nil, nil, fmt.Errorf("session %s: %w", id, err)
	}
	if r, err = newReader(f, id); err != nil {
		f.Close()
		if errors.Is(err, ErrBadRecord) {
			err = &HeaderError{ID: id, Path: l.logPath(id), Err: err}
		}
		return nil, nil, err
	}
	return f, r, nil
}

// HeaderError is a session's log whose header does not read (a file
// zeroed or cut by a crash, or overwritten): none of its events can be
// read, and nothing rebuilds them from the log, so it says what can.
type HeaderError struct {
	ID   ID
	Path string // the log file
	Err  error  // wraps ErrBadRecord
}

func (e *HeaderError) Error() string {
	return fmt.Sprintf("%v: the log's header does not read, so none of its events can be: put %s back from a backup, or `rook session rm %s` removes the session", e.Err, e.Path, e.ID)
}

func (e *HeaderError) Unwrap() error { return e.Err }

// state loads the writer's view of a session.
func (l *Log) state(id ID) (*writerState, error) {
	if st, ok := l.sessions[id]; ok {
		return st, nil
	}
	if _, err := l.metaLocked(id); err != nil {
		return nil, err
	}
	f, r, err := l.openLog(id)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st := &writerState{size: r.size, base: r.base}
	// A reader of the whole session (show, export, verify, gc's mark)
	// goes from its start and stops at a break: after one anywhere, deep
	// in a long log as well as at its end, an appended event would be
	// acknowledged yet never reached. So the records must run whole from
	// the header to the end: their lengths and checksums are walked once
	// per writer and session (0.1 s for a log of a million events, 50 MB;
	// 1 ms for 10,000).
	if stop, at, err := r.walk(); err != nil {
		if !errors.Is(err, ErrBadRecord) {
			return nil, err
		}
		st.damaged = damagedLogError(id, stop, at, err)
		l.sessions[id] = st
		return st, nil
	}
	// The log's end, which an append's records are checked after.
	from := max(int64(logHeaderSize), r.size-maxCandidateSize)
	tail, err := r.chunk(from, int(r.size-from))
	if err != nil {
		return nil, err
	}
	st.watch = watchFrom(tail, from, r.base)
	last, ok, err := r.last()
	if err != nil {
		return nil, err
	}
	if ok {
		if last.More {
			return nil, fmt.Errorf("session %s ends inside an event group: reopen the store to repair it", id)
		}
		if st.cumIn, st.cumOut, err = r.totals(last); err != nil {
			return nil, err
		}
		st.next = last.Seq + 1
	}
	l.sessions[id] = st
	return st, nil
}

// Append adds events to a session as one atomic group: after a crash either
// all of them are in the log or none is. It assigns their seqs (dense, from
// the session's next) and returns the first. Each event's Seq, cumulative
// tokens and More are set by Append; a zero Time is set to now. An append
// whose records would make the log hold a whole record where none starts
// (a label chosen so: recordWatch) is refused, nothing of it taken, with a
// *LabelRecordError.
func (l *Log) Append(id ID, evs ...Event) (uint64, error) {
	if len(evs) == 0 || len(evs) > maxGroup {
		return 0, fmt.Errorf("append takes 1 to %d events, not %d", maxGroup, len(evs))
	}
	for _, ev := range evs {
		if !ev.Kind.Valid() {
			return 0, fmt.Errorf("unknown event kind %d", ev.Kind)
		}
		if len(ev.Label) > MaxLabel {
			return 0, fmt.Errorf("label of %d bytes is longer than %d", len(ev.Label), MaxLabel)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return 0, err
	}
	st, err := l.state(id)
	if err != nil {
		return 0, err
	}
	if st.damaged != nil {
		return 0, st.damaged
	}
	// The session's token totals are sums kept in the records: a count so
	// large that they would wrap around (and read back as a small one) is
	// refused before anything is buffered.
	in, out := st.cumIn, st.cumOut
	for _, ev := range evs {
		if in+ev.TokensIn < in || out+ev.TokensOut < out {
			return 0, fmt.Errorf("session %s: tokens of %d in, %d out would overflow the session's totals (%d in, %d out)", id, ev.TokensIn, ev.TokensOut, st.cumIn, st.cumOut)
		}
		in, out = in+ev.TokensIn, out+ev.TokensOut
	}
	// The records are encoded after the buffered ones and checked
	// against the log's end (recordWatch) before anything is taken: a
	// refused append leaves the session as it was.
	first := st.next
	barrier := false
	now := l.opts.Clock.Now()
	before := len(st.buf)
	var startsOf [maxGroup]int
	starts := startsOf[:0]
	next, cumIn, cumOut := st.next, st.cumIn, st.cumOut
	var own [maxGroup]Event // the caller's events are left as they were given
	evs = own[:copy(own[:], evs)]
	for i := range evs {
		ev := &evs[i]
		ev.Seq = next
		if ev.Time.IsZero() {
			ev.Time = now
		}
		ev.Time = ev.Time.Truncate(time.Millisecond)
		cumIn += ev.TokensIn
		cumOut += ev.TokensOut
		ev.More = i < len(evs)-1
		starts = append(starts, len(st.buf)-before)
		st.buf = appendRecord(st.buf, &record{Event: *ev, CumIn: cumIn, CumOut: cumOut}, st.base)
		next++
		barrier = barrier || ev.Kind.Barrier()
	}
	end, scratch := st.watch.next(l.scratch, st.buf[before:], starts, st.base, true, &st.spare)
	l.scratch = scratch
	if end >= 0 {
		st.buf = st.buf[:before]
		i := len(starts) - 1
		for starts[i] >= end {
			i--
		}
		return 0, &LabelRecordError{Session: id, Index: i, Count: len(evs), Seq: first + uint64(i)}
	}
	st.watch, st.spare = st.spare, st.watch
	st.pending = append(st.pending, evs...)
	st.next, st.cumIn, st.cumOut = next, cumIn, cumOut
	l.unflushed += len(evs)
	l.unflushedSize += len(st.buf) - before
	if l.bulk {
		barrier = l.unflushedSize >= bulkBarrierBytes
	} else {
		barrier = barrier || l.unflushed >= l.opts.BarrierEvery
	}
	if barrier {
		if err := l.flushLocked(); err != nil {
			return 0, err
		}
	}
	return first, nil
}

// Unflushed is how many appended events a crash could still lose.
func (l *Log) Unflushed() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.unflushed
}

// Flush is the explicit barrier (the end of a turn): after it returns, a
// crash loses no event appended before it.
func (l *Log) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.opts.Writable {
		return nil
	}
	if err := l.writable(); err != nil {
		return err
	}
	return l.flushLocked()
}

// flushLocked is the barrier: it writes the buffered records of every
// session and syncs them (side by side: vfs.SyncFiles), then writes the
// metadata of the sessions created in bulk, and the staged metadata, in
// one batch. The metadata comes last, so that none ever names events, or a
// log, that a crash could still take back.
func (l *Log) flushLocked() error {
	ids := make([]ID, 0, len(l.sessions))
	for id, st := range l.sessions {
		if _, isNew := l.created[id]; len(st.buf) > 0 || isNew {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 && len(l.staged) == 0 {
		l.unflushed, l.unflushedSize = 0, 0
		return nil
	}
	fail := func(err error) error {
		l.failed = err
		return err
	}
	if l.unflushed > 0 {
		if l.opts.BeforeBarrier != nil {
			if err := l.opts.BeforeBarrier(); err != nil {
				return fail(fmt.Errorf("sync event bodies: %w", err))
			}
		}
		if err := l.mark(); err != nil {
			return fail(err)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i].String() < ids[j].String() })
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), maxBatchFiles)]
		ids = ids[len(chunk):]
		if err := l.writeTails(chunk); err != nil {
			return fail(err)
		}
	}
	l.unflushed, l.unflushedSize = 0, 0
	if len(l.created) > 0 {
		// The new logs' names, before the metadata that names them.
		if err := l.fs.SyncDir(l.dir); err != nil {
			return fail(fmt.Errorf("sync the event log directory: %w", err))
		}
	}
	metas := make([]Meta, 0, len(l.created)+len(l.staged))
	for _, m := range l.created {
		metas = append(metas, m)
	}
	for _, m := range l.staged {
		metas = append(metas, m)
	}
	sort.Slice(metas, func(i, j int) bool { return metas[i].ID.String() < metas[j].ID.String() })
	// A failure fails the writer, as any barrier's does: the events are
	// durable, but a session created in bulk may not exist, and whoever
	// appended them must not be told they are in.
	if err := l.writeMetas(metas...); err != nil {
		return fail(err)
	}
	// The sessions tagged "new" whose metadata is now written are named
	// with their sizes: acknowledged from here on, their logs must not
	// read to a recovery as never made (its .meta lost, a log tagged "new"
	// and named with no size is removed), whether or not a later barrier
	// appends to them.
	var names strings.Builder
	var born []ID
	for id := range l.created {
		if st := l.sessions[id]; st != nil && l.born[id] && !l.named[id] {
			names.WriteString(markerLine(id, st.size))
			born = append(born, id)
		}
	}
	if len(born) > 0 {
		if err := l.writeMarker(names.String()); err != nil {
			return fail(err)
		}
	}
	for _, id := range born {
		l.named[id] = true
	}
	clear(l.created)
	clear(l.staged)
	return nil
}

// mark writes the dirty marker, the first time in a writer's life: from
// then on a crash makes the next writer's open check the logs touched
// since. The marker also names each session the barrier about to run
// appends to, with the size of its log, durable and acknowledged: a break
// the next open finds before that size is damage, not a torn tail, however
// near the end (a short log is all within tailWindow). A session a
// long-lived writer (an import, an MCP server) first appends to after its
// first barrier is named then: its line is appended to the marker and
// synced before the barrier writes its records, one fsync of a small file
// at the first barrier of each such session (an append command makes one
// barrier, and names its session in the marker's first write). A session
// whose log holds only its header, or that this writer created in bulk
// (nothing in it acknowledged before the barrier that writes its
// metadata), needs no name until it has more.
//
// Appending moves the marker's modification time, from which recovery
// checks the logs modified since: a log the writer last wrote before that
// was synced by its barrier, before the next barrier appended, and has no
// torn tail.
//
// A session created in bulk that the barrier writes records to is tagged
// "new" (see tagNew); the barrier that writes its metadata names it with
// its size (flushLocked). A fork, tagged "new" when it is made, is named
// with its size at the first barrier that appends to it, whatever its
// size.
func (l *Log) mark() error {
	var names strings.Builder
	var ids, born []ID
	for id, st := range l.sessions {
		_, isNew := l.created[id]
		switch {
		case len(st.buf) == 0:
		case isNew && !l.born[id]:
			names.WriteString(markerTag(id, tagNew))
			born = append(born, id)
		case !isNew && (st.size > logHeaderSize || l.born[id]) && !l.named[id]:
			names.WriteString(markerLine(id, st.size))
			ids = append(ids, id)
		}
	}
	if err := l.writeMarker(names.String()); err != nil {
		return err
	}
	for _, id := range ids {
		l.named[id] = true
	}
	for _, id := range born {
		l.born[id] = true
	}
	return nil
}

// writeMarker writes the dirty marker with lines, the first time in a
// writer's life; after, appends lines to it (if any) and syncs it.
func (l *Log) writeMarker(lines string) error {
	path := filepath.Join(l.dir, dirtyMarker)
	if !l.marked {
		data := l.opts.Clock.Now().UTC().Format(time.RFC3339Nano) + "\n" + lines
		if err := l.fs.WriteFileAtomic(path, []byte(data), 0o600); err != nil {
			return fmt.Errorf("mark the event log in use: %w", err)
		}
		l.marked = true
		return nil
	}
	if lines == "" {
		return nil
	}
	if l.markerCut {
		lines = "\n" + lines // readers pass over an empty line
	}
	f, err := l.fs.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err == nil {
		_, err = io.WriteString(f, lines)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	l.markerCut = err != nil
	if err != nil {
		return fmt.Errorf("name sessions in the event log's dirty marker (%s): %w", path, err)
	}
	return nil
}

// The tags of the dirty marker's tag lines (markerTag).
const (
	// tagNew: the session's log is written before its metadata (a Fork, a
	// session created in bulk): until the metadata is, nothing in it is
	// acknowledged.
	tagNew = "new"
	// tagRemoving: a Remove has begun: the session is going.
	tagRemoving = "rm"
	// tagFork: the line records a fork's metadata (markerFork), written
	// with its "new" tag before its log.
	tagFork = "fork"
)

// markerFork is a dirty marker's line recording the metadata a Fork is
// about to write (or a later write of it, writeMetas: the last line read
// is the one kept): its id, "fork", the metadata's JSON in unpadded
// base64url (no spaces, so the line splits in four fields) and a
// checksum of the three. A fork's log, tagged "new", holds copies of its
// parent's events only, so nothing there tells one made (its .meta
// written, then lost before the recovery after its writer's crash) from
// one never made: with this line the recovery rebuilds the .meta of the
// first rather than remove its log (removeOrphanLogs). A reader of an
// older rook passes it over (it has four fields).
func markerFork(m Meta) (string, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	s := fmt.Sprintf("%s %s %s", m.ID, tagFork, base64.RawURLEncoding.EncodeToString(b))
	return fmt.Sprintf("%s %08x\n", s, crc32.Checksum([]byte(s), castagnoli)), nil
}

// parseMarkerFork reads a markerFork line (f its fields): the metadata
// it records, if its checksum holds and the metadata is a fork's under
// the line's id.
func parseMarkerFork(f []string, line string) (Meta, bool) {
	id, err := ParseID(f[0])
	if err != nil {
		return Meta{}, false
	}
	s := strings.Join(f[:3], " ")
	if fmt.Sprintf("%s %08x", s, crc32.Checksum([]byte(s), castagnoli)) != line {
		return Meta{}, false
	}
	b, err := base64.RawURLEncoding.DecodeString(f[2])
	if err != nil {
		return Meta{}, false
	}
	var m Meta
	if json.Unmarshal(b, &m) != nil || m.ID != id || m.Parent == nil || m.ForkAt == nil || m.V < 1 || m.V > metaVersion {
		return Meta{}, false
	}
	return m, true
}

// markerTag is a dirty marker's line tagging a session: its id, the tag
// and a checksum of the two. A reader of an older rook passes it over (its
// second field is not a size).
func markerTag(id ID, tag string) string {
	s := fmt.Sprintf("%s %s", id, tag)
	return fmt.Sprintf("%s %08x\n", s, crc32.Checksum([]byte(s), castagnoli))
}

// tagNew tags a session this writer is about to write the log of, ahead
// of its metadata, in the dirty marker: the next writer's open removes its
// log if a crash leaves it without metadata. more are lines written with
// the tag (a fork's markerFork).
func (l *Log) tagNew(id ID, more string) error {
	if err := l.writeMarker(markerTag(id, tagNew) + more); err != nil {
		return err
	}
	l.born[id] = true
	return nil
}

// markerLine is a session's line in the dirty marker: its id, its log's
// durable size, and a checksum of the two. A line a crash tore or garbled
// before its fsync (an append, see mark) must not pass for a size: one
// too large would report a whole log as damaged.
func markerLine(id ID, size int64) string {
	s := fmt.Sprintf("%s %d", id, size)
	return fmt.Sprintf("%s %08x\n", s, crc32.Checksum([]byte(s), castagnoli))
}

// maxBatchFiles bounds the files a barrier holds open at once: the logs it
// syncs side by side, the metadata it writes in one batch. An import of
// thousands of small sessions would otherwise open thousands of files.
const maxBatchFiles = 64

// writeTails appends the buffered records of the sessions ids and syncs
// them side by side.
func (l *Log) writeTails(ids []ID) error {
	files := make([]vfs.File, 0, len(ids))
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for _, id := range ids {
		f, err := l.writeTail(id, l.sessions[id])
		if err != nil {
			return err
		}
		files = append(files, f)
	}
	if err := l.fs.SyncFiles(files); err != nil {
		return fmt.Errorf("sync session logs: %w", err)
	}
	for _, id := range ids {
		st := l.sessions[id]
		st.size += int64(len(st.buf))
		st.buf, st.pending = nil, nil
	}
	return nil
}

// SetBulk switches a writer to bulk appends (an import) and back. In bulk,
// a barrier comes every 256 KiB of records instead of every BarrierEvery
// events: what a crash can tear stays within tailWindow, and an import,
// which a crash only makes resume, syncs a few times per MiB of events
// rather than every 256 of them. Events of a barrier kind (checkpoint,
// compaction) make none of their own: nothing written in bulk is
// acknowledged before the writer's own flush, and a barrier mid-way would
// write out the store's bulk blocks half full (an imported transcript's
// compact boundaries took the corpus from 1.72 to 1.86 MiB). Sessions
// created in bulk become durable with the next barrier too.
func (l *Log) SetBulk(on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.bulk = on
}

// writeTail appends a session's buffered records and returns its log,
// open, for the caller to sync and close.
func (l *Log) writeTail(id ID, st *writerState) (vfs.File, error) {
	f, err := l.fs.OpenFile(l.logPath(id), os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("session %s: open log: %w", id, err)
	}
	end, err := f.Seek(0, io.SeekEnd)
	if err == nil && end != st.size {
		err = fmt.Errorf("session %s: log is %d bytes, expected %d: another writer?", id, end, st.size)
	}
	if err == nil && len(st.buf) > 0 {
		if _, err = f.Write(st.buf); err != nil {
			err = fmt.Errorf("session %s: write log: %w", id, err)
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Close flushes, and clears the dirty marker: the next writer need not
// check any tail. UpdateMeta still works after it, unstaged: a metadata
// file is written whole and renamed into place, needing no marker (agent's
// Rook.Close makes its last write so, once the store's index is written).
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.opts.Writable {
		return nil
	}
	if l.failed != nil {
		return l.failed
	}
	if err := l.flushLocked(); err != nil {
		return err
	}
	// A removal or a fork that did not finish keeps the marker: the next
	// writer's open removes what it left.
	//
	// Everything this writer acknowledged is durable by now: a marker
	// that stays (its removal, or the directory sync that makes it
	// durable, failing) only has the next writer's open check the tails
	// of the logs this one wrote, as after a crash, and find them whole.
	// So it is a notice, not an error: a command that failed here after
	// its event or fork was durable was run again by a script, and made
	// it twice.
	if l.marked && len(l.unfinished) == 0 {
		mpath := filepath.Join(l.dir, dirtyMarker)
		if err := l.fs.Remove(mpath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			l.Notices = append(l.Notices, fmt.Sprintf("the event logs' dirty marker %s is left in place (removing it failed: %v): what was written is durable; the next writer's open checks the tails of the logs written, as after a crash", mpath, err))
			return nil
		}
		if err := l.fs.SyncDir(l.dir); err != nil {
			l.Notices = append(l.Notices, fmt.Sprintf("the removal of the event logs' dirty marker %s may not be durable (syncing %s failed: %v): what was written is durable; after a crash the next writer's open checks the tails of the logs written", mpath, l.dir, err))
		}
		l.marked = false
		clear(l.named)
		clear(l.born)
		clear(l.recorded)
	}
	return nil
}

// Children are the sessions whose parent is id (its forks, its
// subagents' sessions), oldest first, by their metadata alone: every
// session's is read once, and one that does not read is passed over (a
// damaged session is not known to be a child).
func (l *Log) Children(id ID) ([]Meta, error) {
	ids, err := l.IDs()
	if err != nil {
		return nil, err
	}
	var out []Meta
	for _, other := range ids {
		if other == id {
			continue
		}
		if m, err := l.ReadMeta(other); err == nil && m.Parent != nil && *m.Parent == id {
			out = append(out, m)
		}
	}
	return out, nil
}

// IDs lists every session, oldest first.
func (l *Log) IDs() ([]ID, error) {
	// Sessions created in bulk exist for this writer before their
	// metadata is written. Taken before the directory is read: a flush in
	// between moves a session from the one to the other, never out of both.
	var out []ID
	l.mu.Lock()
	for id := range l.created {
		out = append(out, id)
	}
	l.mu.Unlock()
	ents, err := l.fs.ReadDir(l.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".meta")
		if !ok {
			continue
		}
		if id, err := ParseID(name); err == nil {
			out = append(out, id)
		}
	}
	slices.SortFunc(out, ID.Compare)
	return slices.Compact(out), nil
}

// mtimeSlack is how far a file's modification time may lag behind the
// clock's time of the write that set it: file systems keep times to a
// second or two (FAT: 2 s), and Linux stamps them from a clock that may be
// a tick behind the one time.Now reads.
const mtimeSlack = 2 * time.Second

// WrittenBy is a time by which the session's log had last been written:
// its file's modification time, plus mtimeSlack. No event this Log's
// clock stamped as it appended it, and not the session's creation, is
// later (an event given its own time, an imported line's, may be). ok is
// false where the file's time cannot say that: a file system other than
// the OS's (MemFS keeps a logical clock), a clock other than the system's
// (a test's), events or metadata this writer has not written yet, a log
// that does not stat.
func (l *Log) WrittenBy(id ID) (t time.Time, ok bool) {
	if l.fs != vfs.OS || l.opts.Clock != clock.System {
		return time.Time{}, false
	}
	l.mu.Lock()
	_, made := l.created[id]
	_, staged := l.staged[id]
	st := l.sessions[id]
	unwritten := made || staged || (st != nil && len(st.pending) > 0)
	l.mu.Unlock()
	if unwritten {
		return time.Time{}, false
	}
	fi, err := l.fs.Stat(l.logPath(id))
	if err != nil {
		return time.Time{}, false
	}
	return fi.ModTime().Add(mtimeSlack), true
}

// Summary reads a session's metadata and the totals its last record holds.
// Past the metadata it costs one small read of the log's tail (the last
// record and the totals one together), whatever the session's length.
func (l *Log) Summary(id ID) (Summary, error) {
	m, err := l.ReadMeta(id)
	if err != nil {
		return Summary{}, err
	}
	return l.SummaryOf(m)
}

// SummaryOf is Summary for a session whose metadata the caller has read
// already (to pick sessions by it): the log's read only.
func (l *Log) SummaryOf(m Meta) (Summary, error) {
	id := m.ID
	s := Summary{Meta: m, Updated: m.Created}
	l.mu.Lock()
	st := l.sessions[id]
	if st != nil && len(st.pending) > 0 {
		last := st.pending[len(st.pending)-1]
		s.Events, s.TokensIn, s.TokensOut, s.Updated = last.Seq+1, st.cumIn, st.cumOut, last.Time
		l.mu.Unlock()
		s.leaveOutCopied()
		return s, nil
	}
	l.mu.Unlock()
	// Taken before the file's size, as read takes it.
	floor, own := l.ownTornFloor(id)
	f, r, err := l.openListed(id)
	if err != nil {
		return s, err
	}
	defer f.Close()
	// The last record and the totals one (at most cumEvery-1 back) are
	// near the end: read at once (a short log is already, whole). Their
	// labels are not wanted.
	r.noLabels = true
	if err := r.holdTail(wholeLog); err != nil {
		return s, err
	}
	last, ok, brk, err := r.lastEnd()
	if err != nil {
		return s, err
	}
	floorAt := l.floorAt(id, r, floor, own)
	// Bytes after the last whole record are a tail a writer tore (or is
	// writing) only past the torn floor; before it (with no writer
	// running or crashed, anywhere) they are damage, as read finds them:
	// a disk or a restore that cut the log short.
	if brk != nil && brk.off < floorAt() && !own && floorAt() > r.size && l.writerRaced(id, r.size) {
		// A writer started while this read (as read checks): the break
		// may be its record half written when the size was taken.
		floorAt = func() int64 { return r.size - tailWindow }
	}
	if brk != nil && brk.off < floorAt() {
		at := uint64(0)
		if ok {
			at = last.Seq + 1
		}
		return s, &DamagedAtError{At: at, Err: fmt.Errorf("session %s: %w at seq %d (offset %d): %s", id, brk.why, at, brk.off, damagedHint(id, fmt.Sprint(at)))}
	}
	// The session ends where read ends it: at a break past the torn
	// floor (last passes over breaks, as damage; totals meets one before
	// last), and before a group unfinished there (tornGroup). Each turn
	// ends the session earlier.
	if ok && last.More && floorAt() <= r.size {
		last, ok, err = r.before(last.Seq+1, floorAt())
	}
	for ok && err == nil {
		s.TokensIn, s.TokensOut, err = r.totals(last)
		var d *DamagedTotalsError
		if err == nil || !errors.As(err, &d) || d.stop < floorAt() {
			break
		}
		last, ok, err = r.before(d.At, floorAt())
	}
	if err != nil {
		return s, err
	}
	if ok {
		s.Events, s.Updated = last.Seq+1, last.Time
	}
	s.leaveOutCopied()
	return s, nil
}

// leaveOutCopied takes the tokens an imported session counted for lines
// its parent spent (Source.CopiedIn, CopiedOut) out of its totals.
func (s *Summary) leaveOutCopied() {
	in, out := s.Meta.Copied()
	s.TokensIn -= min(in, s.TokensIn)
	s.TokensOut -= min(out, s.TokensOut)
}

// TokensBefore returns the tokens of a session's events [0, seq), read
// from its log file: what a fork's copy of its parent's events (its first
// ForkAt, written whole when the fork is made) holds, from the running
// totals its records keep, without summing every event.
func (l *Log) TokensBefore(id ID, seq uint64) (in, out uint64, err error) {
	if seq == 0 {
		return 0, 0, nil
	}
	f, r, err := l.openListed(id)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	r.noLabels = true
	return r.totals(Event{Seq: seq - 1})
}

// Sessions summarises every session, oldest first.
//
// A session whose metadata or log does not read is left out, and its error
// is in the *UnreadableError returned beside the others: a caller that
// lists them can list the rest and say which did not read; one that
// decides from all of them (retention) treats it as any error.
func (l *Log) Sessions() ([]Summary, error) {
	out, _, err := l.SessionsWhere(nil)
	return out, err
}

// SessionsWhere is Sessions of the sessions whose metadata keep takes (all
// of them when keep is nil): every session's metadata is read, but only
// the logs of those kept, which is what listing one workspace of a store
// of thousands costs. passed counts the sessions whose metadata read and
// keep did not take. A session whose metadata does not read is in the
// *UnreadableError whatever keep would say (what it would be kept by may
// be what does not read); one whose log does not read, only if kept.
func (l *Log) SessionsWhere(keep func(Meta) bool) (out []Summary, passed int, err error) {
	ids, err := l.IDs()
	if err != nil {
		return nil, 0, err
	}
	if keep == nil {
		out = make([]Summary, 0, len(ids))
	}
	var bad UnreadableError
	for _, id := range ids {
		m, err := l.ReadMeta(id)
		if err == nil && keep != nil && !keep(m) {
			passed++
			continue
		}
		var s Summary
		if err == nil {
			s, err = l.SummaryOf(m)
		}
		if err != nil && l.RemovedSince(id, err) {
			continue
		}
		if err != nil {
			bad.IDs, bad.Errs = append(bad.IDs, id), append(bad.Errs, err)
			continue
		}
		out = append(out, s)
	}
	if len(bad.Errs) > 0 {
		return out, passed, &bad
	}
	return out, passed, nil
}

// RemovedSince says whether err, a session's that was listed, is that it
// was removed since (`session rm` in another process: its metadata goes
// first, then its log), not that it does not read.
func (l *Log) RemovedSince(id ID, err error) bool {
	if !errors.Is(err, ErrNoSession) && !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	l.mu.Lock()
	_, made := l.created[id] // its metadata not written yet
	l.mu.Unlock()
	if made {
		return false
	}
	_, serr := l.fs.Stat(l.metaPath(id))
	return errors.Is(serr, fs.ErrNotExist)
}

// UnreadableError is the sessions Sessions left out, each with the error
// its metadata or log gave.
type UnreadableError struct {
	IDs  []ID
	Errs []error
}

func (e *UnreadableError) Error() string {
	if len(e.Errs) == 1 {
		return e.Errs[0].Error()
	}
	return fmt.Sprintf("%v (and %d other session(s) that do not read)", e.Errs[0], len(e.Errs)-1)
}

func (e *UnreadableError) Unwrap() []error { return e.Errs }

// Read returns up to limit events of a session from seq `from` on, in
// order. It costs O(limit) plus a bisection of the file, not O(session).
// At damage (ErrBadRecord) it returns the events before it with the error.
func (l *Log) Read(id ID, from uint64, limit int) ([]Event, error) {
	return l.read(id, from, limit, l.openSession)
}

// ReadWithoutMeta is Read of the event log of id whether or not a .meta is
// beside it: a log whose .meta was lost is kept (its events may have been
// acknowledged; with its .meta put back it is a session again), and gc
// keeps what its events name.
func (l *Log) ReadWithoutMeta(id ID, from uint64, limit int) ([]Event, error) {
	return l.read(id, from, limit, l.openLog)
}

// ReadOf is Read for a session whose metadata the caller has read already
// (as SummaryOf): the log's read only, not the metadata again for each
// page (a search reads every session's pages).
func (l *Log) ReadOf(m Meta, from uint64, limit int) ([]Event, error) {
	return l.read(m.ID, from, limit, l.openListed)
}

// read is Read, the log opened by open (openSession, or openLog).
func (l *Log) read(id ID, from uint64, limit int, open func(ID) (vfs.File, *reader, error)) ([]Event, error) {
	if limit <= 0 {
		return nil, nil
	}
	// In the writer, taken before the file's size is: a break from the
	// size its last barrier synced on is its own flush under way.
	floor, own := l.ownTornFloor(id)
	f, r, err := open(id)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	floorAt := l.floorAt(id, r, floor, own)
	out, err := r.read(from, limit, floorAt)
	if err != nil && !own && floorAt() > r.size && l.writerRaced(id, r.size) {
		// A writer started while this read: it marks before it writes,
		// so the break may be its record half written when the size was
		// taken. A torn tail, as with the marker.
		out, err = r.read(from, limit, func() int64 { return r.size - tailWindow })
	}
	if err != nil {
		// Damage: the events before it, with the error.
		return out, err
	}
	// The writer's own buffered events follow what is on disk.
	l.mu.Lock()
	if st := l.sessions[id]; st != nil {
		for _, ev := range st.pending {
			if len(out) >= limit {
				break
			}
			if ev.Seq >= from && (len(out) == 0 || ev.Seq == out[len(out)-1].Seq+1) {
				out = append(out, ev)
			}
		}
	}
	l.mu.Unlock()
	return out, nil
}

// floorAt is where a break in the log of id, read by r, may be a tail a
// writer tore or is writing: floor, for the writer (own, ownTornFloor,
// taken before r's size was); for a reader, tornFloor. That takes a stat
// of the dirty marker, and with a writer running, a read of it: a tenth
// of a small read's time. Only a break (or a page ending inside a group)
// needs it, so it is taken then (a writer that started or closed
// meanwhile is caught by read, as one that did so after the file's size
// was taken always was).
func (l *Log) floorAt(id ID, r *reader, floor int64, own bool) func() int64 {
	if own {
		return func() int64 { return floor }
	}
	known := false
	return func() int64 {
		if !known {
			floor, known = l.tornFloor(id, r.size), true
		}
		return floor
	}
}

// ReadBefore returns up to limit events with seq < before, in order: the
// page that precedes `before`.
func (l *Log) ReadBefore(id ID, before uint64, limit int) ([]Event, error) {
	if limit <= 0 || before == 0 {
		return nil, nil
	}
	from := uint64(0)
	if before > uint64(limit) {
		from = before - uint64(limit)
	}
	return l.Read(id, from, int(before-from))
}

// Fork makes a new session holding exactly the events [0, at) of parent,
// with the same seqs and bodies: it copies records, never content. m gives
// the new session's title and tags; workspace and tags default to the
// parent's.
//
// The fork is acknowledged when Fork returns: a crash after its log is
// written leaves it whole after the next writer's open, its .meta lost
// or not (rebuilt from the dirty marker's record of it, markerFork); a
// crash before, or a Fork that fails before its metadata is written,
// leaves nothing of it once that open has run.
func (l *Log) Fork(parent ID, at uint64, m Meta) (Meta, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return m, err
	}
	pm, err := l.metaLocked(parent)
	if err != nil {
		return m, err
	}
	if err := l.flushLocked(); err != nil {
		return m, err
	}
	f, r, err := l.openLog(parent)
	if err != nil {
		return m, err
	}
	defer f.Close()
	last, ok, err := r.last()
	if err != nil {
		return m, err
	}
	count := uint64(0)
	if ok {
		count = last.Seq + 1
	}
	if at > count && count == 0 {
		return m, fmt.Errorf("cannot fork at %d: session %s has no events (only --at 0 forks it, into another empty session)", at, parent)
	}
	if at > count {
		return m, fmt.Errorf("cannot fork at %d: session %s has %d events (fork at 0 to %d)", at, parent, count, count)
	}
	end := int64(logHeaderSize)
	var tail *record
	if at > 0 {
		off, rec, err := r.find(at - 1)
		if err != nil {
			return m, err
		}
		end = off + int64(rec.n)
		tail = &rec
	}
	// A ReadAt that fills body at the end of the file may say io.EOF (as
	// it does for an empty body: a fork at 0 of a session with no
	// events): what was asked for was read.
	body := make([]byte, end-logHeaderSize)
	if n, err := f.ReadAt(body, logHeaderSize); err != nil && (n < len(body) || !errors.Is(err, io.EOF)) {
		return m, fmt.Errorf("fork session %s: read its log: %w", parent, err)
	}
	// find bisects to the fork point: in a long log it passes over damage
	// before it, which the byte-for-byte copy would carry into a new
	// session that never reads whole (a fork's log is never cut: a break
	// in it is damage). So the copy is walked, by lengths and checksums,
	// as a writer's first append walks a log, in the memory it was read
	// into: 1.2 ms of the 49 ms a fork of a log of 100,000 events (3 MB)
	// takes on disk.
	copied := &reader{id: parent, base: r.base, size: end, held: body, heldOff: logHeaderSize}
	if stop, bad, err := copied.walk(); err != nil {
		return m, fmt.Errorf("cannot fork at %d: %w", at, damagedLogError(parent, stop, bad, err))
	}
	// The copied lines an imported parent's totals leave out come first
	// in it (a copy of its own parent's lines begins its file): those
	// before the fork point are in the fork's copy, and left out of its
	// totals too, so that it counts what the parent counts up to there.
	m.CopiedIn, m.CopiedOut = 0, 0
	if cin, cout := pm.Copied(); (cin != 0 || cout != 0) && at > 0 {
		in, out, err := r.totals(Event{Seq: at - 1})
		if err != nil {
			return m, err
		}
		m.CopiedIn, m.CopiedOut = min(cin, in), min(cout, out)
	}
	now := l.opts.Clock.Now()
	id, err := l.ids.next(now)
	if err != nil {
		return m, err
	}
	if tail != nil && tail.More {
		// The fork point splits a group: the fork's copy of the group's
		// first part ends it, so the fork's log is whole on its own.
		cut := len(body) - tail.n
		fixed := *tail
		fixed.More = false
		body = appendRecord(body[:cut], &fixed, r.base)
		// The re-encoded record is bytes the parent's log does not hold:
		// with a label before them they could hold a record where none
		// starts, which readers of the fork would take for one. Checked
		// as an append's records are (recordWatch), and the fork refused.
		from := max(0, cut-maxCandidateSize)
		w := watchFrom(body[from:cut], logHeaderSize+int64(from), r.base)
		if end, _ := w.next(nil, body[cut:], []int{0}, r.base, true, &recordWatch{}); end >= 0 {
			return m, l.forkSplitRefused(r, parent, at)
		}
	}
	data := append(encodeHeader(logHeader{id: id, base: r.base}), body...)
	m.V, m.ID, m.Created = metaVersion, id, now.UTC().Truncate(time.Millisecond)
	m.Parent, m.ForkAt = &parent, &at
	if m.Workspace == "" {
		m.Workspace = pm.Workspace
	}
	if m.Title == "" {
		m.Title = pm.Title
	}
	if m.Tags == nil {
		m.Tags = pm.Tags
	}
	// The marker records the metadata with the "new" tag, before the
	// log: a crash that leaves the log without its .meta (before the
	// .meta is written, or with it written and lost before the recovery)
	// has the next writer's open rebuild the .meta from it, so that an
	// acknowledged fork is never lost (removeOrphanLogs).
	rec, err := markerFork(m)
	if err != nil {
		return m, err
	}
	if err := l.tagNew(id, rec); err != nil {
		return m, err
	}
	// Cut short from here on, the fork's log may be left without its
	// metadata: the marker stays at Close.
	l.unfinished[id] = true
	if err := l.fs.WriteFileAtomic(l.logPath(id), data, 0o600); err != nil {
		return m, l.forkFailed(id, fmt.Errorf("write fork log: %w", err))
	}
	if err := l.writeMeta(m); err != nil {
		return m, l.forkMetaFailed(id, err)
	}
	delete(l.unfinished, id)
	l.recorded[id] = true
	return m, nil
}

// forkSplitRefused is the error of a fork at `at` of parent refused
// because its copy's last record, re-encoded to end the group it splits,
// would make a label before it hold a record: it names the fork points
// around the group, which copy its records as they are.
func (l *Log) forkSplitRefused(r *reader, parent ID, at uint64) error {
	// A group is at most maxGroup records: its start is after the last
	// record without "more" of the maxGroup before the fork point, its
	// end the first without it from there on.
	start, end := at-min(at, maxGroup), at
	if off, _, err := r.find(start); err == nil {
		r.scan(off, func(_ int64, rec record) bool {
			switch {
			case rec.Seq < at-1 && !rec.More:
				start = rec.Seq + 1
			case rec.Seq >= at-1:
				end = rec.Seq + 1
				return rec.More
			}
			return true
		})
	}
	return &ForkSplitError{Parent: parent, At: at, Start: start, End: end}
}

// ForkSplitError is a fork at At of Parent refused because the point
// splits the event group #Start to #End-1 and the fork's copy of its last
// event, re-encoded to end the group there, would make a whole record
// where none starts (ErrLabelHoldsRecord). Start and End are the points
// where the group begins and ends, where a fork is taken. Its message
// names `session fork`'s --at; a rewind (whose fork this can be) words
// its own with --to.
type ForkSplitError struct {
	Parent         ID
	At, Start, End uint64
}

// Reason is the refusal without the way out, for a caller that words
// its own.
func (e *ForkSplitError) Reason() string {
	return fmt.Sprintf("%v: the point %d splits the event group #%d to #%d, and the fork's copy of event #%d, re-encoded to end the group there, would make a whole record where none starts with the label before it, which readers of the fork would take for an event; nothing was written", ErrLabelHoldsRecord, e.At, e.Start, e.End-1, e.At-1)
}

func (e *ForkSplitError) Error() string {
	return fmt.Sprintf("cannot fork session %s at %d: %s: fork where the group begins or ends (--at %d or --at %d)", e.Parent, e.At, e.Reason(), e.Start, e.End)
}

func (e *ForkSplitError) Unwrap() error { return ErrLabelHoldsRecord }

// forkMetaFailed is Fork's failure to write the fork's metadata (err).
// The durable write may have renamed the .meta into place and then failed
// to sync the directory: the fork was then there, though Fork failed
// (readers listed it, and a writer's open kept it, a session with its
// metadata, "rm" tag or not). It is removed, its metadata first and that
// removal synced (the log left is one without metadata, tagged "rm",
// which the next writer's open removes), so that the error means what it
// says: no fork. When that fails too, the error says the fork may be
// there, and names it.
func (l *Log) forkMetaFailed(id ID, err error) error {
	err = l.forkFailed(id, err)
	if rerr := l.removeMetaLeft(id); rerr != nil {
		return fmt.Errorf("%w; its metadata was in place, and removing it failed too (%v): the fork %s may be a session now, or after a crash: `rook session ls` shows it, `rook session rm %s` removes it", err, rerr, id, id)
	}
	return err
}

// removeMetaLeft removes the session id whose metadata write failed
// (Create, Fork) when the durable write had renamed its .meta into place
// (and then failed to sync the directory): its .meta first, that removal
// synced, then its log (else a log without metadata: tagged "rm", a
// fork's; of no event, a Create's: a recovering writer's open removes
// either). nil when no .meta is there, or it is gone for sure; the
// removal's error otherwise.
func (l *Log) removeMetaLeft(id ID) error {
	if _, serr := l.fs.Stat(l.metaPath(id)); errors.Is(serr, fs.ErrNotExist) {
		return nil
	}
	rerr := l.fs.Remove(l.metaPath(id))
	if rerr == nil || errors.Is(rerr, fs.ErrNotExist) {
		rerr = l.fs.SyncDir(l.dir)
	}
	if rerr != nil {
		return rerr
	}
	if rerr := l.fs.Remove(l.logPath(id)); rerr == nil {
		l.fs.SyncDir(l.dir)
	}
	return nil
}

// forkFailed tags the fork id, whose log or metadata a Fork could not
// write (err), "rm" in the dirty marker: the error said the fork was not
// made, so the next writer's open removes what it left rather than
// rebuild its metadata from the marker. The marker stays at Close
// (unfinished).
func (l *Log) forkFailed(id ID, err error) error {
	if terr := l.writeMarker(markerTag(id, tagRemoving)); terr != nil {
		return fmt.Errorf("%w; and marking the fork %s to be removed failed too (%v): the next writer's open may make it a session, which `rook session rm %s` removes", err, id, terr, id)
	}
	return err
}

// Removed is what Remove removed: the session's event count, or, when
// CountErr is not nil, why that is not known (its metadata or its log
// does not read: a damaged session, which rm is how one gets rid of).
type Removed struct {
	Events   uint64
	CountErr error
}

// Remove deletes a session's events and metadata (its bodies stay in the
// store until gc). It returns how many events the session had: 0 when
// that is not known (RemoveCounted says so).
func (l *Log) Remove(id ID) (uint64, error) {
	rm, err := l.RemoveCounted(id)
	return rm.Events, err
}

// RemoveCounted is Remove, saying whether the event count is known: a
// damaged session's is not (before, it was given as 0, and `session rm`
// said "with 0 event(s)" of a session whose log held events).
func (l *Log) RemoveCounted(id ID) (Removed, error) {
	var out Removed
	s, err := l.Summary(id)
	if err != nil {
		// A session whose metadata or log is damaged can still be
		// removed (rm is how one gets rid of it); one that is not there
		// cannot. Its event count is then unknown.
		l.mu.Lock()
		_, made := l.created[id]
		l.mu.Unlock()
		if _, serr := l.fs.Stat(l.metaPath(id)); serr != nil && !made {
			return Removed{}, err
		}
		s, out.CountErr = Summary{}, err
	}
	out.Events = s.Events
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return Removed{}, err
	}
	if st := l.sessions[id]; st != nil {
		l.unflushed -= len(st.pending)
		l.unflushedSize -= len(st.buf)
		delete(l.sessions, id)
	}
	// The metadata first: without it the session does not exist, and a
	// crash before the log goes leaves only an orphan file. Its removal is
	// made durable before the log's: the two need not reach the disk in
	// order, and metadata left naming a log that is gone is a session
	// that does not read. Before either, the session is tagged "rm" in the
	// dirty marker: the next writer's open then removes a log this leaves
	// (a crash, a removal that fails), and tells it from a log whose
	// metadata was lost otherwise, whose events it keeps.
	if err := l.writeMarker(markerTag(id, tagRemoving)); err != nil {
		return Removed{}, err
	}
	l.unfinished[id] = true
	delete(l.staged, id)
	if _, ok := l.created[id]; ok {
		delete(l.created, id) // never written
	} else if err := l.fs.Remove(l.metaPath(id)); err != nil {
		return Removed{}, err
	} else if err := l.fs.SyncDir(l.dir); err != nil {
		// Gone now (no listing shows it), but a crash may bring its
		// metadata back, and the session with it, whole.
		return Removed{}, fmt.Errorf("session %s: its metadata is removed, but the removal is not durable yet (syncing %s failed: %w): the session may be listed again after a crash; run `rook session rm %s` again", id, l.dir, err, id)
	}
	if err := l.fs.Remove(l.logPath(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Removed{}, fmt.Errorf("session %s: its metadata is removed, its log not (the next writer's open removes it): %w", id, err)
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		// The removal is durable (the metadata's was synced): the log
		// may come back after a crash, and the marker, which stays
		// (unfinished), has the next writer's open remove it.
		l.Notices = append(l.Notices, fmt.Sprintf("session %s: removed; the removal of its log %s may not be durable (syncing %s failed: %v): after a crash the next writer's open removes it", id, l.logPath(id), l.dir, err))
		return out, nil
	}
	delete(l.unfinished, id)
	return out, nil
}

// LeftoverLog is an event log that had no .meta beside it, as
// RemoveLogWithoutMeta removed it.
type LeftoverLog struct {
	Path  string
	Bytes int64 // the bytes after its header
	// Events is how many events it held; CountErr, when not nil, why
	// that is not known (its log does not read whole).
	Events   uint64
	CountErr error
}

// RemoveLogWithoutMeta removes the event log of id when no .meta is
// beside it: a session whose .meta was lost (deleted, missed by a restore)
// or a removal cut short. No session lists it and recovery keeps it (its
// events may have been acknowledged), so this, asked for by name, is how
// it goes. A log with its .meta is a session, and is refused: Remove
// removes it. It returns what the log held, read before it goes.
//
// Under the writer lock no other writer makes a session meanwhile; a
// session this one is creating (in bulk, its .meta not written yet) is
// refused too.
func (l *Log) RemoveLogWithoutMeta(id ID) (LeftoverLog, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := LeftoverLog{Path: l.logPath(id)}
	if err := l.writable(); err != nil {
		return out, err
	}
	st := l.sessions[id]
	if _, made := l.created[id]; made || (st != nil && len(st.pending) > 0) {
		return out, fmt.Errorf("session %s is being written: its log is not a leftover one", id)
	}
	if _, err := l.fs.Stat(l.metaPath(id)); err == nil {
		return out, fmt.Errorf("session %s has its .meta beside its log: it is a session, which `rook session rm %s` removes as one", id, id)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return out, fmt.Errorf("session %s: look for its .meta: %w", id, err)
	}
	fi, err := l.fs.Stat(out.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return out, fmt.Errorf("%w matches %q: no .meta and no event log %s", ErrNoSession, id, out.Path)
	}
	if err != nil {
		return out, fmt.Errorf("event log %s: %w", out.Path, err)
	}
	out.Bytes = max(0, fi.Size()-logHeaderSize)
	out.Events, out.CountErr = l.countEvents(id)
	if err := l.fs.Remove(out.Path); err != nil {
		return out, fmt.Errorf("remove the event log %s: %w", out.Path, err)
	}
	delete(l.sessions, id) // what this writer knew of its log (appends before its .meta went)
	if err := l.fs.SyncDir(l.dir); err != nil {
		return out, fmt.Errorf("remove the event log %s: sync %s: %w", out.Path, l.dir, err)
	}
	return out, nil
}

// countEvents counts the events of id's log, checking that its records
// run whole from its header to its end.
func (l *Log) countEvents(id ID) (uint64, error) {
	f, r, err := l.openLog(id)
	if err != nil {
		if he := (*HeaderError)(nil); errors.As(err, &he) {
			err = he.Err
		}
		return 0, err
	}
	defer f.Close()
	stop, at, err := r.walk()
	if err != nil {
		return 0, fmt.Errorf("damaged at offset %d, event %d on: %w", stop, at, err)
	}
	last, ok, err := r.last()
	if err != nil || !ok {
		return 0, err
	}
	return last.Seq + 1, nil
}

// Resolve finds the session whose id starts with prefix (case-insensitive).
func (l *Log) Resolve(prefix string) (ID, error) {
	p := strings.ToUpper(strings.TrimSpace(prefix))
	if p == "" {
		return ID{}, errors.New("empty session id")
	}
	ids, err := l.IDs()
	if err != nil {
		return ID{}, err
	}
	var found []ID
	for _, id := range ids {
		if strings.HasPrefix(id.String(), p) {
			found = append(found, id)
		}
	}
	switch len(found) {
	case 0:
		return ID{}, fmt.Errorf("%w matches %q: `rook session ls --all` lists them", ErrNoSession, prefix)
	case 1:
		return found[0], nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "session prefix %q is ambiguous; it matches:", prefix)
	for i, id := range found {
		if i == 10 {
			b.WriteString("\n  ...")
			break
		}
		b.WriteString("\n  " + id.String())
	}
	b.WriteString("\ngive more characters")
	return ID{}, &AmbiguousError{msg: b.String(), Candidates: found}
}

// AmbiguousError: a prefix that names several sessions.
type AmbiguousError struct {
	msg        string
	Candidates []ID
}

func (e *AmbiguousError) Error() string { return e.msg }
