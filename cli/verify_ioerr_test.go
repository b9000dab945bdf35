package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/internal/vfs"
)

// `rook store verify` called an index it could not read (EIO) damaged and
// advised a rebuild. It now says the read failed, where, the OS error,
// that the store may be fine and to run it again once the disk or the
// permissions are fixed; --json marks it (index_read_failed, and the
// problem's status).
func TestVerifyIndexReadFailureIsNotDamage(t *testing.T) {
	home := "/home/u/.rook"
	segs := filepath.Join(home, cas.SegmentsDir)
	for _, c := range []struct {
		name  string
		arm   func(op vfs.Op, path string) bool // reads of the index fail from the first op it is true of
		again string                            // what to run again
	}{
		{"opening the store", func(vfs.Op, string) bool { return true }, "run the command again"},
		{"verify's first look at the index", func(op vfs.Op, path string) bool { return op == vfs.OpReadDir && path == segs }, "run `rook store verify` again"},
		{"checking the index", func(op vfs.Op, path string) bool { return op == vfs.OpRead && filepath.Dir(path) == segs }, "run `rook store verify` again"},
	} {
		for _, asJSON := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/json=%v", c.name, asJSON), func(t *testing.T) {
				// A store that did not open has no report to print.
				verifyIndexReadFailure(t, home, c.arm, c.again, asJSON, c.name != "opening the store")
			})
		}
	}
}

// failIndexReads makes every read of the index of the store at home fail
// with EIO from the first operation arm is true of (that one included),
// and returns the index's path.
func failIndexReads(fsys *vfs.MemFS, home string, arm func(op vfs.Op, path string) bool) string {
	idx := filepath.Join(home, cas.IndexDir, cas.IndexFile)
	armed := false
	fsys.SetHook(func(op vfs.Op, path string) error {
		armed = armed || arm(op, path)
		if armed && op == vfs.OpRead && path == idx {
			return syscall.EIO
		}
		return nil
	})
	return idx
}

// newMemStore makes a store at home in a new MemFS holding n small
// objects, written and synced.
func newMemStore(t *testing.T, home string, n int) *vfs.MemFS {
	t.Helper()
	fsys := vfs.NewMem()
	if _, err := cas.Init(fsys, nil, home); err != nil {
		t.Fatal(err)
	}
	s, err := cas.Open(home, cas.Options{FS: fsys, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := s.Put(cas.KindFile, bytes.Repeat([]byte{byte(i)}, 200+i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return fsys
}

func verifyIndexReadFailure(t *testing.T, home string, arm func(op vfs.Op, path string) bool, again string, asJSON, report bool) {
	fsys := newMemStore(t, home, 100)
	idx := failIndexReads(fsys, home, arm)
	var out, errb bytes.Buffer
	err := (&VerifyCmd{}).Run(&Env{Stdout: &out, Stderr: &errb, FS: fsys, Home: home, JSON: asJSON})
	fsys.SetHook(nil)
	checkIndexReadFailureVerdict(t, idx, again, asJSON, report, out, err)
}

// A read of the index that fails on verify's second attempt (a repack
// in another process removed the segment verify was about to read, so it
// reads the store again) was the bare OS error, with no report under
// --json: it is now said as the first attempt's is.
func TestVerifySecondAttemptIndexReadFailureIsNotDamage(t *testing.T) {
	home := "/home/u/.rook"
	segs := filepath.Join(home, cas.SegmentsDir)
	for _, asJSON := range []bool{false, true} {
		t.Run(fmt.Sprintf("json=%v", asJSON), func(t *testing.T) {
			// Many small segments: verify reads on to the next one.
			fsys := vfs.NewMem()
			if _, err := cas.Init(fsys, nil, home); err != nil {
				t.Fatal(err)
			}
			w, err := cas.Open(home, cas.Options{FS: fsys, Writable: true, SegmentSize: 8192, BlockSize: 4096})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			for i := range 40 {
				b := make([]byte, 3000)
				r := rand.New(rand.NewPCG(uint64(i), 1))
				for j := range b {
					b[j] = byte(r.Uint32())
				}
				if _, err := w.Put(cas.KindFile, b); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Sync(); err != nil {
				t.Fatal(err)
			}
			idx := filepath.Join(home, cas.IndexDir, cas.IndexFile)
			busy, repacked, armed := false, false, false
			fsys.SetHook(func(op vfs.Op, path string) error {
				if busy {
					return nil
				}
				switch {
				case !repacked && op == vfs.OpRead && filepath.Dir(path) == segs:
					// verify reads the first segment: the repack
					// removes them all (the next one verify opens is
					// gone).
					busy = true
					_, err := w.Repack(nil)
					busy, repacked = false, true
					if err != nil {
						t.Error(err)
					}
				case repacked && op == vfs.OpReadDir && path == segs:
					// Verify has looked at the index's new commit and
					// lists the segments: every read of the index fails
					// from here.
					armed = true
				case armed && op == vfs.OpRead && path == idx:
					return syscall.EIO
				}
				return nil
			})
			var out, errb bytes.Buffer
			err = (&VerifyCmd{}).Run(&Env{Stdout: &out, Stderr: &errb, FS: fsys, Home: home, JSON: asJSON})
			fsys.SetHook(nil)
			if !repacked || !armed {
				t.Fatalf("repacked %v, index reads failed %v: want both under verify", repacked, armed)
			}
			checkIndexReadFailureVerdict(t, idx, "run `rook store verify` again", asJSON, true, out, err)
		})
	}
}

// checkIndexReadFailureVerdict checks verify's verdict err and output out
// say that reading the index at idx failed with EIO (not damage), and
// what to run again; under --json, when report (the store opened), out is
// the report, marked so.
func checkIndexReadFailureVerdict(t *testing.T, idx, again string, asJSON, report bool, out bytes.Buffer, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("verify passed a store whose index reads fail")
	}
	all := err.Error()
	if !asJSON { // --json's keys say "damaged_regions"
		all += out.String()
	}
	for _, bad := range []string{"damaged", "reindex"} {
		if strings.Contains(all, bad) {
			t.Errorf("says %q of an index it could not read:\n%s\n%v", bad, out.String(), err)
		}
	}
	for _, want := range []string{"reading index " + idx + " failed", "input/output error", "the store may be fine", again} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("verdict %q does not say %q", err, want)
		}
	}
	if !asJSON || !report {
		return
	}
	if out.Len() == 0 {
		t.Fatalf("--json: no report, only the verdict %q", err)
	}
	var rep struct {
		IndexReadFailed bool `json:"index_read_failed"`
		Problems        []struct {
			Status string `json:"status"`
		} `json:"problems"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if !rep.IndexReadFailed || len(rep.Problems) != 1 || rep.Problems[0].Status != cas.ProblemIndexReadFailed {
		t.Errorf("--json: %s: want index_read_failed and one problem of status %s", out.String(), cas.ProblemIndexReadFailed)
	}
}
