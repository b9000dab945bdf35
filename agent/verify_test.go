package agent

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// VerifyReferences reports each object a session's event or a ref names
// that the store does not hold, once (counting the other places that
// name it), and finds none in a store where everything is there.
func TestVerifyReferencesFindsWhatIsMissing(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	id := newSession(t, r)
	appendBodies(t, r, id, "one", "two")
	rep, err := r.VerifyReferences(nil)
	if err != nil || len(rep.Problems) != 0 || rep.Sessions != 1 || rep.Events != 2 || rep.Named != 2 {
		t.Fatalf("a whole store: %+v, %v", rep, err)
	}
	// Two events and a ref naming an object that is not in the store
	// (lost with a segment, say), beside one that is.
	gone := cas.Key{0xde, 0xad}
	if _, err := r.Log.Append(id, eventlog.Event{Kind: eventlog.KindUser, Body: gone}, eventlog.Event{Kind: eventlog.KindUser, Body: gone}); err != nil {
		t.Fatal(err)
	}
	ref := filepath.Join(testHome, RefsDir, "checkpoints", "x")
	if err := fsys.MkdirAll(filepath.Dir(ref), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := fsys.OpenFile(ref, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("dead" + strings.Repeat("0", 28) + " 1\n"))
	f.Close()
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	rep, err = r.VerifyReferences(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 1 || rep.Missing() != 1 || rep.Refs != 1 || rep.Events != 4 {
		t.Fatalf("one missing object: %+v", rep)
	}
	p := rep.Problems[0]
	if p.Session != id.String() || p.Seq == nil || *p.Seq != 2 || p.ID != cas.Short(gone) || p.Also != 2 {
		t.Fatalf("the problem: %+v", p)
	}
	if s := p.String(); !strings.Contains(s, "#2: "+cas.Short(gone)+" is not in the store (and 2 other place(s) name it)") {
		t.Fatalf("said as %q", s)
	}
}

// An object named inside a snapshot or an imported line (a file of a
// capture, a string cut out of a line) is checked too, and reported as
// found in it.
func TestVerifyReferencesFollowsContainers(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	src := "/src/-w/v.jsonl"
	writeSource(t, fsys, src, claudeLines("v", 1), "")
	sid := *mustImport(t, r, FormatClaudeCode, src).Files[0].Session
	rep, err := r.VerifyReferences(nil)
	if err != nil || len(rep.Problems) != 0 {
		t.Fatalf("an imported session: %+v, %v", rep, err)
	}
	// A line naming a string the store does not hold, stored and named
	// by a new event.
	sl := sourceLine{Cuts: []lineCut{{Gap: 1, ID: cas.Key{0xbe, 0xef}}}, Rest: []byte(`{""}`)}
	put, err := r.Store.Put(cas.KindSource, sl.encode())
	if err != nil {
		t.Fatal(err)
	}
	bad := put.ID
	if _, err := r.Log.Append(sid, eventlog.Event{Kind: eventlog.KindNote, Body: bad}); err != nil {
		t.Fatal(err)
	}
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	rep, err = r.VerifyReferences(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 1 || rep.Problems[0].In != cas.Short(bad) || rep.Problems[0].ID != cas.Short(cas.Key{0xbe, 0xef}) || rep.Problems[0].Session != sid.String() {
		t.Fatalf("a line's missing string: %+v", rep.Problems)
	}
}

// A session whose metadata does not read is one problem, not one for its
// metadata and another for its log (which cannot be read without it).
func TestVerifyReferencesReportsDamagedMetadataOnce(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	id := newSession(t, r)
	appendBodies(t, r, id, "one")
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	meta := filepath.Join(testHome, cas.EventsDir, id.String()+".meta")
	if err := fsys.WriteFileAtomic(meta, []byte("garbage{"), 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := r.VerifyReferences(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 1 || rep.Problems[0].Session != id.String() {
		t.Fatalf("damaged metadata: %+v", rep.Problems)
	}
}

// A ref file that does not parse is a problem verify reports, beside the
// others, not an error that ends the check.
func TestVerifyReferencesReportsADamagedRef(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	id := newSession(t, r)
	gone := cas.Key{0xde, 0xad}
	if _, err := r.Log.Append(id, eventlog.Event{Kind: eventlog.KindUser, Body: gone}); err != nil {
		t.Fatal(err)
	}
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	ref := filepath.Join(testHome, RefsDir, "checkpoints", "x")
	if err := fsys.MkdirAll(filepath.Dir(ref), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := fsys.WriteFileAtomic(ref, []byte("garbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := r.VerifyReferences(nil)
	if err != nil {
		t.Fatalf("a damaged ref ends verify: %v", err)
	}
	if len(rep.Problems) != 2 || rep.Missing() != 1 || rep.Problems[1].Ref != "refs/checkpoints/x" || !strings.HasPrefix(rep.Problems[1].String(), "refs/checkpoints/x: does not parse") {
		t.Fatalf("problems: %+v", rep.Problems)
	}
}

// removedAfterListing is a file system on which another process's
// `session rm` removes a session right after the events directory is
// listed.
type removedAfterListing struct {
	vfs.FS
	rm func()
}

func (s removedAfterListing) ReadDir(dir string) ([]fs.DirEntry, error) {
	ents, err := s.FS.ReadDir(dir)
	if s.rm != nil && filepath.Base(dir) == cas.EventsDir {
		s.rm()
	}
	return ents, err
}

// A session removed by another process while verify reads the others is
// not there any more: not a problem.
func TestVerifyReferencesPassesOverASessionRemovedMeanwhile(t *testing.T) {
	fsys := vfs.NewMem()
	w := testRook(t, fsys)
	id := newSession(t, w)
	appendBodies(t, w, id, "one")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	events := filepath.Join(testHome, cas.EventsDir)
	r, err := Open(testHome, Options{FS: removedAfterListing{fsys, func() {
		fsys.Remove(filepath.Join(events, id.String()+".meta"))
		fsys.Remove(filepath.Join(events, id.String()+".log"))
	}}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rep, err := r.VerifyReferences(nil)
	if err != nil || len(rep.Problems) != 0 {
		t.Fatalf("%+v, %v", rep.Problems, err)
	}
}

// A log damaged at its end: the events before the damage are still
// checked (an object one of them names that is missing is reported), as
// well as the damage.
func TestVerifyReferencesChecksTheEventsBeforeDamage(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	id := newSession(t, r)
	appendBodies(t, r, id, "one", "two")
	if _, err := r.Log.Append(id, eventlog.Event{Kind: eventlog.KindUser, Body: cas.Key{0xfe}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		appendBodies(t, r, id, fmt.Sprint("more ", i))
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	// A byte of the last record, with no writer to have torn it: damage.
	log := filepath.Join(testHome, cas.EventsDir, id.String()+".log")
	b, err := vfs.ReadFile(fsys, log)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-10] ^= 0xff
	if err := fsys.WriteFileAtomic(log, b, 0o600); err != nil {
		t.Fatal(err)
	}
	ro, err := Open(testHome, Options{FS: fsys, Clock: r.clock})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	rep, err := ro.VerifyReferences(nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Missing() != 1 || len(rep.Problems) != 2 || rep.Events != 22 {
		t.Fatalf("%d events read, problems %v", rep.Events, rep.Problems)
	}
}

// The way out verify prints for an imported session whose log lost its
// header is a command to paste: a path with a space in it is one word.
func TestVerifyWayOutQuotesThePath(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	path := "/p/My Projects/-home-u-proj/S.jsonl"
	writeSource(t, fsys, path, claudeLines("S", 1), "")
	id := *fileByPath(t, mustImport(t, r, FormatClaudeCode, path), path).Session
	if err := fsys.WriteFileAtomic(filepath.Join(testHome, cas.EventsDir, id.String()+".log"), []byte("not a log"), 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := r.VerifyReferences(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "`rook import claude-code '" + path + "'` imports it again"
	for _, p := range rep.Problems {
		if p.Session == id.String() && strings.Contains(p.Reason, want) {
			return
		}
	}
	t.Fatalf("no problem of session %s says %q: %+v", id, want, rep.Problems)
}

// An object whose lookup fails (the index does not read: EIO, too many
// open files) is not checked: verify must not say everything named is in
// the store, nor call it missing; it says the check could not be made.
func TestVerifyReferencesSaysALookupThatFailed(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	id := newSession(t, r)
	appendBodies(t, r, id, "one", "two")
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := Open(testHome, Options{FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	idx := filepath.Join(testHome, cas.IndexDir, cas.IndexFile)
	fsys.SetHook(func(op vfs.Op, path string) error {
		if (op == vfs.OpRead || op == vfs.OpOpenRead) && path == idx {
			return vfs.ErrInjected
		}
		return nil
	})
	defer fsys.SetHook(nil)
	rep, err := r.VerifyReferences(nil)
	if err == nil {
		t.Fatalf("lookups failed, and verify says %+v", rep)
	}
	if rep.Missing() != 0 {
		t.Fatalf("a failed lookup reported as missing: %+v", rep.Problems)
	}
	if !strings.Contains(err.Error(), "could not be looked up") || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("said as %q", err)
	}
	if testing.Verbose() {
		t.Log(err)
	}
}
