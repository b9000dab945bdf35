// Package cas is rook's content-addressed object store: objects named by the
// BLAKE3-256 of their bytes, packed by kind into zstd-compressed blocks that
// are appended to segment files, and found through an on-disk B-tree index
// (package index) that maps id -> location or, for tiny objects, the bytes
// themselves. Segments are the truth; the index is rebuilt from them.
//
// One process writes (it holds an OS lock on HOME/lock); any number read.
// Puts are buffered: Sync is the durability barrier. docs/storage.md gives
// the byte layout and what a crash at each step leaves behind.
package cas

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/rookhq/rook/dict"
	"github.com/rookhq/rook/index"
	"github.com/rookhq/rook/internal/clock"
	"github.com/rookhq/rook/internal/proc"
	"github.com/rookhq/rook/internal/vfs"
)

// Layout of the store home. Part of the format.
const (
	SegmentsDir = "segments"
	IndexDir    = "index"
	IndexFile   = "objects.idx"
	DictDir     = "dict"
	EventsDir   = "events"
	TornDir     = "torn"
	LockFile    = "lock"
	// RebuildMarker, in IndexDir, says a writer is rebuilding the index
	// from the segments (docs/storage.md, "Verify and reindex").
	RebuildMarker = "REBUILDING"
)

// Modes of the store home: private to the owner.
const (
	DirMode  fs.FileMode = 0o700
	FileMode fs.FileMode = 0o600
)

// Options tune a store. The zero value is a sensible default except FS,
// which defaults to the real disk.
type Options struct {
	FS    vfs.FS
	Clock clock.Clock
	// Writable opens the store for writing: it takes the writer lock,
	// repairs what a crash left (torn segment tail, index behind the
	// segments, damaged index) and says so in Notices.
	Writable bool
	// Command describes the writer in the lock file ("rook store put").
	Command string
	// LockWait is how long a writer's Open waits for the writer lock
	// while another process holds it, before it fails with a LockedError:
	// agents' hooks append at the same moment, and each holds the lock for
	// milliseconds. 0 fails at once (after probeGrace, 20ms).
	LockWait time.Duration
	// LockWaiting, if set, is called once when a writer has waited about
	// a second for the lock, with the holder as it described itself: the
	// CLI tells a user at a terminal why nothing happens yet.
	LockWaiting func(holder string)
	// SegmentSize is the size past which a new segment is started.
	SegmentSize int64
	// BlockSize is how many raw bytes of small objects of one kind are
	// packed into one compressed block.
	BlockSize int
	// CommitEvery is how many bytes of records a writer appends between
	// index commits made by Barrier (Sync and Close always commit). The
	// segments are the log the index is rebuilt from: until a commit, a
	// crash leaves the index behind them and the next writer's open takes
	// the records in from the watermark, and a reader's open looks them up
	// the same way. 0: 4 MiB; negative: commit at every Barrier.
	CommitEvery int64
	// PackMax: objects this large or larger get a block of their own.
	PackMax int
	// BulkBlockSize and BulkPackMax replace BlockSize and PackMax for bulk
	// writes: while SetBulk is on (an import) and in Repack and GC. What
	// is written in bulk is mostly read in bulk, and a block of a MiB
	// lets zstd match an object against many more (another version of a
	// file, an output quoted again) for about a millisecond more to read
	// one object. Defaults: 1 MiB each.
	BulkBlockSize int
	BulkPackMax   int
	// InlineMax: objects up to this size are also copied into their index
	// entry, so reading them needs no segment I/O.
	InlineMax int
	// Level is the zstd level.
	Level zstd.EncoderLevel
	// Dicts resolves dictionary ids (default: the store's dict/ directory).
	Dicts dict.Set
	// ForReindex opens a writer that is about to rebuild the index: it
	// skips the repairs of a normal open, which may be what is failing.
	ForReindex bool
}

func (o *Options) defaults() {
	if o.FS == nil {
		o.FS = vfs.OS
	}
	if o.Clock == nil {
		o.Clock = clock.System
	}
	if o.Command == "" {
		o.Command = "rook"
	}
	if o.SegmentSize <= 0 {
		o.SegmentSize = 64 << 20
	}
	if o.BlockSize <= 0 {
		o.BlockSize = 64 << 10
	}
	if o.PackMax <= 0 {
		o.PackMax = 16 << 10
	}
	if o.BulkBlockSize <= 0 {
		o.BulkBlockSize = 1 << 20
	}
	if o.BulkPackMax <= 0 {
		o.BulkPackMax = 1 << 20
	}
	if o.InlineMax <= 0 {
		o.InlineMax = 48
	}
	if o.Level == 0 {
		o.Level = zstd.SpeedBetterCompression
	}
}

