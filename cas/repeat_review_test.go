package cas

import (
	"encoding/binary"
	"testing"
)

// repeatSlot is the table slot repeatScan files an 8-byte fingerprint in.
func repeatSlot(fp uint64) uint64 { return (fp * 0x9e3779b97f4a7c15) >> (64 - repeatBits) }

// A run repeated from far back has two fingerprinted positions in the
// source of any probe, so that one lost to a collision in the table does
// not lose the probe (codec.go). The probe looked its positions up only
// while 8 bytes fitted in it, so for 7 alignments in 1024 (the source's
// start 1 to 7 bytes past a fingerprinted position) it reached one only:
// that one overwritten by a colliding fingerprint, the run went unseen.
func TestRepeatProbeSeesTwoFingerprintsAtAnyAlignment(t *testing.T) {
	for r := 0; r < 16; r++ {
		raw := noise(4*repeatEvery, uint64(100+r))
		p := 2 * repeatEvery
		src := 5*repeatStride + r
		copy(raw[p:p+2*repeatProbe], raw[src:src+2*repeatProbe]) // a run longer than the probe
		// The source's first fingerprinted position, overwritten in the
		// table by a colliding fingerprint inserted after it.
		first := (src + repeatStride - 1) / repeatStride * repeatStride
		want := repeatSlot(binary.LittleEndian.Uint64(raw[first:]))
		at := 10 * repeatStride
		if at <= src+2*repeatProbe || at >= p {
			t.Fatal("the colliding fingerprint's place overlaps the source or the probe")
		}
		probe := noise(8, uint64(r))
		for seed := uint64(0); repeatSlot(binary.LittleEndian.Uint64(probe)) != want; seed++ {
			probe = noise(8, 1<<32+seed)
		}
		copy(raw[at:], probe)
		matched, probed, _ := repeatScan(raw)
		if matched < repeatProbe/2 || matched > probed {
			t.Errorf("source %d bytes past a fingerprinted position, its first fingerprint lost to a collision: %d bytes of %d found repeated; want the probe's %d", r, matched, probed, repeatProbe)
		}
	}
}
