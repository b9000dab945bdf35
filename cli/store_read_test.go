package cli

import (
	"bytes"
	"runtime"
	"testing"

	"github.com/rookhq/rook/cas"
)

// `rook store put FILE` reads the file into one buffer sized from it:
// io.ReadAll grew its buffer as it read, and allocated 2.2 bytes per
// byte of a 16 MiB file.
func TestPutReadsFileIntoOneBuffer(t *testing.T) {
	const size = 16 << 20
	data := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, err := readObject(bytes.NewReader(data), size)
	runtime.ReadMemStats(&after)
	got = got[cas.ObjectRoom:] // the room PutInPlace lays the block out in
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read %d of %d bytes, %v", len(got), size, err)
	}
	if perByte := float64(after.TotalAlloc-before.TotalAlloc) / size; perByte > 1.1 {
		t.Fatalf("reading %d bytes allocated %.2f bytes per byte; want one buffer of the file's size", size, perByte)
	}
	// A size that is wrong (stdin: 0; a file that grew since its Stat)
	// still reads every byte.
	for _, hint := range []int64{0, 10, size + 100} {
		if got, err := readObject(bytes.NewReader(data), hint); err != nil || !bytes.Equal(got[cas.ObjectRoom:], data) {
			t.Fatalf("size %d: read %d of %d bytes, %v", hint, len(got), size, err)
		}
	}
}
