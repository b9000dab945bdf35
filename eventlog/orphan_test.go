package eventlog

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// orphanStore is the set-up of the recovery tests: event logs on a MemFS
// with a writer (l) and a session (s) holding one event, its log (log)
// and its metadata (meta); a parent session, when forks are made from it.
type orphanStore struct {
	t         *testing.T
	fsys      *vfs.MemFS
	l         *Log
	s         Meta
	log, meta string
}

// newOrphanStore makes it, l in bulk mode if bulk (the session then
// created in bulk, its metadata written at the next flush).
func newOrphanStore(t *testing.T, title string, bulk bool) *orphanStore {
	t.Helper()
	fsys := vfs.NewMem()
	l := testLog(t, fsys, Options{})
	l.SetBulk(bulk)
	s := mustCreate(t, l, title)
	if _, err := l.Append(s.ID, Event{Kind: KindUser, Body: body(0)}); err != nil {
		t.Fatal(err)
	}
	return &orphanStore{t: t, fsys: fsys, l: l, s: s, log: l.logPath(s.ID), meta: l.metaPath(s.ID)}
}

// failing runs do with the operations fail is true of failing
// (vfs.ErrInjected), and wants do to fail.
func (o *orphanStore) failing(what string, fail func(op vfs.Op, path string) bool, do func() error) {
	o.t.Helper()
	o.fsys.SetHook(func(op vfs.Op, path string) error {
		if fail(op, path) {
			return vfs.ErrInjected
		}
		return nil
	})
	err := do()
	o.fsys.SetHook(nil)
	if err == nil {
		o.t.Fatalf("%s succeeded", what)
	}
}

// must fails the test on err.
func (o *orphanStore) must(err error) {
	o.t.Helper()
	if err != nil {
		o.t.Fatal(err)
	}
}

// loseMeta removes a session's .meta, as a hand or a disk fault does.
func (o *orphanStore) loseMeta(id ID) {
	o.t.Helper()
	o.must(o.fsys.Remove(o.l.metaPath(id)))
}

// recover opens the next writer, whose open runs the recovery, and closes
// it; it returns whether the log at path is still there, and the notices
// of the open.
func (o *orphanStore) recover(path string) (kept bool, notices []string) {
	o.t.Helper()
	w, err := Open("/h/events", Options{FS: o.fsys, Writable: true})
	o.must(err)
	kept = vfs.Exists(o.fsys, path)
	o.must(w.Close())
	return kept, w.Notices
}

// TestLostMetaLogIsKept: a session whose .meta is lost some other way than
// a crash of the writer (deleted by hand, a disk fault) still holds
// acknowledged events in its log. The recovery after a later writer's
// crash keeps that log where it is, and says so in a notice naming it.
func TestLostMetaLogIsKept(t *testing.T) {
	o := newOrphanStore(t, "lost", false)
	o.must(o.l.Close())
	before, err := vfs.ReadFile(o.fsys, o.log)
	o.must(err)
	// A writer appends to another session and dies without closing.
	w, err := Open("/h/events", Options{FS: o.fsys, Writable: true})
	o.must(err)
	other := mustCreate(t, w, "other")
	_, err = w.Append(other.ID, Event{Kind: KindUser, Body: body(2)})
	o.must(err)
	o.must(w.Flush())
	o.loseMeta(o.s.ID)
	kept, notices := o.recover(o.log)
	if !kept {
		t.Fatal("the recovery removed a log of acknowledged events whose .meta was lost")
	}
	if after, err := vfs.ReadFile(o.fsys, o.log); err != nil || string(after) != string(before) {
		t.Fatalf("the recovery changed a log whose .meta was lost: %v", err)
	}
	if len(notices) != 1 || !strings.Contains(notices[0], filepath.Base(o.log)) || !strings.Contains(notices[0], "rook doctor") {
		t.Fatalf("notices %q: want one naming the kept log", notices)
	}
}

// TestRemoveCutShortIsFinished: a session rm that removed the .meta but
// failed to remove the log leaves the dirty marker, so the next writer's
// open finishes the removal.
func TestRemoveCutShortIsFinished(t *testing.T) {
	o := newOrphanStore(t, "gone", false)
	o.must(o.l.Flush())
	o.failing("remove with its log's removal failing", func(op vfs.Op, path string) bool { return op == vfs.OpRemove && path == o.log }, func() error {
		_, err := o.l.Remove(o.s.ID)
		return err
	})
	o.must(o.l.Close())
	if !vfs.Exists(o.fsys, o.log) || vfs.Exists(o.fsys, o.meta) {
		t.Fatal("setup: want the .meta gone and the log left")
	}
	if kept, notices := o.recover(o.log); kept {
		t.Fatalf("the next writer's open left the log of a session rm cut short (notices %q)", notices)
	}
}

