package agent

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/clock"
	"github.com/rookhq/rook/internal/vfs"
)

func TestGCFreesWhatARemovedSessionAloneHeld(t *testing.T) {
	r, ws, a := newWorkspace(t)
	b, _ := r.NewSession("other", ws, nil)
	shared := []byte("a tool result both sessions saw, long enough to be worth sharing")
	r.Append(a, Entry{Kind: eventlog.KindToolResult, Body: shared})
	r.Append(b.ID, Entry{Kind: eventlog.KindToolResult, Body: shared})
	r.Append(a, Entry{Kind: eventlog.KindAssistant, Body: []byte("only in the removed session")})
	os.WriteFile(filepath.Join(ws, "f.txt"), []byte("captured file content"), 0o644)
	if _, _, err := r.CaptureSession(b.ID, []string{"f.txt"}, "edit", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.CreateCheckpoint("cp", ws, "", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	r.Flush()
	rep, err := r.GC(0, false, nil, nil)
	if err != nil || rep.Collectable != 0 {
		t.Fatalf("gc with everything reachable: %+v %v", rep, err)
	}
	if _, err := r.Log.Remove(a); err != nil {
		t.Fatal(err)
	}
	rep, err = r.GC(0, false, nil, nil)
	if err != nil || rep.Collectable != 1 {
		t.Fatalf("gc after rm: %+v %v", rep, err)
	}
	// The shared body, the capture's manifest and file, the checkpoint all stay.
	evs, _ := r.Log.Read(b.ID, 0, 10)
	for _, ev := range evs {
		if _, err := r.Body(ev); err != nil {
			t.Fatalf("event %d of the kept session: %v", ev.Seq, err)
		}
	}
	if _, m, err := r.ResolveCheckpoint("cp"); err != nil || len(m.Files) != 1 {
		t.Fatalf("checkpoint after gc: %v", err)
	} else if _, err := r.Store.Get(m.Files["f.txt"].ID); err != nil {
		t.Fatalf("checkpointed file after gc: %v", err)
	}
	if v, _ := r.Store.Verify(nil); len(v.Problems) != 0 {
		t.Fatalf("verify: %v", v.Problems)
	}
}

func TestGCRefusesWhenAReachableSnapshotCannotBeRead(t *testing.T) {
	r, ws, id := newWorkspace(t)
	os.WriteFile(filepath.Join(ws, "f.txt"), []byte("content"), 0o644)
	seq, _, err := r.CaptureSession(id, []string{"f.txt"}, "", DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	// Garbage that gc would collect, if it ran.
	r.Store.Put(cas.KindNote, []byte("unreachable note, would be collected"))
	r.Flush()
	evs, _ := r.Log.Read(id, seq, 1)
	home := damageRecordOf(t, r, evs[0].Body)
	r2, err := Open(home, Options{Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	before, _ := r2.Store.Stats()
	_, err = r2.GC(0, false, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "refuses") {
		t.Fatalf("gc with an unreadable snapshot: %v", err)
	}
	after, _ := r2.Store.Stats()
	if after.Objects != before.Objects {
		t.Fatal("gc deleted something despite refusing")
	}
	var ce *cas.CorruptError
	if !errors.As(err, &ce) && !strings.Contains(err.Error(), "corrupt") {
		t.Logf("error: %v", err)
	}
}

// The mark reports its progress by session, ending at its total, and
// marks what Roots marks.
func TestGCMarkingReportsProgress(t *testing.T) {
	r, ws, a := newWorkspace(t)
	b, _ := r.NewSession("other", ws, nil)
	r.Append(a, Entry{Kind: eventlog.KindAssistant, Body: []byte("in the first session")})
	r.Append(b.ID, Entry{Kind: eventlog.KindAssistant, Body: []byte("in the second session")})
	r.Flush()
	var calls [][2]int64
	rep, err := r.GC(0, true, func(done, total int64) { calls = append(calls, [2]int64{done, total}) }, nil)
	if err != nil || rep.Collectable != 0 {
		t.Fatalf("gc: %+v %v", rep, err)
	}
	if len(calls) == 0 {
		t.Fatal("no mark progress")
	}
	last := calls[len(calls)-1]
	if last[0] != last[1] || last[1] < 2 {
		t.Fatalf("mark progress ends at %v (calls %v)", last, calls)
	}
	for i := 1; i < len(calls); i++ {
		if calls[i][0] < calls[i-1][0] {
			t.Fatalf("mark progress goes back: %v", calls)
		}
	}
}

// gc removes the temporary files of durable writes a crash left between
// their create and their rename (renameio's ".NAME<digits>"), once older
// than the grace; nothing else, and a dry run only counts them.
func TestGCRemovesTheTemporaryFilesACrashLeft(t *testing.T) {
	r, ws, _ := newWorkspace(t)
	home := filepath.Join(filepath.Dir(ws), "store")
	old := time.Now().Add(-time.Hour)
	write := func(rel string, mtime time.Time) string {
		p := filepath.Join(home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("half a write"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gone := []string{
		write("events/.01M8R3W2S7TK8B6YBQNXPXW5PV.meta1234567890", old),
		write("events/.01M8R3W2S7TK8B6YBQNXPXW5PV.log987", old),
		write(".FORMAT42", old),
		write(".rewind-opened.json815", old),
		write("refs/checkpoints/.before7", old),
		write("dict/.00000002.zdict31", old),
	}
	kept := []string{
		write("events/.01M8R3W2S7TK8B6YBQNXPXW5PW.meta55", time.Now()), // a write in flight, for all gc knows
		write("events/.hidden", old),
		write("events/123", old),
		write(".7", old),
		// The home may be a directory of the user's own (rook init takes
		// one that is not empty): there only FORMAT is rook's to write.
		write(".zcompdump-host-5.8", old),
		write(".report2024", old),
		write(".FORMATTED7", old),
	}
	rep, err := r.GC(10*time.Minute, true, nil, nil)
	if err != nil || rep.TempFiles != len(gone) || rep.TempBytes != int64(len(gone)*len("half a write")) {
		t.Fatalf("dry run: %+v %v", rep, err)
	}
	for _, p := range append(gone, kept...) {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("a dry run removed %s", p)
		}
	}
	if rep, err = r.GC(10*time.Minute, false, nil, nil); err != nil || rep.TempFiles != len(gone) {
		t.Fatalf("gc: %+v %v", rep, err)
	}
	for _, p := range gone {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left: %v", p, err)
		}
	}
	for _, p := range kept {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s removed: %v", p, err)
		}
	}
}

// A writer that rebuilds the index writes index/REBUILDING through the
// durable-write helper: a crash between the helper's create and rename
// left ".REBUILDING<digits>" in index/, where gc never looked, so it
// stayed for good. gc removes it as it does the others (only the
// marker's: index/ holds nothing else rook writes whole).
func TestGCRemovesTheRebuildMarkersTemporaryFile(t *testing.T) {
	r, ws, _ := newWorkspace(t)
	home := filepath.Join(filepath.Dir(ws), "store")
	old := time.Now().Add(-time.Hour)
	write := func(rel string) string {
		p := filepath.Join(home, rel)
		if err := os.WriteFile(p, []byte("started"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gone := write(filepath.Join(cas.IndexDir, "."+cas.RebuildMarker+"4242"))
	kept := write(filepath.Join(cas.IndexDir, "."+cas.IndexFile+"77"))
	rep, err := r.GC(10*time.Minute, false, nil, nil)
	if err != nil || rep.TempFiles != 1 {
		t.Fatalf("gc: %d temporary files removed, error %v: want 1", rep.TempFiles, err)
	}
	if _, err := os.Stat(gone); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s left: %v", gone, err)
	}
	if _, err := os.Stat(kept); err != nil {
		t.Errorf("%s removed: %v", kept, err)
	}
}

// An index rebuilt past a damaged snapshot's record forgets the snapshot:
// the capture event's body is then missing, while the file it named is
// still there, intact. gc cannot tell what a missing body named, so it
// refuses, naming the event and the ways out, and the file stays.
func TestGCRefusesWhenAReachableBodyIsMissing(t *testing.T) {
	r, ws, id := newWorkspace(t)
	os.WriteFile(filepath.Join(ws, "f.txt"), []byte("the only copy of what the file held"), 0o644)
	seq, _, err := r.CaptureSession(id, []string{"f.txt"}, "", DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	r.Flush()
	evs, _ := r.Log.Read(id, seq, 1)
	m, err := r.ReadManifest(evs[0].Body)
	if err != nil {
		t.Fatal(err)
	}
	file := m.Files["f.txt"].ID
	home := damageRecordOf(t, r, evs[0].Body)
	// The rebuilt index (a writer rebuilds a missing one) leaves the
	// damaged record out.
	if err := os.Remove(filepath.Join(home, cas.IndexDir, cas.IndexFile)); err != nil {
		t.Fatal(err)
	}
	r2, err := Open(home, Options{Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	var nf *cas.NotFoundError
	if _, err := r2.Store.StatEntry(evs[0].Body); !errors.As(err, &nf) {
		t.Fatalf("the snapshot after the rebuild: %v, want it not found", err)
	}
	for _, dry := range []bool{true, false} {
		_, err = r2.GC(0, dry, nil, nil)
		want := fmt.Sprintf("object %s, the body of session %s event #%d, is not in the store", cas.Short(evs[0].Body), id, seq)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "refuses to sweep") ||
			!strings.Contains(err.Error(), fmt.Sprintf("rook session fork %s --at %d", id, seq)) {
			t.Fatalf("gc (dry run %v) with a missing body: %v, want %q and the ways out", dry, err, want)
		}
	}
	if got, err := r2.Store.Get(file); err != nil || string(got) != "the only copy of what the file held" {
		t.Fatalf("the file the lost snapshot named, after gc: %q, %v", got, err)
	}
}

// damageRecordOf closes r and flips a byte of the record holding id in
// its segment, returning the store's home to open again.
func damageRecordOf(t *testing.T, r *Rook, id cas.Key) string {
	t.Helper()
	info, err := r.Store.Stat(id)
	if err != nil {
		t.Fatal(err)
	}
	home := r.Store.Home()
	r.Close()
	seg := filepath.Join(home, cas.SegmentsDir, fmt.Sprintf("%08d.seg", info.Segment))
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	b[info.Offset+40] ^= 0xff
	if err := os.WriteFile(seg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

// damagedStore damages the record holding id (damageRecordOf) and opens
// the store again: how "missing" rebuilds the index without it (the
// object gone from the store), else it stays, corrupt.
func damagedStore(t *testing.T, r *Rook, id cas.Key, how string) *Rook {
	t.Helper()
	home := damageRecordOf(t, r, id)
	if how == "missing" {
		// The rebuilt index leaves the damaged record out.
		if err := os.Remove(filepath.Join(home, cas.IndexDir, cas.IndexFile)); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Open(home, Options{FS: vfs.OS, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// Content addressing keeps the kind of an object's first put: a capture
// manifest whose bytes the store took first as a file (a workspace file
// holding a manifest copied from another store, captured by a checkpoint)
// stays a "file". A checkpoint event or a checkpoint ref naming it is a
// capture all the same (diff, rewind and restore read it by what names
// it), so gc keeps the files it names and verify checks that they are
// there. gc collected them (and verify passed), and the session's diff
// then failed: "its captured copy is unreadable".
func TestGCKeepsTheFilesOfACaptureStoredAsAnotherKind(t *testing.T) {
	for _, by := range []string{"event", "ref"} {
		t.Run(by, func(t *testing.T) {
			r, ws, s := newWorkspace(t)
			file := []byte("the only copy of a file, named by the capture alone")
			put, err := r.Store.Put(cas.KindFile, file)
			if err != nil {
				t.Fatal(err)
			}
			manifest := []byte(fmt.Sprintf(`{"v":1,"root":%q,"captured_at":"2026-01-01T00:00:00Z","files":{"f.txt":{"id":"%x","size":%d,"mode":"0644"}},"total_bytes":%d}`,
				ws, put.ID, len(file), len(file)))
			mput, err := r.Store.Put(cas.KindFile, manifest) // first as a file
			if err != nil {
				t.Fatal(err)
			}
			if by == "event" {
				if _, err := r.Append(s, Entry{Kind: eventlog.KindCheckpoint, Body: manifest}); err != nil {
					t.Fatal(err)
				}
			} else if err := r.writeRef("cp", mput.ID); err != nil {
				t.Fatal(err)
			}
			if err := r.Flush(); err != nil {
				t.Fatal(err)
			}
			if info, err := r.Store.StatEntry(mput.ID); err != nil || info.Kind != cas.KindFile {
				t.Fatalf("the manifest's entry: %+v %v (the test needs it stored as a file)", info, err)
			}
			rep, err := r.GC(0, false, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.Store.Get(put.ID); err != nil {
				t.Fatalf("gc collected the file a reachable capture names (%+v): %v", rep, err)
			}
			// verify follows such a capture too: a file it names that is
			// not in the store is a problem.
			lost := cas.ID([]byte("a file this store never held"))
			lostManifest := []byte(fmt.Sprintf(`{"v":1,"root":%q,"captured_at":"2026-01-01T00:00:01Z","files":{"g.txt":{"id":"%x","size":28,"mode":"0644"}},"total_bytes":28}`, ws, lost))
			lput, err := r.Store.Put(cas.KindFile, lostManifest)
			if err != nil {
				t.Fatal(err)
			}
			if by == "event" {
				if _, err := r.Append(s, Entry{Kind: eventlog.KindCheckpoint, Body: lostManifest}); err != nil {
					t.Fatal(err)
				}
			} else if err := r.writeRef("cp2", lput.ID); err != nil {
				t.Fatal(err)
			}
			if err := r.Flush(); err != nil {
				t.Fatal(err)
			}
			vr, err := r.VerifyReferences(nil)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, p := range vr.Problems {
				found = found || p.ID == cas.Short(lost)
			}
			if !found {
				t.Fatalf("verify did not report the file the capture names, missing: %+v", vr.Problems)
			}
		})
	}
}

// A file in refs/checkpoints that does not parse stops gc, which says the
// way out: `rook checkpoint rm NAME` only for a checkpoint's name. For any
// other (an editor's "#cp#" beside a ref being fixed by hand, a name with
// a space) rm refuses the name, so gc says to fix or remove the file; it
// named the rm, which failed ("checkpoint name ...: use letters, ...").
func TestGCRefusalNamesACheckpointRmOnlyForACheckpointName(t *testing.T) {
	r, _, _ := newWorkspace(t)
	dir := filepath.Join(r.home, RefsDir, "checkpoints")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, rm := range map[string]bool{"cp": true, "#cp#": false, "a b": false} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("not a ref line\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := r.GC(0, true, nil, nil)
		os.Remove(p)
		if err == nil {
			t.Fatalf("%q: gc swept past a ref that does not parse", name)
		}
		if got := strings.Contains(err.Error(), "checkpoint rm"); got != rm {
			t.Errorf("%q: names checkpoint rm: %v, want %v: %v", name, got, rm, err)
		}
		if !rm && !strings.Contains(err.Error(), "fix or remove the file") {
			t.Errorf("%q: %v", name, err)
		}
	}
}

// The other way round: bytes first put as a snapshot (`rook store put
// --kind snapshot`, a kind mistyped) that are no manifest, then a
// message's body. Nothing reads the message as a capture, so gc does not
// refuse to sweep ("a reachable snapshot cannot be read") and verify
// finds nothing wrong; it did both, for good. A checkpoint event naming
// such bytes is still a problem (diff and rewind fail on it).
func TestGCAndVerifyPassAMessageStoredAsASnapshotKind(t *testing.T) {
	r, _, s := newWorkspace(t)
	body := []byte("a message, not a manifest")
	if _, err := r.Store.Put(cas.KindSnapshot, body); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Append(s, Entry{Kind: eventlog.KindUser, Body: body}); err != nil {
		t.Fatal(err)
	}
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.GC(0, false, nil, nil); err != nil {
		t.Fatalf("gc: %v", err)
	}
	vr, err := r.VerifyReferences(nil)
	if err != nil || len(vr.Problems) != 0 {
		t.Fatalf("verify: %+v %v", vr.Problems, err)
	}
	if err := r.writeRef("cp", cas.ID(body)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.GC(0, true, nil, nil); err == nil {
		t.Fatal("gc planned past a checkpoint whose snapshot does not decode")
	}
	if vr, err := r.VerifyReferences(nil); err != nil || len(vr.Problems) != 1 {
		t.Fatalf("verify with the checkpoint: %+v %v", vr.Problems, err)
	}
}

// TestGCKeepsAnImportedLinesStringsWhenItsKindLookupFails: a session holds
// an imported source line (kind source) with a string cut out of it
// (stored as an object of its own). The store is reopened for gc (its
// index's node cache cold); with the fault, the one read of the index
// file behind the line's kind lookup (StatEntry) fails (EIO: a read
// error, not damage), and every other read succeeds.
//
// The mark expands the strings every reachable source line names, and an
// incomplete mark must never turn live objects into garbage: a body whose
// kind lookup failed once went on the snapshots list, read there as no
// manifest, named nothing, and its line's cut string was collected. Now
// the mark stops gc, collecting nothing, and says to run it again.
// Without the fault, gc runs and keeps the string.
func TestGCKeepsAnImportedLinesStringsWhenItsKindLookupFails(t *testing.T) {
	for _, fault := range []bool{true, false} {
		name := "no fault"
		if fault {
			name = "an index read fails"
		}
		t.Run(name, func(t *testing.T) {
			fsys := vfs.NewMem()
			clk := &clock.Fixed{T: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
			initCrashStore(fsys)
			r, err := Open(crashHome, Options{FS: fsys, Clock: clk, Writable: true})
			if err != nil {
				t.Fatal(err)
			}
			str := bytes.Repeat([]byte("a long tool output cut out of the imported line\n"), 40)
			sref, err := r.Store.Put(cas.KindMessage, str)
			if err != nil {
				t.Fatal(err)
			}
			sl := sourceLine{Cuts: []lineCut{{Gap: 9, ID: sref.ID}}, Rest: []byte(`{"text":"","n":1}`)}
			line := sl.encode()
			lref, err := r.Store.Put(cas.KindSource, line)
			if err != nil {
				t.Fatal(err)
			}
			m, err := r.NewSession("imported", t.TempDir(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.Append(m.ID, Entry{Kind: eventlog.KindToolResult, Label: "Bash", Body: line}); err != nil {
				t.Fatal(err)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			clk.Advance(time.Hour) // past the grace

			r, err = Open(crashHome, Options{FS: fsys, Clock: clk, Writable: true})
			if err != nil {
				t.Fatal(err)
			}
			if info, err := r.Store.StatEntry(lref.ID); err != nil || info.Kind != cas.KindSource {
				r.Close()
				t.Fatalf("the line is held as %v (%v), want source", info.Kind, err)
			}
			// Reopen so that the index's node cache is cold again.
			r.Close()
			if r, err = Open(crashHome, Options{FS: fsys, Clock: clk, Writable: true}); err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var reads atomic.Int32
			fsys.SetHook(func(op vfs.Op, path string) error {
				if op == vfs.OpRead && strings.HasSuffix(path, cas.IndexFile) && reads.Add(1) == 1 && fault {
					return vfs.ErrInjected // one failed read of the index, then reads succeed
				}
				return nil
			})
			rep, gcErr := r.GC(10*time.Minute, false, nil, nil)
			fsys.SetHook(nil)
			if reads.Load() == 0 {
				t.Fatal("gc read no index node: the test no longer reaches the kind lookup")
			}
			if _, err := r.Store.Get(sref.ID); err != nil {
				evs, _ := r.Log.Read(m.ID, 0, 1)
				_, berr := r.Body(evs[0])
				t.Fatalf("gc (error: %v) collected the string a reachable imported line names: get: %v; the line's body: %v",
					gcErr, err, fmt.Sprint(berr))
			}
			if !fault {
				if gcErr != nil {
					t.Fatalf("gc: %v", gcErr)
				}
				return
			}
			want := fmt.Sprintf("object %s, the body of session %s event #0: its kind could not be looked up", cas.Short(lref.ID), m.ID)
			if gcErr == nil || !strings.Contains(gcErr.Error(), want) || !strings.Contains(gcErr.Error(), "run gc again") || rep.Collectable != 0 {
				t.Fatalf("gc with a failed kind lookup: %v (collectable %d), want it to stop with %q and say to run gc again", gcErr, rep.Collectable, want)
			}
		})
	}
}
