package dict

import (
	"bytes"
	"testing"
	"time"

	"github.com/rookhq/rook/internal/fuzzseed"
)

// Seed corpora live in testdata/fuzz/<Target>/ as well as in f.Add, so a
// plain `go test` replays them. Regenerate the files with:
// ROOK_WRITE_FUZZ_SEEDS=1 go test -run TestWriteFuzzSeeds ./dict/

func dictSeeds() [][]byte {
	created := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	return [][]byte{
		Encode(1, 9, created, []byte("\x37\xa4\x30\xec a dictionary's bytes")),
		Encode(4294967295, 0, time.Unix(0, 0), nil),
		[]byte(magic),
	}
}

func highestSeeds() [][]byte {
	return [][]byte{EncodeHighest(1), EncodeHighest(4294967295), []byte(highestMagic)}
}

// A dictionary file that decodes is exactly what Encode makes of what was
// decoded: no field is read that is not checked.
func FuzzDecodeDict(f *testing.F) {
	for _, s := range dictSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		in, content, err := Decode(b)
		if err != nil {
			return
		}
		if again := Encode(in.ID, in.Kind, in.Created, content); !bytes.Equal(again, b) {
			t.Fatalf("decoded %+v, which encodes to other bytes", in)
		}
	})
}

// The same of the record of the highest id given out.
func FuzzDecodeHighest(f *testing.F) {
	for _, s := range highestSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		id, err := DecodeHighest(b)
		if err != nil {
			return
		}
		if again := EncodeHighest(id); !bytes.Equal(again, b) {
			t.Fatalf("decoded id %d, which encodes to other bytes", id)
		}
	})
}

func TestWriteFuzzSeeds(t *testing.T) {
	fuzzseed.Write(t, map[string][][]byte{
		"FuzzDecodeDict":    dictSeeds(),
		"FuzzDecodeHighest": highestSeeds(),
	})
}
