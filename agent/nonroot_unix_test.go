//go:build unix

package agent

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
)

// notRoot has the calling (top-level) test run as a user other than root:
// the permissions of the directories it checks do not bind root, so as
// root it would pass with or without what it tests. Not root, it returns
// true and the test goes on. As root, it runs this test binary again, the
// test alone, as the user nobody (a copy of the binary and a temporary
// directory that nobody can reach), reports how that went, and returns
// false: the caller returns. Where that cannot be done, it skips, saying
// why. By hand: go test -c -o /tmp/agent.test ./agent, then, from a
// directory nobody can read, TMPDIR=<a 1777 directory> setpriv
// --reuid=nobody --regid=nogroup --clear-groups /tmp/agent.test -test.run NAME.
func notRoot(t *testing.T) bool {
	t.Helper()
	if os.Geteuid() != 0 {
		return true
	}
	if os.Getenv("ROOK_TEST_NOT_ROOT") != "" {
		t.Fatal("still root after running as nobody")
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("runs as a user other than root, and there is no user nobody to run it as: %v", err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	dir, err := os.MkdirTemp("", "rook-not-root-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// Its TMPDIR, where nobody makes the test's directories.
	if err := os.Chmod(dir, 0o1777); err != nil {
		t.Fatal(err)
	}
	// go test builds the binary in a directory only root can read.
	bin := filepath.Join(dir, "agent.test")
	if err := copyExecutable(os.Args[0], bin); err != nil {
		t.Skipf("runs as a user other than root, and the test binary cannot be copied for nobody: %v", err)
	}
	cmd := exec.Command(bin, "-test.run=^"+regexp.QuoteMeta(t.Name())+"$", "-test.count=1", "-test.v")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR="+dir, "HOME="+dir, "ROOK_TEST_NOT_ROOT=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err != nil && !errors.As(err, &exit):
		t.Skipf("runs as a user other than root, and running it as nobody failed: %v", err)
	case bytes.Contains(out, []byte("--- SKIP: "+t.Name())):
		t.Skipf("skipped as nobody:\n%s", out)
	case err != nil || !bytes.Contains(out, []byte("--- PASS: "+t.Name())):
		t.Fatalf("as nobody (uid %d): %v\n%s", uid, err, out)
	}
	t.Logf("passed as nobody (uid %d)", uid)
	return false
}

func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
