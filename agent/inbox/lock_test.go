package inbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rookhq/rook/internal/vfs"
)

// drainOnce is agent.DrainInbox without the store: it takes the pending
// saves into got, then removes what RemoveDrained lets it.
func drainOnce(t testing.TB, fsys vfs.FS, home string, got map[string]int, live func(string) bool) {
	t.Helper()
	prog, err := ReadProgress(fsys, home)
	if err != nil {
		t.Fatal(err)
	}
	pending, sizes, err := ReadPending(fsys, home, prog)
	if err != nil {
		t.Fatal(err)
	}
	if len(sizes) == 0 {
		return
	}
	for _, p := range pending {
		got[p.Save.ID]++
		prog[p.File] = max(prog[p.File], p.End)
	}
	for name := range sizes {
		if _, ok := prog[name]; !ok {
			prog[name] = 0
		}
	}
	if _, err := RemoveDrained(fsys, home, prog, sizes, live); err != nil {
		t.Fatal(err)
	}
	if err := WriteProgress(fsys, home, prog); err != nil {
		t.Fatal(err)
	}
}

func saveNote(t testing.TB, w *Writer, content string) string {
	t.Helper()
	now := time.Now()
	id := w.NextID(now)
	if err := w.Save(Save{ID: id, Time: now, Client: "codex", ClientName: "codex", Content: content}); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestDrainJudgesWritersByLock: the pid in a spool file's name means
// nothing for a server in another pid namespace. A live server whose pid
// names no process here kept saving into a file the drain had removed
// (saves acknowledged, then lost); a gone one whose pid names some other
// process here had its file kept for ever. The drain now asks the
// writer's lock, and the pid only of a file without one.
func TestDrainJudgesWritersByLock(t *testing.T) {
	fsys, home := newHome(t)
	pidDead := func(string) bool { return false }
	pidLive := func(string) bool { return true }
	got := map[string]int{}

	// Running, with a pid that is dead here: its file stays, and a later
	// save is taken in.
	w := NewWriter(fsys, home, ProcessName(time.Unix(1, 0), 7))
	saveNote(t, w, "one")
	drainOnce(t, fsys, home, got, pidDead)
	if names, _ := listJSONL(fsys, spoolDir(home)); len(names) != 1 {
		t.Fatalf("the spool file of a running writer was removed: %v", names)
	}
	id := saveNote(t, w, "two")
	drainOnce(t, fsys, home, got, pidDead)
	if got[id] != 1 || len(got) != 2 {
		t.Fatalf("saves taken in %v", got)
	}

	// Gone, with a pid that is live here: its wholly drained file goes.
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	drainOnce(t, fsys, home, got, pidLive)
	if names, _ := listJSONL(fsys, spoolDir(home)); len(names) != 0 {
		t.Fatalf("the spool file of an exited writer was kept: %v", names)
	}

	// An older rook's file (no lock, no header): judged by pid, as before.
	old, err := encodeLine(Save{V: 1, ID: "9-1-9", Client: "codex", Content: "old"})
	if err != nil {
		t.Fatal(err)
	}
	if err := fsys.WriteFileAtomic(spoolDir(home)+"/9-1.jsonl", old, 0o600); err != nil {
		t.Fatal(err)
	}
	drainOnce(t, fsys, home, got, pidLive)
	if names, _ := listJSONL(fsys, spoolDir(home)); len(names) != 1 || got["9-1-9"] != 1 {
		t.Fatalf("an older rook's file with a live pid: %v, %v", names, got)
	}
	drainOnce(t, fsys, home, got, pidDead)
	if names, _ := listJSONL(fsys, spoolDir(home)); len(names) != 0 || got["9-1-9"] != 1 {
		t.Fatalf("an older rook's file with a dead pid: %v, %v", names, got)
	}
}

// TestWriterStartsAgainAfterRemoval: a drain can find a writer's new file
// between its create and its lock, unlocked and empty, and remove it. The
// writer must not then save into the removed file.
func TestWriterStartsAgainAfterRemoval(t *testing.T) {
	fsys, home := newHome(t)
	w := NewWriter(fsys, home, ProcessName(time.Unix(1, 0), 7))
	path := filepath.Join(spoolDir(home), w.name)
	raced := false
	fsys.SetHook(func(op vfs.Op, p string) error {
		if op == vfs.OpStat && p == path && !raced {
			// The writer holds the lock of the file it created and looks
			// at its name: a drain removed that file, and the name leads
			// to another one.
			raced = true
			if err := fsys.Remove(path); err != nil {
				return err
			}
			return fsys.WriteFileAtomic(path, nil, 0o600)
		}
		return nil
	})
	id := saveNote(t, w, "kept")
	fsys.SetHook(nil)
	if !raced {
		t.Fatal("the race did not happen")
	}
	got := map[string]int{}
	drainOnce(t, fsys, home, got, func(string) bool { return false })
	if got[id] != 1 {
		t.Fatalf("the save went to the removed file: %v", got)
	}
	w.Close()
}

// TestConcurrentWritersAndDrains runs servers (on the real filesystem, with
// real locks) whose pids mean nothing here, saving, exiting and starting,
// against a drain taking the spool in the whole time: every save is taken
// in exactly once, and in the end no spool file is left.
func TestConcurrentWritersAndDrains(t *testing.T) {
	for _, pid := range []struct {
		name string
		live func(string) bool
	}{{"pids dead here", func(string) bool { return false }}, {"pids live here", func(string) bool { return true }}} {
		t.Run(pid.name, func(t *testing.T) {
			home := t.TempDir()
			if err := os.WriteFile(filepath.Join(home, "FORMAT"), []byte("{}"), 0o600); err != nil {
				t.Fatal(err)
			}
			const writers, lives, saves = 4, 3, 15
			var mu sync.Mutex
			saved := map[string]bool{}
			var wg sync.WaitGroup
			for i := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for life := range lives {
						w := NewWriter(vfs.OS, home, ProcessName(time.Unix(int64(life), 0), 100+i))
						for n := range saves {
							now := time.Now()
							id := w.NextID(now)
							if err := w.Save(Save{ID: id, Time: now, Client: "codex", Content: fmt.Sprint(i, life, n)}); err != nil {
								t.Error(err)
								return
							}
							mu.Lock()
							saved[id] = true
							mu.Unlock()
						}
						if err := w.Close(); err != nil {
							t.Error(err)
						}
					}
				}()
			}
			got := map[string]int{}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			for running := true; running; {
				select {
				case <-done:
					running = false
				default:
				}
				drainOnce(t, vfs.OS, home, got, pid.live)
			}
			drainOnce(t, vfs.OS, home, got, pid.live)
			for id := range saved {
				if got[id] != 1 {
					t.Errorf("save %s taken in %d times", id, got[id])
				}
			}
			if len(got) != len(saved) {
				t.Errorf("%d saves taken in, %d saved", len(got), len(saved))
			}
			if names, _ := listJSONL(vfs.OS, spoolDir(home)); len(names) != 0 {
				t.Errorf("spool files left: %v", names)
			}
		})
	}
}

