package cli

import (
	"testing"

	"github.com/rookhq/rook/agent"
)

// A rewind that changed no file says why there is nothing to undo, and
// what it says is true: every file already as it was then, or what it
// left and why. It said "every file was already as it was then" of one
// that left a directory holding a file of the user's where a file had
// been (dir-kept), or a path reached through a link (under-link).
func TestUnchangedLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		rep  agent.RewindReport
		want string
	}{
		{"as then", agent.RewindReport{Paths: []string{"a.txt", "b.txt"},
			RolloutFiles: []agent.CodexRewound{{Path: "a.txt", Disk: agent.DiskAsThen}, {Path: "b.txt", Disk: agent.DiskNotThere}}},
			"no file changed: every file was already as it was then, so there is nothing to undo"},
		{"dir kept", agent.RewindReport{Paths: []string{"a.txt", "d", "d/x.txt"}, DirsKept: []string{"d"},
			TranscriptFiles: []agent.TranscriptRewound{{Path: "a.txt", Disk: agent.DiskAsThen}, {Path: "d", Disk: agent.DiskDirKept}, {Path: "d/x.txt", Disk: agent.DiskNotThere}}},
			"no file changed: it left d as it is (a directory holding what the rewind does not remove, said above), and every other file was already as it was then, so there is nothing to undo"},
		{"dir kept alone", agent.RewindReport{Paths: []string{"d"}, DirsKept: []string{"d"},
			RolloutFiles: []agent.CodexRewound{{Path: "d", How: "said-absent", Disk: agent.DiskDirKept}}},
			"no file changed: it left d as it is (a directory holding what the rewind does not remove, said above), so there is nothing to undo"},
		{"under link", agent.RewindReport{Paths: []string{"d/x.txt", "c.txt"},
			RolloutFiles: []agent.CodexRewound{{Path: "d/x.txt", How: "absent", Disk: agent.DiskUnderLink}, {Path: "c.txt", Disk: agent.DiskAsThen}}},
			"no file changed: it left d/x.txt as it is (reached through a link the rewind removed, said above), and every other file was already as it was then, so there is nothing to undo"},
		{"captured dirs kept, not restored", agent.RewindReport{Paths: []string{"a.txt"}, DirsKept: []string{"build"},
			NotRestored: []agent.UncomparedFile{{Path: "b.txt", Error: "its state then is not known"}}},
			"no file changed: it left build as it is (a directory holding what the rewind does not remove, said above), b.txt as it is (its state then not known, said above), and every other file was already as it was then, so there is nothing to undo"},
	} {
		if got := unchangedLine(tc.rep); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}
