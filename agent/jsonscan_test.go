package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/internal/fuzzseed"
)

// stringValuesOracle is the scan stringValues replaced: json.Valid first,
// then a walk that may assume valid JSON. FuzzStringValues holds the two
// together.
func stringValuesOracle(b []byte, minLen int) ([]jsonString, bool) {
	if !json.Valid(b) {
		return nil, false
	}
	var objects []bool
	var keys []string
	var out []jsonString
	expectKey, lastKey := false, ""
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case '{', '[':
			objects = append(objects, c == '{')
			keys = append(keys, lastKey)
			expectKey, lastKey = c == '{', ""
		case '}', ']':
			objects, keys = objects[:len(objects)-1], keys[:len(keys)-1]
			lastKey = ""
		case ',':
			expectKey, lastKey = len(objects) > 0 && objects[len(objects)-1], ""
		case '"':
			end := i + 1
			for ; b[end] != '"'; end++ {
				if b[end] == '\\' {
					end++
				}
			}
			end++
			if expectKey {
				if lit := b[i+1 : end-1]; bytes.IndexByte(lit, '\\') < 0 {
					lastKey = string(lit)
				} else {
					_ = json.Unmarshal(b[i:end], &lastKey)
				}
				expectKey = false
			} else if end-i >= minLen {
				out = append(out, jsonString{Start: i, End: end, Key: lastKey, Parents: append([]string(nil), keys...)})
			}
			i = end - 1
		}
	}
	return out, true
}

func jsonSeeds() [][]byte {
	out := lineSeeds()
	for _, s := range []string{
		``, ` `, `0`, `-0.5e+7`, `01`, `1.`, `-`, `1e`, `.5`, `tru`, `nul`, `"\u12"`, `"\x"`, "\"\x01\"", "\"\xff\xfe\"",
		`{}`, `[]`, `{ }`, `[ ]`, `{"a":}`, `{"a" 1}`, `{,}`, `[1,]`, `[1 2]`, `{"a":1,}`, `{"a":[{"b":"c"}],"d":{"e":"f"}}`,
		`{"k\"ey":"v","k\u0041":"w"}`, `{"TYPE":"user","Type":"assistant","\u017fessionId":"s"}`, "{\"\u212aey\":1, \"a\" : [1,{\"b\":2}] }", `[[[[]]]]`, `""0`, "{\"\":{\"\x94\":\"\"}}", `{"a":1}}`, `{"a":1} x`, "{\"a\":1}\r\n\t ", `"\/\b\f\n\r\t\\\""`,
	} {
		out = append(out, []byte(s))
	}
	return out
}

// FuzzStringValues: stringValues says a document is JSON exactly when
// json.Valid does, and finds the strings the oracle finds.
func FuzzStringValues(f *testing.F) {
	for _, s := range jsonSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, minLen := range []int{0, 4} {
			got, ok := stringValues(b, minLen)
			want, wantOK := stringValuesOracle(b, minLen)
			if ok != wantOK {
				t.Fatalf("%q: ok %v, json.Valid %v", b, ok, wantOK)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%q, min %d:\n got %+v\nwant %+v", b, minLen, got, want)
			}
		}
		// The members of a top-level object, put together again, are
		// the same object.
		var members []jsonMember
		strs, ok := scanJSON(b, 0, &members, nil)
		// Keys taken from a table, new or holding them already, change
		// no answer.
		names := keyNames{}
		for range 2 {
			var named []jsonMember
			nstrs, nok := scanJSON(b, 0, &named, names)
			if nok != ok || !reflect.DeepEqual(nstrs, strs) || !reflect.DeepEqual(named, members) {
				t.Fatalf("%q: with interned keys\n got %v %+v %+v\nwant %v %+v %+v", b, nok, nstrs, named, ok, strs, members)
			}
		}
		if !ok || len(members) == 0 {
			return
		}
		again := []byte{'{'}
		for i, m := range members {
			if b[m.Start] != '"' || (b[m.End] != ',' && b[m.End] != '}') {
				t.Fatalf("%q: member %d at [%d,%d)", b, i, m.Start, m.End)
			}
			if i > 0 {
				again = append(again, ',')
			}
			again = append(again, b[m.Start:m.End]...)
		}
		again = append(again, '}')
		// Numbers as written (UseNumber): a valid number may not fit a
		// float64, which is no fault of the document.
		decode := func(b []byte) (any, error) {
			d := json.NewDecoder(bytes.NewReader(b))
			d.UseNumber()
			var v any
			return v, d.Decode(&v)
		}
		x, xerr := decode(b)
		y, yerr := decode(again)
		if xerr != nil || yerr != nil || !reflect.DeepEqual(x, y) {
			t.Fatalf("%q: members put together give %q (%v, %v)", b, again, xerr, yerr)
		}
	})
}

