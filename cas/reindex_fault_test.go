package cas

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// TestFailedReindexCommitsNothingAfter: a reindex whose rebuilt index
// cannot be written (a full disk) has already dropped the pending entries
// of objects put before it, while the counters and the watermark still
// count them. A Sync after it (the Close of the command) committed those
// over the old tree: the objects acknowledged, in no entry, and past the
// watermark, so no open took them in again. The failure must leave the
// store failed, and a reopen find every object.
func TestFailedReindexCommitsNothingAfter(t *testing.T) {
	fsys := vfs.NewMem()
	s, home := newStore(t, fsys, Options{})
	want := map[Key]string{}
	for i := 0; i < 5; i++ {
		d := fmt.Sprintf("put before the reindex %d", i)
		want[mustPut(t, s, KindNote, []byte(d))] = d
	}
	fsys.SetHook(func(op vfs.Op, path string) error {
		if op == vfs.OpOpen && strings.HasSuffix(path, ".tmp") {
			return syscall.ENOSPC
		}
		return nil
	})
	if _, err := s.Reindex(nil); err == nil {
		t.Fatal("reindex with no room for its index reported success")
	}
	fsys.SetHook(nil)
	if err := s.Sync(); err == nil {
		t.Fatal("a Sync after the failed reindex reported success")
	}
	s.Close()
	s, err := Open(home, Options{FS: fsys.CrashClone(), Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for id, d := range want {
		got, err := s.Get(id)
		if err != nil || string(got) != d {
			t.Fatalf("object %s after the failed reindex: %q, %v", Short(id), got, err)
		}
	}
	rep, err := s.Verify(nil)
	if err != nil || len(rep.Problems) != 0 {
		t.Fatalf("verify: %v %v", err, rep.Problems)
	}
}

// TestReindexRewriteOfInlineObjectsSurvivesACrashAtEveryWrite: the newest
// segment lost, holding an object the index keeps inline; reindex writes
// it again (rewriteInlineOnly) before the rebuilt index: a crash at every
// write, sync, rename or remove of the reindex leaves a store whose next
// writer opens and reads the inline object.
func TestReindexRewriteOfInlineObjectsSurvivesACrashAtEveryWrite(t *testing.T) {
	small := []byte("a short note, inline")
	for k := 1; ; k++ {
		fsys := vfs.NewMem()
		s, home := newStore(t, fsys, Options{SegmentSize: 4000})
		mustPut(t, s, KindFile, noise(5000, 5))
		mustPut(t, s, KindFile, noise(5000, 7))
		sid := mustPut(t, s, KindNote, small)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		segs, err := fsys.ReadDir(filepath.Join(home, SegmentsDir))
		if err != nil || len(segs) < 2 {
			t.Fatalf("want two segments: %v %v", segs, err)
		}
		if err := fsys.Remove(filepath.Join(home, SegmentsDir, segs[len(segs)-1].Name())); err != nil {
			t.Fatal(err)
		}
		w, err := Open(home, Options{FS: fsys, Clock: testClock(), Writable: true, ForReindex: true})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		var c *vfs.MemFS
		fsys.SetHook(func(op vfs.Op, path string) error {
			switch op {
			case vfs.OpWrite, vfs.OpRename, vfs.OpSync, vfs.OpTruncate, vfs.OpRemove:
				n++
				if n == k {
					c = fsys.CrashClone()
					return vfs.ErrInjected
				}
			}
			return nil
		})
		rep, _ := w.Reindex(nil)
		fsys.SetHook(nil)
		w.Close()
		if c == nil {
			if rep.Rewritten != 1 {
				t.Fatalf("reindex rewrote %d objects, want 1", rep.Rewritten)
			}
			return
		}
		w2, err := Open(home, Options{FS: c, Clock: testClock(), Writable: true})
		if err != nil {
			t.Fatalf("crash at write %d: the next writer: %v", k, err)
		}
		if b, err := w2.Get(sid); err != nil || !bytes.Equal(b, small) {
			t.Errorf("crash at write %d: the inline object: %v (notices %v)", k, err, w2.Notices)
		}
		w2.Close()
	}
}
