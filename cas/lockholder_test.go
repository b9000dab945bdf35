package cas

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// Where the system does not say which process holds the lock (here, a
// store on a MemFS), a lock file whose line names a process that is not
// running (the last rook's, a program other than rook holding the lock
// now) is said as such, not as the holder.
func TestLockHolderOfALineNamingNoRunningProcess(t *testing.T) {
	fsys := vfs.NewMem()
	_, home := newStore(t, fsys, Options{Command: "rook import"})
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("no `true` to run:", err)
	}
	line := fmt.Sprintf("pid %d (rook session new)", cmd.Process.Pid)
	if err := fsys.WriteFileAtomic(filepath.Join(home, LockFile), []byte(line+"\n"), FileMode); err != nil {
		t.Fatal(err)
	}
	got, err := LockHolder(fsys, home)
	if want := "another process (the lock file names " + line + ", which is not running here)"; err != nil || got != want {
		t.Fatalf("holder %q, %v; want %q", got, err, want)
	}
	_, err = Open(home, Options{FS: fsys, Writable: true})
	if err == nil || !strings.Contains(err.Error(), "store is locked by another process (the lock file names "+line) {
		t.Fatalf("second writer: %v", err)
	}

	// A line naming a running process (this one) is the holder.
	line = fmt.Sprintf("pid %d (rook import)", os.Getpid())
	if err := fsys.WriteFileAtomic(filepath.Join(home, LockFile), []byte(line+"\n"), FileMode); err != nil {
		t.Fatal(err)
	}
	if got, err := LockHolder(fsys, home); err != nil || got != line {
		t.Fatalf("holder %q, %v; want %q", got, err, line)
	}
}

// TestLockFileReplacedByADirectorySaysToRemoveIt: a directory where the
// lock file goes (a restore, a sync tool, a mkdir) fails every writer and
// LockHolder (doctor's look at the lock). Both gave the bare "open
// .../lock: is a directory"; they say what to do: the file is only a
// marker, so the directory is to be removed, and the next writer makes
// the file anew.
func TestLockFileReplacedByADirectorySaysToRemoveIt(t *testing.T) {
	s, home := newStore(t, vfs.OS, Options{})
	s.Close()
	lock := filepath.Join(home, LockFile)
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(lock, 0o700); err != nil {
		t.Fatal(err)
	}
	_, herr := LockHolder(vfs.OS, home)
	_, oerr := Open(home, Options{FS: vfs.OS, Writable: true, Clock: testClock()})
	for name, err := range map[string]error{"LockHolder": herr, "a writer's Open": oerr} {
		if err == nil {
			t.Fatalf("%s of a store whose lock file is a directory: no error", name)
		}
		for _, want := range []string{lock, "is a directory", "`rmdir`", "only a marker"} {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("%s: %q does not say %q", name, err, want)
			}
		}
	}
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	w, err := Open(home, Options{FS: vfs.OS, Writable: true, Clock: testClock()})
	if err != nil {
		t.Fatalf("a writer once the directory is removed: %v", err)
	}
	w.Close()
}
