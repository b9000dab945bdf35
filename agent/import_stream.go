package agent

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"math"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// Big files are taken in a chunk of whole lines at a time, so that what an
// import holds in memory is bounded by the chunk and not by the file: Claude
// Code transcripts of several GB and Codex rollouts of tens of GB are
// reported (../shared/reference/peers.md), and a file read whole is held
// about three times over while it is mapped and stored. A file of at most
// importChunkBytes is read whole, mapped ahead of the store
// (import_ahead.go), and is one chunk; a bigger one is read in chunks of
// streamChunkBytes, each mapped while the one before it is stored
// (mapChunks). The events are the same either way: a run of notes, or
// lines before the file's first time or first entry, wait for the next
// chunk.
const importChunkBytes = 64 << 20

// streamChunkBytes is the chunk a file over importChunkBytes is read in:
// one is mapped while the one before it is stored, both in memory. On a
// 416 MB transcript, chunks of 64, 16, 8, 4, 2 and 1 MiB took ~4.4, 3.0,
// 2.8, 2.6, 2.5 and 2.6 s, and 670, 350, 270, 215, 190 and 170 MB at the
// peak (docs/performance.md). (A file up to importChunkBytes is read whole
// because an import of it waits for the file backups its last lines name,
// heldForBackups, which a file read in chunks does not.)
const streamChunkBytes = 2 << 20

// holdBytes bounds the lines a file taken in chunks holds back while it
// has shown no entry, no time or no working directory (a variable for
// tests).
var holdBytes int64 = importChunkBytes

// zstMaxRatio is what a .zst file is taken to grow to, at most, when it
// comes to memory: compressed transcripts (repeated outputs and images)
// grow far more than zstRatio's typical 8 times.
const zstMaxRatio = 64

// streamed says whether a file is taken in chunk by chunk: a .jsonl over a
// chunk, or a .zst that might grow past one.
func streamed(f sourceFile, chunk int) bool {
	if strings.HasSuffix(f.path, ".zst") {
		return f.size*zstMaxRatio > int64(chunk)
	}
	return f.size > int64(chunk)
}

// openSource opens a source file for reading, decompressing .zst. Of a
// .zst, it reads only the bytes of the frames that decompress whole
// (their checksums holding, for a frame that has one), and then the error
// of the first that does not (verifiedFrames): a frame's bytes come out
// before its checksum is read at its end, and a byte flipped in its
// literals decompresses to changed lines that only the checksum catches.
// (A frame written without a checksum, `zstd --no-check`, has nothing to
// catch that with: it is taken as it decompresses.)
func (r *Rook) openSource(path string) (io.ReadCloser, bool, error) {
	return r.openSourceChecked(path, true)
}

// openSourceChecked is openSource; with verify false, a .zst's bytes are
// read as they decompress, whether their frame checks out or not (a look
// at a file's head, which tells its format and session, not its lines).
func (r *Rook) openSourceChecked(path string, verify bool) (io.ReadCloser, bool, error) {
	rc, zst, err := r.openSourceFile(path, verify)
	if n, ok := r.readTo[path]; ok && err == nil {
		return &stoppedSource{ReadCloser: rc, left: n}, zst, nil
	}
	return rc, zst, err
}

// stoppedSource is a source file read no further than where an import of
// the store Reread repairs stopped reading it (Rook.readTo).
type stoppedSource struct {
	io.ReadCloser
	left int64
}

func (s *stoppedSource) Read(p []byte) (int, error) {
	if s.left <= 0 {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), s.left)]
	n, err := s.ReadCloser.Read(p)
	s.left -= int64(n)
	return n, err
}

