package agent

import (
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// `rook checkpoint rm first second` whose removal of second fails (an
// I/O error on the store's disk) has already removed first: the error
// says so, and names second as left, and first is returned (the CLI lists
// it) and its removal synced. It said only that second failed, returned
// no ref, and skipped the sync, so the user believed first was still
// there.
func TestCheckpointRmFailingPartWaySaysWhatItRemoved(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	id, err := r.StoreManifest(&Manifest{V: manifestVersion, Root: "/w", Files: map[string]FileEntry{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"first", "second", "third"} {
		if err := r.writeRef(n, id); err != nil {
			t.Fatal(err)
		}
	}
	fsys.SetHook(func(op vfs.Op, p string) error {
		if op == vfs.OpRemove && strings.HasSuffix(p, "/refs/checkpoints/second") {
			return vfs.ErrInjected
		}
		return nil
	})
	refs, err := r.RemoveCheckpoints([]string{"first", "second", "third"})
	fsys.SetHook(nil)
	if err == nil {
		t.Fatalf("the removal of second failed, and RemoveCheckpoints said nothing: %+v", refs)
	}
	if _, serr := fsys.Stat(r.checkpointPath("first")); !errors.Is(serr, fs.ErrNotExist) {
		t.Fatalf("first is still there (%v): %v", serr, err)
	}
	if len(refs) != 1 || refs[0].Name != "first" {
		t.Fatalf("returned %+v, want first, the one removed", refs)
	}
	if !strings.Contains(err.Error(), "checkpoint first removed before it, checkpoints second, third not") {
		t.Fatalf("the error does not say first is gone and second and third are not: %v", err)
	}
	if _, serr := fsys.CrashClone().Stat(r.checkpointPath("first")); !errors.Is(serr, fs.ErrNotExist) {
		t.Fatalf("the removal of first was not synced: a crash brings it back (%v)", serr)
	}
	for _, n := range []string{"second", "third"} {
		if _, serr := fsys.Stat(r.checkpointPath(n)); serr != nil {
			t.Fatalf("%s is gone: %v", n, serr)
		}
	}
	// The first one failing removed none, and says so.
	fsys.SetHook(func(op vfs.Op, p string) error {
		if op == vfs.OpRemove {
			return vfs.ErrInjected
		}
		return nil
	})
	refs, err = r.RemoveCheckpoints([]string{"second", "third"})
	fsys.SetHook(nil)
	if err == nil || len(refs) != 0 || !strings.HasSuffix(err.Error(), ": nothing removed") {
		t.Fatalf("a first removal failing: %+v, %v", refs, err)
	}
}

// `rook checkpoint ls` reads no lock: it lists refs/checkpoints, then
// reads each ref. A `rook checkpoint rm` run meanwhile by another rook
// removed a listed ref before ls read it, and ls failed (exit 1) with
// "1 checkpoint(s) do not read and are not listed (second): fix the ref
// file, or `rook checkpoint rm NAME` removes the checkpoint": a ref that
// is simply gone, as asked, reported as a damaged one to fix. readRef
// returns fs.ErrNotExist as it is ("missing, as it was"), and Checkpoints
// counts it among the refs that do not read.
func TestCheckpointLsBesideACheckpointRmCallsNoRemovedCheckpointUnreadable(t *testing.T) {
	fsys := vfs.NewMem()
	w := testRook(t, fsys)
	id, err := w.StoreManifest(&Manifest{V: manifestVersion, Root: "/w", Files: map[string]FileEntry{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"first", "second"} {
		if err := w.writeRef(n, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Store.Sync(); err != nil {
		t.Fatal(err)
	}
	rd, clk := readerAfter(t, fsys, w)

	// checkpoint ls is about to read the ref: another rook's
	// `checkpoint rm second` removes it first.
	done := removeBeforeRead(fsys, clk, rd.checkpointPath("second"), func(other *Rook) error {
		_, err := other.RemoveCheckpoints([]string{"second"})
		return err
	})
	refs, err := rd.Checkpoints()
	removed, rmErr := done()
	if rmErr != nil {
		t.Fatalf("the other rook's checkpoint rm: %v", rmErr)
	}
	if !removed {
		t.Fatal("checkpoint ls never read the removed checkpoint's ref")
	}
	if err != nil {
		t.Errorf("checkpoint ls beside a checkpoint rm fails: %v", err)
	}
	if len(refs) != 1 || refs[0].Name != "first" {
		t.Errorf("listed %+v: want first alone", refs)
	}
}
