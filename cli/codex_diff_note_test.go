package cli

import (
	"strings"
	"testing"

	"github.com/rookhq/rook/agent"
	"github.com/rookhq/rook/eventlog"
)

// An imported Codex session's empty diff says why truly: patches that
// applied but whose changes do not read are not files added and deleted.
func TestNothingChangedCodexPatches(t *testing.T) {
	for _, tc := range []struct {
		p         agent.RolloutPatches
		unchanged int
		want      string
		wantNot   string
	}{
		{agent.RolloutPatches{Applied: 2}, 0, "the files they added they deleted", "wrote back"},
		// a file deleted, then added back as it was
		{agent.RolloutPatches{Applied: 2}, 1, "1 file(s) they deleted they wrote back as they were", ""},
		{agent.RolloutPatches{Applied: 1, Notes: []string{"the patch_apply_end of the patch of event #3: the change of a does not read: left out"}}, 0, "as the notes say", "changed nothing in the end"},
		{agent.RolloutPatches{}, 0, "holds no apply_patch call", ""},
		{agent.RolloutPatches{Unread: 1, Notes: []string{"n"}}, 0, "1 applied but not read", ""},
	} {
		p := tc.p
		got := nothingChanged(agent.SessionDiff{Patches: &p, Unchanged: tc.unchanged}, nil)
		if !strings.Contains(got, tc.want) || tc.wantNot != "" && strings.Contains(got, tc.wantNot) {
			t.Errorf("%+v: %q, want %q and not %q", tc.p, got, tc.want, tc.wantNot)
		}
	}
}

// A Codex diff with nothing to show whose subagent's session does not
// read says that is why (it said the session's patches changed nothing
// in the end, or that its rollout holds no apply_patch call), and how it
// differs from a missing subagent: not to import, but the notes say what
// to do.
func TestNothingChangedUnreadSubagents(t *testing.T) {
	for _, tc := range []struct {
		d    agent.SessionDiff
		want string
	}{
		{agent.SessionDiff{Patches: &agent.RolloutPatches{}, UnreadSubagents: []string{"01S"}},
			"this session changed no file itself that rook can compare, and what its 1 subagent session(s) 01S changed is not known: they cannot be read (the notes say why, and what to do)"},
		{agent.SessionDiff{Patches: &agent.RolloutPatches{}, MissingSubagents: []string{"th1"}, UnreadSubagents: []string{"01S"}},
			"this session changed no file itself that rook can compare, and what its 1 subagent(s) th1 changed is not known: no imported session holds them (the notes say how to import them); and what its 1 subagent session(s) 01S changed is not known: they cannot be read (the notes say why, and what to do)"},
		{agent.SessionDiff{Patches: &agent.RolloutPatches{}, MissingSubagents: []string{"th1"}},
			"this session changed no file itself that rook can compare, and what its 1 subagent(s) th1 changed is not known: no imported session holds them (the notes say how to import them)"},
	} {
		if got := nothingChanged(tc.d, nil); got != tc.want {
			t.Errorf("%+v:\n got %q\nwant %q", tc.d, got, tc.want)
		}
	}
}

// A Claude Code diff with nothing to show whose own edit results do not
// read (their objects damaged or missing) says that is why: it said the
// transcript has no edit result that succeeded, as though the session
// had changed nothing, or that it changed nothing on disk.
func TestNothingChangedUnreadEvents(t *testing.T) {
	src := &eventlog.Source{Format: agent.FormatClaudeCode, Path: "/p/s1.jsonl"}
	for _, tc := range []struct {
		d    agent.SessionDiff
		want string
	}{
		{agent.SessionDiff{UnreadEvents: []uint64{2, 4}},
			"this session changed no file itself that rook can compare, and what 2 of its own events (#2, #4) changed is not known: they cannot be read (the notes say why, and what to do)"},
		{agent.SessionDiff{FromTranscript: 1, UnreadEvents: []uint64{4}, UnreadSubagents: []string{"01S"}},
			"this session changed nothing on disk that rook can compare, and what its 1 subagent session(s) 01S changed is not known: they cannot be read (the notes say why, and what to do); and what 1 of its own events (#4) changed is not known: they cannot be read (the notes say why, and what to do)"},
		{agent.SessionDiff{UnreadEvents: []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}},
			"this session changed no file itself that rook can compare, and what 12 of its own events (#1, #2, #3, #4, #5, #6, #7, #8, #9, #10 and 2 more) changed is not known: they cannot be read (the notes say why, and what to do)"},
	} {
		if got := nothingChanged(tc.d, src); got != tc.want {
			t.Errorf("%+v:\n got %q\nwant %q", tc.d, got, tc.want)
		}
	}
}
