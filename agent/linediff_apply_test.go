package agent

// From the review of 87b8808 (checks that passed there, kept against
// regressions): the line differ against a reference LCS on random small
// inputs and edge cases, and its hunks applied by git.

import (
	"bytes"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestMyersLinesMinimalAndValidOnEdgeCases(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	alpha := []string{"a\n", "b\n", "c\n", "a", "a\r\n", "é\n", "\n", ""}
	gen := func(n, k int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = alpha[r.Intn(k)]
		}
		return out
	}
	for it := 0; it < 20000; it++ {
		k := 1 + r.Intn(len(alpha))
		a, b := gen(r.Intn(12), k), gen(r.Intn(12), k)
		for _, f := range []func([]string, []string) []change{myersLines, diffLines} {
			ch := f(a, b)
			if ch == nil && (len(a) > 0 || len(b) > 0) && refLCSLen(a, b) != len(a) || ch == nil && len(a) != len(b) {
				if len(a) == len(b) && strings.Join(a, "") == strings.Join(b, "") {
					continue
				}
				t.Fatalf("nil changes for a=%q b=%q", a, b)
			}
			got := checkLineChanges(t, a, b, ch)
			want := len(a) + len(b) - 2*refLCSLen(a, b)
			if got != want {
				t.Fatalf("edited %d lines, minimum %d, a=%q b=%q: %+v", got, want, a, b, ch)
			}
		}
	}
	// Edge cases.
	cases := [][2][]string{
		{nil, nil}, {nil, {"x\n"}}, {{"x\n"}, nil}, {{"x\n"}, {"x"}}, {{"x\r\n"}, {"x\n"}},
		{{"a\n", "b\n"}, {"c\n", "d\n"}}, {{"a\n", "b\n"}, {"a\n", "b\n"}},
	}
	for _, c := range cases {
		ch := diffLines(c[0], c[1])
		got := checkLineChanges(t, c[0], c[1], ch)
		if want := len(c[0]) + len(c[1]) - 2*refLCSLen(c[0], c[1]); got != want {
			t.Fatalf("edited %d, want %d: %q %q", got, want, c[0], c[1])
		}
	}
}

// The hunks writeHunks writes for diffLines's blocks apply with git apply
// and give b exactly (CRLF, a last line without newline, blank lines).
func TestLineDiffHunksApplyWithGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	r := rand.New(rand.NewSource(7))
	alpha := []string{"a\n", "b\n", "c\n", "a", "b\r\n", "\n", "}\n"}
	gen := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = alpha[r.Intn(len(alpha))]
		}
		// only the last line may lack a newline
		for i := 0; i < len(out)-1; i++ {
			if !strings.HasSuffix(out[i], "\n") {
				out[i] += "\n"
			}
		}
		return out
	}
	dir := t.TempDir()
	for it := 0; it < 300; it++ {
		a, b := gen(r.Intn(25)), gen(r.Intn(25))
		ch := diffLines(a, b)
		if len(ch) == 0 {
			continue
		}
		var buf bytes.Buffer
		buf.WriteString("--- a/f\n+++ b/f\n")
		writeHunks(&buf, a, b, ch, false)
		os.WriteFile(filepath.Join(dir, "f"), []byte(strings.Join(a, "")), 0o644)
		os.WriteFile(filepath.Join(dir, "p"), buf.Bytes(), 0o644)
		cmd := exec.Command("git", "apply", "--unidiff-zero", "p")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git apply: %v %s\na=%q\nb=%q\n%s", err, out, a, b, buf.String())
		}
		got, _ := os.ReadFile(filepath.Join(dir, "f"))
		if string(got) != strings.Join(b, "") {
			t.Fatalf("applied %q want %q\n%s", got, strings.Join(b, ""), buf.String())
		}
	}
}
