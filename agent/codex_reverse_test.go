package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/fuzzseed"
)

// A file that existed before the session, changed by Update File patches
// alone (one before the point, two after it), is put back by undoing the
// two after it on the file as it is now; its undo puts the disk back.
func TestCodexRewindReversesUpdates(t *testing.T) {
	s := newCodexSession(t)
	s.patch("*** Update File: old.txt\n@@\n a\n-b\n+B")       // before the point
	s.patch("*** Update File: old.txt\n@@\n B\n-c\n+C\n d")   // the point
	s.patch("*** Update File: old.txt\n@@ a\n d\n-e\n+E\n+F") // after it
	r, id, seqs := s.imported(tree{"old.txt": "mode:0755:a\nB\nC\nd\nE\nF\n"})
	rw, err := r.Rewind(id, seqs[1], false)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.read("old.txt"); got != "a\nB\nc\nd\ne\n" {
		t.Fatalf("old.txt after the rewind: %q", got)
	}
	if fi, err := os.Stat(filepath.Join(s.ws, "old.txt")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("old.txt's mode: %v %v", fi, err)
	}
	if rw.FromRollout != 1 || len(rw.RolloutFiles) != 1 || rw.RolloutFiles[0] != (CodexRewound{Path: "old.txt", How: "reversed", From: "old.txt", fromID: rw.RolloutFiles[0].fromID}) {
		t.Fatalf("rewind %+v", rw)
	}
	if _, err := r.Rewind(rw.Fork, *rw.BeforeSeq, false); err != nil {
		t.Fatal(err)
	}
	if got := s.read("old.txt"); got != "a\nB\nC\nd\nE\nF\n" {
		t.Fatalf("old.txt after the undo: %q", got)
	}
}

// A file whose disk content is not what the patches after the point left
// (changed by hand since the session: an added line, a kept line, the
// line a chunk's @@ names) is refused, naming it and why, and nothing is
// written.
func TestCodexRewindReverseRefusesAChangedFile(t *testing.T) {
	for _, tc := range []struct{ name, disk, why string }{
		{"added line changed", "a\nB\nC\nd\nX\nF\n", "chunk 1 does not reverse, the lines it leaves are not in the file: it changed since the session"},
		{"kept line changed", "a\nB\nC\nD\nE\nF\n", "chunk 1 does not reverse, the lines it leaves are not in the file: it changed since the session"},
		{"@@ line changed", "A\nB\nC\nd\nE\nF\n", `chunk 1's @@ line ("a") is not in the file: it changed since the session`},
		{"no final newline", "a\nB\nC\nd\nE\nF", "it does not end with a newline, which Codex writes after an update: it changed since the session"},
		{"gone", "", "old.txt, where the patches left it, is not there: it changed since the session"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newCodexSession(t)
			s.patch("*** Update File: old.txt\n@@\n B\n-c\n+C\n d")
			s.patch("*** Update File: old.txt\n@@ a\n d\n-e\n+E\n+F")
			tr := tree{"old.txt": tc.disk, "other.txt": "o\n"}
			if tc.disk == "" {
				delete(tr, "old.txt")
			}
			r, id, seqs := s.imported(tr)
			_, err := r.Rewind(id, seqs[0], false)
			var ue *CodexUnknownStatesError
			if !errors.As(err, &ue) || len(ue.Files) != 1 || ue.Files[0].Path != "old.txt" || !strings.Contains(ue.Files[0].Why, tc.why) ||
				!strings.Contains(err.Error(), "--keep-files") {
				t.Fatalf("rewind: %v, want a refusal naming old.txt: %s", err, tc.why)
			}
			if tc.disk != "" && s.read("old.txt") != tc.disk {
				t.Fatalf("old.txt was written: %q", s.read("old.txt"))
			}
		})
	}
}

