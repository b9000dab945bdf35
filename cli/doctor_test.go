package cli

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/agent"
	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/dict"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// readOnlyLock is the OS file system as an account that can read the
// store but not write it sees it: taking the lock, which creates or opens
// the lock file for writing, is refused.
type readOnlyLock struct{ vfs.FS }

func (readOnlyLock) TryLock(name string, _ fs.FileMode) (vfs.Lock, error) {
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
}

// TestDoctorReadOnlyStore: doctor on a store this user may read but not
// write exited 1 with "cannot check the writer lock: permission denied",
// as if the store were broken. It now reports the rest, says the lock
// holder is unknown and why, and exits 0.
func TestDoctorReadOnlyStore(t *testing.T) {
	home := filepath.Join(t.TempDir(), "store")
	if _, err := cas.Init(vfs.OS, nil, home); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(home, 0o700); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	e := &Env{Stdout: &out, Stderr: &errb, FS: readOnlyLock{vfs.OS}, Home: home, JSON: true}
	if err := (&DoctorCmd{}).Run(e); err != nil {
		t.Fatalf("doctor on a read-only store failed: %v\n%s", err, out.String())
	}
	var r doctorReport
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if len(r.Problems) != 0 || r.LockChecked || !r.Exists {
		t.Fatalf("problems %q, lock checked %v, exists %v; want no problem, the lock unchecked", r.Problems, r.LockChecked, r.Exists)
	}
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "lock holder unknown: the store is not writable by this user") {
		t.Fatalf("warnings %q: want one saying the lock holder is unknown and why", r.Warnings)
	}
}

// TestDoctorNamesLostDictionaries: with a dictionary file damaged, every
// object compressed with it is unreadable, yet doctor said ok: it read the
// index only. It names it, with the fix, and exits 1. A dictionary id with
// no file may be one lost, or one a train cut short (a crash, a full disk
// between recording the id and writing the file) left that no record
// names: doctor cannot tell without reading the records, so it says so as
// a warning, with verify to tell, and does not fail a healthy store for it.
func TestDoctorNamesLostDictionaries(t *testing.T) {
	home := filepath.Join(t.TempDir(), "store")
	if _, err := cas.Init(vfs.OS, nil, home); err != nil {
		t.Fatal(err)
	}
	// Dictionaries 1 and 2 given out: 1 has no file, 2's is garbage.
	if err := os.WriteFile(filepath.Join(home, cas.DictDir, dict.HighestFile), dict.EncodeHighest(2), 0o600); err != nil {
		t.Fatal(err)
	}
	damaged := filepath.Join(home, cas.DictDir, dict.FileName(2))
	if err := os.WriteFile(damaged, []byte("not a dictionary"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := runDoctorJSON(t, home)
	if err == nil {
		t.Fatalf("doctor passed a store with a damaged dictionary: %+v", r)
	}
	if len(r.Problems) != 1 || !strings.HasPrefix(r.Problems[0], "dictionary 2 is damaged (") || !strings.Contains(r.Problems[0], "put "+damaged+" back from a backup") {
		t.Fatalf("problems %q: want dictionary 2 named damaged, with its fix", r.Problems)
	}
	missing := "dictionary 1 is missing (no file " + filepath.Join(home, cas.DictDir, dict.FileName(1)) + "): "
	if len(r.Warnings) != 1 || !strings.HasPrefix(r.Warnings[0], missing) || !strings.Contains(r.Warnings[0], "`rook store verify` says whether records need it") || !strings.Contains(r.Warnings[0], "put it back from a backup") {
		t.Fatalf("warnings %q: want dictionary 1 named missing, verify to tell, and the fix", r.Warnings)
	}
}

// TestDoctorTrainCutShortIsNoProblem: a train whose dictionary file a
// crash or a full disk kept from being written leaves its id given out
// and no file; no record names it, verify passes, and nothing can put the
// file back. doctor failed such a store for good ("put it back from a
// backup"). It warns, and exits 0.
func TestDoctorTrainCutShortIsNoProblem(t *testing.T) {
	home := filepath.Join(t.TempDir(), "store")
	if _, err := cas.Init(vfs.OS, nil, home); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, cas.DictDir, dict.HighestFile), dict.EncodeHighest(1), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := runDoctorJSON(t, home)
	if err != nil {
		t.Fatalf("doctor failed a store whose train was cut short: %v", err)
	}
	if len(r.Warnings) != 1 || !strings.HasPrefix(r.Warnings[0], "dictionary 1 is missing") {
		t.Fatalf("warnings %q: want dictionary 1 named", r.Warnings)
	}
	var out bytes.Buffer
	if err := (&VerifyCmd{}).Run(&Env{Stdout: &out, Stderr: &out, FS: vfs.OS, Home: home}); err != nil {
		t.Fatalf("verify of the same store: %v\n%s", err, out.String())
	}
}

// runDoctorJSON runs `rook --json doctor` on home and returns its report.
func runDoctorJSON(t *testing.T, home string) (doctorReport, error) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &Env{Stdout: &out, Stderr: &errb, FS: vfs.OS, Home: home, JSON: true}
	err := (&DoctorCmd{}).Run(e)
	var r doctorReport
	if jerr := json.Unmarshal(out.Bytes(), &r); jerr != nil {
		t.Fatalf("%v: %s", jerr, out.String())
	}
	// Disk space is the machine's, not the store's.
	var kept []string
	for _, w := range r.Warnings {
		if !strings.HasPrefix(w, "only ") {
			kept = append(kept, w)
		}
	}
	r.Warnings = kept
	return r, err
}

