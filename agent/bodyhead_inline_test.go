package agent

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// session show of imported lines each holding a string of MiBs that
// import left in it (bytes that are not UTF-8, lone surrogates, \/,
// \u00e9, colors, newlines; the string twice on its line, beside a string
// import cuts out, ending in white space the view trims, ending with a
// newline or not) shortens the string as the line's object streams, and
// gives exactly what the line read whole gives: text, omitted count,
// size, binary, rendered or raw, at every --max-body. It read the
// object whole, put the line together and rendered it whole.
func TestShowOfStringsLeftInTheLineShortensThem(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	rng := rand.New(rand.NewPCG(51, 52))
	env := `"sessionId":"S","cwd":"/home/u/proj","version":"2.1.38"`
	var lines []string
	add := func(format string, a ...any) {
		lines = append(lines, fmt.Sprintf(`{"type":"user","uuid":"u%d",%s,"timestamp":"2026-02-10T21:00:00.000Z",`, len(lines), env)+fmt.Sprintf(format, a...)+"}")
	}
	lit := func(b []byte) string { return `"` + string(b) + `"` }
	q := func(s string) string { return string(appendJSONString(nil, []byte(s))) }
	big := func(n int, escapes bool, end string) []byte {
		return append(inlineContent(rng, n, escapes), end...)
	}
	add(`"message":{"role":"user","content":[{"tool_use_id":"t","type":"tool_result","content":%s}]},"toolUseResult":{"stdout":%s}`,
		lit(big(2300<<10, true, `\n  \n`)), lit(big(2300<<10, true, "")))
	add(`"message":{"role":"user","content":[{"tool_use_id":"t","type":"tool_result","content":%s}]}`, lit(big(4200<<10, false, "  ")))
	add(`"message":{"role":"user","content":[{"type":"text","text":%s},{"type":"text","text":%s}]}`, q(strings.Repeat("needle in a cut string ", 100)), lit(big(4300<<10, true, `\u001b[0m`)))
	add(`"message":{"role":"user","content":%s}`, lit(big(4300<<10, true, `end\n`)))
	path := "/p/-home-u-proj/S.jsonl"
	writeSource(t, fsys, path, lines, "")
	id := *fileByPath(t, mustImport(t, r, FormatClaudeCode, path), path).Session
	if err := r.Store.Sync(); err != nil {
		t.Fatal(err)
	}
	evs, err := r.Log.Read(id, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		o, err := r.Store.OpenObject(ev.Body)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := r.inlineHead(o, 4096+headSlack); !ok {
			t.Fatalf("#%d (%d bytes): not shortened as it streams", ev.Seq, o.Size())
		}
	}
	// Each line (a 4.2-4.7 MB object) is read streamed: a show allocates
	// 7-11 MB, 37-59 MB read whole.
	for _, ev := range evs {
		seq := ev.Seq
		var err error
		readWhole = true
		w := allocatedBy(func() { _, err = r.Show(id, ShowQuery{From: seq, Limit: 1, MaxBody: 4096}) })
		readWhole = false
		n := allocatedBy(func() { _, err = r.Show(id, ShowQuery{From: seq, Limit: 1, MaxBody: 4096}) })
		t.Logf("#%d: show allocates %.1f MB, %.1f MB read whole", seq, float64(n)/1e6, float64(w)/1e6)
		if err != nil || n > 16<<20 {
			t.Fatalf("#%d: show allocates %.1f MB (%v)", seq, float64(n)/1e6, err)
		}
	}
	for _, raw := range []bool{false, true} {
		for _, mb := range []int{0, 1, 100, 4096, 200000} {
			sq := ShowQuery{From: 0, Limit: len(evs), MaxBody: mb, Raw: raw}
			readWhole = true
			want, werr := r.Show(id, sq)
			readWhole = false
			got, gerr := r.Show(id, sq)
			// (dropped is the part of Omitted readBodyHead counted: the
			// line read whole drops nothing.)
			for i := range got.Events {
				got.Events[i].dropped = 0
			}
			if fmt.Sprint(werr) != fmt.Sprint(gerr) || !reflect.DeepEqual(want, got) {
				for i := range want.Events {
					w, g := want.Events[i], got.Events[i]
					if !reflect.DeepEqual(w, g) {
						t.Errorf("#%d raw %v max-body %d: streamed omitted %d size %d binary %v, whole %d %d %v; text equal %v",
							i, raw, mb, g.Omitted, g.Size, g.Binary, w.Omitted, w.Size, w.Binary, string(w.Text) == string(g.Text))
					}
				}
				t.Fatalf("show, raw %v, max-body %d: streamed differs from whole (%v, %v)", raw, mb, gerr, werr)
			}
		}
	}
}
