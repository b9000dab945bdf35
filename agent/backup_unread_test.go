package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// backupsApart is a Claude Code session whose file backups say b.txt was
// B0 at its first snapshot (b@v1), B1 at its second (b@v2), and a.txt A0
// at its third (a@v1), b.txt still B1; the workspace holds a.txt A1 and
// b.txt B2. Imported as its transcript grew, one snapshot more each
// time, each snapshot's backups are in a block of their own: damaging
// one damages no other. It gives the store, the session and the seqs of
// its three captures of backups.
func backupsApart(t *testing.T) (*historySession, *Rook, eventlog.ID, []uint64) {
	t.Helper()
	h := newHistorySession(t)
	writeTree(t, h.ws, tree{"a.txt": backupText("A1"), "b.txt": backupText("B2")})
	writeTree(t, h.backups, tree{"b@v1": backupText("B0"), "b@v2": backupText("B1"), "a@v1": backupText("A0")})
	var lines []string
	var cuts []int // the lines up to the first snapshot, then up to each, with it
	lines = append(lines, claudeLines("s1", 1)...)
	cuts = append(cuts, len(lines))
	lines = append(lines, snapshot("m1", backup{"b.txt", "b@v1", 1}))
	cuts = append(cuts, len(lines))
	lines = append(lines, claudeLines("s1", 2)...)
	lines = append(lines, snapshot("m2", backup{"b.txt", "b@v2", 2}))
	cuts = append(cuts, len(lines))
	lines = append(lines, claudeLines("s1", 3)...)
	lines = append(lines, snapshot("m3", backup{"a.txt", "a@v1", 1}, backup{"b.txt", "b@v2", 2}))
	cuts = append(cuts, len(lines))
	lines = append(lines, claudeLines("s1", 4)...)
	for i := range lines {
		lines[i] = strings.ReplaceAll(lines[i], `"cwd":"/home/u/proj"`, fmt.Sprintf(`"cwd":%q`, h.ws))
	}
	r := diskRook(t, filepath.Join(h.dir, "store"))
	var id eventlog.ID
	for _, n := range append(cuts, len(lines)) {
		writeSource(t, vfs.OS, filepath.Join(h.projects, "-ws", "s1.jsonl"), lines[:n], "")
		if f := mustImport(t, r, FormatClaudeCode, h.projects).Files[0]; f.Session != nil {
			id = *f.Session
		}
	}
	caps := checkpointSeqs(t, r, id)
	if len(caps) != 3 {
		t.Fatalf("captures at %v, want one at each snapshot", caps)
	}
	return h, r, id, caps
}

// backupText is a version of a.txt or b.txt: its first line says which;
// the rest makes it too long to be copied into the store's index, where
// it would read whatever befalls its record.
func backupText(v string) string {
	return v + "\n" + "a line every version of the file holds, as the last one\n"
}

// backupUnreadCases are ownUnreadCases as a file backup's note and
// refusal say them: --reread takes the backup from Claude Code's
// file-history directory again.
var backupUnreadCases = []struct{ how, way string }{
	{"damaged", "while Claude Code's file-history directory still holds the backup, " + ownUnreadCases[0].way},
	{"missing", ownUnreadCases[1].way},
}

// backupFiles fails unless the workspace holds a.txt and b.txt as want
// says ("A1 B2": as the session left them).
func backupFiles(t *testing.T, h *historySession, want string) {
	t.Helper()
	first := func(p string) string { l, _, _ := strings.Cut(h.read(p), "\n"); return l }
	if got := first("a.txt") + " " + first("b.txt"); got != want {
		t.Fatalf("a.txt and b.txt: %s, want %s", got, want)
	}
}

// backupRefusal fails unless err is the refusal of a rewind that needs
// b.txt's backup in the capture of event #seq, which does not read: it
// names the backup, the event, why, what to do (way) and --keep-files;
// nothing changed.
func backupRefusal(t *testing.T, err error, id eventlog.ID, seq uint64, way string) {
	t.Helper()
	want := fmt.Sprintf("cannot rewind the files: the file backup of b.txt in event #%d of session %s (a capture of Claude Code's file backups) cannot be read (", seq, id)
	if err == nil || !strings.HasPrefix(err.Error(), want) ||
		!strings.Contains(err.Error(), "): what b.txt held at the point is not known; "+way) ||
		!strings.HasSuffix(err.Error(), "; then run this again, or put the files back yourself and rewind with --keep-files, which rewinds the conversation only: nothing changed") {
		t.Fatalf("rewind: %v\nwant %q ... %q", err, want, way)
	}
}

// reread reads the session's transcript again (rook import claude-code
// --reread): its file backups, still in Claude Code's file-history
// directory, are stored again with its lines.
func rereadSession(t *testing.T, r *Rook, id eventlog.ID) {
	t.Helper()
	m, err := r.Log.ReadMeta(id)
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := r.Reread(ImportOptions{Format: FormatClaudeCode, Paths: []string{m.Source.Path}}, nil); err != nil || rep.Restored == 0 {
		t.Fatalf("reread: %+v, %v", rep, err)
	}
}

