package cli

import "testing"

func TestTermText(t *testing.T) {
	for in, want := range map[string]string{
		"plain title":           "plain title",
		"café ↳ 日本":             "café ↳ 日本",
		"\x1b[2J\x1b]0;pwned\a": "\uFFFD[2J\uFFFD]0;pwned\uFFFD",
		"tab\tnew\nline\r":      "tab\uFFFDnew\uFFFDline\uFFFD",
		"del\x7f c1\u009b31m":   "del\uFFFD c1\uFFFD31m",
		"/src/caf\xe9.jsonl":    "/src/caf\uFFFD.jsonl",
		"\uFFFD kept as it is":  "\uFFFD kept as it is",
	} {
		if got := termText(in); got != want {
			t.Errorf("termText(%q) = %q, want %q", in, got, want)
		}
	}
	if got := clip("\x1b[31mred title that is long", 10); got != "\uFFFD[31mred …" {
		t.Errorf("clip: %q", got)
	}
}
