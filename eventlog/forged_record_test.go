package eventlog

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/rookhq/rook/internal/clock"
	"github.com/rookhq/rook/internal/vfs"
)

// Readers find a seq by bisecting byte offsets, taking the first place a
// whole record checks out for a record start (reader.nextRecord, find,
// last; repairTail): a label, the appender's bytes (--label, a tool or
// model name from an imported transcript), must never make the log hold
// a record where none starts. Appends that would are refused, nothing of
// them written, and the log reads whole.

// fakeRecordLabel is a label of about 1000 bytes that ends with the bytes
// of a whole, valid record of seq: kind note, label "forged", and (for a
// seq that carries totals) cumulative totals of a billion tokens.
func fakeRecordLabel(seq uint64, base int64) string {
	fake := appendRecord(nil, &record{
		Event: Event{Seq: seq, Kind: KindNote, Label: "forged"},
		CumIn: 1_000_000_000, CumOut: 1_000_000_000,
	}, base)
	return strings.Repeat("x", 1000-len(fake)) + string(fake)
}

// fakeRecordFirstLabel is the same with the record's bytes at the start.
func fakeRecordFirstLabel(seq uint64, base int64) string {
	fake := appendRecord(nil, &record{Event: Event{Seq: seq, Kind: KindNote, Label: "forged"}}, base)
	return string(fake) + strings.Repeat("x", 1000-len(fake))
}

// spanningLabel is a label of size bytes that ends with the first bytes of
// a record (a note of seq 7) whose own label runs on into the first m bytes
// of next, the record the log is to hold right after the label's: alone,
// the label holds no whole record; with next after it, the two labels (and
// next's fields) hold one.
func spanningLabel(next []byte, m, size int, base int64) string {
	fake := appendRecord(nil, &record{Event: Event{Seq: 7, Kind: KindNote, Label: "forged:" + string(next[:m])}}, base)
	head := fake[:len(fake)-m]
	return strings.Repeat("x", size-len(head)) + string(head)
}

// encoded is the record the log writes for ev, appended at now.
func encoded(ev Event, now time.Time, base int64) []byte {
	ev.Time = now.Truncate(time.Millisecond)
	return appendRecord(nil, &record{Event: ev}, base)
}

// refusedForLabel checks that err is an append refused for a label that
// would hold a record, naming the event index of the append and its seq.
func refusedForLabel(t *testing.T, what string, seq uint64, err error, index int, wantSeq uint64) {
	t.Helper()
	var lr *LabelRecordError
	if !errors.As(err, &lr) || !errors.Is(err, ErrLabelHoldsRecord) {
		t.Fatalf("%s: seq %d, %v; want it refused (ErrLabelHoldsRecord)", what, seq, err)
	}
	if lr.Index != index || lr.Seq != wantSeq {
		t.Fatalf("%s: refused naming event %d (seq %d), want %d (seq %d): %v", what, lr.Index, lr.Seq, index, wantSeq, err)
	}
	if !strings.Contains(err.Error(), "change") || !strings.Contains(err.Error(), fmt.Sprintf("#%d", wantSeq)) {
		t.Fatalf("%s: the error does not name the event and say what to do: %v", what, err)
	}
}

// checkNoRecordInside reads the log of id byte by byte: a whole record
// checks out where its records start and nowhere else.
func checkNoRecordInside(t *testing.T, fsys vfs.FS, l *Log, id ID) {
	t.Helper()
	b, err := vfs.ReadFile(fsys, l.logPath(id))
	if err != nil {
		t.Fatal(err)
	}
	h, err := parseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	starts := map[int]bool{}
	for off := logHeaderSize; off < len(b); {
		_, n, err := decodeRecord(b[off:], h.base)
		if err != nil {
			t.Fatalf("record at offset %d: %v", off, err)
		}
		starts[off] = true
		off += n
	}
	for k := logHeaderSize; k < len(b); k++ {
		if _, _, err := decodeRecord(b[k:], h.base); err == nil && !starts[k] {
			t.Fatalf("a record checks out at offset %d, inside another", k)
		}
	}
}

