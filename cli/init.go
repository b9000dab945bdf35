package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/rookhq/rook/agent"
	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/dict"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// InitCmd is `rook init`.
type InitCmd struct{}

func (c *InitCmd) Run(e *Env) error {
	if e.lockWaitErr != nil {
		return e.lockWaitErr
	}
	existed, err := cas.InitWith(e.FS, e.Clock, e.Home, cas.Options{Command: e.Command,
		LockWait: e.LockWait, LockWaiting: e.lockWaiting(e.LockWait)})
	if why, ok := agent.MkdirRefused(err); ok {
		// Raw, "create store home: mkdir /proc/x: no such file or
		// directory", of a /proc that is there. The directory that
		// failed may be in a home that is there (a part directory put
		// back, on a read-only disk): that one is named, not the home.
		what := "the store home " + e.Home
		if d := inHome(e.Home, err); d != "" {
			what = "the directory " + d + " in the store home " + e.Home
		}
		return &exitError{code: ExitFailure, msg: fmt.Sprintf("cannot make %s: %s: give --home (or $ROOK_HOME) a directory on a disk you can write", what, why)}
	}
	if err != nil {
		return err
	}
	if e.JSON {
		return e.printJSON(map[string]any{"home": e.Home, "created": !existed, "format": cas.FormatVersion})
	}
	if existed {
		fmt.Fprintf(e.Stdout, "rook store already at %s (format %d); nothing changed\n", e.Home, cas.FormatVersion)
	} else {
		fmt.Fprintf(e.Stdout, "initialized rook store at %s (format %d)\n", e.Home, cas.FormatVersion)
	}
	// An existing directory is left as it is, but the user hears about it
	// if other accounts can read what is about to hold their history.
	if ex := exposed(e.FS, e.Home); len(ex) > 0 {
		fmt.Fprintf(e.Stderr, "rook: warning: other accounts can read %s: run `%s`\n", ex[0], privacyFix(e.FS, e.Home))
	}
	return nil
}

// DoctorCmd is `rook doctor`.
type DoctorCmd struct{}

type doctorReport struct {
	Home        string   `json:"home"`
	Exists      bool     `json:"exists"`
	Format      int64    `json:"format,omitempty"`
	FormatError string   `json:"format_error,omitempty"`
	Private     bool     `json:"private"`
	Exposed     []string `json:"exposed,omitempty"`
	Fix         string   `json:"fix,omitempty"`
	Objects     int64    `json:"objects"`
	Stored      int64    `json:"disk_bytes"`
	LockHolder  string   `json:"lock_holder"`
	LockChecked bool     `json:"lock_checked"`
	Warnings    []string `json:"warnings"`
	DiskFree    uint64   `json:"disk_free_bytes"`
	DiskTotal   uint64   `json:"disk_total_bytes"`
	Problems    []string `json:"problems"`

	// ObjectsCounted: the index read, so Objects is its count; without
	// it, "holds 0 objects" read as a store that lost everything.
	ObjectsCounted bool `json:"objects_counted"`
	// Sessions are the sessions whose metadata and log read, as session
	// ls lists them; SessionsUnreadable the ones that do not.
	// SessionsCounted: the sessions were read, so Sessions is their count;
	// without it (no marker, the sessions' directory gone), "sessions": 0
	// read as a store with none.
	Sessions           int           `json:"sessions"`
	SessionsCounted    bool          `json:"sessions_counted"`
	SessionsUnreadable []eventlog.ID `json:"sessions_unreadable,omitempty"`
	// LogsWithoutMeta: event logs with no .meta beside them (paths).
	LogsWithoutMeta []string `json:"logs_without_meta,omitempty"`
	// ObjectsVerified is always false: doctor reads the index, not the
	// objects; saying so keeps its "ok" from reading as `store verify`'s.
	ObjectsVerified bool   `json:"objects_verified"`
	Config          string `json:"config"` // the file, or "" for none (the defaults)
	ConfigError     string `json:"config_error,omitempty"`
	// Owner: the account the store is (storeOwnerOf: FORMAT's owner, or
	// the home's; none where the system does not say). Run as another
	// account (root, `sudo rook`), rook writes files its owner may then
	// not open.
	Owner *storeOwner `json:"owner,omitempty"`
	// ForeignOwned: the store's files (its parts and what is directly in
	// them; the home too when it is the owner's) another account than
	// the store's owner owns.
	ForeignOwned []string `json:"foreign_owned,omitempty"`
	// Unopenable: the files a writer opens (the lock, the index, the
	// newest segment, the dictionaries) that may not be opened as it
	// must: what a write failing "permission denied" sends the user here
	// to find.
	Unopenable []string `json:"unopenable,omitempty"`
	// homeUID: the home's owner, when the system says (homeOwned).
	homeUID   int
	homeOwned bool
}