// A line's keys are made into strings once for all the lines of a file
// (keyNames), not once per line: a scan of a line seen before allocates
// the same whatever its number of keys. The table stays bounded: a key
// too long, or one past its size, is still read, just not kept.
func TestScanKeysInterned(t *testing.T) {
	line := func(keys int) []byte {
		b := []byte(`{"type":"progress"`)
		for i := range keys {
			b = fmt.Appendf(b, `,"key_%d":{"inner_%d":%d}`, i, i, i)
		}
		return append(b, '}')
	}
	allocs := func(b []byte, names keyNames) float64 {
		members := make([]jsonMember, 0, 1024)
		scanJSON(b, 0, &members, names) // the first scan fills names
		return testing.AllocsPerRun(10, func() {
			members = members[:0]
			if _, ok := scanJSON(b, 0, &members, names); !ok {
				t.Fatal("not JSON")
			}
		})
	}
	few, many := allocs(line(2), keyNames{}), allocs(line(200), keyNames{})
	if many != few {
		t.Errorf("a line of 401 keys seen before: %v allocations, one of 5: %v", many, few)
	}
	if plain := allocs(line(200), nil); plain < 400 {
		t.Errorf("without a table, %v allocations for 401 keys", plain)
	}

	names := keyNames{}
	long := strings.Repeat("k", maxKeyName+1)
	for i := range maxKeyNames + 10 {
		scanJSON(fmt.Appendf(nil, `{"%s":1,"n%d":2}`, long, i), 0, nil, names)
	}
	if len(names) != maxKeyNames {
		t.Errorf("%d keys kept, at most %d", len(names), maxKeyNames)
	}
	if _, ok := names[long]; ok {
		t.Errorf("a key of %d bytes kept", len(long))
	}
}

// encoding/json refuses documents nested deeper than 10,000; so does
// stringValues.
func TestStringValuesDepth(t *testing.T) {
	for _, depth := range []int{maxJSONDepth, maxJSONDepth + 1} {
		for _, open := range []string{"[", `{"a":`} {
			close := map[string]string{"[": "]", `{"a":`: "}"}[open]
			b := []byte(strings.Repeat(open, depth) + strings.Repeat(close, depth))
			if _, ok := stringValues(b, 0); ok != json.Valid(b) {
				t.Errorf("depth %d of %s: ok %v, json.Valid %v", depth, open, ok, json.Valid(b))
			}
			b = []byte(strings.Repeat(open, depth-1) + "{}" + strings.Repeat(close, depth-1))
			if _, ok := stringValues(b, 0); ok != json.Valid(b) {
				t.Errorf("depth %d of %s with {} inside: ok %v, json.Valid %v", depth, open, ok, json.Valid(b))
			}
		}
	}
}