// readsWhole checks that the session's events read back as labels says,
// page by page and one by one, and that its summary counts them.
func readsWhole(t *testing.T, l *Log, id ID, labels []string, tokensIn uint64) {
	t.Helper()
	evs, err := l.Read(id, 0, len(labels)+10)
	if err != nil || len(evs) != len(labels) {
		t.Fatalf("read: %d events, %v; want %d", len(evs), err, len(labels))
	}
	for from := range labels {
		evs, err := l.Read(id, uint64(from), 1)
		if err != nil || len(evs) != 1 || evs[0].Seq != uint64(from) || evs[0].Label != labels[from] || evs[0].Body != body(from) {
			t.Fatalf("read from %d: %d events, %v", from, len(evs), err)
		}
	}
	s, err := l.Summary(id)
	if err != nil || s.Events != uint64(len(labels)) || s.TokensIn != tokensIn {
		t.Fatalf("summary: %d events, %d tokens in, %v; want %d, %d", s.Events, s.TokensIn, err, len(labels), tokensIn)
	}
}

func TestAppendRefusesALabelHoldingARecordAndReadsGiveTheEventsAppended(t *testing.T) {
	fsys := vfs.NewMem()
	l := testLog(t, fsys, Options{})
	m := mustCreate(t, l, "labels")
	base := l.opts.Clock.Now().UnixMilli()
	const n = 200
	labels := make([]string, n)
	for i := range n {
		forged := fakeRecordLabel(uint64(i), base)
		seq, err := l.Append(m.ID, Event{Kind: KindUser, Body: body(i), Label: forged, TokensIn: 1})
		refusedForLabel(t, fmt.Sprintf("append #%d, its label holding a record", i), seq, err, 0, uint64(i))
		labels[i] = strings.Repeat("x", len(forged))
		if seq, err := l.Append(m.ID, Event{Kind: KindUser, Body: body(i), Label: labels[i], TokensIn: 1}); err != nil || seq != uint64(i) {
			t.Fatalf("append #%d after the refusal: seq %d, %v", i, seq, err)
		}
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	readsWhole(t, l, m.ID, labels, n)
	checkNoRecordInside(t, fsys, l, m.ID)
}

// A fork at N ends its copy where the record found for event N-1 ends
// (reader.find): found in a label, that was mid-record. The appends that
// would have put records there are refused, and forks read whole.
func TestForkReadsWholeWhereAppendsOfLabelsHoldingRecordsWereRefused(t *testing.T) {
	l := testLog(t, nil, Options{})
	m := mustCreate(t, l, "labels")
	base := l.opts.Clock.Now().UnixMilli()
	const n = 200
	for i := range n {
		seq, err := l.Append(m.ID, Event{Kind: KindUser, Body: body(i), Label: fakeRecordFirstLabel(uint64(i), base)})
		refusedForLabel(t, fmt.Sprintf("append #%d", i), seq, err, 0, uint64(i))
		if _, err := l.Append(m.ID, Event{Kind: KindUser, Body: body(i), Label: strings.Repeat("y", 1000)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	for at := uint64(1); at <= n; at += 7 {
		f, err := l.Fork(m.ID, at, Meta{})
		if err != nil {
			t.Fatalf("fork at %d: %v", at, err)
		}
		s, err := l.Summary(f.ID)
		if err != nil || s.Events != at {
			t.Fatalf("fork at %d: %d events, %v", at, s.Events, err)
		}
		evs, err := l.Read(f.ID, 0, int(at))
		if err != nil || uint64(len(evs)) != at || evs[at-1].Kind != KindUser || evs[at-1].Body != body(int(at-1)) {
			t.Fatalf("fork at %d: read %d events, %v", at, len(evs), err)
		}
	}
}

// A fork that splits a group ends its copy with the group's record
// re-encoded without "more": new bytes, which with a label before them
// can hold a record the parent's bytes did not. That fork is refused,
// nothing of it written; one at the group's start or end is made.
func TestForkRefusesACopyWhoseLastRecordWouldMakeALabelARecord(t *testing.T) {
	fsys := vfs.NewMem()
	l := testLog(t, fsys, Options{})
	m := mustCreate(t, l, "labels")
	now := l.opts.Clock.Now()
	base := now.UnixMilli()
	if _, err := l.Append(m.ID, Event{Kind: KindUser, Body: body(0), Label: "e0"}); err != nil {
		t.Fatal(err)
	}
	// Event 2 as a fork at 3 copies it: the last of its copy, no "more".
	copied := encoded(Event{Seq: 2, Kind: KindUser, Body: body(2), Label: "a"}, now, base)
	if _, err := l.Append(m.ID, Event{Kind: KindUser, Body: body(1), Label: spanningLabel(copied, 4, 300, base)}); err != nil {
		t.Fatalf("append #1: %v", err)
	}
	if _, err := l.Append(m.ID, Event{Kind: KindUser, Body: body(2), Label: "a"}, Event{Kind: KindUser, Body: body(3), Label: "b"}); err != nil {
		t.Fatalf("append of the group #2-#3 (its first record has \"more\", so its bytes differ): %v", err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	before, err := l.IDs()
	if err != nil {
		t.Fatal(err)
	}
	f, err := l.Fork(m.ID, 3, Meta{})
	if !errors.Is(err, ErrLabelHoldsRecord) {
		t.Fatalf("fork at 3 (splitting the group #2-#3): %s, %v; want it refused (ErrLabelHoldsRecord)", f.ID, err)
	}
	if !strings.Contains(err.Error(), "--at 2") || !strings.Contains(err.Error(), "--at 4") {
		t.Errorf("the refusal does not say where a fork is made: %v", err)
	}
	after, err := l.IDs()
	if err != nil || len(after) != len(before) {
		t.Fatalf("the refused fork left a session: %d sessions, %d before, %v", len(after), len(before), err)
	}
	if es, err := fsys.ReadDir("/h/events"); err == nil {
		for _, e := range es {
			if strings.HasSuffix(e.Name(), ".log") && e.Name() != m.ID.String()+".log" {
				t.Fatalf("the refused fork left a log: %s", e.Name())
			}
		}
	}
	for _, at := range []uint64{2, 4} {
		f, err := l.Fork(m.ID, at, Meta{})
		if err != nil {
			t.Fatalf("fork at %d: %v", at, err)
		}
		s, err := l.Summary(f.ID)
		if err != nil || s.Events != at {
			t.Fatalf("fork at %d: %d events, %v", at, s.Events, err)
		}
		checkNoRecordInside(t, fsys, l, f.ID)
	}
}

// What `rook session append` meets, each run a new writer: the log's tail
// is on disk, and a label that holds a record with the bytes before it,
// the last event's label among them (two labels working together), is
// refused as one that holds it alone; nothing is written, and the next
// writer appends as usual.
func TestAppendByAFreshWriterRefusesLabelsHoldingARecord(t *testing.T) {
	fsys := vfs.NewMem()
	l := testLog(t, fsys, Options{})
	m := mustCreate(t, l, "labels")
	now := l.opts.Clock.Now()
	base := now.UnixMilli()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	const n = 200
	var labels []string
	size := func() int64 {
		fi, err := fsys.Stat("/h/events/" + m.ID.String() + ".log")
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	for i := range n {
		l := testLog(t, fsys, Options{})
		was := size()
		seq, err := l.Append(m.ID, Event{Kind: KindUser, Body: body(i), Label: fakeRecordFirstLabel(uint64(i), base), TokensIn: 1})
		refusedForLabel(t, fmt.Sprintf("append #%d by a new writer", i), seq, err, 0, uint64(i))
		label := "plain"
		if i%2 == 1 {
			// The label before, with this event's record after it,
			// holds a record: refused, though this label holds none.
			seq, err := l.Append(m.ID, Event{Kind: KindUser, Body: body(i), Label: "next", TokensIn: 1})
			refusedForLabel(t, fmt.Sprintf("append #%d by a new writer, the label before it holding a record's first bytes", i), seq, err, 0, uint64(i))
			label = "next!"
		} else {
			// A record whose label ends in the first bytes of the next
			// event's record, as it is to be appended.
			next := encoded(Event{Seq: uint64(i) + 1, Kind: KindUser, Body: body(i + 1), Label: "next", TokensIn: 1}, now, base)
			label = spanningLabel(next, len(next)-2, 900, base)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if size() != was {
			t.Fatalf("append #%d: the refused appends wrote %d bytes", i, size()-was)
		}
		l = testLog(t, fsys, Options{})
		seq, err = l.Append(m.ID, Event{Kind: KindUser, Body: body(i), Label: label, TokensIn: 1})
		if err != nil || seq != uint64(i) {
			t.Fatalf("append #%d by a new writer: seq %d, %v", i, seq, err)
		}
		labels = append(labels, label)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	l = testLog(t, fsys, Options{})
	readsWhole(t, l, m.ID, labels, n)
	checkNoRecordInside(t, fsys, l, m.ID)
}

// The appends of one writer before a barrier (`session append --jsonl`,
// an import) are checked against the records buffered before them, and a
// group against its own: a refused append or group leaves nothing
// buffered.
func TestBufferedAppendsRefuseLabelsThatHoldARecordTogether(t *testing.T) {
	fsys := vfs.NewMem()
	l := testLog(t, fsys, Options{})
	m := mustCreate(t, l, "labels")
	now := l.opts.Clock.Now()
	base := now.UnixMilli()
	var labels []string
	appendOK := func(evs ...Event) {
		t.Helper()
		seq, err := l.Append(m.ID, evs...)
		if err != nil || seq != uint64(len(labels)) {
			t.Fatalf("append #%d: seq %d, %v", len(labels), seq, err)
		}
		for _, ev := range evs {
			labels = append(labels, ev.Label)
		}
	}
	appendOK(Event{Kind: KindUser, Body: body(0), Label: "first"})
	// Event 2's record, whose label event 1's runs on into.
	next := encoded(Event{Seq: 2, Kind: KindAssistant, Body: body(2), Label: "second half"}, now, base)
	appendOK(Event{Kind: KindUser, Body: body(1), Label: spanningLabel(next, len(next)-3, 1000, base)})
	seq, err := l.Append(m.ID, Event{Kind: KindAssistant, Body: body(2), Label: "second half"})
	refusedForLabel(t, "append #2 after a buffered label holding its first bytes", seq, err, 0, 2)
	if u := l.Unflushed(); u != 2 {
		t.Fatalf("%d events buffered after the refusal, want 2", u)
	}
	appendOK(Event{Kind: KindAssistant, Body: body(2), Label: "second half."})
	// A group whose second record the first one's label runs on into.
	second := encoded(Event{Seq: 4, Kind: KindToolResult, Body: body(4), Label: "tool"}, now, base)
	group := []Event{
		{Kind: KindToolCall, Body: body(3), Label: spanningLabel(second, 6, 500, base)},
		{Kind: KindToolResult, Body: body(4), Label: "tool"},
	}
	seq, err = l.Append(m.ID, group...)
	refusedForLabel(t, "append of the group #3-#4", seq, err, 1, 4)
	if u := l.Unflushed(); u != 3 {
		t.Fatalf("%d events buffered after the group's refusal, want 3", u)
	}
	group[1].Label = "tool."
	appendOK(group...)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	readsWhole(t, l, m.ID, labels, 0)
	checkNoRecordInside(t, fsys, l, m.ID)
}

// The recovery after a crash walks a log longer than 1 MiB from the first
// place a whole record checks out past its last 1 MiB (repairTail, by
// reader.nextRecord): with no record inside a label, it finds the chain
// whole and keeps it.
func TestRecoveryAfterACrashKeepsALongLogWhoseForgingAppendsWereRefused(t *testing.T) {
	fsys := vfs.NewMem()
	clk := &clock.Fixed{T: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	w, err := Open("/h/events", Options{FS: fsys, Writable: true, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	m := mustCreate(t, w, "labels")
	base := clk.Now().UnixMilli()
	const n = 1100 // about 1.1 MiB of records
	labels := make([]string, n)
	for i := range n {
		// At the label's end, a record of a seq that does not follow.
		fake := appendRecord(nil, &record{Event: Event{Seq: uint64(i) + 5000, Kind: KindNote, Label: "forged"}}, base)
		forged := strings.Repeat("x", 1000-len(fake)) + string(fake)
		seq, err := w.Append(m.ID, Event{Kind: KindUser, Body: body(i), Label: forged})
		refusedForLabel(t, fmt.Sprintf("append #%d", i), seq, err, 0, uint64(i))
		// The same with its checksum off: bytes that check out nowhere.
		// (Not the same cut short by a byte: that is a record whose last
		// byte is the next record's first, its checksum's, and one in
		// 256 of those checks out, and is refused.)
		crcAt := len(forged) - len(fake)
		labels[i] = forged[:crcAt] + string(fake[0]^0xff) + forged[crcAt+1:]
		if _, err := w.Append(m.ID, Event{Kind: KindUser, Body: body(i), Label: labels[i]}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	// w crashed (every event acknowledged by its barrier): the next writer.
	l, err := Open("/h/events", Options{FS: fsys, Writable: true, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if len(l.Notices) > 0 {
		t.Errorf("recovery notices: %q", l.Notices)
	}
	readsWhole(t, l, m.ID, labels, 0)
	if seq, err := l.Append(m.ID, Event{Kind: KindUser, Body: body(n)}); err != nil || seq != n {
		t.Fatalf("append after the recovery: seq %d, %v", seq, err)
	}
}

// A session's event count is its last record's seq + 1, the last record
// found by probing back from the end (reader.last, by reader.nextRecord):
// a label that would put a record's bytes at the end of the log is
// refused, and the session counts the events appended.
func TestSummaryCountsTheEventsAppendedWhenTheLastLabelWouldHoldARecord(t *testing.T) {
	l := testLog(t, nil, Options{})
	m := mustCreate(t, l, "labels")
	base := l.opts.Clock.Now().UnixMilli()
	const n = 10
	labels := make([]string, n)
	for i := range n {
		fake := appendRecord(nil, &record{Event: Event{Seq: uint64(i) + 5000, Kind: KindNote, Label: "forged"}}, base)
		forged := strings.Repeat("x", 1000-len(fake)) + string(fake)
		seq, err := l.Append(m.ID, Event{Kind: KindUser, Body: body(i), Label: forged, TokensIn: 1})
		refusedForLabel(t, fmt.Sprintf("append #%d", i), seq, err, 0, uint64(i))
		labels[i] = fmt.Sprintf("event %d", i)
		if _, err := l.Append(m.ID, Event{Kind: KindUser, Body: body(i), Label: labels[i], TokensIn: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	readsWhole(t, l, m.ID, labels, n)
}

// The watch an append checks its records with agrees with a look at
// every place of the log (checkRecordWatch, as the fuzz target runs it),
// on labels made of pieces of records: whole ones, their first bytes,
// their last bytes, run on into the records after them.
func TestRecordWatchAgreesWithALookAtEveryPlace(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	piece := func() string {
		rec := appendRecord(nil, &record{Event: Event{Seq: rng.Uint64N(200), Time: time.UnixMilli(fuzzBase), Kind: KindNote, Label: strings.Repeat("z", rng.IntN(40))}, CumIn: 9}, fuzzBase)
		switch rng.IntN(4) {
		case 0:
			return string(rec)
		case 1:
			return string(rec[:rng.IntN(len(rec))])
		case 2:
			return string(rec[rng.IntN(len(rec)):])
		}
		b := make([]byte, rng.IntN(60))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return string(b)
	}
	refused, appends := 0, 0
	for range 40 {
		var groups [][]string
		for range 30 {
			g := make([]string, 1+rng.IntN(3))
			for i := range g {
				g[i] = piece() + piece()
			}
			groups = append(groups, g)
		}
		refused += checkRecordWatch(t, groups)
		appends += len(groups)
	}
	if refused < appends/10 || refused > appends*9/10 {
		t.Fatalf("%d of %d appends refused: the pieces do not try both ways", refused, appends)
	}
	t.Logf("%d of %d appends refused", refused, appends)
}
