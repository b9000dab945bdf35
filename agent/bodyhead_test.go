package agent

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// trickyText is n bytes or more of text made of what cuts and counts go
// wrong on: characters of 1 to 4 bytes, color sequences and their halves,
// control characters, CRLF, quotes, bytes that are not UTF-8 and NUL
// (binary: only when asked).
func trickyText(rng *rand.Rand, n int, binary bool) []byte {
	parts := []string{"plain words ", "\n", "\r\n", "é", "€", "😀", "\x1b[31m", "\x1b[0m", "\x1b[38;2;1;2;3m",
		"\x1b[38;2;255;255;255;48;2;255;255;255m", "\x1b[1;3;4;38;2;255;255;255;48;2;255;255;255;58;2;255;255;255m", "1234567890;",
		"\x1b[", "\x1b[12", "\x1b", "\t", "\"q\"", "\\", "\x07", "\x7f", "[31m", "0;1m", "  ", "\u202e"}
	if binary {
		parts = append(parts, "\x00", "\xff", "\xe2\x82", "\xc3")
	}
	var b []byte
	for len(b) < n {
		b = append(b, parts[rng.IntN(len(parts))]...)
	}
	return b
}

// Written in pieces cut anywhere, the streamed counts say what the
// functions of the whole bytes say: utf8.Valid and IsBinary, viewLen and
// jsonEscapedLen; and a head says what the whole says when it says it
// can (headWithin, previewOfHead).
func TestStreamedCountsMatchTheWhole(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 400 {
		whole := trickyText(rng, 1+rng.IntN(3000), i%2 == 1)
		if i%7 == 0 {
			whole = append(whole, "\xe2\x82"[:1+rng.IntN(2)]...) // a character cut at the end
		}
		if i%5 == 0 {
			// Blank lines and colors first: the first line's start is
			// far in.
			whole = append(bytes.Repeat([]byte("\n \x1b[0m\r\n\t"), rng.IntN(200)), whole...)
		}
		var u utf8Stream
		bs := &binaryScan{keep: 100}
		tc := &tailCount{}
		ps := &previewScan{n: 20}
		psDone := false
		for rest := whole; len(rest) > 0; {
			k := min(len(rest), 1+rng.IntN(12))
			if rng.IntN(4) == 0 {
				k = min(len(rest), 1+rng.IntN(400))
			}
			u.write(rest[:k])
			bs.Write(rest[:k])
			tc.Write(rest[:k])
			if !psDone {
				_, err := ps.Write(rest[:k])
				psDone = err == errPreviewDone
			}
			rest = rest[k:]
		}
		tc.close()
		ps.close()
		if p, want := Preview(ps.line, 20), Preview(StripSGR(whole), 20); p != want {
			t.Fatalf("%q: streamed preview %q, of the whole %q", whole, p, want)
		}
		if u.valid() != utf8.Valid(whole) || bs.binary() != IsBinary(whole) || !bytes.Equal(bs.head, whole[:min(100, len(whole))]) {
			t.Fatalf("%q: streamed valid %v binary %v, whole %v %v", whole, u.valid(), bs.binary(), utf8.Valid(whole), IsBinary(whole))
		}
		if tc.view != viewLen(whole) || tc.escaped != jsonEscapedLen(whole) || tc.utf.valid() != utf8.Valid(whole) {
			t.Fatalf("%q: streamed view %d escaped %d valid %v; whole %d %d %v", whole, tc.view, tc.escaped, tc.utf.valid(), viewLen(whole), jsonEscapedLen(whole), utf8.Valid(whole))
		}
		for _, cut := range []int{1, 20, 200, len(whole) / 2} {
			head := whole[:min(cut, len(whole))]
			limit := rng.IntN(len(head) + 1)
			if n, ok := headWithin(head, limit, int64(len(whole))); ok && n != CutShown(whole, limit) {
				t.Fatalf("%q: head of %d cut at %d for %d, the whole at %d", whole, len(head), n, limit, CutShown(whole, limit))
			}
			if p, ok := previewOfHead(head, 20); ok && p != Preview(StripSGR(whole), 20) {
				t.Fatalf("%q: preview of a head of %d %q, of the whole %q", whole, len(head), p, Preview(StripSGR(whole), 20))
			}
		}
	}
}