// storeOwner is the account that owns a store: its user id, its name
// where the system knows it, and whether this process runs as it.
type storeOwner struct {
	UID  int    `json:"uid"`
	Name string `json:"name,omitempty"`
	You  bool   `json:"you"`
}

func (c *DoctorCmd) Run(e *Env) error {
	r := doctorReport{Home: e.Home, Problems: []string{}, Warnings: []string{}}
	if st, err := e.FS.Stat(e.Home); err != nil {
		if lerr := cas.DanglingHome(e.FS, e.Home); lerr != nil {
			r.Problems = append(r.Problems, lerr.Error())
		} else if f := cas.FileInTheWay(e.FS, e.Home); f != "" && errors.Is(err, syscall.ENOTDIR) {
			r.Problems = append(r.Problems, fmt.Sprintf("%s is a file, not a directory, so %s cannot be a store: give --home (or $ROOK_HOME) the store's directory, or a new one for `rook init`", f, e.Home))
		} else if errors.Is(err, fs.ErrNotExist) {
			r.Problems = append(r.Problems, fmt.Sprintf("no store at %s: run `rook init`", e.Home))
		} else {
			r.Problems = append(r.Problems, err.Error())
		}
		return c.print(e, r)
	} else if !st.IsDir() {
		// Someone's file, not a store: its config, lock and privacy are
		// not the store's, and `chmod -R` on it fixes nothing.
		r.Problems = append(r.Problems, fmt.Sprintf("%s is not a directory, so no store: give --home (or $ROOK_HOME) the store's directory, or a new one for `rook init`", e.Home))
		return c.print(e, r)
	} else if uid, ok := vfs.Owner(st); ok {
		r.homeUID, r.homeOwned = uid, true
	}
	r.Exists = true
	var access []cas.AccessProblem
	var torn *cas.Damage // a torn tail the next writer cuts (its copy needs room)
	unopened := map[string]bool{}
	v, err := cas.ReadFormat(e.FS, e.Home)
	r.Format = v
	r.Owner = storeOwnerOf(e.FS, e.Home, err, r.homeUID, r.homeOwned)
	if err != nil {
		r.FormatError = err.Error()
		if errors.Is(err, cas.ErrBadMarker) {
			r.Problems = append(r.Problems, badMarkerMessage(err, e.Home))
		} else {
			r.Problems = append(r.Problems, err.Error())
		}
	} else if s, err := cas.Open(e.Home, cas.Options{FS: e.FS, Clock: e.Clock}); err != nil {
		r.Problems = append(r.Problems, err.Error())
		if d, err := cas.MeasureDisk(e.FS, e.Home); err == nil {
			r.Stored = d.Total
		}
	} else {
		if st, err := s.Stats(); err == nil {
			r.Objects, r.Stored, r.ObjectsCounted = st.Objects, st.Disk.Total, true
		}
		// Opening checks the index's meta slots, not its nodes: a lookup
		// reads the path from the root, so a damaged root, which fails
		// every read, is not called ok. (Deeper nodes are verify's.)
		var nf *cas.NotFoundError
		if _, err := s.Stat(cas.Key{}); err != nil && !errors.As(err, &nf) {
			r.Problems = append(r.Problems, err.Error())
		}
		// What a writer's open refuses (a segment cut short) or passes
		// over (one gone), and a reader's does not say: doctor said ok
		// of a store no write could open.
		if err := s.CheckWatermark(); err != nil {
			r.Problems = append(r.Problems, err.Error())
		}
		// The files a writer opens, opened: a write that failed
		// "permission denied" (a segment `sudo rook` made) sends the user
		// here, and doctor said ok. Said below, with the owners.
		access = s.CheckAccess()
		if d, ok := s.TornTail(); ok {
			torn = &d
		}
		for _, p := range access {
			unopened[p.Path] = true
		}
		r.Warnings = append(r.Warnings, missingDictionaries(e.Home, s)...)
		r.Problems = append(r.Problems, damagedDictionaries(s, unopened)...)
		if err := cas.CheckDictDir(e.FS, e.Home); err != nil {
			// A reader opens without it; no writer does.
			r.Problems = append(r.Problems, err.Error())
		} else if unopened[filepath.Join(e.Home, cas.DictDir, dict.HighestFile)] {
			// Not damage, nor its own problem: its access, said below.
		} else if err := s.DictionaryIDsError(); err != nil {
			// Every object may read, but no dictionary can be trained
			// (train and maintain fail) until the file is dealt with.
			r.Problems = append(r.Problems, "dictionaries: "+err.Error())
		}
		s.Close()
	}
	if r.FormatError == "" {
		r.Problems = append(r.Problems, doctorSessions(e, &r)...)
	}
	// The config file the retention commands read: one they would refuse
	// (a typo in a key, a bad value, a link to nothing) is a problem, in
	// their words. Lstat: a link whose target is gone is a file there, not
	// "none (every setting has its default)".
	if _, err := e.FS.Lstat(filepath.Join(e.Home, agent.ConfigFile)); err == nil {
		r.Config = filepath.Join(e.Home, agent.ConfigFile)
	}
	if _, err := agent.LoadConfig(e.FS, e.Home); err != nil {
		r.ConfigError = err.Error()
		r.Problems = append(r.Problems, err.Error())
	}
	r.Exposed = exposed(e.FS, e.Home)
	r.Private = len(r.Exposed) == 0
	if !r.Private {
		r.Fix = privacyFix(e.FS, e.Home)
		r.Problems = append(r.Problems, fmt.Sprintf("other accounts can read the store: run `%s`", r.Fix))
	}
	r.Warnings = append(r.Warnings, notYours(r.Owner)...)
	r.Problems = append(r.Problems, doctorOwners(e, &r, access)...)
	if holder, err := cas.LockHolder(e.FS, e.Home); err == nil {
		r.LockHolder = holder
		r.LockChecked = true
	} else if unopened[filepath.Join(e.Home, cas.LockFile)] {
		// Its own problem, above: not a store this user may not write.
	} else if notWritable(err) {
		// A store this account may read but not write (another user's,
		// a read-only mount): checking the lock needs write access. That
		// is worth knowing, not a fault of the store.
		r.Warnings = append(r.Warnings, fmt.Sprintf("lock holder unknown: the store is not writable by this user (%v); reading works, commands that write need an account that can write it", err))
	} else {
		r.Problems = append(r.Problems, "cannot check the writer lock: "+err.Error())
	}
	// A rewind that crashed left directories of a workspace open (u+x);
	// while a writer holds the lock, a rewind may be running.
	if dirs, err := agent.LeftOpen(e.FS, e.Home); err != nil {
		r.Warnings = append(r.Warnings, err.Error())
	} else if len(dirs) > 0 && r.LockChecked && r.LockHolder == "" {
		r.Warnings = append(r.Warnings, fmt.Sprintf("a rewind that stopped (killed, or the machine went down) left %d workspace director(ies) it had opened to search them (u+x): %s; any command that writes to the store gives them their modes back as it opens it (`rook inbox ls`, say)", len(dirs), strings.Join(dirs, ", ")))
	}
	tornDirBad := false
	if r.FormatError == "" {
		if p := tornDirProblem(e.FS, e.Home, torn); p != "" {
			r.Problems = append(r.Problems, p)
			tornDirBad = true
		}
	}
	if free, total, err := vfs.DiskFree(e.Home); err == nil {
		r.DiskFree, r.DiskTotal = free, total
		if torn != nil && !tornDirBad && free < uint64(torn.Length) {
			// Every writer's open fails copying it aside (the free
			// space warning below said only that space is short).
			r.Problems = append(r.Problems, fmt.Sprintf("%s: a torn tail no writer acknowledged (a writer stopped mid-write, or one beside doctor is writing it): the next writer's open cuts it off: %s%s", torn, cas.TornTailRoom(torn.Length), tornTailNoRoom(e.Home, torn.Length)))
		}
		if free < 1<<30 {
			r.Warnings = append(r.Warnings, fmt.Sprintf("only %s free on the disk holding the store", formatBytes(int64(free))))
		}
	}
	return c.print(e, r)
}

