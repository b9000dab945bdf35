package agent

// The line differ behind every patch rook prints (session diff, Codex
// patches): Myers' O(ND) greedy algorithm on lines, bounded. It replaces
// diffmatchpatch, whose "half match" and "one text inside the other" steps
// are quadratic on repeated lines and run before its deadline is ever
// looked at: a piped diff of an 800 KB log of identical lines never
// finished (git takes 0.17 s).

// Bounds of one line diff. Past either, the caller replaces the whole
// differing middle (a correct patch, only a larger one): maxEditLines
// bounds the edit distance D (the trace kept to walk back holds about D*D
// int32s: 16 MiB at 2,048), maxDiffWork the steps along runs of equal
// lines (the time: O((N+M)*D)).
const (
	maxEditLines = 2048
	maxDiffWork  = 64 << 20
)

// myersLines aligns a and b with the fewest lines deleted and inserted
// and returns the blocks that differ, in order; nil when a bound above
// is met first.
func myersLines(a, b []string) []change {
	// Lines become small ints: the loops compare ints, not strings.
	ids := make(map[string]int32, len(a))
	toIDs := func(lines []string) []int32 {
		out := make([]int32, len(lines))
		for i, l := range lines {
			id, ok := ids[l]
			if !ok {
				id = int32(len(ids))
				ids[l] = id
			}
			out[i] = id
		}
		return out
	}
	x1, y1 := toIDs(a), toIDs(b)
	n, m := len(x1), len(y1)
	maxD := min(n+m, maxEditLines)
	off := maxD + 1
	v := make([]int32, 2*maxD+3)
	// trace[d] is v over the diagonals -d..d after step d.
	var trace [][]int32
	work := 0
	for d := 0; d <= maxD; d++ {
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = int(v[off+k+1]) // down: b[y] inserted
			} else {
				x = int(v[off+k-1]) + 1 // right: a[x] deleted
			}
			y := x - k
			start := x
			for x < n && y < m && x1[x] == y1[y] {
				x++
				y++
			}
			work += x - start + 1
			v[off+k] = int32(x)
			if x >= n && y >= m {
				trace = append(trace, append([]int32(nil), v[off-d:off+d+1]...))
				return myersChanges(trace, n, m)
			}
		}
		trace = append(trace, append([]int32(nil), v[off-d:off+d+1]...))
		if work > maxDiffWork {
			return nil
		}
	}
	return nil
}

// myersChanges walks the trace back from (n, m) to (0, 0) and returns
// the blocks of deleted and inserted lines, in order.
func myersChanges(trace [][]int32, n, m int) []change {
	type edit struct {
		del  bool
		x, y int // the line deleted (a[x]) or inserted (b[y])
	}
	var edits []edit
	x, y := n, m
	for d := len(trace) - 1; d > 0; d-- {
		prev := trace[d-1] // diagonals -(d-1)..d-1, index k+d-1
		k := x - y
		var pk int
		if k == -d || (k != d && prev[k-1+d-1] < prev[k+1+d-1]) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := int(prev[pk+d-1])
		py := px - pk
		if pk == k+1 {
			edits = append(edits, edit{false, px, py})
		} else {
			edits = append(edits, edit{true, px, py})
		}
		x, y = px, py
	}
	changes := []change{} // none, not nil: nil is "past the bounds"
	for i := len(edits) - 1; i >= 0; i-- {
		e := edits[i]
		// An edit joins the block before when nothing equal lies between.
		if len(changes) > 0 {
			c := &changes[len(changes)-1]
			if c.i1+c.n1 == e.x && c.i2+c.n2 == e.y {
				if e.del {
					c.n1++
				} else {
					c.n2++
				}
				continue
			}
		}
		c := change{i1: e.x, i2: e.y}
		if e.del {
			c.n1 = 1
		} else {
			c.n2 = 1
		}
		changes = append(changes, c)
	}
	return changes
}
