package cas

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/rookhq/rook/dict"
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
// torn_tail_bytes should be what the writer cuts (as the reader's
// Store.TornTail, used by doctor, computes). (verifyOnce took the length
// of the damage at the tail only, while the writer cut from the first
// damage past the watermark. Fails on c0304e6.)
//
// Since the writer's open no longer cuts whole records that follow a
// break (they may be records a Barrier acknowledged, with a byte of the
// one before them damaged since: TestWriterOpenKeepsWholeRecordsAfterDamage),
// the torn tail is only the stretch after the last whole record (200
// here): the embedded "record" is taken in (an object nothing names, which
// gc collects) and the 1000 bytes before it are damage, which verify
// lists and the open keeps, saying so. verify and the writer still agree.
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
	written := int64(1000 + len(recB) + 200)
	tail := int64(200)

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
	cut := int64(len(before)) + written - int64(len(after))
	if cut != tail {
		t.Fatalf("the writer cut %d bytes, the test expected %d", cut, tail)
	}
	if rep.TornTailBytes != cut {
		t.Errorf("verify's torn_tail_bytes = %d, but the next writer copies and cuts %d bytes (the room it needs)", rep.TornTailBytes, cut)
	}
	if len(rep.Problems) != 1 || rep.Problems[0].Offset != int64(len(before)) || rep.DamagedRegions != 1 {
		t.Errorf("verify's problems %v: want the 1000 damaged bytes at offset %d, which whole records follow", rep.Problems, len(before))
	}
	if kept := notKeptByOpen(rep.Problems, w.Notices); len(kept) != 0 {
		t.Errorf("the writer's open did not say it kept %v (notices %v)", kept, w.Notices)
	}
}

