package agent

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// hexRun is n bytes of lower-case hex digits, with now and then a byte
// JSON escapes as \u00XX (more hex digits), a backslash (\\) before hex
// digits, or a quote: every byte around a match in it may be part of an
// escape, as far as the escaped bytes alone tell.
func hexRun(rng *rand.Rand, n int) []byte {
	b := make([]byte, 0, n)
	for len(b) < n {
		switch rng.IntN(200) {
		case 0:
			b = append(b, 0x01+byte(rng.IntN(0x1e)))
		case 1:
			b = append(b, '\\')
		case 2:
			b = append(b, '"')
		default:
			b = append(b, "0123456789abcdef"[rng.IntN(16)])
		}
	}
	return b
}

// A find hit deep inside a long run of hex digits (a hash dump, a hex
// encoded blob in a tool's output) is shown streamed: its snippet's window
// started and ended where an escape does not (the escapes followed from
// the string's start), not read whole because no byte near the window's
// ends said so by itself; and what it shows is what the whole line gave.
func TestStreamedFindInALongHexRunStreams(t *testing.T) {
	streamEveryLine(t)
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	rng := rand.New(rand.NewPCG(41, 42))
	var out []byte
	var at []int
	for range 6 {
		out = append(out, hexRun(rng, 20<<10+rng.IntN(8<<10))...)
		at = append(at, len(out))
		out = append(out, "deadbeefcafe"...)
	}
	out = append(out, hexRun(rng, 20<<10)...)
	env := `"sessionId":"S","cwd":"/home/u/proj","version":"2.1.38"`
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
	evs, err := r.Log.Read(id, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	_, _, s, err := r.readBodyOrStream(evs[0].Body, math.MaxInt64)
	if err != nil || s == nil {
		t.Fatalf("not streamed: %v", err)
	}
	whole, _, err := r.readBody(evs[0].Body)
	if err != nil {
		t.Fatal(err)
	}
	hits := 0
	for from := 0; ; from++ {
		i := bytes.Index(whole[from:], []byte("deadbeefcafe"))
		if i < 0 {
			break
		}
		from += i
		hits++
		for _, q := range []string{"deadbeefcafe", "beef", "cafe"} {
			off := int64(from - rng.IntN(64))
			res, ok := r.findStreamed(s, off, cmp.Or(int64(0), FindMaxBytes), newFoldMatcher(q), findEscaped(q))
			if !ok || res.at < 0 {
				t.Errorf("find %q from %d (a hit at %d, in hex digits): streamed %v, hit at %d: read whole", q, off, from, ok, res.at)
			}
			seq := evs[0].Seq
			fq := FindQuery{Query: q, From: seq, Through: &seq, Offset: off}
			readWhole = true
			want, werr := r.Find(id, fq)
			readWhole = false
			got, gerr := r.Find(id, fq)
			if fmt.Sprint(werr) != fmt.Sprint(gerr) || !reflect.DeepEqual(want, got) {
				t.Fatalf("find %+v:\nstreamed %+v (%v)\nwhole    %+v (%v)", fq, got, gerr, want, werr)
			}
		}
	}
	if hits != len(at) {
		t.Fatalf("%d hits in the line, %d put in", hits, len(at))
	}
}