// checkView: lines map the same through their views, with every text the
// mapper lets a view shorten shortened, as they do whole, one after the
// other (a mapper keeps state from line to line); the mapper learns the
// same of its session. The input is split into lines, and each line is
// also mapped twice in a row.
func checkView(t *testing.T, newMapper func() lineMapper, input []byte) {
	t.Helper()
	whole, viewed := newMapper(), newMapper()
	for _, line := range bytes.Split(input, []byte("\n")) {
		var members []jsonMember
		strs, ok := scanJSON(line, 0, &members, nil)
		if !ok {
			continue
		}
		view := mapView(nil, line, strs, 0, members, viewed)
		for range 2 {
			if a, b := whole.mapLine(line), viewed.mapLine(view); !reflect.DeepEqual(a, b) {
				t.Fatalf("%q\nmaps to %+v\nits view %q\nto %+v", line, a, view, b)
			}
		}
	}
	if a, b := whole.session(), viewed.session(); a != b {
		t.Fatalf("%q\nsession %+v\nthrough its view %+v", input, a, b)
	}
}

// Codex compares a token_count's totals whole with the previous line's: a
// long string in them is never shortened, so two totals that differ only
// far into it still count as two.
func TestMapViewKeepsCodexTotals(t *testing.T) {
	line := func(end string) string {
		return `{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"output":"` + strings.Repeat("x", 2000) + end + `"},"last_token_usage":{"input_tokens":5,"output_tokens":7}}}}`
	}
	in := []byte(line("A") + "\n" + line("B"))
	checkView(t, newCodexMapper, in)
	m := newCodexMapper()
	for i, l := range bytes.Split(in, []byte("\n")) {
		if got, _ := readLine(m, l, MinCutString); got.TokensIn != 5 || got.TokensOut != 7 {
			t.Fatalf("line %d: tokens %d/%d, want 5/7", i+1, got.TokensIn, got.TokensOut)
		}
	}
}

// The view of a line keeps what titles are made of: a prompt with blank
// lines first, or a run of blanks where the view would end, titles the
// session the same.
func TestMapViewKeepsTitles(t *testing.T) {
	words := strings.Repeat("wörd ", viewRunes/2)
	for _, prompt := range []string{
		"\n\n  \t" + words + strings.Repeat("x", 2000),
		strings.Repeat("y", 90) + strings.Repeat(" ", 3000) + strings.Repeat("z", 500),
		"a" + strings.Repeat(" ", 3000) + words,
		strings.Repeat("é", viewRunes-1) + strings.Repeat(" ", 500) + strings.Repeat("é", 500),
	} {
		line := appendJSONString([]byte(`{"type":"user","message":{"role":"user","content":`), []byte(prompt))
		line = append(line, "}}"...)
		strs, _ := stringValues(line, 0)
		if view := mapView(nil, line, strs, 0, nil, newClaudeMapper("/p/s.jsonl")); len(view) >= len(line) {
			t.Fatalf("view of %d bytes not shorter than the line's %d", len(view), len(line))
		}
		checkView(t, func() lineMapper { return newClaudeMapper("/p/s.jsonl") }, line)
		cx := appendJSONString([]byte(`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":`), []byte(prompt))
		cx = append(cx, "}]}}"...)
		checkView(t, newCodexMapper, cx)
		ev := appendJSONString([]byte(`{"type":"event_msg","payload":{"type":"user_message","message":`), []byte(prompt))
		checkView(t, newCodexMapper, append(ev, "}}"...))
	}
}

// readLine cuts what cutLine cuts.
func TestReadLineCuts(t *testing.T) {
	for i, line := range lineSeeds() {
		m, cuts := readLine(newClaudeMapper("/p/s.jsonl"), trimNewline(line), 16)
		_, _, texts, _ := cutLine(line, 16, func(jsonString) cas.Kind { return cas.KindMessage })
		if m.Unparsed != "" {
			texts = nil
		}
		if len(cuts) != len(texts) {
			t.Fatalf("seed %d: %d cuts, cutLine %d", i, len(cuts), len(texts))
		}
		for k := range cuts {
			if !bytes.Equal(cuts[k].Text, texts[k]) {
				t.Fatalf("seed %d, cut %d differs", i, k)
			}
		}
	}
}

func TestWriteJSONScanFuzzSeeds(t *testing.T) {
	fuzzseed.Write(t, map[string][][]byte{"FuzzStringValues": jsonSeeds()})
}