// openSourceFile is openSourceChecked of the whole file.
func (r *Rook) openSourceFile(path string, verify bool) (io.ReadCloser, bool, error) {
	f, err := r.fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, false, err
	}
	if !strings.HasSuffix(path, ".zst") {
		return f, false, nil
	}
	// The window stays at most maxZstdWindow: the decoder allocates the
	// whole window a frame declares at its first block, whatever the file
	// holds, so a 162-byte file declaring 2 GiB (`zstd --long=31`) had rook
	// ask for 2 GiB at once (out of memory under a ulimit). A larger
	// window is refused saying how to import the file (zstdFile.error),
	// as zstd itself refuses one over 128 MiB without --long.
	dec, err := zstd.NewReader(nil, zstd.WithDecoderMaxMemory(4<<30), zstd.WithDecoderMaxWindow(maxZstdWindow))
	if err != nil {
		f.Close()
		return nil, true, err
	}
	z := zstdFile{dec: dec, f: f, read: new(int64), good: -1, length: -1}
	if verify {
		fi, err := f.Stat()
		if err != nil {
			z.Close()
			return nil, true, err
		}
		lines := lineMeter{min: zstLongLine}
		z.good, z.bad = verifiedFrames(f, fi.Size(), dec, &lines)
		z.length, z.size = z.good, fi.Size()
		if z.bad == nil {
			z.good = -1
		}
		z.long = lines.spans()
	}
	if err := dec.Reset(f); err != nil {
		z.Close()
		return nil, true, err
	}
	return z, true, nil
}

// verifiedFrames decompresses a .zst a frame at a time, counting its
// bytes, up to the first frame that does not decompress whole: it returns
// the decompressed length of the frames before that one and its error
// (nil when every frame does); of a last frame cut short by the file's
// end, its bytes up to the cut count too. A frame's extent is read off
// its block headers; one whose headers are damaged fails to decompress
// as its extent says, and counts as that first frame.
// Each byte counted goes through lines, to know where its long lines are.
func verifiedFrames(f io.ReaderAt, size int64, dec *zstd.Decoder, lines *lineMeter) (good int64, err error) {
	var head [zstd.HeaderMaxSize]byte
	var frame, out []byte // a small frame, and what it decompresses to
	for off := int64(0); off < size; {
		n, _ := f.ReadAt(head[:], off)
		var h zstd.Header
		if err := h.Decode(head[:n]); err != nil {
			return good, err
		}
		if h.Skippable {
			if off += int64(h.HeaderSize) + int64(h.SkippableSize); off > size {
				return good, io.ErrUnexpectedEOF // as the decoder says it
			}
			continue
		}
		end := off + int64(h.HeaderSize)
		for {
			var bh [3]byte
			if _, err := f.ReadAt(bh[:], end); err != nil {
				end = size // cut short: the decoder says so
				break
			}
			v := uint32(bh[0]) | uint32(bh[1])<<8 | uint32(bh[2])<<16
			last, typ, n := v&1 == 1, (v>>1)&3, int64(v>>3)
			if typ == 1 { // RLE: one byte, repeated n times
				n = 1
			}
			end += 3 + n
			if last || end >= size {
				break
			}
		}
		if h.HasCheckSum {
			end += 4
		}
		end = min(end, size)
		if h.HasFCS && h.FrameContentSize <= smallFrame && end-off <= smallFrame {
			// A small frame (a file of many: a line a frame) decoded at
			// once, without restarting the stream decoder for it (a
			// third of the time again, on 20,000 one-line frames); if
			// it fails, the stream decoder says how, below.
			frame = slices.Grow(frame[:0], int(end-off))[:end-off]
			if _, err := f.ReadAt(frame, off); err == nil {
				if out, err = dec.DecodeAll(frame, out[:0]); err == nil {
					lines.Write(out)
					good += int64(len(out))
					off = end
					continue
				}
			}
		}
		if err := dec.Reset(io.NewSectionReader(f, off, end-off)); err != nil {
			return good, err
		}
		before := *lines // a frame that fails counts for no line
		n64, err := io.Copy(lines, dec)
		if errors.Is(err, io.ErrUnexpectedEOF) && end == size {
			// Cut short at the file's end (not all written yet, a copy
			// stopped): what its whole blocks decompressed to is as
			// written, which the frame's checksum, never reached, cannot
			// say otherwise of.
			return good + n64, err
		}
		if err != nil {
			*lines = before
			return good, err
		}
		good += n64
		off = end
	}
	return good, nil
}

