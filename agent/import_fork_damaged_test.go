package agent

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// A fork whose log does not read, when its parent's file grew, cannot be
// counted against the parent again (recountCopied): it is a problem of
// the import, naming the fork's session and `rook store verify`, and the
// import goes on: the parent's new lines are in, and a fork of another
// parent that came in now is linked to it.
func TestImportGoesOnPastAForkThatDoesNotRead(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	dir := "/p/-home-u-proj"
	pPath, fPath, gPath, qPath := dir+"/P.jsonl", dir+"/F.jsonl", dir+"/G.jsonl", dir+"/Q.jsonl"
	writeSource(t, fsys, pPath, claudeLines("P", 1), "")
	writeSource(t, fsys, fPath, append(claudeForkLines("P", "F", 1), claudeLines("F", 2)...), "")
	writeSource(t, fsys, gPath, append(claudeForkLines("Q", "G", 1), claudeLines("G", 2)...), "")
	rep := mustImport(t, r, FormatClaudeCode, dir)
	pid, fid, gid := *fileByPath(t, rep, pPath).Session, *fileByPath(t, rep, fPath).Session, *fileByPath(t, rep, gPath).Session
	if f := fileByPath(t, rep, fPath); f.Parent == nil || *f.Parent != pid {
		t.Fatalf("the fork is not linked to its parent: %+v", f)
	}
	if f := fileByPath(t, rep, gPath); f.Parent != nil {
		t.Fatalf("the fork of a parent not imported yet is linked: %+v", f)
	}

	if err := fsys.WriteFileAtomic(filepath.Join(testHome, cas.EventsDir, fid.String()+".log"), []byte("not a log"), 0o600); err != nil {
		t.Fatal(err)
	}
	writeSource(t, fsys, pPath, append(claudeLines("P", 1), claudeLines("P", 2)...), "")
	writeSource(t, fsys, qPath, claudeLines("Q", 1), "")
	rep, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{dir}})
	if err != nil {
		t.Fatalf("the import stopped at the damaged fork: %v", err)
	}
	if f := fileByPath(t, rep, pPath); f.Status != ImportGrown {
		t.Fatalf("the parent: %+v", f)
	}
	qid := fileByPath(t, rep, qPath).Session
	if m := metaOf(t, r, gid); qid == nil || m.Parent == nil || *m.Parent != *qid {
		t.Fatalf("the fork of the parent imported now is not linked to it: %+v", m)
	}
	found := false
	for _, p := range rep.Problems {
		found = found || (p.File == fPath && strings.Contains(p.Reason, fid.String()) && strings.Contains(p.Reason, "rook store verify"))
	}
	if !found {
		t.Fatalf("no problem names the fork %s and `rook store verify`: %+v", fid, rep.Problems)
	}
	if f := fileByPath(t, rep, fPath); !strings.Contains(f.Note, "rook store verify") || f.Parent == nil || *f.Parent != pid {
		t.Fatalf("the fork's file says nothing: %+v", f)
	}
}

// A fork imported before its parent, whose log does not read when the
// parent comes in, cannot have what it copied counted (copiedTokens): it
// is a problem of the import, naming it and `rook store verify`, it stays
// unlinked (an import after it reads again links it), and the parent is
// imported.
func TestImportGoesOnPastAnUnlinkedForkThatDoesNotRead(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	dir := "/p/-home-u-proj"
	pPath, fPath := dir+"/P.jsonl", dir+"/F.jsonl"
	writeSource(t, fsys, fPath, append(claudeForkLines("P", "F", 1), claudeLines("F", 2)...), "")
	fid := *fileByPath(t, mustImport(t, r, FormatClaudeCode, dir), fPath).Session

	if err := fsys.WriteFileAtomic(filepath.Join(testHome, cas.EventsDir, fid.String()+".log"), []byte("not a log"), 0o600); err != nil {
		t.Fatal(err)
	}
	writeSource(t, fsys, pPath, claudeLines("P", 1), "")
	rep, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{dir}})
	if err != nil {
		t.Fatalf("the import stopped at the damaged fork: %v", err)
	}
	if f := fileByPath(t, rep, pPath); f.Status != ImportNew {
		t.Fatalf("the parent: %+v", f)
	}
	found := false
	for _, p := range rep.Problems {
		found = found || (p.File == fPath && strings.Contains(p.Reason, fid.String()) && strings.Contains(p.Reason, "rook store verify"))
	}
	if !found {
		t.Fatalf("no problem names the fork %s and `rook store verify`: %+v", fid, rep.Problems)
	}
	if f := fileByPath(t, rep, fPath); !strings.Contains(f.Note, "rook store verify") || f.Parent != nil || rep.Linked != 0 {
		t.Fatalf("the fork's file: %+v (linked: %d)", f, rep.Linked)
	}
}

