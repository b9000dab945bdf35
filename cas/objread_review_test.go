package cas

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"testing"
)

// A raw record's stored size field damaged (its CRC then fails) made a
// whole read of a big object allocate what the field claimed, up to
// 2 GiB, before the CRC found the damage: readBlock bounds that by the
// file's size, ReadAll (which Get now uses for a big object) did not.
func TestWholeReadOfADamagedRawSizeAllocatesNoMoreThanTheObject(t *testing.T) {
	data := noise(9<<20, 7) // big enough for Get to read it through ReadAll
	s, id, info, seg := bigRecord(t, data)
	if info.Codec != CodecRaw {
		t.Fatalf("codec %d, want raw", info.Codec)
	}
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint32(b[info.Offset+16:], 1<<30) // the payload's size: 1 GiB
	if err := os.WriteFile(seg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	bound := uint64(2*len(data) + 1<<20)
	for _, c := range []struct {
		name string
		read func() error
	}{
		{"ReadAll", func() error {
			r, err := s.OpenObject(id)
			if err != nil {
				return err
			}
			_, err = r.ReadAll()
			return err
		}},
		{"Get", func() error { _, err := s.Get(id); return err }},
	} {
		var rerr error
		a := allocated(func() { rerr = c.read() })
		var ce *CorruptError
		if !errors.As(rerr, &ce) {
			t.Errorf("%s of a record whose size field is damaged: %v, want a CorruptError", c.name, rerr)
		}
		if a > bound {
			t.Errorf("%s of a %d MiB object whose record's size field says 1 GiB allocated %d MiB; want at most %d MiB", c.name, len(data)>>20, a>>20, bound>>20)
		}
	}
}

// A raw record whose stored size is shorter than the block its header
// says it holds, under a CRC that holds (a writer's bug): a range near
// the object's end was read from past the record, bytes no CRC covers,
// while a range is documented to be only what the record's CRC covers.
func TestReadRangeOfARawRecordStaysInsideIt(t *testing.T) {
	data := noise(2<<20, 8)
	s, id, info, seg := bigRecord(t, data)
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	rec := b[info.Offset:]
	size := binary.LittleEndian.Uint32(rec[16:])
	short := size - 4096
	binary.LittleEndian.PutUint32(rec[16:], short)
	c := crc32.Update(0, castagnoli, rec[:24])
	binary.LittleEndian.PutUint32(rec[24:], crc32.Update(c, castagnoli, rec[recHeaderSize:recHeaderSize+int(short)]))
	if err := os.WriteFile(seg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := s.OpenObject(id)
	if err != nil {
		t.Fatal(err)
	}
	n := int64(len(data))
	got, err := r.ReadRange(n-100, 100)
	var ce *CorruptError
	if !errors.As(err, &ce) {
		t.Fatalf("range past a raw record's stored size: %d bytes (the object's: %v), %v; want a CorruptError", len(got), bytes.Equal(got, data[n-100:]), err)
	}
}
