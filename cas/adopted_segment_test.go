package cas

import (
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// TestAdoptedSegmentIsMadeDurable: a writer that failed (or was killed)
// between creating a segment and syncing its directory leaves a segment
// whose name may not survive a power cut. The next writer goes on in it
// (it is the newest): its Sync fsynced the file alone, so its objects,
// acknowledged, went with the name at the next power cut. The first
// commit into an adopted segment must sync its directory too.
func TestAdoptedSegmentIsMadeDurable(t *testing.T) {
	for _, tc := range []struct {
		name    string
		failing vfs.Op
		// rollover: a segment with committed objects comes first, so
		// that the one the failed writer creates is past the watermark.
		rollover bool
	}{
		{"first segment, header sync", vfs.OpSync, false},
		{"first segment, directory sync", vfs.OpSyncDir, false},
		{"next segment, header sync", vfs.OpSync, true},
		{"next segment, directory sync", vfs.OpSyncDir, true},
	} {
		failing := tc.failing
		t.Run(tc.name, func(t *testing.T) {
			fsys := vfs.NewMem()
			s, home := newStore(t, fsys, Options{SegmentSize: 4096})
			if tc.rollover {
				mustPut(t, s, KindFile, noise(5000, 1))
				if err := s.Sync(); err != nil {
					t.Fatal(err)
				}
			}
			fsys.SetHook(func(op vfs.Op, path string) error {
				if op == failing && (strings.HasSuffix(path, ".seg") || strings.HasSuffix(path, SegmentsDir)) {
					return syscall.ENOSPC
				}
				return nil
			})
			if _, err := s.Put(KindMessage, noise(3000, 2)); err == nil {
				if err = s.Sync(); err == nil {
					t.Fatal("Sync succeeded though the new segment could not be made durable")
				}
			}
			fsys.SetHook(nil)
			s.Close()

			s, err := Open(home, Options{FS: fsys, Writable: true, SegmentSize: 4096})
			if err != nil {
				t.Fatal(err)
			}
			want := map[Key]string{}
			for i := 0; i < 5; i++ {
				d := fmt.Sprintf("acknowledged by the next writer %d, long enough not to be kept inline in the index", i)
				want[mustPut(t, s, KindMessage, []byte(d))] = d
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}

			s, err = Open(home, Options{FS: fsys.CrashClone(), Writable: true})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for id, d := range want {
				if got, err := s.Get(id); err != nil || string(got) != d {
					t.Fatalf("object %s after a power cut: %q, %v", Short(id), got, err)
				}
			}
		})
	}
}
