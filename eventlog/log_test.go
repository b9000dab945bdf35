package eventlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/rookhq/rook/internal/clock"
	"github.com/rookhq/rook/internal/vfs"
)

func testLog(t *testing.T, fsys vfs.FS, opts Options) *Log {
	t.Helper()
	if fsys == nil {
		fsys = vfs.NewMem()
	}
	opts.FS = fsys
	opts.Writable = true
	if opts.Clock == nil {
		opts.Clock = &clock.Fixed{T: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	}
	l, err := Open("/h/events", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// mustCreate creates a session titled title in l.
func mustCreate(t *testing.T, l *Log, title string) Meta {
	t.Helper()
	m, err := l.Create(Meta{Title: title})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func body(i int) (b [16]byte) {
	copy(b[:], fmt.Sprintf("body-%d", i))
	return b
}

func TestAppendReadReopen(t *testing.T) {
	fsys := vfs.NewMem()
	l := testLog(t, fsys, Options{BarrierEvery: 10})
	m, err := l.Create(Meta{Title: "t", Workspace: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 1000; i++ {
		seq, err := l.Append(m.ID, Event{Kind: KindAssistant, Body: body(i), Label: "model", TokensIn: 2, TokensOut: 1})
		if err != nil || seq != uint64(i) {
			t.Fatalf("append %d: seq %d, %v", i, seq, err)
		}
	}
	check := func(l *Log) {
		t.Helper()
		s, err := l.Summary(m.ID)
		if err != nil || s.Events != 1000 || s.TokensIn != 2000 || s.TokensOut != 1000 || s.Title != "t" {
			t.Fatalf("summary %+v %v", s, err)
		}
		for _, from := range []uint64{0, 1, 499, 990, 999} {
			evs, err := l.Read(m.ID, from, 7)
			if err != nil {
				t.Fatal(err)
			}
			want := min(7, 1000-int(from))
			if len(evs) != want {
				t.Fatalf("read from %d: %d events", from, len(evs))
			}
			for i, ev := range evs {
				if ev.Seq != from+uint64(i) || ev.Body != body(int(ev.Seq)) {
					t.Fatalf("read from %d: event %d is seq %d", from, i, ev.Seq)
				}
			}
		}
		evs, _ := l.ReadBefore(m.ID, 1000, 50)
		if len(evs) != 50 || evs[0].Seq != 950 || evs[49].Seq != 999 {
			t.Fatalf("last page: %d events", len(evs))
		}
		if evs, _ := l.Read(m.ID, 1000, 5); len(evs) != 0 {
			t.Fatalf("read past the end: %d", len(evs))
		}
	}
	check(l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2, err := Open("/h/events", Options{FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	check(l2)
}

func TestForkKeepsExactlyTheEventsBeforeTheSplit(t *testing.T) {
	l := testLog(t, nil, Options{})
	m, _ := l.Create(Meta{Title: "parent", Workspace: "/w", Tags: []string{"x"}})
	for i := 0; i < 5; i++ {
		l.Append(m.ID, Event{Kind: KindUser, Body: body(i)})
	}
	l.Append(m.ID, Event{Kind: KindNote, Label: "rook:tool-images:v1"}, Event{Kind: KindToolResult, Body: body(99)})
	for _, at := range []uint64{0, 1, 3, 6, 7} {
		f, err := l.Fork(m.ID, at, Meta{})
		if err != nil {
			t.Fatalf("fork at %d: %v", at, err)
		}
		s, _ := l.Summary(f.ID)
		if s.Events != at || *s.Parent != m.ID || *s.ForkAt != at || s.Workspace != "/w" {
			t.Fatalf("fork at %d: %+v", at, s)
		}
		evs, _ := l.Read(f.ID, 0, 100)
		if uint64(len(evs)) != at {
			t.Fatalf("fork at %d has %d events", at, len(evs))
		}
		for i, ev := range evs {
			if ev.Seq != uint64(i) {
				t.Fatalf("fork seq %d at %d", ev.Seq, i)
			}
		}
		// A fork goes on on its own.
		seq, err := l.Append(f.ID, Event{Kind: KindUser})
		if err != nil || seq != at {
			t.Fatalf("append to fork at %d: seq %d %v", at, seq, err)
		}
	}
	if _, err := l.Fork(m.ID, 8, Meta{}); err == nil {
		t.Fatal("fork past the end accepted")
	}
}

// TestForkOfAnEmptySession: a session with no events forks at 0 (its only
// fork point) into another empty session that goes on on its own, on the
// in-memory file system as on disk (a ReadAt of nothing at the end of a
// file may say io.EOF, which Fork gave back bare); past 0 it is refused,
// saying the session has no events.
func TestForkOfAnEmptySession(t *testing.T) {
	for _, name := range []string{"mem", "disk"} {
		t.Run(name, func(t *testing.T) {
			var fsys vfs.FS = vfs.NewMem()
			dir := "/h/events"
			if name == "disk" {
				fsys, dir = vfs.OS, filepath.Join(t.TempDir(), "events")
			}
			l, err := Open(dir, Options{FS: fsys, Writable: true})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			m, err := l.Create(Meta{Title: "empty", Workspace: "/w"})
			if err != nil {
				t.Fatal(err)
			}
			f, err := l.Fork(m.ID, 0, Meta{})
			if err != nil {
				t.Fatalf("fork of an empty session at 0: %v", err)
			}
			s, err := l.Summary(f.ID)
			if err != nil || s.Events != 0 || s.Parent == nil || *s.Parent != m.ID || s.ForkAt == nil || *s.ForkAt != 0 || s.Title != "empty" || s.Workspace != "/w" {
				t.Fatalf("fork: %+v %v", s, err)
			}
			if seq, err := l.Append(f.ID, Event{Kind: KindUser, Body: body(1)}); err != nil || seq != 0 {
				t.Fatalf("append to the fork: seq %d, %v", seq, err)
			}
			if s, err := l.Summary(m.ID); err != nil || s.Events != 0 {
				t.Fatalf("parent after the fork's append: %+v %v", s, err)
			}
			_, err = l.Fork(m.ID, 1, Meta{})
			if err == nil || !strings.Contains(err.Error(), "has no events") || !strings.Contains(err.Error(), "--at 0") {
				t.Fatalf("fork of an empty session at 1: %v", err)
			}
		})
	}
}

func TestConcurrentPairsStayAdjacent(t *testing.T) {
	l := testLog(t, nil, Options{BarrierEvery: 16})
	m, _ := l.Create(Meta{})
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				note := Event{Kind: KindNote, Label: fmt.Sprintf("g%d-%d", g, i)}
				res := Event{Kind: KindToolResult, Label: fmt.Sprintf("g%d-%d", g, i)}
				if _, err := l.Append(m.ID, note, res); err != nil {
					t.Error(err)
					return
				}
				if i%7 == 0 {
					l.Flush()
				}
			}
		}(g)
	}
	wg.Wait()
	evs, err := l.Read(m.ID, 0, 1000)
	if err != nil || len(evs) != 160 {
		t.Fatalf("%d events, %v", len(evs), err)
	}
	for i := 0; i < 160; i += 2 {
		if evs[i].Seq != uint64(i) || evs[i].Kind != KindNote || evs[i+1].Kind != KindToolResult || evs[i].Label != evs[i+1].Label {
			t.Fatalf("pair at %d split: %+v / %+v", i, evs[i], evs[i+1])
		}
	}
}

func TestBarriers(t *testing.T) {
	l := testLog(t, nil, Options{})
	m, _ := l.Create(Meta{})
	for i := 0; i < 10; i++ {
		l.Append(m.ID, Event{Kind: KindAssistant})
	}
	if n := l.Unflushed(); n != 10 {
		t.Fatalf("unflushed %d", n)
	}
	l.Append(m.ID, Event{Kind: KindCheckpoint})
	if n := l.Unflushed(); n != 0 {
		t.Fatalf("a checkpoint left %d unflushed", n)
	}
	for i := 0; i < 256; i++ {
		l.Append(m.ID, Event{Kind: KindAssistant})
	}
	if n := l.Unflushed(); n != 0 {
		t.Fatalf("256 events left %d unflushed", n)
	}
}

// In bulk, a barrier comes by bytes, never further apart than a crash may
// tear, and only so; back out of bulk, every 256 events.
func TestBulkBarriersComeByBytes(t *testing.T) {
	l := testLog(t, nil, Options{})
	m, _ := l.Create(Meta{})
	l.SetBulk(true)
	label := strings.Repeat("x", 100)
	for i := 0; i < 1000; i++ {
		l.Append(m.ID, Event{Kind: KindNote, Label: label, Body: body(i)})
	}
	if n := l.Unflushed(); n != 1000 {
		t.Fatalf("1000 events in bulk: %d unflushed, want all of them", n)
	}
	size := func() int64 {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.sessions[m.ID].size
	}
	for i := 0; l.Unflushed() > 0; i++ {
		if i == 1e5 {
			t.Fatal("no barrier after 100,000 events in bulk")
		}
		l.Append(m.ID, Event{Kind: KindNote, Label: label, Body: body(i)})
	}
	if got := size(); got > tailWindow || got < bulkBarrierBytes {
		t.Fatalf("the first bulk barrier wrote %d bytes, want %d to %d", got, bulkBarrierBytes, tailWindow)
	}
	// A checkpoint or compaction makes none (a barrier mid-import would
	// write the store's bulk blocks out half full); the writer's flush does.
	l.Append(m.ID, Event{Kind: KindNote})
	l.Append(m.ID, Event{Kind: KindCheckpoint})
	l.Append(m.ID, Event{Kind: KindCompaction})
	if n := l.Unflushed(); n != 3 {
		t.Fatalf("a checkpoint and a compaction in bulk: %d unflushed, want 3", n)
	}
	if err := l.Flush(); err != nil || l.Unflushed() != 0 {
		t.Fatalf("flush: %v, %d unflushed", err, l.Unflushed())
	}
	l.SetBulk(false)
	for i := 0; i < 256; i++ {
		l.Append(m.ID, Event{Kind: KindNote})
	}
	if n := l.Unflushed(); n != 0 {
		t.Fatalf("256 events after bulk left %d unflushed", n)
	}
}

func TestIDsAreUniqueAndSortedWithinAMillisecond(t *testing.T) {
	var g idGen
	now := time.Now()
	prev := ""
	for i := 0; i < 500; i++ {
		id, err := g.next(now)
		if err != nil {
			t.Fatal(err)
		}
		s := id.String()
		if s <= prev {
			t.Fatalf("id %s after %s", s, prev)
		}
		back, err := ParseID(s)
		if err != nil || back != id {
			t.Fatalf("round trip %s: %v", s, err)
		}
		prev = s
	}
}

// TestTotalsAndTimes checks the sparse token totals (a record carries them
// every cumEvery seqs) and times relative to the log's base time: after a
// reopen, at every length around a totals record, and in forks (which keep
// the parent's base time and records).
func TestTotalsAndTimes(t *testing.T) {
	fsys := vfs.NewMem()
	clk := &clock.Fixed{T: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	l := testLog(t, fsys, Options{Clock: clk})
	m := mustCreate(t, l, "t")
	var in, out []uint64 // totals after each event
	var sumIn, sumOut uint64
	start := clk.T
	for i := range 3*cumEvery + 5 {
		ev := Event{Kind: KindAssistant, Body: body(i), TokensIn: uint64(i * 7), TokensOut: uint64(i % 5)}
		switch i {
		case 3:
			ev.Time = start.Add(-90 * time.Minute) // before the session began: an imported event
		case 4:
			ev.Time = start.Add(400 * 24 * time.Hour)
		}
		if _, err := l.Append(m.ID, ev); err != nil {
			t.Fatal(err)
		}
		sumIn, sumOut = sumIn+ev.TokensIn, sumOut+ev.TokensOut
		in, out = append(in, sumIn), append(out, sumOut)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = testLog(t, fsys, Options{Clock: clk})
	s, err := l.Summary(m.ID)
	if err != nil || s.TokensIn != sumIn || s.TokensOut != sumOut {
		t.Fatalf("summary %+v %v, want %d/%d", s, err, sumIn, sumOut)
	}
	evs, err := l.Read(m.ID, 0, 10)
	if err != nil || !evs[3].Time.Equal(start.Add(-90*time.Minute)) || !evs[4].Time.Equal(start.Add(400*24*time.Hour)) || !evs[5].Time.Equal(start) {
		t.Fatalf("times: %v %v", evs, err)
	}
	for _, at := range []uint64{1, cumEvery - 1, cumEvery, cumEvery + 1, 2*cumEvery + 3} {
		f, err := l.Fork(m.ID, at, Meta{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := l.Summary(f.ID)
		if err != nil || s.TokensIn != in[at-1] || s.TokensOut != out[at-1] {
			t.Fatalf("fork at %d: %+v %v, want %d/%d", at, s, err, in[at-1], out[at-1])
		}
		// Appending to the fork carries its totals on.
		if _, err := l.Append(f.ID, Event{Kind: KindUser, TokensIn: 1000}); err != nil {
			t.Fatal(err)
		}
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
		ro, err := Open("/h/events", Options{FS: fsys})
		if err != nil {
			t.Fatal(err)
		}
		if s, err := ro.Summary(f.ID); err != nil || s.TokensIn != in[at-1]+1000 || s.Events != at+1 {
			t.Fatalf("fork at %d, appended to, read from disk: %+v %v", at, s, err)
		}
		// The copied events' tokens, which ls takes from the totals
		// to give the fork's own.
		if bi, bo, err := ro.TokensBefore(f.ID, at); err != nil || bi != in[at-1] || bo != out[at-1] {
			t.Fatalf("fork at %d: tokens before %d: %d/%d %v, want %d/%d", at, at, bi, bo, err, in[at-1], out[at-1])
		}
		if bi, bo, err := ro.TokensBefore(f.ID, 0); err != nil || bi != 0 || bo != 0 {
			t.Fatalf("tokens before 0: %d/%d %v", bi, bo, err)
		}
		ro.Close()
		fevs, err := l.Read(f.ID, 0, 10)
		if err != nil || (at > 3 && !fevs[3].Time.Equal(evs[3].Time)) {
			t.Fatalf("fork at %d: times %v %v", at, fevs, err)
		}
	}
}

// TestBulkCreate: a session created in bulk exists for its writer at once
// (listed, read, appended to, renamed, removed) and for everyone else from
// the next flush, which writes its metadata after its log is durable.
func TestBulkCreate(t *testing.T) {
	fsys := vfs.NewMem()
	l := testLog(t, fsys, Options{})
	l.SetBulk(true)
	other := func() []ID {
		t.Helper()
		ro, err := Open("/h/events", Options{FS: fsys})
		if err != nil {
			t.Fatal(err)
		}
		ids, err := ro.IDs()
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	a := mustCreate(t, l, "a")
	b := mustCreate(t, l, "b")
	gone := mustCreate(t, l, "gone")
	if vfs.Exists(fsys, l.metaPath(a.ID)) {
		t.Fatal("a session created in bulk has its metadata written before a flush")
	}
	if ids, err := l.IDs(); err != nil || len(ids) != 3 {
		t.Fatalf("the writer lists %v, %v: want its 3 sessions", ids, err)
	}
	if ids := other(); len(ids) != 0 {
		t.Fatalf("another reader lists %v before the flush", ids)
	}
	if _, err := l.Append(a.ID, Event{Kind: KindUser, Body: body(1)}); err != nil {
		t.Fatal(err)
	}
	if evs, err := l.Read(a.ID, 0, 10); err != nil || len(evs) != 1 {
		t.Fatalf("read a: %v %v", evs, err)
	}
	a.Title = "a, renamed"
	if err := l.UpdateMeta(a); err != nil {
		t.Fatal(err)
	}
	if n, err := l.Remove(gone.ID); err != nil || n != 0 {
		t.Fatalf("remove: %d %v", n, err)
	}
	if _, err := l.ReadMeta(gone.ID); err == nil {
		t.Fatal("a removed session still reads")
	}
	b.Title = "b, committed"
	if err := l.StageMeta(b); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	ids := other()
	if len(ids) != 2 || ids[0] != a.ID || ids[1] != b.ID {
		t.Fatalf("after the flush another reader lists %v, want %v and %v", ids, a.ID, b.ID)
	}
	for id, title := range map[ID]string{a.ID: "a, renamed", b.ID: "b, committed"} {
		m, err := l.readMetaFile(id)
		if err != nil || m.Title != title {
			t.Fatalf("metadata of %s on disk: %+v %v, want title %q", id, m, err, title)
		}
	}
	// Both logs are whole: b, with no event, has its header.
	if s, err := l.Summary(b.ID); err != nil || s.Events != 0 {
		t.Fatalf("summary of b: %+v %v", s, err)
	}
	// StageMeta of a session that does not exist changes nothing.
	if err := l.StageMeta(Meta{ID: gone.ID}); err == nil {
		t.Fatal("StageMeta of a removed session succeeded")
	}
}

// TestStageMeta: a staged metadata is read as staged at once and written by
// the next flush, a barrier included, after the logs; a session created in
// bulk and staged before its first flush has its metadata written once; a
// Remove after the staging wins over it (an UpdateMeta:
// TestUpdateMetaOfAStagedSession).
func TestStageMeta(t *testing.T) {
	fsys := vfs.NewMem()
	l := testLog(t, fsys, Options{})
	old := mustCreate(t, l, "old")
	removed := mustCreate(t, l, "removed")
	var mu sync.Mutex
	written := map[ID]int{} // metadata files renamed into place, by session
	var order []string      // the logs synced and metadata written, in order
	fsys.SetHook(func(op vfs.Op, path string) error {
		mu.Lock()
		defer mu.Unlock()
		name := filepath.Base(path)
		if op == vfs.OpRename && strings.HasSuffix(name, ".meta") {
			id, err := ParseID(strings.TrimSuffix(name, ".meta"))
			if err != nil {
				t.Errorf("metadata file %s: %v", name, err)
			}
			written[id]++
			order = append(order, "meta")
		}
		if op == vfs.OpSync && strings.HasSuffix(name, ".log") {
			order = append(order, "log")
		}
		return nil
	})
	l.SetBulk(true)
	fresh := mustCreate(t, l, "fresh")
	for _, id := range []ID{old.ID, fresh.ID} {
		if _, err := l.Append(id, Event{Kind: KindUser, Body: body(1)}); err != nil {
			t.Fatal(err)
		}
	}
	old.Title, fresh.Title, removed.Title = "old, staged", "fresh, staged", "removed, staged"
	for _, m := range []Meta{old, fresh, removed} {
		if err := l.StageMeta(m); err != nil {
			t.Fatal(err)
		}
	}
	if m, err := l.ReadMeta(old.ID); err != nil || m.Title != "old, staged" {
		t.Fatalf("ReadMeta of a staged session: %+v %v", m, err)
	}
	if m, err := l.readMetaFile(old.ID); err != nil || m.Title != "old" {
		t.Fatalf("a staged metadata was written before a flush: %+v %v", m, err)
	}
	if _, err := l.Remove(removed.ID); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	order = nil
	mu.Unlock()
	// A bulk barrier, not an explicit flush, writes them.
	for i := 0; l.Unflushed() > 0 || i == 0; i++ {
		if _, err := l.Append(old.ID, Event{Kind: KindUser, Body: body(i), Label: strings.Repeat("x", 200)}); err != nil {
			t.Fatal(err)
		}
	}
	want := map[ID]string{old.ID: "old, staged", fresh.ID: "fresh, staged"}
	for id, title := range want {
		if m, err := l.readMetaFile(id); err != nil || m.Title != title {
			t.Fatalf("metadata of %s on disk after the barrier: %+v %v, want title %q", id, m, err, title)
		}
	}
	if _, err := l.readMetaFile(removed.ID); err == nil {
		t.Fatal("the barrier wrote the staged metadata of a removed session")
	}
	mu.Lock()
	defer mu.Unlock()
	if written[fresh.ID] != 1 || written[old.ID] != 1 {
		t.Fatalf("metadata files written: fresh %d, old %d times; want once each", written[fresh.ID], written[old.ID])
	}
	firstMeta, lastLog := slices.Index(order, "meta"), slices.Index(order, "log")
	for i, what := range order {
		if what == "log" {
			lastLog = i
		}
	}
	if lastLog < 0 || firstMeta < lastLog {
		t.Fatalf("the barrier synced logs and wrote metadata in the order %v: the logs come first", order)
	}
}

// TestOrphanLogsAreRemoved: a log without metadata (a bulk session a crash
// caught before its barrier) is removed by the next writer's open, with a
// notice; a reader leaves it alone, and a file that is not a session's log
// stays.
func TestOrphanLogsAreRemoved(t *testing.T) {
	fsys := vfs.NewMem()
	l := testLog(t, fsys, Options{})
	kept := mustCreate(t, l, "kept")
	l.SetBulk(true)
	orphan := mustCreate(t, l, "never flushed")
	if _, err := l.Append(orphan.ID, Event{Kind: KindUser, Body: body(1)}); err != nil {
		t.Fatal(err)
	}
	if err := fsys.WriteFileAtomic("/h/events/notes.log", []byte("not a session"), 0o600); err != nil {
		t.Fatal(err)
	}
	// What a crash leaves: the process dies before its barrier. A reader
	// opens first, then the next writer.
	if _, err := Open("/h/events", Options{FS: fsys}); err != nil {
		t.Fatal(err)
	}
	if !vfs.Exists(fsys, l.logPath(orphan.ID)) {
		t.Fatal("a reader removed an orphan log")
	}
	w, err := Open("/h/events", Options{FS: fsys, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	if vfs.Exists(fsys, l.logPath(orphan.ID)) {
		t.Fatal("the writer's open left the orphan log")
	}
	if !vfs.Exists(fsys, l.logPath(kept.ID)) || !vfs.Exists(fsys, "/h/events/notes.log") {
		t.Fatal("the writer's open removed a session's log, or a file not a log")
	}
	if len(w.Notices) != 1 || !strings.Contains(w.Notices[0], "removed 1 session log(s) without metadata that the last writer left when it stopped without closing the store (a crash, or rook killed, or interrupted (an import: a second time): sessions never created") {
		t.Fatalf("notices %q", w.Notices)
	}
}

// TestSourcePathNotUTF8RoundTrips: a path of bytes that are not UTF-8
// comes back from .meta as it was; a UTF-8 path is written as before, with
// no path_bytes.
func TestSourcePathNotUTF8RoundTrips(t *testing.T) {
	for _, path := range []string{"/src/caf\xe9.jsonl", "/src/café.jsonl"} {
		b, err := json.Marshal(Meta{Title: "t", Source: &Source{Format: "claude-code", Path: path, Size: 3}})
		if err != nil {
			t.Fatal(err)
		}
		if utf8.ValidString(path) == bytes.Contains(b, []byte(`"path_bytes"`)) {
			t.Errorf("%q: %s", path, b)
		}
		var m Meta
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if m.Source == nil || m.Source.Path != path || m.Source.Size != 3 || m.Source.Format != "claude-code" {
			t.Errorf("%q came back as %+v", path, m.Source)
		}
	}
	// Damaged path_bytes are passed over: the metadata still reads.
	for _, bad := range []string{`"!!not base64"`, `12`, `null`, `{"x":1}`} {
		var m Meta
		if err := json.Unmarshal([]byte(`{"v":1,"title":"t","source":{"format":"codex","path":"/src/caf\ufffd","size":3,"path_bytes":`+bad+`}}`), &m); err != nil {
			t.Fatalf("path_bytes %s: %v", bad, err)
		}
		if m.Source == nil || m.Source.Path != "/src/caf\uFFFD" || m.Source.Size != 3 {
			t.Errorf("path_bytes %s: %+v", bad, m.Source)
		}
	}
}

// TestRemoveADamagedSession: a session whose metadata does not read can be
// removed (rm is how one gets rid of it); one that is not there cannot.
func TestRemoveADamagedSession(t *testing.T) {
	fsys := vfs.NewMem()
	l := testLog(t, fsys, Options{})
	m := mustCreate(t, l, "to be damaged")
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := fsys.WriteFileAtomic(l.metaPath(m.ID), []byte("garbage{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := l.ReadMeta(m.ID); err == nil {
		t.Fatal("damaged metadata reads")
	}
	if _, err := l.Remove(m.ID); err != nil {
		t.Fatalf("remove a damaged session: %v", err)
	}
	if ids, err := l.IDs(); err != nil || len(ids) != 0 {
		t.Fatalf("left %v %v", ids, err)
	}
	if _, err := l.Remove(m.ID); err == nil {
		t.Fatal("removed a session that is not there")
	}
}

// TestChildren: a session's children are the sessions whose metadata
// names it as their parent (its forks, and their forks not), oldest first.
func TestChildren(t *testing.T) {
	l := testLog(t, nil, Options{})
	p, _ := l.Create(Meta{Title: "parent"})
	other, _ := l.Create(Meta{Title: "other"})
	l.Append(p.ID, Event{Kind: KindUser, Body: body(1)})
	a, err := l.Fork(p.ID, 1, Meta{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := l.Fork(p.ID, 0, Meta{})
	l.Fork(a.ID, 0, Meta{}) // a grandchild
	l.Fork(other.ID, 0, Meta{})
	kids, err := l.Children(p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(kids) != 2 || kids[0].ID != a.ID || kids[1].ID != b.ID {
		t.Fatalf("children %+v, want %s and %s", kids, a.ID, b.ID)
	}
}

// TestUpdateMetaOfAStagedSession: ReadMeta reads a staged metadata, so an
// UpdateMeta made from it (a tag added) carries what was staged, how much
// of its source a session holds: it is written only once the events
// appended before the staging are durable, and stays written (the staged
// one, older, does not come back with the next flush).
func TestUpdateMetaOfAStagedSession(t *testing.T) {
	fsys := vfs.NewMem()
	l := testLog(t, fsys, Options{})
	s := mustCreate(t, l, "s")
	var mu sync.Mutex
	var order []string // the logs synced and metadata written, in order
	fsys.SetHook(func(op vfs.Op, path string) error {
		mu.Lock()
		defer mu.Unlock()
		name := filepath.Base(path)
		if op == vfs.OpRename && strings.HasSuffix(name, ".meta") {
			order = append(order, "meta")
		}
		if op == vfs.OpSync && strings.HasSuffix(name, ".log") {
			order = append(order, "log")
		}
		return nil
	})
	l.SetBulk(true)
	if _, err := l.Append(s.ID, Event{Kind: KindUser, Body: body(1)}); err != nil {
		t.Fatal(err)
	}
	s.Title = "s, staged"
	if err := l.StageMeta(s); err != nil {
		t.Fatal(err)
	}
	m, err := l.ReadMeta(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	m.Tags = []string{"tagged"}
	if err := l.UpdateMeta(m); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if i := slices.Index(order, "meta"); i < 0 || !slices.Contains(order[:i], "log") {
		t.Errorf("UpdateMeta of a staged session synced logs and wrote metadata in the order %v: its events first", order)
	}
	mu.Unlock()
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, err := l.readMetaFile(s.ID); err != nil || got.Title != "s, staged" || !slices.Equal(got.Tags, []string{"tagged"}) {
		t.Fatalf("metadata on disk: %+v %v, want the update", got, err)
	}
}

// TestRecoveryMakesTheTailItKeepsDurable: a writer that dies after writing
// a barrier's records and before syncing them leaves them in the page
// cache, whole. The next writer's open keeps them, and may from then on
// write metadata that describes them (an import's, of how much of its
// source a session holds) or append after them: so it syncs them first,
// and a power cut after that open loses none of them.
func TestRecoveryMakesTheTailItKeepsDurable(t *testing.T) {
	fsys := vfs.NewMem()
	l := testLog(t, fsys, Options{})
	s := mustCreate(t, l, "s")
	if _, err := l.Append(s.ID, Event{Kind: KindUser, Body: body(1)}); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	// The next barrier writes its records; the process dies at the sync.
	fsys.SetHook(func(op vfs.Op, path string) error {
		if op == vfs.OpSync && strings.HasSuffix(path, ".log") {
			return vfs.ErrInjected
		}
		return nil
	})
	if _, err := l.Append(s.ID, Event{Kind: KindAssistant, Body: body(2)}); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err == nil {
		t.Fatal("the barrier succeeded without its sync")
	}
	fsys.SetHook(nil)
	w, err := Open("/h/events", Options{FS: fsys, Writable: true, Clock: l.opts.Clock})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if evs, err := w.Read(s.ID, 0, 10); err != nil || len(evs) != 2 {
		t.Fatalf("after the writer died, the next one reads %d events (%v), want the 2 written whole", len(evs), err)
	}
	r, err := Open("/h/events", Options{FS: fsys.CrashClone()})
	if err != nil {
		t.Fatal(err)
	}
	if evs, err := r.Read(s.ID, 0, 10); err != nil || len(evs) != 2 {
		t.Fatalf("a power cut after the next writer's open leaves %d events (%v), want the 2 it kept", len(evs), err)
	}
}

// TestAppendAfterDamagedTailIsRefused: a log that a clean writer left ends
// in bytes that are not records (cut mid-record by hand, a disk fault).
// An event appended after them would never read back, so its seq must not
// be acknowledged: the append is refused, and the events before still
// read.
func TestAppendAfterDamagedTailIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		cut  func(size, lastLen int64) int64
	}{
		{"mid record", func(size, lastLen int64) int64 { return size - lastLen/2 }},
		{"header and garbage", func(int64, int64) int64 { return logHeaderSize + 3 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys, l, s := closedLog(t, 3)
			f, err := fsys.OpenFile(l.logPath(s.ID), os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			st, _ := f.Stat()
			r, _ := newReader(f, s.ID)
			off, _, _ := r.find(2)
			if err := f.Truncate(tc.cut(st.Size(), st.Size()-off)); err != nil {
				t.Fatal(err)
			}
			f.Close()
			w := testLog(t, fsys, Options{})
			seq, err := w.Append(s.ID, Event{Kind: KindUser, Body: body(9)})
			if err == nil {
				err = w.Flush()
			}
			if err == nil {
				evs, _ := w.Read(s.ID, seq, 1)
				t.Fatalf("append after a damaged tail acknowledged seq %d; it reads back as %d event(s)", seq, len(evs))
			}
			if !strings.Contains(err.Error(), "appends refused") {
				t.Fatalf("error does not say appends are refused: %v", err)
			}
		})
	}
}

// closedLog is a store holding one session of n events, its writer
// closed (no dirty marker).
func closedLog(t *testing.T, n int) (*vfs.MemFS, *Log, Meta) {
	t.Helper()
	fsys := vfs.NewMem()
	l := testLog(t, fsys, Options{})
	s := mustCreate(t, l, "s")
	for i := 0; i < n; i++ {
		if _, err := l.Append(s.ID, Event{Kind: KindUser, Body: body(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return fsys, l, s
}

// logDamagedAt is closedLog's store with the record of event at damaged
// (its first bytes).
func logDamagedAt(t *testing.T, n, at int) (*vfs.MemFS, Meta) {
	t.Helper()
	fsys, l, s := closedLog(t, n)
	b := logBytes(t, fsys, l, s.ID)
	f, _ := fsys.OpenFile(l.logPath(s.ID), os.O_RDONLY, 0)
	r, _ := newReader(f, s.ID)
	off, _, err := r.find(uint64(at))
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	copy(b[off:], []byte{0xff, 0xff, 0xff, 0xff})
	if err := fsys.WriteFileAtomic(l.logPath(s.ID), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return fsys, s
}

// logBytes is the log of id as it is on disk.
func logBytes(t *testing.T, fsys vfs.FS, l *Log, id ID) []byte {
	t.Helper()
	b, err := vfs.ReadFile(fsys, l.logPath(id))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReadReportsDamageWhenNoWriterCanHaveTornTheLog: with no writer
// running or crashed (no dirty marker), a record that does not check out
// is damage wherever it is, not a torn tail: reading across it, or from
// past it, is an error rather than a silently shorter (or empty) page.
func TestReadReportsDamageWhenNoWriterCanHaveTornTheLog(t *testing.T) {
	fsys, s := logDamagedAt(t, 200, 100)
	ro, err := Open("/h/events", Options{FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	if evs, err := ro.Read(s.ID, 0, 150); err == nil {
		t.Fatalf("read across the damage: %d events, no error", len(evs))
	}
	if evs, err := ro.Read(s.ID, 101, 10); err == nil {
		t.Fatalf("read from past the damage: %d events, no error", len(evs))
	}
	if evs, err := ro.Read(s.ID, 0, 100); err != nil || len(evs) != 100 {
		t.Fatalf("the events before the damage: %d, %v", len(evs), err)
	}
	if evs, err := ro.Read(s.ID, 250, 10); err != nil || len(evs) != 0 {
		t.Fatalf("read past the end: %d events, %v", len(evs), err)
	}
	// A writer that did not close may have torn the tail: that reads as
	// the events before it, for the next writer to cut.
	if err := fsys.WriteFileAtomic("/h/events/"+dirtyMarker, []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if evs, err := ro.Read(s.ID, 0, 150); err != nil || len(evs) != 100 {
		t.Fatalf("with a writer's marker, a break near the end is a torn tail: %d events, %v", len(evs), err)
	}
}

// TestSummaryReportsALogCutShortWhenNoWriterCanHaveTornIt: a log whose
// last record a disk or a restore cut short, with no writer running or
// crashed (no dirty marker), is damaged where Read says it is. Summary
// (`rook session ls`, doctor) read past the cut bytes and gave the session
// whole up to its last whole record, with no error, while Read (`session
// show`, verify) called it damaged. With a writer's marker the cut is a
// torn tail, and both end the session before it.
func TestSummaryReportsALogCutShortWhenNoWriterCanHaveTornIt(t *testing.T) {
	for _, n := range []int{4, 1} {
		fsys, l, s := closedLog(t, n)
		b := logBytes(t, fsys, l, s.ID)
		if err := fsys.WriteFileAtomic(l.logPath(s.ID), b[:len(b)-3], 0o600); err != nil {
			t.Fatal(err)
		}
		ro, err := Open("/h/events", Options{FS: fsys})
		if err != nil {
			t.Fatal(err)
		}
		_, rerr := ro.Read(s.ID, 0, 100)
		if at, ok := DamagedAt(rerr); !ok || at != uint64(n-1) {
			t.Fatalf("%d events: Read of the cut log: %v, want damage at event %d", n, rerr, n-1)
		}
		sum, err := ro.Summary(s.ID)
		if at, ok := DamagedAt(err); !ok || at != uint64(n-1) {
			t.Fatalf("%d events: Summary of the cut log: %d events, %v; want damage at event %d, as Read says", n, sum.Events, err, n-1)
		}
		for _, want := range []string{s.ID.String(), "truncated", "rook session"} {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("%d events: Summary's error %q does not say %q", n, err, want)
			}
		}
		if out, err := ro.Sessions(); err == nil || len(out) != 0 {
			t.Fatalf("%d events: Sessions lists %d session(s), error %v; want the cut one left out, with its error", n, len(out), err)
		}
		// A writer that did not close may have torn the tail.
		if err := fsys.WriteFileAtomic("/h/events/"+dirtyMarker, []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		evs, rerr := ro.Read(s.ID, 0, 100)
		sum, err = ro.Summary(s.ID)
		if rerr != nil || err != nil || sum.Events != uint64(len(evs)) || len(evs) != n-1 {
			t.Fatalf("%d events, with a writer's marker: Summary %d events (%v), Read %d (%v); want %d, no error", n, sum.Events, err, len(evs), rerr, n-1)
		}
	}
}

// TestMetaOfAnotherSessionIsDamage: a metadata file is its session's only
// when it names it. One naming another (copied under the wrong name) read
// as that session, its summary another log's; one with no id read as
// session 000..., whose log does not exist. Both are damage, reported with
// the file and what to do.
func TestMetaOfAnotherSessionIsDamage(t *testing.T) {
	fsys := vfs.NewMem()
	l := testLog(t, fsys, Options{})
	a := mustCreate(t, l, "a")
	b := mustCreate(t, l, "b")
	if _, err := l.Append(a.ID, Event{Kind: KindUser, Body: body(1)}); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	aMeta, err := vfs.ReadFile(fsys, l.metaPath(a.ID))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]byte{aMeta, []byte(`{"v":1,"title":"b"}`), []byte("garbage{")} {
		if err := fsys.WriteFileAtomic(l.metaPath(b.ID), bad, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := l.Summary(b.ID)
		if err == nil {
			t.Fatalf("metadata %s reads as session %s with %d events", bad, s.ID, s.Events)
		}
		for _, want := range []string{l.metaPath(b.ID), "rook session rm " + b.ID.String()} {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("error %q does not say %q", err, want)
			}
		}
	}
	if _, err := l.Remove(b.ID); err != nil {
		t.Fatalf("rm of the damaged session: %v", err)
	}
}

// TestTokenTotalsDoNotWrap: tokens that would take a session's totals past
// 2^64 are refused, not summed into a small number.
func TestTokenTotalsDoNotWrap(t *testing.T) {
	l := testLog(t, nil, Options{})
	s := mustCreate(t, l, "s")
	if _, err := l.Append(s.ID, Event{Kind: KindUser, Body: body(1), TokensIn: math.MaxUint64}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(s.ID, Event{Kind: KindUser, Body: body(2), TokensIn: 5}); err == nil {
		sum, _ := l.Summary(s.ID)
		t.Fatalf("totals wrapped: %d tokens in", sum.TokensIn)
	}
	if _, err := l.Append(s.ID, Event{Kind: KindUser, Body: body(3), TokensOut: 1}, Event{Kind: KindUser, Body: body(4), TokensOut: math.MaxUint64}); err == nil {
		t.Fatal("a group whose tokens overflow was appended")
	}
	if sum, err := l.Summary(s.ID); err != nil || sum.Events != 1 || sum.TokensIn != math.MaxUint64 || sum.TokensOut != 0 {
		t.Fatalf("after refused appends: %+v %v", sum, err)
	}
}

// statGrown is a file system on which the log at path has grown since it
// was opened: a writer finished the record a read caught half written.
type statGrown struct {
	vfs.FS
	path string
}

type grownInfo struct{ fs.FileInfo }

func (g grownInfo) Size() int64 { return g.FileInfo.Size() + 1 }

func (s statGrown) Stat(name string) (fs.FileInfo, error) {
	fi, err := s.FS.Stat(name)
	if err == nil && name == s.path {
		fi = grownInfo{fi}
	}
	return fi, err
}

// A read that finds a record half written at the end, with no dirty
// marker, is not damage when the log's size moved meanwhile: a writer
// marked, wrote and closed while the read ran (it reads the events before,
// as with the marker). With the size as it was, it is damage.
func TestReadOfARecordAWriterWasWriting(t *testing.T) {
	fsys, l, s := closedLog(t, 5)
	f, err := fsys.OpenFile(l.logPath(s.ID), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := newReader(f, s.ID)
	off, _, _ := r.find(4)
	b, _ := r.chunk(0, int(r.size))
	f.Close()
	// Half of a sixth record: the last one's first half again.
	half := b[off : off+(int64(len(b))-off)/2]
	if err := fsys.WriteFileAtomic(l.logPath(s.ID), append(b, half...), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		fsys   vfs.FS
		damage bool
	}{{fsys, true}, {statGrown{fsys, l.logPath(s.ID)}, false}} {
		ro, err := Open("/h/events", Options{FS: tc.fsys})
		if err != nil {
			t.Fatal(err)
		}
		evs, err := ro.Read(s.ID, 0, 10)
		if tc.damage != (err != nil) || (err == nil && len(evs) != 5) {
			t.Fatalf("size moved %v: %d events, %v", !tc.damage, len(evs), err)
		}
	}
}

// A short log (under a bisection's window) damaged in its middle, with
// whole records after the damage: its summary and an append say it is
// damaged, not that it has no event it plainly goes on to.
func TestShortLogDamagedInTheMiddleSaysSo(t *testing.T) {
	fsys, s := logDamagedAt(t, 100, 5)
	w := testLog(t, fsys, Options{})
	if _, err := w.Summary(s.ID); err == nil || !errors.Is(err, ErrBadRecord) || strings.Contains(err.Error(), "has no event") {
		t.Fatalf("summary: %v", err)
	}
	if _, err := w.Append(s.ID, Event{Kind: KindUser, Body: body(9)}); err == nil || !errors.Is(err, ErrBadRecord) || strings.Contains(err.Error(), "has no event") {
		t.Fatalf("append: %v", err)
	}
}

// A read across damage gives the events before it with the error (a
// listing shows them, then says where the damage is), and a summary whose
// totals cannot be counted says at which event the damage is, before the
// newest totals record (a short log: no bisection past it) or after it.
func TestDamageIsSaidAtItsEventWithTheEventsBeforeIt(t *testing.T) {
	for _, tc := range []struct{ n, at int }{{100, 5}, {100, 70}} {
		fsys, s := logDamagedAt(t, tc.n, tc.at)
		ro, err := Open("/h/events", Options{FS: fsys})
		if err != nil {
			t.Fatal(err)
		}
		evs, err := ro.Read(s.ID, 0, tc.n)
		if !errors.Is(err, ErrBadRecord) || len(evs) != tc.at || evs[len(evs)-1].Seq != uint64(tc.at-1) {
			t.Fatalf("damage at %d: read across it: %d events, %v", tc.at, len(evs), err)
		}
		evs, err = ro.ReadBefore(s.ID, uint64(tc.at+2), 4)
		if !errors.Is(err, ErrBadRecord) || len(evs) != 2 || evs[0].Seq != uint64(tc.at-2) {
			t.Fatalf("damage at %d: the page before it: %d events, %v", tc.at, len(evs), err)
		}
		_, err = ro.Summary(s.ID)
		var d *DamagedTotalsError
		if !errors.As(err, &d) || !errors.Is(err, ErrBadRecord) || d.At != uint64(tc.at) || d.Last != uint64(tc.n-1) {
			t.Fatalf("damage at %d: summary: %#v", tc.at, err)
		}
		if want := fmt.Sprintf("--at %d` keeps", tc.at); !strings.Contains(err.Error(), want) {
			t.Fatalf("damage at %d: summary: %v, not naming %q", tc.at, err, want)
		}
		ro.Close()
	}
}

// removedMeanwhile is a file system on which another process's `session
// rm` removes a session (metadata, then log) at a moment of a read: right
// after the events directory is listed, or as the session's log is opened.
type removedMeanwhile struct {
	vfs.FS
	afterList, beforeOpen func()
	log                   string
}

func (s removedMeanwhile) ReadDir(dir string) ([]fs.DirEntry, error) {
	ents, err := s.FS.ReadDir(dir)
	if s.afterList != nil {
		s.afterList()
	}
	return ents, err
}

func (s removedMeanwhile) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	if name == s.log && s.beforeOpen != nil {
		s.beforeOpen()
	}
	return s.FS.OpenFile(name, flag, perm)
}

// A session removed by another process while Sessions lists the others
// is not there any more: not one that does not read.
func TestSessionsPassesOverASessionRemovedMeanwhile(t *testing.T) {
	fsys := vfs.NewMem()
	l := testLog(t, fsys, Options{})
	a := mustCreate(t, l, "a")
	if _, err := l.Append(a.ID, Event{Kind: KindUser, Body: body(1)}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, when := range []string{"after the listing", "as its log is opened"} {
		w := testLog(t, fsys, Options{})
		b := mustCreate(t, w, "b")
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		rm := func() {
			fsys.Remove(l.metaPath(b.ID))
			fsys.Remove(l.logPath(b.ID))
		}
		rfs := removedMeanwhile{FS: fsys, log: l.logPath(b.ID)}
		if when == "after the listing" {
			rfs.afterList = rm
		} else {
			rfs.beforeOpen = rm
		}
		ro, err := Open("/h/events", Options{FS: rfs})
		if err != nil {
			t.Fatal(err)
		}
		ss, err := ro.Sessions()
		if err != nil || len(ss) != 1 || ss[0].ID != a.ID {
			t.Fatalf("removed %s: %d session(s), %v", when, len(ss), err)
		}
	}
}

// crashedAfterAppend is closedLog's store (n events, acknowledged) after
// a writer appended one more event, flushed, and died without closing: its
// dirty marker is left.
func crashedAfterAppend(t *testing.T, n int) (*vfs.MemFS, *Log, Meta) {
	t.Helper()
	fsys, l, s := closedLog(t, n)
	w, err := Open("/h/events", Options{FS: fsys, Writable: true, Clock: l.opts.Clock})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(s.ID, Event{Kind: KindUser, Body: body(n)}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return fsys, l, s // w not closed: it crashed
}

// A short log lies all within tailWindow. Damage to an event acknowledged
// before the crashed writer's barrier is not what the crash tore: the next
// writer's open must not cut it (with every event after it) as a torn
// tail, but report it and refuse appends, leaving the log as it is.
func TestRecoveryDoesNotCutAcknowledgedEvents(t *testing.T) {
	for _, torn := range []bool{false, true} {
		t.Run(fmt.Sprintf("torn tail %v", torn), func(t *testing.T) {
			fsys, l, s := crashedAfterAppend(t, 100)
			b := logBytes(t, fsys, l, s.ID)
			f, _ := fsys.OpenFile(l.logPath(s.ID), os.O_RDONLY, 0)
			r, _ := newReader(f, s.ID)
			off, _, err := r.find(5)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			b[off+6] ^= 0xff // a byte of event 5's record
			if torn {
				b = append(b, 0x13, 0x37) // and half a record the crash tore
			}
			if err := fsys.WriteFileAtomic(l.logPath(s.ID), b, 0o600); err != nil {
				t.Fatal(err)
			}
			w, err := Open("/h/events", Options{FS: fsys, Writable: true, Clock: l.opts.Clock, TornDir: "/h/torn"})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			if after := logBytes(t, fsys, l, s.ID); len(after) != len(b) {
				t.Fatalf("recovery cut the log from %d to %d bytes (notices %q)", len(b), len(after), w.Notices)
			}
			if len(w.Notices) != 1 || !strings.Contains(w.Notices[0], "damaged") {
				t.Fatalf("notices %q do not report the damage", w.Notices)
			}
			_, err = w.Append(s.ID, Event{Kind: KindUser, Body: body(999)})
			for _, want := range []string{"appends refused", "rook store verify", "rook session fork " + s.ID.String() + " --at 5"} {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("append: %v; want an error saying %q", err, want)
				}
			}
			if evs, err := w.Read(s.ID, 0, 5); err != nil || len(evs) != 5 {
				t.Fatalf("the events before the damage: %d, %v", len(evs), err)
			}
		})
	}
}

// Damage deep in a long log (beyond what a bisection or the token totals
// read near the end) must refuse appends, as damage near the end does: an
// event appended after it was acknowledged, yet a reader of the session
// from its start stopped at the damage and never reached it.
func TestAppendAfterDamageDeepInALongLogIsRefused(t *testing.T) {
	fsys, s := logDamagedAt(t, 3000, 100)
	w := testLog(t, fsys, Options{})
	seq, err := w.Append(s.ID, Event{Kind: KindUser, Body: body(9)})
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		evs, rerr := w.Read(s.ID, 0, 5000)
		t.Fatalf("append after damage at event 100 acknowledged seq %d; a read from the start gives %d events (%v)", seq, len(evs), rerr)
	}
	for _, want := range []string{"appends refused", "rook store verify", "rook session fork " + s.ID.String() + " --at 100"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("append: %v; want an error saying %q", err, want)
		}
	}
	if evs, err := w.Read(s.ID, 0, 100); err != nil || len(evs) != 100 {
		t.Fatalf("the events before the damage: %d, %v", len(evs), err)
	}
}

// TestForkPastDamageIsRefused: a long log damaged in its middle (a disk
// fault) forked at a point past the damage. The fork would copy the
// damaged bytes byte for byte into a new session that never reads whole
// (Fork's log is never cut: "a break in it is damage"): Fork must refuse,
// naming where the damage is, as an append to the parent does. It made
// the fork instead, a new session born damaged.
func TestForkPastDamageIsRefused(t *testing.T) {
	const n, at = 2000, 600
	fsys, s := logDamagedAt(t, n, at)
	w := testLog(t, fsys, Options{})
	f, err := w.Fork(s.ID, n, Meta{Title: "past the damage"})
	if err == nil {
		_, rerr := w.Read(f.ID, 0, n)
		t.Fatalf("fork at %d of a session damaged at event %d made session %s (its read: %v)", n, at, f.ID, rerr)
	}
	if want := fmt.Sprintf("--at %d`", at); !strings.Contains(err.Error(), want) {
		t.Errorf("the refusal does not say where the damage is (%s): %v", want, err)
	}
	if ids, err := w.IDs(); err != nil || len(ids) != 1 {
		t.Errorf("after the refusal, %d sessions (%v): want the parent alone", len(ids), err)
	}
	// Before the damage, the fork is made.
	if _, err := w.Fork(s.ID, at, Meta{Title: "before the damage"}); err != nil {
		t.Errorf("fork at the damage: %v", err)
	}
}

// A writer left its dirty marker (it crashed, appending to one session),
// and another session's log is damaged in its middle, within 512 KiB of
// its end. The next writer's open repairs the tails that writer touched;
// it then holds the writer lock, so no log can be torn under it: a read of
// the damaged session (gc's mark, verify, show) reports the damage rather
// than giving the events before it as the whole session (gc would then
// sweep the bodies of the events after it).
func TestWriterReadsReportDamageDespiteAnOldMarker(t *testing.T) {
	fsys, s := logDamagedAt(t, 100, 50)
	l := testLog(t, fsys, Options{})
	other := mustCreate(t, l, "other")
	if _, err := l.Append(other.ID, Event{Kind: KindUser, Body: body(1)}); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	// l crashed: its marker stays. The next writer:
	w, err := Open("/h/events", Options{FS: fsys, Writable: true, Clock: l.opts.Clock})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if evs, err := w.Read(s.ID, 0, 1000); err == nil {
		t.Fatalf("read of a log damaged at event 50: %d events, no error", len(evs))
	}
	if evs, err := w.Read(s.ID, 0, 50); err != nil || len(evs) != 50 {
		t.Fatalf("the events before the damage: %d, %v", len(evs), err)
	}
	if evs, err := w.Read(other.ID, 0, 10); err != nil || len(evs) != 1 {
		t.Fatalf("the other session: %d, %v", len(evs), err)
	}
}

// A log found shorter than the size it had durably when the crashed
// writer first appended to it lost acknowledged events (no crash takes
// back what was synced): the next writer's open reports it and refuses
// appends, rather than keep the shorter log as whole and number new
// events over the lost ones.
func TestRecoveryReportsALogShorterThanItWasDurably(t *testing.T) {
	fsys, l, s := crashedAfterAppend(t, 100)
	f, _ := fsys.OpenFile(l.logPath(s.ID), os.O_RDWR, 0)
	r, _ := newReader(f, s.ID)
	off, rec, err := r.find(49)
	if err == nil {
		err = f.Truncate(off + int64(rec.n)) // whole records, events 0 to 49
	}
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	w, err := Open("/h/events", Options{FS: fsys, Writable: true, Clock: l.opts.Clock})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if len(w.Notices) != 1 || !strings.Contains(w.Notices[0], "short of what was durable") {
		t.Fatalf("notices %q do not report the loss", w.Notices)
	}
	if seq, err := w.Append(s.ID, Event{Kind: KindUser, Body: body(999)}); err == nil || !strings.Contains(err.Error(), "appends refused") {
		t.Fatalf("append: seq %d, %v", seq, err)
	}
}

// A long-lived writer (an MCP server) appended to one session, then, after
// that first barrier, to another it had not touched, and crashed. Damage
// to an event acknowledged in that other session before the crash, near
// its log's end, is damage: the next open must report it, not cut it with
// every event after it as an unacknowledged tail. The marker names the
// session with its durable size before the barrier writes to it.
func TestRecoveryDoesNotCutEventsOfASessionTouchedAfterTheFirstBarrier(t *testing.T) {
	fsys, l, s := closedLog(t, 100)
	w, err := Open("/h/events", Options{FS: fsys, Writable: true, Clock: l.opts.Clock})
	if err != nil {
		t.Fatal(err)
	}
	first := mustCreate(t, w, "first")
	for _, id := range []ID{first.ID, s.ID} {
		if _, err := w.Append(id, Event{Kind: KindUser, Body: body(1)}); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	// w crashed. Event 5 of s, durable long before, is damaged.
	b := logBytes(t, fsys, l, s.ID)
	f, _ := fsys.OpenFile(l.logPath(s.ID), os.O_RDONLY, 0)
	r, _ := newReader(f, s.ID)
	off, _, err := r.find(5)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	b[off+6] ^= 0xff
	if err := fsys.WriteFileAtomic(l.logPath(s.ID), b, 0o600); err != nil {
		t.Fatal(err)
	}
	next, err := Open("/h/events", Options{FS: fsys, Writable: true, Clock: l.opts.Clock, TornDir: "/h/torn"})
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	if after := logBytes(t, fsys, l, s.ID); len(after) != len(b) {
		t.Fatalf("recovery cut the log from %d to %d bytes (notices %q)", len(b), len(after), next.Notices)
	}
	if len(next.Notices) != 1 || !strings.Contains(next.Notices[0], "damaged") {
		t.Fatalf("notices %q do not report the damage", next.Notices)
	}
	if _, err := next.Append(s.ID, Event{Kind: KindUser, Body: body(999)}); err == nil || !strings.Contains(err.Error(), "--at 5") {
		t.Fatalf("append after the damage: %v", err)
	}
}

// Lines are appended to the dirty marker (mark): one a crash tore or
// garbled before its fsync gives no size. A digit turned into a larger
// one would make recovery report a whole log as shorter than it was
// durably.
func TestMarkerLinesACrashDamagedGiveNoSize(t *testing.T) {
	fsys := vfs.NewMem()
	a, b := ID{1}, ID{2}
	good := markerLine(a, 4711)
	bad := strings.Replace(markerLine(b, 1234), " 1234 ", " 9234 ", 1)
	torn := markerLine(b, 1234)[:30]
	for _, tc := range []struct {
		name, data string
		want       map[ID]int64
	}{
		{"whole", "t\n" + good, map[ID]int64{a: 4711}},
		{"garbled", "t\n" + good + bad, map[ID]int64{a: 4711}},
		{"torn", "t\n" + good + torn, map[ID]int64{a: 4711}},
		{"older rook", "t\n" + a.String() + " 4711\n", map[ID]int64{}},
	} {
		if err := fsys.WriteFileAtomic("/m", []byte(tc.data), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := markedSizes(fsys, "/m"); !maps.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// markerLooks counts the stats and opens of the dirty marker.
type markerLooks struct {
	vfs.FS
	n *int
}

func (m markerLooks) Stat(name string) (fs.FileInfo, error) {
	if filepath.Base(name) == dirtyMarker {
		*m.n++
	}
	return m.FS.Stat(name)
}

func (m markerLooks) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	if filepath.Base(name) == dirtyMarker {
		*m.n++
	}
	return m.FS.OpenFile(name, flag, perm)
}

// A reader needs the dirty marker only to tell a tear from damage at a
// break: a read that meets none (nearly all) does not look at it, which
// with a writer running saved a stat, an open, a read and a close of the
// marker per page (a fifth of a small page's system calls). One that
// meets a break still tells them apart (TestReadReportsDamage...).
func TestReadsWithoutABreakDoNotLookAtTheMarker(t *testing.T) {
	fsys, l, s := closedLog(t, 50)
	w := testLog(t, fsys, Options{})
	if _, err := w.Append(s.ID, Event{Kind: KindUser, Body: body(50)}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil { // a writer running: its marker is there
		t.Fatal(err)
	}
	looks := 0
	ro, err := Open("/h/events", Options{FS: markerLooks{fsys, &looks}, Clock: l.opts.Clock})
	if err != nil {
		t.Fatal(err)
	}
	for _, from := range []uint64{0, 20, 45, 51, 90} {
		if _, err := ro.Read(s.ID, from, 10); err != nil {
			t.Fatal(err)
		}
	}
	if looks != 0 {
		t.Fatalf("5 reads without a break looked at the marker %d times", looks)
	}
}

// A summary reads a short log whole and a long one's tail at once: on
// either side of wholeLog, and across a totals record, its counts are
// those of the events themselves.
func TestSummaryOnEitherSideOfWholeLog(t *testing.T) {
	fsys := vfs.NewMem()
	l := testLog(t, fsys, Options{})
	label := strings.Repeat("l", 100)
	want := map[ID][3]uint64{}
	for _, n := range []int{0, 1, 63, 64, 65, 440, 470, 500, 1500} {
		m := mustCreate(t, l, "s")
		var in, out uint64
		for i := 0; i < n; i++ {
			ev := Event{Kind: KindUser, Body: body(i), Label: label, TokensIn: uint64(i*7 + 1), TokensOut: uint64(i % 5)}
			if _, err := l.Append(m.ID, ev); err != nil {
				t.Fatal(err)
			}
			in, out = in+ev.TokensIn, out+ev.TokensOut
		}
		want[m.ID] = [3]uint64{uint64(n), in, out}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := Open("/h/events", Options{FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	long := false
	for id, w := range want {
		fi, err := fsys.Stat(ro.logPath(id))
		if err != nil {
			t.Fatal(err)
		}
		long = long || fi.Size() > wholeLog
		s, err := ro.Summary(id)
		if err != nil || [3]uint64{s.Events, s.TokensIn, s.TokensOut} != w {
			t.Fatalf("log of %d bytes: %d events, %d/%d tokens (%v), want %v", fi.Size(), s.Events, s.TokensIn, s.TokensOut, err, w)
		}
	}
	if !long {
		t.Fatal("no log longer than wholeLog")
	}
}

// Compare orders ids as their text does, which is the order listings and
// `last` go by: on ids that differ in any byte, at either end of its
// values.
func TestIDCompareOrdersAsTheText(t *testing.T) {
	var ids []ID
	for i := range 16 {
		for _, v := range []byte{0, 1, 0x1f, 0x20, 0x7f, 0x80, 0xfe, 0xff} {
			var id ID
			id[i] = v
			ids = append(ids, id)
			id[15-i] ^= 0xa5
			ids = append(ids, id)
		}
	}
	sign := func(n int) int { return min(max(n, -1), 1) }
	for _, a := range ids {
		for _, b := range ids {
			if got, want := a.Compare(b), sign(strings.Compare(a.String(), b.String())); got != want {
				t.Fatalf("%s.Compare(%s) = %d, the text says %d", a, b, got, want)
			}
		}
	}
}

// Damage at a session's first event: the hint said `rook session fork
// <id> --at 0`, which makes an empty session. Appends and reads say
// instead that nothing before it reads, and how to remove the session
// (or import its transcript again); and the removal it names works.
func TestDamageAtTheFirstEventHint(t *testing.T) {
	fsys, s := logDamagedAt(t, 10, 0)
	w := testLog(t, fsys, Options{})
	_, aerr := w.Append(s.ID, Event{Kind: KindUser, Body: body(9)})
	_, rerr := w.Read(s.ID, 0, 10)
	for what, err := range map[string]error{"append": aerr, "read": rerr} {
		if err == nil {
			t.Fatalf("%s of a log damaged at its first event: no error", what)
		}
		if strings.Contains(err.Error(), "--at 0") {
			t.Errorf("%s: %v; suggests a fork that keeps nothing", what, err)
		}
		for _, want := range []string{"no event before the damage reads", "rook session rm " + s.ID.String(), "importing that file again"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v; want it to say %q", what, err, want)
			}
		}
	}
	if !strings.Contains(aerr.Error(), "appends refused") || !strings.Contains(aerr.Error(), "rook store verify") {
		t.Errorf("append: %v; want it to say appends are refused and how to list the damage", aerr)
	}
	if _, err := w.Remove(s.ID); err != nil {
		t.Fatalf("remove, as the hint says: %v", err)
	}
	if _, err := w.ReadMeta(s.ID); err == nil {
		t.Fatal("the session is still there after its removal")
	}
}

// openCounting counts the session logs opened through it.
type openCounting struct {
	vfs.FS
	logs map[string]int
}

func (s openCounting) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	if strings.HasSuffix(name, ".log") {
		s.logs[filepath.Base(name)]++
	}
	return s.FS.OpenFile(name, flag, perm)
}

// SessionsWhere reads every session's metadata but only the logs of those
// it keeps: a log that does not read among the others is not its error,
// metadata that does not read is, whatever keep would say.
func TestSessionsWhereReadsKeptLogsOnly(t *testing.T) {
	fsys := vfs.NewMem()
	l := testLog(t, fsys, Options{})
	var ms []Meta
	for _, ws := range []string{"/a", "/b", "/b", "/a"} {
		m, err := l.Create(Meta{Title: ws, Workspace: ws})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(m.ID, Event{Kind: KindUser, Body: body(1)}); err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// ms[1]'s log gone, ms[2]'s metadata garbage.
	if err := fsys.Remove(l.logPath(ms[1].ID)); err != nil {
		t.Fatal(err)
	}
	if err := fsys.WriteFileAtomic(l.metaPath(ms[2].ID), []byte("not json\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfs := openCounting{FS: fsys, logs: map[string]int{}}
	ro, err := Open("/h/events", Options{FS: cfs})
	if err != nil {
		t.Fatal(err)
	}
	ss, passed, err := ro.SessionsWhere(func(m Meta) bool { return m.Workspace == "/a" })
	var u *UnreadableError
	if !errors.As(err, &u) || len(u.IDs) != 1 || u.IDs[0] != ms[2].ID {
		t.Fatalf("error %v, want ms[2]'s metadata alone", err)
	}
	if len(ss) != 2 || ss[0].ID != ms[0].ID || ss[1].ID != ms[3].ID || passed != 1 {
		t.Fatalf("%d sessions, %d passed, want ms[0], ms[3] and 1", len(ss), passed)
	}
	want := map[string]int{filepath.Base(l.logPath(ms[0].ID)): 1, filepath.Base(l.logPath(ms[3].ID)): 1}
	if !maps.Equal(cfs.logs, want) {
		t.Fatalf("logs opened %v, want %v", cfs.logs, want)
	}
	// Sessions (keep nil) reads them all and names the log gone too.
	if _, err := ro.Sessions(); !errors.As(err, &u) || len(u.IDs) != 2 {
		t.Fatalf("Sessions: %v, want 2 sessions that do not read", err)
	}
}
