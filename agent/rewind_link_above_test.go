package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A link above a path a rewind writes or removes (a, made a link since to
// a directory holding b/x.txt: real in the workspace, or out outside it),
// that the rewind does not remove itself: nothing is written or removed
// through it. A path captured absent (a/b/x.txt) removed real/b/x.txt
// through the link, and a captured file was written over it; through a
// link outside, the rewind refused it all ("a/b/x.txt leads to ...,
// outside the workspace ...: refused"). The path is left as it is and
// named, with why (not_restored); the rest is put back (z.txt), and the
// undo puts back what the rewind changed, and touches nothing through
// the link either.
func TestRewindLeavesAPathUnderALinkItDoesNotRemove(t *testing.T) {
	for _, target := range []string{"real", "../out"} {
		for _, c := range []struct {
			name   string
			before tree   // the workspace captured (a/b/x.txt, z.txt)
			what   string // the reason says it does not do this through the link
		}{
			{name: "captured absent", before: tree{"z.txt": "z0\n"}, what: "removes nothing"},
			{name: "captured file", before: tree{"z.txt": "z0\n", "a/b/x.txt": "x0\n"}, what: "writes nothing"},
		} {
			t.Run(c.name+" to "+target, func(t *testing.T) {
				r, ws, id := newWorkspace(t)
				writeTree(t, ws, c.before)
				if _, _, err := r.CaptureSession(id, []string{"z.txt", "a/b/x.txt"}, "edit", DefaultLimits); err != nil {
					t.Fatal(err)
				}
				os.RemoveAll(filepath.Join(ws, "a"))
				writeTree(t, ws, tree{"z.txt": "z1\n"})
				to := filepath.Join(ws, target)
				writeTree(t, to, tree{"b/x.txt": "theirs\n"})
				if err := os.Symlink(target, filepath.Join(ws, "a")); err != nil {
					t.Skip(err)
				}
				beforeRewind := readTree(t, ws)
				rep, err := r.Rewind(id, 0, false)
				if err != nil {
					t.Fatalf("rewind: %v", err)
				}
				if got := readFileT(t, filepath.Join(to, "b", "x.txt")); got != "theirs\n" {
					t.Fatalf("%s/b/x.txt, reached through the link a: %q, want it left as it is", target, got)
				}
				if got := readFileT(t, filepath.Join(ws, "z.txt")); got != "z0\n" {
					t.Fatalf("z.txt: %q, want it put back", got)
				}
				if strings.Join(rep.Paths, " ") != "z.txt" || rep.FilesRestored != 1 || rep.FilesRemoved != 0 {
					t.Fatalf("paths %q, %d restored, %d removed: want z.txt alone restored", rep.Paths, rep.FilesRestored, rep.FilesRemoved)
				}
				if len(rep.NotRestored) != 1 || rep.NotRestored[0].Path != "a/b/x.txt" ||
					!strings.Contains(rep.NotRestored[0].Error, fmt.Sprintf("a is a link now (to %s)", target)) ||
					!strings.Contains(rep.NotRestored[0].Error, c.what+" through a link") {
					t.Fatalf("not restored %+v: want a/b/x.txt, saying the link a is left and %s through it", rep.NotRestored, c.what)
				}
				if _, err := r.Rewind(rep.Fork, *rep.BeforeSeq, false); err != nil {
					t.Fatalf("undo: %v", err)
				}
				sameTree(t, "after the undo", readTree(t, ws), beforeRewind)
				if got := readFileT(t, filepath.Join(to, "b", "x.txt")); got != "theirs\n" {
					t.Fatalf("%s/b/x.txt after the undo: %q", target, got)
				}
			})
		}
	}
}

// The same of an imported Codex session's rewind: --absent a/b/x.txt (the
// session added it after the point) removed real/b/x.txt through the
// link a, and a file the patches say what it held then (replayed) was
// written through it; through a link outside the workspace, the rewind
// refused. Each is left as it is, said so ("disk":"under-link"); y.txt is
// put back, and the undo works.
func TestCodexRewindLeavesAPathUnderALinkItDoesNotRemove(t *testing.T) {
	for _, target := range []string{"real", "../out"} {
		for _, c := range []struct {
			name    string
			patches []string
			absent  []string
			disk    string // the rollout files, as JSON
		}{
			{
				name:    "absent",
				patches: []string{"*** Add File: y.txt\n+y0", "*** Update File: y.txt\n@@\n-y0\n+y1\n*** Add File: a/b/x.txt\n+x"},
				absent:  []string{"a/b/x.txt"},
				disk:    `[{"path":"a/b/x.txt","how":"said-absent","disk":"under-link"},{"path":"y.txt","how":"replayed"}]`,
			},
			{
				name:    "replayed",
				patches: []string{"*** Add File: y.txt\n+y0\n*** Add File: a/b/x.txt\n+x0", "*** Update File: y.txt\n@@\n-y0\n+y1\n*** Update File: a/b/x.txt\n@@\n-x0\n+x1"},
				disk:    `[{"path":"a/b/x.txt","how":"replayed","disk":"under-link"},{"path":"y.txt","how":"replayed"}]`,
			},
		} {
			t.Run(c.name+" to "+target, func(t *testing.T) {
				s := newCodexSession(t)
				for _, p := range c.patches {
					s.patch(p)
				}
				to := filepath.Join(s.ws, target)
				writeTree(t, to, tree{"b/x.txt": "theirs\n"})
				r, id, seqs := s.imported(tree{"y.txt": "y1\n", "a": "link:" + target})
				before := s.listing()
				rw, err := r.RewindWith(id, seqs[1], RewindOptions{Absent: c.absent})
				if err != nil {
					t.Fatalf("rewind: %v", err)
				}
				if got := readFileT(t, filepath.Join(to, "b", "x.txt")); got != "theirs\n" {
					t.Fatalf("%s/b/x.txt, reached through the link a: %q, want it left as it is", target, got)
				}
				if got := s.read("y.txt"); got != "y0\n" {
					t.Fatalf("y.txt: %q, want it put back", got)
				}
				if got := rolloutJSON(t, rw); got != c.disk {
					t.Fatalf("rollout files\n %s, want\n %s", got, c.disk)
				}
				if strings.Join(rw.Paths, " ") != "y.txt" || rw.FilesRestored != 1 || rw.FilesRemoved != 0 || len(rw.NotRestored) != 0 {
					t.Fatalf("paths %q, %d restored, %d removed, not restored %+v: want y.txt alone restored", rw.Paths, rw.FilesRestored, rw.FilesRemoved, rw.NotRestored)
				}
				if _, err := r.Rewind(rw.Fork, *rw.BeforeSeq, false); err != nil {
					t.Fatalf("undo: %v", err)
				}
				if got := s.listing(); got != before {
					t.Fatalf("after the undo %q, want %q", got, before)
				}
				if got := readFileT(t, filepath.Join(to, "b", "x.txt")); got != "theirs\n" {
					t.Fatalf("%s/b/x.txt after the undo: %q", target, got)
				}
			})
		}
	}
}

// Where the path under the link is all the rewind had to change, nothing
// is done, and the path is still said to be left (not "not-there", as
// when nothing was there to remove).
func TestCodexRewindUnderALinkAlone(t *testing.T) {
	s := newCodexSession(t)
	s.patch("*** Add File: y.txt\n+y0")
	s.patch("*** Add File: a/b/x.txt\n+x")
	writeTree(t, s.ws, tree{"real/b/x.txt": "theirs\n"})
	r, id, seqs := s.imported(tree{"y.txt": "y0\n", "a": "link:real"})
	rw, err := r.RewindWith(id, seqs[1], RewindOptions{Absent: []string{"a/b/x.txt"}})
	if err != nil {
		t.Fatalf("rewind: %v", err)
	}
	if got := s.read("real/b/x.txt"); got != "theirs\n" {
		t.Fatalf("real/b/x.txt: %q", got)
	}
	if want := `[{"path":"a/b/x.txt","how":"said-absent","disk":"under-link"}]`; rolloutJSON(t, rw) != want {
		t.Fatalf("rollout files %s, want %s", rolloutJSON(t, rw), want)
	}
	if rw.DiskChanged || rw.BeforeSeq != nil {
		t.Fatalf("rewind %+v: want nothing changed", rw)
	}
}

// A checkpoint restore has every directory above its files as one the
// capture had (a tree capture follows no link): one that is a link now
// is refused before anything is written, inside the workspace or out,
// saying to remove the link. Leading outside, it said only that the path
// "leads to ..., outside the workspace ...: refused".
func TestRestoreRefusesALinkAboveSayingWhatToDo(t *testing.T) {
	for _, target := range []string{"../other", "../../out"} {
		t.Run(target, func(t *testing.T) {
			r, ws, _ := newWorkspace(t)
			writeTree(t, ws, tree{"d/sub/b.txt": "b\n"})
			m, err := r.CaptureTree(ws, "d", "base", DefaultLimits)
			if err != nil {
				t.Fatal(err)
			}
			os.RemoveAll(filepath.Join(ws, "d", "sub"))
			to := filepath.Join(ws, "d", target)
			writeTree(t, to, tree{"b.txt": "theirs\n"})
			if err := os.Symlink(target, filepath.Join(ws, "d", "sub")); err != nil {
				t.Skip(err)
			}
			_, err = r.RestoreCheckpoint("base", m, "")
			want := fmt.Sprintf("cannot restore d/sub/b.txt: d/sub is a link now (to %s) where the capture had a directory, and rook does not write through it; remove the link (or put the directory back) and run this again: nothing written", target)
			if err == nil || err.Error() != want {
				t.Fatalf("restore: %v, want %q", err, want)
			}
			if got := readFileT(t, filepath.Join(to, "b.txt")); got != "theirs\n" {
				t.Fatalf("%s/b.txt: %q", target, got)
			}
		})
	}
}

// The same of a state from a Claude Code transcript's edit results: the
// file it says what it held (a/b/x.txt, edited; a a link now) is left,
// said so ("disk":"under-link"), and y.txt put back. It wrote x0 over
// real/b/x.txt through the link.
func TestTranscriptRewindLeavesAPathUnderALinkItDoesNotRemove(t *testing.T) {
	e := newEditTranscript(t, "fix x and y")
	at := func(p string) string { return filepath.Join(e.ws, p) }
	e.edit(at("a/b/x.txt"), "x0\n", "x0", "x1")
	e.edit(at("y.txt"), "y0\n", "y0", "y1")
	writeTree(t, e.ws, tree{"y.txt": "y1\n", "real/b/x.txt": "x1\n", "a": "link:real"})
	r, id := e.imported(t)
	rw, err := r.Rewind(id, 0, false)
	if err != nil {
		t.Fatalf("rewind: %v", err)
	}
	if got := readFileT(t, at("real/b/x.txt")); got != "x1\n" {
		t.Fatalf("real/b/x.txt, reached through the link a: %q, want it left as it is", got)
	}
	if got := readFileT(t, at("y.txt")); got != "y0\n" {
		t.Fatalf("y.txt: %q, want it put back", got)
	}
	if got := fmt.Sprintf("%+v", rw.TranscriptFiles); got != "[{Path:a/b/x.txt Disk:under-link} {Path:y.txt Disk:}]" {
		t.Fatalf("transcript files %s", got)
	}
	if strings.Join(rw.Paths, " ") != "y.txt" || len(rw.NotRestored) != 0 {
		t.Fatalf("paths %q, not restored %+v: want y.txt alone", rw.Paths, rw.NotRestored)
	}
}
