package cas

import (
	"path/filepath"
	"strings"
	"testing"
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
