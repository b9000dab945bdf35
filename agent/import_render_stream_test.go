package agent

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/clock"
	"github.com/rookhq/rook/internal/vfs"
)

// compareStreamedViews checks, for every imported line of session id
// with strings cut from it, that the streamed view (renderedStream) is
// RenderImported of the whole line, where it streams, and that quotes at
// a few offsets are what they were when the line was rendered whole. It
// returns how many lines streamed and how many were rendered whole.
func compareStreamedViews(t *testing.T, r *Rook, id eventlog.ID, rng *rand.Rand) (streamed, whole int) {
	t.Helper()
	for from := uint64(0); ; {
		evs, err := r.Log.Read(id, from, 256)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			return streamed, whole
		}
		from = evs[len(evs)-1].Seq + 1
		for _, ev := range evs {
			b, kind, err := r.Store.GetKind(ev.Body)
			if err != nil {
				t.Fatal(err)
			}
			if kind != cas.KindSource {
				continue
			}
			sl, err := decodeSourceLine(b)
			if err != nil {
				t.Fatal(err)
			}
			if len(sl.Cuts) == 0 {
				continue
			}
			body, err := r.Body(ev)
			if err != nil {
				t.Fatal(err)
			}
			view := RenderImported(body)
			var buf bytes.Buffer
			ok, err := r.renderedStream(&sl, &buf, false)
			if err != nil {
				t.Fatalf("#%d: %v", ev.Seq, err)
			}
			if ok {
				streamed++
				if !bytes.Equal(buf.Bytes(), view) {
					i := 0
					for i < min(buf.Len(), len(view)) && buf.Bytes()[i] == view[i] {
						i++
					}
					t.Fatalf("#%d: the streamed view (%d bytes) differs from the whole line's (%d bytes) at %d: %q, want %q",
						ev.Seq, buf.Len(), len(view), i, buf.Bytes()[i:min(buf.Len(), i+80)], view[i:min(len(view), i+80)])
				}
			} else {
				whole++
			}
			size := int64(len(view))
			offs := []int64{0, 1, size / 2, size - 1, size, size + 1, rng.Int64N(size + 1)}
			for _, off := range offs {
				readWhole = true
				want, werr := r.Quote(id, ev.Seq, off)
				readWhole = false
				got, gerr := r.Quote(id, ev.Seq, off)
				if fmt.Sprint(werr) != fmt.Sprint(gerr) || !reflect.DeepEqual(want, got) {
					t.Fatalf("#%d quote at %d: %d–%d of %d rendered %v (%v) %q; rendered whole: %d–%d of %d rendered %v (%v) %q",
						ev.Seq, off, got.Offset, got.End, got.Total, got.Rendered, gerr, trim(got.Data),
						want.Offset, want.End, want.Total, want.Rendered, werr, trim(want.Data))
				}
			}
		}
	}
}

// Every imported line of the shared corpus of real Claude Code
// transcripts, and of the hand-made Codex rollouts, is quoted as it was
// when it was rendered whole, and its streamed view is its whole view.
func TestStreamedViewsOfTheCorpusMatchWholeOnes(t *testing.T) {
	if _, err := os.Stat(corpusDir); err != nil {
		t.Skipf("no corpus at %s: %v", corpusDir, err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	streamed, whole, sessions := 0, 0, 0
	for _, src := range []struct{ format, dir string }{{FormatClaudeCode, corpusDir}, {FormatCodex, filepath.Join("testdata", "codex")}} {
		var paths []string
		filepath.WalkDir(src.dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && strings.HasSuffix(p, ".jsonl") {
				paths = append(paths, p)
			}
			return nil
		})
		fsys := vfs.NewMem()
		r := testRook(t, fsys)
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(src.dir, p)
			writeSourceFile(t, fsys, filepath.Join("/src", rel), data)
		}
		var abs []string
		for _, p := range paths {
			rel, _ := filepath.Rel(src.dir, p)
			abs = append(abs, filepath.Join("/src", rel))
		}
		rep := mustImport(t, r, src.format, abs...)
		for _, f := range rep.Files {
			if f.Session == nil {
				continue
			}
			sessions++
			s, w := compareStreamedViews(t, r, *f.Session, rng)
			streamed, whole = streamed+s, whole+w
		}
	}
	t.Logf("%d sessions: %d lines with cut strings streamed, %d rendered whole", sessions, streamed, whole)
	if sessions < 20 || streamed < 100 {
		t.Fatalf("%d sessions, %d lines streamed: the test reads too few", sessions, streamed)
	}
}