// bigBodies are bodies of a few MiB, each alone in its record: what the
// views stream, with what their heads, previews and ranges are cut on
// where they are cut.
func bigBodies() map[string][]byte {
	rng := rand.New(rand.NewPCG(3, 4))
	const size = 1<<20 + 256<<10
	log := []byte(strings.Repeat("2026-02-12 INFO worker processed batch in 12 ms \x1b[32mok\x1b[0m\n", size/60))
	line := bytes.ReplaceAll(log, []byte("\n"), []byte(" ")) // one line, no newline
	out := map[string][]byte{
		"log":          log,
		"one line":     line,
		"tricky":       trickyText(rng, size, false),
		"nul at end":   append(bytes.Clone(log), 0),
		"cut at end":   append(bytes.Clone(log), 0xe2, 0x82),
		"binary":       trickyText(rng, size, true),
		"blank head":   append(bytes.Repeat([]byte(" \n\r\n\t"), 20<<10), log...),
		"colored head": append(bytes.Repeat([]byte("\x1b[1m\x1b[0m"), 20<<10), log...),
		"digits":       append(append([]byte("x\x1b["), bytes.Repeat([]byte("1;"), 40<<10)...), append([]byte("m"), log...)...),
		"noise":        noiseBytes(size),
		// A snippet that runs past the part find keeps (colors are not
		// counted): it is read from the whole body.
		"needle colors": append(append([]byte("start NEEDLE "), bytes.Repeat([]byte("\x1b[1m"), 20<<10)...), log...),
	}
	// Characters, CRLF and color sequences across the cuts of show
	// (4096), export-html (8192) and entry's pages.
	for _, at := range []int{4094, 4095, 4096, 8190, 8191, 4096 + 3} {
		b := bytes.Clone(log)
		copy(b[at-2:], "\x1b[31m€\r\n😀")
		out[fmt.Sprintf("at %d", at)] = b
	}
	return out
}