// A command the session ran after the point may have written the file:
// the disk is then not known to be what the patches left. Refused,
// naming the command's event.
func TestCodexRewindReverseRefusesAfterACommand(t *testing.T) {
	s := newCodexSession(t)
	s.patch("*** Update File: old.txt\n@@\n-a\n+A")
	s.command()
	r, id, seqs := s.imported(tree{"old.txt": "A\n"})
	_, err := r.Rewind(id, seqs[0], false)
	var ue *CodexUnknownStatesError
	if !errors.As(err, &ue) || len(ue.Files) != 1 || !strings.Contains(ue.Files[0].Why, "the command of event #") ||
		!strings.Contains(ue.Files[0].Why, "run after the point") {
		t.Fatalf("rewind: %v, want a refusal naming the command", err)
	}
	if got := s.read("old.txt"); got != "A\n" {
		t.Fatalf("old.txt was written: %q", got)
	}
}

// A file moved after the point and then updated: its content at the
// point, at its old path, is the patches undone on where they moved it;
// the path it moved to, which the session had deleted before the point,
// is removed. The mode is the moved file's.
func TestCodexRewindReversesAMove(t *testing.T) {
	s := newCodexSession(t)
	s.patch("*** Delete File: dst.txt")
	s.patch("*** Update File: src.txt\n*** Move to: dst.txt\n@@\n-s1\n+S1\n s2")
	s.patch("*** Update File: dst.txt\n@@\n S1\n-s2\n+S2")
	r, id, seqs := s.imported(tree{"dst.txt": "mode:0755:S1\nS2\n"})
	rw, err := r.Rewind(id, seqs[1], false)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.read("src.txt"); got != "s1\ns2\n" {
		t.Fatalf("src.txt: %q", got)
	}
	if fi, err := os.Stat(filepath.Join(s.ws, "src.txt")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("src.txt's mode: %v %v", fi, err)
	}
	if _, err := os.Lstat(filepath.Join(s.ws, "dst.txt")); !os.IsNotExist(err) {
		t.Fatalf("dst.txt is still there: %v", err)
	}
	var hows []string
	for _, f := range rw.RolloutFiles {
		hows = append(hows, f.Path+":"+f.How+"<"+f.From)
	}
	if want := "dst.txt:absent< src.txt:reversed<dst.txt"; strings.Join(hows, " ") != want {
		t.Fatalf("rollout files %q, want %q", hows, want)
	}
	// Undone: dst.txt back, src.txt gone.
	if _, err := r.Rewind(rw.Fork, *rw.BeforeSeq, false); err != nil {
		t.Fatal(err)
	}
	if got := s.read("dst.txt"); got != "S1\nS2\n" {
		t.Fatalf("dst.txt after the undo: %q", got)
	}
	if _, err := os.Lstat(filepath.Join(s.ws, "src.txt")); !os.IsNotExist(err) {
		t.Fatalf("src.txt after the undo: %v", err)
	}
}

// A file whose lines end with CRLF keeps them: its patches' lines carry
// no "\r" (Codex's parser drops it), the lines put back end as the
// file's do. One whose lines end some with CRLF, some with LF is refused:
// what a line put back ended with is not known.
func TestCodexRewindReverseCRLF(t *testing.T) {
	s := newCodexSession(t)
	s.patch("*** Update File: w.txt\r\n@@\r\n a\r\n-b\r\n+B\r\n c")
	s.patch("*** Update File: m.txt\n@@\n-b\n+B")
	r, id, seqs := s.imported(tree{"w.txt": "a\r\nB\r\nc\r\n", "m.txt": "a\r\nB\n"})
	states, _, _, err := r.codexRewindStates(id, seqs[0], s.ws)
	if err != nil {
		t.Fatal(err)
	}
	if st := states["w.txt"]; st.how != "reversed" || string(st.content) != "a\r\nb\r\nc\r\n" {
		t.Errorf("w.txt: %+v", st)
	}
	if st := states["m.txt"]; st.known || !strings.Contains(st.why, "its lines end some with CRLF (1), some with LF (1)") {
		t.Errorf("m.txt: %+v", st)
	}
}

