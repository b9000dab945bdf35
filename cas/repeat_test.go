package cas

import (
	"bytes"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/rookhq/rook/dict"
)

// repeated is n bytes made of one run of period random bytes, repeated.
func repeated(n, period int, seed uint64) []byte {
	return bytes.Repeat(noise(period, seed), n/period+1)[:n]
}

// noiseAtSamples is n bytes of zeros but where samplePays takes its
// windows, which are random: every sample is incompressible.
func noiseAtSamples(n int, seed uint64) []byte {
	b := make([]byte, n)
	count := min(sampleCount, max(4, n/(1<<20)))
	for i := range count {
		start := i * (n - sampleWindow) / (count - 1)
		copy(b[start:], noise(sampleWindow, seed+uint64(i)))
	}
	return b
}

// A big block whose samples are random but which repeats within the
// encoder's window (16 MiB made of one 512 KiB run of random bytes,
// repeated) is compressed whole: the repeat check after the samples finds
// what the samples cannot. Repeats further back than the window, which
// zstd cannot use, leave the block raw without compressing it whole.
func TestRepeatsFartherThanASampleAreCompressed(t *testing.T) {
	enc := newEncoder(zstd.SpeedBetterCompression, dict.Empty{})
	plain, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBetterCompression), zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(false), zstd.WithWindowSize(encoderWindow))
	const size = 16 << 20
	for _, c := range []struct {
		name     string
		raw      []byte
		maxStore int // stored bytes at most; 0: stored raw
	}{
		{"512 KiB repeated", repeated(size, 512<<10, 51), size / 16},
		{"one sample's size repeated", repeated(size, sampleWindow, 52), size / 16},
		{"960 KiB repeated", repeated(size, 960<<10, 53), size / 16},
		// zstd's faster levels reach part of such runs: half is stored.
		{"just under the window repeated", repeated(size, encoderWindow-4093, 60), size * 2 / 3},
		{"4 MiB of random, then 512 KiB repeated", append(noise(4<<20, 54), repeated(12<<20, 512<<10, 55)...), size / 3},
		{"random where the samples fall, zeros between", noiseAtSamples(size, 56), size / 4},
		{"2 MiB repeated: beyond the window", repeated(size, 2<<20, 58), 0},
		{"random", noise(size, 59), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := enc.compressed.Load()
			codec, _, rec, err := enc.encode(c.raw, dict.None, make([]byte, recHeaderSize))
			if err != nil {
				t.Fatal(err)
			}
			seen := enc.compressed.Load() - before
			stored := len(rec) - recHeaderSize
			t.Logf("%d bytes: codec %d, %d stored, %d given to zstd", len(c.raw), codec, stored, seen)
			if c.maxStore == 0 {
				if codec != CodecRaw {
					t.Fatalf("codec %d; want raw", codec)
				}
				if seen > size/8 {
					t.Errorf("zstd was given %d bytes of a block stored raw; want its samples only", seen)
				}
				return
			}
			if codec == CodecRaw || stored > c.maxStore {
				t.Fatalf("codec %d, %d bytes stored of %d; want compressed to at most %d", codec, stored, len(c.raw), c.maxStore)
			}
			// What is stored is the whole block's frame, as when its
			// samples pay.
			if want := plain.EncodeAll(c.raw, nil); !bytes.Equal(rec[recHeaderSize:], want) {
				t.Errorf("stored bytes differ from the whole block's frame")
			}
		})
	}
}

