package agent

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/rookhq/rook/internal/fuzzseed"
)

func TestParseCodexPatch(t *testing.T) {
	patch := strings.Join([]string{
		"*** Begin Patch",
		"*** Add File: hello.txt",
		"+hello",
		"+world",
		"*** Update File: src/app.py",
		"*** Move to: src/main.py",
		"@@ def greet():",
		" def greet():",
		"-    print(\"Hi\")",
		"+    print(\"Hello\")",
		"",
		"@@",
		"-x = 1",
		"+x = 2",
		"*** End of File",
		"*** Delete File: obsolete.txt",
		"*** End Patch",
	}, "\n")
	ops, err := parseCodexPatch(patch)
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 3 {
		t.Fatalf("%d ops, want 3: %+v", len(ops), ops)
	}
	if o := ops[0]; o.Kind != "add" || o.Path != "hello.txt" || string(o.Content) != "hello\nworld\n" {
		t.Errorf("add: %+v", o)
	}
	o := ops[1]
	if o.Kind != "update" || o.Path != "src/app.py" || o.MoveTo != "src/main.py" || len(o.Chunks) != 2 {
		t.Fatalf("update: %+v", o)
	}
	c := o.Chunks[0]
	if c.Context != "def greet():" || strings.Join(c.Lines, "|") != ` def greet():|-    print("Hi")|+    print("Hello")| ` || c.EOF {
		t.Errorf("chunk 0: %+v", c)
	}
	if c := o.Chunks[1]; c.Context != "" || strings.Join(c.Lines, "|") != "-x = 1|+x = 2" || !c.EOF {
		t.Errorf("chunk 1: %+v", c)
	}
	if o := ops[2]; o.Kind != "delete" || o.Path != "obsolete.txt" {
		t.Errorf("delete: %+v", o)
	}
}

// The parse is as lenient as Codex's: markers padded with spaces, CRLF,
// a heredoc around the patch, an update whose first chunk has no @@.
func TestParseCodexPatchLenient(t *testing.T) {
	for _, patch := range []string{
		"  *** Begin Patch \r\n*** Update File: a.go\r\n import foo\r\n+bar\r\n *** End Patch\r\n",
		"<<'EOF'\n*** Begin Patch\n*** Update File: a.go\n import foo\n+bar\n*** End Patch\nEOF\n",
	} {
		ops, err := parseCodexPatch(patch)
		if err != nil {
			t.Fatalf("%q: %v", patch, err)
		}
		if len(ops) != 1 || ops[0].Path != "a.go" || len(ops[0].Chunks) != 1 || strings.Join(ops[0].Chunks[0].Lines, "|") != " import foo|+bar" {
			t.Errorf("%q: %+v", patch, ops)
		}
	}
}

// A patch Codex would refuse is an error that says where, never a panic,
// and the operations read before it are returned.
func TestParseCodexPatchBad(t *testing.T) {
	for _, tc := range []struct{ patch, want string }{
		{"", "first line"},
		{"hello", "first line"},
		{"*** Begin Patch\n*** Add File: a\n+x", "*** End Patch"},
		{"*** Begin Patch\n*** Update File: a\n*** End Patch", "line 2: an update of a with no changes"},
		{"*** Begin Patch\n*** Update File: a\n@@\n-x\n@@\n*** End Patch", "line 5: "},
		{"*** Begin Patch\n*** Add File: a\n+x\n*** Frobnicate: b\n*** End Patch", "line 4: "},
		{"*** Begin Patch\n*** Update File: a\n@@\n-x\nbogus\n*** End Patch", "line 5: "},
		{"*** Begin Patch\n*** Add File: \n+x\n*** End Patch", "line 2: no path"},
	} {
		ops, err := parseCodexPatch(tc.patch)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want one with %q", tc.patch, err, tc.want)
		}
		if strings.Contains(tc.patch, "Frobnicate") && (len(ops) != 1 || ops[0].Path != "a") {
			t.Errorf("%q: ops before the error %+v", tc.patch, ops)
		}
	}
}

