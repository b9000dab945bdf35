package cas

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// TestVerifySaysWhichSegmentFileIsMissing: a sealed segment file gone
// (deleted by hand, left out of a backup restore) leaves every object
// the index names in it unreadable. The fix is that one file, put back
// from a backup (docs/storage.md, Home layout: "its objects keep failing
// to read as in a missing segment (`rook store verify` lists them)").
// verify listed each object as "index entry points at no record", as if
// the index were wrong, and its summary said to put each object's bytes
// again: the missing file was named nowhere. A problem of the report
// should say the segment file is missing.
func TestVerifySaysWhichSegmentFileIsMissing(t *testing.T) {
	s, home := newStore(t, nil, Options{SegmentSize: 64 << 10})
	for i := range 12 {
		mustPut(t, s, KindFile, noise(20000, uint64(2*i+1)))
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	segs, _ := s.listSegments()
	if len(segs) < 3 {
		t.Fatalf("%d segments, want several", len(segs))
	}
	r := reopen(t, s, false)
	if err := r.fs.Remove(filepath.Join(home, SegmentsDir, segName(segs[0]))); err != nil {
		t.Fatal(err)
	}
	rep, err := r.Verify(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) == 0 {
		t.Fatal("verify found nothing with a segment file gone")
	}
	named := false
	for _, p := range rep.Problems {
		if strings.Contains(p.Reason, "missing") || strings.Contains(p.Reason, "no such file") {
			named = true
		}
	}
	if !named {
		var rs []string
		for _, p := range rep.Problems {
			rs = append(rs, p.String())
		}
		t.Fatalf("segment %s removed: no problem says the file is missing:\n%s", segName(segs[0]), strings.Join(rs, "\n"))
	}
	// Said once for the file, with the objects it held and the way out;
	// each object's own line names the file too.
	if len(rep.MissingSegments) != 1 || rep.MissingSegments[0].Segment != segName(segs[0]) || rep.MissingSegments[0].Objects == 0 {
		t.Fatalf("missing segments %+v, want %s alone", rep.MissingSegments, segName(segs[0]))
	}
	whole := 0
	for _, p := range rep.Problems {
		if p.ID == nil && strings.Contains(p.Reason, "segment "+segName(segs[0])+" is missing") {
			whole++
			if !strings.Contains(p.Reason, "put it back from a backup") || !strings.Contains(p.Reason, "`rook store reindex`") {
				t.Fatalf("the missing segment's problem says no way out: %s", p.Reason)
			}
		}
		if p.ID != nil && p.Reason != "its segment "+segName(segs[0])+" is missing" {
			t.Fatalf("an object of the missing segment: %s", p)
		}
	}
	if whole != 1 {
		t.Fatalf("%d problems of the whole file, want 1", whole)
	}
}

// TestMissingSegmentKeepsInlineObjects: a segment file lost (deleted by hand, left out of a backup restore) that
// held small objects, which the index also keeps inline (up to InlineMax
// bytes: a session's short messages, rewind notes).
//
// What the user does: `rook store verify`, then, as it and doctor advise
// for a segment "gone for good", `rook store reindex`.
// What happens (seen with the real binary: a store whose only segment was
// removed; `store cat` of an inline note printed it):
//  1. verify says "segment 00000002.seg is missing ..., and the index names
//     4965 object(s) in it" (of 4968), lists those "its segment ... is
//     missing", and then lists the 3 inline ones, which still read
//     (`store cat` gives their bytes), as "index entry points at no
//     record": the wording docs/storage.md says was replaced ("It used to
//     say of each object "index entry points at no record", as if the
//     index were wrong, and named the file nowhere").
//  2. `rook store reindex` rebuilds from the segments alone and drops the
//     inline entries: `store cat` of those objects now fails "no object
//     matches", session events that read before read no more.
//
// What should happen: an object whose bytes the index holds whole (and
// re-hashes: "inline copies re-hashed", Verify and reindex) is not lost
// with the segment: verify does not call it a problem, and the reindex it
// advises keeps it (the user is told "reindex makes the index forget its
// objects" of a segment gone, not objects that still read; following the
// advice must not lose what was not destroyed), as reindex carries over
// the entries it cannot rebuild from a record (`carried`).
// (The entry walk reported an inline entry whose record it did not find
// as "points at no record", and Reindex rebuilt from records only. Now
// verify passes such an entry, whose bytes it re-hashes, and reindex
// writes its bytes again as a new record: ReindexReport.Rewritten.)
func TestMissingSegmentKeepsInlineObjects(t *testing.T) {
	fsys := vfs.NewMem()
	s, home := newStore(t, fsys, Options{})
	small := []byte("a short note, inline")
	sid := mustPut(t, s, KindNote, small)
	mustPut(t, s, KindFile, noise(3000, 3))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Remove(filepath.Join(home, SegmentsDir, "00000001.seg")); err != nil {
		t.Fatal(err)
	}

	r, err := Open(home, Options{FS: fsys, Clock: testClock()})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := r.Get(sid); err != nil || !bytes.Equal(b, small) {
		t.Fatalf("the inline object before any repair: %q, %v: want it read from the index", b, err)
	}
	rep, err := r.Verify(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Problems {
		if p.ID != nil && *p.ID == sid {
			if strings.Contains(p.Reason, "points at no record") {
				t.Errorf("verify says of an object whose segment is missing %q: the wording docs/storage.md says was replaced by the segment's name", p.Reason)
			}
		}
	}
	r.Close()

	w, err := Open(home, Options{FS: fsys, Clock: testClock(), Writable: true, ForReindex: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Reindex(nil); err != nil {
		t.Logf("reindex: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r2, err := Open(home, Options{FS: fsys, Clock: testClock()})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if b, err := r2.Get(sid); err != nil || !bytes.Equal(b, small) {
		t.Errorf("after the reindex verify and doctor advise, the inline object that read before: %q, %v: want it kept", b, err)
	}
}

// TestVerifyNamesASegmentCutShortUnderInlineObjects: the newest segment cut
// short at a record boundary (a copy or a restore that stopped early, a
// disk that lost the file's last blocks) where the records cut off held
// only small objects, which the index also keeps inline (<= InlineMax:
// notes, short messages).
//
// What the user does: `rook store verify` (exit 0 means a healthy store),
// then any writing command (`rook store put`, `rook session append`).
// What happens (seen with the real binary, a store of one 30 KB object
// and two short notes, its segment truncated back to the first record):
// verify prints "all 3 objects verified (1 records in 1 segment(s) ...)"
// and exits 0, while every writer, and doctor, refuse the store: "segment
// 00000001.seg is 30063 bytes but the index took in records up to offset
// 30139: acknowledged data is missing; run `rook store reindex`". Before
// 81deb20 verify named both objects ("index entry points at no record").
// What should happen: README: verify is the check ("Re-read and re-hash
// every object; check every index entry against its segment"), and
// docs/storage.md has it report a segment cut short ("A segment cut short
// exactly at a record boundary ... is kept in place and reported as a
// damaged one is"): a store no writer can open is not "all verified";
// verify names the cut (as CheckWatermark does) with its way out, and
// exits 1.
// (cas/verify.go verifyOnce: the new case `!ok && e.Inline && d == nil`
// passes every inline entry whose record is not found, meant for a
// segment file lost, also when its segment is present and merely shorter
// than where the entry points.)
func TestVerifyNamesASegmentCutShortUnderInlineObjects(t *testing.T) {
	fsys := vfs.NewMem()
	s, home := newStore(t, fsys, Options{})
	mustPut(t, s, KindFile, noise(20000, 1))
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	seg, cut := firstSegmentSize(t, fsys, home)
	mustPut(t, s, KindNote, []byte("a short note, inline"))
	mustPut(t, s, KindNote, []byte("another short note"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := vfs.ReadFile(fsys, seg)
	if err != nil {
		t.Fatal(err)
	}
	if err := fsys.WriteFileAtomic(seg, data[:cut], FileMode); err != nil {
		t.Fatal(err)
	}

	_, werr := Open(home, Options{FS: fsys, Clock: testClock(), Writable: true})
	if werr == nil {
		t.Fatal("the test's premise: a writer refuses a segment shorter than the watermark")
	}
	r, err := Open(home, Options{FS: fsys, Clock: testClock()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rep, err := r.Verify(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) == 0 {
		t.Errorf("verify reports no problem (exit 0) for a store every writer refuses: %v", werr)
	}
}

// TestVerifyAgreesWithRepackOnASealedSegmentCutShort: the same cut in a
// sealed segment (writers open fine): the record cut off held only an
// object the index keeps inline.
//
// What the user does: `rook store verify`, then `rook store repack` (or gc).
// What happens: verify reports nothing (exit 0); the repack keeps the
// segment in place, "the index names 1 object(s) in it that are not among
// its records: it was cut short or replaced since; put the whole file back
// from a backup, or run `rook store reindex` to forget them"
// (kept_damaged / index_names_missing, repack exits 1), and does so at
// every repack and gc, for a store verify calls healthy.
// What should happen: docs/storage.md has verify be what says what to do
// ("what to do is verify's to say") and gc/repack report such a segment
// "as a damaged one is": verify names the cut (the object whose record is
// not in its present segment) as it did before 81deb20, so the two agree.
// (cas/verify.go verifyOnce: `case !ok && e.Inline && d == nil` passes an
// inline entry whose segment is present.)
func TestVerifyAgreesWithRepackOnASealedSegmentCutShort(t *testing.T) {
	fsys := vfs.NewMem()
	s, home := newStore(t, fsys, Options{SegmentSize: 30000})
	mustPut(t, s, KindFile, noise(20000, 1))
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	seg, cut := firstSegmentSize(t, fsys, home)
	mustPut(t, s, KindNote, []byte("a short note, inline"))
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	mustPut(t, s, KindFile, noise(20000, 3)) // the next segments
	mustPut(t, s, KindFile, noise(20000, 5))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := vfs.ReadFile(fsys, seg)
	if err != nil {
		t.Fatal(err)
	}
	if err := fsys.WriteFileAtomic(seg, data[:cut], FileMode); err != nil {
		t.Fatal(err)
	}

	rep := verifyWith(t, fsys, home)
	w, err := Open(home, Options{FS: fsys, Clock: testClock(), Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rr, err := w.Repack(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.KeptInPlace) == 0 {
		t.Fatal("the test's premise: repack keeps the segment cut short")
	}
	if len(rep.Problems) == 0 {
		t.Errorf("verify reports no problem, while repack keeps %s: %s", rr.KeptInPlace[0].Segment, rr.KeptInPlace[0].Detail)
	}
}
