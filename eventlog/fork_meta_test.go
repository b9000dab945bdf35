package eventlog

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rookhq/rook/internal/clock"
	"github.com/rookhq/rook/internal/vfs"
	"github.com/rookhq/rook/internal/vfs/vfstest"
)

// TestForkLostMetaRebuilt: a fork made (its .meta written: acknowledged)
// and not appended to, whose writer then crashed, is tagged "new" and
// named with no size in the marker left. Its .meta lost before the
// recovery, its log (copies of its parent's events) was removed as one
// never made. The recovery now writes its metadata back as the fork was
// made: parent, fork point, title, tags and workspace.
func TestForkLostMetaRebuilt(t *testing.T) {
	for _, at := range []uint64{0, 2} {
		fsys := vfs.NewMem()
		l := testLog(t, fsys, Options{})
		parent, err := l.Create(Meta{Title: "parent", Workspace: "/w"})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			if _, err := l.Append(parent.ID, Event{Kind: KindUser, Body: body(i)}); err != nil {
				t.Fatal(err)
			}
		}
		f, err := l.Fork(parent.ID, at, Meta{Title: "the fork", Tags: []string{"keep", "x"}})
		if err != nil {
			t.Fatal(err)
		}
		// l crashes (no Close); the fork's .meta is lost before the
		// next writer's open.
		if err := fsys.Remove(l.metaPath(f.ID)); err != nil {
			t.Fatal(err)
		}
		w, err := Open("/h/events", Options{FS: fsys, Writable: true})
		if err != nil {
			t.Fatal(err)
		}
		m, err := w.ReadMeta(f.ID)
		if err != nil {
			t.Fatalf("fork at %d: acknowledged fork gone after recovery: %v (notices %q)", at, err, w.Notices)
		}
		if m.Parent == nil || *m.Parent != parent.ID || m.ForkAt == nil || *m.ForkAt != at || m.Title != "the fork" || !slices.Equal(m.Tags, []string{"keep", "x"}) || m.Workspace != "/w" || !m.Created.Equal(f.Created) {
			t.Fatalf("fork at %d: rebuilt metadata %+v, want %+v", at, m, f)
		}
		evs, err := w.Read(f.ID, 0, 10)
		if err != nil || uint64(len(evs)) != at {
			t.Fatalf("fork at %d: rebuilt fork reads %d events, %v", at, len(evs), err)
		}
		if len(w.Notices) != 1 || !strings.Contains(w.Notices[0], "rebuilt") || !strings.Contains(w.Notices[0], f.ID.String()) {
			t.Fatalf("fork at %d: notices %q: want one saying the fork's metadata was rebuilt", at, w.Notices)
		}
		// The record is spent, as the tags are: the marker (kept until
		// w closes after a barrier) no longer holds it.
		if b, err := vfs.ReadFile(fsys, "/h/events/"+dirtyMarker); err != nil || strings.Contains(string(b), " "+tagFork+" ") {
			t.Fatalf("fork at %d: the marker after recovery still records the fork (%v): %q", at, err, b)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// forkState is what forkWorkload had acknowledged when it crashed.
type forkState struct {
	parent  ID
	fork    ID // zero until Fork returned
	forkEvs int
	retag   bool // the fork's new tags acknowledged
}

// forkWorkload makes a session of 3 events, forks it at 2 with its own
// title and tags, appends to the fork, changes its tags, and forks the
// fork at 0, recording
// what each step acknowledged; it never closes (its writer is killed).
func forkWorkload(fsys *vfs.MemFS, st *forkState) error {
	clk := &clock.Fixed{T: time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)}
	l, err := Open("/h/events", Options{FS: fsys, Writable: true, Clock: clk})
	if err != nil {
		return err
	}
	p, err := l.Create(Meta{Title: "parent", Workspace: "/w"})
	if err != nil {
		return err
	}
	st.parent = p.ID
	for i := 0; i < 3; i++ {
		if _, err := l.Append(p.ID, Event{Kind: KindUser, Body: body(i)}); err != nil {
			return err
		}
	}
	f, err := l.Fork(p.ID, 2, Meta{Title: "fork", Tags: []string{"keep"}})
	if err != nil {
		return err
	}
	st.fork, st.forkEvs = f.ID, 2
	if _, err := l.Append(f.ID, Event{Kind: KindUser, Body: body(9)}); err != nil {
		return err
	}
	if err := l.Flush(); err != nil {
		return err
	}
	st.forkEvs = 3
	f.Tags = []string{"keep", "more"}
	if err := l.UpdateMeta(f); err != nil {
		return err
	}
	st.retag = true
	_, err = l.Fork(f.ID, 0, Meta{Title: "fork of fork"})
	return err
}

// TestForkCrashSweepLostMeta crashes a fork at every write, with the
// strict crash state and random survivals of unsynced writes; each state
// is recovered as it is, and again with the forks' .meta lost before the
// recovery. After it, every log has its .meta (no fork is half there),
// every session made by a fork is whole (its parent, fork point, title,
// tags and the events it copied), and an acknowledged fork is there with
// every event acknowledged.
func TestForkCrashSweepLostMeta(t *testing.T) {
	var st forkState
	rebuilt := map[bool]int{} // recoveries that rebuilt a fork's .meta, by whether the .meta was lost
	n := vfstest.Sweep(t, rand.New(rand.NewPCG(3, 4)), 6, nil,
		func(fsys *vfs.MemFS) error {
			st = forkState{}
			return forkWorkload(fsys, &st)
		},
		func(k int, states []*vfs.MemFS) {
			for i, crashed := range states {
				for _, lose := range []bool{false, true} {
					fsys := crashed.KillClone()
					if lose {
						ents, _ := fsys.ReadDir("/h/events")
						for _, e := range ents {
							b, _ := vfs.ReadFile(fsys, "/h/events/"+e.Name())
							if strings.HasSuffix(e.Name(), ".meta") && strings.Contains(string(b), `"parent":`) {
								if err := fsys.Remove("/h/events/" + e.Name()); err != nil {
									t.Fatal(err)
								}
							}
						}
					}
					if checkForkRecovery(t, fsys, st, k, i, lose) {
						rebuilt[lose]++
					}
				}
			}
		})
	if n < 10 {
		t.Fatalf("swept %d crash points: the workload writes more", n)
	}
	if rebuilt[true] == 0 {
		t.Fatal("no recovery rebuilt a fork's .meta: the sweep does not reach what it tests")
	}
	t.Logf("swept %d crash points; recoveries that rebuilt a fork's .meta: %d with the forks' .meta lost, %d as the crash left them", n, rebuilt[true], rebuilt[false])
}

// checkForkRecovery recovers fsys and checks it; it says whether the
// recovery rebuilt a fork's .meta.
func checkForkRecovery(t *testing.T, fsys *vfs.MemFS, st forkState, k, i int, lost bool) bool {
	t.Helper()
	where := func() string { return fmt.Sprintf("crash at %d, state %d (forks' .meta lost: %v)", k, i, lost) }
	l, err := Open("/h/events", Options{FS: fsys, Writable: true})
	if err != nil {
		t.Fatalf("%s: open: %v", where(), err)
	}
	defer func() {
		if err := l.Close(); err != nil {
			t.Errorf("%s: close after recovery: %v", where(), err)
		}
	}()
	ents, err := fsys.ReadDir("/h/events")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".log")
		if !ok {
			continue
		}
		// The parent's Create cut short leaves a log of no event before
		// its writer wrote a marker: it waits for a later recovery,
		// nothing is lost with it. Any other log has its .meta.
		if id, err := ParseID(name); err == nil && !vfs.Exists(fsys, l.metaPath(id)) && !(st.parent == ID{} && logSize(fsys, l.logPath(id)) <= logHeaderSize) {
			t.Fatalf("%s: recovery left the log %s without .meta (notices %q)", where(), e.Name(), l.Notices)
		}
	}
	sessions, err := l.Sessions()
	if err != nil {
		t.Fatalf("%s: sessions: %v", where(), err)
	}
	found := false
	for _, s := range sessions {
		if s.Parent == nil {
			if s.Title != "parent" {
				t.Fatalf("%s: session %+v is none the workload made", where(), s.Meta)
			}
			continue
		}
		evs, err := l.Read(s.ID, 0, 10)
		if err != nil {
			t.Fatalf("%s: session %s is listed but does not read: %v", where(), s.ID, err)
		}
		switch {
		case s.Title == "fork":
			if pm, err := l.ReadMeta(*s.Parent); err != nil || pm.Title != "parent" {
				t.Fatalf("%s: fork %s names parent %s: %v", where(), s.ID, *s.Parent, err)
			}
			retagged := slices.Equal(s.Tags, []string{"keep", "more"})
			if *s.ForkAt != 2 || s.Title != "fork" || !(retagged || slices.Equal(s.Tags, []string{"keep"})) || s.Workspace != "/w" {
				t.Fatalf("%s: fork %+v, want it at 2 with its title, tags and workspace", where(), s.Meta)
			}
			if len(evs) < 2 || evs[0].Body != body(0) || evs[1].Body != body(1) {
				t.Fatalf("%s: fork %s holds %d events, not its parent's first 2", where(), s.ID, len(evs))
			}
			if s.ID == st.fork {
				found = true
				if len(evs) < st.forkEvs {
					t.Fatalf("%s: fork has %d events, %d acknowledged", where(), len(evs), st.forkEvs)
				}
				if st.retag && !retagged {
					t.Fatalf("%s: fork has tags %q, its new tags acknowledged", where(), s.Tags)
				}
			}
		case s.Title == "fork of fork":
			if pm, err := l.ReadMeta(*s.Parent); err != nil || pm.Title != "fork" {
				t.Fatalf("%s: fork of the fork %s names parent %s: %v", where(), s.ID, *s.Parent, err)
			}
			if *s.ForkAt != 0 || s.Title != "fork of fork" || len(evs) != 0 {
				t.Fatalf("%s: fork of the fork %+v with %d events", where(), s.Meta, len(evs))
			}
		default:
			t.Fatalf("%s: session %+v is no fork the workload made", where(), s.Meta)
		}
		if seq, err := l.Append(s.ID, Event{Kind: KindNote, Body: body(7)}); err != nil || seq != uint64(len(evs)) {
			t.Fatalf("%s: append to %s after recovery: seq %d, %v", where(), s.ID, seq, err)
		}
	}
	if st.fork != (ID{}) && !found {
		t.Fatalf("%s: the acknowledged fork %s is gone (notices %q)", where(), st.fork, l.Notices)
	}
	if _, err := l.ReadMeta(st.parent); st.parent != (ID{}) && errors.Is(err, ErrNoSession) {
		t.Fatalf("%s: the parent is gone", where())
	}
	for _, n := range l.Notices {
		if strings.HasPrefix(n, "rebuilt ") {
			return true
		}
	}
	return false
}

