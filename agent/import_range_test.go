package agent

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// importTrickyLines imports a Claude Code transcript whose lines hold long
// strings that are cut out (tricky text: escapes, colors, CRLF, control
// characters) beside long ones that are not (\u escapes, surrogate pairs,
// bytes that are not UTF-8), one line that ends in CR and a binary line
// with strings cut from it.
func importTrickyLines(t *testing.T) (*Rook, eventlog.ID) {
	t.Helper()
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	rng := rand.New(rand.NewPCG(11, 12))
	env := `"sessionId":"S","cwd":"/home/u/proj","version":"2.1.38"`
	lines := []string{
		fmt.Sprintf(`{"type":"user","uuid":"u1","parentUuid":null,%s,"timestamp":"2026-02-10T21:00:00.000Z","message":{"role":"user","content":"run it"}}`, env),
	}
	result2 := func(i int, content, stdout string) string {
		return fmt.Sprintf(`{"type":"user","uuid":"u%d","parentUuid":"u1",%s,"timestamp":"2026-02-10T21:00:02.000Z","message":{"role":"user","content":[{"tool_use_id":"toolu_%d","type":"tool_result","content":%s}]},"toolUseResult":{"stdout":%s,"note":"\u00e9 \ud83d\ude00 done"}}`,
			i, env, i, content, stdout)
	}
	result := func(i int, content string) string { return result2(i, content, content) }
	texts := [][]byte{
		trickyText(rng, 600, false),
		trickyText(rng, 64<<10, false),
		append([]byte("\x82\x82 starts inside a character"), append(trickyText(rng, 64<<10, true), "\xe2\x82"...)...),
		append([]byte("€"), append(trickyText(rng, 1<<20, false), "\r\n"...)...),
	}
	for i, text := range texts {
		lines = append(lines, result(i+2, string(appendJSONString(nil, text))))
	}
	// Long strings written with escapes no cut string has: kept in the line.
	nonCanon := `"` + strings.Repeat(`\u00e9\ud83d\ude00 \/ \r\n`, 200) + `"`
	lines = append(lines, result(len(texts)+2, nonCanon))
	lines = append(lines, result(len(texts)+3, string(appendJSONString(nil, texts[1])))+"\r")
	// A string that is not UTF-8 is not cut (the line is binary): bytes
	// that are not UTF-8 a few bytes before and after a cut string.
	lines = append(lines, result2(len(texts)+4, string(appendJSONString(nil, texts[1])),
		"\"\xe2\x82\",\"y\":"+string(appendJSONString(nil, texts[0]))+",\"z\":\"\x82\",\"x\":"+string(appendJSONString(nil, texts[2]))))
	path := "/p/-home-u-proj/S.jsonl"
	writeSource(t, fsys, path, lines, "")
	id := *fileByPath(t, mustImport(t, r, FormatClaudeCode, path), path).Session
	if err := r.Store.Sync(); err != nil {
		t.Fatal(err)
	}
	return r, id
}

// lineBoundaries are the offsets in an imported line's bytes where each
// string cut from it starts and ends.
func lineBoundaries(t *testing.T, r *Rook, ev eventlog.Event) []int64 {
	t.Helper()
	b, kind, err := r.Store.GetKind(ev.Body)
	if err != nil {
		t.Fatal(err)
	}
	if kind != cas.KindSource {
		return nil
	}
	sl, err := decodeSourceLine(b)
	if err != nil {
		t.Fatal(err)
	}
	var at []int64
	pos := int64(0)
	for _, c := range sl.Cuts {
		text, err := r.Store.Get(c.ID)
		if err != nil {
			t.Fatal(err)
		}
		pos += int64(c.Gap)
		at = append(at, pos)
		pos += 2 + jsonEscapedLen(text)
		at = append(at, pos)
	}
	return at
}

