package agent

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/internal/fuzzseed"
	"github.com/rookhq/rook/internal/vfs"
)

// lineSeeds are source lines of every shape the importer meets: real
// Claude Code entries, escapes of every kind, a line that is not JSON, a
// truncated one.
func lineSeeds() [][]byte {
	var out [][]byte
	for _, l := range claudeLines("seed", 1) {
		out = append(out, []byte(l+"\n"))
	}
	long := strings.Repeat("ü \"q\" \\ \t\u0001 / <a>&\u2028 ", 40)
	out = append(out,
		append(appendJSONString([]byte(`{"type":"user","message":{"content":`), []byte(long)), "}}\n"...),
		[]byte(`{"k":"`+strings.Repeat(`\u00e9`, 100)+`"}`), // escaped non-ASCII: kept in the line
		[]byte(`{"k":"`+strings.Repeat(`\/`, 200)+`"}`),     // escaped slash: kept
		[]byte("not json at all\n"),
		[]byte(`{"TYPE":"user","Message":{"role":"user","content":"keys in another case"},"\u017fessionId":"s9","cwd":"/w","uuid":"u1","parentUuid":null}`+"\n"),
		[]byte("{\"type\":\"user\",\"\u017fessionId\":\"s8\",\"message\":{\"content\":\"a long s\"}}\n"),
		[]byte(`{"type":"user","message":{"ro`),
		[]byte("[\""+strings.Repeat("x", 300)+"\",{\"a\":[\""+strings.Repeat("y", 300)+"\"]}]\r\n"),
	)
	return out
}

// cutAndExpand stores a line as the importer does (in a map) and expands it.
func cutAndExpand(t *testing.T, line []byte, minCut int) []byte {
	objs := map[cas.Key][]byte{}
	rest, gaps, texts, _ := cutLine(line, minCut, func(jsonString) cas.Kind { return cas.KindMessage })
	sl := sourceLine{Offset: 7, Rest: rest}
	for i, text := range texts {
		id := cas.ID(text)
		objs[id] = text
		sl.Cuts = append(sl.Cuts, lineCut{Gap: gaps[i], ID: id})
	}
	dec, err := decodeSourceLine(sl.encode())
	if err != nil {
		t.Fatalf("decode what was encoded: %v", err)
	}
	out, err := dec.expand(func(id cas.Key) ([]byte, error) { return objs[id], nil })
	if err != nil {
		t.Fatal(err)
	}
	// Made at its size, escapes and all: one allocation, none to spare.
	if cap(out) != len(out) {
		t.Fatalf("the expanded line (%d bytes) was made in a buffer of %d", len(out), cap(out))
	}
	return out
}

func TestCutLineRoundTrips(t *testing.T) {
	for i, line := range lineSeeds() {
		for _, minCut := range []int{1, 16, MinCutString} {
			if got := cutAndExpand(t, line, minCut); !bytes.Equal(got, line) {
				t.Fatalf("seed %d, min %d:\n got %q\nwant %q", i, minCut, got, line)
			}
		}
	}
	// What is cut is the decoded text, so the same output written in two
	// places (or by two agents) is one object.
	_, _, texts, _ := cutLine(lineSeeds()[6], MinCutString, func(jsonString) cas.Kind { return cas.KindMessage })
	if len(texts) != 2 || !bytes.Equal(texts[0], texts[1]) {
		t.Fatalf("texts: %d", len(texts))
	}
}

// FuzzCutLine: for any bytes, cutting a line's strings out and expanding
// it again gives the line back, byte for byte.
func FuzzCutLine(f *testing.F) {
	for _, s := range lineSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if got := cutAndExpand(t, line, 4); !bytes.Equal(got, line) {
			t.Fatalf("\n got %q\nwant %q", got, line)
		}
	})
}

// FuzzDecodeSourceLine: any bytes decode or fail cleanly, and what decodes
// re-encodes to the same bytes.
func FuzzDecodeSourceLine(f *testing.F) {
	for _, s := range sourceLineSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		sl, err := decodeSourceLine(b)
		if err != nil {
			return
		}
		if !bytes.Equal(sl.encode(), b) {
			// Non-minimal varints decode too; the re-encoding must
			// decode the same.
			again, err := decodeSourceLine(sl.encode())
			// Every cut, gap and id, not only how many there are.
			if err != nil || again.Offset != sl.Offset || !slices.Equal(again.Cuts, sl.Cuts) || !bytes.Equal(again.Rest, sl.Rest) {
				t.Fatalf("re-encoding differs: %v", err)
			}
		}
		// Expanded, the line is its rest with each cut put back as the
		// string "x" (3 bytes quoted), in order.
		out, err := sl.expand(func(cas.Key) ([]byte, error) { return []byte("x"), nil })
		if err != nil {
			t.Fatal(err)
		}
		want, p := []byte{}, 0
		for _, c := range sl.Cuts {
			want = append(append(want, sl.Rest[p:p+c.Gap]...), `"x"`...)
			p += c.Gap
		}
		if want = append(want, sl.Rest[p:]...); !bytes.Equal(out, want) {
			t.Fatalf("expanded to %q, want %q", out, want)
		}
	})
}

func sourceLineSeeds() [][]byte {
	var out [][]byte
	for _, line := range lineSeeds() {
		rest, gaps, texts, _ := cutLine(line, 16, func(jsonString) cas.Kind { return cas.KindMessage })
		sl := sourceLine{Offset: 1234, Rest: rest}
		for i, text := range texts {
			sl.Cuts = append(sl.Cuts, lineCut{Gap: gaps[i], ID: cas.ID(text)})
		}
		out = append(out, sl.encode())
	}
	return out
}