// lineMeter is an io.Writer that keeps where each line of min bytes or
// more (its newline counted) starts and how long it is, in order. (A
// slice, not a map: a copy of the meter is the meter as it was.)
type lineMeter struct {
	min  int64
	at   int64 // where the line being written starts
	run  int64 // its bytes so far
	long []lineSpan
}

// lineSpan is a line: where it starts in the file's bytes, and its length.
type lineSpan struct{ at, n int64 }

// zstLongLine is the least a line is for a .zst's meter to keep it: a line
// of a chunk or more (streamChunkBytes) has a chunk of its own, grown to
// its size at once (chunkReader.grow).
const zstLongLine = 1 << 20

func (m *lineMeter) Write(p []byte) (int, error) {
	n := len(p)
	for {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			m.run += int64(len(p))
			return n, nil
		}
		if l := m.run + int64(i) + 1; l >= m.min {
			m.long = append(m.long, lineSpan{m.at, l})
		}
		m.at += m.run + int64(i) + 1
		m.run, p = 0, p[i+1:]
	}
}

// spans are the long lines written, the last one too if it has no
// newline.
func (m *lineMeter) spans() []lineSpan {
	if m.run > 0 && m.run >= m.min {
		return append(m.long[:len(m.long):len(m.long)], lineSpan{m.at, m.run})
	}
	return m.long
}

// smallFrame is the most a frame verifiedFrames decodes at once may take,
// compressed and as it declares it decompresses to.
const smallFrame = 1 << 20

// zstdFile reads a .zst file decompressed, its errors saying so. (The
// decoder is not embedded: its WriteTo, which io.Copy takes, would be
// zstdFile's too, its errors bare: "unexpected EOF".) With good >= 0, the
// file holds a frame that does not decompress whole: its bytes end at
// good, the error bad after them.
type zstdFile struct {
	dec  *zstd.Decoder
	f    vfs.File
	read *int64 // bytes decompressed so far
	good int64
	bad  error
	// length is what the frames checked decompress to, all the bytes it
	// reads (-1: not checked), size the file's own, compressed.
	length, size int64
	// long are the long lines of the frames checked (zstLongLine and more),
	// in order: what chunkReader grows its buffer to for one.
	long []lineSpan
}

// compressedAt is, of a source whose bytes decompress from a file (a
// .zst), where in the file (of size bytes) a reader is that has read at
// of its decompressed bytes: at, scaled by the file's ratio of compressed
// to decompressed bytes (its frames compress alike); the file's own bytes
// at for a plain file, or one whose length is not known. An import's
// progress counts a file's own bytes: a .zst's decompressed offset, past
// its compressed size from its first chunk (a 7.8 KiB rollout of 68.7
// MiB), had the bar say 100% for the whole of it.
func compressedAt(src io.Reader, at int64) int64 {
	if s, ok := src.(*stoppedSource); ok {
		src = s.ReadCloser
	}
	z, ok := src.(zstdFile)
	if !ok || z.length <= 0 {
		return at
	}
	return int64(float64(z.size) * (float64(min(at, z.length)) / float64(z.length)))
}

// lineLeft is lineSizer's: the rest of the line that starts at at-n,
// when it is one of the long lines checked.
func (z zstdFile) lineLeft(at, n int64) int64 {
	start := at - n
	i, found := slices.BinarySearchFunc(z.long, start, func(l lineSpan, s int64) int {
		return cmp.Compare(l.at, s)
	})
	if !found {
		return 0
	}
	return z.long[i].n - n
}

func (z zstdFile) Read(p []byte) (int, error) {
	if z.good >= 0 {
		if *z.read >= z.good {
			return 0, z.error(z.bad)
		}
		p = p[:min(int64(len(p)), z.good-*z.read)]
	}
	n, err := z.dec.Read(p)
	*z.read += int64(n)
	if err != nil && err != io.EOF {
		err = z.error(err)
	}
	return n, err
}

