package agent

import (
	"bytes"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// A Claude Code session holding one tool result of 8 MiB (an imported
// line over shortenLinesOver) is shown, previewed and exported as it was
// when the line was put together and rendered whole (the same head, the
// same sizes, the same bytes omitted: the white space the view trims at
// its end is not counted), but without doing so: show of a
// 100 MB line took 20 s and 600 MB for a few KiB shown. What the views
// allocate stays near the one read of the tool's output (its object).
func TestViewsOfAHugeImportedLineReadItsHeadOnly(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	out := strings.Repeat("line of output \x1b[31mred\x1b[0m, \"quoted\", ünïcode\n", (8<<20)/50)
	env := `"sessionId":"S","cwd":"/home/u/proj","version":"2.1.38"`
	lines := []string{
		fmt.Sprintf(`{"type":"user","uuid":"u1","parentUuid":null,%s,"timestamp":"2026-02-10T21:00:00.000Z","message":{"role":"user","content":"run it"}}`, env),
		fmt.Sprintf(`{"type":"assistant","uuid":"a1","parentUuid":"u1",%s,"timestamp":"2026-02-10T21:00:01.000Z","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"cat big"}}]}}`, env),
		fmt.Sprintf(`{"type":"user","uuid":"u2","parentUuid":"a1",%s,"timestamp":"2026-02-10T21:00:02.000Z","message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":%s}]}}`, env, appendJSONString(nil, []byte(out))),
	}
	path := "/p/-home-u-proj/S.jsonl"
	writeSource(t, fsys, path, lines, "")
	id := *fileByPath(t, mustImport(t, r, FormatClaudeCode, path), path).Session
	evs, err := r.Log.Read(id, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	big := evs[len(evs)-1]
	whole, err := r.Body(big)
	if err != nil {
		t.Fatal(err)
	}
	if len(whole) <= shortenLinesOver {
		t.Fatalf("the line is %d bytes, not over %d", len(whole), shortenLinesOver)
	}
	view := RenderImported(whole)

	const maxBody = 4096
	var p ShowPage
	allocated := allocatedBy(func() {
		p, err = r.Show(id, ShowQuery{From: big.Seq, Limit: 1, MaxBody: maxBody})
	})
	if err != nil {
		t.Fatal(err)
	}
	v := p.Events[0]
	n := CutShown(view, maxBody)
	if !bytes.Equal(v.Text, view[:n]) || v.Omitted != int64(len(view)-n) || v.Size != int64(len(whole)) || !v.Rendered || v.Binary {
		t.Errorf("show: %d bytes of text, %d omitted, size %d (rendered %v, binary %v); the whole line's view: %d, %d, %d",
			len(v.Text), v.Omitted, v.Size, v.Rendered, v.Binary, n, len(view)-n, len(whole))
	}
	if len(v.Calls) != 1 {
		t.Errorf("show: the result answers calls %v, want the one before it", v.Calls)
	}
	if limit := 3 * int64(len(out)); allocated > limit {
		t.Errorf("show of one %d-byte line allocated %d bytes, more than %d", len(whole), allocated, limit)
	}

	// Asked for all of it (--max-body as large as it goes), it is all.
	all, err := r.Show(id, ShowQuery{From: big.Seq, Limit: 1, MaxBody: math.MaxInt})
	if err != nil {
		t.Fatal(err)
	}
	if av := all.Events[0]; !bytes.Equal(av.Text, view) || av.Omitted != 0 {
		t.Errorf("show --max-body %d: %d bytes of text, %d omitted; want the whole view, %d", math.MaxInt, len(av.Text), av.Omitted, len(view))
	}

	raw, err := r.Show(id, ShowQuery{From: big.Seq, Limit: 1, MaxBody: maxBody, Raw: true})
	if err != nil {
		t.Fatal(err)
	}
	rn := CutShown(whole, maxBody)
	if rv := raw.Events[0]; !bytes.Equal(rv.Text, whole[:rn]) || rv.Omitted != int64(len(whole)-rn) {
		t.Errorf("show --raw: %d bytes, %d omitted; want %d, %d", len(rv.Text), rv.Omitted, rn, len(whole)-rn)
	}

	var h HistoryPage
	allocated = allocatedBy(func() { h, err = r.History(id, HistoryQuery{Limit: 10}) })
	if err != nil {
		t.Fatal(err)
	}
	hl := h.Events[len(h.Events)-1]
	if want := Preview(previewOfImported(hl.Event, whole), PreviewRunes); hl.Preview != want || hl.Size != int64(len(whole)) {
		t.Errorf("history: preview %q, size %d; want %q, %d", hl.Preview, hl.Size, want, len(whole))
	}
	if limit := 3 * int64(len(out)); allocated > limit {
		t.Errorf("history allocated %d bytes, more than %d", allocated, limit)
	}

	var x Export
	allocated = allocatedBy(func() { x, err = r.ExportRange(id, 0, nil) })
	if err != nil {
		t.Fatal(err)
	}
	xe := x.Events[len(x.Events)-1]
	en := CutShown(view, ExportMaxBody)
	if !bytes.Equal(xe.Body, view[:en]) || xe.Cut != int64(len(view)-en) || xe.Size != int64(len(whole)) {
		t.Errorf("export: %d bytes, %d cut, size %d; want %d, %d, %d", len(xe.Body), xe.Cut, xe.Size, en, len(view)-en, len(whole))
	}
	if limit := 3 * int64(len(out)); allocated > limit {
		t.Errorf("export allocated %d bytes, more than %d", allocated, limit)
	}
}

// allocatedBy is how many bytes f allocated on the heap.
func allocatedBy(f func()) int64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return int64(after.TotalAlloc - before.TotalAlloc)
}

// A Claude Code tool result holds its output twice: the tool_result's
// content, which the view shows, and toolUseResult.stdout, which it does
// not. Shortened, both strings' text left out was counted: show's bytes
// omitted (and the --max-body it suggests) and export-html's cut were
// about twice the view's. Only what the view shows is counted.
func TestOmittedOfAHugeImportedLineCountsOnlyWhatTheViewShows(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	out := strings.Repeat("line of output\n", (2<<20)/15)
	env := `"sessionId":"S","cwd":"/home/u/proj","version":"2.1.38"`
	lines := []string{
		fmt.Sprintf(`{"type":"user","uuid":"u1","parentUuid":null,%s,"timestamp":"2026-02-10T21:00:00.000Z","message":{"role":"user","content":"run it"}}`, env),
		fmt.Sprintf(`{"type":"assistant","uuid":"a1","parentUuid":"u1",%s,"timestamp":"2026-02-10T21:00:01.000Z","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"gen"}}]}}`, env),
		fmt.Sprintf(`{"type":"user","uuid":"u2","parentUuid":"a1",%s,"timestamp":"2026-02-10T21:00:02.000Z","message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":%s}]},"toolUseResult":{"stdout":%s,"stderr":""}}`,
			env, appendJSONString(nil, []byte(out)), appendJSONString(nil, []byte(out))),
	}
	path := "/p/-home-u-proj/S.jsonl"
	writeSource(t, fsys, path, lines, "")
	id := *fileByPath(t, mustImport(t, r, FormatClaudeCode, path), path).Session
	evs, err := r.Log.Read(id, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	big := evs[len(evs)-1]
	whole, err := r.Body(big)
	if err != nil {
		t.Fatal(err)
	}
	if len(whole) <= shortenLinesOver {
		t.Fatalf("the line is %d bytes, not over %d", len(whole), shortenLinesOver)
	}
	view := RenderImported(whole)
	if bytes.Count(view, []byte("line of output\n")) > len(out)/15 {
		t.Fatalf("the view shows the output more than once: the case tests nothing")
	}

	const maxBody = 4096
	p, err := r.Show(id, ShowQuery{From: big.Seq, Limit: 1, MaxBody: maxBody})
	if err != nil {
		t.Fatal(err)
	}
	v, n := p.Events[0], CutShown(view, maxBody)
	if !bytes.Equal(v.Text, view[:n]) || v.Omitted != int64(len(view)-n) {
		t.Errorf("show: %d bytes of text, %d omitted; the whole line's view: %d, %d omitted", len(v.Text), v.Omitted, n, len(view)-n)
	}

	x, err := r.ExportRange(id, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	xe, en := x.Events[len(x.Events)-1], CutShown(view, ExportMaxBody)
	if !bytes.Equal(xe.Body, view[:en]) || xe.Cut != int64(len(view)-en) {
		t.Errorf("export: %d bytes, %d cut; the whole line's view: %d, %d cut", len(xe.Body), xe.Cut, en, len(view)-en)
	}
}
