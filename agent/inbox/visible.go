package inbox

// What a character shows: the one rule of what nobody can see, for inbox
// names, MCP titles and session tags.

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/clipperhouse/uax29/v2/graphemes"
)

// Typeable removes from a name what a terminal would act on or nobody
// could type back: every control (Cc, C1 ones included, as
// mcp.SanitizeTitle does for titles), every format character (Cf: the bidi
// controls such as U+202E, zero-width spaces and joiners, soft hyphens)
// and the line and paragraph separators. An inbox named with a bidi
// control showed as U+FFFD in `inbox ls`, and only `--json inbox ls`
// told the name `inbox show` needed. A title with nothing left by it is
// refused as empty (mcp's parseTitle): one rule of what nobody can see.
func Typeable(name string) string {
	return strings.Map(func(r rune) rune {
		if untypeable(r) {
			return -1
		}
		return r
	}, name)
}

// untypeable: a rune Typeable removes.
func untypeable(r rune) bool {
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp)
}

// DrawnAsNothing says whether r is one of the characters Unicode says
// draw nothing that Typeable keeps, being no format character: the other
// default-ignorable code points (the combining grapheme joiner U+034F,
// the Hangul fillers U+115F, U+1160, U+3164, U+FFA0: the usual "blank
// name") and the variation selectors. A title or a tag keeps them where
// they are part of something to see (NothingToSee, Unseen).
func DrawnAsNothing(r rune) bool {
	return unicode.In(r, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector)
}

// Invisible says whether r draws nothing on its own: one Typeable removes
// (controls, format characters such as the bidi controls and the
// zero-width spaces and joiners, line and paragraph separators) or
// DrawnAsNothing names. Alone it is nothing to see; inside a character
// that draws (the U+FE0F of "❤️", the joiner of "👨‍💻", the non-joiner of
// a Persian word) it is part of what is seen (Unseen).
func Invisible(r rune) bool { return untypeable(r) || DrawnAsNothing(r) }

// NothingToSee says whether s draws nothing: each of its characters is
// white space or Invisible. It is the one rule of what nobody sees: an
// MCP title of nothing to see is refused as empty (mcp's parseTitle), and
// so is a tag with a grapheme cluster of nothing to see (Unseen,
// agent.ValidTag). Such characters stay in a title with something to see,
// where they may mean something: a zero-width joiner makes one emoji of
// several, a non-joiner spells Persian.
func NothingToSee(s string) bool {
	for _, r := range s {
		if !unicode.IsSpace(r) && !Invisible(r) {
			return false
		}
	}
	return true
}

// Unseen finds the first character of s, if any, that is not seen where
// it stands, judged by grapheme cluster (what a terminal draws as one
// character): a bidi control (U+202E and the like: drawing nothing, it
// reorders what follows); a character of a cluster with nothing to see
// (NothingToSee: a zero-width space, a soft hyphen, U+FEFF, a Hangul
// filler, a joiner or variation selector at the start of s, where it
// stands alone); a joiner that ends s, with nothing after it to join.
// Joiners and variation selectors inside a cluster that draws are part
// of it and pass: "❤️" (U+2764 U+FE0F), "👨‍💻" (a ZWJ sequence), Persian
// words with U+200C, Devanagari conjuncts with U+200D; but not a joiner
// between two letters of a script it never joins (Latin, Greek, Cyrillic,
// Armenian, Hebrew, Georgian, CJK, ASCII; past other joiners and
// combining marks), which draws nothing there either: "a\u200db" shows as
// "ab". why says which it is ("" when none is found).
func Unseen(s string) (r rune, why string) {
	for _, c := range s {
		if unicode.Is(unicode.Bidi_Control, c) {
			return c, "a bidi control: it reorders what follows"
		}
	}
	g := graphemes.FromString(s)
	for g.Next() {
		if cl := g.Value(); NothingToSee(cl) {
			c, _ := utf8.DecodeRuneInString(cl)
			return c, "it draws nothing on its own"
		}
	}
	if c, _ := utf8.DecodeLastRuneInString(s); joiner(c) {
		return c, "a joiner at the end, with nothing after it to join"
	}
	// Between two letters of scripts that never join or form conjuncts
	// (Latin, Greek, Cyrillic, CJK, ASCII) a joiner draws nothing and
	// changes nothing drawn: "a\u200db" shows as "ab", another tag.
	// The letters each side are found past other joiners and combining
	// marks ("a\u200d\u200db", "e\u0301\u200db").
	rs := []rune(s)
	for i, c := range rs {
		if !joiner(c) {
			continue
		}
		before, after := baseBeside(rs, i, -1), baseBeside(rs, i, 1)
		if before >= 0 && after >= 0 && neverJoins(before) && neverJoins(after) {
			return c, "a joiner between letters it does not join: it draws nothing"
		}
	}
	return 0, ""
}

// baseBeside is the nearest rune of rs before (step -1) or after (step 1)
// index i that is neither a joiner nor a combining mark nor a variation
// selector: the letter a joiner at i stands beside. -1: none.
func baseBeside(rs []rune, i, step int) rune {
	for j := i + step; j >= 0 && j < len(rs); j += step {
		if r := rs[j]; !joiner(r) && !unicode.In(r, unicode.Mn, unicode.Me, unicode.Variation_Selector) {
			return r
		}
	}
	return -1
}

// neverJoins: a character of a script whose letters a joiner neither
// joins nor makes a conjunct or ligature of, as a terminal draws them
// (emoji, Arabic, Indic scripts and the rest are left to the joiner).
func neverJoins(r rune) bool {
	return r < utf8.RuneSelf || unicode.In(r, unicode.Latin, unicode.Greek, unicode.Cyrillic, unicode.Armenian,
		unicode.Hebrew, unicode.Georgian, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

// joiner: the zero-width joiner and non-joiner and the combining
// grapheme joiner.
func joiner(r rune) bool {
	return unicode.Is(unicode.Join_Control, r) || r == '\u034f'
}
