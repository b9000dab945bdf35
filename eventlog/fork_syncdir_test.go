package eventlog

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// forkSyncDirFails forks a session of one event at 1 with the directory
// sync after the fork's .meta rename failing (once, or every time:
// always), and returns the log, the fork's id and Fork's error.
func forkSyncDirFails(t *testing.T, fsys *vfs.MemFS, always bool) (*Log, ID, error) {
	t.Helper()
	l := testLog(t, fsys, Options{})
	parent, err := l.Create(Meta{Title: "parent", Workspace: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(parent.ID, Event{Kind: KindUser, Body: body(1)}); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	failSyncDirAfterMeta(fsys, always)
	f, err := l.Fork(parent.ID, 1, Meta{Title: "fork"})
	fsys.SetHook(nil)
	if err == nil {
		t.Fatal("fork with its directory sync failing: no error")
	}
	return l, f.ID, err
}

// sessionsAfter is how many sessions a writer's open of fsys (recovering
// what it finds) lists, and whether fork is one.
func sessionsAfter(t *testing.T, fsys *vfs.MemFS, fork ID) (int, bool) {
	t.Helper()
	w, err := Open("/h/events", Options{FS: fsys, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ss, err := w.Sessions()
	if err != nil {
		t.Fatal(err)
	}
	_, merr := w.ReadMeta(fork)
	return len(ss), merr == nil
}

// TestForkMetaSyncDirFails: the fork's .meta renamed into place, the
// directory sync after it failing, Fork fails, and there is no fork:
// not to this writer, nor to a reader, nor after this writer closes, is
// killed, or the power is cut (strict, or with unsynced changes kept at
// random). It was there in all but the strict power cut: a session with
// its metadata, though Fork had said it failed. When removing it fails
// too, the error says the fork may be there, names it and says how to
// check and remove it.
func TestForkMetaSyncDirFails(t *testing.T) {
	for _, how := range []string{"this writer", "reader", "close", "kill", "crash", "random crash"} {
		fsys := vfs.NewMem()
		l, fork, err := forkSyncDirFails(t, fsys, false)
		if strings.Contains(err.Error(), "may be") {
			t.Fatalf("%s: the fork was removed, yet the error says it may be there: %v", how, err)
		}
		switch how {
		case "this writer":
			ss, err := l.Sessions()
			if _, merr := l.ReadMeta(fork); err != nil || len(ss) != 1 || merr == nil {
				t.Fatalf("%s: %d sessions (%v), the fork's metadata read: %v", how, len(ss), err, merr == nil)
			}
			continue
		case "reader":
			r, err := Open("/h/events", Options{FS: fsys})
			if err != nil {
				t.Fatal(err)
			}
			if ss, err := r.Sessions(); err != nil || len(ss) != 1 {
				t.Fatalf("%s: %d sessions, %v", how, len(ss), err)
			}
			continue
		}
		states := statesAfter(t, how, fsys, l, 7)
		for i, st := range states {
			if n, there := sessionsAfter(t, st, fork); n != 1 || there {
				t.Fatalf("%s (%d): after recovery %d sessions, the fork there: %v (Fork said: %v)", how, i, n, there, err)
			}
		}
	}
	// The directory sync failing every time, the fork's metadata cannot
	// be removed for sure: the error says so, naming the fork.
	fsys := vfs.NewMem()
	_, fork, err := forkSyncDirFails(t, fsys, true)
	for _, want := range []string{"may be a session now, or after a crash", "`rook session ls` shows it", "`rook session rm " + fork.String() + "` removes it"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("removal failing too: error %q, want %q", err, want)
		}
	}
	t.Log(err)
}

// failSyncDirAfterMeta makes the directory sync after a .meta's rename
// fail: once, or every time (always).
func failSyncDirAfterMeta(fsys *vfs.MemFS, always bool) {
	renamed := false
	fsys.SetHook(func(op vfs.Op, path string) error {
		if op == vfs.OpRename && strings.HasSuffix(path, ".meta") {
			renamed = true
		}
		if op == vfs.OpSyncDir && renamed {
			renamed = always
			return vfs.ErrInjected
		}
		return nil
	})
}

// statesAfter is what a later rook finds of fsys after l ends how: the
// store as l's close left it, or after a kill, a power cut, or 16 random
// power cuts (seeded by seed).
func statesAfter(t *testing.T, how string, fsys *vfs.MemFS, l *Log, seed uint64) []*vfs.MemFS {
	t.Helper()
	switch how {
	case "close":
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		return []*vfs.MemFS{fsys}
	case "kill":
		return []*vfs.MemFS{fsys.KillClone()}
	case "crash":
		return []*vfs.MemFS{fsys.CrashClone()}
	case "random crash":
		rng := rand.New(rand.NewPCG(seed, seed+1))
		var states []*vfs.MemFS
		for range 16 {
			states = append(states, fsys.CrashCloneRandom(rng))
		}
		return states
	}
	t.Fatalf("no state after %q", how)
	return nil
}
