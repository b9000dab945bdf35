package agent

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// codexForkPairs writes n Codex parents (turns 1 and 2), each with a fork
// (the parent copied, then turn 3), and imports them: the parents' ids,
// then the forks'. The parents' lines are older than the forks', so
// retention by max_sessions deletes the parents first.
func codexForkPairs(t *testing.T, fsys *vfs.MemFS, r *Rook, n int) (parents, forks []eventlog.ID) {
	t.Helper()
	var paths [2][]string
	for i := range n {
		pid := fmt.Sprintf("019c1000-0000-7000-8000-%012x", 0x100+i)
		fid := fmt.Sprintf("019c1000-0000-7000-8000-%012x", 0x200+i)
		var total [2]int
		p := []codexItem{codexMetaItem(pid, "")}
		p = append(p, codexTurnItems(1, &total)...)
		p = append(p, codexTurnItems(2, &total)...)
		f := append([]codexItem{codexMetaItem(fid, pid)}, p...)
		f = append(f, codexTurnItems(3, &total)...)
		for k, c := range []struct {
			id    string
			items []codexItem
			hour  int
		}{{pid, p, 10}, {fid, f, 12}} {
			path := fmt.Sprintf("/c/2026/02/03/rollout-2026-02-03T%02d-%02d-00-%s.jsonl", c.hour, i, c.id)
			writeSource(t, fsys, path, codexStamped(c.items, c.hour, i), "")
			paths[k] = append(paths[k], path)
		}
	}
	rep := mustImport(t, r, FormatCodex, "/c")
	for i := range n {
		parents = append(parents, *fileByPath(t, rep, paths[0][i]).Session)
		forks = append(forks, *fileByPath(t, rep, paths[1][i]).Session)
	}
	return parents, forks
}

// metaReads counts, from now on, the reads of each session's metadata
// file, by session id.
func metaReads(fsys *vfs.MemFS) map[string]int {
	var mu sync.Mutex
	reads := map[string]int{}
	fsys.SetHook(func(op vfs.Op, path string) error {
		if id, ok := strings.CutSuffix(filepath.Base(path), ".meta"); ok && op == vfs.OpOpenRead {
			mu.Lock()
			reads[id]++
			mu.Unlock()
		}
		return nil
	})
	return reads
}

// forkStore is a store of n imported Codex parents, each with an
// imported fork and a fork made in rook of that fork, and of bystanders
// sessions that have nothing to do with them.
type forkStore struct {
	fsys                   *vfs.MemFS
	r                      *Rook
	parents, forks, inRook []eventlog.ID
	bystanders             []eventlog.ID
}

func newForkStore(t *testing.T, n, bystanders int) forkStore {
	t.Helper()
	s := forkStore{fsys: vfs.NewMem()}
	s.r = testRook(t, s.fsys)
	s.parents, s.forks = codexForkPairs(t, s.fsys, s.r, n)
	for _, f := range s.forks {
		sum, err := s.r.Log.Summary(f)
		if err != nil {
			t.Fatal(err)
		}
		rf, err := s.r.Log.Fork(f, sum.Events, eventlog.Meta{Title: "rf"})
		if err != nil {
			t.Fatal(err)
		}
		s.inRook = append(s.inRook, rf.ID)
	}
	for range bystanders {
		s.bystanders = append(s.bystanders, newSession(t, s.r))
	}
	if err := s.r.Flush(); err != nil {
		t.Fatal(err)
	}
	return s
}

// totals are a session's token totals.
func (s forkStore) totals(t *testing.T, id eventlog.ID) [2]uint64 {
	t.Helper()
	sum, err := s.r.Log.Summary(id)
	if err != nil {
		t.Fatal(err)
	}
	return [2]uint64{sum.TokensIn, sum.TokensOut}
}

