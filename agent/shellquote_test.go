package agent

import (
	"os/exec"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestShellQuoteKeepsTheBytes: a command rook prints (session find's
// continue: line, a fork's way out) repeats a query or a path; run in a
// shell, it must name the same bytes, even those it must not send to a
// terminal as they are.
func TestShellQuoteKeepsTheBytes(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash")
	}
	for _, q := range []string{"plain", "it's", "a b", "/p/My Projects/F.jsonl", "tab\there", "line\nbreak", "\xff\xfe", "esc\x1b[31m", `back\slash 'q'`, "héllo wörld"} {
		quoted := ShellQuote(q)
		if !utf8.ValidString(quoted) || strings.IndexFunc(quoted, Unshowable) >= 0 {
			t.Errorf("ShellQuote(%q) = %q: not safe for a terminal", q, quoted)
		}
		out, err := exec.Command("bash", "-c", "printf %s "+quoted).Output()
		if err != nil {
			t.Fatalf("bash: %v", err)
		}
		if string(out) != q {
			t.Errorf("ShellQuote(%q) = %s, which the shell reads as %q", q, quoted, out)
		}
	}
}
