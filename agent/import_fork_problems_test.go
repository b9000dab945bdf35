package agent

import (
	"strings"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// A Codex fork copies its parent's lines, the parent's problem lines too
// (one not JSON, copied byte for byte; one whose payload is no object and
// one of a type rook does not know, written again at another time). The report counted each twice, and
// listed it twice: once in the parent's file, where it is, and again in the
// fork's. Each is counted and listed once, in the parent's file; the
// fork's file says it copied them. Both files export byte for byte.
func TestImportCodexForkCountsCopiedProblemLinesOnce(t *testing.T) {
	for _, order := range []string{"one run", "parent first", "fork alone"} {
		t.Run(order, func(t *testing.T) {
			fsys := vfs.NewMem()
			r := testRook(t, fsys)
			var total [2]int
			bad := []codexItem{{"response_item", `"not an object"`}, {"brand_new_type", `{"x":1}`}}
			p := []codexItem{codexMetaItem(codexPID, "")}
			p = append(p, codexTurnItems(1, &total)...)
			p = append(p, bad...)
			f := append([]codexItem{codexMetaItem(codexFID, codexPID)}, p...)
			f = append(f, codexTurnItems(2, &total)...)
			pLines := codexStamped(p, 10, 0)
			pLines = append(pLines[:3], append([]string{"garbage, not JSON"}, pLines[3:]...)...)
			fLines := codexStamped(f, 11, 0)
			fLines = append(fLines[:4], append([]string{"garbage, not JSON"}, fLines[4:]...)...)
			pPath := "/c/2026/02/03/rollout-2026-02-03T10-00-00-" + codexPID + ".jsonl"
			fPath := "/c/2026/02/03/rollout-2026-02-03T11-00-00-" + codexFID + ".jsonl"
			pData := writeSource(t, fsys, pPath, pLines, "")
			fData := writeSource(t, fsys, fPath, fLines, "")
			var rep ImportReport
			switch order {
			case "one run":
				rep = mustImport(t, r, FormatCodex, "/c")
			case "parent first":
				mustImport(t, r, FormatCodex, pPath)
				rep = mustImport(t, r, FormatCodex, fPath)
			case "fork alone":
				rep = mustImport(t, r, FormatCodex, fPath)
			}
			want, wantIn := 2, pPath
			if order == "parent first" {
				want = 0 // reported by the import of the parent
			}
			if order == "fork alone" {
				wantIn = fPath // no parent to have reported them: the fork's
			}
			if rep.Unparsed != want {
				t.Errorf("%d line(s) did not parse; want %d (the parent's 2, once)", rep.Unparsed, want)
			}
			if rep.Unknown != want/2 {
				t.Errorf("%d line(s) of an unknown type; want %d (the parent's, once)", rep.Unknown, want/2)
			}
			n := 0
			for _, pr := range rep.Problems {
				if pr.Line > 0 {
					n++
					if pr.File != wantIn {
						t.Errorf("problem listed in %s: %+v", pr.File, pr)
					}
				}
			}
			if n != want+want/2 {
				t.Errorf("%d problem line(s) listed; want %d: %+v", n, want, rep.Problems)
			}
			ff := fileByPath(t, rep, fPath)
			if order != "fork alone" && (ff.Unparsed != 0 || !strings.Contains(ff.Note, "3 problem line(s) copied from its parent")) {
				t.Errorf("the fork's file: %d unparsed, note %q", ff.Unparsed, ff.Note)
			}
			if order == "one run" {
				mustExport(t, r, *fileByPath(t, rep, pPath).Session, pData)
			}
			mustExport(t, r, *ff.Session, fData)
		})
	}
}

// A fork's own problem line, past the copy, the same as one of its
// parent's but for its timestamp (a type rook does not know, written
// again with the same payload), is the fork's: counted and listed in the
// fork's file, whether in the import that takes the copy in or in a later
// one of the fork grown. It was taken for a copy and left out of the
// report.
func TestImportCodexForkOwnProblemLineLikeParentsCounted(t *testing.T) {
	for _, grown := range []bool{false, true} {
		t.Run(map[bool]string{false: "one import", true: "grown"}[grown], func(t *testing.T) {
			fsys := vfs.NewMem()
			r := testRook(t, fsys)
			var total [2]int
			bad := codexItem{"brand_new_type", `{"x":1}`}
			p := []codexItem{codexMetaItem(codexPID, "")}
			p = append(p, codexTurnItems(1, &total)...)
			p = append(p, bad)
			f := append([]codexItem{codexMetaItem(codexFID, codexPID)}, p...)
			f = append(f, codexTurnItems(2, &total)...)
			pLines := codexStamped(p, 10, 0)
			fLines := codexStamped(f, 11, 0)
			own := codexStamped([]codexItem{bad}, 12, 0)[0] // the fork's own
			pPath := "/c/2026/02/03/rollout-2026-02-03T10-00-00-" + codexPID + ".jsonl"
			fPath := "/c/2026/02/03/rollout-2026-02-03T11-00-00-" + codexFID + ".jsonl"
			writeSource(t, fsys, pPath, pLines, "")
			if !grown {
				fLines = append(fLines, own)
			}
			writeSource(t, fsys, fPath, fLines, "")
			rep := mustImport(t, r, FormatCodex, "/c")
			if grown {
				writeSource(t, fsys, fPath, append(fLines, own), "")
				rep = mustImport(t, r, FormatCodex, fPath)
			}
			var inFork int
			for _, pr := range rep.Problems {
				if pr.File == fPath && pr.Line > 0 {
					inFork++
				}
			}
			if inFork != 1 {
				t.Errorf("%d problem(s) listed in the fork's file; want 1, its own line: %+v", inFork, rep.Problems)
			}
		})
	}
}
