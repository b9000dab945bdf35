package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
)

// An event log whose .meta was lost is kept (its events may have been
// acknowledged; with the .meta put back it is a session again): gc keeps
// what it names, capture manifests expanded, and names the log
// (KeptLogsWithoutMeta). gc marked only sessions with a .meta and
// collected it all, silently. A body it names missing from the store
// stops gc, naming the log and `rook session rm ID`, as a session's does.
func TestGCKeepsWhatALogWithoutMetaNames(t *testing.T) {
	r, ws, a := newWorkspace(t)
	r.Append(a, Entry{Kind: eventlog.KindAssistant, Body: []byte("an acknowledged reply, only in this session")})
	os.WriteFile(filepath.Join(ws, "f.txt"), []byte("a file only this session captured"), 0o644)
	if _, _, err := r.CaptureSession(a, []string{"f.txt"}, "edit", DefaultLimits); err != nil {
		t.Fatal(err)
	}
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	meta := filepath.Join(r.home, cas.EventsDir, a.String()+".meta")
	if err := os.Rename(meta, meta+".bak"); err != nil {
		t.Fatal(err)
	}
	rep, err := r.GC(0, false, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(r.home, cas.EventsDir, a.String()+".log")
	if rep.Collectable != 0 || len(rep.KeptLogsWithoutMeta) != 1 || rep.KeptLogsWithoutMeta[0] != logPath {
		t.Fatalf("gc with a log whose .meta was lost: collectable %d, kept logs %v: want 0 and %s", rep.Collectable, rep.KeptLogsWithoutMeta, logPath)
	}
	if err := os.Rename(meta+".bak", meta); err != nil {
		t.Fatal(err)
	}
	evs, err := r.Log.Read(a, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if _, err := r.Body(ev); err != nil {
			t.Fatalf("event %d with the .meta put back: %v", ev.Seq, err)
		}
	}
	if v, _ := r.Store.Verify(nil); len(v.Problems) != 0 {
		t.Fatalf("verify: %v", v.Problems)
	}

	// A body of such a log not in the store: gc refuses, naming the log.
	r.Append(a, Entry{Kind: eventlog.KindNote, Body: []byte("a note whose body goes")})
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	evs, _ = r.Log.Read(a, 0, 100)
	gone := evs[len(evs)-1].Body
	if err := os.Remove(meta); err != nil {
		t.Fatal(err)
	}
	live, _, err := r.Roots(map[eventlog.ID]bool{}, nil)
	if err != nil || !live[gone] {
		t.Fatalf("roots: %v, the note's body live %v", err, live[gone])
	}
	if _, err := r.Store.Collect(cas.GCOptions{Live: func(id cas.Key) bool { return id != gone }}); err != nil {
		t.Fatal(err)
	}
	_, err = r.GC(0, true, nil, nil)
	if err == nil || !strings.Contains(err.Error(), logPath) || !strings.Contains(err.Error(), "`rook session rm "+a.String()+"`") {
		t.Fatalf("gc with a body of a log without .meta missing: %v; want it refused, naming the log and session rm", err)
	}
}

// What a log with no .meta names is checked by verify as gc marks it: a
// body of such a log missing from the store is a problem verify reports
// (gc refuses on it; a lost dictionary's records may hold it). verify
// only listed the log, and said every named object was there while gc
// refused to run.
func TestVerifyChecksWhatALogWithoutMetaNames(t *testing.T) {
	r, _, a := newWorkspace(t)
	r.Append(a, Entry{Kind: eventlog.KindNote, Body: []byte("a note whose body goes")})
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	evs, err := r.Log.Read(a, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	gone := evs[len(evs)-1].Body
	if _, err := r.Store.Collect(cas.GCOptions{Live: func(id cas.Key) bool { return id != gone }}); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(r.home, cas.EventsDir, a.String()+".meta")); err != nil {
		t.Fatal(err)
	}
	rep, err := r.VerifyReferences(nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range rep.Problems {
		if p.ID == cas.Short(gone) && p.Session == a.String() {
			found = true
		}
	}
	if !found || len(rep.LogsWithoutMeta) != 1 {
		t.Fatalf("verify of a log without .meta whose body %s is gone: problems %+v, logs without meta %v; want the body named missing, in %s", cas.Short(gone), rep.Problems, rep.LogsWithoutMeta, a)
	}
}
