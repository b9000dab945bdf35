package agent

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/clock"
	"github.com/rookhq/rook/internal/vfs"
)

// lastByFullScan is what `last` resolved to before lastActive read only
// the logs that could be newer: every session's summary, the greatest by
// activeBefore.
func lastByFullScan(t *testing.T, r *Rook, cwd string) eventlog.ID {
	t.Helper()
	ids, err := r.Log.IDs()
	if err != nil {
		t.Fatal(err)
	}
	var best *eventlog.Summary
	for _, id := range ids {
		m, err := r.Log.ReadMeta(id)
		if err != nil || !SameDir(m.Workspace, cwd) {
			continue
		}
		s, err := r.Log.SummaryOf(m)
		if err != nil {
			continue
		}
		if best == nil || activeBefore(*best, s) {
			best = &s
		}
	}
	if best == nil {
		t.Fatal("the full scan finds no session")
	}
	return best.ID
}

// onDisk is a writable Rook on the OS file system with the system clock:
// the only place where a log's modification time bounds its events
// (eventlog's WrittenBy), and so where lastActive skips logs.
func onDisk(t *testing.T) (*Rook, string) {
	t.Helper()
	home := t.TempDir()
	if _, err := cas.Init(vfs.OS, clock.System, home); err != nil {
		t.Fatal(err)
	}
	r, err := Open(home, Options{Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, home
}

const lastWS = "/work/last"

func newIn(t *testing.T, r *Rook, title string) eventlog.ID {
	t.Helper()
	m, err := r.NewSession(title, lastWS, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m.ID
}

// appendAt appends an event at `at`; at zero, now: after a pause of two
// milliseconds, the resolution an event's time is kept to, so that it is
// later than what was made before it, not tied with it (a tie goes to the
// newer id: "the full scan says <the session made just before>").
func appendAt(t *testing.T, r *Rook, id eventlog.ID, at time.Time) {
	t.Helper()
	if at.IsZero() {
		time.Sleep(2 * time.Millisecond)
	}
	if _, err := r.Append(id, Entry{Kind: eventlog.KindUser, Label: "u", Body: []byte("b " + at.String()), Time: at}); err != nil {
		t.Fatal(err)
	}
	if err := r.Log.Flush(); err != nil {
		t.Fatal(err)
	}
}

// setLogTime sets a session's log's modification time, as a log last
// written then has.
func setLogTime(t *testing.T, home string, id eventlog.ID, at time.Time) {
	t.Helper()
	if err := os.Chtimes(filepath.Join(home, cas.EventsDir, id.String()+".log"), at, at); err != nil {
		t.Fatal(err)
	}
}

// checkLast resolves last, and checks it against the full scan and want.
func checkLast(t *testing.T, r *Rook, want eventlog.ID) {
	t.Helper()
	if full := lastByFullScan(t, r, lastWS); full != want {
		t.Fatalf("the full scan says %s, the test wants %s", full, want)
	}
	got, err := r.ResolveSession("last", lastWS)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("last is %s, want %s (the full scan's)", got, want)
	}
}

// An old session appended to after newer ones were made is last: its
// log, written last, is read first.
func TestLastIsTheSessionAppendedLast(t *testing.T) {
	r, _ := onDisk(t)
	old := newIn(t, r, "old")
	for i := range 20 {
		newIn(t, r, "newer "+string(rune('a'+i)))
	}
	appendAt(t, r, old, time.Time{})
	checkLast(t, r, old)
}

// A fork made now of an old session is last (its creation), whatever
// the times of the events it copied.
func TestLastIsTheForkJustMade(t *testing.T) {
	r, _ := onDisk(t)
	old := newIn(t, r, "old")
	appendAt(t, r, old, time.Now().Add(-48*time.Hour))
	appendAt(t, r, old, time.Now().Add(-47*time.Hour))
	newIn(t, r, "newer")
	f, err := r.Log.Fork(old, 1, eventlog.Meta{Title: "old @1"})
	if err != nil {
		t.Fatal(err)
	}
	checkLast(t, r, f.ID)
}

// Of two sessions touched at the same time, the one created last is:
// one whose bound is exactly the best time found is still read.
func TestLastOfEqualTimesAtTheBound(t *testing.T) {
	r, home := onDisk(t)
	newIn(t, r, "older")
	// Two sessions created in the same millisecond, no events: touched
	// at the same time, their creation.
	r.Log.SetBulk(true)
	var a, b eventlog.Meta
	for i := 0; ; i++ {
		if i == 10000 {
			t.Skip("no two sessions created in the same millisecond")
		}
		var err error
		if a, err = r.Log.Create(eventlog.Meta{Title: "a", Workspace: lastWS}); err != nil {
			t.Fatal(err)
		}
		if b, err = r.Log.Create(eventlog.Meta{Title: "b", Workspace: lastWS}); err != nil {
			t.Fatal(err)
		}
		if a.Created.Equal(b.Created) {
			break
		}
	}
	r.Log.SetBulk(false)
	if err := r.Log.Flush(); err != nil {
		t.Fatal(err)
	}
	// a, created first, is read first (the newer bound) and found best;
	// b's bound is then exactly that time: b may still be later, by id.
	setLogTime(t, home, a.ID, a.Created.Add(-time.Second))
	setLogTime(t, home, b.ID, b.Created.Add(-2*time.Second))
	checkLast(t, r, b.ID)
}

// A session whose log or metadata does not read is not last: the next
// one is, as the full scan has it.
func TestLastSkipsDamagedSessions(t *testing.T) {
	r, home := onDisk(t)
	want := newIn(t, r, "good")
	appendAt(t, r, want, time.Time{})
	badLog := newIn(t, r, "bad log")
	appendAt(t, r, badLog, time.Time{})
	badMeta := newIn(t, r, "bad meta")
	appendAt(t, r, badMeta, time.Time{})
	if err := os.WriteFile(filepath.Join(home, cas.EventsDir, badLog.String()+".log"), []byte("not a log"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, cas.EventsDir, badMeta.String()+".meta"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	checkLast(t, r, want)
}

// An imported session's events carry its transcript's times, which may
// be later than the import (a transcript from a machine whose clock was
// ahead): its log's time bounds nothing, and it is read whatever it is.
// So is a fork of it, which copies those times.
func TestLastImportedAheadOfItsLog(t *testing.T) {
	r, home := onDisk(t)
	imp, err := r.Log.Create(eventlog.Meta{Title: "imported", Workspace: lastWS, Source: &eventlog.Source{Format: "claude-code", Path: "/t/a.jsonl"}})
	if err != nil {
		t.Fatal(err)
	}
	ahead := time.Now().Add(time.Hour)
	appendAt(t, r, imp.ID, ahead)
	setLogTime(t, home, imp.ID, time.Now().Add(-time.Hour)) // imported an hour ago
	native := newIn(t, r, "native")
	appendAt(t, r, native, time.Time{})
	checkLast(t, r, imp.ID)

	f, err := r.Log.Fork(imp.ID, 1, eventlog.Meta{Title: "fork"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Log.Remove(imp.ID); err != nil {
		t.Fatal(err)
	}
	setLogTime(t, home, f.ID, time.Now().Add(-time.Hour)) // forked an hour ago
	checkLast(t, r, f.ID)
}

// A log whose modification time is older than its session's creation (a
// store restored from an archive that set its files' times back, a log
// touched by hand) bounds nothing: it is read, and its session, touched
// last, is last.
func TestLastWhenALogsTimeIsBeforeItsCreation(t *testing.T) {
	r, home := onDisk(t)
	newIn(t, r, "older")
	restored := newIn(t, r, "restored")
	newIn(t, r, "newer")
	appendAt(t, r, restored, time.Time{})
	setLogTime(t, home, restored, time.Now().Add(-time.Hour))
	checkLast(t, r, restored)
}

// A store whose file times all moved back (restored from an archive that
// set them so, a file system stamping from a clock behind rook's): the
// first log read, touched after its bound, shows the bounds are not to be
// trusted, and every log is read. Here the log of the session touched
// before last was written last (its torn tail cut, say), and each log's
// time is an hour behind.
func TestLastWhenTheLogsTimesAreBehindTheEvents(t *testing.T) {
	r, home := onDisk(t)
	before := newIn(t, r, "touched before")
	last := newIn(t, r, "touched last")
	appendAt(t, r, before, time.Time{})
	appendAt(t, r, last, time.Time{})
	// Both made two hours ago, so that their creation is no sign.
	for _, id := range []eventlog.ID{before, last} {
		m, err := r.Log.ReadMeta(id)
		if err != nil {
			t.Fatal(err)
		}
		m.Created = m.Created.Add(-2 * time.Hour)
		if err := r.Log.UpdateMeta(m); err != nil {
			t.Fatal(err)
		}
	}
	behind := time.Now().Add(-time.Hour)
	setLogTime(t, home, before, behind.Add(time.Second))
	setLogTime(t, home, last, behind)
	checkLast(t, r, last)
}

// A session made through a symbolic link to a directory is that
// directory's, and one made in the directory is the link's: `last` names
// the newest of both from either path. It named, from the link, only the
// sessions made through it, and events went to an older session with
// nothing said. A directory that is not the same one (a copy, a
// workspace gone) stays another workspace.
func TestLastTakesALinkedWorkspaceAsTheSame(t *testing.T) {
	r, _ := onDisk(t)
	dir := t.TempDir()
	real, link, other := filepath.Join(dir, "real"), filepath.Join(dir, "link"), filepath.Join(dir, "other")
	for _, d := range []string{real, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	old, err := r.NewSession("old, through the link", link, nil)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond) // a later creation time
	newer, err := r.NewSession("new, in the directory", real, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.NewSession("elsewhere", other, nil); err != nil {
		t.Fatal(err)
	}
	gone, err := r.NewSession("in a workspace removed since", filepath.Join(dir, "gone"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, cwd := range []string{real, link, link + "/", filepath.Join(dir, "x", "..", "link")} {
		if got, err := r.ResolveSession("last", cwd); err != nil || got != newer.ID {
			t.Errorf("last in %s: %s, %v; want %s (not %s)", cwd, got, err, newer.ID, old.ID)
		}
	}
	here := NewWorkspace(r.fs, link)
	if !here.Holds(real) || !here.Holds(link) || here.Holds(other) || here.Holds("") || here.Holds(filepath.Join(dir, "gone")) {
		t.Error("the workspace at the link holds what it should not, or not what it should")
	}
	if got, err := r.ResolveSession("last", filepath.Join(dir, "gone")); err != nil || got != gone.ID {
		t.Errorf("last in a workspace not there: %s, %v; want %s, by its path", got, err, gone.ID)
	}
}

// `last` in a directory that is no session's workspace names no session
// (it took the nearest enclosing workspace's for a while: from a nested
// repository that one acted on another project's session): the error
// names the nearest directory above that is one (through a link too), and
// its session, to name by id. Neither the home directory nor the
// filesystem's root is named from below them.
func TestLastInASubdirectoryNamesTheEnclosingWorkspacesSession(t *testing.T) {
	r, _ := onDisk(t)
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	ws, own, link := filepath.Join(home, "proj", "ws"), filepath.Join(home, "proj", "ws", "own"), filepath.Join(dir, "link")
	for _, d := range []string{ws + "/sub/deeper", own + "/in", home + "/other"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(ws, link); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	outer, err := r.NewSession("ws", ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	inner, err := r.NewSession("own", own, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.NewSession("in home", home, nil); err != nil {
		t.Fatal(err)
	}
	if got, err := r.ResolveSession("last", own); err != nil || got != inner.ID {
		t.Errorf("last in %s: %s, %v; want its own %s", own, got, err, inner.ID)
	}
	for cwd, above := range map[string]string{
		ws + "/sub":        ws,
		ws + "/sub/deeper": ws,
		link + "/sub":      ws,
		own + "/in":        own,
	} {
		got, err := r.ResolveSession("last", cwd)
		if !errors.Is(err, ErrNoLast) {
			t.Errorf("last in %s: %s, %v; want no session", cwd, got, err)
			continue
		}
		id := outer.ID
		if above == own {
			id = inner.ID
		}
		if !strings.Contains(err.Error(), id.String()) {
			t.Errorf("last in %s: %v; want it to name %s's session %s", cwd, err, above, id)
		}
	}
	for _, cwd := range []string{home + "/other", filepath.Join(home, "proj"), dir} {
		got, err := r.ResolveSession("last", cwd)
		if !errors.Is(err, ErrNoLast) || strings.Contains(err.Error(), "above it") {
			t.Errorf("last in %s: %s, %v; want no session, and none above named (the home directory's is not)", cwd, got, err)
		}
	}
}
