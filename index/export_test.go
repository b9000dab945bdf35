package index

import "testing"

// misplaceFirstChild makes tr's commits and rebuilds write every branch
// node with its first child referenced at the branch's own offset (at,
// not before, its parent): the bad layout a writer's bug would make. It
// returns a count of the branches so changed; the hook is removed when
// the test ends.
func misplaceFirstChild(t *testing.T, tr *Tree) *int {
	t.Helper()
	n := new(int)
	tr.layoutHook = func(off uint64, ents []entry) {
		ents[0].ref.Off = off
		*n++
	}
	t.Cleanup(func() { tr.layoutHook = nil })
	return n
}
