package cli

// Checkpoint restore's targets (a moved workspace and -C, --to a dangling
// link), what it prints of them, and checkpoint rm and create under
// --json.

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// storeIn is a store made with `rook init` under dir, and how to run
// rook against it from a directory of the caller's choosing (-C).
func storeIn(t *testing.T, dir string) func(cwd string, args ...string) (int, string, string) {
	t.Helper()
	home := filepath.Join(dir, "store")
	run := func(cwd string, args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Main(append([]string{"--home", home, "-C", cwd}, args...), strings.NewReader(""), &out, &errb)
		return code, out.String(), errb.String()
	}
	if code, _, e := run(dir, "init"); code != 0 {
		t.Fatal(e)
	}
	return run
}

// A restore's report prints the root cleaned, as `checkpoint ls` does
// (terminalLine): a workspace whose directory name holds an escape
// sequence and a line break (a clone of someone else's project) printed
// raw set the terminal's title and split the one-line report in two.
func TestCheckpointRestoreReportCleansTheRoot(t *testing.T) {
	dir := t.TempDir()
	run := storeIn(t, dir)
	ws := filepath.Join(dir, "ws\x1b]0;PWNED\a\nX")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Skip(err)
	}
	a := filepath.Join(ws, "a.txt")
	os.WriteFile(a, []byte("a\n"), 0o644)
	if code, _, e := run(ws, "checkpoint", "create", "cp"); code != 0 {
		t.Fatal(e)
	}
	os.WriteFile(a, []byte("changed\n"), 0o644)
	code, out, e := run(ws, "checkpoint", "restore", "cp")
	if code != 0 {
		t.Fatalf("restore: exit %d: %s", code, e)
	}
	if b, _ := os.ReadFile(a); string(b) != "a\n" {
		t.Fatalf("a.txt after the restore: %q", b)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	// "restored ... into ROOT" and "the files it overwrote are in ...".
	if strings.ContainsAny(out, "\x1b\a") || len(lines) != 2 {
		t.Errorf("restore printed the workspace raw (%d lines, escape bytes reach the terminal):\n%q", len(lines), out)
	}
	// ls shows the same root cleaned: the two disagree.
	_, ls, _ := run(ws, "checkpoint", "ls")
	if strings.ContainsAny(ls, "\x1b\a") {
		t.Fatalf("ls printed the root raw too: %q", ls)
	}
}

// checkpointMovedAway makes a store in a temp dir, checkpoint cp of
// dir/ws holding a.txt ("a\n"), then moves ws to ws2.
func checkpointMovedAway(t *testing.T) (dir, ws, ws2 string, run func(cwd string, args ...string) (int, string, string)) {
	t.Helper()
	dir = t.TempDir()
	run = storeIn(t, dir)
	ws = filepath.Join(dir, "ws")
	ws2 = filepath.Join(dir, "ws2")
	os.MkdirAll(ws, 0o755)
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644)
	if code, _, e := run(ws, "checkpoint", "create", "cp"); code != 0 {
		t.Fatal(e)
	}
	if err := os.Rename(ws, ws2); err != nil {
		t.Fatal(err)
	}
	return dir, ws, ws2, run
}

// After `mv ws ws2`, `rook -C ws2 checkpoint restore cp` restores into
// ws2, the user naming where the project is now ("-C overrides, because
// that is the user deciding", seeds/003; as `rook -C ws2 session rewind`
// does), and never makes the moved-away ws again: it ignored -C, made ws
// again and wrote the checkpoint's files there, exit 0, ws2 keeping the
// edit.
func TestCheckpointRestoreMovedWorkspaceTakesC(t *testing.T) {
	_, ws, ws2, run := checkpointMovedAway(t)
	os.WriteFile(filepath.Join(ws2, "a.txt"), []byte("edited\n"), 0o644)
	code, out, e := run(ws2, "checkpoint", "restore", "cp")
	if _, err := os.Lstat(ws); err == nil {
		t.Errorf("rook -C ws2 checkpoint restore cp made the moved-away workspace %s again (exit %d):\n%s%s", ws, code, out, e)
	}
	if code == 0 {
		if b, _ := os.ReadFile(filepath.Join(ws2, "a.txt")); string(b) != "a\n" {
			t.Errorf("exit 0 but ws2/a.txt, in the project named by -C, is %q, not restored", b)
		}
	} else if !strings.Contains(e, "--to") {
		t.Errorf("refused (exit %d) without saying --to restores elsewhere: %s", code, e)
	}
}

// A restore `--to out`, out a dangling symbolic link (its target
// removed), says out is a link, where it leads, and what to do, as --to
// a regular file says what it is: it failed with a raw "mkdir .../out:
// file exists".
func TestCheckpointRestoreToDanglingLinkSaysSo(t *testing.T) {
	dir := t.TempDir()
	run := storeIn(t, dir)
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o755)
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644)
	if code, _, e := run(ws, "checkpoint", "create", "cp"); code != 0 {
		t.Fatal(e)
	}
	out := filepath.Join(dir, "out")
	if err := os.Symlink(filepath.Join(dir, "gone"), out); err != nil {
		t.Skip(err)
	}
	code, _, e := run(ws, "checkpoint", "restore", "cp", "--to", out)
	if code == 0 {
		// Written through the link: then the files must be there.
		if _, err := os.Stat(filepath.Join(dir, "gone", "a.txt")); err != nil {
			t.Fatalf("exit 0, but a.txt is not where --to leads: %v", err)
		}
		return
	}
	if !strings.Contains(e, "link") || strings.Contains(e, "file exists") {
		t.Errorf("restore --to a dangling link: exit %d, %q: it should say out is a link (to %s) and what to do, not a raw mkdir error", code, e, filepath.Join(dir, "gone"))
	}
}

