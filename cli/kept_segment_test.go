package cli

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rookhq/rook/agent"
	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/internal/vfs"
)

// `rook store repack` called a segment it kept because the index could
// not be read "kept damaged segment" (and counted it among the damaged
// in its verdict and in kept_damaged): nothing said it was damaged. It
// now says it is kept and not known to be damaged, and --json gives its
// reason in kept.
func TestRepackKeptForAnUnreadableIndexIsNotCalledDamaged(t *testing.T) {
	home := "/home/u/.rook"
	for _, asJSON := range []bool{false, true} {
		fsys := newMemStore(t, home, 20)
		// The index's reads fail from the repack's commit on.
		failIndexReads(fsys, home, func(op vfs.Op, path string) bool {
			return op == vfs.OpSync && filepath.Dir(path) == filepath.Join(home, cas.IndexDir)
		})
		var out, errb bytes.Buffer
		err := (&StoreRepackCmd{}).Run(&Env{Stdout: &out, Stderr: &errb, FS: fsys, Home: home, JSON: asJSON})
		fsys.SetHook(nil)
		if err == nil || strings.Contains(err.Error(), "damaged segment") || !strings.Contains(err.Error(), "1 segment(s) kept in place, not known to be damaged") {
			t.Errorf("json %v: verdict %v: want the segment kept, not called damaged", asJSON, err)
		}
		if !asJSON {
			if strings.Contains(out.String(), "damaged segment") || !strings.Contains(out.String(), "kept segment 00000001.seg (not known to be damaged: the index could not be read") {
				t.Errorf("output:\n%s\nwant 00000001.seg kept, not known to be damaged", out.String())
			}
			continue
		}
		var rep struct {
			KeptDamaged []string          `json:"kept_damaged"`
			Kept        []cas.KeptInPlace `json:"kept"`
		}
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatalf("%v: %s", err, out.String())
		}
		if len(rep.KeptDamaged) != 0 || len(rep.Kept) != 1 || rep.Kept[0].Reason != cas.KeptIndexUnreadable || rep.Kept[0].Segment != "00000001.seg" {
			t.Errorf("--json: %s: want 00000001.seg in kept with reason %s, and no kept_damaged", out.String(), cas.KeptIndexUnreadable)
		}
	}
}

// maintain's text named no segment its gc kept or moved (only --json
// did); it names them as gc does, those of the budget's rounds too, and
// calls one kept for an unreadable index what it is.
func TestPrintMaintainNamesSegmentsKeptAndMoved(t *testing.T) {
	rep := agent.MaintainReport{
		GC: cas.GCReport{SegmentsLeft: cas.SegmentsLeft{MovedDamaged: []string{"00000001.seg (x) (no object needs it any more; kept as T)"},
			KeptInPlace: []cas.KeptInPlace{{Segment: "00000002.seg", Reason: cas.KeptDamaged, Detail: "00000002.seg (y)"}}}},
		Budget: 1000, BudgetRounds: 1, BudgetDeleted: []agent.SessionRef{},
		BudgetGC: []cas.GCReport{{SegmentsLeft: cas.SegmentsLeft{KeptInPlace: []cas.KeptInPlace{{Segment: "00000003.seg", Reason: cas.KeptIndexUnreadable, Detail: "00000003.seg (not known to be damaged: z)"}}}}},
	}
	var out bytes.Buffer
	printMaintain(&out, rep)
	for _, want := range []string{
		"\ngc: moved damaged segment 00000001.seg (x) (no object needs it any more; kept as T)\n",
		"\ngc: kept damaged segment 00000002.seg (y): `rook store verify` lists what it affects\n",
		"\nbudget: gc: kept segment 00000003.seg (not known to be damaged: z)\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output:\n%s\nwant the line %q", out.String(), strings.TrimSpace(want))
		}
	}
}

// A repack whose index commit is made and whose index compaction after it
// fails (a full disk: the compaction writes a copy of the index beside
// it) is done: the old segments are removed, it exits 0, and it says what
// the failed compaction costs (stderr: "rook: note: the index was not
// compacted ..."; --json: index_compaction_failed). Before, it failed
// with "compact index: ...: the disk ... is full: free space, then run the
// command again (it recovers what this one wrote)" and left the old
// segments: nothing recovered them.
func TestRepackWhoseIndexCompactionFailsIsDoneAndSaysSo(t *testing.T) {
	home := "/home/u/.rook"
	for _, asJSON := range []bool{false, true} {
		fsys := newMemStore(t, home, 20)
		compacting := 0
		fsys.SetHook(func(op vfs.Op, path string) error {
			if op == vfs.OpWrite && strings.HasSuffix(path, ".tmp") && filepath.Dir(path) == filepath.Join(home, cas.IndexDir) {
				compacting++
				return syscall.ENOSPC
			}
			return nil
		})
		var out, errb bytes.Buffer
		err := (&StoreRepackCmd{}).Run(&Env{Stdout: &out, Stderr: &errb, FS: fsys, Home: home, JSON: asJSON})
		fsys.SetHook(nil)
		if compacting == 0 {
			t.Fatalf("json %v: no compaction ran", asJSON)
		}
		if err != nil {
			t.Errorf("json %v: the repack, its index committed, failed: %v", asJSON, err)
		}
		if ents, rerr := fsys.ReadDir(filepath.Join(home, cas.SegmentsDir)); rerr != nil || len(ents) != 1 || ents[0].Name() == "00000001.seg" {
			t.Errorf("json %v: segments after the repack: %v %v, want the new one alone", asJSON, ents, rerr)
		}
		if !asJSON {
			if !strings.Contains(errb.String(), "rook: note: the index was not compacted (") || !strings.Contains(errb.String(), "until the next compaction") {
				t.Errorf("stderr:\n%s\nwant a note that the index was not compacted, and what it costs", errb.String())
			}
			continue
		}
		var rep struct {
			Failed string `json:"index_compaction_failed"`
		}
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatalf("%v: %s", err, out.String())
		}
		if !strings.Contains(rep.Failed, "no space left on device") {
			t.Errorf("--json: %s: want index_compaction_failed naming the failure", out.String())
		}
	}
}

// `rook store maintain` whose gc committed but could not compact the
// index after (a full disk) said nothing of it in its text, where gc and
// repack note it on stderr: it notes it the same way, once.
func TestMaintainNotesAnIndexCompactionThatFailed(t *testing.T) {
	home := "/home/u/.rook"
	fsys := newMemStore(t, home, 20)
	if err := fsys.WriteFileAtomic(filepath.Join(home, agent.ConfigFile), []byte("[storage]\ngc_grace = \"0s\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	compacting := 0
	fsys.SetHook(func(op vfs.Op, path string) error {
		if op == vfs.OpWrite && strings.HasSuffix(path, ".tmp") && filepath.Dir(path) == filepath.Join(home, cas.IndexDir) {
			compacting++
			return syscall.ENOSPC
		}
		return nil
	})
	var out, errb bytes.Buffer
	err := (&StoreMaintainCmd{}).Run(&Env{Stdout: &out, Stderr: &errb, FS: fsys, Home: home})
	fsys.SetHook(nil)
	if compacting == 0 {
		t.Fatal("no compaction ran")
	}
	if err != nil {
		t.Errorf("maintain, its gc committed, failed: %v", err)
	}
	if n := strings.Count(errb.String(), "rook: note: the index was not compacted ("); n != 1 {
		t.Errorf("stdout:\n%s\nstderr:\n%s\nwant one note that the index was not compacted, got %d", out.String(), errb.String(), n)
	}
}