// Codex on Linux and macOS writes the lines a patch adds to a CRLF file
// with LF, the others keeping their CRLF: a patch_apply_end's unified diff
// holds each line with its own ending, so undone from the diff the file
// comes back byte for byte, its endings mixed or not. Undone from the
// patch's own lines, which carry no ending, a mixed file is still refused.
func TestCodexRewindReverseUnifiedMixedEndings(t *testing.T) {
	s := newCodexSession(t)
	s.applied("w.txt", "@@ -1,4 +1,4 @@\n a\r\n-b\r\n+B\n c\r\n d\r\n")
	s.applied("x.txt", "@@ -1,2 +1,2 @@\n-a\r\n-b\r\n+a\n+B\n")
	s.patch("*** Update File: m.txt\n@@\n-b\n+B")
	r, id, seqs := s.imported(tree{"w.txt": "a\r\nB\nc\r\nd\r\n", "x.txt": "a\nB\n", "m.txt": "a\r\nB\nc\r\n"})
	states, _, _, err := r.codexRewindStates(id, seqs[0], s.ws)
	if err != nil {
		t.Fatal(err)
	}
	if st := states["w.txt"]; st.how != "reversed" || string(st.content) != "a\r\nb\r\nc\r\nd\r\n" {
		t.Errorf("w.txt: %+v", st)
	}
	if st := states["x.txt"]; st.how != "reversed" || string(st.content) != "a\r\nb\r\n" {
		t.Errorf("x.txt: %+v", st)
	}
	if st := states["m.txt"]; st.known || !strings.Contains(st.why, "its lines end some with CRLF (2), some with LF (1)") {
		t.Errorf("m.txt: %+v", st)
	}
}

// A patch_apply_end's unified diff says where its hunks are, and whether
// a side's file ends without a newline: undone, the file is put back
// without one where it had none.
func TestCodexRewindReverseUnifiedNoFinalNewline(t *testing.T) {
	s := newCodexSession(t)
	s.applied("u.txt", "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+B\n")
	s.applied("v.txt", "@@ -2,2 +2,2 @@\n x\n-y\n+Y\n")
	r, id, seqs := s.imported(tree{"u.txt": "a\nB\n", "v.txt": "w\nx\nY\nz"})
	states, _, _, err := r.codexRewindStates(id, seqs[0], s.ws)
	if err != nil {
		t.Fatal(err)
	}
	if st := states["u.txt"]; st.how != "reversed" || string(st.content) != "a\nb" {
		t.Errorf("u.txt: %+v", st)
	}
	// Its last line is not in the hunk: it keeps its end as it is.
	if st := states["v.txt"]; st.how != "reversed" || string(st.content) != "w\nx\ny\nz" {
		t.Errorf("v.txt: %+v", st)
	}
}

// A chunk's lines found twice in the file, or a chunk that only removes
// lines, does not say where it was: not reversed.
func TestReverseCodexChunksAmbiguous(t *testing.T) {
	for _, tc := range []struct{ patch, file, why string }{
		{"@@\n x\n-a", "x\nb\nx\n", "in the file 2 times"},
		{"@@\n-a", "x\nb\n", "only removes lines"},
	} {
		ops, err := parseCodexPatch(codexPatch("*** Update File: f\n" + tc.patch))
		if err != nil {
			t.Fatal(err)
		}
		text, _ := splitCodexText([]byte(tc.file))
		if _, why := reverseCodexChunks(text, ops[0].Chunks); !strings.Contains(why, tc.why) {
			t.Errorf("%q on %q: %q, want %q", tc.patch, tc.file, why, tc.why)
		}
	}
	// At the end of the file, it is known.
	ops, _ := parseCodexPatch(codexPatch("*** Update File: f\n@@\n x\n-a\n*** End of File"))
	text, _ := splitCodexText([]byte("x\nb\nx\n"))
	if got, why := reverseCodexChunks(text, ops[0].Chunks); why != "" || string(got.bytes()) != "x\nb\nx\na\n" {
		t.Errorf("at the end: %q %q", got.bytes(), why)
	}
}

// codexReverseSeeds: a file, NUL, then a Codex patch's update chunks (or,
// after "U", a unified diff), as FuzzCodexReverse reads them.
var codexReverseSeeds = []string{
	"a\nB\nc\n\x00@@\n a\n-b\n+B\n c",
	"x\nb\nx\n\x00@@\n x\n-a",
	"a\r\nB\r\n\x00@@\n-b\n+B",
	"a\nb\nC\nD\n\x00@@\n-c\n+C\n@@\n+D",
	"a\nB\n\x00U@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+B\n",
	"w\nx\nY\nz\x00U@@ -2,2 +2,2 @@\n x\n-y\n+Y\n",
	"a\n\x00@@ a\n+b\n*** End of File",
	// a CRLF file under a CRLF diff; an LF file whose removed line had a "\r"
	"a\r\nB\r\n\x00U@@ -1,2 +1,2 @@\n a\r\n-b\r\n+B\r\n",
	"Y\n\x00U@@ -1 +1 @@\n-y\r\n+Y\n",
}

