package agent

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// DiffFile is one path's change, for WriteGitDiff.
type DiffFile struct {
	Path    string // slash-separated, relative to the workspace
	Old     []byte // content before (nil when the file did not exist)
	New     []byte // content now (nil when the file does not exist now)
	OldMode string // git mode before: "100644", "100755", "120000"; "" = did not exist (an added file)
	NewMode string // git mode now; "" = does not exist now (a removed file)
	// NoBody: report the change without a diff body (binary, or too large to diff);
	// Old/New may be nil then, with OldBlob/NewBlob set instead.
	NoBody bool
	// OldBlob, NewBlob: git's object names of the contents (GitBlobID), for
	// the index line of a NoBody section whose Old or New is not given (too
	// large to read for a diff); else computed from Old and New. Equal, the
	// contents are the same: a section with no body then says the mode
	// change alone, as git does.
	OldBlob, NewBlob string
	// Why: of a NoBody section that is not binary (a file too large to
	// read at a terminal), why it has no body: it says "Files A and B
	// differ (Why)", not that they are binary.
	Why string
	// OldBinary, NewBinary: that side's content is binary (isBinary, as
	// git decides). A section with a binary side is, uncoloured (the bytes
	// git apply takes), a git binary patch of both sides as `git diff
	// --binary` writes it; coloured, "Binary files A and B differ".
	OldBinary, NewBinary bool
	// OldStream, NewStream: a side too large to hold (Old or New nil
	// then): a function writing its OldSize or NewSize bytes to w, called
	// once for each pass over them (an error if they are not those). Such
	// a section is written straight to the writer, never held whole: a
	// binary one as a binary patch, a text one as one hunk replacing every
	// line before by every line after.
	OldStream, NewStream func(w io.Writer) error
	OldSize, NewSize     int64
}

// diffContext is the number of unchanged lines shown around each change, as git's default -U3.
// Changes separated by at most 2*diffContext unchanged lines share one hunk.
const diffContext = 3

// maxDiffLines bounds the lines handed to the line differ (myersLines, whose time has
// bounds of its own), for its memory: a map entry and a few ints a line. A side is at most
// maxLineDiffBytes (8 MiB) here, so this is reached only by files of very short lines; they
// get a plain "replace the differing middle" diff, which is still correct.
const maxDiffLines = 4_000_000

// ANSI colours of git's default palette.
const (
	colorMeta  = "\x1b[1m"
	colorFrag  = "\x1b[36m"
	colorOld   = "\x1b[31m"
	colorNew   = "\x1b[32m"
	colorReset = "\x1b[m"
)

