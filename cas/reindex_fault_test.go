package cas

import (
	"fmt"
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
