package proc

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestFlockHolderIn(t *testing.T) {
	locks := []byte(`1: POSIX  ADVISORY  WRITE 900 fd:01:1234567 0 EOF
2: FLOCK  ADVISORY  WRITE 4242 fd:01:1234567 0 EOF
2: -> FLOCK  ADVISORY  WRITE 777 fd:01:1234567 0 EOF
3: FLOCK  ADVISORY  WRITE 5151 fd:01:7654321 0 EOF
4: OFDLCK ADVISORY  READ  -1 00:05:1234567 0 EOF
`)
	for _, tc := range []struct {
		major, minor, ino uint64
		want              int
	}{
		{0xfd, 1, 1234567, 4242}, // not the POSIX lock's, nor the waiter's
		{0xfd, 1, 7654321, 5151},
		{0xfd, 2, 1234567, 0}, // another device
		{0, 5, 1234567, 0},    // an OFD lock: not a flock
		{0xfd, 1, 1, 0},
	} {
		if got := flockHolderIn(locks, tc.major, tc.minor, tc.ino); got != tc.want {
			t.Errorf("%x:%x:%d: pid %d, want %d", tc.major, tc.minor, tc.ino, got, tc.want)
		}
	}
}

// The pid /proc/locks gives for a file flocked here is this process's;
// none for a file no one holds, or none at all.
func TestFlockHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if pid := FlockHolder(path); pid != 0 {
		t.Errorf("unlocked: held by pid %d", pid)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/proc/locks"); err != nil {
		t.Skip("no /proc/locks:", err)
	}
	if pid := FlockHolder(path); pid != os.Getpid() {
		t.Errorf("locked here: held by pid %d, not %d", pid, os.Getpid())
	}
	if pid := FlockHolder(path + ".none"); pid != 0 {
		t.Errorf("no file: held by pid %d", pid)
	}
	if name := Name(os.Getpid()); name != "proc.test" {
		t.Errorf("this process's name: %q", name)
	}
}
