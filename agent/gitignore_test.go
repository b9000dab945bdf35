package agent

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

type ignoreCheck struct {
	path string
	dir  bool
	want bool
}

type ignoreCase struct {
	name   string
	files  map[string]string // .gitignore directory ("" for the root) -> content
	checks []ignoreCheck
}

func igRoot(content string) map[string]string { return map[string]string{"": content} }

// igF and igD are a file and a directory check.
func igF(p string, want bool) ignoreCheck { return ignoreCheck{path: p, want: want} }
func igD(p string, want bool) ignoreCheck { return ignoreCheck{path: p, dir: true, want: want} }

var ignoreCases = []ignoreCase{
	{"empty", igRoot(""), []ignoreCheck{igF("a", false), igD("a", false)}},
	{"comments and blank lines", igRoot("# comment\n\n   \n#*.log\n*.tmp\n"), []ignoreCheck{
		igF("# comment", false), igF("#*.log", false), igF("a.log", false), igF("a.tmp", true),
	}},
	{"escaped hash and bang", igRoot("\\#hash\n\\!bang\n"), []ignoreCheck{
		igF("#hash", true), igF("!bang", true), igF("hash", false), igF("bang", false), igF("x/#hash", true),
	}},
	{"bang then hash is a pattern", igRoot("*\n!#keep\n"), []ignoreCheck{igF("#keep", false), igF("other", true)}},
	{"trailing spaces trimmed", igRoot("foo   \n"), []ignoreCheck{igF("foo", true), igF("foo ", false)}},
	{"escaped trailing space kept", igRoot("bar\\ \nbaz\\  \nqux\\ \\  \n"), []ignoreCheck{
		igF("bar ", true), igF("bar", false), igF("baz ", true), igF("baz  ", false), igF("qux  ", true), igF("qux", false),
	}},
	{"inner spaces kept", igRoot("a b\n"), []ignoreCheck{igF("a b", true), igF("ab", false)}},
	{"trailing tab kept", igRoot("tab\t\n"), []ignoreCheck{igF("tab\t", true), igF("tab", false)}},
	{"CRLF line endings", igRoot("*.log\r\n/out\r\n"), []ignoreCheck{igF("a.log", true), igD("out", true), igF("x/out", false)}},
	{"byte order mark", igRoot("\ufeff*.log\n"), []ignoreCheck{igF("a.log", true)}},
	{"no final newline", igRoot("a\nb"), []ignoreCheck{igF("a", true), igF("b", true), igF("c", false)}},
	{"star extension", igRoot("*.log\n"), []ignoreCheck{
		igF("a.log", true), igF("x/y/a.log", true), igD("dir.log", true), igF("log", false), igF("a.log.txt", false), igF(".log", true),
	}},
	{"star matches dotfiles", igRoot("*\n"), []ignoreCheck{igF(".hidden", true), igD(".git2", true)}},
	{"case sensitive", igRoot("*.LOG\n"), []ignoreCheck{igF("a.log", false), igF("a.LOG", true)}},
	{"negation re-includes", igRoot("*.log\n!important.log\n"), []ignoreCheck{
		igF("a.log", true), igF("important.log", false), igF("sub/important.log", false), igF("sub/b.log", true),
	}},
	{"negation before pattern loses", igRoot("!important.log\n*.log\n"), []ignoreCheck{igF("important.log", true)}},
	{"last match decides", igRoot("*.log\n!*.log\n*.log\n!keep.log\n"), []ignoreCheck{igF("a.log", true), igF("keep.log", false)}},
	{"negation without earlier match", igRoot("!foo\n"), []ignoreCheck{igF("foo", false)}},
	{"lone bang and slash", igRoot("!\n/\n"), []ignoreCheck{igF("a", false), igD("a", false)}},
	{"anchored root", igRoot("/build\n"), []ignoreCheck{
		igD("build", true), igF("build", true), igD("src/build", false), igF("src/build", false), igD("builds", false),
	}},
	{"dir only", igRoot("build/\n"), []ignoreCheck{
		igD("build", true), igF("build", false), igD("src/build", true), igF("src/build", false),
	}},
	{"anchored dir only", igRoot("/build/\n"), []ignoreCheck{igD("build", true), igF("build", false), igD("src/build", false)}},
	{"dir only wildcard", igRoot("*.d/\n"), []ignoreCheck{igD("x.d", true), igF("x.d", false), igD("a/y.d", true)}},
	{"dir only negation", igRoot("*.cache\n!keep.cache/\n"), []ignoreCheck{
		igD("keep.cache", false), igF("keep.cache", true), igD("x.cache", true),
	}},
	{"basename at any depth", igRoot("node_modules\n"), []ignoreCheck{
		igD("node_modules", true), igD("a/node_modules", true), igD("a/b/node_modules", true), igF("node_modules", true),
		igD("node_modules2", false), igD("my_node_modules", false),
	}},
	{"middle slash anchors", igRoot("foo/bar\n"), []ignoreCheck{
		igF("foo/bar", true), igD("foo/bar", true), igF("x/foo/bar", false), igF("foo/x/bar", false), igF("bar", false),
	}},
	{"middle slash dir only", igRoot("a/b/\n"), []ignoreCheck{igD("a/b", true), igF("a/b", false), igD("x/a/b", false)}},
	{"leading slash wildcard", igRoot("/*.c\n"), []ignoreCheck{igF("a.c", true), igF("x/a.c", false)}},
	{"middle slash wildcard", igRoot("doc/*.txt\n"), []ignoreCheck{
		igF("doc/a.txt", true), igF("doc/x/a.txt", false), igF("x/doc/a.txt", false),
	}},
	{"star does not cross slash", igRoot("foo/*\n"), []ignoreCheck{
		igD("foo", false), igF("foo/x", true), igD("foo/x", true), igF("foo/x/y", false),
	}},
	{"escaped slash", igRoot("a\\/b\n"), []ignoreCheck{igF("a/b", true), igF("x/a/b", false)}},
	{"double star leading", igRoot("**/cache\n"), []ignoreCheck{
		igD("cache", true), igD("a/cache", true), igD("a/b/cache", true), igD("a/cachex", false), igF("a/cache", true),
	}},
	{"double star leading with path", igRoot("**/a/b\n"), []ignoreCheck{
		igF("a/b", true), igF("x/a/b", true), igF("x/y/a/b", true), igF("x/a/c", false), igF("a/x/b", false),
	}},
	{"double star trailing", igRoot("logs/**\n"), []ignoreCheck{
		igD("logs", false), igF("logs/a", true), igD("logs/a", true), igF("logs/a/b", true), igF("logsx/a", false), igF("x/logs/a", false),
	}},
	{"double star middle", igRoot("a/**/b\n"), []ignoreCheck{
		igF("a/b", true), igF("a/x/b", true), igF("a/x/y/b", true), igF("a/xb", false), igF("x/a/b", false), igF("a/b/c", false),
	}},
	{"double star middle glob", igRoot("docs/**/*.md\n"), []ignoreCheck{
		igF("docs/a.md", true), igF("docs/x/a.md", true), igF("docs/x/y/a.md", true), igF("a.md", false),
		igF("other/docs/a.md", false), igF("docs/a.txt", false),
	}},
	{"double star dir only", igRoot("a/**/\n"), []ignoreCheck{igD("a/x", true), igF("a/x", false), igD("a", false)}},
	{"double star alone", igRoot("**\n"), []ignoreCheck{igF("a", true), igD("a", true)}},
	{"double star slash alone", igRoot("**/\n"), []ignoreCheck{igD("a", true), igF("a", false)}},
	{"anchored double star", igRoot("/**\n"), []ignoreCheck{igF("a", true), igD("b", true)}},
	{"double star inside a name is a star", igRoot("a**b\nx/**y\n"), []ignoreCheck{
		igF("ab", true), igF("axxb", true), igF("q/axb", true), igF("x/y", true), igF("x/zzy", true), igF("x/z/y", false),
	}},
	{"several double stars", igRoot("**/a/**/b/**\n"), []ignoreCheck{
		igF("a/b/c", true), igF("x/a/y/z/b/c/d", true), igD("a/b", false), igF("a/c", false),
	}},
	{"question mark", igRoot("data?.csv\n"), []ignoreCheck{
		igF("data1.csv", true), igF("data.csv", false), igF("data12.csv", false), igF("x/dataz.csv", true),
	}},
	{"question mark not slash", igRoot("a?b\n"), []ignoreCheck{igF("a/b", false), igF("axb", true)}},
	{"class", igRoot("[abc].txt\n"), []ignoreCheck{igF("a.txt", true), igF("c.txt", true), igF("d.txt", false), igF("ab.txt", false)}},
	{"class negated bang", igRoot("file[!0-9].dat\n"), []ignoreCheck{igF("filex.dat", true), igF("file5.dat", false)}},
	{"class negated caret", igRoot("[^a]z\n"), []ignoreCheck{igF("bz", true), igF("az", false)}},
	{"class range", igRoot("[a-c]x\n[0-9][0-9]y\n"), []ignoreCheck{
		igF("bx", true), igF("dx", false), igF("42y", true), igF("4ay", false),
	}},
	{"class literal bracket and dash", igRoot("[]]x\n[a-]y\n[-a]z\n[!]]w\n"), []ignoreCheck{
		igF("]x", true), igF("ax", false), igF("-y", true), igF("ay", true), igF("by", false), igF("-z", true),
		igF("aw", true), igF("]w", false),
	}},
	{"class escapes", igRoot("[\\]]y\n[\\!]v\n"), []ignoreCheck{igF("]y", true), igF("\\y", false), igF("!v", true)}},
	{"posix classes", igRoot("[[:digit:]]n\n[[:upper:]]u\n[[:alpha:][:digit:]_]i\n[[:space:]]s\n[[:punct:]]p\n"), []ignoreCheck{
		igF("5n", true), igF("xn", false), igF("Au", true), igF("au", false), igF("_i", true), igF("7i", true), igF("zi", true),
		igF("-i", false), igF(" s", true), igF("xs", false), igF("!p", true), igF("ap", false),
	}},
	{"bracket without colon class is literal", igRoot("[[:a]x\n"), []ignoreCheck{igF("[x", true), igF(":x", true), igF("ax", true), igF("bx", false)}},
	{"unknown posix class never matches", igRoot("[[:nope:]]x\n"), []ignoreCheck{igF("ax", false), igF("[x", false)}},
	{"unterminated class never matches", igRoot("[abc\nfoo\\\n"), []ignoreCheck{igF("[abc", false), igF("a", false), igF("foo\\", false), igF("foo", false)}},
	{"escaped wildcards", igRoot("\\*.txt\n\\?q\n\\[x]\n"), []ignoreCheck{
		igF("*.txt", true), igF("a.txt", false), igF("?q", true), igF("aq", false), igF("[x]", true), igF("x", false),
	}},
	{"escaped ordinary character", igRoot("\\a\\b\n"), []ignoreCheck{igF("ab", true)}},
	{"nested negation", map[string]string{"": "*.log\n", "sub": "!*.log\n"}, []ignoreCheck{
		igF("a.log", true), igF("sub/a.log", false), igF("sub/deep/a.log", false), igF("other/a.log", true),
	}},
	{"nested deeper wins", map[string]string{"": "!a.tmp\n", "sub": "*.tmp\n", "sub/deep": "!keep.tmp\n"}, []ignoreCheck{
		igF("a.tmp", false), igF("sub/a.tmp", true), igF("sub/deep/a.tmp", true), igF("sub/deep/keep.tmp", false), igF("sub/keep.tmp", true),
	}},
	{"nested ancestor cannot override", map[string]string{"": "*.txt\n!sub/keep.txt\n", "sub": "keep.txt\n"}, []ignoreCheck{
		igF("keep.txt", true), igF("sub/keep.txt", true), igF("sub/other.txt", true),
	}},
	{"nested anchoring", map[string]string{"sub": "/anchored\nfoo/bar\n"}, []ignoreCheck{
		igF("sub/anchored", true), igF("anchored", false), igF("sub/x/anchored", false),
		igF("sub/foo/bar", true), igF("foo/bar", false), igF("sub/x/foo/bar", false),
	}},
	{"nested applies only below its dir", map[string]string{"sub": "*.txt\nsub\n"}, []ignoreCheck{
		igF("sub/a.txt", true), igF("sub/x/a.txt", true), igF("a.txt", false), igF("subx/a.txt", false),
		igD("sub", false), igD("sub/sub", true), igF("other/sub", false),
	}},
	{"nested two levels", map[string]string{"a/b": "c\n/d/e\n"}, []ignoreCheck{
		igF("a/b/c", true), igF("a/b/x/c", true), igF("a/c", false), igF("a/b/d/e", true), igF("a/b/x/d/e", false), igD("a/b", false),
	}},
	{"nested double star", map[string]string{"sub": "**/gen\nout/**\n"}, []ignoreCheck{
		igD("sub/gen", true), igD("sub/x/gen", true), igD("gen", false), igF("sub/out/a", true), igD("sub/out", false), igF("out/a", false),
	}},
	// Match answers for the path alone: a path inside an excluded directory
	// is not reported unless a pattern matches it, and a negation inside an
	// excluded directory "re-includes" it here although git never looks
	// there. Walking top-down makes both moot (the git cross-check skips
	// these paths because an ancestor is ignored).
	{"parent directory not consulted", igRoot("build/\n!build/keep\n"), []ignoreCheck{
		igD("build", true), igF("build/x.o", false), igF("build/keep", false),
	}},
}

