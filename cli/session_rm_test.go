package cli

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// `session rm` of a fork read every session's metadata twice: once for
// the removal (the index of who copied what from whom), once more to
// list the children it keeps (Log.Children). With thousands of sessions
// that is thousands of files opened again. It reads each once now, and
// still lists the children.
func TestSessionRmReadsEachMetadataOnce(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "store")
	rook := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if Main(append([]string{"--home", home, "-C", dir}, args...), strings.NewReader("a body"), &out, &errb) != 0 {
			t.Fatalf("rook %v: %s", args, errb.String())
		}
		return strings.TrimSpace(out.String())
	}
	rook("init")
	parent := rook("session", "new", "--title", "parent")
	rook("session", "append", parent, "--kind", "user")
	rook("session", "append", parent, "--kind", "user")
	fork := rook("session", "fork", parent, "--at", "1")
	child := rook("session", "fork", fork, "--at", "1") // the fork's own fork: kept
	const bystanders = 5
	for i := 0; i < bystanders; i++ {
		rook("session", "new", "--title", "bystander")
	}

	reads := map[string]int{}
	var out bytes.Buffer
	e := &Env{Stdout: &out, Stderr: &bytes.Buffer{}, Home: home, Cwd: dir, JSON: true, FS: onOpen{vfs.OS, func(name string) {
		if id, ok := strings.CutSuffix(filepath.Base(name), ".meta"); ok {
			reads[id]++
		}
	}}}
	if err := (&SessionRmCmd{ID: fork}).Run(e); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Kept []string `json:"children_kept"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if len(got.Kept) != 1 || got.Kept[0] != child {
		t.Errorf("children kept %v, want [%s]", got.Kept, child)
	}
	bystanderReads := 0
	for id, n := range reads {
		if id != parent && id != fork && id != child {
			bystanderReads++
			if n > 1 {
				t.Errorf("bystander %s: its metadata opened %d times, want once", id, n)
			}
		}
	}
	if bystanderReads != bystanders {
		t.Errorf("%d bystanders' metadata opened, want %d: %v", bystanderReads, bystanders, reads)
	}
}

// TestRmWhoseDirSyncFailsSaysWhatItLeft: `rook session rm` removes the
// session's .meta, and the directory sync after it fails. The session is
// gone now (no listing shows it) and comes back whole after a power cut;
// the error must name the session and say so, as the same failure of the
// log's removal does ("its metadata is removed, its log not ..."), and as
// Create and Fork do for theirs. It was the bare "syncdir /h/.rook/events:
// input/output error".
func TestRmWhoseDirSyncFailsSaysWhatItLeft(t *testing.T) {
	home := "/h/.rook"
	fsys, id := logfaultsStore(t, home)
	metaGone := false
	fsys.SetHook(func(op vfs.Op, path string) error {
		switch {
		case op == vfs.OpRemove && filepath.Base(path) == id.String()+".meta":
			metaGone = true
		case metaGone && op == vfs.OpSyncDir:
			return syscall.EIO
		}
		return nil
	})
	var out, errb bytes.Buffer
	e := &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, FS: fsys, Home: home, Cwd: "/w"}
	err := (&SessionRmCmd{ID: id.String()}).Run(e)
	fsys.SetHook(nil)
	if err == nil {
		t.Fatal("rm with its directory sync failing: no error")
	}
	if !metaGone {
		t.Fatal("the .meta was not removed")
	}
	if !strings.Contains(err.Error(), id.String()) {
		t.Fatalf("rm failed after removing the .meta of %s (the session is gone now, and back after a power cut) with an error that names no session: %v", id, err)
	}
}

// TestRmWhoseMarkerStaysIsDone: `rook session rm` whose removal is made
// durable, and whose close then fails to remove WRITER-ACTIVE (EIO). The
// session is gone for good (after a power cut too): rm says it removed it,
// exit 0, with a note of the marker left. It failed with the bare "remove
// .../WRITER-ACTIVE: input/output error".
func TestRmWhoseMarkerStaysIsDone(t *testing.T) {
	home := "/h/.rook"
	fsys, id := logfaultsStore(t, home)
	failMarkerRemoval(fsys)
	var out, errb bytes.Buffer
	e := &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, FS: fsys, Home: home, Cwd: "/w"}
	err := (&SessionRmCmd{ID: id.String()}).Run(e)
	fsys.SetHook(nil)
	if err != nil {
		t.Fatalf("rm, durable, with the marker's removal failing: %v", err)
	}
	if !strings.Contains(out.String(), "removed session "+id.String()) || !strings.Contains(errb.String(), "rook: note: the event logs' dirty marker") {
		t.Fatalf("stdout %q, stderr %q: want the removal said, and a note of the marker left", out.String(), errb.String())
	}
	r := afterPowerCut(t, fsys, home)
	if ids, err := r.Log.IDs(); err != nil || len(ids) != 0 {
		t.Fatalf("after a power cut: sessions %v (%v), want none", ids, err)
	}
}