// A file backup of an imported Claude Code session whose object does
// not read (damaged, or gone from the store) failed the whole diff:
// "b.txt: its captured copy is unreadable". Now the diff shows every
// other file, leaves b.txt out (uncompared, saying why) and notes the
// capture's event, why and what to do (unread_events). A backup that is
// not b.txt's first (b@v2: its state before the session is b@v1's)
// changes nothing of the diff. Done as the note says, the diff is whole.
func TestClaudeDiffNotesABackupThatDoesNotRead(t *testing.T) {
	for _, tc := range backupUnreadCases {
		t.Run(tc.how, func(t *testing.T) {
			h, r, id, caps := backupsApart(t)
			r, way := unreadObject(t, r, id, cas.ID([]byte(backupText("B0"))), tc.how, tc.way)
			got, patch, d := diffFiles(t, r, id)
			if len(got) != 1 || got["a.txt"] != "modified" || !strings.Contains(patch, "-A0\n+A1\n") || strings.Contains(patch, "b.txt") {
				t.Fatalf("files %v:\n%s", got, patch)
			}
			why := fmt.Sprintf("its state before is not known: its Claude Code file backup, in event #%d of the session (a capture of Claude Code's file backups), cannot be read (", caps[0])
			if len(d.Uncompared) != 1 || d.Uncompared[0].Path != "b.txt" || !strings.HasPrefix(d.Uncompared[0].Error, why) {
				t.Fatalf("uncompared %+v, want b.txt: %q", d.Uncompared, why)
			}
			note := fmt.Sprintf("the file backup of b.txt in event #%d of this session (a capture of Claude Code's file backups) cannot be read (", caps[0])
			if len(d.Notes) != 1 || !strings.HasPrefix(d.Notes[0], note) ||
				!strings.Contains(d.Notes[0], "): b.txt is not compared (uncompared): what it held before the session is not known; "+way) ||
				!slices.Equal(d.UnreadEvents, []uint64{caps[0]}) {
				t.Fatalf("notes %q, unread events %v; want %q ... %q", d.Notes, d.UnreadEvents, note, way)
			}
			backupFiles(t, h, "A1 B2")
			if tc.how != "damaged" {
				return // (verify says the object is gone: put back from a backup)
			}
			rereadSession(t, r, id)
			if got, patch, d := diffFiles(t, r, id); len(got) != 2 || !strings.Contains(patch, "-B0\n+B2\n") || len(d.Notes) != 0 || len(d.Uncompared) != 0 || len(d.UnreadEvents) != 0 {
				t.Fatalf("read again: files %v, notes %q, uncompared %+v:\n%s", got, d.Notes, d.Uncompared, patch)
			}
		})
	}
}

// A later backup that does not read (b@v2) is not b.txt's state before
// the session: the diff is whole, and says nothing of it.
func TestClaudeDiffPassesABackupItDoesNotNeed(t *testing.T) {
	for _, tc := range backupUnreadCases {
		t.Run(tc.how, func(t *testing.T) {
			_, r, id, _ := backupsApart(t)
			r, _ = unreadObject(t, r, id, cas.ID([]byte(backupText("B1"))), tc.how, tc.way)
			got, patch, d := diffFiles(t, r, id)
			if len(got) != 2 || !strings.Contains(patch, "-B0\n+B2\n") || !strings.Contains(patch, "-A0\n+A1\n") ||
				len(d.Notes) != 0 || len(d.Uncompared) != 0 || len(d.UnreadEvents) != 0 {
				t.Fatalf("files %v, notes %q, uncompared %+v:\n%s", got, d.Notes, d.Uncompared, patch)
			}
		})
	}
}

// A rewind to before b@v1's capture needs it: b.txt's state at the point
// is that backup. It refused only as "cannot restore b.txt: its captured
// copy is unreadable", naming no event and saying nothing of --reread
// or --keep-files. It refuses naming the backup, the event, why and what
// to do; nothing written, no fork made. --keep-files goes. A rewind to
// after the turn that followed that capture (its Bash command changed
// b.txt) does not need it (b.txt's state then is b@v2), and goes. (A
// rewind to the prompt just after the capture does: the capture is the
// prompt's snapshot, the files then: pointLead.) Done as the refusal
// says, the rewind to before it goes too.
func TestClaudeRewindRefusesABackupThatDoesNotRead(t *testing.T) {
	for _, tc := range backupUnreadCases {
		t.Run(tc.how, func(t *testing.T) {
			h, r, id, caps := backupsApart(t)
			r, way := unreadObject(t, r, id, cas.ID([]byte(backupText("B0"))), tc.how, tc.way)
			n := sessionCount(t, r)
			for _, to := range []uint64{0, caps[0] - 1} {
				_, err := r.Rewind(id, to, false)
				backupRefusal(t, err, id, caps[0], way)
				backupFiles(t, h, "A1 B2")
				if got := sessionCount(t, r); got != n {
					t.Fatalf("%d sessions after the refusal, %d before", got, n)
				}
			}
			if rep, err := r.Rewind(id, 0, true); err != nil || rep.DiskChanged {
				t.Fatalf("--keep-files: %+v, %v", rep, err)
			}
			backupFiles(t, h, "A1 B2")
			// After the turn after it: b.txt as b@v2 says, a.txt as
			// a@v1 does.
			if _, err := r.Rewind(id, caps[1]-1, false); err != nil {
				t.Fatalf("rewind past the backup that does not read: %v", err)
			}
			backupFiles(t, h, "A0 B1")
			if tc.how != "damaged" {
				return
			}
			rereadSession(t, r, id)
			if _, err := r.Rewind(id, 0, false); err != nil {
				t.Fatalf("read again: %v", err)
			}
			backupFiles(t, h, "A0 B0")
		})
	}
}