func igBuild(files map[string]string) *Ignore {
	ig := NewIgnore()
	// Root first; TestIgnoreAddFileOrderAcrossDirs adds deepest first.
	dirs := make([]string, 0, len(files))
	for dir := range files {
		dirs = append(dirs, dir)
	}
	sort.Strings(dirs)
	for _, dir := range dirs {
		ig.AddFile(dir, []byte(files[dir]))
	}
	return ig
}

func TestIgnoreTable(t *testing.T) {
	for _, tc := range ignoreCases {
		t.Run(tc.name, func(t *testing.T) {
			ig := igBuild(tc.files)
			for _, c := range tc.checks {
				if got := ig.Match(c.path, c.dir); got != c.want {
					t.Errorf("Match(%q, dir=%v) = %v, want %v (files %q)", c.path, c.dir, got, c.want, tc.files)
				}
			}
		})
	}
}

func TestIgnoreAddFileOrderAcrossDirs(t *testing.T) {
	// Deeper files win whatever order they are added in.
	ig := NewIgnore()
	ig.AddFile("sub/deep", []byte("!keep.tmp\n"))
	ig.AddFile("sub", []byte("*.tmp\n"))
	ig.AddFile("", []byte("!*.tmp\n"))
	for _, c := range []ignoreCheck{igF("a.tmp", false), igF("sub/a.tmp", true), igF("sub/deep/keep.tmp", false), igF("sub/deep/x.tmp", true)} {
		if got := ig.Match(c.path, c.dir); got != c.want {
			t.Errorf("Match(%q) = %v, want %v", c.path, got, c.want)
		}
	}
}