// Hand-made lines holding long strings in every place a view shows one
// (as written, as JSON, blank, its first line blank, ending with a
// newline or not, colors and control characters cut anywhere, a JSON
// image in a tool's output, a multi-MiB output) are quoted as they were
// rendered whole, and most stream.
func TestStreamedViewsOfHandMadeLinesMatchWholeOnes(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	rng := rand.New(rand.NewPCG(7, 8))
	q := func(b []byte) string { return string(appendJSONString(nil, b)) }
	tricky := func(n int) []byte { return trickyText(rng, n, false) }
	long := strings.Repeat("words of a long text ", 20)
	env := `"sessionId":"S","cwd":"/home/u/proj","version":"2.1.38"`
	var lines []string
	add := func(format string, a ...any) {
		lines = append(lines, fmt.Sprintf(`{"type":"user","uuid":"u%d",%s,"timestamp":"2026-02-10T21:00:00.000Z",`, len(lines), env)+fmt.Sprintf(format, a...)+"}")
	}
	msg := func(content string) { add(`"message":{"role":"user","content":%s}`, content) }
	result := func(content string) { msg(`[{"tool_use_id":"t","type":"tool_result","content":` + content + `}]`) }
	lines = append(lines, fmt.Sprintf(`{"type":"user","uuid":"u0",%s,"timestamp":"2026-02-10T21:00:00.000Z","message":{"role":"user","content":"go"}}`, env))
	for range 3 {
		result(q(tricky(300 + rng.IntN(5000))))
	}
	result(q(append(tricky(70<<10), "\x1b[3"...)))
	result(q(append([]byte("\x1b[31"), tricky(70<<10)...)))
	result(q([]byte(strings.Repeat(" \n\t\u00a0", 100)))) // blank: (no output)
	result(q([]byte(strings.Repeat(" \n", 200) + "x")))   // not blank
	result(q([]byte(long + strings.Repeat(" \n", 300))))  // its end trimmed
	result(`[{"type":"text","text":` + q([]byte(long+"\n")) + `},{"type":"text","text":` + q([]byte(long)) + `}]`)
	result(`[{"type":"text","text":` + q([]byte(long)) + `},{"type":"text","text":"short"},{"type":"text","text":` + q([]byte(long)) + `}]`)
	result(`[{"type":"text","text":` + q([]byte(long)) + `},{"type":"image","source":{"type":"base64","data":"iVBORw0KGgo"}}]`)
	result(q([]byte(long + `{"type":"image","data":"` + strings.Repeat("iVBORw0KGgoAAAANSUhEUg", 20) + `"}`)))
	result(q([]byte(long + `"data:image/png;base64,` + strings.Repeat("iVBORw0K", 40) + `"`)))
	result(q([]byte(long+`"da`)) + `,"x":` + q([]byte(`ta": "`+long)))
	// A data URL as a whole string in an object written as it is: the
	// quote that opens it is in the line, the rest in the cut string.
	result(`{"url":` + q([]byte("data:image/png;base64,"+strings.Repeat("iVBORw0K", 40))) + `}`)
	msg(q([]byte(long + "\nsecond line")))
	msg(q([]byte("\n  \n" + long)))                                    // its blank first lines left out
	msg(q([]byte(strings.Repeat(" \n\u00a0", 500<<10) + "\t" + long))) // past the first pieces of its stream
	msg(q([]byte(strings.Repeat("  ", 200))))
	msg(`[{"type":"thinking","thinking":` + q(tricky(2000)) + `,"signature":` + q([]byte(strings.Repeat("c2ln", 100))) + `},{"type":"text","text":` + q([]byte(long)) + `}]`)
	msg(`[{"type":"tool_use","name":"Write","input":{"file_path":"/a.go","content":` + q([]byte(long+"\n"+long)) + `}}]`)
	msg(`[{"type":"tool_use","name":"Write","input":{"file_path":"/a.go","content":` + q([]byte("\n"+long)) + `}}]`) // its only newline first
	msg(`[{"type":"tool_use","name":"Write","input":{"file_path":"/a.go","content":` + q([]byte(long)) + `,"more":` + q([]byte(long)) + `}}]`)
	msg(`[{"type":"tool_use","name":"MultiEdit","input":{"edits":[{"old_string":` + q([]byte(long)) + `,"new_string":"b"}]}}]`)
	msg(`[{"type":"tool_use","name":"X","input":` + q([]byte(long)) + `}]`)
	msg(`[{"type":"tool_result","content":[{"type":"text","text":` + q([]byte(long)) + `}]},{"type":"text","text":"after"}]`)
	msg(`[{"type":"tool_result","content":[{"type":"text","text":` + q([]byte(strings.Repeat(" ", 300))) + `}]}]`)
	msg(`[{"type":"tool_result","content":{"odd":` + q([]byte(long)) + `}}]`)
	lines = append(lines,
		fmt.Sprintf(`{"type":"system","subtype":"x",%s,"content":%s}`, env, q([]byte(long))),
		fmt.Sprintf(`{"type":"system","subtype":"x",%s,"content":%s,"durationMs":1500}`, env, q([]byte(long+" \n"))),
		fmt.Sprintf(`{"type":"summary","summary":%s}`, q([]byte(long))),
		fmt.Sprintf(`{"type":"progress",%s,"data":{"type":"bash_progress","output":%s}}`, env, q([]byte(long))),
		fmt.Sprintf(`{"type":"queue-operation",%s,"operation":"enqueue","content":%s}`, env, q([]byte(long))),
		fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":%s},"toolUseResult":{"stdout":%s}}`, env, q([]byte(long)), q([]byte(long+"x"))),
	)
	// The multi-MiB output.
	big := bytes.Repeat([]byte("line of output \x1b[31mred\x1b[0m, \"quoted\", ünïcode\r\n\x07"), (4<<20)/52)
	result(q(big))
	path := "/p/-home-u-proj/S.jsonl"
	writeSource(t, fsys, path, lines, "")
	id := *fileByPath(t, mustImport(t, r, FormatClaudeCode, path), path).Session
	if err := r.Store.Sync(); err != nil {
		t.Fatal(err)
	}
	streamed, whole := compareStreamedViews(t, r, id, rng)
	t.Logf("%d lines streamed, %d rendered whole", streamed, whole)
	if streamed < 23 || whole < 5 {
		t.Fatalf("%d lines streamed, %d rendered whole: the test reads too few of either", streamed, whole)
	}

	// Codex: outputs as written, wrapped in JSON, a reasoning's texts, a
	// call's arguments as a string.
	rfs := vfs.NewMem()
	rc := testRook(t, rfs)
	cl := []string{`{"timestamp":"2026-01-02T03:04:05.000Z","type":"session_meta","payload":{"id":"019b7d3a-5e1f-7c42-9a3b-2f6e8d1c0a47","cwd":"/w","timestamp":"2026-01-02T03:04:05.000Z"}}`}
	item := func(payload string) {
		cl = append(cl, `{"timestamp":"2026-01-02T03:04:06.000Z","type":"response_item","payload":`+payload+`}`)
	}
	item(`{"type":"function_call_output","call_id":"c","output":` + q(tricky(3000)) + `}`)
	item(`{"type":"function_call_output","call_id":"c","output":` + q([]byte(`{"output":"`+long+`","metadata":{"exit_code":1}}`)) + `}`)
	item(`{"type":"function_call_output","call_id":"c","output":` + q([]byte(strings.Repeat("\n", 300))) + `}`)
	item(`{"type":"function_call","name":"shell","call_id":"c","arguments":` + q([]byte(`{"command":["bash","-lc","`+long+`"]}`)) + `}`)
	item(`{"type":"custom_tool_call","name":"apply_patch","call_id":"c","input":` + q([]byte(long+"\n*** End Patch")) + `}`)
	item(`{"type":"reasoning","summary":[{"type":"summary_text","text":` + q([]byte(long)) + `},{"type":"summary_text","text":` + q([]byte(long+"\n")) + `}]}`)
	item(`{"type":"message","role":"assistant","content":[{"type":"output_text","text":` + q([]byte(long)) + `}]}`)
	cpath := "/c/2026/01/02/rollout-2026-01-02T03-04-05-019b7d3a-5e1f-7c42-9a3b-2f6e8d1c0a47.jsonl"
	writeSource(t, rfs, cpath, cl, "")
	cid := *fileByPath(t, mustImport(t, rc, FormatCodex, cpath), cpath).Session
	streamed, whole = compareStreamedViews(t, rc, cid, rng)
	t.Logf("codex: %d lines streamed, %d rendered whole", streamed, whole)
	if streamed < 4 || whole < 2 {
		t.Fatalf("codex: %d lines streamed, %d rendered whole: the test reads too few of either", streamed, whole)
	}
}

