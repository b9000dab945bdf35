package cas

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/rookhq/rook/dict"
)

// mixed is n bytes of runs of noise and of text repeated from far back
// (further than the encoder's window, and nearer): compressible, but not
// all of it, and with matches a bigger window would take.
func mixed(n int, seed uint64) []byte {
	out := make([]byte, 0, n)
	first := noise(64<<10, seed)
	text := bytes.Repeat([]byte(fmt.Sprintf("line %d of a tool output, repeated often enough\n", seed)), 1<<10)
	for i := 0; len(out) < n; i++ {
		switch i % 4 {
		case 0:
			out = append(out, noise(96<<10, seed+uint64(i))...)
		case 1:
			out = append(out, text...)
		case 2:
			out = append(out, first...) // what the object began with, far back
		case 3:
			if len(out) > 3<<20 {
				out = append(out, out[len(out)-(3<<20):len(out)-(3<<20)+(80<<10)]...) // 3 MiB back
			} else {
				out = append(out, out[:80<<10]...)
			}
		}
	}
	return out[:n]
}

// The encoder's window is 1 MiB; blocks (up to about 2 MiB in bulk) and
// objects alone (up to MaxObjectSize) are bigger: each round-trips, at
// every level, with and without a dictionary (trained and raw), through
// the decoder the store reads with.
func TestCodecRoundTripsPastTheWindow(t *testing.T) {
	sizes := []int{encoderWindow - 1, encoderWindow, encoderWindow + 1, 2<<20 + 12345, 9<<20 + 7}
	var samples [][]byte
	for i := range 200 {
		samples = append(samples, []byte(fmt.Sprintf(`{"type":"tool_result","content":"line %d of a tool output, repeated often enough","id":"toolu_%05d"}`, i%7, i)))
	}
	trained, err := dict.Build(samples, 4<<10, 77)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []struct {
		name    string
		id      uint32
		content []byte
	}{
		{"no dictionary", dict.None, nil},
		{"trained dictionary", 77, trained},
		{"raw dictionary", 78, mixed(64<<10, 3)},
	} {
		set := dict.Set(dict.Empty{})
		if d.id != dict.None {
			set = trialSet{id: d.id, content: d.content}
		}
		for _, level := range []zstd.EncoderLevel{zstd.SpeedFastest, zstd.SpeedDefault, zstd.SpeedBetterCompression, zstd.SpeedBestCompression} {
			enc, dec := newEncoder(level, set), newDecoder(set)
			for _, n := range sizes {
				raw := mixed(n, uint64(n))
				codec, id, out, err := enc.encode(raw, d.id, nil)
				if err != nil {
					t.Fatal(err)
				}
				if codec == CodecRaw || len(out)*2 > len(raw) {
					t.Fatalf("%s, %v, %d bytes: codec %d, %d bytes stored: not compressed", d.name, level, n, codec, len(out))
				}
				got, err := dec.decode(recordHeader{Codec: codec, Dict: id, Raw: uint32(n)}, out)
				if err != nil || !bytes.Equal(got, raw) {
					t.Fatalf("%s, %v, %d bytes: decoded %d bytes, %v", d.name, level, n, len(got), err)
				}
				// A plain zstd decoder (another tool reading the frame)
				// takes it too, within the window it says.
				var fh zstd.Header
				if err := fh.Decode(out); err != nil || (!fh.SingleSegment && fh.WindowSize > encoderWindow) {
					t.Fatalf("%s, %v, %d bytes: frame header %+v %v", d.name, level, n, fh, err)
				}
			}
		}
	}
}

// Objects of several MiB, alone and packed in bulk blocks, read back from
// the store, before and after it is reopened.
func TestStoreRoundTripsMultiMiBObjects(t *testing.T) {
	s, _ := newStore(t, nil, Options{})
	var inputs [][]byte
	for i, n := range []int{3<<20 + 1, 9 << 20} {
		inputs = append(inputs, mixed(n, uint64(10+i)), append(noise(n/2, uint64(20+i)), bytes.Repeat([]byte("x"), n/2)...))
	}
	var ids []Key
	put := func() {
		for _, in := range inputs {
			ids = append(ids, mustPut(t, s, KindToolResult, in))
		}
	}
	put()
	if err := s.SetBulk(true); err != nil {
		t.Fatal(err)
	}
	// Objects just under BulkPackMax, packed: blocks grow to about 2 MiB.
	for i := range 6 {
		inputs = append(inputs, mixed(1<<20-1-i*1000, uint64(30+i)))
	}
	ids = nil
	put()
	if err := s.SetBulk(false); err != nil {
		t.Fatal(err)
	}
	check := func(s *Store) {
		for i, in := range inputs {
			got, err := s.Get(ids[i])
			if err != nil || !bytes.Equal(got, in) {
				t.Fatalf("object %d (%d bytes): %d bytes back, %v", i, len(in), len(got), err)
			}
		}
	}
	check(s)
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	check(s)
	st, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, in := range inputs {
		total += int64(len(in))
	}
	if st.Stored*10 > total*9 {
		t.Errorf("%d bytes stored of %d: not compressed", st.Stored, total)
	}
	check(reopen(t, s, false))
}
