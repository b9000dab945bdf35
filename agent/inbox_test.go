package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/rookhq/rook/agent/inbox"
	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
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
		err := r.eachEvent(s.Session, func(ev eventlog.Event) error {
			n, ok, err := r.readSave(ev)
			if ok {
				out[n.ID]++
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
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

// crashDrain opens the crash store on fsys, which drains the spool, and
// fails with a notice holding failed (saves not taken in).
func crashDrain(clk clock.Clock, failed string) func(vfs.FS) error {
	return func(fsys vfs.FS) error {
		r, err := Open(crashHome, Options{FS: fsys, Clock: clk, Writable: true})
		if err != nil {
			return err
		}
		for _, n := range r.Notices() {
			if strings.Contains(n, failed) {
				r.Close()
				return fmt.Errorf("%s", n)
			}
		}
		return r.Close()
	}
}

// TestInboxDrainCrashSweep crashes the drain at every write and drains
// again: every save is in the store exactly once.
func TestInboxDrainCrashSweep(t *testing.T) {
	clk := &clock.Fixed{T: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	var ids []string
	drain := crashDrain(clk, "not taken in")
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

// TestInboxDamagedLineKeptOnceAcrossCrash: a server saved three notes and
// exited; its middle save's line was damaged on disk since (its checksum
// fails), and its file ends in a torn line. The drain is crashed at every
// write and done again: each damaged line and torn tail has one copy under
// torn/, never two (a copy was named by the time it was made, and a drain
// cut short before its progress file copied them again: two copies, two
// notices) and never none; the saves either side come in exactly once.
// The copies are named by their spool file and offset (keepTorn), and a
// copy with the same bytes already there is the copy.
func TestInboxDamagedLineKeptOnceAcrossCrash(t *testing.T) {
	clk := &clock.Fixed{T: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	var ids []string
	var badLine []byte
	tornTail := []byte(`0badcafe {"v":1,"id":"torn`)
	setup := func(fsys *vfs.MemFS) {
		initCrashStore(fsys)
		name := inbox.ProcessName(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC), 1<<22+3) // no such process: exited
		w := inbox.NewWriter(fsys, crashHome, name)
		ids = nil
		for i := range 3 {
			at := time.Date(2026, 11, 30, 9, i, 0, 0, time.UTC)
			s := inbox.Save{ID: w.NextID(at), Time: at, Client: "zed", ClientName: "Zed", Title: fmt.Sprintf("t%d", i), Content: fmt.Sprintf("content-%d of a save\n", i)}
			if err := w.Save(s); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, s.ID)
		}
		w.Close()
		path := filepath.Join(crashHome, "inbox", "spool", name+".jsonl")
		b, err := vfs.ReadFile(fsys, path)
		if err != nil {
			t.Fatal(err)
		}
		// Damage the middle save on disk: one byte of its content.
		i := bytes.Index(b, []byte("content-1"))
		b[i+len("content-")] = 'X'
		start := bytes.LastIndexByte(b[:i], '\n') + 1
		end := start + bytes.IndexByte(b[start:], '\n') + 1
		badLine = append([]byte(nil), b[start:end]...)
		// A save torn by a crash before its reply: the file's last line,
		// without its newline.
		b = append(b, tornTail...)
		if err := fsys.WriteFileAtomic(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	drain := crashDrain(clk, "were not taken in")
	copies := func(fsys vfs.FS, of []byte) int {
		ents, _ := fsys.ReadDir(filepath.Join(crashHome, cas.TornDir))
		n := 0
		for _, e := range ents {
			if !strings.HasPrefix(e.Name(), "inbox-spool.") {
				continue
			}
			b, err := vfs.ReadFile(fsys, filepath.Join(crashHome, cas.TornDir, e.Name()))
			if err == nil && bytes.Contains(b, of) {
				n++
			}
		}
		return n
	}
	var doubled []int
	vfstest.Sweep(t, rand.New(rand.NewPCG(3, 3)), 0, setup,
		func(fsys *vfs.MemFS) error {
			err := drain(fsys)
			if err != nil && strings.Contains(err.Error(), vfs.ErrInjected.Error()) {
				return vfs.ErrInjected
			}
			return err
		},
		func(k int, states []*vfs.MemFS) {
			for _, s := range states {
				if err := drain(s); err != nil {
					t.Fatalf("crash at write %d: drain again: %v", k, err)
				}
				r, err := Open(crashHome, Options{FS: s, Clock: clk})
				if err != nil {
					t.Fatalf("crash at write %d: %v", k, err)
				}
				got := inboxIDs(t, r)
				r.Close()
				if got[ids[0]] != 1 || got[ids[2]] != 1 || got[ids[1]] != 0 {
					t.Errorf("crash at write %d: saves in the store %v, want %s and %s once", k, got, ids[0], ids[2])
				}
				for what, of := range map[string][]byte{"the damaged line": badLine, "the torn tail": tornTail} {
					switch c := copies(s, of); {
					case c == 0:
						t.Errorf("crash at write %d: %s has no copy under torn/: lost", k, what)
					case c > 1:
						doubled = append(doubled, k)
					}
				}
			}
		})
	if len(doubled) > 0 {
		t.Errorf("a crash at write(s) %v of the drain, then `rook inbox ls` again: a damaged spool line or torn tail is copied under torn/ twice (storage.md: copied \"before its offset moves past it, so once\")", doubled)
	}
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

// TestInboxOldLongNameWithUnicodeSpaceStillFound: a client whose
// clientInfo.name is longer than 64 bytes and holds an ideographic space
// U+3000 (72 bytes) saved with a rook that cut its inbox's name to 64 bytes
// with the U+3000 kept. The short name is cut at the same characters now
// (cut first, then its spaces folded): the client's new saves join its old
// inbox, found by its typed name, rather than a second inbox cut two
// characters longer (folding first kept more of the name).
func TestInboxOldLongNameWithUnicodeSpaceStillFound(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.Local)
	const client = "アクメ\u3000アシスタント\u3000デスクトップ版\u3000プレビュー"
	// The short name the older rook gave it: controls and format
	// characters dropped, trimmed, cut to 64 bytes on a character
	// boundary, Unicode spaces kept.
	old := strings.TrimSpace(inbox.Typeable(client))
	cut := 64
	for !utf8.RuneStart(old[cut]) {
		cut--
	}
	old = strings.ToLower(strings.TrimSpace(old[:cut]))
	newShort, _ := inbox.Inbox(client)
	if old == newShort {
		t.Fatalf("the names do not differ: %q", old)
	}
	save := func(p int, short string) {
		w := inbox.NewWriter(fsys, testHome, inbox.ProcessName(at, 1<<22+p))
		s := inbox.Save{ID: w.NextID(at), Time: at.Add(time.Duration(p) * time.Minute), Client: short, ClientName: client, Content: fmt.Sprintf("save %d\n", p)}
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
	save(0, old)      // as the older rook spooled it
	save(1, newShort) // the same client, after the upgrade
	list, err := r.Inboxes()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Saves != 2 {
		var got []string
		for _, s := range list {
			got = append(got, fmt.Sprintf("%q: %d save(s)", s.Client, s.Saves))
		}
		t.Errorf("one client saved before and after the upgrade: `rook inbox ls` lists %d inbox(es) (%s), want its one inbox with both saves", len(list), strings.Join(got, ", "))
	}
	for _, name := range []string{newShort, client, old} {
		if note, err := r.InboxShow(name, ""); err != nil || len(note.Saves) != 2 {
			t.Errorf("`rook inbox show %q`: %d save(s), %v; want both of the client's saves", name, len(note.Saves), err)
		}
	}
}

// TestInboxTitleFromBlankRecordedName: a save spooled by the rook that cut
// a client's name before cleaning it recorded 70 spaces and "Zed Editor"
// as 64 spaces, its short name "zed editor" (from the whole name). Its new
// inbox is titled from that short name, never "unknown client Inbox", and
// `inbox status` says the last save is from it.
func TestInboxTitleFromBlankRecordedName(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.Local)
	whole := strings.Repeat(" ", 70) + "Zed Editor"
	short, title := inbox.Inbox(whole)
	if short != "zed editor" || title != "Zed Editor Inbox" {
		t.Fatalf("Inbox(%q) = %q, %q", whole, short, title)
	}
	w := inbox.NewWriter(fsys, testHome, inbox.ProcessName(at, 1<<22+1))
	id := w.NextID(at)
	// What that rook wrote: the name cut to 64 bytes before it was
	// trimmed (Writer.Save cleans it now, so the line is written by hand).
	line := spoolLine(t, inbox.Save{V: 1, ID: id, Time: at, Client: short, ClientName: whole[:inbox.MaxClientName], Content: "a note\n"})
	act := spoolLine(t, inbox.Activity{Time: at, Client: short, ClientName: whole[:inbox.MaxClientName], Chars: 7, Status: "saved", ID: id})
	name := inbox.ProcessName(at, 1<<22+1) + ".jsonl"
	for dir, b := range map[string][]byte{"spool": line, "activity": act} {
		if err := fsys.MkdirAll(filepath.Join(inbox.Dir(testHome), dir), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := fsys.WriteFileAtomic(filepath.Join(inbox.Dir(testHome), dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.DrainInbox(); err != nil {
		t.Fatal(err)
	}
	list, err := r.Inboxes()
	if err != nil || len(list) != 1 {
		t.Fatalf("%+v %v", list, err)
	}
	if list[0].Client != short || list[0].Title != "zed editor Inbox" {
		t.Errorf("inbox %q titled %q, want %q titled from its short name", list[0].Client, list[0].Title, short)
	}
	st, err := r.InboxState()
	if err != nil || st.LastFrom != short {
		t.Errorf("`inbox status`: last save from %q (%v), want %q", st.LastFrom, err, short)
	}
}

// spoolLine frames v as a spool or activity line.
func spoolLine(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return append(fmt.Appendf(nil, "%08x %s", crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)), b), '\n')
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

// TestInboxDrainPassesOverUnreadableSpoolFile: a spool file rook cannot
// read (another account's, mode 0600: a client in a container sharing the
// home, or run once under sudo) used to stop every drain at it, so no
// other client's saves were ever taken in, and `inbox status` failed. The
// drain takes in every file it can read and names the one it cannot;
// status counts the rest and names it too.
func TestInboxDrainPassesOverUnreadableSpoolFile(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.Local)
	save := func(proc, client, content string) {
		t.Helper()
		w := inbox.NewWriter(fsys, testHome, proc)
		short, _ := inbox.Inbox(client)
		if err := w.Save(inbox.Save{ID: w.NextID(at), Time: at, Client: short, ClientName: client, Content: content}); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// The other account's server, and the user's own Codex.
	theirs := inbox.ProcessName(at, 1<<22+1)
	save(theirs, "claude-code", "saved by the container's client\n")
	save(inbox.ProcessName(at.Add(time.Second), 1<<22+2), "codex-mcp-client", "saved by the user's codex\n")

	fsys.SetHook(func(op vfs.Op, path string) error {
		if (op == vfs.OpOpenRead || op == vfs.OpOpen) && strings.Contains(path, theirs) {
			return fs.ErrPermission // mode 0600, another account's
		}
		return nil
	})
	defer fsys.SetHook(nil)

	rep, err := r.DrainInbox()
	if err != nil && !strings.Contains(err.Error(), theirs) {
		t.Errorf("the drain's error does not name the unreadable spool file %s: %v", theirs, err)
	}
	if rep.Drained != 1 {
		t.Errorf("drain took in %d save(s) (err %v): the user's own Codex save, readable and acknowledged, waits for ever behind another account's unreadable spool file", rep.Drained, err)
	}
	note, serr := r.InboxShow("codex", "")
	if serr != nil || len(note.Saves) != 1 {
		t.Errorf("`rook inbox show codex` after the drain: %v (saves %d)", serr, len(note.Saves))
	}
	if len(rep.Unreadable) != 1 || !strings.Contains(rep.Unreadable[0].Advice(), theirs) {
		t.Errorf("the drain does not name the unreadable spool file %s: %+v", theirs, rep.Unreadable)
	}
	st, serr := r.InboxState()
	if serr != nil {
		t.Errorf("`rook inbox status` fails outright on one unreadable spool file: %v", serr)
	}
	if len(st.Unreadable) != 1 || !strings.Contains(st.Unreadable[0].Path, theirs) {
		t.Errorf("`rook inbox status` does not name the unreadable spool file: %+v", st.Unreadable)
	}
}

// peakHeap runs f and returns how far the live heap rose above what it was
// before, sampled while f runs.
func peakHeap(f func()) uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak atomic.Uint64
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	f()
	close(done)
	<-stopped
	if p := peak.Load(); p > base {
		return p - base
	}
	return 0
}

// TestInboxDrainMemoryBounded: while another rook held the writer lock,
// an AI client saved notes of 100,000 characters each (the most
// append_to_inbox takes); `rook inbox ls` then takes them in first. The
// drain held every waiting save at once (inbox.ReadSpool listed each with
// its content, and the drain grouped them by client before appending):
// 300 saves raised the heap by 87 MB, 1,000 saves gave a peak RSS of
// 305 MB. It lists the spool without contents and reads each save back,
// appends it and lets it go: what the drain needs does not grow with the
// backlog. Measured as the heap's rise for a backlog of 600 saves (57 MB)
// and of 1,200: the store's block cache (32 MiB, kept by cas for every
// block written) is full with either, and twice the backlog raises the
// heap no further. (The review's bound, 24 MB over 300 saves, is under
// that cache, which the drain's writes fill: cas's, not the drain's.)
func TestInboxDrainMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 170 MB of saves")
	}
	// Little garbage between collections: the rise is what is held.
	defer debug.SetGCPercent(debug.SetGCPercent(20))
	const chars = 100_000
	body := strings.Repeat("abcdefghij", chars/10)
	drain := func(saves int) uint64 {
		home := filepath.Join(t.TempDir(), "store")
		clk := &clock.Fixed{T: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
		if _, err := cas.Init(vfs.OS, clk, home); err != nil {
			t.Fatal(err)
		}
		start := time.Date(2026, 10, 1, 9, 0, 0, 0, time.UTC)
		w := inbox.NewWriter(vfs.OS, home, inbox.ProcessName(start, 1<<22+9))
		for i := range saves {
			at := start.Add(time.Duration(i) * time.Hour)
			s := inbox.Save{ID: w.NextID(at), Time: at, Client: "zed", ClientName: "Zed", Title: fmt.Sprintf("t%d", i), Content: fmt.Sprintf("%05d", i) + body[5:]}
			if err := w.Save(s); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		var r *Rook
		var err error
		grew := peakHeap(func() { r, err = Open(home, Options{Clock: clk, Writable: true}) })
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if got := inboxIDs(t, r); len(got) != saves {
			t.Fatalf("%d saves taken in, want %d", len(got), saves)
		}
		return grew
	}
	const n = 600
	one, two := drain(n), drain(2*n)
	t.Logf("the drain raised the heap by %d MB for %d saves, %d MB for %d", one>>20, n, two>>20, 2*n)
	const limit = 24 << 20 // under the n saves more (57 MB of content)
	if two > one+limit {
		t.Errorf("`rook inbox ls` taking in %d waiting saves of %d characters raised the heap by %d MB, %d saves by %d MB: the drain holds every waiting save at once", 2*n, chars, two>>20, n, one>>20)
	}
}

// TestInboxShowReadsOnlyTheDayShown: `rook inbox show --date D` read
// every save of the inbox, all days, content included, to pick one day's:
// memory grew with the inbox's history. It reads the bodies of the day
// shown only (a note event's day is its save's).
func TestInboxShowReadsOnlyTheDayShown(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 20 MB of saves")
	}
	home := filepath.Join(t.TempDir(), "store")
	clk := &clock.Fixed{T: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	if _, err := cas.Init(vfs.OS, clk, home); err != nil {
		t.Fatal(err)
	}
	const saves, chars = 200, 100_000
	rng := rand.New(rand.NewPCG(1, 2))
	letters := "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ\n"
	var b strings.Builder
	for range chars {
		b.WriteByte(letters[rng.IntN(len(letters))])
	}
	body := b.String()
	start := time.Date(2026, 10, 1, 9, 0, 0, 0, time.UTC)
	w := inbox.NewWriter(vfs.OS, home, inbox.ProcessName(start, 1<<22+7))
	for i := range saves {
		at := start.Add(time.Duration(i) * 6 * time.Hour) // 50 days, 4 saves a day
		s := inbox.Save{ID: w.NextID(at), Time: at, Client: "zed", ClientName: "Zed", Title: fmt.Sprintf("t%d", i), Content: fmt.Sprintf("%05d", i) + body[5:]}
		if err := w.Save(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := Open(home, Options{Clock: clk, Writable: true}) // drains the saves in
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	// Opened again: the drain's blocks are not in the store's cache.
	if r, err = Open(home, Options{Clock: clk}); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	const limit = 8 << 20 // the content of all saves is 20 MB
	day := start.Local().Format(time.DateOnly)
	var note InboxDayNote
	grew := peakHeap(func() { note, err = r.InboxShow("zed", day) })
	if err != nil || len(note.Saves) == 0 {
		t.Fatalf("inbox show --date %s: %v", day, err)
	}
	if shown := len(note.Saves) * chars; grew > uint64(shown)*3+limit {
		t.Errorf("`rook inbox show zed --date %s` (%d saves, %d KB shown) raised the heap by %d MB: it reads every day's saves, content included", day, len(note.Saves), shown>>10, grew>>20)
	}
	// The newest day, found without reading every body either.
	grew = peakHeap(func() { note, err = r.InboxShow("zed", "") })
	if err != nil || len(note.Saves) == 0 || note.Saves[len(note.Saves)-1].Title != fmt.Sprintf("t%d", saves-1) {
		t.Fatalf("inbox show (newest day): %+v %v", note.Date, err)
	}
	if shown := len(note.Saves) * chars; grew > uint64(shown)*3+limit {
		t.Errorf("`rook inbox show zed` (%d saves shown) raised the heap by %d MB", len(note.Saves), grew>>20)
	}
	list, err := r.Inboxes()
	if err != nil || len(list) != 1 || list[0].Saves != saves {
		t.Fatalf("inbox ls: %+v %v", list, err)
	}
	total := 0
	for _, d := range list[0].Days {
		total += d.Chars
	}
	if total != saves*chars {
		t.Fatalf("inbox ls counts %d characters, want %d", total, saves*chars)
	}
}
