package agent

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// The sections of a piped patch that are not built in memory: a git
// binary patch (what `git diff --binary` writes, so git apply makes the
// file byte for byte), and the one hunk of a text file too large to hold.
// Both stream their sides (DiffFile.OldStream, NewStream, or Old and New
// as they are) and hold no more than a line of output at a time.

// sideWriter is a side of d to stream: its bytes given, or its stream;
// size: how many bytes it writes. An absent side writes nothing.
func sideWriter(data []byte, stream func(io.Writer) error, size int64) (func(io.Writer) error, int64) {
	if stream != nil {
		return stream, size
	}
	return func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}, int64(len(data))
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// pass writes a side through w with write, and checks it wrote size
// bytes: a stream that wrote others read a file changed since its size
// was taken.
func pass(d DiffFile, w io.Writer, write func(io.Writer) error, size int64) error {
	cw := &countingWriter{w: w}
	if err := write(cw); err != nil {
		return err
	}
	if cw.n != size {
		return fmt.Errorf("%s changed while being compared (%d bytes, not %d): run the diff again", d.Path, cw.n, size)
	}
	return nil
}

// fullIndexLine is the index line `git diff --binary` writes: the blobs'
// full names (40 zeros for a side that does not exist), which git apply
// checks the file against before and after; a streamed side not named is
// hashed as it streams.
func fullIndexLine(d DiffFile) (string, error) {
	side := func(mode, blob string, data []byte, stream func(io.Writer) error, size int64) (string, error) {
		switch {
		case mode == "":
			return strings.Repeat("0", 40), nil
		case blob != "":
			return blob, nil
		case stream == nil:
			return GitBlobID(data), nil
		}
		h := newGitBlobHash(size)
		if err := pass(d, h, stream, size); err != nil {
			return "", err
		}
		return hex.EncodeToString(h.Sum(nil)), nil
	}
	o, err := side(d.OldMode, d.OldBlob, d.Old, d.OldStream, d.OldSize)
	if err != nil {
		return "", err
	}
	n, err := side(d.NewMode, d.NewBlob, d.New, d.NewStream, d.NewSize)
	if err != nil {
		return "", err
	}
	line := "index " + o + ".." + n
	if d.OldMode != "" && d.OldMode == d.NewMode {
		line += " " + d.OldMode
	}
	return line, nil
}

// writeBinaryPatch writes the body of a binary section as git does:
// "GIT binary patch", the new content as a literal, and the old content as
// the literal that undoes it (git apply -R). A side that does not exist is
// a literal of 0 bytes.
func writeBinaryPatch(w io.Writer, d DiffFile) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("GIT binary patch\n")
	newW, newSize := sideWriter(d.New, d.NewStream, d.NewSize)
	if err := writeLiteral(bw, d, newW, newSize); err != nil {
		return err
	}
	oldW, oldSize := sideWriter(d.Old, d.OldStream, d.OldSize)
	if err := writeLiteral(bw, d, oldW, oldSize); err != nil {
		return err
	}
	return bw.Flush()
}

// writeLiteral writes one "literal SIZE" block: the side's bytes
// zlib-compressed, in base85 lines, then a blank line.
func writeLiteral(bw *bufio.Writer, d DiffFile, write func(io.Writer) error, size int64) error {
	bw.WriteString("literal " + strconv.FormatInt(size, 10) + "\n")
	lines := &base85Lines{w: bw}
	zw, _ := zlib.NewWriterLevel(lines, zlib.BestSpeed) // git's level (core.compression unset)
	if err := pass(d, zw, write, size); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	lines.flush()
	return bw.WriteByte('\n')
}

// base85Alphabet is git's base85 (base85.c): not Ascii85's, nor RFC 1924's order.
const base85Alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"

// base85Lines writes what it is given as the lines of a git binary patch:
// up to 52 bytes a line, its length first (A-Z for 1-26, a-z for 27-52),
// then each 4 bytes (the last group padded with zeros) as 5 base85
// digits, most significant first.
type base85Lines struct {
	w    *bufio.Writer
	buf  [52]byte
	n    int
	line [1 + 65 + 1]byte // (here, not on the stack: Write would move it to the heap each line)
}

