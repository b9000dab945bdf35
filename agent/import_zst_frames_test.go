package agent

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/rookhq/rook/internal/vfs"
)

// A .zst whose frame decompresses to changed bytes (a flipped literal,
// which only the frame's checksum, at its end, catches) gives none of
// that frame's lines: the session holds the lines of the frames before it,
// as they were written, and says where it stopped. Its lines came out of
// the decoder before the checksum was read, and were taken in changed.
// The whole file, imported later, adds the rest. Read whole and in chunks.
func TestImportOfAZstTakesNoLineOfAFrameThatFailsItsChecksum(t *testing.T) {
	for _, chunk := range []int{0, 1 << 12} {
		t.Run(fmt.Sprintf("chunk %d", chunk), func(t *testing.T) {
			fsys := vfs.NewMem()
			r := testRook(t, fsys)
			plain, enc := codexMainAndEncoder(t)
			rnd := rand.New(rand.NewPCG(1, 2))
			for i := range 20 {
				text := make([]byte, 600)
				for j := range text {
					text[j] = "abcdefghijklmnopqrstuvwxyz"[rnd.IntN(26)]
				}
				plain = fmt.Appendf(plain, `{"timestamp":"2026-01-02T04:00:00Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"%d %s"}]}}`+"\n", i, text)
			}
			// A frame each five lines; the frame of line bad has a byte of
			// its literals flipped, late in it (bad is then its first line).
			lines := bytes.SplitAfter(plain, []byte{'\n'})
			lines = lines[:len(lines)-1]
			bad := len(lines) - 5
			// Each frame written as a stream (as zstd(1) and Codex write
			// them), whose blocks come out of the decoder as they are
			// decoded: one EncodeAll makes is decoded whole, and checked,
			// before any of it comes out.
			_ = enc
			var z []byte
			var badAt, badEnd int
			for i := 0; i < len(lines); i += 5 {
				var fr bytes.Buffer
				w, err := zstd.NewWriter(&fr, zstd.WithEncoderConcurrency(1))
				if err != nil {
					t.Fatal(err)
				}
				w.Write(bytes.Join(lines[i:min(i+5, len(lines))], nil))
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				if i <= bad && bad < i+5 {
					badAt, badEnd = len(z), len(z)+fr.Len()
					bad = i
				}
				z = append(z, fr.Bytes()...)
			}
			// The first byte of the frame, from its middle on, whose flip
			// the decoder meets only at the checksum.
			var damaged []byte
			for at := (badAt + badEnd) / 2; at < badEnd && damaged == nil; at++ {
				d := bytes.Clone(z)
				d[at] ^= 0x01
				if _, err := zstdDecodeAll(d); err != nil && strings.Contains(err.Error(), "CRC") {
					damaged = d
				}
			}
			if damaged == nil {
				t.Fatal("no byte of the frame is one only its checksum catches")
			}
			src := "/c/rollout-2026-01-02T03-04-05-" + codexMainID + ".jsonl.zst"
			writeSourceFile(t, fsys, src, damaged)
			rep, err := r.Import(ImportOptions{Format: FormatCodex, Paths: []string{src}, ChunkBytes: chunk})
			if err != nil {
				t.Fatal(err)
			}
			f := fileByPath(t, rep, src)
			if f.Status != ImportFailed || f.Session == nil || !strings.Contains(f.Note, "CRC") {
				t.Fatalf("the damaged file: %+v", f)
			}
			var buf bytes.Buffer
			x, err := r.ExportSource(*f.Session, &buf)
			if err != nil {
				t.Fatal(err)
			}
			before := len(bytes.Join(lines[:bad], nil))
			if !bytes.HasPrefix(plain, buf.Bytes()) || buf.Len() > before || x.Lines != f.Lines || f.Lines == 0 {
				t.Fatalf("the session holds %d line(s), %d bytes (the report: %d line(s)): not the file's lines before the frame that fails (%d bytes)",
					x.Lines, buf.Len(), f.Lines, before)
			}
			writeSourceFile(t, fsys, src, z)
			rep, err = r.Import(ImportOptions{Format: FormatCodex, Paths: []string{src}, ChunkBytes: chunk})
			if err != nil {
				t.Fatal(err)
			}
			if g := fileByPath(t, rep, src); g.Status != ImportGrown {
				t.Fatalf("imported whole: %+v", g)
			}
			mustExport(t, r, *f.Session, plain)
		})
	}
}

func zstdDecodeAll(z []byte) ([]byte, error) {
	dec, err := zstd.NewReader(nil)
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	return dec.DecodeAll(z, nil)
}

