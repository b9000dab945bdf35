package agent

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rookhq/rook/agent/inbox"
	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/internal/clock"
	"github.com/rookhq/rook/internal/vfs"
	"github.com/rookhq/rook/internal/vfs/vfstest"
)

// spoolSaves writes saves as n server processes would: each its own spool.
func spoolSaves(t testing.TB, fsys vfs.FS, home string, procs, each int) []string {
	t.Helper()
	var ids []string
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.Local)
	for p := range procs {
		w := inbox.NewWriter(fsys, home, inbox.ProcessName(at, 1<<22+p)) // pids no process has: their files may go once drained
		client := []string{"claude-code", "codex", "Zed"}[p%3]
		short, _ := inbox.Inbox(client)
		for i := range each {
			now := at.Add(time.Duration(p*each+i) * time.Minute)
			s := inbox.Save{ID: w.NextID(now), Time: now, Client: short, ClientName: client, Title: fmt.Sprintf("t%d-%d", p, i), Content: fmt.Sprintf("content %d of %d\n", i, p)}
			if err := w.Save(s); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, s.ID)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// inboxIDs counts each save id across the inbox sessions.
func inboxIDs(t testing.TB, r *Rook) map[string]int {
	t.Helper()
	list, err := r.Inboxes()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, s := range list {
		notes, err := r.inboxNotes(s.Session)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range notes {
			out[n.ID]++
		}
	}
	return out
}

func TestInboxDrainTakesEachSaveOnce(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	ids := spoolSaves(t, fsys, testHome, 3, 4)
	rep, err := r.DrainInbox()
	if err != nil || rep.Drained != 12 {
		t.Fatalf("%+v %v", rep, err)
	}
	// A drain cut short after its notes were durable, before it marked
	// them drained: the next drain finds them and skips them.
	if err := fsys.Remove(testHome + "/inbox/drained.json"); err != nil {
		t.Fatal(err)
	}
	spoolSaves(t, fsys, testHome, 3, 4) // the same processes' files, rewritten whole
	rep, err = r.DrainInbox()
	if err != nil || rep.Drained != 0 || rep.Skipped != 12 {
		t.Fatalf("second drain %+v %v", rep, err)
	}
	// A spool file shorter than the progress says (replaced): read again
	// whole, and still nothing twice.
	spoolSaves(t, fsys, testHome, 3, 4)
	_, sizes, _ := inbox.ReadPending(fsys, testHome, inbox.Progress{})
	prog := inbox.Progress{}
	for name := range sizes {
		prog[name] = 1 << 30
	}
	if err := inbox.WriteProgress(fsys, testHome, prog); err != nil {
		t.Fatal(err)
	}
	if rep, err = r.DrainInbox(); err != nil || rep.Drained != 0 || rep.Skipped != 12 {
		t.Fatalf("drain after a shrink %+v %v", rep, err)
	}
	got := inboxIDs(t, r)
	for _, id := range ids {
		if got[id] != 1 {
			t.Fatalf("save %s is in the store %d times", id, got[id])
		}
	}
	list, _ := r.Inboxes()
	var names []string
	for _, s := range list {
		names = append(names, fmt.Sprintf("%s/%s/%d/%d", s.Client, s.Title, s.Saves, len(s.Days)))
	}
	if strings.Join(names, " ") != "claude/Claude Inbox/4/1 codex/Codex Inbox/4/1 zed/Zed Inbox/4/1" {
		t.Fatalf("inboxes: %v", names)
	}
	note, err := r.InboxShow("CODEX", "")
	if err != nil || len(note.Saves) != 4 || note.Date != "2026-11-30" {
		t.Fatalf("show: %+v %v", note, err)
	}
	if want := "## t1-0\n\ncontent 0 of 1\n\n## t1-1\n\ncontent 1 of 1\n"; !strings.HasPrefix(note.Text(), want) {
		t.Fatalf("text:\n%s", note.Text())
	}
	if _, err := r.InboxShow("cursor", ""); err == nil {
		t.Fatal("an inbox that does not exist shows")
	}
	// Drained, and their writers gone: the spool files are removed.
	if ents, _ := fsys.ReadDir(testHome + "/inbox/spool"); len(ents) != 0 {
		t.Fatalf("%d spool files left", len(ents))
	}
}

// TestInboxDrainOnOpen: opening the store for writing takes the spool in
// and says so.
func TestInboxDrainOnOpen(t *testing.T) {
	fsys := vfs.NewMem()
	clk := &clock.Fixed{T: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	if _, err := cas.Init(fsys, clk, testHome); err != nil {
		t.Fatal(err)
	}
	spoolSaves(t, fsys, testHome, 2, 2)
	r, err := Open(testHome, Options{FS: fsys, Clock: clk, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if n := r.Notices(); len(n) != 1 || !strings.Contains(n[0], "took in 4 note(s)") || !strings.Contains(n[0], "(`rook inbox ls`)") {
		t.Fatalf("notices %q", n)
	}
}

// The notice of saves taken in points to `rook inbox ls`, but not when
// that is the command opening the store: it lists them next, and said to
// run itself.
func TestInboxDrainOnOpenByInboxLs(t *testing.T) {
	fsys := vfs.NewMem()
	clk := &clock.Fixed{T: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	if _, err := cas.Init(fsys, clk, testHome); err != nil {
		t.Fatal(err)
	}
	spoolSaves(t, fsys, testHome, 1, 2)
	r, err := Open(testHome, Options{FS: fsys, Clock: clk, Writable: true, Command: "rook inbox ls"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if n := r.Notices(); len(n) != 1 || n[0] != "inbox: took in 2 note(s) AI clients saved" {
		t.Fatalf("notices %q", n)
	}
}

// TestInboxDrainCrashSweep crashes the drain at every write and drains
// again: every save is in the store exactly once.
func TestInboxDrainCrashSweep(t *testing.T) {
	clk := &clock.Fixed{T: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	var ids []string
	drain := func(fsys vfs.FS) error {
		r, err := Open(crashHome, Options{FS: fsys, Clock: clk, Writable: true})
		if err != nil {
			return err
		}
		for _, n := range r.Notices() {
			if strings.Contains(n, "not taken in") {
				r.Close()
				return fmt.Errorf("%s", n)
			}
		}
		return r.Close()
	}
	n := vfstest.Sweep(t, rand.New(rand.NewPCG(9, 9)), 2,
		func(fsys *vfs.MemFS) { initCrashStore(fsys); ids = spoolSaves(t, fsys, crashHome, 2, 3) },
		func(fsys *vfs.MemFS) error {
			err := drain(fsys)
			if err != nil && strings.Contains(err.Error(), vfs.ErrInjected.Error()) {
				return vfs.ErrInjected
			}
			return err
		},
		func(k int, states []*vfs.MemFS) {
			for _, s := range states {
				verifyCrashState(t, fmt.Sprintf("crash at write %d", k), s, clk)
				if err := drain(s); err != nil {
					t.Fatalf("crash at write %d: drain again: %v", k, err)
				}
				r, err := Open(crashHome, Options{FS: s, Clock: clk})
				if err != nil {
					t.Fatalf("crash at write %d: %v", k, err)
				}
				got := inboxIDs(t, r)
				r.Close()
				for _, id := range ids {
					if got[id] != 1 {
						t.Fatalf("crash at write %d: save %s is in the store %d times", k, id, got[id])
					}
				}
			}
		})
	t.Logf("swept %d crash points", n)
}

// TestInboxConcurrentWriters: server processes saving at the same time,
// each to its own spool, lose nothing and mix nothing.
func TestInboxConcurrentWriters(t *testing.T) {
	dir := t.TempDir()
	r := diskRook(t, dir+"/store")
	var wg sync.WaitGroup
	const procs, each = 6, 40
	errs := make(chan error, procs)
	for p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := inbox.NewWriter(vfs.OS, dir+"/store", inbox.ProcessName(time.Now(), 1<<22+p))
			defer w.Close()
			for i := range each {
				now := time.Now()
				if err := w.Save(inbox.Save{ID: w.NextID(now), Time: now, Client: "codex", ClientName: "codex", Content: fmt.Sprintf("%d/%d", p, i)}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if rep, err := r.DrainInbox(); err != nil || rep.Drained != procs*each {
		t.Fatalf("%+v %v", rep, err)
	}
	got := inboxIDs(t, r)
	if len(got) != procs*each {
		t.Fatalf("%d distinct saves, want %d", len(got), procs*each)
	}
}

// TestInboxSaveCrashSweep crashes a server's saves at every write: each save
// acknowledged (Save returned) before the crash is taken in exactly once,
// and nothing else is taken in twice.
func TestInboxSaveCrashSweep(t *testing.T) {
	clk := &clock.Fixed{T: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	var acked []string
	vfstest.Sweep(t, rand.New(rand.NewPCG(5, 5)), 3, initCrashStore,
		func(fsys *vfs.MemFS) error {
			acked = nil
			w := inbox.NewWriter(fsys, crashHome, inbox.ProcessName(clk.T, 1<<22))
			defer w.Close()
			for i := range 5 {
				s := inbox.Save{ID: w.NextID(clk.T), Time: clk.T, Client: "claude", ClientName: "claude-code", Content: fmt.Sprint(i)}
				if err := w.Save(s); err != nil {
					return err
				}
				acked = append(acked, s.ID)
			}
			return nil
		},
		func(k int, states []*vfs.MemFS) {
			for _, s := range states {
				r, err := Open(crashHome, Options{FS: s, Clock: clk, Writable: true})
				if err != nil {
					t.Fatalf("crash at write %d: %v", k, err)
				}
				got := inboxIDs(t, r)
				r.Close()
				for _, id := range acked {
					if got[id] != 1 {
						t.Fatalf("crash at write %d: acknowledged save %s is in the store %d times", k, id, got[id])
					}
				}
				for id, n := range got {
					if n != 1 {
						t.Fatalf("crash at write %d: save %s taken in %d times", k, id, n)
					}
				}
			}
		})
}

// TestInboxOldBidiName: an inbox named before format characters were
// dropped from names ("evil" + U+202E) is still shown by its stored name,
// by the typeable one, and takes the client's new saves (now spooled under
// the typeable name) rather than a second inbox.
func TestInboxOldBidiName(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.Local)
	save := func(p int, short string) {
		w := inbox.NewWriter(fsys, testHome, inbox.ProcessName(at, 1<<22+p))
		s := inbox.Save{ID: w.NextID(at), Time: at, Client: short, ClientName: "evil\u202e", Content: fmt.Sprintf("save %d\n", p)}
		if err := w.Save(s); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := r.DrainInbox(); err != nil {
			t.Fatal(err)
		}
	}
	save(0, "evil\u202e") // as older versions spooled it
	if short, _ := inbox.Inbox("evil\u202e"); short != "evil" {
		t.Fatalf("short name %q", short)
	}
	save(1, "evil")
	list, err := r.Inboxes()
	if err != nil || len(list) != 1 || list[0].Saves != 2 {
		t.Fatalf("%+v %v", list, err)
	}
	for _, name := range []string{"evil\u202e", "evil", "EVIL"} {
		if note, err := r.InboxShow(name, ""); err != nil || len(note.Saves) != 2 {
			t.Fatalf("show %q: %+v %v", name, note, err)
		}
	}
}

// Two Claude clients run at once (Claude Desktop, started in the morning, and
// Claude Code, started in the evening): each `rook mcp serve` process has its
// own spool file, named by its start time, and the drain takes the files in
// name order, so the Desktop saves (12-01) are taken in before the Code save
// of 11-30. `rook inbox show claude` with no --date shows the inbox's newest
// day by the saves' own times, 2026-12-01 (it used to show the day of the
// last save taken in, 2026-11-30), and lists that day's saves in their time
// order; saves of equal times in the order they were taken in.
func TestInboxShowNewestDayAcrossProcesses(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	morning := time.Date(2026, 11, 30, 8, 0, 0, 0, time.Local)
	evening := time.Date(2026, 11, 30, 20, 0, 0, 0, time.Local)
	save := func(start time.Time, pid int, client string, at time.Time, content string) {
		t.Helper()
		w := inbox.NewWriter(fsys, testHome, inbox.ProcessName(start, pid))
		short, _ := inbox.Inbox(client)
		s := inbox.Save{ID: w.NextID(at), Time: at, Client: short, ClientName: client, Content: content}
		if err := w.Save(s); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	day1 := func(h, m int) time.Time { return time.Date(2026, 12, 1, h, m, 0, 0, time.Local) }
	// Saved in this order in time: Code's first, Desktop's after midnight,
	// then one of each at 00:40 (Desktop's taken in first).
	save(evening, 1<<22+2, "claude-code", time.Date(2026, 11, 30, 23, 50, 0, 0, time.Local), "late on the 30th\n")
	save(morning, 1<<22+1, "claude-ai", day1(0, 20), "early on the 1st\n")
	save(evening, 1<<22+2, "claude-code", day1(0, 30), "code at 00:30\n")
	save(morning, 1<<22+1, "claude-ai", day1(0, 40), "desktop at 00:40\n")
	save(evening, 1<<22+2, "claude-code", day1(0, 40), "code at 00:40\n")
	if rep, err := r.DrainInbox(); err != nil || rep.Drained != 5 {
		t.Fatalf("drain %+v %v", rep, err)
	}
	note, err := r.InboxShow("claude", "")
	if err != nil {
		t.Fatal(err)
	}
	if note.Date != "2026-12-01" {
		t.Errorf("`rook inbox show claude` showed %s, not the inbox's newest day 2026-12-01: %q", note.Date, note.Text())
	}
	if want := "early on the 1st\n\ncode at 00:30\n\ndesktop at 00:40\n\ncode at 00:40\n"; note.Text() != want {
		t.Errorf("the day's saves are not in their time order:\n%s\nwant:\n%s", note.Text(), want)
	}
	list, err := r.Inboxes()
	if err != nil || len(list) != 1 {
		t.Fatalf("%+v %v", list, err)
	}
	if len(list[0].Days) != 2 || list[0].Days[0].Date != "2026-12-01" {
		t.Fatalf("inbox ls days %+v", list[0].Days)
	}
}
