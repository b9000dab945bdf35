package cas

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

type failingWriter struct{ after int }

var errWriterFull = errors.New("writer full")

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.after < len(p) {
		n := max(w.after, 0)
		w.after = 0
		return n, errWriterFull
	}
	w.after -= len(p)
	return len(p), nil
}

// WriteTo streams an object alone in a big record, compressed or raw,
// checking what it read: a flipped byte anywhere in the payload is a
// CorruptError at the end, never a silent success; small and pending
// objects are written too; an error of the writer is the writer's.
func TestWriteToStreamsAndChecks(t *testing.T) {
	s, home := newStore(t, vfs.OS, Options{})
	objs := [][]byte{
		mixed(3<<20, 1),                        // compressed, streamed
		noise(streamMin+7, 2),                  // raw, streamed
		[]byte("small, packed"),                // packed, read whole
		bytes.Repeat([]byte("y"), streamMin-1), // alone, under streamMin
	}
	var ids []Key
	for _, o := range objs {
		ids = append(ids, mustPut(t, s, KindFile, o))
	}
	pending := mustPut(t, s, KindFile, []byte("still pending"))
	var buf bytes.Buffer
	if n, err := s.WriteTo(pending, &buf); err != nil || n != 13 || buf.String() != "still pending" {
		t.Fatalf("pending object: %d bytes %q, %v", n, buf.String(), err)
	}
	s = reopen(t, s, false)
	for i, o := range objs {
		buf.Reset()
		if n, err := s.WriteTo(ids[i], &buf); err != nil || n != int64(len(o)) || !bytes.Equal(buf.Bytes(), o) {
			t.Fatalf("object %d: %d bytes, %v", i, n, err)
		}
	}
	if _, err := s.WriteTo(ids[0], &failingWriter{after: 1000}); !errors.Is(err, errWriterFull) {
		t.Fatalf("writer failing: %v, want its error", err)
	}
	seg := filepath.Join(home, SegmentsDir, segName(1))
	for i := range 2 {
		info, err := s.Stat(ids[i])
		if err != nil {
			t.Fatal(err)
		}
		orig, err := os.ReadFile(seg)
		if err != nil {
			t.Fatal(err)
		}
		for _, at := range []int64{recHeaderSize + 3, recHeaderSize + info.Stored/2, recHeaderSize + info.Stored - 1} {
			b := bytes.Clone(orig)
			b[info.Offset+at] ^= 0x40
			if err := os.WriteFile(seg, b, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := s.WriteTo(ids[i], &bytes.Buffer{})
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Errorf("object %d, byte %d of its record flipped: %v, want a CorruptError", i, at, err)
			}
		}
		if err := os.WriteFile(seg, orig, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
