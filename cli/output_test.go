package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/internal/vfs"
)

// TestTerminalLineOfTitlesAndPaths: what a table cell, a clipped title or
// a path shows of text from transcripts and file names.
func TestTerminalLineOfTitlesAndPaths(t *testing.T) {
	for in, want := range map[string]string{
		"plain title":           "plain title",
		"café ↳ 日本":             "café ↳ 日本",
		"\x1b[2J\x1b]0;pwned\a": "\uFFFD[2J\uFFFD]0;pwned\uFFFD",
		"tab\tnew\nline\r":      "tab new line ",
		"del\x7f c1\u009b31m":   "del\uFFFD c1\uFFFD31m",
		"/src/caf\xe9.jsonl":    "/src/caf\uFFFD.jsonl",
		"\uFFFD kept as it is":  "\uFFFD kept as it is",
		// Bidi controls reorder what follows them on the line.
		"abc\u202Efed.exe \u2066x\u2069 \u200E\u200F\u061C": "abc\uFFFDfed.exe \uFFFDx\uFFFD \uFFFD\uFFFD\uFFFD",
		"\u202A\u202B\u202C\u202D\u2067\u2068":              "\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD",
		"עברית and العربية stay":                            "עברית and العربية stay",
	} {
		if got := terminalLine(in); got != want {
			t.Errorf("terminalLine(%q) = %q, want %q", in, got, want)
		}
	}
	if got := clip("\x1b[31mred title that is long", 10); got != "\uFFFD[31mred …" {
		t.Errorf("clip: %q", got)
	}
}

func TestTerminalTextKeepsLines(t *testing.T) {
	in := "ambiguous:\n  \x1b[2Jid\n\tgive more"
	if got, want := terminalText([]byte(in)), "ambiguous:\n  \uFFFD[2Jid\n\tgive more"; got != want {
		t.Errorf("terminalText(%q) = %q, want %q", in, got, want)
	}
	in = "// check\u202E \u2066}\u2069\u2066 if admin\u2069\n"
	if got, want := terminalText([]byte(in)), "// check\uFFFD \uFFFD}\uFFFD\uFFFD if admin\uFFFD\n"; got != want {
		t.Errorf("terminalText(%q) = %q, want %q", in, got, want)
	}
}

