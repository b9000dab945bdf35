package cas

import (
	"bytes"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// movedCases are the objects of the tests of a reader whose object a
// repack moves: one stored raw, one compressed, each alone in its record.
func movedCases() []struct {
	name string
	data []byte
} {
	return []struct {
		name string
		data []byte
	}{{"raw", noise(2<<20, 9)}, {"zstd", mixed(2<<20, 9)}}
}

// syncedObject puts data, synced, into a new writable store on fsys, and
// returns the store, its home and the object's id.
func syncedObject(t *testing.T, fsys vfs.FS, data []byte) (*Store, string, Key) {
	t.Helper()
	s, home := newStore(t, fsys, Options{})
	id := mustPut(t, s, KindToolResult, data)
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	return s, home, id
}

// A repack in the same process that removes the segment an ObjectReader
// reads from closed the store's handle under it: the next range read
// failed as "object ... is corrupt" (read: file already closed), for an
// object that was intact and had only moved; so did a read after the
// store was closed.
func TestObjectReaderAfterARepackRemovedItsSegment(t *testing.T) {
	for _, c := range movedCases() {
		t.Run(c.name, func(t *testing.T) {
			s, _, id := syncedObject(t, vfs.OS, c.data)
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

// A repack in the same process that closed the segment handle after
// WriteTo had written part of the object made WriteTo fail (the handle
// closed under it), where ReadRange finds the object where it is now and
// reads again. WriteTo now goes on from the byte it reached, in the
// object's new record: the writer gets every byte once.
func TestObjectReaderWriteToResumesAfterARepackMidCopy(t *testing.T) {
	for _, c := range movedCases() {
		t.Run(c.name, func(t *testing.T) {
			fsys := vfs.NewMem()
			s, home, id := syncedObject(t, fsys, c.data)
			info, err := s.Stat(id)
			if err != nil {
				t.Fatal(err)
			}
			seg := filepath.Join(home, SegmentsDir, segName(info.Segment))
			if _, err := fsys.Stat(seg); err != nil {
				t.Fatalf("segment path: %v", err)
			}
			// The first read of the object's segment once part of it
			// was written runs a repack, which removes that segment and
			// closes the store's handle to it before the read.
			var out bytes.Buffer
			repacked := false
			var rp RepackReport
			var rerr error
			fsys.SetHook(func(op vfs.Op, path string) error {
				if op != vfs.OpRead || path != seg || out.Len() == 0 || repacked {
					return nil
				}
				repacked = true
				rp, rerr = s.Repack(nil)
				return nil
			})
			n, err := s.WriteTo(id, &out)
			fsys.SetHook(nil)
			if !repacked || rerr != nil || rp.SegmentsRemoved == 0 {
				t.Fatalf("no repack mid-copy: ran %v, %+v, %v", repacked, rp, rerr)
			}
			if err != nil {
				t.Fatalf("WriteTo after a repack mid-copy: %d bytes, %v", n, err)
			}
			if n != int64(len(c.data)) || !bytes.Equal(out.Bytes(), c.data) {
				t.Fatalf("WriteTo wrote %d bytes (returned %d), want the object's %d exactly", out.Len(), n, len(c.data))
			}
		})
	}
}

// closedWriter takes its first write and fails every later one as a
// closed file does.
type closedWriter struct{ writes int }

func (w *closedWriter) Write(p []byte) (int, error) {
	w.writes++
	if w.writes > 1 {
		return 0, fs.ErrClosed
	}
	return len(p), nil
}

// A writer that fails as a closed file does is the caller's error, not a
// segment a repack closed: WriteTo returns it without reading the object
// again or writing to the writer again.
func TestObjectReaderWriteToReturnsAClosedWritersError(t *testing.T) {
	s, _, id := syncedObject(t, vfs.NewMem(), noise(2<<20, 9))
	w := &closedWriter{}
	n, err := s.WriteTo(id, w)
	var ce *CorruptError
	if !errors.Is(err, fs.ErrClosed) || errors.As(err, &ce) || n == 0 || w.writes != 2 {
		t.Fatalf("WriteTo to a closed writer: %d bytes, %d writes, %v", n, w.writes, err)
	}
}

// A second gc in the same process that moves the object again while
// WriteTo goes on from where the first left it is not tried a third time:
// WriteTo fails saying that what was written is only part of the object
// and to run again, not that the object is corrupt.
func TestObjectReaderWriteToMovedTwiceSaysTheOutputIsPartial(t *testing.T) {
	fsys := vfs.NewMem()
	data := noise(2<<20, 9)
	s, home, id := syncedObject(t, fsys, data)
	// A repack at the first read of a segment after more of the object
	// was written than at the last one, twice.
	var out bytes.Buffer
	repacks, at := 0, 0
	fsys.SetHook(func(op vfs.Op, path string) error {
		if op != vfs.OpRead || filepath.Dir(path) != filepath.Join(home, SegmentsDir) || out.Len() <= at || repacks == 2 {
			return nil
		}
		repacks, at = repacks+1, out.Len()
		if _, err := s.Repack(nil); err != nil {
			t.Errorf("repack: %v", err)
		}
		return nil
	})
	n, err := s.WriteTo(id, &out)
	fsys.SetHook(nil)
	if repacks != 2 {
		t.Fatalf("%d repacks mid-copy, want 2", repacks)
	}
	var ce *CorruptError
	if err == nil || errors.As(err, &ce) || !strings.Contains(err.Error(), "only part of it") || !strings.Contains(err.Error(), "run the command again") {
		t.Fatalf("WriteTo with the object moved twice: %d bytes, %v; want it said partial, not corrupt", n, err)
	}
	if n != int64(out.Len()) || n == 0 || n >= int64(len(data)) || !bytes.Equal(out.Bytes(), data[:n]) {
		t.Fatalf("wrote %d bytes (returned %d): want the object's first bytes, each once", out.Len(), n)
	}
}

// Moved twice before WriteTo wrote a byte (each repack closing the handle
// while the record's checksum was read), the object was called corrupt:
// "read: file already closed", for an object that had only moved. It says
// it was moved, that nothing was written, and to run again.
func TestObjectReaderWriteToMovedTwiceBeforeAByteIsNotCorrupt(t *testing.T) {
	fsys := vfs.NewMem()
	s, home, id := syncedObject(t, fsys, noise(2<<20, 9))
	var out bytes.Buffer
	// Not at the read of a record's header that opens the reader (the
	// first read of each segment): at the next, the checksum's.
	// Not the repack's own reads.
	repacks, seen, busy := 0, map[string]bool{}, false
	fsys.SetHook(func(op vfs.Op, path string) error {
		if busy || op != vfs.OpRead || filepath.Dir(path) != filepath.Join(home, SegmentsDir) || out.Len() > 0 || repacks == 2 {
			return nil
		}
		if !seen[path] {
			seen[path] = true
			return nil
		}
		repacks, busy = repacks+1, true
		if _, err := s.Repack(nil); err != nil {
			t.Errorf("repack: %v", err)
		}
		busy = false
		return nil
	})
	n, err := s.WriteTo(id, &out)
	fsys.SetHook(nil)
	if repacks != 2 {
		t.Fatalf("%d repacks before a byte was written, want 2", repacks)
	}
	var ce *CorruptError
	if err == nil || errors.As(err, &ce) || !strings.Contains(err.Error(), "moved twice") || !strings.Contains(err.Error(), "run the command again") {
		t.Fatalf("WriteTo with the object moved twice before a byte: %d bytes, %v; want it said moved, not corrupt", n, err)
	}
	if n != 0 || out.Len() != 0 {
		t.Fatalf("wrote %d bytes (returned %d), want none", out.Len(), n)
	}
}

// The store closed while WriteTo went on from where a repack left it was
// said to be a second move by a gc or repack: it is ErrClosed, as a read
// of a closed store is.
func TestObjectReaderWriteToStoreClosedAfterAMoveSaysClosed(t *testing.T) {
	fsys := vfs.NewMem()
	s, home, id := syncedObject(t, fsys, noise(2<<20, 9))
	var out bytes.Buffer
	step, at := 0, 0
	fsys.SetHook(func(op vfs.Op, path string) error {
		if op != vfs.OpRead || filepath.Dir(path) != filepath.Join(home, SegmentsDir) || out.Len() <= at || step == 2 {
			return nil
		}
		step, at = step+1, out.Len()
		if step == 1 {
			if _, err := s.Repack(nil); err != nil {
				t.Errorf("repack: %v", err)
			}
		} else if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		return nil
	})
	n, err := s.WriteTo(id, &out)
	fsys.SetHook(nil)
	if step != 2 {
		t.Fatalf("%d steps mid-copy, want a repack and a close", step)
	}
	if !errors.Is(err, ErrClosed) || strings.Contains(err.Error(), "moved") {
		t.Fatalf("WriteTo with the store closed after a move: %d bytes, %v; want ErrClosed", n, err)
	}
}
