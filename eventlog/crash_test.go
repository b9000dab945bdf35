package eventlog

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rookhq/rook/internal/clock"
	"github.com/rookhq/rook/internal/vfs"
	"github.com/rookhq/rook/internal/vfs/vfstest"
)

// crashState is what a crash workload had acknowledged when it crashed:
// each session's events (by body), and the sessions it had removed.
type crashState struct {
	events   map[ID][][16]byte
	removed  map[ID]bool
	removing ID // a removal begun: the session may be there or gone
}

// forkRmWorkload appends to two sessions, forks one and removes the
// other, recording in st what each step acknowledged when it returned.
func forkRmWorkload(fsys *vfs.MemFS, st *crashState) error {
	clk := &clock.Fixed{T: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	l, err := Open("/h/events", Options{FS: fsys, Writable: true, Clock: clk})
	if err != nil {
		return err
	}
	defer l.Close()
	var ids []ID
	for s := 0; s < 2; s++ {
		m, err := l.Create(Meta{Title: "s"})
		if err != nil {
			return err
		}
		ids = append(ids, m.ID)
		st.events[m.ID] = nil
	}
	for i := 0; i < 6; i++ {
		id := ids[i%2]
		if _, err := l.Append(id, Event{Kind: KindUser, Body: body(i)}); err != nil {
			return err
		}
		if err := l.Flush(); err != nil {
			return err
		}
		st.events[id] = append(st.events[id], body(i))
	}
	f, err := l.Fork(ids[0], 2, Meta{Title: "fork"})
	if err != nil {
		return err
	}
	st.events[f.ID] = st.events[ids[0]][:2]
	st.removing = ids[1]
	if _, err := l.Remove(ids[1]); err != nil {
		return err
	}
	delete(st.events, ids[1])
	st.removed[ids[1]] = true
	if _, err := l.Append(f.ID, Event{Kind: KindUser, Body: body(99)}); err != nil {
		return err
	}
	if err := closed(l, fsys); err != nil {
		return err
	}
	st.events[f.ID] = append(st.events[f.ID], body(99))
	return nil
}

// closed is l.Close for a crash sweep's workload on fsys. A crash at the
// close's last writes, the removal of the dirty marker and its directory
// sync, fails nothing (what was written is durable: Close says so in a
// notice), so the crash is told by fsys, which fails every operation
// after it.
func closed(l *Log, fsys *vfs.MemFS) error {
	if err := l.Close(); err != nil {
		return err
	}
	_, err := fsys.Stat(l.dir)
	return err
}

// TestForkAndRemoveCrashSweep crashes the workload at every write, with
// the strict crash state and random survivals of unsynced writes and
// directory entries: every session listed reads whole, every acknowledged
// event and fork is there, an acknowledged removal stays done, and a
// session goes on with its next seq.
func TestForkAndRemoveCrashSweep(t *testing.T) {
	var st crashState
	n := vfstest.Sweep(t, rand.New(rand.NewPCG(7, 8)), 8, nil,
		func(fsys *vfs.MemFS) error {
			st = crashState{events: map[ID][][16]byte{}, removed: map[ID]bool{}}
			return forkRmWorkload(fsys, &st)
		},
		func(k int, states []*vfs.MemFS) {
			for i, fsys := range states {
				l, err := Open("/h/events", Options{FS: fsys, Writable: true})
				if err != nil {
					t.Fatalf("crash at %d, state %d: open: %v", k, i, err)
				}
				ids, err := l.IDs()
				if err != nil {
					t.Fatal(err)
				}
				for _, id := range ids {
					if st.removed[id] {
						t.Fatalf("crash at %d, state %d: session %s, removed, is back", k, i, id)
					}
					evs, err := l.Read(id, 0, 100)
					if err != nil {
						t.Fatalf("crash at %d, state %d: session %s is listed but does not read: %v", k, i, id, err)
					}
					want := st.events[id]
					if len(evs) < len(want) {
						t.Fatalf("crash at %d, state %d: session %s has %d events, %d acknowledged", k, i, id, len(evs), len(want))
					}
					for j, w := range want {
						if evs[j].Body != w {
							t.Fatalf("crash at %d, state %d: session %s event %d differs", k, i, id, j)
						}
					}
					if seq, err := l.Append(id, Event{Kind: KindNote, Body: body(7)}); err != nil || seq != uint64(len(evs)) {
						t.Fatalf("crash at %d, state %d: append to %s after recovery: seq %d, %v", k, i, id, seq, err)
					}
				}
				for id := range st.events {
					if _, err := l.ReadMeta(id); errors.Is(err, ErrNoSession) && id != st.removing {
						t.Fatalf("crash at %d, state %d: acknowledged session %s is gone", k, i, id)
					}
				}
				// A log without metadata left is one of no event (a
				// Create's, which marks nothing): a fork's or a removal's
				// is tagged in the marker, and recovery removes it.
				ents, err := fsys.ReadDir("/h/events")
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range ents {
					name, ok := strings.CutSuffix(e.Name(), ".log")
					if !ok {
						continue
					}
					id, err := ParseID(name)
					if err != nil {
						continue
					}
					if _, err := fsys.Stat(l.metaPath(id)); err == nil {
						continue
					}
					if fi, err := fsys.Stat(l.logPath(id)); err == nil && fi.Size() > logHeaderSize {
						t.Fatalf("crash at %d, state %d: recovery left %s, %d bytes, without metadata (notices %q)", k, i, e.Name(), fi.Size(), l.Notices)
					}
				}
				if err := l.Close(); err != nil {
					t.Fatalf("crash at %d, state %d: close: %v", k, i, err)
				}
			}
		})
	t.Logf("swept %d crash points", n)
}

// TestLateNamedSessionsCrashSweep: a writer goes on, after its first
// barrier, to sessions it had not touched (their names appended to the
// dirty marker), and crashes at every write in turn, with random
// survivals of unsynced writes (the marker's appended lines torn or
// garbled among them). No recovery reports damage where there is none (a
// marker line taken for a larger size than was durable would), and every
// acknowledged event reads.
func TestLateNamedSessionsCrashSweep(t *testing.T) {
	clk := &clock.Fixed{T: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	var ids []ID
	var acked map[ID]int
	setup := func(fsys *vfs.MemFS) {
		l, err := Open("/h/events", Options{FS: fsys, Writable: true, Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		ids = nil
		for s := 0; s < 3; s++ {
			m, err := l.Create(Meta{Title: "s"})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, m.ID)
			for i := 0; i < 20; i++ {
				if _, err := l.Append(m.ID, Event{Kind: KindUser, Body: body(i)}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	n := vfstest.Sweep(t, rand.New(rand.NewPCG(11, 12)), 8, setup,
		func(fsys *vfs.MemFS) error {
			acked = map[ID]int{ids[0]: 20, ids[1]: 20, ids[2]: 20}
			l, err := Open("/h/events", Options{FS: fsys, Writable: true, Clock: clk})
			if err != nil {
				return err
			}
			for i, s := range []int{0, 1, 1, 2, 0, 2} {
				if _, err := l.Append(ids[s], Event{Kind: KindUser, Body: body(100 + i)}); err != nil {
					return err
				}
				if err := l.Flush(); err != nil {
					return err
				}
				acked[ids[s]]++
			}
			return closed(l, fsys)
		},
		func(k int, states []*vfs.MemFS) {
			for i, fsys := range states {
				l, err := Open("/h/events", Options{FS: fsys, Writable: true, Clock: clk})
				if err != nil {
					t.Fatalf("crash at %d, state %d: open: %v", k, i, err)
				}
				for _, note := range l.Notices {
					if strings.Contains(note, "damaged") {
						t.Fatalf("crash at %d, state %d: recovery reports damage: %s", k, i, note)
					}
				}
				for _, id := range ids {
					evs, err := l.Read(id, 0, 100)
					if err != nil || len(evs) < acked[id] {
						t.Fatalf("crash at %d, state %d: session %s: %d events (%d acknowledged), %v", k, i, id, len(evs), acked[id], err)
					}
					if seq, err := l.Append(id, Event{Kind: KindNote, Body: body(7)}); err != nil || seq != uint64(len(evs)) {
						t.Fatalf("crash at %d, state %d: append to %s after recovery: seq %d, %v", k, i, id, seq, err)
					}
				}
				if err := l.Close(); err != nil {
					t.Fatalf("crash at %d, state %d: close: %v", k, i, err)
				}
			}
		})
	t.Logf("swept %d crash points", n)
}

// TestRecoveryOpensWithALogWhoseHeaderDoesNotRead: a writer crashed (its
// WRITER-ACTIVE left) after appending to a session whose log's header a
// crash then zeroed (the HeaderError's own "a file zeroed or cut by a
// crash"). The next writer's open must still open the store: that one
// session refuses reads and appends with the HeaderError (which names
// `rook session rm`), and the other sessions go on. Opening failed instead,
// so no writer opened the store at all, `session rm` included.
func TestRecoveryOpensWithALogWhoseHeaderDoesNotRead(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(f vfs.File) error
	}{
		{"zeroed", func(f vfs.File) error { _, err := f.Write(make([]byte, logHeaderSize)); return err }},
		{"cut", func(f vfs.File) error { return f.Truncate(10) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := vfs.NewMem()
			l := testLog(t, fsys, Options{})
			bad := mustCreate(t, l, "bad")
			good := mustCreate(t, l, "good")
			for _, id := range []ID{bad.ID, good.ID} {
				if _, err := l.Append(id, Event{Kind: KindUser, Body: body(1)}); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			// The writer dies here (no Close): WRITER-ACTIVE stays. The
			// log of "bad" comes back from the crash spoiled.
			f, err := fsys.OpenFile(l.logPath(bad.ID), os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.spoil(f); err != nil {
				t.Fatal(err)
			}
			f.Close()
			w, err := Open("/h/events", Options{FS: fsys, Writable: true, Clock: l.opts.Clock})
			if err != nil {
				t.Fatalf("the next writer's open fails, so nothing can write to the store (not even `rook session rm %s`): %v", bad.ID, err)
			}
			defer w.Close()
			if !slices.ContainsFunc(w.Notices, func(n string) bool { return strings.Contains(n, bad.ID.String()) && strings.Contains(n, "header") }) {
				t.Errorf("the open says nothing of the log of %s whose header does not read: notices %q", bad.ID, w.Notices)
			}
			if _, err := w.Append(good.ID, Event{Kind: KindUser, Body: body(2)}); err != nil {
				t.Fatalf("append to the sound session: %v", err)
			}
			var he *HeaderError
			if _, err := w.Read(bad.ID, 0, 10); !errors.As(err, &he) {
				t.Fatalf("read of the spoiled session: %v, want a HeaderError", err)
			}
			if _, err := w.Append(bad.ID, Event{Kind: KindUser, Body: body(3)}); !errors.As(err, &he) {
				t.Fatalf("append to the spoiled session: %v, want a HeaderError", err)
			}
			if _, err := w.Remove(bad.ID); err != nil {
				t.Fatalf("remove the spoiled session: %v", err)
			}
		})
	}
}

// TestSummaryAfterACrashTakesATornTailAsRead: a writer crashed (its
// WRITER-ACTIVE left) in the barrier that wrote events 3 to 12, and the
// power cut garbled a record of that write in its middle (event 7) while
// the records after it reached the disk whole (the case
// CrashCloneRandom models: "a sector in flight at the power cut may come
// back as junk"). Until the next writer's open cuts that tail, a reader
// (`rook session ls`, show) takes the break as the torn end of the
// session: Read gives events 0-6 and no error. Summary must agree with it;
// it said the log was damaged instead ("token totals: damaged event record
// ... its log is damaged there"), as if acknowledged events were lost, and
// `rook session ls` left the session out and exited 1.
func TestSummaryAfterACrashTakesATornTailAsRead(t *testing.T) {
	fsys := vfs.NewMem()
	l := testLog(t, fsys, Options{})
	s := mustCreate(t, l, "s")
	for i := 0; i < 3; i++ {
		if _, err := l.Append(s.ID, Event{Kind: KindUser, Body: body(i), TokensIn: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := 3; i < 13; i++ {
		if _, err := l.Append(s.ID, Event{Kind: KindUser, Body: body(i), TokensIn: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	// The writer dies before its close; event 7's record comes back
	// garbled from the last barrier's write.
	f, err := fsys.OpenFile(l.logPath(s.ID), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	r, err := newReader(f, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	off, _, err := r.find(7)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Seek(off+6, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte{0xde, 0xad}); err != nil {
		t.Fatal(err)
	}
	f.Close()

	rd, err := Open("/h/events", Options{FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := rd.Read(s.ID, 0, 100)
	if err != nil || len(evs) != 7 {
		t.Fatalf("reader's Read: %d events, %v; want the 7 before the torn record, no error", len(evs), err)
	}
	sum, err := rd.Summary(s.ID)
	if err != nil {
		t.Fatalf("reader's Summary of a session whose tail a crash tore (Read gives its 7 events, no error): %v", err)
	}
	if sum.Events != uint64(len(evs)) || sum.TokensIn != uint64(len(evs)) {
		t.Fatalf("Summary says %d events, %d tokens in; Read gives %d events", sum.Events, sum.TokensIn, len(evs))
	}
}

// TestReaderAfterACrashShowsNoHalfGroup: a writer crashed while the
// barrier that wrote a group of three events (an event and its
// companions, "after a crash either all of them are in the log or none
// is") was reaching the disk: the write tore after the group's second
// record. Until the next writer's open cuts the half group, a reader
// (`rook session show`, `session ls`) must not show part of it: the
// session ends at event 0. It showed events 1 and 2 of the group (and
// Summary counted 3 events), which the next writer then cut. A page that
// ends inside a group written whole is not cut short.
func TestReaderAfterACrashShowsNoHalfGroup(t *testing.T) {
	fsys := vfs.NewMem()
	l := testLog(t, fsys, Options{})
	s := mustCreate(t, l, "s")
	if _, err := l.Append(s.ID, Event{Kind: KindUser, Body: body(0)}); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(s.ID,
		Event{Kind: KindToolCall, Body: body(1)},
		Event{Kind: KindNote, Body: body(2)},
		Event{Kind: KindToolResult, Body: body(3)}); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	// The writer's marker is there (it has not closed): a page that ends
	// inside the group, whole on disk, keeps its events.
	rd, err := Open("/h/events", Options{FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	if evs, err := rd.Read(s.ID, 0, 2); err != nil || len(evs) != 2 || !evs[1].More {
		t.Fatalf("a page of 2 ending inside a whole group: %d events (%v), want events 0 and 1", len(evs), err)
	}
	// The writer dies before its close; the group's last record did not
	// reach the disk.
	f, err := fsys.OpenFile(l.logPath(s.ID), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	r, err := newReader(f, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	off, _, err := r.find(3)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(off); err != nil {
		t.Fatal(err)
	}
	f.Close()

	evs, err := rd.Read(s.ID, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 {
		t.Errorf("a reader after the crash reads %d events (the last with more=%v): want 1, none of the group half written", len(evs), evs[len(evs)-1].More)
	}
	if evs, err := rd.Read(s.ID, 2, 100); err != nil || len(evs) != 0 {
		t.Errorf("a reader's page from inside the half group: %d events (%v), want none", len(evs), err)
	}
	if sum, err := rd.Summary(s.ID); err != nil || sum.Events != 1 {
		t.Errorf("a reader's Summary after the crash: %d events (%v), want 1", sum.Events, err)
	}
	// What the next writer's open makes of it: the half group cut.
	w, err := Open("/h/events", Options{FS: fsys, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if evs, err := w.Read(s.ID, 0, 100); err != nil || len(evs) != 1 {
		t.Fatalf("after the next writer's open: %d events (%v), want 1", len(evs), err)
	}
}

// holds: a fault (EIO) at any one write, or at every write from one on
// (a full disk), of a run of commands (create, append groups, fork, tag,
// append to the fork, rm), each its own writer as the CLI runs them or
// all in one writer: after the process is killed, or the power is cut
// (strict and random), and again after a power cut following the next
// writer's open, every acknowledged event, fork, tag and removal is
// there, a failed command is all there or not at all, every listed
// session reads and takes its next seq.
func TestAFaultAtAnyWriteLosesNothingAcknowledged(t *testing.T) {
	clk := &clock.Fixed{T: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	for _, mode := range []struct{ one, always bool }{{false, false}, {false, true}, {true, false}, {true, true}} {
		for k := 0; ; k++ {
			fsys := vfs.NewMem()
			fired := false
			var one *Log
			if mode.one {
				var err error
				if one, err = Open("/h/events", Options{FS: fsys, Writable: true, Clock: clk}); err != nil {
					t.Fatal(err)
				}
			}
			eioAt(fsys, k, &fired, mode.always)
			m := newFModel()
			stopped := false
			faultWorkload(m, func(name string, fn func(l *Log) error) bool {
				if stopped {
					return false
				}
				l, err := one, error(nil)
				if one == nil {
					l, err = Open("/h/events", Options{FS: fsys, Writable: true, Clock: clk})
				}
				if err == nil {
					err = fn(l)
					if one == nil {
						if cerr := l.Close(); err == nil {
							err = cerr
						}
					}
				}
				if err != nil {
					m.fails = append(m.fails, name+": "+err.Error())
					stopped = one == nil // the CLI's process ends
					return false
				}
				return true
			})
			if one != nil {
				if err := one.Close(); err != nil {
					m.fails = append(m.fails, "close: "+err.Error())
				}
			}
			fsys.SetHook(nil)
			if !fired {
				break
			}
			faultCheck(t, k, m, fmt.Sprintf("%+v killed", mode), fsys.KillClone(), 0)
			faultCheck(t, k, m, fmt.Sprintf("%+v power cut", mode), fsys.CrashClone(), 0)
			for r := 0; r < 3; r++ {
				faultCheck(t, k, m, fmt.Sprintf("%+v random power cut %d", mode, r), fsys.CrashCloneRandom(rand.New(rand.NewPCG(uint64(k), uint64(r)))), 0)
			}
		}
	}
}

// The model, workload and checks of TestAFaultAtAnyWriteLosesNothingAcknowledged.

// fmodel is what the commands acknowledged: each session's events, the
// events of a failed append (there whole, or not at all), the sessions a
// failed command may have left or taken away, tags, removals.
type fmodel struct {
	events      map[ID][][16]byte
	maybeTail   map[ID][][16]byte
	maybeExists map[ID]bool
	tags        map[ID][]string
	removed     map[ID]bool
	fails       []string
}

func newFModel() *fmodel {
	return &fmodel{events: map[ID][][16]byte{}, maybeTail: map[ID][][16]byte{}, maybeExists: map[ID]bool{}, tags: map[ID][]string{}, removed: map[ID]bool{}}
}

// faultWorkload runs the commands through run, recording in m what each
// acknowledged (run returned true) or may have done (false).
func faultWorkload(m *fmodel, run func(name string, fn func(l *Log) error) bool) {
	var a, f ID
	var mk Meta
	if run("new", func(l *Log) error { var err error; mk, err = l.Create(Meta{Title: "a"}); return err }) {
		a = mk.ID
		m.events[a] = nil
	} else if mk.ID != (ID{}) {
		m.maybeExists[mk.ID] = true
	}
	for i := 0; i < 3; i++ {
		evs := []Event{{Kind: KindUser, Body: body(10 * i)}, {Kind: KindNote, Body: body(10*i + 1)}}
		bs := [][16]byte{body(10 * i), body(10*i + 1)}
		if run("append", func(l *Log) error {
			_, err := l.Append(a, evs...)
			if err == nil {
				err = l.Flush()
			}
			return err
		}) {
			m.events[a] = append(m.events[a], bs...)
		} else if _, ok := m.maybeTail[a]; !ok {
			m.maybeTail[a] = bs
		}
	}
	var fm Meta
	if run("fork", func(l *Log) error { var err error; fm, err = l.Fork(a, 4, Meta{Title: "f"}); return err }) {
		f = fm.ID
		m.events[f] = slices.Clone(m.events[a][:4])
	} else if fm.ID != (ID{}) {
		m.maybeExists[fm.ID] = true
	}
	if run("tag", func(l *Log) error {
		mm, err := l.ReadMeta(f)
		if err != nil {
			return err
		}
		mm.Tags = []string{"keep"}
		return l.UpdateMeta(mm)
	}) {
		m.tags[f] = []string{"keep"}
	}
	if run("append-fork", func(l *Log) error {
		_, err := l.Append(f, Event{Kind: KindUser, Body: body(99)})
		if err == nil {
			err = l.Flush()
		}
		return err
	}) {
		m.events[f] = append(m.events[f], body(99))
	} else if _, ok := m.maybeTail[f]; !ok {
		m.maybeTail[f] = [][16]byte{body(99)}
	}
	if run("rm", func(l *Log) error { _, err := l.Remove(a); return err }) {
		m.removed[a] = true
		delete(m.events, a)
	} else {
		m.maybeExists[a] = true
	}
}

// faultCheck opens the writer a recovery runs in on fs and checks it
// against m; at depth 0 it appends to every session, closes, and checks
// what a power cut then leaves (depth 1).
func faultCheck(t *testing.T, k int, m *fmodel, state string, fs *vfs.MemFS, depth int) {
	t.Helper()
	clk := &clock.Fixed{T: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	l, err := Open("/h/events", Options{FS: fs, Writable: true, Clock: clk})
	if err != nil {
		t.Fatalf("fault %d %v, %s: open: %v", k, m.fails, state, err)
	}
	ids, err := l.IDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if m.removed[id] {
			t.Fatalf("fault %d %v, %s: removed session %s is back", k, m.fails, state, id)
		}
		evs, err := l.Read(id, 0, 100)
		if err != nil {
			t.Fatalf("fault %d %v, %s: session %s listed, does not read: %v (notices %q)", k, m.fails, state, id, err, l.Notices)
		}
		want, acked := m.events[id]
		if !acked && !m.maybeExists[id] {
			t.Fatalf("fault %d %v, %s: session %s (%d events) is there, never acknowledged (notices %q)", k, m.fails, state, id, len(evs), l.Notices)
		}
		got := make([][16]byte, len(evs))
		for i, e := range evs {
			got[i] = e.Body
		}
		if depth > 0 && len(got) > 0 && got[len(got)-1] == body(7) {
			got = got[:len(got)-1]
		}
		if acked {
			with := append(slices.Clone(want), m.maybeTail[id]...)
			if !slices.Equal(got, want) && !slices.Equal(got, with) {
				t.Fatalf("fault %d %v, %s: session %s has %d events %x, want %d or %d (notices %q)", k, m.fails, state, id, len(got), got, len(want), len(with), l.Notices)
			}
		}
		mm, err := l.ReadMeta(id)
		if err != nil {
			t.Fatal(err)
		}
		if tg, ok := m.tags[id]; ok && !slices.Equal(mm.Tags, tg) {
			t.Fatalf("fault %d %v, %s: tags %v want %v", k, m.fails, state, mm.Tags, tg)
		}
		if depth > 0 {
			continue
		}
		if seq, err := l.Append(id, Event{Kind: KindNote, Body: body(7)}); err != nil || seq != uint64(len(evs)) {
			t.Fatalf("fault %d %v, %s: append to %s: seq %d, %v", k, m.fails, state, id, seq, err)
		}
	}
	for id := range m.events {
		if !slices.Contains(ids, id) && !m.maybeExists[id] {
			t.Fatalf("fault %d %v, %s: acknowledged session %s is gone (notices %q)", k, m.fails, state, id, l.Notices)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatalf("fault %d, %s: close: %v", k, state, err)
	}
	if depth == 0 {
		faultCheck(t, k, m, state+" then power cut after the next writer", fs.CrashClone(), 1)
	}
}

// eioAt fails the k-th write operation of fsys with EIO (and, always,
// every one after it), setting fired.
func eioAt(fsys *vfs.MemFS, k int, fired *bool, always bool) {
	n := 0
	fsys.SetHook(func(op vfs.Op, path string) error {
		if !op.IsWrite() {
			return nil
		}
		i := n
		n++
		if i == k || (always && i > k) {
			*fired = true
			return syscall.EIO
		}
		return nil
	})
}