// An update's chunks are written as hunks without line numbers (Codex's
// patch places them by their context), their counts right.
func TestWriteCodexHunks(t *testing.T) {
	ops, err := parseCodexPatch("*** Begin Patch\n*** Update File: a.py\n@@ def f():\n a\n-b\n+c\n+d\n*** End Patch")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	added, removed := writeCodexChunks(&buf, ops[0].Chunks, false)
	want := "@@ -?,2 +?,3 @@ def f():\n a\n-b\n+c\n+d\n"
	if buf.String() != want || added != 2 || removed != 1 {
		t.Errorf("got %q +%d -%d, want %q +2 -1", buf.String(), added, removed, want)
	}
}

// codexPatchSeeds are patches of every shape the parser meets: each
// operation, a move, chunks with and without @@, End of File, a heredoc,
// CRLF, and patches it refuses.
var codexPatchSeeds = []string{
	"*** Begin Patch\n*** Add File: hello.txt\n+hello\n+world\n*** End Patch",
	"*** Begin Patch\n*** Update File: src/app.py\n*** Move to: src/main.py\n@@ def greet():\n-    print(\"Hi\")\n+    print(\"Hello\")\n*** Delete File: obsolete.txt\n*** End Patch\n",
	"*** Begin Patch\n*** Update File: a.go\n import foo\n+bar\n\n@@ func x()\n-a\n+b\n*** End of File\n*** End Patch",
	"<<'EOF'\n*** Begin Patch\n*** Delete File: gone\n*** End Patch\nEOF\n",
	" *** Begin Patch\r\n*** Add File: c.txt\r\n+x\r\n*** End Patch \r\n",
	"*** Begin Patch\n*** Update File: a\n@@\n-x\nbogus\n*** End Patch",
	"*** Begin Patch\n*** Add File: a\n+x",
	"*** Begin Patch\n*** End Patch",
	// moves onto changed paths, and paths written again after a move
	"*** Begin Patch\n*** Update File: b\n@@\n-x\n+y\n*** Add File: c\n+one\n*** Update File: c\n*** Move to: b\n@@\n-one\n+two\n*** Update File: a\n*** Move to: d\n@@\n-p\n+q\n*** Add File: a\n+again\n*** Delete File: a\n*** Update File: e\n*** Move to: a\n@@\n-r\n+s\n*** End Patch",
	"*** Begin Patch\n*** Update File: a\n*** Move to: d\n@@\n-p\n+q\n*** Delete File: a\n*** Update File: f\n*** Move to: g\n@@\n-p\n+q\n*** Update File: h\n*** Move to: f\n@@\n-r\n+s\n*** End Patch",
	// Windows paths, of either slash, inside the workspace and out
	"*** Begin Patch\n*** Add File: C:\\ws\\x.go\n+x\n*** Update File: lib\\y.go\n*** Move to: D:/other/y.go\n@@\n-a\n+b\n*** Delete File: \\\\server\\share\\z\n*** End Patch",
	// a line ending in "\r" before its "\r\n": the line keeps one (Codex's
	// lines() drops one), in content, a chunk's lines and its context
	"*** Begin Patch\n*** Add File: t\n+\r\r\n+a\r\r\n*** Update File: u\n@@ f()\r\r\n-x\r\r\n+y\r\r\n*** End Patch",
}

// formatCodexPatch writes operations back as a patch.
func formatCodexPatch(ops []codexPatchOp) string {
	var b strings.Builder
	// line writes one line of the patch. The reader drops one "\r" before
	// each "\n" (a CRLF patch, as Codex's lines() does), so a line that
	// ends in "\r" itself is written with one more.
	line := func(s string) {
		if strings.HasSuffix(s, "\r") {
			s += "\r"
		}
		b.WriteString(s + "\n")
	}
	line(codexBegin)
	for _, op := range ops {
		switch op.Kind {
		case "add":
			line(codexAdd + " " + op.Path)
			for _, l := range splitLines(op.Content) {
				line("+" + strings.TrimSuffix(l, "\n"))
			}
		case "delete":
			line(codexDelete + " " + op.Path)
		case "update":
			line(codexUpdate + " " + op.Path)
			if op.MoveTo != "" {
				line(codexMove + " " + op.MoveTo)
			}
			for _, c := range op.Chunks {
				if c.Context != "" {
					line("@@ " + c.Context)
				} else {
					line("@@")
				}
				for _, l := range c.Lines {
					line(l)
				}
				if c.EOF {
					line(codexEOF)
				}
			}
		}
	}
	line(codexEnd)
	return b.String()
}

