package agent

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/clock"
	"github.com/rookhq/rook/internal/vfs"
	"github.com/rookhq/rook/internal/vfs/vfstest"
)

// recountScene is TestForkLeavesOutWhatItsParentGrewBy's store, up to the
// import that takes in the parent's new lines: the parent holds turn 1,
// the fork (imported on its own) counts its copy of turn 2, a fork made in
// rook of the fork, and the parent's file grown by turn 2.
type recountScene struct {
	dir, pPath           string
	pid, fid, rf         eventlog.ID
	pIn, pOut, own, ownO uint64
}

func newRecountScene(t *testing.T, fsys *vfs.MemFS, format string) recountScene {
	t.Helper()
	r := testRook(t, fsys)
	var sc recountScene
	var fPath string
	var parent, fork []string
	firstTurn := len(claudeLines("P", 1))
	if format == FormatClaudeCode {
		sc.dir = "/p/-home-u-proj"
		sc.pPath, fPath = sc.dir+"/P.jsonl", sc.dir+"/F.jsonl"
		parent, fork = claudeForkFiles(false)
		sc.pIn, sc.pOut, sc.own, sc.ownO = 2*claudeTurnIn, 2*claudeTurnOut, claudeTurnIn, claudeTurnOut
	} else {
		sc.dir = "/c"
		paths, lines := codexForkFiles(sameLine)
		sc.pPath, fPath = paths[0], paths[1]
		parent, fork = lines[0], lines[1]
		firstTurn = 1 + 4 // session_meta, turn 1
		sc.pIn, sc.pOut, sc.own, sc.ownO = 3000, 30, 3000, 30
	}
	writeSource(t, fsys, sc.pPath, parent[:firstTurn], "")
	sc.pid = *fileByPath(t, mustImport(t, r, format, sc.dir), sc.pPath).Session
	writeSource(t, fsys, sc.pPath, parent, "")
	writeSource(t, fsys, fPath, fork, "")
	sc.fid = *fileByPath(t, mustImport(t, r, format, fPath), fPath).Session
	s, err := r.Log.Summary(sc.fid)
	if err != nil {
		t.Fatal(err)
	}
	rf, err := r.Log.Fork(sc.fid, s.Events, eventlog.Meta{Title: "rf"})
	if err != nil {
		t.Fatal(err)
	}
	sc.rf = rf.ID
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	return sc
}

// check: the totals of a clean import of the grown parent.
func (sc recountScene) check(t *testing.T, r *Rook, when string) {
	t.Helper()
	tokensOf(t, r, sc.pid, when+": the parent", sc.pIn, sc.pOut)
	tokensOf(t, r, sc.fid, when+": the fork", sc.own, sc.ownO)
	tokensOf(t, r, sc.rf, when+": the fork made in rook of the fork", sc.own, sc.ownO)
	if m := metaOf(t, r, sc.pid); m.Source.RecountForks {
		t.Errorf("%s: the parent's mark is left: %+v", when, m.Source)
	}
}

func openRecountRook(t *testing.T, fsys *vfs.MemFS) *Rook {
	t.Helper()
	clk := &clock.Fixed{T: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	r, err := Open(testHome, Options{FS: fsys, Clock: clk, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// An import cut short (a crash at any write) after the parent's new lines
// are durable and before its forks are recounted: the next import finds
// the parent's file unchanged, yet the fork, and the fork made in rook of
// it, leave out what they copied of the new lines, as after a clean
// import (Source.RecountForks).
func TestForkRecountSurvivesACrash(t *testing.T) {
	for _, format := range []string{FormatClaudeCode, FormatCodex} {
		t.Run(format, func(t *testing.T) {
			var sc recountScene
			marked := 0
			n := vfstest.Sweep(t, nil, 0,
				func(fsys *vfs.MemFS) { sc = newRecountScene(t, fsys, format) },
				func(fsys *vfs.MemFS) error {
					r, err := Open(testHome, Options{FS: fsys, Clock: &clock.Fixed{T: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}, Writable: true})
					if err != nil {
						return err
					}
					_, err = r.Import(ImportOptions{Format: format, Paths: []string{sc.dir}})
					err = errors.Join(err, r.Close())
					// Problems are reported, not returned: the crash shows
					// in the next write.
					return errors.Join(err, fsys.WriteFileAtomic("/after-import", nil, 0o600))
				},
				func(k int, states []*vfs.MemFS) {
					fsys := states[0]
					r := openRecountRook(t, fsys)
					if m := metaOf(t, r, sc.pid); m.Source.RecountForks {
						marked++
					}
					if _, err := r.Import(ImportOptions{Format: format, Paths: []string{sc.dir}}); err != nil {
						t.Fatalf("crash at %d: import again: %v", k, err)
					}
					sc.check(t, r, fmt.Sprintf("after a crash at write %d", k))
					if t.Failed() {
						t.FailNow()
					}
				})
			if marked == 0 {
				t.Fatalf("no crash point of %d left the mark: the sweep misses the window", n)
			}
			t.Logf("swept %d crash points, %d with the mark left", n, marked)
		})
	}
}

// A clean import of a grown parent leaves no mark in any metadata: the
// files are as before the mark was added.
func TestForkRecountLeavesNoMark(t *testing.T) {
	fsys := vfs.NewMem()
	sc := newRecountScene(t, fsys, FormatClaudeCode)
	r := openRecountRook(t, fsys)
	mustImport(t, r, FormatClaudeCode, sc.dir)
	sc.check(t, r, "a clean import")
	ids, err := r.Log.IDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		b, err := vfs.ReadFile(fsys, filepath.Join(testHome, cas.EventsDir, id.String()+".meta"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "recount_forks") {
			t.Fatalf("session %s: %s", id, b)
		}
	}
}
