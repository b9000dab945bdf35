package agent

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// lastRecord appends entry alone to session id and returns the bytes the
// log took for it (the record as the eventlog encodes it).
func lastRecord(t *testing.T, r *Rook, fsys *vfs.MemFS, id eventlog.ID, entry Entry) []byte {
	t.Helper()
	path := filepath.Join(testHome, cas.EventsDir, id.String()+".log")
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	before, err := vfs.ReadFile(fsys, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Append(id, entry); err != nil {
		t.Fatal(err)
	}
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	after, err := vfs.ReadFile(fsys, path)
	if err != nil {
		t.Fatal(err)
	}
	return after[len(before):]
}

// A rewind whose point splits an event group that the fork's copy cannot
// end there (its last record, re-encoded without "more", would make the
// label before it hold a record: eventlog.Log.Fork refuses it) is
// refused, and the refusal names the rewind points around the group as
// `rook session rewind` takes them: --to, not `session fork`'s --at
// (which rewind does not have).
func TestRewindRefusedAtASplitGroupNamesRewindsFlag(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	// The bytes of event #2 as a fork at 3 would copy it: the last of
	// its copy, alone, as a scratch session holds it when appended so.
	scratch := newSession(t, r)
	for i := range 2 {
		if _, err := r.Append(scratch, Entry{Kind: eventlog.KindUser, Label: "s", Body: []byte{byte(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	copied := lastRecord(t, r, fsys, scratch, Entry{Kind: eventlog.KindUser, Label: "a", Body: []byte("b2")})
	// A record whose label runs on into the first 4 bytes of that copy.
	fakeSess := newSession(t, r)
	fake := lastRecord(t, r, fsys, fakeSess, Entry{Kind: eventlog.KindNote, Label: "forged:" + string(copied[:4]), Body: []byte("f")})
	head := fake[:len(fake)-4]
	label := strings.Repeat("x", 300-len(head)) + string(head)

	id := newSession(t, r)
	if _, err := r.Append(id, Entry{Kind: eventlog.KindUser, Label: "e0", Body: []byte("b0")}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Append(id, Entry{Kind: eventlog.KindUser, Label: label, Body: []byte("b1")}); err != nil {
		t.Fatalf("append #1: %v", err)
	}
	if _, err := r.Append(id, Entry{Kind: eventlog.KindUser, Label: "a", Body: []byte("b2")}, Entry{Kind: eventlog.KindUser, Label: "b", Body: []byte("b3")}); err != nil {
		t.Fatalf("append of the group #2-#3: %v", err)
	}
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	_, err := r.RewindWith(id, 3, RewindOptions{KeepFiles: true})
	if err == nil || !strings.Contains(err.Error(), "splits the event group") {
		t.Fatalf("rewind to 3 (splitting the group #2-#3): %v; want it refused as a fork there is", err)
	}
	if strings.Contains(err.Error(), "--at") || !strings.Contains(err.Error(), "--to 2") || !strings.Contains(err.Error(), "--to 4") {
		t.Fatalf("the rewind's refusal names `session fork`'s flag, not the rewind's (--to 2 or --to 4): %v", err)
	}
}
