package agent

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// BenchmarkLongLineDense scores a 4 MiB line written in 32 KiB pieces
// whose first term matches every few bytes and whose second never follows
// it (longLine follows termsTogether from each match of the first term):
// "mix test, " over and over, for the query "mix parser".
func BenchmarkLongLineDense(b *testing.B) {
	line := bytes.Repeat([]byte("mix test, "), 4<<20/10)
	terms := [][]byte{[]byte("mix"), []byte("parser")}
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		l := newLongLine(terms, nil)
		for p := line; len(p) > 0; {
			k := min(len(p), 32<<10)
			l.write(p[:k])
			p = p[k:]
		}
		if _, _, _, _, ok := l.finish(); !ok {
			b.Fatal("not scored streamed")
		}
	}
}

// longLineDenseAllocs is how many allocations scoring a line of n bytes
// of "mix test, " for the query "mix parser" makes.
func longLineDenseAllocs(n int) float64 {
	line := bytes.Repeat([]byte("mix test, "), n/10)
	terms := [][]byte{[]byte("mix"), []byte("parser")}
	return testing.AllocsPerRun(1, func() {
		l := newLongLine(terms, nil)
		for p := line; len(p) > 0; {
			k := min(len(p), 32<<10)
			l.write(p[:k])
			p = p[k:]
		}
		l.finish()
	})
}

// A line whose first term matches every few bytes allocates for the runs
// of termsTogether alive at once (a piece's worth), not for each match:
// it allocated a run for each, 1.26 million on 4 MiB.
func TestLongLineAllocsDoNotGrowWithMatches(t *testing.T) {
	small, big := longLineDenseAllocs(1<<20), longLineDenseAllocs(4<<20)
	if big > 2*small || big > 20000 {
		t.Fatalf("a line of 1 MiB made %.0f allocations, one of 4 MiB %.0f: they grow with the matches", small, big)
	}
	t.Logf("1 MiB: %.0f allocations, 4 MiB: %.0f", small, big)
}

// Each slot of longLine's runs, live or past the end for a new run to
// reuse, keeps a buf of its own: two sharing one would write each
// other's word (runs are swapped, not copied, when the dead are dropped).
func TestLongLineRunsKeepBufsOfTheirOwn(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"mix", "mix ", " ", "the ", "of ", "a ", "test", "tes", "mixer", "_", "é"}
	for range 2000 {
		var line []byte
		for range 10 + rng.IntN(200) {
			line = append(line, words[rng.IntN(len(words))]...)
		}
		l := newLongLine([][]byte{[]byte("mix"), []byte("test")}, nil)
		for p := line; len(p) > 0; {
			k := min(len(p), 1+rng.IntN(8))
			l.write(p[:k])
			p = p[k:]
			all := l.runs[:cap(l.runs)]
			for i := range all {
				for j := range i {
					if cap(all[i].buf) > 0 && unsafe.SliceData(all[i].buf) == unsafe.SliceData(all[j].buf) {
						t.Fatalf("%q: runs %d and %d of %d (%d live) share a buf", line, j, i, len(all), len(l.runs))
					}
				}
			}
		}
	}
}
