package agent

import (
	"bytes"
	"io"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// underSized is a lineSizer that says too little of a line.
type underSized struct{ io.Reader }

func (underSized) lineLeft(_, _ int64) int64 { return 10 }

// A line longer than a chunk is a chunk of its own, the buffer grown for
// it once, to its size, where the source says how long it is at most (a
// plain file, read on to its end; a .zst, its longest line measured when
// its frames were checked): grown by append's steps, a 500 MB line took
// 2.4 GB of allocations, up to 1.1 GB at once. A source that cannot say,
// or says too little, still gives every byte, in whole lines.
func TestChunkReaderGrowsForALongLineOnce(t *testing.T) {
	const max = 4 << 10
	long := append(bytes.Repeat([]byte("x"), 1<<20), '\n')
	var file []byte
	file = append(file, "short\n"...)
	file = append(file, long...)
	file = append(file, "tail\n"...)
	file = append(file, bytes.Repeat([]byte("y"), 300<<10)...) // no newline at the end

	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	zst := enc.EncodeAll(file, nil)
	zstdOf := func() io.Reader {
		dec, err := zstd.NewReader(nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(dec.Close)
		lines := lineMeter{min: zstLongLine}
		good, err := verifiedFrames(bytes.NewReader(zst), int64(len(zst)), dec, &lines)
		if err != nil || good != int64(len(file)) {
			t.Fatalf("%d bytes good, %v", good, err)
		}
		if err := dec.Reset(bytes.NewReader(zst)); err != nil {
			t.Fatal(err)
		}
		return zstdFile{dec: dec, read: new(int64), good: -1, long: lines.spans()}
	}
	for _, tc := range []struct {
		name  string
		r     func() io.Reader
		sized bool // grown once
	}{
		{"a plain file", func() io.Reader { return bytes.NewReader(file) }, true},
		{"a .zst", zstdOf, true},
		{"a stream", func() io.Reader { return struct{ io.Reader }{bytes.NewReader(file)} }, false},
		{"a source that says too little", func() io.Reader { return underSized{bytes.NewReader(file)} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cr := newChunkReader(tc.r(), max)
			var got []byte
			for {
				chunk, final, err := cr.next()
				if err != nil {
					t.Fatal(err)
				}
				if chunk == nil {
					break
				}
				if !final && chunk[len(chunk)-1] != '\n' {
					t.Fatalf("a chunk of %d bytes ends inside a line", len(chunk))
				}
				if i := bytes.Index(chunk, long); i >= 0 {
					// The line and what was read past it: no more room
					// than a chunk's.
					if room := cap(chunk) - (i + len(long)); tc.sized && room > max+max/8+1 {
						t.Errorf("the long line's chunk has %d bytes of room past it, cap %d for %d bytes", room, cap(chunk), len(chunk))
					}
				} else if cap(chunk) >= len(long) {
					// Another line longer than a chunk is grown for
					// itself, not to the longest line of the file.
					t.Errorf("a chunk of %d bytes without the long line has room for it: cap %d", len(chunk), cap(chunk))
				}
				got = append(got, chunk...)
				if final {
					break
				}
			}
			if !bytes.Equal(got, file) {
				t.Fatalf("read %d bytes, not the file's %d", len(got), len(file))
			}
		})
	}
}