// TestRemoveWhoseLastSyncFailsIsDone: a session rm whose metadata's
// removal is synced, and whose log's removal then does not sync (the
// directory sync fails). The session is gone for good: Remove succeeds,
// saying so in a notice, and keeps the dirty marker, so that a log a
// power cut brings back is removed by the next writer's open. It failed
// with the bare "syncdir ...: input/output error", the session removed.
func TestRemoveWhoseLastSyncFailsIsDone(t *testing.T) {
	o := newOrphanStore(t, "gone", false)
	o.must(o.l.Flush())
	logGone := false
	o.fsys.SetHook(func(op vfs.Op, path string) error {
		switch {
		case op == vfs.OpRemove && path == o.log:
			logGone = true
		case logGone && op == vfs.OpSyncDir:
			return vfs.ErrInjected
		}
		return nil
	})
	n, err := o.l.Remove(o.s.ID)
	o.fsys.SetHook(nil)
	if err != nil || n != 1 {
		t.Fatalf("remove, its log's removal not synced: %d events, %v; want 1, no error", n, err)
	}
	if !slices.ContainsFunc(o.l.Notices, func(s string) bool { return strings.Contains(s, o.s.ID.String()) }) {
		t.Errorf("notices %q: want one naming the session", o.l.Notices)
	}
	o.must(o.l.Close())
	if !vfs.Exists(o.fsys, filepath.Join("/h/events", dirtyMarker)) {
		t.Fatal("the dirty marker is gone: a log a crash brings back would stay")
	}
	// The power cut brings the log back (its removal was not synced).
	o.fsys = o.fsys.CrashClone()
	if vfs.Exists(o.fsys, o.meta) {
		t.Fatal("the session's metadata is back after a power cut: its removal was synced")
	}
	if !vfs.Exists(o.fsys, o.log) {
		t.Fatal("setup: want the log back after the power cut")
	}
	if kept, notices := o.recover(o.log); kept {
		t.Fatalf("the next writer's open left the log of the removed session (notices %q)", notices)
	}
}

// TestBulkOrphanWithRecordsIsRemoved: a session created in bulk whose
// records a barrier wrote, but whose metadata it did not (the writer
// failed there and died), was never acknowledged: the next writer's open
// removes its log.
func TestBulkOrphanWithRecordsIsRemoved(t *testing.T) {
	o := newOrphanStore(t, "bulk", true)
	o.failing("flush with its metadata failing", func(_ vfs.Op, path string) bool { return strings.Contains(filepath.Base(path), ".meta") }, o.l.Flush)
	if fi, err := o.fsys.Stat(o.log); err != nil || fi.Size() <= logHeaderSize {
		t.Fatalf("setup: want the log with records: %v", err)
	}
	if kept, notices := o.recover(o.log); kept {
		t.Fatalf("the next writer's open left a bulk session's log never acknowledged (notices %q)", notices)
	}
}

// TestForkLostMetaLogIsKept: a fork (tagged "new" in the dirty marker, its
// log written before its metadata) goes on to acknowledged events; its
// .meta lost then, recovery after the writer's crash keeps its log. A
// fork at 0 holds only its header when its metadata is written: its first
// barrier names it with a size all the same.
func TestForkLostMetaLogIsKept(t *testing.T) {
	o := newOrphanStore(t, "parent", false)
	f, err := o.l.Fork(o.s.ID, 0, Meta{Title: "fork"})
	o.must(err)
	_, err = o.l.Append(f.ID, Event{Kind: KindUser, Body: body(1)})
	o.must(err)
	o.must(o.l.Flush())
	o.loseMeta(f.ID)
	if kept, notices := o.recover(o.l.logPath(f.ID)); !kept {
		t.Fatalf("the recovery removed a fork's log of acknowledged events (notices %q)", notices)
	}
}

// TestStaleNewTagRemovesNothing: a fork acknowledged (its metadata
// written) by a writer that then crashed is tagged "new" in the marker it
// left; a writer that recovers and closes without a barrier of its own
// leaves that marker. The tag must not make a later recovery take the
// fork's log for one never acknowledged once its .meta is lost.
func TestStaleNewTagRemovesNothing(t *testing.T) {
	o := newOrphanStore(t, "parent", false)
	f, err := o.l.Fork(o.s.ID, 1, Meta{Title: "fork"})
	o.must(err)
	// l crashes: no Close. The next writer recovers and closes.
	o.recover(o.l.logPath(f.ID))
	o.loseMeta(f.ID)
	if kept, notices := o.recover(o.l.logPath(f.ID)); !kept {
		t.Fatalf("a recovery removed an acknowledged fork's log on an earlier writer's tag (notices %q)", notices)
	}
}

