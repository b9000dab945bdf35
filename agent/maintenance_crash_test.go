package agent

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/clock"
	"github.com/rookhq/rook/internal/vfs"
)

// The maintenance crash sweeps: each of the store's maintenance operations
// (gc, repack, train, reindex, prune, session rm, fork, checkpoint create
// and restore) run on a small store with sessions, a checkpoint and
// garbage, crashed at every write operation in turn. What each crash
// leaves must open, verify clean (objects and references), hold every
// session and checkpoint acknowledged before the operation, and let the
// operation be run again to completion.

// maintBase is the store every sweep starts from, durable (closed).
type maintBase struct {
	fsys   *vfs.MemFS
	clk    *clock.Fixed
	ws     string
	events map[eventlog.ID][]ackedEvent
	ids    []eventlog.ID // s0, s1, s2, in creation order
	refs   map[string]bool
}

// maintTrainBody is a message of the shape training learns: many of them
// make a dictionary worth keeping.
func maintTrainBody(i int) []byte {
	return []byte(fmt.Sprintf(`{"role":"assistant","model":"local/qwen3-coder-30b","stop_reason":"tool_use","content":[{"type":"tool_use","id":"toolu_%08x","name":"read_file","input":{"path":"crates/rook-core/src/session/turn_%d.rs","offset":%d}}],"usage":{"input_tokens":%d,"output_tokens":120}}`, i*7919, i, i*40, 18000+i))
}

