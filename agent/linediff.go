package agent

// The line differ behind every patch rook prints (session diff, Codex
// patches): Myers' O(ND) greedy algorithm on lines, bounded. It replaces
// diffmatchpatch, whose "half match" and "one text inside the other" steps
// are quadratic on repeated lines and run before its deadline is ever
// looked at: a piped diff of an 800 KB log of identical lines never
// finished (git takes 0.17 s).

// Bounds of the line differ. One search (a chunk) stops at an edit
// distance of maxEditLines (the trace kept to walk back holds about D*D
// int32s: 16 MiB at 2,048) or after maxChunkWork steps along runs of
// equal lines; it then keeps the best it found, the alignment up to the
// point furthest along, and searches again from there (as git's xdiff
// splits at its best snake past its cost bound): the patch stays close to
// minimal, only not proven so. Past maxDiffWork steps in all, what is left
// is one block (a correct patch, only a larger one).
const (
	maxEditLines = 2048
	maxChunkWork = 64 << 20
	maxDiffWork  = 256 << 20
)

// run is a stretch of n equal lines, x[i:i+n] == y[j:j+n].
type run struct{ i, j, n int }

// myersLines aligns a and b with (within the bounds above) the fewest
// lines deleted and inserted, and returns the blocks that differ, in
// order.
func myersLines(a, b []string) []change {
	// Lines become small ints, and a line found on one side only is
	// left out of the search: it is a change whatever the alignment
	// (an inserted block of new lines costs the search nothing).
	ids := make(map[string]int32, len(a))
	for _, l := range a {
		if _, ok := ids[l]; !ok {
			ids[l] = int32(len(ids))
		}
	}
	inB := make([]bool, len(ids))
	var y []int32
	var yAt []int
	for j, l := range b {
		if id, ok := ids[l]; ok {
			inB[id] = true
			y = append(y, id)
			yAt = append(yAt, j)
		}
	}
	var x []int32
	var xAt []int
	for i, l := range a {
		if id := ids[l]; inB[id] {
			x = append(x, id)
			xAt = append(xAt, i)
		}
	}

	changes := []change{} // none, not nil
	ca, cb := 0, 0        // the next lines of a and b not yet placed
	for _, r := range alignLines(x, y) {
		for t := 0; t < r.n; t++ {
			pa, pb := xAt[r.i+t], yAt[r.j+t]
			if pa > ca || pb > cb {
				changes = append(changes, change{ca, pa - ca, cb, pb - cb})
			}
			ca, cb = pa+1, pb+1
		}
	}
	if ca < len(a) || cb < len(b) {
		changes = append(changes, change{ca, len(a) - ca, cb, len(b) - cb})
	}
	return changes
}

// alignLines returns the runs of equal lines of x and y that an alignment
// with the fewest lines deleted and inserted keeps (within the bounds),
// in order.
func alignLines(x, y []int32) []run {
	var runs []run
	var trace []int32 // alignChunk's, kept from one chunk to the next
	ox, oy, work := 0, 0, 0
	for ox < len(x) && oy < len(y) && work <= maxDiffWork {
		p := 0
		for ox+p < len(x) && oy+p < len(y) && x[ox+p] == y[oy+p] {
			p++
		}
		if p > 0 {
			runs = append(runs, run{ox, oy, p})
			ox, oy = ox+p, oy+p
			continue
		}
		rs, ex, ey, w := alignChunk(x[ox:], y[oy:], &trace)
		work += w
		for _, r := range rs {
			runs = append(runs, run{ox + r.i, oy + r.j, r.n})
		}
		ox, oy = ox+ex, oy+ey
	}
	return runs
}

// alignChunk searches x and y, whose first lines differ, for the fewest
// edits to their ends; at a bound, to the point furthest along (x+y)
// among those reached with the edits made so far. It returns the runs of
// the alignment up to that point, the point (ex, ey: never 0, 0), and the
// steps taken. *buf is the trace's memory, reused.
func alignChunk(x, y []int32, buf *[]int32) (runs []run, ex, ey, work int) {
	n, m := len(x), len(y)
	maxD := min(n+m, maxEditLines)
	off := maxD + 1
	v := make([]int32, 2*maxD+3)
	// The trace: v over the diagonals -d..d after step d, for each d, one
	// after the other (step d's at d*d: the steps before it hold
	// 1+3+...+(2d-1) values).
	trace := (*buf)[:0]
	defer func() { *buf = trace }()
	for d := 0; d <= maxD; d++ {
		for k := -d; k <= d; k += 2 {
			var px int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				px = int(v[off+k+1]) // down: y's line inserted
			} else {
				px = int(v[off+k-1]) + 1 // right: x's line deleted
			}
			py := px - k
			start := px
			for px < n && py < m && x[px] == y[py] {
				px++
				py++
			}
			work += px - start + 1
			v[off+k] = int32(px)
			if px >= n && py >= m {
				trace = append(trace, v[off-d:off+d+1]...)
				return walkBack(trace, d, n, m), n, m, work
			}
		}
		trace = append(trace, v[off-d:off+d+1]...)
		if d > 0 && (d == maxD || work > maxChunkWork) {
			break
		}
	}
	// A bound: the furthest point reached inside the grid.
	d := 0
	for (d+1)*(d+1) < len(trace) {
		d++
	}
	for k := -d; k <= d; k += 2 {
		px := int(trace[d*d+k+d])
		py := px - k
		if px <= n && py >= 0 && py <= m && px+py > ex+ey {
			ex, ey = px, py
		}
	}
	if ex+ey == 0 {
		// Nothing reached (cannot happen past d = 0): the rest is one block.
		return nil, n, m, work
	}
	return walkBack(trace, d, ex, ey), ex, ey, work
}

// walkBack follows the trace (alignChunk's) back from (px, py), reached at
// step last, to (0, 0), and returns the runs of equal lines on the way, in
// order.
func walkBack(trace []int32, last, px, py int) []run {
	var runs []run
	for d := last; d > 0; d-- {
		prev := trace[(d-1)*(d-1):] // step d-1's: diagonals -(d-1)..d-1, index k+d-1
		k := px - py
		var pk int
		if k == -d || (k != d && prev[k-1+d-1] < prev[k+1+d-1]) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		sx := int(prev[pk+d-1])
		sy := sx - pk
		// After the edit from (sx, sy), the run of equal lines to (px, py).
		mx, my := sx, sy+1
		if pk == k-1 {
			mx, my = sx+1, sy
		}
		if px > mx {
			runs = append(runs, run{mx, my, px - mx})
		}
		px, py = sx, sy
	}
	if px > 0 {
		runs = append(runs, run{0, 0, px})
	}
	for i, j := 0, len(runs)-1; i < j; i, j = i+1, j-1 {
		runs[i], runs[j] = runs[j], runs[i]
	}
	return runs
}