// TestCleanLineOfServerText: an MCP server's tool names and descriptions
// reach the terminal without control characters or bidi controls.
func TestCleanLineOfServerText(t *testing.T) {
	for in, want := range map[string]string{
		"Append \x1b[31mred\x1b[0m text.": "Append ?[31mred?[0m text.",
		"tab\tkept, c1\u009b, del\x7f":    "tab\tkept, c1?, del?",
		"safe\u202Eexe.txt \u2066x\u2069": "safe?exe.txt ?x?",
		"\u200E\u200F\u061C\u2028":        "????",
		"café 日本":                         "café 日本",
	} {
		if got := cleanLine(in); got != want {
			t.Errorf("cleanLine(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestJSONAsked(t *testing.T) {
	for args, want := range map[string]bool{
		"--json frob":           true,
		"frob --json=1":         true,
		"--json=true x":         true,
		"--json=false frob":     false,
		"frob -- --json":        false,
		"--json=false --json x": true,
		"--json --json=0 x":     false,
		"--json=yes x":          true,
		"--json --json=no x":    false,
		"--json=t x":            false,
		"--json=TRUE x":         false,
		"frob":                  false,
	} {
		if got := jsonAsked(strings.Fields(args)); got != want {
			t.Errorf("jsonAsked(%s) = %v", args, got)
		}
	}
}

// TestExplainPermission: a file the user gave that rook may not read is
// what to check, not the store; a file of the store is the store's.
func TestExplainPermission(t *testing.T) {
	home := "/home/u/.rook"
	user := fmt.Errorf("read input: %w", &fs.PathError{Op: "open", Path: "/work/secret.txt", Err: fs.ErrPermission})
	if got, want := explain(user, home), "read input: open /work/secret.txt: permission denied: check the permissions of /work/secret.txt"; got != want {
		t.Errorf("user's file:\n got %q\nwant %q", got, want)
	}
	store := fmt.Errorf("open dictionaries: %w", &fs.PathError{Op: "open", Path: home + "/dict", Err: fs.ErrPermission})
	if got, want := explain(store, home), "open dictionaries: open /home/u/.rook/dict: permission denied: check the permissions of /home/u/.rook (`rook doctor`)"; got != want {
		t.Errorf("store's file:\n got %q\nwant %q", got, want)
	}
	// A stat refused is a directory above that cannot be searched: the
	// file's own permissions are not what to check.
	under := &fs.PathError{Op: "lstat", Path: "/work/src/sub/s.go", Err: fs.ErrPermission}
	if got, want := explain(under, home), "lstat /work/src/sub/s.go: permission denied: check the permissions of /work/src/sub and the directories above it"; got != want {
		t.Errorf("a file under a directory that cannot be searched:\n got %q\nwant %q", got, want)
	}
	// A restore putting a workspace file back by rename, refused (the
	// file immutable): the file and its directory, not the store.
	put := fmt.Errorf("restore: %w", &os.LinkError{Op: "rename", Old: "/work/.rook-restore-1.tmp", New: "/work/b.txt", Err: syscall.EPERM})
	if got, want := explain(put, home), "restore: rename /work/.rook-restore-1.tmp /work/b.txt: operation not permitted: check the permissions of /work/b.txt and of its directory /work"; got != want {
		t.Errorf("a workspace file put back by rename:\n got %q\nwant %q", got, want)
	}
	inStore := &os.LinkError{Op: "rename", Old: home + "/x.tmp", New: home + "/x", Err: syscall.EPERM}
	if got := explain(inStore, home); !strings.HasSuffix(got, "check the permissions of /home/u/.rook (`rook doctor`)") {
		t.Errorf("a rename in the store is the store's: %q", got)
	}
	beside := &fs.PathError{Op: "open", Path: "/home/u/.rook-old/x", Err: fs.ErrPermission}
	if got := explain(beside, home); !strings.HasSuffix(got, "check the permissions of /home/u/.rook-old/x") {
		t.Errorf("a directory beside the store's is not the store: %q", got)
	}
	// init making the home in a directory it may not write: that
	// directory is what to check. The home's own permissions (it is not
	// there) and `rook doctor` (which says "run `rook init`") went round
	// in a circle.
	made := fmt.Errorf("create store home: %w", &fs.PathError{Op: "mkdir", Path: home, Err: fs.ErrPermission})
	if got, want := explain(made, home), "create store home: mkdir /home/u/.rook: permission denied: check the permissions of /home/u, the directory it is made in"; got != want {
		t.Errorf("the home made where it may not be:\n got %q\nwant %q", got, want)
	}
	above := fmt.Errorf("create store home: %w", &fs.PathError{Op: "mkdir", Path: "/srv/rook", Err: fs.ErrPermission})
	if got, want := explain(above, "/srv/rook/store"), "create store home: mkdir /srv/rook: permission denied: check the permissions of /srv, the directory it is made in"; got != want {
		t.Errorf("a directory above the home made where it may not be:\n got %q\nwant %q", got, want)
	}
	// A part of the store made in its home: the home is the store's.
	part := fmt.Errorf("create segments: %w", &fs.PathError{Op: "mkdir", Path: home + "/segments", Err: fs.ErrPermission})
	if got, want := explain(part, home), "create segments: mkdir /home/u/.rook/segments: permission denied: check the permissions of /home/u/.rook (`rook doctor`)"; got != want {
		t.Errorf("a part of the store:\n got %q\nwant %q", got, want)
	}
}

// cellsOf is the number of terminal cells s takes, counted apart from
// the code under test: East Asian wide characters take two, combining
// marks none, others one.
func cellsOf(s string) int {
	n := 0
	for _, r := range s {
		switch {
		case unicode.Is(unicode.Mn, r):
		case r >= 0x1100 && r <= 0x115F, r >= 0x2E80 && r <= 0xA4CF, r >= 0xAC00 && r <= 0xD7A3,
			r >= 0xF900 && r <= 0xFAFF, r >= 0xFE30 && r <= 0xFE4F, r >= 0xFF00 && r <= 0xFF60, r >= 0xFFE0 && r <= 0xFFE6:
			n += 2
		default:
			n++
		}
	}
	return n
}

// TestSessionLsColumnsLineUpWithWideTitles: the table every listing
// prints (session ls, store ls, stat, checkpoint ls, prune, ...) padded
// each cell by its count of runes: the columns after a Japanese title
// ("日本語", six cells) stood three cells right of the others', and after
// "é" written e + U+0301 one cell left. It pads by the cells a cell
// takes on a terminal.
func TestSessionLsColumnsLineUpWithWideTitles(t *testing.T) {
	r := newCLIStore(t)
	r.must("", "session", "new", "--title", "日本語")
	r.must("", "session", "new", "--title", "abcdef")
	r.must("", "session", "new", "--title", "cafe\u0301s!")
	out := r.must("", "session", "ls")
	cols := map[string]int{}
	for _, l := range strings.Split(out, "\n") {
		for _, title := range []string{"日本語", "abcdef", "cafe\u0301s!"} {
			if i := strings.Index(l, title); i >= 0 {
				rest := l[i+len(title):]
				pad := len(rest) - len(strings.TrimLeft(rest, " "))
				cols[title] = cellsOf(l[:i+len(title)]) + pad
			}
		}
	}
	if len(cols) != 3 {
		t.Fatalf("titles not found in:\n%s", out)
	}
	if cols["日本語"] != cols["abcdef"] || cols["cafe\u0301s!"] != cols["abcdef"] {
		t.Errorf("the column after the title starts at cell %v (want all the same):\n%s", cols, out)
	}
	// The rule under the header is as wide as the header.
	lines := strings.Split(out, "\n")
	if cellsOf(lines[0]) != cellsOf(lines[1]) {
		t.Errorf("header %d cells, rule %d:\n%s", cellsOf(lines[0]), cellsOf(lines[1]), out)
	}
}

// TestClipCutsByCellsBetweenGraphemes: a title clipped to its column was
// cut at n runes: wide characters took up to twice the column, and a cut
// between a letter and its combining accent dropped the accent. It is cut
// to n cells, between grapheme clusters.
func TestClipCutsByCellsBetweenGraphemes(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"a title that is long", 10, "a title t…"},
		{"日本語のタイトル", 10, "日本語の…"},                   // 8 cells and the mark
		{"日本語のタイトル", 9, "日本語の…"},                    // a wide character is not cut in two
		{"cafe\u0301 cafe\u0301", 5, "cafe\u0301…"}, // the accent stays with its letter
		{"e\u0301e\u0301e\u0301e\u0301", 4, "e\u0301e\u0301e\u0301e\u0301"},
		{"👍🏽👍🏽👍🏽", 5, "👍🏽👍🏽…"}, // an emoji and its skin tone: one cluster
	} {
		got := clip(c.in, c.n)
		if got != c.want || cellsOf(got) > c.n {
			t.Errorf("clip(%q, %d) = %q (%d cells), want %q", c.in, c.n, got, cellsOf(got), c.want)
		}
	}
}

// TestFirstLineCutsWholeCharacters: `mcp ls` shortens a server's last
// error to 80 bytes without cutting a character in half (which would show
// as U+FFFD).
func TestFirstLineCutsWholeCharacters(t *testing.T) {
	got := firstLine(strings.Repeat("a", 76) + strings.Repeat("é", 10))
	if !utf8.ValidString(got) || !strings.HasSuffix(got, "...") || len(got) > 80 {
		t.Fatalf("%q", got)
	}
	if got := firstLine("short é\nsecond"); got != "short é" {
		t.Fatalf("%q", got)
	}
}

// TestExplainDiskFull: a disk that filled says so and what to do; the
// store's own "close and reopen the store" is not something a command's
// user can do.
func TestExplainDiskFull(t *testing.T) {
	home := "/home/u/.rook"
	store := fmt.Errorf("sync event bodies: an earlier write failed (%w); close and reopen the store to recover",
		fmt.Errorf("write segment 00000001.seg: %w", &fs.PathError{Op: "write", Path: home + "/segments/00000001.seg", Err: syscall.ENOSPC}))
	if got := explain(store, home); !strings.HasSuffix(got, ": the disk holding the store /home/u/.rook is full: free space, then run the command again (it recovers what this one wrote)") {
		t.Errorf("the store's disk: %q", got)
	}
	// A gc or repack that failed gave back what it wrote: nothing for
	// the next command to recover, and the bytes freed are said.
	rewrite := &cas.RewriteFailedError{Err: fmt.Errorf("write segment 00000002.seg: %w", &fs.PathError{Op: "write", Path: home + "/segments/00000002.seg", Err: syscall.ENOSPC}), Removed: []string{"00000002.seg"}, Freed: 1 << 20}
	if got, want := explain(rewrite, home), "write segment 00000002.seg: write /home/u/.rook/segments/00000002.seg: no space left on device: nothing changed (the index names every object where it was); removed the new segment(s) it had written (00000002.seg) (1.0 MiB given back): the disk holding the store /home/u/.rook is full: free space, then run the command again"; got != want {
		t.Errorf("a failed repack:\n got %q\nwant %q", got, want)
	}
	rewrite.Left = errors.New("remove 00000002.seg: input/output error")
	if got := explain(rewrite, home); strings.Contains(got, "given back") || strings.Contains(got, "it recovers") || !strings.Contains(got, "the next gc or repack removes it") {
		t.Errorf("a failed repack that could not remove what it wrote: %q", got)
	}
	out := fmt.Errorf("write /work/out.jsonl: %w", &fs.PathError{Op: "write", Path: "/work/out.jsonl", Err: syscall.ENOSPC})
	if got, want := explain(out, home), "write /work/out.jsonl: write /work/out.jsonl: no space left on device: the disk holding /work/out.jsonl is full: free space, then run the command again"; got != want {
		t.Errorf("an --output's disk:\n got %q\nwant %q", got, want)
	}
	// Standard output's: what the command did is done, only its output
	// is lost; "run the command again" would make a second session.
	stdout := &outputError{err: &fs.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.ENOSPC}, alone: true}
	if got, want := explain(stdout, home), "write /dev/stdout: no space left on device: the disk standard output goes to is full, so the output is cut short; nothing else failed (what the command changes is changed)"; got != want {
		t.Errorf("standard output's disk:\n got %q\nwant %q", got, want)
	}
}