// tornDirProblem says what is wrong with the store's torn/ directory,
// where every torn tail is copied before it is cut (a segment's, an event
// log's, the inbox spool's) and gc moves a damaged segment: "" when it is
// a directory or is not there (made when first needed). A file in its
// place (a backup tool, a restore, a hand made it) fails each of those,
// and `rook store gc`, with a bare "not a directory"; with a torn tail
// waiting (torn, which a reader's open found), every writer fails, its
// error sending the user here. Said with what to do: rook keeps only
// directories there, so the file is someone's, to be moved aside.
func tornDirProblem(fsys vfs.FS, home string, torn *cas.Damage) string {
	dir := filepath.Join(home, cas.TornDir)
	fi, err := fsys.Stat(dir)
	if err == nil && fi.IsDir() {
		return ""
	}
	what := dir + " is a file, not a directory"
	switch {
	case err == nil:
	case errors.Is(err, fs.ErrNotExist):
		if _, lerr := fsys.Lstat(dir); lerr != nil {
			return "" // not made yet: the first tail cut makes it
		}
		what = dir + " is a symbolic link to nothing"
	default:
		return fmt.Sprintf("cannot look at %s, where every torn tail is copied before it is cut off: %v", dir, err)
	}
	fails := "rook copies every torn tail it cuts off (a crash's, of a segment, an event log or the inbox spool) into that directory first, and `rook store gc` reads it, so those fail"
	if torn != nil {
		fails = fmt.Sprintf("a torn tail no writer acknowledged (%s) is to be copied into that directory before it is cut off, so every write fails", torn)
	}
	return fmt.Sprintf("%s: %s: rook makes only a directory there, so move this aside (`mv %s %s`, and look at what it holds): the next writer makes the directory", what, fails, agent.ShellQuote(dir), agent.ShellQuote(dir+".moved"))
}