// Store is an open store. Its methods are safe for concurrent use; writes
// are serialised.
type Store struct {
	home string
	opts Options
	fs   vfs.FS
	lock vfs.Lock
	tree *index.Tree
	enc  *encoder
	dec  *decoder
	// dicts is the store's own dictionary directory (nil when the caller
	// supplied another Set): training adds to it.
	dicts *dict.Dir

	// Notices says what Open repaired, for the CLI to tell the user.
	Notices []string

	mu      sync.Mutex // guards everything below and all writes
	ctr     counters   // including uncommitted changes
	dirty   bool       // counters or entries changed since the last commit
	wmKnown bool       // the watermark in ctr comes from a committed index
	active  *activeSegment
	open    map[Kind]*openBlock
	bulk    bool // the bulk packing is in force (SetBulk, rewrites)
	pending map[Key]*pendingObject
	// sealed: bulk blocks full and being compressed on their own
	// goroutines, oldest first, to be appended in that order (sealBlock).
	sealed []*sealedBlock
	// verified: ids whose stored bytes this process wrote or compared,
	// with the rest of their digest (noteVerified).
	verified map[Key][32 - index.KeySize]byte
	closed   bool
	// failed is set by a write or sync that failed part-way: what Put
	// accepted may not be on disk, so no later Sync may claim it is. The
	// store must be reopened, which recovers from whatever reached the disk.
	failed error

	// sinceCommit counts the record bytes appended since the index was last
	// committed (see Options.CommitEvery).
	sinceCommit int64
	// recent holds, for a reader, the objects of records a writer made
	// durable after its last index commit (see loadRecent), found when the
	// segments ended at recentSeen (the newest one's number, size and
	// modification time: segmentsEnd).
	// recentFrom is, for each segment looked at, where that look ended:
	// a look again starts there, if what it read is still there.
	recentMu   sync.RWMutex
	recent     map[Key]entry
	recentSeen [3]int64
	recentFrom map[uint32]recentLook
	// recentTorn: what the last look found at the end of the newest
	// segment that does not read as records (TornTail).
	recentTorn *Damage

	files  segmentFiles
	blocks blockCache
}

// Key is an object id: the first 128 bits of the BLAKE3 hash of its bytes
// (docs/adr/0002-128-bit-ids.md says why 128).
type Key = index.Key

// InitLockWait is how long Init waits for the writer lock of a home with
// no marker: the holder is another init, done in milliseconds (a writer
// cannot open a store without a marker).
const InitLockWait = 10 * time.Second

// Init creates a store at home: the directory (0700, an existing one is
// left as it is), the format marker, and the parts' directories. Running it
// on an existing store is harmless and reports existed=true. It waits up
// to InitLockWait for the writer lock; InitWith takes the wait from opts.
func Init(fsys vfs.FS, clk clock.Clock, home string) (existed bool, err error) {
	return InitWith(fsys, clk, home, Options{LockWait: InitLockWait})
}