// refuseCreate is the OS file system as a user sees it who may not create
// files in a directory (chmod 555, which root, running the tests, ignores).
type refuseCreate struct{ vfs.FS }

func (refuseCreate) OpenFile(name string, _ int, _ fs.FileMode) (vfs.File, error) {
	return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EACCES}
}

func (refuseCreate) WriteFilesAtomic(dir string, files []vfs.NamedData, _ fs.FileMode) error {
	return &fs.PathError{Op: "open", Path: filepath.Join(dir, files[0].Name), Err: syscall.EACCES}
}

// TestExportHTMLRefusedDirectory: export-html into a directory the user
// may not write said "open F: permission denied: check the permissions of
// F", the path twice and the wrong thing to check (F is not there yet).
// It now says it once, with the directory to check.
func TestExportHTMLRefusedDirectory(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "x.html")
	var stdout, stderr bytes.Buffer
	e := &Env{Stdout: &stdout, Stderr: &stderr, FS: refuseCreate{vfs.OS}, Home: filepath.Join(dir, "store")}
	err := (&ExportHTMLCmd{Output: out}).write(e, []byte("<html>"))
	if err == nil {
		t.Fatal("write succeeded")
	}
	got := explain(err, e.Home)
	want := "write " + out + ": permission denied: you may not create files in " + dir + "; choose another --output, or check that directory's permissions"
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

