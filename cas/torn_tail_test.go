package cas

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
	"github.com/rookhq/rook/internal/vfs/vfstest"
)

// TestTornTailRecoveryBoundedMemory: the user's agent appends a large
// tool result (bodies up to 1 GiB are allowed) and the append is killed
// part way (SIGKILL, the OOM killer, a timeout). The next writer, however
// small, recovers the torn segment tail first. Seen by hand before the
// fix: after a 600 MB append killed with 312 MB written, a one-line append
// took 749 MB of memory: resync read the whole rest of the segment, and
// cutTail the whole tail to hand it to the durable-write helper. Now
// resync looks for the next record a window at a time and the tail is
// streamed into torn/.
func TestTornTailRecoveryBoundedMemory(t *testing.T) {
	home := t.TempDir()
	const tail = 48 << 20
	if _, err := Init(vfs.OS, nil, home); err != nil {
		t.Fatal(err)
	}
	s, err := Open(home, Options{FS: vfs.OS, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(KindMessage, noise(3000, 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// What a killed append of a large body leaves: most of its record
	// (here noise standing for it) past the last acknowledged one.
	f, err := os.OpenFile(filepath.Join(home, SegmentsDir, "00000001.seg"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(noise(tail, 7)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	w, err := Open(home, Options{FS: vfs.OS, Writable: true})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("a writer's open over a %d MiB torn tail allocated %d MiB", tail>>20, alloc>>20)
	if alloc > 16<<20 {
		t.Errorf("a writer's open that recovers a %d MiB torn tail allocated %d MiB: the recovery holds the tail in memory, so a tiny append after a killed large one needs memory the size of the body it never wrote",
			tail>>20, alloc>>20)
	}
	if len(w.Notices) != 1 || !strings.Contains(w.Notices[0], "cut a torn tail of 50331648 bytes") {
		t.Errorf("notices %q, want the 48 MiB tail cut", w.Notices)
	}
	ents, err := os.ReadDir(filepath.Join(home, TornDir))
	if err != nil || len(ents) != 1 {
		t.Fatalf("torn/: %v %v, want the tail's copy", ents, err)
	}
	got, err := os.ReadFile(filepath.Join(home, TornDir, ents[0].Name()))
	if err != nil || !bytes.Equal(got, noise(tail, 7)) {
		t.Errorf("the copy of the tail in torn/ (%d bytes, %v) is not the tail", len(got), err)
	}
}

// TestResyncFindsRecordAcrossWindows: resync reads a window at a time; a
// record whose magic falls at a window's end, or across two, is found as
// one wholly inside a window is.
func TestResyncFindsRecordAcrossWindows(t *testing.T) {
	fsys := vfs.NewMem()
	s, home := newStore(t, fsys, Options{})
	for i := range 2 {
		if _, err := s.Put(KindMessage, noise(500, uint64(10+10*i))); err != nil {
			t.Fatal(err)
		}
		if err := s.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	seg := filepath.Join(home, SegmentsDir, "00000001.seg")
	whole, err := vfs.ReadFile(fsys, seg)
	if err != nil {
		t.Fatal(err)
	}
	h, err := parseRecordHeader(whole[segHeaderSize:])
	if err != nil {
		t.Fatal(err)
	}
	aEnd := segHeaderSize + h.total()
	recB := whole[aEnd:]
	// Damage starts at aEnd; resync looks from aEnd+1, so garbage of
	// resyncWindow bytes puts record B's "R" at the first window's last
	// byte.
	for _, g := range []int64{1, resyncWindow - 2, resyncWindow - 1, resyncWindow, resyncWindow + 1, 2*resyncWindow - 1, 2 * resyncWindow} {
		var b bytes.Buffer
		b.Write(whole[:aEnd])
		b.Write(make([]byte, g))
		b.Write(recB)
		if err := fsys.WriteFileAtomic(seg, b.Bytes(), FileMode); err != nil {
			t.Fatal(err)
		}
		r, err := Open(home, Options{FS: fsys, Clock: testClock()})
		if err != nil {
			t.Fatal(err)
		}
		f, err := fsys.OpenFile(seg, os.O_RDONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		size := int64(b.Len())
		next, err := r.resync(f, 1, aEnd+1, size)
		f.Close()
		r.Close()
		if err != nil || next != aEnd+g {
			t.Errorf("%d bytes of garbage: resync = %d, %v; want record B at %d", g, next, err, aEnd+g)
		}
	}
}

// TestTornTailCutCrashSweep crashes a writer's open that recovers a
// torn tail of several MiB (copied into torn/ in many writes, then cut)
// at every write, and checks what storage.md promises: at any point the
// tail is either still in the segment or whole in torn/, and the store
// opens again with every acknowledged object.
func TestTornTailCutCrashSweep(t *testing.T) {
	tail := noise(3<<20+123, 9)
	seg := filepath.Join(crashHome, SegmentsDir, "00000001.seg")
	acked := noise(2000, 4)
	var off int64
	setup := func(fsys *vfs.MemFS) {
		initCrashStore(fsys)
		s, err := Open(crashHome, Options{FS: fsys, Clock: testClock(), Writable: true})
		if err != nil {
			panic(err)
		}
		if _, err := s.Put(KindMessage, acked); err != nil {
			panic(err)
		}
		if err := s.Close(); err != nil {
			panic(err)
		}
		f, err := fsys.OpenFile(seg, os.O_RDWR|os.O_APPEND, 0)
		if err != nil {
			panic(err)
		}
		st, _ := f.Stat()
		off = st.Size()
		if _, err := f.Write(tail); err != nil {
			panic(err)
		}
		if err := f.Sync(); err != nil {
			panic(err)
		}
		f.Close()
	}
	n := vfstest.Sweep(t, nil, 0, setup,
		func(fsys *vfs.MemFS) error {
			s, err := Open(crashHome, Options{FS: fsys, Clock: testClock(), Writable: true})
			if err != nil {
				return err
			}
			defer s.Close()
			if _, err := s.Put(KindNote, []byte("after the cut")); err != nil {
				return err
			}
			return s.Close()
		},
		func(k int, states []*vfs.MemFS) {
			c := states[0]
			inSegment := false
			if b, err := vfs.ReadFile(c, seg); err == nil && int64(len(b)) >= off+int64(len(tail)) && bytes.Equal(b[off:off+int64(len(tail))], tail) {
				inSegment = true
			}
			inTorn := false
			ents, err := c.ReadDir(filepath.Join(crashHome, TornDir))
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				t.Fatal(err)
			}
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), ".") {
					continue // the copy's temporary file: gc removes it
				}
				if b, err := vfs.ReadFile(c, filepath.Join(crashHome, TornDir, e.Name())); err == nil && bytes.Equal(b, tail) {
					inTorn = true
				}
			}
			if !inSegment && !inTorn {
				t.Fatalf("crash at write %d: the torn tail is neither in the segment nor whole in torn/ (%d entries)", k, len(ents))
			}
			checkCrashState(t, k, c, crashHome, map[Key][]byte{ID(acked): acked})
		})
	t.Logf("swept %d crash points", n)
}

// TestTornTailNoRoomNamesTail: a writer's open that cannot copy a torn
// tail aside (no room on the disk) fails naming the tail, its size and
// where the copy goes (TornTailError), and cuts nothing.
func TestTornTailNoRoomNamesTail(t *testing.T) {
	fsys := vfs.NewMem()
	s, home := newStore(t, fsys, Options{})
	if _, err := s.Put(KindMessage, noise(700, 3)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	seg := filepath.Join(home, SegmentsDir, "00000001.seg")
	before, err := vfs.ReadFile(fsys, seg)
	if err != nil {
		t.Fatal(err)
	}
	f, err := fsys.OpenFile(seg, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(noise(100_000, 5))
	f.Close()
	fsys.SetHook(func(op vfs.Op, p string) error {
		if op == vfs.OpWrite && strings.Contains(p, "/torn/") {
			return syscall.ENOSPC
		}
		return nil
	})
	_, err = Open(home, Options{FS: fsys, Clock: testClock(), Writable: true})
	var te *TornTailError
	if !errors.As(err, &te) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("open = %v, want a TornTailError of ENOSPC", err)
	}
	if te.Segment != 1 || te.Offset != int64(len(before)) || te.Size != 100_000 || te.Dir != filepath.Join(home, TornDir) {
		t.Errorf("TornTailError %+v, want segment 1 offset %d size 100000", *te, len(before))
	}
	if msg := err.Error(); !strings.Contains(msg, "segment 00000001.seg: a torn tail of 100000 bytes (97.7 KiB) at offset") {
		t.Errorf("error %q does not name the tail", msg)
	}
	after, _ := vfs.ReadFile(fsys, seg)
	if len(after) != len(before)+100_000 {
		t.Errorf("the segment is %d bytes after the failed copy, want %d: nothing cut", len(after), len(before)+100_000)
	}
	ents, _ := fsys.ReadDir(filepath.Join(home, TornDir))
	if len(ents) != 0 {
		t.Errorf("torn/ holds %d file(s) after the failed copy, want none (the temporary file removed)", len(ents))
	}
	// A reader sees the same tail, and its size (doctor).
	fsys.SetHook(nil)
	r, err := Open(home, Options{FS: fsys, Clock: testClock()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if d, ok := r.TornTail(); !ok || d.Offset != int64(len(before)) || d.Length != 100_000 {
		t.Errorf("reader's TornTail = %+v %v, want offset %d length 100000", d, ok, len(before))
	}
}

// TestVerifyTornTailIsWhatTheWriterCuts: a writer is
// killed part way through a large append whose body holds bytes that read
// as a whole record (a tool result that is itself rook segment bytes,
// stored raw), so resync finds a "record" inside the torn tail, and torn
// bytes follow it. The user runs `rook store verify --json` (or reads its
// note) to learn how much room the next writer's copy into torn/ needs:
// torn_tail_bytes says only the last stretch (200 here), and the stretch
// before the embedded record is reported as damage. The next writer's open
// (recover: cutTail from the FIRST damage past the watermark to the
// segment's end) copies and cuts all of it (1000 + record + 200). With
// free space between the two figures, verify says there is room and every
// write then fails with TornTailError. torn_tail_bytes should be what the
// writer cuts (as the reader's Store.TornTail, used by doctor, computes:
// segment end minus the first damage's offset).
// (verifyOnce took the length of the damage at the tail only; now the
// whole tail from the first damage past the watermark. Fails on c0304e6.)
func TestVerifyTornTailIsWhatTheWriterCuts(t *testing.T) {
	fsys := vfs.NewMem()
	s, home := newStore(t, fsys, Options{})
	if _, err := s.Put(KindMessage, noise(700, 3)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// A whole record, as a body's bytes may hold one.
	other := "/home/u/other"
	if _, err := Init(fsys, testClock(), other); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(other, Options{FS: fsys, Clock: testClock(), Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Put(KindMessage, noise(300, 9)); err != nil {
		t.Fatal(err)
	}
	s2.Close()
	oseg, err := vfs.ReadFile(fsys, filepath.Join(other, SegmentsDir, "00000001.seg"))
	if err != nil {
		t.Fatal(err)
	}
	recB := oseg[segHeaderSize:]

	seg := filepath.Join(home, SegmentsDir, "00000001.seg")
	before, _ := vfs.ReadFile(fsys, seg)
	f, err := fsys.OpenFile(seg, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(make([]byte, 1000))
	f.Write(recB)
	f.Write(make([]byte, 200))
	f.Close()
	tail := int64(1000 + len(recB) + 200)

	r, err := Open(home, Options{FS: fsys, Clock: testClock()})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := r.Verify(nil)
	if err != nil {
		t.Fatal(err)
	}
	d, ok := r.TornTail()
	r.Close()
	t.Logf("verify: torn_tail %q bytes %d, problems %v; reader TornTail %v %v", rep.TornTail, rep.TornTailBytes, rep.Problems, d.Length, ok)

	w, err := Open(home, Options{FS: fsys, Clock: testClock(), Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("writer notices: %v", w.Notices)
	w.Close()
	after, _ := vfs.ReadFile(fsys, seg)
	cut := int64(len(before)) + tail - int64(len(after))
	if cut != tail {
		t.Fatalf("the writer cut %d bytes, the test expected %d", cut, tail)
	}
	if rep.TornTailBytes != cut {
		t.Errorf("verify's torn_tail_bytes = %d, but the next writer copies and cuts %d bytes (the room it needs)", rep.TornTailBytes, cut)
	}
}