// WriteTo is io.WriterTo for io.Copy (hashing a file), which writes the
// decoded blocks as they are rather than through Read's copy.
func (z zstdFile) WriteTo(w io.Writer) (int64, error) {
	if z.good >= 0 {
		// Up to the frame that does not check out, then its error.
		n, err := io.Copy(w, io.LimitReader(z.dec, z.good-*z.read))
		*z.read += n
		if err != nil {
			return n, z.error(err)
		}
		return n, z.error(z.bad)
	}
	n, err := z.dec.WriteTo(w)
	*z.read += n
	if err != nil {
		err = z.error(err)
	}
	return n, err
}

// error says why the file did not decompress. With no frame at its start
// it is not compressed at all (a plain rollout renamed, or copied over a
// compressed one): "magic number mismatch" would read as damage.
func (z zstdFile) error(err error) error {
	if *z.read == 0 && errors.Is(err, zstd.ErrMagicMismatch) {
		return errors.New("not zstd-compressed, though named .zst (it does not start with a zstd frame): if it is plain JSONL, rename it without .zst")
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		// A frame cut short: the file was copied or written only in
		// part (Codex compressing it, a copy stopped), or damaged.
		// "unexpected EOF" alone says neither what nor what to do.
		return fmt.Errorf("decompress: cut short in the middle of a zstd frame (damaged, or not yet all written): import it again once it is whole, or, to take in what reads, `zstd -dc` it to the .jsonl of the same name beside it, which import reads instead: %w", err)
	}
	if errors.Is(err, zstd.ErrWindowSizeExceeded) {
		return fmt.Errorf("decompress: compressed with a window over %d MiB (`zstd --long=30` or more), more memory than import gives one file: `zstd -d --long=31` it to the .jsonl of the same name beside it, which import reads instead: %w", maxZstdWindow>>20, err)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("decompress: %w", err) // reading the file failed: not its data
	}
	// Anything else is damage in a frame (a checksum that does not match,
	// a block that does not decode): the decoder's words alone say
	// nothing a user can act on.
	return zstdDamaged{err}
}

// zstdDamaged is damage in a frame: the file reads no further, ever, as
// it is (where a frame cut short, or a read that failed, may read on the
// next time).
type zstdDamaged struct{ err error }

func (e zstdDamaged) Error() string {
	return fmt.Sprintf("decompress: the zstd data is damaged (%v): it cannot be read past the damage; put back a good copy (a backup) and import again", e.err)
}

func (e zstdDamaged) Unwrap() error { return e.err }

// zstdMagic begins every zstd frame.
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// maxZstdWindow is the largest window a .zst source may declare: the
// decoder's own default, which `zstd --long` up to 29 stays within.
const maxZstdWindow = 512 << 20

func (z zstdFile) Close() error {
	z.dec.Close()
	return z.f.Close()
}

// otherFormatHead is how much of a file otherFormat looks at.
const otherFormatHead = 1 << 20

// readHead reads the first n bytes of a source file (decompressed).
func (r *Rook) readHead(path string, n int64) ([]byte, bool, error) {
	rc, zst, err := r.openSourceChecked(path, false)
	if err != nil {
		return nil, zst, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, n))
	if err != nil && zst && len(b) > 0 {
		// A .zst damaged within its head: what decompressed tells its
		// format, and the pass that takes it in meets the damage after
		// the lines before it, and says so.
		err = nil
	}
	return b, zst, err
}

// sourceProbe reads a streamed source file from its start, hashing it, as
// far as the bytes a session of it holds, and one byte more: is it that
// session's file, unchanged, cut short or grown? A grown file is then read
// on from there by the pass that takes it in (rest), with the same hash:
// the file is read once, not hashed through and then read again (on a 95
// MB rollout grown by a line, twice its bytes).
type sourceProbe struct {
	r    *Rook
	path string
	rc   io.ReadCloser // nil until the first look
	h    hash.Hash     // of the n bytes read
	n    int64
	peek []byte // the byte read past n, not hashed yet (none at the end)
}