func logSize(fsys vfs.FS, path string) int64 {
	fi, err := fsys.Stat(path)
	if err != nil {
		return -1
	}
	return fi.Size()
}

// TestRemovedForkNotRebuilt: a fork removed by the writer that made it,
// the removal cut short after its .meta went (its log's removal failed),
// keeps its log, which the marker both records as a fork and tags "rm".
// The next writer's open removes that log: the removal was begun, and the
// fork is not brought back from the marker's record of it.
func TestRemovedForkNotRebuilt(t *testing.T) {
	fsys := vfs.NewMem()
	l := testLog(t, fsys, Options{})
	parent := mustCreate(t, l, "parent")
	if _, err := l.Append(parent.ID, Event{Kind: KindUser, Body: body(0)}); err != nil {
		t.Fatal(err)
	}
	f, err := l.Fork(parent.ID, 1, Meta{Title: "fork"})
	if err != nil {
		t.Fatal(err)
	}
	fsys.SetHook(func(op vfs.Op, path string) error {
		if op == vfs.OpRemove && strings.HasSuffix(path, ".log") {
			return vfs.ErrInjected
		}
		return nil
	})
	if _, err := l.Remove(f.ID); err == nil {
		t.Fatal("setup: the removal with its log's removal failing succeeded")
	}
	fsys.SetHook(nil)
	if vfs.Exists(fsys, l.metaPath(f.ID)) || !vfs.Exists(fsys, l.logPath(f.ID)) {
		t.Fatal("setup: want the fork's log left without its .meta")
	}
	// l crashes: no Close.
	w, err := Open("/h/events", Options{FS: fsys, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.ReadMeta(f.ID); !errors.Is(err, ErrNoSession) {
		t.Fatalf("a fork being removed is back after recovery (notices %q)", w.Notices)
	}
	if vfs.Exists(fsys, l.logPath(f.ID)) {
		t.Fatalf("the recovery left the log of a fork being removed (notices %q)", w.Notices)
	}
}

// TestDamagedForkLostMetaKept: an acknowledged fork whose .meta is lost
// and whose log's header was then damaged (a disk fault) is not rebuilt
// (its log does not read as the fork's), and not removed either, as a
// fork never made would be: it may hold acknowledged events, so it is
// kept and named, as any log without .meta.
func TestDamagedForkLostMetaKept(t *testing.T) {
	fsys := vfs.NewMem()
	l := testLog(t, fsys, Options{})
	parent := mustCreate(t, l, "parent")
	if _, err := l.Append(parent.ID, Event{Kind: KindUser, Body: body(0)}); err != nil {
		t.Fatal(err)
	}
	f, err := l.Fork(parent.ID, 1, Meta{Title: "fork"})
	if err != nil {
		t.Fatal(err)
	}
	// l crashes; the fork's .meta is lost and its log's header damaged.
	if err := fsys.Remove(l.metaPath(f.ID)); err != nil {
		t.Fatal(err)
	}
	b, err := vfs.ReadFile(fsys, l.logPath(f.ID))
	if err != nil {
		t.Fatal(err)
	}
	b[20] ^= 0xff
	if err := fsys.WriteFileAtomic(l.logPath(f.ID), b, 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := Open("/h/events", Options{FS: fsys, Writable: true})
	if err != nil {
		t.Fatalf("open with a damaged fork log without .meta: %v", err)
	}
	defer w.Close()
	if vfs.Exists(fsys, l.metaPath(f.ID)) {
		t.Fatal("the recovery rebuilt the metadata of a log whose header does not read")
	}
	if !vfs.Exists(fsys, l.logPath(f.ID)) || len(w.Notices) != 1 || !strings.Contains(w.Notices[0], "kept") {
		t.Fatalf("the recovery did not keep the damaged log of an acknowledged fork (notices %q)", w.Notices)
	}
	// The marker's record of the fork goes with the recovery: the notice
	// says what it was, and how to make it again.
	if want := "`rook session fork " + parent.ID.String() + " --at 1`"; !strings.Contains(w.Notices[0], want) {
		t.Fatalf("notice %q does not say the log was the fork of %s at 1, nor %s", w.Notices[0], parent.ID, want)
	}
}

// TestDamagedForkCopyLostMetaNotCut: a fork not appended to (the marker
// names it with no size) is the log Fork wrote whole, in one atomic
// write: a record of it that does not read is damage, not a tail the
// crash tore. With its .meta lost, the recovery keeps its log as it is
// (every byte: it may hold acknowledged events) rather than cut it there.
func TestDamagedForkCopyLostMetaNotCut(t *testing.T) {
	fsys := vfs.NewMem()
	l := testLog(t, fsys, Options{})
	parent := mustCreate(t, l, "parent")
	for i := 0; i < 3; i++ {
		if _, err := l.Append(parent.ID, Event{Kind: KindUser, Body: body(i)}); err != nil {
			t.Fatal(err)
		}
	}
	f, err := l.Fork(parent.ID, 3, Meta{Title: "fork"})
	if err != nil {
		t.Fatal(err)
	}
	// l crashes; the fork's .meta is lost and a byte of its copy of
	// event 1 is damaged.
	b := loseMetaDamageEvent(t, fsys, l, f.ID, 1)
	w, err := Open("/h/events", Options{FS: fsys, Writable: true, TornDir: "/h/torn"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if after := logBytes(t, fsys, l, f.ID); !bytes.Equal(after, b) {
		t.Fatalf("the recovery cut the damaged log of a fork from %d to %d bytes (notices %q)", len(b), len(after), w.Notices)
	}
	if vfs.Exists(fsys, l.metaPath(f.ID)) {
		t.Fatalf("the recovery rebuilt the metadata of a fork whose copy of its parent's events does not read (notices %q)", w.Notices)
	}
}

// TestForkLostMetaDamagedPastForkPointRebuilt: a fork appended to at
// length (its log longer than a tail a crash can tear), whose .meta is
// lost and whose own events are then damaged deep in its log, still reads
// as the fork made: its copy of its parent's events is whole. The
// recovery rebuilds its .meta (the events before the damage read, as a
// session's would) rather than keep a log no session lists, the marker's
// record of it, the only copy of its metadata, then dropped.
func TestForkLostMetaDamagedPastForkPointRebuilt(t *testing.T) {
	fsys := vfs.NewMem()
	l := testLog(t, fsys, Options{})
	parent := mustCreate(t, l, "parent")
	for i := 0; i < 2; i++ {
		if _, err := l.Append(parent.ID, Event{Kind: KindUser, Body: body(i)}); err != nil {
			t.Fatal(err)
		}
	}
	f, err := l.Fork(parent.ID, 2, Meta{Title: "fork"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; logSize(fsys, l.logPath(f.ID)) < tailWindow+64<<10; i++ {
		for j := 0; j < 500; j++ {
			if _, err := l.Append(f.ID, Event{Kind: KindUser, Body: body(i*500 + j)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	// l crashes; the fork's .meta is lost and its event 5 damaged.
	b := loseMetaDamageEvent(t, fsys, l, f.ID, 5)
	w, err := Open("/h/events", Options{FS: fsys, Writable: true, TornDir: "/h/torn"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	m, err := w.ReadMeta(f.ID)
	if err != nil || m.Title != "fork" || m.ForkAt == nil || *m.ForkAt != 2 {
		t.Fatalf("the fork's .meta was not rebuilt: %+v, %v (notices %q)", m, err, w.Notices)
	}
	if evs, err := w.Read(f.ID, 0, 5); err != nil || len(evs) != 5 {
		t.Fatalf("the rebuilt fork's events before the damage: %d, %v", len(evs), err)
	}
	if after := logBytes(t, fsys, l, f.ID); !bytes.Equal(after, b) {
		t.Fatalf("the recovery changed the damaged log from %d to %d bytes", len(b), len(after))
	}
	rebuilt, damaged := false, false
	for _, n := range w.Notices {
		rebuilt = rebuilt || strings.HasPrefix(n, "rebuilt ")
		damaged = damaged || strings.Contains(n, "event 5 on")
	}
	if !rebuilt || !damaged {
		t.Fatalf("notices %q: want one saying the fork was rebuilt, one that its log is damaged at event 5", w.Notices)
	}
}

// TestForkLostMetaRebuiltAsLastWritten: a fork whose metadata its writer
// changed after making it (a title, tags; the agent layer sets its
// ancestor when its parent is removed), then crashed, its .meta lost: the
// recovery brings back the metadata as last written and acknowledged, not
// as the fork was made.
func TestForkLostMetaRebuiltAsLastWritten(t *testing.T) {
	fsys := vfs.NewMem()
	l := testLog(t, fsys, Options{})
	parent := mustCreate(t, l, "parent")
	if _, err := l.Append(parent.ID, Event{Kind: KindUser, Body: body(0)}); err != nil {
		t.Fatal(err)
	}
	f, err := l.Fork(parent.ID, 1, Meta{Title: "fork"})
	if err != nil {
		t.Fatal(err)
	}
	f.Title, f.Tags, f.Ancestor, f.AncestorAt = "renamed", []string{"t"}, &parent.ID, f.ForkAt
	if err := l.UpdateMeta(f); err != nil {
		t.Fatal(err)
	}
	// l crashes; the fork's .meta is lost.
	if err := fsys.Remove(l.metaPath(f.ID)); err != nil {
		t.Fatal(err)
	}
	w, err := Open("/h/events", Options{FS: fsys, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	m, err := w.ReadMeta(f.ID)
	if err != nil || m.Title != "renamed" || !slices.Equal(m.Tags, []string{"t"}) || m.Ancestor == nil || *m.Ancestor != parent.ID {
		t.Fatalf("rebuilt metadata %+v, %v; want the last written %+v (notices %q)", m, err, f, w.Notices)
	}
}

// loseMetaDamageEvent is a crash's aftermath for the fork id: its .meta
// lost and a byte of its event seq damaged. It returns the log's bytes.
func loseMetaDamageEvent(t *testing.T, fsys *vfs.MemFS, l *Log, id ID, seq uint64) []byte {
	t.Helper()
	if err := fsys.Remove(l.metaPath(id)); err != nil {
		t.Fatal(err)
	}
	b := logBytes(t, fsys, l, id)
	lf, err := fsys.OpenFile(l.logPath(id), os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	r, err := newReader(lf, id)
	if err != nil {
		lf.Close()
		t.Fatal(err)
	}
	off, _, err := r.find(seq)
	lf.Close()
	if err != nil {
		t.Fatal(err)
	}
	b[off+6] ^= 0xff
	if err := fsys.WriteFileAtomic(l.logPath(id), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return b
}
