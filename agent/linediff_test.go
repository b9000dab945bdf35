package agent

import (
	"bytes"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"
)

// applyChanges rebuilds b from a and the blocks that differ, failing the
// test when the blocks are not an alignment of a and b.
func applyChanges(t *testing.T, a, b []string, changes []change) {
	t.Helper()
	var out []string
	i := 0
	for _, c := range changes {
		if c.i1 < i || c.n1 < 0 || c.n2 < 0 || c.n1+c.n2 == 0 {
			t.Fatalf("bad block %+v after line %d", c, i)
		}
		out = append(out, a[i:c.i1]...)
		if len(out) != c.i2 {
			t.Fatalf("block %+v: %d lines before it in b, want %d", c, len(out), c.i2)
		}
		out = append(out, b[c.i2:c.i2+c.n2]...)
		i = c.i1 + c.n1
	}
	out = append(out, a[i:]...)
	if strings.Join(out, "") != strings.Join(b, "") || len(out) != len(b) {
		t.Fatalf("the blocks turn a into\n%q\nnot\n%q", out, b)
	}
}

// lcsLen is the longest common subsequence's length, by the textbook
// table: what the fewest deletions and insertions leave unchanged.
func lcsLen(a, b []string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for i := range a {
		for j := range b {
			switch {
			case a[i] == b[j]:
				cur[j+1] = prev[j] + 1
			case prev[j+1] >= cur[j]:
				cur[j+1] = prev[j+1]
			default:
				cur[j+1] = cur[j]
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// The differ's blocks turn a into b with the fewest lines deleted and
// inserted, on random texts of few distinct lines (repeats everywhere).
func TestMyersLinesIsAMinimalAlignment(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for round := 0; round < 3000; round++ {
		gen := func() []string {
			lines := make([]string, rng.Intn(40))
			for i := range lines {
				lines[i] = string(rune('a'+rng.Intn(1+round%4))) + "\n"
			}
			return lines
		}
		a, b := gen(), gen()
		changes := myersLines(a, b)
		if changes == nil {
			t.Fatalf("no diff of %q and %q", a, b)
		}
		applyChanges(t, a, b, changes)
		edits := 0
		for _, c := range changes {
			edits += c.n1 + c.n2
		}
		if want := len(a) + len(b) - 2*lcsLen(a, b); edits != want {
			t.Fatalf("%d lines deleted and inserted turning %q into %q; the fewest is %d", edits, a, b, want)
		}
	}
}

// Past the bounds (here 100,003 lines deleted and inserted among 400,001
// and 300,002 that repeat one line), the blocks still turn a into b.
func TestMyersLinesPastItsBoundsStaysValid(t *testing.T) {
	a := strings.Split(strings.Repeat("a\n", 200000)+"b\n"+strings.Repeat("a\n", 200000), "\n")
	b := strings.Split("c\n"+strings.Repeat("a\n", 300000)+"d\n", "\n")
	applyChanges(t, a, b, myersLines(a, b))
	applyChanges(t, a, b, diffLines(a, b))
	// Distinct lines throughout (no repeats), changed in 3,000 places.
	var x, y []string
	for i := 0; i < 100000; i++ {
		x = append(x, fmt.Sprintf("line %d\n", i))
		if i%33 == 0 {
			y = append(y, fmt.Sprintf("changed %d\n", i))
			continue
		}
		y = append(y, x[i])
	}
	applyChanges(t, x, y, diffLines(x, y))
}

// A session changed a text file of a few hundred KiB made of repeated
// lines (a log of identical lines, a file of blank lines): piped, `rook
// session diff` diffs such a file line by line, and with diffmatchpatch it
// never finished (800 KB: over 60 s, killed; git diff takes 0.17 s):
// its half-match step, run before any deadline is looked at, is
// quadratic on repeated lines. A coarser diff is fine (git apply takes any
// correct one). From the review of b694789 (TestReviewRmdiffRepetitiveLargeTextDiffFinishes).
func TestLineDiffOfRepeatedLinesFinishes(t *testing.T) {
	cases := []struct{ old, new string }{
		{strings.Repeat("a\n", 200000) + "b\n" + strings.Repeat("a\n", 200000), "c\n" + strings.Repeat("a\n", 300000) + "d\n"},
		{"# end of header\n" + strings.Repeat("\n", 300000), "# title\n" + strings.Repeat("\n", 200000) + "# footer\n"},
		{strings.Repeat("x,1\n", 100000) + "y\n" + strings.Repeat("x,1\n", 100000), strings.Repeat("x,1\n", 100001) + "z\n" + strings.Repeat("x,1\n", 99999)},
	}
	for i, c := range cases {
		d := DiffFile{Path: "log.txt", OldMode: "100644", NewMode: "100644", Old: []byte(c.old), New: []byte(c.new)}
		type result struct {
			patch          []byte
			added, removed int
			err            error
		}
		done := make(chan result, 1)
		go func() {
			var buf bytes.Buffer
			a, r, err := WriteGitDiff(&buf, d, false)
			done <- result{buf.Bytes(), a, r, err}
		}()
		select {
		case res := <-done:
			if res.err != nil {
				t.Fatal(res.err)
			}
			if res.added-res.removed != strings.Count(c.new, "\n")-strings.Count(c.old, "\n") {
				t.Fatalf("case %d: +%d -%d does not account for the lines before and after", i, res.added, res.removed)
			}
			if i == 2 && (res.added != 1 || res.removed != 1) {
				t.Fatalf("case %d: +%d -%d; want +1 -1 (y made z, one line further on)", i, res.added, res.removed)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("case %d: the diff of a text of repeated lines has not finished after 20 s; git diff takes 0.17 s", i)
		}
	}
}