// FuzzCodexPatch: any text parses without a panic; what parses is well
// formed (a path to every operation, lines to every chunk, each after
// its prefix), renders as hunks whose counts are its lines', and reads
// back the same once written out again.
func FuzzCodexPatch(f *testing.F) {
	for _, s := range codexPatchSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ops, err := parseCodexPatch(string(b))
		var pe *codexPatchError
		if err != nil && !errors.As(err, &pe) {
			t.Fatalf("error of type %T: %v", err, err)
		}
		for _, op := range ops {
			if op.Path == "" || op.Kind == "update" && len(op.Chunks) == 0 {
				t.Fatalf("op %+v", op)
			}
			var buf bytes.Buffer
			added, removed := writeCodexChunks(&buf, op.Chunks, false)
			plus, minus := 0, 0
			for _, c := range op.Chunks {
				if len(c.Lines) == 0 {
					t.Fatalf("empty chunk in %+v", op)
				}
				for _, l := range c.Lines {
					switch {
					case l == "" || !strings.ContainsRune(" -+", rune(l[0])):
						t.Fatalf("line %q", l)
					case l[0] == '+':
						plus++
					case l[0] == '-':
						minus++
					}
				}
			}
			if added != plus || removed != minus {
				t.Fatalf("hunks +%d -%d, lines +%d -%d", added, removed, plus, minus)
			}
		}
		// What parsed makes a diff without a panic: applied as a session
		// would (each update also to lines of the text itself), and
		// written out.
		files := map[string]*rolloutFile{}
		for _, op := range ops {
			applyCodexOp(files, "/ws", "/ws/sub", op, true)
			if op.Kind == "update" {
				applyCodexChunks(strings.Split(string(b), "\n"), op.Chunks)
			}
		}
		for _, f := range files {
			rolloutSection(f, "/ws", false)
		}
		// The same from a Windows workspace; and in both, each path's
		// changes are under its own name, and a path a file moved from is
		// no other's, nor changed itself (it would be both renamed away
		// and there).
		win := map[string]*rolloutFile{}
		for _, op := range ops {
			applyCodexOp(win, `C:\ws`, `C:\ws\sub`, op, false)
		}
		for _, fs := range []map[string]*rolloutFile{files, win} {
			from := map[string]bool{}
			for p, f := range fs {
				if f.path != p {
					t.Fatalf("%s's changes are under %s", f.path, p)
				}
				if m := f.movedFrom; m != "" {
					if from[m] || fs[m] != nil {
						t.Fatalf("%s moved from %s, which is also changed or moved", p, m)
					}
					from[m] = true
				}
			}
		}
		if err != nil {
			return
		}
		again, err := parseCodexPatch(formatCodexPatch(ops))
		if err != nil {
			t.Fatalf("written again: %v\n%s", err, formatCodexPatch(ops))
		}
		if !reflect.DeepEqual(normOps(ops), normOps(again)) {
			t.Fatalf("written again:\n%+v\n%+v", ops, again)
		}
	})
}

// normOps makes an empty content and a nil one the same.
func normOps(ops []codexPatchOp) []codexPatchOp {
	out := append([]codexPatchOp(nil), ops...)
	for i := range out {
		if len(out[i].Content) == 0 {
			out[i].Content = nil
		}
	}
	return out
}

// TestWriteCodexPatchFuzzSeeds regenerates testdata/fuzz/FuzzCodexPatch
// (ROOK_WRITE_FUZZ_SEEDS=1 go test ./agent -run WriteCodexPatch).
func TestWriteCodexPatchFuzzSeeds(t *testing.T) {
	seeds := make([][]byte, len(codexPatchSeeds))
	for i, s := range codexPatchSeeds {
		seeds[i] = []byte(s)
	}
	fuzzseed.Write(t, map[string][][]byte{"FuzzCodexPatch": seeds})
}