// to reads the file as far as at bytes and says how far it reached (size,
// and full, the SHA-256 of all of it, when it ends there or before) or
// that it goes on past at (more: size and full are not known yet). prefix
// is the SHA-256 of its first at bytes (of all of it if shorter), hex.
func (p *sourceProbe) to(at int64) (size int64, full, prefix string, more bool, err error) {
	if p.rc != nil && p.peek == nil && at >= p.n {
		// Read through already, to its end at or before at.
		sum := hex.EncodeToString(p.h.Sum(nil))
		return p.n, sum, sum, false, nil
	}
	if p.rc == nil || at < p.n {
		// From its start (again, for a session that holds less than
		// one looked at before: rare).
		p.close()
		if p.rc, _, err = p.r.openSource(p.path); err != nil {
			p.rc = nil
			return 0, "", "", false, err
		}
		p.h, p.n, p.peek = sha256.New(), 0, []byte{}
	}
	if at > p.n {
		p.h.Write(p.peek)
		p.n += int64(len(p.peek))
		m, err := io.CopyBuffer(p.h, io.LimitReader(p.rc, at-p.n), make([]byte, 1<<20))
		p.n += m
		if err != nil {
			return 0, "", "", false, err
		}
		p.peek = []byte{}
		if p.n < at {
			p.peek = nil // at its end
		}
	}
	if p.peek != nil && len(p.peek) == 0 {
		b := make([]byte, 1)
		switch n, err := io.ReadFull(p.rc, b); {
		case n == 1:
			p.peek = b
		case err == io.EOF:
			p.peek = nil
		default:
			return 0, "", "", false, err
		}
	}
	sum := hex.EncodeToString(p.h.Sum(nil))
	if p.peek != nil {
		return 0, "", sum, true, nil
	}
	return p.n, sum, sum, false, nil
}

// rest is the file from where to left off: the byte peeked, then the
// rest. The hash goes on with what the caller reads.
func (p *sourceProbe) rest() io.Reader {
	return io.MultiReader(bytes.NewReader(p.peek), p.rc)
}

func (p *sourceProbe) close() {
	if p.rc != nil {
		p.rc.Close()
		p.rc = nil
	}
}

// chunkReader cuts what it reads into chunks of whole lines of about max
// bytes (a longer line is a chunk of its own); the last chunk ends where
// the file does, with or without a newline. Each chunk is a buffer of its
// own: lines held back from one chunk stay valid beside the next.
type chunkReader struct {
	r     io.Reader
	max   int
	carry []byte // read past the last newline of the previous chunk
	eof   bool
	hash  hash.Hash // every byte returned goes through it
	size  int64     // bytes returned so far
	// tailAt is where the file's last line begins when it has no newline
	// (its last chunk returned), and tailSum the SHA-256 of the bytes
	// before, hex: what an import that leaves that line out holds.
	tailAt  int64
	tailSum string
	err     error // reading failed, after the whole lines before were returned
}

// lineSizer is a source that can say how many bytes at most are left of
// the line being read, n bytes of it read and its next byte at offset at
// (0 or less: it cannot say): chunkReader then grows its buffer for a long
// line once, rather than by append's steps (a 500 MB line: 2.4 GB
// allocated on the way, up to 1.1 GB of it held at once).
type lineSizer interface {
	lineLeft(at, n int64) int64
}

// fileLineLeft is, of a plain file, what lineSizer's lineLeft says: the
// bytes to the line's end, looked for by reading on from at (the line is
// read twice; a long line only).
func fileLineLeft(f io.ReaderAt, at int64) int64 {
	var scratch [64 << 10]byte
	for off := at; ; {
		n, err := f.ReadAt(scratch[:], off)
		if i := bytes.IndexByte(scratch[:n], '\n'); i >= 0 {
			return off + int64(i) + 1 - at
		}
		off += int64(n)
		if err != nil {
			return off - at // its end, or as far as it reads
		}
	}
}