// Checking the imported sessions against the retention policy reads every
// session of the store: one that does not read (any, not only one of the
// import's) makes the check a problem of the import, not its failure,
// once its files are in: the report says what was imported.
func TestImportGoesOnPastASessionTheRetentionCheckCannotRead(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	other := newSession(t, r)
	if err := fsys.WriteFileAtomic(filepath.Join(testHome, cas.EventsDir, other.String()+".log"), []byte("not a log"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := "/p/-home-u-proj"
	writeSource(t, fsys, dir+"/P.jsonl", claudeLines("P", 1), "")
	rep, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{dir}, Retention: &RetentionPolicy{}})
	if err != nil {
		t.Fatalf("the import failed at the retention check: %v", err)
	}
	if f := fileByPath(t, rep, dir+"/P.jsonl"); f.Status != ImportNew {
		t.Fatalf("the file: %+v", f)
	}
	if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Reason, other.String()) || !strings.Contains(rep.Problems[0].Reason, "retention") {
		t.Fatalf("no problem names the session the check could not read: %+v", rep.Problems)
	}
}

// wayOutReported: a problem of the import, of the file at path, names
// session bad as the one that does not read and the way out for it:
// `rook session rm` it, then import its file (badPath) again.
func wayOutReported(t *testing.T, rep ImportReport, path string, bad eventlog.ID, badPath string) {
	t.Helper()
	want := "`rook session rm " + bad.String() + "`, then `rook import claude-code " + badPath + "` imports it again"
	for _, p := range rep.Problems {
		if p.File == path && strings.Contains(p.Reason, want) && strings.Contains(p.Reason, "every import reports it") {
			return
		}
	}
	t.Fatalf("no problem of %s names the way out %q: %+v", path, want, rep.Problems)
}

// A fork whose log does not read is reported at every import, not only
// the one that met it, with the command that mends it; running that
// command links it and counts what it copied once. Both ways a fork is
// counted against its parent: linked when the parent comes in after it,
// and recounted when the parent's file grows (its parent's mark,
// Source.RecountForks, stays until the fork reads).
func TestForkThatDoesNotReadIsReportedUntilMended(t *testing.T) {
	for _, grown := range []bool{false, true} {
		t.Run(map[bool]string{false: "unlinked", true: "parent grown"}[grown], func(t *testing.T) {
			fsys := vfs.NewMem()
			r := testRook(t, fsys)
			dir := "/p/-home-u-proj"
			pPath, fPath := dir+"/P.jsonl", dir+"/F.jsonl"
			forkLines := append(claudeForkLines("P", "F", 1), claudeLines("F", 3)...) // its own turn, 3: not one of P's
			if grown {
				writeSource(t, fsys, pPath, claudeLines("P", 1), "")
			}
			writeSource(t, fsys, fPath, forkLines, "")
			fid := *fileByPath(t, mustImport(t, r, FormatClaudeCode, dir), fPath).Session
			if err := fsys.WriteFileAtomic(filepath.Join(testHome, cas.EventsDir, fid.String()+".log"), []byte("not a log"), 0o600); err != nil {
				t.Fatal(err)
			}
			pLines := claudeLines("P", 1)
			if grown {
				pLines = append(pLines, claudeLines("P", 2)...)
			}
			writeSource(t, fsys, pPath, pLines, "")
			for i := range 2 {
				rep, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{dir}})
				if err != nil {
					t.Fatalf("import %d: %v", i, err)
				}
				wayOutReported(t, rep, fPath, fid, fPath)
			}

			// The way out, as the message says.
			if _, err := r.RemoveSession(fid); err != nil {
				t.Fatal(err)
			}
			rep := mustImport(t, r, FormatClaudeCode, fPath)
			pid := *sessionIDOf(t, r, pPath)
			nid := fileByPath(t, rep, fPath).Session
			if f := fileByPath(t, rep, fPath); f.Parent == nil || *f.Parent != pid || len(rep.Problems) != 0 {
				t.Fatalf("imported again: %+v, problems %+v", f, rep.Problems)
			}
			tokensOf(t, r, *nid, "the fork imported again", claudeTurnIn, claudeTurnOut)
			rep = mustImport(t, r, FormatClaudeCode, dir)
			if len(rep.Problems) != 0 {
				t.Fatalf("mended, the import still reports: %+v", rep.Problems)
			}
			if m := metaOf(t, r, pid); m.Source.RecountForks {
				t.Fatalf("mended, the parent keeps its mark: %+v", m.Source)
			}
		})
	}
}

