package cli

import (
	"bytes"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rookhq/rook/agent"
	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// underParents lists forks and children under their parent, their own
// under them, a family (and siblings among themselves) where its most
// recently active member is, and loses no row to a parent loop.
func TestUnderParents(t *testing.T) {
	id := func(n byte) eventlog.ID { var i eventlog.ID; i[15] = n; return i }
	row := func(n, parent byte) sessionRow {
		r := sessionRow{}
		r.ID = id(n)
		if parent != 0 {
			p := id(parent)
			r.Parent = &p
		}
		return r
	}
	// Most recently active first: 5 (a child of 1), 2, 4 (a child of 5),
	// 1, 6 (a child of 9, not listed), 3 (a child of 1), 7 and 8 each
	// other's parent.
	rows := []sessionRow{row(5, 1), row(2, 0), row(4, 5), row(1, 0), row(6, 9), row(3, 1), row(7, 8), row(8, 7)}
	got := underParents(rows)
	// 1's family first, as 5 is in it; among 1's children 5 before 3.
	want := []struct{ id, depth byte }{{1, 0}, {5, 1}, {4, 2}, {3, 1}, {2, 0}, {6, 0}, {7, 0}, {8, 1}}
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	for i, w := range want {
		if got[i].ID != id(w.id) || got[i].Depth != int(w.depth) {
			t.Fatalf("row %d: %d at depth %d, want %d at depth %d", i, got[i].ID[15], got[i].Depth, w.id, w.depth)
		}
	}
}

// logfaultsStore is a store on a MemFS at home with one session of three
// events, closed.
func logfaultsStore(t *testing.T, home string) (*vfs.MemFS, eventlog.ID) {
	t.Helper()
	fsys := vfs.NewMem()
	if _, err := cas.Init(fsys, nil, home); err != nil {
		t.Fatal(err)
	}
	r, err := agent.Open(home, agent.Options{FS: fsys, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	m, err := r.NewSession("s", "/w", nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := r.Append(m.ID, agent.Entry{Kind: eventlog.KindUser, Body: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	return fsys, m.ID
}

// failMarkerRemoval makes the removal of the event log's WRITER-ACTIVE
// fail with EIO: the close of a writer whose work is done and synced.
func failMarkerRemoval(fsys *vfs.MemFS) {
	fsys.SetHook(func(op vfs.Op, path string) error {
		if op == vfs.OpRemove && filepath.Base(path) == "WRITER-ACTIVE" {
			return syscall.EIO
		}
		return nil
	})
}

// afterPowerCut opens what a power cut right now leaves of fsys.
func afterPowerCut(t *testing.T, fsys *vfs.MemFS, home string) *agent.Rook {
	t.Helper()
	r, err := agent.Open(home, agent.Options{FS: fsys.CrashClone(), Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestAppendDurableWhenTheMarkerStaysIsNotAFailure: `rook session append`
// whose event is written and synced, and whose close then fails to remove
// WRITER-ACTIVE (EIO). The event is in for good (it reads after a power
// cut), and a marker left behind only has the next writer's open check the
// tails: the append must say its seq (or at least that #3 is in). It
// exited 1 with the bare "remove .../WRITER-ACTIVE: input/output error", no
// seq printed: a script ran it again and the session held the event twice.
func TestAppendDurableWhenTheMarkerStaysIsNotAFailure(t *testing.T) {
	home := "/h/.rook"
	fsys, id := logfaultsStore(t, home)
	failMarkerRemoval(fsys)
	var out, errb bytes.Buffer
	e := &Env{Stdin: strings.NewReader("the body"), Stdout: &out, Stderr: &errb, FS: fsys, Home: home, Cwd: "/w"}
	err := (&SessionAppendCmd{ID: id.String(), File: "-", Kind: "user"}).Run(e)
	fsys.SetHook(nil)
	r := afterPowerCut(t, fsys, home)
	evs, rerr := r.Log.Read(id, 0, 10)
	if rerr != nil || len(evs) != 4 {
		t.Fatalf("after a power cut the session holds %d events (%v): the test wants the append durable", len(evs), rerr)
	}
	if err != nil && !strings.Contains(err.Error(), "#3") {
		t.Fatalf("the append is durable (event #3 reads after a power cut), but the command failed without a word of it: %v (stdout %q)", err, out.String())
	}
	if err == nil && strings.TrimSpace(out.String()) != "3" {
		t.Fatalf("stdout %q, want the seq 3", out.String())
	}
	if err == nil && !strings.Contains(errb.String(), "rook: note: the event logs' dirty marker") {
		t.Errorf("stderr %q: want a note that the marker is left", errb.String())
	}
}

// TestForkDurableWhenTheMarkerStaysIsNotAFailure: `rook session fork` whose
// fork is made whole (log and .meta written and synced: it is there after
// a power cut), and whose close then fails to remove WRITER-ACTIVE. The
// command failed with no fork id: a run again made a second fork.
func TestForkDurableWhenTheMarkerStaysIsNotAFailure(t *testing.T) {
	home := "/h/.rook"
	fsys, id := logfaultsStore(t, home)
	failMarkerRemoval(fsys)
	var out, errb bytes.Buffer
	e := &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, FS: fsys, Home: home, Cwd: "/w"}
	err := (&SessionForkCmd{ID: id.String(), At: 2}).Run(e)
	fsys.SetHook(nil)
	r := afterPowerCut(t, fsys, home)
	ids, lerr := r.Log.IDs()
	if lerr != nil || len(ids) != 2 {
		t.Fatalf("after a power cut %d sessions (%v): the test wants the fork durable", len(ids), lerr)
	}
	fork := ids[0]
	if fork == id {
		fork = ids[1]
	}
	if err != nil && !strings.Contains(err.Error(), fork.String()) {
		t.Fatalf("the fork %s is made (it is there after a power cut), but the command failed without naming it: %v", fork, err)
	}
	if err == nil && strings.TrimSpace(out.String()) != fork.String() {
		t.Fatalf("stdout %q, want the fork's id %s", out.String(), fork)
	}
}

// A session's title and tags are stored in its JSON metadata, which keeps
// each byte that is not UTF-8 as U+FFFD: `session new --title $'t\xff'`
// made a session titled "t\uFFFD", the bytes lost as it was made (and a
// tag so could not be removed by the bytes it was given as). They are
// refused as other bad input is: a usage error, exit 2, nothing made.
func TestTitleAndTagNotUTF8AreRefused(t *testing.T) {
	t.Chdir(t.TempDir())
	home := bigObjectsHome(t)
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Main(append([]string{"--home", home}, args...), strings.NewReader(""), &out, &errb)
		return code, out.String(), errb.String()
	}
	code, out, errs := run("session", "new", "--title", "ok")
	if code != 0 {
		t.Fatalf("session new: exit %d: %s", code, errs)
	}
	id := strings.TrimSpace(out)
	for _, args := range [][]string{
		{"session", "new", "--title", "t\xff"},
		{"session", "new", "--title", "ok", "--tag", "a\xfeb"},
		{"session", "fork", id, "--at", "0", "--title", "t\xff"},
		{"session", "tag", id, "a\xfeb"},
	} {
		code, out, errs := run(args...)
		if code != ExitUsage || out != "" || !strings.Contains(errs, "not UTF-8") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d saying it is not UTF-8", args, code, out, errs, ExitUsage)
		}
	}
	code, out, errs = run("--json", "session", "ls", "--all")
	if code != 0 {
		t.Fatalf("session ls: exit %d: %s", code, errs)
	}
	if n := strings.Count(out, `"id"`); n != 1 || strings.Contains(out, "\ufffd") {
		t.Errorf("after the refusals, session ls lists %d sessions (want the one made): %s", n, out)
	}
}