// readOnlyFS is the OS file system as on a read-only mount: every create
// and atomic write fails with EROFS, naming the file asked for (as the
// OS's atomic write names it).
type readOnlyFS struct{ vfs.FS }

func (readOnlyFS) OpenFile(name string, _ int, _ fs.FileMode) (vfs.File, error) {
	return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EROFS}
}

func (readOnlyFS) WriteFilesAtomic(dir string, files []vfs.NamedData, _ fs.FileMode) error {
	return &fs.PathError{Op: "open", Path: filepath.Join(dir, files[0].Name), Err: syscall.EROFS}
}

// TestOutputFileRefusedWordedAlike: `rook export -o F` on a read-only
// file system, or in a directory the user may not write, said the raw
// "open F: read-only file system" (or "open F: permission denied: check
// the permissions of F"), while export-html said what refused and what to
// do. Both now word it with one helper, the same way.
func TestOutputFileRefusedWordedAlike(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		fs   vfs.FS
		want string
	}{
		{readOnlyFS{vfs.OS}, "%s is on a read-only file system; choose another --output"},
		{refuseCreate{vfs.OS}, "permission denied: you may not create files in %s; choose another --output, or check that directory's permissions"},
	} {
		e := &Env{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}, FS: c.fs, Home: filepath.Join(dir, "store")}
		html := filepath.Join(dir, "x.html")
		herr := (&ExportHTMLCmd{Output: html}).write(e, []byte("<html>"))
		out := filepath.Join(dir, "x.jsonl")
		werr := writeOutput(e, out, func(w io.Writer) error { _, err := w.Write([]byte("{}\n")); return err })
		xerr := outputFileErr(e, out, werr)
		for _, g := range []struct {
			err  error
			path string
		}{{herr, html}, {xerr, out}} {
			if g.err == nil {
				t.Fatalf("%s: no error", g.path)
			}
			want := "write " + g.path + ": " + fmt.Sprintf(c.want, dir)
			if got := explain(g.err, e.Home); got != want {
				t.Errorf("got  %q\nwant %q", got, want)
			}
			if exists(e, g.path) {
				t.Errorf("%s left behind", g.path)
			}
		}
	}
}