// TestForkCutShortIsFinished: a fork whose metadata could not be written
// (the error said so) leaves its log, holding a copy of the parent's
// events, without .meta. Its "new" tag must outlive the writer's Close,
// so that the next writer's open removes that log: left, nothing removed
// it, and verify and doctor named it as a log that may hold events.
func TestForkCutShortIsFinished(t *testing.T) {
	o := newOrphanStore(t, "parent", false)
	o.must(o.l.Flush())
	o.failing("fork with its metadata failing", func(op vfs.Op, path string) bool { return op == vfs.OpRename && strings.HasSuffix(path, ".meta") }, func() error {
		_, err := o.l.Fork(o.s.ID, 1, Meta{Title: "fork"})
		return err
	})
	o.must(o.l.Close())
	var orphans []string
	ents, err := o.fsys.ReadDir("/h/events")
	o.must(err)
	for _, e := range ents {
		if name, ok := strings.CutSuffix(e.Name(), ".log"); ok && !vfs.Exists(o.fsys, filepath.Join("/h/events", name+".meta")) {
			orphans = append(orphans, e.Name())
		}
	}
	if len(orphans) != 1 {
		t.Fatalf("setup: want the fork's log left without .meta, have %q", orphans)
	}
	if kept, notices := o.recover(filepath.Join("/h/events", orphans[0])); kept {
		t.Fatalf("the next writer's open left the log of a fork cut short (notices %q)", notices)
	}
}

// TestBulkLostMetaLogIsKept: a session created in bulk whose metadata a
// barrier wrote is acknowledged, whether or not a later barrier appends
// to it: its .meta lost before the recovery after the writer's crash, the
// recovery keeps its log (its "new" tag must not read as never made).
func TestBulkLostMetaLogIsKept(t *testing.T) {
	o := newOrphanStore(t, "bulk", true)
	o.must(o.l.Flush())
	if !vfs.Exists(o.fsys, o.meta) {
		t.Fatal("setup: the flush did not write the metadata")
	}
	// The writer dies without closing; the .meta is lost.
	o.loseMeta(o.s.ID)
	if kept, notices := o.recover(o.log); !kept {
		t.Fatalf("the recovery removed the log of a bulk session acknowledged (notices %q)", notices)
	}
}

// TestRemoveLogWithoutMeta: the log of a session whose .meta is lost is
// removed when named, with what it held; a log with its .meta (a session)
// is never removed this way, nor is a session created in bulk whose .meta
// is not written yet, nor one whose log is damaged counted as whole.
func TestRemoveLogWithoutMeta(t *testing.T) {
	fsys := vfs.NewMem()
	l := testLog(t, fsys, Options{})
	lost, kept := mustCreate(t, l, "lost"), mustCreate(t, l, "kept")
	for _, id := range []ID{lost.ID, kept.ID} {
		if _, err := l.Append(id, Event{Kind: KindUser, Body: body(0)}, Event{Kind: KindUser, Body: body(1)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.RemoveLogWithoutMeta(kept.ID); err == nil || !strings.Contains(err.Error(), "has its .meta") {
		t.Fatalf("a session's log (its .meta beside it): %v", err)
	}
	if !vfs.Exists(fsys, l.logPath(kept.ID)) || !vfs.Exists(fsys, l.metaPath(kept.ID)) {
		t.Fatal("a session's log was removed as one without .meta")
	}

	if err := fsys.Remove(l.metaPath(lost.ID)); err != nil {
		t.Fatal(err)
	}
	fi, err := fsys.Stat(l.logPath(lost.ID))
	if err != nil {
		t.Fatal(err)
	}
	left, err := l.RemoveLogWithoutMeta(lost.ID)
	if err != nil || left.Events != 2 || left.CountErr != nil || left.Bytes != fi.Size()-logHeaderSize || left.Path != l.logPath(lost.ID) {
		t.Fatalf("removed %+v, %v", left, err)
	}
	if vfs.Exists(fsys, l.logPath(lost.ID)) {
		t.Fatal("the log without .meta is still there")
	}
	if _, err := l.RemoveLogWithoutMeta(lost.ID); !errors.Is(err, ErrNoSession) {
		t.Fatalf("again: %v", err)
	}
	if s, err := l.Summary(kept.ID); err != nil || s.Events != 2 {
		t.Fatalf("the other session: %+v %v", s, err)
	}

	// A damaged log: removed, its count not known.
	dam := mustCreate(t, l, "damaged")
	if _, err := l.Append(dam.ID, Event{Kind: KindUser, Body: body(0)}, Event{Kind: KindUser, Body: body(1)}); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	b, err := vfs.ReadFile(fsys, l.logPath(dam.ID))
	if err != nil {
		t.Fatal(err)
	}
	b[logHeaderSize+6] ^= 0xff
	if err := fsys.WriteFileAtomic(l.logPath(dam.ID), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Remove(l.metaPath(dam.ID)); err != nil {
		t.Fatal(err)
	}
	if left, err := l.RemoveLogWithoutMeta(dam.ID); err != nil || left.CountErr == nil {
		t.Fatalf("damaged log: %+v, %v", left, err)
	}

	// A session created in bulk: its .meta comes at the next flush.
	l.SetBulk(true)
	bulk, err := l.Create(Meta{Title: "bulk"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.RemoveLogWithoutMeta(bulk.ID); err == nil || !vfs.Exists(fsys, l.logPath(bulk.ID)) {
		t.Fatalf("a session being created in bulk: %v", err)
	}
}
