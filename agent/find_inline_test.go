package agent

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// inlineLines writes a session of lines holding long strings import leaves
// in them (inlineContent: bytes that are not UTF-8, lone surrogates, \/,
// \u00e9 ...) in every place find reads them: a tool's output twice, next
// to a string import cuts out (before and after it), first and last in
// the line's object, beside an image left in the line.
func inlineLines(t *testing.T, r *Rook, fsys vfs.FS, rng *rand.Rand) eventlog.ID {
	t.Helper()
	env := `"sessionId":"S","cwd":"/home/u/proj","version":"2.1.38"`
	var lines []string
	add := func(format string, a ...any) {
		lines = append(lines, fmt.Sprintf(`{"type":"user","uuid":"u%d",%s,"timestamp":"2026-02-10T21:00:00.000Z",`, len(lines), env)+fmt.Sprintf(format, a...)+"}")
	}
	first := func(format string, a ...any) {
		lines = append(lines, fmt.Sprintf(format, a...)+fmt.Sprintf(`,"type":"user","uuid":"u%d",%s}`, len(lines), env))
	}
	lit := func(b []byte) string { return `"` + string(b) + `"` }
	q := func(s string) string { return string(appendJSONString(nil, []byte(s))) }
	for i := range 14 {
		content := inlineContent(rng, 3000+rng.IntN(40000), i%2 == 0)
		switch i % 7 {
		case 0: // a tool's output, twice on the line (Claude Code)
			add(`"message":{"role":"user","content":[{"tool_use_id":"t","type":"tool_result","content":%s}]},"toolUseResult":{"stdout":%s}`, lit(content), lit(content))
		case 1: // after a string import cuts out
			add(`"message":{"role":"user","content":[{"type":"text","text":%s},{"type":"text","text":%s}]}`, q(strings.Repeat("needle in a cut string ", 100)), lit(content))
		case 2: // before one, the odd bytes at the string's ends
			add(`"message":{"role":"user","content":[{"type":"text","text":%s},{"type":"text","text":%s}]}`, lit(append(append([]byte("\xffneedle"), content...), "needle\xc3"...)), q(strings.Repeat("a cut string needle ", 100)))
		case 3: // an encoded value left in the line beside it
			add(`"message":{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":%s}},{"type":"text","text":%s}]}`,
				lit([]byte(strings.Repeat(`iVBORw0KGgo\/AAAANSUhEUg`, 200))), lit(content))
		case 4: // the line's first string
			first(`{"message":{"content":%s,"role":"user"}`, lit(append([]byte(`\ud83d`), content...)))
		case 5: // its last string, ending in an escape
			add(`"message":{"role":"user","content":%s}`, lit(append(content, `\u00e9\ud83d`...)))
		case 6: // two of them, a cut string between
			add(`"message":{"role":"user","content":[{"type":"text","text":%s},{"type":"text","text":%s},{"type":"text","text":%s}]}`, lit(content), q(strings.Repeat("cut \"needle\" ", 200)), lit(inlineContent(rng, 2500, true)))
		}
	}
	path := "/p/-home-u-proj/S.jsonl"
	writeSource(t, fsys, path, lines, "")
	id := *fileByPath(t, mustImport(t, r, FormatClaudeCode, path), path).Session
	if err := r.Store.Sync(); err != nil {
		t.Fatal(err)
	}
	return id
}

// Find over an imported line whose long strings import left in it reads
// the line streamed, from its object, and gives exactly what the whole
// read gives: hits, offsets, snippets, cursors and costs, from offsets at
// and around each string's ends, inside escapes and characters, and with
// budgets that end there. It read every such line whole (findStreamed
// declined it).
func TestFindOfStringsLeftInTheLineStreams(t *testing.T) {
	streamEveryLine(t)
	oldMin := inlineCutMin
	inlineCutMin = 2000
	t.Cleanup(func() { inlineCutMin = oldMin })
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	rng := rand.New(rand.NewPCG(41, 42))
	id := inlineLines(t, r, fsys, rng)
	evs, err := r.Log.Read(id, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	queries := []string{"needle", "NEEDLE", `"needle"`, "needle in a cut", "mix test", "plain words", "日本", "é", "😀", "\ufffd",
		"iVBORw0KGgo", `\ud83d`, "ude00", `\/`, "\n", "x"}
	streamed, whole := 0, 0
	for _, ev := range evs {
		_, _, s, err := r.readBodyOrStream(ev.Body, math.MaxInt64)
		if err != nil || s == nil || s.inlineCuts == 0 {
			t.Fatalf("#%d: not streamed with its inline strings (%v)", ev.Seq, err)
		}
		// Offsets at and around each cut's ends, the line's ends, and a
		// few anywhere.
		offs := []int64{0, 1, s.total - 1, s.total, rng.Int64N(s.total), rng.Int64N(s.total)}
		for k := range s.cuts {
			for _, e := range []int64{s.realQ[k], s.realQ[k] + 1 + s.cuts[k].escLen} {
				for d := int64(-3); d <= 3; d++ {
					offs = append(offs, max(e+d, 0))
				}
			}
		}
		for _, qq := range queries {
			for i, off := range offs {
				budget := int64(0)
				if i%3 == 1 {
					budget = 1 + rng.Int64N(s.total)
				}
				if i%5 == 2 {
					budget = 1 + rng.Int64N(64)
				}
				if _, ok := r.findStreamed(s, off, cmp.Or(budget, FindMaxBytes), newFoldMatcher(qq), findEscaped(qq)); ok {
					streamed++
				} else {
					whole++
				}
				seq := ev.Seq
				fq := FindQuery{Query: qq, From: seq, Offset: off, Through: &seq, MaxBytes: budget}
				readWhole = true
				want, werr := r.Find(id, fq)
				readWhole = false
				got, gerr := r.Find(id, fq)
				if fmt.Sprint(werr) != fmt.Sprint(gerr) || !reflect.DeepEqual(want, got) {
					t.Fatalf("#%d find %q from %d (budget %d) of %d bytes:\nstreamed %+v (%v)\nwhole    %+v (%v)", ev.Seq, qq, off, budget, s.total,
						got, gerr, want, werr)
				}
			}
		}
	}
	t.Logf("%d line×query×offset streamed, %d read whole", streamed, whole)
	if streamed < 10*whole {
		t.Fatalf("%d streamed, %d whole: too few streamed", streamed, whole)
	}
}