func TestIgnoreAddFileTwiceAppends(t *testing.T) {
	ig := NewIgnore()
	ig.AddFile("", []byte("*.log\n"))
	ig.AddFile("", []byte("!keep.log\n"))
	if !ig.Match("a.log", false) || ig.Match("keep.log", false) {
		t.Errorf("second AddFile for the same dir should append: a.log=%v keep.log=%v", ig.Match("a.log", false), ig.Match("keep.log", false))
	}
}

func TestIgnoreDirNormalisation(t *testing.T) {
	for _, dir := range []string{"sub", "sub/", "/sub", "./sub", "sub/./"} {
		ig := NewIgnore()
		ig.AddFile(dir, []byte("x\n"))
		if !ig.Match("sub/x", false) || ig.Match("x", false) {
			t.Errorf("AddFile(%q): sub/x=%v x=%v", dir, ig.Match("sub/x", false), ig.Match("x", false))
		}
	}
	for _, dir := range []string{"", ".", "/", "./"} {
		ig := NewIgnore()
		ig.AddFile(dir, []byte("/x\n"))
		if !ig.Match("x", false) {
			t.Errorf("AddFile(%q) is the root: x not ignored", dir)
		}
	}
}

func TestIgnoreZeroAndNil(t *testing.T) {
	var zero Ignore
	if zero.Match("a", false) {
		t.Error("zero Ignore matched")
	}
	zero.AddFile("", []byte("a\n"))
	if !zero.Match("a", false) {
		t.Error("zero Ignore after AddFile did not match")
	}
	var nilIg *Ignore
	if nilIg.Match("a", false) {
		t.Error("nil Ignore matched")
	}
	ig := NewIgnore()
	ig.AddFile("", []byte("*\n"))
	if ig.Match("", true) {
		t.Error("the root itself should never be ignored")
	}
}