// fullWriter fails every write as standard output on a full disk does.
type fullWriter struct{}

func (fullWriter) Write([]byte) (int, error) {
	return 0, &fs.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.ENOSPC}
}

// A command that prints a table exits 1 when standard output cannot take
// it: the table's buffered writes were never checked, so `rook session ls
// > /dev/full` said nothing and exited 0 (--json exited 1).
func TestTableWriteErrorsExit1(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	run := func(stdin string, stdout io.Writer, args ...string) (int, string) {
		var errb bytes.Buffer
		code := Main(append([]string{"--home", home, "-C", ws}, args...), strings.NewReader(stdin), stdout, &errb)
		return code, errb.String()
	}
	var out bytes.Buffer
	if code, e := run("", &out, "init"); code != 0 {
		t.Fatal(e)
	}
	out.Reset()
	if code, e := run("", &out, "session", "new"); code != 0 {
		t.Fatal(e)
	}
	id := strings.TrimSpace(out.String())
	if code, e := run(`{"kind":"user","body":"first"}`+"\n", io.Discard, "session", "append", id, "--jsonl", "-"); code != 0 {
		t.Fatal(e)
	}
	if code, e := run("", io.Discard, "checkpoint", "create", "c"); code != 0 {
		t.Fatal(e)
	}
	for _, args := range [][]string{
		{"session", "ls"},
		{"session", "history", id},
		{"session", "context", id},
		{"checkpoint", "ls"},
		{"store", "ls"},
		{"store", "stat"},
	} {
		code, e := run("", fullWriter{}, args...)
		if code != ExitFailure || !strings.Contains(e, "no space left on device") {
			t.Errorf("rook %s to a full disk: exit %d, stderr %q", strings.Join(args, " "), code, e)
		}
	}
}
