package agent

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// A fork imported on its own (its file named alone) while its parent's
// session holds only the parent's first turn, though the fork copied two:
// the fork counts its copy of turn 2, which no session counts yet. When
// the parent's file, grown by turn 2, is imported next, the parent counts
// turn 2, and the fork must leave its copy of it out, as it does when the
// two files come in the other order: it counted it too (the turn's tokens
// twice in the store), and so did the fork made in rook of the fork.
func TestForkLeavesOutWhatItsParentGrewBy(t *testing.T) {
	for _, format := range []string{FormatClaudeCode, FormatCodex} {
		t.Run(format, func(t *testing.T) {
			fsys := vfs.NewMem()
			r := testRook(t, fsys)
			var dir, pPath, fPath string
			var parent, fork []string
			var turn [2]uint64 // the tokens of one turn of the parent, and the fork's own
			var ownIn, ownOut uint64
			if format == FormatClaudeCode {
				dir = "/p/-home-u-proj"
				pPath, fPath = dir+"/P.jsonl", dir+"/F.jsonl"
				parent, fork = claudeForkFiles(false)
				turn = [2]uint64{claudeTurnIn, claudeTurnOut}
				ownIn, ownOut = claudeTurnIn, claudeTurnOut
			} else {
				dir = "/c"
				paths, lines := codexForkFiles(sameLine)
				pPath, fPath = paths[0], paths[1]
				parent, fork = lines[0], lines[1]
				turn = [2]uint64{1000, 10} // turn 1's; turn 2 is 2000, 20
				ownIn, ownOut = 3000, 30
			}
			firstTurn := len(claudeLines("P", 1))
			if format == FormatCodex {
				firstTurn = 1 + 4 // session_meta, turn 1
			}
			writeSource(t, fsys, pPath, parent[:firstTurn], "")
			pid := *fileByPath(t, mustImport(t, r, format, dir), pPath).Session
			tokensOf(t, r, pid, "the parent, turn 1", turn[0], turn[1])

			writeSource(t, fsys, pPath, parent, "")
			writeSource(t, fsys, fPath, fork, "")
			rep := mustImport(t, r, format, fPath)
			fid := *fileByPath(t, rep, fPath).Session
			if f := fileByPath(t, rep, fPath); f.Parent == nil || *f.Parent != pid {
				t.Fatalf("the fork is not linked to its parent: %+v", f)
			}
			s, err := r.Log.Summary(fid)
			if err != nil {
				t.Fatal(err)
			}
			rf, err := r.Log.Fork(fid, s.Events, eventlog.Meta{Title: "rf"})
			if err != nil {
				t.Fatal(err)
			}

			rep = mustImport(t, r, format, dir)
			if f := fileByPath(t, rep, pPath); f.Status != ImportGrown {
				t.Fatalf("the parent: %+v", f)
			}
			var pIn, pOut uint64 = 2 * claudeTurnIn, 2 * claudeTurnOut
			if format == FormatCodex {
				pIn, pOut = 3000, 30
			}
			tokensOf(t, r, pid, "the parent, grown", pIn, pOut)
			tokensOf(t, r, fid, "the fork", ownIn, ownOut)
			tokensOf(t, r, rf.ID, "the fork made in rook of the fork", ownIn, ownOut)

			// Removed, the parent's share counts in the fork again.
			if _, err := r.RemoveSession(pid); err != nil {
				t.Fatal(err)
			}
			tokensOf(t, r, fid, "the fork, its parent removed", pIn+ownIn, pOut+ownOut)
			tokensOf(t, r, rf.ID, "the fork made in rook, the parent removed", pIn+ownIn, pOut+ownOut)
		})
	}
}

// A fork too big to read ahead (streamed: over the chunk, here 100 bytes)
// waits for its parent's file in the same run (a Claude Code fork's new or
// grown, a Codex fork's new), as a smaller one does: it is imported after the parent, with what it copied
// left out as it comes in (not by a recount after), and its first lines
// alone say so (sourceMapper on its head).
func TestStreamedForkWaitsForItsParent(t *testing.T) {
	for _, format := range []string{FormatClaudeCode, FormatCodex} {
		for _, grown := range []bool{false, true} {
			if format == FormatCodex && grown {
				continue // a Codex fork waits only for a parent not in yet, of any size (sourceNames.waits)
			}
			t.Run(format+map[bool]string{false: "/new", true: "/grown"}[grown], func(t *testing.T) {
				fsys := vfs.NewMem()
				r := testRook(t, fsys)
				var dir, pPath, fPath string
				var parent, fork []string
				firstTurn := len(claudeLines("P", 1))
				ownIn, ownOut := uint64(claudeTurnIn), uint64(claudeTurnOut)
				if format == FormatClaudeCode {
					dir = "/p/-home-u-proj"
					pPath, fPath = dir+"/P.jsonl", dir+"/F.jsonl" // the fork first, by name
					parent, fork = claudeForkFiles(false)
				} else {
					dir = "/c"
					paths, lines := codexForkFiles(sameLine)
					// The fork's rollout first: archived_sessions/ before sessions/.
					pPath, fPath = "/c/sessions/"+filepath.Base(paths[0]), "/c/archived_sessions/"+filepath.Base(paths[1])
					parent, fork = lines[0], lines[1]
					firstTurn = 1 + 4
					ownIn, ownOut = 3000, 30
				}
				if grown {
					writeSource(t, fsys, pPath, parent[:firstTurn], "")
					mustImport(t, r, format, dir)
				}
				writeSource(t, fsys, pPath, parent, "")
				writeSource(t, fsys, fPath, fork, "")
				rep, err := r.Import(ImportOptions{Format: format, Paths: []string{dir}, ChunkBytes: 100})
				if err != nil {
					t.Fatal(err)
				}
				var order []string
				for _, f := range rep.Files {
					order = append(order, f.Path)
				}
				if !slices.Equal(order, []string{pPath, fPath}) {
					t.Fatalf("the fork did not wait for its parent: %q", order)
				}
				f := fileByPath(t, rep, fPath)
				tokensOf(t, r, *f.Session, "the fork", ownIn, ownOut)
			})
		}
	}
}