func TestIgnoreTrimTrailingSpaces(t *testing.T) {
	for in, want := range map[string]string{
		"a":       "a",
		"a  ":     "a",
		"a\\ ":    "a\\ ",
		"a\\  ":   "a\\ ",
		"a \\ ":   "a \\ ",
		"a\\":     "a\\",
		"a\\\\ ":  "a\\\\",
		"a\t ":    "a\t",
		"   ":     "",
		"a b  c ": "a b  c",
	} {
		if got := ignoreTrimTrailingSpaces(in); got != want {
			t.Errorf("ignoreTrimTrailingSpaces(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIgnoreGlob(t *testing.T) {
	for _, c := range []struct {
		pat, name string
		want      bool
	}{
		{"", "", true},
		{"", "a", false},
		{"*", "", true},
		{"*", "abc", true},
		{"a*", "a", true},
		{"*c", "abc", true},
		{"a*c*e", "abcde", true},
		{"a*c*e", "abcdf", false},
		{"*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false},
		{"?", "é", true},
		{"caf?", "café", true},
		{"[é]", "é", true},
		{"[a-z]", "é", false},
		{"\\", "\\", false},
		{"\\\\", "\\", true},
		{"[", "[", false},
		{"[]", "]", false},
		{"[]]", "]", true},
		{"[!]]", "a", true},
		{"[a-]", "-", true},
		{"[\\a-c]", "b", true},
		{"[a-\\c]", "b", true},
		{"[[:alnum:]]", "x", true},
		{"[[:xdigit:]]", "F", true},
		{"[[:xdigit:]]", "g", false},
		{"[[:lower:]]", "a", true},
		{"[[:blank:]]", "\t", true},
		{"[[:cntrl:]]", "\x01", true},
		{"[[:graph:]]", " ", false},
		{"[[:print:]]", " ", true},
		{"[[:digit:]-z]", "-", true}, // "-" after a class is literal
		{"[:]", ":", true},
		{"[[:]", "[", true},
	} {
		if got := ignoreGlob(c.pat, c.name); got != c.want {
			t.Errorf("ignoreGlob(%q, %q) = %v, want %v", c.pat, c.name, got, c.want)
		}
	}
}

// igGitIgnored runs git check-ignore in a fresh repository at dir on the given
// slash-separated paths (which must exist) and returns the ignored ones.
// Paths under an ignored directory are reported ignored by git.
func igGitIgnored(t *testing.T, dir string, paths []string) map[string]bool {
	t.Helper()
	home := t.TempDir()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") && !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "XDG_CONFIG_HOME=") {
			env = append(env, kv)
		}
	}
	// No user or system configuration: no global excludes file.
	env = append(env, "HOME="+home, "XDG_CONFIG_HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
	run := func(stdin []byte, args ...string) ([]byte, error) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = env
		cmd.Stdin = bytes.NewReader(stdin)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 && stderr.Len() == 0 {
				return out, nil // check-ignore: nothing ignored
			}
			return out, fmt.Errorf("git %v: %v: %s", args, err, stderr.String())
		}
		return out, nil
	}
	if _, err := run(nil, "init", "-q"); err != nil {
		t.Fatal(err)
	}
	var in bytes.Buffer
	for _, p := range paths {
		in.WriteString(p)
		in.WriteByte(0)
	}
	out, err := run(in.Bytes(), "check-ignore", "--no-index", "--stdin", "-z")
	if err != nil {
		t.Fatal(err)
	}
	ignored := make(map[string]bool)
	for _, p := range strings.Split(string(out), "\x00") {
		if p != "" {
			ignored[p] = true
		}
	}
	return ignored
}

func igNeedGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on PATH")
	}
}

func igWriteFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// igAncestorIgnored reports whether a proper ancestor directory of p is in set.
func igAncestorIgnored(p string, ignored func(string) bool) bool {
	for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
		if ignored(dir) {
			return true
		}
	}
	return false
}

// TestGitignoreTableAgainstGit checks the expectations of the table against
// git itself: each check gets its own directory holding the case's
// .gitignore files and the checked path.
func TestGitignoreTableAgainstGit(t *testing.T) {
	igNeedGit(t)
	top := t.TempDir()
	type item struct {
		rel   string // relative to top
		want  bool
		label string
	}
	var items []item
	for ci, tc := range ignoreCases {
		ig := igBuild(tc.files)
		for ki, c := range tc.checks {
			// Paths inside a directory Match ignores are out of scope: git
			// reports them ignored, Match answers for the path alone.
			if igAncestorIgnored(c.path, func(dir string) bool { return ig.Match(dir, true) }) {
				continue
			}
			caseDir := fmt.Sprintf("c%d_%d", ci, ki)
			for dir, content := range tc.files {
				igWriteFile(t, filepath.Join(top, caseDir, filepath.FromSlash(dir), ".gitignore"), content)
			}
			full := filepath.Join(top, caseDir, filepath.FromSlash(c.path))
			if c.dir {
				if err := os.MkdirAll(full, 0o755); err != nil {
					t.Fatal(err)
				}
			} else {
				igWriteFile(t, full, "x")
			}
			items = append(items, item{caseDir + "/" + c.path, c.want, fmt.Sprintf("%s: %q dir=%v", tc.name, c.path, c.dir)})
		}
	}
	paths := make([]string, len(items))
	for i, it := range items {
		paths[i] = it.rel
	}
	ignored := igGitIgnored(t, top, paths)
	for _, it := range items {
		if ignored[it.rel] != it.want {
			t.Errorf("%s: git says ignored=%v, table wants %v", it.label, ignored[it.rel], it.want)
		}
	}
	if len(items) < 200 {
		t.Errorf("only %d checks compared with git", len(items))
	}
}