// patchText is a file's text as a coloured patch shows it (color: at a
// terminal, to a person): every control character but a tab, every bidi
// control and every byte that is not UTF-8 as U+FFFD, as show prints a
// body (ShownText). Written as it is, an escape sequence in a file the
// agent wrote (an OSC 52 clipboard write, an OSC 8 link hiding its
// target) acted on the terminal, and a right-to-left override reordered
// the line. A CR that ends the line stays: it moves the cursor over
// nothing still to be shown, and a CRLF file's every line would end in
// U+FFFD (git writes it as it is too). Uncoloured, the patch is the bytes
// git apply takes: s as it is. One pass; a line with nothing to replace
// is s itself, not a copy.
func patchText(s string, color bool) string {
	if !color {
		return s
	}
	var b strings.Builder
	done := 0 // s[:done] is in b
	for i := 0; i < len(s); {
		if c := s[i]; c >= 0x20 && c < 0x7f || c == '\t' {
			i++
			continue
		}
		r, w := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && w == 1 || Unshowable(r) && !(r == '\r' && i+1 == len(s)) {
			if done == 0 {
				b.Grow(len(s) + 2)
			}
			b.WriteString(s[done:i])
			b.WriteRune(utf8.RuneError)
			done = i + w
		}
		i += w
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// WriteGitDiff writes d as a git-style patch section and returns the lines added and removed
// (0, 0 for NoBody and binary sections). color adds ANSI colours (headers bold, @@ cyan, - red,
// + green) and is only used for terminals, where the files' text is shown as patchText makes it;
// the uncoloured output must be byte-exactly what git apply accepts.
func WriteGitDiff(w io.Writer, d DiffFile, color bool) (added, removed int, err error) {
	halves, err := diffSections(d)
	if err != nil {
		return 0, 0, err
	}
	for _, h := range halves {
		var buf bytes.Buffer
		a, r, err := writeSection(&buf, w, h, color)
		if err != nil {
			return 0, 0, err
		}
		if _, err := w.Write(buf.Bytes()); err != nil {
			return 0, 0, err
		}
		added, removed = added+a, removed+r
	}
	return added, removed, nil
}

// diffSections checks d and returns its sections: d itself, or for a type change (file <->
// symlink) a deletion followed by a creation, as git shows it and git apply expects it. Each
// half has its own side's content and flags: a link's target is text, shown whatever the file
// on the other side is.
func diffSections(d DiffFile) ([]DiffFile, error) {
	if d.Path == "" {
		return nil, fmt.Errorf("agent: diff: empty path")
	}
	for _, m := range []string{d.OldMode, d.NewMode} {
		if m != "" && !validGitMode(m) {
			return nil, fmt.Errorf("agent: diff %s: invalid git mode %q", d.Path, m)
		}
	}
	if d.OldMode == "" && d.NewMode == "" {
		return nil, fmt.Errorf("agent: diff %s: file exists neither before nor after", d.Path)
	}
	if d.OldMode == "" || d.NewMode == "" || modeType(d.OldMode) == modeType(d.NewMode) {
		return []DiffFile{d}, nil
	}
	del, add := d, d
	del.New, del.NewMode, del.NewBlob, del.NewBinary, del.NewStream, del.NewSize = nil, "", "", false, nil, 0
	add.Old, add.OldMode, add.OldBlob, add.OldBinary, add.OldStream, add.OldSize = nil, "", "", false, nil, 0
	if modeType(del.OldMode) == "120" {
		del.NoBody, del.Why = false, ""
	}
	if modeType(add.NewMode) == "120" {
		add.NoBody, add.Why = false, ""
	}
	return []DiffFile{del, add}, nil
}

// DiffCounts returns the lines WriteGitDiff writes of d as added and removed, without writing
// it: a type change counts the deletion and the creation apart, a section with no body or a
// binary one counts nothing. d's sides are held (no OldStream, NewStream).
func DiffCounts(d DiffFile) (added, removed int, err error) {
	halves, err := diffSections(d)
	if err != nil {
		return 0, 0, err
	}
	for _, h := range halves {
		if h.NoBody || h.OldMode != "" && h.OldBinary || h.NewMode != "" && h.NewBinary {
			continue
		}
		if h.OldStream != nil || h.NewStream != nil {
			return 0, 0, fmt.Errorf("agent: diff %s: a side too large to hold is not counted", d.Path)
		}
		old, new := h.Old, h.New
		if h.OldMode == "" {
			old = nil
		}
		if h.NewMode == "" {
			new = nil
		}
		a, r := CountLines(old, new)
		added, removed = added+a, removed+r
	}
	return added, removed, nil
}

// CountLines returns the lines a diff of old and new adds and removes, without writing it.
func CountLines(old, new []byte) (added, removed int) {
	a, b := splitLines(old), splitLines(new)
	for _, c := range diffLines(a, b) {
		added += c.n2
		removed += c.n1
	}
	return added, removed
}

// writeSection writes one "diff --git" section; the modes are valid and of one type. It
// builds the section in buf, which the caller writes to w; a streamed body (a binary patch,
// or a side too large to hold) goes to w straight, after what buf holds.
// It writes nothing when neither the mode nor the content changed.
func writeSection(buf *bytes.Buffer, w io.Writer, d DiffFile, color bool) (added, removed int, err error) {
	aName, bName := quotePath("a/", d.Path), quotePath("b/", d.Path)
	oldLabel, newLabel := aName, bName
	old, new := d.Old, d.New
	if d.OldMode == "" {
		oldLabel, old = "/dev/null", nil
		d.OldStream, d.OldSize, d.OldBinary = nil, 0, false
	}
	if d.NewMode == "" {
		newLabel, new = "/dev/null", nil
		d.NewStream, d.NewSize, d.NewBinary = nil, 0, false
	}
	bothExist := d.OldMode != "" && d.NewMode != ""
	streamed := d.OldStream != nil || d.NewStream != nil
	binary := d.OldBinary || d.NewBinary

	var a, b []string
	var changes []change
	same := false // both sides' contents are the same
	switch {
	case bothExist && d.OldBlob != "" && d.OldBlob == d.NewBlob:
		same = true
	case d.NoBody:
		// Without a body the contents are the same only when the caller
		// passed both and they are equal.
		same = bothExist && old != nil && new != nil && bytes.Equal(old, new)
	case streamed:
		// (Compared by their blobs, when given.)
	case binary:
		same = bothExist && bytes.Equal(old, new)
	default:
		a, b = splitLines(old), splitLines(new)
		changes = diffLines(a, b)
		same = bothExist && len(changes) == 0
	}
	if bothExist && d.OldMode == d.NewMode && same {
		return 0, 0, nil // unchanged
	}

	meta := func(s string) {
		if color {
			buf.WriteString(colorMeta)
			buf.WriteString(s)
			buf.WriteString(colorReset)
		} else {
			buf.WriteString(s)
		}
		buf.WriteByte('\n')
	}
	meta("diff --git " + aName + " " + bName)
	switch {
	case d.OldMode == "":
		meta("new file mode " + d.NewMode)
	case d.NewMode == "":
		meta("deleted file mode " + d.OldMode)
	case d.OldMode != d.NewMode:
		meta("old mode " + d.OldMode)
		meta("new mode " + d.NewMode)
	}
	if same {
		return 0, 0, nil // a mode change only: git writes no body
	}
	// flush writes what buf holds, for a body streamed to w after it.
	flush := func() error {
		_, err := w.Write(buf.Bytes())
		buf.Reset()
		return err
	}
	switch {
	case d.NoBody && d.Why != "" && !binary:
		// (At a terminal: never called binary when it is not known to be.)
		meta(indexLine(d))
		buf.WriteString("Files " + oldLabel + " and " + newLabel + " differ (" + d.Why + ")\n")
		return 0, 0, nil
	case d.NoBody || binary && color:
		// git writes an index line here, and git apply needs a header
		// line beyond "diff --git": without one it misreads the section
		// and every one after it.
		meta(indexLine(d))
		buf.WriteString("Binary files " + oldLabel + " and " + newLabel + " differ\n")
		return 0, 0, nil
	case binary:
		// The bytes git apply takes (git diff --binary): the blobs' full
		// names, then both sides.
		line, err := fullIndexLine(d)
		if err != nil {
			return 0, 0, err
		}
		meta(line)
		if err := flush(); err != nil {
			return 0, 0, err
		}
		return 0, 0, writeBinaryPatch(w, d)
	case streamed:
		// Too large to hold (and never coloured: a terminal shows it with
		// no body): one hunk, every line before removed and every line
		// after added, each side read twice, to count and to write.
		buf.WriteString("--- " + oldLabel + tabIfSpace(oldLabel) + "\n")
		buf.WriteString("+++ " + newLabel + tabIfSpace(newLabel) + "\n")
		if err := flush(); err != nil {
			return 0, 0, err
		}
		return writeWholeHunk(w, d)
	}
	if len(changes) == 0 {
		return 0, 0, nil // an empty file added or removed: git writes no body
	}
	for _, c := range changes {
		added += c.n2
		removed += c.n1
	}
	// git ends a ---/+++ name containing a space with a tab, for GNU patch's sake.
	fileLine := func(prefix, label string) {
		if color {
			buf.WriteString(colorMeta + prefix + label + colorReset + tabIfSpace(label) + "\n")
			return
		}
		buf.WriteString(prefix + label + tabIfSpace(label) + "\n")
	}
	fileLine("--- ", oldLabel)
	fileLine("+++ ", newLabel)
	writeHunks(buf, a, b, changes, color)
	return added, removed, nil
}

// indexLine is git's "index OLD..NEW[ MODE]" line of d: its blobs' names
// abbreviated (0000000 for a side that does not exist), and the mode when
// it is the same on both sides (else the header's mode lines say it).
func indexLine(d DiffFile) string {
	side := func(mode, blob string, data []byte) string {
		switch {
		case mode == "":
			return strings.Repeat("0", gitAbbrev)
		case blob == "":
			blob = GitBlobID(data)
		}
		return blob[:gitAbbrev]
	}
	line := "index " + side(d.OldMode, d.OldBlob, d.Old) + ".." + side(d.NewMode, d.NewBlob, d.New)
	if d.OldMode != "" && d.OldMode == d.NewMode {
		line += " " + d.OldMode
	}
	return line
}

// gitAbbrev is how many hex digits of a blob's name an index line shows,
// as git's default.
const gitAbbrev = 7

// GitBlobID is the name git gives the blob of data: the hex SHA-1 of
// "blob <size>\x00" and data.
func GitBlobID(data []byte) string {
	h := newGitBlobHash(int64(len(data)))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

// newGitBlobHash starts the SHA-1 of a git blob of size bytes: the bytes
// written to it next.
func newGitBlobHash(size int64) hash.Hash {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", size)
	return h
}

func tabIfSpace(label string) string {
	if strings.IndexByte(label, ' ') >= 0 {
		return "\t"
	}
	return ""
}

// change is one block of differing lines: old lines [i1, i1+n1) became new lines [i2, i2+n2).
type change struct{ i1, n1, i2, n2 int }

// writeHunks writes the hunks of changes the way git's xdiff emits them.
func writeHunks(buf *bytes.Buffer, a, b []string, changes []change, color bool) {
	line := func(prefix byte, s, col string) {
		text, nl := strings.CutSuffix(s, "\n")
		text = patchText(text, color)
		if color && col != "" {
			buf.WriteString(col)
			buf.WriteByte(prefix)
			buf.WriteString(text)
			buf.WriteString(colorReset)
		} else {
			buf.WriteByte(prefix)
			buf.WriteString(text)
		}
		buf.WriteByte('\n')
		if !nl {
			buf.WriteString("\\ No newline at end of file\n")
		}
	}
	funcLine, funcSearched := "", -1 // the hunk header's function name, as git's default finds it
	for h := 0; h < len(changes); {
		// A hunk runs from changes[h] through changes[e], the changes no more than
		// 2*diffContext unchanged lines apart.
		e := h
		for e+1 < len(changes) && changes[e+1].i1-(changes[e].i1+changes[e].n1) <= 2*diffContext {
			e++
		}
		first, last := changes[h], changes[e]
		s1 := max(first.i1-diffContext, 0)
		s2 := max(first.i2-diffContext, 0)
		lctx := min(diffContext, len(a)-(last.i1+last.n1), len(b)-(last.i2+last.n2))
		e1 := last.i1 + last.n1 + lctx
		e2 := last.i2 + last.n2 + lctx

		for l := s1 - 1; l > funcSearched; l-- {
			if f, ok := gitFuncName(a[l]); ok {
				funcLine = f
				break
			}
		}
		funcSearched = s1 - 1
		hdr := "@@ -" + hunkRange(s1+1, e1-s1) + " +" + hunkRange(s2+1, e2-s2) + " @@"
		if color {
			buf.WriteString(colorFrag + hdr + colorReset)
		} else {
			buf.WriteString(hdr)
		}
		if funcLine != "" {
			// git formats the header in a 128-byte buffer, newline included.
			f := funcLine
			if n := 128 - len(hdr) - 2; len(f) > n {
				f = f[:n]
			}
			buf.WriteByte(' ')
			buf.WriteString(patchText(f, color)) // (a file's line)
		}
		buf.WriteByte('\n')

		i := s1
		for k := h; k <= e; k++ {
			c := changes[k]
			for ; i < c.i1; i++ {
				line(' ', a[i], "")
			}
			for _, s := range a[c.i1 : c.i1+c.n1] {
				line('-', s, colorOld)
			}
			for _, s := range b[c.i2 : c.i2+c.n2] {
				line('+', s, colorNew)
			}
			i = c.i1 + c.n1
		}
		for ; i < e1; i++ {
			line(' ', a[i], "")
		}
		h = e + 1
	}
}

// hunkRange formats one side of a hunk header as git does: "start,count", with ",1" left out,
// and for an empty range the line before it as start.
func hunkRange(start, count int) string {
	if count == 0 {
		start--
	}
	if count == 1 {
		return strconv.Itoa(start)
	}
	return strconv.Itoa(start) + "," + strconv.Itoa(count)
}

// gitFuncName is git's default hunk-header function finder (xdiff's def_ff): a line starting
// with a letter, '_' or '$', cut to 80 bytes, without trailing whitespace.
func gitFuncName(line string) (string, bool) {
	if line == "" {
		return "", false
	}
	c := line[0]
	if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '$') {
		return "", false
	}
	if len(line) > 80 {
		line = line[:80]
	}
	// git's isspace: space, tab, newline and carriage return.
	line = strings.TrimRight(line, " \t\n\r")
	return line, line != ""
}

// splitLines splits b after each newline; the last line lacks one when b does not end in one.
func splitLines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	lines := make([]string, 0, bytes.Count(b, []byte{'\n'})+1)
	s := string(b)
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			lines = append(lines, s)
			break
		}
		lines = append(lines, s[:i+1])
		s = s[i+1:]
	}
	return lines
}

