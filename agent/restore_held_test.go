package agent

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/cas"
)

// heldCheckpoint is a workspace holding big.txt (long enough to get a
// record of its own in the store, which damaging does not reach
// elsewhere) and small.txt, a checkpoint c1 of it, and then the store
// with big.txt's copy damaged or gone (how); small.txt (too long to be
// copied into the store's index, which "missing" rebuilds) is changed
// since.
func heldCheckpoint(t *testing.T, how string) (r *Rook, ws, big string, m *Manifest) {
	t.Helper()
	r, ws, _ = newWorkspace(t)
	big = strings.Repeat("a line long enough to get a record of its own, far from the snapshot\n", 200)
	// small.txt first, in a checkpoint of its own: its copy is in
	// another record than big.txt's.
	writeTree(t, ws, tree{"small.txt": smallText})
	if _, _, err := r.CreateCheckpoint("c0", ws, "", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	writeTree(t, ws, tree{"big.txt": big})
	if _, _, err := r.CreateCheckpoint("c1", ws, "", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	r = damagedStore(t, r, cas.ID([]byte(big)), how)
	if _, err := r.Store.Get(cas.ID([]byte(big))); err == nil {
		t.Fatal("big.txt's copy reads after the damage")
	}
	_, m, err := r.ResolveCheckpoint("c1")
	if err != nil {
		t.Fatal(err)
	}
	writeTree(t, ws, tree{"small.txt": "changed by hand\n"})
	return r, ws, big, m
}

// smallText is small.txt as heldCheckpoint's checkpoint holds it.
var smallText = backupText("small")

// A checkpoint restore read every copy it would write before looking at
// the disk, so one whose copy of big.txt did not read refused even when
// big.txt held those bytes already and nothing was to be written there.
// The file on disk is looked at first: holding the state, its copy is
// not needed, and it is left as it is (not written again), counted
// unchanged; small.txt is put back. A big.txt that differs still
// refuses, as before, nothing written.
func TestCheckpointRestoreNeedsNoCopyTheFileHolds(t *testing.T) {
	for _, how := range []string{"damaged", "missing"} {
		t.Run(how, func(t *testing.T) {
			r, ws, big, m := heldCheckpoint(t, how)
			bigPath := filepath.Join(ws, "big.txt")
			writeTree(t, ws, tree{"big.txt": "changed by hand\n"})
			_, err := r.RestoreCheckpoint("c1", m, "")
			if err == nil || !strings.HasPrefix(err.Error(), "cannot restore big.txt: its captured copy is unreadable: ") ||
				!strings.HasSuffix(err.Error(), ": nothing written; `rook store verify` checks the store") {
				t.Fatalf("restore over a big.txt that differs: %v", err)
			}
			sameTree(t, "after the refusal", readTree(t, ws), tree{"big.txt": "changed by hand\n", "small.txt": "changed by hand\n"})

			writeTree(t, ws, tree{"big.txt": big})
			before := oldFile(t, bigPath)
			rep, err := r.RestoreCheckpoint("c1", m, "")
			if err != nil {
				t.Fatalf("restore with big.txt as the checkpoint holds it: %v", err)
			}
			sameTree(t, "restored", readTree(t, ws), tree{"big.txt": big, "small.txt": smallText})
			untouchedSince(t, bigPath, before)
			if rep.Written != 1 || rep.Unchanged != 1 {
				t.Fatalf("written %d, unchanged %d: want small.txt written, big.txt unchanged", rep.Written, rep.Unchanged)
			}
		})
	}
}

// A file the plan found already holding its state has no copy to write:
// changed before Apply gets to it (the plan and Apply are apart), it is
// refused as changed, and left as it is, never written with nothing.
func TestRestoreRefusesAFileHeldThenChangedSince(t *testing.T) {
	r, ws, _, m := heldCheckpoint(t, "damaged")
	plan, err := r.planRestore(ws, manifestChanges(m), func(string) bool { return true }, false)
	if err != nil {
		t.Fatalf("plan with big.txt as the checkpoint holds it: %v", err)
	}
	writeTree(t, ws, tree{"big.txt": "changed since the plan\n"})
	if _, _, _, err := plan.Apply(); !errors.Is(err, errChangedSince) || !strings.HasPrefix(err.Error(), "big.txt changed since") {
		t.Fatalf("apply: %v, want big.txt changed since", err)
	}
	if got := readFileT(t, filepath.Join(ws, "big.txt")); got != "changed since the plan\n" {
		t.Fatalf("big.txt: %q", got)
	}
}
