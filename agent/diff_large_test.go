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
			// At a terminal: no body, the index line naming the blob.
			var out bytes.Buffer
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			d, err := r.Diff(m.ID, &out, true)
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
			// Too large to read here, not known to be binary: not called so.
			if why := "Files a/big.log and b/big.log differ (larger than 256 KiB; piped, the patch holds the change)\n"; !strings.Contains(out.String(), why) || strings.Contains(out.String(), "Binary") {
				t.Errorf("patch at a terminal: %q, want it to say %q", out.String(), why)
			}
			perByte := float64(after.TotalAlloc-before.TotalAlloc) / size
			t.Logf("%s: %.3f bytes allocated per byte of the capture", c.name, perByte)
			if perByte > 0.25 {
				t.Errorf("naming the blob of a %d-byte capture allocated %.2f bytes per byte; want it hashed as a stream (at most 0.25)", size, perByte)
			}
			// Piped: the change itself (a binary patch, or one hunk of
			// every line), the copy streamed from the store, not held.
			head := &headKept{}
			runtime.GC()
			runtime.ReadMemStats(&before)
			d, err = r.Diff(m.ID, head, false)
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatal(err)
			}
			want = "@@ -1,680157 +1 @@\n-a line of"
			if c.name == "random" {
				want = "index " + GitBlobID(c.data) + ".." + GitBlobID([]byte("now small\n")) + " 100644\nGIT binary patch\nliteral 10\n"
			}
			if len(d.Files) != 1 || d.Files[0].NoBody || !strings.Contains(string(head.b), want) {
				t.Fatalf("diff: %+v; patch has no %q:\n%.300s", d.Files, want, head.b)
			}
			perByte = float64(after.TotalAlloc-before.TotalAlloc) / size
			t.Logf("%s piped: %.3f bytes allocated per byte of the capture (a patch of %d bytes)", c.name, perByte, head.n)
			if perByte > 0.25 {
				t.Errorf("the piped patch of a %d-byte capture allocated %.2f bytes per byte; want the copy streamed (at most 0.25)", size, perByte)
			}
		})
	}
}

// headKept keeps the first 4 KiB written to it, and counts the rest.
type headKept struct {
	b []byte
	n int
}

func (h *headKept) Write(p []byte) (int, error) {
	if len(h.b) < 4<<10 {
		h.b = append(h.b, p[:min(len(p), 4<<10-len(h.b))]...)
	}
	h.n += len(p)
	return len(p), nil
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