// An import creates its sessions in bulk: each one's event log is written
// at once, its .meta only at the writer's next barrier (eventlog.Create in
// bulk). `rook doctor` and `rook store verify`, readers that run while the
// import writes (readers never wait), listed those logs as event logs with
// no .meta and told the user to "put each .meta back from a backup" or
// `rook session rm` them, though doctor itself says on the line before that
// `rook import` holds the writer lock, and the sessions are whole once it
// ends. Seen by hand: `rook doctor` during `rook import claude-code` of a
// few hundred transcripts warned of 37 such logs; `store verify` named
// each. A log that the writer holding the lock is creating is no lost
// session: doctor and verify should pass it by (or say the writer is
// creating it), not send the user to a backup.
func TestDoctorAndVerifyDuringAnImportDoNotCallItsNewSessionsLost(t *testing.T) {
	r := &outputRun{t: t, home: filepath.Join(t.TempDir(), "store"), ws: t.TempDir()}
	r.ok("", "init")
	// Something committed, so that verify reads the store (a new store's
	// first writer is another matter).
	r.ok("seed\n", "store", "put")

	// The import, holding the writer lock, creating a session in bulk.
	w, err := agent.Open(r.home, agent.Options{Writable: true, Command: "rook import claude-code"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Log.SetBulk(true)
	m, err := w.Log.Create(eventlog.Meta{Title: "being imported", Workspace: r.ws})
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := r.main("", &out, &errb, "doctor")
	doc := out.String() + errb.String()
	if !strings.Contains(doc, "rook import claude-code") {
		t.Fatalf("doctor does not name the writer (exit %d):\n%s", code, doc)
	}
	if strings.Contains(doc, m.ID.String()) && strings.Contains(doc, "back from a backup") {
		t.Errorf("doctor, while `rook import` holds the lock and creates session %s, tells the user to restore its .meta from a backup (exit %d):\n%s", m.ID, code, doc)
	}
	if !strings.Contains(doc, "may be creating them") {
		t.Errorf("doctor does not say the writer may be creating session %s (exit %d):\n%s", m.ID, code, doc)
	}

	out.Reset()
	errb.Reset()
	code = r.main("", &out, &errb, "store", "verify")
	ver := out.String() + errb.String()
	if strings.Contains(ver, m.ID.String()) && strings.Contains(ver, "back from a backup") {
		t.Errorf("store verify, while `rook import` holds the lock and creates session %s, tells the user to restore its .meta from a backup (exit %d):\n%s", m.ID, code, ver)
	}
	if code != 0 || !strings.Contains(ver, "may be creating") {
		t.Errorf("store verify, while `rook import` creates session %s: exit %d, want 0 and a note that the writer may be creating it:\n%s", m.ID, code, ver)
	}
}
