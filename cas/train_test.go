package cas

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"

	"github.com/rookhq/rook/dict"
)

// Training read every sampled object whole (Get of up to 512 objects,
// then measure's encodeBlock copies of the held-out half), though
// dict.Build learns only from each sample's first dict.MaxSample: 40 file
// objects of 6 MB made `rook store train --dry-run` reach 535 MB RSS, and
// with 512 samples `rook store maintain` (a cron job) about 3 GB. It reads
// each sample's head alone (an object alone in its record decoded no
// further, with decoders and buffers made once for the pass), and
// measures on the heads: memory is bounded by the heads, not the objects.
func TestTrainMemoryBoundedBySampleHeads(t *testing.T) {
	s, _ := newStore(t, nil, Options{})
	defer s.Close()
	const n, size = 40, 2 << 20 // 80 MiB logical, compresses to almost nothing
	for i := 0; i < n; i++ {
		b := bytes.Repeat([]byte(fmt.Sprintf("line %d of a big generated file with some text\n", i)), size/48)
		mustPut(t, s, KindFile, b)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res, err := s.Train(TrainOptions{Kinds: []Kind{KindFile}, DryRun: true})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	// What training learns from: n heads of dict.MaxSample. Allow 8x that
	// for the builder, measuring and slack: ~40 MiB, half the objects'
	// logical size.
	limit := uint64(8 * n * dict.MaxSample)
	t.Logf("trained %+v; allocated %d MiB (limit %d MiB, objects %d MiB)", res, alloc>>20, limit>>20, (n*size)>>20)
	if alloc > limit {
		t.Fatalf("Train allocated %d MiB for %d objects of %d MiB each: it reads every sampled object whole, though the dictionary learns only from each one's first %d KiB; memory grows with the objects' size, not bounded", alloc>>20, n, size>>20, dict.MaxSample>>10)
	}
	if len(res) != 1 || res[0].Samples != n || res[0].DictBytes == 0 || !res[0].WouldKeep {
		t.Fatalf("trained %+v: want a dictionary from the %d objects' heads, worth keeping", res, n)
	}
}