// A later backup that does not read (b@v2): a rewind to the start does
// not need it (b.txt's state then is b@v1's), nor does one to after the
// last capture, which involves no b.txt backup; both go and write the
// states the backups that read say. A rewind to between b@v1's capture
// and b@v2's, after the turn between them (its Bash command changed
// b.txt), needs it, and refuses, nothing written.
func TestClaudeRewindPassesABackupItDoesNotNeed(t *testing.T) {
	for _, tc := range backupUnreadCases {
		t.Run(tc.how, func(t *testing.T) {
			h, r, id, caps := backupsApart(t)
			r, way := unreadObject(t, r, id, cas.ID([]byte(backupText("B1"))), tc.how, tc.way)
			n := sessionCount(t, r)
			_, err := r.Rewind(id, caps[1]-1, false)
			backupRefusal(t, err, id, caps[1], way)
			backupFiles(t, h, "A1 B2")
			if got := sessionCount(t, r); got != n {
				t.Fatalf("%d sessions after the refusal, %d before", got, n)
			}
			if _, err := r.Rewind(id, caps[2], false); err != nil {
				t.Fatalf("rewind to the last capture: %v", err)
			}
			backupFiles(t, h, "A0 B2")
			if err := os.WriteFile(filepath.Join(h.ws, "a.txt"), []byte(backupText("A1")), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Rewind(id, 0, false); err != nil {
				t.Fatalf("rewind that does not need the backup: %v", err)
			}
			backupFiles(t, h, "A0 B0")
		})
	}
}

// untouchedSince fails unless the file at p is still the one before was
// read from: the same inode, with the same modification time (a copy
// written and renamed over it is another).
func untouchedSince(t *testing.T, p string, before os.FileInfo) {
	t.Helper()
	now, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, now) || !now.ModTime().Equal(before.ModTime()) {
		t.Fatalf("%s was written again (inode or mtime changed: %v, before %v)", p, now.ModTime(), before.ModTime())
	}
}

// oldFile makes the file at p look written long ago (so that a rewrite
// shows in its mtime), and returns what the file system says of it.
func oldFile(t *testing.T, p string) os.FileInfo {
	t.Helper()
	old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}

// A rewind to before b@v1's capture needs b.txt's state then, and refused
// when that backup did not read even when b.txt held it already (put back
// by hand, say), so that nothing had to be written. The file on disk is
// looked at first: holding the state, it needs no copy, and is left as it
// is (not written again); a.txt is put back. With a.txt as it was then
// too, no file changed. A b.txt that differs still refuses, as before.
func TestClaudeRewindNeedsNoBackupTheFileHolds(t *testing.T) {
	for _, tc := range backupUnreadCases {
		t.Run(tc.how, func(t *testing.T) {
			h, r, id, caps := backupsApart(t)
			r, way := unreadObject(t, r, id, cas.ID([]byte(backupText("B0"))), tc.how, tc.way)
			_, err := r.Rewind(id, 0, false)
			backupRefusal(t, err, id, caps[0], way)
			backupFiles(t, h, "A1 B2")

			b := filepath.Join(h.ws, "b.txt")
			if err := os.WriteFile(b, []byte(backupText("B0")), 0o644); err != nil {
				t.Fatal(err)
			}
			before := oldFile(t, b)
			rep, err := r.Rewind(id, 0, false)
			if err != nil {
				t.Fatalf("rewind with b.txt as its backup says: %v", err)
			}
			backupFiles(t, h, "A0 B0")
			untouchedSince(t, b, before)
			if rep.FilesRestored != 1 || !rep.DiskChanged {
				t.Fatalf("restored %d (disk changed %v), want a.txt alone", rep.FilesRestored, rep.DiskChanged)
			}
			rep, err = r.Rewind(id, 0, false)
			if err != nil {
				t.Fatalf("rewind with every file as it was then: %v", err)
			}
			untouchedSince(t, b, before)
			if rep.FilesRestored != 0 || rep.DiskChanged || rep.Undo != "" {
				t.Fatalf("every file as it was then: restored %d, disk changed %v, undo %q", rep.FilesRestored, rep.DiskChanged, rep.Undo)
			}
		})
	}
}
