package cas

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// segFiles lists the store's segment files with their sizes.
func segFiles(t *testing.T, fsys vfs.FS, home string) map[string]int64 {
	t.Helper()
	ents, err := fsys.ReadDir(filepath.Join(home, SegmentsDir))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, e := range ents {
		st, err := fsys.Stat(filepath.Join(home, SegmentsDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = st.Size()
	}
	return out
}

// A writer killed while it made the store's first segment (between the
// file's create and its header's write, or inside the header) left a file
// that is not a whole segment, in a store whose index never committed.
// verify called it damage and failed, while the next writer cuts it off as
// the torn tail it is, as it does past a committed watermark.
func TestVerifyFirstSegmentCutMidCreateIsATornTail(t *testing.T) {
	for _, size := range []int{0, 10, segHeaderSize + 5} {
		fsys := vfs.NewMem()
		home := crashHome
		initCrashStore(fsys)
		var hdr []byte
		if size > 0 {
			hdr = encodeSegmentHeader(segmentHeader{Version: segVersion, Number: 1, Created: 1})
			hdr = append(hdr, "RK\x01"...)
		}
		f, err := fsys.OpenFile(filepath.Join(home, SegmentsDir, segName(1)), os.O_RDWR|os.O_CREATE|os.O_EXCL, FileMode)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(hdr[:size]); err != nil {
			t.Fatal(err)
		}
		f.Close()
		r, err := Open(home, Options{FS: fsys})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := r.Verify(nil)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Problems) != 0 || rep.DamagedRegions != 0 {
			t.Errorf("%d bytes: verify reports %v, want none (a torn tail)", size, rep.Problems)
		}
		if !strings.Contains(rep.TornTail, segName(1)) {
			t.Errorf("%d bytes: torn tail %q, want it named", size, rep.TornTail)
		}
		// And the next writer cuts it, as verify said.
		w, err := Open(home, Options{FS: fsys, Writable: true})
		if err != nil {
			t.Fatalf("%d bytes: writer open: %v", size, err)
		}
		rep, err = w.Verify(nil)
		w.Close()
		if err != nil || len(rep.Problems) != 0 || rep.TornTail != "" {
			t.Errorf("%d bytes: verify after the writer's open: %v %v %q", size, err, rep.Problems, rep.TornTail)
		}
	}
}