// The repeat check costs a block stored raw little next to what it reads:
// on random bytes (what reaches it most) about 1/60 of the block's length
// in steps (table inserts, lookups, bytes compared), and at most 1/30 on
// any bytes; zstd is given the samples only, as before the check.
func TestRepeatCheckWork(t *testing.T) {
	enc := newEncoder(zstd.SpeedBetterCompression, dict.Empty{})
	const size = 64 << 20
	random := noise(size, 61)
	before, zstdBefore := enc.repeatWork.Load(), enc.compressed.Load()
	codec, _, _, err := enc.encode(random, dict.None, make([]byte, recHeaderSize))
	if err != nil {
		t.Fatal(err)
	}
	work, given := enc.repeatWork.Load()-before, enc.compressed.Load()-zstdBefore
	t.Logf("%d random bytes: codec %d, repeat check %d steps (1/%d), zstd given %d", size, codec, work, size/max(work, 1), given)
	if codec != CodecRaw {
		t.Fatalf("random bytes stored with codec %d", codec)
	}
	if work == 0 || work > size/50 {
		t.Errorf("repeat check took %d steps on %d random bytes; want 1 to %d", work, size, size/50)
	}
	if given > sampleCount*sampleWindow {
		t.Errorf("zstd was given %d bytes; want the samples only (%d)", given, sampleCount*sampleWindow)
	}
	// Whatever the bytes, the check's steps stay bounded: runs repeated
	// everywhere, short repeats (48 bytes, too short to count)
	// everywhere, zeros.
	short, pick := noise(8<<20, 64), noise(8<<20>>6, 65)
	for i := 0; i < len(short); i += 64 {
		copy(short[i:], noise(48, uint64(pick[i>>6]%16)))
	}
	for _, raw := range [][]byte{repeated(8<<20, 512<<10, 62), short, make([]byte, 8<<20), noise(8<<20, 63)} {
		_, _, work := repeatScan(raw)
		if work > len(raw)/30 {
			t.Errorf("repeat check took %d steps on %d bytes; want at most %d", work, len(raw), len(raw)/30)
		}
	}
}

// The repeat check alone on 100 MB of random bytes, what a big object
// that does not compress pays for it.
func BenchmarkRepeatCheck(b *testing.B) {
	raw := noise(100_000_000, 66)
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		repeatScan(raw)
	}
}

// A match whose source is the block's first bytes is not extended back
// past them (it read raw[-1]). The repeat, 2 KiB, holds two fingerprinted
// positions: one may be lost to a collision in the table, not both.
func TestRepeatAtTheBlocksStart(t *testing.T) {
	for _, at := range []int{repeatEvery, repeatEvery + 5, 3*repeatEvery + 1000} {
		raw := noise(4*repeatEvery, uint64(at))
		copy(raw[at:], raw[:repeatProbe])
		matched, probed, _ := repeatScan(raw)
		if matched < repeatMin || matched > probed {
			t.Errorf("repeat of the first %d bytes at %d: %d bytes of %d found repeated", repeatProbe, at, matched, probed)
		}
	}
}

// repeatScan on any bytes: no panic, no more found repeated than probed,
// and no more steps than the bound repeatsPay's comment gives. The input
// edits a block of noise (or zeros) with copies from back to front, LZ
// style, so that repeats fall anywhere, the block's start included.
func FuzzRepeatScan(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte{1, 0, 2, 5, 0, 2, 0, 64})
	f.Add([]byte{0, 0, 4, 0, 0, 8, 0, 255, 0, 6, 3, 0, 0, 1, 16})
	base := noise(3*repeatEvery+2*repeatProbe+255, 67)
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) == 0 {
			return
		}
		raw := make([]byte, 3*repeatEvery+repeatProbe+int(ops[0]))
		if ops[0]&1 == 0 {
			copy(raw, base)
		}
		for ops = ops[1:]; len(ops) >= 7; ops = ops[7:] {
			dst := int(ops[0])<<16 | int(ops[1])<<8 | int(ops[2])
			back := int(ops[3])<<16 | int(ops[4])<<8 | int(ops[5]) + 1
			n := int(ops[6]) * 16
			dst %= len(raw)
			if back > dst {
				back = dst
			}
			for i := dst; i < min(dst+n, len(raw)) && back > 0; i++ {
				raw[i] = raw[i-back]
			}
		}
		matched, probed, work := repeatScan(raw)
		probes := probed / repeatProbe
		if matched < 0 || matched > probed || probes != (len(raw)-repeatProbe)/repeatEvery {
			t.Fatalf("%d bytes: %d found repeated of %d probed", len(raw), matched, probed)
		}
		if bound := len(raw)/repeatStride + 1 + probes*2*repeatProbe; work > bound {
			t.Fatalf("%d bytes: %d steps; want at most %d", len(raw), work, bound)
		}
	})
}
