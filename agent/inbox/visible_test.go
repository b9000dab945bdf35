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
