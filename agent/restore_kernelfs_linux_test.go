package agent

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A restore into /proc as a user not root was refused as a directory of
// another user's: "cannot write into /proc: permission denied (it is not
// yours: its owner, or root, can let you write in it)", which no owner of
// /proc can do: it is the kernel's filesystem, which takes nothing new. It
// says so, as it does to root (MkdirRefused), and gives no permission to
// check (the error is no permission error).
func TestRestoreIntoProcAsNotRootSaysTheKernelsFilesystem(t *testing.T) {
	if !notRoot(t) {
		return
	}
	for _, dir := range []string{"/proc", "/sys"} {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() || !kernelFS(dir) {
			t.Logf("no kernel filesystem at %s here (%v)", dir, err)
			continue
		}
		r, ws, _ := newWorkspace(t)
		writeTree(t, ws, tree{"f.txt": "hi\n"})
		if _, _, err := r.CreateCheckpoint("c1", ws, "", DefaultLimits); err != nil {
			t.Fatal(err)
		}
		_, m, err := r.ResolveCheckpoint("c1")
		if err != nil {
			t.Fatal(err)
		}
		to := filepath.Join(dir, "rook-restore", "sub")
		_, err = r.RestoreCheckpoint("c1", m, to)
		want := "cannot restore f.txt: " + dir + " takes no new files or directories (write into " + dir + ": permission denied): its filesystem is not a disk's but the kernel's, as /proc's and /sys's are: restore into a directory on a disk you can write: nothing written"
		if err == nil || err.Error() != want {
			t.Fatalf("restore into %s: %v\nwant %s", to, err, want)
		}
		if strings.Contains(err.Error(), "owner") || errors.Is(err, fs.ErrPermission) {
			t.Fatalf("restore into %s: %v: still a permission to check", to, err)
		}
	}
}