// InitWith is Init waiting for the writer lock as opts says (LockWait,
// LockWaiting, Command; the other fields are not used).
func InitWith(fsys vfs.FS, clk clock.Clock, home string, opts Options) (existed bool, err error) {
	if fsys == nil {
		fsys = vfs.OS
	}
	if clk == nil {
		clk = clock.System
	}
	if st, err := fsys.Stat(home); err == nil && !st.IsDir() {
		return false, fmt.Errorf("%s is not a directory: give --home (or $ROOK_HOME) a directory, new or existing", home)
	} else if errors.Is(err, syscall.ENOTDIR) {
		if f := FileInTheWay(fsys, home); f != "" {
			return false, fmt.Errorf("%s is a file, not a directory, so %s cannot be a store: give --home (or $ROOK_HOME) a directory, new or existing", f, home)
		}
	}
	if err := DanglingHome(fsys, home); err != nil {
		return false, err
	}
	mpath := filepath.Join(home, MarkerFile)
	// found: a store is there, its marker b; its part directories are put
	// back if gone.
	found := func(b []byte) (bool, error) {
		if _, err := parseMarker(b); err != nil {
			return true, fmt.Errorf("%s: %w", mpath, withPartsFormat(fsys, home, err))
		}
		return true, ensureDirs(fsys, home)
	}
	if b, err := vfs.ReadFile(fsys, mpath); err == nil {
		return found(b)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	if err := fsys.MkdirAll(home, DirMode); err != nil {
		return false, fmt.Errorf("create store home: %w", err)
	}
	// Made under the writer lock: two inits at once (hooks run together)
	// both found no marker, and the second reopened the index the first
	// had made, under a writer using it, and wrote the marker again; some
	// failed on each other's index file.
	// While it waits, another init may make the store (and a writer may
	// hold the lock from then on): the wait ends when the marker appears.
	command := opts.Command
	if command == "" {
		command = "rook init"
	}
	marked := func() bool { _, err := fsys.Stat(mpath); return err == nil }
	l, err := waitForLock(fsys, filepath.Join(home, LockFile), opts.LockWait, opts.LockWaiting, marked)
	if err != nil {
		return false, lockError(home, err)
	}
	if l != nil {
		defer l.Unlock()
		describeHolder(l, command)
	}
	if b, err := vfs.ReadFile(fsys, mpath); err == nil {
		return found(b) // another init made it while this one waited
	} else if l == nil {
		return true, err
	}
	if err := ensureDirs(fsys, home); err != nil {
		return false, err
	}
	// The index first, the marker last: a store is a store once its marker
	// is durable, and by then everything it needs exists.
	if err := createIndex(fsys, filepath.Join(home, IndexDir, IndexFile)); err != nil {
		return false, err
	}
	if err := fsys.WriteFileAtomic(mpath, encodeMarker(clk.Now()), FileMode); err != nil {
		return false, fmt.Errorf("write format marker: %w", err)
	}
	return false, nil
}

// createIndex makes an empty index where there is none. One that is there
// (a home whose marker was moved aside, the way past a damaged one) is left
// as it is: it is derived, and a writer's open rebuilds it from the
// segments if it is damaged; opened here, a damaged one failed init, and a
// home with no marker is one no other command opens.
func createIndex(fsys vfs.FS, path string) error {
	if _, err := fsys.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	t, err := index.Open(fsys, path, true)
	if err != nil {
		return fmt.Errorf("create index: %w", err)
	}
	return t.Close()
}

// CheckDictDir says whether the dictionaries' directory of the store at
// home is there (a writer does not open without it: Open), with what to
// do when it is not.
func CheckDictDir(fsys vfs.FS, home string) error {
	path := filepath.Join(home, DictDir)
	if _, err := fsys.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("the dictionaries' directory %s is missing: put it back from a backup (records compressed with its dictionaries cannot be read without them, and its %s keeps their ids from being given out again); only if no dictionary was ever trained, or they are gone for good, run `rook init` to make it anew, empty (`rook store verify` then lists the records that need a lost dictionary; a dictionary trained after that may take a lost one's id)", path, dict.HighestFile)
	}
	return nil
}

func ensureDirs(fsys vfs.FS, home string) error {
	for _, d := range []string{SegmentsDir, IndexDir, DictDir, EventsDir} {
		if err := fsys.MkdirAll(filepath.Join(home, d), DirMode); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
	}
	return fsys.SyncDir(home)
}

// ErrNoStore: there is no store at the home.
var ErrNoStore = errors.New("no rook store here")

// LockedError: another process holds the writer lock.
type LockedError struct {
	Holder string        // "pid N (command)", as the holder wrote it
	Waited time.Duration // how long the open waited for it (Options.LockWait)
}

func (e *LockedError) Error() string {
	h := e.Holder
	if h == "" {
		h = "another process"
	}
	if e.Waited > 0 {
		return "store is locked by " + h + " (waited " + e.Waited.String() + " for it)"
	}
	return "store is locked by " + h
}

