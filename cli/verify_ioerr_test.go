package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
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
				verifyIndexReadFailure(t, home, c.arm, c.again, asJSON)
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

func verifyIndexReadFailure(t *testing.T, home string, arm func(op vfs.Op, path string) bool, again string, asJSON bool) {
	fsys := newMemStore(t, home, 100)
	idx := failIndexReads(fsys, home, arm)
	var out, errb bytes.Buffer
	err := (&VerifyCmd{}).Run(&Env{Stdout: &out, Stderr: &errb, FS: fsys, Home: home, JSON: asJSON})
	fsys.SetHook(nil)
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
	if !asJSON || out.Len() == 0 { // no report when the store did not open
		return
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