func (b *base85Lines) Write(p []byte) (int, error) {
	total := len(p)
	for len(p) > 0 {
		c := copy(b.buf[b.n:], p)
		b.n += c
		p = p[c:]
		if b.n == len(b.buf) {
			b.flush()
		}
	}
	return total, nil
}

// flush writes the bytes held as a line (none: nothing).
func (b *base85Lines) flush() {
	if b.n == 0 {
		return
	}
	line := &b.line
	if b.n <= 26 {
		line[0] = 'A' + byte(b.n) - 1
	} else {
		line[0] = 'a' + byte(b.n) - 27
	}
	k := 1
	for i := 0; i < b.n; i += 4 {
		var acc uint32
		for j := 0; j < 4; j++ {
			acc <<= 8
			if i+j < b.n {
				acc |= uint32(b.buf[i+j])
			}
		}
		for j := 4; j >= 0; j-- {
			line[k+j] = base85Alphabet[acc%85]
			acc /= 85
		}
		k += 5
	}
	line[k] = '\n'
	b.w.Write(line[:k+1])
	b.n = 0
}

// writeWholeHunk writes the hunk of a text section with a side too large
// to hold: "@@ -1,N +1,M @@", the N lines before removed, the M lines
// after added, each side passed over twice (to count its lines, then to
// write them). It returns the lines added and removed.
func writeWholeHunk(w io.Writer, d DiffFile) (added, removed int, err error) {
	oldW, oldSize := sideWriter(d.Old, d.OldStream, d.OldSize)
	newW, newSize := sideWriter(d.New, d.NewStream, d.NewSize)
	count := func(write func(io.Writer) error, size int64) (int, error) {
		lc := &lineCounter{}
		if err := pass(d, lc, write, size); err != nil {
			return 0, err
		}
		return lc.lines(), nil
	}
	if removed, err = count(oldW, oldSize); err != nil {
		return 0, 0, err
	}
	if added, err = count(newW, newSize); err != nil {
		return 0, 0, err
	}
	if added == 0 && removed == 0 {
		return 0, 0, nil
	}
	bw := bufio.NewWriter(w)
	bw.WriteString("@@ -" + hunkRange(1, removed) + " +" + hunkRange(1, added) + " @@\n")
	for _, s := range []struct {
		prefix byte
		write  func(io.Writer) error
		size   int64
	}{{'-', oldW, oldSize}, {'+', newW, newSize}} {
		pw := &prefixLines{w: bw, prefix: s.prefix, start: true}
		if err := pass(d, pw, s.write, s.size); err != nil {
			return 0, 0, err
		}
		if !pw.start {
			bw.WriteString("\n\\ No newline at end of file\n")
		}
	}
	return added, removed, bw.Flush()
}

// lineCounter counts the lines written to it, the last one without a
// newline too.
type lineCounter struct {
	newlines int
	any      bool
	last     byte
}

func (l *lineCounter) Write(p []byte) (int, error) {
	if len(p) > 0 {
		l.newlines += bytes.Count(p, []byte{'\n'})
		l.any, l.last = true, p[len(p)-1]
	}
	return len(p), nil
}

func (l *lineCounter) lines() int {
	if l.any && l.last != '\n' {
		return l.newlines + 1
	}
	return l.newlines
}

// prefixLines writes what it is given with prefix before each line;
// start: the next byte begins a line (false at the end: the last line
// has no newline).
type prefixLines struct {
	w      *bufio.Writer
	prefix byte
	start  bool
}

func (pl *prefixLines) Write(p []byte) (int, error) {
	total := len(p)
	for len(p) > 0 {
		if pl.start {
			if err := pl.w.WriteByte(pl.prefix); err != nil {
				return 0, err
			}
			pl.start = false
		}
		line := p
		if i := bytes.IndexByte(p, '\n'); i >= 0 {
			line, pl.start = p[:i+1], true
		}
		if _, err := pl.w.Write(line); err != nil {
			return 0, err
		}
		p = p[len(line):]
	}
	return total, nil
}
