package eventlog

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// TestLostMetaLogIsKept: a session whose .meta is lost some other way than
// a crash of the writer (deleted by hand, a disk fault) still holds
// acknowledged events in its log. The recovery after a later writer's
// crash keeps that log where it is, and says so in a notice naming it.
func TestLostMetaLogIsKept(t *testing.T) {
	fsys := vfs.NewMem()
	l := testLog(t, fsys, Options{})
	lost := mustCreate(t, l, "lost")
	if _, err := l.Append(lost.ID, Event{Kind: KindUser, Body: body(1)}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	before, err := vfs.ReadFile(fsys, l.logPath(lost.ID))
	if err != nil {
		t.Fatal(err)
	}
	// A writer appends to another session and dies without closing.
	w, err := Open("/h/events", Options{FS: fsys, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	other := mustCreate(t, w, "other")
	if _, err := w.Append(other.ID, Event{Kind: KindUser, Body: body(2)}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Remove(l.metaPath(lost.ID)); err != nil {
		t.Fatal(err)
	}
	r, err := Open("/h/events", Options{FS: fsys, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	after, err := vfs.ReadFile(fsys, l.logPath(lost.ID))
	if err != nil {
		t.Fatalf("the recovery removed a log of acknowledged events whose .meta was lost: %v", err)
	}
	if string(after) != string(before) {
		t.Fatal("the recovery changed a log whose .meta was lost")
	}
	if len(r.Notices) != 1 || !strings.Contains(r.Notices[0], filepath.Base(l.logPath(lost.ID))) || !strings.Contains(r.Notices[0], "rook doctor") {
		t.Fatalf("notices %q: want one naming the kept log", r.Notices)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRemoveCutShortIsFinished: a session rm that removed the .meta but
// failed to remove the log leaves the dirty marker, so the next writer's
// open finishes the removal.
func TestRemoveCutShortIsFinished(t *testing.T) {
	fsys := vfs.NewMem()
	l := testLog(t, fsys, Options{})
	gone := mustCreate(t, l, "gone")
	if _, err := l.Append(gone.ID, Event{Kind: KindUser, Body: body(1)}); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	logPath := l.logPath(gone.ID)
	fsys.SetHook(func(op vfs.Op, path string) error {
		if op == vfs.OpRemove && path == logPath {
			return vfs.ErrInjected
		}
		return nil
	})
	if _, err := l.Remove(gone.ID); err == nil {
		t.Fatal("remove with its log's removal failing succeeded")
	}
	fsys.SetHook(nil)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if !vfs.Exists(fsys, logPath) || vfs.Exists(fsys, l.metaPath(gone.ID)) {
		t.Fatal("setup: want the .meta gone and the log left")
	}
	w, err := Open("/h/events", Options{FS: fsys, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	if vfs.Exists(fsys, logPath) {
		t.Fatalf("the next writer's open left the log of a session rm cut short (notices %q)", w.Notices)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestBulkOrphanWithRecordsIsRemoved: a session created in bulk whose
// records a barrier wrote, but whose metadata it did not (the writer
// failed there and died), was never acknowledged: the next writer's open
// removes its log.
func TestBulkOrphanWithRecordsIsRemoved(t *testing.T) {
	fsys := vfs.NewMem()
	l := testLog(t, fsys, Options{})
	l.SetBulk(true)
	m := mustCreate(t, l, "bulk")
	if _, err := l.Append(m.ID, Event{Kind: KindUser, Body: body(1)}); err != nil {
		t.Fatal(err)
	}
	fsys.SetHook(func(op vfs.Op, path string) error {
		if strings.Contains(filepath.Base(path), ".meta") {
			return vfs.ErrInjected
		}
		return nil
	})
	if err := l.Flush(); err == nil {
		t.Fatal("flush with its metadata failing succeeded")
	}
	fsys.SetHook(nil)
	fi, err := fsys.Stat(l.logPath(m.ID))
	if err != nil || fi.Size() <= logHeaderSize {
		t.Fatalf("setup: want the log with records: %v", err)
	}
	w, err := Open("/h/events", Options{FS: fsys, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	if vfs.Exists(fsys, l.logPath(m.ID)) {
		t.Fatalf("the next writer's open left a bulk session's log never acknowledged (notices %q)", w.Notices)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestForkLostMetaLogIsKept: a fork (tagged "new" in the dirty marker, its
// log written before its metadata) goes on to acknowledged events; its
// .meta lost then, recovery after the writer's crash keeps its log. A
// fork at 0 holds only its header when its metadata is written: its first
// barrier names it with a size all the same.
func TestForkLostMetaLogIsKept(t *testing.T) {
	fsys := vfs.NewMem()
	l := testLog(t, fsys, Options{})
	parent := mustCreate(t, l, "parent")
	if _, err := l.Append(parent.ID, Event{Kind: KindUser, Body: body(0)}); err != nil {
		t.Fatal(err)
	}
	f, err := l.Fork(parent.ID, 0, Meta{Title: "fork"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(f.ID, Event{Kind: KindUser, Body: body(1)}); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Remove(l.metaPath(f.ID)); err != nil {
		t.Fatal(err)
	}
	w, err := Open("/h/events", Options{FS: fsys, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	if !vfs.Exists(fsys, l.logPath(f.ID)) {
		t.Fatalf("the recovery removed a fork's log of acknowledged events (notices %q)", w.Notices)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestStaleNewTagRemovesNothing: a fork acknowledged (its metadata
// written) by a writer that then crashed is tagged "new" in the marker it
// left; a writer that recovers and closes without a barrier of its own
// leaves that marker. The tag must not make a later recovery take the
// fork's log for one never acknowledged once its .meta is lost.
func TestStaleNewTagRemovesNothing(t *testing.T) {
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
	// l crashes: no Close. The next writer recovers and closes.
	w, err := Open("/h/events", Options{FS: fsys, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Remove(l.metaPath(f.ID)); err != nil {
		t.Fatal(err)
	}
	r, err := Open("/h/events", Options{FS: fsys, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	if !vfs.Exists(fsys, l.logPath(f.ID)) {
		t.Fatalf("a recovery removed an acknowledged fork's log on an earlier writer's tag (notices %q)", r.Notices)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestForkCutShortIsFinished: a fork whose metadata could not be written
// (the error said so) leaves its log, holding a copy of the parent's
// events, without .meta. Its "new" tag must outlive the writer's Close,
// so that the next writer's open removes that log: left, nothing removed
// it, and verify and doctor named it as a log that may hold events.
func TestForkCutShortIsFinished(t *testing.T) {
	fsys := vfs.NewMem()
	l := testLog(t, fsys, Options{})
	parent := mustCreate(t, l, "parent")
	if _, err := l.Append(parent.ID, Event{Kind: KindUser, Body: body(0)}); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	fsys.SetHook(func(op vfs.Op, path string) error {
		if op == vfs.OpRename && strings.HasSuffix(path, ".meta") {
			return vfs.ErrInjected
		}
		return nil
	})
	if _, err := l.Fork(parent.ID, 1, Meta{Title: "fork"}); err == nil {
		t.Fatal("fork with its metadata failing succeeded")
	}
	fsys.SetHook(nil)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	var orphans []string
	ents, err := fsys.ReadDir("/h/events")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if name, ok := strings.CutSuffix(e.Name(), ".log"); ok && !vfs.Exists(fsys, filepath.Join("/h/events", name+".meta")) {
			orphans = append(orphans, e.Name())
		}
	}
	if len(orphans) != 1 {
		t.Fatalf("setup: want the fork's log left without .meta, have %q", orphans)
	}
	w, err := Open("/h/events", Options{FS: fsys, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	if vfs.Exists(fsys, filepath.Join("/h/events", orphans[0])) {
		t.Fatalf("the next writer's open left the log of a fork cut short (notices %q)", w.Notices)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestBulkLostMetaLogIsKept: a session created in bulk whose metadata a
// barrier wrote is acknowledged, whether or not a later barrier appends
// to it: its .meta lost before the recovery after the writer's crash, the
// recovery keeps its log (its "new" tag must not read as never made).
func TestBulkLostMetaLogIsKept(t *testing.T) {
	fsys := vfs.NewMem()
	l := testLog(t, fsys, Options{})
	l.SetBulk(true)
	m := mustCreate(t, l, "bulk")
	if _, err := l.Append(m.ID, Event{Kind: KindUser, Body: body(1)}); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if !vfs.Exists(fsys, l.metaPath(m.ID)) {
		t.Fatal("setup: the flush did not write the metadata")
	}
	// The writer dies without closing; the .meta is lost.
	if err := fsys.Remove(l.metaPath(m.ID)); err != nil {
		t.Fatal(err)
	}
	w, err := Open("/h/events", Options{FS: fsys, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	if !vfs.Exists(fsys, l.logPath(m.ID)) {
		t.Fatalf("the recovery removed the log of a bulk session acknowledged (notices %q)", w.Notices)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
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