// newMaintBase builds the base store: three sessions (s0 with many
// trainable messages), a checkpoint of a real workspace, and objects no
// session names (garbage, old enough for gc to collect).
func newMaintBase(t *testing.T, trainable int) *maintBase {
	t.Helper()
	b := &maintBase{
		fsys:   vfs.NewMem(),
		clk:    &clock.Fixed{T: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)},
		ws:     filepath.Join(t.TempDir(), "ws"),
		events: map[eventlog.ID][]ackedEvent{},
		refs:   map[string]bool{},
	}
	if err := os.MkdirAll(b.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	b.writeWS(t, "one")
	initCrashStore(b.fsys)
	r, err := Open(crashHome, Options{FS: b.fsys, Clock: b.clk, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	for s := 0; s < 3; s++ {
		m, err := r.NewSession(fmt.Sprintf("s%d", s), b.ws, nil)
		if err != nil {
			t.Fatal(err)
		}
		b.ids = append(b.ids, m.ID)
		n := 12
		if s == 0 {
			n = trainable
		}
		for i := 0; i < n; i++ {
			e := Entry{Kind: eventlog.KindAssistant, Label: "model", Body: maintTrainBody(s*10000 + i)}
			if i%4 == 1 {
				e = Entry{Kind: eventlog.KindToolResult, Label: "read_file", Body: bytes.Repeat([]byte(fmt.Sprintf("session %d result %d\n", s, i)), 40)}
			}
			if i%6 == 5 {
				// A body every session shares: gc must keep it while one
				// that names it is left.
				e = Entry{Kind: eventlog.KindUser, Body: []byte("a prompt every session has")}
			}
			if _, err := r.Append(m.ID, e); err != nil {
				t.Fatal(err)
			}
			b.events[m.ID] = append(b.events[m.ID], ackedEvent{e.Kind, e.Label, e.Body})
		}
	}
	if _, _, err := r.CreateCheckpoint("cp", b.ws, "", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	b.refs["cp"] = true
	for i := 0; i < 20; i++ {
		if _, err := r.Store.Put(cas.KindMessage, []byte(fmt.Sprintf("garbage %d %s", i, bytes.Repeat([]byte("g"), i*50)))); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	b.clk.Advance(time.Hour) // past any grace
	return b
}

// writeWS puts the workspace's two files with contents of version v.
func (b *maintBase) writeWS(t *testing.T, v string) {
	t.Helper()
	for _, name := range []string{"a.txt", "b.txt"} {
		if err := os.WriteFile(filepath.Join(b.ws, name), []byte(name+" version "+v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// maintOp is one maintenance operation under test.
type maintOp struct {
	// run is the operation, on a writable Rook over the crashing fs.
	run func(r *Rook) error
	// gone are sessions the operation may remove: after a crash each is
	// either whole or absent.
	gone map[eventlog.ID]bool
	// done checks, after the operation ran again on a crash's state, that
	// it took effect.
	done func(t *testing.T, k int, r *Rook)
	// reset, if not nil, runs before each crash point (the workspace a
	// restore writes is outside the simulated fs).
	reset func()
}

// sweepMaint runs op on a copy of the base for every crash point k in
// turn, checks each state the crash leaves (the strict one and
// maintCrashSeeds with random survival of unsynced writes), and returns
// the number of points. A crashed operation must report an error: nothing
// cut short may say it succeeded.
func sweepMaint(t *testing.T, b *maintBase, op maintOp) int {
	t.Helper()
	rng := rand.New(rand.NewPCG(11, 12))
	for k := 0; ; k++ {
		if op.reset != nil {
			op.reset()
		}
		fsys := b.fsys.CrashClone()
		var states []*vfs.MemFS
		fsys.CrashAtClones(k, rng, maintCrashSeeds(), func(c []*vfs.MemFS) { states = c })
		r, err := Open(crashHome, Options{FS: fsys, Clock: b.clk, Writable: true})
		if err == nil {
			err = op.run(r)
			if cerr := r.Close(); err == nil {
				err = cerr
			}
		}
		if err == nil {
			// A crash at the event logs' last writes, the removal of
			// their dirty marker and its directory sync, fails nothing
			// (what was written is durable: Close says so in a notice):
			// the crash is told by fsys, which fails every operation
			// after it.
			_, err = fsys.Stat(crashHome)
		}
		if states == nil {
			if err != nil {
				t.Fatalf("no crash at write %d but the operation failed: %v", k, err)
			}
			return k
		}
		if err == nil {
			t.Fatalf("crash at write %d: the operation reported success", k)
		}
		for i, s := range states {
			if op.reset != nil {
				op.reset()
			}
			checkMaint(t, fmt.Sprintf("crash at write %d (state %d)", k, i), b, op, s, k)
		}
	}
}

// maintCrashSeeds is how many states with random survival of unsynced
// writes each crash point gets besides the strict one: ROOK_CRASH_SEEDS
// raises it for a longer hunt than CI's.
func maintCrashSeeds() int {
	if n, err := strconv.Atoi(os.Getenv("ROOK_CRASH_SEEDS")); err == nil && n > 0 {
		return n
	}
	return 1
}

// checkMaint opens what a crash left and checks the invariants, runs the
// operation again, and checks them again with the operation done.
func checkMaint(t *testing.T, what string, b *maintBase, op maintOp, fsys *vfs.MemFS, k int) {
	t.Helper()
	r, err := Open(crashHome, Options{FS: fsys, Clock: b.clk, Writable: true})
	if err != nil {
		t.Fatalf("%s: open: %v", what, err)
	}
	defer func() { r.Close() }()
	checkMaintState(t, what, b, op, r)
	if err := op.run(r); err != nil {
		t.Fatalf("%s: running the operation again: %v (notices %v)", what, err, r.Notices())
	}
	if err := r.Close(); err != nil {
		t.Fatalf("%s: close after running again: %v", what, err)
	}
	if r, err = Open(crashHome, Options{FS: fsys, Clock: b.clk, Writable: true}); err != nil {
		t.Fatalf("%s: open after running again: %v", what, err)
	}
	checkMaintState(t, what+", run again", b, op, r)
	if op.done != nil {
		op.done(t, k, r)
	}
}

func checkMaintState(t *testing.T, what string, b *maintBase, op maintOp, r *Rook) {
	t.Helper()
	ids, err := r.Log.IDs()
	if err != nil {
		t.Fatalf("%s: list sessions: %v", what, err)
	}
	listed := map[eventlog.ID]bool{}
	for _, id := range ids {
		listed[id] = true
		if _, err := r.Log.Read(id, 0, 1<<20); err != nil {
			t.Fatalf("%s: session %s is listed but does not read: %v", what, id, err)
		}
	}
	for id, want := range b.events {
		if op.gone[id] && !listed[id] {
			continue
		}
		evs, err := r.Log.Read(id, 0, 1<<20)
		if err != nil {
			t.Fatalf("%s: session %s: %v (notices %v)", what, id, err, r.Notices())
		}
		if len(evs) != len(want) {
			t.Fatalf("%s: session %s has %d events, want %d", what, id, len(evs), len(want))
		}
		for i, ev := range evs {
			body, err := r.Body(ev)
			if err != nil || ev.Kind != want[i].kind || ev.Label != want[i].label || !bytes.Equal(body, want[i].body) {
				t.Fatalf("%s: session %s event %d differs (%v)", what, id, i, err)
			}
		}
	}
	for name := range b.refs {
		_, m, err := r.ResolveCheckpoint(name)
		if err != nil {
			t.Fatalf("%s: checkpoint %s: %v", what, name, err)
		}
		for p, f := range m.Files {
			if _, err := r.Store.Get(f.ID); err != nil {
				t.Fatalf("%s: checkpoint %s file %s: %v", what, name, p, err)
			}
		}
	}
	rep, err := r.Store.Verify(nil)
	if problems := crashProblems(rep.Problems); err != nil || len(problems) != 0 {
		t.Fatalf("%s: verify: %v %v", what, err, problems)
	}
	refs, err := r.VerifyReferences(nil)
	if err != nil || len(refs.Problems) != 0 {
		t.Fatalf("%s: verify references: %v %v", what, err, refs.Problems)
	}
}

// verifyCrashState opens what a crash left, writable as the next command
// would, and checks that it verifies clean: every object reads and every
// object a session or ref names is there.
func verifyCrashState(t *testing.T, what string, fsys vfs.FS, clk clock.Clock) {
	t.Helper()
	r, err := Open(crashHome, Options{FS: fsys, Clock: clk, Writable: true})
	if err != nil {
		t.Fatalf("%s: open: %v", what, err)
	}
	defer r.Close()
	rep, err := r.Store.Verify(nil)
	if problems := crashProblems(rep.Problems); err != nil || len(problems) != 0 {
		t.Fatalf("%s: verify: %v %v", what, err, problems)
	}
	refs, err := r.VerifyReferences(nil)
	if err != nil || len(refs.Problems) != 0 {
		t.Fatalf("%s: verify references: %v %v", what, err, refs.Problems)
	}
}

// gcCollectsNothing: a gc after the operation finds nothing left to
// collect.
func gcCollectsNothing(t *testing.T, k int, r *Rook) {
	t.Helper()
	rep, err := r.GC(0, true, nil, nil)
	if err != nil || rep.Collectable != 0 {
		t.Fatalf("crash at write %d: after gc ran again, a dry run still finds %d collectable (%v)", k, rep.Collectable, err)
	}
}

func TestGCAgentCrashSweep(t *testing.T) {
	b := newMaintBase(t, 12)
	n := sweepMaint(t, b, maintOp{
		run: func(r *Rook) error {
			// rm, then gc: what only the removed session named goes.
			// Run again after a crash, the rm may be done already.
			if _, err := r.Log.Summary(b.ids[1]); err == nil {
				if _, err := r.RemoveSession(b.ids[1]); err != nil {
					return err
				}
			}
			_, err := r.GC(0, false, nil, nil)
			return err
		},
		gone: map[eventlog.ID]bool{b.ids[1]: true},
		done: func(t *testing.T, k int, r *Rook) {
			if _, err := r.Log.Summary(b.ids[1]); err == nil {
				t.Fatalf("crash at write %d: the removed session is there after rm ran again", k)
			}
			gcCollectsNothing(t, k, r)
		},
	})
	t.Logf("swept %d crash points", n)
}

func TestRepackAgentCrashSweep(t *testing.T) {
	b := newMaintBase(t, 12)
	n := sweepMaint(t, b, maintOp{
		run: func(r *Rook) error { _, err := r.Store.Repack(nil); return err },
	})
	t.Logf("swept %d crash points", n)
}

func TestTrainCrashSweep(t *testing.T) {
	b := newMaintBase(t, 600)
	// OnlyMissing, as maintain trains: run again after a crash that left
	// the dictionary, training adds nothing (each training and each
	// encoder with a dictionary costs seconds under -race).
	opts := cas.TrainOptions{Kinds: []cas.Kind{cas.KindMessage}, Samples: 150, OnlyMissing: true}
	n := sweepMaint(t, b, maintOp{
		run: func(r *Rook) error { _, err := r.Store.Train(opts); return err },
		done: func(t *testing.T, k int, r *Rook) {
			if len(r.Store.Dictionaries()) == 0 {
				t.Fatalf("crash at write %d: no dictionary after training again", k)
			}
			// The dictionaries the crash and the run again left are
			// usable: a repack recompresses with the newest, and every
			// object still reads (TestRepackAgentCrashSweep crashes a
			// repack).
			if _, err := r.Store.Repack(nil); err != nil {
				t.Fatalf("crash at write %d: repack with the new dictionary: %v", k, err)
			}
			if rep, err := r.Store.Verify(nil); err != nil || len(rep.Problems) != 0 {
				t.Fatalf("crash at write %d: verify after the repack: %v %v", k, err, rep.Problems)
			}
		},
	})
	t.Logf("swept %d crash points", n)
}

func TestReindexCrashSweep(t *testing.T) {
	b := newMaintBase(t, 12)
	n := sweepMaint(t, b, maintOp{
		run: func(r *Rook) error {
			// Objects put and not synced: written by the reindex's
			// flush, never acknowledged, and the rebuilt index must not
			// name them before they are durable.
			for i := 0; i < 5; i++ {
				if _, err := r.Store.Put(cas.KindNote, []byte(fmt.Sprintf("put before the reindex %d", i))); err != nil {
					return err
				}
			}
			_, err := r.Store.Reindex(nil)
			return err
		},
	})
	t.Logf("swept %d crash points", n)
}

func TestPruneCrashSweep(t *testing.T) {
	b := newMaintBase(t, 12)
	n := sweepMaint(t, b, maintOp{
		run: func(r *Rook) error {
			_, err := r.Prune(RetentionPolicy{MaxSessions: new(1)}, false)
			return err
		},
		gone: map[eventlog.ID]bool{b.ids[0]: true, b.ids[1]: true},
		done: func(t *testing.T, k int, r *Rook) {
			if ids, _ := r.Log.IDs(); len(ids) != 1 || ids[0] != b.ids[2] {
				t.Fatalf("crash at write %d: after prune ran again the sessions are %v, want only %s", k, ids, b.ids[2])
			}
		},
	})
	t.Logf("swept %d crash points", n)
}

func TestForkCrashSweep(t *testing.T) {
	b := newMaintBase(t, 12)
	n := sweepMaint(t, b, maintOp{
		run: func(r *Rook) error {
			_, err := r.Log.Fork(b.ids[2], 7, eventlog.Meta{Title: "fork"})
			return err
		},
		done: func(t *testing.T, k int, r *Rook) {
			// Every fork there (one, or two: one the crash left, one
			// run again) holds the parent's first 7 events.
			ids, _ := r.Log.IDs()
			forks := 0
			for _, id := range ids {
				m, err := r.Log.ReadMeta(id)
				if err != nil || m.Parent == nil {
					continue
				}
				forks++
				evs, err := r.Log.Read(id, 0, 100)
				if err != nil || len(evs) != 7 {
					t.Fatalf("crash at write %d: fork %s holds %d events (%v), want 7", k, id, len(evs), err)
				}
			}
			if forks == 0 {
				t.Fatalf("crash at write %d: no fork after running it again", k)
			}
		},
	})
	t.Logf("swept %d crash points", n)
}

func TestCheckpointCreateCrashSweep(t *testing.T) {
	b := newMaintBase(t, 12)
	n := sweepMaint(t, b, maintOp{
		reset: func() { b.writeWS(t, "two") },
		run: func(r *Rook) error {
			_, _, err := r.CreateCheckpoint("cp", b.ws, "", DefaultLimits)
			return err
		},
		done: func(t *testing.T, k int, r *Rook) {
			_, m, err := r.ResolveCheckpoint("cp")
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.Store.Get(m.Files["a.txt"].ID)
			if err != nil || string(got) != "a.txt version two\n" {
				t.Fatalf("crash at write %d: checkpoint cp after running again holds %q (%v)", k, got, err)
			}
		},
	})
	t.Logf("swept %d crash points", n)
}

func TestCheckpointRestoreCrashSweep(t *testing.T) {
	b := newMaintBase(t, 12)
	n := sweepMaint(t, b, maintOp{
		// The workspace changed since cp: the restore saves it first.
		reset: func() { b.writeWS(t, "two") },
		run: func(r *Rook) error {
			_, m, err := r.ResolveCheckpoint("cp")
			if err != nil {
				return err
			}
			_, err = r.RestoreCheckpoint("cp", m, "")
			return err
		},
		done: func(t *testing.T, k int, r *Rook) {
			got, err := os.ReadFile(filepath.Join(b.ws, "a.txt"))
			if err != nil || string(got) != "a.txt version one\n" {
				t.Fatalf("crash at write %d: a.txt after the restore ran again: %q (%v)", k, got, err)
			}
			// Every save a run wrote resolves (checkMaintState checked
			// the store): the one the crash cut, if its ref is there, too.
			cps, err := r.Checkpoints()
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cps {
				if _, _, err := r.ResolveCheckpoint(c.Name); err != nil {
					t.Fatalf("crash at write %d: checkpoint %s: %v", k, c.Name, err)
				}
			}
		},
	})
	t.Logf("swept %d crash points", n)
}

func TestMaintainCrashSweep(t *testing.T) {
	b := newMaintBase(t, 12)
	// A budget no session fits in: round after round deletes the oldest
	// session and collects, down to the checkpoint.
	cfg := Config{Storage: StorageConfig{Retention: RetentionPolicy{MaxTotalBytes: new(int64(1))}}}
	n := sweepMaint(t, b, maintOp{
		run:  func(r *Rook) error { _, err := r.Maintain(cfg, false, nil); return err },
		gone: map[eventlog.ID]bool{b.ids[0]: true, b.ids[1]: true, b.ids[2]: true},
		done: func(t *testing.T, k int, r *Rook) {
			if ids, _ := r.Log.IDs(); len(ids) != 0 {
				t.Fatalf("crash at write %d: after maintain ran again %d session(s) are left", k, len(ids))
			}
			gcCollectsNothing(t, k, r)
		},
	})
	t.Logf("swept %d crash points", n)
}
