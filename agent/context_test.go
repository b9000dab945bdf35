package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/clock"
	"github.com/rookhq/rook/internal/vfs"
)

// viewsRook makes a store on a MemFS and opens it for writing, for the
// tests of the views (context, export, search).
func viewsRook(t *testing.T) (*Rook, *clock.Fixed) {
	t.Helper()
	fsys := vfs.NewMem()
	clk := &clock.Fixed{T: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
	const home = "/home/u/.rook"
	if _, err := cas.Init(fsys, clk, home); err != nil {
		t.Fatal(err)
	}
	r, err := Open(home, Options{FS: fsys, Clock: clk, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, clk
}

func viewsSession(t *testing.T, r *Rook, title string) eventlog.ID {
	t.Helper()
	m, err := r.NewSession(title, "/w", nil)
	if err != nil {
		t.Fatal(err)
	}
	return m.ID
}

func viewsAppend(t *testing.T, r *Rook, clk *clock.Fixed, id eventlog.ID, entries ...Entry) {
	t.Helper()
	for _, en := range entries {
		clk.Advance(time.Minute)
		if _, err := r.Append(id, en); err != nil {
			t.Fatal(err)
		}
	}
	// The barrier writes the bodies: Stat sees only what is written.
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
}

func TestContextCompactions(t *testing.T) {
	r, clk := viewsRook(t)
	id := viewsSession(t, r, "ctx")
	big := strings.Repeat("x", 4001) // 1001 tokens
	viewsAppend(t, r, clk, id,
		Entry{Kind: eventlog.KindUser, Body: []byte("hello"), TokensIn: 7},                        // 2 tokens
		Entry{Kind: eventlog.KindAssistant, Body: []byte(big), TokensOut: 9},                      // 1001
		Entry{Kind: eventlog.KindCompaction, Body: []byte("summary one")},                         // 3
		Entry{Kind: eventlog.KindUser, Body: []byte("again")},                                     // 2
		Entry{Kind: eventlog.KindCompaction, Body: []byte("summary two!")},                        // 3
		Entry{Kind: eventlog.KindUser, Body: []byte("hello")},                                     // 2 (shared body)
		Entry{Kind: eventlog.KindToolResult, Body: []byte(strings.Repeat("y", 400)), TokensIn: 1}, // 100
		Entry{Kind: eventlog.KindToolResult, Body: nil},                                           // 0
		Entry{Kind: eventlog.KindAssistant, Body: []byte(big)},                                    // 1001 (shared)
	)
	rep, err := r.Context(id, 2000)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Reserve != 200 || rep.Usable != 1800 || rep.Threshold != 1440 {
		t.Fatalf("window split %d %d %d", rep.Reserve, rep.Usable, rep.Threshold)
	}
	if rep.ReplayFrom != 5 || rep.Compactions != 2 {
		t.Fatalf("replay from %d, %d compactions", rep.ReplayFrom, rep.Compactions)
	}
	if rep.InContextTokens != 1103 || rep.InContextEvents != 4 || rep.InContextBytes != 5+400+4001 {
		t.Fatalf("in context %d tokens, %d events, %d bytes", rep.InContextTokens, rep.InContextEvents, rep.InContextBytes)
	}
	if rep.EverEvents != 9 || rep.EverTokens != 2+1001+3+2+3+2+100+0+1001 {
		t.Fatalf("ever %d events %d tokens", rep.EverEvents, rep.EverTokens)
	}
	if rep.Session.TokensIn != 8 || rep.Session.TokensOut != 9 {
		t.Fatalf("recorded %d/%d", rep.Session.TokensIn, rep.Session.TokensOut)
	}
	want := []ContextKind{
		{eventlog.KindUser, 1, 5, 2},
		{eventlog.KindAssistant, 1, 4001, 1001},
		{eventlog.KindToolResult, 2, 400, 100},
	}
	if len(rep.Kinds) != len(want) {
		t.Fatalf("kinds %+v", rep.Kinds)
	}
	for i := range want {
		if rep.Kinds[i] != want[i] {
			t.Fatalf("kind %d: %+v, want %+v", i, rep.Kinds[i], want[i])
		}
	}
	if rep.OverThreshold() {
		t.Fatal("1103 of 1440 is not over")
	}
	if p := rep.PercentOfUsable(); p < 61.2 || p > 61.3 {
		t.Fatalf("percent %v", p)
	}
	rep, err = r.Context(id, 1000)
	if err != nil || !rep.OverThreshold() {
		t.Fatalf("a 1000-token window: over %v, %v", rep.OverThreshold(), err)
	}
	if _, err := r.Context(id, 0); err == nil {
		t.Fatal("a zero window is an error")
	}
}

func TestContextPagesAndEmpty(t *testing.T) {
	r, clk := viewsRook(t)
	empty := viewsSession(t, r, "empty")
	rep, err := r.Context(empty, DefaultContextWindow)
	if err != nil || rep.EverEvents != 0 || rep.InContextTokens != 0 || len(rep.Kinds) != 0 || rep.ReplayFrom != 0 {
		t.Fatalf("empty: %+v %v", rep, err)
	}
	// More events than a page, a compaction in the second page.
	id := viewsSession(t, r, "long")
	for i := 0; i < 2*contextPage+10; i++ {
		k := eventlog.KindUser
		if i == contextPage+3 {
			k = eventlog.KindCompaction
		}
		if _, err := r.Append(id, Entry{Kind: k, Body: []byte("12345678")}); err != nil {
			t.Fatal(err)
		}
	}
	viewsAppend(t, r, clk, id)
	rep, err = r.Context(id, DefaultContextWindow)
	if err != nil {
		t.Fatal(err)
	}
	if rep.EverEvents != 2*contextPage+10 || rep.ReplayFrom != contextPage+4 || rep.InContextEvents != contextPage+6 || rep.InContextTokens != 2*(contextPage+6) {
		t.Fatalf("%+v", rep)
	}
}

func TestContextMissingBody(t *testing.T) {
	r, clk := viewsRook(t)
	id := viewsSession(t, r, "missing")
	viewsAppend(t, r, clk, id, Entry{Kind: eventlog.KindUser, Body: []byte("here")})
	// An event naming a body the store never had.
	if _, err := r.Log.Append(id, eventlog.Event{Kind: eventlog.KindUser, Body: [16]byte{1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	rep, err := r.Context(id, DefaultContextWindow)
	if err != nil || rep.MissingBodies != 1 || rep.InContextTokens != 1 || rep.EverEvents != 2 {
		t.Fatalf("%+v %v", rep, err)
	}
}