// doctorSessions counts the sessions as `session ls` reads them (each one's
// metadata and the end of its log: no body), and names those that do not
// read: zeroed by a crash of the file system, they were left out of every
// listing while doctor said ok.
func doctorSessions(e *Env, r *doctorReport) []string {
	if err := agent.MissingSessionsDir(e.FS, e.Home); err != nil {
		return []string{err.Error()} // no writer opens the store
	}
	l, err := eventlog.Open(filepath.Join(e.Home, cas.EventsDir), eventlog.Options{FS: e.FS, Clock: e.Clock})
	if err != nil {
		return []string{"cannot read the sessions: " + err.Error()}
	}
	defer l.Close() // a reader: nothing to flush, closed all the same
	list, err := l.Sessions()
	var u *eventlog.UnreadableError
	if err != nil && !errors.As(err, &u) {
		return []string{"cannot read the sessions: " + err.Error()}
	}
	r.Sessions, r.SessionsCounted = len(list), true
	if logs, err := agent.LogsWithoutMeta(e.FS, e.Home); err != nil {
		r.Warnings = append(r.Warnings, "cannot list the sessions' logs: "+err.Error())
	} else if len(logs) > 0 {
		// No session: counted nowhere (gc keeps what their events name
		// all the same, until the log is removed). A warning: a session rm that stopped part way
		// leaves one, of a session removed (an import running may have
		// one it has not finished creating).
		r.LogsWithoutMeta = logs
		if holder, _ := cas.LockHolder(e.FS, e.Home); holder != "" {
			// The writer (an import) may be creating them: it writes a
			// session's .meta after its log (agent.NoMetaWhileWriting).
			// The backup or rm advice would lose sessions being made.
			r.Warnings = append(r.Warnings, fmt.Sprintf("%d event log(s) in %s have no .meta beside them yet (%s): the writer %s may be creating them (an import writes each session's .meta after its log): run `rook doctor` again once it ends", len(logs), filepath.Join(e.Home, cas.EventsDir), strings.Join(logs, ", "), holder))
		} else {
			r.Warnings = append(r.Warnings, fmt.Sprintf("%d event log(s) in %s have no .meta beside them (%s): no session lists their events, and gc keeps the objects they name until the log is removed: if their session was not removed, put each .meta back from a backup; if it was, `rook session rm ID` (ID: the log's file name without .log) removes it", len(logs), filepath.Join(e.Home, cas.EventsDir), strings.Join(logs, ", ")))
		}
	}
	if u == nil {
		return nil
	}
	r.SessionsUnreadable = u.IDs
	return []string{fmt.Sprintf("%d session(s) do not read: %v: %s", len(u.IDs), u, unreadableAdvice(u))}
}