// grow makes room in buf, all of it one line longer than the room: for
// the rest of the line at once where the source says how long it is at
// most, else by append's step (and by no less: a source saying too
// little, its file changed since, must not have the line grown a few
// bytes at a time).
func (c *chunkReader) grow(buf []byte) []byte {
	var left int64
	switch r := c.r.(type) {
	case lineSizer:
		left = r.lineLeft(c.size+int64(len(buf)), int64(len(buf)))
	case io.ReaderAt:
		left = fileLineLeft(r, c.size+int64(len(buf)))
	}
	if left <= int64(len(buf)/4) || left > int64(math.MaxInt-len(buf)-c.max) {
		return append(buf, 0)[:len(buf)]
	}
	// The line, and room to read on past it as a chunk does.
	grown := make([]byte, len(buf), len(buf)+int(left)+c.max/8+1)
	copy(grown, buf)
	return grown
}

func newChunkReader(r io.Reader, max int) *chunkReader {
	return &chunkReader{r: r, max: max, hash: sha256.New()}
}

// next returns the next chunk, whether it is the last, and nil, true, nil
// at the end.
func (c *chunkReader) next() ([]byte, bool, error) {
	if c.err != nil {
		return nil, false, c.err
	}
	if c.eof && len(c.carry) == 0 {
		return nil, true, nil
	}
	buf := make([]byte, len(c.carry), max(c.max, len(c.carry))+c.max/8+1)
	copy(buf, c.carry)
	c.carry = nil
	cut := bytes.LastIndexByte(buf, '\n') // the last newline so far
	for !c.eof && (len(buf) < c.max || cut < 0) {
		if len(buf) == cap(buf) {
			buf = c.grow(buf) // a line longer than the room left
		}
		n, err := c.r.Read(buf[len(buf):cap(buf)])
		// Only the bytes just read are searched: a line of GBs, read a
		// block at a time, is not searched again from its start.
		if i := bytes.LastIndexByte(buf[len(buf):len(buf)+n], '\n'); i >= 0 {
			cut = len(buf) + i
		}
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			c.eof = true
		} else if err != nil && cut < 0 {
			return nil, false, err
		} else if err != nil {
			// (A .zst damaged part way.) The whole lines before are
			// a chunk, taken in, not lost with the rest of the chunk;
			// the error comes next.
			c.err = err
			buf = buf[:cut+1]
			c.hash.Write(buf)
			c.size += int64(len(buf))
			return buf, false, nil
		}
	}
	if !c.eof {
		c.carry = append([]byte(nil), buf[cut+1:]...)
		buf = buf[:cut+1]
	}
	if len(buf) > 0 && buf[len(buf)-1] != '\n' {
		// The last chunk, ending in a line with no newline: the sum
		// before it is kept on the way.
		c.hash.Write(buf[:cut+1])
		c.tailAt, c.tailSum = c.size+int64(cut+1), hex.EncodeToString(c.hash.Sum(nil))
		c.hash.Write(buf[cut+1:])
	} else {
		c.hash.Write(buf)
	}
	c.size += int64(len(buf))
	return buf, c.eof && len(c.carry) == 0, nil
}

// sum is the SHA-256 of every byte returned so far, hex.
func (c *chunkReader) sum() string { return hex.EncodeToString(c.hash.Sum(nil)) }

