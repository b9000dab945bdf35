package inbox

import "testing"

// TestUnseenJudgesByGraphemeCluster: a joiner or variation selector is
// seen as part of the character it is in ("❤️", "👨‍💻", a Persian word with
// U+200C, a Devanagari conjunct with U+200D, a flag of tag characters);
// a bidi control anywhere, a character that draws nothing as a cluster
// of its own (a zero-width space, a soft hyphen, U+FEFF, a Hangul filler,
// a joiner or selector that starts the text), a joiner that ends it,
// and one between two letters of a script it never joins ("a\u200db"
// shows as "ab") are not.
func TestUnseenJudgesByGraphemeCluster(t *testing.T) {
	for _, s := range []string{"keep", "日本語", "cafe\u0301", "\u2764\ufe0f", "\u2b50\ufe0f", "👨\u200d💻", "می\u200cخواهم", "क्\u200dष", "\u0644\u200d\u0627",
		"\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f", "\u0600\u0661"} {
		if r, why := Unseen(s); why != "" {
			t.Errorf("%+q: %U not seen (%s)", s, r, why)
		}
	}
	for s, want := range map[string]rune{
		"v1\u202e": 0x202e, "\u2066x": 0x2066, "x\u061c": 0x061c, "a\u200bb": 0x200b, "\u00adx": 0x00ad, "x\ufeff": 0xfeff,
		"\u3164": 0x3164, "\u115f\u1160": 0x115f, "\u200dab": 0x200d, "\ufe0fx": 0xfe0f, "ab\u200d": 0x200d, "ab\u200c": 0x200c,
		"x\u034f": 0x034f, "\u2764\ufe0f\u202e": 0x202e, "": 0,
		// Between letters a joiner never joins: "ab", another tag, shown.
		"a\u200db": 0x200d, "Ab\u200cc": 0x200c, "x\u034fy": 0x034f, "\u65e5\u200d\u672c": 0x200d, "\u0430\u200d\u0431": 0x200d, "v1\u200d2": 0x200d,
	} {
		r, why := Unseen(s)
		if s == "" {
			if why != "" {
				t.Errorf("empty: %U (%s)", r, why)
			}
			continue
		}
		if why == "" || r != want {
			t.Errorf("%+q: %U (%q), want %U", s, r, why, want)
		}
	}
	for s, want := range map[string]bool{"": true, " \u200b\t\u2060\ufeff\u3164\u034f\ufe0f": true, "\u200dx": false, "\ufffd": false} {
		if NothingToSee(s) != want {
			t.Errorf("NothingToSee(%+q) = %v", s, !want)
		}
	}
}

// The user tags a session with "ab" written with two joiners between its
// letters ("a\u200d\u200db", or a non-joiner and a combining grapheme
// joiner, "a\u200c\u034fb"), or with "éb" as e + U+0301 + U+200D + b:
// `rook session tag ID` takes it (exit 0) and `session ls` shows "ab" /
// "éb", another tag than the "ab" the user types to --rm or filter it.
// A single joiner there ("a\u200db") is refused as unseen (exit 2) since
// 0201161: one between two letters of a script it never joins draws
// nothing, and two draw nothing either, nor does one after a combining
// accent on a Latin letter. They should be refused as "a\u200db" is.
// Unseen looked only at the runes right beside a joiner; now at the
// letters each side past other joiners and combining marks (baseBeside).
func TestUnseenJoinersBetweenLettersPastOtherJoinersAndMarks(t *testing.T) {
	for s, shown := range map[string]string{
		"a\u200d\u200db":  "ab",
		"a\u200c\u034fb":  "ab",
		"e\u0301\u200db":  "e\u0301b",
		"Ab\u034f\u200cc": "Abc",
	} {
		if r, why := Unseen(s); why == "" {
			t.Errorf("%+q shows as %+q, yet nothing in it is found unseen: a tag of it is taken, another tag than %+q", s, shown, shown)
		} else if !joiner(r) {
			t.Errorf("%+q: %U found (%s), want one of its joiners", s, r, why)
		}
	}
}

// Hebrew and Georgian letters never join either (Hebrew is not a cursive
// script; a terminal draws "א\u200dב" as "אב"), yet a tag of two Hebrew
// (or Georgian) letters with a joiner between them is taken, where the
// same between two Latin, Greek or Cyrillic letters is refused since
// 0201161: `rook session tag ID $'\u05d0\u200d\u05d1'` adds a tag that
// shows as "אב", another tag than the "אב" the user types. It should be
// refused as "a\u200db" is.
// neverJoins listed Latin, Greek, Cyrillic, Armenian and CJK only.
func TestUnseenJoinerBetweenHebrewOrGeorgianLetters(t *testing.T) {
	for _, s := range []string{"\u05d0\u200d\u05d1", "\u05e9\u05dc\u200c\u05d5\u05dd", "\u10d0\u200d\u10d1"} {
		if _, why := Unseen(s); why == "" {
			t.Errorf("%+q (a joiner between letters of a script that never joins) is taken as seen", s)
		}
	}
}
