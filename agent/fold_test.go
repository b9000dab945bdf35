package agent

import (
	"testing"
	"unicode"
	"unicode/utf8"
)

// TestFoldRuneKeepsWordCharacters: search splits the folded query into
// words and tells words of their own (isWordRune) on folded text, so a
// character folds to a word character exactly when it is one, and a
// letter or digit to a letter or digit. The least member of Ι's fold class
// is U+0345, a combining mark: Ι and ι folded to it cut Greek words in
// two. Folding is a choice of one member of each class: folding twice is
// folding once.
func TestFoldRuneKeepsWordCharacters(t *testing.T) {
	bad := 0
	for r := rune(0); r <= unicode.MaxRune; r++ {
		f := foldRune(r)
		if isWordRune(r) != isWordRune(f) ||
			unicode.IsLetter(r) && !unicode.IsLetter(f) ||
			unicode.IsDigit(r) != unicode.IsDigit(f) ||
			foldRune(f) != f {
			if bad < 5 {
				t.Errorf("foldRune(%U %c) = %U %c", r, r, f, f)
			}
			bad++
		}
	}
	if f := foldRune('\u0345'); f != 'ι' {
		t.Errorf("foldRune(U+0345) = %U, want ι, as Unicode's case folding has it", f)
	}
}

// TestFoldsPastASCII: foldsPastASCII, worked out from foldTable and the
// ASCII letters' fold classes, is what every rune says: an ASCII
// character has a mate past ASCII exactly when some rune past ASCII
// folds as it does. And the only one that folds as i is İ, which the
// ASCII matcher's dotI reads (foldMatcher).
func TestFoldsPastASCII(t *testing.T) {
	var want [utf8.RuneSelf]bool
	for r := rune(utf8.RuneSelf); r <= unicode.MaxRune; r++ {
		f := foldRune(r)
		if f >= utf8.RuneSelf {
			continue
		}
		for c := range want {
			if foldRune(rune(c)) == f {
				want[c] = true
			}
		}
		if f == 'i' && r != '\u0130' {
			t.Errorf("%U folds as i: foldMatcher's dotI reads only İ", r)
		}
	}
	if want != foldsPastASCII {
		t.Errorf("foldsPastASCII = %v, want %v", foldsPastASCII, want)
	}
	for _, c := range "kKsSiI" {
		if !foldsPastASCII[c] {
			t.Errorf("foldsPastASCII[%q] = false", c)
		}
	}
}
