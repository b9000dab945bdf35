package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/internal/clock"
	"github.com/rookhq/rook/internal/vfs"
)

// TestWriterWithNoRoomForTornTailSaysHowMuchToFree (review rwriters):
// An append of a large body is killed part way (SIGKILL, OOM, a timeout)
// on a disk with less free space than the part it wrote. Seen by hand on
// a 30 MB tmpfs with 18 MB of a killed body's record left in the segment
// and 13 MB free: every later writer (`echo b | rook session append S`)
// fails with "segment 00000001.seg: keep torn tail aside: write
// .../torn/00000001.seg.63...: no space left on device: the disk holding
// the store ... is full: free space, then run the command again (it
// recovers what this one wrote)", again and again; `rook doctor` says
// "ok" (a warning of 12.8 MiB free), `rook store verify` says "the next
// writer then cuts it off". The user is told the disk is full (it is
// not: 13 MB free), not how much to free (the 18 MB the torn tail's copy
// needs), not that the space is rook's own unacknowledged bytes, and "it
// recovers what this one wrote" is wrong: this one wrote nothing. The
// store takes no write until the user guesses.
// Now: the open fails with a cas.TornTailError naming the torn tail
// (segment, offset, size), and explain says nothing was written and to
// free the tail's size, then run the command again (the copy into torn/
// before the cut is kept: docs/storage.md). It used to go out as any
// write's ENOSPC.
func TestWriterWithNoRoomForTornTailSaysHowMuchToFree(t *testing.T) {
	const home = "/home/u/store"
	const tail = 2_000_000
	fsys := vfs.NewMem()
	if _, err := cas.Init(fsys, nil, home); err != nil {
		t.Fatal(err)
	}
	clk := &clock.Fixed{T: time.Date(2026, 2, 10, 21, 0, 0, 0, time.UTC)}
	var out, errb bytes.Buffer
	env := func(stdin string) *Env {
		out.Reset()
		errb.Reset()
		return &Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, FS: fsys, Home: home, Clock: clk, Cwd: "/w"}
	}
	if err := (&SessionNewCmd{Title: "big"}).Run(env("")); err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(out.String())
	if err := (&SessionAppendCmd{ID: id, File: "-", Kind: "user"}).Run(env("first")); err != nil {
		t.Fatal(err)
	}
	// What a killed append of a large body leaves: part of its record
	// past the last acknowledged one.
	seg := filepath.Join(home, cas.SegmentsDir, "00000001.seg")
	f, err := fsys.OpenFile(seg, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	junk := make([]byte, tail)
	for i := range junk {
		junk[i] = byte(i*131 + i>>8)
	}
	if _, err := f.Write(junk); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// Not room for the copy of the tail.
	fsys.SetHook(func(op vfs.Op, p string) error {
		if op == vfs.OpWrite && strings.Contains(p, "/torn/") {
			return syscall.ENOSPC
		}
		return nil
	})
	err = (&SessionAppendCmd{ID: id, File: "-", Kind: "user"}).Run(env("second"))
	if err == nil {
		t.Skipf("the append went in: %q", out.String())
	}
	msg := explain(err, home)
	t.Logf("said: %s", msg)
	if !strings.Contains(msg, "1.9 MiB") && !strings.Contains(msg, "2000000 bytes") && !strings.Contains(msg, "2.0 MB") {
		t.Errorf("a writer that cannot keep a killed append's torn tail (%d bytes) aside for want of space says only that the disk is full: it must say how much the recovery needs (the tail's size) and that it is a torn tail no one acknowledged", tail)
	}
	if strings.Contains(msg, "recovers what this one wrote") {
		t.Errorf("the error says a rerun \"recovers what this one wrote\": this command wrote nothing, its open failed recovering an earlier one")
	}
	if !strings.Contains(msg, "nothing was written: free at least 1.9 MiB (the torn tail's size) on the disk holding "+home) {
		t.Errorf("the error does not say what to free, and where")
	}
	// Room again: the next writer cuts the tail and appends.
	fsys.SetHook(nil)
	if err := (&SessionAppendCmd{ID: id, File: "-", Kind: "user"}).Run(env("second")); err != nil {
		t.Fatalf("append once there is room: %v", err)
	}
	if !strings.Contains(errb.String(), "cut a torn tail of 2000000 bytes") {
		t.Errorf("the append once there is room said %q, want the tail cut", errb.String())
	}
}