func noiseBytes(n int) []byte {
	rng := rand.New(rand.NewPCG(5, 6))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// What show, history, entry, quote and export-html give of a big body
// read in parts is byte for byte what they gave of it read whole.
func TestBigBodyViewsMatchWholeReads(t *testing.T) {
	r := testRook(t, vfs.NewMem())
	m, err := r.NewSession("big", "/w", nil)
	if err != nil {
		t.Fatal(err)
	}
	bodies := bigBodies()
	names := make([]string, 0, len(bodies))
	for name := range bodies {
		names = append(names, name)
	}
	for _, name := range names {
		if _, err := r.Append(m.ID, Entry{Kind: eventlog.KindToolResult, Label: name, Body: bodies[name]}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Store.Sync(); err != nil {
		t.Fatal(err)
	}
	type views struct {
		Show    []ShowPage
		History HistoryPage
		Ranges  []BodyRange
		Errs    []string
		Export  Export
		Finds   []FindResult
		FindErr []string
	}
	read := func(whole bool) views {
		readWhole = whole
		defer func() { readWhole = false }()
		var v views
		for _, max := range []int{0, 100, 4096, 70 << 10} {
			p, err := r.Show(m.ID, ShowQuery{Limit: len(names), MaxBody: max})
			if err != nil {
				t.Fatal(err)
			}
			v.Show = append(v.Show, p)
		}
		if v.History, err = r.History(m.ID, HistoryQuery{Limit: len(names)}); err != nil {
			t.Fatal(err)
		}
		for seq := range uint64(len(names)) {
			size := int64(len(bodies[names[seq]]))
			for _, off := range []int64{0, 4095, 4096, 4097, 1<<20 + 1, size - 2, size, size + 1} {
				for _, quote := range []bool{false, true} {
					var br BodyRange
					var err error
					if quote {
						br, err = r.Quote(m.ID, seq, off)
					} else {
						br, err = r.ReadBody(m.ID, seq, off, EntryPageBytes)
					}
					v.Ranges = append(v.Ranges, br)
					v.Errs = append(v.Errs, fmt.Sprint(err))
				}
			}
			if _, err := r.ReadBody(m.ID, seq, 4097, 1); err != nil {
				t.Fatal(err)
			}
		}
		if v.Export, err = r.ExportRange(m.ID, 0, nil); err != nil {
			t.Fatal(err)
		}
		for seq := range uint64(len(names)) {
			for _, q := range []string{"€", "31m", "needle", "zzz"} {
				for _, off := range []int64{0, 4097} {
					for _, budget := range []int64{0, 5000} {
						f, err := r.Find(m.ID, FindQuery{Query: q, From: seq, Offset: off, Through: &seq, MaxBytes: budget})
						for i, u := range f.Unreadable {
							f.Unreadable[i].Err = fmt.Errorf("%v", u.Err) // compared by what they say
						}
						v.Finds = append(v.Finds, f)
						v.FindErr = append(v.FindErr, fmt.Sprint(err))
					}
				}
			}
		}
		return v
	}
	want, got := read(true), read(false)
	for i := range want.Finds {
		if w, g := want.Finds[i], got.Finds[i]; !reflect.DeepEqual(w, g) || want.FindErr[i] != got.FindErr[i] {
			t.Errorf("find %d: %+v (%s); read whole: %+v (%s)", i, g, got.FindErr[i], w, want.FindErr[i])
		}
	}
	partial := 0
	for _, v := range got.Show[2].Events {
		if v.partial {
			partial++
		}
	}
	if partial < len(names)-1 {
		t.Fatalf("%d of %d bodies were streamed; want all (but the one whose head does not say its cut)", partial, len(names))
	}
	for i := range want.Show {
		for j := range want.Show[i].Events {
			w, g := want.Show[i].Events[j], got.Show[i].Events[j]
			w.partial, g.partial = false, false
			if !reflect.DeepEqual(w, g) {
				t.Errorf("show page %d, %s: %d bytes, %d omitted, binary %v; read whole: %d, %d, %v", i, w.Label, len(g.Text), g.Omitted, g.Binary, len(w.Text), w.Omitted, w.Binary)
			}
		}
	}
	for j := range want.History.Events {
		if w, g := want.History.Events[j], got.History.Events[j]; !reflect.DeepEqual(w, g) {
			t.Errorf("history, %s: %q, binary %v; read whole: %q, %v", w.Label, g.Preview, g.Binary, w.Preview, w.Binary)
		}
	}
	for i := range want.Ranges {
		if w, g := want.Ranges[i], got.Ranges[i]; !reflect.DeepEqual(w, g) || want.Errs[i] != got.Errs[i] {
			t.Errorf("range %d, %s: %d to %d of %d (%v); read whole: %d to %d of %d (%v)", i, w.Label, g.Offset, g.End, g.Total, got.Errs[i], w.Offset, w.End, w.Total, want.Errs[i])
		}
	}
	if !reflect.DeepEqual(want.Export, got.Export) {
		t.Errorf("export-html differs from the bodies read whole")
	}
}

// The views of a session with a 24 MiB tool output hold a few KiB of it,
// not the body: each read it whole (and history copied it again, its
// colors left out), 48 to 96 MiB allocated for a page that shows 4 KiB.
func TestBigBodyViewsHoldLittle(t *testing.T) {
	r := testRook(t, vfs.NewMem())
	m, err := r.NewSession("big", "/w", nil)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(strings.Repeat("2026-02-12 INFO worker processed batch in 12 ms \x1b[32mok\x1b[0m\n", (24<<20)/60))
	if _, err := r.Append(m.ID, Entry{Kind: eventlog.KindToolResult, Body: body}); err != nil {
		t.Fatal(err)
	}
	if err := r.Store.Sync(); err != nil {
		t.Fatal(err)
	}
	const limit = 8 << 20 // the decoder's history and buffers, the page, find's 4 MiB
	for _, c := range []struct {
		name string
		fn   func() error
	}{
		{"show", func() error { _, err := r.Show(m.ID, ShowQuery{Limit: 1, MaxBody: 4096}); return err }},
		{"history", func() error { _, err := r.History(m.ID, HistoryQuery{Limit: 1}); return err }},
		{"entry", func() error { _, err := r.ReadBody(m.ID, 0, 12<<20, EntryPageBytes); return err }},
		{"quote", func() error { _, err := r.Quote(m.ID, 0, 1000); return err }},
		{"export-html", func() error { _, err := r.ExportRange(m.ID, 0, nil); return err }},
		// The part searched: 4 MiB and the bytes around it.
		{"find", func() error { _, err := r.Find(m.ID, FindQuery{Query: "no such text", Offset: 1 << 20}); return err }},
	} {
		var err error
		a := allocatedBy(func() { err = c.fn() })
		t.Logf("%s of a %d MiB body: %d KiB allocated", c.name, len(body)>>20, a>>10)
		if err != nil {
			t.Fatal(err)
		}
		if a > limit {
			t.Errorf("%s of a %d MiB body allocated %d MiB; want at most %d MiB", c.name, len(body)>>20, a>>20, limit>>20)
		}
	}
}

// `rook session history` of a big body whose head says no preview (only
// newlines: a tool's output of blank lines; or digits where the head ends:
// a dump of numbers) read the whole body into memory to make one:
// previewOfHead said "not enough" (a head of white space trims to
// nothing; no place to cut in its last 16 bytes) and History fell back to
// r.Body. A 286 MiB body of newlines took history to 312 MB RSS, where the
// same size of ordinary text takes 17 MB (docs/performance.md, "Showing
// part of a big body"). previewOfHead now cuts at the head's end (before a
// color sequence still open there), and a first line that starts or goes
// on past the head is read by streaming the body again (previewOf),
// keeping only what the preview shows: as little as any other big body.
func TestHistoryOfBigBlankOrDigitBodyHoldsLittle(t *testing.T) {
	const size = 24 << 20
	bodies := []struct {
		name string
		body []byte
	}{
		{"only newlines", bytes.Repeat([]byte("\n"), size)},
		{"digits", []byte(strings.Repeat("1234567890", size/10))},
		{"blank lines, then text", append(bytes.Repeat([]byte("\n \x1b[0m"), size/8), "\x1b[1;38;2;255;255;255;48;2;0;0;0mhello\x1b[0m\nmore"...)},
	}
	const limit = 8 << 20 // as TestBigBodyViewsHoldLittle
	for _, b := range bodies {
		t.Run(b.name, func(t *testing.T) {
			r := testRook(t, vfs.NewMem())
			m, err := r.NewSession("big", "/w", nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.Append(m.ID, Entry{Kind: eventlog.KindToolResult, Body: b.body}); err != nil {
				t.Fatal(err)
			}
			if err := r.Store.Sync(); err != nil {
				t.Fatal(err)
			}
			var p HistoryPage
			a := allocatedBy(func() { p, err = r.History(m.ID, HistoryQuery{Limit: 1}) })
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Events) != 1 || p.Events[0].Err != nil {
				t.Fatalf("history: %+v", p.Events)
			}
			t.Logf("history of a %d MiB body (%s): %d KiB allocated, preview %q", size>>20, b.name, a>>10, p.Events[0].Preview)
			if want := Preview(StripSGR(b.body), PreviewRunes); p.Events[0].Preview != want {
				t.Errorf("preview %q, of the body whole %q", p.Events[0].Preview, want)
			}
			if a > limit {
				t.Errorf("history of a %d MiB body (%s) allocated %d MiB; want at most %d MiB, as for any other big body", size>>20, b.name, a>>20, limit>>20)
			}
		})
	}
}

// Of an imported line over shortenLinesOver, each big string is streamed
// (readStringHead): show, history and export-html give what they gave
// reading each string whole, tricky strings (colors, characters, control
// characters and bytes that are not UTF-8 across the cut) and all.
func TestBigImportedStringsMatchWholeReads(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	rng := rand.New(rand.NewPCG(7, 8))
	env := `"sessionId":"S","cwd":"/home/u/proj","version":"2.1.38"`
	lines := []string{
		fmt.Sprintf(`{"type":"user","uuid":"u1","parentUuid":null,%s,"timestamp":"2026-02-10T21:00:00.000Z","message":{"role":"user","content":"run it"}}`, env),
	}
	for i, out := range [][]byte{trickyText(rng, 4<<20+4096, false), trickyText(rng, 4<<20+4096, true)} {
		lines = append(lines, fmt.Sprintf(`{"type":"user","uuid":"u%d","parentUuid":"u1",%s,"timestamp":"2026-02-10T21:00:02.000Z","message":{"role":"user","content":[{"tool_use_id":"toolu_%d","type":"tool_result","content":%s}]}}`, i+2, env, i, appendJSONString(nil, out)))
	}
	path := "/p/-home-u-proj/S.jsonl"
	writeSource(t, fsys, path, lines, "")
	id := *fileByPath(t, mustImport(t, r, FormatClaudeCode, path), path).Session
	if err := r.Store.Sync(); err != nil {
		t.Fatal(err)
	}
	type views struct {
		Show    []ShowPage
		History HistoryPage
		Export  Export
	}
	read := func(whole bool) views {
		readWhole = whole
		defer func() { readWhole = false }()
		var v views
		for _, max := range []int{0, 4096} {
			p, err := r.Show(id, ShowQuery{Limit: 10, MaxBody: max})
			if err != nil {
				t.Fatal(err)
			}
			v.Show = append(v.Show, p)
		}
		var err error
		if v.History, err = r.History(id, HistoryQuery{Limit: 10}); err != nil {
			t.Fatal(err)
		}
		if v.Export, err = r.ExportRange(id, 0, nil); err != nil {
			t.Fatal(err)
		}
		return v
	}
	want, got := read(true), read(false)
	if len(want.Show[0].Events) != 3 {
		t.Fatalf("%d events, want 3", len(want.Show[0].Events))
	}
	for i := range want.Show {
		for j, w := range want.Show[i].Events {
			// What a user sees is compared: how much of the view a read
			// left out (partial) is the read's own, and differs where
			// a string import left in the line streams (inlineHead) but
			// was read whole; Omitted counts it.
			g := got.Show[i].Events[j]
			w.partial, g.partial = false, false
			if !reflect.DeepEqual(w, g) {
				t.Errorf("show page %d, #%d: %d bytes, %d omitted, size %d, binary %v; read whole: %d, %d, %d, %v", i, w.Seq, len(g.Text), g.Omitted, g.Size, g.Binary, len(w.Text), w.Omitted, w.Size, w.Binary)
			}
		}
	}
	if !reflect.DeepEqual(want.History, got.History) {
		t.Errorf("history differs from the strings read whole")
	}
	if !reflect.DeepEqual(want.Export, got.Export) {
		t.Errorf("export-html differs from the strings read whole")
	}
}

// FuzzStreamedCounts: any bytes, written in pieces cut anywhere, count as
// they do whole, and a head says what the whole says when it says it can.
func FuzzStreamedCounts(f *testing.F) {
	f.Add([]byte("plain \x1b[31mred\x1b[0m é€😀\r\n\x00\xff"), uint64(7), 5)
	f.Add([]byte("\x1b[1;2;3"), uint64(1), 1)
	f.Fuzz(func(t *testing.T, whole []byte, seed uint64, limit int) {
		rng := rand.New(rand.NewPCG(seed, seed>>7))
		var u utf8Stream
		bs := &binaryScan{}
		tc := &tailCount{}
		ps := &previewScan{n: 20}
		psDone := false
		for rest := whole; len(rest) > 0; {
			k := min(len(rest), 1+rng.IntN(16))
			u.write(rest[:k])
			bs.Write(rest[:k])
			tc.Write(rest[:k])
			if !psDone {
				_, err := ps.Write(rest[:k])
				psDone = err == errPreviewDone
			}
			rest = rest[k:]
		}
		tc.close()
		ps.close()
		if p, want := Preview(ps.line, 20), Preview(StripSGR(whole), 20); p != want {
			t.Fatalf("%q: streamed preview %q, of the whole %q", whole, p, want)
		}
		if u.valid() != utf8.Valid(whole) || bs.binary() != IsBinary(whole) {
			t.Fatalf("%q: streamed valid %v binary %v", whole, u.valid(), bs.binary())
		}
		if tc.view != viewLen(whole) || tc.escaped != jsonEscapedLen(whole) || tc.utf.valid() != utf8.Valid(whole) {
			t.Fatalf("%q: streamed view %d escaped %d; whole %d %d", whole, tc.view, tc.escaped, viewLen(whole), jsonEscapedLen(whole))
		}
		if len(whole) == 0 {
			return
		}
		head := whole[:rng.IntN(len(whole))+1]
		limit = min(max(limit, 0), len(head))
		if n, ok := headWithin(head, limit, int64(len(whole))); ok && n != CutShown(whole, limit) {
			t.Fatalf("%q: head of %d cut at %d for %d, the whole at %d", whole, len(head), n, limit, CutShown(whole, limit))
		}
		if p, ok := previewOfHead(head, 8); ok && p != Preview(StripSGR(whole), 8) {
			t.Fatalf("%q: preview of a head of %d %q, of the whole %q", whole, len(head), p, Preview(StripSGR(whole), 8))
		}
		// A snippet of a part holding 256 bytes or more before the match
		// (findPart).
		at := rng.IntN(len(whole))
		end := min(at+rng.IntN(8), len(whole))
		lo := max(at-256-rng.IntN(8), 0)
		hi := end + rng.IntN(len(whole)-end+1)
		if s, ok := snippetOf(whole[lo:hi], at-lo, end-lo, 20, hi < len(whole)); ok && s != Snippet(whole, at, end, 20) {
			t.Fatalf("%q: snippet of bytes %d to %d %q, of the whole %q", whole, lo, hi, s, Snippet(whole, at, end, 20))
		}
	})
}

// A color sequence's digits that run on for MiB (ESC [ then digits, no
// m: not a sequence after all) were carried from piece to piece whole,
// each piece copying and scanning them again: 16 MiB of them took 3 s
// (quadratic), where viewLen of the whole is linear. The carry stays a
// few bytes, and the counts are the whole's.
func TestTailCountLongDigitRun(t *testing.T) {
	for _, end := range []string{"", "m", "x", "é"} {
		whole := append(append([]byte("a\x1b["), bytes.Repeat([]byte("1;"), 1<<20)...), end...)
		tc := &tailCount{}
		most := 0
		for rest := whole; len(rest) > 0; {
			k := min(len(rest), 64<<10)
			tc.Write(rest[:k])
			rest = rest[k:]
			most = max(most, len(tc.carry))
		}
		tc.close()
		if tc.view != viewLen(whole) || tc.escaped != jsonEscapedLen(whole) {
			t.Fatalf("end %q: view %d escaped %d; whole %d %d", end, tc.view, tc.escaped, viewLen(whole), jsonEscapedLen(whole))
		}
		if most > 64 {
			t.Fatalf("end %q: carried %d bytes from piece to piece", end, most)
		}
	}
}