// missingDictionaries names the dictionary ids given out that have no
// file. A file lost leaves every object compressed with it unreadable
// until it is back, and doctor said ok of such a store; but a train cut
// short (a crash, a full disk between recording the id and writing the
// file) leaves the same, with no record naming it and no file to put
// back. Only reading the records tells the two apart, which is verify's
// work: a warning, so a healthy store is not failed for good.
func missingDictionaries(home string, s *cas.Store) []string {
	var out []string
	for _, id := range s.MissingDictionaries() {
		out = append(out, fmt.Sprintf("dictionary %d is missing (no file %s): lost, or a train a crash or a full disk cut short; `rook store verify` says whether records need it: if they do, they cannot be read until it is back: put it back from a backup", id, filepath.Join(home, cas.DictDir, dict.FileName(id))))
	}
	// A drop cut short after its mark: nothing compresses with the
	// dictionary, but its file (which may hold pieces of what gc
	// collected) is still there.
	for _, id := range s.DropsCutShort() {
		out = append(out, fmt.Sprintf("dictionary %d is marked dropped but its file %s is still there (a drop cut short): run `rook store repack --drop-dictionary %d` again to finish it", id, filepath.Join(home, cas.DictDir, dict.FileName(id)), id))
	}
	return out
}

// damagedDictionaries names the dictionary files that do not read: every
// object compressed with one is unreadable until it is whole, and doctor
// said ok of a store whose every transcript failed to read. (A file is
// written whole, once, by the durable-write helper: one that does not
// read was damaged after.) One in unopened, which its permissions keep
// from reading, is not damaged: it is named with them, and "put it back
// from a backup" would replace a whole file.
func damagedDictionaries(s *cas.Store, unopened map[string]bool) []string {
	var out []string
	for _, d := range s.Dictionaries() {
		if d.Damaged != "" && !unopened[d.File] {
			out = append(out, fmt.Sprintf("dictionary %d is damaged (%s): the objects compressed with it cannot be read until it is whole: put %s back from a backup (`rook store verify` says whether any object needs it)", d.ID, d.Damaged, d.File))
		}
	}
	return out
}

// privacyFix is the command that closes the store to other accounts, its
// paths quoted for the shell: pasted unquoted, a home with a space in its
// name changed the permissions of other paths, and not the store's. In a
// home that holds files of the user's own (init takes a directory that is
// not empty), it closes the home and the store's parts, and leaves the
// user's files as they are.
func privacyFix(fsys vfs.FS, home string) string {
	return onTheStore(fsys, home, "chmod", "go-rwx")
}