// A parent whose log does not read when its forks are to be recounted (a
// crash left its mark, Source.RecountForks): the problem names the
// parent, not the fork, and the way out for it.
func TestForkRecountNamesTheParentThatDoesNotRead(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	dir := "/p/-home-u-proj"
	pPath, fPath := dir+"/P.jsonl", dir+"/F.jsonl"
	writeSource(t, fsys, pPath, claudeLines("P", 1), "")
	writeSource(t, fsys, fPath, append(claudeForkLines("P", "F", 1), claudeLines("F", 2)...), "")
	rep := mustImport(t, r, FormatClaudeCode, dir)
	pid := *fileByPath(t, rep, pPath).Session
	m := metaOf(t, r, pid)
	src := *m.Source
	src.RecountForks = true
	m.Source = &src
	if err := r.Log.UpdateMeta(m); err != nil {
		t.Fatal(err)
	}
	if err := fsys.WriteFileAtomic(filepath.Join(testHome, cas.EventsDir, pid.String()+".log"), []byte("not a log"), 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	wayOutReported(t, rep, fPath, pid, pPath)
}

// The way out is a command to paste: a transcript's path with a space in
// it (a home or a directory named by hand) is quoted, as one word.
func TestForkWayOutQuotesThePath(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	dir := "/p/My Projects/-home-u-proj"
	pPath, fPath := dir+"/P.jsonl", dir+"/F.jsonl"
	writeSource(t, fsys, fPath, append(claudeForkLines("P", "F", 1), claudeLines("F", 3)...), "")
	fid := *fileByPath(t, mustImport(t, r, FormatClaudeCode, dir), fPath).Session
	if err := fsys.WriteFileAtomic(filepath.Join(testHome, cas.EventsDir, fid.String()+".log"), []byte("not a log"), 0o600); err != nil {
		t.Fatal(err)
	}
	writeSource(t, fsys, pPath, claudeLines("P", 1), "")
	rep, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	wayOutReported(t, rep, fPath, fid, "'"+fPath+"'")
}

// A fork whose log cannot be opened for a reason of the system's (here
// permission), not damage, is reported too, but with no way out that
// removes it: `session rm` is for a log whose header does not read (as
// verify says it), and the fork's events may be all there.
func TestForkThatCannotBeReadIsNotToldToBeRemoved(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	dir := "/p/-home-u-proj"
	pPath, fPath := dir+"/P.jsonl", dir+"/F.jsonl"
	writeSource(t, fsys, pPath, claudeLines("P", 1), "")
	writeSource(t, fsys, fPath, append(claudeForkLines("P", "F", 1), claudeLines("F", 3)...), "")
	fid := *fileByPath(t, mustImport(t, r, FormatClaudeCode, dir), fPath).Session
	writeSource(t, fsys, pPath, append(claudeLines("P", 1), claudeLines("P", 2)...), "")
	fLog := filepath.Join(testHome, cas.EventsDir, fid.String()+".log")
	fsys.SetHook(func(op vfs.Op, path string) error {
		if op == vfs.OpOpenRead && path == fLog {
			return fs.ErrPermission
		}
		return nil
	})
	rep, err := r.Import(ImportOptions{Format: FormatClaudeCode, Paths: []string{pPath}})
	fsys.SetHook(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Problems {
		if strings.Contains(p.Reason, "session "+fid.String()+": the tokens it copied") {
			if strings.Contains(p.Reason, "rook session rm") || !strings.Contains(p.Reason, "`rook store verify`") {
				t.Fatalf("a fork that cannot be opened is told: %s", p.Reason)
			}
			return
		}
	}
	t.Fatalf("the fork that cannot be read is not reported: %+v", rep.Problems)
}

// An object that does not read because its dictionary file is gone reads
// again once the file is back: the way out names neither --reread nor
// session rm (a CorruptError that wraps a NeedsDictError, as readEntry
// gives it).
func TestForkWayOutForALostDictionary(t *testing.T) {
	id := eventlog.ID{1}
	known := map[string]eventlog.Meta{"/p/F.jsonl": {ID: id, Source: &eventlog.Source{Format: FormatClaudeCode, Path: "/p/F.jsonl"}}}
	lost := errors.Join(&cas.CorruptError{ID: cas.Key{2}, Reason: "record needs dictionary 3"}, &cas.NeedsDictError{Dict: 3, Err: fs.ErrNotExist})
	got := unreadWayOut(known, id, &sessionUnread{id: id, err: lost})
	if strings.Contains(got, "--reread") || strings.Contains(got, "session rm") || !strings.Contains(got, "`rook store verify` says") {
		t.Fatalf("a lost dictionary: %s", got)
	}
	damaged := &cas.CorruptError{ID: cas.Key{2}, Reason: "checksum"}
	if got := unreadWayOut(known, id, &sessionUnread{id: id, err: damaged}); !strings.Contains(got, "`rook import claude-code --reread /p/F.jsonl`") {
		t.Fatalf("a damaged object: %s", got)
	}
}