// DanglingHome says, as an error, when home is a symbolic link to nothing
// (a store moved to another disk, linked from ~/.rook before the target
// was made): init cannot make the directory the link names, and "run
// `rook init`" would send the user round in a circle. nil otherwise.
func DanglingHome(fsys vfs.FS, home string) error {
	if _, err := fsys.Stat(home); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if st, err := fsys.Lstat(home); err != nil || st.Mode()&fs.ModeSymlink == 0 {
		return nil
	}
	return fmt.Errorf("%s is a symbolic link to a directory that does not exist (`ls -l %s` shows it): create the directory it names, or point it at an existing one, then run the command again", home, home)
}

// FileInTheWay names the file (anything but a directory) above home on
// its path that keeps home from being a directory: the message says which
// one, where "open HOME/FORMAT: not a directory" did not. "" when there is
// none (or home itself is the file: its callers say that already).
func FileInTheWay(fsys vfs.FS, home string) string {
	for dir := filepath.Dir(home); dir != home; home, dir = dir, filepath.Dir(dir) {
		st, err := fsys.Stat(dir)
		if err == nil {
			if st.IsDir() {
				return ""
			}
			return dir
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return ""
		}
	}
	return ""
}

// MissingStore turns err, from reading or stat-ing home's marker, into the
// one message every command gives when there is no store at home (ErrNoStore,
// with what to do). nil when err does not say the store is missing: the
// caller reports err as it is.
func MissingStore(fsys vfs.FS, home string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := DanglingHome(fsys, home); err != nil {
			return fmt.Errorf("%w: %w", ErrNoStore, err)
		}
		return fmt.Errorf("%w: %s has no %s marker: run `rook init`", ErrNoStore, home, MarkerFile)
	case errors.Is(err, syscall.ENOTDIR):
		if f := FileInTheWay(fsys, home); f != "" {
			return fmt.Errorf("%w: %s is a file, not a directory, so %s cannot be a store: give --home (or $ROOK_HOME) the store's directory", ErrNoStore, f, home)
		}
		return fmt.Errorf("%w: %s is not a directory: give --home (or $ROOK_HOME) the store's directory", ErrNoStore, home)
	}
	return nil
}

// ReadFormat reads the store's format version without opening it.
func ReadFormat(fsys vfs.FS, home string) (int64, error) {
	mpath := filepath.Join(home, MarkerFile)
	b, err := vfs.ReadFile(fsys, mpath)
	if err := MissingStore(fsys, home, err); err != nil {
		return 0, err
	}
	if err != nil {
		return 0, err
	}
	v, err := parseMarker(b)
	if err != nil {
		return v, fmt.Errorf("%s: %w", mpath, withPartsFormat(fsys, home, err))
	}
	return v, nil
}

// LockHolder says who holds the writer lock, or "" if nobody does.
func LockHolder(fsys vfs.FS, home string) (string, error) {
	l, err := fsys.TryLock(filepath.Join(home, LockFile), FileMode)
	if errors.Is(err, vfs.ErrLocked) {
		return lockHolder(fsys, filepath.Join(home, LockFile)), nil
	}
	if err != nil {
		return "", lockFileError(err)
	}
	return "", l.Unlock()
}