// onTheStore is the shell command that runs cmd (chmod, chown) with arg
// on the whole store: `cmd -R arg HOME`, or, in a home that holds files
// of the user's own, on the home and on the store's parts only.
func onTheStore(fsys vfs.FS, home, cmd, arg string) string {
	parts, foreign := storeParts(fsys, home)
	if !foreign || len(parts) == 0 {
		return cmd + " -R " + arg + " " + agent.ShellQuote(home)
	}
	return cmd + " " + arg + " " + agent.ShellQuote(home) + " && " + cmd + " -R " + arg + " " + strings.Join(parts, " ")
}

// storeParts lists the store's parts in home, shell-quoted, and whether
// the home holds files of the user's own beside them (foreign).
func storeParts(fsys vfs.FS, home string) (parts []string, foreign bool) {
	ents, _ := fsys.ReadDir(home)
	for _, ent := range ents {
		if cas.IsHomeEntry(ent.Name()) {
			parts = append(parts, agent.ShellQuote(filepath.Join(home, ent.Name())))
		} else {
			foreign = true
		}
	}
	return parts, foreign
}

// exposed lists the store's paths (the home and its parts, and what is
// directly in them) that other accounts can read or enter.
func exposed(fsys vfs.FS, home string) []string {
	var out []string
	storePaths(fsys, home, func(path string, st fs.FileInfo) {
		if st.Mode().Perm()&0o077 != 0 {
			out = append(out, fmt.Sprintf("%s (mode %04o)", path, st.Mode().Perm()))
		}
	})
	return out
}

// storePaths calls fn with each of the store's paths (the home and its
// parts, and what is directly in them; not the user's own files beside
// them) and what Stat says of it: a walk of the home's few directories,
// the events' two files a session included, never a file read.
func storePaths(fsys vfs.FS, home string, fn func(path string, st fs.FileInfo)) {
	check := func(path string) {
		// A config.toml linked to /dev/null (no settings) is not the
		// store's to make private: its mode is the device's.
		if st, err := fsys.Stat(path); err == nil && !agent.NullDevice(st) {
			fn(path, st)
		}
	}
	check(home)
	ents, _ := fsys.ReadDir(home)
	for _, ent := range ents {
		if !cas.IsHomeEntry(ent.Name()) {
			continue // the user's own, not the store's to close
		}
		p := filepath.Join(home, ent.Name())
		check(p)
		if ent.IsDir() {
			sub, _ := fsys.ReadDir(p)
			for _, s := range sub {
				check(filepath.Join(p, s.Name()))
			}
		}
	}
}

// userName is the name of the account with user id uid, or "" where the
// system does not say.
func userName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return u.Username
	}
	return ""
}

// account names a user id for a person: "nobody (uid 65534)", or
// "uid 65534" where the system has no name for it.
func account(uid int, name string) string {
	if name == "" {
		return fmt.Sprintf("uid %d", uid)
	}
	return fmt.Sprintf("%s (uid %d)", name, uid)
}

// storeOwnerOf is the account the store is: FORMAT's owner, the marker
// being written once, by the `rook init` that made the store (whose every
// file, then, is that account's), in a home it made or one another
// account made for it (a provisioned volume, `install -d -o svc`). Where
// FORMAT does not say (missing, not stat-able, not rook's marker: fmtErr
// is cas.ReadFormat's), the home's owner (homeUID, when homeOwned). The
// home's owner alone called a store root made in a directory nobody owns
// nobody's, each of its files foreign, with `chown -R nobody` for them.
func storeOwnerOf(fsys vfs.FS, home string, fmtErr error, homeUID int, homeOwned bool) *storeOwner {
	uid, ok := homeUID, homeOwned
	if fmtErr == nil || errors.Is(fmtErr, fs.ErrPermission) {
		if st, err := fsys.Lstat(filepath.Join(home, cas.MarkerFile)); err == nil && st.Mode().IsRegular() {
			if u, uok := vfs.Owner(st); uok {
				uid, ok = u, true
			}
		}
	}
	if !ok {
		return nil
	}
	return &storeOwner{UID: uid, Name: userName(uid), You: uid == os.Geteuid()}
}

