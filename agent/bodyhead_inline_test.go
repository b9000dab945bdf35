package agent

import (
	"bytes"
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
// size, binary, rendered or raw, at --max-body 0 to 200000. It read the
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

// FuzzShortLine writes a source line's object to the scan that shortens
// its long string literals (shortLine), in pieces cut anywhere, with a
// small head: it never panics, and what it keeps of an object it takes is
// that line's rest with each long string's middle left out for its
// placeholder: the pieces around the placeholders, in order, with the
// bytes left out between them, make the rest again.
func FuzzShortLine(f *testing.F) {
	line := func(cuts []lineCut, rest string) []byte {
		sl := sourceLine{Offset: 7, Cuts: cuts, Rest: []byte(rest)}
		return sl.encode()
	}
	long := strings.Repeat("word \\ud83d x\xff, \\u001b[31mred\\u001b[0m ", 200)
	f.Add(line(nil, `{"a":"`+long+`","b":1}`+"\n"), uint64(1), uint8(10))
	f.Add(line([]lineCut{{Gap: 5}, {Gap: 20}}, `{"a":,"b":"`+long+`","c":}`), uint64(2), uint8(40))
	f.Add(line(nil, `{"a":"`+strings.Repeat("0123456789", 400)+`"}`), uint64(3), uint8(1))
	f.Add(line(nil, `{"a":"`+long+`\x"}`), uint64(4), uint8(5))
	f.Add(line([]lineCut{{Gap: 3}}, `{"a`+long), uint64(5), uint8(5))
	f.Add([]byte{1, 0x80}, uint64(6), uint8(0))
	// a string holding what a placeholder is written as
	f.Add(line(nil, `{"p":"`+shortMark+`0\n`+shortMark+`","a":"`+strings.Repeat("a b ", 1000)+`"}`), uint64(1), uint8(20))
	f.Fuzz(func(t *testing.T, obj []byte, seed uint64, headMin uint8) {
		rng := rand.New(rand.NewPCG(seed, seed))
		s := &shortLine{headMin: int64(headMin), count: &tailCount{}}
		for rest := obj; len(rest) > 0 && s.err == nil; {
			k := min(len(rest), 1+rng.IntN(64))
			s.Write(rest[:k])
			rest = rest[k:]
		}
		if !s.finish() {
			return
		}
		sl, err := decodeSourceLine(obj)
		if err != nil {
			t.Fatalf("shortened an object decodeSourceLine refuses: %v", err)
		}
		if bytes.Contains(obj, []byte(shortMark)) {
			// A string of the line's own holding the mark could be taken
			// for a placeholder below (inlineHead counts the marks, and
			// refuses such a head).
			return
		}
		var pieces [][]byte
		kept := s.rest
		for k := range s.views {
			lit, _ := shortPlaceholder(k)
			i := bytes.Index(kept, []byte(lit))
			if i < 0 {
				t.Fatalf("placeholder %d not in %q", k, s.rest)
			}
			pieces, kept = append(pieces, kept[:i]), kept[i+len(lit):]
		}
		pieces = append(pieces, kept)
		at, total := 0, 0
		for i, p := range pieces {
			j := bytes.Index(sl.Rest[at:], p)
			if i == 0 && j != 0 || j < 0 || i == len(pieces)-1 && at+j+len(p) != len(sl.Rest) {
				t.Fatalf("piece %d %q is not in the rest %q after byte %d", i, p, sl.Rest, at)
			}
			at += j + len(p)
			total += len(p)
		}
		// (size counts what was left out less the placeholders put in.)
		left := s.size
		for k := range s.views {
			lit, _ := shortPlaceholder(k)
			left += int64(len(lit))
		}
		if int64(total)+left != int64(len(sl.Rest)) {
			t.Fatalf("kept %d bytes and left out %d, the rest has %d", total, left, len(sl.Rest))
		}
		// Where each string's head and end are cut, exactly.
		if want := shortenedModel(sl.Rest, int64(headMin)); !bytes.Equal(s.rest, want) {
			t.Fatalf("kept\n%q\nthe model keeps\n%q", s.rest, want)
		}
	})
}

// shortenedModel is what shortLine keeps of rest, once it has read it all
// and not given up, made from the whole rest: each string literal whose
// text reaches headMin bytes at a place the view may be cut (shortSafe, a
// byte written as itself) keeps its literal through that place, then the
// placeholder, then what follows the last such place at least
// shortTailKeep bytes before its closing quote.
func shortenedModel(rest []byte, headMin int64) []byte {
	var out []byte
	k := 0
	for i := 0; i < len(rest); {
		if rest[i] != '"' {
			out = append(out, rest[i])
			i++
			continue
		}
		// The literal's content: rest[i+1:end], each byte's place as
		// the start of a character written as itself or of an escape.
		var safe []bool
		end := i + 1
		tokens, head := int64(0), -1
		for tok := 0; end < len(rest); end++ {
			c, starts := rest[end], tok == 0
			if starts && c == '"' {
				break
			}
			switch {
			case starts && c == '\\':
				tok = -1
			case tok == -1 && c == 'u':
				tok = 4
			case tok == -1:
				tok = 0
			case tok > 0:
				tok--
			}
			if starts {
				tokens++
			}
			safe = append(safe, starts && shortSafe(c))
			if head < 0 && tokens >= headMin && starts && shortSafe(c) {
				head = end - i - 1
			}
		}
		content := rest[i+1 : end]
		if head < 0 {
			out = append(append(out, '"'), content...)
		} else {
			tail := -1
			for j := len(content) - shortTailKeep - 1; j > head; j-- {
				if safe[j] {
					tail = j
					break
				}
			}
			if tail < 0 {
				return nil // (no place to keep its end from: shortLine gives up)
			}
			lit, _ := shortPlaceholder(k)
			k++
			out = append(append(append(append(out, '"'), content[:head+1]...), lit...), content[tail+1:]...)
		}
		if end < len(rest) {
			out = append(out, '"')
		}
		i = end + 1
	}
	return out
}

// A long string left in the line whose view depends on more than its
// head and end is not shortened, the line is read whole: a head of color
// sequences only (the view shows nothing of it), a tool's output that is
// JSON (Codex's wrapped output, a call's arguments, an image's base64 in
// it), an encoded value the view shows as a marker starting in the head
// or lying in the middle left out. Each was shortened: the view showed
// the placeholder, or not the text or count the whole read gives.
func TestShowOfStringsLeftInTheLineWholeWhereTheViewNeedsIt(t *testing.T) {
	b64 := strings.Repeat(`AAAA\/BBBB+cc`, 400000)
	words := strings.Repeat("hello world. ", 20000)
	env := `"sessionId":"S","cwd":"/home/u/proj","version":"2.1.38"`
	claude := func(content string) []string {
		return []string{fmt.Sprintf(`{"type":"user","uuid":"u0",%s,"timestamp":"2026-02-10T21:00:00.000Z",`, env) +
			`"message":{"role":"user","content":[{"tool_use_id":"t","type":"tool_result","content":"` + content + `"}]}}`}
	}
	wrapped := strings.Repeat("line of output \xff x\\\\n", 300000)
	codex := func(item string) []string {
		return codexStamped([]codexItem{codexMetaItem(codexPID, ""), {"turn_context", `{"cwd":"/home/dev/app","model":"gpt-5"}`}, {"response_item", item}}, 10, 0)
	}
	cases := []struct {
		name  string
		lines []string
		codex bool
	}{
		{"colors", claude(strings.Repeat(`\u001b[0m`, 600000) + strings.Repeat("hello world ", 1000) + "\xff"), false},
		{"json with base64", claude(`{\"data\":\"` + b64 + `\"}`), false},
		{"base64 from the head", claude(`log: {\"data\":\"` + b64 + `\"}`), false},
		{"base64 in the middle", claude(words + `{\"data\":\"` + b64 + `\"} ` + words + "\xff"), false},
		{"wrapped output", codex(`{"type":"function_call_output","call_id":"c1","output":"{\"output\":\"` + wrapped + `\",\"metadata\":{\"exit_code\":1}}"}`), true},
		{"arguments", codex(`{"type":"function_call","name":"shell","call_id":"c3","arguments":"{\"command\":[\"bash\",\"-lc\",\"` + wrapped + `\"]}"}`), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fsys := vfs.NewMem()
			r := testRook(t, fsys)
			format, path := FormatClaudeCode, "/p/-home-u-proj/S.jsonl"
			if tc.codex {
				format, path = FormatCodex, fmt.Sprintf("/c/2026/02/03/rollout-2026-02-03T10-00-00-%s.jsonl", codexPID)
			}
			writeSource(t, fsys, path, tc.lines, "")
			id := *fileByPath(t, mustImport(t, r, format, path), path).Session
			if err := r.Store.Sync(); err != nil {
				t.Fatal(err)
			}
			evs, err := r.Log.Read(id, 0, 100)
			if err != nil {
				t.Fatal(err)
			}
			big := 0
			for _, ev := range evs {
				if info, err := r.Store.Stat(ev.Body); err == nil && info.Size > shortenLinesOver {
					big++
				}
			}
			if big == 0 {
				t.Fatal("no line's object is big: the case tests nothing")
			}
			for _, raw := range []bool{false, true} {
				for _, mb := range []int{100, 4096} {
					sq := ShowQuery{From: 0, Limit: len(evs), MaxBody: mb, Raw: raw}
					readWhole = true
					want, werr := r.Show(id, sq)
					readWhole = false
					got, gerr := r.Show(id, sq)
					if fmt.Sprint(werr) != fmt.Sprint(gerr) || !reflect.DeepEqual(want, got) {
						for i := range want.Events {
							if w, g := want.Events[i], got.Events[i]; !reflect.DeepEqual(w, g) {
								t.Errorf("#%d raw %v max-body %d: streamed omitted %d size %d %.80q, whole %d %d %.80q",
									i, raw, mb, g.Omitted, g.Size, g.Text, w.Omitted, w.Size, w.Text)
							}
						}
					}
				}
			}
		})
	}
}