// TestGitignoreMatchesGitCheckIgnore builds a workspace with several nested
// .gitignore files and many files and directories, and checks that a
// top-down walk using Match keeps exactly the paths git does not ignore.
func TestGitignoreMatchesGitCheckIgnore(t *testing.T) {
	igNeedGit(t)
	top := t.TempDir()
	gitignores := map[string]string{
		"": strings.Join([]string{
			"# build products",
			"*.log",
			"!important.log",
			"/build",
			"out/",
			"docs/**/*.md",
			"!docs/keep.md",
			"node_modules",
			"foo/bar",
			"*.tmp",
			"!/keep.tmp",
			"\\#hash",
			"\\!bang",
			"trail\\ ",
			"spaces   ",
			"[abc].txt",
			"file[!0-9].dat",
			"data?.csv",
			"**/cache",
			"logs/**",
			"!logs/keep",
			"a/**/z",
			"[[:digit:]]*.num",
			"",
		}, "\n"),
		"sub":        "!*.log\nlocal\n/anchored\n*.txt\n!b.txt\nsub/\n",
		"sub/deeper": "*.log\n!a.txt\n/x/\n",
		"docs":       "!*.md\n",
		"src":        "*.gen\n!keep/\nkeep\n",
	}
	dirs := []string{
		"build", "src", "src/build", "src/keep", "src/x/keep", "docs", "docs/a", "docs/a/b", "node_modules",
		"src/node_modules", "sub", "sub/x", "sub/sub", "sub/deeper", "sub/deeper/x", "sub/deeper/y/x", "logs",
		"logs/2024", "a", "a/x", "a/x/z", "a/y", "cache", "src/cache", "foo", "foo/bar", "x/foo/bar", "out",
		"src/out", "other", "other/docs",
	}
	files := []string{
		"a.log", "important.log", "keep.tmp", "x.tmp", "README.md", "keep.md", "notes.md", "a.txt", "b.txt",
		"d.txt", "file1.dat", "filex.dat", "data1.csv", "data12.csv", "#hash", "!bang", "trail ", "trail",
		"spaces", "spaces   ", "7.num", "x.num", "local", "anchored", "z", "bar", "build", "out", "keep",
		"x.gen", "cache", "x",
	}
	for dir, content := range gitignores {
		igWriteFile(t, filepath.Join(top, filepath.FromSlash(dir), ".gitignore"), content)
	}
	for _, dir := range dirs {
		if err := os.MkdirAll(filepath.Join(top, filepath.FromSlash(dir)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, dir := range append([]string{""}, dirs...) {
		for _, name := range files {
			full := filepath.Join(top, filepath.FromSlash(dir), name)
			if _, err := os.Lstat(full); err == nil {
				continue // a directory of that name
			}
			igWriteFile(t, full, "x")
		}
	}

	// Every path in the tree, and whether it is a directory.
	isDir := map[string]bool{}
	var all []string
	err := filepath.WalkDir(top, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(top, p)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		if rel == ".git" {
			return filepath.SkipDir
		}
		all = append(all, rel)
		isDir[rel] = e.IsDir()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ignored := igGitIgnored(t, top, all)

	// Mirror a capture: walk top-down, reading each directory's .gitignore
	// on the way in and skipping ignored directories.
	ig := NewIgnore()
	kept := map[string]bool{}
	var walk func(dir string)
	walk = func(dir string) {
		if content, err := os.ReadFile(filepath.Join(top, filepath.FromSlash(dir), ".gitignore")); err == nil {
			ig.AddFile(dir, content)
		}
		entries, err := os.ReadDir(filepath.Join(top, filepath.FromSlash(dir)))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			rel := path.Join(dir, e.Name())
			if rel == ".git" {
				continue
			}
			if ig.Match(rel, e.IsDir()) {
				continue
			}
			kept[rel] = true
			if e.IsDir() {
				walk(rel)
			}
		}
	}
	walk("")

	compared, gitKept, nIgnored := 0, 0, 0
	for _, rel := range all {
		gitKeeps := !ignored[rel] && !igAncestorIgnored(rel, func(dir string) bool { return ignored[dir] })
		if gitKeeps {
			gitKept++
		} else {
			nIgnored++
		}
		if gitKeeps != kept[rel] {
			t.Errorf("%q (dir=%v): git keeps=%v, walk with Match keeps=%v", rel, isDir[rel], gitKeeps, kept[rel])
		}
		// Match itself must agree with git wherever git looks at the path.
		if !igAncestorIgnored(rel, func(dir string) bool { return ignored[dir] }) {
			compared++
			if got := ig.Match(rel, isDir[rel]); got != ignored[rel] {
				t.Errorf("Match(%q, dir=%v) = %v, git check-ignore says %v", rel, isDir[rel], got, ignored[rel])
			}
		}
	}
	t.Logf("%d paths: %d kept, %d ignored by git; %d compared with Match directly", len(all), gitKept, nIgnored, compared)
	if compared < 300 || gitKept < 100 || nIgnored < 100 {
		t.Errorf("tree too small to be a meaningful cross-check")
	}
}

// TestGitignoreRandomAgainstGit compares Match with git on random patterns
// over a small alphabet of names, with a fixed seed.
func TestGitignoreRandomAgainstGit(t *testing.T) {
	igNeedGit(t)
	if testing.Short() {
		t.Skip("creates thousands of files; skipped with -short")
	}
	rng := rand.New(rand.NewSource(1))
	names := []string{"a", "b", "ab", "a.c", "[a]"}
	tokens := []string{"a", "b", "*", "?", "**", "[ab]", "[!a]", "[a-b]", ".c", "\\[a]", "/", "/", "/"}
	randPattern := func() string {
		var sb strings.Builder
		if rng.Intn(4) == 0 {
			sb.WriteString("!")
		}
		for n := 1 + rng.Intn(5); n > 0; n-- {
			sb.WriteString(tokens[rng.Intn(len(tokens))])
		}
		return sb.String()
	}
	// A fixed tree per case: every name at each level, alternately a
	// directory and a file, so that names are files in some places and
	// directories in others; files only at depth 3.
	type entry struct {
		rel string
		dir bool
	}
	var tree []entry
	var add func(prefix string, depth, shift int)
	add = func(prefix string, depth, shift int) {
		for i, x := range names {
			rel := path.Join(prefix, x)
			dir := depth < 3 && (i+shift)%2 == 0
			tree = append(tree, entry{rel, dir})
			if dir {
				add(rel, depth+1, shift+1)
			}
		}
	}
	add("", 1, 0)
	top := t.TempDir()
	type item struct {
		caseDir string
		e       entry
		ig      *Ignore
		content map[string]string
	}
	var items []item
	var paths []string
	const cases = 80
	for ci := 0; ci < cases; ci++ {
		caseDir := fmt.Sprintf("r%d", ci)
		content := map[string]string{}
		var lines []string
		for n := 1 + rng.Intn(3); n > 0; n-- {
			lines = append(lines, randPattern())
		}
		content[""] = strings.Join(lines, "\n") + "\n"
		if rng.Intn(2) == 0 {
			content["a"] = randPattern() + "\n" + randPattern() + "\n"
		}
		ig := NewIgnore()
		for dir, c := range content {
			ig.AddFile(dir, []byte(c))
			igWriteFile(t, filepath.Join(top, caseDir, filepath.FromSlash(dir), ".gitignore"), c)
		}
		for _, e := range tree {
			full := filepath.Join(top, caseDir, filepath.FromSlash(e.rel))
			if e.dir {
				if err := os.MkdirAll(full, 0o755); err != nil {
					t.Fatal(err)
				}
			} else {
				igWriteFile(t, full, "x")
			}
			items = append(items, item{caseDir, e, ig, content})
			paths = append(paths, caseDir+"/"+e.rel)
		}
	}
	ignored := igGitIgnored(t, top, paths)
	compared, nIgnored, failures := 0, 0, 0
	for _, it := range items {
		rel := it.caseDir + "/" + it.e.rel
		if igAncestorIgnored(rel, func(dir string) bool { return ignored[dir] }) {
			continue
		}
		compared++
		if ignored[rel] {
			nIgnored++
		}
		if got := it.ig.Match(it.e.rel, it.e.dir); got != ignored[rel] {
			failures++
			if failures <= 20 {
				t.Errorf("Match(%q, dir=%v) = %v, git says %v; .gitignore files %q", it.e.rel, it.e.dir, got, ignored[rel], it.content)
			}
		}
	}
	t.Logf("%d random checks compared with git, %d ignored", compared, nIgnored)
	if compared < 1000 || nIgnored < 100 {
		t.Errorf("random cross-check too weak: %d compared, %d ignored", compared, nIgnored)
	}
}

// A .gitignore line with many "**" (one a workspace could hold, or an
// attacker could commit) against a deep path: matching it tried every way
// of spreading the path over the "**"s, exponential in their number (8 of
// them took 6 s against a path 40 deep, each more multiplied that), and
// capture hung on it. It answers at once, and the same.
func TestIgnoreManyDoubleStarsDoNotHang(t *testing.T) {
	deep := strings.TrimSuffix(strings.Repeat("a/", 40), "/")
	for _, c := range []struct {
		pattern, path string
		want          bool
	}{
		{strings.Repeat("**/a/", 12) + "b", deep, false},
		{strings.Repeat("**/a/", 12) + "b", deep + "/b", true},
		{strings.Repeat("**/", 30) + "b", deep, false},
		{"x/" + strings.Repeat("**/", 30) + "a", "x/" + deep, true},
	} {
		ig := NewIgnore()
		ig.AddFile("", []byte(c.pattern+"\n"))
		done := make(chan bool, 1)
		go func() { done <- ig.Match(c.path, false) }()
		select {
		case got := <-done:
			if got != c.want {
				t.Errorf("%q against %q: %v, want %v", c.pattern, c.path, got, c.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%q against a path %d deep: no answer in 10 s", c.pattern, strings.Count(c.path, "/")+1)
		}
	}
}

// naiveMatchSegs is ignoreMatchSegs as it was, trying every place again:
// the reference FuzzIgnoreMatch holds the remembering matcher to.
func naiveMatchSegs(segs []string, t string) bool {
	for len(segs) > 0 {
		if segs[0] == "**" {
			rest := segs[1:]
			if len(rest) == 0 {
				return t != ""
			}
			for {
				if naiveMatchSegs(rest, t) {
					return true
				}
				slash := strings.IndexByte(t, '/')
				if slash < 0 {
					return false
				}
				t = t[slash+1:]
			}
		}
		if t == "" {
			return false
		}
		elem := t
		if slash := strings.IndexByte(t, '/'); slash >= 0 {
			elem, t = t[:slash], t[slash+1:]
		} else {
			t = ""
		}
		if !ignoreGlob(segs[0], elem) {
			return false
		}
		segs = segs[1:]
	}
	return t == ""
}

// FuzzIgnoreMatch: any .gitignore and path match without a panic, and
// each pattern of it matches the path as the reference matcher says (for
// patterns and paths small enough for the reference to answer).
func FuzzIgnoreMatch(f *testing.F) {
	f.Add([]byte("*.log\n!keep.log\nbuild/\n/a/**/b\n"), "a/x/y/b", false)
	f.Add([]byte("**/a/**/a/**/b\n"), "a/a/a/a/b", false)
	f.Add([]byte("x/**\n\\#y\n[a-c]?\n[[:digit:]]*/z\n"), "x/1/z", true)
	f.Add([]byte("**/**/**\na\\/b\n\ufeffq\r\n"), "a/b", true)
	f.Fuzz(func(t *testing.T, content []byte, path string, isDir bool) {
		ig := NewIgnore()
		ig.AddFile("", content)
		ig.AddFile("d", content)
		ig.Match(path, isDir)
		ig.Match("d/"+path, isDir)
		if strings.Count(path, "/") > 12 {
			return
		}
		for _, pat := range ig.byDir[""] {
			if !pat.anchored || slices.Index(pat.segs, "**") < 0 {
				continue
			}
			stars := 0
			for _, s := range pat.segs {
				if s == "**" {
					stars++
				}
			}
			if stars > 4 {
				continue
			}
			sub := strings.Trim(path, "/")
			if got, want := ignoreMatchSegs(pat.segs, sub), naiveMatchSegs(pat.segs, sub); got != want {
				t.Fatalf("%q against %q: %v, the reference says %v", pat.segs, sub, got, want)
			}
		}
	})
}
