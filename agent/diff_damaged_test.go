package agent

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/internal/vfs"
)

// The diff of a file too large to show names its captured copy's git blob
// from the copy streamed out of the store. A copy whose record is damaged
// fails the diff with a CorruptError that names the file: no index line
// (a git blob id) is made from bytes the store has not checked.
func TestDiffOfADamagedLargeCaptureFails(t *testing.T) {
	for _, c := range []struct {
		name string
		data []byte
	}{
		{"text", bytes.Repeat([]byte("a line of a large log file, captured\n"), (3<<20)/37)},
		{"random", pseudoRandom(3 << 20)},
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
			info, err := r.Store.Stat(cas.ID(c.data))
			if err != nil {
				t.Fatal(err)
			}
			r.Close()
			seg := filepath.Join(home, cas.SegmentsDir, fmt.Sprintf("%08d.seg", info.Segment))
			b, err := os.ReadFile(seg)
			if err != nil {
				t.Fatal(err)
			}
			b[info.Offset+info.Stored/2] ^= 0x10
			if err := os.WriteFile(seg, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if r, err = Open(home, Options{}); err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var out bytes.Buffer
			_, err = r.Diff(m.ID, &out, false)
			var ce *cas.CorruptError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), "big.log: its captured copy is unreadable") {
				t.Fatalf("diff of a damaged capture: %v; want a CorruptError naming big.log", err)
			}
			if strings.Contains(out.String(), "index ") {
				t.Fatalf("patch names a blob of a damaged copy:\n%s", out.String())
			}
		})
	}
}
