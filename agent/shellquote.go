package agent

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_./:@%+=,-]+$`)

// ShellQuote quotes s for a POSIX shell, when it needs quoting ($'...',
// which bash, zsh and ksh read, for bytes a terminal must not get): the
// commands rook prints for the user to run (a path with a space is one
// word), here for the engine's messages and the CLI's alike.
func ShellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	if utf8.ValidString(s) && strings.IndexFunc(s, Unshowable) < 0 {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	// What a terminal must not get (a control character, a line break,
	// bytes that are not UTF-8) is written as \xNN in $'...', so the
	// printed command still names the same bytes: replacing them, as
	// the CLI's terminal rendering does, made it look for something else.
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1, Unshowable(r):
			for _, c := range []byte(s[i : i+n]) {
				fmt.Fprintf(&b, `\x%02x`, c)
			}
		case r == '\'' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	b.WriteString("'")
	return b.String()
}