// Open opens the store at home.
func Open(home string, opts Options) (*Store, error) {
	opts.defaults()
	// The marker first: what is at home may be no store, or a newer
	// one, and that is what to say rather than how its parts failed.
	if _, err := ReadFormat(opts.FS, home); err != nil {
		return nil, err
	}
	// init makes segments/ and nothing removes it. Gone (by hand, a
	// backup restored without it), a writer failed at its first new
	// segment with "no such file or directory", and reindex would make
	// an empty index: the objects are as good as lost, which is what to
	// say before anything is written. No writer opens.
	if opts.Writable {
		if _, err := opts.FS.Stat(filepath.Join(home, SegmentsDir)); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("the objects' directory %s is missing: put it back, or, if the objects are gone for good, run `rook init` to make it anew, empty, then `rook store reindex` so that the index forgets them too (`rook store verify` then lists what the sessions lost)", filepath.Join(home, SegmentsDir))
		}
	}
	// init makes dict/ too, and every store rook made has it (ensureDirs,
	// since the first format). Gone, dict/HIGHEST went with it and
	// nothing else records which ids were given out: the next train
	// gave out id 1 again, and the records written with the lost
	// dictionary 1 then decoded with the new one (docs/storage.md,
	// Dictionaries). Records do not name their dictionary in the index,
	// so the highest id they need is known only by reading every one:
	// no writer opens, as for segments/.
	if opts.Writable && opts.Dicts == nil {
		if err := CheckDictDir(opts.FS, home); err != nil {
			return nil, err
		}
	}
	s := &Store{
		home:    home,
		opts:    opts,
		fs:      opts.FS,
		open:    map[Kind]*openBlock{},
		pending: map[Key]*pendingObject{},
	}
	s.files.init(opts.FS, filepath.Join(home, SegmentsDir))
	s.blocks.init(32 << 20)
	// A writer takes the lock before it reads dict/: the dictionaries it
	// compresses with are those of the store as it is once no other writer
	// runs. Read before the wait, a writer that waited for `rook store
	// repack --drop-dictionary N` kept N (its kind's newest) in memory and
	// compressed with it after the drop had deleted its file: what it
	// wrote never read again. A writer takes the lock once, here, and
	// holds it until Close.
	if opts.Writable {
		if err := s.takeLock(); err != nil {
			return nil, err
		}
	}
	var dir *dict.Dir
	if opts.Dicts == nil {
		var err error
		if dir, err = dict.OpenDir(opts.FS, filepath.Join(home, DictDir)); err != nil {
			s.release()
			return nil, fmt.Errorf("open dictionaries: %w", err)
		}
		opts.Dicts = dir
		s.opts.Dicts = dir
	}
	s.dicts = dir
	s.enc = newEncoder(opts.Level, opts.Dicts)
	s.dec = newDecoder(opts.Dicts)
	if err := s.openIndex(); err != nil {
		s.release()
		return nil, err
	}
	if opts.Writable && dir != nil {
		// A store from before dict/HIGHEST: record its highest file, so
		// that losing it does not free its id. Failing to is no reason to
		// refuse the writer (a full disk must still let gc run): training
		// records the id itself before it writes a dictionary.
		if err := dir.RecordHighest(); err != nil {
			s.Notices = append(s.Notices, "dictionaries: "+err.Error())
		}
	}
	if opts.Writable && !opts.ForReindex {
		if err := s.recover(); err != nil {
			s.release()
			return nil, err
		}
	}
	if !opts.Writable {
		if err := s.loadRecent(); err != nil {
			s.release()
			return nil, err
		}
	}
	return s, nil
}

func (s *Store) takeLock() error {
	l, err := waitForLock(s.fs, filepath.Join(s.home, LockFile), s.opts.LockWait, s.opts.LockWaiting, nil)
	if err != nil {
		return lockError(s.home, err)
	}
	s.lock = l
	describeHolder(l, s.opts.Command)
	return nil
}

// lockError is err from waitForLock as the user reads it: a LockedError
// as it is, any other failure with the lock file's path.
func lockError(home string, err error) error {
	var le *LockedError
	if errors.As(err, &le) {
		return err
	}
	return fmt.Errorf("take the writer lock %s: %w", filepath.Join(home, LockFile), lockFileError(err))
}

// lockFileError is err, from opening the lock file to take or probe the
// writer lock, with what to do when a directory stands in its place (a
// restore, a sync tool, a mkdir): every writer, and doctor's look at the
// lock, failed with the bare "is a directory". The file is only a marker
// (the flock on it says whether a writer holds the store, not the file or
// what it holds), so removing the directory loses nothing: the next
// writer makes the file anew.
func lockFileError(err error) error {
	if !errors.Is(err, syscall.EISDIR) {
		return err
	}
	return fmt.Errorf("%w: a directory stands where the store's lock file goes; the file is only a marker (the lock is a flock on it, which no directory can take), so remove the directory (`rmdir` it, or, if it holds files, move it aside) and run the command again: the next writer makes the file anew", err)
}

// describeHolder writes who holds the lock l ("pid N (command)") into the
// lock file, for LockHolder and LockedError to name. Best effort: it only
// describes the holder.
func describeHolder(l vfs.Lock, command string) {
	f := l.File()
	if err := f.Truncate(0); err == nil {
		f.Seek(0, 0)
		f.Write([]byte("pid " + strconv.Itoa(os.Getpid()) + " (" + command + ")\n"))
	}
}