// notYours warns when the store belongs to another account than the one
// rook runs as (root, `sudo rook`): "only you can read it" was said of a
// store its owner reads too, and every file rook writes in it as this
// account (a session's .meta and log, a new segment) is this account's,
// which the owner may then not open (its `rook store put` failed
// "permission denied" on the segment root made).
func notYours(o *storeOwner) []string {
	if o == nil || o.You {
		return nil
	}
	as := o.Name
	if as == "" {
		as = fmt.Sprintf("'#%d'", o.UID)
	}
	return []string{fmt.Sprintf("the store belongs to another account, %s, not to you, %s: what rook writes in it as you (a session's .meta and log, a new segment) is yours, and its owner may then not open it: run rook as its owner (`sudo -u %s rook ...`)", account(o.UID, o.Name), account(os.Geteuid(), userName(os.Geteuid())), as)}
}

// doctorOwners names the store's files another account than its owner
// owns, and the files a writer opens that may not be opened as it must
// (access, from cas.CheckAccess), each with what fixes it: a chown for the
// first (only root may give a file to another account), a chmod for the
// second. A file of both is named once, with the chown: its mode is its
// owner's to set, and the one who should own it may not. A home of
// another account than the store's is not named: rook writes no home but
// the one the init that made the store made, so another account made it
// for the store, and the chown leaves it as it is.
func doctorOwners(e *Env, r *doctorReport, access []cas.AccessProblem) []string {
	var out []string
	foreign := map[string]bool{}
	if r.Owner != nil {
		homeTheirs := r.homeOwned && r.homeUID != r.Owner.UID
		var named []string
		storePaths(e.FS, e.Home, func(path string, st fs.FileInfo) {
			if path == e.Home && homeTheirs {
				return
			}
			if uid, ok := vfs.Owner(st); ok && uid != r.Owner.UID {
				foreign[path] = true
				r.ForeignOwned = append(r.ForeignOwned, path)
				who := userName(uid)
				if who == "" {
					who = fmt.Sprintf("uid %d", uid)
				}
				named = append(named, fmt.Sprintf("%s (%s's)", path, who))
			}
		})
		if n := len(named); n > 0 {
			if n > 5 {
				named = append(named[:5], fmt.Sprintf("and %d more", n-5))
			}
			out = append(out, fmt.Sprintf("%d of the store's files belong to another account than its owner, %s: %s: its owner may not be able to open them, and commands that need them fail \"permission denied\" (rook run as another account, `sudo rook` or a hook run as root, wrote them?): run, as root, `%s`", n, account(r.Owner.UID, r.Owner.Name), strings.Join(named, ", "), ownerFix(e.FS, e.Home, r.Owner, homeTheirs)))
		}
	}
	for _, p := range access {
		if foreign[p.Path] {
			continue
		}
		r.Unopenable = append(r.Unopenable, p.Path)
		fix := fmt.Sprintf("run `chmod 600 %s` as its owner", agent.ShellQuote(p.Path))
		if p.Mode&0o600 == 0o600 {
			// Its mode is not what refuses: an ACL, an attribute,
			// a security module.
			fix = fmt.Sprintf("its mode allows it, so something else refuses (an ACL, `chattr +i`): see `ls -l %s` and `lsattr` of it", agent.ShellQuote(p.Path))
		}
		out = append(out, p.Error()+": "+fix)
	}
	return out
}

// ownerFix is the command that gives the store back to its owner (as
// privacyFix, the user's own files beside it left as they are; the home
// too, when another account's: homeTheirs).
func ownerFix(fsys vfs.FS, home string, o *storeOwner, homeTheirs bool) string {
	who := strconv.Itoa(o.UID)
	if o.Name != "" {
		who = agent.ShellQuote(o.Name)
	}
	if parts, _ := storeParts(fsys, home); homeTheirs && len(parts) > 0 {
		return "chown -R " + who + " " + strings.Join(parts, " ")
	}
	return onTheStore(fsys, home, "chown", who)
}