// TestWriterOpenKeepsWholeRecordsAfterDamage: records a Barrier made
// durable past the index's watermark (the events naming their objects were
// written after it), and then a byte of the first of them damaged (a disk
// fault), before any writer committed them. The writer's open cut
// everything from the damaged record on into torn/ ("written but never
// synced"), the whole record after it too, whose object no longer read;
// verify had called it all a torn tail. Now only a stretch that no whole
// record follows is a torn tail: the open takes the whole records after
// the damage in, leaves the damaged bytes where they are and says so, and
// verify lists them as damage; readers find the records after it too.
// (The script session_append_keeps_records_after_damage keeps what the user saw.)
func TestWriterOpenKeepsWholeRecordsAfterDamage(t *testing.T) {
	fsys := vfs.NewMem()
	s, home := newStore(t, fsys, Options{})
	mustPut(t, s, KindNote, noise(500, 1))
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	seg, wm := firstSegmentSize(t, fsys, home)
	a := mustPut(t, s, KindMessage, noise(700, 2))
	if err := s.Barrier(); err != nil {
		t.Fatal(err)
	}
	b := mustPut(t, s, KindMessage, noise(800, 3))
	want, _ := s.Get(b)
	if err := s.Barrier(); err != nil {
		t.Fatal(err)
	}
	c := fsys.CrashClone() // the Barriers synced both records; no commit named them
	data, err := vfs.ReadFile(c, seg)
	if err != nil {
		t.Fatal(err)
	}
	data[wm+40] ^= 0xff // in a's record, past its header
	if err := c.WriteFileAtomic(seg, data, FileMode); err != nil {
		t.Fatal(err)
	}

	r, err := Open(home, Options{FS: c, Clock: testClock()})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.Get(b); err != nil || !bytes.Equal(got, want) {
		t.Errorf("a reader does not find the whole record after the damage: %v", err)
	}
	rep, err := r.Verify(nil)
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	if rep.TornTail != "" {
		t.Errorf("verify calls damage that a whole record follows a torn tail: %s", rep.TornTail)
	}
	if rep.DamagedRegions != 1 || len(rep.Problems) != 1 || rep.Problems[0].Offset != wm {
		t.Errorf("verify: %v: want the damaged record at offset %d as the one problem", rep.Problems, wm)
	}

	w, err := Open(home, Options{FS: c, Clock: testClock(), Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := w.Get(b); err != nil || !bytes.Equal(got, want) {
		t.Errorf("the writer's open lost the whole record after the damage: %v (notices %v)", err, w.Notices)
	}
	if _, err := w.Get(a); err == nil {
		t.Errorf("the damaged record's object reads")
	}
	if !strings.Contains(strings.Join(w.Notices, "\n"), "not a torn write") {
		t.Errorf("the open did not say what it kept: %v", w.Notices)
	}
	if _, err := w.Put(KindNote, []byte("after it")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	after, err := vfs.ReadFile(c, seg)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) < len(data) || !bytes.Equal(after[:len(data)], data) {
		t.Errorf("the segment was cut or rewritten: %d bytes, was %d", len(after), len(data))
	}
	w2, err := Open(home, Options{FS: c, Clock: testClock(), Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	if got, err := w2.Get(b); err != nil || !bytes.Equal(got, want) {
		t.Errorf("after the next open: %v", err)
	}
}

// TestWriterOpenKeepsARecordWaitingForItsDictionaryAfterDamage: the case
// 81deb20 fixed (records a Barrier synced past the index's watermark, a
// byte of the first of them damaged since: the records after it must be
// kept, not cut into torn/ as "written but never synced"), when the
// record after the damage is compressed with a dictionary whose file is
// missing at that open (lost, or not yet put back from a backup).
//
// What the user does: writes messages after a `rook store train` (their
// records use the dictionary), the process dies before the index commit;
// a disk fault damages the first record and the dictionary file is lost;
// the next writing command runs; the user puts the dictionary back from a
// backup and runs `rook store reindex`, as verify advises for records
// waiting for a dictionary.
// What happens: the writer's open cuts the damaged record AND the whole
// record after it (its checksum holds, it only waits for its dictionary)
// into torn/ as "a torn tail ... written but never synced"; with the
// dictionary back, the reindex finds nothing: the acknowledged message is
// gone from the store. With the dictionary present the same open keeps
// it (TestWriterOpenKeepsWholeRecordsAfterDamage).
// What should happen: docs/storage.md, the writer's open: "Only what
// follows the last whole record is a torn tail", and a record waiting for
// its dictionary is whole ("kept, never cut, skipped or collected as
// damage", cas/scan.go wrongDictError; "what they hold reads again once
// the file is put back"): the damage before it is kept damage, the record
// stays in the segment and reads after the dictionary is put back and a
// reindex.
// (cas/scan.go scanRecordsFrom: splitTornTail is given the end of the last
// record that decoded (lastRecordEnd(recs)); records waiting for a
// dictionary are not in recs, so damage before them starts the "torn
// tail". verify's lastEnd (verifyOnce) ignores them the same way.)
func TestWriterOpenKeepsARecordWaitingForItsDictionaryAfterDamage(t *testing.T) {
	fsys := vfs.NewMem()
	s, home := newStore(t, fsys, Options{})
	d := trainMessages(t, s, 0, 0, 400)
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	segs, err := fsys.ReadDir(filepath.Join(home, SegmentsDir))
	if err != nil {
		t.Fatal(err)
	}
	seg := filepath.Join(home, SegmentsDir, segs[len(segs)-1].Name())
	st, err := fsys.Stat(seg)
	if err != nil {
		t.Fatal(err)
	}
	wm := st.Size()
	mustPut(t, s, KindMessage, shaped(0, 1000))
	if err := s.Barrier(); err != nil {
		t.Fatal(err)
	}
	bdata := shaped(0, 1001)
	b := mustPut(t, s, KindMessage, bdata)
	if err := s.Barrier(); err != nil {
		t.Fatal(err)
	}
	if info, err := s.Stat(b); err != nil || info.Dict != d {
		t.Fatalf("the test's premise: the message is compressed with dictionary %d: %+v, %v", d, info, err)
	}
	c := fsys.CrashClone() // both records synced; no commit named them
	data, err := vfs.ReadFile(c, seg)
	if err != nil {
		t.Fatal(err)
	}
	data[wm+30] ^= 0xff // in the first record's payload
	if err := c.WriteFileAtomic(seg, data, FileMode); err != nil {
		t.Fatal(err)
	}
	dpath := filepath.Join(home, DictDir, dict.FileName(d))
	saved, err := vfs.ReadFile(c, dpath)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Remove(dpath); err != nil {
		t.Fatal(err)
	}

	// verify agrees with the writer: the damaged record is damage, not a
	// torn tail (a whole record follows it).
	vrep := verifyWith(t, c, home)
	if vrep.TornTailBytes != 0 || len(vrep.Problems) == 0 {
		t.Errorf("verify: torn tail %d bytes (%s), problems %v; want no torn tail and the damage named", vrep.TornTailBytes, vrep.TornTail, vrep.Problems)
	}

	w, err := Open(home, Options{FS: c, Clock: testClock(), Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	notices := w.Notices
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	after, err := vfs.ReadFile(c, seg)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) < len(data) {
		t.Errorf("the writer's open cut the segment from %d to %d bytes: the whole record waiting for dictionary %d went to torn/ with the damage before it (notices %v)", len(data), len(after), d, notices)
	}

	// The dictionary put back from a backup, then the reindex verify advises.
	if err := c.WriteFileAtomic(dpath, saved, FileMode); err != nil {
		t.Fatal(err)
	}
	r, err := Open(home, Options{FS: c, Clock: testClock(), Writable: true, ForReindex: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Reindex(nil); err != nil {
		t.Fatal(err)
	}
	if got, err := r.Get(b); err != nil || !bytes.Equal(got, bdata) {
		t.Errorf("the acknowledged message, its dictionary back and the store reindexed: %v", err)
	}
}

// segmentBytesOf makes a small store of its own on a MemFS, puts n
// incompressible objects of 20000 bytes in it (each its own raw record: PackMax is 16 KiB), and returns
// its segment file's bytes and the objects' ids: what a user's file
// holding a rook segment (a backup copied into a project, a test fixture,
// a `cp ~/.rook/segments/00000001.seg .`) holds.
func segmentBytesOf(t *testing.T, n int) ([]byte, []Key) {
	t.Helper()
	fsys := vfs.NewMem()
	s, home := newStore(t, fsys, Options{})
	var ids []Key
	for i := 0; i < n; i++ {
		ids = append(ids, mustPut(t, s, KindFile, noise(20000, uint64(100+2*i))))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := vfs.ReadFile(fsys, filepath.Join(home, SegmentsDir, "00000001.seg"))
	if err != nil {
		t.Fatal(err)
	}
	return b, ids
}

// TestReaderFindsAnObjectWhoseBodyHoldsRecordsAfterItsWriteEnds: a reader
// that stays open (an MCP server, a long `session show`/export) while a
// writer appends a big object whose bytes hold a rook segment's records
// (`rook store put backup.seg`, a tool result that read such a file).
//
// What the user does: the reader looks past the watermark while the
// record is half written (it opens, or refreshes for another object); the
// writer then finishes the record and a Barrier makes it durable (the
// event naming it is written); the reader is asked for the object.
// What happens: the reader's look resynced inside the half-written body,
// read the embedded records there as whole records past damage (kept, not
// a torn tail), and remembered the end of the last of them as where its
// next look starts (recentFrom). Its next look starts in the middle of the
// finished record's body, skips its header, and never finds it: "no
// object matches" for an object a Barrier made durable, until the writer
// commits the index. Before 81deb20 the look stopped at the first break
// and looked again from the record's start.
// What should happen: docs/storage.md (loadRecent): a reader finds the
// records past the watermark "as the writer's next open would"; a durable
// object reads.
// (cas/scan.go loadRecent: recentFrom is set to the last record found,
// which may lie inside a torn record's body.)
func TestReaderFindsAnObjectWhoseBodyHoldsRecordsAfterItsWriteEnds(t *testing.T) {
	embedded, inside := segmentBytesOf(t, 3)

	fsys := vfs.NewMem()
	s, home := newStore(t, fsys, Options{})
	first := mustPut(t, s, KindNote, noise(500, 1))
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	seg, wm := firstSegmentSize(t, fsys, home)
	big := mustPut(t, s, KindFile, embedded)
	if err := s.Barrier(); err != nil {
		t.Fatal(err)
	}
	c := fsys.CrashClone() // the record durable, the index not committed past it
	full, err := vfs.ReadFile(c, seg)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(full[wm:], embedded[:64])
	if at < 0 {
		t.Fatal("the segment bytes were not stored raw: the test's premise does not hold")
	}
	// The writer is in the middle of the record: the reader looks then.
	half := wm + int64(at) + int64(len(embedded)) - 100
	f, err := c.OpenFile(seg, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(half); err != nil {
		t.Fatal(err)
	}
	r, err := Open(home, Options{FS: c, Clock: testClock()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Get(first); err != nil {
		t.Fatal(err)
	}
	// The write ends (the same file, appended to); a Barrier made it durable.
	if _, err := f.Seek(half, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(full[half:]); err != nil {
		t.Fatal(err)
	}
	got, err := r.Get(big)
	if err != nil || !bytes.Equal(got, embedded) {
		t.Errorf("a reader that looked while the record was half written does not find the object once it is durable: %v", err)
	}
	// Nor does it keep, as objects of this store, the records its first
	// look read inside the half-written body (another store's objects):
	// its next look, from before the break, sweeps them.
	for _, id := range inside {
		if _, err := r.Get(id); err == nil {
			t.Errorf("object %x, a record inside the finished object's bytes, reads from the store", id)
		}
	}
	// A reader opened now finds it: the two disagree.
	r2, err := Open(home, Options{FS: c, Clock: testClock()})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if _, err := r2.Get(big); err != nil {
		t.Fatalf("a fresh reader: %v", err)
	}
}

// TestRepackMovesDamageAWriterOpenKept: the damage a writer's open kept
// past the watermark (whole records after it) in the active segment: a
// repack carries the live records out, moves the segment to torn/, and
// verify is clean after it, as docs/storage.md says.
func TestRepackMovesDamageAWriterOpenKept(t *testing.T) {
	fsys := vfs.NewMem()
	s, home := newStore(t, fsys, Options{})
	mustPut(t, s, KindNote, noise(500, 1))
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	seg, wm := firstSegmentSize(t, fsys, home)
	mustPut(t, s, KindMessage, noise(700, 2))
	if err := s.Barrier(); err != nil {
		t.Fatal(err)
	}
	bdata := noise(800, 3)
	b := mustPut(t, s, KindMessage, bdata)
	if err := s.Barrier(); err != nil {
		t.Fatal(err)
	}
	c := fsys.CrashClone()
	data, err := vfs.ReadFile(c, seg)
	if err != nil {
		t.Fatal(err)
	}
	data[wm+40] ^= 0xff
	if err := c.WriteFileAtomic(seg, data, FileMode); err != nil {
		t.Fatal(err)
	}
	w, err := Open(home, Options{FS: c, Clock: testClock(), Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Repack(nil); err != nil {
		t.Fatal(err)
	}
	if got, err := w.Get(b); err != nil || !bytes.Equal(got, bdata) {
		t.Errorf("after the repack: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := Open(home, Options{FS: c, Clock: testClock()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rep, err := r.Verify(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 0 {
		t.Errorf("verify after the repack: %v", rep.Problems)
	}
}

// firstSegmentSize is the path and size of a store's first segment (the
// active one in these tests): where its records end now.
func firstSegmentSize(t *testing.T, fsys vfs.FS, home string) (string, int64) {
	t.Helper()
	seg := filepath.Join(home, SegmentsDir, "00000001.seg")
	st, err := fsys.Stat(seg)
	if err != nil {
		t.Fatal(err)
	}
	return seg, st.Size()
}

// verifyWith is what a reader's Verify of the store at home on fsys
// reports, the reader closed after.
func verifyWith(t *testing.T, fsys vfs.FS, home string) VerifyReport {
	t.Helper()
	r, err := Open(home, Options{FS: fsys, Clock: testClock()})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := r.Verify(nil)
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	return rep
}
