package eventlog

import (
	"errors"
	"math/rand/v2"
	"strings"
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
	if err := l.Close(); err != nil {
		return err
	}
	st.events[f.ID] = append(st.events[f.ID], body(99))
	return nil
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
			return l.Close()
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