// lockHolder names who holds the lock at path, "" if it cannot. The lock
// file's line ("pid N (command)") is the last rook's to take the lock,
// and another program taking it (`flock`, a backup tool) writes none:
// where the system says which process holds the lock (Linux's
// /proc/locks), that process is named, by the line when it is the one the
// line names, else by its program's name (its arguments are not shown:
// they may hold a password); where it does not, a line naming
// a process that is not running says so.
func lockHolder(fsys vfs.FS, path string) string {
	b, _ := vfs.ReadFile(fsys, path)
	line := strings.TrimSpace(string(b))
	named := 0 // the pid the line names
	if rest, ok := strings.CutPrefix(line, "pid "); ok {
		n, _, _ := strings.Cut(rest, " ")
		named, _ = strconv.Atoi(n)
	}
	if fsys == vfs.OS {
		if pid := proc.FlockHolder(path); pid > 0 {
			if pid == named {
				return line
			}
			if name := proc.Name(pid); name != "" {
				return "pid " + strconv.Itoa(pid) + " (" + name + ")"
			}
			return "pid " + strconv.Itoa(pid)
		}
	}
	if named > 0 && !proc.Running(named) {
		return "another process (the lock file names " + line + ", which is not running here)"
	}
	return line
}

// probeGrace is how long a writer told not to wait (wait 0, the CLI's
// --lock-wait 0) still tries for the lock before it fails. rook's own
// checks of whether a writer holds the store (LockHolder, for rook doctor
// and an interrupted import; verify's check of an unfinished rebuild) can
// only tell by taking a free lock for an instant: a writer that failed in
// that instant would fail for no writer at all, naming the last one, long
// gone, from the lock file. A writer holds the lock for milliseconds at
// least (an fsync), so the grace also lets a short append finish first.
const probeGrace = 20 * time.Millisecond

