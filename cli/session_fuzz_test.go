package cli

import (
	"bufio"
	"bytes"
	"io"
	"testing"
)

// FuzzReadJSONLLine: rook session append --jsonl reads the input as its
// lines are, each one longer than the limit flagged long (and the lines
// after it still read), whatever the lines' lengths against the reader's
// buffer.
func FuzzReadJSONLLine(f *testing.F) {
	f.Add([]byte("{\"kind\":\"user\"}\n{\"kind\":\"note\"}\n"), uint8(20))
	f.Add([]byte("short\nthis one is far longer than the limit\nok\n"), uint8(8))
	f.Add([]byte("exactly16bytes!!\nexactly16bytes!!x\nlast without newline"), uint8(16))
	f.Add([]byte("\n\n\r\n"), uint8(0))
	f.Fuzz(func(t *testing.T, in []byte, limit uint8) {
		max := int(limit)
		want := bytes.Split(in, []byte("\n"))
		if len(want[len(want)-1]) == 0 {
			want = want[:len(want)-1]
		}
		br := bufio.NewReaderSize(bytes.NewReader(in), 16) // the smallest: lines span buffers
		for i := 0; ; i++ {
			raw, long, err := readJSONLLine(br, max)
			if err != nil && err != io.EOF {
				t.Fatal(err)
			}
			if err == io.EOF && len(raw) == 0 && !long {
				if i != len(want) {
					t.Fatalf("%d lines read, want %d", i, len(want))
				}
				return
			}
			if i >= len(want) {
				t.Fatalf("line %d read past the input's %d", i+1, len(want))
			}
			if long != (len(want[i]) > max) || (!long && !bytes.Equal(raw, want[i])) {
				t.Fatalf("line %d: %q long %v, want %q (limit %d)", i+1, raw, long, want[i], max)
			}
			if err == io.EOF {
				if i+1 != len(want) {
					t.Fatalf("input ended at line %d of %d", i+1, len(want))
				}
				return
			}
		}
	})
}