// sourceMapper maps a file's lines chunk by chunk, with one mapper whose
// state (tool names, message ids, the session's ids) carries from chunk to
// chunk, as it would over the whole file.
type sourceMapper struct {
	format   string
	reader   lineReader
	captured backupSet
	// backupsNamed are the file backups every line through the mapper named,
	// taken in or not, captured or not: what an import without the
	// state notes as captured from the lines before (kept: import_state.go).
	backupsNamed backupSet
	// named is the session's Name after the lines before start, and
	// copyEnds its CopyEnds, once started says they have all been through
	// the mapper.
	started  bool
	named    string
	copyEnds int
	// restored: the mapper is where the lines before start left it
	// (restore): they are not mapped again.
	restored bool
	// split: start was inside a line (one that parsed without its
	// newline when last imported), whose start went through the mapper
	// alone and whose rest is a note: an import of the file from its
	// start maps the line whole, so the state is not kept (import_state.go).
	split bool
	// cutLeftNoTrace: the file's last line, cut short (no newline) and
	// not parsed, left the mapper's kept state as it was (saveState gives
	// the same bytes before and after it). An import that leaves that line
	// for the next (beingWritten) can then keep the state as the state
	// after the lines before it: without, a session that grows with a
	// half-written line at each import was mapped from its start each time.
	cutLeftNoTrace bool
	// unreportedFrom, when 0 or more, is where the lines an import
	// stopped part way took in without reporting them begin
	// (fileImport.reportFrom): of the lines from there to start, mapped
	// only, those that did not parse are kept in unreported (where they
	// begin, and how they did not parse), for the import to report.
	unreportedFrom int64
	unreported     []pendingLine
}

func newSourceMapper(format, path string, minCut int) *sourceMapper {
	return &sourceMapper{format: format, reader: lineReader{mapper: newMapper(format, path), minCut: minCut}, captured: backupSet{}, backupsNamed: backupSet{},
		unreportedFrom: -1}
}

// truncatedLine begins the problem reported of a last line without its
// newline that does not parse.
const truncatedLine = "truncated last line (no newline): "

// mapChunk maps the lines of data, the bytes of the file from off on (a
// chunk: it ends at a line's end, or at the file's end when final). The
// lines before start (where an earlier import of a grown file stopped) only
// go through the mapper, for its state and the file backups they name;
// the others become pendingLines. start is at a line's start, or inside a
// line cut short when last imported, whose rest is then a note.
func (sm *sourceMapper) mapChunk(data []byte, off, start int64, final bool) []pendingLine {
	skip := min(max(start-off, 0), int64(len(data)))
	if skip > 0 && !sm.restored {
		at := off
		for _, line := range sourceLines(data[:skip]) {
			m, _ := sm.reader.mapOnly(trimNewline(line))
			sm.captured.note(m)
			sm.backupsNamed.note(m)
			if m.Unparsed != "" && sm.unreportedFrom >= 0 && at >= sm.unreportedFrom {
				if len(bytes.TrimSpace(line)) == 0 {
					m.Unparsed = "blank line" // as a line taken in says it
				} else if line[len(line)-1] != '\n' {
					m.Unparsed = truncatedLine + m.Unparsed // the last line taken in, cut short
				}
				sm.unreported = append(sm.unreported, pendingLine{off: at, m: mappedLine{Unparsed: m.Unparsed}})
			}
			at += int64(len(line))
		}
	}
	if !sm.started && off+skip == start {
		s := sm.reader.mapper.session()
		sm.started, sm.named, sm.copyEnds = true, s.Name, s.CopyEnds
	}
	rest := data[skip:]
	lines := make([]pendingLine, 0, bytes.Count(rest, []byte{'\n'})+1)
	at := off + skip
	// The lines as sourceLines splits them, without its slice of them
	// (its count of the newlines was a second pass over the bytes).
	for i := 0; len(rest) > 0; i++ {
		n := bytes.IndexByte(rest, '\n') + 1
		if n == 0 {
			n = len(rest)
		}
		line := rest[:n:n]
		rest = rest[n:]
		p := pendingLine{off: at, line: line}
		if i == 0 && skip > 0 && data[skip-1] != '\n' {
			// The rest of a line that was cut short when last imported.
			p.m = mappedLine{Kind: eventlog.KindNote, Label: sm.format + ":continued"}
			sm.split = true
			// Its start, taken in as what it was then (an entry, when it
			// parsed), stays so; the whole line, once it has its newline,
			// may be no JSON (its writer went on with something else): that
			// is said, as of a line imported whole (the entry after a byte
			// order mark or NULs, as the mappers read it). A rest still
			// without its newline, the file's last line, is said as a
			// truncated last line is (it is taken in all the same: only
			// its new bytes are stored, and the next import's note goes
			// on from it, saying the whole line again then). The chunk
			// holds the line's start: a chunk begins at a line's start
			// (only a restored mapper's first begins at start, with no
			// line before it to go on).
			from := int64(bytes.LastIndexByte(data[:skip], '\n') + 1)
			if whole := trimNewline(data[from : skip+int64(len(line))]); !json.Valid(entryBytes(whole)) {
				p.m.Unparsed = fmt.Sprintf("not JSON once it went on (its first %d bytes were imported before the rest came, as what they were then; the rest is kept byte for byte as a note)", skip-from)
				if line[len(line)-1] != '\n' {
					p.m.Unparsed = truncatedLine + p.m.Unparsed
				}
			}
		} else {
			// The file's last line, with no newline: the state before it
			// is compared with the state after (cutLeftNoTrace). Once per
			// import at most, and only of a file that ends so.
			cut := final && line[len(line)-1] != '\n' && at+int64(len(line)) == off+int64(len(data))
			var before []byte
			if cut {
				before, _ = sm.reader.mapper.saveState()
			}
			p.m, p.cuts = sm.reader.read(trimNewline(line))
			sm.backupsNamed.note(p.m)
			if p.m.Unparsed != "" && len(bytes.TrimSpace(line)) == 0 {
				p.m.Unparsed = "blank line"
			}
			if p.m.Unparsed != "" && cut {
				p.m.Unparsed = truncatedLine + p.m.Unparsed
				after, err := sm.reader.mapper.saveState()
				sm.cutLeftNoTrace = before != nil && err == nil && bytes.Equal(before, after)
			}
		}
		lines = append(lines, p)
		at += int64(len(line))
	}
	return lines
}

