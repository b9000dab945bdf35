package agent

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// store verify names the event logs with no .meta beside them, those it
// finds so both before and after it reads the sessions: a log that gets
// its .meta while verify reads (a writer creating sessions in bulk writes
// it at its next barrier), or that comes while it reads, was being made,
// and is not named; one with none throughout is.
func TestVerifyLogsWithoutMetaListedBeforeAndAfter(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	dir := filepath.Join(testHome, cas.EventsDir)
	var ids []eventlog.ID
	for _, title := range []string{"a", "lost", "getting-meta", "coming"} {
		m, err := r.NewSession(title, "/w", nil)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	path := func(id eventlog.ID, ext string) string { return filepath.Join(dir, id.String()+ext) }
	read := func(p string) []byte {
		b, err := vfs.ReadFile(fsys, p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	lost, getting, coming := ids[1], ids[2], ids[3]
	gettingMeta, comingLog := read(path(getting, ".meta")), read(path(coming, ".log"))
	for _, p := range []string{path(lost, ".meta"), path(getting, ".meta"), path(coming, ".meta"), path(coming, ".log")} {
		if err := fsys.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	var once sync.Once
	fsys.SetHook(func(op vfs.Op, p string) error {
		if op == vfs.OpOpenRead && p == path(ids[0], ".log") {
			once.Do(func() {
				if err := fsys.WriteFileAtomic(path(getting, ".meta"), gettingMeta, 0o600); err != nil {
					t.Error(err)
				}
				if err := fsys.WriteFileAtomic(path(coming, ".log"), comingLog, 0o600); err != nil {
					t.Error(err)
				}
			})
		}
		return nil
	})
	rep, err := r.VerifyReferences(nil)
	fsys.SetHook(nil)
	if err != nil {
		t.Fatal(err)
	}
	var fired bool
	once.Do(func() { fired = true })
	if fired {
		t.Fatal("verify did not open the first session's log: the test made no log while it read")
	}
	if len(rep.LogsWithoutMeta) != 1 || rep.LogsWithoutMeta[0] != path(lost, ".log") {
		t.Fatalf("logs without .meta: %q, want only %s", rep.LogsWithoutMeta, path(lost, ".log"))
	}
}