// FuzzCodexReverse undoes a patch on a file, as a rewind does: it never
// panics, and what it gives, the patch applied again, is the file.
func FuzzCodexReverse(f *testing.F) {
	for _, s := range codexReverseSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		file, patch, _ := strings.Cut(string(in), "\x00")
		after, why := splitCodexText([]byte(file))
		if why != "" {
			return
		}
		if diff, ok := strings.CutPrefix(patch, "U"); ok {
			before, why := reverseUnifiedHunks(after, diff)
			if why != "" || !before.finalNL || !after.finalNL || strings.Contains(diff, `\`) {
				return
			}
			// The diff's lines keep their "\r" (a CRLF file's, or one of
			// its own), so it applies to the raw lines.
			if got, ok := applyUnifiedHunks(before.rawLines(), diff); !ok || !slices.Equal(got, after.rawLines()) {
				t.Fatalf("%q undone is %q, which the diff makes %q (%v)", file, before.bytes(), got, ok)
			}
			return
		}
		ops, err := parseCodexPatch(codexPatch("*** Update File: f\n" + patch))
		if err != nil || len(ops) != 1 || ops[0].Kind != "update" {
			return
		}
		before, why := reverseCodexChunks(after, ops[0].Chunks)
		if why != "" {
			return
		}
		if got, ok := applyCodexChunks(before.lines, ops[0].Chunks); !ok || !slices.Equal(got, after.lines) {
			t.Fatalf("%q undone is %q, which the patch makes %q (%v)", file, before.bytes(), got, ok)
		}
	})
}

// TestWriteCodexReverseFuzzSeeds regenerates testdata/fuzz/FuzzCodexReverse
// (ROOK_WRITE_FUZZ_SEEDS=1 go test ./agent -run WriteCodexReverseFuzzSeeds).
func TestWriteCodexReverseFuzzSeeds(t *testing.T) {
	seeds := make([][]byte, len(codexReverseSeeds))
	for i, s := range codexReverseSeeds {
		seeds[i] = []byte(s)
	}
	fuzzseed.Write(t, map[string][][]byte{"FuzzCodexReverse": seeds})
}

// A command at the rewind point itself runs after it (the rewind keeps
// the events before it): a deletion after it, whose patch_apply_end
// holds what it deleted, may hold what the command wrote, not what the
// file held at the point. Refused, naming the command.
func TestCodexRewindCommandAtThePointBeforeADeletion(t *testing.T) {
	s := newCodexSession(t)
	s.command()
	s.items = append(s.items, codexItem{"event_msg", fmt.Sprintf(`{"type":"patch_apply_end","call_id":"c%d","success":true,"changes":{%q:{"type":"delete","content":"after the command\n"}}}`,
		s.n, filepath.Join(s.ws, "d.txt"))})
	r, id, seqs := s.imported(tree{})
	calls, err := r.rolloutPatchCalls(id)
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := r.codexCommandSeqs(id, calls)
	if err != nil || len(cmds) != 1 || len(seqs) != 1 {
		t.Fatalf("commands %v, patches %v: %v", cmds, seqs, err)
	}
	states, _, _, err := r.codexRewindStates(id, cmds[0], s.ws)
	if err != nil {
		t.Fatal(err)
	}
	if st := states["d.txt"]; st.known || !strings.Contains(st.why, fmt.Sprintf("the command of event #%d", cmds[0])) {
		t.Fatalf("d.txt: %+v, want it refused naming the command", st)
	}
	// From after the command, the deletion's content is what it held.
	if states, _, _, err = r.codexRewindStates(id, cmds[0]+1, s.ws); err != nil || string(states["d.txt"].content) != "after the command\n" {
		t.Fatalf("d.txt from after the command: %+v %v", states["d.txt"], err)
	}
}

// A file larger than a rewind reads to undo patches on is refused, said
// so, not as a read that failed.
func TestCodexRewindReverseTooLarge(t *testing.T) {
	defer func(m int64) { codexReverseMax = m }(codexReverseMax)
	codexReverseMax = 4
	s := newCodexSession(t)
	s.patch("*** Update File: big.txt\n@@\n-a\n+A")
	r, id, seqs := s.imported(tree{"big.txt": "A\nbcdef\n"})
	states, _, _, err := r.codexRewindStates(id, seqs[0], s.ws)
	if err != nil {
		t.Fatal(err)
	}
	if st := states["big.txt"]; st.known || !strings.Contains(st.why, "big.txt is larger (8 bytes) than a rewind reads to undo patches on (4 bytes)") {
		t.Fatalf("big.txt: %+v", st)
	}
}

// A file whose first change after the point does not read says so, alone:
// no undo of it on the disk is tried.
func TestCodexRewindReverseNotTriedOnAnUnreadChange(t *testing.T) {
	s := newCodexSession(t)
	s.items = append(s.items, codexItem{"event_msg", fmt.Sprintf(`{"type":"patch_apply_end","call_id":"c0","success":true,"changes":{%q:5}}`, filepath.Join(s.ws, "c.txt"))})
	r, id, seqs := s.imported(tree{"c.txt": "c\n"})
	states, _, _, err := r.codexRewindStates(id, seqs[0], s.ws)
	if err != nil {
		t.Fatal(err)
	}
	if want := "its change in the patch's patch_apply_end does not read"; states["c.txt"].why != want {
		t.Errorf("c.txt: why %q, want %q", states["c.txt"].why, want)
	}
}

// A chunk whose old lines end with an empty line may have been placed by
// Codex without it (its retry when the file lacks it): where both ways
// give the file, which one Codex took, and so what the file held, is not
// known: not reversed. (Each file below is made by the patch from two
// files: "d\na\n" and "\nd\na\n"; "d\na\nd\nb\n" and "d\na\nd\nb\n\n".)
func TestReverseCodexChunksEmptyLastLineAmbiguous(t *testing.T) {
	for _, tc := range []struct{ patch, file string }{
		{"@@\n \n+b", "\nb\nd\na\n"},
		{"@@\n b\n@@\n-\n+c\n*** End of File", "d\na\nd\nb\nc\n"},
	} {
		ops, err := parseCodexPatch(codexPatch("*** Update File: f\n" + tc.patch))
		if err != nil {
			t.Fatal(err)
		}
		text, _ := splitCodexText([]byte(tc.file))
		if got, why := reverseCodexChunks(text, ops[0].Chunks); !strings.Contains(why, "is not known") {
			t.Errorf("%q on %q: %q %q, want it refused as not known", tc.patch, tc.file, got.bytes(), why)
		}
	}
	// A chunk of an empty line alone changes nothing either way: known.
	ops, _ := parseCodexPatch(codexPatch("*** Update File: f\n@@\n a\n-b\n+B\n@@\n "))
	text, _ := splitCodexText([]byte("a\nB\n\nc\n"))
	if got, why := reverseCodexChunks(text, ops[0].Chunks); why != "" || string(got.bytes()) != "a\nb\n\nc\n" {
		t.Errorf("a chunk of an empty line: %q %q", got.bytes(), why)
	}
	// Where only one way gives the file, it is known.
	ops, _ = parseCodexPatch(codexPatch("*** Update File: f\n@@\n a\n-b\n+B\n "))
	text, _ = splitCodexText([]byte("a\nB\n\nc\n"))
	if got, why := reverseCodexChunks(text, ops[0].Chunks); why != "" || string(got.bytes()) != "a\nb\n\nc\n" {
		t.Errorf("a blank line kept: %q %q", got.bytes(), why)
	}
}

// A patch_apply_end's unified diff holds each line as it was, its "\r"
// included: undone on a file whose lines end with LF, lines it says ended
// with CRLF are put back so (Codex, updating a CRLF file, writes the lines
// it replaced with LF); on a CRLF file, a line it says ended with LF is
// put back so.
func TestReverseUnifiedHunksKeepsCR(t *testing.T) {
	for _, tc := range []struct{ file, diff, want string }{
		{"A\nb\n", "@@ -1,2 +1,2 @@\n-a\r\n-b\r\n+A\n+b\n", "a\r\nb\r\n"},
		{"a\r\nB\r\n", "@@ -1,2 +1,2 @@\n a\r\n-b\n+B\r\n", "a\r\nb\n"},
		{"a\r\nB\r\n", "@@ -1,2 +1,2 @@\n a\r\n-b\r\n+B\r\n", "a\r\nb\r\n"},
		{"a\nB\n", "@@ -1,2 +1,2 @@\n a\n-b\n+B\n", "a\nb\n"},
		{"a\nB\n", "--- a/f\r\n+++ b/f\r\n@@ -1,2 +1,2 @@\r\n a\n--- b\r\n+B\n", "a\n-- b\r\n"},
	} {
		text, why := splitCodexText([]byte(tc.file))
		if why != "" {
			t.Fatal(why)
		}
		if got, why := reverseUnifiedHunks(text, tc.diff); why != "" || string(got.bytes()) != tc.want {
			t.Errorf("%q undone on %q: %q %q, want %q", tc.diff, tc.file, got.bytes(), why, tc.want)
		}
	}
	// A diff whose new lines end otherwise than the file's does not reverse.
	text, _ := splitCodexText([]byte("a\nB\n"))
	if _, why := reverseUnifiedHunks(text, "@@ -1,2 +1,2 @@\n a\r\n-b\r\n+B\r\n"); why == "" {
		t.Errorf("CRLF diff undone on an LF file")
	}
}

// A file changed between the undo's read of it and the capture of the
// disk for the rewind's own undo: what the rewind would write is not
// what it held at the point. Refused, nothing written.
func TestCodexRewindReverseFileChangedWhileRead(t *testing.T) {
	s := newCodexSession(t)
	s.patch("*** Update File: old.txt\n@@\n-a\n+A")
	r, id, seqs := s.imported(tree{"old.txt": "A\n"})
	captureHook = func(point, rel string) {
		if point == captureRead && rel == "old.txt" {
			captureHook = nil
			writeTree(t, s.ws, tree{"old.txt": "A, by hand\n"})
		}
	}
	defer func() { captureHook = nil }()
	_, err := r.Rewind(id, seqs[0], false)
	if err == nil || !strings.Contains(err.Error(), "old.txt changed while the rewind read it") || !strings.Contains(err.Error(), "nothing changed") {
		t.Fatalf("rewind: %v, want a refusal", err)
	}
	if got := s.read("old.txt"); got != "A, by hand\n" {
		t.Fatalf("old.txt was written: %q", got)
	}
}

// A fork (session fork, or a rewind with --keep-files) leaves the disk as
// its parent left it, after the parent's patches past the fork point,
// which the fork does not hold: undone on it, the fork's own patches would
// give a file neither held ("a b c D"). Refused, naming the parent; a
// fork a rewind of the files made (the disk put back to the fork point
// first) is undone on as its parent is.
func TestCodexRewindReverseOfAFork(t *testing.T) {
	s := newCodexSession(t)
	s.patch("*** Update File: z.txt\n@@\n-a\n+A\n b")
	s.patch("*** Update File: z.txt\n@@\n c\n-d\n+D")
	r, id, seqs := s.imported(tree{"z.txt": "A\nb\nc\nD\n"})
	fork, err := r.Log.Fork(id, seqs[1], eventlog.Meta{Title: "fork"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Rewind(fork.ID, seqs[0], false)
	var ue *CodexUnknownStatesError
	if !errors.As(err, &ue) || len(ue.Files) != 1 || !strings.Contains(ue.Files[0].Why, fmt.Sprintf("a fork of session %s at event %d", id, seqs[1])) {
		t.Fatalf("rewind of the fork: %v, want a refusal naming its parent", err)
	}
	if got := s.read("z.txt"); got != "A\nb\nc\nD\n" {
		t.Fatalf("z.txt was written: %q", got)
	}
	// A rewind's fork: the rewind put z.txt back as it was at its point.
	rw, err := r.Rewind(id, seqs[1], false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Rewind(rw.Fork, seqs[0], false); err != nil {
		t.Fatal(err)
	}
	if got := s.read("z.txt"); got != "a\nb\nc\nd\n" {
		t.Fatalf("z.txt after the rewind of the rewind's fork: %q", got)
	}
}

// Chunks that end with an empty kept line, found where they were, each
// undo the same way with it or without it: known, however many.
func TestReverseCodexChunksManyEndingEmpty(t *testing.T) {
	var patch, file, want strings.Builder
	for k := range 8 {
		fmt.Fprintf(&patch, "@@\n f%d\n-a%d\n+b%d\n \n", k, k, k)
		fmt.Fprintf(&file, "f%d\nb%d\n\n", k, k)
		fmt.Fprintf(&want, "f%d\na%d\n\n", k, k)
	}
	file.WriteString("end\n")
	want.WriteString("end\n")
	ops, err := parseCodexPatch(codexPatch("*** Update File: f\n" + strings.TrimSuffix(patch.String(), "\n")))
	if err != nil {
		t.Fatal(err)
	}
	text, _ := splitCodexText([]byte(file.String()))
	if got, why := reverseCodexChunks(text, ops[0].Chunks); why != "" || string(got.bytes()) != want.String() {
		t.Errorf("%q %q", got.bytes(), why)
	}
}

// Chunks each ending with an empty old line may each have been placed with
// it or without it: on a file changed since, every way failed at the last
// chunk, and the search tried 2^n of them (22 chunks: 4 s, 24: 15 s, all
// for a refusal). It is bounded, and says so.
func TestReverseCodexChunksBounded(t *testing.T) {
	const n = 22
	var patch, file strings.Builder
	patch.WriteString("*** Update File: m.txt\n")
	for k := range n {
		fmt.Fprintf(&patch, "@@\n-a%d\n-\n+b%d\n", k, k)
		if k < n-1 {
			fmt.Fprintf(&file, "b%d\n", k)
		}
	}
	fmt.Fprintf(&file, "b%d edited by hand\n", n-1)
	ops, err := parseCodexPatch(codexPatch(patch.String()))
	if err != nil {
		t.Fatal(err)
	}
	text, _ := splitCodexText([]byte(file.String()))
	if _, why := reverseCodexChunks(text, ops[0].Chunks); !strings.Contains(why, "can be undone in too many ways") {
		t.Fatalf("%q", why)
	}
}

// A shell script that runs apply_patch with a heredoc and then more (`sed
// -i` on the next line) is a command too: what it ran after the patch may
// have changed the file, so a rewind to before it refuses, naming it (it
// undid the patch alone, writing "a Q", a file that never was). The same
// script with nothing after the heredoc is the patch alone.
func TestCodexRewindReverseRefusesAHeredocScriptThatRunsMore(t *testing.T) {
	for _, more := range []bool{true, false} {
		s := newCodexSession(t)
		script := "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: old.txt\n@@\n-a\n+A\n*** End Patch\nEOF\n"
		disk := "A\nq\n"
		if more {
			script += "sed -i 's/q/Q/' old.txt\n"
			disk = "A\nQ\n"
		}
		args, _ := json.Marshal(map[string][]string{"command": {"bash", "-lc", script}})
		s.items = append(s.items,
			codexItem{"response_item", fmt.Sprintf(`{"type":"function_call","name":"shell","call_id":"h1","arguments":%q}`, args)},
			codexItem{"response_item", `{"type":"function_call_output","call_id":"h1","output":"{\"output\":\"Success. Updated the following files:\\nM old.txt\\n\",\"metadata\":{\"exit_code\":0}}"}`})
		r, id, seqs := s.imported(tree{"old.txt": disk})
		if len(seqs) != 1 {
			t.Fatalf("patch calls at %v", seqs)
		}
		_, err := r.Rewind(id, seqs[0], false)
		var ue *CodexUnknownStatesError
		switch {
		case more && (!errors.As(err, &ue) || len(ue.Files) != 1 || !strings.Contains(ue.Files[0].Why, "the command of event #")):
			t.Fatalf("rewind: %v, want a refusal naming the command", err)
		case more && s.read("old.txt") != disk:
			t.Fatalf("old.txt was written: %q", s.read("old.txt"))
		case !more && (err != nil || s.read("old.txt") != "a\nq\n"):
			t.Fatalf("the patch alone: %v, old.txt %q", err, s.read("old.txt"))
		}
	}
}

// A rewind whose workspace is gone (moved, renamed) says so: it said of
// each file that it "is not there: it changed since the session".
func TestCodexRewindWorkspaceGone(t *testing.T) {
	s := newCodexSession(t)
	s.patch("*** Update File: old.txt\n@@\n-a\n+A")
	r, id, seqs := s.imported(tree{"old.txt": "A\n"})
	if err := os.Rename(s.ws, s.ws+".moved"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Rewind(id, seqs[0], false); err == nil || !strings.Contains(err.Error(), "the session's workspace "+s.ws+" is not on this disk") {
		t.Fatalf("rewind: %v", err)
	}
}

// A rewind undone (its printed undo run) gives the disk back as it was
// before it, the parent's patches after the point on it again: a rewind
// of that rewind's fork (or of the undo's) took them for undone, undid
// only its own, and wrote a file that never was (a helper's find: "a b c
// y Z"). It refuses, naming the session to rewind instead, which works.
func TestCodexRewindOfAnUndoneRewind(t *testing.T) {
	s := newCodexSession(t)
	s.patch("*** Update File: m.txt\n@@\n-a\n+A\n b")
	s.patch("*** Update File: m.txt\n@@\n y\n-z\n+Z")
	r, id, seqs := s.imported(tree{"m.txt": "A\nb\nc\ny\nZ\n"})
	rw, err := r.Rewind(id, seqs[1], false)
	if err != nil || s.read("m.txt") != "A\nb\nc\ny\nz\n" {
		t.Fatalf("rewind: %v, m.txt %q", err, s.read("m.txt"))
	}
	undo, err := r.Rewind(rw.Fork, *rw.BeforeSeq, false)
	if err != nil || s.read("m.txt") != "A\nb\nc\ny\nZ\n" {
		t.Fatalf("undo: %v, m.txt %q", err, s.read("m.txt"))
	}
	for _, fork := range []eventlog.ID{rw.Fork, undo.Fork} {
		_, err := r.Rewind(fork, seqs[0], false)
		var ue *CodexUnknownStatesError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "that rewind was undone since") || !strings.Contains(err.Error(), "rewind session "+id.String()+" instead") {
			t.Fatalf("rewind of %s: %v", fork, err)
		}
		if got := s.read("m.txt"); got != "A\nb\nc\ny\nZ\n" {
			t.Fatalf("m.txt was written: %q", got)
		}
	}
	if _, err := r.Rewind(id, seqs[0], false); err != nil || s.read("m.txt") != "a\nb\nc\ny\nz\n" {
		t.Fatalf("rewind of the session: %v, m.txt %q", err, s.read("m.txt"))
	}
}

// The same of an imported Codex session: a rewind of a rewind's fork to
// before its point wrote "A b c y z" (the disk before the second rewind)
// where the file at that point was "a b c y z".
func TestCodexRewindOfARewindsFork(t *testing.T) {
	s := newCodexSession(t)
	s.patch("*** Update File: m.txt\n@@\n-a\n+A\n b")
	s.patch("*** Update File: m.txt\n@@\n y\n-z\n+Z")
	r, id, seqs := s.imported(tree{"m.txt": "A\nb\nc\ny\nZ\n"})
	first, err := r.Rewind(id, seqs[1], false)
	if err != nil || s.read("m.txt") != "A\nb\nc\ny\nz\n" {
		t.Fatalf("rewind: %v, m.txt %q", err, s.read("m.txt"))
	}
	second, err := r.Rewind(first.Fork, seqs[0], false)
	if err != nil || s.read("m.txt") != "a\nb\nc\ny\nz\n" {
		t.Fatalf("rewind of its fork: %v, m.txt %q", err, s.read("m.txt"))
	}
	if _, err := r.Rewind(second.Fork, 0, false); err != nil || s.read("m.txt") != "a\nb\nc\ny\nz\n" {
		t.Fatalf("rewind of the newest fork to 0: %v, m.txt %q", err, s.read("m.txt"))
	}
}
