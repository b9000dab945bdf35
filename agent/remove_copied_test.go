package agent

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/clock"
	"github.com/rookhq/rook/internal/vfs"
)

// TestRemoveParentOfACodexForkCrashSweep removes the imported parent of
// a Codex fork (whose totals leave its copied token_counts out) with a
// fork made in rook of the fork, crashed at every write in turn, for both
// import orders. A crash leaves the parent with each of the forks' totals
// as before or as after, never the parent removed with the copied tokens
// counted nowhere; rm again ends with the fork and its fork counting
// them.
func TestRemoveParentOfACodexForkCrashSweep(t *testing.T) {
	for _, parentFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("parentFirst=%v", parentFirst), func(t *testing.T) { removeParentCrashSweep(t, parentFirst) })
	}
}

func removeParentCrashSweep(t *testing.T, parentFirst bool) {
	clk := &clock.Fixed{T: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	open := func(fsys vfs.FS) *Rook {
		t.Helper()
		r, err := Open(crashHome, Options{FS: fsys, Clock: clk, Writable: true})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	base := vfs.NewMem()
	initCrashStore(base)
	paths, lines := codexForkFiles(sameLine)
	r := open(base)
	order := []int{0, 1}
	if !parentFirst {
		order = []int{1, 0}
	}
	var ids [2]eventlog.ID
	for _, i := range order {
		writeSource(t, base, paths[i], lines[i], "")
		ids[i] = *fileByPath(t, mustImport(t, r, FormatCodex, paths[i]), paths[i]).Session
	}
	pid, fid := ids[0], ids[1]
	totals := func(r *Rook, id eventlog.ID) [2]uint64 {
		t.Helper()
		s, err := r.Log.Summary(id)
		if err != nil {
			t.Fatal(err)
		}
		return [2]uint64{s.TokensIn, s.TokensOut}
	}
	fs, err := r.Log.Summary(fid)
	if err != nil {
		t.Fatal(err)
	}
	rf, err := r.Log.Fork(fid, fs.Events, eventlog.Meta{Title: "rf"})
	if err != nil {
		t.Fatal(err)
	}
	parent, before := totals(r, pid), totals(r, fid)
	if parent[0] == 0 || totals(r, rf.ID) != before {
		t.Fatalf("parent %v, fork %v, its fork %v", parent, before, totals(r, rf.ID))
	}
	// Once the parent is gone, the fork counts what it copied of it: all
	// of the parent's tokens (its rollout copies the parent's whole).
	after := [2]uint64{before[0] + parent[0], before[1] + parent[1]}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}

	check := func(what string, r *Rook, removed bool) {
		t.Helper()
		f, g := totals(r, fid), totals(r, rf.ID)
		if removed && (f != after || g != after) {
			t.Fatalf("%s: the parent is removed, the fork counts %v and its fork %v, want %v", what, f, g, after)
		}
		for _, got := range [][2]uint64{f, g} {
			if got != before && got != after {
				t.Fatalf("%s: the fork counts %v, its fork %v: want %v or %v", what, f, g, before, after)
			}
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for k := 0; ; k++ {
		fsys := base.CrashClone()
		var states []*vfs.MemFS
		fsys.CrashAtClones(k, rng, 1, func(c []*vfs.MemFS) { states = c })
		r, err := Open(crashHome, Options{FS: fsys, Clock: clk, Writable: true})
		if err == nil {
			_, err = r.RemoveSession(pid)
			if cerr := r.Close(); err == nil {
				err = cerr
			}
		}
		if states == nil {
			if err != nil {
				t.Fatalf("no crash at write %d, but rm failed: %v", k, err)
			}
			r = open(fsys.CrashClone())
			check("no crash", r, true)
			r.Close()
			if k == 0 {
				t.Fatal("rm wrote nothing")
			}
			t.Logf("swept %d crash points", k)
			return
		}
		for i, s := range states {
			what := fmt.Sprintf("crash at write %d (state %d)", k, i)
			r := open(s)
			_, gone := r.Log.Summary(pid)
			check(what, r, gone != nil)
			if gone == nil {
				if _, err := r.RemoveSession(pid); err != nil {
					t.Fatalf("%s: rm again: %v", what, err)
				}
			}
			check(what+", rm again", r, true)
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// Removing the middle of a chain of Codex forks (p, its fork f, f's fork
// g, imported in one run): g counts again what it copied of f's own turns,
// but not what f had copied of p, which p still counts.
// Retention (sessionRemover) does as rm does.
func TestRemoveTheMiddleOfACodexForkChain(t *testing.T) {
	for _, batch := range []bool{false, true} {
		t.Run(fmt.Sprintf("batch=%v", batch), func(t *testing.T) { removeTheMiddleOfACodexForkChain(t, batch) })
	}
}

func removeTheMiddleOfACodexForkChain(t *testing.T, batch bool) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	paths, lines := codexForkFiles(sameLine)
	for i := range paths {
		writeSource(t, fsys, paths[i], lines[i], "")
	}
	rep := mustImport(t, r, FormatCodex, "/c")
	var ids [3]eventlog.ID
	for i := range paths {
		ids[i] = *fileByPath(t, rep, paths[i]).Session
	}
	tokensOf(t, r, ids[0], "p", 3000, 30)
	tokensOf(t, r, ids[1], "f", 3000, 30)
	tokensOf(t, r, ids[2], "g", 4000, 40)
	if _, err := r.RemoveSession(ids[1]); err != nil {
		t.Fatal(err)
	}
	tokensOf(t, r, ids[0], "p, f removed", 3000, 30)
	tokensOf(t, r, ids[2], "g, f removed", 7000, 70)
	// f imported again: g leaves out what it copied of f again.
	rep = mustImport(t, r, FormatCodex, "/c")
	tokensOf(t, r, *fileByPath(t, rep, paths[1]).Session, "f again", 3000, 30)
	tokensOf(t, r, ids[2], "g, f imported again", 4000, 40)
	// Retention removes f and then p with one index of the forks, made
	// before f went: it must reach g through p after.
	remove := r.RemoveSession
	if batch {
		rm := sessionRemover{r: r}
		remove = rm.remove
	}
	if _, err := remove(*fileByPath(t, rep, paths[1]).Session); err != nil {
		t.Fatal(err)
	}
	tokensOf(t, r, ids[2], "g, f removed again", 7000, 70)
	if _, err := remove(ids[0]); err != nil {
		t.Fatal(err)
	}
	tokensOf(t, r, ids[2], "g, p and f removed", 10000, 100)
}

// A fork made in rook of an imported Codex fork leaves out, as the fork
// does, what the fork copied of its parent. The fork removed, and then the
// parent: the fork made in rook counts it again. It was left out for good
// (counted nowhere): nothing linked it to the parent once the fork was gone.
func TestRemoveAForkThenItsParentReachesTheForkMadeInRook(t *testing.T) {
	for _, batch := range []bool{false, true} {
		t.Run(fmt.Sprintf("batch=%v", batch), func(t *testing.T) {
			fsys := vfs.NewMem()
			r := testRook(t, fsys)
			paths, lines := codexForkFiles(sameLine)
			for i := range 2 {
				writeSource(t, fsys, paths[i], lines[i], "")
			}
			rep := mustImport(t, r, FormatCodex, "/c")
			pid, fid := *fileByPath(t, rep, paths[0]).Session, *fileByPath(t, rep, paths[1]).Session
			fs, err := r.Log.Summary(fid)
			if err != nil {
				t.Fatal(err)
			}
			rf, err := r.Log.Fork(fid, fs.Events, eventlog.Meta{Title: "rf"})
			if err != nil {
				t.Fatal(err)
			}
			tokensOf(t, r, rf.ID, "the fork made in rook", 3000, 30)
			remove := r.RemoveSession
			if batch {
				rm := sessionRemover{r: r}
				remove = rm.remove
			}
			if _, err := remove(fid); err != nil {
				t.Fatal(err)
			}
			tokensOf(t, r, rf.ID, "the fork made in rook, the fork removed", 3000, 30)
			if _, err := remove(pid); err != nil {
				t.Fatal(err)
			}
			tokensOf(t, r, rf.ID, "the fork made in rook, the fork and the parent removed", 6000, 60)
		})
	}
}

// A fork of a Codex fork made before the fork's own turns copies only
// what the fork copied of the parent: removing the fork leaves the fork of
// it leaving all of that out, and it must still reach it once the parent
// is removed too. It was not reached (the fork of the fork, its totals
// unchanged, was never linked to the parent): the tokens counted nowhere.
func TestRemoveAForkThenItsParentReachesAForkOfItsCopy(t *testing.T) {
	for _, batch := range []bool{false, true} {
		t.Run(fmt.Sprintf("batch=%v", batch), func(t *testing.T) {
			fsys := vfs.NewMem()
			r := testRook(t, fsys)
			var total [2]int
			p := []codexItem{codexMetaItem(codexPID, "")}
			p = append(p, codexTurnItems(1, &total)...)
			p = append(p, codexTurnItems(2, &total)...)
			f := append([]codexItem{codexMetaItem(codexFID, codexPID)}, p...)
			g := append([]codexItem{codexMetaItem(codexGID, codexFID)}, f...) // f before its own turn
			f = append(f, codexTurnItems(3, &total)...)
			g = append(g, codexTurnItems(4, &total)...)
			var paths [3]string
			for i, c := range []struct {
				id    string
				items []codexItem
			}{{codexPID, p}, {codexFID, f}, {codexGID, g}} {
				paths[i] = fmt.Sprintf("/c/2026/02/03/rollout-2026-02-03T1%d-00-00-%s.jsonl", i, c.id)
				writeSource(t, fsys, paths[i], codexStamped(c.items, 10+i, 0), "")
			}
			rep := mustImport(t, r, FormatCodex, "/c")
			var ids [3]eventlog.ID
			for i := range paths {
				ids[i] = *fileByPath(t, rep, paths[i]).Session
			}
			tokensOf(t, r, ids[2], "g", 4000, 40)
			remove := r.RemoveSession
			if batch {
				rm := sessionRemover{r: r}
				remove = rm.remove
			}
			if _, err := remove(ids[1]); err != nil {
				t.Fatal(err)
			}
			tokensOf(t, r, ids[2], "g, f removed", 4000, 40)
			if _, err := remove(ids[0]); err != nil {
				t.Fatal(err)
			}
			tokensOf(t, r, ids[2], "g, f and p removed", 7000, 70)
		})
	}
}

// Past two removals: the imported fork removed, then the fork made in rook
// of it, a fork made in rook of that one still counts what they copied of
// the parent once the parent goes too. It was linked to the removed
// imported fork (where its copy came from), not to the parent that counts
// the tokens it leaves out: they counted nowhere.
func TestRemoveAChainOfForksThenTheParentReachesTheLastFork(t *testing.T) {
	for _, batch := range []bool{false, true} {
		t.Run(fmt.Sprintf("batch=%v", batch), func(t *testing.T) {
			fsys := vfs.NewMem()
			r := testRook(t, fsys)
			paths, lines := codexForkFiles(sameLine)
			for i := range 2 {
				writeSource(t, fsys, paths[i], lines[i], "")
			}
			rep := mustImport(t, r, FormatCodex, "/c")
			pid, fid := *fileByPath(t, rep, paths[0]).Session, *fileByPath(t, rep, paths[1]).Session
			fork := func(id eventlog.ID) eventlog.ID {
				s, err := r.Log.Summary(id)
				if err != nil {
					t.Fatal(err)
				}
				m, err := r.Log.Fork(id, s.Events, eventlog.Meta{Title: "rf"})
				if err != nil {
					t.Fatal(err)
				}
				return m.ID
			}
			rf := fork(fid)
			rg := fork(rf)
			tokensOf(t, r, rg, "the fork of the fork made in rook", 3000, 30)
			remove := r.RemoveSession
			if batch {
				rm := sessionRemover{r: r}
				remove = rm.remove
			}
			for _, id := range []eventlog.ID{fid, rf} {
				if _, err := remove(id); err != nil {
					t.Fatal(err)
				}
			}
			tokensOf(t, r, rg, "the fork of the fork made in rook, the fork and its fork removed", 3000, 30)
			if _, err := remove(pid); err != nil {
				t.Fatal(err)
			}
			tokensOf(t, r, rg, "the fork of the fork made in rook, the parent removed too", 6000, 60)
		})
	}
}