// TestMergeActivityJudgesWritersByLock: an activity file was merged (and
// removed) while its server, in another pid namespace, still wrote to it,
// its later attempts lost; and that of an exited one whose pid names a
// process here was never merged. Its spool file's lock decides now.
func TestMergeActivityJudgesWritersByLock(t *testing.T) {
	fsys, home := newHome(t)
	running := NewWriter(fsys, home, ProcessName(time.Unix(1, 0), 7))
	exited := NewWriter(fsys, home, ProcessName(time.Unix(2, 0), 8))
	for i, w := range []*Writer{running, exited} {
		// A refused attempt only: the lock is taken all the same.
		if err := w.Log(Activity{Time: time.Unix(int64(3+i), 0), Client: "codex", Status: "paused"}); err != nil {
			t.Fatal(err)
		}
	}
	exited.Close()
	defer running.Close()
	pidOf := func(live bool) func(string) bool { return func(string) bool { return live } }
	if err := MergeActivity(fsys, home, pidOf(false)); err != nil {
		t.Fatal(err)
	}
	names, _ := listJSONL(fsys, activityDir(home))
	if want := running.name + " " + pastActivity; strings.Join(names, " ") != want {
		t.Fatalf("after the merge, with pids dead here: %v, want %s", names, want)
	}
	running.Close()
	if err := MergeActivity(fsys, home, pidOf(true)); err != nil {
		t.Fatal(err)
	}
	if names, _ := listJSONL(fsys, activityDir(home)); strings.Join(names, " ") != pastActivity {
		t.Fatalf("after the merge, with pids live here: %v", names)
	}
	if got, err := ReadActivity(fsys, home); err != nil || len(got) != 2 {
		t.Fatalf("%d attempts: %v", len(got), err)
	}
}
