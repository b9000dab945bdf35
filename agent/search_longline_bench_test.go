package agent

import (
	"bytes"
	"testing"
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
		l := newLongLine(terms)
		for p := line; len(p) > 0; {
			k := min(len(p), 32<<10)
			l.write(p[:k])
			p = p[k:]
		}
		if _, _, _, ok := l.finish(); !ok {
			b.Fatal("not scored streamed")
		}
	}
}
