package index

import (
	"bytes"
	"encoding/binary"
	"errors"
	"github.com/rookhq/rook/internal/fuzzseed"
	"hash/crc32"
	"math/rand/v2"
	"reflect"
	"testing"
)

// Seed corpora live in testdata/fuzz/FuzzDecodeNode and FuzzDecodeMeta.
// Regenerate them with: ROOK_WRITE_FUZZ_SEEDS=1 go test -run TestWriteFuzzSeeds ./index/

func FuzzDecodeNode(f *testing.F) {
	for _, s := range nodeSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkNodeBytes(t, b)
		// The checksum stops almost every mutation; also try the input as
		// a body with a correct header, so the fuzzer explores the parser.
		checkNodeBytes(t, appendRaw(b))
		if len(b) > nodeHeaderLen {
			checkNodeBytes(t, appendRaw(b[nodeHeaderLen:]))
		}
	})
}

func checkNodeBytes(t *testing.T, b []byte) {
	{
		n, err := DecodeNode(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error does not wrap ErrCorrupt: %v", err)
			}
			if _, ierr := decodeNode(bytes.Clone(b)); ierr == nil {
				t.Fatal("DecodeNode failed but decodeNode succeeded")
			}
			return
		}
		enc := n.AppendEncode(nil)
		if !bytes.Equal(enc, b) {
			t.Fatalf("re-encoding differs:\n got %x\nwant %x", enc, b)
		}
		n2, err := DecodeNode(enc)
		if err != nil {
			t.Fatalf("re-encoded node does not decode: %v", err)
		}
		if !reflect.DeepEqual(n, n2) {
			t.Fatalf("decode(encode(n)) != n")
		}
		// The internal form agrees with the exported one.
		in, err := decodeNode(bytes.Clone(b))
		if err != nil || in.count() != len(n.Keys) || in.leaf != n.Leaf {
			t.Fatalf("internal decode disagrees: %v", err)
		}
		for i, k := range n.Keys {
			if in.key(i) != k {
				t.Fatal("key mismatch")
			}
			if n.Leaf && !bytes.Equal(in.value(i), n.Values[i]) {
				t.Fatal("value mismatch")
			}
			// Lookups find every key.
			if j := in.lowerBound(&k); j != i {
				t.Fatalf("lowerBound(key %d) = %d", i, j)
			}
			if j := in.childFor(&k); j != i {
				t.Fatalf("childFor(key %d) = %d", i, j)
			}
		}
	}
}

func FuzzDecodeMeta(f *testing.F) {
	for _, s := range metaSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkMetaBytes(t, b)
		// Also with the checksum fixed up, to get past it.
		if len(b) >= metaHeaderLen {
			fixed := bytes.Clone(b)
			n := metaHeaderLen + int(min(binary.LittleEndian.Uint32(fixed[64:]), MaxUserMeta))
			if n <= len(fixed) {
				binary.LittleEndian.PutUint32(fixed[metaCRCOff:], 0)
				binary.LittleEndian.PutUint32(fixed[metaCRCOff:], crc32.Checksum(fixed[:n], castagnoli))
			}
			checkMetaBytes(t, fixed)
		}
	})
}

func checkMetaBytes(t *testing.T, b []byte) {
	{
		m, err := DecodeMeta(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrNewerFormat) {
				t.Fatalf("error wraps neither ErrCorrupt nor ErrNewerFormat: %v", err)
			}
			return
		}
		enc := m.Encode()
		if !bytes.Equal(enc, b[:len(enc)]) {
			t.Fatalf("re-encoding differs:\n got %x\nwant %x", enc, b[:len(enc)])
		}
		m2, err := DecodeMeta(enc)
		if err != nil {
			t.Fatalf("re-encoded meta does not decode: %v", err)
		}
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("decode(encode(m)) = %+v, want %+v", m2, m)
		}
	}
}