// diffLines aligns the lines of a and b and returns the blocks that differ, in order.
func diffLines(a, b []string) []change {
	// Trim the common prefix and suffix first: cheap, and it keeps the differ's input small.
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	if len(ma) == 0 && len(mb) == 0 {
		return nil
	}
	var changes []change
	if len(ma) == 0 || len(mb) == 0 || len(ma)+len(mb) > maxDiffLines {
		changes = []change{{0, len(ma), 0, len(mb)}}
	} else if changes = myersLines(ma, mb); changes == nil {
		changes = []change{{0, len(ma), 0, len(mb)}}
	}
	for i := range changes {
		changes[i].i1 += pre
		changes[i].i2 += pre
	}
	return changes
}

// validGitMode reports whether m looks like a git file mode: six octal digits.
func validGitMode(m string) bool {
	if len(m) != 6 {
		return false
	}
	for i := 0; i < len(m); i++ {
		if m[i] < '0' || m[i] > '7' {
			return false
		}
	}
	return true
}

// modeType is the file-type part of a git mode (S_IFMT): "100" for regular files,
// "120" for symlinks, "160" for gitlinks.
func modeType(m string) string { return m[:3] }

// QuotePath is name as git writes a path in a patch header and in `git diff --stat`
// (quotePath): as is, or C-quoted, so that no two names read alike and none holds a
// control character.
func QuotePath(name string) string { return quotePath("", name) }

// quotePath returns prefix+name as git writes a path in a patch header: as is, or, if it holds
// a control character, '"', '\\' or a non-ASCII byte, C-quoted in double quotes with octal
// escapes (git's quote_c_style with core.quotePath on).
func quotePath(prefix, name string) string {
	s := prefix + name
	needs := false
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			needs = true
			break
		}
	}
	if !needs {
		return s
	}
	var q strings.Builder
	q.Grow(len(s) + 8)
	q.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"', '\\':
			q.WriteByte('\\')
			q.WriteByte(c)
		case '\a':
			q.WriteString(`\a`)
		case '\b':
			q.WriteString(`\b`)
		case '\t':
			q.WriteString(`\t`)
		case '\n':
			q.WriteString(`\n`)
		case '\v':
			q.WriteString(`\v`)
		case '\f':
			q.WriteString(`\f`)
		case '\r':
			q.WriteString(`\r`)
		default:
			if c < 0x20 || c >= 0x7f {
				q.WriteByte('\\')
				q.WriteByte('0' + c>>6)
				q.WriteByte('0' + c>>3&7)
				q.WriteByte('0' + c&7)
			} else {
				q.WriteByte(c)
			}
		}
	}
	q.WriteByte('"')
	return q.String()
}
