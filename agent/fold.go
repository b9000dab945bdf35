package agent

import (
	"unicode"
	"unicode/utf8"
)

// foldRune is the character r stands for when case is ignored, as
// `session find` and `rook search` both match: the characters of one
// Unicode simple case folding class (Σ σ ς; K k and the Kelvin sign; S s
// ſ) and those that lower-case alike (İ and i) fold to one, the class's
// least letter lower-cased ('σ', 'k', 's', 'i'). Lower-casing alone left ς
// and σ, ſ and s apart: `rook search κοσμος` missed "ΚΟΣΜΟΣ", which find
// found. A letter folds to a letter, never to a mark of its class: the
// least member of Ι's class is U+0345 (the combining ypogegrammeni), and
// folded to it every iota cut a Greek word in two for search, which
// splits words on what is no letter (TestFoldRuneKeepsWordCharacters).
func foldRune(r rune) rune {
	if r < utf8.RuneSelf {
		if 'A' <= r && r <= 'Z' {
			r += 'a' - 'A'
		}
		return r
	}
	if r < rune(len(foldTable)) {
		return foldTable[r]
	}
	return foldSlow(r)
}

// foldTable is foldRune below U+0800 (Latin, Greek, Cyrillic, ...), worked
// out once: most text past ASCII is there.
var foldTable = func() (t [0x800]rune) {
	for r := range t {
		t[r] = foldSlow(rune(r))
	}
	return t
}()

// foldsPastASCII says of each ASCII character whether a character past
// ASCII folds as it does (foldRune): k and K (the Kelvin sign), s and S
// (ſ), i and I (İ). Such a character may be written past ASCII, or as
// its \u escape, where the query has the ASCII one. Worked out from the
// folding: below U+0800 from foldTable, above it the fold classes of the
// ASCII letters (no character past U+0800 lower-cases to an ASCII letter
// outside their class; TestFoldsPastASCII checks every rune).
var foldsPastASCII = func() (t [utf8.RuneSelf]bool) {
	var mate [utf8.RuneSelf]bool // by folded character
	for r := utf8.RuneSelf; r < len(foldTable); r++ {
		if f := foldTable[r]; f < utf8.RuneSelf {
			mate[f] = true
		}
	}
	for c := rune(0); c < utf8.RuneSelf; c++ {
		for f := unicode.SimpleFold(c); f != c; f = unicode.SimpleFold(f) {
			if f >= utf8.RuneSelf && foldRune(f) == foldRune(c) {
				mate[foldRune(c)] = true
			}
		}
	}
	for c := range t {
		t[c] = mate[foldRune(rune(c))]
	}
	return t
}()

func foldSlow(r rune) rune {
	l := unicode.ToLower(r)
	least, letter := l, unicode.IsLetter(l)
	for f := unicode.SimpleFold(l); f != l; f = unicode.SimpleFold(f) {
		switch isLetter := unicode.IsLetter(f); {
		case isLetter && !letter:
			least, letter = f, true
		case isLetter == letter:
			least = min(least, f)
		}
	}
	return unicode.ToLower(least)
}

// appendFold appends s folded (foldRune) to dst: ASCII in place, a byte
// that is not UTF-8 as it is. Such a byte is no character: kept, it
// matches only the same byte of a query (folded the same way), as grep
// and find have it, never a U+FFFD, written in the body or in the query
// (bytes.ToLower made each such byte a U+FFFD, which a U+FFFD of the
// query then matched). A run of such bytes stays as many bytes, none of
// which starts a character with what follows, so the folded text has as
// many characters as s, each such byte one (utf8.RuneCount).
func appendFold(dst, s []byte) []byte {
	for i, c := range s {
		if c >= utf8.RuneSelf {
			for s = s[i:]; len(s) > 0; {
				c := s[0]
				if c < utf8.RuneSelf {
					if 'A' <= c && c <= 'Z' {
						c += 'a' - 'A'
					}
					dst = append(dst, c)
					s = s[1:]
					continue
				}
				r, w := utf8.DecodeRune(s)
				if r == utf8.RuneError && w == 1 {
					dst = append(dst, c)
				} else {
					dst = utf8.AppendRune(dst, foldRune(r))
				}
				s = s[w:]
			}
			return dst
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// foldString is appendFold of s.
func foldString(s string) string {
	return string(appendFold(make([]byte, 0, len(s)), []byte(s)))
}

// foldedLen is how many bytes the character or byte at the start of s
// takes folded (appendFold), and how many it takes in s.
func foldedLen(s []byte) (folded, w int) {
	if s[0] < utf8.RuneSelf {
		return 1, 1
	}
	r, w := utf8.DecodeRune(s)
	if r == utf8.RuneError && w == 1 {
		return 1, 1
	}
	return utf8.RuneLen(foldRune(r)), w
}
