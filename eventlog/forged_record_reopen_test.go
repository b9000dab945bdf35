package eventlog

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// The write-time watch, through a real Log whose writer is closed
// and reopened between appends (watchFrom at state), with groups, and
// with forks at random points (a split group's copy re-encoded): no log
// it accepts ever holds a record where none starts, by a look at every
// byte, and refused appends leave the session appending as before.
func TestReopenedWritersAndForksNeverLeaveARecordWhereNoneStarts(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	fsys := vfs.NewMem()
	l := testLog(t, fsys, Options{})
	m := mustCreate(t, l, "w")
	base := l.opts.Clock.Now().UnixMilli()
	piece := func(seq uint64) string {
		rec := appendRecord(nil, &record{Event: Event{Seq: seq + uint64(rng.IntN(3)), Time: l.opts.Clock.Now(), Kind: KindNote, Label: strings.Repeat("z", rng.IntN(30))}}, base)
		switch rng.IntN(4) {
		case 0:
			return string(rec)
		case 1:
			return string(rec[:rng.IntN(len(rec))])
		case 2:
			return string(rec[rng.IntN(len(rec)):])
		}
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return string(b)
	}
	refused, next := 0, uint64(0)
	for round := range 300 {
		if rng.IntN(4) == 0 {
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = testLog(t, fsys, Options{})
		}
		evs := make([]Event, 1+rng.IntN(3))
		for i := range evs {
			evs[i] = Event{Kind: KindUser, Body: body(round), Label: piece(next+uint64(i)) + piece(next+uint64(i)+1)}
		}
		seq, err := l.Append(m.ID, evs...)
		var lr *LabelRecordError
		switch {
		case errors.As(err, &lr):
			refused++
			continue
		case err != nil:
			t.Fatalf("round %d: %v", round, err)
		case seq != next:
			t.Fatalf("round %d: seq %d, want %d", round, seq, next)
		}
		next += uint64(len(evs))
		if rng.IntN(10) == 0 && next > 1 {
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			at := 1 + rng.Uint64N(next-1)
			f, err := l.Fork(m.ID, at, Meta{})
			if err == nil {
				checkNoRecordInside(t, fsys, l, f.ID)
			} else if !errors.Is(err, ErrLabelHoldsRecord) {
				t.Fatalf("fork at %d: %v", at, err)
			}
		}
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	checkNoRecordInside(t, fsys, l, m.ID)
	if refused == 0 {
		t.Fatalf("no append refused: the pieces never try the watch")
	}
	t.Logf("%d of 300 appends refused, %d events", refused, next)
}