// A quote of an imported line holding a big tool output holds the quote,
// not the line: it put the line together and rendered it whole (several
// times the output's size).
func TestQuoteOfABigImportedLineHoldsTheQuote(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	env := `"sessionId":"S","cwd":"/home/u/proj","version":"2.1.38"`
	out := bytes.Repeat([]byte("line of output \x1b[31mred\x1b[0m, \"quoted\", ünïcode\n"), (8<<20)/50)
	lines := []string{
		fmt.Sprintf(`{"type":"user","uuid":"u1","parentUuid":null,%s,"timestamp":"2026-02-10T21:00:00.000Z","message":{"role":"user","content":"run it"}}`, env),
		fmt.Sprintf(`{"type":"user","uuid":"u2","parentUuid":"u1",%s,"timestamp":"2026-02-10T21:00:02.000Z","message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":%s}]},"toolUseResult":{"stdout":%s}}`, env, appendJSONString(nil, out), appendJSONString(nil, out)),
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
	q, err := r.Quote(id, 1, 4<<20)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if q.Total < int64(len(out))*8/10 || len(q.Data) < QuoteBytes-4 || !q.Rendered {
		t.Fatalf("a quote of %d bytes of %d (rendered %v)", len(q.Data), q.Total, q.Rendered)
	}
	// Rendered whole, 226 MB; streamed, 3.4 MB (two zstd decoders: the
	// scan for whether the output is blank, then the output itself).
	if n := after.TotalAlloc - before.TotalAlloc; n > uint64(len(out))/2 {
		t.Fatalf("a quote of an imported line of %d bytes allocated %d bytes: the line was put together and rendered whole", len(out), n)
	}
}

// FuzzStreamedView: a line with long strings in it (each # in the line
// is fill repeated past MinCutString), its strings cut out as an import
// cuts them, streams as RenderImported renders it whole, where it
// streams; never a panic.
func FuzzStreamedView(f *testing.F) {
	for _, s := range renderSeeds {
		f.Add([]byte(strings.ReplaceAll(s, `"out"`, `"#"`)), "ab \x1b[31m\n")
	}
	for _, s := range []string{
		`{"type":"user","message":{"content":[{"type":"tool_result","content":"#"}]}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","content":[{"type":"text","text":"#"},{"type":"text","text":"x#"}]}]}}`,
		`{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"#\u001b["},{"type":"text","text":"#"},{"type":"tool_use","name":"W","input":{"a":"#","b":["#"]}}]}}`,
		`{"type":"system","subtype":"s","content":"#","durationMs":12}`,
		`{"timestamp":"t","type":"response_item","payload":{"type":"function_call_output","output":"#"}}`,
		`{"timestamp":"t","type":"response_item","payload":{"type":"reasoning","summary":[{"type":"summary_text","text":"#"},{"type":"summary_text","text":"#"}]}}`,
	} {
		f.Add([]byte(s), " \n")
		f.Add([]byte(s), "m\x1b[0")
		f.Add([]byte(s), `"data":"`)
	}
	fsys := vfs.NewMem()
	clk := &clock.Fixed{T: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	if _, err := cas.Init(fsys, clk, testHome); err != nil {
		f.Fatal(err)
	}
	r, err := Open(testHome, Options{FS: fsys, Clock: clk, Writable: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { r.Close() })
	f.Fuzz(func(t *testing.T, line []byte, fill string) {
		if len(line) > 4096 || len(fill) > 64 || bytes.IndexByte(line, '\n') >= 0 {
			return
		}
		if fill == "" {
			fill = " "
		}
		long := appendJSONString(nil, []byte(strings.Repeat(fill, MinCutString/len(fill)+1)))
		line = bytes.ReplaceAll(line, []byte("#"), long[1:len(long)-1])
		strs, ok := stringValues(line, MinCutString+2)
		if !ok {
			return
		}
		cuts := lineCuts(line, strs, MinCutString, func(jsonString) cas.Kind { return cas.KindToolResult })
		var sl sourceLine
		prev := 0
		for _, c := range cuts {
			res, err := r.Store.Put(c.Kind, c.Text)
			if err != nil {
				t.Fatal(err)
			}
			sl.Cuts = append(sl.Cuts, lineCut{Gap: c.Start - prev, ID: res.ID})
			sl.Rest = append(sl.Rest, line[prev:c.Start]...)
			prev = c.End
		}
		sl.Rest = append(sl.Rest, line[prev:]...)
		var buf bytes.Buffer
		streamed, err := r.renderedStream(&sl, &buf, false)
		if err != nil {
			t.Fatal(err)
		}
		if view := RenderImported(line); streamed && !bytes.Equal(buf.Bytes(), view) {
			t.Fatalf("%q streams as %q, renders whole as %q", line, buf.Bytes(), view)
		}
	})
}

// A quote of an imported line whose shown string cannot be read fails as
// it did when the line was rendered whole; a string the view does not
// show is not read.
func TestQuoteOfALineWithAStringGone(t *testing.T) {
	r := testRook(t, vfs.NewMem())
	id := newSession(t, r)
	long := strings.Repeat("output ", 100)
	put, err := r.Store.Put(cas.KindToolResult, []byte(long))
	kept := put.ID
	if err != nil {
		t.Fatal(err)
	}
	var gone cas.Key
	copy(gone[:], "gone")
	line := func(shown, unshown cas.Key) []byte {
		head := `{"type":"user","message":{"content":[{"type":"tool_result","content":`
		mid := `}]},"toolUseResult":{"stdout":`
		sl := sourceLine{Cuts: []lineCut{{Gap: len(head), ID: shown}, {Gap: len(mid), ID: unshown}}, Rest: []byte(head + mid + `}}`)}
		return sl.encode()
	}
	for _, b := range [][]byte{line(gone, kept), line(kept, gone)} {
		res, err := r.Store.Put(cas.KindSource, b)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Log.Append(id, eventlog.Event{Kind: eventlog.KindToolResult, Body: res.ID}); err != nil {
			t.Fatal(err)
		}
	}
	readWhole = true
	_, werr := r.Quote(id, 0, 0)
	readWhole = false
	_, gerr := r.Quote(id, 0, 0)
	if werr == nil || fmt.Sprint(gerr) != fmt.Sprint(werr) {
		t.Errorf("quote of a line whose output is gone: %v; rendered whole: %v", gerr, werr)
	}
	q, err := r.Quote(id, 1, 0)
	if err != nil || !q.Rendered || !strings.Contains(string(q.Data), strings.TrimSpace(long)) {
		t.Errorf("quote of a line whose unshown string is gone: %q (rendered %v), %v", trim(q.Data), q.Rendered, err)
	}
}
