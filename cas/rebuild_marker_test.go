package cas

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// rebuildRun is a writer that rebuilds the index of the store at home:
// a writer's open of a damaged or missing index, or `rook store reindex`
// of a damaged one (an open for the reindex, then the reindex).
func rebuildRun(fsys vfs.FS, home string, reindex bool) error {
	w, err := Open(home, Options{FS: fsys, Clock: testClock(), Writable: true, ForReindex: reindex})
	if err != nil {
		return err
	}
	if reindex {
		if _, err := w.Reindex(nil); err != nil {
			w.Close()
			return err
		}
	}
	return w.Close()
}

// A writer that moved a damaged (or found a missing) index aside, put an
// empty one in its place and was killed, or lost its power, before the
// rebuilt index replaced it, left an index of no commit beside segments
// full of records. With no writer after it, a reader's verify read that
// index, found every record an orphan and passed: "all 0 objects
// verified" of a store of 40, as if a first writer had been killed
// before its first commit. Killed or cut at every step of the rebuild,
// a reader's verify must either check all 40 objects, or fail saying the
// rebuild was left unfinished and what finishes it (never pass with
// fewer); a reader's open that cannot use the index says what to run;
// and the next writer finishes the rebuild, leaving no marker behind.
func TestVerifyAfterAWriterKilledMidRebuild(t *testing.T) {
	for _, how := range []string{"damaged", "missing", "reindex"} {
		t.Run(how, func(t *testing.T) {
			base, r, home := readerOf(t, 40)
			r.Close()
			idx := filepath.Join(home, IndexDir, IndexFile)
			marker := filepath.Join(home, IndexDir, RebuildMarker)
			if how == "missing" {
				if err := base.Remove(idx); err != nil {
					t.Fatal(err)
				}
				if err := base.SyncDir(filepath.Dir(idx)); err != nil {
					t.Fatal(err)
				}
			} else if err := base.WriteFileAtomic(idx, make([]byte, 3*8192), FileMode); err != nil {
				t.Fatal(err)
			}
			ok := base.CrashClone()
			if err := rebuildRun(ok, home, how == "reindex"); err != nil {
				t.Fatal(err)
			}
			ops := ok.WriteOps()
			unfinished := 0
			for k := 0; k <= ops; k++ {
				type left struct {
					name string
					fsys *vfs.MemFS
				}
				var clones []left
				fsys := base.CrashClone()
				fsys.CrashAt(k, func(c *vfs.MemFS) {
					clones = append(clones, left{fmt.Sprintf("power cut at write %d", k), c}, left{fmt.Sprintf("kill at write %d", k), fsys.KillClone()})
				})
				err := rebuildRun(fsys, home, how == "reindex")
				if len(clones) == 0 {
					if err != nil {
						t.Fatalf("run of %d writes not cut: %v", k, err)
					}
					break
				}
				for _, c := range clones {
					var p *Problem // the unfinished rebuild verify reported
					r, err := Open(home, Options{FS: c.fsys, Clock: testClock()})
					if err != nil {
						if !strings.Contains(err.Error(), "run `rook store reindex`") {
							t.Errorf("%s: a reader's open: %v: want what to run", c.name, err)
						}
					} else {
						rep, verr := r.Verify(nil)
						r.Close()
						for i := range rep.Problems {
							if rep.Problems[i].Status == ProblemIndexRebuildUnfinished {
								p = &rep.Problems[i]
							}
						}
						switch {
						case verr != nil:
							t.Errorf("%s: verify: %v", c.name, verr)
						case p != nil:
							unfinished++
							for _, want := range []string{idx, marker, home, "records", "`rook store reindex`", "verify checked no object against an index"} {
								if !strings.Contains(p.Reason, want) {
									t.Errorf("%s: the problem %q does not say %q", c.name, p.Reason, want)
								}
							}
						case len(rep.Problems) != 0 || rep.Objects != 40:
							t.Errorf("%s: verify found %d objects (%d records, %d orphans), problems %v, and no unfinished rebuild: want all 40 checked, or the rebuild said to be unfinished", c.name, rep.Objects, rep.Records, rep.Orphans, rep.Problems)
						}
					}
					w, err := Open(home, Options{FS: c.fsys, Clock: testClock(), Writable: true})
					if err != nil {
						t.Errorf("%s: the next writer: %v", c.name, err)
						continue
					}
					if notices := strings.Join(w.Notices, "\n"); p != nil && !strings.Contains(notices, "was left unfinished: rebuilt from 20 segment(s), 40 objects") {
						t.Errorf("%s: the next writer's notices %q do not say it finished the rebuild", c.name, notices)
					}
					if err := w.Close(); err != nil {
						t.Errorf("%s: the next writer: %v", c.name, err)
						continue
					}
					if _, err := c.fsys.Stat(marker); !errors.Is(err, fs.ErrNotExist) {
						t.Errorf("%s: after the next writer, the marker %s: %v: want it gone", c.name, marker, err)
					}
					r, err = Open(home, Options{FS: c.fsys, Clock: testClock()})
					if err != nil {
						t.Errorf("%s: a reader after the next writer: %v", c.name, err)
						continue
					}
					rep, err := r.Verify(nil)
					r.Close()
					if err != nil || len(rep.Problems) != 0 || rep.Objects != 40 {
						t.Errorf("%s: verify after the next writer: %d objects, problems %v, error %v: want 40, nothing wrong", c.name, rep.Objects, rep.Problems, err)
					}
				}
			}
			if unfinished == 0 {
				t.Errorf("no crash left an unfinished rebuild for verify to report")
			}
		})
	}
}