// verifiedFrames counts the bytes of the frames that decompress whole, a
// skippable frame among them being none, and stops at the first that
// does not; of a last frame cut short by the file's end, what its whole
// blocks decompressed to counts too (as written, so far as any check
// can tell).
// The long lines of the bytes counted are measured on the way, one
// running across frames too; none of a frame that fails.
func TestVerifiedFrames(t *testing.T) {
	frame := func(b []byte) []byte {
		var fr bytes.Buffer
		w, err := zstd.NewWriter(&fr, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(1<<16))
		if err != nil {
			t.Fatal(err)
		}
		w.Write(b)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return fr.Bytes()
	}
	// b takes several blocks.
	a, b := bytes.Repeat([]byte("a line of text\n"), 100), bytes.Repeat([]byte("x"), 300<<10)
	skippable := []byte{0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 'z', 'z', 'z'}
	dec, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	fb := frame(b)
	for _, tc := range []struct {
		name string
		file []byte
		good int64
		err  string // "" for none
		// the lines of 1,000 bytes or more (of good >= 0)
		long []lineSpan
	}{
		{"empty", nil, 0, "", nil},
		{"two frames", append(frame(a), frame(a)...), int64(2 * len(a)), "", nil},
		{"a skippable frame between", append(append(frame(a), skippable...), frame(a)...), int64(2 * len(a)), "", nil},
		{"garbage after", append(frame(a), "not zstd"...), int64(len(a)), "magic", nil},
		{"the second cut short", append(frame(a), fb[:len(fb)-5]...), -1, "unexpected EOF", nil},
		{"the second's checksum wrong", append(frame(a), append(fb[:len(fb)-1:len(fb)-1], fb[len(fb)-1]^1)...), int64(len(a)), "CRC", nil},
		{"a line across frames", append(append(frame(a), fb...), frame([]byte("y\nz"))...), int64(len(a) + len(b) + 3), "", []lineSpan{{int64(len(a)), int64(len(b) + 2)}}},
		{"a long last line", append(frame(a), fb...), int64(len(a) + len(b)), "", []lineSpan{{int64(len(a)), int64(len(b))}}},
	} {
		lines := lineMeter{min: 1000}
		good, err := verifiedFrames(bytes.NewReader(tc.file), int64(len(tc.file)), dec, &lines)
		switch {
		case tc.good >= 0 && !slices.Equal(lines.spans(), tc.long):
			t.Errorf("%s: long lines %v, want %v", tc.name, lines.spans(), tc.long)
		case tc.err == "" && err != nil, tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
		case tc.good >= 0 && good != tc.good:
			t.Errorf("%s: %d bytes good, want %d", tc.name, good, tc.good)
		case tc.good < 0 && (good <= int64(len(a)) || good >= int64(len(a)+len(b))):
			// Cut short: the first frame, and the whole blocks of the second.
			t.Errorf("%s: %d bytes good, want more than %d, fewer than %d", tc.name, good, len(a), len(a)+len(b))
		}
	}
}

// FuzzVerifiedFrames: any file, its frame and block headers made up,
// gives a count and an error, never a panic or a count past what the
// frames decompress to; a file it finds whole decompresses whole, to as
// many bytes.
func FuzzVerifiedFrames(f *testing.F) {
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		f.Fatal(err)
	}
	whole := enc.EncodeAll([]byte("a line\nanother line\n"), nil)
	f.Add(whole)
	f.Add(append(bytes.Clone(whole), whole...))
	f.Add(append([]byte{0x50, 0x2a, 0x4d, 0x18, 1, 0, 0, 0, 'z'}, whole...))
	f.Add(whole[:len(whole)-3])
	f.Add([]byte("not zstd"))
	// 65 RLE blocks of 128 KiB, in a frame that gives no size: 8.5 MB
	f.Add([]byte("(\xb5/\xfd\x008" + strings.Repeat("\x02\x00\x10a", 64) + "\x03\x00\x10a"))
	dec, err := zstd.NewReader(nil, zstd.WithDecoderMaxWindow(1<<20), zstd.WithDecoderMaxMemory(8<<20))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, file []byte) {
		lines := lineMeter{min: 4}
		good, err := verifiedFrames(bytes.NewReader(file), int64(len(file)), dec, &lines)
		if good < 0 {
			t.Fatalf("%d bytes good", good)
		}
		if err != nil {
			return
		}
		out, derr := dec.DecodeAll(file, nil)
		if errors.Is(derr, zstd.ErrDecoderSizeExceeded) {
			// More than DecodeAll's 8 MiB from a few hundred bytes (RLE
			// blocks): verifiedFrames streams it, under no such cap.
			return
		}
		if derr != nil || int64(len(out)) != good {
			t.Fatalf("found whole, %d bytes; decoded whole: %d bytes, %v", good, len(out), derr)
		}
		var long []lineSpan
		at := int64(0)
		for line := range bytes.SplitAfterSeq(out, []byte("\n")) {
			if len(line) >= 4 {
				long = append(long, lineSpan{at, int64(len(line))})
			}
			at += int64(len(line))
		}
		if !slices.Equal(lines.spans(), long) {
			t.Fatalf("long lines %v, want %v", lines.spans(), long)
		}
	})
}
