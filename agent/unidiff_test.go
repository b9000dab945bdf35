package agent

import (
	"bytes"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// udFile is one file of a test tree: its content and git mode.
type udFile struct {
	data string
	mode string // "100644", "100755" or "120000"
}

// udTree maps slash-separated paths to files.
type udTree map[string]udFile

func udReg(s string) udFile  { return udFile{s, "100644"} }
func udExec(s string) udFile { return udFile{s, "100755"} }
func udLink(s string) udFile { return udFile{s, "120000"} }

// udGit returns the git binary, skipping the test without one.
func udGit(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/git"); err == nil {
		return "/usr/bin/git"
	}
	p, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	return p
}

// udRun runs git in dir with a configuration isolated from the machine's, returning stdout.
// A non-zero exit is a failure unless the exit code is in okCodes.
func udRun(t *testing.T, dir string, okCodes []int, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(udGit(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+dir,
		"LC_ALL=C", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		code := -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		for _, c := range okCodes {
			if c == code {
				return stdout.Bytes()
			}
		}
		t.Fatalf("git %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes()
}

// udInitTree makes a fresh git repository holding tree in its working directory.
func udInitTree(t *testing.T, tree udTree) string {
	t.Helper()
	dir := t.TempDir()
	udRun(t, dir, nil, "init", "-q")
	for p, f := range tree {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch f.mode {
		case "120000":
			err = os.Symlink(f.data, full)
		case "100755":
			err = os.WriteFile(full, []byte(f.data), 0o755)
		default:
			err = os.WriteFile(full, []byte(f.data), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// udReadTree reads back the files and symlinks under dir, outside .git.
func udReadTree(t *testing.T, dir string) udTree {
	t.Helper()
	tree := udTree{}
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if e.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		if e.Type()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			tree[rel] = udLink(target)
			return nil
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if info.Mode()&0o100 != 0 {
			tree[rel] = udExec(string(data))
		} else {
			tree[rel] = udReg(string(data))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

func udSortedPaths(trees ...udTree) []string {
	seen := map[string]bool{}
	var paths []string
	for _, tr := range trees {
		for p := range tr {
			if !seen[p] {
				seen[p] = true
				paths = append(paths, p)
			}
		}
	}
	sort.Strings(paths)
	return paths
}

// udDiffFile builds the DiffFile of path between two trees.
func udDiffFile(path string, oldT, newT udTree) DiffFile {
	d := DiffFile{Path: path}
	if f, ok := oldT[path]; ok {
		d.Old, d.OldMode = []byte(f.data), f.mode
	}
	if f, ok := newT[path]; ok {
		d.New, d.NewMode = []byte(f.data), f.mode
	}
	return d
}

// udPatch concatenates the patches of every path that differs between oldT and newT, and
// returns the lines added and removed per path, as WriteGitDiff reported them.
func udPatch(t *testing.T, oldT, newT udTree, color bool) ([]byte, map[string][2]int) {
	t.Helper()
	var patch bytes.Buffer
	counts := map[string][2]int{}
	for _, p := range udSortedPaths(oldT, newT) {
		d := udDiffFile(p, oldT, newT)
		if d.OldMode == d.NewMode && bytes.Equal(d.Old, d.New) {
			continue
		}
		a, r, err := WriteGitDiff(&patch, d, color)
		if err != nil {
			t.Fatalf("WriteGitDiff(%q): %v", p, err)
		}
		counts[p] = [2]int{a, r}
		if d.OldMode != "" && d.NewMode != "" && d.OldMode[:3] == d.NewMode[:3] {
			if ca, cr := CountLines(d.Old, d.New); ca != a || cr != r {
				t.Errorf("%s: CountLines = +%d -%d, WriteGitDiff = +%d -%d", p, ca, cr, a, r)
			}
		}
	}
	return patch.Bytes(), counts
}

func udTreeDiff(got, want udTree) string {
	var b strings.Builder
	for _, p := range udSortedPaths(got, want) {
		g, gok := got[p]
		w, wok := want[p]
		switch {
		case !gok:
			fmt.Fprintf(&b, "  %s: missing (want %s %q)\n", p, w.mode, w.data)
		case !wok:
			fmt.Fprintf(&b, "  %s: unexpected (%s %q)\n", p, g.mode, g.data)
		case g != w:
			fmt.Fprintf(&b, "  %s: got %s %q, want %s %q\n", p, g.mode, g.data, w.mode, w.data)
		}
	}
	return b.String()
}

// udCheckApply checks that git apply turns oldT into newT with the patch WriteGitDiff writes,
// and git apply -R turns newT back into oldT, byte-exactly; and that git's --numstat of the
// patch agrees with the counts WriteGitDiff returned.
func udCheckApply(t *testing.T, oldT, newT udTree) []byte {
	t.Helper()
	patch, counts := udPatch(t, oldT, newT, false)
	if len(patch) == 0 {
		if d := udTreeDiff(oldT, newT); d != "" {
			t.Fatalf("empty patch for differing trees:\n%s", d)
		}
		return patch
	}
	pf := filepath.Join(t.TempDir(), "p.diff")
	if err := os.WriteFile(pf, patch, 0o644); err != nil {
		t.Fatal(err)
	}
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf(format+"\npatch:\n%s", append(args, patch)...)
	}

	dir := udInitTree(t, oldT)
	udRun(t, dir, nil, "apply", "--check", pf)
	udRun(t, dir, nil, "apply", pf)
	if d := udTreeDiff(udReadTree(t, dir), newT); d != "" {
		fail("git apply did not give the new tree:\n%s", d)
	}

	dir = udInitTree(t, newT)
	udRun(t, dir, nil, "apply", "--check", "-R", pf)
	udRun(t, dir, nil, "apply", "-R", pf)
	if d := udTreeDiff(udReadTree(t, dir), oldT); d != "" {
		fail("git apply -R did not give the old tree:\n%s", d)
	}

	// git apply --numstat: "added<TAB>removed<TAB>path" per section; a type change has two.
	got := map[string][2]int{}
	for _, ln := range strings.Split(strings.TrimSuffix(string(udRun(t, dir, nil, "apply", "--numstat", "-z", pf)), "\x00"), "\x00") {
		f := strings.SplitN(ln, "\t", 3)
		if len(f) != 3 {
			fail("bad numstat line %q", ln)
		}
		if f[0] == "-" { // binary: none in these tests
			continue
		}
		a, _ := strconv.Atoi(f[0])
		r, _ := strconv.Atoi(f[1])
		c := got[f[2]]
		got[f[2]] = [2]int{c[0] + a, c[1] + r}
	}
	for p, c := range counts {
		if got[p] != c {
			fail("%s: WriteGitDiff counted +%d -%d, git apply --numstat +%d -%d", p, c[0], c[1], got[p][0], got[p][1])
		}
	}

	// The coloured patch must be the plain one once its colour codes are dropped, its
	// lines as a terminal is shown them (patchText).
	colored, _ := udPatch(t, oldT, newT, true)
	shown := strings.Split(string(patch), "\n")
	for i, l := range shown {
		shown[i] = patchText(l, true)
	}
	if plain := udStripANSI(colored); string(plain) != strings.Join(shown, "\n") {
		fail("coloured patch without colours differs:\n%s", plain)
	}
	return patch
}

var udANSI = regexp.MustCompile("\x1b\\[[0-9;]*m")

func udStripANSI(b []byte) []byte { return udANSI.ReplaceAll(b, nil) }

// udGitDiff is what real git diff says of oldT -> newT (committed, then staged), without
// its "index" lines.
func udGitDiff(t *testing.T, oldT, newT udTree) []byte {
	t.Helper()
	dir := udInitTree(t, oldT)
	udRun(t, dir, nil, "add", "-A")
	udRun(t, dir, nil, "commit", "-q", "--allow-empty", "-m", "old")
	for p := range oldT {
		if err := os.Remove(filepath.Join(dir, filepath.FromSlash(p))); err != nil {
			t.Fatal(err)
		}
	}
	for p, f := range newT {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch f.mode {
		case "120000":
			err = os.Symlink(f.data, full)
		case "100755":
			err = os.WriteFile(full, []byte(f.data), 0o755)
		default:
			err = os.WriteFile(full, []byte(f.data), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	udRun(t, dir, nil, "add", "-A")
	out := udRun(t, dir, nil, "diff", "--cached", "--no-renames", "--no-color", "--no-ext-diff", "--no-textconv")
	return regexp.MustCompile(`(?m)^index [0-9a-f]+\.\.[0-9a-f]+( [0-7]+)?\n`).ReplaceAll(out, nil)
}

func udLines(n int, f func(i int) string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString(f(i))
		b.WriteByte('\n')
	}
	return b.String()
}

// udNum is n numbered lines "line 1".."line n" (each starting with a letter, so git finds
// them as hunk-header function names).
func udNum(n int) string { return udLines(n, func(i int) string { return "line " + strconv.Itoa(i) }) }

// udEdit replaces line i (1-based) of s with repl[i].
func udEdit(s string, repl map[int]string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, r := range repl {
		lines[i-1] = r + "\n"
	}
	return strings.Join(lines, "")
}

// udCases are the fixed old -> new trees; sameAsGit marks those where git diff must print
// byte-for-byte what WriteGitDiff prints (no ambiguity in the line alignment).
var udCases = []struct {
	name      string
	old, new  udTree
	sameAsGit bool
}{
	{"modify first line", udTree{"f.txt": udReg(udNum(10))}, udTree{"f.txt": udReg(udEdit(udNum(10), map[int]string{1: "first!"}))}, true},
	{"modify middle line", udTree{"f.txt": udReg(udNum(20))}, udTree{"f.txt": udReg(udEdit(udNum(20), map[int]string{10: "middle!"}))}, true},
	{"modify last line", udTree{"f.txt": udReg(udNum(10))}, udTree{"f.txt": udReg(udEdit(udNum(10), map[int]string{10: "last!"}))}, true},
	{"insert at start", udTree{"f.txt": udReg(udNum(10))}, udTree{"f.txt": udReg("new\n" + udNum(10))}, true},
	{"append at end", udTree{"f.txt": udReg(udNum(10))}, udTree{"f.txt": udReg(udNum(10) + "more\nand more\n")}, true},
	{"delete start", udTree{"f.txt": udReg(udNum(10))}, udTree{"f.txt": udReg(strings.SplitAfterN(udNum(10), "\n", 3)[2])}, true},
	{"delete end", udTree{"f.txt": udReg(udNum(10))}, udTree{"f.txt": udReg(udNum(7))}, true},
	{"two hunks", udTree{"f.txt": udReg(udNum(30))}, udTree{"f.txt": udReg(udEdit(udNum(30), map[int]string{3: "x", 25: "y"}))}, true},
	{"merged hunks gap 6", udTree{"f.txt": udReg(udNum(30))}, udTree{"f.txt": udReg(udEdit(udNum(30), map[int]string{10: "x", 17: "y"}))}, true},
	{"split hunks gap 7", udTree{"f.txt": udReg(udNum(30))}, udTree{"f.txt": udReg(udEdit(udNum(30), map[int]string{10: "x", 18: "y"}))}, true},
	{"many hunks", udTree{"f.txt": udReg(udNum(100))}, udTree{"f.txt": udReg(udEdit(udNum(100), map[int]string{2: "a", 9: "b", 16: "c", 40: "d", 41: "e", 99: "f"}))}, true},
	{"indented lines no funcname", udTree{"f.txt": udReg(udLines(20, func(i int) string { return "  l" + strconv.Itoa(i) }))},
		udTree{"f.txt": udReg(udLines(20, func(i int) string {
			if i == 12 {
				return "  changed"
			}
			return "  l" + strconv.Itoa(i)
		}))}, true},
	{"go funcname", udTree{"m.go": udReg("package m\n\nfunc A() {\n\tx := 1\n\ty := 2\n\tz := 3\n\tw := 4\n\treturn\n}\n")},
		udTree{"m.go": udReg("package m\n\nfunc A() {\n\tx := 1\n\ty := 2\n\tz := 3\n\tw := 5\n\treturn\n}\n")}, true},
	{"long funcname", udTree{"f.txt": udReg(strings.Repeat("abcdefghij", 12) + "  \n" + udLines(8, func(i int) string { return " " + strconv.Itoa(i) }))},
		udTree{"f.txt": udReg(strings.Repeat("abcdefghij", 12) + "  \n" + udLines(8, func(i int) string {
			if i == 7 {
				return " seven"
			}
			return " " + strconv.Itoa(i)
		}))}, true},
	{"funcname trailing whitespace", udTree{"f.txt": udReg("top \t \r\n" + udLines(10, func(i int) string { return "\t" + strconv.Itoa(i) }))},
		udTree{"f.txt": udReg("top \t \r\n" + udEdit(udLines(10, func(i int) string { return "\t" + strconv.Itoa(i) }), map[int]string{9: "\tnine"}))}, true},
	{"old has newline new not", udTree{"f.txt": udReg("a\nb\nc\n")}, udTree{"f.txt": udReg("a\nb\nc")}, true},
	{"old lacks newline new has", udTree{"f.txt": udReg("a\nb\nc")}, udTree{"f.txt": udReg("a\nb\nc\n")}, true},
	{"both lack newline, last changed", udTree{"f.txt": udReg("a\nb\nc")}, udTree{"f.txt": udReg("a\nb\nd")}, true},
	{"both lack newline, change far above", udTree{"f.txt": udReg(udNum(20) + "end")}, udTree{"f.txt": udReg(udEdit(udNum(20), map[int]string{2: "two"}) + "end")}, true},
	{"both lack newline, change near end", udTree{"f.txt": udReg(udNum(20) + "end")}, udTree{"f.txt": udReg(udEdit(udNum(20), map[int]string{19: "nineteen"}) + "end")}, true},
	{"lacking newline gains lines", udTree{"f.txt": udReg("a\nb")}, udTree{"f.txt": udReg("a\nb\nc\nd")}, true},
	{"single line no newline", udTree{"f.txt": udReg("x")}, udTree{"f.txt": udReg("y")}, true},
	{"empty to content", udTree{"f.txt": udReg("")}, udTree{"f.txt": udReg("a\nb\n")}, true},
	{"content to empty", udTree{"f.txt": udReg("a\nb\n")}, udTree{"f.txt": udReg("")}, true},
	{"empty to no-newline content", udTree{"f.txt": udReg("")}, udTree{"f.txt": udReg("a")}, true},
	{"no-newline content to empty", udTree{"f.txt": udReg("a")}, udTree{"f.txt": udReg("")}, true},
	{"added file", udTree{}, udTree{"dir/new.txt": udReg("hello\nworld\n")}, true},
	{"added file no newline", udTree{}, udTree{"n.txt": udReg("hello")}, true},
	{"added empty file", udTree{}, udTree{"e.txt": udReg("")}, true},
	{"added executable", udTree{}, udTree{"run.sh": udExec("#!/bin/sh\necho hi\n")}, true},
	{"removed file", udTree{"dir/old.txt": udReg("bye\nnow\n"), "keep": udReg("k\n")}, udTree{"keep": udReg("k\n")}, true},
	{"removed empty file", udTree{"e.txt": udReg(""), "keep": udReg("k\n")}, udTree{"keep": udReg("k\n")}, true},
	{"removed executable no newline", udTree{"run.sh": udExec("#!/bin/sh\necho hi"), "keep": udReg("k\n")}, udTree{"keep": udReg("k\n")}, true},
	{"mode change only", udTree{"s.sh": udReg("echo\n")}, udTree{"s.sh": udExec("echo\n")}, true},
	{"mode change only, back", udTree{"s.sh": udExec("echo\n")}, udTree{"s.sh": udReg("echo\n")}, true},
	{"mode change empty file", udTree{"s.sh": udReg("")}, udTree{"s.sh": udExec("")}, true},
	{"mode and content change", udTree{"s.sh": udReg(udNum(12))}, udTree{"s.sh": udExec(udEdit(udNum(12), map[int]string{6: "six"}))}, true},
	{"crlf lines", udTree{"w.txt": udReg("a\r\nb\r\nc\r\nd\r\n")}, udTree{"w.txt": udReg("a\r\nB\r\nc\r\nd\r\n")}, true},
	{"crlf to lf", udTree{"w.txt": udReg("a\r\nb\r\nc\r\n")}, udTree{"w.txt": udReg("a\nb\nc\n")}, true},
	{"crlf no final newline", udTree{"w.txt": udReg("a\r\nb\r\nc\r")}, udTree{"w.txt": udReg("a\r\nb\r\nC\r")}, true},
	{"path with spaces", udTree{"my dir/a file.txt": udReg("one\ntwo\n")}, udTree{"my dir/a file.txt": udReg("one\n2\n")}, true},
	{"added path with spaces", udTree{}, udTree{"my dir/a file.txt": udReg("one\n")}, true},
	{"removed path with spaces", udTree{"a b": udReg("one\n")}, udTree{}, true},
	{"non-ascii path", udTree{"café/naïve.txt": udReg("un\n")}, udTree{"café/naïve.txt": udReg("deux\n")}, true},
	{"added non-ascii path with space", udTree{}, udTree{"données à voir.txt": udReg("x\n")}, true},
	{"quote backslash tab in path", udTree{"we\"ird\\na\tme.txt": udReg("1\n2\n")}, udTree{"we\"ird\\na\tme.txt": udReg("1\n3\n")}, true},
	{"newline in path", udTree{"line\nbreak": udReg("1\n")}, udTree{"line\nbreak": udExec("2\n")}, true},
	{"symlink target change", udTree{"l": udLink("target/one")}, udTree{"l": udLink("target/two")}, true},
	{"symlink added", udTree{}, udTree{"sub/l": udLink("../x y")}, true},
	{"symlink removed", udTree{"l": udLink("somewhere")}, udTree{}, true},
	{"file to symlink", udTree{"f": udReg("a\nb\n")}, udTree{"f": udLink("b")}, true},
	{"symlink to executable", udTree{"f": udLink("b")}, udTree{"f": udExec("#!/bin/sh\n")}, true},
	{"several files", udTree{"a": udReg(udNum(5)), "b/c": udReg("x\n"), "d": udExec("y\n")},
		udTree{"a": udReg(udNum(6)), "b/e": udReg("x\n"), "d": udReg("y\nz\n"), "f": udReg("")}, true},
	{"large file scattered edits", udTree{"big.txt": udReg(udNum(5000))}, udTree{"big.txt": udReg(udBigEdit(udNum(5000)))}, true},
	// Repeated lines: several alignments are minimal, and git may pick another one.
	{"repeated lines", udTree{"r": udReg("a\na\na\nb\na\na\n")}, udTree{"r": udReg("a\nb\na\nb\na\n")}, false},
	{"complete rewrite", udTree{"r": udReg(udNum(8))}, udTree{"r": udReg(udLines(5, func(i int) string { return "other " + strconv.Itoa(i) }))}, true},
}

// udBigEdit edits, deletes and inserts lines all over s.
func udBigEdit(s string) string {
	lines := strings.SplitAfter(s, "\n")
	var out []string
	for i, l := range lines {
		switch {
		case i%397 == 5:
			out = append(out, "edited "+l)
		case i%613 == 100:
			// deleted
		case i%521 == 7:
			out = append(out, l, "inserted A\n", "inserted B\n")
		default:
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}

func TestUnidiffGitApply(t *testing.T) {
	udGit(t)
	for _, c := range udCases {
		t.Run(c.name, func(t *testing.T) {
			udCheckApply(t, c.old, c.new)
		})
	}
}

func TestUnidiffSameAsGitDiff(t *testing.T) {
	udGit(t)
	for _, c := range udCases {
		if !c.sameAsGit {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			ours, _ := udPatch(t, c.old, c.new, false)
			theirs := udGitDiff(t, c.old, c.new)
			if !bytes.Equal(ours, theirs) {
				t.Errorf("WriteGitDiff:\n%s\ngit diff:\n%s", ours, theirs)
			}
		})
	}
}

// TestUnidiffNoIndexSame compares with git diff --no-index on two loose files.
func TestUnidiffNoIndexSame(t *testing.T) {
	udGit(t)
	for _, c := range []struct{ old, new string }{
		{udNum(10), udEdit(udNum(10), map[int]string{5: "five"})},
		{"a\nb\nc", "a\nB\nc\n"},
		{udNum(40), udEdit(udNum(40), map[int]string{1: "1", 20: "20", 40: "40"}) + "tail"},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "old"), []byte(c.old), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "new"), []byte(c.new), 0o644); err != nil {
			t.Fatal(err)
		}
		out := udRun(t, dir, []int{1}, "diff", "--no-index", "--no-color", "old", "new")
		out = regexp.MustCompile(`(?m)^index .*\n`).ReplaceAll(out, nil)
		out = bytes.ReplaceAll(out, []byte("a/old"), []byte("a/f.txt"))
		out = bytes.ReplaceAll(out, []byte("b/new"), []byte("b/f.txt"))
		var ours bytes.Buffer
		if _, _, err := WriteGitDiff(&ours, DiffFile{Path: "f.txt", Old: []byte(c.old), New: []byte(c.new), OldMode: "100644", NewMode: "100644"}, false); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(ours.Bytes(), out) {
			t.Errorf("WriteGitDiff:\n%s\ngit diff --no-index:\n%s", ours.Bytes(), out)
		}
	}
}

// TestUnidiffRandom applies random line-level edits to random files and checks the patch
// with git apply both ways.
func TestUnidiffRandom(t *testing.T) {
	udGit(t)
	iterations := 200
	if testing.Short() {
		iterations = 30
	}
	rng := rand.New(rand.NewSource(20240611))
	vocab := []string{"a\n", "b\n", "c\n", "a\n", "}\n", "\n", "  x := 1\n", "func f() {\n", "crlf\r\n", "tab\there\n", "é ü\n", "dup\n", "dup\n"}
	randText := func(n int) []string {
		lines := make([]string, n)
		for i := range lines {
			if rng.Intn(4) == 0 {
				lines[i] = "uniq" + strconv.Itoa(rng.Intn(1000)) + "\n"
			} else {
				lines[i] = vocab[rng.Intn(len(vocab))]
			}
		}
		return lines
	}
	join := func(lines []string, noEOL bool) string {
		s := strings.Join(lines, "")
		if noEOL {
			s = strings.TrimSuffix(s, "\n")
		}
		return s
	}
	randMode := func() string {
		if rng.Intn(5) == 0 {
			return "100755"
		}
		return "100644"
	}
	names := []string{"f0", "f1.txt", "d/f2", "d/e/f3", "sp ace", "ünï"}
	for it := 0; it < iterations; it++ {
		oldT, newT := udTree{}, udTree{}
		for _, name := range names {
			if rng.Intn(3) == 0 {
				continue
			}
			// a random file...
			var oldLines []string
			switch rng.Intn(6) {
			case 0:
				oldLines = nil
			case 1:
				oldLines = randText(200 + rng.Intn(200))
			default:
				oldLines = randText(rng.Intn(40))
			}
			oldNoEOL := len(oldLines) > 0 && rng.Intn(3) == 0
			old := udFile{join(oldLines, oldNoEOL), randMode()}
			// ...and a random edit of it.
			newLines := append([]string(nil), oldLines...)
			for k := rng.Intn(8); k > 0; k-- {
				pos := 0
				if len(newLines) > 0 {
					pos = rng.Intn(len(newLines))
				}
				switch op := rng.Intn(3); {
				case op == 0 || len(newLines) == 0: // insert a run
					run := randText(1 + rng.Intn(4))
					newLines = append(newLines[:pos], append(run, newLines[pos:]...)...)
				case op == 1: // delete a run
					end := min(pos+1+rng.Intn(4), len(newLines))
					newLines = append(newLines[:pos], newLines[end:]...)
				default: // replace a line
					newLines[pos] = randText(1)[0]
				}
			}
			newNoEOL := oldNoEOL
			if rng.Intn(4) == 0 {
				newNoEOL = !newNoEOL
			}
			newNoEOL = newNoEOL && len(newLines) > 0
			nw := udFile{join(newLines, newNoEOL), old.mode}
			if rng.Intn(6) == 0 {
				nw.mode = randMode()
			}
			if rng.Intn(15) == 0 { // now a symlink, or was one
				if rng.Intn(2) == 0 {
					nw = udLink("t" + strconv.Itoa(rng.Intn(9)))
				} else {
					old = udLink("t" + strconv.Itoa(rng.Intn(9)))
				}
			}
			switch rng.Intn(8) {
			case 0: // added
				newT[name] = nw
			case 1: // removed
				oldT[name] = old
			default:
				oldT[name], newT[name] = old, nw
			}
		}
		t.Run("iter"+strconv.Itoa(it), func(t *testing.T) {
			udCheckApply(t, oldT, newT)
		})
		if t.Failed() {
			return
		}
	}
}

// Blob names a caller gives for contents it did not read.
const (
	udBlobA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	udBlobB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

func TestUnidiffHeaders(t *testing.T) {
	for _, c := range []struct {
		name string
		d    DiffFile
		want string
	}{
		{"binary modified", DiffFile{Path: "img.png", OldMode: "100644", NewMode: "100644", NoBody: true, OldBlob: udBlobA, NewBlob: udBlobB},
			"diff --git a/img.png b/img.png\nindex aaaaaaa..bbbbbbb 100644\nBinary files a/img.png and b/img.png differ\n"},
		{"binary added", DiffFile{Path: "img.png", NewMode: "100644", NoBody: true, NewBlob: udBlobB},
			"diff --git a/img.png b/img.png\nnew file mode 100644\nindex 0000000..bbbbbbb\nBinary files /dev/null and b/img.png differ\n"},
		{"binary removed, quoted", DiffFile{Path: "é.bin", OldMode: "100755", NoBody: true, OldBlob: udBlobA},
			"diff --git \"a/\\303\\251.bin\" \"b/\\303\\251.bin\"\ndeleted file mode 100755\nindex aaaaaaa..0000000\nBinary files \"a/\\303\\251.bin\" and /dev/null differ\n"},
		{"binary mode change", DiffFile{Path: "x", OldMode: "100644", NewMode: "100755", NoBody: true, OldBlob: udBlobA, NewBlob: udBlobB},
			"diff --git a/x b/x\nold mode 100644\nnew mode 100755\nindex aaaaaaa..bbbbbbb\nBinary files a/x and b/x differ\n"},
		{"nobody, same content, mode change", DiffFile{Path: "x", Old: []byte("a"), New: []byte("a"), OldMode: "100644", NewMode: "100755", NoBody: true},
			"diff --git a/x b/x\nold mode 100644\nnew mode 100755\n"},
		{"symlink", DiffFile{Path: "l", Old: []byte("a"), New: []byte("b"), OldMode: "120000", NewMode: "120000"},
			"diff --git a/l b/l\n--- a/l\n+++ b/l\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n"},
		{"control chars quoted", DiffFile{Path: "a\x01\x7f\a\b\f\v\r", NewMode: "100644"},
			"diff --git \"a/a\\001\\177\\a\\b\\f\\v\\r\" \"b/a\\001\\177\\a\\b\\f\\v\\r\"\nnew file mode 100644\n"},
		{"unchanged", DiffFile{Path: "u", Old: []byte("same\n"), New: []byte("same\n"), OldMode: "100644", NewMode: "100644"}, ""},
	} {
		var b bytes.Buffer
		a, r, err := WriteGitDiff(&b, c.d, false)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if b.String() != c.want {
			t.Errorf("%s:\ngot  %q\nwant %q", c.name, b.String(), c.want)
		}
		if c.d.NoBody && (a != 0 || r != 0) {
			t.Errorf("%s: NoBody counted +%d -%d", c.name, a, r)
		}
	}
}

func TestUnidiffColor(t *testing.T) {
	var b bytes.Buffer
	d := DiffFile{Path: "a b", Old: []byte("x\ny\n"), New: []byte("x\nz"), OldMode: "100644", NewMode: "100755"}
	if _, _, err := WriteGitDiff(&b, d, true); err != nil {
		t.Fatal(err)
	}
	want := "\x1b[1mdiff --git a/a b b/a b\x1b[m\n" +
		"\x1b[1mold mode 100644\x1b[m\n" +
		"\x1b[1mnew mode 100755\x1b[m\n" +
		"\x1b[1m--- a/a b\x1b[m\t\n" +
		"\x1b[1m+++ b/a b\x1b[m\t\n" +
		"\x1b[36m@@ -1,2 +1,2 @@\x1b[m\n" +
		" x\n" +
		"\x1b[31m-y\x1b[m\n" +
		"\x1b[32m+z\x1b[m\n" +
		"\\ No newline at end of file\n"
	if b.String() != want {
		t.Errorf("got  %q\nwant %q", b.String(), want)
	}
}

// A coloured patch is for a terminal: the files' text in it (a line, the
// function name git puts after @@, an imported Codex patch's lines and
// headers) is shown without a rune that would act on the terminal
// (patchText), and rook's colours stay. A CR ending a line stays (a CRLF
// file), and so does a U+FFFD the file holds.
func TestUnidiffColorShowsNoControls(t *testing.T) {
	evil := "f\x1b]52;c;eA==\x07 \u009b2J \u202e \xff \uFFFD\tx"
	shown := "f\uFFFD]52;c;eA==\uFFFD \uFFFD2J \uFFFD \uFFFD \uFFFD\tx"
	var b bytes.Buffer
	d := DiffFile{Path: "a", Old: []byte(evil + "\n1\n2\n3\n4\nold\r\n"), New: []byte(evil + "\n1\n2\n3\n4\nnew\r\n"), OldMode: "100644", NewMode: "100644"}
	if _, _, err := WriteGitDiff(&b, d, true); err != nil {
		t.Fatal(err)
	}
	want := "\x1b[36m@@ -3,4 +3,4 @@\x1b[m " + shown + "\n" +
		" 2\n 3\n 4\n" +
		"\x1b[31m-old\r\x1b[m\n" +
		"\x1b[32m+new\r\x1b[m\n"
	if got := b.String(); !strings.HasSuffix(got, want) {
		t.Errorf("WriteGitDiff coloured: %q, want it to end in %q", got, want)
	}
	b.Reset()
	if _, _, err := WriteGitDiff(&b, d, false); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); !strings.Contains(got, "@@ -3,4 +3,4 @@ "+evil+"\n") {
		t.Errorf("WriteGitDiff plain: %q, want the function line as it is", got)
	}

	b.Reset()
	writeCodexChunks(&b, []codexChunk{{Context: evil, Lines: []string{" " + evil, "-" + evil, "+x"}}}, true)
	writeContentLines(&b, '+', []string{evil + "\n"}, true)
	writeUnifiedHunks(&b, "@@ -1 +1 @@ "+evil+"\n-"+evil+"\n+y\n", true)
	want = "\x1b[36m@@ -?,2 +?,2 @@\x1b[m " + shown + "\n" +
		" " + shown + "\n" +
		"\x1b[31m-" + shown + "\x1b[m\n" +
		"\x1b[32m+x\x1b[m\n" +
		"\x1b[32m+" + shown + "\x1b[m\n" +
		"\x1b[36m@@ -1 +1 @@ " + shown + "\x1b[m\n" +
		"\x1b[31m-" + shown + "\x1b[m\n" +
		"\x1b[32m+y\x1b[m\n"
	if got := b.String(); got != want {
		t.Errorf("an imported Codex patch coloured:\ngot  %q\nwant %q", got, want)
	}
}

func TestUnidiffErrors(t *testing.T) {
	for _, d := range []DiffFile{
		{Path: "x"}, // exists neither before nor after
		{Path: "", OldMode: "100644", NewMode: "100644"}, // no path
		{Path: "x", OldMode: "100644", NewMode: "10075\n"},
		{Path: "x", OldMode: "644", NewMode: "100644"},
	} {
		var b bytes.Buffer
		if _, _, err := WriteGitDiff(&b, d, false); err == nil {
			t.Errorf("%+v: no error", d)
		}
		if b.Len() != 0 {
			t.Errorf("%+v: wrote %q", d, b.String())
		}
	}
}

func TestUnidiffCountLines(t *testing.T) {
	for _, c := range []struct {
		old, new      string
		added, remove int
	}{
		{"", "", 0, 0},
		{"a\n", "a\n", 0, 0},
		{"", "a\nb", 2, 0},
		{"a\nb\n", "", 0, 2},
		{"a\nb\n", "a\nb", 1, 1},
		{"a\nb\nc\n", "a\nc\n", 0, 1},
		{udNum(100), udEdit(udNum(100), map[int]string{3: "x", 50: "y"}), 2, 2},
	} {
		a, r := CountLines([]byte(c.old), []byte(c.new))
		if a != c.added || r != c.remove {
			t.Errorf("CountLines(%q, %q) = +%d -%d, want +%d -%d", c.old, c.new, a, r, c.added, c.remove)
		}
	}
}

func TestUnidiffHunkRange(t *testing.T) {
	for _, c := range []struct {
		start, count int
		want         string
	}{{1, 1, "1"}, {1, 0, "0,0"}, {5, 0, "4,0"}, {3, 7, "3,7"}, {10, 1, "10"}} {
		if got := hunkRange(c.start, c.count); got != c.want {
			t.Errorf("hunkRange(%d, %d) = %q, want %q", c.start, c.count, got, c.want)
		}
	}
}

// A binary file modified in place (its mode kept) has a section with no
// header line but "diff --git": git apply then misreads the whole patch
// ("inconsistent old filename"), failing the text sections after it too.
// As git does, the section has an index line naming both blobs, so the
// patch parses, `--exclude` applies the rest, and the names are git's.
func TestUnidiffBinaryIndexLine(t *testing.T) {
	oldT := udTree{"a.bin": udReg("\x00old"), "b.txt": udReg("one\n"), "c.bin": udReg("\x00gone")}
	newT := udTree{"a.bin": udReg("\x00new"), "b.txt": udReg("one\ntwo\n"), "n.bin": udExec("\x00made")}
	var patch bytes.Buffer
	for _, p := range udSortedPaths(oldT, newT) {
		d := udDiffFile(p, oldT, newT)
		d.NoBody = strings.HasSuffix(p, ".bin")
		if _, _, err := WriteGitDiff(&patch, d, false); err != nil {
			t.Fatal(err)
		}
	}
	pf := filepath.Join(t.TempDir(), "p.diff")
	if err := os.WriteFile(pf, patch.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := udInitTree(t, oldT)
	stat := string(udRun(t, dir, nil, "apply", "--numstat", pf))
	if want := "-\t-\ta.bin\n1\t0\tb.txt\n-\t-\tc.bin\n-\t-\tn.bin\n"; stat != want {
		t.Errorf("git apply --numstat:\n%s\nwant:\n%s\npatch:\n%s", stat, want, patch.Bytes())
	}
	udRun(t, dir, nil, "apply", "--exclude=*.bin", pf)
	if got := udReadTree(t, dir)["b.txt"]; got != newT["b.txt"] {
		t.Errorf("b.txt after git apply --exclude: %q", got.data)
	}
	abbrev := func(data string) string {
		h := filepath.Join(t.TempDir(), "blob")
		if err := os.WriteFile(h, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(udRun(t, dir, nil, "hash-object", h)))[:7]
	}
	for _, want := range []string{
		"diff --git a/a.bin b/a.bin\nindex " + abbrev("\x00old") + ".." + abbrev("\x00new") + " 100644\nBinary files a/a.bin and b/a.bin differ\n",
		"diff --git a/c.bin b/c.bin\ndeleted file mode 100644\nindex " + abbrev("\x00gone") + "..0000000\nBinary files a/c.bin and /dev/null differ\n",
		"diff --git a/n.bin b/n.bin\nnew file mode 100755\nindex 0000000.." + abbrev("\x00made") + "\nBinary files /dev/null and b/n.bin differ\n",
	} {
		if !bytes.Contains(patch.Bytes(), []byte(want)) {
			t.Errorf("patch lacks %q:\n%s", want, patch.Bytes())
		}
	}
}

// A file too large to diff is hashed as a stream for its index line: the
// name git gives its bytes, and an error if it changed since it was
// compared.
func TestDiskBlobID(t *testing.T) {
	dir := t.TempDir()
	data := bytes.Repeat([]byte("a line of text\n"), 20000)
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	cur, err := statDisk(dir, "big.txt")
	if err != nil {
		t.Fatal(err)
	}
	got, err := diskBlobID(dir, "big.txt", cur)
	if err != nil || got != GitBlobID(data) {
		t.Fatalf("diskBlobID = %s, %v; want %s", got, err, GitBlobID(data))
	}
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), append(data, 'x'), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := diskBlobID(dir, "big.txt", cur); err == nil || !strings.Contains(err.Error(), "changed while being compared") {
		t.Fatalf("a file changed since: %v", err)
	}
}
