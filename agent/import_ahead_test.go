package agent

import (
	"fmt"
	"testing"
	"time"

	"github.com/rookhq/rook/internal/vfs"
)

// The files prepared ahead of the one being stored stay within
// prepareAhead and prepareBudget, each comes back in order, and closing
// half-way (an import that fails) ends every goroutine.
func TestReadAheadIsBoundedAndEnds(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	var files []sourceFile
	fresh := map[string]bool{}
	for i := range 8 {
		p := fmt.Sprintf("/src/s%d.jsonl", i)
		data := writeSource(t, fsys, p, claudeLines(fmt.Sprintf("s%d", i), 1), "")
		files = append(files, sourceFile{path: p, size: int64(len(data))})
		fresh[p] = true
	}
	// One huge file: alone in flight, whatever the budget says (with
	// chunks bigger than the budget, so that it is read whole).
	files[5].size = prepareBudget + 1
	inFlight := func(a *readAhead) (int, int64) {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.files, a.bytes
	}
	a := r.startReadAhead(FormatClaudeCode, files, fresh, MinCutString, 2*prepareBudget)
	for i, f := range files {
		p := a.next(i)
		if p.err != nil || !p.mapped || len(p.lines) == 0 {
			t.Fatalf("file %d: err %v, mapped %v, %d lines", i, p.err, p.mapped, len(p.lines))
		}
		time.Sleep(20 * time.Millisecond) // "storing": the workers run ahead
		n, b := inFlight(a)
		if n > prepareAhead+1 || (n > 1 && b > prepareBudget) {
			t.Fatalf("storing file %d: %d files, %d bytes in flight", i, n, b)
		}
		if i == 4 && n != 1 {
			t.Fatalf("before the huge file: %d files in flight, want only the one stored", n)
		}
		a.release(f)
	}
	a.close()

	// With the import's chunks, the huge file is streamed: not read ahead,
	// and no weight on the files around it.
	c := r.startReadAhead(FormatClaudeCode, files, fresh, MinCutString, importChunkBytes)
	for i, f := range files {
		p := c.next(i)
		if got := p.streamed; got != (i == 5) || (got && (p.data != nil || p.mapped)) {
			t.Fatalf("file %d: streamed %v, %d bytes read, mapped %v", i, got, len(p.data), p.mapped)
		}
		time.Sleep(20 * time.Millisecond)
		if n, _ := inFlight(c); i == 4 && n == 1 {
			t.Fatalf("before the streamed file: only the stored file in flight, as if it were read whole")
		}
		c.release(f)
	}
	c.close()

	// Closing with files still waiting, none taken.
	b := r.startReadAhead(FormatClaudeCode, files, fresh, MinCutString, importChunkBytes)
	b.next(0)
	done := make(chan struct{})
	go func() { b.close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("close did not end the read-ahead goroutines")
	}
}