// `rook --json checkpoint rm bad`, bad a checkpoint whose ref file does
// not parse, says what the text says ("whose ref did not read"), as
// `checkpoint ls --json` does of a checkpoint that does not read:
// "unreadable": true and its "error", and no creation time nor version
// count it does not know. It listed it as made in year 1 with no
// version.
func TestCheckpointRmJSONSaysTheRefDidNotRead(t *testing.T) {
	ws, run := workspaceStore(t)
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644)
	if code, _, e := run("checkpoint", "create", "bad"); code != 0 {
		t.Fatal(e)
	}
	home := filepath.Join(filepath.Dir(ws), "store")
	if err := os.WriteFile(filepath.Join(home, "refs", "checkpoints", "bad"), []byte("garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, e := run("--json", "checkpoint", "rm", "bad")
	if code != 0 {
		t.Fatalf("rm: exit %d: %s", code, e)
	}
	var got struct {
		Removed []map[string]any `json:"removed"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Removed) != 1 {
		t.Fatalf("rm --json: %v: %s", err, out)
	}
	r := got.Removed[0]
	if r["unreadable"] != true || r["created"] == "0001-01-01T00:00:00Z" {
		t.Errorf("rm --json of a checkpoint whose ref did not read (the text says so): %s", out)
	}
}

// A restore of a workspace moved away, without -C nor --to, is refused,
// nothing written and nothing made, saying to name where it is with -C
// or to give --to; --to still restores elsewhere; a -C holding where the
// workspace was (its parent: the same project run from above) is not
// taken as where it moved.
func TestCheckpointRestoreMovedWorkspaceWithoutCIsRefused(t *testing.T) {
	dir, ws, ws2, run := checkpointMovedAway(t)
	for _, cwd := range []string{ws2, dir} {
		// -C ws2 is the moved workspace: so run without -C, from ws2.
		home := filepath.Join(dir, "store")
		args := []string{"--home", home, "checkpoint", "restore", "cp"}
		if cwd == dir {
			args = []string{"--home", home, "-C", dir, "checkpoint", "restore", "cp"}
		}
		var out, errb bytes.Buffer
		code := runIn(t, cwd, args, &out, &errb)
		e := errb.String()
		if code == 0 || !strings.Contains(e, "-C") || !strings.Contains(e, "--to") || !strings.Contains(e, "nothing written") {
			t.Errorf("from %s: exit %d: %s%s", cwd, code, out.String(), e)
		}
		if _, err := os.Lstat(ws); err == nil {
			t.Fatalf("from %s: the moved-away workspace %s was made again", cwd, ws)
		}
	}
	to := filepath.Join(dir, "copy")
	if code, _, e := run(ws2, "checkpoint", "restore", "cp", "--to", to); code != 0 {
		t.Fatalf("--to: exit %d: %s", code, e)
	}
	if b, _ := os.ReadFile(filepath.Join(to, "a.txt")); string(b) != "a\n" {
		t.Errorf("--to: a.txt is %q", b)
	}
}

// runIn runs rook with args in the directory cwd (no -C unless args
// give it), as a shell there would.
func runIn(t *testing.T, cwd string, args []string, out, errb *bytes.Buffer) int {
	t.Helper()
	t.Chdir(cwd)
	return Main(args, strings.NewReader(""), out, errb)
}

// Checkpoint names are the store's, shared by every workspace: creating
// a name another workspace's checkpoint holds says so (stderr, and
// --json "previous_root"), as its restore now writes into this one.
func TestCheckpointCreateSaysTheNameWasAnotherWorkspaces(t *testing.T) {
	dir := t.TempDir()
	run := storeIn(t, dir)
	ws1, ws2 := filepath.Join(dir, "one"), filepath.Join(dir, "two")
	for _, ws := range []string{ws1, ws2} {
		os.MkdirAll(ws, 0o755)
		os.WriteFile(filepath.Join(ws, "a.txt"), []byte(ws), 0o644)
	}
	if code, _, e := run(ws1, "checkpoint", "create", "cp"); code != 0 || e != "" {
		t.Fatalf("exit %d: %s", code, e)
	}
	// Again in the same workspace: nothing to say.
	if code, _, e := run(ws1, "checkpoint", "create", "cp"); code != 0 || e != "" {
		t.Fatalf("again: exit %d: %q", code, e)
	}
	code, _, e := run(ws2, "checkpoint", "create", "cp")
	if code != 0 || !strings.Contains(e, "was of another workspace, "+ws1) || !strings.Contains(e, "shared by every workspace") {
		t.Errorf("create cp in a second workspace: exit %d: %q", code, e)
	}
	code, out, e := run(ws1, "--json", "checkpoint", "create", "cp")
	var got struct {
		Checkpoint map[string]any `json:"checkpoint"`
	}
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || got.Checkpoint["previous_root"] != ws2 {
		t.Errorf("--json: exit %d, %v: %s%s", code, err, out, e)
	}
}
