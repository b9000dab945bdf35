package index

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// layoutTree makes a committed index of n keys (tall enough to have
// branch nodes) in a new MemFS.
func layoutTree(t *testing.T, n int) (*vfs.MemFS, string, *Tree, model) {
	t.Helper()
	fsys := vfs.NewMem()
	path := "/home/u/.rook/index/objects.idx"
	if err := fsys.MkdirAll("/home/u/.rook/index", 0o700); err != nil {
		t.Fatal(err)
	}
	tr := mustOpen(t, fsys, path, true)
	t.Cleanup(func() { tr.Close() })
	want := model{}
	for i := range n {
		v := []byte(fmt.Sprintf("value %d", i))
		if err := tr.Put(seqKey(i), v); err != nil {
			t.Fatal(err)
		}
		want[seqKey(i)] = v
	}
	if err := tr.Commit([]byte("meta 1")); err != nil {
		t.Fatal(err)
	}
	if h := tr.Snapshot().st.m.Height; h < 2 {
		t.Fatalf("height %d: want branch nodes", h)
	}
	return fsys, path, tr, want
}

// refusedAsABug checks err is the refusal of a bad layout: said to be a
// bug, not damage, with nothing written.
func refusedAsABug(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s wrote a branch whose child is not before it: no error", what)
	}
	if isCorrupt(err) {
		t.Errorf("%s: %v: a writer's bug called damage to the index", what, err)
	}
	for _, want := range []string{"a bug in rook", "does not lie before it", "nothing was written"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %q does not say %q", what, err, want)
		}
	}
}

// Readers reject a branch whose child lies at or after it (walks would go
// round a cycle), and every writer puts children first; a commit did not
// check that it does. It now refuses, before it writes anything, to
// commit a branch whose child is not before it: the file is as it was,
// the committed state too, and the changes are kept.
func TestCommitRefusesAChildNotBeforeItsParent(t *testing.T) {
	fsys, path, tr, want := layoutTree(t, 3000)
	before := readAll(t, fsys, path)
	txid, writes := tr.Snapshot().TxID(), fsys.WriteOps()
	changed := misplaceFirstChild(t, tr)
	if err := tr.Put(seqKey(5000), []byte("new")); err != nil {
		t.Fatal(err)
	}
	err := tr.Commit([]byte("meta 2"))
	if *changed == 0 {
		t.Fatal("the commit wrote no branch node")
	}
	refusedAsABug(t, "commit", err)
	if got := readAll(t, fsys, path); !bytes.Equal(got, before) || fsys.WriteOps() != writes {
		t.Fatalf("the refused commit changed the file (%d bytes, were %d; %d write ops)", len(got), len(before), fsys.WriteOps()-writes)
	}
	if tr.Snapshot().TxID() != txid {
		t.Fatalf("txid %d after a refused commit, was %d", tr.Snapshot().TxID(), txid)
	}
	mustCheck(t, tr)
	mustDiff(t, tr.Snapshot(), want)
	r := mustOpen(t, fsys, path, false)
	defer r.Close()
	mustCheck(t, r)
	mustDiff(t, r.Snapshot(), want)
	// The changes were kept: without the bug, the commit goes through.
	tr.layoutHook = nil
	if err := tr.Commit([]byte("meta 2")); err != nil {
		t.Fatal(err)
	}
	want[seqKey(5000)] = []byte("new")
	mustCheck(t, tr)
	mustDiff(t, tr.Snapshot(), want)
}

// A rebuild (and so a compaction) refuses the same layout: the new file
// is never put in place, and the index is as it was. The bad branch is
// met as the entries are loaded (a tree of many branches) or as the last
// open nodes are closed (one branch under the root): the refusal reads
// the same either way (the second said "write nodes: ... nothing was
// written").
func TestRebuildRefusesAChildNotBeforeItsParent(t *testing.T) {
	for _, n := range []int{3000, 60000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			fsys, path, tr, want := layoutTree(t, n)
			before := readAll(t, fsys, path)
			changed := misplaceFirstChild(t, tr)
			err := tr.Rebuild(want.iter(), []byte("rebuilt"))
			if *changed == 0 {
				t.Fatal("the rebuild wrote no branch node")
			}
			refusedAsABug(t, "rebuild", err)
			if err != nil && !strings.HasPrefix(err.Error(), "index: rebuild: "+errChildNotFirst.Error()+": ") {
				t.Errorf("error %q: want it to begin %q", err, "index: rebuild: "+errChildNotFirst.Error())
			}
			if got := readAll(t, fsys, path); !bytes.Equal(got, before) {
				t.Fatal("the refused rebuild changed the index")
			}
			if _, err := fsys.Stat(path + ".tmp"); err == nil {
				t.Error("the refused rebuild left its temp file")
			}
			mustCheck(t, tr)
			mustDiff(t, tr.Snapshot(), want)
		})
	}
}
