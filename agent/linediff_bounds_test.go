package agent

import "testing"

// lcsLen is a reference: the length of a longest common subsequence of a and b.
func refLCSLen(a, b []string) int {
	dp := make([][]int, len(a)+1)
	for i := range dp {
		dp[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	return dp[0][0]
}

// checkLineChanges checks that changes turn a into b (the lines between
// blocks equal, blocks in order, in range) and returns the lines edited.
func checkLineChanges(t *testing.T, a, b []string, changes []change) int {
	t.Helper()
	i, j, edited := 0, 0, 0
	for _, c := range changes {
		if c.i1 < i || c.i2 < j || c.n1 < 0 || c.n2 < 0 || c.n1+c.n2 == 0 || c.i1+c.n1 > len(a) || c.i2+c.n2 > len(b) {
			t.Fatalf("bad block %+v after (%d,%d) for a=%q b=%q: %+v", c, i, j, a, b, changes)
		}
		if c.i1-i != c.i2-j {
			t.Fatalf("unequal gaps before %+v for a=%q b=%q: %+v", c, a, b, changes)
		}
		for ; i < c.i1; i, j = i+1, j+1 {
			if a[i] != b[j] {
				t.Fatalf("line a[%d]=%q kept but b[%d]=%q for a=%q b=%q: %+v", i, a[i], j, b[j], a, b, changes)
			}
		}
		i, j = c.i1+c.n1, c.i2+c.n2
		edited += c.n1 + c.n2
	}
	if len(a)-i != len(b)-j {
		t.Fatalf("unequal tails for a=%q b=%q: %+v", a, b, changes)
	}
	for ; i < len(a); i, j = i+1, j+1 {
		if a[i] != b[j] {
			t.Fatalf("tail a[%d]=%q != b[%d]=%q for a=%q b=%q: %+v", i, a[i], j, b[j], a, b, changes)
		}
	}
	return edited
}

// linesEdited is the number of lines diffLines marks deleted or inserted.
func linesEdited(t *testing.T, a, b []string) int {
	t.Helper()
	return checkLineChanges(t, a, b, diffLines(a, b))
}

// Finding (rmlast): an edit distance past maxEditLines (2,048) turns the
// whole differing middle into one "replace everything" block, however few
// lines really changed around it.
//
// The user: an agent adds a 3,000-line generated block in the middle of a
// 10,000-line file and also edits one import line near the top; or it
// rewrites every tenth line of a 20,000-line file (a rename). They run
// `rook session diff` (or read the Codex patch).
//
// What happens: diffLines (agent/unidiff.go) hands the middle to
// myersLines (agent/linediff.go), which gives up at D > 2,048 and returns
// nil; the fallback then deletes and re-adds every line between the first
// and the last change: 4,990 unchanged lines shown as removed and added in
// the first case (12,980 -/+ lines for 3,002 changed), and the whole
// 20,000-line file twice in the second (git diff: 2,000 -/2,000 +, in
// 0.016 s). The patch is correct but no longer says what changed: a review
// of the session cannot see that one import line was touched, and the
// patch is ~10x the size git prints for the same two files.
//
// What should happen: a patch close to minimal, as git's xdiff gives for
// the same inputs: past its cost bound xdiff does not give up on the whole
// middle but keeps the best snake found so far and diffs the two halves
// (xdl_split's "heuristic" with XDL_HEUR_MIN_COST / mxcost), so D beyond
// the bound costs minimality locally, not the whole middle. README (line
// 89) says `session diff` prints what the session changed "as a git
// patch"; a patch 4-10x git's, hiding the one line touched, is not
// what a user reviewing an agent's change can read. The bound on the
// trace's memory can be kept (e.g. divide and conquer: linear space
// Myers), it is the all-or-nothing fallback that is wrong.
func TestLineDiffPastTheEditBoundStaysNearMinimal(t *testing.T) {
	t.Run("3000 lines inserted and one line changed", func(t *testing.T) {
		a := make([]string, 10000)
		for i := range a {
			a[i] = "line " + itoaLines(i) + "\n"
		}
		b := append([]string(nil), a[:5000]...)
		b[10] = "import changed\n"
		for i := 0; i < 3000; i++ {
			b = append(b, "new "+itoaLines(i)+"\n")
		}
		b = append(b, a[5000:]...)
		minimal := 3002
		if got := linesEdited(t, a, b); got > 2*minimal {
			t.Errorf("diff marks %d lines deleted or inserted; the minimum is %d (1 changed line and 3,000 inserted): the whole middle was replaced", got, minimal)
		}
	})
	t.Run("every tenth line of 20000 changed", func(t *testing.T) {
		a := make([]string, 20000)
		b := make([]string, 20000)
		for i := range a {
			a[i] = "line " + itoaLines(i) + "\n"
			b[i] = a[i]
			if i%10 == 0 {
				b[i] = "changed " + itoaLines(i) + "\n"
			}
		}
		minimal := 4000
		if got := linesEdited(t, a, b); got > 2*minimal {
			t.Errorf("diff marks %d lines deleted or inserted; the minimum is %d (git diff: 2,000 -, 2,000 +): the whole file was replaced", got, minimal)
		}
	})
}

// Finding (rmlast), same function, the other bound: diffLines hands
// myersLines nothing past maxDiffLines (then 1,000,000 lines on both sides
// together, after the common prefix and suffix are cut), whatever the edit
// distance. The user: an agent edits the first and the last data row of a
// 600,000-line CSV (or log) file. `rook session diff` prints a patch
// deleting and re-adding ~600,000 lines (two changed lines in it, hidden),
// ~1.2 million lines of patch, where git prints two 7-line hunks. Here
// D = 4: myersLines would take about (N+M)*D steps, far inside its own
// bounds (64 Mi steps, 16 MiB of trace), yet it is never asked. Cause:
// agent/unidiff.go diffLines, `len(ma)+len(mb) > maxDiffLines`.
func TestLineDiffTwoEditsFarApartInALargeFile(t *testing.T) {
	n := 600000
	a := make([]string, n)
	for i := range a {
		a[i] = "row " + itoaLines(i) + "\n"
	}
	b := append([]string(nil), a...)
	b[10] = "row 10 edited\n"
	b[n-10] = "row last edited\n"
	if got := linesEdited(t, a, b); got > 100 {
		t.Errorf("diff marks %d lines deleted or inserted; 2 lines changed (minimum 4): everything between them was replaced", got)
	}
}

func itoaLines(i int) string {
	const digits = "0123456789"
	if i == 0 {
		return "0"
	}
	s := ""
	for ; i > 0; i /= 10 {
		s = string(digits[i%10]) + s
	}
	return s
}

// Finding (rmlast), same function, the third bound: maxDiffWork (64 Mi
// steps). On lines that repeat (blank lines, "}", a generated file's
// pattern) many diagonals run long snakes, and the step count reaches
// 64 Mi long before D reaches 2,048: here a 400,000-line file of a
// repeating 4-line pattern with 1,000 lines replaced (D = 2,000, inside
// maxEditLines) comes back as ~800,000 lines deleted and re-added, after
// only ~0.1 s of work (git: 1,000 -/1,000 +). The user: `rook session
// diff` of an agent's edit to such a file (a data file, a generated
// table) prints the whole file twice. Cause: agent/linediff.go
// myersLines returns nil when work > maxDiffWork, and diffLines replaces
// the whole middle; xdiff instead stops searching for the optimum and
// splits at the best snake so far (a near-minimal patch).
func TestLineDiffRepeatedPatternStaysNearMinimal(t *testing.T) {
	n, edits := 400000, 1000
	a := make([]string, n)
	for i := range a {
		a[i] = []string{"a\n", "b\n", "}\n", "\n"}[i%4]
	}
	b := append([]string(nil), a...)
	for e := 0; e < edits; e++ {
		b[1+e*(n-2)/edits] = "x\n"
	}
	if got := linesEdited(t, a, b); got > 4*edits {
		t.Errorf("diff marks %d lines deleted or inserted; %d lines were replaced (minimum %d): the whole middle was replaced", got, edits, 2*edits)
	}
}
