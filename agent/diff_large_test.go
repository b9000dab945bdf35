package agent

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/internal/vfs"
)

// The diff of a file too large to show names its captured copy's git blob
// (the index line) by hashing the copy as the store streams it: it read
// the copy whole, holding a captured file of many MiB about three times
// over. Both a copy that compresses and one that does not.
func TestDiffHashesALargeCaptureAsAStream(t *testing.T) {
	const size = 24 << 20
	for _, c := range []struct {
		name string
		data []byte
	}{
		{"text", bytes.Repeat([]byte("a line of a large log file, captured\n"), size/37)},
		{"random", pseudoRandom(size)},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws := t.TempDir()
			home := filepath.Join(t.TempDir(), "store")
			if _, err := cas.Init(vfs.OS, nil, home); err != nil {
				t.Fatal(err)
			}
			r, err := Open(home, Options{Writable: true})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			m, err := r.NewSession("edit", ws, nil)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(ws, "big.log")
			if err := os.WriteFile(path, c.data, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, _, err := r.CaptureSession(m.ID, []string{"big.log"}, "write", Limits{MaxFileBytes: 1 << 30, MaxBytes: 1 << 30}); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte("now small\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			// A reader, as `rook session diff` opens the store.
			r.Close()
			if r, err = Open(home, Options{}); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			d, err := r.Diff(m.ID, &out, false)
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Files) != 1 || !d.Files[0].NoBody {
				t.Fatalf("diff: %+v", d.Files)
			}
			want := "index " + GitBlobID(c.data)[:7] + ".."
			if !strings.Contains(out.String(), want) {
				t.Fatalf("patch has no %q:\n%s", want, out.String())
			}
			perByte := float64(after.TotalAlloc-before.TotalAlloc) / size
			t.Logf("%s: %.3f bytes allocated per byte of the capture", c.name, perByte)
			if perByte > 0.25 {
				t.Errorf("naming the blob of a %d-byte capture allocated %.2f bytes per byte; want it hashed as a stream (at most 0.25)", size, perByte)
			}
		})
	}
}

func pseudoRandom(n int) []byte {
	b := make([]byte, n)
	x := uint64(88172645463325252)
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x >> 32)
	}
	return b
}
