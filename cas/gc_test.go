package cas

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rookhq/rook/dict"
	"github.com/rookhq/rook/index"
	"github.com/rookhq/rook/internal/clock"
	"github.com/rookhq/rook/internal/vfs"
	"github.com/rookhq/rook/internal/vfs/vfstest"
)

// message is a chat message of the benchmark's shape: distinct, similar.
func message(i int) []byte {
	return []byte(fmt.Sprintf(`{"role":"assistant","model":"local/qwen3-coder-30b","stop_reason":"tool_use","content":[{"type":"tool_use","id":"toolu_%08x","name":"read_file","input":{"path":"crates/rook-core/src/session/turn_%d.rs","offset":%d}}],"usage":{"input_tokens":%d,"output_tokens":120}}`, i, i, i*40, 18000+i))
}

// shaped is a message of one of three shapes, as three agents write them:
// a dictionary trained on one knows little of the next.
func shaped(shape, i int) []byte {
	switch shape {
	case 1:
		return []byte(fmt.Sprintf(`{"type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"bash\",\"-lc\",\"go test ./internal/pkg%d/...\"],\"workdir\":\"/srv/app\"}","call_id":"call_%08x"},"timestamp":"2026-03-01T10:%02d:%02d.%03dZ"}`, i, i*104729, i%60, i*7%60, i%1000))
	case 2:
		return []byte(fmt.Sprintf(`<turn speaker="planner" step="%d"><thought>Compare benchmark run %d with the baseline before changing the allocator.</thought><action tool="bench" repeat="%d"/></turn>`, i, i*31, i%9))
	}
	return message(i)
}

