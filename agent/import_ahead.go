package agent

import (
	"strings"
	"sync"
)

// Reading, hashing and mapping a file needs no store: while Import stores
// one file, readAhead prepares the next ones on prepareWorkers goroutines.
// What is prepared and not yet stored is bounded, in files and in bytes,
// since a prepared file is held whole in memory with its mapped lines.
const (
	prepareWorkers = 2
	prepareAhead   = 2         // files prepared beyond the one being stored
	prepareBudget  = 256 << 20 // source bytes in flight, the stored one included
	zstRatio       = 8         // what a .zst file is guessed to grow to, read
)

type readAhead struct {
	results []chan *mappedSource // one per file, each sent one value
	chunk   int                  // files bigger than this are streamed, not prepared

	mu      sync.Mutex
	cond    *sync.Cond
	files   int   // files prepared or being prepared, not yet released
	bytes   int64 // their cost
	stopped bool

	jobs chan int
	stop chan struct{}
	wg   sync.WaitGroup
}

// cost is what a file is counted as against prepareBudget: a streamed
// file is read later, a chunk at a time, by importFile.
func (a *readAhead) cost(f sourceFile) int64 {
	if f.unchanged || streamed(f, a.chunk) {
		return 1
	}
	return cost(f)
}

// cost is what a file read whole takes in memory, as far as its size says.
func cost(f sourceFile) int64 {
	if strings.HasSuffix(f.path, ".zst") {
		return max(1, f.size*zstRatio)
	}
	return max(1, f.size)
}

func (r *Rook) startReadAhead(format string, files []sourceFile, fresh map[string]bool, minCut, chunk int) *readAhead {
	a := &readAhead{chunk: chunk, results: make([]chan *mappedSource, len(files)), jobs: make(chan int), stop: make(chan struct{})}
	a.cond = sync.NewCond(&a.mu)
	for i := range a.results {
		a.results[i] = make(chan *mappedSource, 1)
	}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer close(a.jobs)
		for i, f := range files {
			if !a.acquire(a.cost(f)) {
				return
			}
			select {
			case a.jobs <- i:
			case <-a.stop:
				return
			}
		}
	}()
	for range prepareWorkers {
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			for i := range a.jobs {
				if files[i].unchanged {
					a.results[i] <- &mappedSource{} // known unchanged: not read
					continue
				}
				a.results[i] <- r.prepareSource(format, files[i], fresh[files[i].path], minCut, chunk)
			}
		}()
	}
	return a
}

// acquire waits until a file of cost c fits (one always does when nothing
// is in flight); false once stopped.
func (a *readAhead) acquire(c int64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for !a.stopped && a.files > 0 && (a.files > prepareAhead || a.bytes+c > prepareBudget) {
		a.cond.Wait()
	}
	if a.stopped {
		return false
	}
	a.files++
	a.bytes += c
	return true
}

// next waits for file i, which must be taken in order.
func (a *readAhead) next(i int) *mappedSource { return <-a.results[i] }

// release says file f is stored: its memory is free for the files ahead.
func (a *readAhead) release(f sourceFile) {
	a.mu.Lock()
	a.files--
	a.bytes -= a.cost(f)
	a.mu.Unlock()
	a.cond.Broadcast()
}

// close stops preparing and waits for the goroutines to end.
func (a *readAhead) close() {
	a.mu.Lock()
	a.stopped = true
	a.mu.Unlock()
	a.cond.Broadcast()
	close(a.stop)
	a.wg.Wait()
}