func (c *DoctorCmd) print(e *Env, r doctorReport) error {
	if e.JSON {
		// A failed write is Main's to tell, after the verdict below.
		if err := unprinted(e.printJSON(r)); err != nil {
			return err
		}
	} else {
		w := e.Stdout
		fmt.Fprintf(w, "store      %s\n", r.Home)
		if r.Exists {
			switch {
			case r.FormatError == "":
				fmt.Fprintf(w, "format     %d (this rook reads up to %d)\n", r.Format, cas.FormatVersion)
				if r.ObjectsCounted {
					fmt.Fprintf(w, "holds      %d objects, %s on disk\n", r.Objects, formatBytes(r.Stored))
				} else {
					fmt.Fprintf(w, "holds      unknown: the index does not read (below); %s on disk\n", formatBytes(r.Stored))
				}
				fmt.Fprintf(w, "verify     not run: doctor does not read the objects; `rook store verify` re-reads and re-hashes them\n")
			case r.Format > cas.FormatVersion:
				fmt.Fprintf(w, "format     %d, newer than this rook reads (%d): upgrade rook\n", r.Format, cas.FormatVersion)
			default:
				fmt.Fprintf(w, "format     unreadable: %s\n", r.FormatError)
			}
			switch {
			case !r.SessionsCounted:
			case len(r.SessionsUnreadable) > 0:
				fmt.Fprintf(w, "sessions   %d read, %d do not\n", r.Sessions, len(r.SessionsUnreadable))
			default:
				fmt.Fprintf(w, "sessions   %d\n", r.Sessions)
			}
			switch {
			case r.ConfigError != "":
				fmt.Fprintf(w, "config     %s\n", r.ConfigError)
			case r.Config != "":
				fmt.Fprintf(w, "config     %s\n", r.Config)
			default:
				fmt.Fprintf(w, "config     none (every setting has its default)\n")
			}
			switch {
			case r.Private && r.Owner != nil && !r.Owner.You:
				fmt.Fprintf(w, "privacy    only its owner can read it: %s, not you\n", account(r.Owner.UID, r.Owner.Name))
			case r.Private:
				fmt.Fprintf(w, "privacy    only you can read it\n")
			default:
				fmt.Fprintf(w, "privacy    other accounts can read it:\n")
				for _, p := range r.Exposed {
					fmt.Fprintf(w, "             %s\n", p)
				}
				fmt.Fprintf(w, "           fix: %s\n", r.Fix)
			}
			switch {
			case !r.LockChecked:
				fmt.Fprintf(w, "writer     unknown (the lock could not be checked)\n")
			case r.LockHolder == "":
				fmt.Fprintf(w, "writer     none (the store is free)\n")
			default:
				fmt.Fprintf(w, "writer     locked by %s\n", r.LockHolder)
			}
			if r.DiskTotal > 0 {
				fmt.Fprintf(w, "disk       %s free of %s\n", formatBytes(int64(r.DiskFree)), formatBytes(int64(r.DiskTotal)))
			}
		}
		for _, wn := range r.Warnings {
			fmt.Fprintf(w, "warning    %s\n", wn)
		}
		if len(r.Problems) == 0 {
			fmt.Fprintln(w, "ok")
		}
	}
	if len(r.Problems) > 0 {
		// Each its own "rook:" line in text; under --json one error
		// line, where a "rook: " inside read as part of a message.
		sep := "\nrook: "
		if e.JSON {
			sep = "; "
		}
		return &exitError{code: ExitFailure, msg: strings.Join(r.Problems, sep)}
	}
	return nil
}

// inHome is the path of mkdir error err when it is a directory inside home
// (not home itself, nor one above it), else "".
func inHome(home string, err error) string {
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		return ""
	}
	if rel, rerr := filepath.Rel(home, pe.Path); rerr != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return ""
	}
	return pe.Path
}
