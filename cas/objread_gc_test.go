package cas

import (
	"bytes"
	"errors"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// A repack in the same process that removes the segment an ObjectReader
// reads from closed the store's handle under it: the next range read
// failed as "object ... is corrupt" (read: file already closed), for an
// object that was intact and had only moved; so did a read after the
// store was closed.
func TestObjectReaderAfterARepackRemovedItsSegment(t *testing.T) {
	for _, c := range []struct {
		name string
		data []byte
	}{{"raw", noise(2<<20, 9)}, {"zstd", mixed(2<<20, 9)}} {
		t.Run(c.name, func(t *testing.T) {
			s, _ := newStore(t, vfs.OS, Options{})
			id := mustPut(t, s, KindToolResult, c.data)
			if err := s.Sync(); err != nil {
				t.Fatal(err)
			}
			r, err := s.OpenObject(id)
			if err != nil {
				t.Fatal(err)
			}
			if !r.Ranged() {
				t.Fatal("not read in ranges")
			}
			if got, err := r.ReadRange(0, 100); err != nil || !bytes.Equal(got, c.data[:100]) {
				t.Fatalf("range before the repack: %v", err)
			}
			if rp, err := s.Repack(nil); err != nil || rp.SegmentsRemoved == 0 {
				t.Fatalf("repack: %+v %v", rp, err)
			}
			n := int64(len(c.data))
			if got, err := r.ReadRange(n-100, 100); err != nil || !bytes.Equal(got, c.data[n-100:]) {
				t.Fatalf("range after the repack: %d bytes, %v", len(got), err)
			}
			if all, err := r.ReadAll(); err != nil || !bytes.Equal(all, c.data) {
				t.Fatalf("ReadAll after the repack: %d bytes, %v", len(all), err)
			}
			// A store closed under it: ErrClosed, not a corrupt object.
			s.Close()
			if _, err := r.ReadRange(0, 100); !errors.Is(err, ErrClosed) {
				t.Fatalf("range after the store closed: %v, want ErrClosed", err)
			}
		})
	}
}
