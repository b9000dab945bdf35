package cli

import (
	"testing"

	"github.com/rookhq/rook/agent"
)

// A file a rewind left under a link (agent.DiskUnderLink) is said left,
// whatever its state was to do: a rollout's file to write (replayed,
// reversed, deleted) and a transcript's, whose state does not say
// whether it was to be written or removed, are not said put back, nor
// a file the rewind removed; a rollout's file to remove says why it was.
func TestRewindSaysAFileLeftUnderALink(t *testing.T) {
	const write = "left as it is: a link above it led there, and the rewind writes and removes nothing through a link"
	for _, how := range []string{"replayed", "reversed", "deleted"} {
		if got := rolloutHow(agent.CodexRewound{Path: "a/x.txt", How: how, Disk: agent.DiskUnderLink}); got != write {
			t.Errorf("rollout file (%s) under a link: %q, want %q", how, got, write)
		}
	}
	if got, want := rolloutHow(agent.CodexRewound{Path: "a/x.txt", How: "said-absent", Disk: agent.DiskUnderLink}), "left as it is: a link above it led there, and the rewind removes nothing through a link (--absent says it did not exist then)"; got != want {
		t.Errorf("rollout file to remove under a link: %q, want %q", got, want)
	}
	if got := transcriptHow(agent.TranscriptRewound{Path: "a/x.txt", Disk: agent.DiskUnderLink}); got != write {
		t.Errorf("transcript file under a link: %q, want %q", got, write)
	}
	if !notPutBack(agent.DiskUnderLink) {
		t.Errorf("a file left under a link is counted as put back")
	}
}