// FuzzClaudeLine: the Claude Code mapping never panics, always gives a kind
// the event log takes, and maps a line's view as it maps the line.
func FuzzClaudeLine(f *testing.F) {
	for _, s := range claudeSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m := newClaudeMapper("/p/s1/subagents/agent-x.jsonl")
		for range 2 {
			if ml := m.mapLine(line); !ml.Kind.Valid() {
				t.Fatalf("kind %d", ml.Kind)
			}
		}
		_ = m.session()
		checkView(t, func() lineMapper { return newClaudeMapper("/p/s1/subagents/agent-x.jsonl") }, line)
	})
}

func TestWriteSourceLineFuzzSeeds(t *testing.T) {
	fuzzseed.Write(t, map[string][][]byte{
		"FuzzCutLine":          lineSeeds(),
		"FuzzDecodeSourceLine": sourceLineSeeds(),
		"FuzzClaudeLine":       claudeSeeds(),
	})
}

// claudeSeeds are lineSeeds and a whole transcript in one input, which
// checkView maps line by line.
func claudeSeeds() [][]byte {
	return append(lineSeeds(), []byte(strings.Join(claudeLines("seed", 3), "\n")))
}

// cutLine cuts a line as the importer does, with every string cut to kind.
func cutLine(line []byte, minLen int, kindOf func(jsonString) cas.Kind) (rest []byte, gaps []int, texts [][]byte, kinds []cas.Kind) {
	strs, ok := stringValues(trimNewline(line), minLen+2)
	if !ok {
		return line, nil, nil, nil
	}
	prev := 0
	for _, c := range lineCuts(line, strs, minLen, kindOf) {
		gaps = append(gaps, c.Start-prev)
		rest = append(rest, line[prev:c.Start]...)
		texts, kinds = append(texts, c.Text), append(kinds, c.Kind)
		prev = c.End
	}
	return append(rest, line[prev:]...), gaps, texts, kinds
}

// TestSpecialBytes checks the word test against the byte test: whether
// there is a special byte, and where the first is (jsonStringEnd jumps
// straight to it), for every byte value at every position among plain
// bytes, two special bytes in one word, and random words.
func TestSpecialBytes(t *testing.T) {
	special := func(c byte) bool { return c == '"' || c == '\\' || c < 0x20 }
	check := func(w [8]byte) {
		t.Helper()
		want := 8 // no special byte
		for i, c := range w {
			if special(c) {
				want = i
				break
			}
		}
		got := 8
		if m := specialBytes(binary.LittleEndian.Uint64(w[:])); m != 0 {
			got = bits.TrailingZeros64(m) / 8
		}
		if got != want {
			t.Fatalf("specialBytes(%q): first special byte at %d, want %d", w[:], got, want)
		}
	}
	for _, first := range []byte{0, 0x1f, '"', '\\'} { // a borrow from a special byte below
		for pos := range 7 {
			for c := range 256 {
				w := [8]byte{'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a'}
				w[pos], w[pos+1] = first, byte(c)
				check(w)
			}
		}
	}
	for _, fill := range []byte{'a', ' ', 0x7f, 0x80, 0xff, '!', '#', '[', ']'} {
		for pos := range 8 {
			for c := range 256 {
				var w [8]byte
				for i := range w {
					w[i] = fill
				}
				w[pos] = byte(c)
				check(w)
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1_000_000 {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], rng.Uint64())
		check(w)
	}
}

// A cut whose text was decoded (the literal had escapes) is handed to the
// store as it is (PutOwned, no second copy); one that is a slice of the
// line is not, since an import reads its next lines into the same buffer:
// the stored texts stay what they were when the buffer is overwritten.
func TestSourceLineCutsOwned(t *testing.T) {
	plain := strings.Repeat("plain text of a tool output ", 20)
	escaped := strings.Repeat("line\\tof a \\\"quoted\\\" output\\n", 20)
	line := []byte(`{"a":"` + plain + `","b":"` + escaped + `"}` + "\n")
	strs, ok := stringValues(trimNewline(line), 34)
	if !ok {
		t.Fatal("not a JSON line")
	}
	cuts := lineCuts(line, strs, 32, func(jsonString) cas.Kind { return cas.KindToolResult })
	if len(cuts) != 2 {
		t.Fatalf("%d cuts, want 2", len(cuts))
	}
	if cuts[0].Owned || &cuts[0].Text[0] != &line[cuts[0].Start+1] {
		t.Fatalf("plain string: owned %v, want a slice of the line, not owned", cuts[0].Owned)
	}
	if !cuts[1].Owned {
		t.Fatal("decoded string not owned: the store copies it again")
	}
	want := [][]byte{bytes.Clone(cuts[0].Text), bytes.Clone(cuts[1].Text)}

	r := testRook(t, vfs.NewMem())
	if _, err := r.putSourceLines([]pendingLine{{line: line, cuts: cuts}}); err != nil {
		t.Fatal(err)
	}
	for i := range line {
		line[i] = 'x' // the buffer, reused for the next lines
	}
	if err := r.Store.Sync(); err != nil {
		t.Fatal(err)
	}
	for i, c := range cuts {
		got, err := r.Store.Get(cas.ID(want[i]))
		if err != nil || !bytes.Equal(got, want[i]) {
			t.Fatalf("cut %d (owned %v): stored %.40q, %v; want %.40q", i, c.Owned, got, err, want[i])
		}
	}
}
