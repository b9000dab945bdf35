package agent

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A restore's memory is about one file's, not the checkpoint's: the plan
// reads each copy to write as a stream to verify it (its hash), keeps
// none, and Apply streams each again into its file (Plan.copyOf,
// Rook.writeChange). It held every copy at once (planRestore kept each
// Change's bytes): 4 files of 100 MB took 400 MB of RSS, as the store
// streams a big object precisely so that its memory stays bounded
// (Store.WriteTo). Here 16 files of 4 MiB (64 MiB) restore with a heap
// peak well under the checkpoint's size.
func TestCheckpointRestoreMemoryIsAboutOneFile(t *testing.T) {
	r, ws, _ := newWorkspace(t)
	const files, size = 16, 4 << 20
	buf := make([]byte, size)
	for i := range files {
		rand.Read(buf)
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("asset%02d.bin", i)), buf, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	buf = nil
	if _, _, err := r.CreateCheckpoint("assets", ws, "", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	_, m, err := r.ResolveCheckpoint("assets")
	if err != nil {
		t.Fatal(err)
	}
	to := filepath.Join(t.TempDir(), "copy")
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var s runtime.MemStats
		for {
			select {
			case <-stop:
				return
			default:
			}
			runtime.ReadMemStats(&s)
			if s.HeapAlloc > peak.Load() {
				peak.Store(s.HeapAlloc)
			}
			time.Sleep(200 * time.Microsecond)
		}
	}()
	rep, err := r.RestoreCheckpoint("assets", m, to)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if rep.Written != files {
		t.Fatalf("restored %d files, want %d", rep.Written, files)
	}
	grew := int64(peak.Load()) - int64(base)
	if grew > files*size/2 {
		t.Errorf("restoring %d files of %d MiB (%d MiB in all) grew the heap by %d MiB at its peak: the restore holds every file's copy at once", files, size>>20, files*size>>20, grew>>20)
	}
}