// entry of an imported line, read in parts (readLineRange), gives what it
// gave putting the line together whole: every range, at offsets inside
// characters, escapes and cut strings, at their edges, past the end.
func TestImportedLineRangesMatchWholeReads(t *testing.T) {
	r, id := importTrickyLines(t)
	evs, err := r.Log.Read(id, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	cuts, binaryCut := 0, false
	for _, ev := range evs {
		body, err := r.Body(ev)
		if err != nil {
			t.Fatal(err)
		}
		size := int64(len(body))
		bounds := lineBoundaries(t, r, ev)
		cuts += len(bounds) / 2
		binaryCut = binaryCut || len(bounds) > 0 && IsBinary(body)
		offs := []int64{-1, 0, 1, 2, 3, size - 3, size - 1, size, size + 1, 1 << 40}
		for _, b := range bounds {
			for d := int64(-4); d <= 4; d++ {
				offs = append(offs, b+d)
			}
		}
		for range 5 {
			offs = append(offs, rng.Int64N(size+1))
		}
		for _, off := range offs {
			for _, n := range []int{1, EntryPageBytes} {
				readWhole = true
				want, werr := r.ReadBody(id, ev.Seq, off, n)
				readWhole = false
				got, gerr := r.ReadBody(id, ev.Seq, off, n)
				if fmt.Sprint(werr) != fmt.Sprint(gerr) || !reflect.DeepEqual(want, got) {
					t.Fatalf("#%d at %d, %d bytes: got %d–%d of %d binary %v (%v) %q; whole read: %d–%d of %d binary %v (%v) %q",
						ev.Seq, off, n, got.Offset, got.End, got.Total, got.Binary, gerr, trim(got.Data),
						want.Offset, want.End, want.Total, want.Binary, werr, trim(want.Data))
				}
			}
		}
		// Paged from the start, the pages are the line.
		var all []byte
		for off := int64(0); ; {
			br, err := r.ReadBody(id, ev.Seq, off, EntryPageBytes)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, br.Data...)
			if br.Next == nil {
				break
			}
			off = *br.Next
		}
		if !bytes.Equal(all, body) {
			t.Fatalf("#%d: pages give %d bytes, the line is %d", ev.Seq, len(all), len(body))
		}
	}
	if cuts < 9 || !binaryCut {
		t.Fatalf("%d strings cut from the lines (a binary line's: %v): the test reads too few", cuts, binaryCut)
	}
}

func trim(b []byte) []byte { return b[:min(len(b), 40)] }

// entry of a page of an imported line holding a big string holds the page,
// not the line: it put the line together whole (twice its size).
func TestImportedLineRangeHoldsThePage(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	env := `"sessionId":"S","cwd":"/home/u/proj","version":"2.1.38"`
	out := bytes.Repeat([]byte("a line of a tool's output, \"quoted\"\tand tabbed\n"), 8<<20/48)
	lines := []string{
		fmt.Sprintf(`{"type":"user","uuid":"u1","parentUuid":null,%s,"timestamp":"2026-02-10T21:00:00.000Z","message":{"role":"user","content":"run it"}}`, env),
		fmt.Sprintf(`{"type":"user","uuid":"u2","parentUuid":"u1",%s,"timestamp":"2026-02-10T21:00:02.000Z","message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":%s}]}}`, env, appendJSONString(nil, out)),
	}
	path := "/p/-home-u-proj/S.jsonl"
	writeSource(t, fsys, path, lines, "")
	id := *fileByPath(t, mustImport(t, r, FormatClaudeCode, path), path).Session
	if err := r.Store.Sync(); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	br, err := r.ReadBody(id, 1, 4<<20, EntryPageBytes)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if br.Total < int64(len(out)) || len(br.Data) != EntryPageBytes {
		t.Fatalf("a page of %d bytes of %d", len(br.Data), br.Total)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > uint64(len(out))/4 {
		t.Fatalf("a page of an imported line of %d bytes allocated %d bytes: the line was put together whole", br.Total, n)
	}
}
