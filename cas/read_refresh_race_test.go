package cas

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// Several goroutines reading through one reader after a repack in another
// process each refresh its view: the counters (the watermark) a refresh
// writes are read by the others' looks past the watermark (go test -race).
func TestReaderRefreshesItsViewFromSeveralGoroutines(t *testing.T) {
	fsys := vfs.NewMem()
	s, home := newStore(t, fsys, Options{})
	var ids []Key
	for i := 0; i < 200; i++ {
		ids = append(ids, mustPut(t, s, KindMessage, bytes.Repeat([]byte(fmt.Sprintf("object %d ", i)), 40)))
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	r, err := Open(home, Options{FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := s.Repack(nil); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for j := range ids {
				i := (j + g*50) % len(ids)
				got, err := r.Get(ids[i])
				if err != nil {
					errs <- fmt.Errorf("g%d object %d: %v", g, i, err)
					return
				}
				if !bytes.Equal(got, bytes.Repeat([]byte(fmt.Sprintf("object %d ", i)), 40)) {
					errs <- fmt.Errorf("wrong bytes %d", i)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
