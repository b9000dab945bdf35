package cli

import (
	"testing"

	"github.com/rookhq/rook/eventlog"
)

// underParents lists forks and children under their parent, their own
// under them, a family (and siblings among themselves) where its most
// recently active member is, and loses no row to a parent loop.
func TestUnderParents(t *testing.T) {
	id := func(n byte) eventlog.ID { var i eventlog.ID; i[15] = n; return i }
	row := func(n, parent byte) sessionRow {
		r := sessionRow{}
		r.ID = id(n)
		if parent != 0 {
			p := id(parent)
			r.Parent = &p
		}
		return r
	}
	// Most recently active first: 5 (a child of 1), 2, 4 (a child of 5),
	// 1, 6 (a child of 9, not listed), 3 (a child of 1), 7 and 8 each
	// other's parent.
	rows := []sessionRow{row(5, 1), row(2, 0), row(4, 5), row(1, 0), row(6, 9), row(3, 1), row(7, 8), row(8, 7)}
	got := underParents(rows)
	// 1's family first, as 5 is in it; among 1's children 5 before 3.
	want := []struct{ id, depth byte }{{1, 0}, {5, 1}, {4, 2}, {3, 1}, {2, 0}, {6, 0}, {7, 0}, {8, 1}}
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	for i, w := range want {
		if got[i].ID != id(w.id) || got[i].Depth != int(w.depth) {
			t.Fatalf("row %d: %d at depth %d, want %d at depth %d", i, got[i].ID[15], got[i].Depth, w.id, w.depth)
		}
	}
}
