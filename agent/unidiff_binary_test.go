package agent

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// git's base85 lines (base85.c): a length letter, then 5 digits of git's
// alphabet per 4 bytes, the last group padded with zeros. The first is
// the line git writes for the empty side of every binary patch (the zlib
// stream of nothing, at git's level).
func TestUnidiffBase85Lines(t *testing.T) {
	seq := make([]byte, 53)
	for i := range seq {
		seq[i] = byte(i)
	}
	for _, c := range []struct {
		in   []byte
		want string
	}{
		{[]byte{0x78, 0x01, 0x03, 0x00, 0, 0, 0, 1}, "HcmV?d00001\n"},
		{bytes.Repeat([]byte{0xff}, 5), "E|NsC0{{R30\n"},
		// 52 bytes a line at most: the 53rd begins another.
		{seq, "z009C61O)~M2nh-c3=Iws5D^j+6crX17#SKH9337XAR!_nBqb&%C@Cr{EG;fCFflSS\nAGynhq\n"},
	} {
		var out bytes.Buffer
		bw := bufio.NewWriter(&out)
		l := &base85Lines{w: bw}
		for _, b := range c.in { // a byte at a time: lines do not follow the writes
			l.Write([]byte{b})
		}
		l.flush()
		bw.Flush()
		if out.String() != c.want {
			t.Errorf("base85 lines of % x:\ngot  %q\nwant %q", c.in, out.String(), c.want)
		}
	}
}

// udBinaryDiffFile is udDiffFile with each side's binary flag as DiffWith
// sets it.
func udBinaryDiffFile(path string, oldT, newT udTree) DiffFile {
	d := udDiffFile(path, oldT, newT)
	d.OldBinary, d.NewBinary = isBinary(d.Old), isBinary(d.New)
	return d
}

