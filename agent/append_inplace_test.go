package agent

import (
	"bytes"
	"testing"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// TestAppendInPlace: a body handed over with its room (Entry.InPlace) is
// stored as Body, big (a block of its own, laid out where it lies) or
// small; an InPlace that is not Body behind the room is refused, not
// stored as other bytes than the event names.
func TestAppendInPlace(t *testing.T) {
	r := testRook(t, vfs.NewMem())
	id := newSession(t, r)
	for _, n := range []int{0, 10, 4 << 20} {
		buf := make([]byte, cas.ObjectRoom+n)
		for i := range buf[cas.ObjectRoom:] {
			buf[cas.ObjectRoom+i] = byte(i*13 + n)
		}
		want := bytes.Clone(buf[cas.ObjectRoom:])
		seq, err := r.Append(id, Entry{Kind: eventlog.KindNote, Body: buf[cas.ObjectRoom:], InPlace: buf})
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		evs, err := r.Log.Read(id, seq, 1)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.Body(evs[0])
		if err != nil || !bytes.Equal(got, want) || evs[0].Body != cas.ID(want) {
			t.Fatalf("%d bytes: read back %d, %v", n, len(got), err)
		}
	}
	buf := make([]byte, cas.ObjectRoom+10)
	other := make([]byte, 10)
	for _, en := range []Entry{
		{Kind: eventlog.KindNote, Body: other, InPlace: buf},
		{Kind: eventlog.KindNote, Body: buf[cas.ObjectRoom+1:], InPlace: buf},
		{Kind: eventlog.KindNote, Body: buf, InPlace: buf},
	} {
		if _, err := r.Append(id, en); err == nil {
			t.Fatalf("InPlace not Body behind its room: appended")
		}
	}
}