func seedEntries(rng *rand.Rand, n, maxVal int) []entry {
	m := model{}
	for range n {
		m[randKey(rng)] = randVal(rng, maxVal)
	}
	var ents []entry
	for _, k := range m.sortedKeys() {
		ents = append(ents, entry{key: k, val: m[k]})
	}
	return ents
}

func nodeSeeds() [][]byte {
	rng := rand.New(rand.NewPCG(99, 99))
	var seeds [][]byte
	seeds = append(seeds, appendNode(nil, true, seedEntries(rng, 1, 0)))
	seeds = append(seeds, appendNode(nil, true, seedEntries(rng, 3, 12)))
	seeds = append(seeds, appendNode(nil, true, seedEntries(rng, 2, 300)))
	ents := seedEntries(rng, 4, 0)
	for i := range ents {
		ents[i].val = nil
		ents[i].ref = Ref{Off: dataStart + uint64(i)*4096, Len: uint32(100 + i*1000)}
	}
	seeds = append(seeds, appendNode(nil, false, ents))
	seeds = append(seeds, appendNode(nil, false, ents[:1]))
	// Near misses: bad crc, trailing byte.
	bad := bytes.Clone(seeds[1])
	bad[len(bad)-1] ^= 1
	seeds = append(seeds, bad, append(bytes.Clone(seeds[0]), 0))
	return seeds
}

func metaSeeds() [][]byte {
	return [][]byte{
		Meta{FileEnd: dataStart}.Encode(),
		Meta{TxID: 7, Root: Ref{Off: dataStart + 4096, Len: 3000}, Height: 2, Entries: 150, FileEnd: dataStart + 20000, LiveBytes: 9000, UserMeta: []byte("seg=42")}.Encode(),
		Meta{TxID: 1, Root: Ref{Off: dataStart, Len: 60}, Height: 1, Entries: 1, FileEnd: dataStart + 60, LiveBytes: 60}.Encode(),
		Meta{Version: 2, FileEnd: dataStart}.Encode(),
		make([]byte, metaHeaderLen),
	}
}

// TestWriteFuzzSeeds writes the seed corpora as files (go test fuzz v1).
func TestWriteFuzzSeeds(t *testing.T) {
	fuzzseed.Write(t, map[string][][]byte{"FuzzDecodeNode": nodeSeeds(), "FuzzDecodeMeta": metaSeeds()})
}

// TestNodeRoundTrip checks encode/decode of real nodes outside fuzzing.
func TestNodeRoundTrip(t *testing.T) {
	for i, s := range nodeSeeds()[:5] {
		n, err := DecodeNode(s)
		if err != nil {
			t.Fatalf("seed %d: %v", i, err)
		}
		if !bytes.Equal(n.AppendEncode(nil), s) {
			t.Fatalf("seed %d: round trip differs", i)
		}
	}
	for i, s := range nodeSeeds()[5:] {
		if _, err := DecodeNode(s); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("bad seed %d: %v", i, err)
		}
	}
	// Non-minimal varints are rejected (one encoding per node).
	n := Node{Leaf: true, Keys: []Key{{1}}, Values: [][]byte{{}}}
	b := n.AppendEncode(nil)
	// Replace the 1-byte value length 0x00 with 0x80 0x00 and fix up.
	body := append(bytes.Clone(b[8:8+2+1+KeySize]), 0x80, 0x00)
	forged := appendRaw(body)
	if _, err := DecodeNode(forged); err == nil {
		t.Fatal("non-minimal varint accepted")
	}
}

// appendRaw frames body as a node with a correct header.
func appendRaw(body []byte) []byte {
	b := make([]byte, 8, 8+len(body))
	b = append(b, body...)
	putHeader(b)
	return b
}

func putHeader(b []byte) {
	binary.LittleEndian.PutUint32(b[4:], uint32(len(b)-nodeHeaderLen))
	binary.LittleEndian.PutUint32(b, crc32.Checksum(b[4:], castagnoli))
}