// udApplyBoth checks that git apply turns oldT into newT with patch, and
// git apply -R turns newT back into oldT, byte for byte.
func udApplyBoth(t *testing.T, oldT, newT udTree, patch []byte) {
	t.Helper()
	pf := filepath.Join(t.TempDir(), "p.diff")
	if err := os.WriteFile(pf, patch, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := udInitTree(t, oldT)
	udRun(t, dir, nil, "apply", pf)
	if d := udTreeDiff(udReadTree(t, dir), newT); d != "" {
		t.Fatalf("git apply did not give the new tree:\n%s\npatch:\n%s", d, patch)
	}
	dir = udInitTree(t, newT)
	udRun(t, dir, nil, "apply", "-R", pf)
	if d := udTreeDiff(udReadTree(t, dir), oldT); d != "" {
		t.Fatalf("git apply -R did not give the old tree:\n%s\npatch:\n%s", d, patch)
	}
}

// A binary side makes the uncoloured section a git binary patch, as
// `git diff --binary` writes it (full index line, a literal of each side),
// so git apply and git apply -R take the whole patch, text files with it:
// "Binary files ... differ" made git apply refuse every section. Coloured
// (a terminal), it stays the short form. A link's half of a type change is
// text, whatever the file on the other side.
func TestUnidiffBinaryPatchApplies(t *testing.T) {
	big := pseudoRandom(100_003) // many lines, the last one short
	big[0] = 0
	oldT := udTree{
		"mod.bin":    udReg("\x00old\x01\x02"),
		"gone.bin":   udReg("\x00gone"),
		"chmod.bin":  udReg("\x00same"),
		"both.bin":   udReg("\x00a"),
		"big.bin":    udReg(string(big)),
		"tolink.bin": udReg("\x00bytes"),
		"fromlink":   udLink("target/x"),
		"totext":     udReg("\x00was binary"),
		"fromtext":   udReg("text\n"),
		"fill.bin":   udReg(""),
		"notes.txt":  udReg("one\n"),
	}
	newT := udTree{
		"mod.bin":    udReg("\x00new\x01\x03"),
		"made.bin":   udExec("\x00\x00made"),
		"chmod.bin":  udExec("\x00same"),
		"both.bin":   udExec("\x00b"),
		"big.bin":    udReg(string(big[:90_000]) + "x"),
		"tolink.bin": udLink("build/app"),
		"fromlink":   udReg("\x00now a file"),
		"totext":     udReg("text now\n"),
		"fromtext":   udReg("\x00binary now"),
		"fill.bin":   udReg("\x00"),
		"notes.txt":  udReg("two\n"),
	}
	var patch, colored bytes.Buffer
	for _, p := range udSortedPaths(oldT, newT) {
		d := udBinaryDiffFile(p, oldT, newT)
		a, r, err := WriteGitDiff(&patch, d, false)
		if err != nil {
			t.Fatalf("WriteGitDiff(%q): %v", p, err)
		}
		ca, cr, err := DiffCounts(d)
		if err != nil || ca != a || cr != r {
			t.Errorf("%s: DiffCounts +%d -%d (%v), WriteGitDiff +%d -%d", p, ca, cr, err, a, r)
		}
		if _, _, err := WriteGitDiff(&colored, d, true); err != nil {
			t.Fatal(err)
		}
	}
	udApplyBoth(t, oldT, newT, patch.Bytes())
	for _, want := range []string{
		"diff --git a/mod.bin b/mod.bin\nindex " + GitBlobID([]byte("\x00old\x01\x02")) + ".." + GitBlobID([]byte("\x00new\x01\x03")) + " 100644\nGIT binary patch\nliteral 6\n",
		"diff --git a/made.bin b/made.bin\nnew file mode 100755\nindex 0000000000000000000000000000000000000000.." + GitBlobID([]byte("\x00\x00made")) + "\nGIT binary patch\nliteral 6\n",
		"GIT binary patch\nliteral 0\n", // (a deleted file: nothing after it)
		// A mode change of the same bytes: the mode lines alone.
		"diff --git a/chmod.bin b/chmod.bin\nold mode 100644\nnew mode 100755\ndiff --git",
		// The link's half in text.
		"diff --git a/tolink.bin b/tolink.bin\nnew file mode 120000\n--- /dev/null\n+++ b/tolink.bin\n@@ -0,0 +1 @@\n+build/app\n\\ No newline at end of file\n",
		"diff --git a/fromlink b/fromlink\ndeleted file mode 120000\n--- a/fromlink\n+++ /dev/null\n@@ -1 +0,0 @@\n-target/x\n\\ No newline at end of file\n",
	} {
		if !bytes.Contains(patch.Bytes(), []byte(want)) {
			t.Errorf("patch lacks %q:\n%s", want, patch.Bytes())
		}
	}
	plain := string(udStripANSI(colored.Bytes()))
	for _, want := range []string{
		"Binary files a/mod.bin and b/mod.bin differ\n",
		"Binary files a/tolink.bin and /dev/null differ\n",
		"+build/app",
	} {
		if !strings.Contains(plain, want) {
			t.Errorf("coloured patch lacks %q:\n%s", want, plain)
		}
	}
	if strings.Contains(plain, "GIT binary patch") {
		t.Errorf("coloured patch holds a binary patch:\n%.2000s", plain)
	}
}

// udStream is a side given as a stream, as DiffWith gives one too large
// to hold.
func udStream(s string) (func(io.Writer) error, int64) {
	return func(w io.Writer) error {
		_, err := io.WriteString(w, s)
		return err
	}, int64(len(s))
}

// A text section with a side too large to hold is one hunk, every line
// before removed and every line after added, streamed: git apply and git
// apply -R take it, and it counts what it holds. A binary one streams a
// binary patch. A stream that writes other bytes than its size says (the
// file changed while being read) fails.
func TestUnidiffStreamedSidesApply(t *testing.T) {
	lines := func(n int, last string) string {
		return strings.Repeat("a line\n", n) + last
	}
	oldT := udTree{
		"log.txt":  udReg(lines(500, "")),
		"nonl.txt": udReg(lines(3, "end")),
		"gone.txt": udReg(lines(10, "")),
		"crlf.txt": udReg("x\r\ny\r\n"),
		"blob.bin": udReg("\x00" + lines(40, "")),
	}
	newT := udTree{
		"log.txt":  udReg(lines(500, "one more\n")),
		"nonl.txt": udExec(lines(4, "")),
		"new.txt":  udReg(lines(2, "tail")),
		"crlf.txt": udReg("x\r\nz\r\n"),
		"blob.bin": udReg("\x00" + lines(41, "")),
	}
	var patch bytes.Buffer
	for _, p := range udSortedPaths(oldT, newT) {
		d := udBinaryDiffFile(p, oldT, newT)
		if d.OldMode != "" {
			d.OldStream, d.OldSize = udStream(string(d.Old))
			d.Old = nil
		}
		if d.NewMode != "" {
			d.NewStream, d.NewSize = udStream(string(d.New))
			d.New = nil
		}
		a, r, err := WriteGitDiff(&patch, d, false)
		if err != nil {
			t.Fatalf("WriteGitDiff(%q): %v", p, err)
		}
		if p == "log.txt" && (a != 501 || r != 500) {
			t.Errorf("log.txt: +%d -%d, want +501 -500", a, r)
		}
	}
	udApplyBoth(t, oldT, newT, patch.Bytes())
	for _, want := range []string{
		"diff --git a/log.txt b/log.txt\n--- a/log.txt\n+++ b/log.txt\n@@ -1,500 +1,501 @@\n-a line\n",
		"-a line\n-end\n\\ No newline at end of file\n+a line\n",
		"diff --git a/new.txt b/new.txt\nnew file mode 100644\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,3 @@\n",
		"diff --git a/blob.bin b/blob.bin\nindex " + GitBlobID([]byte(oldT["blob.bin"].data)) + "..",
	} {
		if !bytes.Contains(patch.Bytes(), []byte(want)) {
			t.Errorf("patch lacks %q:\n%s", want, patch.Bytes())
		}
	}

	d := DiffFile{Path: "f", OldMode: "100644", NewMode: "100644", Old: []byte("a\n")}
	d.NewStream, _ = udStream("b\nc\n")
	d.NewSize = 3 // the file changed since its size was taken
	if _, _, err := WriteGitDiff(io.Discard, d, false); err == nil || !strings.Contains(err.Error(), "changed while being compared") {
		t.Errorf("a stream of other bytes than its size: %v", err)
	}
}

// A file is binary, as git decides (xdiff's buffer_is_binary), when its
// first 8,000 bytes hold a NUL: not 8 KiB. A NUL between the two made
// rook print "Binary files ... differ" for a file git diffs as text.
func TestIsBinaryProbesGitsFirst8000Bytes(t *testing.T) {
	b := append(bytes.Repeat([]byte("line\n"), 1620), []byte("x\x00y\nend\n")...)
	if i := bytes.IndexByte(b, 0); i < 8000 || i >= 8<<10 {
		t.Fatalf("the NUL is at %d, not in [8000, 8192)", i)
	}
	if isBinary(b) {
		t.Errorf("isBinary: true for a NUL at byte %d; git's buffer_is_binary reads only the first 8000 bytes, so git diff shows this file as text", bytes.IndexByte(b, 0))
	}
	// A NUL inside git's first 8000 bytes is binary to both.
	if c := b[len(b)-7-7999:]; bytes.IndexByte(c, 0) != 7999 || !isBinary(c) {
		t.Errorf("isBinary: false for a NUL at byte 7999, in the first 8000 bytes")
	}
}