// A prune that deletes many imported Codex parents, each copied by a fork
// whose totals leave the copy out, reads every session's metadata once to
// find who copied what (besides the listing that ranks them), not once
// more for each parent: it read the whole store's metadata again for each
// (forksMadeInRook), a prune of n parents in a store of s sessions
// reading n×s files. The totals it leaves are those of removing the same
// sessions one by one with `session rm`: each fork, and the fork made in
// rook of it, counts what it copied of its deleted parent.
func TestPruneOfCopiedParentsReadsTheMetadataOnce(t *testing.T) {
	const n, bystanders = 12, 20
	pruned := newForkStore(t, n, bystanders)
	one := newForkStore(t, n, bystanders)
	for i := range n {
		tokensOf(t, pruned.r, pruned.forks[i], "a fork", 3000, 30)
		tokensOf(t, pruned.r, pruned.inRook[i], "a fork made in rook", 3000, 30)
	}

	reads := metaReads(pruned.fsys)
	keep := n*2 + bystanders
	rep, err := pruned.r.Prune(RetentionPolicy{MaxSessions: &keep}, false)
	pruned.fsys.SetHook(nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.SessionsDeleted != n {
		t.Fatalf("deleted %d sessions, want the %d parents: %+v", rep.SessionsDeleted, n, rep.Deleted)
	}
	for i, d := range rep.Deleted {
		if d.ID != pruned.parents[n-1-i] {
			t.Fatalf("deleted %v, want the parents, the newest first", rep.Deleted)
		}
	}
	// A bystander's metadata: read by the listing that ranks the
	// sessions, and by the index of who copied what, once each.
	for _, id := range pruned.bystanders {
		if got := reads[id.String()]; got > 2 {
			t.Errorf("bystander %s: its metadata read %d times, want at most 2 (the listing, the index)", id, got)
		}
	}
	total := 0
	for _, c := range reads {
		total += c
	}
	t.Logf("a prune of %d parents in a store of %d sessions read %d metadata files", n, n*3+bystanders, total)

	// The same store (its ids are its own), its parents removed in the
	// same order with rm.
	for i := range n {
		if _, err := one.r.RemoveSession(one.parents[n-1-i]); err != nil {
			t.Fatal(err)
		}
	}
	for k, kind := range []string{"fork", "fork made in rook", "bystander"} {
		ps, os := [][]eventlog.ID{pruned.forks, pruned.inRook, pruned.bystanders}[k], [][]eventlog.ID{one.forks, one.inRook, one.bystanders}[k]
		for i := range ps {
			if got, want := pruned.totals(t, ps[i]), one.totals(t, os[i]); got != want {
				t.Errorf("%s %d: %v after the prune, %v after rm one by one", kind, i, got, want)
			}
		}
	}
	for i := range n {
		tokensOf(t, pruned.r, pruned.forks[i], "a fork, its parent pruned", 6000, 60)
		tokensOf(t, pruned.r, pruned.inRook[i], "a fork made in rook, the parent of its fork pruned", 6000, 60)
	}
}

// One `session rm` reads every session's metadata once at most (for the
// index of who copied what): it read it twice, for the index and again
// for the forks made in rook (forksMadeInRook).
func TestRemoveSessionReadsTheMetadataOnce(t *testing.T) {
	const bystanders = 10
	s := newForkStore(t, 2, bystanders)
	reads := metaReads(s.fsys)
	_, err := s.r.RemoveSession(s.parents[0])
	s.fsys.SetHook(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range s.bystanders {
		if got := reads[id.String()]; got > 1 {
			t.Errorf("bystander %s: its metadata read %d times, want at most once", id, got)
		}
	}
	tokensOf(t, s.r, s.forks[0], "the fork, its parent removed", 6000, 60)
	tokensOf(t, s.r, s.inRook[0], "the fork made in rook, the parent of its fork removed", 6000, 60)
	tokensOf(t, s.r, s.forks[1], "another fork", 3000, 30)
}

// Removals in one batch (retention) see what the ones before them wrote,
// as removals one by one do. Removing a fork made in rook (R1) of an
// imported Codex fork (F) gives the fork of R1 (R2) F as the session its
// copy comes from (Ancestor); removing F's parent (P) next in the batch
// must reach R2 through F, and write it as R1's removal left it: an index
// of forks made in rook kept from before R1 went (its metadata as it was
// then, filed under R1) would write R1, which is gone, or R2 without its
// Ancestor, and R2 would count the tokens it copied of P nowhere.
func TestRemoveBatchSeesWhatEarlierRemovalsWrote(t *testing.T) {
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
			r1 := fork(fid)
			r2 := fork(r1)
			tokensOf(t, r, r2, "R2", 3000, 30)
			remove := r.RemoveSession
			if batch {
				// R1's removal reads the index, before it writes R2.
				rm := sessionRemover{r: r}
				remove = rm.remove
			}
			for _, id := range []eventlog.ID{r1, pid} {
				if _, err := remove(id); err != nil {
					t.Fatal(err)
				}
			}
			tokensOf(t, r, fid, "F, P removed", 6000, 60)
			tokensOf(t, r, r2, "R2, R1 and P removed", 6000, 60)
			if from, _, ok := metaOf(t, r, r2).ForkedFrom(); !ok || from != fid {
				t.Fatalf("R2 forked from %v (%v), want F %v", from, ok, fid)
			}
		})
	}
}