// waitForLock takes the lock at path, waiting up to wait while another
// process holds it (0: fail at once, after probeGrace), with a LockedError
// when it could not. It polls, with a backoff from a few milliseconds to a
// tenth of a second, jittered so that writers started together do not
// retry in step:
// a writer holds the lock for milliseconds (an append) or minutes (an
// import), and a poll costs one flock call. waiting, if set, is told the
// holder once after about a second. stop, if set, is asked after each
// failed try: when it says so, the wait ends with neither lock nor error.
func waitForLock(fsys vfs.FS, path string, wait time.Duration, waiting func(holder string), stop func() bool) (vfs.Lock, error) {
	holder := func() string { return lockHolder(fsys, path) }
	stopped := func() bool { return stop != nil && stop() }
	l, err := fsys.TryLock(path, FileMode)
	if !errors.Is(err, vfs.ErrLocked) {
		return l, err
	}
	if stopped() {
		return nil, nil
	}
	told := wait // what the LockedError says was waited
	if wait <= 0 {
		wait, told, waiting = probeGrace, 0, nil
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	var tell <-chan time.Time
	if waiting != nil {
		t := time.NewTimer(time.Second)
		defer t.Stop()
		tell = t.C
	}
	backoff := 2 * time.Millisecond
	for {
		pause := time.NewTimer(backoff/2 + rand.N(backoff))
		select {
		case <-deadline.C:
			pause.Stop()
			// One last try: the holder may have let go just now.
			l, err := fsys.TryLock(path, FileMode)
			if errors.Is(err, vfs.ErrLocked) {
				if stopped() {
					return nil, nil
				}
				return nil, &LockedError{Holder: holder(), Waited: told}
			}
			return l, err
		case <-tell:
			pause.Stop()
			tell = nil
			waiting(holder())
			continue
		case <-pause.C:
		}
		l, err := fsys.TryLock(path, FileMode)
		if !errors.Is(err, vfs.ErrLocked) {
			return l, err
		}
		if stopped() {
			return nil, nil
		}
		backoff = min(backoff*2, 100*time.Millisecond)
	}
}

func (s *Store) indexPath() string { return filepath.Join(s.home, IndexDir, IndexFile) }

// openIndex opens the B-tree. A writer rebuilds a missing or damaged index
// from the segments; a reader cannot, and says what to run.
func (s *Store) openIndex() error {
	var t *index.Tree
	_, err := s.fs.Stat(s.indexPath())
	if err == nil {
		t, err = index.Open(s.fs, s.indexPath(), s.opts.Writable)
	}
	switch {
	case err == nil:
		s.tree = t
		if r := t.Stats().Recovered; r != "" {
			s.Notices = append(s.Notices, "index: "+r)
		}
		if s.opts.Writable {
			if err := s.finishRebuild(); err != nil {
				return err
			}
		}
	case errors.Is(err, index.ErrNewerFormat):
		// Not damage: a newer rook's index, which this one cannot read.
		// A rebuild (the fix for damage) would replace what that rook
		// wrote: readers and writers alike say to upgrade, nothing else.
		// The index's error names the file already ("index: PATH: ...").
		return fmt.Errorf("%w; nothing was changed", err)
	case !s.opts.Writable && errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("index %s is missing: run `rook store reindex` to rebuild it from the segments", s.indexPath())
	case !s.opts.Writable:
		if oserr, ok := indexReadFailure(s.indexPath(), err); ok {
			return errors.New(indexReadFailed(s.indexPath(), oserr, "the command"))
		}
		return fmt.Errorf("index %s is damaged (%v): run `rook store reindex` to rebuild it from the segments", s.indexPath(), err)
	case errors.Is(err, index.ErrCorrupt) || errors.Is(err, fs.ErrNotExist):
		// A writer rebuilds: the segments are the truth. (A missing index
		// with no segments is simply a new store.)
		segs, err2 := s.listSegments()
		if err2 != nil {
			return err2
		}
		// The index is derived: with its directory gone too (removed by
		// hand, left out of a backup), put the directory back as init
		// does, or reindex, the fix readers name, could never run.
		if err2 := s.fs.MkdirAll(filepath.Dir(s.indexPath()), DirMode); err2 != nil {
			return fmt.Errorf("create index: %w", err2)
		}
		// From the move aside until the rebuilt index is in place, the
		// index holds no commit while the segments hold records, as a
		// first writer killed before its first commit leaves them: the
		// marker tells the two apart (rebuildmark.go).
		if len(segs) > 0 {
			if err2 := s.markRebuild(); err2 != nil {
				return err2
			}
		}
		aside := ""
		if errors.Is(err, index.ErrCorrupt) {
			aside = s.indexPath() + ".damaged"
			if rerr := s.fs.Rename(s.indexPath(), aside); rerr != nil {
				return fmt.Errorf("move damaged index aside: %w", rerr)
			}
		}
		t, err2 := index.Open(s.fs, s.indexPath(), true)
		if err2 != nil {
			return fmt.Errorf("create index: %w", err2)
		}
		s.tree = t
		if aside != "" && s.opts.ForReindex {
			s.Notices = append(s.Notices, fmt.Sprintf("index was damaged (%v; kept as %s)", err, aside))
		}
		if len(segs) > 0 && !s.opts.ForReindex {
			rep, err2 := s.reindexLocked(nil)
			if err2 != nil {
				return fmt.Errorf("rebuild index: %w", err2)
			}
			what := "missing"
			if aside != "" {
				what = fmt.Sprintf("damaged (%v; kept as %s)", err, aside)
			}
			s.Notices = append(s.Notices, fmt.Sprintf("index was %s: rebuilt from %d segment(s), %d objects", what, len(segs), rep.Objects))
		}
	default:
		return fmt.Errorf("open index %s: %w", s.indexPath(), err)
	}
	snap := s.tree.Snapshot()
	c, err := decodeCounters(snap.UserMeta())
	switch {
	case err != nil && s.opts.ForReindex:
		// The reindex about to run counts everything again.
		c = counters{Kinds: map[Kind]*kindCounters{}}
		s.Notices = append(s.Notices, fmt.Sprintf("index %s: %v: the reindex counts anew", s.indexPath(), err))
	case err != nil:
		return fmt.Errorf("index %s is damaged (%v): run `rook store reindex` to rebuild it from the segments", s.indexPath(), err)
	}
	s.ctr = c
	s.wmKnown = snap.TxID() > 0
	return nil
}

// Home is the store's directory.
func (s *Store) Home() string { return s.home }

// Close flushes and syncs a writer's buffered objects and releases the lock.
func (s *Store) Close() error {
	var err error
	if s.opts.Writable {
		err = s.Sync()
	}
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.release()
	return err
}

func (s *Store) release() {
	if s.active != nil {
		s.active.f.Close()
		s.active = nil
	}
	s.files.closeAll()
	if s.tree != nil {
		s.tree.Close()
	}
	if s.lock != nil {
		s.lock.Unlock()
		s.lock = nil
	}
}
