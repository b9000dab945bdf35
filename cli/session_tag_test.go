package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rookhq/rook/agent"
	"github.com/rookhq/rook/eventlog"
)

// tags are session id's tags, as `--json session tag ID` gives them.
func (r *cliStore) tags(id string) []string {
	r.t.Helper()
	var v struct {
		Tags []string `json:"tags"`
	}
	out := r.must("", "--json", "session", "tag", id)
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		r.t.Fatalf("%v: %s", err, out)
	}
	return v.Tags
}

// TestTagNotUTF8IsRefused: a tag that is not UTF-8 (`rook session tag S
// $'caf\xe9'`) was taken and stored as "caf\ufffd": --rm of the same
// bytes said the session "has no tag" and removed nothing, and tagging it
// again added a second "caf\ufffd". It is refused, a usage error (exit 2),
// as a tag with white space is, and nothing changes.
func TestTagNotUTF8IsRefused(t *testing.T) {
	r := newCLIStore(t)
	s := r.must("", "session", "new", "--title", "t")
	bad := "caf\xe9"
	code, out, errs := r.run("", "session", "tag", s, bad)
	if code != 2 || out != "" || errs != "rook: tag \"caf\\xe9\" is not UTF-8 text: give it in UTF-8\n" {
		t.Fatalf("tag %q: exit %d, stdout %q, stderr %q; want exit 2 saying it is not UTF-8", bad, code, out, errs)
	}
	if code, _, errs := r.run("", "session", "new", "--tag", bad); code != 2 || !strings.Contains(errs, "not UTF-8") {
		t.Errorf("session new --tag %q: exit %d: %s", bad, code, errs)
	}
	if got := r.tags(s); len(got) != 0 {
		t.Errorf("tags %q after a refused tag, want none", got)
	}
}

// TestTagBidiControlRefused: a tag holding a right-to-left override was
// taken and printed raw: "tags: v1<RLO>, keep" showed as "tags: v1peek ,".
// A tag holds no character that is not seen where it stands (inbox.Unseen,
// by grapheme cluster, the rule of MCP titles: a bidi control, a
// zero-width or other format character, a default-ignorable one, a
// joiner or variation selector alone, a joiner ending the tag): refused
// (exit 2), naming the character.
func TestTagBidiControlRefused(t *testing.T) {
	r := newCLIStore(t)
	s := r.must("", "session", "new", "--title", "t")
	for _, bad := range []string{"v1\u202e", "\u2066x", "a\u200bb", "\u200dab", "ab\u200d", "ab\u200c", "\u00adx", "x\ufeff", "\u3164", "x\u034f", "\ufe0fx", "\ufe0f", "\u202e\u2764\ufe0f"} {
		code, out, errs := r.run("", "session", "tag", s, bad, "keep")
		if code != 2 || out != "" || !strings.Contains(errs, "a character that is not seen") {
			t.Errorf("tag %q: exit %d, stdout %q, stderr %q; want exit 2", bad, code, out, errs)
		}
		if strings.ContainsAny(errs, "\u202e\u2066\u200b\u200d\ufeff") {
			t.Errorf("tag %q: the error holds it raw: %q", bad, errs)
		}
	}
	if got := r.tags(s); len(got) != 0 {
		t.Errorf("tags %q after refused tags, want none", got)
	}
	// What is seen is taken: letters of any script, an emoji, accents.
	for _, ok := range []string{"日本語", "café", "cafe\u0301", "\u2764", "\u2764\ufe0f", "v1.2/rc-1"} {
		r.must("", "session", "tag", s, ok)
	}
}

// TestTagTakenBeforeItWasRefusedIsRemovable: a session tagged with a bidi
// control by a rook that took it keeps it: `session tag` prints it as
// U+FFFD, not raw, and `--rm` of the same tag removes it (the check of a
// tag to add would have refused it).
func TestTagTakenBeforeItWasRefusedIsRemovable(t *testing.T) {
	r := newCLIStore(t)
	ra, err := agent.Open(r.home, agent.Options{Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	m, err := ra.Log.Create(eventlog.Meta{Title: "old", Workspace: r.dir, Tags: []string{"v1\u202e", "keep"}})
	if cerr := ra.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	s := m.ID.String()
	out := r.must("", "session", "tag", s)
	if strings.ContainsRune(out, '\u202e') || !strings.Contains(out, "v1\ufffd, keep") {
		t.Errorf("session tag S printed %q, want the override as U+FFFD", out)
	}
	out = r.must("", "session", "tag", "--rm", s, "v1\u202e")
	if got := r.tags(s); len(got) != 1 || got[0] != "keep" {
		t.Errorf("after --rm of the tag it holds: tags %q (printed %q), want [keep]", got, out)
	}
	// One it does not hold is a note, as any tag it lacks.
	code, _, errs := r.run("", "session", "tag", "--rm", s, "a\u200bb")
	if code != 0 || !strings.Contains(errs, `has no tag "a\u200bb"`) {
		t.Errorf("--rm of a tag it lacks: exit %d: %s", code, errs)
	}
}

// TestTagsWithEmojiAndJoinersAreTaken: a tag refused every character
// inbox.Invisible names, variation selectors and the zero-width joiner
// and non-joiner among them: `rook session tag S ❤️` failed "tag "❤️"
// has U+FE0F, a character that is not seen". Those are invisible alone,
// but they are parts of characters people see and type: "❤️" and "⭐️" (a
// phone or macOS emoji keyboard sends U+FE0F after them), "👨‍💻" (a ZWJ
// emoji sequence), Persian words written with U+200C ("می‌خواهم"),
// Devanagari conjuncts with U+200D. Judged by grapheme cluster
// (inbox.Unseen), a joiner or selector inside a character that draws is
// taken, as it was before tags refused invisible characters; one standing
// alone, or a joiner ending the tag, is not (TestTagBidiControlRefused).
func TestTagsWithEmojiAndJoinersAreTaken(t *testing.T) {
	r := newCLIStore(t)
	s := r.must("", "session", "new", "--title", "emoji")
	for _, tag := range []string{"❤️", "⭐️", "👨\u200d💻", "می\u200cخواهم", "क्\u200dष"} {
		code, out, errs := r.run("", "session", "tag", s, tag)
		if code != 0 {
			t.Errorf("session tag %q: exit %d: %s%s", tag, code, out, errs)
		}
	}
}