// A first writer killed before its first commit leaves records beside an
// index of no commit, as a killed rebuild does, but nothing it wrote was
// acknowledged: with no marker, a reader's verify passes it. The objects
// of the records a reader finds past the watermark (loadRecent: it reads
// them, and the next writer's open takes them in) it checks as it reads
// them, not as orphans.
func TestVerifyPassesAFirstWriterKilledBeforeItsFirstCommit(t *testing.T) {
	fsys := vfs.NewMem()
	w, home := newStore(t, fsys, Options{SegmentSize: 8192, BlockSize: 4096, CommitEvery: 1 << 30})
	for i := range 20 {
		mustPut(t, w, KindFile, noise(3000, uint64(2*i+1)))
	}
	killed := fsys.KillClone()
	r, err := Open(home, Options{FS: killed, Clock: testClock()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if tx := r.tree.Snapshot().TxID(); tx != 0 {
		t.Fatalf("index at txid %d: want no commit", tx)
	}
	listed, err := r.List(KindFile, 0)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := r.Verify(nil)
	if err != nil || len(rep.Problems) != 0 || rep.Records == 0 || len(listed) == 0 || rep.Objects != len(listed) {
		t.Fatalf("verify of a first writer killed before its first commit: %d records, %d objects checked (%d orphans), problems %v, error %v: want records, the %d objects the reader lists checked, nothing wrong", rep.Records, rep.Objects, rep.Orphans, rep.Problems, err, len(listed))
	}
}

// A writer that cannot write the rebuild marker (a full disk) does not
// start the rebuild: its open fails naming the marker, and the damaged
// index is where it was, not moved aside, for the next writer to rebuild.
func TestRebuildMarkerNotWrittenTouchesNothing(t *testing.T) {
	fsys, r, home := readerOf(t, 4)
	r.Close()
	idx := filepath.Join(home, IndexDir, IndexFile)
	damaged := make([]byte, 3*8192)
	if err := fsys.WriteFileAtomic(idx, damaged, FileMode); err != nil {
		t.Fatal(err)
	}
	fsys.SetHook(func(op vfs.Op, path string) error {
		if op == vfs.OpOpen && strings.Contains(filepath.Base(path), RebuildMarker) {
			return syscall.ENOSPC
		}
		return nil
	})
	err := rebuildRun(fsys, home, false)
	fsys.SetHook(nil)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(home, IndexDir, RebuildMarker)) || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("a writer's open with no room for the rebuild marker: %v: want it to fail naming the marker and why", err)
	}
	if b, err := vfs.ReadFile(fsys, idx); err != nil || !bytes.Equal(b, damaged) {
		t.Fatalf("the damaged index after the failed open: %d bytes, %v: want it where it was", len(b), err)
	}
	if _, err := fsys.Stat(idx + ".damaged"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the index was moved aside: %v", err)
	}
	if err := rebuildRun(fsys, home, false); err != nil {
		t.Fatal(err)
	}
	r = openReader(t, fsys, home)
	if rep, err := r.Verify(nil); err != nil || len(rep.Problems) != 0 || rep.Objects != 4 {
		t.Fatalf("verify after the next writer: %d objects, problems %v, error %v", rep.Objects, rep.Problems, err)
	}
}

// A reader's verify that cannot read the marker (permission denied) beside
// an index of no commit and records cannot tell a killed rebuild from a
// first writer's leftovers: it does not pass, and says why.
func TestVerifyDoesNotPassWhenTheMarkerDoesNotRead(t *testing.T) {
	fsys := vfs.NewMem()
	w, home := newStore(t, fsys, Options{SegmentSize: 8192, BlockSize: 4096, CommitEvery: 1 << 30})
	for i := range 6 {
		mustPut(t, w, KindFile, noise(3000, uint64(2*i+1)))
	}
	killed := fsys.KillClone()
	r := openReader(t, killed, home)
	marker := filepath.Join(home, IndexDir, RebuildMarker)
	killed.SetHook(func(op vfs.Op, path string) error {
		if op == vfs.OpOpenRead && path == marker {
			return syscall.EACCES
		}
		return nil
	})
	rep, err := r.Verify(nil)
	killed.SetHook(nil)
	if err == nil || !strings.Contains(err.Error(), marker) || !strings.Contains(err.Error(), "cannot tell") {
		t.Fatalf("verify with the marker unreadable: %d objects, problems %v, error %v: want it to fail naming the marker", rep.Objects, rep.Problems, err)
	}
}
