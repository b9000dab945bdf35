package agent

import (
	"errors"
	"fmt"
	"path"
	"testing"

	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// A long log damaged in its middle, each page listed from the newest
// back by its cursor (history's prev_before): no page is listed twice,
// and the pages reach the events just before the damage, which read,
// each said to be there (damaged_at). A read from past the damage whose
// search for its first event meets the damage said the page began there
// ("--before 1520" again and again) and named no event to fork at.
func TestHistoryPagesBackToTheDamage(t *testing.T) {
	for _, part := range []int{35, 44, 46, 50} {
		t.Run(fmt.Sprintf("at %d%% of the log", part), func(t *testing.T) { historyPagesBackToTheDamage(t, part) })
	}
}

func historyPagesBackToTheDamage(t *testing.T, part int) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	id := newSession(t, r)
	for i := range 3000 {
		if _, err := r.Append(id, Entry{Kind: eventlog.KindUser, Body: fmt.Appendf(nil, "event %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	logPath := path.Join(testHome, "events", id.String()+".log")
	b, err := vfs.ReadFile(fsys, logPath)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)*part/100] ^= 0xff
	if err := fsys.WriteFileAtomic(logPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err = Open(testHome, Options{FS: fsys, Clock: r.clock})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	seen := map[uint64]bool{}
	var damagedAt *uint64
	q := HistoryQuery{Limit: 20}
	for pages := 0; ; pages++ {
		if pages > 200 {
			t.Fatal("200 pages back and no end")
		}
		p, err := r.History(id, q)
		if err != nil {
			t.Fatal(err)
		}
		if p.Damage != nil {
			if !errors.Is(p.Damage, eventlog.ErrBadRecord) {
				t.Fatalf("damage: %v", p.Damage)
			}
			if damagedAt != nil && *damagedAt != p.DamagedAt {
				t.Fatalf("damaged at #%d, then at #%d", *damagedAt, p.DamagedAt)
			}
			at := p.DamagedAt
			damagedAt = &at
		}
		for _, l := range p.Events {
			if seen[l.Seq] {
				t.Fatalf("event #%d listed twice (the page before %v)", l.Seq, q.Before)
			}
			seen[l.Seq] = true
		}
		if p.PrevBefore == nil {
			break
		}
		if q.Before != nil && *p.PrevBefore >= *q.Before {
			t.Fatalf("--before %d points to --before %d", *q.Before, *p.PrevBefore)
		}
		q.Before = p.PrevBefore
	}
	if damagedAt == nil {
		t.Fatal("no page said the log is damaged")
	}
	at := *damagedAt
	if at == 0 || at >= 2999 {
		t.Fatalf("damaged at #%d, not in the log's middle", at)
	}
	for s := uint64(0); s < at; s++ {
		if !seen[s] {
			t.Fatalf("event #%d, before the damage at #%d, never listed", s, at)
		}
	}
	// The fork the error names keeps exactly those.
	if evs, err := r.Log.Read(id, 0, int(at)); err != nil || len(evs) != int(at) {
		t.Fatalf("the events before the damage: %d, %v", len(evs), err)
	}
}