// mappedChunk is a chunk of a file read and mapped ahead of its storing
// (mapChunks): its bytes, where they begin, its lines, the session as the
// mapper saw it once through them, and whether it is the file's last.
type mappedChunk struct {
	data  []byte
	off   int64
	final bool
	lines []pendingLine
	// unreported are the lines before from that did not parse that an
	// import stopped part way took in without reporting them
	// (sourceMapper.unreported).
	unreported []pendingLine
	info       sourceSession
	err        error // reading failed: the last value sent
}

// mapChunks reads and maps the chunks of a file, one after the other, on a
// goroutine of its own, up to two chunks ahead of the caller (one waiting
// in the channel, one being mapped: three in memory with the one being
// stored), which stores them in order: mapping (the scan of
// each line, its cuts) and storing (hashing, compressing, appending) then
// run side by side. The mapper and its state are the goroutine's alone;
// each chunk carries the session as it was after that chunk (sm.session),
// which is what the caller would have read with no goroutine. The lines
// before from only go through the mapper (mapChunk), and noting their file
// backups in sm.captured is done before the caller stores anything after
// them, so the two never touch the set at once. The caller must call stop
// (after which nothing more is read) before the reader is closed.
func (sm *sourceMapper) mapChunks(cr *chunkReader, from int64) (chunks <-chan mappedChunk, stop func()) {
	out := make(chan mappedChunk, 1)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(out)
		for off := cr.size; ; { // 0, or where the bytes checked before end
			data, final, err := cr.next()
			c := mappedChunk{data: data, off: off, final: final, err: err}
			if err == nil {
				c.lines = sm.mapChunk(data, off, from, final)
				c.unreported, sm.unreported = sm.unreported, nil
				c.info = sm.session()
				off += int64(len(data))
			}
			select {
			case out <- c:
			case <-done:
				return
			}
			if err != nil || final {
				return
			}
		}
	}()
	var once sync.Once
	return out, func() {
		once.Do(func() { close(done) })
		wg.Wait()
	}
}

// session is the mapper's, Renamed when the lines from start on renamed
// it, or ended a copy of its parent's history its title came from.
func (sm *sourceMapper) session() sourceSession {
	s := sm.reader.mapper.session()
	s.Renamed = sm.started && (s.Name != sm.named || s.CopyEnds != sm.copyEnds)
	return s
}