// jsonLike takes a literal for JSON by its first bytes as written, escapes
// decoded: a \u0000 is not JSON, a \u007b is.
func TestJSONLike(t *testing.T) {
	for _, c := range []struct {
		lit  string
		want bool
	}{{`plain`, false}, {` \n{`, true}, {`\"x`, true}, {`\\x`, false}, {`\u0000mix`, false}, {`\u007b`, true},
		{`\u0020\u005B`, true}, {`\u00`, true}, {`\u0100{`, false}, {`\t\r [`, true}, {``, false}} {
		if got := jsonLike([]byte(c.lit)); got != c.want {
			t.Errorf("jsonLike(%q) = %v", c.lit, got)
		}
	}
}

// A show that asks for as much of a line as it holds (the command the
// view prints to read the rest: --max-body past the line's size) reads the
// line whole, once: it streamed the object into what it kept first, found
// nothing to leave out, and read it whole again (119 MB allocated for a
// 5.6 MB line where the whole read takes 84 MB).
func TestShowOfABigLineAskedWholeReadsItOnce(t *testing.T) {
	env := `"sessionId":"S","cwd":"/home/u/proj","version":"2.1.38"`
	lines := []string{fmt.Sprintf(`{"type":"user","uuid":"u0",%s,"timestamp":"2026-02-10T21:00:00.000Z",`, env) +
		`"message":{"role":"user","content":[{"tool_use_id":"t","type":"tool_result","content":"` + strings.Repeat("hello world. \xff", 400000) + `"}]}}`}
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	path := "/p/-home-u-proj/S.jsonl"
	writeSource(t, fsys, path, lines, "")
	id := *fileByPath(t, mustImport(t, r, FormatClaudeCode, path), path).Session
	if err := r.Store.Sync(); err != nil {
		t.Fatal(err)
	}
	for _, mb := range []int{6000000, 1 << 30} {
		sq := ShowQuery{From: 0, Limit: 1, MaxBody: mb}
		var err error
		readWhole = true
		w := allocatedBy(func() { _, err = r.Show(id, sq) })
		readWhole = false
		n := allocatedBy(func() { _, err = r.Show(id, sq) })
		if err != nil || float64(n) > 1.1*float64(w) {
			t.Errorf("max-body %d: show allocates %.1f MB, %.1f MB read whole (%v)", mb, float64(n)/1e6, float64(w)/1e6, err)
		}
	}
}
