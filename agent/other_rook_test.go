package agent

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/rookhq/rook/internal/clock"
	"github.com/rookhq/rook/internal/vfs"
)

// readerAfter closes the writer w and opens a reader of its store on
// fsys, with the fixed clock the other rook of removeBeforeRead is given
// too; the reader is closed when the test ends.
func readerAfter(t *testing.T, fsys *vfs.MemFS, w *Rook) (*Rook, *clock.Fixed) {
	t.Helper()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	clk := &clock.Fixed{T: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	rd, err := Open(testHome, Options{FS: fsys, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rd.Close() })
	return rd, clk
}

// removeBeforeRead arms fsys so that, just before the first open for
// reading of path, another rook on the same store (a writer of its own,
// as a `rook session rm` or `checkpoint rm` run beside a reader) runs rm.
// done disarms the hook and says whether rm ran and what it, or the other
// rook's open or close, returned.
func removeBeforeRead(fsys *vfs.MemFS, clk clock.Clock, path string, rm func(other *Rook) error) (done func() (removed bool, err error)) {
	path = filepath.Clean(path)
	removed, inHook := false, false
	var rmErr error
	fsys.SetHook(func(op vfs.Op, p string) error {
		if removed || inHook || op != vfs.OpOpenRead || filepath.Clean(p) != path {
			return nil
		}
		inHook = true // the other rook's own reads pass
		defer func() { inHook = false }()
		removed = true
		other, err := Open(testHome, Options{FS: fsys, Clock: clk, Writable: true})
		if err != nil {
			rmErr = err
			return nil
		}
		rmErr = rm(other)
		if err := other.Close(); err != nil && rmErr == nil {
			rmErr = err
		}
		return nil
	})
	return func() (bool, error) {
		fsys.SetHook(nil)
		return removed, rmErr
	}
}
