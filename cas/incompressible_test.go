package cas

import (
	"bytes"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/rookhq/rook/dict"
)

// A big block that does not compress is stored raw without being
// compressed whole first: a sample of it is, and when the sample does not
// pay the rest is not tried (100 MB of random bytes spent 0.4 s of CPU in
// zstd, and a 100 MB record buffer, to be stored raw anyway). What does
// compress is compressed whole, to the same bytes as before.
func TestIncompressibleBlockIsSampled(t *testing.T) {
	enc := newEncoder(zstd.SpeedBetterCompression, dict.Empty{})
	plain, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBetterCompression), zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(false), zstd.WithWindowSize(encoderWindow))
	const size = 16 << 20
	for _, c := range []struct {
		name    string
		raw     []byte
		wantRaw bool
		maxSeen int // raw bytes zstd may be given
	}{
		{"random", noise(size, 41), true, size / 8},
		{"text", mixed(size, 42), false, size + size/8},
		{"random, then text", append(noise(size/2, 43), mixed(size/2, 44)...), false, size + size/8},
		{"text, then random", append(mixed(size/2, 45), noise(size/2, 46)...), false, size + size/8},
		{"just under the sampled size, random", noise(sampleMin-1, 47), true, sampleMin},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := enc.compressed.Load()
			codec, _, rec, err := enc.encode(c.raw, dict.None, make([]byte, recHeaderSize))
			if err != nil {
				t.Fatal(err)
			}
			seen := enc.compressed.Load() - before
			t.Logf("%d bytes: codec %d, %d stored, %d given to zstd", len(c.raw), codec, len(rec)-recHeaderSize, seen)
			if (codec == CodecRaw) != c.wantRaw {
				t.Fatalf("codec %d; want raw %v", codec, c.wantRaw)
			}
			if seen > int64(c.maxSeen) {
				t.Errorf("zstd was given %d bytes of a %d-byte block; want at most %d", seen, len(c.raw), c.maxSeen)
			}
			// The stored bytes are what they were before sampling: the
			// frame of the whole block, or the block itself.
			want := plain.EncodeAll(c.raw, nil)
			if len(want) >= len(c.raw) {
				want = c.raw
			}
			if !bytes.Equal(rec[recHeaderSize:], want) {
				t.Errorf("stored bytes differ from the whole block's frame (or the block raw)")
			}
		})
	}
}
