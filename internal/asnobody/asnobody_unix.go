//go:build unix

// Package asnobody runs tests again as the user nobody. A test of what
// rook does where permissions say no (a directory it may not search, a
// file it may not write) passes as root with or without what it tests:
// root may do anything. CI runs as root; so, as root, such a test runs
// this test binary again, as nobody, and reports how that went.
package asnobody

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// env is set in the run as nobody: a test that finds itself still root
// there fails, rather than running itself again without end.
const env = "ROOK_TEST_NOT_ROOT"

// Run runs the tests of this test binary that pattern (-test.run) names
// as nobody, when the caller is root, and fails t unless each test named
// in passed reports PASS. It returns false when the caller is not root:
// the tests ran as they are, nothing is done.
//
// The run is in a temporary directory nobody can reach (mode 1777, its
// TMPDIR and HOME too), with a copy of the binary (go test builds it in
// a directory only root can read) and, at the same relative paths, a copy
// of each file named in files (a script's testdata, relative to the
// package directory). Where it cannot be done (no user nobody, a binary
// that does not copy), t is skipped, saying why. By hand: go test -c -o
// /tmp/x.test ./PKG, then, from a directory nobody can read, TMPDIR=<a
// 1777 directory> setpriv --reuid=nobody --regid=nogroup --clear-groups
// /tmp/x.test -test.run PATTERN.
func Run(t *testing.T, pattern string, passed []string, files ...string) bool {
	t.Helper()
	if os.Geteuid() != 0 {
		return false
	}
	if os.Getenv(env) != "" {
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
	if err := os.Chmod(dir, 0o1777); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, filepath.Base(os.Args[0]))
	if err := copyFile(os.Args[0], bin, 0o755); err != nil {
		t.Skipf("runs as a user other than root, and the test binary cannot be copied for nobody: %v", err)
	}
	for _, f := range files {
		dst := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := copyFile(f, dst, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "-test.run="+pattern, "-test.count=1", "-test.v")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR="+dir, "HOME="+dir, env+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Skipf("runs as a user other than root, and running it as nobody failed: %v", err)
	}
	for _, name := range passed {
		switch {
		case bytes.Contains(out, []byte("--- SKIP: "+name+" ")):
			t.Skipf("%s skipped as nobody:\n%s", name, out)
		case !bytes.Contains(out, []byte("--- PASS: "+name+" ")):
			t.Fatalf("%s as nobody (uid %d): %v\n%s", name, uid, err, out)
		}
	}
	if err != nil {
		t.Fatalf("as nobody (uid %d): %v\n%s", uid, err, out)
	}
	t.Logf("passed as nobody (uid %d): %v", uid, passed)
	return true
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