func TestRetrainingThreeTimesKeepsEveryObjectReadable(t *testing.T) {
	fsys := vfs.NewMem()
	s, home := newStore(t, fsys, Options{})
	want := map[Key][]byte{}
	put := func(shape, from, to int) {
		for i := from; i < to; i++ {
			want[mustPut(t, s, KindMessage, shaped(shape, i))] = shaped(shape, i)
		}
		if err := s.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	put(0, 0, 400)
	var ids []uint32
	for round := 0; round < 3; round++ {
		res, err := s.Train(TrainOptions{Kinds: []Kind{KindMessage}, Samples: 200})
		if err != nil {
			t.Fatal(err)
		}
		if !res[0].Kept || res[0].DictID == 0 {
			t.Fatalf("round %d: %+v", round, res[0])
		}
		ids = append(ids, res[0].DictID)
		// Written with the new dictionary; a new shape, so that the next
		// round's dictionary is better than this one.
		put(round+1, 0, 800)
	}
	if ids[0] == ids[1] || ids[1] == ids[2] {
		t.Fatalf("dictionary ids %v", ids)
	}
	s.Close()
	// Reopen: the dictionaries come from disk now, not memory.
	s2, err := Open(home, Options{FS: fsys, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	used := map[uint32]bool{}
	for id, b := range want {
		got, err := s2.Get(id)
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("object %s after retraining and reopening: %v", Short(id), err)
		}
		info, _ := s2.Stat(id)
		used[info.Dict] = true
	}
	for _, d := range ids {
		if !used[d] {
			t.Fatalf("no object uses dictionary %d (used: %v)", d, used)
		}
	}
	if rep, _ := s2.Verify(nil); len(rep.Problems) != 0 {
		t.Fatalf("verify: %v", rep.Problems)
	}
}

// A retrain on the same data is no better than the current dictionary:
// nothing is added (dictionaries are never deleted, so each run added one
// more file), and the result says which dictionary it was measured against.
func TestRetrainNoBetterKeepsTheCurrent(t *testing.T) {
	s, _ := newStore(t, vfs.NewMem(), Options{})
	for i := 0; i < 1500; i++ {
		mustPut(t, s, KindMessage, message(i))
	}
	s.Sync()
	first, err := s.Train(TrainOptions{Kinds: []Kind{KindMessage}})
	if err != nil || !first[0].Kept || first[0].Against != 0 {
		t.Fatalf("%+v %v", first, err)
	}
	for round := 0; round < 2; round++ {
		res, err := s.Train(TrainOptions{Kinds: []Kind{KindMessage}})
		if err != nil || res[0].Kept || res[0].Against != first[0].DictID || !strings.Contains(res[0].Reason, fmt.Sprintf("over dictionary %d", first[0].DictID)) {
			t.Fatalf("round %d: %+v %v", round, res, err)
		}
		if res[0].Gain > first[0].Gain/2 {
			t.Fatalf("saving over the current dictionary %d, over none %d", res[0].Gain, first[0].Gain)
		}
	}
	if d := s.Dictionaries(); len(d) != 1 {
		t.Fatalf("dictionaries %+v", d)
	}
}

func TestSmallKindsGetNoDictionary(t *testing.T) {
	s, _ := newStore(t, nil, Options{})
	for i := 0; i < 10; i++ {
		mustPut(t, s, KindSnapshot, message(i))
	}
	s.Sync()
	res, err := s.Train(TrainOptions{Kinds: []Kind{KindSnapshot}})
	if err != nil || res[0].Kept || !strings.Contains(res[0].Reason, "at least 32") {
		t.Fatalf("%+v %v", res, err)
	}
	// A dictionary that cannot pay for itself is not kept either.
	for i := 0; i < 40; i++ {
		mustPut(t, s, KindNote, noise(50, uint64(i+1)))
	}
	s.Sync()
	res, _ = s.Train(TrainOptions{Kinds: []Kind{KindNote}})
	if res[0].Kept {
		t.Fatalf("a dictionary for 2 KB of noise was kept: %+v", res[0])
	}
}

func TestDamagedDictionaryIsReportedNotDropped(t *testing.T) {
	fsys := vfs.NewMem()
	s, home := newStore(t, fsys, Options{})
	for i := 0; i < 1500; i++ {
		mustPut(t, s, KindMessage, message(i))
	}
	s.Sync()
	res, err := s.Train(TrainOptions{})
	if err != nil || !res[0].Kept {
		t.Fatalf("%+v %v", res, err)
	}
	var withDict []Key
	for i := 1500; i < 1600; i++ {
		withDict = append(withDict, mustPut(t, s, KindMessage, message(i)))
	}
	s.Close()
	path := filepath.Join(home, DictDir, dict.FileName(res[0].DictID))
	b, _ := vfs.ReadFile(fsys, path)
	b[len(b)/2] ^= 0xff
	fsys.WriteFileAtomic(path, b, 0o600)
	r, err := Open(home, Options{FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Get(withDict[0]); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("object under a damaged dictionary: %v", err)
	}
	rep, _ := r.Verify(nil)
	if len(rep.Problems) == 0 || !strings.Contains(fmt.Sprint(rep.Problems), "damaged") {
		t.Fatalf("verify: %v", rep.Problems)
	}
	if st, _ := r.Stats(); st.Objects != 1600 {
		t.Fatalf("objects: %d", st.Objects)
	}
	r.Close()
	// A rebuild cannot re-hash what it cannot decode: it keeps the old
	// entries of the records waiting for their dictionary.
	w, err := Open(home, Options{FS: fsys, Writable: true, ForReindex: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rrep, err := w.Reindex(nil)
	if err != nil || len(rrep.NeedsDict) == 0 || rrep.Carried != 100 || len(rrep.Damage) != 0 {
		t.Fatalf("reindex: %+v %v", rrep, err)
	}
	if st, _ := w.Stats(); st.Objects != 1600 {
		t.Fatalf("objects after reindex: %d", st.Objects)
	}
	// gc never collects them either: their segment is kept, their entries stay.
	if _, err := w.Collect(GCOptions{Live: func(Key) bool { return true }}); err != nil {
		t.Fatal(err)
	}
	if st, _ := w.Stats(); st.Objects != 1600 {
		t.Fatalf("objects after gc: %d", st.Objects)
	}
}

func TestCollectRemovesExactlyTheUnreachable(t *testing.T) {
	clk := testClock()
	s, _ := newStore(t, vfs.NewMem(), Options{Clock: clk, SegmentSize: 32 << 10})
	live := map[Key][]byte{}
	deadIDs := map[Key]bool{}
	for i := 0; i < 300; i++ {
		b := append(message(i), bytes.Repeat([]byte("x"), i%7*200)...)
		id := mustPut(t, s, KindMessage, b)
		if i%3 == 0 {
			deadIDs[id] = true
		} else {
			live[id] = b
		}
	}
	s.Sync()
	clk.Advance(time.Hour)
	fresh := mustPut(t, s, KindNote, []byte("written a moment ago, named by nothing yet"))
	s.Sync()
	isLive := func(id Key) bool { _, ok := live[id]; return ok }
	before, _ := s.Stats()
	dry, err := s.Collect(GCOptions{Live: isLive, Grace: 10 * time.Minute, DryRun: true})
	if err != nil || dry.Collectable != int64(len(deadIDs)) || dry.TooNew != 1 || dry.Reachable != int64(len(live)) {
		t.Fatalf("dry run: %+v %v", dry, err)
	}
	// The too-new object's stored bytes are counted apart: what a gc past
	// the grace would free (maintain's budget counts on them).
	if info, err := s.Stat(fresh); err != nil || info.Stored == 0 || dry.TooNewStored != info.Stored {
		t.Fatalf("too new stored %d, the fresh object's %+v %v", dry.TooNewStored, info, err)
	}
	if after, _ := s.Stats(); after.Disk.Total != before.Disk.Total || after.Objects != before.Objects {
		t.Fatal("a dry run changed the store")
	}
	rep, err := s.Collect(GCOptions{Live: isLive, Grace: 10 * time.Minute})
	if err != nil || rep.Collectable != int64(len(deadIDs)) || rep.SegmentsRemoved == 0 {
		t.Fatalf("gc: %+v %v", rep, err)
	}
	if rep.DiskAfter >= rep.DiskBefore {
		t.Fatalf("disk %d -> %d", rep.DiskBefore, rep.DiskAfter)
	}
	for id, b := range live {
		got, err := s.Get(id)
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("live object %s: %v", Short(id), err)
		}
	}
	for id := range deadIDs {
		var nf *NotFoundError
		if _, err := s.Get(id); !errors.As(err, &nf) {
			t.Fatalf("dead object %s still there: %v", Short(id), err)
		}
	}
	if _, err := s.Get(fresh); err != nil {
		t.Fatalf("too-new object collected: %v", err)
	}
	st, _ := s.Stats()
	if st.Objects != int64(len(live))+1 {
		t.Fatalf("objects after gc: %d", st.Objects)
	}
	if v, _ := s.Verify(nil); len(v.Problems) != 0 {
		t.Fatalf("verify after gc: %v", v.Problems)
	}
}

func TestRepackRecompressesWithDictionaries(t *testing.T) {
	s, _ := newStore(t, vfs.NewMem(), Options{})
	// Enough messages that the dictionary clearly pays for itself (with
	// fewer it is a close call, and training is not deterministic).
	var ids []Key
	for i := 0; i < 1500; i++ {
		ids = append(ids, mustPut(t, s, KindMessage, message(i)))
		if i%10 == 9 {
			s.Sync() // small blocks, as many small puts make
		}
	}
	s.Sync()
	if res, err := s.Train(TrainOptions{}); err != nil || !res[0].Kept {
		t.Fatalf("train: %+v %v", res, err)
	}
	rep, err := s.Repack(nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.StoredAfter*2 > rep.StoredBefore || rep.DiskAfter >= rep.DiskBefore {
		t.Fatalf("repack: %+v", rep)
	}
	for i, id := range ids {
		if got, err := s.Get(id); err != nil || !bytes.Equal(got, message(i)) {
			t.Fatalf("object %d after repack: %v", i, err)
		}
	}
	if v, _ := s.Verify(nil); len(v.Problems) != 0 || v.Orphans != 0 {
		t.Fatalf("verify after repack: %v, %d orphans", v.Problems, v.Orphans)
	}
}

// gcWorkload puts objects, marks a third dead, collects, repacks, and
// records which objects must survive.
func gcWorkload(fsys *vfs.MemFS, home string, live map[Key][]byte) error {
	clk := &clock.Fixed{T: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
	s, err := Open(home, Options{FS: fsys, Clock: clk, Writable: true, SegmentSize: 8 << 10})
	if err != nil {
		return err
	}
	defer s.Close()
	dead := map[Key]bool{}
	pending := map[Key][]byte{}
	for i := 0; i < 60; i++ {
		b := append(message(i), bytes.Repeat([]byte("y"), i%5*300)...)
		r, err := s.Put(KindMessage, b)
		if err != nil {
			return err
		}
		if i%3 == 0 {
			dead[r.ID] = true
		} else {
			pending[r.ID] = b
		}
	}
	if err := s.Sync(); err != nil {
		return err
	}
	for id, b := range pending {
		live[id] = b // acknowledged: from here on, no crash may lose them
	}
	clk.Advance(time.Hour)
	// A failed index compaction (or a segment kept because the index
	// could not be read to check it) is said in the report, not an error:
	// the rewrite is done. Here only an injected fault makes one.
	faulted := func(what string, left SegmentsLeft) error {
		if what == "" && len(left.KeptInPlace) == 0 {
			return nil
		}
		return fmt.Errorf("%w: %s %v", vfs.ErrInjected, what, left.KeptInPlace)
	}
	gc, err := s.Collect(GCOptions{Live: func(id Key) bool { return !dead[id] }, Grace: time.Minute})
	if err != nil {
		return err
	}
	if err := faulted(gc.IndexCompactionFailed, gc.SegmentsLeft); err != nil {
		return err
	}
	rp, err := s.Repack(nil)
	if err != nil {
		return err
	}
	if err := faulted(rp.IndexCompactionFailed, rp.SegmentsLeft); err != nil {
		return err
	}
	return s.Close()
}

// TestGCCrashSweep crashes gc and repack at every write and reopens: every
// live object is there and verify is clean.
func TestGCCrashSweep(t *testing.T) {
	var live map[Key][]byte
	n := vfstest.Sweep(t, rand.New(rand.NewPCG(5, 6)), 2, initCrashStore,
		func(fsys *vfs.MemFS) error { live = map[Key][]byte{}; return gcWorkload(fsys, crashHome, live) },
		func(k int, states []*vfs.MemFS) {
			for _, c := range states {
				s, err := Open(crashHome, Options{FS: c, Writable: true})
				if err != nil {
					t.Fatalf("crash at %d: open: %v", k, err)
				}
				for id, b := range live {
					got, err := s.Get(id)
					if err != nil || !bytes.Equal(got, b) {
						t.Fatalf("crash at %d: live object %s: %v (notices %v)", k, Short(id), err, s.Notices)
					}
				}
				if rep, err := s.Verify(nil); err != nil || len(rep.Problems) != 0 {
					t.Fatalf("crash at %d: verify: %v %v", k, err, rep.Problems)
				}
				s.Close()
			}
		})
	t.Logf("swept %d crash points", n)
}

// Training measures a dictionary in the blocks the kind's objects are in:
// bulk ones after an import (or gc, repack), everyday ones otherwise.
func TestTrainMeasuresInTheKindsPacking(t *testing.T) {
	for _, bulk := range []bool{false, true} {
		s, _ := newStore(t, nil, Options{})
		if err := s.SetBulk(bulk); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 6000; i++ { // ~2 MiB: two bulk blocks, or many small ones
			mustPut(t, s, KindMessage, message(i))
		}
		if err := s.SetBulk(false); err != nil {
			t.Fatal(err)
		}
		if err := s.Sync(); err != nil {
			t.Fatal(err)
		}
		objs, err := s.List(KindMessage, 0)
		if err != nil {
			t.Fatal(err)
		}
		blockSize, packMax := s.packingOf(objs)
		want, wantMax := s.opts.BlockSize, s.opts.PackMax
		if bulk {
			want, wantMax = s.opts.BulkBlockSize, s.opts.BulkPackMax
		}
		if blockSize != want || packMax != wantMax {
			t.Fatalf("written in bulk %v: measured in blocks of %d (objects alone from %d), want %d (%d)", bulk, blockSize, packMax, want, wantMax)
		}
	}
}

// TestReaderOpenedBeforeRepackStillReads: a reader that opened the store
// before a repack (or gc) in another process removed the segments its index
// names reads every object, from where the writer moved it: a segment gone
// under a reader is its stale view, not damage.
func TestReaderOpenedBeforeRepackStillReads(t *testing.T) {
	fsys := vfs.NewMem()
	s, home := newStore(t, fsys, Options{})
	var ids []Key
	for i := 0; i < 50; i++ {
		ids = append(ids, mustPut(t, s, KindMessage, bytes.Repeat([]byte(fmt.Sprintf("object %d ", i)), 40)))
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	r, err := Open(home, Options{FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := s.Repack(nil); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.Stat(filepath.Join(home, SegmentsDir, segName(1))); err == nil {
		t.Fatal("repack left segment 1")
	}
	for i, id := range ids {
		got, err := r.Get(id)
		if err != nil {
			t.Fatalf("object %d after the repack: %v", i, err)
		}
		if want := bytes.Repeat([]byte(fmt.Sprintf("object %d ", i)), 40); !bytes.Equal(got, want) {
			t.Fatalf("object %d: wrong bytes", i)
		}
	}
}

// A reader opened before a train and a repack in another process reads the
// objects the repack recompressed with the new dictionary: it loads a
// dictionary it has not seen from disk, rather than calling the object
// corrupt and the dictionary missing.
func TestReaderOpenedBeforeTrainAndRepackStillReads(t *testing.T) {
	fsys := vfs.NewMem()
	s, home := newStore(t, fsys, Options{})
	var ids []Key
	for i := 0; i < 400; i++ {
		ids = append(ids, mustPut(t, s, KindMessage, shaped(0, i)))
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	r, err := Open(home, Options{FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	res, err := s.Train(TrainOptions{Kinds: []Kind{KindMessage}, Samples: 200})
	if err != nil || !res[0].Kept {
		t.Fatalf("train: %+v %v", res, err)
	}
	if _, err := s.Repack(nil); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		got, err := r.Get(id)
		if err != nil {
			t.Fatalf("object %d after train and repack: %v", i, err)
		}
		if !bytes.Equal(got, shaped(0, i)) {
			t.Fatalf("object %d: wrong bytes", i)
		}
	}
}

// A reader's verify run while (here: after) a repack in another process
// committed and removed the segments its index named reports nothing: it
// reads the index's newest commit, not every object as "points at no
// record" with advice to put their bytes back.
func TestReaderVerifyAcrossRepackIsClean(t *testing.T) {
	fsys := vfs.NewMem()
	s, home := newStore(t, fsys, Options{})
	for i := 0; i < 50; i++ {
		mustPut(t, s, KindMessage, bytes.Repeat([]byte(fmt.Sprintf("object %d ", i)), 40))
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	r, err := Open(home, Options{FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := s.Repack(nil); err != nil {
		t.Fatal(err)
	}
	rep, err := r.Verify(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 0 || rep.Objects != 50 {
		t.Fatalf("verify after a repack in another process: %d objects, problems %v", rep.Objects, rep.Problems)
	}
}

// Training reports its progress by kind, the last call saying every kind
// is done: the CLI draws it on a terminal (`store train`, maintain).
func TestTrainReportsProgress(t *testing.T) {
	s, _ := newStore(t, vfs.NewMem(), Options{})
	for i := 0; i < 100; i++ {
		mustPut(t, s, KindMessage, message(i))
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	var calls [][2]int64
	res, err := s.Train(TrainOptions{DryRun: true, Progress: func(done, total int64) { calls = append(calls, [2]int64{done, total}) }})
	if err != nil {
		t.Fatal(err)
	}
	n := int64(len(Kinds))
	if len(res) != len(Kinds) || len(calls) != len(Kinds)+1 {
		t.Fatalf("%d results, progress calls %v; want %d kinds", len(res), calls, n)
	}
	for i, c := range calls {
		if c != [2]int64{int64(i), n} {
			t.Fatalf("progress call %d: %v, want [%d %d] (all: %v)", i, c, i, n, calls)
		}
	}
}

// An index entry gc cannot decode (damaged, or written by a newer rook)
// stops the plan with an error naming it: the plan is of every entry or of
// none. (The error found inside the walk was overwritten by the walk's own
// nil, and gc planned, and swept, from the entries before it.)
func TestGCPlanStopsAtAnEntryItCannotDecode(t *testing.T) {
	s, _ := newStore(t, nil, Options{})
	var ids []Key
	for i := 0; i < 20; i++ {
		ids = append(ids, mustPut(t, s, KindMessage, message(i)))
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	// The smallest id, so the walk meets it before any other entry.
	bad := ids[0]
	for _, id := range ids {
		if bytes.Compare(id[:], bad[:]) < 0 {
			bad = id
		}
	}
	s.mu.Lock()
	err := s.tree.Put(bad, []byte{0x70, 0, 0, 0, 0, 0, 0, 0}) // entry version 7
	if err == nil {
		err = s.tree.Commit(s.ctr.encode())
	}
	s.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	for _, dry := range []bool{true, false} {
		rep, err := s.Collect(GCOptions{DryRun: dry})
		if err == nil || !strings.Contains(err.Error(), Short(bad)) || !strings.Contains(err.Error(), "nothing collected") {
			t.Fatalf("dry run %v: err %v, report %+v: want the undecodable entry %s named", dry, err, rep, Short(bad))
		}
	}
	// Nothing was collected: every other object still reads.
	for _, id := range ids {
		if id == bad {
			continue
		}
		if _, err := s.Get(id); err != nil {
			t.Fatalf("%s: %v", Short(id), err)
		}
	}
}

// A damaged segment moved to torn/ whose directory sync then failed was
// reported as kept in place (`kept damaged segment`, verify to list what
// it affects) with no error, though it was gone from segments/. The move
// is reported as a move, and the failed sync as the error it is.
func TestRepackReportsAMoveWhoseSyncFailed(t *testing.T) {
	fsys := vfs.NewMem()
	s, home := newStore(t, fsys, Options{})
	id := mustPut(t, s, KindFile, noise(5000, 1))
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	e, ok, err := s.lookup(id)
	if err != nil || !ok || e.Inline {
		t.Fatalf("lookup: %+v %v %v", e, ok, err)
	}
	s.Close()
	seg := filepath.Join(home, SegmentsDir, segName(e.Loc.Segment))
	flip(t, fsys, seg, e.Loc.Offset+100)
	s, err = Open(home, Options{FS: fsys, Clock: testClock(), Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Nothing points into the damaged segment any more (its object
	// forgotten, as a reindex does with what does not read).
	s.mu.Lock()
	s.tree.Delete(id)
	err = s.tree.Commit(s.ctr.encode())
	s.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	fsys.SetHook(func(op vfs.Op, path string) error {
		if op == vfs.OpSyncDir && filepath.Base(path) == TornDir {
			return errors.New("injected sync failure")
		}
		return nil
	})
	rep, err := s.Repack(nil)
	fsys.SetHook(nil)
	if _, serr := fsys.Stat(seg); serr == nil {
		t.Fatalf("segment not moved: report %+v, %v", rep, err)
	}
	if err == nil || !strings.Contains(err.Error(), "injected sync failure") || len(rep.Kept) != 0 || len(rep.MovedDamaged) != 1 {
		t.Fatalf("segment moved to torn/, sync failed: report kept %v, moved %v; err %v", rep.Kept, rep.MovedDamaged, err)
	}
}

// A damaged segment no entry points into can still hold the one copy of
// an object that reads: an older copy, the entry naming a newer one that
// is damaged. It was moved to torn/ all the same, where a reindex (which
// takes in every copy that reads) no longer finds it. It is kept, or its
// copy moved into a new block before the segment goes.
func TestRepackKeepsADamagedSegmentWithTheOnlyCopyThatReads(t *testing.T) {
	fsys := vfs.NewMem()
	s, home := newStore(t, fsys, Options{})
	x := mustPut(t, s, KindFile, noise(5000, 1))
	if err := s.Sync(); err != nil { // a record of its own
		t.Fatal(err)
	}
	y := mustPut(t, s, KindFile, noise(5000, 2))
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	ex, _, _ := s.lookup(x)
	ey, _, _ := s.lookup(y)
	if ex.Inline || ey.Inline || ex.Loc.Segment != ey.Loc.Segment || ex.Loc.Offset == ey.Loc.Offset {
		t.Fatalf("x %+v, y %+v: want two records of one segment", ex.Loc, ey.Loc)
	}
	// A second copy of x in a segment of its own, the one its entry names.
	s.mu.Lock()
	s.tree.Delete(x)
	err := s.tree.Commit(s.ctr.encode())
	if err == nil {
		err = s.startSegment()
	}
	s.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, s, KindFile, noise(5000, 1))
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	ex2, _, _ := s.lookup(x)
	if ex2.Loc.Segment == ex.Loc.Segment {
		t.Fatalf("second copy of x in segment %d too", ex2.Loc.Segment)
	}
	s.Close()
	old := filepath.Join(home, SegmentsDir, segName(ex.Loc.Segment))
	flip(t, fsys, old, ey.Loc.Offset+100)                                                         // y's record
	flip(t, fsys, filepath.Join(home, SegmentsDir, segName(ex2.Loc.Segment)), ex2.Loc.Offset+100) // x's newer copy
	s, err = Open(home, Options{FS: fsys, Clock: testClock(), Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.mu.Lock()
	s.tree.Delete(y) // forgotten, as a reindex forgets what does not read
	err = s.tree.Commit(s.ctr.encode())
	s.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := s.Repack(nil)
	if err != nil {
		t.Fatal(err)
	}
	// The copy that reads repairs x's entry (moved into a new block);
	// only then may its damaged segment go to torn/.
	if got, gerr := s.Get(x); gerr != nil || !bytes.Equal(got, noise(5000, 1)) {
		_, serr := fsys.Stat(old)
		t.Fatalf("segment %s, the only copy of %s that reads: %v; %s: %v; moved %v, kept %v", segName(ex.Loc.Segment), Short(x), serr, Short(x), gerr, rep.MovedDamaged, rep.Kept)
	}
}

// An object whose entry names a damaged copy can have a spare copy that
// reads in another, undamaged segment (an older, superseded one). A gc or
// repack rewriting that segment took the spare for a stale copy and
// deleted it with the segment: the object was lost for good. The spare
// repairs the entry instead, as putting the bytes again does.
func TestRewriteRepairsFromASpareCopy(t *testing.T) {
	for _, op := range []string{"gc", "repack"} {
		t.Run(op, func(t *testing.T) {
			fsys := vfs.NewMem()
			s, home := newStore(t, fsys, Options{Clock: testClock()})
			data := noise(5000, 1)
			x := mustPut(t, s, KindFile, data)
			if err := s.Sync(); err != nil {
				t.Fatal(err)
			}
			spare, _, _ := s.lookup(x)
			// A second copy of x in a segment of its own, the one its
			// entry names.
			s.mu.Lock()
			s.tree.Delete(x)
			err := s.tree.Commit(s.ctr.encode())
			if err == nil {
				err = s.startSegment()
			}
			s.mu.Unlock()
			if err != nil {
				t.Fatal(err)
			}
			mustPut(t, s, KindFile, data)
			if err := s.Sync(); err != nil {
				t.Fatal(err)
			}
			named, _, _ := s.lookup(x)
			if spare.Inline || named.Loc.Segment == spare.Loc.Segment {
				t.Fatalf("spare %+v, named %+v: want two segments", spare.Loc, named.Loc)
			}
			s.Close()
			flip(t, fsys, filepath.Join(home, SegmentsDir, segName(named.Loc.Segment)), named.Loc.Offset+100)
			s, err = Open(home, Options{FS: fsys, Clock: testClock(), Writable: true})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if _, err := s.Get(x); err == nil {
				t.Fatal("the named copy reads: damage not made")
			}
			if op == "gc" {
				_, err = s.Collect(GCOptions{Live: func(Key) bool { return true }})
			} else {
				_, err = s.Repack(nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, err := s.Get(x); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("%s threw away the spare copy: %v", op, err)
			}
			rep, err := s.Verify(nil)
			if err != nil || rep.Unreadable != 0 {
				t.Fatalf("verify after %s: %d unreadable, %v %v", op, rep.Unreadable, rep.Problems, err)
			}
		})
	}
}

// A reindex carries over the old index's entries of records waiting for a
// dictionary. It ignored the error of a walk that met a damaged node: the
// objects past it silently got no entry. It keeps what it read, and says so.
func TestReindexReportsADamagedOldIndex(t *testing.T) {
	fsys := vfs.NewMem()
	s, home := newStore(t, fsys, Options{})
	for i := 0; i < 1500; i++ {
		mustPut(t, s, KindMessage, message(i))
	}
	s.Sync()
	res, err := s.Train(TrainOptions{})
	if err != nil || !res[0].Kept {
		t.Fatalf("%+v %v", res, err)
	}
	for i := 1500; i < 1600; i++ {
		mustPut(t, s, KindMessage, message(i))
	}
	s.Close()
	// Damage a node the walk meets about half way.
	idx := filepath.Join(home, IndexDir, IndexFile)
	b, _ := vfs.ReadFile(fsys, idx)
	var c *vfs.MemFS
	for off := int64(8192); off < int64(len(b)) && c == nil; off += 101 {
		try := fsys.CrashClone()
		flip(t, try, idx, off)
		tr, err := index.Open(try, idx, false)
		if err != nil {
			continue
		}
		n := 0
		err = tr.Snapshot().Ascend(Key{}, func(Key, []byte) bool { n++; return true })
		tr.Close()
		if err != nil && n > 400 && n < 1200 {
			c = try
		}
	}
	if c == nil {
		t.Fatal("no index node to damage found")
	}
	if err := c.Remove(filepath.Join(home, DictDir, dict.FileName(res[0].DictID))); err != nil {
		t.Fatal(err)
	}
	w, err := Open(home, Options{FS: c, Writable: true, ForReindex: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rep, err := w.Reindex(nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Carried == 0 || rep.Carried >= 100 || !strings.Contains(rep.CarryErr, "old index") {
		t.Fatalf("reindex over a damaged old index: carried %d, carry error %q (%+v, %v)", rep.Carried, rep.CarryErr, rep, w.Notices)
	}
	if st, _ := w.Stats(); st.Objects != int64(1500+rep.Carried) {
		t.Fatalf("objects after reindex %d, carried %d", st.Objects, rep.Carried)
	}
}

// `rook store repack` recompresses every record of a kind with the kind's
// newest dictionary after a retrain (README: "rook store repack  #
// recompress everything with the current dictionaries"), keeps the older
// dictionary file, and every object reads back; a second repack changes
// nothing in the stored figures (idempotent).
func TestRepackUsesTheNewestDictionary(t *testing.T) {
	s, _ := newStore(t, nil, Options{})
	defer s.Close()
	want := map[Key][]byte{}
	put := func(shape string, from, to int) {
		for i := from; i < to; i++ {
			b := []byte(fmt.Sprintf(`{"role":"assistant","shape":%q,"content":[{"type":"text","text":"%s step %d: reading src/turn_%d.rs and running the tests"}],"usage":{"input_tokens":%d}}`, shape, shape, i, i*7, i*37))
			want[mustPut(t, s, KindMessage, b)] = b
		}
		if err := s.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	put("alpha-shape-of-the-first-agent", 0, 1500)
	r1, err := s.Train(TrainOptions{Kinds: []Kind{KindMessage}})
	if err != nil || len(r1) != 1 || !r1[0].Kept {
		t.Skipf("no first dictionary: %+v %v", r1, err)
	}
	put("omega-another-agent-entirely-different-words-zebra-quokka", 1500, 3000)
	r2, err := s.Train(TrainOptions{Kinds: []Kind{KindMessage}})
	if err != nil || len(r2) != 1 || !r2[0].Kept {
		t.Skipf("no second dictionary: %+v %v", r2, err)
	}
	rep, err := s.Repack(nil)
	if err != nil {
		t.Fatal(err)
	}
	segs, err := s.listSegments()
	if err != nil {
		t.Fatal(err)
	}
	dicts := map[uint32]int{}
	for _, n := range segs {
		if _, _, err := s.scanSegment(n, 0, func(r *scannedRecord) error {
			if r.h.Kind == KindMessage && r.h.Codec != 0 {
				dicts[r.h.Dict]++
			}
			return nil
		}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if len(dicts) != 1 || dicts[r2[0].DictID] == 0 {
		t.Errorf("after the repack, message records by dictionary: %v; want all with dictionary %d", dicts, r2[0].DictID)
	}
	if len(s.Dictionaries()) != 2 {
		t.Errorf("dictionaries after the retrain and repack: %+v, want both kept", s.Dictionaries())
	}
	for id, b := range want {
		got, err := s.Get(id)
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("%s after repack: %v", Short(id), err)
		}
	}
	rep2, err := s.Repack(nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep2.StoredAfter != rep.StoredAfter || rep2.StoredBefore != rep.StoredAfter {
		t.Errorf("a second repack: %+v after the first %+v: not idempotent", rep2, rep)
	}
}
